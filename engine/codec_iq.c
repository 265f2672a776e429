/* Decoders of the importance-matrix (IQ) storage types. Each reproduces the
 * reference dequantizer's arithmetic step for step (same operands, same
 * order, float throughout), so results are bit-identical with it. Blocks are
 * read byte by byte: the source may be unaligned, and all multi-byte fields
 * are little-endian. Codebooks live in codec_iq_tables.c. */
#include "codec.h"
#include "codec_decoders.h"
#include "codec_iq_tables.h"

#include <stdint.h>

static inline uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }

static inline uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static inline float half_at(const uint8_t *p) { return vt_f16_to_f32(rd16(p)); }

/* -1 where sign bit j is set. Multiplying by it (rather than negating) keeps
 * the reference's expression shape; the result is the same either way. */
static inline float sign_of(uint8_t bits, int j) { return (bits >> j) & 1u ? -1.0f : 1.0f; }

/* Eight elements of an IQ2 grid point: scale * magnitude * sign. */
static inline void put8_iq2(float *y, float scale, const uint8_t *grid, uint8_t signs)
{
    for (int j = 0; j < 8; j++)
        y[j] = scale * (float)grid[j] * sign_of(signs, j);
}

/* IQ2_XXS, 66 bytes: f16 d; 8 groups of 32 elements, each 8 bytes: four
 * grid indices, then a u32 holding four 7-bit sign indices and a 4-bit scale. */
VT_DECODER(vt_decode_iq2_xxs)
{
    const uint8_t *b = src;
    for (int64_t i = 0; i < n_blocks; i++, b += 66) {
        const float d = half_at(b);
        for (int g = 0; g < 8; g++) {
            const uint8_t *q = b + 2 + 8 * g;
            const uint32_t aux = rd32(q + 4);
            const float db = d * (0.5f + (float)(aux >> 28)) * 0.25f;
            for (int l = 0; l < 4; l++) {
                put8_iq2(dst, db, vt_iq2xxs_grid[q[l]], vt_iq2_signs[(aux >> (7 * l)) & 127]);
                dst += 8;
            }
        }
    }
}

/* IQ2_XS, 74 bytes: f16 d; 32 u16 codes (9-bit grid index, 7-bit sign index);
 * 8 scale bytes, one 4-bit scale per 16 elements. */
VT_DECODER(vt_decode_iq2_xs)
{
    const uint8_t *b = src;
    for (int64_t i = 0; i < n_blocks; i++, b += 74) {
        const float d = half_at(b);
        const uint8_t *scales = b + 66;
        for (int g = 0; g < 8; g++) {
            const float db[2] = {
                d * (0.5f + (float)(scales[g] & 0xf)) * 0.25f,
                d * (0.5f + (float)(scales[g] >> 4)) * 0.25f,
            };
            for (int l = 0; l < 4; l++) {
                const uint16_t code = rd16(b + 2 + 2 * (4 * g + l));
                put8_iq2(dst, db[l / 2], vt_iq2xs_grid[code & 511], vt_iq2_signs[code >> 9]);
                dst += 8;
            }
        }
    }
}

/* IQ2_S, 82 bytes: f16 d; 32 low index bytes; 32 explicit sign bytes;
 * 8 bytes of 2-bit index highs (one byte per group); 8 scale bytes. */
VT_DECODER(vt_decode_iq2_s)
{
    const uint8_t *b = src;
    for (int64_t i = 0; i < n_blocks; i++, b += 82) {
        const float d = half_at(b);
        const uint8_t *qs = b + 2, *signs = b + 34, *qh = b + 66, *scales = b + 74;
        for (int g = 0; g < 8; g++) {
            const float db[2] = {
                d * (0.5f + (float)(scales[g] & 0xf)) * 0.25f,
                d * (0.5f + (float)(scales[g] >> 4)) * 0.25f,
            };
            for (int l = 0; l < 4; l++) {
                const unsigned idx = qs[4 * g + l] | (((unsigned)qh[g] << (8 - 2 * l)) & 0x300u);
                put8_iq2(dst, db[l / 2], vt_iq2s_grid[idx], signs[4 * g + l]);
                dst += 8;
            }
        }
    }
}

/* Eight elements from two 4-wide IQ3 grid points sharing one sign byte. */
static inline void put8_iq3(float *y, float scale, const uint8_t *g1, const uint8_t *g2,
                            uint8_t signs)
{
    for (int j = 0; j < 4; j++) {
        y[j] = scale * (float)g1[j] * sign_of(signs, j);
        y[j + 4] = scale * (float)g2[j] * sign_of(signs, j + 4);
    }
}

/* IQ3_XXS, 98 bytes: f16 d; 64 grid index bytes; 8 u32, one per group:
 * four 7-bit sign indices and a 4-bit scale. */
VT_DECODER(vt_decode_iq3_xxs)
{
    const uint8_t *b = src;
    for (int64_t i = 0; i < n_blocks; i++, b += 98) {
        const float d = half_at(b);
        const uint8_t *qs = b + 2;
        for (int g = 0; g < 8; g++) {
            const uint32_t aux = rd32(b + 66 + 4 * g);
            const float db = d * (0.5f + (float)(aux >> 28)) * 0.5f;
            for (int l = 0; l < 4; l++) {
                const uint8_t *q = qs + 8 * g + 2 * l;
                put8_iq3(dst, db, vt_iq3xxs_grid[q[0]], vt_iq3xxs_grid[q[1]],
                         vt_iq2_signs[(aux >> (7 * l)) & 127]);
                dst += 8;
            }
        }
    }
}

/* IQ3_S, 110 bytes: f16 d; 64 low index bytes; 8 bytes of index high bits
 * (one byte per group, one bit per index); 32 sign bytes; 4 scale bytes, a
 * 4-bit odd-valued scale per group. */
VT_DECODER(vt_decode_iq3_s)
{
    const uint8_t *b = src;
    for (int64_t i = 0; i < n_blocks; i++, b += 110) {
        const float d = half_at(b);
        const uint8_t *qs = b + 2, *qh = b + 66, *signs = b + 74, *scales = b + 106;
        for (int g = 0; g < 8; g++) {
            const int ls = (scales[g / 2] >> (4 * (g % 2))) & 0xf;
            const float db = d * (float)(1 + 2 * ls);
            const unsigned h = qh[g];
            for (int l = 0; l < 4; l++) {
                const uint8_t *q = qs + 8 * g + 2 * l;
                const unsigned i1 = q[0] | ((h << (8 - 2 * l)) & 256u);
                const unsigned i2 = q[1] | ((h << (7 - 2 * l)) & 256u);
                put8_iq3(dst, db, vt_iq3s_grid[i1], vt_iq3s_grid[i2], signs[4 * g + l]);
                dst += 8;
            }
        }
    }
}

/* Eight elements of an IQ1 grid point: scale * (value + delta). */
static inline void put8_iq1(float *y, float scale, const int8_t *grid, float delta)
{
    for (int j = 0; j < 8; j++)
        y[j] = scale * ((float)grid[j] + delta);
}

/* IQ1_S, 50 bytes: f16 d; 32 low index bytes; 8 u16, one per group: four
 * 3-bit index highs, a 3-bit scale, and the delta's sign in the top bit. */
VT_DECODER(vt_decode_iq1_s)
{
    const uint8_t *b = src;
    for (int64_t i = 0; i < n_blocks; i++, b += 50) {
        const float d = half_at(b);
        const uint8_t *qs = b + 2;
        for (int g = 0; g < 8; g++) {
            const unsigned h = rd16(b + 34 + 2 * g);
            const float dl = d * (float)(2 * ((h >> 12) & 7) + 1);
            const float delta = (h & 0x8000u) ? -VT_IQ1S_DELTA : VT_IQ1S_DELTA;
            for (int l = 0; l < 4; l++) {
                const unsigned idx = qs[4 * g + l] | (((h >> (3 * l)) & 7u) << 8);
                put8_iq1(dst, dl, vt_iq1s_grid[idx], delta);
                dst += 8;
            }
        }
    }
}

/* IQ1_M, 56 bytes: 32 low index bytes; 16 qh bytes (per 8 elements: 3-bit
 * index high and a delta sign bit, two per byte); 4 u16 of scales holding
 * eight 3-bit scales per pair of groups in bits 0..11, with the f16 super
 * scale spread over the four top nibbles. The reference applies IQ1_S's
 * delta here (IQ1M_DELTA has the same value). */
VT_DECODER(vt_decode_iq1_m)
{
    const uint8_t *b = src;
    for (int64_t i = 0; i < n_blocks; i++, b += 56) {
        const uint8_t *qs = b, *qh = b + 32;
        uint16_t sc[4];
        for (int k = 0; k < 4; k++)
            sc[k] = rd16(b + 48 + 2 * k);
        const uint16_t dbits = (uint16_t)((sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0u) |
                                          ((sc[2] >> 4) & 0x0f00u) | (sc[3] & 0xf000u));
        const float d = vt_f16_to_f32(dbits);
        for (int g = 0; g < 8; g++) {
            const unsigned s = sc[g / 2] >> (6 * (g % 2));
            const float dl[2] = {
                d * (float)(2 * (s & 7) + 1),
                d * (float)(2 * ((s >> 3) & 7) + 1),
            };
            for (int l = 0; l < 4; l++) {
                /* Byte l/2 of the pair serves two 8-element runs: low nibble
                 * for the even run, high nibble for the odd one. */
                const unsigned h = (unsigned)qh[2 * g + l / 2] >> (4 * (l % 2));
                const unsigned idx = qs[4 * g + l] | ((h & 7u) << 8);
                const float delta = (h & 8u) ? -VT_IQ1S_DELTA : VT_IQ1S_DELTA;
                put8_iq1(dst, dl[l / 2], vt_iq1s_grid[idx], delta);
                dst += 8;
            }
        }
    }
}

/* IQ4_NL, 18 bytes: f16 d; 16 bytes of level indices, low nibbles are
 * elements 0..15, high nibbles 16..31. */
VT_DECODER(vt_decode_iq4_nl)
{
    const uint8_t *b = src;
    for (int64_t i = 0; i < n_blocks; i++, b += 18) {
        const float d = half_at(b);
        const uint8_t *qs = b + 2;
        for (int j = 0; j < 16; j++) {
            dst[j] = d * (float)vt_iq4nl_values[qs[j] & 0xf];
            dst[j + 16] = d * (float)vt_iq4nl_values[qs[j] >> 4];
        }
        dst += 32;
    }
}

/* IQ4_XS, 136 bytes: f16 d; u16 of 2-bit scale highs; 4 bytes of 4-bit scale
 * lows; 128 bytes of level indices, 16 per group of 32 laid out as IQ4_NL. */
VT_DECODER(vt_decode_iq4_xs)
{
    const uint8_t *b = src;
    for (int64_t i = 0; i < n_blocks; i++, b += 136) {
        const float d = half_at(b);
        const unsigned scales_h = rd16(b + 2);
        const uint8_t *scales_l = b + 4, *qs = b + 8;
        for (int g = 0; g < 8; g++) {
            const int ls = ((scales_l[g / 2] >> (4 * (g % 2))) & 0xf) |
                           (int)(((scales_h >> (2 * g)) & 3u) << 4);
            const float dl = d * (float)(ls - 32);
            for (int j = 0; j < 16; j++) {
                dst[j] = dl * (float)vt_iq4nl_values[qs[j] & 0xf];
                dst[j + 16] = dl * (float)vt_iq4nl_values[qs[j] >> 4];
            }
            dst += 32;
            qs += 16;
        }
    }
}
