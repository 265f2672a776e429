/* vt export --safetensors (oracle/hf_export.h) and the safetensors reader
 * (oracle/safetensors.h): the exported weights are the codecs' decoded
 * values bit for bit under transformers' names and shapes; the config holds
 * the GGUF's hyper-parameters; the files are deterministic, published
 * together, never clobbered; and the reader refuses every malformed file. */
#include <criterion/criterion.h>

#include "tests/support/vt_test.h"

#include "engine/codec.h"
#include "engine/gguf_file.h"
#include "oracle/safetensors.h"

#include <cjson/cJSON.h>
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

    fixture("qwen35", "F32", "", q35, sizeof q35);
    static const struct { const char *args, *line; } cases[] = {
        { "export --safetensors D Q35", "vt export: Q35: general.architecture 'qwen35': expected qwen3 (the one vt "
                                        "exports so far)" },
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
