"""Device-resident arrays: data that stays on the GPU between transforms."""
from __future__ import annotations

import math

import numpy as np

from ._validate import complex_dtype, real_of
from .backends import get_device
from .planner import precision_of

_SUPPORTED = (np.complex64, np.float32, np.complex128, np.float64)


class DeviceArray:
    """A C-contiguous complex64, float32, complex128 or float64 array in a device buffer.

    Transforms of a DeviceArray return DeviceArrays with no host transfer when the data needs no
    host-side preparation (no cropping or padding, even real lengths on the innermost axis);
    other cases go through the host and say so in their docstrings. Double-precision arrays are
    transformed in double precision, on devices that have it.
    """

    def __init__(self, buffer, shape, dtype, device):
        self._buffer, self.shape = buffer, tuple(shape)
        self.dtype, self.device = np.dtype(dtype), device
        # An attribute, not a property: a Plan's replayed call reads it with no function call.
        self.closed = False

    @property
    def buffer(self):
        """The device buffer; ValueError once closed (before any GPU work touches it)."""
        if self._buffer is None:
            raise ValueError(f"this DeviceArray {self.shape} {self.dtype} was closed; its device "
                             "memory is released")
        return self._buffer

    def close(self) -> None:
        """Drop this array's device buffer: its memory is released once no other array (a view)
        or recorded submission uses it. Using the array afterwards raises ValueError."""
        self._buffer, self.closed = None, True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    ndim = property(lambda self: len(self.shape))
    size = property(lambda self: math.prod(self.shape))  # a Python int: cheap per call
    nbytes = property(lambda self: self.size * self.dtype.itemsize)

    def get(self) -> np.ndarray:
        """A host copy (numpy array) of the data."""
        flat = self.device.read(self.buffer, self.nbytes // 4)
        return flat.view(self.dtype).reshape(self.shape)

    def __array__(self, dtype=None, copy=None):
        a = self.get()
        return a if dtype is None else a.astype(dtype)

    def view(self, dtype) -> "DeviceArray":
        """The same bytes as another of the supported dtypes (the last axis rescaled)."""
        dtype = np.dtype(dtype)
        last = self.shape[-1] * self.dtype.itemsize // dtype.itemsize
        if last * dtype.itemsize != self.shape[-1] * self.dtype.itemsize:
            raise ValueError("the last axis does not divide into the new dtype")
        return DeviceArray(self.buffer, self.shape[:-1] + (last,), dtype, self.device)

    def __repr__(self):
        if self.closed:
            return f"<DeviceArray shape={self.shape} dtype={self.dtype}, closed>"
        return (f"<DeviceArray shape={self.shape} dtype={self.dtype} on "
                f"{self.device.info.api}:{self.device.info.name}>")


def asarray(a, dtype=None, backend=None) -> DeviceArray:
    """Copy an array to the device, where transforms of it need no host transfer.

    Parameters
    ----------
    a : array_like or DeviceArray
        The data (any byte order or layout; the caller's array is not modified). A DeviceArray
        already on the device and of `dtype` is returned as is; one on another device is
        copied through the host.
    dtype : {complex64, float32, complex128, float64}, optional
        The dtype on the device. Default: as numpy.fft computes `a` (complex64 or float32 for
        float16/float32/complex64 data, complex128 or float64 for the rest).
    backend : {"vulkan", "gl", "auto"}, Device or None, optional
        The device, as the transforms take it.

    Returns
    -------
    DeviceArray
        ``.get()`` copies it back (waiting for the GPU); ``.close()`` frees it.

    Raises
    ------
    TypeError
        Another dtype, or double precision on a device without fp64 (PrecisionUnavailable).
    BackendUnavailable, MemoryError
        No usable backend, or not enough device memory.

    Examples
    --------
    >>> import numpy as np, pyfftgl
    >>> d = pyfftgl.asarray(np.ones((4, 256), np.float32))
    >>> f = pyfftgl.rfft(d)          # a DeviceArray: stays on the device
    >>> f.shape, f.dtype, np.allclose(f.get()[:, 0], 256)
    ((4, 129), dtype('complex64'), True)
    """
    device = get_device(backend if backend is not None or not isinstance(a, DeviceArray)
                        else a.device)
    if isinstance(a, DeviceArray) and a.device is device and (dtype is None or a.dtype == dtype):
        return a
    host = np.asarray(a.get() if isinstance(a, DeviceArray) else a)
    if dtype is None:
        dtype = complex_dtype(host.dtype)
        dtype = dtype if host.dtype.kind == "c" else real_of(dtype)
    if np.dtype(dtype).type not in _SUPPORTED:
        raise TypeError(f"device arrays hold complex64, float32, complex128 or float64, not "
                        f"{np.dtype(dtype)}")
    device.check_precision(precision_of(dtype))
    host = np.ascontiguousarray(host, dtype=dtype)
    return DeviceArray(device.buffer(max(host.nbytes, 4), host.view(np.float32).ravel(),
                                     device_only=True), host.shape, dtype, device)
