"""DCT and DST types 1-4 as complex FFTs between two small passes (pure: no GPU).

Each transformed axis of a real array, viewed as (outer, n, inner) reals, runs as
  pre:  reals -> complex lines of the FFT's length m (reorder, weights, pre-twiddle, pairing);
  FFT:  the library's complex transform of length m along the line axis;
  post: complex -> n reals (post-twiddle, scale, reorder).
Types 2 and 3 use Makhoul's reordering (m = n: one complex FFT of length n carries two real
lines, one in the real part and one in the imaginary part); DST-II/III are DCT-II/III with the
input signs alternated or reversed and the output reversed or signs alternated. Types 1 and 4 use
y[k] = Re(c[k] FFT_2L(u)[k]) with u[j] = a[j] x[j] zero-padded to 2L (L = n - 1, n + 1 or n):
one real line per complex line at twice the length, four times the FFT work of types 2 and 3.
The tables (a, c and the Makhoul weights) are computed here in float64 from exact integer angles.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .elements import ElementPass, local_size
from .records import Step
from .roots import unit_roots

# The kernels' modes (shaders/dct.comp MODE)
GENERIC, MAKHOUL_II, MAKHOUL_III = 0, 1, 2
SQRT2 = math.sqrt(2.0)


@dataclass(frozen=True)
class R2RAxis:
    """One axis of a DCT/DST: its kind ("dct"/"dst"), type (1-4, after scipy's inverse swap),
    length n, normalisation (pocketfft's inorm: 0 none, 1 1/sqrt(2L), 2 1/(2L)) and scipy's
    orthogonalize flag."""

    kind: str
    type: int
    n: int
    inorm: int
    orthogonalize: bool

    @property
    def mode(self) -> int:
        return {2: MAKHOUL_II, 3: MAKHOUL_III}.get(self.type, GENERIC)

    @property
    def half_period(self) -> int:
        """L: the transform's angles are multiples of pi / L."""
        if self.type == 1:
            return self.n - 1 if self.kind == "dct" else self.n + 1
        return self.n

    @property
    def fft_length(self) -> int:
        return self.n if self.mode != GENERIC else 2 * self.half_period

    @property
    def fft_inverse(self) -> bool:
        return self.mode == MAKHOUL_III

    @property
    def paired(self) -> bool:
        """Two real lines per complex FFT line (Makhoul); one for the generic form."""
        return self.mode != GENERIC

    @property
    def reversed(self) -> bool:
        """DST-II writes its outputs in reverse order, DST-III reads its inputs reversed."""
        return self.kind == "dst" and self.mode != GENERIC

    def scale(self) -> float:
        two_l = 2 * self.half_period
        return (1.0, 1.0 / math.sqrt(two_l), 1.0 / two_l)[self.inorm]

    def tables(self) -> np.ndarray:
        """3 n complex128 values: the pre pass's two tables, then the post pass's."""
        n, f = self.n, self.scale()
        j = np.arange(n, dtype=np.int64)
        out = np.zeros((3, n), np.complex128)
        orth = self.orthogonalize
        if self.mode == MAKHOUL_II:
            # pre: the input sign (DST-II: (-1)^j); post: 2 f exp(-i pi k / 2n)
            out[0] = np.where(j % 2 == 1, -1.0, 1.0) if self.kind == "dst" else 1.0
            c = 2.0 * f * unit_roots(j, 4 * n)
            if orth:
                c[0] /= SQRT2  # scipy: y[0] (DST-II: y[n-1]) / sqrt(2)
            out[2] = c
        elif self.mode == MAKHOUL_III:
            # pre: V[k] = P[k] x'[k] + Q[k] x'[n-k], x' the (DST: reversed) input with x'[0]
            # weighted 1 and the rest 2 before the unnormalised inverse FFT (scipy's DCT-III)
            w = np.full(n, f)
            if orth:
                w[0] *= SQRT2
            t = unit_roots(j, 4 * n, sign=1)
            out[0] = t * w
            q = np.zeros(n, np.complex128)
            q[1:] = -1j * t[1:] * w[::-1][:-1]  # w[n - k] for k >= 1
            out[1] = q
            out[2] = np.where(j % 2 == 1, -1.0, 1.0) if self.kind == "dst" else 1.0
        else:
            L = self.half_period
            # (alpha, beta) of cos/sin(pi (j + alpha) (k + beta) / L), doubled to integers
            a2, b2 = {(1, "dct"): (0, 0), (1, "dst"): (2, 2), (4, "dct"): (1, 1),
                      (4, "dst"): (1, 1)}[(self.type, self.kind)]
            w = np.full(n, 2.0 * f)
            if self.type == 1 and self.kind == "dct":
                w[0] = w[-1] = f
                if orth:
                    w[0] *= SQRT2
                    w[-1] *= SQRT2
            out[0] = w * unit_roots(b2 * j, 4 * L)  # exp(-i pi j beta / L)
            c = unit_roots(a2 * (2 * j + b2), 8 * L)  # exp(-i pi alpha (k + beta) / L)
            if self.kind == "dst":
                c = 1j * c  # -Im(z) = Re(i z)
            if self.type == 1 and self.kind == "dct" and orth:
                c[0] /= SQRT2
                c[-1] /= SQRT2
            out[2] = c
        return out.ravel()


@dataclass(frozen=True)
class LineView:
    """How an axis's real lines map onto complex FFT lines: the reals as (outer, n, inner);
    the FFT data as (lines_p, m, lines_q). Paired: two real lines per complex line, the
    neighbouring inner lines where inner is even (complex input's real and imaginary parts
    among them), else neighbouring outer lines (the last alone when outer is odd)."""

    outer: int
    inner: int
    paired: bool

    @property
    def pair_inner(self) -> bool:
        return self.paired and self.inner % 2 == 0

    @property
    def lines_p(self) -> int:
        if self.paired and not self.pair_inner:
            return (self.outer + 1) // 2
        return self.outer

    @property
    def lines_q(self) -> int:
        return self.inner // 2 if self.pair_inner else self.inner


def fft_shape(p: int, m: int, q: int) -> tuple[tuple[int, ...], int]:
    """The complex array (shape, axis) the FFT of a (p, m, q) work array transforms, without
    the unit axes the FFT planner need not see."""
    if p == 1 and q == 1:
        return (m,), 0
    if q == 1:
        return (p, m), 1
    if p == 1:
        return (m, q), 0
    return (p, m, q), 1


# shaders/dct.comp's push constants; p*: the previous axis, for a fused pre pass
DCT_PUSH = ("total", "group_base", "outer", "nsrc", "n", "m", "inner", "lines_p", "lines_q", "tbl",
            "pn", "pm", "pinner", "pq", "ptbl")


@dataclass(eq=False)
class R2RStep:
    """One axis of a DCT/DST plan: its pre pass, the complex FFT between ((shape, Step) of it,
    None for lines of one element) and its post pass. `fused`: the pre pass reads the previous
    axis's spectrum through that axis's post (`fused_next` there: its post is never run alone).
    `size`: the reals after this axis."""

    pre: ElementPass
    post: ElementPass
    fft: tuple | None
    fused: bool
    size: int
    fused_next: bool = False


@dataclass(eq=False)
class R2RSpec:
    """A DCT/DST of a real array: its axes' steps, their tables (complex, one section per axis),
    the complex elements of each of its two work buffers, and the reals of each of its `mids`
    stored intermediates (`mid`)."""

    steps: list
    tables: np.ndarray
    work: int
    mid: int
    mids: int

    @property
    def out_size(self) -> int:
        return self.steps[-1].size


def plan_r2r(real_shape, axes, precision: int, limits, fuse: bool = True) -> R2RSpec:
    """The DCT/DST over `axes` ((axis, R2RAxis) in order) of reals of `real_shape`. `fuse`: an
    axis's post pass is evaluated inside the next axis's pre pass where that reads it, so the
    reals between two axes are never stored (one pass fewer per axis after the first)."""
    tables, steps, shape, work = [], [], list(real_shape), 0
    local, tbl = local_size(limits), 0
    for ax, r2r in axes:
        outer, inner = math.prod(shape[:ax]), math.prod(shape[ax + 1:])
        view = LineView(outer, inner, r2r.paired)
        p, q, m = view.lines_p, view.lines_q, r2r.fft_length
        fft = None
        if m > 1:
            fshape, fax = fft_shape(p, m, q)
            fft = (fshape, Step("c2c", fax, inverse=r2r.fft_inverse,
                                norm="forward" if r2r.fft_inverse else "backward"))
        defines = {"MODE": r2r.mode, "PAIR_INNER": int(view.pair_inner),
                   "REVERSED": int(r2r.reversed)}
        prev = steps[-1] if steps else None
        fused = fuse and prev is not None and prev.fft is not None
        pre_defines = {"STAGE_PRE": 1, **defines}
        push = dict(outer=outer, nsrc=shape[ax], n=r2r.n, m=m, inner=inner, lines_p=p,
                    lines_q=q, tbl=tbl)
        if fused:  # this pre pass reads the previous axis's spectrum through its post
            prev.fused_next = True
            pre_defines.update({f"PREV_{k}": v for k, v in prev.post.stage.items()
                                if k != "STAGE_POST"})
            pp = prev.post.values
            push.update(pn=pp["n"], pm=pp["m"], pinner=pp["inner"], pq=pp["lines_q"],
                        ptbl=pp["tbl"])
        table = r2r.tables()
        tables.append(table)
        tbl += table.size
        shape[ax] = r2r.n
        push = {k: push.get(k, 0) for k in DCT_PUSH[2:]}
        post_threads = outer * r2r.n * inner if r2r.mode == GENERIC else p * m * q
        steps.append(R2RStep(
            ElementPass("dct.comp", pre_defines, p * m * q, push, DCT_PUSH, local, precision),
            ElementPass("dct.comp", {"STAGE_POST": 1, **defines}, post_threads, push, DCT_PUSH,
                        local, precision),
            fft, fused, math.prod(shape)))
        work = max(work, p * m * q)
    table = np.concatenate(tables).astype(np.complex128 if precision == 64 else np.complex64)
    stored = [st.size for st in steps[:-1] if not st.fused_next]
    return R2RSpec(steps, table, work, max(stored, default=0), min(2, len(stored)))
