"""How pyfftgl is timed: GPU time of a plan's dispatches, host time of one call, wall time per
call of a loop of calls, the device's copy bandwidth and the driver's submission floor."""
from __future__ import annotations

import math
import time

import numpy as np

from .. import planner, kernels
from ..backends.base import Dispatch


def random_fill(device, buf, seed: int = 0) -> None:
    """Fill a device buffer with random complex64 values (normal, unit variance)."""
    n = buf.nbytes // 8
    rng = np.random.default_rng(seed)
    data = rng.standard_normal(2 * n, dtype=np.float32)
    device.write(buf, data)


def best_of(measure, reps: int, limit: int = 40) -> float:
    """The least of measure()'s results, taken until `reps` in a row fail to beat the best by 1%
    (at most `limit`): a fixed count was not enough where the same submission ran several times
    slower for a while after host work, longer than a fixed warm-up covered."""
    best, since = measure(), 0
    for _ in range(limit - 1):
        if since >= reps:
            break
        t = measure()
        best, since = (t, 0) if t < 0.99 * best else (min(best, t), since + 1)
    return best


def warm_up(call, finish, seconds: float = 0.3) -> None:
    """Keep the GPU busy with call() for a while first: an idle GPU lowers its core and memory
    clocks and raises them only some time after work begins, so a short burst after host work
    (compiling, filling buffers) runs slower than the same work on a busy GPU; callers that
    must not be fooled time twice (tune, time_gpu)."""
    t0 = time.perf_counter()
    while True:
        call()
        finish()  # GL would queue seconds of work otherwise
        if time.perf_counter() - t0 >= seconds:
            return


def _warm(device, sub, seconds: float = 0.3) -> None:
    warm_up(sub.run, device.finish, seconds)


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
    program = kernels.get_program(device, "copy.comp", {}, planner.PUSH_NAMES)
    # A workgroup reads and writes 256 vec4s: within the planner's budget of one dispatch too.
    return device.record([Dispatch(program, (gx, gy, 1),
                                   np.array([count, base, 0, 0, 0, 0], np.uint32), (src, dst))
                          for base, gx, gy in planner.split_groups(
                              max(1, -(-count // 256)), device.info.limits.max_group_count,
                              planner.groups_per_dispatch(256 * 2 * 16))])


def timed(device_plan, repeat: int = 10, reps: int = 3, warm: float = 0.3,
          fill: bool = True, dispatches: list | None = None) -> float:
    """Best GPU ms of a plan's dispatches alone on random input, recorded `repeat` times back to
    back in one submission: the GPU is kept busy for milliseconds, so its clocks are up and one
    dispatch's launch gap is not the measurement. Random data, not zeros: a GPU may move
    compressible (zero) memory faster, which would flatter the numbers. `dispatches`: only
    these of the plan's."""
    if fill:
        random_fill(device_plan.device, device_plan.buffer("in"))
    sub = device_plan.device.record(list(dispatches or device_plan.flat_dispatches()) * repeat)
    _warm(device_plan.device, sub, warm)
    return best_of(lambda: sub.run(timed=True), reps) / 1e6 / repeat


def pass_ms(device_plan, repeat: int = 10, reps: int = 3, warm: float = 0.1) -> list[float]:
    """Best GPU ms of each pass of a plan alone (its dispatches recorded `repeat` times back to
    back, as timed() does for the whole plan), on the plan's buffers as the plan left them. A
    pass alone may find its input in the L2 cache where it would not in the plan, so the sum
    can differ from the plan's time; it shows which pass the time goes to."""
    out = []
    for dispatches in device_plan.dispatches():
        sub = device_plan.device.record(dispatches * repeat)
        _warm(device_plan.device, sub, warm)
        out.append(best_of(lambda: sub.run(timed=True), reps) / 1e6 / repeat)
    return out


def time_gpu(plan, data, reps: int) -> tuple[float, float, float]:
    """(best GPU ms over the device plans, median host ms of one device-resident call, median
    ms of a call plus waiting for its result). Calls reuse their output (`out=`), as a render
    loop would; the first call records the submission and is not counted."""
    from ..device_array import asarray

    def gpu_ms(**kw):  # over the device plans
        return sum(timed(dp, reps=reps, **kw) for dp in plan.device_plans)
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
    # clocks (see _warm) that the warm-up did not cover.
    gpu = min(gpu, gpu_ms(warm=0.05, fill=False))
    return gpu, float(np.median(submit)), float(np.median(sync))


def loop_us(call, finish, calls: int = 200, min_s: float = 0.05, warm_s: float = 0.3,
            reps: int = 3) -> dict:
    """Wall-clock us per call of `calls` back-to-back call()s ended by one finish(), best of
    repeats (best_of, `reps`). The count grows until a loop lasts `min_s`, so that the one
    finish and the timer are small beside it; a warm-up of at least `warm_s` (calls with a
    finish every `calls`) brings the clocks up first (see _warm). Returns {"us_per_call",
    "calls" (per loop), "repeats" (loops timed), "warmup" (calls before them)}."""
    warmup, t0 = 0, time.perf_counter()
    while warmup == 0 or time.perf_counter() - t0 < warm_s:
        t = time.perf_counter()
        for _ in range(calls):
            call()
        finish()
        warmup += calls
    per_call = (time.perf_counter() - t) / calls  # the last round's: the first call records
    calls = max(calls, math.ceil(min_s / max(per_call, 1e-9)))
    repeats = 0

    def once() -> float:
        nonlocal repeats
        repeats += 1
        t = time.perf_counter()
        for _ in range(calls):
            call()
        finish()
        return (time.perf_counter() - t) / calls * 1e6
    us = best_of(once, reps, limit=max(reps + 1, 10))
    return {"us_per_call": us, "calls": calls, "repeats": repeats, "warmup": warmup}


def alone_us(call, finish, calls: int = 500, warm: int = 100) -> dict:
    """Host µs of one call() with the device idle before it (finish(), then the call alone,
    timed without a finish): {"median", "p10"} of `calls` after `warm` untimed ones."""
    times = []
    for i in range(warm + calls):
        finish()
        t0 = time.perf_counter()
        call()
        t1 = time.perf_counter()
        if i >= warm:
            times.append((t1 - t0) * 1e6)
    finish()
    return {"median": float(np.median(times)), "p10": float(np.percentile(times, 10))}


def plan_loop(plan, data, backend: str, **kw) -> dict:
    """loop_us of `plan(d, out=o)` on device arrays, ended by the device's finish(): only the
    public API (pyfftgl.asarray, a Plan, get_device), as a user's loop would run."""
    import pyfftgl
    d = pyfftgl.asarray(data, backend=backend)
    o = pyfftgl.asarray(np.zeros(plan.out_shape, plan.out_dtype), backend=backend)
    return loop_us(lambda: plan(d, out=o), pyfftgl.get_device(backend).finish, **kw)


def submission_floor_ms(device) -> float:
    """The driver's own round trip, measured apart from pyfftgl: on Vulkan an empty command
    buffer submitted and waited for on a separate VkDevice (plain ctypes); on GL, glFinish after
    a 1-workgroup dispatch of the copy kernel. Median ms."""
    if device.info.api == "vulkan":
        from ..backends import vkinfo
        from . import vkfloor
        names = [d["device_name"] for d in vkinfo.physical_devices()]
        return vkfloor.fence_floor_us(names.index(device.info.name))["wait"] / 1e3
    buf = device.buffer(16)
    sub = _copy_submission(device, buf, buf, 0)  # one workgroup that copies nothing
    times = []
    for _ in range(200):
        t0 = time.perf_counter()
        sub.run()
        device.finish()
        times.append(time.perf_counter() - t0)
    return float(np.median(times)) * 1e3
