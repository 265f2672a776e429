/* The strict gate: what a capture (or prefix-scores document) must show to
 * be strict evidence (DESIGN.md, "Strict publication"). One table of
 * rules, each a name, what it expects and a check, judged on the finished
 * document as the one reader (capture_read.h) reads it: vt-capture --strict
 * runs it on what it built before publishing, vt-neartie on every capture
 * it is given, so a capture cannot be strict in one place and not the
 * other.
 *
 *   format       the current schema (vt.capture/2: the vocabulary's
 *                sha256, the model's problems, the runner's device)
 *   repeats      settings.resolved.repetitions >= VT_CAPTURE_STRICT_REPEATS
 *   runs         every run's status ok, no error recorded
 *   determinism  every repeat identical to its repeat 0 (tokens and logits)
 *   positions    every prompt at least one position
 *   model        a manifest, every model file matching it (model.verified)
 *   runtime      the runtime identity resolved
 *   settings     resolved settings equal to the requested ones, or the
 *                difference allowed (--allow-setting-difference)
 *   package      a runner whose code comes from a package has it; a
 *                package given is verified and bound to what ran (the
 *                runtime's loaded libraries are its members)
 *   launcher     a launcher manifest with its required fields
 *                (vt_launcher_manifest_check) */
#ifndef VT_STRICT_H
#define VT_STRICT_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "capture_read.h"

#include "../common/vt_reasons.h"

typedef struct vt_strict_rule {
    const char *name;
    const char *expects; /* what a strict document has, as the reasons say it */
    void (*check)(const vt_doc *d, const struct vt_strict_rule *rule, vt_reasons *out);
} vt_strict_rule;

extern const vt_strict_rule vt_strict_rules[];
extern const int vt_strict_n_rules;

/* Every rule on d, in table order; each finding one reason (file d->path,
 * rule its name). */
void vt_strict_check(const vt_doc *d, vt_reasons *out);

/* The launcher manifest's schema: an object with
 *   launcher         non-empty string: what started the run (a CI job, a script)
 *   host or image    non-empty string: where it ran (a host name, a container image)
 *   command          non-empty string, or non-empty array of non-empty strings
 * and any other members. 1 if m satisfies it; else 0 with why set to
 * "FIELD: VALUE: expected ..." (one line). */
int vt_launcher_manifest_check(const cJSON *m, char *why, size_t cap);

#endif
