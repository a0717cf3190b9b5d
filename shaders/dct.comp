// The passes before and after the complex FFT of a DCT/DST along one axis
// (pyfftgl/planner/realtransforms.py has the algorithms and builds the tables).
//
// STAGE_PRE: reals (outer, nsrc, inner) -> complex work (lines_p, m, lines_q): the input read
//   with zero padding / cropping to n, reordered, weighted and twiddled.
// STAGE_POST: complex work (lines_p, m, lines_q) -> reals (outer, n, inner).
// MODE 0: generic (types 1 and 4): one real line per complex line of length m = 2L.
// MODE 1: Makhoul DCT-II (and DST-II, REVERSED); MODE 2: Makhoul DCT-III (and DST-III):
//   two real lines per complex line of length n, PAIR_INNER: neighbouring inner lines, else
//   neighbouring outer lines.
// Table (binding 2) at pc.tbl: three sections of n complex values (pre, pre2, post).

#include "common.glsl"

#ifndef LOCAL
#define LOCAL 256
#endif
#if !defined(STAGE_PRE) && !defined(STAGE_POST)
#error "define STAGE_PRE or STAGE_POST"
#endif
#if MODE < 0 || MODE > 2
#error "MODE is 0, 1 or 2"
#endif

layout(local_size_x = LOCAL, local_size_y = 1, local_size_z = 1) in;

#if defined(STAGE_PRE) && defined(PREV_MODE)
layout(std430, binding = 0) restrict readonly buffer Src { VEC2 prev[]; };
layout(std430, binding = 1) restrict writeonly buffer Dst { VEC2 dst[]; };
#elif defined(STAGE_PRE)
layout(std430, binding = 0) restrict readonly buffer Src { REAL src[]; };
layout(std430, binding = 1) restrict writeonly buffer Dst { VEC2 dst[]; };
#else
layout(std430, binding = 0) restrict readonly buffer Src { VEC2 src[]; };
layout(std430, binding = 1) restrict writeonly buffer Dst { REAL dst[]; };
#endif
layout(std430, binding = 2) restrict readonly buffer Tables { VEC2 table[]; };

PUSH_CONSTANTS(uint total; uint group_base; uint outer; uint nsrc; uint n; uint m; uint inner;
               uint lines_p; uint lines_q; uint tbl; uint pn; uint pm; uint pinner; uint pq;
               uint ptbl;)

// Makhoul's order: even samples ascending, then odd samples descending.
uint perm(uint j) { return j < (pc.n + 1u) / 2u ? 2u * j : 2u * (pc.n - 1u - j) + 1u; }

// The two real lines (a, b) of complex line (p, q); has_b is false for an odd outer's last.
void line_pair(uint p, uint q, out uint oa, out uint ia, out uint ob, out uint ib, out bool has_b) {
#if PAIR_INNER
    oa = p; ob = p; ia = 2u * q; ib = ia + 1u; has_b = true;
#else
    oa = 2u * p; ob = oa + 1u; ia = q; ib = q; has_b = ob < pc.outer;
#endif
}

#ifdef STAGE_PRE
#ifdef PREV_MODE
// PREV_*: the previous axis's post pass (its MODE, PAIR_INNER, REVERSED; its sizes in pc.p*),
// evaluated for the one real e of its output that this pass reads: the reals between the two
// axes are never stored.
REAL load(uint e) {
    uint i = e % pc.pinner, t = (e / pc.pinner) % pc.pn, o = e / (pc.pinner * pc.pn);
#if PREV_MODE == 0
    VEC2 z = prev[(o * pc.pm + t) * pc.pinner + i], c = table[pc.ptbl + 2u * pc.pn + t];
    return c.x * z.x - c.y * z.y;
#else
#if PREV_PAIR_INNER
    uint p = o, q = i >> 1u;
    bool is_b = (i & 1u) != 0u;
#else
    uint p = o >> 1u, q = i;
    bool is_b = (o & 1u) != 0u;
#endif
#if PREV_MODE == 1
#if PREV_REVERSED
    uint k = pc.pn - 1u - t;
#else
    uint k = t;
#endif
    VEC2 z = prev[(p * pc.pn + k) * pc.pq + q];
    VEC2 zr = prev[(p * pc.pn + (pc.pn - k) % pc.pn) * pc.pq + q];
    zr.y = -zr.y;
    VEC2 v = is_b ? VEC2(z.y - zr.y, zr.x - z.x) * REAL(0.5) : (z + zr) * REAL(0.5);
    VEC2 c = table[pc.ptbl + 2u * pc.pn + k];
    return c.x * v.x - c.y * v.y;
#else  // Makhoul III: output t came from FFT index m with perm(m) = t
    uint mm = (t & 1u) == 0u ? t >> 1u : pc.pn - 1u - (t >> 1u);
    VEC2 z = prev[(p * pc.pn + mm) * pc.pq + q];
    return table[pc.ptbl + 2u * pc.pn + t].x * (is_b ? z.y : z.x);
#endif
#endif
}
#else
REAL load(uint e) { return src[e]; }
#endif

// Sample j of real line (o, i), zero beyond the input's length.
REAL line_at(uint o, uint i, uint j) {
    return j < pc.nsrc ? load((o * pc.nsrc + j) * pc.inner + i) : REAL(0);
}
#endif

void main() {
    uint g = flat_group_id(pc.group_base) * uint(LOCAL) + gl_LocalInvocationID.x;
    if (g >= pc.total) return;
#ifdef STAGE_PRE
    uint q = g % pc.lines_q, j = (g / pc.lines_q) % pc.m, p = g / (pc.lines_q * pc.m);
#if MODE == 0
    VEC2 v = VEC2(0);
    if (j < pc.n) v = line_at(p, q, j) * table[pc.tbl + j];
    dst[g] = v;
#else
    uint oa, ia, ob, ib;
    bool has_b;
    line_pair(p, q, oa, ia, ob, ib, has_b);
#if MODE == 1
    uint s = perm(j);
    REAL xb = has_b ? line_at(ob, ib, s) : REAL(0);
    dst[g] = VEC2(line_at(oa, ia, s), xb) * table[pc.tbl + s].x;
#else
#if REVERSED
    uint s0 = pc.n - 1u - j, s1 = j - 1u;  // x'[k] = x[n - 1 - k]
#else
    uint s0 = j, s1 = pc.n - j;
#endif
    VEC2 P = table[pc.tbl + j], Q = table[pc.tbl + pc.n + j];
    VEC2 va = P * line_at(oa, ia, s0), vb = VEC2(0);
    if (has_b) vb = P * line_at(ob, ib, s0);
    if (j > 0u) {
        va += Q * line_at(oa, ia, s1);
        if (has_b) vb += Q * line_at(ob, ib, s1);
    }
    dst[g] = VEC2(va.x - vb.y, va.y + vb.x);  // va + i vb
#endif
#endif
#else  // STAGE_POST
#if MODE == 0
    uint i = g % pc.inner, k = (g / pc.inner) % pc.n, o = g / (pc.inner * pc.n);
    VEC2 z = src[(o * pc.m + k) * pc.inner + i], c = table[pc.tbl + 2u * pc.n + k];
    dst[g] = c.x * z.x - c.y * z.y;
#else
    uint q = g % pc.lines_q, k = (g / pc.lines_q) % pc.n, p = g / (pc.lines_q * pc.n);
    uint oa, ia, ob, ib;
    bool has_b;
    line_pair(p, q, oa, ia, ob, ib, has_b);
    VEC2 z = src[g];
#if MODE == 1
    VEC2 zr = src[(p * pc.n + (pc.n - k) % pc.n) * pc.lines_q + q];
    zr.y = -zr.y;  // conj(Z[n - k])
    VEC2 va = (z + zr) * REAL(0.5), d = (z - zr) * REAL(0.5);
    VEC2 vb = VEC2(d.y, -d.x);  // -i (Z - conj Z[n - k]) / 2
    VEC2 c = table[pc.tbl + 2u * pc.n + k];
#if REVERSED
    uint t = pc.n - 1u - k;
#else
    uint t = k;
#endif
    dst[(oa * pc.n + t) * pc.inner + ia] = c.x * va.x - c.y * va.y;
    if (has_b) dst[(ob * pc.n + t) * pc.inner + ib] = c.x * vb.x - c.y * vb.y;
#else
    uint t = perm(k);
    REAL s = table[pc.tbl + 2u * pc.n + t].x;
    dst[(oa * pc.n + t) * pc.inner + ia] = s * z.x;
    if (has_b) dst[(ob * pc.n + t) * pc.inner + ib] = s * z.y;
#endif
#endif
#endif
}
