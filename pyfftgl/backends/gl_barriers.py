"""The GL backend's memory barriers: within a submission (submission_barriers) and between the
library's calls on one context (PendingWrites).

glMemoryBarrier's storage bit (and all bits) cost NVIDIA's driver about 12 us after a call that
wrote 24 MiB, where the texture-fetch bit, which orders commands, costs next to nothing
(docs/performance-log.md). So a call that leaves only buffers written ends with no barrier; the
next call of the library on that context issues what its own accesses need before its first
dispatch (the storage bit where it reads what was left written, the fetch bit where it only
overwrites what was touched), and anything else that touches buffers (a host transfer, a fence
another context waits on) issues all bits first.
"""
from __future__ import annotations

GL_TEXTURE_FETCH_BARRIER_BIT = 0x8
GL_TEXTURE_UPDATE_BARRIER_BIT = 0x100
GL_FRAMEBUFFER_BARRIER_BIT = 0x400
GL_SHADER_STORAGE_BARRIER_BIT = 0x2000
GL_ALL_BARRIER_BITS = 0xFFFFFFFF
# What a caller does with a texture a kernel wrote, short of loading it as an image: sample or
# fetch it, draw into it, copy or read it back.
TEXTURE_USE_BARRIER_BITS = (GL_TEXTURE_FETCH_BARRIER_BIT | GL_FRAMEBUFFER_BARRIER_BIT
                            | GL_TEXTURE_UPDATE_BARRIER_BIT)


def _resource(obj) -> tuple:
    """A bound buffer's or image's identity: an image's GL object (two GLImages may wrap one
    texture), a buffer's range of its GL object (two buffers of the pool share one: buffer_pool)."""
    if hasattr(obj, "texture"):  # a GLImage (gl_storage imports gl_context, which needs this)
        return ("image", obj.texture.glo)
    return ("buffer", obj.buf.glo, obj.offset, obj.nbytes)


def submission_barriers(dispatches) -> tuple[list[int], int]:
    """The glMemoryBarrier bits before each dispatch and after the last. Before a dispatch:
    the storage bit where it reads a buffer an earlier dispatch wrote, the texture-fetch bit
    where it samples such a texture, and where it only overwrites what an earlier one touched,
    the texture-fetch bit alone, to order them; none where a barrier since did that. Nothing
    before the first: what the caller wrote is ordered by GL (drawing, uploads) or by the
    caller's own barrier after its image stores, as for any GL command that samples. After the
    last: all bits where the submission leaves a buffer written (read next by anything), else
    TEXTURE_USE_BARRIER_BITS. The storage and image bits cost NVIDIA's driver more the more was
    written before them (docs/drivers.md), so they go only where the specification needs them;
    a caller that loads a written texture with imageLoad issues the image bit itself."""
    # written: what the submission leaves written (the end's bits); unordered: what was written
    # with no barrier since that makes it visible (resource -> the bit a read of it needs);
    # touched: what dispatches since the last barrier read or wrote. A barrier orders every
    # command before it against every one after, so one serves the dispatches that follow too.
    written, unordered, touched, before = {}, {}, set(), []
    for n, d in enumerate(dispatches):
        bufs = [(i, _resource(b)) for i, b in enumerate(d.buffers) if b is not None]
        reads = [r for i, r in bufs if i != 1] + [_resource(m) for m in d.images[:d.image_reads]]
        writes = [r for i, r in bufs if i == 1] + [_resource(m) for m in d.images[d.image_reads:]]
        bits = 0
        for r in reads:
            bits |= unordered.get(r, 0)
        if not bits and n and touched.intersection(writes):
            bits = GL_TEXTURE_FETCH_BARRIER_BIT
        before.append(bits)
        if bits:
            unordered = {r: need for r, need in unordered.items() if not need & bits}
            touched = set()
        for r in reads:
            written.pop(r, None)  # read since written: not the submission's output
            touched.add(r)
        for r in writes:
            written[r] = True
            unordered[r] = (GL_SHADER_STORAGE_BARRIER_BIT if r[0] == "buffer"
                            else GL_TEXTURE_FETCH_BARRIER_BIT)
            touched.add(r)
    end = (GL_ALL_BARRIER_BITS if any(r[0] == "buffer" for r in written)
           else TEXTURE_USE_BARRIER_BITS)
    return before, end


def buffer_names(dispatches) -> tuple[frozenset, frozenset, frozenset]:
    """(GL buffers read, written, touched) by `dispatches`: GL names, not ranges, since a range
    of a pool block may be reused by a buffer of another size once its array is dropped."""
    reads, writes = set(), set()
    for d in dispatches:
        for i, b in enumerate(d.buffers):
            if b is not None:
                (writes if i == 1 else reads).add(b.buf.glo)
    return frozenset(reads), frozenset(writes), frozenset(reads | writes)


class PendingWrites:
    """What the library's calls on one context left without a barrier after them: the buffers
    written and touched since, and whether any call was left so (for anything not a dispatch)."""

    def __init__(self):
        self.written, self.touched, self.unbarriered = set(), set(), False

    def lead_bits(self, reads: frozenset, writes: frozenset) -> int:
        """The bits a submission reading and writing these GL buffers issues before its first
        dispatch, forgetting what they order."""
        if reads & self.written:
            self.written.clear()
            self.touched.clear()
            return GL_SHADER_STORAGE_BARRIER_BIT
        if writes & (self.written | self.touched):
            self.touched.clear()
            return GL_TEXTURE_FETCH_BARRIER_BIT
        return 0

    def leave(self, written: frozenset, touched: frozenset) -> None:
        """A call ended without its barrier, leaving these buffers written and touched."""
        self.written |= written
        self.touched |= touched
        self.unbarriered = True

    def settle(self, ctx) -> None:
        """All bits, where a call was left without its barrier: before a host transfer or a
        fence (ctx: the ModernGL context, current)."""
        if self.unbarriered:
            ctx.memory_barrier(GL_ALL_BARRIER_BITS, False)
        self.clear()

    def clear(self) -> None:
        """All bits were issued."""
        self.written.clear()
        self.touched.clear()
        self.unbarriered = False
