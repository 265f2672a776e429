/* The codec table: one row per ggml storage type, indexed by type, holding
 * every fact about it that vt uses (geometry, decoders, dot type, file type,
 * whether it can be a matrix weight). Decoders are our own: each type's
 * block function (codec_blocks.h, shared with the GPU gather) looped over a
 * run of blocks; types with a NULL decoder are known so that GGUF tensor
 * extents can be checked, but cannot be decoded. */
#include "codec.h"
#include "codec_blocks.h"
#include "codec_iq_tables.h"

#include <math.h>
#include <string.h>
#include <strings.h>

/* The IQ codebooks where the CPU reads them. */
static const vt_iq_grids host_grids = {
    vt_iq2xxs_grid, vt_iq2xs_grid, vt_iq2s_grid, vt_iq3xxs_grid, vt_iq3s_grid, vt_iq1s_grid, vt_iq2_signs,
    vt_iq4nl_values,
};

const vt_iq_grids *vt_iq_host_grids(void) { return &host_grids; }

static const vt_codec codecs[VT_TYPE_COUNT];

/* Both decoders of a type: its block function (codec_blocks.h) over the
 * blocks of a run, to F32, and to BF16 (each block's F32 values rounded to
 * nearest even). */
#define DECODERS(T, blk)                                                                            \
    static void decode_##blk(const void *restrict src, float *restrict dst, int64_t n_blocks)      \
    {                                                                                               \
        const uint8_t *b = (const uint8_t *)src;                                                    \
        const int64_t be = codecs[VT_TYPE_##T].block_elems;                                        \
        const size_t bb = codecs[VT_TYPE_##T].block_bytes;                                         \
        for (int64_t i = 0; i < n_blocks; i++)                                                      \
            vt_block_##blk(b + (size_t)i * bb, dst + i * be, &host_grids);                         \
    }                                                                                               \
    static void decode_##blk##_bf16(const void *restrict src, uint16_t *restrict dst, int64_t n_blocks) \
    {                                                                                               \
        const uint8_t *b = (const uint8_t *)src;                                                    \
        const int64_t be = codecs[VT_TYPE_##T].block_elems;                                        \
        const size_t bb = codecs[VT_TYPE_##T].block_bytes;                                         \
        float tmp[VT_QK_K];                                                                         \
        for (int64_t i = 0; i < n_blocks; i++) {                                                    \
            vt_block_##blk(b + (size_t)i * bb, tmp, &host_grids);                                  \
            for (int64_t j = 0; j < be; j++)                                                        \
                dst[i * be + j] = vt_f32_bits_to_bf16(tmp[j]);                                      \
        }                                                                                           \
    }
DECODERS(F32, f32)
DECODERS(F16, f16)
DECODERS(BF16, bf16)
DECODERS(Q4_0, q4_0)
DECODERS(Q4_1, q4_1)
DECODERS(Q5_0, q5_0)
DECODERS(Q5_1, q5_1)
DECODERS(Q8_0, q8_0)
DECODERS(Q2_K, q2_k)
DECODERS(Q3_K, q3_k)
DECODERS(Q4_K, q4_k)
DECODERS(Q5_K, q5_k)
DECODERS(Q6_K, q6_k)
DECODERS(Q8_K, q8_k)
DECODERS(IQ2_XXS, iq2_xxs)
DECODERS(IQ2_XS, iq2_xs)
DECODERS(IQ2_S, iq2_s)
DECODERS(IQ3_XXS, iq3_xxs)
DECODERS(IQ3_S, iq3_s)
DECODERS(IQ1_S, iq1_s)
DECODERS(IQ1_M, iq1_m)
DECODERS(IQ4_NL, iq4_nl)
DECODERS(IQ4_XS, iq4_xs)
DECODERS(TQ1_0, tq1_0)
DECODERS(TQ2_0, tq2_0)
DECODERS(MXFP4, mxfp4)

/* A decodable row: block geometry (the GGUF format's), both decoders, the
 * activation its matrix products meet, llama.cpp's file type (-1: none),
 * whether it can be a matrix weight. Each ROW and SIZE_ONLY takes one
 * __COUNTER__ value, so that the rows can be counted below. */
enum { ROW_BASE = __COUNTER__ };
#define ROW(T, blk, be, bb, act_, ftype, weight)                                                    \
    [VT_TYPE_##T] = { .type = VT_TYPE_##T, .name = #T, .block_elems = be, .block_bytes = bb,        \
                      .decode_f32 = decode_##blk, .decode_bf16 = decode_##blk##_bf16, .act = act_,  \
                      .gguf_file_type = ftype, .matrix_weight = weight + 0 * __COUNTER__ }
/* Known geometry, no decoder: GGUF tensor extents can be checked, nothing
 * decoded (not model weight codecs of this toolkit). */
#define SIZE_ONLY(T, be, bb)                                                                        \
    [VT_TYPE_##T] = { .type = VT_TYPE_##T, .name = #T, .block_elems = be, .block_bytes = bb,        \
                      .act = VT_ACT_F32, .gguf_file_type = -1 + 0 * __COUNTER__ }

static const vt_codec codecs[VT_TYPE_COUNT] = {
    /*  type     block     elems bytes activation  file type  weight */
    ROW(F32,     f32,               1,   4,   VT_ACT_F32,  0,  1),
    ROW(F16,     f16,               1,   2,   VT_ACT_F16,  1,  1),
    ROW(Q4_0,    q4_0,              32,  18,  VT_ACT_Q8_0, 2,  1),
    ROW(Q4_1,    q4_1,              32,  20,  VT_ACT_Q8_1, 3,  1),
    ROW(Q5_0,    q5_0,              32,  22,  VT_ACT_Q8_0, 8,  1),
    ROW(Q5_1,    q5_1,              32,  24,  VT_ACT_Q8_1, 9,  1),
    ROW(Q8_0,    q8_0,              32,  34,  VT_ACT_Q8_0, 7,  1),
    ROW(Q2_K,    q2_k,              256, 84,  VT_ACT_Q8_K, 10, 1),
    ROW(Q3_K,    q3_k,              256, 110, VT_ACT_Q8_K, 11, 1),
    ROW(Q4_K,    q4_k,              256, 144, VT_ACT_Q8_K, 14, 1),
    ROW(Q5_K,    q5_k,              256, 176, VT_ACT_Q8_K, 16, 1),
    ROW(Q6_K,    q6_k,              256, 210, VT_ACT_Q8_K, 18, 1),
    /* ggml's activation type: it has no weight kernel, llama.cpp aborts in
     * the first product (the engine multiplies it in F32). */
    ROW(Q8_K,    q8_k,              256, 292, VT_ACT_F32,  -1, 0),
    ROW(IQ2_XXS, iq2_xxs,           256, 66,  VT_ACT_Q8_K, 19, 1),
    ROW(IQ2_XS,  iq2_xs,            256, 74,  VT_ACT_Q8_K, 20, 1),
    ROW(IQ3_XXS, iq3_xxs,           256, 98,  VT_ACT_Q8_K, 23, 1),
    ROW(IQ1_S,   iq1_s,             256, 50,  VT_ACT_Q8_K, 24, 1),
    ROW(IQ4_NL,  iq4_nl,            32,  18,  VT_ACT_Q8_0, 25, 1),
    ROW(IQ3_S,   iq3_s,             256, 110, VT_ACT_Q8_K, 26, 1),
    ROW(IQ2_S,   iq2_s,             256, 82,  VT_ACT_Q8_K, 28, 1),
    ROW(IQ4_XS,  iq4_xs,            256, 136, VT_ACT_Q8_K, 30, 1),
    ROW(IQ1_M,   iq1_m,             256, 56,  VT_ACT_Q8_K, 31, 1),
    ROW(BF16,    bf16,              1,   2,   VT_ACT_BF16, 32, 1),
    ROW(TQ1_0,   tq1_0,             256, 54,  VT_ACT_Q8_K, 36, 1),
    ROW(TQ2_0,   tq2_0,             256, 66,  VT_ACT_Q8_K, 37, 1),
    ROW(MXFP4,   mxfp4,             32,  17,  VT_ACT_Q8_0, 38, 1),
    SIZE_ONLY(Q8_1,  32,  36),
    SIZE_ONLY(I8,    1,   1),
    SIZE_ONLY(I16,   1,   2),
    SIZE_ONLY(I32,   1,   4),
    SIZE_ONLY(I64,   1,   8),
    SIZE_ONLY(F64,   1,   8),
    SIZE_ONLY(NVFP4, 64,  36),
    SIZE_ONLY(Q1_0,  128, 18),
    SIZE_ONLY(Q2_0,  64,  18),
};

/* Every enumerated type has its row: as many rows as types (each ROW and
 * SIZE_ONLY counted once), none given twice (-Woverride-init, an error in
 * the project's builds), and each indexed by an enumerator. */
_Static_assert(__COUNTER__ - ROW_BASE - 1 == VT_TYPE_KNOWN, "codec.c: expected one row per vt_type");

const vt_codec *vt_codec_by_type(int type)
{
    if (type < 0 || type >= VT_TYPE_COUNT || !codecs[type].name)
        return NULL;
    return &codecs[type];
}

const vt_codec *vt_codec_by_name(const char *name)
{
    for (int i = 0; i < VT_TYPE_COUNT; i++)
        if (codecs[i].name && strcasecmp(codecs[i].name, name) == 0)
            return &codecs[i];
    return NULL;
}

/* The registry walk, in ggml's type order, holes skipped. */
int vt_codec_count(void) { return VT_TYPE_KNOWN; }

const vt_codec *vt_codec_at(int i)
{
    if (i < 0 || i >= VT_TYPE_KNOWN)
        return NULL;
    for (int t = 0; t < VT_TYPE_COUNT; t++)
        if (codecs[t].name && i-- == 0)
            return &codecs[t];
    return NULL;
}

const char *vt_act_type_name(vt_act_type t)
{
    static const char *const names[] = { "F32", "F16", "BF16", "Q8_0", "Q8_1", "Q8_K" };
    return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "?";
}

size_t vt_codec_row_bytes(const vt_codec *c, int64_t n)
{
    if (!c || n < 0 || n % c->block_elems != 0)
        return 0;
    uint64_t blocks = (uint64_t)(n / c->block_elems);
    if (blocks != 0 && c->block_bytes > SIZE_MAX / blocks)
        return 0;
    return (size_t)blocks * c->block_bytes;
}

float vt_f16_to_f32(uint16_t h) { return vt_half_bits_to_f32(h); }

/* ======================================================================
 * F16 and FP8 E4M3 encoders (the engine's activation rounding and KV cache)
 * ====================================================================== */

/* Both narrow formats are encoded the same way: the target unit is
 * 2^(max(e, e_min) - mant_bits), the significand is rounded to that unit,
 * and ((E - e_min + 1) << mant_bits) + q is the code, the rounding carry
 * moving into the exponent by itself (and subnormals falling out at E =
 * e_min). */
uint16_t vt_f32_to_f16(float f) { return vt_f32_to_f16_bits(f); }

uint8_t vt_fp8_e4m3_from_f32(float f) { return vt_fp8_e4m3_encode(f); }

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
    if (out_dtype == VT_DTYPE_F32)
        c->decode_f32(src, (float *)dst, nb);
    else
        c->decode_bf16(src, (uint16_t *)dst, nb);
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
