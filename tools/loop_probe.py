"""What a render loop feels: wall clock per call of K back-to-back device-resident calls ended by
one device finish, the plan's GPU time, torch.fft doing the same loop; and the texture filter's
GPU time per frame. Prints JSON lines. Usage: python tools/loop_probe.py [--quick]"""
import json
import sys
import time

import numpy as np

import pyfftgl
import pyfftgl.gl
from pyfftgl.backends import get_device

QUICK = "--quick" in sys.argv
K = 50 if QUICK else 300
SMOKE = "--smoke" in sys.argv  # tiny shapes, to check the script on a software driver

CASES = [("fft2", (1024, 1024), np.complex64), ("fft2", (2048, 2048), np.complex64),
         ("rfft2", (1024, 1024), np.float32), ("rfft2", (2048, 2048), np.float32),
         ("fft", (3, 1024, 1024), np.complex64), ("fft", (16384, 4096), np.complex64)]


def gpu_ns(p, d, o):
    dp = p.device_plans[0]
    sub = dp.submission({"in": d.buffer, "out": o.buffer})
    for _ in range(3):
        sub.run(timed=True)
    times = [sub.run(timed=True) for _ in range(10)]
    ds = [x for xs in dp.dispatches({"in": d.buffer, "out": o.buffer}) for x in xs]
    rep = dp.device.record(ds * 10)
    rep.run(timed=True)
    ten = min(rep.run(timed=True) for _ in range(5)) / 10
    return min(times), ten


def ours(backend, kind, shape, dtype):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(np.float32)
    if dtype == np.complex64:
        x = (x + 1j * rng.standard_normal(shape)).astype(np.complex64)
    p = pyfftgl.plan(shape, dtype, kind=kind, backend=backend)
    d = pyfftgl.asarray(x, backend=backend)
    o = pyfftgl.asarray(np.zeros(p.out_shape, p.out_dtype), backend=backend)
    dev = get_device(backend)
    for _ in range(20):
        p(d, out=o)
    dev.finish()
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(K):
            p(d, out=o)
        dev.finish()
        best = min(best, (time.perf_counter() - t0) / K)
    g, ten = gpu_ns(p, d, o) if len(p.device_plans) == 1 else (None, None)
    # After a read-back (the GL defect), the loop again.
    o.get()
    t0 = time.perf_counter()
    for _ in range(K):
        p(d, out=o)
    dev.finish()
    after = (time.perf_counter() - t0) / K
    return best * 1e6, (g / 1e3 if g else None), after * 1e6, ten and ten / 1e3


def torch_loop(kind, shape, dtype):
    try:
        import torch
    except ImportError:
        return None
    dev = "cuda"
    x = torch.randn(shape, device=dev, dtype=torch.complex64 if dtype == np.complex64 else torch.float32)
    f = {"fft2": lambda: torch.fft.fft2(x), "rfft2": lambda: torch.fft.rfft2(x),
         "fft": lambda: torch.fft.fft(x)}[kind]
    for _ in range(20):
        f()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(K):
            f()
        torch.cuda.synchronize()
        best = min(best, (time.perf_counter() - t0) / K)
    return best * 1e6


def filter_frame(shape):
    dev = get_device("gl")
    with dev.current():  # the library's context is current only inside its calls
        return _filter_frame(dev.ctx, shape)


def _filter_frame(ctx, shape):
    h, w = shape
    fft = pyfftgl.gl.TextureFFT(ctx, shape)
    img = np.random.default_rng(1).random((h, w, 4)).astype(np.float32)
    src = ctx.texture((w, h), 4, dtype="f4")
    src.write(img.tobytes())
    dst = ctx.texture((w, h), 4, dtype="f4")
    k = np.zeros(shape, np.float32)
    k[0, 0] = 1
    spec = fft.spectrum(k)
    out = {}
    for inter in ("buffer", "image"):
        fft = pyfftgl.gl.TextureFFT(ctx, shape, intermediate=inter)
        spec = fft.spectrum(k)
        for _ in range(20):
            fft.convolve(src, spec, dst)
        ctx.finish()
        best = float("inf")
        for _ in range(5):
            q = ctx.query(time=True)
            with q:
                for _ in range(20):
                    fft.convolve(src, spec, dst)
            ctx.finish()
            best = min(best, q.elapsed / 20)
        t0 = time.perf_counter()
        for _ in range(K):
            fft.convolve(src, spec, dst)
        ctx.finish()
        out[inter] = (best / 1e3, (time.perf_counter() - t0) / K * 1e6)
        got = np.frombuffer(dst.read(), np.float32).reshape(h, w, 4)
        out[inter + "_err"] = float(np.abs(got - img).max())
    try:
        import torch
        z = torch.randn((2, h, w), device="cuda", dtype=torch.complex64)
        kk = torch.randn((h, w), device="cuda", dtype=torch.complex64)
        def f():
            return torch.fft.ifft2(torch.fft.fft2(z) * kk)
        for _ in range(20):
            f()
        torch.cuda.synchronize()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(100):
            f()
        e.record()
        torch.cuda.synchronize()
        out["torch"] = s.elapsed_time(e) / 100 * 1e3
    except Exception as ex:
        out["torch"] = str(ex)
    return out


def main():
    for backend in ("vulkan", "gl"):
        print(json.dumps({"device": get_device(backend).info.name, "api": backend}), flush=True)
    cases = CASES[:1] if QUICK else CASES
    if SMOKE:
        global K
        K, cases = 3, [("fft2", (64, 64), np.complex64), ("rfft2", (64, 64), np.float32),
                       ("fft", (3, 16, 64), np.complex64)]
    for kind, shape, dtype in cases:
        t = torch_loop(kind, shape, dtype)
        for backend in ("vulkan", "gl"):
            loop, gpu, after, ten = ours(backend, kind, shape, dtype)
            print(json.dumps({"case": f"{kind} {shape}", "api": backend, "loop_us": round(loop, 1),
                              "gpu_us": gpu and round(gpu, 1), "gpu10_us": ten and round(ten, 1), "loop_after_get_us": round(after, 1),
                              "torch_loop_us": t and round(t, 1)}), flush=True)
    for shape in ([(32, 48)] if SMOKE else [(1024, 1024)] if QUICK else
                  [(1024, 1024), (1024, 2048), (1080, 1920)]):
        print(json.dumps({"filter": shape, **filter_frame(shape)}), flush=True)


if __name__ == "__main__":
    main()
