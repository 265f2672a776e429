/* vt kld's comparison: both runners teacher-forced on a tokenized text
 * (kld_corpus.h). */
#include "kld_corpus.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int vt_kld_corpus_run(vt_runner *local, vt_runner *oracle, const int32_t *tokens, int64_t n_tokens,
                      const vt_kld_corpus_opts *o, vt_kld_corpus_result *out, vt_error *err)
{
    memset(out, 0, sizeof *out);
    const int32_t ctx = o->ctx;
    const int32_t nv = vt_runner_n_vocab(local);
    if (nv != vt_runner_n_vocab(oracle))
        return vt_error_set(err, VT_EINPUT, "kld: vocabulary sizes differ: local %d, oracle %d", nv,
                            vt_runner_n_vocab(oracle));
    if (ctx < 4 || ctx > vt_runner_settings_of(local)->n_ctx || ctx > vt_runner_settings_of(oracle)->n_ctx)
        return vt_error_set(err, VT_EINPUT, "kld: --ctx %d: expected 4..n_ctx of both runners", ctx);
    /* As llama.cpp's perplexity tool by default: the first half of each
     * chunk is context only, the second half is scored. */
    const int32_t first = o->context ? o->context : ctx / 2, n_score = ctx - first;
    if (first < 1 || first >= ctx)
        return vt_error_set(err, VT_EINPUT, "kld: --context %d: expected 1..%d (--ctx - 1)", first, ctx - 1);
    if (o->bucket < 0)
        return vt_error_set(err, VT_EINPUT, "kld: --by-position %d: expected >= 1", o->bucket);
    int64_t chunks = n_tokens / ctx;
    if (o->max_chunks > 0 && chunks > o->max_chunks)
        chunks = o->max_chunks;
    if (chunks < 1)
        return vt_error_set(err, VT_EINPUT, "kld: %lld tokens: expected at least one chunk of --ctx %d tokens",
                            (long long)n_tokens, ctx);
    const double threshold = o->threshold_mnats > 0 ? o->threshold_mnats : 500.0;
    const int32_t nb = o->bucket ? (n_score + o->bucket - 1) / o->bucket : 0;
    size_t rows = (size_t)n_score * (size_t)nv;
    float *ll = malloc(rows * sizeof *ll), *lo = malloc(rows * sizeof *lo);
    vt_kld_acc acc, *bacc = nb ? calloc((size_t)nb, sizeof *bacc) : NULL;
    vt_kld_bucket *bk = nb ? calloc((size_t)nb, sizeof *bk) : NULL;
    vt_kld_acc_init(&acc, nv);
    for (int32_t b = 0; bacc && b < nb; b++)
        vt_kld_acc_init(&bacc[b], nv);
    int rc = ll && lo && (!nb || (bacc && bk))
                 ? VT_OK
                 : vt_error_set(err, VT_EINPUT, "kld: out of memory for %d x %d logits", n_score, nv);
    for (int64_t c = 0; rc == VT_OK && c < chunks; c++) {
        const int32_t *chunk = tokens + c * ctx;
        rc = vt_runner_score(local, chunk, first, chunk + first, n_score, ll, err);
        if (rc == VT_OK)
            rc = vt_runner_score(oracle, chunk, first, chunk + first, n_score, lo, err);
        for (int32_t i = 0; rc == VT_OK && i < n_score; i++) {
            const float *rl = ll + (size_t)i * nv, *ro = lo + (size_t)i * nv;
            if (vt_kld_acc_add(&acc, rl, ro, chunk[first + i], (int32_t)c, first + i) != 0 ||
                (nb && vt_kld_acc_add(&bacc[i / o->bucket], rl, ro, chunk[first + i], (int32_t)c, first + i) != 0)) {
                rc = vt_error_set(err, VT_EINPUT, "kld: out of memory");
                break;
            }
            /* The near-tie rule's gap of the local's choice, on this prefix. */
            const double gap = 1000.0 * ((double)ro[vt_argmax(ro, nv)] - (double)ro[vt_argmax(rl, nv)]);
            if (gap > out->max_gap_mnats)
                out->max_gap_mnats = gap;
            out->gaps_above += gap > threshold;
            if (nb) {
                vt_kld_bucket *q = &bk[i / o->bucket];
                if (gap > q->max_gap_mnats)
                    q->max_gap_mnats = gap;
                q->gaps_above += gap > threshold;
            }
        }
    }
    if (rc == VT_OK) {
        vt_kld_acc_finish(&acc);
        out->chunks = (int32_t)chunks;
        out->ctx = ctx;
        out->context = first;
        out->tokens = n_tokens;
        out->m = acc.m;
        out->m.prompts = (int32_t)chunks;
        out->nll_local = acc.nll_local;
        out->nll_local_unc = acc.nll_local_unc;
        out->nll_oracle = acc.nll_oracle;
        out->nll_oracle_unc = acc.nll_oracle_unc;
        out->ppl_local = exp(acc.nll_local);
        out->ppl_oracle = exp(acc.nll_oracle);
        for (int32_t b = 0; b < nb; b++) {
            vt_kld_acc_finish(&bacc[b]);
            bk[b].m = bacc[b].m;
            bk[b].from = first + b * o->bucket;
            bk[b].to = first + (b + 1) * o->bucket < ctx ? first + (b + 1) * o->bucket : ctx;
        }
        out->buckets = bk;
        out->n_buckets = nb;
        bk = NULL;
    }
    vt_kld_acc_free(&acc);
    for (int32_t b = 0; bacc && b < nb; b++)
        vt_kld_acc_free(&bacc[b]);
    free(bacc);
    free(bk);
    free(ll);
    free(lo);
    return rc;
}

int vt_kld_corpus(vt_runner *local, vt_runner *oracle, const int32_t *tokens, int64_t n_tokens, int32_t ctx,
                  int32_t max_chunks, vt_kld_corpus_result *out, vt_error *err)
{
    vt_kld_corpus_opts o = { .ctx = ctx, .max_chunks = max_chunks };
    return vt_kld_corpus_run(local, oracle, tokens, n_tokens, &o, out, err);
}

void vt_kld_corpus_result_free(vt_kld_corpus_result *r)
{
    free(r->buckets);
    r->buckets = NULL;
    r->n_buckets = 0;
}
