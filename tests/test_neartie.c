/* The near-tie rule on hand-made streams: the seeds' example (16 prompts x
 * 16 tokens; FP8 strict on 15, one near-tie-only prompt whose actual-prefix
 * scoring has one 125-milli-nat gap and 255 zero gaps), the same divergence
 * at 600 milli-nats failing, and the boundary at exactly 500 near-tie. */
#include <criterion/criterion.h>

#include "compare/neartie.h"

#include <math.h>

enum { PROMPTS = 16, TOKENS = 16 };

typedef struct streams {
    int32_t local[PROMPTS][TOKENS], oracle[PROMPTS][TOKENS];
    double logp_local[PROMPTS][TOKENS], logp_argmax[PROMPTS][TOKENS];
} streams;

/* Every prompt identical with zero gaps, except prompt 15, which diverges
 * at position 7 (local 760, oracle 9175, as in the seed) and whose streams
 * then differ to the end; the oracle, teacher-forced on the local tokens,
 * prefers 9175 at position 7 by gap_mnats and agrees with every later local
 * token (gap 0). */
static void seed_example(streams *s, double gap_mnats)
{
    for (int p = 0; p < PROMPTS; p++)
        for (int i = 0; i < TOKENS; i++) {
            s->local[p][i] = s->oracle[p][i] = 1000 + 17 * p + i;
            s->logp_local[p][i] = s->logp_argmax[p][i] = -0.25;
        }
    for (int i = 7; i < TOKENS; i++) {
        s->local[15][i] = i == 7 ? 760 : 5000 + i;
        s->oracle[15][i] = i == 7 ? 9175 : 6000 + i;
    }
    /* Exact in binary: -0.25 and -0.25 - gap/1000 for the gaps used here. */
    s->logp_local[15][7] = -0.25 - gap_mnats / 1000.0;
}

static void score_all(const streams *s, double threshold, vt_nt_prompt_result *r, int counts[3],
                      int gaps[3])
{
    counts[0] = counts[1] = counts[2] = 0;
    gaps[0] = gaps[1] = gaps[2] = 0;
    for (int p = 0; p < PROMPTS; p++) {
        vt_nt_prompt_input in = { TOKENS, s->local[p], s->oracle[p], s->logp_local[p], s->logp_argmax[p], NULL, NULL, NULL, NULL, NULL, NULL, NULL };
        vt_nt_score_prompt(&in, threshold, &r[p]);
        counts[r[p].cls]++;
        gaps[0] += r[p].zero_gaps;
        gaps[1] += r[p].within_gaps;
        gaps[2] += r[p].above_gaps;
    }
}

Test(neartie, seed_example_15_strict_1_near_tie_one_125_gap)
{
    static streams s;
    seed_example(&s, 125.0);
    vt_nt_prompt_result r[PROMPTS];
    int counts[3], gaps[3];
    score_all(&s, 500.0, r, counts, gaps);
    cr_assert_eq(counts[VT_PROMPT_STRICT], 15);
    cr_assert_eq(counts[VT_PROMPT_NEAR_TIE], 1);
    cr_assert_eq(counts[VT_PROMPT_FAILED], 0);
    cr_assert_eq(gaps[0], 255, "zero gaps %d", gaps[0]);
    cr_assert_eq(gaps[1], 1);
    cr_assert_eq(gaps[2], 0);
    cr_assert_eq(r[15].cls, VT_PROMPT_NEAR_TIE);
    cr_assert_eq(r[15].first_divergence, 7);
    cr_assert_eq(r[15].local_token, 760);
    cr_assert_eq(r[15].oracle_token, 9175);
    cr_assert_float_eq(r[15].first_gap_mnats, 125.0, 1e-9);
    cr_assert_float_eq(r[15].max_gap_mnats, 125.0, 1e-9);
    cr_assert_eq(r[15].max_gap_pos, 7);
    cr_assert_str_eq(vt_prompt_class_name(r[15].cls), "near-tie-only");
}

Test(neartie, the_same_divergence_at_600_fails)
{
    static streams s;
    seed_example(&s, 600.0);
    vt_nt_prompt_result r[PROMPTS];
    int counts[3], gaps[3];
    score_all(&s, 500.0, r, counts, gaps);
    cr_assert_eq(counts[VT_PROMPT_STRICT], 15);
    cr_assert_eq(counts[VT_PROMPT_NEAR_TIE], 0);
    cr_assert_eq(counts[VT_PROMPT_FAILED], 1);
    cr_assert_eq(gaps[2], 1);
    cr_assert_float_eq(r[15].max_gap_mnats, 600.0, 1e-9);
}

Test(neartie, exactly_500_is_near_tie_and_just_above_fails)
{
    static streams s;
    seed_example(&s, 500.0);
    vt_nt_prompt_result r[PROMPTS];
    int counts[3], gaps[3];
    score_all(&s, 500.0, r, counts, gaps);
    cr_assert_eq(r[15].max_gap_mnats, 500.0, "gap %.17g", r[15].max_gap_mnats);
    cr_assert_eq(r[15].cls, VT_PROMPT_NEAR_TIE);
    seed_example(&s, 500.0);
    s.logp_local[15][7] = nextafter(s.logp_local[15][7], -1.0); /* one ulp further */
    score_all(&s, 500.0, r, counts, gaps);
    cr_assert_eq(r[15].cls, VT_PROMPT_FAILED);
}

Test(neartie, an_argmax_tie_is_a_zero_gap_and_a_diverging_tie_is_near_tie)
{
    /* The local token differs from the oracle's, but the oracle scores them
     * equally: gap 0, near-tie-only (not strict). */
    int32_t local[2] = { 1, 2 }, oracle[2] = { 1, 3 };
    double lt[2] = { -0.5, -0.69 }, la[2] = { -0.5, -0.69 };
    vt_nt_prompt_input in = { 2, local, oracle, lt, la, NULL, NULL, NULL, NULL, NULL, NULL, NULL };
    vt_nt_prompt_result r;
    vt_nt_score_prompt(&in, 500.0, &r);
    cr_assert_eq(r.cls, VT_PROMPT_NEAR_TIE);
    cr_assert_eq(r.zero_gaps, 2);
    cr_assert_eq(r.first_divergence, 1);
    cr_assert_eq(vt_nt_gap_mnats(-0.5, -0.4), 0.0); /* rounding can make logp(local) > logp(argmax) */
}

/* A scorer told only its top k (vt.prefix-scores/4): where the local token
 * was not among them the gap is a lower bound, and a lower bound within the
 * threshold proves nothing: the position counts above it and the prompt
 * fails; in another shape that measured it within, it is within the noise. */
Test(neartie, a_bound_gap_counts_above_the_threshold)
{
    int32_t local[2] = { 1, 2 }, oracle[2] = { 1, 3 };
    double lt[2] = { -0.5, -1.0 }, la[2] = { -0.5, -0.9 }; /* gap 100 milli-nats, but a bound */
    unsigned char bound[2] = { 0, 1 }, none[2] = { 0, 0 };
    vt_nt_prompt_input in = { 2, local, oracle, lt, la, NULL, NULL, NULL, NULL, bound, NULL, NULL };
    vt_nt_prompt_result r;
    vt_nt_score_prompt(&in, 500.0, &r);
    cr_assert_eq(r.cls, VT_PROMPT_FAILED);
    cr_assert_eq(r.bound_gaps, 1);
    cr_assert_eq(r.above_gaps, 1);
    cr_assert_eq(r.within_gaps, 0);
    cr_assert_float_eq(r.max_gap_mnats, 100.0, 1e-9, "the lower bound is what is shown");
    in.bound = none; /* the same gap measured: near-tie-only */
    vt_nt_score_prompt(&in, 500.0, &r);
    cr_assert_eq(r.cls, VT_PROMPT_NEAR_TIE);
    cr_assert_eq(r.bound_gaps, 0);
    /* Bound in the first shape, measured within it in a second: within the noise. */
    vt_nt_prompt_input two = { 2, local, oracle, lt, la, lt, la, NULL, NULL, bound, none, NULL };
    vt_nt_score_prompt(&two, 500.0, &r);
    cr_assert_eq(r.cls, VT_PROMPT_WITHIN_NOISE);
    cr_assert_eq(r.within_noise_gaps, 1);
}

/* What a prompt's result says where nothing diverged or every gap is 0
 * (first_divergence and max_gap_pos -1: no position), and which position
 * the largest gap names when two are equal (the first). */
Test(neartie, no_divergence_no_gap_and_the_first_of_equal_gaps)
{
    int32_t tok[4] = { 5, 6, 7, 8 };
    double lp[4] = { -0.25, -0.25, -0.25, -0.25 };
    vt_nt_prompt_input in = { 4, tok, tok, lp, lp, NULL, NULL, NULL, NULL, NULL, NULL, NULL };
    vt_nt_prompt_result r;
    vt_nt_score_prompt(&in, 500.0, &r);
    cr_assert_eq(r.cls, VT_PROMPT_STRICT);
    cr_assert_eq(r.first_divergence, -1);
    cr_assert_eq(r.max_gap_pos, -1, "every gap is 0: no position has the largest");
    cr_assert_eq(r.max_gap_mnats, 0.0);
    cr_assert_eq(r.zero_gaps, 4);
    /* Two equal gaps of 100 milli-nats, at positions 1 and 3. */
    double argmax[4] = { -0.25, -0.15, -0.25, -0.15 };
    vt_nt_prompt_input in2 = { 4, tok, tok, lp, argmax, NULL, NULL, NULL, NULL, NULL, NULL, NULL };
    vt_nt_score_prompt(&in2, 500.0, &r);
    cr_assert_eq(r.cls, VT_PROMPT_STRICT, "the same tokens: strict whatever the gaps");
    cr_assert_eq(r.max_gap_pos, 1);
    cr_assert(fabs(r.max_gap_mnats - 100.0) < 1e-9, "%g", r.max_gap_mnats);
    cr_assert_eq(r.within_gaps, 2);
    cr_assert_eq(r.zero_gaps, 2);
    /* No position at all: failed, never strict. */
    vt_nt_prompt_input none = { 0, tok, tok, lp, lp, NULL, NULL, NULL, NULL, NULL, NULL, NULL };
    vt_nt_score_prompt(&none, 500.0, &r);
    cr_assert_eq(r.cls, VT_PROMPT_FAILED);
    cr_assert_eq(r.first_divergence, -1);
    cr_assert_eq(r.max_gap_pos, -1);
}

/* The oracle's noise (neartie.h): one position above the threshold in the
 * first shape. The second shape decides what it is. */
Test(neartie, the_noise_rule_on_synthetic_scores)
{
    int32_t local[3] = { 1, 2, 3 }, oracle[3] = { 1, 9, 9 };
    /* Gaps in the first shape: 0, 600, 100 milli-nats. */
    double lt[3] = { -0.1, -1.0, -0.5 }, la[3] = { -0.1, -0.4, -0.4 };
    vt_nt_prompt_result r;
    /* A self-consistent oracle (the second shape scores the same): nothing
     * is within its noise, the prompt fails. */
    vt_nt_prompt_input same = { 3, local, oracle, lt, la, lt, la, NULL, NULL, NULL, NULL, NULL };
    vt_nt_score_prompt(&same, 500.0, &r);
    cr_assert_eq(r.cls, VT_PROMPT_FAILED);
    cr_assert_eq(r.within_noise_gaps, 0);
    cr_assert_eq(r.beyond_noise_gaps, 1);
    /* Without a second shape the same: nothing excused by what was not measured. */
    vt_nt_prompt_input one = { 3, local, oracle, lt, la, NULL, NULL, NULL, NULL, NULL, NULL, NULL };
    vt_nt_score_prompt(&one, 500.0, &r);
    cr_assert_eq(r.cls, VT_PROMPT_FAILED);
    cr_assert_eq(r.within_noise_gaps, 0);
    cr_assert_eq(r.beyond_noise_gaps, 1);
    /* The second shape puts position 1 within (gap 400): within the noise. */
    double lb[3] = { -0.1, -0.8, -0.5 }, ab[3] = { -0.1, -0.4, -0.4 };
    vt_nt_prompt_input split = { 3, local, oracle, lt, la, lb, ab, NULL, NULL, NULL, NULL, NULL };
    vt_nt_score_prompt(&split, 500.0, &r);
    cr_assert_eq(r.cls, VT_PROMPT_WITHIN_NOISE);
    cr_assert_str_eq(vt_prompt_class_name(r.cls), "within-noise");
    cr_assert_eq(r.within_noise_gaps, 1);
    cr_assert_eq(r.beyond_noise_gaps, 0);
    cr_assert_eq(r.above_gaps, 1, "the first shape's gaps are reported as they are");
    cr_assert(fabs(r.max_gap_mnats - 600.0) < 1e-9, "%g", r.max_gap_mnats);
    /* Above in the second shape only (position 2: 100 here, 700 there):
     * also within the noise, in either direction. */
    double lc[3] = { -0.1, -1.0, -1.1 }, ac[3] = { -0.1, -0.4, -0.4 };
    vt_nt_prompt_input both = { 3, local, oracle, lt, la, lc, ac, NULL, NULL, NULL, NULL, NULL };
    vt_nt_score_prompt(&both, 500.0, &r);
    cr_assert_eq(r.cls, VT_PROMPT_FAILED, "position 1 is above in both shapes");
    cr_assert_eq(r.beyond_noise_gaps, 1);
    cr_assert_eq(r.within_noise_gaps, 1);
    /* Every gap within in the first shape, one above in the second: not
     * near-tie-only, which needs both shapes within. */
    double lw[3] = { -0.1, -0.5, -0.5 };
    vt_nt_prompt_input first_within = { 3, local, oracle, lw, la, lc, ac, NULL, NULL, NULL, NULL, NULL };
    vt_nt_score_prompt(&first_within, 500.0, &r);
    cr_assert_eq(r.cls, VT_PROMPT_WITHIN_NOISE);
    cr_assert_eq(r.above_gaps, 0);
    cr_assert_eq(r.within_noise_gaps, 2);
    vt_nt_prompt_input near = { 3, local, oracle, lw, la, lw, la, NULL, NULL, NULL, NULL, NULL };
    vt_nt_score_prompt(&near, 500.0, &r);
    cr_assert_eq(r.cls, VT_PROMPT_NEAR_TIE);
    cr_assert_eq(r.within_noise_gaps + r.beyond_noise_gaps, 0);
    /* A third shape (eager). Self-consistent in all three: nothing within
     * the noise, the prompt fails. */
    vt_nt_prompt_input same3 = { 3, local, oracle, lt, la, lt, la, lt, la, NULL, NULL, NULL };
    vt_nt_score_prompt(&same3, 500.0, &r);
    cr_assert_eq(r.cls, VT_PROMPT_FAILED);
    cr_assert_eq(r.within_noise_gaps, 0);
    cr_assert_eq(r.beyond_noise_gaps, 1);
    cr_assert_eq(r.above_gaps_other[0], 1);
    cr_assert_eq(r.above_gaps_other[1], 1);
    /* Above in replay and batched, within in eager: within the noise. */
    vt_nt_prompt_input eager_within = { 3, local, oracle, lt, la, lt, la, lb, ab, NULL, NULL, NULL };
    vt_nt_score_prompt(&eager_within, 500.0, &r);
    cr_assert_eq(r.cls, VT_PROMPT_WITHIN_NOISE);
    cr_assert_eq(r.within_noise_gaps, 1);
    cr_assert_eq(r.beyond_noise_gaps, 0);
    cr_assert_eq(r.above_gaps_other[1], 0);
    cr_assert(fabs(r.max_gap_other_mnats[1] - 400.0) < 1e-9, "%g", r.max_gap_other_mnats[1]);
    /* Eager alone above (position 2): within the noise too; eager and
     * replay above at position 1, batched within: within. */
    vt_nt_prompt_input eager_above = { 3, local, oracle, lw, la, lw, la, lc, ac, NULL, NULL, NULL };
    vt_nt_score_prompt(&eager_above, 500.0, &r);
    cr_assert_eq(r.cls, VT_PROMPT_WITHIN_NOISE);
    cr_assert_eq(r.within_noise_gaps, 2);
    /* A third shape with no second: the rule counts the shapes given. */
    vt_nt_prompt_input no_second = { 3, local, oracle, lt, la, NULL, NULL, lt, la, NULL, NULL, NULL };
    vt_nt_score_prompt(&no_second, 500.0, &r);
    cr_assert_eq(r.cls, VT_PROMPT_FAILED);
    cr_assert_eq(r.beyond_noise_gaps, 1);
}

/* The same rule position by position (vt_nt_score_position, which the
 * prompt's counts and the HTML page's colours both come from): each class,
 * the gaps of every shape, and a bound counted above. */
Test(neartie, each_position_class_by_the_rule)
{
    int32_t local[4] = { 1, 2, 3, 4 }, oracle[4] = { 1, 9, 9, 9 };
    /* First shape: 0, 600, 100, 0 (position 3 bound); second: 0, 400, 700, 0. */
    double lt[4] = { -0.1, -1.0, -0.5, -0.2 }, la[4] = { -0.1, -0.4, -0.4, -0.2 };
    double lb[4] = { -0.1, -0.8, -1.1, -0.2 }, ab[4] = { -0.1, -0.4, -0.4, -0.2 };
    unsigned char bound[4] = { 0, 0, 0, 1 };
    vt_nt_prompt_input in = { 4, local, oracle, lt, la, lb, ab, NULL, NULL, bound, NULL, NULL };
    vt_nt_position x;
    vt_nt_score_position(&in, 0, 500.0, &x);
    cr_assert_eq(x.cls, VT_POS_ZERO);
    cr_assert_eq(x.shapes, 2);
    cr_assert_eq(x.n_above, 0);
    vt_nt_score_position(&in, 1, 500.0, &x);
    cr_assert_eq(x.cls, VT_POS_WITHIN_NOISE, "600 here, 400 in the second shape");
    cr_assert(fabs(x.gap_mnats - 600.0) < 1e-9 && fabs(x.gap_other_mnats[0] - 400.0) < 1e-9, "%g %g", x.gap_mnats,
              x.gap_other_mnats[0]);
    cr_assert_eq(x.above, 1);
    vt_nt_score_position(&in, 2, 500.0, &x);
    cr_assert_eq(x.cls, VT_POS_WITHIN_NOISE, "100 here, 700 there: either direction");
    cr_assert_eq(x.above, 0);
    vt_nt_score_position(&in, 3, 500.0, &x);
    cr_assert_eq(x.bound, 1);
    cr_assert_eq(x.cls, VT_POS_WITHIN_NOISE, "a bound is above in its shape; the second says 0");
    /* One shape: the bound and the 600 are beyond; the 100 a near tie. */
    vt_nt_prompt_input one = { 4, local, oracle, lt, la, NULL, NULL, NULL, NULL, bound, NULL, NULL };
    vt_nt_score_position(&one, 1, 500.0, &x);
    cr_assert_eq(x.cls, VT_POS_BEYOND_NOISE);
    vt_nt_score_position(&one, 2, 500.0, &x);
    cr_assert_eq(x.cls, VT_POS_NEAR_TIE);
    cr_assert_eq(x.shapes, 1);
    vt_nt_score_position(&one, 3, 500.0, &x);
    cr_assert_eq(x.cls, VT_POS_BEYOND_NOISE, "a gap known only as a lower bound is never within");
    /* The prompt's counts are the positions' classes summed. */
    vt_nt_prompt_result r;
    vt_nt_score_prompt(&in, 500.0, &r);
    cr_assert_eq(r.within_noise_gaps, 3);
    cr_assert_eq(r.beyond_noise_gaps, 0);
    cr_assert_eq(r.bound_gaps, 1);
    cr_assert_eq(r.cls, VT_PROMPT_WITHIN_NOISE);
}

/* ---------------------------------------------------------------- metrics */

/* The row accumulator (kld.h) on two rows worked out by hand. Row 0: local
 * (0.5, 0.5), oracle (0.75, 0.25), token 0: KL = 0.75 ln 1.5 + 0.25 ln 0.5,
 * dp = -0.25, NLL ln 2 and -ln 0.75; row 1: both (0.5, 0.5), token 1. */
#include "compare/kld.h"
Test(metrics, the_row_accumulator_by_hand)
{
    float l0[2] = { 0, 0 }, o0[2] = { (float)log(3.0), 0 }, l1[2] = { 0, 0 };
    vt_kld_acc a;
    vt_kld_acc_init(&a, 2);
    cr_assert_eq(vt_kld_acc_add(&a, l0, o0, 0, 0, 0), 0);
    cr_assert_eq(vt_kld_acc_add(&a, l1, l1, 1, 0, 1), 0);
    vt_kld_acc_finish(&a);
    const double kl0 = 0.75 * log(1.5) + 0.25 * log(0.5), tol = 1e-7;
    cr_assert(a.m.available);
    cr_assert_eq(a.m.positions, 2);
    cr_assert(fabs(a.m.kld_mean - kl0 / 2) < tol, "%.9g", a.m.kld_mean);
    cr_assert(fabs(a.m.kld_median - kl0 / 2) < tol, "%.9g", a.m.kld_median);
    cr_assert(fabs(a.m.kld_max - kl0) < tol && a.m.kld_max_position == 0);
    cr_assert(fabs(a.m.kld_min) < tol);
    cr_assert_eq(a.m.top1_agreement, 1.0, "both argmax 0 in row 0 (the lower id of a tie), tied in row 1");
    cr_assert(fabs(a.m.rms_dp - sqrt(0.0625 / 2)) < tol, "%.9g", a.m.rms_dp);
    cr_assert(fabs(a.m.max_abs_dp - 0.25) < tol);
    cr_assert(fabs(a.nll_local - log(2.0)) < tol, "%.9g", a.nll_local);
    cr_assert(fabs(a.nll_oracle - (-log(0.75) + log(2.0)) / 2) < tol, "%.9g", a.nll_oracle);
    /* The largest |dlogprob| over the vocabulary: token 1 of row 0, ln 0.5 - ln 0.25. */
    cr_assert(fabs(a.m.max_abs_dlogprob - log(2.0)) < tol, "%.9g", a.m.max_abs_dlogprob);
    cr_assert(fabs(a.m.max_abs_dlogit - log(3.0)) < tol, "%.9g", a.m.max_abs_dlogit);
    vt_kld_acc_free(&a);
    /* Identical rows: every KL 0, and the largest is the first row's (a
     * position is always named when there is one). */
    vt_kld_acc_init(&a, 2);
    cr_assert_eq(vt_kld_acc_add(&a, l1, l1, 0, 3, 5), 0);
    cr_assert_eq(vt_kld_acc_add(&a, l1, l1, 1, 3, 6), 0);
    vt_kld_acc_finish(&a);
    cr_assert_eq(a.m.kld_max, 0.0);
    cr_assert_eq(a.m.kld_max_prompt, 3);
    cr_assert_eq(a.m.kld_max_position, 5);
    cr_assert_eq(a.m.rms_dp, 0.0);
    vt_kld_acc_free(&a);
}

#include "capture/logits_file.h"
#include "compare/kld.h"

#include <cjson/cJSON.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { NV = 4, NPOS = 4 };

/* One prompt of NPOS positions over a vocabulary of NV, logits ln(prob[i]) +
 * shift written to a vt.logits/1 side file in dir, as a document the
 * metrics read (vt_doc with its meta, side file and oracle tokens). */
static void metrics_doc(vt_doc *d, const char *dir, const char *name, const double prob[NPOS][NV], float shift,
                        const int32_t *tokens)
{
    vt_error err;
    vt_error_clear(&err);
    float logits[NPOS * NV];
    for (int i = 0; i < NPOS; i++)
        for (int v = 0; v < NV; v++)
            logits[i * NV + v] = (float)log(prob[i][v]) + shift;
    vt_logits_writer *w = vt_logits_writer_new(dir, &err);
    cr_assert_not_null(w, "%s", err.msg);
    cr_assert_eq(vt_logits_writer_add(w, 0, 0, logits, NPOS, NV, &err), VT_OK, "%s", err.msg);
    vt_sha256_hex sha;
    uint64_t size;
    cr_assert_eq(vt_logits_writer_finish(w, &sha, &size, &err), VT_OK, "%s", err.msg);
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    cr_assert_geq(fd, 0);
    cr_assert_eq(vt_logits_writer_copy(w, fd, &err), VT_OK, "%s", err.msg);
    close(fd);
    vt_logits_writer_free(w);
    memset(d, 0, sizeof *d);
    d->path = strdup(name);
    d->logits_path = strdup(path);
    d->meta = cJSON_CreateObject();
    cJSON_AddNumberToObject(cJSON_AddObjectToObject(cJSON_AddObjectToObject(d->meta, "model"), "gguf"), "n_vocab", NV);
    cJSON *lf = cJSON_AddObjectToObject(d->meta, "logits_file");
    cJSON_AddNumberToObject(lf, "size", (double)size);
    cJSON_AddStringToObject(lf, "sha256", sha.hex);
    d->n_prompts = 1;
    d->off = calloc(1, sizeof *d->off);
    d->n = calloc(1, sizeof *d->n);
    d->n[0] = NPOS;
    d->tokens = malloc(NPOS * sizeof *d->tokens);
    memcpy(d->tokens, tokens, NPOS * sizeof *d->tokens);
}

/* The distribution metrics against values worked out by hand. Oracle p,
 * local q at four positions:
 *   0: p = q = (1/2, 1/4, 1/8, 1/8)                 KL 0
 *   1: p as 0, q = (1/4, 1/2, 1/8, 1/8)             KL = 1/2 ln 2 - 1/4 ln 2 = ln2 / 4
 *   2: p as 0, q = (1/8, 1/4, 1/8, 1/2)             KL = 1/2 ln 4 - 1/8 ln 4 = 3 ln2 / 4
 *   3: p = (1/4, 1/4, 1/4, 1/4), q as 0             KL = 1/4 (-ln2 + 0 + ln2 + ln2) = ln2 / 4
 * sorted (0, 1, 1, 3) ln2/4: mean 5/16 ln2, median 1/4 ln2, p99 (llama.cpp's
 * interpolation at 0.99 x 3 = 2.97) (1/4 + 0.97 x 1/2) ln2, max 3/4 ln2 at
 * position 2, min 0; the mean's uncertainty sqrt(var / 3) with var =
 * 11/64 ln2^2 - (5/16 ln2)^2 = 19/256 ln2^2. Top-1 (lowest id on ties): the
 * same at 0 and 3, not at 1 and 2: 0.5. Local logits are ln q + 1, so
 * max |dlogit| = 1 + 2 ln2 (position 2, ids 3: ln(1/2) + 1 - ln(1/8)) and
 * max |dlogprob| = 2 ln2. The oracle's tokens are 0 everywhere: dp = q(0) -
 * p(0) = 0, -1/4, -3/8, 1/4: max |dp| 3/8, RMS sqrt(17/256). */
Test(metrics, computed_by_hand_on_four_distributions)
{
    static const double p[NPOS][NV] = { { .5, .25, .125, .125 }, { .5, .25, .125, .125 }, { .5, .25, .125, .125 },
                                        { .25, .25, .25, .25 } };
    static const double q[NPOS][NV] = { { .5, .25, .125, .125 }, { .25, .5, .125, .125 }, { .125, .25, .125, .5 },
                                        { .5, .25, .125, .125 } };
    static const int32_t tokens[NPOS] = { 0, 0, 0, 0 };
    char dir[] = "/tmp/vt-metrics-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    vt_doc L, O;
    metrics_doc(&L, dir, "L.logits", q, 1.0f, tokens);
    metrics_doc(&O, dir, "O.logits", p, 0.0f, tokens);
    const int32_t comparable[1] = { NPOS };
    vt_nt_metrics m;
    vt_error err;
    vt_error_clear(&err);
    cr_assert_eq(vt_nt_metrics_compute(&L, &O, comparable, &m, NULL, &err), VT_OK, "%s", err.msg);
    const double ln2 = log(2.0), tol = 1e-6; /* float32 logits */
    cr_assert(m.available, "%s", m.reason);
    cr_assert_eq(m.positions, 4);
    cr_assert_eq(m.prompts, 1);
    cr_assert(fabs(m.kld_mean - 5.0 / 16 * ln2) < tol, "mean %.9g", m.kld_mean);
    cr_assert(fabs(m.kld_median - 0.25 * ln2) < tol, "median %.9g", m.kld_median);
    cr_assert(fabs(m.kld_p99 - (0.25 + 0.97 * 0.5) * ln2) < tol, "p99 %.9g", m.kld_p99);
    cr_assert(fabs(m.kld_max - 0.75 * ln2) < tol, "max %.9g", m.kld_max);
    cr_assert(fabs(m.kld_min) < tol, "min %.9g", m.kld_min);
    cr_assert_eq(m.kld_max_prompt, 0);
    cr_assert_eq(m.kld_max_position, 2);
    cr_assert(fabs(m.kld_mean_unc - ln2 * sqrt(19.0 / 256 / 3)) < tol, "uncertainty %.9g", m.kld_mean_unc);
    cr_assert_eq(m.same_top, 2);
    cr_assert_eq(m.top1_agreement, 0.5);
    cr_assert(fabs(m.max_abs_dlogit - (1 + 2 * ln2)) < tol, "max |dlogit| %.9g", m.max_abs_dlogit);
    cr_assert(fabs(m.max_abs_dlogprob - 2 * ln2) < tol, "max |dlogprob| %.9g", m.max_abs_dlogprob);
    cr_assert(fabs(m.max_abs_dp - 0.375) < tol, "max |dp| %.9g", m.max_abs_dp);
    cr_assert(fabs(m.rms_dp - sqrt(17.0 / 256)) < tol, "RMS dp %.9g", m.rms_dp);
    /* Only the positions with identical prefixes count: the first two. */
    const int32_t first_two[1] = { 2 };
    cr_assert_eq(vt_nt_metrics_compute(&L, &O, first_two, &m, NULL, &err), VT_OK, "%s", err.msg);
    cr_assert_eq(m.positions, 2);
    cr_assert(fabs(m.kld_mean - ln2 / 8) < tol && fabs(m.kld_max - ln2 / 4) < tol, "mean %.9g max %.9g", m.kld_mean,
              m.kld_max);
    cr_assert_eq(m.top1_agreement, 0.5);
    vt_doc_free(&L);
    vt_doc_free(&O);
    char cmd[64];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}
