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
# The uint32 push constants of stockham.comp, in order.
PUSH_NAMES = ("lines_total", "group_base", "in_len", "in_batch", "out_len", "out_batch")
# Lines per workgroup in strided passes: 4 complex64 = 32 bytes, one memory sector per access.
TILE_LINES = 4
# Complex values an invocation keeps in registers: aim for REGISTER_TARGET, never above MAX.
REGISTER_TARGET = 32
MAX_REGISTERS = 64


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
class Layout:
    """Where a pass finds (or puts) its lines in a buffer.

    Line l = d0 + D0 * (d1 + D1 * b); element i of it is at b * batch + s0 * d0 + s1 * d1 + e * i.
    `length` bounds the within-line offset (reads beyond are zeros, writes beyond are dropped).
    """

    batch: int
    s0: int = 0
    s1: int = 0
    e: int = 1
    length: int | None = None


@dataclass(frozen=True)
class StockhamPass:
    """All Stockham stages of `lines` lines of length n per workgroup, in one dispatch."""

    n: int
    radices: tuple[int, ...]
    threads: int  # invocations per line
    lines: int  # lines per workgroup
    inverse: bool
    scale: float
    line_dims: tuple[int, int] = (1, 1)  # D0, D1; the batch index is the rest
    src: Layout | None = None  # None: contiguous lines of length n
    dst: Layout | None = None
    load_tiled: bool = False  # coalesce strided reads through shared memory
    store_tiled: bool = False
    fourstep_n: int = 0  # fused twiddle exp(-+2 pi i d0 k / fourstep_n) on output k of line d0
    pre_mul: tuple | None = None  # table multiplying input at its within-line offset
    post_mul: tuple | None = None  # table multiplying output at its within-line offset
    src_buf: str = "in"
    dst_buf: str = "out"

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
        return _butterflies(self.n, self.radices, self.threads)

    @property
    def uses_shared(self) -> bool:
        return len(self.radices) > 1 or self.load_tiled or self.store_tiled

    @property
    def shared_bytes(self) -> int:
        return self.lines * self.n * COMPLEX64_BYTES if self.uses_shared else 0

    @property
    def invocations(self) -> int:
        return self.threads * self.lines

    def tables(self) -> list[tuple]:
        """The host tables this pass reads (see plan.build_table)."""
        out = [("twiddle", self.n)] if len(self.radices) > 1 else []
        if self.fourstep_n:
            split = fourstep_split(self.fourstep_n)
            out += [("fourstep_lo", self.fourstep_n, split), ("fourstep_hi", self.fourstep_n, split)]
        out += [t for t in (self.pre_mul, self.post_mul) if t is not None]
        return out

    def defines(self, offsets: dict | None = None) -> dict[str, object]:
        """The preamble of stockham.comp; `offsets` maps each of self.tables() to its offset."""
        offsets = offsets or {}
        stages = " ".join(
            f"STAGE({r}u, {ns}u, {str(i == 0).lower()}, {str(i == len(self.radices) - 1).lower()})"
            for i, (r, ns) in enumerate(zip(self.radices, self.strides)))
        d = {
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
        if len(self.radices) > 1:
            d["TW_OFFSET"] = f"{offsets.get(('twiddle', self.n), 0)}u"
        if self.line_dims != (1, 1):
            d["LINE_D0"], d["LINE_D1"] = (f"{x}u" for x in self.line_dims)
        for prefix, lay in (("IN", self.src), ("OUT", self.dst)):
            if lay is None:
                continue
            d.update({f"{prefix}_S0": f"{lay.s0}u", f"{prefix}_S1": f"{lay.s1}u",
                      f"{prefix}_E": f"{lay.e}u"})
            if lay.length is None:
                d[f"{prefix}_BATCH"] = f"{lay.batch}u"
            else:
                # A bounded line (Bluestein's input and output): its length and batch stride
                # are push constants, so every n with the same convolution length shares code.
                d[f"{prefix}_DYNAMIC"] = 1
        d["LOAD_TILED"], d["STORE_TILED"] = int(self.load_tiled), int(self.store_tiled)
        if self.fourstep_n:
            split = fourstep_split(self.fourstep_n)
            d["FOURSTEP_TW_N"] = f"{self.fourstep_n}u"
            d["FOURSTEP_SPLIT"] = f"{split}u"
            d["FOURSTEP_LO"] = f"{offsets[('fourstep_lo', self.fourstep_n, split)]}u"
            d["FOURSTEP_HI"] = f"{offsets[('fourstep_hi', self.fourstep_n, split)]}u"
        if self.pre_mul is not None:
            d["PRE_MUL"] = f"{offsets[self.pre_mul]}u"
        if self.post_mul is not None:
            d["POST_MUL"] = f"{offsets[self.post_mul]}u"
        return d

    def push(self, batch: int, group_base: int = 0) -> list[int]:
        """The push constants (see PUSH_NAMES) of a dispatch covering `batch` batch lines."""
        src = self.src or Layout(self.n)
        dst = self.dst or Layout(self.n)
        return [self.line_count(batch), group_base, src.length or 0, src.batch,
                dst.length or 0, dst.batch]

    def line_count(self, batch: int) -> int:
        return batch * self.line_dims[0] * self.line_dims[1]

    def groups(self, batch: int) -> int:
        return -(-self.line_count(batch) // self.lines)


def fourstep_split(n: int) -> int:
    """The low-table length of a two-level twiddle table for W_n: about sqrt(n)."""
    return 1 << max(0, (n - 1).bit_length() + 1) // 2


@dataclass(frozen=True)
class FFTPlanSpec:
    """A batched 1D complex transform: `batch` contiguous lines of length n, as a list of passes.

    `buffers` gives the complex elements per batch line of every buffer the passes name
    ("in" and "out" are the transform's input and output).
    """

    n: int
    batch: int
    inverse: bool
    passes: tuple[StockhamPass, ...]
    chunk_lines: int  # lines per submission, bounded by the device's largest storage buffer
    algorithm: str = "stockham"  # "stockham", "four-step" or "bluestein"
    buffers: tuple[tuple[str, int], ...] = ()
    conv_n: int = 0  # Bluestein's convolution length

    @property
    def chunks(self) -> int:
        return -(-self.batch // self.chunk_lines)

    def tables(self) -> list[tuple]:
        """Every table the passes read, the chirp last: then each other table's offset depends
        on the convolution length alone, and the programs of equal-length plans are equal."""
        seen = []
        for p in self.passes:
            seen += [t for t in p.tables() if t not in seen]
        return sorted(seen, key=lambda t: t[0] == "chirp")


def _butterflies(n: int, radices, threads: int) -> int:
    return max((-(-(n // r) // threads) for r in radices), default=1)


def _workgroup(n: int, radices, limits: Limits, lines_wanted: int | None) -> tuple[int, int]:
    """(threads per line, lines per workgroup) for a line of length n."""
    cap = min(TARGET_INVOCATIONS, limits.max_invocations, limits.max_group_size[0])
    rmax = max(radices, default=1)
    threads = max(1, min(n // rmax, cap))
    # Small radices after a large one leave each invocation many butterflies in registers sized
    # for the large radix; more invocations keep that under REGISTER_TARGET complex values.
    while threads < cap and _butterflies(n, radices, threads) * rmax > REGISTER_TARGET:
        threads = min(cap, threads * 2)
    if lines_wanted is None:
        lines = max(1, TARGET_INVOCATIONS // threads)
    else:
        lines = lines_wanted
        threads = max(1, min(threads, limits.max_invocations // lines))
    lines = min(lines, limits.max_group_size[1], max(1, limits.max_invocations // threads))
    if len(radices) > 1 or lines_wanted is not None:
        lines = min(lines, max(1, limits.max_shared_bytes // (n * COMPLEX64_BYTES)))
    return threads, lines


def stockham_pass(n: int, inverse: bool, scale: float, limits: Limits, *,
                  tile_lines: int | None = None, **kw) -> StockhamPass | None:
    """The one-dispatch pass for length n, or None if n does not fit one workgroup here.

    tile_lines: a pass with strided (tiled) accesses needs that many lines per workgroup, all
    in shared memory at once.
    """
    radices = radices_for(n)
    if radices is None:
        return None
    need = n * COMPLEX64_BYTES * (tile_lines or 1)
    if need > limits.max_shared_bytes and (len(radices) > 1 or tile_lines):
        return None
    threads, lines = _workgroup(n, radices, limits, tile_lines)
    p = StockhamPass(n, radices, threads, lines, inverse, scale, **kw)
    # Registers per invocation stay bounded: beyond ~64 complex values the compiler spills.
    if p.butterflies_per_thread * max(radices, default=1) > MAX_REGISTERS:
        return None
    return p


def _fast_factors(n: int, limits: Limits) -> list[int] | None:
    """n as 1 to 3 factors that each run as a tiled one-dispatch pass, balanced; None if none."""
    if stockham_pass(n, False, 1.0, limits) is not None:
        return [n]
    if radices_for(n) is None:
        return None
    fmax = limits.max_shared_bytes // (COMPLEX64_BYTES * TILE_LINES)
    ok = [d for d in range(2, min(n, fmax) + 1) if n % d == 0 and
          stockham_pass(d, False, 1.0, limits, tile_lines=TILE_LINES) is not None]
    best = None
    for a in ok:
        if n // a in ok:
            cand = [a, n // a]
            if best is None or max(cand) < max(best):
                best = cand
    if best:
        return best
    for a in ok:
        for b in ok:
            if (n // a) % b == 0 and (n // a // b) in ok:
                cand = [a, b, n // a // b]
                if best is None or max(cand) < max(best):
                    best = cand
    return best


def _passes(n: int, factors: list[int], inverse: bool, scale: float, limits: Limits,
            src: str, dst: str, src_layout: Layout, dst_layout: Layout, temps: list[str],
            pre_mul=None, post_mul=None) -> list[StockhamPass]:
    """The passes of a length-n transform factored as `factors` (n = F1 * F2 [* F3]).

    With n = P * Q and n = p + P q, k = kq + Q kp (Cooley-Tukey):
        X[kq + Q kp] = sum_p W_n^(p kq) W_P^(p kp) sum_q x[p + P q] W_Q^(q kq)
    the first pass does the length-Q transforms over q (stride P, tiled) times W_n^(p kq); what
    is left is a contiguous length-P transform per kq writing with stride Q, done in one pass
    (two factors) or by the same split once more (three). Only the first pass reads `src` (with
    its layout and pre-multiply) and only the last writes `dst` (with its layout, post-multiply
    and `scale`); passes in between use `temps`, contiguous lines of length n.
    """
    t = TILE_LINES
    if len(factors) == 1:
        p = stockham_pass(n, inverse, scale, limits, src=src_layout, dst=dst_layout,
                          pre_mul=pre_mul, post_mul=post_mul, src_buf=src, dst_buf=dst)
        return [p]
    src_e, src_b, src_len = src_layout.e, src_layout.batch, src_layout.length
    if len(factors) == 2:
        n1, n2 = factors
        a = stockham_pass(n2, inverse, 1.0, limits, tile_lines=t, line_dims=(n1, 1),
                          src=Layout(src_b, s0=src_e, e=n1 * src_e, length=src_len),
                          dst=Layout(n, s0=1, e=n1), load_tiled=True, store_tiled=True,
                          fourstep_n=n, pre_mul=pre_mul, src_buf=src, dst_buf=temps[0])
        b = stockham_pass(n1, inverse, scale, limits, tile_lines=t, line_dims=(n2, 1),
                          src=Layout(n, s0=n1, e=1),
                          dst=Layout(dst_layout.batch, s0=1, e=n2, length=dst_layout.length),
                          store_tiled=True, post_mul=post_mul, src_buf=temps[0], dst_buf=dst)
        return [a, b]
    n1, n2, n3 = factors
    pp = n1 * n2
    a = stockham_pass(n3, inverse, 1.0, limits, tile_lines=t, line_dims=(pp, 1),
                      src=Layout(src_b, s0=src_e, e=pp * src_e, length=src_len),
                      dst=Layout(n, s0=1, e=pp), load_tiled=True, store_tiled=True,
                      fourstep_n=n, pre_mul=pre_mul, src_buf=src, dst_buf=temps[0])
    b = stockham_pass(n2, inverse, 1.0, limits, tile_lines=t, line_dims=(n1, n3),
                      src=Layout(n, s0=1, s1=pp, e=n1), dst=Layout(n, s0=1, s1=pp, e=n1),
                      load_tiled=True, store_tiled=True, fourstep_n=pp,
                      src_buf=temps[0], dst_buf=temps[1])
    c = stockham_pass(n1, inverse, scale, limits, tile_lines=t, line_dims=(n3, n2),
                      src=Layout(n, s0=pp, s1=n1, e=1),
                      dst=Layout(dst_layout.batch, s0=1, s1=n3, e=n3 * n2, length=dst_layout.length),
                      store_tiled=True, post_mul=post_mul, src_buf=temps[1], dst_buf=dst)
    return [a, b, c]


def smooth_length(m: int, limits: Limits) -> int:
    """Bluestein's convolution length: the smallest 2^a * c >= m with c in 1, 3, 5, 7, 9.

    Mostly radix-4/8 stages with at most two odd ones: cheap butterflies, and few distinct
    lengths, so many transform lengths share the same compiled convolution programs.
    """
    best = None
    for c in (1, 3, 5, 7, 9):
        k = c
        while k < m:
            k *= 2
        if _fast_factors(k, limits) is not None and (best is None or k < best):
            best = k
    if best is None:
        raise ValueError(f"no convolution length >= {m} fits this device")
    return best


def _chunk_lines(batch: int, elements_per_line: int, limits: Limits) -> int:
    line_bytes = elements_per_line * COMPLEX64_BYTES
    if line_bytes > limits.max_buffer_bytes:
        raise ValueError(
            f"one line needs {line_bytes} bytes of device memory, more than this device's "
            f"largest storage buffer ({limits.max_buffer_bytes} bytes)")
    return max(1, min(batch, limits.max_buffer_bytes // line_bytes))


def plan_fft(n: int, batch: int, inverse: bool, norm: str, limits: Limits) -> FFTPlanSpec:
    """Plan a batched complex-to-complex transform of `batch` lines of length n."""
    if n < 1:
        raise ValueError(f"Invalid number of FFT data points ({n}) specified.")
    scale = norm_scale(n, norm, inverse)
    contiguous = Layout(n)
    factors = _fast_factors(n, limits)
    if factors is not None:
        temps = ["t0", "t1"][: len(factors) - 1]
        passes = _passes(n, factors, inverse, scale, limits, "in", "out", contiguous, contiguous,
                         temps)
        buffers = (("in", n), ("out", n)) + tuple((t, n) for t in temps)
        return FFTPlanSpec(n, batch, inverse, tuple(passes), _chunk_lines(batch, n, limits),
                           "stockham" if len(passes) == 1 else "four-step", buffers)
    # Bluestein: X[k] = w[k] sum_n (x[n] w[n]) conj(w[k - n]) with the chirp w[n] =
    # exp(-+i pi n^2 / n): a length-m circular convolution with m >= 2n - 1, computed as a
    # forward FFT (input times chirp fused into its first pass, times the kernel's spectrum fused
    # into its last) and an inverse FFT (times chirp and 1/m fused into its last pass).
    m = smooth_length(2 * n - 1, limits)
    mf = _fast_factors(m, limits)
    temps = ["t0", "t1", "t2"][: max(1, len(mf))]
    chirp = ("chirp", n, inverse)
    kernel = ("bluestein_kernel", n, m, inverse)
    fwd = _passes(m, mf, False, 1.0, limits, "in", temps[0], Layout(n, length=n), Layout(m),
                  temps[1:] + temps[:1], pre_mul=chirp, post_mul=kernel)
    last = fwd[-1].dst_buf
    rest = [t for t in temps if t != last] + [last]
    inv = _passes(m, mf, True, scale / m, limits, last, "out", Layout(m), Layout(n, length=n),
                  rest, post_mul=chirp)
    buffers = (("in", n), ("out", n)) + tuple((t, m) for t in temps)
    return FFTPlanSpec(n, batch, inverse, tuple(fwd + inv), _chunk_lines(batch, m, limits),
                       "bluestein", buffers, conv_n=m)


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
