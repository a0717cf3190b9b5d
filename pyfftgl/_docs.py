"""The numpy-style docstrings of the public transforms, assembled from shared parameter text
(as numpy's _add_newdocs keeps long docs apart from code), so numpy_fft.py stays code."""
from __future__ import annotations

import textwrap

from .kinds import KINDS

_A = """a : array_like or DeviceArray
    Input data. numpy arrays in any byte order and layout are copied to the device (the
    caller's array is never modified); a DeviceArray (pyfftgl.asarray) stays on it."""
_A_REAL = """a : array_like or DeviceArray
    Real input data (complex input raises TypeError, as numpy's does)."""
_A_HALF = """a : array_like or DeviceArray
    The non-negative-frequency half of a Hermitian spectrum, as rfft{dims} returns it."""
_A_HERMITIAN = """a : array_like or DeviceArray
    The non-negative-time half of a Hermitian signal, as ihfft returns it."""
_N = """n : int, optional
    Length of the transformed axis of the {what}: the input is cropped, or zero-padded at
    the end, to it. Default: {default}."""
_AXIS = """axis : int, optional
    Axis over which to transform. Default: the last (-1)."""
_S = """s : sequence of ints, optional
    Length of each transformed axis of the {what}; the input is cropped or zero-padded to it
    (-1 keeps an axis' length).{extra} Default: the input's lengths along `axes`."""
_AXES = """axes : sequence of ints, optional
    Axes over which to transform, in any order, negative or repeated. Default: {default}."""
_NORM = """norm : {"backward", "ortho", "forward"}, optional
    Which direction is scaled: "backward" (the default) scales the inverse by 1/n, "ortho"
    both by 1/sqrt(n), "forward" the forward transform by 1/n."""
_OUT = """out : ndarray or DeviceArray, optional
    Array to write the result into: of the result's shape and a dtype the result casts to
    ("same_kind"). With DeviceArray input, a DeviceArray on the same device."""
_BACKEND = """backend : {"vulkan", "gl", "auto"}, Device or None, keyword-only
    The graphics API to compute with. None takes the default that set_backend chose, else
    "auto": Vulkan, then OpenGL."""

_RETURNS_COMPLEX = """out : ndarray or DeviceArray
    The transform{shape}. complex64 for float16, float32 and complex64 input, computed in
    single precision; complex128 for float64, complex128, integer and bool input, computed in
    double precision. A DeviceArray for DeviceArray input."""
_RETURNS_REAL = """out : ndarray or DeviceArray
    The real result{shape}. float32 for single-precision input (float16 for float16 input
    transformed along one axis, as numpy's), float64 for double, integer and bool input. A
    DeviceArray for DeviceArray input."""

_RAISES = """ValueError
    A length below 1 (n or s), an invalid norm, s and axes of different lengths, an out of
    the wrong shape, or a closed DeviceArray.
numpy.exceptions.AxisError
    An axis outside the input's dimensions (an IndexError, as numpy's).
TypeError
    A dtype numpy.fft refuses (object, strings, datetimes), {complex}an out the result does
    not cast to, long double input, or double precision on a device without fp64
    (PrecisionUnavailable).
BackendUnavailable
    No usable backend; the message says what to install.
MemoryError, DeviceError
    The device ran out of memory, or its driver failed the work."""

_NOTES = """Every check runs before any GPU work, with numpy's exception types (and messages).
The plan for each shape is built once and kept in pyfftgl.plan_cache; pyfftgl.plan holds one
for a loop. With numpy input the call returns the result on the host; with a DeviceArray it
returns once the work is queued, {device}"""
_DEVICE_C2C = """with no host transfer unless `{lengths}` crops or pads, an axis repeats or
the input is real (those go through the host)."""
_DEVICE_R2C = """with no host transfer when the real input's innermost axis is the last
transformed one and of even length, and nothing is cropped or padded (else through the host)."""
_DEVICE_C2R = """with no host transfer when the output's innermost axis is the last transformed
one and of even length, and the other axes keep their lengths (else through the host)."""
_DEVICE_HOST = """through the host (a conjugation and a real result: no device-only path)."""

_DOCS = {
    "fft": ("Compute the one-dimensional discrete Fourier transform, as numpy.fft.fft.",
            "c2c1", "x = np.exp(2j * np.pi * np.arange(8) / 8).astype(np.complex64)",
            "y = pyfftgl.fft(x)  # one cycle: all in frequency 1",
            "np.allclose(y, [0, 8, 0, 0, 0, 0, 0, 0], atol=1e-5)", "ifft, fftn, rfft"),
    "ifft": ("Compute the one-dimensional inverse discrete Fourier transform, as "
             "numpy.fft.ifft.", "c2c1", "x = np.arange(8, dtype=np.complex64)",
             "y = pyfftgl.ifft(pyfftgl.fft(x))", "np.allclose(y, x, atol=1e-5)", "fft, irfft"),
    "fft2": ("Compute the two-dimensional discrete Fourier transform, as numpy.fft.fft2.",
             "c2cn", "x = np.random.default_rng(0).random((64, 48)).astype(np.float32)",
             "y = pyfftgl.fft2(x)", "y.dtype, np.allclose(y, np.fft.fft2(x), atol=1e-3)",
             "ifft2, fftn, rfft2"),
    "ifft2": ("Compute the two-dimensional inverse discrete Fourier transform, as "
              "numpy.fft.ifft2.", "c2cn", "x = np.random.default_rng(0).random((64, 48))",
              "y = pyfftgl.ifft2(pyfftgl.fft2(x))", "y.dtype, np.allclose(y, x)", "fft2, irfft2"),
    "fftn": ("Compute the N-dimensional discrete Fourier transform, as numpy.fft.fftn.",
             "c2cn", "x = np.ones((4, 8, 16), np.complex64)",
             "y = pyfftgl.fftn(x, axes=(0, 2))", "y[0, :, 0].real  # each line's sum, 4 * 16",
             "ifftn, fft2, rfftn"),
    "ifftn": ("Compute the N-dimensional inverse discrete Fourier transform, as "
              "numpy.fft.ifftn.", "c2cn", "x = np.random.default_rng(0).random((8, 8, 8))",
              "y = pyfftgl.ifftn(pyfftgl.fftn(x))", "np.allclose(y, x)", "fftn, irfftn"),
    "rfft": ("Compute the one-dimensional discrete Fourier transform of real input, as "
             "numpy.fft.rfft: the n // 2 + 1 non-negative frequencies.", "r2c1",
             "x = np.random.default_rng(0).standard_normal(1000).astype(np.float32)",
             "y = pyfftgl.rfft(x)", "y.shape, y.dtype, np.allclose(y, np.fft.rfft(x), atol=1e-3)",
             "irfft, fft, rfftn"),
    "irfft": ("Compute the inverse of rfft, as numpy.fft.irfft: n real samples from the "
              "non-negative frequencies of a Hermitian spectrum.", "c2r1",
              "x = np.random.default_rng(0).standard_normal(1000).astype(np.float32)",
              "y = pyfftgl.irfft(pyfftgl.rfft(x), n=1000)",
              "y.shape, y.dtype, np.allclose(y, x, atol=1e-5)", "rfft, ifft, irfftn"),
    "rfft2": ("Compute the two-dimensional discrete Fourier transform of real input, as "
              "numpy.fft.rfft2: the last axis keeps its non-negative frequencies.", "r2cn",
              "x = np.random.default_rng(0).random((512, 512)).astype(np.float32)",
              "y = pyfftgl.rfft2(x)",
              "y.shape, np.allclose(y, np.fft.rfft2(x), atol=1e-2)", "irfft2, fft2, rfftn"),
    "irfft2": ("Compute the inverse of rfft2, as numpy.fft.irfft2.", "c2rn",
               "x = np.random.default_rng(0).random((64, 50)).astype(np.float32)",
               "y = pyfftgl.irfft2(pyfftgl.rfft2(x), s=x.shape)",
               "y.shape, np.allclose(y, x, atol=1e-5)", "rfft2, ifft2, irfftn"),
    "rfftn": ("Compute the N-dimensional discrete Fourier transform of real input, as "
              "numpy.fft.rfftn: the last transformed axis keeps its non-negative frequencies.",
              "r2cn", "x = np.random.default_rng(0).random((16, 32, 64))",
              "y = pyfftgl.rfftn(x, axes=(0, 2))",
              "y.shape, y.dtype, np.allclose(y, np.fft.rfftn(x, axes=(0, 2)))",
              "irfftn, fftn, rfft2"),
    "irfftn": ("Compute the inverse of rfftn, as numpy.fft.irfftn.", "c2rn",
               "x = np.random.default_rng(0).random((16, 32, 64))",
               "y = pyfftgl.irfftn(pyfftgl.rfftn(x), s=x.shape, axes=(0, 1, 2))",
               "np.allclose(y, x)",
               "rfftn, ifftn, irfft2"),
    "hfft": ("Compute the FFT of a signal with Hermitian symmetry, as numpy.fft.hfft: a real "
             "spectrum of n points from the signal's non-negative-time half.", "c2r1",
             "x = np.array([1, 2, 3, 2], np.float32)  # half of the Hermitian 1 2 3 2 2 3",
             "y = pyfftgl.hfft(x)", "np.allclose(y, np.fft.hfft(x), atol=1e-5)", "ihfft, irfft"),
    "ihfft": ("Compute the inverse FFT of a signal with a real spectrum, as numpy.fft.ihfft: "
              "the n // 2 + 1 non-negative-time values of a Hermitian signal.", "r2c1",
              "x = np.array([15, -4, 0, -1, 0, -4], np.float32)",
              "y = pyfftgl.ihfft(x)", "np.allclose(pyfftgl.hfft(y, 6), x, atol=1e-5)",
              "hfft, rfft"),
}


def _block(text: str) -> str:
    """Entries "name : type" over indented descriptions, each description refilled (the
    formatted-in phrases make lines of any length)."""
    out, desc = [], []

    def flush():
        if desc:
            out.append(textwrap.fill(" ".join(desc), 92, initial_indent="    ",
                                     subsequent_indent="    ", break_on_hyphens=False))
            desc.clear()
    for line in text.splitlines():
        if line.startswith(" "):
            desc.append(line.strip())
        else:
            flush()
            out.append(line)
    flush()
    return "\n".join(out)


def docstring(kind: str) -> str:
    """The docstring of pyfftgl.<kind>."""
    summary, family, setup, call, check, see = _DOCS[kind]
    one_axis, real_in, real_out = family.endswith("1"), family.startswith("r2c"), \
        family.startswith("c2r")
    dims = "" if one_axis else ("n" if kind.endswith("n") else "2")
    what = "output" if real_out else "input"
    a = (_A_HERMITIAN if kind == "hfft" else _A_HALF.format(dims=dims) if real_out else
         _A_REAL if real_in else _A)
    params = [a]
    if one_axis:
        default = ("2 * (m - 1) for an input axis of length m" if real_out
                   else "the input's length along `axis`")
        params += [_N.format(what=what, default=default), _AXIS]
    else:
        extra = (" The last is the real output's length (its input holds s[-1]//2+1 values)."
                 if real_out else "")
        params += [_S.format(what=what, extra=extra),
                   _AXES.format(default="the last two, (-2, -1)" if dims == "2"
                                else "all, or the last len(s) when s is given")]
    params += [_NORM, _OUT, _BACKEND]
    if real_out:
        length = "n" if one_axis else "s[-1]"
        shape = f", of length {length} along the last transformed axis"
        returns = _RETURNS_REAL.format(shape=shape)
    else:
        shape = (", n // 2 + 1 long along the last transformed axis" if real_in else
                 ", of the input's shape with `n` or `s` applied")
        returns = _RETURNS_COMPLEX.format(shape=shape)
    complex_note = "complex input (rfft functions), " if real_in else ""
    device = (_DEVICE_HOST if KINDS[kind].conjugate else _DEVICE_R2C if real_in else
              _DEVICE_C2R if real_out else _DEVICE_C2C.format(lengths="n" if one_axis else "s"))
    lines = [summary, "", "Parameters", "----------", *map(_block, params), "", "Returns",
             "-------", _block(returns), "", "Raises", "------",
             _block(_RAISES.format(complex=complex_note)), "", "See Also", "--------", see, "",
             "Notes", "-----", textwrap.fill(_NOTES.format(device=device), 96), "", "Examples",
             "--------",
             ">>> import numpy as np, pyfftgl", f">>> {setup}", f">>> {call}", f">>> {check}",
             _EXPECTED[kind]]
    return "\n".join(lines) + "\n"


_EXPECTED = {
    "fft": "True", "ifft": "True", "fft2": "(dtype('complex64'), True)",
    "ifft2": "(dtype('complex128'), True)", "fftn": "array([64., 64., 64., 64., 64., 64., "
    "64., 64.], dtype=float32)", "ifftn": "True", "rfft": "((501,), dtype('complex64'), True)",
    "irfft": "((1000,), dtype('float32'), True)", "rfft2": "((512, 257), True)",
    "irfft2": "((64, 50), True)", "rfftn": "((16, 32, 33), dtype('complex128'), True)",
    "irfftn": "True", "hfft": "True", "ihfft": "True",
}
