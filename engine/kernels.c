/* The CPU machinery qwen3.c and qwen35.c share (kernels.h): element-wise
 * pieces, the blocks both architectures share, and evaluation. The rest is
 * in kernels_dot.c, kernels_intdot.c, kernels_pool.c, kernels_matmul.c,
 * kernels_load.c and kernels_kv.c. */
#include "kernels_impl.h"

/* ======================================================================
 * Element-wise pieces
 * ====================================================================== */

/* The mean of the squares of x[0..n), (float)(sum / n) with sum ggml's
 * serial double sum of the float squares: from a sum in eight chains side
 * by side wherever mean_of_any_order_sum (engine_math.h) shows that it
 * gives the same float, else (about once in 40,000 rows of 1024, and for
 * inf or NaN) in order. The serial chain of dependent additions cost about
 * 4 thousand cycles a row of 1024, twice a layer, on one thread while the
 * others wait. */
static float mean_square(const float *x, int64_t n)
{
    double s[8] = { 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0 };
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++)
            s[k] += (double)(x[i + k] * x[i + k]);
    for (; i < n; i++)
        s[0] += (double)(x[i] * x[i]);
    const double t = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
    float mean;
    if (mean_of_any_order_sum(t, n, &mean))
        return mean;
    double sum = 0.0;
    for (i = 0; i < n; i++)
        sum += (double)(x[i] * x[i]);
    return (float)(sum / (double)n);
}

/* out = x * scale (* w): the second half of vt_rmsnorm. */
static void rmsnorm_apply(float *out, const float *x, const float *w, int64_t n, float mean, float eps)
{
    const float scale = 1.0f / sqrtf(mean + eps);
    if (w) {
        for (int64_t i = 0; i < n; i++)
            out[i] = x[i] * scale * w[i];
    } else {
        for (int64_t i = 0; i < n; i++)
            out[i] = x[i] * scale;
    }
}

void vt_rmsnorm(float *out, const float *x, const float *w, int64_t n, float eps)
{
    rmsnorm_apply(out, x, w, n, mean_square(x, n), eps);
}

void vt_rope_angles(float *cs, int32_t pos, int64_t d, float base)
{
    const float theta_scale = powf(base, -2.0f / (float)d);
    float theta = (float)pos;
    for (int64_t i = 0; i < d / 2; i++) {
        cs[2 * i] = cosf(theta);
        cs[2 * i + 1] = sinf(theta);
        theta *= theta_scale;
    }
}

/* ======================================================================
 * Blocks both architectures share
 * ====================================================================== */

void vt_embed(const vt_mat *embd, const int32_t *tokens, int64_t n_tok, int64_t *ids, float *x)
{
    for (int64_t t = 0; t < n_tok; t++)
        ids[t] = tokens[t];
    vt_error ignored; /* ids were checked by the caller: the gather cannot fail */
    vt_codec_gather_rows(embd->codec, embd->data, embd->rows, embd->cols, ids, n_tok,
                         VT_DTYPE_F32, x, &ignored);
}

void vt_rmsnorm_rows(float *out, const float *x, const float *w, int64_t n_rows, int64_t n,
                     float eps)
{
    for (int64_t t = 0; t < n_rows; t++)
        vt_rmsnorm(out + t * n, x + t * n, w, n, eps);
}

void vt_qk_norm_rope(const vt_cpu *c, float *q, float *k, const float *q_norm, const float *k_norm,
                     int32_t n_head, int32_t n_head_kv, int64_t head_dim, int64_t n_rot, const float *cs,
                     float eps)
{
    vt_rmsnorm_rows(q, q, q_norm, n_head, head_dim, eps);
    vt_rmsnorm_rows(k, k, k_norm, n_head_kv, head_dim, eps);
    for (int32_t h = 0; h < n_head; h++)
        c->k.rope_neox(q + h * head_dim, cs, n_rot);
    for (int32_t h = 0; h < n_head_kv; h++)
        c->k.rope_neox(k + h * head_dim, cs, n_rot);
}

void vt_add(float *x, const float *y, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        x[i] += y[i];
}

void vt_ffn_block(vt_cpu *c, const vt_ffn *f, float *x, int64_t n_tok, float eps, float *xn,
                  float *g, float *u, float *proj)
{
    const int64_t E = f->gate->cols, F = f->gate->rows;
    vt_rmsnorm_rows(xn, x, f->norm, n_tok, E, eps);
    const vt_mat *ws[2] = { f->gate, f->up };
    float *ys[2] = { g, u };
    const int64_t ld[2] = { F, F };
    vt_matmul(c, xn, n_tok, 2, ws, ys, ld);
    for (int64_t t = 0; t < n_tok; t++)
        c->k.swiglu(g + t * F, u + t * F, F);
    vt_matmul1(c, f->down, g, n_tok, proj, E);
    vt_add(x, proj, n_tok * E);
}

void vt_output_head(vt_cpu *c, const float *x, int64_t out0, int64_t n_out, const float *norm,
                    const vt_mat *output, float eps, float *xn, float *logits)
{
    const int64_t E = output->cols;
    if (n_out <= 0)
        return; /* a prefill batch before the last: no logits wanted */
    vt_rmsnorm_rows(xn, x + out0 * E, norm, n_out, E, eps);
    vt_matmul1(c, output, xn, n_out, logits, output->rows);
}

int vt_alloc_rows(float **const *bufs, const size_t *widths, size_t n, size_t rows)
{
    int ok = 1;
    for (size_t i = 0; i < n; i++) {
        size_t count;
        *bufs[i] = __builtin_mul_overflow(rows, widths[i], &count) ? NULL
                                                                    : vt_alloc_aligned(count, 4);
        ok = ok && *bufs[i];
    }
    return ok;
}

/* ======================================================================
 * Evaluation
 * ====================================================================== */

int vt_eval_check(const char *file, const int32_t *tokens, int32_t n, const float *logits,
                  int32_t n_past, int32_t n_ctx, int32_t n_vocab, vt_error *err)
{
    if (n <= 0 || !tokens || !logits)
        return vt_error_set(err, VT_EINPUT, "%s: eval: expected at least one token and a logits "
                            "buffer (n = %d)", file, (int)n);
    if ((int64_t)n_past + n > n_ctx)
        return vt_error_set(err, VT_EINPUT,
                            "%s: eval: %d tokens after %d exceed the context capacity n_ctx = %d",
                            file, (int)n, (int)n_past, (int)n_ctx);
    for (int32_t i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= n_vocab)
            return vt_error_set(err, VT_EINPUT,
                                "%s: eval: token %d at position %d: expected 0 <= id < %d", file,
                                (int)tokens[i], (int)i, (int)n_vocab);
    return VT_OK;
}

void vt_eval_batches(void *model, vt_forward_fn forward, const int32_t *tokens, int32_t n,
                     int32_t step, int all_logits, int32_t n_vocab, float *logits)
{
    for (int32_t i0 = 0; i0 < n; i0 += step) {
        const int32_t nt = n - i0 < step ? n - i0 : step;
        const int last = i0 + nt == n;
        if (all_logits)
            forward(model, tokens + i0, nt, 0, nt, logits + (size_t)i0 * (size_t)n_vocab);
        else
            forward(model, tokens + i0, nt, last ? nt - 1 : 0, last ? 1 : 0, logits);
    }
}
