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

/* The kernel set the engine picks here ("avx512f", "avx2", "sse2", "c"). */
const char *vt_engine_isa(void);

#endif
