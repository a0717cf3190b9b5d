"""The WebGPU backend's device buffers: ranges of a few large wgpu buffers (buffer_pool's books).

Blocks spare the driver an allocation per array, and they decide where buffers land: on NVIDIA's
Vulkan driver our kernels ran up to 1.5x slower on wgpu's own 32 MiB buffers than on the same
bytes inside a 256 MiB one, and as slow in 32 MiB blocks of a pool grown from small ones
(docs/performance-log.md). So every block is BLOCK (or the device's largest buffer), as
VMA's default blocks are, and only buffers of LARGE or more get a wgpu buffer of their own.
"""
from __future__ import annotations

import weakref

from .base import Buffer
from .buffer_pool import Pool

BLOCK = 256 << 20
LARGE = 64 << 20  # buffers this large keep a wgpu buffer of their own


def round4(n: int) -> int:
    return max(4, -(-n // 4) * 4)


class WgpuBuffer(Buffer):
    """`nbytes` at `offset` of the wgpu buffer `buf` (a pool block's range, or its own)."""

    def __init__(self, buf, nbytes: int, offset: int = 0):
        self.buf, self.nbytes, self.offset = buf, nbytes, offset

    def binding(self) -> dict:
        """The buffer binding of a bind group entry."""
        return {"buffer": self.buf, "offset": self.offset, "size": round4(self.nbytes)}


class WgpuStorage:
    """The storage buffers of `device` (a WebGPUDevice): ranges freed by the garbage collector
    wait in `_freed` until the device next allocates, reports or trims under its lock, so the
    books never change in the middle of an allocation."""

    def __init__(self, device):
        self.device = device
        limits = device.dev.limits
        block = min(BLOCK, limits["max-buffer-size"])
        self.pool = Pool(self._block, limits["min-storage-buffer-offset-alignment"], block, block)
        self.large = min(LARGE, block)
        self._freed: list[tuple] = []

    def _create(self, nbytes: int):
        wgpu = self.device.wgpu
        usage = wgpu.BufferUsage
        try:
            return self.device.dev.create_buffer(size=round4(nbytes), usage=usage.STORAGE
                                                 | usage.COPY_SRC | usage.COPY_DST)
        except wgpu.GPUError as e:  # over the device's buffer size, or out of memory
            raise MemoryError(str(e)) from e

    def _block(self, nbytes: int) -> tuple:
        buf = self._create(nbytes)

        def release():  # the calls held back may bind it: submitted first, wgpu then waits
            self.device.submit()
            buf.destroy()
        return buf, release

    def buffer(self, nbytes: int) -> WgpuBuffer:
        """A buffer of `nbytes`: a range of a block below LARGE, else a wgpu buffer of its own;
        counted live on the device until collected."""
        self.drain()
        counted = self.device.count_live("buffers", nbytes)
        if nbytes >= self.large:
            out = WgpuBuffer(self._create(nbytes), nbytes)
            weakref.finalize(out, counted).atexit = False
            return out
        block, offset, size = self.pool.allocate(nbytes)
        out = WgpuBuffer(block.buf, nbytes, offset)
        freed = self._freed

        def release():  # any thread, at any allocation: list.append is atomic
            counted()
            freed.append((block, offset, size, nbytes))
        weakref.finalize(out, release).atexit = False
        return out

    def drain(self) -> None:
        """Give the ranges of collected buffers back to their blocks."""
        while self._freed:
            self.pool.free(*self._freed.pop())

    def stats(self, live: dict) -> dict:
        """Device.memory_stats: the pool's ranges count their size classes, every other buffer
        its bytes."""
        self.drain()
        pool = self.pool
        own_bytes = live["bytes"] - pool.requested
        return {"used_bytes": own_bytes + pool.used, "held_bytes": own_bytes + pool.held(),
                "blocks": len(pool.blocks),
                "allocations": len(pool.blocks) + live["buffers"] - pool.ranges, "limit": None}

    def trim(self) -> int:
        """Destroy the blocks no live buffer uses (the caller has waited for the queue)."""
        self.drain()
        return self.pool.trim()
