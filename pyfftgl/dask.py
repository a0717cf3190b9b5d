"""pyfftgl's transforms over dask arrays, for batches larger than one machine or one GPU.

    import dask.array as da, pyfftgl.dask
    x = da.random.random((1024, 256, 256), chunks=(64, -1, -1)).astype("float32")
    y = pyfftgl.dask.rfft2(x)           # lazy; y.compute() runs the blocks on the workers

Where the transformed axes are each one chunk, each function is `dask.array.fft.fft_wrap` around
the pyfftgl function of the same name, and every block is transformed by its own pyfftgl call.
Where some are chunked, pyfftgl.dask_pencil runs slab or pencil stages with an all-to-all rechunk
between them (`out_chunks=`, `decomposition=`, `max_block_bytes=`; docs/dask.md). `backend=`
picks the API on the workers ("vulkan", "gl" or "auto"; None means the client's set_backend choice,
else "auto"); a Device object cannot travel to another process and is refused.

Dtypes are pyfftgl's (numpy's): float16/float32/complex64 in, complex64 (or float32) out;
float64/complex128/integers in, complex128 (or float64) out; others raise pyfftgl's TypeError when
the graph is built, not on the workers. The output dtype is found by running the pyfftgl function
on an empty batch, so building a graph opens no device.

Workers: each worker process opens its own device on its first block and keeps it (pyfftgl caches
one device per API per process); the blocks of one process run one at a time, on either API and
from any of its threads (on GL each thread gets a context of the library's share group), so dask's
threaded scheduler works too. A worker's extra threads only wait for the GPU: one thread per worker
(`--nthreads 1`, `LocalCluster(threads_per_worker=1)`) is enough. To put one worker on each GPU,
start one worker per GPU with that GPU named in its environment:

    PYFFTGL_VULKAN_DEVICE=0 dask worker tcp://scheduler:8786 --nworkers 1 --nthreads 1 &
    PYFFTGL_VULKAN_DEVICE=1 dask worker tcp://scheduler:8786 --nworkers 1 --nthreads 1 &

PYFFTGL_VULKAN_DEVICE is a Vulkan device index, as `vulkaninfo --summary` numbers them (GPU0, GPU1,
...), or a substring of the device's name. For the GL backend, ModernGL's EGL context reads
GLCONTEXT_DEVICE_INDEX, an index into EGL's device list (eglQueryDevicesEXT; its order need not be
Vulkan's). On one host, a distributed.SpecCluster of one Nanny per GPU does the same, each with
`options={"nthreads": 1, "env": {"PYFFTGL_VULKAN_DEVICE": "<i>"}}` (tests/test_dask.py starts one);
LocalCluster's `env=` gives every worker the same environment.
"""
from __future__ import annotations

import functools

import numpy as np

try:
    import dask.array as _da
    from dask.array.fft import fft_wrap
except ImportError as e:  # the extra is optional; say how to get it
    raise ImportError(f"pyfftgl.dask needs dask ({e}); pip install 'pyfftgl[dask]'") from e

from . import numpy_fft
from . import backends as _backends
from . import dask_pencil
from .kinds import KINDS, ONE_AXIS as _ONE_AXIS

__all__ = list(KINDS) + ["fftconvolve"]


def _backend_name(backend):
    """The backend as a name the workers can open: a Device belongs to this process only."""
    if backend is None:
        backend = _backends.default_backend()
    if backend not in _backends.BACKENDS + ("auto",):
        raise ValueError(f"backend must be one of {_backends.BACKENDS + ('auto',)} for dask "
                         f"(each worker opens its own device), got {backend!r}")
    return backend


def _out_dtype(func, dtype, naxes: int, norm) -> np.dtype:
    """func's output dtype for `dtype` input over `naxes` axes, with pyfftgl's own checks (dtype,
    norm): an empty batch of naxes-D lines is returned without any device work."""
    sample = np.zeros((0,) + (8,) * naxes, dtype)
    if func.__name__ in _ONE_AXIS:
        return func(sample, axis=1, norm=norm).dtype
    return func(sample, axes=tuple(range(1, naxes + 1)), norm=norm).dtype


def _transform(name, a, size, axes, norm, backend, **chunked):
    """dask's fft_wrap of pyfftgl's `name` with its backend bound and its dtype known where the
    transformed axes are whole, else dask_pencil's slab/pencil stages (`chunked`: their
    out_chunks, decomposition, max_block_bytes); `size` and `axes` are (n, axis) for the
    one-axis functions, else (s, axes)."""
    a = _da.asarray(a)
    func = getattr(numpy_fft, name)
    if name in _ONE_AXIS:
        naxes = 1
    elif axes is not None:
        naxes = len(axes)
    elif name.endswith("2"):
        naxes = 2
    else:
        naxes = a.ndim if size is None else len(size)
    dtype = _out_dtype(func, a.dtype, naxes, norm)
    backend = _backend_name(backend)
    whole_axes, target = dask_pencil.resolve_axes(name, a.shape, size, axes)
    if any(len(a.chunks[ax]) > 1 for ax in whole_axes):
        return dask_pencil.transform(a, name, whole_axes, target, norm, backend, dtype, **chunked)
    block = functools.partial(dask_pencil.transform_block, name=name, backend=backend)
    block.__name__ = name  # fft_wrap names its result after the function
    y = fft_wrap(block, kind=name, dtype=dtype)(a, size, axes, norm)
    out_chunks = chunked.get("out_chunks")
    return y if out_chunks is None or isinstance(out_chunks, str) else y.rechunk(out_chunks)


def _one_axis(name):
    def transform(a, n=None, axis=-1, norm=None, *, backend=None, out_chunks=None,
                  max_block_bytes=None):
        return _transform(name, a, n, axis, norm, backend, out_chunks=out_chunks,
                          max_block_bytes=max_block_bytes)
    transform.__name__ = transform.__qualname__ = name
    transform.__doc__ = (f"pyfftgl.{name} over a dask array whose `axis` is one chunk: "
                         f"numpy.fft.{name}'s arguments, plus `backend` (a name).")
    return transform


def _many_axes(name):
    def transform(a, s=None, axes=None, norm=None, *, backend=None, out_chunks=None,
                  decomposition="auto", max_block_bytes=None):
        return _transform(name, a, s, axes, norm, backend, out_chunks=out_chunks,
                          decomposition=decomposition, max_block_bytes=max_block_bytes)
    transform.__name__ = transform.__qualname__ = name
    transform.__doc__ = (f"pyfftgl.{name} over a dask array whose transformed axes are one chunk "
                         f"each: numpy.fft.{name}'s arguments, plus `backend` (a name).")
    return transform


# fft, ifft, ..., irfftn: one per kind of the table
_FUNCTIONS = {name: (_many_axes if spec.nd else _one_axis)(name) for name, spec in KINDS.items()}
globals().update(_FUNCTIONS)


def fftconvolve(in1, in2, mode="full", axes=None, *, backend=None, max_block_bytes=None):
    """scipy.signal.fftconvolve of two dask arrays of equal ndim, the convolved axes chunked as
    you like: both spectra stay in the transposed layout (no all-to-all back), are multiplied,
    and the inverse returns to in1's layout; lengths are exact sums (no fast-length padding)."""
    in1, in2 = _da.asarray(in1), _da.asarray(in2)
    if in1.ndim != in2.ndim:
        raise ValueError("in1 and in2 should have the same dimensionality")
    if mode not in ("full", "same", "valid"):
        raise ValueError("acceptable mode flags are 'valid', 'same', or 'full'")
    axes = tuple(range(in1.ndim)) if axes is None else tuple(a % in1.ndim for a in
                                                              np.atleast_1d(axes))
    if any(in1.shape[a] != in2.shape[a] and 1 not in (in1.shape[a], in2.shape[a])
           for a in range(in1.ndim) if a not in axes):
        raise ValueError("incompatible shapes for in1 and in2: "
                         f"{in1.shape} and {in2.shape}")
    if mode == "valid" and any(in2.shape[a] > in1.shape[a] for a in axes):
        in1, in2 = in2, in1  # scipy swaps, for one input at least as large in every axis
    s = tuple(in1.shape[a] + in2.shape[a] - 1 for a in axes)
    real = not (np.iscomplexobj(in1._meta) or np.iscomplexobj(in2._meta))
    fwd, inv = (_FUNCTIONS["rfftn"], _FUNCTIONS["irfftn"]) if real else (
        _FUNCTIONS["fftn"], _FUNCTIONS["ifftn"])
    kw = {"axes": axes, "backend": backend, "max_block_bytes": max_block_bytes}
    f1 = fwd(in1, s=s, out_chunks="transposed", **kw)
    f2 = fwd(in2, s=s, out_chunks="transposed", **kw)
    product = f1 * f2.rechunk(tuple(c1 if n1 == n2 else (n2,) for c1, n1, n2
                                    in zip(f1.chunks, f1.shape, f2.shape)))
    full = inv(product, s=s, out_chunks="transposed", **kw)
    if mode == "full":
        return full
    want = [in1.shape[a] if mode == "same" else in1.shape[a] - in2.shape[a] + 1 for a in axes]
    index = [slice(None)] * full.ndim
    for a, n, w in zip(axes, s, want):
        start = (n - w) // 2
        index[a] = slice(start, start + w)
    return full[tuple(index)]
