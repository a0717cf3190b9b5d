# The README's two commands, `make demo` and `make test`, each run the idempotent set-up first.
PY := .venv/bin/python

.PHONY: setup demo test bench info clean

setup:
	@bash tools/setup.sh

demo: setup
	$(PY) -m pyfftgl demo

test: setup
	$(PY) -m pytest -q tests

bench: setup
	@$(PY) -c 'import tqdm, matplotlib' 2>/dev/null || $(PY) -m pip -q install tqdm matplotlib
	$(PY) -m pyfftgl bench

info: setup
	$(PY) -m pyfftgl info

clean:
	rm -rf .venv build dist *.egg-info
