"""The Vulkan backend's host transfers and the barriers it orders work with: the device's one kp
sequence for writes and reads, and the staging tensors that device-only buffers move through.

kp's Manager keeps a record of every tensor and sequence it ever made (a few hundred bytes each,
for the process's life), so host transfers reuse one sequence and keep small staging tensors, by
size, in an LRU (pyfftgl.lru) instead of making new ones per call.
"""
from __future__ import annotations

import os

import numpy as np

from ..hostcopy import copy
from ..lru import LRU

# Vulkan's flag bits (VkAccessFlagBits, VkPipelineStageFlagBits) for kp.OpMemoryBarrier.
SHADER_WRITE = 0x40
SHADER_RW = 0x20 | SHADER_WRITE  # SHADER_READ | SHADER_WRITE
TRANSFER_READ, TRANSFER_WRITE = 0x800, 0x1000
TRANSFER_RW = TRANSFER_READ | TRANSFER_WRITE
COMPUTE, TRANSFER = 0x800, 0x1000  # COMPUTE_SHADER, TRANSFER stages


def barrier(src_access: int, dst_access: int, src_stage: int, dst_stage: int):
    """One global memory barrier (tools/kp_patch.py, 10: kp records one vkCmdPipelineBarrier
    for an empty tensor list, where it records one per tensor otherwise): writes by `src_access`
    at `src_stage` made visible to `dst_access` at `dst_stage`, in every buffer."""
    from .. import _kp as kp
    return kp.OpMemoryBarrier([], src_access, dst_access, src_stage, dst_stage)


def between(group):
    """The barrier before a group of dispatches (hazard_groups) that follows another of its
    submission: one global compute -> compute barrier. With PYFFTGL_VK_BARRIERS=wgpu, and
    PYFFTGL_VK_QUEUE=graphics (the stages need a queue that draws), the shape wgpu records
    instead: a buffer barrier per storage buffer the group's dispatches bind, over the vertex,
    fragment and compute stages, to time what WebGPU's passes pay for theirs
    (docs/devices.md)."""
    if os.environ.get("PYFFTGL_VK_BARRIERS") != "wgpu":
        return barrier(SHADER_WRITE, SHADER_RW, COMPUTE, COMPUTE)
    from .. import _kp as kp
    stages = 0x8 | 0x80 | COMPUTE  # VERTEX_SHADER | FRAGMENT_SHADER | COMPUTE_SHADER
    bound = {id(b): b for d in group for b in d.buffers if b is not None}
    return kp.OpMemoryBarrier([b.tensor for b in bound.values()], SHADER_RW, SHADER_RW, stages,
                              stages)


def hazard_groups(dispatches) -> list[tuple[list, frozenset, frozenset]]:
    """A submission's dispatches as (dispatches, ids read, ids written) groups that need no
    barrier among them: a dispatch joins the group before it unless it reads a buffer the group
    writes, or writes one the group reads or writes (Dispatch.access); else a barrier (between)
    starts a new group. Ids are the key: two buffers may be ranges of one pooled allocation,
    but ranges never overlap, and the barrier is a global one."""
    groups = []  # [dispatches, reads, writes]
    for d in dispatches:
        reads, writes = d.access()
        last = groups[-1] if groups else None
        if last and not (reads & last[2] or writes & (last[1] | last[2])):
            last[0].append(d)
            last[1] |= reads
            last[2] |= writes
        else:
            groups.append([[d], set(reads), set(writes)])
    return [(ds, frozenset(r), frozenset(w)) for ds, r, w in groups]


def copies(pairs, after_transfer: bool) -> list:
    """kp copies of (source, destination) tensor pairs, each after a transfer -> transfer
    barrier where a transfer before it may have written what it reads or writes (copies in
    one command buffer are not ordered: Khronos' synchronization validation reports a
    read-after-write hazard)."""
    from .. import _kp as kp
    ops = []
    for i, (a, b) in enumerate(pairs):
        if i or after_transfer:
            ops.append(barrier(TRANSFER_WRITE, TRANSFER_RW, TRANSFER, TRANSFER))
        ops.append(kp.OpTensorCopy([a, b]))
    return ops


class VulkanTransfers:
    """Writes and reads of one VulkanDevice's buffers, the device's lock held and its queued work
    waited for by the caller; `touched()` is called before each transfer (the device's next call
    then takes its leading barrier: VulkanDevice.touched_all)."""

    STAGING_KEPT_BYTES = 1 << 22  # staging tensors kept for reuse, least recently used out

    def __init__(self, manager, touched):
        self._mgr, self._touched = manager, touched
        self._sequence = None
        self.staging = LRU(64, self.STAGING_KEPT_BYTES, weigh=lambda tensor: len(tensor) * 4)

    def run(self, *ops) -> None:
        """Record `ops` anew into the device's one transfer sequence and run it to the end."""
        if self._sequence is None:
            self._sequence = self._mgr.sequence()
        seq = self._sequence
        self._touched()
        seq.clear()
        for op in ops:
            seq.record(op)
        seq.eval()

    def release(self) -> None:
        """Drop the staging tensors kept for reuse, and the last transfer's ops (which hold
        theirs): their memory goes back to the device's pool."""
        self.staging.clear()
        if self._sequence is not None:
            self._sequence.clear()

    def _staging_for(self, buf):
        n = len(buf.tensor)
        tensor = self.staging.pop(n)
        return tensor if tensor is not None else self._mgr.tensor_t(np.zeros(n, np.float32))

    def _keep(self, tensor) -> None:
        if len(tensor) * 4 <= self.STAGING_KEPT_BYTES:
            self.staging.put(len(tensor), tensor)

    def write(self, buf, data: np.ndarray, sync: bool = True) -> None:
        """Copy `data` into the start of `buf` (a VkBuffer); sync=False: into its kp staging
        copy only, for a submission's own upload op to move."""
        from .. import _kp as kp
        flat = np.ascontiguousarray(data).view(np.float32).ravel()
        # The write waits for every earlier access to the buffer, and what comes after it (any
        # submission, a barrier's second scope) for the write.
        first = barrier(SHADER_WRITE | TRANSFER_WRITE, TRANSFER_RW, COMPUTE | TRANSFER, TRANSFER)
        last = barrier(TRANSFER_WRITE, SHADER_RW | TRANSFER_RW, TRANSFER, COMPUTE | TRANSFER)
        if buf.device_only:  # through a staging tensor, copied on in the same submission
            tmp = self._staging_for(buf)
            copy(tmp.data()[: flat.size], flat)
            self.run(first, kp.OpTensorSyncDevice([tmp]),
                     *copies([(tmp, buf.tensor)], after_transfer=True), last)
            self._keep(tmp)
            return
        copy(buf.tensor.data()[: flat.size], flat)
        if sync:
            self.run(first, kp.OpTensorSyncDevice([buf.tensor]), last)

    def read(self, buf, count: int) -> np.ndarray:
        """The first `count` float32 values of `buf`, as a new array."""
        from .. import _kp as kp
        tensor = buf.tensor
        # Submissions end without a barrier of their own: make their writes visible here.
        ops = [barrier(SHADER_WRITE | TRANSFER_WRITE, TRANSFER_RW, COMPUTE | TRANSFER, TRANSFER)]
        if buf.device_only:
            tensor = self._staging_for(buf)
            ops += copies([(buf.tensor, tensor)], after_transfer=False)
            # kp's sync below orders itself after shader writes only
            ops.append(barrier(TRANSFER_WRITE, TRANSFER_READ, TRANSFER, TRANSFER))
        self.run(*ops, kp.OpTensorSyncLocal([tensor]))
        out = np.empty(count, np.float32)
        copy(out, tensor.data()[:count])
        if buf.device_only:
            self._keep(tensor)
        return out
