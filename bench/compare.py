"""GPU time of pyfftgl (both backends) against torch.fft (cuFFT) in the same process.

    python bench/compare.py --sizes 256 1024 4096 --elements 16777216 --json out.json

pyfftgl's time comes from Vulkan timestamps / GL timer queries around its dispatches (upload and
download excluded); cuFFT's from CUDA events around a loop of calls. GB/s counts 16 bytes per
element per pass (one read and one write of complex64), once per pass of the plan.
"""
from __future__ import annotations

import argparse
import datetime
import json
import platform
import subprocess
import sys

import numpy as np

import pyfftgl
from pyfftgl.backends import BACKENDS, probe


def _torch_cuda():
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def cuda_ms(fn, reps: int) -> float:
    """Best CUDA-event time of fn() over reps loops of 10 calls, after 3 warm-ups."""
    import torch
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    best = float("inf")
    for _ in range(reps):
        start.record()
        for _ in range(10):
            fn()
        stop.record()
        torch.cuda.synchronize()
        best = min(best, start.elapsed_time(stop) / 10)
    return best


def cufft_ms(n: int, batch: int, reps: int) -> float | None:
    torch = _torch_cuda()
    if torch is None:
        return None
    x = torch.ones((batch, n), dtype=torch.complex64, device="cuda")
    return cuda_ms(lambda: torch.fft.fft(x), reps)


def copy_gbps() -> float | None:
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    a = torch.empty(2**28, dtype=torch.uint8, device="cuda")
    b = torch.empty_like(a)
    for _ in range(3):
        b.copy_(a)
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(20):
        b.copy_(a)
    stop.record()
    torch.cuda.synchronize()
    return 2 * a.numel() * 20 / (start.elapsed_time(stop) * 1e-3) / 1e9


def pyfftgl_ms(backend: str, n: int, batch: int, reps: int) -> tuple[float, float, int]:
    """(best GPU ms, rel L2 error vs numpy float64 on a sample of lines, passes)."""
    plan = pyfftgl.FFTPlan(n, batch, False, backend=backend)
    rng = np.random.default_rng(n)
    x = (rng.standard_normal((batch, n)) + 1j * rng.standard_normal((batch, n))).astype(np.complex64)
    y = plan.execute(x)
    sample = slice(0, min(batch, 64))
    ref = np.fft.fft(x[sample].astype(np.complex128))
    err = float(np.linalg.norm(y[sample] - ref) / np.linalg.norm(ref))
    best = float("inf")
    for _ in range(reps):
        plan.execute(x, timed=True)
        best = min(best, plan.last_gpu_ns / 1e6)
    return best, err, len(plan.passes)


def plan_gpu_ms(p, reps: int) -> float:
    """Best GPU time of a pyfftgl.plan: the sum over its device plans (one per submission)."""
    best = float("inf")
    inputs = [np.ones(dp.shape, np.complex64) for dp in p.device_plans]
    for _ in range(reps):
        total = 0.0
        for dp, x in zip(p.device_plans, inputs):
            dp.execute(x, timed=True)
            total += dp.last_gpu_ns / 1e6
        best = min(best, total)
    return best


def cufft_2d_ms(shape, real: bool, reps: int) -> float | None:
    torch = _torch_cuda()
    if torch is None:
        return None
    x = torch.ones(shape, dtype=torch.float32 if real else torch.complex64, device="cuda")
    f = torch.fft.rfft2 if real else torch.fft.fft2
    return cuda_ms(lambda: f(x), reps)


def bench_2d(sizes, reps, records, bw, commit):
    for side in sizes:
        for kind, dtype in (("fft2", np.complex64), ("rfft2", np.float32)):
            ref = cufft_2d_ms((side, side), kind == "rfft2", reps)
            for name in BACKENDS:
                dev, why = probe(name)
                if dev is None:
                    continue
                p = pyfftgl.plan((side, side), dtype, kind=kind, backend=name)
                ms = plan_gpu_ms(p, reps)
                records.append(dict(case=f"{kind}", shape=[side, side], batch=1, kind=kind,
                                    backend=name, gpu_ms=ms, ref={"cufft_ms": ref},
                                    copy_gbps=bw, device=dev.info.name, driver=dev.info.driver,
                                    date=datetime.date.today().isoformat(), commit=commit))
                ratio = f"{ms / ref:5.2f}x cuFFT ({ref:.3f} ms)" if ref else "no cuFFT here"
                print(f"{name:6s} {kind:5s} {side}x{side} GPU {ms:8.3f} ms {ratio}", flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[256, 1024, 4096])
    ap.add_argument("--elements", type=int, default=2**24)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--json")
    ap.add_argument("--sizes-2d", type=int, nargs="*", default=[])
    args = ap.parse_args(argv)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip() or None
    bw = copy_gbps()
    print(f"device copy bandwidth (torch, read+write): {bw and round(bw)} GB/s")
    records = []
    for n in args.sizes:
        batch = max(1, args.elements // n)
        ref = cufft_ms(n, batch, args.reps)
        for name in BACKENDS:
            dev, why = probe(name)
            if dev is None:
                print(f"{name}: unavailable: {why}")
                continue
            ms, err, passes = pyfftgl_ms(name, n, batch, args.reps)
            gbps = 16 * n * batch * passes / (ms * 1e-3) / 1e9
            rec = dict(case="c2c-1d", shape=[n], batch=batch, kind="c2c", backend=name,
                       gpu_ms=ms, passes=passes, gbps=gbps, rel_l2=err, ref={"cufft_ms": ref},
                       copy_gbps=bw, device=dev.info.name, driver=dev.info.driver,
                       date=datetime.date.today().isoformat(), commit=commit,
                       python=platform.python_version())
            records.append(rec)
            ratio = f"{ms / ref:5.2f}x cuFFT ({ref:.3f} ms)" if ref else "no cuFFT here"
            pct = f"{100 * gbps / bw:5.1f}% of copy" if bw else ""
            print(f"{name:6s} n={n:6d} batch={batch:8d} GPU {ms:8.3f} ms {gbps:7.0f} GB/s {pct} "
                  f"{ratio}  rel L2 {err:.2e}", flush=True)
    bench_2d(args.sizes_2d, args.reps, records, bw, commit)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(records, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
