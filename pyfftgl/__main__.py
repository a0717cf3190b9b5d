"""python -m pyfftgl info | demo | selftest | bench

Exit codes: 0 success, 1 a check failed, 2 no usable backend.
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from . import profiles
from .backends import BACKENDS, available, probe


def _device_lines(dev) -> list[str]:
    i, lim = dev.info, dev.info.limits
    return [
        f"  device:        {i.name}{'  (software rasteriser)' if i.is_software else ''}",
        f"  driver:        {i.driver}",
        f"  API version:   {i.api_version}",
        *profiles.describe(dev),
        f"  shared memory: {lim.max_shared_bytes} bytes per workgroup",
        f"  workgroup:     {lim.max_invocations} invocations, size {lim.max_group_size}",
        f"  groups:        {lim.max_group_count} per dispatch",
        f"  max buffer:    {lim.max_buffer_bytes} bytes    max texture {lim.max_texture_size}",
        f"  precision:     single{', double' if i.float64 else ' (no fp64: double input refused)'}",
    ]


def cmd_info(args) -> int:
    import pyfftgl
    print(f"pyfftgl {pyfftgl.__version__}, numpy {np.__version__}")
    try:
        profile = profiles.active()
    except ValueError as e:  # an unknown PYFFTGL_DEVICE_PROFILE: no backend can honour it
        print(f"error: {e}")
        return 2
    print(f"device profile: {profile.name} ({profile.device}; {profiles.ENV})" if profile else
          f"device profile: none (the drivers' own limits; {profiles.ENV} sets one)")
    usable = 0
    for name in BACKENDS:
        dev, why = probe(name)
        if dev is None:
            print(f"{name}: unavailable: {why}")
            continue
        ok = _smoke(name)
        usable += ok
        print(f"{name}: {'works' if ok else 'FAILS a 64-point transform'}")
        print("\n".join(_device_lines(dev)))
    return 0 if usable else 2


def _smoke(backend) -> bool:
    import pyfftgl
    x = (np.arange(64) % 7).astype(np.complex64)
    try:
        y = pyfftgl.fft(x, backend=backend)
    except Exception as e:  # report, don't crash `info`
        print(f"  error: {e}", file=sys.stderr)
        return False
    return bool(np.allclose(y, np.fft.fft(x.astype(np.complex128)), atol=1e-4))


def _rel_l2(got, ref) -> float:
    return float(np.linalg.norm(got - ref) / np.linalg.norm(ref))


def cmd_demo(args) -> int:
    """A quick check on each backend: transform an image-sized batch, compare it with numpy,
    print the times (the demos proper are demos/ocean and demos/filter)."""
    import pyfftgl
    rows, n = args.rows, args.n
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((rows, n)) + 1j * rng.standard_normal((rows, n))).astype(np.complex64)
    t0 = time.perf_counter()
    ref = np.fft.fft(x.astype(np.complex128))
    cpu_ms = (time.perf_counter() - t0) * 1e3
    status = 0
    for name, dev in available():
        plan = pyfftgl.FFTPlan(n, rows, False, backend=name)
        plan.execute(x)  # warm-up: compiles and first-touch allocations
        t0 = time.perf_counter()
        y = plan.execute(x, timed=True)
        wall = (time.perf_counter() - t0) * 1e3
        err = _rel_l2(y, ref)
        bound = float(np.finfo(np.float32).eps * np.sqrt(np.log2(n)))
        ok = err <= bound
        status |= not ok
        print(f"{name:6s} {dev.info.name}: {rows} x {n} complex64 rows, "
              f"GPU {plan.last_gpu_ns / 1e6:.3f} ms, "
              f"call {wall:.1f} ms (upload + run + download), rel L2 error {err:.2e} "
              f"({'within' if ok else 'ABOVE'} the {bound:.2e} contract)")
    print(f"numpy  float64 reference: {cpu_ms:.1f} ms")
    return status


# selftest --quick: its five cases (line, square, cube, Bluestein, mixed radix) this small.
QUICK_SIZE = 1 << 10


def cmd_selftest(args) -> int:
    """Ergun's randomized self-check (pyfftgl/selftest.py) on each backend: no reference FFT."""
    from . import selftest
    bad, usable = 0, 0
    for name, dev in available(args.backend or BACKENDS):
        usable += 1
        print(f"{name}:")
        print("\n".join(_device_lines(dev)))
        try:
            checks = selftest.run(name, args.size or (QUICK_SIZE if args.quick else 1 << 16),
                                  args.seed, tol=args.tolerance)
        except Exception as e:  # a failure to run is a failed check, reported with the cause
            print(f"  error: {type(e).__name__}: {e}")
            bad += 1
            continue
        failed = [c for c in checks if not c.ok(args.tolerance)]
        bad += len(failed)
        worst = max(c.error for c in checks)
        print(f"{name}: {len(checks) - len(failed)}/{len(checks)} checks pass, worst rel Linf "
              f"{worst:.2e} (tolerance {args.tolerance:.0e})")
    if not usable:
        return 2
    return 1 if bad else 0


def _tune_key(text: str):
    """An argument of --tune: "1024" or "tiled:1024", as Limits.tuned keys name them."""
    from .planner import is_real_key, key_length
    from .wisdom import parse_key
    try:
        key = parse_key(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected N or tiled:N, got {text!r}") from None
    if is_real_key(key):  # measured by a loop probe, not the tuner
        raise argparse.ArgumentTypeError(f"the tuner times N or tiled:N, not {text!r}")
    if key_length(key)[0] < 2:
        raise argparse.ArgumentTypeError(f"a length must be >= 2, got {text!r}")
    return key


def _positive(text: str) -> int:
    n = int(text)
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {n}")
    return n


def cmd_bench(args) -> int:
    """The benchmark (pyfftgl/bench/), imported only for this command."""
    from .bench import cli
    return cli(args)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="pyfftgl", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("info", help="backends, devices, drivers, limits, and whether each works")
    d = sub.add_parser("demo", help="transform an image-sized batch on each backend and check it")
    d.add_argument("--rows", type=int, default=1024)
    d.add_argument("--n", type=int, default=1024)
    t = sub.add_parser("selftest", help="randomized self-check of the transforms (linearity, "
                       "impulse, constant, time and frequency shifts): needs no reference FFT")
    t.add_argument("--size", type=_positive,
                   help="elements per transformed array (default 2^16; --quick: 2^10)")
    t.add_argument("--quick", action="store_true",
                   help="arrays of 2^10 elements: seconds on software drivers")
    t.add_argument("--backend", nargs="+", choices=list(BACKENDS),
                   help="the backends to check (default: every usable one)")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--tolerance", type=float, default=1e-5, help="largest rel Linf error")
    b = sub.add_parser("bench", help="GPU/host time against CPU libraries and cuFFT; JSON + plot")
    b.add_argument("--quick", action="store_true", help="a few small cases (software drivers)")
    b.add_argument("--elements", type=int,
                   help="complex values per 1D batch (2^26, --tune 2^24; --quick 2^20)")
    b.add_argument("--tune", type=_tune_key, nargs="*", metavar="N",
                   help="time the kernel shapes of these lengths, N or tiled:N for the strided "
                        "passes of a four-step N*N (default: a set from 64 to 4096 and tiled:128 "
                        "to tiled:1024) and keep the fastest in the device's wisdom file")
    b.add_argument("--repeat", type=int, default=5)
    b.add_argument("--backends", nargs="+", default=list(BACKENDS), choices=list(BACKENDS))
    b.add_argument("--only", nargs="*", choices=["1d", "mixed", "bluestein", "2d", "real", "3d"],
                   help="these groups of the sweep (none named: only the --lengths)")
    b.add_argument("--no-cpu", action="store_true", help="skip the numpy/scipy references")
    b.add_argument("--lengths", type=_positive, nargs="+", default=[], metavar="N",
                   help="batched 1D lengths to time as well, over --elements (e.g. 8192 262144)")
    b.add_argument("--double", action="store_true",
                   help="every case in double precision (float64/complex128 data; torch.fft "
                        "complex128 as the cuFFT reference)")
    b.add_argument("--passes", action="store_true",
                   help="also time each pass alone (pass_ms in the records)")
    b.add_argument("--loop", action="store_true",
                   help="only the loop cases (fft2/rfft2, 3 images' rows, batched 4096), each also "
                        "timed as back-to-back device-resident calls ended by one finish, against "
                        "torch.fft's same loop (a full run loops these cases too)")
    b.add_argument("--loop-calls", type=_positive, default=200, metavar="K",
                   help="at least K calls per loop, more where K take under 50 ms (default 200)")
    b.add_argument("--dct", action="store_true",
                   help="only the DCT and convolution cases (dctn/idctn type 2, fftconvolve), "
                        "against cupyx.scipy where CuPy is importable")
    b.add_argument("--out", default="bench/results")
    b.add_argument("--no-write", action="store_true")
    args = ap.parse_args(argv)
    commands = {"info": cmd_info, "demo": cmd_demo, "selftest": cmd_selftest, "bench": cmd_bench}
    return commands[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
