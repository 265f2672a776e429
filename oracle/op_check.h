/* Op check: the engine's matrix products against ggml_mul_mat on the CPU
 * backend llama.cpp loads (ggml_matmul.h), value for value.
 *
 * For each weight type, rows of three kinds are quantized with ggml's own
 * quantizer (ggml_codec.h) and multiplied by activations at one token and at
 * a prefill batch, in the layout llama.cpp gives the weight (repacked where
 * ggml repacks the type) and, where that is repacked, in the plain layout
 * too. Each dot product is compared bit for bit; the distance of one that
 * differs is counted in units in the last place. */
#ifndef VT_OP_CHECK_H
#define VT_OP_CHECK_H

#include <stdint.h>

#include "../common/vt_error.h"
#include "../engine/runner.h"
#include "ggml_codec.h"
#include "ggml_matmul.h"

typedef enum vt_op_rows {
    VT_OP_ROWS_RANDOM = 0,  /* normal, uniform, outliers, all-equal, all-zero rows */
    VT_OP_ROWS_ADVERSARIAL, /* all-zero blocks, ties for the block maximum, values that
                               land exactly on .5 after scaling, outlier channels */
    VT_OP_ROWS_FIXTURE,     /* a model's own weights and token embeddings */
    VT_OP_ROW_KINDS
} vt_op_rows;

const char *vt_op_rows_name(vt_op_rows k);

/* Float rows for one check: w is rows x cols, x is n_tok x cols. */
typedef struct vt_op_inputs {
    const float *w;
    const float *x;
    int64_t rows, cols, n_tok;
} vt_op_inputs;

/* Fills w (rows x cols) and x (n_tok x cols) for kind RANDOM or ADVERSARIAL,
 * a fixed function of seed. */
void vt_op_make_rows(vt_op_rows kind, float *w, int64_t rows, float *x, int64_t n_tok, int64_t cols,
                     uint64_t seed);

/* Fills w from the blk.* matrices of the GGUF at path (decoded, in file
 * order, cut into rows of cols) and x from rows of its token_embd table. */
int vt_op_fixture_rows(const char *path, float *w, int64_t rows, float *x, int64_t n_tok,
                       int64_t cols, vt_error *err);

/* The engine side of a check; the engine's own vt_engine_matmul unless a
 * test passes a deliberately broken one. */
typedef int (*vt_op_engine_fn)(int type, const void *w, int64_t rows, int64_t cols, const float *x,
                               int64_t n_tok, vt_matmul_mode mode, int n_threads, float *y,
                               vt_error *err);

typedef struct vt_op_result {
    int type;
    vt_op_rows kind;
    int64_t n_tok;
    vt_ggml_layout layout;
    int repacked;         /* ggml repacked the weight (layout REPACK only) */
    int64_t dots;         /* dot products compared: rows x n_tok */
    int64_t identical;    /* bit-identical ones */
    /* At a batch (n_tok > 1) ggml's result for a token may depend on the
     * batch (a repacked type's gemm takes full groups of four tokens, other
     * paths start at other sizes): ggml is also run on each token alone, as
     * generation runs it. identical_single: the engine's bits equal that
     * one-token result; oracle_shape_differs: ggml's batched and one-token
     * results differ (the oracle's own noise); identical_either: the engine
     * equals one of the two. At one token all three follow identical. */
    int64_t identical_single, oracle_shape_differs, identical_either;
    uint64_t max_ulp;     /* largest distance in units in the last place; NaN against a
                             number counts UINT64_MAX */
    double max_abs;       /* largest |engine - ggml| */
    double max_abs_ref;   /* largest |ggml| (the scale of max_abs) */
    /* max_abs in units in the last place of max_abs_ref: the error against
     * the scale of the products. A sum that cancels to near zero has a huge
     * distance in ULP of its own value (max_ulp) for a rounding difference of
     * its large terms; this measure is what a float type's bound is on. */
    double max_ulp_of_scale;
} vt_op_result;

/* Distance of two floats in units in the last place, counted along the
 * ordered floats (+0 and -0 are 0 apart: equal numbers); 0 for two NaNs,
 * UINT64_MAX when exactly one is NaN. */
uint64_t vt_op_ulp_distance(float a, float b);

/* One check: the weight w (rows x cols floats) quantized to type by ggml,
 * multiplied by x (n_tok rows) by the engine and by ggml in layout. */
int vt_op_check_one(vt_ggml *q, vt_ggml_mm *mm, vt_op_engine_fn engine, int type,
                    const vt_op_inputs *in, vt_matmul_mode mode, int n_threads,
                    vt_ggml_layout layout, vt_op_result *res, vt_error *err);

/* The weight types vt op check --types all covers: F32, F16, BF16 and every
 * type the engine pairs with a ggml dot type (kernels.c, vt_act_type_of).
 * Returns how many were written to types (at most cap). */
int vt_op_check_types(int *types, int cap);
/* Whether type is an integer-block type (its products run in integer
 * arithmetic in ggml: bit identity is the standard), or F32/F16/BF16. */
int vt_op_check_is_float(int type);

#endif
