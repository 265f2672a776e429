/* The qwen3 forward pass on the GPU (vt_gpu.h), one step after another as
 * qwen3.c lays it out, each step one device operation of ops.hip:
 *   embedding rows (decoded from their codec on the device)
 *   per layer: RMSNorm -> Q, K, V projections -> per-head RMSNorm and RoPE
 *              of Q and K -> K, V into the cache -> attention -> output
 *              projection -> residual add -> RMSNorm -> gate, up -> SwiGLU
 *              -> down projection -> residual add
 *              (a residual add and the RMSNorm after it are one launch,
 *              and for one token in Q8_0 part of the product after them;
 *              Q, K and V, and gate and up, are one where their codecs
 *              allow, and for one token SwiGLU with them; the heads'
 *              norms, RoPE and the cache store are one)
 *   final RMSNorm -> output head -> logits, copied to the host
 * The CPU engine opens and checks the file (vt_qwen3_open); the tensors it
 * loaded (qwen3_model.h) are copied to device memory in their codecs. RoPE's angles are the CPU's
 * (vt_rope_angles, the C library's cosf and sinf), copied per batch with
 * the ids and the position (gpu_weights.h's vt_gpu_step). Every buffer is
 * allocated at open. Production mode runs each decode step (one token, its
 * logits) as one captured graph of the same kernels; eager mode launches
 * them one by one. Each product is the CPU's: --matmul exact
 * the dot of the decoded weight row with the F32 activation in the CPU's
 * order, --matmul q8 the activation through the weight's dot type and the
 * integer block products of codec_intdot.h; so the logits are the CPU
 * engine's bit for bit in either mode. */
#include "gpu_weights.h"
#include "vt_gpu.h"

#include "../kernels.h"
#include "../qwen3_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct gpu_layer {
    float *attn_norm, *q_norm, *k_norm, *ffn_norm;
    vt_gpu_mat wq, wk, wv, wo, gate, up, down;
} gpu_layer;

struct vt_gpu_qwen3 {
    vt_qwen3 *cpu; /* the loaded, checked model (and the sequence checks) */
    vt_gpu *g;
    vt_qwen3_hparams hp;
    int32_t n_ctx, n_batch, n_past;
    vt_gpu_mat embd, output;
    float *output_norm;
    gpu_layer *layers;
    vt_gpu_kv kv;
    float *x, *x2, *xn, *q, *kb, *vb, *att, *proj, *gate, *up, *logits; /* device; x, x2: the stream in turn */
    vt_gpu_step step;                                              /* ids, position, angles */
    int production;                                                /* decode steps as a graph */
    vt_gpu_graph *decode;                                          /* captured at the first */
    vt_gpu_store store; /* every device allocation */
};

/* The tensors the CPU model loaded and checked (qwen3_model.h), copied. */
static int load(vt_gpu_qwen3 *m, vt_error *err)
{
    const vt_qwen3 *c = m->cpu;
    const vt_qwen3_hparams *hp = &m->hp;
    const int64_t E = hp->n_embd, hd = hp->head_dim;
    vt_gpu_store *st = &m->store;
    int rc;
    if ((rc = vt_gpu_store_mat(st, &c->embd, &m->embd, err)) ||
        (rc = vt_gpu_store_vec(st, c->output_norm, E, &m->output_norm, err)))
        return rc;
    if (hp->tied_output)
        m->output = m->embd;
    else if ((rc = vt_gpu_store_mat(st, &c->output, &m->output, err)))
        return rc;
    if (!(m->layers = calloc((size_t)hp->n_layer, sizeof *m->layers)))
        return vt_error_set(err, VT_EINPUT, "gpu qwen3: out of memory");
    for (int32_t l = 0; l < hp->n_layer; l++) {
        const vt_q3_layer *S = &c->layers[l];
        gpu_layer *L = &m->layers[l];
        if ((rc = vt_gpu_store_vec(st, S->attn_norm, E, &L->attn_norm, err)) ||
            (rc = vt_gpu_store_vec(st, S->q_norm, hd, &L->q_norm, err)) ||
            (rc = vt_gpu_store_vec(st, S->k_norm, hd, &L->k_norm, err)) ||
            (rc = vt_gpu_store_vec(st, S->ffn_norm, E, &L->ffn_norm, err)) ||
            (rc = vt_gpu_store_mat(st, &S->wq, &L->wq, err)) || (rc = vt_gpu_store_mat(st, &S->wk, &L->wk, err)) ||
            (rc = vt_gpu_store_mat(st, &S->wv, &L->wv, err)) || (rc = vt_gpu_store_mat(st, &S->wo, &L->wo, err)) ||
            (rc = vt_gpu_store_mat(st, &S->gate, &L->gate, err)) || (rc = vt_gpu_store_mat(st, &S->up, &L->up, err)) ||
            (rc = vt_gpu_store_mat(st, &S->down, &L->down, err)))
            return rc;
    }
    return VT_OK;
}

static int allocate(vt_gpu_qwen3 *m, vt_cache_dtype dtype, vt_error *err)
{
    const vt_qwen3_hparams *hp = &m->hp;
    const size_t B = (size_t)m->n_batch, E = (size_t)hp->n_embd, F = (size_t)hp->n_ff;
    const size_t hd = (size_t)hp->head_dim, qd = (size_t)hp->n_head * hd, kvd = (size_t)hp->n_head_kv * hd;
    float **bufs[] = { &m->x, &m->x2, &m->xn, &m->q, &m->kb, &m->vb, &m->att, &m->proj, &m->gate, &m->up };
    const size_t widths[] = { E, E, E, qd, kvd, kvd, qd, E, F, F };
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        if (!(*bufs[i] = vt_gpu_store_alloc(&m->store, B * widths[i] * sizeof(float), err)))
            return err->code;
    if (!(m->logits = vt_gpu_store_alloc(&m->store, B * (size_t)hp->n_vocab * sizeof(float), err)))
        return err->code;
    int rc = vt_gpu_step_alloc(&m->store, &m->step, (int64_t)B, (int64_t)hd, hp->n_vocab, err);
    /* q8: the widest activation of a batch, in F32 (more than its blocks) */
    const size_t wide = E > F ? (E > qd ? E : qd) : (F > qd ? F : qd);
    if (rc == VT_OK && vt_gpu_matmul_of(m->g) == VT_MATMUL_Q8)
        rc = vt_gpu_reserve(m->g, B * wide * sizeof(float), err);
    if (rc)
        return rc;
    const size_t elem = vt_cache_elem_bytes(dtype);
    const size_t cells = (size_t)hp->n_layer * (size_t)m->n_ctx * kvd;
    float table[256];
    for (int c = 0; c < 256; c++)
        table[c] = vt_fp8_e4m3_to_f32((uint8_t)c);
    float *dtable;
    if (!(m->kv.k = vt_gpu_store_alloc(&m->store, cells * elem, err)) || !(m->kv.v = vt_gpu_store_alloc(&m->store, cells * elem, err)) ||
        !(dtable = vt_gpu_store_alloc(&m->store, sizeof table, err)) || vt_gpu_to_device(m->g, dtable, table, sizeof table, err))
        return err->code;
    m->kv = (vt_gpu_kv){ .k = m->kv.k, .v = m->kv.v, .pos = vt_gpu_step_pos(&m->step), .dtype = (int)dtype,
                         .elem = (int)elem, .n_layer = hp->n_layer, .n_ctx = m->n_ctx, .kv_dim = (int64_t)kvd,
                         .fp8_table = dtable };
    return VT_OK;
}

vt_gpu_qwen3 *vt_gpu_qwen3_open(int device, const vt_runner_settings *s, vt_error *err)
{
    vt_gpu_qwen3 *m = calloc(1, sizeof *m);
    if (!m) {
        vt_error_set(err, VT_EINPUT, "gpu qwen3: out of memory");
        return NULL;
    }
    if (!(m->cpu = vt_qwen3_open(s, err)) || !(m->g = vt_gpu_open(device, err))) {
        vt_gpu_qwen3_close(m);
        return NULL;
    }
    m->store.g = m->g;
    vt_gpu_set_matmul(m->g, s->matmul); /* before the weights: each type checked against it */
    m->hp = *vt_qwen3_hparams_of(m->cpu);
    vt_runner_settings r = *s;
    vt_qwen3_resolved(m->cpu, &r);
    m->n_ctx = r.n_ctx;
    m->n_batch = r.n_batch;
    m->production = r.mode == VT_MODE_PRODUCTION;
    if (load(m, err) || allocate(m, r.cache_dtype, err)) {
        vt_gpu_qwen3_close(m);
        return NULL;
    }
    return m;
}

void vt_gpu_qwen3_close(vt_gpu_qwen3 *m)
{
    if (!m)
        return;
    if (m->g) {
        vt_gpu_graph_free(m->g, m->decode);
        vt_gpu_store_free(&m->store);
        vt_gpu_close(m->g);
    }
    free(m->layers);
    vt_qwen3_close(m->cpu);
    free(m);
}

void vt_gpu_qwen3_reset(vt_gpu_qwen3 *m) { m->n_past = 0; }
int32_t vt_gpu_qwen3_n_vocab(const vt_gpu_qwen3 *m) { return m->hp.n_vocab; }

void vt_gpu_qwen3_counts(const vt_gpu_qwen3 *m, uint64_t *launches, uint64_t *copies)
{
    vt_gpu_counts(m->g, launches, copies);
}

void vt_gpu_qwen3_resolved(const vt_gpu_qwen3 *m, vt_runner_settings *out)
{
    vt_qwen3_resolved(m->cpu, out);
    out->n_threads = 1; /* one host thread drives the device */
}

/* The kernels of one batch of n_tok tokens (its inputs in m->step): the
 * logits of batch rows [out0, out0 + n_out) into m->logits. keys_max:
 * the most keys attention sees (the context for a captured step). */
static int enqueue_batch(void *model, int64_t n_tok, int64_t out0, int64_t n_out, int32_t keys_max, int captured,
                         vt_error *err)
{
    vt_gpu_qwen3 *m = model;
    (void)captured; /* the same kernels either way */
    vt_gpu *g = m->g;
    const vt_qwen3_hparams *hp = &m->hp;
    const int64_t E = hp->n_embd, hd = hp->head_dim, V = hp->n_vocab;
    const int64_t qd = (int64_t)hp->n_head * hd, kvd = (int64_t)hp->n_head_kv * hd;
    const float *rope = vt_gpu_step_rope(&m->step);
    int rc;
#define STEP(call)                                                                                  \
    if ((rc = (call)))                                                                              \
        return rc;

    /* 1. Embeddings; the first layer's RMSNorm (each later one goes with
     *    the residual add before it). The residual stream x goes from one
     *    buffer to the other at each add, since a product that takes the add
     *    into its launch reads the old stream in every block. */
    float *x = m->x;
    STEP(vt_gpu_embed(g, &m->embd, vt_gpu_step_ids(&m->step, n_tok), n_tok, x, err))
    STEP(vt_gpu_rmsnorm_rows(g, m->xn, x, m->layers[0].attn_norm, n_tok, E, hp->rms_eps, err))

    for (int32_t l = 0; l < hp->n_layer; l++) {
        const gpu_layer *L = &m->layers[l];
        /* 2. Q, K, V projections of the RMSNormed stream (one launch where
         *    their codecs allow; after the first layer with the residual add
         *    of the feed-forward before it and this layer's RMSNorm). */
        const vt_gpu_mat *qkv[3] = { &L->wq, &L->wk, &L->wv };
        float *const qkv_out[3] = { m->q, m->kb, m->vb };
        const int64_t qkv_ld[3] = { qd, kvd, kvd };
        if (l == 0) {
            STEP(vt_gpu_matmul_group(g, qkv, 3, m->xn, n_tok, qkv_out, qkv_ld, err))
        } else {
            const vt_gpu_add_norm an = vt_gpu_add_norm_next(x, m->proj, m->x, m->x2, m->xn, L->attn_norm, hp->rms_eps);
            STEP(vt_gpu_add_norm_matmul_group(g, &an, qkv, 3, n_tok, qkv_out, qkv_ld, err))
            x = an.x_out;
        }
        /* 3. Per-head RMSNorm and RoPE of Q and K; K and V into the cache;
         * 4. causal grouped-query attention (for one token, one launch). */
        STEP(vt_gpu_qk_norm_rope_attention(g, &m->kv, l, keys_max, n_tok, m->q, qd, m->kb, kvd, m->vb, kvd,
                                           hp->n_head, hp->n_head_kv, hd, L->q_norm, L->k_norm, hp->rms_eps, rope,
                                           hd, m->att, qd, err))
        /* 5. Output projection. */
        STEP(vt_gpu_matmul(g, &L->wo, m->att, n_tok, m->proj, E, err))
        /* 6. Feed-forward: the residual add and its RMSNorm, gate and up,
         *    SwiGLU (one launch for one token), down. */
        const vt_gpu_add_norm an = vt_gpu_add_norm_next(x, m->proj, m->x, m->x2, m->xn, L->ffn_norm, hp->rms_eps);
        STEP(vt_gpu_add_norm_gate_up_swiglu(g, &an, &L->gate, &L->up, n_tok, m->gate, m->up, err))
        x = an.x_out;
        STEP(vt_gpu_matmul(g, &L->down, m->gate, n_tok, m->proj, E, err))
    }
    /* 7. The last residual add; the final RMSNorm and the output head for
     *    the rows asked for. */
    if (out0 == 0 && n_out == n_tok) {
        STEP(vt_gpu_add_rmsnorm(g, x, m->proj, m->xn, m->output_norm, n_tok, E, hp->rms_eps, err))
    } else {
        STEP(vt_gpu_add(g, x, m->proj, n_tok * E, err))
        if (n_out <= 0)
            return VT_OK;
        STEP(vt_gpu_rmsnorm_rows(g, m->xn, x + out0 * E, m->output_norm, n_out, E, hp->rms_eps, err))
    }
    STEP(vt_gpu_matmul(g, &m->output, m->xn, n_out, m->logits, V, err))
    return VT_OK;
#undef STEP
}

/* One batch at positions n_past ..; the logits of rows [out0, out0 + n_out)
 * copied to logits. A production decode step (one token, its logits) runs
 * as the graph captured at the first such step: the copy of its inputs in,
 * the kernels, the copy of its logits out to page-locked memory. */
static int forward_batch(vt_gpu_qwen3 *m, const int32_t *tokens, int64_t n_tok, int64_t out0, int64_t n_out,
                         float *logits, vt_error *err)
{
    vt_gpu *g = m->g;
    const vt_qwen3_hparams *hp = &m->hp;
    const int64_t hd = hp->head_dim;
    const int32_t pos0 = m->n_past;
    float *rope = vt_gpu_step_rope_host(&m->step);
    int64_t *ids = vt_gpu_step_ids_host(&m->step, n_tok);
    for (int64_t t = 0; t < n_tok; t++) {
        ids[t] = tokens[t];
        vt_rope_angles(rope + t * hd, pos0 + (int32_t)t, hd, hp->rope_base);
    }
    vt_gpu_profile_phase(g, n_tok == 1);
    const int as_graph = m->production && n_tok == 1 && n_out == 1 && m->n_ctx <= VT_GPU_GRAPH_MAX_CTX;
    int rc = vt_gpu_step_run(g, &m->step, &m->decode, as_graph, pos0, n_tok, out0, n_out, m->n_ctx, m->logits,
                             enqueue_batch, m, err);
    if (rc)
        return rc;
    m->n_past += (int32_t)n_tok;
    if (n_out <= 0)
        return vt_gpu_wait(g, err);
    if (n_out == 1)
        return vt_gpu_step_logits_take(g, &m->step, logits, err);
    return vt_gpu_to_host(g, logits, m->logits, (size_t)(n_out * hp->n_vocab) * sizeof(float), err);
}

int vt_gpu_qwen3_eval(vt_gpu_qwen3 *m, const int32_t *tokens, int32_t n, int all_logits, float *logits, vt_error *err)
{
    int rc = vt_eval_check("gpu qwen3", tokens, n, logits, m->n_past, m->n_ctx, m->hp.n_vocab, err);
    if (rc || (rc = vt_gpu_use(m->g, err)))
        return rc;
    for (int32_t i0 = 0; i0 < n; i0 += m->n_batch) {
        const int32_t nt = n - i0 < m->n_batch ? n - i0 : m->n_batch;
        const int last = i0 + nt == n;
        if (all_logits)
            rc = forward_batch(m, tokens + i0, nt, 0, nt, logits + (size_t)i0 * (size_t)m->hp.n_vocab, err);
        else
            rc = forward_batch(m, tokens + i0, nt, last ? nt - 1 : 0, last ? 1 : 0, logits, err);
        if (rc)
            return rc;
    }
    return VT_OK;
}
