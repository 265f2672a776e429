/* The Qwen3 forward pass. Read top to bottom: the model's state, loading,
 * then the forward pass (forward_batch) that carries a batch of tokens from
 * embeddings to logits. The machinery underneath (dot kernels, activation
 * rounding, thread pool, matrix products, KV cache, attention) is shared with
 * qwen35.c and lives in kernels.c.
 *
 * The mathematics follows llama.cpp's CPU backend for this architecture
 * (src/models/qwen3.cpp; ggml-cpu ops rms_norm, rope, soft_max): the same
 * epsilon placement, the same RoPE angle recurrence, softmax sums in double.
 * Summation orders inside dot products are our own (fixed), so agreement
 * with llama.cpp is close, not bitwise. */
#include "qwen3.h"

/* No fused multiply-add in this file either (see kernels.c). */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include "codec.h"
#include "gguf_file.h"
#include "kernels.h"
#include "qwen3_model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *vt_qwen3_vec_dot_type(int weight_type)
{
    return vt_act_type_name(vt_act_type_of(weight_type));
}

void vt_qwen3_round_activation(int weight_type, const float *x, float *y, int64_t n)
{
    vt_act_round_row(vt_act_type_of(weight_type), x, y, n);
}

/* ======================================================================
 * The model
 * ====================================================================== */


/* ---------- loading ---------- */

int vt_qwen3_read_hparams(const vt_gguf *g, vt_qwen3_hparams *hp, vt_error *err)
{
    const char *file = vt_gguf_name(g);
    int rc = vt_load_check_arch(g, "qwen3", err);
    if (rc)
        return rc;
    if ((rc = vt_load_i32(g, "qwen3", "embedding_length", 1, 0, &hp->n_embd, err)) ||
        (rc = vt_load_i32(g, "qwen3", "block_count", 1, 0, &hp->n_layer, err)) ||
        (rc = vt_load_i32(g, "qwen3", "feed_forward_length", 1, 0, &hp->n_ff, err)) ||
        (rc = vt_load_i32(g, "qwen3", "attention.head_count", 1, 0, &hp->n_head, err)) ||
        (rc = vt_load_i32(g, "qwen3", "attention.head_count_kv", 0, hp->n_head, &hp->n_head_kv, err)) ||
        (rc = vt_load_i32(g, "qwen3", "context_length", 0, 0, &hp->n_ctx_train, err)) ||
        (rc = vt_load_f32(g, "qwen3", "rope.freq_base", 0, 10000.0f, &hp->rope_base, err)) ||
        (rc = vt_load_f32(g, "qwen3", "attention.layer_norm_rms_epsilon", 1, 0.0f, &hp->rms_eps, err)))
        return rc;
    if (hp->n_embd % hp->n_head != 0 && vt_gguf_find_key(g, "qwen3.attention.key_length") < 0)
        return vt_error_set(err, VT_EINPUT,
                            "%s: embedding_length %d is not a multiple of head_count %d and "
                            "attention.key_length is missing", file, hp->n_embd, hp->n_head);
    int32_t hd_k, hd_v, n_rot;
    if ((rc = vt_load_i32(g, "qwen3", "attention.key_length", 0, hp->n_embd / hp->n_head, &hd_k, err)) ||
        (rc = vt_load_i32(g, "qwen3", "attention.value_length", 0, hp->n_embd / hp->n_head, &hd_v, err)))
        return rc;
    if (hd_k != hd_v)
        return vt_error_set(err, VT_EINPUT, "%s: attention.key_length %d != value_length %d",
                            file, hd_k, hd_v);
    if (hd_k % 2 != 0)
        return vt_error_set(err, VT_EINPUT, "%s: attention.key_length %d: expected even", file,
                            hd_k);
    if ((rc = vt_load_i32(g, "qwen3", "rope.dimension_count", 0, hd_k, &n_rot, err)))
        return rc;
    if (n_rot != hd_k) /* qwen3 rotates the whole head (llama.cpp asserts it) */
        return vt_error_set(err, VT_EINPUT, "%s: rope.dimension_count %d: expected %d", file,
                            n_rot, hd_k);
    if (hp->n_head_kv > hp->n_head || hp->n_head % hp->n_head_kv != 0)
        return vt_error_set(err, VT_EINPUT,
                            "%s: attention.head_count_kv %d: expected a divisor of head_count %d",
                            file, hp->n_head_kv, hp->n_head);
    if ((int64_t)hp->n_head * hd_k > INT32_MAX)
        return vt_error_set(err, VT_EINPUT, "%s: head_count x key_length too large", file);
    if (!(hp->rope_base > 0.0f))
        return vt_error_set(err, VT_EINPUT, "%s: rope.freq_base: expected > 0", file);
    hp->head_dim = hd_k;
    return VT_OK;
}

static int load_weights(vt_qwen3 *m, vt_error *err)
{
    const vt_gguf *g = m->gguf;
    vt_qwen3_hparams *hp = &m->hp;
    const int64_t E = hp->n_embd, F = hp->n_ff, hd = hp->head_dim;
    const int64_t qd = (int64_t)hp->n_head * hd, kvd = (int64_t)hp->n_head_kv * hd;

    int rc = vt_load_embeddings(g, E, &hp->n_vocab, &m->embd, &m->output, &m->output_norm,
                                &hp->tied_output, err);
    if (rc || (rc = vt_cpu_pack(&m->cpu, &m->output, vt_gguf_name(g), err)))
        return rc;

    m->layers = calloc((size_t)hp->n_layer, sizeof *m->layers);
    if (!m->layers)
        return vt_error_set(err, VT_EINPUT, "%s: out of memory for %d layers", vt_gguf_name(g),
                            hp->n_layer);
    for (int32_t l = 0; l < hp->n_layer; l++) {
        vt_q3_layer *L = &m->layers[l];
        char name[96];
#define VEC(field, suffix, n)                                                  \
        snprintf(name, sizeof name, "blk.%d." suffix ".weight", (int)l);       \
        if (!(L->field = vt_load_vector(g, name, n, err)))                     \
            return err->code;
#define MAT(field, suffix, cols, rows)                                         \
        snprintf(name, sizeof name, "blk.%d." suffix ".weight", (int)l);       \
        if ((rc = vt_load_matrix(g, name, cols, rows, &L->field, err)) ||      \
            (rc = vt_cpu_pack(&m->cpu, &L->field, vt_gguf_name(g), err)))      \
            return rc;
        VEC(attn_norm, "attn_norm", E)
        MAT(wq, "attn_q", E, qd)
        MAT(wk, "attn_k", E, kvd)
        MAT(wv, "attn_v", E, kvd)
        VEC(q_norm, "attn_q_norm", hd)
        VEC(k_norm, "attn_k_norm", hd)
        MAT(wo, "attn_output", qd, E)
        VEC(ffn_norm, "ffn_norm", E)
        MAT(gate, "ffn_gate", E, F)
        MAT(up, "ffn_up", E, F)
        MAT(down, "ffn_down", F, E)
#undef VEC
#undef MAT
    }
    return VT_OK;
}

static int allocate(vt_qwen3 *m, vt_error *err)
{
    const vt_qwen3_hparams *hp = &m->hp;
    const char *file = vt_gguf_name(m->gguf);
    const size_t B = (size_t)m->cpu.n_batch;
    const size_t E = (size_t)hp->n_embd, F = (size_t)hp->n_ff, hd = (size_t)hp->head_dim;
    const size_t qd = (size_t)hp->n_head * hd, kvd = (size_t)hp->n_head_kv * hd;
    size_t max_in = E > qd ? E : qd;
    max_in = max_in > F ? max_in : F;

    int rc = vt_kv_alloc(&m->kv, hp->n_layer, m->cpu.n_ctx, (int64_t)kvd, (int64_t)hd,
                         m->cpu.cache_dtype, file, err);
    if (rc)
        return rc;
    float **bufs[] = { &m->x, &m->xn, &m->q, &m->kb, &m->vb, &m->att, &m->proj,
                       &m->gate, &m->up, &m->rope };
    size_t widths[] = { E, E, qd, kvd, kvd, qd, E, F, F, hd };
    int ok = vt_alloc_rows(bufs, widths, sizeof bufs / sizeof bufs[0], B);
    m->ids = vt_alloc_aligned(B, sizeof(int64_t));
    if (!ok || !m->ids)
        return vt_error_set(err, VT_EINPUT, "%s: out of memory for n_batch %d", file,
                            m->cpu.n_batch);
    return vt_cpu_start(&m->cpu, (int64_t)max_in, (int64_t)hd, 0, file, err);
}

vt_qwen3 *vt_qwen3_open(const vt_runner_settings *s, vt_error *err)
{
    vt_error local;
    if (!err)
        err = &local; /* the loaders read err->code */
    vt_qwen3 *m = calloc(1, sizeof *m);
    if (!m) {
        vt_error_set(err, VT_EINPUT, "engine: out of memory");
        return NULL;
    }
    if (!(m->gguf = vt_cpu_open_model(&m->cpu, s, err)) || vt_qwen3_read_hparams(m->gguf, &m->hp, err) ||
        load_weights(m, err) || allocate(m, err)) {
        vt_qwen3_close(m);
        return NULL;
    }
    vt_cpu_describe(&m->cpu);
    return m;
}

void vt_qwen3_close(vt_qwen3 *m)
{
    if (!m)
        return;
    vt_cpu_free(&m->cpu);
    float *bufs[] = { m->x, m->xn, m->q, m->kb, m->vb, m->att, m->proj, m->gate, m->up, m->rope };
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        free(bufs[i]);
    free(m->ids);
    vt_kv_free(&m->kv);
    free(m->layers);
    vt_gguf_free(m->gguf);
    free(m);
}

void vt_qwen3_reset(vt_qwen3 *m) { m->n_past = 0; }

const vt_qwen3_hparams *vt_qwen3_hparams_of(const vt_qwen3 *m) { return &m->hp; }
int32_t vt_qwen3_n_past(const vt_qwen3 *m) { return m->n_past; }
int32_t vt_qwen3_n_threads(const vt_qwen3 *m) { return m->cpu.n_threads; }
const char *vt_qwen3_detail(const vt_qwen3 *m) { return m->cpu.detail; }
void vt_qwen3_resolved(const vt_qwen3 *m, vt_runner_settings *out) { vt_cpu_resolved(&m->cpu, out); }

/* ======================================================================
 * The forward pass of one batch: n_tok tokens at positions pos0 ...
 * Logits of batch rows [out0, out0 + n_out) go to logits (n_out x n_vocab).
 * ====================================================================== */

static void forward_batch(void *model, const int32_t *tokens, int64_t n_tok, int64_t out0,
                          int64_t n_out, float *logits)
{
    vt_qwen3 *m = model;
    vt_cpu *c = &m->cpu;
    const vt_qwen3_hparams *hp = &m->hp;
    const int64_t E = hp->n_embd, hd = hp->head_dim;
    const int64_t qd = (int64_t)hp->n_head * hd, kvd = m->kv.kv_dim;
    const int32_t pos0 = m->n_past;

    /* 1. Embeddings: the token rows of token_embd, decoded from their codec. */
    vt_embed(&m->embd, tokens, n_tok, m->ids, m->x);

    /* RoPE angles depend only on the position: once per batch, not per layer. */
    for (int64_t t = 0; t < n_tok; t++)
        vt_rope_angles(m->rope + t * hd, pos0 + (int32_t)t, hd, hp->rope_base);

    for (int32_t l = 0; l < hp->n_layer; l++) {
        const vt_q3_layer *L = &m->layers[l];

        /* 2. Attention block input: RMSNorm of the residual stream. */
        vt_rmsnorm_rows(m->xn, m->x, L->attn_norm, n_tok, E, hp->rms_eps);

        /* 3. Q, K, V projections (one dispatch); meanwhile the cache lines
         *    step 4 writes are fetched. */
        vt_kv_will_store(&m->kv, l, pos0, n_tok);
        {
            const vt_mat *ws[3] = { &L->wq, &L->wk, &L->wv };
            float *ys[3] = { m->q, m->kb, m->vb };
            const int64_t ld[3] = { qd, kvd, kvd };
            vt_matmul(c, m->xn, n_tok, 3, ws, ys, ld);
        }

        /* 4. Per-head RMSNorm of Q and K over head_dim, then RoPE; K and V
         *    go into the cache at their positions. */
        for (int64_t t = 0; t < n_tok; t++) {
            const float *cs = m->rope + t * hd;
            vt_qk_norm_rope(c, m->q + t * qd, m->kb + t * kvd, L->q_norm, L->k_norm, hp->n_head,
                            hp->n_head_kv, hd, hd, cs, hp->rms_eps);
            vt_kv_store(&m->kv, l, pos0 + (int32_t)t, m->kb + t * kvd, m->vb + t * kvd);
        }

        /* 5. Causal grouped-query attention over the cache. */
        const vt_attention_args aa = { &m->kv, l, pos0, n_tok, hp->n_head, hp->n_head_kv, hd,
                                       m->q, qd, m->att, qd };
        vt_attention(c, &aa);

        /* 6. Output projection and residual add. */
        vt_matmul1(c, &L->wo, m->att, n_tok, m->proj, E);
        vt_add(m->x, m->proj, n_tok * E);

        /* 7. Feed-forward: RMSNorm, gate and up (one dispatch),
         *    silu(gate) * up, down projection, residual add. */
        const vt_ffn ffn = { L->ffn_norm, &L->gate, &L->up, &L->down };
        vt_ffn_block(c, &ffn, m->x, n_tok, hp->rms_eps, m->xn, m->gate, m->up, m->proj);
    }

    /* 8. Final RMSNorm and the output head, only for the rows asked for. */
    vt_output_head(c, m->x, out0, n_out, m->output_norm, &m->output, hp->rms_eps, m->xn, logits);
    m->n_past += (int32_t)n_tok;
}

int vt_qwen3_eval(vt_qwen3 *m, const int32_t *tokens, int32_t n, int all_logits, float *logits,
                  vt_error *err)
{
    int rc = vt_eval_check(vt_gguf_name(m->gguf), tokens, n, logits, m->n_past, m->cpu.n_ctx,
                           m->hp.n_vocab, err);
    if (rc)
        return rc;
    /* Production: batches of n_batch tokens. Eager: one token at a time. */
    vt_eval_batches(m, forward_batch, tokens, n, m->cpu.n_batch, all_logits, m->hp.n_vocab, logits);
    return VT_OK;
}
