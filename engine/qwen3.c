/* The Qwen3 forward pass. Read top to bottom: number formats, dot products,
 * activation rounding, the thread pool, loading, then the forward pass
 * (forward_batch) that carries a batch of tokens from embeddings to logits.
 *
 * The mathematics follows llama.cpp's CPU backend for this architecture
 * (src/models/qwen3.cpp; ggml-cpu ops rms_norm, rope, soft_max): the same
 * epsilon placement, the same RoPE angle recurrence, softmax sums in double.
 * Summation orders inside dot products are our own (fixed), so agreement
 * with llama.cpp is close, not bitwise. */
#include "qwen3.h"

/* No fused multiply-add anywhere in this file, whatever the build flags
 * (GNU C modes and -march=native would otherwise let the compiler fuse
 * a*b+c, including inside the intrinsic kernels): every rounding step is
 * then the same on every machine. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include "codec.h"
#include "gguf_file.h"

#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define VT_X86 1
#endif

#define VT_ENGINE_MAX_THREADS 256

/* ======================================================================
 * Number formats: F16 and FP8 E4M3 encoders (decoders are tables/codec.h)
 * ====================================================================== */

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* v / 2^s rounded to nearest, ties to even (s >= 1). */
static uint32_t rne_shift(uint32_t v, int s)
{
    if (s >= 32)
        return 0; /* v < 2^24 here, below half a unit */
    uint32_t q = v >> s;
    uint32_t rem = v & ((1u << s) - 1u), half = 1u << (s - 1);
    if (rem > half || (rem == half && (q & 1u)))
        q++;
    return q;
}

/* Both narrow formats are encoded the same way: the target unit is
 * 2^(max(e, e_min) - mant_bits), the significand is rounded to that unit,
 * and ((E - e_min + 1) << mant_bits) + q is the code, the rounding carry
 * moving into the exponent by itself (and subnormals falling out at E =
 * e_min). */
uint16_t vt_f32_to_f16(float f)
{
    uint32_t u = f32_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) /* NaN: quiet, top payload bits kept (as F16C) */
        return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
    if (a >= 0x477ff000u) /* >= 65520 rounds past 65504: inf */
        return (uint16_t)(sign | 0x7c00u);
    if (a < 0x00800000u) /* F32 zero or subnormal: far below F16's unit */
        return sign;
    int e = (int)(a >> 23) - 127;
    uint32_t m = (a & 0x7fffffu) | 0x800000u;
    int E = e < -14 ? -14 : e;
    uint32_t q = rne_shift(m, 13 + (E - e));
    return (uint16_t)(sign | (uint32_t)(((E + 14) << 10) + (int)q));
}

uint8_t vt_fp8_e4m3_from_f32(float f)
{
    uint32_t u = f32_bits(f);
    uint8_t sign = (uint8_t)((u >> 24) & 0x80u);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u)
        return (uint8_t)(sign | 0x7fu);
    if (fabsf(f) >= 448.0f) /* saturate: 448 is the largest finite; inf too */
        return (uint8_t)(sign | 0x7eu);
    if (a < 0x00800000u)
        return sign;
    int e = (int)(a >> 23) - 127;
    uint32_t m = (a & 0x7fffffu) | 0x800000u;
    int E = e < -6 ? -6 : e;
    uint32_t q = rne_shift(m, 20 + (E - e));
    return (uint8_t)(sign | (uint32_t)(((E + 6) << 3) + (int)q));
}

float vt_fp8_e4m3_to_f32(uint8_t c)
{
    float sign = (c & 0x80u) ? -1.0f : 1.0f;
    int ef = (c >> 3) & 15, mf = c & 7;
    if (ef == 15 && mf == 7)
        return copysignf(NAN, sign);
    if (ef == 0)
        return sign * ldexpf((float)mf, -9);
    return sign * ldexpf((float)(8 + mf), ef - 10);
}

/* ======================================================================
 * Dot products
 *
 * Every dot product in the engine has one summation order: 16 partial sums
 * (lane k holds the elements i with i % 16 == k of the 16-aligned part),
 * the tail added into lanes 0.., then a fixed pairwise reduction; products
 * and sums are separate roundings (no FMA). SSE2, AVX2 and AVX-512 kernels
 * differ only in how many lanes one instruction updates, so every element
 * comes out the same on every machine (FP_CONTRACT is off for this file,
 * see the top). dot4 computes four rows against one vector,
 * loading the vector once; each of its results equals dot()'s.
 * ====================================================================== */

typedef float (*dot_fn)(const float *a, const float *b, int64_t n);
typedef void (*dot4_fn)(const float *w, int64_t ldw, const float *x, int64_t n, float *out);
/* y[i] = y[i] + a * x[i]: element-wise, so the same on every ISA. */
typedef void (*axpy_fn)(float *restrict y, float a, const float *restrict x, int64_t n);
/* A 4 x 4 tile: y[t * ldy + r] = dot(w row r, x row t), r, t < 4. */
typedef void (*tile_fn)(const float *w, int64_t ldw, const float *x, int64_t ldx, int64_t n,
                        float *y, int64_t ldy);

__attribute__((always_inline)) static inline float reduce16(float *l, const float *a,
                                                           const float *b, int64_t from, int64_t n)
{
    for (int64_t i = from; i < n; i++)
        l[i - from] += a[i] * b[i];
    for (int k = 0; k < 8; k++)
        l[k] += l[k + 8];
    for (int k = 0; k < 4; k++)
        l[k] += l[k + 4];
    l[0] += l[2];
    l[1] += l[3];
    return l[0] + l[1];
}

static float dot_c(const float *a, const float *b, int64_t n)
{
    float l[16] = { 0 };
    int64_t n16 = n & ~(int64_t)15;
    for (int64_t i = 0; i < n16; i += 16)
        for (int k = 0; k < 16; k++)
            l[k] += a[i + k] * b[i + k];
    return reduce16(l, a, b, n16, n);
}

static void dot4_c(const float *w, int64_t ldw, const float *x, int64_t n, float *out)
{
    for (int r = 0; r < 4; r++)
        out[r] = dot_c(w + r * ldw, x, n);
}

#ifdef VT_X86
static float dot_sse2(const float *a, const float *b, int64_t n)
{
    __m128 s0 = _mm_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    int64_t n16 = n & ~(int64_t)15;
    for (int64_t i = 0; i < n16; i += 16) {
        s0 = _mm_add_ps(s0, _mm_mul_ps(_mm_loadu_ps(a + i), _mm_loadu_ps(b + i)));
        s1 = _mm_add_ps(s1, _mm_mul_ps(_mm_loadu_ps(a + i + 4), _mm_loadu_ps(b + i + 4)));
        s2 = _mm_add_ps(s2, _mm_mul_ps(_mm_loadu_ps(a + i + 8), _mm_loadu_ps(b + i + 8)));
        s3 = _mm_add_ps(s3, _mm_mul_ps(_mm_loadu_ps(a + i + 12), _mm_loadu_ps(b + i + 12)));
    }
    float l[16];
    _mm_storeu_ps(l, s0);
    _mm_storeu_ps(l + 4, s1);
    _mm_storeu_ps(l + 8, s2);
    _mm_storeu_ps(l + 12, s3);
    return reduce16(l, a, b, n16, n);
}

static void dot4_sse2(const float *w, int64_t ldw, const float *x, int64_t n, float *out)
{
    for (int r = 0; r < 4; r++)
        out[r] = dot_sse2(w + r * ldw, x, n);
}

__attribute__((target("avx2"))) static float dot_avx2(const float *a, const float *b, int64_t n)
{
    __m256 s0 = _mm256_setzero_ps(), s1 = s0;
    int64_t n16 = n & ~(int64_t)15;
    for (int64_t i = 0; i < n16; i += 16) {
        s0 = _mm256_add_ps(s0, _mm256_mul_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
        s1 = _mm256_add_ps(s1, _mm256_mul_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8)));
    }
    float l[16];
    _mm256_storeu_ps(l, s0);
    _mm256_storeu_ps(l + 8, s1);
    return reduce16(l, a, b, n16, n);
}

__attribute__((target("avx2"))) static void dot4_avx2(const float *w, int64_t ldw, const float *x,
                                                      int64_t n, float *out)
{
    __m256 s[4][2];
    for (int r = 0; r < 4; r++)
        s[r][0] = s[r][1] = _mm256_setzero_ps();
    int64_t n16 = n & ~(int64_t)15;
    for (int64_t i = 0; i < n16; i += 16) {
        __m256 x0 = _mm256_loadu_ps(x + i), x1 = _mm256_loadu_ps(x + i + 8);
        for (int r = 0; r < 4; r++) {
            const float *wr = w + r * ldw + i;
            s[r][0] = _mm256_add_ps(s[r][0], _mm256_mul_ps(_mm256_loadu_ps(wr), x0));
            s[r][1] = _mm256_add_ps(s[r][1], _mm256_mul_ps(_mm256_loadu_ps(wr + 8), x1));
        }
    }
    for (int r = 0; r < 4; r++) {
        float l[16];
        _mm256_storeu_ps(l, s[r][0]);
        _mm256_storeu_ps(l + 8, s[r][1]);
        out[r] = reduce16(l, w + r * ldw, x, n16, n);
    }
}

__attribute__((target("avx512f"))) static float dot_avx512(const float *a, const float *b, int64_t n)
{
    __m512 s = _mm512_setzero_ps();
    int64_t n16 = n & ~(int64_t)15;
    for (int64_t i = 0; i < n16; i += 16)
        s = _mm512_add_ps(s, _mm512_mul_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i)));
    float l[16];
    _mm512_storeu_ps(l, s);
    return reduce16(l, a, b, n16, n);
}

__attribute__((target("avx512f"))) static void dot4_avx512(const float *w, int64_t ldw,
                                                           const float *x, int64_t n, float *out)
{
    __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    int64_t n16 = n & ~(int64_t)15;
    for (int64_t i = 0; i < n16; i += 16) {
        __m512 xv = _mm512_loadu_ps(x + i);
        s0 = _mm512_add_ps(s0, _mm512_mul_ps(_mm512_loadu_ps(w + i), xv));
        s1 = _mm512_add_ps(s1, _mm512_mul_ps(_mm512_loadu_ps(w + ldw + i), xv));
        s2 = _mm512_add_ps(s2, _mm512_mul_ps(_mm512_loadu_ps(w + 2 * ldw + i), xv));
        s3 = _mm512_add_ps(s3, _mm512_mul_ps(_mm512_loadu_ps(w + 3 * ldw + i), xv));
    }
    __m512 s[4] = { s0, s1, s2, s3 };
    for (int r = 0; r < 4; r++) {
        float l[16];
        _mm512_storeu_ps(l, s[r]);
        out[r] = reduce16(l, w + r * ldw, x, n16, n);
    }
}

/* Four rows x four tokens: 16 independent accumulators, so the adds of one
 * lane chain no longer wait on each other, and each load feeds four
 * products. Element (t, r) sums exactly as dot(w row r, x row t). */
__attribute__((target("avx512f"))) static void tile_avx512(const float *w, int64_t ldw,
                                                           const float *x, int64_t ldx,
                                                           int64_t n, float *y, int64_t ldy)
{
    __m512 s00 = _mm512_setzero_ps(), s01 = s00, s02 = s00, s03 = s00;
    __m512 s10 = s00, s11 = s00, s12 = s00, s13 = s00;
    __m512 s20 = s00, s21 = s00, s22 = s00, s23 = s00;
    __m512 s30 = s00, s31 = s00, s32 = s00, s33 = s00;
    int64_t n16 = n & ~(int64_t)15;
    for (int64_t i = 0; i < n16; i += 16) {
        const __m512 w0 = _mm512_loadu_ps(w + i), w1 = _mm512_loadu_ps(w + ldw + i);
        const __m512 w2 = _mm512_loadu_ps(w + 2 * ldw + i), w3 = _mm512_loadu_ps(w + 3 * ldw + i);
#define TOKEN(t)                                                      \
        {                                                             \
            const __m512 xv = _mm512_loadu_ps(x + t * ldx + i);       \
            s##t##0 = _mm512_add_ps(s##t##0, _mm512_mul_ps(w0, xv)); \
            s##t##1 = _mm512_add_ps(s##t##1, _mm512_mul_ps(w1, xv)); \
            s##t##2 = _mm512_add_ps(s##t##2, _mm512_mul_ps(w2, xv)); \
            s##t##3 = _mm512_add_ps(s##t##3, _mm512_mul_ps(w3, xv)); \
        }
        TOKEN(0) TOKEN(1) TOKEN(2) TOKEN(3)
#undef TOKEN
    }
    const __m512 acc[4][4] = { { s00, s01, s02, s03 }, { s10, s11, s12, s13 },
                               { s20, s21, s22, s23 }, { s30, s31, s32, s33 } };
    for (int t = 0; t < 4; t++)
        for (int r = 0; r < 4; r++) {
            float l[16];
            _mm512_storeu_ps(l, acc[t][r]);
            y[t * ldy + r] = reduce16(l, w + r * ldw, x + t * ldx, n16, n);
        }
}
#endif

static void axpy_c(float *restrict y, float a, const float *restrict x, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = y[i] + a * x[i];
}

#ifdef VT_X86
static void axpy_sse2(float *restrict y, float a, const float *restrict x, int64_t n)
{
    const __m128 av = _mm_set1_ps(a);
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
        _mm_storeu_ps(y + i, _mm_add_ps(_mm_loadu_ps(y + i), _mm_mul_ps(av, _mm_loadu_ps(x + i))));
    axpy_c(y + i, a, x + i, n - i);
}

__attribute__((target("avx2"))) static void axpy_avx2(float *restrict y, float a,
                                                      const float *restrict x, int64_t n)
{
    const __m256 av = _mm256_set1_ps(a);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_loadu_ps(y + i),
                                              _mm256_mul_ps(av, _mm256_loadu_ps(x + i))));
    axpy_c(y + i, a, x + i, n - i);
}

__attribute__((target("avx512f"))) static void axpy_avx512(float *restrict y, float a,
                                                           const float *restrict x, int64_t n)
{
    const __m512 av = _mm512_set1_ps(a);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(y + i, _mm512_add_ps(_mm512_loadu_ps(y + i),
                                              _mm512_mul_ps(av, _mm512_loadu_ps(x + i))));
    axpy_c(y + i, a, x + i, n - i);
}
#endif

/* Where four tokens' worth of accumulators do not fit the registers, a tile
 * is four dot4 calls. */
#define TILE_FROM_DOT4(name, dot4)                                                      \
    static void name(const float *w, int64_t ldw, const float *x, int64_t ldx, int64_t n, \
                     float *y, int64_t ldy)                                             \
    {                                                                                   \
        for (int t = 0; t < 4; t++)                                                     \
            dot4(w, ldw, x + t * ldx, n, y + t * ldy);                                  \
    }
TILE_FROM_DOT4(tile_c, dot4_c)
#ifdef VT_X86
TILE_FROM_DOT4(tile_sse2, dot4_sse2)
TILE_FROM_DOT4(tile_avx2, dot4_avx2)
#endif

typedef struct kernels {
    const char *isa;
    dot_fn dot;
    dot4_fn dot4;
    tile_fn tile;
    axpy_fn axpy;
} kernels;

/* The widest kernels the CPU runs, or the ones $VT_ENGINE_ISA names ("c",
 * "sse2", "avx2", "avx512f"; a diagnostic override, honoured only if the CPU
 * has it): results are identical either way, which is how that is tested. */
static kernels pick_kernels(void)
{
    static const kernels c = { "c", dot_c, dot4_c, tile_c, axpy_c };
    const char *want = getenv("VT_ENGINE_ISA");
    if (want && strcmp(want, "c") == 0)
        return c;
#ifdef VT_X86
    static const kernels sse2 = { "sse2", dot_sse2, dot4_sse2, tile_sse2, axpy_sse2 };
    static const kernels avx2 = { "avx2", dot_avx2, dot4_avx2, tile_avx2, axpy_avx2 };
    static const kernels avx512 = { "avx512f", dot_avx512, dot4_avx512, tile_avx512, axpy_avx512 };
    __builtin_cpu_init();
    const int has512 = __builtin_cpu_supports("avx512f"), has2 = __builtin_cpu_supports("avx2");
    if (want && strcmp(want, "sse2") == 0)
        return sse2;
    if (want && strcmp(want, "avx2") == 0 && has2)
        return avx2;
    if (has512 && !(want && strcmp(want, "avx2") == 0))
        return avx512;
    return has2 ? avx2 : sse2;
#else
    return c;
#endif
}

/* ======================================================================
 * Activation rounding for VT_MATMUL_Q8: the activation row is passed through
 * the weight type's vec_dot_type (ggml-cpu.c type_traits_cpu) and back to
 * F32, so an F32 product then sees the values llama.cpp's integer kernels
 * see. Quantizers follow ggml's reference ones (quantize_row_q8_0_ref,
 * quantize_row_q8_K_ref).
 * ====================================================================== */

typedef enum act_type {
    ACT_F32 = 0, /* used as is (F32 weights; types ggml has no kernel for) */
    ACT_F16,
    ACT_BF16,
    ACT_Q8_0,
    ACT_Q8_1,
    ACT_Q8_K
} act_type;

static act_type vec_dot_type_of(int type)
{
    switch (type) {
    case VT_TYPE_F16: return ACT_F16;
    case VT_TYPE_BF16: return ACT_BF16;
    case VT_TYPE_Q4_0: case VT_TYPE_Q5_0: case VT_TYPE_Q8_0: case VT_TYPE_IQ4_NL:
    case VT_TYPE_MXFP4:
        return ACT_Q8_0;
    case VT_TYPE_Q4_1: case VT_TYPE_Q5_1:
        return ACT_Q8_1;
    case VT_TYPE_Q2_K: case VT_TYPE_Q3_K: case VT_TYPE_Q4_K: case VT_TYPE_Q5_K: case VT_TYPE_Q6_K:
    case VT_TYPE_IQ2_XXS: case VT_TYPE_IQ2_XS: case VT_TYPE_IQ2_S: case VT_TYPE_IQ3_XXS:
    case VT_TYPE_IQ3_S: case VT_TYPE_IQ1_S: case VT_TYPE_IQ1_M: case VT_TYPE_IQ4_XS:
    case VT_TYPE_TQ1_0: case VT_TYPE_TQ2_0:
        return ACT_Q8_K;
    default: return ACT_F32; /* F32; Q8_K as a weight has no ggml dot kernel */
    }
}

/* Q8_0: blocks of 32; d = amax/127 kept as F16; q = roundf(x / d) (ties away
 * from zero, as the reference). Q8_1 quantizes the same values (it also
 * stores a block sum, which only matters to ggml's integer kernel). Note:
 * ggml's x86 AVX quantize_row_q8_0 instead multiplies by 127/amax and rounds
 * ties to even; the two differ only on exact ties. */
static void round_q8_0(const float *x, float *y, int64_t n)
{
    for (int64_t b = 0; b < n; b += 32) {
        float amax = 0.0f;
        for (int j = 0; j < 32; j++)
            amax = fmaxf(amax, fabsf(x[b + j]));
        const float d = amax / 127;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        const float dh = vt_f16_to_f32(vt_f32_to_f16(d));
        for (int j = 0; j < 32; j++)
            y[b + j] = dh * (float)(int8_t)roundf(x[b + j] * id);
    }
}

/* ggml's nearest_int: ties to even via the 1.5*2^23 trick (|v| <= 2^22). */
static int nearest_int(float v)
{
    float t = v + 12582912.0f;
    int32_t i;
    memcpy(&i, &t, 4);
    return (i & 0x007fffff) - 0x00400000;
}

/* Q8_K: blocks of 256; the scale is set by the element of largest magnitude
 * (keeping its sign: iscale = -127/max), d = 1/iscale stays F32. */
static void round_q8_k(const float *x, float *y, int64_t n)
{
    for (int64_t b = 0; b < n; b += 256) {
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < 256; j++) {
            float ax = fabsf(x[b + j]);
            if (ax > amax) {
                amax = ax;
                max = x[b + j];
            }
        }
        if (amax == 0.0f) {
            for (int j = 0; j < 256; j++)
                y[b + j] = 0.0f;
            continue;
        }
        const float iscale = -127.0f / max;
        const float d = 1 / iscale;
        for (int j = 0; j < 256; j++) {
            int v = nearest_int(iscale * x[b + j]);
            y[b + j] = d * (float)(int8_t)(v < 127 ? v : 127);
        }
    }
}

static void round_row(act_type t, const float *x, float *y, int64_t n)
{
    switch (t) {
    case ACT_F16:
        for (int64_t i = 0; i < n; i++)
            y[i] = vt_f16_to_f32(vt_f32_to_f16(x[i]));
        break;
    case ACT_BF16:
        for (int64_t i = 0; i < n; i++)
            y[i] = vt_bf16_to_f32(vt_f32_to_bf16(x[i]));
        break;
    case ACT_Q8_0:
    case ACT_Q8_1: round_q8_0(x, y, n); break;
    case ACT_Q8_K: round_q8_k(x, y, n); break;
    case ACT_F32: memcpy(y, x, (size_t)n * sizeof *y); break;
    }
}

const char *vt_qwen3_vec_dot_type(int weight_type)
{
    static const char *const names[] = { "F32", "F16", "BF16", "Q8_0", "Q8_1", "Q8_K" };
    return names[vec_dot_type_of(weight_type)];
}

void vt_qwen3_round_activation(int weight_type, const float *x, float *y, int64_t n)
{
    round_row(vec_dot_type_of(weight_type), x, y, n);
}

/* ======================================================================
 * Thread pool: n-1 persistent workers plus the calling thread (thread 0).
 * pool_run hands one function to all n and returns when all have finished.
 * Work is always split by index (ith of nth), never taken from a queue, so
 * which thread computes an element is fixed, and the element's value does
 * not depend on it anyway.
 *
 * A token makes a few dispatches per layer, each only microseconds of work
 * on small models, so waiting threads first spin on the generation counter
 * for a short while and only then sleep on the condition variable (sleeping
 * at once would cost a wake-up per dispatch).
 * ====================================================================== */

/* Waits: POOL_SPINS polls with a pause, then POOL_YIELDS polls that yield
 * the core (cheap when idle cores exist, and fair when the machine is
 * oversubscribed, where pure spinning collapses), then sleep. */
#define POOL_SPINS 256
#define POOL_YIELDS 256

typedef void (*task_fn)(void *ctx, int ith, int nth);

typedef struct pool {
    int n;
    pthread_t *threads;
    pthread_mutex_t mu;
    pthread_cond_t start, done;
    atomic_uint_fast64_t generation; /* bumped (under mu) once per dispatch */
    atomic_int pending;              /* workers still running the dispatch */
    atomic_int quit;
    task_fn fn;
    void *ctx;
} pool;

typedef struct worker_arg {
    pool *p;
    int ith;
} worker_arg;

/* Polls until *gen != seen (or *count == 0 when gen is NULL) or the budget
 * runs out; returns whether the wait is over. */
static int poll_wait(atomic_uint_fast64_t *gen, uint64_t seen, atomic_int *count)
{
    for (int i = 0; i < POOL_SPINS + POOL_YIELDS; i++) {
        if (gen ? atomic_load(gen) != seen : atomic_load(count) == 0)
            return 1;
        if (i < POOL_SPINS) {
#ifdef VT_X86
            _mm_pause();
#endif
        } else {
            sched_yield();
        }
    }
    return gen ? atomic_load(gen) != seen : atomic_load(count) == 0;
}

static void *worker_main(void *arg)
{
    worker_arg *w = arg;
    pool *p = w->p;
    uint64_t seen = 0;
    for (;;) {
        if (!poll_wait(&p->generation, seen, NULL)) {
            pthread_mutex_lock(&p->mu);
            while (atomic_load(&p->generation) == seen && !atomic_load(&p->quit))
                pthread_cond_wait(&p->start, &p->mu);
            pthread_mutex_unlock(&p->mu);
        }
        if (atomic_load(&p->quit))
            return NULL;
        seen = atomic_load(&p->generation);

        p->fn(p->ctx, w->ith, p->n); /* fn, ctx were written before the bump */

        if (atomic_fetch_sub(&p->pending, 1) == 1) {
            pthread_mutex_lock(&p->mu);
            pthread_cond_signal(&p->done);
            pthread_mutex_unlock(&p->mu);
        }
    }
}

static void pool_run(pool *p, task_fn fn, void *ctx)
{
    if (p->n <= 1) {
        fn(ctx, 0, 1);
        return;
    }
    p->fn = fn;
    p->ctx = ctx;
    atomic_store(&p->pending, p->n - 1);
    pthread_mutex_lock(&p->mu);
    atomic_fetch_add(&p->generation, 1);
    pthread_cond_broadcast(&p->start);
    pthread_mutex_unlock(&p->mu);

    fn(ctx, 0, p->n);

    if (!poll_wait(NULL, 0, &p->pending)) {
        pthread_mutex_lock(&p->mu);
        while (atomic_load(&p->pending) > 0)
            pthread_cond_wait(&p->done, &p->mu);
        pthread_mutex_unlock(&p->mu);
    }
}

static void pool_stop(pool *p, int started)
{
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->quit, 1);
    atomic_fetch_add(&p->generation, 1);
    pthread_cond_broadcast(&p->start);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < started; i++)
        pthread_join(p->threads[i], NULL);
}

/* ======================================================================
 * The model
 * ====================================================================== */

/* A weight matrix in its codec: rows x cols, row-major (ggml ne[0] = cols). */
typedef struct mat {
    const uint8_t *data;
    const vt_codec *codec;
    int64_t rows, cols;
    size_t row_bytes;
    act_type act; /* vec_dot_type, for Q8 matmul mode */
} mat;

typedef struct layer {
    const float *attn_norm, *q_norm, *k_norm, *ffn_norm;
    mat wq, wk, wv, wo, gate, up, down;
} layer;

struct vt_qwen3 {
    vt_qwen3_hparams hp;
    vt_gguf *gguf;

    mat embd;   /* token_embd: gathered row by row */
    mat output; /* output, or token_embd when tied */
    const float *output_norm;
    layer *layers;

    /* settings */
    int eager;
    vt_matmul_mode matmul;
    vt_cache_dtype cache_dtype;
    int32_t n_ctx, n_batch, n_threads;
    kernels k;

    /* KV cache: [layer][position][n_head_kv * head_dim] in cache_dtype */
    void *k_cache, *v_cache;
    size_t cache_elem;
    int64_t kv_dim;
    int32_t n_past;
    float fp8_table[256];

    /* activations of one batch, [token][feature] */
    float *x;    /* residual stream, n_embd */
    float *xn;   /* normed input of a projection, n_embd */
    float *q;    /* n_head * head_dim */
    float *kb;   /* n_head_kv * head_dim */
    float *vb;   /* n_head_kv * head_dim */
    float *att;  /* attention output, n_head * head_dim */
    float *proj; /* output of wo / down, n_embd */
    float *gate; /* n_ff */
    float *up;   /* n_ff */
    float *xq[3];  /* activations rounded for Q8 mode, max_in */
    float *rope;   /* cos/sin pairs per token, head_dim */
    int64_t *ids;

    /* per thread: weight rows (4 x max_in), scores (n_ctx), 4 K rows and a
     * V row converted from the cache (head_dim each) */
    float *scratch;
    size_t scratch_stride;
    int64_t max_in;

    pool pool;
    worker_arg *worker_args;
    int threads_started;

    char detail[192];
};

static size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

/* 64-byte aligned, zeroed; NULL on overflow or out of memory. */
static void *alloc_aligned(size_t count, size_t elem)
{
    size_t bytes;
    if (__builtin_mul_overflow(count, elem, &bytes) || bytes > SIZE_MAX - 64)
        return NULL;
    bytes = round_up(bytes ? bytes : 1, 64);
    void *p = aligned_alloc(64, bytes);
    if (p)
        memset(p, 0, bytes);
    return p;
}

/* ---------- loading ---------- */

static int get_i32(const vt_gguf *g, const char *key, int required, int32_t def, int32_t *out,
                   vt_error *err)
{
    int64_t v;
    if (vt_gguf_find_key(g, key) < 0) {
        if (required)
            return vt_error_set(err, VT_EINPUT, "%s: key %s: missing", vt_gguf_name(g), key);
        *out = def;
        return VT_OK;
    }
    if (!vt_gguf_get_i64(g, key, &v) || v <= 0 || v > INT32_MAX)
        return vt_error_set(err, VT_EINPUT, "%s: key %s: expected a positive 32-bit integer",
                            vt_gguf_name(g), key);
    *out = (int32_t)v;
    return VT_OK;
}

static int get_f32(const vt_gguf *g, const char *key, int required, float def, float *out,
                   vt_error *err)
{
    double v;
    if (vt_gguf_find_key(g, key) < 0) {
        if (required)
            return vt_error_set(err, VT_EINPUT, "%s: key %s: missing", vt_gguf_name(g), key);
        *out = def;
        return VT_OK;
    }
    if (!vt_gguf_get_f64(g, key, &v) || !(v >= 0.0) || !isfinite(v))
        return vt_error_set(err, VT_EINPUT, "%s: key %s: expected a finite non-negative number",
                            vt_gguf_name(g), key);
    *out = (float)v;
    return VT_OK;
}

/* The tensor named name, checked to be ne0 x ne1 (ne1 = 0: a vector). */
static const vt_gguf_tensor *find_checked(const vt_gguf *g, const char *name, int64_t ne0,
                                          int64_t ne1, vt_error *err)
{
    const vt_gguf_tensor *t = vt_gguf_find_tensor(g, name);
    if (!t) {
        vt_error_set(err, VT_EINPUT, "%s: tensor %s: missing", vt_gguf_name(g), name);
        return NULL;
    }
    int64_t want[4] = { ne0, ne1 ? ne1 : 1, 1, 1 };
    if (memcmp(t->ne, want, sizeof want) != 0) {
        vt_error_set(err, VT_EINPUT,
                     "%s: tensor %s: shape [%lld, %lld, %lld, %lld]: expected [%lld, %lld, 1, 1]",
                     vt_gguf_name(g), name, (long long)t->ne[0], (long long)t->ne[1],
                     (long long)t->ne[2], (long long)t->ne[3], (long long)want[0],
                     (long long)want[1]);
        return NULL;
    }
    return t;
}

/* A norm weight: an F32 vector of n. */
static const float *load_vector(const vt_gguf *g, const char *name, int64_t n, vt_error *err)
{
    const vt_gguf_tensor *t = find_checked(g, name, n, 0, err);
    if (!t)
        return NULL;
    if (t->type != VT_TYPE_F32) {
        const vt_codec *c = vt_codec_by_type(t->type);
        vt_error_set(err, VT_EINPUT, "%s: tensor %s: type %s: expected F32", vt_gguf_name(g), name,
                     c ? c->name : "?");
        return NULL;
    }
    if (((uintptr_t)t->data & 3u) != 0) {
        vt_error_set(err, VT_EINPUT, "%s: tensor %s: data not 4-byte aligned", vt_gguf_name(g),
                     name);
        return NULL;
    }
    return (const float *)t->data;
}

/* A matrix of rows x cols in any decodable codec. */
static int load_matrix(const vt_gguf *g, const char *name, int64_t cols, int64_t rows, mat *out,
                       vt_error *err)
{
    const vt_gguf_tensor *t = find_checked(g, name, cols, rows, err);
    if (!t)
        return err->code;
    const vt_codec *c = vt_codec_by_type(t->type);
    if (!c || !c->decode_f32)
        return vt_error_set(err, VT_EINPUT, "%s: tensor %s: type %s: no decoder for this codec",
                            vt_gguf_name(g), name, c ? c->name : "?");
    if (cols % c->block_elems != 0)
        return vt_error_set(err, VT_EINPUT,
                            "%s: tensor %s: type %s: rows of %lld elements: expected a multiple "
                            "of the block size %lld",
                            vt_gguf_name(g), name, c->name, (long long)cols,
                            (long long)c->block_elems);
    if (t->type == VT_TYPE_F32 && ((uintptr_t)t->data & 3u) != 0)
        return vt_error_set(err, VT_EINPUT, "%s: tensor %s: data not 4-byte aligned",
                            vt_gguf_name(g), name);
    out->data = t->data;
    out->codec = c;
    out->rows = rows;
    out->cols = cols;
    out->row_bytes = vt_codec_row_bytes(c, cols);
    out->act = vec_dot_type_of(t->type);
    return VT_OK;
}

static int load_hparams(const vt_gguf *g, vt_qwen3_hparams *hp, vt_error *err)
{
    const char *file = vt_gguf_name(g);
    vt_gguf_str arch;
    if (!vt_gguf_get_str(g, "general.architecture", &arch))
        return vt_error_set(err, VT_EINPUT, "%s: key general.architecture: missing", file);
    if (arch.len != 5 || memcmp(arch.ptr, "qwen3", 5) != 0)
        return vt_error_set(err, VT_EINPUT, "%s: key general.architecture: \"%.*s\": expected \"qwen3\"",
                            file, (int)(arch.len > 64 ? 64 : arch.len), arch.ptr);
    int rc;
    if ((rc = get_i32(g, "qwen3.embedding_length", 1, 0, &hp->n_embd, err)) ||
        (rc = get_i32(g, "qwen3.block_count", 1, 0, &hp->n_layer, err)) ||
        (rc = get_i32(g, "qwen3.feed_forward_length", 1, 0, &hp->n_ff, err)) ||
        (rc = get_i32(g, "qwen3.attention.head_count", 1, 0, &hp->n_head, err)) ||
        (rc = get_i32(g, "qwen3.attention.head_count_kv", 0, hp->n_head, &hp->n_head_kv, err)) ||
        (rc = get_i32(g, "qwen3.context_length", 0, 0, &hp->n_ctx_train, err)) ||
        (rc = get_f32(g, "qwen3.rope.freq_base", 0, 10000.0f, &hp->rope_base, err)) ||
        (rc = get_f32(g, "qwen3.attention.layer_norm_rms_epsilon", 1, 0.0f, &hp->rms_eps, err)))
        return rc;
    if (hp->n_embd % hp->n_head != 0 && vt_gguf_find_key(g, "qwen3.attention.key_length") < 0)
        return vt_error_set(err, VT_EINPUT,
                            "%s: embedding_length %d is not a multiple of head_count %d and "
                            "attention.key_length is missing", file, hp->n_embd, hp->n_head);
    int32_t hd_k, hd_v, n_rot;
    if ((rc = get_i32(g, "qwen3.attention.key_length", 0, hp->n_embd / hp->n_head, &hd_k, err)) ||
        (rc = get_i32(g, "qwen3.attention.value_length", 0, hp->n_embd / hp->n_head, &hd_v, err)))
        return rc;
    if (hd_k != hd_v)
        return vt_error_set(err, VT_EINPUT, "%s: attention.key_length %d != value_length %d",
                            file, hd_k, hd_v);
    if (hd_k % 2 != 0)
        return vt_error_set(err, VT_EINPUT, "%s: attention.key_length %d: expected even", file,
                            hd_k);
    if ((rc = get_i32(g, "qwen3.rope.dimension_count", 0, hd_k, &n_rot, err)))
        return rc;
    if (n_rot != hd_k) /* qwen3 rotates the whole head (llama.cpp asserts it) */
        return vt_error_set(err, VT_EINPUT, "%s: rope.dimension_count %d: expected %d", file,
                            n_rot, hd_k);
    if (hp->n_head_kv > hp->n_head || hp->n_head % hp->n_head_kv != 0)
        return vt_error_set(err, VT_EINPUT,
                            "%s: attention.head_count_kv %d: expected a divisor of head_count %d",
                            file, hp->n_head_kv, hp->n_head);
    if ((int64_t)hp->n_head * hd_k > INT32_MAX)
        return vt_error_set(err, VT_EINPUT, "%s: head_count x key_length too large", file);
    if (!(hp->rope_base > 0.0f))
        return vt_error_set(err, VT_EINPUT, "%s: rope.freq_base: expected > 0", file);
    hp->head_dim = hd_k;
    return VT_OK;
}

static int load_weights(vt_qwen3 *m, vt_error *err)
{
    const vt_gguf *g = m->gguf;
    vt_qwen3_hparams *hp = &m->hp;
    const int64_t E = hp->n_embd, F = hp->n_ff, hd = hp->head_dim;
    const int64_t qd = (int64_t)hp->n_head * hd, kvd = (int64_t)hp->n_head_kv * hd;

    const vt_gguf_tensor *te = vt_gguf_find_tensor(g, "token_embd.weight");
    if (!te)
        return vt_error_set(err, VT_EINPUT, "%s: tensor token_embd.weight: missing",
                            vt_gguf_name(g));
    if (te->ne[1] <= 0 || te->ne[1] > INT32_MAX)
        return vt_error_set(err, VT_EINPUT, "%s: tensor token_embd.weight: %lld rows: expected "
                            "1 .. 2^31-1 tokens", vt_gguf_name(g), (long long)te->ne[1]);
    hp->n_vocab = (int32_t)te->ne[1];
    int rc = load_matrix(g, "token_embd.weight", E, hp->n_vocab, &m->embd, err);
    if (rc)
        return rc;
    if (!(m->output_norm = load_vector(g, "output_norm.weight", E, err)))
        return err->code;
    hp->tied_output = vt_gguf_find_tensor(g, "output.weight") == NULL;
    if (hp->tied_output)
        m->output = m->embd;
    else if ((rc = load_matrix(g, "output.weight", E, hp->n_vocab, &m->output, err)))
        return rc;

    m->layers = calloc((size_t)hp->n_layer, sizeof *m->layers);
    if (!m->layers)
        return vt_error_set(err, VT_EINPUT, "%s: out of memory for %d layers", vt_gguf_name(g),
                            hp->n_layer);
    for (int32_t l = 0; l < hp->n_layer; l++) {
        layer *L = &m->layers[l];
        char name[96];
#define VEC(field, suffix, n)                                                  \
        snprintf(name, sizeof name, "blk.%d." suffix ".weight", (int)l);       \
        if (!(L->field = load_vector(g, name, n, err)))                        \
            return err->code;
#define MAT(field, suffix, cols, rows)                                         \
        snprintf(name, sizeof name, "blk.%d." suffix ".weight", (int)l);       \
        if ((rc = load_matrix(g, name, cols, rows, &L->field, err)))           \
            return rc;
        VEC(attn_norm, "attn_norm", E)
        MAT(wq, "attn_q", E, qd)
        MAT(wk, "attn_k", E, kvd)
        MAT(wv, "attn_v", E, kvd)
        VEC(q_norm, "attn_q_norm", hd)
        VEC(k_norm, "attn_k_norm", hd)
        MAT(wo, "attn_output", qd, E)
        VEC(ffn_norm, "ffn_norm", E)
        MAT(gate, "ffn_gate", E, F)
        MAT(up, "ffn_up", E, F)
        MAT(down, "ffn_down", F, E)
#undef VEC
#undef MAT
    }
    return VT_OK;
}

static int allocate(vt_qwen3 *m, vt_error *err)
{
    const vt_qwen3_hparams *hp = &m->hp;
    const size_t B = (size_t)m->n_batch;
    const size_t E = (size_t)hp->n_embd, F = (size_t)hp->n_ff, hd = (size_t)hp->head_dim;
    const size_t qd = (size_t)hp->n_head * hd, kvd = (size_t)hp->n_head_kv * hd;
    size_t max_in = E > qd ? E : qd;
    max_in = max_in > F ? max_in : F;
    m->max_in = (int64_t)max_in;
    m->kv_dim = (int64_t)kvd;

    m->cache_elem = m->cache_dtype == VT_CACHE_F32 ? 4 : m->cache_dtype == VT_CACHE_BF16 ? 2 : 1;
    size_t cache_count;
    if (__builtin_mul_overflow((size_t)hp->n_layer, (size_t)m->n_ctx, &cache_count) ||
        __builtin_mul_overflow(cache_count, kvd, &cache_count))
        cache_count = SIZE_MAX;
    m->k_cache = alloc_aligned(cache_count, m->cache_elem);
    m->v_cache = alloc_aligned(cache_count, m->cache_elem);

    float **bufs[] = { &m->x, &m->xn, &m->q, &m->kb, &m->vb, &m->att, &m->proj,
                       &m->gate, &m->up, &m->xq[0], &m->xq[1], &m->xq[2], &m->rope };
    size_t widths[] = { E, E, qd, kvd, kvd, qd, E, F, F, max_in, max_in, max_in, hd };
    int ok = m->k_cache && m->v_cache;
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) {
        size_t n;
        *bufs[i] = __builtin_mul_overflow(B, widths[i], &n) ? NULL : alloc_aligned(n, 4);
        ok = ok && *bufs[i];
    }
    m->ids = alloc_aligned(B, sizeof(int64_t));
    /* Per-thread scratch, each slice a multiple of 16 floats (64 bytes) so
     * threads never share a cache line. */
    m->scratch_stride = round_up(4 * max_in, 16) + round_up((size_t)m->n_ctx, 16) + 5 * round_up(hd, 16);
    m->scratch = alloc_aligned((size_t)m->n_threads * m->scratch_stride, 4);
    ok = ok && m->ids && m->scratch;
    if (!ok)
        return vt_error_set(err, VT_EINPUT,
                            "%s: out of memory for n_ctx %d, n_batch %d (KV cache %s: %zu x 2 "
                            "elements of %zu bytes)",
                            vt_gguf_name(m->gguf), m->n_ctx, m->n_batch, vt_cache_dtype_name(m->cache_dtype),
                            cache_count, m->cache_elem);
    for (int c = 0; c < 256; c++)
        m->fp8_table[c] = vt_fp8_e4m3_to_f32((uint8_t)c);
    return VT_OK;
}

static int start_threads(vt_qwen3 *m, vt_error *err)
{
    pool *p = &m->pool;
    p->n = m->n_threads;
    atomic_init(&p->generation, 0);
    atomic_init(&p->pending, 0);
    atomic_init(&p->quit, 0);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->start, NULL);
    pthread_cond_init(&p->done, NULL);
    if (p->n <= 1)
        return VT_OK;
    p->threads = calloc((size_t)p->n, sizeof *p->threads);
    m->worker_args = calloc((size_t)p->n, sizeof *m->worker_args);
    if (!p->threads || !m->worker_args)
        return vt_error_set(err, VT_EINPUT, "out of memory for %d threads", p->n);
    for (int i = 1; i < p->n; i++) {
        m->worker_args[i - 1] = (worker_arg){ p, i };
        if (pthread_create(&p->threads[i - 1], NULL, worker_main, &m->worker_args[i - 1]) != 0)
            return vt_error_set(err, VT_EINPUT, "could not start worker thread %d of %d", i, p->n);
        m->threads_started++;
    }
    return VT_OK;
}

vt_qwen3 *vt_qwen3_open(const vt_runner_settings *s, vt_error *err)
{
    vt_error local;
    if (!err)
        err = &local; /* the loaders read err->code */
    if (!s || !s->model_path) {
        vt_error_set(err, VT_EINPUT, "engine: no model path");
        return NULL;
    }
    if (s->n_ctx <= 0) {
        vt_error_set(err, VT_EINPUT, "engine: n_ctx %d: expected > 0", (int)s->n_ctx);
        return NULL;
    }
    if (s->matmul != VT_MATMUL_EXACT && s->matmul != VT_MATMUL_Q8) {
        vt_error_set(err, VT_EINPUT, "engine: unknown matmul mode %d", (int)s->matmul);
        return NULL;
    }
    if ((int)s->cache_dtype < VT_CACHE_AUTO || (int)s->cache_dtype > VT_CACHE_FP8_E4M3) {
        vt_error_set(err, VT_EINPUT, "engine: unknown cache dtype %d", (int)s->cache_dtype);
        return NULL;
    }
    if (s->mode != VT_MODE_PRODUCTION && s->mode != VT_MODE_EAGER) {
        vt_error_set(err, VT_EINPUT, "engine: unknown execution mode %d", (int)s->mode);
        return NULL;
    }
    vt_qwen3 *m = calloc(1, sizeof *m);
    if (!m) {
        vt_error_set(err, VT_EINPUT, "engine: out of memory");
        return NULL;
    }
    m->eager = s->mode == VT_MODE_EAGER;
    m->matmul = s->matmul;
    m->cache_dtype = s->cache_dtype == VT_CACHE_AUTO ? VT_CACHE_F32 : s->cache_dtype;
    m->n_ctx = s->n_ctx;
    int32_t nb = s->n_batch > 0 ? s->n_batch : 512;
    m->n_batch = m->eager ? 1 : (nb < s->n_ctx ? nb : s->n_ctx);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int32_t nt = s->n_threads > 0 ? s->n_threads : (int32_t)(cores > 0 ? cores : 1);
    m->n_threads = m->eager ? 1 : (nt < VT_ENGINE_MAX_THREADS ? nt : VT_ENGINE_MAX_THREADS);
    m->k = pick_kernels();

    m->gguf = vt_gguf_open(s->model_path, err);
    if (!m->gguf || load_hparams(m->gguf, &m->hp, err) || load_weights(m, err) ||
        allocate(m, err) || start_threads(m, err)) {
        vt_qwen3_close(m);
        return NULL;
    }
    snprintf(m->detail, sizeof m->detail, "isa=%s threads=%d mode=%s matmul=%s cache=%s batch=%d",
             m->k.isa, m->n_threads, m->eager ? "eager" : "production",
             vt_matmul_mode_name(m->matmul), vt_cache_dtype_name(m->cache_dtype), m->n_batch);
    return m;
}

void vt_qwen3_close(vt_qwen3 *m)
{
    if (!m)
        return;
    if (m->pool.n > 0) {
        pool_stop(&m->pool, m->threads_started);
        pthread_mutex_destroy(&m->pool.mu);
        pthread_cond_destroy(&m->pool.start);
        pthread_cond_destroy(&m->pool.done);
    }
    free(m->pool.threads);
    free(m->worker_args);
    float *bufs[] = { m->x, m->xn, m->q, m->kb, m->vb, m->att, m->proj, m->gate, m->up,
                      m->xq[0], m->xq[1], m->xq[2], m->rope, m->scratch };
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        free(bufs[i]);
    free(m->ids);
    free(m->k_cache);
    free(m->v_cache);
    free(m->layers);
    vt_gguf_free(m->gguf);
    free(m);
}

void vt_qwen3_reset(vt_qwen3 *m) { m->n_past = 0; }

const vt_qwen3_hparams *vt_qwen3_hparams_of(const vt_qwen3 *m) { return &m->hp; }
int32_t vt_qwen3_n_past(const vt_qwen3 *m) { return m->n_past; }
int32_t vt_qwen3_n_threads(const vt_qwen3 *m) { return m->n_threads; }
const char *vt_qwen3_detail(const vt_qwen3 *m) { return m->detail; }

void vt_qwen3_resolved(const vt_qwen3 *m, vt_runner_settings *out)
{
    out->mode = m->eager ? VT_MODE_EAGER : VT_MODE_PRODUCTION;
    out->matmul = m->matmul;
    out->cache_dtype = m->cache_dtype; /* auto already resolved to F32 */
    out->n_threads = m->n_threads;
    out->n_ctx = m->n_ctx;
    out->n_batch = m->n_batch;
}

/* ======================================================================
 * Matrix products: y[t][o] = dot(W row o, x[t]) for every token t of the
 * batch. Each thread owns a contiguous range of output rows; it decodes four
 * rows at a time into its scratch (F32 weights are read in place) and uses
 * them for every token, so a batch decodes each weight row once.
 * ====================================================================== */

typedef struct mm_task {
    const mat *w;
    const float *x; /* n_tok x w->cols */
    float *y;       /* n_tok rows of stride ldy */
    int64_t ldy;
} mm_task;

typedef struct mm_job {
    vt_qwen3 *m;
    mm_task task[3];
    int n_task;
    int64_t n_tok;
} mm_job;

static float *thread_scratch(vt_qwen3 *m, int ith) { return m->scratch + (size_t)ith * m->scratch_stride; }

static void matmul_rows(vt_qwen3 *m, const mm_task *t, int64_t n_tok, int64_t r0, int64_t r1,
                        float *wbuf)
{
    const mat *w = t->w;
    const int64_t n = w->cols;
    const int in_place = w->codec->type == VT_TYPE_F32;
    const int64_t nblocks = n / w->codec->block_elems;
    int64_t o = r0;
    for (; o + 4 <= r1; o += 4) {
        const float *rows;
        if (in_place) {
            rows = (const float *)(w->data + (size_t)o * w->row_bytes);
        } else {
            for (int r = 0; r < 4; r++)
                w->codec->decode_f32(w->data + (size_t)(o + r) * w->row_bytes, wbuf + r * n, nblocks);
            rows = wbuf;
        }
        int64_t tok = 0;
        for (; tok + 4 <= n_tok; tok += 4)
            m->k.tile(rows, n, t->x + tok * n, n, n, t->y + tok * t->ldy + o, t->ldy);
        for (; tok < n_tok; tok++)
            m->k.dot4(rows, n, t->x + tok * n, n, t->y + tok * t->ldy + o);
    }
    for (; o < r1; o++) {
        const float *row;
        if (in_place) {
            row = (const float *)(w->data + (size_t)o * w->row_bytes);
        } else {
            w->codec->decode_f32(w->data + (size_t)o * w->row_bytes, wbuf, nblocks);
            row = wbuf;
        }
        for (int64_t tok = 0; tok < n_tok; tok++)
            t->y[tok * t->ldy + o] = m->k.dot(row, t->x + tok * n, n);
    }
}

static void matmul_worker(void *ctx, int ith, int nth)
{
    mm_job *job = ctx;
    float *wbuf = thread_scratch(job->m, ith);
    for (int i = 0; i < job->n_task; i++) {
        const mm_task *t = &job->task[i];
        /* Split in groups of four rows so every thread can use dot4. */
        int64_t groups = (t->w->rows + 3) / 4;
        int64_t r0 = groups * ith / nth * 4, r1 = groups * (ith + 1) / nth * 4;
        if (r1 > t->w->rows)
            r1 = t->w->rows;
        if (r0 < r1)
            matmul_rows(job->m, t, job->n_tok, r0, r1, wbuf);
    }
}

/* The activation a weight sees: x itself (EXACT mode, F32 dot type), or x
 * rounded through the weight's dot type into slot (reused if an earlier task
 * of the same job already rounded x the same way). */
static const float *activation_for(vt_qwen3 *m, const mm_job *job, int i, const float *x,
                                   int64_t n_tok)
{
    const mat *w = job->task[i].w;
    if (m->matmul == VT_MATMUL_EXACT || w->act == ACT_F32)
        return x;
    for (int j = 0; j < i; j++)
        if (job->task[j].w->act == w->act)
            return job->task[j].x;
    float *dst = m->xq[i];
    for (int64_t t = 0; t < n_tok; t++)
        round_row(w->act, x + t * w->cols, dst + t * w->cols, w->cols);
    return dst;
}

/* Up to three products sharing one input (Q/K/V, gate/up) in one dispatch. */
static void matmul(vt_qwen3 *m, const float *x, int64_t n_tok, int n, const mat *const *w,
                   float *const *y, const int64_t *ldy)
{
    mm_job job = { .m = m, .n_task = n, .n_tok = n_tok };
    for (int i = 0; i < n; i++) {
        job.task[i] = (mm_task){ w[i], NULL, y[i], ldy[i] };
        job.task[i].x = activation_for(m, &job, i, x, n_tok);
    }
    pool_run(&m->pool, matmul_worker, &job);
}

static void matmul1(vt_qwen3 *m, const mat *w, const float *x, int64_t n_tok, float *y, int64_t ldy)
{
    const mat *ws[1] = { w };
    float *ys[1] = { y };
    matmul(m, x, n_tok, 1, ws, ys, &ldy);
}

/* ======================================================================
 * Element-wise pieces
 * ====================================================================== */

/* RMSNorm as ggml: sum of squares in double, mean rounded to F32, eps added
 * inside the square root, then x * scale * weight. */
static void rmsnorm(float *out, const float *x, const float *w, int64_t n, float eps)
{
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++)
        sum += (double)(x[i] * x[i]);
    const float mean = (float)(sum / (double)n);
    const float scale = 1.0f / sqrtf(mean + eps);
    for (int64_t i = 0; i < n; i++)
        out[i] = x[i] * scale * w[i];
}

/* cos/sin of theta_i = pos * base^(-2i/d), i < d/2, computed as ggml does:
 * theta_scale = powf(base, -2/d) and theta multiplied by it step by step. */
static void rope_angles(float *cs, int32_t pos, int64_t d, float base)
{
    const float theta_scale = powf(base, -2.0f / (float)d);
    float theta = (float)pos;
    for (int64_t i = 0; i < d / 2; i++) {
        cs[2 * i] = cosf(theta);
        cs[2 * i + 1] = sinf(theta);
        theta *= theta_scale;
    }
}

/* NeoX RoPE: element i pairs with element i + d/2. */
static void rope_neox(float *x, const float *cs, int64_t d)
{
    const int64_t half = d / 2;
    for (int64_t i = 0; i < half; i++) {
        const float c = cs[2 * i], s = cs[2 * i + 1];
        const float x0 = x[i], x1 = x[i + half];
        x[i] = x0 * c - x1 * s;
        x[i + half] = x0 * s + x1 * c;
    }
}

static float silu(float x) { return x / (1.0f + expf(-x)); }

/* ---------- KV cache ---------- */

static size_t cache_index(const vt_qwen3 *m, int32_t l, int32_t pos)
{
    return ((size_t)l * (size_t)m->n_ctx + (size_t)pos) * (size_t)m->kv_dim;
}

static void cache_store(const vt_qwen3 *m, void *cache, size_t at, const float *src, int64_t n)
{
    switch (m->cache_dtype) {
    case VT_CACHE_BF16: {
        uint16_t *d = (uint16_t *)cache + at;
        for (int64_t i = 0; i < n; i++)
            d[i] = vt_f32_to_bf16(src[i]);
        break;
    }
    case VT_CACHE_FP8_E4M3: {
        uint8_t *d = (uint8_t *)cache + at;
        for (int64_t i = 0; i < n; i++)
            d[i] = vt_fp8_e4m3_from_f32(src[i]);
        break;
    }
    default: memcpy((float *)cache + at, src, (size_t)n * sizeof *src); break;
    }
}

/* n cached elements from at, as F32: in place for an F32 cache, else into buf. */
static const float *cache_load(const vt_qwen3 *m, const void *cache, size_t at, int64_t n, float *buf)
{
    switch (m->cache_dtype) {
    case VT_CACHE_BF16: {
        const uint16_t *s = (const uint16_t *)cache + at;
        for (int64_t i = 0; i < n; i++)
            buf[i] = vt_bf16_to_f32(s[i]);
        return buf;
    }
    case VT_CACHE_FP8_E4M3: {
        const uint8_t *s = (const uint8_t *)cache + at;
        for (int64_t i = 0; i < n; i++)
            buf[i] = m->fp8_table[s[i]];
        return buf;
    }
    default: return (const float *)cache + at;
    }
}

/* ======================================================================
 * Attention: one (token, head) pair is one unit of work; threads take
 * contiguous ranges of units. Token t of the batch sits at position
 * pos0 + t and sees positions 0 .. pos0 + t (causal), all already in the
 * cache, including the earlier tokens of this batch.
 * ====================================================================== */

typedef struct att_job {
    vt_qwen3 *m;
    int32_t layer;
    int32_t pos0;
    int64_t n_tok;
} att_job;

static void attention_worker(void *ctx, int ith, int nth)
{
    att_job *job = ctx;
    vt_qwen3 *m = job->m;
    const vt_qwen3_hparams *hp = &m->hp;
    const int64_t hd = hp->head_dim, qd = (int64_t)hp->n_head * hd;
    const int32_t group = hp->n_head / hp->n_head_kv;
    const float scale = 1.0f / sqrtf((float)hd);
    float *scratch = thread_scratch(m, ith);
    float *scores = scratch + round_up(4 * (size_t)m->max_in, 16);
    float *kbuf = scores + round_up((size_t)m->n_ctx, 16);
    float *vbuf = kbuf + 4 * round_up((size_t)hd, 16);
    const int64_t ldk_buf = (int64_t)round_up((size_t)hd, 16);

    const int64_t units = job->n_tok * hp->n_head;
    const int64_t u0 = units * ith / nth, u1 = units * (ith + 1) / nth;
    for (int64_t u = u0; u < u1; u++) {
        const int64_t t = u / hp->n_head;
        const int32_t h = (int32_t)(u % hp->n_head), kvh = h / group;
        const float *q = m->q + t * qd + h * hd;
        const int32_t n_keys = job->pos0 + (int32_t)t + 1;
        const size_t head_off = (size_t)kvh * (size_t)hd;

        /* scores = q.k, four keys per dot4 (each the same as a single dot),
         * then times scale; softmax with the maximum subtracted, the sum of
         * exponentials in double, then one multiply by 1/sum (ggml). */
        int32_t j = 0;
        for (; j + 4 <= n_keys; j += 4) {
            const size_t at = cache_index(m, job->layer, j) + head_off;
            const float *k;
            int64_t ldk;
            if (m->cache_dtype == VT_CACHE_F32) {
                k = (const float *)m->k_cache + at;
                ldk = m->kv_dim;
            } else {
                for (int r = 0; r < 4; r++)
                    cache_load(m, m->k_cache, at + (size_t)r * (size_t)m->kv_dim, hd,
                               kbuf + r * ldk_buf);
                k = kbuf;
                ldk = ldk_buf;
            }
            m->k.dot4(k, ldk, q, hd, scores + j);
        }
        for (; j < n_keys; j++) {
            const size_t at = cache_index(m, job->layer, j) + head_off;
            scores[j] = m->k.dot(cache_load(m, m->k_cache, at, hd, kbuf), q, hd);
        }
        float max = -INFINITY;
        for (j = 0; j < n_keys; j++) {
            scores[j] *= scale;
            max = fmaxf(max, scores[j]);
        }
        double sum = 0.0;
        for (j = 0; j < n_keys; j++) {
            scores[j] = expf(scores[j] - max);
            sum += scores[j];
        }
        const float inv = (float)(1.0 / sum);

        /* out = sum_j p_j v_j, accumulated in position order. */
        float *out = m->att + t * qd + h * hd;
        memset(out, 0, (size_t)hd * sizeof *out);
        for (j = 0; j < n_keys; j++) {
            const size_t at = cache_index(m, job->layer, j) + head_off;
            m->k.axpy(out, scores[j] * inv, cache_load(m, m->v_cache, at, hd, vbuf), hd);
        }
    }
}

/* ======================================================================
 * The forward pass of one batch: n_tok tokens at positions pos0 ...
 * Logits of batch rows [out0, out0 + n_out) go to logits (n_out x n_vocab).
 * ====================================================================== */

static void forward_batch(vt_qwen3 *m, const int32_t *tokens, int64_t n_tok, int64_t out0,
                          int64_t n_out, float *logits)
{
    const vt_qwen3_hparams *hp = &m->hp;
    const int64_t E = hp->n_embd, F = hp->n_ff, hd = hp->head_dim;
    const int64_t qd = (int64_t)hp->n_head * hd, kvd = m->kv_dim;
    const int32_t pos0 = m->n_past;

    /* 1. Embeddings: the token rows of token_embd, decoded from their codec.
     *    (Ids were checked by the caller, so the gather cannot fail.) */
    for (int64_t t = 0; t < n_tok; t++)
        m->ids[t] = tokens[t];
    vt_error ignored;
    vt_codec_gather_rows(m->embd.codec, m->embd.data, m->embd.rows, E, m->ids, n_tok,
                         VT_DTYPE_F32, m->x, &ignored);

    /* RoPE angles depend only on the position: once per batch, not per layer. */
    for (int64_t t = 0; t < n_tok; t++)
        rope_angles(m->rope + t * hd, pos0 + (int32_t)t, hd, hp->rope_base);

    for (int32_t l = 0; l < hp->n_layer; l++) {
        const layer *L = &m->layers[l];

        /* 2. Attention block input: RMSNorm of the residual stream. */
        for (int64_t t = 0; t < n_tok; t++)
            rmsnorm(m->xn + t * E, m->x + t * E, L->attn_norm, E, hp->rms_eps);

        /* 3. Q, K, V projections (one dispatch). */
        {
            const mat *ws[3] = { &L->wq, &L->wk, &L->wv };
            float *ys[3] = { m->q, m->kb, m->vb };
            const int64_t ld[3] = { qd, kvd, kvd };
            matmul(m, m->xn, n_tok, 3, ws, ys, ld);
        }

        /* 4. Per-head RMSNorm of Q and K over head_dim, then RoPE; K and V
         *    go into the cache at their positions. */
        for (int64_t t = 0; t < n_tok; t++) {
            const float *cs = m->rope + t * hd;
            for (int32_t h = 0; h < hp->n_head; h++) {
                float *q = m->q + t * qd + h * hd;
                rmsnorm(q, q, L->q_norm, hd, hp->rms_eps);
                rope_neox(q, cs, hd);
            }
            for (int32_t h = 0; h < hp->n_head_kv; h++) {
                float *k = m->kb + t * kvd + h * hd;
                rmsnorm(k, k, L->k_norm, hd, hp->rms_eps);
                rope_neox(k, cs, hd);
            }
            const size_t at = cache_index(m, l, pos0 + (int32_t)t);
            cache_store(m, m->k_cache, at, m->kb + t * kvd, kvd);
            cache_store(m, m->v_cache, at, m->vb + t * kvd, kvd);
        }

        /* 5. Causal grouped-query attention over the cache. */
        att_job aj = { m, l, pos0, n_tok };
        pool_run(&m->pool, attention_worker, &aj);

        /* 6. Output projection and residual add. */
        matmul1(m, &L->wo, m->att, n_tok, m->proj, E);
        for (int64_t i = 0; i < n_tok * E; i++)
            m->x[i] += m->proj[i];

        /* 7. Feed-forward: RMSNorm, gate and up (one dispatch),
         *    silu(gate) * up, down projection, residual add. */
        for (int64_t t = 0; t < n_tok; t++)
            rmsnorm(m->xn + t * E, m->x + t * E, L->ffn_norm, E, hp->rms_eps);
        {
            const mat *ws[2] = { &L->gate, &L->up };
            float *ys[2] = { m->gate, m->up };
            const int64_t ld[2] = { F, F };
            matmul(m, m->xn, n_tok, 2, ws, ys, ld);
        }
        for (int64_t i = 0; i < n_tok * F; i++)
            m->gate[i] = silu(m->gate[i]) * m->up[i];
        matmul1(m, &L->down, m->gate, n_tok, m->proj, E);
        for (int64_t i = 0; i < n_tok * E; i++)
            m->x[i] += m->proj[i];
    }

    /* 8. Final RMSNorm and the output head, only for the rows asked for. */
    if (n_out > 0) {
        for (int64_t t = 0; t < n_out; t++)
            rmsnorm(m->xn + t * E, m->x + (out0 + t) * E, m->output_norm, E, hp->rms_eps);
        matmul1(m, &m->output, m->xn, n_out, logits, hp->n_vocab);
    }
    m->n_past += (int32_t)n_tok;
}

int vt_qwen3_eval(vt_qwen3 *m, const int32_t *tokens, int32_t n, int all_logits, float *logits,
                  vt_error *err)
{
    const char *file = vt_gguf_name(m->gguf);
    if (n <= 0 || !tokens || !logits)
        return vt_error_set(err, VT_EINPUT, "%s: eval: expected at least one token and a logits "
                            "buffer (n = %d)", file, (int)n);
    if ((int64_t)m->n_past + n > m->n_ctx)
        return vt_error_set(err, VT_EINPUT,
                            "%s: eval: %d tokens after %d exceed the context capacity n_ctx = %d",
                            file, (int)n, (int)m->n_past, (int)m->n_ctx);
    for (int32_t i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= m->hp.n_vocab)
            return vt_error_set(err, VT_EINPUT,
                                "%s: eval: token %d at position %d: expected 0 <= id < %d", file,
                                (int)tokens[i], (int)i, (int)m->hp.n_vocab);

    /* Production: batches of n_batch tokens. Eager: one token at a time. */
    const int32_t step = m->n_batch;
    for (int32_t i0 = 0; i0 < n; i0 += step) {
        const int32_t nt = n - i0 < step ? n - i0 : step;
        const int last = i0 + nt == n;
        if (all_logits)
            forward_batch(m, tokens + i0, nt, 0, nt, logits + (size_t)i0 * (size_t)m->hp.n_vocab);
        else
            forward_batch(m, tokens + i0, nt, last ? nt - 1 : 0, last ? 1 : 0, logits);
    }
    return VT_OK;
}
