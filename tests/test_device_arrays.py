"""Device-resident arrays: transforms stay on the device."""
import contextlib

import numpy as np
import pytest

import pyfftgl
from pyfftgl import DeviceArray
from conftest import assert_accurate, random_complex


@pytest.mark.quick
def test_round_trip_through_the_device(backend):
    x = random_complex((6, 40), seed=1)
    d = pyfftgl.asarray(x, backend=backend)
    assert isinstance(d, DeviceArray) and d.shape == (6, 40) and d.dtype == np.complex64
    assert np.array_equal(d.get(), x)
    assert pyfftgl.asarray(d, backend=backend) is d


@contextlib.contextmanager
def no_host_transfer(device):
    """Fail where data came back to the host inside: the device counts every device-to-host
    transfer of the protocol (reads, and each download of a submission's runs). Uploads are
    allowed: a first call plans, and a plan uploads its tables."""
    before = device.host_transfers["to_host"]
    yield
    assert device.host_transfers["to_host"] == before, "host transfer"


@pytest.mark.quick
def test_transforms_of_device_arrays_stay_on_the_device(backend):
    x = random_complex((8, 64), seed=2)
    r = np.random.default_rng(3).standard_normal((8, 64)).astype(np.float32)
    d, dr = pyfftgl.asarray(x, backend=backend), pyfftgl.asarray(r, backend=backend)
    with no_host_transfer(d.device):
        y = pyfftgl.fft2(d)
        z = pyfftgl.ifftn(y)
        f = pyfftgl.rfft(dr)
        g = pyfftgl.irfft(f, n=64)
        h = pyfftgl.rfft2(dr)
    for out in (y, z, f, g, h):
        assert isinstance(out, DeviceArray)
    assert_accurate(y.get(), np.fft.fft2(x.astype(np.complex128)), 8 * 64)
    assert_accurate(z.get(), x.astype(np.complex128), 8 * 64, 1.5)
    assert f.shape == (8, 33) and g.shape == (8, 64) and g.dtype == np.float32
    assert_accurate(f.get(), np.fft.rfft(r.astype(np.float64)), 64)
    assert_accurate(g.get(), r.astype(np.complex128), 64, 1.5)
    assert_accurate(h.get(), np.fft.rfft2(r.astype(np.float64)), 8 * 64)
    assert np.array_equal(d.get(), x)  # the input buffer is untouched


def test_cases_that_need_the_host_still_work(backend):
    x = random_complex((5, 30), seed=4)
    d = pyfftgl.asarray(x, backend=backend)
    got = pyfftgl.fft(d, n=45)  # zero padding happens on the host
    assert isinstance(got, DeviceArray)
    assert_accurate(got.get(), np.fft.fft(x.astype(np.complex128), n=45), 45, 2.0)
    assert_accurate(pyfftgl.hfft(d).get(), np.fft.hfft(x.astype(np.complex128)), 58)
    with pytest.raises(TypeError):
        pyfftgl.asarray(np.ones(3), dtype=np.float16)


def test_out_device_array_is_reused_and_validated(backend):
    x = random_complex((16, 128), seed=5)
    r = np.random.default_rng(6).standard_normal((16, 128)).astype(np.float32)
    d, dr = pyfftgl.asarray(x, backend=backend), pyfftgl.asarray(r, backend=backend)
    out = pyfftgl.asarray(np.zeros_like(x), backend=backend)
    half = pyfftgl.asarray(np.zeros((16, 65), np.complex64), backend=backend)
    real = pyfftgl.asarray(np.zeros((16, 128), np.float32), backend=backend)
    p = pyfftgl.plan(x.shape, np.complex64, kind="fft", backend=backend)
    with no_host_transfer(d.device):
        for _ in range(3):  # replays of one recorded submission, results written into `out`
            assert p(d, out=out) is out
        assert pyfftgl.rfft(dr, out=half) is half
        assert pyfftgl.irfft(half, n=128, out=real) is real
    assert_accurate(out.get(), np.fft.fft(x.astype(np.complex128)), 128)
    assert_accurate(half.get(), np.fft.rfft(r.astype(np.float64)), 128)
    assert_accurate(real.get(), r.astype(np.float64), 128, 1.5)
    assert np.array_equal(d.get(), x) and np.array_equal(dr.get(), r)
    with pytest.raises(ValueError, match="wrong shape"):
        pyfftgl.fft(d, out=half)
    with pytest.raises(ValueError, match="in-place"):
        pyfftgl.fft(d, out=d)
    with pytest.raises(TypeError, match="DeviceArray"):
        pyfftgl.fft(d, out=np.zeros_like(x))
    assert np.array_equal(d.get(), x)


def test_plan_keeps_its_device_plans_when_the_cache_drops_them(backend):
    x = random_complex((4, 96), seed=7)
    d = pyfftgl.asarray(x, backend=backend)
    p = pyfftgl.plan(x.shape, np.complex64, kind="fft", backend=backend)
    pyfftgl.plan_cache.clear()
    misses = pyfftgl.plan_cache.stats()["misses"]
    y = p(d)
    assert pyfftgl.plan_cache.stats()["misses"] == misses  # nothing was planned again
    assert_accurate(y.get(), np.fft.fft(x.astype(np.complex128)), 96)


def test_results_without_out_are_independent_arrays(backend):
    # dst=None calls share the plan's scratch buffer and copy out of it: earlier results must
    # survive later calls, in flight or not.
    xs = [random_complex((8, 64), seed=s) for s in range(4)]
    ds = [pyfftgl.asarray(x, backend=backend) for x in xs]
    ys = [pyfftgl.fft(d) for d in ds]
    assert len({id(y.buffer) for y in ys}) == 4
    for x, y in zip(xs, ys):
        assert_accurate(y.get(), np.fft.fft(x.astype(np.complex128)), 64)
