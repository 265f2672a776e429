/* Byte-level BPE (GPT-2 style) with llama.cpp's semantics, for the "qwen2"
 * and "qwen35" pre-tokenizers. The pipeline, per call:
 *
 *   text --special-token partition--> fragments (raw text | token id)
 *   raw text --lenient UTF-8 decode/re-encode--> clean text
 *   clean text --PCRE2 pre-tokenizer regex--> words
 *   word --byte-to-unicode encoding, BPE merges by rank--> symbols --> ids
 *
 * Everything read from the GGUF is copied into one arena at open, so the
 * hot path only hashes and compares bytes; scratch buffers live in the
 * handle and only grow, so tokenizing does not allocate per token. */
#include "tokenizer.h"
#include "tokenizer_regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- pre-tokenizer regexes (engine/tokenizer_regex.h says how they are
 * spelled). With PCRE2 at Unicode 15.x the X ranges are redundant; newer
 * PCRE2 is refused at open (see below). ---- */

static const char re_qwen2[] = VT_RE_QWEN2("");
static const char re_qwen35[] = VT_RE_QWEN35("");

/* Unicode versions of PCRE2 whose classes, with the X ranges added, equal
 * llama.cpp's tables: 14.0 (which the ranges were measured against) to 15.1. */
#define UNICODE_MIN 1400
#define UNICODE_MAX 1501

/* ---- data ---- */

typedef struct span { uint32_t off, len; } span;
typedef struct merge { uint32_t off, len, left_len; } merge; /* arena: left || right */
typedef struct sym { uint32_t off, len; int32_t prev, next; } sym;
typedef struct bigram { int32_t rank, left, right; uint32_t llen, rlen; } bigram;
typedef struct frag { size_t off, len; int32_t id; } frag; /* id < 0: raw text */

enum { ROLE_BOS, ROLE_EOS, ROLE_EOT, ROLE_EOM, ROLE_UNK, ROLE_SEP, ROLE_PAD, ROLE_MASK,
       ROLE_FIM_PRE, ROLE_FIM_SUF, ROLE_FIM_MID, ROLE_FIM_PAD, ROLE_FIM_REP, ROLE_FIM_SEP,
       N_ROLES };

struct vt_tokenizer {
    char pre[16];
    int32_t n_vocab;
    char *arena;
    size_t arena_len, arena_cap;
    span *text, *piece;
    uint8_t *attr;
    uint32_t *tok_slot, tok_mask; /* id + 1; 0 empty */
    merge *merges;
    uint32_t *merge_slot, merge_mask; /* rank + 1; 0 empty */
    int32_t *special; /* ids matched in text, longest text first */
    size_t n_special;
    int32_t role[N_ROLES];
    int add_bos, add_eos, add_space_prefix;
    /* GPT-2 byte-to-unicode: byte b stands as the UTF-8 bytes benc[b][0..benc_len[b]) */
    uint8_t benc[256][2], benc_len[256];
    int16_t bdec[0x144]; /* code point -> byte, -1: none */
    pcre2_code *re;
    pcre2_match_data *md;
    pcre2_match_context *mctx;
    /* scratch, grow-only */
    char *clean, *proxy;
    size_t clean_cap, proxy_cap;
    char *enc;
    size_t enc_cap;
    sym *syms;
    size_t syms_cap;
    bigram *heap;
    size_t heap_n, heap_cap;
    frag *frags[2];
    size_t frag_cap[2];
};

/* Output sink: counts every id, stores those that fit. */
typedef struct sink { int32_t *out; size_t cap, n; } sink;

static void emit(sink *s, int32_t id)
{
    if (s->n < s->cap)
        s->out[s->n] = id;
    s->n++;
}

static int grow(void *pp, size_t *cap, size_t need, size_t elem)
{
    void **p = pp;
    if (need <= *cap)
        return 1;
    size_t n = *cap ? *cap : 64;
    while (n < need)
        n *= 2;
    if (n > SIZE_MAX / elem)
        return 0;
    void *q = realloc(*p, n * elem);
    if (!q)
        return 0;
    *p = q;
    *cap = n;
    return 1;
}

static uint64_t hash_bytes(const void *p, size_t n, uint64_t salt)
{
    const uint8_t *b = p;
    uint64_t h = 0xcbf29ce484222325ull ^ salt;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h ^ (h >> 29);
}

static uint32_t table_size(uint64_t n)
{
    uint32_t s = 16;
    while (s < 2 * n)
        s *= 2;
    return s;
}

/* ---- UTF-8, the way llama.cpp reads and writes it ---- */

/* llama.cpp's decoder: checks lead and continuation bits and length only, so
 * overlong forms, surrogates and values up to 0x1FFFFF pass; anything else
 * reads as U+FFFD and consumes one byte. Returns bytes consumed. */
static size_t utf8_lenient(const uint8_t *s, size_t n, size_t i, uint32_t *cp)
{
    uint8_t b = s[i];
    size_t need;
    uint32_t c;
    if (b < 0x80) {
        *cp = b;
        return 1;
    }
    if ((b & 0xE0) == 0xC0) {
        need = 1;
        c = b & 0x1F;
    } else if ((b & 0xF0) == 0xE0) {
        need = 2;
        c = b & 0x0F;
    } else if ((b & 0xF8) == 0xF0) {
        need = 3;
        c = b & 0x07;
    } else {
        *cp = 0xFFFD;
        return 1;
    }
    if (need >= n - i) {
        *cp = 0xFFFD;
        return 1;
    }
    for (size_t k = 1; k <= need; k++) {
        if ((s[i + k] & 0xC0) != 0x80) {
            *cp = 0xFFFD;
            return 1;
        }
        c = (c << 6) | (s[i + k] & 0x3F);
    }
    *cp = c;
    return need + 1;
}

/* llama.cpp's encoder: by value only (surrogates are written as 3 bytes).
 * Returns 0 above U+10FFFF, where llama.cpp throws. */
static size_t utf8_put(uint32_t c, char *o)
{
    if (c < 0x80) {
        o[0] = (char)c;
        return 1;
    }
    if (c < 0x800) {
        o[0] = (char)(0xC0 | (c >> 6));
        o[1] = (char)(0x80 | (c & 0x3F));
        return 2;
    }
    if (c < 0x10000) {
        o[0] = (char)(0xE0 | (c >> 12));
        o[1] = (char)(0x80 | ((c >> 6) & 0x3F));
        o[2] = (char)(0x80 | (c & 0x3F));
        return 3;
    }
    if (c <= 0x10FFFF) {
        o[0] = (char)(0xF0 | (c >> 18));
        o[1] = (char)(0x80 | ((c >> 12) & 0x3F));
        o[2] = (char)(0x80 | ((c >> 6) & 0x3F));
        o[3] = (char)(0x80 | (c & 0x3F));
        return 4;
    }
    return 0;
}

/* ---- arena and lookups ---- */

static int arena_add(vt_tokenizer *t, const void *p, size_t n, span *out)
{
    if (t->arena_len + n > UINT32_MAX)
        return 0;
    if (!grow(&t->arena, &t->arena_cap, t->arena_len + n + 1, 1))
        return 0;
    if (n)
        memcpy(t->arena + t->arena_len, p, n);
    out->off = (uint32_t)t->arena_len;
    out->len = (uint32_t)n;
    t->arena_len += n;
    return 1;
}

int32_t vt_tokenizer_find(const vt_tokenizer *t, const char *s, size_t len)
{
    uint32_t i = (uint32_t)hash_bytes(s, len, 0) & t->tok_mask;
    for (;; i = (i + 1) & t->tok_mask) {
        uint32_t v = t->tok_slot[i];
        if (!v)
            return -1;
        const span *sp = &t->text[v - 1];
        if (sp->len == len && memcmp(t->arena + sp->off, s, len) == 0)
            return (int32_t)(v - 1);
    }
}

/* Rank of merging the adjacent symbols p[0..llen) and p[llen..llen+rlen), or -1. */
static int32_t merge_rank(const vt_tokenizer *t, const char *p, uint32_t llen, uint32_t rlen)
{
    uint32_t len = llen + rlen;
    uint32_t i = (uint32_t)hash_bytes(p, len, llen) & t->merge_mask;
    for (;; i = (i + 1) & t->merge_mask) {
        uint32_t v = t->merge_slot[i];
        if (!v)
            return -1;
        const merge *m = &t->merges[v - 1];
        if (m->len == len && m->left_len == llen && memcmp(t->arena + m->off, p, len) == 0)
            return (int32_t)(v - 1);
    }
}

/* ---- open ---- */

static const vt_gguf_value *get_array(const vt_gguf *g, const char *key, vt_gguf_vtype elem)
{
    int64_t i = vt_gguf_find_key(g, key);
    if (i < 0)
        return NULL;
    const vt_gguf_value *v = vt_gguf_kv_value(g, (uint64_t)i);
    return v && v->type == VT_GGUF_ARRAY && v->elem_type == elem ? v : NULL;
}

static int str_is(const vt_gguf_str *s, const char *lit)
{
    size_t n = strlen(lit);
    return s->len == n && memcmp(s->ptr, lit, n) == 0;
}

/* Substring test; fold: ASCII case-insensitive (llama.cpp lowercases general.name). */
static int has_sub(const vt_gguf_str *s, const char *needle, int fold)
{
    size_t n = strlen(needle);
    for (uint64_t i = 0; i + n <= s->len; i++) {
        size_t k = 0;
        while (k < n) {
            char c = s->ptr[i + k];
            if (fold && c >= 'A' && c <= 'Z')
                c = (char)(c - 'A' + 'a');
            if (c != needle[k])
                break;
            k++;
        }
        if (k == n)
            return 1;
    }
    return 0;
}

static int32_t find_lit(const vt_tokenizer *t, const char *lit)
{
    return vt_tokenizer_find(t, lit, strlen(lit));
}

static void build_byte_tables(vt_tokenizer *t)
{
    /* GPT-2: printable Latin-1 bytes stand for themselves; the other 68 bytes
     * take U+0100.. in byte order. */
    int n = 0;
    for (int i = 0; i < 0x144; i++)
        t->bdec[i] = -1;
    for (int b = 0; b < 256; b++) {
        int keep = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
        uint32_t cp = keep ? (uint32_t)b : (uint32_t)(256 + n++);
        char tmp[4];
        t->benc_len[b] = (uint8_t)utf8_put(cp, tmp);
        memcpy(t->benc[b], tmp, t->benc_len[b]);
        t->bdec[cp] = (int16_t)b;
    }
}

/* The bytes a NORMAL token stands for: each code point of its text mapped
 * back through byte-to-unicode. A code point outside the mapping is written
 * as llama.cpp writes it: "[UNK_BYTE_0x<utf8 hex><whole text>]". */
static int decode_normal(vt_tokenizer *t, const char *s, size_t n, span *out)
{
    size_t start = t->arena_len;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        i += utf8_lenient((const uint8_t *)s, n, i, &cp);
        span tmp;
        if (cp < 0x144 && t->bdec[cp] >= 0) {
            char b = (char)t->bdec[cp];
            if (!arena_add(t, &b, 1, &tmp))
                return 0;
            continue;
        }
        char u[4], buf[32];
        size_t un = utf8_put(cp, u);
        if (!un)
            return -1;
        if (!arena_add(t, "[UNK_BYTE_0x", 12, &tmp))
            return 0;
        for (size_t k = 0; k < un; k++) {
            snprintf(buf, sizeof buf, "%02x", (unsigned)(uint8_t)u[k]);
            if (!arena_add(t, buf, 2, &tmp))
                return 0;
        }
        if (!arena_add(t, s, n, &tmp) || !arena_add(t, "]", 1, &tmp))
            return 0;
    }
    out->off = (uint32_t)start;
    out->len = (uint32_t)(t->arena_len - start);
    return 1;
}

/* llama.cpp's BYTE token: strtol of text[3..5) in base 16 ("<0x0A>"). */
static char byte_token_value(const char *s, size_t n)
{
    char hex[3] = { 0, 0, 0 };
    for (size_t k = 0; k < 2 && 3 + k < n; k++)
        hex[k] = s[3 + k];
    return (char)strtol(hex, NULL, 16);
}

/* Token texts that llama.cpp treats specially, by text (llama-vocab.cpp). */
static const char *const eog_texts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
    "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
    "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
    "<\xef\xbd\x9c" "end\xe2\x96\x81" "of\xe2\x96\x81" "sentence\xef\xbd\x9c>", "[e~[", NULL
};
static const char *const eot_texts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>",
    "<EOT>", "_<EOT>", "[EOT]", "<\xef\xbd\x9c" "end\xe2\x96\x81" "of\xe2\x96\x81" "sentence\xef\xbd\x9c>",
    "<end_of_utterance>", NULL
};
static const char *const eom_texts[] = { "<|eom_id|>", NULL };
static const char *const fim_pre_texts[] = {
    "<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<\xef\xbd\x9c" "fim\xe2\x96\x81" "begin\xef\xbd\x9c>",
    "<PRE>", "\xe2\x96\x81<PRE>", "<|code_prefix|>", "<|prefix|>", NULL
};
static const char *const fim_suf_texts[] = {
    "<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<\xef\xbd\x9c" "fim\xe2\x96\x81" "hole\xef\xbd\x9c>",
    "<SUF>", "\xe2\x96\x81<SUF>", "<|code_suffix|>", "<|suffix|>", NULL
};
static const char *const fim_mid_texts[] = {
    "<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<\xef\xbd\x9c" "fim\xe2\x96\x81" "end\xef\xbd\x9c>",
    "<MID>", "\xe2\x96\x81<MID>", "<|code_middle|>", "<|middle|>", NULL
};
static const char *const fim_pad_texts[] = { "<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>",
                                             "[PAD]", NULL };
static const char *const fim_rep_texts[] = { "<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>",
                                             "<reponame>", NULL };
static const char *const fim_sep_texts[] = { "<|file_sep|>", NULL };

/* Attributes and special ids, in llama.cpp's order of adjustments. */
static void settle_special(vt_tokenizer *t, const vt_gguf *g)
{
    static const struct { int role; const char *key; } keys[] = {
        { ROLE_BOS, "tokenizer.ggml.bos_token_id" },
        { ROLE_EOS, "tokenizer.ggml.eos_token_id" },
        { ROLE_EOT, "tokenizer.ggml.eot_token_id" },
        { ROLE_EOM, "tokenizer.ggml.eom_token_id" },
        { ROLE_UNK, "tokenizer.ggml.unknown_token_id" },
        { ROLE_SEP, "tokenizer.ggml.seperator_token_id" }, /* sic */
        { ROLE_PAD, "tokenizer.ggml.padding_token_id" },
        { ROLE_MASK, "tokenizer.ggml.mask_token_id" },
        { ROLE_FIM_PRE, "tokenizer.ggml.fim_pre_token_id" },
        { ROLE_FIM_SUF, "tokenizer.ggml.fim_suf_token_id" },
        { ROLE_FIM_MID, "tokenizer.ggml.fim_mid_token_id" },
        { ROLE_FIM_PAD, "tokenizer.ggml.fim_pad_token_id" },
        { ROLE_FIM_REP, "tokenizer.ggml.fim_rep_token_id" },
        { ROLE_FIM_SEP, "tokenizer.ggml.fim_sep_token_id" },
        { ROLE_FIM_PRE, "tokenizer.ggml.prefix_token_id" }, /* deprecated spellings */
        { ROLE_FIM_SUF, "tokenizer.ggml.suffix_token_id" },
        { ROLE_FIM_MID, "tokenizer.ggml.middle_token_id" },
    };
    for (int r = 0; r < N_ROLES; r++)
        t->role[r] = -1;
    t->role[ROLE_BOS] = t->role[ROLE_EOS] = 11; /* llama.cpp's gpt2 defaults */
    for (int r = 0; r < N_ROLES; r++)
        if (t->role[r] >= t->n_vocab)
            t->role[r] = -1;
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        uint64_t id;
        if (vt_gguf_get_u64(g, keys[k].key, &id) && id < (uint64_t)t->n_vocab)
            t->role[keys[k].role] = (int32_t)id;
    }

    /* Roles not given by key are found by text, and the token found becomes
     * CONTROL. llama.cpp takes the first match in hash-map order; with more
     * than one candidate text present we take the lowest id. */
    static const struct { int role; const char *const *texts; } by_text[] = {
        { ROLE_EOT, eot_texts }, { ROLE_EOM, eom_texts }, { ROLE_FIM_PRE, fim_pre_texts },
        { ROLE_FIM_SUF, fim_suf_texts }, { ROLE_FIM_MID, fim_mid_texts },
        { ROLE_FIM_PAD, fim_pad_texts }, { ROLE_FIM_REP, fim_rep_texts },
        { ROLE_FIM_SEP, fim_sep_texts },
    };
    for (size_t k = 0; k < sizeof by_text / sizeof by_text[0]; k++) {
        if (t->role[by_text[k].role] >= 0)
            continue;
        int32_t best = -1;
        for (const char *const *s = by_text[k].texts; *s; s++) {
            int32_t id = find_lit(t, *s);
            if (id >= 0 && (best < 0 || id < best))
                best = id;
        }
        if (best >= 0) {
            t->role[by_text[k].role] = best;
            t->attr[best] |= VT_TOKEN_ATTR_CONTROL;
        }
    }

    /* Control tokens named "unused" are marked unused. */
    for (int32_t id = 0; id < t->n_vocab; id++) {
        if (!(t->attr[id] & VT_TOKEN_ATTR_CONTROL))
            continue;
        const span *s = &t->text[id];
        const char *p = t->arena + s->off;
        for (uint32_t i = 0; i + 6 <= s->len; i++)
            if (memcmp(p + i, "unused", 6) == 0) {
                t->attr[id] |= VT_TOKEN_ATTR_UNUSED;
                break;
            }
    }

    /* End-of-generation texts are always control tokens. */
    for (const char *const *s = eog_texts; *s; s++) {
        int32_t id = find_lit(t, *s);
        if (id >= 0)
            t->attr[id] |= VT_TOKEN_ATTR_CONTROL;
    }

    /* gpt-oss: always rendered. */
    static const char *const gptoss[] = { "<|channel|>", "<|message|>", "<|start|>", "<|constrain|>" };
    for (size_t k = 0; k < 4; k++) {
        int32_t id = find_lit(t, gptoss[k]);
        if (id >= 0)
            t->attr[id] = VT_TOKEN_ATTR_USER_DEFINED;
    }

    /* o200k_harmony / solar-open: "<|end|>" is not end-of-generation there.
     * All texts below are in eog_texts, so "in the EOG set" = "in the vocab". */
    int has_return = find_lit(t, "<|return|>") >= 0;
    int has_call = find_lit(t, "<|call|>") >= 0 || find_lit(t, "<|calls|>") >= 0;
    int has_flush = find_lit(t, "<|flush|>") >= 0;
    int32_t end_id = find_lit(t, "<|end|>");
    if (end_id >= 0 && has_call && (has_return || has_flush))
        t->attr[end_id] = VT_TOKEN_ATTR_USER_DEFINED;

    /* gemma4 / paddleocr: "</s>" is a normal token when "<|tool_response>" exists. */
    int32_t s_id = find_lit(t, "</s>");
    if (s_id >= 0 && find_lit(t, "<|tool_response>") >= 0)
        t->attr[s_id] = VT_TOKEN_ATTR_NORMAL;
}

static int cmp_special(const void *a, const void *b, void *ctx)
{
    const vt_tokenizer *t = ctx;
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    uint32_t lx = t->text[x].len, ly = t->text[y].len;
    /* Longest first. llama.cpp's std::sort leaves ties unordered; the order of
     * equal-length texts matters only if two of them overlap in the input. */
    if (lx != ly)
        return lx > ly ? -1 : 1;
    return x < y ? -1 : x > y;
}

static int compile_regex(vt_tokenizer *t, vt_error *err)
{
    char ver[64];
    int maj = 0, min = 0;
    if (pcre2_config(PCRE2_CONFIG_UNICODE_VERSION, ver) < 0 || sscanf(ver, "%d.%d", &maj, &min) != 2)
        return vt_error_set(err, VT_EINPUT, "tokenizer: PCRE2 has no Unicode support");
    int v = maj * 100 + min;
    if (v < UNICODE_MIN || v > UNICODE_MAX)
        return vt_error_set(err, VT_EINPUT,
                            "tokenizer: PCRE2 Unicode %s: expected 14.0 to 15.1 (the character "
                            "classes are calibrated to llama.cpp's Unicode 15.1 tables)", ver);
    const char *pat = strcmp(t->pre, "qwen35") == 0 ? re_qwen35 : re_qwen2;
    int code;
    PCRE2_SIZE at;
    t->re = pcre2_compile((PCRE2_SPTR)pat, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP, &code,
                          &at, NULL);
    if (!t->re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(code, msg, sizeof msg);
        return vt_error_set(err, VT_EINPUT, "tokenizer: %s regex: offset %zu: %s", t->pre,
                            (size_t)at, (const char *)msg);
    }
    /* JIT is optional: the interpreter finds the same matches */
    (void)pcre2_jit_compile(t->re, PCRE2_JIT_COMPLETE);
    t->md = pcre2_match_data_create_from_pattern(t->re, NULL);
    t->mctx = pcre2_match_context_create(NULL);
    if (!t->md || !t->mctx)
        return vt_error_set(err, VT_EINPUT, "tokenizer: out of memory");
    /* A whitespace run is scanned once per match attempt; long runs must not
     * hit the default limit of 10M steps. */
    pcre2_set_match_limit(t->mctx, UINT32_MAX);
    return VT_OK;
}

static vt_tokenizer *fail(vt_tokenizer *t, vt_error *err, const char *what)
{
    if (what)
        vt_error_set(err, VT_EINPUT, "tokenizer: %s", what);
    vt_tokenizer_free(t);
    return NULL;
}

vt_tokenizer *vt_tokenizer_open(const vt_gguf *g, vt_error *err)
{
    vt_gguf_str s;
    if (!vt_gguf_get_str(g, "tokenizer.ggml.model", &s)) {
        vt_error_set(err, VT_EINPUT, "tokenizer.ggml.model: missing");
        return NULL;
    }
    if (!str_is(&s, "gpt2")) {
        vt_error_set(err, VT_EINPUT, "tokenizer.ggml.model: '%.*s': expected 'gpt2' (byte-level BPE)",
                     (int)(s.len > 64 ? 64 : s.len), s.ptr);
        return NULL;
    }
    if (!vt_gguf_get_str(g, "tokenizer.ggml.pre", &s)) {
        vt_error_set(err, VT_EINPUT, "tokenizer.ggml.pre: missing: expected 'qwen2' or 'qwen35'");
        return NULL;
    }
    if (!str_is(&s, "qwen2") && !str_is(&s, "qwen35")) {
        vt_error_set(err, VT_EINPUT,
                     "tokenizer.ggml.pre: '%.*s': unsupported pre-tokenizer (supported: qwen2, qwen35)",
                     (int)(s.len > 64 ? 64 : s.len), s.ptr);
        return NULL;
    }
    /* llama.cpp gives some models per-token whitespace stripping by name;
     * not implemented, so refuse rather than differ. */
    vt_gguf_str name;
    if (vt_gguf_get_str(g, "general.name", &name) &&
        (has_sub(&name, "phi-3", 1) || has_sub(&name, "phi3", 1) || has_sub(&name, "modern-bert", 1))) {
        vt_error_set(err, VT_EINPUT, "general.name: '%.*s': llama.cpp strips spaces around this "
                     "model's special tokens; not supported", (int)(name.len > 64 ? 64 : name.len), name.ptr);
        return NULL;
    }
    if (vt_gguf_get_str(g, "general.architecture", &name) &&
        (has_sub(&name, "nomic-bert-moe", 0) || has_sub(&name, "jina-bert-v3", 0))) {
        vt_error_set(err, VT_EINPUT, "general.architecture: '%.*s': llama.cpp strips spaces around "
                     "<mask>; not supported", (int)(name.len > 64 ? 64 : name.len), name.ptr);
        return NULL;
    }

    vt_tokenizer *t = calloc(1, sizeof *t);
    if (!t)
        return fail(NULL, err, "out of memory");
    snprintf(t->pre, sizeof t->pre, "%.*s", (int)s.len, s.ptr);

    const vt_gguf_value *toks = get_array(g, "tokenizer.ggml.tokens", VT_GGUF_STRING);
    if (!toks)
        return fail(t, err, "tokenizer.ggml.tokens: missing or not an array of strings");
    if (toks->count == 0 || toks->count > INT32_MAX)
        return fail(t, err, "tokenizer.ggml.tokens: expected 1 to 2^31-1 tokens");
    t->n_vocab = (int32_t)toks->count;
    const vt_gguf_value *types = NULL;
    if (vt_gguf_find_key(g, "tokenizer.ggml.token_type") >= 0) {
        types = get_array(g, "tokenizer.ggml.token_type", VT_GGUF_I32);
        if (!types || types->count < toks->count)
            return fail(t, err, "tokenizer.ggml.token_type: expected an int32 array covering every token");
    }
    if (vt_gguf_find_key(g, "tokenizer.ggml.scores") >= 0) {
        const vt_gguf_value *sc = get_array(g, "tokenizer.ggml.scores", VT_GGUF_F32);
        if (!sc)
            sc = get_array(g, "tokenizer.ggml.scores", VT_GGUF_I32);
        if (!sc || sc->count < toks->count)
            return fail(t, err, "tokenizer.ggml.scores: expected a float32 or int32 array "
                                "covering every token");
    }
    const vt_gguf_value *merges = get_array(g, "tokenizer.ggml.merges", VT_GGUF_STRING);
    if (!merges)
        return fail(t, err, "tokenizer.ggml.merges: missing or not an array of strings");
    if (merges->count > INT32_MAX - 1)
        return fail(t, err, "tokenizer.ggml.merges: too many");

    size_t nv = (size_t)t->n_vocab;
    t->text = calloc(nv, sizeof *t->text);
    t->piece = calloc(nv, sizeof *t->piece);
    t->attr = calloc(nv, 1);
    t->tok_mask = table_size(nv) - 1;
    t->tok_slot = calloc((size_t)t->tok_mask + 1, sizeof *t->tok_slot);
    if (!t->text || !t->piece || !t->attr || !t->tok_slot)
        return fail(t, err, "out of memory");
    build_byte_tables(t);

    /* Token texts; empty ones get llama.cpp's "[EMPTY_<id>]". */
    for (size_t id = 0; id < nv; id++) {
        vt_gguf_value e;
        if (!vt_gguf_array_get(g, toks, id, &e))
            return fail(t, err, "tokenizer.ggml.tokens: unreadable element");
        char empty[32];
        const char *p = e.v.str.ptr;
        size_t n = (size_t)e.v.str.len;
        if (n == 0) {
            n = (size_t)snprintf(empty, sizeof empty, "[EMPTY_%zu]", id);
            p = empty;
        }
        if (!arena_add(t, p, n, &t->text[id]))
            return fail(t, err, "out of memory");
        uint32_t i = (uint32_t)hash_bytes(p, n, 0) & t->tok_mask;
        for (; t->tok_slot[i]; i = (i + 1) & t->tok_mask) {
            const span *o = &t->text[t->tok_slot[i] - 1];
            if (o->len == n && memcmp(t->arena + o->off, t->arena + t->text[id].off, n) == 0) {
                /* llama.cpp asserts that texts are unique */
                vt_error_set(err, VT_EINPUT, "tokenizer.ggml.tokens: token %zu: text of token %u again",
                             id, t->tok_slot[i] - 1);
                return fail(t, err, NULL);
            }
        }
        t->tok_slot[i] = (uint32_t)id + 1;

        int ty = 1; /* NORMAL when the file gives no types */
        if (types) {
            vt_gguf_value tv;
            if (!vt_gguf_array_get(g, types, id, &tv))
                return fail(t, err, "tokenizer.ggml.token_type: unreadable element");
            ty = (int)tv.v.i64;
        }
        static const uint8_t attr_of_type[7] = {
            VT_TOKEN_ATTR_UNDEFINED, VT_TOKEN_ATTR_NORMAL, VT_TOKEN_ATTR_UNKNOWN,
            VT_TOKEN_ATTR_CONTROL, VT_TOKEN_ATTR_USER_DEFINED, VT_TOKEN_ATTR_UNUSED,
            VT_TOKEN_ATTR_BYTE
        };
        t->attr[id] = ty >= 0 && ty < 7 ? attr_of_type[ty] : VT_TOKEN_ATTR_UNDEFINED;
    }

    /* Merges "left right", split at the first space after the first byte;
     * on repeats the first (lowest rank) wins, as in llama.cpp. */
    t->merges = calloc(merges->count ? (size_t)merges->count : 1, sizeof *t->merges);
    t->merge_mask = table_size(merges->count) - 1;
    t->merge_slot = calloc((size_t)t->merge_mask + 1, sizeof *t->merge_slot);
    if (!t->merges || !t->merge_slot)
        return fail(t, err, "out of memory");
    for (uint64_t r = 0; r < merges->count; r++) {
        vt_gguf_value e;
        if (!vt_gguf_array_get(g, merges, r, &e))
            return fail(t, err, "tokenizer.ggml.merges: unreadable element");
        const char *p = e.v.str.ptr;
        size_t n = (size_t)e.v.str.len;
        const char *sp = n > 1 ? memchr(p + 1, ' ', n - 1) : NULL;
        merge *m = &t->merges[r];
        if (!sp || sp == p + n - 1) /* an empty side never matches a symbol */
            continue;
        size_t llen = (size_t)(sp - p), rlen = n - llen - 1;
        span a, b;
        if (!arena_add(t, p, llen, &a) || !arena_add(t, sp + 1, rlen, &b))
            return fail(t, err, "out of memory");
        m->off = a.off;
        m->len = (uint32_t)(llen + rlen);
        m->left_len = (uint32_t)llen;
        uint32_t i = (uint32_t)hash_bytes(t->arena + m->off, m->len, m->left_len) & t->merge_mask;
        int dup = 0;
        for (; t->merge_slot[i]; i = (i + 1) & t->merge_mask) {
            const merge *o = &t->merges[t->merge_slot[i] - 1];
            if (o->len == m->len && o->left_len == m->left_len &&
                memcmp(t->arena + o->off, t->arena + m->off, m->len) == 0) {
                dup = 1;
                break;
            }
        }
        if (!dup)
            t->merge_slot[i] = (uint32_t)r + 1;
    }

    settle_special(t, g);
    int b;
    t->add_bos = vt_gguf_get_bool(g, "tokenizer.ggml.add_bos_token", &b) ? b : 0;
    t->add_eos = vt_gguf_get_bool(g, "tokenizer.ggml.add_eos_token", &b) ? b : 0;
    t->add_space_prefix = vt_gguf_get_bool(g, "tokenizer.ggml.add_space_prefix", &b) ? b : 0;

    /* Tokens matched in raw text before pre-tokenization. */
    t->special = malloc(nv * sizeof *t->special);
    if (!t->special)
        return fail(t, err, "out of memory");
    for (int32_t id = 0; id < t->n_vocab; id++)
        if (t->attr[id] & (VT_TOKEN_ATTR_CONTROL | VT_TOKEN_ATTR_USER_DEFINED | VT_TOKEN_ATTR_UNKNOWN))
            t->special[t->n_special++] = id;
    qsort_r(t->special, t->n_special, sizeof *t->special, cmp_special, t);

    /* Pieces: what each id detokenizes to. */
    for (int32_t id = 0; id < t->n_vocab; id++) {
        int a = t->attr[id];
        span tx = t->text[id]; /* the arena may move while we append: copy the text first */
        if (a & (VT_TOKEN_ATTR_UNKNOWN | VT_TOKEN_ATTR_CONTROL | VT_TOKEN_ATTR_USER_DEFINED)) {
            t->piece[id] = tx;
        } else if (a & VT_TOKEN_ATTR_NORMAL) {
            if (!grow(&t->enc, &t->enc_cap, tx.len + 1, 1))
                return fail(t, err, "out of memory");
            memcpy(t->enc, t->arena + tx.off, tx.len);
            int r = decode_normal(t, t->enc, tx.len, &t->piece[id]);
            if (r < 0) {
                vt_error_set(err, VT_EINPUT, "tokenizer.ggml.tokens: token %d: code point above "
                             "U+10FFFF in its text", id);
                return fail(t, err, NULL);
            }
            if (!r)
                return fail(t, err, "out of memory");
        } else if (a & VT_TOKEN_ATTR_BYTE) {
            char c = byte_token_value(t->arena + tx.off, tx.len);
            if (!arena_add(t, &c, 1, &t->piece[id]))
                return fail(t, err, "out of memory");
        } else {
            t->piece[id].off = 0;
            t->piece[id].len = 0;
        }
    }

    if (compile_regex(t, err) != VT_OK)
        return fail(t, err, NULL);
    return t;
}

void vt_tokenizer_free(vt_tokenizer *t)
{
    if (!t)
        return;
    pcre2_match_context_free(t->mctx);
    pcre2_match_data_free(t->md);
    pcre2_code_free(t->re);
    free(t->arena);
    free(t->text);
    free(t->piece);
    free(t->attr);
    free(t->tok_slot);
    free(t->merges);
    free(t->merge_slot);
    free(t->special);
    free(t->clean);
    free(t->proxy);
    free(t->enc);
    free(t->syms);
    free(t->heap);
    free(t->frags[0]);
    free(t->frags[1]);
    free(t);
}

/* ---- BPE ---- */

/* Min-heap on (rank, left): llama.cpp's merge order. */
static int bigram_less(const bigram *a, const bigram *b)
{
    return a->rank < b->rank || (a->rank == b->rank && a->left < b->left);
}

static int heap_push(vt_tokenizer *t, bigram b)
{
    if (!grow(&t->heap, &t->heap_cap, t->heap_n + 1, sizeof *t->heap))
        return 0;
    size_t i = t->heap_n++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!bigram_less(&b, &t->heap[p]))
            break;
        t->heap[i] = t->heap[p];
        i = p;
    }
    t->heap[i] = b;
    return 1;
}

static bigram heap_pop(vt_tokenizer *t)
{
    bigram top = t->heap[0], last = t->heap[--t->heap_n];
    size_t i = 0, n = t->heap_n;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && bigram_less(&t->heap[c + 1], &t->heap[c]))
            c++;
        if (!bigram_less(&t->heap[c], &last))
            break;
        t->heap[i] = t->heap[c];
        i = c;
    }
    if (n)
        t->heap[i] = last;
    return top;
}

static int add_bigram(vt_tokenizer *t, int32_t l, int32_t r)
{
    if (l < 0 || r < 0)
        return 1;
    const sym *a = &t->syms[l], *b = &t->syms[r];
    int32_t rank = merge_rank(t, t->enc + a->off, a->len, b->len);
    if (rank < 0)
        return 1;
    bigram bg = { rank, l, r, a->len, b->len };
    return heap_push(t, bg);
}

/* One pre-tokenized word (clean bytes) -> ids. */
static int bpe_word(vt_tokenizer *t, const uint8_t *w, size_t n, sink *out, vt_error *err)
{
    if (!grow(&t->enc, &t->enc_cap, 2 * n, 1) || !grow(&t->syms, &t->syms_cap, n, sizeof *t->syms))
        return vt_error_set(err, VT_EINPUT, "tokenizer: out of memory");
    /* Encode each byte as its GPT-2 unicode stand-in; one symbol per byte. */
    uint32_t off = 0;
    for (size_t i = 0; i < n; i++) {
        uint8_t len = t->benc_len[w[i]];
        memcpy(t->enc + off, t->benc[w[i]], len);
        t->syms[i].off = off;
        t->syms[i].len = len;
        t->syms[i].prev = (int32_t)i - 1;
        t->syms[i].next = i + 1 < n ? (int32_t)i + 1 : -1;
        off += len;
    }
    t->heap_n = 0;
    for (size_t i = 1; i < n; i++)
        if (!add_bigram(t, (int32_t)i - 1, (int32_t)i))
            return vt_error_set(err, VT_EINPUT, "tokenizer: out of memory");
    while (t->heap_n) {
        bigram bg = heap_pop(t);
        sym *l = &t->syms[bg.left], *r = &t->syms[bg.right];
        /* Stale if either side has changed since the pair was queued (symbols
         * only grow or empty, so equal lengths mean equal text). */
        if (l->len == 0 || r->len == 0 || l->len != bg.llen || r->len != bg.rlen)
            continue;
        l->len += r->len;
        r->len = 0;
        l->next = r->next;
        if (r->next >= 0)
            t->syms[r->next].prev = bg.left;
        if (!add_bigram(t, l->prev, bg.left) || !add_bigram(t, bg.left, l->next))
            return vt_error_set(err, VT_EINPUT, "tokenizer: out of memory");
    }
    for (size_t i = 0; i < n; i++) {
        const sym *s = &t->syms[i];
        if (s->len == 0)
            continue;
        int32_t id = vt_tokenizer_find(t, t->enc + s->off, s->len);
        if (id >= 0) {
            emit(out, id);
            continue;
        }
        /* No such token: llama.cpp looks up each byte of the encoded text
         * on its own and drops those that are not tokens either. */
        for (uint32_t k = 0; k < s->len; k++) {
            id = vt_tokenizer_find(t, t->enc + s->off + k, 1);
            if (id >= 0)
                emit(out, id);
        }
    }
    return VT_OK;
}

/* ---- pre-tokenization ---- */

static int regex_next(vt_tokenizer *t, const char *s, size_t n, size_t pos, PCRE2_SIZE **ov)
{
    uint32_t opts = PCRE2_NO_UTF_CHECK;
    int rc = pcre2_match(t->re, (PCRE2_SPTR)s, n, pos, opts, t->md, t->mctx);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT) /* the interpreter keeps its stack on the heap */
        rc = pcre2_match(t->re, (PCRE2_SPTR)s, n, pos, opts | PCRE2_NO_JIT, t->md, t->mctx);
    *ov = pcre2_get_ovector_pointer(t->md);
    return rc;
}

/* One raw-text fragment at byte base of the caller's text. */
static int pretokenize(vt_tokenizer *t, const char *text, size_t base, size_t len, sink *out,
                       vt_error *err)
{
    const uint8_t *s = (const uint8_t *)text + base;
    /* An invalid byte becomes 3 bytes of U+FFFD; nothing else grows. */
    if (len > SIZE_MAX / 3 || !grow(&t->clean, &t->clean_cap, 3 * len + 4, 1) ||
        !grow(&t->proxy, &t->proxy_cap, 3 * len + 4, 1))
        return vt_error_set(err, VT_EINPUT, "tokenizer: out of memory");

    /* clean: the text as llama.cpp sees it after its lenient decode and
     * re-encode. proxy: the same bytes, except that surrogates (which PCRE2
     * cannot take) become U+FFFD, which classifies the same way (neither
     * letter, number, mark nor space) and has the same length. */
    size_t m = 0;
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        size_t used = utf8_lenient(s, len, i, &cp);
        size_t k = utf8_put(cp, t->clean + m);
        if (!k)
            return vt_error_set(err, VT_EINPUT,
                                "tokenize: byte %zu: UTF-8 form of U+%X, above U+10FFFF "
                                "(llama.cpp aborts on it)", base + i, (unsigned)cp);
        if (cp >= 0xD800 && cp <= 0xDFFF)
            memcpy(t->proxy + m, "\xEF\xBF\xBD", 3);
        else
            memcpy(t->proxy + m, t->clean + m, k);
        m += k;
        i += used;
    }

    size_t pos = 0;
    while (pos < m) {
        PCRE2_SIZE *ov;
        int rc = regex_next(t, t->proxy, m, pos, &ov);
        size_t ms, me;
        if (rc == PCRE2_ERROR_NOMATCH) {
            ms = me = m;
        } else if (rc < 0) {
            PCRE2_UCHAR msg[256];
            pcre2_get_error_message(rc, msg, sizeof msg);
            return vt_error_set(err, VT_EINPUT, "tokenize: byte %zu: %s pre-tokenizer: %s", base,
                                t->pre, (const char *)msg);
        } else {
            ms = ov[0];
            me = ov[1];
        }
        /* Text the regex skips is a word of its own (llama.cpp does the same;
         * these patterns match every character, so it does not happen). */
        if (ms > pos) {
            int r = bpe_word(t, (const uint8_t *)t->clean + pos, ms - pos, out, err);
            if (r)
                return r;
        }
        if (me == ms) { /* no empty matches either; step one character to be safe */
            if (me >= m)
                break;
            me = ms + 1;
            while (me < m && ((uint8_t)t->proxy[me] & 0xC0) == 0x80)
                me++;
        }
        int r = bpe_word(t, (const uint8_t *)t->clean + ms, me - ms, out, err);
        if (r)
            return r;
        pos = me;
    }
    return VT_OK;
}

/* ---- special-token partition ---- */

/* Split raw-text fragments at every occurrence of each special token, longest
 * token text first, left to right within a fragment: llama.cpp's
 * tokenizer_st_partition. Leaves *n_frags fragments in t->frags[0]. */
static int partition(vt_tokenizer *t, const char *text, size_t len, int parse_special,
                     size_t *n_frags, vt_error *err)
{
    size_t n = 0;
    if (len) {
        if (!grow(&t->frags[0], &t->frag_cap[0], 1, sizeof(frag)))
            return vt_error_set(err, VT_EINPUT, "tokenizer: out of memory");
        t->frags[0][0] = (frag){ 0, len, -1 };
        n = 1;
    }
    for (size_t k = 0; k < t->n_special && n; k++) {
        int32_t id = t->special[k];
        if (!parse_special && (t->attr[id] & (VT_TOKEN_ATTR_CONTROL | VT_TOKEN_ATTR_UNKNOWN)))
            continue; /* user-defined tokens are matched even then */
        const char *st = t->arena + t->text[id].off;
        size_t sl = t->text[id].len;
        /* Cheap test first: most tokens occur nowhere. */
        int any = 0;
        for (size_t f = 0; f < n && !any; f++) {
            const frag *fr = &t->frags[0][f];
            any = fr->id < 0 && memmem(text + fr->off, fr->len, st, sl) != NULL;
        }
        if (!any)
            continue;
        size_t m = 0;
        for (size_t f = 0; f < n; f++) {
            frag fr = t->frags[0][f];
            size_t pos = fr.off, end = fr.off + fr.len;
            const char *hit = NULL;
            /* a token fragment is copied; a text fragment is cut at each hit */
            while (fr.id < 0 && pos < end && (hit = memmem(text + pos, end - pos, st, sl))) {
                if (!grow(&t->frags[1], &t->frag_cap[1], m + 2, sizeof(frag)))
                    return vt_error_set(err, VT_EINPUT, "tokenizer: out of memory");
                size_t at = (size_t)(hit - text);
                if (at > pos)
                    t->frags[1][m++] = (frag){ pos, at - pos, -1 };
                t->frags[1][m++] = (frag){ at, sl, id };
                pos = at + sl;
            }
            if (!grow(&t->frags[1], &t->frag_cap[1], m + 1, sizeof(frag)))
                return vt_error_set(err, VT_EINPUT, "tokenizer: out of memory");
            if (fr.id >= 0)
                t->frags[1][m++] = fr;
            else if (pos < end)
                t->frags[1][m++] = (frag){ pos, end - pos, -1 };
        }
        frag *tmp = t->frags[0];
        size_t tcap = t->frag_cap[0];
        t->frags[0] = t->frags[1];
        t->frag_cap[0] = t->frag_cap[1];
        t->frags[1] = tmp;
        t->frag_cap[1] = tcap;
        n = m;
    }
    *n_frags = n;
    return VT_OK;
}

int vt_tokenize(vt_tokenizer *t, const char *text, size_t len, int add_special, int parse_special,
                int32_t *out, size_t cap, size_t *n_out, vt_error *err)
{
    sink s = { out, out ? cap : 0, 0 };
    *n_out = 0;
    if (add_special && t->add_bos) {
        if (t->role[ROLE_BOS] < 0)
            return vt_error_set(err, VT_EINPUT, "tokenize: the vocabulary asks for BOS but has none");
        emit(&s, t->role[ROLE_BOS]);
    }
    size_t nf = 0;
    int r = partition(t, text, len, parse_special, &nf, err);
    if (r)
        return r;
    for (size_t f = 0; f < nf; f++) {
        frag fr = t->frags[0][f];
        if (fr.id >= 0) {
            emit(&s, fr.id);
            continue;
        }
        r = pretokenize(t, text, fr.off, fr.len, &s, err);
        if (r)
            return r;
    }
    if (add_special && t->add_eos) {
        if (t->role[ROLE_EOS] < 0)
            return vt_error_set(err, VT_EINPUT, "tokenize: the vocabulary asks for EOS but has none");
        emit(&s, t->role[ROLE_EOS]);
    }
    *n_out = s.n;
    if (s.n > cap)
        return vt_error_set(err, VT_EINPUT, "tokenize: %zu tokens do not fit in %zu", s.n, cap);
    return VT_OK;
}

int vt_detokenize(vt_tokenizer *t, const int32_t *ids, size_t n, char *out, size_t cap,
                  size_t *n_out, vt_error *err)
{
    size_t total = 0;
    *n_out = 0;
    for (size_t i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= t->n_vocab)
            return vt_error_set(err, VT_EINPUT, "detokenize: id %d at %zu: expected 0..%d", ids[i],
                                i, t->n_vocab - 1);
        span p = t->piece[ids[i]];
        const char *b = t->arena + p.off;
        /* with add_space_prefix, llama.cpp drops one leading space of the first piece */
        if (i == 0 && t->add_space_prefix && p.len && b[0] == ' ') {
            b++;
            p.len--;
        }
        if (out && total + p.len <= cap)
            memcpy(out + total, b, p.len);
        else if (out && total < cap)
            memcpy(out + total, b, cap - total);
        total += p.len;
    }
    *n_out = total;
    if (total > cap)
        return vt_error_set(err, VT_EINPUT, "detokenize: %zu bytes do not fit in %zu", total, cap);
    return VT_OK;
}

/* ---- accessors ---- */

int32_t vt_tokenizer_n_vocab(const vt_tokenizer *t) { return t->n_vocab; }
const char *vt_tokenizer_pre(const vt_tokenizer *t) { return t->pre; }

const char *vt_tokenizer_token_text(const vt_tokenizer *t, int32_t id, size_t *len)
{
    if (id < 0 || id >= t->n_vocab) {
        *len = 0;
        return NULL;
    }
    *len = t->text[id].len;
    return t->arena + t->text[id].off;
}

const char *vt_tokenizer_token_piece(const vt_tokenizer *t, int32_t id, size_t *len)
{
    if (id < 0 || id >= t->n_vocab) {
        *len = 0;
        return NULL;
    }
    *len = t->piece[id].len;
    return t->arena + t->piece[id].off;
}

int vt_tokenizer_token_attr(const vt_tokenizer *t, int32_t id)
{
    return id < 0 || id >= t->n_vocab ? 0 : t->attr[id];
}

int32_t vt_tokenizer_bos(const vt_tokenizer *t) { return t->role[ROLE_BOS]; }
int32_t vt_tokenizer_eos(const vt_tokenizer *t) { return t->role[ROLE_EOS]; }
int32_t vt_tokenizer_eot(const vt_tokenizer *t) { return t->role[ROLE_EOT]; }
int32_t vt_tokenizer_pad(const vt_tokenizer *t) { return t->role[ROLE_PAD]; }
int vt_tokenizer_add_bos(const vt_tokenizer *t) { return t->add_bos; }
int vt_tokenizer_add_eos(const vt_tokenizer *t) { return t->add_eos; }

vt_tokenizer *vt_tokenizer_open_file(const char *path, vt_error *err)
{
    vt_gguf *g = vt_gguf_open(path, err);
    if (!g)
        return NULL;
    vt_tokenizer *t = vt_tokenizer_open(g, err);
    vt_gguf_free(g);
    if (!t && err) {
        /* Name the file: the tokenizer's own messages name only the key. */
        char msg[sizeof err->msg];
        memcpy(msg, err->msg, sizeof msg);
        vt_error_set(err, err->code ? err->code : VT_EINPUT, "%s: %s", path, msg);
    }
    return t;
}
