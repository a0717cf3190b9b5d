"""The numpy.fft surface. Each function checks its arguments as numpy does (before any GPU work),
crops or zero-pads on the host, and runs every axis of the transform on the device in one
submission through a cached plan. numpy's dtypes: float16/float32/complex64 in, complex64 (float32
from irfft/hfft) out, computed in single precision; float64/complex128/integer/bool in,
complex128 (float64) out, computed in double precision.
"""
from __future__ import annotations

import math
import weakref
from dataclasses import dataclass

import numpy as np

from . import _docs
from . import _validate as v
from .backends import get_device
from .device_array import DeviceArray, asarray
from .kinds import KINDS, Call, steps_for, steps_out_shape
from .planner import Step, precision_of
from .plans import cached_steps_plan

# The helpers are pure host functions; numpy's own are exactly numpy's semantics.
fftfreq = np.fft.fftfreq
rfftfreq = np.fft.rfftfreq
fftshift = np.fft.fftshift
ifftshift = np.fft.ifftshift

def run_steps(x: np.ndarray, steps: tuple[Step, ...], backend) -> np.ndarray:
    """Run `steps` (planner.plan_steps) on the complex64 or complex128 C-contiguous x; returns
    the same dtype."""
    if x.size == 0:  # nothing to transform (an empty batch): numpy returns an empty result
        return np.zeros(steps_out_shape(x.shape, steps), x.dtype)
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
    shape = steps_out_shape(d.shape, steps)
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


def _via_host(kind, d: DeviceArray, out, kwargs) -> DeviceArray:
    """A device-array case that needs host-side preparation: through the host and back."""
    if out is not None:
        raise TypeError("out= is not supported with device arrays")
    result = _FUNCTIONS[kind](d.get(), backend=d.device, **kwargs)
    return asarray(result, backend=d.device)


def _device_call(kind, d: DeviceArray, out, pins: _Pins | None = None, **kwargs):
    """A call on a device array: its one job run in place on the device where the array is
    that job's upload as it stands (kinds.Call.device_job), else through the host."""
    call = steps_for(kind, d.shape, d.dtype, **kwargs)
    job = call.device_job(d.shape, d.dtype)
    if job is None:
        return _via_host(kind, d, out, kwargs)
    src = d.view(job.dtype) if job.as_reals else d
    return _run_device(src, list(job.steps), out, call.out_dtype if call.real_output else None,
                       pins)


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


def execute_call(call: Call, arr: np.ndarray, backend, plans=None) -> np.ndarray:
    """Run a call's jobs on the host array `arr`; the result as numpy returns it. `plans`: the
    device plan of each job (a Plan's), else the cache's."""
    cdtype = v.complex_dtype(arr.dtype)
    if not call.jobs:  # no axis to transform: numpy returns its input
        return arr
    result = np.asarray(arr, cdtype) if call.real_output else arr
    if call.conj_input:
        result = np.conj(result)
    for i, job in enumerate(call.jobs):
        plan = plans[i] if plans is not None else None
        x = job.upload(result)
        result = plan.execute(x) if plan is not None else run_steps(x, job.steps, backend)
    if call.reals_as_complex:
        result = result.view(v.real_of(cdtype))  # n/2 complex values are the n reals
    elif call.real_output:
        result = np.ascontiguousarray(result.real)
    if call.real_output:
        result = result.astype(call.out_dtype, copy=False)
    if call.conj_output:
        result = np.conj(result, out=result)
    return result


def _call(kind, a, out, backend, **kwargs):
    """numpy.fft.<kind>(a, **kwargs) on the device."""
    if isinstance(a, DeviceArray):
        _device_args(a, out, backend)
        return _device_call(kind, a, out, **kwargs)
    arr = v.as_array(a, kind)
    call = steps_for(kind, arr.shape, arr.dtype, **kwargs)
    _check_out(out, call.out_shape, call.out_dtype, call.ufunc)
    if not call.jobs:  # no axis to transform: numpy returns its input, as it is
        return _finish(np.asarray(a), out)
    return _finish(execute_call(call, arr, backend), out)


def _function(kind: str):
    """The numpy.fft function `kind` of the table: numpy's signature (the kind's default axes,
    keyword-only `backend`) and its docstring (numpy's layout, assembled in _docs.py)."""
    spec = KINDS[kind]
    if spec.nd:
        def transform(a, s=None, axes=spec.default_axes, norm=None, out=None, *, backend=None):
            return _call(kind, a, out, backend, s=s, axes=axes, norm=norm)
    else:
        def transform(a, n=None, axis=spec.default_axes, norm=None, out=None, *, backend=None):
            return _call(kind, a, out, backend, n=n, axis=axis, norm=norm)
    transform.__name__ = transform.__qualname__ = kind
    transform.__doc__ = _docs.docstring(kind)
    return transform


# fft, ifft, ..., irfftn: this module's public functions, one per kind of the table
_FUNCTIONS = {kind: _function(kind) for kind in KINDS}
globals().update(_FUNCTIONS)


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
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {sorted(KINDS)}, got {kind!r}")
        self.shape, self.dtype, self.kind = tuple(int(x) for x in shape), np.dtype(dtype), kind
        self.norm, self.backend = v.norm(norm), backend
        spec = KINDS[kind]
        if spec.nd:  # axes=None is the function's default axes (fft2's are (-2, -1))
            self._kwargs = dict(s=s, axes=spec.default_axes if axes is None else axes,
                                norm=self.norm)
        else:  # a 1-D function: one axis, given as an int or a 1-sequence
            if axes is not None and not isinstance(axes, (int, np.integer)):
                if len(axes) != 1:
                    raise ValueError(f"{kind} transforms one axis, got axes={axes!r}")
                axes = axes[0]
            self._kwargs = dict(n=n, axis=spec.default_axes if axes is None else axes,
                                norm=self.norm)
        # validated as the function validates; the device plans of the jobs it runs, kept with
        # the call
        self._call = call = steps_for(kind, self.shape, self.dtype, **self._kwargs)
        self._build()
        self.out_shape, self.out_dtype = call.out_shape, call.out_dtype
        self._replay = None  # the last device call: (src, out) held weakly, and its replay

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
        # A DeviceArray's buffer is fixed until it closes: the same open arrays bind the same
        # buffers.
        if replay is not None and a is replay[0]() and out is replay[1]() \
                and not (a.closed or out.closed):
            replay[2]()  # the render loop's call: nothing to check or plan again
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
                # Held weakly: the Plan keeps no device memory of the caller's alive.
                self._replay = (weakref.ref(a), weakref.ref(out), pins.runs[0])
            return result
        if a.dtype != self.dtype:
            raise ValueError(f"this plan transforms {self.dtype} arrays, got {a.dtype}")
        if any(p.device.lost for p in self.device_plans):  # host data: on the backend's new device
            self._build()
        _check_out(out, self.out_shape, self.out_dtype, self._call.ufunc)
        return _finish(execute_call(self._call, v.as_array(a, self.kind), self.backend,
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
        The numpy.fft function, by name: one of pyfftgl.kinds.KINDS ("fftn", the default,
        "fft", "rfft2", ...).
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
