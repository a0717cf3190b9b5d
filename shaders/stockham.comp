// Batched 1D complex FFTs of length N: every Stockham stage of a line in ONE dispatch.
//
// Each workgroup transforms LINES lines with THREADS invocations per line. Stages exchange
// through shared memory with barrier() between them; global memory is read once and written once.
//
// Which lines, and where their elements live, is the preamble's business, so the same kernel is
// the single-pass FFT, each pass of a multi-pass (four-step) plan and of Bluestein, along any axis:
//   line l = d0 + LINE_D0 * (d1 + LINE_D1 * (d2 + LINE_D2 * batch))
//   IN_ADDR(a, i) / OUT_ADDR(a, k): where element i (k) of line a = {d0, d1, d2, batch} lives
//   IN_INDEX(a, i) / OUT_INDEX(a, k): its index along the transformed axis, which IN_LEN / OUT_LEN
//   bound (reads past the bound are zeros, writes past it are dropped) and PRE_MUL / POST_MUL use.
// Switches: LOAD_TILED / STORE_TILED move the data between global and shared memory with the
// LINES lines of a workgroup as the fastest index, so strided accesses coalesce; LINE_FASTEST
// instead numbers the invocations line-fastest, so the stages' own global reads and writes
// coalesce where both ends are strided, and STORE_LINE_FASTEST does so for the last stage alone
// (contiguous loads, strided stores); SH_HALVES exchanges real and imaginary parts in turn
// through half the shared memory;
// FOURSTEP_TW_N multiplies output k by exp(-+2 pi i FOURSTEP_LINE(a) k / FOURSTEP_TW_N) (the
// fused twiddle of a four-step pass); PRE_MUL / POST_MUL multiply input / output by a table
// (Bluestein's chirps and kernel spectrum). SCALE is applied on output.
//
// Tables (binding 2, complex64 or with PRECISION 64 complex128, built in float64 on the host
// and rounded once), laid out so that
// neighbouring invocations read neighbouring entries (a scattered read costs the L1 one
// transaction per cache line it touches, and twiddle reads outnumber the data's):
//   each stage's own twiddles at the STAGE macro's offset: W_{Ns R}^(r k) at (r - 1) Ns + k;
//   the four-step twiddle W^(d k), k = L kh + kl (L = FOURSTEP_LO_LEN), as
//   FOURSTEP_HI[d KH + kh] * FOURSTEP_LO[L d + kl], or with FOURSTEP_DIGITS (line-fastest passes
//   whose neighbouring lines have neighbouring d) digit-fastest: HI[kh D + d] * LO[kl D + d];
//   at PRE_MUL / POST_MUL theirs.

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
#ifndef LINE_D2
#define LINE_D2 1u
#endif
#ifndef IN_ADDR
#define IN_ADDR(a, i) ((a).batch * N + (i))
#define IN_INDEX(a, i) (i)
#endif
#ifndef OUT_ADDR
#define OUT_ADDR(a, k) ((a).batch * N + (k))
#define OUT_INDEX(a, k) (k)
#endif
#ifndef LOAD_TILED
#define LOAD_TILED 0
#endif
#ifndef LINE_FASTEST
#define LINE_FASTEST 0
#endif
#ifndef STORE_TILED
#define STORE_TILED 0
#endif
#ifndef STORE_LINE_FASTEST
#define STORE_LINE_FASTEST 0
#endif
#if STORE_LINE_FASTEST && (NUM_STAGES < 2 || LINE_FASTEST || STORE_TILED)
#error "STORE_LINE_FASTEST renumbers the last of several stages of a pass that is not LINE_FASTEST"
#endif

// REAL_UNPACK = n: this is the length-n/2 transform of n real samples viewed as complex pairs;
// the store writes the n/2+1 bins of the real transform (realfft.comp's UNPACK, fused, see
// unpack_pair): with UNPACK_REGS from the last stage's registers, its butterflies taken in pairs
// (see butterfly), else from the line left in shared memory by the last stage. REAL_PACK = n:
// the reverse, applied as each input element is loaded (realfft.comp's PACK, fused). REAL_TW:
// exp(-2 pi i m / n) in the tables.
// REAL_ROWS = R (with REAL_UNPACK or REAL_PACK on rows of R-row images): the 2D real transform
// whose column axis runs on the half-length complex view (before the rows' unpack, after the
// rows' pack), so bin (r, k) pairs with (R - r, N - k), rows mod R, instead of (r, N - k). The
// unpack needs both rows in a workgroup: its two lines are rows r and R - r (r = 0 with R / 2,
// each its own partner).
#if defined(REAL_ROWS) && defined(REAL_UNPACK) && (LINES != 2 || UNPACK_REGS)
#error "REAL_ROWS unpacks a workgroup's two lines, from shared memory"
#endif
#ifndef UNPACK_REGS
#define UNPACK_REGS 0
#endif
#if defined(REAL_UNPACK) && !UNPACK_REGS
#define STORE_VIA_SHARED 1
#else
#define STORE_VIA_SHARED STORE_TILED
#endif
#if defined(REAL_UNPACK) && UNPACK_REGS
#define UNPACK_LAST 1
#else
#define UNPACK_LAST 0
#endif

#define USES_SHARED (NUM_STAGES > 1 || LOAD_TILED || STORE_VIA_SHARED)
#define GROUP_SIZE (THREADS * LINES)
#define TILE_MOVES ((LINES * N + GROUP_SIZE - 1u) / GROUP_SIZE)  // elements per invocation

layout(local_size_x = THREADS, local_size_y = LINES, local_size_z = 1) in;

#if FIELDS == 2 && (defined(REAL_PACK) || defined(REAL_UNPACK))
#error "the real-data packing is for one field"
#endif
#if PRECISION == 64 && (defined(IN_IMAGE) || defined(OUT_IMAGE))
#error "images hold float texels: PRECISION 64 is for buffers"
#endif

// restrict: a pass never reads the buffer it writes (plans use distinct buffers, in-place calls
// are refused), which lets the compiler keep loads in the read-only cache path. Output images are
// not restrict: a texture pass may write the texture it samples (TextureFFT's passes meet in the
// destination), each line read whole, its values through shared memory and barrier(), before
// any of it is written.
// IN_IMAGE / OUT_IMAGE (an image format: r32f, rg32f, rgba32f, or their 16f): the pass reads a
// texture through a sampler (texelFetch, bindings 0.., which GL moves to units of its own) /
// writes an image2D instead, element e at texel (e % IMG_WIDTH, e / IMG_WIDTH), so a texture is
// transformed where it lives; r32f holds real parts (imaginary parts read as zero). Reads go
// through samplers because GL then orders a pass after the one writing its input with the
// texture-fetch barrier, which NVIDIA's driver makes far cheaper than the image or storage one.
// IN_ARRAY / OUT_ARRAY: a 2D array texture of layers of IMG_HEIGHT rows, element e in layer
// e / (IMG_WIDTH IMG_HEIGHT); IN_LIST / OUT_LIST = L: L 2D textures of IMG_HEIGHT rows, one per
// layer (input units 0..L-1, output units OUT_UNIT0..), so every layer runs in one dispatch.
#if defined(IN_LIST) && IN_LIST > 8 || defined(OUT_LIST) && OUT_LIST > 8
#error "at most 8 images per list"
#endif
#ifdef IMG_HEIGHT
#define IMG_LAYER(e) ((e) / (IMG_WIDTH * IMG_HEIGHT))
#define IMG_XY(e) ivec2((e) % IMG_WIDTH, (e) / IMG_WIDTH % IMG_HEIGHT)
#endif
#define IMG_DECL(q, f, u, name) layout(f, binding = u) uniform q image2D name;
#define SRC_DECL(u, name) layout(binding = u) uniform sampler2D name;
#define SRC_LOAD(name, p) texelFetch(name, p, 0)
#ifdef IN_IMAGE
#if defined(IN_ARRAY)
layout(binding = 0) uniform sampler2DArray src_img;
vec4 src_texel(uint e) { return SRC_LOAD(src_img, ivec3(IMG_XY(e), IMG_LAYER(e))); }
#elif defined(IN_LIST)
SRC_DECL(0, src_img0)
#if IN_LIST > 1
SRC_DECL(1, src_img1)
#endif
#if IN_LIST > 2
SRC_DECL(2, src_img2)
#endif
#if IN_LIST > 3
SRC_DECL(3, src_img3)
#endif
#if IN_LIST > 4
SRC_DECL(4, src_img4)
#endif
#if IN_LIST > 5
SRC_DECL(5, src_img5)
#endif
#if IN_LIST > 6
SRC_DECL(6, src_img6)
#endif
#if IN_LIST > 7
SRC_DECL(7, src_img7)
#endif
vec4 src_texel(uint e) {
    uint l = IMG_LAYER(e);
    ivec2 p = IMG_XY(e);
#if IN_LIST > 1
    if (l == 1u) return SRC_LOAD(src_img1, p);
#endif
#if IN_LIST > 2
    if (l == 2u) return SRC_LOAD(src_img2, p);
#endif
#if IN_LIST > 3
    if (l == 3u) return SRC_LOAD(src_img3, p);
#endif
#if IN_LIST > 4
    if (l == 4u) return SRC_LOAD(src_img4, p);
#endif
#if IN_LIST > 5
    if (l == 5u) return SRC_LOAD(src_img5, p);
#endif
#if IN_LIST > 6
    if (l == 6u) return SRC_LOAD(src_img6, p);
#endif
#if IN_LIST > 7
    if (l == 7u) return SRC_LOAD(src_img7, p);
#endif
    return SRC_LOAD(src_img0, p);
}
#else
SRC_DECL(0, src_img)
vec4 src_texel(uint e) { return SRC_LOAD(src_img, ivec2(e % IMG_WIDTH, e / IMG_WIDTH)); }
#endif
CPLX src_at(uint e) {
    vec4 t = src_texel(e);
#if FIELDS == 2
    return t;
#elif IN_COMPONENTS == 1
    return vec2(t.x, 0.0);
#else
    return t.xy;
#endif
}
#define SRC(e) src_at(e)
#else
layout(std430, binding = 0) restrict readonly buffer Src { CPLX src[]; };
#define SRC(e) src[e]
#endif
#ifdef OUT_IMAGE
#if defined(OUT_ARRAY)
layout(OUT_IMAGE, binding = OUT_UNIT0) uniform writeonly image2DArray dst_img;
void dst_texel(uint e, vec4 t) { imageStore(dst_img, ivec3(IMG_XY(e), IMG_LAYER(e)), t); }
#elif defined(OUT_LIST)
IMG_DECL(writeonly, OUT_IMAGE, OUT_UNIT0, dst_img0)
#if OUT_LIST > 1
IMG_DECL(writeonly, OUT_IMAGE, OUT_UNIT1, dst_img1)
#endif
#if OUT_LIST > 2
IMG_DECL(writeonly, OUT_IMAGE, OUT_UNIT2, dst_img2)
#endif
#if OUT_LIST > 3
IMG_DECL(writeonly, OUT_IMAGE, OUT_UNIT3, dst_img3)
#endif
#if OUT_LIST > 4
IMG_DECL(writeonly, OUT_IMAGE, OUT_UNIT4, dst_img4)
#endif
#if OUT_LIST > 5
IMG_DECL(writeonly, OUT_IMAGE, OUT_UNIT5, dst_img5)
#endif
#if OUT_LIST > 6
IMG_DECL(writeonly, OUT_IMAGE, OUT_UNIT6, dst_img6)
#endif
#if OUT_LIST > 7
IMG_DECL(writeonly, OUT_IMAGE, OUT_UNIT7, dst_img7)
#endif
void dst_texel(uint e, vec4 t) {
    uint l = IMG_LAYER(e);
    ivec2 p = IMG_XY(e);
    if (l == 0u) imageStore(dst_img0, p, t);
#if OUT_LIST > 1
    else if (l == 1u) imageStore(dst_img1, p, t);
#endif
#if OUT_LIST > 2
    else if (l == 2u) imageStore(dst_img2, p, t);
#endif
#if OUT_LIST > 3
    else if (l == 3u) imageStore(dst_img3, p, t);
#endif
#if OUT_LIST > 4
    else if (l == 4u) imageStore(dst_img4, p, t);
#endif
#if OUT_LIST > 5
    else if (l == 5u) imageStore(dst_img5, p, t);
#endif
#if OUT_LIST > 6
    else if (l == 6u) imageStore(dst_img6, p, t);
#endif
#if OUT_LIST > 7
    else if (l == 7u) imageStore(dst_img7, p, t);
#endif
}
#else
IMG_DECL(writeonly, OUT_IMAGE, OUT_UNIT0, dst_img)
void dst_texel(uint e, vec4 t) { imageStore(dst_img, ivec2(e % IMG_WIDTH, e / IMG_WIDTH), t); }
#endif
void dst_put(uint e, CPLX x) {
#if FIELDS == 2
    dst_texel(e, x);
#else
    dst_texel(e, vec4(x, 0.0, 0.0));
#endif
}
#else
layout(std430, binding = 1) restrict writeonly buffer Dst { CPLX dst[]; };
void dst_put(uint e, CPLX x) { dst[e] = x; }
#endif
layout(std430, binding = 2) restrict readonly buffer Tables { VEC2 table[]; };
// MUL_SPEC: outputs are multiplied by a spectrum of the pass's output shape (a convolution's
// pointwise product, fused into the forward transform's last pass); SPEC_FIELDS = 1 applies one
// complex spectrum to every field.
#ifdef MUL_SPEC
#if SPEC_FIELDS == 2
layout(std430, binding = 3) restrict readonly buffer Spec { VEC4 spec[]; };
#else
layout(std430, binding = 3) restrict readonly buffer Spec { VEC2 spec[]; };
#endif
#endif

PUSH_CONSTANTS(uint lines_total; uint group_base; uint in_len; uint in_batch; uint out_len;
               uint out_batch;)

// Shared memory: line l's element p at l * SH_LINE + SHI(p). SH_PAD inserts a spare slot after
// every 16 complex values (128 bytes, one row of the 32 four-byte banks), so the stride-R writes
// of a radix-R stage and the line-fastest tiled accesses spread over the banks instead of
// queueing on a few; the planner sizes SH_LINE (>= SHI(N - 1) + 1) to stagger the lines too.
#ifndef SH_PAD
#define SH_PAD 0
#endif
#if SH_PAD
#define SHI(p) ((p) + ((p) >> 4u))
#else
#define SHI(p) (p)
#endif
#ifndef SH_LINE
#define SH_LINE N
#endif
#define SH(l, p) sh[(l) * SH_LINE + SHI(p)]

// Between stages, shared memory is permuted against bank conflicts. A radix-R stage writes runs of
// Ns consecutive values Ns*R apart; for Ns < 16 the runs of a half-warp (16 eight-byte accesses,
// one row of banks) land on the same few banks, up to 16 ways. The exchange after that stage
// stores element p at p ^ ((p / 16 * m) % 16), m = 16 / R once runs are 16-aligned (Ns * R >= 16),
// else 1: each aligned block of 16 is permuted differently, which spreads the runs over the row,
// and the next stage's contiguous reads stay within a block, so they stay conflict-free. Only
// power-of-two Ns * R (so N % 16 == 0 keeps every block inside the line); 0 means no permutation.
// SWZ_BITS = 5 permutes blocks of 32 instead (a row of banks in floats, SH_HALVES), where the
// planner's bank model finds it cheaper (StockhamPass.swizzle_bits).
#ifndef SWZ_BITS
#define SWZ_BITS 4u
#endif
#define SWZ_BLOCK (1u << SWZ_BITS)
uint swizzle_m(const uint R, const uint Ns) {
    const uint g = Ns * R;
    return (N % SWZ_BLOCK != 0u || (g & (g - 1u)) != 0u) ? 0u : (g >= SWZ_BLOCK ? SWZ_BLOCK / R : 1u);
}
uint swizzle(uint p, const uint m) { return p ^ (((p >> SWZ_BITS) * m) & (SWZ_BLOCK - 1u)); }

// SH_HALVES: the exchanges between stages move the real parts, then the imaginary parts, through
// a float array half the size (two more barriers per exchange), for lines whose vec2 array would
// limit the workgroups an SM holds. Only between stages: tiles and the real unpack from shared
// memory need vec2 (a STORE_LINE_FASTEST last stage and UNPACK_REGS store from registers).
#ifndef SH_HALVES
#define SH_HALVES 0
#endif
#if SH_HALVES && (LOAD_TILED || STORE_VIA_SHARED)
#error "SH_HALVES is for the exchanges between stages only"
#endif
#if USES_SHARED && SH_HALVES
shared HALF shf[LINES * SH_LINE];
#define SHF(l, p) shf[(l) * SH_LINE + SHI(p)]
#elif USES_SHARED
shared CPLX sh[LINES * SH_LINE];
#endif

uint first_line;  // the workgroup's first line

struct LineAddr { uint d0; uint d1; uint d2; uint batch; };

#ifdef REAL_ROWS
// Row r's partner row R - r of the same image (row = image R + r: contiguous lines).
uint partner_row(uint row) {
    uint r = row % REAL_ROWS;
    return row - r + (REAL_ROWS - r) % REAL_ROWS;
}
#endif

LineAddr line_addr(uint line) {
#if defined(REAL_ROWS) && defined(REAL_UNPACK)
    // The workgroup's lines 2w and 2w + 1 are rows w and R - w of an image (0 and R / 2 for w = 0).
    const uint h = REAL_ROWS / 2u;
    uint w = line / 2u % h, row = line % 2u == 0u ? w : (w == 0u ? h : REAL_ROWS - w);
    line = line - line % REAL_ROWS + row;
#endif
    LineAddr a;
    a.d0 = line % LINE_D0;
    line /= LINE_D0;
    a.d1 = line % LINE_D1;
    line /= LINE_D1;
    a.d2 = line % LINE_D2;
    a.batch = line / LINE_D2;
    return a;
}

CPLX load(uint line, uint i) {
    // One exit, and the read itself unconditional where it can be (a line past the end reads
    // the last line and returns zero): NVIDIA's GL compiler kept each early return as a loop
    // with breaks around its read.
    bool live = line < pc.lines_total;
    LineAddr a = line_addr(min(line, pc.lines_total - 1u));
#if defined(IN_LEN) || defined(PRE_MUL)
    uint idx = IN_INDEX(a, i);
#endif
    CPLX x = CPLX(0.0);
#ifdef IN_LEN
    live = live && idx < IN_LEN;
    if (live) {
#endif
#ifdef REAL_PACK
    // Z[i] = Fe + i Fo, Fe = (X[i] + conj X[h-i]) / 2, Fo = W^-i (X[i] - conj X[h-i]) / 2; the
    // imaginary parts of the DC and Nyquist bins are ignored, as numpy does.
    const uint h = REAL_PACK / 2u;
    uint base = IN_ADDR(a, 0u);
#ifdef REAL_ROWS
    // numpy drops the imaginary parts of each row's DC and Nyquist bins after the columns'
    // inverse: here, before it, that is the columns' Hermitian parts of those two bins.
    LineAddr pa = a;
    pa.batch = partner_row(a.batch);
    uint pbase = IN_ADDR(pa, 0u);
    VEC2 p = SRC(base + i), q = SRC(pbase + h - i);
    if (i == 0u) {
        VEC2 p2 = SRC(pbase), q2 = SRC(base + h);
        p = 0.5 * (p + VEC2(p2.x, -p2.y));
        q = 0.5 * (q + VEC2(q2.x, -q2.y));
    }
    q.y = -q.y;
#else
    VEC2 p = SRC(base + i), q = SRC(base + h - i);
    q.y = -q.y;
    if (i == 0u) { p.y = 0.0; q.y = 0.0; }
#endif
    VEC2 w = table[REAL_TW + i];
    VEC2 fo = cmul(0.5 * (p - q), VEC2(w.x, -w.y));
    x = 0.5 * (p + q) + VEC2(-fo.y, fo.x);
#else
    x = SRC(IN_ADDR(a, i));
#endif
#ifdef PRE_MUL
    x = cmul(x, table[PRE_MUL + idx]);
#endif
#ifdef IN_LEN
    }
#endif
    return live ? x : CPLX(0.0);
}

#ifdef FOURSTEP_TW_N
// The twiddle W^(d k) of a four-step pass, from the two-level table: invocations with
// neighbouring k (and the same line digit d) read neighbouring LO entries and one HI entry.
VEC2 fourstep_twiddle(uint d, uint k) {
#ifdef FOURSTEP_DIGITS
    // Tables stored [k][d] (FOURSTEP_DIGITS values of d): line-fastest invocations have
    // neighbouring d, so their reads stay neighbours.
    VEC2 w = cmul(table[FOURSTEP_HI + (k / FOURSTEP_LO_LEN) * FOURSTEP_DIGITS + d],
                  table[FOURSTEP_LO + (k % FOURSTEP_LO_LEN) * FOURSTEP_DIGITS + d]);
#else
    VEC2 w = cmul(table[FOURSTEP_HI + d * FOURSTEP_KH + k / FOURSTEP_LO_LEN],
                  table[FOURSTEP_LO + d * FOURSTEP_LO_LEN + k % FOURSTEP_LO_LEN]);
#endif
#if INVERSE
    w.y = -w.y;
#endif
    return w;
}
#endif

void store(uint line, uint k, CPLX x) {
    LineAddr a = line_addr(line);
    bool live = line < pc.lines_total;
#if defined(OUT_LEN) || defined(POST_MUL)
    uint idx = OUT_INDEX(a, k);
#endif
#ifdef OUT_LEN
    live = live && idx < OUT_LEN;
#endif
    if (live) {
#ifdef POST_MUL
        x = cmul(x, table[POST_MUL + idx]);
#endif
        uint e = OUT_ADDR(a, k);
#ifdef MUL_SPEC
#ifdef SPEC_SIZE
        x = cmul(x, spec[e % SPEC_SIZE]);  // one spectrum for every layer
#else
        x = cmul(x, spec[e]);
#endif
#endif
        dst_put(e, x * SCALE);
    }
}

// Butterfly b (0, 1, ...) of invocation tid in a stage of `span` butterflies: j, and whether it
// exists. `paired` (the last stage of a fused real unpack) hands them out in pairs, j = u and
// span - u for pair u (u = 0: 0 and span / 2), so that each output Z[k] and its partner Z[N - k]
// end in one invocation's registers: butterfly j's output r is k = j + r span, and N - k is
// output R - 1 - r of butterfly span - j.
bool butterfly(uint tid, uint b, const uint span, const bool paired, out uint j) {
    if (paired) {
        uint u = tid + (b / 2u) * THREADS;
        j = b % 2u == 0u ? u : (u == 0u ? span / 2u : span - u);
        return u < (span + 1u) / 2u && (b % 2u == 0u || u != 0u || span % 2u == 0u);
    }
    j = tid + b * THREADS;
    return span % THREADS == 0u || j < span;
}

#ifdef REAL_UNPACK
// X[k] = (Z[k] + conj Z[N-k]) / 2 - i W^k (Z[k] - conj Z[N-k]) / 2 (W = W_2N, Z[N] = Z[0]), and
// X[N-k] from the same two values with W^(N-k) = -conj(W^k): a = Z[k], b = Z[N-k], k <= N. k =
// N/2 (N even) is its own partner, written once. With REAL_ROWS, b is row pline's and X[N-k] is
// that row's (pline = line otherwise).
void unpack_pair(uint line, uint pline, uint k, VEC2 a, VEC2 b) {
    VEC2 w = table[REAL_TW + k];
    VEC2 d = 0.5 * (a - VEC2(b.x, -b.y)), d2 = 0.5 * (b - VEC2(a.x, -a.y));
    store(line, k, 0.5 * (a + VEC2(b.x, -b.y)) + cmul(w, VEC2(d.y, -d.x)));
    if (2u * k != N)
        store(pline, N - k, 0.5 * (b + VEC2(a.x, -a.y)) - cmul(VEC2(w.x, -w.y), VEC2(d2.y, -d2.x)));
}
#endif

// Where butterfly j of a radix-R stage with stride Ns writes its output r = 0: r goes Ns further.
uint stage_out(uint j, const uint R, const uint Ns) { return (j / Ns) * Ns * R + j % Ns; }

// One radix-R Stockham stage with Ns = product of the earlier radices. Butterfly j reads
// x[j + r*N/R] and writes y[(j / Ns) * Ns * R + j % Ns + r * Ns], twiddled by W_{Ns R}^{r (j % Ns)}
// from the stage's table at tw. from_sh / to_sh: whether the stage reads / writes shared memory
// rather than global memory; last: the final stage, which applies a four-step twiddle (its
// outputs k are consecutive across invocations there, so the table reads coalesce). (tid, ly):
// the invocation's butterflies and line in this stage; (tid_p, ly_p): in the stage before, where
// the last stage is numbered differently (STORE_LINE_FASTEST).
void stage(const uint R, const uint Ns, const uint prev_r, const bool from_sh, const bool to_sh,
           const bool last, const uint tw, uint tid, uint ly, uint tid_p, uint ly_p) {
    const uint span = N / R;
    // The permutation of the exchange this stage reads (none after a tiled load) and of the one
    // it writes (none before a tiled store or the real unpack, which read in plain order).
    const uint m_in = prev_r == 0u ? 0u : swizzle_m(prev_r, Ns / prev_r);
    const uint m_out = last ? 0u : swizzle_m(R, Ns);
    uint line = first_line + ly;
#ifdef FOURSTEP_TW_N
    uint d = line < pc.lines_total ? FOURSTEP_LINE(line_addr(line)) : 0u;  // the line's digit
#endif
    // This stage's butterflies per invocation (pairs of them for the real unpack); the guard
    // folds away where THREADS divides span.
    const bool paired = UNPACK_LAST != 0 && last;
    const uint nb = paired ? 2u * (((span + 1u) / 2u + THREADS - 1u) / THREADS)
                           : (span + THREADS - 1u) / THREADS;
    uint j;
    UNROLL for (uint b = 0u; b < nb; b++) {
        if (butterfly(tid, b, span, paired, j)) {
            UNROLL for (uint r = 0u; r < R; r++) {
#if USES_SHARED && SH_HALVES
                if (from_sh) v[b * R + r].RE = SHF(ly, swizzle(j + r * span, m_in));
                else
#elif USES_SHARED
                if (from_sh) v[b * R + r] = SH(ly, swizzle(j + r * span, m_in));
                else
#endif
                v[b * R + r] = load(line, j + r * span);
            }
        }
    }
#if USES_SHARED && SH_HALVES
    if (from_sh) {
        // The real parts are in; the previous stage's imaginary parts, still in v[].y where it
        // left them, go where its real parts went, and come back in this stage's order.
        barrier();
        const uint ns_p = Ns / prev_r, span_p = N / prev_r;
        UNROLL for (uint b = 0u; b < (span_p + THREADS - 1u) / THREADS; b++) {
            if (butterfly(tid_p, b, span_p, false, j)) {
                uint out0 = stage_out(j, prev_r, ns_p);
                UNROLL for (uint r = 0u; r < prev_r; r++)
                    SHF(ly_p, swizzle(out0 + r * ns_p, m_in)) = v[b * prev_r + r].IM;
            }
        }
        barrier();
        UNROLL for (uint b = 0u; b < nb; b++) {
            if (butterfly(tid, b, span, paired, j)) {
                UNROLL for (uint r = 0u; r < R; r++)
                    v[b * R + r].IM = SHF(ly, swizzle(j + r * span, m_in));
            }
        }
    }
#endif
#if USES_SHARED
    // Everyone has read this stage's inputs before anyone overwrites shared memory.
    if (from_sh && to_sh) barrier();
#endif
    UNROLL for (uint b = 0u; b < nb; b++) {
        if (butterfly(tid, b, span, paired, j)) {
            uint o = b * R;
            uint k = j % Ns;
            if (Ns > 1u) {
                UNROLL for (uint r = 1u; r < R; r++) {
                    VEC2 w = table[tw + (r - 1u) * Ns + k];
#if INVERSE
                    w.y = -w.y;
#endif
                    v[o + r] = cmul(v[o + r], w);
                }
            }
            dft(R, o);
            uint out0 = stage_out(j, R, Ns);
#ifdef FOURSTEP_TW_N
            if (last) {
                UNROLL for (uint r = 0u; r < R; r++)
                    v[o + r] = cmul(v[o + r], fourstep_twiddle(d, out0 + r * Ns));
            }
#endif
            if (!paired) UNROLL for (uint r = 0u; r < R; r++) {
#if USES_SHARED && SH_HALVES
                if (to_sh) SHF(ly, swizzle(out0 + r * Ns, m_out)) = v[o + r].RE;
                else
#elif USES_SHARED
                if (to_sh) SH(ly, swizzle(out0 + r * Ns, m_out)) = v[o + r];
                else
#endif
                store(line, out0 + r * Ns, v[o + r]);
            }
        }
    }
#ifdef REAL_UNPACK
    // Pair u's R slots each write X[k] and X[N - k]: k = u + r span from butterfly A = u, its
    // partner from B = span - u. Pair 0's butterflies (0 and span / 2) are their own partners;
    // its slots take A's pairs (r, R - r), then B's (r, R - 1 - r), and X[N/2] (A's or B's own)
    // comes after. The same stores in every lane, only the operands differ for pair 0, so the
    // warp holding it does not run a second path.
    if (paired) UNROLL for (uint q = 0u; q < nb / 2u; q++) {
        uint u = tid + q * THREADS;
        const uint A = 2u * q * R, B = A + R, h = (R + 1u) / 2u;
        if (u < (span + 1u) / 2u) {
            UNROLL for (uint r = 0u; r < R; r++) {
                uint k = u + r * span;
                VEC2 a = v[A + r], b = v[B + R - 1u - r];
                if (u == 0u) {
                    if (r < h) {
                        k = r * span;
                        b = v[A + (R - r) % R];
                    } else {
                        k = span / 2u + (r - h) * span;
                        a = v[B + r - h];
                        b = v[B + R - 1u - (r - h)];
                    }
                }
                if (u != 0u || r < h || span % 2u == 0u) unpack_pair(line, line, k, a, b);
            }
            if (u == 0u && N % 2u == 0u) {
                VEC2 z = v[R % 2u == 0u ? A + R / 2u : B + (R - 1u) / 2u];
                unpack_pair(line, line, N / 2u, z, z);
            }
        }
    }
#endif
#if USES_SHARED
    if (to_sh) barrier();
#endif
}

void main() {
    first_line = flat_group_id(pc.group_base) * LINES;
    // Line-fastest numbering: neighbouring invocations work on neighbouring lines, so a warp's
    // reads and writes of element i of LINES lines coalesce where the lines are the memory's
    // fastest index (strided axes), without a trip of the tile through shared memory. Every
    // stage of a LINE_FASTEST pass takes it; with STORE_LINE_FASTEST only the last, whose
    // inputs are in shared memory anyway, while the others read contiguous lines in line order.
    uint tid_l = gl_LocalInvocationIndex / LINES, ly_l = gl_LocalInvocationIndex % LINES;
#if LINE_FASTEST
    uint tid = tid_l, ly = ly_l;
#else
    uint tid = gl_LocalInvocationID.x, ly = gl_LocalInvocationID.y;
#endif
    uint e0 = gl_LocalInvocationIndex;  // the invocation's first element of tiled moves
#if LOAD_TILED
    // Line-fastest order: neighbouring invocations read neighbouring lines' element i. Every
    // load is issued before the first store to shared memory, so each invocation has
    // TILE_MOVES loads in flight rather than one.
    {
        CPLX t[TILE_MOVES];
        UNROLL for (uint q = 0u; q < TILE_MOVES; q++) {
            uint e = e0 + q * GROUP_SIZE;
            if (e < LINES * N) t[q] = load(first_line + e % LINES, e / LINES);
        }
        UNROLL for (uint q = 0u; q < TILE_MOVES; q++) {
            uint e = e0 + q * GROUP_SIZE;
            if (e < LINES * N) SH(e % LINES, e / LINES) = t[q];
        }
    }
    barrier();
#endif
#if NUM_STAGES == 0
#if LOAD_TILED
    CPLX x0 = SH(ly, 0u);
#else
    CPLX x0 = load(first_line + ly, 0u);
#endif
#if STORE_TILED
    if (tid == 0u) SH(ly, 0u) = x0;
    barrier();
#else
    if (tid == 0u) store(first_line + ly, 0u, x0);
#endif
#else
#if STORE_LINE_FASTEST
#define STAGE_IDS(LAST) (LAST) ? tid_l : tid, (LAST) ? ly_l : ly, tid, ly
#else
#define STAGE_IDS(LAST) tid, ly, tid, ly
#endif
#define STAGE(R, NS, PREV_R, FIRST, LAST, TW) \
    stage(R, NS, PREV_R, (FIRST) ? bool(LOAD_TILED) : true, (LAST) ? bool(STORE_VIA_SHARED) : true, \
          LAST, TW, STAGE_IDS(LAST));
    FFT_STAGES
#endif
#if defined(REAL_UNPACK) && !UNPACK_REGS
    // From shared memory: each invocation writes a pair for k = 0..N/2, neighbouring
    // invocations neighbouring k, so the workgroup's lines are written as one run.
    const uint UNPACK_K = N / 2u + 1u;
    UNROLL for (uint q = 0u; q < (LINES * UNPACK_K + GROUP_SIZE - 1u) / GROUP_SIZE; q++) {
        uint e = e0 + q * GROUP_SIZE;
        if (e < LINES * UNPACK_K) {
            uint l = e / UNPACK_K, k = e % UNPACK_K;
#ifdef REAL_ROWS
            uint pl = first_line / 2u % (REAL_ROWS / 2u) == 0u ? l : l ^ 1u;
#else
            uint pl = l;
#endif
            unpack_pair(first_line + l, first_line + pl, k, SH(l, k), SH(pl, (N - k) % N));
        }
    }
#elif STORE_TILED
    UNROLL for (uint q = 0u; q < TILE_MOVES; q++) {
        uint e = e0 + q * GROUP_SIZE;
        if (e < LINES * N) store(first_line + e % LINES, e / LINES, SH(e % LINES, e / LINES));
    }
#endif
}
