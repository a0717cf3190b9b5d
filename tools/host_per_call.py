"""Host time of one replayed device call of a cached plan, `p(x, out=o)` on DeviceArrays, and
the Python function calls it makes (issue 51): the GPU idle before each timed call
(device.finish(), then the call alone), median of `--calls`; then a cProfile of `--profile`
replays (a finish outside the profile every `--loop` calls), its function calls per replay,
the time the profile puts in the driver's own calls, and the functions that make them.

    python tools/host_per_call.py [--backends vulkan gl] [--shape 8x64] [--top 25]
"""
from __future__ import annotations

import argparse
import cProfile
import io
import pstats

import numpy as np


def host_us(backend: str, shape: tuple[int, ...], calls: int) -> tuple[float, float]:
    """(median, 10th percentile) host µs of one replay after a device finish."""
    import pyfftgl
    from pyfftgl.bench.timing import alone_us
    x = pyfftgl.asarray(np.ones(shape, np.complex64), backend=backend)
    p = pyfftgl.plan(shape, np.complex64, kind="fft", backend=backend)
    o = p(x)
    us = alone_us(lambda: p(x, out=o), pyfftgl.get_device(backend).finish, calls)
    return us["median"], us["p10"]


def profile(backend: str, shape: tuple[int, ...], calls: int, top: int, loop: int) -> tuple:
    """(Python function calls per replay, µs per replay in the driver's calls: kp's or
    ModernGL's C methods, by the profile) over `calls` replays, a finish every `loop` calls
    outside the profile (1: the GPU idle before each call, as host_us times them), printing
    the `top` functions by calls."""
    import pyfftgl
    x = pyfftgl.asarray(np.ones(shape, np.complex64), backend=backend)
    p = pyfftgl.plan(shape, np.complex64, kind="fft", backend=backend)
    o = p(x)
    dev = pyfftgl.get_device(backend)
    for _ in range(100):
        p(x, out=o)
    dev.finish()
    prof = cProfile.Profile()
    for i in range(calls):
        prof.enable()
        p(x, out=o)
        prof.disable()
        if i % loop == loop - 1:
            dev.finish()
    dev.finish()
    stats = pstats.Stats(prof)
    total = sum(v[1] for v in stats.stats.values())  # primitive and recursive calls alike
    driver = sum(v[2] for (file, _, name), v in stats.stats.items()
                 if file == "~" and ("_kp." in name or "mgl." in name))
    if top:
        out = io.StringIO()
        stats.stream = out
        stats.sort_stats("ncalls").print_stats(top)
        print(out.getvalue())
    return total / calls, driver / calls * 1e6


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--backends", nargs="+", default=["vulkan", "gl"])
    ap.add_argument("--shape", default="8x64")
    ap.add_argument("--calls", type=int, default=500, help="timed calls (median)")
    ap.add_argument("--profile", type=int, default=10_000, help="profiled calls")
    ap.add_argument("--top", type=int, default=0, help="functions to list from the profile")
    ap.add_argument("--loop", type=int, default=1,
                    help="profiled calls back to back before a finish (1: the GPU idle first)")
    args = ap.parse_args(argv)
    shape = tuple(int(s) for s in args.shape.split("x"))
    for b in args.backends:
        med, p10 = host_us(b, shape, args.calls)
        per, driver = profile(b, shape, args.profile, args.top, args.loop)
        print(f"{b} {shape}: host us per call median {med:.2f} p10 {p10:.2f}; "
              f"{per:.1f} Python function calls per replay ({args.loop} back to back), "
              f"{driver:.1f} us of them in the driver's calls (profiled)", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
