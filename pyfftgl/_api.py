"""The numpy.fft surface. Each function checks its arguments as numpy does (before any GPU work),
crops or zero-pads on the host, and runs every axis of the transform on the device in one
submission through a cached plan. Single precision: float32/complex64 in, complex64/float32 out.
"""
from __future__ import annotations

import numpy as np

from . import _validate as v
from . import plans as _plans
from .backends import get_device
from .device_array import DeviceArray, asarray
from .plans import cached_steps_plan

# The helpers are pure host functions; numpy's own are exactly numpy's semantics.
fftfreq = np.fft.fftfreq
rfftfreq = np.fft.rfftfreq
fftshift = np.fft.fftshift
ifftshift = np.fft.ifftshift

_SWAP = {"backward": "forward", "ortho": "ortho", "forward": "backward"}


def _steps_out_shape(shape, steps) -> tuple:
    """The complex64 shape `steps` (planner.plan_steps) make of a complex64 `shape`."""
    shape = list(shape)
    for kind, ax, *rest in steps:
        if kind == "r2c":
            shape[ax] = rest[0] // 2 + 1
        elif kind == "c2r":
            shape[ax] = rest[0] // 2 if rest[0] % 2 == 0 and ax == len(shape) - 1 else rest[0]
    return tuple(shape)


def _run(x: np.ndarray, steps: list[tuple], backend) -> np.ndarray:
    """Run `steps` (planner.plan_steps) on the complex64 C-contiguous x; returns complex64."""
    if x.size == 0:  # nothing to transform (an empty batch): numpy returns an empty result
        return np.zeros(_steps_out_shape(x.shape, steps), np.complex64)
    plan = cached_steps_plan(x.shape, tuple(steps), backend)
    return plan.execute(x)


def _device_args(d: DeviceArray, out, backend) -> None:
    """A device array's call, checked before any GPU work: `d` (and a device `out`) not closed,
    and an explicit `backend` naming the array's own device."""
    d.buffer  # noqa: B018 (raises ValueError once closed)
    if isinstance(out, DeviceArray):
        out.buffer  # noqa: B018
    if backend is not None and get_device(backend) is not d.device:
        dev = get_device(backend)
        raise ValueError(f"the array is on {d.device.info.api}:{d.device.info.name}, not on the "
                         f"requested backend {dev.info.api}:{dev.info.name}; copy it with "
                         "pyfftgl.asarray(a, backend=...)")


def _run_device(d: DeviceArray, steps: list[tuple], out: DeviceArray | None = None,
                out_dtype=np.complex64) -> DeviceArray:
    """Run `steps` on a device array into a new device array or `out`, with no host transfer."""
    shape = _steps_out_shape(d.shape, steps)
    if out_dtype == np.float32:
        shape = shape[:-1] + (shape[-1] * 2,)
    if out is not None:  # checked before any GPU work
        if not isinstance(out, DeviceArray) or out.device is not d.device:
            raise TypeError("out= for a device array must be a DeviceArray on the same device")
        if out.shape != shape or out.dtype != out_dtype:
            raise ValueError(f"output array has wrong shape or dtype: expected {shape} "
                             f"{np.dtype(out_dtype)}, got {out.shape} {out.dtype}")
        if out.buffer is d.buffer:
            raise ValueError("out= must not be the input device array (no in-place transforms)")
    plan = cached_steps_plan(d.shape, tuple(steps), d.device)
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
    norm = v.norm(norm, name.startswith("i"))
    same = all(d.shape[ax] == n for ax, n in zip(axes, s)) and len(set(axes)) == len(axes)
    last, n_last = axes[-1], s[-1]
    if name in ("fft", "ifft", "fftn", "ifftn", "fft2", "ifft2") and same \
            and d.dtype == np.complex64:
        return _run_device(d, [("c2c", ax, inverse, norm) for ax in axes[::-1]], out)
    innermost_even = last == d.ndim - 1 and n_last % 2 == 0
    if name in ("rfft", "rfftn", "rfft2") and same and innermost_even \
            and d.dtype == np.float32:
        steps = [("r2c", last, n_last, norm)] + [("c2c", ax, False, norm) for ax in axes[-2::-1]]
        return _run_device(d.view(np.complex64), steps, out)
    if name in ("irfft", "irfftn", "irfft2") and innermost_even \
            and d.dtype == np.complex64 and d.shape[last] == n_last // 2 + 1 \
            and all(d.shape[ax] == n for ax, n in zip(axes[:-1], s[:-1])) \
            and len(set(axes)) == len(axes):
        steps = [("c2c", ax, True, norm) for ax in axes[:-1]] + [("c2r", last, n_last, norm)]
        return _run_device(d, steps, out, np.float32)
    if name in ("fft", "ifft", "rfft", "irfft"):
        return _via_host(name, d, out, n=s[0], axis=axes[0], norm=norm)
    return _via_host(name, d, out, s=s, axes=axes, norm=norm)


def _check_out(out, shape, dtype, ufunc: str) -> None:
    """numpy's checks of `out=` before any GPU work: an ndarray of the result's shape that the
    result (`dtype`) casts to, so that a bad `out` is never partly written."""
    if out is None:
        return
    if not isinstance(out, np.ndarray):
        raise TypeError("return arrays must be of ArrayType")
    if out.shape != tuple(shape):
        raise ValueError("output array has wrong shape.")
    if not np.can_cast(dtype, out.dtype, "same_kind"):
        raise TypeError(f"Cannot cast ufunc '{ufunc}' output from {np.dtype(dtype)!r} to "
                        f"{out.dtype!r} with casting rule 'same_kind'")


def _out_shape(shape, axes, s, last=None) -> tuple:
    """The result's shape: `s` along `axes` (numpy transforms the last listed first, so the
    first listing of a repeated axis wins); `last` = (axis, length) assigned before them."""
    shape = list(shape)
    if last is not None:
        shape[last[0]] = last[1]
    for ax, n in reversed(list(zip(axes, s))):
        shape[ax] = n
    return tuple(shape)


def _finish(result: np.ndarray, out):
    """numpy's `out=`: the right shape (else ValueError), a dtype the result casts to."""
    if out is None:
        return result
    if getattr(out, "shape", None) != result.shape:
        raise ValueError("output array has wrong shape.")
    np.copyto(out, result, casting="same_kind")
    return out


def _complex_input(a, name):
    arr = v.as_array(a, name)
    dtype = v.complex_dtype(arr.dtype)
    return arr, dtype


def _c2c_nd(a, s, axes, norm, inverse, out, backend, name, default_axes=None):
    if isinstance(a, DeviceArray):
        _device_args(a, out, backend)
        return _device_nd(name, a, s, axes if axes is not None else default_axes, norm, out,
                          inverse)
    arr, dtype = _complex_input(a, name)
    s, axes = v.shape_and_axes(arr, s, axes if axes is not None else default_axes)
    norm = v.norm(norm, inverse)
    _check_out(out, _out_shape(arr.shape, axes, s), np.complex64, "ifft" if inverse else "fft")
    result = arr
    # numpy transforms the listed axes last to first; runs of distinct axes go to the device
    # together (crop/pad along one axis commutes with transforms along the others).
    for group in v.distinct_runs(list(zip(axes, s))[::-1]):
        x = v.fit(result, [ax for ax, _ in group], [n for _, n in group])
        x = np.ascontiguousarray(x, dtype=np.complex64)
        steps = [("c2c", ax, inverse, norm) for ax, _ in group]
        result = _run(x, steps, backend)
    if result is arr:  # no axes at all: numpy returns the input, converted
        result = np.asarray(arr, dtype=np.complex64)
    return _finish(result, out)


def fft(a, n=None, axis=-1, norm=None, out=None, *, backend=None):
    """Compute the one-dimensional discrete Fourier transform, as numpy.fft.fft.

    `n` crops or zero-pads the input along `axis`; `norm` is "backward" (default), "ortho" or
    "forward"; `out` receives the result. `backend` picks the API ("vulkan", "gl", "auto" or a
    Device). float32/complex64 input gives complex64 output.
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
        _device_args(a, out, backend)
        return _device_nd(name, a, s, axes, norm, out)
    arr = v.as_array(a, name)
    s, axes = v.shape_and_axes(arr, s, axes)
    last, n_last = axes[-1], s[-1]
    v.real_dtype(arr.dtype, name, n_last)
    norm = v.norm(norm)
    _check_out(out, _out_shape(arr.shape, axes[:-1], s[:-1], (last, n_last // 2 + 1)),
               np.complex64, f"rfft_n_{'odd' if n_last % 2 else 'even'}")
    rest = list(zip(axes[:-1], s[:-1]))[::-1]
    runs = v.distinct_runs([(last, n_last)] + rest)
    first = runs[0]
    x = v.fit(arr, [ax for ax, _ in first], [n for _, n in first]).astype(np.float32)
    if n_last % 2 == 0 and last == arr.ndim - 1:
        # n reals viewed as n/2 complex: the packing trick of realfft.comp
        x = np.ascontiguousarray(x).view(np.complex64)
    else:
        x = np.ascontiguousarray(x, dtype=np.complex64)
    steps = [("r2c", last, n_last, norm)] + [("c2c", ax, False, norm) for ax, _ in first[1:]]
    result = _run(x, steps, backend)
    for group in runs[1:]:  # only for repeated axes
        x = np.ascontiguousarray(v.fit(result, [ax for ax, _ in group], [n for _, n in group]))
        result = _run(x, [("c2c", ax, False, norm) for ax, _ in group], backend)
    return _finish(result, out)


def _irfft_nd(a, s, axes, norm, out, backend, name, conj=False):
    if isinstance(a, DeviceArray):
        _device_args(a, out, backend)
        return _device_nd(name, a, s, axes, norm, out)
    arr, _ = _complex_input(a, name)
    s, axes = v.shape_and_axes(arr, s, axes, invreal=True)
    norm = v.norm(norm, True)
    last, n_last = axes[-1], s[-1]
    if n_last < 1:
        raise ValueError(f"Invalid number of FFT data points ({n_last}) specified.")
    _check_out(out, _out_shape(arr.shape, axes, s),
               np.float16 if arr.dtype == np.float16 and len(axes) == 1 else np.float32, "irfft")
    result = np.asarray(arr, np.complex64)
    if conj:
        result = np.conj(result)
    runs = v.distinct_runs(list(zip(axes[:-1], s[:-1])) + [(last, n_last)])
    for i, group in enumerate(runs):
        final = i == len(runs) - 1
        sizes = [n // 2 + 1 if final and k == len(group) - 1 else n
                 for k, (_, n) in enumerate(group)]
        x = np.ascontiguousarray(v.fit(result, [ax for ax, _ in group], sizes), np.complex64)
        steps = [("c2c", ax, True, norm) for ax, _ in (group[:-1] if final else group)]
        if final:
            steps.append(("c2r", last, n_last, norm))
        result = _run(x, steps, backend)
    if n_last % 2 == 0 and last == arr.ndim - 1:
        result = result.view(np.float32)  # n/2 complex values are the n reals
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
        _device_args(a, out, backend)
        return _via_host("hfft", a, out, n=n, axis=axis, norm=norm)
    arr = v.as_array(a, "hfft")
    ax = v.axis(axis, arr.ndim)
    n = v.length(n, 2 * (arr.shape[ax] - 1))
    return _irfft_nd(arr, [n], [ax], _SWAP[v.norm(norm, True)], out, backend, "hfft", conj=True)


def ihfft(a, n=None, axis=-1, norm=None, out=None, *, backend=None):
    """Compute the inverse FFT of a signal with Hermitian symmetry, as numpy.fft.ihfft."""
    if isinstance(a, DeviceArray):
        _device_args(a, out, backend)
        return _via_host("ihfft", a, out, n=n, axis=axis, norm=norm)
    arr = v.as_array(a, "ihfft")
    ax = v.axis(axis, arr.ndim)
    n = v.length(n, arr.shape[ax])
    v.real_dtype(arr.dtype, "ihfft", n)
    _check_out(out, _out_shape(arr.shape, [ax], [n // 2 + 1]), np.complex64, "conjugate")
    result = _rfft_nd(arr, [n], [ax], _SWAP[v.norm(norm, True)], None, backend, "ihfft")
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
        if self._closed:
            raise ValueError(f"this Plan ({self.kind} of {self.shape}) was closed")
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

    _closed = False

    def close(self) -> None:
        """Let go of this Plan's device plans (buffers, tables, programs: released unless the
        plan cache still holds them, within its bounds) and its recorded call. Calling the Plan
        afterwards raises ValueError."""
        self.device_plans, self._pinned, self._replay, self._closed = (), {}, None, True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        inner = "\n  ".join(repr(p) for p in self.device_plans)
        args = ", ".join(f"{k}={val!r}" for k, val in self._kwargs.items() if val is not None)
        return (f"<Plan {self.kind}({args}) {self.shape} {self.dtype} -> {self.out_shape} "
                f"{self.out_dtype}, {self.nbytes} bytes on the device:\n  {inner}>")


def plan(shape, dtype=np.complex64, axes=None, kind="fftn", norm=None, s=None, n=None,
         backend=None) -> Plan:
    """A Plan for `kind` (a numpy.fft function name) on arrays of `shape` and `dtype`."""
    return Plan(shape, dtype, axes, kind, norm, s, n, backend)
