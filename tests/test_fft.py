"""fft/ifft against numpy in float64 on both backends' real drivers."""
import math
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pytest

import pyfftgl
from pyfftgl import planner
from pyfftgl.backends import get_device
from pyfftgl.limits import Limits
from pyfftgl.plans import TransformPlan
from conftest import assert_accurate, random_complex

POW2 = [2**k for k in range(1, 13)]


@pytest.mark.parametrize("n", [pytest.param(n, marks=pytest.mark.quick) if n == 1024 else n
                               for n in POW2])
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


@pytest.mark.quick
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
    assert_accurate(pyfftgl.fft(f_order, backend=backend),
                    np.fft.fft(f_order.astype(np.complex128)), 32)
    rev = random_complex((8, 64), seed=6)[::-1, ::-2]
    assert_accurate(pyfftgl.fft(rev, backend=backend), np.fft.fft(rev.astype(np.complex128)), 32)


def test_empty_batch_and_lists(backend):
    assert pyfftgl.fft(np.zeros((0, 8), np.complex64), backend=backend).shape == (0, 8)
    got = pyfftgl.fft(np.array([1, 2, 3, 4], np.float32), backend=backend)
    assert np.array_equal(got, np.array([10, -2 + 2j, -2, -2 - 2j], np.complex64))  # exact sums


def test_plan_reports_gpu_time(backend):
    plan = pyfftgl.FFTPlan(1024, 64, False, backend=backend)
    x = random_complex((64, 1024), seed=8)
    start = time.perf_counter_ns()
    y = plan.execute(x, timed=True)
    assert 0 < plan.last_gpu_ns <= time.perf_counter_ns() - start  # within the call's wall time
    assert_accurate(y, np.fft.fft(x.astype(np.complex128)), 1024)
    assert len(plan.passes) == 1 and plan.dispatch_count == 1
    assert "1 pass" in repr(plan)


def small(shared=32768, groups=(2**31 - 1, 65535, 65535), buffer=2**32):
    """Limits to plan under as if the device were this small (planner.tighter)."""
    return Limits(shared, 1024, (1024, 1024, 64), groups, buffer)


def strided(plan):
    return [p for p in plan.passes if p.line_dims[0] > 1]


@dataclass(frozen=True)
class Variant:
    """A transform the planner must give one kernel variant (checked by `chosen` on the plan),
    run in one direction: a variant's code does not depend on the direction, whose twiddle signs
    the other tests cover (the untiled four-step, whose table layout does, runs both ways)."""
    shape: tuple
    axes: tuple
    chosen: Callable
    limits: Limits | None = None
    inverse: bool = False
    real: str = ""  # "r2c" or "c2r": a real transform of the last axis (n reals as n/2 complex)


def one_line_fastest(ffts, m):  # strided passes of length m, 4 lines each, exchanging in halves
    return lambda plan: len(strided(plan)) == ffts and all(
        p.n == m and p.line_fastest and p.lines == 4 for p in strided(plan))


def in_halves(n):  # one pass, one line exchanging in halves
    return lambda plan: [(p.n, p.lines, p.sh_halves) for p in plan.passes] == [(n, 1, True)]


def blocked(plan):  # the row pass writes blocks of 4 columns for the column pass
    return plan.passes[0].dst.blocked == (4, *plan.shape[-2:])


VARIANTS = {
    # More workgroups than a dispatch allows, and more lines than one buffer holds: several
    # dispatches per submission and several submissions, no workgroup silently dropped (48: a
    # length no wisdom file tunes, so the workgroup is the planner's default).
    "split-dispatches-and-chunks": Variant(
        (700, 48), (1,),
        lambda plan: plan.dispatch_count > len(plan.passes) and plan.spec.chunks > 1,
        small(groups=(3, 2, 1), buffer=64 * 1024)),
    # With 8 KB of shared memory 2^17 = 256 x 512 splits in two only where the 512-point strided
    # pass runs line-fastest, 4 lines exchanging in halves (planner's untiled), as 2^22 does with
    # 48 KB; its four-step table layout depends on the direction, so both run.
    "untiled-four-step": Variant((2, 2**17), (1,), lambda plan: [
        p.untiled for p in plan.passes] == [True, False], small(8192)),
    "untiled-four-step-inverse": Variant((2, 2**17), (1,), lambda plan: [
        p.untiled for p in plan.passes] == [True, False], small(8192), inverse=True),
    # With 4.25 KB a 256- (or 200-) point strided axis fits no 4-line tile but 4 lines in halves,
    # staggered (planner._untiled_axis): alone, mid-array, as the column pass of a 2D transform
    # and as both of Bluestein's 256-point convolution FFTs (127 points).
    "line-fastest-in-halves-256": Variant((256, 12), (0,), one_line_fastest(1, 256), small(4352)),
    "line-fastest-in-halves-middle-axis": Variant((3, 256, 8), (1,), one_line_fastest(1, 256),
                                                  small(4352), inverse=True),
    "line-fastest-in-halves-2d-columns": Variant((256, 256), (1, 0), one_line_fastest(1, 256),
                                                 small(4352)),
    "line-fastest-in-halves-200": Variant((200, 4), (0,), one_line_fastest(1, 200), small(4352),
                                          inverse=True),
    "line-fastest-in-halves-bluestein": Variant((127, 8), (0,), one_line_fastest(2, 256),
                                                small(4352)),
    # With 8 KB a vec2 line holds 1024 points and a line in halves 2048: lines of 1025-2048 run in
    # one pass (planner._line_pass) instead of a four-step, also with rfft's fused unpack and
    # irfft's fused pack on the half length.
    "line-in-halves-1536": Variant((5, 1536), (1,), in_halves(1536), small(8192)),
    "line-in-halves-2000": Variant((5, 2000), (1,), in_halves(2000), small(8192), inverse=True),
    "line-in-halves-2048": Variant((5, 2048), (1,), in_halves(2048), small(8192)),
    "line-in-halves-rfft-unpack": Variant((3, 4096), (1,), lambda plan: in_halves(2048)(plan)
                                          and plan.passes[0].real_unpack == 4096, small(8192),
                                          real="r2c"),
    "line-in-halves-irfft-pack": Variant((3, 4096), (1,), lambda plan: in_halves(2048)(plan)
                                         and plan.passes[0].real_pack == 4096, small(8192),
                                         real="c2r"),
    # Strided axes run line-fastest (planner.StockhamPass.line_fastest): one pass or the axis
    # split in two (8192), with tiles that do not divide the lines (24, 36, 10 columns).
    "strided-line-fastest-8192": Variant((8192, 64), (0,), lambda plan: len(plan.passes) == 2
                                         and all(p.line_fastest for p in plan.passes)),
    "strided-line-fastest-2048x24": Variant((2048, 24), (0,), lambda plan: all(
        p.line_fastest for p in plan.passes), inverse=True),
    "strided-line-fastest-40x36": Variant((96, 40, 36), (1,), lambda plan: all(
        p.line_fastest for p in plan.passes)),
    "strided-line-fastest-1000x10": Variant((3, 1000, 10), (1,), lambda plan: all(
        p.line_fastest for p in plan.passes), inverse=True),
    # The last pass of these four-steps (and of Bluestein 6151's 14336-point convolution FFTs)
    # numbers its last stage line-fastest and stores its strided lines from registers, after an
    # exchange in halves that changes numbering.
    "store-line-fastest-16384": Variant((5, 16384), (1,), lambda plan: any(
        p.store_line_fastest for p in plan.passes)),
    "store-line-fastest-20000": Variant((5, 20000), (1,), lambda plan: any(
        p.store_line_fastest for p in plan.passes), inverse=True),
    "store-line-fastest-bluestein": Variant((5, 6151), (1,), lambda plan: any(
        p.store_line_fastest for p in plan.passes)),
    # The first pass of these batched four-steps runs line-fastest with its twiddle tables stored
    # digit-fastest (planner.StockhamPass.digit_fastest).
    "digit-fastest-16384": Variant((3, 16384), (1,), lambda plan: plan.passes[0].digit_fastest,
                                   inverse=True),
    "digit-fastest-65536": Variant((3, 2**16), (1,), lambda plan: plan.passes[0].digit_fastest),
    # fft2 / fftn whose row pass hands its rows over in blocks of 4 columns (planner._blocked_pair):
    # odd row counts, columns that are no power of two, a batch of images, a third axis after.
    "blocked-3x12": Variant((3, 12), (1, 0), blocked),
    "blocked-5x20": Variant((5, 20), (1, 0), blocked, inverse=True),
    "blocked-batch-of-images": Variant((2, 6, 1000), (2, 1), blocked),
    "blocked-3d": Variant((4, 8, 16), (2, 1, 0), blocked, inverse=True),
    "blocked-36-columns": Variant((7, 3, 36), (2, 1), blocked),
}


QUICK_VARIANTS = ("split-dispatches-and-chunks", "blocked-3x12")


@pytest.mark.parametrize("name", [pytest.param(v, marks=pytest.mark.quick) if v in QUICK_VARIANTS
                                  else v for v in VARIANTS])
def test_kernel_variant(backend, name):
    v = VARIANTS[name]
    dev = get_device(backend)
    lim = planner.tighter(dev.info.limits, v.limits)
    rng = np.random.default_rng(sum(v.shape))
    norm = "ortho" if v.inverse else "backward"
    if v.real == "r2c":  # n reals go in as n/2 complex values
        x = rng.standard_normal(v.shape).astype(np.float32)
        data, ref = x.view(np.complex64), np.fft.rfft(x.astype(np.float64), norm=norm)
        steps = [planner.Step("r2c", 1, n=v.shape[1], norm=norm)]
    elif v.real == "c2r":
        spectrum = np.fft.rfft(rng.standard_normal(v.shape))
        data, ref = spectrum.astype(np.complex64), np.fft.irfft(spectrum, norm=norm)
        steps = [planner.Step("c2r", 1, n=v.shape[1], norm=norm)]
    else:
        x = random_complex(v.shape, seed=sum(v.shape))
        data = x
        ref = (np.fft.ifftn if v.inverse else np.fft.fftn)(x.astype(np.complex128), axes=v.axes,
                                                          norm=norm)
        steps = [planner.Step("c2c", ax, inverse=v.inverse, norm=norm) for ax in v.axes]
    keep = data.copy()
    plan = TransformPlan(planner.plan_steps(data.shape, steps, lim), dev, lim, norm)
    assert v.chosen(plan), plan
    got = plan.execute(data)
    if v.real == "c2r":
        got = got.view(np.float32)
    n = v.shape[-1] if v.real else math.prod(v.shape[ax] for ax in v.axes)
    assert_accurate(got, ref, n, 2.0 if "bluestein" in plan.spec.algorithm else 1.0)
    assert np.array_equal(data, keep)  # the input is never modified


# rfft2 / irfft2, over a batch of images and with a third axis (rfftn / irfftn), whose column axis
# runs on the rows' half-length complex view, the row pass pairing rows r and R - r
# (planner._columns_on_half): with 32 KB of shared memory 1536 rows go in one pass over 8 (or
# 4) columns and take a four-step over 9 (or 5). The inverse's spectrum is no real signal's, so
# numpy's dropping of each row's DC and Nyquist imaginary parts is checked too.
@pytest.mark.parametrize("shape,axes", [((1536, 16), (0, 1)), ((2, 1536, 8), (1, 2)),
                                        ((3, 1536, 8), (0, 1, 2))])
@pytest.mark.parametrize("inverse", [False, True])
def test_real_2d_with_paired_rows(backend, shape, axes, inverse):
    dev = get_device(backend)
    lim = planner.tighter(dev.info.limits, small(32768))
    rng = np.random.default_rng(len(shape) + inverse)
    norm = "ortho" if len(axes) == 3 else "backward"
    last, n = len(shape) - 1, shape[-1]
    sizes = [shape[ax] for ax in axes]
    if inverse:
        z = np.fft.rfftn(rng.standard_normal(shape), axes=axes)
        z = z + 0.3j * rng.standard_normal(z.shape)
        data, ref = z.astype(np.complex64), np.fft.irfftn(z, s=sizes, axes=axes, norm=norm)
        steps = [planner.Step("c2c", ax, inverse=True, norm=norm) for ax in axes[:-1]]
        steps.append(planner.Step("c2r", last, n=n, norm=norm))
    else:
        x = rng.standard_normal(shape).astype(np.float32)
        data, ref = x.view(np.complex64), np.fft.rfftn(x.astype(np.float64), axes=axes, norm=norm)
        steps = [planner.Step("r2c", last, n=n, norm=norm)]
        steps += [planner.Step("c2c", ax, norm=norm) for ax in reversed(axes[:-1])]
    keep = data.copy()
    plan = TransformPlan(planner.plan_steps(data.shape, steps, lim), dev, lim, norm)
    assert len(plan.passes) == len(axes) and any(p.real_rows == shape[-2] for p in plan.passes)
    got = plan.execute(data)
    if inverse:
        got = got.view(np.float32)
    assert_accurate(got, ref, math.prod(sizes))
    assert np.array_equal(data, keep)
