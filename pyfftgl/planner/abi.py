"""What the kernels in shaders/ and the Python side must agree on, in one place.

The kernels spell these out in GLSL (their push-constant blocks, realfft.comp's workgroup, the
`#error` guard on workgroup size); tests/test_planner.py reads the shader sources and checks that
they match the values here.
"""
from __future__ import annotations

# The uint32 push constants of stockham.comp and realfft.comp, in declaration order.
PUSH_NAMES = ("lines_total", "group_base", "in_len", "in_batch", "out_len", "out_batch")
# Bytes of one complex64 value (a vec2 slot) and of one float (a slot of exchanges in halves).
COMPLEX64_BYTES = 8
FLOAT_BYTES = 4
# Invocations per workgroup of realfft.comp (its local_size_x).
REALFFT_GROUP = 256
# The largest workgroup stockham.comp accepts (its `#error` guard on THREADS * LINES).
MAX_WORKGROUP_INVOCATIONS = 1024
# Four-step twiddles W^(d k) = HI[d][k / LEN] * LO[d][k % LEN]: a warp's consecutive k share d.
FOURSTEP_LO_LEN = 32
