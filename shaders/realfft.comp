// The real-data steps around a complex FFT along one axis of a [batch][length][INNER] array.
// One invocation per output element.
//
// MODE 1, UNPACK (forward, even n): the n real samples of a line were transformed as n/2 complex
//   values z[m] = x[2m] + i x[2m+1]; with h = n/2 and Z = FFT_h(z) (Z[h] = Z[0]),
//   X[k] = (Z[k] + conj Z[h-k]) / 2 + W_n^k (Z[k] - conj Z[h-k]) / 2i,  k = 0..h.
// MODE 2, PACK (inverse, even n): the reverse, Z[k] = Fe + i Fo with Fe = (X[k] + conj X[h-k]) / 2
//   and Fo = W_n^-k (X[k] - conj X[h-k]) / 2, k = 0..h-1; an inverse FFT_h of Z is then x.
// MODE 3, CROP (forward, any n): Y[k] = X[k] for k <= n/2 of a full complex transform.
// MODE 4, EXTEND (inverse, any n): Y[k] = X[k] for k <= n/2, conj X[n-k] above (Hermitian), so
//   that a complex inverse FFT of Y is real.
//
// Preamble: MODE, NREAL (n), IN_AXIS / OUT_AXIS (axis lengths of the two buffers), INNER,
// TW_OFFSET (exp(-2 pi i m / n), m < n, in the table buffer), SCALE.

#include "common.glsl"

#if !defined(MODE) || !defined(NREAL) || !defined(IN_AXIS) || !defined(OUT_AXIS) || !defined(INNER)
#error "realfft.comp needs MODE, NREAL, IN_AXIS, OUT_AXIS and INNER from the preamble"
#endif

// GROUP: invocations per workgroup; the preamble gives fewer where the device allows fewer.
#ifndef GROUP
#define GROUP 256
#endif
layout(local_size_x = GROUP, local_size_y = 1, local_size_z = 1) in;

// restrict: a pass never reads the buffer it writes (plans use distinct buffers, in-place calls
// are refused), which lets the compiler keep loads in the read-only cache path.
layout(std430, binding = 0) restrict readonly buffer Src { VEC2 src[]; };
layout(std430, binding = 1) restrict writeonly buffer Dst { VEC2 dst[]; };
layout(std430, binding = 2) restrict readonly buffer Tables { VEC2 table[]; };

PUSH_CONSTANTS(uint lines_total; uint group_base; uint in_len; uint in_batch; uint out_len;
               uint out_batch;)

VEC2 conj(VEC2 a) { return VEC2(a.x, -a.y); }

VEC2 at(uint b, uint k, uint inner) { return src[(b * IN_AXIS + k) * INNER + inner]; }

void main() {
    // lines_total counts output elements here.
    uint e = flat_group_id(pc.group_base) * uint(GROUP) + gl_LocalInvocationID.x;
    if (e >= pc.lines_total) return;
    uint inner = e % INNER;
    uint k = (e / INNER) % OUT_AXIS;
    uint b = e / (INNER * OUT_AXIS);
    VEC2 y;
#if MODE == 1 || MODE == 2
    const uint h = NREAL / 2u;
    VEC2 p = at(b, k % h, inner);
    VEC2 q = conj(at(b, (h - k) % h, inner));
    VEC2 w = table[TW_OFFSET + k];
#if MODE == 1
    // (p - q) / 2i = -i (p - q) / 2
    VEC2 d = 0.5 * (p - q);
    y = 0.5 * (p + q) + cmul(w, VEC2(d.y, -d.x));
#else
    if (k == 0u) {
        // X[h - 0] is the Nyquist bin. A real signal's DC and Nyquist bins are real; like
        // numpy (pocketfft) we ignore their imaginary parts when the input is not Hermitian.
        p = VEC2(p.x, 0.0);
        q = VEC2(at(b, h, inner).x, 0.0);
    }
    VEC2 fe = 0.5 * (p + q);
    VEC2 fo = cmul(0.5 * (p - q), conj(w));
    y = fe + VEC2(-fo.y, fo.x);
#endif
#elif MODE == 3
    y = at(b, k, inner);
#else
    y = k <= NREAL / 2u ? at(b, k, inner) : conj(at(b, NREAL - k, inner));
#endif
    dst[e] = y * SCALE;
}
