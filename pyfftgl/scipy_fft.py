"""scipy.fft backend: `scipy.fft.set_backend(pyfftgl.scipy_fft)` (or set_global_backend).

Numeric NumPy input runs on the GPU in scipy's precision: float16/float32/complex64 in single,
float64/complex128/integers/bools in double (NotImplemented where the device has no doubles).
Everything else (long double, the DCT/DST family, hfft2/hfftn, scipy's `plan=`, non-NumPy arrays,
invalid arguments) returns NotImplemented, so scipy falls back to its next backend and its own
error messages.
"""
from __future__ import annotations

import numpy as np

from . import _api
from .backends import BackendUnavailable

__ua_domain__ = "numpy.scipy.fft"

_FUNCTIONS = {name: getattr(_api, name) for name in (
    "fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "irfft", "rfft2", "irfft2",
    "rfftn", "irfftn", "hfft", "ihfft")}
_ND = {"fft2", "ifft2", "fftn", "ifftn", "rfft2", "irfft2", "rfftn", "irfftn"}
handled = 0  # calls this backend computed (for tests and curiosity)


def __ua_function__(method, args, kwargs):
    global handled
    fn = _FUNCTIONS.get(method.__name__)
    if fn is None or not args:
        return NotImplemented
    kwargs = dict(kwargs)
    kwargs.pop("overwrite_x", None)  # never needed: pyfftgl never writes its input
    workers = kwargs.pop("workers", None)
    if kwargs.pop("plan", None) is not None or (workers is not None and not isinstance(workers, int)):
        return NotImplemented
    x = args[0]
    if not isinstance(x, (np.ndarray, np.generic, list, tuple)):
        return NotImplemented  # other array libraries: let scipy dispatch them
    arr = np.asarray(x)
    if arr.dtype.kind not in "biufc":
        return NotImplemented  # long double passes here and is declined below (TypeError)
    if arr.dtype == np.float16:
        arr = arr.astype(np.float32)  # scipy computes half in single: irfft returns float32
    args = (arr,) + tuple(args[1:])
    if method.__name__ in _ND and kwargs.get("s") is not None and kwargs.get("axes") is None \
            and len(args) < 3:
        # scipy's meaning of s without axes: the last len(s) axes (no numpy deprecation)
        kwargs["axes"] = tuple(range(-len(kwargs["s"]), 0))
    try:
        out = fn(*args, **kwargs)
    except (BackendUnavailable, NotImplementedError, ValueError, TypeError, IndexError):
        return NotImplemented  # scipy computes it, or raises its own error for bad input
    handled += 1
    return out
