/* Generation, teacher-forced scoring and sampling, written once over the
 * runner table (runner.h): every runner's tokens come from this sampler. */
#include "runner.h"
#include "../common/vt_sort.h"

#include "../common/vt_rng.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct vt_runner {
    const vt_runner_ops *ops;
    void *state;
    vt_runner_settings settings;
    int32_t n_vocab;
    /* Scratch, allocated once: candidate ids and probabilities for
     * sampling, and the logits a generation samples from. */
    int32_t *cand;
    double *prob;
    float *last;
};

void vt_runner_settings_default(vt_runner_settings *s)
{
    memset(s, 0, sizeof *s);
    s->mode = VT_MODE_PRODUCTION;
    s->cache_dtype = VT_CACHE_AUTO;
    /* Measured: activations rounded through the dot type, as llama.cpp's CPU
     * backend does, make the engine agree with the oracle far more often
     * (tiny fixtures, 16 prompts x 32 tokens: Q4_K strict 13/16 vs 2/16). */
    s->matmul = VT_MATMUL_Q8;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    s->n_threads = cores > 0 ? (int32_t)cores : 1;
    s->n_ctx = 512;
    s->n_batch = 512;
    s->seed = 0;
    s->sampling.temperature = 0.0;
    s->sampling.top_k = 0;
    s->sampling.top_p = 1.0;
    s->sampling.min_p = 0.0;
    s->server_top_k = 20;
}

static const char *const mode_names[] = { "production", "eager" };
static const char *const cache_names[] = { "auto", "f32", "bf16", "fp8_e4m3" };
static const char *const matmul_names[] = { "exact", "q8" };
static const char *const backend_names[] = { "cpu", "hip" };
static const char *const shape_names[] = { "replay", "batched" };
static const char *const dtype_names[] = { "f32", "bf16" };
static const char *const attention_names[] = { "eager", "sdpa" };

static int parse_name(const char *s, const char *const *names, int n)
{
    for (int i = 0; s && i < n; i++)
        if (strcmp(s, names[i]) == 0)
            return i;
    return -1;
}

const char *vt_exec_mode_name(vt_exec_mode m) { return (unsigned)m < 2 ? mode_names[m] : "?"; }
const char *vt_cache_dtype_name(vt_cache_dtype d) { return (unsigned)d < 4 ? cache_names[d] : "?"; }
const char *vt_matmul_mode_name(vt_matmul_mode m) { return (unsigned)m < 2 ? matmul_names[m] : "?"; }

const char *vt_backend_name(vt_backend b) { return (unsigned)b < 2 ? backend_names[b] : "?"; }

const char *vt_dtype_name(vt_dtype d) { return (unsigned)d < 2 ? dtype_names[d] : "?"; }
const char *vt_attn_impl_name(vt_attn_impl a) { return (unsigned)a < 2 ? attention_names[a] : "?"; }

int vt_dtype_parse(const char *s, vt_dtype *out)
{
    int i = parse_name(s, dtype_names, 2);
    return i < 0 ? 0 : (*out = (vt_dtype)i, 1);
}

int vt_attn_impl_parse(const char *s, vt_attn_impl *out)
{
    int i = parse_name(s, attention_names, 2);
    return i < 0 ? 0 : (*out = (vt_attn_impl)i, 1);
}

int vt_backend_parse(const char *s, vt_backend *out)
{
    int i = parse_name(s, backend_names, 2);
    return i < 0 ? 0 : (*out = (vt_backend)i, 1);
}

int vt_exec_mode_parse(const char *s, vt_exec_mode *out)
{
    int i = parse_name(s, mode_names, 2);
    return i < 0 ? 0 : (*out = (vt_exec_mode)i, 1);
}

int vt_cache_dtype_parse(const char *s, vt_cache_dtype *out)
{
    int i = parse_name(s, cache_names, 4);
    return i < 0 ? 0 : (*out = (vt_cache_dtype)i, 1);
}

int vt_matmul_mode_parse(const char *s, vt_matmul_mode *out)
{
    int i = parse_name(s, matmul_names, 2);
    return i < 0 ? 0 : (*out = (vt_matmul_mode)i, 1);
}

const char *vt_score_shape_name(vt_score_shape s) { return (unsigned)s < 2 ? shape_names[s] : "?"; }

int vt_score_shape_parse(const char *s, vt_score_shape *out)
{
    int i = parse_name(s, shape_names, 2);
    return i < 0 ? 0 : (*out = (vt_score_shape)i, 1);
}

vt_runner *vt_runner_open(const vt_runner_ops *ops, const vt_runner_settings *s, vt_error *err)
{
    vt_runner *r = calloc(1, sizeof *r);
    if (!r) {
        vt_error_set(err, VT_EINPUT, "runner: out of memory");
        return NULL;
    }
    r->ops = ops;
    r->settings = *s;
    if (ops->open(s, &r->state, err) != VT_OK) {
        free(r);
        return NULL;
    }
    r->n_vocab = ops->n_vocab(r->state);
    r->cand = malloc((size_t)r->n_vocab * sizeof *r->cand);
    r->prob = malloc((size_t)r->n_vocab * sizeof *r->prob);
    r->last = malloc((size_t)r->n_vocab * sizeof *r->last);
    if (!r->cand || !r->prob || !r->last) {
        vt_error_set(err, VT_EINPUT, "runner: out of memory");
        vt_runner_close(r);
        return NULL;
    }
    return r;
}

void vt_runner_close(vt_runner *r)
{
    if (!r)
        return;
    if (r->state)
        r->ops->close(r->state);
    free(r->cand);
    free(r->prob);
    free(r->last);
    free(r);
}

int32_t vt_runner_n_vocab(const vt_runner *r) { return r->n_vocab; }

void vt_runner_identity_get(const vt_runner *r, vt_runner_identity *out) { r->ops->identity(r->state, out); }

int vt_runner_broken(const vt_runner *r) { return r->ops->broken ? r->ops->broken(r->state) : 0; }

int32_t vt_runner_top_k_only(const vt_runner *r) { return r->ops->top_k_only ? r->ops->top_k_only(r->state) : 0; }

int vt_runner_imports(vt_runner *r, const char **path, vt_error *err)
{
    *path = NULL;
    return r->ops->imports ? r->ops->imports(r->state, path, err) : VT_OK;
}

const vt_runner_settings *vt_runner_settings_of(const vt_runner *r) { return &r->settings; }

void vt_runner_resolved(const vt_runner *r, vt_runner_settings *out)
{
    *out = r->settings;
    if (r->ops->resolved)
        r->ops->resolved(r->state, out);
}

/* What the plain scan `if (x[i] > x[best]) best = i` returns (the first
 * index of the largest value, NaN passed over; 0 when x[0] is NaN), in one
 * pass a compiler vectorizes: the maximum of each block of 256 in 32 lanes
 * that start at the running maximum (so a NaN never enters; 32 so that the
 * maxima are not one chain of dependent instructions), the first block that
 * raises it remembered; then the first index equal to the maximum from that
 * block on (no earlier block holds it, or that block would have raised the
 * maximum first). Greedy decode runs it over the vocabulary every token:
 * bench/argmax_bench on 151,936 values, one core of the development
 * machine: 13 us wherever the largest is, against 11 to read the row once;
 * the two passes before this (the maximum, then the row again for its
 * index) 21 to 69 us, the plain scan (x[best] loaded again each step, a
 * chain through memory) 108. */
int32_t vt_argmax(const float *x, int32_t n)
{
    if (n <= 1 || x[0] != x[0])
        return 0;
    float m = x[0];
    int32_t from = 0, i = 0;
    for (; i + 256 <= n; i += 256) {
        float lane[32];
        for (int k = 0; k < 32; k++)
            lane[k] = m;
        for (int32_t j = i; j < i + 256; j += 32)
            for (int k = 0; k < 32; k++)
                lane[k] = x[j + k] > lane[k] ? x[j + k] : lane[k];
        for (int k = 0; k < 16; k++)
            lane[k] = lane[k + 16] > lane[k] ? lane[k + 16] : lane[k];
        for (int k = 0; k < 8; k++)
            lane[k] = lane[k + 8] > lane[k] ? lane[k + 8] : lane[k];
        float b = lane[0];
        for (int k = 1; k < 8; k++)
            b = lane[k] > b ? lane[k] : b;
        if (b > m) {
            m = b;
            from = i;
        }
    }
    for (; i < n; i++)
        if (x[i] > m) {
            m = x[i];
            from = i;
        }
    for (i = from; i < n; i++)
        if (x[i] == m)
            return i;
    return 0; /* not reached: m is one of the x[i] */
}

void vt_log_softmax(const float *x, int32_t n, double *out)
{
    double mx = -INFINITY;
    for (int32_t i = 0; i < n; i++)
        if (x[i] > mx)
            mx = x[i];
    double sum = 0.0;
    for (int32_t i = 0; i < n; i++)
        sum += exp((double)x[i] - mx);
    double lse = mx + log(sum);
    for (int32_t i = 0; i < n; i++)
        out[i] = (double)x[i] - lse;
}

/* Candidates sorted by logit, descending; ties by id, so the order is total. */
static const float *sort_logits;
static int by_logit_desc(const void *a, const void *b)
{
    int32_t i = *(const int32_t *)a, j = *(const int32_t *)b;
    if (sort_logits[i] != sort_logits[j])
        return sort_logits[i] > sort_logits[j] ? -1 : 1;
    return (i > j) - (i < j);
}

/* One draw: top-k, then temperature softmax, then top-p, then min-p, then an
 * inverse-CDF draw with u from the seeded stream. Greedy when temperature <= 0. */
static int32_t sample(vt_runner *r, const float *logits, vt_rng *rng)
{
    const vt_sampling *sp = &r->settings.sampling;
    int32_t n = r->n_vocab;
    if (sp->temperature <= 0.0)
        return vt_argmax(logits, n);
    for (int32_t i = 0; i < n; i++)
        r->cand[i] = i;
    /* qsort is not reentrant with a comparator context in C11; runners are
     * used from one thread each, and this file-scope pointer is only read
     * during this call. */
    sort_logits = logits;
    vt_sort(r->cand, (size_t)n, sizeof *r->cand, by_logit_desc);
    int32_t k = n;
    if (sp->top_k > 0 && sp->top_k < k)
        k = sp->top_k;
    double mx = logits[r->cand[0]], sum = 0.0;
    for (int32_t i = 0; i < k; i++) {
        r->prob[i] = exp(((double)logits[r->cand[i]] - mx) / sp->temperature);
        sum += r->prob[i];
    }
    for (int32_t i = 0; i < k; i++)
        r->prob[i] /= sum;
    if (sp->top_p < 1.0) {
        double cum = 0.0;
        int32_t keep = k;
        for (int32_t i = 0; i < k; i++) {
            cum += r->prob[i];
            if (cum >= sp->top_p) {
                keep = i + 1;
                break;
            }
        }
        k = keep;
    }
    if (sp->min_p > 0.0) {
        double floor_p = sp->min_p * r->prob[0];
        int32_t keep = 1;
        while (keep < k && r->prob[keep] >= floor_p)
            keep++;
        k = keep;
    }
    double total = 0.0;
    for (int32_t i = 0; i < k; i++)
        total += r->prob[i];
    double u = vt_rng_uniform(rng) * total, cum = 0.0;
    for (int32_t i = 0; i < k; i++) {
        cum += r->prob[i];
        if (u < cum)
            return r->cand[i];
    }
    return r->cand[k - 1];
}

int vt_runner_generate(vt_runner *r, const int32_t *prompt, int32_t n_prompt, int32_t n,
                       int32_t *out_tokens, float *out_logits, vt_error *err)
{
    if (n_prompt <= 0)
        return vt_error_set(err, VT_EINPUT, "generate: empty prompt: expected at least one token");
    if (n < 0 || (int64_t)n_prompt + n > r->settings.n_ctx)
        return vt_error_set(err, VT_EINPUT,
                            "generate: %d prompt + %d new tokens: expected at most n_ctx %d in all",
                            n_prompt, n, r->settings.n_ctx);
    for (int32_t i = 0; i < n_prompt; i++)
        if (prompt[i] < 0 || prompt[i] >= r->n_vocab)
            return vt_error_set(err, VT_EINPUT, "generate: prompt position %d: token %d: expected 0 <= id < %d",
                                i, prompt[i], r->n_vocab);
    int rc = r->ops->reset(r->state, err);
    if (rc)
        return rc;
    vt_rng rng;
    vt_rng_seed(&rng, r->settings.seed);
    size_t nv = (size_t)r->n_vocab;
    float *last = r->last;
    rc = r->ops->eval(r->state, prompt, n_prompt, 0, last, err);
    for (int32_t i = 0; rc == VT_OK && i < n; i++) {
        if (out_logits)
            memcpy(out_logits + (size_t)i * nv, last, nv * sizeof *last);
        int32_t tok = sample(r, last, &rng);
        out_tokens[i] = tok;
        if (i + 1 < n)
            rc = r->ops->eval(r->state, &tok, 1, 0, last, err);
    }
    return rc;
}

/* What both scoring shapes refuse before anything runs. */
static int check_score_args(const vt_runner *r, int32_t n_prompt, const int32_t *cont, int32_t n_cont, vt_error *err)
{
    if (n_prompt <= 0)
        return vt_error_set(err, VT_EINPUT, "score: empty prompt: expected at least one token");
    if (n_cont < 0 || (int64_t)n_prompt + n_cont > r->settings.n_ctx)
        return vt_error_set(err, VT_EINPUT, "score: %d prompt + %d scored tokens: expected at most n_ctx %d",
                            n_prompt, n_cont, r->settings.n_ctx);
    for (int32_t i = 0; i < n_cont; i++)
        if (cont[i] < 0 || cont[i] >= r->n_vocab)
            return vt_error_set(err, VT_EINPUT, "score: position %d: token %d: expected 0 <= id < %d", i,
                                cont[i], r->n_vocab);
    return VT_OK;
}

int vt_runner_score(vt_runner *r, const int32_t *prompt, int32_t n_prompt, const int32_t *cont,
                    int32_t n_cont, float *out_logits, vt_error *err)
{
    int rc = check_score_args(r, n_prompt, cont, n_cont, err);
    if (rc == VT_OK)
        rc = r->ops->reset(r->state, err);
    if (rc || n_cont == 0)
        return rc;
    size_t nv = (size_t)r->n_vocab;
    /* The prompt's last position predicts cont[0]; cont[i] predicts cont[i+1].
     * One pass: prompt (last logits) then cont[0..n_cont-1) (all logits). */
    rc = r->ops->eval(r->state, prompt, n_prompt, 0, out_logits, err);
    if (rc == VT_OK && n_cont > 1)
        rc = r->ops->eval(r->state, cont, n_cont - 1, 1, out_logits + nv, err);
    return rc;
}

int vt_runner_score_replay(vt_runner *r, const int32_t *prompt, int32_t n_prompt, const int32_t *cont,
                           int32_t n_cont, float *out_logits, vt_error *err)
{
    int rc = check_score_args(r, n_prompt, cont, n_cont, err);
    if (rc == VT_OK)
        rc = r->ops->reset(r->state, err);
    if (rc || n_cont == 0)
        return rc;
    size_t nv = (size_t)r->n_vocab;
    /* The calls vt_runner_generate makes, with cont in place of its samples. */
    rc = r->ops->eval(r->state, prompt, n_prompt, 0, out_logits, err);
    for (int32_t i = 0; rc == VT_OK && i + 1 < n_cont; i++)
        rc = r->ops->eval(r->state, &cont[i], 1, 0, out_logits + (size_t)(i + 1) * nv, err);
    return rc;
}

int vt_runner_score_shaped(vt_runner *r, vt_score_shape shape, const int32_t *prompt, int32_t n_prompt,
                           const int32_t *cont, int32_t n_cont, float *out_logits, vt_error *err)
{
    return shape == VT_SHAPE_REPLAY ? vt_runner_score_replay(r, prompt, n_prompt, cont, n_cont, out_logits, err)
                                    : vt_runner_score(r, prompt, n_prompt, cont, n_cont, out_logits, err);
}
