"""The host transfers of one GL submission: staging buffers that only the CPU touches, copied on
the GPU (a buffer written with glBufferSubData at every call is moved to system memory by
NVIDIA's driver, and every dispatch then ran at PCIe speed).

Where GL has persistent mappings (GLStorage.staging) a transfer moves in pieces of PIECE_BYTES:
the GPU copies one piece while the host copies the next, in both directions, where a whole
copy by each in turn left one of them idle (docs/performance-log.md).
"""
from __future__ import annotations

import numpy as np

from .. import hostcopy

PIECE_BYTES = 2 << 20  # a few pieces per megapixel image: each piece's flush or fence costs µs
SYNC_GPU_COMMANDS_COMPLETE, SIGNALLED = 0x9117, (0x911A, 0x911C)


def pieces(nbytes: int, mapped) -> list[tuple[int, int]]:
    """[start, end) of each piece of a transfer of `nbytes` (one where nothing is mapped)."""
    step = PIECE_BYTES if mapped is not None else max(1, nbytes)
    return [(a, min(nbytes, a + step)) for a in range(0, nbytes, step)] or [(0, 0)]


class StagedTransfers:
    """Uploads into and downloads out of a submission's device buffers through its staging
    buffers (buffer, staging, mapped bytes or None), with a fence after each download piece:
    the host reads a piece once its fence has signalled (GPU writes to a coherent mapping are
    visible then)."""

    def __init__(self, context, storage, uploads, downloads):
        self.context, self.ctx = context, context.ctx
        self.uploads = [(b, *storage.staging(b.nbytes, read=False)) for b in uploads]
        self.downloads = [(b, *storage.staging(b.nbytes, read=True)) for b in downloads]
        self.fences: list[tuple[int, int, object]] = []  # (download, end byte, fence), in order

    def upload(self, inputs) -> None:
        """Copy `inputs` into the staging buffers and queue their GPU copies, piece by piece,
        each flushed so that the GPU starts on it while the host copies the next."""
        if not self.uploads:
            return
        self.wait_all()  # the last run's copies read the same staging memory
        flush = self.context.sync_procs()[3]
        for (buf, staging, mapped), data in zip(self.uploads, inputs):
            raw = np.ascontiguousarray(data).reshape(-1).view(np.uint8)  # no copy
            for a, b in pieces(raw.size, mapped):
                if mapped is not None:
                    hostcopy.copy(mapped[a:b], raw[a:b])
                else:
                    staging.write(raw)
                self.ctx.copy_buffer(buf.buf, staging, size=b - a, read_offset=a,
                                     write_offset=buf.offset + a)
                if mapped is not None:
                    flush()

    def queue_downloads(self) -> None:
        """Queue the GPU copies out of the device buffers after this call's dispatches, a fence
        after each piece (one after the uploads where nothing comes back)."""
        if not (self.uploads or self.downloads):
            return
        fence_sync, _, delete, flush = self.context.sync_procs()
        for _, _, old in self.fences:  # a run whose results were not read: superseded
            delete(old)
        self.fences = []
        for i, (buf, staging, mapped) in enumerate(self.downloads):
            for a, b in pieces(buf.nbytes, mapped):
                self.ctx.copy_buffer(staging, buf.buf, size=b - a, read_offset=buf.offset + a,
                                     write_offset=a)
                self.fences.append((i, b, fence_sync(SYNC_GPU_COMMANDS_COMPLETE, 0)))
        if not self.downloads:
            self.fences.append((-1, 0, fence_sync(SYNC_GPU_COMMANDS_COMPLETE, 0)))
        flush()

    def _wait(self, k: int) -> None:
        """Wait for fence k; it and those before it (signalled first) are deleted."""
        client_wait, delete = self.context.client_wait(), self.context.sync_procs()[2]
        fence = self.fences[k][2]
        while client_wait(fence, 1, 1_000_000_000) not in SIGNALLED:  # 1: flush commands
            pass
        for _, _, done in self.fences[:k + 1]:
            delete(done)
        del self.fences[:k + 1]

    def wait_all(self) -> None:
        if self.fences:
            self._wait(len(self.fences) - 1)

    def read(self, i: int, out: np.ndarray) -> None:
        """Download i's first out.nbytes into `out` (C-contiguous), each piece as soon as its
        copy has run."""
        _, staging, mapped = self.downloads[i]
        if mapped is None:
            self.wait_all()
            staging.read_into(out, size=out.nbytes)
            return
        dst = out.reshape(-1).view(np.uint8)
        for a, b in pieces(out.nbytes, mapped):
            pending = [k for k, (j, end, _) in enumerate(self.fences) if j == i and end >= b]
            if pending:
                self._wait(pending[0])
            hostcopy.copy(dst[a:b], mapped[a:b])
