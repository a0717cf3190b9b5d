"""The GL backend's storage: device buffers (GL's immutable storage, or Vulkan's memory for large
ones: _vkmemory), the staging buffers every host transfer goes through, plan-owned textures, and
the writes and reads through them. GLStorage owns the allocation strategy; GLDevice holds one.
Device buffers below buffer_pool.LARGE are ranges of the pool's blocks (buffer_pool): a GLBuffer
is a GL buffer, an offset in it and a size, and every binding and copy names that range.

Device buffers are never mapped or written by the host: NVIDIA's driver moves a buffer the host
reads or writes with glBufferSubData into system memory for good, where every dispatch then ran at
PCIe speed; uploads and downloads are GPU copies from and to CPU-side staging buffers.
"""
from __future__ import annotations

import ctypes
import weakref

import numpy as np

from ..planner import IMAGE_FORMATS, image_format
from .base import Buffer, Image
from .gl_context import GLContext, gl_integer, gl_proc
from .buffer_pool import LARGE, Pool
from .gldebug import expected_errors

GL_BUFFER_SIZE = 0x8764
GL_SHADER_STORAGE_BUFFER_OFFSET_ALIGNMENT = 0x90DF
# Buffers this large take Vulkan's memory where the drivers share it (_vkmemory): GL's own
# placement of large buffers ran kernels at half speed (docs/performance-log.md).
VULKAN_MEMORY_MIN_BYTES = 1 << 25


class GLBuffer(Buffer):
    def __init__(self, buf, nbytes: int, release=None, vulkan_memory: bool = False,
                 offset: int = 0):
        """`release`: deletes the GL buffer (or gives the range back to the pool); called
        (GLDevice.deferred) by the device's next call after this object is collected. `offset`:
        where the buffer starts in `buf` (a range of a pool block: buffer_pool)."""
        self.buf = buf
        self.nbytes = nbytes
        self.offset = offset
        self.vulkan_memory = vulkan_memory  # see _vkmemory
        # What a dispatch binds: the range of a pool block, or the whole GL buffer
        self.binding = (offset, max(4, nbytes)) if offset or nbytes < buf.size else ()
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


class GLStorage:
    """Buffers, staging buffers and images on `context` (entered for each); `deferred(release,
    kind, nbytes)` makes the finalizer callback that releases an object at the device's next
    call, counting it live until then (GLDevice.deferred). `vulkan_memory`: take the memory of
    buffers of VULKAN_MEMORY_MIN_BYTES or more from Vulkan where the drivers share it; after the
    first such buffer it says whether they do, and `vulkan_memory_note` why not."""

    def __init__(self, context: GLContext, deferred, vulkan_memory: bool = True):
        self.context, self.ctx, self._deferred = context, context.ctx, deferred
        self.vulkan_memory, self.vulkan_memory_note = vulkan_memory, "" if vulkan_memory else "off"
        self.vkmemory = None  # the VulkanMemory of the large buffers, made on the first
        self._vkmemory_worked = False
        self._memory = None  # bytes of device memory (memory_total)
        self._procs = None  # (glCreateBuffers, glNamedBufferStorage, glDeleteBuffers, query)
        with context:  # every range's offset is a multiple of the granule
            align = gl_integer(GL_SHADER_STORAGE_BUFFER_OFFSET_ALIGNMENT)
        self.pool = Pool(self._gl_buffer, align)

    def buffer(self, nbytes: int) -> GLBuffer:
        """A device buffer of `nbytes`: a range of a pool block below buffer_pool.LARGE, else a GL
        buffer of its own; MemoryError(the reason) where the driver has none."""
        with self.context:
            if nbytes < LARGE:
                return self._pool_buffer(nbytes)
            buf = self._vulkan_buffer(nbytes) if nbytes >= VULKAN_MEMORY_MIN_BYTES else None
            if buf is None:
                gl_buf, delete = self._gl_buffer(nbytes)
                buf = GLBuffer(gl_buf, nbytes, self._deferred(delete, nbytes=nbytes))
            return buf

    def _pool_buffer(self, nbytes: int) -> GLBuffer:
        """A range of one of the pool's blocks, given back when the buffer is collected."""
        pool = self.pool
        block, offset, size = pool.allocate(nbytes)
        return GLBuffer(block.buf, nbytes, offset=offset, release=self._deferred(
            lambda: pool.free(block, offset, size, nbytes), nbytes=nbytes))

    def _storage_procs(self):
        """(glCreateBuffers, glNamedBufferStorage, glDeleteBuffers,
        glGetNamedBufferParameteri64v), or False before GL 4.5."""
        if self._procs is None:
            names = ctypes.POINTER(ctypes.c_uint32)
            try:
                self._procs = (
                    gl_proc("glCreateBuffers", None, ctypes.c_int32, names),
                    gl_proc("glNamedBufferStorage", None, ctypes.c_uint32, ctypes.c_ssize_t,
                            ctypes.c_void_p, ctypes.c_uint32),
                    gl_proc("glDeleteBuffers", None, ctypes.c_int32, names),
                    gl_proc("glGetNamedBufferParameteri64v", None, ctypes.c_uint32, ctypes.c_uint32,
                            ctypes.POINTER(ctypes.c_int64)))
            except OSError:
                self._procs = False
        return self._procs

    def _gl_buffer(self, nbytes: int) -> tuple:
        """(a GL buffer of immutable storage that the host can neither map nor write (flags 0),
        the function that deletes it): the driver is told the data lives on the GPU, and every
        host transfer goes through a staging copy, since NVIDIA's driver moves a buffer the host
        reads into system memory for good. A pool block or a large buffer's own."""
        total = self.memory_total()
        if nbytes > total:  # NVIDIA's GL "allocates" any size and fails only when it is used
            raise MemoryError(f"the device has {total} bytes")
        if not self._storage_procs():  # before GL 4.5: mutable storage, never read in place
            try:
                with expected_errors():  # GL_OUT_OF_MEMORY is an answer here: MemoryError below
                    buf = self.ctx.buffer(reserve=nbytes)
            except Exception as e:  # ModernGL's Error: the driver's allocation failed
                raise MemoryError(str(e)) from e
            return buf, buf.release
        create, storage, delete, query = self._procs
        name, size = ctypes.c_uint32(0), ctypes.c_int64(0)
        create(1, ctypes.byref(name))
        with expected_errors():  # GL_OUT_OF_MEMORY is an answer here: MemoryError below
            storage(name.value, nbytes, None, 0)
            query(name.value, GL_BUFFER_SIZE, ctypes.byref(size))
        if size.value != nbytes:
            delete(1, ctypes.byref(name))
            error = self.ctx.error  # read (and so cleared) here: the failure is reported below
            raise MemoryError(error)
        return (self.ctx.external_buffer(name.value, nbytes),
                lambda: delete(1, ctypes.byref(name)))

    def _vulkan_buffer(self, nbytes: int) -> GLBuffer | None:
        """A buffer of Vulkan's memory; None where the drivers do not share it (decided by the
        first such buffer) or where this allocation failed (GL's own may still succeed)."""
        if not self.vulkan_memory:
            return None
        try:
            if self.vkmemory is None:
                from ._vkmemory import VulkanMemory
                self.vkmemory = VulkanMemory(self.ctx)
            with expected_errors():  # GL_OUT_OF_MEMORY where GL cannot import the memory
                buf, release = self.vkmemory.buffer(nbytes)
        except OSError as e:
            if not self._vkmemory_worked:
                self.vulkan_memory, self.vulkan_memory_note = False, str(e)
            return None
        self._vkmemory_worked = True
        return GLBuffer(buf, nbytes, self._deferred(release, nbytes=nbytes), vulkan_memory=True)

    def memory_total(self) -> int:
        """The device's memory in bytes where the driver says (GL_NVX_gpu_memory_info), else a
        size no buffer reaches."""
        if self._memory is None:
            self._memory = 1 << 62
            if "GL_NVX_gpu_memory_info" in self.ctx.extensions:
                kib = gl_integer(0x9048)  # GPU_MEMORY_INFO_TOTAL_AVAILABLE_MEMORY_NVX
                if kib > 0:
                    self._memory = kib * 1024
        return self._memory

    def _mappable_storage(self) -> bool:
        """Whether persistent mappings of named buffer storage are GL's here: GL 4.5, or its
        two extensions (NVIDIA's EGL contexts report the 4.3 asked for and offer both)."""
        have = self.ctx.extensions
        return self.ctx.version_code >= 450 or (
            "GL_ARB_direct_state_access" in have and "GL_ARB_buffer_storage" in have)

    def staging(self, nbytes: int, read: bool):
        """(a staging buffer of `nbytes` the host reads (`read`) or writes, its persistent
        coherent mapping as uint8 or None where GL lacks buffer storage)."""
        nbytes = max(4, nbytes)
        with self.context:
            if not self._mappable_storage():
                return self.ctx.buffer(reserve=nbytes, dynamic=True), None
            try:
                map_range = gl_proc("glMapNamedBufferRange", ctypes.c_void_p, ctypes.c_uint32,
                                    ctypes.c_ssize_t, ctypes.c_ssize_t, ctypes.c_uint32)
            except OSError:
                map_range = None
            if map_range is None or not self._storage_procs():
                return self.ctx.buffer(reserve=nbytes, dynamic=True), None
            create, storage, delete, _ = self._procs
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
            weakref.finalize(staging, self._deferred(lambda: delete(1, ctypes.byref(name)),
                                                     nbytes=nbytes)).atexit = False
            return staging, mapped

    def memory_stats(self, live: dict) -> dict:
        """Device.memory_stats of the device whose `live` counts these buffers: the pool's
        ranges count their size classes, every other buffer (large ones, staging) its bytes."""
        own_bytes = live["bytes"] - self.pool.requested
        return {"used_bytes": own_bytes + self.pool.used,
                "held_bytes": own_bytes + self.pool.held(), "blocks": len(self.pool.blocks),
                "allocations": len(self.pool.blocks) + live["buffers"] - self.pool.ranges,
                "limit": None}

    def image(self, width: int, height: int, fmt: str) -> GLImage:
        """A texture of the plan's own (width x height, GLSL image format `fmt`)."""
        f = IMAGE_FORMATS[fmt]
        with self.context:
            texture = self.ctx.texture((width, height), f.components, dtype=f.dtype)
        image = GLImage(texture)
        weakref.finalize(image, self._deferred(texture.release, "images")).atexit = False
        return image

    def write(self, buf: GLBuffer, data: np.ndarray) -> None:
        """Copy `data` into the start of `buf`, through a CPU-side staging buffer copied on the
        GPU."""
        raw = np.ascontiguousarray(data).tobytes()
        with self.context:
            self.context.pending.settle(self.ctx)
            staging = self.ctx.buffer(raw, dynamic=True)
            self.ctx.copy_buffer(buf.buf, staging, size=len(raw), write_offset=buf.offset)
            staging.release()

    def read(self, buf: GLBuffer, count: int) -> np.ndarray:
        """The first `count` float32 values of `buf`, through a staging copy on the GPU, never
        from the buffer itself (see _gl_buffer)."""
        with self.context:
            self.ctx.memory_barrier()
            self.context.pending.clear()
            staging = self.ctx.buffer(reserve=max(4, count * 4), dynamic=True)
            try:
                self.ctx.copy_buffer(staging, buf.buf, size=count * 4, read_offset=buf.offset)
                return np.frombuffer(staging.read(size=count * 4), np.float32).copy()
            finally:
                staging.release()
