"""OpenGL 4.3+ backend through ModernGL: SSBOs, compute shaders, timer queries.

By default it opens its own headless EGL context; pass a ModernGL context to share the caller's
(the render-loop case).

Threads: every call takes the device's lock and has a context current on the calling thread
(GLDevice.current). On the library's own context each thread gets a context of one share group,
left current between calls where the thread had none (no context switch per call), with fences
ordering calls across contexts (_Current); code that uses `device.ctx` directly does so inside
`with device.current():`. A caller's context is made current for a call where it is an EGL
context current on no other thread; where it is current on the calling thread it is used as is.
GL objects dropped by the garbage collector (on any thread) are deleted by the next call. The GL
state a submission changes: SSBO bindings 0-3 and image units 0-7 (they write images) of the
kernels it runs, the top 8 texture units (GLDevice.texture_unit_base: kernels read textures
through the library's sampler, which stays bound there) and the bound compute program. Its memory
barriers (submission_barriers) order each dispatch after the ones whose writes it reads; after
the last comes one of all bits, or where a submission writes only textures, one for their use by
sampling, drawing and copies.

Two things outside this module's objects: importing it installs a process-wide audit hook
(_glcontext._fence_before_new_threads), and a device stores itself on its ModernGL context as
`ctx._pyfftgl_device` (GLDevice.of: one device, so one program cache, per context).
"""
from __future__ import annotations

import collections
import ctypes
import threading
import time
import weakref

import numpy as np

from .. import wisdom
from .gldebug import DEBUG_OUTPUT, debug_output_on, expected_errors
from ..planner import IMAGE_FORMATS, image_format
from ._glcontext import _OWN_DEVICES, _Current, _egl, _ThreadContext, gl_proc
from .base import (BackendUnavailable, Buffer, Device, DeviceInfo, Image, Limits, Program,
                   Submission)

GL_MAX_COMPUTE_SHARED_MEMORY_SIZE = 0x8262
GL_SHARED_MEMORY_MINIMUM = 32768  # what GL 4.3 guarantees
GL_BUFFER_SIZE = 0x8764
# Buffers this large take Vulkan's memory where the drivers share it (_vkmemory): GL's own
# placement of large buffers ran kernels at half speed (docs/performance-log.md).
VULKAN_MEMORY_MIN_BYTES = 1 << 25


def _gl_integer(pname: int) -> int:
    """glGetIntegerv(pname) on the current context, for what ModernGL's ctx.info leaves out; 0
    where there is no entry point."""
    try:
        get = gl_proc("glGetIntegerv", None, ctypes.c_uint32, ctypes.POINTER(ctypes.c_int32))
    except OSError:
        return 0
    value = ctypes.c_int32(0)
    get(pname, ctypes.byref(value))
    return value.value


class GLBuffer(Buffer):
    def __init__(self, buf, nbytes: int, release=None, vulkan_memory: bool = False):
        """`release`: deletes the GL buffer; called (GLDevice.deferred) by the device's next
        call after this object is collected."""
        self.buf = buf
        self.nbytes = nbytes
        self.vulkan_memory = vulkan_memory  # see _vkmemory
        if release is not None:  # not at exit: the context may be gone by then
            weakref.finalize(self, release).atexit = False


class GLImage(Image):
    """A ModernGL texture (the caller's or a plan's) as an image a kernel binds."""

    def __init__(self, texture):
        fmt = image_format(texture.components, texture.dtype)
        if fmt is None:
            raise TypeError(f"a texture of {texture.components} component(s) of dtype "
                            f"{texture.dtype!r} is not one of {', '.join(IMAGE_FORMATS)}")
        self.texture = texture
        self.width, self.height = texture.size[:2]
        self.layers = texture.size[2] if len(texture.size) == 3 else 1  # a TextureArray's
        self.format, self.components = fmt, texture.components


# GLSL's sampler types (GL_SAMPLER_2D, GL_SAMPLER_2D_ARRAY): the uniforms a kernel reads
# textures through.
_SAMPLER_TYPES = (0x8B5E, 0x8DC1)


class GLProgram(Program):
    def __init__(self, shader, push_names: tuple[str, ...], unit_base: int = 0):
        """`unit_base`: the kernel's samplers (declared at units 0..) read units unit_base..."""
        self.shader = shader
        self.push_names = push_names
        # Uniforms the compiler dropped as unused are not settable; skip them.
        self.uniforms = [(i, shader.get(f"pc.{n}", None)) for i, n in enumerate(push_names)]
        # The values last set: uniforms are the program's own state, and only GLSubmission sets
        # them, so a value already there is not set again (see GLSubmission._calls).
        self.values = [None] * len(push_names)
        self.last = None  # the dispatch's tuple of values set last (GLSubmission._dispatch_all)
        for name in shader:
            member = shader[name]
            if getattr(member, "gl_type", None) in _SAMPLER_TYPES and unit_base:
                member.value = unit_base + member.value


GL_TEXTURE_FETCH_BARRIER_BIT = 0x8
GL_TEXTURE_UPDATE_BARRIER_BIT = 0x100
GL_FRAMEBUFFER_BARRIER_BIT = 0x400
GL_SHADER_STORAGE_BARRIER_BIT = 0x2000
GL_ALL_BARRIER_BITS = 0xFFFFFFFF
# What a caller does with a texture a kernel wrote, short of loading it as an image: sample or
# fetch it, draw into it, copy or read it back.
TEXTURE_USE_BARRIER_BITS = (GL_TEXTURE_FETCH_BARRIER_BIT | GL_FRAMEBUFFER_BARRIER_BIT
                            | GL_TEXTURE_UPDATE_BARRIER_BIT)


def _resource(obj) -> tuple:
    """A bound buffer's or image's identity: its GL object (two GLImages may wrap one texture)."""
    return ("image", obj.texture.glo) if isinstance(obj, GLImage) else ("buffer", obj.buf.glo)


def submission_barriers(dispatches) -> tuple[list[int], int]:
    """The glMemoryBarrier bits before each dispatch and after the last. Before a dispatch:
    the storage bit where it reads a buffer an earlier dispatch wrote, the texture-fetch bit
    where it samples such a texture, and where it only overwrites what an earlier one touched,
    the texture-fetch bit alone, to order them. Nothing before the first: what the caller wrote
    is ordered by GL (drawing, uploads) or by the caller's own barrier after its image stores, as
    for any GL command that samples. After the last: all bits where the submission leaves a
    buffer written (read next by anything), else TEXTURE_USE_BARRIER_BITS. The storage and image
    bits cost NVIDIA's driver more the more was written before them (docs/drivers.md), so they
    go only where the specification needs them; a caller that loads a written texture with
    imageLoad issues the image bit itself."""
    written, touched, before = {}, set(), []
    for n, d in enumerate(dispatches):
        bufs = [(i, _resource(b)) for i, b in enumerate(d.buffers) if b is not None]
        reads = [(r, GL_SHADER_STORAGE_BARRIER_BIT) for i, r in bufs if i != 1]
        reads += [(_resource(m), GL_TEXTURE_FETCH_BARRIER_BIT) for m in d.images[:d.image_reads]]
        writes = [r for i, r in bufs if i == 1] + [_resource(m) for m in d.images[d.image_reads:]]
        bits = 0
        for r, bit in reads:
            if r in written:
                bits |= bit
        if not bits and n and touched.intersection(writes):
            bits = GL_TEXTURE_FETCH_BARRIER_BIT
        before.append(bits)
        for r, _ in reads:
            written.pop(r, None)  # read since written: not the submission's output
            touched.add(r)
        for r in writes:
            written[r] = True
            touched.add(r)
    end = (GL_ALL_BARRIER_BITS if any(kind == "buffer" for kind, _ in written)
           else TEXTURE_USE_BARRIER_BITS)
    return before, end


class GLSubmission(Submission):
    """Uploads and downloads go through staging buffers that only the CPU touches, copied on the
    GPU: a buffer written with glBufferSubData at every call is moved to system memory by
    NVIDIA's driver (every dispatch then ran at PCIe speed)."""

    def __init__(self, device: "GLDevice", dispatches, uploads, downloads):
        self.device = device
        self.uploads, self.downloads = uploads, downloads
        # Per dispatch: (barrier bits, [(bind, args)], program, ((push index, uniform, value),
        # ...), groups), taken apart once here: every call issues each dispatch from Python
        # again, and ModernGL is slow to set uniforms from numpy values.
        # Images read are textures bound to the device's texture units (texture_unit_base..)
        # with a nearest-texel sampler (whatever filtering and mipmaps the texture has), images
        # written go to image units.
        before, self._end_barrier = submission_barriers(dispatches)
        base = device.texture_unit_base
        # GL state persists from one dispatch to the next within a call, so a binding the
        # dispatch before left in place is not made again; the first binds everything.
        bound, self._calls = {}, []
        for bits, d in zip(before, dispatches):
            binds = []
            for key, obj, bind, args in (
                    [(("buffer", i), b.buf, b.buf.bind_to_storage_buffer, (i,))
                     for i, b in enumerate(d.buffers) if b is not None]
                    + [(("unit", base + i), m.texture, m.texture.use, (base + i,))
                       for i, m in enumerate(d.images[:d.image_reads])]
                    + [(("image", i), m.texture, m.texture.bind_to_image, (i, False, True))
                       for i, m in enumerate(d.images[d.image_reads:])]):
                if bound.get(key) is not obj:
                    binds.append((bind, args))
                    bound[key] = obj
            uniforms = tuple((i, u, int(d.push[i])) for i, u in d.program.uniforms
                             if u is not None)
            self._calls.append((bits, binds, d.program, uniforms, tuple(d.groups)))
        self._sampled_units = sorted({base + i for d in dispatches for i in range(d.image_reads)})
        # Staging buffers the host maps once for good (persistent, coherent) where GL 4.4's
        # buffer storage exists: the host copies straight into and out of them, where
        # glBufferSubData / glGetBufferSubData added a driver-side copy each way and a second
        # wait. (buffer, staging, mapped bytes or None)
        self._uploads = [(b, *device._staging(b.nbytes, read=False)) for b in uploads]
        self._downloads = [(b, *device._staging(b.nbytes, read=True)) for b in downloads]
        self._fence = None  # after the last run's download copies: the host waits on it to read

    def _dispatch_all(self):
        ctx = self.device.ctx
        if self._sampled_units:
            # The library's own units (GLDevice.texture_unit_base): binding its sampler again is
            # no change of state, and the caller's units keep their textures and samplers.
            sampler = self.device.texel_sampler()
            for unit in self._sampled_units:
                sampler.use(unit)
        for bits, binds, program, uniforms, groups in self._calls:
            if bits:
                ctx.memory_barrier(bits)
            for bind, args in binds:
                bind(*args)
            if program.last is not uniforms:
                values = program.values
                for i, uniform, value in uniforms:
                    if values[i] != value:
                        uniform.value = value
                        values[i] = value
                program.last = uniforms
            program.shader.run(*groups)
        ctx.memory_barrier(self._end_barrier)

    def _run(self, inputs, timed, wait):
        with self.device.current() as ctx:
            if self._uploads:
                self._wait_fence()  # the last run's upload copies read the staging memory
            for (buf, staging, mapped), data in zip(self._uploads, inputs):
                raw = np.ascontiguousarray(data).reshape(-1).view(np.uint8)  # no copy
                if mapped is not None:
                    mapped[:raw.size] = raw
                else:
                    staging.write(raw)
                ctx.copy_buffer(buf.buf, staging, size=raw.size)
            try:
                return self._timed_dispatch() if timed else self._dispatch_all()
            finally:
                for buf, staging, _ in self._downloads:
                    ctx.copy_buffer(staging, buf.buf, size=buf.nbytes)
                if self._downloads or self._uploads:
                    self._set_fence()

    def _set_fence(self):
        fence_sync, _, delete, flush = self.device._sync_procs()
        if self._fence is not None:
            delete(self._fence)
        self._fence = fence_sync(0x9117, 0)  # GL_SYNC_GPU_COMMANDS_COMPLETE
        flush()

    def _wait_fence(self):
        """Wait for the last run's copies (GPU writes to a coherent mapping are visible once
        its fence has signalled)."""
        if self._fence is None:
            return
        client_wait = self.device._client_wait()
        while client_wait(self._fence, 1, 1_000_000_000) not in (0x911A, 0x911C):  # signalled
            pass
        self.device._sync_procs()[2](self._fence)
        self._fence = None

    def _timed_dispatch(self):
        ctx = self.device.ctx
        if self.device.info.is_software:
            # llvmpipe's GL_TIME_ELAPSED does not cover compute work (it reads next to nothing
            # for a long dispatch), so software GL is timed by the wall clock between glFinishes.
            ctx.finish()
            t0 = time.perf_counter_ns()
            self._dispatch_all()
            ctx.finish()
            return float(time.perf_counter_ns() - t0)
        # The staging copies are queued before the dispatches; keep them out of the query.
        ctx.finish()
        query = ctx.query(time=True)  # used and dropped within this call: queries are per context
        with query:
            self._dispatch_all()
        return float(query.elapsed)

    def _result(self, i=0):
        buf, staging, mapped = self._downloads[i]
        with self.device.current():
            out = np.empty(buf.nbytes // 4, np.float32)
            if mapped is not None:
                self._wait_fence()
                out.view(np.uint8)[:] = mapped[:buf.nbytes]
            else:
                staging.read_into(out, size=buf.nbytes)
            self.device.check_errors("running a submission")
            return out


def _too_old(version_code: int) -> str:
    return (f"OpenGL {version_code // 100}.{version_code % 100 // 10} has no compute shaders; "
            "pyfftgl needs OpenGL 4.3 or newer (macOS stops at 4.1: use the Vulkan backend "
            "through MoltenVK there)")


def _offered_version(moderngl) -> int | None:
    """The version of the context EGL makes without a version asked for (None where it makes
    none): what the driver offers, where a 4.3 context failed."""
    try:
        ctx = moderngl.create_standalone_context(backend="egl")
    except Exception:  # glcontext raises plain Exceptions
        return None
    try:
        return ctx.version_code
    finally:
        ctx.release()


class GLDevice(Device):
    """`vulkan_memory`: take the memory of buffers of VULKAN_MEMORY_MIN_BYTES or more from Vulkan
    where the drivers share it (see _vkmemory). After the first such buffer, `vulkan_memory` says
    whether they do, and `vulkan_memory_note` why not."""

    def __init__(self, ctx=None, vulkan_memory: bool = True):
        try:
            import moderngl
        except ImportError as e:
            raise BackendUnavailable(f"the GL backend needs ModernGL ({e}); pip install moderngl") from e
        own = ctx is None
        egl = _egl()
        before = egl.state() if own and egl else None  # a context the caller had current
        if own:
            try:
                ctx = moderngl.create_standalone_context(require=430, backend="egl")
            except Exception as e:  # glcontext raises plain Exceptions
                offered = _offered_version(moderngl)
                if offered is not None and offered < 430:
                    raise BackendUnavailable(_too_old(offered)) from e
                raise BackendUnavailable(
                    f"no headless OpenGL 4.3 context via EGL ({e}): install a GPU driver with EGL, "
                    "or Mesa's llvmpipe (Debian: libegl1 libegl-mesa0 libgl1-mesa-dri)") from e
        if ctx.version_code < 430:
            raise BackendUnavailable(_too_old(ctx.version_code))
        if own:
            # Release GL objects when Python drops them, at the next call (the collector may
            # run on a thread without the context); ModernGL's default keeps every buffer and
            # program alive until released by hand, so evicted plans would hold their memory.
            # A caller's context keeps its own mode: the objects made here release themselves.
            ctx.gc_mode = "context_gc"
        self.ctx = ctx
        self._own = own
        self._depth = 0  # nesting of current() on the thread holding the lock
        self._outer = False  # at the outermost current(): False (stays current), None or state
        self._graveyard = collections.deque()  # releases of collected objects, for the next call
        self._egl = egl
        self._handle = self._egl.context() if self._egl else None  # current: just made/passed
        host = getattr(ctx, "_pyfftgl_device", None)
        # Another device on the library's own context shares its lock and its switching.
        self._host = host if host is not None and host._own else None
        self.lock = self._host.lock if self._host is not None else threading.RLock()
        if own:
            ctx._pyfftgl_device = self
        self._current = _Current(self)
        self.vulkan_memory, self.vulkan_memory_note = vulkan_memory, "" if vulkan_memory else "off"
        self._vkmemory, self._vkmemory_worked = None, False
        self._memory = None  # bytes of device memory (_memory_total)
        self._texel_sampler = None  # texel_sampler()
        self._reset_status = None  # glGetGraphicsResetStatus (check_errors)
        self._buffer_storage = None  # (glCreateBuffers, glNamedBufferStorage, glDeleteBuffers)
        gi = ctx.info
        renderer = gi["GL_RENDERER"]
        self.driver_info = DeviceInfo(
            api="gl",
            name=renderer,
            driver=f"{gi['GL_VENDOR']} {gi['GL_VERSION']}",
            api_version=f"{ctx.version_code // 100}.{ctx.version_code % 100 // 10}",
            limits=Limits(
                max_shared_bytes=max(_gl_integer(GL_MAX_COMPUTE_SHARED_MEMORY_SIZE),
                                     GL_SHARED_MEMORY_MINIMUM),
                max_invocations=gi["GL_MAX_COMPUTE_WORK_GROUP_INVOCATIONS"],
                max_group_size=tuple(gi["GL_MAX_COMPUTE_WORK_GROUP_SIZE"]),
                max_group_count=tuple(gi["GL_MAX_COMPUTE_WORK_GROUP_COUNT"]),
                max_buffer_bytes=gi["GL_MAX_SHADER_STORAGE_BLOCK_SIZE"],
                max_texture_size=gi["GL_MAX_TEXTURE_SIZE"],
                tuned=wisdom.load(renderer, "gl"),
            ),
            is_software="llvmpipe" in renderer or "softpipe" in renderer,
            # doubles are core GLSL from GL 4.0 (GL_ARB_gpu_shader_fp64 before it)
            float64=ctx.version_code >= 400 or "GL_ARB_gpu_shader_fp64" in ctx.extensions,
        )
        # Images one dispatch may bind (GL 4.3 promises 8): a TextureFFT list takes one per texture.
        self.image_units = max(8, min(_gl_integer(0x91BD), _gl_integer(0x8F38)))
        # Kernels read textures at the top 8 texture units (GL 4.3 promises 96), which a render
        # loop leaves alone: the caller's units 0.. keep their bindings and samplers, and the
        # library's sampler stays bound on its own units from call to call.
        self.texture_unit_base = max(0, gi["GL_MAX_COMBINED_TEXTURE_IMAGE_UNITS"] - 8)
        # The library's own context: this thread's context of the share group, current here
        # until the thread ends; other threads get contexts of their own (_thread_context).
        self._local = threading.local()
        self._fence, self._fence_ctx = None, None  # the last call's fence, and its context
        self._unfenced = False  # the last call's work has no fence (the process had one thread)
        self._sync = None  # (glFenceSync, glWaitSync, glDeleteSync, glFlush)
        if own and self._handle:
            self._display = self._egl.state()[0]
            self._local.tc = _ThreadContext(self, self._handle, owned=False)
            self._local.tc.debug = DEBUG_OUTPUT and debug_output_on(gl_proc)
            if before and before[3]:
                egl.restore(before)
            _OWN_DEVICES.add(self)

    def _thread_context(self) -> "_ThreadContext":
        """This thread's context of the library's share group, made on its first call."""
        tc = getattr(self._local, "tc", None)
        if tc is None:
            handle = self._egl.shared_context(self._display, self._handle, self.ctx.version_code)
            tc = self._local.tc = _ThreadContext(self, handle, owned=True)
        return tc

    def _enter_own(self):
        """Make this thread's context current (kept so where the thread had none current), and
        order this call after the previous one where that ran on another context."""
        tc = self._thread_context()
        now = self._egl.context()
        if now == tc.handle:
            self._outer = False
        else:
            self._outer = self._egl.state() if now else False
            if not self._egl.make_current(self._display, tc.handle):
                raise RuntimeError(f"eglMakeCurrent failed (EGL error "
                                   f"{self._egl.lib.eglGetError():#x}) for this thread's context")
            if DEBUG_OUTPUT and not tc.debug:
                tc.debug = debug_output_on(gl_proc)
        if self._fence is not None and self._fence_ctx != tc.handle:
            self._sync[1](self._fence, 0, ctypes.c_uint64(0xFFFFFFFFFFFFFFFF))  # GPU-side wait
            self._sync[2](self._fence)  # this context's later calls are ordered after it
            self._fence = None

    def _enter_callers(self):
        """The caller's context: used where current on this thread, else made current for the
        call where it is current on no other (and the thread's own context put back after)."""
        now = self._egl.context() if self._handle else None
        if now == self._handle:  # current here already (or not an EGL context we can move)
            self._outer = False
            return
        self._outer = self._egl.state() if now else None
        self.ctx.__enter__()
        if self._egl.context() != self._handle:
            self.ctx.__exit__(None, None, None)
            if self._outer:
                self._egl.restore(self._outer)
            raise RuntimeError("the GL context is current on another thread: call "
                               "pyfftgl on that thread, or release it there first")

    def _sync_procs(self) -> tuple:
        """(glFenceSync, glWaitSync, glDeleteSync, glFlush), looked up once."""
        if self._sync is None:
            self._sync = (gl_proc("glFenceSync", ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint32),
                          gl_proc("glWaitSync", None, ctypes.c_void_p, ctypes.c_uint32,
                                  ctypes.c_uint64),
                          gl_proc("glDeleteSync", None, ctypes.c_void_p),
                          gl_proc("glFlush", None))
        return self._sync

    def _fence_here(self):
        """A flushed fence after this call's commands, for a call on another context to wait on."""
        fence_sync, _, delete, flush = self._sync_procs()
        fence = fence_sync(0x9117, 0)  # GL_SYNC_GPU_COMMANDS_COMPLETE
        flush()
        if self._fence is not None:
            delete(self._fence)
        self._fence, self._fence_ctx = fence, self._egl.context()

    def fence_pending(self):
        """Fence the last call's work if it has none (called on the thread that made it)."""
        with self.lock:
            if not self._unfenced:
                return
            tc = getattr(self._local, "tc", None)
            if tc is None:  # not the thread that made the call: it cannot reach that context
                return
            outer = self._egl.state() if self._egl.context() != tc.handle else None
            if outer:
                self._egl.make_current(self._display, tc.handle)
            self._fence_here()
            self._unfenced = False
            if outer:
                self._egl.restore(outer)

    def current(self) -> "_Current":
        """This device's lock held and its context current on the calling thread, for the
        calls inside (nested uses are free; `with` yields the ModernGL context)."""
        return (self._host or self)._current

    def _collect(self):
        """Release what the garbage collector dropped since the last call."""
        while self._graveyard:
            self._graveyard.popleft()()
        if self._own:  # ModernGL's queue (gc_mode "context_gc"); ctx.gc() fails on objects
            objects = self.ctx.objects  # released by hand, which are queued too
            while objects:
                obj = objects.popleft()
                if hasattr(obj, "release"):
                    obj.release()

    def deferred(self, release, kind: str = "buffers", nbytes: int = 0):
        """`release` for a finalizer: queued, and run by the next call with the context current.
        Counts the object as live until then."""
        released = self.count_live(kind, nbytes)

        def run():
            release()
            released()
        return lambda: self._graveyard.append(run)

    def _program(self, source, push_names):
        from ..shaders import ShaderCompileError
        with self.current():
            try:
                shader = self.ctx.compute_shader(source)
            except Exception as e:
                raise ShaderCompileError(f"GL compute shader failed to compile: {e}") from e
            program = GLProgram(shader, push_names, self.texture_unit_base)
        # Released when collected (the program cache's bound drops it), on a caller's context too.
        graveyard = self._graveyard
        weakref.finalize(program, lambda: graveyard.append(shader.release)).atexit = False
        return program

    def _buffer(self, nbytes, data, device_only):
        with self.current():
            buf = self._vulkan_buffer(nbytes) if nbytes >= VULKAN_MEMORY_MIN_BYTES else None
            if buf is None:
                buf = self._storage_buffer(max(4, nbytes))
            if data is not None:
                self.write(buf, data)
            return buf

    def _storage_procs(self):
        """(glCreateBuffers, glNamedBufferStorage, glDeleteBuffers,
        glGetNamedBufferParameteri64v), or False before GL 4.5."""
        if self._buffer_storage is None:
            try:
                self._buffer_storage = (
                    gl_proc("glCreateBuffers", None, ctypes.c_int32, ctypes.POINTER(ctypes.c_uint32)),
                    gl_proc("glNamedBufferStorage", None, ctypes.c_uint32, ctypes.c_ssize_t,
                            ctypes.c_void_p, ctypes.c_uint32),
                    gl_proc("glDeleteBuffers", None, ctypes.c_int32, ctypes.POINTER(ctypes.c_uint32)),
                    gl_proc("glGetNamedBufferParameteri64v", None, ctypes.c_uint32, ctypes.c_uint32,
                            ctypes.POINTER(ctypes.c_int64)))
            except OSError:
                self._buffer_storage = False
        return self._buffer_storage

    def _storage_buffer(self, nbytes: int) -> GLBuffer:
        """A buffer of immutable storage that the host can neither map nor write (flags 0): the
        driver is told the data lives on the GPU, and every host transfer goes through a staging
        copy, since NVIDIA's driver moves a buffer the host reads into system memory for good."""
        total = self._memory_total()
        if nbytes > total:  # NVIDIA's GL "allocates" any size and fails only when it is used
            raise MemoryError(f"the device has {total} bytes")
        if not self._storage_procs():  # before GL 4.5: mutable storage, never read in place
            try:
                with expected_errors():  # GL_OUT_OF_MEMORY is an answer here: MemoryError below
                    buf = self.ctx.buffer(reserve=nbytes)
            except Exception as e:  # ModernGL's Error: the driver's allocation failed
                raise MemoryError(str(e)) from e
            return GLBuffer(buf, nbytes, self.deferred(buf.release, nbytes=nbytes))
        create, storage, delete, query = self._buffer_storage
        name, size = ctypes.c_uint32(0), ctypes.c_int64(0)
        create(1, ctypes.byref(name))
        with expected_errors():  # GL_OUT_OF_MEMORY is an answer here: MemoryError below
            storage(name.value, nbytes, None, 0)
            query(name.value, GL_BUFFER_SIZE, ctypes.byref(size))
        if size.value != nbytes:
            delete(1, ctypes.byref(name))
            error = self.ctx.error  # read (and so cleared) here: the failure is reported below
            raise MemoryError(error)
        return GLBuffer(self.ctx.external_buffer(name.value, nbytes), nbytes,
                        self.deferred(lambda: delete(1, ctypes.byref(name)), nbytes=nbytes))

    def _staging(self, nbytes: int, read: bool):
        """(a staging buffer of `nbytes` the host reads (`read`) or writes, its persistent
        coherent mapping as uint8 or None where GL lacks buffer storage)."""
        nbytes = max(4, nbytes)
        with self.current():
            if self.ctx.version_code < 450:  # named buffer storage and mapping are GL 4.5's
                return self.ctx.buffer(reserve=nbytes, dynamic=True), None
            try:
                map_range = gl_proc("glMapNamedBufferRange", ctypes.c_void_p, ctypes.c_uint32,
                                    ctypes.c_ssize_t, ctypes.c_ssize_t, ctypes.c_uint32)
            except OSError:
                map_range = None
            if map_range is None or not self._storage_procs():
                return self.ctx.buffer(reserve=nbytes, dynamic=True), None
            create, storage, delete, _ = self._buffer_storage
            # MAP_READ or MAP_WRITE | PERSISTENT | COHERENT, and CLIENT_STORAGE: in host memory
            flags = (0x1 if read else 0x2) | 0x40 | 0x80
            name = ctypes.c_uint32(0)
            create(1, ctypes.byref(name))
            storage(name.value, nbytes, None, flags | 0x200)
            ptr = map_range(name.value, 0, nbytes, flags)
            if not ptr:
                delete(1, ctypes.byref(name))
                self.ctx.error  # noqa: B018  (read, and so cleared: the fallback serves)
                return self.ctx.buffer(reserve=nbytes, dynamic=True), None
            mapped = np.ctypeslib.as_array((ctypes.c_uint8 * nbytes).from_address(ptr))
            staging = self.ctx.external_buffer(name.value, nbytes)
            weakref.finalize(staging, self.deferred(lambda: delete(1, ctypes.byref(name)),
                                                    nbytes=nbytes)).atexit = False
            return staging, mapped

    def _client_wait(self):
        if getattr(self, "_client_wait_proc", None) is None:
            self._client_wait_proc = gl_proc("glClientWaitSync", ctypes.c_uint32, ctypes.c_void_p,
                                             ctypes.c_uint32, ctypes.c_uint64)
        return self._client_wait_proc

    def _memory_total(self) -> int:
        """The device's memory in bytes where the driver says (GL_NVX_gpu_memory_info), else a
        size no buffer reaches."""
        if self._memory is None:
            self._memory = 1 << 62
            if "GL_NVX_gpu_memory_info" in self.ctx.extensions:
                kib = _gl_integer(0x9048)  # GPU_MEMORY_INFO_TOTAL_AVAILABLE_MEMORY_NVX
                if kib > 0:
                    self._memory = kib * 1024
        return self._memory

    def texel_sampler(self):
        """The sampler the kernels read textures through: nearest texel, level 0 (texelFetch
        needs a complete texture; this sampler makes any texture's level 0 one)."""
        if self._texel_sampler is None:
            import moderngl
            self._texel_sampler = self.ctx.sampler(filter=(moderngl.NEAREST, moderngl.NEAREST),
                                                   repeat_x=False, repeat_y=False)
        return self._texel_sampler

    def _image(self, width: int, height: int, fmt: str) -> GLImage:
        """A texture of the plan's own (width x height, GLSL image format `fmt`)."""
        f = IMAGE_FORMATS[fmt]
        with self.current():
            texture = self.ctx.texture((width, height), f.components, dtype=f.dtype)
        image = GLImage(texture)
        weakref.finalize(image, self.deferred(texture.release, "images")).atexit = False
        return image

    @classmethod
    def of(cls, ctx) -> "GLDevice":
        """The device on the caller's ModernGL context, one per context (programs are compiled
        once per device)."""
        dev = getattr(ctx, "_pyfftgl_device", None)
        if dev is None:
            dev = cls(ctx)
            ctx._pyfftgl_device = dev
        return dev

    def _vulkan_buffer(self, nbytes: int) -> GLBuffer | None:
        """A buffer of Vulkan's memory; None where the drivers do not share it (decided by the
        first such buffer) or where this allocation failed (GL's own may still succeed)."""
        if not self.vulkan_memory:
            return None
        try:
            if self._vkmemory is None:
                from ._vkmemory import VulkanMemory
                self._vkmemory = VulkanMemory(self.ctx)
            with expected_errors():  # GL_OUT_OF_MEMORY where GL cannot import the memory
                buf, release = self._vkmemory.buffer(nbytes)
        except OSError as e:
            if not self._vkmemory_worked:
                self.vulkan_memory, self.vulkan_memory_note = False, str(e)
            return None
        self._vkmemory_worked = True
        return GLBuffer(buf, nbytes, self.deferred(release, nbytes=nbytes), vulkan_memory=True)

    def _write(self, buf, data):
        # Through a CPU-side staging buffer copied on the GPU: a kernel's buffer written with
        # glBufferSubData is moved to system memory by NVIDIA's driver (see GLSubmission).
        raw = np.ascontiguousarray(data).tobytes()
        with self.current():
            staging = self.ctx.buffer(raw, dynamic=True)
            self.ctx.copy_buffer(buf.buf, staging, size=len(raw))
            staging.release()

    def _read(self, buf, count):
        # Through a staging copy on the GPU, never from the buffer itself (see _storage_buffer).
        with self.current():
            self.ctx.memory_barrier()
            staging = self.ctx.buffer(reserve=max(4, count * 4), dynamic=True)
            try:
                self.ctx.copy_buffer(staging, buf.buf, size=count * 4)
                out = np.frombuffer(staging.read(size=count * 4), np.float32).copy()
            finally:
                staging.release()
            self.check_errors("reading a buffer")
            return out

    def _finish(self):
        self.check_usable()
        with self.current():
            self.ctx.finish()
            self.check_errors("running the work submitted")

    def _flush(self):
        self.check_usable()
        with self.current():
            self._sync_procs()[3]()

    def check_errors(self, what: str) -> None:
        """Raise the DeviceError of what the driver reported about the work since the last check
        (GL errors come back only when asked, so at the points where the host waits anyway). A
        caller's context is left alone: its errors may be the caller's."""
        if not self._own:
            return
        if self._reset_status is None:
            try:
                self._reset_status = gl_proc("glGetGraphicsResetStatus", ctypes.c_uint32)
            except OSError:
                self._reset_status = lambda: 0
        reset = self._reset_status()
        if reset:
            raise self.failure(what, f"glGetGraphicsResetStatus: {reset:#x}", lost=True)
        error = self.ctx.error
        if error != "GL_NO_ERROR":
            raise self.failure(what, error)

    def _record(self, dispatches, uploads, downloads):
        return GLSubmission(self, dispatches, uploads, downloads)
