"""The contents of the host tables the passes name (records.TwiddleKey, StageKey, ...): computed
in float64 from exactly reduced angles and rounded once to the plan's complex dtype."""
from __future__ import annotations

import numpy as np
# numpy's own FFT, bound now: a harness that puts pyfftgl in numpy.fft's place must not make the
# host tables come from the device.
from numpy.fft import fft as _host_fft

from .abi import FOURSTEP_LO_LEN
from .records import (BluesteinKernelKey, ChirpKey, FourstepHiKey, FourstepLoKey, StageKey,
                      TwiddleKey)
from .roots import unit_roots


def twiddle_table(n: int, dtype=np.complex64) -> np.ndarray:
    """exp(-2 pi i m / n) for m < n, rounded once to `dtype`."""
    return unit_roots(np.arange(n), n).astype(dtype)


def bluestein_chirp(n: int, inverse: bool, dtype=np.complex64) -> np.ndarray:
    """w[j] = exp(-+i pi j^2 / n), j < n, with j^2 reduced mod 2n exactly in integers.

    Reducing first keeps the float64 angle below 2 pi; a float32 chirp evaluated from j^2 / n
    directly is wrong by ~1e-2 at n = 1e5.
    """
    j = np.arange(n, dtype=np.int64)
    r = (j * j) % (2 * n)  # exact: j^2 < 2^63 for every n this library plans
    return unit_roots(r, 2 * n, 1 if inverse else -1).astype(dtype)


def bluestein_kernel(n: int, m: int, inverse: bool, dtype=np.complex64) -> np.ndarray:
    """The spectrum of the convolution kernel conj(w[j]) (j in -(n-1)..n-1, wrapped mod m)."""
    w = bluestein_chirp(n, inverse, np.complex128)
    c = np.zeros(m, np.complex128)
    c[:n] = np.conj(w)
    c[m - n + 1:] = np.conj(w[1:][::-1])
    return _host_fft(c).astype(dtype)


def build_table(key, dtype=np.complex64) -> np.ndarray:
    """The contents of a table named by a pass (a key of records), computed in float64 and
    rounded once to `dtype` (complex64, or complex128 for double-precision plans)."""
    if isinstance(key, TwiddleKey):
        return twiddle_table(key.n, dtype)
    if isinstance(key, StageKey):  # W_{r ns}^(r k) at (r - 1) ns + k, r < radix, k < ns
        rk = np.arange(1, key.radix, dtype=np.int64)[:, None] * np.arange(key.ns, dtype=np.int64)
        return unit_roots(rk.ravel(), key.radix * key.ns).astype(dtype)
    if isinstance(key, (FourstepLoKey, FourstepHiKey)):
        # W_n^(d k) = hi[d, k // L] * lo[d, k % L] for line digits d < lines, k < length;
        # digit-fastest tables (StockhamPass.digit_fastest) are stored transposed, [k][d]
        ln = FOURSTEP_LO_LEN
        k = (np.arange(ln, dtype=np.int64) if isinstance(key, FourstepLoKey)
             else ln * np.arange(-(-key.length // ln), dtype=np.int64))
        m = (np.arange(key.lines, dtype=np.int64)[:, None] * k) % key.n  # exact, then one rounding
        m = m.T if key.digit_fastest else m
        return unit_roots(m.ravel(), key.n).astype(dtype)
    if isinstance(key, ChirpKey):
        return bluestein_chirp(key.n, key.inverse, dtype)
    if isinstance(key, BluesteinKernelKey):
        return bluestein_kernel(key.n, key.m, key.inverse, dtype)
    raise KeyError(key)
