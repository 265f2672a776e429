/* vt export --safetensors (hf_export.h). */
#include "hf_export.h"

#include "../common/vt_publish.h"
#include "../engine/codec.h"
#include "../engine/gguf_file.h"
#include "../engine/qwen3.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One row per GGUF tensor name of a qwen3 model: its transformers name
 * (a %d takes the layer). Anything else in the file is refused, so that no
 * weight is silently left behind. */
static const struct {
    const char *gguf, *hf;
} qwen3_names[] = {
    { "token_embd.weight", "model.embed_tokens.weight" },
    { "output_norm.weight", "model.norm.weight" },
    { "output.weight", "lm_head.weight" },
    { "blk.%d.attn_norm.weight", "model.layers.%d.input_layernorm.weight" },
    { "blk.%d.attn_q.weight", "model.layers.%d.self_attn.q_proj.weight" },
    { "blk.%d.attn_k.weight", "model.layers.%d.self_attn.k_proj.weight" },
    { "blk.%d.attn_v.weight", "model.layers.%d.self_attn.v_proj.weight" },
    { "blk.%d.attn_output.weight", "model.layers.%d.self_attn.o_proj.weight" },
    { "blk.%d.attn_q_norm.weight", "model.layers.%d.self_attn.q_norm.weight" },
    { "blk.%d.attn_k_norm.weight", "model.layers.%d.self_attn.k_norm.weight" },
    { "blk.%d.ffn_norm.weight", "model.layers.%d.post_attention_layernorm.weight" },
    { "blk.%d.ffn_gate.weight", "model.layers.%d.mlp.gate_proj.weight" },
    { "blk.%d.ffn_up.weight", "model.layers.%d.mlp.up_proj.weight" },
    { "blk.%d.ffn_down.weight", "model.layers.%d.mlp.down_proj.weight" },
};

/* The transformers name of a GGUF tensor name, or 0. */
static int hf_name(const char *gguf, int32_t n_layer, char *out, size_t cap)
{
    for (size_t i = 0; i < sizeof qwen3_names / sizeof *qwen3_names; i++) {
        const char *pat = qwen3_names[i].gguf;
        if (!strstr(pat, "%d")) {
            if (strcmp(gguf, pat) == 0)
                return snprintf(out, cap, "%s", qwen3_names[i].hf) < (int)cap;
            continue;
        }
        int layer = -1, used = 0;
        char tail[64];
        const char *suffix = strstr(pat, "%d") + 2;
        if (sscanf(gguf, "blk.%d%n", &layer, &used) != 1 || layer < 0 || layer >= n_layer)
            continue;
        snprintf(tail, sizeof tail, "%s", gguf + used);
        char canon[128];
        snprintf(canon, sizeof canon, "blk.%d%s", layer, tail);
        if (strcmp(canon, gguf) != 0 || strcmp(tail, suffix) != 0)
            continue;
        return snprintf(out, cap, qwen3_names[i].hf, layer) < (int)cap;
    }
    return 0;
}

typedef struct export_ctx {
    const vt_gguf *g;
    const vt_gguf_tensor **src; /* by writer index */
    vt_st_dtype dtype;
} export_ctx;

/* A tensor's values, decoded by its codec, block run by block run. */
static int fill_tensor(void *ctx, int index, uint8_t *dst, size_t n_bytes, vt_error *err)
{
    export_ctx *x = ctx;
    const vt_gguf_tensor *t = x->src[index];
    const vt_codec *c = vt_codec_by_type(t->type);
    const int64_t n = t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
    if (!c || !c->decode_f32 || n % c->block_elems || (size_t)n * vt_st_dtype_size(x->dtype) != n_bytes)
        return vt_error_set(err, VT_EINPUT, "%s: tensor %.*s: type %d: expected a decodable codec",
                            vt_gguf_name(x->g), (int)t->name.len, t->name.ptr, t->type);
    if (x->dtype == VT_ST_BF16)
        c->decode_bf16(t->data, (uint16_t *)(void *)dst, n / c->block_elems);
    else
        c->decode_f32(t->data, (float *)(void *)dst, n / c->block_elems);
    return VT_OK;
}

static void add_num(cJSON *o, const char *k, double v) { cJSON_AddNumberToObject(o, k, v); }

static int token_id(const vt_gguf *g, const char *key, int64_t *out)
{
    return vt_gguf_get_i64(g, key, out) && *out >= 0;
}

static char *config_json(const vt_gguf *g, const vt_qwen3_hparams *hp, int32_t n_vocab, int tied,
                         vt_st_dtype dtype)
{
    cJSON *c = cJSON_CreateObject(), *arch = cJSON_CreateArray();
    if (!c || !arch) {
        cJSON_Delete(c);
        cJSON_Delete(arch);
        return NULL;
    }
    cJSON_AddItemToArray(arch, cJSON_CreateString("Qwen3ForCausalLM"));
    cJSON_AddItemToObject(c, "architectures", arch);
    cJSON_AddStringToObject(c, "model_type", "qwen3");
    add_num(c, "vocab_size", n_vocab);
    add_num(c, "hidden_size", hp->n_embd);
    add_num(c, "intermediate_size", hp->n_ff);
    add_num(c, "num_hidden_layers", hp->n_layer);
    add_num(c, "num_attention_heads", hp->n_head);
    add_num(c, "num_key_value_heads", hp->n_head_kv);
    add_num(c, "head_dim", hp->head_dim);
    cJSON_AddStringToObject(c, "hidden_act", "silu");
    add_num(c, "max_position_embeddings", hp->n_ctx_train > 0 ? hp->n_ctx_train : 2048);
    add_num(c, "rms_norm_eps", (double)hp->rms_eps);
    add_num(c, "rope_theta", (double)hp->rope_base);
    cJSON_AddNullToObject(c, "rope_scaling");
    cJSON_AddFalseToObject(c, "attention_bias");
    add_num(c, "attention_dropout", 0.0);
    cJSON_AddFalseToObject(c, "use_sliding_window");
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

int vt_hf_export(const char *gguf_path, const char *dir, vt_st_dtype dtype, int overwrite,
                 vt_hf_export_result *out, vt_error *err)
{
    memset(out, 0, sizeof *out);
    vt_gguf *g = vt_gguf_open(gguf_path, err);
    if (!g)
        return VT_EINPUT;
    vt_st_writer *w = NULL;
    export_ctx x = { g, NULL, dtype };
    char *config = NULL;
    vt_gguf_str a;
    int rc = VT_OK;
    if (!vt_gguf_get_str(g, "general.architecture", &a) || a.len >= sizeof out->arch)
        rc = vt_error_set(err, VT_EINPUT, "%s: key general.architecture: expected a string", gguf_path);
    if (!rc) {
        snprintf(out->arch, sizeof out->arch, "%.*s", (int)a.len, a.ptr);
        if (strcmp(out->arch, "qwen3") != 0)
            rc = vt_error_set(err, VT_EINPUT, "%s: general.architecture '%s': expected qwen3 (the one vt exports "
                              "so far)", gguf_path, out->arch);
    }
    vt_qwen3_hparams hp;
    if (!rc)
        rc = vt_qwen3_read_hparams(g, &hp, err);
    const vt_gguf_tensor *te = rc ? NULL : vt_gguf_find_tensor(g, "token_embd.weight");
    if (!rc && (!te || te->n_dims != 2 || te->ne[0] != hp.n_embd || te->ne[1] > INT32_MAX))
        rc = vt_error_set(err, VT_EINPUT, "%s: tensor token_embd.weight: expected [%d, n_vocab]", gguf_path,
                          (int)hp.n_embd);
    const uint64_t nt = rc ? 0 : vt_gguf_n_tensors(g);
    if (!rc && (!(w = vt_st_writer_new()) || !(x.src = calloc((size_t)nt + 1, sizeof *x.src))))
        rc = vt_error_set(err, VT_EINPUT, "%s: out of memory", gguf_path);
    for (uint64_t i = 0; !rc && i < nt; i++) {
        const vt_gguf_tensor *t = vt_gguf_tensor_at(g, i);
        char gname[256], hname[256];
        snprintf(gname, sizeof gname, "%.*s", (int)t->name.len, t->name.ptr);
        if (!hf_name(gname, hp.n_layer, hname, sizeof hname)) {
            rc = vt_error_set(err, VT_EINPUT, "%s: tensor %s: expected one of qwen3's tensors (vt exports "
                              "nothing else)", gguf_path, gname);
            break;
        }
        const vt_codec *c = vt_codec_by_type(t->type);
        if (!c || !c->decode_f32 || t->n_dims < 1 || t->n_dims > 2) {
            rc = vt_error_set(err, VT_EINPUT, "%s: tensor %s: type %d, %u dims: expected a decodable 1- or 2-D "
                              "tensor", gguf_path, gname, t->type, t->n_dims);
            break;
        }
        int64_t shape[2] = { t->n_dims == 2 ? t->ne[1] : t->ne[0], t->ne[0] };
        x.src[i] = t;
        rc = vt_st_writer_add(w, hname, dtype, (int)t->n_dims, shape, fill_tensor, &x, err);
        out->n_tensors++;
    }
    if (!rc) {
        out->tied = vt_gguf_find_tensor(g, "output.weight") == NULL;
        snprintf(out->hf_class, sizeof out->hf_class, "Qwen3ForCausalLM");
        const char *base = strrchr(gguf_path, '/');
        rc = vt_st_writer_meta(w, "format", "pt", err) ||
             vt_st_writer_meta(w, "vt.source", base ? base + 1 : gguf_path, err) ||
             vt_st_writer_meta(w, "vt.dtype", vt_st_dtype_name(dtype), err);
    }
    if (!rc && !(config = config_json(g, &hp, (int32_t)te->ne[1], out->tied, dtype)))
        rc = vt_error_set(err, VT_EINPUT, "%s: out of memory", gguf_path);
    if (!rc) {
        out->safetensors_bytes = vt_st_writer_size(w);
        char cpath[PATH_MAX], spath[PATH_MAX];
        if (snprintf(cpath, sizeof cpath, "%s/config.json", dir) >= (int)sizeof cpath ||
            snprintf(spath, sizeof spath, "%s/model.safetensors", dir) >= (int)sizeof spath)
            rc = vt_error_set(err, VT_EINPUT, "%s: expected a shorter directory name", dir);
        const vt_publish_item items[2] = { { cpath, config, strlen(config ? config : ""), NULL, NULL },
                                           { spath, NULL, 0, vt_st_writer_write, w } };
        const char *inputs[1] = { gguf_path };
        const vt_publish_opts opts = { overwrite, inputs, 1, NULL, NULL, 0 };
        if (!rc)
            rc = vt_publish_group(items, 2, &opts, err);
    }
    free(config);
    free(x.src);
    vt_st_writer_free(w);
    vt_gguf_free(g);
    return rc;
}
