/* The qwen35 model's loaded state (internal to engine/): qwen35.c fills and
 * uses it; the GPU backend (engine/hip/qwen35_gpu.c) copies its tensors to
 * the device from here, so the file is read and checked in one place. */
#ifndef VT_QWEN35_MODEL_H
#define VT_QWEN35_MODEL_H

#include "gguf_file.h"
#include "kernels.h"
#include "qwen35.h"

typedef struct vt_q35_layer {
    int recurrent;   /* 1: gated delta net; 0: gated full attention */
    int32_t slot;    /* index among the layers of its kind (cache / state slot) */
    const float *attn_norm, *post_norm;

    /* gated full attention */
    vt_mat wq; /* per head: head_dim query rows, then head_dim gate rows */
    vt_mat wk, wv, wo;
    const float *q_norm, *k_norm;

    /* gated delta net */
    vt_mat wqkv;      /* conv channels: Q (key_dim), K (key_dim), V (value_dim) */
    vt_mat wz;        /* attn_gate: value_dim */
    vt_mat wbeta, walpha; /* n_v_heads each */
    vt_mat ssm_out;   /* value_dim -> n_embd */
    const float *conv;    /* [conv channel][d_conv] */
    const float *dt_bias; /* n_v_heads */
    const float *ssm_a;   /* n_v_heads: -exp(A_log) */
    const float *ssm_norm; /* d_state */

    vt_mat gate, up, down;
} vt_q35_layer;

struct vt_qwen35 {
    vt_qwen35_hparams hp;
    vt_gguf *gguf;
    int64_t key_dim, value_dim, conv_dim; /* delta net widths */

    vt_mat embd, output;
    const float *output_norm;
    vt_q35_layer *layers;

    vt_cpu cpu; /* settings as applied, kernels, threads, scratch */
    vt_kv kv;   /* full-attention layers only: [slot][kv head][position][head_dim] */
    float *conv_state;  /* [recurrent slot][conv channel][d_conv - 1], F32 */
    float *delta_state; /* [recurrent slot][v head][d][d], F32 (ggml's transposed S) */
    int32_t n_past;

    /* activations of one batch, [token][feature] */
    float *x;     /* residual stream, n_embd */
    float *xn;    /* normed input of a projection, n_embd */
    float *proj;  /* output of a mixer / of down, n_embd */
    float *qfull; /* attention: query and gate per head, 2 * n_head * head_dim */
    float *q;     /* attention queries, n_head * head_dim */
    float *qgate; /* attention gates, n_head * head_dim */
    float *kb, *vb; /* n_head_kv * head_dim */
    float *att;   /* attention output, n_head * head_dim */
    float *qkv;   /* delta net: mixed projection, conv_dim */
    float *conv;  /* delta net: conv output, conv_dim */
    float *z;     /* delta net: output gate, value_dim */
    float *beta;  /* n_v_heads */
    float *g;     /* n_v_heads: alpha, then the log decay */
    float *o;     /* delta net output, value_dim */
    float *ffg, *ffu; /* feed-forward gate and up, n_ff */
    float *rope;  /* cos/sin pairs per token, n_rot */
    int64_t *ids;
};

#endif
