/* Strict JSON input: rules and reasons in vt_json.h.
 *
 * Two passes. A scanner checks the whole text against RFC 8259 and the
 * string rules, iteratively (no recursion on input depth), and remembers
 * where in the document it is so a fault names its field. cJSON then
 * builds the tree from the text the scanner accepted, and a walk of the
 * tree refuses duplicate names and infinite numbers; the offset of such a
 * fault comes from scanning again to the n-th name or value, counted in
 * document order as both passes visit them. */
#include "vt_json.h"
#include "vt_sort.h"

#include "vt_utf8.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct frame {
    char type;       /* '{' or '[' */
    long long index; /* arrays: the element being read */
    size_t name_off; /* objects: the current member name, as written */
    size_t name_len;
    int has_name;
} frame;

typedef struct scan {
    const char *s;
    size_t n, pos;
    frame st[VT_JSON_MAX_DEPTH];
    int depth;
    size_t tokens;   /* names and values begun so far, in document order */
    size_t want;     /* stop at this token (SIZE_MAX: scan it all) */
    size_t want_off;
    vt_json_fault *f;
} scan;

static void path_add(char *field, const char *s, size_t n)
{
    size_t have = strlen(field), cap = sizeof ((vt_json_fault *)0)->field;
    if (have + 4 >= cap)
        return;
    if (have + n + 4 >= cap) { /* keep the start; mark the cut */
        memcpy(field + have, s, cap - have - 4);
        memcpy(field + cap - 4, "...", 4);
        return;
    }
    memcpy(field + have, s, n);
    field[have + n] = '\0';
}

/* The dotted path of where the scanner stands: "files[0].name". */
static void scan_path(const scan *sc, char *field)
{
    field[0] = '\0';
    for (int i = 0; i < sc->depth; i++) {
        const frame *fr = &sc->st[i];
        if (fr->type == '[') {
            char ix[32];
            snprintf(ix, sizeof ix, "[%lld]", fr->index);
            path_add(field, ix, strlen(ix));
        } else if (fr->has_name) {
            if (field[0])
                path_add(field, ".", 1);
            path_add(field, sc->s + fr->name_off, fr->name_len > 64 ? 64 : fr->name_len);
        }
    }
}

static int fault(scan *sc, int kind, size_t off, const char *expected)
{
    vt_json_fault *f = sc->f;
    f->kind = kind;
    f->offset = off;
    f->expected = expected;
    scan_path(sc, f->field);
    return -1;
}

/* A byte where `expected` should be: said as a NUL or bad UTF-8 if it is one. */
static int unexpected(scan *sc, size_t off, const char *expected)
{
    if (off < sc->n && sc->s[off] == '\0')
        return fault(sc, VT_JSON_NUL, off, "JSON text without NUL bytes");
    if (off < sc->n && (unsigned char)sc->s[off] >= 0x80 && !vt_utf8_seq(sc->s + off, sc->n - off))
        return fault(sc, VT_JSON_UTF8, off, "UTF-8 text");
    return fault(sc, VT_JSON_SYNTAX, off, expected);
}

static void skip_ws(scan *sc)
{
    while (sc->pos < sc->n) {
        char c = sc->s[sc->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
            return;
        sc->pos++;
    }
}

static int hex4(const char *s, unsigned *out)
{
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = s[i];
        unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0')
                     : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                     : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10)
                                            : 16u;
        if (d > 15)
            return 0;
        v = v << 4 | d;
    }
    *out = v;
    return 1;
}

/* A string at sc->pos (its opening quote); leaves pos past the closing one. */
static int scan_string(scan *sc, int is_key)
{
    const char *s = sc->s;
    size_t n = sc->n, i = sc->pos + 1;
    for (;;) {
        if (i >= n)
            return fault(sc, VT_JSON_SYNTAX, i, "a closing '\"' of the string");
        unsigned char c = (unsigned char)s[i];
        if (c == '"') {
            sc->pos = i + 1;
            return 0;
        }
        if (c == '\\') {
            char e = i + 1 < n ? s[i + 1] : '\0';
            if (strchr("\"\\/bfnrt", e) && e) {
                i += 2;
                continue;
            }
            unsigned cp;
            if (e != 'u' || i + 6 > n || !hex4(s + i + 2, &cp))
                return fault(sc, VT_JSON_SYNTAX, i, "an escape \\\" \\\\ \\/ \\b \\f \\n \\r \\t or \\uXXXX");
            if (cp == 0)
                /* cJSON ends the string there: the rest would be dropped unseen. */
                return fault(sc, VT_JSON_STRING, i,
                             is_key ? "a member name without a \\u0000 escape (it would cut the name short)"
                                    : "a string without a \\u0000 escape (it would cut the string short)");
            if (cp >= 0xdc00 && cp <= 0xdfff)
                return fault(sc, VT_JSON_STRING, i, "a \\u escape that is not a lone low surrogate");
            if (cp >= 0xd800 && cp <= 0xdbff) {
                unsigned lo;
                if (i + 12 > n || s[i + 6] != '\\' || s[i + 7] != 'u' || !hex4(s + i + 8, &lo) || lo < 0xdc00 ||
                    lo > 0xdfff)
                    return fault(sc, VT_JSON_STRING, i, "a high surrogate escape followed by a low one");
                i += 12;
                continue;
            }
            i += 6;
            continue;
        }
        if (c == 0)
            return fault(sc, VT_JSON_STRING, i,
                         is_key ? "a member name without a NUL byte" : "a string without a NUL byte");
        if (c < 0x20)
            return fault(sc, VT_JSON_STRING, i, "a string without raw control bytes (escape them: \\n, \\t, \\u001f)");
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t k = vt_utf8_seq(s + i, n - i);
        if (!k)
            return fault(sc, VT_JSON_UTF8, i, "a UTF-8 string");
        i += k;
    }
}

static int is_digit(const scan *sc, size_t i) { return i < sc->n && sc->s[i] >= '0' && sc->s[i] <= '9'; }

static int scan_number(scan *sc)
{
    size_t i = sc->pos;
    if (i < sc->n && sc->s[i] == '-')
        i++;
    if (!is_digit(sc, i))
        return unexpected(sc, i, "a digit");
    if (sc->s[i] == '0') {
        i++;
        if (is_digit(sc, i))
            return fault(sc, VT_JSON_SYNTAX, i, "a number without leading zeros");
    } else {
        while (is_digit(sc, i))
            i++;
    }
    if (i < sc->n && sc->s[i] == '.') {
        i++;
        if (!is_digit(sc, i))
            return unexpected(sc, i, "a digit after the decimal point");
        while (is_digit(sc, i))
            i++;
    }
    if (i < sc->n && (sc->s[i] == 'e' || sc->s[i] == 'E')) {
        i++;
        if (i < sc->n && (sc->s[i] == '+' || sc->s[i] == '-'))
            i++;
        if (!is_digit(sc, i))
            return unexpected(sc, i, "a digit in the exponent");
        while (is_digit(sc, i))
            i++;
    }
    sc->pos = i;
    return 0;
}

/* Counts a name or value about to be read; 1 when it is the wanted one. */
static int count_token(scan *sc)
{
    if (sc->tokens++ == sc->want) {
        sc->want_off = sc->pos;
        return 1;
    }
    return 0;
}

/* The whole grammar as a loop over three states (a value, a member name,
 * after a value), the open containers on sc->st. 0, 1 (stopped at the
 * wanted token) or -1 (fault). *end: just past the document. */
static int scan_text(scan *sc, size_t *end)
{
    enum { VALUE, KEY, AFTER } state = VALUE;
    sc->pos = 0;
    if (sc->n >= 3 && memcmp(sc->s, "\xef\xbb\xbf", 3) == 0) /* cJSON would skip it silently */
        return fault(sc, VT_JSON_SYNTAX, 0, "JSON text without a byte order mark");
    skip_ws(sc);
    for (;;) {
        if (state == KEY) {
            skip_ws(sc);
            frame *fr = &sc->st[sc->depth - 1];
            fr->has_name = 0;
            if (sc->pos >= sc->n || sc->s[sc->pos] != '"')
                return unexpected(sc, sc->pos, "a member name (a string)");
            if (count_token(sc))
                return 1;
            size_t start = sc->pos;
            if (scan_string(sc, 1))
                return -1;
            fr->name_off = start + 1;
            fr->name_len = sc->pos - start - 2;
            fr->has_name = 1;
            skip_ws(sc);
            if (sc->pos >= sc->n || sc->s[sc->pos] != ':')
                return unexpected(sc, sc->pos, "':' after the member name");
            sc->pos++;
            skip_ws(sc);
            state = VALUE;
            continue;
        }
        if (state == VALUE) {
            if (sc->pos >= sc->n)
                return fault(sc, VT_JSON_SYNTAX, sc->pos, "a JSON value (the text ended)");
            if (count_token(sc))
                return 1;
            char c = sc->s[sc->pos];
            if (c == '{' || c == '[') {
                if (sc->depth == VT_JSON_MAX_DEPTH)
                    return fault(sc, VT_JSON_DEPTH, sc->pos, "nesting at most 512 deep");
                sc->st[sc->depth++] = (frame){ .type = c };
                sc->pos++;
                skip_ws(sc);
                if (sc->pos < sc->n && sc->s[sc->pos] == (c == '{' ? '}' : ']')) {
                    sc->pos++;
                    sc->depth--;
                    state = AFTER;
                } else {
                    state = c == '{' ? KEY : VALUE;
                }
                continue;
            }
            int r;
            if (c == '"') {
                r = scan_string(sc, 0);
            } else if (c == '-' || (c >= '0' && c <= '9')) {
                r = scan_number(sc);
            } else {
                static const char *const lit[] = { "true", "false", "null" };
                r = -2;
                for (int k = 0; k < 3 && r == -2; k++) {
                    size_t l = strlen(lit[k]);
                    if (sc->n - sc->pos >= l && memcmp(sc->s + sc->pos, lit[k], l) == 0) {
                        sc->pos += l;
                        r = 0;
                    }
                }
                if (r == -2)
                    r = unexpected(sc, sc->pos, "a JSON value (object, array, string, number, true, false, null)");
            }
            if (r)
                return -1;
            state = AFTER;
            continue;
        }
        /* AFTER a value */
        if (sc->depth == 0) {
            *end = sc->pos;
            return 0;
        }
        skip_ws(sc);
        frame *fr = &sc->st[sc->depth - 1];
        char close = fr->type == '{' ? '}' : ']';
        if (sc->pos < sc->n && sc->s[sc->pos] == ',') {
            sc->pos++;
            skip_ws(sc);
            if (fr->type == '[')
                fr->index++;
            state = fr->type == '{' ? KEY : VALUE;
        } else if (sc->pos < sc->n && sc->s[sc->pos] == close) {
            sc->pos++;
            sc->depth--;
        } else {
            return unexpected(sc, sc->pos, fr->type == '{' ? "',' or '}'" : "',' or ']'");
        }
    }
}

/* ---- the tree: duplicate names, infinite numbers ---- */

typedef struct tree_fault {
    size_t token; /* SIZE_MAX: none */
    int kind;
    const char *expected;
    char field[sizeof ((vt_json_fault *)0)->field];
} tree_fault;

typedef struct named {
    const char *name;
    size_t token;
} named;

static int cmp_named(const void *a, const void *b)
{
    const named *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->token > y->token) - (x->token < y->token);
}

static void tree_note(tree_fault *tf, size_t token, int kind, const char *expected, const char *path,
                      const char *name)
{
    if (token >= tf->token) /* the first in the document is the one told */
        return;
    tf->token = token;
    tf->kind = kind;
    tf->expected = expected;
    tf->field[0] = '\0';
    path_add(tf->field, path, strlen(path));
    if (name) {
        if (path[0])
            path_add(tf->field, ".", 1);
        path_add(tf->field, name, strlen(name) > 64 ? 64 : strlen(name));
    }
}

/* Walks v (its token is *token) in document order; path: where v is. */
static int tree_walk(const cJSON *v, size_t *token, char *path, size_t cap, tree_fault *tf)
{
    size_t my = (*token)++;
    if (cJSON_IsNumber(v) && !isfinite(v->valuedouble))
        tree_note(tf, my, VT_JSON_NUMBER, "a number within the range of a double", path, NULL);
    if (!cJSON_IsObject(v) && !cJSON_IsArray(v))
        return 0;
    size_t plen = strlen(path), k = 0, n = 0;
    for (const cJSON *c = v->child; c; c = c->next)
        n++;
    named *names = cJSON_IsObject(v) && n > 1 ? malloc(n * sizeof *names) : NULL;
    if (cJSON_IsObject(v) && n > 1 && !names)
        return -1;
    for (const cJSON *c = v->child; c; c = c->next, k++) {
        if (cJSON_IsObject(v)) {
            if (names)
                names[k] = (named){ c->string ? c->string : "", *token };
            (*token)++; /* the name */
            snprintf(path + plen, cap - plen, "%s%.64s", plen ? "." : "", c->string ? c->string : "");
        } else {
            snprintf(path + plen, cap - plen, "[%zu]", k);
        }
        if (tree_walk(c, token, path, cap, tf)) {
            free(names);
            return -1;
        }
        path[plen] = '\0';
    }
    if (names) {
        vt_sort(names, n, sizeof *names, cmp_named);
        for (size_t i = 0; i + 1 < n; i++)
            if (strcmp(names[i].name, names[i + 1].name) == 0)
                tree_note(tf, names[i + 1].token, VT_JSON_DUPLICATE,
                          "each member name once in its object, found twice (readers differ on which value wins)", path,
                          names[i + 1].name);
    }
    free(names);
    return 0;
}

static void nomem(vt_json_fault *f)
{
    f->kind = VT_JSON_NOMEM;
    f->offset = 0;
    f->expected = "memory to parse the text (out of memory)";
    f->field[0] = '\0';
}

cJSON *vt_json_parse_fault(const char *text, size_t len, vt_json_fault *f)
{
    memset(f, 0, sizeof *f);
    scan *sc = calloc(1, sizeof *sc);
    if (!sc) {
        nomem(f);
        return NULL;
    }
    *sc = (scan){ .s = text ? text : "", .n = text ? len : 0, .want = SIZE_MAX, .f = f };
    size_t doc_end = 0;
    cJSON *doc = NULL;
    if (scan_text(sc, &doc_end) != 0)
        goto out;
    sc->pos = doc_end;
    skip_ws(sc);
    if (sc->pos < sc->n) {
        fault(sc, VT_JSON_TRAILING, sc->pos,
              sc->s[sc->pos] == '\0' ? "only whitespace after the JSON document (found a NUL byte)"
                                     : "only whitespace after the JSON document");
        f->doc_end = doc_end;
        goto out;
    }
    const char *end = NULL;
    doc = cJSON_ParseWithLengthOpts(sc->s, sc->n, &end, 0);
    if (!doc || end != sc->s + doc_end) {
        /* The scanner accepted it, so cJSON ran out of memory, or (another
         * cJSON build) reads the grammar otherwise: never use such a tree. */
        const char *at = doc ? end : cJSON_GetErrorPtr();
        f->kind = doc ? VT_JSON_SYNTAX : VT_JSON_NOMEM;
        f->offset = at && at >= sc->s && at <= sc->s + sc->n ? (size_t)(at - sc->s) : 0;
        f->expected = doc ? "a document cJSON ends where the scanner does"
                          : "a document cJSON can build (out of memory?)";
        f->field[0] = '\0';
        cJSON_Delete(doc);
        doc = NULL;
        goto out;
    }
    tree_fault tf = { .token = SIZE_MAX };
    char path[sizeof f->field + 80] = "";
    size_t token = 0;
    if (tree_walk(doc, &token, path, sizeof path, &tf)) {
        nomem(f);
    } else if (tf.token != SIZE_MAX) {
        /* Where that name or value starts: scan again up to it. */
        scan *again = calloc(1, sizeof *again);
        vt_json_fault ignore;
        size_t e2;
        if (again) {
            *again = (scan){ .s = sc->s, .n = sc->n, .want = tf.token, .f = &ignore };
            scan_text(again, &e2);
        }
        f->kind = tf.kind;
        f->offset = again ? again->want_off : 0;
        f->expected = tf.expected;
        memcpy(f->field, tf.field, sizeof f->field);
        free(again);
    } else {
        free(sc);
        return doc;
    }
    cJSON_Delete(doc);
    doc = NULL;
out:
    free(sc);
    return doc;
}

void vt_json_fault_error(const vt_json_fault *f, const char *what, vt_error *err)
{
    vt_error_set(err, VT_EINPUT, "%s: offset %zu: %s%s%sexpected %s", what ? what : "JSON", f->offset,
                 f->field[0] ? "field " : "", f->field, f->field[0] ? ": " : "", f->expected);
}

cJSON *vt_json_parse(const char *text, size_t len, const char *what, vt_error *err)
{
    vt_json_fault f;
    cJSON *doc = vt_json_parse_fault(text, len, &f);
    if (!doc)
        vt_json_fault_error(&f, what, err);
    return doc;
}

static _Thread_local unsigned long json_failures;
static pthread_once_t hooks_once = PTHREAD_ONCE_INIT;

static void *counted_malloc(size_t n)
{
    void *p = malloc(n);
    if (!p)
        json_failures++;
    return p;
}

static void install_hooks(void)
{
    cJSON_Hooks h = { counted_malloc, free };
    cJSON_InitHooks(&h);
}

unsigned long vt_json_alloc_failures(void)
{
    pthread_once(&hooks_once, install_hooks);
    return json_failures;
}

int vt_json_add_bytes(cJSON *obj, const char *key, const char *bytes, size_t n)
{
    int changed = 0;
    char *t = vt_utf8_text(bytes, n, &changed);
    if (!t)
        return -1;
    int rc = cJSON_AddItemToObject(obj, key, cJSON_CreateString(t)) ? 0 : -1;
    free(t);
    if (rc == 0 && changed) {
        char hk[128], *hex = vt_utf8_hex(bytes, n);
        snprintf(hk, sizeof hk, "%s_hex", key);
        rc = hex && cJSON_AddItemToObject(obj, hk, cJSON_CreateString(hex)) ? 0 : -1;
        free(hex);
    }
    return rc;
}

static char *text_or_null(const char *s)
{
    return s && !vt_utf8_valid(s, strlen(s)) ? vt_utf8_text(s, strlen(s), NULL) : NULL;
}

int vt_json_make_text(cJSON *v)
{
    if (!v) /* a tree that could not be built (out of memory) */
        return -1;
    int rc = 0;
    char *t = text_or_null(v->string);
    if (t) { /* cJSON owns names it did not get as constants */
        if (!(v->type & cJSON_StringIsConst))
            cJSON_free(v->string);
        v->string = t;
        v->type &= ~cJSON_StringIsConst;
    }
    if (cJSON_IsString(v) && (t = text_or_null(v->valuestring))) {
        rc |= cJSON_SetValuestring(v, t) ? 0 : -1;
        free(t);
    }
    for (cJSON *c = v->child; c; c = c->next)
        rc |= vt_json_make_text(c);
    return rc;
}
