"""The GL and WebGPU backends' memory pool: device buffers are ranges of a few large buffers.

A GL buffer object per small array costs the driver an allocation each (and some drivers a
page of memory each), so buffers below LARGE are carved out of blocks, as the Vulkan backend's
pool (tools/kp_memory_pool.hpp) and cupy's MemoryPool do: requests are rounded up to size
classes and placed best-fit in a block's free ranges, freed ranges merge with their neighbours,
blocks double from FIRST_BLOCK to LARGEST_BLOCK, and emptied blocks stay held for reuse until
trim(). Every offset is a multiple of the granule, itself a multiple of the driver's
GL_SHADER_STORAGE_BUFFER_OFFSET_ALIGNMENT, so any range binds as a storage buffer.

This module keeps the books only; GLStorage makes and deletes the blocks' GL buffers (with the
context current) and the GLBuffers of the ranges, WgpuStorage (webgpu_storage.py) the wgpu
buffers, with blocks of their own sizes.
"""
from __future__ import annotations

import bisect

GRANULE = 256  # offsets and sizes: multiples (raised to the driver's offset alignment)
FIRST_BLOCK = 1 << 20
LARGEST_BLOCK = 64 << 20
LARGE = 16 << 20  # buffers this large keep a GL buffer of their own


class Block:
    """One buffer of the pool and its free ranges (offset -> size, and sorted by size)."""

    def __init__(self, buf, size: int, release):
        self.buf, self.size, self.release = buf, size, release
        self.live = 0  # ranges in use
        self.free = {0: size}  # offset -> size of each free range
        self.offsets = [0]  # the free ranges' offsets, sorted
        self.by_size = [(size, 0)]  # (size, offset) of each free range, sorted

    def _take(self, offset: int) -> int:
        size = self.free.pop(offset)
        del self.offsets[bisect.bisect_left(self.offsets, offset)]
        del self.by_size[bisect.bisect_left(self.by_size, (size, offset))]
        return size

    def _put(self, offset: int, size: int) -> None:
        self.free[offset] = size
        bisect.insort(self.offsets, offset)
        bisect.insort(self.by_size, (size, offset))

    def place(self, size: int) -> int | None:
        """The offset of `size` bytes in the smallest free range that holds them, or None."""
        i = bisect.bisect_left(self.by_size, (size, -1))
        if i == len(self.by_size):
            return None
        length, offset = self.by_size[i]
        self._take(offset)
        if length > size:
            self._put(offset + size, length - size)
        self.live += 1
        return offset

    def give_back(self, offset: int, size: int) -> None:
        """Free a range, merged with the free ranges either side of it."""
        self.live -= 1
        i = bisect.bisect_left(self.offsets, offset)
        if i and self.offsets[i - 1] + self.free[self.offsets[i - 1]] == offset:
            before = self.offsets[i - 1]
            size += self._take(before)
            offset = before
            i -= 1
        if i < len(self.offsets) and offset + size == self.offsets[i]:
            size += self._take(self.offsets[i])
        self._put(offset, size)


class Pool:
    """The books of one device's pool. `make_block(size)` -> (buffer, release) allocates a
    block (MemoryError where the driver cannot); the granule is GRANULE raised to a multiple of
    the driver's offset alignment `align`; blocks double from `first_block` to `largest_block`."""

    def __init__(self, make_block, align: int = 1, first_block: int = FIRST_BLOCK,
                 largest_block: int = LARGEST_BLOCK):
        align = max(1, align)
        self.make_block, self.granule = make_block, -(-GRANULE // align) * align
        self.first_block, self.largest_block = first_block, largest_block
        self.blocks: list[Block] = []  # oldest first: old blocks fill before new ones
        self.used = 0  # bytes of the ranges in use (their size classes)
        self.ranges = 0  # ranges in use
        self.requested = 0  # bytes the ranges in use were asked for

    def size_class(self, n: int) -> int:
        """Multiples of the granule to 64 KiB, then quarter steps between powers of two (at
        most a quarter wasted), so that a freed range fits its size's next use."""
        n = max(n, 1)
        step = self.granule
        if n > 64 << 10:
            step = max(step, (1 << (n.bit_length() - 1)) // 4)
        return -(-n // step) * step

    def allocate(self, nbytes: int) -> tuple[Block, int, int]:
        """(the block, the offset, the size class) of a new range of `nbytes`."""
        size = self.size_class(nbytes)
        for block in self.blocks:
            offset = block.place(size)
            if offset is not None:
                break
        else:
            grown = self.first_block << len(self.blocks)
            block_size = max(size, min(grown, self.largest_block))
            block = Block(*self._new_block(block_size, size))
            self.blocks.append(block)
            offset = block.place(size)
        self.used += size
        self.ranges += 1
        self.requested += nbytes
        return block, offset, size

    def _new_block(self, block_size: int, size: int) -> tuple:
        """(buffer, size, release) of a new block; where the driver has no memory for it,
        the emptied blocks are freed, and then a block of just `size` is tried."""
        try:
            buf, release = self.make_block(block_size)
        except MemoryError:
            self.trim()
            block_size = size
            buf, release = self.make_block(block_size)
        return buf, block_size, release

    def free(self, block: Block, offset: int, size: int, nbytes: int) -> None:
        block.give_back(offset, size)
        self.used -= size
        self.ranges -= 1
        self.requested -= nbytes

    def held(self) -> int:
        return sum(b.size for b in self.blocks)

    def trim(self) -> int:
        """Delete the blocks no range uses; the bytes freed."""
        freed = 0
        for block in [b for b in self.blocks if not b.live]:
            self.blocks.remove(block)
            block.release()
            freed += block.size
        return freed
