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

from . import _api
from ._realtransforms import nd_shape_and_axes
from .backends import get_device
from ._validate import complex_dtype
from .device_array import DeviceArray, asarray
from .device_plan import DevicePlan, element_dispatches, run_once
from .kinds import steps_for
from .planner import precision_of, product_pass, window_passes
from .plans import cached_steps_plan

_MODES = ("full", "same", "valid")


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


def _dtype_of(x) -> np.dtype:
    return x.dtype if isinstance(x, DeviceArray) else np.asarray(x).dtype


def _precision(dtype) -> int:
    """scipy.fft's precision for an input dtype: single for float16/32, complex64."""
    return 32 if np.dtype(dtype) in (np.float16, np.float32, np.complex64) else 64


def _swap_needed(mode, s1, s2, axes) -> bool:
    if mode != "valid" or not s1:
        return False
    ok1 = all(s1[i] >= s2[i] for i in axes)
    ok2 = all(s2[i] >= s1[i] for i in axes)
    if not (ok1 or ok2):
        raise ValueError("For 'valid' mode, one must be at least as large as the other in every "
                         "dimension")
    return not ok1


def _conv_axes(s1, s2, mode, axes):
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


class Convolver:
    """A linear convolution of images of `image_shape` with a fixed `kernel`, as
    scipy.signal.fftconvolve(image, kernel, mode, axes) computes it: the kernel's spectrum is
    computed once, on the device, and every call transforms only the image.

    `dtype`: the images' dtype (float32 default; complex or double images need it said).
    Calls take numpy arrays (return numpy) or DeviceArrays (return DeviceArrays, no host
    transfer where the innermost axis is convolved; other layouts pass through the host)."""

    def __init__(self, kernel, image_shape, mode="full", axes=None, dtype=np.float32,
                 backend=None):
        if mode not in _MODES:
            raise ValueError("acceptable mode flags are 'valid', 'same', or 'full'")
        kshape = tuple(kernel.shape) if isinstance(kernel, DeviceArray) else np.shape(kernel)
        self.image_shape, self.kernel_shape = tuple(int(n) for n in image_shape), tuple(kshape)
        if len(self.image_shape) != len(kshape):
            raise ValueError("in1 and in2 should have the same dimensionality")
        if math.prod(self.image_shape) == 0 or math.prod(kshape) == 0 or not kshape:
            raise ValueError("Convolver needs non-empty arrays of at least one dimension "
                             "(fftconvolve handles the empty and scalar cases)")
        self.mode, self.image_dtype = mode, np.dtype(dtype)
        kdtype = _dtype_of(kernel)
        for dt in (self.image_dtype, kdtype):
            if dt.kind not in "biufc" or dt.type in (np.longdouble, np.clongdouble):
                raise TypeError(f"pyfftgl convolves single and double precision data, not {dt}")
        self.axes, swapped = _conv_axes(self.image_shape, kshape, mode, axes)
        s1, s2 = (kshape, self.image_shape) if swapped else (self.image_shape, kshape)
        self.device = kernel.device if isinstance(kernel, DeviceArray) and backend is None \
            else get_device(backend)
        self.precision = max(_precision(self.image_dtype), _precision(kdtype))
        self.device.check_precision(self.precision)
        self.complex = self.image_dtype.kind == "c" or kdtype.kind == "c"
        real = {32: np.float32, 64: np.float64}[self.precision]
        self.dtype = np.dtype(np.result_type(real, np.complex64) if self.complex else real)
        ndim = len(s1)
        axes = sorted(self.axes)
        self.batch = tuple(max(self.image_shape[a], kshape[a]) for a in range(ndim))
        full = [s1[a] + s2[a] - 1 if a in axes else self.batch[a] for a in range(ndim)]
        # real FFTs where the innermost axis is convolved (the device's real packing), else complex
        self.real_fft = not self.complex and bool(axes) and axes[-1] == ndim - 1
        self.fshape = [next_fast_len(full[a], self.real_fft and a == ndim - 1) if a in axes
                       else self.batch[a] for a in range(ndim)]
        if mode == "full":
            want = full
        elif mode == "same":
            want = list(s1)
        else:
            want = [s1[a] - s2[a] + 1 if a in axes else full[a] for a in range(ndim)]
        self.crop = [((full[a] - want[a]) // 2, want[a]) for a in range(ndim)]
        self.out_shape = tuple(want)
        self.fft_axes = axes
        self.batch_shape = tuple(self.batch[a] if a not in axes else self.image_shape[a]
                                 for a in range(ndim))
        self._plan = None
        self._kernel_spectrum = self._spectrum(kernel) if axes else None
        self._kernel = kernel if not axes else None

    # -- the device work
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
        shape = [self.batch[a] if a not in self.axes else host.shape[a] for a in range(host.ndim)]
        host = np.broadcast_to(host, shape)
        padded = np.zeros(self.fshape, dtype)
        padded[tuple(slice(0, n) for n in host.shape)] = host
        return asarray(padded, dtype=dtype, backend=self.device)

    def _window(self, d: DeviceArray, spans) -> DeviceArray:
        """d's sub-array [off, off + n) per axis (zero beyond d), on the device."""
        if all(off == 0 and n == d.shape[a] for a, (off, n) in enumerate(spans)):
            return d
        passes = _window_passes(self.device, d.shape, spans, d.dtype)
        bufs = [self.device.buffer(nbytes, device_only=True) for _, nbytes in passes]
        buf = bufs[-1]
        run_once(self.device, _chain(self.device, passes, d.buffer, bufs[:-1], buf))
        return DeviceArray(buf, tuple(n for _, n in spans), d.dtype, self.device)

    def _spectrum(self, x) -> DeviceArray:
        p = self._padded(x)
        f = _api.rfftn if self.real_fft else _api.fftn
        return f(p, axes=self.fft_axes)

    @property
    def plan(self) -> "ConvolvePlan | None":
        """The device plan of a call (pad, forward FFT, product with the kernel's spectrum,
        inverse FFT, the mode's crop, in one submission) where the innermost axis is convolved
        in real FFTs that fit one submission; None otherwise (the calls then go through the
        API one by one)."""
        if self._plan is None:
            self._plan = False
            if self.real_fft and self._kernel_spectrum is not None:
                plan = ConvolvePlan(self)
                self._plan = plan if plan.fits else False
        return self._plan or None

    def stats(self) -> dict:
        """The device plan's stats() (dispatches of a call, recorded submissions, bytes held);
        {} where the calls go through the API."""
        return self.plan.stats() if self.plan else {}

    def _check_out(self, out):
        if out is not None and (not isinstance(out, DeviceArray) or out.device is not self.device
                                or out.shape != self.out_shape or out.dtype != self.dtype):
            raise ValueError(f"out must be a DeviceArray of shape {self.out_shape} and dtype "
                             f"{self.dtype} on the Convolver's device")

    def __call__(self, image, out=None):
        """The convolution of `image` (numpy or DeviceArray) with the kernel, cut to the mode;
        `out`: a DeviceArray to write it to (DeviceArray images)."""
        shape = tuple(image.shape) if isinstance(image, DeviceArray) else np.shape(image)
        if shape != self.image_shape:
            raise ValueError(f"this Convolver takes images of shape {self.image_shape}, got "
                             f"{shape}")
        self._check_out(out)
        device_in = isinstance(image, DeviceArray)
        if not self.fft_axes:  # scipy: no axis to transform, a broadcast product
            host = np.asarray(image.get() if device_in else image) * np.asarray(
                self._kernel.get() if isinstance(self._kernel, DeviceArray) else self._kernel)
            result = host[tuple(slice(o, o + n) for o, n in self.crop)].copy()
            return asarray(result, backend=self.device) if device_in else result
        if self.real_fft and self.plan:
            d = image
            if not (device_in and image.device is self.device and image.dtype == self.dtype
                    and image.shape == self.batch_shape):
                host = np.asarray(image.get() if device_in else image)
                d = asarray(np.broadcast_to(host, self.batch_shape), dtype=self.dtype,
                            backend=self.device)
            if out is None:
                out = DeviceArray(self.device.buffer(max(4, math.prod(self.out_shape)
                                                         * self.dtype.itemsize),
                                                     device_only=True),
                                  self.out_shape, self.dtype, self.device)
            self.plan.run({"in": d.buffer, "out": out.buffer})
            return out if device_in else out.get()
        spectrum = _api.rfftn(self._padded(image), axes=self.fft_axes) if self.real_fft else \
            _api.fftn(self._padded(image), axes=self.fft_axes)
        product = DeviceArray(self.device.buffer(spectrum.nbytes, device_only=True),
                              spectrum.shape, spectrum.dtype, self.device)
        mul = product_pass(spectrum.size, precision_of(spectrum.dtype), self.device.info.limits)
        run_once(self.device, element_dispatches(
            self.device, mul, (spectrum.buffer, product.buffer, self._kernel_spectrum.buffer)))
        spectrum.close()
        if self.real_fft:
            full = _api.irfftn(product, s=[self.fshape[a] for a in self.fft_axes],
                               axes=self.fft_axes)
        else:
            full = _api.ifftn(product, axes=self.fft_axes)
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


def _window_passes(device, shape, spans, dtype) -> list:
    """The planner's window passes for buffers of `dtype`: [(pass, the bytes it writes)]."""
    dtype = np.dtype(dtype)
    return [(p, max(4, size * dtype.itemsize)) for p, size in window_passes(
        shape, spans, dtype.kind == "c", precision_of(dtype), device.info.limits)]


def _chain(device, passes, src, between, dst) -> list:
    """The dispatches of window passes from buffer `src` through the buffers `between` (one per
    pass but the last) into `dst`."""
    out, cur = [], src
    for (p, _), nxt in zip(passes, list(between) + [dst]):
        out += element_dispatches(device, p, (cur, nxt))
        cur = nxt
    return out


class ConvolvePlan(DevicePlan):
    """A Convolver's real-path call as one device plan from "in" (an image of the batch shape)
    to "out" (the mode's result): pad, the r2c plan, the product with the kernel's spectrum,
    the c2r plan, the crop. Its buffers (and the windows' between passes) are allocated here;
    `fits` is False where the FFTs need several submissions (then nothing is allocated)."""

    def __init__(self, conv: "Convolver"):
        super().__init__(conv.device)
        dev, f, axes = conv.device, conv.fshape, conv.fft_axes
        view = tuple(f[:-1]) + (f[-1] // 2,)
        spec = tuple(f[:-1]) + (f[-1] // 2 + 1,)
        fwd = steps_for("rfftn", f, conv.dtype, axes=axes).jobs[0].steps
        inv = steps_for("irfftn", spec, complex_dtype(conv.dtype), s=[f[a] for a in axes],
                        axes=axes).jobs[0].steps
        self.fft = (cached_steps_plan(view, tuple(fwd), dev, conv.precision),
                    cached_steps_plan(spec, tuple(inv), dev, conv.precision))
        self.fits = all(p.spec.chunks == 1 for p in self.fft)
        if not self.fits:
            return
        rb, self.conv, self.kernel_spectrum = conv.dtype.itemsize, conv, conv._kernel_spectrum
        cb = 2 * rb * math.prod(spec)
        self.padded, self.spectrum, self.product, self.full = (
            dev.buffer(n, device_only=True) for n in (rb * math.prod(f), cb, cb,
                                                      rb * math.prod(f)))
        self._pad = _window_passes(dev, conv.batch_shape, [(0, n) for n in f], conv.dtype)
        self._crop = _window_passes(dev, f, conv.crop, conv.dtype)
        # the buffers between two window passes
        self.between = [[dev.buffer(nbytes, device_only=True) for _, nbytes in passes[:-1]]
                        for passes in (self._pad, self._crop)]
        self.mul = product_pass(cb // (2 * rb), conv.precision, dev.info.limits)
        self.nbytes = 2 * rb * math.prod(f) + 2 * cb + sum(
            b.nbytes for bs in self.between for b in bs)
        self.dispatch_count = len(self.flat_dispatches({"in": self.padded, "out": self.full}))

    def dispatches(self, resources: dict | None = None) -> list[list]:
        """pad, forward FFT, product, inverse FFT, crop: from resources "in" to "out"."""
        dev = self.device
        pad = _chain(dev, self._pad, resources["in"], self.between[0], self.padded)
        crop = _chain(dev, self._crop, self.full, self.between[1], resources["out"])
        fwd, inv = self.fft
        return [pad, fwd.flat_dispatches({"in": self.padded, "out": self.spectrum}),
                element_dispatches(dev, self.mul, (self.spectrum, self.product,
                                                   self.kernel_spectrum.buffer)),
                inv.flat_dispatches({"in": self.product, "out": self.full}), crop]


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


def fftconvolve(in1, in2, mode="full", axes=None, *, backend=None):
    """Convolve two N-dimensional arrays using FFT, as scipy.signal.fftconvolve, on the GPU.

    `mode` "full", "same" (centred on in1) or "valid"; `axes` the axes to convolve (others
    broadcast). float16/float32/complex64 inputs give single-precision results, anything else
    double; complex where either input is. DeviceArray inputs give DeviceArray results. For one
    kernel and many images, Convolver keeps the kernel's spectrum.
    """
    early, a, b = _prepare(in1, in2)
    if early is not None:
        return early
    if mode not in _MODES:
        _conv_axes(a.shape, b.shape, mode, axes)  # scipy checks the axes first
        raise ValueError("acceptable mode flags are 'valid', 'same', or 'full'")
    image_dtype = _dtype_of(a)
    if backend is None and isinstance(a, DeviceArray):
        backend = a.device
    conv = Convolver(b, a.shape, mode=mode, axes=axes, dtype=image_dtype, backend=backend)
    return conv(a)


def oaconvolve(in1, in2, mode="full", axes=None, *, backend=None):
    """Convolve two N-dimensional arrays using the overlap-add method, as
    scipy.signal.oaconvolve: the same results and dtypes as fftconvolve. On the GPU the whole
    padded array is one batch of FFTs, which is what overlap-add's blocks are for on a CPU, so
    both functions compute it the same way."""
    return fftconvolve(in1, in2, mode=mode, axes=axes, backend=backend)
