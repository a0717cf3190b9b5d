"""Double precision as numpy computes it: dtype rules, accuracy against an extended-precision
reference, device arrays, the plan cache, and a device without doubles."""
import dataclasses

import numpy as np
import pytest
import scipy.fft

import pyfftgl
import pyfftgl.scipy_fft as scipy_backend
from pyfftgl.backends import get_device
from pyfftgl.backends.base import PrecisionUnavailable
from pyfftgl.planner import Step
from pyfftgl.plans import cached_steps_plan
from conftest import snr_db

EPS64 = float(np.finfo(np.float64).eps)


def random_c128(shape, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def assert_double(got, x, func, n, factor=1.0, **kwargs):
    """got against numpy's `func` of x in long double (64-bit mantissa on x86: a reference
    ~2000x finer than double): rel L2 <= factor * eps64 * sqrt(log2 n)."""
    ref = func(np.asarray(x).astype(np.clongdouble if np.iscomplexobj(x) else np.longdouble),
               **kwargs)
    assert got.dtype == (np.complex128 if np.iscomplexobj(ref) else np.float64)
    err = float(np.linalg.norm((got - ref).astype(np.clongdouble)) / np.linalg.norm(ref))
    bound = factor * EPS64 * np.sqrt(max(1.0, np.log2(n)))
    assert err <= bound, f"n={n}: rel L2 {err:.3e} > {bound:.3e}"


# Radix 2, 4 (and 8), 16; odd radices 3, 5, 7; 11 and 13; a Bluestein prime; a four-step length
# (double's halved shared memory splits 8192 on lavapipe's 32 KB; the planner asserts it below).
SIZES = [(2, 1.0), (512, 1.0), (4096, 1.0), (945, 1.0), (143, 1.0), (1009, 2.0), (8192, 1.0)]


@pytest.mark.parametrize("n,factor", SIZES)
def test_double_c2c_1d(backend, n, factor):
    x = random_c128((3, n), seed=n)
    keep = x.copy()
    assert_double(pyfftgl.fft(x, backend=backend), x, np.fft.fft, n, factor)
    assert_double(pyfftgl.ifft(x, backend=backend), x, np.fft.ifft, n, factor)
    assert np.array_equal(x, keep)


def test_plans_take_the_double_footprint(backend):
    dev = get_device(backend)
    steps = (Step("c2c", 1, norm="backward"),)
    single = cached_steps_plan((3, 8192), steps, backend)
    double = cached_steps_plan((3, 8192), steps, backend, 64)
    assert double is not single and double.element_bytes == 2 * single.element_bytes
    assert all(p.shared_bytes * 2 <= dev.info.limits.max_shared_bytes for p in double.passes)
    if dev.info.limits.max_shared_bytes < 8192 * 16:  # a line of doubles does not fit: split
        assert double.spec.algorithms == ("four-step",)
    assert "double precision" in repr(double)


def test_double_real_and_nd(backend):
    x = np.random.default_rng(1).standard_normal((6, 10, 12))
    c = random_c128((6, 10, 12), seed=2)
    assert_double(pyfftgl.rfft(x, backend=backend), x, np.fft.rfft, 12)
    assert_double(pyfftgl.rfft(x[..., :11], backend=backend), x[..., :11], np.fft.rfft, 11)
    assert_double(pyfftgl.irfft(c, backend=backend), c, np.fft.irfft, 22)
    assert_double(pyfftgl.rfft2(x, backend=backend), x, np.fft.rfft2, 120)
    assert_double(pyfftgl.irfft2(c, backend=backend), c, np.fft.irfft2, 220)
    assert_double(pyfftgl.fftn(c, backend=backend), c, np.fft.fftn, 720)
    assert_double(pyfftgl.ifftn(c, backend=backend), c, np.fft.ifftn, 720)
    assert_double(pyfftgl.rfftn(x, backend=backend), x, np.fft.rfftn, 720)
    assert_double(pyfftgl.irfftn(c, backend=backend), c, np.fft.irfftn, 1320)
    assert_double(pyfftgl.hfft(c, backend=backend), c, np.fft.hfft, 22)
    assert_double(pyfftgl.ihfft(x, backend=backend), x, np.fft.ihfft, 12)


DTYPES = [np.float64, np.complex128, np.int64, np.bool_, np.float32, np.complex64, np.float16]


@pytest.mark.parametrize("dtype", DTYPES)
def test_dtype_rules_match_numpy(dtype):
    x = (np.arange(24).reshape(3, 8) % 5).astype(dtype)
    names = ["fft", "ifft", "fftn", "irfft", "hfft", "irfftn"]
    if np.dtype(dtype).kind != "c":
        names += ["rfft", "ihfft", "rfftn"]
    wide = x.astype(np.complex128 if np.dtype(dtype).kind == "c" else np.float64)
    for name in names:
        got, func = getattr(pyfftgl, name)(x), getattr(np.fft, name)
        assert got.dtype == func(x).dtype, (name, dtype)
        # within a few units of the output's own precision (float16 for numpy's irfft of half)
        ref = func(wide)
        err = np.max(np.abs(got.astype(np.complex128) - ref))
        assert err <= 8 * np.finfo(got.dtype).eps * np.max(np.abs(ref)), (name, dtype)


def test_first_calls_of_a_numpy_user():
    x = np.random.rand(1024)
    assert_double(pyfftgl.fft(x), x, np.fft.fft, 1024)
    got = pyfftgl.fft([1, 2, 3])
    assert got.dtype == np.complex128
    assert np.allclose(got, [6, -1.5 + 0.75 ** 0.5 * 1j, -1.5 - 0.75 ** 0.5 * 1j], rtol=0,
                       atol=6 * 4 * EPS64)


def test_double_device_arrays_stay_on_the_device(backend, monkeypatch):
    c = random_c128((8, 64), seed=3)
    r = np.random.default_rng(4).standard_normal((8, 64))
    d, dr = pyfftgl.asarray(c, backend=backend), pyfftgl.asarray(r, backend=backend)
    assert (d.dtype, dr.dtype) == (np.complex128, np.float64)
    assert np.array_equal(d.get(), c)
    plan = pyfftgl.plan(c.shape, np.complex128, kind="fft2", backend=backend)
    out = pyfftgl.asarray(np.zeros_like(c), backend=backend)
    monkeypatch.setattr(d.device, "read", lambda *a, **k: pytest.fail("host transfer"))
    y, f = pyfftgl.fft2(d), pyfftgl.rfft(dr)
    back = pyfftgl.irfft(f)
    for _ in range(2):  # the second call replays the first's submission
        assert plan(d, out=out) is out
    monkeypatch.undo()
    assert (y.dtype, f.dtype, back.dtype) == (np.complex128, np.complex128, np.float64)
    assert_double(y.get(), c, np.fft.fft2, 512)
    assert np.array_equal(out.get(), y.get())
    assert_double(f.get(), r, np.fft.rfft, 64)
    assert np.max(np.abs(back.get() - r)) <= 8 * EPS64 * np.max(np.abs(r))


def test_scipy_backend_computes_double():
    x = random_c128((4, 30), seed=5)
    before = scipy_backend.handled
    with scipy.fft.set_backend(scipy_backend, only=True):
        y = scipy.fft.fft(x)
        z = scipy.fft.irfft(x.real.astype(np.float16))  # scipy: half computes in single
    assert scipy_backend.handled == before + 2
    assert_double(y, x, np.fft.fft, 30)
    assert z.dtype == np.float32


def test_device_without_doubles(monkeypatch):
    dev = get_device("vulkan")
    monkeypatch.setattr(dev, "info", dataclasses.replace(dev.info, float64=False))
    with pytest.raises(PrecisionUnavailable, match="shaderFloat64") as err:
        pyfftgl.fft(np.ones(8), backend=dev)
    assert isinstance(err.value, TypeError)  # what numpy users catch for an unsupported dtype
    with pytest.raises(PrecisionUnavailable, match="shaderFloat64"):
        pyfftgl.asarray(np.ones(8), backend=dev)
    assert pyfftgl.fft(np.ones(8, np.float32), backend=dev).dtype == np.complex64
    pyfftgl.set_backend("vulkan")
    try:  # scipy computes what this device cannot
        assert scipy_backend.__ua_function__(scipy.fft.fft, (np.ones(8),), {}) is NotImplemented
    finally:
        pyfftgl.set_backend(None)


@pytest.mark.parametrize("fmt,components", [("rgba16f", 4), ("r16f", 1)])
def test_half_float_textures(fmt, components):
    # fp16 storage, fp32 compute: SNR >= 50 dB against float64 on the fp16 data itself.
    dev = get_device("gl")
    with dev.current():  # textures made here directly: the library's context, held current
        _half_float_round_trip(dev.ctx, fmt, components)


def _half_float_round_trip(ctx, fmt, components):
    import pyfftgl.gl
    h, w = 48, 64
    a = np.random.default_rng(6).standard_normal((h, w, components)).astype(np.float16)
    src = ctx.texture((w, h), components, dtype="f2")
    src.write(a.tobytes())
    fft = pyfftgl.gl.TextureFFT(ctx, (h, w))
    spec = fft.forward(src)
    assert spec.dtype == "f2" and spec.components == (2 if components == 1 else 4)
    back = fft.inverse(spec, ctx.texture((w, h), components, dtype="f2"))

    def fields(t, c):
        x = np.frombuffer(t.read(), np.float16).reshape(h, w, c).astype(np.float64)
        if c == 1:
            return [x[..., 0] + 0j]
        return [x[..., k] + 1j * x[..., k + 1] for k in (0, 2)[:c // 2]]
    for got, x in zip(fields(spec, spec.components), fields(src, components)):
        assert snr_db(got, np.fft.fft2(x)) >= 50
    for got, x in zip(fields(back, components), fields(src, components)):
        assert snr_db(got, x) >= 50
    assert ctx.error == "GL_NO_ERROR"
