/* Reasons with their rules: vt_reasons.h. */
#include "vt_reasons.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static char *one_line(const char *s)
{
    char *t = strdup(s ? s : "");
    for (char *p = t; p && *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    return t;
}

static void add(vt_reasons *r, const char *rule, const char *file, const char *text)
{
    if (r->n == r->cap) {
        int cap = r->cap ? 2 * r->cap : 8;
        vt_reason *v = realloc(r->v, (size_t)cap * sizeof *v);
        if (!v) {
            r->oom = 1;
            return;
        }
        r->v = v;
        r->cap = cap;
    }
    vt_reason *e = &r->v[r->n];
    e->rule = one_line(rule);
    e->file = one_line(file);
    e->text = one_line(text);
    if (!e->rule || !e->file || !e->text) {
        free(e->rule);
        free(e->file);
        free(e->text);
        r->oom = 1;
        return;
    }
    r->n++;
}

void vt_reasons_add(vt_reasons *r, const char *rule, const char *file, const char *fmt, ...)
{
    char text[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    add(r, rule, file, text);
}

void vt_reasons_append(vt_reasons *r, const vt_reasons *src, const char *rule, const char *prefix)
{
    for (int i = 0; i < src->n; i++) {
        char text[1400];
        snprintf(text, sizeof text, "%s%s", prefix ? prefix : "", src->v[i].text);
        add(r, rule ? rule : src->v[i].rule, src->v[i].file, text);
    }
    if (src->oom)
        r->oom = 1;
}

int vt_reasons_has(const vt_reasons *r, const char *rule)
{
    for (int i = 0; i < r->n; i++)
        if (strcmp(r->v[i].rule, rule) == 0)
            return 1;
    return 0;
}

void vt_reasons_free(vt_reasons *r)
{
    for (int i = 0; i < r->n; i++) {
        free(r->v[i].rule);
        free(r->v[i].file);
        free(r->v[i].text);
    }
    free(r->v);
    memset(r, 0, sizeof *r);
}

void vt_reasons_print(const vt_reasons *r, FILE *f, const char *tool, const char *what)
{
    if (r->n == 0) {
        if (r->oom)
            fprintf(f, "%s: %s: out of memory while listing the reasons\n", tool, what);
        return;
    }
    const vt_reason *e = &r->v[0];
    fprintf(f, "%s: %s%s%s by rule %s (%d reason%s): %s\n", tool, e->file, e->file[0] ? ": " : "", what, e->rule, r->n,
            r->n == 1 ? "" : "s", e->text);
    for (int i = 1; i < r->n; i++) {
        e = &r->v[i];
        fprintf(f, "%s:   rule %s: %s%s%s\n", tool, e->rule, e->file, e->file[0] ? ": " : "", e->text);
    }
}
