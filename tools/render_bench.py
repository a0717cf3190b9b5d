"""The render-loop numbers of issue 42 in one process, against torch.fft on the same GPU:
TextureFFT.forward / convolve of one rgba32f image (two complex fields) against torch fft2 of the
(2, h, w) complex64 fields; the ocean's inverse FFTs per frame (every cascade's 8 textures in one
call) against torch's batched ifft2 of the same (4 cascades, n, n) fields; numpy-in, numpy-out
fft2 / batched fft on GL and Vulkan (host transfers included) against torch (host to device and
back). GL and torch calls are timed as K back-to-back calls ended by one finish (wall clock), after
a second of calls that brings the GPU's clocks up; numpy-in, numpy-out calls as ROUNDS rounds
taking GL, Vulkan and torch in turn (min and median), since host copies vary from call to call.

    python tools/render_bench.py [--json out.json] [--quick]
"""
from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np


def torch_or_none():
    try:
        import torch
        return torch if torch.cuda.is_available() else None
    except ImportError:
        return None


def loop_ms(call, finish, k):
    """ms per call of k back-to-back calls ended by one finish, best of 3 loops."""
    call()
    finish()
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(k):
            call()
        finish()
        best = min(best, (time.perf_counter() - t0) / k)
    return best * 1e3


ROUNDS = 7


def texture_rows(ctx, sizes, k, torch, quick):
    """TextureFFT.forward / convolve per size against torch's fft2 of the same fields."""
    import pyfftgl.gl
    from pyfftgl.bench.timing import warm_up
    tsync = torch.cuda.synchronize if torch else None
    rows = []
    for i, (h, w) in enumerate(sizes):
        fft = pyfftgl.gl.TextureFFT(ctx, (h, w))
        a = np.random.default_rng(0).standard_normal((h, w, 4)).astype(np.float32)
        src = ctx.texture((w, h), 4, a.tobytes(), dtype="f4")
        dst = ctx.texture((w, h), 4, dtype="f4")
        if i == 0 and not quick:
            warm_up(lambda: fft.forward(src, dst), ctx.finish, 1.0)
        one = ctx.texture((w, h), 2, a[..., :2].tobytes(), dtype="f4")
        one_dst = ctx.texture((w, h), 2, dtype="f4")
        kern = np.random.default_rng(1).standard_normal((h, w)).astype(np.float32)
        spec = fft.spectrum(kern)
        row = {"h": h, "w": w,
               "forward_ms": loop_ms(lambda: fft.forward(src, dst), ctx.finish, k),
               "convolve_ms": loop_ms(lambda: fft.convolve(src, spec, dst), ctx.finish, k),
               "forward_rg32f_ms": loop_ms(lambda: fft.forward(one, one_dst), ctx.finish, k)}
        if torch:
            x = torch.randn(2, h, w, dtype=torch.complex64, device="cuda")
            kk = torch.fft.fft2(torch.randn(h, w, device="cuda"))
            row["torch_fft2_ms"] = loop_ms(lambda: torch.fft.fft2(x), tsync, k)
            row["torch_conv_ms"] = loop_ms(lambda: torch.fft.ifft2(torch.fft.fft2(x) * kk),
                                           tsync, k)
        rows.append(row)
        print("texture", row)
        fft.close()
        for t in (src, dst, one, one_dst):
            t.release()
    return rows


def ocean_rows(ctx, sizes, k, torch, out):
    """The ocean's inverse FFTs per frame (1 and 4 cascades) against torch's batched ifft2."""
    from demos.ocean.gpu import OceanGPU
    from demos.ocean.physics import Ocean, OceanParams
    tsync = torch.cuda.synchronize if torch else None
    patches = OceanParams().patch_sizes
    rows = []
    for n in sizes:
        for cascades in (1, 4):
            sim = OceanGPU(ctx, Ocean(OceanParams(size=n, patch_sizes=patches[:cascades])))
            sim.build_spectra(1.0)
            row = {"n": n, "cascades": cascades,
                   "ocean_fft_ms": loop_ms(sim.inverse_fft, ctx.finish, k)}
            row["dispatches_per_call"] = sim.fft.recordings()[-1].dispatch_count
            out["image_units"] = getattr(sim.fft.device, "image_units", None)
            if torch:
                x = torch.randn(4 * cascades, n, n, dtype=torch.complex64, device="cuda")
                row["torch_ifft2_ms"] = loop_ms(lambda: torch.fft.ifft2(x, norm="forward"),
                                                tsync, k)
            rows.append(row)
            print("ocean", row)
            sim.release()
    return rows


def numpy_rows(cases, torch):
    """numpy-in, numpy-out calls on GL, Vulkan and torch in turn, ROUNDS rounds (min, median)."""
    import pyfftgl
    rows = []
    for kind, shape in cases:
        x = (np.random.default_rng(2).standard_normal(shape)
             + 1j * np.random.default_rng(3).standard_normal(shape)).astype(np.complex64)
        row = {"kind": kind, "shape": list(shape)}
        f, g = getattr(pyfftgl, kind), torch and getattr(torch.fft, kind)
        calls = {"gl": lambda: f(x, backend="gl"), "vulkan": lambda: f(x, backend="vulkan")}
        if torch:
            calls["torch"] = lambda: g(torch.from_numpy(x).cuda()).cpu().numpy()
        times = {name: [] for name in calls}
        for call in calls.values():  # plans, first uses
            call()
        for _ in range(ROUNDS):
            for name, call in calls.items():
                t0 = time.perf_counter()
                call()
                times[name].append(1e3 * (time.perf_counter() - t0))
        for name, ts in times.items():
            row[f"{name}_ms"], row[f"{name}_median_ms"] = min(ts), float(np.median(ts))
        rows.append(row)
        print("numpy", row)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", default=None)
    ap.add_argument("--quick", action="store_true", help="small sizes, few calls (llvmpipe)")
    args = ap.parse_args(argv)
    import moderngl

    torch = torch_or_none()
    ctx = moderngl.create_standalone_context(require=430, backend="egl")
    k = 3 if args.quick else 200
    out = {"gl": ctx.info["GL_RENDERER"], "torch": torch.cuda.get_device_name() if torch else None,
           "k": k, "texture": [], "ocean": [], "numpy": []}
    print(f"GL: {out['gl']}; torch: {out['torch']}; K = {k}; ms per call")

    sizes = [(64, 96), (128, 128)] if args.quick else [(720, 1280), (1024, 1024), (1080, 1920),
                                                       (2048, 2048)]
    out["texture"] = texture_rows(ctx, sizes, k, torch, args.quick)
    out["ocean"] = ocean_rows(ctx, [64] if args.quick else [512, 1024], k, torch, out)
    cases = ([("fft2", (256, 256)), ("fft", (64, 256))] if args.quick else
             [("fft2", (2048, 2048)), ("fft2", (4096, 4096)), ("fft", (16384, 4096))])
    out["numpy"] = numpy_rows(cases, torch)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(out, fh, indent=1)
        print("wrote", args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
