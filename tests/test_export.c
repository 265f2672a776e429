/* vt export --safetensors (oracle/hf_export.h) and the safetensors reader
 * (oracle/safetensors.h): the exported weights are the codecs' decoded
 * values bit for bit under transformers' names and shapes; the config holds
 * the GGUF's hyper-parameters; the files are deterministic, published
 * together, never clobbered; and the reader refuses every malformed file.
 * qwen35 (Qwen3_5ForCausalLM): the same, except the values hf_export.c
 * documents as transformed (RMSNorm weights - 1, A_log = log(-ssm_a), value
 * heads in transformers' grouped order), whose relation to the decoded
 * values is checked exactly; a fused attn_qkv splits into the same
 * q/k/v_proj as separate tensors; MTP blocks are left out; anything else
 * in the file is refused. */
#include <criterion/criterion.h>

#include "tests/support/vt_test.h"

#include "engine/codec.h"
#include "engine/gguf_file.h"
#include "oracle/hf_export.h"
#include "oracle/safetensors.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static char tmpdir[64];

static void make_dir(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/vt-export-XXXXXX");
    cr_assert_not_null(mkdtemp(tmpdir));
}

static void remove_dir(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    cr_assert_eq(system(cmd), 0);
}

static void fixture(const char *arch, const char *weights, const char *extra, char *path, size_t cap)
{
    snprintf(path, cap, "%s/%s-%s.gguf", tmpdir, arch, weights);
    char out[512], err[1024];
    int rc = vt_test_sh(tmpdir, out, sizeof out, err, sizeof err,
                        "'%s' fixture make --arch %s --preset tiny --weights %s --seed 1 %s -o '%s'", VT_BIN, arch,
                        weights, extra, path);
    cr_assert_eq(rc, 0, "%s", err);
}

static int export_to(const char *sub, const char *model, const char *opts, char *err, size_t cap)
{
    char dir[256], out[1024];
    snprintf(dir, sizeof dir, "%s/%s", tmpdir, sub);
    mkdir(dir, 0755);
    return vt_test_sh(tmpdir, out, sizeof out, err, cap, "'%s' export --safetensors '%s' %s '%s'", VT_BIN, dir, opts,
                      model);
}

/* The transformers name of each GGUF tensor of the tiny qwen3 fixture. */
static void hf_of(const char *g, char *out, size_t cap)
{
    int l;
    char rest[64];
    if (strcmp(g, "token_embd.weight") == 0)
        snprintf(out, cap, "model.embed_tokens.weight");
    else if (strcmp(g, "output_norm.weight") == 0)
        snprintf(out, cap, "model.norm.weight");
    else if (strcmp(g, "output.weight") == 0)
        snprintf(out, cap, "lm_head.weight");
    else if (sscanf(g, "blk.%d.%63s", &l, rest) == 2) {
        static const char *map[][2] = { { "attn_norm.weight", "input_layernorm.weight" },
                                        { "attn_q.weight", "self_attn.q_proj.weight" },
                                        { "attn_k.weight", "self_attn.k_proj.weight" },
                                        { "attn_v.weight", "self_attn.v_proj.weight" },
                                        { "attn_output.weight", "self_attn.o_proj.weight" },
                                        { "attn_q_norm.weight", "self_attn.q_norm.weight" },
                                        { "attn_k_norm.weight", "self_attn.k_norm.weight" },
                                        { "ffn_norm.weight", "post_attention_layernorm.weight" },
                                        { "ffn_gate.weight", "mlp.gate_proj.weight" },
                                        { "ffn_up.weight", "mlp.up_proj.weight" },
                                        { "ffn_down.weight", "mlp.down_proj.weight" } };
        for (size_t i = 0; i < sizeof map / sizeof *map; i++)
            if (strcmp(rest, map[i][0]) == 0) {
                snprintf(out, cap, "model.layers.%d.%s", l, map[i][1]);
                return;
            }
        cr_assert_fail("unexpected tensor %s", g);
    } else
        cr_assert_fail("unexpected tensor %s", g);
}

static void check_export(const char *model, const char *sub, vt_st_dtype dtype)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s/model.safetensors", tmpdir, sub);
    size_t n;
    char *bytes = vt_test_slurp(path, &n);
    vt_error err;
    vt_error_clear(&err);
    vt_st_file *f = vt_st_open_memory(bytes, n, path, &err);
    cr_assert_not_null(f, "%s", err.msg);
    cr_assert_str_eq(vt_st_meta(f, "format"), "pt");
    vt_gguf *g = vt_gguf_open(model, &err);
    cr_assert_not_null(g, "%s", err.msg);
    cr_assert_eq((uint64_t)vt_st_count(f), vt_gguf_n_tensors(g));
    for (uint64_t i = 0; i < vt_gguf_n_tensors(g); i++) {
        const vt_gguf_tensor *t = vt_gguf_tensor_at(g, i);
        char gname[128], hname[128];
        snprintf(gname, sizeof gname, "%.*s", (int)t->name.len, t->name.ptr);
        hf_of(gname, hname, sizeof hname);
        const vt_st_tensor *s = vt_st_find(f, hname);
        cr_assert_not_null(s, "%s: %s missing", gname, hname);
        cr_assert_eq(s->dtype, dtype, "%s", hname);
        cr_assert_eq(s->n_dims, (int)t->n_dims, "%s", hname);
        if (t->n_dims == 2)
            cr_assert(s->shape[0] == t->ne[1] && s->shape[1] == t->ne[0], "%s: shape [%lld, %lld]", hname,
                      (long long)s->shape[0], (long long)s->shape[1]);
        else
            cr_assert_eq(s->shape[0], t->ne[0], "%s", hname);
        const vt_codec *c = vt_codec_by_type(t->type);
        const int64_t ne = t->ne[0] * t->ne[1];
        void *want = malloc((size_t)ne * 4);
        cr_assert(want);
        if (dtype == VT_ST_BF16)
            c->decode_bf16(t->data, want, ne / c->block_elems);
        else
            c->decode_f32(t->data, want, ne / c->block_elems);
        cr_assert_eq(s->end - s->begin, (uint64_t)ne * vt_st_dtype_size(dtype), "%s", hname);
        cr_assert_eq(memcmp(s->data, want, (size_t)(s->end - s->begin)), 0, "%s: values differ from %s's decoder",
                     hname, c->name);
        free(want);
    }
    vt_gguf_free(g);
    vt_st_free(f);
    free(bytes);

    snprintf(path, sizeof path, "%s/%s/config.json", tmpdir, sub);
    cJSON *cfg = vt_test_load_json(path);
    cr_assert_str_eq(cJSON_GetArrayItem(vt_test_get(cfg, "architectures"), 0)->valuestring, "Qwen3ForCausalLM");
    cr_assert_str_eq(vt_test_get(cfg, "model_type")->valuestring, "qwen3");
    cr_assert_eq(vt_test_get(cfg, "hidden_size")->valueint, 256);
    cr_assert_eq(vt_test_get(cfg, "num_hidden_layers")->valueint, 2);
    cr_assert_eq(vt_test_get(cfg, "num_attention_heads")->valueint, 4);
    cr_assert_eq(vt_test_get(cfg, "num_key_value_heads")->valueint, 2);
    cr_assert_eq(vt_test_get(cfg, "head_dim")->valueint, 64);
    cr_assert_eq(vt_test_get(cfg, "intermediate_size")->valueint, 512);
    cr_assert_eq(vt_test_get(cfg, "vocab_size")->valueint, 1280);
    cr_assert_eq((float)vt_test_get(cfg, "rms_norm_eps")->valuedouble, 1e-6f);
    cr_assert_str_eq(vt_test_get(cfg, "torch_dtype")->valuestring, dtype == VT_ST_BF16 ? "bfloat16" : "float32");
    cJSON_Delete(cfg);
}

Test(export, weights_are_the_codecs_values_under_transformers_names)
{
    make_dir();
    char model[256], err[1024];
    fixture("qwen3", "Q8_0", "", model, sizeof model);
    cr_assert_eq(export_to("f32", model, "", err, sizeof err), 0, "%s", err);
    check_export(model, "f32", VT_ST_F32);
    cr_assert_eq(export_to("bf16", model, "--dtype bf16", err, sizeof err), 0, "%s", err);
    check_export(model, "bf16", VT_ST_BF16);
    fixture("qwen3", "IQ2_S", "--tied", model, sizeof model);
    cr_assert_eq(export_to("iq", model, "", err, sizeof err), 0, "%s", err);
    char path[256];
    snprintf(path, sizeof path, "%s/iq/config.json", tmpdir);
    cJSON *cfg = vt_test_load_json(path);
    cr_assert(cJSON_IsTrue(vt_test_get(cfg, "tie_word_embeddings")));
    cJSON_Delete(cfg);
    remove_dir();
}

/* The tokenizer files are published with the weights, and vt_tokens.json
 * holds the prompts every fixture capture runs (the default prompt file,
 * text by text) with the ids a capture gives them: the adapter checks
 * transformers' tokenizer against exactly those. */
Test(export, tokenizer_files_and_the_ids_to_check)
{
    make_dir();
    char model[256], err[1024], path[320], out[65536];
    fixture("qwen3", "Q8_0", "", model, sizeof model);
    cr_assert_eq(export_to("tok", model, "", err, sizeof err), 0, "%s", err);
    static const char *const files[] = { "config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
                                         "vt_tokens.json" };
    for (int i = 0; i < 5; i++) {
        snprintf(path, sizeof path, "%s/tok/%s", tmpdir, files[i]);
        cr_assert(vt_test_exists(path), "%s", path);
    }
    snprintf(path, sizeof path, "%s/tok/tokenizer_config.json", tmpdir);
    cJSON *tc = vt_test_load_json(path);
    cr_assert_str_eq(vt_test_get(tc, "tokenizer_class")->valuestring, "PreTrainedTokenizerFast");
    cJSON_Delete(tc);
    /* The ids as vt-capture tokenizes the default prompts. */
    int rc = vt_test_sh(tmpdir, out, sizeof out, err, sizeof err,
                        "cd '%s' && '%s-capture' --runner engine --model '%s' --prompts '%s/fixtures/prompts/default16.jsonl' "
                        "--max-tokens 1 --top-k 0 --no-timestamp --out c.json", tmpdir, VT_BIN, model, VT_SOURCE_DIR);
    cr_assert_eq(rc, 0, "%s", err);
    snprintf(path, sizeof path, "%s/c.json", tmpdir);
    cJSON *cap = vt_test_load_json(path);
    snprintf(path, sizeof path, "%s/tok/vt_tokens.json", tmpdir);
    cJSON *chk = vt_test_load_json(path);
    cr_assert_str_eq(vt_test_get(chk, "schema")->valuestring, "vt.token-check/1");
    cr_assert(cJSON_IsTrue(vt_test_get(chk, "add_special")) && cJSON_IsTrue(vt_test_get(chk, "parse_special")));
    const cJSON *ps = vt_test_get(chk, "prompts"), *cps = vt_test_get(cap, "prompts");
    cr_assert_eq(cJSON_GetArraySize(ps), 16);
    cr_assert_eq(cJSON_GetArraySize(cps), 16);
    const cJSON *c = cps->child;
    for (const cJSON *p = ps->child; p; p = p->next, c = c->next) {
        cr_assert_str_eq(vt_test_get(p, "id")->valuestring, vt_test_get(c, "id")->valuestring);
        cr_assert_str_eq(vt_test_get(p, "text")->valuestring, vt_test_get(c, "text")->valuestring);
        char *a = cJSON_PrintUnformatted(vt_test_get(p, "ids")), *b = cJSON_PrintUnformatted(vt_test_get(c, "tokens"));
        cr_assert_str_eq(a, b, "%s", vt_test_get(p, "id")->valuestring);
        free(a);
        free(b);
    }
    cJSON_Delete(chk);
    cJSON_Delete(cap);
    remove_dir();
}

/* The same model gives the same bytes; an existing export is kept unless
 * --overwrite; bad options and models are one line, exit 2. */
Test(export, deterministic_no_clobber_and_refusals)
{
    make_dir();
    char model[256], q35[256], err[1024];
    fixture("qwen3", "F32", "", model, sizeof model);
    cr_assert_eq(export_to("a", model, "", err, sizeof err), 0, "%s", err);
    cr_assert_eq(export_to("b", model, "", err, sizeof err), 0, "%s", err);
    char pa[256], pb[256];
    size_t na, nb;
    for (int k = 0; k < 2; k++) {
        const char *file = k ? "config.json" : "model.safetensors";
        snprintf(pa, sizeof pa, "%s/a/%s", tmpdir, file);
        snprintf(pb, sizeof pb, "%s/b/%s", tmpdir, file);
        char *a = vt_test_slurp(pa, &na), *b = vt_test_slurp(pb, &nb);
        cr_assert(na == nb && memcmp(a, b, na) == 0, "%s differs between two exports", file);
        free(a);
        free(b);
    }
    /* No clobber: the existing files stay, byte for byte. */
    snprintf(pa, sizeof pa, "%s/a/config.json", tmpdir);
    vt_test_spit(pa, "{}\n", 3);
    cr_assert_eq(export_to("a", model, "", err, sizeof err), 2);
    cr_assert(strstr(err, "config.json") && !strchr(strchr(err, '\n') + 1, '\n'), "%s", err);
    char *kept = vt_test_slurp(pa, &na);
    cr_assert(na == 3 && memcmp(kept, "{}\n", 3) == 0);
    free(kept);
    cr_assert_eq(export_to("a", model, "--overwrite", err, sizeof err), 0, "%s", err);
    kept = vt_test_slurp(pa, &na);
    cr_assert_gt(na, 3);
    free(kept);

    /* A model of an architecture vt does not export: a qwen35 fixture
     * under another name. */
    fixture("qwen35", "F32", "", q35, sizeof q35);
    vt_error gerr;
    vt_error_clear(&gerr);
    vt_gguf *src = vt_gguf_open(q35, &gerr);
    cr_assert_not_null(src, "%s", gerr.msg);
    vt_gguf_writer *gw = vt_gguf_writer_from(src, &gerr);
    cr_assert_not_null(gw, "%s", gerr.msg);
    cr_assert_eq(vt_gguf_writer_set_str(gw, "general.architecture", "llama"), 0);
    snprintf(q35, sizeof q35, "%s/llama.gguf", tmpdir);
    cr_assert_eq(vt_gguf_writer_write_file(gw, q35, NULL, &gerr), 0, "%s", gerr.msg);
    vt_gguf_writer_free(gw);
    vt_gguf_free(src);
    static const struct { const char *args, *line; } cases[] = {
        { "export --safetensors D Q35", "vt export: Q35: general.architecture 'llama': expected qwen3 or qwen35 (the "
                                        "ones vt exports)" },
        { "export --safetensors D --dtype f16 M", "vt export: --dtype 'f16': expected f32 or bf16" },
        { "export M", "vt export: --safetensors: missing: expected an existing directory" },
        { "export --safetensors D", "vt export: X.gguf: missing: expected a GGUF file" },
        { "export --safetensors D --safetensors D M", "vt export: --safetensors 'D': expected one value (given twice)" },
        { "export --safetensors D --frob M", "vt export: option '--frob': expected one of the options in 'vt export "
                                             "--help'" },
    };
    char dir[256];
    snprintf(dir, sizeof dir, "%s/c", tmpdir);
    mkdir(dir, 0755);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char args[1024] = "", line[1024] = "", out[512];
        /* D, M and Q35 stand for the directory and the two models. */
        for (int pass = 0; pass < 2; pass++) {
            const char *src = pass ? cases[i].line : cases[i].args;
            char *dst = pass ? line : args;
            size_t o = 0;
            for (const char *p = src; *p && o < 900;) {
                if (strncmp(p, "Q35", 3) == 0) {
                    o += (size_t)snprintf(dst + o, 1024 - o, "%s", q35);
                    p += 3;
                } else if ((*p == 'D' || *p == 'M') && (p == src || p[-1] == ' ' || p[-1] == '\'') &&
                           (p[1] == '\0' || p[1] == ' ' || p[1] == '\'' || p[1] == ':')) {
                    o += (size_t)snprintf(dst + o, 1024 - o, "%s", *p == 'D' ? dir : model);
                    p++;
                } else
                    dst[o++] = *p++;
            }
            dst[o] = '\0';
        }
        int rc = vt_test_sh(tmpdir, out, sizeof out, err, sizeof err, "'%s' %s", VT_BIN, args);
        cr_assert_eq(rc, 2, "%s: exit %d: %s", args, rc, err);
        char want[1100];
        snprintf(want, sizeof want, "%s\n", line);
        cr_assert_str_eq(err, want, "%s", args);
    }
    cr_assert(!vt_test_exists(strcat(dir, "/config.json")), "a refused export wrote nothing");
    remove_dir();
}

/* ---------------------------------------------------------------- qwen35 */

static int64_t key_i64(const vt_gguf *g, const char *key)
{
    int64_t v;
    cr_assert(vt_gguf_get_i64(g, key, &v), "key %s missing", key);
    return v;
}

static float f32_at(const vt_st_tensor *s, int64_t i)
{
    float v;
    memcpy(&v, s->data + (size_t)i * 4, 4);
    return v;
}

static int same_bits(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }

/* The spacing of floats at |v| (the one above it). */
static double ulp_at(float v)
{
    const float a = fabsf(v);
    return (double)nextafterf(a, INFINITY) - (double)a;
}

/* transformers' name of a tensor of a qwen35 fixture, written here from
 * the module names of modeling_qwen3_5.py (Qwen3_5DecoderLayer,
 * Qwen3_5GatedDeltaNet, Qwen3_5Attention), apart from hf_export.c's table.
 * norm: a Qwen3_5RMSNorm weight (exported as w - 1); per_head: indexed by
 * delta-net value head. */
typedef struct q35_name {
    char hf[160], suffix[128];
    int layer, norm, per_head;
} q35_name;

static void hf_of35(const char *g, int interval, q35_name *o)
{
    static const char *const map[][3] = {
        /* GGUF, linear-attention layer, full-attention layer */
        { "attn_norm.weight", "input_layernorm.weight", "input_layernorm.weight" },
        { "post_attention_norm.weight", "post_attention_layernorm.weight", "post_attention_layernorm.weight" },
        { "ffn_gate.weight", "mlp.gate_proj.weight", "mlp.gate_proj.weight" },
        { "ffn_up.weight", "mlp.up_proj.weight", "mlp.up_proj.weight" },
        { "ffn_down.weight", "mlp.down_proj.weight", "mlp.down_proj.weight" },
        { "attn_qkv.weight", "linear_attn.in_proj_qkv.weight", NULL },
        { "attn_gate.weight", "linear_attn.in_proj_z.weight", NULL },
        { "ssm_beta.weight", "linear_attn.in_proj_b.weight", NULL },
        { "ssm_alpha.weight", "linear_attn.in_proj_a.weight", NULL },
        { "ssm_dt.bias", "linear_attn.dt_bias", NULL },
        { "ssm_a", "linear_attn.A_log", NULL },
        { "ssm_conv1d.weight", "linear_attn.conv1d.weight", NULL },
        { "ssm_norm.weight", "linear_attn.norm.weight", NULL },
        { "ssm_out.weight", "linear_attn.out_proj.weight", NULL },
        { "attn_q.weight", NULL, "self_attn.q_proj.weight" },
        { "attn_k.weight", NULL, "self_attn.k_proj.weight" },
        { "attn_v.weight", NULL, "self_attn.v_proj.weight" },
        { "attn_output.weight", NULL, "self_attn.o_proj.weight" },
        { "attn_q_norm.weight", NULL, "self_attn.q_norm.weight" },
        { "attn_k_norm.weight", NULL, "self_attn.k_norm.weight" },
    };
    memset(o, 0, sizeof *o);
    o->layer = -1;
    snprintf(o->suffix, sizeof o->suffix, "%s", g);
    if (strcmp(g, "token_embd.weight") == 0) {
        snprintf(o->hf, sizeof o->hf, "model.embed_tokens.weight");
        return;
    }
    if (strcmp(g, "output_norm.weight") == 0) {
        snprintf(o->hf, sizeof o->hf, "model.norm.weight");
        o->norm = 1;
        return;
    }
    if (strcmp(g, "output.weight") == 0) {
        snprintf(o->hf, sizeof o->hf, "lm_head.weight");
        return;
    }
    int l;
    cr_assert(sscanf(g, "blk.%d.%127s", &l, o->suffix) == 2, "unexpected tensor %s", g);
    const int att = (l + 1) % interval == 0;
    for (size_t i = 0; i < sizeof map / sizeof *map; i++)
        if (strcmp(o->suffix, map[i][0]) == 0 && map[i][1 + att]) {
            snprintf(o->hf, sizeof o->hf, "model.layers.%d.%s", l, map[i][1 + att]);
            o->layer = l;
            o->norm = strstr(o->suffix, "norm.weight") && strcmp(o->suffix, "ssm_norm.weight") != 0;
            o->per_head = !att && strcmp(o->suffix, "ssm_norm.weight") != 0 &&
                          (strncmp(o->suffix, "ssm_", 4) == 0 || strcmp(o->suffix, "attn_qkv.weight") == 0 ||
                           strcmp(o->suffix, "attn_gate.weight") == 0);
            return;
        }
    cr_assert_fail("unexpected tensor %s", g);
}

static vt_st_file *open_st(const char *sub, char **bytes)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s/model.safetensors", tmpdir, sub);
    size_t n;
    *bytes = vt_test_slurp(path, &n);
    cr_assert_not_null(*bytes, "%s", path);
    vt_error err;
    vt_error_clear(&err);
    vt_st_file *f = vt_st_open_memory(*bytes, n, path, &err);
    cr_assert_not_null(f, "%s", err.msg);
    return f;
}

enum { MAX_LAYERS = 64, MAX_V_HEADS = 64 };

/* The F32 export of a qwen35 fixture against its GGUF: every tensor once,
 * under transformers' name and shape; copies bit for bit; the transformed
 * values in their exact relation to the decoded ones. */
static void check_q35_f32(const char *model, const char *sub)
{
    char *bytes;
    vt_st_file *f = open_st(sub, &bytes);
    vt_error err;
    vt_error_clear(&err);
    vt_gguf *g = vt_gguf_open(model, &err);
    cr_assert_not_null(g, "%s", err.msg);
    const int interval = (int)key_i64(g, "qwen35.full_attention_interval");
    const int n_layer = (int)key_i64(g, "qwen35.block_count");
    const int64_t nk = key_i64(g, "qwen35.ssm.group_count"), nv = key_i64(g, "qwen35.ssm.time_step_rank");
    const int64_t d = key_i64(g, "qwen35.ssm.state_size"), r = nv / nk, key_dim = nk * d;
    cr_assert(n_layer <= MAX_LAYERS && nv <= MAX_V_HEADS);
    cr_assert_gt(r, 1, "the fixture has more value heads than key heads, so that their order matters");
    /* One transformers tensor per GGUF tensor; names are unique in a file
     * the reader accepts, so each one found means each one once. */
    cr_assert_eq((uint64_t)vt_st_count(f), vt_gguf_n_tensors(g));

    /* transformers' value head j of layer l is the GGUF's head perm[l][j],
     * found by value (ssm_dt.bias is drawn at random: distinct values).
     * It must be a permutation, and keep each value head with its key head:
     * transformers' head j reads key head j / r (repeat_interleave), the
     * engine's head h reads key head h % n_k (engine/qwen35.c delta_worker). */
    int64_t perm[MAX_LAYERS][MAX_V_HEADS];
    for (int l = 0; l < n_layer; l++) {
        if ((l + 1) % interval == 0)
            continue;
        char gn[64], hn[96];
        snprintf(gn, sizeof gn, "blk.%d.ssm_dt.bias", l);
        snprintf(hn, sizeof hn, "model.layers.%d.linear_attn.dt_bias", l);
        const vt_gguf_tensor *t = vt_gguf_find_tensor(g, gn);
        const vt_st_tensor *s = vt_st_find(f, hn);
        cr_assert(t && s && t->type == 0 /* F32 */ && t->ne[0] == nv && s->shape[0] == nv, "%s", hn);
        int used[MAX_V_HEADS] = { 0 }, moved = 0;
        for (int64_t j = 0; j < nv; j++) {
            int64_t found = -1;
            for (int64_t h = 0; h < nv; h++) {
                float v;
                memcpy(&v, (const uint8_t *)t->data + h * 4, 4);
                if (same_bits(v, f32_at(s, j))) {
                    cr_assert_eq(found, -1, "%s: value %lld found twice", hn, (long long)j);
                    found = h;
                }
            }
            cr_assert(found >= 0 && !used[found], "%s: head %lld", hn, (long long)j);
            used[found] = 1;
            cr_assert_eq(found % nk, j / r, "%s: transformers' head %lld (key head %lld) from the GGUF's head %lld "
                         "(key head %lld)", hn, (long long)j, (long long)(j / r), (long long)found,
                         (long long)(found % nk));
            moved += found != j;
            perm[l][j] = found;
        }
        cr_assert_gt(moved, 0, "%s: with %lld value heads per key head the order changes", hn, (long long)r);
    }

    for (uint64_t i = 0; i < vt_gguf_n_tensors(g); i++) {
        const vt_gguf_tensor *t = vt_gguf_tensor_at(g, i);
        char gname[128];
        snprintf(gname, sizeof gname, "%.*s", (int)t->name.len, t->name.ptr);
        q35_name nm;
        hf_of35(gname, interval, &nm);
        const char *hname = nm.hf;
        const vt_st_tensor *s = vt_st_find(f, hname);
        cr_assert_not_null(s, "%s: %s missing", gname, hname);
        cr_assert_eq(s->dtype, VT_ST_F32, "%s", hname);
        const int64_t cols = t->ne[0], rows = t->n_dims == 2 ? t->ne[1] : 1, ne = cols * rows;
        if (strcmp(nm.suffix, "ssm_conv1d.weight") == 0)
            cr_assert(s->n_dims == 3 && s->shape[0] == rows && s->shape[1] == 1 && s->shape[2] == cols,
                      "%s: expected [conv_dim, 1, d_conv]", hname);
        else if (t->n_dims == 2)
            cr_assert(s->n_dims == 2 && s->shape[0] == rows && s->shape[1] == cols, "%s: shape [%lld, %lld]",
                      hname, (long long)s->shape[0], (long long)s->shape[1]);
        else
            cr_assert(s->n_dims == 1 && s->shape[0] == cols, "%s", hname);
        cr_assert_eq(s->end - s->begin, (uint64_t)ne * 4, "%s", hname);
        const vt_codec *c = vt_codec_by_type(t->type);
        float *dec = malloc((size_t)ne * 4);
        cr_assert(dec);
        c->decode_f32(t->data, dec, ne / c->block_elems);
        if (nm.norm) {
            /* Qwen3_5RMSNorm scales by 1 + weight: exported w - 1 (in F32),
             * and transformers' 1 + (w - 1) is w again, exactly, for w >=
             * 0.5 (as every fixture norm is). */
            for (int64_t k = 0; k < ne; k++) {
                const float h = f32_at(s, k);
                cr_assert(dec[k] >= 0.5f, "%s[%lld] = %g", gname, (long long)k, (double)dec[k]);
                cr_assert(same_bits(h, dec[k] - 1.0f), "%s[%lld]: %a, expected %a - 1", hname, (long long)k,
                          (double)h, (double)dec[k]);
                cr_assert(same_bits(h + 1.0f, dec[k]), "%s[%lld]", hname, (long long)k);
            }
        } else if (nm.per_head && strcmp(nm.suffix, "ssm_a") == 0) {
            /* ssm_a = -exp(A_log): exported the F32 nearest log(-ssm_a)
             * (within half its ulp of the real logarithm), so -exp of it is
             * ssm_a to a relative half ulp of A_log, plus expf's rounding. */
            for (int64_t j = 0; j < nv; j++) {
                const float a = dec[perm[nm.layer][j]], e = f32_at(s, j);
                cr_assert(a < 0.0f && isfinite(e), "%s[%lld]", hname, (long long)j);
                const double u = ulp_at(e);
                cr_assert_leq(fabs((double)e - log(-(double)a)), 0.5 * u * (1 + 1e-9),
                              "%s[%lld] = %a: not the float nearest log(%a)", hname, (long long)j, (double)e,
                              (double)-a);
                const double back = -(double)expf(e);
                cr_assert_leq(fabs(back - (double)a), fabs((double)a) * 0.5 * u * (1 + 1e-6) + ulp_at(a),
                              "%s[%lld]: -expf(%a) = %a, expected %a", hname, (long long)j, (double)e, back,
                              (double)a);
            }
        } else if (nm.per_head && strcmp(nm.suffix, "ssm_out.weight") == 0) {
            /* Columns in value heads of d_state. */
            for (int64_t row = 0; row < rows; row++)
                for (int64_t j = 0; j < nv; j++)
                    cr_assert_eq(memcmp(s->data + (size_t)(row * cols + j * d) * 4,
                                        dec + row * cols + perm[nm.layer][j] * d, (size_t)d * 4),
                                 0, "%s: row %lld, head %lld", hname, (long long)row, (long long)j);
        } else if (nm.per_head) {
            /* Rows: one per value head (beta, alpha, dt_bias: a 1-D tensor
             * is rows of one), or d_state per head (gate z), or the V part
             * after Q and K (mixed qkv, conv1d channels). */
            const int one_per_head = strcmp(nm.suffix, "ssm_beta.weight") == 0 ||
                                     strcmp(nm.suffix, "ssm_alpha.weight") == 0 ||
                                     strcmp(nm.suffix, "ssm_dt.bias") == 0;
            const int after_qk = strcmp(nm.suffix, "attn_qkv.weight") == 0 ||
                                 strcmp(nm.suffix, "ssm_conv1d.weight") == 0;
            const int64_t n_rows = t->n_dims == 1 ? cols : rows, w = t->n_dims == 1 ? 1 : cols;
            const int64_t block = one_per_head ? 1 : d, from = after_qk ? 2 * key_dim : 0;
            cr_assert_eq(n_rows, from + nv * block, "%s", gname);
            for (int64_t row = 0; row < n_rows; row++) {
                const int64_t k = row - from;
                const int64_t src = row < from ? row : from + perm[nm.layer][k / block] * block + k % block;
                cr_assert_eq(memcmp(s->data + (size_t)(row * w) * 4, dec + src * w, (size_t)w * 4), 0,
                             "%s: row %lld, expected the GGUF's row %lld", hname, (long long)row, (long long)src);
            }
        } else {
            cr_assert_eq(memcmp(s->data, dec, (size_t)ne * 4), 0, "%s: values differ from %s's decoder", hname,
                         c->name);
        }
        free(dec);
    }
    vt_gguf_free(g);
    vt_st_free(f);
    free(bytes);
}

/* The BF16 export is the F32 one rounded to nearest even, tensor by
 * tensor (so the copies are decode_bf16's values, the transformed ones the
 * F32 transformation rounded once). */
static void check_bf16_of_f32(const char *f32_sub, const char *bf16_sub)
{
    char *b32, *b16;
    vt_st_file *f = open_st(f32_sub, &b32), *h = open_st(bf16_sub, &b16);
    cr_assert_eq(vt_st_count(f), vt_st_count(h));
    for (int i = 0; i < vt_st_count(h); i++) {
        const vt_st_tensor *t = vt_st_at(h, i), *s = vt_st_find(f, t->name);
        cr_assert_not_null(s, "%s", t->name);
        cr_assert(t->dtype == VT_ST_BF16 && t->n_dims == s->n_dims, "%s", t->name);
        cr_assert_eq(memcmp(t->shape, s->shape, (size_t)t->n_dims * sizeof *t->shape), 0, "%s", t->name);
        const uint64_t n = (s->end - s->begin) / 4;
        for (uint64_t k = 0; k < n; k++) {
            uint16_t b;
            memcpy(&b, t->data + k * 2, 2);
            cr_assert_eq(b, vt_f32_to_bf16(f32_at(s, (int64_t)k)), "%s[%llu]", t->name, (unsigned long long)k);
        }
    }
    vt_st_free(f);
    vt_st_free(h);
    free(b32);
    free(b16);
}

/* config.json: Qwen3_5TextConfig's keys, their values the GGUF's. */
static void check_q35_config(const char *model, const char *sub, const char *dtype)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s/config.json", tmpdir, sub);
    cJSON *cfg = vt_test_load_json(path);
    vt_error err;
    vt_error_clear(&err);
    vt_gguf *g = vt_gguf_open(model, &err);
    cr_assert_not_null(g, "%s", err.msg);
    cr_assert_str_eq(cJSON_GetArrayItem(vt_test_get(cfg, "architectures"), 0)->valuestring, "Qwen3_5ForCausalLM");
    cr_assert_str_eq(vt_test_get(cfg, "model_type")->valuestring, "qwen3_5_text");
    static const char *const ints[][2] = {
        { "hidden_size", "qwen35.embedding_length" },
        { "num_hidden_layers", "qwen35.block_count" },
        { "intermediate_size", "qwen35.feed_forward_length" },
        { "num_attention_heads", "qwen35.attention.head_count" },
        { "num_key_value_heads", "qwen35.attention.head_count_kv" },
        { "head_dim", "qwen35.attention.key_length" },
        { "max_position_embeddings", "qwen35.context_length" },
        { "linear_conv_kernel_dim", "qwen35.ssm.conv_kernel" },
        { "linear_key_head_dim", "qwen35.ssm.state_size" },
        { "linear_num_key_heads", "qwen35.ssm.group_count" },
        { "linear_num_value_heads", "qwen35.ssm.time_step_rank" },
        { "full_attention_interval", "qwen35.full_attention_interval" },
        { "bos_token_id", "tokenizer.ggml.bos_token_id" },
        { "eos_token_id", "tokenizer.ggml.eos_token_id" },
    };
    for (size_t i = 0; i < sizeof ints / sizeof *ints; i++)
        cr_assert_eq(vt_test_get(cfg, ints[i][0])->valuedouble, (double)key_i64(g, ints[i][1]), "%s", ints[i][0]);
    cr_assert_eq(vt_test_get(cfg, "linear_value_head_dim")->valuedouble,
                 (double)(key_i64(g, "qwen35.ssm.inner_size") / key_i64(g, "qwen35.ssm.time_step_rank")));
    cr_assert_eq(vt_test_get(cfg, "vocab_size")->valuedouble, (double)vt_gguf_find_tensor(g, "token_embd.weight")->ne[1]);
    double eps, base;
    cr_assert(vt_gguf_get_f64(g, "qwen35.attention.layer_norm_rms_epsilon", &eps) &&
              vt_gguf_get_f64(g, "qwen35.rope.freq_base", &base));
    cr_assert_eq((float)vt_test_get(cfg, "rms_norm_eps")->valuedouble, (float)eps);
    const cJSON *types = vt_test_get(cfg, "layer_types");
    const int n_layer = (int)key_i64(g, "qwen35.block_count"), interval = (int)key_i64(g, "qwen35.full_attention_interval");
    cr_assert_eq(cJSON_GetArraySize(types), n_layer);
    for (int l = 0; l < n_layer; l++)
        cr_assert_str_eq(cJSON_GetArrayItem(types, l)->valuestring,
                         (l + 1) % interval ? "linear_attention" : "full_attention", "layer %d", l);
    /* RoPE: NeoX on int(head_dim * partial_rotary_factor) = rope.dimension_count
     * dimensions, theta the GGUF's, sections the GGUF's first three. */
    const cJSON *rope = vt_test_get(cfg, "rope_parameters");
    cr_assert_str_eq(vt_test_get(rope, "rope_type")->valuestring, "default");
    cr_assert_eq(vt_test_get(rope, "rope_theta")->valuedouble, base);
    const double prf = vt_test_get(rope, "partial_rotary_factor")->valuedouble;
    cr_assert_eq(vt_test_get(cfg, "partial_rotary_factor")->valuedouble, prf);
    cr_assert_eq((int64_t)((double)key_i64(g, "qwen35.attention.key_length") * prf),
                 key_i64(g, "qwen35.rope.dimension_count"));
    const vt_gguf_value *sec = vt_gguf_kv_value(g, (uint64_t)vt_gguf_find_key(g, "qwen35.rope.dimension_sections"));
    const cJSON *ms = vt_test_get(rope, "mrope_section");
    cr_assert_eq(cJSON_GetArraySize(ms), 3);
    for (int i = 0; i < 3; i++) {
        vt_gguf_value e;
        cr_assert(vt_gguf_array_get(g, sec, (uint64_t)i, &e));
        cr_assert_eq(cJSON_GetArrayItem(ms, i)->valuedouble, (double)e.v.i64, "mrope_section[%d]", i);
    }
    cr_assert(cJSON_IsTrue(vt_test_get(rope, "mrope_interleaved")));
    cr_assert(cJSON_IsFalse(vt_test_get(cfg, "tie_word_embeddings")));
    cr_assert(cJSON_IsFalse(vt_test_get(cfg, "attention_bias")));
    cr_assert_str_eq(vt_test_get(cfg, "hidden_act")->valuestring, "silu");
    cr_assert_str_eq(vt_test_get(cfg, "dtype")->valuestring, dtype);
    cr_assert_str_eq(vt_test_get(cfg, "torch_dtype")->valuestring, dtype);
    vt_gguf_free(g);
    cJSON_Delete(cfg);
}

static void same_files(const char *sub_a, const char *sub_b)
{
    for (int k = 0; k < 2; k++) {
        const char *file = k ? "config.json" : "model.safetensors";
        char pa[256], pb[256];
        size_t na, nb;
        snprintf(pa, sizeof pa, "%s/%s/%s", tmpdir, sub_a, file);
        snprintf(pb, sizeof pb, "%s/%s/%s", tmpdir, sub_b, file);
        char *a = vt_test_slurp(pa, &na), *b = vt_test_slurp(pb, &nb);
        cr_assert(a && b && na == nb && memcmp(a, b, na) == 0, "%s differs between two exports", file);
        free(a);
        free(b);
    }
}

Test(export, qwen35_weights_config_and_transformations)
{
    make_dir();
    char model[256], err[1024];
    fixture("qwen35", "Q8_0", "", model, sizeof model);
    cr_assert_eq(export_to("f32", model, "", err, sizeof err), 0, "%s", err);
    check_q35_f32(model, "f32");
    check_q35_config(model, "f32", "float32");
    cr_assert_eq(export_to("bf16", model, "--dtype bf16", err, sizeof err), 0, "%s", err);
    check_bf16_of_f32("f32", "bf16");
    check_q35_config(model, "bf16", "bfloat16");
    /* The same model gives the same bytes. */
    cr_assert_eq(export_to("again", model, "", err, sizeof err), 0, "%s", err);
    same_files("f32", "again");
    remove_dir();
}

/* A qwen35 GGUF with n_v value heads per layer instead of the fixture's:
 * its keys and tensors, ssm.time_step_rank and ssm.inner_size changed, and
 * every delta-net tensor indexed by value head drawn anew (F32, a fixed
 * generator; ssm_a < 0, ssm_dt.bias distinct) in the shape
 * engine/qwen35.c load_delta_net reads. */
static void widen_value_heads(const char *src, const char *dst, int64_t n_v)
{
    vt_error err;
    vt_error_clear(&err);
    vt_gguf *g = vt_gguf_open(src, &err);
    cr_assert_not_null(g, "%s", err.msg);
    vt_gguf_writer *w = vt_gguf_writer_new(vt_gguf_version(g), &err);
    cr_assert_not_null(w, "%s", err.msg);
    for (uint64_t i = 0; i < vt_gguf_n_kv(g); i++) {
        const vt_gguf_str k = vt_gguf_kv_key(g, i);
        char key[256];
        snprintf(key, sizeof key, "%.*s", (int)k.len, k.ptr);
        cr_assert_eq(vt_gguf_writer_set_value(w, key, vt_gguf_kv_value(g, i)), 0, "%s", key);
    }
    const int64_t d = key_i64(g, "qwen35.ssm.state_size"), nk = key_i64(g, "qwen35.ssm.group_count");
    const int64_t E = key_i64(g, "qwen35.embedding_length"), K = key_i64(g, "qwen35.ssm.conv_kernel");
    const int64_t V = n_v * d, conv = 2 * nk * d + V;
    cr_assert_eq(vt_gguf_writer_set_u32(w, "qwen35.ssm.time_step_rank", (uint32_t)n_v), 0);
    cr_assert_eq(vt_gguf_writer_set_u32(w, "qwen35.ssm.inner_size", (uint32_t)V), 0);
    static const struct { const char *suffix; int which; } widened[] = {
        { "attn_qkv.weight", 0 }, { "attn_gate.weight", 1 }, { "ssm_beta.weight", 2 }, { "ssm_alpha.weight", 2 },
        { "ssm_out.weight", 3 },  { "ssm_conv1d.weight", 4 }, { "ssm_dt.bias", 5 },    { "ssm_a", 6 },
    };
    uint64_t state = 0x9e3779b97f4a7c15u;
    for (uint64_t i = 0; i < vt_gguf_n_tensors(g); i++) {
        const vt_gguf_tensor *t = vt_gguf_tensor_at(g, i);
        char name[128], suffix[128];
        snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
        int l, which = -1;
        if (sscanf(name, "blk.%d.%127s", &l, suffix) == 2)
            for (size_t k = 0; k < sizeof widened / sizeof *widened; k++)
                if (strcmp(suffix, widened[k].suffix) == 0)
                    which = widened[k].which;
        if (which < 0) {
            const size_t n = vt_codec_row_bytes(vt_codec_by_type(t->type), t->ne[0]) *
                             (size_t)(t->n_dims == 2 ? t->ne[1] : 1);
            cr_assert_eq(vt_gguf_writer_add_tensor(w, name, t->type, t->n_dims, t->ne, t->data, n, &err), 0, "%s",
                         err.msg);
            continue;
        }
        const int64_t shapes[7][2] = { { E, conv }, { E, V }, { E, n_v }, { V, E }, { K, conv }, { n_v, 1 }, { n_v, 1 } };
        const int64_t ne[2] = { shapes[which][0], shapes[which][1] }, n = ne[0] * ne[1];
        float *v = malloc((size_t)n * sizeof *v);
        cr_assert(v);
        for (int64_t k = 0; k < n; k++) {
            state = state * 6364136223846793005u + 1442695040888963407u;
            const float u = (float)((double)(state >> 40) / (double)(1u << 24)); /* [0, 1) */
            v[k] = which == 6 ? -(1.0f + 15.0f * u) : which == 5 ? -7.0f + 4.0f * u : 0.1f * (2.0f * u - 1.0f);
        }
        cr_assert_eq(vt_gguf_writer_add_tensor(w, name, 0 /* F32 */, which >= 5 ? 1 : 2, ne, v, (uint64_t)n * 4, &err),
                     0, "%s", err.msg);
        free(v);
    }
    cr_assert_eq(vt_gguf_writer_write_file(w, dst, NULL, &err), 0, "%s", err.msg);
    vt_gguf_writer_free(w);
    vt_gguf_free(g);
}

/* With n_k = 2 key heads and r = 3 value heads per key head, grouped ->
 * tiled and its inverse are different permutations: the export must keep
 * each value head with its key head (check_q35_f32), and so be the one. */
Test(export, qwen35_three_value_heads_per_key_head)
{
    make_dir();
    char model[256], wide[256], err[1024];
    fixture("qwen35", "F32", "", model, sizeof model);
    snprintf(wide, sizeof wide, "%s/wide.gguf", tmpdir);
    widen_value_heads(model, wide, 6);
    cr_assert_eq(export_to("wide", wide, "", err, sizeof err), 0, "%s", err);
    check_q35_f32(wide, "wide");
    check_q35_config(wide, "wide", "float32");
    remove_dir();
}

/* A GGUF rewritten: its keys and tensors, with layer fuse_layer's attn_q,
 * attn_k and attn_v as one attn_qkv (their rows in that order, as
 * engine/qwen35.c load_attention reads it), and tensor zero's first element
 * set to 0 (either edit off with -1 / NULL). */
static void rewrite_gguf(const char *src, const char *dst, int fuse_layer, const char *zero)
{
    vt_error err;
    vt_error_clear(&err);
    vt_gguf *g = vt_gguf_open(src, &err);
    cr_assert_not_null(g, "%s", err.msg);
    vt_gguf_writer *w = vt_gguf_writer_new(vt_gguf_version(g), &err);
    cr_assert_not_null(w, "%s", err.msg);
    for (uint64_t i = 0; i < vt_gguf_n_kv(g); i++) {
        const vt_gguf_str k = vt_gguf_kv_key(g, i);
        char key[256];
        snprintf(key, sizeof key, "%.*s", (int)k.len, k.ptr);
        cr_assert_eq(vt_gguf_writer_set_value(w, key, vt_gguf_kv_value(g, i)), 0, "%s", key);
    }
    char q[64], k[64], v[64];
    snprintf(q, sizeof q, "blk.%d.attn_q.weight", fuse_layer);
    snprintf(k, sizeof k, "blk.%d.attn_k.weight", fuse_layer);
    snprintf(v, sizeof v, "blk.%d.attn_v.weight", fuse_layer);
    for (uint64_t i = 0; i < vt_gguf_n_tensors(g); i++) {
        const vt_gguf_tensor *t = vt_gguf_tensor_at(g, i);
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)t->name.len, t->name.ptr);
        const size_t row = vt_codec_row_bytes(vt_codec_by_type(t->type), t->ne[0]);
        const int64_t rows = t->n_dims == 2 ? t->ne[1] : 1;
        if (fuse_layer >= 0 && (strcmp(name, k) == 0 || strcmp(name, v) == 0))
            continue;
        if (fuse_layer >= 0 && strcmp(name, q) == 0) {
            const vt_gguf_tensor *parts[3] = { t, vt_gguf_find_tensor(g, k), vt_gguf_find_tensor(g, v) };
            cr_assert(parts[1] && parts[2]);
            int64_t ne[2] = { t->ne[0], 0 };
            size_t n = 0;
            for (int p = 0; p < 3; p++)
                ne[1] += parts[p]->ne[1];
            uint8_t *data = malloc(row * (size_t)ne[1]);
            cr_assert(data);
            for (int p = 0; p < 3; p++) {
                cr_assert(parts[p]->type == t->type && parts[p]->ne[0] == t->ne[0]);
                memcpy(data + n, parts[p]->data, row * (size_t)parts[p]->ne[1]);
                n += row * (size_t)parts[p]->ne[1];
            }
            snprintf(name, sizeof name, "blk.%d.attn_qkv.weight", fuse_layer);
            cr_assert_eq(vt_gguf_writer_add_tensor(w, name, t->type, 2, ne, data, n, &err), 0, "%s", err.msg);
            free(data);
            continue;
        }
        uint8_t *data = malloc(row * (size_t)rows);
        cr_assert(data);
        memcpy(data, t->data, row * (size_t)rows);
        if (zero && strcmp(name, zero) == 0) {
            const float z = 0.0f;
            memcpy(data, &z, sizeof z);
        }
        cr_assert_eq(vt_gguf_writer_add_tensor(w, name, t->type, t->n_dims, t->ne, data, row * (size_t)rows, &err),
                     0, "%s", err.msg);
        free(data);
    }
    cr_assert_eq(vt_gguf_writer_write_file(w, dst, NULL, &err), 0, "%s", err.msg);
    vt_gguf_writer_free(w);
    vt_gguf_free(g);
}

/* A full-attention layer's fused attn_qkv gives the q_proj (query+gate),
 * k_proj and v_proj the separate attn_q, attn_k, attn_v give: the two
 * exports hold the same tensors, byte for byte. */
Test(export, qwen35_fused_attn_qkv_splits_into_the_same_projections)
{
    make_dir();
    char model[256], fused[256], err[1024];
    fixture("qwen35", "Q8_0", "", model, sizeof model);
    snprintf(fused, sizeof fused, "%s/fused.gguf", tmpdir);
    rewrite_gguf(model, fused, 3, NULL);
    vt_error gerr;
    vt_error_clear(&gerr);
    vt_gguf *g = vt_gguf_open(fused, &gerr);
    cr_assert_not_null(g, "%s", gerr.msg);
    cr_assert(vt_gguf_find_tensor(g, "blk.3.attn_qkv.weight") && !vt_gguf_find_tensor(g, "blk.3.attn_q.weight"));
    vt_gguf_free(g);
    cr_assert_eq(export_to("separate", model, "", err, sizeof err), 0, "%s", err);
    cr_assert_eq(export_to("fused", fused, "", err, sizeof err), 0, "%s", err);
    char *ba, *bb;
    vt_st_file *a = open_st("separate", &ba), *b = open_st("fused", &bb);
    cr_assert_eq(vt_st_count(a), vt_st_count(b));
    for (int i = 0; i < vt_st_count(a); i++) {
        const vt_st_tensor *s = vt_st_at(a, i), *t = vt_st_find(b, s->name);
        cr_assert_not_null(t, "%s", s->name);
        cr_assert(s->dtype == t->dtype && s->n_dims == t->n_dims && s->end - s->begin == t->end - t->begin &&
                      memcmp(s->shape, t->shape, (size_t)s->n_dims * sizeof *s->shape) == 0 &&
                      memcmp(s->data, t->data, (size_t)(s->end - s->begin)) == 0,
                  "%s differs", s->name);
    }
    vt_st_free(a);
    vt_st_free(b);
    free(ba);
    free(bb);
    remove_dir();
}

/* A tensor the table does not have, one of the other kind of layer, or an
 * ssm_a that is not -exp of anything: exit 2, one line naming the file and
 * the tensor, nothing written. */
Test(export, qwen35_unknown_tensors_are_refused)
{
    make_dir();
    char model[256];
    fixture("qwen35", "F32", "", model, sizeof model);
    static const struct { const char *tensor, *says; } cases[] = {
        { "blk.0.frob.weight", "expected one of qwen35's tensors (vt exports nothing else)" },
        { "rope_freqs.weight", "expected one of qwen35's tensors (vt exports nothing else)" },
        { "blk.0.attn_q_norm.weight", "expected one of qwen35's tensors of a linear-attention (gated delta net) "
                                      "layer (layer 0 is one; vt exports nothing else)" },
        { "blk.3.ssm_a", "expected one of qwen35's tensors of a full-attention layer (layer 3 is one; vt exports "
                         "nothing else)" },
    };
    for (size_t i = 0; i <= sizeof cases / sizeof *cases; i++) {
        char bad[256], err[1024], want[1024], dir[16];
        snprintf(bad, sizeof bad, "%s/bad%zu.gguf", tmpdir, i);
        vt_error gerr;
        vt_error_clear(&gerr);
        if (i < sizeof cases / sizeof *cases) {
            vt_gguf *g = vt_gguf_open(model, &gerr);
            cr_assert_not_null(g, "%s", gerr.msg);
            vt_gguf_writer *w = vt_gguf_writer_from(g, &gerr);
            cr_assert_not_null(w, "%s", gerr.msg);
            const float v[4] = { -1.0f, -2.0f, -3.0f, -4.0f };
            const int64_t ne[1] = { 4 };
            cr_assert_eq(vt_gguf_writer_add_tensor(w, cases[i].tensor, 0 /* F32 */, 1, ne, v, sizeof v, &gerr), 0,
                         "%s", gerr.msg);
            cr_assert_eq(vt_gguf_writer_write_file(w, bad, NULL, &gerr), 0, "%s", gerr.msg);
            vt_gguf_writer_free(w);
            vt_gguf_free(g);
            snprintf(want, sizeof want, "vt export: %s: tensor %s: %s\n", bad, cases[i].tensor, cases[i].says);
        } else {
            rewrite_gguf(model, bad, -1, "blk.1.ssm_a");
            snprintf(want, sizeof want, "vt export: %s: tensor blk.1.ssm_a: element 0 = 0: expected finite and < 0 "
                     "(ssm_a is -exp(A_log))\n", bad);
        }
        snprintf(dir, sizeof dir, "d%zu", i);
        cr_assert_eq(export_to(dir, bad, "", err, sizeof err), 2, "%s", bad);
        cr_assert_str_eq(err, want);
        char path[512];
        snprintf(path, sizeof path, "%s/%s/config.json", tmpdir, dir);
        cr_assert(!vt_test_exists(path), "a refused export wrote nothing");
    }
    remove_dir();
}

/* MTP (nextn) blocks after the main layers: not part of the forward pass
 * (the engine's nor Qwen3_5ForCausalLM's), left out and counted. */
Test(export, qwen35_mtp_blocks_are_left_out)
{
    make_dir();
    char model[256], mtp[256], dir[256];
    fixture("qwen35", "F32", "", model, sizeof model);
    vt_error err;
    vt_error_clear(&err);
    vt_gguf *g = vt_gguf_open(model, &err);
    cr_assert_not_null(g, "%s", err.msg);
    const uint64_t n_base = vt_gguf_n_tensors(g);
    vt_gguf_writer *w = vt_gguf_writer_from(g, &err);
    cr_assert_not_null(w, "%s", err.msg);
    cr_assert_eq(vt_gguf_writer_set_u32(w, "qwen35.block_count", 5), 0);
    cr_assert_eq(vt_gguf_writer_set_u32(w, "qwen35.nextn_predict_layers", 1), 0);
    static float v[256];
    const int64_t ne_a[2] = { 8, 4 }, ne_b[1] = { 256 };
    cr_assert_eq(vt_gguf_writer_add_tensor(w, "blk.4.nextn.eh_proj.weight", 0, 2, ne_a, v, 32 * 4, &err), 0);
    cr_assert_eq(vt_gguf_writer_add_tensor(w, "blk.4.attn_norm.weight", 0, 1, ne_b, v, 256 * 4, &err), 0);
    snprintf(mtp, sizeof mtp, "%s/mtp.gguf", tmpdir);
    cr_assert_eq(vt_gguf_writer_write_file(w, mtp, NULL, &err), 0, "%s", err.msg);
    vt_gguf_writer_free(w);
    vt_gguf_free(g);
    snprintf(dir, sizeof dir, "%s/mtp", tmpdir);
    mkdir(dir, 0755);
    vt_hf_export_result r;
    cr_assert_eq(vt_hf_export(mtp, dir, VT_ST_F32, 0, &r, &err), 0, "%s", err.msg);
    cr_assert_eq(r.n_left_out, 2);
    cr_assert_eq((uint64_t)r.n_tensors, n_base);
    cr_assert_str_eq(r.hf_class, "Qwen3_5ForCausalLM");
    char *bytes;
    vt_st_file *f = open_st("mtp", &bytes);
    cr_assert_eq((uint64_t)vt_st_count(f), n_base);
    for (int i = 0; i < vt_st_count(f); i++)
        cr_assert_null(strstr(vt_st_at(f, i)->name, "layers.4."), "%s", vt_st_at(f, i)->name);
    vt_st_free(f);
    free(bytes);
    char path[512];
    snprintf(path, sizeof path, "%s/config.json", dir);
    cJSON *cfg = vt_test_load_json(path);
    cr_assert_eq(vt_test_get(cfg, "num_hidden_layers")->valueint, 4);
    cr_assert_eq(cJSON_GetArraySize(vt_test_get(cfg, "layer_types")), 4);
    cJSON_Delete(cfg);
    remove_dir();
}

/* A file as the writer lays it out, with one field changed. */
static char *st_file(const char *header, size_t data_bytes, size_t *n)
{
    size_t hl = strlen(header);
    *n = 8 + hl + data_bytes;
    char *b = calloc(1, *n);
    cr_assert(b);
    for (int i = 0; i < 8; i++)
        b[i] = (char)((uint64_t)hl >> (8 * i));
    memcpy(b + 8, header, hl);
    return b;
}

Test(safetensors, the_reader_refuses_every_malformed_file)
{
    vt_error err;
    size_t n;
    const char *good = "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                       "\"b\":{\"dtype\":\"BF16\",\"shape\":[2,2],\"data_offsets\":[8,16]}}";
    char *b = st_file(good, 16, &n);
    vt_error_clear(&err);
    vt_st_file *f = vt_st_open_memory(b, n, "x.safetensors", &err);
    cr_assert_not_null(f, "%s", err.msg);
    cr_assert_eq(vt_st_count(f), 2);
    cr_assert_eq(vt_st_find(f, "b")->shape[1], 2);
    vt_st_free(f);
    /* Truncated: the header length points past the end. */
    vt_error_clear(&err);
    cr_assert_null(vt_st_open_memory(b, 20, "x.safetensors", &err));
    cr_assert(strstr(err.msg, "header length"), "%s", err.msg);
    free(b);
    static const struct { const char *header; size_t data; const char *says; } bad[] = {
        { "[1,2]", 0, "expected a JSON object" },
        { "{\"a\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4, "expected F32 or BF16" },
        { "{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8, "expected 12" },
        { "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
          "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[12,20]}}", 20, "no hole" },
        { "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
          "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12, "no overlap" },
        { "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 12, "expected the end of the data" },
        { "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,80]}}", 8, "begin <= end <= 8" },
        { "{\"a\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]}}", 0, "shape[0]" },
        { "{\"a\":{\"dtype\":\"F32\",\"shape\":[2.5],\"data_offsets\":[0,8]}}", 8, "shape[0]" },
        { "{\"a\":{\"dtype\":\"F32\",\"shape\":[2]}}", 8, "data_offsets [begin, end]" },
        { "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
          "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}", 16, "named twice" },
        { "{\"__metadata__\":{\"k\":1},\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8,
          "__metadata__.k: expected a string" },
        { "{\"a\":", 0, "expected a JSON object" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        b = st_file(bad[i].header, bad[i].data, &n);
        vt_error_clear(&err);
        f = vt_st_open_memory(b, n, "x.safetensors", &err);
        cr_assert_null(f, "case %zu accepted: %s", i, bad[i].header);
        cr_assert_eq(err.code, VT_EINPUT);
        cr_assert(strstr(err.msg, "x.safetensors: ") == err.msg && strstr(err.msg, bad[i].says) &&
                      !strchr(err.msg, '\n'),
                  "case %zu: %s", i, err.msg);
        free(b);
    }
}
