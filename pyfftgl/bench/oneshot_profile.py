"""Where a numpy-in / numpy-out call's time goes (issue 51's one-shot rows): for each shape of
bench/user_calls.py, the wall ms of the whole call, of the host's copy into the upload staging
memory (with queueing the submission), of the wait for the GPU, of the copy out of the download
memory into the result, a plain host memcpy of the same bytes (the floor of each copy), and
torch's `.cuda()` ... `.cpu()` round trip with its own parts.

    python -m pyfftgl.bench.oneshot_profile [--quick] [--backends vulkan gl] [--out FILE.json]

Each figure is the median of `--reps` steady-state calls (after two warm-up calls). Software
drivers (lavapipe, llvmpipe) run the GPU work when it is submitted or flushed: there it shows in
the upload part, not the GPU wait."""
from __future__ import annotations

import argparse

import numpy as np

from .user_calls import ONE_SHOT, QUICK_ONE_SHOT, data, steady_ms, torch_cuda, write_rows


def _kwargs(kind: str) -> dict:
    return {"axes": (-2, -1)} if kind.endswith("2") else {"axis": -1}


def _device_jobs(kind: str, x: np.ndarray, backend):
    """(device plan, its input) of each job of the numpy call pyfftgl.<kind>(x), as the call
    makes them (the jobs of one-shot shapes take the previous job's result, so the first
    job's input stands for all: every job is timed on an input of its own shape)."""
    from ..kinds import steps_for
    from ..planner import precision_of
    from ..plans import cached_steps_plan
    call = steps_for(kind, x.shape, x.dtype, **_kwargs(kind))
    jobs, arr = [], x
    for job in call.jobs:
        xin = job.upload(arr)
        plan = cached_steps_plan(xin.shape, tuple(job.steps), backend, precision_of(xin.dtype))
        jobs.append((plan, xin))
        arr = plan.execute(xin)
    return jobs


def _median_parts(jobs, reps: int) -> dict:
    """Median ms of each part over `reps` calls of every job (after two warm-up calls)."""
    samples = []
    for rep in range(reps + 2):
        parts: dict = {}
        for plan, xin in jobs:
            plan.execute(xin, breakdown=parts)
        if rep >= 2:
            samples.append(parts)
    return {f"{k}_ms": float(np.median([s[k] for s in samples])) / 1e6 for k in samples[0]}


def _memcpy_ms(nbytes: int, reps: int) -> float:
    src = np.ones(nbytes, np.uint8)
    dst = np.empty_like(src)
    return steady_ms(lambda: np.copyto(dst, src), reps)


def _torch_parts(torch, kind: str, x: np.ndarray, reps: int) -> dict:
    """torch's round trip and its parts: host -> device, the transform, device -> host."""
    fn = getattr(torch.fft, kind)
    dim = {"dim": (-2, -1)} if kind.endswith("2") else {"dim": -1}
    sync = torch.cuda.synchronize
    t = torch.from_numpy(x).cuda()
    y = fn(t, **dim)

    def synced(f):
        def run():
            f()
            sync()
        return run
    return {"torch_ms": steady_ms(lambda: fn(torch.from_numpy(x).cuda(), **dim).cpu(), reps),
            "torch_h2d_ms": steady_ms(synced(lambda: torch.from_numpy(x).cuda()), reps),
            "torch_fft_ms": steady_ms(synced(lambda: fn(t, **dim)), reps),
            "torch_d2h_ms": steady_ms(lambda: y.cpu(), reps)}


def profile_rows(backend: str, cases, reps: int) -> list[dict]:
    import pyfftgl
    torch = torch_cuda()
    rows = []
    for kind, shape in cases:
        x = data(shape, np.float32 if kind.startswith("r") else np.complex64)
        call = getattr(pyfftgl, kind)
        result = call(x, backend=backend, **_kwargs(kind))
        row = {"case": f"{kind} {shape}", "backend": backend,
               "call_ms": steady_ms(lambda: call(x, backend=backend, **_kwargs(kind)), reps)}
        row.update(_median_parts(_device_jobs(kind, x, backend), reps))
        row["memcpy_in_ms"] = _memcpy_ms(x.nbytes, reps)
        row["memcpy_out_ms"] = _memcpy_ms(result.nbytes, reps)
        if torch is not None:
            row.update(_torch_parts(torch, kind, x, reps))
        rows.append(row)
        print({k: round(v, 3) if isinstance(v, float) else v for k, v in row.items()},
              flush=True)
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pyfftgl.bench.oneshot_profile",
                                 description=__doc__)
    ap.add_argument("--quick", action="store_true", help="small cases (software drivers)")
    ap.add_argument("--backends", nargs="+", default=["vulkan", "gl"])
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--out", help="write the rows to this JSON file")
    args = ap.parse_args(argv)
    rows = []
    for backend in args.backends:
        rows += profile_rows(backend, QUICK_ONE_SHOT if args.quick else ONE_SHOT, args.reps)
    write_rows(rows, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
