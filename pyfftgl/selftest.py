"""A self-check that needs no reference FFT (Ergun's randomized test, as FFTW's `verify` runs it).

A function F is the DFT (up to rounding) when it is linear, maps an impulse and a constant to the
right constant and impulse, and turns a cyclic shift along any axis into a phase ramp (time shift)
and a phase ramp into a cyclic shift (frequency shift). Each identity is checked with random data
on the library's own output, so the check works at sizes no host FFT could confirm quickly.
Errors are relative Linf: max |lhs - rhs| / max |rhs|.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

TOLERANCE = 1e-5


@dataclass
class Check:
    transform: str  # e.g. "fftn (1024, 1024)"
    name: str  # e.g. "time shift axis 0"
    error: float

    def ok(self, tol: float = TOLERANCE) -> bool:
        return bool(np.isfinite(self.error) and self.error <= tol)


def _rel_linf(got, want) -> float:
    got, want = np.asarray(got, np.complex128), np.asarray(want, np.complex128)
    scale = float(np.max(np.abs(want))) if want.size else 0.0
    return float(np.max(np.abs(got - want))) / (scale or 1.0)


def _ramp(shape, axis: int, sign: float, n: int | None = None) -> np.ndarray:
    """exp(sign 2 pi i j / n) along `axis` (j its index), broadcastable to `shape`."""
    n = shape[axis] if n is None else n
    j = np.arange(shape[axis], dtype=np.float64)
    view = [1] * len(shape)
    view[axis] = shape[axis]
    return np.exp(sign * 2j * np.pi * j / n).reshape(view)


def _random(rng, shape, real: bool) -> np.ndarray:
    if real:
        return rng.standard_normal(shape).astype(np.float32)
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(np.complex64)


def complex_checks(func, shape, axes, inverse: bool, rng, label: str) -> list[Check]:
    """Ergun's checks of `func`, numpy's fftn or ifftn over `axes` of arrays of `shape` (other
    axes are a batch: every line gets its own data)."""
    n_total = math.prod(shape[ax] for ax in axes)
    sign = 1.0 if inverse else -1.0  # the exponent's sign
    scale = 1.0 / n_total if inverse else 1.0
    origin = tuple(0 if ax in axes else slice(None) for ax in range(len(shape)))
    out = []
    x, y = _random(rng, shape, False), _random(rng, shape, False)
    a, b = complex(*rng.standard_normal(2)), complex(*rng.standard_normal(2))
    fx, fy = np.asarray(func(x), np.complex128), np.asarray(func(y), np.complex128)
    mix = (a * x.astype(np.complex128) + b * y).astype(np.complex64)
    out.append(Check(label, "linearity", _rel_linf(func(mix), a * fx + b * fy)))
    impulse = np.zeros(shape, np.complex64)
    impulse[origin] = 1
    out.append(Check(label, "impulse", _rel_linf(func(impulse), np.full(shape, scale))))
    c = complex(*rng.standard_normal(2))
    want = np.zeros(shape, np.complex128)
    want[origin] = c * n_total * scale
    out.append(Check(label, "constant", _rel_linf(func(np.full(shape, c, np.complex64)), want)))
    for ax in axes:
        # x[j - 1] transforms to F(x)[k] exp(sign 2 pi i k / n)
        got = func(np.roll(x, 1, axis=ax))
        out.append(Check(label, f"time shift axis {ax}",
                         _rel_linf(got, fx * _ramp(shape, ax, sign))))
        # x[j] exp(-sign 2 pi i j / n) transforms to F(x)[k - 1]
        got = func((x * _ramp(shape, ax, -sign)).astype(np.complex64))
        out.append(Check(label, f"frequency shift axis {ax}", _rel_linf(got, np.roll(fx, 1, ax))))
    return out


def real_checks(rfftn, irfftn, shape, rng, label: str) -> list[Check]:
    """The checks that apply to real input (rfftn: linearity with real coefficients, impulse,
    constant, time shifts), and irfftn's linearity and return to the input."""
    n_total = math.prod(shape)
    half = shape[:-1] + (shape[-1] // 2 + 1,)
    out = []
    x, y = _random(rng, shape, True), _random(rng, shape, True)
    a, b = rng.standard_normal(2)
    fx, fy = np.asarray(rfftn(x), np.complex128), np.asarray(rfftn(y), np.complex128)
    mix = (a * x.astype(np.float64) + b * y).astype(np.float32)
    out.append(Check(label, "linearity", _rel_linf(rfftn(mix), a * fx + b * fy)))
    impulse = np.zeros(shape, np.float32)
    impulse[(0,) * len(shape)] = 1
    out.append(Check(label, "impulse", _rel_linf(rfftn(impulse), np.ones(half))))
    c = float(rng.standard_normal())
    want = np.zeros(half, np.complex128)
    want[(0,) * len(shape)] = c * n_total
    out.append(Check(label, "constant", _rel_linf(rfftn(np.full(shape, c, np.float32)), want)))
    for ax in range(len(shape)):
        ramp = _ramp(half, ax, -1.0, shape[ax])  # the spectrum's index k along ax, of n points
        out.append(Check(label, f"time shift axis {ax}",
                         _rel_linf(rfftn(np.roll(x, 1, axis=ax)), fx * ramp)))
    # irfftn is linear and undoes rfftn (real spectra: the half spectra of real data)
    gx, gy = (np.asarray(irfftn(f.astype(np.complex64), shape), np.float64) for f in (fx, fy))
    out.append(Check(f"irfftn {shape}", "linearity",
                     _rel_linf(irfftn((a * fx + b * fy).astype(np.complex64), shape),
                               a * gx + b * gy)))
    out.append(Check(f"irfftn {shape}", "inverse of rfftn", _rel_linf(gx, x)))
    return out


def cases_for(size: int) -> list[tuple[tuple[int, ...], tuple[int, ...]]]:
    """(shape, axes) of about `size` elements: a line, a square and a cube transformed whole
    (powers of two where `size` is one), and batches of lines of a prime length (Bluestein) and
    of a mixed-radix length."""
    size = max(int(size), 16)
    e = size.bit_length() - 1
    if size == 1 << e:
        square = (1 << (e - e // 2), 1 << (e // 2))
        cube = (1 << (e - 2 * (e // 3)), 1 << (e // 3), 1 << (e // 3))
    else:
        side = math.isqrt(size)
        square, cube = (size // side, side), None
    cases = [((size,), (0,)), (square, (0, 1))]
    if cube is not None and min(cube) > 1:
        cases.append((cube, (0, 1, 2)))
    cases += [((max(1, size // 1009), 1009), (1,)), ((max(1, size // 360), 360), (1,))]
    return cases


def run(backend=None, size: int = 1 << 16, seed: int = 0, echo=print,
        tol: float = TOLERANCE, cases=None) -> list[Check]:
    """Every check on `backend` for cases_for(size) (or these (shape, axes) `cases`); echoes each
    with its error."""
    import pyfftgl
    rng = np.random.default_rng(seed)
    checks = []
    for shape, axes in cases_for(size) if cases is None else cases:
        for f in (pyfftgl.fftn, pyfftgl.ifftn):
            checks += _echo(complex_checks(
                lambda a, f=f: f(a, axes=axes, backend=backend), shape, axes,
                f is pyfftgl.ifftn, rng, f"{f.__name__} {shape} axes {axes}"), echo, tol)
        if len(axes) == len(shape):
            checks += _echo(real_checks(
                lambda a: pyfftgl.rfftn(a, axes=axes, backend=backend),
                lambda a, s: pyfftgl.irfftn(a, s=s, axes=axes, backend=backend),
                shape, rng, f"rfftn {shape}"), echo, tol)
    return checks


def _echo(checks, echo, tol):
    for c in checks:
        echo(f"  {c.transform:36s} {c.name:22s} rel Linf {c.error:.2e} "
             f"{'ok' if c.ok(tol) else 'FAIL'}")
    return checks
