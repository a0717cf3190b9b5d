"""Transform -> list of passes. Pure Python: no GPU, no backend imports beyond the Limits record.

A pass is one compute dispatch (possibly split into several for workgroup-count limits) that reads
every element once and writes every element once. The planner decides the factorisation of a length
into radices, their order, the workgroup shape, and how many lines a submission may hold.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

from .backends.base import Limits

# Radices the Stockham kernel has butterflies for. 8 and 4 are preferred for powers of two
# (fewer stages = fewer trips through shared memory); the odd primes use a generic small DFT,
# and their squares 9, 25, 49 two rounds of it in registers (one stage instead of two).
RADICES = (2, 3, 4, 5, 7, 8, 9, 11, 13, 16, 25, 49)
_ODD_PRIMES = (3, 5, 7, 11, 13)
_ODD_SQUARES = (9, 25, 49)
# Invocations per workgroup we aim for: enough to hide latency, small enough for every driver.
TARGET_INVOCATIONS = 256
COMPLEX64_BYTES = 8
FLOAT_BYTES = 4
# The uint32 push constants of stockham.comp, in order.
PUSH_NAMES = ("lines_total", "group_base", "in_len", "in_batch", "out_len", "out_batch")
# Lines per workgroup in strided passes: 4 complex64 = 32 bytes, one memory sector per access.
# Fewer, for more workgroups on small images, lost: the columns of fft2 1024^2 with 2 or 1 lines
# (H200 Vulkan, 256 -> 512 / 1024 workgroups): 16.1 -> 21.1 / 31.9 us, rfft2 1024^2 14.2 -> 16.2 /
# 19.7 us; GL fft2 1024^2 21.2 -> 26.2 us with 2.
TILE_LINES = 4
# A strided axis transformed in one pass takes 8 lines (64 bytes per row) where they fit in shared
# memory: H200 Vulkan, fftn 256^3 362 -> 318 us. The passes of a four-step split keep 4, but see
# FOURSTEP_TILE_LINES: all of batched 2^16's with 8 were slower (761 -> 881 us).
AXIS_TILE_LINES = 8
# The passes of a batched 1D four-step that read and write strided take 8 lines where the line is a
# power of two and 8 lines fit, and go line-fastest (see StockhamPass.line_fastest); a power-of-two
# length splits in two such factors where it can. Their rows are a power of two apart, which may
# crowd the same memory partitions; 64-byte rows halve the rows a warp touches. H200, Vulkan / GL:
# batched 2^22 1.40 -> 1.24 / 2.42 -> 2.29 ms, 2^16 0.757 -> 0.751 / 1.35 -> 1.29 ms, 8192 3-4%
# faster on both. A 384-point pass ran 25% slower with 8 lines, so other lengths keep TILE_LINES;
# three wide factors instead of two narrower ones won at 2^20 (8%) but lost at 2^19 (10%).
FOURSTEP_TILE_LINES = 8
# The strided (first) factor of a two-pass batched 1D four-step is at most this where the
# contiguous factor can take what it gives up (see _narrow_strided).
FOURSTEP_STRIDED_MAX = 512
# A row pass followed by a column pass in one dispatch (the last two axes of an N-D transform)
# hands over its rows in blocks of BLOCK_COLUMNS columns (Layout.blocked), written BLOCK_ROW_LINES
# rows per workgroup: the column pass's strided reads become runs of its lines' width (128 bytes)
# and the row pass writes runs of 64 bytes instead of whole rows. See _blocked_pair.
BLOCK_COLUMNS = 4
BLOCK_ROW_LINES = 2
# Complex values an invocation keeps in registers: aim for REGISTER_TARGET, never above MAX.
REGISTER_TARGET = 32
MAX_REGISTERS = 64
# Pad shared memory against bank conflicts unless a tuned entry says otherwise.
SH_PAD = False
# The fused real unpack goes from registers on half-length lines of this many points or more (see
# StockhamPass.unpack_in_registers).
UNPACK_REGS_MIN_N = 1000
# Four-step twiddles W^(d k) = HI[d][k / LEN] * LO[d][k % LEN]: a warp's consecutive k share d.
FOURSTEP_LO_LEN = 32
# The most stages of a strided axis taken in one untiled pass (see _untiled_axis).
UNTILED_AXIS_STAGES = 5


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

    Odd radices come first: their generic butterflies then run while the stride is 1 and need no
    twiddles. Every stage after the first is an exchange through shared memory (four barriers in
    halves), so long lines take larger radices and fewer stages, as the tuner's winners do (H200:
    2048 [4,8,8,8], 2187 [3,9,9,9], 4096 [16,16,16] on both APIs, 1536 [3,8,8,8] on GL and within
    3% of the best on Vulkan). With v = n / TARGET_INVOCATIONS values per invocation, the power
    of two 2^k goes in the fewest stages of at most 2^b values, the smaller first: b = 3 from
    v = 6, and 4 from v = 16, where radix-16 stages still give every invocation a butterfly; and
    pairs of 3 become 9 (two rounds of 3 in registers). 5 and 7 stay prime (H200 tuner: 3125
    with 25s twice as slow as five 5s on GL, though 35% faster on Vulkan, whose wisdom has it;
    2401 with 49s 3x slower on both). Shorter lines keep radix-4 stages with at most one radix-8
    or radix-2 stage (a 2^k with odd k takes one 8 when k >= 3, so no radix-2 stage is needed
    beyond n = 2), within 5% of the tuner's best for 64-512 but 128 on GL (20%). H100, untuned,
    batched over 2^24 elements, before -> after, Vulkan / GL (us): 2187 113.4 -> 95.6 / 117.2 ->
    100.4, 2304 102.1 -> 96.6 / 107.3 -> 101.6, 2592 113.7 -> 110.1 / 120.5 -> 114.0, 2880 110.1
    -> 105.9 / 114.3 -> 111.4, 3600 120.2 -> 115.8 / 130.1 -> 123.0, 4096 109.2 -> 96.7 / 119.9
    -> 102.1, 1536, 2048, 6000 1-2% faster; with radix 16 from v = 12, 3072, 3200 and 3456
    (192-216 invocations) were 3-24% slower, and from v = 16 they are as before (+-1.5%).
    """
    if n < 1:
        raise ValueError(f"length must be >= 1, got {n}")
    factors = prime_factors(n)
    if any(p not in (2,) + _ODD_PRIMES for p in factors):
        return None
    v = n / TARGET_INVOCATIONS
    b = 4 if v >= 16 else 3 if v >= 6 else 2
    threes = factors.get(3, 0)
    odd = ([3] * threes if b == 2 else [3] * (threes % 2) + [9] * (threes // 2))
    odd += [p for p in _ODD_PRIMES[1:] for _ in range(factors.get(p, 0))]
    k = factors.get(2, 0)
    if k == 0:
        two: list[int] = []
    elif b > 2:
        stages = -(-k // b)
        two = [1 << (k // stages + (i >= stages - k % stages)) for i in range(stages)]
    elif k == 1:
        two = [2]
    elif k % 2 == 0:
        two = [4] * (k // 2)
    else:
        two = [8] + [4] * ((k - 3) // 2)
    return tuple(odd + two)


def float_literal(x: float, double: bool = False) -> str:
    """A GLSL float literal that rounds to the same float32 as x; `double`: a double literal
    holding x exactly (PRECISION 64 kernels)."""
    return f"{float(x):.17e}lf" if double else f"{float(x):.9e}"


def odd_radix_tables(radices, double: bool = False) -> dict[str, str]:
    """ODD_COS / ODD_SIN (cos, sin of 2 pi m / R from float64) and ODD_OFFSET_R for the odd radices
    in use, concatenated into one table each (of double literals with `double`)."""
    odd = sorted({r for r in radices if r % 2 and r > 1})
    if not odd:
        return {}
    out, cos, sin = {}, [], []
    for r in odd:
        out[f"ODD_OFFSET_{r}"] = f"{len(cos)}u"
        cos += [math.cos(2 * math.pi * m / r) for m in range(r)]
        sin += [math.sin(2 * math.pi * m / r) for m in range(r)]
    out["ODD_COS"] = "REAL[](" + ", ".join(float_literal(c, double) for c in cos) + ")"
    out["ODD_SIN"] = "REAL[](" + ", ".join(float_literal(c, double) for c in sin) + ")"
    return out


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

    Line l = d0 + D0 * (d1 + D1 * (d2 + D2 * b)); element i of it is at address
    b * batch + s . (d0, d1, d2) + e * i (remapped where `blocked`), and has index
    idx . (d0, d1, d2) + ie * i along the transformed axis, which `length` bounds. With
    `dynamic`, the batch stride and the bound come from push constants (Bluestein's edges), so
    plans of different lengths share programs.
    """

    batch: int
    s: tuple[int, int, int] = (0, 0, 0)
    e: int = 1
    idx: tuple[int, int, int] = (0, 0, 0)
    ie: int = 1
    length: int | None = None
    dynamic: bool = False
    # (B, R, C): the buffer holds images of R rows of C elements with each row's columns in
    # blocks of B, a block's rows neighbours (BLOCKED_ADDR in common.glsl): the address above,
    # that of plain rows, remapped.
    blocked: tuple[int, int, int] | None = None

    def macros(self, prefix: str) -> dict[str, str]:
        batch = f"pc.{prefix.lower()}_batch" if self.dynamic else f"{self.batch}u"
        addr = [f"(a).batch * {batch}"] + [f"(a).d{j} * {st}u" for j, st in enumerate(self.s) if st]
        index = [f"(a).d{j} * {c}u" for j, c in enumerate(self.idx) if c]
        address = "(" + " + ".join(addr + [f"(i) * {self.e}u"]) + ")"
        if self.blocked:
            address = "BLOCKED_ADDR({}, {}u, {}u, {}u)".format(address, *self.blocked)
        out = {f"{prefix}_ADDR(a, i)": address,
               f"{prefix}_INDEX(a, i)": "(" + " + ".join(index + [f"(i) * {self.ie}u"]) + ")"}
        if self.length is not None:
            out[f"{prefix}_LEN"] = f"pc.{prefix.lower()}_len" if self.dynamic else f"{self.length}u"
        return out


@dataclass(frozen=True)
class StockhamPass:
    """All Stockham stages of `lines` lines of length n per workgroup, in one dispatch."""

    n: int
    radices: tuple[int, ...]
    threads: int  # invocations per line
    lines: int  # lines per workgroup
    inverse: bool
    scale: float
    line_dims: tuple[int, int, int] = (1, 1, 1)  # D0, D1, D2; the batch index is the rest
    src: Layout | None = None  # None: contiguous lines of length n
    dst: Layout | None = None
    load_tiled: bool = False  # coalesce strided reads through shared memory
    store_tiled: bool = False
    fourstep_n: int = 0  # fused twiddle exp(-+2 pi i d k / fourstep_n) on output k
    fourstep_digit: int = 1  # d = that digit of the line
    pre_mul: tuple | None = None  # table multiplying input by its index along the axis
    post_mul: tuple | None = None  # table multiplying output by its index along the axis
    src_buf: str = "in"
    dst_buf: str = "out"
    per_unit: int = 1  # batch lines (of the axis' layout) per chunk unit
    real_unpack: int = 0  # n: unpack the n/2+1 bins of n real samples in the store (fused)
    real_pack: int = 0  # n: pack n/2+1 bins into n/2 complex values as they are loaded (fused)
    sh_pad: bool = False  # a spare shared-memory slot every 16 values (bank conflicts)
    # The lines a warp touches side by side start on different banks (see _sh_line): set
    # unless the stagger does not fit.
    sh_stagger: bool = False
    # Strided ends go line-fastest whatever the lines: set where a vec2 tile of them does not fit
    # in shared memory and the exchanges in halves do (see stockham_pass).
    untiled: bool = False
    # The exchanges go as vec2 where halves would be taken (the fused real pack: see plan_steps).
    vec2_exchange: bool = False

    kernel = "stockham.comp"

    @property
    def strides(self) -> tuple[int, ...]:
        """Ns of each stage: the product of the radices before it."""
        out, ns = [], 1
        for r in self.radices:
            out.append(ns)
            ns *= r
        return tuple(out)

    @property
    def registers(self) -> int:
        """Complex values an invocation holds in a stage, at most (REGS in the kernel). The last
        stage of a fused real unpack takes its butterflies in pairs (stockham.comp's butterfly)."""
        regs = _registers(self.n, self.radices, self.threads)
        if self.unpack_in_registers:
            r = self.radices[-1]
            regs = max(regs, 2 * r * -(-((self.n // r + 1) // 2) // self.threads))
        return regs

    @property
    def line_fastest(self) -> bool:
        """Invocations take neighbouring lines (LINE_FASTEST in stockham.comp) instead of moving
        tiles through shared memory, where both ends of the pass are strided. H200 Vulkan: fft2
        2048^2 93 -> 77 us, 4096^2 298 -> 282 us, fftn 256^3 316 -> 298 us, rfft2 2048^2 56 ->
        48 us. Where neighbouring lines differ in the four-step digit (a batched 1D four-step),
        only with 8 lines or more per workgroup, and with the twiddle tables digit-fastest: with
        4 lines the tiles were faster (2^22 first pass 667 us tiled, 739 us line-fastest), with
        8 or more line-fastest was (that pass 509 us; Bluestein 4099's first passes 25% faster)."""
        return (self.load_tiled and self.store_tiled and not (self.real_pack or self.real_unpack)
                and (self.untiled or not self.fourstep_n or self.line_dims[0] >= self.lines
                     or self.lines >= FOURSTEP_TILE_LINES))

    @property
    def store_line_fastest(self) -> bool:
        """Only the last stage is numbered line-fastest (STORE_LINE_FASTEST in stockham.comp):
        a pass that reads contiguous lines and writes strided ones (the last pass of a batched 1D
        four-step) stores straight from registers, its inputs already in shared memory, instead
        of moving a tile through shared memory after the last stage; with no tile there, it
        exchanges in halves. H200, one process, over 2^26 elements, Vulkan: 2^18 0.791 -> 0.663
        ms (last pass 0.417 -> 0.290), 2^20 0.974 -> 0.822, 2^16 0.754 -> 0.748, 2^22 1.179 ->
        1.145, 8192 0.715 -> 0.681, Bluestein 4099 3.59 -> 2.89, 65537 5.14 -> 4.67; GL: 2^16
        1.167 -> 1.100, 2^20 1.813 -> 1.492 ms. Wider tiles for it (8 or 16 lines, sized by the
        halves) were slower for 2^18 and 2^20 and on GL, faster for 2^16 and 65537 on Vulkan."""
        return (self.store_tiled and not self.load_tiled and len(self.radices) > 1
                and not (self.real_pack or self.real_unpack))

    @property
    def digit_fastest(self) -> bool:
        """The four-step twiddle tables hold W^(d k) with the line digit d fastest, for passes
        whose neighbouring invocations take neighbouring values of d (line-fastest, fewer inner
        lines than a workgroup's): read d-major, a warp's twiddle reads scattered over as many
        rows as it had lines (line-fastest with d-major tables was 3-7% slower than tiles)."""
        return bool(self.fourstep_n) and self.line_fastest and self.line_dims[0] < self.lines

    @property
    def unpack_in_registers(self) -> bool:
        """The fused real unpack writes X[k] and X[N-k] straight from the last stage's registers,
        its butterflies taken in pairs (UNPACK_REGS in stockham.comp), on lines of
        UNPACK_REGS_MIN_N points or more: no trip through shared memory after the last stage, and
        the exchanges go in halves. Shorter lines go through shared memory, where a workgroup's
        lines are written as one run. H200, one process per variant, best of three rounds,
        Vulkan / GL: rfft2 4096^2 139.3 -> 133.0 / 172.5 -> 173.1 us (row pass 50.9 -> 45.5 /
        63.5 -> 63.6), 2048^2 44.1 -> 44.7 / 50.8 -> 53.8 (row pass 14.9 -> 14.2 / 15.4 -> 16.2);
        batched rfft over 2^26 reals, n = 2000 190.6 -> 165.9 / 281.3 -> 235.6 us, 2048 174.8 ->
        163.3 / 218.7 -> 218.2, 4096 182.8 -> 157.1 / 236.4 -> 233.9, 12000 359.6 -> 250.9 /
        518.7 -> 466.7. Not below 1000 points: rfft2 1024^2 (512) 17.3 -> 18.1 / 18.5 -> 21.4,
        n = 1024 and 256 unchanged / 8% faster on GL, n = 64 (4 invocations per line, whose
        stores no longer coalesce across lines) twice as slow."""
        return bool(self.real_unpack) and self.n >= UNPACK_REGS_MIN_N

    @property
    def sh_halves(self) -> bool:
        """The exchanges between stages move real parts, then imaginary parts, through a float
        array (SH_HALVES in stockham.comp): half the shared memory per line, two more barriers
        per exchange. Everywhere it can: not where tiles or the real unpack go through shared
        memory as vec2 (a line-fastest store, STORE_LINE_FASTEST, is no tile). H200 Vulkan,
        batched over 2^26 elements: N = 4096 0.415 -> 0.272 ms (63 -> 96% of copy; 122 -> 80
        registers), 3125 0.515 -> 0.341, 1536 0.324 -> 0.278, 2048 0.307 -> 0.281, 1024 0.299
        -> 0.288; fft2 4096^2 281 -> 235 us. Not the fused real pack's where vec2 fits
        (vec2_exchange)."""
        return (len(self.radices) > 1 and not self.tiles_in_shared and not self.vec2_exchange
                and (self.unpack_in_registers or not self.real_unpack))

    @property
    def swizzle_bits(self) -> int:
        """log2 of the blocks the exchanges permute against bank conflicts (SWZ_BITS): 16 slots
        (a row of vec2 banks), or 32 (a row of float banks) for exchanges in halves among
        invocations in line order with a line or more per warp. tools/bank_model.py counts,
        per workgroup: N = 1024 [2,8,8,8]x128 1152 -> 896 wavefronts, 2048 1024 -> 768, 4096
        1536 -> 1024, the last passes of 2^18 and 2^20 768 -> 512, 1536 -> 1024, and no pass
        of the benchmark's plans more; line-fastest passes and fewer invocations per line than
        a warp need more with 32. Measured with the line pitch of _sh_line (below)."""
        return 5 if (self.sh_halves and not self.line_fastest and self.threads >= 32
                     and self.n % 32 == 0) else 4

    @property
    def tiles_in_shared(self) -> bool:
        """Strided ends are moved as tiles through shared memory (not line-fastest)."""
        return not self.line_fastest and (
            self.load_tiled or (self.store_tiled and not self.store_line_fastest))

    @property
    def uses_shared(self) -> bool:
        """USES_SHARED in stockham.comp: exchanges between stages, tiles, or the real unpack
        from shared memory (which reads the line back even after a single stage)."""
        return (len(self.radices) > 1 or self.tiles_in_shared
                or (bool(self.real_unpack) and not self.unpack_in_registers))

    @property
    def sh_line(self) -> int:
        """Shared-memory slots per line (see SH_LINE in stockham.comp)."""
        line_order = not (self.line_fastest or self.store_line_fastest or self.tiles_in_shared)
        return _sh_line(self.n, self.lines, self.sh_pad, self.sh_stagger,
                        FLOAT_BYTES if self.sh_halves else COMPLEX64_BYTES,
                        self.threads if line_order else None)

    @property
    def shared_bytes(self) -> int:
        """The shared memory the kernel declares: a vec2 per slot, a float with sh_halves."""
        if not self.uses_shared:
            return 0
        return self.lines * self.sh_line * (FLOAT_BYTES if self.sh_halves else COMPLEX64_BYTES)

    @property
    def invocations(self) -> int:
        return self.threads * self.lines

    def stage_tables(self) -> list[tuple | None]:
        """Each stage's twiddle table (None for the first: Ns = 1 needs none)."""
        return [("stage", r, ns) if ns > 1 else None for r, ns in zip(self.radices, self.strides)]

    def fourstep_tables(self) -> tuple[tuple, tuple]:
        """The two halves of the fused four-step twiddle: (lo, hi) keys."""
        f, lines, df = self.fourstep_n, self.line_dims[self.fourstep_digit], self.digit_fastest
        return ("fourstep_lo", f, lines, df), ("fourstep_hi", f, lines, df, self.n)

    def tables(self) -> list[tuple]:
        """The host tables this pass reads (see plan.build_table)."""
        out = [t for t in self.stage_tables() if t is not None]
        if self.fourstep_n:
            out += list(self.fourstep_tables())
        out += [t for t in (self.pre_mul, self.post_mul) if t is not None]
        if self.real_unpack or self.real_pack:
            out.append(("twiddle", self.real_unpack or self.real_pack))
        return out

    def defines(self, offsets: dict | None = None) -> dict[str, object]:
        """The preamble of stockham.comp; `offsets` maps each of self.tables() to its offset."""
        offsets = offsets or {}
        stages = " ".join(
            f"STAGE({r}u, {ns}u, {self.radices[i - 1] if i else 0}u, {str(i == 0).lower()}, "
            f"{str(i == len(self.radices) - 1).lower()}, {offsets.get(t, 0) if t else 0}u)"
            for i, (r, ns, t) in enumerate(zip(self.radices, self.strides, self.stage_tables())))
        d = {
            "N": f"{self.n}u",
            "NUM_STAGES": len(self.radices),
            "THREADS": self.threads,
            "LINES": self.lines,
            "MAX_RADIX": max(self.radices, default=1),
            "REGS": self.registers,
            "INVERSE": int(self.inverse),
            "SCALE": float_literal(self.scale),
            "FFT_STAGES": stages,
        }
        d.update(odd_radix_tables(self.radices))
        d["SH_PAD"], d["SH_LINE"] = int(self.sh_pad), f"{self.sh_line}u"
        d["SH_HALVES"] = int(self.sh_halves)
        d["SWZ_BITS"] = f"{self.swizzle_bits}u"
        if self.line_dims != (1, 1, 1):
            d["LINE_D0"], d["LINE_D1"], d["LINE_D2"] = (f"{x}u" for x in self.line_dims)
        if self.src is not None:
            d.update(self.src.macros("IN"))
        if self.dst is not None:
            d.update(self.dst.macros("OUT"))
        lf = self.line_fastest
        d["LINE_FASTEST"] = int(lf)
        slf = self.store_line_fastest
        d["LOAD_TILED"] = int(self.load_tiled and not lf)
        d["STORE_TILED"] = int(self.store_tiled and not (lf or slf))
        d["STORE_LINE_FASTEST"] = int(slf)
        if self.fourstep_n:
            lo, hi = self.fourstep_tables()
            d["FOURSTEP_TW_N"] = f"{self.fourstep_n}u"
            d["FOURSTEP_LO_LEN"] = f"{FOURSTEP_LO_LEN}u"
            d["FOURSTEP_KH"] = f"{-(-self.n // FOURSTEP_LO_LEN)}u"
            d["FOURSTEP_LO"] = f"{offsets[lo]}u"
            d["FOURSTEP_HI"] = f"{offsets[hi]}u"
            d["FOURSTEP_LINE(a)"] = f"(a).d{self.fourstep_digit}"
            if self.digit_fastest:
                d["FOURSTEP_DIGITS"] = f"{lo[2]}u"
        if self.pre_mul is not None:
            d["PRE_MUL"] = f"{offsets[self.pre_mul]}u"
        if self.post_mul is not None:
            d["POST_MUL"] = f"{offsets[self.post_mul]}u"
        for key, n in (("REAL_UNPACK", self.real_unpack), ("REAL_PACK", self.real_pack)):
            if n:
                d[key] = f"{n}u"
                d["UNPACK_REGS"] = int(self.unpack_in_registers)
                d["REAL_TW"] = f"{offsets.get(('twiddle', n), 0)}u"
        return d

    def push(self, units: int, group_base: int = 0) -> list[int]:
        """The push constants (see PUSH_NAMES) of a dispatch covering `units` batch units."""
        src = self.src or Layout(self.n)
        dst = self.dst or Layout(self.n)
        return [self.line_count(units), group_base, src.length or 0, src.batch,
                dst.length or 0, dst.batch]

    def line_count(self, units: int) -> int:
        return units * self.per_unit * self.line_dims[0] * self.line_dims[1] * self.line_dims[2]

    def groups(self, units: int) -> int:
        return -(-self.line_count(units) // self.lines)


@dataclass(frozen=True)
class RealPass:
    """A step of a real transform along an axis (realfft.comp): UNPACK / PACK around a half-length
    complex FFT for even n on the innermost axis, CROP / EXTEND around a full one otherwise."""

    mode: int  # 1 unpack, 2 pack, 3 crop, 4 extend
    nreal: int
    in_axis: int
    out_axis: int
    inner: int
    scale: float
    per_unit: int  # output elements per chunk unit
    src_buf: str = "in"
    dst_buf: str = "out"

    kernel = "realfft.comp"
    GROUP = 256
    UNPACK, PACK, CROP, EXTEND = 1, 2, 3, 4
    n = property(lambda self: self.nreal)
    radices = ()
    pre_mul = post_mul = None
    fourstep_n = 0

    def tables(self) -> list[tuple]:
        return [("twiddle", self.nreal)] if self.mode in (1, 2) else []

    def defines(self, offsets: dict | None = None) -> dict[str, object]:
        d = {"MODE": self.mode, "NREAL": f"{self.nreal}u", "IN_AXIS": f"{self.in_axis}u",
             "OUT_AXIS": f"{self.out_axis}u", "INNER": f"{self.inner}u",
             "SCALE": float_literal(self.scale), "INVERSE": 0}
        if self.mode in (1, 2):
            d["TW_OFFSET"] = f"{(offsets or {}).get(('twiddle', self.nreal), 0)}u"
        return d

    def line_count(self, units: int) -> int:
        return units * self.per_unit

    def push(self, units: int, group_base: int = 0) -> list[int]:
        return [self.line_count(units), group_base, 0, 0, 0, 0]

    def groups(self, units: int) -> int:
        return -(-self.line_count(units) // self.GROUP)


def _sh_line(n: int, lines: int, pad: bool, stagger: bool, slot_bytes: int = COMPLEX64_BYTES,
             threads: int | None = None) -> int:
    """Slots per line in shared memory: n, or with padding SHI(n - 1) + 1; with `stagger`
    rounded up so that the lines a warp touches side by side start on different banks: row /
    k slots apart modulo one row of banks (row = 128 bytes: 16 vec2 slots, 32 float ones), for
    k lines per warp. Tiles and line-fastest numbering put `lines` lines in a warp (threads
    None); the line-order numbering 32 / threads, each of `threads` neighbouring slots.
    A bank model of 32-bit accesses (wavefronts per warp = the most distinct words on one bank)
    counts per workgroup, against the vec2 row's 16 / lines slots: 2^16's first pass 1792 ->
    1152, fft2 1024^2's columns 2048 -> 1024, batched 32 [8,4]x4x64 2048 -> 384, 64 [4,4,4]x16x16
    512 -> 256. With SWZ_BITS, H200 over 2^26 elements (A/B, one process per variant), Vulkan:
    2^16 0.748 -> 0.677 ms, 2^20 0.817 -> 0.767, 2^22 1.142 -> 1.048, fft2 1024^2 21.2 -> 20.3
    us, fftn 128^3 48.0 -> 44.7 us; GL 2^16 1.092 -> 1.064, 2^20 1.464 -> 1.411 ms, fft2
    4096^2 324 -> 316 us; batched 64-4096 within 2% (256 0.272 -> 0.278 ms on Vulkan)."""
    base = n + (n - 1) // 16 if pad else n
    row = 128 // slot_bytes
    per_warp = lines if threads is None else min(lines, max(1, 32 // threads))
    if not stagger or per_warp <= 1:
        return base
    want = row // min(per_warp, row)
    return base + (want - base) % row


def tiled_key(n: int) -> tuple[str, int]:
    """The key of Limits.tuned entries measured on strided (tiled) passes of length n."""
    return ("tiled", n)


def key_length(key) -> tuple[int, bool]:
    """(n, tiled) of a Limits.tuned key: n or tiled_key(n)."""
    return (key[1], True) if isinstance(key, tuple) else (key, False)


def tuned_shape(n: int, limits: Limits, tiled: bool = False):
    """The entry of limits.tuned for length n: (radices, threads, lines, pad), or None. A tiled
    pass takes the entry measured on tiled passes where there is one: the same length's best
    shape differs between contiguous lines and tiles of strided ones (H200 Vulkan: the four-step
    passes of 2^20 ran 9% faster as [16,16,4]x64 than with the contiguous 1024's [2,8,8,8]x128)."""
    keys = (tiled_key(n), n) if tiled else (n,)
    for key in keys:
        for entry in limits.tuned:
            if entry[0] == key:
                return entry[1:]
    return None


def _registers(n: int, radices, threads: int) -> int:
    """The most complex values an invocation holds in one stage: a radix-r stage gives each of
    `threads` invocations ceil(n / r / threads) butterflies of r values."""
    return max((-(-(n // r) // threads) * r for r in radices), default=1)


def _workgroup(n: int, radices, limits: Limits, lines_wanted: int | None, pad: bool,
               tuned: tuple | None = None, stagger: bool = True,
               slot_bytes: int = COMPLEX64_BYTES) -> tuple[int, int]:
    """(threads per line, lines per workgroup) for a line of length n; `tuned` = (threads,
    lines) measured on this device (lines 0: the default); `slot_bytes`: shared memory per
    slot (FLOAT_BYTES where the exchanges go in halves)."""
    cap = min(limits.max_invocations, limits.max_group_size[0])
    rmax = max(radices, default=1)
    if tuned:
        threads = max(1, min(tuned[0], cap))
    else:
        threads = max(1, min(n // rmax, TARGET_INVOCATIONS, cap))
        # Small radices after a large one leave each invocation many butterflies in registers
        # sized for the large radix; more invocations keep that under REGISTER_TARGET values.
        while (threads < min(TARGET_INVOCATIONS, cap)
               and _registers(n, radices, threads) > REGISTER_TARGET):
            threads = min(cap, threads * 2)
    if lines_wanted is not None:
        # A tile of at least lines_wanted lines, wider when the line's invocations are few: a
        # 64-point column with 16 invocations takes 16 lines, 256 invocations and 128-byte rows.
        threads = max(1, min(threads, limits.max_invocations // lines_wanted))
        lines = max(lines_wanted, TARGET_INVOCATIONS // threads)
    elif tuned and tuned[1]:
        lines = tuned[1]
    else:
        lines = max(1, TARGET_INVOCATIONS // threads)
    lines = min(lines, limits.max_group_size[1], max(1, limits.max_invocations // threads))
    if len(radices) > 1 or lines_wanted is not None:
        while lines > 1 and (lines * _sh_line(n, lines, pad, stagger, slot_bytes) * slot_bytes
                             > limits.max_shared_bytes):
            lines -= 1
    return threads, lines


def stockham_pass(n: int, inverse: bool, scale: float, limits: Limits, *,
                  tile_lines: int | None = None, halves: bool = False, **kw
                  ) -> StockhamPass | None:
    """The one-dispatch pass for length n, or None if n does not fit one workgroup here.

    tile_lines: a pass with strided (tiled) accesses needs that many lines per workgroup, all
    in shared memory at once.
    halves: where the pass exchanges in halves (StockhamPass.sh_halves), size it by that
    footprint, which holds twice the lines. Only for the strided passes of a batched 1D
    four-step: 2^20's 1024-point first pass then takes 8-line line-fastest tiles (H200 Vulkan
    1.14 -> 0.97 ms). Elsewhere it measured slower: the columns of fft2 2048^2 in one pass of
    4-line tiles (70.3 -> 74.7 us against two passes), rfft2 1024^2's columns in 8-line tiles
    (17.6 -> 18.1 us, GL 18.4 -> 20.3), 3125 with two lines per workgroup (0.345 -> 0.433 ms
    over 2^26), Bluestein 4099's 9216-point convolution in one pass each way (3.60 -> 3.77 ms,
    GL 5.31 -> 6.39; with radix-4 stages, before radices_for took larger ones). Contiguous
    lines too long for one vec2 line take halves' sizing too (_line_pass). Where even those
    lines' tiles do not fit, a pass strided at both ends may go line-fastest instead (untiled,
    see _untiled_fits).
    """
    tuned = tuned_shape(n, limits, tiled=tile_lines is not None)
    radices = tuple(tuned[0]) if tuned else radices_for(n)
    if radices is None:
        return None
    pad = bool(tuned[3]) if tuned else SH_PAD
    shape = tuned and tuned[1:3]
    # The padding, then the stagger, may be what does not fit; with `halves`, each is tried
    # with float slots first, then vec2.
    # Last, where a strided pass's tiles do not fit even so, it may go line-fastest (untiled).
    slots = (FLOAT_BYTES, COMPLEX64_BYTES) if halves else (COMPLEX64_BYTES,)
    both_strided = kw.get("load_tiled") and kw.get("store_tiled")
    untiled = (False, True) if halves and both_strided else (False,)
    fits = ((True, True),) * pad + ((False, True), (False, False))
    tries = [(pd, stagger, slot, u) for u in untiled for pd, stagger in fits for slot in slots]
    for pad, stagger, slot, u in tries:
        threads, lines = _workgroup(n, radices, limits, tile_lines, pad, shape, stagger, slot)
        p = StockhamPass(n, radices, threads, lines, inverse, scale, sh_pad=pad,
                         sh_stagger=stagger, untiled=u, **kw)
        # halves' floats only where asked for: a vec2 footprint that does not fit otherwise
        sized = max(p.shared_bytes, p.lines * p.sh_line * slot)
        if not p.uses_shared or (sized <= limits.max_shared_bytes
                                 and not (tile_lines and p.lines < tile_lines)):
            break
        shape = (threads, 0)  # the same invocations, the default lines
    else:
        return None
    # Registers per invocation stay bounded: beyond ~64 complex values the compiler spills.
    if p.registers > MAX_REGISTERS:
        return None
    return p


def _line_pass(n: int, inverse: bool, scale: float, limits: Limits, **kw) -> StockhamPass | None:
    """stockham_pass for contiguous lines, sized by their vec2 footprint; else, where not even
    one line fits that way (6144 < n <= 12288 on 48 KB), by the halves' float one: one line in
    one pass instead of a two-pass four-step. H100, batched over 2^24 elements, four-step ->
    one pass, Vulkan / GL (us): 6272 206.8 -> 148.6 / 228.5 -> 191.4, 6561 236.6 -> 176.7 /
    237.7 -> 184.0, 6912 239.6 -> 140.3 / 262.5 -> 150.2, 7168 192.5 -> 136.7 / 197.0 -> 162.3,
    7776 268.9 -> 179.4 / 284.7 -> 191.8, 8000 196.3 -> 150.9 / 199.8 -> 193.0, 8192 195.3 ->
    127.5 / 197.4 -> 163.2, 9216 245.2 -> 154.7 / 256.7 -> 159.3, 10000 195.2 -> 151.3 / 199.7
    -> 200.9, 12288 223.3 -> 135.6 / 228.5 -> 171.6, 12000 212.9 -> 200.9 / 218.9 -> 213.2; rfft
    of 16384 reals (this pass of 8192 with the fused unpack) over 2^25 reals 294.6 -> 167.0 /
    297.6 -> 190.6, irfft (the fused pack) 294.8 -> 150.6 / 296.1 -> 195.2. With radix-4 stages
    (radices_for before its larger radices) 9216 and 10000 had been 2.5-3x slower in one pass.
    Not for Bluestein's convolution FFTs (_axis_factors)."""
    p = stockham_pass(n, inverse, scale, limits, **kw)
    return p if p is not None else stockham_pass(n, inverse, scale, limits, halves=True, **kw)


@dataclass(frozen=True)
class TransformSpec:
    """Passes over a C-contiguous array of `shape` (complex64 elements).

    `units` is how many indices of axis 0 one submission holds (axis 0 is cut into chunks to fit
    the device's largest storage buffer when it is not transformed); `buffers` gives, for each
    buffer the passes name ("in", "out" and work buffers), its complex elements per unit.
    """

    shape: tuple[int, ...]
    axes: tuple[int, ...]
    inverse: bool
    passes: tuple
    units: int
    buffers: tuple[tuple[str, int], ...]
    algorithms: tuple[str, ...]  # per transformed axis: "stockham", "four-step" or "bluestein"
    conv_lengths: tuple[int, ...] = ()  # Bluestein's convolution length per axis (0: none)
    out_shape: tuple[int, ...] = ()  # complex64 elements of what is downloaded
    whole: bool = False  # one chunk unit is the whole array (axis 0 is transformed)

    @property
    def unit_count(self) -> int:
        return 1 if self.whole else self.shape[0]

    @property
    def chunks(self) -> int:
        return -(-self.unit_count // self.units)

    @property
    def algorithm(self) -> str:
        return "+".join(dict.fromkeys(self.algorithms))

    @property
    def conv_n(self) -> int:
        return max(self.conv_lengths, default=0)

    def tables(self) -> list[tuple]:
        """Every table the passes read, the chirps last: then each other table's offset depends
        on the convolution lengths alone, and equal-length plans share their programs."""
        seen = []
        for p in self.passes:
            seen += [t for t in p.tables() if t not in seen]
        return sorted(seen, key=lambda t: t[0] == "chirp")


@dataclass(frozen=True)
class AxisView:
    """An axis of a C-contiguous buffer: batch stride, element stride (= the inner extent, whose
    elements are neighbours), and an optional bound on the index along the axis."""

    batch: int
    e: int
    length: int | None = None
    dynamic: bool = False

    def layout(self, s, e_mult, idx, ie) -> Layout:
        return Layout(self.batch, tuple(s), self.e * e_mult, tuple(idx), ie, self.length,
                      self.dynamic)


def _fast_factors(n: int, limits: Limits, tiled: bool = False, halves: bool = True
                  ) -> list[int] | None:
    """n as 1 to 3 factors that each run as a one-dispatch pass, balanced; None if none.

    `tiled`: the single pass must move whole tiles of lines through shared memory (a strided axis).
    `halves`: contiguous lines may take one pass where only one line in halves fits (_line_pass).
    """
    one = (stockham_pass(n, False, 1.0, limits, tile_lines=TILE_LINES) if tiled
           else (_line_pass if halves else stockham_pass)(n, False, 1.0, limits))
    if one is not None:
        return [n]
    if radices_for(n) is None:
        return None
    fmax = limits.max_shared_bytes // (COMPLEX64_BYTES * TILE_LINES)
    ok = [d for d in range(2, min(n, fmax) + 1) if n % d == 0 and
          stockham_pass(d, False, 1.0, limits, tile_lines=TILE_LINES) is not None]
    if not tiled and n & (n - 1) == 0:
        # Two factors that take FOURSTEP_TILE_LINES, if n has them; else two whose strided pass
        # fits only line-fastest (untiled), before three passes.
        powers = [1 << k for k in range(1, n.bit_length() - 1)]  # n's factors but 1 and n
        best = (_balanced(n, [d for d in ok if _wide_tiles(d, limits)], triples=False)
                or _balanced(n, [d for d in powers if _untiled_fits(d, limits)], triples=False))
        if best:
            return _narrow_strided(best, limits)
    return _balanced(n, ok)


def _narrow_strided(factors: list[int], limits: Limits) -> list[int]:
    """A balanced power-of-two split [contiguous, strided] (_chain's n1, n2) with factors of 2
    moved from the strided pass to the contiguous one while the strided factor is above
    FOURSTEP_STRIDED_MAX, its 8-line tiles fit and the contiguous pass still takes TILE_LINES
    lines in halves: a strided pass of 1024 points or more costs more than the contiguous
    pass gains. H100, over 2^26 elements, one process, best of two rounds, strided x contiguous,
    Vulkan / GL (us): 2^19 1024 x 512 -> 512 x 1024 840 -> 791 / 901 -> 830; 2^20 1024 x 1024 ->
    512 x 2048 857 -> 851 / 923 -> 871; 2^21 2048 (untiled) x 1024 -> 1024 x 2048 994 -> 966 /
    1018 -> 1034. Not further down: 2^16 256 x 256 -> 128 x 512 761 -> 761 / 771 -> 782, 2^17
    512 x 256 -> 256 x 512 765 -> 787 / 783 -> 798, 2^18 512 x 512 -> 256 x 1024 773 -> 797 /
    800 -> 819 (2^22 keeps 2048 x 2048: 4096 contiguous points take 2 lines, slower)."""
    c, s = factors
    while (s > FOURSTEP_STRIDED_MAX and _wide_tiles(s // 2, limits)
           and stockham_pass(2 * c, False, 1.0, limits, tile_lines=TILE_LINES, halves=True,
                             store_tiled=True) is not None):
        c, s = 2 * c, s // 2
    return [c, s]


def _wide_tiles(n: int, limits: Limits) -> bool:
    """Whether a strided pass of length n in a batched 1D four-step takes FOURSTEP_TILE_LINES."""
    return n & (n - 1) == 0 and stockham_pass(
        n, False, 1.0, limits, tile_lines=FOURSTEP_TILE_LINES, halves=True) is not None


def _untiled_fits(n: int, limits: Limits) -> bool:
    """Whether a power of two n runs as both passes of a batched 1D four-step, with
    TILE_LINES lines exchanging in halves (the strided one untiled, if it must). This splits
    2^21 and 2^22 in two passes of 2048 (and 1024) on 48 KB of shared memory, instead of three
    of 128-256. H200, over 2^26 elements, with the tuned tiled:2048 shape [16,16,8]x128, Vulkan /
    GL: 2^22 1.060 -> 0.966 / 1.056 -> 0.969 ms, 2^21 1.030 -> 0.881 / 1.015 -> 0.925 ms. The
    untiled strided pass runs at about half of copy (0.56 ms of 0.97), so the split pays only
    with a good shape: with the contiguous 2048's [4,8,8,8]x256, 2^22 was 1.079 ms. Putting the
    wide-tiled 1024 on the strided side of 2^21 (2048 contiguous) was no faster."""
    return all(stockham_pass(n, False, 1.0, limits, tile_lines=TILE_LINES, halves=True,
                             load_tiled=load, store_tiled=True, fourstep_n=2 * n,
                             line_dims=(1, 2, 1)) is not None for load in (True, False))


def _untiled_axis(n: int, inner: int, limits: Limits) -> bool:
    """Whether a strided axis of length n (inner extent `inner`) whose tiles do not fit runs in
    one pass anyway, line-fastest with TILE_LINES lines exchanging in halves, instead of a
    two-pass four-step: lengths in (1536, 3072] with 48 KB of shared memory. The lines' rows
    then move in runs of TILE_LINES values (32 bytes), which must not straddle the GPU's
    32-byte sectors, so only where TILE_LINES divides `inner`; in at most UNTILED_AXIS_STAGES
    stages (each exchange in halves costs four barriers); and with its lines staggered across
    the banks (3072's exactly fill 48 KB unstaggered: in 5 stages, 45.4 -> 53.7 / 49.2 -> 54.9
    us, and in 4 with radix 16, 48.4 / 51.5, where larger radices took 2304 38.5 -> 27.7 / 42.3
    -> 28.7, 2592 42.5 -> 32.7, 2880 48.1 -> 36.1, 1728 29.6 -> 19.0 on Vulkan). H100, one
    process, the FFT along axis 0 of (n, W), Vulkan / GL: n = 2048, W = 512 13.4 -> 10.4 / 17.1
    -> 12.5 us, 1024 27.5 -> 20.2 / 31.9 -> 24.3, 2048 51.7 -> 42.9 / 57.2 -> 48.6, 4096 100.2
    -> 92.6 / 107.1 -> 88.0, 8192 195 -> 188 / 205 -> 185; fft2 2048^2 77.4 -> 68.7 / 88.0 ->
    80.1; W = 1024: n = 1600 27.1 -> 18.8 / 33.2 -> 20.0, 2000 33.8 -> 23.7 / 38.5 -> 25.4,
    2187 36.7 -> 25.2 / 40.1 -> 26.2, 2401 33.3 -> 31.2 / 39.2 -> 32.9, 3000 49.0 -> 40.6 /
    53.2 -> 42.8, but 3072 in 6 stages 45.7 -> 59.0 / 49.7 -> 60.7; W = 4096: 2000 121.6 ->
    110.5 / 122.6 -> 109.5, 2401 120.4 -> 118.7 / 125.9 -> 124.4; Bluestein along axis 0 of
    (1009, W), whose two convolution FFTs of 2048 take it: W = 256 21.0 -> 19.5 / 28.9 -> 24.2,
    1024 48.6 -> 43.2 / 58.8 -> 54.3, 4096 194 -> 171 / 209 -> 189. With an odd `inner`
    (rfft2 2048^2's 1025 columns) it was slower (44.3 -> 46.5 us), and 4096 with the 2 lines
    that fit much slower (fft2 4096^2 292 -> 391 us)."""
    if inner <= 1 or inner % TILE_LINES:
        return False
    p = stockham_pass(n, False, 1.0, limits, tile_lines=TILE_LINES, halves=True,
                      line_dims=(inner, 1, 1), load_tiled=True, store_tiled=True)
    return p is not None and p.sh_stagger and len(p.radices) <= UNTILED_AXIS_STAGES


def _axis_factors(n: int, inner: int, limits: Limits, conv: bool = False) -> list[int] | None:
    """_fast_factors for a length-n axis of inner extent `inner`, in one pass where
    _untiled_axis takes it (Bluestein's convolution FFTs along a strided axis too). `conv`:
    Bluestein's convolution FFTs, whose contiguous lines do not take _line_pass's one line in
    halves (the chirp and the kernel's spectrum multiplied in the same pass as the zero-padded
    load): H100, over 2^24 elements, four-step -> one pass, Vulkan / GL, 4099 (9216 points)
    910 -> 906 / 922 -> 1057 us, 5003 (10240) 719 -> 865 / 725 -> 995."""
    factors = _fast_factors(n, limits, inner > 1, halves=not conv)
    if factors is not None and len(factors) > 1 and _untiled_axis(n, inner, limits):
        return [n]
    return factors


def _balanced(n: int, ok: list[int], triples: bool = True) -> list[int] | None:
    """n as two, else three, factors from `ok`, the largest as small as can be; None if none."""
    best = None
    for a in ok:
        if n // a in ok:
            cand = [a, n // a]
            if best is None or max(cand) < max(best):
                best = cand
    if best or not triples:
        return best
    for a in ok:
        for b in ok:
            if (n // a) % b == 0 and (n // a // b) in ok:
                cand = [a, b, n // a // b]
                if best is None or max(cand) < max(best):
                    best = cand
    return best


def _tiled_pass(n: int, inverse: bool, scale: float, limits: Limits, tiles: tuple,
                **kw) -> StockhamPass | None:
    """stockham_pass with the first of `tiles` (lines per workgroup, widest first) that fits."""
    for t in tiles:
        p = stockham_pass(n, inverse, scale, limits, tile_lines=t, **kw)
        if p is not None:
            return p
    return None


def _chain(n: int, factors: list[int], inner: int, inverse: bool, scale: float, limits: Limits,
           src: AxisView, dst: AxisView, pre_mul=None, post_mul=None) -> list[StockhamPass]:
    """The passes of a length-n transform along an axis, factored as `factors` (1 to 3).

    Every line has the axis' inner index (stride 1, `inner` values) as digit 0, so strided axes
    are read and written as tiles of neighbouring lines. With n = P * Q, n = p + P q and
    k = kq + Q kp (Cooley-Tukey):
        X[kq + Q kp] = sum_p W_n^(p kq) W_P^(p kp) sum_q x[p + P q] W_Q^(q kq)
    the first pass does the length-Q transforms over q times W_n^(p kq); what is left is a
    length-P transform per kq writing with stride Q: one more pass (two factors) or the same split
    once more (three). Only the first pass reads `src` (and pre-multiplies) and only the last
    writes `dst` (post-multiplies, scales); passes in between use work buffers laid out
    [batch][axis][inner]. Buffer names are assigned later (assign_buffers).
    """
    tiled = inner > 1
    t = TILE_LINES
    work = AxisView(n * inner, inner)

    def both(m):  # lines per workgroup to try for a length-m pass strided at both ends
        return (FOURSTEP_TILE_LINES, t) if not tiled and m & (m - 1) == 0 else (t,)
    if len(factors) == 1:
        kw = dict(line_dims=(inner, 1, 1), src=src.layout((1, 0, 0), 1, (0, 0, 0), 1),
                  dst=dst.layout((1, 0, 0), 1, (0, 0, 0), 1), load_tiled=tiled,
                  store_tiled=tiled, pre_mul=pre_mul, post_mul=post_mul)
        p = (_tiled_pass(n, inverse, scale, limits, (AXIS_TILE_LINES, t), **kw) if tiled
             else _line_pass(n, inverse, scale, limits, **kw))
        if p is None and tiled:  # no tile fits: line-fastest, exchanging in halves (_untiled_axis)
            p = stockham_pass(n, inverse, scale, limits, tile_lines=t, halves=True, **kw)
        return [p]
    if len(factors) == 2:
        n1, n2 = factors
        a = _tiled_pass(n2, inverse, 1.0, limits, both(n2), line_dims=(inner, n1, 1),
                        src=src.layout((1, src.e, 0), n1, (0, 1, 0), n1),
                        dst=work.layout((1, inner, 0), n1, (0, 1, 0), n1),
                        load_tiled=True, store_tiled=True, fourstep_n=n, pre_mul=pre_mul,
                        halves=not tiled)
        b = stockham_pass(n1, inverse, scale, limits, tile_lines=t, line_dims=(inner, n2, 1),
                          src=work.layout((1, n1 * inner, 0), 1, (0, 0, 0), 1),
                          dst=dst.layout((1, dst.e, 0), n2, (0, 1, 0), n2),
                          load_tiled=tiled, store_tiled=True, post_mul=post_mul, halves=not tiled)
        return [a, b]
    n1, n2, n3 = factors
    pp = n1 * n2
    a = _tiled_pass(n3, inverse, 1.0, limits, both(n3), line_dims=(inner, pp, 1),
                    src=src.layout((1, src.e, 0), pp, (0, 1, 0), pp),
                    dst=work.layout((1, inner, 0), pp, (0, 1, 0), pp),
                    load_tiled=True, store_tiled=True, fourstep_n=n, pre_mul=pre_mul,
                    halves=not tiled)
    b = _tiled_pass(n2, inverse, 1.0, limits, both(n2), line_dims=(inner, n1, n3),
                    src=work.layout((1, inner, pp * inner), n1, (0, 0, 0), 1),
                    dst=work.layout((1, inner, pp * inner), n1, (0, 0, 0), 1),
                    load_tiled=True, store_tiled=True, fourstep_n=pp, halves=not tiled)
    c = stockham_pass(n1, inverse, scale, limits, tile_lines=t, line_dims=(inner, n3, n2),
                      src=work.layout((1, pp * inner, n1 * inner), 1, (0, 0, 0), 1),
                      dst=dst.layout((1, dst.e, n3 * dst.e), n3 * n2, (0, 1, n3), n3 * n2),
                      load_tiled=tiled, store_tiled=True, post_mul=post_mul)
    return [a, b, c]


def smooth_length(m: int, limits: Limits, tiled: bool = False) -> int:
    """Bluestein's convolution length: the smallest 2^a * c >= m with c in 1, 3, 5, 7, 9.

    Mostly radix-4/8 stages with at most two odd ones: cheap butterflies, and few distinct
    lengths, so many transform lengths share the same compiled convolution programs.
    """
    best = None
    for c in (1, 3, 5, 7, 9):
        k = c
        while k < m:
            k *= 2
        if _fast_factors(k, limits, tiled) is not None and (best is None or k < best):
            best = k
    if best is None:
        raise ValueError(f"no convolution length >= {m} fits this device")
    return best


def _axis_passes(n: int, inner: int, inverse: bool, norm: str, limits: Limits
                 ) -> tuple[list[StockhamPass], str, int, int]:
    """(passes, algorithm, working length, Bluestein length) of a transform along one axis of
    length n whose inner extent is `inner`, from and to [batch][n][inner] buffers."""
    scale = norm_scale(n, norm, inverse)
    view = AxisView(n * inner, inner)
    factors = _axis_factors(n, inner, limits)
    if factors is not None:
        passes = _chain(n, factors, inner, inverse, scale, limits, view, view)
        return passes, "stockham" if len(passes) == 1 else "four-step", n, 0
    # Bluestein: X[k] = w[k] sum_j (x[j] w[j]) conj(w[k - j]) with the chirp w[j] =
    # exp(-+i pi j^2 / n): a length-m circular convolution with m >= 2n - 1, computed as a
    # forward FFT (input times chirp fused into its first pass, times the kernel's spectrum fused
    # into its last) and an inverse FFT (times chirp and 1/m fused into its last pass).
    m = smooth_length(2 * n - 1, limits, inner > 1)
    mf = _axis_factors(m, inner, limits, conv=True)
    chirp = ("chirp", n, inverse)
    edge = AxisView(n * inner, inner, length=n, dynamic=True)
    work = AxisView(m * inner, inner)
    fwd = _chain(m, mf, inner, False, 1.0, limits, edge, work, pre_mul=chirp,
                 post_mul=("bluestein_kernel", n, m, inverse))
    inv = _chain(m, mf, inner, True, scale / m, limits, work, edge, post_mul=chirp)
    return fwd + inv, "bluestein", m, m


def assign_buffers(passes: list) -> list:
    """Name every pass's buffers: the first reads "in", the last writes "out", and the passes in
    between alternate between two work buffers (each reads what the one before wrote)."""
    out = []
    for i, p in enumerate(passes):
        src = "in" if i == 0 else out[-1].dst_buf
        dst = "out" if i == len(passes) - 1 else ("w0" if src != "w0" else "w1")
        out.append(replace(p, src_buf=src, dst_buf=dst))
    return out


def plan_steps(shape: tuple[int, ...], steps: list[tuple], limits: Limits) -> TransformSpec:
    """Plan `steps` over a C-contiguous array of `shape` (the shape of what is uploaded, in
    complex64 elements), all in one submission. A step is
      ("c2c", axis, inverse, norm): a complex transform along axis;
      ("r2c", axis, n, norm): the first step only; the upload holds n reals along axis (as n/2
          complex when n is even and axis is innermost, else as complex numbers), and the axis
          becomes n//2+1 long;
      ("c2r", axis, n, norm): the last step only; axis (n//2+1 long) becomes n reals (downloaded
          as n/2 complex when n is even and axis is innermost, else as complex numbers).
    Axis 0 is cut into chunks that fit the device's buffers when no step transforms it.
    """
    shape = tuple(int(x) for x in shape)
    axes = tuple(st[1] for st in steps)
    whole = 0 in axes  # a chunk unit is the whole array, or one index of axis 0
    unit_count = 1 if whole else shape[0]
    passes, algorithms, convs = [], [], []
    cur = list(shape)
    sizes = [math.prod(shape)]
    c2c_steps = []  # (index of the first pass, passes, axis, its length) of each c2c step

    def per_unit_lines(ax):  # batch lines of an axis per chunk unit
        return math.prod(cur[:ax]) if whole else math.prod(cur[1:ax])

    def add_c2c(ax, inverse, norm):
        n, inner = cur[ax], math.prod(cur[ax + 1:])
        if n < 1:
            raise ValueError(f"Invalid number of FFT data points ({n}) specified.")
        ps, alg, length, m = _axis_passes(n, inner, inverse, norm, limits)
        c2c_steps.append((len(passes), len(ps), ax, cur[ax]))
        passes.extend(replace(p, per_unit=per_unit_lines(ax)) for p in ps)
        algorithms.append(alg)
        convs.append(m)
        sizes.append(math.prod(cur) // n * length)

    def add_real(mode, ax, n_out_axis, nreal, scale):
        inner, n_in = math.prod(cur[ax + 1:]), cur[ax]
        cur[ax] = n_out_axis
        elems = math.prod(cur) // (1 if whole else cur[0])
        passes.append(RealPass(mode, nreal, n_in, n_out_axis, inner, scale, elems))
        sizes.append(math.prod(cur))

    for i, step in enumerate(steps):
        kind, ax = step[0], step[1]
        if kind == "c2c":
            add_c2c(ax, step[2], step[3])
        elif kind == "r2c":
            n, norm = step[2], step[3]
            if i != 0:
                raise ValueError("r2c must be the first step")
            if n % 2 == 0 and ax == len(cur) - 1:
                cur[ax] = n // 2
                add_c2c(ax, False, "backward")
                last = passes[-1]
                fused = _fusable(last, n) and _unpack_shape(
                    replace(last, real_unpack=n, dst=Layout(n // 2 + 1),
                            scale=norm_scale(n, norm, False)), limits)
                if fused and fused.shared_bytes > limits.max_shared_bytes:
                    fused = replace(fused, sh_stagger=False)  # the line, unstaggered
                # the unpack rides on the half-length FFT's store where its line fits
                if fused and fused.shared_bytes <= limits.max_shared_bytes:
                    passes[-1] = fused
                    cur[ax] = n // 2 + 1
                    sizes.append(math.prod(cur))
                else:
                    add_real(RealPass.UNPACK, ax, n // 2 + 1, n, norm_scale(n, norm, False))
            else:
                cur[ax] = n
                add_c2c(ax, False, norm)
                add_real(RealPass.CROP, ax, n // 2 + 1, n, 1.0)
        elif kind == "c2r":
            n, norm = step[2], step[3]
            if i != len(steps) - 1:
                raise ValueError("c2r must be the last step")
            if n % 2 == 0 and ax == len(cur) - 1:
                h = n // 2
                single = _line_pass(h, True, 1.0 / h, limits)
                if single is not None and _fusable(single, n):
                    # the pack rides on the half-length inverse FFT's loads
                    p = replace(single, real_pack=n, src=Layout(h + 1), dst=Layout(h),
                                scale=norm_scale(n, norm, True) * n / h,
                                per_unit=per_unit_lines(ax))
                    # Its exchanges as vec2 where they fit: two barriers each instead of four.
                    # H100, one process, best of two rounds, Vulkan / GL (us): batched irfft
                    # over 2^25 reals, n = 1024 103.1 -> 97.4 / 112.5 -> 100.0, 2048 101.7 ->
                    # 98.0 / 115.0 -> 105.4, 4096 107.4 -> 98.2 / 115.5 -> 106.7; irfft2 1024^2
                    # 14.8 -> 14.1 / 19.0 -> 18.5, 2048^2 44.5 -> 43.3 / 58.6 -> 55.6, 4096^2
                    # 161.8 -> 153.4 / 172.8 -> 168.1. (Not the unpack of rfft: 2048 points
                    # 96.2 -> 100.6 on Vulkan, rfft2 4096^2 152.2 -> 154.5.)
                    v = replace(p, vec2_exchange=True)
                    if v.shared_bytes <= limits.max_shared_bytes:
                        p = v
                    cur[ax] = h
                    passes.append(p)
                    algorithms.append("stockham")
                    convs.append(0)
                    sizes.append(math.prod(cur))
                else:
                    add_real(RealPass.PACK, ax, n // 2, n, norm_scale(n, norm, True) * n)
                    add_c2c(ax, True, "backward")
            else:
                add_real(RealPass.EXTEND, ax, n, n, 1.0)
                add_c2c(ax, True, norm)
        else:
            raise ValueError(f"unknown step {kind!r}")
    for (i, n_i, ax_i, _), (j, n_j, ax_j, rows) in zip(c2c_steps, c2c_steps[1:]):
        if n_i == n_j == 1 and j == i + 1 and ax_i == len(cur) - 1 and ax_j == ax_i - 1:
            pair = _blocked_pair(passes[i], passes[j], rows, cur[ax_i], limits)
            if pair:
                passes[i:j + 1] = pair
    passes = assign_buffers(passes)
    unit = max(sizes) // (1 if whole else shape[0])
    units = unit_count if whole else _chunk_units(shape[0], unit, limits)
    if whole and unit * COMPLEX64_BYTES > limits.max_buffer_bytes:
        raise ValueError(
            f"this transform needs {unit * COMPLEX64_BYTES} bytes of device memory per buffer, "
            f"more than this device's largest storage buffer ({limits.max_buffer_bytes} bytes)")
    div = 1 if whole else shape[0]
    names = sorted({b for p in passes for b in (p.src_buf, p.dst_buf)})
    out_elems = math.prod(cur) // (1 if whole else cur[0])
    sizes_by_name = tuple((b, math.prod(shape) // div if b == "in" else
                           out_elems if b == "out" else unit) for b in names)
    inverse = steps[-1][0] == "c2r" or (steps[-1][0] == "c2c" and steps[-1][2])
    return TransformSpec(shape, axes, inverse, tuple(passes), units, sizes_by_name,
                         tuple(algorithms), tuple(convs),
                         out_shape=tuple(cur), whole=whole)


def _blocked_pair(p, q, rows: int, cols: int, limits: Limits) -> tuple | None:
    """Row pass p and column pass q handing over in blocks (BLOCK_COLUMNS, see Layout.blocked),
    or None where that does not apply: each a plain one-dispatch pass, q reading tiles of whole
    blocks, the row pass's BLOCK_ROW_LINES lines fitting. H100, one process, best of three
    rounds, Vulkan / GL (us): fft2 1024^2 16.2 -> 15.6 / 22.7 -> 21.8 (column pass 9.2 -> 8.5),
    2048^2 68.7 -> 65.2 / 79.4 -> 76.9 (column pass 43.0 -> 35.1, row pass 29.0 -> 31.7). The
    row pass with one line per workgroup (8-byte runs) lost at 1024^2 (16.7); with 4, 2048^2
    lost (72.7: 1024 invocations); blocks of 2 columns lost at both (21.6, 67.4)."""
    def plain(x):
        return isinstance(x, StockhamPass) and not (
            x.real_pack or x.real_unpack or x.pre_mul or x.post_mul or x.fourstep_n)
    # p's last stage stores line-fastest from registers (STORE_LINE_FASTEST: two stages or more)
    if not (plain(p) and plain(q) and len(p.radices) > 1 and p.n == cols
            and cols % BLOCK_COLUMNS == 0 and q.load_tiled and q.line_dims[0] == cols
            and q.lines % BLOCK_COLUMNS == 0):
        return None
    blocked = (BLOCK_COLUMNS, rows, cols)
    p = replace(p, lines=BLOCK_ROW_LINES, store_tiled=True,
                dst=replace(p.dst or Layout(p.n), blocked=blocked))
    if (p.shared_bytes > limits.max_shared_bytes or p.invocations > limits.max_invocations
            or p.lines > limits.max_group_size[1]):
        return None
    return p, replace(q, src=replace(q.src, blocked=blocked))


def _fusable(p, n: int) -> bool:
    """Whether the real pack/unpack of n reals can ride on pass p: p must be the whole
    half-length transform of contiguous lines in one dispatch, with at least one stage."""
    return (isinstance(p, StockhamPass) and p.n == n // 2 and len(p.radices) >= 1
            and p.line_dims == (1, 1, 1) and not p.load_tiled and not p.store_tiled
            and p.pre_mul is None and p.post_mul is None)


def _unpack_shape(p: StockhamPass, limits: Limits) -> StockhamPass:
    """The shape of the pass with the fused unpack: from registers, the smallest radix last (it
    has the most butterflies, so as many pairs as the other stages have butterflies: the tuned
    [4,8,8,8] x 256 of 2048 points leaves half its invocations idle in a last radix-8 stage,
    [8,8,8,4] none; Vulkan, rfft2 4096^2's row pass 51.1 -> 46.7 us, against 66.1 with [4,8,8,8]
    x 512 and 60.7 with [8,8,8,4] x 512, in an earlier form of the pairs); else _wider."""
    if p.unpack_in_registers:
        r = list(p.radices)
        last = max(i for i, x in enumerate(r) if x == min(r))  # the last of the smallest
        return replace(p, radices=tuple(r[:last] + r[last + 1:] + [r[last]]))
    return _wider(p, limits)


def _wider(p: StockhamPass, limits: Limits) -> StockhamPass:
    """A pass with the fused real unpack and at least 64 invocations per line takes twice as
    many (at most as many as its smallest radix has butterflies) in the same or half the lines:
    its store of N + 1 bins after the last stage waits on shared memory, the table and global
    stores, and more invocations hide that. H200, one process per variant, Vulkan / GL: rfft2
    4096^2 139.9 -> 139.0 / 185.1 -> 172.9 us (its 2048-point row pass 256 -> 512 invocations,
    GL 75.9 -> 63.3 us), rfft2 2048^2 45.6 -> 44.5 / 55.1 -> 51.2 us; batched rfft over 2^26
    reals of 1024 181.8 -> 174.9 / 267.2 -> 268.3 us, 2000 216.6 -> 191.2 / 269.5 -> 283.4. Not
    below 64: 256 (32 -> 64 invocations) was slower on both (168 -> 183 / 227 -> 253 us), 64 (4
    -> 8) faster (212 -> 181 / 336 -> 287). Not for the pack (irfft): 2-4% slower."""
    if p.threads < 64:
        return p
    cap = min(limits.max_invocations, limits.max_group_size[0])
    threads = min(2 * p.threads, p.n // min(p.radices), cap)
    if threads <= p.threads:
        return p
    return replace(p, threads=threads, lines=max(1, p.lines * p.threads // threads))


def plan_c2c(shape: tuple[int, ...], axes: tuple[int, ...], inverse: bool, norm: str,
             limits: Limits) -> TransformSpec:
    """Plan complex transforms of a C-contiguous array of `shape` over `axes` (in that order)."""
    return plan_steps(shape, [("c2c", ax, inverse, norm) for ax in axes], limits)


def _chunk_units(count: int, elements_per_unit: int, limits: Limits) -> int:
    unit_bytes = elements_per_unit * COMPLEX64_BYTES
    if unit_bytes > limits.max_buffer_bytes:
        raise ValueError(
            f"one line needs {unit_bytes} bytes of device memory, more than this device's "
            f"largest storage buffer ({limits.max_buffer_bytes} bytes)")
    return max(1, min(count, limits.max_buffer_bytes // unit_bytes))


def plan_fft(n: int, batch: int, inverse: bool, norm: str, limits: Limits) -> TransformSpec:
    """Plan a batched 1D complex transform of `batch` contiguous lines of length n."""
    if n < 1:
        raise ValueError(f"Invalid number of FFT data points ({n}) specified.")
    return plan_c2c((batch, n), (1,), inverse, norm, limits)


def tighter(device: Limits, wanted: Limits | None) -> Limits:
    """The smaller of each limit: a plan may assume a smaller device than it runs on."""
    if wanted is None:
        return device
    def pick(a, b):
        return tuple(map(min, a, b)) if isinstance(a, tuple) else min(a, b)
    return Limits(**{f: device.tuned if f == "tuned" else pick(getattr(device, f), getattr(wanted, f))
                     for f in Limits.__dataclass_fields__})


def split_groups(groups: int, max_count: tuple[int, int, int]) -> list[tuple[int, int, int]]:
    """Cover `groups` workgroups with (base, gx, gy) dispatches inside the device's count limits.

    Each dispatch runs a gx-by-gy grid; the kernel numbers its workgroups base + x + y * gx and
    skips those >= groups, so nothing is ever truncated silently. The rows are as few as fit and
    balanced, so fewer than gy workgroups idle: 65536 groups under a 65535 limit run as 2 x 32768,
    not 2 x 65535 with half of them empty (which cost GL's batched 64-point FFT measurable time).
    """
    gx_max, gy_max = max_count[0], max_count[1]
    out, base = [], 0
    while base < groups:
        left = groups - base
        gy = min(-(-left // gx_max), gy_max)
        gx = min(-(-left // gy), gx_max)
        out.append((base, gx, gy))
        base += gx * gy
    return out


def _two_power_splits(k: int, max_stages: int = 5) -> list[tuple[int, ...]]:
    """2^k as radices from 16, 8, 4, 2 (at most one 2), largest first, at most max_stages."""
    out = []

    def rec(left, top, acc):
        if left == 0:
            out.append(tuple(1 << e for e in acc))
            return
        if len(acc) == max_stages:
            return
        for e in range(min(top, left), 0, -1):
            if e == 1 and 1 in acc:
                continue
            rec(left - e, e, acc + [e])
    rec(k, 4, [])
    return out


def _odd_groupings(odd: tuple[int, ...]) -> list[tuple[int, ...]]:
    """The odd prime factors as radices, with each pair of an equal prime that has a square radix
    kept as two stages or merged into one: (3, 3, 3) gives (3, 3, 3) and (9, 3)."""
    out: list[tuple[int, ...]] = [()]
    for p in sorted(set(odd)):
        c, sq = odd.count(p), p * p
        pairs = c // 2 if sq in _ODD_SQUARES else 0
        out = [a + (sq,) * q + (p,) * (c - 2 * q) for a in out for q in range(pairs + 1)]
    return out


def shape_candidates(n: int, limits: Limits) -> list[tuple]:
    """Kernel shapes worth timing for length n: (radices, threads, lines, pad) tuples for
    Limits.tuned. Radix sets of 16/8/4/2 and of the odd primes or their squares, each
    largest-first and smallest-first, odd radices first or last; threads from one or two
    butterflies of the largest radix per invocation (a radix-49 stage's one only: 49 values is
    over REGISTER_TARGET); shared memory padded or not (even n: padding is against the bank
    conflicts of power-of-two strides); the default lines per workgroup. (Fewer invocations per
    line, 3-6 radix-3/5/7 butterflies each, and 2-4x wider workgroups were timed on the H200 too
    and never won.)"""
    factors = prime_factors(n)
    if any(p not in (2,) + _ODD_PRIMES for p in factors):
        return []
    odd = tuple(p for p in _ODD_PRIMES for _ in range(factors.get(p, 0)))
    cap = min(limits.max_invocations, limits.max_group_size[0])
    out = []
    k = factors.get(2, 0)
    for two in _two_power_splits(k, 4) or _two_power_splits(k, 6) or [()]:
        orders = set()
        for group in _odd_groupings(odd):
            for o in (tuple(sorted(group, reverse=True)), tuple(sorted(group))):
                orders |= {o + two, o + two[::-1], two + o, two[::-1] + o}
        for radices in sorted(orders):
            span = n // max(radices, default=1)  # butterflies of the largest radix
            for b in (1, 2):
                threads = -(-span // b)
                regs = _registers(n, radices, threads)
                if threads > cap or regs > (MAX_REGISTERS if b == 1 else REGISTER_TARGET):
                    continue
                for pad in (False, True) if n % 2 == 0 else (False,):
                    cand = (radices, threads, 0, pad)
                    if cand not in out:
                        out.append(cand)
    return out
