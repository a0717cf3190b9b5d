"""`python -m pyfftgl bench --tune`: time every kernel shape the planner may take for a length,
check each against numpy, and keep the fastest in the device's wisdom file."""
from __future__ import annotations

import gc

import numpy as np

from .. import planner, wisdom
from ..backends import BACKENDS, available
from .sweep import progress
from . import timing
from .timing import random_fill

TUNE_SIZES = (64, 128, 256, 512, 1024, 2048, 4096, 1000, 1536, 2187, 2401, 3125)
# Lengths whose strided passes are tuned apart (wisdom keys "tiled:n"), each timed on the two
# passes of the four-step transform of length n * n where it splits n x n (see tune).
TUNE_TILED = tuple(planner.tiled_key(n) for n in (128, 256, 512, 1024, 2048))
# A tiled entry is kept only if it beats the shape the planner took before by 5%: it also steers
# the strided axes done in one pass (2D, 3D), whose wider tiles it was not timed on: a small
# win on the four-step passes has made those slower (docs/performance-log.md, "Benchmark method").
TILED_GAIN = 0.95


def tune(sizes=TUNE_SIZES + TUNE_TILED, backends=BACKENDS, elements: int = 1 << 24,
         reps: int = 3, echo=print, save: bool = True) -> dict:
    """Time every planner.shape_candidates() shape of length n on each backend, check it against
    numpy, and keep the fastest in the device's wisdom file. A size n is timed on a batched
    length-n C2C (contiguous lines); planner.tiled_key(n) on the strided passes of a batched
    length-n*n C2C split n x n (four-step), where the planner splits it so on this device, else
    on the two column passes of an fft2 with columns of n*n (n = 64 where shared memory holds
    4096 points, its 4096^2 at the default 2^24 elements; n = 1024 on 48 KB, where 2^20 splits
    512 x 2048)."""
    from dataclasses import replace
    found_all = {}
    rng = np.random.default_rng(0)
    for name, device in available(backends, echo):
        base = replace(device.info.limits, tuned=())
        found = {}
        for key in progress(sizes, f"tune {name}"):
            entry = _tune_key(device, name, key, base, elements, reps, rng, echo)
            if entry is not None:
                found[key] = entry
        if save and found:
            echo(f"wrote {wisdom.save(device.info.name, name, found)}")
        found_all[name] = found
    return found_all


class _Case:
    """What one wisdom key is timed on: a batched length-n (or n*n) C2C, or where a length-n*n
    line does not split n x n here (one pass, or the split of factors._narrow_strided) the
    columns of an fft2 (`square`)."""

    def __init__(self, key, base, elements: int):
        self.n, self.tiled = planner.key_length(key)
        self.length = self.n * self.n if self.tiled else self.n
        self.batch = max(1, elements // self.length)
        self.square = self.tiled and [p.n for p in planner.plan_fft(
            self.length, 1, False, "backward", base).passes] != [self.n, self.n]
        if self.square:  # batch: the fft2's columns, as many as `elements` makes (at least 16)
            self.batch = max(16, elements // self.length)
        self.check = 16 if self.square else 3  # lines of the check against numpy

    def plan(self, lines, lim):
        if self.square:
            return planner.plan_c2c((self.length, lines), (1, 0), False, "backward", lim)
        return planner.plan_fft(self.length, lines, False, "backward", lim)


def _runnable(device, name, key, case: _Case, base, rng, echo) -> list:
    """(candidate, its limits, spec, the passes timed) of each shape that fits this device as
    asked and matches numpy."""
    from dataclasses import replace
    from ..plans import TransformPlan
    xshape = (case.length, case.check) if case.square else (case.check, case.length)
    x = (rng.standard_normal(xshape) + 1j * rng.standard_normal(xshape)).astype(np.complex64)
    ref = (np.fft.fft2 if case.square else np.fft.fft)(x.astype(np.complex128))
    runnable = []
    for cand in planner.shape_candidates(case.n, base):
        lim = replace(base, tuned=(replace(cand, tiled=case.tiled),))
        spec = case.plan(case.batch, lim)
        timed = spec.passes[1:] if case.square else spec.passes
        if (len(timed) != (2 if case.tiled else 1) or any(
                p.n != case.n or _shape(p) != _cand_shape(cand) for p in timed)):
            continue  # does not fit this device as asked
        small = TransformPlan(case.plan(case.check, lim), device, lim, "backward")
        y = small.execute(x)
        if np.linalg.norm(y - ref) / np.linalg.norm(ref) > 1e-5:
            echo(f"  {name} {key}: {cand}: WRONG RESULT, skipped")
            continue
        runnable.append((cand, lim, spec, timed))
    return runnable


def _best_times(device, runnable, bufs, reps: int) -> dict:
    """Each runnable shape's best time over two rounds, the second in reverse order: a GPU back
    at its idle clock runs the same work several times slower for a while, a stretch a short
    warm-up and best_of's few repeats can fall into, and one slow timing must not cost the best
    shape its place (docs/performance-log.md, "Benchmark method")."""
    from ..plans import TransformPlan
    best: dict = {}
    for order in (runnable, runnable[::-1]):
        for cand, lim, spec, timed in order:
            plan = TransformPlan(spec, device, lim, "backward", buffers=bufs)
            gc.collect()  # dropped plans' Vulkan objects gone before timing (see sweep.run)
            t = timing.timed(plan, reps=reps, warm=0.1, fill=False,  # those passes alone
                             dispatches=[d for ds in plan.dispatches()[-len(timed):]
                                         for d in ds])
            best[cand] = min(t, best.get(cand, t))
            del plan
    return best


def _tune_key(device, name, key, base, elements: int, reps: int, rng, echo) -> dict | None:
    """The wisdom entry of one key on one device: its fastest shape, or None (nothing runs, or
    a tiled shape that does not beat the planner's by TILED_GAIN)."""
    case = _Case(key, base, elements)
    bufs = {b: device.buffer(case.batch * case.length * planner.COMPLEX64_BYTES,
                             device_only=True) for b in ("in", "out")}
    random_fill(device, bufs["in"])
    runnable = _runnable(device, name, key, case, base, rng, echo)
    if not runnable:
        return None
    best = _best_times(device, runnable, bufs, reps)
    timings = [(best[c], c, timed[0].lines) for c, _, _, timed in runnable]
    timings.sort(key=lambda r: r[0])
    t, cand, lines = timings[0]
    # the shape the planner takes now, with the wisdom the device started with
    now = case.plan(case.batch, device.info.limits).passes[1 if case.square else 0]
    dt = next((r[0] for r in timings if _cand_shape(r[1]) == _shape(now)), None)
    echo(f"{name:6s} {wisdom.file_key(key):>10s}: best {t:.4f} ms {list(cand.radices)} "
         f"threads {cand.threads} lines {lines} pad {cand.pad}; now "
         f"{dt if dt is None else round(dt, 4)}"
         f" ms; {len(timings)} shapes; worst {timings[-1][0]:.4f} ms")
    if case.tiled and dt is not None and t > TILED_GAIN * dt:
        return None  # see TILED_GAIN
    return {"radices": list(cand.radices), "threads": cand.threads,
            "lines": cand.lines, "pad": cand.pad, "gpu_ms": round(t, 5),
            "elements": case.batch * case.length,
            "ranking": [[round(r[0], 5), list(r[1].radices), r[1].threads, r[1].pad]
                        for r in timings[:5]]}


def _shape(p) -> tuple:
    """(radices, threads per line, padded) of a pass, as a tuned entry names them."""
    return p.radices, p.threads, p.sh_pad


def _cand_shape(cand) -> tuple:
    """The same of a shape_candidates() record (planner.TunedShape)."""
    return cand.radices, cand.threads, cand.pad
