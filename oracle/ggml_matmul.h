/* The matrix-product oracle: ggml_mul_mat computed by the CPU backend that
 * llama.cpp loads on this machine (the process's libllama, oracle/
 * llamacpp_lib.h), with the weight either in a plain CPU buffer or in the
 * backend's repacking buffer, as llama.cpp places its weights by default.
 * What vt op check compares the engine's matrix rows against. */
#ifndef VT_GGML_MATMUL_H
#define VT_GGML_MATMUL_H

#include <stdint.h>

#include "../common/vt_error.h"

typedef struct vt_ggml_mm vt_ggml_mm;

typedef enum vt_ggml_layout {
    VT_GGML_PLAIN = 0,  /* the CPU backend's own buffer: weights as stored */
    VT_GGML_REPACK = 1  /* its extra (repacking) buffer where ggml repacks the type,
                           else plain: what llama.cpp does with a weight */
} vt_ggml_layout;

/* Loads (once per process) libllama and its CPU backend from libdir (NULL:
 * $VT_GGML_LIBDIR or the bootstrap directory), and starts a CPU backend of
 * n_threads threads. NULL on failure with err set. */
vt_ggml_mm *vt_ggml_mm_open(const char *libdir, int n_threads, vt_error *err);
void vt_ggml_mm_free(vt_ggml_mm *m);
/* The libggml-cpu-<variant>.so ggml chose, and the extra buffer type's name
 * ("" if the backend has none). */
const char *vt_ggml_mm_cpu_backend(const vt_ggml_mm *m);
const char *vt_ggml_mm_extra_buffer(const vt_ggml_mm *m);

/* The activation type the CPU backend's dot product pairs with a weight of
 * this type (ggml_get_type_traits_cpu's vec_dot_type, a ggml type id), or -1
 * where it has no dot product for it as a weight. */
int vt_ggml_mm_vec_dot_type(vt_ggml_mm *m, int type);

/* Whether the CPU backend computes ggml_mul_mat with a weight of this type. */
int vt_ggml_mm_supports(vt_ggml_mm *m, int type, int64_t rows, int64_t cols);

/* y[t * rows + o] = ggml_mul_mat(W, x) for W rows x cols of type (rows
 * packed as in a GGUF file) and x n_tok rows of cols F32. *repacked says
 * whether ggml repacked W (VT_GGML_REPACK only). VT_EINPUT if the backend
 * cannot compute it. */
int vt_ggml_mm_run(vt_ggml_mm *m, int type, const void *w, int64_t rows, int64_t cols,
                   const float *x, int64_t n_tok, vt_ggml_layout layout, float *y, int *repacked,
                   vt_error *err);

#endif
