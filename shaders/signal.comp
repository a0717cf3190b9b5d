// Element-wise passes of pyfftgl.signal's convolutions.
// STAGE_WINDOW: reals (outer, nsrc, inner) -> (outer, n, inner), y[o, j, i] = x[o, j + off, i]
//   where that is inside the input, else 0: zero padding before the FFT, the mode's crop after.
// STAGE_CMUL: the product of two spectra, complex element by element.

#include "common.glsl"

#ifndef LOCAL
#define LOCAL 256
#endif

layout(local_size_x = LOCAL, local_size_y = 1, local_size_z = 1) in;

PUSH_CONSTANTS(uint total; uint group_base; uint nsrc; uint n; uint inner; uint off;)

#if defined(STAGE_WINDOW)
layout(std430, binding = 0) restrict readonly buffer Src { REAL src[]; };
layout(std430, binding = 1) restrict writeonly buffer Dst { REAL dst[]; };
#elif defined(STAGE_CMUL)
layout(std430, binding = 0) restrict readonly buffer Src { VEC2 src[]; };
layout(std430, binding = 1) restrict writeonly buffer Dst { VEC2 dst[]; };
layout(std430, binding = 2) restrict readonly buffer Other { VEC2 other[]; };
#else
#error "define STAGE_WINDOW or STAGE_CMUL"
#endif

void main() {
    uint g = flat_group_id(pc.group_base) * uint(LOCAL) + gl_LocalInvocationID.x;
    if (g >= pc.total) return;
#ifdef STAGE_WINDOW
    uint i = g % pc.inner, j = (g / pc.inner) % pc.n, o = g / (pc.inner * pc.n);
    uint s = j + pc.off;
    dst[g] = s < pc.nsrc ? src[(o * pc.nsrc + s) * pc.inner + i] : REAL(0);
#else
    dst[g] = cmul(src[g], other[g]);
#endif
}
