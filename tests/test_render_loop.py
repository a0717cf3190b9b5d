"""The device-resident path a render loop uses: calls that queue without waiting for each other,
and GL buffers that stay on the GPU whatever the program reads back."""
import ctypes
import time

import numpy as np
import pytest

import pyfftgl
from pyfftgl.backends import get_device
from pyfftgl.backends.gl import gl_proc
from pyfftgl.backends.vulkan import VulkanDevice

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
    and every call's result is right: each call has an input and output of its own (scaled
    copies of one image), so a call that read or overwrote another's data, or a work buffer
    another call was still using, gives a wrong answer."""
    dev = get_device("vulkan")
    shape = (256, 512) if dev.info.is_software else (8192, 8192)
    x, p, d, o = _loop("vulkan", shape, 8)
    xs = [x * np.complex64(k + 1 + 1j) for k in range(8)]
    ins = [pyfftgl.asarray(v, backend="vulkan") for v in xs]
    outs = [pyfftgl.asarray(np.zeros(shape, np.complex64), backend="vulkan") for _ in xs]
    for i, out in zip(ins, outs):  # recorded before the loop, so that issuing calls is quick
        p(i, out=out)
    dev.finish()
    p(d, out=o)
    before = dev.submissions
    for i, out in zip(ins, outs):
        p(i, out=out)
    assert dev.stats()["held"], "no call held back while the GPU was busy"
    dev.flush()
    assert not dev.stats()["held"]
    assert dev.submissions - before < 8
    dev.finish()
    for v, out in zip(xs, outs):
        assert_accurate(out.get(), np.fft.fft2(v.astype(np.complex128)), x.size)


def test_vulkan_batches_of_the_same_calls_run_again_without_being_recorded():
    """A loop's batches repeat: the same calls in the same order. A batch whose ops are those of
    a batch recorded before runs that command buffer again (recording two ops cost an H200's
    host 4.6 us a call); a batch of other calls (another output, then another plan) is recorded
    anew; every result is right."""
    dev = get_device("vulkan")
    shape = (256, 512) if dev.info.is_software else (4096, 4096)
    x, p, d, o = _loop("vulkan", shape, 1)
    q = pyfftgl.plan(shape, np.complex64, kind="ifft2", backend="vulkan")
    o2, o3 = (pyfftgl.asarray(np.zeros(shape, np.complex64), backend="vulkan") for _ in "ab")
    for plan, out in ((p, o), (p, o2), (q, o3)):
        plan(d, out=out)
    dev.finish()

    def loop(plan, out, calls=8 * VulkanDevice.HOLD):
        before = dev.stats()
        for _ in range(calls):
            plan(d, out=out)
        dev.finish()
        after = dev.stats()
        return (after["submissions"] - before["submissions"],
                after["recorded"] - before["recorded"])
    loop(p, o)
    submitted, recorded = loop(p, o)
    assert submitted >= 4 and recorded <= submitted // 2, (submitted, recorded)
    for plan, out in ((p, o2), (q, o3)):
        submitted, recorded = loop(plan, out)
        assert recorded >= 1, (submitted, recorded)
    ref = x.astype(np.complex128)
    for out, want in ((o, np.fft.fft2(ref)), (o2, np.fft.fft2(ref)), (o3, np.fft.ifft2(ref))):
        assert_accurate(out.get(), want, x.size)


def test_vulkan_batches_of_every_length_a_loop_makes_run_again():
    """The host's pace decides how many calls a batch holds, so a loop's batches vary in
    length: each length's command buffer stays pooled (up to VulkanDevice.POOL) and runs again.
    Here batches of 2 to 9 calls queued behind a long call, twice: the second round records
    (almost) none; when only the last few sequences were kept, every batch was recorded anew."""
    dev = get_device("vulkan")
    big = (1024, 1024) if dev.info.is_software else (8, 4096, 4096)
    _, q, dq, oq = _loop("vulkan", big, 1)
    x, p, d, o = _loop("vulkan", (64, 64), 1)
    q(dq, out=oq), p(d, out=o)
    dev.finish()

    def batches():
        before = dev.stats()["recorded"]
        for k in range(2, 10):
            q(dq, out=oq)  # submitted alone (the GPU is idle), and long: the calls after it wait
            for _ in range(k):
                p(d, out=o)
            dev.flush()
            dev.finish()
        return dev.stats()["recorded"] - before
    first = batches()
    assert first >= 4 and batches() <= 2, first
    assert_accurate(o.get(), np.fft.fft2(x.astype(np.complex128)), x.size)


def test_vulkan_calls_overlap_only_where_nothing_they_touch_is_in_flight():
    """A call of dispatches alone goes without its leading barrier (VulkanDevice.overlaps) only
    where its first dispatch reads nothing the dispatches queued since the last barrier write,
    and writes nothing they read or write. A loop of one two-pass plan does (its calls
    alternate work buffers); a call reading what the one before wrote, a one-pass call writing
    what the one before wrote or read, and the first call after host transfers do not; a
    one-pass call touching nothing in flight does. Every call's result differs from every
    other's, so a call that ran before what it waits for gives a wrong answer, and every
    result is right (bounds of as many transforms as made it)."""
    dev = get_device("vulkan")
    x = random_complex((64, 96), seed=21)
    fwd = pyfftgl.plan(x.shape, np.complex64, kind="fft2", backend="vulkan")
    rows = pyfftgl.plan(x.shape, np.complex64, kind="fft", backend="vulkan")
    assert [len(p.device_plans[0].passes) for p in (fwd, rows)] == [2, 1]
    xs = [x * np.complex64(k + 1 + 1j) for k in range(7)]  # each call's own input and result
    ins = [pyfftgl.asarray(v, backend="vulkan") for v in xs]
    outs = [pyfftgl.asarray(0 * x, backend="vulkan") for _ in xs]
    a, c, d = (pyfftgl.asarray(0 * x, backend="vulkan") for _ in range(3))
    b = outs[-1]

    def overlaps(plan, src, out):
        before = dev.overlapped
        plan(src, out=out)
        return dev.overlapped - before

    dev.finish()
    assert overlaps(fwd, ins[0], outs[0]) == 0  # after host transfers: in flight is unknown
    # out_k <- fft2(in_k): pass 1 of each call writes the work buffer the call before did not
    assert [overlaps(fwd, i, o) for i, o in zip(ins[1:], outs[1:])] == [1] * 6
    assert fwd.device_plans[0].stats()["work_sets"] == 2
    assert overlaps(fwd, b, c) == 0  # reads b, which the last pass wrote
    assert overlaps(rows, c, a) == 0  # reads c, which the last pass wrote
    assert overlaps(rows, b, a) == 0  # writes a, which the call before wrote
    assert overlaps(rows, c, b) == 0  # writes b, which the call before read
    assert overlaps(rows, a, d) == 1  # reads a, writes d: neither in flight
    f2 = np.fft.fft2(xs[-1].astype(np.complex128))
    ref = {"c": (np.fft.fft2(f2), 2), "a": (np.fft.fft(f2, axis=-1), 2),
           "b": (np.fft.fft(np.fft.fft2(f2), axis=-1), 3),
           "d": (np.fft.fft(np.fft.fft(f2, axis=-1), axis=-1), 3)}
    for v, out in zip(xs[:-1], outs[:-1]):
        assert_accurate(out.get(), np.fft.fft2(v.astype(np.complex128)), x.size)
    for name, got in (("a", a), ("b", b), ("c", c), ("d", d)):
        want, transforms = ref[name]
        assert_accurate(got.get(), want, x.size, factor=transforms)


@pytest.mark.quick
@pytest.mark.parametrize("backend", ["vulkan", "gl"])
def test_calls_in_flight_stay_ordered(backend):
    """A chain of device-resident calls, none waited for, each reading what the one before
    wrote: call k transforms buffer k into buffer k + 1. Every buffer starts with data of its
    own and every call's result differs from every other's (fft2 four times is the identity,
    so every fourth call also scales by sqrt(N)), so a call that read its input before the call
    before wrote it gives a wrong answer; each result is checked against numpy's transform of
    the input as the device holds it, to one transform's bounds."""
    shape = (64, 96)
    ortho = pyfftgl.plan(shape, np.complex64, kind="fft2", norm="ortho", backend=backend)
    scaled = pyfftgl.plan(shape, np.complex64, kind="fft2", backend=backend)
    calls = 40  # more than VulkanDevice.HOLD and VkSubmission.RING
    bufs = [pyfftgl.asarray(random_complex(shape, seed=100 + k), backend=backend)
            for k in range(calls + 1)]
    norms = []
    for k in range(calls):
        p, norm = (scaled, "backward") if k % 4 == 0 else (ortho, "ortho")
        p(bufs[k], out=bufs[k + 1])
        norms.append(norm)
    get_device(backend).flush()  # starts them; the reads below wait
    got = [b.get() for b in bufs]
    for k, norm in enumerate(norms):
        want = np.fft.fft2(got[k].astype(np.complex128), norm=norm)
        assert_accurate(got[k + 1], want, want.size)


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
                                            for b in plan.held_buffers().values()]:
            assert _storage(buf) == (1, 0), "a device buffer the host may map or write"
    p(d, out=o)
    assert np.array_equal(o.get(), first)
    assert_accurate(first, np.fft.fft2(x.astype(np.complex128)), x.size)
    with dev.current():
        assert dev.ctx.error == "GL_NO_ERROR"


@pytest.mark.parametrize("mapped", [True, False])
def test_gl_host_calls_through_staging(monkeypatch, mapped):
    """numpy in, numpy out through staging buffers the host maps once (GL 4.5: llvmpipe, NVIDIA)
    or, on older GL, through glBufferSubData / glGetBufferSubData: each of several calls in a
    row gets its own input's transform (a call that read the staging memory before the last
    call's copies finished would give the other's)."""
    from pyfftgl.backends.gl_storage import GLStorage
    dev = get_device("gl")
    with dev.current():
        assert ((dev.storage.staging(16, read=True)[1] is not None)
                == (dev.ctx.version_code >= 450))
    if not mapped:
        monkeypatch.setattr(GLStorage, "staging", lambda self, n, read: (
            self.ctx.buffer(reserve=max(4, n), dynamic=True), None))
    shape = (64, 40) if mapped else (64, 56)  # a plan of its own, recorded with this staging
    xs = [random_complex(shape, seed=20 + i) for i in range(3)]
    outs = [pyfftgl.fft2(x, backend="gl") for x in xs]
    for x, got in zip(xs, outs):
        assert_accurate(got, np.fft.fft2(x.astype(np.complex128)), x.size)


@pytest.mark.parametrize("backend", ["vulkan", "gl"])
def test_replays_in_flight_beyond_the_ring_stay_ordered(backend):
    """Two Plans replay their own calls back to back, a into b and b into a, none waited for:
    more calls of each than a submission's ring holds (VkSubmission.RING) and than are held back
    (VulkanDevice.HOLD), each reading what the one before wrote. fft2 with norm="ortho" four
    times over is the identity, so `a` ends where it began, and a call that read its input
    early (or a ring slot reused while in flight) leaves something else."""
    from pyfftgl.backends.vulkan import VkSubmission, VulkanDevice
    shape = (64, 96)
    x = random_complex(shape, seed=12)
    a = pyfftgl.asarray(x, backend=backend)
    b = pyfftgl.asarray(np.zeros(shape, np.complex64), backend=backend)
    forth, back = (pyfftgl.plan(shape, np.complex64, kind="fft2", norm="ortho", backend=backend)
                   for _ in range(2))
    rounds = 2 * (VkSubmission.RING + VulkanDevice.HOLD)  # an even count: four transforms each
    for _ in range(rounds):
        forth(a, out=b)
        back(b, out=a)
    got = a.get()
    # every round reverses both axes (two ortho transforms); the error grows with the count
    assert_accurate(got, x.astype(np.complex128), x.size, factor=2 * rounds)


def test_gl_replay_rebinds_what_the_caller_bound_in_between():
    """A replayed GL call skips the bindings its previous call left in place, but only where
    nothing came in between: buffers the caller binds at the same storage-buffer bindings inside
    `with device.current()` are replaced by the next call, which reads and writes its own."""
    dev = get_device("gl")
    shape = (32, 48)
    x = random_complex(shape, seed=13)
    p = pyfftgl.plan(shape, np.complex64, kind="fft2", backend="gl")
    d = pyfftgl.asarray(x, backend="gl")
    o = pyfftgl.asarray(np.zeros(shape, np.complex64), backend="gl")
    p(d, out=o)
    p(d, out=o)  # a replay: its bindings left in place by the call before
    with dev.current() as ctx:
        junk = ctx.buffer(np.full(x.size * 2, 7.0, np.float32).tobytes())
        for binding in range(4):
            junk.bind_to_storage_buffer(binding)
    p(d, out=o)
    got = o.get()
    assert_accurate(got, np.fft.fft2(x.astype(np.complex128)), x.size)
    with dev.current():
        assert np.all(np.frombuffer(junk.read(), np.float32) == 7.0), "the caller's buffer written"
        junk.release()
