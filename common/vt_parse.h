/* Strict parsing for options and text fields, in one place: numbers, lists
 * and single-valued options. The whole string must be what is asked for; no
 * silent truncation, no trailing garbage, no empty list entry, no option
 * given twice. */
#ifndef VT_PARSE_H
#define VT_PARSE_H

#include <stddef.h>
#include <stdint.h>

/* Return 1 on success, 0 if s is not a complete base-10 number in range:
 * digits, with a leading minus sign for a negative number only (no blank,
 * no plus sign, no "-0"). */
int vt_parse_i64(const char *s, int64_t min, int64_t max, int64_t *out);
int vt_parse_u64(const char *s, uint64_t *out);

/* A decimal number in [min, max]: [-]digits[.digits][e[+-]digits], or
 * [-].digits[...]. Refused: a blank, a '+', hexadecimal, inf, nan, a
 * negative zero, a value that overflows. Returns 1 or 0 as above. */
int vt_parse_f64(const char *s, double min, double max, double *out);

/* A comma-separated list: each entry (NUL-terminated, at most 255 bytes) is
 * given to item, in order; item returns 0 to refuse it. Returns the number of
 * entries, or -1 when s is empty, an entry is empty (",a", "a,,b", "a,"), too
 * long, or refused. */
int vt_parse_list(const char *s, int (*item)(const char *entry, void *ctx), void *ctx);

/* Integer ids: a strict list of vt_parse_i64 entries in [min, max], into a
 * malloc'd array (*out, *n). 1 on success, 0 if refused (nothing allocated). */
int vt_parse_list_i64(const char *s, int64_t min, int64_t max, int64_t **out, size_t *n);

/* The valued options a command has seen so far: a command keeps one and
 * asks vt_opt_once as it takes each option's value. Options that may repeat
 * (each value adds one: --allow-diff X --allow-diff Y) are listed in
 * repeatable, a NULL-terminated list (NULL: none). */
typedef struct vt_opt_seen {
    const char *const *repeatable;
    const char *name[64];
    int n;
} vt_opt_seen;

/* 1 the first time a single-valued option is seen (and always for a
 * repeatable one), 0 when it was given before: the caller refuses the
 * command line (exit 2) rather than let the last value win. "-o" is the
 * short form of "--out" in every vt command and counts as it. */
int vt_opt_once(vt_opt_seen *seen, const char *name);

#endif
