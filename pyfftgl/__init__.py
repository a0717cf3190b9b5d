"""pyfftgl: numpy.fft-compatible FFTs computed by GLSL compute shaders on Vulkan or OpenGL 4.3+.

    import pyfftgl
    y = pyfftgl.fft(x)                  # like numpy.fft.fft, on the GPU
    y = pyfftgl.fft(x, backend="gl")    # pick the API: "vulkan", "gl" or "auto" (the default)
"""
from __future__ import annotations


from . import numpy_fft
from .numpy_fft import Plan, fftfreq, fftshift, ifftshift, plan, rfftfreq
from .dctdst import dct, dctn, dst, dstn, idct, idctn, idst, idstn
from .backends import BackendUnavailable, DeviceError, get_device, set_backend
from .device_array import DeviceArray, asarray
from .memory import MemoryPool, memory_pool
from .plans import FFTPlan, TransformPlan, plan_cache
from .profiles import device_profile, set_device_profile
from .kernels import program_cache
from .kinds import KINDS

# the numpy.fft functions, one per kind of the table (pyfftgl.fft, ..., pyfftgl.irfftn)
globals().update({kind: getattr(numpy_fft, kind) for kind in KINDS})

from . import signal  # noqa: E402 (after the API it builds on)

__version__ = "0.1.0"
__all__ = [*KINDS, "fftfreq", "rfftfreq", "fftshift", "ifftshift", "plan", "Plan", "asarray",
           "DeviceArray", "FFTPlan", "TransformPlan", "get_device",
           "set_backend", "BackendUnavailable", "DeviceError", "plan_cache", "program_cache",
           "set_device_profile", "device_profile", "dct", "idct", "dst", "idst", "dctn", "idctn",
           "dstn", "idstn", "signal", "memory_pool", "MemoryPool"]
