#!/usr/bin/env bash
# Idempotent set-up for a fresh Debian machine with or without a GPU: system packages (Mesa's
# software Vulkan/GL drivers so the shaders always have a real driver to run on), the virtual
# environment in .venv/, Kompute's `kp` built offline from its sdist, and pyfftgl itself (editable).
# Each step is skipped when its result is already there, so `make test` pays for it once.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
VENV=.venv
KP_VERSION=0.9.0
APT_PACKAGES=(
  mesa-vulkan-drivers libvulkan1 libvulkan-dev vulkan-tools   # lavapipe + loader + headers
  vulkan-validationlayers                                      # Khronos' layer (tests/test_validation.py)
  libegl1 libegl-mesa0 libgl1-mesa-dri libgles2 libopengl0      # llvmpipe through EGL (headless GL)
  libfmt-dev glslang-tools cmake g++ make xvfb
  spirv-tools                                                   # spirv-val: tests/test_profiles.py
)

say() { printf '[setup] %s\n' "$*"; }

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  say "installing Debian packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ ! -x "$VENV/bin/python" ]; then
  say "creating $VENV"
  "$PY" -m venv "$VENV"
fi
VPY="$PWD/$VENV/bin/python"
pip() { "$VPY" -m pip --disable-pip-version-check -q "$@"; }

if ! "$VPY" -c 'import numpy, moderngl, glfw, pytest, xdist, pybind11, setuptools, dask.array, distributed, matplotlib' 2>/dev/null; then
  say "installing Python packages"
  pip install --upgrade pip setuptools wheel
  # numpy 2: kp pins numpy<2 only in its metadata; built against pybind11 >= 2.12 it works with
  # numpy 2 (tests/test_backends.py checks a Tensor round trip), so we install kp with --no-deps.
  # --no-compile: Python compiles what is imported when it is imported; byte-compiling every module
  # of scipy, dask and distributed up front was a quarter of a fresh set-up.
  pip install --no-compile "numpy>=2.0" "moderngl>=5.10" glfw "pytest>=7" pytest-xdist "pybind11>=2.12" scipy pillow \
    "dask[array]>=2024.1" "distributed>=2024.1" matplotlib
fi

# kp is rebuilt when missing or built without our latest patch (tools/kp_patch.py says why). The
# wheel is kept in the user's cache (per patch level; its name carries the Python tag), so a fresh
# clone on the same machine installs it instead of compiling Kompute again.
KP_PATCH=$("$VPY" -c "import runpy; print(runpy.run_path('tools/kp_patch.py')['LEVEL'])")
WHEELS="${PYFFTGL_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pyfftgl}/kp-wheels/patch-$KP_PATCH"
tag=$("$VPY" -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")')
if ! "$VPY" -c 'import kp' 2>/dev/null || [ ! -f "$VENV/.kp-patch-$KP_PATCH" ]; then
  for whl in "$WHEELS"/kp-"$KP_VERSION"-"$tag"-*.whl; do
    [ -f "$whl" ] || continue
    say "installing kp $KP_VERSION from $whl"
    pip install --no-deps --force-reinstall "$whl" && "$VPY" -c 'import kp' 2>/dev/null \
      && touch "$VENV/.kp-patch-$KP_PATCH" || rm -f "$whl"
  done
fi
if ! "$VPY" -c 'import kp' 2>/dev/null || [ ! -f "$VENV/.kp-patch-$KP_PATCH" ]; then
  say "building kp $KP_VERSION from its sdist (offline CMake, system Vulkan headers and fmt)"
  export KOMPUTE_OPT_INSTALL=OFF KOMPUTE_OPT_USE_BUILT_IN_VULKAN_HEADER=OFF \
    KOMPUTE_OPT_USE_BUILT_IN_FMT=OFF KOMPUTE_OPT_USE_BUILT_IN_PYBIND11=OFF \
    KOMPUTE_OPT_DISABLE_VULKAN_VERSION_CHECK=ON KOMPUTE_PYTHON_NUM_PARALLEL_THREADS=2
  pybind11_DIR=$("$VPY" -c 'import pybind11; print(pybind11.get_cmake_dir())')
  export pybind11_DIR
  # kp's setup.py drops -DPYTHON_EXECUTABLE (a missing comma glues it to the previous flag), so CMake
  # would pick whatever python it finds first on PATH. A toolchain file, which CMake >= 3.21 reads from
  # the environment, pins the interpreter of this venv without patching their sources.
  tc=$(mktemp --suffix=.cmake)
  printf 'set(PYTHON_EXECUTABLE "%s" CACHE FILEPATH "" FORCE)\n' "$(cd "$VENV/bin" && pwd)/python" > "$tc"
  export CMAKE_TOOLCHAIN_FILE=$tc
  src=$(mktemp -d)
  pip download --no-deps --no-binary :all: -d "$src" "kp==$KP_VERSION"
  tar xzf "$src"/kp-"$KP_VERSION".tar.gz -C "$src"
  "$VPY" tools/kp_patch.py "$src/kp-$KP_VERSION"
  mkdir -p "$WHEELS"
  pip wheel --no-build-isolation --no-deps -w "$WHEELS" "$src/kp-$KP_VERSION"
  pip install --no-deps --force-reinstall "$WHEELS"/kp-"$KP_VERSION"-"$tag"-*.whl
  rm -rf "$src"
  touch "$VENV/.kp-patch-$KP_PATCH"
fi

# Checked from / so that the source folder itself does not satisfy the import.
if ! (cd / && "$VPY" -c 'import pyfftgl') 2>/dev/null; then
  say "installing pyfftgl (editable)"
  pip install --no-build-isolation --no-deps -e .
fi
say "ready: $("$VPY" -c 'import numpy, kp, moderngl; print("numpy", numpy.__version__, "moderngl", moderngl.__version__)')"
