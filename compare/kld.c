/* KL divergence and related metrics from full-logits side files: kld.h. */
#include "kld.h"
#include "../common/vt_sort.h"

#include "../capture/logits_file.h"
#include "../engine/runner.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The side file of d (the reader resolved it, and checked it is there with
 * its recorded size and SHA-256), or 0 with m->reason set. */
static int side_path(const vt_doc *d, char *out, size_t cap, vt_nt_metrics *m)
{
    if (!d->logits_path) {
        snprintf(m->reason, sizeof m->reason, "%.1000s has no full-logits side file (logits_file null)", d->path);
        return 0;
    }
    snprintf(out, cap, "%s", d->logits_path);
    return 1;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* llama.cpp's percentile: linear interpolation at fraction * (n - 1). */
static double percentile(const double *v, int64_t n, double fraction)
{
    double p = fraction * (double)(n - 1);
    int64_t i = (int64_t)p;
    p -= (double)i;
    return (1 - p) * v[i] + p * v[i + 1 < n ? i + 1 : n - 1];
}

/* Checks a finished side file against what its capture records. */
static int check_side(const vt_doc *d, const char *path, vt_logits_reader *r, vt_error *err)
{
    vt_sha256_hex sha;
    uint64_t size;
    if (vt_logits_reader_finish(r, &sha, &size, err) != VT_OK)
        return VT_EINPUT;
    const cJSON *lf = cJSON_GetObjectItemCaseSensitive(d->meta, "logits_file");
    const cJSON *want_sha = cJSON_GetObjectItemCaseSensitive(lf, "sha256");
    const cJSON *want_size = cJSON_GetObjectItemCaseSensitive(lf, "size");
    if ((double)size != want_size->valuedouble)
        return vt_error_set(err, VT_EINPUT, "%s: size %llu: expected %g, as %s's logits_file records", path,
                            (unsigned long long)size, want_size->valuedouble, d->path);
    if (strcmp(sha.hex, want_sha->valuestring) != 0)
        return vt_error_set(err, VT_EINPUT, "%s: sha256 %s: expected %s, as %s's logits_file records", path, sha.hex,
                            want_sha->valuestring, d->path);
    return VT_OK;
}

/* The next frame of r, which must be prompt p's repeat 0 with n positions. */
static int next_frame(vt_logits_reader *r, const char *path, int32_t p, int32_t n, int32_t nv, vt_logits_frame *h,
                      vt_error *err)
{
    int more = vt_logits_reader_next(r, h, err);
    if (more < 0)
        return VT_EINPUT;
    if (more == 0 || h->prompt != (uint32_t)p || h->repeat != 0 || h->positions != (uint32_t)n ||
        h->vocab != (uint32_t)nv)
        return vt_error_set(err, VT_EINPUT, "%s: frame of prompt %d repeat 0: expected %d positions x %d logits, "
                            "in run order (found %s)", path, p, n, nv, more ? "another frame" : "the end");
    return VT_OK;
}

void vt_kld_acc_init(vt_kld_acc *a, int32_t nv)
{
    memset(a, 0, sizeof *a);
    a->nv = nv;
    a->m.kld_max_prompt = a->m.kld_max_position = -1;
}

int vt_kld_acc_add(vt_kld_acc *a, const float *xl, const float *xo, int32_t token, int32_t prompt, int32_t position)
{
    const int32_t nv = a->nv;
    if (!a->lpl && (!(a->lpl = malloc((size_t)nv * sizeof *a->lpl)) || !(a->lpo = malloc((size_t)nv * sizeof *a->lpo))))
        return -1;
    if (a->n == a->cap) {
        int64_t cap = a->cap ? 2 * a->cap : 4096;
        double *kl = realloc(a->kl, (size_t)cap * sizeof *kl);
        if (!kl)
            return -1;
        a->kl = kl;
        a->cap = cap;
    }
    double *lpl = a->lpl, *lpo = a->lpo;
    vt_nt_metrics *m = &a->m;
    vt_log_softmax(xl, nv, lpl);
    vt_log_softmax(xo, nv, lpo);
    double d = 0, dlogit = 0, dlogprob = 0;
    for (int32_t v = 0; v < nv; v++) {
        d += exp(lpo[v]) * (lpo[v] - lpl[v]);
        double x = fabs((double)xl[v] - (double)xo[v]), y = fabs(lpl[v] - lpo[v]);
        dlogit = x > dlogit ? x : dlogit;
        dlogprob = y > dlogprob ? y : dlogprob;
    }
    if (a->n == 0 || d > m->kld_max) {
        m->kld_max = d;
        m->kld_max_prompt = prompt;
        m->kld_max_position = position;
    }
    a->kl[a->n++] = d;
    a->sum += d;
    a->sum2 += d * d;
    m->same_top += vt_argmax(xl, nv) == vt_argmax(xo, nv);
    m->max_abs_dlogit = dlogit > m->max_abs_dlogit ? dlogit : m->max_abs_dlogit;
    m->max_abs_dlogprob = dlogprob > m->max_abs_dlogprob ? dlogprob : m->max_abs_dlogprob;
    double dp = exp(lpl[token]) - exp(lpo[token]);
    a->sum_dp2 += dp * dp;
    m->max_abs_dp = fabs(dp) > m->max_abs_dp ? fabs(dp) : m->max_abs_dp;
    a->nll_l += -lpl[token];
    a->nll_l2 += lpl[token] * lpl[token];
    a->nll_o += -lpo[token];
    a->nll_o2 += lpo[token] * lpo[token];
    return 0;
}

/* The mean of n values from their sum and sum of squares, and its standard error. */
static void mean_unc(double sum, double sum2, int64_t n, double *mean, double *unc)
{
    *mean = sum / (double)n;
    double var = sum2 / (double)n - *mean * *mean;
    *unc = n > 1 && var > 0 ? sqrt(var / (double)(n - 1)) : 0;
}

void vt_kld_acc_finish(vt_kld_acc *a)
{
    vt_nt_metrics *m = &a->m;
    const int64_t k = a->n;
    m->positions = k;
    if (k > 0) {
        m->available = 1;
        double *kl = a->kl;
        vt_sort(kl, (size_t)k, sizeof *kl, cmp_double);
        mean_unc(a->sum, a->sum2, k, &m->kld_mean, &m->kld_mean_unc);
        m->kld_median = k % 2 ? kl[k / 2] : 0.5 * (kl[k / 2 - 1] + kl[k / 2]);
        m->kld_p90 = percentile(kl, k, 0.90);
        m->kld_p99 = percentile(kl, k, 0.99);
        m->kld_p999 = percentile(kl, k, 0.999);
        m->kld_min = kl[0];
        m->top1_agreement = (double)m->same_top / (double)k;
        m->rms_dp = sqrt(a->sum_dp2 / (double)k);
        mean_unc(a->nll_l, a->nll_l2, k, &a->nll_local, &a->nll_local_unc);
        mean_unc(a->nll_o, a->nll_o2, k, &a->nll_oracle, &a->nll_oracle_unc);
    }
}

void vt_kld_acc_free(vt_kld_acc *a)
{
    free(a->lpl);
    free(a->lpo);
    free(a->kl);
    a->lpl = a->lpo = a->kl = NULL;
}

int vt_nt_metrics_compute(const vt_doc *local, const vt_doc *oracle, const int32_t *comparable, vt_nt_metrics *m,
                          double *kl_at, vt_error *err)
{
    memset(m, 0, sizeof *m);
    m->kld_max_prompt = m->kld_max_position = -1;
    char lpath[4096], opath[4096];
    if (!side_path(local, lpath, sizeof lpath, m) || !side_path(oracle, opath, sizeof opath, m))
        return VT_OK;
    const cJSON *nvj = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(local->meta, "model"), "gguf"), "n_vocab");
    int32_t nv = (int32_t)nvj->valuedouble;
    int32_t P = local->n_prompts, max_n = 1;
    for (int32_t p = 0; p < P; p++) {
        max_n = local->n[p] > max_n ? local->n[p] : max_n;
        max_n = oracle->n[p] > max_n ? oracle->n[p] : max_n;
    }
    /* Buffers for one prompt of each side: sized once, reused. */
    size_t frame = (size_t)max_n * (size_t)nv;
    float *fl = malloc(frame * sizeof *fl), *fo = malloc(frame * sizeof *fo);
    vt_kld_acc acc;
    vt_kld_acc_init(&acc, nv);
    vt_logits_reader *rl = vt_logits_reader_open(lpath, err), *ro = rl ? vt_logits_reader_open(opath, err) : NULL;
    int rc = VT_OK;
    if (!rl || !ro)
        rc = VT_EINPUT;
    else if (!fl || !fo)
        rc = vt_error_set(err, VT_EINPUT, "metrics: out of memory for %d positions x %d logits", max_n, nv);
    int32_t prompts = 0;
    for (int32_t p = 0; rc == VT_OK && p < P; p++) {
        vt_logits_frame hl, ho;
        rc = next_frame(rl, lpath, p, local->n[p], nv, &hl, err);
        if (rc == VT_OK)
            rc = next_frame(ro, opath, p, oracle->n[p], nv, &ho, err);
        if (rc == VT_OK && comparable[p] > 0) {
            rc = vt_logits_reader_data(rl, fl, err);
            if (rc == VT_OK)
                rc = vt_logits_reader_data(ro, fo, err);
        }
        if (rc != VT_OK || comparable[p] == 0)
            continue;
        prompts++;
        const int32_t *tok_o = oracle->tokens + oracle->off[p];
        for (int32_t i = 0; rc == VT_OK && i < comparable[p]; i++) {
            if (vt_kld_acc_add(&acc, fl + (size_t)i * nv, fo + (size_t)i * nv, tok_o[i], p, i) != 0)
                rc = vt_error_set(err, VT_EINPUT, "metrics: out of memory");
            else if (kl_at)
                kl_at[local->off[p] + i] = acc.kl[acc.n - 1]; /* before finish sorts them */
        }
    }
    if (rc == VT_OK)
        rc = check_side(local, lpath, rl, err);
    if (rc == VT_OK)
        rc = check_side(oracle, opath, ro, err);
    if (rc == VT_OK) {
        vt_kld_acc_finish(&acc);
        *m = acc.m;
        m->prompts = prompts;
        if (!m->available)
            snprintf(m->reason, sizeof m->reason, "no position to compare");
    }
    snprintf(m->local_file, sizeof m->local_file, "%s", lpath);
    snprintf(m->oracle_file, sizeof m->oracle_file, "%s", opath);
    vt_kld_acc_free(&acc);
    vt_logits_reader_close(rl);
    vt_logits_reader_close(ro);
    free(fl);
    free(fo);
    return rc;
}
