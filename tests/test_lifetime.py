"""Resource lifetime: Plans, device arrays and TextureFFTs release their GPU objects when closed
or collected. 1000 create/execute/destroy cycles on each API return host RSS to within 1 MiB of
where it was and the device's own bookkeeping (live buffers and bytes; on GL the buffer and
texture names the driver still knows) to where it was. Running out of device memory raises
MemoryError naming the size, and the library works afterwards."""
import ctypes
import gc
import os

import numpy as np
import pytest

import pyfftgl
import pyfftgl.gl
from pyfftgl.backends import get_device
from pyfftgl.plans import TransformPlan

from conftest import assert_accurate

CYCLES = 1000
SIZES = [(4, n) for n in (8, 12, 16, 20, 24, 30, 32, 40, 48, 60, 64)] + [(4, 4, 6), (6, 10)]
MiB = 1 << 20


def _rss() -> int:
    """Resident bytes, after handing freed heap pages back (malloc_trim): what is still live,
    not what the allocator keeps cached."""
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _gl_names(dev, upto: int) -> tuple[int, int]:
    """(buffers, textures) the GL driver knows among names 1..upto (glIsBuffer, glIsTexture)."""
    from pyfftgl.backends.gl import gl_proc
    with dev.current():
        is_buffer = gl_proc("glIsBuffer", ctypes.c_uint8, ctypes.c_uint32)
        is_texture = gl_proc("glIsTexture", ctypes.c_uint8, ctypes.c_uint32)
        return (sum(bool(is_buffer(i)) for i in range(1, upto)),
                sum(bool(is_texture(i)) for i in range(1, upto)))


_POOL: dict = {}  # (backend, shape) -> (src, out): device arrays that outlive the cycles


def _cycle(backend, i: int, fresh: bool = False):
    """Make a Plan and a device array, run host and device transforms, check them, close it
    all. The device transform runs on arrays kept across cycles (`fresh`: made and closed in
    the cycle, as a server making arrays per request does)."""
    shape = SIZES[i % len(SIZES)]
    x = np.full(shape, 1 + i % 5, np.complex64)
    if fresh:
        src, out = pyfftgl.asarray(x, backend=backend), pyfftgl.asarray(x, backend=backend)
    else:
        key = (backend, shape)
        if key not in _POOL:
            _POOL[key] = (pyfftgl.asarray(x, backend=backend),
                          pyfftgl.asarray(x, backend=backend))
        src, out = _POOL[key]
        get_device(backend).write(src.buffer, x.view(np.float32).ravel())
    with pyfftgl.plan(shape, np.complex64, kind="fftn", backend=backend) as p, \
            pyfftgl.asarray(x, backend=backend) as d:
        host = p(x)
        assert np.array_equal(d.get(), x)
        p(src, out=out)
        assert out.get().flat[0] == host.flat[0] == x.size * (1 + i % 5)
    if fresh:
        src.close()
        out.close()


def _texture_cycle(ctx, i: int):
    h, w = SIZES[i % len(SIZES)][-2:]
    with pyfftgl.gl.TextureFFT(ctx, (h, w)) as fft:
        dev = fft.device
        with dev.current():
            src = ctx.texture((w, h), 2, dtype="f4", data=np.ones((h, w, 2), np.float32))
        dst = fft.forward(src)
        fft.convolve(src, fft.spectrum(np.ones((h, w), np.float32)), dst)
        with dev.current():
            first = np.frombuffer(dst.read(), np.float32)[:2]
            src.release()
            dst.release()
    # ones convolved with ones: every value h * w
    assert np.allclose(first, [h * w, h * w], rtol=1e-5)


def _settle(backend):
    """Collected and deleted what was dropped. The plan cache keeps its plans: the cycles run
    with it full (13 sizes, 16 places), as a long-running program does."""
    gc.collect()
    get_device(backend).finish()  # GL: deletes what the collector queued


def _state(backend, names_upto=0):
    _settle(backend)
    dev = get_device(backend)
    state = {"rss": _rss(), "live": dict(dev.live)}
    if backend == "vulkan":  # bindings kept, and the keys that find them; pipelines made
        state["algorithms"] = dev.stats()["algorithms"]
        state["keys"] = dev.stats()["keys"]
        state["pipelines"] = dev.pipelines_made
    if names_upto:
        state["names"] = _gl_names(dev, names_upto)
    return state


def _compare(before, after):
    assert after["rss"] - before["rss"] <= MiB, \
        f"host RSS grew by {(after['rss'] - before['rss']) / MiB:.2f} MiB"
    for key in set(before) - {"rss", "names"}:
        assert after[key] == before[key], f"{key}: {before[key]} before, {after[key]} after"
    if "names" in before:  # the driver's count may be lower: objects queued at the baseline
        assert all(a <= b for a, b in zip(after["names"], before["names"])), \
            f"GL names (buffers, textures): {before['names']} before, {after['names']} after"


def _gl_name_bound():
    dev = get_device("gl")
    with dev.current():
        probe = dev.ctx.buffer(reserve=4)
        upto = probe.glo + 4096  # names are small integers, reused once freed
        probe.release()
    return upto


def _cycles(backend, fresh=False):
    # Warm: programs compiled, caches and pools at their size, and every plan holding its
    # RECORDED submissions (each keeps the buffers it binds: closed arrays' memory is released
    # when a newer submission takes its place).
    for i in range((TransformPlan.RECORDED + 1) * len(SIZES)):
        _cycle(backend, i, fresh)
    upto = _gl_name_bound() if backend == "gl" else 0
    before = _state(backend, upto)
    for i in range(CYCLES):
        _cycle(backend, i, fresh)
    _compare(before, _state(backend, upto))


def test_cycles_return_to_baseline(backend):
    _cycles(backend)


def test_cycles_with_fresh_device_arrays_return_to_baseline(backend):
    """GL binds any buffer to a program at dispatch time; on Vulkan kp binds buffers when it
    makes an algorithm, so new buffers mean a new descriptor set sharing the program's one
    pipeline (tools/kp_patch.py, 8), and no pipeline is made in the cycles."""
    _cycles(backend, fresh=True)


def test_vulkan_makes_one_pipeline_per_program_whatever_buffers_it_binds():
    """A plan run on new device arrays binds them without new pipelines, gives the right
    result on each, and forgets the bindings of arrays that were closed (once the plan's
    RECORDED submissions, which hold the arrays they bind, have newer ones in their place)."""
    dev = get_device("vulkan")
    x = (np.arange(96) % 7 - 3j * (np.arange(96) % 5)).astype(np.complex64).reshape(4, 24)
    ref = np.fft.fft(x.astype(np.complex128))
    with pyfftgl.plan(x.shape, np.complex64, kind="fft", backend="vulkan") as p:
        for _ in range(TransformPlan.RECORDED + 1):  # the plan's programs and submissions
            with pyfftgl.asarray(x, backend="vulkan") as src, \
                    pyfftgl.asarray(x, backend="vulkan") as out:
                p(src, out=out)
        _settle("vulkan")
        made, bound = dev.pipelines_made, dev.stats()["algorithms"]
        for i in range(4):
            with pyfftgl.asarray(x * (i + 1), backend="vulkan") as src, \
                    pyfftgl.asarray(x, backend="vulkan") as out:
                p(src, out=out)
                assert_accurate(out.get(), ref * (i + 1), 24)
        _settle("vulkan")
        assert dev.pipelines_made == made
        assert dev.stats()["algorithms"] == bound


def test_texture_fft_cycles_return_to_baseline():
    dev = get_device("gl")
    ctx = dev.ctx
    for i in range(2 * len(SIZES)):
        _texture_cycle(ctx, i)
    upto = _gl_name_bound()
    before = _state("gl", upto)
    for i in range(CYCLES):
        _texture_cycle(ctx, i)
    _compare(before, _state("gl", upto))


def test_close_releases_gpu_objects(backend):
    dev = get_device(backend)
    pyfftgl.plan_cache.clear()
    _settle(backend)
    base = dict(dev.live)
    d = pyfftgl.asarray(np.ones((64, 64), np.complex64), backend=backend)
    assert dev.live["buffers"] == base["buffers"] + 1
    assert dev.live["bytes"] == base["bytes"] + 64 * 64 * 8
    d.close()
    _settle(backend)
    assert dev.live == base
    with pyfftgl.plan((64, 64), kind="fft2", backend=backend) as p:
        p(np.ones((64, 64), np.complex64))
        pyfftgl.plan_cache.clear()  # the Plan alone holds its device plans now
        gc.collect()
        assert dev.live["buffers"] > base["buffers"]
    _settle(backend)
    assert dev.live == base


def test_out_of_device_memory_raises_and_the_library_stays_usable(backend):
    dev = get_device(backend)
    too_big = 1 << 46  # 64 TiB: no device has it
    with pytest.raises(MemoryError, match=str(too_big)):
        dev.buffer(too_big)
    x = np.arange(64, dtype=np.float32).astype(np.complex64)
    assert_accurate(pyfftgl.fft(x, backend=backend), np.fft.fft(x.astype(np.complex128)), 64)
    if backend == "gl":
        with dev.current():
            assert dev.ctx.error == "GL_NO_ERROR"


def _user_calls(backend):
    """fft, rfft2, dct and fftconvolve (real, and complex over axis 0) as a user calls them."""
    import pyfftgl.signal as ps
    k = np.linspace(-1, 1, 15, dtype=np.float32).reshape(5, 3)
    return [lambda a: pyfftgl.fft(a), lambda a: pyfftgl.rfft2(a), lambda a: pyfftgl.dct(a),
            lambda a: ps.fftconvolve(a, k, "same", backend=backend),
            lambda a: ps.fftconvolve(a, k[:, :1], "full", axes=0, backend=backend)]


@pytest.mark.parametrize("device_input", [False, True])
def test_device_memory_follows_the_callers_arrays(backend, device_input):
    """Recorded submissions hold the caller's buffers weakly: once the caller drops its input
    and result arrays, the device's live buffers and bytes are back where they were (only the
    plans' own buffers stay, made by the warm-up)."""
    dev = get_device(backend)
    x = np.linspace(0, 1, 48 * 40, dtype=np.float32).reshape(48, 40)
    for call in _user_calls(backend):
        for _ in range(2):  # the plans and their own buffers, on both paths
            call(x)
            # Two results live at once, as in the loop below: the result pools' buffers.
            y = call(pyfftgl.asarray(x, backend=backend))
            y.get()
        del y
        _settle(backend)
        base = dict(dev.live)
        for i in range(6):
            a = pyfftgl.asarray(x * i, backend=backend) if device_input else x * i
            y = call(a)
            assert (y.get() if isinstance(y, pyfftgl.DeviceArray) else y).size
        del a, y
        _settle(backend)
        assert dev.live == base


def test_a_loop_of_fftconvolve_holds_memory_flat(backend):
    """2000 calls of one set of shapes, device arrays and numpy: device live bytes and the
    host's traced allocations flat after the warm-up."""
    import tracemalloc
    import pyfftgl.signal as ps
    dev = get_device(backend)
    rng = np.random.default_rng(3)
    x, k = rng.standard_normal((16, 20)).astype(np.float32), rng.standard_normal((3, 5))
    d = pyfftgl.asarray(x, backend=backend)
    for _ in range(300):  # the warm-up fills the backends' bounded caches too
        ps.fftconvolve(d, k.astype(np.float32), "same").get()
        ps.fftconvolve(x, k, "valid", backend=backend)
    _settle(backend)
    tracemalloc.start()
    base, grown = dict(dev.live), {}
    for path, call in (("numpy", lambda: ps.fftconvolve(x, k, "valid", backend=backend)),
                       ("device", lambda: ps.fftconvolve(d, k.astype(np.float32), "same"))):
        # a device call's result buffers are released a few hundred calls later (the
        # submissions in flight hold them): that backlog fills before the measured calls
        for _ in range(1000 if path == "device" else 0):
            call()
        _settle(backend)
        host = tracemalloc.get_traced_memory()[0]
        for _ in range(1000):
            call()
        _settle(backend)
        grown[path] = tracemalloc.get_traced_memory()[0] - host
    tracemalloc.stop()
    assert dev.live == base
    # both paths on both backends (a device call's result now comes from its plan's pool, so
    # GL no longer wraps a new buffer per call)
    assert grown["numpy"] < 16 << 10 and grown["device"] < 16 << 10, grown
    ref = np.array([[np.sum(x[i:i + 3, j:j + 5] * k[::-1, ::-1], dtype=np.float64)
                     for j in range(16)] for i in range(14)])  # 'valid', in float64
    np.testing.assert_allclose(ps.fftconvolve(x, k, "valid", backend=backend), ref, atol=1e-9)


def test_repeated_host_calls_allocate_nothing(backend):
    """A numpy call of a shape that has run before allocates no device memory before its
    dispatches: the plan's own upload, download and staging buffers are reused."""
    import pyfftgl.signal as ps
    dev = get_device(backend)
    x = np.linspace(0, 1, 32 * 24).reshape(32, 24)
    k = np.ones((3, 3))
    calls = [lambda: pyfftgl.fft2(x, backend=backend), lambda: pyfftgl.rfft2(x, backend=backend),
             lambda: pyfftgl.dctn(x, backend=backend),
             lambda: ps.fftconvolve(x, k, "same", backend=backend)]
    for call in calls:
        call()
        _settle(backend)
        made = dict(dev.live)
        for _ in range(3):
            call()
        assert dev.live == made  # nothing made and nothing left waiting for the collector
