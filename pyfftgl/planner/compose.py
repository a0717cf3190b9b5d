"""Plan composition: a transform's steps -> the passes of every axis in order, fused where they
can be, with their buffers named and the submission's chunking. The measurements behind each rule
are in docs/performance-log.md (section "Planner rules")."""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from ..limits import Limits
from .abi import COMPLEX64_BYTES, REALFFT_GROUP
from .factors import _axis_factors, _line_pass, _tiled_pass, smooth_length, stockham_pass
from .passes import Layout, RealPass, StockhamPass
from .records import BluesteinKernelKey, ChirpKey, Step
from .rules import (AXIS_TILE_LINES, BLOCK_COLUMNS, BLOCK_ROW_LINES, FOURSTEP_TILE_LINES,
                    tile_lines_for)


def norm_scale(n: int, norm: str, inverse: bool) -> float:
    """The factor applied to the output of a length-n transform under numpy's `norm`."""
    if norm == "ortho":
        return 1.0 / math.sqrt(n)
    if (norm == "backward") == inverse:  # backward scales the inverse, forward the forward
        return 1.0 / n
    return 1.0


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

    def tables(self) -> list:
        """Every table the passes read, the chirps last: then each other table's offset depends
        on the convolution lengths alone, and equal-length plans share their programs."""
        seen = []
        for p in self.passes:
            seen += [t for t in p.tables() if t not in seen]
        return sorted(seen, key=lambda t: isinstance(t, ChirpKey))


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
    t = tile_lines_for(limits)
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
    chirp = ChirpKey(n, inverse)
    edge = AxisView(n * inner, inner, length=n, dynamic=True)
    work = AxisView(m * inner, inner)
    fwd = _chain(m, mf, inner, False, 1.0, limits, edge, work, pre_mul=chirp,
                 post_mul=BluesteinKernelKey(n, m, inverse))
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


@dataclass
class _Draft:
    """A plan being composed: the passes so far, per transformed axis its algorithm and
    Bluestein length, and the array's shape (`cur`) and element counts after each pass."""

    shape: tuple[int, ...]
    whole: bool  # a chunk unit is the whole array, or one index of axis 0
    limits: Limits
    cur: list[int] = field(default_factory=list)
    passes: list = field(default_factory=list)
    algorithms: list[str] = field(default_factory=list)
    convs: list[int] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)
    # (index of the first pass, passes, axis, its length) of each c2c step
    c2c_runs: list[tuple[int, int, int, int]] = field(default_factory=list)

    def __post_init__(self):
        self.cur = list(self.shape)
        self.sizes = [math.prod(self.shape)]

    def per_unit_lines(self, ax: int) -> int:
        """Batch lines of an axis per chunk unit."""
        return math.prod(self.cur[:ax]) if self.whole else math.prod(self.cur[1:ax])

    def add_c2c(self, ax: int, inverse: bool, norm: str) -> None:
        n, inner = self.cur[ax], math.prod(self.cur[ax + 1:])
        if n < 1:
            raise ValueError(f"Invalid number of FFT data points ({n}) specified.")
        ps, alg, length, m = _axis_passes(n, inner, inverse, norm, self.limits)
        self.c2c_runs.append((len(self.passes), len(ps), ax, n))
        self.passes.extend(replace(p, per_unit=self.per_unit_lines(ax)) for p in ps)
        self.algorithms.append(alg)
        self.convs.append(m)
        self.sizes.append(math.prod(self.cur) // n * length)

    def add_real(self, mode: int, ax: int, n_out_axis: int, nreal: int, scale: float) -> None:
        inner, n_in = math.prod(self.cur[ax + 1:]), self.cur[ax]
        self.cur[ax] = n_out_axis
        elems = math.prod(self.cur) // (1 if self.whole else self.cur[0])
        group = min(REALFFT_GROUP, self.limits.max_invocations, self.limits.max_group_size[0])
        self.passes.append(RealPass(mode, nreal, n_in, n_out_axis, inner, scale, elems,
                                    group=group))
        self.sizes.append(math.prod(self.cur))

    def add_fused(self, p, ax: int, n_out_axis: int, algorithm: str | None = None) -> None:
        """Pass p, fused with a real pack or unpack, as the last pass (replacing the half-length
        FFT's pass it was made from, unless it adds an axis' `algorithm`)."""
        if algorithm is None:
            self.passes[-1] = p
        else:
            self.passes.append(p)
            self.algorithms.append(algorithm)
            self.convs.append(0)
        self.cur[ax] = n_out_axis
        self.sizes.append(math.prod(self.cur))


def _add_r2c(draft: _Draft, step: Step) -> None:
    """The first step of a real forward transform: for even n on the innermost axis the
    half-length complex FFT with the unpack fused into its store where its line fits (else an
    unpack pass after it); otherwise a full complex FFT and a crop."""
    ax, n, norm, limits = step.axis, step.n, step.norm, draft.limits
    if not (n % 2 == 0 and ax == len(draft.cur) - 1):
        draft.cur[ax] = n
        draft.add_c2c(ax, False, norm)
        draft.add_real(RealPass.CROP, ax, n // 2 + 1, n, 1.0)
        return
    draft.cur[ax] = n // 2
    draft.add_c2c(ax, False, "backward")
    last = draft.passes[-1]
    fused = _fusable(last, n) and _unpack_shape(
        replace(last, real_unpack=n, dst=Layout(n // 2 + 1), scale=norm_scale(n, norm, False)),
        limits)
    if fused and fused.shared_bytes > limits.max_shared_bytes:
        fused = replace(fused, sh_stagger=False)  # the line, unstaggered
    if fused and fused.shared_bytes <= limits.max_shared_bytes:
        draft.add_fused(fused, ax, n // 2 + 1)
    else:
        draft.add_real(RealPass.UNPACK, ax, n // 2 + 1, n, norm_scale(n, norm, False))


def _add_c2r(draft: _Draft, step: Step) -> None:
    """The last step of a real inverse transform: for even n on the innermost axis the
    half-length inverse FFT with the pack fused into its loads where it is one pass (else a pack
    pass before it); otherwise an extend and a full complex FFT."""
    ax, n, norm, limits = step.axis, step.n, step.norm, draft.limits
    if not (n % 2 == 0 and ax == len(draft.cur) - 1):
        draft.add_real(RealPass.EXTEND, ax, n, n, 1.0)
        draft.add_c2c(ax, True, norm)
        return
    p = _fused_pack(n, norm, limits)
    if p is None:
        draft.add_real(RealPass.PACK, ax, n // 2, n, norm_scale(n, norm, True) * n)
        draft.add_c2c(ax, True, "backward")
        return
    draft.add_fused(replace(p, per_unit=draft.per_unit_lines(ax)), ax, n // 2,
                    algorithm="stockham")


def _add_step(draft: _Draft, step: Step, first: bool, last: bool,
              paired: StockhamPass | None = None) -> None:
    """Add a step; `paired` (_columns_on_half): the real step's row pass, its column step
    moved to the other side of it."""
    if step.kind == "c2c":
        draft.add_c2c(step.axis, step.inverse, step.norm)
    elif paired is not None:
        draft.add_fused(replace(paired, per_unit=draft.per_unit_lines(step.axis)), step.axis,
                        paired.n + bool(paired.real_unpack), algorithm="stockham")
    elif step.kind == "r2c":
        if not first:
            raise ValueError("r2c must be the first step")
        _add_r2c(draft, step)
    else:
        if not last:
            raise ValueError("c2r must be the last step")
        _add_c2r(draft, step)


def _columns_on_half(draft: _Draft, steps: list[Step]) -> StockhamPass | None:
    """The row pass of a 2D real transform whose column axis (R rows) runs on the rows'
    half-length complex view (rfft: before the rows, on the upload; irfft: after the rows'
    pack), pairing rows r and R - r (StockhamPass.real_rows); else None. Where the n/2 columns
    of that view take one pass and the n/2 + 1 of the usual order do not (rfft2 2048^2 on 48 KB:
    1024 columns go line-fastest in one pass, 1025 take a two-pass four-step)."""
    if len(steps) < 2:
        return None
    fwd = steps[0].kind == "r2c"
    real, col = (steps[0], steps[1]) if fwd else (steps[-1], steps[-2])
    ax, limits = len(draft.cur) - 1, draft.limits
    if not (real.kind in ("r2c", "c2r") and col.kind == "c2c" and col.inverse != fwd
            and real.axis == ax and col.axis == ax - 1 and real.n % 2 == 0):
        return None
    rows, h = draft.cur[ax - 1], real.n // 2
    if (rows % 2 or _axis_factors(rows, h, limits) != [rows]
            or _axis_factors(rows, h + 1, limits) == [rows]):
        return None
    return (_paired_unpack(real.n, rows, real.norm, limits) if fwd
            else _fused_pack(real.n, real.norm, limits, rows))


def _paired_unpack(n: int, rows: int, norm: str, limits: Limits) -> StockhamPass | None:
    """The half-length row pass with the fused unpack pairing rows (real_rows), two lines per
    workgroup from shared memory, or None where it is not one pass or does not fit."""
    ps = _axis_passes(n // 2, 1, False, "backward", limits)[0]
    if len(ps) != 1 or not _fusable(ps[0], n):
        return None
    p = replace(ps[0], real_unpack=n, real_rows=rows, lines=2, dst=Layout(n // 2 + 1),
                scale=norm_scale(n, norm, False))
    fits = (p.shared_bytes <= limits.max_shared_bytes and p.invocations <= limits.max_invocations
            and p.lines <= limits.max_group_size[1])
    return p if fits else None


def _fused_pack(n: int, norm: str, limits: Limits, rows: int = 0) -> StockhamPass | None:
    """The half-length inverse row pass with the real pack fused into its loads (pairing rows
    where `rows`), or None where it is not one pass."""
    h = n // 2
    single = _line_pass(h, True, 1.0 / h, limits)
    if single is None or not _fusable(single, n):
        return None
    p = replace(single, real_pack=n, real_rows=rows, src=Layout(h + 1), dst=Layout(h),
                scale=norm_scale(n, norm, True) * n / h)
    # Its exchanges as vec2 where they fit: two barriers each instead of four (faster for the
    # pack; not for rfft's unpack).
    v = replace(p, vec2_exchange=True)
    return v if v.shared_bytes <= limits.max_shared_bytes else p


def _block_row_column_pairs(draft: _Draft) -> None:
    """A row pass followed at once by the next axis' one-pass columns hand over in blocks."""
    runs = draft.c2c_runs
    for (i, n_i, ax_i, _), (j, n_j, ax_j, rows) in zip(runs, runs[1:]):
        if n_i == n_j == 1 and j == i + 1 and ax_i == len(draft.cur) - 1 and ax_j == ax_i - 1:
            pair = _blocked_pair(draft.passes[i], draft.passes[j], rows, draft.cur[ax_i],
                                 draft.limits)
            if pair:
                draft.passes[i:j + 1] = pair


def _spec(draft: _Draft, axes: tuple[int, ...], inverse: bool) -> TransformSpec:
    """The finished plan: buffers named and sized, axis 0 chunked to the device's buffers."""
    shape, whole, limits = draft.shape, draft.whole, draft.limits
    passes = assign_buffers(draft.passes)
    div = 1 if whole else shape[0]
    unit = max(draft.sizes) // div
    units = 1 if whole else _chunk_units(shape[0], unit, limits)
    if whole and unit * COMPLEX64_BYTES > limits.max_buffer_bytes:
        raise ValueError(
            f"this transform needs {unit * COMPLEX64_BYTES} bytes of device memory per buffer, "
            f"more than this device's largest storage buffer ({limits.max_buffer_bytes} bytes)")
    names = sorted({b for p in passes for b in (p.src_buf, p.dst_buf)})
    out_elems = math.prod(draft.cur) // (1 if whole else draft.cur[0])
    sizes_by_name = tuple((b, math.prod(shape) // div if b == "in" else
                           out_elems if b == "out" else unit) for b in names)
    return TransformSpec(shape, axes, inverse, tuple(passes), units, sizes_by_name,
                         tuple(draft.algorithms), tuple(draft.convs),
                         out_shape=tuple(draft.cur), whole=whole)


def plan_steps(shape: tuple[int, ...], steps: list[Step], limits: Limits) -> TransformSpec:
    """Plan `steps` (records.Step) over a C-contiguous array of `shape` (the shape of what is
    uploaded, in complex64 elements), all in one submission. Axis 0 is cut into chunks that fit
    the device's buffers when no step transforms it."""
    shape = tuple(int(x) for x in shape)
    draft = _Draft(shape, any(st.axis == 0 for st in steps), limits)
    paired = _columns_on_half(draft, steps)
    if paired:  # the real step and its column step trade places
        k = 0 if steps[0].kind == "r2c" else len(steps) - 2
        steps = steps[:k] + [steps[k + 1], steps[k]] + steps[k + 2:]
    axes = tuple(st.axis for st in steps)  # in the order they run
    for i, step in enumerate(steps):
        _add_step(draft, step, i == 0, i == len(steps) - 1, paired)
    _block_row_column_pairs(draft)
    return _spec(draft, axes, steps[-1].is_inverse)


def _blocked_pair(p, q, rows: int, cols: int, limits: Limits) -> tuple | None:
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


def _fusable(p, n: int) -> bool:
    """Whether the real pack/unpack of n reals can ride on pass p: p must be the whole
    half-length transform of contiguous lines in one dispatch, with at least one stage."""
    return (isinstance(p, StockhamPass) and p.n == n // 2 and len(p.radices) >= 1
            and p.line_dims == (1, 1, 1) and not p.load_tiled and not p.store_tiled
            and p.pre_mul is None and p.post_mul is None)


def _unpack_shape(p: StockhamPass, limits: Limits) -> StockhamPass:
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


def plan_c2c(shape: tuple[int, ...], axes: tuple[int, ...], inverse: bool, norm: str,
             limits: Limits) -> TransformSpec:
    """Plan complex transforms of a C-contiguous array of `shape` over `axes` (in that order)."""
    return plan_steps(shape, [Step("c2c", ax, inverse=inverse, norm=norm) for ax in axes], limits)


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
    kept = ("tuned", "tile_lines", "row_lines", "slot_scale")  # the plan's view, not limits
    return Limits(**{f: getattr(device, f) if f in kept
                     else pick(getattr(device, f), getattr(wanted, f))
                     for f in Limits.__dataclass_fields__})


def split_groups(groups: int, max_count: tuple[int, int, int], max_groups: int | None = None
                 ) -> list[tuple[int, int, int]]:
    """Cover `groups` workgroups with (base, gx, gy) dispatches inside the device's count limits,
    each running at most `max_groups` of them (the work budget: dispatch_grids).

    Each dispatch runs a gx-by-gy grid; the kernel numbers its workgroups base + x + y * gx and
    skips those >= groups, so nothing is ever truncated silently. The dispatches are as few as
    the limits allow (more only where rows round down) and evenly sized, their rows as few as fit
    and balanced, so fewer than gy workgroups idle: 65536 groups under a 65535 limit run as
    2 x 32768, not 2 x 65535 with half of them empty. Every dispatch but the last runs only live
    workgroups (gx * gy <= its share), so none does more than `max_groups` of work.
    """
    gx_max, gy_max = max_count[0], max_count[1]
    cap = gx_max * gy_max if max_groups is None else max(1, min(max_groups, gx_max * gy_max))
    fewest = -(-groups // cap)
    out, base = [], 0
    while base < groups:
        left = groups - base
        share = min(cap, -(-left // max(1, fewest - len(out))))  # the rest, evenly
        gy = min(-(-share // gx_max), gy_max)
        gx = min(-(-share // gy) if share == left else share // gy, gx_max)
        out.append((base, gx, gy))
        base += gx * gy
    return out


# Bytes of memory traffic one dispatch may cause (estimated): small enough that the slowest GPU
# pyfftgl targets finishes it far inside a display watchdog (2 s on Windows) even when compute
# bound, big enough that large transforms split into few dispatches (docs/performance-log.md).
DISPATCH_BYTES = 1 << 29


def dispatch_grids(p, units: int, limits: Limits, element_bytes: int = COMPLEX64_BYTES
                   ) -> list[tuple[int, int, int]]:
    """The (base, gx, gy) dispatches of pass p over `units` chunk units, inside the device's
    count limits and DISPATCH_BYTES of estimated traffic each (p.values_per_group() values of
    `element_bytes`: the plan's element with all its fields)."""
    return split_groups(p.groups(units), limits.max_group_count,
                        groups_per_dispatch(p.values_per_group() * element_bytes))


def groups_per_dispatch(bytes_per_group: int) -> int:
    """Workgroups one dispatch may run within DISPATCH_BYTES, each moving `bytes_per_group`."""
    return max(1, DISPATCH_BYTES // bytes_per_group)
