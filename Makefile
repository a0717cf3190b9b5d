# The README's two commands, `make demo` and `make test`, each run the idempotent set-up first.
PY := .venv/bin/python

.PHONY: setup demo test check bench info clean

setup:
	@bash tools/setup.sh

demo: setup
	$(PY) -m pyfftgl demo

# Two pytest workers: compiling kernels on the software drivers is single-threaded per process.
test: setup
	$(PY) -m pytest -q -n 2 tests

# The quick tier: both backends, every transform kind once.
check: setup
	$(PY) -m pytest -q -m quick tests

bench: setup
	@$(PY) -c 'import tqdm, matplotlib' 2>/dev/null || $(PY) -m pip -q install tqdm matplotlib
	$(PY) -m pyfftgl bench

info: setup
	$(PY) -m pyfftgl info

clean:
	rm -rf .venv build dist *.egg-info
