"""scipy.fft's DCT and DST (types 1-4) on the device: dct, idct, dst, idst, dctn, idctn, dstn,
idstn with scipy's signatures, semantics and errors.

Every transformed axis runs as a pre pass (shaders/dct.comp), the library's complex FFT and a
post pass, all recorded in one submission (planner/r2r.py has the algorithms). NumPy
input is uploaded once and read back once; DeviceArrays stay on the device. Complex input
transforms its real and imaginary parts, as scipy does: the device sees it as reals with an
innermost axis of 2.
"""
from __future__ import annotations

import math
import operator
from numbers import Number

import numpy as np

from .backends import get_device
from .device_array import DeviceArray, asarray
from .device_plan import DevicePlan, element_dispatches
from .planner import precision_of
from .planner.r2r import R2RAxis, plan_r2r
from .plans import cached_steps_plan, plan_cache
_NORMS = {None: 0, "backward": 0, "ortho": 1, "forward": 2}


# ---------------------------------------------------------------- argument checks (scipy's)

def _as_float_array(x) -> np.ndarray:
    """scipy's _asfarray: float16 computes in float32, integers and bools in float64; native
    byte order. Long double, which scipy keeps, is refused."""
    arr = np.asarray(x)
    if arr.dtype == np.float16:
        arr = arr.astype(np.float32)
    elif arr.dtype.kind not in "fc":
        arr = arr.astype(np.float64)
    if arr.dtype.type not in (np.float32, np.float64, np.complex64, np.complex128):
        raise TypeError(f"pyfftgl computes in single or double precision, not {arr.dtype}; pass "
                        "float64 or complex128 data")
    return arr.astype(arr.dtype.newbyteorder("="), copy=False)


def _inorm(norm, forward: bool) -> int:
    try:
        inorm = _NORMS[norm]
    except (KeyError, TypeError):
        raise ValueError(f'Invalid norm value {norm!r}, should be "backward", "ortho" or '
                         '"forward"') from None
    return inorm if forward else 2 - inorm


def check_workers(workers) -> None:
    """scipy's checks of `workers` (the count of CPU threads it would use), its messages."""
    if workers is None:
        return
    workers = operator.index(workers)  # scipy's TypeError for a float
    import os
    cpus = os.cpu_count() or 1
    if workers < 0 and workers < -cpus:
        raise ValueError(f"workers value out of range; got {workers}, must not be less than "
                         f"{-cpus}")
    if workers == 0:
        raise ValueError("workers must not be zero")


def _type(type_, kind: str) -> int:
    try:
        t = operator.index(type_)
    except TypeError:
        raise TypeError(f"{kind}(): the transform type must be an integer 1-4, got "
                        f"{type_!r}") from None
    if t not in (1, 2, 3, 4):
        raise ValueError(f"invalid {kind.upper()} type")
    return t


def _ints(x, name: str) -> list[int]:
    if isinstance(x, Number):
        x = (x,)
    try:
        return [operator.index(a) for a in x]
    except TypeError as e:
        raise ValueError(f"{name} must be a scalar or iterable of integers") from e


def nd_shape_and_axes(shape_in, s, axes):
    """scipy's _init_nd_shape_and_axes: its checks of (s, axes), its messages."""
    ndim = len(shape_in)
    if axes is not None:
        axes = [a + ndim if a < 0 else a for a in _ints(axes, "axes")]
        if any(a >= ndim or a < 0 for a in axes):
            raise ValueError("axes exceeds dimensionality of input")
        if len(set(axes)) != len(axes):
            raise ValueError("all axes must be unique")
    if s is not None:
        s = _ints(s, "shape")
        if axes and len(axes) != len(s):
            raise ValueError("when given, axes and shape arguments have to be of the same length")
        if axes is None:
            if len(s) > ndim:
                raise ValueError("shape requires more axes than are present")
            axes = list(range(ndim - len(s), ndim))
        s = [shape_in[a] if n == -1 else n for n, a in zip(s, axes)]
    elif axes is None:
        s, axes = list(shape_in), list(range(ndim))
    else:
        s = [shape_in[a] for a in axes]
    if any(n < 1 for n in s):
        raise ValueError(f"invalid number of data points ({list(s)}) specified")
    return list(s), list(axes)




def _one_axis_shape(shape_in, n, axis):
    """scipy's 1-D (n, axis) in its order: a length below 1, then IndexError for an axis outside
    the shape (0-d input included), as its shape[axis]."""
    if isinstance(n, Number) and not isinstance(n, complex) and n < 1:
        raise ValueError(f"invalid number of data points ({n}) specified")
    length = shape_in[axis]  # IndexError: tuple index out of range, as scipy
    ax = operator.index(axis) % len(shape_in)
    if n is None:
        if length < 1:
            raise ValueError(f"invalid number of data points ({length}) specified")
        return [length], [ax]
    try:
        n = operator.index(n)
    except TypeError:
        raise TypeError("slice indices must be integers or None or have an __index__ "
                        "method") from None
    if n < 1:
        raise ValueError(f"invalid number of data points ({n}) specified")
    return [n], [ax]


class R2RCall:
    """A checked call: the real shape the device sees, the axes' transforms, the dtypes."""

    def __init__(self, kind, forward, shape, dtype, type_, s, axes, norm, workers, orthogonalize):
        inorm = _inorm(norm, forward)
        check_workers(workers)
        t = _type(type_, kind)
        if not forward:
            t = {2: 3, 3: 2}.get(t, t)
        if orthogonalize is None:
            orthogonalize = norm == "ortho"
        self.dtype, self.shape = np.dtype(dtype), tuple(shape)
        self.out_shape = list(shape)
        for ax, n in zip(axes, s):
            self.out_shape[ax] = n
        self.out_shape = tuple(self.out_shape)
        self.axes = [(ax, R2RAxis(kind, t, n, inorm, bool(orthogonalize)))
                     for ax, n in zip(axes, s)]
        if kind == "dct" and t == 1 and 1 in s:
            raise RuntimeError("zero-length FFT requested")  # scipy's (pocketfft's) error
        self.precision = precision_of(self.dtype)
        # complex data: reals with an innermost axis of two (real and imaginary parts)
        self.real_shape = self.shape + ((2,) if self.dtype.kind == "c" else ())

    @property
    def empty(self) -> bool:
        return math.prod(self.shape) == 0 or math.prod(self.out_shape) == 0


def one_axis_call(kind, forward, x, type_, n, axis, norm, workers, orthogonalize) -> R2RCall:
    shape, dtype = _shape_dtype(x)
    _inorm(norm, forward)  # scipy checks the norm and workers before the length and axis
    check_workers(workers)
    s, axes = _one_axis_shape(shape, n, axis)
    return R2RCall(kind, forward, shape, dtype, type_, s, axes, norm, workers, orthogonalize)


def nd_call(kind, forward, x, type_, s, axes, norm, workers, orthogonalize) -> R2RCall | None:
    shape, dtype = _shape_dtype(x)
    s, axes = nd_shape_and_axes(shape, s, axes)
    if not axes:
        return None  # scipy returns its input (0-d input too), with no more checks
    return R2RCall(kind, forward, shape, dtype, type_, s, axes, norm, workers, orthogonalize)


def _shape_dtype(x):
    if isinstance(x, DeviceArray):
        x.buffer  # noqa: B018 (ValueError once closed)
        return x.shape, x.dtype
    arr = _as_float_array(x)
    return arr.shape, arr.dtype


# ---------------------------------------------------------------- the device plan

class R2RPlan(DevicePlan):
    """The DCT/DST of one call shape on one device (planner.plan_r2r): per axis a pre pass, a
    complex FFT plan and a post pass, recorded in one submission per ("in", "out") buffers."""

    def __init__(self, real_shape, axes, precision, device, fuse: bool = True):
        super().__init__(device, self.key(device, real_shape, axes, precision, fuse))
        self.real_shape, self.precision = tuple(real_shape), precision
        device.check_precision(precision)
        self.spec = spec = plan_r2r(real_shape, axes, precision, device.info.limits, fuse)
        self.ffts = []
        for st in spec.steps:
            fft = None if st.fft is None else cached_steps_plan(st.fft[0], (st.fft[1],), device,
                                                                precision)
            if fft is not None and fft.spec.chunks != 1:
                raise ValueError(f"a DCT/DST of {real_shape} does not fit one submission on "
                                 "this device")
            self.ffts.append(fft)
        real_bytes = 8 if precision == 64 else 4
        self._tables = device.buffer(spec.tables.nbytes, spec.tables.view(np.float32))
        cbytes = 2 * real_bytes
        self._work = [device.buffer(spec.work * cbytes) for _ in range(2)]
        self._mid = [device.buffer(spec.mid * real_bytes) for _ in range(spec.mids)]
        self.out_size = spec.out_size
        self.out_nbytes = self.out_size * real_bytes
        self.nbytes = (spec.tables.nbytes + 2 * spec.work * cbytes
                       + spec.mids * spec.mid * real_bytes)
        w0, w1 = self._work
        self.dispatch_count = len(self.flat_dispatches({"in": w0, "out": w1}))

    @staticmethod
    def key(device, real_shape, axes, precision, fuse: bool = True) -> tuple:
        """The plan cache's key of a DCT/DST plan."""
        return ("r2r", device, tuple(real_shape), tuple(axes), precision, fuse)

    def parts(self, src, dst) -> list[tuple[str, list]]:
        """The call's dispatches from buffer `src` to `dst` in order, by part: ("pre", ...) or
        ("post+pre", ...) where fused, ("fft", ...), ("post", ...) (the benchmark times them)."""
        out, cur, stored = [], src, 0
        w0, w1 = self._work
        dev, tables = self.device, self._tables
        last = len(self.spec.steps) - 1
        for i, (st, fft) in enumerate(zip(self.spec.steps, self.ffts)):
            out.append(("post+pre" if st.fused else "pre",
                        element_dispatches(dev, st.pre, (cur, w0, tables))))
            spectrum = w0
            if fft is not None:
                out.append(("fft", fft.flat_dispatches({"in": w0, "out": w1})))
                spectrum = w1
            if st.fused_next:
                cur = spectrum  # the next pre pass reads it through this axis's post
                continue
            nxt = dst if i == last else self._mid[stored % len(self._mid)]
            stored += nxt is not dst
            out.append(("post", element_dispatches(dev, st.post, (spectrum, nxt, tables))))
            cur = nxt
        return out

    def dispatches(self, resources: dict | None = None) -> list[list]:
        """Each part's dispatches from resources "in" to "out"."""
        return [ds for _, ds in self.parts(resources["in"], resources["out"])]


def device_plan(call: R2RCall, device) -> R2RPlan:
    return plan_cache.get(R2RPlan.key(device, call.real_shape, call.axes, call.precision),
                          lambda: R2RPlan(call.real_shape, call.axes, call.precision, device))


def run_call(call: "R2RCall | None", x, backend, out=None):
    """Run a checked call on `x` (numpy: returns numpy; DeviceArray: returns a DeviceArray, in
    `out` when given)."""
    if out is not None and not (isinstance(x, DeviceArray) and isinstance(out, DeviceArray)):
        raise TypeError("out= is for DeviceArray input: a DeviceArray on the same device")
    if call is None:  # no axis: scipy.fft returns its input as an array (the same ndarray)
        return x if isinstance(x, DeviceArray) else np.asarray(x)
    if isinstance(x, DeviceArray):
        if out is not None and (out.device is not x.device or out.shape != call.out_shape
                                or out.dtype != call.dtype or out.buffer is x.buffer):
            raise ValueError(f"out must be a DeviceArray of shape {call.out_shape} and dtype "
                             f"{call.dtype} on the input's device, not the input itself")
        if backend is not None and get_device(backend) is not x.device:
            raise ValueError("the array is on another device than the requested backend; copy "
                             "it with pyfftgl.asarray(a, backend=...)")
        device = x.device
        if call.empty:
            return out if out is not None else asarray(np.zeros(call.out_shape, call.dtype),
                                                   backend=device)
        plan = device_plan(call, device)
        if out is not None:
            plan.run({"in": x.buffer, "out": out.buffer})
            return out
        buf = device.buffer(max(plan.out_nbytes, 4), device_only=True)
        plan.run({"in": x.buffer, "out": buf})
        return DeviceArray(buf, call.out_shape, call.dtype, device)
    arr = _as_float_array(x)
    device = get_device(backend)
    device.check_precision(call.precision)
    if call.empty:
        return np.zeros(call.out_shape, call.dtype)
    plan = device_plan(call, device)
    # into and out of the plan's own buffers: a repeated call allocates and records nothing
    flat = plan.host_call({"in": np.ascontiguousarray(arr)}, plan.out_nbytes)
    return flat.view(call.dtype)[:math.prod(call.out_shape)].reshape(call.out_shape)


# ---------------------------------------------------------------- the public functions

def _doc(name: str, summary: str, nd: bool) -> str:
    args = "(x, type=2, s=None, axes=None, norm=None, overwrite_x=False, workers=None, " \
           "orthogonalize=None)" if nd else \
           "(x, type=2, n=None, axis=-1, norm=None, overwrite_x=False, workers=None, " \
           "orthogonalize=None)"
    return (f"{summary}, as scipy.fft.{name}{args}, on the GPU.\n\n"
            "`type` is 1-4; `norm` None/\"backward\", \"ortho\" or \"forward\"; `orthogonalize` "
            "defaults to norm == \"ortho\". float16/float32/complex64 input computes and returns "
            "single precision, float64/complex128/integers double; complex input transforms its "
            "real and imaginary parts. A DeviceArray (float32, float64, complex64, complex128) "
            "returns a DeviceArray, computed with no host transfer. `overwrite_x` and `workers` "
            "are accepted and checked as scipy checks them; the input is never modified. "
            "`backend` picks the API (\"vulkan\", \"gl\", \"auto\" or a Device); `out`, a "
            "DeviceArray of the result's shape and dtype, receives a DeviceArray's result.")


def dct(x, type=2, n=None, axis=-1, norm=None, overwrite_x=False, workers=None,
        orthogonalize=None, *, backend=None, out=None):
    call = one_axis_call("dct", True, x, type, n, axis, norm, workers, orthogonalize)
    return run_call(call, x, backend, out)


def idct(x, type=2, n=None, axis=-1, norm=None, overwrite_x=False, workers=None,
         orthogonalize=None, *, backend=None, out=None):
    call = one_axis_call("dct", False, x, type, n, axis, norm, workers, orthogonalize)
    return run_call(call, x, backend, out)


def dst(x, type=2, n=None, axis=-1, norm=None, overwrite_x=False, workers=None,
        orthogonalize=None, *, backend=None, out=None):
    call = one_axis_call("dst", True, x, type, n, axis, norm, workers, orthogonalize)
    return run_call(call, x, backend, out)


def idst(x, type=2, n=None, axis=-1, norm=None, overwrite_x=False, workers=None,
         orthogonalize=None, *, backend=None, out=None):
    call = one_axis_call("dst", False, x, type, n, axis, norm, workers, orthogonalize)
    return run_call(call, x, backend, out)


def dctn(x, type=2, s=None, axes=None, norm=None, overwrite_x=False, workers=None,
         orthogonalize=None, *, backend=None, out=None):
    call = nd_call("dct", True, x, type, s, axes, norm, workers, orthogonalize)
    return run_call(call, x, backend, out)


def idctn(x, type=2, s=None, axes=None, norm=None, overwrite_x=False, workers=None,
          orthogonalize=None, *, backend=None, out=None):
    call = nd_call("dct", False, x, type, s, axes, norm, workers, orthogonalize)
    return run_call(call, x, backend, out)


def dstn(x, type=2, s=None, axes=None, norm=None, overwrite_x=False, workers=None,
         orthogonalize=None, *, backend=None, out=None):
    call = nd_call("dst", True, x, type, s, axes, norm, workers, orthogonalize)
    return run_call(call, x, backend, out)


def idstn(x, type=2, s=None, axes=None, norm=None, overwrite_x=False, workers=None,
          orthogonalize=None, *, backend=None, out=None):
    call = nd_call("dst", False, x, type, s, axes, norm, workers, orthogonalize)
    return run_call(call, x, backend, out)


for _f, _summary in ((dct, "Return the Discrete Cosine Transform of arbitrary type sequence x"),
                     (idct, "Return the Inverse Discrete Cosine Transform of an arbitrary type "
                            "sequence"),
                     (dst, "Return the Discrete Sine Transform of arbitrary type sequence x"),
                     (idst, "Return the Inverse Discrete Sine Transform of an arbitrary type "
                            "sequence"),
                     (dctn, "Return multidimensional Discrete Cosine Transform along the "
                            "specified axes"),
                     (idctn, "Return multidimensional Inverse Discrete Cosine Transform along "
                             "the specified axes"),
                     (dstn, "Return multidimensional Discrete Sine Transform along the "
                            "specified axes"),
                     (idstn, "Return multidimensional Inverse Discrete Sine Transform along "
                             "the specified axes")):
    _f.__doc__ = _doc(_f.__name__, _summary, _f.__name__.endswith("n"))

CHECKS = {"dct": (one_axis_call, "dct", True), "idct": (one_axis_call, "dct", False),
          "dst": (one_axis_call, "dst", True), "idst": (one_axis_call, "dst", False),
          "dctn": (nd_call, "dct", True), "idctn": (nd_call, "dct", False),
          "dstn": (nd_call, "dst", True), "idstn": (nd_call, "dst", False)}
FUNCTIONS = {f.__name__: f for f in (dct, idct, dst, idst, dctn, idctn, dstn, idstn)}
