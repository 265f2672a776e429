/* Activation rounding and integer block products (kernels.h): each weight
 * type whose ggml kernel the engine follows meets its activation quantized
 * as ggml's x86 kernel quantizes it, one table row per type. */
#include "kernels_impl.h"
#include "codec_intdot.h" /* the bodies shared with the GPU */
#include "codec_iq_tables.h"

/* ======================================================================
 * Activation rounding for VT_MATMUL_Q8: the activation row is passed through
 * the weight type's vec_dot_type (ggml-cpu.c type_traits_cpu) and back to
 * F32, so an F32 product then sees the values llama.cpp's integer kernels
 * see. Q8_0 and Q8_1 round as the x86 build of ggml's CPU backend does (its
 * oracle here); Q8_K as quantize_row_q8_K_ref, which every build uses.
 * ====================================================================== */

vt_act_type vt_act_type_of(int type)
{
    const vt_codec *c = vt_codec_by_type(type);
    return c ? c->act : VT_ACT_F32; /* the codec table holds it */
}

/* Q8_0: blocks of 32; d = amax/127 kept as F16, q = x * (127/amax) rounded
 * to nearest, ties to even: what the x86 build of ggml's CPU backend does
 * (quantize_row_q8_0's AVX path), which is the oracle here. Its reference
 * quantizer instead rounds x / d half away from zero; the two part exactly
 * on values that land on .5 after scaling (vt op check's adversarial rows).
 * Q8_1 quantizes the same values (it also stores a block sum, which only
 * matters to ggml's integer kernel). */
static uint16_t q8_0_block(const float *x, int8_t *q) { return vt_q8_0_quant_block(x, q); }

static void round_q8_0(const float *x, float *y, int64_t n)
{
    int8_t q[32];
    for (int64_t b = 0; b < n; b += 32) {
        const float dh = vt_f16_to_f32(q8_0_block(x + b, q));
        for (int j = 0; j < 32; j++)
            y[b + j] = dh * (float)q[j];
    }
}


/* Q8_K: blocks of 256; the scale is set by the element of largest magnitude
 * (keeping its sign: iscale = -127/max), d = 1/iscale stays F32 (0 for an
 * all-zero block). Returns d. */
static float q8_k_block(const float *x, int8_t *q) { return vt_q8_k_quant_block(x, q); }

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

/* The bodies live in codec_intdot.h (shared with the GPU); each is named
 * here once for the INT_DOT pair below. The codebook types read the host's
 * tables through vt_iq_host_grids. */
#define BODY(name, expr)                                                                              \
    static inline __attribute__((always_inline)) float name##_body(const uint8_t *w, const uint8_t *x, \
                                                                   int64_t nb)                     \
    {                                                                                                 \
        return expr;                                                                                  \
    }
#define G vt_iq_host_grids()
BODY(dot_q8_0, vt_dot_q8_0(w, x, nb))
BODY(dot_q6_k, vt_dot_q6_k(w, x, nb))
BODY(dot_iq4_xs, vt_dot_iq4_xs(w, x, nb, G))
BODY(dot_q4_k_r8, vt_dot_q4_k_r8(w, x, nb))
BODY(dot_q4_0, vt_dot_q4_0(w, x, nb))
BODY(dot_q4_0_r8, vt_dot_nib_r8(w, x, nb, VT_NIB_Q4_0, G))
BODY(dot_iq4_nl_r8, vt_dot_nib_r8(w, x, nb, VT_NIB_IQ4_NL, G))
BODY(dot_q5_0, vt_dot_q5_0(w, x, nb))
BODY(dot_q4_1, vt_dot_x_1(w, x, nb, 0))
BODY(dot_q5_1, vt_dot_x_1(w, x, nb, 1))
BODY(dot_mxfp4_r8, vt_dot_nib_r8(w, x, nb, VT_NIB_MXFP4, G))
BODY(dot_q3_k, vt_dot_q3_k(w, x, nb))
BODY(dot_q4_k, vt_dot_k45(w, x, nb, 0))
BODY(dot_q5_k, vt_dot_k45(w, x, nb, 1))
BODY(dot_iq4_nl, vt_dot_nib_pair(w, x, nb, VT_NIB_IQ4_NL, G))
BODY(dot_mxfp4, vt_dot_nib_pair(w, x, nb, VT_NIB_MXFP4, G))
BODY(dot_q2_k, vt_dot_q2_k(w, x, nb))
BODY(dot_q2_k_r8, vt_dot_q2_k_r8(w, x, nb))
BODY(dot_tq2_0, vt_dot_tq2_0(w, x, nb))
BODY(dot_iq2_xxs, vt_dot_iq_grid(w, x, nb, VT_TYPE_IQ2_XXS, G))
BODY(dot_iq2_xs, vt_dot_iq_grid(w, x, nb, VT_TYPE_IQ2_XS, G))
BODY(dot_iq2_s, vt_dot_iq_grid(w, x, nb, VT_TYPE_IQ2_S, G))
BODY(dot_iq3_xxs, vt_dot_iq_grid(w, x, nb, VT_TYPE_IQ3_XXS, G))
BODY(dot_iq3_s, vt_dot_iq_grid(w, x, nb, VT_TYPE_IQ3_S, G))
BODY(dot_iq1_s, vt_dot_iq1_s(w, x, nb, G))
BODY(dot_iq1_m, vt_dot_iq1_m(w, x, nb, G))
BODY(dot_tq1_0, vt_dot_tq1_0(w, x, nb))
#undef G
#undef BODY

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
/* Q8_0's FMA slot is the hand-written AVX2 kernel below. */
static float dot_q8_0_c(const uint8_t *w, const uint8_t *x, int64_t nb) { return dot_q8_0_body(w, x, nb); }

#ifdef VT_X86
#include <immintrin.h>
/* Q8_0 x Q8_0 with AVX2, as ggml's x86 vec_dot_q8_0_q8_0 computes it: per
 * block the 32 products summed exactly in eight lanes of four
 * (maddubs on |w| and x signed by w, then madd: ggml's sign trick, which
 * equals the plain products for every activation vt quantizes, |q| <= 127),
 * each lane fused-multiply-added with the block's scale into its own
 * accumulator, and vt_hsum8 at the end: vt_dot_q8_0's arithmetic, the
 * order unchanged, in a quarter of the instructions. */
__attribute__((target("avx2,fma"))) static float dot_q8_0_avx2(const uint8_t *w, const uint8_t *x, int64_t nb)
{
    __m256 acc = _mm256_setzero_ps();
    const __m256i ones = _mm256_set1_epi16(1);
    for (int64_t b = 0; b < nb; b++, w += 34, x += 34) {
        const float d = vt_half_bits_to_f32(vt_rd16(w)) * vt_half_bits_to_f32(vt_rd16(x));
        const __m256i qw = _mm256_loadu_si256((const __m256i *)(const void *)(w + 2));
        const __m256i qx = _mm256_loadu_si256((const __m256i *)(const void *)(x + 2));
        const __m256i pairs = _mm256_maddubs_epi16(_mm256_sign_epi8(qw, qw), _mm256_sign_epi8(qx, qw));
        const __m256i quads = _mm256_madd_epi16(pairs, ones);
        acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(quads), acc);
    }
    float a[8];
    _mm256_storeu_ps(a, acc);
    return vt_hsum8(a);
}

/* Q4_0 x Q8_0 in the order of ggml's repacked (8-row interleaved) GEMV,
 * vt_dot_nib_r8 with Q4_0's values: per block the 32 products of
 * (nibble - 8) and the activation summed exactly to one integer, then one
 * fused multiply-add of it with d_w * d_x into a single accumulator. The
 * integer sum is the same however it is grouped, so the vector lanes
 * change nothing. */
__attribute__((target("avx2,fma"))) static float dot_q4_0_r8_avx2(const uint8_t *w, const uint8_t *x, int64_t nb)
{
    float acc = 0.0f;
    const __m256i ones = _mm256_set1_epi16(1), low4 = _mm256_set1_epi8(0x0f), eight = _mm256_set1_epi8(8);
    for (int64_t b = 0; b < nb; b++, w += 18, x += 34) {
        const float dw = vt_half_bits_to_f32(vt_rd16(w));
        const __m128i raw = _mm_loadu_si128((const __m128i *)(const void *)(w + 2));
        /* elements 0..15: the low nibbles, 16..31: the high ones */
        const __m256i codes = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(raw, 4), raw), low4);
        const __m256i v = _mm256_sub_epi8(codes, eight);
        const __m256i qx = _mm256_loadu_si256((const __m256i *)(const void *)(x + 2));
        const __m256i pairs = _mm256_maddubs_epi16(_mm256_sign_epi8(v, v), _mm256_sign_epi8(qx, v));
        const __m256i quads = _mm256_madd_epi16(pairs, ones);
        const __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(quads), _mm256_extracti128_si256(quads, 1));
        const __m128i s2 = _mm_add_epi32(s4, _mm_unpackhi_epi64(s4, s4));
        const int32_t sum = _mm_cvtsi128_si32(_mm_add_epi32(s2, _mm_shuffle_epi32(s2, 1)));
        acc = fmaf((float)sum, dw * vt_half_bits_to_f32(vt_rd16(x)), acc);
    }
    return acc;
}
#else
#define dot_q8_0_avx2 dot_q8_0_c
#define dot_q4_0_r8_avx2 dot_q4_0_r8_c
#endif
INT_DOT(dot_q6_k)
INT_DOT(dot_iq4_xs)
INT_DOT(dot_q4_k_r8)
INT_DOT(dot_q4_0)
/* Q4_0 in the repacked order: its FMA slot is the AVX2 kernel below. */
static float dot_q4_0_r8_c(const uint8_t *w, const uint8_t *x, int64_t nb) { return dot_q4_0_r8_body(w, x, nb); }
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
    vt_int_dot_fn plain[2]; /* the plain layout's order (portable, FMA build); NULL: none */
    vt_int_dot_fn r8[2];    /* the order of ggml's repacked layout, which llama.cpp gives a
                            tensor of this type whose rows are a multiple of 8 on an AVX2
                            CPU; NULL: ggml does not repack the type */
} int_kernel;

static const int_kernel int_kernels[VT_TYPE_COUNT] = {
    [VT_TYPE_Q8_0] = { VT_ACT_Q8_0, { dot_q8_0_c, dot_q8_0_avx2 }, { NULL, NULL } },
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
    [VT_TYPE_Q4_0] = { VT_ACT_Q8_0, { dot_q4_0_c, dot_q4_0_fma }, { dot_q4_0_r8_c, dot_q4_0_r8_avx2 } },
    [VT_TYPE_IQ4_NL] = { VT_ACT_Q8_0, { dot_iq4_nl_c, dot_iq4_nl_fma }, { dot_iq4_nl_r8_c, dot_iq4_nl_r8_fma } },
    [VT_TYPE_Q5_0] = { VT_ACT_Q8_0, { dot_q5_0_c, dot_q5_0_fma }, { NULL, NULL } },
    [VT_TYPE_Q4_1] = { VT_ACT_Q8_1, { dot_q4_1_c, dot_q4_1_fma }, { NULL, NULL } },
    [VT_TYPE_Q5_1] = { VT_ACT_Q8_1, { dot_q5_1_c, dot_q5_1_fma }, { NULL, NULL } },
    [VT_TYPE_MXFP4] = { VT_ACT_Q8_0, { dot_mxfp4_c, dot_mxfp4_fma }, { dot_mxfp4_r8_c, dot_mxfp4_r8_fma } },
};

/* The kernel pair w's products take, or NULL (the F32 product of the
 * rounded activation). */
const vt_int_dot_fn *vt_int_dot_of(const vt_cpu *c, const vt_mat *w, vt_act_type *act)
{
    const int t = w->codec->type;
    if (c->matmul != VT_MATMUL_Q8 || t < 0 || t >= VT_TYPE_COUNT)
        return NULL;
    const int_kernel *k = &int_kernels[t];
    const vt_int_dot_fn *f = vt_int_dot_r8(t, w->tensor_rows) ? k->r8 : k->plain;
    if (!f[0])
        return NULL;
    if (act)
        *act = k->act;
    return f;
}

/* Bytes of one token's activation in the block type act, n elements. */
size_t vt_act_block_row_bytes(vt_act_type act, int64_t n)
{
    return act == VT_ACT_Q8_0 ? (size_t)(n / 32) * 34 : act == VT_ACT_Q8_1 ? (size_t)(n / 32) * 36
                                                                         : (size_t)(n / 256) * 292;
}

void vt_act_quantize_row(vt_act_type act, const float *x, uint8_t *dst, int64_t n)
{
    if (act == VT_ACT_Q8_1) {
        for (int64_t b = 0; b < n / 32; b++)
            vt_q8_1_block_write(x + b * 32, dst + b * VT_Q8_1_BYTES);
    } else if (act == VT_ACT_Q8_0) {
        for (int64_t b = 0; b < n / 32; b++)
            vt_q8_0_block_write(x + b * 32, dst + b * VT_Q8_0_BYTES);
    } else {
        for (int64_t b = 0; b < n / 256; b++)
            vt_q8_k_block_write(x + b * 256, dst + b * VT_Q8_K_BYTES);
    }
}

/* ======================================================================
 * Matrix kernels (AVX-512 VNNI): Q8_0 weights against many tokens at once.
 * Each output keeps vt_dot_q8_0's arithmetic exactly (eight exact integer
 * lanes per block, acc[m] = fma(d_w * d_x, lane m, acc[m]) block after
 * block, vt_hsum8); only the work is interleaved: a tile of four weight
 * rows meets two tokens per 512-bit register (token 2p in the low half,
 * 2p + 1 in the high half), so each weight block is loaded once per tile
 * and each activation block once per four rows.
 *
 * The lanes come from VPDPBUSD, which multiplies unsigned by signed bytes:
 * the weight is offset to w + 128 and the accumulator starts at -128 times
 * the lane's sum of activation values, so the lane is sum w * x exactly
 * (|sum| < 2^17, no wrap). The activation is therefore laid out for the
 * kernel, once per token (vt_act_wide_*): tokens in pairs; per pair and
 * block, VT_WIDE_PAIR_BYTES: the two tokens' 32 int8 values, their eight
 * offset sums (int32), their d as F32 eight times (one load per register). An odd last token's partner is
 * zero and its outputs are dropped.
 * ====================================================================== */


enum { VT_WIDE_PAIR_BYTES = 64 + 64 + 8 + 8 };

size_t vt_act_wide_bytes(int64_t n_tok, int64_t n)
{
    return (size_t)((n_tok + 1) / 2) * (size_t)(n / 32) * VT_WIDE_PAIR_BYTES;
}

#ifdef VT_X86
#define VT_VNNI_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512dq,f16c,fma")))

/* One token's half of a wide pair block (vt_act_quantize_wide's layout)
 * from 32 floats: vt_q8_0_quant_block's values in AVX-512 (the same
 * maximum, exact in any order, a NaN element skipped as fmaxf skips it; the
 * same products x * id rounded to nearest even; d through F16), and the
 * eight offset sums and the block sum from the same integers in registers
 * (integer sums: any order). */
VT_VNNI_TARGET static void q8_0_wide_half_avx512(const float *x, uint8_t *blk, int s)
{
    const __m512 x0 = _mm512_loadu_ps(x), x1 = _mm512_loadu_ps(x + 16);
    const __m512 m = _mm512_max_ps(_mm512_abs_ps(x1), _mm512_max_ps(_mm512_abs_ps(x0), _mm512_setzero_ps()));
    const float amax = _mm512_reduce_max_ps(m);
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    const __m512 v = _mm512_set1_ps(id);
    const __m512i r0 = _mm512_cvtps_epi32(_mm512_mul_ps(x0, v)), r1 = _mm512_cvtps_epi32(_mm512_mul_ps(x1, v));
    _mm_storeu_si128((__m128i *)(void *)(blk + 32 * s), _mm512_cvtepi32_epi8(r0));
    _mm_storeu_si128((__m128i *)(void *)(blk + 32 * s + 16), _mm512_cvtepi32_epi8(r1));
    /* each 128-bit lane holds four consecutive values: its sum in every slot */
    __m512i t0 = _mm512_add_epi32(r0, _mm512_shuffle_epi32(r0, _MM_PERM_BADC));
    __m512i t1 = _mm512_add_epi32(r1, _mm512_shuffle_epi32(r1, _MM_PERM_BADC));
    t0 = _mm512_add_epi32(t0, _mm512_shuffle_epi32(t0, _MM_PERM_CDAB));
    t1 = _mm512_add_epi32(t1, _mm512_shuffle_epi32(t1, _MM_PERM_CDAB));
    const __m512i sums = _mm512_permutex2var_epi32(
        t0, _mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 0, 0, 0, 0, 0, 0, 0, 0), t1);
    _mm256_storeu_si256((__m256i *)(void *)(blk + 64 + 32 * s),
                        _mm512_castsi512_si256(_mm512_mullo_epi32(sums, _mm512_set1_epi32(-128))));
    const float d = _cvtsh_ss(_cvtss_sh(amax / 127.0f, 0)); /* F16C: vt_f32_to_f16_bits' rounding */
    memcpy(blk + 128 + 4 * s, &d, 4);
    const int32_t s8 = -8 * _mm512_reduce_add_epi32(_mm512_add_epi32(r0, r1));
    memcpy(blk + 136 + 4 * s, &s8, 4);
}

/* vt_q8_k_block_write in AVX-512, for whole rows of 256-element blocks:
 * the same largest magnitude (exact in any order; a NaN element skipped,
 * as the scalar comparison skips it), its first occurrence's value as max,
 * the same products and round-to-nearest by the 1.5 * 2^23 shift, the same
 * sums of 16. Called only where the kernel set has vnni (this target). */
VT_VNNI_TARGET void vt_act_quantize_q8_k_avx512(const float *x, uint8_t *dst, int64_t n)
{
    for (int64_t b = 0; b < n / 256; b++, x += 256, dst += VT_Q8_K_BYTES) {
        __m512 m = _mm512_setzero_ps();
        for (int j = 0; j < 256; j += 16)
            m = _mm512_max_ps(_mm512_abs_ps(_mm512_loadu_ps(x + j)), m); /* NaN: m kept */
        const float amax = _mm512_reduce_max_ps(m);
        if (amax == 0.0f) {
            memset(dst, 0, VT_Q8_K_BYTES);
            continue;
        }
        float max = 0.0f;
        for (int j = 0; j < 256; j += 16) {
            const __mmask16 at = _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_loadu_ps(x + j)), _mm512_set1_ps(amax),
                                                    _CMP_EQ_OQ);
            if (at) {
                max = x[j + __builtin_ctz(at)];
                break;
            }
        }
        const float iscale = -127.0f / max;
        const __m512 is = _mm512_set1_ps(iscale), shift = _mm512_set1_ps(12582912.0f);
        for (int g = 0; g < 16; g++) {
            const __m512 f = _mm512_add_ps(_mm512_mul_ps(is, _mm512_loadu_ps(x + 16 * g)), shift);
            __m512i v = _mm512_sub_epi32(_mm512_and_si512(_mm512_castps_si512(f), _mm512_set1_epi32(0x007fffff)),
                                         _mm512_set1_epi32(0x00400000));
            v = _mm512_min_epi32(v, _mm512_set1_epi32(127));
            _mm_storeu_si128((__m128i *)(void *)(dst + 4 + 16 * g), _mm512_cvtepi32_epi8(v));
            const uint16_t s = (uint16_t)(int16_t)_mm512_reduce_add_epi32(v);
            dst[260 + 2 * g] = (uint8_t)(s & 0xff);
            dst[261 + 2 * g] = (uint8_t)(s >> 8);
        }
        const uint32_t d = vt_f32_bits(1 / iscale);
        for (int k = 0; k < 4; k++)
            dst[k] = (uint8_t)(d >> (8 * k));
    }
}
#endif

/* The wide layout is only made for the VNNI kernels, so the AVX-512
 * quantizer is always there when it is called (a portable build never
 * calls it). */
void vt_act_quantize_wide(const float *x, int64_t n_tok, int64_t n, uint8_t *dst)
{
    const int64_t nb = n / 32;
    memset(dst, 0, vt_act_wide_bytes(n_tok, n));
    for (int64_t t = 0; t < n_tok; t++) {
        const int s = (int)(t % 2);
        for (int64_t b = 0; b < nb; b++) {
            uint8_t *blk = dst + (size_t)((t / 2) * nb + b) * VT_WIDE_PAIR_BYTES;
#ifdef VT_X86
            q8_0_wide_half_avx512(x + t * n + b * 32, blk, s);
#else
            int8_t q[32];
            const float d = vt_half_bits_to_f32(vt_q8_0_quant_block(x + t * n + b * 32, q));
            memcpy(blk + 32 * s, q, 32);
            for (int m = 0; m < 8; m++) {
                const int32_t ls = -128 * (q[4 * m] + q[4 * m + 1] + q[4 * m + 2] + q[4 * m + 3]);
                memcpy(blk + 64 + 32 * s + 4 * m, &ls, 4);
            }
            memcpy(blk + 128 + 4 * s, &d, 4);
            int32_t sum = 0;
            for (int j = 0; j < 32; j++)
                sum += q[j];
            const int32_t s8 = -8 * sum;
            memcpy(blk + 136 + 4 * s, &s8, 4);
#endif
        }
    }
}

#ifdef VT_X86

/* R rows (from w, stride rb) x P token pairs (from xp, stride xs) of nb
 * blocks: y[t][r] for the 2P tokens, n_out of them kept. */
VT_VNNI_TARGET static inline __attribute__((always_inline)) void
q8_0_tile(const uint8_t *w, size_t rb, int R, const uint8_t *xp, size_t xs, int P, int64_t nb, float *y,
          int64_t ldy, int n_out)
{
    __m512 acc[4][2];
    for (int r = 0; r < R; r++)
        for (int p = 0; p < P; p++)
            acc[r][p] = _mm512_setzero_ps();
    const __m512i off = _mm512_set1_epi8((char)0x80);
    for (int64_t b = 0; b < nb; b++) {
        __m512i xq[2], ls[2];
        __m512 dx[2];
        for (int p = 0; p < P; p++) {
            const uint8_t *blk = xp + (size_t)p * xs + (size_t)b * VT_WIDE_PAIR_BYTES;
            xq[p] = _mm512_loadu_si512(blk);
            ls[p] = _mm512_loadu_si512(blk + 64);
            float d2[2];
            memcpy(d2, blk + 128, 8);
            dx[p] = _mm512_insertf32x8(_mm512_set1_ps(d2[0]), _mm256_set1_ps(d2[1]), 1);
        }
        for (int r = 0; r < R; r++) {
            const uint8_t *wb = w + (size_t)r * rb + (size_t)b * 34;
            const __m512i wq = _mm512_xor_si512(
                _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)(const void *)(wb + 2))), off);
            const __m512 dw = _mm512_cvtph_ps(_mm256_set1_epi16((short)vt_rd16(wb)));
            for (int p = 0; p < P; p++) {
                const __m512i lanes = _mm512_dpbusd_epi32(ls[p], wq, xq[p]);
                acc[r][p] = _mm512_fmadd_ps(_mm512_mul_ps(dw, dx[p]), _mm512_cvtepi32_ps(lanes), acc[r][p]);
            }
        }
    }
    for (int r = 0; r < R; r++)
        for (int p = 0; p < P; p++) {
            float a[16];
            _mm512_storeu_ps(a, acc[r][p]);
            if (2 * p < n_out)
                y[(2 * p) * ldy + r] = vt_hsum8(a);
            if (2 * p + 1 < n_out)
                y[(2 * p + 1) * ldy + r] = vt_hsum8(a + 8);
        }
}

/* One token (slot s of its pair) against R rows: q8_0_tile's arithmetic in
 * 256-bit registers (a decode step has no second token to fill the rest). */
VT_VNNI_TARGET static inline __attribute__((always_inline)) void
q8_0_tile_one(const uint8_t *w, size_t rb, int R, const uint8_t *xp, int s, int64_t nb, float *y)
{
    __m256 acc[4];
    for (int r = 0; r < R; r++)
        acc[r] = _mm256_setzero_ps();
    const __m256i off = _mm256_set1_epi8((char)0x80);
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *blk = xp + (size_t)b * VT_WIDE_PAIR_BYTES;
        const __m256i xq = _mm256_loadu_si256((const __m256i *)(const void *)(blk + 32 * s));
        const __m256i ls = _mm256_loadu_si256((const __m256i *)(const void *)(blk + 64 + 32 * s));
        const __m256 dx = _mm256_broadcast_ss((const float *)(const void *)(blk + 128 + 4 * s));
        for (int r = 0; r < R; r++) {
            const uint8_t *wb = w + (size_t)r * rb + (size_t)b * 34;
            const __m256i wq = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(const void *)(wb + 2)), off);
            const __m256 dw = _mm256_cvtph_ps(_mm_set1_epi16((short)vt_rd16(wb)));
            const __m256i lanes = _mm256_dpbusd_epi32(ls, wq, xq);
            acc[r] = _mm256_fmadd_ps(_mm256_mul_ps(dw, dx), _mm256_cvtepi32_ps(lanes), acc[r]);
        }
    }
    for (int r = 0; r < R; r++) {
        float a[8];
        _mm256_storeu_ps(a, acc[r]);
        y[r] = vt_hsum8(a);
    }
}

/* Rows [r0, r1) of w against n_tok tokens in the wide layout. Tokens go in
 * chunks of 64 (their activation stays in the L2 cache while every row of
 * the range passes over it), rows in fours. */
VT_VNNI_TARGET static void gemm_q8_0_vnni(const vt_mat *w, int64_t r0, int64_t r1, const uint8_t *xw,
                                          int64_t n_tok, float *y, int64_t ldy)
{
    const int64_t nb = w->cols / 32;
    const size_t xs = (size_t)nb * VT_WIDE_PAIR_BYTES, rb = w->row_bytes;
    for (int64_t t0 = 0; t0 < n_tok; t0 += 64) {
        const int64_t t1 = t0 + 64 < n_tok ? t0 + 64 : n_tok;
        for (int64_t o = r0; o < r1;) {
            const int R = r1 - o >= 4 ? 4 : 1;
            const uint8_t *wr = w->data + (size_t)o * rb;
            if (n_tok == 1) {
                q8_0_tile_one(wr, rb, 1, xw, 0, nb, y + o);
                o += 1;
                continue;
            }
            for (int64_t t = t0; t < t1; t += 4) {
                const uint8_t *xp = xw + (size_t)(t / 2) * xs;
                float *yt = y + t * ldy + o;
                const int n_out = (int)(t1 - t < 4 ? t1 - t : 4);
                if (n_out > 2) {
                    if (R == 4)
                        q8_0_tile(wr, rb, 4, xp, xs, 2, nb, yt, ldy, n_out);
                    else
                        q8_0_tile(wr, rb, 1, xp, xs, 2, nb, yt, ldy, n_out);
                } else {
                    if (R == 4)
                        q8_0_tile(wr, rb, 4, xp, xs, 1, nb, yt, ldy, n_out);
                    else
                        q8_0_tile(wr, rb, 1, xp, xs, 1, nb, yt, ldy, n_out);
                }
            }
            o += R;
        }
    }
}
#endif

/* ======================================================================
 * Q4_0 in the order of ggml's repacked GEMV (vt_dot_nib_r8: per block the
 * exact integer sum of (nibble - 8) * x over its 32 elements, then
 * acc = fma(sum, d_w * d_x, acc)), sixteen rows per 512-bit register: lane
 * r of every register is row r of a group of 16. The rows are repacked at
 * load (vt_cpu_pack) so that this is four loads per block: per group and
 * block VT_Q4_0_PACK_BYTES, the 16 rows' d (F16), then for j = 0..3 the 16
 * rows' bytes 4j..4j+3 of qs, whose low nibbles are elements 4j..4j+3 and
 * high nibbles elements 16+4j..16+4j+3. VPDPBUSD multiplies the nibbles
 * (unsigned) by four activation values broadcast to every lane; starting
 * from -8 * sum x, eight of them give each row's block sum exactly.
 * ====================================================================== */

enum { VT_Q4_0_PACK_BYTES = 32 + 256 };

#ifdef VT_X86
/* Four bytes at p in every 32-bit lane, straight from memory. */
VT_VNNI_TARGET static inline __attribute__((always_inline)) __m512i bcast32(const uint8_t *p)
{
    return _mm512_broadcastd_epi32(_mm_loadu_si32(p));
}

/* Tokens [t0, t0 + T) of the wide activation against one group of 16 rows
 * (pw: the group's packed blocks); y[t * ldy + r] for r < 16. */
VT_VNNI_TARGET static inline __attribute__((always_inline)) void
q4_0_group(const uint8_t *pw, int64_t nb, const uint8_t *xw, size_t xs, int64_t t0, int T, float *y, int64_t ldy)
{
    __m512 acc[8];
    for (int t = 0; t < T; t++)
        acc[t] = _mm512_setzero_ps();
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *g = pw + (size_t)b * VT_Q4_0_PACK_BYTES;
        const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)g));
        __m512i wv[8];
        for (int j = 0; j < 4; j++) {
            const __m512i raw = _mm512_loadu_si512(g + 32 + 64 * j);
            wv[j] = _mm512_and_si512(raw, low4);
            wv[j + 4] = _mm512_and_si512(_mm512_srli_epi16(raw, 4), low4);
        }
        for (int t = 0; t < T; t++) {
            const int64_t tok = t0 + t;
            const uint8_t *blk = xw + (size_t)(tok / 2) * xs + (size_t)b * VT_WIDE_PAIR_BYTES;
            const int s = (int)(tok % 2);
            const uint8_t *qx = blk + 32 * s;
            /* two chains of four: integer sums, the same in any order */
            __m512i s0 = bcast32(blk + 136 + 4 * s), s1 = _mm512_setzero_si512();
            for (int k = 0; k < 8; k += 2) {
                s0 = _mm512_dpbusd_epi32(s0, wv[k], bcast32(qx + 4 * k));
                s1 = _mm512_dpbusd_epi32(s1, wv[k + 1], bcast32(qx + 4 * k + 4));
            }
            const __m512i sum = _mm512_add_epi32(s0, s1);
            const __m512 dx = _mm512_castsi512_ps(bcast32(blk + 128 + 4 * s));
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), _mm512_mul_ps(dw, dx), acc[t]);
        }
    }
    for (int t = 0; t < T; t++)
        _mm512_storeu_ps(y + (t0 + t) * ldy, acc[t]);
}

/* Rows [r0, r1) (whole groups of 16: the matrix's rows are split so) of w
 * against n_tok tokens; eight tokens at a time. */
VT_VNNI_TARGET static void gemm_q4_0_vnni(const vt_mat *w, int64_t r0, int64_t r1, const uint8_t *xw,
                                          int64_t n_tok, float *y, int64_t ldy)
{
    const int64_t nb = w->cols / 32;
    const size_t xs = (size_t)nb * VT_WIDE_PAIR_BYTES, gs = (size_t)nb * VT_Q4_0_PACK_BYTES;
    for (int64_t o = r0; o + 16 <= r1; o += 16) {
        const uint8_t *pw = w->packed + (size_t)(o / 16) * gs;
        int64_t t = 0;
        for (; t + 8 <= n_tok; t += 8)
            q4_0_group(pw, nb, xw, xs, t, 8, y + o, ldy);
        for (; t + 2 <= n_tok; t += 2)
            q4_0_group(pw, nb, xw, xs, t, 2, y + o, ldy);
        if (t < n_tok)
            q4_0_group(pw, nb, xw, xs, t, 1, y + o, ldy);
    }
}
#endif

/* ======================================================================
 * Q8_0 in sixteen-row groups, as Q4_0 above: lane r of every register is
 * row r of the group, and vt_dot_q8_0's eight lanes per block become eight
 * registers, lane m's (elements 4m..4m+3) own: lane_m = VPDPBUSD of the 16
 * rows' four bytes offset to w + 128 against the token's four values
 * broadcast, from -128 times their sum (the wide layout's offset sums);
 * acc_m = fma(d_w * d_x, lane_m, acc_m) block after block, and vt_hsum8's
 * tree over the eight at the end: each row's arithmetic exactly. Packed:
 * per group and block VT_Q8_0_PACK_BYTES, the 16 rows' d (F16), then for
 * m = 0..7 the 16 rows' bytes 4m..4m+3 of qs.
 * ====================================================================== */

enum { VT_Q8_0_PACK_BYTES = 32 + 512 };

#ifdef VT_X86
VT_VNNI_TARGET static inline __attribute__((always_inline)) void
q8_0_group(const uint8_t *pw, int64_t nb, const uint8_t *xw, size_t xs, int64_t t0, int T, float *y, int64_t ldy)
{
    __m512 acc[2][8];
    for (int t = 0; t < T; t++)
        for (int m = 0; m < 8; m++)
            acc[t][m] = _mm512_setzero_ps();
    const __m512i off = _mm512_set1_epi8((char)0x80);
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *g = pw + (size_t)b * VT_Q8_0_PACK_BYTES;
        const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)g));
        __m512i wv[8];
        for (int m = 0; m < 8; m++)
            wv[m] = _mm512_xor_si512(_mm512_loadu_si512(g + 32 + 64 * m), off);
        for (int t = 0; t < T; t++) {
            const int64_t tok = t0 + t;
            const uint8_t *blk = xw + (size_t)(tok / 2) * xs + (size_t)b * VT_WIDE_PAIR_BYTES;
            const int s = (int)(tok % 2);
            const uint8_t *qx = blk + 32 * s, *ls = blk + 64 + 32 * s;
            const __m512 d = _mm512_mul_ps(dw, _mm512_castsi512_ps(bcast32(blk + 128 + 4 * s)));
            for (int m = 0; m < 8; m++) {
                const __m512i lane = _mm512_dpbusd_epi32(bcast32(ls + 4 * m), wv[m], bcast32(qx + 4 * m));
                acc[t][m] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(lane), acc[t][m]);
            }
        }
    }
    for (int t = 0; t < T; t++) {
        const __m512 s04 = _mm512_add_ps(acc[t][0], acc[t][4]), s26 = _mm512_add_ps(acc[t][2], acc[t][6]);
        const __m512 s15 = _mm512_add_ps(acc[t][1], acc[t][5]), s37 = _mm512_add_ps(acc[t][3], acc[t][7]);
        _mm512_storeu_ps(y + (t0 + t) * ldy, _mm512_add_ps(_mm512_add_ps(s04, s26), _mm512_add_ps(s15, s37)));
    }
}

VT_VNNI_TARGET static void gemm_q8_0_packed(const vt_mat *w, int64_t r0, int64_t r1, const uint8_t *xw,
                                            int64_t n_tok, float *y, int64_t ldy)
{
    const int64_t nb = w->cols / 32;
    const size_t xs = (size_t)nb * VT_WIDE_PAIR_BYTES, gs = (size_t)nb * VT_Q8_0_PACK_BYTES;
    for (int64_t o = r0; o + 16 <= r1; o += 16) {
        const uint8_t *pw = w->packed + (size_t)(o / 16) * gs;
        int64_t t = 0;
        for (; t + 2 <= n_tok; t += 2)
            q8_0_group(pw, nb, xw, xs, t, 2, y + o, ldy);
        if (t < n_tok)
            q8_0_group(pw, nb, xw, xs, t, 1, y + o, ldy);
    }
}
#endif

/* ======================================================================
 * Q4_K in the order of ggml's repacked GEMV (vt_dot_q4_k_r8: per
 * superblock the exact integer sums isum = sum_j scale_j * (nibbles . q8
 * over sub-block j) and imin = sum_j min_j * (the q8 sums of sub-block j),
 * then acc = fma(isum, d_w * d_x, acc) and mins = fma(imin, dmin_w * d_x,
 * mins); the product acc - mins), sixteen rows per register as Q4_0. The
 * activation is the plain Q8_K blocks. Packed per group and superblock,
 * VT_Q4_K_PACK_BYTES: the 16 rows' d, their dmin (F16), their 12 scale
 * bytes as three registers of 4 bytes per row, then for i = 0..3 and
 * k = 0..7 the 16 rows' bytes 32i + 4k .. 32i + 4k + 3 of qs (low nibbles:
 * sub-block 2i, high: 2i + 1, elements 4k..4k+3).
 * ====================================================================== */

enum { VT_Q4_K_PACK_BYTES = 64 + 192 + 2048 };

#ifdef VT_X86
VT_VNNI_TARGET static inline __attribute__((always_inline)) void
q4_k_group(const uint8_t *pw, int64_t nb, const uint8_t *xb, size_t xs, int64_t t0, int T, float *y, int64_t ldy)
{
    __m512 acc[2], mins[2];
    for (int t = 0; t < T; t++)
        acc[t] = mins[t] = _mm512_setzero_ps();
    const __m512i low4 = _mm512_set1_epi8(0x0f), low6 = _mm512_set1_epi32(63), nib = _mm512_set1_epi32(0xf);
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *g = pw + (size_t)b * VT_Q4_K_PACK_BYTES;
        /* the 6-bit scales and mins of the 8 sub-blocks, lane r: row r */
        const __m512i A = _mm512_loadu_si512(g + 64), B = _mm512_loadu_si512(g + 128),
                      C = _mm512_loadu_si512(g + 192);
        __m512i sc[8], mn[8];
        for (int j = 0; j < 4; j++) {
            sc[j] = _mm512_and_si512(_mm512_srli_epi32(A, 8 * j), low6);
            mn[j] = _mm512_and_si512(_mm512_srli_epi32(B, 8 * j), low6);
            const __m512i c = _mm512_srli_epi32(C, 8 * j);
            sc[j + 4] = _mm512_or_si512(_mm512_and_si512(c, nib),
                                        _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(A, 8 * j + 6), _mm512_set1_epi32(3)), 4));
            mn[j + 4] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(c, 4), nib),
                                        _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(B, 8 * j + 6), _mm512_set1_epi32(3)), 4));
        }
        __m512i dot[2][8];
        for (int t = 0; t < T; t++)
            for (int j = 0; j < 8; j++)
                dot[t][j] = _mm512_setzero_si512();
        const uint8_t *q8[2];
        for (int t = 0; t < T; t++)
            q8[t] = xb + (size_t)(t0 + t) * xs + (size_t)b * VT_Q8_K_BYTES + 4;
        for (int i = 0; i < 4; i++)
            for (int k = 0; k < 8; k++) {
                const __m512i raw = _mm512_loadu_si512(g + 256 + 64 * (8 * i + k));
                const __m512i lo = _mm512_and_si512(raw, low4), hi = _mm512_and_si512(_mm512_srli_epi16(raw, 4), low4);
                for (int t = 0; t < T; t++) {
                    dot[t][2 * i] = _mm512_dpbusd_epi32(dot[t][2 * i], lo, bcast32(q8[t] + 64 * i + 4 * k));
                    dot[t][2 * i + 1] = _mm512_dpbusd_epi32(dot[t][2 * i + 1], hi, bcast32(q8[t] + 64 * i + 32 + 4 * k));
                }
            }
        const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)g));
        const __m512 dmw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(g + 32)));
        for (int t = 0; t < T; t++) {
            const uint8_t *xk = xb + (size_t)(t0 + t) * xs + (size_t)b * VT_Q8_K_BYTES;
            __m512i isum = _mm512_setzero_si512(), imin = _mm512_setzero_si512();
            for (int j = 0; j < 8; j++) {
                isum = _mm512_add_epi32(isum, _mm512_mullo_epi32(sc[j], dot[t][j]));
                const int32_t bs = vt_rd_i16(xk + 260 + 4 * j) + vt_rd_i16(xk + 262 + 4 * j);
                imin = _mm512_add_epi32(imin, _mm512_mullo_epi32(mn[j], _mm512_set1_epi32(bs)));
            }
            const __m512 dx = _mm512_castsi512_ps(bcast32(xk));
            acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(dw, dx), acc[t]);
            mins[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(imin), _mm512_mul_ps(dmw, dx), mins[t]);
        }
    }
    for (int t = 0; t < T; t++)
        _mm512_storeu_ps(y + (t0 + t) * ldy, _mm512_sub_ps(acc[t], mins[t]));
}

VT_VNNI_TARGET static void gemm_q4_k_packed(const vt_mat *w, int64_t r0, int64_t r1, const uint8_t *xb,
                                            int64_t n_tok, float *y, int64_t ldy)
{
    const int64_t nb = w->cols / 256;
    const size_t xs = (size_t)nb * VT_Q8_K_BYTES, gs = (size_t)nb * VT_Q4_K_PACK_BYTES;
    for (int64_t o = r0; o + 16 <= r1; o += 16) {
        const uint8_t *pw = w->packed + (size_t)(o / 16) * gs;
        int64_t t = 0;
        for (; t + 2 <= n_tok; t += 2)
            q4_k_group(pw, nb, xb, xs, t, 2, y + o, ldy);
        if (t < n_tok)
            q4_k_group(pw, nb, xb, xs, t, 1, y + o, ldy);
    }
}
#endif

vt_int_gemm_fn vt_int_gemm_of(const vt_cpu *c, const vt_mat *w, int *granule, int *wide_act)
{
    int g = 4, wide = 1;
    vt_int_gemm_fn f = NULL;
#ifdef VT_X86
    if (c->matmul == VT_MATMUL_Q8 && c->k.vnni && w->codec->type == VT_TYPE_Q8_0) {
        f = w->packed ? gemm_q8_0_packed : gemm_q8_0_vnni;
        g = w->packed ? 16 : 4;
    }
    if (c->matmul == VT_MATMUL_Q8 && c->k.vnni && w->codec->type == VT_TYPE_Q4_0 && w->packed) {
        f = gemm_q4_0_vnni;
        g = 16;
    }
    if (c->matmul == VT_MATMUL_Q8 && c->k.vnni && w->codec->type == VT_TYPE_Q4_K && w->packed) {
        f = gemm_q4_k_packed;
        g = 16;
        wide = 0;
    }
#else
    (void)c;
    (void)w;
#endif
    if (granule)
        *granule = g;
    if (wide_act)
        *wide_act = wide;
    return f;
}

int vt_int_pack_wanted(const vt_cpu *c, const vt_mat *w)
{
    if (c->matmul != VT_MATMUL_Q8 || !c->k.vnni || w->rows % 16 != 0)
        return 0;
    const int t = w->codec->type;
    return t == VT_TYPE_Q8_0 || ((t == VT_TYPE_Q4_0 || t == VT_TYPE_Q4_K) && vt_int_dot_r8(t, w->tensor_rows));
}

/* The three packed layouts are one transposition: per group of 16 rows
 * and block, each row's leading F16 values (d; Q4_K: d, dmin) side by
 * side, 32 bytes each, then every 4-byte word of the rest of the block,
 * the 16 rows' copies of it side by side (64 bytes). As many bytes as
 * the rows take stored. */
size_t vt_int_packed_bytes(const vt_mat *w, int64_t rows) { return (size_t)rows * w->row_bytes; }

void vt_int_pack(const vt_mat *w, uint8_t *dst)
{
    const size_t bb = w->codec->block_bytes;
    const size_t halves = w->codec->type == VT_TYPE_Q4_K ? 2 : 1, words = (bb - 2 * halves) / 4;
    const int64_t nb = w->cols / w->codec->block_elems;
    for (int64_t g = 0; g < w->rows / 16; g++)
        for (int64_t b = 0; b < nb; b++) {
            uint8_t *o = dst + (size_t)(g * nb + b) * 16 * bb;
            for (int r = 0; r < 16; r++) {
                const uint8_t *blk = w->data + (size_t)(g * 16 + r) * w->row_bytes + (size_t)b * bb;
                for (size_t h = 0; h < halves; h++)
                    memcpy(o + 32 * h + 2 * r, blk + 2 * h, 2);
                for (size_t k = 0; k < words; k++)
                    memcpy(o + 32 * halves + 64 * k + 4 * r, blk + 2 * halves + 4 * k, 4);
            }
        }
}
