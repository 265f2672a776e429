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
