/* vt kld's comparison: both runners teacher-forced on a tokenized text
 * (kld_corpus.h). */
#include "kld_corpus.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int vt_kld_corpus(vt_runner *local, vt_runner *oracle, const int32_t *tokens, int64_t n_tokens, int32_t ctx,
                  int32_t max_chunks, vt_kld_corpus_result *out, vt_error *err)
{
    memset(out, 0, sizeof *out);
    const int32_t nv = vt_runner_n_vocab(local);
    if (nv != vt_runner_n_vocab(oracle))
        return vt_error_set(err, VT_EINPUT, "kld: vocabulary sizes differ: local %d, oracle %d", nv,
                            vt_runner_n_vocab(oracle));
    if (ctx < 4 || ctx > vt_runner_settings_of(local)->n_ctx || ctx > vt_runner_settings_of(oracle)->n_ctx)
        return vt_error_set(err, VT_EINPUT, "kld: --ctx %d: expected 4..n_ctx of both runners", ctx);
    int64_t chunks = n_tokens / ctx;
    if (max_chunks > 0 && chunks > max_chunks)
        chunks = max_chunks;
    if (chunks < 1)
        return vt_error_set(err, VT_EINPUT, "kld: %lld tokens: expected at least one chunk of --ctx %d tokens",
                            (long long)n_tokens, ctx);
    /* As llama.cpp's perplexity tool: the first half of each chunk is
     * context only, the second half is scored. */
    const int32_t first = ctx / 2, n_score = ctx - first;
    size_t rows = (size_t)n_score * (size_t)nv;
    float *ll = malloc(rows * sizeof *ll), *lo = malloc(rows * sizeof *lo);
    vt_kld_acc acc;
    vt_kld_acc_init(&acc, nv);
    int rc = ll && lo ? VT_OK : vt_error_set(err, VT_EINPUT, "kld: out of memory for %d x %d logits", n_score, nv);
    for (int64_t c = 0; rc == VT_OK && c < chunks; c++) {
        const int32_t *chunk = tokens + c * ctx;
        rc = vt_runner_score(local, chunk, first, chunk + first, n_score, ll, err);
        if (rc == VT_OK)
            rc = vt_runner_score(oracle, chunk, first, chunk + first, n_score, lo, err);
        for (int32_t i = 0; rc == VT_OK && i < n_score; i++)
            if (vt_kld_acc_add(&acc, ll + (size_t)i * nv, lo + (size_t)i * nv, chunk[first + i], (int32_t)c,
                               first + i) != 0)
                rc = vt_error_set(err, VT_EINPUT, "kld: out of memory");
    }
    if (rc == VT_OK) {
        vt_kld_acc_finish(&acc);
        out->chunks = (int32_t)chunks;
        out->ctx = ctx;
        out->tokens = n_tokens;
        out->m = acc.m;
        out->m.prompts = (int32_t)chunks;
        out->nll_local = acc.nll_local;
        out->nll_local_unc = acc.nll_local_unc;
        out->nll_oracle = acc.nll_oracle;
        out->nll_oracle_unc = acc.nll_oracle_unc;
        out->ppl_local = exp(acc.nll_local);
        out->ppl_oracle = exp(acc.nll_oracle);
    }
    vt_kld_acc_free(&acc);
    free(ll);
    free(lo);
    return rc;
}
