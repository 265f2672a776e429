/* Codecs: every ggml storage type as one row of a table indexed by type
 * (block size, block bytes, decoders, dot type, file type). Type ids are ggml's numbering, since that is what GGUF files
 * store. Decoders are bit-exact with ggml's to_float; BF16 output is the
 * round-to-nearest-even of the F32 value. */
#ifndef VT_CODEC_H
#define VT_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "../common/vt_error.h"

typedef enum vt_type {
    VT_TYPE_F32 = 0,
    VT_TYPE_F16 = 1,
    VT_TYPE_Q4_0 = 2,
    VT_TYPE_Q4_1 = 3,
    VT_TYPE_Q5_0 = 6,
    VT_TYPE_Q5_1 = 7,
    VT_TYPE_Q8_0 = 8,
    VT_TYPE_Q8_1 = 9,
    VT_TYPE_Q2_K = 10,
    VT_TYPE_Q3_K = 11,
    VT_TYPE_Q4_K = 12,
    VT_TYPE_Q5_K = 13,
    VT_TYPE_Q6_K = 14,
    VT_TYPE_Q8_K = 15,
    VT_TYPE_IQ2_XXS = 16,
    VT_TYPE_IQ2_XS = 17,
    VT_TYPE_IQ3_XXS = 18,
    VT_TYPE_IQ1_S = 19,
    VT_TYPE_IQ4_NL = 20,
    VT_TYPE_IQ3_S = 21,
    VT_TYPE_IQ2_S = 22,
    VT_TYPE_IQ4_XS = 23,
    VT_TYPE_I8 = 24,
    VT_TYPE_I16 = 25,
    VT_TYPE_I32 = 26,
    VT_TYPE_I64 = 27,
    VT_TYPE_F64 = 28,
    VT_TYPE_IQ1_M = 29,
    VT_TYPE_BF16 = 30,
    VT_TYPE_TQ1_0 = 34,
    VT_TYPE_TQ2_0 = 35,
    VT_TYPE_MXFP4 = 39,
    VT_TYPE_NVFP4 = 40,
    VT_TYPE_Q1_0 = 41,
    VT_TYPE_Q2_0 = 42,
    VT_TYPE_COUNT = 43
} vt_type;

/* Types the table knows (every enumerator above but VT_TYPE_COUNT): codec.c
 * asserts at compile time that it has exactly this many rows. */
#define VT_TYPE_KNOWN 35

/* Decodes n_blocks consecutive blocks at src into n_blocks*block_elems values. */
typedef void (*vt_decode_f32_fn)(const void *restrict src, float *restrict dst, int64_t n_blocks);
typedef void (*vt_decode_bf16_fn)(const void *restrict src, uint16_t *restrict dst, int64_t n_blocks);

/* The activation type a weight's matrix products meet: ggml's vec_dot_type
 * for that weight type in its CPU backend (the engine's --matmul q8 mode
 * rounds the activation through it; kernels.c's integer block products
 * take it as their right-hand side). */
typedef enum vt_act_type {
    VT_ACT_F32 = 0, /* used as is (F32 weights; types ggml has no kernel for) */
    VT_ACT_F16,
    VT_ACT_BF16,
    VT_ACT_Q8_0,
    VT_ACT_Q8_1,
    VT_ACT_Q8_K
} vt_act_type;

const char *vt_act_type_name(vt_act_type t); /* "F32", "F16", ... */

/* One row per storage type: every fact about it that vt uses. */
typedef struct vt_codec {
    vt_type type;
    const char *name;               /* ggml's spelling, upper case: "Q4_K" */
    int64_t block_elems;            /* elements per block */
    size_t block_bytes;             /* bytes per block */
    vt_decode_f32_fn decode_f32;    /* NULL: storage size known, no decoder */
    vt_decode_bf16_fn decode_bf16;  /* the F32 value rounded to nearest even; NULL with decode_f32 */
    vt_act_type act;                /* the activation its matrix products meet (above) */
    int gguf_file_type;             /* llama.cpp's general.file_type of a model whose matrices
                                       are all this type; -1: llama.cpp has none */
    int matrix_weight;              /* ggml has a matrix product for it as a weight (Q8_K, an
                                       activation-only type, has none: llama.cpp aborts) */
} vt_codec;

typedef enum vt_dtype { VT_DTYPE_F32 = 0, VT_DTYPE_BF16 = 1 } vt_dtype;

/* NULL for an id that is not a ggml type. */
const vt_codec *vt_codec_by_type(int type);
/* Case-insensitive name lookup; NULL if unknown. */
const vt_codec *vt_codec_by_name(const char *name);
/* Registry walk: i in [0, vt_codec_count()). */
int vt_codec_count(void);
const vt_codec *vt_codec_at(int i);

/* Bytes of a row of n elements; 0 if n is not a whole number of blocks or
 * the product overflows. */
size_t vt_codec_row_bytes(const vt_codec *c, int64_t n);

/* Round-to-nearest-even F32 -> BF16; NaN stays NaN (quiet bit set), as ggml. */
static inline uint16_t vt_f32_to_bf16(float f)
{
    union { float f; uint32_t u; } v = { f };
    if ((v.u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((v.u >> 16) | 64);
    return (uint16_t)((v.u + (0x7fffu + ((v.u >> 16) & 1u))) >> 16);
}

static inline float vt_bf16_to_f32(uint16_t h)
{
    union { uint32_t u; float f; } v = { (uint32_t)h << 16 };
    return v.f;
}

/* IEEE half -> float, exact for every input including subnormals and NaN. */
float vt_f16_to_f32(uint16_t h);

/* FP8 E4M3 ("E4M3FN": bias 7, no infinities, NaN = S.1111.111), the KV cache
 * codec. Encoding rounds to nearest, ties to even, saturates finite values
 * and infinities to +-448, and maps NaN to the NaN code of its sign. */
uint8_t vt_fp8_e4m3_from_f32(float f);
float vt_fp8_e4m3_to_f32(uint8_t c);

/* IEEE half, round-to-nearest-even (overflow to inf, NaN kept quiet): how the
 * activation meets an F16 weight in Q8 matmul mode. */
uint16_t vt_f32_to_f16(float f);

/* Decode one row of n elements (n a multiple of block_elems) to F32 or BF16.
 * Returns VT_OK, or VT_EINPUT with a message if the codec has no decoder or
 * n is not whole blocks. */
int vt_codec_decode_row(const vt_codec *c, const void *src, int64_t n, vt_dtype out_dtype,
                        void *dst, vt_error *err);

/* Packed gather: for each ids[i], decode row ids[i] of a packed table of
 * n_rows rows x row_elems elements into out (row i of out, F32 or BF16).
 * Every id is checked against [0, n_rows) before any row is read; the first
 * bad one is reported with its position and value and nothing is written. */
int vt_codec_gather_rows(const vt_codec *c, const void *table, int64_t n_rows, int64_t row_elems,
                         const int64_t *ids, int64_t n_ids, vt_dtype out_dtype, void *out,
                         vt_error *err);

#endif
