"""pyfftgl's transforms over dask arrays, for batches larger than one machine or one GPU.

    import dask.array as da, pyfftgl.dask
    x = da.random.random((1024, 256, 256), chunks=(64, -1, -1)).astype("float32")
    y = pyfftgl.dask.rfft2(x)           # lazy; y.compute() runs the blocks on the workers

Each function is `dask.array.fft.fft_wrap` around the pyfftgl function of the same name, so the
signatures and rules are dask's: the transformed axes must each be one chunk (else dask's
ValueError; rechunk first), and every block is transformed by its own pyfftgl call. `backend=`
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
import threading

import numpy as np

try:
    import dask.array as _da
    from dask.array.fft import fft_wrap
except ImportError as e:  # the extra is optional; say how to get it
    raise ImportError(f"pyfftgl.dask needs dask ({e}); pip install 'pyfftgl[dask]'") from e

from . import _api
from . import backends as _backends
from .kinds import KINDS, ONE_AXIS as _ONE_AXIS

__all__ = list(KINDS)


def _backend_name(backend):
    """The backend as a name the workers can open: a Device belongs to this process only."""
    if backend is None:
        backend = _backends.default_backend()
    if backend not in _backends.BACKENDS + ("auto",):
        raise ValueError(f"backend must be one of {_backends.BACKENDS + ('auto',)} for dask "
                         f"(each worker opens its own device), got {backend!r}")
    return backend


# pyfftgl's devices and caches are not made for concurrent calls, and one GPU runs one block at a
# time anyway: blocks of one process (dask's threaded scheduler, a worker of several threads) queue.
_lock = threading.Lock()


def _block(a, *args, name, backend):
    """One block's transform on this process's device: the task that dask runs."""
    with _lock:
        return getattr(_api, name)(a, *args, backend=backend)


def _out_dtype(func, dtype, naxes: int, norm) -> np.dtype:
    """func's output dtype for `dtype` input over `naxes` axes, with pyfftgl's own checks (dtype,
    norm): an empty batch of naxes-D lines is returned without any device work."""
    sample = np.zeros((0,) + (8,) * naxes, dtype)
    if func.__name__ in _ONE_AXIS:
        return func(sample, axis=1, norm=norm).dtype
    return func(sample, axes=tuple(range(1, naxes + 1)), norm=norm).dtype


def _transform(name, a, size, axes, norm, backend):
    """dask's fft_wrap of pyfftgl's `name` with its backend bound and its dtype known; `size`
    and `axes` are (n, axis) for the one-axis functions, else (s, axes)."""
    a = _da.asarray(a)
    func = getattr(_api, name)
    if name in _ONE_AXIS:
        naxes = 1
    elif axes is not None:
        naxes = len(axes)
    elif name.endswith("2"):
        naxes = 2
    else:
        naxes = a.ndim if size is None else len(size)
    dtype = _out_dtype(func, a.dtype, naxes, norm)
    block = functools.partial(_block, name=name, backend=_backend_name(backend))
    block.__name__ = name  # fft_wrap names its result after the function
    return fft_wrap(block, kind=name, dtype=dtype)(a, size, axes, norm)


def _one_axis(name):
    def transform(a, n=None, axis=None, norm=None, *, backend=None):
        return _transform(name, a, n, axis, norm, backend)
    transform.__name__ = transform.__qualname__ = name
    transform.__doc__ = (f"pyfftgl.{name} over a dask array whose `axis` is one chunk: "
                         f"numpy.fft.{name}'s arguments, plus `backend` (a name).")
    return transform


def _many_axes(name):
    def transform(a, s=None, axes=None, norm=None, *, backend=None):
        return _transform(name, a, s, axes, norm, backend)
    transform.__name__ = transform.__qualname__ = name
    transform.__doc__ = (f"pyfftgl.{name} over a dask array whose transformed axes are one chunk "
                         f"each: numpy.fft.{name}'s arguments, plus `backend` (a name).")
    return transform


# fft, ifft, ..., irfftn: one per kind of the table
globals().update({name: (_many_axes if spec.nd else _one_axis)(name)
                  for name, spec in KINDS.items()})
