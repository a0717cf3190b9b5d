"""pyfftgl: numpy.fft-compatible FFTs computed by GLSL compute shaders on Vulkan or OpenGL 4.3+.

    import pyfftgl
    y = pyfftgl.fft(x)                  # like numpy.fft.fft, on the GPU
    y = pyfftgl.fft(x, backend="gl")    # pick the API: "vulkan", "gl" or "auto" (the default)
"""
from __future__ import annotations

import numpy as np

from . import _validate
from .backends import BackendUnavailable, get_device, set_backend
from .plan import FFTPlan, cached_fft_plan, plan_cache

__version__ = "0.1.0"
__all__ = ["fft", "ifft", "FFTPlan", "get_device", "set_backend", "BackendUnavailable",
           "plan_cache"]


def _c2c(a, n, axis, norm, inverse, backend):
    arr = _validate.as_array(a)
    if arr.ndim == 0:
        raise IndexError("tuple index out of range")  # numpy: a 0-d array has no axis -1
    ax = _validate.axis(axis, arr.ndim)
    n = _validate.length(n, arr.shape[ax])
    norm = _validate.norm(norm)
    dtype = _validate.complex_dtype(arr.dtype)
    # Transform axis last and contiguous: the kernel reads whole lines. This is a copy, so the
    # caller's array is never touched.
    x = _validate.fit_length(np.moveaxis(arr, ax, -1), n)
    x = np.ascontiguousarray(x, dtype=dtype)
    lead = x.shape[:-1]
    batch = int(np.prod(lead, dtype=np.int64))
    if batch == 0:
        out = np.empty(x.shape, dtype)
    else:
        plan = cached_fft_plan(n, batch, inverse, norm, backend)
        out = plan.execute(x.reshape(batch, n)).reshape(x.shape)
    return np.moveaxis(out, -1, ax)


def fft(a, n=None, axis=-1, norm=None, *, backend=None):
    """Compute the one-dimensional discrete Fourier transform, as numpy.fft.fft.

    Parameters are numpy's: `n` crops or zero-pads the input along `axis`; `norm` is "backward"
    (default), "ortho" or "forward". `backend` picks the API ("vulkan", "gl", "auto", or a
    Device). Single precision: float32/complex64 input gives complex64 output.
    """
    return _c2c(a, n, axis, norm, False, backend)


def ifft(a, n=None, axis=-1, norm=None, *, backend=None):
    """Compute the one-dimensional inverse discrete Fourier transform, as numpy.fft.ifft."""
    return _c2c(a, n, axis, norm, True, backend)
