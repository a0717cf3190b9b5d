"""scipy.signal's FFT convolutions on the GPU: fftconvolve, oaconvolve, and Convolver, which keeps
a kernel's spectrum on the device for many images.

    y = pyfftgl.signal.fftconvolve(image, kernel, mode="same")
    blur = pyfftgl.signal.Convolver(kernel, image.shape, mode="same")   # the kernel's FFT once
    ys = [blur(im) for im in images]

Both inputs are zero-padded to lengths the planner runs fastest (next_fast_len), transformed
(real FFTs for real data), multiplied and transformed back on the device, and the mode's part cut
out there; only the result comes back (nothing, for DeviceArray input). Results have scipy's
dtypes: single precision where both inputs are float16/float32/complex64, else double; complex
where either input is.
"""
from __future__ import annotations

import math

import numpy as np

from . import numpy_fft
from .backends import get_device
from .device_array import DeviceArray, asarray
from .device_plan import element_dispatches, run_once
from .planner import precision_of, product_pass
from .signal_blocks import OverlapAddPlan, overlap_add_blocks
from .signal_plans import (MODES, ConvolutionCalls, ConvolvePlan, as_shape, check_dtype,
                           conv_layout, convolve_cache, full_fft_steps, next_fast_len,
                           result_dtype, window_chain, window_plan)

__all__ = ["fftconvolve", "oaconvolve", "Convolver", "next_fast_len", "convolve_cache"]


def _dtype_of(x) -> np.dtype:
    return x.dtype if isinstance(x, DeviceArray) else np.asarray(x).dtype


def _bound(x, lay, device):
    """x's buffer where x is a DeviceArray a ConvolvePlan of `lay` binds as it stands (on
    `device`, of the layout's data dtype, not broadcast), else None."""
    if isinstance(x, DeviceArray) and x.device is device and x.dtype == lay.data_dtype and \
            x.shape == lay.input_shape(x.shape):
        return x.buffer
    return None


def _host_ready(x, lay) -> np.ndarray:
    """x on the host as a ConvolvePlan of `lay` takes it: broadcast, the data dtype, C order."""
    host = np.asarray(x.get() if isinstance(x, DeviceArray) else x)
    return np.ascontiguousarray(np.broadcast_to(host, lay.input_shape(host.shape)),
                                dtype=lay.data_dtype)


def _new_result(lay, device) -> DeviceArray:
    return DeviceArray(device.buffer(max(4, math.prod(lay.out_shape) * lay.dtype.itemsize),
                                     device_only=True), lay.out_shape, lay.dtype, device)


def _pooled_result(plan) -> DeviceArray:
    """A result on one of `plan`'s pooled buffers (DevicePlan.pooled), so that a loop which
    drops each result replays its recorded submissions."""
    lay = plan.layout
    buf = plan.pooled("out", math.prod(lay.out_shape) * lay.dtype.itemsize)
    return DeviceArray(buf, lay.out_shape, lay.dtype, plan.device)


class Convolver:
    """A linear convolution of images of `image_shape` with a fixed `kernel`, as
    scipy.signal.fftconvolve(image, kernel, mode, axes) computes it: the kernel's spectrum is
    computed once, on the device, and every call transforms only the image.

    `dtype`: the images' dtype (float32 default); results have scipy's dtype for the (image,
    kernel) pair. An image of another dtype is taken where it gives the same result dtype and
    is not complex for a real Convolver (float16 for float32), else TypeError. Calls take numpy
    arrays (return numpy: one upload, one submission, one download) or DeviceArrays (return
    DeviceArrays, no host transfer where the image is of the data dtype and not broadcast)."""

    def __init__(self, kernel, image_shape, mode="full", axes=None, dtype=np.float32,
                 backend=None):
        if mode not in MODES:
            raise ValueError("acceptable mode flags are 'valid', 'same', or 'full'")
        kshape = tuple(kernel.shape) if isinstance(kernel, DeviceArray) else np.shape(kernel)
        self.image_shape, self.kernel_shape = as_shape(image_shape), tuple(kshape)
        if len(self.image_shape) != len(kshape):
            raise ValueError("in1 and in2 should have the same dimensionality")
        if math.prod(self.image_shape) == 0 or math.prod(kshape) == 0 or not kshape:
            raise ValueError("Convolver needs non-empty arrays of at least one dimension "
                             "(fftconvolve handles the empty and scalar cases)")
        self.mode, self.image_dtype = mode, np.dtype(dtype)
        self.kernel_dtype = kdtype = _dtype_of(kernel)
        lay = self.layout = conv_layout(self.image_shape, self.image_dtype, kshape, kdtype,
                                        mode, axes)
        self.device = kernel.device if isinstance(kernel, DeviceArray) and backend is None \
            else get_device(backend)
        self.precision, self.complex, self.dtype = lay.precision, lay.complex, lay.dtype
        self.device.check_precision(self.precision)
        self.axes = self.fft_axes = list(lay.axes)
        self.batch, self.fshape, self.crop = lay.batch, list(lay.fshape), list(lay.crop)
        self.out_shape, self.real_fft = lay.out_shape, lay.real_fft
        self.batch_shape = lay.input_shape(self.image_shape)
        self._plan, self._kernel_spectrum = None, None
        self._kernel = kernel if not lay.axes else None
        if lay.axes:
            plan = ConvolvePlan(lay, self.device)
            if plan.fits:  # the kernel's pad and FFT, once, into the plan's kernel spectrum
                self._plan = plan
                src = _bound(kernel, lay, self.device) or asarray(
                    _host_ready(kernel, lay), backend=self.device).buffer
                run_once(self.device, plan.flat_dispatches({"kernel": src}))
            else:
                self._kernel_spectrum = self._spectrum(kernel)

    # -- the device work where no ConvolvePlan fits (FFTs of several submissions)
    def _compute_dtype(self) -> np.dtype:
        return self.dtype if self.complex or self.real_fft else \
            np.dtype(np.complex64 if self.precision == 32 else np.complex128)

    def _padded(self, x) -> DeviceArray:
        """x broadcast over the batch axes and zero-padded to fshape, on the device."""
        dtype = self._compute_dtype()
        if isinstance(x, DeviceArray) and x.device is self.device and x.dtype == dtype and \
                all(x.shape[a] == self.batch[a] for a in range(x.ndim) if a not in self.axes):
            return self._window(x, [(0, n) for n in self.fshape])
        host = np.asarray(x.get() if isinstance(x, DeviceArray) else x)
        host = np.broadcast_to(host, self.layout.input_shape(host.shape))
        padded = np.zeros(self.fshape, dtype)
        padded[tuple(slice(0, n) for n in host.shape)] = host
        return asarray(padded, dtype=dtype, backend=self.device)

    def _window(self, d: DeviceArray, spans) -> DeviceArray:
        """d's sub-array [off, off + n) per axis (zero beyond d), on the device."""
        if all(off == 0 and n == d.shape[a] for a, (off, n) in enumerate(spans)):
            return d
        passes = window_plan(self.device, d.shape, spans, d.dtype)
        bufs = [self.device.buffer(nbytes, device_only=True) for _, nbytes in passes]
        run_once(self.device, window_chain(self.device, d.shape, spans, d.dtype, d.buffer,
                                           bufs[:-1], bufs[-1]))
        return DeviceArray(bufs[-1], tuple(n for _, n in spans), d.dtype, self.device)

    def _spectrum(self, x) -> DeviceArray:
        p = self._padded(x)
        f = numpy_fft.rfftn if self.real_fft else numpy_fft.fftn
        return f(p, axes=self.fft_axes)

    @property
    def plan(self) -> ConvolvePlan | None:
        """The device plan of a call (pad, forward FFT, product with the kernel's spectrum,
        inverse FFT, the mode's crop, in one submission); None where the FFTs need several
        submissions (the calls then go through the API one by one)."""
        return self._plan

    def stats(self) -> dict:
        """The device plan's stats() (dispatches of a call, recorded submissions, bytes held);
        {} where the calls go through the API."""
        return self.plan.stats() if self.plan else {}

    def _check_out(self, out):
        if out is not None and (not isinstance(out, DeviceArray) or out.device is not self.device
                                or out.shape != self.out_shape or out.dtype != self.dtype):
            raise ValueError(f"out must be a DeviceArray of shape {self.out_shape} and dtype "
                             f"{self.dtype} on the Convolver's device")

    def _check_image(self, image) -> None:
        """The image's shape and dtype (TypeError for a dtype whose result would differ)."""
        shape = tuple(image.shape) if isinstance(image, DeviceArray) else np.shape(image)
        if shape != self.image_shape:
            raise ValueError(f"this Convolver takes images of shape {self.image_shape}, got "
                             f"{shape}")
        dt = _dtype_of(image)
        if dt != self.image_dtype:
            check_dtype(dt)
            if result_dtype(dt, self.kernel_dtype) != self.dtype or \
                    (dt.kind == "c" and not self.complex):
                raise TypeError(f"this Convolver convolves {self.image_dtype} images into "
                                f"{self.dtype} results; a {dt} image gives "
                                f"{result_dtype(dt, self.kernel_dtype)}: make a Convolver with "
                                f"dtype={dt}")

    def __call__(self, image, out=None):
        """The convolution of `image` (numpy or DeviceArray) with the kernel, cut to the mode;
        `out`: a DeviceArray to write it to (DeviceArray images)."""
        self._check_image(image)
        self._check_out(out)
        device_in = isinstance(image, DeviceArray)
        if not self.fft_axes:  # scipy: no axis to transform, a broadcast product
            host = np.asarray(image.get() if device_in else image) * np.asarray(
                self._kernel.get() if isinstance(self._kernel, DeviceArray) else self._kernel)
            result = host[tuple(slice(o, o + n) for o, n in self.crop)].copy()
            return asarray(result, backend=self.device) if device_in else result
        if self.plan:
            src = _bound(image, self.layout, self.device)
            if src is None:
                host = _host_ready(image, self.layout)
                if not device_in and out is None:
                    return self.plan.convolve_host(host)
                src = asarray(host, backend=self.device).buffer
            if out is None and device_in:  # from the plan's pool: the call replays
                out = _pooled_result(self.plan)
            out = _new_result(self.layout, self.device) if out is None else out
            self.plan.device_call({"in": src, "out": out.buffer})
            return out if device_in else out.get()
        return self._through_api(image, out, device_in)

    def _through_api(self, image, out, device_in):
        """A call of FFTs too large for one submission: the API's calls one by one."""
        spectrum = numpy_fft.rfftn(self._padded(image), axes=self.fft_axes) if self.real_fft else \
            numpy_fft.fftn(self._padded(image), axes=self.fft_axes)
        product = DeviceArray(self.device.buffer(spectrum.nbytes, device_only=True),
                              spectrum.shape, spectrum.dtype, self.device)
        mul = product_pass(spectrum.size, precision_of(spectrum.dtype), self.device.info.limits)
        run_once(self.device, element_dispatches(
            self.device, mul, (spectrum.buffer, product.buffer, self._kernel_spectrum.buffer)))
        spectrum.close()
        if self.real_fft:
            full = numpy_fft.irfftn(product, s=[self.fshape[a] for a in self.fft_axes],
                               axes=self.fft_axes)
        else:
            full = numpy_fft.ifftn(product, axes=self.fft_axes)
        product.close()
        if not self.complex and full.dtype.kind == "c":  # real data through complex FFTs
            full = asarray(np.ascontiguousarray(full.get().real), backend=self.device)
        result = self._window(full, self.crop)
        if result.dtype != self.dtype:
            result = asarray(result.get().astype(self.dtype), backend=self.device)
        if out is not None:
            self.device.write(out.buffer, result.get().view(np.float32).ravel())
            return out
        return result if device_in else result.get()

    execute = __call__

    def __repr__(self):
        return (f"<Convolver {self.mode} of {self.image_shape} {self.image_dtype} images with a "
                f"{self.kernel_shape} kernel over axes {self.fft_axes}: FFT shape "
                f"{tuple(self.fshape)}, {'real' if self.real_fft else 'complex'} transforms, "
                f"-> {self.out_shape} {self.dtype}>")


def _prepare(in1, in2):
    """scipy's early cases: None to go on, or the result of the scalar/empty cases; and the
    arrays as numpy where not DeviceArrays."""
    a = in1 if isinstance(in1, DeviceArray) else np.asarray(in1)
    b = in2 if isinstance(in2, DeviceArray) else np.asarray(in2)
    if a.ndim == b.ndim == 0:
        return np.asarray(a) * np.asarray(b), a, b
    if a.ndim != b.ndim:
        raise ValueError("in1 and in2 should have the same dimensionality")
    if a.size == 0 or b.size == 0:
        return np.asarray([]), a, b
    return None, a, b


def _axes_key(axes):
    """`axes` as a part of a cache key (None, an int or a tuple)."""
    if axes is None or isinstance(axes, (int, np.integer)):
        return axes if axes is None else int(axes)
    return tuple(int(a) if isinstance(a, (int, np.integer)) else a for a in axes)


def fftconvolve(in1, in2, mode="full", axes=None, *, backend=None):
    """Convolve two N-dimensional arrays using FFT, as scipy.signal.fftconvolve, on the GPU.

    `mode` "full", "same" (centred on in1) or "valid"; `axes` the axes to convolve (others
    broadcast). float16/float32/complex64 inputs give single-precision results, anything else
    double; complex where either input is. DeviceArray inputs give DeviceArray results (no host
    transfer where both are of the result's precision and not broadcast); numpy inputs one
    upload each and one download. A call reuses the plan, buffers and recorded submission of
    the last call of its shapes, dtypes, mode and axes (convolve_cache); the kernel's spectrum
    is computed in the same submission as the image's transforms.
    """
    early, a, b = _prepare(in1, in2)
    if early is not None:
        return early
    if backend is None:
        backend = a.device if isinstance(a, DeviceArray) else \
            b.device if isinstance(b, DeviceArray) else None
    dev = get_device(backend)
    da, db = _dtype_of(a), _dtype_of(b)
    try:
        key = (dev, a.shape, da, b.shape, db, mode, _axes_key(axes))
        hash(key)
    except TypeError:  # axes scipy refuses: its message
        conv_layout(a.shape, da, b.shape, db, mode, axes)
        raise

    def build():
        lay = conv_layout(a.shape, da, b.shape, db, mode, axes)
        dev.check_precision(lay.precision)
        if not lay.axes:
            return False
        blocks = overlap_add_blocks(lay, dev.info.limits, full_fft_steps(lay))
        plan = OverlapAddPlan(lay, dev, blocks, key) if blocks else ConvolvePlan(lay, dev, key)
        return plan if plan.fits else False
    plan = convolve_cache.get(key, build)
    if not plan:  # no axis to transform, or FFTs of several submissions
        return Convolver(b, a.shape, mode=mode, axes=axes, dtype=da, backend=dev)(a)
    return _planned(plan, a, b)


def _planned(plan: ConvolutionCalls, a, b):
    """fftconvolve(a, b) through its cached plan: the kernel's spectrum and the convolution
    in one submission."""
    lay, dev = plan.layout, plan.device
    bound = {"in": _bound(a, lay, dev), "kernel": _bound(b, lay, dev)}
    device_out = isinstance(a, DeviceArray)
    if not device_out and bound["in"] is None and bound["kernel"] is None:
        return plan.convolve_host(_host_ready(a, lay), _host_ready(b, lay))
    for name, x in (("in", a), ("kernel", b)):
        if bound[name] is None:  # written to the plan's own buffer: one upload, no allocation
            host = _host_ready(x, lay)
            bound[name] = plan.own("staged " + name, host.nbytes)
            dev.write(bound[name], host.reshape(-1).view(np.float32))
    if not device_out:
        out = _new_result(lay, dev)
        plan.device_call({**bound, "out": out.buffer})
        return out.get()
    out = _pooled_result(plan)
    plan.device_call({**bound, "out": out.buffer})
    return out


def oaconvolve(in1, in2, mode="full", axes=None, *, backend=None):
    """Convolve two N-dimensional arrays using the overlap-add method, as
    scipy.signal.oaconvolve: the same results and dtypes as fftconvolve, and the same plans:
    overlap-add where one innermost axis is convolved with a kernel short enough for blocks
    whose FFT is one pass (signal_blocks), else one batch of FFTs of the whole padded array,
    which on the GPU is what overlap-add's blocks are for on a CPU."""
    return fftconvolve(in1, in2, mode=mode, axes=axes, backend=backend)
