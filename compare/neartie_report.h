/* vt-neartie: a local capture scored against an oracle capture under the
 * near-tie rule (compare/neartie.h), with the oracle's actual-prefix scores
 * (vt.prefix-scores/3: the oracle teacher-forced on the local streams),
 * read from a file or computed here by the capture library's prefix scoring.
 *
 *   c = vt_nt_open(&opts, err);     read and verify the inputs (seals, schema)
 *   vt_nt_guard(c, err);            the guards (guards.h); with score_with,
 *                                   the prefix scoring, then its guards
 *   if (vt_nt_n_refusals(c)) ...    refused: nothing is scored
 *   vt_nt_compare(c, err);          classification, gaps, metrics, outputs
 *   vt_nt_table(c); vt_nt_totals_get(c, &t); vt_nt_publish(c, err);
 *
 * Outputs:
 *  - a text table (one line per prompt: id, class, first divergence,
 *    local and oracle token there, gap; then totals, largest gaps, metrics,
 *    allowed differences, gate);
 *  - a JSON report, schema vt.neartie-report/4 (/1 had no evidence member,
 *    /2 no noise members, /3 two noise shapes at most: no third_shape,
 *    noise_shape, max_gap_by_shape_mnats or totals.shapes), canonical JSON and a
 *    newline, sealed like a capture (seal: SHA-256 of the canonical JSON of
 *    everything before it), members in this order:
 *      schema, tool{name,version,git},
 *      local{file,sha256,seal,workload_seal,runner},
 *      oracle{...}, prefix_scores{file,sha256,seal,workload_seal,runner,scored_by,shape,
 *        noise_shape (replay, batched or eager: eager mode is a shape of its own)},
 *      noise{rule, available, reason? (without a second shape),
 *        second_shape{file,sha256,seal,workload_seal,runner,scored_by,shape,noise_shape}|null,
 *        third_shape{...}|null,
 *        floor{shape,seal,definition}|null (measured only with score_with)},
 *      threshold_mnats, token_text{file,note},
 *      allowed_differences[{field,differs,differences[{field,left,right}]}],
 *      evidence{strict, unverified[{rule,file,reason}]} (strict false: the
 *        captures were let in by --allow-unverified; each strict rule they
 *        do not pass is listed),
 *      prompts[{index,id,class,positions,first_divergence|null{position,
 *        local{id,text?},oracle{id,text?},gap_mnats,local_margin_mnats,
 *        oracle_margin_mnats},zero_gaps,within_gaps,
 *        above_gaps,max_gap_mnats,max_gap_position|null,within_noise_gaps,
 *        beyond_noise_gaps,max_gap_by_shape_mnats{SHAPE: gap, per shape scored},
 *        noise_floor_mnats|null,noise_floor_position|null}],
 *      totals{prompts,strict,near_tie_only,failed,within_noise,positions,
 *        zero_gaps,within_gaps,above_gaps,max_gap_mnats,scorer_disagreements,
 *        within_noise_gaps,beyond_noise_gaps,shapes[{shape,above_gaps,max_gap_mnats}],
 *        noise_floor_max_mnats|null},
 *      largest_gaps[{prompt,id,position,gap_mnats,local,oracle,context[]}],
 *      metrics{available,reason?|scope,positions,prompts,kld{...},
 *        top1_agreement,max_abs_dlogit,max_abs_dlogprob,rms_dp,max_abs_dp},
 *      gate{require_strict,max_failed,within_noise,passed,reasons[]}, seal
 *    The gaps shown (classes, first divergence, largest gaps) are the first
 *    shape's: replay where given. The noise rule is neartie.h's.
 *    The margins: at the first divergence (identical prefixes), by how
 *    many milli-nats the local capture preferred its token over the
 *    oracle's, and the oracle capture its token over the local one, from
 *    each capture's top-k side file (null where it has none or the other
 *    token is not in its top k): how near the tie was on each side.
 *    Token text ({id, text?, text_hex?}) is the token's bytes from the
 *    model's vocabulary; bytes that are not UTF-8 (a token that splits a
 *    character) and NUL are U+FFFD in text, and text_hex then holds the
 *    exact bytes; absent when no vocabulary could be opened. (The text
 *    table writes control characters and such bytes as \n, \xNN.)
 *  - JUnit XML: one test case per prompt, a failed prompt as <failure>
 *    with its divergence in the message.
 *  - in-toto: the verdict as an in-toto Statement v1 whose predicate is the
 *    test-result predicate, its subjects the report, the captures and the
 *    prefix-scores files by sha256 (build_intoto says what goes where).
 * The report, the JUnit file and the statement (and the prefix scores, with
 * score_with and scores_out) are published as one group (common/vt_publish.h).
 *
 * Gate: at least require_strict strict prompts and at most max_failed
 * failed ones. */
#ifndef VT_NEARTIE_REPORT_H
#define VT_NEARTIE_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "../common/vt_error.h"
#include "guards.h"

typedef struct vt_nt_opts {
    const char *local, *oracle;
    const char *prefix_scores; /* a vt.prefix-scores, or NULL with score_with */
    const char *prefix_scores_b; /* the same scores in another shape, or NULL */
    const char *prefix_scores_c; /* and in a third, or NULL (neartie.h: replay, batched, eager) */
    const char *score_with;    /* a runner name: score here, or NULL */
    const char *model;         /* GGUF: the scorer's model, and the token text */
    int32_t threads;           /* the scorer's threads; 0: the oracle's */
    double threshold_mnats;    /* default 500 */
    const char *out, *junit;   /* report and JUnit paths, or NULL */
    const char *intoto;        /* an in-toto Statement v1 of the verdict (test-result predicate), or NULL;
                                  needs out (the report is its subject), and scores_out with score_with */
    const char *html;          /* a self-contained HTML page of the comparison (neartie_html.c), or NULL */
    const char *scores_out;    /* with score_with: also publish the scores */
    const char *package, *package_root, *lock; /* with score_with: the scorer's package, as
                                                  vt-capture --package (the oracle's runtime
                                                  includes its package) */
    int overwrite;
    int32_t require_strict;    /* default 0 */
    int32_t max_failed;        /* default 0 */
    vt_nt_guard_opts guard;
    int32_t top_gaps;          /* largest gaps listed, default 10 */
    struct vt_progress *progress; /* --score-with: each scoring's prompts counted on it, or NULL */
    int32_t context;           /* tokens shown before each, default 4 */
} vt_nt_opts;

void vt_nt_opts_default(vt_nt_opts *o);

typedef struct vt_nt_totals {
    int32_t prompts, strict, near_tie, failed;
    int32_t within_noise;          /* prompts (neartie.h): not counted as failed */
    int64_t positions, zero_gaps, within_gaps, above_gaps;
    int64_t within_noise_gaps, beyond_noise_gaps;
    int64_t above_other[2];     /* gaps above the threshold in the second and third shape */
    double max_other_mnats[2];  /* the largest gap there */
    double max_gap_mnats;
    double noise_floor_max_mnats;  /* the oracle's largest gap on its own streams (with score_with) */
    int64_t bound_gaps;         /* positions whose gap is a lower bound (neartie.h: counted above) */
    int64_t scorer_disagreements; /* positions of identical prefix where the
                                     scores' argmax is not the oracle's token */
    int gate_passed;
} vt_nt_totals;

typedef struct vt_neartie vt_neartie;

vt_neartie *vt_nt_open(const vt_nt_opts *o, vt_error *err);
int vt_nt_guard(vt_neartie *c, vt_error *err);
const vt_reasons *vt_nt_refusals(const vt_neartie *c);
int vt_nt_n_refusals(const vt_neartie *c);
const char *vt_nt_refusal(const vt_neartie *c, int i); /* reason i's text */
int vt_nt_compare(vt_neartie *c, vt_error *err);
const char *vt_nt_table(const vt_neartie *c);
const char *vt_nt_report_json(const vt_neartie *c, size_t *len);
const char *vt_nt_junit(const vt_neartie *c, size_t *len);
void vt_nt_totals_get(const vt_neartie *c, vt_nt_totals *t);
int vt_nt_publish(vt_neartie *c, vt_error *err);
void vt_nt_free(vt_neartie *c);

#endif
