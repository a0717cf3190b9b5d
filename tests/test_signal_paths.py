"""fftconvolve's two cheaper kernel paths against scipy.signal.fftconvolve in float64, on both
drivers: the pruned kernel spectrum (only the kernel's rows transformed along the inner axes)
and overlap-add (one innermost axis with a short kernel, blocks whose FFT is one pass)."""
import numpy as np
import pytest
import scipy.signal

import pyfftgl
import pyfftgl.signal as ps
from pyfftgl.signal_blocks import OverlapAddPlan
from pyfftgl.planner import DFT_ROWS_MAX
from pyfftgl.signal_plans import ConvolvePlan, bounded_plan
from conftest import EPS32

MODES = ("full", "same", "valid")


def _data(rng, shape, dtype):
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def _reference(a, b, mode):
    """scipy's result in float64 (complex128), and the dtype scipy gives these inputs."""
    wide = [x.astype(np.complex128 if x.dtype.kind == "c" else np.float64) for x in (a, b)]
    small = [x[(slice(0, 1),) * x.ndim] for x in (a, b)]
    return scipy.signal.fftconvolve(*wide, mode), scipy.signal.fftconvolve(*small).dtype


def _plan_of(a, b):
    """The cached plan of the last fftconvolve of arrays of a's and b's shapes and dtypes."""
    dtype = _reference(a[:1], b[:1], "full")[1]
    return [p for p in ps.convolve_cache.plans() if p and p.layout.image_shape == a.shape
            and p.layout.kernel_shape == b.shape and p.layout.dtype == dtype][-1]


def _check(backend, a, b, mode):
    """Host and device calls (twice each: a new kernel each time) against scipy, within 8 eps
    of the result's precision; the callers' arrays untouched. Returns the plan."""
    ref, dtype = _reference(a, b, mode)
    tol = 8 * (EPS32 if dtype in (np.float32, np.complex64) else np.finfo(float).eps)
    a0, b0 = a.copy(), b.copy()
    got = ps.fftconvolve(a, b, mode, backend=backend)
    assert got.dtype == dtype and got.shape == ref.shape
    assert np.linalg.norm(got - ref) <= tol * np.linalg.norm(ref)
    for kernel in (b, np.flip(b).copy()):  # a new kernel in the same plan: a new spectrum
        ref = _reference(a, kernel, mode)[0]
        da, db = (pyfftgl.asarray(x, backend=backend) for x in (a, kernel))
        out = ps.fftconvolve(da, db, mode)
        assert isinstance(out, pyfftgl.DeviceArray)
        assert np.linalg.norm(out.get() - ref) <= tol * np.linalg.norm(ref)
        assert np.array_equal(da.get(), a) and np.array_equal(db.get(), kernel)
    assert np.array_equal(a, a0) and np.array_equal(b, b0)
    return _plan_of(a, b)


@pytest.mark.quick
@pytest.mark.parametrize("mode", MODES)
def test_pruned_kernel_spectrum(backend, mode):
    """2-D and 3-D kernels much shorter than the padded outer axis: odd and even sizes, real,
    complex and double data, batches of images in front (the kernel broadcast)."""
    rng = np.random.default_rng(7)
    cases = [((40, 36), (7, 5), np.float32, 7), ((33, 28), (6, 8), np.complex64, 6),
             ((30, 25), (5, 4), np.float64, 5), ((20, 12, 6), (3, 5, 6), np.complex128, 3),
             ((3, 30, 20), (1, 7, 4), np.float32, 7), ((2, 3, 30, 20), (1, 1, 6, 5), np.float32, 6)]
    for ishape, kshape, dtype, rows in cases:  # rows: the kernel's along its outermost axis
        plan = _check(backend, _data(rng, ishape, dtype), _data(rng, kshape, dtype), mode)
        assert isinstance(plan, ConvolvePlan) and plan.kernel_fft is not None
        assert plan.kernel_fft[0] == rows


@pytest.mark.quick
@pytest.mark.parametrize("mode", MODES)
def test_pruned_kernel_spectrum_multipass_outer_axis(backend, mode):
    """An outer axis whose FFT takes several passes (a four-step plan on the software
    drivers): its first pass reads the kernel's rows alone, and its work buffers are the
    plan's, which the image's transforms then overwrite: a second call's new kernel and
    image still match scipy."""
    rng = np.random.default_rng(12)
    for dtype in (np.float32, np.complex128):
        plan = _check(backend, _data(rng, (9000, 4), dtype), _data(rng, (5, 3), dtype), mode)
        assert plan.kernel_fft is not None and len(plan.kernel_fft[2].spec.passes) > 1
    # a batch of two images in front, one kernel (broadcast): the rows stored per image
    a, b = _data(rng, (2, 9000, 4), np.float32), _data(rng, (1, 5, 3), np.float32)
    plan = _check(backend, a, b, mode)
    assert plan.kernel_fft is not None and len(plan.kernel_fft[2].spec.passes) > 1


def _keys(dispatches) -> list:
    return [(d.program, tuple(map(id, d.buffers))) for d in dispatches]


@pytest.mark.quick
def test_kernel_chain_runs_beside_the_image_forward_fft():
    """Issue 51: fftconvolve's kernel pad and FFT alternate with the image's pad and forward
    FFT where neither writes what the other touches, so Vulkan records no barrier between a
    kernel dispatch and the image dispatch after it: one barrier fewer per pair than in order.
    Pruned (outer FFT in one pass, and in two through the plan's product) and whole kernel FFTs
    in one pass alternate; a whole FFT whose passes go through the image FFT's own work buffers
    keeps its order. Each against scipy."""
    rng = np.random.default_rng(13)
    cases = [((64, 60), (5, 7), np.float32, True), ((9000, 4), (5, 3), np.float32, True),
             ((1000,), (900,), np.complex64, True), ((20000,), (30000,), np.float32, False)]
    for ishape, kshape, dtype, beside in cases:
        a, b = _data(rng, ishape, dtype), _data(rng, kshape, dtype)
        plan = _check("vulkan", a, b, "same")
        assert isinstance(plan, ConvolvePlan)
        assert (plan.kernel_fft is not None) == (len(ishape) > 1)
        da, db = (pyfftgl.asarray(x, backend="vulkan") for x in (a, b))
        res = {"in": da.buffer, "kernel": db.buffer, "out": ps.fftconvolve(da, db, "same").buffer}
        kernel = plan.flat_dispatches({"kernel": db.buffer})  # its pad and FFT alone
        if plan.dft_mul is not None:  # a call's: the outer FFT is summed in the product
            outer = plan.kernel_fft[2].flat_dispatches(
                {"in": plan.bufs["krows"], "out": plan.bufs["kspectrum"]})
            kernel = kernel[:len(kernel) - len(outer)]
        image = [d for ds in plan.dispatches({"in": da.buffer, "out": res["out"]})[:2]
                 for d in ds]  # its pad and forward FFT
        flat, rec = plan.flat_dispatches(res), plan.submission(res)
        pairs = min(len(kernel), len(image))
        assert rec.dispatch_count == len(flat) == len(kernel) + plan.dispatch_count
        if beside:
            merged = [x for i in range(pairs) for x in (kernel[i], image[i])]
            assert _keys(flat[:2 * pairs]) == _keys(merged)
            assert rec.submission.barriers == rec.dispatch_count - 1 - pairs
        else:
            assert _keys(flat[:len(kernel)]) == _keys(kernel)
            assert rec.submission.barriers > rec.dispatch_count - 1 - pairs


@pytest.mark.quick
def test_few_kernel_rows_summed_in_the_product(backend):
    """A kernel of at most DFT_ROWS_MAX rows along its outermost axis: a call binding it runs
    no FFT of that axis (the product pass sums the rows' DFT), one row more runs the FFT; real,
    complex and double data, a batch axis inside the convolved ones (the kernel broadcast over
    it), two rows. A Convolver of the same shapes, whose spectrum is computed once, agrees."""
    rng = np.random.default_rng(17)
    cases = [((80, 33), (DFT_ROWS_MAX, 5), np.float32, None, True),
             ((80, 33), (DFT_ROWS_MAX + 1, 5), np.float32, None, False),
             ((45, 20), (9, 6), np.complex64, None, True),
             ((40, 21), (12, 5), np.float64, None, True),
             ((33, 28), (3, 5), np.float32, None, True),  # an odd outer length, 35
             ((30, 24, 3), (7, 5, 1), np.float32, (0, 1), True),
             ((26, 30), (2, 9), np.float32, None, True)]
    for ishape, kshape, dtype, axes, summed in cases:
        a, b = _data(rng, ishape, dtype), _data(rng, kshape, dtype)
        ref = scipy.signal.fftconvolve(a.astype(complex), b.astype(complex), "same", axes=axes)
        ref = ref if np.dtype(dtype).kind == "c" else ref.real
        tol = 8 * (np.finfo(float).eps if dtype == np.float64 else EPS32)
        da, db = (pyfftgl.asarray(x, backend=backend) for x in (a, b))
        out = ps.fftconvolve(da, db, "same", axes=axes)
        assert np.linalg.norm(out.get() - ref) <= tol * np.linalg.norm(ref)
        plan = _plan_of(a, b)
        assert (plan.dft_mul is not None) == summed and plan.kernel_fft is not None
        call = plan.submission({"in": da.buffer, "kernel": db.buffer, "out": out.buffer})
        kernel = plan.flat_dispatches({"kernel": db.buffer})
        outer = len(plan.kernel_fft[2].flat_dispatches(
            {"in": plan.bufs["krows"], "out": plan.bufs["kspectrum"]}))
        assert call.dispatch_count == plan.dispatch_count + len(kernel) - summed * outer
        conv = ps.Convolver(b, ishape, "same", axes=axes, dtype=dtype, backend=backend)
        assert np.linalg.norm(conv(a) - ref) <= tol * np.linalg.norm(ref)


@pytest.mark.quick
def test_pruned_kernel_longer_on_an_inner_axis(backend):
    """A kernel longer than the image on the inner axis (full and same), and 'valid' with a
    kernel larger on every axis (scipy swaps them: no pruning of the larger)."""
    rng = np.random.default_rng(8)
    a, b = _data(rng, (40, 10), np.float32), _data(rng, (5, 30), np.float32)
    for mode in ("full", "same"):
        assert _check(backend, a, b, mode).kernel_fft is not None
    small, large = _data(rng, (6, 9), np.float32), _data(rng, (30, 20), np.float32)
    assert _check(backend, small, large, "valid").kernel_fft is None


@pytest.mark.quick
@pytest.mark.parametrize("mode", MODES)
def test_overlap_add(backend, mode):
    """One innermost axis longer than one FFT pass on the software drivers, with a short
    kernel: overlap-add's plan, for real, complex and double data, odd and even kernels, one
    line or a batch."""
    rng = np.random.default_rng(9)
    cases = [((40000,), (101,), np.float32), ((33333,), (2000,), np.complex64),
             ((1, 30001,), (1, 64), np.float64), ((3, 20000), (1, 31), np.complex64)]
    for ishape, kshape, dtype in cases:  # the last: a batch of lines, one kernel
        plan = _check(backend, _data(rng, ishape, dtype), _data(rng, kshape, dtype), mode)
        assert isinstance(plan, OverlapAddPlan) and plan.blocks.count > 1
        assert plan.blocks.lines == (ishape[0] if len(ishape) > 1 else 1)
        assert plan.blocks.step >= plan.blocks.length // 2


@pytest.mark.quick
def test_overlap_add_not_for_long_kernels(backend):
    """A kernel longer than the image ('valid' swaps them) and one longer than half a block
    take the whole padded FFT, as before."""
    rng = np.random.default_rng(10)
    a, b = _data(rng, (20000,), np.float32), _data(rng, (30000,), np.float32)
    for mode in MODES:
        assert isinstance(_check(backend, a, b, mode), ConvolvePlan)


@pytest.mark.quick
@pytest.mark.parametrize("n", [300, 20000])  # one strided pass; a four-step plan's first
def test_bounded_first_pass_reads_only_its_rows(backend, n):
    """The outer axis' FFT of the pruned kernel path reads only the rows below its bound:
    NaN past them in memory changes nothing, and the result is numpy's FFT of the rows
    zero-padded to the axis' length."""
    rng = np.random.default_rng(11)
    x = (rng.standard_normal((n, 6)) + 1j * rng.standard_normal((n, 6))).astype(np.complex64)
    x[17:] = np.nan
    device = pyfftgl.backends.get_device(backend)
    plan = bounded_plan((n, 6), (pyfftgl.planner.Step("c2c", 0),), device, 32, 17)
    assert plan is not None
    d, out = pyfftgl.asarray(x, backend=backend), pyfftgl.asarray(np.zeros_like(x),
                                                                  backend=backend)
    plan.run({"in": d.buffer, "out": out.buffer})
    padded = np.zeros((n, 6), np.complex128)
    padded[:17] = x[:17]
    ref = np.fft.fft(padded, axis=0)
    assert np.linalg.norm(out.get() - ref) <= 8 * EPS32 * np.linalg.norm(ref)
