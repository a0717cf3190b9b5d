#!/usr/bin/env bash
# make test's no-compiler tier (issue 52): pyfftgl as a machine without build tools gets it. The
# wheel is built with no C++ compiler on PATH and an empty build cache (setup.py then skips the
# Vulkan module with one line), installed without the cmeel wheels (no glslangValidator), and run
# with a PATH holding only the venv's own bin (no compiler, cmake or glslangValidator) and an
# empty kernel cache: `info` must list webgpu as working and say why Vulkan is absent, and fft2,
# dctn and fftconvolve on WebGPU must match numpy and scipy (tests/test_webgpu.py's quick check).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
VPY=${VPY:-$REPO/.venv/bin/python}
say() { printf '[no-compiler] %s\n' "$*"; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/pyfftgl-nocompiler.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
start=$SECONDS
mkdir -p "$tmp/bin" "$tmp/cache"
# pip's isolated build puts its own bin (cmake, ninja from PyPI) before this PATH.
ln -s "$(readlink -f "$VPY")" "$tmp/bin/python3"
say "building the wheel with no compiler on PATH"
PATH=$tmp/bin PYFFTGL_CACHE_DIR=$tmp/cache "$VPY" -m pip wheel --disable-pip-version-check -q \
  --no-deps -w "$tmp/dist" . > "$tmp/build.txt" 2>&1 || { cat "$tmp/build.txt"; exit 1; }
whl=$(ls "$tmp"/dist/pyfftgl-*.whl)
if unzip -l "$whl" | grep -q "_kp\.\|_kp[^_]"; then say "the wheel holds pyfftgl._kp"; exit 1; fi
"$VPY" -m venv --without-pip "$tmp/venv"
# pyfftgl's dependencies but the cmeel wheels, and the test's own (pytest, scipy).
deps=$(sed -n '/^dependencies = \[/,/\]/p' pyproject.toml | grep -o '"[^"]*"' | tr -d '"' |
       grep -v cmeel)
pip_in() { "$VPY" -m pip --python "$tmp/venv/bin/python" install --disable-pip-version-check -q \
  --no-compile "$@" >> "$tmp/install.txt" 2>&1 || { cat "$tmp/install.txt"; exit 1; }; }
pip_in --no-deps "$whl"
# shellcheck disable=SC2086
pip_in $deps pytest scipy
if "$tmp/venv/bin/python" -c "import cmeel" 2>/dev/null; then say "a cmeel wheel came"; exit 1; fi
say "set up in $((SECONDS - start)) s"

cd "$tmp"
# PYFFTGL_WEBGPU_NAGA_BARRIERS=1: lavapipe runs naga's barrier() (subgroup scope in SPIR-V) for
# the whole workgroup, so wgpu's Vulkan adapter may take the route macOS and Windows take.
run() { env -i HOME="$HOME" PATH="$tmp/venv/bin" PYFFTGL_CACHE_DIR="$tmp/cache" \
  PYFFTGL_WEBGPU_NAGA_BARRIERS="${NAGA_BARRIERS:-1}" ${DISPLAY:+DISPLAY=$DISPLAY} "$@"; }
# Without it that adapter is refused where no glslang is, naming why.
NAGA_BARRIERS=0 run venv/bin/python -m pyfftgl info > info0.txt 2>&1 || { cat info0.txt; exit 1; }
grep -q "^webgpu: unavailable: .*subgroup scope" info0.txt || { cat info0.txt; exit 1; }
run venv/bin/python -m pyfftgl info > info.txt 2>&1 || { cat info.txt; exit 1; }
grep -q "^webgpu: works" info.txt || { cat info.txt; exit 1; }
grep "^vulkan: unavailable: .*no C++ compiler" info.txt || { cat info.txt; exit 1; }
say "fft2, dctn and fftconvolve on WebGPU ($((SECONDS - start)) s so far)"
run PYFFTGL_TEST_BACKENDS=webgpu venv/bin/python -m pytest -q -p no:cacheprovider -m quick \
  --rootdir "$REPO" "$REPO/tests/test_webgpu.py"
