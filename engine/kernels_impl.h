/* What the kernels_*.c files share (internal to them): the floating-point
 * contract of every kernel, the x86 switch, and the integer products that
 * the matrix products call. See kernels.h for the whole.
 *
 * No fused multiply-add the source does not write, whatever the build
 * flags (GNU C modes and -march=native would otherwise let the compiler
 * fuse a*b+c, including inside the intrinsic kernels): the fused ones are
 * written (fmaf, _mm512_fmadd_ps) where ggml's compiled code has them, so
 * every rounding step is the same on every machine. */
#ifndef VT_KERNELS_IMPL_H
#define VT_KERNELS_IMPL_H

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include "engine_math.h" /* tree16, expf16_body: shared with the GPU */
#include "kernels.h"

#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define VT_X86 1
#endif

/* Between kernels_intdot.c and kernels_matmul.c: an integer block product of
 * nb blocks of a weight row and a quantized activation row. */
typedef float (*vt_int_dot_fn)(const uint8_t *w, const uint8_t *x, int64_t nb);
/* The kernel pair (portable, FMA) w's products take under --matmul q8, or
 * NULL (the F32 product of the rounded activation); *act: its activation. */
const vt_int_dot_fn *vt_int_dot_of(const vt_cpu *c, const vt_mat *w, vt_act_type *act);
/* Bytes of one token's activation in the block type act, n elements. */
size_t vt_act_block_row_bytes(vt_act_type act, int64_t n);
/* One token's activation quantized to act's blocks, as ggml's x86 build. */
void vt_act_quantize_row(vt_act_type act, const float *x, uint8_t *dst, int64_t n);
#ifdef VT_X86
/* vt_act_quantize_row for VT_ACT_Q8_K, the same bytes, in AVX-512: only
 * where the kernel set has vnni (n a multiple of 256). */
void vt_act_quantize_q8_k_avx512(const float *x, uint8_t *dst, int64_t n);
#endif

/* A matrix kernel: rows [r0, r1) of w against n_tok tokens of an activation
 * in the wide layout (vt_act_quantize_wide) or in its plain blocks (as the
 * kernel says), y[t * ldy + o]; each output
 * the same value as w's integer product gives it. NULL from vt_int_gemm_of:
 * the kernel set has none for w (the integer products row by row). */
typedef void (*vt_int_gemm_fn)(const vt_mat *w, int64_t r0, int64_t r1, const uint8_t *xw, int64_t n_tok,
                               float *y, int64_t ldy);
vt_int_gemm_fn vt_int_gemm_of(const vt_cpu *c, const vt_mat *w, int *granule, int *wide_act);
/* *granule: the kernel's rows come in groups of that many (the threads'
 * ranges are split on them); *wide_act: it reads the wide layout (else
 * the activation's plain blocks, as the row kernels). vt_int_pack_wanted: w's kernel wants its rows
 * repacked (vt_cpu_pack): Q8_0, or Q4_0 in ggml's repacked order, in whole
 * groups of 16 rows; Q4_K also in that order. vt_int_packed_bytes: the packed size of `rows` rows
 * of w (a whole number of groups); vt_int_pack: w's rows packed to dst. */
int vt_int_pack_wanted(const vt_cpu *c, const vt_mat *w);
size_t vt_int_packed_bytes(const vt_mat *w, int64_t rows);
void vt_int_pack(const vt_mat *w, uint8_t *dst);
/* Bytes of n_tok tokens of n elements in the wide layout, and the layout
 * written (Q8_0 values, as vt_act_quantize_row rounds them). */
size_t vt_act_wide_bytes(int64_t n_tok, int64_t n);
void vt_act_quantize_wide(const float *x, int64_t n_tok, int64_t n, uint8_t *dst);

/* Between kernels_pool.c and the compute context (kernels_matmul.c): start
 * n threads (n - 1 workers), and stop the started ones. */
int vt_pool_start(vt_pool *p, int n, vt_error *err);
void vt_pool_stop(vt_pool *p, int started);

#endif
