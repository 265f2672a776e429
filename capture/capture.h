/* vt-capture: seeded, repeated runs of one runner over a prompt set, with
 * the identities of what ran verified and recorded, written as one sealed
 * document (DESIGN.md, "Capture file" and "Strict publication").
 *
 * Two documents, both canonical JSON (canonical_json.h) in the fixed key
 * order below, with a final newline; the schema of both is
 * capture/vt.capture.schema.json ($defs/capture, $defs/prefix_scores).
 *
 * vt.capture/2 (generation):
 *   schema, tool{name,version,git}, created_utc?,
 *   model{files[{name,size,sha256}], revision, arch, gguf{..., vocab_sha256,
 *         tensor_types}, verified, problems[], manifest{file,sha256}|null},
 *   runtime{runner{name,version,backend,device,library,detail}, binary{path,sha256},
 *           objects[{path,size,sha256}] (sorted by path), libraries{...},
 *           cpu{model,flags,machine,cores,cores_usable}, kernel, threads,
 *           resolved, unresolved?} (only runner, threads, resolved, unresolved
 *           when the identity could not be read at all),
 *   package{kind,file,sha256,name,integrity,root,loaded[],members_checked,
 *           verified,problems[],notes[]}|null (kind "wheel" or "npm": --package;
 *           kind "imports": what a Python runner's process imported, with
 *           modules, objects, distributions[], outside[] as well),
 *   launcher{file,sha256,attested:true,manifest:<the JSON as given>}|null,
 *   settings{requested{...}, resolved{...}, differences[{field,requested,
 *           resolved,allowed}]} (dtype and attention only for a runner that
 *           has them: vt_runner_ops.has_dtype),
 *   prompt_file{name,size,sha256},
 *   prompts[{id, text?, tokens[], sha256}],
 *   runs[{prompt, repeat, status:"ok"|"error", error?, tokens[],
 *         logits_sha256?}],
 *   logits_file{name,size,sha256,format:"vt.logits/1"}|null,
 *   topk_file{name,size,sha256,format:"vt.topk/1"}|null (null iff
 *         settings.resolved.logprobs_top_k is 0),
 *   determinism{repeats, identical_tokens, identical_logits,
 *               first_mismatch?{prompt,repeat,position,field}},
 *   workload_seal, seal
 *
 * vt.prefix-scores/3 (--score-prefix-of LOCAL): the runner teacher-forced on
 * LOCAL's streams (each prompt's repeat-0 tokens after its prompt tokens):
 *   schema, tool, created_utc?, local{file,sha256,schema,seal,workload_seal},
 *   shape ("replay": the prompt, then one token per evaluation, as
 *   generation ran; "batched": the tokens in prefill batches), model, runtime, package, launcher, settings, prompts (LOCAL's),
 *   runs[{prompt, repeat, status, error?, tokens[] (LOCAL's), logprobs[]
 *         (of those tokens), argmax[], argmax_logprobs[], logits_sha256?}],
 *   logits_file, determinism, workload_seal, seal
 * A reader's gap at a position is argmax_logprobs[i] - logprobs[i] (>= 0).
 *
 * vt.prefix-scores/4: /3 with runs[].bound[] after argmax_logprobs, written
 * by a scorer told only the top k log-probs of each position (an HTTP
 * server: runner.h, top_k_only): the positions, ascending, whose scored
 * token was not among the k. There logprobs[i] is the lowest log-prob told,
 * an upper bound on the token's, so the gap is a lower bound. Scorers with
 * logits keep writing /3, so their documents are unchanged.
 *
 * Version 2 added model.gguf.vocab_sha256 (what token ids mean: the token
 * list, token types and merges), model.problems (why the model is not
 * verified) and runtime.runner.device. vt.capture/1 and
 * vt.prefix-scores/1 are still read (capture_read.h) but are not strict
 * evidence (strict.h, rule format). vt.prefix-scores/3 added shape; /2 and
 * /1 were batched, and are read so.
 *
 * Conventions:
 *  - prompt indices (runs[].prompt, first_mismatch.prompt) are 0-based
 *    positions in prompts[]; runs are listed in the order they ran: repeat
 *    0 of every prompt, then repeat 1 of every prompt, ...; first_mismatch
 *    is the first run, in that order, that differs from its prompt's
 *    repeat 0, at the first position whose logits (field "logits") or
 *    token (field "tokens") differ; "status" when either run failed.
 *  - prompts[].sha256: of the prompt's token ids as little-endian int32.
 *  - runs[].logits_sha256: of the run's raw logits, float32 little-endian,
 *    positions x vocab. The top-k side file (topk_file.h): the
 *    logprobs_top_k highest log-probs (double log-softmax of the logits,
 *    stored as float32) at each position of each ok run, ties to the lower
 *    id; binary because at 10^4 prompts x 256 positions x 20 it is
 *    5 x 10^7 entries.
 *  - file names (model files, prompt file, package, launcher, manifest,
 *    LOCAL) are base names; the side file's name is its path relative to
 *    the capture's directory.
 *  - created_utc ("YYYY-MM-DDTHH:MM:SSZ") is written only when asked
 *    (opts.created_utc >= 0) and is covered by the seal like every other
 *    member: the same inputs and the same (or no) timestamp give the same
 *    bytes.
 *  - workload_seal: SHA-256 of the canonical JSON of
 *    {"model":{files,revision,arch,gguf},"prompts":prompts,
 *     "settings":settings.resolved} -- what was computed, not how it was
 *    verified, so an engine capture and an oracle capture of the same
 *    workload have the same workload_seal.
 *  - seal: SHA-256 of the canonical JSON of the document without "seal"
 *    (which is its last member).
 *  - settings.differences lists every field whose resolved value differs
 *    from the requested one; "allowed" is true for fields named in
 *    opts.allow_differences and for a requested cache_dtype "auto" (which
 *    asks the runner to choose); strict refuses the others.
 *  - seeds and sizes are JSON integers below 2^53, exact in every reader. */
#ifndef VT_CAPTURE_H
#define VT_CAPTURE_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "../common/vt_error.h"
#include "../common/vt_publish.h"
#include "../engine/runner.h"

#define VT_CAPTURE_SCHEMA "vt.capture/2"
#define VT_PREFIX_SCORES_SCHEMA "vt.prefix-scores/3"
/* What a scorer told only the top k log-probs writes (runner.h, top_k_only). */
#define VT_PREFIX_SCORES_SCHEMA_TOPK "vt.prefix-scores/4"
/* Earlier versions, still read (capture_read.h). */
#define VT_CAPTURE_SCHEMA_V1 "vt.capture/1"
#define VT_PREFIX_SCORES_SCHEMA_V1 "vt.prefix-scores/1"
#define VT_PREFIX_SCORES_SCHEMA_V2 "vt.prefix-scores/2"
#define VT_CAPTURE_STRICT_REPEATS 10
/* llama.cpp sizes a context in multiples of 256 cells (measured: asked
 * for 10, llama_n_ctx reports 256). */
#define VT_CAPTURE_CTX_GRAIN 256
/* Largest seed a capture records exactly (JSON integers beyond 2^53 are not). */
#define VT_CAPTURE_MAX_SEED ((1ull << 53) - 1)

typedef struct vt_capture_opts {
    const char *runner;            /* "engine", "llamacpp", "transformers" */
    const char *model;             /* GGUF file */
    const char *prompts;           /* JSON Lines (prompts.h); NULL with score_prefix_of */
    const char *score_prefix_of;   /* a vt.capture to teacher-force on, or NULL */
    vt_score_shape score_shape;    /* with score_prefix_of: replay (the default: as generation ran)
                                      or batched (engine/runner.h) */
    const struct vt_doc *score_prefix_doc; /* LOCAL already read (capture_read.h), or NULL: read
                                              here; score_prefix_of then only names it */
    const char *out;               /* the document's path */
    const char *logits_out;        /* full-logits side file, or NULL */
    const char *topk_out;          /* top-k side file; NULL: OUT without .json, plus .topk */
    const char *model_manifest;    /* vt.manifest/1, or NULL */
    const char *launcher_manifest; /* JSON the launcher wrote (its schema: strict.h), or NULL */
    const char *package;           /* .whl or npm .tgz, or NULL */
    const char *package_root;      /* npm: the unpacked package (NULL: the directory with
                                      package.json above the runner's library); wheel: the
                                      installed files (NULL: none) */
    const char *lock;              /* npm lock (NULL: the source tree's oracle/llamacpp.lock.json) */
    const char *revision;          /* the model's revision, or NULL */
    /* Runner settings as requested. model_path is ignored (model above).
     * n_threads, n_ctx, n_batch 0 mean the default, made explicit in
     * settings.requested: threads 1 in eager mode, else one per CPU; n_ctx
     * the longest prompt plus its tokens to generate or score, rounded up
     * to a multiple of VT_CAPTURE_CTX_GRAIN (llama.cpp's context grain,
     * so every runner applies it as asked); n_batch 1 in eager mode, else
     * 512 clipped to the longest prompt plus its tokens. */
    vt_runner_settings settings;
    int32_t repetitions;           /* runs per prompt, >= 1 */
    int32_t max_tokens;            /* tokens generated per run, >= 1 (not used when scoring) */
    int32_t top_k;                 /* log-probs recorded per position (clipped to the vocabulary);
                                      0: none, no top-k side file. Not used when scoring. */
    /* settings fields ("threads", "sampling.top_p", ...) whose requested and
     * resolved values may differ under strict; the difference is recorded */
    const char *const *allow_differences;
    int n_allow_differences;
    int strict;                    /* publish only if the strict gate passes */
    int64_t created_utc;           /* seconds since the epoch, or -1: no created_utc */
    struct vt_progress *progress;  /* the runs counted on it (common/vt_progress.h), or NULL */
} vt_capture_opts;

/* Everything unset; repetitions 1, max_tokens 16, top_k 20, runner
 * settings vt_runner_settings_default with n_threads, n_ctx, n_batch 0,
 * created_utc -1. */
void vt_capture_opts_default(vt_capture_opts *o);

typedef struct vt_capture vt_capture; /* opaque */

/* Reads and checks every input: model, prompts or LOCAL (seals verified),
 * manifest, launcher manifest, package path, options. NULL with err set
 * (VT_EINPUT naming the file, line and field) on any bad input. Nothing
 * runs yet. o's strings must outlive the handle. */
vt_capture *vt_capture_open(const vt_capture_opts *o, vt_error *err);

/* Refuses, before any run, outputs that would alias an input or each other
 * (LOCAL's side files included), or exist without overwrite (the checks
 * publication makes, made early). */
int vt_capture_check_outputs(vt_capture *c, int overwrite, vt_error *err);
/* Opens the runner, runs every prompt repetitions times, verifies the
 * model against its manifest, reads the runtime identity, verifies the
 * package, builds the sealed document, reads it back with the one reader
 * and runs the strict gate (strict.h) on it. A run that fails is recorded
 * (status "error"), not returned. VT_EINPUT when the runner cannot be
 * opened or an input turns out unreadable. */
int vt_capture_run(vt_capture *c, vt_error *err);

/* The strict gate's reasons after vt_capture_run, each with its rule
 * (common/vt_reasons.h); evaluated whether or not opts.strict is set. */
const struct vt_reasons *vt_capture_refusals(const vt_capture *c);
int vt_capture_n_refusals(const vt_capture *c);
const char *vt_capture_refusal(const vt_capture *c, int i); /* reason i's text */

/* The document's bytes (canonical JSON and a newline). */
const char *vt_capture_text(const vt_capture *c, size_t *len);

typedef struct vt_capture_summary {
    int n_prompts, repetitions, n_runs, n_failed;
    int identical_tokens, identical_logits;
    int64_t n_positions;          /* over every run */
    const char *seal, *workload_seal;
    const char *logits_sha256;    /* the side file's, or NULL */
    const char *topk_path, *topk_sha256; /* the top-k side file's, or NULL */
} vt_capture_summary;
void vt_capture_summary_get(const vt_capture *c, vt_capture_summary *out);

/* Publishes the document and its side file as one group (vt_publish_group):
 * both or neither, never over an input or each other; with overwrite, old
 * files kept until the new ones are in place and restored on any failure.
 * hook (may be NULL) is vt_publish_opts.hook, for tests. VT_ECHECK without
 * writing anything if opts.strict and the gate refused. */
int vt_capture_publish(vt_capture *c, int overwrite, vt_publish_hook hook, void *hook_ctx, vt_error *err);

void vt_capture_free(vt_capture *c);

/* Recomputes a parsed document's seal and workload_seal (either schema):
 * VT_OK, or VT_ECHECK naming the member that does not match; VT_EINPUT for
 * a document without the members they cover. */
int vt_capture_verify_seals(const cJSON *doc, vt_error *err);

/* The workload_seal's input for a parsed document: a new object
 * {"model":{files,revision,arch,gguf},"prompts":..,"settings":resolved},
 * or NULL if a member is missing. */
cJSON *vt_capture_workload(const cJSON *doc);

#endif
