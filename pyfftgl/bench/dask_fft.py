"""python -m pyfftgl.bench.dask_fft: one 3-D complex64 FFT larger than a GPU, over dask workers.

    python -m pyfftgl.bench.dask_fft --workers 1 2 4 --fractions 0.25 1 2 --out dask.json
    python -m pyfftgl.bench.dask_fft --workers 2 --sides 64 96 --backend vulkan   # small, here
    python -m pyfftgl.bench.dask_fft --workers 2 --gpus 2 --exceed --lean --no-cpu  # > one GPU

`--exceed` takes the smallest 5-smooth cube whose input and output together exceed one GPU's
memory (nvidia-smi's memory.total), and also times torch.fft and pyfftgl on one GPU for the
largest cube that fits one. `--lean` makes the cube on the workers, runs each stage once (its
staged wall time is the end-to-end time), releases the input after the first stage, and checks
the sample lines by regenerating the input slab by slab on the workers.

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


# A large cube sits in worker memory (input, output and a shuffle's share): spill only near the
# limit, which dask's defaults (60% / 70%) would reach half-way through.
SPILL_LATE = {"DASK_DISTRIBUTED__WORKER__MEMORY__TARGET": "0.85",
              "DASK_DISTRIBUTED__WORKER__MEMORY__SPILL": "0.9",
              "DASK_DISTRIBUTED__WORKER__MEMORY__PAUSE": "0.95"}


def start_cluster(workers: int, gpus: int, backend: str):
    """One single-threaded worker process per GPU (round robin where workers outnumber GPUs)."""
    from distributed import Client, Nanny, Scheduler, SpecCluster
    memory = host_available() // max(workers, 1)
    spec = {f"gpu{i}": {"cls": Nanny, "options": {
        "nthreads": 1, "memory_limit": memory,
        "env": {**SPILL_LATE, "PYFFTGL_VULKAN_DEVICE": str(i % max(gpus, 1)),
                "GLCONTEXT_DEVICE_INDEX": str(i % max(gpus, 1))}}} for i in range(workers)}
    cluster = SpecCluster(spec, {"cls": Scheduler, "options": {"dashboard_address": ":0"}})
    client = Client(cluster)
    client.wait_for_workers(workers)
    return cluster, client


def cube_block(index: int, shape, seed: int = 0) -> np.ndarray:
    """Slab `index` of the bench's cube: float32 normals from a generator seeded by (seed,
    index), so any slab can be made again anywhere (check_lines regenerates the input)."""
    out = np.empty(tuple(shape), np.complex64)
    np.random.default_rng((seed, index)).standard_normal(dtype=np.float32,
                                                         out=out.view(np.float32))
    return out


def _cube_task(block_info=None, seed: int = 0):
    info = block_info[None]
    return cube_block(info["chunk-location"][0], info["chunk-shape"], seed)


def make_cube(side: int, blocks: int, seed: int = 0):
    """The side^3 complex64 cube in `blocks` slabs along axis 0, made on the workers."""
    import dask.array as da
    from pyfftgl.dask_pencil import even_chunks
    chunks = (even_chunks(side, blocks), (side,), (side,))
    return da.map_blocks(_cube_task, chunks=chunks, dtype=np.complex64, seed=seed,
                         meta=np.empty((0, 0, 0), np.complex64))


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


def progress(msg: str) -> None:
    """A timestamped line, flushed: a run cut by a time limit still shows how far it got."""
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def time_stages(box: list, backend: str, note=lambda rec: None) -> tuple:
    """Each stage of fftn(x) once, in order, on persisted input (`box` holds x and is emptied,
    so that x is released after the first stage reads it): local FFT and shuffle seconds, the
    wall time from the first stage's start to the last's end, and the persisted result."""
    from distributed import wait
    from pyfftgl import dask_pencil
    y = box.pop()
    axes, target = dask_pencil.resolve_axes("fftn", y.shape, None, None)
    rec = {"local_fft_s": 0.0, "shuffle_s": 0.0, "all_to_alls": 0, "stages": []}
    start = time.perf_counter()
    for i, stage in enumerate(dask_pencil.stages(y, "fftn", axes, target)):
        if tuple(stage[0]) != y.chunks:
            moved = y.rechunk(stage[0], method="p2p").persist()
            _, dt = timed(lambda: wait(moved))
            y = moved
            rec["shuffle_s"] += dt
            rec["all_to_alls"] += 1
            rec["stages"].append({"shuffle_s": dt})
            progress(f"all-to-all {rec['all_to_alls']}: {dt:.2f} s")
            note(rec)
        done = dask_pencil.apply_stage(y, stage, target, None, backend, np.complex64,
                                       index=i).persist()
        _, dt = timed(lambda: wait(done))
        y = done
        rec["local_fft_s"] += dt
        rec["stages"].append({"local_fft_s": dt})
        progress(f"local FFT stage {i}: {dt:.2f} s")
        note(rec)
    rec["staged_wall_s"] = time.perf_counter() - start
    return rec, y


def _contract(index, start, shape, w0, w1) -> np.ndarray:
    """Slab `index` (its first row `start`) contracted with the picked lines' twiddles:
    sum over its rows i and all j of x[i, j, :] w0[k, i] w1[k, j], float64."""
    slab = cube_block(index, shape)
    part = np.zeros((w0.shape[0], shape[2]), np.complex128)
    for i in range(shape[0]):  # a row at a time: no float64 copy of the whole slab
        part += w0[:, start + i, None] * (w1 @ slab[i].astype(np.complex128))
    return part


def check_lines(client, chunks0, side: int, y, lines: int, seed: int = 1) -> float:
    """The largest rel L2 error over `lines` output lines y[a, b, :] against numpy float64:
    sum over i, j of x[i, j, :] e^(-2 pi i (a i + b j) / n), then a float64 FFT along the line.
    The workers regenerate and contract their slabs (cube_block); only vectors travel."""
    rng = np.random.default_rng(seed)
    picks = [(int(rng.integers(side)), int(rng.integers(side))) for _ in range(lines)]
    ks = np.arange(side)
    w0 = np.exp(-2j * np.pi * np.outer([a for a, _ in picks], ks) / side)
    w1 = np.exp(-2j * np.pi * np.outer([b for _, b in picks], ks) / side)
    starts = np.concatenate([[0], np.cumsum(chunks0)[:-1]])
    w0f, w1f = client.scatter(w0, broadcast=True), client.scatter(w1, broadcast=True)
    parts = [client.submit(_contract, i, int(st), (c, side, side), w0f, w1f, pure=False)
             for i, (st, c) in enumerate(zip(starts, chunks0))]
    ref = np.fft.fft(sum(client.gather(parts)), axis=1)
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


def pyfftgl_reference(side: int, backend: str) -> dict:
    """pyfftgl.fftn's seconds on one GPU (best of two, device-resident) for the largest cube of
    at most `side` that one call can plan (a buffer binding bounds it: Vulkan's
    maxStorageBufferRange is 4 GiB on NVIDIA)."""
    import pyfftgl
    for s in range(side, 15, -16):
        try:
            plan = pyfftgl.plan((s,) * 3, np.complex64, kind="fftn", backend=backend)
            break
        except ValueError:
            continue
    else:
        return {}
    x = pyfftgl.asarray(cube_block(0, (s,) * 3), backend=backend)
    out = plan(x)
    dev = pyfftgl.get_device(backend)
    best = math.inf
    for _ in range(2):
        dev.finish()
        t0 = time.perf_counter()
        plan(x, out=out)
        dev.finish()
        best = min(best, time.perf_counter() - t0)
    del x, out, plan
    pyfftgl.plan_cache.clear()
    return {"pyfftgl_one_gpu_side": s, "pyfftgl_one_gpu_s": best}


def run_case(client, side: int, workers: int, args, note=lambda rec: None) -> dict:
    """One cube on `workers` workers: made on the workers, each stage timed once (the staged
    wall time is the end-to-end time of a lean run); unless --lean, a warm-up transform first
    and the whole graph `--repeat` times; sample lines checked against numpy float64."""
    import pyfftgl.dask as pdf
    from distributed import wait
    nbytes = side ** 3 * 8
    blocks = max(workers, math.ceil(nbytes / args.block_bytes))
    blocks = workers * math.ceil(blocks / workers)
    t0 = time.perf_counter()
    x = make_cube(side, blocks).persist()
    wait(x)
    chunks0 = x.chunks[0]
    rec = {"side": side, "workers": workers, "bytes": nbytes, "blocks": len(chunks0),
           "make_s": time.perf_counter() - t0}
    progress(f"{side}^3 ({nbytes / 1e9:.3g} GB) made on {workers} worker(s) in {len(chunks0)} "
             f"slabs: {rec['make_s']:.2f} s")
    if not args.lean:
        y = pdf.fftn(fresh(x, "warm"), backend=args.backend, out_chunks="transposed").persist()
        wait(y)  # each worker compiles its kernels here
        del y
    box = [x if args.lean else fresh(x, "stages")]
    if args.lean:
        x = None  # the first stage's blocks are its last readers
    stages, y = time_stages(box, args.backend, lambda r: note({**rec, **r}))
    rec.update(stages)
    rec["end_to_end_s"] = rec["staged_wall_s"]
    if not args.lean:
        for rep in range(args.repeat):
            y = pdf.fftn(fresh(x, f"run{rep}"), backend=args.backend,
                         out_chunks="transposed").persist()
            _, dt = timed(lambda y=y: wait(y))
            rec["end_to_end_s"] = min(rec["end_to_end_s"], dt)
    del x
    rec["overhead_s"] = rec["end_to_end_s"] - rec["local_fft_s"] - rec["shuffle_s"]
    per = rec["shuffle_s"] / max(rec["all_to_alls"], 1)
    rec["shuffle_gbps"] = nbytes / per / 1e9 if rec["all_to_alls"] else None
    rec["max_line_rel_l2"] = None
    if args.lines:
        t0 = time.perf_counter()
        rec["max_line_rel_l2"] = check_lines(client, chunks0, side, y, args.lines)
        rec["check_s"] = time.perf_counter() - t0
        progress(f"{args.lines} lines checked in {rec['check_s']:.1f} s: rel L2 "
                 f"{rec['max_line_rel_l2']:.2e}")
    rec["line_bound"] = EPS32 * math.sqrt(math.log2(side ** 3))
    del y
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


def exceeding_side(gpu_bytes: int) -> int:
    """The smallest 5-smooth side whose complex64 cube's input and output together exceed one
    GPU's memory by 2%."""
    side = int((1.02 * gpu_bytes / 16) ** (1 / 3))
    while True:
        side += 1
        n = side
        for p in (2, 3, 5):
            while n % p == 0:
                n //= p
        if n == 1 and 16 * side ** 3 > 1.02 * gpu_bytes:
            return side


def sides(args) -> list[int]:
    if args.sides:
        return list(args.sides)
    query = "memory.total" if args.exceed else "memory.free"
    free = args.gpu_memory or (int(nvidia(query)[0]) * 2 ** 20 if nvidia(query) else None)
    if free is None:
        raise SystemExit("no GPU memory figure: pass --gpu-memory BYTES or --sides")
    if args.exceed:
        return [exceeding_side(free)]
    return [int(round((f * free / 8) ** (1 / 3))) for f in args.fractions]


def one_gpu_side(args) -> int:
    """The largest side whose cube, output and a work copy fit one GPU's free memory."""
    free = args.gpu_memory or (int(nvidia("memory.free")[0]) * 2 ** 20
                               if nvidia("memory.free") else 0)
    return 16 * int((free / 24) ** (1 / 3) // 16)


def parse(argv):
    ap = argparse.ArgumentParser(prog="python -m pyfftgl.bench.dask_fft", description=__doc__)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--fractions", type=float, nargs="+", default=[0.25, 1.0, 2.0],
                    help="cube bytes as fractions of one GPU's free memory")
    ap.add_argument("--sides", type=int, nargs="+", help="explicit cube sides instead")
    ap.add_argument("--exceed", action="store_true",
                    help="one cube: the smallest whose input and output exceed one GPU's memory")
    ap.add_argument("--lean", action="store_true",
                    help="each stage once, no warm-up or whole-graph repeats (large cubes)")
    ap.add_argument("--gpu-memory", type=int, help="one GPU's bytes (default nvidia-smi's)")
    ap.add_argument("--gpus", type=int, default=len(nvidia("index")) or 1)
    ap.add_argument("--block-bytes", type=int, default=1 << 30, help="largest input slab")
    ap.add_argument("--backend", default="vulkan", choices=["vulkan", "gl"])
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--lines", type=int, default=4, help="output lines checked (0: none)")
    ap.add_argument("--no-cpu", action="store_true", help="skip numpy/scipy")
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--out", default="bench/results/dask_fft.json")
    return ap.parse_args(argv)


def references(args, cube_sides) -> tuple[dict, dict]:
    """Per side: numpy/scipy on the host and torch on one GPU where the cube fits; and once:
    torch and pyfftgl on one GPU for the largest cube that fits one (`--exceed`)."""
    refs = {side: {**host_references(side, args.no_cpu),
                   "torch_s": torch_reference(side, args.no_torch)} for side in cube_sides}
    one = {}
    if args.exceed:
        side = one_gpu_side(args)
        one = {"one_gpu_side": side, "torch_one_gpu_s": torch_reference(side, args.no_torch),
               **pyfftgl_reference(side, args.backend)}
        progress(f"one GPU: {one}")
    return refs, one


def main(argv=None) -> int:
    args = parse(argv)
    cube_sides = sides(args)
    copy = host_copy_gbps(min(1 << 30, max(s ** 3 * 8 for s in cube_sides)))
    progress(f"sides {cube_sides}; host memcpy {copy:.1f} GB/s")
    refs, one = references(args, cube_sides)
    records = []
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)

    def save(partial=None):
        with open(args.out, "w") as f:
            json.dump({"host_copy_gbps": copy, "one_gpu": one,
                       "records": records + ([partial] if partial else [])}, f, indent=1)
    for workers in args.workers:
        cluster, client = start_cluster(workers, args.gpus, args.backend)
        try:
            for side in cube_sides:
                if host_available() < (2.5 if args.lean else 4) * side ** 3 * 8:
                    progress(f"{side}^3: skipped, the host lacks memory for input, output "
                             f"and shuffle buffers")
                    continue
                rec = {**run_case(client, side, workers, args, save), **refs[side],
                       "host_copy_gbps": copy, "gpus": args.gpus, "backend": args.backend}
                print_record(rec, copy)
                records.append(rec)
                save()
        finally:
            client.close()
            cluster.close()
    save()
    bad = [r for r in records if r["max_line_rel_l2"] is not None
           and r["max_line_rel_l2"] > r["line_bound"]]
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
