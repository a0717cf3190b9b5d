"""numpy.fft-exact argument checking and dtype rules (pure Python, before any GPU work)."""
from __future__ import annotations

import operator

import numpy as np

NORMS = ("backward", "ortho", "forward")


def as_array(a) -> np.ndarray:
    """The input as an ndarray, rejecting dtypes numpy.fft rejects, with numpy's exception types."""
    arr = np.asarray(a)
    kind = arr.dtype.kind
    if kind in "USMmV":
        # numpy 2 raises DTypePromotionError (a TypeError) when it promotes these with a float.
        raise np.exceptions.DTypePromotionError(
            f"The DType {type(arr.dtype)} could not be promoted by {type(np.dtype(float))}. "
            "pyfftgl transforms numeric arrays only.")
    if kind == "O":
        raise TypeError(
            "ufunc 'fft' not supported for the input types, and the inputs could not be safely "
            "coerced to any supported types according to the casting rule ''safe''")
    return arr


def norm(value) -> str:
    if value is None:
        return "backward"
    if value not in NORMS:
        raise ValueError(f'Invalid norm value {value}; should be "backward","ortho" or "forward".')
    return value


def axis(value, ndim: int) -> int:
    """A non-negative axis; numpy.fft raises IndexError for an axis outside a.shape."""
    try:
        ax = operator.index(value)
    except TypeError:
        raise TypeError(f"tuple indices must be integers or slices, not {type(value).__name__}") from None
    if not -ndim <= ax < ndim:
        raise IndexError("tuple index out of range")
    return ax % ndim


def length(n, default: int) -> int:
    """The transform length: `n` if given (an integer >= 1), else the axis length."""
    value = default if n is None else operator.index(n)
    if value < 1:
        raise ValueError(f"Invalid number of FFT data points ({value}) specified.")
    return value


def complex_dtype(dtype: np.dtype) -> np.dtype:
    """The complex dtype numpy.fft would return; pyfftgl computes it only in single precision."""
    if dtype in (np.float16, np.float32, np.complex64):
        return np.dtype(np.complex64)
    result = np.result_type(dtype, np.complex64)
    raise TypeError(
        f"pyfftgl computes in single precision: numpy.fft would return {result} for {dtype} input, "
        "which pyfftgl does not support yet. Pass float32 or complex64 data "
        "(e.g. a.astype(np.complex64)).")


def fit_length(x: np.ndarray, n: int) -> np.ndarray:
    """x (transform axis last) cropped or zero-padded to n along the last axis, as numpy does."""
    m = x.shape[-1]
    if m == n:
        return x
    if m > n:
        return x[..., :n]
    out = np.zeros(x.shape[:-1] + (n,), x.dtype)
    out[..., :m] = x
    return out
