/* Runner agreement: greedy generations of a local runner against an oracle
 * runner on the same prompts, with every divergence scored under the near-tie
 * rule (the oracle teacher-forced on the LOCAL tokens: gap = logp(oracle
 * argmax) - logp(local token), in milli-nats), and the teacher-forced
 * log-prob difference between the two runners on the local tokens. */
#ifndef VT_AGREE_H
#define VT_AGREE_H

#include <stdint.h>

#include "../common/vt_error.h"
#include "../engine/runner.h"
#include "neartie.h"

typedef struct vt_agree_prompt {
    vt_nt_prompt_result nt;        /* class, first divergence, gaps */
    double max_abs_dlogprob_token; /* |local - oracle| logp of the local token */
    double max_abs_dlogprob_all;   /* over the whole vocabulary, every position */
} vt_agree_prompt;

typedef struct vt_agree_summary {
    int32_t n_prompts, strict, near_tie, failed;
    double max_gap_mnats;
    double max_abs_dlogprob_token, max_abs_dlogprob_all;
} vt_agree_summary;

/* prompts: n_prompts token arrays (prompt_lens[i] tokens each). Both runners
 * must be open with greedy sampling and n_ctx >= longest prompt + n_gen.
 * per_prompt (may be NULL) gets n_prompts entries. */
int vt_agree_run(vt_runner *local, vt_runner *oracle, const int32_t *const *prompts,
                 const int32_t *prompt_lens, int32_t n_prompts, int32_t n_gen, double threshold_mnats,
                 vt_agree_prompt *per_prompt, vt_agree_summary *sum, vt_error *err);

#endif

/* The 16 built-in prompt texts (mixed prose, code, numbers, scripts). */
extern const char *const vt_agree_default_prompts[16];
