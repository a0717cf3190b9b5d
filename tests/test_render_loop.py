"""The device-resident path a render loop uses: calls that queue without waiting for each other,
and GL buffers that stay on the GPU whatever the program reads back."""
import ctypes
import time

import numpy as np
import pytest

import pyfftgl
from pyfftgl.backends import get_device
from pyfftgl.backends.gl import gl_proc

from conftest import assert_accurate, random_complex

GL_BUFFER_IMMUTABLE_STORAGE, GL_BUFFER_STORAGE_FLAGS = 0x821F, 0x8220


def _loop(backend, shape, calls):
    x = random_complex(shape, seed=11)
    p = pyfftgl.plan(shape, np.complex64, kind="fft2", backend=backend)
    d = pyfftgl.asarray(x, backend=backend)
    o = pyfftgl.asarray(np.zeros(shape, np.complex64), backend=backend)
    return x, p, d, o


def test_vulkan_back_to_back_calls_queue_without_waiting():
    """Several calls of one plan are in flight at once: issuing them takes a fraction of one
    call's device time (lavapipe runs submissions on its own thread, as a GPU would)."""
    dev = get_device("vulkan")
    # A call whose device time dwarfs the host's cost of submitting one, on any driver.
    shape = (256, 512) if dev.info.is_software else (8192, 8192)
    x, p, d, o = _loop("vulkan", shape, 4)
    p(d, out=o)
    dev.finish()
    t0 = time.perf_counter()
    p(d, out=o)
    dev.finish()
    one_call = time.perf_counter() - t0
    t0 = time.perf_counter()
    for _ in range(4):
        p(d, out=o)
    issued = time.perf_counter() - t0
    dev.finish()
    # Waiting for each other, four calls would take at least three calls' device time to issue.
    assert issued < 0.5 * one_call, f"4 calls took {issued * 1e3:.1f} ms to issue; one call " \
                                    f"runs {one_call * 1e3:.1f} ms"
    assert_accurate(o.get(), np.fft.fft2(x.astype(np.complex128)), x.size)


def test_vulkan_calls_made_while_the_gpu_is_busy_share_a_submission():
    """Each submission leaves NVIDIA's GPU idle for about 5 us, so calls made while the GPU is
    busy are held and submitted together (at most VulkanDevice.HOLD of them): eight calls behind
    a busy GPU take fewer than eight submissions, flush() submits what is held without waiting,
    and the last call's result is right."""
    dev = get_device("vulkan")
    shape = (256, 512) if dev.info.is_software else (8192, 8192)
    x, p, d, o = _loop("vulkan", shape, 8)
    p(d, out=o)
    dev.finish()
    before = dev.submissions
    for _ in range(8):
        p(d, out=o)
    assert dev._held, "no call held back while the GPU was busy"
    dev.flush()
    assert not dev._held
    assert dev.submissions - before < 8
    dev.finish()
    assert_accurate(o.get(), np.fft.fft2(x.astype(np.complex128)), x.size)


def test_vulkan_calls_overlap_only_where_nothing_they_touch_is_in_flight():
    """A call of dispatches alone goes without its leading barrier (VulkanDevice.overlaps) only
    where its first dispatch reads nothing the dispatches queued since the last barrier write,
    and writes nothing they read or write. A loop of one two-pass plan does (its calls
    alternate work buffers); a call reading what the one before wrote, a one-pass call writing
    what the one before wrote or read, and the first call after host transfers do not; a
    one-pass call touching nothing in flight does. Every result is right."""
    dev = get_device("vulkan")
    x = random_complex((64, 96), seed=21)
    fwd = pyfftgl.plan(x.shape, np.complex64, kind="fft2", backend="vulkan")
    rows = pyfftgl.plan(x.shape, np.complex64, kind="fft", backend="vulkan")
    assert [len(p.device_plans[0].passes) for p in (fwd, rows)] == [2, 1]
    a, b, c, d = (pyfftgl.asarray(v, backend="vulkan") for v in (x, 0 * x, 0 * x, 0 * x))

    def overlaps(plan, src, out):
        before = dev.overlapped
        plan(src, out=out)
        return dev.overlapped - before

    dev.finish()
    assert overlaps(fwd, a, b) == 0  # after host transfers: what is in flight is unknown
    assert [overlaps(fwd, a, b) for _ in range(6)] == [1] * 6  # b <- fft2(a), pass 1 writes w0
    assert fwd.device_plans[0]._other_work is not None
    assert overlaps(fwd, b, c) == 0  # reads b, which the last pass wrote
    assert overlaps(rows, c, a) == 0  # reads c, which the last pass wrote
    assert overlaps(rows, c, a) == 0  # writes a, which the call before wrote
    assert overlaps(rows, b, c) == 0  # writes c, which the call before read
    assert overlaps(rows, a, d) == 1  # reads a, writes d: neither in flight
    ref_b = np.fft.fft2(x.astype(np.complex128))
    ref_a = np.fft.fft(np.fft.fft2(ref_b), axis=-1)
    for got, ref in ((b, ref_b), (c, np.fft.fft(ref_b, axis=-1)), (a, ref_a),
                     (d, np.fft.fft(ref_a, axis=-1))):
        assert_accurate(got.get(), ref, x.size, factor=4)


@pytest.mark.quick
@pytest.mark.parametrize("backend", ["vulkan", "gl"])
def test_calls_in_flight_stay_ordered(backend):
    """A chain of device-resident calls, none waited for, reads what the one before wrote."""
    x = random_complex((64, 96), seed=12)
    fwd = pyfftgl.plan(x.shape, np.complex64, kind="fft2", backend=backend)
    inv = pyfftgl.plan(x.shape, np.complex64, kind="ifft2", backend=backend)
    a = pyfftgl.asarray(x, backend=backend)
    b = pyfftgl.asarray(np.zeros_like(x), backend=backend)
    for _ in range(33):  # more than the calls a plan keeps in flight (VkSubmission.RING)
        fwd(a, out=b)
        inv(b, out=a)
    get_device(backend).flush()  # starts them; the reads below wait
    assert_accurate(a.get(), x, x.size, factor=33 * 1.5)
    assert_accurate(b.get(), np.fft.fft2(x.astype(np.complex128)), x.size, factor=33 * 1.5)


def _storage(buf) -> tuple[int, int]:
    get = gl_proc("glGetNamedBufferParameteriv", None, ctypes.c_uint32, ctypes.c_uint32,
                  ctypes.POINTER(ctypes.c_int32))
    values = []
    for pname in (GL_BUFFER_IMMUTABLE_STORAGE, GL_BUFFER_STORAGE_FLAGS):
        v = ctypes.c_int32(-1)
        get(buf.buf.glo, pname, ctypes.byref(v))
        values.append(v.value)
    return tuple(values)


def test_gl_buffers_stay_on_the_device_after_a_read_back():
    """NVIDIA's GL moves a buffer the host reads into system memory for the rest of the process
    (12x slower loops after one `.get()`). Device buffers are immutable storage with no host
    access at all, so no driver can keep a host copy of them, and reads go through a staging
    copy; the loop still computes right after a read."""
    dev = get_device("gl")
    x, p, d, o = _loop("gl", (64, 64), 1)
    p(d, out=o)
    first = o.get()
    with dev.current():  # GL queries of our own, with the library's context current
        for buf in [d.buffer, o.buffer] + [b for plan in p.device_plans
                                            for b in plan._buffers.values()]:
            assert _storage(buf) == (1, 0), "a device buffer the host may map or write"
    p(d, out=o)
    assert np.array_equal(o.get(), first)
    assert_accurate(first, np.fft.fft2(x.astype(np.complex128)), x.size)
    with dev.current():
        assert dev.ctx.error == "GL_NO_ERROR"
