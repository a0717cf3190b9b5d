"""GL debug output is live in the tests (conftest.py's gl_debug_clean), and GL below 4.3 (macOS
stops at 4.1) is refused with an error that names the version, before any GL work."""
import ctypes
import os
import subprocess
import sys
import textwrap
from pathlib import Path


from pyfftgl.backends import get_device
from pyfftgl.backends import gldebug
from pyfftgl.backends.gl import gl_proc

ROOT = Path(__file__).resolve().parent.parent


def test_gl_debug_output_reports_an_error_as_the_call_makes_it():
    """The fixture that fails GL tests on debug messages of type ERROR would pass vacuously if
    the library's contexts reported none: an invalid enum is reported inside the call."""
    assert gldebug.DEBUG_OUTPUT
    dev = get_device("gl")
    start = len(gldebug.debug_errors)
    with dev.current():
        bind = gl_proc("glBindBuffer", None, ctypes.c_uint32, ctypes.c_uint32)
        bind(0xDEAD, 0)
        reported = gldebug.debug_errors[start:]
        assert dev.ctx.error == "GL_INVALID_ENUM"  # read (and cleared) for the fixtures
    del gldebug.debug_errors[start:]
    assert len(reported) == 1 and "0xdead" in reported[0].lower(), reported


OLD_GL = textwrap.dedent("""
    import moderngl, numpy as np, pyfftgl, pyfftgl.gl
    from pyfftgl.backends import BackendUnavailable
    ctx = moderngl.create_standalone_context(backend="egl")
    print("context", ctx.version_code)
    for name, call in (("fft", lambda: pyfftgl.fft(np.ones(8, np.complex64), backend="gl")),
                       ("TextureFFT", lambda: pyfftgl.gl.TextureFFT(ctx, (8, 8)))):
        try:
            call()
        except BackendUnavailable as e:
            print(name, "refused:", e)
        else:
            print(name, "ran")
""")


def test_gl_below_4_3_is_refused_naming_the_version():
    env = dict(os.environ, MESA_GL_VERSION_OVERRIDE="4.1")
    out = subprocess.run([sys.executable, "-c", OLD_GL], capture_output=True, text=True,
                         env=env, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "context 410", out.stdout  # Mesa honoured the override
    for name, line in zip(("fft", "TextureFFT"), lines[1:]):
        assert line.startswith(f"{name} refused: "), out.stdout
        assert "OpenGL 4.1 has no compute shaders" in line and "4.3" in line, line
