"""Plan composition: a transform's steps -> the passes of every axis in order, fused where they
can be, with their buffers named and the submission's chunking. One axis' passes are in axis.py,
the fusions in fusion.py, the record in spec.py, the chunking and dispatch split in dispatch.py.
The measurements behind each rule are in docs/performance-log.md (section "Planner rules")."""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from ..limits import Limits
from .abi import COMPLEX64_BYTES, REALFFT_GROUP
from .axis import axis_passes
from .dispatch import chunk_units
from .factors import axis_factors
from .fusion import blocked_pair, fused_pack, fusable, paired_unpack, unpack_shape
from .passes import Layout, RealPass, StockhamPass
from .records import Step
from .spec import TransformSpec, assign_buffers, norm_scale


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
        ps, alg, length, m = axis_passes(n, inner, inverse, norm, self.limits)
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
    fused = fusable(last, n) and unpack_shape(
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
    p = fused_pack(n, norm, limits)
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
    if (rows % 2 or axis_factors(rows, h, limits) != [rows]
            or axis_factors(rows, h + 1, limits) == [rows]):
        return None
    return (paired_unpack(real.n, rows, real.norm, limits) if fwd
            else fused_pack(real.n, real.norm, limits, rows))


def _block_row_column_pairs(draft: _Draft) -> None:
    """A row pass followed at once by the next axis' one-pass columns hand over in blocks."""
    runs = draft.c2c_runs
    for (i, n_i, ax_i, _), (j, n_j, ax_j, rows) in zip(runs, runs[1:]):
        if n_i == n_j == 1 and j == i + 1 and ax_i == len(draft.cur) - 1 and ax_j == ax_i - 1:
            pair = blocked_pair(draft.passes[i], draft.passes[j], rows, draft.cur[ax_i],
                                 draft.limits)
            if pair:
                draft.passes[i:j + 1] = pair


def _spec(draft: _Draft, axes: tuple[int, ...], inverse: bool) -> TransformSpec:
    """The finished plan: buffers named and sized, axis 0 chunked to the device's buffers."""
    shape, whole, limits = draft.shape, draft.whole, draft.limits
    passes = assign_buffers(draft.passes)
    div = 1 if whole else shape[0]
    unit = max(draft.sizes) // div
    units = 1 if whole else chunk_units(shape[0], unit, limits)
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

def plan_c2c(shape: tuple[int, ...], axes: tuple[int, ...], inverse: bool, norm: str,
             limits: Limits) -> TransformSpec:
    """Plan complex transforms of a C-contiguous array of `shape` over `axes` (in that order)."""
    return plan_steps(shape, [Step("c2c", ax, inverse=inverse, norm=norm) for ax in axes], limits)

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


def bounded_input(spec: TransformSpec, axis: int, length: int) -> TransformSpec | None:
    """`spec` (one transformed `axis`) with its first pass reading only the indices below
    `length` along that axis from an input holding only those: `length` rows in place of
    the axis' own, the rest zero and not stored. None where that pass is not a Stockham pass
    on the strided axis whose index it knows (its layout's bound free, its batch stride the
    array's extent from `axis` on; no chirp multiplying the input)."""
    first, inner = spec.passes[0], math.prod(spec.shape[axis + 1:])
    if not isinstance(first, StockhamPass) or first.src is None or first.pre_mul is not None \
            or first.real_pack or first.src.length is not None or first.src.dynamic \
            or spec.axes != (axis,) or first.src.batch != spec.shape[axis] * inner:
        return None
    first = replace(first, src=replace(first.src, length=length, batch=length * inner))
    return replace(spec, passes=(first,) + tuple(spec.passes[1:]))
