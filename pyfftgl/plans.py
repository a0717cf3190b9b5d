"""Plans bound to a device: the planner's passes with their programs, buffers and one recorded
submission. A plan allocates everything when it is built; executing it only uploads, replays and
downloads."""
from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from dataclasses import dataclass, replace

import numpy as np
# numpy's own FFT, bound now: a harness that puts pyfftgl in numpy.fft's place must not make the
# host tables come from the device.
from numpy.fft import fft as _host_fft

from . import planner, shaders
from .backends import get_device
from .backends.base import Device, Dispatch, PrecisionUnavailable
from .limits import Limits


def twiddle_table(n: int, dtype=np.complex64) -> np.ndarray:
    """exp(-2 pi i m / n) for m < n, rounded once to `dtype`."""
    return planner.unit_roots(np.arange(n), n).astype(dtype)


def bluestein_chirp(n: int, inverse: bool, dtype=np.complex64) -> np.ndarray:
    """w[j] = exp(-+i pi j^2 / n), j < n, with j^2 reduced mod 2n exactly in integers.

    Reducing first keeps the float64 angle below 2 pi; a float32 chirp evaluated from j^2 / n
    directly is wrong by ~1e-2 at n = 1e5.
    """
    j = np.arange(n, dtype=np.int64)
    r = (j * j) % (2 * n)  # exact: j^2 < 2^63 for every n this library plans
    return planner.unit_roots(r, 2 * n, 1 if inverse else -1).astype(dtype)


def bluestein_kernel(n: int, m: int, inverse: bool, dtype=np.complex64) -> np.ndarray:
    """The spectrum of the convolution kernel conj(w[j]) (j in -(n-1)..n-1, wrapped mod m)."""
    w = bluestein_chirp(n, inverse, np.complex128)
    c = np.zeros(m, np.complex128)
    c[:n] = np.conj(w)
    c[m - n + 1:] = np.conj(w[1:][::-1])
    return _host_fft(c).astype(dtype)


def build_table(key, dtype=np.complex64) -> np.ndarray:
    """The contents of a table named by the planner (a key of planner.records), computed in
    float64 and rounded once to `dtype` (complex64, or complex128 for double-precision plans)."""
    if isinstance(key, planner.TwiddleKey):
        return twiddle_table(key.n, dtype)
    if isinstance(key, planner.StageKey):  # W_{r ns}^(r k) at (r - 1) ns + k, r < radix, k < ns
        rk = np.arange(1, key.radix, dtype=np.int64)[:, None] * np.arange(key.ns, dtype=np.int64)
        return planner.unit_roots(rk.ravel(), key.radix * key.ns).astype(dtype)
    if isinstance(key, (planner.FourstepLoKey, planner.FourstepHiKey)):
        # W_n^(d k) = hi[d, k // L] * lo[d, k % L] for line digits d < lines, k < length;
        # digit-fastest tables (StockhamPass.digit_fastest) are stored transposed, [k][d]
        ln = planner.FOURSTEP_LO_LEN
        k = (np.arange(ln, dtype=np.int64) if isinstance(key, planner.FourstepLoKey)
             else ln * np.arange(-(-key.length // ln), dtype=np.int64))
        m = (np.arange(key.lines, dtype=np.int64)[:, None] * k) % key.n  # exact, then one rounding
        m = m.T if key.digit_fastest else m
        return planner.unit_roots(m.ravel(), key.n).astype(dtype)
    if isinstance(key, planner.ChirpKey):
        return bluestein_chirp(key.n, key.inverse, dtype)
    if isinstance(key, planner.BluesteinKernelKey):
        return bluestein_kernel(key.n, key.m, key.inverse, dtype)
    raise KeyError(key)


@dataclass(frozen=True)
class Storage:
    """Where a plan's passes read and write, beyond plain complex64 buffers: preamble switches
    of the same kernels. `fields`: complex values per element (2: an rgba32f texel holds two
    fields, transformed in the same dispatches). `images`: buffer names ("in", "out", "w0") that
    are images of this GLSL format instead, `width` texels wide. `spec_fields`: the last pass
    multiplies its output by a spectrum (binding 3) of 1 field applied to all, or one per field.
    `precision`: 32 (complex64 data and tables) or 64 (complex128, computed in double)."""

    fields: int = 1
    images: tuple[tuple[str, str], ...] = ()  # (buffer name, image format)
    width: int = 0
    spec_fields: int = 0
    precision: int = 32

    def image_format(self, name: str) -> str | None:
        return dict(self.images).get(name)

    @property
    def dtype(self) -> np.dtype:
        """The complex dtype of one field of the data and of the tables."""
        return np.dtype(np.complex128 if self.precision == 64 else np.complex64)


def element_limits(limits: Limits, element_bytes: int) -> Limits:
    """`limits` as the planner must see them for elements of `element_bytes` (its own sizes are
    complex64's): shared memory and buffers hold proportionally fewer elements, and the tuned
    shapes, measured on complex64, do not apply."""
    ratio = element_bytes // planner.COMPLEX64_BYTES
    if ratio == 1:
        return limits
    return replace(limits, tuned=(), max_shared_bytes=limits.max_shared_bytes // ratio,
                   max_buffer_bytes=limits.max_buffer_bytes // ratio)


def precision_of(dtype) -> int:
    """The kernels' PRECISION for data of numpy `dtype` (complex128/float64: 64, else 32)."""
    return 64 if np.dtype(dtype) in (np.complex128, np.float64) else 32


def check_precision(device: Device, precision: int) -> None:
    """Raise PrecisionUnavailable where `device` cannot compute in `precision`."""
    if precision == 64 and not device.info.float64:
        i = device.info
        feature = "shaderFloat64" if i.api == "vulkan" else "GL_ARB_gpu_shader_fp64"
        lacks = (f"under device profile {i.profile!r} has no fp64" if i.profile
                 else f"lacks {feature}")
        raise PrecisionUnavailable(
            f"{i.api}:{i.name} {lacks}, which double-precision (float64/complex128) transforms "
            "need; pass float32/complex64 data")


_COMPONENTS = {"r32f": 1, "rg32f": 2, "rgba32f": 4, "r16f": 1, "rg16f": 2, "rgba16f": 4}


class Recorded:
    """The submissions recorded for the last `size` sets of resources, by their identity: a loop
    that reuses its buffers or textures replays one, with no recording or allocation per call.
    Callers hold their own lock."""

    def __init__(self, size: int):
        self.size = size
        self._entries: OrderedDict = OrderedDict()  # (tag, ids) -> (resources, submission)

    def get(self, resources: tuple, record, tag=()):
        """The submission recorded for `resources` (and `tag`), made by record() if new."""
        key = (tag, tuple(map(id, resources)))
        entry = self._entries.get(key)
        if entry is None or any(a is not b for a, b in zip(entry[0], resources)):
            entry = self._entries[key] = (resources, record())
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)
        self._entries.move_to_end(key)
        return entry[1]

    def clear(self):
        self._entries.clear()


class TransformPlan:
    """Complex transforms over `axes` of a C-contiguous complex64 array of `shape`, bound to one
    device: tables, work buffers and programs allocated once, every pass recorded in one
    submission. The resources a call reads and writes are bound when its submission is
    recorded (`dispatches`), so one plan runs on any buffers or images of the right size."""

    # Recorded submissions kept per plan, by the identity of the resources they bind: a render
    # loop replays one, with no recording or allocation per call (two, alternating work
    # buffers).
    RECORDED = 8
    # Device calls alternate between two sets of work buffers where the device overlaps calls
    # (Device.overlaps_calls) and the set is at most this big: then a call's first pass, which
    # writes the other set, need not wait for the last pass of the call before it, which reads
    # this one. Larger transforms keep one set (their passes fill the GPU, and the memory is
    # more than the overlap is worth).
    ALTERNATE_MAX_BYTES = 64 << 20

    def __init__(self, spec: planner.TransformSpec, device: Device, limits: Limits, norm: str,
                 buffers: dict | None = None, storage: Storage = Storage()):
        """`buffers`: device buffers to use by name instead of allocating them (the tuner times
        many shapes of one transform on the same memory)."""
        self.spec, self.device, self.limits, self.norm = spec, device, limits, norm
        self.storage = storage
        dev, units = device, spec.units
        # Every table the passes read, concatenated into one buffer (binding 2).
        offsets, parts, at = {}, [], 0
        check_precision(device, storage.precision)
        for key in spec.tables():
            t = build_table(key, storage.dtype)
            offsets[key], at = at, at + t.size
            parts.append(t)
        tables = np.concatenate(parts) if parts else np.zeros(1, storage.dtype)
        self._tables = dev.buffer(tables.nbytes, tables)
        self.element_bytes = storage.dtype.itemsize * storage.fields
        self._sizes = {name: units * per_unit * self.element_bytes for name, per_unit in spec.buffers}
        # Work buffers now; "in" and "out" when a host call first needs them (device calls bind
        # the caller's), images the plan owns for the names the storage makes images.
        self._buffers = dict(buffers or {})
        for name, nbytes in self._sizes.items():
            fmt = storage.image_format(name)
            if name not in self._buffers and name not in ("in", "out"):
                self._buffers[name] = (dev.image(storage.width, nbytes // self.element_bytes
                                                 // storage.width, fmt)
                                       if fmt else dev.buffer(nbytes))
        self.nbytes = tables.nbytes + sum(self._sizes[n] for n in self._buffers)
        self._programs = [shaders.get_program(dev, p.kernel, self._defines(p, i, offsets),
                                              planner.PUSH_NAMES)
                          for i, p in enumerate(spec.passes)]
        # Each pass's (base, gx, gy) dispatches, fixed when the plan is built: inside the
        # device's grid limits and the work budget of one dispatch, for this plan's elements.
        self._grids = [planner.dispatch_grids(p, units, limits, self.element_bytes)
                       for p in spec.passes]
        self.dispatch_count = sum(map(len, self._grids))
        self._host_run = None  # the upload-run-download submission, recorded on first use
        self._recorded = Recorded(self.RECORDED)
        self._work_sizes = {n: b for n, b in self._sizes.items() if n not in ("in", "out")}
        self._alternates = (device.overlaps_calls and not storage.images and bool(self._work_sizes)
                            and sum(self._work_sizes.values()) <= self.ALTERNATE_MAX_BYTES)
        self._other_work: dict | None = None  # the second set, made on the first call using it
        self._second = False  # which set the last device call used
        self._lock = threading.Lock()
        self.last_gpu_ns: float | None = None

    def _defines(self, p, i: int, offsets: dict) -> dict:
        """Pass p's preamble: the planner's, plus the storage switches of this plan."""
        st = self.storage
        d = dict(p.defines(offsets))
        if st.fields != 1:
            d["FIELDS"] = st.fields
        if st.precision == 64:  # the preamble's literals again, as doubles
            d["PRECISION"] = 64
            d["SCALE"] = planner.float_literal(p.scale, double=True)
            d.update(planner.odd_radix_tables(p.radices, double=True))
        for role, name in (("IN", p.src_buf), ("OUT", p.dst_buf)):
            fmt = st.image_format(name)
            if fmt:
                d[f"{role}_IMAGE"], d[f"{role}_COMPONENTS"] = fmt, _COMPONENTS[fmt]
                d["IMG_WIDTH"] = f"{st.width}u"
        if st.spec_fields and i == len(self.spec.passes) - 1:
            d["MUL_SPEC"], d["SPEC_FIELDS"] = 1, st.spec_fields
        return d

    def _own(self, name: str):
        """The plan's own buffer `name`, allocated on first use ("in" and "out")."""
        buf = self._buffers.get(name)
        if buf is None:
            buf = self._buffers[name] = self.device.buffer(self._sizes[name])
            self.nbytes += self._sizes[name]
        return buf

    def dispatches(self, resources: dict | None = None) -> list[list[Dispatch]]:
        """Each pass's dispatches, in order, binding the buffers or images in `resources` by
        name ("in", "out", "spec") and the plan's own for the rest."""
        res = resources or {}
        out, units = [], self.spec.units
        last = len(self.spec.passes) - 1
        for i, (p, program) in enumerate(zip(self.spec.passes, self._programs)):
            src, dst = (res.get(n) or self._own(n) for n in (p.src_buf, p.dst_buf))
            fmt_in, fmt_out = (self.storage.image_format(n) for n in (p.src_buf, p.dst_buf))
            buffers = [None if fmt_in else src, None if fmt_out else dst, self._tables]
            if "spec" in res and i == last:
                buffers.append(res["spec"])
            images = (src if fmt_in else None, dst if fmt_out else None) if fmt_in or fmt_out else ()
            out.append([Dispatch(program, (gx, gy, 1), np.array(p.push(units, base), np.uint32),
                                 tuple(buffers), images)
                        for base, gx, gy in self._grids[i]])
        return out

    @property
    def pass_dispatches(self) -> list[list[Dispatch]]:
        """Each pass's dispatches on the plan's own buffers (the benchmark times them)."""
        return self.dispatches()

    @property
    def _dispatches(self) -> list[Dispatch]:
        return [d for ds in self.dispatches() for d in ds]

    @property
    def passes(self):
        return self.spec.passes

    @property
    def shape(self):
        return self.spec.shape

    def __repr__(self):
        s = self.spec
        parts = ", ".join(f"{p.n}{list(p.radices)}" for p in s.passes)
        per_axis = ", ".join(
            f"axis {ax}: {alg}" + (f" (convolution length {m})" if m else "")
            for ax, alg, m in zip(s.axes, s.algorithms, s.conv_lengths))
        images = "".join(f", {name} {fmt} image" for name, fmt in self.storage.images)
        fields = f", {self.storage.fields} fields per element" if self.storage.fields > 1 else ""
        fields += ", double precision" if self.storage.precision == 64 else ""
        return (f"<{type(self).__name__} shape={s.shape} axes={s.axes} "
                f"{'inverse' if s.inverse else 'forward'} norm={self.norm} on "
                f"{self.device.info.api}:{self.device.info.name}: {per_axis}, "
                f"{len(s.passes)} pass{'es' if len(s.passes) > 1 else ''} [{parts}]{fields}"
                f"{images}, {s.chunks} submission(s), {self.nbytes} bytes>")

    def execute(self, x: np.ndarray, *, timed: bool = False) -> np.ndarray:
        """Transform x, complex64 (complex128 for a double plan) of the plan's shape; returns a
        new array of that dtype and the plan's output shape (for real steps: real samples
        viewed as complex pairs)."""
        spec, dtype = self.spec, self.storage.dtype
        if x.dtype != dtype or x.shape != spec.shape:
            raise ValueError(f"plan expects {dtype} of shape {spec.shape}, "
                             f"got {x.dtype} {x.shape}")
        x = np.ascontiguousarray(x)
        out = np.empty(spec.out_shape, dtype)
        if spec.whole:  # one chunk: the whole array
            x, out_view = x[np.newaxis], out[np.newaxis]
        else:
            out_view = out
        total = 0.0
        # The plan's buffers are shared by every call; the device held once for all transfers
        # (taken before the plan's lock, everywhere: a thread holding the device may call).
        with self.device.current(), self._lock:
            if self._host_run is None:
                self._host_run = self.device.record(self._dispatches, uploads=[self._own("in")],
                                                    downloads=[self._own("out")])
            for lo in range(0, x.shape[0], spec.units):
                hi = min(x.shape[0], lo + spec.units)
                total += self._host_run.run([x[lo:hi]], timed=timed) or 0.0
                piece = out_view[lo:hi]
                piece[...] = self._host_run.result(0).view(dtype)[: piece.size].reshape(
                    piece.shape)
        self.last_gpu_ns = total if timed else None
        return out

    __call__ = execute

    def submission(self, resources: dict, second: bool = False):
        """The recorded submission binding `resources` (name -> buffer or image), and the
        second set of work buffers where `second`, recorded once per set of resources among the
        last RECORDED used."""
        with self.device.current(), self._lock:  # the device first, as in execute()
            if second:
                resources = {**self._second_work_set(), **resources}
            names = tuple(sorted(resources))
            return self._recorded.get(
                tuple(resources[n] for n in names),
                lambda: self.device.record([d for ds in self.dispatches(resources) for d in ds]),
                names)

    def _second_work_set(self) -> dict:
        """The other work buffers of alternating device calls, made on first use."""
        if self._other_work is None:
            self._other_work = {n: self.device.buffer(b) for n, b in self._work_sizes.items()}
            self.nbytes += sum(b.nbytes for b in self._other_work.values())
        return self._other_work

    def output_buffer(self):
        """A new device buffer of the plan's output size."""
        return self.device.buffer(self._sizes["out"], device_only=True)

    def execute_device(self, src, dst=None) -> object:
        """Transform the device buffer `src` (the plan's input size) into `dst` (a new buffer
        if None) and return it, with no host transfer: the passes read `src` (only ever read)
        and write `dst` directly. The call returns once the work is queued; the device waits for
        it before the host next reads or writes device memory."""
        if self.spec.chunks != 1:
            raise ValueError("this transform does not fit one submission on this device")
        dst = self.output_buffer() if dst is None else dst
        call = self.device_call({"in": src, "out": dst})
        call()
        runs = getattr(_in_use, "runs", None)
        if runs is not None:  # a Plan's call watching which calls it queued
            runs.append(call)
        return dst

    def device_call(self, resources: dict):
        """A function that queues this plan's call on `resources` once more, without waiting:
        from one recorded submission, or from two alternating work buffers (ALTERNATE_MAX_BYTES;
        which set goes next is only a matter of speed: the device orders calls by what they
        touch)."""
        if not self._alternates:
            return functools.partial(self.submission(resources).run, wait=False)
        subs = (self.submission(resources), self.submission(resources, second=True))

        def call():
            self._second = not self._second
            subs[self._second].run(wait=False)
        return call


class FFTPlan(TransformPlan):
    """A batched 1D complex-to-complex transform of `batch` lines of length n on one device."""

    def __init__(self, n: int, batch: int, inverse: bool, norm: str = "backward",
                 backend=None, limits: Limits | None = None):
        """`limits` plans as if the device were smaller (never larger) than it is."""
        device = get_device(backend)
        limits = planner.tighter(device.info.limits, limits)
        super().__init__(planner.plan_fft(n, batch, inverse, norm, limits), device, limits, norm)
        self.n, self.batch, self.inverse = n, batch, inverse


class PlanCache:
    """An LRU of plans bounded by count and by the bytes their buffers hold."""

    def __init__(self, max_plans: int = 16, max_bytes: int = 1 << 30):
        self.max_plans, self.max_bytes = max_plans, max_bytes
        self.hits = self.misses = 0
        self._plans: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key, build):
        with self._lock:
            plan = self._plans.get(key)
            if plan is not None:
                self._plans.move_to_end(key)
                self.hits += 1
                return plan
            self.misses += 1
        plan = build()
        with self._lock:
            self._plans[key] = plan
            self._evict()
        return plan

    def _evict(self):
        # The most recent plan stays even when it alone exceeds max_bytes: dropping it would
        # rebuild it (allocation, pipelines) at every call of a loop over one large transform.
        keep = 1 if self.max_plans > 0 else 0
        while len(self._plans) > keep and (len(self._plans) > self.max_plans or
                                        sum(p.nbytes for p in self._plans.values()) > self.max_bytes):
            self._plans.popitem(last=False)

    def resize(self, max_plans: int | None = None, max_bytes: int | None = None) -> None:
        """Change the bounds; plans beyond them are dropped, least recently used first."""
        with self._lock:
            if max_plans is not None:
                self.max_plans = int(max_plans)
            if max_bytes is not None:
                self.max_bytes = int(max_bytes)
            self._evict()

    def stats(self) -> dict:
        with self._lock:
            return {"plans": len(self._plans), "bytes": sum(p.nbytes for p in self._plans.values()),
                    "hits": self.hits, "misses": self.misses, "max_plans": self.max_plans,
                    "max_bytes": self.max_bytes}

    def __repr__(self):
        st = self.stats()
        return (f"<PlanCache {st['plans']}/{st['max_plans']} plans, {st['bytes']}/"
                f"{st['max_bytes']} bytes, {st['hits']} hits, {st['misses']} misses>")

    def clear(self):
        with self._lock:
            self._plans.clear()

    def forget_device(self, device) -> None:
        """Drop the plans of `device` (a lost one)."""
        with self._lock:
            for key in [k for k, p in self._plans.items() if p.device is device]:
                del self._plans[key]

    def __len__(self):
        return len(self._plans)


plan_cache = PlanCache()
# Per thread: `pinned`, the device plans of the Plan executing now by cache key, used before the
# cache (which may have dropped them); `runs`, the device submissions a Plan's call made.
_in_use = threading.local()


def cached_steps_plan(shape: tuple[int, ...], steps: tuple[planner.Step, ...], backend=None,
                      precision: int = 32) -> TransformPlan:
    """The plan running `steps` (planner.plan_steps) on a C-contiguous `shape` of complex64
    (precision 32) or complex128 (64) data, from the cache."""
    device = get_device(backend)
    check_precision(device, precision)  # before planning: the error names the feature
    key = (id(device), tuple(shape), tuple(steps)) + ((precision,) if precision != 32 else ())
    plan = getattr(_in_use, "pinned", {}).get(key)
    if plan is not None:
        return plan

    def build():
        storage = Storage(precision=precision)
        limits = element_limits(device.info.limits, storage.dtype.itemsize)
        spec = planner.plan_steps(tuple(shape), list(steps), limits)
        plan = TransformPlan(spec, device, limits, steps[0].norm, storage=storage)
        plan.cache_key = key
        return plan
    return plan_cache.get(key, build)
