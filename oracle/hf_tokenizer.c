/* Hugging Face tokenizer files from a GGUF vocabulary (hf_tokenizer.h).
 *
 * Written by hand into one growing buffer (common/vt_sbuf.h): keys in a
 * fixed order, one vocabulary entry and one merge a line, every string
 * escaped here from its exact bytes (a token text is not NUL-terminated).
 * Work is linear in the vocabulary: token lookups are vt's tokenizer's hash,
 * repeated merges are found with a hash set of id pairs. */
#include "hf_tokenizer.h"

#include "../common/vt_sbuf.h"
#include "../common/vt_utf8.h"
#include "../engine/tokenizer.h"
#include "../engine/tokenizer_regex.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the pre-tokenizer regex ----
 *
 * engine/tokenizer.c's patterns, from the one spelling of both
 * (engine/tokenizer_regex.h: llama.cpp's whitespace set, the Unicode 15.1
 * letters / numbers / marks that Unicode 14.0 does not have), each class of
 * letters, numbers or marks intersected with [^U16] (tests/test_hf_tokenizer.c
 * tokenizes with this regex, vocab and merges and compares with
 * vt_tokenize). U16, added here: the code points that are a letter, number or mark
 * in Unicode 16.0 and none of these in 15.1 (from Oniguruma's property
 * tables at Unicode 15.1 and 16.0; none changed between L, N and M, and
 * none left them). "[X&&[^U16]]" is Oniguruma's class intersection, lower
 * in precedence than everything in a class but '^': [^X&&[^U16]] is the
 * complement of X less U16. */
#define U16 "\\x{0897}\\x{1C89}-\\x{1C8A}\\x{A7CB}-\\x{A7CD}\\x{A7DA}-\\x{A7DC}"             \
            "\\x{105C0}-\\x{105F3}\\x{10D40}-\\x{10D65}\\x{10D69}-\\x{10D6D}"              \
            "\\x{10D6F}-\\x{10D85}\\x{10EC2}-\\x{10EC4}\\x{10EFC}\\x{11380}-\\x{11389}"    \
            "\\x{1138B}\\x{1138E}\\x{11390}-\\x{113B5}\\x{113B7}-\\x{113C0}\\x{113C2}"     \
            "\\x{113C5}\\x{113C7}-\\x{113CA}\\x{113CC}-\\x{113D3}\\x{113E1}-\\x{113E2}"    \
            "\\x{116D0}-\\x{116E3}\\x{11BC0}-\\x{11BE0}\\x{11BF0}-\\x{11BF9}\\x{11F5A}"    \
            "\\x{13460}-\\x{143FA}\\x{16100}-\\x{16139}\\x{16D40}-\\x{16D6C}"              \
            "\\x{16D70}-\\x{16D79}\\x{18CFF}\\x{1CCF0}-\\x{1CCF9}\\x{1E5D0}-\\x{1E5FA}"
#define NOT16 "&&[^" U16 "]"

static const char re_qwen2[] = VT_RE_QWEN2(NOT16);
static const char re_qwen35[] = VT_RE_QWEN35(NOT16);

const char *vt_hf_tokenizer_regex(const char *pre)
{
    if (pre && strcmp(pre, "qwen2") == 0)
        return re_qwen2;
    if (pre && strcmp(pre, "qwen35") == 0)
        return re_qwen35;
    return NULL;
}

/* ---- JSON text ---- */

/* s[0..n) as a quoted JSON string: '"', '\\' and control bytes escaped,
 * everything else (well-formed UTF-8, checked by the caller) as is. */
static void json_str(vt_sbuf *b, const char *s, size_t n)
{
    vt_sbuf_add(b, "\"", 1);
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c != '"' && c != '\\' && c >= 0x20)
            continue;
        vt_sbuf_add(b, s + run, i - run);
        run = i + 1;
        char e[8];
        switch (c) {
        case '"': vt_sbuf_add(b, "\\\"", 2); break;
        case '\\': vt_sbuf_add(b, "\\\\", 2); break;
        case '\n': vt_sbuf_add(b, "\\n", 2); break;
        case '\r': vt_sbuf_add(b, "\\r", 2); break;
        case '\t': vt_sbuf_add(b, "\\t", 2); break;
        default:
            snprintf(e, sizeof e, "\\u%04x", c);
            vt_sbuf_add(b, e, 6);
        }
    }
    vt_sbuf_add(b, s + run, n - run);
    vt_sbuf_add(b, "\"", 1);
}

static void json_cstr(vt_sbuf *b, const char *s) { json_str(b, s, strlen(s)); }

/* Text that can be a JSON string vt's own reader takes: well-formed UTF-8,
 * no NUL. The offset of the first byte that is not, or n. */
static size_t text_fault(const char *s, size_t n)
{
    size_t bad = vt_utf8_check(s, n);
    const char *nul = memchr(s, '\0', bad);
    return nul ? (size_t)(nul - s) : bad;
}

/* ---- helpers ---- */

enum { SPECIAL_ATTR = VT_TOKEN_ATTR_CONTROL | VT_TOKEN_ATTR_UNKNOWN,
       ADDED_ATTR = VT_TOKEN_ATTR_CONTROL | VT_TOKEN_ATTR_UNKNOWN | VT_TOKEN_ATTR_USER_DEFINED };

static int is_added(const vt_tokenizer *t, int32_t id)
{
    return id >= 0 && (vt_tokenizer_token_attr(t, id) & ADDED_ATTR);
}

static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static size_t table_size(size_t n)
{
    size_t s = 16;
    while (s < 2 * n)
        s *= 2;
    return s;
}

/* A printable excerpt of token text for messages: at most 48 bytes, cut at
 * a character boundary; bytes that are not UTF-8 or are control bytes as
 * \xHH. */
static void excerpt(const char *s, size_t n, char *out, size_t cap)
{
    size_t k = 0, i = 0;
    while (i < n && k + 5 < cap && i < 48) {
        size_t len = vt_utf8_seq(s + i, n - i);
        if (len && (unsigned char)s[i] >= 0x20 && s[i] != 0x7f && k + len < cap) {
            memcpy(out + k, s + i, len);
            k += len;
            i += len;
        } else {
            k += (size_t)snprintf(out + k, cap - k, "\\x%02x", (unsigned)(unsigned char)s[i]);
            i++;
        }
    }
    if (i < n && k + 4 < cap) {
        memcpy(out + k, "...", 3);
        k += 3;
    }
    out[k < cap ? k : cap - 1] = '\0';
}

/* ---- added tokens that overlap ----
 *
 * Polynomial hashes of every proper prefix of every added token's text, in
 * a table keyed by (length, hash) that remembers up to two owners; then
 * every proper suffix of every added token looked up. A suffix of A that is
 * a prefix of another token B is an overlap (checked byte for byte before
 * it is reported; a hash collision is skipped). Linear in the added texts'
 * total length. */

typedef struct pfx { uint64_t h; uint32_t len; int32_t own[2]; } pfx;

#define HASH_BASE 0x100000001b3ull

static pfx *pfx_slot(pfx *tab, size_t mask, uint64_t h, uint32_t len)
{
    size_t i = (size_t)mix64(h ^ ((uint64_t)len << 32)) & mask;
    while (tab[i].len && (tab[i].len != len || tab[i].h != h))
        i = (i + 1) & mask;
    return &tab[i];
}

static int check_overlaps(const vt_tokenizer *t, const int32_t *ids, size_t n_ids, const char *name,
                          vt_error *err)
{
    size_t total = 0;
    for (size_t k = 0; k < n_ids; k++) {
        size_t len;
        vt_tokenizer_token_text(t, ids[k], &len);
        total += len ? len - 1 : 0;
    }
    if (!total)
        return VT_OK;
    size_t mask = table_size(total) - 1;
    pfx *tab = calloc(mask + 1, sizeof *tab);
    if (!tab)
        return vt_error_set(err, VT_EINPUT, "%s: tokenizer: out of memory", name);
    for (size_t k = 0; k < n_ids; k++) {
        size_t len;
        const unsigned char *s = (const unsigned char *)vt_tokenizer_token_text(t, ids[k], &len);
        uint64_t h = 0;
        for (size_t j = 0; j + 1 < len; j++) {
            h = h * HASH_BASE + s[j] + 1;
            pfx *p = pfx_slot(tab, mask, h, (uint32_t)(j + 1));
            if (!p->len) {
                *p = (pfx){ h, (uint32_t)(j + 1), { ids[k], -1 } };
            } else if (p->own[0] != ids[k] && p->own[1] < 0) {
                p->own[1] = ids[k];
            }
        }
    }
    int rc = VT_OK;
    for (size_t k = 0; k < n_ids && rc == VT_OK; k++) {
        size_t len;
        const char *s = vt_tokenizer_token_text(t, ids[k], &len);
        const unsigned char *u = (const unsigned char *)s;
        uint64_t h = 0, pw = 1;
        for (size_t j = len; j-- > 1 && rc == VT_OK;) { /* suffix s[j..len), proper */
            h += (u[j] + 1) * pw;
            pw *= HASH_BASE;
            uint32_t sl = (uint32_t)(len - j);
            pfx *p = pfx_slot(tab, mask, h, sl);
            if (!p->len)
                continue;
            for (int o = 0; o < 2; o++) {
                int32_t other = p->own[o];
                if (other < 0 || other == ids[k])
                    continue;
                size_t ol;
                const char *os = vt_tokenizer_token_text(t, other, &ol);
                if (ol > sl && memcmp(os, s + j, sl) == 0) {
                    char a[256], b[256];
                    excerpt(s, len, a, sizeof a);
                    excerpt(os, ol, b, sizeof b);
                    rc = vt_error_set(err, VT_EINPUT,
                                      "%s: tokenizer.ggml.tokens: token %d '%s' ends with how token %d "
                                      "'%s' begins: expected added tokens that cannot overlap "
                                      "(tokenizers matches them leftmost-longest, vt longest first)",
                                      name, ids[k], a, other, b);
                    break;
                }
            }
        }
    }
    free(tab);
    return rc;
}

/* ---- merges ---- */

typedef struct pair_set { uint64_t *slot; size_t mask; } pair_set;

/* 1 if (l, r) was not in the set (now it is), 0 if it was. */
static int pair_add(pair_set *s, int32_t l, int32_t r)
{
    uint64_t key = ((uint64_t)(uint32_t)l << 32 | (uint32_t)r) + 1; /* 0: empty */
    size_t i = (size_t)mix64(key) & s->mask;
    for (; s->slot[i]; i = (i + 1) & s->mask)
        if (s->slot[i] == key)
            return 0;
    s->slot[i] = key;
    return 1;
}

/* Writes "merges": [...] (the pairs vt ranks, in rank order) into b. */
static int write_merges(vt_sbuf *b, const vt_gguf *g, const vt_tokenizer *t, const char *name,
                        vt_error *err)
{
    int64_t ki = vt_gguf_find_key(g, "tokenizer.ggml.merges");
    const vt_gguf_value *m = ki >= 0 ? vt_gguf_kv_value(g, (uint64_t)ki) : NULL;
    if (!m || m->type != VT_GGUF_ARRAY || m->elem_type != VT_GGUF_STRING)
        return vt_error_set(err, VT_EINPUT, "%s: tokenizer.ggml.merges: expected an array of strings",
                            name);
    pair_set set = { NULL, table_size((size_t)m->count) - 1 };
    set.slot = calloc(set.mask + 1, sizeof *set.slot);
    char *cat = NULL;
    size_t cat_cap = 0;
    int rc = VT_OK;
    if (!set.slot) {
        rc = vt_error_set(err, VT_EINPUT, "%s: tokenizer: out of memory", name);
        goto done;
    }
    vt_sbuf_puts(b, "    \"merges\": [");
    int first = 1;
    for (uint64_t r = 0; r < m->count; r++) {
        vt_gguf_value e;
        if (!vt_gguf_array_get(g, m, r, &e)) {
            rc = vt_error_set(err, VT_EINPUT, "%s: tokenizer.ggml.merges: element %llu unreadable", name,
                              (unsigned long long)r);
            goto done;
        }
        const char *p = e.v.str.ptr;
        size_t n = (size_t)e.v.str.len;
        /* as engine/tokenizer.c splits: at the first space after the first byte */
        const char *sp = n > 1 ? memchr(p + 1, ' ', n - 1) : NULL;
        if (!sp || sp == p + n - 1)
            continue; /* vt never applies it */
        size_t ll = (size_t)(sp - p), rl = n - ll - 1;
        if (ll + rl > cat_cap) {
            size_t c = cat_cap ? cat_cap : 256;
            while (c < ll + rl)
                c *= 2;
            char *q = realloc(cat, c);
            if (!q) {
                rc = vt_error_set(err, VT_EINPUT, "%s: tokenizer: out of memory", name);
                goto done;
            }
            cat = q;
            cat_cap = c;
        }
        memcpy(cat, p, ll);
        memcpy(cat + ll, sp + 1, rl);
        int32_t l = vt_tokenizer_find(t, p, ll), rr = vt_tokenizer_find(t, sp + 1, rl);
        int32_t res = vt_tokenizer_find(t, cat, ll + rl);
        if (l < 0 || rr < 0 || res < 0) {
            const char *what = l < 0 ? p : rr < 0 ? sp + 1 : cat;
            size_t wl = l < 0 ? ll : rr < 0 ? rl : ll + rl;
            char x[256], w[256];
            excerpt(p, n, x, sizeof x);
            excerpt(what, wl, w, sizeof w);
            rc = vt_error_set(err, VT_EINPUT,
                              "%s: tokenizer.ggml.merges: merge %llu '%s': %s '%s' is not a token: "
                              "expected both sides and the result of every merge to be tokens "
                              "(tokenizers refuses a merge that is not)", name,
                              (unsigned long long)r, x, l < 0 ? "left side" : rr < 0 ? "right side" : "result",
                              w);
            goto done;
        }
        if (!pair_add(&set, l, rr))
            continue; /* a repeat: vt ranks the pair by its first place */
        vt_sbuf_puts(b, first ? "\n      [" : ",\n      [");
        first = 0;
        size_t tl;
        const char *tx = vt_tokenizer_token_text(t, l, &tl);
        json_str(b, tx, tl);
        vt_sbuf_add(b, ", ", 2);
        tx = vt_tokenizer_token_text(t, rr, &tl);
        json_str(b, tx, tl);
        vt_sbuf_add(b, "]", 1);
    }
    vt_sbuf_puts(b, first ? "]\n" : "\n    ]\n");
done:
    free(set.slot);
    free(cat);
    return rc;
}

/* ---- the two files ---- */

static void write_bool(vt_sbuf *b, int v) { vt_sbuf_puts(b, v ? "true" : "false"); }

/* A TemplateProcessing piece. */
static void piece_special(vt_sbuf *b, const char *text, size_t len, int type_id, const char *indent)
{
    vt_sbuf_printf(b, "%s{\"SpecialToken\": {\"id\": ", indent);
    json_str(b, text, len);
    vt_sbuf_printf(b, ", \"type_id\": %d}}", type_id);
}

static void write_post_processor(vt_sbuf *b, const vt_tokenizer *t)
{
    int add_bos = vt_tokenizer_add_bos(t), add_eos = vt_tokenizer_add_eos(t);
    if (!add_bos && !add_eos) {
        vt_sbuf_puts(b, "  \"post_processor\": null,\n");
        return;
    }
    int32_t bos = vt_tokenizer_bos(t), eos = vt_tokenizer_eos(t);
    size_t bl = 0, el = 0;
    const char *bt = add_bos ? vt_tokenizer_token_text(t, bos, &bl) : NULL;
    const char *et = add_eos ? vt_tokenizer_token_text(t, eos, &el) : NULL;
    vt_sbuf_puts(b, "  \"post_processor\": {\n    \"type\": \"TemplateProcessing\",\n");
    for (int pair = 0; pair < 2; pair++) {
        vt_sbuf_puts(b, pair ? "    \"pair\": [\n" : "    \"single\": [\n");
        for (int seq = 0; seq <= pair; seq++) {
            if (add_bos) {
                piece_special(b, bt, bl, seq, "      ");
                vt_sbuf_puts(b, ",\n");
            }
            vt_sbuf_printf(b, "      {\"Sequence\": {\"id\": \"%s\", \"type_id\": %d}}", seq ? "B" : "A",
                           seq);
            if (add_eos) {
                vt_sbuf_puts(b, ",\n");
                piece_special(b, et, el, seq, "      ");
            }
            vt_sbuf_puts(b, seq < pair ? ",\n" : "\n");
        }
        vt_sbuf_puts(b, "    ],\n");
    }
    vt_sbuf_puts(b, "    \"special_tokens\": {");
    int32_t ids[2] = { add_bos ? bos : -1, add_eos && !(add_bos && eos == bos) ? eos : -1 };
    int any = 0;
    for (int k = 0; k < 2; k++) {
        if (ids[k] < 0)
            continue;
        size_t len;
        const char *tx = vt_tokenizer_token_text(t, ids[k], &len);
        vt_sbuf_puts(b, any ? ",\n      " : "\n      ");
        any = 1;
        json_str(b, tx, len);
        vt_sbuf_puts(b, ": {\"id\": ");
        json_str(b, tx, len);
        vt_sbuf_printf(b, ", \"ids\": [%d], \"tokens\": [", ids[k]);
        json_str(b, tx, len);
        vt_sbuf_puts(b, "]}");
    }
    vt_sbuf_puts(b, "\n    }\n  },\n");
}

static void role_token(vt_sbuf *b, const vt_tokenizer *t, const char *key, int32_t id)
{
    vt_sbuf_printf(b, "  \"%s\": ", key);
    if (!is_added(t, id)) {
        vt_sbuf_puts(b, "null,\n");
        return;
    }
    size_t len;
    const char *tx = vt_tokenizer_token_text(t, id, &len);
    json_str(b, tx, len);
    vt_sbuf_puts(b, ",\n");
}

static int write_config(vt_sbuf *b, const vt_gguf *g, const vt_tokenizer *t, const char *name,
                        vt_error *err)
{
    vt_sbuf_puts(b, "{\n  \"tokenizer_class\": \"PreTrainedTokenizerFast\",\n");
    role_token(b, t, "bos_token", vt_tokenizer_bos(t));
    role_token(b, t, "eos_token", vt_tokenizer_eos(t));
    role_token(b, t, "pad_token", vt_tokenizer_pad(t));
    vt_sbuf_puts(b, "  \"unk_token\": null,\n  \"add_bos_token\": ");
    write_bool(b, vt_tokenizer_add_bos(t));
    vt_sbuf_puts(b, ",\n  \"add_eos_token\": ");
    write_bool(b, vt_tokenizer_add_eos(t));
    vt_sbuf_puts(b, ",\n  \"clean_up_tokenization_spaces\": false,\n  \"split_special_tokens\": false");
    vt_gguf_str arch;
    uint64_t ctx;
    char key[160];
    if (vt_gguf_get_str(g, "general.architecture", &arch) && arch.len < 100 &&
        snprintf(key, sizeof key, "%.*s.context_length", (int)arch.len, arch.ptr) < (int)sizeof key &&
        vt_gguf_get_u64(g, key, &ctx))
        vt_sbuf_printf(b, ",\n  \"model_max_length\": %llu", (unsigned long long)ctx);
    vt_gguf_str tmpl;
    if (vt_gguf_find_key(g, "tokenizer.chat_template") >= 0) {
        if (!vt_gguf_get_str(g, "tokenizer.chat_template", &tmpl))
            return vt_error_set(err, VT_EINPUT, "%s: tokenizer.chat_template: expected a string", name);
        size_t bad = text_fault(tmpl.ptr, (size_t)tmpl.len);
        if (bad < tmpl.len)
            return vt_error_set(err, VT_EINPUT,
                                "%s: tokenizer.chat_template: byte %zu: expected UTF-8 text without "
                                "NUL bytes", name, bad);
        vt_sbuf_puts(b, ",\n  \"chat_template\": ");
        json_str(b, tmpl.ptr, (size_t)tmpl.len);
    }
    vt_sbuf_puts(b, "\n}\n");
    return VT_OK;
}

int vt_hf_tokenizer_files(const vt_gguf *g, char **tokenizer_json, char **tokenizer_config_json,
                          vt_error *err)
{
    if (tokenizer_json)
        *tokenizer_json = NULL;
    if (tokenizer_config_json)
        *tokenizer_config_json = NULL;
    if (!g || !tokenizer_json || !tokenizer_config_json)
        return vt_error_set(err, VT_EINPUT, "vt_hf_tokenizer_files: expected a GGUF and two outputs");
    const char *name = vt_gguf_name(g);
    vt_error terr;
    vt_error_clear(&terr);
    vt_tokenizer *t = vt_tokenizer_open(g, &terr);
    if (!t)
        return vt_error_set(err, VT_EINPUT, "%s: %s", name, terr.msg);

    vt_sbuf b = { 0 }, c = { 0 };
    int32_t *added = NULL;
    size_t n_added = 0;
    int rc = VT_OK;
    const int32_t nv = vt_tokenizer_n_vocab(t);
    const char *re = vt_hf_tokenizer_regex(vt_tokenizer_pre(t));
    if (!re) { /* vt_tokenizer_open takes no other pre-tokenizer */
        rc = vt_error_set(err, VT_EINPUT, "%s: tokenizer.ggml.pre: '%s': expected qwen2 or qwen35", name,
                          vt_tokenizer_pre(t));
        goto done;
    }

    /* Every text must be a JSON string; collect the added tokens. */
    added = malloc((size_t)nv * sizeof *added);
    if (!added) {
        rc = vt_error_set(err, VT_EINPUT, "%s: tokenizer: out of memory", name);
        goto done;
    }
    for (int32_t id = 0; id < nv; id++) {
        size_t len;
        const char *s = vt_tokenizer_token_text(t, id, &len);
        size_t bad = text_fault(s, len);
        if (bad < len) {
            char x[256];
            excerpt(s, len, x, sizeof x);
            rc = vt_error_set(err, VT_EINPUT,
                              "%s: tokenizer.ggml.tokens: token %d '%s': byte %zu: expected UTF-8 text "
                              "without NUL bytes (a JSON string)", name, id, x, bad);
            goto done;
        }
        if (is_added(t, id))
            added[n_added++] = id;
    }
    if ((rc = check_overlaps(t, added, n_added, name, err)))
        goto done;
    static const char *const role[2] = { "bos", "eos" };
    for (int k = 0; k < 2; k++) {
        int asked = k ? vt_tokenizer_add_eos(t) : vt_tokenizer_add_bos(t);
        int32_t id = k ? vt_tokenizer_eos(t) : vt_tokenizer_bos(t);
        if (asked && !is_added(t, id)) {
            rc = vt_error_set(err, VT_EINPUT,
                              "%s: tokenizer.ggml.%s_token_id: %d: expected a control or user-defined "
                              "token, as tokenizer.ggml.add_%s_token is true (transformers names the "
                              "token it adds by its text, and makes it special)",
                              name, role[k], id, role[k]);
            goto done;
        }
    }

    vt_sbuf_puts(&b, "{\n  \"version\": \"1.0\",\n  \"truncation\": null,\n  \"padding\": null,\n"
                     "  \"added_tokens\": [");
    for (size_t k = 0; k < n_added; k++) {
        size_t len;
        const char *s = vt_tokenizer_token_text(t, added[k], &len);
        vt_sbuf_printf(&b, "%s\n    {\n      \"id\": %d,\n      \"content\": ", k ? "," : "", added[k]);
        json_str(&b, s, len);
        vt_sbuf_puts(&b, ",\n      \"single_word\": false,\n      \"lstrip\": false,\n"
                         "      \"rstrip\": false,\n      \"normalized\": false,\n      \"special\": ");
        write_bool(&b, (vt_tokenizer_token_attr(t, added[k]) & SPECIAL_ATTR) != 0);
        vt_sbuf_puts(&b, "\n    }");
    }
    vt_sbuf_puts(&b, n_added ? "\n  ],\n" : "],\n");
    vt_sbuf_puts(&b, "  \"normalizer\": null,\n  \"pre_tokenizer\": {\n    \"type\": \"Sequence\",\n"
                     "    \"pretokenizers\": [\n      {\n        \"type\": \"Split\",\n"
                     "        \"pattern\": {\n          \"Regex\": ");
    json_cstr(&b, re);
    vt_sbuf_puts(&b, "\n        },\n        \"behavior\": \"Isolated\",\n        \"invert\": false\n"
                     "      },\n      {\n        \"type\": \"ByteLevel\",\n"
                     "        \"add_prefix_space\": false,\n        \"trim_offsets\": false,\n"
                     "        \"use_regex\": false\n      }\n    ]\n  },\n");
    write_post_processor(&b, t);
    vt_sbuf_puts(&b, "  \"decoder\": {\n    \"type\": \"ByteLevel\",\n    \"add_prefix_space\": false,\n"
                     "    \"trim_offsets\": false,\n    \"use_regex\": false\n  },\n"
                     "  \"model\": {\n    \"type\": \"BPE\",\n    \"dropout\": null,\n"
                     "    \"unk_token\": null,\n    \"continuing_subword_prefix\": null,\n"
                     "    \"end_of_word_suffix\": null,\n    \"fuse_unk\": false,\n"
                     "    \"byte_fallback\": false,\n    \"ignore_merges\": false,\n    \"vocab\": {");
    for (int32_t id = 0; id < nv; id++) {
        size_t len;
        const char *s = vt_tokenizer_token_text(t, id, &len);
        vt_sbuf_puts(&b, id ? ",\n      " : "\n      ");
        json_str(&b, s, len);
        vt_sbuf_printf(&b, ": %d", id);
    }
    vt_sbuf_puts(&b, "\n    },\n");
    if ((rc = write_merges(&b, g, t, name, err)))
        goto done;
    vt_sbuf_puts(&b, "  }\n}\n");
    if ((rc = write_config(&c, g, t, name, err)))
        goto done;

    *tokenizer_json = vt_sbuf_take(&b);
    *tokenizer_config_json = vt_sbuf_take(&c);
    if (!*tokenizer_json || !*tokenizer_config_json) {
        free(*tokenizer_json);
        free(*tokenizer_config_json);
        *tokenizer_json = *tokenizer_config_json = NULL;
        rc = vt_error_set(err, VT_EINPUT, "%s: tokenizer: out of memory", name);
    }
done:
    free(b.p);
    free(c.p);
    free(added);
    vt_tokenizer_free(t);
    return rc;
}
