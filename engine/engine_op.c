/* vt_engine_matmul: a forward pass's matrix product on its own (engine_op.h). */
#include "engine_op.h"
#include "kernels.h"

#include <string.h>

int vt_engine_matmul(int type, const void *w, int64_t rows, int64_t cols, const float *x,
                     int64_t n_tok, vt_matmul_mode mode, int n_threads, float *y, vt_error *err)
{
    const vt_codec *codec = vt_codec_by_type(type);
    if (!codec || (!codec->decode_f32 && type != VT_TYPE_F32))
        return vt_error_set(err, VT_EINPUT, "engine matmul: type %d: no decoder", type);
    size_t row_bytes = vt_codec_row_bytes(codec, cols);
    if (rows <= 0 || n_tok <= 0 || n_tok > INT32_MAX || row_bytes == 0)
        return vt_error_set(err, VT_EINPUT, "engine matmul %s: %lld x %lld, %lld tokens: expected "
                            "rows of whole blocks", codec->name, (long long)rows, (long long)cols,
                            (long long)n_tok);
    vt_runner_settings s;
    vt_runner_settings_default(&s);
    s.model_path = "(vt_engine_matmul)";
    s.matmul = mode;
    s.n_threads = n_threads;
    s.n_ctx = (int32_t)n_tok;
    s.n_batch = (int32_t)n_tok;
    vt_cpu c;
    memset(&c, 0, sizeof c);
    int rc = vt_cpu_configure(&c, &s, err);
    if (!rc)
        rc = vt_cpu_start(&c, cols, 0, 0, s.model_path, err);
    if (!rc) {
        vt_mat m = { .data = w, .codec = codec, .rows = rows, .cols = cols,
                     .row_bytes = row_bytes, .act = vt_act_type_of(type), .tensor_rows = rows, .plant_row = -1,
                     .plant_scale = 1.0f };
        /* as a model's loader: repacked where the kernel set wants it */
        rc = vt_cpu_pack(&c, &m, s.model_path, err);
        if (!rc)
            vt_matmul1(&c, &m, x, n_tok, y, rows);
    }
    vt_cpu_free(&c);
    return rc;
}

int vt_engine_attention(const float *q, const float *k, const float *v, int32_t n_keys, int64_t head_dim,
                        int32_t n_head, int n_threads, float *out, vt_error *err)
{
    if (n_keys <= 0 || head_dim <= 0 || head_dim > 4096 || n_head < 1 || n_head > 64)
        return vt_error_set(err, VT_EINPUT, "engine attention: %d keys of %lld, %d heads: expected at least "
                            "one key of 1 .. 4096 and 1 .. 64 heads", n_keys, (long long)head_dim, n_head);
    vt_runner_settings s;
    vt_runner_settings_default(&s);
    s.model_path = "(vt_engine_attention)";
    s.n_threads = n_threads;
    s.n_ctx = n_keys;
    s.n_batch = 1;
    vt_cpu c;
    memset(&c, 0, sizeof c);
    vt_kv kv;
    memset(&kv, 0, sizeof kv);
    int rc = vt_cpu_configure(&c, &s, err);
    if (!rc)
        rc = vt_cpu_start(&c, head_dim * n_head, head_dim, 0, s.model_path, err);
    if (!rc)
        rc = vt_kv_alloc(&kv, 1, n_keys, head_dim, head_dim, VT_CACHE_F32, s.model_path, err);
    if (!rc) {
        for (int32_t j = 0; j < n_keys; j++)
            vt_kv_store(&kv, 0, j, k + (size_t)j * (size_t)head_dim, v + (size_t)j * (size_t)head_dim);
        const vt_attention_args a = { .kv = &kv, .layer = 0, .pos0 = n_keys - 1, .n_tok = 1, .n_head = n_head,
                                      .n_head_kv = 1, .head_dim = head_dim, .q = q, .ldq = head_dim * n_head,
                                      .out = out, .ldo = head_dim * n_head };
        vt_attention(&c, &a);
    }
    vt_kv_free(&kv);
    vt_cpu_free(&c);
    return rc;
}

const char *vt_engine_isa(void) { return vt_kernels_pick().isa; }

float vt_engine_dot_f32(const float *a, const float *b, int64_t n) { return vt_kernels_pick().dot(a, b, n); }
float vt_engine_dot_bf16(const float *a, const float *b, int64_t n) { return vt_kernels_pick().dot_bf16(a, b, n); }
double vt_engine_softmax_exp(float *x, int64_t n, float max) { return vt_kernels_pick().exp_sum(x, n, max); }
void vt_engine_swiglu(float *g, const float *u, int64_t n) { vt_kernels_pick().swiglu(g, u, n); }
void vt_engine_silu(float *x, int64_t n) { vt_kernels_pick().silu(x, n); }

const char *vt_engine_dot_type(int weight_type)
{
    return vt_act_type_name(vt_act_type_of(weight_type));
}
