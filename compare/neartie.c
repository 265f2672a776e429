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

void vt_nt_score_position(const vt_nt_prompt_input *in, int32_t i, double threshold_mnats, vt_nt_position *out)
{
    *out = (vt_nt_position){ .gap_mnats = vt_nt_gap_mnats(in->logp_argmax[i], in->logp_local[i]) };
    /* A bound: the local token was not among the k the oracle told; its
     * gap is at least gap, not known to be within the threshold. */
    out->bound = in->bound && in->bound[i];
    /* Every shape the oracle scored the stream in: above in all of them is
     * beyond its noise, above in some but not all is within it. */
    out->above = out->gap_mnats > threshold_mnats || out->bound;
    out->shapes = 1;
    out->n_above = out->above;
    const double *ol[2] = { in->logp_local_b, in->logp_local_c }, *oa[2] = { in->logp_argmax_b, in->logp_argmax_c };
    const unsigned char *ob[2] = { in->bound_b, in->bound_c };
    for (int s = 0; s < 2; s++) {
        if (!ol[s])
            continue;
        double g = vt_nt_gap_mnats(oa[s][i], ol[s][i]);
        out->gap_other_mnats[s] = g;
        out->shapes++;
        out->n_above += g > threshold_mnats || (ob[s] && ob[s][i]);
    }
    out->cls = out->n_above == out->shapes ? VT_POS_BEYOND_NOISE
               : out->n_above > 0          ? VT_POS_WITHIN_NOISE
               : out->gap_mnats == 0.0     ? VT_POS_ZERO
                                           : VT_POS_NEAR_TIE;
}

void vt_nt_score_prompt(const vt_nt_prompt_input *in, double threshold_mnats, vt_nt_prompt_result *out)
{
    *out = (vt_nt_prompt_result){ .first_divergence = -1, .max_gap_pos = -1 };
    for (int32_t i = 0; i < in->n; i++) {
        vt_nt_position pos;
        vt_nt_score_position(in, i, threshold_mnats, &pos);
        const double gap = pos.gap_mnats;
        const int bound = pos.bound;
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
        const double *ol[2] = { in->logp_local_b, in->logp_local_c };
        const unsigned char *ob[2] = { in->bound_b, in->bound_c };
        for (int s = 0; s < 2; s++) {
            if (!ol[s])
                continue;
            double g = pos.gap_other_mnats[s];
            out->above_gaps_other[s] += g > threshold_mnats || (ob[s] && ob[s][i]);
            out->max_gap_other_mnats[s] = g > out->max_gap_other_mnats[s] ? g : out->max_gap_other_mnats[s];
        }
        out->beyond_noise_gaps += pos.cls == VT_POS_BEYOND_NOISE;
        out->within_noise_gaps += pos.cls == VT_POS_WITHIN_NOISE;
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
