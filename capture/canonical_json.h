/* Canonical JSON: the one byte sequence vt writes for a JSON value, so that
 * a seal (the SHA-256 of those bytes) can be recomputed by anyone who parses
 * the file again.
 *
 * The rules:
 *  - no whitespace anywhere;
 *  - object members in the order they are in the tree. vt builds its
 *    documents in the fixed key order their schema documents
 *    (capture/vt.capture.schema.json); cJSON keeps file order when it
 *    parses, so a parsed file writes back to the bytes it was sealed from.
 *    A duplicate key is refused (readers disagree on which one wins);
 *  - numbers: an integral value with |v| < 2^53 as a plain integer (-0 is
 *    "0"); any other finite value as printf "%.9g" (enough for an F32 to
 *    round-trip; a double is rounded to 9 digits), normalized so that the
 *    text, parsed and written again, is the same text. Non-finite values
 *    are refused: JSON has no spelling for them;
 *  - strings: UTF-8 as is, except '"' and '\\' escaped, \b \f \n \r \t, and
 *    the other bytes below 0x20 as \u00xx (lower-case hex). Invalid UTF-8
 *    is refused;
 *  - true, false, null as such. */
#ifndef VT_CANONICAL_JSON_H
#define VT_CANONICAL_JSON_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "../common/vt_error.h"
#include "../common/vt_utf8.h" /* vt_utf8_valid, for the readers that include this header */
#include "../provenance/provenance.h"

/* The canonical text of v (malloc'd, NUL-terminated, *len without the NUL).
 * NULL with err set (VT_EINPUT, naming the JSON path) for a value that has
 * no canonical form. */
char *vt_canonical_json(const cJSON *v, size_t *len, vt_error *err);

/* SHA-256 of the canonical text of v. */
int vt_canonical_sha256(const cJSON *v, vt_sha256_hex *out, vt_error *err);

/* Seals a document: its "seal" is the SHA-256 of its canonical text so far,
 * appended as the last member; *text (malloc'd) is then the canonical text
 * plus a newline, as sealed files are written. */
int vt_canonical_seal(cJSON *doc, vt_sha256_hex *seal, char **text, size_t *len, vt_error *err);

/* The canonical text of a finite number (buf: at least 32 bytes). */
void vt_canonical_number(double v, char *buf);


#endif
