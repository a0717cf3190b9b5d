"""Calls as users make them, against torch and cupyx in the same process (issue 51's table):
`signal.fftconvolve` on device arrays and on numpy arrays (a new kernel each call), numpy-in /
numpy-out `fft2`/`rfft2`/`fft`, a device-resident loop with its host time per call, and the host
and device memory a loop of 2000 `fftconvolve` calls of one set of shapes leaves behind.

    python -m pyfftgl.bench.user_calls [--quick] [--backends vulkan gl] [--out FILE.json]

Every time is wall clock: the median steady-state call (after warm-up; pyfftgl's and torch's
calls in turns, paired_ms) for the one-shot rows, and µs per
call of K back-to-back calls ended by one device finish for the loops (timing.loop_us), and
for the host row also one call's host time with the GPU idle before it (timing.alone_us)."""
from __future__ import annotations

import argparse
import json
import time

import numpy as np

from .timing import alone_us, loop_us

CONV = (("2d same", (2048, 2048), (31, 31), "same"), ("2d valid", (4096, 4096), (63, 63), "valid"),
        ("1d full", (1 << 22,), (4097,), "full"))
QUICK_CONV = (("2d same", (256, 256), (15, 15), "same"), ("1d full", (1 << 14,), (257,), "full"))
ONE_SHOT = (("fft2", (1024, 1024)), ("fft2", (2048, 2048)), ("fft2", (4096, 4096)),
            ("fft", (3, 1024, 1024)), ("rfft2", (1024, 1024)), ("rfft2", (2048, 2048)),
            ("rfft2", (4096, 4096)))
QUICK_ONE_SHOT = (("fft2", (256, 256)), ("fft", (3, 128, 128)), ("rfft2", (256, 256)))


def steady_ms(fn, reps: int = 10) -> float:
    """Median wall ms of fn() after two warm-up calls (plans, caches and clocks settled)."""
    fn()
    fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return float(np.median(times))


def paired_ms(fns, seconds: float = 1.5, least: int = 10, most: int = 200) -> list[float]:
    """Median wall ms of each of `fns`, called in turn (one of each per round, after two
    warm-up rounds) for `seconds` or at least `least` rounds: a one-shot call's round trip
    drifts by tens of percent over seconds, and turns make the drift fall on every side."""
    for _ in range(2):
        for fn in fns:
            fn()
    times, t_end = [[] for _ in fns], time.perf_counter() + seconds
    while len(times[0]) < least or (time.perf_counter() < t_end and len(times[0]) < most):
        for fn, ts in zip(fns, times):
            t0 = time.perf_counter()
            fn()
            ts.append((time.perf_counter() - t0) * 1e3)
    return [float(np.median(ts)) for ts in times]


def torch_cuda():
    try:
        import torch
        return torch if torch.cuda.is_available() else None
    except ImportError:
        return None


def _cupy():
    try:
        import cupy
        cupy.cuda.runtime.getDeviceCount()
        return cupy
    except Exception:
        return None


def data(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dtype)


def conv_rows(backend: str, cases, calls: int) -> list[dict]:
    """fftconvolve on device arrays (steady state, a loop) and numpy in/out; the Convolver of
    the same shapes; cupyx's fftconvolve (device-resident, and with its transfers)."""
    import pyfftgl
    import pyfftgl.signal as ps
    dev = pyfftgl.get_device(backend)
    rows = []
    for name, ashape, kshape, mode in cases:
        a, k = data(ashape, np.float32, 1), data(kshape, np.float32, 2)
        da, dk = pyfftgl.asarray(a, backend=backend), pyfftgl.asarray(k, backend=backend)
        row = {"case": f"fftconvolve {name} {ashape} * {kshape}", "backend": backend}
        row["device_us"] = loop_us(lambda: ps.fftconvolve(da, dk, mode), dev.finish,
                                   calls=calls)["us_per_call"]
        conv = ps.Convolver(dk, ashape, mode=mode, backend=backend)
        out = conv(da)
        row["convolver_us"] = loop_us(lambda: conv(da, out=out), dev.finish,
                                      calls=calls)["us_per_call"]
        row["numpy_ms"] = steady_ms(lambda: ps.fftconvolve(a, k, mode), reps=5)
        cp = _cupy()
        if cp is not None:
            import cupyx.scipy.signal as csig
            ca, ck = cp.asarray(a), cp.asarray(k)
            row["cupyx_device_us"] = loop_us(lambda: csig.fftconvolve(ca, ck, mode),
                                             cp.cuda.Device().synchronize,
                                             calls=calls)["us_per_call"]
            row["cupyx_numpy_ms"] = steady_ms(
                lambda: cp.asnumpy(csig.fftconvolve(cp.asarray(a), cp.asarray(k), mode)), reps=5)
        rows.append(row)
        print(row, flush=True)
    return rows


def one_shot_rows(backend: str, cases) -> list[dict]:
    """numpy in, numpy out: pyfftgl.<kind>(x) against torch's x.cuda() ... .cpu() round trip,
    timed in turns (paired_ms)."""
    import pyfftgl
    torch = torch_cuda()
    rows = []
    for kind, shape in cases:
        x = data(shape, np.float32 if kind.startswith("r") else np.complex64)
        kw = {"axes": (-2, -1)} if kind.endswith("2") else {"axis": -1}
        fns = [lambda: getattr(pyfftgl, kind)(x, backend=backend, **kw)]
        if torch is not None:
            tkw = {"dim": (-2, -1)} if kind.endswith("2") else {"dim": -1}
            fn = getattr(torch.fft, kind)
            fns.append(lambda: fn(torch.from_numpy(x).cuda(), **tkw).cpu())
        times = paired_ms(fns)
        row = {"case": f"{kind} numpy in/out {shape}", "backend": backend, "ms": times[0]}
        if torch is not None:
            row["torch_ms"] = times[1]
        rows.append(row)
        print(row, flush=True)
    return rows


def loop_rows(backend: str, shape, calls: int) -> list[dict]:
    """A cached plan's device loop (fft over the last axis of `shape`) and its host time per
    call: the loop's wall time before the finish (the median of five loops of at least 1000
    calls), on a transform small enough for the GPU to keep up with the host (8 x 1024), so
    that the host's own work is what is timed."""
    import pyfftgl
    dev = pyfftgl.get_device(backend)
    rows = []
    for what, shp in (("loop", shape), ("host", (8, 1024))):
        x = pyfftgl.asarray(data(shp, np.complex64), backend=backend)
        p = pyfftgl.plan(shp, np.complex64, kind="fft", backend=backend)
        o = p(x)
        loop = loop_us(lambda: p(x, out=o), dev.finish, calls=calls)
        host_us = float(np.median([_host_us(lambda: p(x, out=o), dev.finish, max(calls, 1000))
                                   for _ in range(5)]))
        row = {"case": f"device loop fft {shp}", "backend": backend,
               "us_per_call": loop["us_per_call"], "host_us_per_call": host_us}
        if what == "host":  # one call with the GPU idle before it (issue 51's host time)
            row["host_us_alone"] = alone_us(lambda: p(x, out=o), dev.finish)["median"]
        torch = torch_cuda()
        if torch is not None and what == "loop":
            t = torch.from_numpy(data(shp, np.complex64)).cuda()
            row["torch_us"] = loop_us(lambda: torch.fft.fft(t, dim=-1), torch.cuda.synchronize,
                                      calls=calls)["us_per_call"]
        rows.append(row)
        print(row, flush=True)
    return rows


def _host_us(call, finish, calls: int) -> float:
    """Host µs per call of `calls` back-to-back call()s, timed before the finish that ends them."""
    t0 = time.perf_counter()
    for _ in range(calls):
        call()
    host_us = (time.perf_counter() - t0) / calls * 1e6
    finish()
    return host_us


def _rss_bytes() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:"))


def memory_rows(backend: str, case, calls: int = 2000) -> list[dict]:
    """The resident set and the memory pool's used and held bytes before and after `calls`
    fftconvolve calls of one set of shapes (after 200 warm-up calls), on device arrays and
    on numpy arrays: flat where nothing a call makes outlives it."""
    import gc
    import pyfftgl
    import pyfftgl.signal as ps
    name, ashape, kshape, mode = case
    a, k = data(ashape, np.float32, 1), data(kshape, np.float32, 2)
    da, dk = pyfftgl.asarray(a, backend=backend), pyfftgl.asarray(k, backend=backend)
    dev, pool = pyfftgl.get_device(backend), pyfftgl.memory_pool(backend)
    rows = []
    for path, call in (("device", lambda: ps.fftconvolve(da, dk, mode)),
                       ("numpy", lambda: ps.fftconvolve(a, k, mode, backend=backend))):
        def state():
            dev.finish()
            gc.collect()
            st = pool.stats()
            return _rss_bytes(), st["used_bytes"], st["held_bytes"]
        for _ in range(200):
            call()
        before, rss_at = state(), []
        for i in range(calls):
            call()
            if (i + 1) % (calls // 4) == 0:  # a plateau and a leak look alike at the end only
                rss_at.append(state()[0] - before[0])
        after = state()
        row = {"case": f"memory: {calls} fftconvolve {name} {ashape} * {kshape} ({path})",
               "backend": backend, **{f"{what}_growth_bytes": b - f for what, f, b in
                                      zip(("rss", "used", "held"), before, after)},
               "rss_growth_by_quarter": rss_at, "rss_bytes": after[0], "held_bytes": after[2]}
        rows.append(row)
        print(row, flush=True)
    return rows


def write_rows(rows: list[dict], path: str | None) -> None:
    """The bench's rows as a JSON file at `path` (nothing where None)."""
    if path:
        with open(path, "w") as f:
            json.dump(rows, f, indent=1)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pyfftgl.bench.user_calls", description=__doc__)
    ap.add_argument("--quick", action="store_true", help="small cases (software drivers)")
    ap.add_argument("--backends", nargs="+", default=["vulkan", "gl"])
    ap.add_argument("--calls", type=int, default=50, help="calls per loop (at least)")
    ap.add_argument("--out", help="write the rows to this JSON file")
    args = ap.parse_args(argv)
    rows = []
    for backend in args.backends:
        rows += conv_rows(backend, QUICK_CONV if args.quick else CONV, args.calls)
        rows += one_shot_rows(backend, QUICK_ONE_SHOT if args.quick else ONE_SHOT)
        rows += loop_rows(backend, (3, 128, 128) if args.quick else (3, 1024, 1024), args.calls)
        rows += memory_rows(backend, (QUICK_CONV if args.quick else CONV)[0],
                            200 if args.quick else 2000)
    write_rows(rows, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
