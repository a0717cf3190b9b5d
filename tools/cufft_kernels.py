"""The kernels cuFFT runs for the benchmark cases that pyfftgl has not matched, and how each is
launched: grid, block, registers per thread and shared memory per block (torch.profiler's
CUPTI records). How many passes cuFFT makes, and with how much shared memory per workgroup,
says whether a kernel within Vulkan's and GL's limits (48 KB per workgroup on NVIDIA) can do
the same. With --pyfftgl, pyfftgl's Vulkan plan of each case beside it, in the same process:
both loops (wall us per call of back-to-back calls ended by one finish), and each pass alone
(GPU us, bytes moved and bandwidth, registers and shared memory from the driver's pipeline
statistics). Run on the GPU machine: python tools/cufft_kernels.py [--pyfftgl]
"""
from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

from pyfftgl.bench.timing import loop_us  # no device: the timing helpers alone

CASES = [  # (name, shape, function)
    ("fft2 1024x1024", (1024, 1024), "fft2"),
    ("fft2 2048x2048", (2048, 2048), "fft2"),
    ("fft2 4096x4096", (4096, 4096), "fft2"),
    ("rfft2 1024x1024", (1024, 1024), "rfft2"),
    ("rfft2 4096x4096", (4096, 4096), "rfft2"),
    ("fft 64x1048576", (64, 1 << 20), "fft"),
    ("fft 16x4194304", (16, 1 << 22), "fft"),
]


def cufft_kernels(f, x, trace_path: Path) -> None:
    for _ in range(3):
        f(x)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        f(x)
        torch.cuda.synchronize()
    prof.export_chrome_trace(str(trace_path))
    for ev in json.loads(trace_path.read_text()).get("traceEvents", []):
        if ev.get("cat") == "kernel":
            args = ev.get("args", {})
            print(f"  {ev.get('dur', 0):8.1f} us grid {args.get('grid')} "
                  f"block {args.get('block')} "
                  f"regs {args.get('registers per thread')} smem {args.get('shared memory')} "
                  f"occ {args.get('est. achieved occupancy %')} {ev.get('name', '')[:70]}")


def pyfftgl_passes(fn: str, x, torch_us: float) -> None:
    """pyfftgl's Vulkan plan of the same transform: its loop against torch's, each pass alone."""
    import pyfftgl
    from pyfftgl.bench.timing import pass_ms
    from pyfftgl.bench.vkstats import kernel_statistics
    dev = pyfftgl.get_device("vulkan")
    host = x.cpu().numpy()
    d = pyfftgl.asarray(host, backend="vulkan")
    p = pyfftgl.plan(host.shape, host.dtype, kind=fn, backend="vulkan")
    o = p(d)
    us = loop_us(lambda: p(d, out=o), dev.finish)["us_per_call"]
    print(f"  pyfftgl Vulkan loop {us:.1f} us, torch {torch_us:.1f} ({us / torch_us:.3f}x)")
    for dp in p.device_plans:
        per_unit = dict(dp.spec.buffers)
        for q, ms in zip(dp.spec.passes, pass_ms(dp)):
            moved = ((per_unit[q.src_buf] + per_unit[q.dst_buf]) * dp.spec.units
                     * dp.element_bytes)
            stats = kernel_statistics(q.defines({t: 0 for t in q.tables()}), q.kernel)[0]["stats"]
            print(f"  pass n={q.n} {list(getattr(q, 'radices', []))} "
                  f"{getattr(q, 'threads', '-')} x {getattr(q, 'lines', '-')} lines: "
                  f"{ms * 1e3:.1f} us, {moved / 2**20:.0f} MiB, {moved / ms / 1e9:.2f} TB/s, "
                  f"regs {stats.get('Register Count')} smem {stats.get('Shared Memory Size')}")
    d.close()
    o.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pyfftgl", action="store_true", help="pyfftgl's Vulkan passes beside")
    args = ap.parse_args()
    print(torch.cuda.get_device_name(), "torch", torch.__version__, "CUDA", torch.version.cuda)
    trace_path = Path(tempfile.mkdtemp()) / "trace.json"
    for name, shape, fn in CASES:
        real = fn.startswith("r")
        x = torch.randn(shape, device="cuda", dtype=torch.float32)
        if not real:
            x = torch.complex(x, torch.randn_like(x))
        f = getattr(torch.fft, fn)
        print(f"== {name}")
        cufft_kernels(f, x, trace_path)
        if args.pyfftgl:
            torch_us = loop_us(lambda: f(x), torch.cuda.synchronize)["us_per_call"]
            pyfftgl_passes(fn, x, torch_us)


if __name__ == "__main__":
    main()
