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


def _shared_memory_size() -> int:
    """glGetIntegerv(GL_MAX_COMPUTE_SHARED_MEMORY_SIZE): ModernGL's ctx.info leaves it out."""
    try:
        get = gl_proc("glGetIntegerv", None, ctypes.c_uint32, ctypes.POINTER(ctypes.c_int32))
    except OSError:
        return GL_SHARED_MEMORY_MINIMUM
    value = ctypes.c_int32(0)
    get(GL_MAX_COMPUTE_SHARED_MEMORY_SIZE, ctypes.byref(value))
    return max(value.value, GL_SHARED_MEMORY_MINIMUM)


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
        for n, (program, buffers, uniforms, groups) in enumerate(self._calls):
            if n:
                ctx.memory_barrier()
            for binding, buf in enumerate(buffers):
                buf.bind_to_storage_buffer(binding)
            values = program.values
            for i, uniform, value in uniforms:
                if values[i] != value:
                    uniform.value = value
                    values[i] = value
            program.shader.run(*groups)
        ctx.memory_barrier()
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
                max_shared_bytes=_shared_memory_size(),
                max_invocations=gi["GL_MAX_COMPUTE_WORK_GROUP_INVOCATIONS"],
                max_group_size=tuple(gi["GL_MAX_COMPUTE_WORK_GROUP_SIZE"]),
                max_group_count=tuple(gi["GL_MAX_COMPUTE_WORK_GROUP_COUNT"]),
                max_buffer_bytes=gi["GL_MAX_SHADER_STORAGE_BLOCK_SIZE"],
                max_texture_size=gi["GL_MAX_TEXTURE_SIZE"],
                tuned=wisdom.load(renderer, "gl"),
            ),
            is_software="llvmpipe" in renderer or "softpipe" in renderer,
        )

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
