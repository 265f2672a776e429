/* Qwen3 and Qwen3.5 fixtures: tiny models in several codecs have the
 * expected keys, tensors, shapes and types; are byte-identical for one seed
 * (whatever the thread count) and differ for another; their cut vocabulary
 * tokenizes as llama.cpp's tokenizer does; llama.cpp loads and runs them,
 * with peaked next-token distributions (and, for qwen35, repeatable greedy
 * generation that is not one token repeated, and teacher-forced scoring that
 * agrees with it); the presets have the documented shapes; bad options to
 * `vt fixture make` exit 2 with one line naming the option. */
#include <criterion/criterion.h>

#include "tests/support/vt_test.h"

#include "engine/codec.h"
#include "engine/gguf_file.h"
#include "engine/tokenizer.h"
#include "fixtures/fixture.h"
#include "oracle/ggml_codec.h"
#include "oracle/llamacpp_vocab.h"
#include "engine/runner.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define QWEN_VOCAB VT_VOCAB_DIR "/ggml-vocab-qwen2.gguf"
#define QWEN35_VOCAB VT_VOCAB_DIR "/ggml-vocab-qwen35.gguf"

static char tmpdir[64];

static void make_tmpdir(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/vt-fixture-XXXXXX");
    cr_assert_not_null(mkdtemp(tmpdir), "mkdtemp");
}

static void remove_tmpdir(void)
{
    DIR *d = opendir(tmpdir);
    if (!d)
        return;
    struct dirent *e;
    char p[512];
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.') {
            snprintf(p, sizeof p, "%s/%s", tmpdir, e->d_name);
            unlink(p);
        }
    closedir(d);
    rmdir(tmpdir);
}

TestSuite(qwen3_fixture, .init = make_tmpdir, .fini = remove_tmpdir);

/* tmpdir/name, in one of 8 rotating buffers. */
static char *tmp_path(const char *name)
{
    static char path[8][256];
    static int next;
    char *p = path[next++ % 8];
    snprintf(p, 256, "%s/%s", tmpdir, name);
    return p;
}

/* Makes tmpdir/name with the tiny preset. */
static const char *make_tiny(vt_ggml *g, const char *name, const char *type, uint64_t seed, int tied,
                             int threads)
{
    char *p = tmp_path(name);
    vt_qwen3_fixture_opts o;
    memset(&o, 0, sizeof o);
    cr_assert(vt_qwen3_preset("tiny", &o.shape));
    o.shape.tied = tied;
    const vt_codec *c = vt_codec_by_name(type);
    cr_assert_not_null(c, "%s", type);
    o.weights_type = (int)c->type;
    o.seed = seed;
    o.vocab_path = QWEN_VOCAB;
    o.n_threads = threads;
    vt_error err;
    vt_error_clear(&err);
    int rc = vt_fixture_make_qwen3(g, &o, p, &err);
    cr_assert_eq(rc, VT_OK, "%s %s: %s", name, type, err.msg);
    return p;
}

static unsigned char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)len);
    cr_assert_eq(fread(b, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    *n = (size_t)len;
    return b;
}

static int same_bytes(const char *a, const char *b)
{
    size_t na, nb;
    unsigned char *x = slurp(a, &na), *y = slurp(b, &nb);
    int same = na == nb && memcmp(x, y, na) == 0;
    free(x);
    free(y);
    return same;
}

static uint64_t get_u64(const vt_gguf *g, const char *key)
{
    uint64_t v = 0;
    cr_assert(vt_gguf_get_u64(g, key, &v), "%s missing", key);
    return v;
}

static void expect_tensor(const vt_gguf *g, const char *name, int type, int64_t ne0, int64_t ne1)
{
    const vt_gguf_tensor *t = vt_gguf_find_tensor(g, name);
    cr_assert_not_null(t, "%s missing", name);
    cr_assert_eq(t->type, type, "%s: type %d, expected %d", name, t->type, type);
    cr_assert_eq(t->n_dims, ne1 ? 2u : 1u, "%s: %u dims", name, t->n_dims);
    cr_assert_eq(t->ne[0], ne0, "%s: ne0 %lld", name, (long long)t->ne[0]);
    cr_assert_eq(t->ne[1], ne1 ? ne1 : 1, "%s: ne1 %lld", name, (long long)t->ne[1]);
}

/* The tiny preset's layout, as documented in fixture.h. */
static void check_tiny(const char *path, int type, int tied, uint64_t seed)
{
    vt_error err;
    vt_error_clear(&err);
    vt_gguf *g = vt_gguf_open(path, &err);
    cr_assert_not_null(g, "%s", err.msg);
    cr_assert_eq(vt_gguf_version(g), 3u);
    vt_gguf_str s;
    cr_assert(vt_gguf_get_str(g, "general.architecture", &s) && s.len == 5 && !memcmp(s.ptr, "qwen3", 5));
    cr_assert_eq(get_u64(g, "qwen3.block_count"), 2u);
    cr_assert_eq(get_u64(g, "qwen3.embedding_length"), 256u);
    cr_assert_eq(get_u64(g, "qwen3.feed_forward_length"), 512u);
    cr_assert_eq(get_u64(g, "qwen3.attention.head_count"), 4u);
    cr_assert_eq(get_u64(g, "qwen3.attention.head_count_kv"), 2u);
    cr_assert_eq(get_u64(g, "qwen3.attention.key_length"), 64u);
    cr_assert_eq(get_u64(g, "qwen3.attention.value_length"), 64u);
    cr_assert_gt(get_u64(g, "qwen3.context_length"), 0u);
    double f;
    cr_assert(vt_gguf_get_f64(g, "qwen3.rope.freq_base", &f) && f == 1e6);
    cr_assert(vt_gguf_get_f64(g, "qwen3.attention.layer_norm_rms_epsilon", &f) && fabs(f - 1e-6) < 1e-12);
    cr_assert_eq(get_u64(g, "vt.fixture.seed"), seed);
    cr_assert(vt_gguf_get_str(g, "vt.fixture.weights", &s) &&
              s.len == strlen(vt_codec_by_type(type)->name) &&
              !memcmp(s.ptr, vt_codec_by_type(type)->name, s.len));
    cr_assert(vt_gguf_get_str(g, "vt.fixture.preset", &s) && s.len == 4 && !memcmp(s.ptr, "tiny", 4));
    cr_assert(vt_gguf_find_key(g, "vt.fixture.vt_version") >= 0);

    const int64_t n_vocab = 1280;
    expect_tensor(g, "token_embd.weight", type, 256, n_vocab);
    for (int il = 0; il < 2; il++) {
        char n[64];
#define T(suffix) (snprintf(n, sizeof n, "blk.%d." suffix ".weight", il), n)
        expect_tensor(g, T("attn_norm"), VT_TYPE_F32, 256, 0);
        expect_tensor(g, T("attn_q"), type, 256, 256);
        expect_tensor(g, T("attn_k"), type, 256, 128);
        expect_tensor(g, T("attn_v"), type, 256, 128);
        expect_tensor(g, T("attn_output"), type, 256, 256);
        expect_tensor(g, T("attn_q_norm"), VT_TYPE_F32, 64, 0);
        expect_tensor(g, T("attn_k_norm"), VT_TYPE_F32, 64, 0);
        expect_tensor(g, T("ffn_norm"), VT_TYPE_F32, 256, 0);
        expect_tensor(g, T("ffn_gate"), type, 256, 512);
        expect_tensor(g, T("ffn_up"), type, 256, 512);
        expect_tensor(g, T("ffn_down"), type, 512, 256);
#undef T
    }
    expect_tensor(g, "output_norm.weight", VT_TYPE_F32, 256, 0);
    if (tied)
        cr_assert_null(vt_gguf_find_tensor(g, "output.weight"));
    else
        expect_tensor(g, "output.weight", type, 256, n_vocab);
    cr_assert_eq(vt_gguf_n_tensors(g), (uint64_t)(1 + 2 * 11 + 1 + !tied));

    /* Norms are F32 near 1; matrices decode to finite values. */
    const vt_gguf_tensor *t = vt_gguf_find_tensor(g, "blk.1.ffn_norm.weight");
    const float *w = t->data;
    for (int i = 0; i < 256; i++)
        cr_assert(w[i] > 0.7f && w[i] < 1.3f, "ffn_norm[%d] = %g", i, (double)w[i]);
    t = vt_gguf_find_tensor(g, "blk.0.ffn_down.weight");
    const vt_codec *c = vt_codec_by_type(type);
    float row[512];
    cr_assert_eq(vt_codec_decode_row(c, t->data, 512, VT_DTYPE_F32, row, &err), VT_OK, "%s", err.msg);
    double ss = 0;
    for (int i = 0; i < 512; i++) {
        cr_assert(isfinite(row[i]));
        ss += (double)row[i] * row[i];
    }
    cr_assert_gt(ss, 0.0);
    vt_gguf_free(g);
}

typedef const char *(*make_fn)(vt_ggml *g, const char *name, const char *type, uint64_t seed, int threads);
typedef void (*check_fn)(const char *path, int type, uint64_t seed);

/* Seed 7 with 1 and 3 threads, seed 8 with one per CPU: the layout checked,
 * the same bytes for one seed, different bytes for another. */
static void layout_and_determinism_of(make_fn make, check_fn check, const char *type)
{
    vt_error err;
    vt_error_clear(&err);
    vt_ggml *g = vt_ggml_open(NULL, &err);
    cr_assert_not_null(g, "%s", err.msg);
    const vt_codec *c = vt_codec_by_name(type);
    const char *a = make(g, "a.gguf", type, 7, 1);
    const char *b = make(g, "b.gguf", type, 7, 3);
    const char *d = make(g, "d.gguf", type, 8, 0);
    check(a, (int)c->type, 7);
    check(d, (int)c->type, 8);
    cr_assert(same_bytes(a, b), "%s: seed 7 twice (1 and 3 threads): files differ", type);
    cr_assert(!same_bytes(a, d), "%s: seeds 7 and 8: files are identical", type);
    vt_ggml_free(g);
}

static const char *make_tiny_untied(vt_ggml *g, const char *name, const char *type, uint64_t seed, int threads)
{
    return make_tiny(g, name, type, seed, 0, threads);
}

static void check_tiny_untied(const char *path, int type, uint64_t seed) { check_tiny(path, type, 0, seed); }

static void layout_and_determinism(const char *type)
{
    layout_and_determinism_of(make_tiny_untied, check_tiny_untied, type);
}

Test(qwen3_fixture, tiny_f32) { layout_and_determinism("F32"); }
Test(qwen3_fixture, tiny_q8_0) { layout_and_determinism("Q8_0"); }
Test(qwen3_fixture, tiny_q4_k) { layout_and_determinism("Q4_K"); }
Test(qwen3_fixture, tiny_iq2_xxs) { layout_and_determinism("IQ2_XXS"); }

Test(qwen3_fixture, tiny_tied_has_no_output_head)
{
    vt_error err;
    vt_error_clear(&err);
    vt_ggml *g = vt_ggml_open(NULL, &err);
    cr_assert_not_null(g, "%s", err.msg);
    check_tiny(make_tiny(g, "tied.gguf", "Q8_0", 1, 1, 0), VT_TYPE_Q8_0, 1, 1);
    vt_ggml_free(g);
}

Test(qwen3_fixture, presets_have_the_documented_shapes)
{
    vt_qwen3_shape s;
    cr_assert(vt_qwen3_preset("bench-0.6b", &s));
    cr_assert(s.n_layer == 28 && s.n_embd == 1024 && s.n_head == 16 && s.n_head_kv == 8 &&
              s.head_dim == 128 && s.n_ff == 3072 && s.vocab_merges == 0 && s.rope_base == 1e6f &&
              s.rms_eps == 1e-6f && s.tied);
    cr_assert(vt_qwen3_preset("small", &s));
    cr_assert(s.n_layer == 4 && s.n_embd == 512 && s.n_head == 8 && s.n_head_kv == 4 &&
              s.head_dim == 64 && s.n_ff == 1536 && s.vocab_merges == 0 && !s.tied);
    cr_assert(vt_qwen3_preset("tiny", &s));
    cr_assert(s.vocab_merges > 0 && !s.tied);
    cr_assert(!vt_qwen3_preset("huge", &s));
}

/* ---- the cut vocabulary against llama.cpp's tokenizer ---- */

static const char *const texts[] = {
    "Hello world! The quick brown fox jumps over the lazy dog.",
    "  leading spaces, tabs\tand\nnew lines\n\n",
    "int main(void) { return 0; } // 1234567890 3.14159",
    "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n",
    "Ünïcödé: 日本語のテキスト, emoji \xf0\x9f\x98\x80, Ελληνικά, русский.",
    "don't won't I'm you're they've it's",
    "<|endoftext|>",
};

/* The cut vocabulary of the tiny fixture at path tokenizes (and
 * detokenizes) every text as llama.cpp does. */
static void vocab_agrees_with_llama_cpp(const char *path)
{
    vt_error err;
    vt_error_clear(&err);
    vt_gguf *g = vt_gguf_open(path, &err);
    cr_assert_not_null(g, "%s", err.msg);
    vt_tokenizer *t = vt_tokenizer_open(g, &err);
    cr_assert_not_null(t, "vt tokenizer: %s", err.msg);
    vt_llama_vocab *lv = vt_llama_vocab_open(path, NULL, &err);
    cr_assert_not_null(lv, "llama.cpp: %s", err.msg);
    cr_assert_eq(vt_tokenizer_n_vocab(t), 1280);
    cr_assert_eq(vt_llama_vocab_n_tokens(lv), 1280);
    /* the specials are the last three ids, bytes the first 256 */
    size_t len;
    const char *txt = vt_tokenizer_token_text(t, vt_tokenizer_eos(t), &len);
    cr_assert(len == 10 && !memcmp(txt, "<|im_end|>", 10));
    txt = vt_tokenizer_token_text(t, vt_tokenizer_bos(t), &len);
    cr_assert(len == 13 && !memcmp(txt, "<|endoftext|>", 13));
    cr_assert_eq(vt_tokenizer_token_attr(t, 0), VT_TOKEN_ATTR_NORMAL);
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
        for (int special = 0; special < 2; special++) {
            int32_t a[512], b[512];
            size_t na, nb;
            cr_assert_eq(vt_tokenize(t, texts[i], strlen(texts[i]), 1, special, a, 512, &na, &err), VT_OK,
                         "%s", err.msg);
            cr_assert_eq(vt_llama_tokenize(lv, texts[i], strlen(texts[i]), 1, special, b, 512, &nb, &err),
                         VT_OK, "%s", err.msg);
            cr_assert_eq(na, nb, "text %zu (special %d): vt %zu tokens, llama.cpp %zu", i, special, na, nb);
            for (size_t k = 0; k < na; k++)
                cr_assert_eq(a[k], b[k], "text %zu (special %d) token %zu: vt %d, llama.cpp %d", i,
                             special, k, a[k], b[k]);
            /* merges do apply: fewer tokens than bytes for the English text */
            if (i == 0)
                cr_assert_lt(na, strlen(texts[i]) * 3 / 4, "%zu tokens", na);
            char da[2048], db[2048];
            size_t nda, ndb;
            cr_assert_eq(vt_detokenize(t, a, na, da, sizeof da, &nda, &err), VT_OK, "%s", err.msg);
            cr_assert_eq(vt_llama_detokenize(lv, b, nb, db, sizeof db, &ndb, &err), VT_OK, "%s", err.msg);
            cr_assert(nda == ndb && !memcmp(da, db, nda), "text %zu: detokenized text differs", i);
            cr_assert(nda == strlen(texts[i]) && !memcmp(da, texts[i], nda), "text %zu: round trip", i);
        }
    vt_llama_vocab_free(lv);
    vt_tokenizer_free(t);
    vt_gguf_free(g);
}

Test(qwen3_fixture, tiny_vocabulary_tokenizes_as_llama_cpp)
{
    vt_error err;
    vt_error_clear(&err);
    vt_ggml *gg = vt_ggml_open(NULL, &err);
    cr_assert_not_null(gg, "%s", err.msg);
    const char *path = make_tiny(gg, "vocab.gguf", "Q8_0", 1, 0, 0);
    vt_ggml_free(gg);
    vocab_agrees_with_llama_cpp(path);
}

/* ---- llama.cpp loads and runs the fixtures ---- */

/* Loads path with the llamacpp runner, evaluates a prompt one token at a
 * time, returns the mean top-1 probability of the next-token distributions
 * (all finite). */
/* The llamacpp runner on path: 64 tokens of context, one thread (tiny
 * models: more threads only spin). */
static vt_runner *open_llama(const char *path, vt_exec_mode mode)
{
    vt_runner_settings set;
    vt_runner_settings_default(&set);
    set.model_path = path;
    set.n_ctx = 64;
    set.n_threads = 1;
    set.mode = mode;
    vt_error err;
    vt_error_clear(&err);
    vt_runner *r = vt_runner_open(vt_runner_find("llamacpp"), &set, &err);
    cr_assert_not_null(r, "%s: %s", path, err.msg);
    return r;
}

static double run_llama(const char *path)
{
    vt_runner *r = open_llama(path, VT_MODE_EAGER);
    vt_error err;
    vt_error_clear(&err);
    int32_t n_vocab = vt_runner_n_vocab(r);
    cr_assert_eq(n_vocab, 1280);
    /* arbitrary ids: the check is on the arithmetic, not the text */
    const int32_t toks[12] = { 1277, 72, 101, 108, 300, 640, 1000, 13, 256, 900, 5, 1276 };
    static float logits[11 * 1280];
    cr_assert_eq(vt_runner_score(r, toks, 1, toks + 1, 11, logits, &err), VT_OK, "%s", err.msg);
    double top1 = 0;
    for (int i = 0; i < 11; i++) {
        const float *l = logits + (size_t)i * n_vocab;
        double mx = -INFINITY, z = 0;
        for (int32_t j = 0; j < n_vocab; j++) {
            cr_assert(isfinite(l[j]), "%s: logit %d not finite", path, j);
            if (l[j] > mx)
                mx = l[j];
        }
        for (int32_t j = 0; j < n_vocab; j++)
            z += exp(l[j] - mx);
        top1 += 1 / z;
    }
    vt_runner_close(r);
    return top1 / 11;
}

Test(qwen3_fixture, llama_cpp_loads_and_runs_tiny_models)
{
    vt_error err;
    vt_error_clear(&err);
    vt_ggml *g = vt_ggml_open(NULL, &err);
    cr_assert_not_null(g, "%s", err.msg);
    static const char *const types[] = { "F32", "Q8_0", "Q4_K", "IQ2_XXS" };
    const char *paths[5];
    char name[32];
    for (int i = 0; i < 4; i++) {
        snprintf(name, sizeof name, "run-%s.gguf", types[i]);
        paths[i] = make_tiny(g, name, types[i], 1, 0, 0);
    }
    paths[4] = make_tiny(g, "run-tied.gguf", "F32", 1, 1, 0);
    vt_ggml_free(g);
    for (int i = 0; i < 5; i++) {
        double top1 = run_llama(paths[i]);
        /* peaked, not near-uniform (1/1280), not one-hot */
        cr_assert(top1 > 0.2 && top1 < 0.9, "%s: mean top-1 probability %.3f: expected 0.2..0.9",
                  paths[i], top1);
    }
}

/* Fixtures that look like real models: the Q4_K_M mix puts attn_v, ffn_down
 * and the head in Q6_K and every other matrix in Q4_K (the embedding too
 * when the head is tied to it); outlier channels get a gain of 16 in the
 * norms before attention and FFN, and only there; both are recorded in the
 * file, deterministic, and llama.cpp runs the result. */
Test(qwen3_fixture, the_q4_k_m_mix_and_outlier_channels)
{
    vt_error err;
    vt_error_clear(&err);
    vt_ggml *g = vt_ggml_open(NULL, &err);
    cr_assert_not_null(g, "%s", err.msg);
    const char *paths[4];
    for (int k = 0; k < 4; k++) {
        vt_qwen3_fixture_opts o;
        memset(&o, 0, sizeof o);
        cr_assert(vt_qwen3_preset("tiny", &o.shape));
        o.shape.tied = k == 3;
        o.weights_type = VT_TYPE_Q4_K;
        o.mix = k == 0 ? VT_MIX_UNIFORM : VT_MIX_Q4_K_M;
        o.outlier_channels = k == 0 ? 0 : 4;
        o.seed = 1;
        o.vocab_path = QWEN_VOCAB;
        o.n_threads = k == 2 ? 1 : 0;
        char name[32];
        snprintf(name, sizeof name, "mix-%d.gguf", k);
        paths[k] = tmp_path(name);
        cr_assert_eq(vt_fixture_make_qwen3(g, &o, paths[k], &err), VT_OK, "%s", err.msg);
    }
    cr_assert(same_bytes(paths[1], paths[2]), "the bytes do not depend on the thread count");
    vt_gguf *plain = vt_gguf_open(paths[0], &err), *mix = vt_gguf_open(paths[1], &err),
            *tied = vt_gguf_open(paths[3], &err);
    cr_assert(plain && mix && tied, "%s", err.msg);
    vt_gguf_str s;
    cr_assert(vt_gguf_get_str(mix, "vt.fixture.weights", &s) && s.len == 6 && !memcmp(s.ptr, "Q4_K_M", 6));
    cr_assert_eq(get_u64(mix, "vt.fixture.outlier_channels"), 4u);
    cr_assert_eq(get_u64(mix, "general.file_type"), 15u, "LLAMA_FTYPE_MOSTLY_Q4_K_M");
    cr_assert_lt(vt_gguf_find_key(plain, "vt.fixture.outlier_channels"), 0);
    expect_tensor(mix, "token_embd.weight", VT_TYPE_Q4_K, 256, 1280);
    expect_tensor(mix, "output.weight", VT_TYPE_Q6_K, 256, 1280);
    expect_tensor(tied, "token_embd.weight", VT_TYPE_Q6_K, 256, 1280);
    cr_assert_null(vt_gguf_find_tensor(tied, "output.weight"));
    for (int il = 0; il < 2; il++) {
        char n[64];
#define T(suffix) (snprintf(n, sizeof n, "blk.%d." suffix ".weight", il), n)
        expect_tensor(mix, T("attn_q"), VT_TYPE_Q4_K, 256, 256);
        expect_tensor(mix, T("attn_k"), VT_TYPE_Q4_K, 256, 128);
        expect_tensor(mix, T("attn_v"), VT_TYPE_Q6_K, 256, 128);
        expect_tensor(mix, T("attn_output"), VT_TYPE_Q4_K, 256, 256);
        expect_tensor(mix, T("ffn_gate"), VT_TYPE_Q4_K, 256, 512);
        expect_tensor(mix, T("ffn_up"), VT_TYPE_Q4_K, 256, 512);
        expect_tensor(mix, T("ffn_down"), VT_TYPE_Q6_K, 512, 256);
#undef T
        /* The norms: the same draw, times 16 on exactly four channels of
         * attn_norm and ffn_norm; q/k norms untouched. */
        const char *norms[3] = { "attn_norm", "ffn_norm", "attn_q_norm" };
        for (int k = 0; k < 3; k++) {
            snprintf(n, sizeof n, "blk.%d.%s.weight", il, norms[k]);
            const vt_gguf_tensor *a = vt_gguf_find_tensor(plain, n), *b = vt_gguf_find_tensor(mix, n);
            cr_assert(a && b && a->ne[0] == b->ne[0], "%s", n);
            const float *x = a->data, *y = b->data;
            int gained = 0;
            for (int64_t c = 0; c < a->ne[0]; c++) {
                if (y[c] == x[c] * 16.0f)
                    gained++;
                else
                    cr_assert_eq(y[c], x[c], "%s channel %lld", n, (long long)c);
            }
            cr_assert_eq(gained, k < 2 ? 4 : 0, "%s: %d channels with the gain", n, gained);
        }
    }
    const vt_gguf_tensor *on = vt_gguf_find_tensor(mix, "output_norm.weight"),
                         *op = vt_gguf_find_tensor(plain, "output_norm.weight");
    cr_assert_eq(memcmp(on->data, op->data, (size_t)on->n_bytes), 0, "the output norm has no outliers");
    vt_gguf_free(plain);
    vt_gguf_free(mix);
    vt_gguf_free(tied);
    /* What the mix refuses. */
    vt_qwen3_fixture_opts o;
    memset(&o, 0, sizeof o);
    cr_assert(vt_qwen3_preset("tiny", &o.shape));
    o.weights_type = VT_TYPE_Q8_0;
    o.mix = VT_MIX_Q4_K_M;
    o.vocab_path = QWEN_VOCAB;
    char *bad = tmp_path("mix-bad.gguf");
    cr_assert_eq(vt_fixture_make_qwen3(g, &o, bad, &err), VT_EINPUT);
    o.weights_type = VT_TYPE_Q4_K;
    o.mix = VT_MIX_UNIFORM;
    o.outlier_channels = 65;
    cr_assert_eq(vt_fixture_make_qwen3(g, &o, bad, &err), VT_EINPUT);
    cr_assert(strstr(err.msg, "outlier"), "%s", err.msg);
    cr_assert(!vt_test_exists(bad), "nothing left on disk");
    vt_ggml_free(g);
    for (int k = 1; k < 4; k += 2) {
        double top1 = run_llama(paths[k]);
        cr_assert(top1 > 0.2 && top1 < 0.95, "%s: mean top-1 probability %.3f", paths[k], top1);
    }
}

/* ---- the command line ---- */

/* Runs vt with args; returns the exit status, stdout+stderr in out. */
static int run_vt(const char *args, char *out, size_t cap)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' %s 2>&1", VT_BIN, args);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t n = fread(out, 1, cap - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    return vt_test_exit(st, cmd, out);
}

Test(qwen3_fixture, cli_makes_the_same_file_as_the_library)
{
    vt_error err;
    vt_error_clear(&err);
    vt_ggml *g = vt_ggml_open(NULL, &err);
    cr_assert_not_null(g, "%s", err.msg);
    const char *lib = make_tiny(g, "lib.gguf", "Q4_K", 3, 1, 0);
    vt_ggml_free(g);
    char args[512], out[4096];
    snprintf(args, sizeof args, "fixture make --arch qwen3 --preset tiny --weights q4_k --seed 3 --tied "
             "--vocab '%s' -o '%s/cli.gguf'", QWEN_VOCAB, tmpdir);
    cr_assert_eq(run_vt(args, out, sizeof out), 0, "%s", out);
    char cli[300];
    snprintf(cli, sizeof cli, "%s/cli.gguf", tmpdir);
    cr_assert(same_bytes(lib, cli), "CLI and library files differ");
}

typedef struct bad_case {
    const char *args, *names; /* `vt fixture make ARGS`; the option the message names */
} bad_case;

/* Each case exits 2 with one line naming the option and what was expected;
 * then a vocabulary that is not there (extra: more options) exits 2, names
 * the file and leaves no output behind. */
static void expect_bad_options(const bad_case *cases, size_t n, const char *extra)
{
    for (size_t i = 0; i < n; i++) {
        char args[256], out[4096];
        snprintf(args, sizeof args, "fixture make %s", cases[i].args);
        int st = run_vt(args, out, sizeof out);
        cr_assert_eq(st, 2, "'%s': exit %d: %s", args, st, out);
        char *nl = strchr(out, '\n');
        cr_assert(nl && nl[1] == '\0', "'%s': expected one line: %s", args, out);
        cr_assert(strstr(out, cases[i].names), "'%s': expected the message to name %s: %s", args,
                  cases[i].names, out);
        cr_assert(strstr(out, "expected"), "'%s': expected the message to say what was expected: %s",
                  args, out);
    }
    char args[256], out[4096];
    snprintf(args, sizeof args, "fixture make %s --preset tiny --vocab /nonexistent.gguf -o /tmp/vt-never.gguf",
             extra);
    cr_assert_eq(run_vt(args, out, sizeof out), 2, "%s", out);
    cr_assert(strstr(out, "/nonexistent.gguf"), "%s", out);
    struct stat st;
    cr_assert_neq(stat("/tmp/vt-never.gguf", &st), 0, "a file was left behind");
}

Test(qwen3_fixture, cli_bad_options_exit_2_with_one_line)
{
    static const bad_case cases[] = {
        { "--preset huge -o X", "--preset" },
        { "--preset tiny --weights Q9_9 -o X", "--weights" },
        { "--preset tiny --weights Q8_1 -o X", "--weights" }, /* no decoder */
        { "--preset tiny --weights Q8_K -o X", "--weights" }, /* activation-only: llama.cpp cannot multiply it */
        { "--arch llama --preset tiny -o X", "--arch" },
        { "--preset tiny --seed -1 -o X", "--seed" },
        { "--preset tiny --seed 12x -o X", "--seed" },
        { "--preset tiny --threads 100 -o X", "--threads" },
        { "--preset tiny --bogus -o X", "--bogus" },
        { "--preset tiny", "-o" },
        { "--weights F32 -o X", "--preset" },
        { "--preset tiny -o X --seed", "--seed" },
        { "--preset tiny --tied --untied -o X", "--untied" },
        { "--preset tiny --rows 8 -o X", "--rows" },
        { "--preset codecs --weights Q4_K -o X", "--weights" },
        { "--preset codecs --arch qwen3 -o X", "--arch" },
        { "--preset codecs --cols 100 -o X", "--cols" },
        { "--preset tiny --outlier-channels 65 -o X", "--outlier-channels" },
        { "--preset tiny --outlier-channels -1 -o X", "--outlier-channels" },
        { "--preset tiny --outlier-channels 2x -o X", "--outlier-channels" },
        { "--preset codecs --outlier-channels 2 -o X", "--outlier-channels" },
        { "--preset tiny --weights Q4_K_S -o X", "--weights" },
    };
    expect_bad_options(cases, sizeof cases / sizeof cases[0], "");
}

/* ---- Qwen3.5 ---- */

TestSuite(qwen35_fixture, .init = make_tmpdir, .fini = remove_tmpdir);

/* Makes tmpdir/name with the qwen35 tiny preset. */
static const char *make_tiny35(vt_ggml *g, const char *name, const char *type, uint64_t seed, int threads)
{
    char *p = tmp_path(name);
    vt_qwen35_fixture_opts o;
    memset(&o, 0, sizeof o);
    cr_assert(vt_qwen35_preset("tiny", &o.shape));
    const vt_codec *c = vt_codec_by_name(type);
    cr_assert_not_null(c, "%s", type);
    o.weights_type = (int)c->type;
    o.seed = seed;
    o.vocab_path = QWEN35_VOCAB;
    o.n_threads = threads;
    vt_error err;
    vt_error_clear(&err);
    int rc = vt_fixture_make_qwen35(g, &o, p, &err);
    cr_assert_eq(rc, VT_OK, "%s %s: %s", name, type, err.msg);
    return p;
}

/* The qwen35 tiny layout, as documented in fixture.h: the keys llama.cpp
 * reads, and every tensor it creates with its shape and type. */
static void check_tiny35(const char *path, int type, uint64_t seed)
{
    vt_error err;
    vt_error_clear(&err);
    vt_gguf *g = vt_gguf_open(path, &err);
    cr_assert_not_null(g, "%s", err.msg);
    vt_gguf_str s;
    cr_assert(vt_gguf_get_str(g, "general.architecture", &s) && s.len == 6 && !memcmp(s.ptr, "qwen35", 6));
    static const struct {
        const char *key;
        uint64_t v;
    } keys[] = {
        { "qwen35.block_count", 4 }, { "qwen35.context_length", 4096 }, { "qwen35.embedding_length", 256 },
        { "qwen35.feed_forward_length", 512 }, { "qwen35.attention.head_count", 4 },
        { "qwen35.attention.head_count_kv", 2 }, { "qwen35.attention.key_length", 64 },
        { "qwen35.attention.value_length", 64 }, { "qwen35.rope.dimension_count", 16 },
        { "qwen35.ssm.conv_kernel", 4 }, { "qwen35.ssm.state_size", 64 }, { "qwen35.ssm.group_count", 2 },
        { "qwen35.ssm.time_step_rank", 4 }, { "qwen35.ssm.inner_size", 256 },
        { "qwen35.full_attention_interval", 4 },
    };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        cr_assert_eq(get_u64(g, keys[i].key), keys[i].v, "%s", keys[i].key);
    double f;
    cr_assert(vt_gguf_get_f64(g, "qwen35.rope.freq_base", &f) && f == 1e7);
    cr_assert(vt_gguf_get_f64(g, "qwen35.attention.layer_norm_rms_epsilon", &f) && fabs(f - 1e-6) < 1e-12);
    int64_t k = vt_gguf_find_key(g, "qwen35.rope.dimension_sections");
    cr_assert_geq(k, 0, "rope.dimension_sections missing");
    const vt_gguf_value *sec = vt_gguf_kv_value(g, (uint64_t)k);
    cr_assert_eq(sec->type, VT_GGUF_ARRAY);
    cr_assert_eq(sec->count, 4u);
    static const int64_t want_sec[4] = { 3, 3, 2, 0 };
    for (uint64_t i = 0; i < 4; i++) {
        vt_gguf_value e;
        cr_assert(vt_gguf_array_get(g, sec, i, &e));
        cr_assert_eq(e.v.i64, want_sec[i], "section %llu", (unsigned long long)i);
    }
    cr_assert(vt_gguf_get_str(g, "tokenizer.ggml.pre", &s) && s.len == 6 && !memcmp(s.ptr, "qwen35", 6));
    cr_assert_eq(get_u64(g, "vt.fixture.seed"), seed);

    const int64_t n_vocab = 1280;
    expect_tensor(g, "token_embd.weight", type, 256, n_vocab);
    size_t n_tensors = 3;
    for (int il = 0; il < 4; il++) {
        char n[64];
#define T(suffix) (snprintf(n, sizeof n, "blk.%d." suffix, il), n)
        expect_tensor(g, T("attn_norm.weight"), VT_TYPE_F32, 256, 0);
        expect_tensor(g, T("post_attention_norm.weight"), VT_TYPE_F32, 256, 0);
        expect_tensor(g, T("ffn_gate.weight"), type, 256, 512);
        expect_tensor(g, T("ffn_up.weight"), type, 256, 512);
        expect_tensor(g, T("ffn_down.weight"), type, 512, 256);
        cr_assert_null(vt_gguf_find_tensor(g, T("ffn_norm.weight")));
        if (il < 3) { /* gated delta-net: K = 2, H = 4 heads of 64 */
            expect_tensor(g, T("attn_qkv.weight"), type, 256, 512);
            expect_tensor(g, T("attn_gate.weight"), type, 256, 256);
            expect_tensor(g, T("ssm_conv1d.weight"), VT_TYPE_F32, 4, 512);
            expect_tensor(g, T("ssm_dt.bias"), VT_TYPE_F32, 4, 0);
            expect_tensor(g, T("ssm_a"), VT_TYPE_F32, 4, 0);
            expect_tensor(g, T("ssm_beta.weight"), type, 256, 4);
            expect_tensor(g, T("ssm_alpha.weight"), type, 256, 4);
            expect_tensor(g, T("ssm_norm.weight"), VT_TYPE_F32, 64, 0);
            expect_tensor(g, T("ssm_out.weight"), type, 256, 256);
            cr_assert_null(vt_gguf_find_tensor(g, T("attn_q.weight")));
            /* decay exp(ssm_a * softplus(.)) in (0, 1): ssm_a < 0; softplus(dt bias) a realistic step */
            const float *a = vt_gguf_find_tensor(g, T("ssm_a"))->data;
            const float *dt = vt_gguf_find_tensor(g, T("ssm_dt.bias"))->data;
            for (int h = 0; h < 4; h++) {
                cr_assert(a[h] <= -1.0f && a[h] >= -16.0f, "ssm_a[%d] = %g", h, (double)a[h]);
                double step = log1p(exp(dt[h]));
                cr_assert(step >= 0.999e-3 && step <= 0.1001, "softplus(dt_bias[%d]) = %g", h, step);
            }
            n_tensors += 14; /* 5 common + 9 */
        } else { /* full attention: 4 query heads (+ gates), 2 key/value heads of 64 */
            expect_tensor(g, T("attn_q.weight"), type, 256, 512);
            expect_tensor(g, T("attn_k.weight"), type, 256, 128);
            expect_tensor(g, T("attn_v.weight"), type, 256, 128);
            expect_tensor(g, T("attn_output.weight"), type, 256, 256);
            expect_tensor(g, T("attn_q_norm.weight"), VT_TYPE_F32, 64, 0);
            expect_tensor(g, T("attn_k_norm.weight"), VT_TYPE_F32, 64, 0);
            cr_assert_null(vt_gguf_find_tensor(g, T("attn_qkv.weight")));
            n_tensors += 11; /* 5 common + 6 */
        }
#undef T
    }
    expect_tensor(g, "output_norm.weight", VT_TYPE_F32, 256, 0);
    expect_tensor(g, "output.weight", type, 256, n_vocab);
    cr_assert_eq(vt_gguf_n_tensors(g), (uint64_t)n_tensors);
    vt_gguf_free(g);
}

static void layout_and_determinism35(const char *type)
{
    layout_and_determinism_of(make_tiny35, check_tiny35, type);
}

Test(qwen35_fixture, tiny_f32) { layout_and_determinism35("F32"); }
Test(qwen35_fixture, tiny_q4_k) { layout_and_determinism35("Q4_K"); }

Test(qwen35_fixture, presets_have_the_documented_shapes)
{
    vt_qwen35_shape s;
    cr_assert(vt_qwen35_preset("bench-0.8b", &s));
    /* Qwen3.5-0.8B's text model */
    cr_assert(s.n_layer == 24 && s.full_attn_interval == 4 && s.n_embd == 1024 && s.n_ff == 3584 &&
              s.n_ctx_train == 262144);
    cr_assert(s.n_head == 8 && s.n_head_kv == 2 && s.head_dim == 256 && s.rope_dim == 64 &&
              s.rope_sections[0] == 11 && s.rope_sections[1] == 11 && s.rope_sections[2] == 10 &&
              s.rope_sections[3] == 0 && s.rope_base == 1e7f);
    cr_assert(s.ssm_conv_kernel == 4 && s.ssm_state_size == 128 && s.ssm_group_count == 16 &&
              s.ssm_time_step_rank == 16 && s.rms_eps == 1e-6f && s.vocab_merges == 0 && s.tied);
    int full = 0;
    for (int il = 0; il < s.n_layer; il++)
        if (!vt_qwen35_is_recurrent(&s, il)) {
            cr_assert_eq(il % 4, 3, "layer %d: full attention", il);
            full++;
        }
    cr_assert_eq(full, 6);
    cr_assert(vt_qwen35_preset("tiny", &s));
    cr_assert(s.n_layer == 4 && s.full_attn_interval == 4 && s.n_embd == 256 && s.vocab_merges > 0 && !s.tied);
    cr_assert(vt_qwen35_is_recurrent(&s, 0) && vt_qwen35_is_recurrent(&s, 2) && !vt_qwen35_is_recurrent(&s, 3));
    cr_assert(!vt_qwen35_preset("small", &s));
    cr_assert(!vt_qwen35_preset("bench-0.6b", &s));
    cr_assert(!vt_qwen35_preset(NULL, &s));
}

Test(qwen35_fixture, tiny_vocabulary_tokenizes_as_llama_cpp)
{
    vt_error err;
    vt_error_clear(&err);
    vt_ggml *gg = vt_ggml_open(NULL, &err);
    cr_assert_not_null(gg, "%s", err.msg);
    const char *path = make_tiny35(gg, "vocab.gguf", "Q8_0", 1, 0);
    vt_ggml_free(gg);
    vocab_agrees_with_llama_cpp(path);
}

/* llama.cpp greedy-generates from path twice in one context, another prompt
 * in between (the hybrid memory cleared each time): the same tokens both
 * times, not one token repeated; teacher-forced on its own tokens it picks
 * them again. */
static void generate_with_llama(const char *path)
{
    vt_runner *r = open_llama(path, VT_MODE_PRODUCTION);
    vt_error err;
    vt_error_clear(&err);
    const int32_t n_vocab = vt_runner_n_vocab(r);
    cr_assert_eq(n_vocab, 1280);
    /* arbitrary ids, as in run_llama */
    const int32_t prompt[6] = { 52, 300, 640, 1000, 13, 256 };
    enum { N = 16 };
    int32_t a[N], b[N], other[N];
    static float logits[N * 1280];
    cr_assert_eq(vt_runner_generate(r, prompt, 6, N, a, NULL, &err), VT_OK, "%s", err.msg);
    cr_assert_eq(vt_runner_generate(r, prompt + 1, 5, N, other, NULL, &err), VT_OK, "%s", err.msg);
    cr_assert_eq(vt_runner_generate(r, prompt, 6, N, b, NULL, &err), VT_OK, "%s", err.msg);
    int distinct = 0;
    for (int i = 0; i < N; i++) {
        cr_assert_eq(a[i], b[i], "%s: position %d: %d then %d", path, i, a[i], b[i]);
        int seen = 0;
        for (int j = 0; j < i; j++)
            seen |= a[j] == a[i];
        distinct += !seen;
    }
    cr_assert_geq(distinct, 6, "%s: %d distinct tokens in %d: degenerate", path, distinct, N);
    cr_assert_eq(vt_runner_score(r, prompt, 6, a, N, logits, &err), VT_OK, "%s", err.msg);
    int agree = 0;
    for (int i = 0; i < N; i++)
        agree += vt_argmax(logits + (size_t)i * n_vocab, n_vocab) == a[i];
    /* batched scoring and one-token generation take different paths through
     * llama.cpp's delta-net (chunked vs recurrent): near ties may flip */
    cr_assert_geq(agree, N - 3, "%s: teacher-forced argmax agrees at %d of %d positions", path, agree, N);
    vt_runner_close(r);
}

Test(qwen35_fixture, llama_cpp_loads_and_runs_tiny_models, .timeout = 120)
{
    vt_error err;
    vt_error_clear(&err);
    vt_ggml *g = vt_ggml_open(NULL, &err);
    cr_assert_not_null(g, "%s", err.msg);
    static const char *const types[] = { "F32", "BF16", "Q8_0", "Q4_K" };
    const char *paths[4];
    char name[32];
    for (int i = 0; i < 4; i++) {
        snprintf(name, sizeof name, "run-%s.gguf", types[i]);
        paths[i] = make_tiny35(g, name, types[i], 1, 0);
    }
    vt_ggml_free(g);
    for (int i = 0; i < 4; i++) {
        generate_with_llama(paths[i]);
        double top1 = run_llama(paths[i]);
        cr_assert(top1 > 0.2 && top1 < 0.9, "%s: mean top-1 probability %.3f: expected 0.2..0.9",
                  paths[i], top1);
    }
}

Test(qwen35_fixture, cli_makes_the_same_file_as_the_library)
{
    vt_error err;
    vt_error_clear(&err);
    vt_ggml *g = vt_ggml_open(NULL, &err);
    cr_assert_not_null(g, "%s", err.msg);
    const char *lib = make_tiny35(g, "lib.gguf", "Q8_0", 3, 0);
    vt_ggml_free(g);
    char args[512], out[4096];
    snprintf(args, sizeof args, "fixture make --arch qwen35 --preset tiny --weights q8_0 --seed 3 --threads 2 "
             "--vocab '%s' -o '%s/cli.gguf'", QWEN35_VOCAB, tmpdir);
    cr_assert_eq(run_vt(args, out, sizeof out), 0, "%s", out);
    char cli[300];
    snprintf(cli, sizeof cli, "%s/cli.gguf", tmpdir);
    cr_assert(same_bytes(lib, cli), "CLI and library files differ");
}

Test(qwen35_fixture, cli_bad_options_exit_2_with_one_line)
{
    static const bad_case cases[] = {
        { "--arch qwen35 --preset small -o X", "--preset" },
        { "--arch qwen35 --preset bench-0.6b -o X", "--preset" },
        { "--arch qwen35 --preset huge -o X", "--preset" },
        { "--arch qwen36 --preset tiny -o X", "--arch" },
        { "--arch qwen3 --preset bench-0.8b -o X", "--preset" },
        { "--arch qwen35 --preset tiny --weights Q8_K -o X", "--weights" },
        { "--arch qwen35 --preset tiny --rows 8 -o X", "--rows" },
        { "--arch qwen35 --preset tiny --threads -1 -o X", "--threads" },
        { "--arch qwen35 --preset tiny", "-o" },
        { "--arch qwen35 -o X", "--preset" },
    };
    expect_bad_options(cases, sizeof cases / sizeof cases[0], "--arch qwen35");
}
