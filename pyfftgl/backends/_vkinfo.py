"""Read Vulkan physical-device properties (limits included) through plain ctypes.

The Kompute ``kp`` binding does not expose VkPhysicalDeviceLimits (shared-memory
size, work-group limits, timestampPeriod, ...), so this module talks to the
Vulkan loader directly. No third-party packages.
"""
from __future__ import annotations

import contextlib
import ctypes
import os
import threading
from ctypes import POINTER, Structure, byref, c_char, c_char_p, c_float, c_int32
from ctypes import c_size_t, c_uint8, c_uint32, c_uint64, c_void_p

from .. import wisdom
from .base import DeviceInfo, Limits
from .errors import BackendUnavailable

__all__ = ["physical_devices", "choose", "driver_info"]

_TYPES = {"u32": c_uint32, "i32": c_int32, "f32": c_float, "u64": c_uint64,
          "size": c_size_t, "b32": c_uint32}  # u64 = VkDeviceSize, b32 = VkBool32

# Field lists copied (by a one-off script) from vulkan_core.h, in spec order.
# Any slip here silently shifts every later field, so the order and types are
# load-bearing; VkSampleCountFlags is listed as u32.
_LIMITS = """
    u32  maxImageDimension1D maxImageDimension2D maxImageDimension3D
    u32  maxImageDimensionCube maxImageArrayLayers maxTexelBufferElements
    u32  maxUniformBufferRange maxStorageBufferRange maxPushConstantsSize
    u32  maxMemoryAllocationCount maxSamplerAllocationCount
    u64  bufferImageGranularity sparseAddressSpaceSize
    u32  maxBoundDescriptorSets maxPerStageDescriptorSamplers
    u32  maxPerStageDescriptorUniformBuffers
    u32  maxPerStageDescriptorStorageBuffers maxPerStageDescriptorSampledImages
    u32  maxPerStageDescriptorStorageImages
    u32  maxPerStageDescriptorInputAttachments maxPerStageResources
    u32  maxDescriptorSetSamplers maxDescriptorSetUniformBuffers
    u32  maxDescriptorSetUniformBuffersDynamic maxDescriptorSetStorageBuffers
    u32  maxDescriptorSetStorageBuffersDynamic maxDescriptorSetSampledImages
    u32  maxDescriptorSetStorageImages maxDescriptorSetInputAttachments
    u32  maxVertexInputAttributes maxVertexInputBindings
    u32  maxVertexInputAttributeOffset maxVertexInputBindingStride
    u32  maxVertexOutputComponents maxTessellationGenerationLevel
    u32  maxTessellationPatchSize
    u32  maxTessellationControlPerVertexInputComponents
    u32  maxTessellationControlPerVertexOutputComponents
    u32  maxTessellationControlPerPatchOutputComponents
    u32  maxTessellationControlTotalOutputComponents
    u32  maxTessellationEvaluationInputComponents
    u32  maxTessellationEvaluationOutputComponents maxGeometryShaderInvocations
    u32  maxGeometryInputComponents maxGeometryOutputComponents
    u32  maxGeometryOutputVertices maxGeometryTotalOutputComponents
    u32  maxFragmentInputComponents maxFragmentOutputAttachments
    u32  maxFragmentDualSrcAttachments maxFragmentCombinedOutputResources
    u32  maxComputeSharedMemorySize maxComputeWorkGroupCount[3]
    u32  maxComputeWorkGroupInvocations maxComputeWorkGroupSize[3]
    u32  subPixelPrecisionBits subTexelPrecisionBits mipmapPrecisionBits
    u32  maxDrawIndexedIndexValue maxDrawIndirectCount
    f32  maxSamplerLodBias maxSamplerAnisotropy
    u32  maxViewports maxViewportDimensions[2]
    f32  viewportBoundsRange[2]
    u32  viewportSubPixelBits
    size minMemoryMapAlignment
    u64  minTexelBufferOffsetAlignment minUniformBufferOffsetAlignment
    u64  minStorageBufferOffsetAlignment
    i32  minTexelOffset
    u32  maxTexelOffset
    i32  minTexelGatherOffset
    u32  maxTexelGatherOffset
    f32  minInterpolationOffset maxInterpolationOffset
    u32  subPixelInterpolationOffsetBits maxFramebufferWidth
    u32  maxFramebufferHeight maxFramebufferLayers framebufferColorSampleCounts
    u32  framebufferDepthSampleCounts framebufferStencilSampleCounts
    u32  framebufferNoAttachmentsSampleCounts maxColorAttachments
    u32  sampledImageColorSampleCounts sampledImageIntegerSampleCounts
    u32  sampledImageDepthSampleCounts sampledImageStencilSampleCounts
    u32  storageImageSampleCounts maxSampleMaskWords
    b32  timestampComputeAndGraphics
    f32  timestampPeriod
    u32  maxClipDistances maxCullDistances maxCombinedClipAndCullDistances
    u32  discreteQueuePriorities
    f32  pointSizeRange[2] lineWidthRange[2] pointSizeGranularity
    f32  lineWidthGranularity
    b32  strictLines standardSampleLocations
    u64  optimalBufferCopyOffsetAlignment optimalBufferCopyRowPitchAlignment
    u64  nonCoherentAtomSize
"""
_SPARSE = """
    b32  residencyStandard2DBlockShape residencyStandard2DMultisampleBlockShape
    b32  residencyStandard3DBlockShape residencyAlignedMipSize
    b32  residencyNonResidentStrict
"""


def _fields(spec: str) -> list:
    out = []
    for line in spec.split("\n"):
        if not line.strip():
            continue
        ctype, *names = line.split()
        for name in names:
            base, _, n = name.partition("[")
            t = _TYPES[ctype]
            out.append((base, t * int(n[:-1]) if n else t))
    return out


class VkPhysicalDeviceLimits(Structure):
    _fields_ = _fields(_LIMITS)


class VkPhysicalDeviceSparseProperties(Structure):
    _fields_ = _fields(_SPARSE)


class VkPhysicalDeviceProperties(Structure):
    _fields_ = [("apiVersion", c_uint32), ("driverVersion", c_uint32),
                ("vendorID", c_uint32), ("deviceID", c_uint32),
                ("deviceType", c_int32),  # enum VkPhysicalDeviceType
                ("deviceName", c_char * 256),  # VK_MAX_PHYSICAL_DEVICE_NAME_SIZE
                ("pipelineCacheUUID", c_uint8 * 16),  # VK_UUID_SIZE
                ("limits", VkPhysicalDeviceLimits),
                ("sparseProperties", VkPhysicalDeviceSparseProperties)]


# VkPhysicalDeviceFeatures: 55 VkBool32 in spec order; the ones pyfftgl asks about by index.
_FEATURE_COUNT = 55
_FEATURES = {"shader_float64": 39}


class VkApplicationInfo(Structure):
    _fields_ = [("sType", c_int32), ("pNext", c_void_p),
                ("pApplicationName", c_char_p), ("applicationVersion", c_uint32),
                ("pEngineName", c_char_p), ("engineVersion", c_uint32),
                ("apiVersion", c_uint32)]


class VkInstanceCreateInfo(Structure):
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("flags", c_uint32),
                ("pApplicationInfo", POINTER(VkApplicationInfo)),
                ("enabledLayerCount", c_uint32), ("ppEnabledLayerNames", c_void_p),
                ("enabledExtensionCount", c_uint32), ("ppEnabledExtensionNames", c_void_p)]


class _QueueCreateInfo(Structure):
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("flags", c_uint32),
                ("queueFamilyIndex", c_uint32), ("queueCount", c_uint32),
                ("pQueuePriorities", POINTER(c_float))]


class _DeviceCreateInfo(Structure):
    _fields_ = [("sType", c_int32), ("pNext", c_void_p), ("flags", c_uint32),
                ("queueCreateInfoCount", c_uint32),
                ("pQueueCreateInfos", POINTER(_QueueCreateInfo)),
                ("enabledLayerCount", c_uint32), ("ppEnabledLayerNames", c_void_p),
                ("enabledExtensionCount", c_uint32), ("ppEnabledExtensionNames", c_void_p),
                ("pEnabledFeatures", c_void_p)]


_STRUCTURE_TYPE_APPLICATION_INFO = 0
_STRUCTURE_TYPE_INSTANCE_CREATE_INFO = 1
_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO = 2
_STRUCTURE_TYPE_DEVICE_CREATE_INFO = 3
_API_VERSION_1_1 = (1 << 22) | (1 << 12)  # VK_MAKE_API_VERSION(0, 1, 1, 0)
_DEVICE_TYPES = ("other", "integrated", "discrete", "virtual", "cpu")


def _version(v: int) -> str:
    return f"{(v >> 22) & 0x7F}.{(v >> 12) & 0x3FF}.{v & 0xFFF}"


def load_library() -> ctypes.CDLL:
    try:
        return ctypes.CDLL("libvulkan.so.1")
    except OSError as e:
        raise OSError(f"Vulkan loader libvulkan.so.1 not found ({e}); "
                      "install the Vulkan loader (e.g. libvulkan1)") from e


_PORTABILITY_ENUMERATION = b"VK_KHR_portability_enumeration"
_CREATE_ENUMERATE_PORTABILITY = 0x1  # VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR


class _ExtensionProperties(Structure):
    _fields_ = [("extensionName", c_char * 256), ("specVersion", c_uint32)]


def _instance_extensions(lib: ctypes.CDLL) -> set[bytes]:
    """The instance extensions the loader offers (empty where it cannot say)."""
    enum = lib.vkEnumerateInstanceExtensionProperties
    enum.restype = c_int32
    enum.argtypes = [c_char_p, POINTER(c_uint32), c_void_p]
    count = c_uint32(0)
    if enum(None, byref(count), None) != 0:
        return set()
    props = (_ExtensionProperties * count.value)()
    if enum(None, byref(count), props) not in (0, 5):  # VK_SUCCESS, VK_INCOMPLETE
        return set()
    return {p.extensionName for p in props[: count.value]}


def open_instance(lib: ctypes.CDLL):
    """(VkInstance, proc, destroy) for a new instance, `proc(name, restype, *argtypes)` resolving
    its entry points and destroy() ending it; (None, None, None) when none can be created (no
    driver)."""
    create = lib.vkCreateInstance
    create.restype = c_int32
    create.argtypes = [POINTER(VkInstanceCreateInfo), c_void_p, POINTER(c_void_p)]
    gipa = lib.vkGetInstanceProcAddr
    gipa.restype = c_void_p
    gipa.argtypes = [c_void_p, c_char_p]
    app = VkApplicationInfo(sType=_STRUCTURE_TYPE_APPLICATION_INFO,
                            pApplicationName=b"pyfftgl", pEngineName=b"pyfftgl",
                            apiVersion=_API_VERSION_1_1)
    info = VkInstanceCreateInfo(sType=_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
                                pApplicationInfo=ctypes.pointer(app))
    # MoltenVK's devices are listed only to an instance that enables portability enumeration
    # (as kp's does: tools/kp_patch.py, 12), where the loader offers it.
    names = (c_char_p * 1)(_PORTABILITY_ENUMERATION)
    if _PORTABILITY_ENUMERATION in _instance_extensions(lib):
        info.flags = _CREATE_ENUMERATE_PORTABILITY
        info.enabledExtensionCount = 1
        info.ppEnabledExtensionNames = ctypes.cast(names, c_void_p)
    handle = c_void_p()
    if create(byref(info), None, byref(handle)) != 0:
        return None, None, None

    # Entry points must come from vkGetInstanceProcAddr on the live instance; null if the
    # loader cannot resolve them.
    def proc(name, restype, *argtypes):
        addr = gipa(handle, name)
        if not addr:
            raise OSError(f"vkGetInstanceProcAddr returned NULL for {name.decode()}")
        return ctypes.CFUNCTYPE(restype, *argtypes)(addr)

    destroy = proc(b"vkDestroyInstance", None, c_void_p, c_void_p)
    return handle, proc, lambda: destroy(handle, None)


_instances: dict[int, tuple] = {}  # the process's query instance, by pid (a forked child's own)
_instances_lock = threading.Lock()


def query_instance(lib: ctypes.CDLL) -> tuple:
    """The process's VkInstance and a `proc(name, restype, *argtypes)` resolving its entry points;
    (None, None) when no instance can be created (no driver). Made on first use and never
    destroyed: NVIDIA's driver (580) invalidates every EGL context of the process when its last
    VkInstance is destroyed, so a look at the Vulkan devices broke a caller's GL context."""
    with _instances_lock:
        pid = os.getpid()
        if pid not in _instances:
            handle, proc, _ = open_instance(lib)
            if handle is not None:  # no driver: try again next time
                _instances[pid] = (handle, proc)
        return _instances.get(pid, (None, None))


@contextlib.contextmanager
def instance(lib: ctypes.CDLL):
    """query_instance(lib) for a `with` block (the instance outlives it)."""
    yield query_instance(lib)


def create_device(proc, phys, family: int, extensions=(), pnext=None) -> tuple[int, c_void_p]:
    """(VkResult, VkDevice) of vkCreateDevice on `phys` with one queue of `family`, the device
    extensions named (bytes) and `pnext` (an address) chained to its create info."""
    prio = c_float(1.0)
    queue = _QueueCreateInfo(sType=_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                             queueFamilyIndex=family, queueCount=1,
                             pQueuePriorities=ctypes.pointer(prio))
    names = (c_char_p * max(1, len(extensions)))(*extensions)
    info = _DeviceCreateInfo(sType=_STRUCTURE_TYPE_DEVICE_CREATE_INFO, pNext=pnext,
                             queueCreateInfoCount=1, pQueueCreateInfos=ctypes.pointer(queue),
                             enabledExtensionCount=len(extensions),
                             ppEnabledExtensionNames=ctypes.cast(names, c_void_p))
    device = c_void_p()
    create = proc(b"vkCreateDevice", c_int32, c_void_p, POINTER(_DeviceCreateInfo), c_void_p,
                  POINTER(c_void_p))
    return create(phys, byref(info), None, byref(device)), device


def enumerate_devices(handle, proc) -> list:
    """The VkPhysicalDevice handles of an instance ([] on failure)."""
    enumerate_ = proc(b"vkEnumeratePhysicalDevices", c_int32,
                      c_void_p, POINTER(c_uint32), POINTER(c_void_p))
    count = c_uint32(0)
    if enumerate_(handle, byref(count), None) != 0:
        return []
    handles = (c_void_p * count.value)()
    # VK_INCOMPLETE (5) would also be non-zero; the count cannot grow between the two calls in
    # practice, so treat any non-success as "no devices".
    if count.value and enumerate_(handle, byref(count), handles) != 0:
        return []
    return list(handles)


class _QueueFamilyProperties(Structure):
    _fields_ = [("queueFlags", c_uint32), ("queueCount", c_uint32),
                ("timestampValidBits", c_uint32), ("granularity", c_uint32 * 3)]


_QUEUE_GRAPHICS, _QUEUE_COMPUTE = 0x1, 0x2


def _compute_family(proc, phys) -> int:
    """The queue family to dispatch on: a compute-only family with timestamps where there is one
    (NVIDIA's graphics family leaves the GPU idle longer between submissions), else the first
    family that computes; with PYFFTGL_VK_QUEUE=graphics the first that also draws, as wgpu
    chooses (to time the Vulkan backend as the WebGPU backend runs: docs/devices.md)."""
    get = proc(b"vkGetPhysicalDeviceQueueFamilyProperties", None,
               c_void_p, POINTER(c_uint32), POINTER(_QueueFamilyProperties))
    count = c_uint32(0)
    get(phys, byref(count), None)
    fams = (_QueueFamilyProperties * count.value)()
    get(phys, byref(count), fams)
    computes = [i for i, f in enumerate(fams) if f.queueFlags & _QUEUE_COMPUTE]
    if os.environ.get("PYFFTGL_VK_QUEUE") == "graphics":
        computes = [i for i in computes if fams[i].queueFlags & _QUEUE_GRAPHICS] or computes
        return (computes or [0])[0]
    only = [i for i in computes if not fams[i].queueFlags & _QUEUE_GRAPHICS
            and fams[i].timestampValidBits]
    return (only or computes or [0])[0]


def physical_devices() -> list[dict]:
    """Describe every Vulkan physical device; [] when no driver/instance is available."""
    with instance(load_library()) as (handle, proc):
        if handle is None:
            return []
        get_props = proc(b"vkGetPhysicalDeviceProperties", None,
                         c_void_p, POINTER(VkPhysicalDeviceProperties))
        get_features = proc(b"vkGetPhysicalDeviceFeatures", None,
                            c_void_p, POINTER(c_uint32 * _FEATURE_COUNT))
        out = []
        for i, phys in enumerate(enumerate_devices(handle, proc)):
            p = VkPhysicalDeviceProperties()
            get_props(phys, byref(p))
            features = (c_uint32 * _FEATURE_COUNT)()
            get_features(phys, byref(features))
            lim = p.limits
            out.append({
                "index": i,
                "device_name": p.deviceName.decode("utf-8", "replace"),
                "device_type": _DEVICE_TYPES[p.deviceType]
                if 0 <= p.deviceType < len(_DEVICE_TYPES) else "other",
                "vendor_id": p.vendorID,
                "device_id": p.deviceID,
                "api_version": _version(p.apiVersion),
                "driver_version": p.driverVersion,
                "max_compute_shared_memory_size": lim.maxComputeSharedMemorySize,
                "max_compute_work_group_invocations": lim.maxComputeWorkGroupInvocations,
                "max_compute_work_group_count": tuple(lim.maxComputeWorkGroupCount),
                "max_compute_work_group_size": tuple(lim.maxComputeWorkGroupSize),
                "max_storage_buffer_range": lim.maxStorageBufferRange,
                "max_image_dimension_2d": lim.maxImageDimension2D,
                "timestamp_period": float(lim.timestampPeriod),
                "timestamp_compute_and_graphics": bool(lim.timestampComputeAndGraphics),
                "compute_family": _compute_family(proc, phys),
                **{name: bool(features[k]) for name, k in _FEATURES.items()},
            })
        return out


_TYPE_RANK = {"discrete": 0, "integrated": 1, "virtual": 2, "other": 3, "cpu": 4}


def choose(devices: list[dict]) -> dict:
    """The physical device to use of `devices` (physical_devices()): PYFFTGL_VULKAN_DEVICE's
    index or name, else real GPUs before software rasterisers."""
    want = os.environ.get("PYFFTGL_VULKAN_DEVICE")
    if want is not None:
        for d in devices:
            if str(d["index"]) == want or want.lower() in d["device_name"].lower():
                return d
        raise BackendUnavailable(f"PYFFTGL_VULKAN_DEVICE={want!r} matches none of "
                                 f"{[d['device_name'] for d in devices]}")
    return min(devices, key=lambda d: (_TYPE_RANK.get(d["device_type"], 5), d["index"]))


def driver_info(props: dict) -> DeviceInfo:
    """The DeviceInfo of a physical device as physical_devices reports it."""
    return DeviceInfo(
        api="vulkan",
        name=props["device_name"],
        driver=f"driver {props['driver_version']:#x} (vendor {props['vendor_id']:#06x})",
        api_version=props["api_version"],
        limits=Limits(
            max_shared_bytes=props["max_compute_shared_memory_size"],
            max_invocations=props["max_compute_work_group_invocations"],
            max_group_size=tuple(props["max_compute_work_group_size"]),
            max_group_count=tuple(props["max_compute_work_group_count"]),
            max_buffer_bytes=props["max_storage_buffer_range"],
            max_texture_size=props["max_image_dimension_2d"],
            tuned=wisdom.load(props["device_name"], "vulkan"),
        ),
        is_software=props["device_type"] == "cpu",
        float64=props["shader_float64"],
    )
