// Batched 1D complex FFT of contiguous lines of length N: every Stockham stage in ONE dispatch.
//
// Each workgroup transforms LINES lines with THREADS invocations per line. The first stage reads
// its inputs straight from global memory (coalesced: invocation j reads j + r*N/R), the middle
// stages exchange through shared memory with barrier() between them, and the last stage writes
// straight to global memory (also j + r*N/R, as the autosort leaves the last stage contiguous).
// Data is touched in global memory exactly once each way.
//
// Preamble: N, NUM_STAGES, THREADS, LINES, MAX_RADIX, BUTTERFLIES (per invocation per stage),
// INVERSE, SCALE (the norm factor, applied on the last write), FFT_STAGES (a list of
// STAGE(radix, Ns, first, last) built by the planner), ODD_COS/ODD_SIN/ODD_OFFSET_R for odd radices.

#include "common.glsl"
#include "butterflies.glsl"

#if !defined(N) || !defined(THREADS) || !defined(LINES) || !defined(NUM_STAGES)
#error "stockham.comp needs N, THREADS, LINES and NUM_STAGES from the preamble"
#endif
#if THREADS * LINES > 1024
#error "workgroup larger than any driver allows"
#endif

layout(local_size_x = THREADS, local_size_y = LINES, local_size_z = 1) in;

layout(std430, binding = 0) readonly buffer Src { vec2 src[]; };
layout(std430, binding = 1) writeonly buffer Dst { vec2 dst[]; };
// exp(-2 pi i m / N) for m < N, computed in float64 on the host and rounded once.
layout(std430, binding = 2) readonly buffer Twiddles { vec2 twiddle[]; };

PUSH_CONSTANTS(uint lines_total; uint group_base;)

#if NUM_STAGES > 1
shared vec2 sh[LINES * N];
#endif

// One radix-R Stockham stage with Ns = product of the earlier radices. Butterfly j reads
// x[j + r*N/R] and writes y[(j / Ns) * Ns * R + j % Ns + r * Ns], twiddled by W_{Ns R}^{r (j % Ns)}.
void stage(const uint R, const uint Ns, const bool first, const bool last,
           uint tid, bool valid, uint gbase, uint lbase) {
    const uint span = N / R;
    vec2 v[REGS];
    for (uint b = 0u; b < BUTTERFLIES; b++) {
        uint j = tid + b * THREADS;
        if (j < span) {
            for (uint r = 0u; r < R; r++) {
#if NUM_STAGES > 1
                if (first) v[b * MAX_RADIX + r] = valid ? src[gbase + j + r * span] : vec2(0.0);
                else v[b * MAX_RADIX + r] = sh[lbase + j + r * span];
#else
                v[b * MAX_RADIX + r] = valid ? src[gbase + j + r * span] : vec2(0.0);
#endif
            }
        }
    }
#if NUM_STAGES > 1
    // Everyone has read this stage's inputs before anyone overwrites shared memory.
    if (!first) barrier();
#endif
    for (uint b = 0u; b < BUTTERFLIES; b++) {
        uint j = tid + b * THREADS;
        if (j < span) {
            uint o = b * MAX_RADIX;
            uint k = j % Ns;
            if (Ns > 1u) {
                uint step = k * (N / (Ns * R));
                for (uint r = 1u; r < R; r++) {
                    vec2 w = twiddle[r * step];
#if INVERSE
                    w.y = -w.y;
#endif
                    v[o + r] = cmul(v[o + r], w);
                }
            }
            dft(R, v, o);
            uint out0 = (j / Ns) * Ns * R + k;
            for (uint r = 0u; r < R; r++) {
#if NUM_STAGES > 1
                if (last) { if (valid) dst[gbase + out0 + r * Ns] = v[o + r] * SCALE; }
                else sh[lbase + out0 + r * Ns] = v[o + r];
#else
                if (valid) dst[gbase + out0 + r * Ns] = v[o + r] * SCALE;
#endif
            }
        }
    }
#if NUM_STAGES > 1
    if (!last) barrier();
#endif
}

void main() {
    uint line = flat_group_id(pc.group_base) * LINES + gl_LocalInvocationID.y;
    // Out-of-range lines still run every barrier; they only skip global reads and writes.
    bool valid = line < pc.lines_total;
    uint tid = gl_LocalInvocationID.x;
    uint gbase = line * N;
    uint lbase = gl_LocalInvocationID.y * N;
#if NUM_STAGES == 0
    if (valid && tid == 0u) dst[gbase] = src[gbase] * SCALE;
#else
#define STAGE(R, NS, FIRST, LAST) stage(R, NS, FIRST, LAST, tid, valid, gbase, lbase);
    FFT_STAGES
#endif
}
