/* The one reader of vt.capture and vt.prefix-scores documents (every
 * version vt wrote: /1 and /2; capture/capture.h) and their side files,
 * used by vt-neartie, vt-capture --score-prefix-of and vt-capture's own
 * strict gate: fast enough for captures of 10^4 prompts x 10^2..10^3
 * tokens (tens of megabytes of JSON, and top-k side files of hundreds),
 * and as strict as the format is.
 *
 *  - A capture is canonical JSON and a newline, exactly as vt-capture
 *    writes it (capture/canonical_json.h); anything else is refused. Its
 *    seal is then the SHA-256 of its own bytes up to the seal member, plus
 *    "}": hashed straight from the mapped file, on a second thread, while
 *    the document is parsed. The file's own SHA-256 comes from the same pass.
 *  - "runs" (nearly all of a large capture) is read by a scanner made for
 *    it: every run checked against the schema ($defs/capture_run,
 *    $defs/prefix_run) and the canonical form as it goes, in the order
 *    vt-capture writes them (repeat 0 of every prompt, then repeat 1, ...;
 *    members in schema order). Only what a comparison needs is kept: each
 *    prompt's repeat-0 stream, and for prefix scores its log-probs. Later
 *    repeats are compared with repeat 0 on the fly and dropped.
 *  - A capture's top-k side file (vt.topk/1, capture/topk_file.h) is
 *    mapped, hashed against topk_file.sha256 and every entry checked; its
 *    full-logits side file (vt.logits/1) must be there with the size and
 *    SHA-256 the document records. A side file the document names is part
 *    of it: missing or different is a bad input, never "not available".
 *  - Each run's tokens and logits_sha256 are compared with its prompt's
 *    repeat 0 (determinism is re-checked from the runs), and the document's
 *    determinism member must say what the runs show.
 *  - Prefix scores' values are checked, not clamped: every log-prob is
 *    finite and <= 0, the argmax's log-prob is at least the scored token's
 *    (within VT_DOC_LOGPROB_SLACK nats) and equal to it where the argmax is
 *    the scored token.
 *  - Every other member (kilobytes, a few megabytes for many prompts) is
 *    parsed by cJSON with runs as [], written back canonically and compared
 *    byte for byte, checked against capture/vt.capture.schema.json, and its
 *    workload seal recomputed.
 * Any failure is VT_EINPUT naming the file, the byte offset or JSON path,
 * and what was expected. */
#ifndef VT_CAPTURE_READ_H
#define VT_CAPTURE_READ_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "../common/vt_error.h"
#include "topk_file.h"
#include "../engine/runner.h"
#include "../provenance/provenance.h"

typedef enum vt_doc_kind {
    VT_DOC_CAPTURE = 1, /* vt.capture/N */
    VT_DOC_PREFIX = 2   /* vt.prefix-scores/N */
} vt_doc_kind;

/* How far (nats) an argmax's log-prob may fall below the scored token's
 * before the scores are malformed: float32 logits through a double
 * log-softmax agree to far less; more is not an argmax. */
#define VT_DOC_LOGPROB_SLACK 1e-6

/* A run a guard has to name (run < 0: none). */
typedef struct vt_doc_note {
    int32_t run, prompt, repeat, position;
    char what[300]; /* the error text, or the field that differs */
} vt_doc_note;

typedef struct vt_doc {
    char *path;               /* as given, for messages */
    vt_doc_kind kind;
    int version;              /* the schema's: 1 or 2 (prefix scores: 1 to 4) */
    vt_score_shape shape;     /* prefix scores: how they were computed (before /3: batched) */
    int have_stat;            /* read from a file: dev and ino are its */
    uint64_t dev, ino;
    cJSON *meta;              /* the document with "runs": [] */
    size_t size;              /* bytes */
    vt_sha256_hex file_sha256, seal, workload_seal;
    int32_t n_prompts, repeats;
    /* Each prompt's repeat-0 stream: n[p] positions from off[p] in the
     * pools (n[p] is 0 for a run that failed). */
    int64_t *off;
    int32_t *n;
    int32_t *tokens;
    double *logprobs, *argmax_logprobs; /* prefix scores only */
    int32_t *argmax;                    /* prefix scores only */
    /* vt.prefix-scores/4 only (else NULL): 1 where logprobs[] is an upper
     * bound, the scored token not among the scorer's top k (capture.h). */
    unsigned char *bound;
    int64_t n_positions;                /* over the repeat-0 streams */
    int64_t n_positions_all;            /* over every run */
    /* The top-k side file (captures with logprobs_top_k > 0; else k 0),
     * checked whole, kept open. Repeat 0 of every prompt comes first in
     * it, so prompt p's entries at its position i are at position
     * off[p] + i. */
    vt_topk_file topk;
    /* The side files' paths (resolved beside the document), or NULL. */
    char *topk_path, *logits_path;
    /* For the guards. */
    vt_doc_note error_run;   /* the first run with status "error" */
    vt_doc_note error_after; /* the first run with status "ok" and an error recorded */
    vt_doc_note differs;     /* the first later repeat that differs from its repeat 0 (what:
                                "status", "tokens", "logits_sha256", or a score array) */
    /* What the runs show: no run failed and every repeat has its repeat 0's
     * tokens (and scores) / logits_sha256. The document's determinism
     * member is checked against these. */
    int runs_identical_tokens, runs_identical_logits;
} vt_doc;

/* One input: a file (text NULL), or a document already in memory (text,
 * len; path then only names it). */
typedef struct vt_doc_source {
    const char *path;
    const char *text;
    size_t len;
    vt_doc_kind kind;
    int threads; /* for the runs: 0, one per CPU for large documents; else as many chunks (tests) */
    int no_side_files; /* the side files are not published yet (vt-capture reading what it built) */
} vt_doc_source;

int vt_doc_read(const vt_doc_source *src, vt_doc *out, vt_error *err);
/* n sources at once, one thread each (and each hashing on another). On
 * failure err is the first failing source's, in order, and every out[] is
 * freed. */
int vt_doc_read_all(const vt_doc_source *src, vt_doc *out, int n, vt_error *err);
void vt_doc_free(vt_doc *d);

/* The parsed schema (capture/vt.capture.schema.json, built into libvt). */
const cJSON *vt_capture_schema(void);

/* Whether the JSON number text s[0..n) is in canonical form
 * (vt_canonical_number of its value), as the run reader judges it: 1 or 0;
 * *value gets the value. For tests. */
int vt_doc_number_canonical(const char *s, size_t n, double *value);

#endif
