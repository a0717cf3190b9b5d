"""GL buffers whose memory Vulkan allocates (VK_KHR_external_memory_fd, GL_EXT_memory_object_fd).

NVIDIA's GL driver places large buffers where compute kernels reach them at about half the
speed that the same kernels get from Vulkan memory, and GL's own usage hints and glBufferStorage
do not change the placement (the measurements are in docs/performance-log.md and
docs/drivers.md). So the GL backend takes the memory of its large buffers from a small
Vulkan device of its own on the same GPU (matched by device and driver UUID), where the drivers
can share it; elsewhere (no Vulkan, no extension, a driver that refuses the import, as Mesa 22's
llvmpipe does with lavapipe's memory) it keeps GL's own buffers.

Plain ctypes, like _vkinfo: nothing here touches Kompute.
"""
from __future__ import annotations

import ctypes
import os
import threading
from ctypes import (POINTER, Structure, byref, c_int, c_int32, c_int64,
                    c_uint8, c_uint32, c_uint64, c_void_p)

from . import _vkinfo

# VkStructureType and flag values from vulkan_core.h
_BUFFER_CREATE_INFO, _MEMORY_ALLOCATE_INFO = 12, 5
_EXTERNAL_MEMORY_BUFFER_CREATE_INFO, _EXPORT_MEMORY_ALLOCATE_INFO = 1000072000, 1000072002
_MEMORY_GET_FD_INFO = 1000074002
_PHYSICAL_DEVICE_PROPERTIES_2, _PHYSICAL_DEVICE_ID_PROPERTIES = 1000059001, 1000071004
_HANDLE_OPAQUE_FD = 1
_MEMORY_DEVICE_LOCAL, _MEMORY_HOST_VISIBLE = 1, 2
_USAGE = 0x1 | 0x2 | 0x20  # transfer src, transfer dst, storage buffer
_EXTENSION = b"VK_KHR_external_memory_fd"

# GL enums from GL_EXT_memory_object(_fd)
_GL_NUM_DEVICE_UUIDS, _GL_DEVICE_UUID, _GL_DRIVER_UUID = 0x9596, 0x9597, 0x9598
_GL_HANDLE_OPAQUE_FD = 0x9586


class _BufferCreateInfo(Structure):
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("flags", c_uint32), ("size", c_uint64),
                ("usage", c_uint32), ("sharingMode", c_int32),
                ("queueFamilyIndexCount", c_uint32), ("pQueueFamilyIndices", c_void_p)]


class _HandleTypesInfo(Structure):  # VkExternalMemoryBufferCreateInfo, VkExportMemoryAllocateInfo
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("handleTypes", c_uint32)]


class _MemoryRequirements(Structure):
    _fields_ = [("size", c_uint64), ("alignment", c_uint64), ("memoryTypeBits", c_uint32)]


class _MemoryType(Structure):
    _fields_ = [("propertyFlags", c_uint32), ("heapIndex", c_uint32)]


class _MemoryHeap(Structure):
    _fields_ = [("size", c_uint64), ("flags", c_uint32)]


class _MemoryProperties(Structure):
    _fields_ = [("memoryTypeCount", c_uint32), ("memoryTypes", _MemoryType * 32),
                ("memoryHeapCount", c_uint32), ("memoryHeaps", _MemoryHeap * 16)]


class _AllocateInfo(Structure):
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("allocationSize", c_uint64),
                ("memoryTypeIndex", c_uint32)]


class _GetFdInfo(Structure):
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("memory", c_uint64),
                ("handleType", c_uint32)]


class _IDProperties(Structure):
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("deviceUUID", c_uint8 * 16),
                ("driverUUID", c_uint8 * 16), ("deviceLUID", c_uint8 * 8),
                ("deviceNodeMask", c_uint32), ("deviceLUIDValid", c_uint32)]


class _Properties2(Structure):
    _fields_ = [("sType", c_int32), ("pNext", c_void_p),
                ("properties", _vkinfo.VkPhysicalDeviceProperties)]


class _GL:
    """The GL entry points of EXT_memory_object(_fd) and the few core ones used with them, for
    the context current on this thread (EGL's, else GLX's)."""

    def __init__(self):
        from .gl_context import gl_proc as fn
        self.get_error = fn("glGetError", c_uint32)
        self.get_integer = fn("glGetIntegerv", None, c_uint32, POINTER(c_int32))
        self.get_uuid = fn("glGetUnsignedBytevEXT", None, c_uint32, POINTER(c_uint8))
        self.get_uuid_i = fn("glGetUnsignedBytei_vEXT", None, c_uint32, c_uint32, POINTER(c_uint8))
        self.create_memory = fn("glCreateMemoryObjectsEXT", None, c_int32, POINTER(c_uint32))
        self.delete_memory = fn("glDeleteMemoryObjectsEXT", None, c_int32, POINTER(c_uint32))
        self.import_fd = fn("glImportMemoryFdEXT", None, c_uint32, c_uint64, c_uint32, c_int32)
        self.create_buffers = fn("glCreateBuffers", None, c_int32, POINTER(c_uint32))
        self.delete_buffers = fn("glDeleteBuffers", None, c_int32, POINTER(c_uint32))
        self.buffer_storage = fn("glNamedBufferStorageMemEXT", None, c_uint32, c_int64, c_uint32,
                                 c_uint64)

    def uuids(self) -> tuple[bytes, list[bytes]]:
        """(driver UUID, device UUIDs) of the current context."""
        drv = (c_uint8 * 16)()
        self.get_uuid(_GL_DRIVER_UUID, drv)
        count = c_int32(0)
        self.get_integer(_GL_NUM_DEVICE_UUIDS, byref(count))
        devices = []
        for i in range(count.value):
            dev = (c_uint8 * 16)()
            self.get_uuid_i(_GL_DEVICE_UUID, i, dev)
            devices.append(bytes(dev))
        return bytes(drv), devices

    def drain(self) -> int:
        """The first pending GL error (0 if none), clearing them all."""
        first = err = self.get_error()
        while err:
            err = self.get_error()
        return first

    def check(self, what: str) -> None:
        err = self.drain()  # leave no error behind for the caller's GL code
        if err:
            raise OSError(f"{what}: GL error 0x{err:x}")


class _VulkanAllocator:
    """A VkDevice on the physical device with the given UUIDs, allocating exportable device-local
    memory. One per GPU (allocator()), kept for the life of the process: GL holds the memory it
    hands out, and its device (on the process's query instance) is never destroyed under it."""

    def __init__(self, driver_uuid: bytes, device_uuids: list[bytes]):
        handle, proc = _vkinfo.query_instance(_vkinfo.load_library())
        if handle is None:
            raise OSError("no Vulkan instance")
        self.proc = proc
        props2 = proc(b"vkGetPhysicalDeviceProperties2", None, c_void_p, POINTER(_Properties2))
        phys = None
        for cand in _vkinfo.enumerate_devices(handle, proc):
            ids = _IDProperties(sType=_PHYSICAL_DEVICE_ID_PROPERTIES)
            p = _Properties2(sType=_PHYSICAL_DEVICE_PROPERTIES_2,
                             pNext=ctypes.cast(ctypes.pointer(ids), c_void_p))
            props2(cand, byref(p))
            if bytes(ids.driverUUID) == driver_uuid and bytes(ids.deviceUUID) in device_uuids:
                phys = cand
                break
        if phys is None:
            raise OSError("no Vulkan device with the GL context's device and driver UUIDs")
        result, self.device = _vkinfo.create_device(proc, phys, 0, [_EXTENSION])
        if result != 0:
            raise OSError(f"vkCreateDevice with {_EXTENSION.decode()} failed")
        self.memory = _MemoryProperties()
        proc(b"vkGetPhysicalDeviceMemoryProperties", None, c_void_p, POINTER(_MemoryProperties))(
            phys, byref(self.memory))
        self._create_buffer = proc(b"vkCreateBuffer", c_int32, c_void_p, POINTER(_BufferCreateInfo),
                                   c_void_p, POINTER(c_uint64))
        self._destroy_buffer = proc(b"vkDestroyBuffer", None, c_void_p, c_uint64, c_void_p)
        self._requirements = proc(b"vkGetBufferMemoryRequirements", None, c_void_p, c_uint64,
                                  POINTER(_MemoryRequirements))
        self._allocate = proc(b"vkAllocateMemory", c_int32, c_void_p, POINTER(_AllocateInfo),
                              c_void_p, POINTER(c_uint64))
        self._free = proc(b"vkFreeMemory", None, c_void_p, c_uint64, c_void_p)
        self._get_fd = proc(b"vkGetMemoryFdKHR", c_int32, c_void_p, POINTER(_GetFdInfo),
                            POINTER(c_int))

    def allocate(self, nbytes: int) -> tuple[int, int, int]:
        """(fd, allocation size, VkDeviceMemory) of new device-local memory for a storage buffer
        of nbytes, exported as an opaque fd (whose owner is the caller)."""
        external = _HandleTypesInfo(sType=_EXTERNAL_MEMORY_BUFFER_CREATE_INFO,
                                    handleTypes=_HANDLE_OPAQUE_FD)
        info = _BufferCreateInfo(sType=_BUFFER_CREATE_INFO, size=nbytes, usage=_USAGE,
                                 pNext=ctypes.cast(ctypes.pointer(external), c_void_p))
        buf = c_uint64()
        result = self._create_buffer(self.device, byref(info), None, byref(buf))
        if result != 0:  # the sharing works (checked when made): this size does not fit
            raise MemoryError(f"vkCreateBuffer: VkResult {result}")
        req = _MemoryRequirements()
        self._requirements(self.device, buf.value, byref(req))
        self._destroy_buffer(self.device, buf.value, None)  # it only told the requirements
        # Device-local, and of those the types the CPU cannot map first (on NVIDIA the
        # host-visible device-local type is the resizable-BAR window).
        types = [i for i in range(self.memory.memoryTypeCount) if req.memoryTypeBits >> i & 1
                 and self.memory.memoryTypes[i].propertyFlags & _MEMORY_DEVICE_LOCAL]
        if not types:
            raise OSError("no device-local memory type for a storage buffer")
        types.sort(key=lambda i: bool(self.memory.memoryTypes[i].propertyFlags
                                      & _MEMORY_HOST_VISIBLE))
        export = _HandleTypesInfo(sType=_EXPORT_MEMORY_ALLOCATE_INFO, handleTypes=_HANDLE_OPAQUE_FD)
        alloc = _AllocateInfo(sType=_MEMORY_ALLOCATE_INFO, allocationSize=req.size,
                              memoryTypeIndex=types[0],
                              pNext=ctypes.cast(ctypes.pointer(export), c_void_p))
        mem = c_uint64()
        result = self._allocate(self.device, byref(alloc), None, byref(mem))
        if result != 0:
            raise MemoryError(f"vkAllocateMemory of {req.size} bytes: VkResult {result}")
        fd = c_int(-1)
        get = _GetFdInfo(sType=_MEMORY_GET_FD_INFO, memory=mem.value, handleType=_HANDLE_OPAQUE_FD)
        if self._get_fd(self.device, byref(get), byref(fd)) != 0:
            self._free(self.device, mem.value, None)
            raise OSError("vkGetMemoryFdKHR failed")
        return fd.value, req.size, mem.value

    def free(self, memory: int) -> None:
        self._free(self.device, memory, None)


_allocators: dict[tuple, _VulkanAllocator] = {}
_allocators_lock = threading.Lock()


def allocator(driver_uuid: bytes, device_uuids: list[bytes]) -> _VulkanAllocator:
    """The process's allocator for the GPU with these UUIDs, made on first use."""
    key = (driver_uuid, tuple(device_uuids))
    with _allocators_lock:
        if key not in _allocators:
            _allocators[key] = _VulkanAllocator(driver_uuid, device_uuids)
        return _allocators[key]


class VulkanMemory:
    """Imports Vulkan-allocated memory into GL buffers of the context current when it is made.
    Raises OSError when this context and driver cannot (see the module's docstring)."""

    def __init__(self, ctx):
        if "GL_EXT_memory_object_fd" not in ctx.extensions:
            raise OSError("the GL driver lacks GL_EXT_memory_object_fd")
        self.ctx = ctx
        self.gl = _GL()
        self.gl.drain()  # errors of earlier GL work are not ours
        driver, devices = self.gl.uuids()
        self.gl.check("reading the context's UUIDs")
        self.vk = allocator(driver, devices)
        self.live = 0  # allocations not yet released

    def buffer(self, nbytes: int):
        """(ModernGL buffer, release) of nbytes of Vulkan memory; release() frees the GL buffer,
        the GL memory object and the Vulkan memory, in that order."""
        gl = self.gl
        fd, size, vkmem = self.vk.allocate(nbytes)
        mem, name = c_uint32(0), c_uint32(0)

        def release():
            if name.value:
                gl.delete_buffers(1, byref(name))
            if mem.value:
                gl.delete_memory(1, byref(mem))
            self.vk.free(vkmem)
            self.live -= 1
        self.live += 1
        try:
            gl.create_memory(1, byref(mem))
            gl.check("glCreateMemoryObjectsEXT")
            gl.import_fd(mem.value, size, _GL_HANDLE_OPAQUE_FD, fd)
            fd = -1  # GL owns it now
            gl.check("glImportMemoryFdEXT")
            gl.create_buffers(1, byref(name))
            gl.buffer_storage(name.value, nbytes, mem.value, 0)
            gl.check("glNamedBufferStorageMemEXT")
            return self.ctx.external_buffer(name.value, nbytes), release
        except Exception:
            if fd >= 0:
                os.close(fd)
            release()
            raise
