"""The numpy.fft surface. Each function checks its arguments as numpy does (before any GPU work),
crops or zero-pads on the host, and runs every axis of the transform on the device in one
submission through a cached plan. numpy's dtypes: float16/float32/complex64 in, complex64 (float32
from irfft/hfft) out, computed in single precision; float64/complex128/integer/bool in,
complex128 (float64) out, computed in double precision.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import _docs
from . import _validate as v
from .backends import get_device
from .device_array import DeviceArray, asarray
from .planner import Step, precision_of
from .plans import cached_steps_plan

# The helpers are pure host functions; numpy's own are exactly numpy's semantics.
fftfreq = np.fft.fftfreq
rfftfreq = np.fft.rfftfreq
fftshift = np.fft.fftshift
ifftshift = np.fft.ifftshift

_SWAP = {"backward": "forward", "ortho": "ortho", "forward": "backward"}


def _steps_out_shape(shape: tuple[int, ...], steps) -> tuple[int, ...]:
    """The complex shape `steps` (planner.plan_steps) leave of an upload of `shape`."""
    out = list(shape)
    for st in steps:
        if st.kind == "r2c":
            out[st.axis] = st.n // 2 + 1
        elif st.kind == "c2r":
            out[st.axis] = st.n // 2 if st.n % 2 == 0 and st.axis == len(shape) - 1 else st.n
    return tuple(out)


def _run(x: np.ndarray, steps: tuple[Step, ...], backend) -> np.ndarray:
    """Run `steps` (planner.plan_steps) on the complex64 or complex128 C-contiguous x; returns
    the same dtype."""
    if x.size == 0:  # nothing to transform (an empty batch): numpy returns an empty result
        return np.zeros(_steps_out_shape(x.shape, steps), x.dtype)
    plan = cached_steps_plan(x.shape, tuple(steps), backend, precision_of(x.dtype))
    return plan.execute(x)


@dataclass
class _Pins:
    """A Plan's call on device arrays: its own device plans by cache key (taken before the
    cache's), and the device calls queued (a Plan replays a call that is one of them)."""

    plans: dict
    runs: list


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


def _run_device(d: DeviceArray, steps: list[Step], out: DeviceArray | None = None,
                out_dtype=None, pins: _Pins | None = None) -> DeviceArray:
    """Run `steps` on a complex device array into a new device array or `out` (of d's dtype,
    or the real `out_dtype`), with no host transfer."""
    shape = _steps_out_shape(d.shape, steps)
    out_dtype = np.dtype(d.dtype if out_dtype is None else out_dtype)
    if out_dtype.kind == "f":
        shape = shape[:-1] + (shape[-1] * 2,)
    if out is not None:  # checked before any GPU work
        if not isinstance(out, DeviceArray) or out.device is not d.device:
            raise TypeError("out= for a device array must be a DeviceArray on the same device")
        if out.shape != shape or out.dtype != out_dtype:
            raise ValueError(f"output array has wrong shape or dtype: expected {shape} "
                             f"{np.dtype(out_dtype)}, got {out.shape} {out.dtype}")
        if out.buffer is d.buffer:
            raise ValueError("out= must not be the input device array (no in-place transforms)")
    plan = cached_steps_plan(d.shape, tuple(steps), d.device, precision_of(d.dtype),
                             pins.plans if pins else None)
    if plan.spec.chunks > 1:  # its work buffers need several submissions: through the host
        result = plan.execute(d.get())
        if out is None:
            return asarray(result.view(out_dtype).reshape(shape), backend=d.device)
        d.device.write(out.buffer, result.view(v.real_of(result.dtype)).ravel())
        return out
    buf = plan.output_buffer() if out is None else out.buffer
    call = plan.device_call({"in": d.buffer, "out": buf})
    call()
    if pins is not None:
        pins.runs.append(call)
    return out if out is not None else DeviceArray(buf, shape, out_dtype, d.device)


def _via_host(name, d: DeviceArray, out, **kwargs) -> DeviceArray:
    """A device-array case that needs host-side preparation: through the host and back."""
    if out is not None:
        raise TypeError("out= is not supported with device arrays")
    return asarray(_KINDS[name](d.get(), backend=d.device, **kwargs), backend=d.device)


def _device_nd(name, d: DeviceArray, s, axes, norm, out, inverse=False, pins=None):
    """fftn-style calls on a device array: on the device when no cropping/padding or dtype
    change is needed, else through the host."""
    s, axes = v.shape_and_axes(d, s, axes, invreal=name in ("irfft", "irfftn", "irfft2"))
    norm = v.norm(norm, name.startswith("i"))
    same = all(d.shape[ax] == n for ax, n in zip(axes, s)) and len(set(axes)) == len(axes)
    last, n_last = axes[-1], s[-1]
    complex_in = d.dtype in (np.complex64, np.complex128)
    if name in ("fft", "ifft", "fftn", "ifftn", "fft2", "ifft2") and same and complex_in:
        return _run_device(d, [Step("c2c", ax, inverse=inverse, norm=norm) for ax in axes[::-1]],
                           out, pins=pins)
    innermost_even = last == d.ndim - 1 and n_last % 2 == 0
    if name in ("rfft", "rfftn", "rfft2") and same and innermost_even and not complex_in:
        steps = [Step("r2c", last, n=n_last, norm=norm)] + [Step("c2c", ax, inverse=False, norm=norm) for ax in axes[-2::-1]]
        return _run_device(d.view(v.complex_dtype(d.dtype)), steps, out, pins=pins)
    if name in ("irfft", "irfftn", "irfft2") and innermost_even \
            and complex_in and d.shape[last] == n_last // 2 + 1 \
            and all(d.shape[ax] == n for ax, n in zip(axes[:-1], s[:-1])) \
            and len(set(axes)) == len(axes):
        steps = [Step("c2c", ax, inverse=True, norm=norm) for ax in axes[:-1]] + [Step("c2r", last, n=n_last, norm=norm)]
        return _run_device(d, steps, out, v.real_of(d.dtype), pins)
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


@dataclass(frozen=True)
class _Job:
    """One submission of a call: the array so far cropped or zero-padded to `sizes` along
    `axes`, uploaded as `dtype` (complex64, or complex128 computed in double) of `shape`
    (`as_reals`: the reals of an even innermost axis viewed as half as many complex values),
    then `steps` run on the device."""

    axes: tuple[int, ...]
    sizes: tuple[int, ...]
    steps: tuple[Step, ...]
    shape: tuple[int, ...]
    as_reals: bool = False
    dtype: np.dtype = np.dtype(np.complex64)

    @property
    def precision(self) -> int:
        return precision_of(self.dtype)

    def upload(self, result: np.ndarray) -> np.ndarray:
        x = v.fit(result, self.axes, self.sizes)
        if self.as_reals:  # n reals viewed as n/2 complex: the packing trick of realfft.comp
            return np.ascontiguousarray(x.astype(v.real_of(self.dtype))).view(self.dtype)
        return np.ascontiguousarray(x, dtype=self.dtype)


@dataclass(frozen=True)
class _Call:
    """What a call of a numpy.fft function does: its jobs, in order, and its result."""

    jobs: tuple[_Job, ...]
    out_shape: tuple[int, ...]
    out_dtype: np.dtype
    conj_input: bool = False  # hfft
    conj_output: bool = False  # ihfft
    real_output: bool = False  # the c2r kinds: the result's real samples,
    reals_as_complex: bool = False  # computed as half as many complex values (even innermost n)


def _job(shape, group, steps, dtype, as_reals=False) -> _Job:
    """The job that fits the array of `shape` to `group`'s (axis, n) pairs and runs `steps` on
    it as `dtype`."""
    axes, sizes = tuple(ax for ax, _ in group), tuple(n for _, n in group)
    up = list(shape)
    for ax, n in group:
        up[ax] = n
    if as_reals:
        up[-1] //= 2
    return _Job(axes, sizes, tuple(steps), tuple(up), as_reals, np.dtype(dtype))


def _c2c_jobs(x, s, axes, norm, inverse) -> _Call:
    cdtype = v.complex_dtype(x.dtype)
    s, axes = v.shape_and_axes(x, s, axes)
    norm = v.norm(norm, inverse)
    jobs, shape = [], x.shape
    # numpy transforms the listed axes last to first; runs of distinct axes go to the device
    # together (crop/pad along one axis commutes with transforms along the others).
    for group in v.distinct_runs(list(zip(axes, s))[::-1]):
        jobs.append(_job(shape, group, [Step("c2c", ax, inverse=inverse, norm=norm)
                                        for ax, _ in group], cdtype))
        shape = _steps_out_shape(jobs[-1].shape, jobs[-1].steps)
    return _Call(tuple(jobs), tuple(shape), cdtype)


def _r2c_jobs(x, s, axes, norm, name, conj_output=False) -> _Call:
    s, axes = v.shape_and_axes(x, s, axes)
    last, n_last = axes[-1], s[-1]
    v.real_dtype(x.dtype, name, n_last)
    cdtype = v.complex_dtype(x.dtype)
    norm = v.norm(norm)
    runs = v.distinct_runs([(last, n_last)] + list(zip(axes[:-1], s[:-1]))[::-1])
    steps = [Step("r2c", last, n=n_last, norm=norm)]
    steps += [Step("c2c", ax, norm=norm) for ax, _ in runs[0][1:]]
    jobs = [_job(x.shape, runs[0], steps, cdtype,
                 as_reals=n_last % 2 == 0 and last == x.ndim - 1)]
    shape = _steps_out_shape(jobs[0].shape, jobs[0].steps)
    for group in runs[1:]:  # only for repeated axes
        jobs.append(_job(shape, group, [Step("c2c", ax, norm=norm) for ax, _ in group], cdtype))
        shape = _steps_out_shape(jobs[-1].shape, jobs[-1].steps)
    return _Call(tuple(jobs), shape, cdtype, conj_output=conj_output)


def _c2r_jobs(x, s, axes, norm, conj_input=False) -> _Call:
    cdtype = v.complex_dtype(x.dtype)
    s, axes = v.shape_and_axes(x, s, axes, invreal=True)
    norm = v.norm(norm, True)
    last, n_last = axes[-1], s[-1]
    if n_last < 1:
        raise ValueError(f"Invalid number of FFT data points ({n_last}) specified.")
    runs = v.distinct_runs(list(zip(axes[:-1], s[:-1])) + [(last, n_last)])
    jobs, shape = [], x.shape
    for i, group in enumerate(runs):
        final = i == len(runs) - 1
        fitted = [(ax, n // 2 + 1 if final and k == len(group) - 1 else n)
                  for k, (ax, n) in enumerate(group)]
        steps = [Step("c2c", ax, inverse=True, norm=norm)
                 for ax, _ in (group[:-1] if final else group)]
        if final:
            steps.append(Step("c2r", last, n=n_last, norm=norm))
        jobs.append(_job(shape, fitted, steps, cdtype))
        shape = _steps_out_shape(jobs[-1].shape, jobs[-1].steps)
    halves = n_last % 2 == 0 and last == x.ndim - 1
    if halves:
        shape = shape[:-1] + (shape[-1] * 2,)  # n/2 complex values are the n reals
    # numpy's irfft of float16 returns result_type(float16, 1.0); with more axes its ifft steps
    # have made the data complex64 first, and the result is float32 (float64 in double)
    dtype = np.float16 if x.dtype == np.float16 and len(axes) == 1 else v.real_of(cdtype)
    return _Call(tuple(jobs), shape, np.dtype(dtype), conj_input=conj_input, real_output=True,
                 reals_as_complex=halves)


_C2C = {"fft": False, "ifft": True, "fftn": False, "ifftn": True, "fft2": False, "ifft2": True}
_R2C = ("rfft", "rfftn", "rfft2", "ihfft")
_C2R = ("irfft", "irfftn", "irfft2", "hfft")
_ONE_AXIS = ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")


def _one_axis(kind, shape, n, axis) -> tuple[list[int], list[int]]:
    """(s, axes) of a 1-D function: its axis, and n or its default length."""
    ax = v.axis(axis, len(shape))
    default = 2 * (shape[ax] - 1) if kind in ("irfft", "hfft") else shape[ax]
    return [v.length(n, default)], [ax]


def _jobs(kind, shape, dtype, *, n=None, axis=-1, s=None, axes=None, norm=None) -> _Call:
    """How numpy.fft.<kind> on an array of `shape` and `dtype` runs on the device: its jobs and
    its result's shape and dtype, the arguments checked in numpy's order, with numpy's
    exceptions, before any GPU work. Plan builds its device plans from it."""
    x = np.broadcast_to(np.zeros((), dtype), shape)  # the checks read only shape and dtype
    x = v.as_array(x, kind)  # in native byte order
    if kind in _ONE_AXIS:
        s, axes = _one_axis(kind, shape, n, axis)
    if kind in ("hfft", "ihfft"):
        norm = _SWAP[v.norm(norm, True)]
    if kind in _C2C:
        return _c2c_jobs(x, s, axes, norm, _C2C[kind])
    if kind in _R2C:
        return _r2c_jobs(x, s, axes, norm, kind, conj_output=kind == "ihfft")
    return _c2r_jobs(x, s, axes, norm, conj_input=kind == "hfft")


def _execute(call: _Call, arr: np.ndarray, backend, plans=None) -> np.ndarray:
    """Run a call's jobs on the host array `arr`; the result as numpy returns it. `plans`: the
    device plan of each job (a Plan's), else the cache's."""
    cdtype = v.complex_dtype(arr.dtype)
    result = np.asarray(arr, cdtype) if call.real_output or not call.jobs else arr
    if call.conj_input:
        result = np.conj(result)
    for i, job in enumerate(call.jobs):
        plan = plans[i] if plans is not None else None
        x = job.upload(result)
        result = plan.execute(x) if plan is not None else _run(x, job.steps, backend)
    if call.reals_as_complex:
        result = result.view(v.real_of(cdtype))  # n/2 complex values are the n reals
    elif call.real_output:
        result = np.ascontiguousarray(result.real)
    if call.real_output:
        result = result.astype(call.out_dtype, copy=False)
    if call.conj_output:
        result = np.conj(result, out=result)
    return result


def _device_call(kind, d: DeviceArray, out, *, n=None, axis=-1, s=None, axes=None, norm=None,
                 pins: _Pins | None = None):
    """A call on a device array: on the device where the kind allows, else through the host."""
    if kind in ("hfft", "ihfft"):  # conjugation and a real result: through the host
        return _via_host(kind, d, out, n=n, axis=axis, norm=norm)
    if kind in _ONE_AXIS:
        s, axes = _one_axis(kind, d.shape, n, axis)
    return _device_nd(kind, d, s, axes, norm, out, _C2C.get(kind, False), pins)


def _ufunc(kind: str, call: _Call) -> str:
    """The name numpy's messages give the ufunc behind `kind` (its out= cast error)."""
    if kind == "ihfft":
        return "conjugate"
    if kind in _R2C:
        return f"rfft_n_{'odd' if call.jobs[0].steps[0].n % 2 else 'even'}"
    if kind in _C2R:
        return "irfft"
    return "ifft" if _C2C[kind] else "fft"


def _call(kind, a, out, backend, **kwargs):
    """numpy.fft.<kind>(a, **kwargs) on the device."""
    if isinstance(a, DeviceArray):
        _device_args(a, out, backend)
        return _device_call(kind, a, out, **kwargs)
    arr = v.as_array(a, kind)
    call = _jobs(kind, arr.shape, arr.dtype, **kwargs)
    _check_out(out, call.out_shape, call.out_dtype, _ufunc(kind, call))
    return _finish(_execute(call, arr, backend), out)


# The transforms' docstrings (numpy's layout: parameters, returns, raises, notes, an example)
# are assembled in _docs.py from shared text and set below.
def fft(a, n=None, axis=-1, norm=None, out=None, *, backend=None):
    return _call("fft", a, out, backend, n=n, axis=axis, norm=norm)


def ifft(a, n=None, axis=-1, norm=None, out=None, *, backend=None):
    return _call("ifft", a, out, backend, n=n, axis=axis, norm=norm)


def fftn(a, s=None, axes=None, norm=None, out=None, *, backend=None):
    return _call("fftn", a, out, backend, s=s, axes=axes, norm=norm)


def ifftn(a, s=None, axes=None, norm=None, out=None, *, backend=None):
    return _call("ifftn", a, out, backend, s=s, axes=axes, norm=norm)


def fft2(a, s=None, axes=(-2, -1), norm=None, out=None, *, backend=None):
    return _call("fft2", a, out, backend, s=s, axes=axes, norm=norm)


def ifft2(a, s=None, axes=(-2, -1), norm=None, out=None, *, backend=None):
    return _call("ifft2", a, out, backend, s=s, axes=axes, norm=norm)


def rfft(a, n=None, axis=-1, norm=None, out=None, *, backend=None):
    return _call("rfft", a, out, backend, n=n, axis=axis, norm=norm)


def irfft(a, n=None, axis=-1, norm=None, out=None, *, backend=None):
    return _call("irfft", a, out, backend, n=n, axis=axis, norm=norm)


def rfftn(a, s=None, axes=None, norm=None, out=None, *, backend=None):
    return _call("rfftn", a, out, backend, s=s, axes=axes, norm=norm)


def irfftn(a, s=None, axes=None, norm=None, out=None, *, backend=None):
    return _call("irfftn", a, out, backend, s=s, axes=axes, norm=norm)


def rfft2(a, s=None, axes=(-2, -1), norm=None, out=None, *, backend=None):
    return _call("rfft2", a, out, backend, s=s, axes=axes, norm=norm)


def irfft2(a, s=None, axes=(-2, -1), norm=None, out=None, *, backend=None):
    return _call("irfft2", a, out, backend, s=s, axes=axes, norm=norm)


def hfft(a, n=None, axis=-1, norm=None, out=None, *, backend=None):
    return _call("hfft", a, out, backend, n=n, axis=axis, norm=norm)


def ihfft(a, n=None, axis=-1, norm=None, out=None, *, backend=None):
    return _call("ihfft", a, out, backend, n=n, axis=axis, norm=norm)


_KINDS = {"fft": fft, "ifft": ifft, "rfft": rfft, "irfft": irfft, "hfft": hfft, "ihfft": ihfft,
          "fftn": fftn, "ifftn": ifftn, "rfftn": rfftn, "irfftn": irfftn, "fft2": fft2,
          "ifft2": ifft2, "rfft2": rfft2, "irfft2": irfft2}
_ND = {"fftn", "ifftn", "rfftn", "irfftn", "fft2", "ifft2", "rfft2", "irfft2"}
for _kind, _func in _KINDS.items():
    _func.__doc__ = _docs.docstring(_kind)


class Plan:
    """A transform fixed in everything but the data: one of the numpy.fft functions at one
    shape and dtype (made by pyfftgl.plan, which documents the arguments). Its device plans
    (buffers, tables, programs) are built by the constructor and held for the Plan's lifetime,
    whatever the plan cache evicts.

    Attributes
    ----------
    shape, dtype, kind, norm, backend
        What the Plan transforms, as given (norm resolved to its name).
    out_shape, out_dtype
        The result's shape and dtype.
    device_plans : tuple of TransformPlan
        One per submission a call makes (its repr lists passes, algorithms and buffers).
    nbytes : int
        Device memory the device plans hold.

    Examples
    --------
    >>> import numpy as np, pyfftgl
    >>> image = np.random.default_rng(0).random((64, 64)).astype(np.float32)
    >>> with pyfftgl.plan((64, 64), np.float32, kind="rfft2") as p:
    ...     y = p(image)        # as pyfftgl.rfft2(image), without planning
    >>> p.out_shape, p.out_dtype, np.allclose(y, np.fft.rfft2(image), atol=1e-3)
    ((64, 33), dtype('complex64'), True)
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
        # validated as the function validates; the device plans of the jobs it runs, kept with
        # the call
        self._call = call = _jobs(kind, self.shape, self.dtype, **self._kwargs)
        self._build()
        self.out_shape, self.out_dtype = call.out_shape, call.out_dtype
        self._replay = None  # (src, out, their buffers, queue it again) of the last device call

    def _build(self) -> None:
        """The device plan of each job of the call (None for an empty one, which needs none)."""
        self._job_plans = tuple(
            cached_steps_plan(job.shape, job.steps, self.backend, job.precision)
            if math.prod(job.shape) else None for job in self._call.jobs)
        self.device_plans = tuple(p for p in self._job_plans if p is not None)

    @property
    def nbytes(self) -> int:
        return sum(p.nbytes for p in self.device_plans)

    def execute(self, a, out=None):
        """Transform `a`, of the Plan's shape: a numpy-compatible array (returns numpy, or
        fills the ndarray `out`) or a DeviceArray (returns a DeviceArray, into the DeviceArray
        `out` when given, with no host transfer where the kind allows; the same arrays again
        replay the recorded submission without any checks). ValueError for another shape or a
        closed Plan; otherwise the function's exceptions."""
        replay = self._replay
        if replay is not None and a is replay[0] and out is replay[1] \
                and a.buffer is replay[2] and out.buffer is replay[3]:
            replay[4]()  # the render loop's call: nothing to check or plan again
            return out
        if self._closed:
            raise ValueError(f"this Plan ({self.kind} of {self.shape}) was closed")
        if not isinstance(a, DeviceArray):
            a = np.asarray(a)
        if a.shape != self.shape:
            raise ValueError(f"this plan transforms arrays of shape {self.shape}, got {a.shape}")
        if isinstance(a, DeviceArray):
            _device_args(a, out, self.backend)
            # the device path plans per array (views, dtypes): this Plan's device plans first
            pins = _Pins({p.cache_key: p for p in self.device_plans}, [])
            result = _device_call(self.kind, a, out, pins=pins, **self._kwargs)
            if isinstance(out, DeviceArray) and len(pins.runs) == 1:
                # One device call did all of it: the same arrays next time queue it again.
                self._replay = (a, out, a.buffer, out.buffer, pins.runs[0])
            return result
        if a.dtype != self.dtype:
            raise ValueError(f"this plan transforms {self.dtype} arrays, got {a.dtype}")
        if any(p.device.lost for p in self.device_plans):  # host data: on the backend's new device
            self._build()
        _check_out(out, self.out_shape, self.out_dtype, _ufunc(self.kind, self._call))
        return _finish(_execute(self._call, v.as_array(a, self.kind), self.backend,
                                self._job_plans), out)

    __call__ = execute

    _closed = False

    def close(self) -> None:
        """Let go of this Plan's device plans (buffers, tables, programs: released unless the
        plan cache still holds them, within its bounds) and its recorded call. Calling the Plan
        afterwards raises ValueError."""
        self.device_plans, self._job_plans, self._replay, self._closed = (), (), None, True

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
    """Plan a transform once, for calls on many arrays of one shape and dtype.

    Parameters
    ----------
    shape : tuple of ints
        Shape of the arrays the plan transforms.
    dtype : dtype, optional
        Their dtype (default complex64); it picks single or double precision as the function
        would, and real or complex input for the rfft and irfft kinds.
    axes : int or sequence of ints, optional
        The function's `axes`, or for a 1-D kind its `axis` (an int or a 1-sequence).
    kind : str, optional
        The numpy.fft function: "fft", "ifft", "fft2", "ifft2", "fftn" (the default), "ifftn",
        "rfft", "irfft", "rfft2", "irfft2", "rfftn", "irfftn", "hfft" or "ihfft".
    norm, s, n, backend
        As the function takes them (`n` for the 1-D kinds, `s` for the others).

    Returns
    -------
    Plan
        Callable as ``p(a, out=None)``: the same result as ``pyfftgl.<kind>(a, ...)``, without
        checking the arguments or planning again. Close it (or use it in a ``with`` block) to
        release its device memory.

    Raises
    ------
    ValueError, TypeError, numpy.exceptions.AxisError
        An unknown kind, and what the function raises for these arguments, before any GPU
        work.

    Examples
    --------
    >>> import numpy as np, pyfftgl
    >>> p = pyfftgl.plan((8, 1024), np.complex64, kind="fft", axes=-1)
    >>> x = np.ones((8, 1024), np.complex64)
    >>> np.allclose(p(x)[:, :2], [1024, 0])      # each row's sum, then nothing
    True
    >>> p.close()
    """
    return Plan(shape, dtype, axes, kind, norm, s, n, backend)
