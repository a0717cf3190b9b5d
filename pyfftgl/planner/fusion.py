"""Passes fused across steps: a real transform's pack or unpack riding on its half-length FFT
pass (or pairing rows of a 2D one), and a row pass handing its rows to the column pass in blocks.
Each returns the fused pass, or None where it does not apply or fit. The measurements behind each
rule are in docs/performance-log.md (section "Planner rules")."""
from __future__ import annotations

from dataclasses import replace

from ..limits import Limits
from .axis import axis_passes
from .factors import line_pass
from .passes import Layout, StockhamPass
from .rules import BLOCK_COLUMNS, BLOCK_ROW_LINES
from .spec import norm_scale


def paired_unpack(n: int, rows: int, norm: str, limits: Limits) -> StockhamPass | None:
    """The half-length row pass with the fused unpack pairing rows (real_rows), two lines per
    workgroup from shared memory, or None where it is not one pass or does not fit. Its shape
    is the tuned one for such passes (TunedShape.real) where there is one."""
    ps = axis_passes(n // 2, 1, False, "backward", real_shaped(limits, n // 2))[0]
    if len(ps) != 1 or not fusable(ps[0], n):
        return None
    p = replace(ps[0], real_unpack=n, real_rows=rows, lines=2, dst=Layout(n // 2 + 1),
                scale=norm_scale(n, norm, False))
    fits = (p.shared_bytes <= limits.max_shared_bytes and p.invocations <= limits.max_invocations
            and p.lines <= limits.max_group_size[1])
    return p if fits else None


def real_shaped(limits: Limits, n: int) -> Limits:
    """`limits` whose entry for contiguous lines of n is the one tuned on real-unpack passes of
    n, where there is one."""
    real = [e for e in limits.tuned if e.real and e.n == n]
    if not real:
        return limits
    kept = tuple(e for e in limits.tuned if e.n != n or e.tiled)
    return replace(limits, tuned=kept + (replace(real[0], real=False),))


def fused_pack(n: int, norm: str, limits: Limits, rows: int = 0) -> StockhamPass | None:
    """The half-length inverse row pass with the real pack fused into its loads (pairing rows
    where `rows`), or None where it is not one pass."""
    h = n // 2
    single = line_pass(h, True, 1.0 / h, limits)
    if single is None or not fusable(single, n):
        return None
    p = replace(single, real_pack=n, real_rows=rows, src=Layout(h + 1), dst=Layout(h),
                scale=norm_scale(n, norm, True) * n / h)
    # Its exchanges as vec2 where they fit: two barriers each instead of four (faster for the
    # pack; not for rfft's unpack).
    v = replace(p, vec2_exchange=True)
    return v if v.shared_bytes <= limits.max_shared_bytes else p

def blocked_pair(p, q, rows: int, cols: int, limits: Limits) -> tuple | None:
    """Row pass p and column pass q handing over in blocks (BLOCK_COLUMNS, see Layout.blocked),
    or None where that does not apply: each a plain one-dispatch pass, q reading tiles of whole
    blocks, the row pass's BLOCK_ROW_LINES lines fitting. (One line per workgroup, 4 lines, and
    blocks of 2 columns were slower.)"""
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


def fusable(p, n: int) -> bool:
    """Whether the real pack/unpack of n reals can ride on pass p: p must be the whole
    half-length transform of contiguous lines in one dispatch, with at least one stage."""
    return (isinstance(p, StockhamPass) and p.n == n // 2 and len(p.radices) >= 1
            and p.line_dims == (1, 1, 1) and not p.load_tiled and not p.store_tiled
            and p.pre_mul is None and p.post_mul is None)


def unpack_shape(p: StockhamPass, limits: Limits) -> StockhamPass:
    """The shape of the pass with the fused unpack: from registers, the smallest radix last (it
    has the most butterflies, so as many pairs as the other stages have butterflies, and no
    invocation idles in the last stage); else _wider."""
    if p.unpack_in_registers:
        r = list(p.radices)
        last = max(i for i, x in enumerate(r) if x == min(r))  # the last of the smallest
        return replace(p, radices=tuple(r[:last] + r[last + 1:] + [r[last]]))
    return _wider(p, limits)


def _wider(p: StockhamPass, limits: Limits) -> StockhamPass:
    """A pass with the fused real unpack and at least 64 invocations per line takes twice as
    many (at most as many as its smallest radix has butterflies) in the same or half the lines:
    its store of N + 1 bins after the last stage waits on shared memory, the table and global
    stores, and more invocations hide that. Not below 64 invocations, and not for the pack
    (irfft): slower there."""
    if p.threads < 64:
        return p
    cap = min(limits.max_invocations, limits.max_group_size[0])
    threads = min(2 * p.threads, p.n // min(p.radices), cap)
    if threads <= p.threads:
        return p
    return replace(p, threads=threads, lines=max(1, p.lines * p.threads // threads))
