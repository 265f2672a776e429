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

#endif
