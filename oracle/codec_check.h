/* Codec check: quantize random rows with ggml, decode with ggml and with our
 * codec, compare bit for bit (F32 and BF16 outputs). */
#ifndef VT_CODEC_CHECK_H
#define VT_CODEC_CHECK_H

#include <stdint.h>

#include "../engine/codec.h"
#include "ggml_codec.h"

typedef struct vt_codec_check_result {
    int64_t rows;
    int64_t f32_identical;   /* rows whose F32 decode is bit-identical */
    int64_t bf16_identical;  /* rows whose BF16 decode is bit-identical */
    double max_abs_diff;     /* over all elements, ours vs ggml (F32); NaN vs non-NaN counts as inf */
    int64_t first_bad_row;   /* -1 if none */
} vt_codec_check_result;

/* The row classes cycled through: normal, uniform, heavy outliers, all-equal, all-zero. */
enum { VT_CODEC_CHECK_CLASSES = 5 };
const char *vt_codec_check_class_name(int cls);

/* Fills rows [row0, row0+rows) x cols of class-cycled random data (row r has
 * class r % VT_CODEC_CHECK_CLASSES and its own random stream). */
void vt_codec_check_make_rows(float *x, int64_t row0, int64_t rows, int64_t cols, uint64_t seed);
/* A positive, log-normal importance matrix of cols weights. */
void vt_codec_check_make_imatrix(float *w, int64_t cols, uint64_t seed);
/* Whether the check (and fixtures) quantize c with an importance matrix. */
int vt_codec_check_uses_imatrix(vt_ggml *g, const vt_codec *c);

/* Runs the check of one codec against the oracle. The codec's decoder is the
 * one in c (so a test can pass a deliberately broken copy). */
int vt_codec_check_type(vt_ggml *g, const vt_codec *c, int64_t rows, int64_t cols, uint64_t seed,
                        vt_codec_check_result *res, vt_error *err);

/* Checks n codecs on n_threads threads; results[i] for codecs[i]. on_done (may
 * be NULL) is called on the caller's thread for each codec, in order, as soon
 * as its rows are all checked. */
int vt_codec_check_many(vt_ggml *g, const vt_codec *const *codecs, int n, int64_t rows, int64_t cols,
                        uint64_t seed, int n_threads, vt_codec_check_result *results,
                        void (*on_done)(int i, const vt_codec_check_result *r, void *ctx), void *ctx,
                        vt_error *err);

static inline int vt_codec_check_passed(const vt_codec_check_result *r)
{
    return r->rows > 0 && r->f32_identical == r->rows && r->bf16_identical == r->rows;
}

#endif
