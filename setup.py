"""pyfftgl's build: the package, plus Kompute's Python binding compiled into it as `pyfftgl._kp`.

kp 0.9.0's sdist is fetched with pip, patched by tools/kp_patch.py (its LEVEL names the patch set),
renamed to `pyfftgl._kp` so that it never clashes with PyPI's unpatched `kp`, and compiled with
CMake and Ninja from PyPI against the system's Vulkan headers and loader; fmt (which Kompute uses
for its error messages) comes header-only from the `cmeel-fmt` wheel, so the module needs no libfmt.
The compiled module is kept in the user's cache per patch level and Python ABI, so building pyfftgl
again (an editable install, a wheel, CI) copies it instead of compiling Kompute for minutes.
docs/design.md says why this is one build rather than a separate kp package.

Environment: PYFFTGL_CACHE_DIR (default ~/.cache/pyfftgl), PYFFTGL_KP_SDIST (a local
kp-0.9.0.tar.gz to build from instead of downloading one), PYFFTGL_BUILD_JOBS (default: all cores).
`python setup.py kp` builds (or takes from the cache) only pyfftgl/_kp, in place, with the tools
this Python and PATH have: for a machine without network, where pip cannot fetch what it needs.
"""
from __future__ import annotations

import os
import runpy
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent
KP_VERSION = "0.9.0"
# Bump when the build-step edits below or the CMake options change (the patch level is separate).
RECIPE = 1

# Build-step edits: the module's name and what fmt >= 11 needs; kp's fixes live in
# tools/kp_patch.py.
BUILD_EDITS = [
    ("python/src/main.cpp", "PYBIND11_MODULE(kp, m)\n{\n",
     "PYBIND11_MODULE(_kp, m)\n{\n    m.attr(\"PATCH_LEVEL\") = PYFFTGL_KP_PATCH_LEVEL;\n"),
    ("python/CMakeLists.txt", "pybind11_add_module(kp src/main.cpp)",
     "pybind11_add_module(_kp src/main.cpp)"),
    ("python/CMakeLists.txt", "        kp PRIVATE\n", "        _kp PRIVATE\n"),
    # fmt 11 moved fmt::join from fmt/format.h to fmt/ranges.h.
    ("src/Manager.cpp", '#include "fmt/format.h"\n',
     '#include "fmt/format.h"\n#include "fmt/ranges.h"\n'),
    # An extension module never links libpython (the interpreter provides its symbols); kompute
    # needs only Python's include dir, which build_kp passes.
    ("CMakeLists.txt", "    find_package(PythonLibs REQUIRED)\n", ""),
    ("src/CMakeLists.txt", "pybind11::headers ${PYTHON_LIBRARIES})", "pybind11::headers)"),
    # Header-only fmt: the compiled module depends on no fmt library at run time.
    ("src/CMakeLists.txt", "        kp_shader\n        fmt::fmt)\nelse()",
     "        kp_shader\n        fmt::fmt-header-only)\nelse()"),
    ("src/CMakeLists.txt", "        kp_shader\n        fmt::fmt)\nendif()",
     "        kp_shader\n        fmt::fmt-header-only)\nendif()"),
]


def cache_root() -> Path:
    base = os.environ.get("PYFFTGL_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "pyfftgl")
    return Path(base)


def patch_level() -> int:
    return int(runpy.run_path(str(ROOT / "tools" / "kp_patch.py"))["LEVEL"])


def cached_module(level: int) -> Path:
    """Where the compiled module of this patch level, build recipe and Python ABI is kept."""
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    return cache_root() / "kp" / f"{KP_VERSION}-patch{level}-r{RECIPE}" / f"_kp{suffix}"


def _edit(root: Path, edits) -> None:
    for rel, old, new in edits:
        path = root / rel
        text = path.read_text()
        if text.count(old) != 1:
            raise RuntimeError(f"pyfftgl build: {path} is not kp {KP_VERSION} as expected "
                               f"(looking for {old!r})")
        path.write_text(text.replace(old, new))


def _fetch_sdist(dest: Path) -> Path:
    local = os.environ.get("PYFFTGL_KP_SDIST")
    if local:
        return Path(local)
    subprocess.check_call([sys.executable, "-m", "pip", "download", "--no-deps",
                           "--no-binary", ":all:", "--disable-pip-version-check", "-q",
                           "-d", str(dest), f"kp=={KP_VERSION}"])
    return dest / f"kp-{KP_VERSION}.tar.gz"


def _tool(name: str, module: str) -> str:
    """The cmake/ninja executable of the PyPI wheel in the build environment, else PATH's."""
    try:
        mod = __import__(module)
        exe = Path(getattr(mod, "BIN_DIR", None) or mod.CMAKE_BIN_DIR) / name
        if exe.exists():
            return str(exe)
    except (ImportError, AttributeError, TypeError):
        pass
    found = shutil.which(name)
    if found is None:
        raise RuntimeError(f"pyfftgl build: {name} not found (pip installs it from PyPI as a build "
                           "requirement; with --no-build-isolation, pip install cmake ninja)")
    return found


def build_kp(level: int, out: Path) -> None:
    """Download, patch, rename and compile kp into `out` (a .so path)."""
    import pybind11

    # The cmeel-fmt wheel installs fmt under <site-packages>/cmeel.prefix; without it (a build
    # without isolation), CMake looks for a system fmt (Debian's libfmt-dev), used header-only too.
    prefix = next((Path(p) / "cmeel.prefix" for p in sys.path
                   if p and (Path(p) / "cmeel.prefix" / "lib" / "cmake" / "fmt").is_dir()), None)
    fmt = [f"-Dfmt_DIR={prefix / 'lib' / 'cmake' / 'fmt'}"] if prefix else []
    # Ninja where there is one (the PyPI wheel in an isolated build), else CMake's default.
    try:
        generator = ["-G", "Ninja", f"-DCMAKE_MAKE_PROGRAM={_tool('ninja', 'ninja')}"]
    except RuntimeError:
        generator = []
    with tempfile.TemporaryDirectory(prefix="pyfftgl-kp-") as tmp:
        tmp = Path(tmp)
        safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
        with tarfile.open(_fetch_sdist(tmp)) as tar:
            tar.extractall(tmp, **safe)
        src = tmp / f"kp-{KP_VERSION}"
        subprocess.check_call([sys.executable, str(ROOT / "tools" / "kp_patch.py"), str(src)])
        _edit(src, BUILD_EDITS)
        build = tmp / "build"
        jobs = os.environ.get("PYFFTGL_BUILD_JOBS") or str(os.cpu_count() or 1)
        cmake = _tool("cmake", "cmake")
        _run([
            cmake, "-S", str(src), "-B", str(build), *generator, *fmt,
            "-DCMAKE_BUILD_TYPE=Release", "-DCMAKE_POSITION_INDEPENDENT_CODE=ON",
            f"-DCMAKE_CXX_FLAGS=-DPYFFTGL_KP_PATCH_LEVEL={level}",
            f"-DCMAKE_LIBRARY_OUTPUT_DIRECTORY={build / 'out'}",
            "-DKOMPUTE_OPT_BUILD_PYTHON=ON", "-DKOMPUTE_OPT_LOG_LEVEL=Off",
            "-DKOMPUTE_OPT_USE_SPDLOG=OFF",
            "-DKOMPUTE_OPT_INSTALL=OFF", "-DKOMPUTE_OPT_DISABLE_VULKAN_VERSION_CHECK=ON",
            "-DKOMPUTE_OPT_USE_BUILT_IN_VULKAN_HEADER=OFF", "-DKOMPUTE_OPT_USE_BUILT_IN_FMT=OFF",
            "-DKOMPUTE_OPT_USE_BUILT_IN_PYBIND11=OFF",
            f"-Dpybind11_DIR={pybind11.get_cmake_dir()}",
            f"-DPYTHON_EXECUTABLE={sys.executable}", f"-DPython_EXECUTABLE={sys.executable}",
            # kompute's own sources include pybind11; pybind11 >= 3 (FindPython mode) no longer
            # sets this variable, which kompute's CMake reads for Python.h.
            f"-DPYTHON_INCLUDE_DIRS={sysconfig.get_paths()['include']}",
        ])
        _run([cmake, "--build", str(build), "--target", "_kp", "-j", jobs])
        built = next((build / "out").glob("_kp*"))
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp_out = out.with_name(f"{out.name}.{os.getpid()}.tmp")
        shutil.copyfile(built, tmp_out)
        os.replace(tmp_out, out)  # atomic: a concurrent build never sees half a module


def _run(cmd: list[str]) -> None:
    if subprocess.call(cmd) != 0:
        raise RuntimeError(
            "pyfftgl build: compiling its Vulkan module (Kompute) failed; it needs a C++17 "
            "compiler and the Vulkan headers and loader (Debian/Ubuntu: apt install g++ "
            "libvulkan-dev; CMake and Ninja come from PyPI). The output above says what was "
            "missing.")


def kp_module() -> Path:
    """The compiled module of tools/kp_patch.py's patch level, from the cache or built into it."""
    level = patch_level()
    cached = cached_module(level)
    if cached.exists():
        print(f"pyfftgl build: using the compiled kp from {cached}")
    else:
        print(f"pyfftgl build: compiling kp {KP_VERSION} at patch level {level} (minutes)")
        build_kp(level, cached)
    return cached


SKIPPED_NOTE = "kp_build_skipped.txt"  # in the package: why there is no pyfftgl._kp (info says)


def missing_build_tools() -> str | None:
    """Why Kompute cannot be compiled here (no C++ compiler, no Vulkan headers), else None."""
    if not (os.environ.get("CXX") or any(shutil.which(c) for c in ("c++", "g++", "clang++"))):
        return "no C++ compiler (CXX, c++, g++ or clang++ on PATH)"
    dirs = [os.environ.get("VULKAN_SDK", "") and os.path.join(os.environ["VULKAN_SDK"], "include"),
            *os.environ.get("CPATH", "").split(os.pathsep), "/usr/include", "/usr/local/include"]
    if not any(d and os.path.isfile(os.path.join(d, "vulkan", "vulkan.h")) for d in dirs):
        return "no Vulkan headers (vulkan/vulkan.h: Debian's libvulkan-dev, or the Vulkan SDK)"
    return None


class BuildKp(build_ext):
    """Builds the `pyfftgl._kp` extension from the cache, compiling Kompute only on a miss; where
    it cannot be compiled, the build goes on without it (GL and WebGPU need no compiler)."""

    def build_extension(self, ext):
        dest = Path(self.get_ext_fullpath(ext.name))
        dest.parent.mkdir(parents=True, exist_ok=True)
        note = dest.parent / SKIPPED_NOTE
        why = None if cached_module(patch_level()).exists() else missing_build_tools()
        if why is not None:
            print(f"pyfftgl build: skipping the Vulkan backend (pyfftgl._kp): {why}; "
                  "the GL and WebGPU backends need no compiler")
            note.write_text(why + "\n")
            return
        note.unlink(missing_ok=True)
        shutil.copyfile(kp_module(), dest)


if __name__ == "__main__" and sys.argv[1:] == ["kp"]:
    # `python setup.py kp`: only pyfftgl/_kp, in place, for a machine where pip cannot build
    # (no network: PYFFTGL_KP_SDIST; build tools from its own PATH and Python path).
    dest = ROOT / "pyfftgl" / f"_kp{sysconfig.get_config_var('EXT_SUFFIX')}"
    shutil.copyfile(kp_module(), dest)
    print(f"pyfftgl build: {dest}")
else:
    setup(ext_modules=[Extension("pyfftgl._kp", sources=[])], cmdclass={"build_ext": BuildKp})
