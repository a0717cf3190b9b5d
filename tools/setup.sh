#!/usr/bin/env bash
# Idempotent set-up for a fresh Debian machine with or without a GPU: system packages (Mesa's
# software Vulkan/GL drivers so the shaders always have a real driver to run on), the virtual
# environment in .venv/, and pyfftgl itself (editable), whose build compiles Kompute into it.
# Each step is skipped when its result is already there, so `make test` pays for it once.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
VENV=.venv
# CMake, Ninja, fmt, pybind11 and glslangValidator come from PyPI (pyproject.toml).
APT_PACKAGES=(
  mesa-vulkan-drivers libvulkan1 libvulkan-dev vulkan-tools   # lavapipe + loader + headers
  vulkan-validationlayers                                      # Khronos' layer (tests/test_validation.py)
  libegl1 libegl-mesa0 libgl1-mesa-dri libgles2 libopengl0      # llvmpipe through EGL (headless GL)
  g++ python3-dev python3-venv make xvfb                        # pyfftgl's build (Kompute)
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

if ! "$VPY" -c 'import numpy, moderngl, wgpu, glfw, pytest, xdist, dask.array, distributed, scipy, PIL, matplotlib' 2>/dev/null; then
  say "installing Python packages"
  pip install --upgrade pip
  # --no-compile: Python compiles what is imported when it is imported; byte-compiling every module
  # of scipy, dask and distributed up front was a quarter of a fresh set-up.
  pip install --no-compile "numpy>=2.0" "moderngl>=5.10" glfw "pytest>=7" pytest-xdist scipy pillow \
    "dask[array]>=2024.1" "distributed>=2024.1" matplotlib ruff "wgpu>=0.32"
fi
# ruff (make check and make test lint first) joined the list later: a venv made before has none.
"$VPY" -m ruff --version >/dev/null 2>&1 || pip install --no-compile ruff
# wgpu (the WebGPU backend) too.
"$VPY" -c 'import wgpu' >/dev/null 2>&1 || pip install --no-compile "wgpu>=0.32"

# pyfftgl, editable, built as pip builds it for any user (setup.py): its compiled Kompute,
# pyfftgl/_kp, is kp 0.9.0 patched by tools/kp_patch.py, copied from the user's cache when this
# patch level was compiled before (so a fresh clone on the same machine does not compile Kompute
# again). Reinstalled when missing or built at another patch level than kp_patch.py's LEVEL.
KP_PATCH=$("$VPY" -c "import runpy; print(runpy.run_path('tools/kp_patch.py')['LEVEL'])")
# Checked from / so that the source folder itself does not satisfy the import.
if ! (cd / && "$VPY" -c "import sys, pyfftgl._kp as k; sys.exit(k.PATCH_LEVEL != $KP_PATCH)") 2>/dev/null; then
  say "installing pyfftgl (editable) with Kompute at patch level $KP_PATCH"
  pip install --no-compile -e .
fi
say "ready: $("$VPY" -c 'import numpy, moderngl, pyfftgl._kp as k; print("numpy", numpy.__version__, "moderngl", moderngl.__version__, "kp patch level", k.PATCH_LEVEL)')"
