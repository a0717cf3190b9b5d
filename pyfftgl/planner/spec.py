"""The plan record: TransformSpec (a transform's passes over a C-contiguous array, its buffers
and chunking), AxisView (an axis of such a buffer), numpy's norm as a scale, and buffer naming."""
from __future__ import annotations

import math
from dataclasses import dataclass, replace

from .passes import Layout
from .records import ChirpKey


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


def assign_buffers(passes: list) -> list:
    """Name every pass's buffers: the first reads "in", the last writes "out", and the passes in
    between alternate between two work buffers (each reads what the one before wrote)."""
    out = []
    for i, p in enumerate(passes):
        src = "in" if i == 0 else out[-1].dst_buf
        dst = "out" if i == len(passes) - 1 else ("w0" if src != "w0" else "w1")
        out.append(replace(p, src_buf=src, dst_buf=dst))
    return out
