#include "vt_parse.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int vt_parse_i64(const char *s, int64_t min, int64_t max, int64_t *out)
{
    /* digits, or '-' and digits: strtoll alone also takes leading blanks,
     * a '+' and "-0" */
    const char *d = s && *s == '-' ? s + 1 : s;
    if (!d || *d < '0' || *d > '9')
        return 0;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || v < min || v > max || (v == 0 && *s == '-'))
        return 0;
    *out = v;
    return 1;
}

int vt_parse_u64(const char *s, uint64_t *out)
{
    if (!s || *s < '0' || *s > '9') /* strtoull accepts "-1" */
        return 0;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end)
        return 0;
    *out = v;
    return 1;
}

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

int vt_parse_f64(const char *s, double min, double max, double *out)
{
    if (!s)
        return 0;
    /* The grammar first: strtod also takes blanks, '+', "0x1p3", "inf",
     * "nan" and locale-dependent forms. */
    const char *p = s + (*s == '-');
    int digits = 0;
    while (is_digit(*p))
        p++, digits++;
    if (*p == '.') {
        p++;
        while (is_digit(*p))
            p++, digits++;
    }
    if (!digits)
        return 0;
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-')
            p++;
        if (!is_digit(*p))
            return 0;
        while (is_digit(*p))
            p++;
    }
    if (*p)
        return 0;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (*end || errno == ERANGE || !isfinite(v) || v < min || v > max || (v == 0 && *s == '-'))
        return 0;
    *out = v;
    return 1;
}

int vt_parse_list(const char *s, int (*item)(const char *entry, void *ctx), void *ctx)
{
    if (!s || !*s)
        return -1;
    int n = 0;
    for (const char *p = s;; n++) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char buf[256];
        if (len == 0 || len >= sizeof buf)
            return -1;
        memcpy(buf, p, len);
        buf[len] = 0;
        if (!item(buf, ctx))
            return -1;
        if (!comma)
            return n + 1;
        p = comma + 1;
    }
}

typedef struct i64_list {
    int64_t min, max, *v;
    size_t n, cap;
} i64_list;

static int take_i64(const char *entry, void *ctx)
{
    i64_list *l = ctx;
    int64_t x;
    if (!vt_parse_i64(entry, l->min, l->max, &x))
        return 0;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        int64_t *v = realloc(l->v, cap * sizeof *v);
        if (!v)
            return 0;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = x;
    return 1;
}

int vt_parse_list_i64(const char *s, int64_t min, int64_t max, int64_t **out, size_t *n)
{
    i64_list l = { .min = min, .max = max };
    if (vt_parse_list(s, take_i64, &l) < 0) {
        free(l.v);
        return 0;
    }
    *out = l.v;
    *n = l.n;
    return 1;
}

int vt_opt_once(vt_opt_seen *seen, const char *name)
{
    for (const char *const *r = seen->repeatable; r && *r; r++)
        if (strcmp(*r, name) == 0)
            return 1;
    if (strcmp(name, "-o") == 0)
        name = "--out";
    for (int i = 0; i < seen->n; i++)
        if (strcmp(seen->name[i], name) == 0)
            return 0;
    if (seen->n < (int)(sizeof seen->name / sizeof seen->name[0]))
        seen->name[seen->n++] = name;
    return 1;
}
