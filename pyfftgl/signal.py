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

from . import _api, _elementwise
from .planner import precision_of
from ._realtransforms import _shape_and_axes
from .backends import get_device
from ._validate import complex_dtype
from .device_array import DeviceArray, asarray
from .kinds import steps_for
from .plans import Recorded, cached_steps_plan

_PUSH = ("total", "group_base", "ns1", "n1", "off1", "ns2", "n2", "off2", "inner")
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
    _, axes = _shape_and_axes(s1, None, axes)
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
        self._plans = None
        self._recorded = Recorded(8)
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

    def _window_dispatches(self, src, shape, spans, dtype, dst=None):
        """Dispatches cutting [off, off + n) of every axis of `src` (of `shape`), zero beyond
        it, into `dst` (a new buffer if None), two neighbouring axes per pass; at least one
        pass. Returns (dispatches, dst, temporaries)."""
        reals = np.dtype(dtype).kind == "c"
        item = np.dtype(dtype).itemsize
        changed = [a for a, (off, n) in enumerate(spans) if off != 0 or n != shape[a]]
        chunks, a = [], 0
        for a in changed:
            if chunks and chunks[-1][-1] == a - 1 and len(chunks[-1]) == 1:
                chunks[-1].append(a)
            else:
                chunks.append([a])
        chunks = chunks or [[len(shape) - 1]]
        prog = _elementwise.program(self.device, "signal.comp", {"STAGE_WINDOW": 1}, _PUSH,
                                    precision_of(dtype))
        out, cur, temps = [], src, []
        cur_shape = list(shape)
        for k, chunk in enumerate(chunks):
            new_shape = list(cur_shape)
            for ax in chunk:
                new_shape[ax] = spans[ax][1]
            size = math.prod(new_shape)
            if k == len(chunks) - 1 and dst is not None:
                nxt = dst
            else:
                nxt = self.device.buffer(max(4, size * item), device_only=True)
                temps.append(nxt)
            a0, a1 = chunk[0], chunk[-1]
            push = dict(ns1=cur_shape[a0], n1=new_shape[a0], off1=spans[a0][0],
                        ns2=cur_shape[a1] if len(chunk) == 2 else 1,
                        n2=new_shape[a1] if len(chunk) == 2 else 1,
                        off2=spans[a1][0] if len(chunk) == 2 else 0,
                        inner=math.prod(cur_shape[a1 + 1:]) * (2 if reals else 1))
            out += _elementwise.dispatches(self.device, prog, size * (2 if reals else 1), push,
                                           (cur, nxt))
            cur, cur_shape = nxt, new_shape
        return out, cur, temps

    def _window(self, d: DeviceArray, spans) -> DeviceArray:
        """d's sub-array [off, off + n) per axis (zero beyond d), on the device."""
        if all(off == 0 and n == d.shape[a] for a, (off, n) in enumerate(spans)):
            return d
        dispatches, buf, _ = self._window_dispatches(d.buffer, d.shape, spans, d.dtype)
        self._run(dispatches)
        return DeviceArray(buf, tuple(n for _, n in spans), d.dtype, self.device)

    def _run(self, dispatches) -> None:
        with self.device.current():
            sub = self.device.record(dispatches)
        sub.run(wait=False)

    def _spectrum(self, x) -> DeviceArray:
        p = self._padded(x)
        f = _api.rfftn if self.real_fft else _api.fftn
        return f(p, axes=self.fft_axes)

    def _real_plans(self):
        """The r2c and c2r device plans of the real path, their work buffers, or None where
        they do not fit one submission (then the calls go through the API one by one)."""
        if self._plans is None:
            axes, f = self.fft_axes, self.fshape
            view = tuple(f[:-1]) + (f[-1] // 2,)
            spec = tuple(f[:-1]) + (f[-1] // 2 + 1,)
            fwd = steps_for("rfftn", f, self.dtype, axes=axes).jobs[0].steps
            inv = steps_for("irfftn", spec, complex_dtype(self.dtype),
                            s=[f[a] for a in axes], axes=axes).jobs[0].steps
            plans = (cached_steps_plan(view, tuple(fwd), self.device, self.precision),
                     cached_steps_plan(spec, tuple(inv), self.device, self.precision))
            if any(p.spec.chunks != 1 for p in plans):
                self._plans = False
            else:
                rb = self.dtype.itemsize
                cb = 2 * rb * math.prod(spec)
                self._plans = plans + tuple(self.device.buffer(n, device_only=True) for n in
                                            (rb * math.prod(f), cb, cb, rb * math.prod(f)))
        return self._plans or None

    def dispatches(self, image_buf, out_buf, keep: list | None = None) -> list:
        """The whole real-path call as one list of dispatches: pad, forward FFT, product with
        the kernel's spectrum, inverse FFT, the mode's crop (the benchmark times it). `keep`
        receives the temporary buffers they bind, to be held as long as they are."""
        fwd, inv, padded, spec, prod, full = self._real_plans()
        pad, _, t1 = self._window_dispatches(image_buf, self.batch_shape,
                                             [(0, n) for n in self.fshape], self.dtype, padded)
        crop, _, t2 = self._window_dispatches(full, self.fshape, self.crop, self.dtype, out_buf)
        if keep is not None:
            keep += t1 + t2
        mul = _elementwise.dispatches(
            self.device, _elementwise.program(self.device, "signal.comp", {"STAGE_CMUL": 1},
                                              _PUSH, self.precision),
            prod.nbytes // (2 * self.dtype.itemsize), {k: 0 for k in _PUSH[2:]},
            (spec, prod, self._kernel_spectrum.buffer))
        return pad + [d for ds in fwd.dispatches({"in": padded, "out": spec}) for d in ds] + \
            mul + [d for ds in inv.dispatches({"in": prod, "out": full}) for d in ds] + crop

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
        if self.real_fft and self._real_plans():
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
            def record():
                temps = []
                return self.device.record(self.dispatches(d.buffer, out.buffer, temps)), temps
            with self.device.current():
                sub, _ = self._recorded.get((d.buffer, out.buffer), record)
            sub.run(wait=False)
            return out if device_in else out.get()
        spectrum = _api.rfftn(self._padded(image), axes=self.fft_axes) if self.real_fft else \
            _api.fftn(self._padded(image), axes=self.fft_axes)
        product = DeviceArray(self.device.buffer(spectrum.nbytes, device_only=True),
                              spectrum.shape, spectrum.dtype, self.device)
        prog = _elementwise.program(self.device, "signal.comp", {"STAGE_CMUL": 1}, _PUSH,
                                    precision_of(spectrum.dtype))
        self._run(_elementwise.dispatches(self.device, prog, spectrum.size,
                                          {k: 0 for k in _PUSH[2:]},
                                          (spectrum.buffer, product.buffer,
                                           self._kernel_spectrum.buffer)))
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
