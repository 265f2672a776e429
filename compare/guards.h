/* The guards of a near-tie comparison (DESIGN.md, Near-tie comparison):
 * what must hold between a local capture, an oracle capture and the prefix
 * scores before any gap is read. Each refusal is one line naming the file,
 * the field and what was expected; the comparison refuses (exit 2) if
 * there is any.
 *
 * Local against oracle, in this order:
 *   runs        a run with status error, or an error recorded on an ok run
 *   prompts     the prompt sets differ (ids, text or tokens)
 *   model       model.files (size, sha256), model.arch, model.revision,
 *               the rest of model.gguf differ
 *   vocabulary  model.gguf.n_vocab or tokenizer_pre differ (never allowed:
 *               token ids would not mean the same)
 *   repeats     settings.resolved.repetitions differ
 *   greedy      sampling.temperature is not 0 (never allowed)
 *   declared    resolved mode, cache_dtype or matmul (the compute path)
 *               differ, or differ from what --mode/--cache-dtype/--matmul
 *               declare
 *   capacity    n_ctx or max_tokens differ
 *   settings    any other resolved setting differs (threads, n_batch,
 *               seed, logprobs_top_k, sampling.top_k/top_p/min_p)
 *   workload    the workload seals differ once allowed fields are set
 *               aside (only when nothing above explains it)
 *   determinism a later repeat differs from repeat 0
 * Prefix scores against both:
 *   binding     local.seal / local.workload_seal are not the local
 *               capture's; prompts or scored tokens are not its streams
 *   scorer      the scores' model, vocabulary, runner (name, version) or
 *               mode / cache_dtype / matmul / n_ctx are not the oracle's
 * plus runs and determinism for the scores themselves.
 *
 * --allow-diff FIELD lets FIELD differ (between any two inputs compared on
 * it); every allowed field is recorded, with the values that differed. */
#ifndef VT_NT_GUARDS_H
#define VT_NT_GUARDS_H

#include <cjson/cJSON.h>

#include "capture_read.h"

typedef struct vt_lines {
    char **v;
    int n;
} vt_lines;

void vt_lines_add(vt_lines *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void vt_lines_free(vt_lines *l);

typedef struct vt_nt_guard_opts {
    const char *const *allow; /* --allow-diff fields */
    int n_allow;
    const char *mode, *cache_dtype, *matmul; /* declared, or NULL */
} vt_nt_guard_opts;

/* Whether FIELD may be given to --allow-diff; *list (may be NULL) gets the
 * names, comma-separated, for a message. */
int vt_nt_allow_field_known(const char *field, const char **list);

/* Local against oracle. Refusals are appended to out; allowed (an array,
 * may be NULL) gets one entry per allowed field that differed:
 * {field, left:{file,value}, right:{file,value}}. */
void vt_nt_guard_pair(const vt_doc *local, const vt_doc *oracle, const vt_nt_guard_opts *o, vt_lines *out,
                      cJSON *allowed);

/* The prefix scores against both. */
void vt_nt_guard_prefix(const vt_doc *local, const vt_doc *oracle, const vt_doc *prefix, const vt_nt_guard_opts *o,
                        vt_lines *out, cJSON *allowed);

#endif
