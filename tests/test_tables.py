"""Host tables against exact references (no GPU)."""
import math
from fractions import Fraction

import numpy as np
import pytest

from pyfftgl import planner as plan
from pyfftgl.planner import FourstepHiKey, FourstepLoKey, StageKey


def exact_chirp(n, j, inverse=False):
    """exp(-+i pi j^2 / n) from the exact reduction of j^2 / n modulo 2 (a Fraction)."""
    turns = Fraction(j * j, n) % 2  # exact
    angle = math.pi * float(turns)  # one rounding of a value in [0, 2 pi)
    s = 1 if inverse else -1
    return complex(math.cos(angle), s * math.sin(angle))


def ulp32(x):
    return np.spacing(np.float32(abs(x)))


@pytest.mark.parametrize("n", [7, 1000, 4099, 100003, 2**20 + 7])
@pytest.mark.parametrize("inverse", [False, True])
def test_chirp_within_one_float32_ulp(n, inverse):
    w = plan.bluestein_chirp(n, inverse)
    rng = np.random.default_rng(n)
    for j in list(range(min(n, 50))) + list(rng.integers(0, n, 200)) + [n - 1]:
        ref = exact_chirp(n, int(j), inverse)
        assert abs(w[j].real - ref.real) <= ulp32(ref.real), (n, j)
        assert abs(w[j].imag - ref.imag) <= ulp32(ref.imag), (n, j)


def test_naive_float32_chirp_would_fail():
    # The reason for the integer reduction: computed in float32 from j^2 / n the chirp is off by
    # about 1e-2 at n = 1e5, which this check would catch.
    n = 100003
    j = np.arange(n, dtype=np.float32)
    naive = np.exp(-1j * (np.float32(np.pi) * j * j / np.float32(n)).astype(np.float32))
    err = np.max(np.abs(naive - plan.bluestein_chirp(n, False)))
    assert err > 1e-3


def test_twiddle_and_fourstep_tables():
    n = 1 << 20
    tw = plan.twiddle_table(4096)
    m = np.arange(4096)
    assert np.max(np.abs(tw - np.exp(-2j * np.pi * m / 4096))) < 1e-7
    # a stage's table: W_{16 * 64}^(r k) at (r - 1) * 64 + k
    st = plan.build_table(StageKey(16, 64)).reshape(15, 64)
    r, k = np.arange(1, 16)[:, None], np.arange(64)
    assert np.max(np.abs(st - np.exp(-2j * np.pi * r * k / 1024))) < 1e-7
    # the four-step twiddle W_n^(d k) of lines d < 1024 and outputs k < 1000, from two halves
    lines, length = 1024, 1000
    lo = plan.build_table(FourstepLoKey(n, lines, False)).reshape(lines, 32)
    hi = plan.build_table(FourstepHiKey(n, lines, False, length)).reshape(lines, -(-length // 32))
    rng = np.random.default_rng(0)
    d, k = rng.integers(0, lines, 1000), rng.integers(0, length, 1000)
    approx = hi[d, k // 32].astype(np.complex128) * lo[d, k % 32]
    assert np.max(np.abs(approx - np.exp(-2j * np.pi * (d * k) / n))) < 2e-7
    # digit-fastest: the same values stored [k][d]
    lo_t = plan.build_table(FourstepLoKey(n, lines, True)).reshape(32, lines)
    hi_t = plan.build_table(FourstepHiKey(n, lines, True, length)).reshape(-1, lines)
    assert np.array_equal(lo_t, lo.T) and np.array_equal(hi_t, hi.T)


def test_bluestein_kernel_spectrum():
    n, m = 5, 16
    k = plan.bluestein_kernel(n, m, False)
    c = np.fft.ifft(k.astype(np.complex128))
    w = np.exp(-1j * np.pi * np.arange(n) ** 2 / n)
    assert np.allclose(c[:n], np.conj(w), atol=1e-6)
    assert np.allclose(c[m - n + 1:], np.conj(w[1:][::-1]), atol=1e-6)
    assert np.allclose(c[n:m - n + 1], 0, atol=1e-6)


def exact_cos_sin(m, n, digits=40):
    """cos and sin of 2 pi m / n to `digits` digits: pi from Machin's formula and Taylor series
    in decimal, independent of any floating-point library."""
    from decimal import Decimal, getcontext
    getcontext().prec = digits + 10

    def arctan_inv(k):  # arctan(1 / k)
        x, total, term, i = Decimal(1) / k, Decimal(0), Decimal(1) / k, 1
        while term > Decimal(10) ** -(digits + 5):
            total += term / i if (i // 2) % 2 == 0 else -term / i
            term *= x * x
            i += 2
        return total
    pi = 4 * (4 * arctan_inv(5) - arctan_inv(239))
    a = 2 * pi * (Decimal(m % n) / n)
    cos, sin, term, i = Decimal(0), Decimal(0), Decimal(1), 0
    while abs(term) > Decimal(10) ** -(digits + 5):
        if i % 2 == 0:
            cos += term if (i // 2) % 2 == 0 else -term
        else:
            sin += term if (i // 2) % 2 == 0 else -term
        i += 1
        term = term * a / i
    return float(cos), float(sin)


@pytest.mark.parametrize("n", [3, 5, 8, 12, 17, 31, 1000, 4099, 2**20])
def test_unit_roots_correctly_rounded(n):
    # Double-precision plans take every table from unit_roots: each value within half a unit of
    # double of the exact root (np.exp of a float64 angle is off by up to ~4 units), and the
    # values on the axes and at the sixths exact.
    from pyfftgl.planner import unit_roots
    ms = sorted(set(range(min(n, 40))) | set(np.random.default_rng(n).integers(0, n, 40).tolist()))
    w = unit_roots(np.array(ms), n)
    for m, got in zip(ms, w):
        c, s = exact_cos_sin(m, n)
        # half a unit of the exact value (exact zeros come out of the series as ~1e-45)
        assert abs(got.real - c) <= np.spacing(abs(c)) / 2 * 1.0001 + 1e-40, (m, n)
        assert abs(got.imag + s) <= np.spacing(abs(s)) / 2 * 1.0001 + 1e-40, (m, n)
    if n % 12 == 0:
        w = unit_roots(np.array([0, n // 4, n // 2, 3 * n // 4, n // 6, n // 3]), n)
        assert list(w[:4]) == [1, -1j, -1, 1j]
        assert w[4].real == 0.5 and w[5].real == -0.5
