/* vt kld: the corpus metrics of llama.cpp's perplexity tool
 * (--kl-divergence), but exact: both runners are teacher-forced on the
 * same tokenized text in chunks of ctx tokens (the first half of each chunk
 * context only, the second half scored, as llama-perplexity does), batched
 * (the shape a perplexity run has), and every scored position's full
 * distributions are compared in double precision (llama.cpp keeps its base
 * log-probs as 16-bit values over a 16-nat window). Reported: each runner's
 * perplexity (exp of the mean negative log-likelihood of the text's next
 * token, with the mean's standard error), KL(oracle || local) mean with its
 * error, median, p90/p99/p99.9, max; top-1 agreement; dp of the text's
 * token (RMS, max) and max |dlogit|, |dlogprob| (kld.h). */
#ifndef VT_KLD_CORPUS_H
#define VT_KLD_CORPUS_H

#include <stdint.h>

#include "../common/vt_error.h"
#include "../engine/runner.h"
#include "kld.h"

typedef struct vt_kld_corpus_result {
    int32_t chunks, ctx;
    int64_t tokens;              /* of the text */
    vt_nt_metrics m;             /* m.positions scored; m.prompts = chunks; kld_max_prompt = chunk */
    double nll_local, nll_local_unc, nll_oracle, nll_oracle_unc;
    double ppl_local, ppl_oracle;
} vt_kld_corpus_result;

/* tokens[0..n_tokens) in chunks of ctx (at most max_chunks; 0: all whole
 * chunks). VT_EINPUT: vocabularies differ, ctx out of 4..n_ctx, no whole
 * chunk, a runner's error, out of memory. */
int vt_kld_corpus(vt_runner *local, vt_runner *oracle, const int32_t *tokens, int64_t n_tokens, int32_t ctx,
                  int32_t max_chunks, vt_kld_corpus_result *out, vt_error *err);

#endif
