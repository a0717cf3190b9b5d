"""Slab and pencil FFTs of dask arrays chunked along their transformed axes (pyfftgl.dask's
chunked path; docs/dask.md describes the layouts).

A transform over axes A of an array whose blocks do not hold every axis of A whole runs in
stages: each stage transforms, block by block with one pyfftgl call, the axes of A that its
layout holds whole, then a rechunk (an all-to-all: distributed's P2P shuffle under a distributed
Client, dask's task rechunk otherwise) moves the split of a pending axis onto an axis already
transformed. A slab layout splits one transformed axis (one all-to-all), a pencil two (two).
Each axis is transformed in exactly one stage, where its `s` padding and its share of `norm`
(numpy's scale factors are products over the axes) are applied; stages with the same layout are
one pyfftgl call, so a block stays on the GPU between them and is read back once, before the
shuffle that needs it on the host.
"""
from __future__ import annotations

import functools
import math
import os
import threading

import numpy as np
import dask

from .kinds import KINDS, ONE_AXIS
from . import numpy_fft

DECOMPOSITIONS = ("auto", "slab", "pencil")
# An explicit per-block byte limit for every stage, when the caller does not pass max_block_bytes.
BLOCK_BYTES_ENV = "PYFFTGL_DASK_MAX_BLOCK_BYTES"

# pyfftgl's devices and caches are not made for concurrent calls, and one GPU runs one block at a
# time anyway: blocks of one process (dask's threaded scheduler, a worker of several threads) queue.
_lock = threading.Lock()


def transform_block(a, *args, name, backend, **kwargs):
    """One block's transform on this process's device (the task dask runs): pyfftgl's `name`,
    whose plan the plan cache keeps for the next block of the same shape."""
    with _lock:
        return getattr(numpy_fft, name)(a, *args, backend=backend, **kwargs)


def even_chunks(n: int, count: int) -> tuple[int, ...]:
    """`n` split into `count` (at most n, at least 1) chunks whose sizes differ by at most one."""
    count = max(1, min(count, n)) if n else 1
    q, r = divmod(n, count)
    return tuple(q + (i < r) for i in range(count))


def rechunk_method() -> str:
    """dask's configured rechunk method, else "p2p" under a distributed Client (its all-to-all
    shuffle, which spills to disk), else "tasks" (the threaded scheduler has no P2P)."""
    configured = dask.config.get("array.rechunk.method", None)
    if configured:
        return configured
    try:
        from distributed import default_client
        default_client()
    except (ImportError, ValueError):
        return "tasks"
    return "p2p"


class Planner:
    """The stages of one transform: for each, the chunks it runs on and the axes it transforms.

    shape/chunks: the input's; axes: the transformed axes in numpy's order; out_len: each
    transformed axis's length after its stage; first/last: an axis that must be transformed in
    the first/final stage (rfftn's and irfftn's real axis); inverse: the order of an inverse,
    which undoes a forward transform's stages in reverse (so that its transposed layout is its
    input layout and the forward's input layout its output)."""

    def __init__(self, shape, chunks, axes, out_len, *, first=None, last=None, inverse=False):
        self.shape, self.chunks = list(shape), [tuple(c) for c in chunks]
        self.axes, self.out_len = tuple(axes), dict(out_len)
        self.first, self.last, self.inverse = first, last, inverse
        self.stages: list[tuple[tuple, tuple]] = []

    def split(self, a) -> bool:
        return len(self.chunks[a]) > 1

    def relayout(self, d: int, blocks: int) -> None:
        """The canonical layout of a d-axis decomposition with about `blocks` blocks: a forward
        transform splits its first d axes, an inverse its last d (the forward's output)."""
        for a in self.axes:
            self.chunks[a] = (self.shape[a],)
        movable = [a for a in self.axes if a not in (self.first, self.last)]
        chosen = movable[-d:] if self.inverse else movable[:d]
        if len(chosen) < d or d >= len(self.axes):
            raise ValueError(f"a {'pencil' if d == 2 else 'slab'} decomposition needs "
                             f"{d + 1} transformed axes, there are {len(self.axes)}")
        counts = [blocks] if d == 1 else [math.ceil(math.sqrt(blocks))] * 2
        if d == 2:
            counts[1] = math.ceil(blocks / counts[0])
        for a, c in zip(chosen, counts):
            self.chunks[a] = even_chunks(self.shape[a], c)

    def move(self, p, todo, done) -> None:
        """Make axis p whole, its chunk count going to the first axis that can take it: a
        transformed axis not split, then a pending one not split, then another split pending
        one (merged), then a batch axis (the longest first), then irfftn's real axis (split
        again later)."""
        def free(a):  # rfftn's real axis is kept whole until its stage
            return (self.shape[a] > 1 and a != p and not (a == self.first and a in todo))
        batch = sorted((a for a in range(len(self.shape)) if a not in self.axes and free(a)),
                       key=lambda a: (self.split(a), -self.shape[a]))
        order = ([a for a in done if free(a) and not self.split(a)]
                 + [a for a in todo if free(a) and not self.split(a) and a != self.last]
                 + [a for a in todo if a != p and self.split(a)] + batch
                 + [a for a in todo if free(a) and a == self.last])
        if not order:
            raise ValueError(
                f"axis {p} (length {self.shape[p]}, {len(self.chunks[p])} chunks) cannot be "
                f"made whole: no other axis can take its split; rechunk it to one chunk")
        q = order[0]
        count = len(self.chunks[q]) * len(self.chunks[p])
        self.chunks[q], self.chunks[p] = even_chunks(self.shape[q], count), (self.shape[p],)

    def plan(self) -> list[tuple[tuple, tuple]]:
        todo, done = list(self.axes), []
        while todo:
            whole = [a for a in todo if not self.split(a)]
            if self.last in whole and len(whole) < len(todo):
                whole.remove(self.last)  # irfftn's real axis goes last, in the final stage
            needs_first = self.first in todo and self.first not in whole
            if whole and not needs_first:
                self.stages.append((tuple(self.chunks), tuple(whole)))
                for a in whole:
                    self.shape[a] = self.out_len[a]
                    self.chunks[a] = (self.shape[a],)
                done += whole
                todo = [a for a in todo if a not in whole]
                continue
            pending = [a for a in todo if self.split(a)]
            p = self.first if needs_first else pending[0] if self.inverse else pending[-1]
            self.move(p, todo, done)
        return self.stages


def choose_decomposition(decomposition, shape, chunks, axes, workers: int) -> tuple[int, int]:
    """(d, blocks): how many transformed axes a stage splits, and the canonical layout's block
    count, or d == 0 where the input's own layout is kept. "auto" keeps a slab or pencil input,
    else takes a slab unless the blocks (the input's, at least one per worker) outnumber the
    shortest transformed axis and a pencil fits."""
    if decomposition not in DECOMPOSITIONS:
        raise ValueError(f"decomposition must be one of {DECOMPOSITIONS}, got {decomposition!r}")
    split = [a for a in axes if len(chunks[a]) > 1]
    blocks = max(math.prod(len(chunks[a]) for a in split), workers)
    if len(axes) == 1:
        return 0, blocks  # one axis: its split goes to a batch axis
    wanted = {"slab": 1, "pencil": 2}.get(decomposition)
    if wanted is None:
        if 0 < len(split) <= 2 and len(split) < len(axes):
            return 0, blocks
        wanted = 1 if len(axes) < 3 or blocks <= min(shape[a] for a in axes) else 2
    return (0 if len(split) == wanted and len(split) < len(axes) else wanted), blocks


def worker_count() -> int:
    try:
        from distributed import default_client
        return max(1, len(default_client().scheduler_info().get("workers", {})))
    except (ImportError, ValueError):
        return 1


def block_limit(max_block_bytes):
    if max_block_bytes is None and os.environ.get(BLOCK_BYTES_ENV):
        max_block_bytes = int(os.environ[BLOCK_BYTES_ENV])
    return max_block_bytes


def resolve_axes(name, shape, size, axes) -> tuple[tuple, dict]:
    """numpy's axes and lengths of transform `name` (`size` and `axes` are n and axis for the
    one-axis functions): the axes in order, and each one's n/s (irfft's default 2*(m-1))."""
    ndim = len(shape)
    if name in ONE_AXIS:
        axes, size = (-1 if axes is None else axes,), (None if size is None else (size,))
    elif axes is None:
        axes = (-2, -1) if name.endswith("2") else tuple(range(ndim - len(size), ndim)) \
            if size is not None else tuple(range(ndim))
    axes = tuple(int(a) for a in axes)
    for a in axes:
        if not -ndim <= a < ndim:
            raise np.exceptions.AxisError(a, ndim)
    axes = tuple(a % ndim for a in axes)
    if len(set(axes)) != len(axes):
        raise ValueError(f"repeated axes {axes}: a chunked transform takes each axis once")
    if size is not None and len(size) != len(axes):
        raise ValueError("Shape and axes have different lengths.")
    target = {a: shape[a] for a in axes}
    if KINDS[name].family == "c2r":
        target[axes[-1]] = 2 * (shape[axes[-1]] - 1)
    if size is not None:
        target.update({a: int(n) for a, n in zip(axes, size) if n is not None})
    for n in target.values():
        if n < 1:
            raise ValueError(f"Invalid number of data points ({n}) specified")
    return axes, target


def _check_block(chunks, itemsize: int, limit, stage: int) -> None:
    if limit is None:
        return
    biggest = tuple(max(c) for c in chunks)
    nbytes = math.prod(biggest) * itemsize
    if nbytes > limit:
        raise ValueError(
            f"stage {stage}'s largest block {biggest} is {nbytes} bytes, more than "
            f"max_block_bytes={limit}: chunk the array more finely along an axis, or ask for a "
            f"pencil decomposition")


def _stage_call(name, axes_t, target, norm, one_axis):
    """pyfftgl's keyword arguments for one stage over axes_t."""
    if one_axis:
        return {"n": target[axes_t[0]], "axis": axes_t[0], "norm": norm}
    return {"s": tuple(target[a] for a in axes_t), "axes": tuple(axes_t), "norm": norm}


def stage_names(name: str, count: int) -> list[str]:
    """The pyfftgl function of each stage of transform `name`: rfftn's real axis in the first,
    irfftn's in the final, complex transforms in the others."""
    kind = KINDS[name]
    names = ["ifftn" if kind.inverse else "fftn"] * count
    if kind.family == "r2c":
        names[0] = "rfftn"
    elif kind.family == "c2r":
        names[-1] = "irfftn"
    return names


def plan_transform(x, name, axes, target, *, decomposition="auto", inverse=False):
    """The Planner of transform `name` of x over `axes` (each axis's transformed length in
    `target`): its stages, from the input's layout or, where that cannot be kept, a canonical
    slab or pencil one."""
    out_len = dict(target)
    first = last = None
    if KINDS[name].family == "r2c":
        first = axes[-1]
        out_len[first] = target[first] // 2 + 1
    elif KINDS[name].family == "c2r" and KINDS[name].nd:
        last = axes[-1]
    planner = Planner(x.shape, x.chunks, axes, out_len, first=first, last=last, inverse=inverse)
    d, blocks = choose_decomposition(decomposition, x.shape, x.chunks, axes, worker_count())
    if d:
        planner.relayout(d, blocks)
    planner.plan()
    return planner


def stages(x, name, axes, target, *, decomposition="auto"):
    """The stages of transform `name` of x: (chunks, axes, pyfftgl function, output dtype's
    kind: "complex" or "final") for each, in order."""
    inverse = KINDS[name].inverse
    planner = plan_transform(x, name, axes, target, decomposition=decomposition, inverse=inverse)
    names = [name] if name in ONE_AXIS else stage_names(name, len(planner.stages))
    kinds = ["complex"] * (len(names) - 1) + ["final"]
    return [(chunks, axes_t, n, k, planner.out_len)
            for (chunks, axes_t), n, k in zip(planner.stages, names, kinds)]


def apply_stage(y, stage, target, norm, backend, dtype, *, limit=None, index=0, method="tasks"):
    """One stage over dask array y: the rechunk to its layout (where y has another), then its
    pyfftgl call on each block. dtype: the result's; an earlier stage's is its complex type."""
    chunks, axes_t, name, kind, out_len = stage
    complex_dtype = np.result_type(dtype, np.complex64)
    out_dtype = dtype if kind == "final" else complex_dtype
    _check_block(chunks, max(np.dtype(out_dtype).itemsize, complex_dtype.itemsize), limit, index)
    if tuple(chunks) != y.chunks:
        y = y.rechunk(chunks, method=method)
    new = list(chunks)
    for a in axes_t:
        new[a] = (out_len[a],)
    kwargs = _stage_call(name, axes_t, target, norm, name in ONE_AXIS)
    return y.map_blocks(functools.partial(transform_block, name=name, backend=backend, **kwargs),
                        chunks=tuple(new), dtype=out_dtype,
                        meta=np.empty((0,) * y.ndim, out_dtype), token=f"pyfftgl-{name}")


def transform(x, name, axes, target, norm, backend, dtype, *, out_chunks=None,
              decomposition="auto", max_block_bytes=None):
    """pyfftgl's `name` over a dask array chunked along some of `axes`: the stages' graph.

    target: each transformed axis's n/s length; dtype: the result's (pyfftgl's rules); out_chunks:
    None for the input's chunks (an axis whose length changed keeps its chunk count),
    "transposed" for the final stage's layout, else chunks for dask's rechunk."""
    limit, method = block_limit(max_block_bytes), rechunk_method()
    y = x
    for i, stage in enumerate(stages(x, name, axes, target, decomposition=decomposition)):
        y = apply_stage(y, stage, target, norm, backend, dtype, limit=limit, index=i,
                        method=method)
    return _out_layout(y, x.chunks, out_chunks, method)


def _out_layout(y, in_chunks, out_chunks, method):
    if isinstance(out_chunks, str):
        if out_chunks != "transposed":
            raise ValueError(f"out_chunks must be None, 'transposed' or chunks, got {out_chunks!r}")
        return y
    if out_chunks is None:
        out_chunks = tuple(c if sum(c) == n else even_chunks(n, len(c))
                           for c, n in zip(in_chunks, y.shape))
    return y.rechunk(out_chunks, method=method)
