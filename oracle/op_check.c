/* Op check: engine matrix products against ggml's CPU backend (op_check.h). */
#include "op_check.h"
#include "codec_check.h"

#include "../common/vt_rng.h"
#include "../engine/codec.h"
#include "../engine/engine_op.h"
#include "../engine/gguf_file.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const row_names[VT_OP_ROW_KINDS] = { "random", "adversarial", "fixture" };

const char *vt_op_rows_name(vt_op_rows k)
{
    return (unsigned)k < VT_OP_ROW_KINDS ? row_names[k] : "?";
}

/* ---------- inputs ---------- */

/* Activations: normal rows at a scale that varies by row, as hidden states
 * after a norm do. */
static void make_random_x(float *x, int64_t n_tok, int64_t cols, uint64_t seed)
{
    for (int64_t t = 0; t < n_tok; t++) {
        vt_rng rng;
        vt_rng_seed(&rng, seed ^ (0x78000000ull + (uint64_t)t));
        double scale = pow(2.0, -2.0 + 4.0 * vt_rng_uniform(&rng));
        for (int64_t i = 0; i < cols; i++)
            x[t * cols + i] = (float)(scale * vt_rng_normal(&rng));
    }
}

/* One adversarial superblock of n (256, or 32 when rows are shorter) values
 * at v, pattern p, scale s a power of two so every step below is exact:
 *   0 all zero (a zero block scale)
 *   1 every 32-block's maximum is 127 s and the others are (k + .5) s: after
 *     scaling by 127 / amax they land exactly on .5, where rounding to
 *     nearest even (ggml's x86 Q8_0 path) and half away from zero (its
 *     reference) part
 *   2 a tie for the maximum magnitude with opposite signs (+m before -m, or
 *     -m before +m): Q8_K keeps the sign of the first
 *   3 small values with one large outlier
 *   4 normal values
 *   5 values so small the F16 block scale underflows */
static void adversarial_block(float *v, int64_t n, int p, double s, vt_rng *rng)
{
    switch (p) {
    case 0:
        for (int64_t i = 0; i < n; i++)
            v[i] = 0.0f;
        break;
    case 1:
        for (int64_t i = 0; i < n; i++) {
            int k = (int)(vt_rng_next(rng) % 253) - 126; /* -126 .. 126 */
            v[i] = (float)(s * (k + (k < 0 ? -0.5 : 0.5)));
            if (v[i] > 126.5 * s || v[i] < -126.5 * s)
                v[i] = (float)(s * 126.5);
        }
        for (int64_t i = 0; i < n; i += 32)
            v[i + (int64_t)(vt_rng_next(rng) % 32)] = (float)(127.0 * s * ((vt_rng_next(rng) & 1) ? -1 : 1));
        break;
    case 2: {
        for (int64_t i = 0; i < n; i++)
            v[i] = (float)(0.1 * s * vt_rng_normal(rng));
        int64_t a = (int64_t)(vt_rng_next(rng) % (uint64_t)n), b = (a + 1 + (int64_t)(vt_rng_next(rng) % (uint64_t)(n - 1))) % n;
        float sign = (vt_rng_next(rng) & 1) ? -1.0f : 1.0f;
        v[a] = sign * (float)s;
        v[b] = -sign * (float)s;
        break;
    }
    case 3:
        for (int64_t i = 0; i < n; i++)
            v[i] = (float)(0.01 * s * vt_rng_normal(rng));
        v[vt_rng_next(rng) % (uint64_t)n] = (float)(40.0 * s);
        break;
    case 4:
        for (int64_t i = 0; i < n; i++)
            v[i] = (float)(s * vt_rng_normal(rng));
        break;
    default:
        for (int64_t i = 0; i < n; i++)
            v[i] = (float)(1e-9 * vt_rng_normal(rng));
        break;
    }
}

static void make_adversarial(float *m, int64_t n_rows, int64_t cols, uint64_t seed, int outlier_channels)
{
    const int64_t sb = cols % 256 == 0 ? 256 : 32;
    for (int64_t r = 0; r < n_rows; r++) {
        vt_rng rng;
        vt_rng_seed(&rng, seed ^ (0xad000000ull + (uint64_t)r));
        for (int64_t b = 0; b < cols / sb; b++) {
            int p = (int)((r + b) % 6);
            double s = ldexp(1.0, (int)(vt_rng_next(&rng) % 9) - 6);
            adversarial_block(m + r * cols + b * sb, sb, p, s, &rng);
        }
        /* A few channels much larger than the rest, in every row, as real
         * models' hidden states have. */
        if (outlier_channels)
            for (int64_t c = 5; c < cols; c += 331)
                m[r * cols + c] *= 64.0f;
    }
}

void vt_op_make_rows(vt_op_rows kind, float *w, int64_t rows, float *x, int64_t n_tok, int64_t cols,
                     uint64_t seed)
{
    if (kind == VT_OP_ROWS_ADVERSARIAL) {
        make_adversarial(w, rows, cols, seed ^ 0x5700ull, 0);
        make_adversarial(x, n_tok, cols, seed ^ 0x5800ull, 1);
        return;
    }
    vt_codec_check_make_rows(w, 0, rows, cols, seed);
    make_random_x(x, n_tok, cols, seed);
}

/* ---------- comparison ---------- */

static int64_t ordered(float f)
{
    int32_t i;
    memcpy(&i, &f, 4);
    return i < 0 ? (int64_t)INT32_MIN - i : i;
}

uint64_t vt_op_ulp_distance(float a, float b)
{
    if (isnan(a) || isnan(b))
        return isnan(a) && isnan(b) ? 0 : UINT64_MAX;
    int64_t d = ordered(a) - ordered(b);
    return (uint64_t)(d < 0 ? -d : d);
}

int vt_op_check_is_float(int type)
{
    return type == VT_TYPE_F32 || type == VT_TYPE_F16 || type == VT_TYPE_BF16;
}

int vt_op_check_types(int *types, int cap)
{
    int n = 0;
    for (int i = 0; i < vt_codec_count() && n < cap; i++) {
        const vt_codec *c = vt_codec_at(i);
        if (!c->decode_f32)
            continue;
        if (vt_op_check_is_float(c->type) || strcmp(vt_engine_dot_type(c->type), "F32") != 0)
            types[n++] = c->type;
    }
    return n;
}

int vt_op_check_one(vt_ggml *q, vt_ggml_mm *mm, vt_op_engine_fn engine, int type,
                    const vt_op_inputs *in, vt_matmul_mode mode, int n_threads,
                    vt_ggml_layout layout, vt_op_result *res, vt_error *err)
{
    const vt_codec *c = vt_codec_by_type(type);
    size_t rb = c ? vt_codec_row_bytes(c, in->cols) : 0;
    if (!rb)
        return vt_error_set(err, VT_EINPUT, "op check: type %d, rows of %lld: expected whole blocks",
                            type, (long long)in->cols);
    memset(res, 0, sizeof *res);
    res->type = type;
    res->n_tok = in->n_tok;
    res->layout = layout;
    size_t n_out = (size_t)(in->rows * in->n_tok);
    uint8_t *wq = malloc(rb * (size_t)in->rows);
    float *ye = malloc(n_out * sizeof *ye), *yg = malloc(n_out * sizeof *yg), *y1 = malloc(n_out * sizeof *y1);
    float *imatrix = malloc((size_t)in->cols * sizeof *imatrix);
    int rc = VT_OK;
    if (!wq || !ye || !yg || !y1 || !imatrix) {
        rc = vt_error_set(err, VT_EINPUT, "op check: out of memory");
        goto out;
    }
    vt_codec_check_make_imatrix(imatrix, in->cols, 1);
    rc = vt_ggml_quantize(q, type, in->w, wq, in->rows, in->cols,
                          vt_codec_check_uses_imatrix(q, c) ? imatrix : NULL, err);
    if (!rc)
        rc = engine(type, wq, in->rows, in->cols, in->x, in->n_tok, mode, n_threads, ye, err);
    if (!rc)
        rc = vt_ggml_mm_run(mm, type, wq, in->rows, in->cols, in->x, in->n_tok, layout, yg,
                            &res->repacked, err);
    for (int64_t t = 0; !rc && t < in->n_tok; t++) {
        int rp;
        if (in->n_tok == 1)
            memcpy(y1, yg, (size_t)in->rows * sizeof *y1);
        else
            rc = vt_ggml_mm_run(mm, type, wq, in->rows, in->cols, in->x + t * in->cols, 1, layout,
                                y1 + t * in->rows, &rp, err);
    }
    if (rc)
        goto out;
    res->dots = (int64_t)n_out;
    for (size_t i = 0; i < n_out; i++) {
        uint32_t be, bg, b1;
        memcpy(&be, &ye[i], 4);
        memcpy(&bg, &yg[i], 4);
        memcpy(&b1, &y1[i], 4);
        res->identical_single += be == b1;
        res->oracle_shape_differs += bg != b1;
        res->identical_either += be == bg || be == b1;
        if (be == bg) {
            res->identical++;
        } else {
            uint64_t u = vt_op_ulp_distance(ye[i], yg[i]);
            if (u > res->max_ulp)
                res->max_ulp = u;
            double d = fabs((double)ye[i] - (double)yg[i]);
            if (d > res->max_abs || isnan(d))
                res->max_abs = isnan(d) ? INFINITY : d;
        }
        if (fabs((double)yg[i]) > res->max_abs_ref)
            res->max_abs_ref = fabs((double)yg[i]);
    }
    const float scale = (float)res->max_abs_ref;
    const double ulp = isfinite(scale) && scale > 0.0f ? (double)nextafterf(scale, INFINITY) - (double)scale : 0.0;
    res->max_ulp_of_scale = res->max_abs == 0.0 ? 0.0 : ulp > 0.0 ? res->max_abs / ulp : INFINITY;
out:
    free(wq);
    free(ye);
    free(yg);
    free(y1);
    free(imatrix);
    return rc;
}

/* ---------- a model's own rows ---------- */

/* Appends decoded rows of t (first row r0, stepping by step) to the stream
 * dst[*at .. n); returns 0 when the stream is full. */
static int stream_rows(const vt_gguf_tensor *t, int64_t r0, int64_t step, float *row, float *dst,
                       int64_t *at, int64_t n, vt_error *err)
{
    const vt_codec *c = vt_codec_by_type(t->type);
    size_t rb = c ? vt_codec_row_bytes(c, t->ne[0]) : 0;
    for (int64_t k = 0, r = r0; k < t->ne[1] && *at < n; k++, r = (r + step) % t->ne[1]) {
        if (vt_codec_decode_row(c, (const uint8_t *)t->data + (size_t)r * rb, t->ne[0], VT_DTYPE_F32,
                                row, err))
            return -1;
        int64_t take = t->ne[0] < n - *at ? t->ne[0] : n - *at;
        memcpy(dst + *at, row, (size_t)take * sizeof *row);
        *at += take;
    }
    return *at < n;
}

int vt_op_fixture_rows(const char *path, float *w, int64_t rows, float *x, int64_t n_tok,
                       int64_t cols, vt_error *err)
{
    vt_gguf *g = vt_gguf_open(path, err);
    if (!g)
        return err->code;
    int rc = VT_OK;
    int64_t widest = 0;
    for (uint64_t i = 0; i < vt_gguf_n_tensors(g); i++) {
        const vt_gguf_tensor *t = vt_gguf_tensor_at(g, i);
        if (t->ne[0] > widest)
            widest = t->ne[0];
    }
    float *row = malloc((size_t)(widest > 0 ? widest : 1) * sizeof *row);
    if (!row) {
        rc = vt_error_set(err, VT_EINPUT, "op check: out of memory");
        goto out;
    }
    /* Weights: the model's blk.* matrices in file order, row after row,
     * cut into rows of cols (again from the start if the model is smaller). */
    int64_t at = 0, found = 1;
    while (at < rows * cols && found) {
        found = 0;
        for (uint64_t i = 0; i < vt_gguf_n_tensors(g) && at < rows * cols; i++) {
            const vt_gguf_tensor *t = vt_gguf_tensor_at(g, i);
            const vt_codec *c = vt_codec_by_type(t->type);
            if (t->n_dims != 2 || t->name.len < 4 || memcmp(t->name.ptr, "blk.", 4) != 0 || !c ||
                !c->decode_f32)
                continue;
            found = 1;
            if (stream_rows(t, 0, 1, row, w, &at, rows * cols, err) < 0) {
                rc = err->code;
                goto out;
            }
        }
    }
    const vt_gguf_tensor *e = vt_gguf_find_tensor(g, "token_embd.weight");
    const vt_codec *ec = e ? vt_codec_by_type(e->type) : NULL;
    if (!found || !e || e->n_dims != 2 || !ec || !ec->decode_f32) {
        rc = vt_error_set(err, VT_EINPUT, "%s: expected blk.* matrices and a token_embd.weight "
                          "in a decodable type", path);
        goto out;
    }
    /* Activations: embedding rows of tokens spread over the vocabulary. */
    at = 0;
    while (at < n_tok * cols)
        if (stream_rows(e, 11 % e->ne[1], 7919, row, x, &at, n_tok * cols, err) < 0) {
            rc = err->code;
            goto out;
        }
out:
    free(row);
    vt_gguf_free(g);
    return rc;
}
