/* A growable string: appends never fail loudly; an allocation failure is
 * remembered (oom) and reported once, by vt_sbuf_take. */
#include "vt_sbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int sbuf_reserve(vt_sbuf *b, size_t extra)
{
    if (b->oom)
        return 0;
    if (b->n + extra + 1 <= b->cap)
        return 1;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + extra + 1)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
        b->oom = 1;
        return 0;
    }
    b->p = p;
    b->cap = cap;
    return 1;
}

void vt_sbuf_add(vt_sbuf *b, const char *s, size_t n)
{
    if (!sbuf_reserve(b, n))
        return;
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

void vt_sbuf_puts(vt_sbuf *b, const char *s)
{
    vt_sbuf_add(b, s, strlen(s));
}

void vt_sbuf_printf(vt_sbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || !sbuf_reserve(b, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->n, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->n += (size_t)n;
}

void vt_sbuf_json_str(vt_sbuf *b, const char *s)
{
    vt_sbuf_add(b, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if (*p == '"' || *p == '\\') {
            char e[2] = { '\\', (char)*p };
            vt_sbuf_add(b, e, 2);
        } else if (*p < 0x20) {
            char e[8];
            snprintf(e, sizeof e, "\\u%04x", *p);
            vt_sbuf_puts(b, e);
        } else {
            vt_sbuf_add(b, (const char *)p, 1);
        }
    }
    vt_sbuf_add(b, "\"", 1);
}

char *vt_sbuf_take(vt_sbuf *b)
{
    if (b->oom || !sbuf_reserve(b, 0)) {
        free(b->p);
        memset(b, 0, sizeof *b);
        return NULL;
    }
    char *p = b->p;
    memset(b, 0, sizeof *b);
    return p;
}

