"""fft/ifft against numpy in float64 on both backends' real drivers."""
import math

import numpy as np
import pytest

import pyfftgl
from pyfftgl import planner
from pyfftgl.backends import get_device
from pyfftgl.backends.base import Limits
from pyfftgl.plans import TransformPlan
from conftest import assert_accurate, random_complex

POW2 = [2**k for k in range(1, 13)]


@pytest.mark.parametrize("n", POW2)
def test_forward_inverse_and_round_trip(backend, n):
    batch = max(1, min(1000, 2**16 // n))
    x = random_complex((batch, n), seed=n)
    keep = x.copy()
    ref = np.fft.fft(x.astype(np.complex128))
    y = pyfftgl.fft(x, backend=backend)
    assert y.dtype == np.complex64 and y.shape == x.shape
    assert_accurate(y, ref, n)
    z = pyfftgl.ifft(y, backend=backend)
    assert_accurate(pyfftgl.ifft(x, backend=backend), np.fft.ifft(x.astype(np.complex128)), n)
    assert_accurate(z, x.astype(np.complex128), n, factor=1.5)
    assert np.array_equal(x, keep)  # the input is never modified


@pytest.mark.parametrize("batch", [1, 3, 257, 1000])
@pytest.mark.parametrize("n", [8, 1024, 4096])
def test_batches(backend, n, batch):
    x = random_complex((batch, n), seed=batch)
    assert_accurate(pyfftgl.fft(x, backend=backend), np.fft.fft(x.astype(np.complex128)), n)


def test_repeated_runs_are_bit_identical(backend):
    x = random_complex((5, 1024), seed=3)
    a = pyfftgl.fft(x, backend=backend)
    b = pyfftgl.fft(x, backend=backend)
    assert np.array_equal(a.view(np.uint32), b.view(np.uint32))


def test_exact_values(backend):
    # A unit impulse transforms to all ones; a pure tone to a single bin of height n.
    n = 64
    impulse = np.zeros(n, np.complex64)
    impulse[0] = 1
    assert np.array_equal(pyfftgl.fft(impulse, backend=backend), np.ones(n, np.complex64))
    tone = np.exp(2j * np.pi * 5 * np.arange(n) / n).astype(np.complex64)
    spec = pyfftgl.fft(tone, backend=backend)
    assert abs(spec[5] - n) < 1e-4 and np.max(np.abs(np.delete(spec, 5))) < 1e-4


@pytest.mark.parametrize("norm", [None, "backward", "ortho", "forward"])
def test_norms(backend, norm):
    x = random_complex((4, 256), seed=1)
    x128 = x.astype(np.complex128)
    assert_accurate(pyfftgl.fft(x, norm=norm, backend=backend), np.fft.fft(x128, norm=norm), 256)
    assert_accurate(pyfftgl.ifft(x, norm=norm, backend=backend), np.fft.ifft(x128, norm=norm), 256)


def test_axis_and_n_like_numpy(backend):
    x = random_complex((6, 16, 8), seed=2)
    x128 = x.astype(np.complex128)
    for axis in (0, 1, 2, -1, -2, -3):
        for n in (None, 4, 16, 32):
            got = pyfftgl.fft(x, n=n, axis=axis, backend=backend)
            ref = np.fft.fft(x128, n=n, axis=axis)
            assert got.shape == ref.shape
            assert_accurate(got, ref, n or x.shape[axis])


def test_real_and_strided_inputs(backend):
    rng = np.random.default_rng(4)
    real = rng.standard_normal((3, 128)).astype(np.float32)
    got = pyfftgl.fft(real, backend=backend)
    assert got.dtype == np.complex64
    assert_accurate(got, np.fft.fft(real.astype(np.float64)), 128)
    f_order = np.asfortranarray(random_complex((64, 32), seed=5))
    assert_accurate(pyfftgl.fft(f_order, backend=backend), np.fft.fft(f_order.astype(np.complex128)), 32)
    rev = random_complex((8, 64), seed=6)[::-1, ::-2]
    assert_accurate(pyfftgl.fft(rev, backend=backend), np.fft.fft(rev.astype(np.complex128)), 32)


def test_empty_batch_and_lists(backend):
    assert pyfftgl.fft(np.zeros((0, 8), np.complex64), backend=backend).shape == (0, 8)
    got = pyfftgl.fft(np.array([1, 2, 3, 4], np.float32), backend=backend)
    assert np.allclose(got, np.fft.fft([1, 2, 3, 4]), atol=1e-6)


def test_workgroup_split_and_chunks_on_a_small_device(backend):
    # Plan as if the device allowed 3x2 workgroups per dispatch and a 64 KiB buffer: the batch
    # then needs several dispatches per submission and several submissions, and must still be
    # exact (no silently truncated workgroups).
    # (n = 48: a length no wisdom file tunes, so the workgroup shape is the planner's default.)
    small = Limits(32768, 1024, (1024, 1024, 64), (3, 2, 1), 64 * 1024)
    n, batch = 48, 700
    plan = pyfftgl.FFTPlan(n, batch, False, backend=backend, limits=small)
    assert plan.dispatch_count > 1 and plan.spec.chunks > 1
    x = random_complex((batch, n), seed=7)
    assert_accurate(plan.execute(x), np.fft.fft(x.astype(np.complex128)), n)


def test_plan_reports_gpu_time(backend):
    plan = pyfftgl.FFTPlan(1024, 64, False, backend=backend)
    x = random_complex((64, 1024), seed=8)
    y = plan.execute(x, timed=True)
    assert plan.last_gpu_ns is not None and plan.last_gpu_ns > 0
    assert_accurate(y, np.fft.fft(x.astype(np.complex128)), 1024)
    assert len(plan.passes) == 1 and plan.dispatch_count == 1
    assert "1 pass" in repr(plan)


@pytest.mark.parametrize("shape,axis", [((8192, 64), 0), ((2048, 24), 0), ((96, 40, 36), 1),
                                        ((3, 1000, 10), 1)])
def test_strided_axes_line_fastest(backend, shape, axis):
    # Strided axes run line-fastest (planner.StockhamPass.line_fastest): one pass, or a split of
    # the axis in two (8192), with tiles that do not divide the lines (24, 36, 10 columns).
    x = random_complex(shape, seed=len(shape))
    keep = x.copy()
    n = shape[axis]
    assert_accurate(pyfftgl.fft(x, axis=axis, backend=backend),
                    np.fft.fft(x.astype(np.complex128), axis=axis), n)
    assert_accurate(pyfftgl.ifft(x, axis=axis, backend=backend),
                    np.fft.ifft(x.astype(np.complex128), axis=axis), n)
    assert np.array_equal(x, keep)


def test_four_step_with_an_untiled_strided_pass(backend):
    # With 8 KB of shared memory, 2^17 = 256 x 512 can only split in two where its 512-point
    # strided pass goes line-fastest, 4 lines exchanging in halves (planner's untiled): the
    # same split 2^22 takes with 48 KB.
    small = Limits(8192, 1024, (1024, 1024, 64), (2**31 - 1, 65535, 65535), 2**32)
    n, batch = 2**17, 2
    x = random_complex((batch, n), seed=11)
    keep = x.copy()
    for inverse, ref in ((False, np.fft.fft), (True, np.fft.ifft)):
        plan = pyfftgl.FFTPlan(n, batch, inverse, backend=backend, limits=small)
        assert [p.untiled for p in plan.passes] == [True, False]
        assert_accurate(plan.execute(x), ref(x.astype(np.complex128)), n)
    assert np.array_equal(x, keep)


def test_strided_axis_in_one_line_fastest_pass(backend):
    # With 4.25 KB of shared memory a 256-point (or 200-point) strided axis fits no 4-line tile
    # but 4 lines exchanging in halves, staggered: one line-fastest pass (planner._untiled_axis,
    # 1600-3000 with 48 KB), forward and inverse, alone, as the column pass of a 2D transform,
    # and as each of Bluestein's two 256-point convolution FFTs (127 points, a prime).
    small = Limits(4352, 1024, (1024, 1024, 64), (2**31 - 1, 65535, 65535), 2**32)
    dev = get_device(backend)
    lim = planner.tighter(dev.info.limits, small)
    for shape, axes, ffts, m in (((256, 12), (0,), 1, 256), ((3, 256, 8), (1,), 1, 256),
                                 ((256, 256), (1, 0), 1, 256), ((200, 4), (0,), 1, 200),
                                 ((127, 8), (0,), 2, 256)):
        x = random_complex(shape, seed=sum(shape))
        keep = x.copy()
        for inverse, norm in ((False, "backward"), (True, "ortho")):
            spec = planner.plan_c2c(shape, axes, inverse, norm, lim)
            strided = [p for p in spec.passes if p.line_dims[0] > 1]
            assert len(strided) == ffts and all(
                p.n == m and p.line_fastest and p.lines == 4 for p in strided)
            ref = (np.fft.ifftn if inverse else np.fft.fftn)(x.astype(np.complex128),
                                                              axes=axes, norm=norm)
            plan = TransformPlan(spec, dev, lim, norm)
            assert_accurate(plan.execute(x), ref, shape[axes[0]], 2.0 if ffts == 2 else 1.0)
        assert np.array_equal(x, keep)


def test_contiguous_line_in_halves_in_one_pass(backend):
    # With 8 KB of shared memory one vec2 line holds 1024 points, one line in halves 2048: lines
    # of 1025-2048 points run in one pass (planner._line_pass; 6145-12288 with 48 KB) instead of
    # a four-step, forward and inverse, and with rfft's fused unpack and irfft's fused pack on
    # the half-length (4096 reals).
    small = Limits(8192, 1024, (1024, 1024, 64), (2**31 - 1, 65535, 65535), 2**32)
    dev = get_device(backend)
    lim = planner.tighter(dev.info.limits, small)
    for n in (1536, 2000, 2048):
        x = random_complex((5, n), seed=n)
        keep = x.copy()
        for inverse, norm in ((False, "backward"), (True, "ortho")):
            spec = planner.plan_c2c(x.shape, (1,), inverse, norm, lim)
            (p,) = spec.passes
            assert p.n == n and p.lines == 1 and p.sh_halves
            ref = (np.fft.ifft if inverse else np.fft.fft)(x.astype(np.complex128), norm=norm)
            plan = TransformPlan(spec, dev, lim, norm)
            assert_accurate(plan.execute(x), ref, n)
        assert np.array_equal(x, keep)
    # n reals go in (and come out of) the GPU as n/2 complex values
    r = np.random.default_rng(7).standard_normal((3, 4096)).astype(np.float32)
    spectrum = np.fft.rfft(r.astype(np.float64))
    for steps, data, ref in (([planner.Step("r2c", 1, n=4096)], r.view(np.complex64), spectrum),
                             ([planner.Step("c2r", 1, n=4096, norm="forward")],
                              spectrum.astype(np.complex64),
                              np.fft.irfft(spectrum, norm="forward"))):
        spec = planner.plan_steps(data.shape, steps, lim)
        (p,) = spec.passes
        assert p.n == 2048 and p.sh_halves and (p.real_unpack or p.real_pack) == 4096
        out = TransformPlan(spec, dev, lim, steps[0].norm).execute(data)
        assert_accurate(out if out.shape == ref.shape else out.view(np.float32), ref, 4096)


@pytest.mark.parametrize("n", [16384, 20000, 6151])
def test_four_step_last_pass_stores_line_fastest(backend, n):
    # The last pass of these four-steps (two passes even with 48 KB of shared memory) and of
    # Bluestein 6151's two convolution FFTs (14336 points) numbers its last stage line-fastest
    # and stores its strided lines from registers; the stage before it used the line-order
    # numbering, so the exchange in halves between them changes numbering.
    x = random_complex((5, n), seed=n % 89)
    keep = x.copy()
    plan = pyfftgl.FFTPlan(n, 5, False, backend=backend)
    assert any(p.store_line_fastest for p in plan.passes)
    assert_accurate(plan.execute(x), np.fft.fft(x.astype(np.complex128)), n)
    assert_accurate(pyfftgl.ifft(x, backend=backend), np.fft.ifft(x.astype(np.complex128)), n)
    assert np.array_equal(x, keep)


@pytest.mark.parametrize("n", [16384, 2**16])
def test_batched_four_step_line_fastest(backend, n):
    # The first pass of these four-steps runs line-fastest with its twiddle tables stored
    # digit-fastest (planner.StockhamPass.digit_fastest), forward and inverse.
    x = random_complex((3, n), seed=n % 97)
    keep = x.copy()
    plan = pyfftgl.FFTPlan(n, 3, False, backend=backend)
    assert plan.passes[0].digit_fastest
    assert_accurate(plan.execute(x), np.fft.fft(x.astype(np.complex128)), n)
    assert_accurate(pyfftgl.ifft(x, backend=backend), np.fft.ifft(x.astype(np.complex128)), n)
    assert np.array_equal(x, keep)


def test_rows_hand_columns_over_in_blocks(backend):
    # fft2 / fftn whose row pass writes its rows in blocks of 4 columns for the column pass
    # (planner._blocked_pair): odd row counts, columns that are no power of two, a batch of
    # images and a third axis after the two; forward and inverse, alone and through the API.
    dev = get_device(backend)
    lim = dev.info.limits
    for shape, axes in (((3, 12), (1, 0)), ((5, 20), (1, 0)), ((2, 6, 1000), (2, 1)),
                        ((4, 8, 16), (2, 1, 0)), ((7, 3, 36), (2, 1))):
        x = random_complex(shape, seed=sum(shape))
        keep = x.copy()
        for inverse, norm in ((False, "backward"), (True, "ortho")):
            spec = planner.plan_c2c(shape, axes, inverse, norm, lim)
            assert spec.passes[0].dst.blocked == (4, shape[-2], shape[-1]), shape
            ref = (np.fft.ifftn if inverse else np.fft.fftn)(x.astype(np.complex128),
                                                              axes=axes, norm=norm)
            n = math.prod(shape[ax] for ax in axes)
            assert_accurate(TransformPlan(spec, dev, lim, norm).execute(x), ref, n)
            api = pyfftgl.ifftn if inverse else pyfftgl.fftn
            assert_accurate(api(x, axes=axes[::-1], norm=norm, backend=backend), ref, n)
        assert np.array_equal(x, keep)
