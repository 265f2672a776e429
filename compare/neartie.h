/* The near-tie rule (DESIGN.md, Near-tie comparison), on one prompt's
 * streams. The oracle is teacher-forced on the LOCAL tokens ("actual-prefix
 * scoring"); at each position
 *     gap = 1000 * (logp(oracle argmax) - logp(local token))  milli-nats, >= 0.
 * strict: local tokens equal the oracle's at every position;
 * near-tie-only: not strict, every gap <= threshold (inclusive);
 * failed: some gap above the threshold, or no position compared at all
 * (0 positions are never strict: they compare nothing).
 *
 * The oracle's noise (DESIGN.md): an oracle need not agree with itself
 * across execution shapes. Given its scores of the same LOCAL stream in
 * other shapes (replay and batched, engine/runner.h, and eager: one token
 * per evaluation from the first prompt token), a position whose gap is
 * above the threshold in some shape and within it in another is "within
 * the oracle's noise": the oracle itself cannot decide it. Above in every
 * shape scored is beyond the noise. A prompt is then
 *   failed: some position beyond the noise (or nothing compared);
 *   within-noise: not failed, not strict, some position within the noise;
 *   near-tie-only: not strict, every gap within the threshold in every shape.
 * Without a second shape every position above the threshold is beyond: the
 * noise never excuses what was not measured. A self-consistent oracle
 * (all shapes equal) has no position within the noise.
 *
 * An oracle told only its top k (a server) cannot give the log-prob of a
 * local token outside them: that position's gap is a lower bound, and it
 * counts as above the threshold in that shape (bound, below). */
#ifndef VT_NEARTIE_H
#define VT_NEARTIE_H

#include <stdint.h>

typedef enum vt_prompt_class {
    VT_PROMPT_STRICT = 0,
    VT_PROMPT_NEAR_TIE = 1,
    VT_PROMPT_FAILED = 2,
    VT_PROMPT_WITHIN_NOISE = 3
} vt_prompt_class;

/* "strict", "near-tie-only", "failed", "within-noise" */
const char *vt_prompt_class_name(vt_prompt_class c);

/* One prompt: n positions of both streams and of the oracle's prefix scores. */
typedef struct vt_nt_prompt_input {
    int32_t n;
    const int32_t *local_tokens;
    const int32_t *oracle_tokens;
    const double *logp_local;   /* oracle's log-prob of local_tokens[i] */
    const double *logp_argmax;  /* oracle's log-prob of its own argmax at i */
    /* The same in the oracle's second scoring shape, or both NULL; and in
     * its third (eager: one token per evaluation), or both NULL. */
    const double *logp_local_b, *logp_argmax_b;
    const double *logp_local_c, *logp_argmax_c;
    /* Where the oracle was told only its top k (vt.prefix-scores/4), 1 at
     * each position whose local token was not among them, else NULL; per
     * shape. There logp_local is an upper bound and the gap a lower one:
     * such a position counts as above the threshold, since nothing shows
     * it within (a verification that cannot measure a gap does not pass it). */
    const unsigned char *bound, *bound_b, *bound_c;
} vt_nt_prompt_input;

typedef struct vt_nt_prompt_result {
    vt_prompt_class cls;
    int32_t first_divergence;          /* -1 if strict */
    int32_t local_token, oracle_token; /* at the first divergence */
    double first_gap_mnats;            /* gap at the first divergence */
    int32_t zero_gaps, within_gaps, above_gaps; /* of the first shape's gaps */
    int32_t within_noise_gaps;         /* above the threshold in some shapes, not all */
    int32_t beyond_noise_gaps;         /* above in every shape scored (in the one, without others) */
    int32_t above_gaps_other[2];       /* above the threshold in the second and third shape */
    double max_gap_other_mnats[2];     /* the largest gap there (0 where not scored) */
    int32_t bound_gaps;                /* of the first shape's gaps, lower bounds (counted above) */
    double max_gap_mnats;
    int32_t max_gap_pos;               /* -1 if every gap is 0 */
} vt_nt_prompt_result;

/* Gap in milli-nats at one position. The reader refuses scores whose
 * argmax falls below the scored token by more than VT_DOC_LOGPROB_SLACK
 * (capture_read.h); what is left below 0 is rounding and counts as 0. */
static inline double vt_nt_gap_mnats(double logp_argmax, double logp_local)
{
    double g = 1000.0 * (logp_argmax - logp_local);
    return g > 0.0 ? g : 0.0;
}

void vt_nt_score_prompt(const vt_nt_prompt_input *in, double threshold_mnats, vt_nt_prompt_result *out);

/* One position under the same rule (vt_nt_score_prompt counts these). */
typedef enum vt_position_class {
    VT_POS_ZERO = 0,         /* gap 0, within the threshold in every other shape */
    VT_POS_NEAR_TIE = 1,     /* gap > 0, within the threshold in every shape */
    VT_POS_WITHIN_NOISE = 2, /* above in some shape, within in another */
    VT_POS_BEYOND_NOISE = 3  /* above in every shape scored (bound positions count above) */
} vt_position_class;

typedef struct vt_nt_position {
    double gap_mnats;        /* the first shape's */
    double gap_other_mnats[2]; /* the second and third shape's (0 where not scored) */
    int bound;               /* the first shape's gap is a lower bound */
    int above, shapes, n_above; /* above in the first shape; shapes scored; in how many above */
    vt_position_class cls;
} vt_nt_position;

void vt_nt_score_position(const vt_nt_prompt_input *in, int32_t i, double threshold_mnats, vt_nt_position *out);

#endif
