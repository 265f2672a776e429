/* Running the repeats (capture_internal.h): every prompt, every repeat, the
 * results as plain structs, determinism judged against each prompt's
 * repeat 0 as the runs come. No JSON here: capture_doc.c writes it. */
#include "capture_internal.h"

#include "../common/vt_progress.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One prompt's repeat 0, which every later repeat is compared with. */
typedef struct ref_run {
    int ok;
    int32_t *tokens;
    int32_t n;
    vt_sha256_hex *rows; /* per-position digests of the logits */
    vt_sha256_hex sha;
} ref_run;

/* The k highest of lp[0..n), highest first, ties to the lower id. */
static void top_k(const double *lp, int32_t n, int k, int32_t *ids, double *lps)
{
    for (int i = 0; i < k; i++) {
        ids[i] = -1;
        lps[i] = -INFINITY;
    }
    for (int32_t i = 0; i < n; i++) {
        if (!(lp[i] > lps[k - 1]))
            continue;
        int j = k - 1;
        while (j > 0 && lp[i] > lps[j - 1]) {
            ids[j] = ids[j - 1];
            lps[j] = lps[j - 1];
            j--;
        }
        ids[j] = i;
        lps[j] = lp[i];
    }
}

static int reserve(vt_run_results *res, int prefix, int64_t need)
{
    if (need <= res->cap_pos)
        return 1;
    int64_t cap = res->cap_pos ? res->cap_pos : 4096;
    while (cap < need)
        cap *= 2;
    int32_t *t = realloc(res->tokens, (size_t)cap * sizeof *t);
    if (!t)
        return 0;
    res->tokens = t;
    if (prefix) {
        double *a = realloc(res->logprobs, (size_t)cap * sizeof *a);
        if (!a)
            return 0;
        res->logprobs = a;
        double *b = realloc(res->argmax_logprobs, (size_t)cap * sizeof *b);
        if (!b)
            return 0;
        res->argmax_logprobs = b;
        if (res->known_top_k > 0) {
            unsigned char *u = realloc(res->bound, (size_t)cap);
            if (!u)
                return 0;
            res->bound = u;
        }
        int32_t *m = realloc(res->argmax, (size_t)cap * sizeof *m);
        if (!m)
            return 0;
        res->argmax = m;
    }
    res->cap_pos = cap;
    return 1;
}

static void note_mismatch(vt_run_results *res, int p, int rep, int32_t pos, const char *field)
{
    res->n_differ++;
    if (res->has_mismatch)
        return;
    res->has_mismatch = 1;
    res->mm_prompt = p;
    res->mm_repeat = rep;
    res->mm_position = pos;
    res->mm_field = field;
}

int vt_capture_repeat(vt_runner *r, const vt_run_plan *plan, vt_logits_writer *side, vt_topk_writer *topk,
                      vt_run_results *res, vt_error *err)
{
    const int prefix = plan->cont != NULL;
    const int P = plan->prompts->n, R = plan->repetitions;
    const int32_t nv = vt_runner_n_vocab(r);
    const int K = plan->top_k < nv ? plan->top_k : nv;
    const int32_t known = vt_runner_top_k_only(r);
    memset(res, 0, sizeof *res);
    res->known_top_k = known;
    res->identical_tokens = res->identical_logits = 1;
    res->top_k = K;
    int32_t max_pos = 1;
    for (int p = 0; p < P; p++) {
        int32_t n = prefix ? plan->n_cont[p] : plan->max_tokens;
        if (n > max_pos)
            max_pos = n;
    }
    /* Everything a run needs is allocated once, before the first. */
    float *logits = malloc((size_t)max_pos * (size_t)nv * sizeof *logits);
    int32_t *toks = malloc((size_t)max_pos * sizeof *toks);
    double *lp = malloc((size_t)nv * sizeof *lp);
    int32_t *top_ids = malloc((size_t)(K > 0 ? K : 1) * sizeof *top_ids);
    double *top_lps = malloc((size_t)(K > 0 ? K : 1) * sizeof *top_lps);
    vt_sha256_hex *rows = malloc((size_t)max_pos * sizeof *rows);
    ref_run *refs = calloc((size_t)(P ? P : 1), sizeof *refs);
    res->runs = calloc((size_t)P * (size_t)R + 1, sizeof *res->runs);
    int rc = VT_OK;
    if (!logits || !toks || !lp || !top_ids || !top_lps || !rows || !refs || !res->runs)
        rc = vt_error_set(err, VT_EINPUT, "capture: out of memory for %d positions x %d logits", max_pos, nv);

    vt_progress_start(plan->progress, prefix ? "prompts" : "runs", (int64_t)P * R);
    for (int rep = 0; rc == VT_OK && rep < R; rep++) {
        for (int p = 0; rc == VT_OK && p < P; p++, vt_progress_add(plan->progress, 1)) {
            const vt_prompt *pr = &plan->prompts->items[p];
            int32_t n = prefix ? plan->n_cont[p] : plan->max_tokens;
            vt_error rerr;
            vt_error_clear(&rerr);
            int run_rc = prefix ? vt_runner_score_shaped(r, plan->shape, pr->tokens, pr->n_tokens, plan->cont[p], n,
                                                         logits, &rerr)
                                : vt_runner_generate(r, pr->tokens, pr->n_tokens, n, toks, logits, &rerr);
            /* JSON has no spelling for NaN or infinity, and a reference
             * that produces them has failed: such a run is an error. A
             * top-k-only runner's -INFINITY means "not told" (runner.h). */
            for (size_t i = 0; run_rc == VT_OK && i < (size_t)n * (size_t)nv; i++)
                if (!isfinite(logits[i]) && !(known > 0 && logits[i] == -INFINITY))
                    run_rc = vt_error_set(&rerr, VT_ECHECK, "position %zu: logit of token %zu is %g: expected finite "
                                          "logits", i / (size_t)nv, i % (size_t)nv, (double)logits[i]);
            if (run_rc != VT_OK && vt_runner_broken(r)) {
                rc = vt_error_set(err, VT_EINPUT, "%s", rerr.msg);
                break;
            }
            vt_run_result *out = &res->runs[res->n_runs++];
            out->prompt = p;
            out->repeat = rep;
            out->ok = run_rc == VT_OK;
            out->off = res->n_pos;
            if (!out->ok) {
                if (!(out->error = strdup(rerr.msg))) {
                    rc = vt_error_set(err, VT_EINPUT, "capture: out of memory");
                    break;
                }
                res->n_failed++;
                res->identical_tokens = res->identical_logits = 0;
            } else if (!reserve(res, prefix, res->n_pos + n)) {
                rc = vt_error_set(err, VT_EINPUT, "capture: out of memory");
                break;
            } else {
                out->n = n;
                res->n_positions += n;
                vt_logits_sha256(logits, (size_t)n * (size_t)nv, &out->logits_sha);
                for (int32_t i = 0; i < n; i++) {
                    const float *row = logits + (size_t)i * (size_t)nv;
                    vt_logits_sha256(row, (size_t)nv, &rows[i]);
                    if (known > 0) /* already log-probs over the whole vocabulary */
                        for (int32_t v = 0; v < nv; v++)
                            lp[v] = row[v];
                    else
                        vt_log_softmax(row, nv, lp);
                    int64_t at = res->n_pos + i;
                    if (prefix) {
                        int32_t am = vt_argmax(row, nv);
                        toks[i] = am; /* what determinism compares in scoring runs */
                        res->tokens[at] = plan->cont[p][i];
                        res->logprobs[at] = lp[plan->cont[p][i]];
                        res->argmax[at] = am;
                        res->argmax_logprobs[at] = lp[am];
                        if (known > 0) {
                            /* Not among the k told: its log-prob is at most the lowest told. */
                            res->bound[at] = lp[plan->cont[p][i]] == -INFINITY;
                            if (res->bound[at]) {
                                double lowest = 0.0;
                                for (int32_t v = 0; v < nv; v++)
                                    if (lp[v] != -INFINITY && lp[v] < lowest)
                                        lowest = lp[v];
                                res->logprobs[at] = lowest;
                            }
                        }
                    } else {
                        res->tokens[at] = toks[i];
                        if (topk && rc == VT_OK) {
                            top_k(lp, nv, K, top_ids, top_lps);
                            rc = vt_topk_writer_add(topk, top_ids, top_lps, err);
                        }
                    }
                }
                res->n_pos += n;
                if (side && rc == VT_OK)
                    rc = vt_logits_writer_add(side, (uint32_t)p, (uint32_t)rep, logits, (uint32_t)n, (uint32_t)nv,
                                              err);
            }

            /* Determinism: repeat 0 is the reference of its prompt. */
            ref_run *ref = &refs[p];
            if (rep == 0) {
                ref->ok = out->ok;
                if (ref->ok) {
                    ref->n = n;
                    ref->tokens = malloc((size_t)(n ? n : 1) * sizeof *ref->tokens);
                    ref->rows = malloc((size_t)(n ? n : 1) * sizeof *ref->rows);
                    if (!ref->tokens || !ref->rows) {
                        rc = vt_error_set(err, VT_EINPUT, "capture: out of memory");
                        break;
                    }
                    memcpy(ref->tokens, toks, (size_t)n * sizeof *toks);
                    memcpy(ref->rows, rows, (size_t)n * sizeof *rows);
                    ref->sha = out->logits_sha;
                }
                continue;
            }
            if (!ref->ok || !out->ok) {
                note_mismatch(res, p, rep, 0, "status");
                continue;
            }
            int32_t pos_l = -1, pos_t = -1;
            for (int32_t i = 0; i < n && (pos_l < 0 || pos_t < 0); i++) {
                if (pos_l < 0 && strcmp(rows[i].hex, ref->rows[i].hex) != 0)
                    pos_l = i;
                if (pos_t < 0 && toks[i] != ref->tokens[i])
                    pos_t = i;
            }
            if (strcmp(out->logits_sha.hex, ref->sha.hex) != 0)
                res->identical_logits = 0;
            if (pos_t >= 0)
                res->identical_tokens = 0;
            if (pos_l >= 0 && (pos_t < 0 || pos_l <= pos_t))
                note_mismatch(res, p, rep, pos_l, "logits");
            else if (pos_t >= 0)
                note_mismatch(res, p, rep, pos_t, "tokens");
        }
    }
    vt_progress_end(plan->progress);
    for (int p = 0; refs && p < P; p++) {
        free(refs[p].tokens);
        free(refs[p].rows);
    }
    free(refs);
    free(logits);
    free(toks);
    free(lp);
    free(top_ids);
    free(top_lps);
    free(rows);
    return rc;
}

void vt_run_results_free(vt_run_results *res)
{
    for (int i = 0; res->runs && i < res->n_runs; i++)
        free(res->runs[i].error);
    free(res->runs);
    free(res->tokens);
    free(res->logprobs);
    free(res->argmax_logprobs);
    free(res->bound);
    free(res->argmax);
    memset(res, 0, sizeof *res);
}
