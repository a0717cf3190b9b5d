// In-register DFTs of the radices the planner uses, applied to v[o .. o+R-1] of an array of
// length BUTTERFLIES * MAX_RADIX. Radix 2, 4 and 8 are written out (no multiplies beyond the
// 1/sqrt(2) of radix 8); 3, 5, 7, 11 and 13 use a direct DFT whose cos/sin come from float64 on the
// host (ODD_COS / ODD_SIN in the preamble).

#define REGS (BUTTERFLIES * MAX_RADIX)

// The invocation's working registers. Module scope rather than an `inout` parameter: SPIR-V
// passes arrays by copy, and copying REGS values in and out of every butterfly call made Mesa's
// LLVM JIT take seconds per kernel.
vec2 v[REGS];

void dft2(uint o) {
    vec2 a = v[o], b = v[o + 1u];
    v[o] = a + b;
    v[o + 1u] = a - b;
}

void dft4(uint o) {
    vec2 t0 = v[o] + v[o + 2u], t1 = v[o] - v[o + 2u];
    vec2 t2 = v[o + 1u] + v[o + 3u], t3 = rot_quarter(v[o + 1u] - v[o + 3u]);
    v[o] = t0 + t2;
    v[o + 1u] = t1 + t3;
    v[o + 2u] = t0 - t2;
    v[o + 3u] = t1 - t3;
}

#if MAX_RADIX >= 8
void dft8(uint o) {
    const float c = 0.70710678118654752;
    // Two radix-4 DFTs on the even and odd samples, then the radix-2 combine with W8^k.
    vec2 e0 = v[o] + v[o + 4u], e1 = v[o] - v[o + 4u];
    vec2 e2 = v[o + 2u] + v[o + 6u], e3 = rot_quarter(v[o + 2u] - v[o + 6u]);
    vec2 o0 = v[o + 1u] + v[o + 5u], o1 = v[o + 1u] - v[o + 5u];
    vec2 o2 = v[o + 3u] + v[o + 7u], o3 = rot_quarter(v[o + 3u] - v[o + 7u]);
    vec2 E0 = e0 + e2, E1 = e1 + e3, E2 = e0 - e2, E3 = e1 - e3;
    vec2 O0 = o0 + o2, O1 = o1 + o3, O2 = o0 - o2, O3 = o1 - o3;
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

// Direct DFT of an odd prime radix R: y[k] = sum_n x[n] W^(nk mod R), W = exp(-+2 pi i / R).
// x[0] and the conjugate-symmetric pairs (n, R-n) are combined first, halving the multiplies.
// cos/sin(2 pi m / R) for m < R sit at ODD_OFFSET_R in the preamble's ODD_COS / ODD_SIN tables.
#ifdef ODD_COS
const float odd_cos[] = ODD_COS;
const float odd_sin[] = ODD_SIN;

void dft_odd(uint R, uint table, uint o) {
    vec2 s[6], d[6];  // R <= 13
    vec2 x0 = v[o], y0 = x0;
    uint half_r = (R - 1u) / 2u;
    for (uint n = 1u; n <= half_r; n++) {
        s[n - 1u] = v[o + n] + v[o + R - n];
        d[n - 1u] = v[o + n] - v[o + R - n];
        y0 += s[n - 1u];
    }
    v[o] = y0;
    for (uint k = 1u; k <= half_r; k++) {
        vec2 re = x0, im = vec2(0.0);
        for (uint n = 1u; n <= half_r; n++) {
            uint m = table + (n * k) % R;
            re += odd_cos[m] * s[n - 1u];
            im += odd_sin[m] * d[n - 1u];
        }
        // forward: y[k] = re - i*im, y[R-k] = re + i*im; the inverse flips i (rot_quarter does).
        vec2 t = rot_quarter(im);
        v[o + k] = re + t;
        v[o + R - k] = re - t;
    }
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
#ifdef ODD_OFFSET_3
    case 3u: dft_odd(3u, ODD_OFFSET_3, o); break;
#endif
#ifdef ODD_OFFSET_5
    case 5u: dft_odd(5u, ODD_OFFSET_5, o); break;
#endif
#ifdef ODD_OFFSET_7
    case 7u: dft_odd(7u, ODD_OFFSET_7, o); break;
#endif
#ifdef ODD_OFFSET_11
    case 11u: dft_odd(11u, ODD_OFFSET_11, o); break;
#endif
#ifdef ODD_OFFSET_13
    case 13u: dft_odd(13u, ODD_OFFSET_13, o); break;
#endif
    default: break;
    }
}
