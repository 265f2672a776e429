/* The guards of a near-tie comparison (DESIGN.md, Near-tie comparison):
 * what must hold between a local capture, an oracle capture and the prefix
 * scores before any gap is read. One table of rules (vt_nt_rules), each a
 * name, the stage it belongs to, what it expects and a check; every
 * finding is one reason naming its rule (common/vt_reasons.h), and the
 * comparison refuses (exit 2) if there is any.
 *
 * Local against oracle (stage VT_NT_PAIR), in this order:
 *   distinct     two different pieces of evidence: not the same file
 *                (st_dev/st_ino), not the same seal, not the same
 *                computation run twice (the same runtime in depth and the
 *                same resolved settings). Identical results from different
 *                runtimes pass: they are a finding, not a fault.
 *   strict       each capture passes the strict gate (capture/strict.h);
 *                --allow-unverified lets it in, and the report then says it
 *                is not strict evidence
 *   runs         a run with status error, or an error recorded on an ok run
 *   determinism  a later repeat differs from repeat 0 (tokens or logits
 *                hash, from the runs; --allow-diff determinism records it)
 *   prompts      the prompt sets differ (ids, text or tokens)
 *   model        model.files (size, sha256), arch, revision, the rest of
 *                model.gguf differ
 *   vocabulary   model.gguf.n_vocab, tokenizer_pre or vocab_sha256 (the
 *                token list, token types and merges) differ (never allowed:
 *                token ids would not mean the same)
 *   greedy       sampling.temperature is not 0 (never allowed)
 *   repeats      settings.resolved.repetitions differ
 *   compute      resolved mode, cache_dtype or matmul differ, or differ from
 *                what --mode/--cache-dtype/--matmul declare
 *   capacity     n_ctx or max_tokens differ
 *   settings     any other resolved setting differs (threads, n_batch,
 *                seed, logprobs_top_k, sampling.top_k/top_p/min_p, and
 *                the transformers runner's dtype and attention, which a
 *                capture of another runner has not)
 *   workload     the workload seals differ once allowed fields are set
 *                aside (only when nothing above explains it)
 * The prefix scores against both (stage VT_NT_SCORES):
 *   scores-runs  a scoring run failed
 *   binding      local.seal / local.workload_seal are not the local
 *                capture's; prompts or scored tokens are not its streams
 *   scorer       the scores are not the oracle's computation: its model,
 *                vocabulary, runtime in depth (runner name, version,
 *                backend, device, library, binary and loaded objects by
 *                sha256, package sha256) and configuration (mode,
 *                cache_dtype, matmul, n_ctx, dtype, attention). Never allowed.
 *   scorer-local the scores are the local capture's own computation (their
 *                gaps are zero by construction). Never allowed.
 *   scores-determinism  a scoring repeat differs from its repeat 0
 *
 * --allow-diff FIELD lets FIELD differ (between any two inputs compared on
 * it); every allowed field is recorded, with the values that differed. */
#ifndef VT_NT_GUARDS_H
#define VT_NT_GUARDS_H

#include <cjson/cJSON.h>

#include "../capture/capture_read.h"
#include "../common/vt_reasons.h"

typedef struct vt_nt_guard_opts {
    const char *const *allow; /* --allow-diff fields */
    int n_allow;
    const char *mode, *cache_dtype, *matmul; /* declared, or NULL */
    int allow_unverified;                    /* --allow-unverified */
} vt_nt_guard_opts;

typedef enum vt_nt_stage {
    VT_NT_PAIR = 0,  /* local against oracle */
    VT_NT_SCORES = 1 /* the prefix scores against both */
} vt_nt_stage;

typedef struct vt_nt_inputs {
    const vt_doc *local, *oracle, *scores; /* scores: NULL in stage VT_NT_PAIR */
    const vt_nt_guard_opts *o;
    cJSON *allowed;         /* may be NULL: one entry per allowed field that differed,
                               {field, left:{file,value}, right:{file,value}|null} */
    vt_reasons *unverified; /* may be NULL: what --allow-unverified let in */
    int stage_start;        /* reasons before this stage (set by vt_nt_guard_stage) */
    int noise_shape;        /* scores: a second or third shape (neartie.h), which may be
                               the oracle's eager mode where the oracle ran production */
} vt_nt_inputs;

typedef struct vt_nt_rule {
    const char *name;
    vt_nt_stage stage;
    const char *expects; /* what the rule expects, as README lists it */
    void (*check)(const vt_nt_inputs *in, const struct vt_nt_rule *rule, vt_reasons *out);
} vt_nt_rule;

extern const vt_nt_rule vt_nt_rules[];
extern const int vt_nt_n_rules;

/* Every rule of stage, in table order. */
void vt_nt_guard_stage(const vt_nt_inputs *in, vt_nt_stage stage, vt_reasons *out);

/* Whether FIELD may be given to --allow-diff; *list (may be NULL) gets the
 * names, comma-separated, for a message. */
int vt_nt_allow_field_known(const char *field, const char **list);

/* The first place two documents' runtimes differ in depth (runner name,
 * version, backend, device, binary sha256, every loaded object, the
 * runner's library among them, by sha256, package sha256), as
 * "runtime.runner.version: A, B"; "" if they are the same; 0 (why set) if
 * either is not resolved and cannot be compared. */
int vt_nt_runtime_difference(const vt_doc *a, const vt_doc *b, char *why, size_t cap);

#endif
