"""The WebGPU backend's adapter choice, its limits and features, and trusted shader modules.

wgpu-py (wgpu-native underneath) runs WebGPU over Vulkan, Metal, Direct3D 12 or OpenGL; which one
and which GPU is the adapter. PYFFTGL_WEBGPU_ADAPTER (vulkan, gl, metal, dx12) picks the API,
PYFFTGL_WEBGPU_POWER (high-performance, low-power) which kind of GPU comes first; without them a
real GPU comes before a software one, and Vulkan, Metal and Direct3D 12 before GL. Where
PYFFTGL_WEBGPU_ADAPTER names an API before this process made its wgpu instance, the instance gets
that API alone (wgpu's instance is one per process): no other API is brought up (GL's EGL among
them, whose complaints about the environment then stay away).
"""
from __future__ import annotations

import logging
import os

from .base import BackendUnavailable

ADAPTER_ENV, POWER_ENV = "PYFFTGL_WEBGPU_ADAPTER", "PYFFTGL_WEBGPU_POWER"
CHECKED_ENV = "PYFFTGL_WEBGPU_CHECKED"  # 1: shader modules with naga's runtime bounds checks
SPIRV_ENV = "PYFFTGL_WEBGPU_SPIRV"  # 1 / 0: programs through glslang's SPIR-V / naga's GLSL
NAGA_BARRIERS_ENV = "PYFFTGL_WEBGPU_NAGA_BARRIERS"  # 1: naga may take barrier() on Vulkan
UNIFORM_ENV = "PYFFTGL_WEBGPU_UNIFORM"  # 1: push values in a uniform buffer even with immediates
APIS = {"vulkan": ("Vulkan",), "gl": ("OpenGL", "OpenGLES"), "metal": ("Metal",),
        "dx12": ("D3D12",)}
_INSTANCE_BACKEND = {"vulkan": "Vulkan", "gl": "GL", "metal": "Metal", "dx12": "DX12"}
_API_RANK = {"Vulkan": 0, "Metal": 0, "D3D12": 1, "OpenGL": 2, "OpenGLES": 3}
_TYPE_RANK = {"high-performance": {"DiscreteGPU": 0, "IntegratedGPU": 1},
              "low-power": {"IntegratedGPU": 0, "DiscreteGPU": 1}}
# What the planner reads (Limits), requested from the device at the adapter's own values: a
# WebGPU device otherwise gets the spec's defaults, whatever the adapter offers.
LIMITS = ("max-compute-workgroup-storage-size", "max-compute-invocations-per-workgroup",
          "max-compute-workgroup-size-x", "max-compute-workgroup-size-y",
          "max-compute-workgroup-size-z", "max-compute-workgroups-per-dimension",
          "max-storage-buffer-binding-size", "max-buffer-size",
          "max-storage-buffers-per-shader-stage", "max-texture-dimension-2d",
          "max-immediate-size")
# Requested where offered: fp64 kernels, fp16 storage, push constants, GPU timing, and subgroup
# barriers, without which naga's GLSL front end refuses barrier() (it makes it one of all scopes).
FEATURES = ("shader-f64", "shader-f16", "immediates", "timestamp-query", "subgroup",
            "subgroup-barrier")


def import_wgpu():
    """wgpu-py, or BackendUnavailable saying how to install it."""
    try:
        import wgpu
        import wgpu.backends.wgpu_native  # noqa: F401 (the native backend registers itself)
    except ImportError as e:
        raise BackendUnavailable(
            f"the WebGPU backend needs wgpu-py, which failed to import ({e}): pip install wgpu "
            "(one wheel per OS, no compiler needed)") from e
    log = logging.getLogger("wgpu")
    if not any(isinstance(f, _NagaRestrictFilter) for f in log.filters):
        log.addFilter(_NagaRestrictFilter())
    return wgpu


class _NagaRestrictFilter(logging.Filter):
    """Drops naga's warning that its SPIR-V front end ignores glslang's Restrict decoration, one
    per module of the SPIR-V route: WGSL has no such qualifier, and nothing is lost."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Unknown decoration Restrict" not in record.getMessage()


def _only_api(want: str) -> None:
    """wgpu's instance with API `want` alone, if this process has made none yet (docstring)."""
    from wgpu.backends.wgpu_native.extras import set_instance_extras
    try:
        set_instance_extras(backends=[_INSTANCE_BACKEND[want]])
    except RuntimeError:  # the instance exists already (the caller's wgpu use): keep it as it is
        pass


def choose_adapter(wgpu):
    """The adapter the environment asks for (module docstring), or the best one there is."""
    want = os.environ.get(ADAPTER_ENV, "").strip().lower()
    power = os.environ.get(POWER_ENV, "").strip().lower() or "high-performance"
    if want and want not in APIS:
        raise BackendUnavailable(f"{ADAPTER_ENV}={want!r}: choose one of {', '.join(APIS)}")
    if power not in _TYPE_RANK:
        raise BackendUnavailable(f"{POWER_ENV}={power!r}: choose one of {', '.join(_TYPE_RANK)}")
    if want:
        _only_api(want)
    try:
        adapters = wgpu.gpu.enumerate_adapters_sync()
    except Exception as e:  # wgpu-native's own failure to find any API
        raise BackendUnavailable(f"wgpu found no adapter ({e})") from e
    found = [a.info["backend_type"] for a in adapters]
    if want:
        adapters = [a for a in adapters if a.info["backend_type"] in APIS[want]]
    if not adapters:
        raise BackendUnavailable(
            f"wgpu offers no {want or 'WebGPU'} adapter here (it found: {found or 'none'}); "
            "install a GPU driver, or Mesa's lavapipe / llvmpipe for a software one")
    types = _TYPE_RANK[power]
    return min(adapters, key=lambda a: (types.get(a.info["adapter_type"], 2),
                                        _API_RANK.get(a.info["backend_type"], 4)))


def request_device(adapter):
    """(device, features) with FEATURES where the adapter offers them, LIMITS at its values."""
    features = [f for f in FEATURES if f in adapter.features]
    limits = {k: adapter.limits[k] for k in LIMITS if k in adapter.limits}
    if "immediates" not in features:
        limits.pop("max-immediate-size", None)
    device = adapter.request_device_sync(label="pyfftgl", required_features=features,
                                         required_limits=limits)
    return device, frozenset(features)


def shader_module(device, code, label: str, checked: bool):
    """A shader module of SPIR-V (bytes) or GLSL (str). Unchecked (trusted: naga adds no bounds
    checks to every access, which made a kernel several times slower) unless `checked`: the
    planner bounds every access and Khronos' validation layer checks them on the Vulkan backend
    (docs/devices.md)."""
    if checked:
        return device.create_shader_module(label=label, code=code)
    from wgpu.backends.wgpu_native import _api as native
    ffi, lib = native.ffi, native.lib
    keep = []  # cffi memory the descriptor points into, alive until the call returns
    if isinstance(code, bytes):
        words = ffi.new("uint8_t[]", code)
        source = native.new_struct_p("WGPUShaderSourceSPIRV *", codeSize=len(code) // 4,
                                     code=ffi.cast("uint32_t *", words))
        source[0].chain.sType = lib.WGPUSType_ShaderSourceSPIRV
        keep.append(words)
    else:
        source = native.new_struct_p("WGPUShaderSourceGLSL *", code=native.to_c_string_view(code),
                                     stage=4, defineCount=0, defines=ffi.NULL)  # 4: COMPUTE
        source[0].chain.sType = lib.WGPUSType_ShaderSourceGLSL
    source[0].chain.next = ffi.NULL
    desc = native.new_struct_p("WGPUShaderModuleDescriptor *",
                               nextInChain=ffi.cast("WGPUChainedStruct *", source),
                               label=native.to_c_string_view(label))
    # Runtime checks: none (WGPUShaderRuntimeChecks_None).
    ident = native.libf.wgpuDeviceCreateShaderModuleTrusted(device._internal, desc, 0)
    if ident == ffi.NULL:
        raise RuntimeError("wgpu made no shader module")
    return native.GPUShaderModule(label, ident, device)
