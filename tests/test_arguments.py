"""Bad input raises numpy's exception types before any GPU work."""
import numpy as np
import pytest

import pyfftgl
import pyfftgl.plans


@pytest.fixture(autouse=True)
def no_gpu_work(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("GPU work started for invalid input")
    monkeypatch.setattr(pyfftgl.numpy_fft, "cached_steps_plan", refuse)


GOOD = np.ones(8, np.complex64)


@pytest.mark.parametrize("func", [pyfftgl.fft, pyfftgl.ifft])
@pytest.mark.parametrize("kwargs, exc", [
    (dict(n=0), ValueError),
    (dict(n=-4), ValueError),
    (dict(n=2.5), TypeError),
    (dict(norm="bad"), ValueError),
    (dict(norm="Ortho"), ValueError),
    (dict(axis=1), IndexError),
    (dict(axis=-2), IndexError),
    (dict(axis=0.5), TypeError),
])
def test_bad_arguments(func, kwargs, exc):
    with pytest.raises(exc):
        func(GOOD, **kwargs)
    with pytest.raises(exc):  # numpy agrees on the type
        getattr(np.fft, func.__name__)(GOOD, **kwargs)


@pytest.mark.parametrize("bad", [
    np.array([1, "a"], dtype=object),
    np.array([1.0, 2.0], dtype=object),
    np.array(["a", "b"]),
    np.array([b"a", b"b"]),
    np.array([1, 2], dtype="M8[s]"),
])
def test_bad_dtypes(bad):
    with pytest.raises(TypeError):
        pyfftgl.fft(bad)
    with pytest.raises(TypeError):
        np.fft.fft(bad)


def test_empty_and_scalar():
    with pytest.raises(ValueError, match=r"Invalid number of FFT data points \(0\)"):
        pyfftgl.fft(np.ones(0, np.complex64))
    with pytest.raises(IndexError):
        pyfftgl.fft(np.complex64(1))


def test_messages_match_numpy():
    for kwargs in (dict(n=0), dict(norm="bad")):
        with pytest.raises(ValueError) as ours:
            pyfftgl.fft(GOOD, **kwargs)
        with pytest.raises(ValueError) as theirs:
            np.fft.fft(GOOD, **kwargs)
        assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("dtype", [np.longdouble, np.clongdouble])
def test_extended_precision_is_refused(dtype):
    with pytest.raises(TypeError, match="single or double precision"):
        pyfftgl.fft(np.ones(8, dtype))


def test_line_beyond_the_buffer_limit_is_refused_before_allocating(monkeypatch):
    monkeypatch.undo()  # planning runs, but must stop before any buffer or dispatch
    from pyfftgl.limits import Limits
    tiny = Limits(32768, 1024, (1024, 1024, 64), (65535, 65535, 65535), 4096)
    with pytest.raises(ValueError, match=r"largest storage buffer \(4096 bytes\)"):
        pyfftgl.FFTPlan(1024, 1, False, limits=tiny)


ND = [pyfftgl.fftn, pyfftgl.ifftn, pyfftgl.rfftn, pyfftgl.irfftn, pyfftgl.fft2, pyfftgl.ifft2,
      pyfftgl.rfft2, pyfftgl.irfft2]
REAL2 = np.ones((4, 8), np.float32)


@pytest.mark.parametrize("func", ND, ids=lambda f: f.__name__)
@pytest.mark.parametrize("kwargs, exc", [
    (dict(s=(4, 8), axes=(0,)), ValueError),      # len(s) != len(axes)
    (dict(s=(0, 8), axes=(0, 1)), ValueError),    # n < 1
    (dict(axes=(0, 2)), IndexError),              # axis out of range
    (dict(norm="unit"), ValueError),
])
def test_nd_bad_arguments(func, kwargs, exc):
    with pytest.raises(exc):
        func(REAL2, **kwargs)
    with pytest.raises(exc):
        getattr(np.fft, func.__name__)(REAL2, **kwargs)


@pytest.mark.parametrize("name", ["rfft", "rfftn", "rfft2", "ihfft"])
def test_complex_input_to_real_transforms(name):
    with pytest.raises(TypeError):
        getattr(pyfftgl, name)(np.ones((4, 4), np.complex64))
    with pytest.raises(TypeError):
        getattr(np.fft, name)(np.ones((4, 4), np.complex64))


@pytest.mark.parametrize("name", ["fftn", "rfft", "irfft", "hfft", "fft2"])
def test_object_and_string_arrays_everywhere(name):
    for bad in (np.array([[1, "a"]], dtype=object), np.array([["a", "b"]])):
        with pytest.raises(TypeError):
            getattr(pyfftgl, name)(bad)


def test_input_left_unchanged_by_every_function(monkeypatch):
    monkeypatch.undo()  # this one runs the transforms
    x = np.arange(24, dtype=np.float32).reshape(4, 6)
    c = (x + 1j).astype(np.complex64)
    keep_x, keep_c = x.copy(), c.copy()
    for name in ("fft", "ifft", "fftn", "ifftn", "irfft", "hfft", "irfftn", "fft2"):
        getattr(pyfftgl, name)(c)
    for name in ("rfft", "rfftn", "ihfft", "rfft2"):
        getattr(pyfftgl, name)(x)
    assert np.array_equal(x, keep_x) and np.array_equal(c, keep_c)
