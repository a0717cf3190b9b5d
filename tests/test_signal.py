"""pyfftgl.signal's fftconvolve, oaconvolve and Convolver against scipy.signal, on both drivers;
scipy's own TestFFTConvolve and TestOAConvolve run against pyfftgl.signal (slow)."""
import gc
import os
import re

import numpy as np
import pytest
import scipy
import scipy.signal

import pyfftgl
import pyfftgl.signal as ps
from conftest import EPS32, run_installed_tests

MODES = ("full", "same", "valid")


def close(got, ref, rel):
    """dtype and shape as scipy's, and rel L2 error within `rel` of the float64 result."""
    got = got.get() if isinstance(got, pyfftgl.DeviceArray) else got
    assert got.dtype == ref.dtype and got.shape == ref.shape, (got.dtype, ref.dtype, got.shape)
    err = np.linalg.norm(got - ref) / np.linalg.norm(ref)
    assert err <= rel, f"rel L2 {err:.3e} > {rel:.3e}"


@pytest.mark.quick
@pytest.mark.parametrize("mode", MODES)
def test_every_mode_matches_scipy(backend, mode):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((20, 17)), rng.standard_normal((5, 4))
    ac = a + 1j * rng.standard_normal(a.shape)
    for f, g in ((ps.fftconvolve, scipy.signal.fftconvolve),
                 (ps.oaconvolve, scipy.signal.oaconvolve)):
        close(f(a, b, mode, backend=backend), g(a, b, mode), 1e-14)
        close(f(b, a, mode, backend=backend), g(b, a, mode), 1e-14)  # 'valid' swaps them
        # single precision: the float64 convolution of the same float32 data, in float32
        a32, b32 = a.astype(np.float32), b.astype(np.float32)
        close(f(a32, b32, mode, backend=backend), g(a, b, mode).astype(np.float32), 8 * EPS32)
        close(f(ac, b[:, :1], mode, axes=0, backend=backend), g(ac, b[:, :1], mode, axes=0), 1e-14)
        close(f(a, b[:1], mode, axes=1, backend=backend), g(a, b[:1], mode, axes=1), 1e-14)
        close(f(np.arange(9), np.arange(4), mode, backend=backend),
              g(np.arange(9), np.arange(4), mode), 1e-14)  # integers: float64 results


@pytest.mark.quick
def test_device_arrays_and_a_reused_kernel(backend):
    rng = np.random.default_rng(1)
    images = rng.standard_normal((3, 24, 30)).astype(np.float32)
    kernel = rng.standard_normal((7, 5)).astype(np.float32)
    blur = ps.Convolver(kernel, (24, 30), mode="same", backend=backend)
    for im in images:  # one kernel spectrum, three images
        ref = scipy.signal.fftconvolve(im.astype(np.float64), kernel.astype(np.float64), "same")
        close(blur(im), ref.astype(np.float32), 8 * EPS32)
    d = pyfftgl.asarray(images[0], backend=backend)
    out = ps.fftconvolve(d, kernel, "valid")
    assert isinstance(out, pyfftgl.DeviceArray) and out.shape == (18, 26)
    ref = scipy.signal.fftconvolve(images[0].astype(np.float64), kernel.astype(np.float64), "valid")
    close(out, ref.astype(np.float32), 8 * EPS32)
    assert np.array_equal(d.get(), images[0])  # inputs are never written


@pytest.mark.quick
def test_edge_cases_and_errors_as_scipy():
    assert ps.fftconvolve(np.float64(2.0), np.float64(3.0)) == 6.0
    assert ps.fftconvolve(np.zeros((0, 3)), np.ones((2, 2))).size == 0
    for args, kwargs in (((np.ones(3), np.ones((2, 2))), {}),
                         ((np.ones(4), np.ones(2)), {"mode": "bad"}),
                         ((np.ones((3, 5)), np.ones((5, 3))), {"mode": "valid"}),
                         ((np.ones((3, 4)), np.ones((2, 3))), {"axes": 0}),
                         ((np.ones(4), np.ones(2)), {"axes": []})):
        with pytest.raises(ValueError) as theirs:
            scipy.signal.fftconvolve(*args, **kwargs)
        with pytest.raises(ValueError) as ours:
            ps.fftconvolve(*args, **kwargs)
        assert str(ours.value) == str(theirs.value)


@pytest.mark.quick
def test_fast_lengths():
    assert [ps.next_fast_len(n) for n in (1, 11, 13, 17, 97, 1025)] == [1, 12, 14, 18, 98, 1029]
    assert ps.next_fast_len(9, real=True) == 10 and ps.next_fast_len(15, real=True) == 16


# Only scipy's two FFT-convolution classes run (the module's other tests are not pyfftgl's);
# none of their tests is excluded.
SIGNAL_SELECTED = ("not (TestFFTConvolve or TestOAConvolve)",)


@pytest.mark.slow
def test_scipy_own_convolution_tests_pass_under_pyfftgl(tmp_path):
    tests = os.path.join(os.path.dirname(scipy.__file__), "signal", "tests",
                         "test_signaltools.py")
    text = run_installed_tests(tests, "scipy_signal_plugin", SIGNAL_SELECTED, tmp_path)
    computed = int(re.search(r"pyfftgl computed (\d+) scipy.signal calls", text).group(1))
    assert computed > 1000


@pytest.mark.quick
def test_convolver_dtypes_follow_scipy(backend):
    """Convolver's results have scipy.signal.fftconvolve's dtype for the (image, kernel) pair;
    an image whose result would differ is refused, never truncated; image_shape is integers."""
    rng = np.random.default_rng(5)
    im = rng.standard_normal((12, 10))
    k = rng.standard_normal((3, 4))
    for idt in (np.float16, np.float32, np.float64, np.complex64, np.complex128, np.int32):
        for kdt in (np.float32, np.float64, np.complex64):
            image, kernel = im.astype(idt), k.astype(kdt)
            wide = [x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)
                    for x in (image, kernel)]  # the float64 convolution of the same data
            ref = scipy.signal.fftconvolve(*wide, "same")
            ref = ref.astype(scipy.signal.fftconvolve(image, kernel, "same").dtype)
            conv = ps.Convolver(kernel, image.shape, "same", dtype=idt, backend=backend)
            rel = 1e-12 if ref.dtype in (np.float64, np.complex128) else 16 * EPS32
            close(conv(image), ref, rel)
            close(ps.fftconvolve(image, kernel, "same", backend=backend), ref, rel)
    f32 = ps.Convolver(k.astype(np.float32), im.shape, "same", backend=backend)
    for bad in (im.astype(np.complex64), im, im.astype(np.int32)):  # complex, double, integer
        with pytest.raises(TypeError, match="dtype="):
            f32(bad)
    close(f32(im.astype(np.float16)),  # same result dtype: computed as float32
          scipy.signal.fftconvolve(im.astype(np.float16).astype(np.float64), k.astype(np.float32),
                                   "same").astype(np.float32), 16 * EPS32)
    with pytest.raises(TypeError):
        ps.Convolver(k, (12.5, 10), backend=backend)


@pytest.mark.quick
def test_fftconvolve_reuses_one_plan_per_shape(backend):
    """Repeated fftconvolve calls of one set of shapes take one cached plan; the kernel (new
    data each call) is transformed in the call's own submission; both paths match scipy."""
    rng = np.random.default_rng(6)
    ps.convolve_cache.clear()
    before = ps.convolve_cache.stats()
    x = rng.standard_normal((3, 20, 18)) + 1j * rng.standard_normal((3, 20, 18))
    for mode in MODES:
        for _ in range(3):
            k = rng.standard_normal((1, 5, 4))
            close(ps.fftconvolve(x, k, mode, axes=(1, 2), backend=backend),
                  scipy.signal.fftconvolve(x, k, mode, axes=(1, 2)), 1e-12)
            d = pyfftgl.asarray(x.real.astype(np.float32), backend=backend)
            kd = pyfftgl.asarray(k[0].astype(np.float32)[None], backend=backend)
            got = ps.fftconvolve(d, kd, mode, axes=(1, 2))
            assert isinstance(got, pyfftgl.DeviceArray)
            ref = scipy.signal.fftconvolve(x.real, k, mode, axes=(1, 2))
            close(got, ref.astype(np.float32), 16 * EPS32)
    st = ps.convolve_cache.stats()
    assert st["plans"] == 6 and st["misses"] - before["misses"] == 6
    assert st["hits"] - before["hits"] == 12
    assert 0 < st["bytes"] <= st["max_bytes"]
    ps.convolve_cache.resize(max_plans=2)
    assert ps.convolve_cache.stats()["plans"] == 2
    ps.convolve_cache.resize(max_plans=8)


@pytest.mark.quick
def test_fftconvolve_device_loop_replays(backend):
    """A loop of fftconvolve on DeviceArrays that drops each result takes its results from the
    plan's pool: after warm-up no buffer is allocated and nothing is recorded, a result never
    shares a buffer with a live one, results match scipy, and dropping them all returns the
    device's memory to the warm floor."""
    rng = np.random.default_rng(51)
    im, k = rng.standard_normal((40, 36)), rng.standard_normal((5, 7))
    d = pyfftgl.asarray(im.astype(np.float32), backend=backend)
    kd = pyfftgl.asarray(k.astype(np.float32), backend=backend)
    ref = scipy.signal.fftconvolve(im.astype(np.float32).astype(np.float64),
                                   k.astype(np.float32).astype(np.float64), "same")
    ps.convolve_cache.clear()
    pyfftgl.plans.plan_cache.clear()
    gc.collect()  # earlier tests' garbage is not this test's floor
    d.device.finish()
    floor = dict(d.device.live)
    for _ in range(4):
        y = ps.fftconvolve(d, kd, "same")
    plan = ps.convolve_cache.plans()[-1]
    dev, recorded = d.device, plan.stats()["recorded"]
    live = dict(dev.live)
    for _ in range(20):
        y = ps.fftconvolve(d, kd, "same")
    close(y, ref.astype(np.float32), 16 * EPS32)
    assert dict(dev.live) == live and plan.stats()["recorded"] == recorded
    held = [ps.fftconvolve(d, kd, "same") for _ in range(6)]  # all live: distinct buffers
    assert len({id(h.buffer) for h in held + [y]}) == 7
    views = [h.view(np.float32) for h in held]  # a view keeps its buffer out of the pool
    del held
    fresh = ps.fftconvolve(d, kd, "same")
    assert all(fresh.buffer is not v.buffer for v in views + [y])
    for v in views:
        close(v, ref.astype(np.float32), 16 * EPS32)
    del views, fresh, v
    assert dev.live["bytes"] <= live["bytes"] + plan.stats()["bytes"]
    del y, plan
    ps.convolve_cache.clear()
    pyfftgl.plans.plan_cache.clear()
    gc.collect()
    dev.finish()  # GL deletes what the collector queued
    assert dict(dev.live) == floor
