/* Matrix products and the compute context (kernels.h). */
#include "kernels_impl.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* ======================================================================
 * Matrix products: y[t][o] = dot(W row o, x[t]) for every token t of the
 * batch. Threads take contiguous ranges of output rows in turn (take_chunk);
 * a thread decodes four rows at a time into its scratch (F32 weights are
 * read in place) and uses them for every token, so a batch decodes each
 * weight row once. Under --matmul q8 a weight with an integer kernel meets
 * the activation in blocks instead, and one the kernel set has a matrix
 * kernel for (vt_int_gemm_of: on AVX-512 VNNI Q8_0, and Q4_0 and Q4_K
 * repacked at load) the activation in the layout that kernel reads, the
 * rows and tokens tiled inside the kernel; BF16 has one too (k.bf16_rows).
 * ====================================================================== */

typedef struct mm_task {
    const vt_mat *w;
    const float *x;    /* n_tok x w->cols, or NULL when xb is used */
    const uint8_t *xb; /* the activation in blocks for an integer kernel, n_tok rows */
    const uint8_t *xw; /* or in the wide layout for a matrix kernel (vt_int_gemm_of) */
    float *y;       /* n_tok rows of stride ldy */
    int64_t ldy;
} mm_task;

typedef struct mm_job {
    vt_cpu *c;
    mm_task task[3];
    int n_task;
    int64_t n_tok;
    /* The tasks' rows as one sequence of granules (task 0's, then task
     * 1's, ...): granule[i] rows each, groups[i] of them; take_chunk. */
    int granule[3];
    int64_t groups[3], total, min_chunk;
    atomic_llong next; /* the first granule no thread has taken */
} mm_job;

static void matmul_rows(vt_cpu *c, const mm_task *t, int64_t n_tok, int64_t r0, int64_t r1,
                        float *wbuf)
{
    const vt_mat *w = t->w;
    const int64_t n = w->cols;
    int wide = 0;
    const vt_int_gemm_fn gemm = t->xw || t->xb ? vt_int_gemm_of(c, w, NULL, &wide) : NULL;
    if (gemm) {
        gemm(w, r0, r1, wide ? t->xw : t->xb, n_tok, t->y, t->ldy);
        return;
    }
    if (t->xb) {
        vt_act_type act = VT_ACT_F32;
        const vt_int_dot_fn *f = vt_int_dot_of(c, w, &act);
        const vt_int_dot_fn dot = f[c->k.fma ? 1 : 0];
        const int64_t nb = n / w->codec->block_elems;
        const size_t xrow = vt_act_block_row_bytes(act, n);
        for (int64_t o = r0; o < r1; o++)
            for (int64_t tok = 0; tok < n_tok; tok++)
                t->y[tok * t->ldy + o] = dot(w->data + (size_t)o * w->row_bytes, t->xb + (size_t)tok * xrow, nb);
        return;
    }
    const int in_place = w->codec->type == VT_TYPE_F32;
    const int64_t nblocks = n / w->codec->block_elems;
    int64_t o = r0;
    if (w->codec->type == VT_TYPE_BF16 && c->k.bf16_rows) {
        c->k.bf16_rows(w, r0, r1, t->x, n_tok, t->y, t->ldy);
        return;
    }
    if (w->codec->type == VT_TYPE_BF16) {
        /* ggml sums a BF16 product its own way (dot_bf16), one row at a time. */
        for (; o < r1; o++) {
            w->codec->decode_f32(w->data + (size_t)o * w->row_bytes, wbuf, nblocks);
            for (int64_t tok = 0; tok < n_tok; tok++)
                t->y[tok * t->ldy + o] = c->k.dot_bf16(wbuf, t->x + tok * n, n);
        }
        return;
    }
    for (; o + 4 <= r1; o += 4) {
        const float *rows;
        if (in_place) {
            rows = (const float *)(w->data + (size_t)o * w->row_bytes);
        } else {
            for (int r = 0; r < 4; r++)
                w->codec->decode_f32(w->data + (size_t)(o + r) * w->row_bytes, wbuf + r * n, nblocks);
            rows = wbuf;
        }
        int64_t tok = 0;
        for (; tok + 4 <= n_tok; tok += 4)
            c->k.tile(rows, n, t->x + tok * n, n, n, t->y + tok * t->ldy + o, t->ldy);
        for (; tok < n_tok; tok++)
            c->k.dot4(rows, n, t->x + tok * n, n, t->y + tok * t->ldy + o);
    }
    for (; o < r1; o++) {
        const float *row;
        if (in_place) {
            row = (const float *)(w->data + (size_t)o * w->row_bytes);
        } else {
            w->codec->decode_f32(w->data + (size_t)o * w->row_bytes, wbuf, nblocks);
            row = wbuf;
        }
        for (int64_t tok = 0; tok < n_tok; tok++)
            t->y[tok * t->ldy + o] = c->k.dot(row, t->x + tok * n, n);
    }
}

/* Rows are dealt in chunks of granules (four rows, so every thread can use
 * dot4, or the matrix kernel's granule), largest first: each chunk a
 * 2 nth-th of what is left, at least min_chunk, taken in turn from a
 * shared counter. On a shared machine one core can run slower than the
 * other for a while; with a fixed split the other then waited for it (b06
 * decode, 2 threads: 4 to 35 thousand cycles a dispatch). A row's
 * arithmetic is the same whichever thread computes it. */
static int take_chunk(mm_job *job, int nth, int64_t *from, int64_t *to)
{
    long long at = atomic_load(&job->next), end;
    do {
        if (at >= job->total)
            return 0;
        int64_t n = (job->total - at) / (2 * nth);
        if (n < job->min_chunk)
            n = job->min_chunk;
        end = at + n < job->total ? at + n : job->total;
    } while (!atomic_compare_exchange_weak(&job->next, &at, end));
    *from = at;
    *to = end;
    return 1;
}

static void matmul_worker(void *ctx, int ith, int nth)
{
    mm_job *job = ctx;
    float *wbuf = vt_cpu_scratch(job->c, ith);
    int64_t from, to;
    while (take_chunk(job, nth, &from, &to)) {
        /* the chunk's part of each task it overlaps */
        int64_t base = 0;
        for (int i = 0; i < job->n_task; i++) {
            const int64_t g0 = from > base ? from - base : 0;
            const int64_t g1 = to - base < job->groups[i] ? to - base : job->groups[i];
            if (g0 < g1) {
                const mm_task *t = &job->task[i];
                const int64_t r1 = g1 * job->granule[i] < t->w->rows ? g1 * job->granule[i] : t->w->rows;
                matmul_rows(job->c, t, job->n_tok, g0 * job->granule[i], r1, wbuf);
            }
            base += job->groups[i];
        }
    }
}

/* The activation a weight sees: x itself (EXACT mode, F32 dot type), x
 * rounded through the weight's dot type, or x in blocks for an integer
 * kernel, in slot i (reused if an earlier task of the same job already made
 * the same). */
static void activation_for(vt_cpu *c, mm_job *job, int i, const float *x, int64_t n_tok)
{
    mm_task *t = &job->task[i];
    const vt_mat *w = t->w;
    if (c->matmul == VT_MATMUL_EXACT || w->act == VT_ACT_F32) {
        t->x = x;
        return;
    }
    int wide_act = 0;
    const int wide = vt_int_gemm_of(c, w, NULL, &wide_act) != NULL && wide_act;
    const int packed = !wide && vt_int_dot_of(c, w, NULL) != NULL;
    for (int j = 0; j < i; j++) {
        const mm_task *u = &job->task[j];
        if (u->w->act == w->act && (u->xw != NULL) == wide && (u->xb != NULL) == packed) {
            t->x = u->x;
            t->xb = u->xb;
            t->xw = u->xw;
            return;
        }
    }
    if (wide) {
        vt_act_quantize_wide(x, n_tok, w->cols, (uint8_t *)c->xq[i]);
        t->xw = (const uint8_t *)c->xq[i];
        return;
    }
    if (packed) {
        uint8_t *dst = (uint8_t *)c->xq[i];
        const size_t xrow = vt_act_block_row_bytes(w->act, w->cols);
        for (int64_t tok = 0; tok < n_tok; tok++) {
#ifdef VT_X86
            if (w->act == VT_ACT_Q8_K && c->k.vnni) {
                vt_act_quantize_q8_k_avx512(x + tok * w->cols, dst + (size_t)tok * xrow, w->cols);
                continue;
            }
#endif
            vt_act_quantize_row(w->act, x + tok * w->cols, dst + (size_t)tok * xrow, w->cols);
        }
        t->xb = dst;
        return;
    }
    float *dst = c->xq[i];
    for (int64_t tok = 0; tok < n_tok; tok++)
        vt_act_round_row(w->act, x + tok * w->cols, dst + tok * w->cols, w->cols);
    t->x = dst;
}

/* Up to three products sharing one input (Q/K/V, gate/up) in one dispatch. */
void vt_matmul(vt_cpu *c, const float *x, int64_t n_tok, int n, const vt_mat *const *w,
               float *const *y, const int64_t *ldy)
{
    mm_job job = { .c = c, .n_task = n, .n_tok = n_tok };
    for (int i = 0; i < n; i++) {
        job.task[i] = (mm_task){ .w = w[i], .y = y[i], .ldy = ldy[i] };
        activation_for(c, &job, i, x, n_tok);
        int g = 4;
        if (job.task[i].xw || job.task[i].xb)
            vt_int_gemm_of(c, w[i], &g, NULL);
        job.granule[i] = g;
        job.groups[i] = (w[i]->rows + g - 1) / g;
        job.total += job.groups[i];
    }
    const int nth = c->pool.n > 1 ? c->pool.n : 1;
    job.min_chunk = job.total / (16 * nth) > 1 ? job.total / (16 * nth) : 1;
    atomic_init(&job.next, 0);
    vt_pool_run(&c->pool, matmul_worker, &job);
    for (int i = 0; i < n; i++)
        if (w[i]->plant_row >= 0)
            for (int64_t t = 0; t < n_tok; t++)
                y[i][t * ldy[i] + w[i]->plant_row] *= w[i]->plant_scale;
}

void vt_matmul1(vt_cpu *c, const vt_mat *w, const float *x, int64_t n_tok, float *y, int64_t ldy)
{
    const vt_mat *ws[1] = { w };
    float *ys[1] = { y };
    vt_matmul(c, x, n_tok, 1, ws, ys, &ldy);
}

/* ======================================================================
 * The compute context: settings, buffers, threads
 * ====================================================================== */

size_t vt_round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

void *vt_alloc_aligned(size_t count, size_t elem)
{
    size_t bytes;
    if (__builtin_mul_overflow(count, elem, &bytes) || bytes > SIZE_MAX - 64)
        return NULL;
    bytes = vt_round_up(bytes ? bytes : 1, 64);
    void *p = aligned_alloc(64, bytes);
    if (p)
        memset(p, 0, bytes);
    return p;
}

int vt_cpu_configure(vt_cpu *c, const vt_runner_settings *s, vt_error *err)
{
    if (!s || !s->model_path)
        return vt_error_set(err, VT_EINPUT, "engine: no model path");
    if (s->n_ctx <= 0)
        return vt_error_set(err, VT_EINPUT, "engine: n_ctx %d: expected > 0", (int)s->n_ctx);
    if (s->matmul != VT_MATMUL_EXACT && s->matmul != VT_MATMUL_Q8)
        return vt_error_set(err, VT_EINPUT, "engine: unknown matmul mode %d", (int)s->matmul);
    if ((int)s->cache_dtype < VT_CACHE_AUTO || (int)s->cache_dtype > VT_CACHE_FP8_E4M3)
        return vt_error_set(err, VT_EINPUT, "engine: unknown cache dtype %d", (int)s->cache_dtype);
    if (s->mode != VT_MODE_PRODUCTION && s->mode != VT_MODE_EAGER)
        return vt_error_set(err, VT_EINPUT, "engine: unknown execution mode %d", (int)s->mode);
    c->eager = s->mode == VT_MODE_EAGER;
    c->matmul = s->matmul;
    c->cache_dtype = s->cache_dtype == VT_CACHE_AUTO ? VT_CACHE_F32 : s->cache_dtype;
    c->n_ctx = s->n_ctx;
    int32_t nb = s->n_batch > 0 ? s->n_batch : 512;
    c->n_batch = c->eager ? 1 : (nb < s->n_ctx ? nb : s->n_ctx);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int32_t nt = s->n_threads > 0 ? s->n_threads : (int32_t)(cores > 0 ? cores : 1);
    c->n_threads = c->eager ? 1 : (nt < VT_ENGINE_MAX_THREADS ? nt : VT_ENGINE_MAX_THREADS);
    c->k = vt_kernels_pick();
    return vt_plant_from_env(&c->plant, err);
}

vt_gguf *vt_cpu_open_model(vt_cpu *c, const vt_runner_settings *s, vt_error *err)
{
    if (vt_cpu_configure(c, s, err))
        return NULL;
    vt_gguf *g = vt_gguf_open(s->model_path, err);
    /* A planted error on a tensor the model lacks would plant nothing while
     * the detail says it did. */
    if (g && c->plant.tensor[0] && !vt_gguf_find_tensor(g, c->plant.tensor)) {
        vt_error_set(err, VT_EINPUT, "VT_ENGINE_PLANT: %s: no tensor %s", s->model_path, c->plant.tensor);
        vt_gguf_free(g);
        return NULL;
    }
    return g;
}

int vt_cpu_start(vt_cpu *c, int64_t max_in, int64_t head_dim, size_t extra, const char *file,
                 vt_error *err)
{
    const size_t B = (size_t)c->n_batch, hd = (size_t)head_dim;
    c->max_in = max_in;
    int ok = 1;
    for (int i = 0; i < 3; i++) {
        /* n_batch rows of floats, or the wide layout if larger (one token:
         * a pair's worth) */
        size_t n;
        if (__builtin_mul_overflow(B, (size_t)max_in, &n) || n > SIZE_MAX / 8) {
            c->xq[i] = NULL;
        } else {
            const size_t wide = (vt_act_wide_bytes((int64_t)B, max_in) + 3) / 4;
            c->xq[i] = vt_alloc_aligned(n > wide ? n : wide, 4);
        }
        ok = ok && c->xq[i];
    }
    /* Per-thread slices, each a multiple of 16 floats (64 bytes) so threads
     * never share a cache line; attention's part (kernels_kv.c): VT_ATT_HEADS
     * rows of scores, 4 key rows, a value row and 64 rows of partial sums. */
    c->scratch_extra_at = vt_round_up(4 * (size_t)max_in, 16) +
                          (hd ? VT_ATT_HEADS * vt_round_up((size_t)c->n_ctx, 16) + 69 * vt_round_up(hd, 16) : 0);
    c->scratch_stride = c->scratch_extra_at + vt_round_up(extra, 16);
    c->scratch = vt_alloc_aligned((size_t)c->n_threads * c->scratch_stride, 4);
    if (!ok || !c->scratch)
        return vt_error_set(err, VT_EINPUT, "%s: out of memory for n_batch %d, %d threads", file,
                            c->n_batch, c->n_threads);
    return vt_pool_start(&c->pool, c->n_threads, err);
}

void vt_cpu_free(vt_cpu *c)
{
    vt_pool *p = &c->pool;
    if (p->initialized) {
        vt_pool_stop(p, p->started);
        pthread_mutex_destroy(&p->mu);
        pthread_cond_destroy(&p->start);
        pthread_cond_destroy(&p->done);
    }
    free(p->threads);
    free(p->args);
    for (int i = 0; i < 3; i++)
        free(c->xq[i]);
    free(c->scratch);
    for (size_t i = 0; i < c->n_packs; i++)
        free(c->packs[i]);
    free(c->packs);
}

/* Memory a decode step streams through (the weights, the KV cache): on
 * 2 MiB boundaries, transparent huge pages asked for (one TLB entry per
 * 2 MiB instead of 512), a whole number of huge pages. */
void *vt_alloc_huge(size_t n)
{
    const size_t huge = (size_t)2 << 20;
    if (n > SIZE_MAX - huge)
        return NULL;
    const size_t bytes = (n + huge - 1) / huge * huge;
    uint8_t *p = aligned_alloc(huge, bytes);
#ifdef MADV_HUGEPAGE
    if (p)
        (void)madvise(p, bytes, MADV_HUGEPAGE); /* advice: refused is fine */
#endif
    return p;
}

int vt_cpu_pack(vt_cpu *c, vt_mat *m, const char *file, vt_error *err)
{
    const int pack = vt_int_pack_wanted(c, m);
    /* BF16 rows are read in place, from the file's mapping in 4 KiB pages;
     * in production they are copied once into huge pages (the same bytes;
     * vt bench on b06-BF16, 2 threads: the engine's decode median 25.9 and
     * 25.5 tok/s before, 38.4 and 24.2 after, on a machine whose read
     * bandwidth swung from 31 to 52 GB/s; the ratio to llama.cpp 1.07 and
     * 0.89 before, 1.28 and 1.09 after). */
    const int place = !pack && !c->eager && m->codec->type == VT_TYPE_BF16;
    if (!pack && !place)
        return VT_OK;
    uint8_t **grown = realloc(c->packs, (c->n_packs + 1) * sizeof *grown);
    if (!grown)
        return vt_error_set(err, VT_EINPUT, "%s: out of memory for the weights' list", file);
    c->packs = grown;
    const size_t n = vt_int_packed_bytes(m, m->rows);
    uint8_t *p = vt_alloc_huge(n);
    if (!p)
        return vt_error_set(err, VT_EINPUT, "%s: out of memory for %zu bytes of weights (repacked, or copied into huge pages)", file, n);
    c->packs[c->n_packs++] = p;
    if (place) {
        memcpy(p, m->data, n);
        m->data = p;
        return VT_OK;
    }
    vt_int_pack(m, p);
    m->packed = p;
    return VT_OK;
}

void vt_cpu_resolved(const vt_cpu *c, vt_runner_settings *out)
{
    out->mode = c->eager ? VT_MODE_EAGER : VT_MODE_PRODUCTION;
    out->matmul = c->matmul;
    out->cache_dtype = c->cache_dtype; /* auto already resolved to F32 */
    out->n_threads = c->n_threads;
    out->n_ctx = c->n_ctx;
    out->n_batch = c->n_batch;
}

void vt_cpu_describe(vt_cpu *c)
{
    int n = snprintf(c->detail, sizeof c->detail, "isa=%s threads=%d mode=%s matmul=%s cache=%s batch=%d",
                     c->k.isa, c->n_threads, c->eager ? "eager" : "production",
                     vt_matmul_mode_name(c->matmul), vt_cache_dtype_name(c->cache_dtype), c->n_batch);
    if (c->plant.tensor[0] && n > 0 && (size_t)n < sizeof c->detail)
        snprintf(c->detail + n, sizeof c->detail - (size_t)n, " plant=%s:%lld:%.9g", c->plant.tensor,
                 (long long)c->plant.row, (double)c->plant.scale);
}

float *vt_cpu_scratch(const vt_cpu *c, int ith) { return c->scratch + (size_t)ith * c->scratch_stride; }
float *vt_cpu_extra(const vt_cpu *c, int ith) { return vt_cpu_scratch(c, ith) + c->scratch_extra_at; }

vt_mat vt_mat_rows(const vt_mat *m, int64_t r0, int64_t n)
{
    vt_mat out = *m;
    out.data = m->data + (size_t)r0 * m->row_bytes;
    out.rows = n;
    out.plant_row = m->plant_row >= r0 && m->plant_row < r0 + n ? m->plant_row - r0 : -1;
    /* a packed view only of whole groups of the packed layout's 16 rows */
    out.packed = m->packed && r0 % 16 == 0 && n % 16 == 0
                     ? m->packed + vt_int_packed_bytes(m, r0)
                     : NULL;
    return out;
}

int vt_plant_from_env(vt_plant *p, vt_error *err)
{
    memset(p, 0, sizeof *p);
    const char *v = getenv("VT_ENGINE_PLANT");
    if (!v || !*v)
        return VT_OK;
    const char *c1 = strchr(v, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
    char *end = NULL;
    long long row = -1;
    float scale = 0.0f;
    if (c1 && c2 && c1 > v && (size_t)(c1 - v) < sizeof p->tensor && c1[1] >= '0' && c1[1] <= '9') {
        row = strtoll(c1 + 1, &end, 10);
        if (end != c2)
            row = -1;
        if (row >= 0 && c2[1] && c2[1] != ' ') {
            scale = strtof(c2 + 1, &end);
            if (*end)
                row = -1;
        }
    }
    if (row < 0 || !isfinite(scale) || scale == 1.0f || (c2 && !c2[1]))
        return vt_error_set(err, VT_EINPUT, "VT_ENGINE_PLANT '%s': expected TENSOR:ROW:SCALE (a tensor "
                            "name, a row >= 0 and a finite scale other than 1)", v);
    memcpy(p->tensor, v, (size_t)(c1 - v));
    p->row = row;
    p->scale = scale;
    return VT_OK;
}
