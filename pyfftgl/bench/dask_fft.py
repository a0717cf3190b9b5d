"""python -m pyfftgl.bench.dask_fft: one 3-D complex64 FFT larger than a GPU, over dask workers.

    python -m pyfftgl.bench.dask_fft --workers 1 2 4 --fractions 0.25 1 2 --out dask.json
    python -m pyfftgl.bench.dask_fft --workers 2 --sides 64 96 --backend vulkan   # small, here

For each worker count and cube side (explicit `--sides`, or `--fractions` of one GPU's free
memory: nvidia-smi's figure, else `--gpu-memory`), a distributed cluster of one worker process
per GPU (PYFFTGL_VULKAN_DEVICE=i, round robin over `--gpus`; lavapipe where there are none)
runs pyfftgl.dask.fftn on a cube persisted on the workers in slabs. Each stage is then run alone,
persisted, and timed: local FFT stages, shuffle (all-to-all rechunk) stages, and the
end-to-end wall time of the whole graph; overhead is the end-to-end time less the stages' (it is
negative where the pipelined graph overlaps them). The shuffle's GB/s (array bytes per second
per all-to-all) is printed against this host's memcpy GB/s. numpy and scipy (all cores) time the
same cube on the host where it fits in memory, torch.fft on one GPU where it fits there. A sample
of output lines is checked against numpy float64 (each line is a contraction of the whole input,
done in slabs). Results go to one JSON file (`--out`).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import time

import numpy as np

EPS32 = float(np.finfo(np.float32).eps)


def nvidia(query: str) -> list[str]:
    """nvidia-smi's answer to a --query-gpu field, one line a GPU; [] without nvidia-smi."""
    if not shutil.which("nvidia-smi"):
        return []
    done = subprocess.run(["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader,nounits"],
                          capture_output=True, text=True)
    return [line.strip() for line in done.stdout.splitlines() if line.strip()]


def host_copy_gbps(nbytes: int) -> float:
    """This host's memcpy bandwidth: bytes read plus written per second, best of three."""
    a = np.ones(nbytes // 8, np.float64)
    b = np.empty_like(a)
    best = math.inf
    for _ in range(3):
        t0 = time.perf_counter()
        np.copyto(b, a)
        best = min(best, time.perf_counter() - t0)
    return 2 * a.nbytes / best / 1e9


def host_available() -> int:
    with open("/proc/meminfo") as f:
        info = {line.split(":")[0]: int(line.split()[1]) * 1024 for line in f}
    return info.get("MemAvailable", 0)


def start_cluster(workers: int, gpus: int, backend: str):
    """One single-threaded worker process per GPU (round robin where workers outnumber GPUs)."""
    from distributed import Client, Nanny, Scheduler, SpecCluster
    memory = host_available() // max(workers, 1)
    spec = {f"gpu{i}": {"cls": Nanny, "options": {
        "nthreads": 1, "memory_limit": memory,
        "env": {"PYFFTGL_VULKAN_DEVICE": str(i % max(gpus, 1)),
                "GLCONTEXT_DEVICE_INDEX": str(i % max(gpus, 1))}}} for i in range(workers)}
    cluster = SpecCluster(spec, {"cls": Scheduler, "options": {"dashboard_address": ":0"}})
    client = Client(cluster)
    client.wait_for_workers(workers)
    return cluster, client


def make_cube(side: int, blocks: int, seed: int = 0):
    import dask.array as da
    rng = da.random.default_rng(seed)
    chunks = (max(1, math.ceil(side / blocks)), side, side)
    re = rng.standard_normal((side,) * 3, chunks=chunks, dtype=np.float32)
    im = rng.standard_normal((side,) * 3, chunks=chunks, dtype=np.float32)
    return (re + 1j * im).astype(np.complex64)


def fresh(x, tag: str):
    """x under new keys (an identity task per block), so that a timed graph reuses no result
    the scheduler still holds from an earlier one."""
    return x.map_blocks(same, dtype=x.dtype, token=f"bench-{tag}")


def same(block):
    return block


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def time_stages(client, x, backend: str) -> dict:
    """Each stage of fftn(x) alone, on persisted input: local FFT and shuffle seconds."""
    from distributed import wait
    from pyfftgl import dask_pencil
    axes, target = dask_pencil.resolve_axes("fftn", x.shape, None, None)
    y, fft_s, shuffle_s, shuffles = x, 0.0, 0.0, 0
    for i, stage in enumerate(dask_pencil.stages(x, "fftn", axes, target)):
        chunks = stage[0]
        if tuple(chunks) != y.chunks:
            moved = y.rechunk(chunks, method="p2p").persist()
            _, dt = timed(lambda: wait(moved))
            y, shuffle_s, shuffles = moved, shuffle_s + dt, shuffles + 1
        done = dask_pencil.apply_stage(y, stage, target, None, backend, np.complex64,
                                       index=i).persist()
        _, dt = timed(lambda: wait(done))
        y, fft_s = done, fft_s + dt
    return {"local_fft_s": fft_s, "shuffle_s": shuffle_s, "all_to_alls": shuffles}


def check_lines(client, x, y, lines: int, seed: int = 1) -> float:
    """The largest rel L2 error over `lines` output lines y[a, b, :] against numpy float64:
    sum over i, j of x[i, j, :] e^(-2 pi i (a i + b j) / n), then a float64 FFT along the line."""
    n0, n1, _ = x.shape
    rng = np.random.default_rng(seed)
    picks = [(int(rng.integers(n0)), int(rng.integers(n1))) for _ in range(lines)]
    w0 = np.exp(-2j * np.pi * np.outer([a for a, _ in picks], np.arange(n0)) / n0)
    w1 = np.exp(-2j * np.pi * np.outer([b for _, b in picks], np.arange(n1)) / n1)
    acc = np.zeros((lines, x.shape[2]), np.complex128)
    step = max(1, x.chunks[0][0])
    for start in range(0, n0, step):  # one slab of the input on the host at a time
        slab = x[start:start + step].compute().astype(np.complex128)
        part = np.tensordot(w0[:, start:start + step], slab, axes=(1, 0))  # (lines, n1, n2)
        acc += np.einsum("kj,kjn->kn", w1, part)
    ref = np.fft.fft(acc, axis=1)
    got = np.stack([y[a, b, :].compute() for a, b in picks]).astype(np.complex128)
    return float(max(np.linalg.norm(g - r) / np.linalg.norm(r) for g, r in zip(got, ref)))


def host_references(side: int, skip: bool) -> dict:
    """numpy's and scipy's (all cores) time for the same complex64 cube, where it fits."""
    nbytes = side ** 3 * 8
    if skip or host_available() < 6 * nbytes:
        return {"numpy_s": None, "scipy_s": None}
    rng = np.random.default_rng(0)
    h = (rng.standard_normal((side,) * 3, np.float32)
         + 1j * rng.standard_normal((side,) * 3, np.float32))
    out = {"numpy_s": timed(lambda: np.fft.fftn(h))[1]}
    try:
        import scipy.fft
        out["scipy_s"] = timed(lambda: scipy.fft.fftn(h, workers=os.cpu_count()))[1]
    except ImportError:
        out["scipy_s"] = None
    return out


def torch_reference(side: int, skip: bool) -> float | None:
    """torch.fft.fftn's seconds on one GPU (best of three), where the cube and its output fit."""
    try:
        import torch
    except ImportError:
        return None
    if skip or not torch.cuda.is_available():
        return None
    free, _ = torch.cuda.mem_get_info()
    if 3 * side ** 3 * 8 > free:
        return None
    x = torch.randn((side,) * 3, dtype=torch.complex64, device="cuda")
    best = math.inf
    for _ in range(3):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        torch.fft.fftn(x)
        torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t0)
    del x
    torch.cuda.empty_cache()
    return best


def run_case(client, side: int, workers: int, args) -> dict:
    import pyfftgl.dask as pdf
    from distributed import wait
    nbytes = side ** 3 * 8
    blocks = max(workers, math.ceil(nbytes / args.block_bytes))
    blocks = workers * math.ceil(blocks / workers)
    x = make_cube(side, blocks).persist()
    wait(x)
    rec = {"side": side, "workers": workers, "bytes": nbytes, "blocks": len(x.chunks[0])}
    y = pdf.fftn(fresh(x, "warm"), backend=args.backend, out_chunks="transposed").persist()
    wait(y)  # each worker compiles its kernels here
    rec.update(time_stages(client, fresh(x, "stages"), args.backend))
    best = math.inf
    for rep in range(args.repeat):
        y = pdf.fftn(fresh(x, f"run{rep}"), backend=args.backend,
                     out_chunks="transposed").persist()
        _, dt = timed(lambda y=y: wait(y))
        best = min(best, dt)
    rec["end_to_end_s"] = best
    rec["overhead_s"] = best - rec["local_fft_s"] - rec["shuffle_s"]
    per = rec["shuffle_s"] / max(rec["all_to_alls"], 1)
    rec["shuffle_gbps"] = nbytes / per / 1e9 if rec["all_to_alls"] else None
    rec["max_line_rel_l2"] = check_lines(client, x, y, args.lines) if args.lines else None
    rec["line_bound"] = EPS32 * math.sqrt(math.log2(side ** 3))
    del y, x
    return rec


def print_record(rec: dict, copy_gbps: float) -> None:
    gb = rec["bytes"] / 1e9
    shuffle = (f"{rec['shuffle_gbps']:.3g} GB/s per all-to-all ({rec['all_to_alls']}), host "
               f"memcpy {copy_gbps:.1f} GB/s" if rec["shuffle_gbps"] else "no all-to-all")
    refs = ", ".join(f"{k[:-2]} {v:.3f} s" for k, v in rec.items()
                     if k in ("numpy_s", "scipy_s", "torch_s") and v is not None)
    print(f"{rec['side']}^3 complex64 ({gb:.3g} GB) on {rec['workers']} worker(s), "
          f"{rec['blocks']} slabs: {rec['end_to_end_s']:.3f} s end to end; local FFT "
          f"{rec['local_fft_s']:.3f} s, shuffle {rec['shuffle_s']:.3f} s, overhead "
          f"{rec['overhead_s']:+.3f} s; {shuffle}; {refs or 'no host/torch reference'}; "
          f"lines rel L2 {rec['max_line_rel_l2']} (bound {rec['line_bound']:.2e})", flush=True)


def sides(args) -> list[int]:
    if args.sides:
        return list(args.sides)
    free = args.gpu_memory or (int(nvidia("memory.free")[0]) * 2 ** 20 if nvidia("memory.free")
                               else None)
    if free is None:
        raise SystemExit("no GPU memory figure: pass --gpu-memory BYTES or --sides")
    return [int(round((f * free / 8) ** (1 / 3))) for f in args.fractions]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pyfftgl.bench.dask_fft", description=__doc__)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--fractions", type=float, nargs="+", default=[0.25, 1.0, 2.0],
                    help="cube bytes as fractions of one GPU's free memory")
    ap.add_argument("--sides", type=int, nargs="+", help="explicit cube sides instead")
    ap.add_argument("--gpu-memory", type=int, help="one GPU's free bytes (default nvidia-smi's)")
    ap.add_argument("--gpus", type=int, default=len(nvidia("index")) or 1)
    ap.add_argument("--block-bytes", type=int, default=1 << 30, help="largest input slab")
    ap.add_argument("--backend", default="vulkan", choices=["vulkan", "gl"])
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--lines", type=int, default=4, help="output lines checked (0: none)")
    ap.add_argument("--no-cpu", action="store_true", help="skip numpy/scipy")
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--out", default="bench/results/dask_fft.json")
    args = ap.parse_args(argv)
    cube_sides = sides(args)
    copy = host_copy_gbps(min(1 << 30, max(s ** 3 * 8 for s in cube_sides)))
    records, refs = [], {}
    for side in cube_sides:
        refs[side] = {**host_references(side, args.no_cpu),
                      "torch_s": torch_reference(side, args.no_torch)}
    for workers in args.workers:
        cluster, client = start_cluster(workers, args.gpus, args.backend)
        try:
            for side in cube_sides:
                if host_available() < 4 * side ** 3 * 8:
                    print(f"{side}^3: skipped, the host lacks memory for input, output and "
                          f"shuffle buffers", flush=True)
                    continue
                rec = {**run_case(client, side, workers, args), **refs[side],
                       "host_copy_gbps": copy, "gpus": args.gpus, "backend": args.backend}
                print_record(rec, copy)
                records.append(rec)
        finally:
            client.close()
            cluster.close()
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"host_copy_gbps": copy, "records": records}, f, indent=1)
    bad = [r for r in records if r["max_line_rel_l2"] is not None
           and r["max_line_rel_l2"] > r["line_bound"]]
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
