"""What the driver compiled a kernel to (registers, spills, instruction counts, ...), read through
VK_KHR_pipeline_executable_properties with plain ctypes.

Which statistics exist and what they are called is the driver's choice. The pipeline is built on a
VkDevice of our own that enables this extension and its feature and nothing else: Kompute's device
enables no optional features either, and one such as robustBufferAccess would change the code.

    python -m pyfftgl.bench.vkstats kernel.spv ...   # SPIR-V files
    python -m pyfftgl.bench.vkstats 1024 4096        # each pass planned for these FFT sizes
"""
from __future__ import annotations

import argparse
import contextlib
import ctypes
from ctypes import POINTER, Structure, Union, byref, c_char, c_char_p, c_double, c_int32
from ctypes import c_int64, c_size_t, c_uint32, c_uint64, c_void_p
from pathlib import Path

from ..backends import vkinfo

EXTENSION = b"VK_KHR_pipeline_executable_properties"
_HEAD = [("sType", c_int32), ("pNext", c_void_p)]
_TEXT = c_char * 256  # VK_MAX_DESCRIPTION_SIZE, also VK_MAX_EXTENSION_NAME_SIZE

# VkStructureType and flag values, checked against vulkan_core.h 1.3.239.
_SHADER_MODULE_CREATE_INFO = 16
_STAGE_CREATE_INFO, _COMPUTE_PIPELINE_CREATE_INFO, _PIPELINE_LAYOUT_CREATE_INFO = 18, 29, 30
_DESCRIPTOR_SET_LAYOUT_CREATE_INFO, _PHYSICAL_DEVICE_FEATURES_2 = 32, 1000059000
_EXECUTABLE_FEATURES, _PIPELINE_INFO, _EXECUTABLE_PROPERTIES = 1000269000, 1000269001, 1000269002
_EXECUTABLE_INFO, _EXECUTABLE_STATISTIC = 1000269003, 1000269004
_SAMPLER, _STORAGE_IMAGE, _STORAGE_BUFFER = 1, 3, 7  # VkDescriptorType: combined image sampler, ...
_COMPUTE_STAGE, _CAPTURE_STATISTICS = 0x20, 0x40


def _struct(name: str, *fields, head: bool = True, base=Structure) -> type:
    """A ctypes type named after the Vulkan struct; `head`: it begins with sType and pNext."""
    return type(name, (base,), {"_fields_": (_HEAD if head else []) + list(fields)})


# Layouts as in vulkan_core.h; sizes and every offset were compared with C's by a one-off program.
_ExtensionProperties = _struct("VkExtensionProperties", ("extensionName", _TEXT),
                               ("specVersion", c_uint32), head=False)
_ExecutableFeatures = _struct("VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR",
                              ("pipelineExecutableInfo", c_uint32))
# 55 VkBool32, all off
_Features2 = _struct("VkPhysicalDeviceFeatures2", ("features", c_uint32 * 55))
_ShaderModuleInfo = _struct("VkShaderModuleCreateInfo", ("flags", c_uint32), ("codeSize", c_size_t),
                            ("pCode", c_void_p))
_Binding = _struct("VkDescriptorSetLayoutBinding", ("binding", c_uint32),
                   ("descriptorType", c_int32), ("descriptorCount", c_uint32),
                   ("stageFlags", c_uint32), ("pImmutableSamplers", c_void_p), head=False)
_SetLayoutInfo = _struct("VkDescriptorSetLayoutCreateInfo", ("flags", c_uint32),
                         ("bindingCount", c_uint32), ("pBindings", POINTER(_Binding)))
_PushRange = _struct("VkPushConstantRange", ("stageFlags", c_uint32), ("offset", c_uint32),
                     ("size", c_uint32), head=False)
_PipelineLayoutInfo = _struct("VkPipelineLayoutCreateInfo", ("flags", c_uint32),
                              ("setLayoutCount", c_uint32), ("pSetLayouts", POINTER(c_uint64)),
                              ("pushConstantRangeCount", c_uint32),
                              ("pPushConstantRanges", POINTER(_PushRange)))
_StageInfo = _struct("VkPipelineShaderStageCreateInfo", ("flags", c_uint32), ("stage", c_uint32),
                     ("module", c_uint64), ("pName", c_char_p), ("pSpecializationInfo", c_void_p))
_ComputePipelineInfo = _struct("VkComputePipelineCreateInfo", ("flags", c_uint32),
                               ("stage", _StageInfo), ("layout", c_uint64),
                               ("basePipelineHandle", c_uint64), ("basePipelineIndex", c_int32))
_PipelineInfo = _struct("VkPipelineInfoKHR", ("pipeline", c_uint64))
_ExecutableProperties = _struct("VkPipelineExecutablePropertiesKHR", ("stages", c_uint32),
                                ("name", _TEXT), ("description", _TEXT), ("subgroupSize", c_uint32))
_ExecutableInfo = _struct("VkPipelineExecutableInfoKHR", ("pipeline", c_uint64),
                          ("executableIndex", c_uint32))
# The union's members in the order of VkPipelineExecutableStatisticFormatKHR (BOOL32, INT64, ...).
_Value = _struct("VkPipelineExecutableStatisticValueKHR", ("b32", c_uint32), ("i64", c_int64),
                 ("u64", c_uint64), ("f64", c_double), head=False, base=Union)
_Statistic = _struct("VkPipelineExecutableStatisticKHR", ("name", _TEXT), ("description", _TEXT),
                     ("format", c_int32), ("value", _Value))


def _check(result: int, what: str) -> None:
    if result != 0:  # VK_INCOMPLETE (5) included: the count was asked for just before
        raise RuntimeError(f"{what} failed (VkResult {result})")


def _listed(fn, what: str, device, query, cls, stype: int) -> list:
    """The two-call idiom: fn(device, query, &count, NULL) for the count, then the filled array."""
    n = c_uint32(0)
    _check(fn(device, query, byref(n), None), what)
    array = (cls * n.value)(*[cls(sType=stype) for _ in range(n.value)])
    _check(fn(device, query, byref(n), array), what)
    return array[:n.value]


def capable_devices(instance, proc) -> list[tuple[int, c_void_p]]:
    """(enumeration index, handle) of each physical device offering the extension and its
    feature."""
    ext = proc(b"vkEnumerateDeviceExtensionProperties", c_int32, c_void_p, c_char_p,
               POINTER(c_uint32), POINTER(_ExtensionProperties))
    feats2 = proc(b"vkGetPhysicalDeviceFeatures2", None, c_void_p, POINTER(_Features2))
    out = []
    for i, phys in enumerate(vkinfo.enumerate_devices(instance, proc)):
        n = c_uint32(0)
        ext(phys, None, byref(n), None)
        props = (_ExtensionProperties * n.value)()
        if (ext(phys, None, byref(n), props) != 0
                or EXTENSION not in {p.extensionName for p in props}):
            continue
        exe = _ExecutableFeatures(sType=_EXECUTABLE_FEATURES)
        feats2(phys, byref(_Features2(sType=_PHYSICAL_DEVICE_FEATURES_2,
                                      pNext=ctypes.addressof(exe))))
        if exe.pipelineExecutableInfo:
            out.append((i, phys))
    return out


def _open_device(instance, proc, device_index: int, stack) -> tuple:
    """(index among all physical devices, VkDevice with the extension enabled) of the
    `device_index`-th capable device; its vkDestroyDevice goes on `stack`."""
    found = capable_devices(instance, proc)
    if device_index >= len(found):
        names = [d["device_name"] for d in vkinfo.physical_devices()]
        raise RuntimeError(f"{EXTENSION.decode()} (with pipelineExecutableInfo) is supported by "
                           f"{len(found)} of the Vulkan devices {names}; no device {device_index}")
    index, phys = found[device_index]
    exe = _ExecutableFeatures(sType=_EXECUTABLE_FEATURES, pipelineExecutableInfo=1)
    feats = _Features2(sType=_PHYSICAL_DEVICE_FEATURES_2, pNext=ctypes.addressof(exe))
    # a device needs a queue, though nothing is submitted here
    result, device = vkinfo.create_device(proc, phys, 0, [EXTENSION], ctypes.addressof(feats))
    _check(result, "vkCreateDevice")
    stack.callback(proc(b"vkDestroyDevice", None, c_void_p, c_void_p), device, None)
    return index, device


def _device_procs(proc, device, stack) -> tuple:
    """(dproc, create): device functions from the driver itself, as extension functions must
    be; create(kind, info) calls vkCreate<kind> and puts its vkDestroy<kind> on `stack`."""
    gdpa = proc(b"vkGetDeviceProcAddr", c_void_p, c_void_p, c_char_p)

    def dproc(name, restype, *argtypes):
        addr = gdpa(device, name)
        if not addr:
            raise RuntimeError(f"vkGetDeviceProcAddr returned NULL for {name.decode()}")
        return ctypes.CFUNCTYPE(restype, *argtypes)(addr)

    def create(kind: str, info) -> int:
        handle = c_uint64(0)
        _check(dproc(b"vkCreate" + kind.encode(), c_int32, c_void_p, c_void_p, c_void_p,
                     POINTER(c_uint64))(device, byref(info), None, byref(handle)),
               f"vkCreate{kind}")
        stack.callback(dproc(b"vkDestroy" + kind.encode(), None, c_void_p, c_uint64, c_void_p),
                       device, handle.value, None)
        return handle.value
    return dproc, create


def _compute_pipeline(dproc, create, device, stack, spirv: bytes, push_bytes: int,
                      bindings: int, images, samplers) -> int:
    """The compute pipeline of `spirv`, created capturing its statistics (destroyed by `stack`)."""
    code = (c_uint32 * (len(spirv) // 4)).from_buffer_copy(spirv)  # pCode must be 4-byte aligned
    module = create("ShaderModule", _ShaderModuleInfo(
        sType=_SHADER_MODULE_CREATE_INFO, codeSize=len(spirv), pCode=ctypes.addressof(code)))
    binds = (_Binding * bindings)(*[
        _Binding(i, _STORAGE_IMAGE if i in images else _SAMPLER if i in samplers
                 else _STORAGE_BUFFER, 1, _COMPUTE_STAGE)
        for i in range(bindings)])
    set_layout = c_uint64(create("DescriptorSetLayout", _SetLayoutInfo(
        sType=_DESCRIPTOR_SET_LAYOUT_CREATE_INFO, bindingCount=bindings, pBindings=binds)))
    push = _PushRange(_COMPUTE_STAGE, 0, push_bytes)
    layout = create("PipelineLayout", _PipelineLayoutInfo(
        sType=_PIPELINE_LAYOUT_CREATE_INFO, setLayoutCount=1,
        pSetLayouts=ctypes.pointer(set_layout), pushConstantRangeCount=int(push_bytes > 0),
        pPushConstantRanges=ctypes.pointer(push)))
    pinfo = _ComputePipelineInfo(
        sType=_COMPUTE_PIPELINE_CREATE_INFO, flags=_CAPTURE_STATISTICS, layout=layout,
        basePipelineIndex=-1, stage=_StageInfo(sType=_STAGE_CREATE_INFO, stage=_COMPUTE_STAGE,
                                               module=module, pName=b"main"))
    pipeline = c_uint64(0)
    _check(dproc(b"vkCreateComputePipelines", c_int32, c_void_p, c_uint64, c_uint32,
                 POINTER(_ComputePipelineInfo), c_void_p, POINTER(c_uint64))(
        device, 0, 1, byref(pinfo), None, byref(pipeline)), "vkCreateComputePipelines")
    stack.callback(dproc(b"vkDestroyPipeline", None, c_void_p, c_uint64, c_void_p),
                   device, pipeline.value, None)
    return pipeline.value


def _executables(dproc, device, pipeline: int, device_name: str) -> list[dict]:
    """pipeline_statistics' records of each executable of `pipeline`."""
    get_exes = dproc(b"vkGetPipelineExecutablePropertiesKHR", c_int32, c_void_p,
                     POINTER(_PipelineInfo), POINTER(c_uint32), POINTER(_ExecutableProperties))
    get_stats = dproc(b"vkGetPipelineExecutableStatisticsKHR", c_int32, c_void_p,
                      POINTER(_ExecutableInfo), POINTER(c_uint32), POINTER(_Statistic))
    which = byref(_PipelineInfo(sType=_PIPELINE_INFO, pipeline=pipeline))
    out = []
    for k, e in enumerate(_listed(get_exes, "vkGetPipelineExecutablePropertiesKHR", device,
                                  which, _ExecutableProperties, _EXECUTABLE_PROPERTIES)):
        one = byref(_ExecutableInfo(sType=_EXECUTABLE_INFO, pipeline=pipeline,
                                    executableIndex=k))
        stats = {}
        for st in _listed(get_stats, "vkGetPipelineExecutableStatisticsKHR", device, one,
                          _Statistic, _EXECUTABLE_STATISTIC):
            v = st.value
            stats[st.name.decode("utf-8", "replace")] = (
                (bool(v.b32), v.i64, v.u64, v.f64)[st.format] if 0 <= st.format < 4 else v.u64)
        out.append({"name": e.name.decode("utf-8", "replace"),
                    "description": e.description.decode("utf-8", "replace"),
                    "subgroup_size": e.subgroupSize, "stats": stats, "device": device_name})
    return out


def pipeline_statistics(spirv: bytes, push_bytes: int = 24, bindings: int = 3,
                        device_index: int = 0, images: tuple[int, ...] = (),
                        samplers: tuple[int, ...] = ()) -> list[dict]:
    """Per executable of the compute pipeline of `spirv` (entry "main"): {"name", "description",
    "subgroup_size", "stats": {name: int | float | bool}, "device"}. Bindings 0 to
    `bindings` - 1 are storage buffers, those in `images` storage images, those in `samplers`
    combined image samplers (a GLSL sampler2D). `device_index` counts
    only the physical devices that support VK_KHR_pipeline_executable_properties."""
    if len(spirv) % 4 or spirv[:4] != b"\x03\x02\x23\x07":
        raise ValueError("not a SPIR-V module (no little-endian magic word 0x07230203)")
    # The stack unwinds before the instance goes: whatever was made is destroyed, in reverse order.
    with (vkinfo.instance(vkinfo.load_library()) as (instance, proc),
          contextlib.ExitStack() as stack):
        if instance is None:
            raise RuntimeError("no Vulkan instance could be created (no Vulkan driver installed?)")
        index, device = _open_device(instance, proc, device_index, stack)
        dproc, create = _device_procs(proc, device, stack)
        pipeline = _compute_pipeline(dproc, create, device, stack, spirv, push_bytes, bindings,
                                     images, samplers)
        device_name = vkinfo.physical_devices()[index]["device_name"]
        return _executables(dproc, device, pipeline, device_name)


def kernel_statistics(defines: dict, kernel: str = "stockham.comp",
                      device_index: int = 0) -> list[dict]:
    """pipeline_statistics of a pyfftgl kernel with `defines` (planner.PUSH_NAMES, 3 buffers)."""
    from .. import planner, kernels
    return pipeline_statistics(kernels.compile_spirv(kernels.assemble(kernel, defines, "vulkan")),
                               4 * len(planner.PUSH_NAMES), 3, device_index)


def _main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m pyfftgl.bench.vkstats", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("kernels", nargs="+", help="SPIR-V files (24 push-constant bytes, 3 buffers), "
                    "or FFT lengths N: each pass pyfftgl plans for a batched complex transform")
    ap.add_argument("--batch", type=int, default=64, help="lines per planned FFT (default 64)")
    ap.add_argument("--device", type=int, default=0, help="index among the capable devices")
    args = ap.parse_args(argv)
    for k in args.kernels:
        if not k.isdigit():
            _show(k, pipeline_statistics(Path(k).read_bytes(), device_index=args.device))
            continue
        from .. import planner
        from ..backends import get_device  # planned with its Vulkan device's limits and wisdom
        limits = get_device("vulkan").info.limits
        spec = planner.plan_fft(int(k), args.batch, False, "backward", limits)
        for i, p in enumerate(spec.passes):
            d = p.defines({t: 0 for t in p.tables()})  # table offsets only change constants
            shape = " ".join(f"{x}={d[x]}" for x in ("THREADS", "LINES") if x in d)
            _show(f"N={k} batch={args.batch} pass {i + 1}/{len(spec.passes)} {p.kernel} {shape} "
                  f"radices={getattr(p, 'radices', '?')}",
                  kernel_statistics(d, p.kernel, args.device))


def _show(label: str, result: list[dict]) -> None:
    for e in result:
        print(f"{label} | {e['device']} | {e['name']}: {e['description']} "
              f"| subgroup {e['subgroup_size']}")
        for name, value in e["stats"].items():
            print(f"    {name:40s} {value}")


if __name__ == "__main__":
    try:
        _main()
    except (RuntimeError, ValueError, OSError) as e:  # no capable device, not SPIR-V, no file, ...
        raise SystemExit(f"error: {e}") from None
