"""GL contexts for the GL backend: GL entry points (gl_proc), the EGL calls that find and switch
contexts (_EGL), each thread's context of the library's share group (_ThreadContext), and the
context manager every GL call enters (_Current).

Importing this module installs a process-wide audit hook (_fence_before_new_threads): when a
process's only thread starts another, the library's last GL call gets the fence that calls on
the new thread's context wait for. It does nothing else, and costs a set lookup per event.
"""
from __future__ import annotations

import ctypes
import sys
import threading
import weakref


def gl_proc(name: str, restype, *argtypes):
    """A GL entry point (ctypes function) for the context current on this thread, from EGL's
    lookup where an EGL context is current, else GLX's; OSError where there is none."""
    lookup = None
    try:
        egl = ctypes.CDLL("libEGL.so.1")
        egl.eglGetCurrentContext.restype = ctypes.c_void_p
        if egl.eglGetCurrentContext():
            lookup = egl.eglGetProcAddress
    except (OSError, AttributeError):
        pass
    if lookup is None:
        try:
            lookup = ctypes.CDLL("libGL.so.1").glXGetProcAddressARB
        except AttributeError as e:
            raise OSError(f"no GL entry point lookup ({e})") from e
    lookup.restype, lookup.argtypes = ctypes.c_void_p, [ctypes.c_char_p]
    addr = lookup(name.encode())
    if not addr:
        raise OSError(f"no GL entry point {name}")
    return ctypes.CFUNCTYPE(restype, *argtypes)(addr)


class _EGL:
    """The EGL calls that find, make and restore the context current on a thread, and make the
    per-thread contexts of the library's share group (None where there is no libEGL: GLX
    contexts are then used on the thread that made them current)."""

    DRAW, READ = 0x3059, 0x305A
    CONFIG_ID, OPENGL_API, NONE = 0x3028, 0x30A2, 0x3038
    MAJOR, MINOR, PROFILE, CORE = 0x3098, 0x30FB, 0x30FD, 0x1

    def __init__(self):
        egl = ctypes.CDLL("libEGL.so.1")
        for name in ("eglGetCurrentContext", "eglGetCurrentDisplay", "eglGetCurrentSurface",
                     "eglCreateContext"):
            getattr(egl, name).restype = ctypes.c_void_p
        egl.eglGetCurrentSurface.argtypes = [ctypes.c_int32]
        egl.eglMakeCurrent.argtypes = [ctypes.c_void_p] * 4
        egl.eglQueryContext.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32,
                                        ctypes.POINTER(ctypes.c_int32)]
        egl.eglChooseConfig.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int32),
                                        ctypes.POINTER(ctypes.c_void_p), ctypes.c_int32,
                                        ctypes.POINTER(ctypes.c_int32)]
        egl.eglCreateContext.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p,
                                         ctypes.POINTER(ctypes.c_int32)]
        egl.eglDestroyContext.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        egl.eglBindAPI.argtypes = [ctypes.c_uint32]
        self.lib = egl

    def context(self) -> int | None:
        return self.lib.eglGetCurrentContext()

    def state(self) -> tuple:
        e = self.lib
        return (e.eglGetCurrentDisplay(), e.eglGetCurrentSurface(self.DRAW),
                e.eglGetCurrentSurface(self.READ), e.eglGetCurrentContext())

    def restore(self, state: tuple) -> None:
        self.lib.eglMakeCurrent(*state)

    def shared_context(self, display: int, share: int, version: int) -> int:
        """A new surfaceless OpenGL core context of `share`'s config and share group."""
        e = self.lib
        config_id, config, found = ctypes.c_int32(0), ctypes.c_void_p(0), ctypes.c_int32(0)
        e.eglQueryContext(display, share, self.CONFIG_ID, ctypes.byref(config_id))
        want = (ctypes.c_int32 * 3)(self.CONFIG_ID, config_id.value, self.NONE)
        e.eglChooseConfig(display, want, ctypes.byref(config), 1, ctypes.byref(found))
        e.eglBindAPI(self.OPENGL_API)  # per thread: EGL's default is OpenGL ES
        attribs = (ctypes.c_int32 * 7)(self.MAJOR, version // 100, self.MINOR,
                                       version % 100 // 10, self.PROFILE, self.CORE, self.NONE)
        handle = e.eglCreateContext(display, config if found.value else None, share, attribs)
        if not handle:
            raise RuntimeError(f"eglCreateContext failed (EGL error {e.eglGetError():#x}): no "
                               "GL context for this thread in the library's share group")
        return handle

    def make_current(self, display: int, handle: int | None) -> bool:
        return bool(self.lib.eglMakeCurrent(display, None, None, handle))

    def destroy(self, display: int, handle: int) -> None:
        self.lib.eglDestroyContext(display, handle)


def _egl() -> _EGL | None:
    try:
        return _EGL()
    except (OSError, AttributeError):
        return None


class _ThreadContext:
    """A thread's EGL context in the library's share group; the thread-local that holds it is
    dropped when the thread ends, which releases it there (and destroys the ones made for it)."""

    def __init__(self, dev: "GLDevice", handle: int, owned: bool):
        self.dev, self.handle, self.owned = dev, handle, owned
        self.debug = False  # KHR_debug output turned on (DEBUG_OUTPUT), once it is current

    def __del__(self):
        # No device lock: only this thread uses this context, and a daemon thread stopped at
        # exit inside a call would hold the lock for good.
        dev = self.dev
        if dev._egl.context() == self.handle:
            dev._egl.make_current(dev._display, None)
        if self.owned:
            dev._egl.destroy(dev._display, self.handle)


class _Current:
    """GLDevice.current(): a class, not a generator, since every GL call enters it.

    On the library's own context each thread uses a context of its own in one share group
    (buffers, textures, programs and fences are shared), kept current between calls where the
    thread had none current: a call then switches no context. While the process has other
    threads, each call ends with a flushed fence, and a call on another context than the
    previous call's has the GPU wait for it first; a process's only thread fences nothing (a
    fence and its flush cost the GPU more than a small FFT), and its last call is fenced when
    it starts a thread (_fence_before_new_threads)."""

    def __init__(self, dev: "GLDevice"):
        self.dev = dev

    def __enter__(self):
        dev = self.dev
        dev.lock.acquire()
        try:
            if dev._depth:
                dev._depth += 1
                return dev.ctx
            if dev._own and dev._handle:
                dev._enter_own()
            else:
                dev._enter_callers()
            dev._depth = 1
            return dev.ctx
        except BaseException:
            dev.lock.release()
            raise

    def __exit__(self, *exc):
        dev = self.dev
        try:
            dev._depth -= 1
            if not dev._depth:
                try:
                    dev._collect()
                    if dev._own and dev._handle:
                        dev._unfenced = threading.active_count() == 1
                        if not dev._unfenced:
                            dev._fence_here()
                finally:
                    if dev._outer is not False:  # made current on entry: released again, and
                        if dev._own:  # the thread's own EGL context back
                            dev._egl.restore(dev._outer)
                        else:
                            dev.ctx.__exit__(None, None, None)
                            if dev._outer:
                                dev._egl.restore(dev._outer)
        finally:
            dev.lock.release()
        return False


_OWN_DEVICES: "weakref.WeakSet[GLDevice]" = weakref.WeakSet()


def _fence_before_new_threads(event: str, _args) -> None:
    """An audit hook: before this process's only thread starts another, its last call's work
    gets the fence that a call on the new thread's context will wait for."""
    if event in ("_thread.start_new_thread", "_thread.start_joinable_thread"):
        for dev in list(_OWN_DEVICES):
            if dev._unfenced:
                try:
                    dev.fence_pending()
                except Exception:  # an audit hook that raises would stop the thread's start
                    pass


sys.addaudithook(_fence_before_new_threads)
