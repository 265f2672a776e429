/* A JSON Schema (draft 2020-12) validator for the subset vt's schemas use:
 *   type (a name or a list; "integer" is a number with an integral value),
 *   required, properties, additionalProperties (true, false or a schema),
 *   items (one schema for every element), enum, const, minimum,
 *   pattern (PCRE2, UTF mode, unanchored as the standard says),
 *   $ref to a JSON pointer inside the same document ("#/$defs/model").
 * Annotations ($schema, $id, $defs, $comment, title, description) are
 * ignored. Any other keyword is refused, so a schema never silently asks
 * for a check this validator does not make. Keywords apply to the instance
 * types they concern (required only to objects, pattern only to strings...),
 * as the standard says. */
#ifndef VT_JSON_SCHEMA_H
#define VT_JSON_SCHEMA_H

#include <cjson/cJSON.h>

#include "../common/vt_error.h"

/* Checks doc against schema, a sub-schema of root (the document $ref
 * pointers resolve in; pass root twice to check against the whole schema).
 * VT_OK; VT_ECHECK with the first violation ("$.runs[2].status: 'done':
 * expected one of [...]"); VT_EINPUT for a schema outside the subset. */
int vt_json_schema_check(const cJSON *root, const cJSON *schema, const cJSON *doc, vt_error *err);

/* The sub-schema at a JSON pointer ("#/$defs/prefix_scores"), or NULL. */
const cJSON *vt_json_schema_at(const cJSON *root, const char *pointer);

#endif
