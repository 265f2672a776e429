#include "agree.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int score_prompt(vt_runner *local, vt_runner *oracle, const int32_t *prompt, int32_t n_prompt,
                        int32_t n_gen, double threshold, float *lg_local, float *lg_oracle,
                        int32_t *tok_local, int32_t *tok_oracle, double *lp_local, double *lp_oracle,
                        double *logp_tok, double *logp_best, vt_agree_prompt *out, vt_error *err)
{
    int32_t nv = vt_runner_n_vocab(local);
    memset(out, 0, sizeof *out);
    int rc = vt_runner_generate(local, prompt, n_prompt, n_gen, tok_local, NULL, err);
    if (!rc)
        rc = vt_runner_generate(oracle, prompt, n_prompt, n_gen, tok_oracle, NULL, err);
    /* Actual-prefix scoring: both runners teacher-forced on the local
     * stream, replayed as generation ran (engine/runner.h: the shape in
     * which a runner's own stream has no gap). */
    if (!rc)
        rc = vt_runner_score_replay(oracle, prompt, n_prompt, tok_local, n_gen, lg_oracle, err);
    if (!rc)
        rc = vt_runner_score_replay(local, prompt, n_prompt, tok_local, n_gen, lg_local, err);
    if (rc)
        return rc;
    for (int32_t i = 0; i < n_gen; i++) {
        vt_log_softmax(lg_oracle + (size_t)i * nv, nv, lp_oracle);
        vt_log_softmax(lg_local + (size_t)i * nv, nv, lp_local);
        logp_tok[i] = lp_oracle[tok_local[i]];
        logp_best[i] = lp_oracle[vt_argmax(lg_oracle + (size_t)i * nv, nv)];
        double dt = fabs(lp_local[tok_local[i]] - lp_oracle[tok_local[i]]);
        if (dt > out->max_abs_dlogprob_token)
            out->max_abs_dlogprob_token = dt;
        for (int32_t k = 0; k < nv; k++) {
            double d = fabs(lp_local[k] - lp_oracle[k]);
            if (d > out->max_abs_dlogprob_all)
                out->max_abs_dlogprob_all = d;
        }
    }
    vt_nt_prompt_input in = { .n = n_gen, .local_tokens = tok_local, .oracle_tokens = tok_oracle,
                              .logp_local = logp_tok, .logp_argmax = logp_best };
    vt_nt_score_prompt(&in, threshold, &out->nt);
    return VT_OK;
}

int vt_agree_run(vt_runner *local, vt_runner *oracle, const int32_t *const *prompts,
                 const int32_t *prompt_lens, int32_t n_prompts, int32_t n_gen, double threshold_mnats,
                 vt_agree_prompt *per_prompt, vt_agree_summary *sum, vt_error *err)
{
    memset(sum, 0, sizeof *sum);
    int32_t nv = vt_runner_n_vocab(local);
    if (nv != vt_runner_n_vocab(oracle))
        return vt_error_set(err, VT_EINPUT, "agree: vocabulary sizes differ: local %d, oracle %d", nv,
                            vt_runner_n_vocab(oracle));
    if (n_gen <= 0)
        return vt_error_set(err, VT_EINPUT, "agree: %d tokens to generate: expected at least 1", n_gen);
    size_t lg = (size_t)n_gen * (size_t)nv;
    float *lg_local = malloc(lg * sizeof(float)), *lg_oracle = malloc(lg * sizeof(float));
    int32_t *tl = malloc((size_t)n_gen * sizeof(int32_t)), *to = malloc((size_t)n_gen * sizeof(int32_t));
    double *lpl = malloc((size_t)nv * sizeof(double)), *lpo = malloc((size_t)nv * sizeof(double));
    double *lpt = malloc((size_t)n_gen * sizeof(double)), *lpb = malloc((size_t)n_gen * sizeof(double));
    int rc = VT_OK;
    if (!lg_local || !lg_oracle || !tl || !to || !lpl || !lpo || !lpt || !lpb)
        rc = vt_error_set(err, VT_EINPUT, "agree: out of memory");
    for (int32_t p = 0; rc == VT_OK && p < n_prompts; p++) {
        vt_agree_prompt r;
        rc = score_prompt(local, oracle, prompts[p], prompt_lens[p], n_gen, threshold_mnats, lg_local,
                          lg_oracle, tl, to, lpl, lpo, lpt, lpb, &r, err);
        if (rc)
            break;
        if (per_prompt)
            per_prompt[p] = r;
        sum->n_prompts++;
        sum->strict += r.nt.cls == VT_PROMPT_STRICT;
        sum->near_tie += r.nt.cls == VT_PROMPT_NEAR_TIE;
        sum->failed += r.nt.cls == VT_PROMPT_FAILED;
        sum->max_gap_mnats = fmax(sum->max_gap_mnats, r.nt.max_gap_mnats);
        sum->max_abs_dlogprob_token = fmax(sum->max_abs_dlogprob_token, r.max_abs_dlogprob_token);
        sum->max_abs_dlogprob_all = fmax(sum->max_abs_dlogprob_all, r.max_abs_dlogprob_all);
    }
    free(lg_local);
    free(lg_oracle);
    free(tl);
    free(to);
    free(lpl);
    free(lpo);
    free(lpt);
    free(lpb);
    return rc;
}

const char *const vt_agree_default_prompts[16] = {
    "The quick brown fox jumps over the lazy dog.",
    "Once upon a time, in a small village by the sea,",
    "def fibonacci(n):\n    if n < 2:\n        return n\n",
    "The capital of France is",
    "1, 2, 3, 5, 8, 13, 21,",
    "<|im_start|>user\nWhat is the boiling point of water?<|im_end|>\n<|im_start|>assistant\n",
    "In mathematics, a prime number is",
    "Der schnelle braune Fuchs springt über den faulen Hund.",
    "int main(void) { printf(\"hello\\n\"); return 0; }",
    "Les sanglots longs des violons de l'automne",
    "She said: \"I'll be there at 10:30, don't be late!\"",
    "日本語のテキストと中文文本",
    "SELECT name, COUNT(*) FROM users GROUP BY name;",
    "To be, or not to be, that is the question:",
    "    \t  indented   text\n\nwith blank lines",
    "Temperature: -40.5 degrees; pressure 1013 hPa; 99%",
};
