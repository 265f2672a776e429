/* Tokenizer: llama.cpp's own test vectors for the qwen2 and qwen35 vocabularies,
 * and agreement with llama.cpp (the pinned libllama, vocab-only) on generated
 * text in many scripts, with and without special-token parsing, including
 * invalid UTF-8; detokenization compared byte for byte. */
#include <criterion/criterion.h>

#include "common/vt_rng.h"
#include "engine/gguf_file.h"
#include "engine/tokenizer.h"
#include "oracle/llamacpp_vocab.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define VOCAB(name) VT_VOCAB_DIR "/ggml-vocab-" name ".gguf"

typedef struct vocab {
    vt_gguf *g;
    vt_tokenizer *t;
} vocab;

static vocab open_vocab(const char *path)
{
    vt_error err;
    vt_error_clear(&err);
    vocab v = { 0 };
    v.g = vt_gguf_open(path, &err);
    cr_assert_not_null(v.g, "%s", err.msg);
    v.t = vt_tokenizer_open(v.g, &err);
    cr_assert_not_null(v.t, "%s", err.msg);
    return v;
}

static void close_vocab(vocab v)
{
    vt_tokenizer_free(v.t);
    vt_gguf_free(v.g);
}

static char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s: cannot open", path);
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    size_t got;
    while ((got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap)
            buf = realloc(buf, cap *= 2);
    }
    fclose(f);
    buf[n < cap ? n : cap - 1] = '\0';
    *len = n;
    return buf;
}

/* ---- llama.cpp's .inp/.out vectors (tests/test-tokenizer-0.cpp format):
 * inputs separated by "\n__ggml_vocab_test__\n", one output line of ids per
 * input; tokenized with add_special = false, parse_special = false. */
static size_t run_vectors(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/ggml-vocab-%s.gguf", VT_VOCAB_DIR, name);
    vocab v = open_vocab(path);
    size_t inp_len, out_len;
    snprintf(path, sizeof path, "%s/ggml-vocab-%s.gguf.inp", VT_VOCAB_DIR, name);
    char *inp = read_all(path, &inp_len);
    snprintf(path, sizeof path, "%s/ggml-vocab-%s.gguf.out", VT_VOCAB_DIR, name);
    char *out = read_all(path, &out_len);

    static const char sep[] = "\n__ggml_vocab_test__\n";
    const size_t sep_len = sizeof sep - 1;
    char *line = out, *out_end = out + out_len;
    size_t pos = 0, n_tests = 0;
    int32_t ids[4096];
    char detok[16384];
    while (pos < inp_len) {
        const char *next = memmem(inp + pos, inp_len - pos, sep, sep_len);
        size_t len = next ? (size_t)(next - (inp + pos)) : inp_len - pos;
        const char *text = inp + pos;
        pos = next ? pos + len + sep_len : inp_len;

        cr_assert_lt(line, out_end, "%s: more inputs than output lines", name);
        char *eol = memchr(line, '\n', (size_t)(out_end - line));
        if (!eol)
            eol = out_end;
        *eol = '\0';
        int32_t want[4096];
        size_t n_want = 0;
        for (char *p = line, *q;; p = q) {
            long x = strtol(p, &q, 10);
            if (q == p)
                break;
            want[n_want++] = (int32_t)x;
        }
        line = eol + 1;

        vt_error err;
        vt_error_clear(&err);
        size_t n;
        int rc = vt_tokenize(v.t, text, len, 0, 0, ids, 4096, &n, &err);
        cr_assert_eq(rc, VT_OK, "%s #%zu: %s", name, n_tests, err.msg);
        cr_assert_eq(n, n_want, "%s #%zu '%.*s': %zu tokens, expected %zu", name, n_tests,
                     (int)len, text, n, n_want);
        for (size_t i = 0; i < n; i++)
            cr_assert_eq(ids[i], want[i], "%s #%zu '%.*s': token %zu: %d, expected %d", name,
                         n_tests, (int)len, text, i, ids[i], want[i]);
        /* the vectors are valid UTF-8 without special tokens: byte-level BPE
         * must give the text back */
        size_t dn;
        rc = vt_detokenize(v.t, ids, n, detok, sizeof detok, &dn, &err);
        cr_assert_eq(rc, VT_OK, "%s", err.msg);
        cr_assert(dn == len && memcmp(detok, text, len) == 0, "%s #%zu: round trip differs", name,
                  n_tests);
        n_tests++;
    }
    cr_assert_geq(line, out_end - 1, "%s: more output lines than inputs", name);
    free(inp);
    free(out);
    close_vocab(v);
    return n_tests;
}

Test(tokenizer, vectors_qwen2)
{
    size_t n = run_vectors("qwen2");
    cr_assert_gt(n, 0);
    fprintf(stderr, "tokenizer vectors qwen2: %zu llama.cpp test vectors reproduced\n", n);
}

Test(tokenizer, vectors_qwen35)
{
    size_t n = run_vectors("qwen35");
    cr_assert_gt(n, 0);
    fprintf(stderr, "tokenizer vectors qwen35: %zu llama.cpp test vectors reproduced\n", n);
}

/* ---- generated text ---- */

typedef struct strbuf { char *p; size_t n, cap; } strbuf;

static void put_bytes(strbuf *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        while (b->n + n + 1 > b->cap)
            b->cap = b->cap ? 2 * b->cap : 256;
        b->p = realloc(b->p, b->cap);
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

static void put(strbuf *b, const char *s) { put_bytes(b, s, strlen(s)); }

static void put_cp(strbuf *b, uint32_t c)
{
    char o[4];
    size_t n;
    if (c < 0x80) {
        o[0] = (char)c;
        n = 1;
    } else if (c < 0x800) {
        o[0] = (char)(0xC0 | (c >> 6));
        o[1] = (char)(0x80 | (c & 0x3F));
        n = 2;
    } else if (c < 0x10000) {
        o[0] = (char)(0xE0 | (c >> 12));
        o[1] = (char)(0x80 | ((c >> 6) & 0x3F));
        o[2] = (char)(0x80 | (c & 0x3F));
        n = 3;
    } else {
        o[0] = (char)(0xF0 | (c >> 18));
        o[1] = (char)(0x80 | ((c >> 12) & 0x3F));
        o[2] = (char)(0x80 | ((c >> 6) & 0x3F));
        o[3] = (char)(0x80 | (c & 0x3F));
        n = 4;
    }
    put_bytes(b, o, n);
}

static uint32_t pick(vt_rng *r, uint32_t n) { return (uint32_t)(vt_rng_next(r) % n); }

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

static const char *const words[] = {
    /* Latin, accents (precomposed and combining) */
    "Hello", "world", "the", "The", "THE", "café", "naïve", "Ångström", "São Paulo", "Zürich",
    "œuvre", "ÉCOLE", "façade", "e\xcc\x81", "Cafe\xcc\x81", "n\xcc\x83o", "a\xcc\x8a\xcc\x81",
    "straße", "İstanbul", "ǅemal", "ﬁne",
    /* Cyrillic, Greek */
    "привет", "Мир", "ёжик", "Български", "αβγ", "Ελληνικά", "ΣΊΣΥΦΟΣ", "ὦ",
    /* CJK, kana, hangul */
    "你好世界", "日本語", "한국어", "カタカナ", "ひらがな", "我想在apple工作", "〇", "𠀀𠀁",
    /* Arabic (with harakat), Hebrew */
    "مرحبا", "العربية", "مَرْحَبًا", "שָׁלוֹם",
    /* Hindi, Thai, Khmer, Tamil (combining marks) */
    "नमस्ते", "हिन्दी", "क्षत्रिय", "สวัสดี", "ภาษาไทย", "កាន់តែពិសេស", "தமிழ்",
    /* Unicode 15.x letters, numbers and marks PCRE2 10.42 does not know */
    "\xf0\x91\xbc\x84\xf0\x91\xbc\x85\xf0\x91\xbc\x86", "\xf0\x9e\x93\x90\xf0\x9e\x93\x91",
    "\xf0\xae\xaf\xb0\xf0\xae\xaf\xb1", "\xf0\xb1\x8d\x90", "\xe0\xb3\xb3", "a\xe0\xb3\xb3",
    "\xf0\x9d\x8b\x80\xf0\x9d\x8b\x81", "\xf0\x9e\x93\xb0\xf0\x9e\x93\xb1", "\xf0\x91\xbc\x80x",
    "x\xf0\x91\xbc\x84y", "\xf0\x91\xbc\x84!", "ab\xe0\xb3\xb3" "cd", "\xf0\xae\xaf\xb0" "a",
    "a\xf0\x9d\x8b\x80\xf0\x9d\x8b\x81" "b", "z\xf0\x9e\x93\x90", "q\xf0\x91\xbc\x80\xf0\x91\xbc\x84",
    /* code, URLs, mixed */
    "int main() {", "x+=1;", "https://example.com/a?b=c", "foo_bar", "camelCase", "w048",
    "7tuijk", "dsdfhu", "3.14159", "1,000,000", "$100", "C++", "a-b", "e-mail", "#hashtag",
    "@user", "🦙.cpp", "y'all",
};

static const char *const emoji[] = {
    "😀", "👍", "👍🏽", "👋🏿", "👨‍👩‍👧‍👦", "🏳️‍🌈", "❤️", "🦙", "🇺🇸", "🇯🇵", "😶‍🌫️", "🧑🏻‍💻", "✅",
    "🚀", "☺", "©", "™", "\xe2\x80\x8d", "\xef\xb8\x8f",
};

static const char *const contractions[] = {
    "'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'Re", "'rE", "'VE", "'M",
    "'LL", "'lL", "'D", "'x", "'", "''", "it's", "DON'T", "we've", "I'M", "you'll", "she'd",
    "'s'", "' s",
};

static const char *const punct[] = {
    ".", ",", "!", "?", ";", ":", "(", ")", "[", "]", "{", "}", "<", ">", "\"", "`", "~", "@",
    "#", "$", "%", "^", "&", "*", "-", "_", "=", "+", "/", "\\", "|", "...", "—", "–", "«»",
    "¿", "¡", "。", "，", "、", "…", "•", "→", "∑", "€", "£", "¥", "§", "¶", "°", "±",
    "!!!", "?!", ")(", "''", "\"\"",
};

static const char *const special_text[] = {
    "<|im_start|>", "<|im_end|>", "<|endoftext|>", "[PAD151650]", "[PAD151646]", "[PAD151935]",
    "<|im_start", "im_start|>", "<|", "|>", "<|im_", "[PAD1516", "<|endoftext|",
    "<<|im_end|>>", "<|im_start|><|im_end|>", "<|im_start|>system\n", "|<|endoftext|>|",
    "[[PAD151700]]", "<|endoftext|>\n", " <|im_end|>",
};

static const char *const invalid[] = {
    "\xff", "\xfe", "\x80", "\xbf", "\xc3", "\xe2\x82", "\xc0\xaf", "\xc1\xbf", "\xe0\x80\xaf",
    "\xed\xa0\x80", "\xed\xbf\xbf", "\xf0\x9f\x98", "\xf8\x88\x80\x80\x80", "\xc3\x28",
    "\xe2\x28\xa1", "\xf0\x28\x8c\xbc", "\x80\x80\x80", "\xc0\x8a", "\xf0\x80\x80\x80",
};

/* 4-byte forms above U+10FFFF: llama.cpp aborts on them, vt refuses. */
static const char *const above_max[] = { "\xf4\x90\x80\x80", "\xf5\x80\x80\x80", "\xf7\xbf\xbf\xbf" };

static const uint32_t spaces[] = { ' ', ' ', ' ', '\t', '\n', '\r', 0x0B, 0x0C, 0xA0, 0x85,
                                   0x3000, 0x2009, 0x180E, 0x200B, 0x2028, 0x1680 };

static void gen_piece(vt_rng *r, strbuf *b, int allow_above)
{
    switch (pick(r, 14)) {
    case 0: case 1: case 2:
        put(b, words[pick(r, ARRAY_LEN(words))]);
        break;
    case 3:
        put(b, emoji[pick(r, ARRAY_LEN(emoji))]);
        break;
    case 4: { /* digit runs, ASCII and not */
        static const uint32_t zero[] = { '0', '0', '0', 0x660, 0x966, 0xFF10, 0x1D7CE };
        uint32_t z = zero[pick(r, ARRAY_LEN(zero))], n = 1 + pick(r, pick(r, 2) ? 8 : 40);
        for (uint32_t i = 0; i < n; i++)
            put_cp(b, z + pick(r, 10));
        if (pick(r, 4) == 0)
            put(b, pick(r, 2) ? "²³" : "Ⅻ½");
        break;
    }
    case 5: case 6: { /* whitespace runs */
        uint32_t n = 1 + pick(r, pick(r, 3) ? 4 : pick(r, 4) ? 24 : 300);
        for (uint32_t i = 0; i < n; i++) {
            if (pick(r, 8) == 0)
                put(b, "\r\n");
            else
                put_cp(b, spaces[pick(r, ARRAY_LEN(spaces))]);
        }
        break;
    }
    case 7:
        put(b, contractions[pick(r, ARRAY_LEN(contractions))]);
        break;
    case 8:
        put(b, punct[pick(r, ARRAY_LEN(punct))]);
        break;
    case 9:
        put(b, special_text[pick(r, ARRAY_LEN(special_text))]);
        break;
    case 10:
        if (allow_above && pick(r, 2) == 0)
            put(b, above_max[pick(r, ARRAY_LEN(above_max))]);
        else
            put(b, invalid[pick(r, ARRAY_LEN(invalid))]);
        break;
    case 11: { /* random code points, assigned or not */
        static const uint32_t lo[] = { 0x20, 0xA0, 0x370, 0x590, 0x900, 0xE00, 0x1100, 0x2000,
                                       0x3000, 0x4E00, 0xAC00, 0xE000, 0xFB00, 0x10000, 0x1F300,
                                       0x20000, 0xE0000 };
        uint32_t base = lo[pick(r, ARRAY_LEN(lo))], n = 1 + pick(r, 4);
        for (uint32_t i = 0; i < n; i++) {
            uint32_t c = base + pick(r, 0x300);
            if (c >= 0xD800 && c <= 0xDFFF)
                c = 0xFFFD;
            put_cp(b, c);
        }
        break;
    }
    case 12: { /* control characters and ASCII soup */
        static const char soup[] = "\x01\x02\x1b\x7f\x1f abcXYZ09'-_.,\n\t";
        uint32_t n = 1 + pick(r, 12);
        for (uint32_t i = 0; i < n; i++)
            put_bytes(b, &soup[pick(r, sizeof soup - 1)], 1);
        if (pick(r, 6) == 0)
            put_bytes(b, "\0", 1);
        break;
    }
    default: { /* long ASCII word or letter run */
        uint32_t n = 1 + pick(r, 30);
        for (uint32_t i = 0; i < n; i++)
            put_cp(b, (pick(r, 3) ? 'a' : 'A') + pick(r, 26));
        break;
    }
    }
}

/* The next generated string (fixed seed: the same strings on every run) of
 * up to max_pieces pieces. */
static void gen_string(vt_rng *r, strbuf *b, uint32_t max_pieces)
{
    b->n = 0;
    put_bytes(b, "", 0);
    int allow_above = pick(r, 10) == 0;
    uint32_t n = 1 + pick(r, max_pieces);
    for (uint32_t i = 0; i < n; i++) {
        if (i && pick(r, 2))
            put(b, " ");
        gen_piece(r, b, allow_above);
    }
}

/* The last N_LONG strings are long (hundreds of pieces). */
enum { N_STRINGS = 1200, N_LONG = 8, MAX_IDS = 1 << 16, MAX_BYTES = 1 << 18 };

static int contains(const char *s, const char *needle) { return strstr(s, needle) != NULL; }

/* s as C-escaped ASCII, for failure messages (the input may hold any byte). */
static const char *escaped(const char *s, size_t n)
{
    static char buf[1024];
    size_t o = 0;
    for (size_t i = 0; i < n && o + 8 < sizeof buf; i++) {
        uint8_t c = (uint8_t)s[i];
        if (c >= 0x20 && c < 0x7F && c != '\\')
            buf[o++] = (char)c;
        else
            o += (size_t)snprintf(buf + o, sizeof buf - o, "\\x%02x", c);
    }
    buf[o] = '\0';
    return buf;
}

/* Strict UTF-8 (no overlong forms, surrogates or values above U+10FFFF). */
static int valid_utf8(const char *s, size_t n)
{
    const uint8_t *b = (const uint8_t *)s;
    for (size_t i = 0; i < n;) {
        uint32_t c = b[i];
        size_t k = c < 0x80 ? 0 : (c & 0xE0) == 0xC0 ? 1 : (c & 0xF0) == 0xE0 ? 2 : (c & 0xF8) == 0xF0 ? 3 : 9;
        if (k == 9 || k >= n - i)
            return 0;
        c &= k ? 0x3F >> k : 0x7F;
        for (size_t j = 1; j <= k; j++) {
            if ((b[i + j] & 0xC0) != 0x80)
                return 0;
            c = (c << 6) | (b[i + j] & 0x3F);
        }
        static const uint32_t min[4] = { 0, 0x80, 0x800, 0x10000 };
        if (c < min[k] || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
            return 0;
        i += k + 1;
    }
    return 1;
}

static void agree(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/ggml-vocab-%s.gguf", VT_VOCAB_DIR, name);
    vocab v = open_vocab(path);
    vt_error err;
    vt_error_clear(&err);
    vt_llama_vocab *ll = vt_llama_vocab_open(path, NULL, &err);
    cr_assert_not_null(ll, "%s", err.msg);
    cr_assert_eq(vt_llama_vocab_n_tokens(ll), vt_tokenizer_n_vocab(v.t));

    /* every piece agrees, special tokens rendered */
    static char a[MAX_BYTES], b[MAX_BYTES];
    for (int32_t id = 0; id < vt_tokenizer_n_vocab(v.t); id++) {
        size_t n_vt, n_ll;
        const char *p = vt_tokenizer_token_piece(v.t, id, &n_vt);
        cr_assert_eq(vt_llama_token_to_piece(ll, id, 1, a, sizeof a, &n_ll, &err), VT_OK, "%s", err.msg);
        cr_assert(n_vt == n_ll && memcmp(p, a, n_ll) == 0, "%s: piece of token %d differs", name, id);
    }

    static int32_t ids_vt[MAX_IDS], ids_ll[MAX_IDS];
    vt_rng r;
    vt_rng_seed(&r, 0x70c1e5);
    strbuf s = { 0 };
    size_t n_strings = 0, n_compared = 0, n_tokens = 0, n_invalid = 0, n_refused = 0,
           n_special_hits = 0;
    for (int i = 0; i < N_STRINGS; i++) {
        gen_string(&r, &s, i < N_STRINGS - N_LONG ? 14 : 800);
        n_strings++;
        int add_special = i & 1;
        int refuse = 0;
        for (size_t k = 0; k < ARRAY_LEN(above_max); k++)
            refuse |= memmem(s.p, s.n, above_max[k], strlen(above_max[k])) != NULL;
        for (int parse_special = 0; parse_special < 2; parse_special++) {
            size_t n_vt, n_ll;
            vt_error_clear(&err);
            int rc = vt_tokenize(v.t, s.p, s.n, add_special, parse_special, ids_vt, MAX_IDS, &n_vt, &err);
            if (refuse) {
                cr_assert_eq(rc, VT_EINPUT, "%s: string %d: expected a refusal", name, i);
                cr_assert(contains(err.msg, "U+10FFFF"), "%s: string %d: %s", name, i, err.msg);
                n_refused += parse_special;
                continue;
            }
            cr_assert_eq(rc, VT_OK, "%s: string %d: %s", name, i, err.msg);
            rc = vt_llama_tokenize(ll, s.p, s.n, add_special, parse_special, ids_ll, MAX_IDS, &n_ll, &err);
            cr_assert_eq(rc, VT_OK, "%s", err.msg);
            if (n_vt != n_ll || memcmp(ids_vt, ids_ll, n_vt * sizeof *ids_vt) != 0) {
                size_t k = 0;
                while (k < n_vt && k < n_ll && ids_vt[k] == ids_ll[k])
                    k++;
                cr_assert_fail("%s: string %d (parse_special %d) [%zu bytes] \"%s\": %zu vs %zu "
                               "tokens, first difference at %zu: vt %d, llama.cpp %d",
                               name, i, parse_special, s.n, escaped(s.p, s.n), n_vt, n_ll, k,
                               k < n_vt ? ids_vt[k] : -1, k < n_ll ? ids_ll[k] : -1);
            }
            for (size_t k = 0; k < n_vt; k++)
                n_special_hits += (vt_tokenizer_token_attr(v.t, ids_vt[k]) &
                                   (VT_TOKEN_ATTR_CONTROL | VT_TOKEN_ATTR_USER_DEFINED)) != 0;
            size_t na, nb;
            cr_assert_eq(vt_detokenize(v.t, ids_vt, n_vt, a, sizeof a, &na, &err), VT_OK, "%s", err.msg);
            cr_assert_eq(vt_llama_detokenize(ll, ids_ll, n_ll, b, sizeof b, &nb, &err), VT_OK, "%s", err.msg);
            cr_assert(na == nb && memcmp(a, b, na) == 0, "%s: string %d \"%s\": detokenization differs",
                      name, i, escaped(s.p, s.n));
            n_compared++;
            n_tokens += n_vt;
        }
        n_invalid += !refuse && !valid_utf8(s.p, s.n);
    }
    free(s.p);
    cr_assert_gt(n_refused, 0, "no string exercised the refusal");
    cr_assert_gt(n_invalid, 0);
    cr_assert_gt(n_special_hits, 0);
    fprintf(stderr, "tokenizer agreement %s: %zu strings x parse_special on/off: %zu tokenizations "
            "identical to llama.cpp (%zu tokens, %zu special), %zu strings with invalid UTF-8, "
            "%zu refused (above U+10FFFF), detokenization identical\n", name, n_strings,
            n_compared, n_tokens, n_special_hits, n_invalid, n_refused);
    vt_llama_vocab_free(ll);
    close_vocab(v);
}

Test(tokenizer, agrees_with_llamacpp_qwen2, .timeout = 600) { agree("qwen2"); }
Test(tokenizer, agrees_with_llamacpp_qwen35, .timeout = 600) { agree("qwen35"); }

/* ---- API contract ---- */

Test(tokenizer, refuses_other_pre_tokenizers)
{
    vt_error err;
    vt_error_clear(&err);
    vt_gguf *g = vt_gguf_open(VOCAB("llama-bpe"), &err);
    cr_assert_not_null(g, "%s", err.msg);
    cr_assert_null(vt_tokenizer_open(g, &err));
    cr_assert_eq(err.code, VT_EINPUT);
    cr_assert(contains(err.msg, "tokenizer.ggml.pre") && contains(err.msg, "'llama-bpe'"), "%s", err.msg);
    vt_gguf_free(g);

    vt_error_clear(&err);
    g = vt_gguf_open(VOCAB("llama-spm"), &err);
    cr_assert_not_null(g, "%s", err.msg);
    cr_assert_null(vt_tokenizer_open(g, &err));
    cr_assert(contains(err.msg, "tokenizer.ggml.model") && contains(err.msg, "'llama'"), "%s", err.msg);
    vt_gguf_free(g);
}

Test(tokenizer, api_contract)
{
    vocab v = open_vocab(VOCAB("qwen2"));
    vt_error err;
    vt_error_clear(&err);
    cr_assert_str_eq(vt_tokenizer_pre(v.t), "qwen2");
    cr_assert_eq(vt_tokenizer_n_vocab(v.t), 151936);
    cr_assert_eq(vt_tokenizer_eos(v.t), 151643);
    cr_assert_eq(vt_tokenizer_bos(v.t), 151643);
    /* found by text: llama.cpp takes one of these in hash order, vt the lowest id */
    cr_assert(vt_tokenizer_eot(v.t) == 151643 || vt_tokenizer_eot(v.t) == 151645);
    cr_assert_eq(vt_tokenizer_add_bos(v.t), 0);
    size_t len;
    const char *txt = vt_tokenizer_token_text(v.t, 220, &len);
    cr_assert(len == 2 && memcmp(txt, "\xc4\xa0", 2) == 0); /* "Ġ" */
    txt = vt_tokenizer_token_piece(v.t, 220, &len);
    cr_assert(len == 1 && txt[0] == ' ');
    cr_assert_null(vt_tokenizer_token_text(v.t, -1, &len));
    cr_assert_null(vt_tokenizer_token_text(v.t, 151936, &len));
    cr_assert_eq(vt_tokenizer_token_attr(v.t, 151644), VT_TOKEN_ATTR_CONTROL);
    cr_assert_eq(vt_tokenizer_token_attr(v.t, 151650), VT_TOKEN_ATTR_USER_DEFINED);

    /* special parsing: control tokens only with parse_special, user-defined always */
    const char *s = "<|im_start|>hi[PAD151650]";
    int32_t ids[64];
    size_t n;
    cr_assert_eq(vt_tokenize(v.t, s, strlen(s), 0, 1, ids, 64, &n, &err), VT_OK, "%s", err.msg);
    cr_assert_eq(n, 3);
    cr_assert_eq(ids[0], 151644);
    cr_assert_eq(ids[2], 151650);
    cr_assert_eq(vt_tokenize(v.t, s, strlen(s), 0, 0, ids, 64, &n, &err), VT_OK, "%s", err.msg);
    cr_assert_gt(n, 3);
    cr_assert_eq(ids[n - 1], 151650);

    /* too small a buffer: refused, with the size needed */
    size_t need;
    cr_assert_eq(vt_tokenize(v.t, "Hello world", 11, 0, 0, ids, 1, &need, &err), VT_EINPUT);
    cr_assert_eq(need, 2);
    cr_assert_eq(vt_tokenize(v.t, "", 0, 1, 1, ids, 0, &n, &err), VT_OK);
    cr_assert_eq(n, 0);
    char out[4];
    int32_t hw[2] = { 9707, 1879 }; /* "Hello", " world" */
    cr_assert_eq(vt_detokenize(v.t, hw, 2, out, sizeof out, &n, &err), VT_EINPUT);
    cr_assert_eq(n, 11);
    cr_assert_eq(vt_detokenize(v.t, (int32_t[]){ 151936 }, 1, out, sizeof out, &n, &err), VT_EINPUT);

    /* invalid UTF-8 read as llama.cpp reads it: a bad byte is U+FFFD, an overlong '/' is '/' */
    int32_t a[16], b[16];
    size_t na, nb;
    cr_assert_eq(vt_tokenize(v.t, "a\xff" "b", 3, 0, 0, a, 16, &na, &err), VT_OK);
    cr_assert_eq(vt_tokenize(v.t, "a\xef\xbf\xbd" "b", 5, 0, 0, b, 16, &nb, &err), VT_OK);
    cr_assert(na == nb && memcmp(a, b, na * sizeof *a) == 0);
    cr_assert_eq(vt_tokenize(v.t, "\xc0\xaf", 2, 0, 0, a, 16, &na, &err), VT_OK);
    cr_assert_eq(vt_tokenize(v.t, "/", 1, 0, 0, b, 16, &nb, &err), VT_OK);
    cr_assert(na == nb && memcmp(a, b, na * sizeof *a) == 0);
    cr_assert_eq(vt_tokenize(v.t, "x\xf4\x90\x80\x80", 5, 0, 0, a, 16, &na, &err), VT_EINPUT);
    cr_assert(contains(err.msg, "byte 1") && contains(err.msg, "U+10FFFF"), "%s", err.msg);

    /* long runs stay linear and within PCRE2's limits */
    size_t big = 1 << 20;
    char *text = malloc(big);
    for (size_t i = 0; i < big; i++)
        text[i] = i % 4096 == 4095 ? '\n' : ' ';
    int32_t *many = malloc(big * sizeof *many);
    cr_assert_eq(vt_tokenize(v.t, text, big, 0, 0, many, big, &n, &err), VT_OK, "%s", err.msg);
    cr_assert_gt(n, 0);
    char *back = malloc(big);
    cr_assert_eq(vt_detokenize(v.t, many, n, back, big, &na, &err), VT_OK, "%s", err.msg);
    cr_assert(na == big && memcmp(back, text, big) == 0);
    free(back);
    free(many);
    free(text);
    close_vocab(v);
}

/* The one refusal follows llama.cpp: text holding a 4-byte form above U+10FFFF
 * makes it throw out of llama_tokenize, which terminates the process. */
Test(tokenizer, llamacpp_aborts_where_vt_refuses)
{
    vt_error err;
    vt_error_clear(&err);
    vt_llama_vocab *ll = vt_llama_vocab_open(VOCAB("qwen2"), NULL, &err);
    cr_assert_not_null(ll, "%s", err.msg);
    for (size_t k = 0; k < ARRAY_LEN(above_max); k++) {
        fflush(NULL);
        pid_t pid = fork();
        cr_assert_geq(pid, 0);
        if (pid == 0) {
            setenv("GGML_NO_BACKTRACE", "1", 1); /* ggml would attach gdb */
            int fd = open("/dev/null", O_WRONLY);
            dup2(fd, 2);
            int32_t ids[16];
            size_t n;
            vt_llama_tokenize(ll, above_max[k], strlen(above_max[k]), 0, 0, ids, 16, &n, &err);
            _exit(0);
        }
        int st;
        cr_assert_eq(waitpid(pid, &st, 0), pid);
        cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "above_max[%zu]: llama.cpp did not abort", k);
    }
    vt_llama_vocab_free(ll);
}
