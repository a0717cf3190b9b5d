"""Element passes: one invocation per element (shaders/dct.comp, shaders/signal.comp), planned
like the FFT passes (pure Python, no GPU). An ElementPass gives its kernel, `defines()`, its
dispatches' grids and push values; the device layer only compiles, allocates and binds."""
from __future__ import annotations

import math
from dataclasses import dataclass

from .dispatch import groups_per_dispatch, split_groups

# shaders/signal.comp's push constants
SIGNAL_PUSH = ("total", "group_base", "ns1", "n1", "off1", "ns2", "n2", "off2", "inner")


def local_size(limits) -> int:
    """Invocations per workgroup of an element pass: 256, or what the device allows."""
    return min(256, limits.max_invocations, limits.max_group_size[0])


@dataclass(frozen=True, eq=False)
class ElementPass:
    """`kernel` over `threads` invocations of `local` each, with the `stage` defines and the push
    values `values` by name (plus `total` and `group_base`, set per dispatch), in `precision`
    (32 or 64)."""

    kernel: str
    stage: dict
    threads: int
    values: dict
    push_names: tuple
    local: int
    precision: int = 32
    values_per_invocation: int = 32  # the work budget's estimate of one invocation's traffic

    def defines(self) -> dict:
        out = {**self.stage, "LOCAL": self.local}
        if self.precision == 64:
            out["PRECISION"] = 64
        return out

    def grids(self, limits) -> list[tuple[int, int, int]]:
        """(base, gx, gy) dispatches inside the device's grid limits and a dispatch's budget."""
        return split_groups(-(-self.threads // self.local), limits.max_group_count,
                            groups_per_dispatch(self.local * self.values_per_invocation))

    def push(self, base: int) -> list[int]:
        v = dict(self.values, total=self.threads, group_base=base)
        return [v[k] for k in self.push_names]


def product_pass(count: int, precision: int, limits, period: int = 0) -> ElementPass:
    """The complex product of two spectra of `count` elements (signal.comp's STAGE_CMUL); with
    `period`, the second is `period` elements repeated (one block's, overlap-add)."""
    stage = {"STAGE_CMUL": 1, "CMUL_PERIOD": 1} if period else {"STAGE_CMUL": 1}
    values = {k: 0 for k in SIGNAL_PUSH[2:]}
    if period:
        values["n1"] = period
    return ElementPass("signal.comp", stage, count, values, SIGNAL_PUSH, local_size(limits),
                       precision)


# The longest kernel whose rows' DFT along one axis product_dft_pass sums in place of an FFT pass
# (the pass's shared tile holds this many rows' roots).
DFT_ROWS_MAX = 32
DFT_OUTPUTS = 4  # values k of that pass per invocation, each with its mirror n - k


def product_dft_pass(outer: int, n: int, rows: int, inner: int, precision: int,
                     limits) -> ElementPass:
    """The product of a spectrum of (outer, n, inner) complex values with the DFT along its
    n-axis of a kernel's `rows` (<= DFT_ROWS_MAX) rows (outer, rows, inner), the kernel zero
    past them (signal.comp's STAGE_CMUL_DFT): the kernel's last FFT pass summed where the
    product reads it, from the n roots of unity (tables.twiddle_table(n)). A workgroup per
    (outer index, block of DFT_OUTPUTS values k <= n / 2, `local` values of the inner index)."""
    local = local_size(limits)
    blocks, chunks = -(-(n // 2 + 1) // DFT_OUTPUTS), -(-inner // local)
    push = dict(ns1=n, n1=rows, n2=blocks, inner=inner)
    values = {k: push.get(k, 0) for k in SIGNAL_PUSH[2:]}
    stage = {"STAGE_CMUL_DFT": 1, "DFT_OUTPUTS": DFT_OUTPUTS, "DFT_ROWS_MAX": DFT_ROWS_MAX}
    return ElementPass("signal.comp", stage, outer * blocks * chunks * local, values, SIGNAL_PUSH,
                       local, precision, values_per_invocation=rows + 4 * DFT_OUTPUTS)


def blocks_pass(outer: int, n: int, blocks: int, step: int, length: int, inner: int,
                precision: int, limits) -> ElementPass:
    """Overlap-add's blocks (signal.comp's STAGE_BLOCKS): `outer` lines of `n` elements of
    `inner` reals cut into `blocks` blocks of `length`, block b holding elements
    [b step, b step + step) and zeros after them."""
    push = dict(ns1=n, n1=blocks, off1=0, ns2=step, n2=length, off2=0, inner=inner)
    return ElementPass("signal.comp", {"STAGE_BLOCKS": 1}, outer * blocks * length * inner,
                       push, SIGNAL_PUSH, local_size(limits), precision)


def overlap_add_pass(outer: int, blocks: int, step: int, length: int, span: tuple[int, int],
                     inner: int, precision: int, limits) -> ElementPass:
    """The blocks of blocks_pass, each convolved to `length`, summed where they overlap, and
    (offset, count) `span` of the sum kept (signal.comp's STAGE_OVERLAP_ADD)."""
    push = dict(ns1=blocks, n1=span[1], off1=span[0], ns2=step, n2=length, off2=0, inner=inner)
    return ElementPass("signal.comp", {"STAGE_OVERLAP_ADD": 1}, outer * span[1] * inner, push,
                       SIGNAL_PUSH, local_size(limits), precision)


def window_passes(shape, spans, complex_: bool, precision: int, limits
                  ) -> list[tuple[ElementPass, int]]:
    """The passes cutting [off, off + n) of every axis of an array of `shape` (zero beyond it),
    two neighbouring axes per pass, at least one pass; with each the elements it writes."""
    changed = [a for a, (off, n) in enumerate(spans) if off != 0 or n != shape[a]]
    chunks: list[list[int]] = []
    for a in changed:
        if chunks and chunks[-1][-1] == a - 1 and len(chunks[-1]) == 1:
            chunks[-1].append(a)
        else:
            chunks.append([a])
    reals = 2 if complex_ else 1
    out, cur_shape = [], list(shape)
    for chunk in chunks or [[len(shape) - 1]]:
        new_shape = list(cur_shape)
        for ax in chunk:
            new_shape[ax] = spans[ax][1]
        size = math.prod(new_shape)
        a0, a1 = chunk[0], chunk[-1]
        two = len(chunk) == 2
        push = dict(ns1=cur_shape[a0], n1=new_shape[a0], off1=spans[a0][0],
                    ns2=cur_shape[a1] if two else 1, n2=new_shape[a1] if two else 1,
                    off2=spans[a1][0] if two else 0,
                    inner=math.prod(cur_shape[a1 + 1:]) * reals)
        out.append((ElementPass("signal.comp", {"STAGE_WINDOW": 1}, size * reals, push,
                                SIGNAL_PUSH, local_size(limits), precision), size))
        cur_shape = new_shape
    return out
