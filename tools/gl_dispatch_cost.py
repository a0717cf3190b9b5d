"""GPU time per dependent dispatch on OpenGL, by what surrounds the dispatch.

A chain of K dispatches of a one-workgroup kernel (each reads what the one before wrote) is timed
with a GL_TIME_ELAPSED query, the commands all issued before the query's end; the time per
dispatch is the chain's over K. Variants change one thing each: the memory barrier's bits (all,
the SSBO bit, none, glMemoryBarrierByRegion), storage-buffer bindings changed before every
dispatch, the program switched, a uniform set. It answers where GL's extra time per pass of a
small 2D transform goes (README: GL's fft2 1024^2 is 1.4x Vulkan's on the H100, each of its two
passes about 3 us longer). Run on the GPU machine: python tools/gl_dispatch_cost.py
"""
from __future__ import annotations

import ctypes
import sys

import moderngl
import numpy as np

sys.path.insert(0, __file__.rsplit("/tools/", 1)[0])
from pyfftgl.backends.gl import gl_proc  # noqa: E402

GL_SHADER_STORAGE_BARRIER_BIT = 0x2000
GL_ALL_BARRIER_BITS = 0xFFFFFFFF

SRC = """#version 430
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer A { vec2 a[]; };
layout(std430, binding = 1) writeonly buffer B { vec2 b[]; };
uniform uint salt;
void main() { uint i = gl_GlobalInvocationID.x; b[i] = a[i] * 1.0001 + vec2(float(salt & %du), 0.0); }
"""


def main(k: int = 200, reps: int = 7) -> None:
    ctx = moderngl.create_standalone_context(require=430, backend="egl")
    print(ctx.info["GL_RENDERER"], ctx.info["GL_VERSION"])
    progs = [ctx.compute_shader(SRC % m) for m in (1, 3)]
    bufs = [ctx.buffer(np.zeros(2 * 64 * 132, np.float32).tobytes()) for _ in range(3)]  # 132 groups
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
