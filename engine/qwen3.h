/* The engine: a Qwen3 forward pass in plain C over a GGUF file.
 *
 * One token's path, as qwen3.c lays it out:
 *   embedding row (decoded from its codec)
 *   per layer: RMSNorm -> Q, K, V projections -> per-head RMSNorm of Q and K
 *              -> RoPE (NeoX halves) -> K, V appended to the cache -> causal
 *              grouped-query attention -> output projection -> residual add
 *              RMSNorm -> gate and up projections -> silu(gate) * up -> down
 *              projection -> residual add
 *   final RMSNorm -> output head -> logits (F32)
 *
 * Weights stay in their codec (memory-mapped); a matrix product decodes one
 * weight row at a time into a per-thread scratch and dots it with every
 * activation row of the batch. Every buffer is allocated at open: evaluating
 * a token allocates nothing.
 *
 * Determinism: each output element of every operation is computed by one
 * function of its inputs alone (fixed summation order, 16 partial sums, no
 * FMA, the same on every instruction set), whatever the thread count, the
 * batch size or the execution mode. So logits are bit-identical between
 * 1 and N threads, between eager and production mode, and between the
 * C, SSE2, AVX2 and AVX-512 kernels ($VT_ENGINE_ISA=c|sse2|avx2|avx512f
 * forces one, for diagnosis; the default is the widest the CPU has). */
#ifndef VT_QWEN3_H
#define VT_QWEN3_H

#include <stdint.h>

#include "../common/vt_error.h"
#include "codec.h" /* vt_f32_to_f16, vt_fp8_e4m3_from_f32 / _to_f32 */
#include "runner.h"

/* Hyper-parameters, from the qwen3.* keys and the tensor shapes. */
typedef struct vt_qwen3_hparams {
    int32_t n_vocab;     /* token_embd rows */
    int32_t n_embd;      /* qwen3.embedding_length */
    int32_t n_layer;     /* qwen3.block_count */
    int32_t n_ff;        /* qwen3.feed_forward_length */
    int32_t n_head;      /* qwen3.attention.head_count */
    int32_t n_head_kv;   /* qwen3.attention.head_count_kv (default n_head) */
    int32_t head_dim;    /* qwen3.attention.key_length = value_length
                            (default n_embd / n_head) */
    int32_t n_ctx_train; /* qwen3.context_length (informational) */
    float rope_base;     /* qwen3.rope.freq_base (default 10000) */
    float rms_eps;       /* qwen3.attention.layer_norm_rms_epsilon */
    int tied_output;     /* 1: no output.weight; the head is token_embd */
} vt_qwen3_hparams;

typedef struct vt_qwen3 vt_qwen3;

/* The hyper-parameters of an open qwen3 GGUF (every field but n_vocab and
 * tied_output, which come with the tensors), checked as vt_qwen3_open
 * checks them: the one reader of them, for the engine and vt export. */
typedef struct vt_gguf vt_gguf;
int vt_qwen3_read_hparams(const vt_gguf *g, vt_qwen3_hparams *hp, vt_error *err);

/* Load s->model_path and allocate everything for s (mode, cache dtype,
 * matmul mode, n_threads, n_ctx, n_batch). Every tensor's presence, type and
 * shape is checked; errors are VT_EINPUT naming the file and the tensor. */
vt_qwen3 *vt_qwen3_open(const vt_runner_settings *s, vt_error *err);
void vt_qwen3_close(vt_qwen3 *m);

/* Empty the KV cache (the next token is at position 0). */
void vt_qwen3_reset(vt_qwen3 *m);

/* Append n tokens at positions n_past .. n_past+n-1. logits receives
 * n x n_vocab floats (all_logits) or the last position's n_vocab floats.
 * Token ids and the capacity (n_past + n <= n_ctx) are checked before
 * anything is computed; on error the sequence is unchanged. */
int vt_qwen3_eval(vt_qwen3 *m, const int32_t *tokens, int32_t n, int all_logits, float *logits,
                  vt_error *err);

const vt_qwen3_hparams *vt_qwen3_hparams_of(const vt_qwen3 *m);

int32_t vt_qwen3_n_past(const vt_qwen3 *m);
int32_t vt_qwen3_n_threads(const vt_qwen3 *m); /* threads evaluation uses */
/* One line: instruction set of the dot kernel, threads, matmul and cache
 * settings, e.g. "isa=avx2 threads=4 matmul=exact cache=f32 batch=512". */
const char *vt_qwen3_detail(const vt_qwen3 *m);
/* The settings as applied: mode, matmul, cache dtype (auto -> f32), threads
 * (eager -> 1), n_ctx, n_batch (eager -> 1, else clipped to n_ctx). Fields
 * the engine does not change (seed, sampling, model path) are left as they are. */
void vt_qwen3_resolved(const vt_qwen3 *m, vt_runner_settings *out);

/* Q8 matmul mode's activation rounding, exposed for tests and tools: the
 * vec_dot_type llama.cpp's CPU backend pairs with a weight type ("F32" when
 * the activation is used as is, "F16", "BF16", "Q8_0", "Q8_1", "Q8_K"), and
 * x (n elements, whole blocks of that type) rounded through it into y. */
const char *vt_qwen3_vec_dot_type(int weight_type);
void vt_qwen3_round_activation(int weight_type, const float *x, float *y, int64_t n);

/* The engine runner (runner_engine.c): qwen3.c or qwen35.c, by the GGUF's
 * general.architecture. */
extern const vt_runner_ops vt_runner_engine;

#endif
