/* JSON Schema subset validator: what it checks is in json_schema.h. */
#include "json_schema.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_DEPTH = 64 }; /* $ref chains and nesting, so a cyclic schema ends */

typedef struct ctx {
    const cJSON *root;
    vt_error *err;
    char path[1024]; /* JSON path of the instance being checked */
} ctx;

static const char *type_of(const cJSON *v)
{
    if (cJSON_IsNull(v))
        return "null";
    if (cJSON_IsBool(v))
        return "boolean";
    if (cJSON_IsNumber(v))
        return "number";
    if (cJSON_IsString(v))
        return "string";
    if (cJSON_IsArray(v))
        return "array";
    return "object";
}

static int is_type(const cJSON *v, const char *t)
{
    if (strcmp(t, "integer") == 0)
        return cJSON_IsNumber(v) && v->valuedouble == floor(v->valuedouble);
    return strcmp(type_of(v), t) == 0;
}

/* Deep equality for enum and const: numbers by value, objects member by
 * member whatever their order. */
static int json_equal(const cJSON *a, const cJSON *b)
{
    if (strcmp(type_of(a), type_of(b)) != 0)
        return 0;
    if (cJSON_IsNumber(a))
        return a->valuedouble == b->valuedouble;
    if (cJSON_IsString(a))
        return strcmp(a->valuestring, b->valuestring) == 0;
    if (cJSON_IsBool(a))
        return cJSON_IsTrue(a) == cJSON_IsTrue(b);
    if (cJSON_IsNull(a))
        return 1;
    if (cJSON_GetArraySize(a) != cJSON_GetArraySize(b))
        return 0;
    if (cJSON_IsArray(a)) {
        for (const cJSON *x = a->child, *y = b->child; x; x = x->next, y = y->next)
            if (!json_equal(x, y))
                return 0;
        return 1;
    }
    for (const cJSON *x = a->child; x; x = x->next) {
        const cJSON *y = cJSON_GetObjectItemCaseSensitive(b, x->string);
        if (!y || !json_equal(x, y))
            return 0;
    }
    return 1;
}

const cJSON *vt_json_schema_at(const cJSON *root, const char *pointer)
{
    if (!pointer || pointer[0] != '#')
        return NULL;
    const cJSON *v = root;
    const char *p = pointer + 1;
    while (*p == '/') {
        p++;
        size_t n = strcspn(p, "/");
        char key[256];
        if (n >= sizeof key)
            return NULL;
        /* JSON pointer escapes: ~1 is '/', ~0 is '~'. */
        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
            if (p[i] == '~' && i + 1 < n && (p[i + 1] == '0' || p[i + 1] == '1')) {
                key[k++] = p[i + 1] == '0' ? '~' : '/';
                i++;
            } else {
                key[k++] = p[i];
            }
        }
        key[k] = '\0';
        v = cJSON_IsArray(v) ? cJSON_GetArrayItem(v, atoi(key)) : cJSON_GetObjectItemCaseSensitive(v, key);
        if (!v)
            return NULL;
        p += n;
    }
    return *p ? NULL : v;
}

static int fail(ctx *c, const char *fmt, const char *detail)
{
    return vt_error_set(c->err, VT_ECHECK, "%s: %s%s", c->path, fmt, detail ? detail : "");
}

static int bad_schema(ctx *c, const char *what)
{
    return vt_error_set(c->err, VT_EINPUT, "schema at %s: %s", c->path, what);
}

static int check(ctx *c, const cJSON *schema, const cJSON *doc, int depth);

static int check_child(ctx *c, const cJSON *schema, const cJSON *doc, int depth, const char *fmt,
                       const char *key, int index)
{
    size_t len = strlen(c->path);
    if (key)
        snprintf(c->path + len, sizeof c->path - len, fmt, key);
    else
        snprintf(c->path + len, sizeof c->path - len, fmt, index);
    int rc = check(c, schema, doc, depth + 1);
    if (rc == VT_OK)
        c->path[len] = '\0';
    return rc;
}

static int pattern_match(ctx *c, const char *pattern, const char *s)
{
    int errcode;
    PCRE2_SIZE erroff;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, PCRE2_UTF, &errcode, &erroff, NULL);
    if (!re)
        return bad_schema(c, "pattern: not a valid regular expression");
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
    int m = md ? pcre2_match(re, (PCRE2_SPTR)s, strlen(s), 0, 0, md, NULL) : -1;
    pcre2_match_data_free(md);
    pcre2_code_free(re);
    if (m >= 0)
        return VT_OK;
    char detail[300];
    snprintf(detail, sizeof detail, "'%.120s': expected a match of /%.120s/", s, pattern);
    return fail(c, "", detail);
}

static int check(ctx *c, const cJSON *schema, const cJSON *doc, int depth)
{
    if (depth > MAX_DEPTH)
        return bad_schema(c, "nested or referenced too deeply");
    if (cJSON_IsBool(schema))
        return cJSON_IsTrue(schema) ? VT_OK : fail(c, "not allowed here", NULL);
    if (!cJSON_IsObject(schema))
        return bad_schema(c, "expected an object or a boolean");

    /* Refuse keywords outside the subset before checking anything. */
    static const char *const known[] = { "type", "required", "properties", "additionalProperties", "items",
                                         "enum", "const", "minimum", "pattern", "$ref", "$schema", "$id",
                                         "$defs", "$comment", "title", "description" };
    for (const cJSON *k = schema->child; k; k = k->next) {
        size_t i = 0;
        while (i < sizeof known / sizeof known[0] && strcmp(k->string, known[i]) != 0)
            i++;
        if (i == sizeof known / sizeof known[0]) {
            char what[200];
            snprintf(what, sizeof what, "keyword '%.100s': not in the subset this validator checks", k->string);
            return bad_schema(c, what);
        }
    }

    const cJSON *ref = cJSON_GetObjectItemCaseSensitive(schema, "$ref");
    if (ref) {
        const cJSON *target = cJSON_IsString(ref) ? vt_json_schema_at(c->root, ref->valuestring) : NULL;
        if (!target)
            return bad_schema(c, "$ref: expected a JSON pointer into this schema");
        int rc = check(c, target, doc, depth + 1);
        if (rc)
            return rc;
    }

    const cJSON *type = cJSON_GetObjectItemCaseSensitive(schema, "type");
    if (type) {
        int ok = 0;
        if (cJSON_IsString(type))
            ok = is_type(doc, type->valuestring);
        else if (cJSON_IsArray(type))
            for (const cJSON *t = type->child; t && !ok; t = t->next)
                ok = cJSON_IsString(t) && is_type(doc, t->valuestring);
        else
            return bad_schema(c, "type: expected a name or a list of names");
        if (!ok) {
            char *want = cJSON_PrintUnformatted(type);
            char detail[200];
            snprintf(detail, sizeof detail, "%s: expected type %.150s", type_of(doc), want ? want : "?");
            free(want);
            return fail(c, "", detail);
        }
    }

    const cJSON *cst = cJSON_GetObjectItemCaseSensitive(schema, "const");
    if (cst && !json_equal(cst, doc)) {
        char *want = cJSON_PrintUnformatted(cst);
        char detail[200];
        snprintf(detail, sizeof detail, "expected %.180s", want ? want : "?");
        free(want);
        return fail(c, "", detail);
    }
    const cJSON *en = cJSON_GetObjectItemCaseSensitive(schema, "enum");
    if (en) {
        if (!cJSON_IsArray(en))
            return bad_schema(c, "enum: expected a list");
        int ok = 0;
        for (const cJSON *e = en->child; e && !ok; e = e->next)
            ok = json_equal(e, doc);
        if (!ok) {
            char *want = cJSON_PrintUnformatted(en);
            char detail[240];
            snprintf(detail, sizeof detail, "expected one of %.220s", want ? want : "?");
            free(want);
            return fail(c, "", detail);
        }
    }

    const cJSON *min = cJSON_GetObjectItemCaseSensitive(schema, "minimum");
    if (min && cJSON_IsNumber(doc)) {
        if (!cJSON_IsNumber(min))
            return bad_schema(c, "minimum: expected a number");
        if (doc->valuedouble < min->valuedouble) {
            char detail[100];
            snprintf(detail, sizeof detail, "%.17g: expected at least %.17g", doc->valuedouble, min->valuedouble);
            return fail(c, "", detail);
        }
    }

    const cJSON *pat = cJSON_GetObjectItemCaseSensitive(schema, "pattern");
    if (pat && cJSON_IsString(doc)) {
        if (!cJSON_IsString(pat))
            return bad_schema(c, "pattern: expected a string");
        int rc = pattern_match(c, pat->valuestring, doc->valuestring);
        if (rc)
            return rc;
    }

    if (cJSON_IsObject(doc)) {
        const cJSON *req = cJSON_GetObjectItemCaseSensitive(schema, "required");
        if (req) {
            if (!cJSON_IsArray(req))
                return bad_schema(c, "required: expected a list");
            for (const cJSON *r = req->child; r; r = r->next) {
                if (!cJSON_IsString(r))
                    return bad_schema(c, "required: expected names");
                if (!cJSON_GetObjectItemCaseSensitive(doc, r->valuestring))
                    return vt_error_set(c->err, VT_ECHECK, "%s: member '%s' missing: expected it (required)",
                                        c->path, r->valuestring);
            }
        }
        const cJSON *props = cJSON_GetObjectItemCaseSensitive(schema, "properties");
        const cJSON *extra = cJSON_GetObjectItemCaseSensitive(schema, "additionalProperties");
        if (props && !cJSON_IsObject(props))
            return bad_schema(c, "properties: expected an object");
        for (const cJSON *m = doc->child; m; m = m->next) {
            const cJSON *sub = props ? cJSON_GetObjectItemCaseSensitive(props, m->string) : NULL;
            if (!sub && extra) {
                if (cJSON_IsFalse(extra)) {
                    char detail[200];
                    snprintf(detail, sizeof detail, "member '%.100s': expected only the members the schema lists",
                             m->string);
                    return fail(c, "", detail);
                }
                sub = extra;
            }
            if (sub) {
                int rc = check_child(c, sub, m, depth, ".%s", m->string ? m->string : "", 0);
                if (rc)
                    return rc;
            }
        }
    }

    const cJSON *items = cJSON_GetObjectItemCaseSensitive(schema, "items");
    if (items && cJSON_IsArray(doc)) {
        int i = 0;
        for (const cJSON *e = doc->child; e; e = e->next, i++) {
            int rc = check_child(c, items, e, depth, "[%d]", NULL, i);
            if (rc)
                return rc;
        }
    }
    return VT_OK;
}

int vt_json_schema_check(const cJSON *root, const cJSON *schema, const cJSON *doc, vt_error *err)
{
    ctx c = { .root = root, .err = err };
    strcpy(c.path, "$");
    return check(&c, schema, doc, 0);
}
