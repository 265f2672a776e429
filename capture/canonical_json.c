/* Canonical JSON writer: rules in canonical_json.h. */
#include "canonical_json.h"

#include <math.h>
#include "../common/vt_sbuf.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int exact_int(double v) { return v == floor(v) && fabs(v) < 9007199254740992.0; }

void vt_canonical_number(double v, char *buf)
{
    /* A non-integral value goes through its 9-digit text; if that text
     * reads back as an integer, the integer spelling is the canonical one,
     * so that writing the parsed file again gives the same text. */
    if (!exact_int(v)) {
        char tmp[32];
        snprintf(tmp, sizeof tmp, "%.9g", v);
        double d = strtod(tmp, NULL);
        if (!exact_int(d)) {
            memcpy(buf, tmp, strlen(tmp) + 1);
            return;
        }
        v = d;
    }
    snprintf(buf, 32, "%lld", (long long)v);
}

static void put_string(vt_sbuf *b, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    vt_sbuf_puts(b, "\"");
    size_t run = 0; /* bytes written as they are, flushed in one put */
    const char *start = s;
    for (const char *p = s; *p; p++) {
        unsigned char c = (unsigned char)*p;
        const char *esc = NULL;
        char u[7];
        switch (c) {
        case '"': esc = "\\\""; break;
        case '\\': esc = "\\\\"; break;
        case '\b': esc = "\\b"; break;
        case '\f': esc = "\\f"; break;
        case '\n': esc = "\\n"; break;
        case '\r': esc = "\\r"; break;
        case '\t': esc = "\\t"; break;
        default:
            if (c < 0x20) {
                u[0] = '\\', u[1] = 'u', u[2] = '0', u[3] = '0', u[4] = hex[c >> 4], u[5] = hex[c & 15], u[6] = 0;
                esc = u;
            }
        }
        if (esc) {
            vt_sbuf_add(b, start, run);
            vt_sbuf_puts(b, esc);
            start = p + 1;
            run = 0;
        } else {
            run++;
        }
    }
    vt_sbuf_add(b, start, run);
    vt_sbuf_puts(b, "\"");
}

/* path: the JSON path of v for messages ("$.runs[3].topk"). */
static int write_value(vt_sbuf *b, const cJSON *v, char *path, size_t plen, size_t cap, vt_error *err)
{
    char num[32];
    switch (v->type & 0xff) {
    case cJSON_NULL:
        vt_sbuf_puts(b, "null");
        return VT_OK;
    case cJSON_False:
        vt_sbuf_puts(b, "false");
        return VT_OK;
    case cJSON_True:
        vt_sbuf_puts(b, "true");
        return VT_OK;
    case cJSON_Number:
        if (!isfinite(v->valuedouble))
            return vt_error_set(err, VT_EINPUT, "%s: %g: expected a finite number", path, v->valuedouble);
        vt_canonical_number(v->valuedouble, num);
        vt_sbuf_puts(b, num);
        return VT_OK;
    case cJSON_String:
    case cJSON_Raw:
        if (!v->valuestring || !vt_utf8_valid(v->valuestring, strlen(v->valuestring)))
            return vt_error_set(err, VT_EINPUT, "%s: expected a valid UTF-8 string", path);
        put_string(b, v->valuestring);
        return VT_OK;
    case cJSON_Array: {
        vt_sbuf_puts(b, "[");
        int i = 0;
        for (const cJSON *e = v->child; e; e = e->next, i++) {
            if (i)
                vt_sbuf_puts(b, ",");
            snprintf(path + plen, cap - plen, "[%d]", i);
            int rc = write_value(b, e, path, strlen(path), cap, err);
            path[plen] = '\0';
            if (rc)
                return rc;
        }
        vt_sbuf_puts(b, "]");
        return VT_OK;
    }
    case cJSON_Object: {
        vt_sbuf_puts(b, "{");
        for (const cJSON *e = v->child; e; e = e->next) {
            if (!e->string || !vt_utf8_valid(e->string, strlen(e->string)))
                return vt_error_set(err, VT_EINPUT, "%s: a key: expected a valid UTF-8 string", path);
            for (const cJSON *f = v->child; f != e; f = f->next)
                if (strcmp(f->string, e->string) == 0)
                    return vt_error_set(err, VT_EINPUT, "%s: key '%s' twice: expected unique keys", path,
                                        e->string);
            if (e != v->child)
                vt_sbuf_puts(b, ",");
            put_string(b, e->string);
            vt_sbuf_puts(b, ":");
            snprintf(path + plen, cap - plen, ".%s", e->string);
            int rc = write_value(b, e, path, strlen(path), cap, err);
            path[plen] = '\0';
            if (rc)
                return rc;
        }
        vt_sbuf_puts(b, "}");
        return VT_OK;
    }
    }
    return vt_error_set(err, VT_EINPUT, "%s: not a JSON value", path);
}

char *vt_canonical_json(const cJSON *v, size_t *len, vt_error *err)
{
    vt_sbuf b = { 0 };
    char path[512] = "$";
    int rc = write_value(&b, v, path, 1, sizeof path, err);
    if (rc == VT_OK && (b.oom || !b.p))
        rc = vt_error_set(err, VT_EINPUT, "canonical JSON: out of memory");
    if (rc) {
        free(b.p);
        return NULL;
    }
    if (len)
        *len = b.n;
    return b.p;
}

int vt_canonical_sha256(const cJSON *v, vt_sha256_hex *out, vt_error *err)
{
    size_t n = 0;
    char *s = vt_canonical_json(v, &n, err);
    if (!s)
        return err ? err->code : VT_EINPUT;
    int rc = vt_sha256_buffer(s, n, out);
    free(s);
    return rc ? vt_error_set(err, VT_EINPUT, "canonical JSON: SHA-256 failed") : VT_OK;
}

int vt_canonical_seal(cJSON *doc, vt_sha256_hex *seal, char **text, size_t *len, vt_error *err)
{
    int rc = vt_canonical_sha256(doc, seal, err);
    if (rc)
        return rc;
    if (!cJSON_AddStringToObject(doc, "seal", seal->hex))
        return vt_error_set(err, VT_EINPUT, "seal: out of memory");
    size_t n;
    char *s = vt_canonical_json(doc, &n, err);
    if (!s)
        return err && err->code ? err->code : VT_EINPUT;
    char *t = realloc(s, n + 2);
    if (!t) {
        free(s);
        return vt_error_set(err, VT_EINPUT, "seal: out of memory");
    }
    t[n] = '\n';
    t[n + 1] = '\0';
    *text = t;
    *len = n + 1;
    return VT_OK;
}
