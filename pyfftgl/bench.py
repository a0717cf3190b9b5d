"""python -m pyfftgl bench: GPU and host time of pyfftgl against the CPU libraries and, where
importable, cuFFT (torch.fft, cupy.fft) and VkFFT (pyvkfft), in one run.

GPU time comes from Vulkan timestamps / GL timer queries around a plan's dispatches (device-resident
data, no transfers); host time is the wall time of one device-resident call, submission and wait
included. GFLOP/s counts 5 N log2 N per transform; GB/s counts 16 bytes per complex element per
pass of the plan; "% copy" compares that with the device's copy bandwidth measured first with the
same API. Records go to bench/results/<device-slug>.json (one file per device, merged by case),
plots next to it when matplotlib is installed.
"""
from __future__ import annotations

import datetime
import gc
import json
import math
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import planner, shaders, wisdom
from .backends import BACKENDS, available
from .backends.base import Dispatch
from .plans import plan_cache


@dataclass(frozen=True)
class Case:
    kind: str  # a numpy.fft function name
    shape: tuple[int, ...]  # input shape
    axes: tuple[int, ...]  # transformed axes
    group: str  # "1d", "2d", "3d", "real", "mixed", "bluestein"
    double: bool = False  # float64/complex128 data (computed in double precision)

    @property
    def name(self) -> str:
        return f"{self.kind} {'x'.join(map(str, self.shape))}" + (" f64" if self.double else "")

    @property
    def n(self) -> int:
        """Points per transform (the transformed axes' lengths, real length for r2c)."""
        return math.prod(self.shape[a] for a in self.axes)

    @property
    def batch(self) -> int:
        return math.prod(self.shape) // self.n


def batched_case(n: int, elements: int, group: str = "1d") -> Case:
    """Length-n C2C transforms over `elements` complex values (at least one line)."""
    return Case("fft", (max(1, elements // n), n), (1,), group)


def default_cases(elements: int, quick: bool) -> list[Case]:
    """The sweep: batched 1D over `elements` complex values, 2D, 3D, real, mixed, Bluestein."""
    def batched(kind, n, group):
        return batched_case(n, elements, group)
    pow2 = [256, 4096] if quick else [64, 256, 1024, 4096, 2**16, 2**20, 2**22]
    mixed = [1000] if quick else [1000, 1536, 2187, 2401, 3125]
    blue = [4099] if quick else [4099, 65537]
    sides = [256] if quick else [1024, 2048, 4096]
    cases = [batched("fft", n, "1d") for n in pow2]
    cases += [batched("fft", n, "mixed") for n in mixed]
    cases += [batched("fft", n, "bluestein") for n in blue]
    cases += [Case("fft2", (s, s), (0, 1), "2d") for s in sides]
    cases += [Case("rfft2", (s, s), (0, 1), "real") for s in sides]
    cases += [Case("irfft2", (s, s // 2 + 1), (0, 1), "real") for s in sides[:1]]
    cases += [Case("fftn", (c, c, c), (0, 1, 2), "3d") for c in ([32] if quick else [128, 256])]
    return cases


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


def copy_gbps(device, nbytes: int = 1 << 27, reps: int = 5) -> float:
    """Device copy bandwidth (bytes read + written per second) through this API's own kernel."""
    nbytes = min(nbytes, device.info.limits.max_buffer_bytes) // 16 * 16
    src, dst = device.buffer(nbytes), device.buffer(nbytes)
    random_fill(device, src)
    sub = _copy_submission(device, src, dst, nbytes // 16)
    _warm(device, sub)
    best = best_of(lambda: sub.run(timed=True), reps)
    return 2 * nbytes / (best * 1e-9) / 1e9


def _copy_submission(device, src, dst, count: int):
    """copy.comp moving `count` vec4s from src to dst, recorded as one submission."""
    program = shaders.get_program(device, "copy.comp", {}, planner.PUSH_NAMES)
    return device.record([Dispatch(program, (gx, gy, 1),
                                   np.array([count, base, 0, 0, 0, 0], np.uint32), (src, dst))
                          for base, gx, gy in planner.split_groups(
                              max(1, -(-count // 256)), device.info.limits.max_group_count)])


def _time_gpu(plan, data, reps: int) -> tuple[float, float, float]:
    """(best GPU ms over the device plans, median host ms of one device-resident call, median
    ms of a call plus waiting for its result). Calls reuse their output (`out=`), as a render
    loop would; the first call records the submission and is not counted."""
    from .device_array import asarray

    def gpu_ms(**kw):  # over the device plans
        return sum(_timed(dp, reps=reps, **kw) for dp in plan.device_plans)
    gpu = gpu_ms()
    d = asarray(data, backend=plan.backend)
    out = plan(d)
    device = d.device
    submit, sync = [], []
    for _ in range(max(reps, 20)):
        device.finish()
        t0 = time.perf_counter()
        plan(d, out=out)
        t1 = time.perf_counter()
        device.finish()
        t2 = time.perf_counter()
        submit.append((t1 - t0) * 1e3)
        sync.append((t2 - t0) * 1e3)
    # Once more, the GPU now busy for a while: the first timing can fall in a stretch at idle
    # clocks (see tune) that the warm-up did not cover.
    gpu = min(gpu, gpu_ms(warm=0.05, fill=False))
    return gpu, float(np.median(submit)), float(np.median(sync))


def random_fill(device, buf, seed: int = 0) -> None:
    """Fill a device buffer with random complex64 values (normal, unit variance)."""
    n = buf.nbytes // 8
    rng = np.random.default_rng(seed)
    data = rng.standard_normal(2 * n, dtype=np.float32)
    device.write(buf, data)


def _timed(device_plan, repeat: int = 10, reps: int = 3, warm: float = 0.3,
           fill: bool = True, dispatches: list | None = None) -> float:
    """Best GPU ms of a plan's dispatches alone on random input, recorded `repeat` times back to
    back in one submission: the GPU is kept busy for milliseconds, so its clocks are up and one
    dispatch's launch gap is not the measurement. Random data, not zeros: a GPU may move
    compressible (zero) memory faster, which would flatter the numbers. `dispatches`: only
    these of the plan's."""
    if fill:
        random_fill(device_plan.device, device_plan._buffers["in"])
    sub = device_plan.device.record(list(dispatches or device_plan._dispatches) * repeat)
    _warm(device_plan.device, sub, warm)
    return best_of(lambda: sub.run(timed=True), reps) / 1e6 / repeat


def pass_ms(device_plan, repeat: int = 10, reps: int = 3, warm: float = 0.1) -> list[float]:
    """Best GPU ms of each pass of a plan alone (its dispatches recorded `repeat` times back to
    back, as _timed does for the whole plan), on the plan's buffers as the plan left them. A
    pass alone may find its input in the L2 cache where it would not in the plan, so the sum
    can differ from the plan's time; it shows which pass the time goes to."""
    out = []
    for dispatches in device_plan.pass_dispatches:
        sub = device_plan.device.record(dispatches * repeat)
        _warm(device_plan.device, sub, warm)
        out.append(best_of(lambda: sub.run(timed=True), reps) / 1e6 / repeat)
    return out


def best_of(measure, reps: int, limit: int = 40) -> float:
    """The least of measure()'s results, taken until `reps` in a row fail to beat the best by 1%
    (at most `limit`). A fixed count was not enough on the H200: the same submission ran 2-3x
    slower for a while after host work, longer than a fixed warm-up covered."""
    best, since = measure(), 0
    for _ in range(limit - 1):
        if since >= reps:
            break
        t = measure()
        best, since = (t, 0) if t < 0.99 * best else (min(best, t), since + 1)
    return best


def _warm(device, sub, seconds: float = 0.3) -> None:
    """Keep the GPU busy with `sub` for a while first: an idle GPU lowers its core and memory
    clocks, and a short burst after seconds of host work (compiling, filling buffers) was
    measured 2-4x slower than the same work on a busy GPU (H200). On the H100 the core clock
    sat at 345-480 MHz for 0.25-0.3 s after work began before going to 1980 (nvidia-smi every
    50 ms), the same submission 2.4-2.7x slower meanwhile; callers that must not be fooled
    time twice (tune, _time_gpu)."""
    t0 = time.perf_counter()
    while True:
        sub.run()
        device.finish()  # GL would queue seconds of work otherwise
        if time.perf_counter() - t0 >= seconds:
            return


def submission_floor_ms(device) -> float:
    """The driver's own round trip, measured apart from pyfftgl: on Vulkan an empty command
    buffer submitted and waited for on a separate VkDevice (plain ctypes); on GL, glFinish after
    a 1-workgroup dispatch of the copy kernel. Median ms."""
    if device.info.api == "vulkan":
        from .backends import _vkfloor, _vkinfo
        names = [d["device_name"] for d in _vkinfo.physical_devices()]
        return _vkfloor.fence_floor_us(names.index(device.info.name))["wait"] / 1e3
    buf = device.buffer(16)
    sub = _copy_submission(device, buf, buf, 0)  # one workgroup that copies nothing
    times = []
    for _ in range(200):
        t0 = time.perf_counter()
        sub.run()
        device.finish()
        times.append(time.perf_counter() - t0)
    return float(np.median(times)) * 1e3


def _input(case: Case) -> np.ndarray:
    rng = np.random.default_rng(0)
    real, cplx = (np.float64, np.complex128) if case.double else (np.float32, np.complex64)
    if case.kind in ("rfft", "rfft2", "rfftn"):
        return rng.standard_normal(case.shape).astype(real)
    return (rng.standard_normal(case.shape) + 1j * rng.standard_normal(case.shape)).astype(cplx)


def _wall_ms(fn, reps: int) -> float:
    fn()
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        best = min(best, (time.perf_counter() - t0) * 1e3)
    return best


def references(case: Case, data: np.ndarray, reps: int, cpu: bool) -> dict:
    """Times of the same transform in other libraries, where importable (None otherwise)."""
    out: dict[str, float | None] = {}
    kw = {"axes": case.axes} if case.kind.endswith(("2", "n")) else {"axis": case.axes[0]}
    if cpu:
        out["numpy_ms"] = _wall_ms(lambda: getattr(np.fft, case.kind)(data, **kw), max(1, reps // 3))
        try:
            import scipy.fft
            out["scipy_ms"] = _wall_ms(lambda: getattr(scipy.fft, case.kind)(data, workers=-1, **kw),
                                       max(1, reps // 3))
        except ImportError:
            out["scipy_ms"] = None
    try:
        import torch
        if torch.cuda.is_available():
            t = torch.from_numpy(data).cuda()
            fn = getattr(torch.fft, case.kind)
            tkw = {"dim": case.axes} if case.kind.endswith(("2", "n")) else {"dim": case.axes[0]}
            out["cufft_ms"], out["cufft_timing"] = _cuda_ms(torch, lambda: fn(t, **tkw), reps)
    except ImportError:
        pass
    try:
        import cupy
        c = cupy.asarray(data)
        fn = getattr(cupy.fft, case.kind)
        out["cupy_ms"] = _cupy_ms(cupy, lambda: fn(c, **kw), reps)
    except Exception:  # no cupy, or no CUDA device for it
        pass
    try:
        import pyvkfft.fft as vkfft  # noqa: F401
        out["vkfft_ms"] = None  # importable; timing it needs its own context (not yet wired)
    except Exception:
        pass
    return out


def _cuda_ms(torch, fn, reps: int) -> tuple[float, str]:
    """(best GPU ms of one call, how it was timed). Ten calls captured in a CUDA graph and
    replayed between two events: the GPU's time alone, as the Vulkan numbers are (a command
    buffer recorded once). Called one by one from Python instead, torch's ~8 us of host work per
    launch left the H200 idle between small kernels: fft2 1024^2 measured 14-22 us called so,
    12.7 us from a graph (its two kernels: 6.7 + 5.3 us). Where capture fails, the calls are
    timed as issued ("eager")."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):  # warm-up (cuFFT plans made) off the default stream
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    try:
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(10):
                fn()
        run, how = graph.replay, "graph"
    except RuntimeError:
        def run():
            for _ in range(10):
                fn()
        how = "eager"
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    best = float("inf")
    for _ in range(max(reps, 3)):
        start.record()
        run()
        stop.record()
        torch.cuda.synchronize()
        best = min(best, start.elapsed_time(stop) / 10)
    return best, how


def _cupy_ms(cupy, fn, reps: int) -> float:
    for _ in range(3):
        fn()
    best = float("inf")
    for _ in range(reps):
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        for _ in range(10):
            fn()
        stop.record()
        stop.synchronize()
        best = min(best, cupy.cuda.get_elapsed_time(start, stop) / 10)
    return best


def _progress(items, desc):
    try:
        from tqdm import tqdm
        return tqdm(items, desc=desc, leave=False)
    except ImportError:
        return items


def run(cases: list[Case], backends=BACKENDS, reps: int = 5, cpu: bool = True,
        out_dir: Path | None = Path("bench/results"), echo=print, per_pass: bool = False
        ) -> list[dict]:
    """Measure every case on every available backend; returns (and writes) the records.
    `per_pass`: also each pass's GPU time alone (pass_ms), summed over the plan's chunks."""
    from ._api import plan as make_plan
    records, date, commit = [], datetime.date.today().isoformat(), _commit()
    refs_cache: dict[str, dict] = {}
    for name, device in available(backends, echo):
        bw = copy_gbps(device)
        floor = submission_floor_ms(device)
        echo(f"{name}: {device.info.name}, copy {bw:.0f} GB/s, bare submit+wait {floor * 1e3:.1f} us")
        for case in _progress(cases, name):
            # Collect earlier cases' plans first: with many dropped plans' objects still alive,
            # the same Vulkan dispatches were measured up to 2x slower on the H200.
            plan_cache.clear()
            gc.collect()
            data = _input(case)
            p = make_plan(case.shape, data.dtype, axes=case.axes, kind=case.kind, backend=device)
            gpu, host, sync = _time_gpu(p, data, reps)
            passes = sum(len(dp.passes) for dp in p.device_plans)
            if case.name not in refs_cache:
                refs_cache[case.name] = references(case, data, reps, cpu)
            ref = refs_cache[case.name]
            complex_elems = data.size if data.dtype.kind == "c" else data.size // 2
            # each pass reads and writes every complex value once
            gbps = 2 * (16 if case.double else 8) * complex_elems * passes / (gpu * 1e-3) / 1e9
            rec = dict(case=case.name, group=case.group, shape=list(case.shape), axes=list(case.axes),
                       batch=case.batch, kind=case.kind, backend=name, gpu_ms=gpu, host_ms=host,
                       sync_ms=sync, floor_ms=floor,
                       passes=passes, gflops=5 * case.n * math.log2(max(case.n, 2)) * case.batch
                       / (gpu * 1e-3) / 1e9, gbps=gbps, pct_copy=100 * gbps / bw, ref=ref,
                       copy_gbps=bw, device=device.info.name, driver=device.info.driver,
                       api_version=device.info.api_version, date=date, commit=commit)
            if per_pass:
                rec["pass_ms"] = [sum(t) for t in zip(*(pass_ms(dp, reps=reps)
                                                        for dp in p.device_plans))]
            records.append(rec)
            cu = ref.get("cufft_ms")
            echo(f"{name:6s} {case.name:22s} GPU {gpu:9.3f} ms  host {host * 1e3:7.1f} us "
                 f"(+wait {sync * 1e3:7.1f} us)  "
                 f"{gbps:7.0f} GB/s ({rec['pct_copy']:5.1f}% copy)"
                 + (f"  {gpu / cu:5.2f}x cuFFT" if cu else "")
                 + (f"  passes {' + '.join(f'{t:.4f}' for t in rec['pass_ms'])} ms" if per_pass else ""))
    if out_dir is not None and records:
        write(records, Path(out_dir), echo)
    return records


def write(records: list[dict], out_dir: Path, echo=print) -> Path:
    """Merge records into bench/results/<device-slug>.json (newer replace older of the same
    case and backend) and draw plots when matplotlib is there."""
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


def plot(records: list[dict], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(15, 5), gridspec_kw={"width_ratios": [1, 1.2]})
    _plot_ratios(ax2, records)
    ones = [r for r in records if r.get("group") in ("1d", "mixed", "bluestein")]
    style = {"1d": "o-", "mixed": "s", "bluestein": "x"}

    def series(rows, value):
        """Powers of two as a line, mixed-radix and Bluestein lengths as separate markers."""
        for group, fmt in style.items():
            pts = sorted((r["shape"][-1], value(r)) for r in rows if r["group"] == group)
            if pts:
                yield group, fmt, pts
    for k, backend in enumerate(sorted({r["backend"] for r in ones})):
        rows = [r for r in ones if r["backend"] == backend]
        for group, fmt, pts in series(rows, lambda r: r["gbps"]):
            ax.plot(*zip(*pts), fmt, color=f"C{k}",
                    label=f"pyfftgl {backend}" + ("" if group == "1d" else f" ({group})"))
    first = sorted({r["backend"] for r in ones})[:1]
    ref_rows = [r for r in ones if r["backend"] in first and r["ref"].get("cufft_ms")]
    for group, fmt, pts in series(ref_rows, lambda r: 16 * r["shape"][0] * r["shape"][-1]
                                  / (r["ref"]["cufft_ms"] * 1e-3) / 1e9):
        ax.plot(*zip(*pts), fmt.replace("-", "--"), color="k",
                label="cuFFT (one pass)" + ("" if group == "1d" else f" ({group})"))
    if ones:
        ax.axhline(ones[0]["copy_gbps"], color="grey", lw=0.8, label="copy bandwidth")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("N (batched 1D C2C)")
    ax.set_ylabel("GB/s (16 B per element per pass)")
    ax.set_title(ones[0]["device"] if ones else "pyfftgl")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


TUNE_SIZES = (64, 128, 256, 512, 1024, 2048, 4096, 1000, 1536, 2187, 2401, 3125)
# Lengths whose strided passes are tuned apart (wisdom keys "tiled:n"), each timed on the two
# passes of the four-step transform of length n * n where it splits n x n (see tune).
TUNE_TILED = tuple(planner.tiled_key(n) for n in (128, 256, 512, 1024, 2048))
# A tiled entry is kept only if it beats the shape the planner took before by 5%: it also steers
# the strided axes done in one pass (2D, 3D), whose wider tiles it was not timed on. H200 GL:
# tiled:128 and tiled:256 won their four-step passes by 3-4% padded, and made fftn 128^3 and
# 256^3 5-6% slower.
TILED_GAIN = 0.95


def tune(sizes=TUNE_SIZES + TUNE_TILED, backends=BACKENDS, elements: int = 1 << 24,
         reps: int = 3, echo=print, save: bool = True) -> dict:
    """Time every planner.shape_candidates() shape of length n on each backend, check it against
    numpy, and keep the fastest in the device's wisdom file. A size n is timed on a batched
    length-n C2C (contiguous lines); planner.tiled_key(n) on the strided passes of a batched
    length-n*n C2C split n x n (four-step), where the planner splits it so on this device, else
    on the two column passes of an fft2 with columns of n*n (n = 64 on the H200, where 4096 is
    one pass; its 4096^2 at the default 2^24 elements; n = 1024 on 48 KB, where 2^20 splits
    512 x 2048)."""
    from dataclasses import replace
    from .plans import TransformPlan
    found_all = {}
    rng = np.random.default_rng(0)
    for name, device in available(backends, echo):
        base = replace(device.info.limits, tuned=())
        found = {}
        for key in _progress(sizes, f"tune {name}"):
            n, tiled = planner.key_length(key)
            length = n * n if tiled else n
            batch = max(1, elements // length)
            # the columns of an fft2 where a length-n*n line does not split n x n here (one
            # pass, or the split of planner._narrow_strided)
            square = tiled and [p.n for p in planner.plan_fft(
                length, 1, False, "backward", base).passes] != [n, n]
            if square:  # batch: the fft2's columns, as many as `elements` makes (at least 16)
                batch = max(16, elements // length)
            check = 16 if square else 3  # lines of the check against numpy

            def plan_of(lines, lim):
                if square:
                    return planner.plan_c2c((length, lines), (1, 0), False, "backward", lim)
                return planner.plan_fft(length, lines, False, "backward", lim)
            bufs = {b: device.buffer(batch * length * planner.COMPLEX64_BYTES, device_only=True)
                    for b in ("in", "out")}
            random_fill(device, bufs["in"])
            xshape = (length, check) if square else (check, length)
            x = (rng.standard_normal(xshape) + 1j * rng.standard_normal(xshape)).astype(np.complex64)
            ref = (np.fft.fft2 if square else np.fft.fft)(x.astype(np.complex128))
            runnable = []  # (candidate, its limits, spec, the passes timed)
            for cand in planner.shape_candidates(n, base):
                lim = replace(base, tuned=((key,) + cand,))
                spec = plan_of(batch, lim)
                timed = spec.passes[1:] if square else spec.passes
                if (len(timed) != (2 if tiled else 1) or any(
                        p.n != n or _shape(p) != _cand_shape(cand) for p in timed)):
                    continue  # does not fit this device as asked
                small = TransformPlan(plan_of(check, lim), device, lim, "backward")
                y = small.execute(x)
                if np.linalg.norm(y - ref) / np.linalg.norm(ref) > 1e-5:
                    echo(f"  {name} {key}: {cand}: WRONG RESULT, skipped")
                    continue
                runnable.append((cand, lim, spec, timed))
            if not runnable:
                continue
            # Two rounds, the second in reverse order, each shape's best kept: a GPU back at
            # its idle clock runs the same work 2.5x slower for up to 0.3 s (H100: 345 MHz
            # until nvidia-smi showed 1980), a stretch a short warm-up and best_of's few
            # repeats can fall into. In one round the H100's shipped tiled:2048 shape read
            # 0.656 ms and lost to one that made 2^22 12% slower (1044 -> 1168 us).
            best: dict = {}
            for order in (runnable, runnable[::-1]):
                for cand, lim, spec, timed in order:
                    plan = TransformPlan(spec, device, lim, "backward", buffers=bufs)
                    gc.collect()  # dropped plans' Vulkan objects gone before timing (see run())
                    t = _timed(plan, reps=reps, warm=0.1, fill=False,  # the timed passes alone
                               dispatches=[d for ds in plan.pass_dispatches[-len(timed):]
                                           for d in ds])
                    best[cand] = min(t, best.get(cand, t))
                    del plan
            timings = [(best[c], c, timed[0].lines) for c, _, _, timed in runnable]
            timings.sort(key=lambda r: r[0])
            t, cand, lines = timings[0]
            # the shape the planner takes now, with the wisdom the device started with
            now = plan_of(batch, device.info.limits).passes[1 if square else 0]
            dt = next((r[0] for r in timings if _cand_shape(r[1]) == _shape(now)), None)
            echo(f"{name:6s} {wisdom.file_key(key):>10s}: best {t:.4f} ms {list(cand[0])} threads "
                 f"{cand[1]} lines {lines} pad {cand[3]}; now {dt if dt is None else round(dt, 4)}"
                 f" ms; {len(timings)} shapes; worst {timings[-1][0]:.4f} ms")
            if tiled and dt is not None and t > TILED_GAIN * dt:
                continue  # see TILED_GAIN
            found[key] = {"radices": list(cand[0]), "threads": cand[1], "lines": cand[2],
                          "pad": cand[3], "gpu_ms": round(t, 5), "elements": batch * length,
                          "ranking": [[round(r[0], 5), list(r[1][0]), r[1][1], r[1][3]]
                                      for r in timings[:5]]}
        if save and found:
            echo(f"wrote {wisdom.save(device.info.name, name, found)}")
        found_all[name] = found
    return found_all


def _shape(p) -> tuple:
    """(radices, threads per line, padded) of a pass, as a tuned entry names them."""
    return p.radices, p.threads, p.sh_pad


def _cand_shape(cand) -> tuple:
    """The same of a shape_candidates() tuple (radices, threads, lines, pad)."""
    return cand[0], cand[1], cand[3]


def _plot_ratios(ax, records: list[dict]) -> None:
    """Every case's GPU time over cuFFT's (torch.fft), one bar per backend; 1.0 = cuFFT."""
    cases = [r["case"] for r in records if r["backend"] == "vulkan" and r["ref"].get("cufft_ms")]
    backends = sorted({r["backend"] for r in records})
    width = 0.8 / max(1, len(backends))
    for k, backend in enumerate(backends):
        by_case = {r["case"]: r for r in records if r["backend"] == backend}
        ys = [by_case[c]["gpu_ms"] / by_case[c]["ref"]["cufft_ms"] if c in by_case else 0
              for c in cases]
        ax.bar([i + k * width for i in range(len(cases))], ys, width, label=f"pyfftgl {backend}",
               color=f"C{k}")
    ax.axhline(1.0, color="k", lw=0.8, label="cuFFT")
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(cases))])
    ax.set_xticklabels(cases, rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("GPU time / cuFFT GPU time")
    ax.set_title("every case against cuFFT (lower is better)")
    ax.legend(fontsize=7)


def table(records: list[dict]) -> str:
    """A markdown table of the records: GPU times per backend, cuFFT, ratios, host time."""
    rows = ["| case | group | Vulkan GPU ms | GL GPU ms | cuFFT ms | Vulkan / cuFFT | GL / Vulkan "
            "| Vulkan % copy | host us per call, Vulkan / GL |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    by = {(r["case"], r["backend"]): r for r in records}
    for case in dict.fromkeys(r["case"] for r in records):
        vk, gl = by.get((case, "vulkan")), by.get((case, "gl"))
        first = vk or gl
        cu = first["ref"].get("cufft_ms")

        def f(x, fmt="{:.3f}"):
            return "-" if x is None else fmt.format(x)
        rows.append(
            f"| {case} | {first['group']} | {f(vk and vk['gpu_ms'])} | {f(gl and gl['gpu_ms'])} "
            f"| {f(cu)} | {f(vk and cu and vk['gpu_ms'] / cu, '{:.2f}x')} "
            f"| {f(vk and gl and gl['gpu_ms'] / vk['gpu_ms'], '{:.2f}x')} "
            f"| {f(vk and vk['pct_copy'], '{:.0f}%')} "
            f"| {f(vk and vk['host_ms'] * 1e3, '{:.0f}')} / {f(gl and gl['host_ms'] * 1e3, '{:.0f}')} |")
    return "\n".join(rows)
