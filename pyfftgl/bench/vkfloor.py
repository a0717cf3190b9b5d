"""The submission floor of a Vulkan driver, measured on its own with plain ctypes.

An empty command buffer is submitted with a fence and waited for, many times, on a VkDevice of
our own (not Kompute's), so the time is the driver's submit + fence round trip and nothing of kp
or pyfftgl. The benchmark reports pyfftgl's host time per call next to this floor. Waiting is
timed two ways: vkWaitForFences (what Kompute does) and a busy poll of vkGetFenceStatus.
"""
from __future__ import annotations

import ctypes
import statistics
import time
from ctypes import POINTER, Structure, byref, c_int32, c_uint32, c_uint64, c_void_p

from ..backends import vkinfo


class _QueueFamily(Structure):
    _fields_ = [("queueFlags", c_uint32), ("queueCount", c_uint32),
                ("timestampValidBits", c_uint32), ("minImageTransferGranularity", c_uint32 * 3)]


class _PoolCreateInfo(Structure):
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("flags", c_uint32),
                ("queueFamilyIndex", c_uint32)]


class _AllocateInfo(Structure):
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("commandPool", c_uint64),
                ("level", c_int32), ("commandBufferCount", c_uint32)]


class _BeginInfo(Structure):
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("flags", c_uint32),
                ("pInheritanceInfo", c_void_p)]


class _SubmitInfo(Structure):
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("waitSemaphoreCount", c_uint32),
                ("pWaitSemaphores", c_void_p), ("pWaitDstStageMask", c_void_p),
                ("commandBufferCount", c_uint32), ("pCommandBuffers", POINTER(c_void_p)),
                ("signalSemaphoreCount", c_uint32), ("pSignalSemaphores", c_void_p)]


class _FenceCreateInfo(Structure):
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("flags", c_uint32)]


# VkStructureType values from vulkan_core.h
_SUBMIT_INFO = 4
_FENCE_CREATE_INFO, _COMMAND_POOL_CREATE_INFO = 8, 39
_COMMAND_BUFFER_ALLOCATE_INFO, _COMMAND_BUFFER_BEGIN_INFO = 40, 42
_QUEUE_COMPUTE_BIT = 2


def _first_compute_family(proc, phys) -> int:
    """The index of the device's first queue family that computes."""
    count = c_uint32(0)
    qprops = proc(b"vkGetPhysicalDeviceQueueFamilyProperties", None, c_void_p,
                  POINTER(c_uint32), POINTER(_QueueFamily))
    qprops(phys, byref(count), None)
    fams = (_QueueFamily * count.value)()
    qprops(phys, byref(count), fams)
    return next(i for i, f in enumerate(fams) if f.queueFlags & _QUEUE_COMPUTE_BIT)


def _empty_command_buffer(proc, device, family: int) -> tuple:
    """(queue, command pool, an empty recorded command buffer) on queue 0 of `family`."""
    queue = c_void_p()
    proc(b"vkGetDeviceQueue", None, c_void_p, c_uint32, c_uint32, POINTER(c_void_p))(
        device, family, 0, byref(queue))
    pool = c_uint64()
    proc(b"vkCreateCommandPool", c_int32, c_void_p, POINTER(_PoolCreateInfo), c_void_p,
          POINTER(c_uint64))(device, byref(_PoolCreateInfo(
              sType=_COMMAND_POOL_CREATE_INFO, queueFamilyIndex=family)), None, byref(pool))
    cmd = c_void_p()
    proc(b"vkAllocateCommandBuffers", c_int32, c_void_p, POINTER(_AllocateInfo),
          POINTER(c_void_p))(device, byref(_AllocateInfo(
              sType=_COMMAND_BUFFER_ALLOCATE_INFO, commandPool=pool.value,
              commandBufferCount=1)), byref(cmd))
    proc(b"vkBeginCommandBuffer", c_int32, c_void_p, POINTER(_BeginInfo))(
        cmd, byref(_BeginInfo(sType=_COMMAND_BUFFER_BEGIN_INFO)))
    proc(b"vkEndCommandBuffer", c_int32, c_void_p)(cmd)
    return queue, pool, cmd


def _submitter(proc, device, queue, cmd, fence):
    """once(mode): microseconds of one submission of `cmd` and its wait, by `mode`."""
    submit = proc(b"vkQueueSubmit", c_int32, c_void_p, c_uint32, POINTER(_SubmitInfo),
                   c_uint64)
    wait = proc(b"vkWaitForFences", c_int32, c_void_p, c_uint32, POINTER(c_uint64),
                 c_uint32, c_uint64)
    status = proc(b"vkGetFenceStatus", c_int32, c_void_p, c_uint64)
    reset = proc(b"vkResetFences", c_int32, c_void_p, c_uint32, POINTER(c_uint64))
    info = _SubmitInfo(sType=_SUBMIT_INFO, commandBufferCount=1,
                       pCommandBuffers=ctypes.pointer(cmd))

    create_fence = proc(b"vkCreateFence", c_int32, c_void_p, POINTER(_FenceCreateInfo),
                         c_void_p, POINTER(c_uint64))
    destroy_fence = proc(b"vkDestroyFence", None, c_void_p, c_uint64, c_void_p)

    def once(mode: str) -> float:
        t0 = time.perf_counter()
        f = fence
        if mode == "fresh":  # a new fence per submission, as Kompute's evalAsync makes
            f = c_uint64()
            create_fence(device, byref(_FenceCreateInfo(sType=_FENCE_CREATE_INFO)), None,
                         byref(f))
        submit(queue, 1, byref(info), f.value)
        if mode == "poll":
            while status(device, f.value) != 0:
                pass
        else:
            wait(device, 1, byref(f), 1, 10**10)
        if mode == "fresh":
            destroy_fence(device, f.value, None)
        dt = time.perf_counter() - t0
        if mode != "fresh":
            reset(device, 1, byref(fence))
        return dt * 1e6
    return once


def fence_floor_us(device_index: int = 0, reps: int = 200) -> dict:
    """Median microseconds of one empty submission + wait: {"wait": reused fence and
    vkWaitForFences, "poll": busy-polling vkGetFenceStatus, "fresh": a fence created and destroyed
    around each submission}."""
    lib = vkinfo.load_library()
    with vkinfo.instance(lib) as (instance, proc):
        handles = vkinfo.enumerate_devices(instance, proc)
        phys = handles[device_index]
        family = _first_compute_family(proc, phys)
        result, device = vkinfo.create_device(proc, phys, family)
        if result != 0:
            raise OSError("vkCreateDevice failed")

        # Device-level calls resolve through the instance too (the loader's trampolines).
        destroy_device = proc(b"vkDestroyDevice", None, c_void_p, c_void_p)
        try:
            queue, pool, cmd = _empty_command_buffer(proc, device, family)
            fence = c_uint64()
            proc(b"vkCreateFence", c_int32, c_void_p, POINTER(_FenceCreateInfo), c_void_p,
                  POINTER(c_uint64))(device, byref(_FenceCreateInfo(sType=_FENCE_CREATE_INFO)),
                                     None, byref(fence))
            once = _submitter(proc, device, queue, cmd, fence)
            out = {}
            for mode in ("wait", "poll", "fresh"):
                for _ in range(10):
                    once(mode)
                out[mode] = statistics.median(once(mode) for _ in range(reps))
            proc(b"vkDestroyFence", None, c_void_p, c_uint64, c_void_p)(device, fence.value, None)
            proc(b"vkDestroyCommandPool", None, c_void_p, c_uint64, c_void_p)(
                device, pool.value, None)
            return out
        finally:
            destroy_device(device, None)
