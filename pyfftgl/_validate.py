"""numpy.fft-exact argument checking and dtype rules (pure Python, before any GPU work)."""
from __future__ import annotations

import operator
import warnings

import numpy as np

NORMS = ("backward", "ortho", "forward")


def as_array(a, name: str = "fft") -> np.ndarray:
    """The input as an ndarray in native byte order (a copy where it was not: FITS data is
    big-endian), rejecting dtypes numpy.fft rejects, with numpy's exception types."""
    arr = np.asarray(a)
    if not arr.dtype.isnative:  # numpy.fft takes it; the kernels read native floats
        arr = arr.astype(arr.dtype.newbyteorder("="))
    kind = arr.dtype.kind
    if arr.ndim == 0:  # numpy.fft looks at the axes first: the caller raises its IndexError
        return arr
    if kind in "USMmV":
        # numpy 2 raises DTypePromotionError (a TypeError) when it promotes these with a float:
        # numpy's own error, word for word.
        np.result_type(arr.dtype, 1.0)
        raise np.exceptions.DTypePromotionError(
            f"The DType {type(arr.dtype)} could not be promoted by {type(np.dtype(float))}. "
            "pyfftgl transforms numeric arrays only.")
    if kind == "O":
        raise TypeError(
            f"ufunc '{name}' not supported for the input types, and the inputs could not be "
            "safely coerced to any supported types according to the casting rule ''safe''")
    return arr


def norm(value, inverse: bool = False) -> str:
    """`value` checked; numpy's message for inverse transforms (its _swap_direction) has one
    more space than for forward ones."""
    if value is None:
        return "backward"
    if value not in NORMS:
        sep = ", " if inverse else ","
        raise ValueError(f'Invalid norm value {value}; should be "backward"{sep}"ortho" or '
                         '"forward".')
    return value


def axis(value, ndim: int) -> int:
    """A non-negative axis. numpy.fft raises IndexError for an axis outside a.shape; AxisError is
    both an IndexError and a ValueError, as numpy's own axis checks raise."""
    try:
        ax = operator.index(value)
    except TypeError:
        raise TypeError("tuple indices must be integers or slices, "
                        f"not {type(value).__name__}") from None
    if not -ndim <= ax < ndim:
        raise np.exceptions.AxisError(ax, ndim)
    return ax % ndim


def shape_and_axes(arr: np.ndarray, s, axes, invreal: bool = False) -> tuple[list[int], list[int]]:
    """numpy 2's (s, axes) for the N-D functions: defaults, the deprecated s-without-axes form,
    -1 (or None) for "the input's length", and the irfftn default for the last axis. The lengths
    are not checked here: numpy checks each as it transforms its axis (positive_length)."""
    shapeless, given = s is None, axes
    if not shapeless:
        s = list(s)
        if axes is not None and len(s) != len(axes):  # numpy's first check
            raise ValueError("Shape and axes have different lengths.")
    if axes is not None:
        axes = [axis(ax, arr.ndim) for ax in axes]
    if shapeless:
        s = list(arr.shape) if axes is None else [arr.shape[ax] for ax in axes]
    if axes is None:
        if not shapeless:
            warnings.warn("`axes` should not be `None` if `s` is not `None` (Deprecated in NumPy "
                          "2.0).", DeprecationWarning, stacklevel=6)
        if len(s) > arr.ndim:  # numpy's axes range(-len(s), 0) start out of bounds
            raise np.exceptions.AxisError(-len(s), arr.ndim)
        axes = list(range(arr.ndim - len(s), arr.ndim))
    if invreal and shapeless:
        if not axes:  # numpy reads a.shape[axes[-1]], of the caller's axes or its own list
            raise IndexError(f"{'tuple' if isinstance(given, tuple) else 'list'} index out of "
                             "range")
        s[-1] = (arr.shape[axes[-1]] - 1) * 2
    if None in s:
        warnings.warn("Passing an array containing `None` values to `s` is deprecated in NumPy "
                      "2.0 and will raise an error in a future version of NumPy. To use the "
                      "default behaviour of the corresponding 1-D transform, pass the value "
                      "matching the default for its `n` parameter. To use the default behaviour "
                      "for every axis, the `s` argument can be omitted.", DeprecationWarning,
                      stacklevel=6)
        if invreal and s[-1] is None:  # irfft's default length
            s[-1] = (arr.shape[axes[-1]] - 1) * 2
    out = [arr.shape[ax] if n is None or n == -1 else operator.index(n) for n, ax in zip(s, axes)]
    return out, axes


def positive_length(n: int) -> None:
    """numpy's check of a transform length, made as it transforms that axis."""
    if n < 1:
        raise ValueError(f"Invalid number of FFT data points ({n}) specified.")


def distinct_runs(pairs: list) -> list[list]:
    """Split (axis, n) pairs, in execution order, into runs without a repeated axis."""
    runs, seen = [[]], set()
    for ax, n in pairs:
        if ax in seen:
            runs.append([])
            seen = set()
        runs[-1].append((ax, n))
        seen.add(ax)
    return [r for r in runs if r]


def fit(x: np.ndarray, axes, sizes) -> np.ndarray:
    """x cropped or zero-padded to `sizes` along `axes`, as numpy.fft does with n / s."""
    for ax, n in zip(axes, sizes):
        m = x.shape[ax]
        if m > n:
            x = x[(slice(None),) * ax + (slice(0, n),)]
        elif m < n:
            shape = list(x.shape)
            shape[ax] = n
            y = np.zeros(shape, x.dtype)
            y[(slice(None),) * ax + (slice(0, m),)] = x
            x = y
    return x


def real_dtype(dtype: np.dtype, name: str, n: int = 0) -> None:
    """rfft-style functions take real input only (numpy's error names its ufunc for the length
    `n` of the last axis), of a precision pyfftgl computes."""
    if dtype.kind == "c":
        raise TypeError(
            f"ufunc 'rfft_n_{'odd' if n % 2 else 'even'}' not supported for the input types, and "
            "the inputs could not be safely coerced to any supported types according to the "
            "casting rule ''safe''")
    complex_dtype(dtype)


def length_arg(n, bool_ok: bool = False) -> int:
    """A 1-D function's `n` as an integer (its sign is checked later, in numpy's order). numpy's
    fft refuses a bool, its rfft takes one as 0 or 1."""
    if isinstance(n, (bool, np.bool_)) and not bool_ok:
        raise TypeError("an integer is required")
    return operator.index(n)


def complex_dtype(dtype: np.dtype) -> np.dtype:
    """The complex dtype numpy.fft returns for `dtype` input (numpy 2): complex64 for float16,
    float32 and complex64; complex128 for float64, complex128, integers and bools. Extended
    precision (longdouble), which numpy keeps, is refused: the kernels compute in float or
    double."""
    dtype = np.dtype(dtype)
    if not dtype.isnative:  # a plan for big-endian data: the same transform as native data
        dtype = dtype.newbyteorder("=")
    if dtype in (np.float16, np.float32, np.complex64):
        return np.dtype(np.complex64)
    if dtype.kind in "biu" or dtype in (np.float64, np.complex128):
        return np.dtype(np.complex128)
    result = np.result_type(dtype, np.complex64)
    raise TypeError(
        f"pyfftgl computes in single or double precision: numpy.fft would return {result} for "
        f"{dtype} input, which pyfftgl does not support. Pass float64 or complex128 data "
        "(e.g. a.astype(np.complex128)).")


def real_of(dtype: np.dtype) -> np.dtype:
    """The real dtype of a complex64 / complex128 result (irfft's output)."""
    return np.dtype(np.float64 if np.dtype(dtype) == np.complex128 else np.float32)
