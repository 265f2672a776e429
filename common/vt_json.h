/* vt_json: the one reader of JSON input for all of vt. Every JSON file
 * (or JSON Lines line) that vt reads from outside goes through
 * vt_json_parse (or vt_json_parse_fault), never through cJSON_Parse*.
 *
 * Why: cJSON alone accepts texts whose meaning differs between readers.
 * It cuts a string at a \u0000 escape or a raw NUL byte (a manifest entry
 * "model.gguf\u0000.evil" reads as "model.gguf"), ignores whatever follows
 * the first document (a second object, a NUL byte, garbage), passes
 * invalid UTF-8 through, takes control bytes as whitespace, keeps both
 * values of a duplicate key (cJSON's lookups see the first, other readers
 * the last) and reads 1e999 as infinity.
 *
 * What is accepted: exactly one JSON text as RFC 8259 defines it, optionally
 * surrounded by JSON whitespace (space, tab, LF, CR), and in it
 *  - strings of well-formed UTF-8 with no raw control bytes, no NUL byte
 *    and no \u0000 escape (an escaped backslash followed by "u0000", the
 *    JSON text "a\\u0000", is six literal characters and is accepted);
 *    \u escapes for surrogates must pair up;
 *  - member names unique within each object;
 *  - numbers in RFC 8259 syntax (no leading zeros, "+", ".5", "1.")
 *    that are finite as doubles;
 *  - nesting at most VT_JSON_MAX_DEPTH deep.
 * No byte order mark. Everything else is refused, with the byte offset of
 * the first offending byte and the field it lies in.
 *
 * Use:
 *     cJSON *doc = vt_json_parse(text, len, path, err);
 *     if (!doc) return err->code;           // VT_EINPUT, message set
 *     ...; cJSON_Delete(doc);
 * text need not be NUL-terminated; len is what is read. */
#ifndef VT_JSON_H
#define VT_JSON_H

#include <stddef.h>

#include "vt_error.h"

struct cJSON;

enum { VT_JSON_MAX_DEPTH = 512 };

/* What kind of fault a refused text has (for callers that word it). */
enum vt_json_fault_kind {
    VT_JSON_OK = 0,
    VT_JSON_SYNTAX,    /* not RFC 8259 grammar */
    VT_JSON_TRAILING,  /* something other than whitespace after the document */
    VT_JSON_NUL,       /* a raw NUL byte (outside a string; inside one is VT_JSON_STRING) */
    VT_JSON_UTF8,      /* bytes that are not well-formed UTF-8 */
    VT_JSON_STRING,    /* a string holding \u0000, a NUL or control byte, an unpaired surrogate */
    VT_JSON_DUPLICATE, /* a member name twice in one object */
    VT_JSON_NUMBER,    /* a number beyond the range of a double */
    VT_JSON_DEPTH,     /* nested deeper than VT_JSON_MAX_DEPTH */
    VT_JSON_NOMEM      /* out of memory */
};

typedef struct vt_json_fault {
    int kind;             /* enum vt_json_fault_kind */
    size_t offset;        /* byte offset of the first offending byte (len: the text ended early) */
    size_t doc_end;       /* VT_JSON_TRAILING: the offset just past the document */
    const char *expected; /* static text: what the text should hold at offset */
    char field[192];      /* where the fault lies ("files[0].name"); "" at the top level */
} vt_json_fault;

/* Parses text[0..len) strictly (rules above). Returns the tree (free with
 * cJSON_Delete), or NULL with err set to VT_EINPUT and one line
 *     "WHAT: offset N: expected E"  or  "WHAT: offset N: field F: expected E"
 * (what: the file name, or any label; NULL gives "JSON"). */
struct cJSON *vt_json_parse(const char *text, size_t len, const char *what, vt_error *err);
/* That line for a fault of vt_json_parse_fault. */
void vt_json_fault_error(const vt_json_fault *f, const char *what, vt_error *err);

/* The same check, for callers that place the fault themselves (a JSON Lines
 * reader gives line and column). NULL with *fault filled; on success
 * fault->kind is VT_JSON_OK. */
struct cJSON *vt_json_parse_fault(const char *text, size_t len, vt_json_fault *fault);

/* Writing: every JSON vt writes is valid UTF-8. Adds key to obj as the
 * text of bytes[0..n) (vt_utf8_text: bytes that are not UTF-8, and NUL,
 * as U+FFFD) and, when a byte had to be replaced, key_hex beside it with
 * the exact bytes in hex. 0, or -1 on out of memory. */
int vt_json_add_bytes(struct cJSON *obj, const char *key, const char *bytes, size_t n);

/* How many allocations cJSON could not make on this thread so far. cJSON's
 * builders (cJSON_Add...ToObject) return NULL and go on: a document built
 * while this count moved is incomplete, and its builder says out of
 * memory rather than write it. (Installs cJSON's allocation hooks once.) */
unsigned long vt_json_alloc_failures(void);

/* Every string value and member name in the tree that is not valid UTF-8
 * replaced by its vt_utf8_text, in place: for documents whose strings
 * (paths, error messages) come from outside, before they are written or
 * sealed. -1 on out of memory. */
int vt_json_make_text(struct cJSON *root);

#endif
