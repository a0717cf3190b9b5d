// In-register DFTs of the radices the planner uses, applied to v[o .. o+R-1] of an array of
// REGS values (the most a stage keeps per invocation). Radix 2, 4, 8 and 16 are written out
// (constant multiplies only); 3, 5, 7, 11 and 13 use a direct DFT whose cos/sin come from float64
// on the host (ODD_COS / ODD_SIN in the preamble); 9, 25 and 49 are two rounds of 3, 5 or 7.

// The invocation's working registers. Module scope rather than an `inout` parameter: SPIR-V
// passes arrays by copy, and copying REGS values in and out of every butterfly call made Mesa's
// LLVM JIT take seconds per kernel.
CPLX v[REGS];

void dft2(uint o) {
    CPLX a = v[o], b = v[o + 1u];
    v[o] = a + b;
    v[o + 1u] = a - b;
}

void dft4(uint o) {
    CPLX t0 = v[o] + v[o + 2u], t1 = v[o] - v[o + 2u];
    CPLX t2 = v[o + 1u] + v[o + 3u], t3 = rot_quarter(v[o + 1u] - v[o + 3u]);
    v[o] = t0 + t2;
    v[o + 1u] = t1 + t3;
    v[o + 2u] = t0 - t2;
    v[o + 3u] = t1 - t3;
}

// dft4 on v[o], v[o + s], v[o + 2s], v[o + 3s].
void dft4s(uint o, uint s) {
    CPLX t0 = v[o] + v[o + 2u * s], t1 = v[o] - v[o + 2u * s];
    CPLX t2 = v[o + s] + v[o + 3u * s], t3 = rot_quarter(v[o + s] - v[o + 3u * s]);
    v[o] = t0 + t2;
    v[o + s] = t1 + t3;
    v[o + 2u * s] = t0 - t2;
    v[o + 3u * s] = t1 - t3;
}

#if MAX_RADIX >= 8
void dft8(uint o) {
    const REAL c = SQRT1_2;
    // Two radix-4 DFTs on the even and odd samples, then the radix-2 combine with W8^k.
    CPLX e0 = v[o] + v[o + 4u], e1 = v[o] - v[o + 4u];
    CPLX e2 = v[o + 2u] + v[o + 6u], e3 = rot_quarter(v[o + 2u] - v[o + 6u]);
    CPLX o0 = v[o + 1u] + v[o + 5u], o1 = v[o + 1u] - v[o + 5u];
    CPLX o2 = v[o + 3u] + v[o + 7u], o3 = rot_quarter(v[o + 3u] - v[o + 7u]);
    CPLX E0 = e0 + e2, E1 = e1 + e3, E2 = e0 - e2, E3 = e1 - e3;
    CPLX O0 = o0 + o2, O1 = o1 + o3, O2 = o0 - o2, O3 = o1 - o3;
    // W8 = (1 -+ i)/sqrt(2): W8*z = c*(z + rot_quarter(z)); W8^2 = rot_quarter; W8^3 = rot(W8).
    O1 = c * (O1 + rot_quarter(O1));
    O2 = rot_quarter(O2);
    O3 = c * (rot_quarter(O3) - O3);
    v[o] = E0 + O0;      v[o + 4u] = E0 - O0;
    v[o + 1u] = E1 + O1; v[o + 5u] = E1 - O1;
    v[o + 2u] = E2 + O2; v[o + 6u] = E2 - O2;
    v[o + 3u] = E3 + O3; v[o + 7u] = E3 - O3;
}
#endif

#if MAX_RADIX >= 16
// W16^m for the transform's direction (forward exp(-2 pi i m / 16)), m a constant after inlining.
VEC2 w16(uint m) {
    const REAL c1 = COS_PI_8, s1 = SIN_PI_8, c2 = SQRT1_2;
    const VEC2 w[8] = VEC2[](VEC2(1.0, 0.0), VEC2(c1, s1), VEC2(c2, c2), VEC2(s1, c1),
                             VEC2(0.0, 1.0), VEC2(-s1, c1), VEC2(-c2, c2), VEC2(-c1, s1));
    VEC2 z = w[m % 8u];
    if (m >= 8u) z = -z;
#if INVERSE
    return z;
#else
    return VEC2(z.x, -z.y);
#endif
}

// 16 = 4 x 4: length-4 DFTs down the columns of v[o + n1 + 4 n2], twiddles W16^(n1 k2), length-4
// DFTs along the rows; the result sits transposed (X[k2 + 4 k1] at 4 k2 + k1) and is put back
// in order through registers.
void dft16(uint o) {
    UNROLL for (uint n1 = 0u; n1 < 4u; n1++) dft4s(o + n1, 4u);
    UNROLL for (uint n1 = 1u; n1 < 4u; n1++)
        UNROLL for (uint k2 = 1u; k2 < 4u; k2++)
            v[o + n1 + 4u * k2] = cmul(v[o + n1 + 4u * k2], w16(n1 * k2));
    UNROLL for (uint k2 = 0u; k2 < 4u; k2++) dft4s(o + 4u * k2, 1u);
    CPLX t[16];
    UNROLL for (uint m = 0u; m < 16u; m++) t[m] = v[o + m];
    UNROLL for (uint m = 0u; m < 16u; m++) v[o + m] = t[(m % 4u) * 4u + m / 4u];
}
#endif

// Direct DFT of an odd prime radix P on v[o], v[o + s], .., v[o + (P - 1) s]:
// y[k] = sum_n x[n] W^(nk mod P), W = exp(-+2 pi i / P). x[0] and the conjugate-symmetric pairs
// (n, P-n) are combined first, halving the multiplies. cos/sin(2 pi m / R) for m < R sit at
// `table` in the preamble's ODD_COS / ODD_SIN, R = P * step (step > 1 when P is a factor of a
// composite radix R, whose table holds W_P^m at m * step).
#ifdef ODD_COS
const REAL odd_cos[] = ODD_COS;
const REAL odd_sin[] = ODD_SIN;

void dft_odd(uint P, uint table, uint step, uint o, uint s) {
    CPLX sum[ODD_HALF_MAX], dif[ODD_HALF_MAX];  // (P - 1) / 2 for the largest odd prime in use
    CPLX x0 = v[o], y0 = x0;
    uint half_p = (P - 1u) / 2u;
    UNROLL for (uint n = 1u; n <= half_p; n++) {
        sum[n - 1u] = v[o + n * s] + v[o + (P - n) * s];
        dif[n - 1u] = v[o + n * s] - v[o + (P - n) * s];
        y0 += sum[n - 1u];
    }
    v[o] = y0;
    UNROLL for (uint k = 1u; k <= half_p; k++) {
        CPLX re = x0, im = CPLX(0.0);
        UNROLL for (uint n = 1u; n <= half_p; n++) {
            uint m = table + ((n * k) % P) * step;
            re += odd_cos[m] * sum[n - 1u];
            im += odd_sin[m] * dif[n - 1u];
        }
        // forward: y[k] = re - i*im, y[P-k] = re + i*im; the inverse flips i (rot_quarter does).
        CPLX t = rot_quarter(im);
        v[o + k * s] = re + t;
        v[o + (P - k) * s] = re - t;
    }
}

// Radix R = P * P as P x P (as dft16 is 4 x 4): length-P DFTs down the columns of
// v[o + n1 + P n2], twiddles W_R^(n1 k2), length-P DFTs along the rows; X[k2 + P k1] then sits at
// P k2 + k1 and is put back in order through registers. Half the trips through shared memory
// of two radix-P stages, and no twiddle table reads between the two rounds.
void dft_square(uint P, uint table, uint o) {
    const uint R = P * P;
    UNROLL for (uint n1 = 0u; n1 < P; n1++) dft_odd(P, table, P, o + n1, P);
    UNROLL for (uint n1 = 1u; n1 < P; n1++) {
        UNROLL for (uint k2 = 1u; k2 < P; k2++) {
            uint m = table + n1 * k2;  // < R
#if INVERSE
            VEC2 w = VEC2(odd_cos[m], odd_sin[m]);
#else
            VEC2 w = VEC2(odd_cos[m], -odd_sin[m]);
#endif
            v[o + n1 + P * k2] = cmul(v[o + n1 + P * k2], w);
        }
    }
    UNROLL for (uint k2 = 0u; k2 < P; k2++) dft_odd(P, table, P, o + P * k2, 1u);
    CPLX t[49];  // R <= 49
    UNROLL for (uint m = 0u; m < R; m++) t[m] = v[o + m];
    UNROLL for (uint m = 0u; m < R; m++) v[o + m] = t[(m % P) * P + m / P];
}
#endif

// Dispatch on a radix that is a compile-time constant after inlining, so the switch folds away.
void dft(uint R, uint o) {
    switch (R) {
    case 2u: dft2(o); break;
    case 4u: dft4(o); break;
#if MAX_RADIX >= 8
    case 8u: dft8(o); break;
#endif
#if MAX_RADIX >= 16
    case 16u: dft16(o); break;
#endif
#ifdef ODD_OFFSET_3
    case 3u: dft_odd(3u, ODD_OFFSET_3, 1u, o, 1u); break;
#endif
#ifdef ODD_OFFSET_5
    case 5u: dft_odd(5u, ODD_OFFSET_5, 1u, o, 1u); break;
#endif
#ifdef ODD_OFFSET_7
    case 7u: dft_odd(7u, ODD_OFFSET_7, 1u, o, 1u); break;
#endif
#ifdef ODD_OFFSET_11
    case 11u: dft_odd(11u, ODD_OFFSET_11, 1u, o, 1u); break;
#endif
#ifdef ODD_OFFSET_13
    case 13u: dft_odd(13u, ODD_OFFSET_13, 1u, o, 1u); break;
#endif
#ifdef ODD_OFFSET_17
    case 17u: dft_odd(17u, ODD_OFFSET_17, 1u, o, 1u); break;
#endif
#ifdef ODD_OFFSET_19
    case 19u: dft_odd(19u, ODD_OFFSET_19, 1u, o, 1u); break;
#endif
#ifdef ODD_OFFSET_23
    case 23u: dft_odd(23u, ODD_OFFSET_23, 1u, o, 1u); break;
#endif
#ifdef ODD_OFFSET_29
    case 29u: dft_odd(29u, ODD_OFFSET_29, 1u, o, 1u); break;
#endif
#ifdef ODD_OFFSET_31
    case 31u: dft_odd(31u, ODD_OFFSET_31, 1u, o, 1u); break;
#endif
#ifdef ODD_OFFSET_9
    case 9u: dft_square(3u, ODD_OFFSET_9, o); break;
#endif
#ifdef ODD_OFFSET_25
    case 25u: dft_square(5u, ODD_OFFSET_25, o); break;
#endif
#ifdef ODD_OFFSET_49
    case 49u: dft_square(7u, ODD_OFFSET_49, o); break;
#endif
    default: break;
    }
}
