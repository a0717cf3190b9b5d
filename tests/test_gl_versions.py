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
    # the message's text is the driver's: Mesa names the value, NVIDIA the kind of enum
    assert len(reported) == 1, reported
    assert "0xdead" in reported[0].lower() or "buffer target" in reported[0].lower(), reported


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


GL_4_3 = textwrap.dedent("""
    import numpy as np, pyfftgl
    dev = pyfftgl.get_device("gl")
    _, mapped = dev.storage.staging(1 << 20, read=False)
    print("context", dev.ctx.version_code, "mapped", mapped is not None)
    x = (np.arange(256 * 384) % 97 - 40.5).reshape(256, 384).astype(np.complex64) * (1 - 0.5j)
    ref = np.fft.fft2(x.astype(np.complex128))
    kept = x.copy()
    got = pyfftgl.fft2(x, backend="gl")
    print("error", float(np.abs(got - ref).max() / np.abs(ref).max()), "kept", (x == kept).all())
""")


def test_gl_4_3_with_the_extensions_maps_its_staging_memory():
    """A 4.3 context (what NVIDIA's EGL gives for the 4.3 asked) that offers
    ARB_direct_state_access and ARB_buffer_storage moves numpy data through persistent mappings,
    not glBufferSubData, and a one-shot fft2 through them matches numpy."""
    env = dict(os.environ, MESA_GL_VERSION_OVERRIDE="4.3")
    out = subprocess.run([sys.executable, "-c", GL_4_3], capture_output=True, text=True,
                         env=env, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    first, second = out.stdout.splitlines()[:2]
    assert first == "context 430 mapped True", out.stdout
    words = second.split()
    assert float(words[1]) < 1e-5 and words[3] == "True", out.stdout
