"""DCT and DST types 1-4 as complex FFTs between two small passes (pure: no GPU).

Each transformed axis of a real array, viewed as (outer, n, inner) reals, runs as
  pre:  reals -> complex lines of the FFT's length m (reorder, weights, pre-twiddle, packing);
  FFT:  the library's complex transform of length m along the line axis;
  post: complex -> n reals (unpack, post-twiddle, scale, reorder).
Every complex line carries ONE real line, so a non-finite value stays in its line as it does in
scipy (complex input: its real and imaginary parts are separate real lines).
Types 2 and 3 use Makhoul's reordering v (even samples ascending, odd descending) with the
real-FFT trick inside the line: for even n the n reals of v are n/2 complex values
z[m] = v[2m] + i v[2m+1], a complex FFT of length h = n/2, and the post pass unpacks
V[k] = (Z[k] + conj Z[h-k]) / 2 - i W_n^k (Z[k] - conj Z[h-k]) / 2 fused with the DCT's
post-twiddle (type 3: the pre pass packs the Hermitian V into h complex values
Z[k] = V[k] + V[k+h] + i W_n^-k (V[k] - V[k+h]), the post pass reads v from a length-h inverse).
Odd n: one real line per complex line of length n (imaginary part zero). DST-II/III are
DCT-II/III with the input signs alternated or reversed and the output reversed or signs
alternated. Types 1 and 4 use y[k] = Re(c[k] FFT_2L(u)[k]) with u[j] = a[j] x[j] zero-padded to
2L (L = n - 1, n + 1 or n): one real line per complex line at twice the length.
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
    def half(self) -> bool:
        """Makhoul with the line's n reals packed as n/2 complex values (even n)."""
        return self.mode != GENERIC and self.n % 2 == 0

    @property
    def fft_length(self) -> int:
        if self.mode == GENERIC:
            return 2 * self.half_period
        return self.n // 2 if self.half else self.n

    @property
    def fft_inverse(self) -> bool:
        return self.mode == MAKHOUL_III

    @property
    def reversed(self) -> bool:
        """DST-II writes its outputs in reverse order, DST-III reads its inputs reversed."""
        return self.kind == "dst" and self.mode != GENERIC

    def scale(self) -> float:
        two_l = 2 * self.half_period
        return (1.0, 1.0 / math.sqrt(two_l), 1.0 / two_l)[self.inorm]

    def tables(self) -> np.ndarray:
        """3 n complex128 values, three sections of n: the pre pass's, a second one of the pre
        pass (type 3) or the post pass (type 2 packed), the post pass's."""
        n, f = self.n, self.scale()
        j = np.arange(n, dtype=np.int64)
        out = np.zeros((3, n), np.complex128)
        orth = self.orthogonalize
        if self.mode == MAKHOUL_II:
            # pre: the input sign (DST-II: (-1)^j); post: c = 2 f exp(-i pi k / 2n)
            out[0] = np.where(j % 2 == 1, -1.0, 1.0) if self.kind == "dst" else 1.0
            c = 2.0 * f * unit_roots(j, 4 * n)
            if orth:
                c[0] /= SQRT2  # scipy: y[0] (DST-II: y[n-1]) / sqrt(2)
            if self.half:
                # y[k] = Re(c V[k]) = Re(e1 Z[k]) + Re(e2 conj Z[h-k]): V's unpack folded in,
                # d = -i W_n^k c = 2 f exp(-i pi (5k + n) / 2n)
                d = 2.0 * f * unit_roots(5 * j + n, 4 * n)
                if orth:
                    d[0] /= SQRT2
                out[1], c = (c - d) / 2, (c + d) / 2
            out[2] = c
        elif self.mode == MAKHOUL_III:
            # V[k] = P[k] x'[k] + Q[k] x'[n-k], x' the (DST: reversed) input with x'[0]
            # weighted 1 and the rest 2 before the unnormalised inverse FFT (scipy's DCT-III)
            w = np.full(n, f)
            if orth:
                w[0] *= SQRT2
            t = unit_roots(j, 4 * n, sign=1)
            P, Q = t * w, np.zeros(n, np.complex128)
            Q[1:] = -1j * t[1:] * w[::-1][:-1]  # w[n - k] for k >= 1
            out[0], out[1] = P, Q
            if self.half:
                # Z[k] = V[k] + V[k+h] + i W_n^-k (V[k] - V[k+h]), k < h, as weights of
                # x'[k], x'[n-k], x'[k+h], x'[h-k]
                h = n // 2
                iw = 1j * unit_roots(j[:h], n, sign=1)
                out[0] = np.concatenate([(1 + iw) * P[:h], (1 + iw) * Q[:h]])
                out[1] = np.concatenate([(1 - iw) * P[h:], (1 - iw) * Q[h:]])
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
DCT_PUSH = ("total", "group_base", "outer", "nsrc", "n", "m", "inner", "tbl", "pn", "pm",
            "pinner", "ptbl")


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
        m = r2r.fft_length
        fft = None
        if m > 1:
            fshape, fax = fft_shape(outer, m, inner)
            fft = (fshape, Step("c2c", fax, inverse=r2r.fft_inverse,
                                norm="forward" if r2r.fft_inverse else "backward"))
        defines = {"MODE": r2r.mode, "HALVED": int(r2r.half), "REVERSED": int(r2r.reversed)}
        prev = steps[-1] if steps else None
        fused = fuse and prev is not None and prev.fft is not None
        pre_defines = {"STAGE_PRE": 1, **defines}
        push = dict(outer=outer, nsrc=shape[ax], n=r2r.n, m=m, inner=inner, tbl=tbl)
        if fused:  # this pre pass reads the previous axis's spectrum through its post
            prev.fused_next = True
            pre_defines.update({f"PREV_{k}": v for k, v in prev.post.stage.items()
                                if k != "STAGE_POST"})
            pp = prev.post.values
            push.update(pn=pp["n"], pm=pp["m"], pinner=pp["inner"], ptbl=pp["tbl"])
        table = r2r.tables()
        tables.append(table)
        tbl += table.size
        shape[ax] = r2r.n
        push = {k: push.get(k, 0) for k in DCT_PUSH[2:]}
        post_defines = {"STAGE_POST": 1, **defines}
        steps.append(R2RStep(
            ElementPass("dct.comp", pre_defines, outer * m * inner, push, DCT_PUSH, local,
                        precision),
            ElementPass("dct.comp", post_defines, outer * r2r.n * inner, push, DCT_PUSH, local,
                        precision),
            fft, fused, math.prod(shape)))
        work = max(work, outer * m * inner)
    table = np.concatenate(tables).astype(np.complex128 if precision == 64 else np.complex64)
    stored = [st.size for st in steps[:-1] if not st.fused_next]
    return R2RSpec(steps, table, work, max(stored, default=0), min(2, len(stored)))
