/* Runner speed side by side (speed.h). */
#include "speed.h"
#include "../common/vt_sort.h"

#include "../engine/gguf_file.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

vt_speed_stat vt_speed_stat_of(const double *v, int n)
{
    vt_speed_stat s = { 0, 0, 0 };
    if (n <= 0)
        return s;
    double sorted[VT_SPEED_MAX_RUNS];
    if (n > VT_SPEED_MAX_RUNS)
        n = VT_SPEED_MAX_RUNS;
    memcpy(sorted, v, (size_t)n * sizeof *v);
    vt_sort(sorted, (size_t)n, sizeof *sorted, cmp_double);
    s.min = sorted[0];
    s.max = sorted[n - 1];
    s.median = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
    return s;
}

/* ---- The timing layer: a runner table that forwards to a real one. ---- */

typedef struct timed {
    const vt_runner_ops *real;
    void *state;
    int32_t evals;    /* evals since the last reset */
    double prefill_s; /* the first eval after the reset */
    double decode_s;  /* every later eval */
    int32_t decode_n; /* tokens in those */
} timed;

/* open() has no context argument: the table to wrap and the state opened
 * pass through these, per thread. */
static _Thread_local const vt_runner_ops *next_real;
static _Thread_local timed *last_opened;

static int t_open(const vt_runner_settings *s, void **state, vt_error *err)
{
    timed *t = calloc(1, sizeof *t);
    if (!t)
        return vt_error_set(err, VT_EINPUT, "speed: out of memory");
    t->real = next_real;
    int rc = t->real->open(s, &t->state, err);
    if (rc != VT_OK) {
        free(t);
        return rc;
    }
    *state = t;
    last_opened = t;
    return VT_OK;
}

static int t_reset(void *state, vt_error *err)
{
    timed *t = state;
    t->evals = 0;
    t->prefill_s = t->decode_s = 0.0;
    t->decode_n = 0;
    return t->real->reset(t->state, err);
}

static int t_eval(void *state, const int32_t *tokens, int32_t n, int all_logits, float *logits, vt_error *err)
{
    timed *t = state;
    const double t0 = now();
    const int rc = t->real->eval(t->state, tokens, n, all_logits, logits, err);
    const double dt = now() - t0;
    if (t->evals++ == 0) {
        t->prefill_s = dt;
    } else {
        t->decode_s += dt;
        t->decode_n += n;
    }
    return rc;
}

static int32_t t_n_vocab(void *state)
{
    timed *t = state;
    return t->real->n_vocab(t->state);
}

static void t_identity(void *state, vt_runner_identity *out)
{
    timed *t = state;
    t->real->identity(t->state, out);
}

static void t_resolved(void *state, vt_runner_settings *out)
{
    timed *t = state;
    if (t->real->resolved)
        t->real->resolved(t->state, out);
}

static void t_close(void *state)
{
    timed *t = state;
    if (!t)
        return;
    t->real->close(t->state);
    free(t);
}

static const vt_runner_ops timed_ops = {
    .name = "timed",
    .open = t_open,
    .reset = t_reset,
    .eval = t_eval,
    .n_vocab = t_n_vocab,
    .identity = t_identity,
    .resolved = t_resolved,
    .close = t_close,
};

/* ---- Two runners, alternately. ---- */

typedef struct side_run {
    vt_runner *r;
    timed *t;
    int32_t *tokens; /* the last run's G tokens */
} side_run;

static int side_open(side_run *sr, vt_speed_side *sd, const vt_runner_ops *ops, const vt_runner_settings *s,
                     int32_t g, vt_error *err)
{
    sd->name = ops->name;
    next_real = ops;
    last_opened = NULL;
    sr->r = vt_runner_open(&timed_ops, s, err);
    if (!sr->r)
        return err->code ? err->code : VT_EINPUT;
    sr->t = last_opened;
    sr->tokens = calloc((size_t)g, sizeof *sr->tokens);
    if (!sr->tokens)
        return vt_error_set(err, VT_EINPUT, "speed: out of memory");
    vt_runner_identity id;
    vt_runner_identity_get(sr->r, &id);
    snprintf(sd->version, sizeof sd->version, "%s", id.version ? id.version : "");
    snprintf(sd->detail, sizeof sd->detail, "%s", id.detail ? id.detail : "");
    vt_runner_resolved(sr->r, &sd->resolved);
    return VT_OK;
}

/* One generation; its times go to run r unless r < 0 (the warm-up). */
static int side_time(side_run *sr, vt_speed_side *sd, const int32_t *prompt, int32_t p, int32_t g, int r,
                     vt_error *err)
{
    int rc = vt_runner_generate(sr->r, prompt, p, g, sr->tokens, NULL, err);
    if (rc != VT_OK)
        return rc;
    if (sr->t->evals != g || sr->t->decode_n != g - 1)
        return vt_error_set(err, VT_EINPUT, "speed: %s: %d evals, %d decode tokens: expected %d and %d", sd->name,
                            sr->t->evals, sr->t->decode_n, g, g - 1);
    if (r >= 0) {
        sd->prefill[r] = p / sr->t->prefill_s;
        sd->decode[r] = (g - 1) / sr->t->decode_s;
    }
    return VT_OK;
}

int vt_speed_compare(const vt_runner_ops *a, const vt_runner_ops *b, const vt_runner_settings *s, int32_t p,
                     int32_t g, int runs, const vt_speed_probe *probe, vt_speed_result *out, vt_error *err)
{
    memset(out, 0, sizeof *out);
    if (!a || !b || !s || !s->model_path)
        return vt_error_set(err, VT_EINPUT, "speed: two runners and a model expected");
    if (p < 1 || g < 2 || p > (1 << 20) || g > (1 << 20) || runs < 1 || runs > VT_SPEED_MAX_RUNS)
        return vt_error_set(err, VT_EINPUT, "speed: prefill %d, decode %d, runs %d: expected >= 1, >= 2 and "
                            "1..%d", (int)p, (int)g, runs, VT_SPEED_MAX_RUNS);
    vt_runner_settings st = *s;
    st.n_ctx = p + g;
    st.n_batch = p;
    out->runs = runs;
    out->prefill_tokens = p;
    out->decode_tokens = g - 1;
    out->first_difference = -1;
    side_run sr[2];
    memset(sr, 0, sizeof sr);
    int32_t *prompt = NULL;
    const vt_runner_ops *ops[2] = { a, b };
    int rc = VT_OK;
    for (int k = 0; k < 2 && rc == VT_OK; k++)
        rc = side_open(&sr[k], &out->side[k], ops[k], &st, g, err);
    if (rc != VT_OK)
        goto out;
    out->n_vocab = vt_runner_n_vocab(sr[0].r);
    if (vt_runner_n_vocab(sr[1].r) != out->n_vocab) {
        rc = vt_error_set(err, VT_ECHECK, "speed: %s: vocabulary sizes differ: %s %d, %s %d", s->model_path,
                          a->name, (int)out->n_vocab, b->name, (int)vt_runner_n_vocab(sr[1].r));
        goto out;
    }
    /* P pseudo-random ids (a fixed stream) below 90% of the vocabulary. */
    prompt = malloc((size_t)p * sizeof *prompt);
    if (!prompt) {
        rc = vt_error_set(err, VT_EINPUT, "speed: out of memory");
        goto out;
    }
    uint64_t x = 0x9E3779B97F4A7C15ull;
    const uint32_t span = (uint32_t)(out->n_vocab - out->n_vocab / 10);
    for (int32_t i = 0; i < p; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        prompt[i] = (int32_t)((x >> 11) % (span ? span : 1));
    }
    for (int k = 0; k < 2 && rc == VT_OK; k++)
        rc = side_time(&sr[k], &out->side[k], prompt, p, g, -1, err);
    for (int r = 0; r < runs && rc == VT_OK; r++) {
        if (probe)
            rc = vt_speed_read_bandwidth(probe->n_threads, probe->bytes, probe->passes, &out->read_bw[r], err);
        for (int i = 0; i < 2 && rc == VT_OK; i++) {
            const int k = r % 2 ? 1 - i : i;
            rc = side_time(&sr[k], &out->side[k], prompt, p, g, r, err);
        }
    }
    if (rc != VT_OK)
        goto out;
    out->read_bw_stat = vt_speed_stat_of(out->read_bw, runs);
    for (int k = 0; k < 2; k++) {
        out->side[k].prefill_stat = vt_speed_stat_of(out->side[k].prefill, runs);
        out->side[k].decode_stat = vt_speed_stat_of(out->side[k].decode, runs);
    }
    for (int r = 0; r < runs; r++) {
        out->prefill_ratio[r] = out->side[0].prefill[r] / out->side[1].prefill[r];
        out->decode_ratio[r] = out->side[0].decode[r] / out->side[1].decode[r];
    }
    out->prefill_ratio_stat = vt_speed_stat_of(out->prefill_ratio, runs);
    out->decode_ratio_stat = vt_speed_stat_of(out->decode_ratio, runs);
    for (int32_t i = 0; i < g; i++) {
        if (sr[0].tokens[i] == sr[1].tokens[i])
            out->greedy_agree++;
        else if (out->first_difference < 0)
            out->first_difference = i;
    }
out:
    free(prompt);
    for (int k = 0; k < 2; k++) {
        vt_runner_close(sr[k].r);
        free(sr[k].tokens);
    }
    return rc;
}

/* ---- Read bandwidth. ---- */

typedef struct bw_slice {
    const uint8_t *p;
    size_t n;
    uint64_t sink; /* written by the worker: the reads cannot be optimised away */
    atomic_int *go; /* 0: wait, 1: read, -1: leave (not every thread started) */
} bw_slice;

#if defined(__x86_64__)
__attribute__((target("avx2"))) static uint64_t read_slice_avx2(const uint8_t *p, size_t n)
{
    __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0;
    size_t i = 0;
    for (; i + 128 <= n; i += 128) {
        a0 = _mm256_xor_si256(a0, _mm256_load_si256((const __m256i *)(const void *)(p + i)));
        a1 = _mm256_xor_si256(a1, _mm256_load_si256((const __m256i *)(const void *)(p + i + 32)));
        a2 = _mm256_xor_si256(a2, _mm256_load_si256((const __m256i *)(const void *)(p + i + 64)));
        a3 = _mm256_xor_si256(a3, _mm256_load_si256((const __m256i *)(const void *)(p + i + 96)));
    }
    const __m256i a = _mm256_xor_si256(_mm256_xor_si256(a0, a1), _mm256_xor_si256(a2, a3));
    return (uint64_t)_mm256_extract_epi64(a, 0) ^ (uint64_t)_mm256_extract_epi64(a, 3);
}
#endif

static uint64_t read_slice(const uint8_t *p, size_t n)
{
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2"))
        return read_slice_avx2(p, n);
#endif
    uint64_t s = 0;
    for (size_t i = 0; i + 8 <= n; i += 8) {
        uint64_t v;
        memcpy(&v, p + i, 8);
        s ^= v;
    }
    return s;
}

static void *bw_worker(void *arg)
{
    bw_slice *s = arg;
    int go;
    while ((go = atomic_load(s->go)) == 0)
        sched_yield();
    if (go > 0)
        s->sink = read_slice(s->p, s->n);
    return NULL;
}

int vt_speed_read_bandwidth(int n_threads, size_t bytes, int passes, double *bytes_per_s, vt_error *err)
{
    enum { MAX_T = 256 };
    if (n_threads < 1 || n_threads > MAX_T || passes < 1 || bytes < ((size_t)1 << 20))
        return vt_error_set(err, VT_EINPUT, "speed: read bandwidth: %d threads, %zu bytes, %d passes: expected "
                            "1..%d, >= 1 MiB, >= 1", n_threads, bytes, passes, MAX_T);
    const size_t slice = bytes / (size_t)n_threads / 128 * 128;
    uint8_t *buf = aligned_alloc(64, slice * (size_t)n_threads);
    if (!buf)
        return vt_error_set(err, VT_EINPUT, "speed: read bandwidth: out of memory for %zu bytes", bytes);
    /* every page touched (and made distinct) before timing */
    for (size_t i = 0; i < slice * (size_t)n_threads; i += 8) {
        const uint64_t v = i * 0x9E3779B97F4A7C15ull;
        memcpy(buf + i, &v, 8);
    }
    bw_slice sl[MAX_T];
    pthread_t th[MAX_T];
    double pass_bw[VT_SPEED_MAX_RUNS];
    int rc = VT_OK;
    if (passes > VT_SPEED_MAX_RUNS)
        passes = VT_SPEED_MAX_RUNS;
    for (int pass = 0; pass < passes && rc == VT_OK; pass++) {
        atomic_int go = 0;
        int started = 0;
        for (int k = 0; k < n_threads; k++) {
            sl[k] = (bw_slice){ .p = buf + (size_t)k * slice, .n = slice, .go = &go };
            if (pthread_create(&th[k], NULL, bw_worker, &sl[k]) != 0)
                break;
            started++;
        }
        const double t0 = now();
        atomic_store(&go, started == n_threads ? 1 : -1);
        for (int k = 0; k < started; k++)
            pthread_join(th[k], NULL);
        const double dt = now() - t0;
        if (started < n_threads) {
            rc = vt_error_set(err, VT_EINPUT, "speed: read bandwidth: cannot start %d threads", n_threads);
            break;
        }
        pass_bw[pass] = (double)(slice * (size_t)n_threads) / dt;
    }
    free(buf);
    if (rc == VT_OK)
        *bytes_per_s = vt_speed_stat_of(pass_bw, passes).median;
    return rc;
}

int vt_speed_weight_bytes_per_token(const char *path, double *bytes, vt_error *err)
{
    vt_gguf *gg = vt_gguf_open(path, err);
    if (!gg)
        return err->code ? err->code : VT_EINPUT;
    double sum = 0;
    const int tied = vt_gguf_find_tensor(gg, "output.weight") == NULL;
    for (uint64_t i = 0; i < vt_gguf_n_tensors(gg); i++) {
        const vt_gguf_tensor *t = vt_gguf_tensor_at(gg, i);
        const int is_embd = t->name.len == 17 && memcmp(t->name.ptr, "token_embd.weight", 17) == 0;
        if (!is_embd || tied)
            sum += (double)t->n_bytes;
    }
    vt_gguf_free(gg);
    *bytes = sum;
    return VT_OK;
}
