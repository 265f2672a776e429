/* Reasons a check refuses, each named by the rule that gave it: what the
 * strict gate (capture/strict.h) and vt-neartie's guards (compare/guards.h)
 * collect, and how the tools print them.
 *
 * Printed (vt_reasons_print): the first line is the one line the exit
 * contract asks for, naming the file, the first rule and how many reasons
 * there are, then that reason; each further reason follows on its own line:
 *     vt-neartie: E.json: refused by rule distinct (3 reasons): <reason>
 *     vt-neartie:   rule scorer: S.json: <reason>
 *     vt-neartie:   rule vocabulary: E.json: <reason> */
#ifndef VT_REASONS_H
#define VT_REASONS_H

#include <stdio.h>

typedef struct vt_reason {
    char *rule; /* the rule's name, as its table lists it */
    char *file; /* the input the reason is about (may be "") */
    char *text; /* "field: value: expected ..." on one line */
} vt_reason;

typedef struct vt_reasons {
    vt_reason *v;
    int n, cap;
    int oom; /* a reason could not be kept: callers treat it as a refusal */
} vt_reasons;

/* Appends one reason; newlines in the text become spaces (one line each). */
void vt_reasons_add(vt_reasons *r, const char *rule, const char *file, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Appends every reason of src, its text prefixed by prefix (may be NULL),
 * under rule (NULL: each keeps its own). */
void vt_reasons_append(vt_reasons *r, const vt_reasons *src, const char *rule, const char *prefix);
/* Whether some reason is from rule. */
int vt_reasons_has(const vt_reasons *r, const char *rule);
void vt_reasons_free(vt_reasons *r);
/* Prints as above; what: "refused", "strict: not published", ... */
void vt_reasons_print(const vt_reasons *r, FILE *f, const char *tool, const char *what);

#endif
