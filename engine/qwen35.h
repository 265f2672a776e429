/* The engine's Qwen3.5 ("qwen35") forward pass: a hybrid of gated delta-net
 * linear attention and gated full attention, in plain C over a GGUF file.
 *
 * One token's path, as qwen35.c lays it out:
 *   embedding row (decoded from its codec)
 *   per layer: RMSNorm (attn_norm), then one of two token mixers, chosen per
 *   layer by the GGUF (qwen35.attention.recurrent_layers, or every
 *   full_attention_interval-th layer is full attention):
 *     gated delta net (recurrent):
 *       mixed Q|K|V projection (attn_qkv), gate z (attn_gate), beta and alpha
 *       projections -> causal depthwise conv1d over the last d_conv inputs
 *       (ssm_conv1d; the previous d_conv-1 inputs are the rolling conv state)
 *       -> SiLU -> L2-normalized Q and K per head -> decay
 *       g = softplus(alpha + ssm_dt.bias) * ssm_a, beta = sigmoid(beta) ->
 *       gated delta rule on the per-head state S (d_state x d_state):
 *         S = exp(g) S;  S += k (beta (v - S^T k))^T;  o = S^T q / sqrt(d)
 *       -> RMSNorm per head (ssm_norm) times silu(z) -> output projection
 *     gated full attention:
 *       joint query+gate projection (attn_q: per head a query and a gate),
 *       K and V projections -> per-head RMSNorm of Q and K -> multi-section
 *       RoPE over the first rope.dimension_count dimensions of each head ->
 *       K, V into the cache -> causal grouped-query attention -> times
 *       sigmoid(gate) -> output projection
 *   -> residual add -> RMSNorm (post_attention_norm) -> gate and up
 *   projections -> silu(gate) * up -> down projection -> residual add
 *   final RMSNorm -> output head -> logits (F32)
 *
 * State per sequence: the KV cache of the full-attention layers (cache
 * dtype f32, bf16 or fp8_e4m3) and, per recurrent layer, the conv state
 * (conv channels x (d_conv-1)) and the delta state (heads x d x d), both F32.
 * Everything is allocated at open; evaluating a token allocates nothing.
 *
 * Determinism: the contract of qwen3.h. Both recurrences are evaluated one
 * token at a time in a fixed order (a chunked, matrix form of the delta
 * rule would round differently depending on where chunks start), so a
 * prompt gives bit-identical logits whether it is evaluated in one batch,
 * in batches of any size, one token at a time (eager) or with any number of
 * threads: threads split the conv by channel and the delta rule by head.
 *
 * Semantics follow llama.cpp (src/models/qwen35.cpp, delta-net-base.cpp and
 * the ggml CPU ops ssm_conv, gated_delta_net, rope multi, rms_norm): value
 * head h reads query/key head h % group_count, as ggml broadcasts them. */
#ifndef VT_QWEN35_H
#define VT_QWEN35_H

#include <stdint.h>

#include "../common/vt_error.h"
#include "runner.h"

/* Hyper-parameters, from the qwen35.* keys and the tensor shapes. */
typedef struct vt_qwen35_hparams {
    int32_t n_vocab;     /* token_embd rows */
    int32_t n_embd;      /* qwen35.embedding_length */
    int32_t n_layer;     /* qwen35.block_count less nextn_predict_layers (MTP
                            blocks are not part of the main pass) */
    int32_t n_ff;        /* qwen35.feed_forward_length */
    int32_t n_head;      /* qwen35.attention.head_count */
    int32_t n_head_kv;   /* qwen35.attention.head_count_kv (default n_head) */
    int32_t head_dim;    /* qwen35.attention.key_length = value_length */
    int32_t n_rot;       /* qwen35.rope.dimension_count (partial rotary) */
    int32_t rope_sections[4]; /* qwen35.rope.dimension_sections (default 0s) */
    int32_t n_ctx_train; /* qwen35.context_length (informational) */
    float rope_base;     /* qwen35.rope.freq_base (default 10000) */
    float rms_eps;       /* qwen35.attention.layer_norm_rms_epsilon */
    int32_t d_conv;      /* qwen35.ssm.conv_kernel */
    int32_t d_inner;     /* qwen35.ssm.inner_size = d_state * n_v_heads */
    int32_t d_state;     /* qwen35.ssm.state_size: head size of the delta net */
    int32_t n_v_heads;   /* qwen35.ssm.time_step_rank */
    int32_t n_k_heads;   /* qwen35.ssm.group_count */
    int32_t n_recurrent; /* layers that are gated delta nets */
    int tied_output;     /* 1: no output.weight; the head is token_embd */
} vt_qwen35_hparams;

typedef struct vt_qwen35 vt_qwen35;

/* Load s->model_path and allocate everything for s (mode, cache dtype,
 * matmul mode, n_threads, n_ctx, n_batch). Every tensor's presence, type and
 * shape is checked; errors are VT_EINPUT naming the file and the tensor. */
vt_qwen35 *vt_qwen35_open(const vt_runner_settings *s, vt_error *err);
void vt_qwen35_close(vt_qwen35 *m);

/* Forget the sequence: empty the KV cache, zero the conv and delta states. */
void vt_qwen35_reset(vt_qwen35 *m);

/* Append n tokens at positions n_past .. n_past+n-1 (as vt_qwen3_eval). */
int vt_qwen35_eval(vt_qwen35 *m, const int32_t *tokens, int32_t n, int all_logits,
                   float *logits, vt_error *err);

const vt_qwen35_hparams *vt_qwen35_hparams_of(const vt_qwen35 *m);
/* 1 if layer l is a gated delta net, 0 if full attention. */
int vt_qwen35_layer_is_recurrent(const vt_qwen35 *m, int32_t l);
int32_t vt_qwen35_n_past(const vt_qwen35 *m);
const char *vt_qwen35_detail(const vt_qwen35 *m);
void vt_qwen35_resolved(const vt_qwen35 *m, vt_runner_settings *out);

#endif
