"""The Vulkan tier that tests/test_validation.py runs under Khronos' validation layer with
synchronization validation: every kernel family, split and timed dispatches, host transfers,
device arrays and their copies, and threads; tests/test_render_loop.py's Vulkan tests (the device
loop) run beside it. Each test fails on any error the layer reports while it runs (conftest.py's
vulkan_layer_clean). No test_ prefix: outside the layer these cases repeat the other modules."""
import threading

import numpy as np
import pytest
import scipy.signal

import pyfftgl
import pyfftgl.signal as ps
from pyfftgl.backends import get_device
from pyfftgl.signal_plans import ConvolvePlan

from conftest import assert_accurate, random_complex
from test_dispatch_budget import dispatches_per_pass, lowered_budget

C64, F32 = np.complex64, np.float32

# name: (input shape, dtype, kind, keyword arguments, transform length for the bounds, factor)
CASES = {
    "Stockham 1024": ((2, 1024), C64, "fft", {}, 1024, 1.0),
    "Stockham columns 3 x 125": ((3, 125), C64, "ifft", {"axis": 0}, 3, 1.0),
    "four-step 2^14": ((2**14,), C64, "fft", {}, 2**14, 1.0),
    "Bluestein 4099": ((4099,), C64, "fft", {}, 4099, 2.0),
    "rfft 1000": ((2, 1000), F32, "rfft", {}, 1000, 1.0),
    "irfft 999 (Bluestein)": ((2, 500), C64, "irfft", {"n": 999}, 999, 2.0),
    "rfft2 64 x 64 (paired rows)": ((64, 64), F32, "rfft2", {}, 64 * 64, 1.0),
    "irfft2 64 x 64": ((64, 33), C64, "irfft2", {"s": (64, 64)}, 64 * 64, 1.0),
    "fftn 6 x 12 x 16": ((6, 12, 16), C64, "fftn", {}, 6 * 12 * 16, 1.0),
    "fft2 16 x 2^14 (four-step rows)": ((16, 2**14), C64, "fft2", {}, 16 * 2**14, 1.0),
}


def _data(shape, dtype, seed):
    x = random_complex(shape, seed)
    return x.real.astype(dtype) if np.dtype(dtype).kind == "f" else x


def _reference(kind, x, kwargs):
    return getattr(np.fft, kind)(x.astype(np.float64 if x.dtype.kind == "f" else np.complex128),
                                 **kwargs)


@pytest.mark.parametrize("case", CASES)
def test_kernel_family_host_call(case):
    """Upload, every pass of the family, download: numpy's answer, the input untouched."""
    shape, dtype, kind, kwargs, n, factor = CASES[case]
    x = _data(shape, dtype, seed=len(case))
    keep = x.copy()
    got = getattr(pyfftgl, kind)(x, backend="vulkan", **kwargs)
    assert_accurate(got, _reference(kind, x, kwargs), n, factor)
    assert np.array_equal(x, keep)


@pytest.mark.parametrize("case", ["Stockham 1024", "Bluestein 4099", "rfft2 64 x 64 (paired rows)",
                                  "fftn 6 x 12 x 16", "fft2 16 x 2^14 (four-step rows)"])
def test_kernel_family_on_device_arrays(case):
    """A device array in, a device array out (no host transfer in the call), then a call into a
    reused `out=`: the writes, copies and reads of device-only buffers around the passes."""
    shape, dtype, kind, kwargs, n, factor = CASES[case]
    x, y = _data(shape, dtype, seed=1), _data(shape, dtype, seed=2)
    f = getattr(pyfftgl, kind)
    d = pyfftgl.asarray(x, backend="vulkan")
    first = f(d, **kwargs)
    e = pyfftgl.asarray(y, backend="vulkan")
    f(e, out=first, **kwargs)  # overwrites the result of the call before it
    assert_accurate(first.get(), _reference(kind, y, kwargs), n, factor)
    assert np.array_equal(d.get(), x)
    d.device.write(d.buffer, y)  # a host write into a buffer a call read
    assert np.array_equal(d.get(), y)


def test_multipass_fft2_plan():
    """The fft2 case above is a plan of several passes (a four-step axis), so its submission
    orders passes by barriers the layer checks."""
    p = pyfftgl.plan((16, 2**14), C64, kind="fft2", backend="vulkan")
    assert sum(len(dp.spec.passes) for dp in p.device_plans) > 2


@pytest.mark.parametrize("ishape, kshape, dtype", [
    ((64, 60), (5, 7), F32), ((9000, 4), (5, 3), F32), ((200, 60), (40, 7), F32),
    ((1000,), (900,), C64)])
def test_fftconvolve_kernel_beside_image(ishape, kshape, dtype):
    """fftconvolve with the kernel's pad and FFT interleaved with the image's pad and forward
    FFT, without barriers between them (issue 51): pruned (the kernel's few rows' DFT summed in
    the product; 40 rows: an outer FFT pass) and whole; device calls with a new kernel each,
    back to back, then a host call: scipy's answer each time."""
    rng = np.random.default_rng(sum(ishape))
    a, kernels = _data(ishape, dtype, seed=5), [rng.standard_normal(kshape).astype(dtype)
                                                for _ in range(3)]
    da = pyfftgl.asarray(a, backend="vulkan")
    dks = [pyfftgl.asarray(b, backend="vulkan") for b in kernels[:2]]
    outs = [ps.fftconvolve(da, db, "same") for db in dks]  # queued back to back
    outs = [o.get() for o in outs] + [ps.fftconvolve(a, kernels[2], "same", backend="vulkan")]
    for got, b in zip(outs, kernels):
        ref = scipy.signal.fftconvolve(a.astype(np.complex128), b.astype(np.complex128), "same")
        ref = ref if np.dtype(dtype).kind == "c" else ref.real
        assert np.linalg.norm(got - ref) <= 1e-5 * np.linalg.norm(ref)
    plan = [p for p in ps.convolve_cache.plans() if isinstance(p, ConvolvePlan)
            and p.layout.image_shape == ishape][-1]
    assert (plan.kernel_fft is not None) == (len(ishape) > 1)
    rec = plan.submission({"in": da.buffer, "kernel": dks[0].buffer,
                           "out": pyfftgl.asarray(outs[0], backend="vulkan").buffer})
    assert rec.submission.barriers < rec.dispatch_count - 2


@pytest.mark.parametrize("case", ["Stockham 1024", "four-step 2^14", "rfft2 64 x 64 (paired rows)"])
def test_split_dispatches(case, monkeypatch):
    """Every pass as several dispatches (test_dispatch_budget's lowered budget)."""
    shape, dtype, kind, kwargs, n, factor = CASES[case]
    x = _data(shape, dtype, seed=3)
    with lowered_budget(monkeypatch):
        p = pyfftgl.plan(shape, dtype, kind=kind, backend="vulkan", **kwargs)
        assert max(dispatches_per_pass(p)) >= 2
        assert_accurate(p(x), _reference(kind, x, kwargs), n, factor)


def test_timed_run():
    """A timed run: the timestamp pool reset and written around the dispatches."""
    x = random_complex((4, 1024), seed=4)
    p = pyfftgl.plan(x.shape, C64, kind="fft", backend="vulkan")
    dp = p.device_plans[0]
    got = dp.execute(x, timed=True)
    assert dp.last_gpu_ns > 0
    assert_accurate(got, np.fft.fft(x.astype(np.complex128)), 1024)


def test_threads():
    """Host and device-array calls from four threads at once, each result its own."""
    errors = []

    def work(k):
        try:
            x = random_complex((3, 96 + 32 * k), seed=10 + k)
            assert_accurate(pyfftgl.fft(x, backend="vulkan"), np.fft.fft(x.astype(complex)),
                            x.shape[1])
            d = pyfftgl.asarray(x, backend="vulkan")
            y = pyfftgl.ifft(pyfftgl.fft(d))
            assert_accurate(y.get(), x.astype(complex), x.shape[1], 1.5)
        except BaseException as e:  # reported by the main thread
            errors.append(e)
    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    if errors:
        raise errors[0]
    get_device("vulkan").finish()
