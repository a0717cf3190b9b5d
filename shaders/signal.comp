// Element-wise passes of pyfftgl.signal's convolutions.
// STAGE_WINDOW: reals (outer, ns1, ns2, inner) -> (outer, n1, n2, inner),
//   y[o, j, l, i] = x[o, j + off1, l + off2, i] where that is inside the input, else 0: the zero
//   padding before the FFT and the mode's crop after it, two neighbouring axes in one pass.
// STAGE_CMUL: the product of two spectra, complex element by element; with CMUL_PERIOD the
//   second is one block's spectrum of n1 values, the same for every block (overlap-add).
// STAGE_CMUL_DFT: the product of a spectrum (outer, ns1, inner) with the DFT along ns1 of a
//   kernel's first n1 rows (outer, n1, inner), the rest zero: other[o, k, i] =
//   sum over j < n1 of rows[o, j, i] W^(j k mod ns1), W^m the table's exp(-2 pi i m / ns1);
//   n2 blocks of DFT_OUTPUTS values of k <= ns1 / 2 (and their mirrors ns1 - k) along ns1.
// STAGE_BLOCKS: reals (outer, ns1, inner) -> (outer, n1, n2, inner), overlap-add's blocks:
//   y[o, b, t, i] = x[o, b ns2 + t, i] for t < ns2 inside the input, else 0.
// STAGE_OVERLAP_ADD: the reverse, the blocks' convolutions summed where they overlap and the
//   mode's part cut out: reals (outer, ns1, n2, inner) -> (outer, n1, inner),
//   y[o, j, i] = sum over blocks b with 0 <= s - b ns2 < n2 of x[o, b, s - b ns2, i], s = j + off1.

#include "common.glsl"

#ifndef LOCAL
#define LOCAL 256
#endif

layout(local_size_x = LOCAL, local_size_y = 1, local_size_z = 1) in;

PUSH_CONSTANTS(uint total; uint group_base; uint ns1; uint n1; uint off1; uint ns2; uint n2;
               uint off2; uint inner;)

#if defined(STAGE_WINDOW) || defined(STAGE_BLOCKS) || defined(STAGE_OVERLAP_ADD)
layout(std430, binding = 0) restrict readonly buffer Src { REAL src[]; };
layout(std430, binding = 1) restrict writeonly buffer Dst { REAL dst[]; };
#elif defined(STAGE_CMUL) || defined(STAGE_CMUL_DFT)
layout(std430, binding = 0) restrict readonly buffer Src { VEC2 src[]; };
layout(std430, binding = 1) restrict writeonly buffer Dst { VEC2 dst[]; };
layout(std430, binding = 2) restrict readonly buffer Other { VEC2 other[]; };
#ifdef STAGE_CMUL_DFT
layout(std430, binding = 3) restrict readonly buffer Roots { VEC2 roots[]; };
shared VEC2 tile[DFT_ROWS_MAX * DFT_OUTPUTS];  // the block's roots, W^(j k) at j DFT_OUTPUTS + t
#endif
#else
#error "define STAGE_WINDOW, STAGE_CMUL, STAGE_CMUL_DFT, STAGE_BLOCKS or STAGE_OVERLAP_ADD"
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
#elif defined(STAGE_BLOCKS)
    uint i = g % pc.inner, r = g / pc.inner;
    uint t = r % pc.n2, b = (r / pc.n2) % pc.n1, o = r / (pc.n2 * pc.n1);
    uint s = b * pc.ns2 + t;
    dst[g] = t < pc.ns2 && s < pc.ns1 ? src[(o * pc.ns1 + s) * pc.inner + i] : REAL(0);
#elif defined(STAGE_OVERLAP_ADD)
    uint i = g % pc.inner, r = g / pc.inner;
    uint j = r % pc.n1, o = r / pc.n1;
    uint s = j + pc.off1;
    uint b = min(s / pc.ns2, pc.ns1 - 1u);
    REAL acc = REAL(0);
    // the blocks whose span [b ns2, b ns2 + n2) holds s, the last first
    for (uint t = s - b * pc.ns2; t < pc.n2; t += pc.ns2) {
        acc += src[((o * pc.ns1 + b) * pc.n2 + t) * pc.inner + i];
        if (b == 0u) break;
        b -= 1u;
    }
    dst[g] = acc;
#elif defined(STAGE_CMUL_DFT)
    // A workgroup per (o, block of DFT_OUTPUTS values k <= ns1 / 2, LOCAL values of i), each k
    // with its mirror ns1 - k (whose roots are the conjugates): each row read once for all of
    // them, the block's roots read once into shared memory for the workgroup.
    uint chunks = (pc.inner + uint(LOCAL) - 1u) / uint(LOCAL);
    uint wg = g / uint(LOCAL), i = (wg % chunks) * uint(LOCAL) + gl_LocalInvocationID.x;
    uint r = wg / chunks, k0 = (r % pc.n2) * uint(DFT_OUTPUTS), o = r / pc.n2;
    uint half_n = pc.ns1 / 2u;
    for (uint q = gl_LocalInvocationID.x; q < pc.n1 * uint(DFT_OUTPUTS); q += uint(LOCAL)) {
        uint j = q / uint(DFT_OUTPUTS), k = min(k0 + q % uint(DFT_OUTPUTS), half_n);
        tile[q] = roots[(j * k) % pc.ns1];
    }
    barrier();
    if (i >= pc.inner) return;
    uint row = o * pc.n1 * pc.inner + i;
    VEC2 up[DFT_OUTPUTS], down[DFT_OUTPUTS];
    for (int t = 0; t < DFT_OUTPUTS; ++t) {
        up[t] = VEC2(0);
        down[t] = VEC2(0);
    }
    for (uint j = 0u; j < pc.n1; ++j) {
        VEC2 x = other[row + j * pc.inner];
        for (int t = 0; t < DFT_OUTPUTS; ++t) {
            VEC2 w = tile[j * uint(DFT_OUTPUTS) + uint(t)];
            REAL rr = x.x * w.x, ii = x.y * w.y, ri = x.x * w.y, ir = x.y * w.x;
            up[t] += VEC2(rr - ii, ri + ir);
            down[t] += VEC2(rr + ii, ir - ri);
        }
    }
    for (int t = 0; t < DFT_OUTPUTS; ++t) {
        uint k = k0 + uint(t);
        if (k <= half_n) {
            uint e = (o * pc.ns1 + k) * pc.inner + i;
            dst[e] = cmul(src[e], up[t]);
            if (k != 0u && 2u * k != pc.ns1) {
                e = (o * pc.ns1 + pc.ns1 - k) * pc.inner + i;
                dst[e] = cmul(src[e], down[t]);
            }
        }
    }
#elif defined(CMUL_PERIOD)
    dst[g] = cmul(src[g], other[g % pc.n1]);
#else
    dst[g] = cmul(src[g], other[g]);
#endif
}
