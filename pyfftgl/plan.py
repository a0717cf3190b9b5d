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



def twiddle_table(n: int) -> np.ndarray:
    """exp(-2 pi i m / n) for m < n, from float64 and rounded once to complex64."""
    m = np.arange(n, dtype=np.float64)
    return np.exp(-2j * np.pi * m / n).astype(np.complex64)


def bluestein_chirp(n: int, inverse: bool) -> np.ndarray:
    """w[j] = exp(-+i pi j^2 / n), j < n, with j^2 reduced mod 2n exactly in integers.

    Reducing first keeps the float64 angle below 2 pi; a float32 chirp evaluated from j^2 / n
    directly is wrong by ~1e-2 at n = 1e5.
    """
    j = np.arange(n, dtype=np.int64)
    r = (j * j) % (2 * n)  # exact: j^2 < 2^63 for every n this library plans
    w = np.exp((1j if inverse else -1j) * np.pi * r.astype(np.float64) / n)
    return w.astype(np.complex64)


def bluestein_kernel(n: int, m: int, inverse: bool) -> np.ndarray:
    """The spectrum of the convolution kernel conj(w[j]) (j in -(n-1)..n-1, wrapped mod m)."""
    j = np.arange(n, dtype=np.int64)
    w = np.exp((1j if inverse else -1j) * np.pi * ((j * j) % (2 * n)).astype(np.float64) / n)
    c = np.zeros(m, np.complex128)
    c[:n] = np.conj(w)
    c[m - n + 1:] = np.conj(w[1:][::-1])
    return np.fft.fft(c).astype(np.complex64)


def build_table(key: tuple) -> np.ndarray:
    """The complex64 contents of a table named by the planner (StockhamPass.tables())."""
    kind = key[0]
    if kind == "twiddle":
        return twiddle_table(key[1])
    if kind in ("fourstep_lo", "fourstep_hi"):
        n, split = key[1], key[2]
        m = np.arange(split if kind == "fourstep_lo" else -(-n // split), dtype=np.float64)
        step = 1 if kind == "fourstep_lo" else split
        return np.exp(-2j * np.pi * (m * step % n) / n).astype(np.complex64)
    if kind == "chirp":
        return bluestein_chirp(key[1], key[2])
    if kind == "bluestein_kernel":
        return bluestein_kernel(key[1], key[2], key[3])
    raise KeyError(key)


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
        # Every table the passes read, concatenated into one buffer (binding 2).
        offsets, parts, at = {}, [], 0
        for key in spec.tables():
            t = build_table(key)
            offsets[key], at = at, at + t.size
            parts.append(t)
        tables = np.concatenate(parts) if parts else np.zeros(1, np.complex64)
        self._tables = dev.buffer(tables.nbytes, tables)
        self._buffers = {name: dev.buffer(lines * per_line * planner.COMPLEX64_BYTES)
                         for name, per_line in spec.buffers}
        self.nbytes = tables.nbytes + sum(b.nbytes for b in self._buffers.values())
        dispatches = []
        for p in spec.passes:
            program = shaders.get_program(dev, "stockham.comp", p.defines(offsets), planner.PUSH_NAMES)
            bound = [self._buffers[p.src_buf], self._buffers[p.dst_buf], self._tables]
            for base, gx, gy in planner.split_groups(p.groups(lines), self.limits.max_group_count):
                dispatches.append(Dispatch(dev.kernel(program, bound, (gx, gy, 1)),
                                           np.array(p.push(lines, base), np.uint32)))
        self.dispatch_count = len(dispatches)
        self._submission = dev.record(dispatches, uploads=[self._buffers["in"]],
                                      downloads=[self._buffers["out"]])
        self._lock = threading.Lock()
        self.last_gpu_ns: float | None = None

    @property
    def passes(self):
        return self.spec.passes

    def __repr__(self):
        s = self.spec
        parts = ", ".join(f"{p.n}{'x' if p.line_dims != (1, 1) else ''}{list(p.radices)}"
                          for p in s.passes)
        conv = f" (convolution length {s.conv_n})" if s.conv_n else ""
        return (f"<FFTPlan n={self.n} batch={self.batch} {'inverse' if self.inverse else 'forward'} "
                f"norm={self.norm} on {self.device.info.api}:{self.device.info.name}: "
                f"{s.algorithm}{conv}, {len(s.passes)} pass{'es' if len(s.passes) > 1 else ''} "
                f"[{parts}], {s.chunks} submission(s), {self.nbytes} bytes>")

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
