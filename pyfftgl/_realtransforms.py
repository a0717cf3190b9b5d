"""scipy.fft's DCT and DST (types 1-4) on the device: dct, idct, dst, idst, dctn, idctn, dstn,
idstn with scipy's signatures, semantics and errors.

Every transformed axis runs as a pre pass (shaders/dct.comp), the library's complex FFT and a
post pass, all recorded in one submission (planner/realtransforms.py has the algorithms). NumPy
input is uploaded once and read back once; DeviceArrays stay on the device. Complex input
transforms its real and imaginary parts, as scipy does: the device sees it as reals with an
innermost axis of 2.
"""
from __future__ import annotations

import math
import operator
import threading
from numbers import Number

import numpy as np

from . import _elementwise
from .planner import precision_of
from .backends import get_device
from .device_array import DeviceArray, asarray
from .planner import Step
from .planner.realtransforms import GENERIC, LineView, R2RAxis, fft_shape
from .plans import Recorded, cached_steps_plan, plan_cache

_PUSH = ("total", "group_base", "outer", "nsrc", "n", "m", "inner", "lines_p", "lines_q", "tbl",
         "pn", "pm", "pinner", "pq", "ptbl")  # p*: the previous axis, for a fused pre pass
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


_shape_and_axes = nd_shape_and_axes  # pyfftgl.signal's name for it


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


class _Call:
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


def _call(kind, forward, x, type_, n, axis, norm, workers, orthogonalize) -> _Call:
    shape, dtype = _shape_dtype(x)
    _inorm(norm, forward)  # scipy checks the norm and workers before the length and axis
    check_workers(workers)
    s, axes = _one_axis_shape(shape, n, axis)
    return _Call(kind, forward, shape, dtype, type_, s, axes, norm, workers, orthogonalize)


def _calln(kind, forward, x, type_, s, axes, norm, workers, orthogonalize) -> _Call | None:
    shape, dtype = _shape_dtype(x)
    s, axes = nd_shape_and_axes(shape, s, axes)
    if not axes:
        return None  # scipy returns its input (0-d input too), with no more checks
    return _Call(kind, forward, shape, dtype, type_, s, axes, norm, workers, orthogonalize)


def _shape_dtype(x):
    if isinstance(x, DeviceArray):
        x.buffer  # noqa: B018 (ValueError once closed)
        return x.shape, x.dtype
    arr = _as_float_array(x)
    return arr.shape, arr.dtype


# ---------------------------------------------------------------- the device plan

class R2RPlan:
    """The DCT/DST of one call shape on one device: per axis a pre pass, a complex FFT plan and
    a post pass, recorded in one submission per (input, output) buffers. `fuse`: an axis's post
    pass is evaluated inside the next axis's pre pass where that reads it, so the reals between
    two axes are never stored (one pass fewer per axis after the first)."""

    RECORDED = 8  # recorded submissions kept, by the buffers they bind

    def __init__(self, real_shape, axes, precision, device, fuse: bool = True):
        self.device, self.real_shape, self.precision = device, tuple(real_shape), precision
        device.check_precision(precision)
        real_bytes = 8 if precision == 64 else 4
        tables, steps, shape = [], [], list(real_shape)
        work = 0
        for ax, r2r in axes:
            outer, inner = math.prod(shape[:ax]), math.prod(shape[ax + 1:])
            view = LineView(outer, inner, r2r.paired)
            p, q, m = view.lines_p, view.lines_q, r2r.fft_length
            fft = None
            if m > 1:
                fshape, fax = fft_shape(p, m, q)
                fft = cached_steps_plan(fshape, (Step("c2c", fax, inverse=r2r.fft_inverse,
                                                      norm="forward" if r2r.fft_inverse
                                                      else "backward"),), device, precision)
                if fft.spec.chunks != 1:
                    raise ValueError(f"a DCT/DST of {real_shape} does not fit one submission "
                                     "on this device")
            defines = {"MODE": r2r.mode, "PAIR_INNER": int(view.pair_inner),
                       "REVERSED": int(r2r.reversed)}
            prev = steps[-1] if steps else None
            fused = fuse and prev is not None and prev["fft"] is not None
            pre_defines = {"STAGE_PRE": 1, **defines}
            push = dict(outer=outer, nsrc=shape[ax], n=r2r.n, m=m, inner=inner, lines_p=p,
                        lines_q=q, tbl=sum(t.size for t in tables))
            if fused:  # this pre pass reads the previous axis's spectrum through its post
                prev["fused_next"] = True
                pre_defines.update({f"PREV_{k}": v for k, v in prev["defines"].items()})
                pp = prev["push"]
                push.update(pn=pp["n"], pm=pp["m"], pinner=pp["inner"], pq=pp["lines_q"],
                            ptbl=pp["tbl"])
            tables.append(r2r.tables())
            shape[ax] = r2r.n
            steps.append(dict(
                pre=_elementwise.program(device, "dct.comp", pre_defines, _PUSH, precision),
                post=_elementwise.program(device, "dct.comp", {"STAGE_POST": 1, **defines},
                                          _PUSH, precision),
                fft=fft, defines=defines, push={k: push.get(k, 0) for k in _PUSH[2:]},
                pre_threads=p * m * q, fused=fused, fused_next=False, size=math.prod(shape),
                post_threads=outer * r2r.n * inner if r2r.mode == GENERIC else p * m * q))
            work = max(work, p * m * q)
        table = np.concatenate(tables).astype(np.complex128 if precision == 64 else np.complex64)
        self._tables = device.buffer(table.nbytes, table.view(np.float32))
        cbytes = 2 * real_bytes
        self._work = [device.buffer(work * cbytes) for _ in range(2)]
        stored = [st["size"] for st in steps[:-1] if not st["fused_next"]]
        mid = max(stored, default=0)
        self._mid = [device.buffer(mid * real_bytes) for _ in range(min(2, len(stored)))]
        self.out_size = steps[-1]["size"]
        self.out_nbytes = self.out_size * real_bytes
        self.nbytes = table.nbytes + 2 * work * cbytes + len(self._mid) * mid * real_bytes
        self._steps = steps
        self._recorded = Recorded(self.RECORDED)
        self._lock = threading.Lock()

    def parts(self, src, dst) -> list[tuple[str, list]]:
        """The call's dispatches from buffer `src` to `dst` in order, by part: ("pre", ...) or
        ("post+pre", ...) where fused, ("fft", ...), ("post", ...) (the benchmark times them)."""
        out, cur, stored = [], src, 0
        w0, w1 = self._work
        dev, tables = self.device, self._tables
        for i, st in enumerate(self._steps):
            out.append(("post+pre" if st["fused"] else "pre", _elementwise.dispatches(
                dev, st["pre"], st["pre_threads"], st["push"], (cur, w0, tables))))
            spectrum = w0
            if st["fft"] is not None:
                out.append(("fft", [d for ds in st["fft"].dispatches({"in": w0, "out": w1})
                                    for d in ds]))
                spectrum = w1
            if st["fused_next"]:
                cur = spectrum  # the next pre pass reads it through this axis's post
                continue
            nxt = dst if i == len(self._steps) - 1 else self._mid[stored % len(self._mid)]
            stored += nxt is not dst
            out.append(("post", _elementwise.dispatches(dev, st["post"], st["post_threads"],
                                                        st["push"], (spectrum, nxt, tables))))
            cur = nxt
        return out

    def dispatches(self, src, dst) -> list:
        return [d for _, ds in self.parts(src, dst) for d in ds]

    def run(self, src, dst) -> None:
        """Queue the transform of buffer `src` into buffer `dst` (the host does not wait)."""
        with self.device.current(), self._lock:
            sub = self._recorded.get((src, dst), lambda: self.device.record(
                self.dispatches(src, dst)))
        sub.run(wait=False)


def _plan(call: _Call, device) -> R2RPlan:
    key = ("r2r", device, call.real_shape, tuple(call.axes), call.precision)

    def build():
        plan = R2RPlan(call.real_shape, call.axes, call.precision, device)
        plan.cache_key = key
        return plan
    return plan_cache.get(key, build)


def execute(call: "_Call | None", x, backend, out=None):
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
        plan = _plan(call, device)
        if out is not None:
            plan.run(x.buffer, out.buffer)
            return out
        buf = device.buffer(max(plan.out_nbytes, 4), device_only=True)
        plan.run(x.buffer, buf)
        return DeviceArray(buf, call.out_shape, call.dtype, device)
    arr = _as_float_array(x)
    device = get_device(backend)
    device.check_precision(call.precision)
    if call.empty:
        return np.zeros(call.out_shape, call.dtype)
    plan = _plan(call, device)
    d = asarray(arr, dtype=arr.dtype, backend=device)
    try:
        buf = device.buffer(max(plan.out_nbytes, 4), device_only=True)
        plan.run(d.buffer, buf)
        return DeviceArray(buf, call.out_shape, call.dtype, device).get()
    finally:
        d.close()


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
    call = _call("dct", True, x, type, n, axis, norm, workers, orthogonalize)
    return execute(call, x, backend, out)


def idct(x, type=2, n=None, axis=-1, norm=None, overwrite_x=False, workers=None,
         orthogonalize=None, *, backend=None, out=None):
    call = _call("dct", False, x, type, n, axis, norm, workers, orthogonalize)
    return execute(call, x, backend, out)


def dst(x, type=2, n=None, axis=-1, norm=None, overwrite_x=False, workers=None,
        orthogonalize=None, *, backend=None, out=None):
    call = _call("dst", True, x, type, n, axis, norm, workers, orthogonalize)
    return execute(call, x, backend, out)


def idst(x, type=2, n=None, axis=-1, norm=None, overwrite_x=False, workers=None,
         orthogonalize=None, *, backend=None, out=None):
    call = _call("dst", False, x, type, n, axis, norm, workers, orthogonalize)
    return execute(call, x, backend, out)


def dctn(x, type=2, s=None, axes=None, norm=None, overwrite_x=False, workers=None,
         orthogonalize=None, *, backend=None, out=None):
    call = _calln("dct", True, x, type, s, axes, norm, workers, orthogonalize)
    return execute(call, x, backend, out)


def idctn(x, type=2, s=None, axes=None, norm=None, overwrite_x=False, workers=None,
          orthogonalize=None, *, backend=None, out=None):
    call = _calln("dct", False, x, type, s, axes, norm, workers, orthogonalize)
    return execute(call, x, backend, out)


def dstn(x, type=2, s=None, axes=None, norm=None, overwrite_x=False, workers=None,
         orthogonalize=None, *, backend=None, out=None):
    call = _calln("dst", True, x, type, s, axes, norm, workers, orthogonalize)
    return execute(call, x, backend, out)


def idstn(x, type=2, s=None, axes=None, norm=None, overwrite_x=False, workers=None,
          orthogonalize=None, *, backend=None, out=None):
    call = _calln("dst", False, x, type, s, axes, norm, workers, orthogonalize)
    return execute(call, x, backend, out)


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

CHECKS = {"dct": (_call, "dct", True), "idct": (_call, "dct", False),
          "dst": (_call, "dst", True), "idst": (_call, "dst", False),
          "dctn": (_calln, "dct", True), "idctn": (_calln, "dct", False),
          "dstn": (_calln, "dst", True), "idstn": (_calln, "dst", False)}
FUNCTIONS = {f.__name__: f for f in (dct, idct, dst, idst, dctn, idctn, dstn, idstn)}
