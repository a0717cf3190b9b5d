"""The benchmark run: every case on every backend, one record per (case, backend), merged into
bench/results/<device-slug>.json."""
from __future__ import annotations

import datetime
import gc
import json
import math
import os
import subprocess
from pathlib import Path


from .. import wisdom
from ..backends import BACKENDS, available
from ..plans import plan_cache
from .cases import Case, case_input
from .reference import references, torch_loop
from .timing import copy_gbps, pass_ms, plan_loop, submission_floor_ms, time_gpu


def _commit() -> str | None:
    """The checkout's commit; PYFFTGL_COMMIT overrides it (a copied tree may carry a stale .git)."""
    if os.environ.get("PYFFTGL_COMMIT"):
        return os.environ["PYFFTGL_COMMIT"]
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, cwd=Path(__file__).parent, timeout=10)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def progress(items, desc):
    try:
        from tqdm import tqdm
        # No monitor thread: a second thread makes every GL call fence (backends/gl.py), and the
        # loops time what a single-threaded program gets.
        tqdm.monitor_interval = 0
        return tqdm(items, desc=desc, leave=False)
    except ImportError:
        return items


def loop_section(ours: dict, gpu_ms: float, torch: dict | None) -> dict:
    """A record's "loop": our loop (plan_loop) next to the plan's GPU time and torch's loop."""
    gpu_us = gpu_ms * 1e3
    out = dict(ours, gpu_us=gpu_us, vs_gpu=ours["us_per_call"] / gpu_us,
               torch_us_per_call=None, torch_calls=None, torch_out=None, vs_torch=None)
    if torch is not None:
        out.update(torch_us_per_call=torch["us_per_call"], torch_calls=torch["calls"],
                   torch_out=torch["out"], vs_torch=ours["us_per_call"] / torch["us_per_call"])
    return out


def run(cases: list[Case], backends=BACKENDS, reps: int = 5, cpu: bool = True,
        out_dir: Path | None = Path("bench/results"), echo=print, per_pass: bool = False,
        loop=(), loop_calls: int = 200) -> list[dict]:
    """Measure every case on every available backend; returns (and writes) the records.
    `per_pass`: also each pass's GPU time alone (pass_ms), summed over the plan's chunks.
    `loop`: names of cases also timed in a loop of at least `loop_calls` calls (timing.loop_us,
    against torch.fft's same loop), in the record's "loop" section."""
    from ..numpy_fft import plan as make_plan
    from .plot import loop_table
    records, date, commit = [], datetime.date.today().isoformat(), _commit()
    refs_cache: dict[str, dict] = {}
    torch_cache: dict[str, dict | None] = {}
    for name, device in available(backends, echo):
        bw = copy_gbps(device)
        floor = submission_floor_ms(device)
        echo(f"{name}: {device.info.name}, copy {bw:.0f} GB/s, "
             f"bare submit+wait {floor * 1e3:.1f} us")
        for case in progress(cases, name):
            # Collect earlier cases' plans first: with many dropped plans' objects still alive,
            # the same Vulkan dispatches have measured slower.
            plan_cache.clear()
            gc.collect()
            data = case_input(case)
            p = make_plan(case.shape, data.dtype, axes=case.axes, kind=case.kind, backend=name)
            gpu, host, sync = time_gpu(p, data, reps)
            passes = sum(len(dp.passes) for dp in p.device_plans)
            if case.name not in refs_cache:
                refs_cache[case.name] = references(case, data, reps, cpu)
            ref = refs_cache[case.name]
            complex_elems = data.size if data.dtype.kind == "c" else data.size // 2
            # each pass reads and writes every complex value once
            gbps = 2 * (16 if case.double else 8) * complex_elems * passes / (gpu * 1e-3) / 1e9
            rec = dict(case=case.name, group=case.group, shape=list(case.shape),
                       axes=list(case.axes), batch=case.batch, kind=case.kind, backend=name,
                       gpu_ms=gpu, host_ms=host, sync_ms=sync, floor_ms=floor,
                       passes=passes, gflops=5 * case.n * math.log2(max(case.n, 2)) * case.batch
                       / (gpu * 1e-3) / 1e9, gbps=gbps, pct_copy=100 * gbps / bw, ref=ref,
                       copy_gbps=bw, device=device.info.name, driver=device.info.driver,
                       api_version=device.info.api_version, date=date, commit=commit)
            if per_pass:
                rec["pass_ms"] = [sum(t) for t in zip(*(pass_ms(dp, reps=reps)
                                                        for dp in p.device_plans))]
            if case.name in loop:
                if case.name not in torch_cache:
                    torch_cache[case.name] = torch_loop(case, data, calls=loop_calls)
                rec["loop"] = loop_section(plan_loop(p, data, name, calls=loop_calls), gpu,
                                           torch_cache[case.name])
            del p
            records.append(rec)
            cu, lp = ref.get("cufft_ms"), rec.get("loop")
            echo(f"{name:6s} {case.name:22s} GPU {gpu:9.3f} ms  host {host * 1e3:7.1f} us "
                 f"(+wait {sync * 1e3:7.1f} us)  "
                 f"{gbps:7.0f} GB/s ({rec['pct_copy']:5.1f}% copy)"
                 + (f"  {gpu / cu:5.2f}x cuFFT" if cu else "")
                 + (f"  passes {' + '.join(f'{t:.4f}' for t in rec['pass_ms'])} ms"
                    if per_pass else "")
                 + (f"  loop {lp['us_per_call']:.1f} us/call ({lp['vs_gpu']:.2f}x GPU"
                    + (f", {lp['vs_torch']:.2f}x torch)" if lp["vs_torch"] else ")") if lp else ""))
    if any("loop" in r for r in records):
        echo(loop_table(records))
    if out_dir is not None and records:
        write(records, Path(out_dir), echo)
    return records


def write(records: list[dict], out_dir: Path, echo=print) -> Path:
    """Merge records into bench/results/<device-slug>.json (newer replace older of the same
    case and backend) and draw plots when matplotlib is there."""
    from .plot import plot
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{wisdom.device_slug(records[0]['device'])}.json"
    old = json.loads(path.read_text()) if path.exists() else []
    keep = {(r["case"], r["backend"]) for r in records}
    merged = [r for r in old if (r.get("case"), r.get("backend")) not in keep] + records
    path.write_text(json.dumps(merged, indent=1))
    echo(f"wrote {path}")
    try:
        plot(merged, path.with_suffix(".png"))
        echo(f"wrote {path.with_suffix('.png')}")
    except ImportError:
        echo("matplotlib not installed: no plot (pip install matplotlib)")
    return path
