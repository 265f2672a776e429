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

/* The positions of a chunk scored from position first, in buckets of
 * `bucket` positions (by position within the chunk, over every chunk). */
typedef struct vt_kld_bucket {
    int32_t from, to;            /* positions [from, to) of a chunk */
    vt_nt_metrics m;             /* KLD, top-1 agreement, dp over the bucket's rows */
    double max_gap_mnats;        /* largest actual-prefix gap: the oracle's log-prob of its
                                    argmax minus that of the local argmax, milli-nats */
    int64_t gaps_above;          /* rows with a gap above the threshold */
} vt_kld_bucket;

typedef struct vt_kld_corpus_opts {
    int32_t ctx;        /* tokens per chunk */
    int32_t context;    /* tokens of context before the first scored one; 0: ctx / 2 */
    int32_t max_chunks; /* 0: every whole chunk */
    int32_t bucket;     /* 0: no buckets; else positions per bucket */
    double threshold_mnats; /* for gaps_above (500 if 0) */
} vt_kld_corpus_opts;

typedef struct vt_kld_corpus_result {
    int32_t chunks, ctx, context;
    int64_t tokens;              /* of the text */
    vt_nt_metrics m;             /* m.positions scored; m.prompts = chunks; kld_max_prompt = chunk */
    double nll_local, nll_local_unc, nll_oracle, nll_oracle_unc;
    double ppl_local, ppl_oracle;
    double max_gap_mnats;        /* over every scored row */
    int64_t gaps_above;
    vt_kld_bucket *buckets;      /* n_buckets (malloc'd; vt_kld_corpus_result_free) */
    int32_t n_buckets;
} vt_kld_corpus_result;

/* tokens[0..n_tokens) in chunks of ctx (at most max_chunks; 0: all whole
 * chunks). VT_EINPUT: vocabularies differ, ctx out of 4..n_ctx, context out
 * of 1..ctx-1, no whole chunk, a runner's error, out of memory. */
int vt_kld_corpus(vt_runner *local, vt_runner *oracle, const int32_t *tokens, int64_t n_tokens, int32_t ctx,
                  int32_t max_chunks, vt_kld_corpus_result *out, vt_error *err);
/* The same with every option. */
int vt_kld_corpus_run(vt_runner *local, vt_runner *oracle, const int32_t *tokens, int64_t n_tokens,
                      const vt_kld_corpus_opts *o, vt_kld_corpus_result *out, vt_error *err);
void vt_kld_corpus_result_free(vt_kld_corpus_result *r);

#endif
