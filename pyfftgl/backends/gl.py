"""OpenGL 4.3+ backend through ModernGL: SSBOs, compute shaders, timer queries.

By default it opens its own headless EGL context; pass a ModernGL context to share the caller's
(the render-loop case).

The backend in parts: gl_context.GLContext owns the context, the threads' contexts and the
fences (every call enters it: GLDevice.current), gl_storage.GLStorage the buffers, staging
buffers, images and their transfers; GLDevice composes them and keeps the Device primitives,
compiling and the error checks. This module also holds the submissions (GLSubmission) and the
barriers they issue.

Threads: every call takes the device's lock and has a context current on the calling thread
(GLContext says how); code that uses `device.ctx` directly does so inside
`with device.current():`. GL objects dropped by the garbage collector (on any thread) are deleted
by the next call. The GL
state a submission changes: SSBO bindings 0-3 and image units 0-7 (they write images) of the
kernels it runs, the top 8 texture units (GLDevice.texture_unit_base: kernels read textures
through the library's sampler, which stays bound there) and the bound compute program. Its memory
barriers (gl_barriers) order each dispatch after the ones whose writes it reads; after the last
comes one of all bits where it downloads, none where it leaves only buffers written on the
library's own context (the next call orders itself after it), and where it writes textures, one
for their use by sampling, drawing and copies.

Two things outside this module's objects: importing it installs a process-wide audit hook
(gl_context._fence_before_new_threads), and a device stores itself on its ModernGL context as
`ctx._pyfftgl_device` (GLDevice.of: one device, so one program cache, per context).
"""
from __future__ import annotations

import ctypes
import time
import weakref

from .. import wisdom
from .base import BackendUnavailable, Device, DeviceInfo, Limits, Program, Submission
# gl_proc, VULKAN_MEMORY_MIN_BYTES and GLBuffer: their old home, which tests and tools import
from .gl_context import GLContext, egl, gl_integer, gl_proc  # noqa: F401
from .gl_storage import VULKAN_MEMORY_MIN_BYTES, GLBuffer, GLImage, GLStorage  # noqa: F401
from .gl_transfers import GLTransfers
from .gl_barriers import (GL_ALL_BARRIER_BITS, GL_SHADER_STORAGE_BARRIER_BIT,  # noqa: F401
                          GL_TEXTURE_FETCH_BARRIER_BIT, TEXTURE_USE_BARRIER_BITS,
                          buffer_names, submission_barriers)

GL_MAX_COMPUTE_SHARED_MEMORY_SIZE = 0x8262
GL_SHARED_MEMORY_MINIMUM = 32768  # what GL 4.3 guarantees


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


def _bindings(d, unit_base: int) -> list[tuple]:
    """What dispatch `d` binds: (GL binding point, object bound, bind function, its args) for
    each buffer (SSBO bindings), texture read (texture units from `unit_base`) and image
    written (image units)."""
    return ([(("buffer", i), b, b.buf.bind_to_storage_buffer, (i, *b.binding))
             for i, b in enumerate(d.buffers) if b is not None]
            + [(("unit", unit_base + i), m.texture, m.texture.use, (unit_base + i,))
               for i, m in enumerate(d.images[:d.image_reads])]
            + [(("image", i), m.texture, m.texture.bind_to_image, (i, False, True))
               for i, m in enumerate(d.images[d.image_reads:])])


class GLSubmission(Submission):
    """Uploads and downloads go through staging buffers that only the CPU touches, copied on the
    GPU (gl_transfers): a buffer written with glBufferSubData at every call is moved to system
    memory by NVIDIA's driver (every dispatch then ran at PCIe speed)."""

    def __init__(self, device: "GLDevice", dispatches, uploads, downloads):
        self.device, self._context = device, device.context  # the context every call enters
        self.uploads, self.downloads = uploads, downloads
        # Per dispatch: (barrier bits, [(bind, args)], program, ((push index, uniform, value),
        # ...), groups), taken apart once here: every call issues each dispatch from Python
        # again, and ModernGL is slow to set uniforms from numpy values.
        # Images read are textures bound to the device's texture units (texture_unit_base..)
        # with a nearest-texel sampler (whatever filtering and mipmaps the texture has), images
        # written go to image units.
        before, self._end_barrier = submission_barriers(dispatches)
        # A call that leaves only buffers written, on the library's own context, ends with no
        # barrier: the next one issues what it needs (gl_barriers).
        self._reads, self._writes, self._touched = buffer_names(dispatches)
        self._lazy = (self._end_barrier == GL_ALL_BARRIER_BITS and not downloads
                      and device.context.own and not any(d.images for d in dispatches))
        base = device.texture_unit_base
        # GL state persists from one dispatch to the next within a call, so a binding the
        # dispatch before left in place is not made again; the first binds everything. A
        # buffer's binding is its range (the GLBuffer): ranges of one pool block differ.
        bound, self._calls = {}, []
        targets = [_bindings(d, base) for d in dispatches]
        for bits, d, binding in zip(before, dispatches, targets):
            binds = []
            for key, obj, bind, args in binding:
                if bound.get(key) is not obj:
                    binds.append((bind, args))
                    bound[key] = obj
            uniforms = tuple((i, u, int(d.push[i])) for i, u in d.program.uniforms
                             if u is not None)
            self._calls.append((bits, binds, d.program, uniforms, tuple(d.groups)))
        # A call right after a call of this submission (GLContext.bound) starts from the
        # bindings its last dispatch left: its first dispatch makes only those that differ.
        self._calls_again = list(self._calls)
        if dispatches:
            first = self._calls[0]
            again = [(bind, args) for key, obj, bind, args in targets[0]
                     if bound.get(key) is not obj]
            self._calls_again[0] = (first[0], again, *first[2:])
        self._token = object()  # GLContext.bound's mark of this submission's bindings
        self._sampled_units = sorted({base + i for d in dispatches for i in range(d.image_reads)})
        self._transfers = GLTransfers(device, uploads, downloads)

    def _dispatch_all(self):
        # ModernGL's native objects (mglo) called directly: its Python wrappers only pass the
        # arguments on, at a call per dispatch and barrier.
        ctx, context = self.device.ctx.mglo, self._context
        # Bindings left in place only by this submission's call at the entry just before this
        # one, both outermost on the library's own context (GLContext.bound).
        again = (context.bound is self._token and context.bound_at == context.entries - 1
                 and context.depth == 1)
        if self._sampled_units:
            # The library's own units (GLDevice.texture_unit_base): binding its sampler again is
            # no change of state, and the caller's units keep their textures and samplers.
            sampler = self.device.texel_sampler()
            for unit in self._sampled_units:
                sampler.use(unit)
        pending = context.pending
        lead = pending.lead_bits(self._reads, self._writes)
        if lead:
            ctx.memory_barrier(lead, False)
        for bits, binds, program, uniforms, groups in self._calls_again if again else self._calls:
            if bits:
                ctx.memory_barrier(bits, False)
            for bind, args in binds:
                bind(*args)
            if program.last is not uniforms:
                values = program.values
                for i, uniform, value in uniforms:
                    if values[i] != value:
                        uniform.value = value
                        values[i] = value
                program.last = uniforms
            program.shader.mglo.run(*groups)
        if self._lazy:
            pending.leave(self._writes, self._touched)
        else:
            ctx.memory_barrier(self._end_barrier, False)
            if self._end_barrier == GL_ALL_BARRIER_BITS:
                pending.clear()
        if context.own and context.depth == 1:
            context.bound, context.bound_at = self._token, context.entries
        else:  # a caller's context, or calls of the caller's own may follow in this entry
            context.bound = None

    def _again(self):
        with self._context:
            self._dispatch_all()

    def _run(self, inputs, timed, wait):
        with self._context as ctx:  # device.current()
            self._transfers.upload(ctx, inputs)
            try:
                return self._timed_dispatch() if timed else self._dispatch_all()
            finally:
                self._transfers.queue_downloads(ctx)

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

    def _result(self, i, out):
        with self.device.current():
            self._transfers.read(i, out)
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
    """A GL device: its `context` (GLContext: the lock, the threads' contexts, the fences) and
    its `storage` (GLStorage: buffers, staging, images), composed; the Device primitives here.

    `vulkan_memory`: take the memory of buffers of VULKAN_MEMORY_MIN_BYTES or more from Vulkan
    where the drivers share it (see _vkmemory). After the first such buffer, `vulkan_memory` says
    whether they do, and `vulkan_memory_note` why not."""

    def __init__(self, ctx=None, vulkan_memory: bool = True):
        self.own = ctx is None  # the library's own context, not a caller's
        calls = egl()
        before = calls.state() if self.own and calls else None  # a context the caller had current
        if self.own:
            ctx = _standalone_context()
        if ctx.version_code < 430:
            raise BackendUnavailable(_too_old(ctx.version_code))
        self.ctx = ctx
        self.driver_info = _driver_info(ctx)  # queried with ctx current, before `before` is back
        # Images one dispatch may bind (GL 4.3 promises 8): a TextureFFT list takes one per texture.
        self.image_units = max(8, min(gl_integer(0x91BD), gl_integer(0x8F38)))
        # Kernels read textures at the top 8 texture units (GL 4.3 promises 96), which a render
        # loop leaves alone: the caller's units 0.. keep their bindings and samplers, and the
        # library's sampler stays bound on its own units from call to call.
        self.texture_unit_base = max(0, ctx.info["GL_MAX_COMBINED_TEXTURE_IMAGE_UNITS"] - 8)
        host = getattr(ctx, "_pyfftgl_device", None)
        # Another device on the library's own context shares its context state (lock, switching).
        if host is not None and host.context.own:
            self.context = host.context
        else:
            self.context = GLContext(ctx, self.own, calls, before)
        self.lock = self.context.lock
        if self.own:
            ctx._pyfftgl_device = self
        self.storage = GLStorage(self.context, self.deferred, vulkan_memory)
        self._texel_sampler = None  # texel_sampler()
        self._reset_status = None  # glGetGraphicsResetStatus (check_errors)

    @property
    def vulkan_memory(self) -> bool:
        return self.storage.vulkan_memory

    @property
    def vulkan_memory_note(self) -> str:
        return self.storage.vulkan_memory_note

    def current(self) -> GLContext:
        """This device's lock held and its context current on the calling thread, for the
        calls inside (nested uses are free; `with` yields the ModernGL context)."""
        return self.context

    def deferred(self, release, kind: str = "buffers", nbytes: int = 0):
        """`release` for a finalizer: queued, and run by the next call with the context current.
        Counts the object as live until then."""
        released = self.count_live(kind, nbytes)
        context = self.context

        def run():
            release()
            released()
        return lambda: context.defer(run)

    def _program(self, source, push_names):
        from ..kernels import ShaderCompileError
        with self.current():
            try:
                shader = self.ctx.compute_shader(source)
            except Exception as e:
                raise ShaderCompileError(f"GL compute shader failed to compile: {e}") from e
            program = GLProgram(shader, push_names, self.texture_unit_base)
        # Released when collected (the program cache's bound drops it), on a caller's context too.
        context = self.context
        weakref.finalize(program, lambda: context.defer(shader.release)).atexit = False
        return program

    def _buffer(self, nbytes, data, device_only):
        with self.current():
            buf = self.storage.buffer(nbytes)
            if data is not None:
                self.write(buf, data)
            return buf

    def texel_sampler(self):
        """The sampler the kernels read textures through: nearest texel, level 0 (texelFetch
        needs a complete texture; this sampler makes any texture's level 0 one)."""
        if self._texel_sampler is None:
            import moderngl
            self._texel_sampler = self.ctx.sampler(filter=(moderngl.NEAREST, moderngl.NEAREST),
                                                   repeat_x=False, repeat_y=False)
        return self._texel_sampler

    def _memory_stats(self):
        with self.current():  # the ranges of buffers collected since the last call go back
            self.context.collect()
            return self.storage.memory_stats(self.live)

    def _trim_memory(self):
        self.context.collect()
        return self.storage.pool.trim()

    def _image(self, width: int, height: int, fmt: str) -> GLImage:
        return self.storage.image(width, height, fmt)

    @classmethod
    def of(cls, ctx) -> "GLDevice":
        """The device on the caller's ModernGL context, one per context (programs are compiled
        once per device)."""
        dev = getattr(ctx, "_pyfftgl_device", None)
        if dev is None:
            dev = cls(ctx)
            ctx._pyfftgl_device = dev
        return dev

    def _write(self, buf, data):
        self.storage.write(buf, data)

    def _read(self, buf, count):
        with self.current():
            out = self.storage.read(buf, count)
            self.check_errors("reading a buffer")
            return out

    # Device.finish and Device.flush call these with the context current (their one entry).
    def _finish(self):
        self.check_usable()
        self.ctx.finish()
        self.check_errors("running the work submitted")
        self.context.bindings_unchanged()

    def _flush(self):
        self.check_usable()
        self.context.sync_procs()[3]()
        self.context.bindings_unchanged()

    def check_errors(self, what: str) -> None:
        """Raise the DeviceError of what the driver reported about the work since the last check
        (GL errors come back only when asked, so at the points where the host waits anyway). A
        caller's context is left alone: its errors may be the caller's."""
        if not self.own:
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


def _standalone_context():
    """The library's own headless OpenGL 4.3 context (EGL), current on this thread."""
    try:
        import moderngl
    except ImportError as e:
        raise BackendUnavailable(f"the GL backend needs ModernGL ({e}); "
                                 "pip install moderngl") from e
    try:
        return moderngl.create_standalone_context(require=430, backend="egl")
    except Exception as e:  # glcontext raises plain Exceptions
        offered = _offered_version(moderngl)
        if offered is not None and offered < 430:
            raise BackendUnavailable(_too_old(offered)) from e
        raise BackendUnavailable(
            f"no headless OpenGL 4.3 context via EGL ({e}): install a GPU driver with EGL, "
            "or Mesa's llvmpipe (Debian: libegl1 libegl-mesa0 libgl1-mesa-dri)") from e


def _driver_info(ctx) -> DeviceInfo:
    """The driver's own DeviceInfo of `ctx` (current on this thread)."""
    gi = ctx.info
    renderer = gi["GL_RENDERER"]
    return DeviceInfo(
        api="gl",
        name=renderer,
        driver=f"{gi['GL_VENDOR']} {gi['GL_VERSION']}",
        api_version=f"{ctx.version_code // 100}.{ctx.version_code % 100 // 10}",
        limits=Limits(
            max_shared_bytes=max(gl_integer(GL_MAX_COMPUTE_SHARED_MEMORY_SIZE),
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
