/* KL divergence and related metrics from full-logits side files: kld.h. */
#include "kld.h"

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

int vt_nt_metrics_compute(const vt_doc *local, const vt_doc *oracle, const int32_t *comparable, vt_nt_metrics *m,
                          vt_error *err)
{
    memset(m, 0, sizeof *m);
    m->kld_max_prompt = m->kld_max_position = -1;
    char lpath[4096], opath[4096];
    if (!side_path(local, lpath, sizeof lpath, m) || !side_path(oracle, opath, sizeof opath, m))
        return VT_OK;
    snprintf(m->local_file, sizeof m->local_file, "%s", lpath);
    snprintf(m->oracle_file, sizeof m->oracle_file, "%s", opath);
    const cJSON *nvj = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(local->meta, "model"), "gguf"), "n_vocab");
    int32_t nv = (int32_t)nvj->valuedouble;
    int32_t P = local->n_prompts, max_n = 1;
    int64_t total = 0;
    for (int32_t p = 0; p < P; p++) {
        max_n = local->n[p] > max_n ? local->n[p] : max_n;
        max_n = oracle->n[p] > max_n ? oracle->n[p] : max_n;
        total += comparable[p];
    }
    /* Buffers for one prompt of each side and one row's log-probs: sized
     * once, reused for every prompt. */
    size_t frame = (size_t)max_n * (size_t)nv;
    float *fl = malloc(frame * sizeof *fl), *fo = malloc(frame * sizeof *fo);
    double *lpl = malloc((size_t)nv * sizeof *lpl), *lpo = malloc((size_t)nv * sizeof *lpo);
    double *kl = malloc((size_t)(total ? total : 1) * sizeof *kl);
    vt_logits_reader *rl = vt_logits_reader_open(lpath, err), *ro = rl ? vt_logits_reader_open(opath, err) : NULL;
    int rc = VT_OK;
    if (!rl || !ro)
        rc = VT_EINPUT;
    else if (!fl || !fo || !lpl || !lpo || !kl)
        rc = vt_error_set(err, VT_EINPUT, "metrics: out of memory for %d positions x %d logits", max_n, nv);
    double sum = 0, sum2 = 0, sum_dp2 = 0;
    int64_t k = 0;
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
        m->prompts++;
        const int32_t *tok_o = oracle->tokens + oracle->off[p];
        for (int32_t i = 0; i < comparable[p]; i++, k++) {
            const float *xl = fl + (size_t)i * nv, *xo = fo + (size_t)i * nv;
            vt_log_softmax(xl, nv, lpl);
            vt_log_softmax(xo, nv, lpo);
            double d = 0, dlogit = 0, dlogprob = 0;
            for (int32_t v = 0; v < nv; v++) {
                d += exp(lpo[v]) * (lpo[v] - lpl[v]);
                double a = fabs((double)xl[v] - (double)xo[v]), b = fabs(lpl[v] - lpo[v]);
                dlogit = a > dlogit ? a : dlogit;
                dlogprob = b > dlogprob ? b : dlogprob;
            }
            kl[k] = d;
            sum += d;
            sum2 += d * d;
            if (k == 0 || d > m->kld_max) {
                m->kld_max = d;
                m->kld_max_prompt = p;
                m->kld_max_position = i;
            }
            m->same_top += vt_argmax(xl, nv) == vt_argmax(xo, nv);
            m->max_abs_dlogit = dlogit > m->max_abs_dlogit ? dlogit : m->max_abs_dlogit;
            m->max_abs_dlogprob = dlogprob > m->max_abs_dlogprob ? dlogprob : m->max_abs_dlogprob;
            double dp = exp(lpl[tok_o[i]]) - exp(lpo[tok_o[i]]);
            sum_dp2 += dp * dp;
            m->max_abs_dp = fabs(dp) > m->max_abs_dp ? fabs(dp) : m->max_abs_dp;
        }
    }
    if (rc == VT_OK)
        rc = check_side(local, lpath, rl, err);
    if (rc == VT_OK)
        rc = check_side(oracle, opath, ro, err);
    if (rc == VT_OK && k > 0) {
        m->available = 1;
        m->positions = k;
        qsort(kl, (size_t)k, sizeof *kl, cmp_double);
        m->kld_mean = sum / (double)k;
        double var = sum2 / (double)k - m->kld_mean * m->kld_mean;
        m->kld_mean_unc = k > 1 && var > 0 ? sqrt(var / (double)(k - 1)) : 0;
        m->kld_median = k % 2 ? kl[k / 2] : 0.5 * (kl[k / 2 - 1] + kl[k / 2]);
        m->kld_p90 = percentile(kl, k, 0.90);
        m->kld_p99 = percentile(kl, k, 0.99);
        m->kld_p999 = percentile(kl, k, 0.999);
        m->kld_min = kl[0];
        m->top1_agreement = (double)m->same_top / (double)k;
        m->rms_dp = sqrt(sum_dp2 / (double)k);
    } else if (rc == VT_OK) {
        snprintf(m->reason, sizeof m->reason, "no position to compare");
    }
    vt_logits_reader_close(rl);
    vt_logits_reader_close(ro);
    free(fl);
    free(fo);
    free(lpl);
    free(lpo);
    free(kl);
    return rc;
}
