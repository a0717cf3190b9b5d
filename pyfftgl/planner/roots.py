"""Roots of unity for the kernels' tables, correctly rounded (to within half a unit of double).

exp(-2 pi i m / n) evaluated as np.exp of a float64 angle is wrong by up to a few units of double
(the angle's own rounding, then the library's); double-precision plans then lose those units in
every stage. Here m is reduced exactly to the first octant in integers (so 1, -1, i, 0.5 come out
exact) and the cosine and sine are taken there in extended precision."""
from __future__ import annotations

import numpy as np

_PI = np.longdouble("3.14159265358979323846264338327950288")


def unit_roots(m, n: int, sign: int = -1) -> np.ndarray:
    """exp(sign 2 pi i m / n) as complex128 for integer m (any shape, any sign)."""
    m = np.asarray(m, np.int64) % n
    quarter, rem = np.divmod(4 * m, n)          # angle = (quarter + rem / n) pi / 2
    flip = 2 * rem > n                          # past pi / 4 in the quarter: use its complement
    u = np.where(flip, n - rem, rem).astype(np.longdouble)
    phi = (_PI / 2) * u / n
    c, s = np.cos(phi), np.sin(phi)
    c, s = np.where(flip, s, c), np.where(flip, c, s)
    cos = np.choose(quarter, [c, -s, -c, s]).astype(np.float64)
    sin = np.choose(quarter, [s, c, -s, -c]).astype(np.float64)
    return cos + (1j * sign) * sin
