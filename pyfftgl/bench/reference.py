"""The same transforms in other libraries, where importable: numpy and scipy on the CPU, cuFFT
through torch.fft and cupy.fft. Each is imported here only when a case is timed."""
from __future__ import annotations

import time

import numpy as np

from .cases import Case
from .timing import loop_us


def _wall_ms(fn, reps: int) -> float:
    fn()
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        best = min(best, (time.perf_counter() - t0) * 1e3)
    return best


def _numpy_kw(case: Case) -> dict:
    return {"axes": case.axes} if case.kind.endswith(("2", "n")) else {"axis": case.axes[0]}


def _torch_kw(case: Case) -> dict:
    return {"dim": case.axes} if case.kind.endswith(("2", "n")) else {"dim": case.axes[0]}


def _cuda_torch():
    """torch when it is importable and sees a CUDA device, else None."""
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def references(case: Case, data: np.ndarray, reps: int, cpu: bool) -> dict:
    """Times of the same transform in other libraries, where importable (None otherwise)."""
    out: dict[str, float | str | None] = {}
    kw = _numpy_kw(case)
    if cpu:
        out["numpy_ms"] = _wall_ms(lambda: getattr(np.fft, case.kind)(data, **kw),
                                   max(1, reps // 3))
        try:
            import scipy.fft
            out["scipy_ms"] = _wall_ms(
                lambda: getattr(scipy.fft, case.kind)(data, workers=-1, **kw), max(1, reps // 3))
        except ImportError:
            out["scipy_ms"] = None
    torch = _cuda_torch()
    if torch is not None:
        t = torch.from_numpy(data).cuda()
        fn, tkw = getattr(torch.fft, case.kind), _torch_kw(case)
        out["cufft_ms"], out["cufft_timing"] = _cuda_ms(torch, lambda: fn(t, **tkw), reps)
    try:
        import cupy
        c = cupy.asarray(data)
        fn = getattr(cupy.fft, case.kind)
        out["cupy_ms"] = cupy_ms(cupy, lambda: fn(c, **kw), reps)
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
    buffer recorded once); called one by one from Python instead, torch's host work per launch
    can leave the GPU idle between small kernels. Where capture fails, the calls are timed as
    issued ("eager")."""
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


def cupy_ms(cupy, fn, reps: int) -> float:
    """CuPy's GPU time of `fn` in ms: CUDA events around 10 calls, best of `reps`."""
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


def torch_loop(case: Case, data: np.ndarray, **kw) -> dict | None:
    """loop_us of torch.fft eager on CUDA tensors made beforehand, ended by
    torch.cuda.synchronize(): the faster of a new output per call (torch's caching allocator)
    and a preallocated one (out=, where torch takes it; it can cost torch a copy). None without
    torch+CUDA. Adds "out": whether the faster one used out=."""
    torch = _cuda_torch()
    if torch is None:
        return None
    t = torch.from_numpy(data).cuda()
    fn, tkw = getattr(torch.fft, case.kind), _torch_kw(case)
    o = fn(t, **tkw)
    calls = [(lambda: fn(t, **tkw), False)]
    try:
        fn(t, out=o, **tkw)
        calls.append((lambda: fn(t, out=o, **tkw), True))
    except (TypeError, RuntimeError):  # this torch's function takes no out=
        pass
    torch.cuda.synchronize()
    runs = [dict(loop_us(call, torch.cuda.synchronize, **kw), out=into) for call, into in calls]
    return min(runs, key=lambda r: r["us_per_call"])
