"""What the benchmark times: a transform (a numpy.fft function), its input shape and axes."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Case:
    kind: str  # a numpy.fft function name
    shape: tuple[int, ...]  # input shape
    axes: tuple[int, ...]  # transformed axes
    group: str  # "1d", "2d", "3d", "real", "mixed", "bluestein"
    double: bool = False  # float64/complex128 data (computed in double precision)

    @property
    def name(self) -> str:
        return f"{self.kind} {'x'.join(map(str, self.shape))}" + (" f64" if self.double else "")

    @property
    def n(self) -> int:
        """Points per transform (the transformed axes' lengths, real length for r2c)."""
        return math.prod(self.shape[a] for a in self.axes)

    @property
    def batch(self) -> int:
        return math.prod(self.shape) // self.n


def batched_case(n: int, elements: int, group: str = "1d") -> Case:
    """Length-n C2C transforms over `elements` complex values (at least one line)."""
    return Case("fft", (max(1, elements // n), n), (1,), group)


def _sides(quick: bool) -> list[int]:
    return [256] if quick else [1024, 2048, 4096]


def _stack(quick: bool) -> Case:
    """Three images' rows transformed at once: the last axis of 3 x side x side."""
    side = _sides(quick)[0]
    return Case("fft", (3, side, side), (2,), "3d")


def default_cases(elements: int, quick: bool) -> list[Case]:
    """The sweep: batched 1D over `elements` complex values, 2D, 3D, real, mixed, Bluestein."""
    pow2 = [256, 4096] if quick else [64, 256, 1024, 4096, 2**16, 2**20, 2**22]
    mixed = [1000] if quick else [1000, 1536, 2187, 2401, 3125]
    blue = [4099] if quick else [4099, 65537]
    sides = _sides(quick)
    cases = [batched_case(n, elements, "1d") for n in pow2]
    cases += [batched_case(n, elements, "mixed") for n in mixed]
    cases += [batched_case(n, elements, "bluestein") for n in blue]
    cases += [Case("fft2", (s, s), (0, 1), "2d") for s in sides]
    cases += [Case("rfft2", (s, s), (0, 1), "real") for s in sides]
    cases += [Case("irfft2", (s, s // 2 + 1), (0, 1), "real") for s in sides[:1]]
    cases += [Case("fftn", (c, c, c), (0, 1, 2), "3d") for c in ([32] if quick else [128, 256])]
    cases.append(_stack(quick))
    return cases


def loop_cases(elements: int, quick: bool) -> list[Case]:
    """The cases of `bench --loop` (also looped in a full run): the sizes a render loop uses."""
    sides = _sides(quick)
    return ([Case("fft2", (s, s), (0, 1), "2d") for s in sides]
            + [Case("rfft2", (s, s), (0, 1), "real") for s in sides]
            + [_stack(quick), batched_case(4096, elements)])


def case_input(case: Case) -> np.ndarray:
    """Random data of the case's shape: real for the real-input kinds, complex otherwise; single
    precision, or double for a `double` case."""
    rng = np.random.default_rng(0)
    real, cplx = (np.float64, np.complex128) if case.double else (np.float32, np.complex64)
    if case.kind in ("rfft", "rfft2", "rfftn"):
        return rng.standard_normal(case.shape).astype(real)
    return (rng.standard_normal(case.shape) + 1j * rng.standard_normal(case.shape)).astype(cplx)
