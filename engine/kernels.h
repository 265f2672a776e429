/* The CPU machinery the model files share (internal to engine/): qwen3.c and
 * qwen35.c are each one forward pass written on top of it.
 *
 *   dot kernels      one summation order on every ISA (16 partial sums, no FMA);
 *                    integer block products in ggml's own order, and matrix
 *                    kernels (AVX-512 VNNI) that tile them, the values unchanged
 *   activation rounding   --matmul q8: the activation through the weight
 *                    codec's vec_dot_type, as llama.cpp's CPU backend
 *   thread pool      work taken in pieces from a shared counter; which thread
 *                    computes an element never changes its value
 *   vt_cpu           settings as applied, kernels, pool, per-thread scratch;
 *                    matrix products with weights kept in their codec
 *   loading          hyper-parameter keys and checked tensors of a GGUF
 *   element-wise     RMSNorm, RoPE angles (NeoX and multi-section), SiLU
 *   vt_kv            the KV cache in f32 / bf16 / fp8_e4m3 and causal GQA
 *                    attention over it
 *   evaluation       token checks and the batch loop of an eval call
 *
 * Everything here is deterministic in the sense of qwen3.h: each output
 * element is one fixed function of its inputs, whatever the thread count,
 * batch size or instruction set. */
#ifndef VT_KERNELS_H
#define VT_KERNELS_H

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "../common/vt_error.h"
#include "codec.h"
#include "gguf_file.h"
#include "runner.h"

#define VT_ENGINE_MAX_THREADS 256

/* ---------- dot kernels ---------- */

struct vt_mat; /* below */

typedef float (*vt_dot_fn)(const float *a, const float *b, int64_t n);
/* Four rows of w (stride ldw) against x; each result equals vt_dot_fn's. */
typedef void (*vt_dot4_fn)(const float *w, int64_t ldw, const float *x, int64_t n, float *out);
/* y[i] = y[i] + a * x[i]: element-wise, so the same on every ISA. */
typedef void (*vt_axpy_fn)(float *restrict y, float a, const float *restrict x, int64_t n);
/* A 4 x 4 tile: y[t * ldy + r] = dot(w row r, x row t), r, t < 4. */
typedef void (*vt_tile_fn)(const float *w, int64_t ldw, const float *x, int64_t ldx, int64_t n,
                           float *y, int64_t ldy);

typedef struct vt_kernels {
    const char *isa;
    vt_dot_fn dot;
    vt_dot4_fn dot4;
    vt_tile_fn tile;
    vt_dot_fn dot_bf16; /* BF16 weights: ggml_vec_dot_bf16's order */
    vt_axpy_fn axpy;
    /* acc[i] = fma(v[i], p, acc[i]): element-wise, the same on every ISA. */
    void (*fmadd)(float *restrict acc, const float *restrict v, float p, int64_t n);
    /* Softmax's exponentials after the maximum, and their sum, as ggml. */
    double (*exp_sum)(float *x, int64_t n, float max);
    /* g = silu(g) * u over one row, as ggml_vec_swiglu_f32. */
    void (*swiglu)(float *g, const float *u, int64_t n);
    /* x = silu(x) over one row, as ggml_vec_silu_f32. */
    void (*silu)(float *x, int64_t n);
    /* NeoX RoPE over one head of d: pair (i, i + d/2) by the angle whose
     * cosine and sine are cs[2i], cs[2i+1] (vt_rope_angles), as ggml. */
    void (*rope_neox)(float *x, const float *cs, int64_t d);
    /* For each of nh heads g (probabilities p + g ldp, output out + g ldo):
     * out[d] = the sum over keys j < n of v[j * ldv + d] * p[j] in
     * attention's order (kernels_kv.c: partial sum j mod 64, then the
     * tree), d < hd. NULL: kernels_kv.c's row loop. */
    void (*attend_values)(const float *v, int64_t ldv, const float *p, int64_t ldp, int32_t nh, int32_t n,
                          int64_t hd, float *out, int64_t ldo);
    int fma; /* integer block kernels may use the FMA instruction (same values) */
    int vnni; /* and the AVX-512 VNNI matrix kernels (kernels_intdot.c; same values) */
    /* BF16 weights, rows [r0, r1) against n_tok tokens, each output
     * dot_bf16's value; NULL: row by row through dot_bf16. */
    void (*bf16_rows)(const struct vt_mat *w, int64_t r0, int64_t r1, const float *x, int64_t n_tok, float *y,
                      int64_t ldy);
} vt_kernels;

/* The widest kernels the CPU runs, or the ones $VT_ENGINE_ISA names ("c",
 * "sse2", "avx2", "avx512f"; honoured only if the CPU has it). */
vt_kernels vt_kernels_pick(void);

/* ---------- activation rounding (VT_MATMUL_Q8) ---------- */

vt_act_type vt_act_type_of(int weight_type);
void vt_act_round_row(vt_act_type t, const float *x, float *y, int64_t n);

/* ---------- thread pool ---------- */

typedef void (*vt_task_fn)(void *ctx, int ith, int nth);

typedef struct vt_pool_worker {
    struct vt_pool *p;
    int ith;
} vt_pool_worker;

typedef struct vt_pool {
    int n;
    pthread_t *threads;
    vt_pool_worker *args;
    int started;
    int initialized;
    pthread_mutex_t mu;
    pthread_cond_t start, done;
    atomic_uint_fast64_t generation; /* bumped (under mu) once per dispatch */
    atomic_int pending;              /* workers still running the dispatch */
    atomic_int quit;
    vt_task_fn fn;
    void *ctx;
} vt_pool;

/* ---------- weights ---------- */

/* A weight matrix in its codec: rows x cols, row-major (ggml ne[0] = cols). */
typedef struct vt_mat {
    const uint8_t *data;
    const vt_codec *codec;
    int64_t rows, cols;
    size_t row_bytes;
    vt_act_type act; /* vec_dot_type, for Q8 matmul mode */
    int64_t tensor_rows; /* rows of the whole tensor (vt_mat_rows keeps it): ggml
                            repacks some types only when it is a multiple of 8 */
    /* The rows repacked for a matrix kernel (vt_cpu_pack; kernels_intdot.c
     * says the layout), or NULL: data is read as stored. */
    const uint8_t *packed;
    /* A planted error ($VT_ENGINE_PLANT): the products of row plant_row come
     * out scaled by plant_scale, as if that weight row were; -1: none. */
    int64_t plant_row;
    float plant_scale;
} vt_mat;

/* $VT_ENGINE_PLANT = TENSOR:ROW:SCALE plants an engine error on purpose: the
 * matrix TENSOR acts as if its row ROW were scaled by SCALE. For tests of
 * verdicts (a real engine error must fail beyond the oracle's noise); the
 * engine's detail (runtime.runner.detail) records it. */
typedef struct vt_plant {
    char tensor[96];
    int64_t row;
    float scale;
} vt_plant;

/* 0 and p->tensor[0] == 0 when unset; VT_EINPUT when malformed. */
int vt_plant_from_env(vt_plant *p, vt_error *err);

/* Rows [r0, r0 + n) of m as a matrix of their own (a fused projection's parts). */
vt_mat vt_mat_rows(const vt_mat *m, int64_t r0, int64_t n);

/* ---------- the compute context ---------- */

typedef struct vt_cpu {
    /* settings as applied */
    int eager;
    vt_matmul_mode matmul;
    vt_cache_dtype cache_dtype; /* auto resolved to f32 */
    int32_t n_ctx, n_batch, n_threads;

    vt_kernels k;
    vt_pool pool;

    /* activations rounded for Q8 mode: three slots of n_batch x max_in */
    float *xq[3];
    int64_t max_in;

    /* the repacked copies vt_cpu_pack made, freed with the context */
    uint8_t **packs;
    size_t n_packs;

    /* per thread: 4 weight rows (4 x max_in), attention scores (n_ctx),
     * 4 K rows, a V row and the 64 partial-sum rows of V p (head_dim
     * each), then extra floats the model
     * asked for; each slice a multiple of 16 floats (one cache line) */
    float *scratch;
    size_t scratch_stride, scratch_extra_at;

    vt_plant plant; /* tensor "" when none */

    char detail[320];
} vt_cpu;

/* Check and apply the settings (mode, matmul, cache dtype, threads, n_ctx,
 * n_batch) to c; pick the kernels. Nothing is allocated. */
int vt_cpu_configure(vt_cpu *c, const vt_runner_settings *s, vt_error *err);
/* vt_cpu_configure, then the GGUF of s->model_path (NULL: err says why). */
vt_gguf *vt_cpu_open_model(vt_cpu *c, const vt_runner_settings *s, vt_error *err);
/* Allocate the scratch and Q8 buffers, start the threads. max_in: widest
 * matrix input; head_dim: the attention head size (0: no attention);
 * extra: floats per thread for the model's own use. */
int vt_cpu_start(vt_cpu *c, int64_t max_in, int64_t head_dim, size_t extra, const char *file,
                 vt_error *err);
void vt_cpu_free(vt_cpu *c);
/* Repack m's rows for the kernel set's matrix kernel where it has one for
 * m (AVX-512 VNNI: Q8_0 and Q4_0 in groups of 16 rows): m->packed is set
 * and the copy owned by c. Nothing for any other matrix. VT_EINPUT: out of
 * memory. */
int vt_cpu_pack(vt_cpu *c, vt_mat *m, const char *file, vt_error *err);
void vt_cpu_resolved(const vt_cpu *c, vt_runner_settings *out);
/* Fills c->detail: "isa=... threads=... mode=... matmul=... cache=... batch=...". */
void vt_cpu_describe(vt_cpu *c);
float *vt_cpu_scratch(const vt_cpu *c, int ith);
float *vt_cpu_extra(const vt_cpu *c, int ith);

/* Run fn on every thread of the pool (ith of nth) and wait for all. */
void vt_pool_run(vt_pool *p, vt_task_fn fn, void *ctx);

/* y[t][o] = dot(W row o, x[t]) for every token t < n_tok, for up to three
 * products w[i] sharing the input x (one dispatch). y[i] has row stride ldy[i]. */
void vt_matmul(vt_cpu *c, const float *x, int64_t n_tok, int n, const vt_mat *const *w,
               float *const *y, const int64_t *ldy);
void vt_matmul1(vt_cpu *c, const vt_mat *w, const float *x, int64_t n_tok, float *y, int64_t ldy);

/* ---------- memory ---------- */

size_t vt_round_up(size_t n, size_t a);
/* 64-byte aligned, zeroed; NULL on overflow or out of memory. */
void *vt_alloc_aligned(size_t count, size_t elem);
/* n bytes (not zeroed) in transparent huge pages where the system gives
 * them, for what a decode step streams through; free() frees it. */
void *vt_alloc_huge(size_t n);

/* ---------- loading ---------- */

/* general.architecture must be arch. */
int vt_load_check_arch(const vt_gguf *g, const char *arch, vt_error *err);
/* The key "<arch>.<key>": a positive 32-bit integer / finite number >= 0;
 * def when missing and not required. */
int vt_load_i32(const vt_gguf *g, const char *arch, const char *key, int required, int32_t def,
                int32_t *out, vt_error *err);
int vt_load_f32(const vt_gguf *g, const char *arch, const char *key, int required, float def,
                float *out, vt_error *err);
/* The tensor named name, checked to be ne0 x ne1 (ne1 = 0: a vector). */
const vt_gguf_tensor *vt_load_find(const vt_gguf *g, const char *name, int64_t ne0, int64_t ne1,
                                   vt_error *err);
/* An F32 vector of n (norm weights, biases). */
const float *vt_load_vector(const vt_gguf *g, const char *name, int64_t n, vt_error *err);
/* An F32 matrix read in place (small tensors such as a conv kernel). */
const float *vt_load_f32_matrix(const vt_gguf *g, const char *name, int64_t ne0, int64_t ne1,
                                vt_error *err);
/* A matrix of rows x cols in any decodable codec. */
int vt_load_matrix(const vt_gguf *g, const char *name, int64_t cols, int64_t rows, vt_mat *out,
                   vt_error *err);
/* token_embd (n_vocab from its rows), output_norm, and output or the tied
 * token_embd. */
int vt_load_embeddings(const vt_gguf *g, int64_t n_embd, int32_t *n_vocab, vt_mat *embd,
                       vt_mat *output, const float **output_norm, int *tied, vt_error *err);

/* ---------- blocks both architectures share ---------- */

/* The token rows of an embedding table, decoded from its codec into x
 * (n_tok x cols F32). Ids must be in range (checked by vt_eval_check);
 * ids is scratch for n_tok. */
void vt_embed(const vt_mat *embd, const int32_t *tokens, int64_t n_tok, int64_t *ids, float *x);

/* out row t = RMSNorm(x row t) * w, rows of n, t < n_rows. */
void vt_rmsnorm_rows(float *out, const float *x, const float *w, int64_t n_rows, int64_t n,
                     float eps);

/* One token's query and key heads (n_head and n_head_kv rows of head_dim
 * in q and k): each RMSNorm'd over head_dim in place (q_norm, k_norm), then
 * NeoX RoPE on its first n_rot elements by the angles cs. */
void vt_qk_norm_rope(const vt_cpu *c, float *q, float *k, const float *q_norm, const float *k_norm,
                     int32_t n_head, int32_t n_head_kv, int64_t head_dim, int64_t n_rot, const float *cs,
                     float eps);

/* x += y, element by element. */
void vt_add(float *x, const float *y, int64_t n);

/* The SwiGLU feed-forward block with its residual, on n_tok rows of x
 * (n_embd wide): xn = RMSNorm(x) * norm; gate and up (one dispatch);
 * g = silu(gate) * up; x += down(g). xn, g, u, proj are scratch rows. */
typedef struct vt_ffn {
    const float *norm;
    const vt_mat *gate, *up, *down;
} vt_ffn;
void vt_ffn_block(vt_cpu *c, const vt_ffn *f, float *x, int64_t n_tok, float eps, float *xn,
                  float *g, float *u, float *proj);

/* Final RMSNorm and the output head for batch rows [out0, out0 + n_out) of
 * x: logits (n_out x output->rows). xn is scratch rows. */
void vt_output_head(vt_cpu *c, const float *x, int64_t out0, int64_t n_out, const float *norm,
                    const vt_mat *output, float eps, float *xn, float *logits);

/* *bufs[i] = rows x widths[i] floats (aligned, zeroed), i < n; 0 if any
 * allocation failed (the others are still set, for the caller's free). */
int vt_alloc_rows(float **const *bufs, const size_t *widths, size_t n, size_t rows);

/* ---------- element-wise ---------- */

/* RMSNorm as ggml: sum of squares in double, mean rounded to F32, eps added
 * inside the square root, then x * scale * w (w NULL: x * scale). */
void vt_rmsnorm(float *out, const float *x, const float *w, int64_t n, float eps);

/* cos/sin of theta_i = pos * base^(-2i/d), i < d/2, as ggml computes them:
 * theta_scale = powf(base, -2/d), theta multiplied by it step by step. */
void vt_rope_angles(float *cs, int32_t pos, int64_t d, float base);
/* NeoX RoPE: the kernel set's rope_neox (vt_kernels). */

static inline float vt_silu(float x) { return x / (1.0f + expf(-x)); }
static inline float vt_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

/* ---------- KV cache and attention ---------- */

typedef struct vt_kv {
    void *k, *v;             /* [layer][kv head][position][head_dim] in dtype */
    vt_cache_dtype dtype;
    size_t elem;
    int32_t n_layer, n_ctx;
    int64_t kv_dim, head_dim; /* kv_dim: the kv heads' head_dim each */
    float fp8_table[256];
} vt_kv;

int vt_kv_alloc(vt_kv *kv, int32_t n_layer, int32_t n_ctx, int64_t kv_dim, int64_t head_dim,
                vt_cache_dtype dtype, const char *file, vt_error *err);
void vt_kv_free(vt_kv *kv);
/* Where (layer, kv head, position)'s head_dim elements start in k and v. */
size_t vt_kv_index(const vt_kv *kv, int32_t layer, int32_t kv_head, int32_t pos);
/* Store k and v rows (kv_dim each) of one position. */
void vt_kv_store(vt_kv *kv, int32_t layer, int32_t pos, const float *k, const float *v);
/* Asks for the cache lines of n_tok positions from pos to be fetched for
 * writing, ahead of their vt_kv_store, for a decode step's few positions
 * (a hint: nothing changes; more than 4 positions are left alone). Their
 * lines come from memory, which cost vt_kv_store about 4.7 thousand cycles
 * a layer when it waited for them (b06-Q4_K, f32 cache). */
void vt_kv_will_store(const vt_kv *kv, int32_t layer, int32_t pos, int64_t n_tok);

/* Causal grouped-query attention over the cache: token t of the batch sits
 * at position pos0 + t and sees positions 0 .. pos0 + t, all in the cache.
 * q: n_tok rows of n_head * head_dim (stride ldq); out likewise (stride ldo). */
typedef struct vt_attention_args {
    const vt_kv *kv;
    int32_t layer, pos0;
    int64_t n_tok;
    int32_t n_head, n_head_kv;
    int64_t head_dim;
    const float *q;
    int64_t ldq;
    float *out;
    int64_t ldo;
} vt_attention_args;
void vt_attention(vt_cpu *c, const vt_attention_args *a);
/* Query heads of one KV head computed together (each thread's scratch
 * holds this many rows of scores and of partial sums). */
#define VT_ATT_HEADS 8

/* ---------- evaluation ---------- */

/* The checks before an eval computes anything: at least one token, a
 * logits buffer, n_past + n <= n_ctx, every id in [0, n_vocab). */
int vt_eval_check(const char *file, const int32_t *tokens, int32_t n, const float *logits,
                  int32_t n_past, int32_t n_ctx, int32_t n_vocab, vt_error *err);

/* Carries a batch: n_tok tokens; logits of batch rows [out0, out0 + n_out). */
typedef void (*vt_forward_fn)(void *model, const int32_t *tokens, int64_t n_tok, int64_t out0,
                              int64_t n_out, float *logits);
/* Production: batches of step tokens; eager: step 1. All rows' logits
 * (all_logits) or the last one's. */
void vt_eval_batches(void *model, vt_forward_fn forward, const int32_t *tokens, int32_t n,
                     int32_t step, int all_logits, int32_t n_vocab, float *logits);

#endif
