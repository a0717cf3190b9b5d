"""GPU time per dependent dispatch, on each API, by what surrounds the dispatch.

A chain of K dispatches of a small kernel, each ordered after the one before, is timed on the
GPU (Vulkan timestamps, a GL_TIME_ELAPSED query); the time per dispatch is the chain's over K.
First through pyfftgl's own backends (copy.comp recorded as a plan's passes are: a barrier
between dispatches), one workgroup and 2048 (8 MB in, as a pass of fft2 1024^2 reads);
then on GL alone with one thing changed at a time: the memory barrier's bits (all, the SSBO bit,
none, glMemoryBarrierByRegion), storage buffers rebound before every dispatch, the program
switched, a uniform set. It answers where the time of a small 2D transform goes beyond its
kernels (README). The GL variants moved by up to 2 us between runs of the same build on the
H100: repeat a run before reading a difference. Run on the GPU machine:
python tools/dispatch_cost.py
"""
from __future__ import annotations

import ctypes

import moderngl
import numpy as np

from pyfftgl.backends.gl import gl_proc

GL_SHADER_STORAGE_BARRIER_BIT = 0x2000
GL_ALL_BARRIER_BITS = 0xFFFFFFFF

SRC = """#version 430
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer A { vec2 a[]; };
layout(std430, binding = 1) writeonly buffer B { vec2 b[]; };
uniform uint salt;
void main() {
    uint i = gl_GlobalInvocationID.x; b[i] = a[i] * 1.0001 + vec2(float(salt & %du), 0.0); }
"""


def backend_chain(k: int = 200) -> None:
    """Dependent dispatches of copy.comp as pyfftgl records a plan's passes, per API."""
    from pyfftgl import planner, kernels
    from pyfftgl.backends import available
    from pyfftgl.backends.base import Dispatch
    from pyfftgl.bench import best_of, random_fill
    for name, dev in available(echo=lambda *_: None):
        prog = kernels.get_program(dev, "copy.comp", {}, planner.PUSH_NAMES)
        for groups in (1, 2048):
            count = 256 * groups  # vec4s
            a, b = dev.buffer(16 * count), dev.buffer(16 * count)
            random_fill(dev, a)
            chain = [Dispatch(prog, (groups, 1, 1), np.array([count, 0, 0, 0, 0, 0], np.uint32),
                              (src, dst))
                     for src, dst in [(a, b), (b, a)] * (k // 2)]
            sub = dev.record(chain)
            sub.run()
            dev.finish()
            us = best_of(lambda: sub.run(timed=True), 5) / k / 1e3
            print(f"{name:6s} pyfftgl chain, {groups:3d} workgroups ({16 * count >> 10} KB): "
                  f"{us:6.2f} us per dispatch")


def main(k: int = 200, reps: int = 7) -> None:
    backend_chain(k)
    ctx = moderngl.create_standalone_context(require=430, backend="egl")
    print(ctx.info["GL_RENDERER"], ctx.info["GL_VERSION"])
    progs = [ctx.compute_shader(SRC % m) for m in (1, 3)]
    # 132 groups
    bufs = [ctx.buffer(np.zeros(2 * 64 * 132, np.float32).tobytes()) for _ in range(3)]
    barrier = gl_proc("glMemoryBarrier", None, ctypes.c_uint32)
    by_region = gl_proc("glMemoryBarrierByRegion", None, ctypes.c_uint32)
    for p in progs:
        p["salt"].value = 0

    def chain(bits=GL_ALL_BARRIER_BITS, region=False, rebind=False, switch=False, uniform=False,
              groups=1):
        bufs[0].bind_to_storage_buffer(0)
        bufs[1].bind_to_storage_buffer(1)
        for n in range(k):
            if n and bits:
                (by_region if region else barrier)(bits)
            if rebind:  # ping-pong, as a plan's passes between its buffers
                bufs[n % 2].bind_to_storage_buffer(0)
                bufs[(n + 1) % 2].bind_to_storage_buffer(1)
            p = progs[n % 2] if switch else progs[0]
            if uniform:
                p["salt"].value = n
            p.run(groups)

    variants = {
        "barrier all bits": {},
        "barrier SSBO bit": {"bits": GL_SHADER_STORAGE_BARRIER_BIT},
        "ByRegion SSBO bit": {"bits": GL_SHADER_STORAGE_BARRIER_BIT, "region": True},
        "no barrier": {"bits": 0},
        "all bits + rebind": {"rebind": True},
        "all bits + program switch": {"switch": True},
        "all bits + uniform set": {"uniform": True},
        "all bits, 132 groups": {"groups": 132},
        "no barrier, 132 groups": {"bits": 0, "groups": 132},
    }
    for name, kw in variants.items():
        best = float("inf")
        for _ in range(reps):
            ctx.finish()
            q = ctx.query(time=True)
            with q:
                chain(**kw)
            ctx.finish()
            best = min(best, q.elapsed / k / 1e3)
        print(f"{name:28s} {best:7.2f} us per dispatch")


if __name__ == "__main__":
    main()
