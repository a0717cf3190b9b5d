// Element-wise passes of pyfftgl.signal's convolutions.
// STAGE_WINDOW: reals (outer, ns1, ns2, inner) -> (outer, n1, n2, inner),
//   y[o, j, l, i] = x[o, j + off1, l + off2, i] where that is inside the input, else 0: the zero
//   padding before the FFT and the mode's crop after it, two neighbouring axes in one pass.
// STAGE_CMUL: the product of two spectra, complex element by element.

#include "common.glsl"

#ifndef LOCAL
#define LOCAL 256
#endif

layout(local_size_x = LOCAL, local_size_y = 1, local_size_z = 1) in;

PUSH_CONSTANTS(uint total; uint group_base; uint ns1; uint n1; uint off1; uint ns2; uint n2;
               uint off2; uint inner;)

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
    uint i = g % pc.inner, r = g / pc.inner;
    uint l = r % pc.n2, j = (r / pc.n2) % pc.n1, o = r / (pc.n2 * pc.n1);
    uint s1 = j + pc.off1, s2 = l + pc.off2;
    dst[g] = s1 < pc.ns1 && s2 < pc.ns2
        ? src[((o * pc.ns1 + s1) * pc.ns2 + s2) * pc.inner + i] : REAL(0);
#else
    dst[g] = cmul(src[g], other[g]);
#endif
}
