/* The KV cache and attention over it (kernels.h). */
#include "kernels_impl.h"

/* ======================================================================
 * KV cache
 * ====================================================================== */

int vt_kv_alloc(vt_kv *kv, int32_t n_layer, int32_t n_ctx, int64_t kv_dim, int64_t head_dim,
                vt_cache_dtype dtype, const char *file, vt_error *err)
{
    if (head_dim <= 0 || kv_dim % head_dim)
        return vt_error_set(err, VT_EINPUT, "%s: KV cache of %lld elements a position: expected a "
                            "multiple of head_dim %lld", file, (long long)kv_dim, (long long)head_dim);
    kv->dtype = dtype;
    kv->elem = vt_cache_elem_bytes(dtype);
    kv->n_layer = n_layer;
    kv->n_ctx = n_ctx;
    kv->kv_dim = kv_dim;
    kv->head_dim = head_dim;
    size_t count;
    if (__builtin_mul_overflow((size_t)n_layer, (size_t)n_ctx, &count) ||
        __builtin_mul_overflow(count, (size_t)kv_dim, &count))
        count = SIZE_MAX;
    /* In huge pages: attention reads each head's keys and values as runs of
     * 4 KiB pages otherwise, 40 of them a (token, KV head) at 160 keys
     * (b06-Q4_K after a 128-token prompt, 2 threads: a unit's key pass
     * 21.8-23.3 -> 18.6-20.6 thousand cycles). */
    size_t bytes = 0;
    kv->k = kv->v = NULL;
    if (!__builtin_mul_overflow(count, kv->elem, &bytes) && bytes > 0) {
        if ((kv->k = vt_alloc_huge(bytes)))
            memset(kv->k, 0, bytes);
        if ((kv->v = vt_alloc_huge(bytes)))
            memset(kv->v, 0, bytes);
    }
    if (!kv->k || !kv->v)
        return vt_error_set(err, VT_EINPUT,
                            "%s: out of memory for n_ctx %d (KV cache %s: %zu x 2 elements of %zu "
                            "bytes)", file, n_ctx, vt_cache_dtype_name(dtype), count, kv->elem);
    for (int c = 0; c < 256; c++)
        kv->fp8_table[c] = vt_fp8_e4m3_to_f32((uint8_t)c);
    return VT_OK;
}

void vt_kv_free(vt_kv *kv)
{
    free(kv->k);
    free(kv->v);
}

/* Head-major: one head's positions are contiguous, so attention reads each
 * head's keys and values in address order (position-major, a head's rows
 * lay kv_dim apart). */
size_t vt_kv_index(const vt_kv *kv, int32_t layer, int32_t kv_head, int32_t pos)
{
    const size_t heads = (size_t)(kv->kv_dim / kv->head_dim);
    return (((size_t)layer * heads + (size_t)kv_head) * (size_t)kv->n_ctx + (size_t)pos) * (size_t)kv->head_dim;
}

static void cache_store(const vt_kv *kv, void *cache, size_t at, const float *src, int64_t n)
{
    switch (kv->dtype) {
    case VT_CACHE_BF16: {
        uint16_t *d = (uint16_t *)cache + at;
        for (int64_t i = 0; i < n; i++)
            d[i] = vt_f32_to_bf16(src[i]);
        break;
    }
    case VT_CACHE_FP8_E4M3: {
        uint8_t *d = (uint8_t *)cache + at;
        for (int64_t i = 0; i < n; i++)
            d[i] = vt_fp8_e4m3_from_f32(src[i]);
        break;
    }
    default: memcpy((float *)cache + at, src, (size_t)n * sizeof *src); break;
    }
}

/* n cached elements from at, as F32: in place for an F32 cache, else into buf. */
static const float *cache_load(const vt_kv *kv, const void *cache, size_t at, int64_t n, float *buf)
{
    switch (kv->dtype) {
    case VT_CACHE_BF16: {
        const uint16_t *s = (const uint16_t *)cache + at;
        for (int64_t i = 0; i < n; i++)
            buf[i] = vt_bf16_to_f32(s[i]);
        return buf;
    }
    case VT_CACHE_FP8_E4M3: {
        const uint8_t *s = (const uint8_t *)cache + at;
        for (int64_t i = 0; i < n; i++)
            buf[i] = kv->fp8_table[s[i]];
        return buf;
    }
    default: return (const float *)cache + at;
    }
}

void vt_kv_will_store(const vt_kv *kv, int32_t layer, int32_t pos, int64_t n_tok)
{
    if (n_tok > 4)
        return; /* a batch's rows would only push out what its products read */
    const int64_t hd = kv->head_dim;
    const size_t bytes = (size_t)n_tok * (size_t)hd * kv->elem;
    for (int32_t h = 0; (int64_t)h * hd < kv->kv_dim; h++) {
        const size_t at = vt_kv_index(kv, layer, h, pos) * kv->elem;
        for (size_t o = 0; o < bytes; o += 64) {
            __builtin_prefetch((const char *)kv->k + at + o, 1, 3);
            __builtin_prefetch((const char *)kv->v + at + o, 1, 3);
        }
    }
}

void vt_kv_store(vt_kv *kv, int32_t layer, int32_t pos, const float *k, const float *v)
{
    const int64_t hd = kv->head_dim;
    for (int32_t h = 0; (int64_t)h * hd < kv->kv_dim; h++) {
        const size_t at = vt_kv_index(kv, layer, h, pos);
        cache_store(kv, kv->k, at, k + h * hd, hd);
        cache_store(kv, kv->v, at, v + h * hd, hd);
    }
}

/* ======================================================================
 * Attention: one (token, KV head) pair is one unit of work, and the query
 * heads sharing that KV head (up to VT_ATT_HEADS at a time) are computed
 * together, so each key and value row is read once for all of them. Each
 * thread takes the next unit no thread has taken until none is left:
 * in a causal batch later tokens see more keys (contiguous ranges left the
 * last thread most of the work), and on a shared machine one core can run
 * slower than the other for a while (dealt round-robin, the other waited 13
 * to 48 thousand cycles a decode step's layer for it). A unit's arithmetic
 * is the same whichever thread computes it.
 * ====================================================================== */

/* Keys and values are read once per token from memory (the weights streamed
 * since evict them), each head's as one run of n_keys rows: asked for this
 * many rows ahead, into L2 (vt bench, b06-Q4_K after a 128-token prompt:
 * the attention dispatch 235-253 -> 195-210 thousand cycles a layer).
 * Inlined: a function of prefetches alone has no effect gcc must keep, and
 * its calls were dropped. */
#define ATT_PREFETCH_ROWS 8

__attribute__((always_inline)) static inline void prefetch_rows(const void *cache, size_t elem, size_t at,
                                                                int64_t n, int32_t pos, int32_t rows,
                                                                int32_t n_keys)
{
    if (pos + rows > n_keys)
        return;
    const char *p = (const char *)cache + (at + (size_t)pos * (size_t)n) * elem;
    for (size_t o = 0; o < (size_t)rows * (size_t)n * elem; o += 64)
        __builtin_prefetch(p + o, 0, 2);
}

typedef struct att_job {
    vt_cpu *c;
    const vt_attention_args *a;
    atomic_llong next; /* the first unit no thread has taken */
} att_job;

/* Reads a head's values once, in address order, before the values kernel,
 * which visits them a 64-byte column at a time down all the rows: the
 * hardware follows a sweep (asked 16 lines ahead) and loses that stride,
 * so the kernel then finds them in L2. The values prefetched during the key
 * pass only partly arrive. Two halves side by side, as two streams, go
 * faster than one. b06-Q4_K decode after a 128-token prompt, 2 threads,
 * thousand cycles a unit: the values kernel 18-21 -> 5-6 after a sweep of
 * 8.4-8.6 (one stream) or 6.5-7.3 (two); the attention dispatch 171-187
 * -> 141-154 a layer. */
static void values_sweep(const void *v, size_t bytes)
{
    const volatile char *p = v;
    const size_t half = (bytes / 2) & ~(size_t)63;
    for (size_t o = 0; o < half; o += 64) {
        if (o + 16 * 64 < half) {
            __builtin_prefetch((const char *)v + o + 16 * 64, 0, 3);
            __builtin_prefetch((const char *)v + half + o + 16 * 64, 0, 3);
        }
        (void)p[o];
        (void)p[half + o];
    }
    for (size_t o = 2 * half; o < bytes; o += 64)
        (void)p[o];
}

/* out[d] for d < hd from the 64 accumulator rows of ldk floats, of which
 * the first rows_used were written and the rest stand for zeros: per
 * output, the 16 partials (rows k, k + 16, k + 32, k + 48 paired as dot()
 * pairs its accumulators) and tree16's order over them, sixteen outputs at
 * a time with d the inner index, so the same additions run side by side in
 * vector registers (ldk is a multiple of 16; columns past hd are zeros,
 * never stored). A row past rows_used reads as the +0 the whole block was
 * cleared to before, so the additions are the same, bit for bit. */
static void attention_reduce(const float *acc, int32_t rows_used, int64_t ldk, int64_t hd, float *out)
{
    static const float zeros16[16] = { 0 };
    for (int64_t d0 = 0; d0 < hd; d0 += 16) {
        float l[16][16];
        for (int k = 0; k < 16; k++) {
            const float *r[4];
            for (int i = 0; i < 4; i++)
                r[i] = k + 16 * i < rows_used ? acc + (size_t)(k + 16 * i) * (size_t)ldk + (size_t)d0 : zeros16;
            for (int i = 0; i < 16; i++)
                l[k][i] = (r[0][i] + r[2][i]) + (r[1][i] + r[3][i]);
        }
        for (int k = 0; k < 8; k++)
            for (int i = 0; i < 16; i++)
                l[k][i] += l[k + 8][i];
        for (int k = 0; k < 4; k++)
            for (int i = 0; i < 16; i++)
                l[k][i] += l[k + 4][i];
        for (int i = 0; i < 16; i++) {
            l[0][i] += l[2][i];
            l[1][i] += l[3][i];
        }
        const int64_t m = hd - d0 < 16 ? hd - d0 : 16;
        for (int64_t i = 0; i < m; i++)
            out[d0 + i] = l[0][i] + l[1][i];
    }
}

static void attention_worker(void *ctx, int ith, int nth)
{
    att_job *job = ctx;
    const vt_cpu *c = job->c;
    const vt_attention_args *a = job->a;
    const vt_kv *kv = a->kv;
    const int64_t hd = a->head_dim;
    const int32_t group = a->n_head / a->n_head_kv;
    const float scale = 1.0f / sqrtf((float)hd);
    const int64_t ldk = (int64_t)vt_round_up((size_t)hd, 16), lds = (int64_t)vt_round_up((size_t)c->n_ctx, 16);
    float *scratch = vt_cpu_scratch(c, ith);
    float *scores = scratch + vt_round_up(4 * (size_t)c->max_in, 16); /* VT_ATT_HEADS rows of lds */
    float *kbuf = scores + VT_ATT_HEADS * lds;                        /* 4 rows of ldk */
    float *vbuf = kbuf + 4 * ldk;
    float *acc = vbuf + ldk; /* 64 rows of ldk: one head's partial sums of V p */

    const int64_t units = a->n_tok * a->n_head_kv;
    (void)nth; /* units are taken from job->next, not dealt by index */
    for (int64_t u = atomic_fetch_add(&job->next, 1); u < units; u = atomic_fetch_add(&job->next, 1)) {
        const int64_t t = u / a->n_head_kv;
        const int32_t kvh = (int32_t)(u % a->n_head_kv);
        const int32_t n_keys = a->pos0 + (int32_t)t + 1;
        const int32_t rows_used = n_keys < 64 ? n_keys : 64;
        const size_t head_at = vt_kv_index(kv, a->layer, kvh, 0);
        for (int32_t h0 = kvh * group; h0 < (kvh + 1) * group; h0 += VT_ATT_HEADS) {
            const int32_t nh = (kvh + 1) * group - h0 < VT_ATT_HEADS ? (kvh + 1) * group - h0 : VT_ATT_HEADS;
            const float *q = a->q + t * a->ldq + h0 * hd; /* head h0 + g at q + g hd */

            /* As llama.cpp's attention without flash attention computes one
             * token: scores = q.k by ggml_vec_dot_f32 (dot4: four keys, each
             * as dot), times scale; softmax over the cache row as
             * ggml_vec_soft_max_f32 (exp_sum), then one multiply by 1/sum. */
            int32_t j = 0;
            for (; j + 4 <= n_keys; j += 4) {
                const size_t at = head_at + (size_t)j * (size_t)hd;
                prefetch_rows(kv->k, kv->elem, head_at, hd, j + ATT_PREFETCH_ROWS, 4, n_keys);
                prefetch_rows(kv->v, kv->elem, head_at, hd, j + ATT_PREFETCH_ROWS, 4, n_keys);
                const float *k;
                int64_t ldkr;
                if (kv->dtype == VT_CACHE_F32) {
                    k = (const float *)kv->k + at;
                    ldkr = hd;
                } else {
                    for (int r = 0; r < 4; r++)
                        cache_load(kv, kv->k, at + (size_t)r * (size_t)hd, hd, kbuf + r * ldk);
                    k = kbuf;
                    ldkr = ldk;
                }
                for (int32_t g = 0; g < nh; g++)
                    c->k.dot4(k, ldkr, q + g * hd, hd, scores + g * lds + j);
            }
            for (; j < n_keys; j++) {
                const float *k = cache_load(kv, kv->k, head_at + (size_t)j * (size_t)hd, hd, kbuf);
                for (int32_t g = 0; g < nh; g++)
                    scores[g * lds + j] = c->k.dot(k, q + g * hd, hd);
            }
            float inv[VT_ATT_HEADS];
            for (int32_t g = 0; g < nh; g++) {
                float *sg = scores + g * lds, max = -INFINITY;
                for (j = 0; j < n_keys; j++) {
                    sg[j] *= scale;
                    max = fmaxf(max, sg[j]);
                }
                inv[g] = (float)(1.0 / c->k.exp_sum(sg, n_keys, max));
            }

            /* out = V p: for each output, the ggml_vec_dot_f32 of its V
             * column and p over the cache row (llama.cpp's n_kv, a multiple
             * of 64 here; the masked positions add exact zeros).
             * Accumulator row j mod 64 holds lane j mod 16 of partial sum
             * (j mod 64) / 16, updated in position order. */
            for (int32_t g = 0; g < nh; g++) {
                float *pg = scores + g * lds;
                for (j = 0; j < n_keys; j++)
                    pg[j] *= inv[g];
            }
            float *out0 = a->out + t * a->ldo + h0 * hd;
            if (c->k.attend_values && kv->dtype == VT_CACHE_F32) {
                values_sweep((const float *)kv->v + head_at, (size_t)n_keys * (size_t)hd * sizeof(float));
                c->k.attend_values((const float *)kv->v + head_at, hd, scores, lds, nh, n_keys, hd, out0, hd);
                continue;
            }
            for (int32_t g = 0; g < nh; g++) {
                const float *pg = scores + g * lds;
                float *out = out0 + g * hd;
                /* one head at a time: its 64 rows stay in L1, the values
                 * come again from L2 */
                memset(acc, 0, (size_t)rows_used * (size_t)ldk * sizeof *acc);
                for (j = 0; j < n_keys; j++) {
                    const float *v = cache_load(kv, kv->v, head_at + (size_t)j * (size_t)hd, hd, vbuf);
                    c->k.fmadd(acc + (size_t)(j & 63) * (size_t)ldk, v, pg[j], hd);
                }
                attention_reduce(acc, rows_used, ldk, hd, out);
            }
        }
    }
}

void vt_attention(vt_cpu *c, const vt_attention_args *a)
{
    att_job job = { .c = c, .a = a };
    atomic_init(&job.next, 0);
    vt_pool_run(&c->pool, attention_worker, &job);
}
