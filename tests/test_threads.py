"""Every public call from many threads at once, on both APIs, each result checked against
numpy in float64: host arrays of mixed sizes (radix, mixed radix, Bluestein, real), device
arrays, a Plan shared by all threads and Plans of each thread's own; on GL also a TextureFFT
shared by all threads. (GL: each thread has a context of the library's share group, calls
ordered by fences: backends/gl.py.)"""
import threading

import numpy as np

import pyfftgl
import pyfftgl.gl
from pyfftgl.backends import get_device

from conftest import assert_accurate

THREADS = 8
ROUNDS = 1


def _work(backend, k: int, shared, texture_fft):
    """One thread's mixed calls; returns how many results it checked."""
    rng = np.random.default_rng(k)
    checked = 0
    for r in range(ROUNDS):
        n = (64, 48, 127, 250, 96, 384, 35, 160)[(k + 3 * r) % 8]
        x = (rng.standard_normal((3, n)) + 1j * rng.standard_normal((3, n))).astype(np.complex64)
        x64 = x.astype(np.complex128)
        f = 2.0 if n in (127, 35) else 1.0  # Bluestein lengths
        assert_accurate(pyfftgl.fft(x, backend=backend), np.fft.fft(x64), n, f)
        assert_accurate(pyfftgl.ifft(x, backend=backend), np.fft.ifft(x64), n, f)
        real = x.real.copy()
        assert_accurate(pyfftgl.rfft(real, backend=backend), np.fft.rfft(real.astype(float)), n, f)
        assert_accurate(pyfftgl.irfft(x, n=2 * n - 2, backend=backend),
                        np.fft.irfft(x64, n=2 * n - 2), 2 * n, f)
        img = x.reshape(-1)[: 8 * 24].reshape(8, 24) if x.size >= 192 else np.resize(x, (8, 24))
        # device arrays: upload, a transform that stays on the device, a reused out=, download
        d = pyfftgl.asarray(img, backend=backend)
        out = pyfftgl.asarray(np.zeros_like(img), backend=backend)
        y = pyfftgl.fft2(d)
        pyfftgl.ifft2(y, out=out)
        assert_accurate(y.get(), np.fft.fft2(img.astype(np.complex128)), img.size)
        assert_accurate(out.get(), img.astype(np.complex128), img.size, 1.5)
        d.close()
        # the shared Plan, host and device calls
        s = (rng.standard_normal(shared.shape) + 1j).astype(np.complex64)
        assert_accurate(shared(s), np.fft.fft2(s.astype(np.complex128)), s.size)
        ds = pyfftgl.asarray(s, backend=backend)
        dout = pyfftgl.asarray(np.zeros_like(s), backend=backend)
        shared(ds, out=dout)
        assert_accurate(dout.get(), np.fft.fft2(s.astype(np.complex128)), s.size)
        # a Plan of this thread's own, closed after use
        with pyfftgl.plan((4, n), np.float32, kind="rfft", backend=backend) as p:
            assert_accurate(p(real[:1].repeat(4, 0)), np.fft.rfft(real[:1].repeat(4, 0)
                                                                  .astype(float)), n, f)
        checked += 11
        if texture_fft is not None:
            checked += _texture_round(texture_fft, rng)
    return checked


def _texture_round(fft, rng):
    dev = fft.device
    h, w = fft.shape
    a = rng.standard_normal((h, w, 2)).astype(np.float32)
    with dev.current():  # the caller's own GL calls on the library's context
        src = dev.ctx.texture((w, h), 2, dtype="f4")
        src.write(a.tobytes())
    dst = fft.forward(src)
    with dev.current():
        got = np.frombuffer(dst.read(), np.float32).reshape(h, w, 2)
        src.release()
        dst.release()
    z = a[..., 0].astype(np.float64) + 1j * a[..., 1]
    assert_accurate(got[..., 0] + 1j * got[..., 1], np.fft.fft2(z), h * w)
    return 1


def test_many_threads_at_once(backend):
    dev = get_device(backend)
    shared = pyfftgl.plan((16, 32), np.complex64, kind="fft2", backend=backend)
    texture_fft = None
    if backend == "gl":
        texture_fft = pyfftgl.gl.TextureFFT(dev.ctx, (16, 40))
    start = threading.Barrier(THREADS)
    results, errors = {}, []

    def run(k):
        try:
            start.wait()
            results[k] = _work(backend, k, shared, texture_fft)
        except BaseException as e:  # reported by the main thread
            errors.append((k, e))
    threads = [threading.Thread(target=run, args=(k,)) for k in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    if errors:
        raise errors[0][1]
    per = 11 * ROUNDS + (ROUNDS if texture_fft is not None else 0)
    assert results == {k: per for k in range(THREADS)}
    shared.close()
    if texture_fft is not None:
        texture_fft.close()
        with dev.current():
            assert dev.ctx.error == "GL_NO_ERROR"


def _in_thread(fn):
    got = []
    t = threading.Thread(target=lambda: got.append(fn()))
    t.start()
    t.join(60)
    return got[0]


def test_gl_threads_keep_contexts_of_their_own():
    """On the library's context each thread has a context of its own in one share group, left
    current between calls (a call switches none), and calls on different threads are ordered
    on the GPU: what one thread's call wrote, the next call on another thread reads."""
    dev = get_device("gl")
    egl = dev.context.egl
    x = np.arange(16, dtype=np.float32).astype(np.complex64)
    ref = np.fft.fft(x.astype(np.complex128))
    assert_accurate(pyfftgl.fft(x, backend="gl"), ref, 16)
    mine = egl.context()
    assert mine  # still current after the call
    assert_accurate(pyfftgl.fft(x, backend="gl"), ref, 16)
    assert egl.context() == mine

    def other():
        y = pyfftgl.fft(x, backend="gl")
        return y, egl.context()
    y, theirs = _in_thread(other)
    assert_accurate(y, ref, 16)
    assert theirs and theirs != mine
    # Work queued on one context, read first on another, both ways, on one plan's buffers.
    rng = np.random.default_rng(5)
    imgs = [rng.standard_normal((64, 96)).astype(np.complex64) for _ in range(4)]
    p = pyfftgl.plan((64, 96), np.complex64, kind="fft2", backend="gl")
    srcs = [pyfftgl.asarray(a, backend="gl") for a in imgs]
    out = pyfftgl.asarray(np.zeros((64, 96), np.complex64), backend="gl")

    def loop():
        for _ in range(5):
            for s in srcs:
                p(s, out=out)
    _in_thread(loop)  # queued there, read here
    assert_accurate(out.get(), np.fft.fft2(imgs[-1].astype(np.complex128)), imgs[0].size)
    p(srcs[0], out=out)  # queued here, read there
    got = _in_thread(out.get)
    assert_accurate(got, np.fft.fft2(imgs[0].astype(np.complex128)), imgs[0].size)
    for s in srcs + [out]:
        s.close()
    p.close()


def test_gl_call_puts_the_callers_context_back():
    """A thread with a context of its own current (a window's) gets it back after each call."""
    import moderngl
    dev = get_device("gl")
    x = np.ones(8, np.complex64)

    def with_own_context():
        mine = moderngl.create_standalone_context(require=430, backend="egl")
        with mine:  # current on this thread from here
            handle = dev.context.egl.context()
            y = pyfftgl.fft(x, backend="gl")
            back = dev.context.egl.context() == handle
        mine.release()
        return y, back
    y, back = _in_thread(with_own_context)
    assert back
    assert_accurate(y, np.fft.fft(x.astype(np.complex128)), 8)


def test_gl_device_held_by_one_thread_blocks_the_others():
    """Inside `with device.current()` the device is this thread's: another thread's call waits
    for it, and this thread's own calls go through."""
    dev = get_device("gl")
    x = np.arange(16, dtype=np.float32).astype(np.complex64)
    with dev.current() as ctx:
        assert ctx is dev.ctx
        blocked = threading.Event()

        def other():
            pyfftgl.fft(x, backend="gl")  # the same cached plan as below
            blocked.set()
        t = threading.Thread(target=other)
        t.start()
        assert not blocked.wait(0.5)  # waits for the device this thread holds
        # ... and this thread's own call, on the plan the other one waits to run, goes through
        # (the device is taken before a plan's lock everywhere).
        assert_accurate(pyfftgl.fft(x, backend="gl"), np.fft.fft(x.astype(np.complex128)), 16)
    t.join(30)
    assert blocked.is_set()


SINGLE_THREAD_SCRIPT = """
import json, threading, numpy as np, pyfftgl
from pyfftgl.backends import get_device
dev = get_device("gl")
x = np.random.default_rng(1).standard_normal((128, 192)).astype(np.complex64)
p = pyfftgl.plan(x.shape, np.complex64, kind="fft2", backend="gl")
d = pyfftgl.asarray(x, backend="gl")
o = pyfftgl.asarray(np.zeros_like(x), backend="gl")
for _ in range(20):
    p(d, out=o)
state = {"threads": threading.active_count(), "unfenced": dev.context.unfenced,
         "fence": dev.context.fence is not None}
got = []
t = threading.Thread(target=lambda: got.append(o.get()))  # the first call on another context
t.start()
t.join()
state["fenced_at_start"] = not dev.context.unfenced
ref = np.fft.fft2(x.astype(np.complex128))
state["rel_err"] = float(np.linalg.norm(got[0] - ref) / np.linalg.norm(ref))
print(json.dumps(state))
"""


def test_gl_only_thread_fences_nothing_until_it_starts_another():
    """A process's only thread keeps no fences (their cost on the GPU is a small FFT's); its last
    call is fenced when it starts a thread, whose first call (on a context of its own) reads
    what the loop wrote."""
    import json
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-c", SINGLE_THREAD_SCRIPT], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    state = json.loads(out.stdout.strip().splitlines()[-1])
    assert state["threads"] == 1 and state["unfenced"] and not state["fence"]
    assert state["fenced_at_start"]
    assert state["rel_err"] < 1e-6


def test_gl_many_short_lived_threads():
    """Thread after thread, each with its first call on a context of its own that goes away with
    it: every result right, and the threads' calls ordered after the ones before them."""
    x = np.random.default_rng(2).standard_normal((4, 40)).astype(np.complex64)
    d = pyfftgl.asarray(x, backend="gl")
    o = pyfftgl.asarray(np.zeros_like(x), backend="gl")
    p = pyfftgl.plan(x.shape, np.complex64, kind="fft", backend="gl")
    ref = np.fft.fft(x.astype(np.complex128))
    for k in range(30):
        if k % 2:
            _in_thread(lambda: p(d, out=o))
            assert_accurate(o.get(), ref, 40)
        else:
            p(pyfftgl.asarray(np.zeros_like(x), backend="gl"), out=o)
            got = _in_thread(o.get)
            assert not got.any()
    p.close()


def test_gl_texture_fft_replays_and_new_calls_from_threads_at_once():
    """One thread replays a TextureFFT call (the same textures every time) while another makes
    calls that record and run anew (two destinations in turn): both take the device before the
    calls' lock, so neither waits on the other for good, and every result is right."""
    dev = get_device("gl")
    shape = (16, 24)
    fft = pyfftgl.gl.TextureFFT(dev.ctx, shape)
    rng = np.random.default_rng(3)
    a = [rng.standard_normal(shape + (2,)).astype(np.float32) for _ in range(2)]
    with dev.current():
        texs = [dev.ctx.texture(shape[::-1], 2, x.tobytes(), dtype="f4") for x in a]
        outs = [dev.ctx.texture(shape[::-1], 2, dtype="f4") for _ in range(3)]
    errors = []

    def loop(call):
        try:
            for i in range(200):
                call(i)
        except BaseException as e:  # reported by the main thread
            errors.append(e)
    replay, record = (lambda i: fft.forward(texs[0], outs[0]),
                      lambda i: fft.inverse(texs[1], outs[1 + i % 2]))
    threads = [threading.Thread(target=loop, args=(call,), daemon=True)  # a hung one: no wait
               for call in (replay, record, replay)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    if errors:
        raise errors[0]
    with dev.current():
        got = [np.frombuffer(t.read(), np.float32).reshape(shape + (2,)) for t in outs]
        for t in texs + outs:
            t.release()
    z = [x[..., 0].astype(np.float64) + 1j * x[..., 1] for x in a]
    for g, ref in ((got[0], np.fft.fft2(z[0])), (got[1], np.fft.ifft2(z[1])),
                   (got[2], np.fft.ifft2(z[1]))):
        assert_accurate(g[..., 0] + 1j * g[..., 1], ref, g.size // 2)
    fft.close()
