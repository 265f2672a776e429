/* vt export --safetensors (hf_export.h). */
#include "hf_export.h"
#include "hf_tokenizer.h"

#include "../common/vt_publish.h"
#include "../engine/codec.h"
#include "../engine/gguf_file.h"
#include "../engine/qwen3.h"
#include "../engine/tokenizer.h"
#include "../engine/qwen35.h"
#include "../engine/runner.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ======================================================================
 * The tables: one row per GGUF tensor name (a %d takes the layer), its
 * transformers name, the layers it belongs to and what happens to its
 * values on the way. Anything else in the file is refused, so that no
 * weight is silently left behind.
 * ====================================================================== */

/* Which layers a row applies to (qwen35 has two kinds; qwen3 one). */
typedef enum layer_kind { ANY_LAYER, RECURRENT, ATTENTION } layer_kind;

/* What the export does to a tensor (the qwen35 rows say why, citing the
 * engine's use in engine/qwen35.c). Every transformation is the inverse of
 * llama.cpp's conversion (conversion/qwen.py: Qwen3NextModel.modify_tensors
 * and _LinearAttentionVReorderBase.modify_tensors) and, what matters here,
 * makes transformers' Qwen3_5ForCausalLM (models/qwen3_5/modeling_qwen3_5.py)
 * compute what the engine computes with the GGUF's values.
 *
 * The value-head order. A delta-net layer has n_v value heads and n_k key
 * heads, r = n_v / n_k value heads per key head. transformers groups them:
 * value head j reads key head j / r (repeat_interleave in
 * torch_chunk_gated_delta_rule / torch_recurrent_gated_delta_rule). The
 * GGUF tiles them: the engine's value head h reads key head h % n_k
 * (delta_worker: kh = h % hp->n_k_heads, ggml's broadcast), because
 * llama.cpp's converter moved grouped head g*r + i to tiled place i*n_k + g.
 * So transformers' head j is the GGUF's head (j % r) * n_k + j / r
 * (tiled_head below), and every tensor indexed by value head is written in
 * transformers' order: the V rows of attn_qkv and V channels of ssm_conv1d,
 * attn_gate's rows, ssm_beta's and ssm_alpha's rows, ssm_dt.bias and ssm_a,
 * and ssm_out's columns. Key heads, and the d_state values inside a head,
 * keep their order. With n_v == n_k the permutation is the identity. */
typedef enum xform {
    X_COPY,    /* the decoded values, in their order */
    X_NORM,    /* weight - 1: transformers' RMSNorm scales by 1 + weight */
    X_QKV,     /* delta-net Q|K|V rows: the V rows in grouped head order */
    X_VROWS,   /* rows in value heads of d_state: grouped order */
    X_VHEAD,   /* one row or element per value head: grouped order */
    X_ALOG,    /* A_log = log(-ssm_a), per value head, grouped order */
    X_CONV,    /* [conv_dim, 1, d_conv], the V channels in grouped order */
    X_VCOLS,   /* columns in value heads of d_state: grouped order */
    X_SPLIT_Q, /* a fused attn_qkv's rows: the query+gate part ... */
    X_SPLIT_K, /* ... the key part ... */
    X_SPLIT_V, /* ... the value part */
} xform;

typedef struct name_row {
    const char *gguf, *hf;
    layer_kind kind;
    xform x;
} name_row;

static const name_row qwen3_names[] = {
    { "token_embd.weight", "model.embed_tokens.weight", ANY_LAYER, X_COPY },
    { "output_norm.weight", "model.norm.weight", ANY_LAYER, X_COPY },
    { "output.weight", "lm_head.weight", ANY_LAYER, X_COPY },
    { "blk.%d.attn_norm.weight", "model.layers.%d.input_layernorm.weight", ANY_LAYER, X_COPY },
    { "blk.%d.attn_q.weight", "model.layers.%d.self_attn.q_proj.weight", ANY_LAYER, X_COPY },
    { "blk.%d.attn_k.weight", "model.layers.%d.self_attn.k_proj.weight", ANY_LAYER, X_COPY },
    { "blk.%d.attn_v.weight", "model.layers.%d.self_attn.v_proj.weight", ANY_LAYER, X_COPY },
    { "blk.%d.attn_output.weight", "model.layers.%d.self_attn.o_proj.weight", ANY_LAYER, X_COPY },
    { "blk.%d.attn_q_norm.weight", "model.layers.%d.self_attn.q_norm.weight", ANY_LAYER, X_COPY },
    { "blk.%d.attn_k_norm.weight", "model.layers.%d.self_attn.k_norm.weight", ANY_LAYER, X_COPY },
    { "blk.%d.ffn_norm.weight", "model.layers.%d.post_attention_layernorm.weight", ANY_LAYER, X_COPY },
    { "blk.%d.ffn_gate.weight", "model.layers.%d.mlp.gate_proj.weight", ANY_LAYER, X_COPY },
    { "blk.%d.ffn_up.weight", "model.layers.%d.mlp.up_proj.weight", ANY_LAYER, X_COPY },
    { "blk.%d.ffn_down.weight", "model.layers.%d.mlp.down_proj.weight", ANY_LAYER, X_COPY },
};

/* Qwen3.5, as engine/qwen35.c reads it (load_weights, load_delta_net,
 * load_attention) and transformers names it (Qwen3_5ForCausalLM).
 *
 * X_NORM rows: the engine scales by the GGUF weight as stored (vt_rmsnorm:
 * out = x * scale * w; used for attn_norm and post_attention_norm in
 * forward_batch, output_norm in vt_output_head, attn_q_norm / attn_k_norm
 * in attention_mixer b.), while transformers' Qwen3_5RMSNorm computes
 * x * rsqrt(mean(x^2) + eps) * (1 + weight) (its weights start at zero), so
 * the export writes weight - 1, in F32 (for --dtype bf16, that F32
 * difference rounded to BF16). This subtraction is the one place where the
 * exported values are not the codec's decoded ones (A_log aside, which is
 * a different parameter): transformers adds the 1 back in F32, and for a
 * weight w >= 0.5 both w - 1 and (w - 1) + 1 are exact in F32 (Sterbenz;
 * for w >= 1, w - 1 is a multiple of w's ulp below w), so it multiplies by
 * w itself; below 0.5, (w - 1) + 1 is within 2^-25 of w. ssm_norm is
 * Qwen3_5RMSNormGated, which multiplies by its weight as stored (engine:
 * delta_net_mixer e., vt_rmsnorm(..., L->ssm_norm, ...)): copied.
 *
 * ssm_a: the engine computes the log decay g = softplus(alpha + dt_bias) *
 * ssm_a (delta_net_mixer c.), i.e. ssm_a is -exp(A_log) already (llama.cpp
 * writes -torch.exp(A_log)); transformers computes g = -exp(A_log) *
 * softplus(a + dt_bias) (Qwen3_5GatedDeltaNet.forward). The export writes
 * A_log = log(-ssm_a), the F32 nearest the real logarithm (computed in
 * double); ssm_a must be finite and < 0. F32 holds A_log to half an ulp,
 * so exp(A_log) is -ssm_a to a relative |A_log| ulp / 2 (up to 2 ulps of
 * ssm_a for |ssm_a| near 16), plus the rounding of transformers' exp.
 *
 * ssm_conv1d: GGUF ne [d_conv, conv_dim] is conv_dim rows of d_conv taps,
 * oldest first (vt_q35_conv1d: w[c * d_conv + i] meets input t - (d_conv-1)
 * + i); torch's Conv1d weight [conv_dim, 1, d_conv] with padding d_conv - 1
 * and the first seq_len outputs (causal_conv1d_fn) is the same sum, tap 0
 * on the oldest input: the bytes keep their order, the shape gains the 1.
 *
 * Full attention: attn_q is per head a query then a gate of head_dim rows
 * each (attention_mixer b.: src = qfull + 2 * h * hd, query src[0, hd),
 * gate src[hd, 2 hd)), exactly transformers' q_proj (view(..., -1,
 * 2 * head_dim) then chunk(2)): copied. A fused attn_qkv (load_attention:
 * rows [0, 2 qd) query+gate, then kvd key rows, then kvd value rows) is
 * split into q_proj, k_proj and v_proj by those rows. Both use grouped
 * query attention the same way (vt_attention: kv head h / (n_head /
 * n_head_kv); transformers' repeat_kv), and RoPE on the first
 * rope.dimension_count dimensions NeoX-style (vt_kernels.rope_neox;
 * transformers' rotate_half on rotary_dim = head_dim *
 * partial_rotary_factor): no permutation. */
static const name_row qwen35_names[] = {
    { "token_embd.weight", "model.embed_tokens.weight", ANY_LAYER, X_COPY },
    { "output_norm.weight", "model.norm.weight", ANY_LAYER, X_NORM },
    { "output.weight", "lm_head.weight", ANY_LAYER, X_COPY },
    { "blk.%d.attn_norm.weight", "model.layers.%d.input_layernorm.weight", ANY_LAYER, X_NORM },
    { "blk.%d.post_attention_norm.weight", "model.layers.%d.post_attention_layernorm.weight", ANY_LAYER, X_NORM },
    { "blk.%d.ffn_gate.weight", "model.layers.%d.mlp.gate_proj.weight", ANY_LAYER, X_COPY },
    { "blk.%d.ffn_up.weight", "model.layers.%d.mlp.up_proj.weight", ANY_LAYER, X_COPY },
    { "blk.%d.ffn_down.weight", "model.layers.%d.mlp.down_proj.weight", ANY_LAYER, X_COPY },
    /* Gated delta net (load_delta_net; delta_net_mixer). */
    { "blk.%d.attn_qkv.weight", "model.layers.%d.linear_attn.in_proj_qkv.weight", RECURRENT, X_QKV },
    { "blk.%d.attn_gate.weight", "model.layers.%d.linear_attn.in_proj_z.weight", RECURRENT, X_VROWS },
    { "blk.%d.ssm_beta.weight", "model.layers.%d.linear_attn.in_proj_b.weight", RECURRENT, X_VHEAD },
    { "blk.%d.ssm_alpha.weight", "model.layers.%d.linear_attn.in_proj_a.weight", RECURRENT, X_VHEAD },
    { "blk.%d.ssm_dt.bias", "model.layers.%d.linear_attn.dt_bias", RECURRENT, X_VHEAD },
    { "blk.%d.ssm_a", "model.layers.%d.linear_attn.A_log", RECURRENT, X_ALOG },
    { "blk.%d.ssm_conv1d.weight", "model.layers.%d.linear_attn.conv1d.weight", RECURRENT, X_CONV },
    { "blk.%d.ssm_norm.weight", "model.layers.%d.linear_attn.norm.weight", RECURRENT, X_COPY },
    { "blk.%d.ssm_out.weight", "model.layers.%d.linear_attn.out_proj.weight", RECURRENT, X_VCOLS },
    /* Gated full attention (load_attention; attention_mixer). */
    { "blk.%d.attn_q.weight", "model.layers.%d.self_attn.q_proj.weight", ATTENTION, X_COPY },
    { "blk.%d.attn_k.weight", "model.layers.%d.self_attn.k_proj.weight", ATTENTION, X_COPY },
    { "blk.%d.attn_v.weight", "model.layers.%d.self_attn.v_proj.weight", ATTENTION, X_COPY },
    { "blk.%d.attn_qkv.weight", "model.layers.%d.self_attn.q_proj.weight", ATTENTION, X_SPLIT_Q },
    { "blk.%d.attn_qkv.weight", "model.layers.%d.self_attn.k_proj.weight", ATTENTION, X_SPLIT_K },
    { "blk.%d.attn_qkv.weight", "model.layers.%d.self_attn.v_proj.weight", ATTENTION, X_SPLIT_V },
    { "blk.%d.attn_output.weight", "model.layers.%d.self_attn.o_proj.weight", ATTENTION, X_COPY },
    { "blk.%d.attn_q_norm.weight", "model.layers.%d.self_attn.q_norm.weight", ATTENTION, X_NORM },
    { "blk.%d.attn_k_norm.weight", "model.layers.%d.self_attn.k_norm.weight", ATTENTION, X_NORM },
};

/* 1 if gguf is pat, its %d (if any) a layer below n_layer, written in
 * *layer (-1 for a name without one). */
static int name_matches(const char *pat, const char *gguf, int32_t n_layer, int *layer)
{
    *layer = -1;
    const char *d = strstr(pat, "%d");
    if (!d)
        return strcmp(gguf, pat) == 0;
    int l = -1, used = 0;
    if (sscanf(gguf, "blk.%d%n", &l, &used) != 1 || l < 0 || l >= n_layer)
        return 0;
    char canon[256];
    if (snprintf(canon, sizeof canon, "blk.%d%s", l, d + 2) >= (int)sizeof canon || strcmp(canon, gguf) != 0)
        return 0;
    *layer = l;
    return 1;
}

/* ======================================================================
 * Writing: one job per transformers tensor
 * ====================================================================== */

typedef enum elem_op { E_NONE, E_MINUS_ONE, E_LOG_NEG } elem_op;

/* Output row i (of cols values) is source row row0 + i, except rows i >=
 * v_from (v_from >= 0), which are value heads of v_block rows each, taken
 * from their tiled place; with col_block > 0 the columns are value heads of
 * col_block columns, taken likewise. op applies to every value (in F32). */
typedef struct job {
    const vt_gguf_tensor *t;
    const vt_codec *c;
    char hf[128];
    elem_op op;
    int64_t row0, rows, cols;
    int64_t v_from, v_block, col_block;
} job;

typedef struct export_ctx {
    const vt_gguf *g;
    job *jobs; /* by writer index */
    int n_jobs;
    vt_st_dtype dtype;
    int64_t n_k, per_k; /* value heads: key heads, value heads per key head */
} export_ctx;

/* The GGUF's (tiled) index of transformers' (grouped) value head j: see
 * the top of this file. */
static int64_t tiled_head(const export_ctx *x, int64_t j) { return (j % x->per_k) * x->n_k + j / x->per_k; }

static void apply_op(elem_op op, float *v, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        if (op == E_MINUS_ONE)
            v[i] = v[i] - 1.0f;
        else if (op == E_LOG_NEG)
            v[i] = (float)log(-(double)v[i]);
    }
}

/* A tensor's values, decoded by its codec row by row, rearranged and
 * transformed as its job says. */
static int fill_tensor(void *ctx, int index, uint8_t *dst, size_t n_bytes, vt_error *err)
{
    export_ctx *x = ctx;
    const job *j = &x->jobs[index];
    const vt_codec *c = j->c;
    const size_t es = vt_st_dtype_size(x->dtype), row_bytes = vt_codec_row_bytes(c, j->cols);
    const int64_t nb = j->cols / c->block_elems;
    if (!row_bytes || (size_t)(j->rows * j->cols) * es != n_bytes)
        return vt_error_set(err, VT_EINPUT, "%s: tensor %.*s: type %s: expected whole blocks of %lld values",
                            vt_gguf_name(x->g), (int)j->t->name.len, j->t->name.ptr, c->name, (long long)j->cols);
    void *tmp = NULL;
    if ((j->op != E_NONE || j->col_block > 0) && !(tmp = malloc((size_t)j->cols * sizeof(float))))
        return vt_error_set(err, VT_EINPUT, "%s: out of memory", vt_gguf_name(x->g));
    for (int64_t i = 0; i < j->rows; i++) {
        int64_t s = i;
        if (j->v_from >= 0 && i >= j->v_from) {
            const int64_t k = i - j->v_from;
            s = j->v_from + tiled_head(x, k / j->v_block) * j->v_block + k % j->v_block;
        }
        const uint8_t *src = (const uint8_t *)j->t->data + (size_t)(j->row0 + s) * row_bytes;
        uint8_t *out = dst + (size_t)i * (size_t)j->cols * es;
        void *into = tmp ? tmp : out;
        if (j->op != E_NONE)
            c->decode_f32(src, tmp, nb);
        else if (x->dtype == VT_ST_BF16)
            c->decode_bf16(src, into, nb);
        else
            c->decode_f32(src, into, nb);
        if (!tmp)
            continue;
        apply_op(j->op, tmp, j->cols);
        for (int64_t col = 0; col < j->cols; col++) {
            const int64_t cb = j->col_block;
            const int64_t sc = cb > 0 ? tiled_head(x, col / cb) * cb + col % cb : col;
            if (j->op == E_NONE) {
                memcpy(out + (size_t)col * es, (const uint8_t *)tmp + (size_t)sc * es, es);
            } else if (x->dtype == VT_ST_BF16) {
                const uint16_t b = vt_f32_to_bf16(((const float *)tmp)[sc]);
                memcpy(out + (size_t)col * 2, &b, 2);
            } else {
                memcpy(out + (size_t)col * 4, (const float *)tmp + sc, 4);
            }
        }
    }
    free(tmp);
    return VT_OK;
}

static int add_job(export_ctx *x, vt_st_writer *w, const job *j, int n_dims, const int64_t *shape, vt_error *err)
{
    for (int i = 0; i < x->n_jobs; i++)
        if (strcmp(x->jobs[i].hf, j->hf) == 0)
            return vt_error_set(err, VT_EINPUT, "%s: tensor %.*s: gives transformers' %s a second time (expected "
                                "attn_q, attn_k, attn_v or one fused attn_qkv, not both)", vt_gguf_name(x->g),
                                (int)j->t->name.len, j->t->name.ptr, j->hf);
    x->jobs[x->n_jobs] = *j;
    int rc = vt_st_writer_add(w, j->hf, x->dtype, n_dims, shape, fill_tensor, x, err);
    if (!rc)
        x->n_jobs++;
    return rc;
}

static int decodable(const vt_gguf *g, const vt_gguf_tensor *t, const char *gname, vt_error *err)
{
    const vt_codec *c = vt_codec_by_type(t->type);
    if (!c || !c->decode_f32 || !c->decode_bf16 || t->n_dims < 1 || t->n_dims > 2 ||
        t->ne[0] % c->block_elems != 0)
        return vt_error_set(err, VT_EINPUT, "%s: tensor %s: type %d, %u dims: expected a decodable 1- or 2-D "
                            "tensor", vt_gguf_name(g), gname, t->type, t->n_dims);
    return VT_OK;
}

/* ======================================================================
 * qwen3
 * ====================================================================== */

static int plan_qwen3(const vt_gguf *g, vt_st_writer *w, export_ctx *x, const vt_qwen3_hparams *hp,
                      vt_hf_export_result *out, vt_error *err)
{
    const uint64_t nt = vt_gguf_n_tensors(g);
    for (uint64_t i = 0; i < nt; i++) {
        const vt_gguf_tensor *t = vt_gguf_tensor_at(g, i);
        char gname[256];
        snprintf(gname, sizeof gname, "%.*s", (int)t->name.len, t->name.ptr);
        const name_row *row = NULL;
        int layer = -1;
        for (size_t k = 0; !row && k < sizeof qwen3_names / sizeof *qwen3_names; k++)
            if (name_matches(qwen3_names[k].gguf, gname, hp->n_layer, &layer))
                row = &qwen3_names[k];
        if (!row)
            return vt_error_set(err, VT_EINPUT, "%s: tensor %s: expected one of qwen3's tensors (vt exports "
                                "nothing else)", vt_gguf_name(g), gname);
        int rc = decodable(g, t, gname, err);
        if (rc)
            return rc;
        job j = { .t = t, .c = vt_codec_by_type(t->type), .op = E_NONE, .row0 = 0, .v_from = -1 };
        j.rows = t->n_dims == 2 ? t->ne[1] : 1;
        j.cols = t->ne[0];
        snprintf(j.hf, sizeof j.hf, row->hf, layer);
        const int64_t shape[2] = { t->n_dims == 2 ? t->ne[1] : t->ne[0], t->ne[0] };
        if ((rc = add_job(x, w, &j, (int)t->n_dims, shape, err)))
            return rc;
        out->n_tensors++;
    }
    return VT_OK;
}

/* ======================================================================
 * qwen35
 * ====================================================================== */

typedef struct q35_model {
    vt_qwen35_hparams hp;
    int *recurrent; /* per layer */
    int32_t n_block; /* qwen35.block_count: layers plus MTP (nextn) blocks */
    int64_t key_dim, value_dim, conv_dim, qd, kvd;
    int interval;    /* full_attention_interval if the schedule is that rule, else 0 */
} q35_model;

/* The hyper-parameters and the layer schedule exactly as the engine reads
 * them: the engine's own loader, on the CPU, one thread, a context of one
 * token. It also checks every tensor the engine uses (presence, type,
 * shape), so the export sees what a run of the engine would. */
static int read_qwen35(const char *path, const vt_gguf *g, q35_model *q, vt_error *err)
{
    vt_runner_settings s;
    vt_runner_settings_default(&s);
    s.model_path = path;
    s.mode = VT_MODE_EAGER;
    s.n_threads = 1;
    s.n_ctx = 1;
    s.n_batch = 1;
    vt_qwen35 *m = vt_qwen35_open(&s, err);
    if (!m)
        return err->code ? err->code : VT_EINPUT;
    q->hp = *vt_qwen35_hparams_of(m);
    q->recurrent = calloc((size_t)q->hp.n_layer + 1, sizeof *q->recurrent);
    for (int32_t l = 0; q->recurrent && l < q->hp.n_layer; l++)
        q->recurrent[l] = vt_qwen35_layer_is_recurrent(m, l);
    vt_qwen35_close(m);
    if (!q->recurrent)
        return vt_error_set(err, VT_EINPUT, "%s: out of memory", path);
    const vt_qwen35_hparams *hp = &q->hp;
    int64_t v;
    q->n_block = vt_gguf_get_i64(g, "qwen35.block_count", &v) && v >= hp->n_layer && v <= INT32_MAX ? (int32_t)v
                                                                                                   : hp->n_layer;
    q->key_dim = (int64_t)hp->d_state * hp->n_k_heads;
    q->value_dim = (int64_t)hp->d_state * hp->n_v_heads;
    q->conv_dim = 2 * q->key_dim + q->value_dim;
    q->qd = (int64_t)hp->n_head * hp->head_dim;
    q->kvd = (int64_t)hp->n_head_kv * hp->head_dim;
    /* full_attention_interval, when the schedule is that rule (as
     * transformers' default layer_types would compute it). */
    q->interval = vt_gguf_get_i64(g, "qwen35.full_attention_interval", &v) ? (v > 0 && v <= INT32_MAX ? (int)v : 0)
                                                                              : 4;
    for (int32_t l = 0; q->interval && l < hp->n_layer; l++)
        if (q->recurrent[l] != ((l + 1) % q->interval != 0))
            q->interval = 0;
    /* transformers' rotary dimension is int(head_dim * partial_rotary_factor)
     * (Qwen3_5TextRotaryEmbedding.compute_default_rope_parameters), in
     * double: the factor written must give back rope.dimension_count. */
    const double prf = (double)hp->n_rot / (double)hp->head_dim;
    if ((int64_t)((double)hp->head_dim * prf) != hp->n_rot)
        return vt_error_set(err, VT_EINPUT, "%s: rope.dimension_count %d / key_length %d: expected a ratio that "
                            "gives back %d rotated dimensions", path, hp->n_rot, hp->head_dim, hp->n_rot);
    return VT_OK;
}

/* ssm_a is -exp(A_log): every element finite and < 0. */
static int check_ssm_a(const vt_gguf *g, const vt_gguf_tensor *t, const char *gname, vt_error *err)
{
    for (int64_t i = 0; i < t->ne[0]; i++) {
        float a;
        memcpy(&a, (const uint8_t *)t->data + (size_t)i * sizeof a, sizeof a);
        if (!(a < 0.0f) || !isfinite(a))
            return vt_error_set(err, VT_EINPUT, "%s: tensor %s: element %lld = %g: expected finite and < 0 "
                                "(ssm_a is -exp(A_log))", vt_gguf_name(g), gname, (long long)i, (double)a);
    }
    return VT_OK;
}

/* The job (geometry, shape) for row of a qwen35 tensor t, or an error if
 * t's shape does not fit it. */
static int qwen35_job(const vt_gguf *g, const q35_model *q, const vt_gguf_tensor *t, const char *gname,
                      const name_row *row, int layer, job *j, int *n_dims, int64_t shape[3], vt_error *err)
{
    const vt_qwen35_hparams *hp = &q->hp;
    const int64_t ne0 = t->ne[0], ne1 = t->n_dims == 2 ? t->ne[1] : 1, d = hp->d_state, nv = hp->n_v_heads;
    memset(j, 0, sizeof *j);
    j->t = t;
    j->c = vt_codec_by_type(t->type);
    j->v_from = -1;
    snprintf(j->hf, sizeof j->hf, row->hf, layer);
    j->rows = ne1;
    j->cols = ne0;
    int64_t want_rows = -1, want_cols = -1; /* -1: any */
    int want_dims = 0;                       /* 0: any */
    switch (row->x) {
    case X_COPY:
        break;
    case X_NORM:
        j->op = E_MINUS_ONE;
        want_dims = 1;
        break;
    case X_QKV:
        want_rows = q->conv_dim;
        j->v_from = 2 * q->key_dim;
        j->v_block = d;
        break;
    case X_VROWS:
        want_rows = q->value_dim;
        j->v_from = 0;
        j->v_block = d;
        break;
    case X_ALOG:
    case X_VHEAD: /* one row, or one element, per value head */
        if (row->x == X_ALOG) {
            j->op = E_LOG_NEG;
            want_dims = 1;
        }
        j->v_from = 0;
        j->v_block = 1;
        if (t->n_dims == 1) { /* elements: rows of one value */
            j->rows = ne0;
            j->cols = 1;
            want_cols = 1;
        }
        want_rows = nv;
        break;
    case X_CONV:
        want_dims = 2;
        want_rows = q->conv_dim;
        want_cols = hp->d_conv;
        j->v_from = 2 * q->key_dim;
        j->v_block = d;
        break;
    case X_VCOLS:
        want_cols = q->value_dim;
        j->col_block = d;
        break;
    case X_SPLIT_Q:
    case X_SPLIT_K:
    case X_SPLIT_V:
        want_rows = 2 * q->qd + 2 * q->kvd;
        j->row0 = row->x == X_SPLIT_Q ? 0 : row->x == X_SPLIT_K ? 2 * q->qd : 2 * q->qd + q->kvd;
        j->rows = row->x == X_SPLIT_Q ? 2 * q->qd : q->kvd;
        break;
    }
    const int64_t rows_have = row->x >= X_SPLIT_Q ? ne1 : j->rows;
    if ((want_dims && (int)t->n_dims != want_dims) || (want_rows >= 0 && rows_have != want_rows) ||
        (want_cols >= 0 && j->cols != want_cols) || (j->cols % j->c->block_elems) != 0)
        return vt_error_set(err, VT_EINPUT, "%s: tensor %s: %u dims [%lld, %lld]: expected the shape engine/qwen35.c "
                            "reads for transformers' %s", vt_gguf_name(g), gname, t->n_dims, (long long)ne0,
                            (long long)ne1, j->hf);
    if (row->x == X_ALOG) {
        int rc = check_ssm_a(g, t, gname, err);
        if (rc)
            return rc;
    }
    if (row->x == X_CONV) {
        *n_dims = 3;
        shape[0] = j->rows;
        shape[1] = 1;
        shape[2] = j->cols;
    } else if (t->n_dims == 1) {
        *n_dims = 1;
        shape[0] = ne0;
    } else {
        *n_dims = 2;
        shape[0] = j->rows;
        shape[1] = j->cols;
    }
    return VT_OK;
}

static int plan_qwen35(const vt_gguf *g, vt_st_writer *w, export_ctx *x, const q35_model *q,
                       vt_hf_export_result *out, vt_error *err)
{
    const char *file = vt_gguf_name(g);
    const vt_qwen35_hparams *hp = &q->hp;
    const size_t n_rows = sizeof qwen35_names / sizeof *qwen35_names;
    x->n_k = hp->n_k_heads;
    x->per_k = hp->n_v_heads / hp->n_k_heads;
    const uint64_t nt = vt_gguf_n_tensors(g);
    for (uint64_t i = 0; i < nt; i++) {
        const vt_gguf_tensor *t = vt_gguf_tensor_at(g, i);
        char gname[256];
        snprintf(gname, sizeof gname, "%.*s", (int)t->name.len, t->name.ptr);
        /* MTP (nextn) blocks, after the main layers, are not part of the
         * forward pass the engine runs (qwen35.h: n_layer) nor of
         * Qwen3_5ForCausalLM's (which ignores mtp.* on load): left out. */
        int blk = -1, used = 0;
        if (sscanf(gname, "blk.%d.%n", &blk, &used) == 1 && used > 0 && blk >= hp->n_layer && blk < q->n_block) {
            char canon[32];
            snprintf(canon, sizeof canon, "blk.%d.", blk);
            if (strncmp(canon, gname, strlen(canon)) == 0) {
                out->n_left_out++;
                continue;
            }
        }
        int matched = 0, named = -2; /* the layer of a name in the table (-1: none), -2: not in it */
        for (size_t k = 0; k < n_rows; k++) {
            const name_row *row = &qwen35_names[k];
            int layer;
            if (!name_matches(row->gguf, gname, hp->n_layer, &layer))
                continue;
            named = layer;
            if (row->kind != ANY_LAYER && (row->kind == RECURRENT) != (q->recurrent[layer] != 0))
                continue;
            int rc = decodable(g, t, gname, err), n_dims = 0;
            job j;
            int64_t shape[3];
            if (rc || (rc = qwen35_job(g, q, t, gname, row, layer, &j, &n_dims, shape, err)) ||
                (rc = add_job(x, w, &j, n_dims, shape, err)))
                return rc;
            matched++;
            out->n_tensors++;
        }
        if (!matched && named >= 0)
            return vt_error_set(err, VT_EINPUT, "%s: tensor %s: expected one of qwen35's tensors of a %s layer "
                                "(layer %d is one; vt exports nothing else)", file, gname,
                                q->recurrent[named] ? "linear-attention (gated delta net)" : "full-attention",
                                named);
        if (!matched)
            return vt_error_set(err, VT_EINPUT, "%s: tensor %s: expected one of qwen35's tensors (vt exports "
                                "nothing else)", file, gname);
    }
    /* Every transformers tensor of every layer, once (the engine checked
     * the GGUF has what it uses; this checks the table gives it all). */
    for (int32_t l = -1; l < hp->n_layer; l++)
        for (size_t k = 0; k < n_rows; k++) {
            const name_row *row = &qwen35_names[k];
            const int per_layer = strstr(row->gguf, "%d") != NULL;
            if (per_layer != (l >= 0) || (per_layer && row->kind != ANY_LAYER &&
                                          (row->kind == RECURRENT) != (q->recurrent[l] != 0)))
                continue;
            if (!per_layer && strcmp(row->gguf, "output.weight") == 0 && !vt_gguf_find_tensor(g, row->gguf))
                continue; /* tied: lm_head is embed_tokens */
            char hf[128], gn[128];
            snprintf(hf, sizeof hf, row->hf, l);
            snprintf(gn, sizeof gn, row->gguf, l);
            int found = 0;
            for (int i = 0; !found && i < x->n_jobs; i++)
                found = strcmp(x->jobs[i].hf, hf) == 0;
            if (!found)
                return vt_error_set(err, VT_EINPUT, "%s: tensor %s: missing: expected it for transformers' %s",
                                    file, gn, hf);
        }
    return VT_OK;
}

/* ======================================================================
 * config.json
 * ====================================================================== */

static void add_num(cJSON *o, const char *k, double v) { cJSON_AddNumberToObject(o, k, v); }

static int token_id(const vt_gguf *g, const char *key, int64_t *out)
{
    return vt_gguf_get_i64(g, key, out) && *out >= 0;
}

/* The shape keys both configs share (Qwen3Config and Qwen3_5TextConfig
 * spell them alike). */
static void add_shape(cJSON *c, int64_t n_vocab, int64_t n_embd, int64_t n_ff, int64_t n_layer, int64_t n_head,
                      int64_t n_head_kv, int64_t head_dim, int64_t n_ctx_train, double rms_eps)
{
    add_num(c, "vocab_size", (double)n_vocab);
    add_num(c, "hidden_size", (double)n_embd);
    add_num(c, "intermediate_size", (double)n_ff);
    add_num(c, "num_hidden_layers", (double)n_layer);
    add_num(c, "num_attention_heads", (double)n_head);
    add_num(c, "num_key_value_heads", (double)n_head_kv);
    add_num(c, "head_dim", (double)head_dim);
    cJSON_AddStringToObject(c, "hidden_act", "silu");
    add_num(c, "max_position_embeddings", n_ctx_train > 0 ? (double)n_ctx_train : 2048);
    add_num(c, "rms_norm_eps", rms_eps);
}

/* The keys both configs end with; the printed JSON and a newline. */
static char *config_finish(cJSON *c, const vt_gguf *g, int tied, vt_st_dtype dtype)
{
    cJSON_AddBoolToObject(c, "tie_word_embeddings", tied);
    cJSON_AddTrueToObject(c, "use_cache");
    const char *dt = dtype == VT_ST_BF16 ? "bfloat16" : "float32";
    cJSON_AddStringToObject(c, "torch_dtype", dt); /* transformers 4 */
    cJSON_AddStringToObject(c, "dtype", dt);       /* transformers 5 */
    int64_t id;
    if (token_id(g, "tokenizer.ggml.bos_token_id", &id))
        add_num(c, "bos_token_id", (double)id);
    if (token_id(g, "tokenizer.ggml.eos_token_id", &id))
        add_num(c, "eos_token_id", (double)id);
    char *s = cJSON_Print(c);
    cJSON_Delete(c);
    if (!s)
        return NULL;
    size_t n = strlen(s);
    char *out = realloc(s, n + 2);
    if (!out) {
        free(s);
        return NULL;
    }
    out[n] = '\n';
    out[n + 1] = '\0';
    return out;
}

static cJSON *config_start(const char *hf_class, const char *model_type)
{
    cJSON *c = cJSON_CreateObject(), *arch = cJSON_CreateArray();
    if (!c || !arch) {
        cJSON_Delete(c);
        cJSON_Delete(arch);
        return NULL;
    }
    cJSON_AddItemToArray(arch, cJSON_CreateString(hf_class));
    cJSON_AddItemToObject(c, "architectures", arch);
    cJSON_AddStringToObject(c, "model_type", model_type);
    return c;
}

static char *config_qwen3(const vt_gguf *g, const vt_qwen3_hparams *hp, int32_t n_vocab, int tied,
                          vt_st_dtype dtype)
{
    cJSON *c = config_start("Qwen3ForCausalLM", "qwen3");
    if (!c)
        return NULL;
    add_shape(c, n_vocab, hp->n_embd, hp->n_ff, hp->n_layer, hp->n_head, hp->n_head_kv, hp->head_dim,
              hp->n_ctx_train, hp->rms_eps);
    add_num(c, "rope_theta", (double)hp->rope_base);
    cJSON_AddNullToObject(c, "rope_scaling");
    cJSON_AddFalseToObject(c, "attention_bias");
    add_num(c, "attention_dropout", 0.0);
    cJSON_AddFalseToObject(c, "use_sliding_window");
    return config_finish(c, g, tied, dtype);
}

/* Qwen3_5TextConfig (configuration_qwen3_5.py), model_type qwen3_5_text:
 * the text model alone, not the composite multimodal Qwen3_5Config.
 *
 * RoPE: the engine rotates the first rope.dimension_count dimensions of
 * each head NeoX-style, every pair p by pos * base^(-2p/n_rot), taking pos
 * from section p % sum(sections) of the multi-section position
 * (vt_q35_rope_angles: interleaved t, h, w), and gives a text token the
 * same position in every section (forward_batch). transformers' text model
 * builds its position ids as arange expanded to 4 equal rows (text, t, h,
 * w: Qwen3_5TextModel.forward) and Qwen3_5TextRotaryEmbedding takes h and w
 * frequencies from mrope_section in the same interleaved layout
 * (recomposition_frequencies: indices 1, 4, ... below 3 * section[1] from
 * h, 2, 5, ... below 3 * section[2] from w): with equal positions every
 * choice of sections gives pos * inv_freq, inv_freq = base^(-2p/dim), dim =
 * int(head_dim * partial_rotary_factor) = n_rot. mrope_section is written
 * as the GGUF's first three dimension_sections (llama.cpp wrote them from
 * it) so multi-section positions would also agree. rope_type "default"
 * (no scaling). partial_rotary_factor is written inside rope_parameters and
 * at the top level as well: transformers' RotaryEmbeddingConfigMixin
 * copies a top-level partial_rotary_factor over rope_parameters' one
 * (standardize_rope_params), and Qwen3_5TextConfig defaults it to 0.25. */
static char *config_qwen35(const vt_gguf *g, const q35_model *q, int tied, vt_st_dtype dtype)
{
    const vt_qwen35_hparams *hp = &q->hp;
    cJSON *c = config_start("Qwen3_5ForCausalLM", "qwen3_5_text");
    if (!c)
        return NULL;
    add_shape(c, hp->n_vocab, hp->n_embd, hp->n_ff, hp->n_layer, hp->n_head, hp->n_head_kv, hp->head_dim,
              hp->n_ctx_train, hp->rms_eps);
    cJSON *types = cJSON_AddArrayToObject(c, "layer_types");
    for (int32_t l = 0; types && l < hp->n_layer; l++)
        cJSON_AddItemToArray(types, cJSON_CreateString(q->recurrent[l] ? "linear_attention" : "full_attention"));
    if (q->interval)
        add_num(c, "full_attention_interval", q->interval);
    add_num(c, "linear_conv_kernel_dim", hp->d_conv);
    add_num(c, "linear_key_head_dim", hp->d_state);
    add_num(c, "linear_value_head_dim", hp->d_state);
    add_num(c, "linear_num_key_heads", hp->n_k_heads);
    add_num(c, "linear_num_value_heads", hp->n_v_heads);
    const double prf = (double)hp->n_rot / (double)hp->head_dim;
    cJSON *rope = cJSON_AddObjectToObject(c, "rope_parameters");
    if (rope) {
        cJSON_AddStringToObject(rope, "rope_type", "default");
        add_num(rope, "rope_theta", (double)hp->rope_base);
        add_num(rope, "partial_rotary_factor", prf);
        const int sec[3] = { hp->rope_sections[0], hp->rope_sections[1], hp->rope_sections[2] };
        cJSON_AddItemToObject(rope, "mrope_section", cJSON_CreateIntArray(sec, 3));
        cJSON_AddTrueToObject(rope, "mrope_interleaved");
    }
    add_num(c, "partial_rotary_factor", prf);
    cJSON_AddFalseToObject(c, "attention_bias");
    add_num(c, "attention_dropout", 0.0);
    return config_finish(c, g, tied, dtype);
}

/* ======================================================================
 * The tokenizer check
 * ====================================================================== */

/* The texts whose ids transformers' tokenizer must give as vt's: those of
 * fixtures/prompts/default16.jsonl, the prompts every fixture capture runs
 * (tests/test_export.c checks that the two lists are the same). */
static const char *const check_texts[][2] = {
    { "p00", "The quick brown fox jumps over the lazy dog." },
    { "p01", "Once upon a time, in a small village by the sea," },
    { "p02", "def fibonacci(n):\n    if n < 2:\n        return n\n" },
    { "p03", "The capital of France is" },
    { "p04", "1, 2, 3, 5, 8, 13, 21," },
    { "p05", "<|im_start|>user\nWhat is the boiling point of water?<|im_end|>\n<|im_start|>assistant\n" },
    { "p06", "In mathematics, a prime number is" },
    { "p07", "Der schnelle braune Fuchs springt \u00fcber den faulen Hund." },
    { "p08", "int main(void) { printf(\"hello\\n\"); return 0; }" },
    { "p09", "Les sanglots longs des violons de l'automne" },
    { "p10", "She said: \"I'll be there at 10:30, don't be late!\"" },
    { "p11", "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8\u3068\u4e2d\u6587\u6587\u672c" },
    { "p12", "SELECT name, COUNT(*) FROM users GROUP BY name;" },
    { "p13", "To be, or not to be, that is the question:" },
    { "p14", "    \t  indented   text\n\nwith blank lines" },
    { "p15", "Temperature: -40.5 degrees; pressure 1013 hPa; 99%" },
};

/* vt_tokens.json, vt.token-check/1: {"schema", "add_special": true,
 * "parse_special": true, "prompts": [{"id", "text", "ids"}]}, the ids as a
 * capture tokenizes its prompts (capture/prompts.c). The adapter refuses to
 * run unless transformers' tokenizer gives them (oracle/transformers/). */
static char *token_check_json(const vt_gguf *g, vt_error *err)
{
    vt_tokenizer *t = vt_tokenizer_open(g, err);
    if (!t)
        return NULL;
    cJSON *doc = cJSON_CreateObject(), *ps = cJSON_CreateArray();
    int rc = doc && ps ? VT_OK : vt_error_set(err, VT_EINPUT, "out of memory");
    if (!rc) {
        cJSON_AddStringToObject(doc, "schema", "vt.token-check/1");
        cJSON_AddTrueToObject(doc, "add_special");
        cJSON_AddTrueToObject(doc, "parse_special");
    }
    for (size_t i = 0; !rc && i < sizeof check_texts / sizeof check_texts[0]; i++) {
        const char *text = check_texts[i][1];
        size_t len = strlen(text), need = 0;
        int32_t ids[512];
        if ((rc = vt_tokenize(t, text, len, 1, 1, ids, sizeof ids / sizeof ids[0], &need, err)))
            break;
        cJSON *p = cJSON_CreateObject();
        if (!p || !cJSON_AddItemToArray(ps, p) || !cJSON_AddStringToObject(p, "id", check_texts[i][0]) ||
            !cJSON_AddStringToObject(p, "text", text))
            rc = vt_error_set(err, VT_EINPUT, "out of memory");
        cJSON *a = rc ? NULL : cJSON_AddArrayToObject(p, "ids");
        for (size_t k = 0; a && k < need; k++)
            cJSON_AddItemToArray(a, cJSON_CreateNumber(ids[k]));
    }
    char *s = NULL;
    if (!rc) {
        cJSON_AddItemToObject(doc, "prompts", ps);
        ps = NULL;
        if (!(s = cJSON_PrintUnformatted(doc)))
            vt_error_set(err, VT_EINPUT, "out of memory");
    }
    cJSON_Delete(ps);
    cJSON_Delete(doc);
    vt_tokenizer_free(t);
    char *out = s ? realloc(s, strlen(s) + 2) : NULL;
    if (s && !out)
        free(s);
    if (out)
        strcat(out, "\n");
    return out;
}

/* ======================================================================
 * The export
 * ====================================================================== */

int vt_hf_export(const char *gguf_path, const char *dir, vt_st_dtype dtype, int overwrite,
                 vt_hf_export_result *out, vt_error *err)
{
    memset(out, 0, sizeof *out);
    vt_gguf *g = vt_gguf_open(gguf_path, err);
    if (!g)
        return VT_EINPUT;
    vt_st_writer *w = NULL;
    export_ctx x = { g, NULL, 0, dtype, 1, 1 };
    q35_model q;
    memset(&q, 0, sizeof q);
    char *config = NULL, *tok_json = NULL, *tok_config = NULL, *tok_check = NULL;
    vt_gguf_str a;
    int rc = VT_OK, is35 = 0;
    if (!vt_gguf_get_str(g, "general.architecture", &a) || a.len >= sizeof out->arch)
        rc = vt_error_set(err, VT_EINPUT, "%s: key general.architecture: expected a string", gguf_path);
    if (!rc) {
        snprintf(out->arch, sizeof out->arch, "%.*s", (int)a.len, a.ptr);
        is35 = strcmp(out->arch, "qwen35") == 0;
        if (!is35 && strcmp(out->arch, "qwen3") != 0)
            rc = vt_error_set(err, VT_EINPUT, "%s: general.architecture '%s': expected qwen3 or qwen35 (the ones vt "
                              "exports)", gguf_path, out->arch);
    }
    vt_qwen3_hparams hp;
    const vt_gguf_tensor *te = NULL;
    if (!rc && !is35) {
        rc = vt_qwen3_read_hparams(g, &hp, err);
        te = rc ? NULL : vt_gguf_find_tensor(g, "token_embd.weight");
        if (!rc && (!te || te->n_dims != 2 || te->ne[0] != hp.n_embd || te->ne[1] > INT32_MAX))
            rc = vt_error_set(err, VT_EINPUT, "%s: tensor token_embd.weight: expected [%d, n_vocab]", gguf_path,
                              (int)hp.n_embd);
    } else if (!rc) {
        rc = read_qwen35(gguf_path, g, &q, err);
    }
    const uint64_t nt = rc ? 0 : vt_gguf_n_tensors(g);
    if (!rc && (!(w = vt_st_writer_new()) || !(x.jobs = calloc(3 * (size_t)nt + 1, sizeof *x.jobs))))
        rc = vt_error_set(err, VT_EINPUT, "%s: out of memory", gguf_path);
    if (!rc)
        rc = is35 ? plan_qwen35(g, w, &x, &q, out, err) : plan_qwen3(g, w, &x, &hp, out, err);
    if (!rc) {
        out->tied = vt_gguf_find_tensor(g, "output.weight") == NULL;
        snprintf(out->hf_class, sizeof out->hf_class, is35 ? "Qwen3_5ForCausalLM" : "Qwen3ForCausalLM");
        const char *base = strrchr(gguf_path, '/');
        rc = vt_st_writer_meta(w, "format", "pt", err) ||
             vt_st_writer_meta(w, "vt.source", base ? base + 1 : gguf_path, err) ||
             vt_st_writer_meta(w, "vt.dtype", vt_st_dtype_name(dtype), err);
    }
    if (!rc && !(config = is35 ? config_qwen35(g, &q, out->tied, dtype)
                               : config_qwen3(g, &hp, (int32_t)te->ne[1], out->tied, dtype)))
        rc = vt_error_set(err, VT_EINPUT, "%s: out of memory", gguf_path);
    /* The tokenizer files, and the ids they must give. */
    if (!rc)
        rc = vt_hf_tokenizer_files(g, &tok_json, &tok_config, err);
    if (!rc && !(tok_check = token_check_json(g, err)))
        rc = err->code ? err->code : VT_EINPUT;
    if (!rc) {
        out->safetensors_bytes = vt_st_writer_size(w);
        static const char *const names[5] = { "config.json", "model.safetensors", "tokenizer.json",
                                              "tokenizer_config.json", "vt_tokens.json" };
        char paths[5][PATH_MAX];
        for (int i = 0; i < 5 && !rc; i++)
            if (snprintf(paths[i], sizeof paths[i], "%s/%s", dir, names[i]) >= (int)sizeof paths[i])
                rc = vt_error_set(err, VT_EINPUT, "%s: expected a shorter directory name", dir);
        const vt_publish_item items[5] = { { paths[0], config, strlen(config), NULL, NULL },
                                           { paths[1], NULL, 0, vt_st_writer_write, w },
                                           { paths[2], tok_json, strlen(tok_json), NULL, NULL },
                                           { paths[3], tok_config, strlen(tok_config), NULL, NULL },
                                           { paths[4], tok_check, strlen(tok_check), NULL, NULL } };
        const char *inputs[1] = { gguf_path };
        const vt_publish_opts opts = { overwrite, inputs, 1, NULL, NULL, 0 };
        if (!rc)
            rc = vt_publish_group(items, 5, &opts, err);
    }
    free(config);
    free(tok_json);
    free(tok_config);
    free(tok_check);
    free(x.jobs);
    free(q.recurrent);
    vt_st_writer_free(w);
    vt_gguf_free(g);
    return rc;
}
