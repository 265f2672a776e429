/* UTF-8 well-formedness (RFC 3629): no overlong forms, no surrogates,
 * nothing above U+10FFFF. One validator for all of vt. */
#ifndef VT_UTF8_H
#define VT_UTF8_H

#include <stddef.h>

/* Length (1..4) of the well-formed UTF-8 sequence that starts s[0..n),
 * or 0 when there is none (n == 0, a stray or truncated byte). */
size_t vt_utf8_seq(const char *s, size_t n);

/* The offset of the first byte of s[0..n) that does not start a
 * well-formed sequence, or n when all of it is well-formed. */
size_t vt_utf8_check(const char *s, size_t n);

/* Whether s[0..n) is well-formed UTF-8. */
int vt_utf8_valid(const char *s, size_t n);

/* s[0..n) as text every JSON reader takes: each byte that does not belong
 * to a well-formed sequence, and each NUL, becomes U+FFFD. NUL-terminated,
 * malloc'd (NULL: out of memory); *changed (may be NULL) is 1 when a byte
 * was replaced (the caller then keeps the exact bytes beside it). */
char *vt_utf8_text(const char *s, size_t n, int *changed);

/* s (NULL: empty) as one line of printable ASCII in buf[0..cap), every
 * other byte '?', cut to fit: for what another program says (a plugin's
 * message, a server's field) inside vt's one-line messages. */
void vt_ascii_line(char *buf, size_t cap, const char *s);

/* The bytes s[0..n) in lower-case hex, NUL-terminated, malloc'd. */
char *vt_utf8_hex(const char *s, size_t n);

#endif
