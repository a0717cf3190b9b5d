"""OpenGL 4.3+ backend through ModernGL: SSBOs, compute shaders, timer queries.

By default it opens its own headless EGL context; pass a ModernGL context to share the caller's
(the render-loop case). The GL state it changes: SSBO bindings 0..k of the kernels it runs, the
bound compute program, and memory barriers between its dispatches.
"""
from __future__ import annotations

import ctypes
import time
import weakref
from typing import Sequence

import numpy as np

from .. import wisdom
from .base import (BackendUnavailable, Buffer, Device, DeviceInfo, Kernel, Limits,
                   Program, Submission)

GL_MAX_COMPUTE_SHARED_MEMORY_SIZE = 0x8262
GL_SHARED_MEMORY_MINIMUM = 32768  # what GL 4.3 guarantees
GL_MAX_SHADER_STORAGE_BUFFER_BINDINGS = 0x90DD
GL_SHADER_STORAGE_BLOCK = 0x92E6
GL_ACTIVE_RESOURCES = 0x92F5
GL_BUFFER_BINDING = 0x9302
GL_SHADER_STORAGE_BARRIER_BIT = 0x2000
# Buffers this large take Vulkan's memory where the drivers share it (_vkmemory): on the H200
# GL's own placement halved the speed from 256 MB buffers up and left 128 MB ones at full speed.
VULKAN_MEMORY_MIN_BYTES = 1 << 25


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


def _get_integer(name: int, minimum: int) -> int:
    """glGetIntegerv(name), for the limits ModernGL's ctx.info leaves out; at least the minimum
    GL 4.3 guarantees."""
    try:
        get = gl_proc("glGetIntegerv", None, ctypes.c_uint32, ctypes.POINTER(ctypes.c_int32))
    except OSError:
        return minimum
    value = ctypes.c_int32(0)
    get(name, ctypes.byref(value))
    return max(value.value, minimum)


class _BlockBindings:
    """Which binding point each storage block of a program reads, set per program
    (glShaderStorageBlockBinding) instead of rebinding buffers per dispatch: on the H100, a
    chain of dependent one-workgroup dispatches took 4.5 us each on GPU time, 5.9 us when two
    buffers were rebound before each (tools/gl_dispatch_cost.py)."""

    def __init__(self):
        i = ctypes.c_int32
        self.block_binding = gl_proc("glShaderStorageBlockBinding", None, ctypes.c_uint32,
                                     ctypes.c_uint32, ctypes.c_uint32)
        self.interface = gl_proc("glGetProgramInterfaceiv", None, ctypes.c_uint32,
                                 ctypes.c_uint32, ctypes.c_uint32, ctypes.POINTER(i))
        self.resource = gl_proc("glGetProgramResourceiv", None, ctypes.c_uint32, ctypes.c_uint32,
                                ctypes.c_uint32, ctypes.c_int32, ctypes.POINTER(ctypes.c_uint32),
                                ctypes.c_int32, ctypes.POINTER(i), ctypes.POINTER(i))

    def blocks(self, glo: int) -> dict[int, int]:
        """{binding declared in the source: block index} of a program's storage blocks (blocks
        the compiler dropped are absent)."""
        count = ctypes.c_int32(0)
        self.interface(glo, GL_SHADER_STORAGE_BLOCK, GL_ACTIVE_RESOURCES, ctypes.byref(count))
        prop, value = ctypes.c_uint32(GL_BUFFER_BINDING), ctypes.c_int32(0)
        out = {}
        for index in range(count.value):
            self.resource(glo, GL_SHADER_STORAGE_BLOCK, index, 1, ctypes.byref(prop), 1, None,
                          ctypes.byref(value))
            out[value.value] = index
        return out


class GLBuffer(Buffer):
    def __init__(self, buf, nbytes: int, release=None):
        self.buf = buf
        self.nbytes = nbytes
        self.vulkan_memory = release is not None  # see _vkmemory
        if release is not None:  # not at exit: the context may be gone by then
            weakref.finalize(self, release).atexit = False


class GLProgram(Program):
    def __init__(self, shader, push_names: tuple[str, ...]):
        self.shader = shader
        self.push_names = push_names
        # Uniforms the compiler dropped as unused are not settable; skip them.
        self.uniforms = [(i, shader.get(f"pc.{n}", None)) for i, n in enumerate(push_names)]
        # The values last set: uniforms are the program's own state, and only GLSubmission sets
        # them, so a value already there is not set again (see GLSubmission._calls).
        self.values = [None] * len(push_names)
        self.blocks = None  # {declared binding: block index}, looked up on first use
        self.points = None  # the binding point of each of those blocks, as last set (None: as
        # declared)


class GLKernel(Kernel):
    def __init__(self, program: GLProgram, buffers: Sequence[GLBuffer], groups):
        self.program = program
        self.buffers = list(buffers)
        self.groups = tuple(groups)


class GLSubmission(Submission):
    """Uploads and downloads go through staging buffers that only the CPU touches, copied on the
    GPU: a buffer written with glBufferSubData at every call is moved to system memory by
    NVIDIA's driver (measured: every dispatch then ran at PCIe speed, 2.5 ms for 128 MB)."""

    def __init__(self, device: "GLDevice", dispatches, uploads, downloads, copies_before=(),
                 copies_after=()):
        self._device = device
        # Per dispatch: (program, buffers, [(push index, uniform, value)], groups), taken apart
        # once here: every call issues each dispatch from Python again, and ModernGL took 3.4 us
        # to set six uniforms from numpy values (llvmpipe's host; GPU times did not move).
        self._calls = [(d.kernel.program, [b.buf for b in d.kernel.buffers],
                        [(i, u, int(d.push[i])) for i, u in d.kernel.program.uniforms
                         if u is not None], d.kernel.groups) for d in dispatches]
        # Each distinct buffer gets a binding point of its own for the whole submission, bound
        # once per call; each program's blocks are pointed at them (_BlockBindings says why).
        # Where the buffers outnumber the binding points, each dispatch binds its own.
        self._distinct = []
        for _, bufs, _, _ in self._calls:
            self._distinct += [b for b in bufs if all(b is not d for d in self._distinct)]
        if len(self._distinct) > device.max_storage_bindings or device.block_bindings is None:
            self._distinct = None
        self._points = [tuple(next(j for j, d in enumerate(self._distinct) if d is b)
                              for b in bufs) if self._distinct else tuple(range(len(bufs)))
                        for _, bufs, _, _ in self._calls]
        self._copies_before, self._copies_after = list(copies_before), list(copies_after)
        self._uploads = [(b, device.ctx.buffer(reserve=max(4, b.nbytes), dynamic=True))
                         for b in uploads]
        self._downloads = [(b, device.ctx.buffer(reserve=max(4, b.nbytes), dynamic=True))
                           for b in downloads]

    def _dispatch_all(self):
        ctx = self._device.ctx
        for a, b in self._copies_before:
            ctx.copy_buffer(b.buf, a.buf, size=a.nbytes)
        if self._copies_before:
            ctx.memory_barrier()
        if self._distinct:
            for point, buf in enumerate(self._distinct):
                buf.bind_to_storage_buffer(point)
        for n, ((program, buffers, uniforms, groups), points) in enumerate(
                zip(self._calls, self._points)):
            if n:  # storage writes of the dispatch before, read by this one
                ctx.memory_barrier(GL_SHADER_STORAGE_BARRIER_BIT)
            if not self._distinct:
                for binding, buf in enumerate(buffers):
                    buf.bind_to_storage_buffer(binding)
            now = program.points if program.points is not None else tuple(range(len(points)))
            if now != points:
                self._device.point_blocks(program, points)
            values = program.values
            for i, uniform, value in uniforms:
                if values[i] != value:
                    uniform.value = value
                    values[i] = value
            program.shader.run(*groups)
        ctx.memory_barrier()  # all bits: the caller may use the output any way it likes
        for a, b in self._copies_after:
            ctx.copy_buffer(b.buf, a.buf, size=a.nbytes)

    def run(self, inputs=(), *, timed=False, wait=True):
        ctx = self._device.ctx
        for (buf, staging), data in zip(self._uploads, inputs):
            raw = np.ascontiguousarray(data).tobytes()
            staging.write(raw)
            ctx.copy_buffer(buf.buf, staging, size=len(raw))
        try:
            return self._timed_dispatch() if timed else self._dispatch_all()
        finally:
            for buf, staging in self._downloads:
                ctx.copy_buffer(staging, buf.buf, size=buf.nbytes)

    def _timed_dispatch(self):
        ctx = self._device.ctx
        if self._device.info.is_software:
            # llvmpipe's GL_TIME_ELAPSED does not cover compute work (it reads 1 ns for a 15 ms
            # dispatch), so software GL is timed by the wall clock between two glFinish calls.
            ctx.finish()
            t0 = time.perf_counter_ns()
            self._dispatch_all()
            ctx.finish()
            return float(time.perf_counter_ns() - t0)
        # The staging copies are queued before the dispatches; keep them out of the query.
        ctx.finish()
        query = ctx.query(time=True)
        with query:
            self._dispatch_all()
        return float(query.elapsed)

    def result(self, i=0):
        buf, staging = self._downloads[i]
        return np.frombuffer(staging.read(size=buf.nbytes), np.float32).copy()


class GLDevice(Device):
    """`vulkan_memory`: take the memory of buffers of VULKAN_MEMORY_MIN_BYTES or more from Vulkan
    where the drivers share it (see _vkmemory). After the first such buffer, `vulkan_memory` says
    whether they do, and `vulkan_memory_note` why not."""

    def __init__(self, ctx=None, vulkan_memory: bool = True):
        try:
            import moderngl
        except ImportError as e:
            raise BackendUnavailable(f"the GL backend needs ModernGL ({e}); pip install moderngl") from e
        if ctx is None:
            try:
                ctx = moderngl.create_standalone_context(require=430, backend="egl")
            except Exception as e:  # glcontext raises plain Exceptions
                raise BackendUnavailable(
                    f"no headless OpenGL 4.3 context via EGL ({e}): install a GPU driver with EGL, "
                    "or Mesa's llvmpipe (Debian: libegl1 libegl-mesa0 libgl1-mesa-dri)") from e
        if ctx.version_code < 430:
            raise BackendUnavailable(
                f"OpenGL {ctx.version_code // 100}.{ctx.version_code % 100 // 10} has no compute "
                "shaders; pyfftgl needs OpenGL 4.3 or newer")
        # Release GL objects when Python drops them; ModernGL's default keeps every buffer and
        # program alive until released by hand, so evicted plans would hold their memory.
        ctx.gc_mode = "auto"
        self.ctx = ctx
        self.vulkan_memory, self.vulkan_memory_note = vulkan_memory, "" if vulkan_memory else "off"
        self._vkmemory, self._vkmemory_worked = None, False
        gi = ctx.info
        renderer = gi["GL_RENDERER"]
        self.info = DeviceInfo(
            api="gl",
            name=renderer,
            driver=f"{gi['GL_VENDOR']} {gi['GL_VERSION']}",
            api_version=f"{ctx.version_code // 100}.{ctx.version_code % 100 // 10}",
            limits=Limits(
                max_shared_bytes=_get_integer(GL_MAX_COMPUTE_SHARED_MEMORY_SIZE,
                                              GL_SHARED_MEMORY_MINIMUM),
                max_invocations=gi["GL_MAX_COMPUTE_WORK_GROUP_INVOCATIONS"],
                max_group_size=tuple(gi["GL_MAX_COMPUTE_WORK_GROUP_SIZE"]),
                max_group_count=tuple(gi["GL_MAX_COMPUTE_WORK_GROUP_COUNT"]),
                max_buffer_bytes=gi["GL_MAX_SHADER_STORAGE_BLOCK_SIZE"],
                max_texture_size=gi["GL_MAX_TEXTURE_SIZE"],
                tuned=wisdom.load(renderer, "gl"),
            ),
            is_software="llvmpipe" in renderer or "softpipe" in renderer,
        )
        self.max_storage_bindings = _get_integer(GL_MAX_SHADER_STORAGE_BUFFER_BINDINGS, 8)
        try:
            self.block_bindings = _BlockBindings()
        except OSError:  # no such entry points: each dispatch binds its buffers
            self.block_bindings = None

    def point_blocks(self, program: GLProgram, points: tuple[int, ...]) -> None:
        """Point the storage block declared with binding i at binding point points[i]."""
        bb = self.block_bindings
        if program.blocks is None:
            program.blocks = bb.blocks(program.shader.glo)
        for declared, index in program.blocks.items():
            if declared < len(points):
                bb.block_binding(program.shader.glo, index, points[declared])
        program.points = points

    def program(self, source, push_names=()):
        from ..shaders import ShaderCompileError
        try:
            shader = self.ctx.compute_shader(source)
        except Exception as e:
            raise ShaderCompileError(f"GL compute shader failed to compile: {e}") from e
        return GLProgram(shader, tuple(push_names))

    def buffer(self, nbytes, data=None, device_only=False):
        buf = self._vulkan_buffer(nbytes) if nbytes >= VULKAN_MEMORY_MIN_BYTES else None
        if buf is None:
            buf = GLBuffer(self.ctx.buffer(reserve=max(4, nbytes)), nbytes)
        if data is not None:
            self.write(buf, data)
        return buf

    def _vulkan_buffer(self, nbytes: int) -> GLBuffer | None:
        """A buffer of Vulkan's memory; None where the drivers do not share it (decided by the
        first such buffer) or where this allocation failed (GL's own may still succeed)."""
        if not self.vulkan_memory:
            return None
        try:
            if self._vkmemory is None:
                from ._vkmemory import VulkanMemory
                self._vkmemory = VulkanMemory(self.ctx)
            buf, release = self._vkmemory.buffer(nbytes)
        except OSError as e:
            if not self._vkmemory_worked:
                self.vulkan_memory, self.vulkan_memory_note = False, str(e)
            return None
        self._vkmemory_worked = True
        return GLBuffer(buf, nbytes, release)

    def write(self, buf, data):
        # Through a CPU-side staging buffer copied on the GPU: a kernel's buffer written with
        # glBufferSubData is moved to system memory by NVIDIA's driver (see GLSubmission).
        raw = np.ascontiguousarray(data).tobytes()
        staging = self.ctx.buffer(raw, dynamic=True)
        self.ctx.copy_buffer(buf.buf, staging, size=len(raw))
        staging.release()

    def read(self, buf, count):
        self.ctx.memory_barrier()
        src = buf.buf
        if buf.vulkan_memory:  # imported memory cannot be mapped: read a GL copy of it
            src = self.ctx.buffer(reserve=max(4, count * 4), dynamic=True)
            self.ctx.copy_buffer(src, buf.buf, size=count * 4)
        try:
            return np.frombuffer(src.read(size=count * 4), np.float32).copy()
        finally:
            if src is not buf.buf:
                src.release()

    def finish(self):
        self.ctx.finish()

    def kernel(self, program, buffers, groups):
        return GLKernel(program, buffers, groups)

    def record(self, dispatches, *, uploads=(), downloads=(), copies_before=(), copies_after=()):
        return GLSubmission(self, dispatches, uploads, downloads, copies_before, copies_after)
