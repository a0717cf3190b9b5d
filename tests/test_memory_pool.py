"""The device memory pool (pyfftgl.memory_pool; issue 51).

GL: 10,000 live small device arrays are ranges of a few GL buffers, disjoint and at offsets a
storage buffer binds; their contents, a transform among them and the pool's return to its floor
are checked in-process (conftest.py fails a test on any GL debug-output error).

Vulkan: 10,000 live small device arrays under Khronos' validation layer with best practices on,
the pool held to 4096 allocations (what Windows drivers allow) and to 256: the layer reports no
small allocation and no error, every array holds its own data, and the memory held returns to
the pool's floor once they are dropped and the pool trimmed. The layer must be enabled before kp
makes its instance, so each case runs in a subprocess; the layer logs to a FIFO read here, as
tests/test_validation.py's tier does (it reopens its log, truncating it, for each VkInstance).
"""
import gc
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import pyfftgl
from pyfftgl.backends.base import Dispatch
from pyfftgl.backends.gl import GL_ALL_BARRIER_BITS, GL_SHADER_STORAGE_BARRIER_BIT, \
    submission_barriers
from pyfftgl.backends.gl_context import gl_integer
from pyfftgl.backends.buffer_pool import LARGE, Pool
from test_validation import LAYER, instance_layers

ARRAYS = 10_000

# In the subprocess: the pool's state and the host's resident memory at its floor (a warm
# device: programs compiled, a transform done, as many arrays made and dropped), with 10,000
# arrays of 16 complex64 values, and after they are dropped and the pool trimmed.
SCRIPT = r"""
import ctypes, gc, json, sys
import numpy as np
import pyfftgl

def rss():
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    return int(open("/proc/self/statm").read().split()[1]) * 4096

pool = pyfftgl.memory_pool("vulkan")
x = np.arange(16, dtype=np.float32).astype(np.complex64)
pyfftgl.fft(pyfftgl.asarray(x, backend="vulkan")).get()
# A first round grows Python's and kp's bookkeeping (dicts, record vectors) for good.
warm = [pyfftgl.asarray(x, backend="vulkan") for i in range(int(sys.argv[1]))]
del warm
pyfftgl.plan_cache.clear()  # a cached plan's recorded calls keep the arrays they bind
gc.collect()
pool.free_all_blocks()
floor, rss0 = pool.stats(), rss()
arrays = [pyfftgl.asarray(x + i, backend="vulkan") for i in range(int(sys.argv[1]))]
held = pool.stats()
spectrum = pyfftgl.fft(arrays[-1]).get()  # a transform among them all
checks = {i: arrays[i].get().tolist() for i in (0, 1, len(arrays) // 2, len(arrays) - 1)}
del arrays
pyfftgl.plan_cache.clear()
gc.collect()
dropped = pool.stats()
pool.free_all_blocks()
print(json.dumps({"floor": floor, "held": held, "dropped": dropped, "trimmed": pool.stats(),
                  "rss_growth": rss() - rss0, "checks": {k: [[c.real, c.imag] for c in v]
                  for k, v in checks.items()},
                  "spectrum": [[c.real, c.imag] for c in spectrum.tolist()]}))
"""

SETTINGS = """khronos_validation.enables = VK_VALIDATION_FEATURE_ENABLE_BEST_PRACTICES_EXT
khronos_validation.debug_action = VK_DBG_LAYER_ACTION_LOG_MSG
khronos_validation.log_filename = {log}
khronos_validation.report_flags = error,warn,perf
khronos_validation.enable_message_limit = false
"""
END = "pyfftgl-memory-pool-test-end\n"


def _end_log(log: Path, done: threading.Event, seconds: float = 120) -> bool:
    """Write END into the log's pipe until its reader has it: END written between the reader's
    end of file and its close would go with the pipe's buffer, and the reader then waits on its
    next open for ever. Opened without blocking, so that no open waits on a reader that is gone."""
    deadline = time.monotonic() + seconds
    while not done.is_set() and time.monotonic() < deadline:
        try:
            fd = os.open(log, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:  # ENXIO: the reader is between two opens
            done.wait(0.05)
            continue
        try:
            os.write(fd, ("\n" + END).encode())
        except BlockingIOError:  # the pipe is full: the reader still drains the layer's lines
            pass
        finally:
            os.close(fd)
        done.wait(0.5)
    return done.is_set()


def _run_under_best_practices(tmp_path: Path, limit: int) -> tuple[dict, list[str]]:
    """The script's report, and every line the layer logged, with the pool held to `limit`."""
    log, settings = tmp_path / "layer.log", tmp_path / "vk_layer_settings.txt"
    os.mkfifo(log)
    settings.write_text(SETTINGS.format(log=log))
    lines, done = [], threading.Event()

    def read():
        while True:  # one writer after another: each VkInstance, then END from here
            with open(log, errors="replace") as f:
                for line in f:
                    if END.strip() in line:  # the layer's last line may lack its newline
                        lines.append(line.replace(END.strip(), ""))
                        done.set()
                        return
                    lines.append(line)
    threading.Thread(target=read, daemon=True).start()
    env = dict(os.environ, VK_INSTANCE_LAYERS=LAYER, VK_LAYER_SETTINGS_PATH=str(settings),
               PYFFTGL_VK_MAX_ALLOCATIONS=str(limit))
    env.pop("PYFFTGL_VK_LAYER_LOG", None)
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(ARRAYS)], capture_output=True,
                         text=True, env=env, timeout=300)
    assert _end_log(log, done), "the validation layer's log stopped being read"
    assert out.returncode == 0, out.stderr[-4000:]
    return json.loads(out.stdout.strip().splitlines()[-1]), lines


@pytest.mark.parametrize("limit", [4096, 256])
def test_ten_thousand_small_arrays_within_the_allocation_limit(tmp_path, limit):
    assert LAYER in instance_layers(), f"the Vulkan loader finds no {LAYER}"
    seen, lines = _run_under_best_practices(tmp_path, limit)
    small = [line for line in lines if "small-allocation" in line or "small-dedicated" in line]
    errors = [line for line in lines if "(ERROR" in line]
    assert not small, small[0][:600]
    assert not errors, errors[0][:600]
    x = np.arange(16, dtype=np.float64).astype(np.complex128)
    for i, values in seen["checks"].items():
        got = np.array([complex(*v) for v in values])
        np.testing.assert_array_equal(got, x + int(i))
    spectrum = np.array([complex(*v) for v in seen["spectrum"]])
    want = np.fft.fft(x + ARRAYS - 1)
    assert np.max(np.abs(spectrum - want)) <= 1e-5 * np.max(np.abs(want))
    floor, held, dropped, trimmed = (seen[k] for k in ("floor", "held", "dropped", "trimmed"))
    assert floor["limit"] == held["limit"] == limit
    # Each array is a range of a shared block: a few dozen allocations, not 10,000.
    assert held["allocations"] <= min(limit, 64), held
    assert held["used_bytes"] >= floor["used_bytes"] + ARRAYS * 16 * 8
    # Dropped: all but the staging buffers of the last reads (kept for reuse) is free, and
    # still held for reuse until trimmed.
    assert dropped["used_bytes"] - floor["used_bytes"] <= 4096, (floor, dropped)
    assert dropped["held_bytes"] == held["held_bytes"]
    assert trimmed["used_bytes"] == floor["used_bytes"], (floor, trimmed)
    assert trimmed["held_bytes"] == floor["held_bytes"], (floor, trimmed)
    assert trimmed["allocations"] == floor["allocations"], (floor, trimmed)
    assert seen["rss_growth"] <= 4 << 20, f"host RSS grew by {seen['rss_growth']} bytes"


def test_pool_reports_and_trims_on_each_backend(backend):
    """Live arrays are counted used, dropped ones stay held until trimmed, on either backend."""
    pool = pyfftgl.memory_pool(backend)
    assert isinstance(pool, pyfftgl.MemoryPool) and "bytes used" in repr(pool)
    x = np.arange(1000, dtype=np.float32).astype(np.complex64)
    pool.free_all_blocks()
    before = pool.stats()
    arrays = [pyfftgl.asarray(x + i, backend=backend) for i in range(8)]
    assert pool.used_bytes() >= before["used_bytes"] + 8 * x.nbytes
    assert pool.total_bytes() >= pool.used_bytes()
    np.testing.assert_array_equal(arrays[3].get(), x + 3)
    for a in arrays:
        a.close()
    del arrays
    gc.collect()
    pyfftgl.get_device(backend).finish()
    # What stays used is the staging kept for reuse (Vulkan: kp tensors of the pool too)
    assert pool.used_bytes() - before["used_bytes"] < 8 * x.nbytes
    pool.free_all_blocks()
    assert pool.used_bytes() == before["used_bytes"]
    assert pool.total_bytes() == before["held_bytes"]
    assert pool.free_bytes() == pool.total_bytes() - pool.used_bytes()


def test_gl_ten_thousand_small_arrays_share_a_few_gl_buffers():
    pool, device = pyfftgl.memory_pool("gl"), pyfftgl.get_device("gl")
    x = np.arange(16, dtype=np.float32).astype(np.complex64)
    pyfftgl.fft(pyfftgl.asarray(x, backend="gl")).get()
    pyfftgl.plan_cache.clear()
    gc.collect()
    pool.free_all_blocks()
    floor = pool.stats()
    arrays = [pyfftgl.asarray(x + i, backend="gl") for i in range(ARRAYS)]
    held = pool.stats()
    assert held["allocations"] - floor["allocations"] <= 16, (floor, held)
    assert held["used_bytes"] >= floor["used_bytes"] + ARRAYS * x.nbytes
    ranges = {}
    for glo, offset, nbytes in [(a.buffer.buf.glo, a.buffer.offset, a.buffer.nbytes)
                                for a in arrays]:
        ranges.setdefault(glo, []).append((offset, nbytes))
    assert len(ranges) <= 16
    with device.current():
        align = gl_integer(0x90DF)  # GL_SHADER_STORAGE_BUFFER_OFFSET_ALIGNMENT
    for spans in ranges.values():
        spans.sort()
        assert all(offset % align == 0 for offset, _ in spans)
        assert all(a + n <= b for (a, n), (b, _) in zip(spans, spans[1:])), "ranges overlap"
    for i in list(range(0, ARRAYS, 397)) + [ARRAYS - 1]:
        np.testing.assert_array_equal(arrays[i].get(), x + i)
    spectrum = pyfftgl.fft(arrays[-1]).get()
    want = np.fft.fft(x.astype(np.complex128) + ARRAYS - 1)
    assert np.max(np.abs(spectrum - want)) <= 1e-5 * np.max(np.abs(want))
    del arrays
    pyfftgl.plan_cache.clear()
    gc.collect()
    dropped = pool.stats()
    assert dropped["used_bytes"] == floor["used_bytes"], (floor, dropped)
    assert dropped["held_bytes"] == held["held_bytes"]
    pool.free_all_blocks()
    assert pool.stats() == floor


def test_gl_barriers_tell_ranges_of_one_gl_buffer_apart():
    """Dispatches on ranges of one GL buffer: one that reads a range another wrote waits for
    it (the storage bit), one that touches only other ranges does not, and the ranges written
    and not read since are the submission's output (all bits after the last)."""
    device = pyfftgl.get_device("gl")
    a, b, c, d = (device.buffer(64) for _ in range(4))
    assert a.buf.glo == b.buf.glo == c.buf.glo == d.buf.glo

    def dispatch(read, write):
        return Dispatch(None, (1, 1, 1), np.zeros(0, np.uint32), buffers=(read, write))
    assert submission_barriers([dispatch(c, a), dispatch(b, d)]) == ([0, 0], GL_ALL_BARRIER_BITS)
    assert submission_barriers([dispatch(c, a), dispatch(a, d)]) == (
        [0, GL_SHADER_STORAGE_BARRIER_BIT], GL_ALL_BARRIER_BITS)


def test_gl_one_barrier_serves_the_dispatches_after_it():
    """Two chains side by side (fftconvolve's kernel and image): the storage bit before the
    first read of one chain's output also makes the other's visible, so reading that takes no
    barrier of its own; a write over a buffer read before that barrier takes none either."""
    device = pyfftgl.get_device("gl")
    a, b, c, d, e = (device.buffer(64) for _ in range(5))

    def dispatch(read, write):
        return Dispatch(None, (1, 1, 1), np.zeros(0, np.uint32), buffers=(read, write))
    S = GL_SHADER_STORAGE_BARRIER_BIT
    assert submission_barriers([dispatch(c, a), dispatch(e, b), dispatch(b, d),
                                dispatch(a, e)])[0] == [0, 0, S, 0]
    assert submission_barriers([dispatch(c, a), dispatch(a, b), dispatch(d, c)])[0] == [0, S, 0]


# In a process of one thread (with others, every GL call ends in a fence, which takes all bits).
LEFT_BARRIER = r"""
import numpy as np, pyfftgl
device = pyfftgl.get_device("gl")
pending = device.context.pending
x = np.random.default_rng(3).standard_normal((3, 64)).astype(np.complex64)
a = pyfftgl.asarray(x, backend="gl")
p = pyfftgl.plan(x.shape, np.complex64, kind="fft", backend="gl")
q = pyfftgl.plan(x.shape, np.complex64, kind="ifft", backend="gl")
out, back = p(a), None
for _ in range(3):
    p(a, out=out)  # overwrites what the call before left written: the fetch bit orders it
    assert pending.unbarriered and out.buffer.buf.glo in pending.written
    back = q(out, out=back) if back is not None else q(out)  # reads it: the storage bit
np.testing.assert_allclose(back.get(), x, rtol=0, atol=1e-5)  # a host read: all bits
assert not pending.unbarriered and not pending.written
print("ok")
"""


def test_gl_calls_leave_their_barrier_to_the_next_call():
    """A call that leaves only buffers written ends with no barrier (NVIDIA's storage bit costs
    about 12 us after a large write); the next call issues the storage bit where it reads what
    was left written, the fetch bit where it only overwrites it, and a host read all bits. The
    results through such chains match numpy."""
    from pyfftgl.backends.gl_barriers import GL_TEXTURE_FETCH_BARRIER_BIT, PendingWrites
    out = subprocess.run([sys.executable, "-c", LEFT_BARRIER], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stdout + out.stderr
    books = PendingWrites()
    books.leave(frozenset({1}), frozenset({1, 2}))
    assert books.lead_bits(frozenset({2}), frozenset({1})) == GL_TEXTURE_FETCH_BARRIER_BIT
    assert books.lead_bits(frozenset({3}), frozenset({4})) == 0
    assert books.lead_bits(frozenset({1}), frozenset()) == GL_SHADER_STORAGE_BARRIER_BIT
    assert not books.written and books.unbarriered  # a transfer still needs all bits


def test_pool_books_merge_freed_ranges():
    """Random sizes made and freed in random order: live ranges never overlap, and once all
    are freed each block is one free range again (its neighbours merged) and trim frees all."""
    made, released = [], []
    pool = Pool(lambda size: (made.append(size) or len(made), lambda: released.append(1)))
    rng = np.random.default_rng(5)
    live = []
    for _ in range(3000):
        if live and rng.random() < 0.45:
            live.pop(int(rng.integers(len(live))))[-1]()
            continue
        nbytes = int(rng.choice([1, 100, 256, 4000, 70_000, 300_000, LARGE - 1]))
        block, offset, size = pool.allocate(nbytes)
        assert size >= nbytes and offset % pool.granule == 0 and offset + size <= block.size
        live.append((block, offset, size,
                     lambda b=block, o=offset, s=size, n=nbytes: pool.free(b, o, s, n)))
    spans = sorted((id(b), o, s) for b, o, s, _ in live)
    assert all(o + s <= o2 for (b, o, s), (b2, o2, _) in zip(spans, spans[1:]) if b == b2)
    assert pool.used == sum(s for _, _, s, _ in live)
    for *_, free in live:
        free()
    assert pool.used == pool.ranges == pool.requested == 0
    assert all(block.free == {0: block.size} for block in pool.blocks)
    assert pool.trim() == sum(made) and len(released) == len(made) and not pool.blocks
