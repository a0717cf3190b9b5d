"""Non-finite input stays in its batch member, and results are deterministic.

A NaN or an Inf in one member of a batch makes that member's output non-finite and leaves every
other member bit-identical to a run without it, on each kind of pass: a one-dispatch line, a
four-step (forced with a small shared memory, as in test_fft.py), Bluestein, real-to-complex
and complex-to-real, and a batched 2D transform. Repeated runs are bit-identical and the input
is left bit-identical."""
import numpy as np

import pyfftgl
from pyfftgl import planner
from pyfftgl.backends import get_device
from pyfftgl.limits import Limits
from pyfftgl.plans import TransformPlan

from conftest import random_complex

SMALL = Limits(8192, 1024, (1024, 1024, 64), (2**31 - 1, 65535, 65535), 2**32)


def _plan(backend, shape, axes, limits=None, steps=None):
    """A TransformPlan and the complex64 data it takes: c2c over `axes`, or `steps`."""
    dev = get_device(backend)
    lim = planner.tighter(dev.info.limits, limits)
    if steps is None:
        spec = planner.plan_c2c(shape, axes, False, "backward", lim)
    else:
        spec = planner.plan_steps(shape, steps, lim)
    return TransformPlan(spec, dev, lim, "backward")


def _cases(backend):
    """(label, plan, input shape, batch axis, pass kinds the plan must contain)."""
    return [
        ("line", _plan(backend, (5, 256), (1,)), (5, 256)),
        ("four-step", _plan(backend, (3, 2**14), (1,), SMALL), (3, 2**14)),
        ("bluestein", _plan(backend, (4, 1009), (1,)), (4, 1009)),
        ("rfft", _plan(backend, (4, 128), None, steps=[planner.Step("r2c", 1, n=256)]), (4, 128)),
        ("irfft", _plan(backend, (4, 129), None, steps=[planner.Step("c2r", 1, n=256)]), (4, 129)),
        ("2d batch", _plan(backend, (3, 24, 40), (1, 2)), (3, 24, 40)),
    ]


def _bits(a):
    return np.ascontiguousarray(a).view(np.uint32)


def test_non_finite_stays_in_its_batch_member(backend):
    for label, plan, shape in _cases(backend):
        if label == "four-step":
            assert "four-step" in plan.spec.algorithms, "the small limits must force a four-step"
        if label == "bluestein":
            assert "bluestein" in plan.spec.algorithms
        x = random_complex(shape, seed=len(shape) + shape[-1])
        clean = plan.execute(x)
        assert np.all(np.isfinite(clean)), label
        for member, bad in ((1, np.nan), (0, np.inf), (shape[0] - 1, -np.inf),
                            (1, complex(np.nan, 1.0))):
            y = x.copy()
            y[(member,) + tuple(s // 3 for s in shape[1:])] = bad
            keep = y.copy()
            got = plan.execute(y)
            assert np.array_equal(_bits(y), _bits(keep)), f"{label}: the input was written"
            others = [i for i in range(shape[0]) if i != member]
            assert np.array_equal(_bits(got[others]), _bits(clean[others])), \
                f"{label}: {bad} in member {member} changed another member"
            # every output depends on every input of its member (for the real steps: every
            # complex pair of reals holds at least one non-finite value)
            assert not np.any(np.isfinite(got[member])), f"{label}: finite output beside {bad}"


def test_public_functions_keep_non_finite_in_its_member(backend):
    x = random_complex((4, 60), seed=5)
    r = np.random.default_rng(6).standard_normal((4, 64)).astype(np.float32)
    for f, a in ((pyfftgl.fft, x), (pyfftgl.ifft, x), (pyfftgl.rfft, r), (pyfftgl.irfft, x),
                 (pyfftgl.hfft, x), (pyfftgl.ihfft, r)):
        clean = f(a, backend=backend)
        b = a.copy()
        b[2, 7] = np.inf
        got = f(b, backend=backend)
        assert np.array_equal(_bits(got[[0, 1, 3]]), _bits(clean[[0, 1, 3]])), f.__name__
        assert not np.all(np.isfinite(got[2])), f.__name__


def test_repeated_runs_are_bit_identical(backend):
    for label, plan, shape in _cases(backend):
        x = random_complex(shape, seed=11)
        keep = x.copy()
        first = plan.execute(x)
        for _ in range(3):
            assert np.array_equal(_bits(plan.execute(x)), _bits(first)), label
        assert np.array_equal(_bits(x), _bits(keep)), label


def test_public_calls_and_device_arrays_are_deterministic(backend):
    x = random_complex((6, 96), seed=12)
    r = np.random.default_rng(13).standard_normal((6, 96)).astype(np.float32)
    keep_x, keep_r = x.copy(), r.copy()
    calls = [lambda: pyfftgl.fft2(x, backend=backend), lambda: pyfftgl.rfft(r, backend=backend),
             lambda: pyfftgl.irfft(x, backend=backend), lambda: pyfftgl.fft(x, n=101,
                                                                              backend=backend)]
    firsts = [c() for c in calls]
    pyfftgl.plan_cache.clear()  # fresh plans (new buffers and tables) give the same bits
    for c, first in zip(calls, firsts):
        for _ in range(2):
            assert np.array_equal(_bits(c()), _bits(first))
    assert np.array_equal(_bits(x), _bits(keep_x)) and np.array_equal(_bits(r), _bits(keep_r))
    d = pyfftgl.asarray(x, backend=backend)
    out = pyfftgl.asarray(np.zeros_like(x), backend=backend)
    first = pyfftgl.fft2(d).get()
    assert np.array_equal(_bits(first), _bits(firsts[0]))  # the device path: the same kernels
    for _ in range(3):
        pyfftgl.fft2(d, out=out)
        assert np.array_equal(_bits(out.get()), _bits(first))
    assert np.array_equal(_bits(d.get()), _bits(keep_x))
