"""The WebGPU backend's own checks, run by test_webgpu.py's tier on each wgpu adapter (with
PYFFTGL_TEST_BACKENDS=webgpu): fp64 where the adapter offers shader-f64 and its refusal where not,
webgpu-default's limits, timed runs, the uniform-buffer push path and checked modules."""
import os
import subprocess
import sys

import numpy as np
import pytest

import pyfftgl
from pyfftgl.plans import FFTPlan
from pyfftgl.backends import get_device
from pyfftgl.backends.base import PrecisionUnavailable
from conftest import assert_accurate, random_complex


def test_float64_where_shader_f64_else_refused():
    dev = get_device("webgpu")
    x = np.random.default_rng(1).standard_normal((3, 96)) + 0j
    if "shader-f64" in dev.adapter.features:
        y = pyfftgl.fft(x, backend="webgpu")
        assert y.dtype == np.complex128
        np.testing.assert_allclose(y, np.fft.fft(x), rtol=0, atol=1e-12)
    else:
        with pytest.raises(PrecisionUnavailable, match="lacks the shader-f64 feature.*float32"):
            pyfftgl.fft(x, backend="webgpu")


@pytest.mark.parametrize("n", [1000, 4099, 8192, 15015, 65536])
def test_webgpu_default_limits(n):
    x = random_complex((1 if n > 16384 else 2, n), seed=n)
    with pyfftgl.device_profile("webgpu-default"):
        lim = get_device("webgpu").info.limits
        assert (lim.max_shared_bytes, lim.max_invocations) == (16384, 256)
        plan = FFTPlan(n, x.shape[0], False, backend="webgpu")
        assert all(p.shared_bytes <= 16384 and p.invocations <= 256 for p in plan.spec.passes
                   if hasattr(p, "invocations")), plan
        got = pyfftgl.fft(x, backend="webgpu")
    assert_accurate(got, np.fft.fft(x.astype(np.complex128)), n, 2.0 if n == 4099 else 1.0)


def test_timed_run_gives_gpu_time():
    dev = get_device("webgpu")
    plan = FFTPlan(256, 4, False, backend="webgpu")
    x = random_complex((4, 256))
    got = plan.execute(x, timed=True)
    assert plan.last_gpu_ns > 0 and dev.timestamps == ("timestamp-query" in dev.adapter.features)
    assert_accurate(got, np.fft.fft(x.astype(np.complex128), axis=1), 256)


@pytest.mark.parametrize("switch", ["PYFFTGL_WEBGPU_UNIFORM", "PYFFTGL_WEBGPU_CHECKED"])
def test_uniform_push_values_and_checked_modules(switch):
    code = ("import numpy as np, pyfftgl, scipy.fft as sf\n"
            "x = np.random.default_rng(0).standard_normal((6, 40)).astype(np.float32)\n"
            "d = pyfftgl.get_device('webgpu')\n"
            "assert d.immediates == (%r != 'PYFFTGL_WEBGPU_UNIFORM') and d.checked == (%r == "
            "'PYFFTGL_WEBGPU_CHECKED')\n"
            "y = pyfftgl.dctn(x, backend='webgpu')\n"
            "r = sf.dctn(x.astype(np.float64))\n"
            "assert np.abs(y - r).max() <= 1e-5 * np.abs(r).max(), np.abs(y - r).max()\n"
            % (switch, switch))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, **{switch: "1"}), timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]


def test_calls_held_into_one_pass_bind_their_own_buffers():
    # Held calls share one compute pass, which sets a pipeline or bind group only where it
    # changes: calls of one plan on several buffers, then of another plan, all held at once.
    xs = [random_complex((4, 256), seed=s) for s in range(3)] + [random_complex((8, 64), seed=9)]
    dev = get_device("webgpu")
    ins = [pyfftgl.asarray(x, backend="webgpu") for x in xs]
    plans = [pyfftgl.plan(x.shape, np.complex64, kind="fft", backend="webgpu") for x in xs]
    outs = [p(d) for p, d in zip(plans, ins)]
    dev.finish()
    before = dev.submissions
    for _ in range(2):
        for p, d, o in zip(plans, ins, outs):
            p(d, out=o)
    dev.finish()
    assert dev.submissions - before <= 2  # held, not one submission per call
    for x, o in zip(xs, outs):
        assert_accurate(o.get(), np.fft.fft(x.astype(np.complex128)), x.shape[-1])


def test_buffers_are_ranges_of_a_few_large_wgpu_buffers():
    """Device arrays are disjoint, aligned ranges of pool blocks (webgpu_storage: where wgpu's
    own buffers of tens of MiB ran kernels slower on NVIDIA), each holding its own data through
    transforms; a buffer of LARGE or more is a wgpu buffer of its own; trimming returns the pool
    to its floor."""
    import gc
    dev, pool = get_device("webgpu"), pyfftgl.memory_pool("webgpu")
    x = np.arange(40, dtype=np.float32).astype(np.complex64)
    pyfftgl.fft(pyfftgl.asarray(x, backend="webgpu")).get()  # what a first call keeps: the floor
    pyfftgl.plan_cache.clear()
    gc.collect()
    pool.free_all_blocks()
    floor = pool.stats()
    arrays = [pyfftgl.asarray(x + i, backend="webgpu") for i in range(300)]
    spans = {}
    for buf, offset, nbytes in [(a.buffer.buf, a.buffer.offset, a.buffer.nbytes) for a in arrays]:
        spans.setdefault(id(buf), []).append((offset, nbytes))
    assert len(spans) == 1 and pool.stats()["blocks"] == floor["blocks"] + 1
    align = dev.dev.limits["min-storage-buffer-offset-alignment"]
    ranges = sorted(next(iter(spans.values())))
    assert all(o % align == 0 for o, _ in ranges)
    assert all(a + n <= b for (a, n), (b, _) in zip(ranges, ranges[1:])), "ranges overlap"
    for i in (0, 1, 150, 299):
        np.testing.assert_array_equal(arrays[i].get(), x + i)
        assert_accurate(pyfftgl.fft(arrays[i]).get(), np.fft.fft(x.astype(np.complex128) + i),
                        40)
    large = dev.buffer(dev.storage.large)
    assert large.offset == 0 and large.buf.size >= dev.storage.large
    assert id(large.buf) not in spans
    del arrays, large
    pyfftgl.plan_cache.clear()
    gc.collect()
    pool.free_all_blocks()
    assert pool.stats() == floor
