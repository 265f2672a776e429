/* The qwen35 forward pass on the GPU (vt_gpu.h), step by step as qwen35.c:
 *   embedding rows
 *   per layer: RMSNorm -> token mixer, by the layer schedule:
 *     gated delta net: Q|K|V and z, beta and alpha projections -> causal
 *       conv1d over time (its state carried) -> SiLU -> L2 norm of the Q and
 *       K heads, beta = sigmoid, g = softplus(alpha + dt_bias) * a -> the
 *       gated delta rule token after token per value head (its state
 *       carried) -> gated RMSNorm (times silu(z)) -> output projection
 *     gated attention: query+gate, K, V projections -> per-head RMSNorm and
 *       RoPE of the first n_rot dimensions -> K, V into the cache ->
 *       attention -> times sigmoid(gate) -> output projection
 *   -> residual add -> RMSNorm -> gate, up -> SwiGLU -> down -> residual add
 *   final RMSNorm -> output head -> logits, copied to the host
 *   (launches joined as in qwen3_gpu.c; the four delta-net projections are
 *   one where they share a codec, and for one token conv1d, SiLU, the L2
 *   norms and the gates are one)
 * The CPU engine opens and checks the file (vt_qwen35_open); the tensors it
 * loaded (qwen35_model.h) are copied in their codecs. RoPE angles are the
 * CPU's (vt_q35_rope_angles). Both matmul modes, as qwen3_gpu.c. Every operation is
 * the CPU's order (ops.hip); the few values qwen35.c takes from the C
 * library's expf and logf (beta, the decay, the attention gate's sigmoid)
 * the kernels compute by engine_math.h's copies of those functions, so no
 * step waits on the host. */
#include "gpu_weights.h"
#include "vt_gpu.h"

#include "../kernels.h"
#include "../qwen35_kernels.h"
#include "../qwen35_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct gpu_layer {
    int recurrent;
    int32_t slot;
    float *attn_norm, *post_norm;
    vt_gpu_mat wq, wk, wv, wo;
    float *q_norm, *k_norm;
    vt_gpu_mat wqkv, wz, wbeta, walpha, ssm_out;
    float *conv, *ssm_norm;
    float *dt_bias, *ssm_a;
    vt_gpu_mat gate, up, down;
} gpu_layer;

struct vt_gpu_qwen35 {
    vt_qwen35 *cpu;
    vt_gpu *g;
    vt_qwen35_hparams hp;
    int64_t key_dim, value_dim, conv_dim;
    int32_t n_ctx, n_batch, n_past;
    vt_gpu_mat embd, output;
    float *output_norm;
    gpu_layer *layers;
    vt_gpu_kv kv;
    float *conv_state, *delta_state; /* device, F32 */
    size_t conv_state_bytes, delta_state_bytes;
    float *x, *x2, *xn, *proj, *qfull, *q, *qgate, *kb, *vb, *att, *qkv, *conv, *z, *beta, *alpha, *o, *ffg, *ffu,
        *logits;
    vt_gpu_step step; /* ids, position, angles */
    int production;
    vt_gpu_graph *decode;
    vt_gpu_store store; /* every device and page-locked allocation */
};

static int load(vt_gpu_qwen35 *m, vt_error *err)
{
    const vt_qwen35 *c = m->cpu;
    const vt_qwen35_hparams *hp = &m->hp;
    const int64_t E = hp->n_embd, hd = hp->head_dim, d = hp->d_state;
    int rc;
    if ((rc = vt_gpu_store_mat(&m->store, &c->embd, &m->embd, err)) || (rc = vt_gpu_store_vec(&m->store, c->output_norm, E, &m->output_norm, err)))
        return rc;
    if (hp->tied_output)
        m->output = m->embd;
    else if ((rc = vt_gpu_store_mat(&m->store, &c->output, &m->output, err)))
        return rc;
    if (!(m->layers = calloc((size_t)hp->n_layer, sizeof *m->layers)))
        return vt_error_set(err, VT_EINPUT, "gpu qwen35: out of memory");
    for (int32_t l = 0; l < hp->n_layer; l++) {
        const vt_q35_layer *S = &c->layers[l];
        gpu_layer *L = &m->layers[l];
        L->recurrent = S->recurrent;
        L->slot = S->slot;
        if ((rc = vt_gpu_store_vec(&m->store, S->attn_norm, E, &L->attn_norm, err)) ||
            (rc = vt_gpu_store_vec(&m->store, S->post_norm, E, &L->post_norm, err)) || (rc = vt_gpu_store_mat(&m->store, &S->gate, &L->gate, err)) ||
            (rc = vt_gpu_store_mat(&m->store, &S->up, &L->up, err)) || (rc = vt_gpu_store_mat(&m->store, &S->down, &L->down, err)))
            return rc;
        if (S->recurrent) {
            if ((rc = vt_gpu_store_mat(&m->store, &S->wqkv, &L->wqkv, err)) || (rc = vt_gpu_store_mat(&m->store, &S->wz, &L->wz, err)) ||
                (rc = vt_gpu_store_mat(&m->store, &S->wbeta, &L->wbeta, err)) || (rc = vt_gpu_store_mat(&m->store, &S->walpha, &L->walpha, err)) ||
                (rc = vt_gpu_store_mat(&m->store, &S->ssm_out, &L->ssm_out, err)) ||
                (rc = vt_gpu_store_vec(&m->store, S->conv, m->conv_dim * hp->d_conv, &L->conv, err)) ||
                (rc = vt_gpu_store_vec(&m->store, S->ssm_norm, d, &L->ssm_norm, err)) ||
                (rc = vt_gpu_store_vec(&m->store, S->dt_bias, hp->n_v_heads, &L->dt_bias, err)) ||
                (rc = vt_gpu_store_vec(&m->store, S->ssm_a, hp->n_v_heads, &L->ssm_a, err)))
                return rc;
        } else if ((rc = vt_gpu_store_mat(&m->store, &S->wq, &L->wq, err)) || (rc = vt_gpu_store_mat(&m->store, &S->wk, &L->wk, err)) ||
                   (rc = vt_gpu_store_mat(&m->store, &S->wv, &L->wv, err)) || (rc = vt_gpu_store_mat(&m->store, &S->wo, &L->wo, err)) ||
                   (rc = vt_gpu_store_vec(&m->store, S->q_norm, hd, &L->q_norm, err)) ||
                   (rc = vt_gpu_store_vec(&m->store, S->k_norm, hd, &L->k_norm, err))) {
            return rc;
        }
    }
    return VT_OK;
}

static int allocate(vt_gpu_qwen35 *m, vt_cache_dtype dtype, vt_error *err)
{
    const vt_qwen35_hparams *hp = &m->hp;
    const size_t B = (size_t)m->n_batch, E = (size_t)hp->n_embd, F = (size_t)hp->n_ff, hd = (size_t)hp->head_dim;
    const size_t qd = (size_t)hp->n_head * hd, kvd = (size_t)hp->n_head_kv * hd;
    const size_t C = (size_t)m->conv_dim, V = (size_t)m->value_dim, nv = (size_t)hp->n_v_heads;
    const size_t d = (size_t)hp->d_state, nrec = (size_t)hp->n_recurrent;
    float **bufs[] = { &m->x,  &m->x2, &m->xn,   &m->proj, &m->qfull, &m->q,    &m->qgate, &m->kb,  &m->vb,  &m->att,
                       &m->qkv, &m->conv, &m->z,    &m->beta,  &m->alpha,   &m->o,     &m->ffg, &m->ffu };
    const size_t widths[] = { E, E, E, E, 2 * qd, qd, qd, kvd, kvd, qd, C, C, V, nv, nv, V, F, F };
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        if (!(*bufs[i] = vt_gpu_store_alloc(&m->store, B * widths[i] * sizeof(float), err)))
            return err->code;
    if (!(m->logits = vt_gpu_store_alloc(&m->store, B * (size_t)hp->n_vocab * sizeof(float), err)))
        return err->code;
    int rc = vt_gpu_step_alloc(&m->store, &m->step, (int64_t)B, hp->n_rot, hp->n_vocab, err);
    /* q8: the widest activation of a batch, in F32 (more than its blocks) */
    size_t wide = E > F ? E : F;
    wide = wide > 2 * qd ? wide : 2 * qd;
    wide = wide > C ? wide : C;
    wide = wide > V ? wide : V;
    if (rc == VT_OK && vt_gpu_matmul_of(m->g) == VT_MATMUL_Q8)
        rc = vt_gpu_reserve(m->g, B * wide * sizeof(float), err);
    if (rc)
        return rc;
    m->conv_state_bytes = (nrec * C * (size_t)(hp->d_conv - 1) + 1) * sizeof(float);
    m->delta_state_bytes = (nrec * nv * d * d + 1) * sizeof(float);
    if (!(m->conv_state = vt_gpu_store_alloc(&m->store, m->conv_state_bytes, err)) ||
        !(m->delta_state = vt_gpu_store_alloc(&m->store, m->delta_state_bytes, err)))
        return err->code;
    const int32_t n_attn = hp->n_layer - hp->n_recurrent;
    const size_t elem = vt_cache_elem_bytes(dtype);
    const size_t cells = (size_t)n_attn * (size_t)m->n_ctx * kvd + 1;
    float table[256];
    for (int c = 0; c < 256; c++)
        table[c] = vt_fp8_e4m3_to_f32((uint8_t)c);
    float *dtable;
    void *k, *v;
    if (!(k = vt_gpu_store_alloc(&m->store, cells * elem, err)) || !(v = vt_gpu_store_alloc(&m->store, cells * elem, err)) ||
        !(dtable = vt_gpu_store_alloc(&m->store, sizeof table, err)) || vt_gpu_to_device(m->g, dtable, table, sizeof table, err))
        return err->code;
    m->kv = (vt_gpu_kv){ .k = k, .v = v, .pos = vt_gpu_step_pos(&m->step), .dtype = (int)dtype, .elem = (int)elem,
                         .n_layer = n_attn, .n_ctx = m->n_ctx, .kv_dim = (int64_t)kvd, .fp8_table = dtable };
    return VT_OK;
}

static int zero_states(vt_gpu_qwen35 *m, vt_error *err)
{
    int rc = vt_gpu_zero(m->g, m->conv_state, m->conv_state_bytes, err);
    if (!rc)
        rc = vt_gpu_zero(m->g, m->delta_state, m->delta_state_bytes, err);
    if (!rc)
        rc = vt_gpu_wait(m->g, err);
    m->n_past = 0;
    return rc;
}

vt_gpu_qwen35 *vt_gpu_qwen35_open(int device, const vt_runner_settings *s, vt_error *err)
{
    vt_gpu_qwen35 *m = calloc(1, sizeof *m);
    if (!m) {
        vt_error_set(err, VT_EINPUT, "gpu qwen35: out of memory");
        return NULL;
    }
    if (!(m->cpu = vt_qwen35_open(s, err)) || !(m->g = vt_gpu_open(device, err))) {
        vt_gpu_qwen35_close(m);
        return NULL;
    }
    m->store.g = m->g;
    vt_gpu_set_matmul(m->g, s->matmul); /* before the weights: each type checked against it */
    m->hp = m->cpu->hp;
    m->key_dim = m->cpu->key_dim;
    m->value_dim = m->cpu->value_dim;
    m->conv_dim = m->cpu->conv_dim;
    vt_runner_settings r = *s;
    vt_qwen35_resolved(m->cpu, &r);
    m->n_ctx = r.n_ctx;
    m->n_batch = r.n_batch;
    m->production = r.mode == VT_MODE_PRODUCTION;
    if (load(m, err) || allocate(m, r.cache_dtype, err) || zero_states(m, err)) {
        vt_gpu_qwen35_close(m);
        return NULL;
    }
    return m;
}

void vt_gpu_qwen35_close(vt_gpu_qwen35 *m)
{
    if (!m)
        return;
    if (m->g) {
        vt_gpu_graph_free(m->g, m->decode);
        vt_gpu_store_free(&m->store);
        vt_gpu_close(m->g);
    }
    free(m->layers);
    vt_qwen35_close(m->cpu);
    free(m);
}

void vt_gpu_qwen35_reset(vt_gpu_qwen35 *m)
{
    vt_error ignored;
    if (vt_gpu_use(m->g, &ignored) == VT_OK)
        zero_states(m, &ignored);
    m->n_past = 0;
}

int32_t vt_gpu_qwen35_n_vocab(const vt_gpu_qwen35 *m) { return m->hp.n_vocab; }

void vt_gpu_qwen35_counts(const vt_gpu_qwen35 *m, uint64_t *launches, uint64_t *copies)
{
    vt_gpu_counts(m->g, launches, copies);
}

void vt_gpu_qwen35_resolved(const vt_gpu_qwen35 *m, vt_runner_settings *out)
{
    vt_qwen35_resolved(m->cpu, out);
    out->n_threads = 1; /* one host thread drives the device */
}

#define STEP(call)                                                                                  \
    if ((rc = (call)))                                                                              \
        return rc;

/* xn -> proj through the gated delta net of layer L; an: where not NULL,
 * the residual add and RMSNorm that make xn, taken by the first product. */
static int delta_net_mixer(vt_gpu_qwen35 *m, const gpu_layer *L, const vt_gpu_add_norm *an, int64_t n_tok,
                           vt_error *err)
{
    vt_gpu *g = m->g;
    const vt_qwen35_hparams *hp = &m->hp;
    const int64_t E = hp->n_embd, C = m->conv_dim, V = m->value_dim, d = hp->d_state, nv = hp->n_v_heads;
    const int32_t K = hp->d_conv;
    float *cstate = m->conv_state + (size_t)L->slot * (size_t)C * (size_t)(K - 1);
    float *dstate = m->delta_state + (size_t)L->slot * (size_t)nv * (size_t)(d * d);
    int rc;
    /* a. Projections: one launch where the four share a codec, else Q|K|V
     *    with z and beta with alpha (a real file may keep the small two in
     *    F32). */
    const vt_gpu_mat *in_proj[4] = { &L->wqkv, &L->wz, &L->wbeta, &L->walpha };
    float *const in_out[4] = { m->qkv, m->z, m->beta, m->alpha };
    const int64_t in_ld[4] = { C, V, nv, nv };
    if (L->wbeta.type == L->wqkv.type && L->walpha.type == L->wqkv.type) {
        STEP(an ? vt_gpu_add_norm_matmul_group(g, an, in_proj, 4, n_tok, in_out, in_ld, err)
                : vt_gpu_matmul_group(g, in_proj, 4, m->xn, n_tok, in_out, in_ld, err))
    } else {
        if (an) {
            STEP(vt_gpu_add_norm_alone(g, an, n_tok, E, err))
        }
        STEP(vt_gpu_matmul_group(g, in_proj, 2, m->xn, n_tok, in_out, in_ld, err))
        STEP(vt_gpu_matmul_group(g, in_proj + 2, 2, m->xn, n_tok, in_out + 2, in_ld + 2, err))
    }
    /* b. Causal conv1d, then SiLU per token row; c. L2 norm of every Q and
     *    K head (one token: the three in one launch). */
    const int n_norm = (int)(2 * m->key_dim / d);
    vt_gpu_delta_gates gates = { .beta = m->beta, .alpha = m->alpha, .dt_bias = L->dt_bias, .a = L->ssm_a };
    STEP(vt_gpu_conv_silu_l2norm(g, m->qkv, n_tok, L->conv, K, cstate, C, n_norm, d, hp->rms_eps, m->conv, &gates,
                                 nv, err))
    /* d. The gated delta rule, its gates (beta = sigmoid(beta), the decay
     *    exp(softplus(alpha + dt_bias) * a)) computed where they are used
     *    unless the one-token launch above computed them. */
    STEP(vt_gpu_delta_rule(g, dstate, d, m->conv, C, m->key_dim, hp->n_k_heads, gates, nv, n_tok, m->o, V, err))
    /* e. Gated RMSNorm per head; f. output projection. */
    STEP(vt_gpu_gated_norm(g, m->o, m->z, L->ssm_norm, n_tok * V / d, d, hp->rms_eps, err))
    STEP(vt_gpu_matmul(g, &L->ssm_out, m->o, n_tok, m->proj, E, err))
    return VT_OK;
}

/* xn -> proj through the gated attention of layer L (an: as delta_net_mixer's). */
static int attention_mixer(vt_gpu_qwen35 *m, const gpu_layer *L, const vt_gpu_add_norm *an, int64_t n_tok,
                           int32_t keys_max, vt_error *err)
{
    vt_gpu *g = m->g;
    const vt_qwen35_hparams *hp = &m->hp;
    const int64_t E = hp->n_embd, hd = hp->head_dim, qd = (int64_t)hp->n_head * hd, kvd = m->kv.kv_dim;
    int rc;
    const vt_gpu_mat *qkv[3] = { &L->wq, &L->wk, &L->wv };
    float *const qkv_out[3] = { m->qfull, m->kb, m->vb };
    const int64_t qkv_ld[3] = { 2 * qd, kvd, kvd };
    STEP(an ? vt_gpu_add_norm_matmul_group(g, an, qkv, 3, n_tok, qkv_out, qkv_ld, err)
            : vt_gpu_matmul_group(g, qkv, 3, m->xn, n_tok, qkv_out, qkv_ld, err))
    STEP(vt_gpu_split_qgate(g, m->qfull, n_tok, hp->n_head, hd, m->q, m->qgate, err))
    STEP(vt_gpu_qk_norm_rope_attention(g, &m->kv, L->slot, keys_max, n_tok, m->q, qd, m->kb, kvd, m->vb, kvd,
                                       hp->n_head, hp->n_head_kv, hd, L->q_norm, L->k_norm, hp->rms_eps,
                                       vt_gpu_step_rope(&m->step), hp->n_rot, m->att, qd, err))
    STEP(vt_gpu_mul_sigmoid(g, m->att, m->qgate, n_tok * qd, err))
    STEP(vt_gpu_matmul(g, &L->wo, m->att, n_tok, m->proj, E, err))
    return VT_OK;
}

/* The kernels of one batch (its inputs in m->step); the logits of rows
 * [out0, out0 + n_out) into m->logits (gpu_weights.h's vt_gpu_enqueue_fn). */
static int enqueue_batch(void *model, int64_t n_tok, int64_t out0, int64_t n_out, int32_t keys_max, int captured,
                         vt_error *err)
{
    vt_gpu_qwen35 *m = model;
    (void)captured; /* the same kernels either way */
    vt_gpu *g = m->g;
    const vt_qwen35_hparams *hp = &m->hp;
    const int64_t E = hp->n_embd, V = hp->n_vocab;
    int rc;
    /* 1. Embeddings; the first layer's RMSNorm (each later one goes with
     *    the residual add before it, as in qwen3_gpu.c: the stream x from one
     *    buffer to the other at each add). */
    float *x = m->x;
    STEP(vt_gpu_embed(g, &m->embd, vt_gpu_step_ids(&m->step, n_tok), n_tok, x, err))
    STEP(vt_gpu_rmsnorm_rows(g, m->xn, x, m->layers[0].attn_norm, n_tok, E, hp->rms_eps, err))
    for (int32_t l = 0; l < hp->n_layer; l++) {
        const gpu_layer *L = &m->layers[l];
        /* 2. Token mixing on the RMSNormed stream (after the first layer
         *    with the residual add of the feed-forward before it and this
         *    layer's RMSNorm). */
        const vt_gpu_add_norm mix = vt_gpu_add_norm_next(x, m->proj, m->x, m->x2, m->xn, L->attn_norm, hp->rms_eps);
        const vt_gpu_add_norm *an = l ? &mix : NULL;
        STEP(L->recurrent ? delta_net_mixer(m, L, an, n_tok, err) : attention_mixer(m, L, an, n_tok, keys_max, err))
        if (an)
            x = an->x_out;
        /* 3. Feed-forward: the residual add and the post-attention RMSNorm,
         *    gate, up and SwiGLU (one launch for one token), down. */
        const vt_gpu_add_norm ffn = vt_gpu_add_norm_next(x, m->proj, m->x, m->x2, m->xn, L->post_norm, hp->rms_eps);
        STEP(vt_gpu_add_norm_gate_up_swiglu(g, &ffn, &L->gate, &L->up, n_tok, m->ffg, m->ffu, err))
        x = ffn.x_out;
        STEP(vt_gpu_matmul(g, &L->down, m->ffg, n_tok, m->proj, E, err))
    }
    /* 4. The last residual add; the final RMSNorm and the output head for
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
}

/* One batch at positions n_past ..; as qwen3_gpu.c's (production decode
 * steps through the graph captured at the first). */
static int forward_batch(vt_gpu_qwen35 *m, const int32_t *tokens, int64_t n_tok, int64_t out0, int64_t n_out,
                         float *logits, vt_error *err)
{
    vt_gpu *g = m->g;
    const vt_qwen35_hparams *hp = &m->hp;
    const int64_t nr = hp->n_rot;
    float *rope = vt_gpu_step_rope_host(&m->step);
    int64_t *ids = vt_gpu_step_ids_host(&m->step, n_tok);
    /* 1. RoPE angles of the batch's positions (the CPU's), the ids. */
    for (int64_t t = 0; t < n_tok; t++) {
        const int32_t p = m->n_past + (int32_t)t, pos[4] = { p, p, p, p };
        ids[t] = tokens[t];
        vt_q35_rope_angles(rope + t * nr, pos, hp->rope_sections, nr, hp->rope_base);
    }
    vt_gpu_profile_phase(g, n_tok == 1);
    const int as_graph = m->production && n_tok == 1 && n_out == 1 && m->n_ctx <= VT_GPU_GRAPH_MAX_CTX;
    int rc = vt_gpu_step_run(g, &m->step, &m->decode, as_graph, m->n_past, n_tok, out0, n_out, m->n_ctx, m->logits,
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

int vt_gpu_qwen35_eval(vt_gpu_qwen35 *m, const int32_t *tokens, int32_t n, int all_logits, float *logits,
                       vt_error *err)
{
    int rc = vt_eval_check("gpu qwen35", tokens, n, logits, m->n_past, m->n_ctx, m->hp.n_vocab, err);
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
