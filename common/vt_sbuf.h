/* A growable, NUL-terminated string for building text (JSON, reports,
 * messages). Start from {0}; append; take the text (or NULL if any append
 * ran out of memory). */
#ifndef VT_SBUF_H
#define VT_SBUF_H

#include <stddef.h>

typedef struct vt_sbuf {
    char *p;
    size_t n, cap;
    int oom;
} vt_sbuf;

void vt_sbuf_add(vt_sbuf *b, const char *s, size_t n);
void vt_sbuf_puts(vt_sbuf *b, const char *s);
void vt_sbuf_printf(vt_sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void vt_sbuf_json_str(vt_sbuf *b, const char *s); /* quoted, escaped JSON string */
/* Returns the text (caller frees) or NULL when any append ran out of memory. */
char *vt_sbuf_take(vt_sbuf *b);

#endif
