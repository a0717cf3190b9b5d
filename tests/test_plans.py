"""Plans and the plan cache."""
import types

import numpy as np
import pytest

import pyfftgl
from conftest import assert_accurate


def test_plan_matches_the_function(backend):
    p = pyfftgl.plan((8, 64), np.float32, kind="rfft2", backend=backend)
    x = np.random.default_rng(0).standard_normal((8, 64)).astype(np.float32)
    assert_accurate(p(x), np.fft.rfft2(x.astype(np.float64)), 8 * 64)
    assert p.out_shape == (8, 33) and p.out_dtype == np.complex64
    text = repr(p)
    assert "rfft2" in text and "pass" in text and "bytes" in text and "stockham" in text
    with pytest.raises(ValueError, match="shape"):
        p(np.zeros((4, 64), np.float32))


def test_plan_keeps_its_device_plans_when_the_cache_drops_them(backend):
    p = pyfftgl.plan((4, 100), np.complex64, kind="fft", backend=backend)
    held = p.device_plans
    pyfftgl.plan_cache.clear()
    assert p.device_plans is held and len(held) == 1
    x = np.ones((4, 100), np.complex64)
    assert_accurate(p(x), np.fft.fft(x.astype(np.complex128)), 100)


def test_plan_validates_like_the_function():
    with pytest.raises(ValueError):
        pyfftgl.plan((4, 8), np.complex64, kind="fft", norm="bad")
    with pytest.raises(ValueError, match="kind"):
        pyfftgl.plan((4, 8), kind="dct")
    with pytest.raises(TypeError):
        pyfftgl.plan((4, 8), np.complex64, kind="rfft")


def test_cache_hits_misses_bounds_and_resize(backend):
    cache = pyfftgl.plan_cache
    cache.clear()
    before = cache.stats()
    x = np.ones((3, 48), np.complex64)
    pyfftgl.fft(x, backend=backend)
    pyfftgl.fft(x, backend=backend)
    st = cache.stats()
    assert st["misses"] == before["misses"] + 1 and st["hits"] == before["hits"] + 1
    old = (cache.max_plans, cache.max_bytes)
    try:
        cache.resize(max_plans=2)
        for n in (8, 16, 32, 64):
            pyfftgl.fft(np.ones((2, n), np.complex64), backend=backend)
        assert len(cache) == 2
        cache.resize(max_bytes=1)  # smaller than any plan: only the most recent one stays,
        assert len(cache) == 1     # so a loop over one large transform does not rebuild it
        hits = cache.stats()["hits"]
        pyfftgl.fft(np.ones((2, 64), np.complex64), backend=backend)
        assert cache.stats()["hits"] == hits + 1
        pyfftgl.fft(np.ones((2, 8), np.complex64), backend=backend)
        assert len(cache) == 1
        cache.resize(max_plans=0)  # no caching at all
        assert len(cache) == 0
        assert "PlanCache" in repr(cache)
    finally:
        cache.resize(*old)


@pytest.mark.parametrize("kind, shape, dtype, kwargs", [
    ("fft", (4, 30), np.complex64, dict(n=None, axis=-1)),
    ("ifft", (5, 16), np.float32, dict(n=7, axis=0)),
    ("fftn", (3, 4, 5), np.complex64, dict(s=(6, 2), axes=(2, 0))),
    ("ifftn", (3, 4), np.complex64, dict(s=None, axes=(1, 1, 0))),
    ("fft2", (2, 8, 8), np.float16, dict(s=None, axes=(-2, -1))),
    ("fftn", (4,), np.complex64, dict(s=None, axes=())),
    ("rfft", (3, 64), np.float32, dict(n=100, axis=-1)),
    ("rfft", (9, 4), np.float32, dict(n=None, axis=0)),
    ("rfftn", (4, 6, 10), np.float32, dict(s=None, axes=(0, 2, 0))),
    ("rfft2", (8, 9), np.float16, dict(s=(9, 4), axes=(0, 1))),
    ("irfft", (5, 9), np.complex64, dict(n=None, axis=-1)),
    ("irfft", (6, 9), np.float16, dict(n=7, axis=0)),
    ("irfftn", (3, 5, 9), np.complex64, dict(s=(4, 16), axes=(0, 2))),
    ("irfft2", (8, 5), np.complex64, dict(s=None, axes=(0, 1))),
    ("hfft", (4, 9), np.complex64, dict(n=None, axis=-1)),
    ("ihfft", (4, 15), np.float32, dict(n=None, axis=-1)),
    ("fft", (0, 8), np.complex64, dict(n=None, axis=-1))])
def test_plan_takes_the_jobs_the_function_runs(monkeypatch, kind, shape, dtype, kwargs):
    # No GPU: each submission the function makes runs in numpy float64 by what its steps mean
    # (planner.Step), so the function's result shows its jobs are right, independently of how
    # _jobs derives them; Plan builds its device plans for exactly those submissions.
    from pyfftgl import numpy_fft
    ran, built = [], []

    def run(x, steps, backend):
        ran.append((x.shape, tuple(steps)))
        return steps_in_numpy(x, steps)

    def build(shape, steps, backend, precision):
        built.append((shape, tuple(steps)))
        return types.SimpleNamespace(cache_key=len(built))  # what Plan keeps of a device plan
    monkeypatch.setattr(numpy_fft, "run_steps", run)
    monkeypatch.setattr(numpy_fft, "cached_steps_plan", build)
    a = np.random.default_rng(sum(shape)).standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * np.random.default_rng(len(shape)).standard_normal(shape)
    a = a.astype(dtype)
    got = getattr(pyfftgl, kind)(a, norm="ortho", **kwargs)
    ref = getattr(np.fft, kind)(a, norm="ortho", **kwargs)
    want = getattr(np.fft, kind)(a.astype(np.complex128 if a.dtype.kind == "c" else np.float64),
                                 norm="ortho", **kwargs)
    assert got.shape == ref.shape and got.dtype == (np.float16 if ref.dtype == np.float16 else
                                                    np.float32 if ref.dtype.kind == "f" else
                                                    np.complex64)
    scale = max(np.max(np.abs(want), initial=0), 1.0)
    tol = 2 * float(np.finfo(np.float16).eps) if got.dtype == np.float16 else 2e-5
    assert np.max(np.abs(got - want), initial=0) <= tol * scale
    p = pyfftgl.plan(shape, dtype, kind=kind, norm="ortho",
                     axes=kwargs.get("axes", kwargs.get("axis")), s=kwargs.get("s"),
                     n=kwargs.get("n"))
    assert built == [r for r in ran if np.prod(r[0])]  # one device plan per non-empty submission
    assert (p.out_shape, p.out_dtype) == (got.shape, got.dtype)


def steps_in_numpy(x, steps):
    """What planner steps compute on the upload `x`, in float64 numpy: an even real length on
    the innermost axis travels as half as many complex values (r2c input, c2r output)."""
    y = x.astype(np.complex128)
    for st in steps:
        packed = st.kind != "c2c" and st.n % 2 == 0 and st.axis == y.ndim - 1
        if st.kind == "c2c":
            y = (np.fft.ifft if st.inverse else np.fft.fft)(y, axis=st.axis, norm=st.norm)
        elif st.kind == "r2c":
            reals = np.stack([y.real, y.imag], -1).reshape(y.shape[:-1] + (-1,)) if packed \
                else y.real
            y = np.fft.rfft(reals, n=st.n, axis=st.axis, norm=st.norm)
        else:
            r = np.fft.irfft(y, n=st.n, axis=st.axis, norm=st.norm)
            y = r[..., 0::2] + 1j * r[..., 1::2] if packed else r.astype(np.complex128)
    return y.astype(x.dtype)

def test_device_plans_report_dispatches_recordings_and_bytes(backend):
    """Every device plan knows its cache key from construction, records one submission per set
    of resources it binds (replayed after) and reports its dispatches, recordings and bytes."""
    from pyfftgl.device_array import DeviceArray
    from pyfftgl.planner import Step
    from pyfftgl.plans import cache_key, cached_steps_plan
    dev = pyfftgl.get_device(backend)
    steps = (Step("c2c", 1),)
    plan = cached_steps_plan((3, 48), steps, dev)
    assert plan.cache_key == cache_key(dev, (3, 48), steps, 32)
    x = np.random.default_rng(3).standard_normal((3, 48)).astype(np.complex64)
    src, dst = pyfftgl.asarray(x, backend=dev), plan.output_buffer()
    held = plan.stats()["recorded"]
    rec = plan.submission({"in": src.buffer, "out": dst})
    assert plan.submission({"in": src.buffer, "out": dst}) is rec  # replayed, not recorded
    assert rec.dispatch_count == plan.dispatch_count == rec.stats()["dispatches"] >= 1
    st = plan.stats()
    assert st["recorded"] == held + 1 and st["dispatches"] == plan.dispatch_count
    assert st["bytes"] == plan.nbytes > 0 and plan.recordings()[-1] is rec
    rec.run(wait=False)
    got = DeviceArray(dst, (3, 48), np.complex64, dev).get()
    assert_accurate(got, np.fft.fft(x.astype(np.complex128), axis=1), 48)
