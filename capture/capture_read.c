/* Fast, strict reader of captures and prefix scores: see capture_read.h. */
#include "capture_read.h"
#include "../common/vt_input.h"
#include "../common/vt_utf8.h"

#include "canonical_json.h"
#include "capture.h"
#include "json_schema.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* capture/vt.capture.schema.json, embedded by the build (CMakeLists.txt). */
extern const unsigned char vt_capture_schema_json[];
extern const unsigned long vt_capture_schema_json_len;

/* Parsed on first use and kept; a parse that ran out of memory is tried
 * again by the next caller (pthread_once would keep the failure). */
static pthread_mutex_t schema_lock = PTHREAD_MUTEX_INITIALIZER;
static cJSON *schema_root;

const cJSON *vt_capture_schema(void)
{
    pthread_mutex_lock(&schema_lock);
    if (!schema_root)
        schema_root = cJSON_ParseWithLength((const char *)vt_capture_schema_json, vt_capture_schema_json_len);
    const cJSON *r = schema_root;
    pthread_mutex_unlock(&schema_lock);
    return r;
}

/* ------------------------------------------------------------ numbers */

static const double pow10_tab[23] = { 1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                      1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22 };

static inline int is_digit(char c) { return (unsigned char)(c - '0') < 10; }

/* The exact test: the text is what vt_canonical_number writes for its value. */
static int number_exact(const char *s, size_t n, double *value)
{
    char buf[400], canon[32];
    if (n >= sizeof buf)
        return 0;
    memcpy(buf, s, n);
    buf[n] = '\0';
    char *e;
    double v = strtod(buf, &e);
    if (e != buf + n || !isfinite(v))
        return 0;
    vt_canonical_number(v, canon);
    if (strcmp(canon, buf) != 0)
        return 0;
    if (value)
        *value = v;
    return 1;
}

/* A JSON number at p, in canonical form: the end of it, or NULL. value (may
 * be NULL) gets it. The common shapes are recognised without printing: an
 * integer of at most 15 digits; a fixed-point number with at most 9
 * significant digits, the last one not 0, and at most 3 zeros after "0."
 * (printf %.9g switches to an exponent below 1e-4); an exponent form
 * d[.ddd]e+-XX with at most 9 significant digits and an exponent that %.9g
 * would use (below -4, or from 16 on, where the value is no exact integer
 * below 2^53). A decimal of at most 9 significant digits survives the trip
 * through a double and %.9g unchanged, so each of those is canonical.
 * Anything else is decided by the exact test. Values: one correctly
 * rounded multiplication or division of exact operands (m < 2^53,
 * 10^k with k <= 22), which is what strtod returns.
 *
 * Sentinel: the text after p must hold a byte that is not part of a number
 * before the buffer ends (a document ends with "}\n": parse_doc checks it
 * first), so the digit loops need no bounds. */
static inline const char *number_scan(const char *p, double *value)
{
    const char *s = p;
    const int neg = *p == '-';
    p += neg;
    const char *ip = p;
    uint64_t m = 0;
    if (*p == '0') {
        p++;
    } else if (is_digit(*p)) {
        do
            m = m * 10 + (uint64_t)(*p++ - '0');
        while (is_digit(*p));
    } else {
        return NULL;
    }
    const int intlen = *ip == '0' ? 0 : (int)(p - ip);
    int nd = intlen, lead0 = 0, fracdigits = 0, fast;
    double v = 0;
    if (*p == '.') {
        const char *f = ++p;
        if (!intlen)
            while (*p == '0')
                p++;
        lead0 = (int)(p - f);
        const char *sd = p;
        while (is_digit(*p))
            m = m * 10 + (uint64_t)(*p++ - '0');
        fracdigits = (int)(p - f);
        nd += (int)(p - sd);
        if (fracdigits == 0)
            return NULL;
        if (*p != 'e' && *p != 'E') {
            fast = p[-1] != '0' && nd >= 1 && nd <= 9 && lead0 <= 3;
            if (fast && value)
                v = (double)m / pow10_tab[fracdigits];
            goto done;
        }
    }
    if (*p == 'e' || *p == 'E') {
        const char *es = p++;
        int exsign = 0, ex = 0;
        if (*p == '+' || *p == '-')
            exsign = *p++ == '-' ? -1 : 1;
        const char *d = p;
        while (is_digit(*p)) {
            if (ex < 100000)
                ex = ex * 10 + (*p - '0');
            p++;
        }
        int exdigits = (int)(p - d);
        if (exdigits == 0)
            return NULL;
        int x = exsign * ex;
        int digits_ok = ex < 10 ? exdigits == 2 && d[0] == '0' : exdigits <= 3 && d[0] != '0';
        int mant_ok = intlen == 1 && nd <= 9 && (fracdigits == 0 || es[-1] != '0');
        fast = *es == 'e' && exsign && digits_ok && mant_ok && ((x <= -5 && x >= -300) || (x >= 16 && x <= 300));
        if (fast && value) {
            int k = x - fracdigits;
            if (k >= 0 && k <= 22)
                v = (double)m * pow10_tab[k];
            else if (k < 0 && k >= -22)
                v = (double)m / pow10_tab[-k];
            else
                fast = 0; /* 10^k not exact: the exact test gives the value */
        }
        goto done;
    }
    fast = nd <= 15 && !(neg && intlen == 0);
    v = (double)m;
done:
    if (!fast) {
        if (!number_exact(s, (size_t)(p - s), &v))
            return NULL;
        if (value)
            *value = v;
        return p;
    }
    if (value)
        *value = neg ? -v : v;
    return p;
}

int vt_doc_number_canonical(const char *s, size_t n, double *value)
{
    char buf[400 + 1];
    if (n >= 400)
        return 0;
    memcpy(buf, s, n);
    buf[n] = '\0'; /* the sentinel number_scan stops at */
    const char *e = number_scan(buf, value);
    return e == buf + n;
}

/* A non-negative integer (canonical: no sign, no leading zero, no fraction
 * or exponent) below 2^31. Same sentinel as number_scan. */
static inline const char *uint_scan(const char *p, int32_t *out)
{
    int64_t v;
    if (*p == '0') {
        v = 0;
        p++;
    } else if (is_digit(*p)) {
        const char *s = p;
        v = 0;
        do
            v = v * 10 + (*p++ - '0');
        while (is_digit(*p) && p - s < 11);
        if (v > INT32_MAX)
            return NULL;
    } else {
        return NULL;
    }
    if (is_digit(*p) || *p == '.' || *p == 'e' || *p == 'E')
        return NULL;
    *out = (int32_t)v;
    return p;
}

/* ------------------------------------------------------------ strings */

static inline int hexval(char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1; }

/* A canonical JSON string starting at the quote: the end after the closing
 * quote, or NULL. Canonical: only \" \\ \b \f \n \r \t and \u00xx (lower
 * case, for the other bytes below 0x20 but 0) as escapes, valid UTF-8. */
static const char *string_scan(const char *p, const char *end)
{
    if (p >= end || *p != '"')
        return NULL;
    p++;
    while (p < end) {
        unsigned char c = (unsigned char)*p;
        if (c == '"')
            return p + 1;
        if (c < 0x20)
            return NULL;
        if (c == '\\') {
            if (end - p < 2)
                return NULL;
            char e = p[1];
            if (e == '"' || e == '\\' || e == 'b' || e == 'f' || e == 'n' || e == 'r' || e == 't') {
                p += 2;
                continue;
            }
            if (e != 'u' || end - p < 6 || p[2] != '0' || p[3] != '0' || hexval(p[4]) < 0 || hexval(p[5]) < 0)
                return NULL;
            int v = hexval(p[4]) * 16 + hexval(p[5]);
            /* \u0000 is refused: the text would end there for every C reader. */
            if (v == 0 || v >= 0x20 || v == '\b' || v == '\f' || v == '\n' || v == '\r' || v == '\t')
                return NULL;
            p += 6;
            continue;
        }
        if (c < 0x80) {
            p++;
            continue;
        }
        int len = (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
        if (!len || end - p < len || !vt_utf8_valid(p, (size_t)len))
            return NULL;
        p += len;
    }
    return NULL;
}

/* The text of a canonical string [s, e) (quotes included), unescaped, cut
 * to cap - 1 bytes. */
static void string_copy(const char *s, const char *e, char *out, size_t cap)
{
    static const char from[] = "\"\\bfnrt", to[] = "\"\\\b\f\n\r\t";
    size_t n = 0;
    for (const char *p = s + 1; p < e - 1 && n + 1 < cap; p++) {
        if (*p != '\\') {
            out[n++] = *p;
        } else if (p[1] == 'u') {
            out[n++] = (char)(hexval(p[4]) * 16 + hexval(p[5]));
            p += 5;
        } else {
            out[n++] = to[strchr(from, p[1]) - from];
            p++;
        }
    }
    out[n] = '\0';
}

/* Any JSON value, only its extent (the members besides runs are checked
 * afterwards by cJSON and the canonical writer). */
static const char *value_skip(const char *p, const char *end)
{
    int depth = 0;
    while (p < end) {
        char c = *p;
        if (c == '"') {
            p++;
            while (p < end && *p != '"')
                p += *p == '\\' ? 2 : 1;
            if (p >= end)
                return NULL;
            p++;
        } else if (c == '{' || c == '[') {
            depth++;
            p++;
        } else if (c == '}' || c == ']') {
            if (depth == 0)
                return p;
            depth--;
            p++;
        } else if (c == ',' && depth == 0) {
            return p;
        } else {
            p++;
        }
        if (depth == 0 && (c == '"' || c == '}' || c == ']'))
            return p;
    }
    return NULL;
}

/* --------------------------------------------------------- the parser */

/* Whitespace where canonical JSON has none: the likeliest reason a hand
 * edited or re-printed capture fails, said as such. */
static int is_space(const char *at, const char *end)
{
    return at < end && (*at == ' ' || *at == '\n' || *at == '\t' || *at == '\r');
}

static const char canonical_hint[] = "canonical JSON (no whitespace), as vt-capture writes it";

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 1;
    size_t c = *cap ? *cap : 4096;
    while (c < need)
        c *= 2;
    void *q = realloc(*p, c * elem);
    if (!q)
        return 0;
    *p = q;
    *cap = c;
    return 1;
}

static inline int lit(const char **pp, const char *end, const char *s, size_t n)
{
    if ((size_t)(end - *pp) >= n && memcmp(*pp, s, n) == 0) {
        *pp += n;
        return 1;
    }
    return 0;
}
#define LIT(pp, end, s) lit(pp, end, s, sizeof(s) - 1)

/* One run as read: its data in its chunk's pools. */
typedef struct run_rec {
    int32_t prompt, repeat, n;
    int ok;
    int64_t off;
    size_t at;   /* byte offset of the run, for messages */
    char *error; /* the error text, when one is recorded (rare) */
    int has_sha;
    unsigned char logits_sha[32]; /* logits_sha256, when recorded */
} run_rec;

/* A stretch of the runs array, parsed on its own thread: every run in it
 * kept (tokens, and for prefix scores log-probs and argmax) in its pools;
 * order, repeats and determinism are checked when the chunks are merged. */
typedef struct chunk {
    const char *path;
    const char *base, *end; /* the document */
    const char *begin;      /* its first run's '{' */
    const char *stop;       /* the ',' before the next chunk's first run; NULL: up to the array's ']' */
    const char *done;       /* after parsing: where it stopped (the ']' for the last chunk) */
    int prefix;
    int topk;               /* vt.prefix-scores/4: runs carry bound[] */
    int32_t run0;           /* the index of its first run; -1: not known (only "runs[?]" in messages) */
    /* where we are, for messages */
    int32_t run;
    const char *field;
    int32_t i;
    run_rec *runs;
    int32_t n_runs;
    size_t cap_runs;
    int32_t *tokens, *argmax;
    double *logprobs, *argmax_logprobs;
    unsigned char *bound; /* topk: 1 where logprobs is an upper bound */
    int64_t n_tok;
    size_t cap_tok;
    int32_t max_id; /* the largest token id anywhere in it */
    vt_error err;
    int rc;
} chunk;

static int fail_at(chunk *c, const char *at, const char *expected)
{
    if (is_space(at, c->end))
        expected = canonical_hint;
    char run[24], where[160];
    if (c->run0 >= 0)
        snprintf(run, sizeof run, "%d", c->run0 + c->run);
    else
        snprintf(run, sizeof run, "?");
    if (c->run < 0)
        snprintf(where, sizeof where, "runs");
    else if (!c->field)
        snprintf(where, sizeof where, "runs[%s]", run);
    else if (c->i < 0)
        snprintf(where, sizeof where, "runs[%s].%s", run, c->field);
    else
        snprintf(where, sizeof where, "runs[%s].%s[%d]", run, c->field, c->i);
    c->rc = vt_error_set(&c->err, VT_EINPUT, "%s: offset %zu: field %s: expected %s", c->path,
                         (size_t)(at - c->base), where, expected);
    return c->rc;
}

static int oom(chunk *c)
{
    c->rc = vt_error_set(&c->err, VT_EINPUT, "%s: out of memory", c->path);
    return c->rc;
}

/* Pools sized together: tokens and (prefix) the three score arrays. */
static int pool_reserve(chunk *c, int64_t need)
{
    if ((size_t)need <= c->cap_tok)
        return 1;
    size_t cap = c->cap_tok;
    if (!grow((void **)&c->tokens, &cap, (size_t)need, sizeof *c->tokens))
        return 0;
    if (c->prefix) {
        size_t c2 = c->cap_tok, c3 = c->cap_tok, c4 = c->cap_tok;
        if (!grow((void **)&c->logprobs, &c2, cap, sizeof *c->logprobs) ||
            !grow((void **)&c->argmax_logprobs, &c3, cap, sizeof *c->argmax_logprobs) ||
            !grow((void **)&c->argmax, &c4, cap, sizeof *c->argmax))
            return 0;
        size_t c5 = c->cap_tok;
        if (c->topk && !grow((void **)&c->bound, &c5, cap, 1))
            return 0;
    }
    c->cap_tok = cap;
    return 1;
}

/* An array of token ids, appended to a pool (tokens or argmax) from the
 * chunk's current end. */
static const char *ids_parse(chunk *c, const char *p, int argmax_pool, int32_t *out_n)
{
    const char *end = c->end;
    if (!LIT(&p, end, "[")) {
        fail_at(c, p, "an array of token ids");
        return NULL;
    }
    int32_t k = 0;
    if (*p == ']') {
        p++;
    } else {
        for (;;) {
            int32_t v;
            c->i = k;
            const char *q = uint_scan(p, &v);
            if (!q) {
                fail_at(c, p, "a token id (a non-negative integer below 2^31, canonical)");
                return NULL;
            }
            if (v > c->max_id)
                c->max_id = v;
            if (!pool_reserve(c, c->n_tok + k + 1)) {
                oom(c);
                return NULL;
            }
            (argmax_pool ? c->argmax : c->tokens)[c->n_tok + k] = v;
            k++;
            p = q;
            if (*p == ',') {
                p++;
                continue;
            }
            if (*p == ']') {
                p++;
                break;
            }
            fail_at(c, p, "',' or ']' after a token id");
            return NULL;
        }
    }
    c->i = -1;
    *out_n = k;
    return p;
}

/* An array of log-probs, appended to a pool from the chunk's current end. */
static const char *nums_parse(chunk *c, const char *p, int argmax_pool, int32_t *out_n)
{
    const char *end = c->end;
    if (!LIT(&p, end, "[")) {
        fail_at(c, p, "an array of log-probs");
        return NULL;
    }
    int32_t k = 0;
    if (*p == ']') {
        p++;
    } else {
        for (;;) {
            double v;
            c->i = k;
            const char *q = number_scan(p, &v);
            if (!q) {
                fail_at(c, p, "a number in canonical form (%.9g, as vt-capture writes it)");
                return NULL;
            }
            if (!pool_reserve(c, c->n_tok + k + 1)) {
                oom(c);
                return NULL;
            }
            (argmax_pool ? c->argmax_logprobs : c->logprobs)[c->n_tok + k] = v;
            k++;
            p = q;
            if (*p == ',') {
                p++;
                continue;
            }
            if (*p == ']') {
                p++;
                break;
            }
            fail_at(c, p, "',' or ']' after a log-prob");
            return NULL;
        }
    }
    c->i = -1;
    *out_n = k;
    return p;
}

static int is_hex64(const char *p, const char *end)
{
    if (end - p < 65 || p[64] != '"')
        return 0;
    for (int i = 0; i < 64; i++)
        if (hexval(p[i]) < 0)
            return 0;
    return 1;
}

/* The scores just parsed (the chunk's pools from n_tok on), checked, not
 * clamped: a gap below 0 is no gap, it is a scorer that did not report
 * its argmax (or a document someone edited). */
static int scores_consistent(chunk *c, int32_t prompt, int32_t n, const char *at)
{
    const int64_t o = c->n_tok;
    for (int32_t i = 0; i < n; i++) {
        double lp = c->logprobs[o + i], alp = c->argmax_logprobs[o + i];
        char why[200];
        c->i = i;
        if (!(lp <= 0.0) || !(alp <= 0.0)) {
            c->field = lp <= 0.0 ? "argmax_logprobs" : "logprobs";
            snprintf(why, sizeof why, "a log-prob <= 0 (prompt %d, position %d: %.9g)", prompt, i,
                     lp <= 0.0 ? alp : lp);
            return !fail_at(c, at, why);
        }
        if (alp < lp - VT_DOC_LOGPROB_SLACK) {
            c->field = "argmax_logprobs";
            snprintf(why, sizeof why, "the argmax's log-prob >= the scored token's (prompt %d, position %d: %.9g < "
                     "%.9g): an argmax below the token is no argmax", prompt, i, alp, lp);
            return !fail_at(c, at, why);
        }
        if (c->argmax[o + i] == c->tokens[o + i] && alp != lp) {
            c->field = "argmax_logprobs";
            snprintf(why, sizeof why, "%.9g, the scored token's log-prob, where the argmax is the scored token "
                     "(prompt %d, position %d: %.9g)", lp, prompt, i, alp);
            return !fail_at(c, at, why);
        }
    }
    c->i = -1;
    return 1;
}

/* /4's ,"bound":[...] at p: positions ascending in [0, nt), each where the
 * scored token is not the argmax (a token told is never a bound), marked in
 * the chunk's bound pool from n_tok on. */
static const char *bound_parse(chunk *c, const char *p, int32_t nt)
{
    const char *end = c->end;
    const int64_t o = c->n_tok;
    if (nt > 0)
        memset(c->bound + o, 0, (size_t)nt);
    c->field = "bound";
    c->i = -1;
    if (!LIT(&p, end, ",\"bound\":[")) {
        fail_at(c, p, "\"bound\" after argmax_logprobs (vt.prefix-scores/4)");
        return NULL;
    }
    int32_t last = -1;
    for (int k = 0; !LIT(&p, end, "]"); k++) {
        if (k && !LIT(&p, end, ",")) {
            fail_at(c, p, "',' or ']' in bound");
            return NULL;
        }
        c->i = k;
        int32_t v;
        const char *s = p;
        if (!(p = uint_scan(p, &v)) || v <= last || v >= nt) {
            fail_at(c, s, "positions ascending, each below the run's token count");
            return NULL;
        }
        if (c->argmax[o + v] == c->tokens[o + v]) {
            fail_at(c, s, "a position whose token is not the argmax (the argmax is always told)");
            return NULL;
        }
        c->bound[o + v] = 1;
        last = (int32_t)v;
    }
    c->i = -1;
    return p;
}

/* One run at p (its '{'), in the member order vt-capture writes:
 * prompt, repeat, status, error?, tokens, (logprobs, argmax,
 * argmax_logprobs when scoring), logits_sha256?. */
static const char *run_parse(chunk *c, const char *p)
{
    const char *end = c->end;
    c->field = NULL;
    c->i = -1;
    run_rec r = { .at = (size_t)(p - c->base), .off = c->n_tok };
    const char *q;
    if (!LIT(&p, end, "{\"prompt\":") || !(q = uint_scan(p, &r.prompt))) {
        fail_at(c, p, "{\"prompt\": a prompt index, ... (the member order vt-capture writes)");
        return NULL;
    }
    p = q;
    if (!LIT(&p, end, ",\"repeat\":") || !(q = uint_scan(p, &r.repeat))) {
        c->field = "repeat";
        fail_at(c, p, "\"repeat\": a non-negative integer after prompt");
        return NULL;
    }
    p = q;
    c->field = "status";
    if (LIT(&p, end, ",\"status\":\"ok\"")) {
        r.ok = 1;
    } else if (!LIT(&p, end, ",\"status\":\"error\"")) {
        fail_at(c, p, "\"status\": \"ok\" or \"error\"");
        return NULL;
    }
    if (LIT(&p, end, ",\"error\":")) {
        c->field = "error";
        const char *s = p;
        char msg[sizeof ((vt_doc_note *)0)->what];
        if (!(p = string_scan(p, end))) {
            fail_at(c, s, "a string in canonical form");
            return NULL;
        }
        string_copy(s, p, msg, sizeof msg);
        if (!(r.error = strdup(msg))) {
            oom(c);
            return NULL;
        }
    }
    /* From here on a failure must free r.error. */
    int32_t nt = 0;
    c->field = "tokens";
    if (!LIT(&p, end, ",\"tokens\":")) {
        fail_at(c, p, "\"tokens\" after status (and error)");
        goto fail;
    }
    if (!(p = ids_parse(c, p, 0, &nt)))
        goto fail;
    if (c->prefix) {
        int32_t n1 = 0, n2 = 0, n3 = 0;
        c->field = "logprobs";
        if (!LIT(&p, end, ",\"logprobs\":")) {
            fail_at(c, p, "\"logprobs\" after tokens");
            goto fail;
        }
        if (!(p = nums_parse(c, p, 0, &n1)))
            goto fail;
        c->field = "argmax";
        if (!LIT(&p, end, ",\"argmax\":")) {
            fail_at(c, p, "\"argmax\" after logprobs");
            goto fail;
        }
        if (!(p = ids_parse(c, p, 1, &n2)))
            goto fail;
        c->field = "argmax_logprobs";
        if (!LIT(&p, end, ",\"argmax_logprobs\":")) {
            fail_at(c, p, "\"argmax_logprobs\" after argmax");
            goto fail;
        }
        if (!(p = nums_parse(c, p, 1, &n3)))
            goto fail;
        if (n1 != nt || n2 != nt || n3 != nt) {
            c->field = n1 != nt ? "logprobs" : n2 != nt ? "argmax" : "argmax_logprobs";
            fail_at(c, p, "one entry per token in tokens, logprobs, argmax and argmax_logprobs");
            goto fail;
        }
        if (c->topk && !(p = bound_parse(c, p, nt)))
            goto fail;
        if (!scores_consistent(c, r.prompt, nt, p))
            goto fail;
    }
    c->field = NULL;
    c->i = -1;
    if (LIT(&p, end, ",\"logits_sha256\":\"")) {
        if (!is_hex64(p, end)) {
            c->field = "logits_sha256";
            fail_at(c, p, "64 lower-case hex digits");
            goto fail;
        }
        for (int b = 0; b < 32; b++)
            r.logits_sha[b] = (unsigned char)(hexval(p[2 * b]) * 16 + hexval(p[2 * b + 1]));
        r.has_sha = 1;
        p += 65;
    }
    if (!LIT(&p, end, "}")) {
        fail_at(c, p, "'}' after the run's last member (tokens, logprobs... when scoring, logits_sha256?; nothing else)");
        goto fail;
    }
    if ((size_t)c->n_runs == c->cap_runs && !grow((void **)&c->runs, &c->cap_runs, c->cap_runs + 1, sizeof *c->runs)) {
        oom(c);
        goto fail;
    }
    r.n = nt;
    c->runs[c->n_runs++] = r;
    c->n_tok += nt;
    return p;
fail:
    free(r.error);
    return NULL;
}

/* The runs of one chunk, from its first run to its stop. */
static void *chunk_parse(void *arg)
{
    chunk *c = arg;
    const char *p = c->begin;
    c->run = 0;
    if (!c->stop && *p == ']') { /* an empty runs array */
        c->done = p;
        return NULL;
    }
    for (;; c->run++) {
        if (!(p = run_parse(c, p)))
            return NULL;
        if (p == c->stop) {
            c->done = p;
            return NULL;
        }
        if (!c->stop && *p == ']') {
            c->done = p;
            return NULL;
        }
        if (*p != ',' || (c->stop && p > c->stop)) {
            c->field = NULL;
            fail_at(c, p, "',' or ']' after a run");
            return NULL;
        }
        p++;
    }
}

static void chunk_free(chunk *c)
{
    for (int32_t i = 0; i < c->n_runs; i++)
        free(c->runs[i].error);
    free(c->runs);
    free(c->tokens);
    free(c->argmax);
    free(c->logprobs);
    free(c->argmax_logprobs);
    free(c->bound);
    memset(c, 0, sizeof *c);
}

static void note(vt_doc_note *n, int32_t run, int32_t prompt, int32_t repeat, int32_t position, const char *what)
{
    if (n->run >= 0)
        return;
    n->run = run;
    n->prompt = prompt;
    n->repeat = repeat;
    n->position = position;
    snprintf(n->what, sizeof n->what, "%s", what);
}

/* Where repeat 0 of a prompt is, while merging. */
typedef struct ref0 {
    const chunk *c;
    const run_rec *r;
} ref0;

/* How a later repeat b differs from its repeat 0 a: the first position
 * where the tokens (or, scoring, the argmax) differ (-1: none), and whether
 * what is computed from the logits differs (logits_sha256, and scoring,
 * the log-probs): determinism's two claims, identical_tokens and
 * identical_logits, judged apart as vt-capture judges them. */
static int32_t run_diff(const chunk *ca, const run_rec *a, const chunk *cb, const run_rec *b, int prefix,
                        const char **field, int *logits_differ)
{
    int32_t n = a->n < b->n ? a->n : b->n, at = a->n != b->n ? n : -1;
    *field = "tokens";
    *logits_differ = a->n != b->n || a->has_sha != b->has_sha ||
                     memcmp(a->logits_sha, b->logits_sha, sizeof a->logits_sha) != 0;
    for (int32_t i = 0; i < n && at < 0; i++)
        if (ca->tokens[a->off + i] != cb->tokens[b->off + i])
            at = i;
    for (int32_t i = 0; prefix && i < n && at < 0; i++)
        if (ca->argmax[a->off + i] != cb->argmax[b->off + i])
            *field = "argmax", at = i;
    for (int32_t i = 0; prefix && i < n && !*logits_differ; i++)
        *logits_differ = ca->logprobs[a->off + i] != cb->logprobs[b->off + i] ||
                         ca->argmax_logprobs[a->off + i] != cb->argmax_logprobs[b->off + i];
    if (at < 0 && *logits_differ)
        *field = "logits_sha256", at = 0;
    return at;
}

/* The chunks, in order: runs in the order vt-capture writes them (repeat 0
 * of prompts 0..P-1, then repeat 1 of prompts 0..P-1, ...), each later
 * repeat compared with repeat 0, repeat 0's streams copied into the doc. */
static int runs_merge(vt_doc *d, chunk *chunks, int n_chunks, const char *base, vt_error *err)
{
    const int prefix = d->kind == VT_DOC_PREFIX;
    int32_t P = -1, k = 0;
    d->runs_identical_tokens = d->runs_identical_logits = 1;
    size_t cap = 0;
    ref0 *refs = NULL;
    int rc = VT_OK;
    for (int ci = 0; ci < n_chunks && rc == VT_OK; ci++) {
        const chunk *c = &chunks[ci];
        for (int32_t ri = 0; ri < c->n_runs; ri++, k++) {
            const run_rec *r = &c->runs[ri];
            if (P < 0 && r->repeat != 0 && k > 0)
                P = k;
            int32_t want_prompt = P < 0 ? k : k % P, want_repeat = P < 0 ? 0 : k / P;
            if (r->prompt != want_prompt || r->repeat != want_repeat) {
                rc = vt_error_set(err, VT_EINPUT, "%s: offset %zu: field runs[%d]: expected prompt %d repeat %d (runs "
                                  "in the order vt-capture writes them), not prompt %d repeat %d", d->path, r->at, k,
                                  want_prompt, want_repeat, r->prompt, r->repeat);
                break;
            }
            d->n_positions_all += r->n;
            if (r->ok && !r->has_sha && d->version >= 2) {
                rc = vt_error_set(err, VT_EINPUT, "%s: offset %zu: field runs[%d].logits_sha256: missing: expected "
                                  "the SHA-256 of an ok run's logits (what determinism is re-checked on)", d->path,
                                  r->at, k);
                break;
            }
            if (!r->ok)
                d->runs_identical_tokens = d->runs_identical_logits = 0;
            if (!r->ok)
                note(&d->error_run, k, r->prompt, r->repeat, -1, r->error ? r->error : "(no error text)");
            else if (r->error)
                note(&d->error_after, k, r->prompt, r->repeat, -1, r->error);
            if (r->repeat == 0) {
                if ((size_t)r->prompt >= cap && !grow((void **)&refs, &cap, (size_t)r->prompt + 1, sizeof *refs)) {
                    rc = vt_error_set(err, VT_EINPUT, "%s: out of memory", d->path);
                    break;
                }
                refs[r->prompt] = (ref0){ c, r };
                continue;
            }
            const ref0 *z = &refs[r->prompt];
            const char *field;
            int32_t at;
            int logits_differ;
            if (!z->r->ok || !r->ok) {
                note(&d->differs, k, r->prompt, r->repeat, 0, "status");
            } else if ((at = run_diff(z->c, z->r, c, r, prefix, &field, &logits_differ)) >= 0) {
                note(&d->differs, k, r->prompt, r->repeat, at, field);
                if (strcmp(field, "logits_sha256") != 0)
                    d->runs_identical_tokens = 0;
                if (logits_differ)
                    d->runs_identical_logits = 0;
            }
        }
    }
    if (rc == VT_OK) {
        if (P < 0)
            P = k;
        if (P > 0 && k % P != 0)
            rc = vt_error_set(err, VT_EINPUT, "%s: field runs: %d runs: expected every prompt's repeats (a whole "
                              "number of repeats of %d prompts)", d->path, k, P);
    }
    /* Repeat 0 of every prompt, in one set of pools. */
    int64_t total = 0;
    for (int32_t p = 0; rc == VT_OK && p < P; p++)
        total += refs[p].r->n;
    if (rc == VT_OK) {
        size_t n = (size_t)(total ? total : 1);
        d->off = malloc((size_t)(P ? P : 1) * sizeof *d->off);
        d->n = malloc((size_t)(P ? P : 1) * sizeof *d->n);
        d->tokens = malloc(n * sizeof *d->tokens);
        if (prefix) {
            d->logprobs = malloc(n * sizeof *d->logprobs);
            d->argmax_logprobs = malloc(n * sizeof *d->argmax_logprobs);
            d->argmax = malloc(n * sizeof *d->argmax);
            if (d->version >= 4)
                d->bound = calloc(n, 1);
        }
        if (!d->off || !d->n || !d->tokens || (prefix && (!d->logprobs || !d->argmax_logprobs || !d->argmax)) ||
            (prefix && d->version >= 4 && !d->bound))
            rc = vt_error_set(err, VT_EINPUT, "%s: out of memory", d->path);
    }
    int64_t off = 0;
    for (int32_t p = 0; rc == VT_OK && p < P; p++) {
        const chunk *c = refs[p].c;
        const run_rec *r = refs[p].r;
        d->off[p] = off;
        d->n[p] = r->n;
        if (r->n == 0) /* a failed run, or no positions: its chunk may have no pools */
            continue;
        memcpy(d->tokens + off, c->tokens + r->off, (size_t)r->n * sizeof *d->tokens);
        if (prefix) {
            memcpy(d->logprobs + off, c->logprobs + r->off, (size_t)r->n * sizeof *d->logprobs);
            memcpy(d->argmax_logprobs + off, c->argmax_logprobs + r->off, (size_t)r->n * sizeof *d->argmax_logprobs);
            memcpy(d->argmax + off, c->argmax + r->off, (size_t)r->n * sizeof *d->argmax);
            if (d->bound)
                memcpy(d->bound + off, c->bound + r->off, (size_t)r->n);
        }
        off += r->n;
    }
    d->n_prompts = P;
    d->repeats = P > 0 ? k / P : 0;
    d->n_positions = off;
    free(refs);
    (void)base;
    return rc;
}

/* How many threads parse a document's runs: one per CPU for large ones. */
static int chunk_count(size_t len)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    size_t by_size = len / ((size_t)32 << 20);
    int n = (int)(by_size < (size_t)(cpus > 0 ? cpus : 1) ? by_size : (size_t)cpus);
    return n < 1 ? 1 : n > 32 ? 32 : n;
}

/* The runs array at p (its '['): parsed in chunks split at run boundaries
 * (",{\"prompt\":" occurs nowhere else in canonical JSON: quotes inside
 * strings are escaped), one thread each, then merged. On any failure the
 * runs are parsed again on one thread, for a message that names the run.
 * Returns the end (after ']'), or NULL with err set. *max_id: the largest
 * token id. */
static const char *runs_parse(vt_doc *d, const char *base, const char *end, const char *p, int threads,
                              int32_t *max_id, vt_error *err)
{
    if (p >= end || *p != '[') {
        vt_error_set(err, VT_EINPUT, "%s: offset %zu: field runs: expected %s", d->path, (size_t)(p - base),
                     is_space(p, end) ? canonical_hint : "an array of runs");
        return NULL;
    }
    const char *first = p + 1;
    int n = threads > 0 ? (threads < 32 ? threads : 32) : chunk_count((size_t)(end - p));
    for (int attempt = 0; attempt < 2; attempt++) {
        chunk chunks[32];
        pthread_t th[32];
        int started[32] = { 0 };
        memset(chunks, 0, sizeof chunks);
        /* Boundaries: the first ",{"prompt":" after each equal share. */
        const char *starts[33];
        int m = 0;
        starts[m++] = first;
        static const char sep[] = ",{\"prompt\":";
        for (int i = 1; i < n; i++) {
            const char *from = first + (size_t)(end - first) / (size_t)n * (size_t)i;
            if (from <= starts[m - 1])
                continue;
            const char *b = memmem(from, (size_t)(end - from), sep, sizeof sep - 1);
            if (!b)
                break;
            starts[m++] = b + 1;
        }
        for (int i = 0; i < m; i++) {
            chunk *c = &chunks[i];
            c->path = d->path;
            c->base = base;
            c->end = end;
            c->begin = starts[i];
            c->stop = i + 1 < m ? starts[i + 1] - 1 : NULL;
            c->prefix = d->kind == VT_DOC_PREFIX;
            c->topk = c->prefix && d->version >= 4;
            c->run0 = i == 0 ? 0 : -1;
            c->i = -1;
            if (i > 0)
                started[i] = pthread_create(&th[i], NULL, chunk_parse, c) == 0;
        }
        chunk_parse(&chunks[0]);
        for (int i = 1; i < m; i++) {
            if (started[i])
                pthread_join(th[i], NULL);
            else
                chunk_parse(&chunks[i]);
        }
        int failed = -1;
        for (int i = 0; i < m && failed < 0; i++)
            if (chunks[i].rc || !chunks[i].done)
                failed = i;
        const char *after = NULL;
        if (failed < 0) {
            *max_id = 0;
            for (int i = 0; i < m; i++)
                *max_id = chunks[i].max_id > *max_id ? chunks[i].max_id : *max_id;
            if (runs_merge(d, chunks, m, base, err) == VT_OK)
                after = chunks[m - 1].done + 1;
        } else if (m == 1 || failed == 0) {
            /* The run index is known: this message is the one to give. */
            if (err)
                *err = chunks[failed].err;
        }
        for (int i = 0; i < m; i++)
            chunk_free(&chunks[i]);
        if (failed < 0 || m == 1 || failed == 0)
            return after;
        n = 1; /* again, on one thread, for the message */
    }
    return NULL;
}

/* ------------------------------------------------------------ hashing */

typedef struct hash_job {
    const char *base;
    size_t body, len; /* bytes before the seal member; the whole file */
    vt_sha256_hex seal, file;
    int ok;
} hash_job;

/* The seal's input is the body plus "}"; the file is the body plus the
 * seal member: one pass over the body, the context copied for the two ends. */
static void *hash_run(void *arg)
{
    hash_job *j = arg;
    EVP_MD_CTX *a = EVP_MD_CTX_new(), *b = EVP_MD_CTX_new();
    unsigned char md[32];
    unsigned int n;
    j->ok = a && b && EVP_DigestInit_ex(a, EVP_sha256(), NULL) == 1;
    for (size_t off = 0; j->ok && off < j->body; off += (size_t)1 << 24) {
        size_t m = j->body - off < ((size_t)1 << 24) ? j->body - off : (size_t)1 << 24;
        j->ok = EVP_DigestUpdate(a, j->base + off, m) == 1;
    }
    j->ok = j->ok && EVP_MD_CTX_copy_ex(b, a) == 1 && EVP_DigestUpdate(a, "}", 1) == 1 &&
            EVP_DigestFinal_ex(a, md, &n) == 1;
    if (j->ok)
        vt_sha256_hex_of(md, &j->seal);
    j->ok = j->ok && EVP_DigestUpdate(b, j->base + j->body, j->len - j->body) == 1 &&
            EVP_DigestFinal_ex(b, md, &n) == 1;
    if (j->ok)
        vt_sha256_hex_of(md, &j->file);
    EVP_MD_CTX_free(a);
    EVP_MD_CTX_free(b);
    return NULL;
}

/* ------------------------------------------------------------ reading */

/* What the determinism member says against what the runs show: a capture
 * that claims identical repeats its runs contradict is not evidence. */
static int determinism_check(vt_doc *d, vt_error *err)
{
    const cJSON *det = cJSON_GetObjectItemCaseSensitive(d->meta, "determinism");
    const int claim_t = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(det, "identical_tokens"));
    const int claim_l = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(det, "identical_logits"));
    const cJSON *fm = cJSON_GetObjectItemCaseSensitive(det, "first_mismatch");
    /* The first claim the runs contradict, and what it claims. */
    const int tokens_wrong = claim_t != d->runs_identical_tokens;
    const int claimed = tokens_wrong ? claim_t : claim_l;
    if (tokens_wrong || claim_l != d->runs_identical_logits)
        return vt_error_set(err, VT_EINPUT, "%s: field determinism.%s: %s: expected %s, what the runs show%s%s",
                            d->path, tokens_wrong ? "identical_tokens" : "identical_logits",
                            claimed ? "true" : "false", claimed ? "false" : "true",
                            d->differs.run >= 0 ? ": runs differ from their repeat 0 in " : "",
                            d->differs.run >= 0 ? d->differs.what : "");
    if (!fm != (d->differs.run < 0))
        return vt_error_set(err, VT_EINPUT, "%s: field determinism.first_mismatch: %s: expected %s, what the runs "
                            "show", d->path, fm ? "present" : "missing", fm ? "none" : "the first run that differs");
    if (fm && (cJSON_GetObjectItemCaseSensitive(fm, "prompt")->valuedouble != d->differs.prompt ||
               cJSON_GetObjectItemCaseSensitive(fm, "repeat")->valuedouble != d->differs.repeat))
        return vt_error_set(err, VT_EINPUT, "%s: field determinism.first_mismatch: prompt %g repeat %g: expected "
                            "prompt %d repeat %d, the first run that differs from its repeat 0", d->path,
                            cJSON_GetObjectItemCaseSensitive(fm, "prompt")->valuedouble,
                            cJSON_GetObjectItemCaseSensitive(fm, "repeat")->valuedouble, d->differs.prompt,
                            d->differs.repeat);
    return VT_OK;
}

/* A side file's path: its recorded name, relative to the document's
 * directory. malloc'd, or NULL (out of memory). */
static char *side_path(const vt_doc *d, const char *name)
{
    const char *slash = strrchr(d->path, '/');
    size_t dl = slash && name[0] != '/' ? (size_t)(slash - d->path) + 1 : 0;
    char *path = malloc(dl + strlen(name) + 1);
    if (path) {
        memcpy(path, d->path, dl);
        strcpy(path + dl, name);
    }
    return path;
}

static int side_paths(vt_doc *d, int no_side_files, vt_error *err)
{
    static const char *const members[2] = { "topk_file", "logits_file" };
    char **out[2] = { &d->topk_path, &d->logits_path };
    for (int i = 0; i < 2; i++) {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(d->meta, members[i]),
                                                             "name");
        /* A name from inside the document: a plain file name beside it, never
         * a path (issue 19: "../x" or "/etc/passwd" would point vt anywhere). */
        if (cJSON_IsString(name) && !vt_input_plain_name(name->valuestring)) {
            char shown[208];
            vt_ascii_line(shown, sizeof shown, name->valuestring);
            return vt_error_set(err, VT_EINPUT, "%s: field %s.name: \"%s\": expected a plain file name in the "
                                "document's directory (no '/', not '.' or '..', no control character)", d->path,
                                members[i], shown);
        }
        if (cJSON_IsString(name) && !(*out[i] = side_path(d, name->valuestring)))
            return vt_error_set(err, VT_EINPUT, "%s: out of memory", d->path);
        /* Beside the document means there, not a link to elsewhere. */
        struct stat ls;
        if (*out[i] && !no_side_files && lstat(*out[i], &ls) == 0 && S_ISLNK(ls.st_mode))
            return vt_error_set(err, VT_EINPUT, "%s: field %s: %s: a symbolic link: expected a regular file beside "
                                "the document", d->path, members[i], *out[i]);
    }
    return VT_OK;
}

/* The full-logits side file, there with the size and SHA-256 recorded. */
static int logits_check(vt_doc *d, vt_error *err)
{
    const cJSON *lf = cJSON_GetObjectItemCaseSensitive(d->meta, "logits_file");
    double size = cJSON_GetObjectItemCaseSensitive(lf, "size")->valuedouble;
    const char *want = cJSON_GetObjectItemCaseSensitive(lf, "sha256")->valuestring;
    vt_sha256_hex got;
    uint64_t got_size = 0;
    vt_error e;
    vt_error_clear(&e);
    if (vt_sha256_file(d->logits_path, &got, &got_size, &e) != VT_OK)
        return vt_error_set(err, VT_EINPUT, "%s: field logits_file: %s: expected the side file the document names "
                            "(%s)", d->path, d->logits_path, e.msg);
    if ((double)got_size != size || strcmp(got.hex, want) != 0)
        return vt_error_set(err, VT_EINPUT, "%s: field logits_file: %s: size %llu, sha256 %s: expected size %.17g, "
                            "sha256 %s, as the document records", d->path, d->logits_path,
                            (unsigned long long)got_size, got.hex, size, want);
    return VT_OK;
}

/* The capture's top-k side file (topk_file), mapped and checked whole
 * against what the capture says of it: present iff logprobs_top_k > 0,
 * named by plain file name in the capture's directory. */
static int topk_open(vt_doc *d, int no_side_files, vt_error *err)
{
    const cJSON *tf = cJSON_GetObjectItemCaseSensitive(d->meta, "topk_file");
    const cJSON *set = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(d->meta, "settings"),
                                                        "resolved");
    double k = cJSON_GetObjectItemCaseSensitive(set, "logprobs_top_k")->valuedouble;
    double nv = cJSON_GetObjectItemCaseSensitive(
                    cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(d->meta, "model"), "gguf"),
                    "n_vocab")->valuedouble;
    if (cJSON_IsNull(tf) != (k == 0))
        return vt_error_set(err, VT_EINPUT, "%s: field topk_file: %s: expected %s with settings.resolved."
                            "logprobs_top_k %g", d->path, cJSON_IsNull(tf) ? "null" : "a file",
                            k == 0 ? "null" : "a file", k);
    if (k == 0)
        return VT_OK;
    if (k > nv || k > (1 << 20))
        return vt_error_set(err, VT_EINPUT, "%s: field settings.resolved.logprobs_top_k: %g: expected at most "
                            "model.gguf.n_vocab %g", d->path, k, nv);
    double size = cJSON_GetObjectItemCaseSensitive(tf, "size")->valuedouble;
    double want = VT_TOPK_HEADER + (double)d->n_positions_all * k * VT_TOPK_ENTRY;
    if (size != want)
        return vt_error_set(err, VT_EINPUT, "%s: field topk_file.size: %.17g: expected %.17g (16 + %lld positions x "
                            "%g entries x 8)", d->path, size, want, (long long)d->n_positions_all, k);
    if (no_side_files)
        return VT_OK;
    return vt_topk_file_open(d->topk_path, (int32_t)k, d->n_positions_all, (int32_t)nv,
                             cJSON_GetObjectItemCaseSensitive(tf, "sha256")->valuestring, &d->topk, err);
}

static const char SEAL_MEMBER[] = ",\"seal\":\"";
enum { SEAL_TAIL = 9 + 64 + 3 }; /* ,"seal":" HEX "}\n */

static int parse_doc(vt_doc *d, const char *base, size_t len, vt_doc_kind want, int threads, int no_side_files,
                     vt_error *err)
{
    const char *end = base + len;
    const char *want_schema = want == VT_DOC_CAPTURE ? VT_CAPTURE_SCHEMA : VT_PREFIX_SCORES_SCHEMA;
    const char *old_schema = want == VT_DOC_CAPTURE ? VT_CAPTURE_SCHEMA_V1 : VT_PREFIX_SCORES_SCHEMA_V1;
    const char *mid_schema = want == VT_DOC_CAPTURE ? NULL : VT_PREFIX_SCORES_SCHEMA_V2;
    /* The start and the end: {"schema":"...", ... ,"seal":"HEX"}\n */
    const char *p = base;
    if (!LIT(&p, end, "{\"schema\":")) {
        if (len && base[0] != '{')
            return vt_error_set(err, VT_EINPUT, "%s: offset 0: expected a JSON object (a %s)", d->path, want_schema);
        return vt_error_set(err, VT_EINPUT, "%s: offset 1: field schema: expected it first, in canonical JSON (no "
                            "whitespace), as vt-capture writes it", d->path);
    }
    const char *s = p;
    if (!(p = string_scan(p, end)))
        return vt_error_set(err, VT_EINPUT, "%s: offset %zu: field schema: expected %s", d->path, (size_t)(s - base),
                            is_space(s, end) ? canonical_hint : "a string");
    char schema[64];
    string_copy(s, p, schema, sizeof schema);
    if (strcmp(schema, want_schema) == 0)
        d->version = mid_schema ? 3 : 2;
    else if (want == VT_DOC_PREFIX && strcmp(schema, VT_PREFIX_SCORES_SCHEMA_TOPK) == 0)
        d->version = 4;
    else if (mid_schema && strcmp(schema, mid_schema) == 0)
        d->version = 2;
    else if (strcmp(schema, old_schema) == 0)
        d->version = 1;
    else
        return vt_error_set(err, VT_EINPUT, "%s: field schema: \"%s\": expected \"%s\" (or %s\"%s\")", d->path,
                            schema, want_schema,
                            mid_schema ? "\"" VT_PREFIX_SCORES_SCHEMA_TOPK "\", \"" VT_PREFIX_SCORES_SCHEMA_V2 "\", " : "",
                            old_schema);
    if (len < SEAL_TAIL + 20 || memcmp(end - SEAL_TAIL, SEAL_MEMBER, 9) != 0 || !is_hex64(end - SEAL_TAIL + 9, end) ||
        memcmp(end - 3, "\"}\n", 3) != 0)
        return vt_error_set(err, VT_EINPUT, "%s: offset %zu: field seal: expected the document to end with "
                            "\"seal\":\"<64 hex digits>\"}, then a newline, as vt-capture writes it", d->path,
                            len > SEAL_TAIL ? len - SEAL_TAIL : 0);
    memcpy(d->seal.hex, end - SEAL_TAIL + 9, 64);
    d->seal.hex[64] = '\0';

    /* Hash on another thread while parsing (inline for small files). */
    hash_job hj = { base, len - SEAL_TAIL, len, { "" }, { "" }, 0 };
    pthread_t th;
    int threaded = len >= ((size_t)4 << 20) && pthread_create(&th, NULL, hash_run, &hj) == 0;
    if (!threaded)
        hash_run(&hj);

    int32_t max_id = 0;
    const char *runs_start = NULL, *runs_end = NULL;
    int rc = VT_OK;
    d->kind = want;
    while (rc == VT_OK) {
        /* p is after a member's value */
        if (p < end && *p == '}')
            break;
        if (!LIT(&p, end, ",")) {
            rc = vt_error_set(err, VT_EINPUT, "%s: offset %zu: expected %s", d->path, (size_t)(p - base),
                              is_space(p, end) ? canonical_hint : "',' or '}' after a member");
            break;
        }
        const char *ks = p;
        if (!(p = string_scan(p, end)) || !LIT(&p, end, ":")) {
            const char *at = p ? p : ks;
            rc = vt_error_set(err, VT_EINPUT, "%s: offset %zu: expected %s", d->path, (size_t)(at - base),
                              is_space(at, end) ? canonical_hint : "a member name and ':'");
            break;
        }
        if ((size_t)(p - ks) == 7 && memcmp(ks, "\"runs\":", 7) == 0) {
            if (runs_start) {
                rc = vt_error_set(err, VT_EINPUT, "%s: offset %zu: field runs: expected it once", d->path,
                                  (size_t)(ks - base));
                break;
            }
            runs_start = p;
            if (!(p = runs_parse(d, base, end, p, threads, &max_id, err))) {
                rc = VT_EINPUT;
                break;
            }
            runs_end = p;
        } else {
            const char *v = p;
            if (!(p = value_skip(p, end))) {
                rc = vt_error_set(err, VT_EINPUT, "%s: offset %zu: expected a JSON value", d->path, (size_t)(v - base));
                break;
            }
        }
    }
    if (rc == VT_OK && p != end - 2)
        rc = vt_error_set(err, VT_EINPUT, "%s: offset %zu: expected the end of the document", d->path,
                          (size_t)(p - base));
    if (rc == VT_OK && !runs_start)
        rc = vt_error_set(err, VT_EINPUT, "%s: field runs: missing: expected the runs", d->path);

    /* Everything but runs: parsed, canonical, schema, workload seal. */
    char *mtext = NULL;
    size_t mlen = 0;
    if (rc == VT_OK) {
        size_t a = (size_t)(runs_start - base), b = (size_t)(end - 1 - runs_end);
        mlen = a + 2 + b;
        if (!(mtext = malloc(mlen + 1)))
            rc = vt_error_set(err, VT_EINPUT, "%s: out of memory", d->path);
        else {
            memcpy(mtext, base, a);
            memcpy(mtext + a, "[]", 2);
            memcpy(mtext + a + 2, runs_end, b);
            mtext[mlen] = '\0';
        }
    }
    if (rc == VT_OK) {
        const char *pend = NULL;
        d->meta = cJSON_ParseWithLengthOpts(mtext, mlen, &pend, 0);
        if (!d->meta || pend != mtext + mlen) {
            const char *at = cJSON_GetErrorPtr();
            size_t off = at && at >= mtext && at <= mtext + mlen ? (size_t)(at - mtext) : 0;
            if (off > (size_t)(runs_start - base))
                off += (size_t)(runs_end - runs_start) - 2;
            rc = vt_error_set(err, VT_EINPUT, "%s: offset %zu: expected JSON", d->path, off);
        }
    }
    if (rc == VT_OK) {
        vt_error e;
        vt_error_clear(&e);
        size_t cn;
        char *canon = vt_canonical_json(d->meta, &cn, &e);
        if (!canon) {
            rc = vt_error_set(err, VT_EINPUT, "%s: %s", d->path, e.msg);
        } else if (cn != mlen || memcmp(canon, mtext, mlen) != 0) {
            size_t i = 0;
            while (i < cn && i < mlen && canon[i] == mtext[i])
                i++;
            if (i > (size_t)(runs_start - base))
                i += (size_t)(runs_end - runs_start) - 2;
            rc = vt_error_set(err, VT_EINPUT, "%s: offset %zu: expected canonical JSON (no whitespace, numbers as "
                              "%%.9g, minimal escapes), as vt-capture writes it", d->path, i);
        }
        free(canon);
    }
    free(mtext);
    if (rc == VT_OK) {
        const cJSON *root = vt_capture_schema();
        static const char *const defs[2][3] = {
            { "#/$defs/capture_v1", "#/$defs/capture", "" },
            { "#/$defs/prefix_scores_v1", "#/$defs/prefix_scores_v2", "#/$defs/prefix_scores" }
        };
        /* /4 is /3 with runs[].bound: one definition (the runs are checked by the parser). */
        const int vi = d->version > 3 ? 3 : d->version;
        const cJSON *sub = root ? vt_json_schema_at(root, defs[want == VT_DOC_PREFIX][vi - 1]) : NULL;
        vt_error e;
        vt_error_clear(&e);
        if (!sub)
            rc = vt_error_set(err, VT_EINPUT, "capture schema: not available (out of memory, or a build problem)");
        else if (vt_json_schema_check(root, sub, d->meta, &e) != VT_OK)
            rc = vt_error_set(err, VT_EINPUT, "%s: %s", d->path, e.msg);
    }
    /* Prefix scores before /3 were all computed in one batched pass. */
    d->shape = VT_SHAPE_BATCHED;
    if (rc == VT_OK && want == VT_DOC_PREFIX && d->version >= 3 &&
        !vt_score_shape_parse(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(d->meta, "shape")), &d->shape))
        rc = vt_error_set(err, VT_EINPUT, "%s: field shape: expected replay or batched", d->path);
    if (rc == VT_OK) {
        /* The runs against the rest: prompts, repeats, vocabulary. */
        const cJSON *prompts = cJSON_GetObjectItemCaseSensitive(d->meta, "prompts");
        const cJSON *set = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(d->meta, "settings"),
                                                            "resolved");
        const cJSON *reps = cJSON_GetObjectItemCaseSensitive(set, "repetitions");
        const cJSON *det = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(d->meta, "determinism"),
                                                            "repeats");
        const cJSON *nv = cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(d->meta, "model"), "gguf"), "n_vocab");
        int np = cJSON_GetArraySize(prompts);
        if (np < 1)
            rc = vt_error_set(err, VT_EINPUT, "%s: field prompts: expected at least one prompt", d->path);
        else if (d->n_prompts != np)
            rc = vt_error_set(err, VT_EINPUT, "%s: field runs: runs for %d prompts: expected one per prompt of the %d "
                              "in prompts, each repeat", d->path, d->n_prompts, np);
        else if (reps->valuedouble != d->repeats)
            rc = vt_error_set(err, VT_EINPUT, "%s: field runs: %d repeats of each prompt: expected %g, "
                              "settings.resolved.repetitions", d->path, d->repeats, reps->valuedouble);
        else if (det->valuedouble != d->repeats)
            rc = vt_error_set(err, VT_EINPUT, "%s: field determinism.repeats: %g: expected %d, the runs' repeats",
                              d->path, det->valuedouble, d->repeats);
        else if (max_id >= nv->valuedouble)
            rc = vt_error_set(err, VT_EINPUT, "%s: field runs: token id %d: expected ids below model.gguf.n_vocab %g",
                              d->path, max_id, nv->valuedouble);
        /* Each prompt's ids below the vocabulary, and its sha256 theirs
         * (little-endian int32, capture.h). */
        int i = 0;
        unsigned char *buf = NULL;
        size_t cap = 0;
        for (const cJSON *pr = prompts ? prompts->child : NULL; rc == VT_OK && pr; pr = pr->next, i++) {
            const cJSON *tk = cJSON_GetObjectItemCaseSensitive(pr, "tokens");
            size_t n = 0, need = (size_t)cJSON_GetArraySize(tk) * 4 + 1;
            if (need > cap && !grow((void **)&buf, &cap, need, 1)) {
                rc = vt_error_set(err, VT_EINPUT, "%s: out of memory", d->path);
                break;
            }
            for (const cJSON *t = tk->child; t; t = t->next) {
                if (t->valuedouble >= nv->valuedouble) {
                    rc = vt_error_set(err, VT_EINPUT, "%s: field prompts[%d].tokens: id %g: expected ids below "
                                      "model.gguf.n_vocab %g", d->path, i, t->valuedouble, nv->valuedouble);
                    break;
                }
                uint32_t u = (uint32_t)t->valuedouble;
                for (int b = 0; b < 4; b++)
                    buf[n++] = (unsigned char)(u >> (8 * b));
            }
            vt_sha256_hex h;
            const cJSON *sha = cJSON_GetObjectItemCaseSensitive(pr, "sha256");
            if (rc == VT_OK && (vt_sha256_buffer(buf, n, &h) != 0 || strcmp(h.hex, sha->valuestring) != 0))
                rc = vt_error_set(err, VT_EINPUT, "%s: field prompts[%d].sha256: %s: expected %s, the SHA-256 of its "
                                  "tokens", d->path, i, sha->valuestring, h.hex);
        }
        free(buf);
    }
    if (rc == VT_OK) {
        vt_error e;
        vt_error_clear(&e);
        cJSON *w = vt_capture_workload(d->meta);
        const cJSON *ws = cJSON_GetObjectItemCaseSensitive(d->meta, "workload_seal");
        vt_sha256_hex h;
        if (!w || vt_canonical_sha256(w, &h, &e) != VT_OK)
            rc = vt_error_set(err, VT_EINPUT, "%s: field workload_seal: cannot be recomputed: %s", d->path, e.msg);
        else if (strcmp(h.hex, ws->valuestring) != 0)
            rc = vt_error_set(err, VT_EINPUT, "%s: field workload_seal: %s: expected %s, the recomputed one", d->path,
                              ws->valuestring, h.hex);
        else
            d->workload_seal = h;
        cJSON_Delete(w);
    }
    if (threaded)
        pthread_join(th, NULL);
    if (rc == VT_OK && !hj.ok)
        rc = vt_error_set(err, VT_EINPUT, "%s: SHA-256 failed", d->path);
    if (rc == VT_OK && strcmp(hj.seal.hex, d->seal.hex) != 0)
        rc = vt_error_set(err, VT_EINPUT, "%s: field seal: %s: expected %s, the recomputed one", d->path, d->seal.hex,
                          hj.seal.hex);
    if (rc == VT_OK)
        rc = determinism_check(d, err);
    if (rc == VT_OK)
        rc = side_paths(d, no_side_files, err);
    if (rc == VT_OK && want == VT_DOC_CAPTURE)
        rc = topk_open(d, no_side_files, err);
    if (rc == VT_OK && d->logits_path && !no_side_files)
        rc = logits_check(d, err);
    d->file_sha256 = hj.file;
    d->size = len;
    return rc;
}

int vt_doc_read(const vt_doc_source *src, vt_doc *d, vt_error *err)
{
    memset(d, 0, sizeof *d);
    d->error_run.run = d->error_after.run = d->differs.run = -1;
    if (!(d->path = strdup(src->path ? src->path : "(document)")))
        return vt_error_set(err, VT_EINPUT, "out of memory");
    if (src->text) {
        int rc = parse_doc(d, src->text, src->len, src->kind, src->threads, src->no_side_files, err);
        if (rc)
            vt_doc_free(d);
        return rc;
    }
    int fd;
    vt_input_opts io = { .what = "a JSON document (a regular file)" };
    int orc = vt_input_open(src->path, &io, &fd, NULL, err);
    if (orc) {
        vt_doc_free(d);
        return orc;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int rc = vt_error_set(err, VT_EINPUT, "%s: cannot read: %s", src->path, strerror(errno));
        close(fd);
        vt_doc_free(d);
        return rc;
    }
    d->have_stat = 1;
    d->dev = (uint64_t)st.st_dev;
    d->ino = (uint64_t)st.st_ino;
    if (!S_ISREG(st.st_mode) || st.st_size == 0) {
        close(fd);
        vt_doc_free(d);
        return vt_error_set(err, VT_EINPUT, "%s: %s: expected a JSON document", src->path,
                            S_ISREG(st.st_mode) ? "empty" : "not a regular file");
    }
    size_t len = (size_t)st.st_size;
    void *m = mmap(NULL, len, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED) {
        vt_doc_free(d);
        return vt_error_set(err, VT_EINPUT, "%s: cannot map: %s", src->path, strerror(errno));
    }
    madvise(m, len, MADV_SEQUENTIAL);
    int rc = parse_doc(d, m, len, src->kind, src->threads, src->no_side_files, err);
    munmap(m, len);
    if (rc)
        vt_doc_free(d);
    return rc;
}

typedef struct read_job {
    const vt_doc_source *src;
    vt_doc *out;
    vt_error err;
    int rc;
} read_job;

static void *read_run(void *arg)
{
    read_job *j = arg;
    vt_error_clear(&j->err);
    j->rc = vt_doc_read(j->src, j->out, &j->err);
    return NULL;
}

int vt_doc_read_all(const vt_doc_source *src, vt_doc *out, int n, vt_error *err)
{
    read_job *jobs = calloc((size_t)n, sizeof *jobs);
    pthread_t *th = calloc((size_t)n, sizeof *th);
    int *started = calloc((size_t)n, sizeof *started);
    if (!jobs || !th || !started) {
        free(jobs);
        free(th);
        free(started);
        return vt_error_set(err, VT_EINPUT, "out of memory");
    }
    vt_capture_schema(); /* parsed once, before the threads */
    for (int i = 0; i < n; i++) {
        jobs[i] = (read_job){ &src[i], &out[i], { 0, "" }, 0 };
        started[i] = i > 0 && pthread_create(&th[i], NULL, read_run, &jobs[i]) == 0;
    }
    if (n > 0)
        read_run(&jobs[0]);
    for (int i = 1; i < n; i++) {
        if (started[i])
            pthread_join(th[i], NULL);
        else
            read_run(&jobs[i]);
    }
    int rc = VT_OK;
    for (int i = 0; i < n && rc == VT_OK; i++)
        if (jobs[i].rc) {
            rc = jobs[i].rc;
            if (err)
                *err = jobs[i].err;
        }
    if (rc)
        for (int i = 0; i < n; i++)
            if (!jobs[i].rc)
                vt_doc_free(&out[i]);
    free(jobs);
    free(th);
    free(started);
    return rc;
}

void vt_doc_free(vt_doc *d)
{
    if (!d)
        return;
    free(d->path);
    cJSON_Delete(d->meta);
    free(d->off);
    free(d->n);
    free(d->tokens);
    free(d->logprobs);
    free(d->argmax_logprobs);
    free(d->bound);
    free(d->argmax);
    vt_topk_file_close(&d->topk);
    free(d->topk_path);
    free(d->logits_path);
    memset(d, 0, sizeof *d);
    d->error_run.run = d->error_after.run = d->differs.run = -1;
}
