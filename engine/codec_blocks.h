/* One block of every decodable storage type, decoded to F32: the single
 * source of the CPU decoders (codec.c loops over blocks with these) and of
 * the GPU gather (engine/hip/gather.hip calls the same functions in device
 * code), so the two compute the same values by construction.
 *
 * Each function computes every output with the same float operations, in
 * the same order, as ggml's reference dequantizers, so results are
 * bit-identical with them; that is why some expressions are written in a
 * particular shape (e.g. (d*sc)*q - m rather than a fused or reassociated
 * form). Builds must not contract a*b+c into a fused multiply-add: the CPU
 * build compiles with -ffp-contract=off, the device builds with -fmad=false
 * (nvcc) or -ffp-contract=off (hipcc). Block layouts are the GGUF format's;
 * bytes are read one at a time (little-endian), so a block may have any
 * alignment. Written in the common subset of C99 and C++ (no restrict, no
 * designated initializers, no static tables: the IQ codebooks come in
 * through vt_iq_grids, which on the device points at device memory). */
#ifndef VT_CODEC_BLOCKS_H
#define VT_CODEC_BLOCKS_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(__CUDACC__) || defined(__HIPCC__)
#define VT_HD __host__ __device__ static inline
#else
#define VT_HD static inline
#endif

/* Super-block size of the K, ternary, IQ and Q8_K families. */
#define VT_QK_K 256

/* The IQ codebooks (codec_iq_tables.h), wherever they live. */
typedef struct vt_iq_grids {
    const uint8_t (*iq2xxs)[8];
    const uint8_t (*iq2xs)[8];
    const uint8_t (*iq2s)[8];
    const uint8_t (*iq3xxs)[4];
    const uint8_t (*iq3s)[4];
    const int8_t (*iq1s)[8];
    const uint8_t *iq2_signs;
    const int8_t *iq4nl;
} vt_iq_grids;

#ifdef __cplusplus
extern "C" {
#endif
/* The codebooks as the CPU reads them (codec.c). */
const vt_iq_grids *vt_iq_host_grids(void);
#ifdef __cplusplus
}
#endif

/* Shift added to every IQ1 grid value before scaling; its sign is per group
 * (IQ1_M's delta has the same value). */
#ifndef VT_IQ1S_DELTA
#define VT_IQ1S_DELTA 0.125f
#endif

/* A block decoder: block at b, block_elems values to y. */
typedef void (*vt_block_fn)(const uint8_t *b, float *y, const vt_iq_grids *g);

VT_HD uint16_t vt_rd16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }

VT_HD uint32_t vt_rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

VT_HD float vt_bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

VT_HD uint32_t vt_f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* IEEE half -> float, exact for every input including subnormals and NaN
 * (integer arithmetic only, so host and device agree to the bit). */
VT_HD float vt_half_bits_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    uint32_t bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (mant << 13); /* inf / NaN, payload kept */
    } else if (exp != 0) {
        bits = sign | ((exp + 112u) << 23) | (mant << 13);
    } else if (mant == 0) {
        bits = sign;
    } else {
        /* Subnormal: normalize. Value is mant * 2^-24, exact in F32. */
        int e = -1;
        do {
            mant <<= 1;
            e++;
        } while ((mant & 0x400u) == 0);
        bits = sign | ((uint32_t)(112 - e) << 23) | ((mant & 0x3ffu) << 13);
    }
    return vt_bits_f32(bits);
}

/* Round-to-nearest-even F32 -> BF16; NaN stays NaN (quiet bit set), as ggml. */
VT_HD uint16_t vt_f32_bits_to_bf16(float f)
{
    uint32_t u = vt_f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 64);
    return (uint16_t)((u + (0x7fffu + ((u >> 16) & 1u))) >> 16);
}

/* v / 2^s rounded to nearest, ties to even (s >= 1). */
VT_HD uint32_t vt_rne_shift(uint32_t v, int s)
{
    if (s >= 32)
        return 0; /* v < 2^24 here, below half a unit */
    uint32_t q = v >> s;
    uint32_t rem = v & ((1u << s) - 1u), half = 1u << (s - 1);
    if (rem > half || (rem == half && (q & 1u)))
        q++;
    return q;
}

/* F32 to F16, round to nearest even, as F16C's vcvtps2ph (NaN quiet with
 * its top payload bits, overflow to inf, F32 subnormals to zero). */
VT_HD uint16_t vt_f32_to_f16_bits(float f)
{
    const uint32_t u = vt_f32_bits(f);
    const uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    const uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u)
        return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
    if (a >= 0x477ff000u) /* >= 65520 rounds past 65504: inf */
        return (uint16_t)(sign | 0x7c00u);
    if (a < 0x00800000u) /* F32 zero or subnormal: far below F16's unit */
        return sign;
    const int e = (int)(a >> 23) - 127;
    const uint32_t m = (a & 0x7fffffu) | 0x800000u;
    const int E = e < -14 ? -14 : e;
    const uint32_t q = vt_rne_shift(m, 13 + (E - e));
    return (uint16_t)(sign | (uint32_t)(((E + 14) << 10) + (int)q));
}

/* FP8 E4M3 encoding (codec.h's vt_fp8_e4m3_from_f32): round to nearest,
 * ties to even, saturate at +-448, NaN to the NaN code of its sign. */
VT_HD uint8_t vt_fp8_e4m3_encode(float f)
{
    uint32_t u = vt_f32_bits(f);
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
    uint32_t q = vt_rne_shift(m, 20 + (E - e));
    return (uint8_t)(sign | (uint32_t)(((E + 6) << 3) + (int)q));
}

VT_HD float vt_rd_half(const uint8_t *p) { return vt_half_bits_to_f32(vt_rd16(p)); }

/* ---- plain types (a block is one element) ---- */

VT_HD void vt_block_f32(const uint8_t *b, float *y, const vt_iq_grids *g)
{
    (void)g;
    y[0] = vt_bits_f32(vt_rd32(b));
}

VT_HD void vt_block_f16(const uint8_t *b, float *y, const vt_iq_grids *g)
{
    (void)g;
    uint16_t h = vt_rd16(b);
    float f = vt_half_bits_to_f32(h);
    /* ggml widens halves with a float multiply, which quiets a signalling
     * NaN; set the quiet bit so NaN payloads match too. */
    if ((h & 0x7c00u) == 0x7c00u && (h & 0x03ffu) != 0)
        f = vt_bits_f32(vt_f32_bits(f) | 0x00400000u);
    y[0] = f;
}

VT_HD void vt_block_bf16(const uint8_t *b, float *y, const vt_iq_grids *g)
{
    (void)g;
    y[0] = vt_bits_f32((uint32_t)vt_rd16(b) << 16);
}

/* ---- legacy 32-element blocks ----
 * Low nibbles of qs hold elements 0..15, high nibbles 16..31. */

VT_HD void vt_block_q4_0(const uint8_t *b, float *y, const vt_iq_grids *g) /* d:f16, qs[16] */
{
    (void)g;
    float d = vt_rd_half(b);
    const uint8_t *qs = b + 2;
    for (int j = 0; j < 16; j++) {
        int x0 = (qs[j] & 0x0f) - 8;
        int x1 = (qs[j] >> 4) - 8;
        y[j] = x0 * d;
        y[j + 16] = x1 * d;
    }
}

VT_HD void vt_block_q4_1(const uint8_t *b, float *y, const vt_iq_grids *g) /* d:f16, m:f16, qs[16] */
{
    (void)g;
    float d = vt_rd_half(b);
    float m = vt_rd_half(b + 2);
    const uint8_t *qs = b + 4;
    for (int j = 0; j < 16; j++) {
        int x0 = qs[j] & 0x0f;
        int x1 = qs[j] >> 4;
        y[j] = x0 * d + m;
        y[j + 16] = x1 * d + m;
    }
}

VT_HD void vt_block_q5_0(const uint8_t *b, float *y, const vt_iq_grids *g) /* d:f16, qh:u32, qs[16] */
{
    (void)g;
    float d = vt_rd_half(b);
    uint32_t qh = vt_rd32(b + 2);
    const uint8_t *qs = b + 6;
    for (int j = 0; j < 16; j++) {
        int h0 = (int)((qh >> j) & 1u) << 4;
        int h1 = (int)((qh >> (j + 16)) & 1u) << 4;
        int x0 = ((qs[j] & 0x0f) | h0) - 16;
        int x1 = ((qs[j] >> 4) | h1) - 16;
        y[j] = x0 * d;
        y[j + 16] = x1 * d;
    }
}

VT_HD void vt_block_q5_1(const uint8_t *b, float *y, const vt_iq_grids *g) /* d, m:f16, qh:u32, qs[16] */
{
    (void)g;
    float d = vt_rd_half(b);
    float m = vt_rd_half(b + 2);
    uint32_t qh = vt_rd32(b + 4);
    const uint8_t *qs = b + 8;
    for (int j = 0; j < 16; j++) {
        int h0 = (int)((qh >> j) & 1u) << 4;
        int h1 = (int)((qh >> (j + 16)) & 1u) << 4;
        int x0 = (qs[j] & 0x0f) | h0;
        int x1 = (qs[j] >> 4) | h1;
        y[j] = x0 * d + m;
        y[j + 16] = x1 * d + m;
    }
}

VT_HD void vt_block_q8_0(const uint8_t *b, float *y, const vt_iq_grids *g) /* d:f16, qs:int8[32] */
{
    (void)g;
    float d = vt_rd_half(b);
    for (int j = 0; j < 32; j++)
        y[j] = (int8_t)b[2 + j] * d;
}

/* ---- K-quants: 256-element super-blocks ---- */

VT_HD void vt_block_q2_k(const uint8_t *b, float *y, const vt_iq_grids *g) /* scales[16], qs[64], d, dmin */
{
    (void)g;
    const uint8_t *scales = b;
    const uint8_t *q = b + 16;
    float d = vt_rd_half(b + 80);
    float dmin = vt_rd_half(b + 82);
    int is = 0;
    /* Two halves of 128; within each, 4 bit-planes of 32 bytes, and each
     * plane is two 16-element sub-blocks with their own scale/min. */
    for (int half = 0; half < 2; half++, q += 32) {
        for (int shift = 0; shift < 8; shift += 2) {
            for (int k = 0; k < 2; k++) {
                uint8_t sc = scales[is++];
                float dl = d * (sc & 0xf);
                float ml = dmin * (sc >> 4);
                for (int l = 0; l < 16; l++)
                    *y++ = dl * ((q[16 * k + l] >> shift) & 3) - ml;
            }
        }
    }
}

VT_HD void vt_block_q3_k(const uint8_t *b, float *y, const vt_iq_grids *g) /* hmask[32], qs[64], scales[12], d */
{
    (void)g;
    const uint8_t *hm = b;
    const uint8_t *q = b + 32;
    const uint8_t *s = b + 96;
    float d_all = vt_rd_half(b + 108);
    /* 16 six-bit scales: low 4 bits from nibbles of s[0..7] (low nibbles
     * first), high 2 bits from 2-bit fields of s[8..11]. */
    int scale[16];
    for (int j = 0; j < 16; j++) {
        int lo = (s[j % 8] >> (4 * (j / 8))) & 0xf;
        int hi = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
        scale[j] = (lo | (hi << 4)) - 32;
    }
    int is = 0;
    uint8_t m = 1; /* hmask bit for the current bit-plane */
    for (int half = 0; half < 2; half++, q += 32) {
        for (int shift = 0; shift < 8; shift += 2, m = (uint8_t)(m << 1)) {
            for (int k = 0; k < 2; k++) {
                float dl = d_all * scale[is++];
                for (int l = 0; l < 16; l++) {
                    int idx = 16 * k + l;
                    int v = ((q[idx] >> shift) & 3) - ((hm[idx] & m) ? 0 : 4);
                    *y++ = dl * v;
                }
            }
        }
    }
}

/* 6-bit scale and min of sub-block j (0..7) from the 12-byte packed field
 * shared by Q4_K and Q5_K. */
VT_HD void vt_scale_min_k4(int j, const uint8_t *s, int *sc, int *mn)
{
    if (j < 4) {
        *sc = s[j] & 63;
        *mn = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 0xf) | ((s[j - 4] >> 6) << 4);
        *mn = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

VT_HD void vt_block_q4_k(const uint8_t *b, float *y, const vt_iq_grids *g) /* d, dmin, scales[12], qs[128] */
{
    (void)g;
    float d = vt_rd_half(b);
    float dmin = vt_rd_half(b + 2);
    const uint8_t *s = b + 4;
    const uint8_t *q = b + 16;
    /* Each 32 bytes of qs: low nibbles are one sub-block, high the next. */
    for (int j = 0; j < 8; j += 2, q += 32) {
        int sc, mn;
        vt_scale_min_k4(j, s, &sc, &mn);
        float d1 = d * sc, m1 = dmin * mn;
        vt_scale_min_k4(j + 1, s, &sc, &mn);
        float d2 = d * sc, m2 = dmin * mn;
        for (int l = 0; l < 32; l++)
            *y++ = d1 * (q[l] & 0xf) - m1;
        for (int l = 0; l < 32; l++)
            *y++ = d2 * (q[l] >> 4) - m2;
    }
}

VT_HD void vt_block_q5_k(const uint8_t *b, float *y, const vt_iq_grids *g) /* d, dmin, scales[12], qh[32], qs[128] */
{
    (void)g;
    float d = vt_rd_half(b);
    float dmin = vt_rd_half(b + 2);
    const uint8_t *s = b + 4;
    const uint8_t *qh = b + 16;
    const uint8_t *q = b + 48;
    /* Sub-block j takes its 5th bit from bit j of qh[l]. */
    for (int j = 0; j < 8; j += 2, q += 32) {
        int sc, mn;
        vt_scale_min_k4(j, s, &sc, &mn);
        float d1 = d * sc, m1 = dmin * mn;
        vt_scale_min_k4(j + 1, s, &sc, &mn);
        float d2 = d * sc, m2 = dmin * mn;
        uint8_t u1 = (uint8_t)(1u << j), u2 = (uint8_t)(2u << j);
        for (int l = 0; l < 32; l++)
            *y++ = d1 * ((q[l] & 0xf) + ((qh[l] & u1) ? 16 : 0)) - m1;
        for (int l = 0; l < 32; l++)
            *y++ = d2 * ((q[l] >> 4) + ((qh[l] & u2) ? 16 : 0)) - m2;
    }
}

VT_HD void vt_block_q6_k(const uint8_t *b, float *y, const vt_iq_grids *g) /* ql[128], qh[64], scales:int8[16], d */
{
    (void)g;
    const uint8_t *ql = b;
    const uint8_t *qh = b + 128;
    const uint8_t *sc = b + 192;
    float d = vt_rd_half(b + 208);
    /* Each 128-element half: 64 bytes of ql (low nibbles / high nibbles)
     * and 32 bytes of qh (four 2-bit fields), scales 8 at a time. */
    for (int half = 0; half < 2; half++, ql += 64, qh += 32, sc += 8, y += 128) {
        for (int l = 0; l < 32; l++) {
            int is = l / 16;
            int q1 = ((ql[l] & 0xf) | (((qh[l] >> 0) & 3) << 4)) - 32;
            int q2 = ((ql[l + 32] & 0xf) | (((qh[l] >> 2) & 3) << 4)) - 32;
            int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
            int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
            y[l] = d * (int8_t)sc[is] * q1;
            y[l + 32] = d * (int8_t)sc[is + 2] * q2;
            y[l + 64] = d * (int8_t)sc[is + 4] * q3;
            y[l + 96] = d * (int8_t)sc[is + 6] * q4;
        }
    }
}

VT_HD void vt_block_q8_k(const uint8_t *b, float *y, const vt_iq_grids *g) /* d:f32, qs:int8[256], bsums */
{
    (void)g;
    float d = vt_bits_f32(vt_rd32(b));
    for (int j = 0; j < VT_QK_K; j++)
        y[j] = d * (int8_t)b[4 + j];
}

/* ---- ternary ---- */

/* Trit n of a base-3 byte stored as a fixed-point fraction: multiplying by
 * 3^n (mod 256) moves trit n to the top, and (q*3)>>8 extracts it. */
VT_HD int vt_trit(uint8_t byte, int n)
{
    uint8_t p = 1;
    for (int k = 0; k < n; k++)
        p = (uint8_t)(p * 3);
    uint8_t q = (uint8_t)(byte * p);
    return ((int)q * 3) >> 8;
}

VT_HD void vt_block_tq1_0(const uint8_t *b, float *y, const vt_iq_grids *g) /* qs[48], qh[4], d:f16 */
{
    (void)g;
    const uint8_t *qs = b;
    const uint8_t *qh = b + 48;
    float d = vt_rd_half(b + 52);
    /* qs[0..31] give 160 values, qs[32..47] 80, qh 16: order is trit
     * plane major within each run of bytes. */
    for (int n = 0; n < 5; n++)
        for (int m = 0; m < 32; m++)
            *y++ = (float)(vt_trit(qs[m], n) - 1) * d;
    for (int n = 0; n < 5; n++)
        for (int m = 0; m < 16; m++)
            *y++ = (float)(vt_trit(qs[32 + m], n) - 1) * d;
    for (int n = 0; n < 4; n++)
        for (int j = 0; j < 4; j++)
            *y++ = (float)(vt_trit(qh[j], n) - 1) * d;
}

VT_HD void vt_block_tq2_0(const uint8_t *b, float *y, const vt_iq_grids *g) /* qs[64] (4 x 2-bit), d:f16 */
{
    (void)g;
    float d = vt_rd_half(b + 64);
    for (int j = 0; j < 64; j += 32)
        for (int shift = 0; shift < 8; shift += 2)
            for (int m = 0; m < 32; m++)
                *y++ = (float)(((b[j + m] >> shift) & 3) - 1) * d;
}

/* ---- MXFP4: E8M0 shared exponent, E2M1 elements ---- */

/* E2M1 value of code c, doubled (so it is an integer); the scale is halved
 * to match: 0, 1, 2, 3, 4, 6, 8, 12 and their negatives. */
VT_HD int vt_e2m1_x2(int c)
{
    const int m = c & 7;
    const int v = m < 4 ? m : m == 4 ? 4 : m == 5 ? 6 : m == 6 ? 8 : 12;
    return (c & 8) ? -v : v;
}

/* 2^(e-128), i.e. half of the E8M0 value 2^(e-127). e = 0 and 1 give F32
 * subnormals; e = 255 gives 2^127 (E8M0 NaN is not special-cased, as ggml). */
VT_HD float vt_e8m0_half(uint8_t e)
{
    uint32_t bits = e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23;
    return vt_bits_f32(bits);
}

VT_HD void vt_block_mxfp4(const uint8_t *b, float *y, const vt_iq_grids *g) /* e:u8, qs[16] */
{
    (void)g;
    float d = vt_e8m0_half(b[0]);
    const uint8_t *qs = b + 1;
    for (int j = 0; j < 16; j++) {
        y[j] = vt_e2m1_x2(qs[j] & 0x0f) * d;
        y[j + 16] = vt_e2m1_x2(qs[j] >> 4) * d;
    }
}

/* ---- importance-matrix (IQ) types ---- */

/* -1 where sign bit j is set. Multiplying by it (rather than negating) keeps
 * the reference's expression shape; the result is the same either way. */
VT_HD float vt_sign_of(uint8_t bits, int j) { return (bits >> j) & 1u ? -1.0f : 1.0f; }

/* Eight elements of an IQ2 grid point: scale * magnitude * sign. */
VT_HD void vt_put8_iq2(float *y, float scale, const uint8_t *grid, uint8_t signs)
{
    for (int j = 0; j < 8; j++)
        y[j] = scale * (float)grid[j] * vt_sign_of(signs, j);
}

/* IQ2_XXS, 66 bytes: f16 d; 8 groups of 32 elements, each 8 bytes: four
 * grid indices, then a u32 holding four 7-bit sign indices and a 4-bit scale. */
VT_HD void vt_block_iq2_xxs(const uint8_t *b, float *y, const vt_iq_grids *g)
{
    const float d = vt_rd_half(b);
    for (int k = 0; k < 8; k++) {
        const uint8_t *q = b + 2 + 8 * k;
        const uint32_t aux = vt_rd32(q + 4);
        const float db = d * (0.5f + (float)(aux >> 28)) * 0.25f;
        for (int l = 0; l < 4; l++, y += 8)
            vt_put8_iq2(y, db, g->iq2xxs[q[l]], g->iq2_signs[(aux >> (7 * l)) & 127]);
    }
}

/* IQ2_XS, 74 bytes: f16 d; 32 u16 codes (9-bit grid index, 7-bit sign index);
 * 8 scale bytes, one 4-bit scale per 16 elements. */
VT_HD void vt_block_iq2_xs(const uint8_t *b, float *y, const vt_iq_grids *g)
{
    const float d = vt_rd_half(b);
    const uint8_t *scales = b + 66;
    for (int k = 0; k < 8; k++) {
        float db[2];
        db[0] = d * (0.5f + (float)(scales[k] & 0xf)) * 0.25f;
        db[1] = d * (0.5f + (float)(scales[k] >> 4)) * 0.25f;
        for (int l = 0; l < 4; l++, y += 8) {
            const uint16_t code = vt_rd16(b + 2 + 2 * (4 * k + l));
            vt_put8_iq2(y, db[l / 2], g->iq2xs[code & 511], g->iq2_signs[code >> 9]);
        }
    }
}

/* IQ2_S, 82 bytes: f16 d; 32 low index bytes; 32 explicit sign bytes;
 * 8 bytes of 2-bit index highs (one byte per group); 8 scale bytes. */
VT_HD void vt_block_iq2_s(const uint8_t *b, float *y, const vt_iq_grids *g)
{
    const float d = vt_rd_half(b);
    const uint8_t *qs = b + 2, *signs = b + 34, *qh = b + 66, *scales = b + 74;
    for (int k = 0; k < 8; k++) {
        float db[2];
        db[0] = d * (0.5f + (float)(scales[k] & 0xf)) * 0.25f;
        db[1] = d * (0.5f + (float)(scales[k] >> 4)) * 0.25f;
        for (int l = 0; l < 4; l++, y += 8) {
            const unsigned idx = qs[4 * k + l] | (((unsigned)qh[k] << (8 - 2 * l)) & 0x300u);
            vt_put8_iq2(y, db[l / 2], g->iq2s[idx], signs[4 * k + l]);
        }
    }
}

/* Eight elements from two 4-wide IQ3 grid points sharing one sign byte. */
VT_HD void vt_put8_iq3(float *y, float scale, const uint8_t *g1, const uint8_t *g2, uint8_t signs)
{
    for (int j = 0; j < 4; j++) {
        y[j] = scale * (float)g1[j] * vt_sign_of(signs, j);
        y[j + 4] = scale * (float)g2[j] * vt_sign_of(signs, j + 4);
    }
}

/* IQ3_XXS, 98 bytes: f16 d; 64 grid index bytes; 8 u32, one per group:
 * four 7-bit sign indices and a 4-bit scale. */
VT_HD void vt_block_iq3_xxs(const uint8_t *b, float *y, const vt_iq_grids *g)
{
    const float d = vt_rd_half(b);
    const uint8_t *qs = b + 2;
    for (int k = 0; k < 8; k++) {
        const uint32_t aux = vt_rd32(b + 66 + 4 * k);
        const float db = d * (0.5f + (float)(aux >> 28)) * 0.5f;
        for (int l = 0; l < 4; l++, y += 8) {
            const uint8_t *q = qs + 8 * k + 2 * l;
            vt_put8_iq3(y, db, g->iq3xxs[q[0]], g->iq3xxs[q[1]], g->iq2_signs[(aux >> (7 * l)) & 127]);
        }
    }
}

/* IQ3_S, 110 bytes: f16 d; 64 low index bytes; 8 bytes of index high bits
 * (one byte per group, one bit per index); 32 sign bytes; 4 scale bytes, a
 * 4-bit odd-valued scale per group. */
VT_HD void vt_block_iq3_s(const uint8_t *b, float *y, const vt_iq_grids *g)
{
    const float d = vt_rd_half(b);
    const uint8_t *qs = b + 2, *qh = b + 66, *signs = b + 74, *scales = b + 106;
    for (int k = 0; k < 8; k++) {
        const int ls = (scales[k / 2] >> (4 * (k % 2))) & 0xf;
        const float db = d * (float)(1 + 2 * ls);
        const unsigned h = qh[k];
        for (int l = 0; l < 4; l++, y += 8) {
            const uint8_t *q = qs + 8 * k + 2 * l;
            const unsigned i1 = q[0] | ((h << (8 - 2 * l)) & 256u);
            const unsigned i2 = q[1] | ((h << (7 - 2 * l)) & 256u);
            vt_put8_iq3(y, db, g->iq3s[i1], g->iq3s[i2], signs[4 * k + l]);
        }
    }
}

/* Eight elements of an IQ1 grid point: scale * (value + delta). */
VT_HD void vt_put8_iq1(float *y, float scale, const int8_t *grid, float delta)
{
    for (int j = 0; j < 8; j++)
        y[j] = scale * ((float)grid[j] + delta);
}

/* IQ1_S, 50 bytes: f16 d; 32 low index bytes; 8 u16, one per group: four
 * 3-bit index highs, a 3-bit scale, and the delta's sign in the top bit. */
VT_HD void vt_block_iq1_s(const uint8_t *b, float *y, const vt_iq_grids *g)
{
    const float d = vt_rd_half(b);
    const uint8_t *qs = b + 2;
    for (int k = 0; k < 8; k++) {
        const unsigned h = vt_rd16(b + 34 + 2 * k);
        const float dl = d * (float)(2 * ((h >> 12) & 7) + 1);
        const float delta = (h & 0x8000u) ? -VT_IQ1S_DELTA : VT_IQ1S_DELTA;
        for (int l = 0; l < 4; l++, y += 8) {
            const unsigned idx = qs[4 * k + l] | (((h >> (3 * l)) & 7u) << 8);
            vt_put8_iq1(y, dl, g->iq1s[idx], delta);
        }
    }
}

/* IQ1_M, 56 bytes: 32 low index bytes; 16 qh bytes (per 8 elements: 3-bit
 * index high and a delta sign bit, two per byte); 4 u16 of scales holding
 * eight 3-bit scales per pair of groups in bits 0..11, with the f16 super
 * scale spread over the four top nibbles. The reference applies IQ1_S's
 * delta here (IQ1M_DELTA has the same value). */
VT_HD void vt_block_iq1_m(const uint8_t *b, float *y, const vt_iq_grids *g)
{
    const uint8_t *qs = b, *qh = b + 32;
    uint16_t sc[4];
    for (int k = 0; k < 4; k++)
        sc[k] = vt_rd16(b + 48 + 2 * k);
    const uint16_t dbits = (uint16_t)((sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0u) | ((sc[2] >> 4) & 0x0f00u) |
                                      (sc[3] & 0xf000u));
    const float d = vt_half_bits_to_f32(dbits);
    for (int k = 0; k < 8; k++) {
        const unsigned s = (unsigned)sc[k / 2] >> (6 * (k % 2));
        float dl[2];
        dl[0] = d * (float)(2 * (s & 7) + 1);
        dl[1] = d * (float)(2 * ((s >> 3) & 7) + 1);
        for (int l = 0; l < 4; l++, y += 8) {
            /* Byte l/2 of the pair serves two 8-element runs: low nibble
             * for the even run, high nibble for the odd one. */
            const unsigned h = (unsigned)qh[2 * k + l / 2] >> (4 * (l % 2));
            const unsigned idx = qs[4 * k + l] | ((h & 7u) << 8);
            const float delta = (h & 8u) ? -VT_IQ1S_DELTA : VT_IQ1S_DELTA;
            vt_put8_iq1(y, dl[l / 2], g->iq1s[idx], delta);
        }
    }
}

/* IQ4_NL, 18 bytes: f16 d; 16 bytes of level indices, low nibbles are
 * elements 0..15, high nibbles 16..31. */
VT_HD void vt_block_iq4_nl(const uint8_t *b, float *y, const vt_iq_grids *g)
{
    const float d = vt_rd_half(b);
    const uint8_t *qs = b + 2;
    for (int j = 0; j < 16; j++) {
        y[j] = d * (float)g->iq4nl[qs[j] & 0xf];
        y[j + 16] = d * (float)g->iq4nl[qs[j] >> 4];
    }
}

/* IQ4_XS, 136 bytes: f16 d; u16 of 2-bit scale highs; 4 bytes of 4-bit scale
 * lows; 128 bytes of level indices, 16 per group of 32 laid out as IQ4_NL. */
VT_HD void vt_block_iq4_xs(const uint8_t *b, float *y, const vt_iq_grids *g)
{
    const float d = vt_rd_half(b);
    const unsigned scales_h = vt_rd16(b + 2);
    const uint8_t *scales_l = b + 4, *qs = b + 8;
    for (int k = 0; k < 8; k++, y += 32, qs += 16) {
        const int ls = ((scales_l[k / 2] >> (4 * (k % 2))) & 0xf) | (int)(((scales_h >> (2 * k)) & 3u) << 4);
        const float dl = d * (float)(ls - 32);
        for (int j = 0; j < 16; j++) {
            y[j] = dl * (float)g->iq4nl[qs[j] & 0xf];
            y[j + 16] = dl * (float)g->iq4nl[qs[j] >> 4];
        }
    }
}

#endif
