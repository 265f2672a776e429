/* Device memory the GPU models own (gpu_weights.h). */
#include "gpu_weights.h"

#include <stdlib.h>

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
    free(s->owned);
    s->owned = NULL;
    s->n = s->cap = 0;
}
