/* Decoders for the plain, legacy (Q4_0..Q8_0), K-quant, ternary and MXFP4
 * storage types. Block layouts are the GGUF format's. Each decoder computes
 * every output with the same float operations, in the same order, as ggml's
 * reference dequantizers, so results are bit-identical; that is why some
 * expressions below are written in a particular shape (e.g. (d*sc)*q - m
 * rather than a fused or reassociated form). Source bytes are read one at a
 * time (little-endian), so src may have any alignment. */
#include "codec.h"
#include "codec_decoders.h"

#include <string.h>

/* Super-block size of the K, ternary and Q8_K families. */
#define QK_K 256

static inline uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }

static inline uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static inline float rd_half(const uint8_t *p) { return vt_f16_to_f32(rd16(p)); }

static inline float bits_to_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* ---- plain types ---- */

VT_DECODER(vt_decode_f32)
{
    const uint8_t *p = src;
    for (int64_t i = 0; i < n_blocks; i++)
        dst[i] = bits_to_f32(rd32(p + 4 * i));
}

VT_DECODER(vt_decode_f16)
{
    const uint8_t *p = src;
    for (int64_t i = 0; i < n_blocks; i++) {
        uint16_t h = rd16(p + 2 * i);
        float f = vt_f16_to_f32(h);
        /* ggml widens halves with a float multiply, which quiets a signalling
         * NaN; set the quiet bit so NaN payloads match too. */
        if ((h & 0x7c00u) == 0x7c00u && (h & 0x03ffu) != 0) {
            uint32_t u;
            memcpy(&u, &f, sizeof u);
            f = bits_to_f32(u | 0x00400000u);
        }
        dst[i] = f;
    }
}

VT_DECODER(vt_decode_bf16)
{
    const uint8_t *p = src;
    for (int64_t i = 0; i < n_blocks; i++)
        dst[i] = vt_bf16_to_f32(rd16(p + 2 * i));
}

/* ---- legacy 32-element blocks ----
 * Low nibbles of qs hold elements 0..15, high nibbles 16..31. */

VT_DECODER(vt_decode_q4_0) /* d:f16, qs[16] */
{
    const uint8_t *b = src;
    for (int64_t i = 0; i < n_blocks; i++, b += 18, dst += 32) {
        float d = rd_half(b);
        const uint8_t *qs = b + 2;
        for (int j = 0; j < 16; j++) {
            int x0 = (qs[j] & 0x0f) - 8;
            int x1 = (qs[j] >> 4) - 8;
            dst[j] = x0 * d;
            dst[j + 16] = x1 * d;
        }
    }
}

VT_DECODER(vt_decode_q4_1) /* d:f16, m:f16, qs[16] */
{
    const uint8_t *b = src;
    for (int64_t i = 0; i < n_blocks; i++, b += 20, dst += 32) {
        float d = rd_half(b);
        float m = rd_half(b + 2);
        const uint8_t *qs = b + 4;
        for (int j = 0; j < 16; j++) {
            int x0 = qs[j] & 0x0f;
            int x1 = qs[j] >> 4;
            dst[j] = x0 * d + m;
            dst[j + 16] = x1 * d + m;
        }
    }
}

VT_DECODER(vt_decode_q5_0) /* d:f16, qh:u32 (5th bits), qs[16] */
{
    const uint8_t *b = src;
    for (int64_t i = 0; i < n_blocks; i++, b += 22, dst += 32) {
        float d = rd_half(b);
        uint32_t qh = rd32(b + 2);
        const uint8_t *qs = b + 6;
        for (int j = 0; j < 16; j++) {
            int h0 = (int)((qh >> j) & 1u) << 4;
            int h1 = (int)((qh >> (j + 16)) & 1u) << 4;
            int x0 = ((qs[j] & 0x0f) | h0) - 16;
            int x1 = ((qs[j] >> 4) | h1) - 16;
            dst[j] = x0 * d;
            dst[j + 16] = x1 * d;
        }
    }
}

VT_DECODER(vt_decode_q5_1) /* d:f16, m:f16, qh:u32, qs[16] */
{
    const uint8_t *b = src;
    for (int64_t i = 0; i < n_blocks; i++, b += 24, dst += 32) {
        float d = rd_half(b);
        float m = rd_half(b + 2);
        uint32_t qh = rd32(b + 4);
        const uint8_t *qs = b + 8;
        for (int j = 0; j < 16; j++) {
            int h0 = (int)((qh >> j) & 1u) << 4;
            int h1 = (int)((qh >> (j + 16)) & 1u) << 4;
            int x0 = (qs[j] & 0x0f) | h0;
            int x1 = (qs[j] >> 4) | h1;
            dst[j] = x0 * d + m;
            dst[j + 16] = x1 * d + m;
        }
    }
}

VT_DECODER(vt_decode_q8_0) /* d:f16, qs:int8[32] */
{
    const uint8_t *b = src;
    for (int64_t i = 0; i < n_blocks; i++, b += 34, dst += 32) {
        float d = rd_half(b);
        for (int j = 0; j < 32; j++)
            dst[j] = (int8_t)b[2 + j] * d;
    }
}

/* ---- K-quants: 256-element super-blocks ---- */

VT_DECODER(vt_decode_q2_k) /* scales[16], qs[64], d:f16, dmin:f16 */
{
    const uint8_t *b = src;
    for (int64_t i = 0; i < n_blocks; i++, b += 84) {
        const uint8_t *scales = b;
        const uint8_t *q = b + 16;
        float d = rd_half(b + 80);
        float dmin = rd_half(b + 82);
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
                        *dst++ = dl * ((q[16 * k + l] >> shift) & 3) - ml;
                }
            }
        }
    }
}

VT_DECODER(vt_decode_q3_k) /* hmask[32], qs[64], scales[12], d:f16 */
{
    const uint8_t *b = src;
    for (int64_t i = 0; i < n_blocks; i++, b += 110) {
        const uint8_t *hm = b;
        const uint8_t *q = b + 32;
        const uint8_t *s = b + 96;
        float d_all = rd_half(b + 108);

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
            for (int shift = 0; shift < 8; shift += 2, m <<= 1) {
                for (int k = 0; k < 2; k++) {
                    float dl = d_all * scale[is++];
                    for (int l = 0; l < 16; l++) {
                        int idx = 16 * k + l;
                        int v = ((q[idx] >> shift) & 3) - ((hm[idx] & m) ? 0 : 4);
                        *dst++ = dl * v;
                    }
                }
            }
        }
    }
}

/* 6-bit scale and min of sub-block j (0..7) from the 12-byte packed field
 * shared by Q4_K and Q5_K. */
static inline void scale_min_k4(int j, const uint8_t *s, int *sc, int *mn)
{
    if (j < 4) {
        *sc = s[j] & 63;
        *mn = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 0xf) | ((s[j - 4] >> 6) << 4);
        *mn = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

VT_DECODER(vt_decode_q4_k) /* d:f16, dmin:f16, scales[12], qs[128] */
{
    const uint8_t *b = src;
    for (int64_t i = 0; i < n_blocks; i++, b += 144) {
        float d = rd_half(b);
        float dmin = rd_half(b + 2);
        const uint8_t *s = b + 4;
        const uint8_t *q = b + 16;
        /* Each 32 bytes of qs: low nibbles are one sub-block, high the next. */
        for (int j = 0; j < 8; j += 2, q += 32) {
            int sc, mn;
            scale_min_k4(j, s, &sc, &mn);
            float d1 = d * sc, m1 = dmin * mn;
            scale_min_k4(j + 1, s, &sc, &mn);
            float d2 = d * sc, m2 = dmin * mn;
            for (int l = 0; l < 32; l++)
                *dst++ = d1 * (q[l] & 0xf) - m1;
            for (int l = 0; l < 32; l++)
                *dst++ = d2 * (q[l] >> 4) - m2;
        }
    }
}

VT_DECODER(vt_decode_q5_k) /* d:f16, dmin:f16, scales[12], qh[32], qs[128] */
{
    const uint8_t *b = src;
    for (int64_t i = 0; i < n_blocks; i++, b += 176) {
        float d = rd_half(b);
        float dmin = rd_half(b + 2);
        const uint8_t *s = b + 4;
        const uint8_t *qh = b + 16;
        const uint8_t *q = b + 48;
        /* Sub-block j takes its 5th bit from bit j of qh[l]. */
        for (int j = 0; j < 8; j += 2, q += 32) {
            int sc, mn;
            scale_min_k4(j, s, &sc, &mn);
            float d1 = d * sc, m1 = dmin * mn;
            scale_min_k4(j + 1, s, &sc, &mn);
            float d2 = d * sc, m2 = dmin * mn;
            uint8_t u1 = (uint8_t)(1u << j), u2 = (uint8_t)(2u << j);
            for (int l = 0; l < 32; l++)
                *dst++ = d1 * ((q[l] & 0xf) + ((qh[l] & u1) ? 16 : 0)) - m1;
            for (int l = 0; l < 32; l++)
                *dst++ = d2 * ((q[l] >> 4) + ((qh[l] & u2) ? 16 : 0)) - m2;
        }
    }
}

VT_DECODER(vt_decode_q6_k) /* ql[128], qh[64], scales:int8[16], d:f16 */
{
    const uint8_t *b = src;
    for (int64_t i = 0; i < n_blocks; i++, b += 210) {
        const uint8_t *ql = b;
        const uint8_t *qh = b + 128;
        const uint8_t *sc = b + 192;
        float d = rd_half(b + 208);
        /* Each 128-element half: 64 bytes of ql (low nibbles / high nibbles)
         * and 32 bytes of qh (four 2-bit fields), scales 8 at a time. */
        for (int half = 0; half < 2; half++, ql += 64, qh += 32, sc += 8, dst += 128) {
            for (int l = 0; l < 32; l++) {
                int is = l / 16;
                int q1 = ((ql[l] & 0xf) | (((qh[l] >> 0) & 3) << 4)) - 32;
                int q2 = ((ql[l + 32] & 0xf) | (((qh[l] >> 2) & 3) << 4)) - 32;
                int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                dst[l] = d * (int8_t)sc[is] * q1;
                dst[l + 32] = d * (int8_t)sc[is + 2] * q2;
                dst[l + 64] = d * (int8_t)sc[is + 4] * q3;
                dst[l + 96] = d * (int8_t)sc[is + 6] * q4;
            }
        }
    }
}

VT_DECODER(vt_decode_q8_k) /* d:f32, qs:int8[256], bsums:int16[16] (unused) */
{
    const uint8_t *b = src;
    for (int64_t i = 0; i < n_blocks; i++, b += 292) {
        float d = bits_to_f32(rd32(b));
        for (int j = 0; j < QK_K; j++)
            *dst++ = d * (int8_t)b[4 + j];
    }
}

/* ---- ternary ---- */

/* Trit n of a base-3 byte stored as a fixed-point fraction: multiplying by
 * 3^n (mod 256) moves trit n to the top, and (q*3)>>8 extracts it. */
static inline int trit(uint8_t byte, int n)
{
    static const uint8_t pow3[5] = { 1, 3, 9, 27, 81 };
    uint8_t q = (uint8_t)(byte * pow3[n]);
    return ((int)q * 3) >> 8;
}

VT_DECODER(vt_decode_tq1_0) /* qs[48] (5 trits/byte), qh[4] (4 trits/byte), d:f16 */
{
    const uint8_t *b = src;
    for (int64_t i = 0; i < n_blocks; i++, b += 54) {
        const uint8_t *qs = b;
        const uint8_t *qh = b + 48;
        float d = rd_half(b + 52);
        /* qs[0..31] give 160 values, qs[32..47] 80, qh 16: order is trit
         * plane major within each run of bytes. */
        for (int n = 0; n < 5; n++)
            for (int m = 0; m < 32; m++)
                *dst++ = (float)(trit(qs[m], n) - 1) * d;
        for (int n = 0; n < 5; n++)
            for (int m = 0; m < 16; m++)
                *dst++ = (float)(trit(qs[32 + m], n) - 1) * d;
        for (int n = 0; n < 4; n++)
            for (int j = 0; j < 4; j++)
                *dst++ = (float)(trit(qh[j], n) - 1) * d;
    }
}

VT_DECODER(vt_decode_tq2_0) /* qs[64] (4 x 2-bit per byte), d:f16 */
{
    const uint8_t *b = src;
    for (int64_t i = 0; i < n_blocks; i++, b += 66) {
        float d = rd_half(b + 64);
        for (int j = 0; j < 64; j += 32)
            for (int shift = 0; shift < 8; shift += 2)
                for (int m = 0; m < 32; m++)
                    *dst++ = (float)(((b[j + m] >> shift) & 3) - 1) * d;
    }
}

/* ---- MXFP4: E8M0 shared exponent, E2M1 elements ---- */

/* E2M1 values doubled (so they are integers); the scale is halved to match. */
static const int8_t e2m1_x2[16] = { 0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12 };

/* 2^(e-128), i.e. half of the E8M0 value 2^(e-127). e = 0 and 1 give F32
 * subnormals; e = 255 gives 2^127 (E8M0 NaN is not special-cased, as ggml). */
static inline float e8m0_half(uint8_t e)
{
    uint32_t bits = e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23;
    return bits_to_f32(bits);
}

VT_DECODER(vt_decode_mxfp4) /* e:u8, qs[16] */
{
    const uint8_t *b = src;
    for (int64_t i = 0; i < n_blocks; i++, b += 17, dst += 32) {
        float d = e8m0_half(b[0]);
        const uint8_t *qs = b + 1;
        for (int j = 0; j < 16; j++) {
            dst[j] = e2m1_x2[qs[j] & 0x0f] * d;
            dst[j + 16] = e2m1_x2[qs[j] >> 4] * d;
        }
    }
}
