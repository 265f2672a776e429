/* The codec oracle: ggml's own quantizers and row decoders, from the pinned
 * package's libggml-base loaded at run time (dlopen). Used to check our
 * codecs bit for bit and to quantize fixtures. */
#ifndef VT_GGML_CODEC_H
#define VT_GGML_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "../common/vt_error.h"

typedef struct vt_ggml vt_ggml;

/* Loads libggml-base.so from libdir, or from $VT_GGML_LIBDIR, or from the
 * directory scripts/bootstrap filled (compiled in). */
vt_ggml *vt_ggml_open(const char *libdir, vt_error *err);
void vt_ggml_free(vt_ggml *g);
/* Full path of the loaded library. */
const char *vt_ggml_path(const vt_ggml *g);

/* ggml's own facts about a type id (ggml_get_type_traits): its name, block
 * elements and block bytes. 0 if ggml has no such type (its name is NULL or
 * its block size 0, as for ids ggml removed). */
int vt_ggml_type_info(vt_ggml *g, int type, const char **name, int64_t *block_elems, size_t *block_bytes);

/* True if ggml refuses to quantize type without an importance matrix. */
int vt_ggml_requires_imatrix(vt_ggml *g, int type);

/* Quantize nrows rows of n_per_row floats into dst (nrows * row bytes).
 * imatrix: n_per_row weights or NULL. */
int vt_ggml_quantize(vt_ggml *g, int type, const float *src, void *dst, int64_t nrows,
                     int64_t n_per_row, const float *imatrix, vt_error *err);

/* Decode n elements of type with ggml's to_float (for F32: a copy, as ggml). */
int vt_ggml_dequantize(vt_ggml *g, int type, const void *src, float *dst, int64_t n,
                       vt_error *err);

/* ggml's F32 -> BF16 row conversion. */
void vt_ggml_f32_to_bf16(vt_ggml *g, const float *src, uint16_t *dst, int64_t n);

#endif
