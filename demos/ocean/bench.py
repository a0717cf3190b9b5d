"""python -m demos.ocean --bench: the ocean's FFT time per frame (pyfftgl vs torch.fft), frames.

FFT rows: 1 and 4 cascades at 512^2 and 1024^2, each cascade 2 rgba32f layers = 4 complex
fields, all inverse-transformed by one `TextureFFT.inverse` call. GPU time comes from a GL time
query around `reps` back-to-back calls; on llvmpipe a time query does not cover compute work, so
there it is the wall clock between two ctx.finish(). torch.fft does the same transforms as one
batched ifft2 of a (4 * cascades, n, n) complex64 CUDA tensor, timed with CUDA events.
Frame rows: the demo headless at 1920x1080 (`--fft-size`, `--cascades`), wall clock per frame with
the GPU drained at the end, and GPU time per frame from a time query.
Stage rows: GPU time per stage of a 1920x1080 frame (spectrum, FFT, foam with the mip chains,
sky, ocean, buoy), from a GL time query around each stage (read after each frame, so the frame
is serialised); on llvmpipe, whose time queries miss compute work, the wall clock between a
finish() before and after each stage.
With --half every field texture is rgba16f (the FFT computes in float32); torch stays complex64.
--json PATH writes every number to PATH as well.
"""
from __future__ import annotations

import contextlib
import json
import time

import moderngl

from pyfftgl.bench.timing import warm_up

from .gpu import OceanGPU
from .physics import Ocean, OceanParams


def _software(ctx):
    r = ctx.info["GL_RENDERER"]
    return "llvmpipe" in r or "softpipe" in r


def _gl_ms(ctx, fn, reps):
    """ms per call of fn: a GPU time query on a GPU, wall clock around finish() otherwise. On a
    GPU, half a second of calls first: an idle GPU's clocks come up only after some work."""
    warm_up(fn, ctx.finish, 0.0 if _software(ctx) else 0.5)
    if _software(ctx):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        ctx.finish()
        return 1e3 * (time.perf_counter() - t0) / reps
    q = ctx.query(time=True)
    with q:
        for _ in range(reps):
            fn()
    return q.elapsed / 1e6 / reps  # ModernGL's Query has no release(): it goes with q


class StageTimes:
    """OceanGPU.stage for a bench: the GPU time of each named stage of a frame, summed over
    frames (a GL time query per stage, or the wall clock around finish() on llvmpipe)."""

    def __init__(self, ctx):
        self.ctx, self.soft = ctx, _software(ctx)
        self.ms: dict[str, float] = {}
        self._queries = {}

    @contextlib.contextmanager
    def __call__(self, name):
        if self.soft:
            self.ctx.finish()
            t0 = time.perf_counter()
            yield
            self.ctx.finish()
            elapsed = 1e3 * (time.perf_counter() - t0)
        else:
            q = self._queries.get(name) or self._queries.setdefault(name,
                                                                    self.ctx.query(time=True))
            with q:
                yield
            elapsed = q.elapsed / 1e6  # waits for this stage's work
        self.ms[name] = self.ms.get(name, 0.0) + elapsed


def _torch_ms(n, batch, reps):
    """torch.fft.ifft2 of a (batch, n, n) complex64 CUDA tensor, ms per call; None without CUDA."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    x = torch.randn(batch, n, n, dtype=torch.complex64, device="cuda")
    warm_up(lambda: torch.fft.ifft2(x, norm="forward"), torch.cuda.synchronize, 0.5)  # as _gl_ms
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(reps):
        torch.fft.ifft2(x, norm="forward")
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / reps


def run_bench(args):
    from .app import OceanApp, offscreen, params_from

    ctx = moderngl.create_standalone_context(require=430, backend="egl")
    soft = _software(ctx)
    reps = 3 if soft else 200
    print(f"device: {ctx.info['GL_RENDERER']} ({'wall clock' if soft else 'GL time query'})"
          + (", rgba16f field textures" if args.half else ""))
    results = {"device": ctx.info["GL_RENDERER"], "timing": "wall clock" if soft else
               "GL time query", "half": bool(args.half), "fft": [], "frame": {}, "stages": {}}
    print(f"{'fft':>6} {'cascades':>8} {'complex fields':>14} {'pyfftgl ms':>11} {'torch ms':>9} "
          f"{'ratio':>6}")
    patches = OceanParams().patch_sizes
    for n in (512, 1024):
        for cascades in (1, 4):
            sim = OceanGPU(ctx, Ocean(OceanParams(size=n, patch_sizes=patches[:cascades])),
                           half=args.half)
            sim.build_spectra(1.0)
            ours = _gl_ms(ctx, sim.inverse_fft, reps)
            theirs = _torch_ms(n, 4 * cascades, reps)
            ratio = f"{ours / theirs:6.2f}" if theirs else "     -"
            torch_col = f"{theirs:9.4f}" if theirs else "        -"
            print(f"{n:>6} {cascades:>8} {4 * cascades:>14} {ours:11.4f} {torch_col} {ratio}")
            results["fft"].append({"n": n, "cascades": cascades, "fields": 4 * cascades,
                                   "pyfftgl_ms": ours, "torch_ms": theirs})
            sim.release()

    size = (1920, 1080)
    app = OceanApp(ctx, params_from(args), width=size[0], half=args.half)
    fbo = offscreen(ctx, size)
    fbo.use()
    frames = 3 if soft else 300

    def frame():
        fbo.clear(0.0, 0.0, 0.0, 1.0, depth=1.0)
        app.frame(1.0 / 60.0, size[0] / size[1])

    for _ in range(2 if soft else 30):
        frame()
    ctx.finish()
    t0 = time.perf_counter()
    for _ in range(frames):
        frame()
    ctx.finish()
    wall = 1e3 * (time.perf_counter() - t0) / frames
    gpu = _gl_ms(ctx, frame, frames) if not soft else float("nan")
    print(f"frame 1920x1080, {app.sim.cascades} x {app.params.size}^2: {wall:.3f} ms wall "
          f"({1e3 / wall:.1f} FPS), "
          f"{gpu:.3f} ms GPU (time query from the first to the last command of a frame)")
    results["frame"] = {"size": list(size), "cascades": app.sim.cascades, "n": app.params.size,
                        "wall_ms": wall, "gpu_ms": gpu}
    stages = app.sim.stage = StageTimes(ctx)
    for _ in range(frames):
        frame()
    app.sim.stage = lambda name: contextlib.nullcontext()
    per = {k: v / frames for k, v in stages.ms.items()}
    how = 'wall clock around finish()' if soft else 'GL time query'
    print(f"stages of a 1920x1080 frame ({how} each, ms): "
          + ", ".join(f"{k} {v:.3f}" for k, v in per.items()) + f"; sum {sum(per.values()):.3f}")
    results["stages"] = per
    app.release()
    if getattr(args, "json", None):
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
        print(f"wrote {args.json}")
    return 0
