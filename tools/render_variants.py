"""Packings of the ocean's fields and TextureFFT's intermediates, timed as K back-to-back inverse
calls ended by one finish (wall clock), against torch's batched ifft2 of the same complex fields:
8 textures (4 cascades) as a list or one TextureArray, rgba32f or rgba16f, intermediate buffer or
image; and the single-image forward with either intermediate.

    python tools/render_variants.py [--quick]
"""
from __future__ import annotations

import sys

import numpy as np

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from render_bench import loop_ms, torch_or_none  # noqa: E402


def main(argv=None):
    import moderngl
    import pyfftgl.gl
    quick = "--quick" in (argv or sys.argv[1:])
    ctx = moderngl.create_standalone_context(require=430, backend="egl")
    torch = torch_or_none()
    k = 3 if quick else 200
    print(f"GL: {ctx.info['GL_RENDERER']}; K = {k}; ms per call")
    for n in ([64] if quick else [512, 1024]):
        if torch:
            x = torch.randn(16, n, n, dtype=torch.complex64, device="cuda")
            t = loop_ms(lambda: torch.fft.ifft2(x, norm="forward"), torch.cuda.synchronize, k)
            print(f"n={n} torch ifft2 of 16 fields: {t:.4f}")
        for inter in ("buffer", "image"):
            fft = pyfftgl.gl.TextureFFT(ctx, (n, n), norm="forward", intermediate=inter)
            for dtype in ("f4", "f2"):
                a = np.random.default_rng(0).standard_normal((8, n, n, 4)).astype(
                    np.float32 if dtype == "f4" else np.float16)
                texs = [ctx.texture((n, n), 4, a[i].tobytes(), dtype=dtype) for i in range(8)]
                arr = ctx.texture_array((n, n, 8), 4, a.tobytes(), dtype=dtype)
                tl = loop_ms(lambda: fft.inverse(texs, texs), ctx.finish, k)
                ta = loop_ms(lambda: fft.inverse(arr, arr), ctx.finish, k)
                print(f"n={n} 8 textures {dtype} intermediate={inter}: list {tl:.4f} "
                      f"array {ta:.4f}")
                for t_ in texs + [arr]:
                    t_.release()
            fft.close()
    for h, w in ([(64, 96)] if quick else [(720, 1280), (1024, 1024), (1080, 1920), (2048, 2048)]):
        row = []
        for inter in ("buffer", "image"):
            fft = pyfftgl.gl.TextureFFT(ctx, (h, w), intermediate=inter)
            src = ctx.texture((w, h), 4, dtype="f4")
            dst = ctx.texture((w, h), 4, dtype="f4")
            row.append(loop_ms(lambda: fft.forward(src, dst), ctx.finish, k))
            fft.close()
        print(f"forward rgba32f {w}x{h}: buffer {row[0]:.4f} image {row[1]:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
