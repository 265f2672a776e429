/* Hugging Face tokenizer files (oracle/hf_tokenizer.h), for the tiny qwen3
 * and qwen35 fixtures and for llama.cpp's full qwen2 / qwen35 vocabularies
 * (deps/llama.cpp/models, as tests/test_tokenizer.c uses them):
 *  - tokenizer.json holds the GGUF's vocabulary (every id once, under its
 *    text), its merges in order, exactly vt's added tokens, vt's
 *    pre-tokenizer regex, and tokenizer_config.json the special tokens;
 *  - a tokenizer driven by nothing but tokenizer.json, doing what the
 *    `tokenizers` library does with it (added tokens leftmost-longest, the
 *    Split regex with its matches and gaps, byte-level symbols, BPE by
 *    merge rank, the post-processor), gives vt_tokenize's ids on llama.cpp's
 *    test vectors and on generated text (the regex runs in PCRE2 here, less
 *    its Unicode 16 guard, which PCRE2 before 10.45 cannot read and which
 *    removes nothing at PCRE2's Unicode 14.0 to 15.1);
 *  - the output is the same bytes every time, and is fast on 150k tokens;
 *  - vocabularies the files cannot express are refused, one line each.
 * The `tokenizers` library itself is not needed here. */
#include <criterion/criterion.h>

#include "tests/support/vt_test.h"

#include "common/vt_json.h"
#include "common/vt_rng.h"
#include "engine/gguf_file.h"
#include "engine/tokenizer.h"
#include "oracle/hf_tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define VOCAB(name) VT_VOCAB_DIR "/ggml-vocab-" name ".gguf"
#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* ---- the regexes expected in tokenizer.json ----
 * engine/tokenizer.c's (whitespace spelled out, Unicode 15.1 additions to
 * 14.0's L / N / M), each L/N/M class less the code points Unicode 16.0
 * added to L, N or M. */
#define WS "\\t\\n\\x0B\\f\\r\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}" \
           "\\x{205F}\\x{3000}"
#define LX "\\x{1123F}-\\x{11240}\\x{11F02}\\x{11F04}-\\x{11F10}\\x{11F12}-\\x{11F33}\\x{1342F}"            \
           "\\x{13441}-\\x{13446}\\x{1B132}\\x{1B155}\\x{1DF25}-\\x{1DF2A}\\x{1E030}-\\x{1E06D}"           \
           "\\x{1E4D0}-\\x{1E4EB}\\x{2B739}\\x{2EBF0}-\\x{2EE5D}\\x{31350}-\\x{323AF}"
#define NX "\\x{11F50}-\\x{11F59}\\x{1D2C0}-\\x{1D2D3}\\x{1E4F0}-\\x{1E4F9}"
#define MX "\\x{0CF3}\\x{0ECE}\\x{10EFD}-\\x{10EFF}\\x{11241}\\x{11F00}-\\x{11F01}\\x{11F03}"              \
           "\\x{11F34}-\\x{11F3A}\\x{11F3E}-\\x{11F42}\\x{13440}\\x{13447}-\\x{13455}\\x{1E08F}"           \
           "\\x{1E4EC}-\\x{1E4EF}"
#define GUARD "&&[^\\x{0897}\\x{1C89}-\\x{1C8A}\\x{A7CB}-\\x{A7CD}\\x{A7DA}-\\x{A7DC}\\x{105C0}-\\x{105F3}" \
              "\\x{10D40}-\\x{10D65}\\x{10D69}-\\x{10D6D}\\x{10D6F}-\\x{10D85}\\x{10EC2}-\\x{10EC4}"      \
              "\\x{10EFC}\\x{11380}-\\x{11389}\\x{1138B}\\x{1138E}\\x{11390}-\\x{113B5}"                   \
              "\\x{113B7}-\\x{113C0}\\x{113C2}\\x{113C5}\\x{113C7}-\\x{113CA}\\x{113CC}-\\x{113D3}"        \
              "\\x{113E1}-\\x{113E2}\\x{116D0}-\\x{116E3}\\x{11BC0}-\\x{11BE0}\\x{11BF0}-\\x{11BF9}"      \
              "\\x{11F5A}\\x{13460}-\\x{143FA}\\x{16100}-\\x{16139}\\x{16D40}-\\x{16D6C}"                  \
              "\\x{16D70}-\\x{16D79}\\x{18CFF}\\x{1CCF0}-\\x{1CCF9}\\x{1E5D0}-\\x{1E5FA}]"
#define HEAD "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}" LX "\\p{N}" NX GUARD "]?["
#define TAIL "|[" WS "]*[\\r\\n]+|[" WS "]+(?![^" WS "])|[" WS "]+"
static const char want_qwen2[] = HEAD "\\p{L}" LX GUARD "]+|[\\p{N}" NX GUARD "]| ?[^" WS "\\p{L}" LX "\\p{N}" NX
    GUARD "]+[\\r\\n]*" TAIL;
static const char want_qwen35[] = HEAD "\\p{L}" LX "\\p{M}" MX GUARD "]+|[\\p{N}" NX GUARD "]| ?[^" WS "\\p{L}" LX
    "\\p{M}" MX "\\p{N}" NX GUARD "]+[\\r\\n]*" TAIL;

/* ---- helpers ---- */

static vt_gguf *open_gguf(const char *path)
{
    vt_error err;
    vt_error_clear(&err);
    vt_gguf *g = vt_gguf_open(path, &err);
    cr_assert_not_null(g, "%s", err.msg);
    return g;
}

static vt_tokenizer *open_tok(const vt_gguf *g)
{
    vt_error err;
    vt_error_clear(&err);
    vt_tokenizer *t = vt_tokenizer_open(g, &err);
    cr_assert_not_null(t, "%s", err.msg);
    return t;
}

static void make_files(const vt_gguf *g, char **tj, char **tc)
{
    vt_error err;
    vt_error_clear(&err);
    int rc = vt_hf_tokenizer_files(g, tj, tc, &err);
    cr_assert_eq(rc, VT_OK, "%s", err.msg);
    cr_assert_not_null(*tj);
    cr_assert_not_null(*tc);
}

/* Parsed by vt's strict reader: valid UTF-8, no NUL, unique member names. */
static cJSON *parse(const char *text, const char *what)
{
    vt_error err;
    vt_error_clear(&err);
    cJSON *j = vt_json_parse(text, strlen(text), what, &err);
    cr_assert_not_null(j, "%s", err.msg);
    return j;
}

static const vt_gguf_value *array_of(const vt_gguf *g, const char *key, vt_gguf_vtype elem)
{
    int64_t i = vt_gguf_find_key(g, key);
    cr_assert_geq(i, 0, "%s missing", key);
    const vt_gguf_value *v = vt_gguf_kv_value(g, (uint64_t)i);
    cr_assert(v->type == VT_GGUF_ARRAY && v->elem_type == elem, "%s: unexpected type", key);
    return v;
}

static vt_gguf_str str_at(const vt_gguf *g, const vt_gguf_value *arr, uint64_t i)
{
    vt_gguf_value e;
    cr_assert(vt_gguf_array_get(g, arr, i, &e), "element %llu", (unsigned long long)i);
    return e.v.str;
}

static int str_eq(const cJSON *j, const char *s, size_t n)
{
    return cJSON_IsString(j) && strlen(j->valuestring) == n && memcmp(j->valuestring, s, n) == 0;
}

static void want_null(const cJSON *o, const char *key)
{
    cr_assert(cJSON_IsNull(vt_test_get(o, key)), "%s: expected null", key);
}

static void want_bool(const cJSON *o, const char *key, int v)
{
    const cJSON *j = vt_test_get(o, key);
    cr_assert(v ? cJSON_IsTrue(j) : cJSON_IsFalse(j), "%s: expected %s", key, v ? "true" : "false");
}

static void want_str(const cJSON *o, const char *key, const char *v)
{
    const cJSON *j = vt_test_get(o, key);
    cr_assert(cJSON_IsString(j) && strcmp(j->valuestring, v) == 0, "%s: '%s', expected '%s'", key,
              cJSON_IsString(j) ? j->valuestring : "(not a string)", v);
}

static int32_t ival(const cJSON *j)
{
    cr_assert(cJSON_IsNumber(j) && j->valuedouble == (double)(int32_t)j->valuedouble, "expected an integer");
    return (int32_t)j->valuedouble;
}

static double seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The role token's text in tokenizer_config.json, or null where it is not an
 * added token. */
static void want_role(const cJSON *cfg, const char *key, const vt_tokenizer *t, int32_t id)
{
    const cJSON *j = vt_test_get(cfg, key);
    int added = id >= 0 && (vt_tokenizer_token_attr(t, id) &
                            (VT_TOKEN_ATTR_CONTROL | VT_TOKEN_ATTR_USER_DEFINED | VT_TOKEN_ATTR_UNKNOWN));
    if (!added) {
        cr_assert(cJSON_IsNull(j), "%s: expected null", key);
        return;
    }
    size_t len;
    const char *s = vt_tokenizer_token_text(t, id, &len);
    cr_assert(str_eq(j, s, len), "%s: expected token %d's text", key, id);
}

/* ---- what the files must hold ---- */

/* tokenizer.json and tokenizer_config.json of g, checked against the GGUF
 * and vt's tokenizer of it. Returns the number of merges written. */
static size_t check_files(const vt_gguf *g, const char *tj, const char *tc, const char *want_re)
{
    vt_tokenizer *t = open_tok(g);
    const int32_t nv = vt_tokenizer_n_vocab(t);
    cJSON *doc = parse(tj, "tokenizer.json");

    /* top level, in tokenizers' order */
    static const char *const keys[] = { "version", "truncation", "padding", "added_tokens", "normalizer",
                                        "pre_tokenizer", "post_processor", "decoder", "model" };
    size_t k = 0;
    for (const cJSON *c = doc->child; c; c = c->next, k++) {
        cr_assert_lt(k, ARRAY_LEN(keys), "more top-level members than expected");
        cr_assert_str_eq(c->string, keys[k]);
    }
    cr_assert_eq(k, ARRAY_LEN(keys));
    want_str(doc, "version", "1.0");
    want_null(doc, "truncation");
    want_null(doc, "padding");
    want_null(doc, "normalizer");

    /* added tokens: exactly vt's control, unknown and user-defined tokens, by id */
    const cJSON *added = vt_test_get(doc, "added_tokens");
    cr_assert(cJSON_IsArray(added));
    const cJSON *a = added->child;
    for (int32_t id = 0; id < nv; id++) {
        int attr = vt_tokenizer_token_attr(t, id);
        if (!(attr & (VT_TOKEN_ATTR_CONTROL | VT_TOKEN_ATTR_USER_DEFINED | VT_TOKEN_ATTR_UNKNOWN)))
            continue;
        cr_assert_not_null(a, "token %d: missing from added_tokens", id);
        cr_assert_eq(ival(vt_test_get(a, "id")), id);
        size_t len;
        const char *s = vt_tokenizer_token_text(t, id, &len);
        cr_assert(str_eq(vt_test_get(a, "content"), s, len), "added token %d: content", id);
        want_bool(a, "special", (attr & (VT_TOKEN_ATTR_CONTROL | VT_TOKEN_ATTR_UNKNOWN)) != 0);
        want_bool(a, "normalized", 0);
        want_bool(a, "single_word", 0);
        want_bool(a, "lstrip", 0);
        want_bool(a, "rstrip", 0);
        a = a->next;
    }
    cr_assert_null(a, "added_tokens: more than vt's special tokens");

    /* pre-tokenizer */
    const cJSON *pre = vt_test_get(doc, "pre_tokenizer");
    want_str(pre, "type", "Sequence");
    const cJSON *seq = vt_test_get(pre, "pretokenizers");
    cr_assert_eq(cJSON_GetArraySize(seq), 2);
    const cJSON *split = cJSON_GetArrayItem(seq, 0), *bl = cJSON_GetArrayItem(seq, 1);
    want_str(split, "type", "Split");
    want_str(vt_test_get(split, "pattern"), "Regex", want_re);
    want_str(split, "behavior", "Isolated");
    want_bool(split, "invert", 0);
    want_str(bl, "type", "ByteLevel");
    want_bool(bl, "add_prefix_space", 0);
    want_bool(bl, "trim_offsets", 0);
    want_bool(bl, "use_regex", 0);
    if (!vt_tokenizer_add_bos(t) && !vt_tokenizer_add_eos(t))
        want_null(doc, "post_processor");
    want_str(vt_test_get(doc, "decoder"), "type", "ByteLevel");

    /* model */
    const cJSON *model = vt_test_get(doc, "model");
    want_str(model, "type", "BPE");
    want_null(model, "dropout");
    want_null(model, "unk_token");
    want_null(model, "continuing_subword_prefix");
    want_null(model, "end_of_word_suffix");
    want_bool(model, "fuse_unk", 0);
    want_bool(model, "byte_fallback", 0);
    want_bool(model, "ignore_merges", 0);

    /* vocab: every token under its GGUF text and id, each id once */
    const vt_gguf_value *toks = array_of(g, "tokenizer.ggml.tokens", VT_GGUF_STRING);
    cr_assert_eq(toks->count, (uint64_t)nv);
    const cJSON *vocab = vt_test_get(model, "vocab");
    cr_assert(cJSON_IsObject(vocab));
    char *seen = calloc((size_t)nv, 1);
    int32_t n_entries = 0;
    for (const cJSON *c = vocab->child; c; c = c->next, n_entries++) {
        int32_t id = ival(c);
        cr_assert(id >= 0 && id < nv, "vocab '%s': id %d out of range", c->string, id);
        cr_assert(!seen[id], "vocab: id %d twice", id);
        seen[id] = 1;
        vt_gguf_str s = str_at(g, toks, (uint64_t)id);
        cr_assert(strlen(c->string) == s.len && memcmp(c->string, s.ptr, s.len) == 0,
                  "vocab: id %d under '%s', its GGUF text is '%.*s'", id, c->string, (int)s.len, s.ptr);
    }
    cr_assert_eq(n_entries, nv);
    free(seen);

    /* merges: the GGUF's, in order, as [left, right] split as vt splits them */
    const vt_gguf_value *merges = array_of(g, "tokenizer.ggml.merges", VT_GGUF_STRING);
    const cJSON *jm = vt_test_get(model, "merges");
    cr_assert(cJSON_IsArray(jm));
    const cJSON *m = jm->child;
    size_t n_merges = 0;
    for (uint64_t r = 0; r < merges->count; r++) {
        vt_gguf_str s = str_at(g, merges, r);
        const char *sp = s.len > 1 ? memchr(s.ptr + 1, ' ', s.len - 1) : NULL;
        cr_assert(sp && sp < s.ptr + s.len - 1, "merge %llu: GGUF's has no two sides", (unsigned long long)r);
        size_t ll = (size_t)(sp - s.ptr);
        cr_assert_not_null(m, "merge %llu: missing", (unsigned long long)r);
        cr_assert(cJSON_IsArray(m) && cJSON_GetArraySize(m) == 2, "merge %llu: expected a pair",
                  (unsigned long long)r);
        cr_assert(str_eq(m->child, s.ptr, ll) && str_eq(m->child->next, sp + 1, s.len - ll - 1),
                  "merge %llu: ['%s', '%s'], GGUF's is '%.*s'", (unsigned long long)r, m->child->valuestring,
                  m->child->next->valuestring, (int)s.len, s.ptr);
        m = m->next;
        n_merges++;
    }
    cr_assert_null(m, "merges: more than the GGUF's");
    cJSON_Delete(doc);

    /* tokenizer_config.json */
    cJSON *cfg = parse(tc, "tokenizer_config.json");
    want_str(cfg, "tokenizer_class", "PreTrainedTokenizerFast");
    want_role(cfg, "bos_token", t, vt_tokenizer_bos(t));
    want_role(cfg, "eos_token", t, vt_tokenizer_eos(t));
    want_role(cfg, "pad_token", t, vt_tokenizer_pad(t));
    want_null(cfg, "unk_token");
    want_bool(cfg, "add_bos_token", vt_tokenizer_add_bos(t));
    want_bool(cfg, "add_eos_token", vt_tokenizer_add_eos(t));
    want_bool(cfg, "clean_up_tokenization_spaces", 0);
    want_bool(cfg, "split_special_tokens", 0);
    vt_gguf_str arch;
    cr_assert(vt_gguf_get_str(g, "general.architecture", &arch));
    char key[128];
    snprintf(key, sizeof key, "%.*s.context_length", (int)arch.len, arch.ptr);
    uint64_t ctx;
    if (vt_gguf_get_u64(g, key, &ctx))
        cr_assert_eq((uint64_t)vt_test_get(cfg, "model_max_length")->valuedouble, ctx);
    vt_gguf_str tmpl;
    if (vt_gguf_get_str(g, "tokenizer.chat_template", &tmpl))
        cr_assert(str_eq(vt_test_get(cfg, "chat_template"), tmpl.ptr, tmpl.len), "chat_template");
    cJSON_Delete(cfg);
    vt_tokenizer_free(t);
    return n_merges;
}

/* ---- a tokenizer driven by tokenizer.json alone ----
 *
 * What tokenizers does with the file (tokenizer/added_vocabulary.rs,
 * pre_tokenizers/split.rs and byte_level.rs, models/bpe/model.rs and
 * word.rs, processors/template.rs), written plainly: added tokens matched
 * leftmost-longest on the raw text; each piece between them split by the
 * regex into matches and the gaps between them; each split's bytes as
 * GPT-2 byte-level characters, one symbol each (a character that is not in
 * the vocabulary dropped: no unk token); the pair of lowest merge rank
 * merged, the leftmost on ties, until none is left; the single template
 * around it. */

typedef struct ref {
    int32_t n;
    char **text; /* by id, NUL-terminated */
    uint32_t *slot;
    size_t mask;
    struct mslot { uint64_t key; int32_t rank, id; } *mslot;
    size_t mmask;
    int32_t *added;
    size_t *added_len, n_added;
    pcre2_code *re;
    pcre2_match_data *md;
    pcre2_match_context *mctx;
    int32_t pre_ids[4], post_ids[4];
    int n_pre, n_post;
    char benc[256][3];
} ref;

static uint64_t hash_str(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

static int32_t ref_find(const ref *r, const char *s, size_t n)
{
    for (size_t i = (size_t)hash_str(s, n) & r->mask;; i = (i + 1) & r->mask) {
        uint32_t v = r->slot[i];
        if (!v)
            return -1;
        const char *t = r->text[v - 1];
        if (strlen(t) == n && memcmp(t, s, n) == 0)
            return (int32_t)v - 1;
    }
}

static struct mslot *ref_merge(const ref *r, int32_t a, int32_t b)
{
    uint64_t key = ((uint64_t)(uint32_t)a << 32 | (uint32_t)b) + 1;
    for (size_t i = (size_t)(key * 0x9e3779b97f4a7c15ull >> 20) & r->mmask;; i = (i + 1) & r->mmask) {
        if (r->mslot[i].key == key || !r->mslot[i].key)
            return &r->mslot[i];
    }
}

/* The regex less every "&&[^...]" (the Unicode 16 guard). */
static char *strip_guard(const char *re)
{
    char *out = malloc(strlen(re) + 1);
    size_t k = 0;
    for (const char *p = re; *p;) {
        if (strncmp(p, "&&[^", 4) == 0) {
            const char *e = strchr(p, ']');
            cr_assert_not_null(e);
            p = e + 1;
            continue;
        }
        out[k++] = *p++;
    }
    out[k] = '\0';
    return out;
}

static void template_ids(const cJSON *pp, ref *r)
{
    r->n_pre = r->n_post = 0;
    if (cJSON_IsNull(pp))
        return;
    want_str(pp, "type", "TemplateProcessing");
    const cJSON *sp = vt_test_get(pp, "special_tokens");
    int after = 0;
    for (const cJSON *c = vt_test_get(pp, "single")->child; c; c = c->next) {
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(c, "SpecialToken");
        if (!st) {
            cr_assert_not_null(cJSON_GetObjectItemCaseSensitive(c, "Sequence"));
            after = 1;
            continue;
        }
        const cJSON *entry = vt_test_get(sp, vt_test_get(st, "id")->valuestring);
        for (const cJSON *id = vt_test_get(entry, "ids")->child; id; id = id->next) {
            if (after)
                r->post_ids[r->n_post++] = ival(id);
            else
                r->pre_ids[r->n_pre++] = ival(id);
        }
    }
}

static void ref_open(ref *r, const char *tj)
{
    memset(r, 0, sizeof *r);
    cJSON *doc = parse(tj, "tokenizer.json");
    const cJSON *model = vt_test_get(doc, "model");
    const cJSON *vocab = vt_test_get(model, "vocab");
    r->n = cJSON_GetArraySize(vocab);
    r->text = calloc((size_t)r->n, sizeof *r->text);
    r->mask = 15;
    while (r->mask + 1 < 2 * (size_t)r->n)
        r->mask = 2 * r->mask + 1;
    r->slot = calloc(r->mask + 1, sizeof *r->slot);
    for (const cJSON *c = vocab->child; c; c = c->next) {
        int32_t id = ival(c);
        cr_assert(id >= 0 && id < r->n && !r->text[id]);
        r->text[id] = strdup(c->string);
        size_t i = (size_t)hash_str(c->string, strlen(c->string)) & r->mask;
        while (r->slot[i])
            i = (i + 1) & r->mask;
        r->slot[i] = (uint32_t)id + 1;
    }
    const cJSON *merges = vt_test_get(model, "merges");
    size_t nm = (size_t)cJSON_GetArraySize(merges);
    r->mmask = 15;
    while (r->mmask + 1 < 2 * nm)
        r->mmask = 2 * r->mmask + 1;
    r->mslot = calloc(r->mmask + 1, sizeof *r->mslot);
    int32_t rank = 0;
    char cat[1024];
    for (const cJSON *c = merges->child; c; c = c->next, rank++) {
        const char *ls = c->child->valuestring, *rs = c->child->next->valuestring;
        int32_t a = ref_find(r, ls, strlen(ls)), b = ref_find(r, rs, strlen(rs));
        cr_assert(a >= 0 && b >= 0, "merge %d: a side is not in the vocabulary", rank);
        snprintf(cat, sizeof cat, "%s%s", ls, rs);
        int32_t res = ref_find(r, cat, strlen(cat));
        cr_assert_geq(res, 0, "merge %d: the result is not in the vocabulary", rank);
        struct mslot *s = ref_merge(r, a, b);
        cr_assert_eq(s->key, 0, "merge %d: the pair again (tokenizers would rank it last)", rank);
        *s = (struct mslot){ ((uint64_t)(uint32_t)a << 32 | (uint32_t)b) + 1, rank, res };
    }
    const cJSON *added = vt_test_get(doc, "added_tokens");
    r->added = malloc(((size_t)cJSON_GetArraySize(added) + 1) * sizeof *r->added);
    r->added_len = malloc(((size_t)cJSON_GetArraySize(added) + 1) * sizeof *r->added_len);
    for (const cJSON *c = added->child; c; c = c->next) {
        int32_t id = ival(vt_test_get(c, "id"));
        /* tokenizers keeps the model's id for a content in the vocabulary */
        cr_assert_str_eq(r->text[id], vt_test_get(c, "content")->valuestring);
        r->added_len[r->n_added] = strlen(r->text[id]);
        r->added[r->n_added++] = id;
    }
    template_ids(vt_test_get(doc, "post_processor"), r);

    const cJSON *split = cJSON_GetArrayItem(vt_test_get(vt_test_get(doc, "pre_tokenizer"), "pretokenizers"), 0);
    char *re = strip_guard(vt_test_get(vt_test_get(split, "pattern"), "Regex")->valuestring);
    int code;
    PCRE2_SIZE at;
    r->re = pcre2_compile((PCRE2_SPTR)re, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP, &code, &at, NULL);
    cr_assert_not_null(r->re, "regex: error %d at %zu", code, (size_t)at);
    free(re);
    r->md = pcre2_match_data_create_from_pattern(r->re, NULL);
    r->mctx = pcre2_match_context_create(NULL);
    pcre2_set_match_limit(r->mctx, UINT32_MAX);

    /* GPT-2 byte-to-unicode: printable Latin-1 stands for itself, the rest
     * takes U+0100 on in byte order */
    int next = 0;
    for (int b = 0; b < 256; b++) {
        int self = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
        unsigned cp = self ? (unsigned)b : 256u + (unsigned)next++;
        if (cp < 0x80) {
            r->benc[b][0] = (char)cp;
            r->benc[b][1] = 0;
        } else {
            r->benc[b][0] = (char)(0xC0 | (cp >> 6));
            r->benc[b][1] = (char)(0x80 | (cp & 0x3F));
            r->benc[b][2] = 0;
        }
    }
    cJSON_Delete(doc);
}

static void ref_close(ref *r)
{
    for (int32_t i = 0; i < r->n; i++)
        free(r->text[i]);
    free(r->text);
    free(r->slot);
    free(r->mslot);
    free(r->added);
    free(r->added_len);
    pcre2_match_data_free(r->md);
    pcre2_match_context_free(r->mctx);
    pcre2_code_free(r->re);
}

typedef struct ids { int32_t *v; size_t n, cap; } ids;

static void ids_put(ids *o, int32_t id)
{
    if (o->n == o->cap) {
        o->cap = o->cap ? 2 * o->cap : 256;
        o->v = realloc(o->v, o->cap * sizeof *o->v);
    }
    o->v[o->n++] = id;
}

static void ref_word(const ref *r, const char *w, size_t n, ids *out)
{
    int32_t *sym = malloc((n + 1) * sizeof *sym);
    size_t ns = 0;
    for (size_t i = 0; i < n; i++) {
        const char *c = r->benc[(unsigned char)w[i]];
        int32_t id = ref_find(r, c, strlen(c));
        if (id >= 0)
            sym[ns++] = id;
    }
    for (;;) {
        size_t best = SIZE_MAX;
        int32_t best_rank = INT32_MAX, best_id = -1;
        for (size_t i = 0; i + 1 < ns; i++) {
            const struct mslot *m = ref_merge(r, sym[i], sym[i + 1]);
            if (m->key && m->rank < best_rank) {
                best_rank = m->rank;
                best_id = m->id;
                best = i;
            }
        }
        if (best == SIZE_MAX)
            break;
        sym[best] = best_id;
        memmove(sym + best + 1, sym + best + 2, (ns - best - 2) * sizeof *sym);
        ns--;
    }
    for (size_t i = 0; i < ns; i++)
        ids_put(out, sym[i]);
    free(sym);
}

static void ref_text(const ref *r, const char *s, size_t n, ids *out)
{
    size_t pos = 0;
    while (pos < n) {
        PCRE2_SIZE *ov;
        int rc = pcre2_match(r->re, (PCRE2_SPTR)s, n, pos, 0, r->md, r->mctx);
        cr_assert(rc > 0 || rc == PCRE2_ERROR_NOMATCH, "regex: error %d", rc);
        ov = pcre2_get_ovector_pointer(r->md);
        size_t ms = rc > 0 ? ov[0] : n, me = rc > 0 ? ov[1] : n;
        cr_assert(rc < 0 || me > ms, "regex: an empty match");
        if (ms > pos)
            ref_word(r, s + pos, ms - pos, out);
        if (me > ms)
            ref_word(r, s + ms, me - ms, out);
        pos = me;
    }
}

static void ref_encode(const ref *r, const char *s, size_t n, ids *out)
{
    out->n = 0;
    for (int k = 0; k < r->n_pre; k++)
        ids_put(out, r->pre_ids[k]);
    size_t raw = 0;
    for (size_t i = 0; i < n;) {
        int32_t best = -1;
        size_t best_len = 0;
        for (size_t k = 0; k < r->n_added; k++) {
            const char *t = r->text[r->added[k]];
            size_t tl = r->added_len[k];
            if (t[0] == s[i] && tl > best_len && tl <= n - i && memcmp(s + i, t, tl) == 0) {
                best = r->added[k];
                best_len = tl;
            }
        }
        if (best < 0) {
            i++;
            continue;
        }
        ref_text(r, s + raw, i - raw, out);
        ids_put(out, best);
        i += best_len;
        raw = i;
    }
    ref_text(r, s + raw, n - raw, out);
    for (int k = 0; k < r->n_post; k++)
        ids_put(out, r->post_ids[k]);
}

/* ---- texts ---- */

static const char *const pieces[] = {
    "Hello", " world", "The", "café", "e\xcc\x81", "naïve", "straße", "İstanbul", "ﬁne", "привет", "Ελληνικά",
    "你好世界", "日本語", "한국어", "カタカナ", "𠀀", "مرحبا", "שלום", "हिन्दी", "ภาษาไทย", "🙂", "👩‍👩‍👧",
    "123", "3.14", "1,000", "٣", "Ⅻ", "'s", "'S", "'t", "'re", "'VE", "'m", "'ll", "'D", "'ſ", "'K", "don't",
    "I'M", " ", "  ", "\t", "\n", "\r\n", "\n\n", " \n ", "\xc2\x85", "\xc2\xa0", "\xe1\x9a\x80", "\xe2\x80\x8a",
    "\xe2\x80\xa8", "\xe3\x80\x80", "\xe1\xa0\x8e", "\xe2\x80\x8b", "\xef\xbb\xbf", "!", "?!", "...", "<", ">",
    "|", "<|", "|>", "<|im_start|>", "<|im_end|>", "<|endoftext|>", "</s>", "<|im_", "[PAD151650]", "[PAD",
    "<s>", "\xef\xbf\xbd", "{\"a\": [1, 2]}", "    return x;", "#include <x.h>", "ab\xcc\x88\xcc\x81",
    /* letters of Unicode 15.1 that 14.0 lacks; of 16.0 that 15.1 lacks */
    "\xf0\x91\xbc\x84\xf0\x91\xbc\x85", "\xf0\x9e\x93\x90\xf0\x9e\x93\x91", "\xe0\xb3\xb3",
    "\xf0\x96\x84\x80\xf0\x96\x84\x81", "\xea\x9f\x8b", "\xf0\x91\x8e\x80\xf0\x91\x8e\x81", "\xf0\x9e\x97\xb1",
};

static void put_cp(char *buf, size_t *n, uint32_t c)
{
    if (c < 0x80) {
        buf[(*n)++] = (char)c;
    } else if (c < 0x800) {
        buf[(*n)++] = (char)(0xC0 | (c >> 6));
        buf[(*n)++] = (char)(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
        buf[(*n)++] = (char)(0xE0 | (c >> 12));
        buf[(*n)++] = (char)(0x80 | ((c >> 6) & 0x3F));
        buf[(*n)++] = (char)(0x80 | (c & 0x3F));
    } else {
        buf[(*n)++] = (char)(0xF0 | (c >> 18));
        buf[(*n)++] = (char)(0x80 | ((c >> 12) & 0x3F));
        buf[(*n)++] = (char)(0x80 | ((c >> 6) & 0x3F));
        buf[(*n)++] = (char)(0x80 | (c & 0x3F));
    }
}

/* Text from pieces and random code points (no surrogates, no NUL). */
static size_t gen_text(vt_rng *rng, char *buf, size_t cap)
{
    static const uint32_t planes[][2] = {
        { 0x20, 0x7E }, { 0xA0, 0x24F }, { 0x300, 0x36F }, { 0x370, 0x52F }, { 0x590, 0x8FF }, { 0x900, 0xDFF },
        { 0xE00, 0xFFF }, { 0x1C80, 0x1C8F }, { 0x2000, 0x206F }, { 0x3000, 0x30FF }, { 0x4E00, 0x4FFF },
        { 0xA7C0, 0xA7DF }, { 0xAC00, 0xACFF }, { 0xFF00, 0xFFEF }, { 0x10D40, 0x10D8F }, { 0x11380, 0x113FF },
        { 0x11F00, 0x11F5F }, { 0x13430, 0x1347F }, { 0x16100, 0x1613F }, { 0x1E030, 0x1E08F },
        { 0x1E4D0, 0x1E5FF }, { 0x1F300, 0x1F64F }, { 0x20000, 0x200FF }, { 0x31350, 0x3135F }, { 0xE0000, 0xE007F },
    };
    size_t n = 0, len = 1 + (size_t)(vt_rng_next(rng) % 40);
    for (size_t k = 0; k < len && n + 64 < cap; k++) {
        if (vt_rng_next(rng) % 2) {
            const char *p = pieces[vt_rng_next(rng) % ARRAY_LEN(pieces)];
            memcpy(buf + n, p, strlen(p));
            n += strlen(p);
        } else {
            const uint32_t *pl = planes[vt_rng_next(rng) % ARRAY_LEN(planes)];
            put_cp(buf, &n, pl[0] + (uint32_t)(vt_rng_next(rng) % (pl[1] - pl[0] + 1)));
        }
    }
    return n;
}

/* vt_tokenize(add_special, parse_special) and the file-driven tokenizer
 * agree on text[0..len). */
static void agree_on(vt_tokenizer *t, const ref *r, const char *text, size_t len, const char *what)
{
    static int32_t want[1 << 16];
    size_t n;
    vt_error err;
    vt_error_clear(&err);
    int rc = vt_tokenize(t, text, len, 1, 1, want, ARRAY_LEN(want), &n, &err);
    cr_assert_eq(rc, VT_OK, "%s: %s", what, err.msg);
    ids got = { 0 };
    ref_encode(r, text, len, &got);
    size_t i = 0;
    while (i < n && i < got.n && want[i] == got.v[i])
        i++;
    cr_assert(i == n && i == got.n, "%s '%.*s': token %zu: vt %d, tokenizer.json %d (%zu and %zu tokens)", what,
              (int)len, text, i, i < n ? want[i] : -1, i < got.n ? got.v[i] : -1, n, got.n);
    free(got.v);
}

/* llama.cpp's vectors for a vocabulary (ggml-vocab-NAME.gguf.inp), then
 * n_gen generated texts. */
static size_t agree_all(const vt_gguf *g, const char *tj, const char *vectors, int n_gen, uint64_t seed)
{
    vt_tokenizer *t = open_tok(g);
    ref r;
    ref_open(&r, tj);
    size_t count = 0;
    if (vectors) {
        size_t len;
        char *inp = vt_test_slurp(vectors, &len);
        cr_assert_not_null(inp, "%s", vectors);
        static const char sep[] = "\n__ggml_vocab_test__\n";
        for (size_t pos = 0; pos < len; count++) {
            const char *next = memmem(inp + pos, len - pos, sep, sizeof sep - 1);
            size_t n = next ? (size_t)(next - (inp + pos)) : len - pos;
            agree_on(t, &r, inp + pos, n, "vector");
            pos += n + (next ? sizeof sep - 1 : 0);
        }
        free(inp);
    }
    vt_rng rng;
    vt_rng_seed(&rng, seed);
    char buf[4096];
    for (int i = 0; i < n_gen; i++, count++)
        agree_on(t, &r, buf, gen_text(&rng, buf, sizeof buf), "generated");
    ref_close(&r);
    vt_tokenizer_free(t);
    return count;
}

/* ---- GGUF variants, in memory ---- */

typedef struct variant { void *mem; vt_gguf *g; } variant;

static vt_gguf_writer *writer_of(const vt_gguf *g)
{
    vt_error err;
    vt_error_clear(&err);
    vt_gguf_writer *w = vt_gguf_writer_from(g, &err);
    cr_assert_not_null(w, "%s", err.msg);
    return w;
}

static variant finish(vt_gguf_writer *w)
{
    vt_error err;
    vt_error_clear(&err);
    cr_assert_eq(vt_gguf_writer_error(w)->code, VT_OK, "%s", vt_gguf_writer_error(w)->msg);
    variant v = { 0 };
    size_t size;
    cr_assert_eq(vt_gguf_writer_to_memory(w, &v.mem, &size, &err), VT_OK, "%s", err.msg);
    vt_gguf_writer_free(w);
    v.g = vt_gguf_open_memory(v.mem, size, "variant.gguf", &err);
    cr_assert_not_null(v.g, "%s", err.msg);
    return v;
}

static void variant_free(variant *v)
{
    vt_gguf_free(v->g);
    free(v->mem);
}

/* The GGUF's string array key as NUL-terminated copies, one replaced. */
static char **strings_of(const vt_gguf *g, const char *key, uint64_t *count)
{
    const vt_gguf_value *a = array_of(g, key, VT_GGUF_STRING);
    char **s = calloc((size_t)a->count + 8, sizeof *s);
    for (uint64_t i = 0; i < a->count; i++) {
        vt_gguf_str e = str_at(g, a, i);
        s[i] = strndup(e.ptr, (size_t)e.len);
    }
    *count = a->count;
    return s;
}

static void strings_free(char **s, uint64_t n)
{
    for (uint64_t i = 0; i < n + 8; i++)
        free(s[i]);
    free(s);
}

/* vt_hf_tokenizer_files refuses g with VT_EINPUT, both outputs NULL, and a
 * message that holds each of the given parts. */
static void refused(const vt_gguf *g, const char *part1, const char *part2)
{
    vt_error err;
    vt_error_clear(&err);
    char *tj = (char *)1, *tc = (char *)1;
    int rc = vt_hf_tokenizer_files(g, &tj, &tc, &err);
    cr_assert_eq(rc, VT_EINPUT, "expected a refusal (%s)", part1);
    cr_assert(tj == NULL && tc == NULL);
    cr_assert_not_null(strstr(err.msg, "variant.gguf: "), "%s", err.msg);
    cr_assert_not_null(strstr(err.msg, part1), "'%s' lacks '%s'", err.msg, part1);
    if (part2)
        cr_assert_not_null(strstr(err.msg, part2), "'%s' lacks '%s'", err.msg, part2);
    cr_assert_null(strchr(err.msg, '\n'));
}

/* ---- tests ---- */

static void fixture_case(const char *arch, const char *want_re, const char *vectors)
{
    vt_test_model f = vt_test_model_make(arch, "Q8_0");
    vt_gguf *g = open_gguf(f.path);
    char *tj, *tc, *tj2, *tc2;
    make_files(g, &tj, &tc);
    size_t n_merges = check_files(g, tj, tc, want_re);
    cr_assert_gt(n_merges, 0);

    /* the fixture's special tokens by the GGUF's own types: control (3) and
     * user-defined (4) are the added tokens */
    const vt_gguf_value *types = array_of(g, "tokenizer.ggml.token_type", VT_GGUF_I32);
    cJSON *doc = parse(tj, "tokenizer.json");
    const cJSON *a = vt_test_get(doc, "added_tokens")->child;
    int n_special = 0;
    for (uint64_t id = 0; id < types->count; id++) {
        vt_gguf_value tv;
        cr_assert(vt_gguf_array_get(g, types, id, &tv));
        if (tv.v.i64 != 3 && tv.v.i64 != 4)
            continue;
        cr_assert_not_null(a);
        cr_assert_eq(ival(vt_test_get(a, "id")), (int32_t)id);
        want_bool(a, "special", tv.v.i64 == 3);
        a = a->next;
        n_special++;
    }
    cr_assert_null(a);
    cr_assert_gt(n_special, 0);
    cJSON_Delete(doc);

    /* deterministic: the same bytes again, also from the file opened anew */
    make_files(g, &tj2, &tc2);
    cr_assert(strcmp(tj, tj2) == 0 && strcmp(tc, tc2) == 0);
    free(tj2);
    free(tc2);
    vt_gguf *g2 = open_gguf(f.path);
    make_files(g2, &tj2, &tc2);
    cr_assert(strcmp(tj, tj2) == 0 && strcmp(tc, tc2) == 0);
    free(tj2);
    free(tc2);
    vt_gguf_free(g2);

    size_t n = agree_all(g, tj, vectors, 1500, 7);
    fprintf(stderr, "hf_tokenizer %s fixture: %zu merges, %d added tokens, %zu texts tokenized as vt does\n",
            arch, n_merges, n_special, n);
    free(tj);
    free(tc);
    vt_gguf_free(g);
    vt_test_model_remove(&f);
}

Test(hf_tokenizer, qwen3_fixture) { fixture_case("qwen3", want_qwen2, VOCAB("qwen2") ".inp"); }

Test(hf_tokenizer, qwen35_fixture) { fixture_case("qwen35", want_qwen35, VOCAB("qwen35") ".inp"); }

static void full_case(const char *path, const char *want_re)
{
    vt_gguf *g = open_gguf(path);
    char *tj, *tc, *tj2, *tc2;
    double t0 = seconds();
    make_files(g, &tj, &tc);
    double dt = seconds() - t0;
    /* linear work: 150k tokens and merges in well under a second on one
     * core; the bound catches quadratic string building, not speed */
    cr_assert_lt(dt, 30.0, "%s: %.1f s", path, dt);
    size_t n_merges = check_files(g, tj, tc, want_re);
    make_files(g, &tj2, &tc2);
    cr_assert(strcmp(tj, tj2) == 0 && strcmp(tc, tc2) == 0, "%s: output differs between two calls", path);
    free(tj2);
    free(tc2);
    char vectors[512];
    snprintf(vectors, sizeof vectors, "%s.inp", path);
    size_t n = agree_all(g, tj, vectors, 1500, 11);
    fprintf(stderr, "hf_tokenizer %s: %.3f s, %zu bytes, %zu merges, %zu texts tokenized as vt does\n", path, dt,
            strlen(tj), n_merges, n);
    free(tj);
    free(tc);
    vt_gguf_free(g);
}

Test(hf_tokenizer, qwen2_vocabulary) { full_case(VOCAB("qwen2"), want_qwen2); }

Test(hf_tokenizer, qwen35_vocabulary) { full_case(VOCAB("qwen35"), want_qwen35); }

Test(hf_tokenizer, regex_accessor)
{
    cr_assert_str_eq(vt_hf_tokenizer_regex("qwen2"), want_qwen2);
    cr_assert_str_eq(vt_hf_tokenizer_regex("qwen35"), want_qwen35);
    cr_assert_null(vt_hf_tokenizer_regex("llama-bpe"));
    cr_assert_null(vt_hf_tokenizer_regex(NULL));
}

/* BOS / EOS added by the vocabulary: a template around the text, the same
 * ids as vt_tokenize(add_special = 1), the config naming the tokens. */
Test(hf_tokenizer, bos_and_eos_templates)
{
    vt_test_model f = vt_test_model_make("qwen3", "Q8_0");
    vt_gguf *g = open_gguf(f.path);
    vt_tokenizer *t = open_tok(g);
    const int32_t start = vt_tokenizer_find(t, "<|im_start|>", 12), end = vt_tokenizer_find(t, "<|im_end|>", 10);
    cr_assert(start >= 0 && end >= 0);
    vt_tokenizer_free(t);
    static const struct { int bos, eos; int32_t bos_id; } cases[] = { { 1, 0, -1 }, { 0, 1, -1 }, { 1, 1, -1 },
                                                                       { 1, 1, -2 } };
    for (size_t k = 0; k < ARRAY_LEN(cases); k++) {
        vt_gguf_writer *w = writer_of(g);
        vt_gguf_writer_set_bool(w, "tokenizer.ggml.add_bos_token", cases[k].bos);
        vt_gguf_writer_set_bool(w, "tokenizer.ggml.add_eos_token", cases[k].eos);
        /* -1: BOS <|im_start|>; -2: BOS the EOS token itself */
        vt_gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)(cases[k].bos_id == -1 ? start : end));
        variant v = finish(w);
        char *tj, *tc;
        make_files(v.g, &tj, &tc);
        check_files(v.g, tj, tc, want_qwen2);
        cJSON *doc = parse(tj, "tokenizer.json");
        ref r;
        ref_open(&r, tj);
        cr_assert_eq(r.n_pre, cases[k].bos);
        cr_assert_eq(r.n_post, cases[k].eos);
        if (cases[k].bos)
            cr_assert_eq(r.pre_ids[0], cases[k].bos_id == -1 ? start : end);
        if (cases[k].eos)
            cr_assert_eq(r.post_ids[0], end);
        const cJSON *pp = vt_test_get(doc, "post_processor");
        cr_assert_eq(cJSON_GetArraySize(vt_test_get(pp, "special_tokens")), cases[k].bos_id == -2 ? 1 : cases[k].bos + cases[k].eos);
        cr_assert_eq(cJSON_GetArraySize(vt_test_get(pp, "pair")), 2 * (1 + cases[k].bos + cases[k].eos));
        ref_close(&r);
        cJSON_Delete(doc);
        agree_all(v.g, tj, NULL, 200, 3 + k);
        free(tj);
        free(tc);
        variant_free(&v);
    }
    vt_gguf_free(g);
    vt_test_model_remove(&f);
}

/* Merges vt never applies or ranks by an earlier place are left out; the
 * rest keep their order, and tokenization does not change. */
Test(hf_tokenizer, merges_vt_ignores_are_left_out)
{
    vt_test_model f = vt_test_model_make("qwen3", "Q8_0");
    vt_gguf *g = open_gguf(f.path);
    uint64_t n;
    char **m = strings_of(g, "tokenizer.ggml.merges", &n);
    cr_assert_gt(n, 10);
    /* before merge 5: a repeat of merge 0, one without a space, one with an
     * empty right side; at the end a repeat of merge 3 */
    char **edited = calloc((size_t)n + 8, sizeof *edited);
    uint64_t k = 0;
    for (uint64_t i = 0; i < n; i++) {
        if (i == 5) {
            edited[k++] = m[0];
            edited[k++] = "abc";
            edited[k++] = "a ";
        }
        edited[k++] = m[i];
    }
    edited[k++] = m[3];
    vt_gguf_writer *w = writer_of(g);
    vt_gguf_writer_set_str_array(w, "tokenizer.ggml.merges", (const char *const *)edited, k);
    variant v = finish(w);
    char *tj, *tc, *tj0, *tc0;
    make_files(v.g, &tj, &tc);
    make_files(g, &tj0, &tc0);
    cr_assert_str_eq(tj, tj0, "the edited merges should write the original file");
    agree_all(v.g, tj, NULL, 300, 5);
    free(tj);
    free(tc);
    free(tj0);
    free(tc0);
    free(edited);
    strings_free(m, n);
    variant_free(&v);
    vt_gguf_free(g);
    vt_test_model_remove(&f);
}

Test(hf_tokenizer, refusals)
{
    vt_test_model f = vt_test_model_make("qwen3", "Q8_0");
    vt_gguf *g = open_gguf(f.path);
    vt_tokenizer *t = open_tok(g);
    const int32_t nv = vt_tokenizer_n_vocab(t);
    vt_tokenizer_free(t);

    /* a pre-tokenizer vt does not know */
    vt_gguf_writer *w = writer_of(g);
    vt_gguf_writer_set_str(w, "tokenizer.ggml.pre", "llama-bpe");
    variant v = finish(w);
    refused(v.g, "tokenizer.ggml.pre", "llama-bpe");
    variant_free(&v);

    /* another tokenizer model */
    w = writer_of(g);
    vt_gguf_writer_set_str(w, "tokenizer.ggml.model", "llama");
    v = finish(w);
    refused(v.g, "tokenizer.ggml.model", NULL);
    variant_free(&v);

    /* a token text that is not UTF-8 */
    uint64_t n;
    char **toks = strings_of(g, "tokenizer.ggml.tokens", &n);
    free(toks[100]);
    toks[100] = strdup("\xc3\x28x");
    w = writer_of(g);
    vt_gguf_writer_set_str_array(w, "tokenizer.ggml.tokens", (const char *const *)toks, n);
    v = finish(w);
    refused(v.g, "token 100 ", "UTF-8");
    variant_free(&v);
    strings_free(toks, n);

    /* a merge with a side that is no token; one whose result is none */
    uint64_t nm;
    char **m = strings_of(g, "tokenizer.ggml.merges", &nm);
    free(m[nm]);
    m[nm] = strdup("\xc4\xa0 zzqqzzqq");
    w = writer_of(g);
    vt_gguf_writer_set_str_array(w, "tokenizer.ggml.merges", (const char *const *)m, nm + 1);
    v = finish(w);
    char part[64];
    snprintf(part, sizeof part, "merge %llu ", (unsigned long long)nm);
    refused(v.g, part, "right side 'zzqqzzqq' is not a token");
    variant_free(&v);
    free(m[nm]);
    m[nm] = strdup("<|im_start|> <|im_end|>");
    w = writer_of(g);
    vt_gguf_writer_set_str_array(w, "tokenizer.ggml.merges", (const char *const *)m, nm + 1);
    v = finish(w);
    refused(v.g, part, "result '<|im_start|><|im_end|>' is not a token");
    variant_free(&v);
    strings_free(m, nm);

    /* added tokens that overlap: a user-defined "|>q" (appended) begins as
     * "<|endoftext|>" ends */
    toks = strings_of(g, "tokenizer.ggml.tokens", &n);
    const vt_gguf_value *ty = array_of(g, "tokenizer.ggml.token_type", VT_GGUF_I32);
    int32_t *types = malloc(((size_t)nv + 1) * sizeof *types);
    for (int32_t i = 0; i < nv; i++) {
        vt_gguf_value tv;
        cr_assert(vt_gguf_array_get(g, ty, (uint64_t)i, &tv));
        types[i] = (int32_t)tv.v.i64;
    }
    types[nv] = 4;
    toks[nv] = strdup("|>q");
    w = writer_of(g);
    vt_gguf_writer_set_str_array(w, "tokenizer.ggml.tokens", (const char *const *)toks, n + 1);
    vt_gguf_writer_set_array(w, "tokenizer.ggml.token_type", VT_GGUF_I32, types, (uint64_t)nv + 1);
    v = finish(w);
    snprintf(part, sizeof part, "token %d '|>q'", nv);
    refused(v.g, part, "overlap");
    variant_free(&v);
    /* ... while a user-defined token that overlaps nothing is an added one,
     * not special, matched in text */
    free(toks[nv]);
    toks[nv] = strdup("[vt-user]");
    w = writer_of(g);
    vt_gguf_writer_set_str_array(w, "tokenizer.ggml.tokens", (const char *const *)toks, n + 1);
    vt_gguf_writer_set_array(w, "tokenizer.ggml.token_type", VT_GGUF_I32, types, (uint64_t)nv + 1);
    v = finish(w);
    char *tj, *tc;
    make_files(v.g, &tj, &tc);
    check_files(v.g, tj, tc, want_qwen2);
    cr_assert_not_null(strstr(tj, "\"content\": \"[vt-user]\",\n      \"single_word\": false,\n      "
                                  "\"lstrip\": false,\n      \"rstrip\": false,\n      \"normalized\": false,\n"
                                  "      \"special\": false"));
    agree_all(v.g, tj, NULL, 100, 9);
    vt_tokenizer *tv = open_tok(v.g);
    ref r;
    ref_open(&r, tj);
    static const char user_text[] = "a[vt-user]b [vt-user]<|im_end|>";
    agree_on(tv, &r, user_text, sizeof user_text - 1, "user-defined");
    ids got = { 0 };
    ref_encode(&r, user_text, sizeof user_text - 1, &got);
    int found = 0;
    for (size_t i = 0; i < got.n; i++)
        found += got.v[i] == nv;
    cr_assert_eq(found, 2);
    free(got.v);
    ref_close(&r);
    vt_tokenizer_free(tv);
    free(tj);
    free(tc);
    variant_free(&v);
    free(types);
    strings_free(toks, n);

    /* BOS added, but BOS is a normal token: transformers could not name it */
    w = writer_of(g);
    vt_gguf_writer_set_bool(w, "tokenizer.ggml.add_bos_token", 1);
    vt_gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", 5);
    v = finish(w);
    refused(v.g, "tokenizer.ggml.bos_token_id: 5", "add_bos_token");
    variant_free(&v);

    /* a chat template that is not UTF-8 */
    w = writer_of(g);
    vt_gguf_writer_set_str(w, "tokenizer.chat_template", "{{ x }}\xff");
    v = finish(w);
    refused(v.g, "tokenizer.chat_template: byte 7", NULL);
    variant_free(&v);

    /* the API contract */
    vt_error err;
    vt_error_clear(&err);
    char *a = (char *)1;
    cr_assert_eq(vt_hf_tokenizer_files(NULL, &a, &tc, &err), VT_EINPUT);
    cr_assert_null(a);
    cr_assert_eq(vt_hf_tokenizer_files(g, NULL, &tc, &err), VT_EINPUT);

    vt_gguf_free(g);
    vt_test_model_remove(&f);
}
