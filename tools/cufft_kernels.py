"""The kernels cuFFT runs for the benchmark cases that pyfftgl has not matched, and how each is
launched: grid, block, registers per thread and shared memory per block (torch.profiler's
CUPTI records). How many passes cuFFT makes, and with how much shared memory per workgroup,
says whether a kernel within Vulkan's and GL's limits (48 KB per workgroup on NVIDIA) can do
the same. Run on the GPU machine: python tools/cufft_kernels.py
"""
from __future__ import annotations

import json
import tempfile
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

CASES = [  # (name, shape, function)
    ("fft2 1024x1024", (1024, 1024), "fft2"),
    ("fft2 2048x2048", (2048, 2048), "fft2"),
    ("fft2 4096x4096", (4096, 4096), "fft2"),
    ("rfft2 1024x1024", (1024, 1024), "rfft2"),
    ("rfft2 4096x4096", (4096, 4096), "rfft2"),
    ("fft 64x1048576", (64, 1 << 20), "fft"),
    ("fft 16x4194304", (16, 1 << 22), "fft"),
]


def main() -> None:
    print(torch.cuda.get_device_name(), "torch", torch.__version__, "CUDA", torch.version.cuda)
    trace_path = Path(tempfile.mkdtemp()) / "trace.json"
    for name, shape, fn in CASES:
        real = fn.startswith("r")
        x = torch.randn(shape, device="cuda", dtype=torch.float32)
        if not real:
            x = torch.complex(x, torch.randn_like(x))
        f = getattr(torch.fft, fn)
        for _ in range(3):
            f(x)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            f(x)
            torch.cuda.synchronize()
        print(f"== {name}")
        prof.export_chrome_trace(str(trace_path))
        for ev in json.loads(trace_path.read_text()).get("traceEvents", []):
            if ev.get("cat") == "kernel":
                args = ev.get("args", {})
                print(f"  {ev.get('dur', 0):8.1f} us grid {args.get('grid')} "
                      f"block {args.get('block')} "
                      f"regs {args.get('registers per thread')} smem {args.get('shared memory')} "
                      f"occ {args.get('est. achieved occupancy %')} {ev.get('name', '')[:70]}")


if __name__ == "__main__":
    main()
