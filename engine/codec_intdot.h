/* The integer block products of --matmul q8 that the GPU shares with the CPU
 * (kernels_intdot.c), and the activation quantizers they meet: one body per
 * product, compiled for both (VT_HD), so the GPU's q8 products are the CPU
 * engine's by construction. Each follows ggml's x86 kernel for the pair,
 * as kernels_intdot.c says at length: block products summed as exact
 * integers in eight lanes (lane m: the elements 4m .. 4m+3 of each 32),
 * acc[m] = fma(d_w * d_x, lane m, acc[m]) block after block, the lanes
 * summed as ggml's hsum_float_8. Bytes are read little-endian through
 * vt_rd16/vt_rd32 (the files' order, and x86's). Only bodies that need no
 * codebook live here; the others stay in kernels_intdot.c, and the GPU
 * refuses q8 for their types. */
#ifndef VT_CODEC_INTDOT_H
#define VT_CODEC_INTDOT_H

#include "codec.h" /* VT_TYPE_* */
#include "codec_blocks.h"

#if defined(__CUDACC__) || defined(__HIPCC__)
#define VT_HDI __host__ __device__ static __forceinline__
#else
#define VT_HDI static inline __attribute__((always_inline))
#endif

/* Activation blocks: Q8_0 F16 d + 32 int8 (34 bytes); Q8_K F32 d + 256
 * int8 + 16 int16 sums of 16 (292 bytes, as ggml's block_q8_K). */
#define VT_Q8_0_BYTES 34
#define VT_Q8_K_BYTES 292
#define VT_Q8_1_BYTES 36

#ifndef VT_IQ1M_DELTA
#define VT_IQ1M_DELTA 0.125f /* codec_iq_tables.h */
#endif

VT_HDI float vt_hsum8(const float *a)
{
    return ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]));
}

/* Q8_0: d = amax/127 kept as F16, q = x * (127/amax) rounded to nearest,
 * ties to even (the x86 quantize_row_q8_0). */
VT_HDI uint16_t vt_q8_0_quant_block(const float *x, int8_t *q)
{
    float amax = 0.0f;
    for (int j = 0; j < 32; j++)
        amax = fmaxf(amax, fabsf(x[j]));
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    for (int j = 0; j < 32; j++)
        q[j] = (int8_t)nearbyintf(x[j] * id);
    return vt_f32_to_f16_bits(amax / 127.0f);
}

/* ggml's nearest_int: ties to even via the 1.5*2^23 trick (|v| <= 2^22). */
VT_HDI int vt_nearest_int(float v)
{
    const int32_t i = (int32_t)vt_f32_bits(v + 12582912.0f);
    return (i & 0x007fffff) - 0x00400000;
}

/* Q8_K: the scale set by the element of largest magnitude (its sign kept:
 * iscale = -127/max), d = 1/iscale in F32 (0 for an all-zero block). */
VT_HDI float vt_q8_k_quant_block(const float *x, int8_t *q)
{
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < 256; j++) {
        const float ax = fabsf(x[j]);
        if (ax > amax) {
            amax = ax;
            max = x[j];
        }
    }
    if (amax == 0.0f) {
        for (int j = 0; j < 256; j++)
            q[j] = 0;
        return 0.0f;
    }
    const float iscale = -127.0f / max;
    for (int j = 0; j < 256; j++) {
        const int v = vt_nearest_int(iscale * x[j]);
        q[j] = (int8_t)(v < 127 ? v : 127);
    }
    return 1 / iscale;
}

/* One Q8_0 activation block (34 bytes) from 32 floats. */
VT_HDI void vt_q8_0_block_write(const float *x, uint8_t *dst)
{
    const uint16_t d = vt_q8_0_quant_block(x, (int8_t *)(dst + 2));
    dst[0] = (uint8_t)(d & 0xff);
    dst[1] = (uint8_t)(d >> 8);
}

/* One Q8_K activation block (292 bytes) from 256 floats: d, q, 16 sums. */
VT_HDI void vt_q8_k_block_write(const float *x, uint8_t *dst)
{
    int8_t *q = (int8_t *)(dst + 4);
    const uint32_t d = vt_f32_bits(vt_q8_k_quant_block(x, q));
    for (int k = 0; k < 4; k++)
        dst[k] = (uint8_t)(d >> (8 * k));
    for (int g = 0; g < 16; g++) {
        int sum = 0;
        for (int j = 0; j < 16; j++)
            sum += q[16 * g + j];
        const uint16_t s = (uint16_t)(int16_t)sum;
        dst[260 + 2 * g] = (uint8_t)(s & 0xff);
        dst[261 + 2 * g] = (uint8_t)(s >> 8);
    }
}

VT_HDI int16_t vt_rd_i16(const uint8_t *p) { return (int16_t)vt_rd16(p); }

/* One Q8_1 activation block (36 bytes) from 32 floats, as the x86
 * quantize_row_q8_1: the Q8_0 values and d, then s = F16(d * the sum of the
 * quants), d the F32 amax / 127 before it is stored as F16. */
VT_HDI void vt_q8_1_block_write(const float *x, uint8_t *dst)
{
    float amax = 0.0f;
    for (int j = 0; j < 32; j++)
        amax = fmaxf(amax, fabsf(x[j]));
    const int8_t *q = (const int8_t *)(dst + 4);
    const uint16_t d = vt_q8_0_quant_block(x, (int8_t *)(dst + 4));
    int sum = 0;
    for (int j = 0; j < 32; j++)
        sum += q[j];
    const uint16_t s = vt_f32_to_f16_bits(amax / 127.0f * (float)sum);
    dst[0] = (uint8_t)(d & 0xff);
    dst[1] = (uint8_t)(d >> 8);
    dst[2] = (uint8_t)(s & 0xff);
    dst[3] = (uint8_t)(s >> 8);
}

/* Q8_0 x Q8_0: ggml's x86 vec_dot_q8_0_q8_0. */
VT_HDI float vt_dot_q8_0(const uint8_t *w, const uint8_t *x, int64_t nb)
{
    float acc[8] = { 0 };
    for (int64_t b = 0; b < nb; b++, w += 34, x += 34) {
        const float d = vt_half_bits_to_f32(vt_rd16(w)) * vt_half_bits_to_f32(vt_rd16(x));
        const int8_t *qw = (const int8_t *)(w + 2), *qx = (const int8_t *)(x + 2);
        for (int m = 0; m < 8; m++) {
            int32_t lane = 0;
            for (int k = 4 * m; k < 4 * m + 4; k++)
                lane += (int32_t)qw[k] * qx[k];
            acc[m] = fmaf(d, (float)lane, acc[m]);
        }
    }
    return vt_hsum8(acc);
}

/* Q6_K x Q8_K: ggml's x86 vec_dot_q6_K_q8_K as the CPU backend runs it (the
 * 6-bit values unsigned, their offset of 32 taken off through the
 * activation's block sums). Block: ql[128], qh[64], int8 scales[16], F16 d. */
VT_HDI float vt_dot_q6_k(const uint8_t *w, const uint8_t *x, int64_t nb)
{
    float acc[8] = { 0 };
    for (int64_t b = 0; b < nb; b++, w += 210, x += 292) {
        const uint8_t *ql = w, *qh = w + 128;
        const int8_t *sc = (const int8_t *)(w + 192), *q8 = (const int8_t *)(x + 4);
        const uint16_t dw = vt_rd16(w + 208);
        const float dx = vt_bits_f32(vt_rd32(x));
        int32_t lane[8] = { 0 };
        for (int n = 0; n < 2; n++) {
            const uint8_t *L = ql + 64 * n, *H = qh + 32 * n;
            for (int l = 0; l < 32; l++) {
                const int e = 128 * n + l;
                const int v[4] = { (L[l] & 0xF) | ((H[l] & 3) << 4), (L[l + 32] & 0xF) | (((H[l] >> 2) & 3) << 4),
                                   (L[l] >> 4) | (((H[l] >> 4) & 3) << 4),
                                   (L[l + 32] >> 4) | (((H[l] >> 6) & 3) << 4) };
                for (int k = 0; k < 4; k++)
                    lane[l / 4] += sc[(e + 32 * k) / 16] * v[k] * q8[e + 32 * k];
            }
        }
        for (int m = 0; m < 8; m++)
            lane[m] -= 32 * (vt_rd_i16(x + 260 + 4 * m) * sc[2 * m] + vt_rd_i16(x + 262 + 4 * m) * sc[2 * m + 1]);
        const float d = dx * vt_half_bits_to_f32(dw);
        for (int m = 0; m < 8; m++)
            acc[m] = fmaf(d, (float)lane[m], acc[m]);
    }
    return vt_hsum8(acc);
}

/* 6-bit scale and min of sub-block j (0..7) from the 12 bytes Q4_K and
 * Q5_K share. */
VT_HDI void vt_k4_scale_min(const uint8_t *sc, int j, int *s, int *m)
{
    if (j < 4) {
        *s = sc[j] & 63;
        *m = sc[j + 4] & 63;
    } else {
        *s = (sc[j + 4] & 0xf) | ((sc[j - 4] >> 6) << 4);
        *m = (sc[j + 4] >> 4) | ((sc[j] >> 6) << 4);
    }
}

/* Q4_K (repacked order): what ggml gives a Q4_K tensor whose rows are a
 * multiple of 8 on an AVX2 CPU (kernels_intdot.c). Per superblock one
 * integer sum of scale * (values . q8) and one of min * q8 sums, then
 * acc = fma(sum, d_w * d_x, acc), mins = fma(min sum, dmin_w * d_x, mins);
 * the product is acc - mins. */
VT_HDI float vt_dot_q4_k_r8(const uint8_t *w, const uint8_t *x, int64_t nb)
{
    float acc = 0.0f, mins = 0.0f;
    for (int64_t b = 0; b < nb; b++, w += 144, x += 292) {
        const uint16_t dh = vt_rd16(w), mh = vt_rd16(w + 2);
        const float dx = vt_bits_f32(vt_rd32(x));
        const uint8_t *sc = w + 4, *qs = w + 16;
        const int8_t *q8 = (const int8_t *)(x + 4);
        int32_t isum = 0, imin = 0;
        for (int j = 0; j < 8; j++) {
            int s, m;
            vt_k4_scale_min(sc, j, &s, &m);
            const uint8_t *q = qs + 32 * (j / 2);
            const int shift = 4 * (j % 2);
            int32_t dot = 0;
            for (int l = 0; l < 32; l++)
                dot += ((q[l] >> shift) & 0xf) * q8[32 * j + l];
            isum += s * dot;
            imin += m * (vt_rd_i16(x + 260 + 4 * j) + vt_rd_i16(x + 262 + 4 * j));
        }
        acc = fmaf((float)isum, vt_half_bits_to_f32(dh) * dx, acc);
        mins = fmaf((float)imin, vt_half_bits_to_f32(mh) * dx, mins);
    }
    return acc - mins;
}

/* Q4_K (plain layout) and Q5_K x Q8_K: ggml's x86 vec_dot_q4_K_q8_K and
 * vec_dot_q5_K_q8_K (kernels_intdot.c). Blocks: F16 d, F16 dmin,
 * scales[12], (Q5_K: qh[32]), qs[128]. */
VT_HDI float vt_dot_k45(const uint8_t *w, const uint8_t *x, int64_t nb, int five)
{
    float acc[8] = { 0 }, accm[4] = { 0 }, summs = 0.0f;
    const size_t wb = five ? 176 : 144;
    for (int64_t b = 0; b < nb; b++, w += wb, x += 292) {
        const uint16_t dh = vt_rd16(w), mh = vt_rd16(w + 2);
        const float dx = vt_bits_f32(vt_rd32(x));
        const uint8_t *sc = w + 4, *qh = w + 16, *qs = w + (five ? 48 : 16);
        const int8_t *q8 = (const int8_t *)(x + 4);
        int scale[8], min[8];
        for (int j = 0; j < 8; j++)
            vt_k4_scale_min(sc, j, &scale[j], &min[j]);
        int32_t lane[8] = { 0 };
        for (int e = 0; e < 256; e++) {
            const int j = e / 32, l = e % 32;
            int v = (qs[32 * (j / 2) + l] >> (4 * (j % 2))) & 0xf;
            if (five)
                v |= ((qh[l] >> j) & 1) << 4;
            lane[l / 4] += scale[j] * v * q8[e];
        }
        const float d = dx * vt_half_bits_to_f32(dh), dmin = -(dx * vt_half_bits_to_f32(mh));
        for (int m = 0; m < 8; m++)
            acc[m] = fmaf(d, (float)lane[m], acc[m]);
        if (five) {
            int32_t isum = 0;
            for (int j = 0; j < 8; j++)
                isum += min[j] * (vt_rd_i16(x + 260 + 4 * j) + vt_rd_i16(x + 262 + 4 * j));
            summs = fmaf(dmin, (float)isum, summs); /* ggml's build contracts it to an FMA */
        } else {
            for (int i = 0; i < 4; i++) {
                const int32_t p = min[2 * i] * (vt_rd_i16(x + 260 + 8 * i) + vt_rd_i16(x + 262 + 8 * i)) +
                                  min[2 * i + 1] * (vt_rd_i16(x + 264 + 8 * i) + vt_rd_i16(x + 266 + 8 * i));
                accm[i] = fmaf(dmin, (float)p, accm[i]);
            }
        }
    }
    if (five)
        return vt_hsum8(acc) + summs;
    return vt_hsum8(acc) + ((accm[0] + accm[2]) + (accm[1] + accm[3]));
}

/* The value of a 4-bit code: Q4_0 (q - 8), IQ4_NL (its table), MXFP4 (twice
 * the E2M1 value). */
#define VT_NIB_Q4_0 0
#define VT_NIB_IQ4_NL 1
#define VT_NIB_MXFP4 2

VT_HDI int vt_nib_value(int kind, int n, const vt_iq_grids *g)
{
    return kind == VT_NIB_Q4_0 ? n - 8 : kind == VT_NIB_IQ4_NL ? g->iq4nl[n] : vt_e2m1_x2(n);
}

/* Element j (0..31) of a 32-element nibble block: j in the low nibble of
 * byte j, j + 16 in the high nibble of byte j - 16. */
VT_HDI int vt_nib_code(const uint8_t *qs, int j) { return j < 16 ? qs[j] & 0xf : qs[j - 16] >> 4; }

/* IQ4_XS x Q8_K: ggml's x86 (AVX2) vec_dot_iq4_xs_q8_K. Block: F16 d,
 * scales_h (two high bits per 32), scales_l[4] (a low nibble per 32),
 * qs[128], each nibble an index into the IQ4_NL values. */
VT_HDI float vt_dot_iq4_xs(const uint8_t *w, const uint8_t *x, int64_t nb, const vt_iq_grids *g)
{
    float acc[8] = { 0 };
    for (int64_t b = 0; b < nb; b++, w += 136, x += 292) {
        const uint16_t dw = vt_rd16(w), sh = vt_rd16(w + 2);
        const float dx = vt_bits_f32(vt_rd32(x));
        const uint8_t *sl = w + 4, *qs = w + 8;
        const int8_t *q8 = (const int8_t *)(x + 4);
        int32_t lane[8] = { 0 };
        for (int k = 0; k < 8; k++, qs += 16, q8 += 32) {
            const int ls = (((sl[k / 2] >> 4 * (k % 2)) & 0xf) | (((sh >> 2 * k) & 3) << 4)) - 32;
            for (int j = 0; j < 16; j++) {
                lane[j / 4] += ls * g->iq4nl[qs[j] & 0xf] * q8[j];
                lane[(j + 16) / 4] += ls * g->iq4nl[qs[j] >> 4] * q8[j + 16];
            }
        }
        const float d = vt_half_bits_to_f32(dw) * dx;
        for (int m = 0; m < 8; m++)
            acc[m] = fmaf(d, (float)lane[m], acc[m]);
    }
    return vt_hsum8(acc);
}

/* Q4_0 x Q8_0, plain layout: ggml's x86 vec_dot_q4_0_q8_0, the Q8_0 lanes. */
VT_HDI float vt_dot_q4_0(const uint8_t *w, const uint8_t *x, int64_t nb)
{
    float acc[8] = { 0 };
    for (int64_t b = 0; b < nb; b++, w += 18, x += 34) {
        const float d = vt_half_bits_to_f32(vt_rd16(w)) * vt_half_bits_to_f32(vt_rd16(x));
        const int8_t *qx = (const int8_t *)(x + 2);
        for (int m = 0; m < 8; m++) {
            int32_t lane = 0;
            for (int k = 4 * m; k < 4 * m + 4; k++)
                lane += (vt_nib_code(w + 2, k) - 8) * qx[k];
            acc[m] = fmaf(d, (float)lane, acc[m]);
        }
    }
    return vt_hsum8(acc);
}

/* Q4_0, IQ4_NL and MXFP4 x Q8_0 in the repacked order (ggml_gemv_q4_0_8x8_q8_0
 * and its IQ4_NL and MXFP4 twins): each block one exact integer,
 * acc = fma(sum, d_w * d_x, acc) block after block (MXFP4: d_w the half
 * E8M0 scale, over the doubled E2M1 values). */
VT_HDI float vt_dot_nib_r8(const uint8_t *w, const uint8_t *x, int64_t nb, int kind, const vt_iq_grids *g)
{
    float acc = 0.0f;
    const int mx = kind == VT_NIB_MXFP4;
    for (int64_t b = 0; b < nb; b++, w += mx ? 17 : 18, x += 34) {
        const float dw = mx ? vt_e8m0_half(w[0]) : vt_half_bits_to_f32(vt_rd16(w));
        const uint8_t *qs = w + (mx ? 1 : 2);
        const int8_t *qx = (const int8_t *)(x + 2);
        int32_t sum = 0;
        for (int k = 0; k < 32; k++)
            sum += vt_nib_value(kind, vt_nib_code(qs, k), g) * qx[k];
        acc = fmaf((float)sum, dw * vt_half_bits_to_f32(vt_rd16(x)), acc);
    }
    return acc;
}

/* The 5-bit value of element j (0..31) of a Q5_0 / Q5_1 block: a nibble of
 * qs and bit j of qh. */
VT_HDI int vt_q5_value(const uint8_t *qs, uint32_t qh, int j)
{
    return vt_nib_code(qs, j) | (int)(((qh >> j) & 1u) << 4);
}

/* Q5_0 x Q8_0: ggml's x86 vec_dot_q5_0_q8_0, the Q8_0 lanes over value - 16. */
VT_HDI float vt_dot_q5_0(const uint8_t *w, const uint8_t *x, int64_t nb)
{
    float acc[8] = { 0 };
    for (int64_t b = 0; b < nb; b++, w += 22, x += 34) {
        const uint32_t qh = vt_rd32(w + 2);
        const float d = vt_half_bits_to_f32(vt_rd16(w)) * vt_half_bits_to_f32(vt_rd16(x));
        const int8_t *qx = (const int8_t *)(x + 2);
        for (int m = 0; m < 8; m++) {
            int32_t lane = 0;
            for (int k = 4 * m; k < 4 * m + 4; k++)
                lane += (vt_q5_value(w + 6, qh, k) - 16) * qx[k];
            acc[m] = fmaf(d, (float)lane, acc[m]);
        }
    }
    return vt_hsum8(acc);
}

/* Q4_1 / Q5_1 x Q8_1 (F16 d, F16 s = d * the block's sum, 32 x int8: 36
 * bytes): ggml's x86 vec_dot_q4_1_q8_1 / q5_1_q8_1: the lanes over the
 * unsigned values, fma(d_w * d_x, lane, acc), and the mins apart as a float
 * sum of m_w * s_x block after block; the product is hsum(acc) + that sum. */
VT_HDI float vt_dot_x_1(const uint8_t *w, const uint8_t *x, int64_t nb, int five)
{
    float acc[8] = { 0 }, summs = 0.0f;
    for (int64_t b = 0; b < nb; b++, w += five ? 24 : 20, x += 36) {
        const uint32_t qh = five ? vt_rd32(w + 4) : 0;
        const uint8_t *qs = w + (five ? 8 : 4);
        summs += vt_half_bits_to_f32(vt_rd16(w + 2)) * vt_half_bits_to_f32(vt_rd16(x + 2));
        const float d = vt_half_bits_to_f32(vt_rd16(w)) * vt_half_bits_to_f32(vt_rd16(x));
        const int8_t *qx = (const int8_t *)(x + 4);
        for (int m = 0; m < 8; m++) {
            int32_t lane = 0;
            for (int k = 4 * m; k < 4 * m + 4; k++)
                lane += (five ? vt_q5_value(qs, qh, k) : vt_nib_code(qs, k)) * qx[k];
            acc[m] = fmaf(d, (float)lane, acc[m]);
        }
    }
    return vt_hsum8(acc) + summs;
}

/* Q3_K x Q8_K: ggml's x86 (AVX2) vec_dot_q3_K_q8_K: the lanes by position
 * over (2 low bits - 4 where the hmask bit is clear) * (6-bit scale - 32),
 * fma(d_x * d_w, lane, acc). Block: hmask[32], qs[64], scales[12], F16 d. */
VT_HDI float vt_dot_q3_k(const uint8_t *w, const uint8_t *x, int64_t nb)
{
    float acc[8] = { 0 };
    for (int64_t b = 0; b < nb; b++, w += 110, x += 292) {
        const uint8_t *hm = w, *qs = w + 32, *s = w + 96;
        const uint16_t dw = vt_rd16(w + 108);
        const float dx = vt_bits_f32(vt_rd32(x));
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
        const float d = dx * vt_half_bits_to_f32(dw);
        for (int m = 0; m < 8; m++)
            acc[m] = fmaf(d, (float)lane[m], acc[m]);
    }
    return vt_hsum8(acc);
}

/* IQ4_NL and MXFP4 x Q8_0 in the plain layout: ggml's x86 vec_dot_iq4_nl_q8_0
 * and vec_dot_mxfp4_q8_0 take two blocks at a time into two accumulators
 * (the lanes by position, fma(d_w * d_x, lane, acc)), add them lane by lane
 * and sum as hsum_float_8; an odd last block is added as a float (fused). */
VT_HDI float vt_dot_nib_pair(const uint8_t *w, const uint8_t *x, int64_t nb, int kind, const vt_iq_grids *g)
{
    float acc[2][8] = { { 0 } };
    const int mx = kind == VT_NIB_MXFP4;
    for (int64_t b = 0; b < nb; b++, w += mx ? 17 : 18, x += 34) {
        const float dw = mx ? vt_e8m0_half(w[0]) : vt_half_bits_to_f32(vt_rd16(w));
        const uint8_t *qs = w + (mx ? 1 : 2);
        const int8_t *qx = (const int8_t *)(x + 2);
        const float d = vt_half_bits_to_f32(vt_rd16(x)) * dw;
        if (b + 1 == nb && nb % 2) {
            int32_t sum = 0;
            for (int k = 0; k < 32; k++)
                sum += vt_nib_value(kind, vt_nib_code(qs, k), g) * qx[k];
            float tail[8];
            for (int m = 0; m < 8; m++)
                tail[m] = acc[0][m] + acc[1][m];
            return fmaf(d, (float)sum, vt_hsum8(tail));
        }
        for (int m = 0; m < 8; m++) {
            int32_t lane = 0;
            for (int k = 4 * m; k < 4 * m + 4; k++)
                lane += vt_nib_value(kind, vt_nib_code(qs, k), g) * qx[k];
            acc[b % 2][m] = fmaf(d, (float)lane, acc[b % 2][m]);
        }
    }
    float sum[8];
    for (int m = 0; m < 8; m++)
        sum[m] = acc[0][m] + acc[1][m];
    return vt_hsum8(sum);
}

/* Q2_K x Q8_K. Block: scales[16] (a 4-bit scale and a 4-bit min per 16
 * elements), qs[64] (2 bits each), F16 d, F16 dmin; element e is bits
 * 2 * ((e % 128) / 32) of qs[32 * (e / 128) + e % 32].
 * Plain layout (ggml's x86 vec_dot_q2_K_q8_K): per superblock first
 * acc = fma(-(d_x * dmin_w), lane of mins * q8 sums, acc) (lane m: the 16-sums
 * 2m and 2m + 1), then acc = fma(d_x * d_w, lane by position, acc).
 * Repacked (ggml_gemv_q2_K_8x8_q8_K, AVX-512 CPUs): the Q4_K repacked form,
 * one exact integer per row for the values and one for the mins. */
VT_HDI int vt_q2_value(const uint8_t *qs, int e) { return (qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3; }

VT_HDI float vt_dot_q2_k(const uint8_t *w, const uint8_t *x, int64_t nb)
{
    float acc[8] = { 0 };
    for (int64_t b = 0; b < nb; b++, w += 84, x += 292) {
        const uint8_t *sc = w, *qs = w + 16;
        const float dx = vt_bits_f32(vt_rd32(x));
        const int8_t *q8 = (const int8_t *)(x + 4);
        const float d = dx * vt_half_bits_to_f32(vt_rd16(w + 80)), dmin = -(dx * vt_half_bits_to_f32(vt_rd16(w + 82)));
        for (int m = 0; m < 8; m++)
            acc[m] = fmaf(dmin,
                          (float)((sc[2 * m] >> 4) * vt_rd_i16(x + 260 + 4 * m) +
                                  (sc[2 * m + 1] >> 4) * vt_rd_i16(x + 262 + 4 * m)),
                          acc[m]);
        int32_t lane[8] = { 0 };
        for (int e = 0; e < 256; e++)
            lane[(e % 32) / 4] += (sc[e / 16] & 0xf) * vt_q2_value(qs, e) * q8[e];
        for (int m = 0; m < 8; m++)
            acc[m] = fmaf(d, (float)lane[m], acc[m]);
    }
    return vt_hsum8(acc);
}

VT_HDI float vt_dot_q2_k_r8(const uint8_t *w, const uint8_t *x, int64_t nb)
{
    float acc = 0.0f, mins = 0.0f;
    for (int64_t b = 0; b < nb; b++, w += 84, x += 292) {
        const uint8_t *sc = w, *qs = w + 16;
        const float dx = vt_bits_f32(vt_rd32(x));
        const int8_t *q8 = (const int8_t *)(x + 4);
        int32_t isum = 0, imin = 0;
        for (int e = 0; e < 256; e++)
            isum += (sc[e / 16] & 0xf) * vt_q2_value(qs, e) * q8[e];
        for (int g = 0; g < 16; g++)
            imin += (sc[g] >> 4) * vt_rd_i16(x + 260 + 2 * g);
        acc = fmaf((float)isum, vt_half_bits_to_f32(vt_rd16(w + 80)) * dx, acc);
        mins = fmaf((float)imin, vt_half_bits_to_f32(vt_rd16(w + 82)) * dx, mins);
    }
    return acc - mins;
}

/* TQ2_0 x Q8_K: ggml's x86 (AVX2) vec_dot_tq2_0_q8_K: the lanes by position
 * over the raw 2-bit values (0..2), each lane then less two of the
 * activation's 16-element sums (the -1 offset, taken off by lane rather than
 * by element: the total is the same, the lanes are ggml's), fused
 * acc = fma(lane, d_x * d_w, acc). Block: qs[64] (element 128 c + 32 f + b
 * in bits 2f of qs[32 c + b]), F16 d. */
VT_HDI float vt_dot_tq2_0(const uint8_t *w, const uint8_t *x, int64_t nb)
{
    float acc[8] = { 0 };
    for (int64_t b = 0; b < nb; b++, w += 66, x += 292) {
        const float dx = vt_bits_f32(vt_rd32(x));
        const int8_t *q8 = (const int8_t *)(x + 4);
        int32_t lane[8] = { 0 };
        for (int e = 0; e < 256; e++) {
            const int c = e / 128, f = (e % 128) / 32, l = e % 32;
            lane[l / 4] += ((w[32 * c + l] >> (2 * f)) & 3) * q8[e];
        }
        for (int m = 0; m < 8; m++)
            lane[m] -= vt_rd_i16(x + 260 + 4 * m) + vt_rd_i16(x + 262 + 4 * m);
        const float d = dx * vt_half_bits_to_f32(vt_rd16(w + 64));
        for (int m = 0; m < 8; m++)
            acc[m] = fmaf((float)lane[m], d, acc[m]);
    }
    return vt_hsum8(acc);
}

/* IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS and IQ3_S x Q8_K, as ggml's x86 (AVX2)
 * vec_dot_iq*_q8_K: the lanes by position over grid magnitude * sign * the
 * odd integer scale (2 s + 1), fma(d_w * d_x, lane, acc), the sum times the
 * type's constant (1/8, 1/8, 1/8, 1/4, 1). vt_iq_value gives element e
 * (0..255) of a block and its scale. IQ2_XXS: F16 d, then per 32 elements
 * four grid indices and a u32 of four 7-bit sign indices and the 4-bit
 * scale. IQ2_XS: F16 d, 32 u16 codes (9-bit grid index, 7-bit sign index),
 * scales[8], a 4-bit scale per 16 elements. */
VT_HDI void vt_iq_value(int type, const uint8_t *w, int e, const vt_iq_grids *gr, int *v, int *sc)
{
    const int g = e / 32, l = (e % 32) / 8, j = e % 8;
    int mag, neg;
    if (type == VT_TYPE_IQ2_XXS) {
        const uint8_t *q = w + 2 + 8 * g;
        const uint32_t aux = vt_rd32(q + 4);
        mag = gr->iq2xxs[q[l]][j];
        neg = (gr->iq2_signs[(aux >> (7 * l)) & 127] >> j) & 1;
        *sc = 2 * (int)(aux >> 28) + 1;
    } else if (type == VT_TYPE_IQ2_XS) {
        const uint16_t code = vt_rd16(w + 2 + 2 * (4 * g + l));
        mag = gr->iq2xs[code & 511][j];
        neg = (gr->iq2_signs[code >> 9] >> j) & 1;
        *sc = 2 * ((w[66 + g] >> (4 * (l / 2))) & 0xf) + 1;
    } else if (type == VT_TYPE_IQ2_S) {
        const uint8_t *qs = w + 2, *signs = w + 34, *qh = w + 66, *scales = w + 74;
        const unsigned idx = qs[4 * g + l] | (((unsigned)qh[g] << (8 - 2 * l)) & 0x300u);
        mag = gr->iq2s[idx][j];
        neg = (signs[4 * g + l] >> j) & 1;
        *sc = 2 * ((scales[g] >> (4 * (l / 2))) & 0xf) + 1;
    } else if (type == VT_TYPE_IQ3_XXS) {
        const uint32_t aux = vt_rd32(w + 66 + 4 * g);
        const uint8_t *q = w + 2 + 8 * g + 2 * l;
        mag = gr->iq3xxs[q[j / 4]][j % 4];
        neg = (gr->iq2_signs[(aux >> (7 * l)) & 127] >> j) & 1;
        *sc = 2 * (int)(aux >> 28) + 1;
    } else { /* IQ3_S */
        const uint8_t *qs = w + 2, *qh = w + 66, *signs = w + 74, *scales = w + 106;
        const unsigned h = qh[g];
        const uint8_t *q = qs + 8 * g + 2 * l;
        const unsigned idx = j < 4 ? q[0] | ((h << (8 - 2 * l)) & 256u) : q[1] | ((h << (7 - 2 * l)) & 256u);
        mag = gr->iq3s[idx][j % 4];
        neg = (signs[4 * g + l] >> j) & 1;
        *sc = 2 * ((scales[g / 2] >> (4 * (g % 2))) & 0xf) + 1;
    }
    *v = neg ? -mag : mag;
}

/* Block bytes and the constant of each grid type (vt_iq_value's). */
VT_HDI float vt_dot_iq_grid(const uint8_t *w, const uint8_t *x, int64_t nb, int type, const vt_iq_grids *gr)
{
    const int wb = type == VT_TYPE_IQ2_XXS ? 66 : type == VT_TYPE_IQ2_XS ? 74 : type == VT_TYPE_IQ2_S ? 82
                 : type == VT_TYPE_IQ3_XXS ? 98 : 110;
    const float post = type == VT_TYPE_IQ3_XXS ? 0.25f : type == VT_TYPE_IQ3_S ? 1.0f : 0.125f;
    float acc[8] = { 0 };
    for (int64_t b = 0; b < nb; b++, w += wb, x += 292) {
        const float dx = vt_bits_f32(vt_rd32(x));
        const int8_t *q8 = (const int8_t *)(x + 4);
        int32_t lane[8] = { 0 };
        for (int e = 0; e < 256; e++) {
            int v, sc;
            vt_iq_value(type, w, e, gr, &v, &sc);
            lane[(e % 32) / 4] += sc * v * q8[e];
        }
        const float d = vt_half_bits_to_f32(vt_rd16(w)) * dx;
        for (int m = 0; m < 8; m++)
            acc[m] = fmaf(d, (float)lane[m], acc[m]);
    }
    return post == 1.0f ? vt_hsum8(acc) : post * vt_hsum8(acc);
}

/* IQ1_S x Q8_K: ggml's x86 (AVX2) vec_dot_iq1_s_q8_K: the lanes by position
 * over the grid values (-1, 0, 1) * (2 s + 1), fma(d_x * d_w, lane, acc);
 * the delta term one exact integer per superblock (the 32-sums of the
 * activation times the delta's sign and the scale), fma'd into a float sum
 * (the compiler fuses ggml's accum1 += d * sumi1); the product is
 * hsum(acc) + delta * that sum. Block: F16 d, qs[32], 8 u16 qh. */
VT_HDI float vt_dot_iq1_s(const uint8_t *w, const uint8_t *x, int64_t nb, const vt_iq_grids *gr)
{
    float acc[8] = { 0 }, accum1 = 0.0f;
    for (int64_t b = 0; b < nb; b++, w += 50, x += 292) {
        const float dx = vt_bits_f32(vt_rd32(x));
        const uint8_t *qs = w + 2;
        const int8_t *q8 = (const int8_t *)(x + 4);
        int32_t lane[8] = { 0 }, sumi1 = 0;
        for (int g = 0; g < 8; g++) {
            const unsigned qh = vt_rd16(w + 34 + 2 * g);
            const int ls = 2 * ((qh >> 12) & 7) + 1;
            for (int l = 0; l < 4; l++) {
                const int8_t *grid = gr->iq1s[qs[4 * g + l] | (((qh >> (3 * l)) & 7) << 8)];
                for (int j = 0; j < 8; j++)
                    lane[(8 * l + j) / 4] += ls * grid[j] * q8[32 * g + 8 * l + j];
            }
            sumi1 += (vt_rd_i16(x + 260 + 4 * g) + vt_rd_i16(x + 262 + 4 * g)) * (qh & 0x8000 ? -1 : 1) * ls;
        }
        const float d = dx * vt_half_bits_to_f32(vt_rd16(w));
        for (int m = 0; m < 8; m++)
            acc[m] = fmaf(d, (float)lane[m], acc[m]);
        accum1 = fmaf(d, (float)sumi1, accum1);
    }
    return vt_hsum8(acc) + VT_IQ1S_DELTA * accum1;
}

/* IQ1_M x Q8_K: ggml's x86 (AVX2) vec_dot_iq1_m_q8_K: two sets of lanes by
 * position, the grid values and the delta signs (each times its 16-element
 * 3-bit scale, 2 s + 1), each fma(d_x * d, lane, acc) into its own
 * accumulator; the product is hsum(values) + delta * hsum(deltas). Block:
 * qs[32], qh[16], 4 u16 scales carrying the F16 super scale in their top
 * nibbles. */
VT_HDI float vt_dot_iq1_m(const uint8_t *w, const uint8_t *x, int64_t nb, const vt_iq_grids *gr)
{
    float acc1[8] = { 0 }, acc2[8] = { 0 };
    for (int64_t b = 0; b < nb; b++, w += 56, x += 292) {
        const uint8_t *qs = w, *qh = w + 32;
        const unsigned sc[4] = { vt_rd16(w + 48), vt_rd16(w + 50), vt_rd16(w + 52), vt_rd16(w + 54) };
        const float dx = vt_bits_f32(vt_rd32(x));
        const uint16_t dbits = (uint16_t)((sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0u) | ((sc[2] >> 4) & 0x0f00u) |
                                          (sc[3] & 0xf000u));
        const int8_t *q8 = (const int8_t *)(x + 4);
        int32_t lane1[8] = { 0 }, lane2[8] = { 0 };
        for (int g = 0; g < 8; g++) {
            const unsigned s = sc[g / 2] >> (6 * (g % 2));
            for (int l = 0; l < 4; l++) {
                const int ls = 2 * (int)((s >> (3 * (l / 2))) & 7) + 1;
                const unsigned h = (unsigned)qh[2 * g + l / 2] >> (4 * (l % 2));
                const int8_t *grid = gr->iq1s[qs[4 * g + l] | ((h & 7u) << 8)];
                const int delta = (h & 8u) ? -1 : 1;
                for (int j = 0; j < 8; j++) {
                    const int e = 8 * l + j, q = q8[32 * g + e];
                    lane1[e / 4] += ls * grid[j] * q;
                    lane2[e / 4] += ls * delta * q;
                }
            }
        }
        const float d = dx * vt_half_bits_to_f32(dbits);
        for (int m = 0; m < 8; m++) {
            acc1[m] = fmaf(d, (float)lane1[m], acc1[m]);
            acc2[m] = fmaf(d, (float)lane2[m], acc2[m]);
        }
    }
    return vt_hsum8(acc1) + VT_IQ1M_DELTA * vt_hsum8(acc2);
}

/* TQ1_0 x Q8_K: ggml's x86 (AVX2) vec_dot_tq1_0_q8_K, as TQ2_0 over base-3
 * digits (vt_trit): element 32 n + m of the first 160 is digit n of qs[m],
 * then 160 + 16 n + m digit n of qs[32 + m], then 240 + 4 n + j digit n of
 * qh[j] (each element's lane is still its position in its 32). Block:
 * qs[48], qh[4], F16 d. */
VT_HDI float vt_dot_tq1_0(const uint8_t *w, const uint8_t *x, int64_t nb)
{
    float acc[8] = { 0 };
    for (int64_t b = 0; b < nb; b++, w += 54, x += 292) {
        const float dx = vt_bits_f32(vt_rd32(x));
        const uint8_t *qs = w, *qh = w + 48;
        const int8_t *q8 = (const int8_t *)(x + 4);
        int32_t lane[8] = { 0 };
        for (int e = 0; e < 256; e++) {
            int v;
            if (e < 160)
                v = vt_trit(qs[e % 32], e / 32);
            else if (e < 240)
                v = vt_trit(qs[32 + (e - 160) % 16], (e - 160) / 16);
            else
                v = vt_trit(qh[(e - 240) % 4], (e - 240) / 4);
            lane[(e % 32) / 4] += v * q8[e];
        }
        for (int m = 0; m < 8; m++)
            lane[m] -= vt_rd_i16(x + 260 + 4 * m) + vt_rd_i16(x + 262 + 4 * m);
        const float d = dx * vt_half_bits_to_f32(vt_rd16(w + 52));
        for (int m = 0; m < 8; m++)
            acc[m] = fmaf((float)lane[m], d, acc[m]);
    }
    return vt_hsum8(acc);
}

/* Whether the integer product of type takes ggml's repacked order for a
 * tensor of tensor_rows rows (llama.cpp repacks these types when the rows
 * are a multiple of 8 on an x86 CPU, kernels_intdot.c). */
VT_HDI int vt_int_dot_r8(int type, int64_t tensor_rows)
{
    return (type == VT_TYPE_Q4_K || type == VT_TYPE_Q2_K || type == VT_TYPE_Q4_0 || type == VT_TYPE_IQ4_NL ||
            type == VT_TYPE_MXFP4) &&
           tensor_rows % 8 == 0;
}

/* The integer product of one weight row of type (nb blocks) with one
 * activation row in that type's activation blocks; r8: the repacked order
 * (vt_int_dot_r8). Returns 0 for a type with no integer product. */
VT_HDI float vt_int_dot(int type, int r8, const uint8_t *w, const uint8_t *x, int64_t nb, const vt_iq_grids *g)
{
    switch (type) {
    case VT_TYPE_Q8_0: return vt_dot_q8_0(w, x, nb);
    case VT_TYPE_Q6_K: return vt_dot_q6_k(w, x, nb);
    case VT_TYPE_Q4_K: return r8 ? vt_dot_q4_k_r8(w, x, nb) : vt_dot_k45(w, x, nb, 0);
    case VT_TYPE_Q5_K: return vt_dot_k45(w, x, nb, 1);
    case VT_TYPE_Q3_K: return vt_dot_q3_k(w, x, nb);
    case VT_TYPE_Q2_K: return r8 ? vt_dot_q2_k_r8(w, x, nb) : vt_dot_q2_k(w, x, nb);
    case VT_TYPE_IQ4_XS: return vt_dot_iq4_xs(w, x, nb, g);
    case VT_TYPE_TQ2_0: return vt_dot_tq2_0(w, x, nb);
    case VT_TYPE_TQ1_0: return vt_dot_tq1_0(w, x, nb);
    case VT_TYPE_IQ2_XXS:
    case VT_TYPE_IQ2_XS:
    case VT_TYPE_IQ2_S:
    case VT_TYPE_IQ3_XXS:
    case VT_TYPE_IQ3_S: return vt_dot_iq_grid(w, x, nb, type, g);
    case VT_TYPE_IQ1_S: return vt_dot_iq1_s(w, x, nb, g);
    case VT_TYPE_IQ1_M: return vt_dot_iq1_m(w, x, nb, g);
    case VT_TYPE_Q4_0: return r8 ? vt_dot_nib_r8(w, x, nb, VT_NIB_Q4_0, g) : vt_dot_q4_0(w, x, nb);
    case VT_TYPE_IQ4_NL:
        return r8 ? vt_dot_nib_r8(w, x, nb, VT_NIB_IQ4_NL, g) : vt_dot_nib_pair(w, x, nb, VT_NIB_IQ4_NL, g);
    case VT_TYPE_MXFP4:
        return r8 ? vt_dot_nib_r8(w, x, nb, VT_NIB_MXFP4, g) : vt_dot_nib_pair(w, x, nb, VT_NIB_MXFP4, g);
    case VT_TYPE_Q5_0: return vt_dot_q5_0(w, x, nb);
    case VT_TYPE_Q4_1: return vt_dot_x_1(w, x, nb, 0);
    case VT_TYPE_Q5_1: return vt_dot_x_1(w, x, nb, 1);
    default: return 0.0f;
    }
}


#endif
