"""A GL submission's host transfers: its uploads and downloads move through staging buffers that
only the CPU touches, copied on the GPU to and from the device's buffers.

Where GL has buffer storage (4.4, or its extension) the staging buffers stay mapped for good
(persistent, coherent) and a transfer goes in pieces (hostcopy.pieces): the GPU copy of an
upload's piece is queued and flushed as soon as the host has copied it in, and a download's
piece is copied out as soon as the fence after its GPU copy has signalled. The PCIe copies then
overlap the host's memcpy, where whole buffers made them follow one another. Without buffer
storage, glBufferSubData / glGetBufferSubData move whole buffers.
"""
from __future__ import annotations

import numpy as np

from .. import hostcopy

_COMMANDS_COMPLETE = 0x9117  # GL_SYNC_GPU_COMMANDS_COMPLETE
_SIGNALLED = (0x911A, 0x911C)  # GL_ALREADY_SIGNALED, GL_CONDITION_SATISFIED


class GLTransfers:
    def __init__(self, device, uploads, downloads):
        self._context = device.context
        # (device buffer, staging buffer, its mapping as uint8 or None, its pieces)
        self._uploads = [(b, *device.storage.staging(b.nbytes, read=False),
                          hostcopy.pieces(b.nbytes)) for b in uploads]
        self._downloads = [(b, *device.storage.staging(b.nbytes, read=True),
                            hostcopy.pieces(b.nbytes)) for b in downloads]
        self._fence = None  # after the last run's copies: staging is free again once it signals
        self._piece_fences: list[list] = [[] for _ in downloads]  # per download, per piece

    def upload(self, ctx, inputs) -> None:
        """Queue the copies of `inputs` into the uploads (inside the context's entry)."""
        if not self._uploads:
            return
        self.wait_all()  # the last run's upload copies read the staging memory
        self._context.pending.settle(ctx)  # the copies write what calls left touched
        flush = self._context.sync_procs()[3]
        for (buf, staging, mapped, bounds), data in zip(self._uploads, inputs):
            raw = np.ascontiguousarray(data).reshape(-1).view(np.uint8)  # no copy
            if mapped is None:
                staging.write(raw)
                ctx.copy_buffer(buf.buf, staging, size=raw.size, write_offset=buf.offset)
                continue
            parts = _clip(bounds, raw.size)

            def queue(k, buf=buf, staging=staging, parts=parts):
                a, b = parts[k]
                ctx.copy_buffer(buf.buf, staging, size=b - a, read_offset=a,
                                write_offset=buf.offset + a)
                if len(parts) > 1:
                    flush()  # the GPU starts on this piece while the host copies the next
            hostcopy.pipelined(mapped[:raw.size], raw, parts, after=queue)

    def queue_downloads(self, ctx) -> None:
        """Queue the copies out of the downloads, a fence after each piece, and the fence that
        the next run's uploads and the host's reads wait for."""
        fence_sync, _, delete, flush = self._context.sync_procs()
        for i, (buf, staging, mapped, bounds) in enumerate(self._downloads):
            for fence in self._piece_fences[i]:  # a result never read
                delete(fence)
            self._piece_fences[i] = []
            if mapped is None:
                ctx.copy_buffer(staging, buf.buf, size=buf.nbytes, read_offset=buf.offset)
                continue
            for a, b in bounds:
                ctx.copy_buffer(staging, buf.buf, size=b - a, read_offset=buf.offset + a,
                                write_offset=a)
                if len(bounds) > 1:
                    self._piece_fences[i].append(fence_sync(_COMMANDS_COMPLETE, 0))
                    flush()
        if self._downloads or self._uploads:
            if self._fence is not None:
                delete(self._fence)
            self._fence = fence_sync(_COMMANDS_COMPLETE, 0)
            flush()

    def read(self, i: int, out: np.ndarray) -> np.ndarray:
        """Download `i` into `out` (inside the context's entry)."""
        _, staging, mapped, bounds = self._downloads[i]
        if mapped is None:
            staging.read_into(out, size=out.nbytes)
            return out
        fences = self._piece_fences[i]
        if not fences:
            self._wait(self._fence)
        dst = out.reshape(-1).view(np.uint8)
        delete = self._context.sync_procs()[2]

        def wait(k):
            self._wait(fences[k])
            delete(fences[k])
            fences[k] = None
        try:
            hostcopy.pipelined(dst, mapped[:dst.size], _clip(bounds, dst.size),
                               before=wait if fences else None)
        finally:
            for fence in fences:
                if fence is not None:
                    delete(fence)
            self._piece_fences[i] = []
        return out

    def _wait(self, fence) -> None:
        """Wait for `fence` on the host (GPU writes to a coherent mapping are visible once the
        fence after them has signalled)."""
        if fence is None:
            return
        client_wait = self._context.client_wait()
        while client_wait(fence, 1, 1_000_000_000) not in _SIGNALLED:  # SYNC_FLUSH_COMMANDS
            pass

    def wait_all(self) -> None:
        """Wait for the last run's copies, and forget its fence."""
        self._wait(self._fence)
        if self._fence is not None:
            self._context.sync_procs()[2](self._fence)
            self._fence = None


def _clip(bounds, nbytes: int) -> list[tuple[int, int]]:
    """The pieces of `bounds` that start before `nbytes`, the last one cut there."""
    return [(a, min(b, nbytes)) for a, b in bounds if a < nbytes] or [(0, 0)]
