/* Device memory the GPU models own (qwen3_gpu.c, qwen35_gpu.c): every
 * allocation listed, so that closing frees all of them; a weight matrix
 * copied as stored (its codec's rows) and an F32 vector copied as is. */
#ifndef VT_GPU_WEIGHTS_H
#define VT_GPU_WEIGHTS_H

#include "../kernels.h"
#include "vt_gpu.h"

#include <string.h>

typedef struct vt_gpu_store {
    vt_gpu *g;
    void **owned, **pinned; /* device allocations, page-locked host ones */
    int n, cap, n_pinned, cap_pinned;
} vt_gpu_store;

void *vt_gpu_store_alloc(vt_gpu_store *s, size_t bytes, vt_error *err);
void *vt_gpu_store_host(vt_gpu_store *s, size_t bytes, vt_error *err); /* page-locked host memory */
int vt_gpu_store_mat(vt_gpu_store *s, const vt_mat *w, vt_gpu_mat *out, vt_error *err);
int vt_gpu_store_vec(vt_gpu_store *s, const float *v, int64_t n, float **out, vt_error *err);
/* Frees every allocation (the context itself stays the caller's). */
void vt_gpu_store_free(vt_gpu_store *s);

/* A batch's inputs, copied in one piece: its first position (int32, padded
 * to 8 bytes), the RoPE angles of its n_tok tokens (n_rot floats each, n_rot
 * even) and their ids (int64). The device reads the position from pos, so
 * a captured decode step serves every position. And where a one-row batch's
 * logits land on the host: page-locked, so that the copy is a node of the
 * decode step's graph and runs at the device's speed (a copy to pageable
 * memory goes through the driver's staging, and cannot be captured). */
typedef struct vt_gpu_step {
    uint8_t *host, *dev; /* page-locked host, device: the same layout */
    int64_t n_rot;
    float *logits_host; /* page-locked: one row of n_vocab logits */
    int64_t n_vocab;
} vt_gpu_step;

int vt_gpu_step_alloc(vt_gpu_store *s, vt_gpu_step *st, int64_t max_tok, int64_t n_rot, int64_t n_vocab,
                      vt_error *err);
static inline float *vt_gpu_step_rope_host(const vt_gpu_step *st) { return (float *)(st->host + 8); }
static inline int64_t *vt_gpu_step_ids_host(const vt_gpu_step *st, int64_t n_tok)
{
    return (int64_t *)(st->host + 8 + (size_t)(n_tok * st->n_rot) * sizeof(float));
}
static inline const int32_t *vt_gpu_step_pos(const vt_gpu_step *st) { return (const int32_t *)st->dev; }
static inline const float *vt_gpu_step_rope(const vt_gpu_step *st) { return (const float *)(st->dev + 8); }
static inline const int64_t *vt_gpu_step_ids(const vt_gpu_step *st, int64_t n_tok)
{
    return (const int64_t *)(st->dev + 8 + (size_t)(n_tok * st->n_rot) * sizeof(float));
}
/* Sets the position on the host side: a captured step's own copy takes it in. */
static inline void vt_gpu_step_set_pos(const vt_gpu_step *st, int32_t pos) { memcpy(st->host, &pos, sizeof pos); }
/* Queues the copy of what the host side holds for n_tok tokens at pos. */
int vt_gpu_step_upload(vt_gpu *g, const vt_gpu_step *st, int32_t pos, int64_t n_tok, vt_error *err);
/* Queues the copy of one row of logits (device) to logits_host. */
int vt_gpu_step_logits_queue(vt_gpu *g, const vt_gpu_step *st, const float *row, vt_error *err);
/* Waits for the queue, then copies logits_host to out (n_vocab floats). */
int vt_gpu_step_logits_take(vt_gpu *g, const vt_gpu_step *st, float *out, vt_error *err);

/* A model's kernels for one batch of n_tok tokens whose inputs the step
 * holds: the logits of batch rows [out0, out0 + n_out) into logits (device).
 * keys_max: the most keys attention sees; captured: for a graph. */
typedef int (*vt_gpu_enqueue_fn)(void *model, int64_t n_tok, int64_t out0, int64_t n_out, int32_t keys_max,
                                 int captured, vt_error *err);
/* Queues one batch at position pos: its inputs in, enqueue's kernels, and a
 * one-row batch's logits out to the step's page-locked row. As a graph
 * (a production decode step: one token, its logits, keys up to n_ctx) it
 * launches *decode, captured first where it is missing or stale; otherwise
 * launch by launch. The caller then waits (vt_gpu_step_logits_take). */
int vt_gpu_step_run(vt_gpu *g, vt_gpu_step *st, vt_gpu_graph **decode, int as_graph, int32_t pos, int64_t n_tok,
                    int64_t out0, int64_t n_out, int32_t n_ctx, const float *logits, vt_gpu_enqueue_fn enqueue,
                    void *model, vt_error *err);

#endif
