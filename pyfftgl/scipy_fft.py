"""scipy.fft backend: `scipy.fft.set_backend(pyfftgl.scipy_fft)` (or set_global_backend).

Numeric NumPy input runs on the GPU in scipy's precision: float16/float32/complex64 in single,
float64/complex128/integers/bools in double. Served: the FFTs (fft ... irfftn, hfft, ihfft) and
the DCT/DST family (dct, idct, dst, idst, dctn, idctn, dstn, idstn).

Declined (NotImplemented, so scipy falls back to its next backend, with its own error messages):
only what the argument checks refuse, before any GPU work: long double, hfft2/hfftn/ihfft2/ihfftn,
scipy's `plan=`, non-NumPy arrays, no device or no doubles on it, invalid arguments. Once the
arguments pass, the call runs on the GPU and any error in it propagates to the caller: a failure
is never hidden behind a CPU result.
"""
from __future__ import annotations

import inspect

import numpy as np

from . import numpy_fft, dctdst
from .kinds import KINDS, steps_for
from .planner import precision_of
from .backends import BackendUnavailable, get_device

__ua_domain__ = "numpy.scipy.fft"

handled = 0  # calls this backend computed (for tests and curiosity)


def _bound(method, args, kwargs) -> dict:
    """scipy's call as keyword arguments (scipy's defaults filled in)."""
    bound = inspect.signature(method).bind(*args, **kwargs)
    bound.apply_defaults()
    return dict(bound.arguments)


def _prepare(name, method, args, kwargs):
    """The checked call: (function, array, keyword arguments), or NotImplemented. Every
    exception here is an argument check refusing the call, before any GPU work."""
    kw = _bound(method, args, kwargs)
    x = kw.pop("x")
    if not isinstance(x, (np.ndarray, np.generic, list, tuple)):
        return NotImplemented  # other array libraries: let scipy dispatch them
    arr = np.asarray(x)
    if arr.dtype.kind not in "biufc":
        return NotImplemented
    if arr.dtype == np.float16:
        arr = arr.astype(np.float32)  # scipy computes half in single: irfft returns float32
    if kw.pop("plan", None) is not None:
        return NotImplemented
    kw.pop("overwrite_x", None)  # never needed: pyfftgl never writes its input
    workers = kw.pop("workers", None)
    if workers is not None and not isinstance(workers, int):
        return NotImplemented
    device = get_device(None)
    if name in dctdst.FUNCTIONS:
        check, kind, forward = dctdst.CHECKS[name]
        one = "n" in kw
        call = check(kind, forward, arr, kw["type"], kw["n"] if one else kw["s"],
                     kw["axis"] if one else kw["axes"], kw["norm"], workers, kw["orthogonalize"])
        if call is not None:
            device.check_precision(call.precision)
        # no axis to transform: scipy returns its input, of its own dtype (float16 included)
        return lambda: dctdst.run_call(call, arr if call is not None else x, None)
    dctdst.check_workers(workers)  # scipy's ValueError: declined, scipy raises it
    if KINDS[name].nd:  # scipy's checks of (s, axes): unique axes, in range, lengths above 0
        dctdst.nd_shape_and_axes(arr.shape, kw.get("s"), kw.get("axes"))
    if KINDS[name].nd and kw.get("s") is not None and kw.get("axes") is None:
        kw["axes"] = tuple(range(-len(kw["s"]), 0))  # scipy's s without axes: the last len(s)
    call = steps_for(name, arr.shape, arr.dtype, **kw)  # numpy's checks, no GPU work
    device.check_precision(precision_of(call.out_dtype))
    fn = getattr(numpy_fft, name)
    return lambda: fn(arr, **kw)


def __ua_function__(method, args, kwargs):
    global handled
    name = method.__name__
    if name not in KINDS and name not in dctdst.FUNCTIONS:
        return NotImplemented
    try:
        run = _prepare(name, method, args, kwargs)
    except (BackendUnavailable, ValueError, TypeError, IndexError, RuntimeError):
        return NotImplemented  # scipy computes it, or raises its own error for bad input
    if run is NotImplemented:
        return NotImplemented
    out = run()  # on the GPU: its errors are the caller's
    handled += 1
    return out
