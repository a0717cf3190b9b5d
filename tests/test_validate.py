"""Bad input raises numpy's exception types before any GPU work."""
import numpy as np
import pytest

import pyfftgl
import pyfftgl.plan


@pytest.fixture(autouse=True)
def no_gpu_work(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("GPU work started for invalid input")
    monkeypatch.setattr(pyfftgl._api, "cached_steps_plan", refuse)


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


@pytest.mark.parametrize("dtype", [np.float64, np.complex128, np.int64, np.bool_])
def test_double_precision_is_refused_until_supported(dtype):
    with pytest.raises(TypeError, match="single precision"):
        pyfftgl.fft(np.ones(8, dtype))


def test_line_beyond_the_buffer_limit_is_refused_before_allocating(monkeypatch):
    monkeypatch.undo()  # planning runs, but must stop before any buffer or dispatch
    from pyfftgl.backends.base import Limits
    tiny = Limits(32768, 1024, (1024, 1024, 64), (65535, 65535, 65535), 4096)
    with pytest.raises(ValueError, match=r"largest storage buffer \(4096 bytes\)"):
        pyfftgl.FFTPlan(1024, 1, False, limits=tiny)
