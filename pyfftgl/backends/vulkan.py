"""Vulkan backend: Kompute tensors (pyfftgl._kp) as storage buffers, SPIR-V from glslang."""
from __future__ import annotations

import os
import threading
import weakref
from collections import deque
from pathlib import Path
from typing import Sequence

import numpy as np

from .. import hostcopy, kernels
from . import _vkinfo
from .base import BackendUnavailable, Buffer, Device, Dispatch, Program, Submission
from .vulkan_transfers import COMPUTE, SHADER_RW, SHADER_WRITE, TRANSFER, TRANSFER_WRITE
from .vulkan_transfers import VulkanTransfers, barrier, between, hazard_groups

KP_MAX_BYTES = 4 * (2**32 - 1)


class VkBuffer(Buffer):
    def __init__(self, tensor, nbytes: int, device_only: bool = False):
        self.tensor = tensor
        self.nbytes = nbytes
        self.device_only = device_only  # a kp storage tensor: no staging buffer to map


class VkProgram(Program):
    def __init__(self, spirv: bytes, push_names: tuple[str, ...]):
        self.spirv = spirv
        self.push_names = push_names


class VkSubmission(Submission):
    """The ops recorded into up to RING kp sequences, replayed in turn: a sequence cannot be
    submitted again while it runs, so one sequence would make each call wait for the previous.
    The device submits the replays (VulkanDevice.queue); twice its HOLD, so that one batch of
    a loop's calls runs while the next is gathered."""

    RING = 32

    def __init__(self, device: "VulkanDevice", dispatches: Sequence[Dispatch],
                 uploads: Sequence[VkBuffer], downloads: Sequence[VkBuffer]):
        from .. import _kp as kp

        self.device = device
        self.uploads = list(uploads)
        self.downloads = list(downloads)
        self._ops = []
        if uploads:
            self._ops.append(kp.OpTensorSyncDevice([b.tensor for b in uploads]))
        if dispatches:
            # kp records no barrier before a dispatch (tools/kp_patch.py, 6): one barrier here
            # orders the uploads above, and every dispatch and copy of the submissions before
            # this one (left running by wait=False), before any dispatch of this one.
            if any(d.images for d in dispatches):
                raise NotImplementedError("the Vulkan backend binds buffers only (images are GL's)")
            # Transfers of earlier submissions end in a host wait (read, write, downloads), so a
            # submission that uploads nothing itself only waits for earlier dispatches.
            moves = bool(uploads)
            self._ops.append(barrier(SHADER_WRITE | (TRANSFER_WRITE if moves else 0),
                                     SHADER_RW, COMPUTE | (TRANSFER if moves else 0), COMPUTE))
        first = len(self._ops)
        # A barrier only before a dispatch that reads what one since the last barrier wrote, or
        # writes what one since read or wrote: dispatches touching no common buffer run together.
        groups = hazard_groups(dispatches)
        self.barriers = max(0, len(groups) - 1)  # those between dispatches (tests read it)
        for i, (group, _, _) in enumerate(groups):
            self._ops += [between(group)] * bool(i) + [
                kp.OpAlgoDispatch(device.algorithm(d), d.push) for d in group]
        self._timed_span = (first, len(self._ops))
        # A call of dispatches alone may go without its leading barrier where nothing it touches
        # first is in flight (VulkanDevice.overlaps): its first and last group's access.
        self.ends = ((groups[0][1:], groups[-1][1:], len(groups))
                     if dispatches and not (uploads or downloads) else None)
        if downloads:  # kp's sync records its own shader/transfer -> transfer barrier
            self._ops.append(kp.OpTensorSyncLocal([b.tensor for b in downloads]))
        # kp sequences of the ops, [with the leading barrier, without]: a slot per call in
        # flight, its sequence made when a call is submitted alone (calls submitted together
        # are recorded into one: VulkanDevice.flush)
        self._rings = ([], [])
        self.busy = {}  # (ring, slot) queued on the device and not yet waited for, oldest first
        self.idle = ([], [])  # per ring, the slots made and not busy (release() returns them)
        self._timed = None

    def ops(self, free: bool = False) -> list:
        """The recorded ops, without the leading barrier where `free`."""
        return self._ops[1:] if free else self._ops

    def _make_sequence(self, timed: bool = False, free: bool = False):
        """The ops as a kp Sequence; `timed`: with a timestamp on each side of the dispatches
        alone (kp_patch.py's record_timestamp; a timestamp after every op would make the GPU
        drain after each, which the plain sequence does not); `free`: without the leading
        barrier."""
        seq = self.device.manager.sequence(total_timestamps=2 if timed else 0)
        a, b = self._timed_span
        parts = (self._ops[:a], self._ops[a:b], self._ops[b:]) if timed else (self.ops(free),)
        for i, part in enumerate(parts):
            if i:
                seq.record_timestamp()
            for op in part:
                seq.record(op)
        return seq

    def _run(self, inputs, timed, wait):
        dev = self.device
        if inputs or self.downloads or timed:
            # Host data in or out: its staging memory is shared by every replay, so the calls
            # before this one finish first.
            dev.wait_all()
        for buf, data in zip(self.uploads, inputs):
            dev.transfers.write(buf, data, sync=False)
        if timed:
            if self._timed is None:
                self._timed = self._make_sequence(timed=True)
            self._timed.eval()
            dev.touched_all()
            ts = self._timed.get_timestamps()  # recording began, before and after the dispatches
            return (ts[2] - ts[1]) * self.device.timestamp_period
        return self._again(wait)

    def _again(self, wait: bool = False) -> None:
        """Queue a run of the recorded ops in a free ring slot; `wait`: and wait for it."""
        dev = self.device
        free = dev.overlaps(self)
        idle = self.idle[free]
        slot = (free, idle.pop()) if idle else self._new_slot(free)
        self.busy[slot] = None
        dev.queue(self, slot)
        if wait:
            dev.wait_for(self, slot)

    def _new_slot(self, free: int) -> tuple:
        """A new slot of ring `free`, or where it has RING (calls in flight: the GPU has a full
        queue) the oldest, once it has run."""
        ring = self._rings[free]
        if len(ring) < self.RING:
            ring.append(None)
            return free, len(ring) - 1
        oldest = next(slot for slot in self.busy if slot[0] == free)
        self.device.wait_for(self, oldest)  # releases it (and every slot run before it)
        return free, self.idle[free].pop()

    def release(self, slot: tuple) -> None:
        """The call in `slot` has run (or failed to submit): the slot may take the next."""
        if self.busy.pop(slot, slot) is None:
            self.idle[slot[0]].append(slot[1])

    def sequence(self, slot):
        """The kp sequence of a (ring, slot) key, made on first use."""
        free, i = slot
        if self._rings[free][i] is None:
            self._rings[free][i] = self._make_sequence(free=free)
        return self._rings[free][i]

    def _result(self, i, out):
        self.device.finish()
        hostcopy.copy(out.reshape(-1), self.downloads[i].tensor.data()[: out.size])
        return out


def kompute():
    """The patched Kompute binding, pyfftgl._kp (tools/kp_patch.py): for diagnostics and the
    tests of its patches; BackendUnavailable, saying how to get it, where it is missing."""
    try:
        from .. import _kp as kp
    except ImportError as e:
        # setup.py leaves this note where it skipped the build (no compiler or headers)
        note = Path(__file__).resolve().parent.parent / "kp_build_skipped.txt"
        if note.is_file():
            raise BackendUnavailable(
                f"pyfftgl was installed without its compiled Kompute module (pyfftgl._kp): "
                f"{note.read_text().strip()}; install those and reinstall pyfftgl for "
                "Vulkan (the GL and WebGPU backends need neither)") from e
        raise BackendUnavailable(
            f"the Vulkan backend needs pyfftgl's compiled Kompute module, pyfftgl._kp, "
            f"which failed to import ({e}); pip builds it when it installs pyfftgl from "
            "source (a C++ compiler and the Vulkan headers: Debian's g++ and libvulkan-dev), "
            "and `make setup` does in a clone") from e
    return kp


class VulkanDevice(Device):
    def __init__(self):
        kp = kompute()
        if not (hasattr(kp, "OpMemoryBarrier") and hasattr(kp.Sequence, "record_timestamp")
                and hasattr(kp.Manager, "algorithm_like")
                and hasattr(kp.Sequence, "is_done")):
            raise BackendUnavailable(
                "this pyfftgl._kp lacks OpMemoryBarrier, Sequence.record_timestamp, "
                "Manager.algorithm_like or Sequence.is_done, which pyfftgl orders, "
                "times, binds and submits its dispatches with: rebuild it with tools/kp_patch.py "
                "applied (`pip install --force-reinstall .` or `make setup` in a clone)")
        try:
            devices = _vkinfo.physical_devices()
        except OSError as e:
            raise BackendUnavailable(f"{e}") from e
        if not devices:
            raise BackendUnavailable(
                "no Vulkan driver found (no physical device): install a GPU driver with Vulkan "
                "support, or Mesa's lavapipe (Debian: mesa-vulkan-drivers)")
        props = _vkinfo.choose(devices)
        robust2 = ["VK_EXT_robustness2"] if os.environ.get("PYFFTGL_VK_ROBUST") == "2" else []
        self.manager = kp.Manager(props["index"], [props["compute_family"]], robust2)
        if not hasattr(self.manager, "memory_pool_stats"):
            raise BackendUnavailable("this pyfftgl._kp has no memory pool (tools/kp_patch.py, 13): "
                                     "rebuild it (`make setup` in a clone)")
        # A test's (or a cautious user's) lower allocation limit than the driver's, to prove
        # the pool within the 4096 that Windows drivers allow.
        cap = os.environ.get("PYFFTGL_VK_MAX_ALLOCATIONS")
        if cap:
            if not cap.isdigit() or int(cap) < 1:
                raise BackendUnavailable(f"PYFFTGL_VK_MAX_ALLOCATIONS={cap!r} is not a count")
            self.manager.memory_pool_limit(int(cap))
        self.timestamp_period = props["timestamp_period"]
        self.driver_info = _vkinfo.driver_info(props)
        self._held: list[tuple[VkSubmission, tuple]] = []  # calls queued, not yet submitted
        # (reads, writes) of the dispatches queued since the last barrier, None where unknown (a
        # transfer or a call of other ops came last): what a call without its leading barrier
        # would overlap (overlaps).
        self._since_barrier: tuple[frozenset, frozenset] | None = None
        self.overlapped = 0  # calls queued without their leading barrier
        self.submissions = 0  # vkQueueSubmit calls made for calls queued (queue())
        # (sequence whose fence ends it, its calls, the ops a merged batch recorded or None for
        # a call's own sequence), oldest first
        self._batches: deque = deque()
        # (ops recorded, sequence) for merged calls (flush), no batch running: a batch of the
        # same ops in the same order runs the sequence again instead of recording it anew
        self._batch_pool: list = []
        self.recorded = 0
        # Held by every call that submits, waits or touches host-visible memory: a Vulkan queue
        # and kp's sequences are not safe to use from two threads at once.
        self.lock = threading.RLock()
        # kp binds tensors when it makes an algorithm, so each program has one base algorithm
        # (its pipeline, bound to a placeholder) and each (program, grid, buffers) one algorithm
        # sharing the base's pipeline (tools/kp_patch.py, 8), kept while all of them live.
        self._bases: dict[int, object] = {}  # id of a program -> its base algorithm
        self._placeholder = None  # the tensor bases bind: they never run, and keep no buffer alive
        self.pipelines_made = 0  # kp pipelines made (one per program)
        self._algorithms: dict[tuple, object] = {}
        self._keys_of: dict[int, set] = {}  # id of a buffer or program -> its keys above
        self.transfers = VulkanTransfers(self.manager, self.touched_all)  # writes and reads

    def stats(self) -> dict:
        """What the device holds, for tests and profilers: "algorithms" (kp algorithms kept,
        one per program, grid and buffers bound), "keys" (the keys that find them, by buffer
        and program), "held" (calls queued while the GPU is busy, not yet submitted),
        "pipelines" (kp pipelines made), "submissions" (vkQueueSubmit calls of queued calls),
        "recorded" (batches of several calls recorded anew: _merged)."""
        return {"algorithms": len(self._algorithms),
                "keys": sum(len(k) for k in self._keys_of.values()), "held": len(self._held),
                "pipelines": self.pipelines_made, "submissions": self.submissions,
                "recorded": self.recorded}

    # Calls held back at most, while the GPU is busy, before they are submitted together.
    HOLD = 16
    POOL = 32  # merged batches' sequences kept for a batch of the same ops to run again
    overlaps_calls = True

    def overlaps(self, sub: VkSubmission) -> bool:
        """Whether `sub`, queued next, goes without its leading barrier: a call of dispatches
        alone whose first group (its dispatches before its first barrier: hazard_groups) reads
        nothing the dispatches queued since the last barrier write, and writes nothing they
        read or write. Then it may start while they run (a single image's passes leave much of
        the GPU idle as they fill and drain); the record of what is in flight is updated either
        way: with its only group added, or its last group alone after its barriers."""
        ends, since = sub.ends, self._since_barrier
        if ends is None:
            self._since_barrier = None
            return False
        (reads, writes), last, count = ends
        free = since is not None and not (reads & since[1] or writes & (since[0] | since[1]))
        if free and count == 1:
            self._since_barrier = (since[0] | reads, since[1] | writes)
        else:
            self._since_barrier = last
        self.overlapped += free
        return free

    def touched_all(self) -> None:
        """Ops other than queued calls ran (transfers, a timed run): the next call takes its
        barrier."""
        self._since_barrier = None

    def queue(self, sub: VkSubmission, i: tuple) -> None:
        """Submit ring slot i of `sub`: at once where the GPU has run all it was given, else
        held and submitted with the calls after it when HOLD are held, a call finds the GPU
        done, or the host waits or flushes. Each submission leaves NVIDIA's GPU idle for a
        while (kp_patch.py, 11; docs/performance-log.md), which back-to-back calls would pay."""
        batches = self._batches
        if batches:
            if not batches[-1][0].is_done():  # the GPU is busy: held
                self._held.append((sub, i))
                if len(self._held) >= self.HOLD:
                    self._flush()
                return
            self._retire()  # all done: free their ring slots (no wait)
        self._held.append((sub, i))
        self._flush()  # the caller holds the lock, and Vulkan needs nothing current

    def _flush(self):
        """Submit the calls held back, in one submission, without waiting for them: one call's
        own recorded command buffer, or several calls' ops recorded into one command buffer
        (each command buffer's end drains NVIDIA's GPU, so calls in separate ones would not
        overlap, and each would pay the drain: docs/performance-log.md). The caller holds the
        lock, as every caller of the device's primitives does."""
        if self._held:
            calls, self._held = self._held, []
            seq, ops = None, None
            try:
                if len(calls) > 1:
                    seq, ops = self._merged(calls)
                else:
                    seq = calls[0][0].sequence(calls[0][1])
                seq.eval_async()
            except RuntimeError as e:
                for sub, i in calls:
                    sub.release(i)
                if ops is not None:
                    self._batch_pool.append((None, seq))  # perhaps recorded in part
                raise self.failure("submitting work", e) from e
            self._batches.append((seq, calls, ops))
            self.submissions += 1

    def _merged(self, calls) -> tuple:
        """(a command buffer, the ops it holds): the calls' ops in order, from the pool of those no
        batch runs; one holding these very ops (not their ids, which outlive them) runs again as
        it is: a loop's batches repeat, and recording costs more host time than the Python."""
        ops = tuple(op for sub, (free, _) in calls for op in sub.ops(free))
        pool = self._batch_pool
        for k in range(len(pool) - 1, -1, -1):
            if pool[k][0] == ops:
                return pool.pop(k)[1], ops
        # the least recently run where the pool is full, else a new one: a loop's batches
        # vary in length with the host's pace, and each length is its own sequence
        seq = pool.pop(0)[1] if pool and len(pool) >= self.POOL else self.manager.sequence()
        self.recorded += 1
        seq.clear()
        for op in ops:
            seq.record(op)
        return seq, ops

    def wait_for(self, sub: VkSubmission, i: tuple) -> None:
        """Wait until ring slot i of `sub` has run, and everything submitted before it."""
        if (sub, i) in self._held:
            self._flush()
        self._retire((sub, i))

    def _retire(self, call: tuple | None = None) -> None:
        """Wait for the submitted batches, oldest first, through the one holding `call` (a
        (submission, slot); every batch where None: after the last one's fence has signalled,
        one queue having run them in order, these waits return at once), and free their ring
        slots."""
        batches, pool = self._batches, self._batch_pool
        while batches:
            seq, calls, ops = batches.popleft()
            try:
                seq.eval_await()
            except RuntimeError as e:
                raise self.failure("waiting for a submission", e) from e
            finally:  # nothing of a failed wait is waited for again
                for s, j in calls:
                    s.release(j)
                if ops is not None:
                    pool.append((ops, seq))
            if call is not None and call in calls:
                return

    def wait_all(self) -> None:
        """Submit what is held and wait for everything submitted (the lock held)."""
        self._flush()
        self._retire()

    def _finish(self):
        """Wait for every submission still running (before the host reads or writes memory)."""
        self.wait_all()

    def _program(self, source, push_names):
        return self._track(VkProgram(kernels.compile_spirv(source), push_names))

    def _track(self, obj):
        """Forget the algorithms bound to `obj` (a buffer or program) when it is collected."""
        released = self.count_live("buffers", obj.nbytes) if isinstance(obj, VkBuffer) else None
        weakref.finalize(obj, self._forget, id(obj), released).atexit = False
        return obj

    def _forget(self, ident: int, released=None):
        self._bases.pop(ident, None)  # its sharers keep its pipeline alive (kp_patch.py, 8)
        for key in self._keys_of.pop(ident, ()):
            self._algorithms.pop(key, None)
            for other in (key[0],) + key[2]:  # the key is gone from its other objects' sets too
                keys = self._keys_of.get(other)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del self._keys_of[other]
        if released is not None:
            released()

    def algorithm(self, d: Dispatch):
        """The kp algorithm running d.program on d.buffers over d.groups."""
        key = (id(d.program), tuple(d.groups), tuple(id(b) for b in d.buffers))
        algo = self._algorithms.get(key)
        if algo is None:
            algo = self.manager.algorithm_like(self._base(d.program, len(d.buffers)),
                                            [b.tensor for b in d.buffers], list(d.groups))
            self._algorithms[key] = algo
            for ident in (key[0],) + key[2]:
                self._keys_of.setdefault(ident, set()).add(key)
        return algo

    def _base(self, program: VkProgram, n_buffers: int):
        """The algorithm that owns program's pipeline: it binds the placeholder tensor at each
        of its n_buffers bindings and is never dispatched."""
        from .. import _kp as kp
        base = self._bases.get(id(program))
        if base is None:
            if self._placeholder is None:
                self._placeholder = self.manager.tensor_t(np.zeros(1, np.float32),
                                                       kp.TensorTypes.storage)
            push = np.zeros(max(1, len(program.push_names)), np.uint32)
            base = self.manager.algorithm([self._placeholder] * n_buffers, program.spirv, [1, 1, 1],
                                       np.zeros(0, np.uint32), push)
            self._bases[id(program)] = base
            self.pipelines_made += 1
        return base

    def _buffer(self, nbytes, data, device_only):
        if nbytes > KP_MAX_BYTES:  # kp counts a tensor's floats in 32 bits, and wraps silently
            raise MemoryError(f"the largest buffer kp makes is {KP_MAX_BYTES} bytes")
        try:
            return self._tensor_buffer(nbytes, data, device_only)
        except (MemoryError, RuntimeError) as e:  # the host's or the driver's allocation
            if isinstance(e, RuntimeError) and not any(
                    w in str(e).lower() for w in ("memory", "alloc")):
                raise
            raise MemoryError(f"{type(e).__name__}: {e}") from e

    def _tensor_buffer(self, nbytes, data, device_only):
        from .. import _kp as kp
        count = max(1, -(-nbytes // 4))
        if device_only:
            # A storage tensor has no staging copy, so kp's OpTensorCopy does not also memcpy
            # it on the host after every device copy.
            buf = self._track(VkBuffer(self.manager.tensor_t(np.empty(count, np.float32),
                                                          kp.TensorTypes.storage),
                                       nbytes, device_only=True))
            if data is not None:
                self.write(buf, data)
            return buf
        init = np.zeros(count, np.float32)
        if data is not None:
            flat = np.ascontiguousarray(data).view(np.float32).ravel()
            init[: flat.size] = flat
        buf = self._track(VkBuffer(self.manager.tensor_t(init), nbytes))
        if data is not None:  # a device tensor's initial data sits in its staging copy until synced
            self.count_transfers(to_device=1)
            self.transfers.run(kp.OpTensorSyncDevice([buf.tensor]))
        return buf

    def _memory_stats(self):
        """kp's device memory pool (tools/kp_patch.py, 13): every tensor's buffers are ranges
        of its blocks, or allocations of their own where large."""
        s = self.manager.memory_pool_stats()
        return {"used_bytes": s["used_bytes"], "held_bytes": s["held_bytes"],
                "blocks": s["blocks"], "allocations": s["allocations"], "limit": s["limit"]}

    def _trim_memory(self):
        self.wait_all()
        self.transfers.release()  # the staging tensors kept for reuse are held memory too
        return self.manager.memory_pool_trim()

    def _write(self, buf, data):
        self.finish()
        self.transfers.write(buf, data)

    def _read(self, buf, count):
        self.finish()
        return self.transfers.read(buf, count)

    def _record(self, dispatches, uploads, downloads):
        return VkSubmission(self, dispatches, uploads, downloads)
