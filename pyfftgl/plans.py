"""Plans bound to a device: a planned transform's kernels and tables (planner.emit) with their
programs, buffers and one recorded submission. A plan allocates everything when it is built;
executing it only uploads, replays and downloads. Nothing here computes a table or a preamble."""
from __future__ import annotations

import time

import numpy as np

from . import planner, kernels
from .backends import get_device, on_device_lost, on_profile_change
from .backends.base import Device, Dispatch
from .device_plan import DevicePlan
from .limits import Limits
from .lru import LRU
from .planner import Storage


class TransformPlan(DevicePlan):
    """Complex transforms over `axes` of a C-contiguous complex64 array of `shape`, bound to one
    device: tables, work buffers and programs allocated once, every pass recorded in one
    submission. The resources a call reads and writes are bound when its submission is
    recorded (`dispatches`), so one plan runs on any buffers or images of the right size."""

    # Device calls alternate between two sets of work buffers where the device overlaps calls
    # (Device.overlaps_calls) and the set is at most this big: then a call's first pass, which
    # writes the other set, need not wait for the last pass of the call before it, which reads
    # this one. Larger transforms keep one set (their passes fill the GPU, and the memory is
    # more than the overlap is worth).
    ALTERNATE_MAX_BYTES = 64 << 20

    def __init__(self, spec: planner.TransformSpec, device: Device, limits: Limits, norm: str,
                 buffers: dict | None = None, storage: Storage = Storage(),
                 aliases: dict[str, str] | None = None, cache_key=None):
        """`buffers`: device buffers to use by name instead of allocating them (the tuner times
        many shapes of one transform on the same memory). `aliases`: work names bound to what
        a call binds under another name (TextureFFT's intermediate "w0" on the call's "out"),
        so the plan allocates nothing for them. `cache_key`: the plan cache's (cache_key())."""
        super().__init__(device, cache_key)
        self.spec, self.device, self.limits, self.norm = spec, device, limits, norm
        self.storage = storage
        dev, units = device, spec.units
        device.check_precision(storage.precision)
        emitted = planner.emit(spec, storage)  # every pass's preamble and the tables they read
        tables = emitted.tables
        self._tables = dev.buffer(tables.nbytes, tables)
        self.element_bytes = storage.element_bytes
        self._sizes = {name: units * per_unit * self.element_bytes
                       for name, per_unit in spec.buffers}
        # Work buffers now; "in" and "out" when a host call first needs them (device calls bind
        # the caller's), images the plan owns for the names the storage makes images.
        self._buffers = dict(buffers or {})
        self.aliases = dict(aliases or {})
        self.caller_bound = ("in", "out") + tuple(self.aliases)  # names every call binds
        for name, nbytes in self._sizes.items():
            fmt = storage.image_format(name)
            if name not in self._buffers and name not in self.caller_bound:
                self._buffers[name] = (dev.image(storage.width, nbytes // self.element_bytes
                                                 // storage.width, fmt)
                                       if fmt else dev.buffer(nbytes))
        self.nbytes = tables.nbytes + sum(self._sizes[n] for n in self._buffers)
        self._programs = [kernels.get_program(dev, p.kernel, defines, planner.PUSH_NAMES)
                          for p, defines in zip(spec.passes, emitted.defines)]
        # Each pass's (base, gx, gy) dispatches, fixed when the plan is built: inside the
        # device's grid limits and the work budget of one dispatch, for this plan's elements.
        self._grids = [planner.dispatch_grids(p, units, limits, self.element_bytes)
                       for p in spec.passes]
        self.dispatch_count = sum(map(len, self._grids))
        self._work_sizes = {n: b for n, b in self._sizes.items() if n not in self.caller_bound}
        self._alternates = (device.overlaps_calls and not storage.images and bool(self._work_sizes)
                            and sum(self._work_sizes.values()) <= self.ALTERNATE_MAX_BYTES)
        self._other_work: dict | None = None  # the second set, made on the first call using it
        self._second = False  # which set the last device call used
        self.last_gpu_ns: float | None = None

    def buffer(self, name: str):
        """The plan's own buffer `name` ("in", "out", "w0", ...), allocated on first use."""
        buf = self._buffers.get(name)
        if buf is None:
            buf = self._buffers[name] = self.device.buffer(self._sizes[name])
            self.nbytes += self._sizes[name]
        return buf

    def dispatches(self, resources: dict | None = None) -> list[list[Dispatch]]:
        """Each pass's dispatches, in order, binding the buffers or images in `resources` by
        name ("in", "out", "spec"; an alias binds what its target does) and the plan's own for
        the rest."""
        res = resources or {}
        out, units = [], self.spec.units
        last = len(self.spec.passes) - 1
        for i, (p, program) in enumerate(zip(self.spec.passes, self._programs)):
            names = [self.aliases.get(n, n) for n in (p.src_buf, p.dst_buf)]
            src, dst = (res.get(m) or self.buffer(m) for m in names)
            fmt_in, fmt_out = (self.storage.image_format(n) for n in (p.src_buf, p.dst_buf))
            buffers = [None if fmt_in else src, None if fmt_out else dst, self._tables]
            if "spec" in res and i == last:
                buffers.append(res["spec"])
            # An image resource is one image or a list of them (Storage.lists), one per unit.
            ins, outs = ([] if not fmt else list(r) if isinstance(r, (list, tuple)) else [r]
                         for r, fmt in ((src, fmt_in), (dst, fmt_out)))
            out.append([Dispatch(program, (gx, gy, 1), np.array(p.push(units, base), np.uint32),
                                 tuple(buffers), tuple(ins + outs), len(ins))
                        for base, gx, gy in self._grids[i]])
        return out

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

    def execute(self, x: np.ndarray, *, timed: bool = False,
                breakdown: dict | None = None) -> np.ndarray:
        """Transform x, complex64 (complex128 for a double plan) of the plan's shape; returns a
        new array of that dtype and the plan's output shape (for real steps: real samples
        viewed as complex pairs). `breakdown`: a dict that gets the wall ns of the host's copy
        in and queueing ("upload"), the wait for the GPU ("gpu") and the copy out ("download")
        added to it (bench/oneshot_profile.py)."""
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
        with self.device.current(), self.lock:
            # the upload-run-download submission, on the plan's own "in" and "out"
            host_run = self.recording((), self.flat_dispatches, "host",
                                      uploads=[self.buffer("in")],
                                      downloads=[self.buffer("out")])
            for lo in range(0, x.shape[0], spec.units):
                hi = min(x.shape[0], lo + spec.units)
                piece = out_view[lo:hi].reshape(-1).view(np.float32)
                if breakdown is not None:
                    _timed_pieces(self.device, host_run, x[lo:hi], piece, breakdown)
                    continue
                total += host_run.run([x[lo:hi]], timed=timed) or 0.0
                # straight from the mapped download into the result: one host copy out
                host_run.result(0, out=piece)
        self.last_gpu_ns = total if timed else None
        return out

    __call__ = execute

    def submission(self, resources: dict, second: bool = False):
        """The recording binding `resources` (name -> buffer or image), and the second set of
        work buffers where `second`, recorded once per set of resources among the last
        RECORDED used."""
        if second:
            with self.device.current(), self.lock:  # the device first, as everywhere
                resources = {**self._second_work_set(), **resources}
        return super().submission(resources)

    def _second_work_set(self) -> dict:
        """The other work buffers of alternating device calls, made on first use."""
        if self._other_work is None:
            self._other_work = {n: self.device.buffer(b) for n, b in self._work_sizes.items()}
            self.nbytes += sum(b.nbytes for b in self._other_work.values())
        return self._other_work

    def held_buffers(self) -> dict:
        """The buffers and images the plan holds for its passes ("in", "out", "w0", ...), by
        name; not its tables."""
        with self.lock:
            return dict(self._buffers)

    def stats(self) -> dict:
        """DevicePlan.stats(), and work_sets: the sets of work buffers device calls alternate
        between (2 once a call used the second, ALTERNATE_MAX_BYTES)."""
        return {**super().stats(), "work_sets": 1 + (self._other_work is not None)}

    def output_buffer(self):
        """A new device buffer of the plan's output size."""
        return self.device.buffer(self._sizes["out"], device_only=True)

    def device_call(self, resources: dict):
        """A function that queues this plan's call on `resources` once more, without waiting:
        from one recorded submission, or from two alternating work buffers (ALTERNATE_MAX_BYTES;
        which set goes next is only a matter of speed: the device orders calls by what they
        touch)."""
        if not self._alternates:
            return self.submission(resources).submission.replayer()
        subs = (self.submission(resources).submission.replayer(),
                self.submission(resources, second=True).submission.replayer())

        def call():
            self._second = not self._second
            subs[self._second]()
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
    """An LRU of plans bounded by count and by the bytes their buffers hold.

    The compiled programs the plans run (GL programs, Vulkan pipelines) have a bound of their
    own, kernels.program_cache, so that a program outlives its plans for a while: a transform
    planned again soon reuses them, one planned again later recompiles (from the SPIR-V disk
    cache on Vulkan). Plans of a lost device are dropped when it is lost."""

    def __init__(self, max_plans: int = 16, max_bytes: int = 1 << 30):
        # The most recent plan stays even when it alone exceeds max_bytes: dropping it would
        # rebuild it (allocation, pipelines) at every call of a loop over one large transform.
        self._plans = LRU(max_plans, max_bytes, weigh=lambda p: p.nbytes if p else 0,
                          keep=1 if max_plans > 0 else 0)

    max_plans = property(lambda self: self._plans.max_items)
    max_bytes = property(lambda self: self._plans.max_bytes)
    hits = property(lambda self: self._plans.hits)
    misses = property(lambda self: self._plans.misses)

    def get(self, key, build):
        """The plan of `key`, built by build() (outside the lock) if not held."""
        return self._plans.get_or_make(key, build)

    def resize(self, max_plans: int | None = None, max_bytes: int | None = None) -> None:
        """Change the bounds; plans beyond them are dropped, least recently used first."""
        if max_plans is not None:
            self._plans.keep = 1 if int(max_plans) > 0 else 0
        self._plans.resize(max_plans, max_bytes)

    def stats(self) -> dict:
        lru = self._plans
        return {"plans": len(lru), "bytes": lru.nbytes, "hits": lru.hits, "misses": lru.misses,
                "max_plans": lru.max_items, "max_bytes": lru.max_bytes}

    def __repr__(self):
        st = self.stats()
        return (f"<PlanCache {st['plans']}/{st['max_plans']} plans, {st['bytes']}/"
                f"{st['max_bytes']} bytes, {st['hits']} hits, {st['misses']} misses>")

    def plans(self) -> list:
        """The plans held (False for a key no plan fits), least recently used first."""
        return self._plans.values()

    def clear(self):
        self._plans.clear()

    def forget_device(self, device) -> None:
        """Drop the plans of `device` (a lost one); a key's first item is its device."""
        self._plans.drop_where(lambda key, plan: key[0] is device
                               or getattr(plan, "device", None) is device)

    def __len__(self):
        return len(self._plans)


plan_cache = PlanCache()
on_device_lost(plan_cache.forget_device)
on_device_lost(kernels.program_cache.forget_device)
on_profile_change(plan_cache.clear)  # plans made under the old limits


def cache_key(device: Device, shape: tuple[int, ...], steps: tuple, precision: int = 32) -> tuple:
    """The plan cache's key of a transform: the device object itself (an id may be reused once
    the device is gone), the upload shape, the steps and the precision."""
    return (device, tuple(shape), tuple(steps), precision)


def _timed_pieces(device, host_run, x, piece, breakdown: dict) -> None:
    """One chunk's call as Plan.execute makes it, each part's wall ns added to `breakdown`."""
    t0 = time.perf_counter_ns()
    host_run.run([x], wait=False)
    t1 = time.perf_counter_ns()
    device.finish()
    t2 = time.perf_counter_ns()
    host_run.result(0, out=piece)
    t3 = time.perf_counter_ns()
    for key, ns in (("upload", t1 - t0), ("gpu", t2 - t1), ("download", t3 - t2)):
        breakdown[key] = breakdown.get(key, 0) + ns


def cached_steps_plan(shape: tuple[int, ...], steps: tuple[planner.Step, ...], backend=None,
                      precision: int = 32, pinned: dict | None = None) -> TransformPlan:
    """The plan running `steps` (planner.plan_steps) on a C-contiguous `shape` of complex64
    (precision 32) or complex128 (64) data: from `pinned` (cache_key -> plan, a Plan's own,
    whatever the cache has dropped since), else from the cache."""
    device = get_device(backend)
    device.check_precision(precision)  # before planning: the error names the feature
    key = cache_key(device, shape, steps, precision)
    plan = (pinned or {}).get(key)
    if plan is not None:
        return plan

    def build():
        storage = Storage(precision=precision)
        limits = planner.element_limits(device.info.limits, storage.dtype.itemsize)
        spec = planner.plan_steps(tuple(shape), list(steps), limits)
        return TransformPlan(spec, device, limits, steps[0].norm, storage=storage,
                             cache_key=key)
    return plan_cache.get(key, build)
