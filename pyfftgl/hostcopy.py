"""Host copies into and out of mapped staging memory, split across a few threads where they are
large: one core's memcpy is what bounds a numpy-in/numpy-out call (the GPU's own copies over
PCIe run several times faster), and numpy releases the GIL while it copies.

Both backends' transfers copy through `copy(dst, src)`. Its worker threads exit once idle for
IDLE_SECONDS: NVIDIA's GL driver takes a slower path for every call while the process has other
live threads (docs/performance-log.md), which a render loop would pay on every frame.
PYFFTGL_COPY_THREADS=1 keeps every copy on the caller's thread.
"""
from __future__ import annotations

import os
import queue
import threading
from concurrent.futures import Future

import numpy as np

PARALLEL_BYTES = 2 << 20  # below this, handing chunks to threads costs more than it saves
CHUNK_BYTES = 1 << 20  # each thread copies at least this much
MAX_THREADS = 4  # the copies saturate the memory bus beyond a few cores
IDLE_SECONDS = 0.1  # a worker with no copy for this long exits (restarting one costs tens of us)
PIECE_BYTES = 1 << 20  # a pipelined transfer's pieces: at least this large, ...
MAX_PIECES = 8  # ... and at most this many (each costs a GL copy, a flush and a thread's wake-up)
_CPUS = os.cpu_count() or 1  # read once: each os.cpu_count() reads sysfs (6 us a call here)


class _Workers:
    """Daemon threads taking jobs from one queue, started when a copy needs them and gone
    when idle (a forked child starts with none: its parent's threads are not in it)."""

    def __init__(self):
        self.jobs = queue.SimpleQueue()
        self.lock = threading.Lock()
        self.alive = 0

    def submit(self, workers: int, fn, *args) -> Future:
        """fn(*args) on a worker, one started where fewer than `workers` are alive."""
        done = Future()
        with self.lock:  # a worker decides to exit under this lock, seeing no job queued
            self.jobs.put((done, fn, args))
            if self.alive < workers:
                self.alive += 1
                threading.Thread(target=self._work, name="pyfftgl-copy", daemon=True).start()
        return done

    def _work(self) -> None:
        while True:
            try:
                done, fn, args = self.jobs.get(timeout=IDLE_SECONDS)
            except queue.Empty:
                with self.lock:
                    if self.jobs.empty():
                        self.alive -= 1
                        return
                continue
            try:
                done.set_result(fn(*args))
            except BaseException as e:  # handed to the caller, which waits on it
                done.set_exception(e)


_workers = _Workers()


def threads() -> int:
    """Threads a large copy is split across, the caller's included (PYFFTGL_COPY_THREADS, a
    positive count, caps them)."""
    cap = os.environ.get("PYFFTGL_COPY_THREADS", "")
    wanted = int(cap) if cap.isdigit() and int(cap) > 0 else MAX_THREADS
    return max(1, min(wanted, _CPUS))


def _forget_workers() -> None:
    global _workers
    _workers = _Workers()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_workers)


def copy(dst: np.ndarray, src: np.ndarray) -> None:
    """np.copyto(dst, src) for two 1-D contiguous arrays of one dtype and size, in chunks on
    several threads where the copy is large."""
    parts = min(threads(), dst.nbytes // CHUNK_BYTES) if dst.nbytes >= PARALLEL_BYTES else 1
    if parts < 2:
        np.copyto(dst, src)
        return
    step = -(-dst.size // parts)
    pending = [_workers.submit(parts - 1, np.copyto, dst[i:i + step], src[i:i + step])
               for i in range(step, dst.size, step)]
    np.copyto(dst[:step], src[:step])
    for f in pending:
        f.result()


def pieces(nbytes: int) -> list[tuple[int, int]]:
    """A transfer of `nbytes` as the (start, stop) byte ranges that `pipelined` copies one by
    one: one range below two PIECE_BYTES, else equal ranges of whole pages."""
    count = max(1, min(MAX_PIECES, nbytes // PIECE_BYTES))
    per_piece = -(-nbytes // count)
    step = max(4096, -(-per_piece // 4096) * 4096)
    return [(a, min(a + step, nbytes)) for a in range(0, nbytes, step)] or [(0, 0)]


def pipelined(dst: np.ndarray, src: np.ndarray, bounds, before=None, after=None) -> None:
    """np.copyto(dst, src) of two 1-D uint8 arrays, piece by piece over `bounds` (pieces):
    before(k) runs on the caller's thread before piece k is copied (a wait for the GPU copy
    that fills it), after(k) on it once pieces 0..k are copied, in order (queueing the GPU copy
    that drains it). The pieces go to the worker threads, so the caller queues and waits while
    later pieces are still being copied: the GPU's copies then overlap the host's, as a
    pageable copy of CUDA's pipelines its staging."""
    workers = threads()
    if workers < 2 or len(bounds) < 2:
        for k, (a, b) in enumerate(bounds):
            if before is not None:
                before(k)
            copy(dst[a:b], src[a:b])
            if after is not None:
                after(k)
        return
    futures, done = [], 0
    try:
        for k, (a, b) in enumerate(bounds):
            if before is not None:
                before(k)
            futures.append(_workers.submit(workers, np.copyto, dst[a:b], src[a:b]))
            while after is not None and done < k and futures[done].done():
                futures[done].result()
                after(done)
                done += 1
        for k in range(done, len(futures)):
            futures[k].result()
            if after is not None:
                after(k)
    finally:  # no worker may still write into dst (or read src) once this returns or raises
        for f in futures:
            f.exception()
