"""numpy-in / numpy-out calls as issue 51 times them: each result is read out of the download
memory straight into the new result array (Submission.result(out=)), from the host-cached
memory type where the device has one (tools/kp_patch.py, 14); the caller's array is only read,
a repeated call allocates nothing on the device, and on the host only its result."""
import gc
import os
import threading
import time
import tracemalloc

import numpy as np
import pytest

import pyfftgl
from pyfftgl import hostcopy
from pyfftgl.backends import get_device

from conftest import assert_accurate, random_complex


def _cases():
    rng = np.random.default_rng(5)
    reals = rng.standard_normal((96, 128)).astype(np.float32)
    return [("fft2", random_complex((64, 96)), {"axes": (-2, -1)}, np.fft.fft2, 64 * 96),
            ("rfft2", reals, {"axes": (-2, -1)}, np.fft.rfft2, 96 * 128),
            ("fft", random_complex((3, 32, 256), seed=1), {"axis": -1}, np.fft.fft, 256)]


@pytest.mark.parametrize("case", range(3))
def test_one_shot_calls_match_numpy_and_allocate_nothing_when_repeated(backend, case):
    kind, x, kw, ref_fn, n = _cases()[case]
    before = x.copy()
    ref = ref_fn(x.astype(np.complex128 if x.dtype.kind == "c" else np.float64), **kw)
    call = getattr(pyfftgl, kind)
    first = call(x, backend=backend, **kw)
    assert first.dtype == np.complex64 and first.shape == ref.shape
    assert_accurate(first.ravel(), ref.ravel(), n)
    dev = get_device(backend)
    gc.collect()
    dev.finish()
    made = dict(dev.live)
    for _ in range(3):
        again = call(x, backend=backend, **kw)
        assert again is not first
        np.testing.assert_array_equal(again, first)
    assert dev.live == made  # the plan's upload, download and staging buffers reused
    tracemalloc.start()
    try:
        again = call(x, backend=backend, **kw)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # the host allocates the result and nothing of its size besides (one copy in, one out;
    # WebGPU keeps each run's downloads, read once, for result(i): one more)
    extra = again.nbytes if backend == "webgpu" else 0
    assert peak < again.nbytes + extra + (8 << 10), (peak, again.nbytes)
    np.testing.assert_array_equal(x, before)  # the caller's array is only read


def test_result_into_a_given_array_reads_the_download(backend):
    """Submission.result(i, out=): the download's first out.size values copied into `out`
    (the buffer's bytes, as a device read returns them); a wrong `out` raises ValueError."""
    dev = get_device(backend)
    data = np.arange(64, dtype=np.float32) * 0.5 - 3
    buf = dev.buffer(data.nbytes)
    sub = dev.record([], uploads=[buf], downloads=[buf])
    sub.run([data])
    whole = sub.result(0)
    np.testing.assert_array_equal(whole, data)
    part = np.full(40, np.nan, np.float32)
    assert sub.result(0, out=part) is part
    np.testing.assert_array_equal(part, data[:40])
    for bad in (np.empty(65, np.float32), np.empty(8, np.float64), np.empty((8, 8), np.float32).T):
        with pytest.raises(ValueError):
            sub.result(0, out=bad)


@pytest.mark.parametrize("size", [7, hostcopy.PARALLEL_BYTES // 4 + 3, 5 * (1 << 20) + 1])
def test_host_copies_move_every_element(size):
    """hostcopy.copy: a copy split across threads (sizes that do not divide evenly) equals the
    source, element for element, and leaves the source alone."""
    src = np.arange(size, dtype=np.float32) * 0.25 - 7
    kept = src.copy()
    dst = np.full(size, np.nan, np.float32)
    hostcopy.copy(dst, src)
    np.testing.assert_array_equal(dst, kept)
    np.testing.assert_array_equal(src, kept)


def test_large_one_shot_call_goes_through_split_copies(backend):
    """An fft2 whose upload and download are larger than hostcopy.PARALLEL_BYTES (on Vulkan
    each split across threads where the machine has more than one core) matches numpy."""
    x = random_complex((512, 1280), seed=3)
    assert x.nbytes >= hostcopy.PARALLEL_BYTES
    got = pyfftgl.fft2(x, backend=backend)
    assert_accurate(got.ravel(), np.fft.fft2(x.astype(np.complex128)).ravel(), 512 * 1280)


@pytest.mark.parametrize("threads", ["1", "4"])
def test_pipelined_copies_hand_each_piece_over_in_order_once_it_is_whole(monkeypatch, threads):
    """hostcopy.pipelined: before(k) runs while piece k is still untouched, after(k) once
    pieces 0..k are copied, each once and in order; the copy is exact for a size that the pieces
    do not divide, on one thread and on several."""
    monkeypatch.setenv("PYFFTGL_COPY_THREADS", threads)
    size = 5 * hostcopy.PIECE_BYTES + 4097
    src = (np.arange(size) % 251 + 1).astype(np.uint8)
    dst = np.zeros(size, np.uint8)
    bounds = hostcopy.pieces(size)
    assert len(bounds) == 5 and bounds[0][0] == 0 and bounds[-1][1] == size
    assert all(b == c for (_, b), (c, _) in zip(bounds, bounds[1:]))
    seen = []

    def before(k):
        a, b = bounds[k]
        assert not dst[a:b].any()
        seen.append(("before", k))

    def after(k):
        b = bounds[k][1]
        np.testing.assert_array_equal(dst[:b], src[:b])
        seen.append(("after", k))
    hostcopy.pipelined(dst, src, bounds, before=before, after=after)
    np.testing.assert_array_equal(dst, src)
    assert [k for what, k in seen if what == "before"] == list(range(5))
    assert [k for what, k in seen if what == "after"] == list(range(5))


@pytest.mark.parametrize("shape", [(1000, 1030), (700, 1500)])
def test_one_shot_calls_in_many_pieces_match_numpy(backend, shape):
    """An rfft2 whose upload and download each take several pieces (hostcopy.pieces), of
    sizes the pieces do not divide, and an fftconvolve with two uploads in pieces, match
    numpy and scipy; the caller's arrays are left as they were."""
    from scipy import signal as ss
    x = np.random.default_rng(11).standard_normal(shape).astype(np.float32)
    assert len(hostcopy.pieces(x.nbytes)) > 2
    kept = x.copy()
    got = pyfftgl.rfft2(x, backend=backend)
    assert_accurate(got.ravel(), np.fft.rfft2(x.astype(np.float64)).ravel(), x.size)
    k = random_complex(shape, seed=12)
    conv = pyfftgl.signal.fftconvolve(x, k, mode="same", backend=backend)
    ref = ss.fftconvolve(x.astype(np.float64), k.astype(np.complex128), mode="same")
    assert conv.dtype == np.complex64
    assert np.linalg.norm(conv - ref) <= 1e-5 * np.linalg.norm(ref)
    np.testing.assert_array_equal(x, kept)


def test_copy_threads_follow_the_environment(monkeypatch):
    """PYFFTGL_COPY_THREADS=1 keeps copies on the caller's thread; a bad value is ignored."""
    monkeypatch.setenv("PYFFTGL_COPY_THREADS", "1")
    assert hostcopy.threads() == 1
    src = np.arange(3 << 20, dtype=np.float32)
    dst = np.zeros_like(src)
    hostcopy.copy(dst, src)
    np.testing.assert_array_equal(dst, src)
    for bad in ("0", "-2", "many", ""):
        monkeypatch.setenv("PYFFTGL_COPY_THREADS", bad)
        assert hostcopy.threads() == min(hostcopy.MAX_THREADS, os.cpu_count() or 1)


def test_copy_threads_exit_when_idle(monkeypatch):
    """The copy threads exit once idle (NVIDIA's GL runs every call slower while other threads
    live), and a copy after they have gone starts them again and is still exact."""
    monkeypatch.setattr(hostcopy, "IDLE_SECONDS", 0.05)
    def live():
        return [t for t in threading.enumerate() if t.name.startswith("pyfftgl-copy")]
    src = np.arange(3 << 20, dtype=np.float32) - 5
    for _ in range(2):
        dst = np.zeros_like(src)
        hostcopy.copy(dst, src)
        np.testing.assert_array_equal(dst, src)
        deadline = time.monotonic() + 10
        while live() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not live()


def test_a_repeated_call_reuses_its_steps_and_argument_sets_stay_apart():
    """A call's jobs are worked out once per argument set (kinds.steps_for), and sets that
    differ in one argument (dtype, an axis, norm, a length, its type) never share them."""
    from pyfftgl.kinds import steps_for
    plain = steps_for("rfft2", (8, 16), np.float32, s=None, axes=(-2, -1), norm=None)
    assert steps_for("rfft2", (8, 16), np.float32, s=None, axes=(-2, -1), norm=None) is plain
    others = [steps_for("rfft2", (8, 16), np.float64, s=None, axes=(-2, -1), norm=None),
              steps_for("rfft2", (8, 16), np.float32, s=None, axes=(-1, -2), norm=None),
              steps_for("rfft2", (8, 16), np.float32, s=None, axes=(-2, -1), norm="ortho"),
              steps_for("rfft2", (8, 16), np.float32, s=(8, 12), axes=(-2, -1), norm=None),
              steps_for("rfft2", (8, 16), np.float32, s=[8, 16], axes=[-2, -1], norm=None)]
    assert all(o is not plain for o in others)
    assert others[0].jobs[0].dtype == np.complex128 and others[3].out_shape == (8, 7)
    x = np.random.default_rng(3).standard_normal((8, 16))
    for _ in range(2):  # each set again, after the others: its own result
        for kw in ({}, {"axes": (-1, -2)}, {"norm": "ortho"}, {"s": (8, 12)}, {"axes": (0, 1)}):
            for dt in (np.float32, np.float64):
                got = pyfftgl.rfft2(x.astype(dt), **kw)
                ref = np.fft.rfft2(x, **kw)
                assert got.shape == ref.shape and got.dtype == (np.complex64 if dt == np.float32
                                                                 else np.complex128)
                assert_accurate(got.ravel(), ref.ravel(), 8 * 16)
    for _ in range(2):  # a bad set raises each time, not only the first
        with pytest.raises(ValueError):
            steps_for("rfft2", (8, 16), np.float32, s=None, axes=(-2, -1), norm="bad")
