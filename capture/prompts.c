/* Prompt files (JSON Lines): format and refusals in prompts.h. */
#include "prompts.h"
#include "../common/vt_sort.h"

#include "canonical_json.h"

#include "../common/vt_input.h"
#include "../common/vt_json.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Prompt files and captures are read whole; this bounds what a mistaken
 * argument (a model file given as prompts) makes vt allocate. */
#define MAX_TEXT_FILE (1ull << 32)

int vt_read_file(const char *path, char **data, size_t *size, vt_error *err)
{
    vt_input_opts o = { .max_bytes = MAX_TEXT_FILE - 1, .what = "a regular file (under 4 GiB)" };
    return vt_input_read_all(path, &o, data, size, err);
}

void vt_prompts_free(vt_prompt_set *ps)
{
    if (!ps)
        return;
    for (int i = 0; i < ps->n; i++) {
        free(ps->items[i].id);
        free(ps->items[i].text);
        free(ps->items[i].tokens);
    }
    free(ps->items);
    memset(ps, 0, sizeof *ps);
}

static int only_space(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
            return 0;
    return 1;
}

/* One line's object -> p. Messages name path, line and field; the line is
 * read as strict JSON (common/vt_json.h): a \u0000 in an id or a text
 * would otherwise cut it short unseen. */
static int parse_line(const char *path, long line, const char *s, size_t n, vt_tokenizer *tok, vt_prompt *p,
                      vt_error *err)
{
    vt_json_fault f;
    cJSON *o = vt_json_parse_fault(s, n, &f);
    if (!o) {
        if (f.kind == VT_JSON_SYNTAX) /* the line's end is told at its last column */
            return vt_error_set(err, VT_EINPUT, "%s: line %ld: column %zu: expected a JSON object", path, line,
                                (f.offset < n || n == 0 ? f.offset : n - 1) + 1);
        if (f.kind == VT_JSON_TRAILING)
            return vt_error_set(err, VT_EINPUT, "%s: line %ld: column %zu: expected one JSON object on the line",
                                path, line, f.doc_end + 1);
        if (f.field[0])
            return vt_error_set(err, VT_EINPUT, "%s: line %ld: field %s: expected %s", path, line, f.field,
                                f.expected);
        return vt_error_set(err, VT_EINPUT, "%s: line %ld: column %zu: expected %s", path, line, f.offset + 1,
                            f.expected);
    }
    int rc = VT_OK;
    if (!cJSON_IsObject(o)) {
        rc = vt_error_set(err, VT_EINPUT, "%s: line %ld: expected a JSON object {id, text} or {id, tokens}", path,
                          line);
        goto out;
    }
    for (const cJSON *m = o->child; m; m = m->next) {
        if (strcmp(m->string, "id") && strcmp(m->string, "text") && strcmp(m->string, "tokens")) {
            rc = vt_error_set(err, VT_EINPUT, "%s: line %ld: field %.100s: expected only id, text or tokens", path,
                              line, m->string);
            goto out;
        }
        for (const cJSON *k = o->child; k != m; k = k->next)
            if (strcmp(k->string, m->string) == 0) {
                rc = vt_error_set(err, VT_EINPUT, "%s: line %ld: field %s: given twice: expected it once", path,
                                  line, m->string);
                goto out;
            }
    }
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(o, "id");
    const cJSON *text = cJSON_GetObjectItemCaseSensitive(o, "text");
    const cJSON *tokens = cJSON_GetObjectItemCaseSensitive(o, "tokens");
    if (!cJSON_IsString(id) || !id->valuestring[0] || !vt_utf8_valid(id->valuestring, strlen(id->valuestring))) {
        rc = vt_error_set(err, VT_EINPUT, "%s: line %ld: field id: expected a non-empty UTF-8 string", path, line);
        goto out;
    }
    if (!text == !tokens) {
        rc = vt_error_set(err, VT_EINPUT, "%s: line %ld: field text/tokens: expected exactly one of the two", path,
                          line);
        goto out;
    }
    int32_t n_vocab = vt_tokenizer_n_vocab(tok);
    if (text) {
        size_t len = cJSON_IsString(text) ? strlen(text->valuestring) : 0;
        if (!cJSON_IsString(text) || !vt_utf8_valid(text->valuestring, len)) {
            rc = vt_error_set(err, VT_EINPUT, "%s: line %ld: field text: expected a UTF-8 string", path, line);
            goto out;
        }
        size_t need = 0, cap = len + 8;
        p->tokens = malloc(cap * sizeof *p->tokens);
        if (!p->tokens) {
            rc = vt_error_set(err, VT_EINPUT, "%s: out of memory", path);
            goto out;
        }
        vt_error terr;
        vt_error_clear(&terr);
        if (vt_tokenize(tok, text->valuestring, len, 1, 1, p->tokens, cap, &need, &terr) != VT_OK) {
            rc = vt_error_set(err, VT_EINPUT, "%s: line %ld: field text: %s", path, line, terr.msg);
            goto out;
        }
        if (need == 0 || need > INT32_MAX) {
            rc = vt_error_set(err, VT_EINPUT, "%s: line %ld: field text: expected text that makes at least one token",
                              path, line);
            goto out;
        }
        p->n_tokens = (int32_t)need;
        p->text = strdup(text->valuestring);
    } else {
        int n_tok = cJSON_IsArray(tokens) ? cJSON_GetArraySize(tokens) : 0;
        if (n_tok == 0) {
            rc = vt_error_set(err, VT_EINPUT, "%s: line %ld: field tokens: expected a non-empty list of token ids",
                              path, line);
            goto out;
        }
        p->tokens = malloc((size_t)n_tok * sizeof *p->tokens);
        if (!p->tokens) {
            rc = vt_error_set(err, VT_EINPUT, "%s: out of memory", path);
            goto out;
        }
        int i = 0;
        for (const cJSON *t = tokens->child; t; t = t->next, i++) {
            double v = cJSON_IsNumber(t) ? t->valuedouble : -1.0;
            if (!(v >= 0 && v < n_vocab && v == floor(v))) {
                rc = vt_error_set(err, VT_EINPUT, "%s: line %ld: field tokens[%d]: expected an integer id in 0..%d",
                                  path, line, i, n_vocab - 1);
                goto out;
            }
            p->tokens[i] = (int32_t)v;
        }
        p->n_tokens = n_tok;
    }
    p->id = strdup(id->valuestring);
    if (!p->id || (text && !p->text))
        rc = vt_error_set(err, VT_EINPUT, "%s: out of memory", path);
out:
    cJSON_Delete(o);
    return rc;
}

/* Unique ids, checked once all lines are read: the ids sorted with their
 * index, so n log n on any input (a line-by-line scan of the ids before was
 * quadratic: 100,000 lines took 81 s). The first repeat by line is told. */
typedef struct id_at {
    const char *id;
    int index;
} id_at;

static int by_id_then_index(const void *a, const void *b)
{
    const id_at *x = a, *y = b;
    int c = strcmp(x->id, y->id);
    return c ? c : (x->index > y->index) - (x->index < y->index);
}

static int check_unique_ids(const char *path, const vt_prompt_set *set, const long *lines, vt_error *err)
{
    id_at *order = malloc((size_t)set->n * sizeof *order);
    if (!order)
        return vt_error_set(err, VT_EINPUT, "%s: out of memory", path);
    for (int i = 0; i < set->n; i++)
        order[i] = (id_at){ set->items[i].id, i };
    vt_sort(order, (size_t)set->n, sizeof *order, by_id_then_index);
    int first = -1; /* the earliest prompt whose id an earlier one has */
    for (int k = 1; k < set->n; k++)
        if (strcmp(order[k].id, order[k - 1].id) == 0 && (first < 0 || order[k].index < first))
            first = order[k].index;
    free(order);
    if (first >= 0)
        return vt_error_set(err, VT_EINPUT, "%s: line %ld: field id: '%.100s' already used: expected unique ids",
                            path, lines[first], set->items[first].id);
    return VT_OK;
}

int vt_prompts_read(const char *path, vt_tokenizer *tok, vt_prompt_set *out, vt_error *err)
{
    memset(out, 0, sizeof *out);
    char *data;
    size_t size;
    int rc = vt_read_file(path, &data, &size, err);
    if (rc)
        return rc;
    vt_sha256_buffer(data, size, &out->file_sha256);
    out->file_size = size;
    int cap = 0;
    long line = 0, *lines = NULL; /* each prompt's line, for messages */
    for (size_t pos = 0; pos < size && rc == VT_OK;) {
        const char *s = data + pos;
        const char *nl = memchr(s, '\n', size - pos);
        size_t n = nl ? (size_t)(nl - s) : size - pos;
        pos += n + (nl != NULL);
        line++;
        if (only_space(s, n))
            continue;
        if (out->n == cap) {
            int ncap = cap ? 2 * cap : 16;
            vt_prompt *items = realloc(out->items, (size_t)ncap * sizeof *items);
            if (items)
                out->items = items;
            long *nl_lines = items ? realloc(lines, (size_t)ncap * sizeof *lines) : NULL;
            if (!nl_lines) {
                rc = vt_error_set(err, VT_EINPUT, "%s: out of memory", path);
                break;
            }
            lines = nl_lines;
            cap = ncap;
        }
        vt_prompt *p = &out->items[out->n];
        memset(p, 0, sizeof *p);
        rc = parse_line(path, line, s, n, tok, p, err);
        if (rc) {
            free(p->id);
            free(p->text);
            free(p->tokens);
        } else {
            lines[out->n++] = line;
        }
    }
    if (rc == VT_OK && out->n == 0)
        rc = vt_error_set(err, VT_EINPUT, "%s: no prompts: expected one JSON object per line", path);
    if (rc == VT_OK)
        rc = check_unique_ids(path, out, lines, err);
    free(lines);
    free(data);
    if (rc)
        vt_prompts_free(out);
    return rc;
}
