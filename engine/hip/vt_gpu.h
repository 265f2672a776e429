/* The GPU backend's C interface (engine/hip/, built with hipcc or nvcc when
 * VT_HIP is on). Opaque handles, errors returned, never exit(). Every entry
 * point takes its device explicitly (or through a handle made on it) and
 * binds it (hipSetDevice) before any allocation or launch.
 *
 *   packed gather   a codec table resident on the device as stored in its
 *                   GGUF (never widened); selected rows decoded straight to
 *                   F32 or BF16 by the same block functions as the CPU
 *                   (engine/codec_blocks.h), so the values are the CPU's;
 *                   every int64 id checked on the device before any row is
 *                   read, a bad one reported (position, id) through a small
 *                   device error buffer and nothing written. */
#ifndef VT_GPU_H
#define VT_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "../../common/vt_error.h"
#include "../codec.h"
#include "../codec_blocks.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Devices the runtime sees (0 where it sees none: then *n = 0 and VT_OK). */
int vt_gpu_device_count(int *n, vt_error *err);
/* "NVIDIA H200 (sm_90)", "AMD Instinct MI210 (gfx90a)", ... */
int vt_gpu_device_name(int device, char *buf, size_t cap, vt_error *err);
/* The runtime ("cuda" or "hip") and its runtime and driver versions. */
int vt_gpu_runtime(int device, const char **vendor, int *runtime_version, int *driver_version, vt_error *err);

typedef struct vt_gpu_table vt_gpu_table;

/* n_rows rows of row_elems elements of codec c, packed as in a GGUF file,
 * copied to device memory on device. NULL with err set on failure. */
vt_gpu_table *vt_gpu_table_upload(int device, const vt_codec *c, const void *rows, int64_t n_rows,
                                  int64_t row_elems, vt_error *err);
void vt_gpu_table_free(vt_gpu_table *t);
int vt_gpu_table_device(const vt_gpu_table *t);

/* vt_codec_gather_rows on the device: ids (host, n_ids) copied over, rows
 * decoded there, out (host, n_ids rows of F32 or BF16) copied back. A bad
 * id: VT_EINPUT, "gather: position P: id I: expected 0 <= id < N" (the
 * first bad position), and out left as it was. */
int vt_gpu_gather(vt_gpu_table *t, const int64_t *ids, int64_t n_ids, vt_dtype out_dtype, void *out,
                  vt_error *err);

/* The same on device memory, on the table's device and its stream: ids_dev
 * and out_dev device pointers, err_dev a 16-byte device buffer (two
 * uint64: the first bad position or UINT64_MAX, and its id) that this sets
 * and fills; nothing waits. */
int vt_gpu_gather_async(vt_gpu_table *t, const int64_t *ids_dev, int64_t n_ids, vt_dtype out_dtype,
                        void *out_dev, uint64_t *err_dev, vt_error *err);


/* Binds device (hipSetDevice) after checking it exists. */
int vt_gpu_bind(int device, vt_error *err);
/* The IQ codebooks copied to the current device (*buf to hipFree); *g points there. */
int vt_gpu_grids_upload(uint8_t **buf, vt_iq_grids *g, vt_error *err);

/* ---------------------------------------------------------------------
 * Device operations of the forward pass (ops.hip). Each is one function of
 * its inputs, computed in the CPU engine's order (engine_math.h,
 * codec_blocks.h, and the dot products' lane layout of kernels_dot.c), so
 * the GPU's results are the CPU engine's in exact matmul mode bit for bit.
 * All run on the context's stream, asynchronously; pointers are device
 * memory unless a name says host. */

typedef struct vt_gpu vt_gpu;

vt_gpu *vt_gpu_open(int device, vt_error *err);
/* Binds g's device to the calling thread: a model's entry points call it
 * first, since one thread may drive models on several devices in turn and
 * a launch goes to the thread's current device. */
int vt_gpu_use(vt_gpu *g, vt_error *err);
void vt_gpu_close(vt_gpu *g);
void *vt_gpu_malloc(vt_gpu *g, size_t bytes, vt_error *err); /* NULL on failure, err set */
void vt_gpu_mfree(vt_gpu *g, void *p);
int vt_gpu_to_device(vt_gpu *g, void *dst, const void *host, size_t bytes, vt_error *err);
int vt_gpu_to_host(vt_gpu *g, void *host, const void *src, size_t bytes, vt_error *err); /* waits */
int vt_gpu_wait(vt_gpu *g, vt_error *err);
/* Launches from the host (a kernel, or a whole captured graph: one) and
 * host<->device copies made through g so far. */
void vt_gpu_counts(const vt_gpu *g, uint64_t *launches, uint64_t *copies);
/* With VT_GPU_PROFILE=1 in the environment, each kernel launched outside a
 * graph is timed by events, summed per kernel name and phase (decode steps
 * of one token apart from batches) and printed on stderr at close. */
void vt_gpu_profile_phase(vt_gpu *g, int decode_step);

/* Page-locked host memory (the only kind a captured copy may use). */
void *vt_gpu_host_alloc(vt_gpu *g, size_t bytes, vt_error *err);
void vt_gpu_host_free(vt_gpu *g, void *p);
/* Copies queued on the stream, not waited for: host must stay untouched
 * until vt_gpu_wait (or a later waiting copy) returns. */
int vt_gpu_to_host_async(vt_gpu *g, void *host, const void *src, size_t bytes, vt_error *err);
int vt_gpu_to_device_async(vt_gpu *g, void *dst, const void *host, size_t bytes, vt_error *err);
/* Scratch of the q8 products made ready for bytes, so that no later
 * product (one captured into a graph among them) allocates. */
int vt_gpu_reserve(vt_gpu *g, size_t bytes, vt_error *err);

/* Production mode's decode step as one graph: what is queued between
 * capture_begin and capture_end is recorded, not run; graph_launch runs it
 * (the same kernels, arguments and order, so the same bits). A graph is
 * valid while the buffers it names are: vt_gpu_graph_valid says no after
 * the scratch was reallocated. capture_end with rc != VT_OK drops what was
 * recorded and returns rc. */
typedef struct vt_gpu_graph vt_gpu_graph;
/* The longest context a captured step serves (its attention's shared
 * memory is sized for the whole context); longer ones decode eagerly. */
#define VT_GPU_GRAPH_MAX_CTX 16384
int vt_gpu_capture_begin(vt_gpu *g, vt_error *err);
int vt_gpu_capture_end(vt_gpu *g, int rc, vt_gpu_graph **out, vt_error *err);
int vt_gpu_graph_launch(vt_gpu *g, vt_gpu_graph *x, vt_error *err);
int vt_gpu_graph_valid(const vt_gpu *g, const vt_gpu_graph *x);
void vt_gpu_graph_free(vt_gpu *g, vt_gpu_graph *x);
/* The device's read bandwidth (bytes per second): the best of passes timed
 * reads of a bytes-sized buffer (after one untimed pass). */
int vt_gpu_read_bandwidth(int device, size_t bytes, int passes, double *bytes_per_s, vt_error *err);
/* The time (us) a graph of n dependent empty kernels of blocks x threads,
 * launched as the decode step's are, takes a replay: the best mean of five
 * timed batches of replays (after one untimed). */
int vt_gpu_launch_floor(vt_gpu *g, int n, unsigned blocks, unsigned threads, int replays, double *us, vt_error *err);
/* The device's multiprocessors (compute units). */
int vt_gpu_multiprocessors(const vt_gpu *g);
/* The time (us) a replay of one kernel of n grid-wide barriers takes
 * (blocks at most the device's multiprocessors, all resident at once):
 * what a step run as one persistent kernel pays a dependent phase. Measured
 * as vt_gpu_launch_floor's. */
int vt_gpu_barrier_floor(vt_gpu *g, int n, unsigned blocks, unsigned threads, int replays, double *us, vt_error *err);

/* A weight matrix in its codec, rows packed as in the GGUF file. */
typedef struct vt_gpu_mat {
    const uint8_t *data;
    int type;
    int64_t rows, cols;
    size_t row_bytes;
    int64_t tensor_rows; /* rows of the whole tensor (the CPU's choice of Q4_K's product order) */
} vt_gpu_mat;

/* The matmul mode of g's products (runner.h: VT_MATMUL_EXACT, the default,
 * or VT_MATMUL_Q8: the activation through the weight's dot type, as the
 * CPU engine's --matmul q8). */
void vt_gpu_set_matmul(vt_gpu *g, int matmul);
int vt_gpu_matmul_of(const vt_gpu *g);
/* VT_OK if the GPU computes products of weight type in mode matmul as the
 * CPU engine does; else VT_EINPUT, one line. q8 runs F32, F16 and BF16
 * (the activation rounded) and Q8_0, Q4_K, Q5_K and Q6_K (integer block
 * products, engine/codec_intdot.h); the other types' integer bodies are not
 * shared with the GPU yet. */
int vt_gpu_matmul_supported(int type, int matmul, vt_error *err);

/* The KV cache: n_layer x n_ctx x kv_dim elements of K and of V. The
 * batch's first position is read on the device from *pos, so that one
 * captured decode step serves every position. */
typedef struct vt_gpu_kv {
    void *k, *v;
    const int32_t *pos;
    int dtype; /* VT_CACHE_F32, VT_CACHE_BF16 or VT_CACHE_FP8_E4M3 (runner.h) */
    int elem;  /* its bytes an element: vt_cache_elem_bytes(dtype) */
    int32_t n_layer, n_ctx;
    int64_t kv_dim;
    const float *fp8_table; /* 256 values, the CPU's decoding table */
} vt_gpu_kv;

/* x[t] = row ids[t] of the table, decoded to F32 (ids checked by the caller). */
int vt_gpu_embed(vt_gpu *g, const vt_gpu_mat *table, const int64_t *ids, int64_t n_tok, float *x, vt_error *err);
/* out = RMSNorm(x) * w row by row (w may be NULL). */
int vt_gpu_rmsnorm_rows(vt_gpu *g, float *out, const float *x, const float *w, int64_t rows, int64_t n, float eps,
                        vt_error *err);
/* x += y, then out = RMSNorm(x) * w: vt_gpu_add and vt_gpu_rmsnorm_rows in
 * one launch (the residual add and the next norm). */
int vt_gpu_add_rmsnorm(vt_gpu *g, float *x, const float *y, float *out, const float *w, int64_t rows, int64_t n,
                       float eps, vt_error *err);
/* y[t * ldy + o] = dot(W row o, x[t]) (x: n_tok rows of W->cols): F32 order,
 * BF16 weights in ggml_vec_dot_bf16's; in q8 mode (vt_gpu_set_matmul) x
 * first through W's dot type. W->cols must be a multiple of 64 (of 256 for
 * the Q8_K dot type). */
int vt_gpu_matmul(vt_gpu *g, const vt_gpu_mat *w, const float *x, int64_t n_tok, float *y, int64_t ldy,
                  vt_error *err);
/* The products of n (1..4) matrices over the same x (Q, K, V; gate, up):
 * one launch where they share a codec and width and a decode step's
 * product applies, else one vt_gpu_matmul each. The same bits either way. */
int vt_gpu_matmul_group(vt_gpu *g, const vt_gpu_mat *const *ws, int n, const float *x, int64_t n_tok,
                        float *const *ys, const int64_t *ldys, vt_error *err);
/* The residual add and RMSNorm before a product: x_out = x + y, then the
 * product's input xn = RMSNorm(x_out) * w (vt_gpu_add_rmsnorm's operations,
 * rows of the product's width). For one token a Q8_0 product takes both
 * into its own launch (each block works the input out itself, the first
 * stores x_out; xn is not written), so x_out must not be x or y; elsewhere
 * the add and norm are a launch of their own before the product. The same
 * bits either way. */
typedef struct vt_gpu_add_norm {
    const float *x, *y;
    float *x_out, *xn;
    const float *w;
    float eps;
} vt_gpu_add_norm;
/* The stream x, the sublayer's output y and the next RMSNorm (w, eps) as
 * the models keep them: x_out is whichever of the two stream buffers (a, b)
 * x is not, xn the product's input. */
static inline vt_gpu_add_norm vt_gpu_add_norm_next(const float *x, const float *y, float *a, float *b, float *xn,
                                                   const float *w, float eps)
{
    const vt_gpu_add_norm an = { x, y, x == a ? b : a, xn, w, eps };
    return an;
}
/* The add and norm alone (rows of n): x_out and xn written. */
int vt_gpu_add_norm_alone(vt_gpu *g, const vt_gpu_add_norm *an, int64_t rows, int64_t n, vt_error *err);
int vt_gpu_add_norm_matmul_group(vt_gpu *g, const vt_gpu_add_norm *an, const vt_gpu_mat *const *ws, int n,
                                 int64_t n_tok, float *const *ys, const int64_t *ldys, vt_error *err);
int vt_gpu_add_norm_gate_up_swiglu(vt_gpu *g, const vt_gpu_add_norm *an, const vt_gpu_mat *wg, const vt_gpu_mat *wu,
                                   int64_t n_tok, float *gate, float *up, vt_error *err);
/* Per head of every token, Q's heads and K's: x = RMSNorm(x) * w (qw, kw)
 * over head_dim, then NeoX RoPE with the angles cs (n_tok x n_rot: cos, sin
 * pairs, the CPU's) over the first n_rot dimensions, in place; then K's
 * and V's rows stored in the cache of layer at positions *kv->pos.. */
int vt_gpu_qk_norm_rope_store(vt_gpu *g, const vt_gpu_kv *kv, int layer, int64_t n_tok, float *q, int64_t ldq,
                              float *k, int64_t ldk, const float *v, int64_t ldv, int n_head, int n_head_kv,
                              int64_t hd, const float *qw, const float *kw, float eps, const float *cs, int64_t n_rot,
                              vt_error *err);
/* Causal grouped-query attention over the cache, as kernels_kv.c, for the
 * tokens at *kv->pos..; keys_max (at least *kv->pos + n_tok) sizes its
 * shared memory: n_ctx for a captured step. */
int vt_gpu_attention(vt_gpu *g, const vt_gpu_kv *kv, int layer, int32_t keys_max, int64_t n_tok, int n_head,
                     int n_head_kv, int64_t hd, const float *q, int64_t ldq, float *out, int64_t ldo, vt_error *err);
/* The two above for one layer (vt_gpu_qk_norm_rope_store, then
 * vt_gpu_attention): for one token with heads of 64 or 128 on a device
 * with thread-block clusters, one launch (the same bits; q and k are then
 * left as they were: only the cache and out are written). */
int vt_gpu_qk_norm_rope_attention(vt_gpu *g, const vt_gpu_kv *kv, int layer, int32_t keys_max, int64_t n_tok,
                                  float *q, int64_t ldq, float *k, int64_t ldk, const float *v, int64_t ldv,
                                  int n_head, int n_head_kv, int64_t hd, const float *qw, const float *kw, float eps,
                                  const float *cs, int64_t n_rot, float *out, int64_t ldo, vt_error *err);
/* x += y over n elements. */
int vt_gpu_add(vt_gpu *g, float *x, const float *y, int64_t n, vt_error *err);
/* g = silu(g) * u over rows of n (n a multiple of 16). */
int vt_gpu_swiglu(vt_gpu *g, float *gate, const float *up, int64_t rows, int64_t n, vt_error *err);
/* The feed-forward's first half: gate = silu(x Wg) * (x Wu), n_tok rows of
 * wg->rows (up: scratch of the same size). vt_gpu_matmul_group then
 * vt_gpu_swiglu, one launch for a decode step where the one-token kernels
 * apply (VT_GPU_PAIR_SWIGLU=0: never). The same bits either way. */
int vt_gpu_gate_up_swiglu(vt_gpu *g, const vt_gpu_mat *wg, const vt_gpu_mat *wu, const float *x, int64_t n_tok,
                          float *gate, float *up, vt_error *err);

/* qwen35's pieces, in qwen35.c's order. Where qwen35.c calls the C
 * library's expf or logf (the attention gate's sigmoid; beta = sigmoid(beta)
 * and the decay exp(softplus(alpha + dt_bias) * a) of the delta rule), the
 * kernels call engine_math.h's copies of them (the device's own exp is
 * another function); rows for SiLU must be a multiple of 16 (ggml's
 * vectorised part). */
int vt_gpu_split_qgate(vt_gpu *g, const float *qfull, int64_t n_tok, int n_head, int64_t hd, float *q, float *gate,
                       vt_error *err);
int vt_gpu_mul_sigmoid(vt_gpu *g, float *x, const float *gate, int64_t n, vt_error *err); /* x *= sigmoid(gate) */
int vt_gpu_conv1d(vt_gpu *g, const float *x, int64_t ldx, int64_t n_tok, const float *w, int K, float *state,
                  int64_t C, float *y, int64_t ldy, vt_error *err);
int vt_gpu_silu_rows(vt_gpu *g, float *x, int64_t rows, int64_t n, vt_error *err);
int vt_gpu_l2norm(vt_gpu *g, float *x, int64_t n_tok, int64_t ld, int per_tok, int64_t d, float eps, vt_error *err);
/* The delta rule's inputs for its gates, per token and value head: the beta
 * and alpha projections (device, n_tok x nv), and per value head dt_bias and
 * a (device, nv). done: beta and alpha already hold sigmoid(beta) and the
 * decay (vt_gpu_conv_silu_l2norm computed them). */
typedef struct vt_gpu_delta_gates {
    float *beta, *alpha;
    const float *dt_bias, *a;
    int done;
} vt_gpu_delta_gates;
/* The causal conv1d of n_tok rows (x, C channels), SiLU and the L2 norm
 * of the first n_norm vectors of d a row, into y: the three above, in one
 * launch for one token where the vectors are whole warps (d a multiple of
 * 32 up to 1024, C of d); that launch also turns the nv gates in place into
 * the delta rule's and sets gates->done (off its critical path: the rule
 * would wait on them). */
int vt_gpu_conv_silu_l2norm(vt_gpu *g, const float *x, int64_t n_tok, const float *w, int K, float *state, int64_t C,
                            int n_norm, int64_t d, float eps, float *y, vt_gpu_delta_gates *gates, int64_t nv,
                            vt_error *err);
int vt_gpu_delta_rule(vt_gpu *g, float *states, int64_t d, const float *conv, int64_t C, int64_t key_dim,
                      int64_t n_k_heads, vt_gpu_delta_gates gates, int64_t nv, int64_t n_tok, float *o, int64_t ldo,
                      vt_error *err);
int vt_gpu_gated_norm(vt_gpu *g, float *o, float *z, const float *w, int64_t n_vec, int64_t d, float eps,
                      vt_error *err);
int vt_gpu_zero(vt_gpu *g, void *p, size_t bytes, vt_error *err);

/* ---------------------------------------------------------------------
 * A qwen3 model on the GPU (qwen3_gpu.c): the CPU engine loads and checks
 * the file (vt_qwen3_open), its tensors are copied to the device in their
 * codecs, and vt_gpu_qwen3_eval is vt_qwen3_eval computed there (exact
 * matmul mode; s->matmul must be exact). */
typedef struct vt_gpu_qwen3 vt_gpu_qwen3;
struct vt_runner_settings;
vt_gpu_qwen3 *vt_gpu_qwen3_open(int device, const struct vt_runner_settings *s, vt_error *err);
void vt_gpu_qwen3_close(vt_gpu_qwen3 *m);
void vt_gpu_qwen3_reset(vt_gpu_qwen3 *m);
int vt_gpu_qwen3_eval(vt_gpu_qwen3 *m, const int32_t *tokens, int32_t n, int all_logits, float *logits,
                      vt_error *err);
int32_t vt_gpu_qwen3_n_vocab(const vt_gpu_qwen3 *m);
/* The settings as applied (the CPU model's, one host thread). */
void vt_gpu_qwen3_resolved(const vt_gpu_qwen3 *m, struct vt_runner_settings *out);
void vt_gpu_qwen3_counts(const vt_gpu_qwen3 *m, uint64_t *launches, uint64_t *copies);

/* The same for qwen35 (qwen35_gpu.c); the recurrent states are zeroed by
 * reset, as the CPU's. */
typedef struct vt_gpu_qwen35 vt_gpu_qwen35;
vt_gpu_qwen35 *vt_gpu_qwen35_open(int device, const struct vt_runner_settings *s, vt_error *err);
void vt_gpu_qwen35_close(vt_gpu_qwen35 *m);
void vt_gpu_qwen35_reset(vt_gpu_qwen35 *m);
int vt_gpu_qwen35_eval(vt_gpu_qwen35 *m, const int32_t *tokens, int32_t n, int all_logits, float *logits,
                       vt_error *err);
int32_t vt_gpu_qwen35_n_vocab(const vt_gpu_qwen35 *m);
/* The settings as applied (the CPU model's, one host thread). */
void vt_gpu_qwen35_resolved(const vt_gpu_qwen35 *m, struct vt_runner_settings *out);
void vt_gpu_qwen35_counts(const vt_gpu_qwen35 *m, uint64_t *launches, uint64_t *copies);

#ifdef __cplusplus
}
#endif

#endif
