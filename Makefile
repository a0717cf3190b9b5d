# The README's two commands, `make demo` and `make test`, each run the idempotent set-up first.
PY := .venv/bin/python

.PHONY: setup demo test test-slow test-webgpu check lint bench info clean

setup:
	@bash tools/setup.sh

# The ocean demo in a window where a display exists, else a headless frame saved as a PNG.
demo: setup
	@if [ -n "$$DISPLAY$$WAYLAND_DISPLAY" ]; then $(PY) -m demos.ocean; \
	else $(PY) -m demos.ocean --headless --frames 60 --size 960x540 --screenshot demo-ocean.png && \
	echo "no display: wrote demo-ocean.png (a headless frame of the ocean demo)"; fi

# ruff's rules (pyproject.toml's [tool.ruff]) over the whole tree, before any test runs.
lint: setup
	$(PY) -m ruff check .

# Two pytest workers: compiling kernels on the software drivers is single-threaded per process;
# work stealing keeps both busy to the end (the kernel sweeps are long items). Then the installed
# tier: the wheel, installed into a fresh venv outside the tree, runs the quick tier, info and
# selftest --quick there (tools/test_installed.sh), and the no-compiler tier: a wheel built and
# run with no compiler, cmake or glslangValidator computes on WebGPU (tools/test_no_compiler.sh).
test: setup lint
	$(PY) -m pytest -q -n 2 --dist worksteal -m "not slow and not webgpu" tests
	@bash tools/test_no_compiler.sh
	@bash tools/test_installed.sh

# numpy's and scipy's own installed fft test modules run under pyfftgl, and every length to 1024
# (long on software drivers).
test-slow: setup
	$(PY) -m pytest -q -n 2 --dist worksteal -m slow tests

# The WebGPU backend's tier on wgpu's Vulkan (lavapipe) and GL (llvmpipe) adapters
# (tests/test_webgpu.py), one worker per adapter.
test-webgpu: setup
	$(PY) -m pytest -q -n 2 -m webgpu tests/test_webgpu.py

# The quick tier: both backends, every transform kind once.
check: setup lint
	$(PY) -m pytest -q -m quick tests

bench: setup
	@$(PY) -c 'import tqdm, matplotlib' 2>/dev/null || $(PY) -m pip -q install tqdm matplotlib
	$(PY) -m pyfftgl bench

info: setup
	$(PY) -m pyfftgl info

clean:
	rm -rf .venv build dist *.egg-info pyfftgl/_kp*.so
