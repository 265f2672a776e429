/* The Qwen3.5 forward pass (see qwen35.h for one token's path). Read top to
 * bottom: the two recurrences (conv1d and the gated delta rule) and small
 * element-wise pieces, the model's state, loading, then the forward pass:
 * forward_batch carries a batch from embeddings to logits, calling
 * delta_net_mixer or attention_mixer for each layer's token mixing.
 *
 * The machinery (dot kernels, Q8 activation rounding, thread pool, matrix
 * products with weights in their codec, KV cache, causal GQA attention) is
 * kernels.c, shared with qwen3.c. The mathematics follows llama.cpp's CPU
 * backend: src/models/qwen35.cpp and delta-net-base.cpp for the graph; the
 * ggml-cpu ops ssm_conv, gated_delta_net (the fused op llama.cpp uses on the
 * CPU for prefill and decode alike), rope (IMROPE), rms_norm, softplus. */
#include "qwen35.h"

/* No fused multiply-add in this file either (see kernels.c). */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include "codec.h"
#include "gguf_file.h"
#include "kernels.h"
#include "qwen35_kernels.h"
#include "qwen35_model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ======================================================================
 * The recurrences and element-wise pieces (qwen35_kernels.h)
 * ====================================================================== */

void vt_q35_conv1d(const float *x, int64_t ldx, int64_t n_tok, const float *w, int32_t d_conv,
                   float *state, int64_t c0, int64_t c1, float *y, int64_t ldy)
{
    const int32_t K = d_conv, H = d_conv - 1; /* taps, history length */
    for (int64_t c = c0; c < c1; c++) {
        /* The window: the channel's last K-1 inputs, then the current one. */
        float win[VT_Q35_MAX_CONV];
        float *hist = state + c * H;
        const float *wc = w + c * K;
        for (int32_t i = 0; i < H; i++)
            win[i] = hist[i];
        for (int64_t t = 0; t < n_tok; t++) {
            win[H] = x[t * ldx + c];
            /* ggml_compute_forward_ssm_conv_f32 at fewer than 8 taps: one
             * fused multiply-add per tap, oldest first, from 0. */
            float sum = 0.0f;
            for (int32_t i = 0; i < K; i++)
                sum = fmaf(win[i], wc[i], sum);
            y[t * ldy + c] = sum;
            for (int32_t i = 0; i < H; i++) /* slide by one token */
                win[i] = win[i + 1];
        }
        for (int32_t i = 0; i < H; i++)
            hist[i] = win[i];
    }
}

void vt_q35_delta_rule(const vt_kernels *kern, float *s, int64_t d, const float *q,
                       const float *key, int64_t ldqk, const float *v, int64_t ldv,
                       const float *g, const float *beta, int64_t ldgb, int64_t n_tok, float *o,
                       int64_t ldo, float *delta)
{
    const float scale = 1.0f / sqrtf((float)d);
    for (int64_t t = 0; t < n_tok; t++) {
        const float *qt = q + t * ldqk, *kt = key + t * ldqk, *vt = v + t * ldv;
        const float decay = expf(g[t * ldgb]), b = beta[t * ldgb];
        /* Decay the whole state (ggml_vec_scale_f32). */
        for (int64_t i = 0; i < d * d; i++)
            s[i] *= decay;
        /* The error of the state's prediction of v from k, scaled by beta. */
        for (int64_t j = 0; j < d; j++)
            delta[j] = (vt[j] - kern->dot(s + j * d, kt, d)) * b;
        /* Rank-one update: column j of S moves by delta_j along k, one
         * fused multiply-add per element (ggml_compute_forward_gated_delta_net). */
        for (int64_t j = 0; j < d; j++)
            kern->fmadd(s + j * d, kt, delta[j], d);
        /* Read out with the query. */
        float *ot = o + t * ldo;
        for (int64_t j = 0; j < d; j++)
            ot[j] = kern->dot(s + j * d, qt, d) * scale;
    }
}

void vt_q35_l2norm(float *x, int64_t n, float eps)
{
    /* llama.cpp's build_gdn_l2_norm: ggml_rms_norm with eps/n, then
     * ggml_scale by 1/sqrt(n); the same roundings here. (Its graph dumps
     * show these two nodes, not ggml_l2_norm's one.) */
    vt_rmsnorm(x, x, NULL, n, eps / (float)n);
    const float s = 1.0f / sqrtf((float)n);
    for (int64_t i = 0; i < n; i++)
        x[i] *= s;
}

float vt_q35_softplus(float x) { return x > 20.0f ? x : logf(1.0f + expf(x)); }

void vt_q35_rope_angles(float *cs, const int32_t pos[4], const int32_t sections[4],
                        int64_t n_rot, float base)
{
    const float theta_scale = powf(base, -2.0f / (float)n_rot);
    const int32_t sect_dims = sections[0] + sections[1] + sections[2] + sections[3];
    float theta[4] = { (float)pos[0], (float)pos[1], (float)pos[2], (float)pos[3] };
    for (int64_t p = 0; p < n_rot / 2; p++) {
        /* Interleaved sections: t, h, w, t, h, w, ... while each lasts. */
        const int32_t sector = sect_dims > 0 ? (int32_t)(p % sect_dims) : 0;
        int which = 3;
        if (sector % 3 == 1 && sector < 3 * sections[1])
            which = 1;
        else if (sector % 3 == 2 && sector < 3 * sections[2])
            which = 2;
        else if (sector % 3 == 0 && sector < 3 * sections[0])
            which = 0;
        if (sect_dims == 0)
            which = 0;
        cs[2 * p] = cosf(theta[which]);
        cs[2 * p + 1] = sinf(theta[which]);
        for (int i = 0; i < 4; i++)
            theta[i] *= theta_scale;
    }
}

/* ======================================================================
 * The model
 * ====================================================================== */


/* ---------- loading ---------- */

/* Which layers are recurrent: qwen35.attention.recurrent_layers (one bool
 * or integer per block) if present, else every full_attention_interval-th
 * layer (default 4) is full attention, as llama.cpp. */
static int load_schedule(const vt_gguf *g, vt_qwen35 *m, int32_t n_block, vt_error *err)
{
    const char *file = vt_gguf_name(g);
    const int64_t at = vt_gguf_find_key(g, "qwen35.attention.recurrent_layers");
    if (at >= 0) {
        const vt_gguf_value *arr = vt_gguf_kv_value(g, (uint64_t)at);
        if (arr->type != VT_GGUF_ARRAY || arr->count < (uint64_t)n_block)
            return vt_error_set(err, VT_EINPUT, "%s: key qwen35.attention.recurrent_layers: "
                                "expected an array of %d flags", file, n_block);
        for (int32_t l = 0; l < m->hp.n_layer; l++) {
            vt_gguf_value e;
            if (!vt_gguf_array_get(g, arr, (uint64_t)l, &e) ||
                (e.type != VT_GGUF_BOOL && e.type != VT_GGUF_I32 && e.type != VT_GGUF_U32 &&
                 e.type != VT_GGUF_I8 && e.type != VT_GGUF_U8))
                return vt_error_set(err, VT_EINPUT, "%s: key qwen35.attention.recurrent_layers: "
                                    "element %d: expected a bool or an integer", file, (int)l);
            m->layers[l].recurrent = e.type == VT_GGUF_BOOL ? e.v.b != 0 : e.v.i64 != 0;
        }
        return VT_OK;
    }
    int32_t interval;
    int rc = vt_load_i32(g, "qwen35", "full_attention_interval", 0, 4, &interval, err);
    if (rc)
        return rc;
    for (int32_t l = 0; l < m->hp.n_layer; l++)
        m->layers[l].recurrent = (l + 1) % interval != 0;
    return VT_OK;
}

static int load_hparams(vt_qwen35 *m, vt_error *err)
{
    const vt_gguf *g = m->gguf;
    vt_qwen35_hparams *hp = &m->hp;
    const char *file = vt_gguf_name(g), *A = "qwen35";
    int32_t n_block, n_nextn = 0, hd_v;
    int rc = vt_load_check_arch(g, A, err);
    if (rc || (rc = vt_load_i32(g, A, "embedding_length", 1, 0, &hp->n_embd, err)) ||
        (rc = vt_load_i32(g, A, "block_count", 1, 0, &n_block, err)) ||
        (rc = vt_load_i32(g, A, "feed_forward_length", 1, 0, &hp->n_ff, err)) ||
        (rc = vt_load_i32(g, A, "attention.head_count", 1, 0, &hp->n_head, err)) ||
        (rc = vt_load_i32(g, A, "attention.head_count_kv", 0, hp->n_head, &hp->n_head_kv, err)) ||
        (rc = vt_load_i32(g, A, "context_length", 0, 0, &hp->n_ctx_train, err)) ||
        (rc = vt_load_f32(g, A, "rope.freq_base", 0, 10000.0f, &hp->rope_base, err)) ||
        (rc = vt_load_f32(g, A, "attention.layer_norm_rms_epsilon", 1, 0.0f, &hp->rms_eps, err)) ||
        (rc = vt_load_i32(g, A, "ssm.conv_kernel", 1, 0, &hp->d_conv, err)) ||
        (rc = vt_load_i32(g, A, "ssm.inner_size", 1, 0, &hp->d_inner, err)) ||
        (rc = vt_load_i32(g, A, "ssm.state_size", 1, 0, &hp->d_state, err)) ||
        (rc = vt_load_i32(g, A, "ssm.time_step_rank", 1, 0, &hp->n_v_heads, err)) ||
        (rc = vt_load_i32(g, A, "ssm.group_count", 1, 0, &hp->n_k_heads, err)))
        return rc;
    if (vt_gguf_find_key(g, "qwen35.nextn_predict_layers") >= 0) {
        int64_t v;
        if (!vt_gguf_get_i64(g, "qwen35.nextn_predict_layers", &v) || v < 0 || v >= n_block)
            return vt_error_set(err, VT_EINPUT, "%s: key qwen35.nextn_predict_layers: expected "
                                "0 .. block_count-1", file);
        n_nextn = (int32_t)v;
    }
    hp->n_layer = n_block - n_nextn;
    const int32_t hd_def = hp->n_embd / hp->n_head;
    if ((rc = vt_load_i32(g, A, "attention.key_length", 0, hd_def, &hp->head_dim, err)) ||
        (rc = vt_load_i32(g, A, "attention.value_length", 0, hd_def, &hd_v, err)) ||
        (rc = vt_load_i32(g, A, "rope.dimension_count", 0, hp->head_dim, &hp->n_rot, err)))
        return rc;
    if (hd_v != hp->head_dim)
        return vt_error_set(err, VT_EINPUT, "%s: attention.key_length %d != value_length %d",
                            file, hp->head_dim, hd_v);
    if (hp->n_rot % 2 != 0 || hp->n_rot > hp->head_dim)
        return vt_error_set(err, VT_EINPUT, "%s: rope.dimension_count %d: expected even and at "
                            "most key_length %d", file, hp->n_rot, hp->head_dim);
    if (hp->n_head_kv > hp->n_head || hp->n_head % hp->n_head_kv != 0)
        return vt_error_set(err, VT_EINPUT,
                            "%s: attention.head_count_kv %d: expected a divisor of head_count %d",
                            file, hp->n_head_kv, hp->n_head);
    if ((int64_t)hp->n_head * hp->head_dim * 2 > INT32_MAX)
        return vt_error_set(err, VT_EINPUT, "%s: head_count x key_length too large", file);
    if (!(hp->rope_base > 0.0f))
        return vt_error_set(err, VT_EINPUT, "%s: rope.freq_base: expected > 0", file);
    const int64_t sec_at = vt_gguf_find_key(g, "qwen35.rope.dimension_sections");
    if (sec_at >= 0) {
        const vt_gguf_value *arr = vt_gguf_kv_value(g, (uint64_t)sec_at);
        if (arr->type != VT_GGUF_ARRAY || arr->count > 4)
            return vt_error_set(err, VT_EINPUT, "%s: key qwen35.rope.dimension_sections: "
                                "expected an array of at most 4 integers", file);
        for (uint64_t i = 0; i < arr->count; i++) {
            vt_gguf_value e;
            if (!vt_gguf_array_get(g, arr, i, &e) || e.type == VT_GGUF_ARRAY ||
                e.type == VT_GGUF_STRING || e.type == VT_GGUF_F32 || e.type == VT_GGUF_F64 ||
                e.v.i64 < 0 || e.v.i64 > hp->n_rot)
                return vt_error_set(err, VT_EINPUT, "%s: key qwen35.rope.dimension_sections: "
                                    "element %d: expected an integer 0 .. %d", file, (int)i,
                                    hp->n_rot);
            hp->rope_sections[i] = (int32_t)e.v.i64;
        }
    }
    /* The delta net: value heads of d_state, key heads (groups) of d_state. */
    if (hp->n_v_heads % hp->n_k_heads != 0)
        return vt_error_set(err, VT_EINPUT, "%s: ssm.time_step_rank %d: expected a multiple of "
                            "ssm.group_count %d", file, hp->n_v_heads, hp->n_k_heads);
    if ((int64_t)hp->d_state * hp->n_v_heads != hp->d_inner)
        return vt_error_set(err, VT_EINPUT, "%s: ssm.inner_size %d: expected state_size %d x "
                            "time_step_rank %d", file, hp->d_inner, hp->d_state, hp->n_v_heads);
    if (hp->d_conv > VT_Q35_MAX_CONV)
        return vt_error_set(err, VT_EINPUT, "%s: ssm.conv_kernel %d: expected at most %d", file,
                            hp->d_conv, VT_Q35_MAX_CONV);
    m->key_dim = (int64_t)hp->d_state * hp->n_k_heads;
    m->value_dim = (int64_t)hp->d_state * hp->n_v_heads;
    m->conv_dim = 2 * m->key_dim + m->value_dim;
    if (m->conv_dim > INT32_MAX)
        return vt_error_set(err, VT_EINPUT, "%s: ssm dimensions too large", file);
    m->layers = calloc((size_t)hp->n_layer, sizeof *m->layers);
    if (!m->layers)
        return vt_error_set(err, VT_EINPUT, "%s: out of memory for %d layers", file, hp->n_layer);
    return load_schedule(g, m, n_block, err);
}

/* Full attention: separate attn_q (query+gate), attn_k, attn_v, or one
 * fused attn_qkv split into those three by rows. */
static int load_attention(vt_qwen35 *m, vt_q35_layer *L, int32_t l, vt_error *err)
{
    const vt_gguf *g = m->gguf;
    const vt_qwen35_hparams *hp = &m->hp;
    const int64_t E = hp->n_embd, hd = hp->head_dim;
    const int64_t qd = (int64_t)hp->n_head * hd, kvd = (int64_t)hp->n_head_kv * hd;
    char name[96];
    int rc;
    snprintf(name, sizeof name, "blk.%d.attn_qkv.weight", (int)l);
    if (vt_gguf_find_tensor(g, name)) {
        vt_mat all;
        if ((rc = vt_load_matrix(g, name, E, 2 * qd + 2 * kvd, &all, err)) ||
            (rc = vt_cpu_pack(&m->cpu, &all, vt_gguf_name(g), err)))
            return rc;
        L->wq = vt_mat_rows(&all, 0, 2 * qd);
        L->wk = vt_mat_rows(&all, 2 * qd, kvd);
        L->wv = vt_mat_rows(&all, 2 * qd + kvd, kvd);
    } else {
        const char *names[3] = { "attn_q", "attn_k", "attn_v" };
        vt_mat *dst[3] = { &L->wq, &L->wk, &L->wv };
        const int64_t rows[3] = { 2 * qd, kvd, kvd };
        for (int i = 0; i < 3; i++) {
            snprintf(name, sizeof name, "blk.%d.%s.weight", (int)l, names[i]);
            if ((rc = vt_load_matrix(g, name, E, rows[i], dst[i], err)) ||
                (rc = vt_cpu_pack(&m->cpu, dst[i], vt_gguf_name(g), err)))
                return rc;
        }
    }
    snprintf(name, sizeof name, "blk.%d.attn_output.weight", (int)l);
    if ((rc = vt_load_matrix(g, name, qd, E, &L->wo, err)) ||
        (rc = vt_cpu_pack(&m->cpu, &L->wo, vt_gguf_name(g), err)))
        return rc;
    snprintf(name, sizeof name, "blk.%d.attn_q_norm.weight", (int)l);
    if (!(L->q_norm = vt_load_vector(g, name, hd, err)))
        return err->code;
    snprintf(name, sizeof name, "blk.%d.attn_k_norm.weight", (int)l);
    if (!(L->k_norm = vt_load_vector(g, name, hd, err)))
        return err->code;
    return VT_OK;
}

static int load_delta_net(vt_qwen35 *m, vt_q35_layer *L, int32_t l, vt_error *err)
{
    const vt_gguf *g = m->gguf;
    const vt_qwen35_hparams *hp = &m->hp;
    const int64_t E = hp->n_embd, V = m->value_dim, nv = hp->n_v_heads;
    char name[96];
    int rc;
#define MAT(field, nm, cols, rows)                                             \
    snprintf(name, sizeof name, "blk.%d." nm, (int)l);                         \
    if ((rc = vt_load_matrix(g, name, cols, rows, &L->field, err)) ||          \
        (rc = vt_cpu_pack(&m->cpu, &L->field, vt_gguf_name(g), err)))          \
        return rc;
#define F32(field, nm, ne0, ne1)                                               \
    snprintf(name, sizeof name, "blk.%d." nm, (int)l);                         \
    if (!(L->field = vt_load_f32_matrix(g, name, ne0, ne1, err)))              \
        return err->code;
    MAT(wqkv, "attn_qkv.weight", E, m->conv_dim)
    MAT(wz, "attn_gate.weight", E, V)
    MAT(wbeta, "ssm_beta.weight", E, nv)
    MAT(walpha, "ssm_alpha.weight", E, nv)
    MAT(ssm_out, "ssm_out.weight", V, E)
    F32(conv, "ssm_conv1d.weight", hp->d_conv, m->conv_dim)
    F32(dt_bias, "ssm_dt.bias", nv, 0)
    F32(ssm_a, "ssm_a", nv, 0)
    F32(ssm_norm, "ssm_norm.weight", hp->d_state, 0)
#undef MAT
#undef F32
    return VT_OK;
}

static int load_weights(vt_qwen35 *m, vt_error *err)
{
    const vt_gguf *g = m->gguf;
    vt_qwen35_hparams *hp = &m->hp;
    const int64_t E = hp->n_embd, F = hp->n_ff;
    int rc = vt_load_embeddings(g, E, &hp->n_vocab, &m->embd, &m->output, &m->output_norm,
                                &hp->tied_output, err);
    if (rc || (rc = vt_cpu_pack(&m->cpu, &m->output, vt_gguf_name(g), err)))
        return rc;
    int32_t n_attn = 0;
    for (int32_t l = 0; l < hp->n_layer; l++) {
        vt_q35_layer *L = &m->layers[l];
        char name[96];
        L->slot = L->recurrent ? hp->n_recurrent++ : n_attn++;
        snprintf(name, sizeof name, "blk.%d.attn_norm.weight", (int)l);
        if (!(L->attn_norm = vt_load_vector(g, name, E, err)))
            return err->code;
        snprintf(name, sizeof name, "blk.%d.post_attention_norm.weight", (int)l);
        if (!(L->post_norm = vt_load_vector(g, name, E, err)))
            return err->code;
        if ((rc = L->recurrent ? load_delta_net(m, L, l, err) : load_attention(m, L, l, err)))
            return rc;
        const char *names[3] = { "ffn_gate", "ffn_up", "ffn_down" };
        vt_mat *dst[3] = { &L->gate, &L->up, &L->down };
        const int64_t cols[3] = { E, E, F }, rows[3] = { F, F, E };
        for (int i = 0; i < 3; i++) {
            snprintf(name, sizeof name, "blk.%d.%s.weight", (int)l, names[i]);
            if ((rc = vt_load_matrix(g, name, cols[i], rows[i], dst[i], err)) ||
                (rc = vt_cpu_pack(&m->cpu, dst[i], vt_gguf_name(g), err)))
                return rc;
        }
    }
    return VT_OK;
}

static int allocate(vt_qwen35 *m, vt_error *err)
{
    const vt_qwen35_hparams *hp = &m->hp;
    const char *file = vt_gguf_name(m->gguf);
    const size_t B = (size_t)m->cpu.n_batch;
    const size_t E = (size_t)hp->n_embd, F = (size_t)hp->n_ff, hd = (size_t)hp->head_dim;
    const size_t qd = (size_t)hp->n_head * hd, kvd = (size_t)hp->n_head_kv * hd;
    const size_t C = (size_t)m->conv_dim, V = (size_t)m->value_dim, nv = (size_t)hp->n_v_heads;
    const size_t d = (size_t)hp->d_state, nrec = (size_t)hp->n_recurrent;
    size_t max_in = E > qd ? E : qd;
    max_in = max_in > F ? max_in : F;
    max_in = max_in > V ? max_in : V;

    const int32_t n_attn = hp->n_layer - hp->n_recurrent;
    int rc = vt_kv_alloc(&m->kv, n_attn, m->cpu.n_ctx, (int64_t)kvd, (int64_t)hd, m->cpu.cache_dtype,
                         file, err);
    if (rc)
        return rc;
    float **bufs[] = { &m->x, &m->xn, &m->proj, &m->qfull, &m->q, &m->qgate, &m->kb, &m->vb,
                       &m->att, &m->qkv, &m->conv, &m->z, &m->beta, &m->g, &m->o, &m->ffg,
                       &m->ffu, &m->rope };
    size_t widths[] = { E, E, E, 2 * qd, qd, qd, kvd, kvd, qd, C, C, V, nv, nv, V, F, F,
                        (size_t)hp->n_rot };
    int ok = vt_alloc_rows(bufs, widths, sizeof bufs / sizeof bufs[0], B);
    m->ids = vt_alloc_aligned(B, sizeof(int64_t));
    m->conv_state = vt_alloc_aligned(nrec * C * (size_t)(hp->d_conv - 1) + 1, 4);
    m->delta_state = vt_alloc_aligned(nrec * nv * d * d + 1, 4);
    if (!ok || !m->ids || !m->conv_state || !m->delta_state)
        return vt_error_set(err, VT_EINPUT, "%s: out of memory for n_batch %d", file,
                            m->cpu.n_batch);
    /* Per thread: the delta rule's d floats. */
    return vt_cpu_start(&m->cpu, (int64_t)max_in, (int64_t)hd, d, file, err);
}

vt_qwen35 *vt_qwen35_open(const vt_runner_settings *s, vt_error *err)
{
    vt_error local;
    if (!err)
        err = &local; /* the loaders read err->code */
    vt_qwen35 *m = calloc(1, sizeof *m);
    if (!m) {
        vt_error_set(err, VT_EINPUT, "engine: out of memory");
        return NULL;
    }
    if (!(m->gguf = vt_cpu_open_model(&m->cpu, s, err)) || load_hparams(m, err) ||
        load_weights(m, err) || allocate(m, err)) {
        vt_qwen35_close(m);
        return NULL;
    }
    vt_cpu_describe(&m->cpu);
    return m;
}

void vt_qwen35_close(vt_qwen35 *m)
{
    if (!m)
        return;
    vt_cpu_free(&m->cpu);
    float *bufs[] = { m->x, m->xn, m->proj, m->qfull, m->q, m->qgate, m->kb, m->vb, m->att,
                      m->qkv, m->conv, m->z, m->beta, m->g, m->o, m->ffg, m->ffu, m->rope,
                      m->conv_state, m->delta_state };
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        free(bufs[i]);
    free(m->ids);
    vt_kv_free(&m->kv);
    free(m->layers);
    vt_gguf_free(m->gguf);
    free(m);
}

void vt_qwen35_reset(vt_qwen35 *m)
{
    const vt_qwen35_hparams *hp = &m->hp;
    const size_t nrec = (size_t)hp->n_recurrent, d = (size_t)hp->d_state;
    memset(m->conv_state, 0, nrec * (size_t)m->conv_dim * (size_t)(hp->d_conv - 1) * sizeof(float));
    memset(m->delta_state, 0, nrec * (size_t)hp->n_v_heads * d * d * sizeof(float));
    m->n_past = 0; /* the KV cache is overwritten position by position */
}

const vt_qwen35_hparams *vt_qwen35_hparams_of(const vt_qwen35 *m) { return &m->hp; }
int vt_qwen35_layer_is_recurrent(const vt_qwen35 *m, int32_t l) { return m->layers[l].recurrent; }
int32_t vt_qwen35_n_past(const vt_qwen35 *m) { return m->n_past; }
const char *vt_qwen35_detail(const vt_qwen35 *m) { return m->cpu.detail; }
void vt_qwen35_resolved(const vt_qwen35 *m, vt_runner_settings *out) { vt_cpu_resolved(&m->cpu, out); }

/* ======================================================================
 * Gated delta net: the token mixer of a recurrent layer
 * ====================================================================== */

typedef struct dn_job {
    vt_qwen35 *m;
    const vt_q35_layer *L;
    int64_t n_tok;
} dn_job;

/* Conv over the batch: threads split the channels (each channel's
 * recurrence runs through the batch's tokens in order). */
static void conv_worker(void *ctx, int ith, int nth)
{
    const dn_job *job = ctx;
    vt_qwen35 *m = job->m;
    const int64_t C = m->conv_dim;
    const int32_t K = m->hp.d_conv;
    float *state = m->conv_state + (size_t)job->L->slot * (size_t)C * (size_t)(K - 1);
    vt_q35_conv1d(m->qkv, C, job->n_tok, job->L->conv, K, state, C * ith / nth,
                  C * (ith + 1) / nth, m->conv, C);
}

/* The delta rule over the batch: threads split the value heads. Value head
 * h reads query/key head h % n_k_heads (ggml's broadcast). */
static void delta_worker(void *ctx, int ith, int nth)
{
    const dn_job *job = ctx;
    vt_qwen35 *m = job->m;
    const vt_qwen35_hparams *hp = &m->hp;
    const int64_t d = hp->d_state, nv = hp->n_v_heads, C = m->conv_dim;
    float *states = m->delta_state + (size_t)job->L->slot * (size_t)nv * (size_t)(d * d);
    for (int64_t h = nv * ith / nth; h < nv * (ith + 1) / nth; h++) {
        const int64_t kh = h % hp->n_k_heads;
        const float *q = m->conv + kh * d;
        const float *k = m->conv + m->key_dim + kh * d;
        const float *v = m->conv + 2 * m->key_dim + h * d;
        vt_q35_delta_rule(&m->cpu.k, states + h * d * d, d, q, k, C, v, C, m->g + h, m->beta + h,
                          nv, job->n_tok, m->o + h * d, m->value_dim, vt_cpu_extra(&m->cpu, ith));
    }
}

/* xn (normed residual) -> proj (the layer's mixer output), n_tok tokens. */
static void delta_net_mixer(vt_qwen35 *m, const vt_q35_layer *L, int64_t n_tok)
{
    const vt_qwen35_hparams *hp = &m->hp;
    vt_cpu *c = &m->cpu;
    const int64_t E = hp->n_embd, C = m->conv_dim, V = m->value_dim, d = hp->d_state;
    const int64_t nv = hp->n_v_heads;

    /* a. Projections: mixed Q|K|V and the output gate z; beta and alpha. */
    {
        const vt_mat *ws[2] = { &L->wqkv, &L->wz };
        float *ys[2] = { m->qkv, m->z };
        const int64_t ld[2] = { C, V };
        vt_matmul(c, m->xn, n_tok, 2, ws, ys, ld);
        const vt_mat *ws2[2] = { &L->wbeta, &L->walpha };
        float *ys2[2] = { m->beta, m->g };
        const int64_t ld2[2] = { nv, nv };
        vt_matmul(c, m->xn, n_tok, 2, ws2, ys2, ld2);
    }

    /* b. Causal conv1d over time per channel, continuing from the conv
     *    state, then SiLU. */
    dn_job job = { m, L, n_tok };
    vt_pool_run(&c->pool, conv_worker, &job);
    for (int64_t t = 0; t < n_tok; t++) /* ggml_vec_silu_f32 per token row */
        c->k.silu(m->conv + t * C, C);

    /* c. Per token: L2-normalize every Q and K head; beta = sigmoid(beta);
     *    log decay g = softplus(alpha + dt_bias) * a (a = -exp(A_log) < 0). */
    for (int64_t t = 0; t < n_tok; t++) {
        float *row = m->conv + t * C;
        for (int64_t i = 0; i < 2 * m->key_dim; i += d)
            vt_q35_l2norm(row + i, d, hp->rms_eps);
        for (int64_t h = 0; h < nv; h++) {
            m->beta[t * nv + h] = vt_sigmoid(m->beta[t * nv + h]);
            m->g[t * nv + h] = vt_q35_softplus(m->g[t * nv + h] + L->dt_bias[h]) * L->ssm_a[h];
        }
    }

    /* d. The gated delta rule, token after token, on each head's state. */
    vt_pool_run(&c->pool, delta_worker, &job);

    /* e. Gated RMSNorm per head: rmsnorm(o) * ssm_norm * silu(z). */
    for (int64_t i = 0; i < n_tok * V; i += d) {
        vt_rmsnorm(m->o + i, m->o + i, L->ssm_norm, d, hp->rms_eps);
        c->k.silu(m->z + i, d); /* ggml_silu over z's rows of one head */
        for (int64_t j = 0; j < d; j++)
            m->o[i + j] = m->o[i + j] * m->z[i + j];
    }

    /* f. Output projection. */
    vt_matmul1(c, &L->ssm_out, m->o, n_tok, m->proj, E);
}

/* ======================================================================
 * Gated full attention: the token mixer of the other layers
 * ====================================================================== */

static void attention_mixer(vt_qwen35 *m, const vt_q35_layer *L, int64_t n_tok)
{
    const vt_qwen35_hparams *hp = &m->hp;
    vt_cpu *c = &m->cpu;
    const int64_t E = hp->n_embd, hd = hp->head_dim, nr = hp->n_rot;
    const int64_t qd = (int64_t)hp->n_head * hd, kvd = m->kv.kv_dim;
    const int32_t pos0 = m->n_past;

    /* a. Query+gate, K and V projections (one dispatch); meanwhile the
     *    cache lines step b writes are fetched. */
    vt_kv_will_store(&m->kv, L->slot, pos0, n_tok);
    {
        const vt_mat *ws[3] = { &L->wq, &L->wk, &L->wv };
        float *ys[3] = { m->qfull, m->kb, m->vb };
        const int64_t ld[3] = { 2 * qd, kvd, kvd };
        vt_matmul(c, m->xn, n_tok, 3, ws, ys, ld);
    }

    /* b. Split each head's query and gate; RMSNorm Q and K per head; RoPE
     *    on the first n_rot dimensions; K and V into the cache. */
    for (int64_t t = 0; t < n_tok; t++) {
        const float *cs = m->rope + t * nr;
        for (int32_t h = 0; h < hp->n_head; h++) {
            const float *src = m->qfull + t * 2 * qd + 2 * h * hd;
            float *q = m->q + t * qd + h * hd;
            memcpy(q, src, (size_t)hd * sizeof *q);
            memcpy(m->qgate + t * qd + h * hd, src + hd, (size_t)hd * sizeof *q);
        }
        vt_qk_norm_rope(c, m->q + t * qd, m->kb + t * kvd, L->q_norm, L->k_norm, hp->n_head, hp->n_head_kv,
                        hd, nr, cs, hp->rms_eps);
        vt_kv_store(&m->kv, L->slot, pos0 + (int32_t)t, m->kb + t * kvd, m->vb + t * kvd);
    }

    /* c. Causal grouped-query attention over the cache. */
    const vt_attention_args aa = { &m->kv, L->slot, pos0, n_tok, hp->n_head, hp->n_head_kv, hd,
                                   m->q, qd, m->att, qd };
    vt_attention(c, &aa);

    /* d. Output gate: sigmoid(gate) per element; output projection. */
    for (int64_t i = 0; i < n_tok * qd; i++)
        m->att[i] = m->att[i] * vt_sigmoid(m->qgate[i]);
    vt_matmul1(c, &L->wo, m->att, n_tok, m->proj, E);
}

/* ======================================================================
 * The forward pass of one batch: n_tok tokens at positions pos0 ...
 * Logits of batch rows [out0, out0 + n_out) go to logits (n_out x n_vocab).
 * ====================================================================== */

static void forward_batch(void *model, const int32_t *tokens, int64_t n_tok, int64_t out0,
                          int64_t n_out, float *logits)
{
    vt_qwen35 *m = model;
    vt_cpu *c = &m->cpu;
    const vt_qwen35_hparams *hp = &m->hp;
    const int64_t E = hp->n_embd;

    /* 1. Embeddings: the token rows of token_embd, decoded from their codec. */
    vt_embed(&m->embd, tokens, n_tok, m->ids, m->x);

    /* RoPE angles depend only on the position: once per batch. A text
     * token has the same position in every section. */
    for (int64_t t = 0; t < n_tok; t++) {
        const int32_t p = m->n_past + (int32_t)t, pos[4] = { p, p, p, p };
        vt_q35_rope_angles(m->rope + t * hp->n_rot, pos, hp->rope_sections, hp->n_rot,
                           hp->rope_base);
    }

    for (int32_t l = 0; l < hp->n_layer; l++) {
        const vt_q35_layer *L = &m->layers[l];

        /* 2. Token mixing on the RMSNormed stream: a gated delta net or
         *    gated full attention, by the layer schedule; residual add. */
        vt_rmsnorm_rows(m->xn, m->x, L->attn_norm, n_tok, E, hp->rms_eps);
        if (L->recurrent)
            delta_net_mixer(m, L, n_tok);
        else
            attention_mixer(m, L, n_tok);
        vt_add(m->x, m->proj, n_tok * E);

        /* 3. Feed-forward on the post-attention RMSNorm: gate and up (one
         *    dispatch), silu(gate) * up, down projection, residual add. */
        const vt_ffn ffn = { L->post_norm, &L->gate, &L->up, &L->down };
        vt_ffn_block(c, &ffn, m->x, n_tok, hp->rms_eps, m->xn, m->ffg, m->ffu, m->proj);
    }

    /* 4. Final RMSNorm and the output head, only for the rows asked for. */
    vt_output_head(c, m->x, out0, n_out, m->output_norm, &m->output, hp->rms_eps, m->xn, logits);
    m->n_past += (int32_t)n_tok;
}

int vt_qwen35_eval(vt_qwen35 *m, const int32_t *tokens, int32_t n, int all_logits,
                   float *logits, vt_error *err)
{
    int rc = vt_eval_check(vt_gguf_name(m->gguf), tokens, n, logits, m->n_past, m->cpu.n_ctx,
                           m->hp.n_vocab, err);
    if (rc)
        return rc;
    /* Production: batches of n_batch tokens. Eager: one token at a time.
     * The recurrent states carry over from one batch to the next. */
    vt_eval_batches(m, forward_batch, tokens, n, m->cpu.n_batch, all_logits, m->hp.n_vocab,
                    logits);
    return VT_OK;
}
