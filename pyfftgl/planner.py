"""Transform -> list of passes. Pure Python: no GPU, no backend imports beyond the Limits record.

A pass is one compute dispatch (possibly split into several for workgroup-count limits) that reads
every element once and writes every element once. The planner decides the factorisation of a length
into radices, their order, the workgroup shape, and how many lines a submission may hold.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from .backends.base import Limits

# Radices the Stockham kernel has butterflies for. 8 and 4 are preferred for powers of two
# (fewer stages = fewer trips through shared memory); the odd primes use a generic small DFT.
RADICES = (2, 3, 4, 5, 7, 8, 11, 13)
_ODD_PRIMES = (3, 5, 7, 11, 13)
# Invocations per workgroup we aim for: enough to hide latency, small enough for every driver.
TARGET_INVOCATIONS = 256
COMPLEX64_BYTES = 8


def prime_factors(n: int) -> dict[int, int]:
    """{prime: exponent} of n >= 1."""
    out: dict[int, int] = {}
    p = 2
    while p * p <= n:
        while n % p == 0:
            out[p] = out.get(p, 0) + 1
            n //= p
        p += 1 if p == 2 else 2
    if n > 1:
        out[n] = out.get(n, 0) + 1
    return out


def radices_for(n: int) -> tuple[int, ...] | None:
    """The radix sequence for a length n, or None when n has a prime factor the kernel lacks.

    Powers of two become radix-4 stages plus at most one radix-8 or radix-2 stage (a 2^k with odd k
    takes one 8 when k >= 3, so no radix-2 stage is ever needed beyond n = 2). Odd radices come
    first: their generic butterflies then run while the stride is 1 and need no twiddles.
    """
    if n < 1:
        raise ValueError(f"length must be >= 1, got {n}")
    factors = prime_factors(n)
    if any(p not in (2,) + _ODD_PRIMES for p in factors):
        return None
    odd = [p for p in _ODD_PRIMES for _ in range(factors.get(p, 0))]
    k = factors.get(2, 0)
    if k == 0:
        two: list[int] = []
    elif k == 1:
        two = [2]
    elif k % 2 == 0:
        two = [4] * (k // 2)
    else:
        two = [8] + [4] * ((k - 3) // 2)
    return tuple(odd + two)


def float_literal(x: float) -> str:
    """A GLSL float literal that rounds to the same float32 as x."""
    return f"{float(x):.9e}"


def norm_scale(n: int, norm: str, inverse: bool) -> float:
    """The factor applied to the output of a length-n transform under numpy's `norm`."""
    if norm == "ortho":
        return 1.0 / math.sqrt(n)
    if (norm == "backward") == inverse:  # backward scales the inverse, forward the forward
        return 1.0 / n
    return 1.0


@dataclass(frozen=True)
class StockhamPass:
    """All Stockham stages of `lines` lines of length n in one dispatch, through shared memory."""

    n: int
    radices: tuple[int, ...]
    threads: int  # invocations per line
    lines: int  # lines per workgroup
    inverse: bool
    scale: float

    @property
    def strides(self) -> tuple[int, ...]:
        """Ns of each stage: the product of the radices before it."""
        out, ns = [], 1
        for r in self.radices:
            out.append(ns)
            ns *= r
        return tuple(out)

    @property
    def butterflies_per_thread(self) -> int:
        return max((-(-(self.n // r) // self.threads) for r in self.radices), default=1)

    @property
    def shared_bytes(self) -> int:
        return self.lines * self.n * COMPLEX64_BYTES if len(self.radices) > 1 else 0

    @property
    def invocations(self) -> int:
        return self.threads * self.lines

    def defines(self) -> dict[str, object]:
        """The preamble of stockham.comp for this pass."""
        stages = " ".join(
            f"STAGE({r}u, {ns}u, {str(i == 0).lower()}, {str(i == len(self.radices) - 1).lower()})"
            for i, (r, ns) in enumerate(zip(self.radices, self.strides)))
        return {
            "N": f"{self.n}u",
            "NUM_STAGES": len(self.radices),
            "THREADS": self.threads,
            "LINES": self.lines,
            "MAX_RADIX": max(self.radices, default=1),
            "BUTTERFLIES": self.butterflies_per_thread,
            "INVERSE": int(self.inverse),
            "SCALE": float_literal(self.scale),
            "FFT_STAGES": stages,
        }

    def groups(self, batch: int) -> int:
        return -(-batch // self.lines)


@dataclass(frozen=True)
class FFTPlanSpec:
    """A batched 1D complex transform: `batch` contiguous lines of length n."""

    n: int
    batch: int
    inverse: bool
    passes: tuple[StockhamPass, ...]
    chunk_lines: int  # lines per submission, bounded by the device's largest storage buffer
    twiddle_n: int = field(default=0)  # length of the twiddle table the passes index (0: none)

    @property
    def chunks(self) -> int:
        return -(-self.batch // self.chunk_lines)


def stockham_pass(n: int, inverse: bool, scale: float, limits: Limits) -> StockhamPass | None:
    """The one-dispatch pass for length n, or None if n does not fit one workgroup here."""
    radices = radices_for(n)
    if radices is None:
        return None
    cap = min(TARGET_INVOCATIONS, limits.max_invocations, limits.max_group_size[0])
    # One butterfly of the largest radix per invocation per stage, unless that is more than the cap.
    threads = max(1, min(n // max(radices, default=1), cap))
    if n * COMPLEX64_BYTES > limits.max_shared_bytes and len(radices) > 1:
        return None
    lines = max(1, TARGET_INVOCATIONS // threads)
    lines = min(lines, limits.max_group_size[1], max(1, limits.max_invocations // threads))
    if len(radices) > 1:
        lines = min(lines, max(1, limits.max_shared_bytes // (n * COMPLEX64_BYTES)))
    p = StockhamPass(n, radices, threads, lines, inverse, scale)
    # Registers per invocation stay bounded: beyond ~32 complex values the compiler spills.
    if p.butterflies_per_thread * max(radices, default=1) > 64:
        return None
    return p


def plan_fft(n: int, batch: int, inverse: bool, norm: str, limits: Limits) -> FFTPlanSpec:
    """Plan a batched complex-to-complex transform of `batch` lines of length n."""
    if n < 1:
        raise ValueError(f"Invalid number of FFT data points ({n}) specified.")
    scale = norm_scale(n, norm, inverse)
    p = stockham_pass(n, inverse, scale, limits)
    if p is None:
        raise NotImplementedError(
            f"pyfftgl does not yet transform length {n} on this device: one-dispatch lengths are "
            f"products of {RADICES} up to {limits.max_shared_bytes // COMPLEX64_BYTES} points")
    line_bytes = n * COMPLEX64_BYTES
    chunk = max(1, min(batch, limits.max_buffer_bytes // line_bytes))
    return FFTPlanSpec(n, batch, inverse, (p,), chunk, twiddle_n=n if p.n > 1 else 0)


def tighter(device: Limits, wanted: Limits | None) -> Limits:
    """The smaller of each limit: a plan may assume a smaller device than it runs on."""
    if wanted is None:
        return device
    def pick(a, b):
        return tuple(map(min, a, b)) if isinstance(a, tuple) else min(a, b)
    return Limits(**{f: pick(getattr(device, f), getattr(wanted, f))
                     for f in Limits.__dataclass_fields__})


def split_groups(groups: int, max_count: tuple[int, int, int]) -> list[tuple[int, int, int]]:
    """Cover `groups` workgroups with (base, gx, gy) dispatches inside the device's count limits.

    Each dispatch runs a gx-by-gy grid; the kernel numbers its workgroups base + x + y * gx and
    skips those >= groups, so nothing is ever truncated silently.
    """
    gx_max, gy_max = max_count[0], max_count[1]
    out, base = [], 0
    while base < groups:
        left = groups - base
        gx = min(left, gx_max)
        gy = min(-(-left // gx), gy_max)
        out.append((base, gx, gy))
        base += gx * gy
    return out
