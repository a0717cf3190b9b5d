"""Host tables against exact references (no GPU)."""
import math
from fractions import Fraction

import numpy as np
import pytest

from pyfftgl import plans as plan
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
