"""The numpy.fft surface. Each function checks its arguments as numpy does (before any GPU work),
crops or zero-pads on the host, and runs every axis of the transform on the device in one
submission through a cached plan. numpy's dtypes: float16/float32/complex64 in, complex64 (float32
from irfft/hfft) out, computed in single precision; float64/complex128/integer/bool in,
complex128 (float64) out, computed in double precision.
"""
from __future__ import annotations

import numpy as np

from . import _validate as v
from . import plans as _plans
from .device_array import DeviceArray, asarray
from .plans import cached_steps_plan

# The helpers are pure host functions; numpy's own are exactly numpy's semantics.
fftfreq = np.fft.fftfreq
rfftfreq = np.fft.rfftfreq
fftshift = np.fft.fftshift
ifftshift = np.fft.ifftshift

_SWAP = {"backward": "forward", "ortho": "ortho", "forward": "backward"}


def _run(x: np.ndarray, steps: list[tuple], backend) -> np.ndarray:
    """Run `steps` (planner.plan_steps) on the complex64 or complex128 C-contiguous x; returns
    the same dtype."""
    if x.size == 0:  # nothing to transform (an empty batch): numpy returns an empty result
        shape = list(x.shape)
        for kind, ax, *rest in steps:
            if kind == "r2c":
                shape[ax] = rest[0] // 2 + 1
            elif kind == "c2r":
                shape[ax] = rest[0] // 2 if rest[0] % 2 == 0 and ax == x.ndim - 1 else rest[0]
        return np.zeros(shape, x.dtype)
    plan = cached_steps_plan(x.shape, tuple(steps), backend, _plans.precision_of(x.dtype))
    return plan.execute(x)


def _run_device(d: DeviceArray, steps: list[tuple], out: DeviceArray | None = None,
                out_dtype=None) -> DeviceArray:
    """Run `steps` on a complex device array into a new device array or `out` (of d's dtype,
    or the real `out_dtype`), with no host transfer."""
    plan = cached_steps_plan(d.shape, tuple(steps), d.device, _plans.precision_of(d.dtype))
    shape = plan.spec.out_shape
    out_dtype = np.dtype(d.dtype if out_dtype is None else out_dtype)
    if out_dtype.kind == "f":
        shape = shape[:-1] + (shape[-1] * 2,)
    if out is not None:
        if not isinstance(out, DeviceArray) or out.device is not d.device:
            raise TypeError("out= for a device array must be a DeviceArray on the same device")
        if out.shape != shape or out.dtype != out_dtype:
            raise ValueError(f"output array has wrong shape or dtype: expected {shape} "
                             f"{np.dtype(out_dtype)}, got {out.shape} {out.dtype}")
        if out.buffer is d.buffer:
            raise ValueError("out= must not be the input device array (no in-place transforms)")
    if plan.spec.chunks > 1:  # its work buffers need several submissions: through the host
        result = plan.execute(d.get())
        if out is None:
            return asarray(result.view(out_dtype).reshape(shape), backend=d.device)
        d.device.write(out.buffer, result.view(np.float32).ravel())
        return out
    buf = plan.execute_device(d.buffer, None if out is None else out.buffer)
    return out if out is not None else DeviceArray(buf, shape, out_dtype, d.device)


def _via_host(name, d: DeviceArray, out, **kwargs) -> DeviceArray:
    """A device-array case that needs host-side preparation: through the host and back."""
    if out is not None:
        raise TypeError("out= is not supported with device arrays")
    return asarray(_KINDS[name](d.get(), backend=d.device, **kwargs), backend=d.device)


def _device_nd(name, d: DeviceArray, s, axes, norm, out, inverse=False):
    """fftn-style calls on a device array: on the device when no cropping/padding or dtype
    change is needed, else through the host."""
    s, axes = v.shape_and_axes(d, s, axes, invreal=name in ("irfft", "irfftn", "irfft2"))
    norm = v.norm(norm)
    same = all(d.shape[ax] == n for ax, n in zip(axes, s)) and len(set(axes)) == len(axes)
    last, n_last = axes[-1], s[-1]
    complex_in = d.dtype in (np.complex64, np.complex128)
    if name in ("fft", "ifft", "fftn", "ifftn", "fft2", "ifft2") and same and complex_in:
        return _run_device(d, [("c2c", ax, inverse, norm) for ax in axes[::-1]], out)
    innermost_even = last == d.ndim - 1 and n_last % 2 == 0
    if name in ("rfft", "rfftn", "rfft2") and same and innermost_even and not complex_in:
        steps = [("r2c", last, n_last, norm)] + [("c2c", ax, False, norm) for ax in axes[-2::-1]]
        return _run_device(d.view(v.complex_dtype(d.dtype)), steps, out)
    if name in ("irfft", "irfftn", "irfft2") and innermost_even \
            and complex_in and d.shape[last] == n_last // 2 + 1 \
            and all(d.shape[ax] == n for ax, n in zip(axes[:-1], s[:-1])) \
            and len(set(axes)) == len(axes):
        steps = [("c2c", ax, True, norm) for ax in axes[:-1]] + [("c2r", last, n_last, norm)]
        return _run_device(d, steps, out, v.real_of(d.dtype))
    if name in ("fft", "ifft", "rfft", "irfft"):
        return _via_host(name, d, out, n=s[0], axis=axes[0], norm=norm)
    return _via_host(name, d, out, s=s, axes=axes, norm=norm)


def _finish(result: np.ndarray, out):
    """numpy's `out=`: the right shape (else ValueError), a dtype the result casts to."""
    if out is None:
        return result
    if not isinstance(out, np.ndarray):
        raise TypeError("return arrays must be of ArrayType")
    if out.shape != result.shape:
        raise ValueError("output array has wrong shape.")
    np.copyto(out, result, casting="same_kind")
    return out


def _complex_input(a, name):
    arr = v.as_array(a, name)
    dtype = v.complex_dtype(arr.dtype)
    return arr, dtype


def _c2c_nd(a, s, axes, norm, inverse, out, backend, name, default_axes=None):
    if isinstance(a, DeviceArray):
        return _device_nd(name, a, s, axes if axes is not None else default_axes, norm, out,
                          inverse)
    arr, dtype = _complex_input(a, name)
    s, axes = v.shape_and_axes(arr, s, axes if axes is not None else default_axes)
    norm = v.norm(norm)
    result = arr
    # numpy transforms the listed axes last to first; runs of distinct axes go to the device
    # together (crop/pad along one axis commutes with transforms along the others).
    for group in v.distinct_runs(list(zip(axes, s))[::-1]):
        x = v.fit(result, [ax for ax, _ in group], [n for _, n in group])
        x = np.ascontiguousarray(x, dtype=dtype)
        steps = [("c2c", ax, inverse, norm) for ax, _ in group]
        result = _run(x, steps, backend)
    if result is arr:  # no axes at all: numpy returns the input, converted
        result = np.asarray(arr, dtype=dtype)
    return _finish(result, out)


def fft(a, n=None, axis=-1, norm=None, out=None, *, backend=None):
    """Compute the one-dimensional discrete Fourier transform, as numpy.fft.fft.

    `n` crops or zero-pads the input along `axis`; `norm` is "backward" (default), "ortho" or
    "forward"; `out` receives the result. `backend` picks the API ("vulkan", "gl", "auto" or a
    Device). float32/complex64 input gives complex64 output, float64/complex128 (and integer)
    input complex128, as numpy does.
    """
    arr = a if isinstance(a, DeviceArray) else v.as_array(a, "fft")
    ax = v.axis(axis, arr.ndim)
    return _c2c_nd(arr, [v.length(n, arr.shape[ax])], [ax], norm, False, out, backend, "fft")


def ifft(a, n=None, axis=-1, norm=None, out=None, *, backend=None):
    """Compute the one-dimensional inverse discrete Fourier transform, as numpy.fft.ifft."""
    arr = a if isinstance(a, DeviceArray) else v.as_array(a, "ifft")
    ax = v.axis(axis, arr.ndim)
    return _c2c_nd(arr, [v.length(n, arr.shape[ax])], [ax], norm, True, out, backend, "ifft")


def fftn(a, s=None, axes=None, norm=None, out=None, *, backend=None):
    """Compute the N-dimensional discrete Fourier transform, as numpy.fft.fftn."""
    return _c2c_nd(a, s, axes, norm, False, out, backend, "fftn")


def ifftn(a, s=None, axes=None, norm=None, out=None, *, backend=None):
    """Compute the N-dimensional inverse discrete Fourier transform, as numpy.fft.ifftn."""
    return _c2c_nd(a, s, axes, norm, True, out, backend, "ifftn")


def fft2(a, s=None, axes=(-2, -1), norm=None, out=None, *, backend=None):
    """Compute the 2-dimensional discrete Fourier transform, as numpy.fft.fft2."""
    return _c2c_nd(a, s, axes, norm, False, out, backend, "fft2")


def ifft2(a, s=None, axes=(-2, -1), norm=None, out=None, *, backend=None):
    """Compute the 2-dimensional inverse discrete Fourier transform, as numpy.fft.ifft2."""
    return _c2c_nd(a, s, axes, norm, True, out, backend, "ifft2")


def _rfft_nd(a, s, axes, norm, out, backend, name):
    if isinstance(a, DeviceArray):
        return _device_nd(name, a, s, axes, norm, out)
    arr = v.as_array(a, name)
    v.real_dtype(arr.dtype, name)
    cdtype = v.complex_dtype(arr.dtype)
    s, axes = v.shape_and_axes(arr, s, axes)
    norm = v.norm(norm)
    last, n_last = axes[-1], s[-1]
    rest = list(zip(axes[:-1], s[:-1]))[::-1]
    runs = v.distinct_runs([(last, n_last)] + rest)
    first = runs[0]
    x = v.fit(arr, [ax for ax, _ in first], [n for _, n in first]).astype(v.real_of(cdtype))
    if n_last % 2 == 0 and last == arr.ndim - 1:
        # n reals viewed as n/2 complex: the packing trick of realfft.comp
        x = np.ascontiguousarray(x).view(cdtype)
    else:
        x = np.ascontiguousarray(x, dtype=cdtype)
    steps = [("r2c", last, n_last, norm)] + [("c2c", ax, False, norm) for ax, _ in first[1:]]
    result = _run(x, steps, backend)
    for group in runs[1:]:  # only for repeated axes
        x = np.ascontiguousarray(v.fit(result, [ax for ax, _ in group], [n for _, n in group]))
        result = _run(x, [("c2c", ax, False, norm) for ax, _ in group], backend)
    return _finish(result, out)


def _irfft_nd(a, s, axes, norm, out, backend, name, conj=False):
    if isinstance(a, DeviceArray):
        return _device_nd(name, a, s, axes, norm, out)
    arr, cdtype = _complex_input(a, name)
    s, axes = v.shape_and_axes(arr, s, axes, invreal=True)
    norm = v.norm(norm)
    last, n_last = axes[-1], s[-1]
    if n_last < 1:
        raise ValueError(f"Invalid number of FFT data points ({n_last}) specified.")
    result = np.asarray(arr, cdtype)
    if conj:
        result = np.conj(result)
    runs = v.distinct_runs(list(zip(axes[:-1], s[:-1])) + [(last, n_last)])
    for i, group in enumerate(runs):
        final = i == len(runs) - 1
        sizes = [n // 2 + 1 if final and k == len(group) - 1 else n
                 for k, (_, n) in enumerate(group)]
        x = np.ascontiguousarray(v.fit(result, [ax for ax, _ in group], sizes), cdtype)
        steps = [("c2c", ax, True, norm) for ax, _ in (group[:-1] if final else group)]
        if final:
            steps.append(("c2r", last, n_last, norm))
        result = _run(x, steps, backend)
    if n_last % 2 == 0 and last == arr.ndim - 1:
        result = result.view(v.real_of(cdtype))  # n/2 complex values are the n reals
    else:
        result = np.ascontiguousarray(result.real)
    if arr.dtype == np.float16 and len(axes) == 1:
        # numpy's irfft of float16 returns result_type(float16, 1.0); with more axes its ifft
        # steps have made the data complex64 first, and the result is float32
        result = result.astype(np.float16)
    return _finish(result, out)


def rfft(a, n=None, axis=-1, norm=None, out=None, *, backend=None):
    """Compute the one-dimensional discrete Fourier transform for real input, as numpy.fft.rfft."""
    arr = a if isinstance(a, DeviceArray) else v.as_array(a, "rfft")
    ax = v.axis(axis, arr.ndim)
    return _rfft_nd(arr, [v.length(n, arr.shape[ax])], [ax], norm, out, backend, "rfft")


def irfft(a, n=None, axis=-1, norm=None, out=None, *, backend=None):
    """Compute the inverse of rfft, as numpy.fft.irfft (n defaults to 2 * (m - 1))."""
    arr = a if isinstance(a, DeviceArray) else v.as_array(a, "irfft")
    ax = v.axis(axis, arr.ndim)
    n = v.length(n, 2 * (arr.shape[ax] - 1))
    return _irfft_nd(arr, [n], [ax], norm, out, backend, "irfft")


def rfftn(a, s=None, axes=None, norm=None, out=None, *, backend=None):
    """Compute the N-dimensional discrete Fourier transform for real input, as numpy.fft.rfftn."""
    return _rfft_nd(a, s, axes, norm, out, backend, "rfftn")


def irfftn(a, s=None, axes=None, norm=None, out=None, *, backend=None):
    """Compute the inverse of rfftn, as numpy.fft.irfftn."""
    return _irfft_nd(a, s, axes, norm, out, backend, "irfftn")


def rfft2(a, s=None, axes=(-2, -1), norm=None, out=None, *, backend=None):
    """Compute the 2-dimensional FFT of a real array, as numpy.fft.rfft2."""
    return _rfft_nd(a, s, axes, norm, out, backend, "rfft2")


def irfft2(a, s=None, axes=(-2, -1), norm=None, out=None, *, backend=None):
    """Compute the inverse of rfft2, as numpy.fft.irfft2."""
    return _irfft_nd(a, s, axes, norm, out, backend, "irfft2")


def hfft(a, n=None, axis=-1, norm=None, out=None, *, backend=None):
    """Compute the FFT of a signal with Hermitian symmetry (real spectrum), as numpy.fft.hfft."""
    if isinstance(a, DeviceArray):  # conjugation and a real result: through the host
        return _via_host("hfft", a, out, n=n, axis=axis, norm=norm)
    arr = v.as_array(a, "hfft")
    ax = v.axis(axis, arr.ndim)
    n = v.length(n, 2 * (arr.shape[ax] - 1))
    return _irfft_nd(arr, [n], [ax], _SWAP[v.norm(norm)], out, backend, "hfft", conj=True)


def ihfft(a, n=None, axis=-1, norm=None, out=None, *, backend=None):
    """Compute the inverse FFT of a signal with Hermitian symmetry, as numpy.fft.ihfft."""
    if isinstance(a, DeviceArray):
        return _via_host("ihfft", a, out, n=n, axis=axis, norm=norm)
    arr = v.as_array(a, "ihfft")
    ax = v.axis(axis, arr.ndim)
    n = v.length(n, arr.shape[ax])
    result = _rfft_nd(arr, [n], [ax], _SWAP[v.norm(norm)], None, backend, "ihfft")
    return _finish(np.conj(result, out=result), out)


_KINDS = {"fft": fft, "ifft": ifft, "rfft": rfft, "irfft": irfft, "hfft": hfft, "ihfft": ihfft,
          "fftn": fftn, "ifftn": ifftn, "rfftn": rfftn, "irfftn": irfftn, "fft2": fft2,
          "ifft2": ifft2, "rfft2": rfft2, "irfft2": irfft2}
_ND = {"fftn", "ifftn", "rfftn", "irfftn", "fft2", "ifft2", "rfft2", "irfft2"}


class Plan:
    """A transform fixed in everything but the data: one of the numpy.fft functions at one
    shape and dtype. Its device plans (buffers, tables, programs) are built by the constructor
    and held for the Plan's lifetime, whatever the plan cache evicts.

        p = pyfftgl.plan((512, 512), np.float32, kind="rfft2")
        y = p(image)            # same as pyfftgl.rfft2(image), without planning
    """

    def __init__(self, shape, dtype=np.complex64, axes=None, kind="fftn", norm=None, s=None,
                 n=None, backend=None):
        if kind not in _KINDS:
            raise ValueError(f"kind must be one of {sorted(_KINDS)}, got {kind!r}")
        self.shape, self.dtype, self.kind = tuple(int(x) for x in shape), np.dtype(dtype), kind
        self.norm, self.backend = v.norm(norm), backend
        if kind in _ND:
            self._kwargs = dict(s=s, axes=axes, norm=self.norm)
        else:  # a 1-D function: one axis, given as an int or a 1-sequence
            if axes is not None and not isinstance(axes, (int, np.integer)):
                if len(axes) != 1:
                    raise ValueError(f"{kind} transforms one axis, got axes={axes!r}")
                axes = axes[0]
            self._kwargs = dict(n=n, axis=-1 if axes is None else axes, norm=self.norm)
        self._func = _KINDS[kind]
        _plans._in_use.plans = []
        try:  # validates like the function would, and builds every device plan it needs
            probe = self._func(np.zeros(self.shape, self.dtype), backend=backend, **self._kwargs)
        finally:
            self.device_plans = tuple(_plans._in_use.plans)
            del _plans._in_use.plans
        self._pinned = {p.cache_key: p for p in self.device_plans}
        self.out_shape, self.out_dtype = probe.shape, probe.dtype
        self._replay = None  # (src, out, their buffers, submission) of the last device call

    @property
    def nbytes(self) -> int:
        return sum(p.nbytes for p in self.device_plans)

    def execute(self, a, out=None):
        """Transform `a`: a numpy-compatible array (returns numpy) or a DeviceArray (returns a
        DeviceArray, into `out` when given, with no host transfer where the kind allows)."""
        replay = self._replay
        if replay is not None and a is replay[0] and out is replay[1] \
                and a.buffer is replay[2] and out.buffer is replay[3]:
            replay[4].run(wait=False)  # the render loop's call: nothing to check or plan again
            return out
        if not isinstance(a, DeviceArray):
            a = np.asarray(a)
        if a.shape != self.shape:
            raise ValueError(f"this plan transforms arrays of shape {self.shape}, got {a.shape}")
        device_call = isinstance(a, DeviceArray) and isinstance(out, DeviceArray)
        _plans._in_use.pinned = self._pinned
        _plans._in_use.runs = [] if device_call else None
        try:  # this Plan's own device plans, whatever the cache has dropped since
            result = self._func(a, out=out, backend=self.backend, **self._kwargs)
            runs = _plans._in_use.runs
        finally:
            _plans._in_use.pinned, _plans._in_use.runs = {}, None
        if device_call and runs is not None and len(runs) == 1:
            # One recorded submission did all of it: the same arrays next time replay it.
            self._replay = (a, out, a.buffer, out.buffer, runs[0])
        return result

    __call__ = execute

    def __repr__(self):
        inner = "\n  ".join(repr(p) for p in self.device_plans)
        args = ", ".join(f"{k}={val!r}" for k, val in self._kwargs.items() if val is not None)
        return (f"<Plan {self.kind}({args}) {self.shape} {self.dtype} -> {self.out_shape} "
                f"{self.out_dtype}, {self.nbytes} bytes on the device:\n  {inner}>")


def plan(shape, dtype=np.complex64, axes=None, kind="fftn", norm=None, s=None, n=None,
         backend=None) -> Plan:
    """A Plan for `kind` (a numpy.fft function name) on arrays of `shape` and `dtype`."""
    return Plan(shape, dtype, axes, kind, norm, s, n, backend)
