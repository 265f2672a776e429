/* The KV cache and attention over it (kernels.h). */
#include "kernels_impl.h"

/* ======================================================================
 * KV cache
 * ====================================================================== */

int vt_kv_alloc(vt_kv *kv, int32_t n_layer, int32_t n_ctx, int64_t kv_dim, vt_cache_dtype dtype,
                const char *file, vt_error *err)
{
    kv->dtype = dtype;
    kv->elem = dtype == VT_CACHE_F32 ? 4 : dtype == VT_CACHE_BF16 ? 2 : 1;
    kv->n_layer = n_layer;
    kv->n_ctx = n_ctx;
    kv->kv_dim = kv_dim;
    size_t count;
    if (__builtin_mul_overflow((size_t)n_layer, (size_t)n_ctx, &count) ||
        __builtin_mul_overflow(count, (size_t)kv_dim, &count))
        count = SIZE_MAX;
    kv->k = vt_alloc_aligned(count, kv->elem);
    kv->v = vt_alloc_aligned(count, kv->elem);
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

static size_t cache_index(const vt_kv *kv, int32_t l, int32_t pos)
{
    return ((size_t)l * (size_t)kv->n_ctx + (size_t)pos) * (size_t)kv->kv_dim;
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

void vt_kv_store(vt_kv *kv, int32_t layer, int32_t pos, const float *k, const float *v)
{
    const size_t at = cache_index(kv, layer, pos);
    cache_store(kv, kv->k, at, k, kv->kv_dim);
    cache_store(kv, kv->v, at, v, kv->kv_dim);
}

/* ======================================================================
 * Attention: one (token, head) pair is one unit of work; threads take
 * contiguous ranges of units.
 * ====================================================================== */

typedef struct att_job {
    vt_cpu *c;
    const vt_attention_args *a;
} att_job;

static void attention_worker(void *ctx, int ith, int nth)
{
    const att_job *job = ctx;
    const vt_cpu *c = job->c;
    const vt_attention_args *a = job->a;
    const vt_kv *kv = a->kv;
    const int64_t hd = a->head_dim;
    const int32_t group = a->n_head / a->n_head_kv;
    const float scale = 1.0f / sqrtf((float)hd);
    float *scratch = vt_cpu_scratch(c, ith);
    float *scores = scratch + vt_round_up(4 * (size_t)c->max_in, 16);
    float *kbuf = scores + vt_round_up((size_t)c->n_ctx, 16);
    float *vbuf = kbuf + 4 * vt_round_up((size_t)hd, 16);
    const int64_t ldk_buf = (int64_t)vt_round_up((size_t)hd, 16);
    float *acc = vbuf + ldk_buf; /* 64 rows of ldk_buf: the partial sums of V p */

    const int64_t units = a->n_tok * a->n_head;
    const int64_t u0 = units * ith / nth, u1 = units * (ith + 1) / nth;
    for (int64_t u = u0; u < u1; u++) {
        const int64_t t = u / a->n_head;
        const int32_t h = (int32_t)(u % a->n_head), kvh = h / group;
        const float *q = a->q + t * a->ldq + h * hd;
        const int32_t n_keys = a->pos0 + (int32_t)t + 1;
        const size_t head_off = (size_t)kvh * (size_t)hd;

        /* As llama.cpp's attention without flash attention computes one
         * token: scores = q.k by ggml_vec_dot_f32 (dot4: four keys, each as
         * dot), times scale; softmax over the cache row as
         * ggml_vec_soft_max_f32 (exp_sum), then one multiply by 1/sum. */
        int32_t j = 0;
        for (; j + 4 <= n_keys; j += 4) {
            const size_t at = cache_index(kv, a->layer, j) + head_off;
            const float *k;
            int64_t ldk;
            if (kv->dtype == VT_CACHE_F32) {
                k = (const float *)kv->k + at;
                ldk = kv->kv_dim;
            } else {
                for (int r = 0; r < 4; r++)
                    cache_load(kv, kv->k, at + (size_t)r * (size_t)kv->kv_dim, hd,
                               kbuf + r * ldk_buf);
                k = kbuf;
                ldk = ldk_buf;
            }
            c->k.dot4(k, ldk, q, hd, scores + j);
        }
        for (; j < n_keys; j++) {
            const size_t at = cache_index(kv, a->layer, j) + head_off;
            scores[j] = c->k.dot(cache_load(kv, kv->k, at, hd, kbuf), q, hd);
        }
        float max = -INFINITY;
        for (j = 0; j < n_keys; j++) {
            scores[j] *= scale;
            max = fmaxf(max, scores[j]);
        }
        const float inv = (float)(1.0 / c->k.exp_sum(scores, n_keys, max));

        /* out = V p: for each output, the ggml_vec_dot_f32 of its V column
         * and p over the cache row (llama.cpp's n_kv, a multiple of 64 here;
         * the masked positions add exact zeros). Accumulator row j mod 64
         * holds lane j mod 16 of partial sum (j mod 64) / 16, updated in
         * position order; then the same reduction as dot(). */
        float *out = a->out + t * a->ldo + h * hd;
        memset(acc, 0, 64 * (size_t)ldk_buf * sizeof *acc);
        for (j = 0; j < n_keys; j++) {
            const size_t at = cache_index(kv, a->layer, j) + head_off;
            c->k.fmadd(acc + (size_t)(j & 63) * (size_t)ldk_buf, cache_load(kv, kv->v, at, hd, vbuf),
                       scores[j] * inv, hd);
        }
        /* Per output d, the 16 partials (rows k, k + 16, k + 32, k + 48
         * paired as dot() pairs its accumulators) and tree16's order over
         * them; sixteen outputs at a time with d the inner index, so the
         * same additions run side by side in vector registers (ldk_buf is
         * a multiple of 16; columns past hd are zeros, never stored). */
        for (int64_t d0 = 0; d0 < hd; d0 += 16) {
            float l[16][16];
            for (int k = 0; k < 16; k++) {
                const float *r0 = acc + (size_t)k * (size_t)ldk_buf + (size_t)d0;
                const float *r1 = r0 + 16 * (size_t)ldk_buf, *r2 = r1 + 16 * (size_t)ldk_buf,
                            *r3 = r2 + 16 * (size_t)ldk_buf;
                for (int i = 0; i < 16; i++)
                    l[k][i] = (r0[i] + r2[i]) + (r1[i] + r3[i]);
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
}

void vt_attention(vt_cpu *c, const vt_attention_args *a)
{
    att_job job = { c, a };
    vt_pool_run(&c->pool, attention_worker, &job);
}
