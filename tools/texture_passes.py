"""Where TextureFFT.forward's time goes: GPU time of each pass (GL timer queries, each pass's
dispatches recorded `repeat` times back to back) of one rgba32f image (two complex fields) with
either intermediate, the same transform's passes on GL buffers (fft2 of the (2, h, w) fields,
device-resident), the whole plans, and torch.fft.fft2 of the same fields in the same process.

    python tools/texture_passes.py [--quick]
"""
from __future__ import annotations

import sys

import numpy as np

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from render_bench import loop_ms, torch_or_none  # noqa: E402


def shape_of(p) -> str:
    try:
        d = p.defines()
    except KeyError:  # a four-step pass's defines need its tables' offsets
        return f"{p.n}{list(p.radices)} {type(p).__name__}"
    keys = ("THREADS", "LINES", "LOAD_TILED", "STORE_TILED", "LINE_FASTEST", "STORE_LINE_FASTEST")
    return f"{p.n}{list(p.radices)} " + " ".join(f"{k}={d[k]}" for k in keys if k in d)


def timed_ms(device, dispatches, repeat, reps=5):
    from pyfftgl.bench.timing import best_of, warm_up
    sub = device.record(dispatches * repeat)
    warm_up(sub.run, device.finish, 0.1)
    return best_of(lambda: sub.run(timed=True), reps) / 1e6 / repeat


def main(argv=None):
    import moderngl
    import pyfftgl
    import pyfftgl.gl
    from pyfftgl.backends.gl import GLImage
    quick = "--quick" in (argv or sys.argv[1:])
    ctx = moderngl.create_standalone_context(require=430, backend="egl")
    torch = torch_or_none()
    repeat, k = (2, 3) if quick else (20, 200)
    print(f"GL: {ctx.info['GL_RENDERER']}; GPU ms per pass (timer queries), loop ms per call")
    sizes = [(64, 96)] if quick else [(720, 1280), (1024, 1024), (1080, 1920), (2048, 2048)]
    for h, w in sizes:
        a = np.random.default_rng(0).standard_normal((h, w, 4)).astype(np.float32)
        if torch:
            x = torch.randn(2, h, w, dtype=torch.complex64, device="cuda")
            kk = torch.fft.fft2(torch.randn(h, w, device="cuda"))
            t = loop_ms(lambda: torch.fft.fft2(x), torch.cuda.synchronize, k)
            c = loop_ms(lambda: torch.fft.ifft2(torch.fft.fft2(x) * kk), torch.cuda.synchronize, k)
            print(f"{w}x{h} torch fft2 of (2, h, w): loop {t:.4f}; convolve loop {c:.4f}")
        for inter in ("buffer", "image"):
            fft = pyfftgl.gl.TextureFFT(ctx, (h, w), intermediate=inter)
            src = ctx.texture((w, h), 4, a.tobytes(), dtype="f4")
            dst = ctx.texture((w, h), 4, dtype="f4")
            fft.forward(src, dst)
            loop = loop_ms(lambda: fft.forward(src, dst), ctx.finish, k)
            spec = fft.spectrum(np.random.default_rng(1).standard_normal((h, w)).astype(np.float32))
            conv = loop_ms(lambda: fft.convolve(src, spec, dst), ctx.finish, k)
            plan = fft.plans()[0]
            res = {"in": GLImage(src), "out": GLImage(dst)}
            per = [timed_ms(fft.device, ds, repeat) for ds in plan.dispatches(res)]
            whole = timed_ms(fft.device, plan.flat_dispatches(res), repeat)
            print(f"{w}x{h} texture intermediate={inter}: loop {loop:.4f} "
                  f"(convolve {conv:.4f}) GPU {whole:.4f} = "
                  + " + ".join(f"{t:.4f}" for t in per))
            for p in plan.passes:
                print("   ", shape_of(p))
            fft.close()
            src.release()
            dst.release()
        x = (a[..., 0::2] + 1j * a[..., 1::2]).transpose(2, 0, 1).astype(np.complex64)
        p = pyfftgl.plan(x.shape, axes=(1, 2), kind="fft2", backend="gl")
        d = pyfftgl.asarray(x, backend="gl")
        out = p(d)
        loop = loop_ms(lambda: p(d, out=out), d.device.finish, k)
        for dp in p.device_plans:
            per = [timed_ms(dp.device, ds, repeat) for ds in dp.dispatches()]
            whole = timed_ms(dp.device, dp.flat_dispatches(), repeat)
            print(f"{w}x{h} buffers fft2 of (2, h, w): loop {loop:.4f} GPU {whole:.4f} = "
                  + " + ".join(f"{t:.4f}" for t in per))
            for q in dp.passes:
                print("   ", shape_of(q))
    return 0


if __name__ == "__main__":
    sys.exit(main())
