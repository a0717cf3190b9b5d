#!/usr/bin/env bash
# make test's installed tier: build pyfftgl's wheel as pip builds it for a user, install it into a
# fresh virtual environment outside the source tree, and run there, against the installed package:
# `python -m pyfftgl info`, `python -m pyfftgl selftest --quick` (its summary lines; all of it if
# a check fails) and the quick tier of tests/ (from a folder where `import pyfftgl` can only find
# the installed copy). The wheel's build copies the compiled Kompute from the user's cache
# (setup.py) and the kernels' SPIR-V is cached on disk, so after make setup this costs a venv,
# an install from pip's cache and the quick tier.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
VPY=${VPY:-$REPO/.venv/bin/python}
say() { printf '[installed] %s\n' "$*"; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/pyfftgl-installed.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
start=$SECONDS
say "building the wheel"
"$VPY" -m pip wheel --disable-pip-version-check -q --no-deps -w "$tmp/dist" .
whl=$(ls "$tmp"/dist/pyfftgl-*.whl)
# .venv's base interpreter (the ABI the cached module was built for); the venv gets no pip of its
# own (ensurepip was a fifth of this tier's set-up): .venv's pip installs into it.
"$VPY" -m venv --without-pip "$tmp/venv"
say "installing $(basename "$whl")[test] into a fresh venv"
"$VPY" -m pip --python "$tmp/venv/bin/python" install --disable-pip-version-check -q --no-compile \
  "$whl[test]"
say "set up in $((SECONDS - start)) s"

cd "$tmp"
export PYFFTGL_TEST_INSTALLED=1
# -p no:cacheprovider: nothing written into the source tree; the rootdir's pyproject.toml still
# gives the markers. The demos' tests import demos/, which runs from a clone and is not installed.
venv/bin/python -m pyfftgl info
venv/bin/python -m pyfftgl selftest --quick > selftest.txt || { cat selftest.txt; exit 1; }
grep "checks pass" selftest.txt
# Last, so that pytest's summary closes make test's output.
say "quick tier ($((SECONDS - start)) s so far)"
venv/bin/python -m pytest -q -p no:cacheprovider -m quick --rootdir "$REPO" "$REPO/tests" \
  --ignore "$REPO/tests/test_ocean.py" --ignore "$REPO/tests/test_filter_demo.py"
