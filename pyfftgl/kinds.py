"""The numpy.fft kinds: one table (KINDS) of what each of the 14 functions is, and steps_for,
the one place that turns a call of one into device work (its jobs of planner Steps) with its
arguments checked as numpy checks them, in numpy's order, before any GPU work. The host path,
the DeviceArray path, Plan, pyfftgl.signal and the scipy and dask front ends all read these.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import _validate as v
from .lru import LRU
from .planner import Step, precision_of


@dataclass(frozen=True)
class Kind:
    """One numpy.fft function: `family` "c2c", "r2c" (real input, half spectrum out) or "c2r"
    (half spectrum in, real output); `inverse`, the direction of its complex steps; `nd`, takes
    (s, axes) rather than (n, axis); `default_axes`, its signature's axes (or axis);
    `conjugate`, hfft's conjugated input / ihfft's conjugated output (with the norm swapped)."""

    name: str
    family: str
    inverse: bool
    nd: bool
    default_axes: tuple[int, ...] | int | None
    conjugate: bool = False

    def ufunc(self, n_last: int) -> str:
        """The name numpy's messages give the ufunc behind this kind (its out= cast error)."""
        if self.conjugate and self.family == "r2c":
            return "conjugate"
        if self.family == "r2c":
            return f"rfft_n_{'odd' if n_last % 2 else 'even'}"
        return "irfft" if self.family == "c2r" else "ifft" if self.inverse else "fft"


def _table(*rows) -> dict[str, Kind]:
    return {row[0]: Kind(*row) for row in rows}


_TWO = (-2, -1)
KINDS = _table(("fft", "c2c", False, False, -1), ("ifft", "c2c", True, False, -1),
               ("rfft", "r2c", False, False, -1), ("irfft", "c2r", True, False, -1),
               ("hfft", "c2r", True, False, -1, True), ("ihfft", "r2c", False, False, -1, True),
               ("fft2", "c2c", False, True, _TWO), ("ifft2", "c2c", True, True, _TWO),
               ("rfft2", "r2c", False, True, _TWO), ("irfft2", "c2r", True, True, _TWO),
               ("fftn", "c2c", False, True, None), ("ifftn", "c2c", True, True, None),
               ("rfftn", "r2c", False, True, None), ("irfftn", "c2r", True, True, None))
ONE_AXIS = tuple(name for name, k in KINDS.items() if not k.nd)
_SWAP = {"backward": "forward", "ortho": "ortho", "forward": "backward"}


def steps_out_shape(shape: tuple[int, ...], steps) -> tuple[int, ...]:
    """The complex shape `steps` (planner.plan_steps) leave of an upload of `shape`."""
    out = list(shape)
    for st in steps:
        if st.kind == "r2c":
            out[st.axis] = st.n // 2 + 1
        elif st.kind == "c2r":
            out[st.axis] = st.n // 2 if st.n % 2 == 0 and st.axis == len(shape) - 1 else st.n
    return tuple(out)


@dataclass(frozen=True)
class Job:
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
            # no copy where x is already contiguous reals of the precision (the device's
            # upload is the one host copy)
            return np.ascontiguousarray(x, dtype=v.real_of(self.dtype)).view(self.dtype)
        return np.ascontiguousarray(x, dtype=self.dtype)

    def takes(self, shape: tuple[int, ...], dtype) -> bool:
        """Whether an array of `shape` and `dtype` is this job's upload as it stands (no crop,
        pad or dtype change): a device array runs it in place."""
        if not all(shape[ax] == n for ax, n in zip(self.axes, self.sizes)):
            return False
        if self.as_reals:
            return np.dtype(dtype) == v.real_of(self.dtype)
        return np.dtype(dtype) == self.dtype and tuple(shape) == self.shape


@dataclass(frozen=True)
class Call:
    """What a call of a numpy.fft function does: its jobs, in order, and its result."""

    kind: Kind
    jobs: tuple[Job, ...]
    out_shape: tuple[int, ...]
    out_dtype: np.dtype
    real_output: bool = False  # the c2r kinds: the result's real samples,
    reals_as_complex: bool = False  # computed as half as many complex values (even innermost n)

    @property
    def conj_input(self) -> bool:  # hfft
        return self.kind.conjugate and self.kind.family == "c2r"

    @property
    def conj_output(self) -> bool:  # ihfft
        return self.kind.conjugate and self.kind.family == "r2c"

    @property
    def ufunc(self) -> str:
        return self.kind.ufunc(self.jobs[0].steps[0].n if self.jobs else 0)

    def device_job(self, shape: tuple[int, ...], dtype) -> Job | None:
        """The one job a device array of `shape` and `dtype` runs in place, with no host-side
        preparation (crop, pad, conjugation, a dtype change, an odd real output), else None."""
        if len(self.jobs) != 1 or self.kind.conjugate or 0 in shape:
            return None
        if self.real_output and not (self.reals_as_complex and
                                     self.out_dtype == v.real_of(self.jobs[0].dtype)):
            return None
        return self.jobs[0] if self.jobs[0].takes(shape, dtype) else None


def _job(shape, group, steps, dtype, as_reals=False) -> Job:
    """The job that fits the array of `shape` to `group`'s (axis, n) pairs and runs `steps` on
    it as `dtype`."""
    axes, sizes = tuple(ax for ax, _ in group), tuple(n for _, n in group)
    up = list(shape)
    for ax, n in group:
        up[ax] = n
    if as_reals:
        up[-1] //= 2
    return Job(axes, sizes, tuple(steps), tuple(up), as_reals, np.dtype(dtype))


def _lengths_and_norm(lengths, norm, inverse: bool, then=None) -> str:
    """numpy's order of checks: the first transform's length, the norm, `then` (the first
    transform's dtype check), the other transforms' lengths. No transform checks nothing."""
    if not lengths:
        return "backward"
    v.positive_length(lengths[0])
    norm = v.norm(norm, inverse)
    if then is not None:
        then()
    for n in lengths[1:]:
        v.positive_length(n)
    return norm


def _c2c(kind, x, s, axes, norm) -> Call:
    cdtype = v.complex_dtype(x.dtype)
    s, axes = v.shape_and_axes(x, s, axes)
    # numpy transforms the listed axes last to first; runs of distinct axes go to the device
    # together (crop/pad along one axis commutes with transforms along the others).
    norm = _lengths_and_norm(s[::-1], norm, kind.inverse)
    jobs, shape = [], x.shape
    for group in v.distinct_runs(list(zip(axes, s))[::-1]):
        jobs.append(_job(shape, group, [Step("c2c", ax, inverse=kind.inverse, norm=norm)
                                        for ax, _ in group], cdtype))
        shape = steps_out_shape(jobs[-1].shape, jobs[-1].steps)
    return Call(kind, tuple(jobs), tuple(shape), cdtype if jobs else x.dtype)


def _r2c(kind, x, s, axes, norm) -> Call:
    s, axes = v.shape_and_axes(x, s, axes)
    if not axes:  # numpy's rfftn indexes the last of no axes
        raise IndexError("list index out of range")
    last, n_last = axes[-1], s[-1]
    norm = _lengths_and_norm([n_last] + s[-2::-1], norm, False,
                             lambda: v.real_dtype(x.dtype, kind.name, n_last))
    cdtype = v.complex_dtype(x.dtype)
    runs = v.distinct_runs([(last, n_last)] + list(zip(axes[:-1], s[:-1]))[::-1])
    steps = [Step("r2c", last, n=n_last, norm=norm)]
    steps += [Step("c2c", ax, norm=norm) for ax, _ in runs[0][1:]]
    jobs = [_job(x.shape, runs[0], steps, cdtype,
                 as_reals=n_last % 2 == 0 and last == x.ndim - 1)]
    shape = steps_out_shape(jobs[0].shape, jobs[0].steps)
    for group in runs[1:]:  # only for repeated axes
        jobs.append(_job(shape, group, [Step("c2c", ax, norm=norm) for ax, _ in group], cdtype))
        shape = steps_out_shape(jobs[-1].shape, jobs[-1].steps)
    return Call(kind, tuple(jobs), shape, cdtype)


def _c2r(kind, x, s, axes, norm) -> Call:
    cdtype = v.complex_dtype(x.dtype)
    s, axes = v.shape_and_axes(x, s, axes, invreal=True)
    if not axes:  # numpy's irfftn indexes the last of no axes
        raise IndexError("tuple index out of range")
    norm = _lengths_and_norm(s, norm, True)
    last, n_last = axes[-1], s[-1]
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
        shape = steps_out_shape(jobs[-1].shape, jobs[-1].steps)
    halves = n_last % 2 == 0 and last == x.ndim - 1
    if halves:
        shape = shape[:-1] + (shape[-1] * 2,)  # n/2 complex values are the n reals
    # numpy's irfft of float16 returns result_type(float16, 1.0); with more axes its ifft steps
    # have made the data complex64 first, and the result is float32 (float64 in double)
    dtype = np.float16 if x.dtype == np.float16 and len(axes) == 1 else v.real_of(cdtype)
    return Call(kind, tuple(jobs), shape, np.dtype(dtype), real_output=True,
                reals_as_complex=halves)


_FAMILIES = {"c2c": _c2c, "r2c": _r2c, "c2r": _c2r}


def _one_axis(kind: Kind, shape, n, axis, norm):
    """(s, axes, norm) of a 1-D function, checked in numpy's order: the axis where the default
    length reads it, hfft/ihfft's norm swap, the length, the norm, then the axis."""
    if n is None:
        ax = v.axis(axis, len(shape))
        n = 2 * (shape[ax] - 1) if kind.family == "c2r" else shape[ax]
    else:
        n = v.length_arg(n, bool_ok=kind.family == "r2c")
    if kind.conjugate:
        norm = _SWAP[v.norm(norm, True)]
    v.positive_length(n)
    norm = v.norm(norm, kind.inverse)
    return [n], [v.axis(axis, len(shape))], norm


# The Calls of argument sets seen before: working one out again cost a one-shot call 60-90 us
# on the H200's host (docs/performance-log.md). Only arguments of plain types are keys.
_calls = LRU(256)


def _plain(value) -> bool:
    """Whether `value` is None, a str, an int or a tuple of ints (not bools or numpy ints: their
    checks may differ), so that equal keys mean equal arguments."""
    if value is None or type(value) in (int, str):
        return True
    return type(value) is tuple and all(type(i) is int for i in value)


def steps_for(kind: str, shape, dtype, *, n=None, axis=-1, s=None, axes=None,
              norm=None) -> Call:
    """How numpy.fft.<kind>(a, n/axis or s/axes, norm) on an array of `shape` and `dtype` runs
    on the device: its jobs and its result's shape and dtype, the arguments checked in numpy's
    order, with numpy's exceptions, before any GPU work. The arguments are the function's own:
    axes=None means every axis, also for the 2-D kinds (whose signatures default to (-2, -1))."""
    args = (kind, shape, n, axis, s, axes, norm)
    key = (*args, np.dtype(dtype)) if all(map(_plain, args)) else None
    call = None if key is None else _calls.get(key)
    if call is None:
        call = _steps_for(kind, shape, dtype, n, axis, s, axes, norm)
        if key is not None:
            _calls.put(key, call)
    return call


def _steps_for(kind, shape, dtype, n, axis, s, axes, norm) -> Call:
    spec = KINDS[kind]
    x = np.broadcast_to(np.zeros((), dtype), shape)  # the checks read only shape and dtype
    x = v.as_array(x, kind)  # in native byte order
    if not spec.nd:
        s, axes, norm = _one_axis(spec, tuple(shape), n, axis, norm)
    return _FAMILIES[spec.family](spec, x, s, axes, norm)
