/* Dot kernels (kernels.h): the F32 and BF16 dot products in ggml's
 * summation order on every ISA, ggml's element-wise arithmetic around the
 * products, and the kernel set chosen at run time. */
#include "kernels_impl.h"

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

/* The tail of ggml_vec_dot_f32 after its tree, as gcc compiled it: whole
 * 16s and then one 8 as separate products added in order, the last few
 * fused. */
static inline float vec_f32_tail(float sum, const float *a, const float *b, int64_t np, int64_t n)
{
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

/* The end of ggml_vec_dot_f32: four accumulators to one, the tree, the tail. */
static inline float vec_f32_finish(const float s[4][16], const float *a, const float *b,
                                   int64_t np, int64_t n)
{
    float l[16];
    for (int k = 0; k < 16; k++)
        l[k] = (s[0][k] + s[2][k]) + (s[1][k] + s[3][k]);
    return vec_f32_tail(tree16(l), a, b, np, n);
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

/* tree16 of four registers at once, the same pairs added (lanes k and
 * k + 8, k and k + 4, 0 and 2 with 1 and 3, then 0 and 1) across the
 * registers' halves instead of one register's lanes at a time: sum j in
 * out[j]. */
__attribute__((target("avx512f"))) static inline void tree16x4_avx512(const __m512 a[4], float out[4])
{
    const __m512 b0 = _mm512_add_ps(_mm512_shuffle_f32x4(a[0], a[1], _MM_SHUFFLE(1, 0, 1, 0)),
                                    _mm512_shuffle_f32x4(a[0], a[1], _MM_SHUFFLE(3, 2, 3, 2)));
    const __m512 b1 = _mm512_add_ps(_mm512_shuffle_f32x4(a[2], a[3], _MM_SHUFFLE(1, 0, 1, 0)),
                                    _mm512_shuffle_f32x4(a[2], a[3], _MM_SHUFFLE(3, 2, 3, 2)));
    /* 128-bit block j: register j's lanes k + (k + 8), k < 8, in two halves */
    const __m512 c = _mm512_add_ps(_mm512_shuffle_f32x4(b0, b1, _MM_SHUFFLE(2, 0, 2, 0)),
                                   _mm512_shuffle_f32x4(b0, b1, _MM_SHUFFLE(3, 1, 3, 1)));
    const __m512 d = _mm512_add_ps(_mm512_shuffle_ps(c, c, _MM_SHUFFLE(1, 0, 1, 0)),
                                   _mm512_shuffle_ps(c, c, _MM_SHUFFLE(3, 2, 3, 2)));
    const __m512 e = _mm512_add_ps(d, _mm512_shuffle_ps(d, d, _MM_SHUFFLE(3, 2, 0, 1)));
    float l[16];
    _mm512_storeu_ps(l, e);
    for (int j = 0; j < 4; j++)
        out[j] = l[4 * j];
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
    __m512 l[4];
    for (int q = 0; q < 4; q++)
        l[q] = _mm512_add_ps(_mm512_add_ps(v[q][0], v[q][2]), _mm512_add_ps(v[q][1], v[q][3]));
    float sum[4];
    tree16x4_avx512(l, sum);
    for (int q = 0; q < 4; q++)
        out[q] = vec_f32_tail(sum[q], w + q * ldw, x, np, n);
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

/* pow2i and expf16_body: engine_math.h, shared with the GPU. */

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
        g[i] = swiglu_lane(g[i], u[i]);
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

/* NeoX RoPE over one head: pairs (i, i + d/2) rotated by cs[2i], cs[2i+1]. */
__attribute__((always_inline)) static inline void rope_neox_body(float *x, const float *cs, int64_t d)
{
    const int64_t half = d / 2;
    for (int64_t i = 0; i < half; i++)
        rope_neox_pair(&x[i], &x[i + half], cs[2 * i], cs[2 * i + 1]);
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
static void rope_neox_c(float *x, const float *cs, int64_t d) { rope_neox_body(x, cs, d); }
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
__attribute__((target("avx2,fma"))) static void rope_neox_fma(float *x, const float *cs, int64_t d)
{
    rope_neox_body(x, cs, d);
}
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

/* expf16_body on sixteen lanes: the same operations, vscalefps for j 2^n
 * (one rounding, as the scalar's exact steps then one rounding), the
 * scalar's early returns as masks. */
__attribute__((target("avx512f"))) static inline __m512 expf16_avx512(__m512 x)
{
    const __m512 shift = _mm512_set1_ps(0x1.8p23f);
    const __m512 n = _mm512_sub_ps(_mm512_fmadd_ps(x, _mm512_set1_ps(0x1.715476p+0f), shift), shift);
    const __m512 b = _mm512_fnmadd_ps(n, _mm512_set1_ps(0x1.7f7d1cp-20f),
                                      _mm512_fnmadd_ps(n, _mm512_set1_ps(0x1.62e4p-1f), x));
    const __m512 u = _mm512_mul_ps(b, b);
    const __m512 j = _mm512_fmadd_ps(
        _mm512_fmadd_ps(_mm512_fmadd_ps(_mm512_set1_ps(0x1.0e4020p-7f), b, _mm512_set1_ps(0x1.573e2ep-5f)), u,
                        _mm512_fmadd_ps(_mm512_set1_ps(0x1.555e66p-3f), b, _mm512_set1_ps(0x1.fffdb6p-2f))),
        u, _mm512_fmadd_ps(_mm512_set1_ps(0x1.ffffecp-1f), b, _mm512_set1_ps(1.0f)));
    __m512 r = _mm512_scalef_ps(j, n);
    const __mmask16 big = _mm512_cmp_ps_mask(_mm512_abs_ps(n), _mm512_set1_ps(192.0f), _CMP_GT_OQ);
    const __mmask16 nonpos = _mm512_cmp_ps_mask(n, _mm512_setzero_ps(), _CMP_LE_OQ);
    r = _mm512_mask_blend_ps(big, r, _mm512_mask_blend_ps(nonpos, _mm512_set1_ps(INFINITY), _mm512_setzero_ps()));
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(n, n, _CMP_UNORD_Q), r, n);
}

/* Attention's values (vt_kernels.attend_values), sixteen outputs at a
 * time: the partial sum of row r (keys j = r mod 64, in key order, from
 * +0) is kept in a register over its keys instead of read and written in
 * memory for each key, sixteen rows side by side; the four groups of
 * sixteen meet in buf and are added as kernels_kv.c's attention_reduce
 * adds them (attend_reduce64). Columns past hd load as zeros and are not
 * stored. Two heads at a time share each load of the values: one pass
 * over them, which come from memory, instead of one a head (b06-Q4_K
 * after a 128-token prompt: the second head's pass was about 2.7 thousand
 * cycles a (token, KV head), the values then in L2). */
__attribute__((target("avx512f"))) static void attend_reduce64(const float *buf, __mmask16 m, float *out)
{
    __m512 l[16];
    for (int k = 0; k < 16; k++)
        l[k] = _mm512_add_ps(_mm512_add_ps(_mm512_loadu_ps(buf + 16 * k), _mm512_loadu_ps(buf + 16 * (k + 32))),
                             _mm512_add_ps(_mm512_loadu_ps(buf + 16 * (k + 16)), _mm512_loadu_ps(buf + 16 * (k + 48))));
    for (int k = 0; k < 8; k++)
        l[k] = _mm512_add_ps(l[k], l[k + 8]);
    for (int k = 0; k < 4; k++)
        l[k] = _mm512_add_ps(l[k], l[k + 4]);
    l[0] = _mm512_add_ps(l[0], l[2]);
    l[1] = _mm512_add_ps(l[1], l[3]);
    _mm512_mask_storeu_ps(out, m, _mm512_add_ps(l[0], l[1]));
}

/* One head (two = 0: p1 and out1 unused) or heads p0 and p1 (two = 1),
 * each group of sixteen rows in two halves of eight, so that both heads'
 * partial sums stay in registers (each row's chain over its keys is the
 * same). Inlined with two a constant: two kernels, not a branch a key. */
__attribute__((target("avx512f"), always_inline)) static inline void
attend_values_heads(const float *v, int64_t ldv, const float *p0, const float *p1, int32_t n, int64_t hd, float *out0,
                    float *out1, const int two)
{
    float buf[2][64 * 16] __attribute__((aligned(64)));
    for (int64_t d0 = 0; d0 < hd; d0 += 16) {
        const __mmask16 m = hd - d0 >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (hd - d0)) - 1);
        for (int i = 0; i < 4; i++)
            for (int h = 0; h < 2; h++) {
                __m512 a[8], b[8];
                for (int k = 0; k < 8; k++)
                    a[k] = b[k] = _mm512_setzero_ps();
                for (int32_t j0 = 16 * i + 8 * h; j0 < n; j0 += 64) {
#pragma GCC unroll 8
                    for (int k = 0; k < 8; k++)
                        if (j0 + k < n) {
                            const __m512 x = _mm512_maskz_loadu_ps(m, v + (size_t)(j0 + k) * (size_t)ldv + d0);
                            a[k] = _mm512_fmadd_ps(x, _mm512_set1_ps(p0[j0 + k]), a[k]);
                            if (two)
                                b[k] = _mm512_fmadd_ps(x, _mm512_set1_ps(p1[j0 + k]), b[k]);
                        }
                }
                for (int k = 0; k < 8; k++) {
                    _mm512_storeu_ps(buf[0] + 16 * (16 * i + 8 * h + k), a[k]);
                    if (two)
                        _mm512_storeu_ps(buf[1] + 16 * (16 * i + 8 * h + k), b[k]);
                }
            }
        attend_reduce64(buf[0], m, out0 + d0);
        if (two)
            attend_reduce64(buf[1], m, out1 + d0);
    }
}

__attribute__((target("avx512f"))) static void attend_values_avx512(const float *v, int64_t ldv, const float *p,
                                                                   int64_t ldp, int32_t nh, int32_t n, int64_t hd,
                                                                   float *out, int64_t ldo)
{
    int32_t g = 0;
    for (; g + 2 <= nh; g += 2)
        attend_values_heads(v, ldv, p + g * ldp, p + (g + 1) * ldp, n, hd, out + g * ldo, out + (g + 1) * ldo, 1);
    if (g < nh)
        attend_values_heads(v, ldv, p + g * ldp, NULL, n, hd, out + g * ldo, NULL, 0);
}

/* exp_sum_body, swiglu_body and silu_body sixteen lanes at a time (gcc
 * leaves their scalar bodies scalar: expf16_body branches). */
__attribute__((target("avx512f"))) static double exp_sum_avx512(float *x, int64_t n, float max)
{
    double sum = 0.0;
    const __m512 mv = _mm512_set1_ps(max);
    for (int64_t j0 = 0; j0 < n; j0 += 16) {
        const __mmask16 m = n - j0 >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - j0)) - 1);
        const __m512 e = _mm512_maskz_mov_ps(m, expf16_avx512(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + j0), mv)));
        _mm512_mask_storeu_ps(x + j0, m, e);
        float l[16];
        _mm512_storeu_ps(l, e);
        sum += (double)tree16(l);
    }
    return sum;
}

__attribute__((target("avx512f"))) static void swiglu_avx512(float *g, const float *u, int64_t n)
{
    const int64_t n16 = n & ~(int64_t)15;
    for (int64_t i = 0; i < n16; i += 16) {
        const __m512 gv = _mm512_loadu_ps(g + i);
        const __m512 e = expf16_avx512(_mm512_sub_ps(_mm512_setzero_ps(), gv));
        _mm512_storeu_ps(g + i, _mm512_mul_ps(_mm512_div_ps(gv, _mm512_add_ps(_mm512_set1_ps(1.0f), e)),
                                              _mm512_loadu_ps(u + i)));
    }
    swiglu_body(g + n16, u + n16, n - n16); /* the rest: the C library's expf */
}

__attribute__((target("avx512f"))) static void silu_avx512(float *x, int64_t n)
{
    const int64_t n16 = n & ~(int64_t)15;
    for (int64_t i = 0; i < n16; i += 16) {
        const __m512 xv = _mm512_loadu_ps(x + i);
        const __m512 e = expf16_avx512(_mm512_sub_ps(_mm512_setzero_ps(), xv));
        _mm512_storeu_ps(x + i, _mm512_div_ps(xv, _mm512_add_ps(_mm512_set1_ps(1.0f), e)));
    }
    silu_body(x + n16, n - n16);
}
#endif

#ifdef VT_X86
/* BF16 rows against F32 (BF16-rounded) tokens, dot_bf16_body's arithmetic
 * for every output (its two 16-lane fused accumulators over steps of 32,
 * the trees, the double sum), four rows by two tokens at a time, each row
 * converted from BF16 once per tile rather than decoded to a buffer per
 * row: R rows of stride rb from w, y[t * ldy + r * ys]. */
__attribute__((target("avx512f"))) static inline __attribute__((always_inline)) void
bf16_tile(const uint8_t *w, size_t rb, int R, const float *x, int64_t n, int T, float *y, int64_t ldy, int64_t ys)
{
    __m512 c1[4][2], c2[4][2];
    for (int r = 0; r < R; r++)
        for (int t = 0; t < T; t++)
            c1[r][t] = c2[r][t] = _mm512_setzero_ps();
    const int64_t np = n & ~(int64_t)31;
    for (int64_t i = 0; i < np; i += 32)
        for (int r = 0; r < R; r++) {
            const uint8_t *p = w + (size_t)r * rb + (size_t)i * 2;
            const __m512 w0 = _mm512_castsi512_ps(_mm512_slli_epi32(
                _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(const void *)p)), 16));
            const __m512 w1 = _mm512_castsi512_ps(_mm512_slli_epi32(
                _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(const void *)(p + 32))), 16));
            for (int t = 0; t < T; t++) {
                c1[r][t] = _mm512_fmadd_ps(w0, _mm512_loadu_ps(x + t * n + i), c1[r][t]);
                c2[r][t] = _mm512_fmadd_ps(w1, _mm512_loadu_ps(x + t * n + i + 16), c2[r][t]);
            }
        }
    for (int r = 0; r < R; r++)
        for (int t = 0; t < T; t++) {
            float l1[16], l2[16];
            _mm512_storeu_ps(l1, c1[r][t]);
            _mm512_storeu_ps(l2, c2[r][t]);
            double sum = 0.0 + (double)tree16(l1);
            sum = (double)tree16(l2) + sum;
            const uint8_t *p = w + (size_t)r * rb;
            for (int64_t i = np; i < n; i++) {
                const float a = vt_bf16_to_f32((uint16_t)(p[2 * i] | p[2 * i + 1] << 8));
                sum += (double)(a * x[t * n + i]);
            }
            y[t * ldy + r * ys] = (float)sum;
        }
}

__attribute__((target("avx512f"))) static void matmul_bf16_avx512(const vt_mat *w, int64_t r0, int64_t r1,
                                                                  const float *x, int64_t n_tok, float *y,
                                                                  int64_t ldy)
{
    const int64_t n = w->cols;
    const size_t rb = w->row_bytes;
    if (n_tok == 1) {
        /* A decode step: rows o and o + h side by side, two streams from
         * memory (on Zen 5, 2 threads, alternated short runs: the decode
         * ratio to llama.cpp about 1.07 against 0.88..1.08 one row at a
         * time, noisy; software prefetch made either slower); an odd last
         * row alone. */
        const int64_t h = (r1 - r0) / 2;
        for (int64_t o = r0; o < r0 + h; o++)
            bf16_tile(w->data + (size_t)o * rb, (size_t)h * rb, 2, x, n, 1, y + o, 0, h);
        if ((r1 - r0) % 2)
            bf16_tile(w->data + (size_t)(r1 - 1) * rb, rb, 1, x, n, 1, y + r1 - 1, 0, 1);
        return;
    }
    for (int64_t t0 = 0; t0 < n_tok; t0 += 32) {
        const int64_t t1 = t0 + 32 < n_tok ? t0 + 32 : n_tok;
        for (int64_t o = r0; o < r1;) {
            const int R = r1 - o >= 4 ? 4 : 1;
            const uint8_t *wr = w->data + (size_t)o * rb;
            int64_t t = t0;
            for (; t + 2 <= t1; t += 2) {
                if (R == 4)
                    bf16_tile(wr, rb, 4, x + t * n, n, 2, y + t * ldy + o, ldy, 1);
                else
                    bf16_tile(wr, rb, 1, x + t * n, n, 2, y + t * ldy + o, ldy, 1);
            }
            if (t < t1) {
                if (R == 4)
                    bf16_tile(wr, rb, 4, x + t * n, n, 1, y + t * ldy + o, ldy, 1);
                else
                    bf16_tile(wr, rb, 1, x + t * n, n, 1, y + t * ldy + o, ldy, 1);
            }
            o += R;
        }
    }
}
#endif

#ifdef VT_X86
#include <cpuid.h>
/* CPUID leaf 1, ECX bit 29: clang 14's __builtin_cpu_supports does not know
 * "f16c", so it is asked of the CPU directly. */
static int cpu_has_f16c(void)
{
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C) != 0;
}
#endif

/* The widest kernels the CPU runs, or the ones $VT_ENGINE_ISA names ("c",
 * "sse2", "avx2", "avx512f", "avx512vnni"; a diagnostic override, honoured
 * only if the CPU has it): results are identical either way, which is how
 * that is tested. avx512vnni is avx512f plus the integer matrix kernels of
 * kernels_intdot.c that need AVX-512 BW, VL, DQ and VNNI (and F16C). */
vt_kernels vt_kernels_pick(void)
{
    /* One row per kernel set. Without FMA hardware the fused products are
     * the C library's fmaf: the same bits, slowly. */
    static const vt_kernels c = { .isa = "c", .dot = dot_c, .dot4 = dot4_c, .tile = tile_c,
                                  .dot_bf16 = dot_bf16_c, .axpy = axpy_c, .fmadd = fmadd_c,
                                  .exp_sum = exp_sum_c, .swiglu = swiglu_c, .silu = silu_c,
                                  .rope_neox = rope_neox_c };
    const char *want = getenv("VT_ENGINE_ISA");
    if (want && strcmp(want, "c") == 0)
        return c;
#ifdef VT_X86
    static const vt_kernels sse2 = { .isa = "sse2", .dot = dot_c, .dot4 = dot4_c, .tile = tile_c,
                                     .dot_bf16 = dot_bf16_c, .axpy = axpy_sse2, .fmadd = fmadd_c,
                                     .exp_sum = exp_sum_c, .swiglu = swiglu_c, .silu = silu_c,
                                     .rope_neox = rope_neox_c };
    static const vt_kernels avx2 = { .isa = "avx2", .dot = dot_c, .dot4 = dot4_c, .tile = tile_c,
                                     .dot_bf16 = dot_bf16_c, .axpy = axpy_avx2, .fmadd = fmadd_c,
                                     .exp_sum = exp_sum_c, .swiglu = swiglu_c, .silu = silu_c,
                                     .rope_neox = rope_neox_c };
    static const vt_kernels avx2_fma = { .isa = "avx2", .dot = dot_fma, .dot4 = dot4_fma, .tile = tile_fma,
                                         .dot_bf16 = dot_bf16_fma, .axpy = axpy_avx2, .fmadd = fmadd_fma,
                                         .exp_sum = exp_sum_fma, .swiglu = swiglu_fma, .silu = silu_fma,
                                         .rope_neox = rope_neox_fma, .fma = 1 };
    static const vt_kernels avx512 = { .isa = "avx512f", .dot = dot_avx512, .dot4 = dot4_avx512,
                                       .tile = tile_avx512, .dot_bf16 = dot_bf16_fma, .axpy = axpy_avx512,
                                       .fmadd = fmadd_avx512, .exp_sum = exp_sum_avx512,
                                       .swiglu = swiglu_avx512, .silu = silu_avx512, .rope_neox = rope_neox_fma,
                                       .attend_values = attend_values_avx512, .fma = 1,
                                       .bf16_rows = matmul_bf16_avx512 };
    vt_kernels avx512vnni = avx512; /* and the integer matrix kernels */
    avx512vnni.isa = "avx512vnni";
    avx512vnni.vnni = 1;
    __builtin_cpu_init();
    const int has512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma");
    const int has_vnni = has512 && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
                         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vnni") && cpu_has_f16c();
    const int has2 = __builtin_cpu_supports("avx2");
    const vt_kernels *k2 = has2 && __builtin_cpu_supports("fma") ? &avx2_fma : &avx2;
    if (want && strcmp(want, "sse2") == 0)
        return sse2;
    if (want && strcmp(want, "avx2") == 0 && has2)
        return *k2;
    if (want && strcmp(want, "avx512f") == 0 && has512)
        return avx512;
    if (has_vnni && !(want && strcmp(want, "avx2") == 0))
        return avx512vnni;
    if (has512 && !(want && strcmp(want, "avx2") == 0))
        return avx512;
    return has2 ? *k2 : sse2;
#else
    return c;
#endif
}
