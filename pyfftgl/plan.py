"""Plans bound to a device: the planner's passes with their programs, buffers and one recorded
submission. A plan allocates everything when it is built; executing it only uploads, replays and
downloads."""
from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

from . import planner, shaders
from .backends import get_device
from .backends.base import Device, Dispatch, Limits

PUSH_NAMES = ("lines_total", "group_base")


def twiddle_table(n: int) -> np.ndarray:
    """exp(-2 pi i m / n) for m < n, from float64 and rounded once to complex64."""
    m = np.arange(n, dtype=np.float64)
    return np.exp(-2j * np.pi * m / n).astype(np.complex64)


class FFTPlan:
    """A batched 1D complex-to-complex transform of `batch` lines of length n on one device."""

    def __init__(self, n: int, batch: int, inverse: bool, norm: str = "backward",
                 backend=None, limits: Limits | None = None):
        """`limits` plans as if the device were smaller (never larger) than it is."""
        self.device: Device = get_device(backend)
        self.limits = planner.tighter(self.device.info.limits, limits)
        self.spec = planner.plan_fft(n, batch, inverse, norm, self.limits)
        self.n, self.batch, self.inverse, self.norm = n, batch, inverse, norm
        dev, spec = self.device, self.spec
        lines = spec.chunk_lines
        self.nbytes = 2 * lines * n * planner.COMPLEX64_BYTES
        self._src = dev.buffer(lines * n * planner.COMPLEX64_BYTES)
        self._dst = dev.buffer(lines * n * planner.COMPLEX64_BYTES)
        self._tw = dev.buffer(max(1, spec.twiddle_n) * planner.COMPLEX64_BYTES,
                              twiddle_table(spec.twiddle_n) if spec.twiddle_n else None)
        (p,) = spec.passes
        program = shaders.get_program(dev, "stockham.comp", p.defines(), PUSH_NAMES)
        dispatches = [
            Dispatch(dev.kernel(program, [self._src, self._dst, self._tw], (gx, gy, 1)),
                     np.array([lines, base], np.uint32))
            for base, gx, gy in planner.split_groups(p.groups(lines), self.limits.max_group_count)
        ]
        self.dispatch_count = len(dispatches)
        self._submission = dev.record(dispatches, uploads=[self._src], downloads=[self._dst])
        self._lock = threading.Lock()
        self.last_gpu_ns: float | None = None

    @property
    def passes(self):
        return self.spec.passes

    def __repr__(self):
        (p,) = self.spec.passes
        return (f"<FFTPlan n={self.n} batch={self.batch} {'inverse' if self.inverse else 'forward'} "
                f"norm={self.norm} on {self.device.info.api}:{self.device.info.name}: "
                f"{len(self.spec.passes)} pass, radices {p.radices}, {p.threads}x{p.lines} "
                f"invocations, {self.spec.chunks} submission(s), {self.nbytes} bytes>")

    def execute(self, x: np.ndarray, *, timed: bool = False) -> np.ndarray:
        """Transform x, complex64 of shape (batch, n); returns a new array."""
        if x.dtype != np.complex64 or x.shape != (self.batch, self.n):
            raise ValueError(f"plan expects complex64 of shape {(self.batch, self.n)}, "
                             f"got {x.dtype} {x.shape}")
        x = np.ascontiguousarray(x)
        out = np.empty_like(x)
        lines = self.spec.chunk_lines
        total = 0.0
        with self._lock:  # the plan's buffers are shared by every call
            for lo in range(0, self.batch, lines):
                hi = min(self.batch, lo + lines)
                gpu = self._submission.run([x[lo:hi]], timed=timed)
                total += gpu or 0.0
                res = self._submission.result(0)
                out[lo:hi] = res[: (hi - lo) * self.n * 2].view(np.complex64).reshape(hi - lo, self.n)
        self.last_gpu_ns = total if timed else None
        return out

    __call__ = execute


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
        while len(self._plans) > 1 and (len(self._plans) > self.max_plans or
                                        sum(p.nbytes for p in self._plans.values()) > self.max_bytes):
            self._plans.popitem(last=False)

    def clear(self):
        with self._lock:
            self._plans.clear()

    def __len__(self):
        return len(self._plans)


plan_cache = PlanCache()


def cached_fft_plan(n: int, batch: int, inverse: bool, norm: str, backend=None) -> FFTPlan:
    device = get_device(backend)
    key = (id(device), n, batch, inverse, norm)
    return plan_cache.get(key, lambda: FFTPlan(n, batch, inverse, norm, device))
