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

static inline float hsum8(const float *a) { return vt_hsum8(a); }

/* Q8_0 x Q8_0: ggml's x86 vec_dot_q8_0_q8_0 (and llamafile's tinyBLAS for
 * the same pair, which sums the same way). */
static inline __attribute__((always_inline)) float dot_q8_0_body(const uint8_t *w, const uint8_t *x, int64_t nb)
{
    return vt_dot_q8_0(w, x, nb);
}

/* Q6_K x Q8_K: ggml's x86 vec_dot_q6_K_q8_K as the CPU backend here runs it
 * (its instructions read: the 6-bit values used unsigned, 0..63, and their
 * offset of 32 taken off afterwards through the activation's block sums, one
 * lane per 32 elements). Block: ql[128] (low nibbles), qh[64] (two high
 * bits each), int8 scales[16] (one per 16 elements), F16 d. */
static inline __attribute__((always_inline)) float dot_q6_k_body(const uint8_t *w, const uint8_t *x, int64_t nb)
{
    return vt_dot_q6_k(w, x, nb);
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
static inline __attribute__((always_inline)) float dot_q4_k_r8_body(const uint8_t *w, const uint8_t *x, int64_t nb)
{
    return vt_dot_q4_k_r8(w, x, nb);
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
    return vt_dot_k45(w, x, nb, five);
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
    vt_int_dot_fn plain[2]; /* the plain layout's order (portable, FMA build); NULL: none */
    vt_int_dot_fn r8[2];    /* the order of ggml's repacked layout, which llama.cpp gives a
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
const vt_int_dot_fn *vt_int_dot_of(const vt_cpu *c, const vt_mat *w, vt_act_type *act)
{
    const int t = w->codec->type;
    if (c->matmul != VT_MATMUL_Q8 || t < 0 || t >= VT_TYPE_COUNT)
        return NULL;
    const int_kernel *k = &int_kernels[t];
    const vt_int_dot_fn *f = k->r8[0] && w->tensor_rows % 8 == 0 ? k->r8 : k->plain;
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
