/* Strict number parsing for options and text fields: the whole string must
 * be a number in range; no silent truncation or trailing garbage. */
#ifndef VT_PARSE_H
#define VT_PARSE_H

#include <stdint.h>

/* Return 1 on success, 0 if s is not a complete base-10 number in range:
 * digits, with a leading minus sign for a negative number only (no blank,
 * no plus sign, no "-0"). */
int vt_parse_i64(const char *s, int64_t min, int64_t max, int64_t *out);
int vt_parse_u64(const char *s, uint64_t *out);

#endif
