/* Device memory the GPU models own (qwen3_gpu.c, qwen35_gpu.c): every
 * allocation listed, so that closing frees all of them; a weight matrix
 * copied as stored (its codec's rows) and an F32 vector copied as is. */
#ifndef VT_GPU_WEIGHTS_H
#define VT_GPU_WEIGHTS_H

#include "../kernels.h"
#include "vt_gpu.h"

typedef struct vt_gpu_store {
    vt_gpu *g;
    void **owned;
    int n, cap;
} vt_gpu_store;

void *vt_gpu_store_alloc(vt_gpu_store *s, size_t bytes, vt_error *err);
int vt_gpu_store_mat(vt_gpu_store *s, const vt_mat *w, vt_gpu_mat *out, vt_error *err);
int vt_gpu_store_vec(vt_gpu_store *s, const float *v, int64_t n, float **out, vt_error *err);
/* Frees every allocation (the context itself stays the caller's). */
void vt_gpu_store_free(vt_gpu_store *s);

#endif
