/* Reading vt.capture/1 and vt.prefix-scores/1 documents (capture/capture.h)
 * for comparison: fast enough for captures of 10^4 prompts x 10^2..10^3
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
 *    mapped, hashed against topk_file.sha256 and every entry checked.
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
#include "../capture/topk_file.h"
#include "../provenance/provenance.h"

typedef enum vt_doc_kind {
    VT_DOC_CAPTURE = 1, /* vt.capture/1 */
    VT_DOC_PREFIX = 2   /* vt.prefix-scores/1 */
} vt_doc_kind;

/* A run a guard has to name (run < 0: none). */
typedef struct vt_doc_note {
    int32_t run, prompt, repeat, position;
    char what[300]; /* the error text, or the field that differs */
} vt_doc_note;

typedef struct vt_doc {
    char *path;               /* as given, for messages */
    vt_doc_kind kind;
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
    int64_t n_positions;                /* over the repeat-0 streams */
    int64_t n_positions_all;            /* over every run */
    /* The top-k side file (captures with logprobs_top_k > 0; else k 0),
     * checked whole, kept open. Repeat 0 of every prompt comes first in
     * it, so prompt p's entries at its position i are at position
     * off[p] + i. */
    vt_topk_file topk;
    /* For the guards. */
    vt_doc_note error_run;   /* the first run with status "error" */
    vt_doc_note error_after; /* the first run with status "ok" and an error recorded */
    vt_doc_note differs;     /* the first later repeat that differs from its repeat 0 */
} vt_doc;

/* One input: a file (text NULL), or a document already in memory (text,
 * len; path then only names it). */
typedef struct vt_doc_source {
    const char *path;
    const char *text;
    size_t len;
    vt_doc_kind kind;
    int threads; /* for the runs: 0, one per CPU for large documents; else as many chunks (tests) */
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
