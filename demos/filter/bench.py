"""`python -m demos.filter --bench`: GPU time per frame of the filter (forward + multiply + inverse
of an RGBA image, one TextureFFT.convolve) on GL, next to torch.fft doing the same work in the same
run: fft2 of a (2, H, W) complex64 CUDA tensor (the two complex fields R + iG, B + iA), multiply,
ifft2, timed with CUDA events. With half, the GL textures are rgba16f (the FFTs compute in float32)
and the reference is the float64 filter of the float16-rounded picture; torch stays complex64."""
from __future__ import annotations

import json
import platform
import time

import numpy as np

from pyfftgl.bench.timing import warm_up

from . import filters, images


def _median_ms(samples):
    return float(np.median(samples)) if samples else None


def snr_db(got, ref):
    """Signal to noise ratio of `got` against the reference, in dB."""
    return float(20 * np.log10(np.linalg.norm(ref) / np.linalg.norm(got - ref)))


def gl_filter(ctx, shape, iters, software, half=False):
    """Times fft.convolve on one RGBA texture; checks it against the numpy reference once."""
    from pyfftgl.gl import TextureFFT

    from .render import FORMATS
    _, dtype, host_dtype = FORMATS[half]
    h, w = shape
    picture = images.test_pattern(shape).astype(host_dtype)
    filt = filters.gaussian_blur(shape, 4.0)
    with TextureFFT(ctx, shape) as fft:
        src = ctx.texture((w, h), 4, picture.tobytes(), dtype=dtype)
        dst = ctx.texture((w, h), 4, dtype=dtype)
        spec = fft.spectrum(filt.kernel)
        fft.convolve(src, spec, dst)
        got = np.frombuffer(dst.read(), host_dtype).reshape(h, w, 4).astype(np.float64)
        want = filters.apply(picture, filt)
        err = float(np.abs(got - want).max())
        warm_up(lambda: fft.convolve(src, spec, dst), ctx.finish, 0.05 if software else 0.5)
        t0 = time.perf_counter()
        for _ in range(iters):
            fft.convolve(src, spec, dst)
        ctx.finish()
        row = {"gl_loop_wall_ms": (time.perf_counter() - t0) * 1e3 / iters, "max_abs_err": err}
        if half:
            row["snr_db"] = snr_db(got, want)
        if not software:  # a query per frame, and one around the whole loop
            queries = [ctx.query(time=True) for _ in range(iters)]
            for q in queries:
                with q:
                    fft.convolve(src, spec, dst)
            row["gl_frame_query_median_ms"] = _median_ms([q.elapsed / 1e6 for q in queries])
            whole = ctx.query(time=True)
            with whole:
                for _ in range(iters):
                    fft.convolve(src, spec, dst)
            row["gl_loop_query_ms"] = whole.elapsed / 1e6 / iters
        src.release()
        dst.release()
    return row, picture, filt


def torch_filter(picture, filt, iters):
    """The same work in torch.fft on CUDA, or None where torch or CUDA is missing."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    fields = np.stack([picture[..., 0] + 1j * picture[..., 1],
                       picture[..., 2] + 1j * picture[..., 3]])
    x = torch.from_numpy(fields.astype(np.complex64)).cuda()
    k = torch.from_numpy(filt.spectrum().astype(np.complex64)).cuda()
    step = lambda: torch.fft.ifft2(torch.fft.fft2(x) * k)  # noqa: E731
    warm_up(step, torch.cuda.synchronize, 0.5)
    event = lambda: torch.cuda.Event(enable_timing=True)  # noqa: E731
    pairs = [(event(), event()) for _ in range(iters)]
    for a, b in pairs:
        a.record()
        step()
        b.record()
    start, end = event(), event()
    start.record()
    for _ in range(iters):
        y = step()
    end.record()
    torch.cuda.synchronize()
    y = y.cpu().numpy()
    got = np.stack([y[0].real, y[0].imag, y[1].real, y[1].imag], -1)
    return {"torch_frame_events_median_ms": _median_ms([a.elapsed_time(b) for a, b in pairs]),
            "torch_loop_events_ms": start.elapsed_time(end) / iters,
            "torch_vs_numpy_max_abs_err": float(np.abs(got - filters.apply(picture, filt)).max()),
            "torch": torch.__version__, "cuda_device": torch.cuda.get_device_name()}


def run_bench(shapes, iters, json_path=None, half=False):
    import moderngl
    from .render import is_software
    ctx = moderngl.create_standalone_context(require=430, backend="egl")
    software = is_software(ctx)
    result = {"gl_renderer": ctx.info["GL_RENDERER"], "gl_version": ctx.info["GL_VERSION"],
              "host": platform.node(), "iters": iters,
              "work": "RGBA image: forward + multiply + inverse (TextureFFT.convolve, two complex "
                      "fields) vs torch fft2/mul/ifft2 of (2, H, W) complex64",
              **({"storage": "rgba16f textures, float32 compute"} if half else {}),
              "rows": []}
    how = "wall clock; software GL time queries miss compute" if software else "GL time queries"
    print(f"GL: {result['gl_renderer']} ({how})" + (", rgba16f textures" if half else ""))
    print(f"{'W x H':>11} {'GL frame':>10} {'GL loop':>10} {'GL wall':>10} {'torch frame':>12} "
          f"{'torch loop':>11} {'err':>9}")
    # Every shape run once before any is timed (first-use costs); each is warmed before timing.
    for shape in shapes:
        gl_filter(ctx, shape, 3, software, half)
    for shape in shapes:
        row, picture, filt = gl_filter(ctx, shape, iters, software, half)
        torch_row = torch_filter(picture, filt, iters) or {}
        row = {"width": shape[1], "height": shape[0], **row, **torch_row}
        result["rows"].append(row)
        f = lambda k: f"{row[k]:.4f}" if row.get(k) is not None else "-"  # noqa: E731
        print(f"{shape[1]:>5} x {shape[0]:<4} {f('gl_frame_query_median_ms'):>10} "
              f"{f('gl_loop_query_ms'):>10} {f('gl_loop_wall_ms'):>10} "
              f"{f('torch_frame_events_median_ms'):>12} {f('torch_loop_events_ms'):>11} "
              f"{row['max_abs_err']:>9.2e}")
    print("ms per frame; frame = median of one query (events) per call, "
          "loop = one query over all calls")
    if json_path:
        with open(json_path, "w") as fh:
            json.dump(result, fh, indent=1)
        print(f"wrote {json_path}")
    return 0
