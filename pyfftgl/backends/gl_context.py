"""The GL backend's contexts and fences: GL entry points (gl_proc, gl_integer), the EGL calls that
find and switch contexts (_EGL), each thread's context of the library's share group
(ThreadContext), and GLContext, the one owner of a GL device's context state, which every GL call
enters (GLDevice.current).

Importing this module installs a process-wide audit hook (_fence_before_new_threads): when a
process's only thread starts another, the library's last GL call gets the fence that calls on
the new thread's context wait for. It does nothing else, and costs a set lookup per event.
"""
from __future__ import annotations

import collections
import ctypes
import sys
import threading
import weakref

from .gl_barriers import PendingWrites
from .gldebug import DEBUG_OUTPUT, debug_output_on


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

def gl_integer(pname: int) -> int:
    """glGetIntegerv(pname) on the current context, for what ModernGL's ctx.info leaves out; 0
    where there is no entry point."""
    try:
        get = gl_proc("glGetIntegerv", None, ctypes.c_uint32, ctypes.POINTER(ctypes.c_int32))
    except OSError:
        return 0
    value = ctypes.c_int32(0)
    get(pname, ctypes.byref(value))
    return value.value


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


def egl() -> _EGL | None:
    """The EGL calls, or None where there is no libEGL."""
    try:
        return _EGL()
    except (OSError, AttributeError):
        return None


class ThreadContext:
    """A thread's EGL context in the library's share group; the thread-local that holds it is
    dropped when the thread ends, which releases it there (and destroys the ones made for it)."""

    def __init__(self, egl: _EGL, display: int, handle: int, owned: bool):
        self.egl, self.display, self.handle, self.owned = egl, display, handle, owned
        self.debug = False  # KHR_debug output turned on (DEBUG_OUTPUT), once it is current

    def __del__(self):
        # No device lock: only this thread uses this context, and a daemon thread stopped at
        # exit inside a call would hold the lock for good.
        if self.egl.context() == self.handle:
            self.egl.make_current(self.display, None)
        if self.owned:
            self.egl.destroy(self.display, self.handle)


class GLContext:
    """A GL device's context and everything about making it current: the lock every GL call
    holds, the per-thread contexts of the library's share group, the fence after calls, and the
    releases of GL objects the garbage collector dropped. A context manager (a class, not a
    generator, since every GL call enters it): `with` holds the lock, has a context current on
    the calling thread and yields the ModernGL context; nested uses are free.

    On the library's own context (`own`) each thread uses a context of its own in one share group
    (buffers, textures, programs and fences are shared), kept current between calls where the
    thread had none current: a call then switches no context. While the process has other
    threads, each call ends with a flushed fence, and a call on another context than the
    previous call's has the GPU wait for it first; a process's only thread fences nothing (a
    fence and its flush cost the GPU more than a small FFT), and its last call is fenced when
    it starts a thread (_fence_before_new_threads). A caller's context is made current for a
    call where it is an EGL context current on no other thread; where it is current on the
    calling thread it is used as is.

    Made with `ctx` current on this thread (just made, or the caller's); `before`: the EGL state
    to put back once set up (the context the caller had current before an own one was made)."""

    def __init__(self, ctx, own: bool, egl: _EGL | None, before: tuple | None = None):
        if own:
            # Release GL objects when Python drops them, at the next call (the collector may
            # run on a thread without the context); ModernGL's default keeps every buffer and
            # program alive until released by hand, so evicted plans would hold their memory.
            # A caller's context keeps its own mode: the objects made here release themselves.
            ctx.gc_mode = "context_gc"
        self.ctx, self.own, self.egl = ctx, own, egl
        self.lock = threading.RLock()
        self.handle = egl.context() if egl else None  # current: just made or passed
        self.depth = 0  # nesting of `with` on the thread holding the lock
        # Outermost entries so far, and the binding state a submission's call left (its
        # token, and the entry it ran in): a call of the same submission at the very next
        # entry finds its bindings in place (GLSubmission._dispatch_all). Any other entry
        # (another call, a transfer, the caller's own GL calls inside `with`) comes between.
        self.entries, self.bound, self.bound_at = 0, None, 0
        self._outer = False  # at the outermost `with`: False (stays current), None or state
        self._graveyard = collections.deque()  # releases of collected objects, for the next call
        self._local = threading.local()  # .tc: this thread's ThreadContext
        self.fence, self._fence_ctx = None, None  # the last call's fence, and its context
        self.unfenced = False  # the last call's work has no fence (the process had one thread)
        self.pending = PendingWrites()  # what calls here left without a barrier (gl_barriers)
        self._sync = None  # (glFenceSync, glWaitSync, glDeleteSync, glFlush)
        self._client_wait = None  # glClientWaitSync
        self.display = None
        # ModernGL's queue of the objects Python dropped (the deque stays the context's), None
        # where a caller's context releases its own.
        self._dropped = ctx.objects if own else None
        if own and self.handle:
            self.display = egl.state()[0]
            self._local.tc = ThreadContext(egl, self.display, self.handle, owned=False)
            self._local.tc.debug = DEBUG_OUTPUT and debug_output_on(gl_proc)
            if before and before[3]:
                egl.restore(before)
            _OWN_CONTEXTS.add(self)

    def __enter__(self):
        self.lock.acquire()
        try:
            if self.depth:
                self.depth += 1
                return self.ctx
            self.entries += 1
            if self.own and self.handle:
                self._enter_own()
            else:
                self._enter_callers()
            self.depth = 1
            return self.ctx
        except BaseException:
            self.lock.release()
            raise

    def __exit__(self, *exc):
        try:
            self.depth -= 1
            if not self.depth:
                try:
                    if self._graveyard or self._dropped:
                        self.collect()
                    if self.own and self.handle:
                        self.unfenced = threading.active_count() == 1
                        if not self.unfenced:
                            self._fence_here()
                finally:
                    if self._outer is not False:  # made current on entry: released again, and
                        if self.own:  # the thread's own EGL context back
                            self.egl.restore(self._outer)
                        else:
                            self.ctx.__exit__(None, None, None)
                            if self._outer:
                                self.egl.restore(self._outer)
        finally:
            self.lock.release()
        return False

    def _thread_context(self) -> ThreadContext:
        """This thread's context of the library's share group, made on its first call."""
        tc = getattr(self._local, "tc", None)
        if tc is None:
            handle = self.egl.shared_context(self.display, self.handle, self.ctx.version_code)
            tc = self._local.tc = ThreadContext(self.egl, self.display, handle, owned=True)
        return tc

    def _enter_own(self):
        """Make this thread's context current (kept so where the thread had none current), and
        order this call after the previous one where that ran on another context."""
        tc = getattr(self._local, "tc", None) or self._thread_context()
        now = self.egl.lib.eglGetCurrentContext()  # egl.context(), without its Python call
        if now == tc.handle:
            self._outer = False
        else:
            self._outer = self.egl.state() if now else False
            if not self.egl.make_current(self.display, tc.handle):
                raise RuntimeError(f"eglMakeCurrent failed (EGL error "
                                   f"{self.egl.lib.eglGetError():#x}) for this thread's context")
            if DEBUG_OUTPUT and not tc.debug:
                tc.debug = debug_output_on(gl_proc)
        if self.fence is not None and self._fence_ctx != tc.handle:
            self._sync[1](self.fence, 0, ctypes.c_uint64(0xFFFFFFFFFFFFFFFF))  # GPU-side wait
            self._sync[2](self.fence)  # this context's later calls are ordered after it
            self.fence = None

    def _enter_callers(self):
        """The caller's context: used where current on this thread, else made current for the
        call where it is current on no other (and the thread's own context put back after)."""
        now = self.egl.context() if self.handle else None
        if now == self.handle:  # current here already (or not an EGL context we can move)
            self._outer = False
            return
        self._outer = self.egl.state() if now else None
        self.ctx.__enter__()
        if self.egl.context() != self.handle:
            self.ctx.__exit__(None, None, None)
            if self._outer:
                self.egl.restore(self._outer)
            raise RuntimeError("the GL context is current on another thread: call "
                               "pyfftgl on that thread, or release it there first")

    def bindings_unchanged(self) -> None:
        """Say that the outermost entry now open binds nothing (a wait, a flush): the bindings
        a call left at the entry before it are still in place for the next (bound)."""
        if self.depth == 1 and self.bound_at == self.entries - 1:
            self.bound_at = self.entries

    def sync_procs(self) -> tuple:
        """(glFenceSync, glWaitSync, glDeleteSync, glFlush), looked up once."""
        if self._sync is None:
            self._sync = (gl_proc("glFenceSync", ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint32),
                          gl_proc("glWaitSync", None, ctypes.c_void_p, ctypes.c_uint32,
                                  ctypes.c_uint64),
                          gl_proc("glDeleteSync", None, ctypes.c_void_p),
                          gl_proc("glFlush", None))
        return self._sync

    def client_wait(self):
        """glClientWaitSync, looked up once."""
        if self._client_wait is None:
            self._client_wait = gl_proc("glClientWaitSync", ctypes.c_uint32, ctypes.c_void_p,
                                        ctypes.c_uint32, ctypes.c_uint64)
        return self._client_wait

    def _fence_here(self):
        """A flushed fence after this call's commands, for a call on another context to wait on."""
        self.pending.settle(self.ctx)  # the other context's calls read what this one wrote
        fence_sync, _, delete, flush = self.sync_procs()
        fence = fence_sync(0x9117, 0)  # GL_SYNC_GPU_COMMANDS_COMPLETE
        flush()
        if self.fence is not None:
            delete(self.fence)
        self.fence, self._fence_ctx = fence, self.egl.context()

    def fence_pending(self):
        """Fence the last call's work if it has none (called on the thread that made it)."""
        with self.lock:
            if not self.unfenced:
                return
            tc = getattr(self._local, "tc", None)
            if tc is None:  # not the thread that made the call: it cannot reach that context
                return
            outer = self.egl.state() if self.egl.context() != tc.handle else None
            if outer:
                self.egl.make_current(self.display, tc.handle)
            self._fence_here()
            self.unfenced = False
            if outer:
                self.egl.restore(outer)

    def defer(self, release) -> None:
        """Queue `release` (of a GL object the collector dropped, on any thread) for the next
        call, which runs it with the context current."""
        self._graveyard.append(release)

    def collect(self):
        """Release what the garbage collector dropped since the last call (each call does on
        its way out; the memory pool's stats and trim first), with the context current."""
        while self._graveyard:
            self._graveyard.popleft()()
        if self.own:  # ModernGL's queue (gc_mode "context_gc"); ctx.gc() fails on objects
            objects = self._dropped  # released by hand, which are queued too
            while objects:
                obj = objects.popleft()
                if hasattr(obj, "release"):
                    obj.release()


_OWN_CONTEXTS: "weakref.WeakSet[GLContext]" = weakref.WeakSet()


def _fence_before_new_threads(event: str, _args) -> None:
    """An audit hook: before this process's only thread starts another, its last call's work
    gets the fence that a call on the new thread's context will wait for."""
    if event in ("_thread.start_new_thread", "_thread.start_joinable_thread"):
        for context in list(_OWN_CONTEXTS):
            if context.unfenced:
                try:
                    context.fence_pending()
                except Exception:  # an audit hook that raises would stop the thread's start
                    pass


sys.addaudithook(_fence_before_new_threads)
