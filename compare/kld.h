/* Distribution metrics between two captures' full logits (their vt.logits/1
 * side files), in the spirit of llama.cpp's KL-divergence statistics
 * (tools/perplexity): per position, with the oracle as the reference,
 *     KL(oracle || local) = sum_v p_o(v) (log p_o(v) - log p_l(v))
 * from double log-softmax of both rows; its mean (with the standard error
 * of the mean), median, 90/99/99.9th percentiles (linear interpolation, as
 * llama.cpp), minimum and maximum; top-1 agreement (same argmax); the
 * largest |difference| of raw logits and of log-probs over the vocabulary;
 * and dp = p_l(t) - p_o(t) for the oracle's token t (RMS and largest |dp|).
 *
 * Two distributions are comparable only where both were computed on the
 * same prefix: the metrics cover, for each prompt, its positions up to and
 * including the first divergence of the two repeat-0 token streams (all of
 * them for a strict prompt). Later positions follow different prefixes and
 * are left out. */
#ifndef VT_NT_KLD_H
#define VT_NT_KLD_H

#include <stdint.h>

#include "../common/vt_error.h"
#include "../capture/capture_read.h"

typedef struct vt_nt_metrics {
    int available;
    char reason[1400]; /* why not, when not available */
    int32_t prompts;   /* prompts with at least one position compared */
    int64_t positions; /* positions compared */
    double kld_mean, kld_mean_unc, kld_median, kld_p90, kld_p99, kld_p999, kld_min, kld_max;
    int32_t kld_max_prompt, kld_max_position;
    int64_t same_top;
    double top1_agreement;
    double max_abs_dlogit, max_abs_dlogprob;
    double rms_dp, max_abs_dp;
    char local_file[4096], oracle_file[4096]; /* the side files read */
} vt_nt_metrics;

/* comparable[p]: positions of prompt p with identical prefixes. kl_at
 * (NULL, or local->n_positions values): each compared position's KL at
 * local->off[p] + i, the others left as they were. The side
 * files are the ones the reader resolved and checked (vt_doc.logits_path);
 * a capture without one makes the metrics unavailable (reason set, VT_OK);
 * a side file whose size or SHA-256 is not what its capture records, or
 * whose frames do not match its runs, is VT_EINPUT. */
int vt_nt_metrics_compute(const vt_doc *local, const vt_doc *oracle, const int32_t *comparable, vt_nt_metrics *m,
                          double *kl_at, vt_error *err);

/* The same metrics accumulated row by row (vt_nt_metrics_compute and vt
 * kld use it): add each position's local and oracle logits and the token
 * whose probability dp and the negative log-likelihoods are of; finish
 * fills m (available if any row was added) and the mean NLL of each side
 * with its standard error (perplexity = exp(mean NLL)). Rows' log-probs
 * use buffers allocated on the first add, reused. */
typedef struct vt_kld_acc {
    int32_t nv;
    double *lpl, *lpo, *kl;
    int64_t n, cap;
    double sum, sum2, sum_dp2, nll_l, nll_l2, nll_o, nll_o2;
    vt_nt_metrics m;
    double nll_local, nll_local_unc, nll_oracle, nll_oracle_unc; /* after finish */
} vt_kld_acc;

void vt_kld_acc_init(vt_kld_acc *a, int32_t nv);
/* 0, or -1 out of memory. */
int vt_kld_acc_add(vt_kld_acc *a, const float *local_logits, const float *oracle_logits, int32_t token,
                   int32_t prompt, int32_t position);
void vt_kld_acc_finish(vt_kld_acc *a);
void vt_kld_acc_free(vt_kld_acc *a);

#endif
