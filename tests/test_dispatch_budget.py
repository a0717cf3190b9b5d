"""Every dispatch within the planner's work budget (dispatch.DISPATCH_BYTES), on real drivers.

With the budget lowered so that every pass of these small transforms runs as several dispatches
(as the big ones do at the shipped budget), results match numpy and are bit-identical to the
unsplit plans' (a workgroup computes the same values whichever dispatch runs it); plans built
under the lowered budget do not stay in the plan cache.
"""
import contextlib

import numpy as np
import pytest

import pyfftgl
from pyfftgl.planner import dispatch
from pyfftgl.plans import plan_cache
from conftest import assert_accurate, random_complex
from test_precision import assert_double

# Below what one workgroup of any pass here moves (realfft.comp's least: 256 elements copied,
# 4 KiB), so that every pass splits, some dispatches running several workgroups.
LOWERED_BYTES = 12 * 1024

# name: (shape, dtype, kind, keyword arguments, transform length for the bounds, bound factor)
CASES = {
    "fft 1000": ((8, 1000), np.complex64, "fft", {}, 1000, 1.0),
    "ifft 1000": ((8, 1000), np.complex64, "ifft", {}, 1000, 1.0),
    "rfft 2048 (fused unpack)": ((8, 2048), np.float32, "rfft", {}, 2048, 1.0),
    "irfft 2048 (fused pack)": ((8, 1025), np.complex64, "irfft", {}, 2048, 1.0),
    "rfft 999 (Bluestein, crop pass)": ((4, 999), np.float32, "rfft", {}, 999, 2.0),
    "irfft 999 (extend pass, Bluestein)": ((8, 500), np.complex64, "irfft", {"n": 999}, 999, 2.0),
    "fft2 96x128": ((96, 128), np.complex64, "fft2", {}, 96 * 128, 1.0),
    "fft 2^14 (four-step)": ((2, 2**14), np.complex64, "fft", {}, 2**14, 1.0),
    "fft 1009 (Bluestein)": ((8, 1009), np.complex64, "fft", {}, 1009, 2.0),
    "ifft 4096 float64": ((4, 4096), np.complex128, "ifft", {}, 4096, 1.0),
}


def data(shape, dtype, seed):
    x = random_complex(shape, seed)
    if np.dtype(dtype).kind == "f":
        return x.real.astype(dtype)
    return x.astype(dtype)


def dispatches_per_pass(plan) -> list[int]:
    """The dispatch count of every pass of a pyfftgl.Plan's device plans."""
    return [len(ds) for dp in plan.device_plans for ds in dp.dispatches()]


@contextlib.contextmanager
def lowered_budget(monkeypatch):
    """DISPATCH_BYTES lowered, with no cached plan built under the other budget on either side:
    the cache would otherwise serve the unsplit plans inside, and the split ones after."""
    plan_cache.clear()
    monkeypatch.setattr(dispatch, "DISPATCH_BYTES", LOWERED_BYTES)
    try:
        yield
    finally:
        monkeypatch.undo()
        plan_cache.clear()


@pytest.mark.parametrize("case", CASES)
def test_split_dispatches_match_numpy_and_the_unsplit_plan(backend, case, monkeypatch):
    shape, dtype, kind, kwargs, n, factor = CASES[case]
    x = data(shape, dtype, seed=len(case))
    keep = x.copy()
    whole = pyfftgl.plan(shape, dtype, kind=kind, backend=backend, **kwargs)
    assert set(dispatches_per_pass(whole)) == {1}  # small plans run one dispatch per pass
    unsplit = whole(x)
    with lowered_budget(monkeypatch):
        split = pyfftgl.plan(shape, dtype, kind=kind, backend=backend, **kwargs)
        counts = dispatches_per_pass(split)
        assert len(counts) == len(dispatches_per_pass(whole)) and min(counts) >= 2, counts
        got = split(x)
        # the function's own call finds the split plans in the cache
        assert np.array_equal(getattr(pyfftgl, kind)(x, backend=backend, **kwargs), got)
    assert got.dtype == unsplit.dtype and np.array_equal(got, unsplit)
    assert np.array_equal(x, keep)
    if dtype == np.complex128:
        assert_double(got, x, getattr(np.fft, kind), n, factor, **kwargs)
    else:
        wide = x.astype(np.complex128 if np.iscomplexobj(x) else np.float64)
        assert_accurate(got, getattr(np.fft, kind)(wide, **kwargs), n, factor)
    # the budget restored, the cache builds unsplit plans again
    after = pyfftgl.plan(shape, dtype, kind=kind, backend=backend, **kwargs)
    assert set(dispatches_per_pass(after)) == {1}
