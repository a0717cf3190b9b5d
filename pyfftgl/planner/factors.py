"""Fitting a length into passes: the one-dispatch pass for a length on a device (or None), and
the rules that split a longer axis into 1 to 3 such passes (four-step) or pick Bluestein's
convolution length. The measurements behind each rule are in docs/performance-log.md (section
"Planner rules")."""
from __future__ import annotations

from .abi import COMPLEX64_BYTES, FLOAT_BYTES
from .passes import StockhamPass
from .rules import (FOURSTEP_STRIDED_MAX, FOURSTEP_TILE_LINES, ROW_MIN_INVOCATIONS,
                    SH_PAD, UNTILED_AXIS_STAGES, workgroup, radices_for, register_cap,
                    tile_lines_for, tuned_shape)


def stockham_pass(n: int, inverse: bool, scale: float, limits, *,
                  tile_lines: int | None = None, halves: bool = False, **kw
                  ) -> StockhamPass | None:
    """The one-dispatch pass for length n, or None if n does not fit one workgroup here.

    tile_lines: a pass with strided (tiled) accesses needs that many lines per workgroup, all
    in shared memory at once.
    halves: where the pass exchanges in halves (StockhamPass.sh_halves), size it by that
    footprint, which holds twice the lines. Only for the strided passes of a batched 1D
    four-step (its 1024-point first pass then takes 8-line line-fastest tiles) and contiguous
    lines too long for one vec2 line (line_pass): elsewhere it measured slower. Where even
    those lines' tiles do not fit, a pass strided at both ends may go line-fastest instead
    (untiled, see _untiled_fits).
    """
    tuned = tuned_shape(n, limits, tiled=tile_lines is not None)
    radices = tuple(tuned.radices) if tuned else radices_for(n)
    if radices is None:
        return None
    pad = bool(tuned.pad) if tuned else SH_PAD
    shape = tuned and (tuned.threads, tuned.lines)
    rows_shape = n & (n - 1) == 0 or bool(tuned and tuned.lines == limits.row_lines)
    if (tile_lines is None and limits.row_lines > 1 and rows_shape
            and not kw.get("load_tiled") and not kw.get("store_tiled")
            and not kw.get("real_pack") and not kw.get("real_unpack")):
        # A texture's rows of a power-of-two length, or of one whose tuned shape asks for
        # row_lines lines (mixed radices lost time this way at the planner's invocations):
        # row_lines of them with the default (or tuned) invocations per line, where that is a
        # workgroup of ROW_MIN_INVOCATIONS or more (shorter rows keep their shape), sized by
        # the halves they exchange in (2 x 2048 rgba32f rows on 48 KB).
        threads = shape[0] if shape else workgroup(n, radices, limits, None, pad)[0]
        if threads * limits.row_lines >= ROW_MIN_INVOCATIONS:
            shape = (threads, limits.row_lines)
            kw = dict(kw, rows_line_fastest=True)
            halves = True
    # The padding, then the stagger, may be what does not fit; with `halves`, each is tried
    # with float slots first, then vec2.
    # Last, where a strided pass's tiles do not fit even so, it may go line-fastest (untiled).
    slots = (FLOAT_BYTES, COMPLEX64_BYTES) if halves else (COMPLEX64_BYTES,)
    both_strided = kw.get("load_tiled") and kw.get("store_tiled")
    untiled = (False, True) if halves and both_strided else (False,)
    fits = ((True, True),) * pad + ((False, True), (False, False))
    tries = [(pd, stagger, slot, u) for u in untiled for pd, stagger in fits for slot in slots]
    for pad, stagger, slot, u in tries:
        threads, lines = workgroup(n, radices, limits, tile_lines, pad, shape, stagger, slot)
        p = StockhamPass(n, radices, threads, lines, inverse, scale, sh_pad=pad,
                         sh_stagger=stagger, untiled=u, slot_scale=limits.slot_scale, **kw)
        # halves' floats only where asked for: a vec2 footprint that does not fit otherwise
        sized = max(p.shared_bytes, p.lines * p.sh_line * slot)
        if not p.uses_shared or (sized <= limits.max_shared_bytes
                                 and not (tile_lines and p.lines < tile_lines)):
            break
        shape = (threads, 0)  # the same invocations, the default lines
    else:
        return None
    # Registers per invocation stay bounded: beyond that the compiler spills.
    if p.registers > register_cap(radices):
        return None
    return p


def line_pass(n: int, inverse: bool, scale: float, limits, **kw) -> StockhamPass | None:
    """stockham_pass for contiguous lines, sized by their vec2 footprint; else, where not even
    one line fits that way (6144 < n <= 12288 on 48 KB), by the halves' float one: one line in
    one pass instead of a two-pass four-step, which was faster for every length measured. Not
    for Bluestein's convolution FFTs (axis_factors)."""
    p = stockham_pass(n, inverse, scale, limits, **kw)
    return p if p is not None else stockham_pass(n, inverse, scale, limits, halves=True, **kw)


def tiled_pass(n: int, inverse: bool, scale: float, limits, tiles: tuple,
               **kw) -> StockhamPass | None:
    """stockham_pass with the first of `tiles` (lines per workgroup, widest first) that fits."""
    for t in tiles:
        p = stockham_pass(n, inverse, scale, limits, tile_lines=t, **kw)
        if p is not None:
            return p
    return None


def fast_factors(n: int, limits, tiled: bool = False, halves: bool = True
                  ) -> list[int] | None:
    """n as 1 to 3 factors that each run as a one-dispatch pass, balanced; None if none.

    `tiled`: the single pass must move whole tiles of lines through shared memory (a strided axis).
    `halves`: contiguous lines may take one pass where only one line in halves fits (line_pass).
    """
    one = (stockham_pass(n, False, 1.0, limits, tile_lines=tile_lines_for(limits)) if tiled
           else (line_pass if halves else stockham_pass)(n, False, 1.0, limits))
    if one is not None:
        return [n]
    if radices_for(n) is None:
        return None
    fmax = limits.max_shared_bytes // (COMPLEX64_BYTES * tile_lines_for(limits))
    ok = [d for d in range(2, min(n, fmax) + 1) if n % d == 0 and
          stockham_pass(d, False, 1.0, limits, tile_lines=tile_lines_for(limits)) is not None]
    if not tiled and n & (n - 1) == 0:
        # Two factors that take FOURSTEP_TILE_LINES, if n has them; else two whose strided pass
        # fits only line-fastest (untiled), before three passes.
        powers = [1 << k for k in range(1, n.bit_length() - 1)]  # n's factors but 1 and n
        best = (_balanced(n, [d for d in ok if wide_tiles(d, limits)], triples=False)
                or _balanced(n, [d for d in powers if _untiled_fits(d, limits)], triples=False))
        if best:
            return _narrow_strided(best, limits)
    return _balanced(n, ok)


def _narrow_strided(factors: list[int], limits) -> list[int]:
    """A balanced power-of-two split [contiguous, strided] (axis.chain's n1, n2) with factors
    of 2 moved from the strided pass to the contiguous one while the strided factor is above
    FOURSTEP_STRIDED_MAX, its 8-line tiles fit and the contiguous pass still takes TILE_LINES
    lines in halves: a strided pass of 1024 points or more costs more than the contiguous pass
    gains (at or below 512 the balanced split was as fast or faster)."""
    c, s = factors
    while (s > FOURSTEP_STRIDED_MAX and wide_tiles(s // 2, limits)
           and stockham_pass(2 * c, False, 1.0, limits, tile_lines=tile_lines_for(limits),
                             halves=True, store_tiled=True) is not None):
        c, s = 2 * c, s // 2
    return [c, s]


def wide_tiles(n: int, limits) -> bool:
    """Whether a strided pass of length n in a batched 1D four-step takes FOURSTEP_TILE_LINES."""
    return n & (n - 1) == 0 and stockham_pass(
        n, False, 1.0, limits, tile_lines=FOURSTEP_TILE_LINES, halves=True) is not None


def _untiled_fits(n: int, limits) -> bool:
    """Whether a power of two n runs as both passes of a batched 1D four-step, with TILE_LINES
    lines exchanging in halves (the strided one untiled, if it must). This splits 2^21 and 2^22
    in two passes of 2048 (and 1024) on 48 KB of shared memory, instead of three of 128-256. The
    untiled strided pass runs at about half of copy, so the split pays only with a good (tuned)
    shape."""
    return all(stockham_pass(n, False, 1.0, limits, tile_lines=tile_lines_for(limits), halves=True,
                             load_tiled=load, store_tiled=True, fourstep_n=2 * n,
                             line_dims=(1, 2, 1)) is not None for load in (True, False))


def _untiled_axis(n: int, inner: int, limits) -> bool:
    """Whether a strided axis of length n (inner extent `inner`) whose tiles do not fit runs in
    one pass anyway, line-fastest with TILE_LINES lines exchanging in halves, instead of a
    two-pass four-step: lengths in (1536, 3072] with 48 KB of shared memory. The lines' rows
    then move in runs of TILE_LINES values (32 bytes), which must not straddle the GPU's
    32-byte sectors, so only where TILE_LINES divides `inner` (an odd `inner` was slower); in at
    most UNTILED_AXIS_STAGES stages (each exchange in halves costs four barriers); and with its
    lines staggered across the banks (unstaggered lines, as 3072's that exactly fill 48 KB, were
    slower than two passes)."""
    if inner <= 1 or inner % tile_lines_for(limits):
        return False
    p = stockham_pass(n, False, 1.0, limits, tile_lines=tile_lines_for(limits), halves=True,
                      line_dims=(inner, 1, 1), load_tiled=True, store_tiled=True)
    return p is not None and p.sh_stagger and len(p.radices) <= UNTILED_AXIS_STAGES


def axis_factors(n: int, inner: int, limits, conv: bool = False) -> list[int] | None:
    """fast_factors for a length-n axis of inner extent `inner`, in one pass where
    _untiled_axis takes it (Bluestein's convolution FFTs along a strided axis too). `conv`:
    Bluestein's convolution FFTs, whose contiguous lines do not take line_pass's one line in
    halves (the chirp and the kernel's spectrum are multiplied in the same pass as the
    zero-padded load, and one pass was no faster there)."""
    factors = fast_factors(n, limits, inner > 1, halves=not conv)
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


def smooth_length(m: int, limits, tiled: bool = False) -> int:
    """Bluestein's convolution length: the smallest 2^a * c >= m with c in 1, 3, 5, 7, 9.

    Mostly radix-4/8 stages with at most two odd ones: cheap butterflies, and few distinct
    lengths, so many transform lengths share the same compiled convolution programs.
    """
    best = None
    for c in (1, 3, 5, 7, 9):
        k = c
        while k < m:
            k *= 2
        if fast_factors(k, limits, tiled) is not None and (best is None or k < best):
            best = k
    if best is None:
        raise ValueError(f"no convolution length >= {m} fits this device")
    return best
