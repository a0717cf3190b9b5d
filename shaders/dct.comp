// The passes before and after the complex FFT of a DCT/DST along one axis
// (pyfftgl/planner/realtransforms.py has the algorithms and builds the tables).
//
// STAGE_PRE: reals (outer, nsrc, inner) -> complex work (outer, m, inner): the input read
//   with zero padding / cropping to n, reordered, weighted, twiddled and packed.
// STAGE_POST: complex work (outer, m, inner) -> reals (outer, n, inner).
// Every complex line carries one real line: a non-finite value stays in its line.
// MODE 0: generic (types 1 and 4): a complex line of length m = 2L.
// MODE 1: Makhoul DCT-II (and DST-II, REVERSED); MODE 2: Makhoul DCT-III (and DST-III).
//   HALVED (even n): the line's n reordered reals as m = n/2 complex values, unpacked in the
//   post pass (type 2) or packed from the Hermitian spectrum in the pre pass (type 3);
//   else a complex line of length n with a zero imaginary part.
// Table (binding 2) at pc.tbl: three sections of n complex values (pre, pre2 or post2, post).

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
#if HALVED && MODE == 0
#error "HALVED is for the Makhoul modes"
#endif

layout(local_size_x = LOCAL, local_size_y = 1, local_size_z = 1) in;

#if defined(STAGE_PRE) && !defined(PREV_MODE)
layout(std430, binding = 0) restrict readonly buffer Src { REAL src[]; };
#else
layout(std430, binding = 0) restrict readonly buffer Src { VEC2 spec[]; };
#endif
#ifdef STAGE_PRE
layout(std430, binding = 1) restrict writeonly buffer Dst { VEC2 dst[]; };
#else
layout(std430, binding = 1) restrict writeonly buffer Dst { REAL dst[]; };
#endif
layout(std430, binding = 2) restrict readonly buffer Tables { VEC2 table[]; };

PUSH_CONSTANTS(uint total; uint group_base; uint outer; uint nsrc; uint n; uint m; uint inner;
               uint tbl; uint pn; uint pm; uint pinner; uint ptbl;)

// Makhoul's order: even samples ascending, then odd samples descending; unperm inverts it.
uint perm(uint j, uint n) { return j < (n + 1u) / 2u ? 2u * j : 2u * (n - 1u - j) + 1u; }
uint unperm(uint t, uint n) { return (t & 1u) == 0u ? t >> 1u : n - 1u - (t >> 1u); }

#if defined(STAGE_POST) || defined(PREV_MODE)
// Real t of line (o, i) of an axis's post pass (mode, halved, rev: its MODE, HALVED, REVERSED;
// n, m, inner, tbl: its sizes), read from that axis's FFT output spec (outer, m, inner).
REAL post_at(int mode, bool halved, bool rev, uint n, uint m, uint inner, uint tbl, uint o,
             uint t, uint i) {
    uint base = o * m * inner + i;
    if (mode == 2) {  // Makhoul III: v[j] with perm(j) = t, v[2q] + i v[2q + 1] where halved
        uint j = unperm(t, n);
        VEC2 z = spec[base + (halved ? j >> 1u : j) * inner];
        return table[tbl + 2u * n + t].x * ((halved && (j & 1u) != 0u) ? z.y : z.x);
    }
    uint k = (mode == 1 && rev) ? n - 1u - t : t;
    uint kk = halved ? k % m : k;
    VEC2 z = spec[base + kk * inner], c = table[tbl + 2u * n + k];
    REAL y = c.x * z.x - c.y * z.y;  // Re(c Z[k])
    if (halved) {  // + Re(e2 conj Z[h - k]): the line's unpack folded into the twiddle
        VEC2 zc = spec[base + ((m - kk) % m) * inner], e2 = table[tbl + n + k];
        y += e2.x * zc.x + e2.y * zc.y;
    }
    return y;
}
#endif

#ifdef STAGE_PRE
#ifdef PREV_MODE
// The previous axis's post pass evaluated for the one real e of its output that this pass
// reads: the reals between the two axes are never stored.
REAL load(uint e) {
    uint i = e % pc.pinner, t = (e / pc.pinner) % pc.pn, o = e / (pc.pinner * pc.pn);
    return post_at(PREV_MODE, PREV_HALVED != 0, PREV_REVERSED != 0, pc.pn, pc.pm, pc.pinner,
                   pc.ptbl, o, t, i);
}
#else
REAL load(uint e) { return src[e]; }
#endif

// Sample j of real line (o, i), zero beyond the input's length.
REAL line_at(uint o, uint i, uint j) {
    return j < pc.nsrc ? load((o * pc.nsrc + j) * pc.inner + i) : REAL(0);
}

// Makhoul III's x'[k]: the input, reversed for DST-III.
REAL xp(uint o, uint i, uint k) {
#if REVERSED
    return line_at(o, i, pc.n - 1u - k);
#else
    return line_at(o, i, k);
#endif
}
#endif

void main() {
    uint g = flat_group_id(pc.group_base) * uint(LOCAL) + gl_LocalInvocationID.x;
    if (g >= pc.total) return;
#ifdef STAGE_PRE
    uint i = g % pc.inner, j = (g / pc.inner) % pc.m, o = g / (pc.inner * pc.m);
#if MODE == 0
    VEC2 v = VEC2(0);
    if (j < pc.n) v = line_at(o, i, j) * table[pc.tbl + j];
    dst[g] = v;
#elif MODE == 1 && HALVED
    uint s0 = perm(2u * j, pc.n), s1 = perm(2u * j + 1u, pc.n);
    dst[g] = VEC2(line_at(o, i, s0) * table[pc.tbl + s0].x,
                  line_at(o, i, s1) * table[pc.tbl + s1].x);
#elif MODE == 1
    uint s = perm(j, pc.n);
    dst[g] = VEC2(line_at(o, i, s) * table[pc.tbl + s].x, REAL(0));
#elif HALVED  // Z[j] from x'[j], x'[n - j], x'[j + h], x'[h - j] (pyfftgl's tables)
    uint h = pc.m;
    VEC2 z = table[pc.tbl + j] * xp(o, i, j) + table[pc.tbl + pc.n + j] * xp(o, i, j + h)
           + table[pc.tbl + pc.n + h + j] * xp(o, i, h - j);
    if (j > 0u) z += table[pc.tbl + h + j] * xp(o, i, pc.n - j);
    dst[g] = z;
#else  // V[j] = P[j] x'[j] + Q[j] x'[n - j]
    VEC2 z = table[pc.tbl + j] * xp(o, i, j);
    if (j > 0u) z += table[pc.tbl + pc.n + j] * xp(o, i, pc.n - j);
    dst[g] = z;
#endif
#else  // STAGE_POST
    uint i = g % pc.inner, t = (g / pc.inner) % pc.n, o = g / (pc.inner * pc.n);
    dst[g] = post_at(MODE, HALVED != 0, REVERSED != 0, pc.n, pc.m, pc.inner, pc.tbl, o, t, i);
#endif
}
