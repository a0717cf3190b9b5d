"""Host copies into and out of mapped staging memory, split across a few threads where they are
large: one core's memcpy is what bounds a numpy-in/numpy-out call (the GPU's own copies over
PCIe run several times faster), and numpy releases the GIL while it copies.

The Vulkan backend's transfers copy through `copy(dst, src)`. GL's do not: NVIDIA's GL
driver takes a slower path for every call once the process has started another thread
(docs/performance-log.md), which a render loop would pay on every frame; a process that runs
GL render loops next to Vulkan's numpy calls can keep every copy on the caller's thread with
PYFFTGL_COPY_THREADS=1 (read when the first large copy is made).
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

PARALLEL_BYTES = 4 << 20  # below this, handing chunks to threads costs more than it saves
CHUNK_BYTES = 2 << 20  # each thread copies at least this much
MAX_THREADS = 4  # the copies saturate the memory bus beyond a few cores

_executor: ThreadPoolExecutor | None = None
_lock = threading.Lock()


def threads() -> int:
    """Threads a large copy is split across, the caller's included (PYFFTGL_COPY_THREADS, a
    positive count, caps them)."""
    cap = os.environ.get("PYFFTGL_COPY_THREADS", "")
    wanted = int(cap) if cap.isdigit() and int(cap) > 0 else MAX_THREADS
    return max(1, min(wanted, os.cpu_count() or 1))


def _pool() -> ThreadPoolExecutor:
    global _executor
    with _lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(threads() - 1, thread_name_prefix="pyfftgl-copy")
        return _executor


def _forget_pool() -> None:
    """A forked child has none of the parent's threads: it makes its own pool on first use."""
    global _executor, _lock
    _executor, _lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def copy(dst: np.ndarray, src: np.ndarray) -> None:
    """np.copyto(dst, src) for two 1-D contiguous arrays of one dtype and size, in chunks on
    several threads where the copy is large."""
    parts = min(threads(), dst.nbytes // CHUNK_BYTES) if dst.nbytes >= PARALLEL_BYTES else 1
    if parts < 2:
        np.copyto(dst, src)
        return
    step = -(-dst.size // parts)
    pending = [_pool().submit(np.copyto, dst[i:i + step], src[i:i + step])
               for i in range(step, dst.size, step)]
    np.copyto(dst[:step], src[:step])
    for f in pending:
        f.result()
