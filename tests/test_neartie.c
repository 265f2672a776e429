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
        vt_nt_prompt_input in = { TOKENS, s->local[p], s->oracle[p], s->logp_local[p], s->logp_argmax[p] };
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
    vt_nt_prompt_input in = { 2, local, oracle, lt, la };
    vt_nt_prompt_result r;
    vt_nt_score_prompt(&in, 500.0, &r);
    cr_assert_eq(r.cls, VT_PROMPT_NEAR_TIE);
    cr_assert_eq(r.zero_gaps, 2);
    cr_assert_eq(r.first_divergence, 1);
    cr_assert_eq(vt_nt_gap_mnats(-0.5, -0.4), 0.0); /* rounding can make logp(local) > logp(argmax) */
}
