/* Internals of vt-capture's library, split by job:
 *   capture.c       inputs, the order of the work, the strict gate's call, publication
 *   capture_run.c   running the repeats: results as plain structs, determinism
 *   capture_doc.c   the document, built from the results and the identities
 *                   (model and manifest, runtime, package, launcher), and its seals
 * The strict gate reads the finished document (strict.h). Not public. */
#ifndef VT_CAPTURE_INTERNAL_H
#define VT_CAPTURE_INTERNAL_H

#include "capture.h"
#include "capture_read.h"
#include "logits_file.h"
#include "prompts.h"
#include "topk_file.h"

#include "../common/vt_reasons.h"
#include "../engine/gguf_file.h"
#include "../provenance/provenance.h"

enum { PKG_NONE = 0, PKG_WHEEL = 1, PKG_NPM = 2, PKG_IMPORTS = 3 /* a Python runner's imported bytes */ };

/* ------------------------------------------------------------ the runs */

/* One run as it ran. Its tokens (generated, or the scored ones) and, when
 * scoring, its log-probs are at off in the result pools. */
typedef struct vt_run_result {
    int32_t prompt, repeat;
    int ok;
    char *error; /* why it failed (malloc'd), or NULL */
    int32_t n;   /* positions (0 for a failed run) */
    int64_t off;
    vt_sha256_hex logits_sha; /* of its raw logits (ok runs) */
} vt_run_result;

typedef struct vt_run_results {
    vt_run_result *runs; /* in the order they ran: repeat 0 of every prompt, then repeat 1, ... */
    int n_runs;
    int32_t *tokens;
    double *logprobs, *argmax_logprobs; /* scoring only */
    int32_t *argmax;                    /* scoring only */
    /* Scoring by a top-k-only runner (runner.h): 1 where the scored token
     * was not among the k told, logprobs[] then the k-th log-prob (its
     * upper bound); NULL for other runners. */
    unsigned char *bound;
    int32_t known_top_k;                /* the runner's top_k_only, or 0 */
    int64_t n_pos, cap_pos;
    int32_t top_k;                      /* entries per position in the top-k side file */
    int n_failed;
    int64_t n_positions;                /* over every ok run */
    /* Determinism: every repeat against its prompt's repeat 0. */
    int identical_tokens, identical_logits;
    int n_differ;                       /* later repeats that differ */
    int has_mismatch;                   /* the first, in run order: */
    int32_t mm_prompt, mm_repeat, mm_position;
    const char *mm_field;               /* "status", "logits", "tokens" */
} vt_run_results;

/* What to run: every prompt repetitions times, generating max_tokens, or
 * (cont non-NULL) teacher-forced on cont[p] (n_cont[p] tokens) in shape. */
typedef struct vt_run_plan {
    const vt_prompt_set *prompts;
    int32_t *const *cont;
    const int32_t *n_cont;
    int32_t repetitions, max_tokens, top_k;
    vt_score_shape shape; /* with cont */
    struct vt_progress *progress; /* counts the runs, or NULL */
} vt_run_plan;

/* Runs the plan. A run that fails is recorded, not returned; VT_EINPUT for
 * out of memory or a side file that cannot be written. side and topk may
 * be NULL. */
int vt_capture_repeat(vt_runner *r, const vt_run_plan *plan, vt_logits_writer *side, vt_topk_writer *topk,
                      vt_run_results *res, vt_error *err);
void vt_run_results_free(vt_run_results *res);

/* --------------------------------------------------------- the handle */

struct vt_capture {
    vt_capture_opts o;
    const vt_runner_ops *ops;
    int prefix;                  /* scoring LOCAL's streams */
    vt_prompt_set prompts;
    int32_t **cont;              /* prefix: LOCAL's repeat-0 tokens per prompt */
    int32_t *n_cont;
    int n_streams;               /* entries of cont and n_cont */
    vt_doc local_own;            /* prefix: LOCAL, when read here */
    const vt_doc *local;         /* prefix: LOCAL (local_own or the caller's) */
    vt_sha256_hex model_sha;
    uint64_t model_size;
    cJSON *gguf;                 /* the GGUF summary */
    char *arch;
    vt_manifest manifest;
    int have_manifest;
    char *manifest_dir;
    cJSON *launcher;             /* the launcher manifest, parsed */
    vt_sha256_hex launcher_sha;
    int package_kind;
    char *side_name;             /* side file path relative to the capture's directory */
    char *side_dir;              /* its directory, where its temporary data goes */
    char *topk_path;             /* the top-k side file (opts.topk_out or derived), or NULL */
    char *topk_name, *topk_dir;  /* as side_name, side_dir */
    vt_runner_settings req;      /* as requested, defaults made explicit */
    /* results */
    vt_logits_writer *side;
    vt_sha256_hex side_sha;
    uint64_t side_size;
    vt_topk_writer *topk;
    vt_sha256_hex topk_sha;
    uint64_t topk_size;
    char *text;
    size_t text_len;
    vt_reasons refusals;         /* the strict gate's, on the finished document */
    unsigned long json_failures; /* vt_json_alloc_failures() when opened: the document is
                                    written only if it has not moved */
    vt_capture_summary sum;
    vt_sha256_hex seal, workload_seal;
};

/* ------------------------------------------------------- the document */

/* What ran, as the runner and the process say. */
typedef struct vt_capture_identity {
    vt_runner_identity runner;
    vt_runtime_identity runtime;
    vt_runner_settings resolved;
    int32_t top_k; /* logprobs_top_k as applied (clipped to the vocabulary) */
    const char *imports; /* the runner's vt.imports/1 file (PKG_IMPORTS), after the runs */
} vt_capture_identity;

/* The sealed document (c->text, c->seal, c->workload_seal) from the
 * results and the identities; verifies the model against its manifest and
 * the package against its distribution on the way (their findings are
 * recorded in the document, where the strict gate reads them). VT_EINPUT
 * when an input turns out unreadable. */
int vt_capture_document(vt_capture *c, const vt_run_results *res, const vt_capture_identity *id, vt_error *err);

/* The model's summary (model.gguf) of an open GGUF. */
cJSON *vt_capture_gguf_summary(const vt_gguf *g, const char *arch, int32_t n_vocab);

/* "a/b/c" -> "c"; dir_name: "a/b" (malloc'd; "." or "/" at the top). */
const char *vt_capture_base_name(const char *path);
char *vt_capture_dir_name(const char *path);

#endif
