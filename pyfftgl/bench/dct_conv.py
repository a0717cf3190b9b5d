"""`python -m pyfftgl bench --dct`: the DCT and convolution cases of issue 43 against
cupyx.scipy.fft / cupyx.scipy.signal in the same process (where CuPy is importable).

Per case and backend: GPU ms of one call (its dispatches recorded REPEAT times in one
submission, GPU timestamps); for the DCTs also each part alone (pre, FFT, post passes, unfused)
and the unfused plan's total (the A/B of evaluating an axis's post pass inside the next axis's
pre pass); and the wall-clock us per call of a loop of back-to-back
device-resident calls ended by one finish (timing.loop_us), float32. CuPy: CUDA events around
10 calls, and the same loop ended by a device synchronize. Records go to
bench/results/realtransforms-<device-slug>.json.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from .. import wisdom
from .reference import cupy_ms
from .timing import best_of, loop_us

REPEAT = 10


def cases(quick: bool) -> list[dict]:
    """dctn/idctn type 2 of n^2; fftconvolve ("same") of an image with a k^2 kernel."""
    dct_sizes, image, kernels = ((64, 128), 128, (7, 15)) if quick else \
        ((1024, 4096), 2048, (31, 257))
    out = [dict(name=f"{fn} type 2 {n}^2", fn=fn, n=n) for fn in ("dctn", "idctn")
           for n in dct_sizes]
    out += [dict(name=f"fftconvolve {image}^2 * {k}^2 same", fn="fftconvolve", n=image, k=k)
            for k in kernels]
    return out


def _pyfftgl_case(case: dict, backend: str, calls: int) -> dict:
    import pyfftgl
    from .. import dctdst, signal
    device = pyfftgl.get_device(backend)
    rng = np.random.default_rng(0)
    image = rng.standard_normal((case["n"], case["n"])).astype(np.float32)
    d = pyfftgl.asarray(image, backend=backend)
    if case["fn"] == "fftconvolve":
        kernel = rng.standard_normal((case["k"], case["k"])).astype(np.float32)
        conv = signal.Convolver(kernel, image.shape, mode="same", backend=backend)
        out = conv(d)

        def call():
            conv(d, out=out)
        dispatches = conv.plan.flat_dispatches({"in": d.buffer, "out": out.buffer})
        check = np.linalg.norm(out.get() - _scipy_conv(image, kernel)) / np.linalg.norm(
            _scipy_conv(image, kernel))
    else:
        fn = getattr(pyfftgl, case["fn"])
        out = fn(d)

        def call():
            fn(d, out=out)
        checked = dctdst.nd_call("dct", case["fn"] == "dctn", image, 2, None, None,
                                         None, None, None)
        parts = dctdst.device_plan(checked, device).parts(d.buffer, out.buffer)
        dispatches = [x for _, ds in parts for x in ds]
        # the same transform with every pre and post pass separate: the fusion's A/B
        unfused = dctdst.R2RPlan(checked.real_shape, checked.axes, checked.precision,
                                          device, fuse=False)
        separate = unfused.parts(d.buffer, out.buffer)
        import scipy.fft
        ref = getattr(scipy.fft, case["fn"])(image.astype(np.float64))
        check = np.linalg.norm(out.get() - ref) / np.linalg.norm(ref)
    gpu_ms = _gpu_ms(device, dispatches)
    loop = loop_us(call, device.finish, calls=calls)
    rec = {"gpu_ms": gpu_ms, "loop_us": loop["us_per_call"], "rel_l2_vs_scipy": float(check),
           "dispatches": len(dispatches), "device": device.info.name}
    if case["fn"] != "fftconvolve":  # the extra passes' share: each part alone, summed by kind
        split: dict = {}
        for kind, ds in separate:
            split[kind] = split.get(kind, 0.0) + _gpu_ms(device, ds, warm=0.05)
        rec["parts_ms"] = split
        rec["unfused_gpu_ms"] = _gpu_ms(device, [x for _, ds in separate for x in ds])
    return rec


def _gpu_ms(device, dispatches, warm: float = 0.3) -> float:
    """Best GPU ms of `dispatches`, recorded REPEAT times back to back in one submission."""
    with device.current():
        sub = device.record(dispatches * REPEAT)
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < warm:  # clocks up before timing
        sub.run()
    return best_of(lambda: sub.run(timed=True), 3) / 1e6 / REPEAT


def _scipy_conv(image, kernel):
    import scipy.signal
    return scipy.signal.fftconvolve(image.astype(np.float64), kernel.astype(np.float64), "same")


def _cupy_case(case: dict, calls: int) -> dict | None:
    """cupyx's time for the case, None where CuPy or its GPU is missing."""
    try:
        import cupy
        import cupyx.scipy.fft as cfft
        import cupyx.scipy.signal as csig
        cupy.cuda.runtime.getDeviceCount()
    except Exception:
        return None
    rng = np.random.default_rng(0)
    image = cupy.asarray(rng.standard_normal((case["n"], case["n"])).astype(np.float32))
    if case["fn"] == "fftconvolve":
        kernel = cupy.asarray(rng.standard_normal((case["k"], case["k"])).astype(np.float32))

        def call():
            return csig.fftconvolve(image, kernel, mode="same")
    else:
        fn = getattr(cfft, case["fn"])

        def call():
            return fn(image, type=2)
    gpu_ms = cupy_ms(cupy, call, 3)
    loop = loop_us(call, cupy.cuda.Device().synchronize, calls=calls)
    return {"gpu_ms": gpu_ms, "loop_us": loop["us_per_call"], "dtype": str(call().dtype)}


def run(quick: bool = False, backends=("vulkan", "gl"), calls: int = 200,
        out_dir: Path | None = Path("bench/results"), only: list[dict] | None = None
        ) -> list[dict]:
    """Time `only` (dicts as cases() makes them) or cases(quick); print and record them."""
    records = []
    for case in only or cases(quick):
        ref = _cupy_case(case, calls)
        for backend in backends:
            rec = {"case": case["name"], "backend": backend,
                   **_pyfftgl_case(case, backend, calls)}
            if ref is not None:
                rec.update(cupyx_gpu_ms=ref["gpu_ms"], cupyx_loop_us=ref["loop_us"],
                           gpu_ratio=rec["gpu_ms"] / ref["gpu_ms"],
                           loop_ratio=rec["loop_us"] / ref["loop_us"])
            records.append(rec)
            cupy_part = "" if ref is None else (
                f"  cupyx {ref['gpu_ms']:.4f} ms / {ref['loop_us']:.1f} us  "
                f"(x{rec['gpu_ratio']:.2f} GPU, x{rec['loop_ratio']:.2f} loop)")
            parts = "".join(f" {k} {v:.4f}" for k, v in rec.get("parts_ms", {}).items())
            if "unfused_gpu_ms" in rec:
                parts += f"; unfused total {rec['unfused_gpu_ms']:.4f}"
            print(f"{case['name']:34s} {backend:6s} GPU {rec['gpu_ms']:.4f} ms  loop "
                  f"{rec['loop_us']:.1f} us/call  rel L2 {rec['rel_l2_vs_scipy']:.1e}{cupy_part}"
                  + (f"  [parts ms:{parts}]" if parts else ""), flush=True)
    if out_dir is not None and records:
        out_dir.mkdir(parents=True, exist_ok=True)
        path = out_dir / f"realtransforms-{wisdom.device_slug(records[0]['device'])}.json"
        path.write_text(json.dumps(records, indent=1) + "\n")
        print(f"wrote {path}")
    return records


def cli(args) -> int:
    records = run(quick=args.quick, backends=args.backends, calls=args.loop_calls,
                  out_dir=None if args.no_write else Path(args.out))
    return 0 if records else 2
