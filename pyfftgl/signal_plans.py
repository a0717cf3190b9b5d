"""The device side of pyfftgl.signal: a convolution's layout (ConvLayout: scipy's axes, padded
FFT shape, crop and result dtype), ConvolvePlan (one submission: the kernel's pad and FFT where a
call binds the kernel, the image's pad and FFT, the product, the inverse FFT, the mode's crop),
and convolve_cache, the bounded cache of fftconvolve's plans."""
from __future__ import annotations

import math
import operator
from dataclasses import dataclass
from functools import cached_property
from itertools import zip_longest

import numpy as np

from .dctdst import nd_shape_and_axes
from ._validate import complex_dtype
from .backends import on_device_lost, on_profile_change
from .device_plan import DevicePlan, element_dispatches
from .kinds import steps_for
from .planner import (DFT_ROWS_MAX, Storage, bounded_input, element_limits, plan_steps,
                      precision_of, product_dft_pass, product_pass, twiddle_table, window_passes)
from .plans import PlanCache, TransformPlan, cached_steps_plan

MODES = ("full", "same", "valid")


def next_fast_len(target: int, real: bool = False) -> int:
    """The smallest length >= target whose prime factors are 2, 3, 5 and 7 (the planner's
    radices); even for a real FFT's innermost axis (its half-length complex packing)."""
    n = max(1, int(target))
    while True:
        m = n
        for p in (2, 3, 5, 7):
            while m % p == 0:
                m //= p
        if m == 1 and (not real or n % 2 == 0 or n == 1 and not real):
            return n
        n += 1


def precision_for(dtype) -> int:
    """scipy.fft's precision for an input dtype: single for float16/32, complex64."""
    return 32 if np.dtype(dtype) in (np.float16, np.float32, np.complex64) else 64


def result_dtype(dtype1, dtype2) -> np.dtype:
    """scipy.signal.fftconvolve's result dtype for inputs of these dtypes: single precision
    where both are float16/float32/complex64, else double; complex where either is."""
    real = np.float32 if max(precision_for(dtype1), precision_for(dtype2)) == 32 else np.float64
    cplx = np.dtype(dtype1).kind == "c" or np.dtype(dtype2).kind == "c"
    return np.dtype(np.result_type(real, np.complex64) if cplx else real)


def check_dtype(dt: np.dtype) -> None:
    if dt.kind not in "biufc" or dt.type in (np.longdouble, np.clongdouble):
        raise TypeError(f"pyfftgl convolves single and double precision data, not {dt}")


def as_shape(shape) -> tuple[int, ...]:
    """A shape argument as numpy reads one: integers (TypeError for 2.5 or "3", never
    truncated), a single integer for one axis."""
    try:
        return (operator.index(shape),)
    except TypeError:
        return tuple(operator.index(n) for n in shape)


def _swap_needed(mode, s1, s2, axes) -> bool:
    if mode != "valid" or not s1:
        return False
    ok1 = all(s1[i] >= s2[i] for i in axes)
    ok2 = all(s2[i] >= s1[i] for i in axes)
    if not (ok1 or ok2):
        raise ValueError("For 'valid' mode, one must be at least as large as the other in every "
                         "dimension")
    return not ok1


def conv_axes(s1, s2, mode, axes):
    """scipy's _init_freq_conv_axes on shapes: (axes, swapped)."""
    noaxes = axes is None
    _, axes = nd_shape_and_axes(s1, None, axes)
    if not noaxes and not len(axes):
        raise ValueError("when provided, axes cannot be empty")
    axes = [a for a in axes if s1[a] != 1 and s2[a] != 1]
    if not all(s1[a] == s2[a] or s1[a] == 1 or s2[a] == 1
               for a in range(len(s1)) if a not in axes):
        raise ValueError(f"incompatible shapes for in1 and in2: {tuple(s1)} and {tuple(s2)}")
    return axes, _swap_needed(mode, s1, s2, axes)


@dataclass(frozen=True)
class ConvLayout:
    """One convolution of an image of `image_shape` with a kernel of `kernel_shape`: the axes
    convolved (`axes`, sorted), the shape both broadcast to (`batch`), the padded FFT shape
    (`fshape`), the mode's (offset, length) per axis of the full result (`crop`), the result's
    shape and dtype, real FFTs (`real_fft`: the innermost axis convolved, real data) or
    complex ones."""

    image_shape: tuple
    kernel_shape: tuple
    axes: tuple
    batch: tuple
    fshape: tuple
    crop: tuple
    out_shape: tuple
    dtype: np.dtype
    precision: int
    complex: bool
    real_fft: bool

    @cached_property  # read by every call's binding checks
    def data_dtype(self) -> np.dtype:
        """The dtype both inputs have on the device: the result's (complex data), else its real
        dtype."""
        return self.dtype if self.complex else np.dtype(np.float32 if self.precision == 32
                                                        else np.float64)

    def input_shape(self, shape) -> tuple:
        """The shape an input of `shape` is broadcast to: the batch's on the axes not
        convolved."""
        return tuple(n if a in self.axes else self.batch[a] for a, n in enumerate(shape))


def conv_layout(image_shape, image_dtype, kernel_shape, kernel_dtype, mode, axes) -> ConvLayout:
    """The layout of scipy.signal.fftconvolve(image, kernel, mode, axes), its arguments checked
    as scipy checks them (ValueError, TypeError) before any GPU work."""
    s_img, s_ker = tuple(image_shape), tuple(kernel_shape)
    if len(s_img) != len(s_ker):
        raise ValueError("in1 and in2 should have the same dimensionality")
    for dt in (np.dtype(image_dtype), np.dtype(kernel_dtype)):
        check_dtype(dt)
    ax, swapped = conv_axes(s_img, s_ker, mode, axes)
    if mode not in MODES:
        raise ValueError("acceptable mode flags are 'valid', 'same', or 'full'")
    s1, s2 = (s_ker, s_img) if swapped else (s_img, s_ker)
    ndim, ax = len(s1), tuple(sorted(ax))
    dtype = result_dtype(image_dtype, kernel_dtype)
    cplx = dtype.kind == "c"
    batch = tuple(max(s_img[a], s_ker[a]) for a in range(ndim))
    full = [s1[a] + s2[a] - 1 if a in ax else batch[a] for a in range(ndim)]
    real_fft = not cplx and bool(ax) and ax[-1] == ndim - 1
    fshape = tuple(next_fast_len(full[a], real_fft and a == ndim - 1) if a in ax else batch[a]
                   for a in range(ndim))
    if mode == "full":
        want = full
    elif mode == "same":
        want = list(s1)
    else:
        want = [s1[a] - s2[a] + 1 if a in ax else full[a] for a in range(ndim)]
    crop = tuple(((full[a] - want[a]) // 2, want[a]) for a in range(ndim))
    return ConvLayout(s_img, s_ker, ax, batch, fshape, crop, tuple(want), dtype,
                      precision_of(dtype), cplx, real_fft)


def window_chain(device, shape, spans, dtype, src, between, dst) -> list:
    """The dispatches cutting spans [off, off + n) of an array of reals of `shape` (zero beyond
    it) from buffer `src` through `between` (one per pass but the last) into `dst`."""
    out, cur = [], src
    for (p, _), nxt in zip(window_plan(device, shape, spans, dtype), list(between) + [dst]):
        out += element_dispatches(device, p, (cur, nxt))
        cur = nxt
    return out


def window_plan(device, shape, spans, dtype) -> list:
    """The planner's window passes for buffers of `dtype`: [(pass, the bytes it writes)]."""
    dtype = np.dtype(dtype)
    return [(p, max(4, size * dtype.itemsize)) for p, size in window_passes(
        shape, spans, dtype.kind == "c", precision_of(dtype), device.info.limits)]


def full_fft_steps(lay: ConvLayout) -> tuple | None:
    """(forward upload shape, forward steps, inverse upload shape, inverse steps) of a layout's
    transforms, or None where either needs more than one job (then no plan fits)."""
    f, axes = lay.fshape, lay.axes
    if lay.real_fft:
        spec = f[:-1] + (f[-1] // 2 + 1,)
        calls = (steps_for("rfftn", f, lay.dtype, axes=axes),
                 steps_for("irfftn", spec, complex_dtype(lay.dtype), s=[f[a] for a in axes],
                           axes=axes))
    else:
        cdtype = complex_dtype(lay.dtype)
        calls = (steps_for("fftn", f, cdtype, axes=axes),
                 steps_for("ifftn", f, cdtype, axes=axes))
    if any(len(c.jobs) != 1 for c in calls):
        return None
    return tuple(x for c in calls for x in (c.jobs[0].shape, c.jobs[0].steps))


def pruned_kernel_steps(lay: ConvLayout) -> tuple | None:
    """The kernel's forward FFT split where the kernel fills at most half of its outermost
    convolved axis p (of several): (p's kernel length, upload shape and steps of the other
    axes' FFTs on only those rows, upload shape and steps of p's FFT over the whole
    spectrum), or None. The rows past the kernel are zero, so their transforms along the other
    axes are zero too and need not be run, padded or stored."""
    f, p = lay.fshape, lay.axes[0]
    kp = lay.input_shape(lay.kernel_shape)[p]
    if len(lay.axes) < 2 or 2 * kp > f[p]:
        return None
    rows = f[:p] + (kp,) + f[p + 1:]
    rest = lay.axes[1:]
    if lay.real_fft:
        spec = f[:-1] + (f[-1] // 2 + 1,)
        calls = (steps_for("rfftn", rows, lay.dtype, axes=rest),
                 steps_for("fftn", spec, complex_dtype(lay.dtype), axes=(p,)))
    else:
        cdtype = complex_dtype(lay.dtype)
        calls = (steps_for("fftn", rows, cdtype, axes=rest),
                 steps_for("fftn", f, cdtype, axes=(p,)))
    if any(len(c.jobs) != 1 for c in calls):
        return None
    return (kp,) + tuple(x for c in calls for x in (c.jobs[0].shape, c.jobs[0].steps))


def bounded_plan(shape, steps, device, precision: int, length: int,
                 buffers: dict | None = None) -> TransformPlan | None:
    """The plan of one step on `shape` (as cached_steps_plan's) whose input holds only the
    indices below `length` along its axis (planner.bounded_input: `shape` with `length` there),
    outside the plan cache (its programs are cached as every plan's); `buffers`: work buffers
    to use by name ("w0", "w1": TransformPlan's). None where the planner cannot bound it."""
    storage = Storage(precision=precision)
    limits = element_limits(device.info.limits, storage.dtype.itemsize)
    spec = bounded_input(plan_steps(tuple(shape), list(steps), limits), steps[0].axis, length)
    if spec is None:
        return None
    names = {n for n, _ in spec.buffers}
    return TransformPlan(spec, device, limits, steps[0].norm, storage=storage,
                         buffers={n: b for n, b in (buffers or {}).items() if n in names})


def _touched(dispatches) -> tuple[set, set]:
    """The ids of the buffers `dispatches` read, and of those they write (Dispatch.access)."""
    reads, writes = set(), set()
    for d in dispatches:
        r, w = d.access()
        reads |= r
        writes |= w
    return reads, writes


def interleaved(first: list, second: list) -> list | None:
    """Two chains of passes' dispatches as one pass of their dispatches alternately, one of
    each in turn (each chain's in its order), or None where either writes a buffer the other
    reads or writes (then only their order computes the same). Buffers both only read (the
    caller's one array as image and kernel, an FFT plan's tables) are no hazard."""
    a, b = ([d for ds in chain for d in ds] for chain in (first, second))
    (ra, wa), (rb, wb) = _touched(a), _touched(b)
    if wa & (rb | wb) or wb & ra:
        return None
    return [[d for pair in zip_longest(a, b) for d in pair if d is not None]]


class ConvolutionCalls(DevicePlan):
    """What fftconvolve calls on a convolution's device plan (ConvolvePlan, the overlap-add
    plan): host calls and queued device calls binding "in", "kernel" and "out"."""

    layout: ConvLayout

    def convolve_host(self, image: np.ndarray, kernel: np.ndarray | None = None) -> np.ndarray:
        """The convolution of host arrays (prepared: input_shape, data_dtype, contiguous; the
        kernel's spectrum kept where `kernel` is None): one upload of each, one submission, one
        download, into and out of the plan's own buffers."""
        lay = self.layout
        inputs = {"in": image} if kernel is None else {"in": image, "kernel": kernel}
        flat = self.host_call(inputs, math.prod(lay.out_shape) * lay.dtype.itemsize)
        return flat.view(lay.dtype)[:math.prod(lay.out_shape)].reshape(lay.out_shape)

    def device_call(self, resources: dict) -> None:
        """Queue the call binding `resources` ("in", "out", "kernel": buffers) without waiting."""
        self.submission(resources).run(wait=False)


class ConvolvePlan(ConvolutionCalls):
    """A convolution of one layout as one device plan. A call binds "in" (the image, of
    `input_shape(image_shape)` and `data_dtype`), "out" (the result) and, where it binds
    "kernel" too (fftconvolve: the kernel is data like the image), computes the kernel's
    spectrum in the same submission; without it the spectrum computed last stays (Convolver's
    calls). Complex transforms run on the reals with a trailing axis of 2 (1 for real data,
    padded to 2: the window passes widen and narrow it). `fits` is False where the FFTs need
    several submissions (then nothing is allocated)."""

    def __init__(self, lay: ConvLayout, device, cache_key=None):
        super().__init__(device, cache_key)
        self.layout, dev = lay, device
        steps = full_fft_steps(lay)
        self.fft = None if steps is None else tuple(
            cached_steps_plan(shape, tuple(st), dev, lay.precision)
            for shape, st in (steps[:2], steps[2:]))
        self.fits = self.fft is not None and all(p.spec.chunks == 1 for p in self.fft)
        self.kernel_fft = None
        if not self.fits:
            return
        real = np.dtype(np.float32 if lay.precision == 32 else np.float64)
        tail = () if lay.real_fft else (2,)
        c = () if lay.real_fft else (2 if lay.complex else 1,)
        self.padded_shape = lay.fshape + tail
        count = math.prod(self.fft[1].spec.shape)  # the spectrum's complex values
        sizes = {"padded": real.itemsize * math.prod(self.padded_shape),
                 "spectrum": 2 * real.itemsize * count, "kspectrum": 2 * real.itemsize * count,
                 "product": 2 * real.itemsize * count}
        self.bufs = {n: dev.buffer(b, device_only=True) for n, b in sizes.items()}
        self.kernel_fft = self._pruned_plans()
        kspans = [(0, n) for n in self.padded_shape]
        if self.kernel_fft:  # the kernel's rows alone along its outermost axis
            kp, rows, outer = self.kernel_fft
            kspans[lay.axes[0]] = (0, kp)
            sizes["krows"] = 2 * real.itemsize * math.prod(rows.spec.out_shape)
            self.bufs["krows"] = dev.buffer(sizes["krows"], device_only=True)
            sizes["outer plan"] = outer.nbytes - sum(  # its own: the tables
                b.nbytes for b in outer.held_buffers().values() if b in self.bufs.values())
        self._windows = {  # name -> (shape of the reals, spans, buffers between passes)
            name: (shape, spans) for name, shape, spans in (
                ("in", lay.input_shape(lay.image_shape) + c, [(0, n) for n in self.padded_shape]),
                ("kernel", lay.input_shape(lay.kernel_shape) + c, kspans),
                ("out", self.padded_shape, list(lay.crop) + [(0, n) for n in c]))}
        self.real, self._between = real, {}
        for name, (shape, spans) in self._windows.items():
            writes = [b for _, b in window_plan(dev, shape, spans, real)]
            self._between[name] = [dev.buffer(b, device_only=True) for b in writes[:-1]]
            if name == "kernel":  # the kernel's own padded copy: its chain may run beside the
                sizes["kpadded"] = writes[-1]  # image's (dispatches), so not the image's buffer
                self.bufs["kpadded"] = dev.buffer(writes[-1], device_only=True)
        self.mul = product_pass(count, lay.precision, dev.info.limits)
        self.dft_mul = self._dft_product(sizes)
        self.nbytes = sum(sizes.values()) + sum(b.nbytes for bs in self._between.values()
                                                for b in bs)
        self.dispatch_count = len(self.flat_dispatches(
            {"in": self.bufs["product"], "out": self.bufs["spectrum"]}))

    def _pruned_plans(self) -> tuple | None:
        """(the kernel's rows, the FFT plan of the other axes on those rows, that of the
        outermost axis reading only those rows (bounded_plan), its work buffers the image's
        product (free until the product pass) and spectrum (which the image's forward FFT
        writes: then the two chains keep their order, dispatches)) where
        pruned_kernel_steps splits the kernel's FFT and both fit one submission, else None."""
        steps = pruned_kernel_steps(self.layout)
        if steps is None:
            return None
        prec, b = self.layout.precision, self.bufs
        rows = cached_steps_plan(*steps[1:3], self.device, prec)
        outer = bounded_plan(*steps[3:], self.device, prec, steps[0],
                             {"w0": b["product"], "w1": b["spectrum"]})
        if outer is None or rows.spec.chunks != 1 or outer.spec.chunks != 1:
            return None
        return steps[0], rows, outer

    def _dft_product(self, sizes: dict):
        """Where the kernel's rows are few (pruned, at most DFT_ROWS_MAX): the product pass that
        sums their DFT along the outermost axis itself (planner.product_dft_pass), for calls
        binding the kernel and the image, with its roots of unity in a buffer of its own
        ("roots", counted in `sizes`); else None."""
        if not self.kernel_fft or self.kernel_fft[0] > DFT_ROWS_MAX:
            return None
        lay, p = self.layout, self.layout.axes[0]
        f = lay.fshape
        spec = f[:-1] + (f[-1] // 2 + 1,) if lay.real_fft else f
        roots = twiddle_table(f[p], np.complex64 if lay.precision == 32 else np.complex128)
        self.bufs["roots"] = self.device.buffer(roots.nbytes, roots.view(np.float32))
        sizes["roots"] = roots.nbytes
        return product_dft_pass(math.prod(spec[:p]), f[p], self.kernel_fft[0],
                                math.prod(spec[p + 1:]), lay.precision, self.device.info.limits)

    def _kernel_spectrum(self, kernel, rows_only: bool = False) -> list:
        """The kernel's pad and forward FFT into the kernel spectrum: pruned (its rows' FFTs
        along the other axes, then the outermost axis' over the whole spectrum, unless
        `rows_only`: the DFT product sums it) where kernel_fft is set."""
        b = self.bufs
        pad = self._window("kernel", kernel, b["kpadded"])
        if not self.kernel_fft:
            return [pad, self.fft[0].flat_dispatches({"in": b["kpadded"], "out": b["kspectrum"]})]
        _, rows, outer = self.kernel_fft
        chain = [pad, rows.flat_dispatches({"in": b["kpadded"], "out": b["krows"]})]
        return chain if rows_only else chain + [
            outer.flat_dispatches({"in": b["krows"], "out": b["kspectrum"]})]

    def _window(self, name, src, dst) -> list:
        shape, spans = self._windows[name]
        return window_chain(self.device, shape, spans, self.real, src, self._between[name], dst)

    def dispatches(self, resources: dict | None = None) -> list[list]:
        """[the kernel's pad and forward FFT, where "kernel" is bound], the image's pad,
        forward FFT, product, inverse FFT, crop: from "in" to "out". With both bound, the
        kernel's chain and the image's pad and forward FFT alternate, one dispatch of each in
        turn, where neither writes what the other touches (interleaved): a backend then runs
        each kernel dispatch beside an image one (Submission) instead of after it. They keep
        their order where the kernel's outer FFT passes through spectrum (its second work
        buffer: _pruned_plans), or the whole kernel FFT through the image FFT's work buffers.
        Where dft_mul is set, a call binding both runs no outer FFT of the kernel: the product
        sums it from the kernel's rows."""
        b, (fwd, inv) = self.bufs, self.fft
        dft = self.dft_mul is not None and "kernel" in resources and "in" in resources
        if dft:  # the kernel's rows alone: the product sums their outermost axis' DFT
            kernel = self._kernel_spectrum(resources["kernel"], rows_only=True)
            mul = element_dispatches(self.device, self.dft_mul,
                                     (b["spectrum"], b["product"], b["krows"], b["roots"]))
        else:
            kernel = self._kernel_spectrum(resources["kernel"]) if "kernel" in resources else []
            mul = element_dispatches(self.device, self.mul,
                                     (b["spectrum"], b["product"], b["kspectrum"]))
        if "in" not in resources:
            return kernel
        image = [self._window("in", resources["in"], b["padded"]),
                 fwd.flat_dispatches({"in": b["padded"], "out": b["spectrum"]})]
        return (kernel and interleaved(kernel, image) or kernel + image) + [mul,
            inv.flat_dispatches({"in": b["product"], "out": b["padded"]}),
            self._window("out", b["padded"], resources["out"])]


class ConvolveCache(PlanCache):
    """fftconvolve's plans by (device, shapes, dtypes, mode, axes), or False where none fits:
    the plan cache's LRU with bounds of its own (the FFT plans they run are the plan cache's),
    dropped for a lost device and on a profile change as the plan cache's plans are."""

    def __init__(self, max_plans: int = 8, max_bytes: int = 256 << 20):
        super().__init__(max_plans, max_bytes)


convolve_cache = ConvolveCache()
on_device_lost(convolve_cache.forget_device)
on_profile_change(convolve_cache.clear)
