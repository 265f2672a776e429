/* The CPU machinery qwen3.c and qwen35.c share; see kernels.h. Moved out
 * of qwen3.c unchanged in arithmetic, so qwen3's logits are bit-identical
 * to what they were. */
#include "kernels.h"
#include "codec_iq_tables.h"

/* No fused multiply-add the source does not write, whatever the build
 * flags (GNU C modes and -march=native would otherwise let the compiler
 * fuse a*b+c, including inside the intrinsic kernels): the fused ones are
 * written (fmaf, _mm512_fmadd_ps) where ggml's compiled code has them, so
 * every rounding step is the same on every machine. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define VT_X86 1
#endif

/* ======================================================================
 * Dot products
 *
 * Every F32 dot product in the engine sums as ggml_vec_dot_f32 does on the
 * AVX-512 CPU variant llama.cpp loads (read from its instructions; the
 * oracle's one-token products, weights and attention alike): four 16-lane
 * accumulators over steps of 64 elements, s[r] lane k taking element
 * i + 16 r + k with a fused multiply-add; then (s0 + s2) + (s1 + s3) lane
 * by lane, the lanes summed by the pairwise tree _mm512_reduce_add_ps
 * compiles to, and the elements past the last 64 added one at a time
 * (products then sums, the last few of them fused). Written with fmaf, so the portable, AVX2 and
 * AVX-512 kernels give the same bits (FP_CONTRACT stays off, see the top:
 * no other fusing). dot4 computes four rows against one vector; each
 * result equals dot()'s.
 * ====================================================================== */

/* The pairwise tree of 16 lanes (_mm512_reduce_add_ps as gcc compiles it). */
static inline float tree16(float *l)
{
    for (int k = 0; k < 8; k++)
        l[k] += l[k + 8];
    for (int k = 0; k < 4; k++)
        l[k] += l[k + 4];
    l[0] += l[2];
    l[1] += l[3];
    return l[0] + l[1];
}

/* The end of ggml_vec_dot_f32: four accumulators to one, the tree, the tail. */
static inline float vec_f32_finish(const float s[4][16], const float *a, const float *b,
                                   int64_t np, int64_t n)
{
    float l[16];
    for (int k = 0; k < 16; k++)
        l[k] = (s[0][k] + s[2][k]) + (s[1][k] + s[3][k]);
    float sum = tree16(l);
    /* The tail as gcc compiled it: whole 16s and then one 8 as separate
     * products added in order, the last few fused. */
    int64_t i = np;
    for (; i + 16 <= n; i += 16)
        for (int k = 0; k < 16; k++)
            sum += a[i + k] * b[i + k];
    if (i + 8 <= n)
        for (int k = 0; k < 8; k++, i++)
            sum += a[i] * b[i];
    for (; i < n; i++)
        sum = fmaf(a[i], b[i], sum);
    return sum;
}

__attribute__((always_inline)) static inline float dot_body(const float *a, const float *b, int64_t n)
{
    float s[4][16] = { { 0 } };
    const int64_t np = n & ~(int64_t)63;
    for (int64_t i = 0; i < np; i += 64)
        for (int r = 0; r < 4; r++)
            for (int k = 0; k < 16; k++)
                s[r][k] = fmaf(a[i + 16 * r + k], b[i + 16 * r + k], s[r][k]);
    return vec_f32_finish(s, a, b, np, n);
}

static float dot_c(const float *a, const float *b, int64_t n) { return dot_body(a, b, n); }

/* ggml_vec_dot_bf16 on an AVX-512 CPU without its BF16 instructions (the
 * values are BF16 already, decoded exactly): two 16-lane fma accumulators
 * over steps of 32, each summed by the tree and added in double to 0, the
 * rest one product at a time in double, the total rounded to float. */
__attribute__((always_inline)) static inline float dot_bf16_body(const float *a, const float *b, int64_t n)
{
    float c1[16] = { 0 }, c2[16] = { 0 };
    const int64_t np = n & ~(int64_t)31;
    for (int64_t i = 0; i < np; i += 32)
        for (int k = 0; k < 16; k++) {
            c1[k] = fmaf(a[i + k], b[i + k], c1[k]);
            c2[k] = fmaf(a[i + 16 + k], b[i + 16 + k], c2[k]);
        }
    double sum = 0.0 + (double)tree16(c1);
    sum = (double)tree16(c2) + sum;
    for (int64_t i = np; i < n; i++)
        sum += (double)(a[i] * b[i]);
    return (float)sum;
}

static float dot_bf16_c(const float *a, const float *b, int64_t n) { return dot_bf16_body(a, b, n); }

static void dot4_c(const float *w, int64_t ldw, const float *x, int64_t n, float *out)
{
    for (int r = 0; r < 4; r++)
        out[r] = dot_c(w + r * ldw, x, n);
}

#ifdef VT_X86
__attribute__((target("avx2,fma"))) static float dot_fma(const float *a, const float *b, int64_t n)
{
    return dot_body(a, b, n);
}

__attribute__((target("avx2,fma"))) static float dot_bf16_fma(const float *a, const float *b, int64_t n)
{
    return dot_bf16_body(a, b, n);
}

__attribute__((target("avx2,fma"))) static void dot4_fma(const float *w, int64_t ldw, const float *x,
                                                         int64_t n, float *out)
{
    for (int r = 0; r < 4; r++)
        out[r] = dot_body(w + r * ldw, x, n);
}

__attribute__((target("avx512f"))) static float dot_avx512(const float *a, const float *b, int64_t n)
{
    __m512 v[4] = { _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps() };
    const int64_t np = n & ~(int64_t)63;
    for (int64_t i = 0; i < np; i += 64)
        for (int r = 0; r < 4; r++)
            v[r] = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16 * r), _mm512_loadu_ps(b + i + 16 * r), v[r]);
    float s[4][16];
    for (int r = 0; r < 4; r++)
        _mm512_storeu_ps(s[r], v[r]);
    return vec_f32_finish(s, a, b, np, n);
}

__attribute__((target("avx512f"))) static void dot4_avx512(const float *w, int64_t ldw,
                                                           const float *x, int64_t n, float *out)
{
    __m512 v[4][4];
    for (int q = 0; q < 4; q++)
        for (int r = 0; r < 4; r++)
            v[q][r] = _mm512_setzero_ps();
    const int64_t np = n & ~(int64_t)63;
    for (int64_t i = 0; i < np; i += 64)
        for (int r = 0; r < 4; r++) {
            const __m512 xv = _mm512_loadu_ps(x + i + 16 * r);
            for (int q = 0; q < 4; q++)
                v[q][r] = _mm512_fmadd_ps(_mm512_loadu_ps(w + q * ldw + i + 16 * r), xv, v[q][r]);
        }
    for (int q = 0; q < 4; q++) {
        float s[4][16];
        for (int r = 0; r < 4; r++)
            _mm512_storeu_ps(s[r], v[q][r]);
        out[q] = vec_f32_finish(s, w + q * ldw, x, np, n);
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

/* A tile is four dot4 calls (each product sums as dot() does). */
#define TILE_FROM_DOT4(name, dot4)                                                      \
    static void name(const float *w, int64_t ldw, const float *x, int64_t ldx, int64_t n, \
                     float *y, int64_t ldy)                                             \
    {                                                                                   \
        for (int t = 0; t < 4; t++)                                                     \
            dot4(w, ldw, x + t * ldx, n, y + t * ldy);                                  \
    }
TILE_FROM_DOT4(tile_c, dot4_c)
#ifdef VT_X86
TILE_FROM_DOT4(tile_fma, dot4_fma)
TILE_FROM_DOT4(tile_avx512, dot4_avx512)
#endif

/* ======================================================================
 * ggml's element-wise arithmetic around the products, as its AVX-512 CPU
 * variant computes it (read from libggml-cpu-icelake.so's instructions):
 * the exponential of its softmax and SwiGLU, and the fused row update of
 * attention's V p. One body each, a portable and an FMA copy (same bits).
 * ====================================================================== */

static inline float pow2i(int e) /* 2^e for -126 <= e <= 127 */
{
    const uint32_t bits = (uint32_t)(e + 127) << 23;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/* One lane of ggml_v_expf (AVX-512): n = round(x / ln 2) by the 1.5 * 2^23
 * shift, b = x - n ln 2 in two parts, a degree-5 polynomial j(b), then
 * vscalefps j * 2^n (one rounding, also where it lands in subnormals);
 * |n| > 192 gives 0 or infinity. Within 1.5 ULP of exp, other bits than
 * the C library's. */
__attribute__((always_inline)) static inline float expf16_body(float x)
{
    const float z = fmaf(x, 0x1.715476p+0f, 0x1.8p23f);
    const float n = z - 0x1.8p23f;
    const float b = fmaf(-n, 0x1.7f7d1cp-20f, fmaf(-n, 0x1.62e4p-1f, x));
    if (n != n)
        return n;
    if (fabsf(n) > 192.0f)
        return n <= 0.0f ? 0.0f : INFINITY;
    const float u = b * b;
    const float j = fmaf(fmaf(fmaf(0x1.0e4020p-7f, b, 0x1.573e2ep-5f), u,
                              fmaf(0x1.555e66p-3f, b, 0x1.fffdb6p-2f)),
                         u, fmaf(0x1.ffffecp-1f, b, 1.0f));
    const int e = (int)n;
    if (e < -126)
        return j * pow2i(e + 100) * 0x1p-100f; /* exact, then one rounding */
    if (e > 127)
        return j * pow2i(e - 127) * 0x1p127f;
    return j * pow2i(e);
}

/* ggml_vec_soft_max_f32 after the maximum: x[i] = exp(x[i] - max) for
 * i < n, 16 at a time by expf16, each 16 summed by the tree in float and
 * the sums added in double. The caller's row is the cache's, whose length
 * llama.cpp pads to a multiple of 16 with masked (zero) positions: so the
 * last 16 are zero-filled here, not left to the C library's expf. */
__attribute__((always_inline)) static inline double exp_sum_body(float *x, int64_t n, float max)
{
    double sum = 0.0;
    for (int64_t j0 = 0; j0 < n; j0 += 16) {
        float l[16];
        for (int k = 0; k < 16; k++)
            l[k] = j0 + k < n ? (x[j0 + k] = expf16_body(x[j0 + k] - max)) : 0.0f;
        sum += (double)tree16(l);
    }
    return sum;
}

/* ggml_vec_swiglu_f32 over one row: g = g / (1 + exp(0 - g)) * u, 16 at a
 * time by expf16, the rest of the row with the C library's expf. */
__attribute__((always_inline)) static inline void swiglu_body(float *g, const float *u, int64_t n)
{
    const int64_t n16 = n & ~(int64_t)15;
    int64_t i = 0;
    for (; i < n16; i++)
        g[i] = g[i] / (1.0f + expf16_body(0.0f - g[i])) * u[i];
    for (; i < n; i++)
        g[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}

/* ggml_vec_silu_f32 over one row: x = x / (1 + exp(0 - x)), 16 at a time
 * by expf16, the rest of the row with the C library's expf. */
__attribute__((always_inline)) static inline void silu_body(float *x, int64_t n)
{
    const int64_t n16 = n & ~(int64_t)15;
    int64_t i = 0;
    for (; i < n16; i++)
        x[i] = x[i] / (1.0f + expf16_body(0.0f - x[i]));
    for (; i < n; i++)
        x[i] = x[i] / (1.0f + expf(-x[i]));
}

__attribute__((always_inline)) static inline void fmadd_body(float *restrict acc, const float *restrict v,
                                                             float p, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        acc[i] = fmaf(v[i], p, acc[i]);
}

static double exp_sum_c(float *x, int64_t n, float max) { return exp_sum_body(x, n, max); }
static void swiglu_c(float *g, const float *u, int64_t n) { swiglu_body(g, u, n); }
static void silu_c(float *x, int64_t n) { silu_body(x, n); }
static void fmadd_c(float *restrict acc, const float *restrict v, float p, int64_t n)
{
    fmadd_body(acc, v, p, n);
}

#ifdef VT_X86
__attribute__((target("avx2,fma"))) static double exp_sum_fma(float *x, int64_t n, float max)
{
    return exp_sum_body(x, n, max);
}
__attribute__((target("avx2,fma"))) static void swiglu_fma(float *g, const float *u, int64_t n)
{
    swiglu_body(g, u, n);
}
__attribute__((target("avx2,fma"))) static void silu_fma(float *x, int64_t n) { silu_body(x, n); }
__attribute__((target("avx2,fma"))) static void fmadd_fma(float *restrict acc, const float *restrict v,
                                                          float p, int64_t n)
{
    fmadd_body(acc, v, p, n);
}
__attribute__((target("avx512f"))) static void fmadd_avx512(float *restrict acc, const float *restrict v,
                                                            float p, int64_t n)
{
    const __m512 pv = _mm512_set1_ps(p);
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        _mm512_storeu_ps(acc + i, _mm512_fmadd_ps(_mm512_loadu_ps(v + i), pv, _mm512_loadu_ps(acc + i)));
    fmadd_body(acc + i, v + i, p, n - i);
}
#endif

/* The widest kernels the CPU runs, or the ones $VT_ENGINE_ISA names ("c",
 * "sse2", "avx2", "avx512f"; a diagnostic override, honoured only if the CPU
 * has it): results are identical either way, which is how that is tested. */
vt_kernels vt_kernels_pick(void)
{
    static const vt_kernels c = { "c", dot_c, dot4_c, tile_c, dot_bf16_c, axpy_c, fmadd_c, exp_sum_c, swiglu_c, silu_c, 0 };
    const char *want = getenv("VT_ENGINE_ISA");
    if (want && strcmp(want, "c") == 0)
        return c;
#ifdef VT_X86
    /* Without FMA hardware the fused products are the C library's fmaf:
     * the same bits, slowly. */
    static const vt_kernels sse2 = { "sse2", dot_c, dot4_c, tile_c, dot_bf16_c, axpy_sse2, fmadd_c, exp_sum_c, swiglu_c, silu_c, 0 };
    static const vt_kernels avx2 = { "avx2", dot_c, dot4_c, tile_c, dot_bf16_c, axpy_avx2, fmadd_c, exp_sum_c, swiglu_c, silu_c, 0 };
    static const vt_kernels avx2_fma = { "avx2", dot_fma, dot4_fma, tile_fma, dot_bf16_fma, axpy_avx2, fmadd_fma,
                                         exp_sum_fma, swiglu_fma, silu_fma, 1 };
    static const vt_kernels avx512 = { "avx512f", dot_avx512, dot4_avx512, tile_avx512, dot_bf16_fma, axpy_avx512,
                                       fmadd_avx512, exp_sum_fma, swiglu_fma, silu_fma, 1 };
    __builtin_cpu_init();
    const int has512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma");
    const int has2 = __builtin_cpu_supports("avx2");
    const vt_kernels *k2 = has2 && __builtin_cpu_supports("fma") ? &avx2_fma : &avx2;
    if (want && strcmp(want, "sse2") == 0)
        return sse2;
    if (want && strcmp(want, "avx2") == 0 && has2)
        return *k2;
    if (has512 && !(want && strcmp(want, "avx2") == 0))
        return avx512;
    return has2 ? *k2 : sse2;
#else
    return c;
#endif
}

/* ======================================================================
 * Activation rounding for VT_MATMUL_Q8: the activation row is passed through
 * the weight type's vec_dot_type (ggml-cpu.c type_traits_cpu) and back to
 * F32, so an F32 product then sees the values llama.cpp's integer kernels
 * see. Q8_0 and Q8_1 round as the x86 build of ggml's CPU backend does (its
 * oracle here); Q8_K as quantize_row_q8_K_ref, which every build uses.
 * ====================================================================== */

vt_act_type vt_act_type_of(int type)
{
    switch (type) {
    case VT_TYPE_F16: return VT_ACT_F16;
    case VT_TYPE_BF16: return VT_ACT_BF16;
    case VT_TYPE_Q4_0: case VT_TYPE_Q5_0: case VT_TYPE_Q8_0: case VT_TYPE_IQ4_NL:
    case VT_TYPE_MXFP4:
        return VT_ACT_Q8_0;
    case VT_TYPE_Q4_1: case VT_TYPE_Q5_1:
        return VT_ACT_Q8_1;
    case VT_TYPE_Q2_K: case VT_TYPE_Q3_K: case VT_TYPE_Q4_K: case VT_TYPE_Q5_K: case VT_TYPE_Q6_K:
    case VT_TYPE_IQ2_XXS: case VT_TYPE_IQ2_XS: case VT_TYPE_IQ2_S: case VT_TYPE_IQ3_XXS:
    case VT_TYPE_IQ3_S: case VT_TYPE_IQ1_S: case VT_TYPE_IQ1_M: case VT_TYPE_IQ4_XS:
    case VT_TYPE_TQ1_0: case VT_TYPE_TQ2_0:
        return VT_ACT_Q8_K;
    default: return VT_ACT_F32; /* F32; Q8_K as a weight has no ggml dot kernel */
    }
}

/* Q8_0: blocks of 32; d = amax/127 kept as F16, q = x * (127/amax) rounded
 * to nearest, ties to even: what the x86 build of ggml's CPU backend does
 * (quantize_row_q8_0's AVX path), which is the oracle here. Its reference
 * quantizer instead rounds x / d half away from zero; the two part exactly
 * on values that land on .5 after scaling (vt op check's adversarial rows).
 * Q8_1 quantizes the same values (it also stores a block sum, which only
 * matters to ggml's integer kernel). */
static uint16_t q8_0_block(const float *x, int8_t *q)
{
    float amax = 0.0f;
    for (int j = 0; j < 32; j++)
        amax = fmaxf(amax, fabsf(x[j]));
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    for (int j = 0; j < 32; j++)
        q[j] = (int8_t)nearbyintf(x[j] * id);
    return vt_f32_to_f16(amax / 127.0f);
}

static void round_q8_0(const float *x, float *y, int64_t n)
{
    int8_t q[32];
    for (int64_t b = 0; b < n; b += 32) {
        const float dh = vt_f16_to_f32(q8_0_block(x + b, q));
        for (int j = 0; j < 32; j++)
            y[b + j] = dh * (float)q[j];
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
 * (keeping its sign: iscale = -127/max), d = 1/iscale stays F32 (0 for an
 * all-zero block). Returns d. */
static float q8_k_block(const float *x, int8_t *q)
{
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < 256; j++) {
        float ax = fabsf(x[j]);
        if (ax > amax) {
            amax = ax;
            max = x[j];
        }
    }
    if (amax == 0.0f) {
        memset(q, 0, 256);
        return 0.0f;
    }
    const float iscale = -127.0f / max;
    for (int j = 0; j < 256; j++) {
        int v = nearest_int(iscale * x[j]);
        q[j] = (int8_t)(v < 127 ? v : 127);
    }
    return 1 / iscale;
}

static void round_q8_k(const float *x, float *y, int64_t n)
{
    int8_t q[256];
    for (int64_t b = 0; b < n; b += 256) {
        const float d = q8_k_block(x + b, q);
        for (int j = 0; j < 256; j++)
            y[b + j] = d * (float)q[j];
    }
}

void vt_act_round_row(vt_act_type t, const float *x, float *y, int64_t n)
{
    switch (t) {
    case VT_ACT_F16:
        for (int64_t i = 0; i < n; i++)
            y[i] = vt_f16_to_f32(vt_f32_to_f16(x[i]));
        break;
    case VT_ACT_BF16:
        for (int64_t i = 0; i < n; i++)
            y[i] = vt_bf16_to_f32(vt_f32_to_bf16(x[i]));
        break;
    case VT_ACT_Q8_0:
    case VT_ACT_Q8_1: round_q8_0(x, y, n); break;
    case VT_ACT_Q8_K: round_q8_k(x, y, n); break;
    case VT_ACT_F32: memcpy(y, x, (size_t)n * sizeof *y); break;
    }
}

const char *vt_act_type_name(vt_act_type t)
{
    static const char *const names[] = { "F32", "F16", "BF16", "Q8_0", "Q8_1", "Q8_K" };
    return names[t];
}

/* ======================================================================
 * Integer block products: a weight type whose ggml kernel this engine
 * follows meets its activation as ggml's does, the activation quantized to
 * blocks once per token (Q8_0: F16 d + 32 x int8, 34 bytes; Q8_K: F32 d +
 * 256 x int8 + 16 int16 sums of 16, 292 bytes, as ggml's block_q8_K) and
 * each block's products summed
 * as exact integers in eight lanes, lane m taking the elements whose
 * position in their 32 is 4m .. 4m+3, as the x86 kernels' vector lanes do;
 * then acc[m] = fma(d_w * d_x, lane m, acc[m]) block after block, and the
 * lanes summed as ggml's hsum_float_8. Each body is written once; the FMA
 * copy only lets the compiler use the instruction, the value is the same.
 * ====================================================================== */

typedef float (*int_dot_fn)(const uint8_t *w, const uint8_t *x, int64_t nb);

static inline float hsum8(const float *a)
{
    return ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]));
}

/* Q8_0 x Q8_0: ggml's x86 vec_dot_q8_0_q8_0 (and llamafile's tinyBLAS for
 * the same pair, which sums the same way). */
static inline __attribute__((always_inline)) float dot_q8_0_body(const uint8_t *w, const uint8_t *x,
                                                                 int64_t nb)
{
    float acc[8] = { 0 };
    for (int64_t b = 0; b < nb; b++, w += 34, x += 34) {
        uint16_t dw, dx;
        memcpy(&dw, w, 2);
        memcpy(&dx, x, 2);
        const float d = vt_f16_to_f32(dw) * vt_f16_to_f32(dx);
        const int8_t *qw = (const int8_t *)(w + 2), *qx = (const int8_t *)(x + 2);
        for (int m = 0; m < 8; m++) {
            int32_t lane = 0;
            for (int k = 4 * m; k < 4 * m + 4; k++)
                lane += (int32_t)qw[k] * qx[k];
            acc[m] = fmaf(d, (float)lane, acc[m]);
        }
    }
    return hsum8(acc);
}

/* Q6_K x Q8_K: ggml's x86 vec_dot_q6_K_q8_K as the CPU backend here runs it
 * (its instructions read: the 6-bit values used unsigned, 0..63, and their
 * offset of 32 taken off afterwards through the activation's block sums, one
 * lane per 32 elements). Block: ql[128] (low nibbles), qh[64] (two high
 * bits each), int8 scales[16] (one per 16 elements), F16 d. */
static inline __attribute__((always_inline)) float dot_q6_k_body(const uint8_t *w, const uint8_t *x,
                                                                 int64_t nb)
{
    float acc[8] = { 0 };
    for (int64_t b = 0; b < nb; b++, w += 210, x += 292) {
        const uint8_t *ql = w, *qh = w + 128;
        const int8_t *sc = (const int8_t *)(w + 192), *q8 = (const int8_t *)(x + 4);
        uint16_t dw;
        float dx;
        int16_t bsums[16];
        memcpy(&dw, w + 208, 2);
        memcpy(&dx, x, 4);
        memcpy(bsums, x + 260, sizeof bsums);
        int32_t lane[8] = { 0 };
        for (int n = 0; n < 2; n++) {
            const uint8_t *L = ql + 64 * n, *H = qh + 32 * n;
            for (int l = 0; l < 32; l++) {
                const int e = 128 * n + l;
                const int v[4] = { (L[l] & 0xF) | ((H[l] & 3) << 4),
                                   (L[l + 32] & 0xF) | (((H[l] >> 2) & 3) << 4),
                                   (L[l] >> 4) | (((H[l] >> 4) & 3) << 4),
                                   (L[l + 32] >> 4) | (((H[l] >> 6) & 3) << 4) };
                for (int k = 0; k < 4; k++)
                    lane[l / 4] += sc[(e + 32 * k) / 16] * v[k] * q8[e + 32 * k];
            }
        }
        for (int m = 0; m < 8; m++)
            lane[m] -= 32 * (bsums[2 * m] * sc[2 * m] + bsums[2 * m + 1] * sc[2 * m + 1]);
        const float d = dx * vt_f16_to_f32(dw);
        for (int m = 0; m < 8; m++)
            acc[m] = fmaf(d, (float)lane[m], acc[m]);
    }
    return hsum8(acc);
}

/* IQ4_XS x Q8_K: ggml's x86 (AVX2) vec_dot_iq4_xs_q8_K. Block: F16 d,
 * scales_h (two high bits per 32), scales_l[4] (a low nibble per 32),
 * qs[128] (element j of a 32 in the low nibble of byte j, j + 16 in its high
 * nibble), each nibble an index into the IQ4_NL values. */
static inline __attribute__((always_inline)) float dot_iq4_xs_body(const uint8_t *w, const uint8_t *x,
                                                                   int64_t nb)
{
    float acc[8] = { 0 };
    for (int64_t b = 0; b < nb; b++, w += 136, x += 292) {
        uint16_t dw, sh;
        float dx;
        memcpy(&dw, w, 2);
        memcpy(&sh, w + 2, 2);
        memcpy(&dx, x, 4);
        const uint8_t *sl = w + 4, *qs = w + 8;
        const int8_t *q8 = (const int8_t *)(x + 4);
        int32_t lane[8] = { 0 };
        for (int k = 0; k < 8; k++, qs += 16, q8 += 32) {
            const int ls = (((sl[k / 2] >> 4 * (k % 2)) & 0xf) | (((sh >> 2 * k) & 3) << 4)) - 32;
            for (int j = 0; j < 16; j++) {
                lane[j / 4] += ls * vt_iq4nl_values[qs[j] & 0xf] * q8[j];
                lane[(j + 16) / 4] += ls * vt_iq4nl_values[qs[j] >> 4] * q8[j + 16];
            }
        }
        const float d = vt_f16_to_f32(dw) * dx;
        for (int m = 0; m < 8; m++)
            acc[m] = fmaf(d, (float)lane[m], acc[m]);
    }
    return hsum8(acc);
}

/* Q4_K x Q8_K as llama.cpp computes it on x86 once its CPU backend has
 * repacked the weight (rows a multiple of 8: eight rows interleaved,
 * ggml_gemv_q4_K_8x8_q8_K): each row's whole superblock is one exact
 * integer, sum over the eight sub-blocks of scale * (4-bit values . q8),
 * and its mins another (sum of min * the sub-block's q8 sum); then
 * acc = fma(sum, d_w * d_x, acc) and mins = fma(min sum, dmin_w * d_x, mins)
 * superblock after superblock, and the product is acc - mins. Block: F16 d,
 * F16 dmin, scales[12] (6-bit scale and min per 32), qs[128]. */
static inline __attribute__((always_inline)) float dot_q4_k_r8_body(const uint8_t *w, const uint8_t *x,
                                                                    int64_t nb)
{
    float acc = 0.0f, mins = 0.0f;
    for (int64_t b = 0; b < nb; b++, w += 144, x += 292) {
        uint16_t dh, mh;
        float dx;
        int16_t bsums[16];
        memcpy(&dh, w, 2);
        memcpy(&mh, w + 2, 2);
        memcpy(&dx, x, 4);
        memcpy(bsums, x + 260, sizeof bsums);
        const uint8_t *sc = w + 4, *qs = w + 16;
        const int8_t *q8 = (const int8_t *)(x + 4);
        int32_t isum = 0, imin = 0;
        for (int j = 0; j < 8; j++) {
            int s, m;
            if (j < 4) {
                s = sc[j] & 63;
                m = sc[j + 4] & 63;
            } else {
                s = (sc[j + 4] & 0xf) | ((sc[j - 4] >> 6) << 4);
                m = (sc[j + 4] >> 4) | ((sc[j] >> 6) << 4);
            }
            const uint8_t *q = qs + 32 * (j / 2);
            const int shift = 4 * (j % 2);
            int32_t dot = 0;
            for (int l = 0; l < 32; l++)
                dot += ((q[l] >> shift) & 0xf) * q8[32 * j + l];
            isum += s * dot;
            imin += m * (bsums[2 * j] + bsums[2 * j + 1]);
        }
        acc = fmaf((float)isum, vt_f16_to_f32(dh) * dx, acc);
        mins = fmaf((float)imin, vt_f16_to_f32(mh) * dx, mins);
    }
    return acc - mins;
}

/* Q4_0 and IQ4_NL x Q8_0, 32 4-bit values per block (element j of a block
 * in the low nibble of byte j, j + 16 in the high nibble of byte j) mapped
 * to int8 by map: q - 8 for Q4_0, the IQ4_NL table for IQ4_NL. */
static inline __attribute__((always_inline)) void nibbles_to_int8(const uint8_t *qs, const int8_t *map,
                                                                  int8_t *v)
{
    for (int j = 0; j < 16; j++) {
        v[j] = map[qs[j] & 0xf];
        v[j + 16] = map[qs[j] >> 4];
    }
}

static const int8_t q4_0_values[16] = { -8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7 };

/* ggml's x86 vec_dot_q4_0_q8_0 (the plain layout): the Q8_0 lanes. */
static inline __attribute__((always_inline)) float dot_q4_0_body(const uint8_t *w, const uint8_t *x, int64_t nb)
{
    float acc[8] = { 0 };
    for (int64_t b = 0; b < nb; b++, w += 18, x += 34) {
        uint16_t dw, dx;
        memcpy(&dw, w, 2);
        memcpy(&dx, x, 2);
        const float d = vt_f16_to_f32(dw) * vt_f16_to_f32(dx);
        int8_t v[32];
        nibbles_to_int8(w + 2, q4_0_values, v);
        const int8_t *qx = (const int8_t *)(x + 2);
        for (int m = 0; m < 8; m++) {
            int32_t lane = 0;
            for (int k = 4 * m; k < 4 * m + 4; k++)
                lane += (int32_t)v[k] * qx[k];
            acc[m] = fmaf(d, (float)lane, acc[m]);
        }
    }
    return hsum8(acc);
}

/* The repacked layout's order (ggml_gemv_q4_0_8x8_q8_0 and its IQ4_NL
 * twin): each row's block is one exact integer, acc = fma(sum, d_w * d_x,
 * acc) block after block. */
static inline __attribute__((always_inline)) float dot_nib_r8_body(const uint8_t *w, const uint8_t *x, int64_t nb,
                                                                   const int8_t *map)
{
    float acc = 0.0f;
    for (int64_t b = 0; b < nb; b++, w += 18, x += 34) {
        uint16_t dw, dx;
        memcpy(&dw, w, 2);
        memcpy(&dx, x, 2);
        int8_t v[32];
        nibbles_to_int8(w + 2, map, v);
        const int8_t *qx = (const int8_t *)(x + 2);
        int32_t sum = 0;
        for (int k = 0; k < 32; k++)
            sum += (int32_t)v[k] * qx[k];
        acc = fmaf((float)sum, vt_f16_to_f32(dw) * vt_f16_to_f32(dx), acc);
    }
    return acc;
}

static inline __attribute__((always_inline)) float dot_q4_0_r8_body(const uint8_t *w, const uint8_t *x, int64_t nb)
{
    return dot_nib_r8_body(w, x, nb, q4_0_values);
}

static inline __attribute__((always_inline)) float dot_iq4_nl_r8_body(const uint8_t *w, const uint8_t *x,
                                                                      int64_t nb)
{
    return dot_nib_r8_body(w, x, nb, vt_iq4nl_values);
}

/* The 5-bit value of element j (0..31) of a Q5_0 / Q5_1 block: a nibble of
 * qs and bit j of qh. */
static inline __attribute__((always_inline)) int q5_value(const uint8_t *qs, uint32_t qh, int j)
{
    const int nib = j < 16 ? qs[j] & 0xf : qs[j - 16] >> 4;
    return nib | (int)(((qh >> j) & 1u) << 4);
}

/* Q5_0 x Q8_0: ggml's x86 vec_dot_q5_0_q8_0, the Q8_0 lanes over value - 16. */
static inline __attribute__((always_inline)) float dot_q5_0_body(const uint8_t *w, const uint8_t *x, int64_t nb)
{
    float acc[8] = { 0 };
    for (int64_t b = 0; b < nb; b++, w += 22, x += 34) {
        uint16_t dw, dx;
        uint32_t qh;
        memcpy(&dw, w, 2);
        memcpy(&qh, w + 2, 4);
        memcpy(&dx, x, 2);
        const float d = vt_f16_to_f32(dw) * vt_f16_to_f32(dx);
        const int8_t *qx = (const int8_t *)(x + 2);
        for (int m = 0; m < 8; m++) {
            int32_t lane = 0;
            for (int k = 4 * m; k < 4 * m + 4; k++)
                lane += (q5_value(w + 6, qh, k) - 16) * qx[k];
            acc[m] = fmaf(d, (float)lane, acc[m]);
        }
    }
    return hsum8(acc);
}

/* Q4_1 / Q5_1 x Q8_1 (F16 d, F16 s = d * the block's sum, 32 x int8: 36
 * bytes): ggml's x86 vec_dot_q4_1_q8_1 / q5_1_q8_1: the lanes over the
 * unsigned values, fma(d_w * d_x, lane, acc), and the mins apart as a float
 * sum of m_w * s_x block after block; the product is hsum(acc) + that sum. */
static inline __attribute__((always_inline)) float dot_x_1_body(const uint8_t *w, const uint8_t *x, int64_t nb,
                                                                int five)
{
    float acc[8] = { 0 }, summs = 0.0f;
    const size_t wb = five ? 24 : 20;
    for (int64_t b = 0; b < nb; b++, w += wb, x += 36) {
        uint16_t dw, mw, dx, sx;
        uint32_t qh = 0;
        memcpy(&dw, w, 2);
        memcpy(&mw, w + 2, 2);
        memcpy(&dx, x, 2);
        memcpy(&sx, x + 2, 2);
        if (five)
            memcpy(&qh, w + 4, 4);
        const uint8_t *qs = w + (five ? 8 : 4);
        summs += vt_f16_to_f32(mw) * vt_f16_to_f32(sx);
        const float d = vt_f16_to_f32(dw) * vt_f16_to_f32(dx);
        const int8_t *qx = (const int8_t *)(x + 4);
        for (int m = 0; m < 8; m++) {
            int32_t lane = 0;
            for (int k = 4 * m; k < 4 * m + 4; k++) {
                const int v = five ? q5_value(qs, qh, k) : (k < 16 ? qs[k] & 0xf : qs[k - 16] >> 4);
                lane += v * qx[k];
            }
            acc[m] = fmaf(d, (float)lane, acc[m]);
        }
    }
    return hsum8(acc) + summs;
}

static inline __attribute__((always_inline)) float dot_q4_1_body(const uint8_t *w, const uint8_t *x, int64_t nb)
{
    return dot_x_1_body(w, x, nb, 0);
}

static inline __attribute__((always_inline)) float dot_q5_1_body(const uint8_t *w, const uint8_t *x, int64_t nb)
{
    return dot_x_1_body(w, x, nb, 1);
}

/* MXFP4 x Q8_0 in the repacked order (ggml_gemv_mxfp4_8x8_q8_0): each block
 * one exact integer over the doubled E2M1 values, acc = fma(sum, the half
 * E8M0 scale * d_x, acc). */
static const int8_t mxfp4_x2_values[16] = { 0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12 };

static inline __attribute__((always_inline)) float dot_mxfp4_r8_body(const uint8_t *w, const uint8_t *x, int64_t nb)
{
    float acc = 0.0f;
    for (int64_t b = 0; b < nb; b++, w += 17, x += 34) {
        uint16_t dx;
        memcpy(&dx, x, 2);
        const uint8_t e = w[0];
        uint32_t bits = e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23;
        float dw;
        memcpy(&dw, &bits, 4);
        int8_t v[32];
        nibbles_to_int8(w + 1, mxfp4_x2_values, v);
        const int8_t *qx = (const int8_t *)(x + 2);
        int32_t sum = 0;
        for (int k = 0; k < 32; k++)
            sum += (int32_t)v[k] * qx[k];
        acc = fmaf((float)sum, dw * vt_f16_to_f32(dx), acc);
    }
    return acc;
}

/* 6-bit scale and min of sub-block j (0..7) from the 12 bytes Q4_K and
 * Q5_K share. */
static inline __attribute__((always_inline)) void k4_scale_min(const uint8_t *sc, int j, int *s, int *m)
{
    if (j < 4) {
        *s = sc[j] & 63;
        *m = sc[j + 4] & 63;
    } else {
        *s = (sc[j + 4] & 0xf) | ((sc[j - 4] >> 6) << 4);
        *m = (sc[j + 4] >> 4) | ((sc[j] >> 6) << 4);
    }
}

/* Q3_K x Q8_K: ggml's x86 (AVX2) vec_dot_q3_K_q8_K: the lanes by position
 * over (2 low bits - 4 where the hmask bit is clear) * (6-bit scale - 32),
 * fma(d_x * d_w, lane, acc). Block: hmask[32], qs[64], scales[12], F16 d. */
static inline __attribute__((always_inline)) float dot_q3_k_body(const uint8_t *w, const uint8_t *x, int64_t nb)
{
    float acc[8] = { 0 };
    for (int64_t b = 0; b < nb; b++, w += 110, x += 292) {
        const uint8_t *hm = w, *qs = w + 32, *s = w + 96;
        uint16_t dw;
        float dx;
        memcpy(&dw, w + 108, 2);
        memcpy(&dx, x, 4);
        const int8_t *q8 = (const int8_t *)(x + 4);
        int scale[16];
        for (int j = 0; j < 16; j++)
            scale[j] = (((s[j % 8] >> (4 * (j / 8))) & 0xf) | (((s[8 + j % 4] >> (2 * (j / 4))) & 3) << 4)) - 32;
        int32_t lane[8] = { 0 };
        for (int e = 0; e < 256; e++) {
            const int half = e / 128, plane = (e % 128) / 32, l = e % 32;
            const int v = ((qs[32 * half + l] >> (2 * plane)) & 3) - ((hm[l] >> (4 * half + plane)) & 1 ? 0 : 4);
            lane[l / 4] += scale[e / 16] * v * q8[e];
        }
        const float d = dx * vt_f16_to_f32(dw);
        for (int m = 0; m < 8; m++)
            acc[m] = fmaf(d, (float)lane[m], acc[m]);
    }
    return hsum8(acc);
}

/* Q4_K (plain layout) and Q5_K x Q8_K: ggml's x86 (AVX2) vec_dot_q4_K_q8_K
 * and vec_dot_q5_K_q8_K: the lanes by position over the unsigned values
 * times their sub-block's 6-bit scale, fma(d_x * d_w, lane, acc); the mins
 * apart, with dmin = -(d_x * dmin_w): Q4_K in four float lanes (two
 * sub-blocks' min * q8 sum each, fma) summed as ggml's reduction, Q5_K as
 * one exact integer per superblock, fma'd into a float sum (the compiler
 * fuses ggml's summs += dmin * isum). Blocks: F16 d, F16
 * dmin, scales[12], (Q5_K: qh[32]), qs[128]. */
static inline __attribute__((always_inline)) float dot_k45_body(const uint8_t *w, const uint8_t *x, int64_t nb,
                                                                int five)
{
    float acc[8] = { 0 }, accm[4] = { 0 }, summs = 0.0f;
    const size_t wb = five ? 176 : 144;
    for (int64_t b = 0; b < nb; b++, w += wb, x += 292) {
        uint16_t dh, mh;
        float dx;
        int16_t bsums[16];
        memcpy(&dh, w, 2);
        memcpy(&mh, w + 2, 2);
        memcpy(&dx, x, 4);
        memcpy(bsums, x + 260, sizeof bsums);
        const uint8_t *sc = w + 4, *qh = w + 16, *qs = w + (five ? 48 : 16);
        const int8_t *q8 = (const int8_t *)(x + 4);
        int scale[8], min[8];
        for (int j = 0; j < 8; j++)
            k4_scale_min(sc, j, &scale[j], &min[j]);
        int32_t lane[8] = { 0 };
        for (int e = 0; e < 256; e++) {
            const int j = e / 32, l = e % 32;
            int v = (qs[32 * (j / 2) + l] >> (4 * (j % 2))) & 0xf;
            if (five)
                v |= ((qh[l] >> j) & 1) << 4;
            lane[l / 4] += scale[j] * v * q8[e];
        }
        const float d = dx * vt_f16_to_f32(dh), dmin = -(dx * vt_f16_to_f32(mh));
        for (int m = 0; m < 8; m++)
            acc[m] = fmaf(d, (float)lane[m], acc[m]);
        if (five) {
            int32_t isum = 0;
            for (int j = 0; j < 8; j++)
                isum += min[j] * (bsums[2 * j] + bsums[2 * j + 1]);
            summs = fmaf(dmin, (float)isum, summs); /* ggml's build contracts it to an FMA */
        } else {
            for (int i = 0; i < 4; i++) {
                const int32_t p = min[2 * i] * (bsums[4 * i] + bsums[4 * i + 1]) +
                                  min[2 * i + 1] * (bsums[4 * i + 2] + bsums[4 * i + 3]);
                accm[i] = fmaf(dmin, (float)p, accm[i]);
            }
        }
    }
    if (five)
        return hsum8(acc) + summs;
    return hsum8(acc) + ((accm[0] + accm[2]) + (accm[1] + accm[3]));
}

static inline __attribute__((always_inline)) float dot_q4_k_body(const uint8_t *w, const uint8_t *x, int64_t nb)
{
    return dot_k45_body(w, x, nb, 0);
}

static inline __attribute__((always_inline)) float dot_q5_k_body(const uint8_t *w, const uint8_t *x, int64_t nb)
{
    return dot_k45_body(w, x, nb, 1);
}

/* IQ4_NL and MXFP4 x Q8_0 in the plain layout: ggml's x86 vec_dot_iq4_nl_q8_0
 * and vec_dot_mxfp4_q8_0 take two blocks at a time into two accumulators
 * (the lanes by position, fma(d_w * d_x, lane, acc)), add them lane by lane
 * and sum as hsum_float_8; an odd last block is added as a float (fused). */
static inline __attribute__((always_inline)) float dot_nib_pair_body(const uint8_t *w, const uint8_t *x, int64_t nb,
                                                                     const int8_t *map, int mx)
{
    float acc[2][8] = { { 0 } }, sumf;
    const size_t wb = mx ? 17 : 18;
    int64_t b = 0;
    for (; b < nb; b++, w += wb, x += 34) {
        uint16_t dx;
        memcpy(&dx, x, 2);
        float dw;
        if (mx) {
            uint32_t bits = w[0] < 2 ? 0x00200000u << w[0] : (uint32_t)(w[0] - 1) << 23;
            memcpy(&dw, &bits, 4);
        } else {
            uint16_t h;
            memcpy(&h, w, 2);
            dw = vt_f16_to_f32(h);
        }
        int8_t v[32];
        nibbles_to_int8(w + (mx ? 1 : 2), map, v);
        const int8_t *qx = (const int8_t *)(x + 2);
        const float d = vt_f16_to_f32(dx) * dw;
        if (b + 1 == nb && nb % 2) {
            int32_t sum = 0;
            for (int k = 0; k < 32; k++)
                sum += (int32_t)v[k] * qx[k];
            float tail[8];
            for (int m = 0; m < 8; m++)
                tail[m] = acc[0][m] + acc[1][m];
            return fmaf(d, (float)sum, hsum8(tail));
        }
        for (int m = 0; m < 8; m++) {
            int32_t lane = 0;
            for (int k = 4 * m; k < 4 * m + 4; k++)
                lane += (int32_t)v[k] * qx[k];
            acc[b % 2][m] = fmaf(d, (float)lane, acc[b % 2][m]);
        }
    }
    float sum[8];
    for (int m = 0; m < 8; m++)
        sum[m] = acc[0][m] + acc[1][m];
    sumf = hsum8(sum);
    return sumf;
}

static inline __attribute__((always_inline)) float dot_iq4_nl_body(const uint8_t *w, const uint8_t *x, int64_t nb)
{
    return dot_nib_pair_body(w, x, nb, vt_iq4nl_values, 0);
}

static inline __attribute__((always_inline)) float dot_mxfp4_body(const uint8_t *w, const uint8_t *x, int64_t nb)
{
    return dot_nib_pair_body(w, x, nb, mxfp4_x2_values, 1);
}

/* Q2_K x Q8_K. Block: scales[16] (a 4-bit scale and a 4-bit min per 16
 * elements), qs[64] (2 bits each), F16 d, F16 dmin; element e is bits
 * 2 * ((e % 128) / 32) of qs[32 * (e / 128) + e % 32].
 * Plain layout (ggml's x86 vec_dot_q2_K_q8_K): per superblock first
 * acc = fma(-(d_x * dmin_w), lane of mins * q8 sums, acc) (lane m: the 16-sums
 * 2m and 2m + 1), then acc = fma(d_x * d_w, lane by position, acc).
 * Repacked (ggml_gemv_q2_K_8x8_q8_K, AVX-512 CPUs): the Q4_K repacked form,
 * one exact integer per row for the values and one for the mins. */
static inline __attribute__((always_inline)) int q2_value(const uint8_t *qs, int e)
{
    return (qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
}

static inline __attribute__((always_inline)) float dot_q2_k_body(const uint8_t *w, const uint8_t *x, int64_t nb)
{
    float acc[8] = { 0 };
    for (int64_t b = 0; b < nb; b++, w += 84, x += 292) {
        const uint8_t *sc = w, *qs = w + 16;
        uint16_t dh, mh;
        float dx;
        int16_t bsums[16];
        memcpy(&dh, w + 80, 2);
        memcpy(&mh, w + 82, 2);
        memcpy(&dx, x, 4);
        memcpy(bsums, x + 260, sizeof bsums);
        const int8_t *q8 = (const int8_t *)(x + 4);
        const float d = dx * vt_f16_to_f32(dh), dmin = -(dx * vt_f16_to_f32(mh));
        for (int m = 0; m < 8; m++)
            acc[m] = fmaf(dmin, (float)((sc[2 * m] >> 4) * bsums[2 * m] + (sc[2 * m + 1] >> 4) * bsums[2 * m + 1]),
                          acc[m]);
        int32_t lane[8] = { 0 };
        for (int e = 0; e < 256; e++)
            lane[(e % 32) / 4] += (sc[e / 16] & 0xf) * q2_value(qs, e) * q8[e];
        for (int m = 0; m < 8; m++)
            acc[m] = fmaf(d, (float)lane[m], acc[m]);
    }
    return hsum8(acc);
}

static inline __attribute__((always_inline)) float dot_q2_k_r8_body(const uint8_t *w, const uint8_t *x, int64_t nb)
{
    float acc = 0.0f, mins = 0.0f;
    for (int64_t b = 0; b < nb; b++, w += 84, x += 292) {
        const uint8_t *sc = w, *qs = w + 16;
        uint16_t dh, mh;
        float dx;
        int16_t bsums[16];
        memcpy(&dh, w + 80, 2);
        memcpy(&mh, w + 82, 2);
        memcpy(&dx, x, 4);
        memcpy(bsums, x + 260, sizeof bsums);
        const int8_t *q8 = (const int8_t *)(x + 4);
        int32_t isum = 0, imin = 0;
        for (int e = 0; e < 256; e++)
            isum += (sc[e / 16] & 0xf) * q2_value(qs, e) * q8[e];
        for (int g = 0; g < 16; g++)
            imin += (sc[g] >> 4) * bsums[g];
        acc = fmaf((float)isum, vt_f16_to_f32(dh) * dx, acc);
        mins = fmaf((float)imin, vt_f16_to_f32(mh) * dx, mins);
    }
    return acc - mins;
}

/* TQ2_0 x Q8_K: ggml's x86 (AVX2) vec_dot_tq2_0_q8_K: the lanes by position
 * over the raw 2-bit values (0..2), each lane then less two of the
 * activation's 16-element sums (the -1 offset, taken off by lane rather than
 * by element: the total is the same, the lanes are ggml's), fused
 * acc = fma(lane, d_x * d_w, acc). Block: qs[64] (element 128 c + 32 f + b
 * in bits 2f of qs[32 c + b]), F16 d. */
static inline __attribute__((always_inline)) float dot_tq2_0_body(const uint8_t *w, const uint8_t *x, int64_t nb)
{
    float acc[8] = { 0 };
    for (int64_t b = 0; b < nb; b++, w += 66, x += 292) {
        uint16_t dw;
        float dx;
        int16_t bsums[16];
        memcpy(&dw, w + 64, 2);
        memcpy(&dx, x, 4);
        memcpy(bsums, x + 260, sizeof bsums);
        const int8_t *q8 = (const int8_t *)(x + 4);
        int32_t lane[8] = { 0 };
        for (int e = 0; e < 256; e++) {
            const int c = e / 128, f = (e % 128) / 32, l = e % 32;
            lane[l / 4] += ((w[32 * c + l] >> (2 * f)) & 3) * q8[e];
        }
        for (int m = 0; m < 8; m++)
            lane[m] -= bsums[2 * m] + bsums[2 * m + 1];
        const float d = dx * vt_f16_to_f32(dw);
        for (int m = 0; m < 8; m++)
            acc[m] = fmaf((float)lane[m], d, acc[m]);
    }
    return hsum8(acc);
}

/* IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS and IQ3_S x Q8_K, as ggml's x86 (AVX2)
 * vec_dot_iq*_q8_K: the lanes by position over grid magnitude * sign * the
 * odd integer scale (2 s + 1), fma(d_w * d_x, lane, acc), the sum times the
 * type's constant (1/8, 1/8, 1/8, 1/4, 1). iq_value gives element e (0..255)
 * of a block and its scale. IQ2_XXS: F16 d, then per 32 elements four grid
 * indices and a u32 of four 7-bit sign indices and the 4-bit scale. IQ2_XS:
 * F16 d, 32 u16 codes (9-bit grid index, 7-bit sign index), scales[8], a
 * 4-bit scale per 16 elements. */
static inline __attribute__((always_inline)) void iq_value(int type, const uint8_t *w, int e, int *v, int *sc)
{
    const int g = e / 32, l = (e % 32) / 8, j = e % 8;
    int mag, neg;
    if (type == VT_TYPE_IQ2_XXS) {
        const uint8_t *q = w + 2 + 8 * g;
        uint32_t aux;
        memcpy(&aux, q + 4, 4);
        mag = vt_iq2xxs_grid[q[l]][j];
        neg = (vt_iq2_signs[(aux >> (7 * l)) & 127] >> j) & 1;
        *sc = 2 * (int)(aux >> 28) + 1;
    } else if (type == VT_TYPE_IQ2_XS) {
        uint16_t code;
        memcpy(&code, w + 2 + 2 * (4 * g + l), 2);
        mag = vt_iq2xs_grid[code & 511][j];
        neg = (vt_iq2_signs[code >> 9] >> j) & 1;
        *sc = 2 * ((w[66 + g] >> (4 * (l / 2))) & 0xf) + 1;
    } else if (type == VT_TYPE_IQ2_S) {
        const uint8_t *qs = w + 2, *signs = w + 34, *qh = w + 66, *scales = w + 74;
        const unsigned idx = qs[4 * g + l] | (((unsigned)qh[g] << (8 - 2 * l)) & 0x300u);
        mag = vt_iq2s_grid[idx][j];
        neg = (signs[4 * g + l] >> j) & 1;
        *sc = 2 * ((scales[g] >> (4 * (l / 2))) & 0xf) + 1;
    } else if (type == VT_TYPE_IQ3_XXS) {
        const uint8_t *qs = w + 2;
        uint32_t aux;
        memcpy(&aux, w + 66 + 4 * g, 4);
        const uint8_t *q = qs + 8 * g + 2 * l;
        mag = vt_iq3xxs_grid[q[j / 4]][j % 4];
        neg = (vt_iq2_signs[(aux >> (7 * l)) & 127] >> j) & 1;
        *sc = 2 * (int)(aux >> 28) + 1;
    } else { /* IQ3_S */
        const uint8_t *qs = w + 2, *qh = w + 66, *signs = w + 74, *scales = w + 106;
        const unsigned h = qh[g];
        const uint8_t *q = qs + 8 * g + 2 * l;
        const unsigned idx = j < 4 ? q[0] | ((h << (8 - 2 * l)) & 256u) : q[1] | ((h << (7 - 2 * l)) & 256u);
        mag = vt_iq3s_grid[idx][j % 4];
        neg = (signs[4 * g + l] >> j) & 1;
        *sc = 2 * ((scales[g / 2] >> (4 * (g % 2))) & 0xf) + 1;
    }
    *v = neg ? -mag : mag;
}

static inline __attribute__((always_inline)) float dot_iq_grid_body(const uint8_t *w, const uint8_t *x, int64_t nb,
                                                                    int type, size_t wb, float post)
{
    float acc[8] = { 0 };
    for (int64_t b = 0; b < nb; b++, w += wb, x += 292) {
        uint16_t dw;
        float dx;
        memcpy(&dw, w, 2);
        memcpy(&dx, x, 4);
        const int8_t *q8 = (const int8_t *)(x + 4);
        int32_t lane[8] = { 0 };
        for (int e = 0; e < 256; e++) {
            int v, sc;
            iq_value(type, w, e, &v, &sc);
            lane[(e % 32) / 4] += sc * v * q8[e];
        }
        const float d = vt_f16_to_f32(dw) * dx;
        for (int m = 0; m < 8; m++)
            acc[m] = fmaf(d, (float)lane[m], acc[m]);
    }
    return post == 1.0f ? hsum8(acc) : post * hsum8(acc);
}

static inline __attribute__((always_inline)) float dot_iq2_xxs_body(const uint8_t *w, const uint8_t *x, int64_t nb)
{
    return dot_iq_grid_body(w, x, nb, VT_TYPE_IQ2_XXS, 66, 0.125f);
}

static inline __attribute__((always_inline)) float dot_iq2_xs_body(const uint8_t *w, const uint8_t *x, int64_t nb)
{
    return dot_iq_grid_body(w, x, nb, VT_TYPE_IQ2_XS, 74, 0.125f);
}

static inline __attribute__((always_inline)) float dot_iq2_s_body(const uint8_t *w, const uint8_t *x, int64_t nb)
{
    return dot_iq_grid_body(w, x, nb, VT_TYPE_IQ2_S, 82, 0.125f);
}

static inline __attribute__((always_inline)) float dot_iq3_xxs_body(const uint8_t *w, const uint8_t *x, int64_t nb)
{
    return dot_iq_grid_body(w, x, nb, VT_TYPE_IQ3_XXS, 98, 0.25f);
}

static inline __attribute__((always_inline)) float dot_iq3_s_body(const uint8_t *w, const uint8_t *x, int64_t nb)
{
    return dot_iq_grid_body(w, x, nb, VT_TYPE_IQ3_S, 110, 1.0f);
}

/* IQ1_S x Q8_K: ggml's x86 (AVX2) vec_dot_iq1_s_q8_K: the lanes by position
 * over the grid values (-1, 0, 1) * (2 s + 1), fma(d_x * d_w, lane, acc);
 * the delta term one exact integer per superblock (the 32-sums of the
 * activation times the delta's sign and the scale), fma'd into a float sum
 * (the compiler fuses ggml's accum1 += d * sumi1); the product is
 * hsum(acc) + delta * that sum. Block: F16 d, qs[32], 8 u16 qh. */
static inline __attribute__((always_inline)) float dot_iq1_s_body(const uint8_t *w, const uint8_t *x, int64_t nb)
{
    float acc[8] = { 0 }, accum1 = 0.0f;
    for (int64_t b = 0; b < nb; b++, w += 50, x += 292) {
        uint16_t dw, qh[8];
        float dx;
        int16_t bsums[16];
        memcpy(&dw, w, 2);
        memcpy(qh, w + 34, sizeof qh);
        memcpy(&dx, x, 4);
        memcpy(bsums, x + 260, sizeof bsums);
        const uint8_t *qs = w + 2;
        const int8_t *q8 = (const int8_t *)(x + 4);
        int32_t lane[8] = { 0 }, sumi1 = 0;
        for (int g = 0; g < 8; g++) {
            const int ls = 2 * ((qh[g] >> 12) & 7) + 1;
            for (int l = 0; l < 4; l++) {
                const int8_t *grid = vt_iq1s_grid[qs[4 * g + l] | (((qh[g] >> (3 * l)) & 7) << 8)];
                for (int j = 0; j < 8; j++)
                    lane[(8 * l + j) / 4] += ls * grid[j] * q8[32 * g + 8 * l + j];
            }
            sumi1 += (bsums[2 * g] + bsums[2 * g + 1]) * (qh[g] & 0x8000 ? -1 : 1) * ls;
        }
        const float d = dx * vt_f16_to_f32(dw);
        for (int m = 0; m < 8; m++)
            acc[m] = fmaf(d, (float)lane[m], acc[m]);
        accum1 = fmaf(d, (float)sumi1, accum1);
    }
    return hsum8(acc) + VT_IQ1S_DELTA * accum1;
}

/* IQ1_M x Q8_K: ggml's x86 (AVX2) vec_dot_iq1_m_q8_K: two sets of lanes by
 * position, the grid values and the delta signs (each times its 16-element
 * 3-bit scale, 2 s + 1), each fma(d_x * d, lane, acc) into its own
 * accumulator; the product is hsum(values) + delta * hsum(deltas). Block:
 * qs[32], qh[16], 4 u16 scales carrying the F16 super scale in their top
 * nibbles. */
static inline __attribute__((always_inline)) float dot_iq1_m_body(const uint8_t *w, const uint8_t *x, int64_t nb)
{
    float acc1[8] = { 0 }, acc2[8] = { 0 };
    for (int64_t b = 0; b < nb; b++, w += 56, x += 292) {
        const uint8_t *qs = w, *qh = w + 32;
        uint16_t sc[4];
        float dx;
        memcpy(sc, w + 48, sizeof sc);
        memcpy(&dx, x, 4);
        const uint16_t dbits = (uint16_t)((sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0u) | ((sc[2] >> 4) & 0x0f00u) |
                                          (sc[3] & 0xf000u));
        const int8_t *q8 = (const int8_t *)(x + 4);
        int32_t lane1[8] = { 0 }, lane2[8] = { 0 };
        for (int g = 0; g < 8; g++) {
            const unsigned s = sc[g / 2] >> (6 * (g % 2));
            for (int l = 0; l < 4; l++) {
                const int ls = 2 * (int)((s >> (3 * (l / 2))) & 7) + 1;
                const unsigned h = (unsigned)qh[2 * g + l / 2] >> (4 * (l % 2));
                const int8_t *grid = vt_iq1s_grid[qs[4 * g + l] | ((h & 7u) << 8)];
                const int delta = (h & 8u) ? -1 : 1;
                for (int j = 0; j < 8; j++) {
                    const int e = 8 * l + j, q = q8[32 * g + e];
                    lane1[e / 4] += ls * grid[j] * q;
                    lane2[e / 4] += ls * delta * q;
                }
            }
        }
        const float d = dx * vt_f16_to_f32(dbits);
        for (int m = 0; m < 8; m++) {
            acc1[m] = fmaf(d, (float)lane1[m], acc1[m]);
            acc2[m] = fmaf(d, (float)lane2[m], acc2[m]);
        }
    }
    return hsum8(acc1) + VT_IQ1M_DELTA * hsum8(acc2);
}

/* TQ1_0 x Q8_K: ggml's x86 (AVX2) vec_dot_tq1_0_q8_K, as TQ2_0 over base-3
 * digits: element 32 n + m of the first 160 is digit n of qs[m], then
 * 160 + 16 n + m digit n of qs[32 + m], then 240 + 4 n + j digit n of qh[j]
 * (each element's lane is still its position in its 32). Block: qs[48],
 * qh[4], F16 d. */
static inline __attribute__((always_inline)) int tq1_digit(uint8_t byte, int n)
{
    static const uint8_t pow3[5] = { 1, 3, 9, 27, 81 };
    const uint8_t q = (uint8_t)(byte * pow3[n]);
    return ((int)q * 3) >> 8;
}

static inline __attribute__((always_inline)) float dot_tq1_0_body(const uint8_t *w, const uint8_t *x, int64_t nb)
{
    float acc[8] = { 0 };
    for (int64_t b = 0; b < nb; b++, w += 54, x += 292) {
        uint16_t dw;
        float dx;
        int16_t bsums[16];
        memcpy(&dw, w + 52, 2);
        memcpy(&dx, x, 4);
        memcpy(bsums, x + 260, sizeof bsums);
        const uint8_t *qs = w, *qh = w + 48;
        const int8_t *q8 = (const int8_t *)(x + 4);
        int32_t lane[8] = { 0 };
        for (int e = 0; e < 256; e++) {
            int v;
            if (e < 160)
                v = tq1_digit(qs[e % 32], e / 32);
            else if (e < 240)
                v = tq1_digit(qs[32 + (e - 160) % 16], (e - 160) / 16);
            else
                v = tq1_digit(qh[(e - 240) % 4], (e - 240) / 4);
            lane[(e % 32) / 4] += v * q8[e];
        }
        for (int m = 0; m < 8; m++)
            lane[m] -= bsums[2 * m] + bsums[2 * m + 1];
        const float d = dx * vt_f16_to_f32(dw);
        for (int m = 0; m < 8; m++)
            acc[m] = fmaf((float)lane[m], d, acc[m]);
    }
    return hsum8(acc);
}

#ifdef VT_X86
#define INT_DOT(name)                                                                              \
    static float name##_c(const uint8_t *w, const uint8_t *x, int64_t nb)                          \
    {                                                                                              \
        return name##_body(w, x, nb);                                                              \
    }                                                                                              \
    __attribute__((target("avx2,fma"))) static float name##_fma(const uint8_t *w, const uint8_t *x, \
                                                                 int64_t nb)                       \
    {                                                                                              \
        return name##_body(w, x, nb);                                                              \
    }
#else
#define INT_DOT(name)                                                                              \
    static float name##_c(const uint8_t *w, const uint8_t *x, int64_t nb)                          \
    {                                                                                              \
        return name##_body(w, x, nb);                                                              \
    }                                                                                              \
    static float name##_fma(const uint8_t *w, const uint8_t *x, int64_t nb)                        \
    {                                                                                              \
        return name##_body(w, x, nb);                                                              \
    }
#endif
INT_DOT(dot_q8_0)
INT_DOT(dot_q6_k)
INT_DOT(dot_iq4_xs)
INT_DOT(dot_q4_k_r8)
INT_DOT(dot_q4_0)
INT_DOT(dot_q4_0_r8)
INT_DOT(dot_iq4_nl_r8)
INT_DOT(dot_q5_0)
INT_DOT(dot_q4_1)
INT_DOT(dot_q5_1)
INT_DOT(dot_mxfp4_r8)
INT_DOT(dot_q3_k)
INT_DOT(dot_q4_k)
INT_DOT(dot_q5_k)
INT_DOT(dot_iq4_nl)
INT_DOT(dot_mxfp4)
INT_DOT(dot_q2_k)
INT_DOT(dot_q2_k_r8)
INT_DOT(dot_tq2_0)
INT_DOT(dot_iq2_xxs)
INT_DOT(dot_iq2_xs)
INT_DOT(dot_iq2_s)
INT_DOT(dot_iq3_xxs)
INT_DOT(dot_iq3_s)
INT_DOT(dot_iq1_s)
INT_DOT(dot_iq1_m)
INT_DOT(dot_tq1_0)
#undef INT_DOT

/* One row per weight type that has an integer kernel; the rest take the
 * F32 product of the rounded activation. */
typedef struct int_kernel {
    vt_act_type act;     /* the activation's block type (Q8_0 or Q8_K) */
    int_dot_fn plain[2]; /* the plain layout's order (portable, FMA build); NULL: none */
    int_dot_fn r8[2];    /* the order of ggml's repacked layout, which llama.cpp gives a
                            tensor of this type whose rows are a multiple of 8 on an AVX2
                            CPU; NULL: ggml does not repack the type */
} int_kernel;

static const int_kernel int_kernels[VT_TYPE_COUNT] = {
    [VT_TYPE_Q8_0] = { VT_ACT_Q8_0, { dot_q8_0_c, dot_q8_0_fma }, { NULL, NULL } },
    [VT_TYPE_Q6_K] = { VT_ACT_Q8_K, { dot_q6_k_c, dot_q6_k_fma }, { NULL, NULL } },
    [VT_TYPE_IQ4_XS] = { VT_ACT_Q8_K, { dot_iq4_xs_c, dot_iq4_xs_fma }, { NULL, NULL } },
    [VT_TYPE_Q4_K] = { VT_ACT_Q8_K, { dot_q4_k_c, dot_q4_k_fma }, { dot_q4_k_r8_c, dot_q4_k_r8_fma } },
    [VT_TYPE_Q3_K] = { VT_ACT_Q8_K, { dot_q3_k_c, dot_q3_k_fma }, { NULL, NULL } },
    [VT_TYPE_Q2_K] = { VT_ACT_Q8_K, { dot_q2_k_c, dot_q2_k_fma }, { dot_q2_k_r8_c, dot_q2_k_r8_fma } },
    [VT_TYPE_TQ2_0] = { VT_ACT_Q8_K, { dot_tq2_0_c, dot_tq2_0_fma }, { NULL, NULL } },
    [VT_TYPE_TQ1_0] = { VT_ACT_Q8_K, { dot_tq1_0_c, dot_tq1_0_fma }, { NULL, NULL } },
    [VT_TYPE_IQ2_XXS] = { VT_ACT_Q8_K, { dot_iq2_xxs_c, dot_iq2_xxs_fma }, { NULL, NULL } },
    [VT_TYPE_IQ2_XS] = { VT_ACT_Q8_K, { dot_iq2_xs_c, dot_iq2_xs_fma }, { NULL, NULL } },
    [VT_TYPE_IQ2_S] = { VT_ACT_Q8_K, { dot_iq2_s_c, dot_iq2_s_fma }, { NULL, NULL } },
    [VT_TYPE_IQ3_XXS] = { VT_ACT_Q8_K, { dot_iq3_xxs_c, dot_iq3_xxs_fma }, { NULL, NULL } },
    [VT_TYPE_IQ3_S] = { VT_ACT_Q8_K, { dot_iq3_s_c, dot_iq3_s_fma }, { NULL, NULL } },
    [VT_TYPE_IQ1_S] = { VT_ACT_Q8_K, { dot_iq1_s_c, dot_iq1_s_fma }, { NULL, NULL } },
    [VT_TYPE_IQ1_M] = { VT_ACT_Q8_K, { dot_iq1_m_c, dot_iq1_m_fma }, { NULL, NULL } },
    [VT_TYPE_Q5_K] = { VT_ACT_Q8_K, { dot_q5_k_c, dot_q5_k_fma }, { NULL, NULL } },
    [VT_TYPE_Q4_0] = { VT_ACT_Q8_0, { dot_q4_0_c, dot_q4_0_fma }, { dot_q4_0_r8_c, dot_q4_0_r8_fma } },
    [VT_TYPE_IQ4_NL] = { VT_ACT_Q8_0, { dot_iq4_nl_c, dot_iq4_nl_fma }, { dot_iq4_nl_r8_c, dot_iq4_nl_r8_fma } },
    [VT_TYPE_Q5_0] = { VT_ACT_Q8_0, { dot_q5_0_c, dot_q5_0_fma }, { NULL, NULL } },
    [VT_TYPE_Q4_1] = { VT_ACT_Q8_1, { dot_q4_1_c, dot_q4_1_fma }, { NULL, NULL } },
    [VT_TYPE_Q5_1] = { VT_ACT_Q8_1, { dot_q5_1_c, dot_q5_1_fma }, { NULL, NULL } },
    [VT_TYPE_MXFP4] = { VT_ACT_Q8_0, { dot_mxfp4_c, dot_mxfp4_fma }, { dot_mxfp4_r8_c, dot_mxfp4_r8_fma } },
};

/* The kernel pair w's products take, or NULL (the F32 product of the
 * rounded activation). */
static const int_dot_fn *int_dot_of(const vt_cpu *c, const vt_mat *w, vt_act_type *act)
{
    const int t = w->codec->type;
    if (c->matmul != VT_MATMUL_Q8 || t < 0 || t >= VT_TYPE_COUNT)
        return NULL;
    const int_kernel *k = &int_kernels[t];
    const int_dot_fn *f = k->r8[0] && w->tensor_rows % 8 == 0 ? k->r8 : k->plain;
    if (!f[0])
        return NULL;
    if (act)
        *act = k->act;
    return f;
}

/* Bytes of one token's activation in the block type act, n elements. */
static size_t act_block_row_bytes(vt_act_type act, int64_t n)
{
    return act == VT_ACT_Q8_0 ? (size_t)(n / 32) * 34 : act == VT_ACT_Q8_1 ? (size_t)(n / 32) * 36
                                                                         : (size_t)(n / 256) * 292;
}

static void act_quantize_row(vt_act_type act, const float *x, uint8_t *dst, int64_t n)
{
    if (act == VT_ACT_Q8_1) {
        /* As the x86 quantize_row_q8_1: s = F16(d * sum of the quants), d the
         * F32 amax / 127 before it is stored as F16. */
        for (int64_t b = 0; b < n / 32; b++, dst += 36) {
            float amax = 0.0f;
            for (int j = 0; j < 32; j++)
                amax = fmaxf(amax, fabsf(x[b * 32 + j]));
            uint16_t d = q8_0_block(x + b * 32, (int8_t *)(dst + 4));
            int sum = 0;
            for (int j = 0; j < 32; j++)
                sum += ((const int8_t *)(dst + 4))[j];
            uint16_t sh = vt_f32_to_f16(amax / 127.0f * (float)sum);
            memcpy(dst, &d, 2);
            memcpy(dst + 2, &sh, 2);
        }
        return;
    }
    if (act == VT_ACT_Q8_0) {
        for (int64_t b = 0; b < n / 32; b++, dst += 34) {
            uint16_t d = q8_0_block(x + b * 32, (int8_t *)(dst + 2));
            memcpy(dst, &d, 2);
        }
        return;
    }
    for (int64_t b = 0; b < n / 256; b++, dst += 292) {
        const int8_t *q = (const int8_t *)(dst + 4);
        float d = q8_k_block(x + b * 256, (int8_t *)(dst + 4));
        memcpy(dst, &d, 4);
        int16_t bsums[16];
        for (int g = 0; g < 16; g++) {
            int sum = 0;
            for (int j = 0; j < 16; j++)
                sum += q[16 * g + j];
            bsums[g] = (int16_t)sum;
        }
        memcpy(dst + 260, bsums, sizeof bsums);
    }
}

/* ======================================================================
 * Thread pool: n-1 persistent workers plus the calling thread (thread 0).
 * vt_pool_run hands one function to all n and returns when all have finished.
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
    vt_pool_worker *w = arg;
    vt_pool *p = w->p;
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

void vt_pool_run(vt_pool *p, vt_task_fn fn, void *ctx)
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

static void pool_stop(vt_pool *p, int started)
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
 * Matrix products: y[t][o] = dot(W row o, x[t]) for every token t of the
 * batch. Each thread owns a contiguous range of output rows; it decodes four
 * rows at a time into its scratch (F32 weights are read in place) and uses
 * them for every token, so a batch decodes each weight row once.
 * ====================================================================== */

typedef struct mm_task {
    const vt_mat *w;
    const float *x;    /* n_tok x w->cols, or NULL when xb is used */
    const uint8_t *xb; /* the activation in blocks for an integer kernel, n_tok rows */
    float *y;       /* n_tok rows of stride ldy */
    int64_t ldy;
} mm_task;

typedef struct mm_job {
    vt_cpu *c;
    mm_task task[3];
    int n_task;
    int64_t n_tok;
} mm_job;

static void matmul_rows(vt_cpu *c, const mm_task *t, int64_t n_tok, int64_t r0, int64_t r1,
                        float *wbuf)
{
    const vt_mat *w = t->w;
    const int64_t n = w->cols;
    if (t->xb) {
        vt_act_type act = VT_ACT_F32;
        const int_dot_fn *f = int_dot_of(c, w, &act);
        const int_dot_fn dot = f[c->k.fma ? 1 : 0];
        const int64_t nb = n / w->codec->block_elems;
        const size_t xrow = act_block_row_bytes(act, n);
        for (int64_t o = r0; o < r1; o++)
            for (int64_t tok = 0; tok < n_tok; tok++)
                t->y[tok * t->ldy + o] = dot(w->data + (size_t)o * w->row_bytes, t->xb + (size_t)tok * xrow, nb);
        return;
    }
    const int in_place = w->codec->type == VT_TYPE_F32;
    const int64_t nblocks = n / w->codec->block_elems;
    int64_t o = r0;
    if (w->codec->type == VT_TYPE_BF16) {
        /* ggml sums a BF16 product its own way (dot_bf16), one row at a time. */
        for (; o < r1; o++) {
            w->codec->decode_f32(w->data + (size_t)o * w->row_bytes, wbuf, nblocks);
            for (int64_t tok = 0; tok < n_tok; tok++)
                t->y[tok * t->ldy + o] = c->k.dot_bf16(wbuf, t->x + tok * n, n);
        }
        return;
    }
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
            c->k.tile(rows, n, t->x + tok * n, n, n, t->y + tok * t->ldy + o, t->ldy);
        for (; tok < n_tok; tok++)
            c->k.dot4(rows, n, t->x + tok * n, n, t->y + tok * t->ldy + o);
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
            t->y[tok * t->ldy + o] = c->k.dot(row, t->x + tok * n, n);
    }
}

static void matmul_worker(void *ctx, int ith, int nth)
{
    mm_job *job = ctx;
    float *wbuf = vt_cpu_scratch(job->c, ith);
    for (int i = 0; i < job->n_task; i++) {
        const mm_task *t = &job->task[i];
        /* Split in groups of four rows so every thread can use dot4. */
        int64_t groups = (t->w->rows + 3) / 4;
        int64_t r0 = groups * ith / nth * 4, r1 = groups * (ith + 1) / nth * 4;
        if (r1 > t->w->rows)
            r1 = t->w->rows;
        if (r0 < r1)
            matmul_rows(job->c, t, job->n_tok, r0, r1, wbuf);
    }
}

/* The activation a weight sees: x itself (EXACT mode, F32 dot type), x
 * rounded through the weight's dot type, or x in blocks for an integer
 * kernel, in slot i (reused if an earlier task of the same job already made
 * the same). */
static void activation_for(vt_cpu *c, mm_job *job, int i, const float *x, int64_t n_tok)
{
    mm_task *t = &job->task[i];
    const vt_mat *w = t->w;
    if (c->matmul == VT_MATMUL_EXACT || w->act == VT_ACT_F32) {
        t->x = x;
        return;
    }
    const int packed = int_dot_of(c, w, NULL) != NULL;
    for (int j = 0; j < i; j++) {
        const mm_task *u = &job->task[j];
        if (u->w->act == w->act && (u->xb != NULL) == packed) {
            t->x = u->x;
            t->xb = u->xb;
            return;
        }
    }
    if (packed) {
        uint8_t *dst = (uint8_t *)c->xq[i];
        const size_t xrow = act_block_row_bytes(w->act, w->cols);
        for (int64_t tok = 0; tok < n_tok; tok++)
            act_quantize_row(w->act, x + tok * w->cols, dst + (size_t)tok * xrow, w->cols);
        t->xb = dst;
        return;
    }
    float *dst = c->xq[i];
    for (int64_t tok = 0; tok < n_tok; tok++)
        vt_act_round_row(w->act, x + tok * w->cols, dst + tok * w->cols, w->cols);
    t->x = dst;
}

/* Up to three products sharing one input (Q/K/V, gate/up) in one dispatch. */
void vt_matmul(vt_cpu *c, const float *x, int64_t n_tok, int n, const vt_mat *const *w,
               float *const *y, const int64_t *ldy)
{
    mm_job job = { .c = c, .n_task = n, .n_tok = n_tok };
    for (int i = 0; i < n; i++) {
        job.task[i] = (mm_task){ .w = w[i], .y = y[i], .ldy = ldy[i] };
        activation_for(c, &job, i, x, n_tok);
    }
    vt_pool_run(&c->pool, matmul_worker, &job);
    for (int i = 0; i < n; i++)
        if (w[i]->plant_row >= 0)
            for (int64_t t = 0; t < n_tok; t++)
                y[i][t * ldy[i] + w[i]->plant_row] *= w[i]->plant_scale;
}

void vt_matmul1(vt_cpu *c, const vt_mat *w, const float *x, int64_t n_tok, float *y, int64_t ldy)
{
    const vt_mat *ws[1] = { w };
    float *ys[1] = { y };
    vt_matmul(c, x, n_tok, 1, ws, ys, &ldy);
}

/* ======================================================================
 * The compute context: settings, buffers, threads
 * ====================================================================== */

size_t vt_round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

void *vt_alloc_aligned(size_t count, size_t elem)
{
    size_t bytes;
    if (__builtin_mul_overflow(count, elem, &bytes) || bytes > SIZE_MAX - 64)
        return NULL;
    bytes = vt_round_up(bytes ? bytes : 1, 64);
    void *p = aligned_alloc(64, bytes);
    if (p)
        memset(p, 0, bytes);
    return p;
}

int vt_cpu_configure(vt_cpu *c, const vt_runner_settings *s, vt_error *err)
{
    if (!s || !s->model_path)
        return vt_error_set(err, VT_EINPUT, "engine: no model path");
    if (s->n_ctx <= 0)
        return vt_error_set(err, VT_EINPUT, "engine: n_ctx %d: expected > 0", (int)s->n_ctx);
    if (s->matmul != VT_MATMUL_EXACT && s->matmul != VT_MATMUL_Q8)
        return vt_error_set(err, VT_EINPUT, "engine: unknown matmul mode %d", (int)s->matmul);
    if ((int)s->cache_dtype < VT_CACHE_AUTO || (int)s->cache_dtype > VT_CACHE_FP8_E4M3)
        return vt_error_set(err, VT_EINPUT, "engine: unknown cache dtype %d", (int)s->cache_dtype);
    if (s->mode != VT_MODE_PRODUCTION && s->mode != VT_MODE_EAGER)
        return vt_error_set(err, VT_EINPUT, "engine: unknown execution mode %d", (int)s->mode);
    c->eager = s->mode == VT_MODE_EAGER;
    c->matmul = s->matmul;
    c->cache_dtype = s->cache_dtype == VT_CACHE_AUTO ? VT_CACHE_F32 : s->cache_dtype;
    c->n_ctx = s->n_ctx;
    int32_t nb = s->n_batch > 0 ? s->n_batch : 512;
    c->n_batch = c->eager ? 1 : (nb < s->n_ctx ? nb : s->n_ctx);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int32_t nt = s->n_threads > 0 ? s->n_threads : (int32_t)(cores > 0 ? cores : 1);
    c->n_threads = c->eager ? 1 : (nt < VT_ENGINE_MAX_THREADS ? nt : VT_ENGINE_MAX_THREADS);
    c->k = vt_kernels_pick();
    return vt_plant_from_env(&c->plant, err);
}

vt_gguf *vt_cpu_open_model(vt_cpu *c, const vt_runner_settings *s, vt_error *err)
{
    if (vt_cpu_configure(c, s, err))
        return NULL;
    vt_gguf *g = vt_gguf_open(s->model_path, err);
    /* A planted error on a tensor the model lacks would plant nothing while
     * the detail says it did. */
    if (g && c->plant.tensor[0] && !vt_gguf_find_tensor(g, c->plant.tensor)) {
        vt_error_set(err, VT_EINPUT, "VT_ENGINE_PLANT: %s: no tensor %s", s->model_path, c->plant.tensor);
        vt_gguf_free(g);
        return NULL;
    }
    return g;
}

static int pool_start(vt_pool *p, int n, vt_error *err)
{
    p->n = n;
    atomic_init(&p->generation, 0);
    atomic_init(&p->pending, 0);
    atomic_init(&p->quit, 0);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->start, NULL);
    pthread_cond_init(&p->done, NULL);
    p->initialized = 1;
    if (p->n <= 1)
        return VT_OK;
    p->threads = calloc((size_t)p->n, sizeof *p->threads);
    p->args = calloc((size_t)p->n, sizeof *p->args);
    if (!p->threads || !p->args)
        return vt_error_set(err, VT_EINPUT, "out of memory for %d threads", p->n);
    for (int i = 1; i < p->n; i++) {
        p->args[i - 1] = (vt_pool_worker){ p, i };
        if (pthread_create(&p->threads[i - 1], NULL, worker_main, &p->args[i - 1]) != 0)
            return vt_error_set(err, VT_EINPUT, "could not start worker thread %d of %d", i, p->n);
        p->started++;
    }
    return VT_OK;
}

int vt_cpu_start(vt_cpu *c, int64_t max_in, int64_t head_dim, size_t extra, const char *file,
                 vt_error *err)
{
    const size_t B = (size_t)c->n_batch, hd = (size_t)head_dim;
    c->max_in = max_in;
    int ok = 1;
    for (int i = 0; i < 3; i++) {
        size_t n;
        c->xq[i] = __builtin_mul_overflow(B, (size_t)max_in, &n) ? NULL : vt_alloc_aligned(n, 4);
        ok = ok && c->xq[i];
    }
    /* Per-thread slices, each a multiple of 16 floats (64 bytes) so threads
     * never share a cache line. */
    c->scratch_extra_at = vt_round_up(4 * (size_t)max_in, 16) +
                          (hd ? vt_round_up((size_t)c->n_ctx, 16) + 69 * vt_round_up(hd, 16) : 0);
    c->scratch_stride = c->scratch_extra_at + vt_round_up(extra, 16);
    c->scratch = vt_alloc_aligned((size_t)c->n_threads * c->scratch_stride, 4);
    if (!ok || !c->scratch)
        return vt_error_set(err, VT_EINPUT, "%s: out of memory for n_batch %d, %d threads", file,
                            c->n_batch, c->n_threads);
    return pool_start(&c->pool, c->n_threads, err);
}

void vt_cpu_free(vt_cpu *c)
{
    vt_pool *p = &c->pool;
    if (p->initialized) {
        pool_stop(p, p->started);
        pthread_mutex_destroy(&p->mu);
        pthread_cond_destroy(&p->start);
        pthread_cond_destroy(&p->done);
    }
    free(p->threads);
    free(p->args);
    for (int i = 0; i < 3; i++)
        free(c->xq[i]);
    free(c->scratch);
}

void vt_cpu_resolved(const vt_cpu *c, vt_runner_settings *out)
{
    out->mode = c->eager ? VT_MODE_EAGER : VT_MODE_PRODUCTION;
    out->matmul = c->matmul;
    out->cache_dtype = c->cache_dtype; /* auto already resolved to F32 */
    out->n_threads = c->n_threads;
    out->n_ctx = c->n_ctx;
    out->n_batch = c->n_batch;
}

void vt_cpu_describe(vt_cpu *c)
{
    int n = snprintf(c->detail, sizeof c->detail, "isa=%s threads=%d mode=%s matmul=%s cache=%s batch=%d",
                     c->k.isa, c->n_threads, c->eager ? "eager" : "production",
                     vt_matmul_mode_name(c->matmul), vt_cache_dtype_name(c->cache_dtype), c->n_batch);
    if (c->plant.tensor[0] && n > 0 && (size_t)n < sizeof c->detail)
        snprintf(c->detail + n, sizeof c->detail - (size_t)n, " plant=%s:%lld:%.9g", c->plant.tensor,
                 (long long)c->plant.row, (double)c->plant.scale);
}

float *vt_cpu_scratch(const vt_cpu *c, int ith) { return c->scratch + (size_t)ith * c->scratch_stride; }
float *vt_cpu_extra(const vt_cpu *c, int ith) { return vt_cpu_scratch(c, ith) + c->scratch_extra_at; }

vt_mat vt_mat_rows(const vt_mat *m, int64_t r0, int64_t n)
{
    vt_mat out = *m;
    out.data = m->data + (size_t)r0 * m->row_bytes;
    out.rows = n;
    out.plant_row = m->plant_row >= r0 && m->plant_row < r0 + n ? m->plant_row - r0 : -1;
    return out;
}

int vt_plant_from_env(vt_plant *p, vt_error *err)
{
    memset(p, 0, sizeof *p);
    const char *v = getenv("VT_ENGINE_PLANT");
    if (!v || !*v)
        return VT_OK;
    const char *c1 = strchr(v, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    char *end = NULL;
    long long row = -1;
    float scale = 0.0f;
    if (c1 && c2 && c1 > v && (size_t)(c1 - v) < sizeof p->tensor && c1[1] >= '0' && c1[1] <= '9') {
        row = strtoll(c1 + 1, &end, 10);
        if (end != c2)
            row = -1;
        if (row >= 0 && c2[1] && c2[1] != ' ') {
            scale = strtof(c2 + 1, &end);
            if (*end)
                row = -1;
        }
    }
    if (row < 0 || !isfinite(scale) || scale == 1.0f || (c2 && !c2[1]))
        return vt_error_set(err, VT_EINPUT, "VT_ENGINE_PLANT '%s': expected TENSOR:ROW:SCALE (a tensor "
                            "name, a row >= 0 and a finite scale other than 1)", v);
    memcpy(p->tensor, v, (size_t)(c1 - v));
    p->row = row;
    p->scale = scale;
    return VT_OK;
}

/* ======================================================================
 * Loading
 * ====================================================================== */

int vt_load_check_arch(const vt_gguf *g, const char *arch, vt_error *err)
{
    vt_gguf_str a;
    if (!vt_gguf_get_str(g, "general.architecture", &a))
        return vt_error_set(err, VT_EINPUT, "%s: key general.architecture: missing", vt_gguf_name(g));
    if (a.len != strlen(arch) || memcmp(a.ptr, arch, a.len) != 0)
        return vt_error_set(err, VT_EINPUT, "%s: key general.architecture: \"%.*s\": expected \"%s\"",
                            vt_gguf_name(g), (int)(a.len > 64 ? 64 : a.len), a.ptr, arch);
    return VT_OK;
}

/* The key "<arch>.<key>" (its full name into full): *present 1 if in the
 * file; 0 if missing and not required; missing and required is an error. */
static int find_key(const vt_gguf *g, const char *arch, const char *key, int required,
                    char full[128], int *present, vt_error *err)
{
    snprintf(full, 128, "%s.%s", arch, key);
    *present = vt_gguf_find_key(g, full) >= 0;
    if (!*present && required)
        return vt_error_set(err, VT_EINPUT, "%s: key %s: missing", vt_gguf_name(g), full);
    return VT_OK;
}

int vt_load_i32(const vt_gguf *g, const char *arch, const char *key, int required, int32_t def,
                int32_t *out, vt_error *err)
{
    char full[128];
    int present, rc = find_key(g, arch, key, required, full, &present, err);
    int64_t v;
    if (rc || !present) {
        *out = def;
        return rc;
    }
    if (!vt_gguf_get_i64(g, full, &v) || v <= 0 || v > INT32_MAX)
        return vt_error_set(err, VT_EINPUT, "%s: key %s: expected a positive 32-bit integer",
                            vt_gguf_name(g), full);
    *out = (int32_t)v;
    return VT_OK;
}

int vt_load_f32(const vt_gguf *g, const char *arch, const char *key, int required, float def,
                float *out, vt_error *err)
{
    char full[128];
    int present, rc = find_key(g, arch, key, required, full, &present, err);
    double v;
    if (rc || !present) {
        *out = def;
        return rc;
    }
    if (!vt_gguf_get_f64(g, full, &v) || !(v >= 0.0) || !isfinite(v))
        return vt_error_set(err, VT_EINPUT, "%s: key %s: expected a finite non-negative number",
                            vt_gguf_name(g), full);
    *out = (float)v;
    return VT_OK;
}

const vt_gguf_tensor *vt_load_find(const vt_gguf *g, const char *name, int64_t ne0, int64_t ne1,
                                   vt_error *err)
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

const float *vt_load_f32_matrix(const vt_gguf *g, const char *name, int64_t ne0, int64_t ne1,
                                vt_error *err)
{
    const vt_gguf_tensor *t = vt_load_find(g, name, ne0, ne1, err);
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

const float *vt_load_vector(const vt_gguf *g, const char *name, int64_t n, vt_error *err)
{
    return vt_load_f32_matrix(g, name, n, 0, err);
}

int vt_load_matrix(const vt_gguf *g, const char *name, int64_t cols, int64_t rows, vt_mat *out,
                   vt_error *err)
{
    const vt_gguf_tensor *t = vt_load_find(g, name, cols, rows, err);
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
    out->act = vt_act_type_of(t->type);
    out->tensor_rows = rows;
    out->plant_row = -1;
    out->plant_scale = 1.0f;
    vt_plant p;
    if (vt_plant_from_env(&p, err))
        return err->code;
    if (p.tensor[0] && strcmp(p.tensor, name) == 0) {
        if (p.row >= rows)
            return vt_error_set(err, VT_EINPUT, "VT_ENGINE_PLANT: %s: row %lld: expected < %lld rows",
                                name, (long long)p.row, (long long)rows);
        out->plant_row = p.row;
        out->plant_scale = p.scale;
    }
    return VT_OK;
}

int vt_load_embeddings(const vt_gguf *g, int64_t n_embd, int32_t *n_vocab, vt_mat *embd,
                       vt_mat *output, const float **output_norm, int *tied, vt_error *err)
{
    const vt_gguf_tensor *te = vt_gguf_find_tensor(g, "token_embd.weight");
    if (!te)
        return vt_error_set(err, VT_EINPUT, "%s: tensor token_embd.weight: missing",
                            vt_gguf_name(g));
    if (te->ne[1] <= 0 || te->ne[1] > INT32_MAX)
        return vt_error_set(err, VT_EINPUT, "%s: tensor token_embd.weight: %lld rows: expected "
                            "1 .. 2^31-1 tokens", vt_gguf_name(g), (long long)te->ne[1]);
    *n_vocab = (int32_t)te->ne[1];
    int rc = vt_load_matrix(g, "token_embd.weight", n_embd, *n_vocab, embd, err);
    if (rc)
        return rc;
    if (!(*output_norm = vt_load_vector(g, "output_norm.weight", n_embd, err)))
        return err->code;
    *tied = vt_gguf_find_tensor(g, "output.weight") == NULL;
    if (*tied) {
        *output = *embd;
        return VT_OK;
    }
    return vt_load_matrix(g, "output.weight", n_embd, *n_vocab, output, err);
}

/* ======================================================================
 * Element-wise pieces
 * ====================================================================== */

void vt_rmsnorm(float *out, const float *x, const float *w, int64_t n, float eps)
{
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++)
        sum += (double)(x[i] * x[i]);
    const float mean = (float)(sum / (double)n);
    const float scale = 1.0f / sqrtf(mean + eps);
    if (w) {
        for (int64_t i = 0; i < n; i++)
            out[i] = x[i] * scale * w[i];
    } else {
        for (int64_t i = 0; i < n; i++)
            out[i] = x[i] * scale;
    }
}

void vt_rope_angles(float *cs, int32_t pos, int64_t d, float base)
{
    const float theta_scale = powf(base, -2.0f / (float)d);
    float theta = (float)pos;
    for (int64_t i = 0; i < d / 2; i++) {
        cs[2 * i] = cosf(theta);
        cs[2 * i + 1] = sinf(theta);
        theta *= theta_scale;
    }
}

void vt_rope_neox(float *x, const float *cs, int64_t d)
{
    const int64_t half = d / 2;
    for (int64_t i = 0; i < half; i++) {
        const float c = cs[2 * i], s = cs[2 * i + 1];
        const float x0 = x[i], x1 = x[i + half];
        /* ggml's build contracts these: x0 c - (x1 s) and x0 s + (x1 c), the
         * product in brackets rounded, the rest one fused operation. */
        x[i] = fmaf(x0, c, -(x1 * s));
        x[i + half] = fmaf(x0, s, x1 * c);
    }
}

/* ======================================================================
 * Blocks both architectures share
 * ====================================================================== */

void vt_embed(const vt_mat *embd, const int32_t *tokens, int64_t n_tok, int64_t *ids, float *x)
{
    for (int64_t t = 0; t < n_tok; t++)
        ids[t] = tokens[t];
    vt_error ignored; /* ids were checked by the caller: the gather cannot fail */
    vt_codec_gather_rows(embd->codec, embd->data, embd->rows, embd->cols, ids, n_tok,
                         VT_DTYPE_F32, x, &ignored);
}

void vt_rmsnorm_rows(float *out, const float *x, const float *w, int64_t n_rows, int64_t n,
                     float eps)
{
    for (int64_t t = 0; t < n_rows; t++)
        vt_rmsnorm(out + t * n, x + t * n, w, n, eps);
}

void vt_add(float *x, const float *y, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        x[i] += y[i];
}

void vt_ffn_block(vt_cpu *c, const vt_ffn *f, float *x, int64_t n_tok, float eps, float *xn,
                  float *g, float *u, float *proj)
{
    const int64_t E = f->gate->cols, F = f->gate->rows;
    vt_rmsnorm_rows(xn, x, f->norm, n_tok, E, eps);
    const vt_mat *ws[2] = { f->gate, f->up };
    float *ys[2] = { g, u };
    const int64_t ld[2] = { F, F };
    vt_matmul(c, xn, n_tok, 2, ws, ys, ld);
    for (int64_t t = 0; t < n_tok; t++)
        c->k.swiglu(g + t * F, u + t * F, F);
    vt_matmul1(c, f->down, g, n_tok, proj, E);
    vt_add(x, proj, n_tok * E);
}

void vt_output_head(vt_cpu *c, const float *x, int64_t out0, int64_t n_out, const float *norm,
                    const vt_mat *output, float eps, float *xn, float *logits)
{
    const int64_t E = output->cols;
    if (n_out <= 0)
        return; /* a prefill batch before the last: no logits wanted */
    vt_rmsnorm_rows(xn, x + out0 * E, norm, n_out, E, eps);
    vt_matmul1(c, output, xn, n_out, logits, output->rows);
}

int vt_alloc_rows(float **const *bufs, const size_t *widths, size_t n, size_t rows)
{
    int ok = 1;
    for (size_t i = 0; i < n; i++) {
        size_t count;
        *bufs[i] = __builtin_mul_overflow(rows, widths[i], &count) ? NULL
                                                                    : vt_alloc_aligned(count, 4);
        ok = ok && *bufs[i];
    }
    return ok;
}

/* ======================================================================
 * KV cache
 * ====================================================================== */

int vt_kv_alloc(vt_kv *kv, int32_t n_layer, int32_t n_ctx, int64_t kv_dim, vt_cache_dtype dtype,
                const char *file, vt_error *err)
{
    kv->dtype = dtype;
    kv->elem = dtype == VT_CACHE_F32 ? 4 : dtype == VT_CACHE_BF16 ? 2 : 1;
    kv->n_layer = n_layer;
    kv->n_ctx = n_ctx;
    kv->kv_dim = kv_dim;
    size_t count;
    if (__builtin_mul_overflow((size_t)n_layer, (size_t)n_ctx, &count) ||
        __builtin_mul_overflow(count, (size_t)kv_dim, &count))
        count = SIZE_MAX;
    kv->k = vt_alloc_aligned(count, kv->elem);
    kv->v = vt_alloc_aligned(count, kv->elem);
    if (!kv->k || !kv->v)
        return vt_error_set(err, VT_EINPUT,
                            "%s: out of memory for n_ctx %d (KV cache %s: %zu x 2 elements of %zu "
                            "bytes)", file, n_ctx, vt_cache_dtype_name(dtype), count, kv->elem);
    for (int c = 0; c < 256; c++)
        kv->fp8_table[c] = vt_fp8_e4m3_to_f32((uint8_t)c);
    return VT_OK;
}

void vt_kv_free(vt_kv *kv)
{
    free(kv->k);
    free(kv->v);
}

static size_t cache_index(const vt_kv *kv, int32_t l, int32_t pos)
{
    return ((size_t)l * (size_t)kv->n_ctx + (size_t)pos) * (size_t)kv->kv_dim;
}

static void cache_store(const vt_kv *kv, void *cache, size_t at, const float *src, int64_t n)
{
    switch (kv->dtype) {
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
static const float *cache_load(const vt_kv *kv, const void *cache, size_t at, int64_t n, float *buf)
{
    switch (kv->dtype) {
    case VT_CACHE_BF16: {
        const uint16_t *s = (const uint16_t *)cache + at;
        for (int64_t i = 0; i < n; i++)
            buf[i] = vt_bf16_to_f32(s[i]);
        return buf;
    }
    case VT_CACHE_FP8_E4M3: {
        const uint8_t *s = (const uint8_t *)cache + at;
        for (int64_t i = 0; i < n; i++)
            buf[i] = kv->fp8_table[s[i]];
        return buf;
    }
    default: return (const float *)cache + at;
    }
}

void vt_kv_store(vt_kv *kv, int32_t layer, int32_t pos, const float *k, const float *v)
{
    const size_t at = cache_index(kv, layer, pos);
    cache_store(kv, kv->k, at, k, kv->kv_dim);
    cache_store(kv, kv->v, at, v, kv->kv_dim);
}

/* ======================================================================
 * Attention: one (token, head) pair is one unit of work; threads take
 * contiguous ranges of units.
 * ====================================================================== */

typedef struct att_job {
    vt_cpu *c;
    const vt_attention_args *a;
} att_job;

static void attention_worker(void *ctx, int ith, int nth)
{
    const att_job *job = ctx;
    const vt_cpu *c = job->c;
    const vt_attention_args *a = job->a;
    const vt_kv *kv = a->kv;
    const int64_t hd = a->head_dim;
    const int32_t group = a->n_head / a->n_head_kv;
    const float scale = 1.0f / sqrtf((float)hd);
    float *scratch = vt_cpu_scratch(c, ith);
    float *scores = scratch + vt_round_up(4 * (size_t)c->max_in, 16);
    float *kbuf = scores + vt_round_up((size_t)c->n_ctx, 16);
    float *vbuf = kbuf + 4 * vt_round_up((size_t)hd, 16);
    const int64_t ldk_buf = (int64_t)vt_round_up((size_t)hd, 16);
    float *acc = vbuf + ldk_buf; /* 64 rows of ldk_buf: the partial sums of V p */

    const int64_t units = a->n_tok * a->n_head;
    const int64_t u0 = units * ith / nth, u1 = units * (ith + 1) / nth;
    for (int64_t u = u0; u < u1; u++) {
        const int64_t t = u / a->n_head;
        const int32_t h = (int32_t)(u % a->n_head), kvh = h / group;
        const float *q = a->q + t * a->ldq + h * hd;
        const int32_t n_keys = a->pos0 + (int32_t)t + 1;
        const size_t head_off = (size_t)kvh * (size_t)hd;

        /* As llama.cpp's attention without flash attention computes one
         * token: scores = q.k by ggml_vec_dot_f32 (dot4: four keys, each as
         * dot), times scale; softmax over the cache row as
         * ggml_vec_soft_max_f32 (exp_sum), then one multiply by 1/sum. */
        int32_t j = 0;
        for (; j + 4 <= n_keys; j += 4) {
            const size_t at = cache_index(kv, a->layer, j) + head_off;
            const float *k;
            int64_t ldk;
            if (kv->dtype == VT_CACHE_F32) {
                k = (const float *)kv->k + at;
                ldk = kv->kv_dim;
            } else {
                for (int r = 0; r < 4; r++)
                    cache_load(kv, kv->k, at + (size_t)r * (size_t)kv->kv_dim, hd,
                               kbuf + r * ldk_buf);
                k = kbuf;
                ldk = ldk_buf;
            }
            c->k.dot4(k, ldk, q, hd, scores + j);
        }
        for (; j < n_keys; j++) {
            const size_t at = cache_index(kv, a->layer, j) + head_off;
            scores[j] = c->k.dot(cache_load(kv, kv->k, at, hd, kbuf), q, hd);
        }
        float max = -INFINITY;
        for (j = 0; j < n_keys; j++) {
            scores[j] *= scale;
            max = fmaxf(max, scores[j]);
        }
        const float inv = (float)(1.0 / c->k.exp_sum(scores, n_keys, max));

        /* out = V p: for each output, the ggml_vec_dot_f32 of its V column
         * and p over the cache row (llama.cpp's n_kv, a multiple of 64 here;
         * the masked positions add exact zeros). Accumulator row j mod 64
         * holds lane j mod 16 of partial sum (j mod 64) / 16, updated in
         * position order; then the same reduction as dot(). */
        float *out = a->out + t * a->ldo + h * hd;
        memset(acc, 0, 64 * (size_t)ldk_buf * sizeof *acc);
        for (j = 0; j < n_keys; j++) {
            const size_t at = cache_index(kv, a->layer, j) + head_off;
            c->k.fmadd(acc + (size_t)(j & 63) * (size_t)ldk_buf, cache_load(kv, kv->v, at, hd, vbuf),
                       scores[j] * inv, hd);
        }
        for (int64_t d = 0; d < hd; d++) {
            float l[16];
            for (int k = 0; k < 16; k++) {
                const float *col = acc + (size_t)d + (size_t)k * (size_t)ldk_buf;
                const size_t r16 = 16 * (size_t)ldk_buf;
                l[k] = (col[0] + col[2 * r16]) + (col[r16] + col[3 * r16]);
            }
            out[d] = tree16(l);
        }
    }
}

void vt_attention(vt_cpu *c, const vt_attention_args *a)
{
    att_job job = { c, a };
    vt_pool_run(&c->pool, attention_worker, &job);
}

/* ======================================================================
 * Evaluation
 * ====================================================================== */

int vt_eval_check(const char *file, const int32_t *tokens, int32_t n, const float *logits,
                  int32_t n_past, int32_t n_ctx, int32_t n_vocab, vt_error *err)
{
    if (n <= 0 || !tokens || !logits)
        return vt_error_set(err, VT_EINPUT, "%s: eval: expected at least one token and a logits "
                            "buffer (n = %d)", file, (int)n);
    if ((int64_t)n_past + n > n_ctx)
        return vt_error_set(err, VT_EINPUT,
                            "%s: eval: %d tokens after %d exceed the context capacity n_ctx = %d",
                            file, (int)n, (int)n_past, (int)n_ctx);
    for (int32_t i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= n_vocab)
            return vt_error_set(err, VT_EINPUT,
                                "%s: eval: token %d at position %d: expected 0 <= id < %d", file,
                                (int)tokens[i], (int)i, (int)n_vocab);
    return VT_OK;
}

void vt_eval_batches(void *model, vt_forward_fn forward, const int32_t *tokens, int32_t n,
                     int32_t step, int all_logits, int32_t n_vocab, float *logits)
{
    for (int32_t i0 = 0; i0 < n; i0 += step) {
        const int32_t nt = n - i0 < step ? n - i0 : step;
        const int last = i0 + nt == n;
        if (all_logits)
            forward(model, tokens + i0, nt, 0, nt, logits + (size_t)i0 * (size_t)n_vocab);
        else
            forward(model, tokens + i0, nt, last ? nt - 1 : 0, last ? 1 : 0, logits);
    }
}
