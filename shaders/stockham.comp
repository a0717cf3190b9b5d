// Batched 1D complex FFTs of length N: every Stockham stage of a line in ONE dispatch.
//
// Each workgroup transforms LINES lines with THREADS invocations per line. Stages exchange
// through shared memory with barrier() between them; global memory is read once and written once.
//
// Which lines, and where their elements live, is the preamble's business, so the same kernel is
// the single-pass FFT, each pass of a multi-pass (four-step) plan and each pass of Bluestein:
//   line l = d0 + LINE_D0 * (d1 + LINE_D1 * d2), d2 being the batch index
//   input element i of line l: IN_BATCH * d2 + (IN_S0 * d0 + IN_S1 * d1 + IN_E * i)
//   output element k likewise with OUT_*; the parenthesised part is the offset within the batch
//   line. With IN_DYNAMIC / OUT_DYNAMIC the batch stride and a bound on that offset come from
//   push constants instead (reads past the bound are zeros, writes past it are dropped).
// Switches: LOAD_TILED / STORE_TILED move the data between global and shared memory with the
// LINES lines of a workgroup as the fastest index, so strided (column) accesses coalesce;
// FOURSTEP_TW_N multiplies output k of line d0 by exp(-+2 pi i d0 k / FOURSTEP_TW_N) (the fused
// twiddle of a four-step pass); PRE_MUL / POST_MUL multiply input / output by a table indexed by
// the within-line offset (Bluestein's chirps and kernel spectrum). SCALE is applied on output.
//
// Tables (binding 2, complex64, built in float64 on the host and rounded once): at TW_OFFSET
// exp(-2 pi i m / N) for m < N; at FOURSTEP_LO / FOURSTEP_HI the two halves of the four-step
// twiddle (W^m = HI[m / FOURSTEP_SPLIT] * LO[m % FOURSTEP_SPLIT]); at PRE_MUL / POST_MUL theirs.

#include "common.glsl"
#include "butterflies.glsl"

#if !defined(N) || !defined(THREADS) || !defined(LINES) || !defined(NUM_STAGES)
#error "stockham.comp needs N, THREADS, LINES and NUM_STAGES from the preamble"
#endif
#if THREADS * LINES > 1024
#error "workgroup larger than any driver allows"
#endif

#ifndef LINE_D0
#define LINE_D0 1u
#endif
#ifndef LINE_D1
#define LINE_D1 1u
#endif
#ifndef IN_S0
#define IN_S0 0u
#endif
#ifndef IN_S1
#define IN_S1 0u
#endif
#ifndef IN_E
#define IN_E 1u
#endif
#ifndef IN_BATCH
#define IN_BATCH N
#endif
#ifndef OUT_S0
#define OUT_S0 0u
#endif
#ifndef OUT_S1
#define OUT_S1 0u
#endif
#ifndef OUT_E
#define OUT_E 1u
#endif
#ifndef OUT_BATCH
#define OUT_BATCH N
#endif
#ifndef TW_OFFSET
#define TW_OFFSET 0u
#endif
#ifndef IN_DYNAMIC
#define IN_DYNAMIC 0
#endif
#ifndef OUT_DYNAMIC
#define OUT_DYNAMIC 0
#endif
#ifndef LOAD_TILED
#define LOAD_TILED 0
#endif
#ifndef STORE_TILED
#define STORE_TILED 0
#endif

#define USES_SHARED (NUM_STAGES > 1 || LOAD_TILED || STORE_TILED)
#define GROUP_SIZE (THREADS * LINES)

layout(local_size_x = THREADS, local_size_y = LINES, local_size_z = 1) in;

layout(std430, binding = 0) readonly buffer Src { vec2 src[]; };
layout(std430, binding = 1) writeonly buffer Dst { vec2 dst[]; };
layout(std430, binding = 2) readonly buffer Tables { vec2 table[]; };

PUSH_CONSTANTS(uint lines_total; uint group_base; uint in_len; uint in_batch; uint out_len;
               uint out_batch;)

#if IN_DYNAMIC
#define IN_BATCH_V pc.in_batch
#define IN_LEN_V pc.in_len
#else
#define IN_BATCH_V IN_BATCH
#endif
#if OUT_DYNAMIC
#define OUT_BATCH_V pc.out_batch
#define OUT_LEN_V pc.out_len
#else
#define OUT_BATCH_V OUT_BATCH
#endif

#if USES_SHARED
shared vec2 sh[LINES * N];
#endif

uint first_line;  // the workgroup's first line

struct LineAddr { uint batch; uint d0; uint d1; };

LineAddr line_addr(uint line) {
    LineAddr a;
    a.d0 = line % LINE_D0;
    uint rest = line / LINE_D0;
    a.d1 = rest % LINE_D1;
    a.batch = rest / LINE_D1;
    return a;
}

vec2 load(uint line, uint i) {
    if (line >= pc.lines_total) return vec2(0.0);
    LineAddr a = line_addr(line);
    uint off = IN_S0 * a.d0 + IN_S1 * a.d1 + IN_E * i;
#ifdef IN_LEN_V
    if (off >= IN_LEN_V) return vec2(0.0);
#endif
    vec2 x = src[IN_BATCH_V * a.batch + off];
#ifdef PRE_MUL
    x = cmul(x, table[PRE_MUL + off]);
#endif
    return x;
}

// The twiddle W^m of a four-step pass, from the two-level table.
vec2 fourstep_twiddle(uint m) {
#ifdef FOURSTEP_TW_N
    vec2 w = cmul(table[FOURSTEP_HI + m / FOURSTEP_SPLIT], table[FOURSTEP_LO + m % FOURSTEP_SPLIT]);
#if INVERSE
    w.y = -w.y;
#endif
    return w;
#else
    return vec2(1.0, 0.0);
#endif
}

void store(uint line, uint k, vec2 x) {
    if (line >= pc.lines_total) return;
    LineAddr a = line_addr(line);
    uint off = OUT_S0 * a.d0 + OUT_S1 * a.d1 + OUT_E * k;
#ifdef OUT_LEN_V
    if (off >= OUT_LEN_V) return;
#endif
#ifdef FOURSTEP_TW_N
    x = cmul(x, fourstep_twiddle(a.d0 * k));
#endif
#ifdef POST_MUL
    x = cmul(x, table[POST_MUL + off]);
#endif
    dst[OUT_BATCH_V * a.batch + off] = x * SCALE;
}

// One radix-R Stockham stage with Ns = product of the earlier radices. Butterfly j reads
// x[j + r*N/R] and writes y[(j / Ns) * Ns * R + j % Ns + r * Ns], twiddled by W_{Ns R}^{r (j % Ns)}.
// from_sh / to_sh: whether the stage reads / writes shared memory rather than global memory.
void stage(const uint R, const uint Ns, const bool from_sh, const bool to_sh, uint tid, uint ly) {
    const uint span = N / R;
    uint line = first_line + ly;
    uint lbase = ly * N;
    for (uint b = 0u; b < BUTTERFLIES; b++) {
        uint j = tid + b * THREADS;
        if (j < span) {
            for (uint r = 0u; r < R; r++) {
#if USES_SHARED
                if (from_sh) v[b * MAX_RADIX + r] = sh[lbase + j + r * span];
                else
#endif
                v[b * MAX_RADIX + r] = load(line, j + r * span);
            }
        }
    }
#if USES_SHARED
    // Everyone has read this stage's inputs before anyone overwrites shared memory.
    if (from_sh && to_sh) barrier();
#endif
    for (uint b = 0u; b < BUTTERFLIES; b++) {
        uint j = tid + b * THREADS;
        if (j < span) {
            uint o = b * MAX_RADIX;
            uint k = j % Ns;
            if (Ns > 1u) {
                uint step = k * (N / (Ns * R));
                for (uint r = 1u; r < R; r++) {
                    vec2 w = table[TW_OFFSET + r * step];
#if INVERSE
                    w.y = -w.y;
#endif
                    v[o + r] = cmul(v[o + r], w);
                }
            }
            dft(R, o);
            uint out0 = (j / Ns) * Ns * R + k;
            for (uint r = 0u; r < R; r++) {
#if USES_SHARED
                if (to_sh) sh[lbase + out0 + r * Ns] = v[o + r];
                else
#endif
                store(line, out0 + r * Ns, v[o + r]);
            }
        }
    }
#if USES_SHARED
    if (to_sh) barrier();
#endif
}

void main() {
    first_line = flat_group_id(pc.group_base) * LINES;
    uint tid = gl_LocalInvocationID.x, ly = gl_LocalInvocationID.y;
#if LOAD_TILED
    // Line-fastest order: neighbouring invocations read neighbouring lines' element i.
    for (uint e = ly * THREADS + tid; e < LINES * N; e += GROUP_SIZE)
        sh[(e % LINES) * N + e / LINES] = load(first_line + e % LINES, e / LINES);
    barrier();
#endif
#if NUM_STAGES == 0
#if LOAD_TILED
    vec2 x0 = sh[ly * N];
#else
    vec2 x0 = load(first_line + ly, 0u);
#endif
#if STORE_TILED
    if (tid == 0u) sh[ly * N] = x0;
    barrier();
#else
    if (tid == 0u) store(first_line + ly, 0u, x0);
#endif
#else
#define STAGE(R, NS, FIRST, LAST) \
    stage(R, NS, (FIRST) ? bool(LOAD_TILED) : true, (LAST) ? bool(STORE_TILED) : true, tid, ly);
    FFT_STAGES
#endif
#if STORE_TILED
    for (uint e = ly * THREADS + tid; e < LINES * N; e += GROUP_SIZE)
        store(first_line + e % LINES, e / LINES, sh[(e % LINES) * N + e / LINES]);
#endif
}
