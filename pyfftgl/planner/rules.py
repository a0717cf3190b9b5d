"""The rules that choose a pass's shape: radices, workgroup shape, shared-memory sizing, and each
pass's decisions (tiles or line-fastest, exchanges in halves, swizzle, line pitch), all pure
functions of plain values. The measurements behind each rule are in
docs/performance-log.md (section "Planner rules")."""
from __future__ import annotations

from .abi import COMPLEX64_BYTES, FLOAT_BYTES
from .records import TunedShape

# Radices the Stockham kernel has butterflies for. 8 and 4 are preferred for powers of two
# (fewer stages = fewer trips through shared memory); the odd primes use a generic small DFT,
# and their squares 9, 25, 49 two rounds of it in registers (one stage instead of two).
RADICES = (2, 3, 4, 5, 7, 8, 9, 11, 13, 16, 17, 19, 23, 25, 29, 31, 49)
ODD_PRIMES = (3, 5, 7, 11, 13, 17, 19, 23, 29, 31)
ODD_SQUARES = (9, 25, 49)
# Invocations per workgroup we aim for: enough to hide latency, small enough for every driver.
TARGET_INVOCATIONS = 256
# The smallest workgroup a texture's row pass takes Limits.row_lines lines in (four warps).
ROW_MIN_INVOCATIONS = 128
# Lines per workgroup in strided passes: 4 complex64 = 32 bytes, one memory sector per access;
# fewer lines, for more workgroups on small images, were slower.
TILE_LINES = 4
# A strided axis transformed in one pass takes 8 lines (64 bytes per row) where they fit in shared
# memory; the passes of a four-step split keep TILE_LINES (8 was slower there).
AXIS_TILE_LINES = 8
# The passes of a batched 1D four-step that read and write strided take 8 lines where the line is
# a power of two and 8 lines fit, and go line-fastest (see line_fastest): their rows are a power
# of two apart and may crowd the same memory partitions, and 64-byte rows halve the rows a warp
# touches. Other lengths keep TILE_LINES, which was faster for them.
FOURSTEP_TILE_LINES = 8
# The strided (first) factor of a two-pass batched 1D four-step is at most this where the
# contiguous factor can take what it gives up (see factors._narrow_strided).
FOURSTEP_STRIDED_MAX = 512
# A row pass followed by a column pass in one dispatch (the last two axes of an N-D transform)
# hands over its rows in blocks of BLOCK_COLUMNS columns (Layout.blocked), written BLOCK_ROW_LINES
# rows per workgroup: the column pass's strided reads become runs of its lines' width (128 bytes)
# and the row pass writes runs of 64 bytes instead of whole rows. See fusion.blocked_pair.
BLOCK_COLUMNS = 4
BLOCK_ROW_LINES = 2
# Complex values an invocation keeps in registers: aim for REGISTER_TARGET, never above MAX
# (beyond that compilers spill), unless one butterfly of the largest radix holds more
# (register_cap).
REGISTER_TARGET = 32
MAX_REGISTERS = 48
# Long lines whose TARGET_INVOCATIONS invocations would each hold REGISTER_TARGET values or more
# take more invocations, down to this many values each (see workgroup).
LONG_LINE_VALUES = 16
# Pad shared memory against bank conflicts unless a tuned entry says otherwise.
SH_PAD = False
# The fused real unpack goes from registers on half-length lines of this many points or more (see
# unpack_in_registers).
UNPACK_REGS_MIN_N = 1000
# The most stages of a strided axis taken in one untiled pass (see factors._untiled_axis).
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
    halves), so long lines take larger radices and fewer stages, as the tuner's winners do. With
    v = n / TARGET_INVOCATIONS values per invocation, the power of two 2^k goes in the fewest
    stages of at most 2^b values, the smaller first: b = 3 from v = 6, and 4 from v = 16, where
    radix-16 stages still give every invocation a butterfly; and pairs of 3 become 9 (two rounds
    of 3 in registers). 5 and 7 stay prime (their squares were slower on at least one API).
    Shorter lines keep radix-4 stages with at most one radix-8 or radix-2 stage (a 2^k with odd
    k takes one 8 when k >= 3, so no radix-2 stage is needed beyond n = 2).
    """
    if n < 1:
        raise ValueError(f"length must be >= 1, got {n}")
    factors = prime_factors(n)
    if any(p not in (2,) + ODD_PRIMES for p in factors):
        return None
    v = n / TARGET_INVOCATIONS
    b = 4 if v >= 16 else 3 if v >= 6 else 2
    threes = factors.get(3, 0)
    odd = ([3] * threes if b == 2 else [3] * (threes % 2) + [9] * (threes // 2))
    odd += [p for p in ODD_PRIMES[1:] for _ in range(factors.get(p, 0))]
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


def register_cap(radices) -> int:
    """The most complex values an invocation may hold: MAX_REGISTERS, or one butterfly."""
    return max(MAX_REGISTERS, max(radices, default=1))


def stage_registers(n: int, radices, threads: int) -> int:
    """The most complex values an invocation holds in one stage: a radix-r stage gives each of
    `threads` invocations ceil(n / r / threads) butterflies of r values."""
    return max((-(-(n // r) // threads) * r for r in radices), default=1)


def _sh_line(n: int, lines: int, pad: bool, stagger: bool, slot_bytes: int = COMPLEX64_BYTES,
            threads: int | None = None) -> int:
    """Slots per line in shared memory: n, or with padding SHI(n - 1) + 1; with `stagger`
    rounded up so that the lines a warp touches side by side start on different banks: row /
    k slots apart modulo one row of banks (row = 128 bytes: 16 vec2 slots, 32 float ones), for
    k lines per warp. Tiles and line-fastest numbering put `lines` lines in a warp (threads
    None); the line-order numbering 32 / threads, each of `threads` neighbouring slots. A bank
    model of 32-bit accesses (tools/bank_model.py) counts fewer wavefronts with this pitch than
    with the vec2 row's 16 / lines slots."""
    base = n + (n - 1) // 16 if pad else n
    row = 128 // slot_bytes
    per_warp = lines if threads is None else min(lines, max(1, 32 // threads))
    if not stagger or per_warp <= 1:
        return base
    want = row // min(per_warp, row)
    return base + (want - base) % row


def tile_lines_for(limits) -> int:
    """Lines per tile of a strided pass on `limits` (Limits.tile_lines, else TILE_LINES)."""
    return limits.tile_lines or TILE_LINES


def tuned_shape(n: int, limits, tiled: bool = False) -> TunedShape | None:
    """The entry of limits.tuned for length n, or None. A tiled pass takes the entry measured on
    tiled passes where there is one: the same length's best shape differs between contiguous
    lines and tiles of strided ones."""
    for want_tiled in ((True, False) if tiled else (False,)):
        for entry in limits.tuned:
            if entry.n == n and entry.tiled == want_tiled and not entry.real:
                return entry
    return None


def workgroup(n: int, radices, limits, lines_wanted: int | None, pad: bool,
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
               and stage_registers(n, radices, threads) > REGISTER_TARGET):
            threads = min(cap, threads * 2)
        # Lines too long for that many (8192 points and up on 48 KB) take more still: their
        # registers, not shared memory, limit the workgroups an SM holds (performance-log).
        if (threads >= min(TARGET_INVOCATIONS, cap)
                and stage_registers(n, radices, threads) >= REGISTER_TARGET):
            while (threads < cap and stage_registers(n, radices, threads)
                   > max(LONG_LINE_VALUES, rmax)):
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


# --- a pass's decisions, from its parameters ------------------------------------------------------

def unpack_in_registers(n: int, real_unpack: int, real_rows: int) -> bool:
    """The fused real unpack writes X[k] and X[N-k] straight from the last stage's registers,
    its butterflies taken in pairs (UNPACK_REGS in stockham.comp), on lines of
    UNPACK_REGS_MIN_N points or more: no trip through shared memory after the last stage, and
    the exchanges go in halves. Shorter lines go through shared memory, where a workgroup's lines
    are written as one run (with few invocations per line, stores from registers no longer
    coalesce across lines). Not where rows pair up (real_rows): the pairs span two lines."""
    return bool(real_unpack) and n >= UNPACK_REGS_MIN_N and not real_rows


def line_fastest(load_tiled: bool, store_tiled: bool, real: bool, untiled: bool,
                 fourstep_n: int, inner_lines: int, lines: int, rows: bool = False) -> bool:
    """Invocations take neighbouring lines (LINE_FASTEST in stockham.comp) instead of moving
    tiles through shared memory, where both ends of the pass are strided and no real pack or
    unpack is fused. Where neighbouring lines differ in the four-step digit (a batched 1D
    four-step, fewer inner lines than the workgroup's), only with FOURSTEP_TILE_LINES lines or
    more per workgroup (with fewer, the tiles were faster) or untiled, and with the twiddle
    tables digit-fastest. `rows`: contiguous lines of a texture (Limits.row_lines), whose
    block-tiled texels are nearer in neighbouring rows than along one row."""
    if rows and not (load_tiled or store_tiled):  # (a blocked row pass stores tiled)
        return lines > 1 and not real
    return (load_tiled and store_tiled and not real
            and (untiled or not fourstep_n or inner_lines >= lines
                 or lines >= FOURSTEP_TILE_LINES))


def store_line_fastest(load_tiled: bool, store_tiled: bool, stages: int, real: bool) -> bool:
    """Only the last stage is numbered line-fastest (STORE_LINE_FASTEST in stockham.comp): a pass
    that reads contiguous lines and writes strided ones (the last pass of a batched 1D four-step)
    stores straight from registers, its inputs already in shared memory, instead of moving a tile
    through shared memory after the last stage; with no tile there, it exchanges in halves."""
    return store_tiled and not load_tiled and stages > 1 and not real


def digit_fastest(fourstep_n: int, line_fastest_: bool, inner_lines: int, lines: int) -> bool:
    """The four-step twiddle tables hold W^(d k) with the line digit d fastest, for passes whose
    neighbouring invocations take neighbouring values of d (line-fastest, fewer inner lines than
    a workgroup's): read d-major, a warp's twiddle reads would scatter over as many rows as it
    has lines."""
    return bool(fourstep_n) and line_fastest_ and inner_lines < lines


def tiles_in_shared(line_fastest_: bool, load_tiled: bool, store_tiled: bool,
                    store_line_fastest_: bool) -> bool:
    """Strided ends are moved as tiles through shared memory (not line-fastest)."""
    return not line_fastest_ and (load_tiled or (store_tiled and not store_line_fastest_))


def sh_halves(stages: int, tiles_in_shared_: bool, vec2_exchange: bool, real_unpack: int,
              unpack_in_registers_: bool) -> bool:
    """The exchanges between stages move real parts, then imaginary parts, through a float array
    (SH_HALVES in stockham.comp): half the shared memory per line (fewer registers too), two more
    barriers per exchange. Everywhere it can: not where tiles or the real unpack go through
    shared memory as vec2 (a line-fastest store, STORE_LINE_FASTEST, is no tile), nor for the
    fused real pack where vec2 fits (vec2_exchange)."""
    return (stages > 1 and not tiles_in_shared_ and not vec2_exchange
            and (unpack_in_registers_ or not real_unpack))


def swizzle_bits(sh_halves_: bool, line_fastest_: bool, threads: int, n: int,
                 slot_bytes: int = FLOAT_BYTES) -> int:
    """log2 of the blocks the exchanges permute against bank conflicts (SWZ_BITS): 16 slots
    (a row of 8-byte banks), or 32 (a row of float banks) for exchanges in 4-byte halves among
    invocations in line order with a line or more per warp, which the bank model
    (tools/bank_model.py) finds cheaper there; line-fastest passes and fewer invocations per line
    than a warp need more with 32. `slot_bytes`: the kernel's slot where the exchanges go in
    halves (8 for two-field texels and complex128: a row is 16 of them)."""
    return (5 if sh_halves_ and slot_bytes == FLOAT_BYTES and not line_fastest_ and threads >= 32
            and n % 32 == 0 else 4)


def uses_shared(stages: int, tiles_in_shared_: bool, real_unpack: int,
                unpack_in_registers_: bool) -> bool:
    """USES_SHARED in stockham.comp: exchanges between stages, tiles, or the real unpack from
    shared memory (which reads the line back even after a single stage)."""
    return stages > 1 or tiles_in_shared_ or (bool(real_unpack) and not unpack_in_registers_)


def pass_registers(n: int, radices, threads: int, unpack_in_registers_: bool) -> int:
    """Complex values an invocation holds in a stage, at most (REGS in the kernel). The last
    stage of a fused real unpack from registers takes its butterflies in pairs."""
    regs = stage_registers(n, radices, threads)
    if unpack_in_registers_:
        r = radices[-1]
        regs = max(regs, 2 * r * -(-((n // r + 1) // 2) // threads))
    return regs


def strides(radices) -> tuple[int, ...]:
    """Ns of each stage: the product of the radices before it."""
    out, ns = [], 1
    for r in radices:
        out.append(ns)
        ns *= r
    return tuple(out)


def decide(p) -> dict:
    """Every decision of a Stockham pass, from its parameters (StockhamPass's init fields):
    what StockhamPass sets as its derived fields when it is built."""
    real = bool(p.real_pack or p.real_unpack)
    stages = len(p.radices)
    regs_unpack = unpack_in_registers(p.n, p.real_unpack, p.real_rows)
    lf = line_fastest(p.load_tiled, p.store_tiled, real, p.untiled, p.fourstep_n,
                      p.line_dims[0], p.lines, p.rows_line_fastest)
    slf = store_line_fastest(p.load_tiled, p.store_tiled, stages, real)
    tiles = tiles_in_shared(lf, p.load_tiled, p.store_tiled, slf)
    halves = sh_halves(stages, tiles, p.vec2_exchange, p.real_unpack, regs_unpack)
    shared = uses_shared(stages, tiles, p.real_unpack, regs_unpack)
    slot = FLOAT_BYTES if halves else COMPLEX64_BYTES
    # The banks see the kernel's slots: wider than the planner's for wider elements.
    bank_slot = slot * p.slot_scale
    line_order = not (lf or slf or tiles)
    pitch = _sh_line(p.n, p.lines, p.sh_pad, p.sh_stagger, bank_slot,
                     p.threads if line_order else None)
    return dict(
        strides=strides(p.radices),
        registers=pass_registers(p.n, p.radices, p.threads, regs_unpack),
        unpack_in_registers=regs_unpack,
        line_fastest=lf,
        store_line_fastest=slf,
        digit_fastest=digit_fastest(p.fourstep_n, lf, p.line_dims[0], p.lines),
        tiles_in_shared=tiles,
        sh_halves=halves,
        swizzle_bits=swizzle_bits(halves, lf, p.threads, p.n, bank_slot),
        uses_shared=shared,
        sh_line=pitch,
        shared_bytes=p.lines * pitch * slot if shared else 0,
        invocations=p.threads * p.lines,
    )
