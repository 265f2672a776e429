#include "codec_check.h"
#include "../common/vt_rng.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static const char *class_names[VT_CODEC_CHECK_CLASSES] = { "normal", "uniform", "outliers",
                                                           "all-equal", "all-zero" };

const char *vt_codec_check_class_name(int cls)
{
    return (cls >= 0 && cls < VT_CODEC_CHECK_CLASSES) ? class_names[cls] : "?";
}

void vt_codec_check_make_rows(float *x, int64_t row0, int64_t rows, int64_t cols, uint64_t seed)
{
    for (int64_t k = 0; k < rows; k++) {
        int64_t r = row0 + k;
        /* Each row has its own stream, so any chunk of rows can be made alone. */
        uint64_t row_seed = seed ^ ((uint64_t)r * 0xd1b54a32d192ed03ull);
        vt_rng rng;
        vt_rng_seed(&rng, row_seed);
        float *row = x + k * cols;
        /* A per-row scale spanning several decades exercises the block scales. */
        double scale = pow(10.0, -3.0 + 4.0 * vt_rng_uniform(&rng));
        switch (r % VT_CODEC_CHECK_CLASSES) {
        case 0:
            for (int64_t i = 0; i < cols; i++)
                row[i] = (float)(scale * vt_rng_normal(&rng));
            break;
        case 1:
            for (int64_t i = 0; i < cols; i++)
                row[i] = (float)(scale * (2.0 * vt_rng_uniform(&rng) - 1.0));
            break;
        case 2: /* normal with about 1% of values 20-100x larger */
            for (int64_t i = 0; i < cols; i++) {
                double v = vt_rng_normal(&rng);
                if (vt_rng_uniform(&rng) < 0.01)
                    v *= 20.0 + 80.0 * vt_rng_uniform(&rng);
                row[i] = (float)(scale * v);
            }
            break;
        case 3: {
            float c = (float)(scale * vt_rng_normal(&rng));
            for (int64_t i = 0; i < cols; i++)
                row[i] = c;
            break;
        }
        default:
            memset(row, 0, (size_t)cols * sizeof *row);
            break;
        }
    }
}

void vt_codec_check_make_imatrix(float *w, int64_t cols, uint64_t seed)
{
    /* Log-normal positive weights, as a calibration run's mean squared
     * activations look: every column counts, some much more than others. */
    vt_rng rng;
    vt_rng_seed(&rng, seed ^ 0x494d4154ull);
    for (int64_t j = 0; j < cols; j++)
        w[j] = (float)exp(vt_rng_normal(&rng));
}

int vt_codec_check_uses_imatrix(vt_ggml *g, const vt_codec *c)
{
    /* The IQ family is designed around an importance matrix; give it one. */
    return vt_ggml_requires_imatrix(g, (int)c->type) || strncmp(c->name, "IQ", 2) == 0;
}

static uint64_t type_seed(uint64_t seed, const vt_codec *c)
{
    /* Different types see different data. */
    return seed ^ ((uint64_t)c->type * 0x9e3779b97f4a7c15ull);
}

static void merge_result(vt_codec_check_result *into, const vt_codec_check_result *part, int64_t row0)
{
    into->rows += part->rows;
    into->f32_identical += part->f32_identical;
    into->bf16_identical += part->bf16_identical;
    if (part->max_abs_diff > into->max_abs_diff)
        into->max_abs_diff = part->max_abs_diff;
    if (part->first_bad_row >= 0) {
        int64_t r = row0 + part->first_bad_row;
        if (into->first_bad_row < 0 || r < into->first_bad_row)
            into->first_bad_row = r;
    }
}

/* Checks rows [row0, row0+rows) of one codec. */
static int check_rows(vt_ggml *g, const vt_codec *c, int64_t row0, int64_t rows, int64_t cols,
                      uint64_t seed, vt_codec_check_result *res, vt_error *err)
{
    memset(res, 0, sizeof *res);
    res->first_bad_row = -1;
    size_t rb = vt_codec_row_bytes(c, cols);
    float *x = malloc((size_t)(rows * cols) * sizeof *x);
    unsigned char *q = malloc((size_t)rows * rb);
    float *imat = malloc((size_t)cols * sizeof *imat);
    float *ref = malloc((size_t)cols * sizeof *ref);
    float *ours = malloc((size_t)cols * sizeof *ours);
    uint16_t *ref16 = malloc((size_t)cols * sizeof *ref16);
    uint16_t *ours16 = malloc((size_t)cols * sizeof *ours16);
    int rc = VT_OK;
    if (!x || !q || !imat || !ref || !ours || !ref16 || !ours16) {
        rc = vt_error_set(err, VT_EINPUT, "codec check: out of memory");
        goto done;
    }
    uint64_t ts = type_seed(seed, c);
    vt_codec_check_make_rows(x, row0, rows, cols, ts);
    int with_imatrix = vt_codec_check_uses_imatrix(g, c);
    if (with_imatrix)
        vt_codec_check_make_imatrix(imat, cols, ts);
    rc = vt_ggml_quantize(g, (int)c->type, x, q, rows, cols, with_imatrix ? imat : NULL, err);
    if (rc)
        goto done;
    res->rows = rows;
    for (int64_t r = 0; r < rows; r++) {
        const unsigned char *qr = q + (size_t)r * rb;
        if ((rc = vt_ggml_dequantize(g, (int)c->type, qr, ref, cols, err)) != VT_OK)
            goto done;
        if ((rc = vt_codec_decode_row(c, qr, cols, VT_DTYPE_F32, ours, err)) != VT_OK)
            goto done;
        int same = memcmp(ref, ours, (size_t)cols * sizeof *ref) == 0;
        for (int64_t i = 0; i < cols; i++) {
            double d = fabs((double)ours[i] - (double)ref[i]);
            if (isnan(ours[i]) && isnan(ref[i]))
                d = 0;
            else if (isnan(d))
                d = INFINITY;
            if (d > res->max_abs_diff)
                res->max_abs_diff = d;
        }
        vt_ggml_f32_to_bf16(g, ref, ref16, cols);
        if ((rc = vt_codec_decode_row(c, qr, cols, VT_DTYPE_BF16, ours16, err)) != VT_OK)
            goto done;
        int same16 = memcmp(ref16, ours16, (size_t)cols * sizeof *ref16) == 0;
        res->f32_identical += same;
        res->bf16_identical += same16;
        if ((!same || !same16) && res->first_bad_row < 0)
            res->first_bad_row = r;
    }
done:
    free(x);
    free(q);
    free(imat);
    free(ref);
    free(ours);
    free(ref16);
    free(ours16);
    return rc;
}

static int check_args(const vt_codec *c, int64_t rows, int64_t cols, vt_error *err)
{
    if (!c->decode_f32)
        return vt_error_set(err, VT_EINPUT, "codec check: %s: no decoder", c->name);
    if (rows <= 0 || cols <= 0 || cols % 256 != 0)
        return vt_error_set(err, VT_EINPUT,
                            "codec check: rows %lld, cols %lld: expected rows > 0 and cols a positive multiple of 256",
                            (long long)rows, (long long)cols);
    return VT_OK;
}

int vt_codec_check_type(vt_ggml *g, const vt_codec *c, int64_t rows, int64_t cols, uint64_t seed,
                        vt_codec_check_result *res, vt_error *err)
{
    memset(res, 0, sizeof *res);
    res->first_bad_row = -1;
    int rc = check_args(c, rows, cols, err);
    return rc ? rc : check_rows(g, c, 0, rows, cols, seed, res, err);
}

/* ---- many types on several threads ----
 * Work is split into (type, chunk of rows) jobs taken in order by the
 * workers; the caller's thread reports each type, in order, once all its
 * chunks are done. Results do not depend on the thread count. */
enum { CHUNK_ROWS = 128 };

typedef struct check_job {
    int type_index;
    int64_t row0, rows;
} check_job;

typedef struct check_pool {
    vt_ggml *g;
    const vt_codec *const *codecs;
    int64_t cols;
    uint64_t seed;
    check_job *jobs;
    int n_jobs, next_job;
    int *chunks_left;                 /* per type */
    vt_codec_check_result *results;   /* per type */
    vt_error err;                     /* first failure */
    pthread_mutex_t mu;
    pthread_cond_t progress;
} check_pool;

static void *check_worker(void *arg)
{
    check_pool *p = arg;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        int j = p->err.code ? p->n_jobs : p->next_job++;
        pthread_mutex_unlock(&p->mu);
        if (j >= p->n_jobs)
            return NULL;
        const check_job *job = &p->jobs[j];
        vt_codec_check_result part;
        vt_error err;
        vt_error_clear(&err);
        int rc = check_rows(p->g, p->codecs[job->type_index], job->row0, job->rows, p->cols, p->seed,
                            &part, &err);
        pthread_mutex_lock(&p->mu);
        if (rc && !p->err.code)
            p->err = err;
        if (!rc)
            merge_result(&p->results[job->type_index], &part, job->row0);
        p->chunks_left[job->type_index]--;
        pthread_cond_broadcast(&p->progress);
        pthread_mutex_unlock(&p->mu);
    }
}

int vt_codec_check_many(vt_ggml *g, const vt_codec *const *codecs, int n, int64_t rows, int64_t cols,
                        uint64_t seed, int n_threads, vt_codec_check_result *results,
                        void (*on_done)(int i, const vt_codec_check_result *r, void *ctx), void *ctx,
                        vt_error *err)
{
    for (int i = 0; i < n; i++) {
        int rc = check_args(codecs[i], rows, cols, err);
        if (rc)
            return rc;
    }
    if (n_threads < 1)
        n_threads = 1;
    if (n_threads > 64)
        n_threads = 64;
    int64_t chunks_per_type = (rows + CHUNK_ROWS - 1) / CHUNK_ROWS;
    check_pool p = { .g = g, .codecs = codecs, .cols = cols, .seed = seed };
    vt_error_clear(&p.err);
    p.n_jobs = (int)(n * chunks_per_type);
    p.jobs = calloc((size_t)p.n_jobs, sizeof *p.jobs);
    p.chunks_left = calloc((size_t)n, sizeof *p.chunks_left);
    pthread_t threads[64];
    if (!p.jobs || !p.chunks_left) {
        free(p.jobs);
        free(p.chunks_left);
        return vt_error_set(err, VT_EINPUT, "codec check: out of memory");
    }
    p.results = results;
    for (int i = 0, j = 0; i < n; i++) {
        memset(&results[i], 0, sizeof results[i]);
        results[i].first_bad_row = -1;
        p.chunks_left[i] = (int)chunks_per_type;
        for (int64_t k = 0; k < chunks_per_type; k++, j++) {
            p.jobs[j].type_index = i;
            p.jobs[j].row0 = k * CHUNK_ROWS;
            p.jobs[j].rows = rows - p.jobs[j].row0 < CHUNK_ROWS ? rows - p.jobs[j].row0 : CHUNK_ROWS;
        }
    }
    pthread_mutex_init(&p.mu, NULL);
    pthread_cond_init(&p.progress, NULL);
    int started = 0;
    for (; started < n_threads; started++)
        if (pthread_create(&threads[started], NULL, check_worker, &p) != 0)
            break;
    if (started == 0)
        check_worker(&p); /* no threads to be had: do it here */
    for (int i = 0; i < n; i++) {
        pthread_mutex_lock(&p.mu);
        while (p.chunks_left[i] > 0 && !p.err.code)
            pthread_cond_wait(&p.progress, &p.mu);
        int failed = p.err.code != 0;
        pthread_mutex_unlock(&p.mu);
        if (failed)
            break;
        if (on_done)
            on_done(i, &results[i], ctx);
    }
    for (int t = 0; t < started; t++)
        pthread_join(threads[t], NULL);
    pthread_mutex_destroy(&p.mu);
    pthread_cond_destroy(&p.progress);
    free(p.jobs);
    free(p.chunks_left);
    if (p.err.code) {
        if (err)
            *err = p.err;
        return p.err.code;
    }
    return VT_OK;
}
