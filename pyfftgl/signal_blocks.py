"""Overlap-add on the device: fftconvolve's (and oaconvolve's) plan for one axis convolved with
a kernel much shorter than the image. The image is cut into blocks whose FFT is one pass, every
block multiplied by one block-length kernel spectrum, and the blocks' inverse FFTs summed
where they overlap (with the mode's crop), in one submission. One FFT of the whole padded
length is a four-step plan of several passes over every element, and the kernel padded to it
costs as much as the image; here each element goes through one pass each way (a block-length
fraction more of them: the overlap), and the kernel's spectrum is one short line."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import planner
from ._validate import complex_dtype
from .device_plan import element_dispatches
from .kinds import steps_for
from .planner import Storage, blocks_pass, overlap_add_pass, product_pass
from .plans import cached_steps_plan
from .signal_plans import ConvLayout, ConvolutionCalls, window_chain

# Block lengths tried, longest first: the longest whose FFT is one pass wastes the least on
# the overlap.
BLOCK_LENGTHS = tuple(sorted((m << k for m in (1, 3) for k in range(9, 16)), reverse=True))


@dataclass(frozen=True)
class Blocks:
    """`count` blocks of `length` elements per line of the image (`lines` of them: the batch),
    block b holding the line's [b step, b step + step) and zeros after them; `steps`: (upload
    shape, steps) of the blocks' forward FFTs, of their inverse, and of the kernel's forward
    FFT (one block)."""

    length: int
    step: int
    count: int
    lines: int
    steps: tuple


def _block_steps(lay: ConvLayout, count: int, length: int) -> tuple:
    shape, kshape = (count, length), (1, length)
    if lay.real_fft:
        spec = (count, length // 2 + 1)
        calls = (steps_for("rfftn", shape, lay.dtype, axes=(1,)),
                 steps_for("irfftn", spec, complex_dtype(lay.dtype), s=[length], axes=(1,)),
                 steps_for("rfftn", kshape, lay.dtype, axes=(1,)))
    else:
        cdtype = complex_dtype(lay.dtype)
        calls = (steps_for("fftn", shape, cdtype, axes=(1,)),
                 steps_for("ifftn", shape, cdtype, axes=(1,)),
                 steps_for("fftn", kshape, cdtype, axes=(1,)))
    return tuple((c.jobs[0].shape, c.jobs[0].steps) for c in calls)


def _passes(limits, precision: int, shape, steps):
    """The planner's passes of `steps` on `shape` and its chunk count, as cached_steps_plan
    would plan them (pure Python)."""
    storage = Storage(precision=precision)
    spec = planner.plan_steps(tuple(shape), list(steps),
                              planner.element_limits(limits, storage.dtype.itemsize))
    return spec.passes, spec.chunks


def overlap_add_blocks(lay: ConvLayout, limits, full_steps: tuple | None) -> Blocks | None:
    """The blocks of an overlap-add convolution of `lay`, or None where it does not apply: one
    axis convolved, the innermost, the kernel a single line (the image may be a batch); the
    kernel at most half a block whose FFT is one pass; the whole padded length's FFT
    (`full_steps`: full_fft_steps) several."""
    ax = lay.axes
    if len(ax) != 1 or ax[0] != len(lay.fshape) - 1 or math.prod(lay.kernel_shape[:-1]) != 1 \
            or full_steps is None or not (lay.real_fft or lay.complex):
        return None
    lines = math.prod(lay.batch[:-1])
    n, k = lay.image_shape[-1], lay.kernel_shape[-1]
    if len(_passes(limits, lay.precision, *full_steps[:2])[0]) < 2:
        return None
    for length in BLOCK_LENGTHS:
        step = length - k + 1
        if step < length // 2 or length >= lay.fshape[-1]:
            continue
        count = -(-n // step)
        steps = _block_steps(lay, lines * count, length)
        planned = [_passes(limits, lay.precision, *s) for s in steps]
        if all(len(p) == 1 and c == 1 for p, c in planned):
            return Blocks(length, step, count, lines, steps)
    return None


class OverlapAddPlan(ConvolutionCalls):
    """fftconvolve of one layout by overlap-add (overlap_add_blocks), binding "in" (the image),
    "kernel" and "out" as ConvolvePlan does; a call without "kernel" keeps the spectrum of the
    last."""

    def __init__(self, lay: ConvLayout, device, blocks: Blocks, cache_key=None):
        super().__init__(device, cache_key)
        self.layout, self.blocks, dev = lay, blocks, device
        self.fits = True
        self.fft, self.ifft, self.kfft = (cached_steps_plan(shape, tuple(st), dev, lay.precision)
                                          for shape, st in blocks.steps)
        self.real = np.dtype(np.float32 if lay.precision == 32 else np.float64)
        self.inner = 1 if lay.real_fft else 2
        limits, length, bc, lines = dev.info.limits, blocks.length, blocks.count, blocks.lines
        count = math.prod(self.fft.spec.out_shape)  # the blocks' spectra's complex values
        kcount = math.prod(self.kfft.spec.out_shape)
        item = self.real.itemsize
        sizes = {"blocks": item * lines * bc * length * self.inner, "spectrum": 2 * item * count,
                 "product": 2 * item * count, "kpadded": item * length * self.inner,
                 "kspectrum": 2 * item * kcount}
        self.bufs = {n: dev.buffer(b, device_only=True) for n, b in sizes.items()}
        n = lay.image_shape[-1]
        self.cut = blocks_pass(lines, n, bc, blocks.step, length, self.inner, lay.precision,
                               limits)
        self.mul = product_pass(count, lay.precision, limits, period=kcount)
        self.add = overlap_add_pass(lines, bc, blocks.step, length, lay.crop[-1], self.inner,
                                    lay.precision, limits)
        self.nbytes = sum(sizes.values())
        self.dispatch_count = len(self.flat_dispatches(
            {"in": self.bufs["product"], "out": self.bufs["spectrum"]}))

    def dispatches(self, resources: dict | None = None) -> list[list]:
        """[the kernel's pad and FFT, where "kernel" is bound], the image's blocks, their
        forward FFTs, products, inverse FFTs, and their overlapping sum cut to the mode."""
        b, dev, out = self.bufs, self.device, []
        if "kernel" in resources:
            k = self.layout.kernel_shape[-1]
            tail = (self.inner,) if self.inner > 1 else ()
            spans = [(0, self.blocks.length)] + [(0, n) for n in tail]
            out += [window_chain(dev, (k,) + tail, spans, self.real, resources["kernel"], [],
                                 b["kpadded"]),
                    self.kfft.flat_dispatches({"in": b["kpadded"], "out": b["kspectrum"]})]
        if "in" in resources:
            out += [element_dispatches(dev, self.cut, (resources["in"], b["blocks"])),
                    self.fft.flat_dispatches({"in": b["blocks"], "out": b["spectrum"]}),
                    element_dispatches(dev, self.mul,
                                       (b["spectrum"], b["product"], b["kspectrum"])),
                    self.ifft.flat_dispatches({"in": b["product"], "out": b["blocks"]}),
                    element_dispatches(dev, self.add, (b["blocks"], resources["out"]))]
        return out
