"""KHR_debug output on the GL backend's contexts, for the tests (tests/conftest.py sets
PYFFTGL_GL_DEBUG=1, read when this module is imported): every context the backend makes reports
to _on_debug_message as each GL call errs (synchronous output), and messages of type ERROR are
kept in debug_errors, which a fixture checks around each test."""
from __future__ import annotations

import contextlib
import ctypes
import os
import threading

DEBUG_OUTPUT = os.environ.get("PYFFTGL_GL_DEBUG") == "1"
debug_errors: list[str] = []
GL_DEBUG_OUTPUT, GL_DEBUG_OUTPUT_SYNCHRONOUS, GL_DEBUG_TYPE_ERROR = 0x92E0, 0x8242, 0x824C
_DEBUG_PROC = ctypes.CFUNCTYPE(None, ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint32,
                               ctypes.c_uint32, ctypes.c_int32, ctypes.c_char_p, ctypes.c_void_p)
_expecting = threading.local()  # depth of expected_errors() on this thread


@_DEBUG_PROC
def _on_debug_message(source, kind, ident, severity, length, message, user):
    if kind == GL_DEBUG_TYPE_ERROR and not getattr(_expecting, "depth", 0):
        debug_errors.append(f"{message.decode(errors='replace')} (id {ident:#x})")


@contextlib.contextmanager
def expected_errors():
    """GL calls that may fail by design, their errors read with glGetError (a probe of what
    the driver can do): not kept as debug errors."""
    _expecting.depth = getattr(_expecting, "depth", 0) + 1
    try:
        yield
    finally:
        _expecting.depth -= 1


def debug_output_on(gl_proc) -> bool:
    """KHR_debug output on for the context current on this thread, synchronous (the callback
    runs inside the call that errs); False where there is no glDebugMessageCallback. `gl_proc`
    resolves GL entry points (backends/gl.py)."""
    try:
        set_callback = gl_proc("glDebugMessageCallback", None, _DEBUG_PROC, ctypes.c_void_p)
        enable = gl_proc("glEnable", None, ctypes.c_uint32)
    except OSError:
        return False
    enable(GL_DEBUG_OUTPUT)
    enable(GL_DEBUG_OUTPUT_SYNCHRONOUS)
    set_callback(_on_debug_message, None)
    return True
