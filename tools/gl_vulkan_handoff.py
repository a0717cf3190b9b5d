"""Could TextureFFT's passes run on Vulkan, over memory GL shares, ordered by semaphores with no
CPU wait, and beat GL alone? This measures what such a frame adds to the passes: (1) the GL ->
Vulkan -> GL semaphore round trip (GL_EXT_semaphore_fd) per frame of a loop of K, a tiny GL dispatch
each frame, Vulkan's submission empty or one trivial dispatch, against the GL dispatch alone (with
the barrier GL needs between dependent passes); (2) the copies of the caller's rgba32f texture into
a GL buffer of Vulkan memory and back, which the Vulkan route needs since Vulkan cannot write a GL
texture (sharing goes from Vulkan memory into GL objects only): GPU time by GL timer queries, and
wall clock per pair. Where GL lacks the semaphore extensions (Mesa's llvmpipe) part 1 exercises its
Vulkan half alone; where GL cannot import Vulkan's memory part 2 uses a GL buffer, and says so.

    python tools/gl_vulkan_handoff.py [--json out.json] [--quick] [--family N]
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import sys
from ctypes import Structure, addressof, byref, c_int, c_int32, c_size_t, c_uint32, c_uint64
from ctypes import c_void_p

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from render_bench import loop_ms  # noqa: E402

from pyfftgl.backends import _vkinfo  # noqa: E402
from pyfftgl.backends import _vkmemory as vm  # noqa: E402
from pyfftgl.backends.gl_context import gl_proc  # noqa: E402
from pyfftgl.kernels import compile_spirv  # noqa: E402

# vulkan_core.h, GL_EXT_semaphore_fd
_OPAQUE_FD, _EXPORT_SEMAPHORE_CREATE_INFO, _GL_HANDLE_OPAQUE_FD = 1, 1000077000, 0x9586
_STAGE_COMPUTE, _STAGE_BOTTOM, _SHADER_STAGE_COMPUTE, _STORAGE_BUFFER = 0x800, 0x2000, 0x20, 7
_READ, _WRITE, _SIMULTANEOUS_USE, _EXTERNAL, _WHOLE = 0x20, 0x40, 0x4, 0xFFFFFFFE, 2**64 - 1
_MEM_FD, _SEM_FD = b"VK_KHR_external_memory_fd", b"VK_KHR_external_semaphore_fd"

# Vk<name>: (sType or None, the fields after sType and pNext) in vulkan_core.h's order. u64:
# VkDeviceSize and the non-dispatchable handles; p: pointers and the dispatchable handles.
_SPECS = {
    "SubmitInfo": (4, "u32 waitSemaphoreCount, p pWaitSemaphores, p pWaitDstStageMask, "
                      "u32 commandBufferCount, p pCommandBuffers, u32 signalSemaphoreCount, "
                      "p pSignalSemaphores"),
    "SemaphoreCreateInfo": (9, "u32 flags"),
    "SemaphoreGetFdInfoKHR": (1000079001, "u64 semaphore, u32 handleType"),
    "ShaderModuleCreateInfo": (16, "u32 flags, size codeSize, p pCode"),
    "DescriptorSetLayoutBinding": (None, "u32 binding, i32 descriptorType, u32 descriptorCount, "
                                         "u32 stageFlags, p pImmutableSamplers"),
    "DescriptorSetLayoutCreateInfo": (32, "u32 flags, u32 bindingCount, p pBindings"),
    "PipelineLayoutCreateInfo": (30, "u32 flags, u32 setLayoutCount, p pSetLayouts, "
                                     "u32 pushConstantRangeCount, p pPushConstantRanges"),
    "PipelineShaderStageCreateInfo": (18, "u32 flags, u32 stage, u64 module, p pName, "
                                          "p pSpecializationInfo"),
    "ComputePipelineCreateInfo": (29, "u32 flags, PipelineShaderStageCreateInfo stage, "
                                      "u64 layout, u64 basePipelineHandle, i32 basePipelineIndex"),
    "DescriptorPoolSize": (None, "i32 type, u32 descriptorCount"),
    "DescriptorPoolCreateInfo": (33, "u32 flags, u32 maxSets, u32 poolSizeCount, p pPoolSizes"),
    "DescriptorSetAllocateInfo": (34, "u64 descriptorPool, u32 descriptorSetCount, p pSetLayouts"),
    "DescriptorBufferInfo": (None, "u64 buffer, u64 offset, u64 range"),
    "WriteDescriptorSet": (35, "u64 dstSet, u32 dstBinding, u32 dstArrayElement, "
                               "u32 descriptorCount, i32 descriptorType, p pImageInfo, "
                               "p pBufferInfo, p pTexelBufferView"),
    "CommandPoolCreateInfo": (39, "u32 flags, u32 queueFamilyIndex"),
    "CommandBufferAllocateInfo": (40, "u64 commandPool, i32 level, u32 commandBufferCount"),
    "CommandBufferBeginInfo": (42, "u32 flags, p pInheritanceInfo"),
    "BufferMemoryBarrier": (44, "u32 srcAccessMask, u32 dstAccessMask, u32 srcQueueFamilyIndex, "
                                "u32 dstQueueFamilyIndex, u64 buffer, u64 offset, u64 size"),
}
_TYPES = {"i32": c_int32, "u32": c_uint32, "u64": c_uint64, "p": c_void_p, "size": c_size_t}
_STRUCTS = {}
for _name, (_stype, _spec) in _SPECS.items():
    _fields = [(n, _STRUCTS.get(t) or _TYPES[t]) for t, n in (f.split() for f in _spec.split(", "))]
    _head = [] if _stype is None else [("sType", c_int32), ("pNext", c_void_p)]
    _STRUCTS[_name] = type(_name, (Structure,), {"_fields_": _head + _fields, "stype": _stype})


def vk_struct(name, **fields):
    cls = _STRUCTS[name]
    return cls(**fields) if cls.stype is None else cls(sType=cls.stype, **fields)


N = 16384  # uints in part 1's shared buffer: 256 workgroups of 64
GL_FRAME = """#version 430
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer B { uint b[]; };
void main() { uint i = gl_GlobalInvocationID.x; b[i] = b[i] * 3u + 1u; }
"""
# Not GL's map, so that frames run out of order leave another result.
VK_FRAME = GL_FRAME.replace("#version 430", "#version 450").replace(
    "binding = 0", "set = 0, binding = 0").replace("3u + 1u", "5u + 3u")


def replay(x, frames, gl=True, vulkan=True):
    x = x.astype(np.uint32)
    for _ in range(frames):
        x = x * np.uint32(3) + np.uint32(1) if gl else x
        x = x * np.uint32(5) + np.uint32(3) if vulkan else x
    return x


class Vk:
    """A VkDevice of one queue on the GL context's GPU (matched by UUIDs, as _vkmemory's is) with
    exportable memory and semaphores, and a command buffer of one dispatch over a buffer."""

    def __init__(self, uuids, family=None):
        handle, self.proc, _ = _vkinfo.open_instance(_vkinfo.load_library())
        if handle is None:
            raise OSError("no Vulkan instance")
        self._fns, phys = {}, None
        for cand in _vkinfo.enumerate_devices(handle, self.proc):
            ids = vm._IDProperties(sType=vm._PHYSICAL_DEVICE_ID_PROPERTIES)
            props = vm._Properties2(sType=vm._PHYSICAL_DEVICE_PROPERTIES_2, pNext=addressof(ids))
            self.call("vkGetPhysicalDeviceProperties2", "v pp", cand, byref(props))
            if bytes(ids.driverUUID) == uuids[0] and bytes(ids.deviceUUID) in uuids[1]:
                phys, self.name = cand, props.properties.deviceName.decode()
                break
        if phys is None:
            raise OSError("no Vulkan device with the GL context's device and driver UUIDs")
        self.family = _vkinfo._compute_family(self.proc, phys) if family is None else family
        count = c_uint32(0)
        self.call("vkEnumerateDeviceExtensionProperties", "r pppp", phys, None, byref(count), None)
        exts = (_vkinfo._ExtensionProperties * count.value)()
        self.call("vkEnumerateDeviceExtensionProperties", "r pppp", phys, None, byref(count), exts)
        self.fd_semaphores = _SEM_FD in {e.extensionName for e in exts}
        result, self.device = _vkinfo.create_device(
            self.proc, phys, self.family, [_MEM_FD, _SEM_FD] if self.fd_semaphores else [_MEM_FD])
        if result != 0:
            raise OSError(f"vkCreateDevice: VkResult {result}")
        self.memory, self.queue = vm._MemoryProperties(), c_void_p()
        self.call("vkGetPhysicalDeviceMemoryProperties", "v pp", phys, byref(self.memory))
        self.call("vkGetDeviceQueue", "v puup", self.device, self.family, 0, byref(self.queue))

    def fn(self, name, sig):
        """Entry point `name` of signature "r|v types": it returns a VkResult (r) or nothing (v);
        p: pointer or dispatchable handle, u: uint32, i: int32, U: uint64."""
        if name not in self._fns:
            ret, types = sig.split()
            c = {"p": c_void_p, "u": c_uint32, "U": c_uint64, "i": c_int32}
            self._fns[name] = self.proc(name.encode(), c_int32 if ret == "r" else None,
                                        *(c[t] for t in types))
        return self._fns[name]

    def call(self, name, sig, *args):
        result = self.fn(name, sig)(*args)
        if result:  # None from a void function
            raise OSError(f"{name}: VkResult {result}")

    def create(self, name, struct, **fields) -> int:
        """The handle that vkCreate* (vkAllocateMemory) makes of a Vk<struct> of `fields`."""
        out = c_uint64()
        info = vk_struct(struct, **fields) if isinstance(struct, str) else struct
        self.call(name, "r pppp", self.device, byref(info), None, byref(out))
        return out.value

    def submit(self, info):
        self.call("vkQueueSubmit", "r pupU", self.queue, 1, byref(info), 0)

    def submit_info(self, wait=(), signal=(), command_buffer=None):
        """A VkSubmitInfo (its arrays kept with it) waiting on `wait` at the compute stage."""
        w, s, cbs = (c_uint64 * 2)(*wait), (c_uint64 * 2)(*signal), (c_void_p * 1)(command_buffer)
        stages = (c_uint32 * 2)(*[_STAGE_COMPUTE] * len(wait))
        info = vk_struct("SubmitInfo", waitSemaphoreCount=len(wait), pWaitSemaphores=addressof(w),
                         pWaitDstStageMask=addressof(stages), pCommandBuffers=addressof(cbs),
                         commandBufferCount=int(command_buffer is not None),
                         signalSemaphoreCount=len(signal), pSignalSemaphores=addressof(s))
        info.keep = (w, s, stages, cbs)
        return info

    def semaphore(self) -> tuple[int, int]:
        """(VkSemaphore, its opaque fd, or -1 where the device cannot export one)."""
        export = vm._HandleTypesInfo(sType=_EXPORT_SEMAPHORE_CREATE_INFO, handleTypes=_OPAQUE_FD)
        sem = self.create("vkCreateSemaphore", "SemaphoreCreateInfo",
                          pNext=addressof(export) if self.fd_semaphores else None)
        fd = c_int(-1)
        if self.fd_semaphores:
            get = vk_struct("SemaphoreGetFdInfoKHR", semaphore=sem, handleType=_OPAQUE_FD)
            self.call("vkGetSemaphoreFdKHR", "r ppp", self.device, byref(get), byref(fd))
        return sem, fd.value

    def buffer(self, nbytes):
        """(VkBuffer, VkDeviceMemory, allocation size, opaque fd) of exportable memory of the
        type _vkmemory takes (device-local, not host-visible first)."""
        ext = vm._HandleTypesInfo(sType=vm._EXTERNAL_MEMORY_BUFFER_CREATE_INFO,
                                  handleTypes=_OPAQUE_FD)
        buf = self.create("vkCreateBuffer", vm._BufferCreateInfo(
            sType=vm._BUFFER_CREATE_INFO, size=nbytes, usage=vm._USAGE, pNext=addressof(ext)))
        req = vm._MemoryRequirements()
        self.call("vkGetBufferMemoryRequirements", "v pUp", self.device, buf, byref(req))
        flags = [self.memory.memoryTypes[i].propertyFlags if req.memoryTypeBits >> i & 1 else 0
                 for i in range(self.memory.memoryTypeCount)]
        self.type = min((i for i, f in enumerate(flags) if f & vm._MEMORY_DEVICE_LOCAL),
                        key=lambda i: bool(flags[i] & vm._MEMORY_HOST_VISIBLE))
        export = vm._HandleTypesInfo(sType=vm._EXPORT_MEMORY_ALLOCATE_INFO, handleTypes=_OPAQUE_FD)
        mem = self.create("vkAllocateMemory", vm._AllocateInfo(
            sType=vm._MEMORY_ALLOCATE_INFO, allocationSize=req.size, memoryTypeIndex=self.type,
            pNext=addressof(export)))
        self.call("vkBindBufferMemory", "r pUUU", self.device, buf, mem, 0)
        fd = c_int(-1)
        get = vm._GetFdInfo(sType=vm._MEMORY_GET_FD_INFO, memory=mem, handleType=_OPAQUE_FD)
        self.call("vkGetMemoryFdKHR", "r ppp", self.device, byref(get), byref(fd))
        return buf, mem, req.size, fd.value

    def dispatch(self, spirv: bytes, buf: int, groups: int) -> int:
        """A command buffer of one dispatch of `spirv` over `buf` (binding 0) between the buffer's
        ownership transfers from and back to GL (VK_QUEUE_FAMILY_EXTERNAL). Recorded once with
        SIMULTANEOUS_USE: with no CPU wait, its last submission may be pending at the next."""
        dev, code = self.device, (c_uint32 * (len(spirv) // 4)).from_buffer_copy(spirv)
        module = self.create("vkCreateShaderModule", "ShaderModuleCreateInfo",
                             codeSize=len(spirv), pCode=addressof(code))
        binding = vk_struct("DescriptorSetLayoutBinding", binding=0, descriptorCount=1,
                            descriptorType=_STORAGE_BUFFER, stageFlags=_SHADER_STAGE_COMPUTE)
        set_layout = c_uint64(self.create("vkCreateDescriptorSetLayout",
                                          "DescriptorSetLayoutCreateInfo", bindingCount=1,
                                          pBindings=addressof(binding)))
        layout = self.create("vkCreatePipelineLayout", "PipelineLayoutCreateInfo",
                             setLayoutCount=1, pSetLayouts=addressof(set_layout))
        main, pipeline, dset, cb = ctypes.create_string_buffer(b"main"), c_uint64(), c_uint64(), \
            c_void_p()
        stage = vk_struct("PipelineShaderStageCreateInfo", stage=_SHADER_STAGE_COMPUTE,
                          module=module, pName=addressof(main))
        info = vk_struct("ComputePipelineCreateInfo", stage=stage, layout=layout,
                         basePipelineIndex=-1)
        self.call("vkCreateComputePipelines", "r pUuppp", dev, 0, 1, byref(info), None,
                  byref(pipeline))
        size = vk_struct("DescriptorPoolSize", type=_STORAGE_BUFFER, descriptorCount=1)
        pool = self.create("vkCreateDescriptorPool", "DescriptorPoolCreateInfo", maxSets=1,
                           poolSizeCount=1, pPoolSizes=addressof(size))
        self.call("vkAllocateDescriptorSets", "r ppp", dev, byref(vk_struct(
            "DescriptorSetAllocateInfo", descriptorPool=pool, descriptorSetCount=1,
            pSetLayouts=addressof(set_layout))), byref(dset))
        binfo = vk_struct("DescriptorBufferInfo", buffer=buf, offset=0, range=_WHOLE)
        write = vk_struct("WriteDescriptorSet", dstSet=dset.value, descriptorCount=1,
                          descriptorType=_STORAGE_BUFFER, pBufferInfo=addressof(binfo))
        self.call("vkUpdateDescriptorSets", "v pupup", dev, 1, byref(write), 0, None)
        cpool = self.create("vkCreateCommandPool", "CommandPoolCreateInfo",
                            queueFamilyIndex=self.family)
        self.call("vkAllocateCommandBuffers", "r ppp", dev, byref(vk_struct(
            "CommandBufferAllocateInfo", commandPool=cpool, commandBufferCount=1)), byref(cb))
        self.call("vkBeginCommandBuffer", "r pp", cb,
                  byref(vk_struct("CommandBufferBeginInfo", flags=_SIMULTANEOUS_USE)))

        def barrier(stages, access, families):  # the buffer's ownership, from or to GL
            b = vk_struct("BufferMemoryBarrier", srcAccessMask=access[0], dstAccessMask=access[1],
                          srcQueueFamilyIndex=families[0], dstQueueFamilyIndex=families[1],
                          buffer=buf, size=_WHOLE)
            self.call("vkCmdPipelineBarrier", "v puuuupupup", cb, *stages, 0, 0, None, 1,
                      byref(b), 0, None)
        barrier((_STAGE_COMPUTE, _STAGE_COMPUTE), (0, _READ | _WRITE), (_EXTERNAL, self.family))
        self.call("vkCmdBindPipeline", "v piU", cb, 1, pipeline)
        self.call("vkCmdBindDescriptorSets", "v piUuupup", cb, 1, layout, 0, 1, byref(dset), 0,
                  None)
        self.call("vkCmdDispatch", "v puuu", cb, groups, 1, 1)
        barrier((_STAGE_COMPUTE, _STAGE_BOTTOM), (_WRITE, 0), (self.family, _EXTERNAL))
        self.call("vkEndCommandBuffer", "r p", cb)
        return cb.value

    def self_test(self, mem, cb, sem_a, sem_b, frames=5) -> bool | None:
        """The Vulkan half alone, GL's part played by empty submissions on the same queue:
        whether the buffer ends as the frames in order leave it (None: memory not mappable)."""
        if not self.memory.memoryTypes[self.type].propertyFlags & vm._MEMORY_HOST_VISIBLE:
            return None
        ptr = c_void_p()
        self.call("vkMapMemory", "r pUUUup", self.device, mem, 0, N * 4, 0, byref(ptr))
        x = np.ctypeslib.as_array((c_uint32 * N).from_address(ptr.value))
        x[:] = np.arange(N, dtype=np.uint32)
        self.submit(self.submit_info(signal=[sem_a]))
        for _ in range(frames):
            self.submit(self.submit_info([sem_a], [sem_b], cb))
            self.submit(self.submit_info([sem_b], [sem_a]))
        self.submit(self.submit_info([sem_a]))
        self.call("vkQueueWaitIdle", "r p", self.queue)
        return bool(np.array_equal(x, replay(np.arange(N), frames, gl=False)))


def staged_read(ctx, buf, nbytes):
    """A buffer's bytes through a staging copy (one of imported memory cannot be mapped)."""
    ctx.memory_barrier()
    staging = ctx.buffer(reserve=nbytes)
    ctx.copy_buffer(staging, buf, size=nbytes)
    data = staging.read()
    staging.release()
    return data


def part1_skipped(vk, missing, fds, mem, cb, sem_a, sem_b):
    """Part 1 without the GL half (no semaphore import there): Vulkan's half checked alone."""
    why = (f"the GL driver lacks {' and '.join(missing)}" if missing else
           f"the Vulkan device lacks {_SEM_FD.decode()}")
    for f in fds:
        if f >= 0:
            os.close(f)
    ok = vk.self_test(mem, cb, sem_a, sem_b)
    print(f"part 1 skipped: {why}\nits Vulkan half alone (semaphores, submissions, dispatch "
          f"checked in mapped memory): " + {True: "ok", False: "WRONG", None: "not run"}[ok])
    return {"skipped": why, "vulkan": vk.name, "vulkan_half_ok": ok}


def import_into_gl(ctx, gl, fd_a, fd_b, size, fd):
    """(GL semaphores, the GL buffer's name, its moderngl buffer) of Vulkan's two semaphores and
    its memory; GL owns the fds from here."""
    u32, p = c_uint32, c_void_p
    sems, memobj, name = (u32 * 2)(), u32(0), u32(0)
    gl_proc("glGenSemaphoresEXT", None, c_int32, p)(2, sems)
    for sem, f in zip(sems, (fd_a, fd_b)):
        gl_proc("glImportSemaphoreFdEXT", None, u32, u32, c_int32)(sem, _GL_HANDLE_OPAQUE_FD, f)
    gl.create_memory(1, byref(memobj))
    gl.import_fd(memobj.value, size, _GL_HANDLE_OPAQUE_FD, fd)
    gl.create_buffers(1, byref(name))
    gl.buffer_storage(name.value, N * 4, memobj.value, 0)
    gl.check("importing the semaphores and the memory")
    return sems, name, ctx.external_buffer(name.value, N * 4)


def first_round_trip(gl, empty):
    """Run one frame; a semaphore signalled nowhere hangs both queues, and the process with
    them: give up after 10 s."""
    u32, p = c_uint32, c_void_p
    empty()
    gl.check("the first round trip")
    sync = gl_proc("glFenceSync", p, u32, u32)(0x9117, 0)  # GL_SYNC_GPU_COMMANDS_COMPLETE
    if gl_proc("glClientWaitSync", u32, p, u32, c_uint64)(sync, 1, 10**10) not in (0x911A, 0x911C):
        print("the first round trip did not complete in 10 s: giving up", flush=True)
        os._exit(3)
    gl_proc("glDeleteSync", None, p)(sync)


def frames_in_order(ctx, shared, empty, dispatch, finish):
    """Whether three empty and three dispatching frames left the buffer as replay says."""
    start = np.arange(N, dtype=np.uint32)
    staging = ctx.buffer(start.tobytes())
    ctx.copy_buffer(shared, staging)
    staging.release()
    for f in (empty,) * 3 + (dispatch,) * 3:
        f()
    finish()
    got = np.frombuffer(staged_read(ctx, shared, N * 4), np.uint32)
    return bool(np.array_equal(got, replay(replay(start, 3, vulkan=False), 3)))


def handoff(ctx, k, family):
    """Part 1: microseconds per frame of each loop (see the module's docstring)."""
    if "GL_EXT_memory_object_fd" not in ctx.extensions:
        raise OSError("the GL driver lacks GL_EXT_memory_object_fd (no UUIDs to match devices)")
    gl = vm._GL()
    vk = Vk(gl.uuids(), family)
    print(f"Vulkan: {vk.name}, queue family {vk.family}, {_SEM_FD.decode()}: {vk.fd_semaphores}")
    buf, mem, size, fd = vk.buffer(N * 4)
    (sem_a, fd_a), (sem_b, fd_b) = vk.semaphore(), vk.semaphore()
    cb = vk.dispatch(compile_spirv(VK_FRAME), buf, N // 64)
    missing = [e for e in ("GL_EXT_semaphore", "GL_EXT_semaphore_fd") if e not in ctx.extensions]
    if missing or not vk.fd_semaphores:
        return part1_skipped(vk, missing, (fd, fd_a, fd_b), mem, cb, sem_a, sem_b)

    u32, p = c_uint32, c_void_p
    sems, name, shared = import_into_gl(ctx, gl, fd_a, fd_b, size, fd)
    signal = gl_proc("glSignalSemaphoreEXT", None, u32, u32, p, u32, p, p)
    wait = gl_proc("glWaitSemaphoreEXT", None, u32, u32, p, u32, p, p)
    flush = gl_proc("glFlush", None)
    prog, bufs, submit = ctx.compute_shader(GL_FRAME), (u32 * 1)(name.value), vk.fn(
        "vkQueueSubmit", "r pupU")
    shared.bind_to_storage_buffer(0)

    def frame(info):
        ref = byref(info)

        def run():
            prog.run(N // 64)
            signal(sems[0], 1, bufs, 0, None, None)
            flush()  # Vulkan's wait below must find GL's signal submitted
            if submit(vk.queue, 1, ref, 0):
                raise OSError("vkQueueSubmit failed")  # before GL waits on what never comes
            wait(sems[1], 1, bufs, 0, None, None)
        return run
    empty = frame(vk.submit_info([sem_a], [sem_b]))
    dispatch = frame(vk.submit_info([sem_a], [sem_b], cb))

    def finish():
        ctx.finish()
        vk.call("vkQueueWaitIdle", "r p", vk.queue)
    first_round_trip(gl, empty)
    row = {"vulkan": vk.name, "family": vk.family}
    row["gl_dispatch_us"] = loop_ms(lambda: (prog.run(N // 64), ctx.memory_barrier()),
                                    ctx.finish, k) * 1e3
    row["gl_dispatch_flush_us"] = loop_ms(
        lambda: (prog.run(N // 64), ctx.memory_barrier(), flush()), ctx.finish, k) * 1e3
    row["handoff_us"] = loop_ms(empty, finish, k) * 1e3
    row["handoff_dispatch_us"] = loop_ms(dispatch, finish, k) * 1e3
    row["handoff_cost_us"] = row["handoff_us"] - row["gl_dispatch_us"]
    row["handoff_dispatch_cost_us"] = row["handoff_dispatch_us"] - row["gl_dispatch_us"]
    row["frames_in_order"] = frames_in_order(ctx, shared, empty, dispatch, finish)
    gl.check("the handoff loops")
    gl_proc("glDeleteSemaphoresEXT", None, c_int32, p)(2, sems)
    return row


COPY = """#version 430
layout(local_size_x = 16, local_size_y = 16) in;
layout(rgba32f, binding = 0) uniform {img} image2D img;
layout(std430, binding = 0) {buf} buffer B {{ vec4 b[]; }};
uniform ivec2 size;
void main() {{
    ivec2 p = ivec2(gl_GlobalInvocationID.xy);
    if (p.x < size.x && p.y < size.y) {{ {body}; }}
}}
"""


def gpu_us(ctx, copy, n=20, reps=5):
    """GPU microseconds per copy: n back to back with a barrier between, in one GL_TIME_ELAPSED
    query, best of `reps`."""
    q, best = ctx.query(time=True), float("inf")
    for _ in range(reps):
        with q:
            for _ in range(n):
                copy()
                ctx.memory_barrier()
        best = min(best, q.elapsed / n)
    return best / 1e3


def copies(ctx, sizes, k):
    """Part 2: the texture into a buffer of Vulkan memory (and one of GL's) and back."""
    try:
        memory, note = vm.VulkanMemory(ctx), None
    except OSError as e:
        memory, note = None, str(e)
        print(f"no Vulkan memory in GL ({note}): GL buffers only")
    to_buf = ctx.compute_shader(COPY.format(img="readonly", buf="writeonly",
                                            body="b[p.y * size.x + p.x] = imageLoad(img, p)"))
    to_tex = ctx.compute_shader(COPY.format(img="writeonly", buf="readonly",
                                            body="imageStore(img, p, b[p.y * size.x + p.x])"))
    rows = []
    for h, w in sizes:
        a = np.random.default_rng(0).standard_normal((h, w, 4)).astype(np.float32)
        src = ctx.texture((w, h), 4, a.tobytes(), dtype="f4")
        dst = ctx.texture((w, h), 4, dtype="f4")
        to_buf["size"].value = to_tex["size"].value = (w, h)
        groups = ((w + 15) // 16, (h + 15) // 16)
        kinds = []
        if memory is not None:
            try:
                kinds.append(("vulkan", *memory.buffer(a.nbytes)))
            except (OSError, MemoryError) as e:
                memory, note = None, str(e)
                print(f"no Vulkan memory in GL ({note}): GL buffers only")
        gl_buf = ctx.buffer(reserve=a.nbytes)
        kinds.append(("gl", gl_buf, gl_buf.release))

        def copy_in():
            src.bind_to_image(0, read=True, write=False)
            to_buf.run(*groups)

        def copy_out():
            dst.bind_to_image(0, read=False, write=True)
            to_tex.run(*groups)

        def pair():
            copy_in()
            ctx.memory_barrier()
            copy_out()
            ctx.memory_barrier()

        for kind, buf, release in kinds:
            buf.bind_to_storage_buffer(0)
            dst.write(bytes(a.nbytes))
            pair()
            exact = staged_read(ctx, buf, a.nbytes) == a.tobytes() == dst.read()
            row = {"h": h, "w": w, "buffer": kind, "bit_exact": exact,
                   "to_buffer_gpu_us": gpu_us(ctx, copy_in),
                   "to_texture_gpu_us": gpu_us(ctx, copy_out),
                   "pair_loop_us": loop_ms(pair, ctx.finish, k) * 1e3}
            for d in ("to_buffer", "to_texture"):  # bytes read and written
                row[f"{d}_GBps"] = 2 * a.nbytes / max(row[f"{d}_gpu_us"], 1e-3) / 1e3
            print(f"{w}x{h} {kind} buffer: texture -> buffer -> texture bit-exact: {exact}; GPU "
                  f"us per copy in {row['to_buffer_gpu_us']:.2f} ({row['to_buffer_GBps']:.0f} "
                  f"GB/s), out {row['to_texture_gpu_us']:.2f} ({row['to_texture_GBps']:.0f} GB/s)"
                  f"; loop us per pair {row['pair_loop_us']:.2f}")
            rows.append(row)
            release()
        src.release()
        dst.release()
    return rows, note


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", default=None)
    ap.add_argument("--quick", action="store_true", help="small sizes, few calls (llvmpipe)")
    ap.add_argument("--family", type=int, default=None,
                    help="Vulkan queue family (default: the one pyfftgl's Vulkan backend takes)")
    args = ap.parse_args(argv)
    import moderngl
    ctx = moderngl.create_standalone_context(require=430, backend="egl")
    k = 3 if args.quick else 200
    out = {"gl": ctx.info["GL_RENDERER"], "k": k}
    print(f"GL: {out['gl']}; K = {k}\npart 1: GL -> Vulkan -> GL round trip, wall clock us/frame")
    try:
        out["handoff"] = handoff(ctx, k, args.family)
        if "skipped" not in out["handoff"]:
            print("\n".join(f"  {key}: {v:.2f}" if isinstance(v, float) else f"  {key}: {v}"
                            for key, v in out["handoff"].items()))
    except OSError as e:
        print(f"part 1 not run: {e}")
        out["handoff"] = {"skipped": str(e)}
    print("part 2: rgba32f texture -> buffer -> texture")
    sizes = [(64, 96), (128, 128)] if args.quick else [(720, 1280), (1024, 1024), (1080, 1920),
                                                       (2048, 2048)]
    out["copies"], out["vulkan_memory_note"] = copies(ctx, sizes, k)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1)
        print("wrote", args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
