/* vt-neartie's state, shared by the files that build its outputs
 * (neartie_report.c: inputs, scoring, JSON, JUnit, in-toto, the table;
 * neartie_html.c: the HTML page). Not a public header. */
#ifndef VT_NEARTIE_INTERNAL_H
#define VT_NEARTIE_INTERNAL_H

#include "kld.h"
#include "neartie.h"
#include "neartie_report.h"

#include "../capture/capture_read.h"
#include "../engine/tokenizer.h"

#include <cjson/cJSON.h>

/* The inputs: both captures, the oracle's scores of the local streams (the
 * first shape: replay where there is one), the same in its other shapes
 * (SCORES_B, SCORES_C, optional; in the order replay, batched, eager), and
 * the oracle's scores of its own streams (SELF: its noise floor, measured
 * only with score_with). */
enum { LOCAL = 0, ORACLE = 1, SCORES = 2, SCORES_B = 3, SCORES_C = 4, SELF = 5, N_DOCS = 6 };

/* A scoring's shape as the noise rule names it: eager mode evaluates one
 * token at a time in either shape, so it is one shape of its own. */
enum { KIND_REPLAY = 0, KIND_BATCHED = 1, KIND_EAGER = 2 };
extern const char *const vt_nt_kind_names[3];
int vt_nt_scoring_kind(const vt_doc *d);

typedef struct gap_entry {
    double gap;
    int32_t prompt, position;
} gap_entry;

struct vt_neartie {
    vt_nt_opts o;
    vt_doc doc[N_DOCS];
    int have[N_DOCS];  /* which were read */
    char *text[N_DOCS]; /* score_with: the computed scores' bytes */
    size_t text_len[N_DOCS];
    const char *file[N_DOCS]; /* the scores' files as given (the report names them), or NULL */
    vt_reasons refusals;
    vt_reasons unverified; /* --allow-unverified: the strict rules the captures do not pass */
    cJSON *allowed;    /* what the guards recorded */
    unsigned long json_failures; /* vt_json_alloc_failures() when opened */
    int guarded;
    /* token text */
    vt_tokenizer *tok;
    char tok_file[1024];
    vt_sha256_hex tok_sha;
    char tok_note[1600];
    /* results */
    const char **ids; /* each prompt's id (a cJSON array is a list: no walk per use) */
    vt_nt_prompt_result *res;
    int32_t *positions, *comparable;
    double *margin; /* per prompt: local's and oracle's margin at the first divergence (NAN: unknown) */
    double *floor_gap; /* per prompt: the oracle's largest gap on its own stream (SELF), or NAN */
    int32_t *floor_pos;
    gap_entry *top;
    int32_t n_top;
    vt_nt_metrics metrics;
    double *kl_at; /* KL(oracle || local) at the local stream's position off[p] + i, NAN where not compared */
    vt_nt_totals totals;
    char *gate_reasons[2];
    int n_gate_reasons;
    cJSON *report_tree; /* the report as sealed, seal included: what the HTML page shows */
    char *table, *report, *junit, *intoto, *html;
    size_t report_len, junit_len, intoto_len, html_len;
};

/* A token's bytes (raw, *n), or 0 without a vocabulary. */
int vt_nt_tok_bytes(vt_neartie *c, int32_t id, char *raw, size_t cap, size_t *n);

/* Prompt p's streams and scores, as vt_nt_score_prompt takes them (the
 * streams compared over the shorter of the two). */
void vt_nt_prompt_input_of(const vt_neartie *c, int32_t p, vt_nt_prompt_input *in);

/* The HTML page (neartie_html.c) into c->html: built from the report tree
 * and the per-position scores, after the report. */
int vt_nt_build_html(vt_neartie *c, vt_error *err);

#endif
