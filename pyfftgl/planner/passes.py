"""Pass records and their preamble: a pass is one compute dispatch (possibly split into several
for workgroup-count limits and the work budget of a dispatch) that reads every element once and
writes every element once. Its `defines()` are the `#define` preamble of its kernel, `push()` its
push constants (abi.PUSH_NAMES) and `tables()` the host tables it reads."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from . import rules
from .abi import FOURSTEP_LO_LEN, REALFFT_GROUP
from .records import FourstepHiKey, FourstepLoKey, StageKey, TwiddleKey
from .roots import unit_roots


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
        w = unit_roots(np.arange(r), r, 1)
        cos += list(w.real)
        sin += list(w.imag)
    # The generic butterfly's sums and differences: (P - 1) / 2 of each for the largest prime P
    # (a square radix runs rounds of its prime).
    primes = [math.isqrt(r) if math.isqrt(r) ** 2 == r else r for r in odd]
    out["ODD_HALF_MAX"] = str(max(primes) // 2)
    out["ODD_COS"] = "REAL[](" + ", ".join(float_literal(c, double) for c in cos) + ")"
    out["ODD_SIN"] = "REAL[](" + ", ".join(float_literal(c, double) for c in sin) + ")"
    return out


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


def _decided():
    """A field the rules set when the pass is built (rules.decide), not a parameter."""
    return field(init=False, repr=False, compare=False)


@dataclass(frozen=True)
class StockhamPass:
    """All Stockham stages of `lines` lines of length n per workgroup, in one dispatch.

    The parameters are the init fields; every decision that follows from them (tiles or
    line-fastest, exchanges in halves, shared-memory pitch and size, ...) is set once by
    rules.decide when the pass is built, and again on every dataclasses.replace.
    """

    n: int
    radices: tuple[int, ...]
    threads: int  # invocations per line
    lines: int  # lines per workgroup
    inverse: bool
    scale: float
    line_dims: tuple[int, int, int] = (1, 1, 1)  # D0, D1, D2; the batch index is the rest
    src: Layout | None = None  # None: contiguous lines of length n
    dst: Layout | None = None
    load_tiled: bool = False  # strided reads (coalesced through shared memory or line-fastest)
    store_tiled: bool = False
    fourstep_n: int = 0  # fused twiddle exp(-+2 pi i d k / fourstep_n) on output k
    fourstep_digit: int = 1  # d = that digit of the line
    pre_mul: object | None = None  # table key multiplying input by its index along the axis
    post_mul: object | None = None  # table key multiplying output by its index along the axis
    src_buf: str = "in"
    dst_buf: str = "out"
    per_unit: int = 1  # batch lines (of the axis' layout) per chunk unit
    real_unpack: int = 0  # n: unpack the n/2+1 bins of n real samples in the store (fused)
    real_pack: int = 0  # n: pack n/2+1 bins into n/2 complex values as they are loaded (fused)
    # R: the pack or unpack pairs row r with row R - r of R-row images, the columns being
    # transformed on the half-length view (compose._columns_on_half); the unpack's two lines per
    # workgroup are such a pair.
    real_rows: int = 0
    sh_pad: bool = False  # a spare shared-memory slot every 16 values (bank conflicts)
    # The lines a warp touches side by side start on different banks (see rules._sh_line): set
    # unless the stagger does not fit.
    sh_stagger: bool = False
    # Strided ends go line-fastest whatever the lines: set where a vec2 tile of them does not fit
    # in shared memory and the exchanges in halves do (see factors.stockham_pass).
    untiled: bool = False
    # The exchanges go as vec2 where halves would be taken (the fused real pack: see compose).
    vec2_exchange: bool = False
    # Contiguous lines numbered line-fastest (Limits.row_lines: a texture's rows).
    rows_line_fastest: bool = False
    # Element bytes over complex64's (Limits.slot_scale): the kernel's shared-memory slots are
    # that much wider than the planner's, for the bank model (pitch, swizzle).
    slot_scale: int = 1

    # Decisions (see the functions of the same names in rules.py).
    strides: tuple[int, ...] = _decided()  # Ns of each stage
    registers: int = _decided()  # REGS: complex values an invocation holds in a stage, at most
    unpack_in_registers: bool = _decided()  # UNPACK_REGS
    line_fastest: bool = _decided()  # LINE_FASTEST
    store_line_fastest: bool = _decided()  # STORE_LINE_FASTEST
    digit_fastest: bool = _decided()  # four-step tables [k][d]
    tiles_in_shared: bool = _decided()
    sh_halves: bool = _decided()  # SH_HALVES
    swizzle_bits: int = _decided()  # SWZ_BITS
    uses_shared: bool = _decided()
    sh_line: int = _decided()  # SH_LINE: shared-memory slots per line
    shared_bytes: int = _decided()  # the shared memory the kernel declares
    invocations: int = _decided()  # per workgroup

    kernel = "stockham.comp"

    def __post_init__(self):
        for name, value in rules.decide(self).items():
            object.__setattr__(self, name, value)

    def stage_tables(self) -> list[StageKey | None]:
        """Each stage's twiddle table (None for the first: Ns = 1 needs none)."""
        return [StageKey(r, ns) if ns > 1 else None for r, ns in zip(self.radices, self.strides)]

    def fourstep_tables(self) -> tuple[FourstepLoKey, FourstepHiKey]:
        """The two halves of the fused four-step twiddle."""
        f, lines, df = self.fourstep_n, self.line_dims[self.fourstep_digit], self.digit_fastest
        return FourstepLoKey(f, lines, df), FourstepHiKey(f, lines, df, self.n)

    def tables(self) -> list:
        """The host tables this pass reads (see tables.build_table)."""
        out = [t for t in self.stage_tables() if t is not None]
        if self.fourstep_n:
            out += list(self.fourstep_tables())
        out += [t for t in (self.pre_mul, self.post_mul) if t is not None]
        if self.real_unpack or self.real_pack:
            out.append(TwiddleKey(self.real_unpack or self.real_pack))
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
        lf, slf = self.line_fastest, self.store_line_fastest
        d["LINE_FASTEST"] = int(lf)
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
                d["FOURSTEP_DIGITS"] = f"{lo.lines}u"
        if self.pre_mul is not None:
            d["PRE_MUL"] = f"{offsets[self.pre_mul]}u"
        if self.post_mul is not None:
            d["POST_MUL"] = f"{offsets[self.post_mul]}u"
        for key, n in (("REAL_UNPACK", self.real_unpack), ("REAL_PACK", self.real_pack)):
            if n:
                d[key] = f"{n}u"
                d["UNPACK_REGS"] = int(self.unpack_in_registers)
                d["REAL_TW"] = f"{offsets.get(TwiddleKey(n), 0)}u"
        if self.real_rows:
            d["REAL_ROWS"] = f"{self.real_rows}u"
        return d

    def push(self, units: int, group_base: int = 0) -> list[int]:
        """The push constants (see abi.PUSH_NAMES) of a dispatch covering `units` batch units."""
        src = self.src or Layout(self.n)
        dst = self.dst or Layout(self.n)
        return [self.line_count(units), group_base, src.length or 0, src.batch,
                dst.length or 0, dst.batch]

    def line_count(self, units: int) -> int:
        return units * self.per_unit * self.line_dims[0] * self.line_dims[1] * self.line_dims[2]

    def groups(self, units: int) -> int:
        return -(-self.line_count(units) // self.lines)

    def values_per_group(self) -> int:
        """Complex values a workgroup reads and writes (compose.dispatch_grids' estimate): each
        of its lines in and out, plus one table value per element for each per-element multiply
        (Bluestein's chirp and kernel spectrum, the real pack/unpack twiddle); the stage and
        four-step tables are small and shared by all lines, so they are not counted."""
        per_element = 2 + sum(x is not None for x in (self.pre_mul, self.post_mul))
        return self.lines * self.n * (per_element + bool(self.real_unpack or self.real_pack))


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
    group: int = REALFFT_GROUP  # invocations per workgroup: fewer where the device allows fewer

    kernel = "realfft.comp"
    UNPACK, PACK, CROP, EXTEND = 1, 2, 3, 4
    n = property(lambda self: self.nreal)
    radices = ()
    pre_mul = post_mul = None
    fourstep_n = 0

    def tables(self) -> list[TwiddleKey]:
        return [TwiddleKey(self.nreal)] if self.mode in (1, 2) else []

    def defines(self, offsets: dict | None = None) -> dict[str, object]:
        d = {"MODE": self.mode, "NREAL": f"{self.nreal}u", "IN_AXIS": f"{self.in_axis}u",
             "OUT_AXIS": f"{self.out_axis}u", "INNER": f"{self.inner}u",
             "SCALE": float_literal(self.scale), "INVERSE": 0}
        if self.mode in (1, 2):
            d["TW_OFFSET"] = f"{(offsets or {}).get(TwiddleKey(self.nreal), 0)}u"
        if self.group != REALFFT_GROUP:  # the kernel's default: sources stay as they were
            d["GROUP"] = self.group
        return d

    def line_count(self, units: int) -> int:
        return units * self.per_unit

    def push(self, units: int, group_base: int = 0) -> list[int]:
        return [self.line_count(units), group_base, 0, 0, 0, 0]

    def groups(self, units: int) -> int:
        return -(-self.line_count(units) // self.group)

    def values_per_group(self) -> int:
        """Complex values a workgroup reads and writes: per output element, an unpack or pack
        reads two inputs and a twiddle and writes one, a crop or extend copies one."""
        return self.group * (4 if self.mode in (self.UNPACK, self.PACK) else 2)
