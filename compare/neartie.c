#include "neartie.h"

const char *vt_prompt_class_name(vt_prompt_class c)
{
    switch (c) {
    case VT_PROMPT_STRICT: return "strict";
    case VT_PROMPT_NEAR_TIE: return "near-tie-only";
    case VT_PROMPT_WITHIN_NOISE: return "within-noise";
    default: return "failed";
    }
}

void vt_nt_score_prompt(const vt_nt_prompt_input *in, double threshold_mnats, vt_nt_prompt_result *out)
{
    *out = (vt_nt_prompt_result){ .first_divergence = -1, .max_gap_pos = -1 };
    for (int32_t i = 0; i < in->n; i++) {
        double gap = vt_nt_gap_mnats(in->logp_argmax[i], in->logp_local[i]);
        /* A bound: the local token was not among the k the oracle told;
         * its gap is at least gap, not known to be within the threshold. */
        const int bound = in->bound && in->bound[i];
        out->bound_gaps += bound;
        if (out->first_divergence < 0 && in->local_tokens[i] != in->oracle_tokens[i]) {
            out->first_divergence = i;
            out->local_token = in->local_tokens[i];
            out->oracle_token = in->oracle_tokens[i];
            out->first_gap_mnats = gap;
        }
        if (gap == 0.0)
            out->zero_gaps++;
        else if (gap <= threshold_mnats && !bound)
            out->within_gaps++;
        else
            out->above_gaps++;
        /* Every shape the oracle scored the stream in: above in all of them
         * is beyond its noise, above in some but not all is within it. */
        int above = gap > threshold_mnats || bound, shapes = 1, n_above = above;
        const double *ol[2] = { in->logp_local_b, in->logp_local_c }, *oa[2] = { in->logp_argmax_b, in->logp_argmax_c };
        const unsigned char *ob[2] = { in->bound_b, in->bound_c };
        for (int s = 0; s < 2; s++) {
            if (!ol[s])
                continue;
            double g = vt_nt_gap_mnats(oa[s][i], ol[s][i]);
            int a = g > threshold_mnats || (ob[s] && ob[s][i]);
            shapes++;
            n_above += a;
            out->above_gaps_other[s] += a;
            out->max_gap_other_mnats[s] = g > out->max_gap_other_mnats[s] ? g : out->max_gap_other_mnats[s];
        }
        out->beyond_noise_gaps += n_above == shapes;
        out->within_noise_gaps += n_above > 0 && n_above < shapes;
        if (gap > out->max_gap_mnats) {
            out->max_gap_mnats = gap;
            out->max_gap_pos = i;
        }
    }
    /* Nothing compared is no agreement: a prompt with no position fails. */
    out->cls = in->n == 0                    ? VT_PROMPT_FAILED
               : out->first_divergence < 0     ? VT_PROMPT_STRICT
               : out->beyond_noise_gaps > 0    ? VT_PROMPT_FAILED
               : out->within_noise_gaps > 0    ? VT_PROMPT_WITHIN_NOISE
                                               : VT_PROMPT_NEAR_TIE;
}
