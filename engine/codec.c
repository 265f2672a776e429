/* The codec registry: one row per ggml storage type. Block geometry is the
 * GGUF format's (a fact of the format); decoders are our own (codec_basic.c,
 * codec_iq.c). Types with a NULL decoder are known so that GGUF tensor
 * extents can be checked, but cannot be decoded. */
#include "codec.h"
#include "codec_decoders.h"

#include <math.h>
#include <string.h>
#include <strings.h>

static const vt_codec codecs[] = {
    /* type             name        elems bytes decoder */
    { VT_TYPE_F32,     "F32",      1,   4,   vt_decode_f32 },
    { VT_TYPE_F16,     "F16",      1,   2,   vt_decode_f16 },
    { VT_TYPE_BF16,    "BF16",     1,   2,   vt_decode_bf16 },
    { VT_TYPE_Q4_0,    "Q4_0",     32,  18,  vt_decode_q4_0 },
    { VT_TYPE_Q4_1,    "Q4_1",     32,  20,  vt_decode_q4_1 },
    { VT_TYPE_Q5_0,    "Q5_0",     32,  22,  vt_decode_q5_0 },
    { VT_TYPE_Q5_1,    "Q5_1",     32,  24,  vt_decode_q5_1 },
    { VT_TYPE_Q8_0,    "Q8_0",     32,  34,  vt_decode_q8_0 },
    { VT_TYPE_Q2_K,    "Q2_K",     256, 84,  vt_decode_q2_k },
    { VT_TYPE_Q3_K,    "Q3_K",     256, 110, vt_decode_q3_k },
    { VT_TYPE_Q4_K,    "Q4_K",     256, 144, vt_decode_q4_k },
    { VT_TYPE_Q5_K,    "Q5_K",     256, 176, vt_decode_q5_k },
    { VT_TYPE_Q6_K,    "Q6_K",     256, 210, vt_decode_q6_k },
    { VT_TYPE_Q8_K,    "Q8_K",     256, 292, vt_decode_q8_k },
    { VT_TYPE_IQ2_XXS, "IQ2_XXS",  256, 66,  vt_decode_iq2_xxs },
    { VT_TYPE_IQ2_XS,  "IQ2_XS",   256, 74,  vt_decode_iq2_xs },
    { VT_TYPE_IQ2_S,   "IQ2_S",    256, 82,  vt_decode_iq2_s },
    { VT_TYPE_IQ3_XXS, "IQ3_XXS",  256, 98,  vt_decode_iq3_xxs },
    { VT_TYPE_IQ3_S,   "IQ3_S",    256, 110, vt_decode_iq3_s },
    { VT_TYPE_IQ1_S,   "IQ1_S",    256, 50,  vt_decode_iq1_s },
    { VT_TYPE_IQ1_M,   "IQ1_M",    256, 56,  vt_decode_iq1_m },
    { VT_TYPE_IQ4_NL,  "IQ4_NL",   32,  18,  vt_decode_iq4_nl },
    { VT_TYPE_IQ4_XS,  "IQ4_XS",   256, 136, vt_decode_iq4_xs },
    { VT_TYPE_TQ1_0,   "TQ1_0",    256, 54,  vt_decode_tq1_0 },
    { VT_TYPE_TQ2_0,   "TQ2_0",    256, 66,  vt_decode_tq2_0 },
    { VT_TYPE_MXFP4,   "MXFP4",    32,  17,  vt_decode_mxfp4 },
    /* Known geometry, no decoder (not model weight codecs of this toolkit). */
    { VT_TYPE_Q8_1,    "Q8_1",     32,  36,  NULL },
    { VT_TYPE_I8,      "I8",       1,   1,   NULL },
    { VT_TYPE_I16,     "I16",      1,   2,   NULL },
    { VT_TYPE_I32,     "I32",      1,   4,   NULL },
    { VT_TYPE_I64,     "I64",      1,   8,   NULL },
    { VT_TYPE_F64,     "F64",      1,   8,   NULL },
    { VT_TYPE_NVFP4,   "NVFP4",    64,  36,  NULL },
    { VT_TYPE_Q1_0,    "Q1_0",     128, 18,  NULL },
    { VT_TYPE_Q2_0,    "Q2_0",     64,  18,  NULL },
};

enum { N_CODECS = (int)(sizeof codecs / sizeof codecs[0]) };

const vt_codec *vt_codec_by_type(int type)
{
    for (int i = 0; i < N_CODECS; i++)
        if ((int)codecs[i].type == type)
            return &codecs[i];
    return NULL;
}

const vt_codec *vt_codec_by_name(const char *name)
{
    for (int i = 0; i < N_CODECS; i++)
        if (strcasecmp(codecs[i].name, name) == 0)
            return &codecs[i];
    return NULL;
}

int vt_codec_count(void) { return N_CODECS; }

const vt_codec *vt_codec_at(int i) { return (i >= 0 && i < N_CODECS) ? &codecs[i] : NULL; }

size_t vt_codec_row_bytes(const vt_codec *c, int64_t n)
{
    if (!c || n < 0 || n % c->block_elems != 0)
        return 0;
    uint64_t blocks = (uint64_t)(n / c->block_elems);
    if (blocks != 0 && c->block_bytes > SIZE_MAX / blocks)
        return 0;
    return (size_t)blocks * c->block_bytes;
}

float vt_f16_to_f32(uint16_t h)
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
    union { uint32_t u; float f; } v = { bits };
    return v.f;
}

/* ======================================================================
 * F16 and FP8 E4M3 encoders (the engine's activation rounding and KV cache)
 * ====================================================================== */

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* v / 2^s rounded to nearest, ties to even (s >= 1). */
static uint32_t rne_shift(uint32_t v, int s)
{
    if (s >= 32)
        return 0; /* v < 2^24 here, below half a unit */
    uint32_t q = v >> s;
    uint32_t rem = v & ((1u << s) - 1u), half = 1u << (s - 1);
    if (rem > half || (rem == half && (q & 1u)))
        q++;
    return q;
}

/* Both narrow formats are encoded the same way: the target unit is
 * 2^(max(e, e_min) - mant_bits), the significand is rounded to that unit,
 * and ((E - e_min + 1) << mant_bits) + q is the code, the rounding carry
 * moving into the exponent by itself (and subnormals falling out at E =
 * e_min). */
uint16_t vt_f32_to_f16(float f)
{
    uint32_t u = f32_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) /* NaN: quiet, top payload bits kept (as F16C) */
        return (uint16_t)(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
    if (a >= 0x477ff000u) /* >= 65520 rounds past 65504: inf */
        return (uint16_t)(sign | 0x7c00u);
    if (a < 0x00800000u) /* F32 zero or subnormal: far below F16's unit */
        return sign;
    int e = (int)(a >> 23) - 127;
    uint32_t m = (a & 0x7fffffu) | 0x800000u;
    int E = e < -14 ? -14 : e;
    uint32_t q = rne_shift(m, 13 + (E - e));
    return (uint16_t)(sign | (uint32_t)(((E + 14) << 10) + (int)q));
}

uint8_t vt_fp8_e4m3_from_f32(float f)
{
    uint32_t u = f32_bits(f);
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
    uint32_t q = rne_shift(m, 20 + (E - e));
    return (uint8_t)(sign | (uint32_t)(((E + 6) << 3) + (int)q));
}

float vt_fp8_e4m3_to_f32(uint8_t c)
{
    float sign = (c & 0x80u) ? -1.0f : 1.0f;
    int ef = (c >> 3) & 15, mf = c & 7;
    if (ef == 15 && mf == 7)
        return copysignf(NAN, sign);
    if (ef == 0)
        return sign * ldexpf((float)mf, -9);
    return sign * ldexpf((float)(8 + mf), ef - 10);
}

/* Largest block of any codec: decode a block at a time into this when the
 * output is BF16, so no allocation is needed on the gather path. */
#define VT_MAX_BLOCK_ELEMS 256

static int check_row(const vt_codec *c, int64_t n, vt_error *err)
{
    if (!c)
        return vt_error_set(err, VT_EINPUT, "codec: unknown type");
    if (!c->decode_f32)
        return vt_error_set(err, VT_EINPUT, "codec %s: no decoder for this storage type", c->name);
    if (n < 0 || n % c->block_elems != 0)
        return vt_error_set(err, VT_EINPUT,
                            "codec %s: row of %lld elements: expected a multiple of %lld",
                            c->name, (long long)n, (long long)c->block_elems);
    return VT_OK;
}

static void decode_row_unchecked(const vt_codec *c, const void *src, int64_t n, vt_dtype out_dtype,
                                 void *dst)
{
    int64_t nb = n / c->block_elems;
    if (out_dtype == VT_DTYPE_F32) {
        c->decode_f32(src, (float *)dst, nb);
        return;
    }
    float tmp[VT_MAX_BLOCK_ELEMS];
    uint16_t *out = (uint16_t *)dst;
    const unsigned char *in = (const unsigned char *)src;
    int64_t be = c->block_elems;
    /* Batch small blocks so the decoder is called on up to 256 elements. */
    int64_t per_call = VT_MAX_BLOCK_ELEMS / be;
    for (int64_t b = 0; b < nb; b += per_call) {
        int64_t k = nb - b < per_call ? nb - b : per_call;
        c->decode_f32(in + (size_t)b * c->block_bytes, tmp, k);
        for (int64_t i = 0; i < k * be; i++)
            out[b * be + i] = vt_f32_to_bf16(tmp[i]);
    }
}

int vt_codec_decode_row(const vt_codec *c, const void *src, int64_t n, vt_dtype out_dtype,
                        void *dst, vt_error *err)
{
    int rc = check_row(c, n, err);
    if (rc)
        return rc;
    decode_row_unchecked(c, src, n, out_dtype, dst);
    return VT_OK;
}

int vt_codec_gather_rows(const vt_codec *c, const void *table, int64_t n_rows, int64_t row_elems,
                         const int64_t *ids, int64_t n_ids, vt_dtype out_dtype, void *out,
                         vt_error *err)
{
    int rc = check_row(c, row_elems, err);
    if (rc)
        return rc;
    if (n_rows < 0 || n_ids < 0)
        return vt_error_set(err, VT_EINPUT, "gather: negative row or id count");
    size_t row_bytes = vt_codec_row_bytes(c, row_elems);
    if (row_elems > 0 && row_bytes == 0)
        return vt_error_set(err, VT_EINPUT, "gather: row size overflows");
    /* Every id is validated before the first read, so a bad id never
     * leaves a half-written output behind. */
    for (int64_t i = 0; i < n_ids; i++)
        if (ids[i] < 0 || ids[i] >= n_rows)
            return vt_error_set(err, VT_EINPUT,
                                "gather: position %lld: id %lld: expected 0 <= id < %lld",
                                (long long)i, (long long)ids[i], (long long)n_rows);
    size_t out_row_bytes = (size_t)row_elems * (out_dtype == VT_DTYPE_F32 ? 4u : 2u);
    for (int64_t i = 0; i < n_ids; i++)
        decode_row_unchecked(c, (const unsigned char *)table + (size_t)ids[i] * row_bytes, row_elems,
                             out_dtype, (unsigned char *)out + (size_t)i * out_row_bytes);
    return VT_OK;
}
