/* The qwen3 model's loaded state (internal to engine/): qwen3.c fills and
 * uses it; the GPU backend (engine/hip/qwen3_gpu.c) copies its tensors to the
 * device from here, so the file is read and checked in one place. */
#ifndef VT_QWEN3_MODEL_H
#define VT_QWEN3_MODEL_H

#include "gguf_file.h"
#include "kernels.h"
#include "qwen3.h"

typedef struct vt_q3_layer {
    const float *attn_norm, *q_norm, *k_norm, *ffn_norm;
    vt_mat wq, wk, wv, wo, gate, up, down;
} vt_q3_layer;

struct vt_qwen3 {
    vt_qwen3_hparams hp;
    vt_gguf *gguf;

    vt_mat embd;   /* token_embd: gathered row by row */
    vt_mat output; /* output, or token_embd when tied */
    const float *output_norm;
    vt_q3_layer *layers;

    vt_cpu cpu; /* settings as applied, kernels, threads, scratch */
    vt_kv kv;   /* [layer][kv head][position][head_dim] in the cache dtype */
    int32_t n_past;

    /* activations of one batch, [token][feature] */
    float *x;    /* residual stream, n_embd */
    float *xn;   /* normed input of a projection, n_embd */
    float *q;    /* n_head * head_dim */
    float *kb;   /* n_head_kv * head_dim */
    float *vb;   /* n_head_kv * head_dim */
    float *att;  /* attention output, n_head * head_dim */
    float *proj; /* output of wo / down, n_embd */
    float *gate; /* n_ff */
    float *up;   /* n_ff */
    float *rope; /* cos/sin pairs per token, head_dim */
    int64_t *ids;
};

#endif
