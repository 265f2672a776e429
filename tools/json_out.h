/* --json of the tools: one JSON document on stdout, built with cJSON from
 * the same data the text table prints (each command has one place that
 * computes and two printers). Numbers are written as cJSON writes them
 * (doubles to 15 significant digits, 17 where 15 would not read back the
 * same value: they round-trip); every string is valid UTF-8: text from
 * outside whose bytes matter (a path, a token) goes in through
 * vt_tool_json_bytes or vt_tool_json_text, so bytes that are not UTF-8 are
 * U+FFFD with KEY_hex beside them holding the exact bytes (common/vt_json.h,
 * as vt-neartie's report writes token texts); any other string that is not
 * UTF-8 (a message quoting a path) is made text when printed. */
#ifndef VT_TOOLS_JSON_OUT_H
#define VT_TOOLS_JSON_OUT_H

#include <stddef.h>
#include <stdint.h>

struct cJSON;

/* Call before building a document; give what it returns to vt_tool_json_print. */
unsigned long vt_tool_json_begin(void);

/* Prints doc and a newline on stdout and deletes doc. A tree that lost an
 * allocation since begin (cJSON's or a helper's below) is incomplete and
 * is not printed. 0, or -1 (out of memory, nothing printed: the caller
 * says so in one line on stderr and exits 2). */
int vt_tool_json_print(struct cJSON *doc, unsigned long begin);

/* key: bytes[0..n) as text (vt_json_add_bytes: KEY_hex beside where a
 * byte had to be replaced). */
void vt_tool_json_bytes(struct cJSON *obj, const char *key, const char *bytes, size_t n);
/* key: the NUL-terminated s as vt_tool_json_bytes, or null for NULL. */
void vt_tool_json_text(struct cJSON *obj, const char *key, const char *s);

/* key: v as a JSON integer; above 2^53, where a double would round it, as
 * a string of its decimal digits. */
void vt_tool_json_u64(struct cJSON *obj, const char *key, uint64_t v);

#endif
