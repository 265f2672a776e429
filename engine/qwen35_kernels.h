/* The Qwen3.5 recurrences and element-wise pieces, exposed (internal to
 * engine/ and tests/) so tests can check them against naive references. */
#ifndef VT_QWEN35_KERNELS_H
#define VT_QWEN35_KERNELS_H

#include <stdint.h>

#include "kernels.h"

/* The longest conv kernel accepted (Qwen3.5 uses 4). */
#define VT_Q35_MAX_CONV 64

/* Causal depthwise conv1d, as ggml_ssm_conv, for channels [c0, c1) over
 * n_tok tokens. Input channel c of token t is x[t * ldx + c]; w[c * d_conv
 * + i] is tap i of channel c (tap d_conv-1 meets the current token);
 * state[c * (d_conv-1) + i] holds the channel's previous d_conv-1 inputs,
 * oldest first, and is advanced past the n_tok tokens. Output:
 *   y[t * ldy + c] = sum_{i < d_conv} w[c][i] * in_c[t - (d_conv-1) + i]
 * summed in F32 in order i = 0, 1, ... (ggml's order; no double). */
void vt_q35_conv1d(const float *x, int64_t ldx, int64_t n_tok, const float *w, int32_t d_conv,
                   float *state, int64_t c0, int64_t c1, float *y, int64_t ldy);

/* The gated delta rule for one head of size d over n_tok tokens, as ggml's
 * gated_delta_net (the fused CPU op llama.cpp runs). s is the state stored
 * transposed as ggml stores it: s[j * d + i] = S[i][j] (i over keys, j over
 * values). Token t reads q, k at q + t*ldqk, key + t*ldqk, v at v + t*ldv,
 * the decay g[t*ldgb] (log space) and beta[t*ldgb], and writes d outputs at
 * o + t*ldo:
 *   S = exp(g) S
 *   delta_j = (v_j - sum_i S[i][j] k_i) * beta
 *   S[i][j] += k_i delta_j
 *   o_j = (sum_i S[i][j] q_i) / sqrt(d)
 * Sums are kern->dot (the engine's fixed order); delta is d floats of
 * scratch. */
void vt_q35_delta_rule(const vt_kernels *kern, float *s, int64_t d, const float *q,
                       const float *key, int64_t ldqk, const float *v, int64_t ldv,
                       const float *g, const float *beta, int64_t ldgb, int64_t n_tok, float *o,
                       int64_t ldo, float *delta);

/* L2 normalization as llama.cpp writes it for the delta net:
 * rms_norm(x, eps / n) * (1 / sqrt(n)), i.e. x / sqrt(sum x^2 + eps). */
void vt_q35_l2norm(float *x, int64_t n, float eps);

/* ggml's softplus: x above 20, else log(1 + exp(x)). */
float vt_q35_softplus(float x);

/* Multi-section RoPE angles (ggml's interleaved "imrope", the type llama.cpp
 * gives qwen35): cos/sin pairs for the n_rot/2 rotated pairs, pair p taking
 * its angle from the temporal, height, width or extra position pos[0..3] by
 * its sector p % sum(sections). Every theta starts at its position and is
 * multiplied by base^(-2/n_rot) per pair, as ggml. A text token has the
 * same position in all four, so the result equals vt_rope_angles(n_rot). */
void vt_q35_rope_angles(float *cs, const int32_t pos[4], const int32_t sections[4],
                        int64_t n_rot, float base);

#endif
