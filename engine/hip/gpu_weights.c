/* Device memory the GPU models own (gpu_weights.h). */
#include "gpu_weights.h"

#include <stdlib.h>
#include <string.h>

void *vt_gpu_store_alloc(vt_gpu_store *s, size_t bytes, vt_error *err)
{
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 64;
        void **p = realloc(s->owned, (size_t)cap * sizeof *p);
        if (!p) {
            vt_error_set(err, VT_EINPUT, "gpu: out of memory");
            return NULL;
        }
        s->owned = p;
        s->cap = cap;
    }
    void *d = vt_gpu_malloc(s->g, bytes, err);
    if (d)
        s->owned[s->n++] = d;
    return d;
}

void *vt_gpu_store_host(vt_gpu_store *s, size_t bytes, vt_error *err)
{
    if (s->n_pinned == s->cap_pinned) {
        int cap = s->cap_pinned ? 2 * s->cap_pinned : 16;
        void **p = realloc(s->pinned, (size_t)cap * sizeof *p);
        if (!p) {
            vt_error_set(err, VT_EINPUT, "gpu: out of memory");
            return NULL;
        }
        s->pinned = p;
        s->cap_pinned = cap;
    }
    void *h = vt_gpu_host_alloc(s->g, bytes, err);
    if (h)
        s->pinned[s->n_pinned++] = h;
    return h;
}

int vt_gpu_store_mat(vt_gpu_store *s, const vt_mat *w, vt_gpu_mat *out, vt_error *err)
{
    int rc = vt_gpu_matmul_supported((int)w->codec->type, vt_gpu_matmul_of(s->g), err);
    if (rc)
        return rc;
    const size_t bytes = w->row_bytes * (size_t)w->rows;
    uint8_t *d = vt_gpu_store_alloc(s, bytes, err);
    if (!d)
        return err->code;
    if ((rc = vt_gpu_to_device(s->g, d, w->data, bytes, err)))
        return rc;
    *out = (vt_gpu_mat){ .data = d, .type = (int)w->codec->type, .rows = w->rows, .cols = w->cols,
                         .row_bytes = w->row_bytes, .tensor_rows = w->tensor_rows };
    return VT_OK;
}

int vt_gpu_store_vec(vt_gpu_store *s, const float *v, int64_t n, float **out, vt_error *err)
{
    if (!(*out = vt_gpu_store_alloc(s, (size_t)n * sizeof(float), err)))
        return err->code;
    return vt_gpu_to_device(s->g, *out, v, (size_t)n * sizeof(float), err);
}

void vt_gpu_store_free(vt_gpu_store *s)
{
    for (int i = 0; i < s->n; i++)
        vt_gpu_mfree(s->g, s->owned[i]);
    for (int i = 0; i < s->n_pinned; i++)
        vt_gpu_host_free(s->g, s->pinned[i]);
    free(s->owned);
    free(s->pinned);
    s->owned = s->pinned = NULL;
    s->n = s->cap = s->n_pinned = s->cap_pinned = 0;
}

int vt_gpu_step_alloc(vt_gpu_store *s, vt_gpu_step *st, int64_t max_tok, int64_t n_rot, int64_t n_vocab,
                      vt_error *err)
{
    if (n_rot % 2)
        return vt_error_set(err, VT_EINPUT, "gpu: %lld rotated dimensions: expected an even count", (long long)n_rot);
    const size_t bytes = 8 + (size_t)(max_tok * n_rot) * sizeof(float) + (size_t)max_tok * sizeof(int64_t);
    st->n_rot = n_rot;
    st->n_vocab = n_vocab;
    if (!(st->host = vt_gpu_store_host(s, bytes, err)) || !(st->dev = vt_gpu_store_alloc(s, bytes, err)) ||
        !(st->logits_host = vt_gpu_store_host(s, (size_t)n_vocab * sizeof(float), err)))
        return err->code;
    return VT_OK;
}

int vt_gpu_step_upload(vt_gpu *g, const vt_gpu_step *st, int32_t pos, int64_t n_tok, vt_error *err)
{
    vt_gpu_step_set_pos(st, pos);
    const size_t bytes = 8 + (size_t)(n_tok * st->n_rot) * sizeof(float) + (size_t)n_tok * sizeof(int64_t);
    return vt_gpu_to_device_async(g, st->dev, st->host, bytes, err);
}

int vt_gpu_step_logits_queue(vt_gpu *g, const vt_gpu_step *st, const float *row, vt_error *err)
{
    return vt_gpu_to_host_async(g, st->logits_host, row, (size_t)st->n_vocab * sizeof(float), err);
}

int vt_gpu_step_logits_take(vt_gpu *g, const vt_gpu_step *st, float *out, vt_error *err)
{
    int rc = vt_gpu_wait(g, err);
    if (rc == VT_OK)
        memcpy(out, st->logits_host, (size_t)st->n_vocab * sizeof(float));
    return rc;
}

static int queue_batch(vt_gpu *g, vt_gpu_step *st, int32_t pos, int64_t n_tok, int64_t out0, int64_t n_out,
                       int32_t keys_max, int captured, const float *logits, vt_gpu_enqueue_fn enqueue, void *model,
                       vt_error *err)
{
    int rc = vt_gpu_step_upload(g, st, pos, n_tok, err);
    if (rc == VT_OK)
        rc = enqueue(model, n_tok, out0, n_out, keys_max, captured, err);
    if (rc == VT_OK && n_out == 1)
        rc = vt_gpu_step_logits_queue(g, st, logits, err);
    return rc;
}

int vt_gpu_step_run(vt_gpu *g, vt_gpu_step *st, vt_gpu_graph **decode, int as_graph, int32_t pos, int64_t n_tok,
                    int64_t out0, int64_t n_out, int32_t n_ctx, const float *logits, vt_gpu_enqueue_fn enqueue,
                    void *model, vt_error *err)
{
    if (!as_graph)
        return queue_batch(g, st, pos, n_tok, out0, n_out, pos + (int32_t)n_tok, 0, logits, enqueue, model, err);
    /* The graph's own copy takes the position in from the host side. */
    vt_gpu_step_set_pos(st, pos);
    int rc = VT_OK;
    if (!vt_gpu_graph_valid(g, *decode)) {
        vt_gpu_graph_free(g, *decode);
        *decode = NULL;
        if ((rc = vt_gpu_capture_begin(g, err)) == VT_OK)
            rc = vt_gpu_capture_end(g, queue_batch(g, st, pos, 1, 0, 1, n_ctx, 1, logits, enqueue, model, err), decode,
                                    err);
    }
    return rc ? rc : vt_gpu_graph_launch(g, *decode, err);
}
