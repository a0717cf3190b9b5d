"""The device memory pool: where device arrays', plans' and staging buffers' memory comes from.

Vulkan: kp allocates every buffer from a pool of large device allocations per memory type
(tools/kp_patch.py, 13), binding each buffer at an offset in one, as cupy's MemoryPool and VMA
do: sizes are rounded up to size classes, freed ranges go back to their block for reuse, blocks
grow as they are needed, and buffers of 16 MiB or more keep an allocation of their own. The pool
never makes more allocations than the device's `maxMemoryAllocationCount` (4096 on Windows
drivers; the environment variable PYFFTGL_VK_MAX_ALLOCATIONS, read when the device opens, lowers
it), and raises MemoryError naming that limit only when every allocation is in use and none has
room. GL: buffers below 16 MiB are ranges of a few large GL buffers in the same way
(backends/buffer_pool.py), larger ones GL buffers of their own; GL has no allocation limit (None).
WebGPU: buffers below 64 MiB are ranges of 256 MiB wgpu buffers, by the same books
(backends/webgpu_storage.py); wgpu's own allocator sets no limit here either (None).

One pool per device: ``memory_pool()`` is the default device's (the backend selection's), and
``memory_pool("vulkan")`` or ``memory_pool(device)`` another's. Memory freed by dropped arrays
and plans stays held for reuse until ``free_all_blocks()`` gives the driver back every block no
buffer uses; closing the device or losing it releases everything.
"""
from __future__ import annotations

from .backends import get_device


class MemoryPool:
    """A device's memory pool, as cupy's MemoryPool reports and trims one."""

    def __init__(self, device):
        self.device = device

    def stats(self) -> dict:
        """{"used_bytes", "held_bytes", "blocks", "allocations", "limit"}: bytes live buffers
        use; bytes allocated from the driver (used, or free and kept); the pool's shared
        blocks; driver allocations in all (blocks and buffers of their own); the most the pool
        makes (None without a limit)."""
        return self.device.memory_stats()

    def used_bytes(self) -> int:
        """Bytes that live buffers use (rounded up to their size classes)."""
        return self.stats()["used_bytes"]

    def total_bytes(self) -> int:
        """Bytes allocated from the driver: used, or free and held for reuse."""
        return self.stats()["held_bytes"]

    def free_bytes(self) -> int:
        """Bytes held for reuse that no buffer uses."""
        s = self.stats()
        return s["held_bytes"] - s["used_bytes"]

    def free_all_blocks(self) -> int:
        """Give the driver back every block no live buffer uses (and the staging buffers kept
        for reuse); the bytes freed. Waits for the device's queued work first."""
        return self.device.trim_memory()

    trim = free_all_blocks

    def __repr__(self) -> str:
        s = self.stats()
        return (f"<pyfftgl.MemoryPool {self.device.info.api}:{self.device.info.name}: "
                f"{s['used_bytes']} bytes used, {s['held_bytes']} held in {s['allocations']} "
                f"allocation(s) of at most {s['limit']}>")


def memory_pool(backend=None) -> MemoryPool:
    """The memory pool of a device: `backend` as the transforms take it ("vulkan", "gl",
    "auto", a Device, or None for the default device)."""
    return MemoryPool(get_device(backend))
