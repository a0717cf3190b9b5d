"""The passes of a transform along one axis: one Stockham pass, a four-step chain of two or
three, or Bluestein's convolution (a forward and an inverse chain) for lengths that do not factor.
The measurements behind each rule are in docs/performance-log.md (section "Planner rules")."""
from __future__ import annotations

from ..limits import Limits
from .factors import axis_factors, line_pass, smooth_length, stockham_pass, tiled_pass
from .passes import StockhamPass
from .records import BluesteinKernelKey, ChirpKey
from .rules import AXIS_TILE_LINES, FOURSTEP_TILE_LINES, tile_lines_for
from .spec import AxisView, norm_scale


def chain(n: int, factors: list[int], inner: int, inverse: bool, scale: float, limits: Limits,
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
    t = tile_lines_for(limits)
    work = AxisView(n * inner, inner)

    def both(m):  # lines per workgroup to try for a length-m pass strided at both ends
        return (FOURSTEP_TILE_LINES, t) if not tiled and m & (m - 1) == 0 else (t,)
    if len(factors) == 1:
        kw = dict(line_dims=(inner, 1, 1), src=src.layout((1, 0, 0), 1, (0, 0, 0), 1),
                  dst=dst.layout((1, 0, 0), 1, (0, 0, 0), 1), load_tiled=tiled,
                  store_tiled=tiled, pre_mul=pre_mul, post_mul=post_mul)
        p = (tiled_pass(n, inverse, scale, limits, (AXIS_TILE_LINES, t), **kw) if tiled
             else line_pass(n, inverse, scale, limits, **kw))
        if p is None and tiled:  # no tile fits: line-fastest, exchanging in halves (_untiled_axis)
            p = stockham_pass(n, inverse, scale, limits, tile_lines=t, halves=True, **kw)
        return [p]
    if len(factors) == 2:
        n1, n2 = factors
        a = tiled_pass(n2, inverse, 1.0, limits, both(n2), line_dims=(inner, n1, 1),
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
    a = tiled_pass(n3, inverse, 1.0, limits, both(n3), line_dims=(inner, pp, 1),
                    src=src.layout((1, src.e, 0), pp, (0, 1, 0), pp),
                    dst=work.layout((1, inner, 0), pp, (0, 1, 0), pp),
                    load_tiled=True, store_tiled=True, fourstep_n=n, pre_mul=pre_mul,
                    halves=not tiled)
    b = tiled_pass(n2, inverse, 1.0, limits, both(n2), line_dims=(inner, n1, n3),
                    src=work.layout((1, inner, pp * inner), n1, (0, 0, 0), 1),
                    dst=work.layout((1, inner, pp * inner), n1, (0, 0, 0), 1),
                    load_tiled=True, store_tiled=True, fourstep_n=pp, halves=not tiled)
    c = stockham_pass(n1, inverse, scale, limits, tile_lines=t, line_dims=(inner, n3, n2),
                      src=work.layout((1, pp * inner, n1 * inner), 1, (0, 0, 0), 1),
                      dst=dst.layout((1, dst.e, n3 * dst.e), n3 * n2, (0, 1, n3), n3 * n2),
                      load_tiled=tiled, store_tiled=True, post_mul=post_mul)
    return [a, b, c]


def axis_passes(n: int, inner: int, inverse: bool, norm: str, limits: Limits
                 ) -> tuple[list[StockhamPass], str, int, int]:
    """(passes, algorithm, working length, Bluestein length) of a transform along one axis of
    length n whose inner extent is `inner`, from and to [batch][n][inner] buffers."""
    scale = norm_scale(n, norm, inverse)
    view = AxisView(n * inner, inner)
    factors = axis_factors(n, inner, limits)
    if factors is not None:
        passes = chain(n, factors, inner, inverse, scale, limits, view, view)
        return passes, "stockham" if len(passes) == 1 else "four-step", n, 0
    # Bluestein: X[k] = w[k] sum_j (x[j] w[j]) conj(w[k - j]) with the chirp w[j] =
    # exp(-+i pi j^2 / n): a length-m circular convolution with m >= 2n - 1, computed as a
    # forward FFT (input times chirp fused into its first pass, times the kernel's spectrum fused
    # into its last) and an inverse FFT (times chirp and 1/m fused into its last pass).
    m = smooth_length(2 * n - 1, limits, inner > 1)
    mf = axis_factors(m, inner, limits, conv=True)
    chirp = ChirpKey(n, inverse)
    edge = AxisView(n * inner, inner, length=n, dynamic=True)
    work = AxisView(m * inner, inner)
    fwd = chain(m, mf, inner, False, 1.0, limits, edge, work, pre_mul=chirp,
                 post_mul=BluesteinKernelKey(n, m, inverse))
    inv = chain(m, mf, inner, True, scale / m, limits, work, edge, post_mul=chirp)
    return fwd + inv, "bluestein", m, m
