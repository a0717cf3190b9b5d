# The README's two commands, `make demo` and `make test`, each run the idempotent set-up first.
PY := .venv/bin/python

.PHONY: setup demo test bench info clean

setup:
	@bash tools/setup.sh

# The filter demo in a window where a display exists, else a headless frame saved as a PNG.
demo: setup
	@if [ -n "$$DISPLAY$$WAYLAND_DISPLAY" ]; then $(PY) -m demos.filter; \
	else $(PY) -m demos.filter --headless --frames 3 --screenshot demo-filter.png && \
	echo "no display: wrote demo-filter.png (a headless frame of the filter demo)"; fi

test: setup
	$(PY) -m pytest -q tests

bench: setup
	@$(PY) -c 'import tqdm, matplotlib' 2>/dev/null || $(PY) -m pip -q install tqdm matplotlib
	$(PY) -m pyfftgl bench

info: setup
	$(PY) -m pyfftgl info

clean:
	rm -rf .venv build dist *.egg-info
