/* One matrix product exactly as the engine's forward pass computes it, for
 * checking the engine op by op against another implementation (vt op check). */
#ifndef VT_ENGINE_OP_H
#define VT_ENGINE_OP_H

#include <stdint.h>

#include "../common/vt_error.h"
#include "runner.h"

/* y[t * rows + o] = dot(W row o, x row t) for W rows x cols of type (rows
 * packed as in a GGUF file) and x n_tok rows of cols F32, through the same
 * kernels, activation rounding (mode) and thread split as a forward pass on
 * n_threads threads. The engine's kernel set is the one vt_kernels_pick
 * gives ($VT_ENGINE_ISA). VT_EINPUT for a type the engine cannot decode or a
 * row that is not whole blocks. */
int vt_engine_matmul(int type, const void *w, int64_t rows, int64_t cols, const float *x,
                     int64_t n_tok, vt_matmul_mode mode, int n_threads, float *y, vt_error *err);

/* The activation type the engine's q8 matmul mode rounds through for a
 * weight of this type, as ggml's vec_dot_type ("Q8_0", "Q8_K", "F16", ...;
 * "F32" where the activation is used as is). */
const char *vt_engine_dot_type(int weight_type);

/* The forward pass's arithmetic around its matrix products, one piece at a
 * time, through the kernel set vt_kernels_pick gives: an F32 dot product (a
 * weight row at one token, attention's q.k and V p), a BF16 weight's dot
 * product (a and b hold BF16 values), attention's softmax exponentials
 * (x[i] = exp(x[i] - max) for i < n, returning their sum; a row of the
 * cache, which llama.cpp pads to a multiple of 16), and SwiGLU over a row
 * (g = silu(g) * u). Each follows ggml's AVX-512 CPU code (vt op check and
 * tests/test_op_check.c compare them with the functions of the CPU backend
 * llama.cpp loads). */
float vt_engine_dot_f32(const float *a, const float *b, int64_t n);
float vt_engine_dot_bf16(const float *a, const float *b, int64_t n);
double vt_engine_softmax_exp(float *x, int64_t n, float max);
void vt_engine_swiglu(float *g, const float *u, int64_t n);
void vt_engine_silu(float *x, int64_t n); /* ggml_vec_silu_f32 */

/* One token's attention as the forward pass computes it, n_head query
 * heads sharing one key/value head: each row of q (n_head rows of head_dim)
 * over n_keys cached keys and values (rows of head_dim, an F32 cache), its
 * row of out = softmax(q.k / sqrt(head_dim)) V in llama.cpp's order
 * (kernels_kv.c), on n_threads threads. VT_EINPUT for no key, a head size
 * outside 1 .. 4096 or n_head outside 1 .. 64. */
int vt_engine_attention(const float *q, const float *k, const float *v, int32_t n_keys, int64_t head_dim,
                        int32_t n_head, int n_threads, float *out, vt_error *err);

/* The kernel set the engine picks here ("avx512f", "avx2", "sse2", "c"). */
const char *vt_engine_isa(void);

#endif
