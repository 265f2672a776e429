/* vt op check: the engine's matrix products against ggml_mul_mat on the CPU
 * backend llama.cpp loads here (oracle/op_check.h, oracle/ggml_matmul.h). */
#include "support/vt_test.h"

#include "engine/codec.h"
#include "engine/engine_op.h"
#include "engine/kernels.h" /* VT_ATT_HEADS */
#include "oracle/op_check.h"
#include "common/vt_rng.h"

#include <dlfcn.h>
#include <float.h>
#include <math.h>

static vt_ggml *q;
static vt_ggml_mm *mm;

static void open_oracles(void)
{
    vt_error err;
    vt_error_clear(&err);
    q = vt_ggml_open(NULL, &err);
    cr_assert_not_null(q, "%s", err.msg);
    mm = vt_ggml_mm_open(NULL, 2, &err);
    cr_assert_not_null(mm, "%s", err.msg);
}

static void close_oracles(void)
{
    vt_ggml_mm_free(mm);
    vt_ggml_free(q);
}

Test(ulp, distances_by_hand)
{
    cr_assert_eq(vt_op_ulp_distance(1.0f, 1.0f), 0);
    cr_assert_eq(vt_op_ulp_distance(1.0f, nextafterf(1.0f, 2.0f)), 1);
    cr_assert_eq(vt_op_ulp_distance(nextafterf(1.0f, 0.0f), 1.0f), 1);
    cr_assert_eq(vt_op_ulp_distance(1.0f, 2.0f), 1u << 23, "one binade: 2^23 steps");
    cr_assert_eq(vt_op_ulp_distance(0.0f, -0.0f), 0, "equal numbers");
    cr_assert_eq(vt_op_ulp_distance(-FLT_TRUE_MIN, FLT_TRUE_MIN), 2, "across zero");
    cr_assert_eq(vt_op_ulp_distance(-1.0f, 1.0f), 2ull * 0x3f800000u);
    cr_assert_eq(vt_op_ulp_distance(NAN, NAN), 0);
    cr_assert_eq(vt_op_ulp_distance(NAN, 1.0f), UINT64_MAX);
    cr_assert_eq(vt_op_ulp_distance(0.0f, NAN), UINT64_MAX);
    cr_assert_eq(vt_op_ulp_distance(FLT_MAX, INFINITY), 1);
}

enum { ROWS = 64, COLS = 1024, BATCH = 16 };
static float w[ROWS * COLS], x[BATCH * COLS];

static vt_op_result check(int type, vt_op_rows kind, int64_t n_tok, vt_op_engine_fn engine)
{
    vt_error err;
    vt_error_clear(&err);
    if (kind != VT_OP_ROWS_FIXTURE)
        vt_op_make_rows(kind, w, ROWS, x, BATCH, COLS, 7);
    vt_op_inputs in = { w, x, ROWS, COLS, n_tok };
    vt_op_result r;
    cr_assert_eq(vt_op_check_one(q, mm, engine, type, &in, VT_MATMUL_Q8, 2, VT_GGML_REPACK, &r, &err), 0,
                 "%s", err.msg);
    cr_assert_eq(r.dots, ROWS * n_tok);
    cr_assert_gt(r.max_abs_ref, 0.0, "the products are not all zero");
    return r;
}

/* Every integer-block type: at one token every dot
 * product has ggml's bits, on every row kind, in the layout llama.cpp gives
 * the weight (Q4_0, IQ4_NL, MXFP4 and Q4_K repacked on an AVX2 CPU, Q2_K on
 * an AVX-512 one, the others as stored). At a prefill batch every product has the bits of ggml's batched
 * result or of its result for the same token alone: where those two differ
 * (Q4_K's gemm over full groups of four tokens, IQ4_XS from 8 tokens) the
 * oracle itself depends on the batch, and the engine is the one-token one. */
Test(op, integer_kernels_are_bit_identical_to_ggml, .init = open_oracles, .fini = close_oracles)
{
    vt_test_model f = vt_test_model_make("qwen3", "F32");
    int types[VT_TYPE_COUNT];
    const int n_types = vt_op_check_types(types, VT_TYPE_COUNT);
    __builtin_cpu_init();
    int64_t shape_differs = 0, n_int = 0;
    for (int ti = 0; ti < n_types; ti++) {
        const int t = types[ti];
        if (vt_op_check_is_float(t))
            continue;
        n_int++;
        const int repacked = ((t == VT_TYPE_Q4_K || t == VT_TYPE_Q4_0 || t == VT_TYPE_IQ4_NL || t == VT_TYPE_MXFP4) &&
                              __builtin_cpu_supports("avx2")) ||
                             (t == VT_TYPE_Q2_K && __builtin_cpu_supports("avx512f"));
        for (int k = 0; k < VT_OP_ROW_KINDS; k++) {
            if (k == VT_OP_ROWS_FIXTURE) {
                vt_error err;
                vt_error_clear(&err);
                cr_assert_eq(vt_op_fixture_rows(f.path, w, ROWS, x, BATCH, COLS, &err), 0, "%s", err.msg);
            }
            for (int64_t n = 1; n <= BATCH; n += BATCH - 1) {
                vt_op_result r = check(t, (vt_op_rows)k, n, vt_engine_matmul);
                const char *name = vt_codec_by_type(t)->name, *kind = vt_op_rows_name((vt_op_rows)k);
                cr_assert_eq(r.repacked, repacked, "%s", name);
                if (n == 1)
                    cr_assert(r.identical == r.dots && r.max_ulp == 0, "%s, %s rows, 1 token: %lld of %lld identical, "
                              "max %llu ULP", name, kind, (long long)r.identical, (long long)r.dots,
                              (unsigned long long)r.max_ulp);
                cr_assert_eq(r.identical_single, r.dots, "%s, %s rows, %lld tokens: %lld of %lld identical to ggml's "
                             "one-token result", name, kind, (long long)n, (long long)r.identical_single,
                             (long long)r.dots);
                cr_assert_eq(r.identical_either, r.dots);
                shape_differs += r.oracle_shape_differs;
            }
        }
    }
    cr_assert_eq(n_int, 22, "every integer-block type --types all covers");
    cr_log_info("ggml's batched and one-token results differ in %lld products", (long long)shape_differs);
    vt_test_model_remove(&f);
}

/* The adversarial activations land on .5 after Q8_0 scaling: there ggml's
 * x86 quantizer (round to nearest even) and its reference (half away from
 * zero) part, and the engine follows the former. */
Test(op, adversarial_rows_hold_exact_ties)
{
    vt_op_make_rows(VT_OP_ROWS_ADVERSARIAL, w, ROWS, x, BATCH, COLS, 7);
    int ties = 0;
    for (int b = 0; b < BATCH * COLS / 32; b++) {
        float amax = 0.0f;
        for (int j = 0; j < 32; j++)
            amax = fmaxf(amax, fabsf(x[b * 32 + j]));
        for (int j = 0; j < 32 && amax > 0.0f; j++) {
            float v = x[b * 32 + j] * (127.0f / amax);
            ties += v != truncf(v) && v - truncf(v) == copysignf(0.5f, v);
        }
    }
    cr_assert_gt(ties, 100, "%d exact ties", ties);
}

/* A check that cannot fail is no check: an engine off by one ULP in one
 * product is caught, with the distance. */
static int off_by_one(int type, const void *wq, int64_t rows, int64_t cols, const float *xs, int64_t n_tok,
                      vt_matmul_mode mode, int n_threads, float *y, vt_error *err)
{
    int rc = vt_engine_matmul(type, wq, rows, cols, xs, n_tok, mode, n_threads, y, err);
    y[rows * n_tok / 2] = nextafterf(y[rows * n_tok / 2], INFINITY);
    return rc;
}

Test(op, an_engine_one_ulp_off_is_caught, .init = open_oracles, .fini = close_oracles)
{
    vt_op_result r = check(VT_TYPE_Q8_0, VT_OP_ROWS_RANDOM, BATCH, off_by_one);
    cr_assert_eq(r.identical, r.dots - 1);
    cr_assert_eq(r.max_ulp, 1);
    cr_assert_gt(r.max_abs, 0.0);
    cr_assert(r.max_ulp_of_scale > 0.0 && r.max_ulp_of_scale <= 1.0, "%g", r.max_ulp_of_scale);
}

/* The float types' measure: their products differ from ggml's by rounding
 * only (measured: at most 3 ULP of the largest product, 8 is the gate), and
 * an engine 1e-5 off in one product is far outside it. */
static int off_by_1e5(int type, const void *wq, int64_t rows, int64_t cols, const float *xs, int64_t n_tok,
                      vt_matmul_mode mode, int n_threads, float *y, vt_error *err)
{
    int rc = vt_engine_matmul(type, wq, rows, cols, xs, n_tok, mode, n_threads, y, err);
    float m = 0.0f;
    int64_t at = 0;
    for (int64_t i = 0; i < rows * n_tok; i++)
        if (fabsf(y[i]) > m) {
            m = fabsf(y[i]);
            at = i;
        }
    y[at] *= 1.00001f;
    return rc;
}

Test(op, float_types_are_within_rounding_and_a_real_error_is_not, .init = open_oracles, .fini = close_oracles)
{
    const int types[] = { VT_TYPE_F32, VT_TYPE_F16, VT_TYPE_BF16 };
    for (size_t ti = 0; ti < 3; ti++)
        for (int64_t n = 1; n <= BATCH; n += BATCH - 1) {
            vt_op_result r = check(types[ti], VT_OP_ROWS_RANDOM, n, vt_engine_matmul);
            cr_assert_leq(r.max_ulp_of_scale, 8.0, "%s, %lld tokens: %g ULP of the scale",
                          vt_codec_by_type(types[ti])->name, (long long)n, r.max_ulp_of_scale);
            r = check(types[ti], VT_OP_ROWS_RANDOM, n, off_by_1e5);
            cr_assert_gt(r.max_ulp_of_scale, 40.0, "%s: a 1e-5 error is %g ULP of the scale",
                         vt_codec_by_type(types[ti])->name, r.max_ulp_of_scale);
        }
}

/* Where ggml repacks a type (Q4_0 on x86 with AVX2) the check says so, and
 * compares the plain layout too. */
Test(op, repacked_layouts_are_reported, .init = open_oracles, .fini = close_oracles)
{
    vt_op_make_rows(VT_OP_ROWS_RANDOM, w, ROWS, x, BATCH, COLS, 7);
    vt_op_inputs in = { w, x, ROWS, COLS, 1 };
    vt_op_result r;
    vt_error err;
    vt_error_clear(&err);
    cr_assert_eq(vt_op_check_one(q, mm, vt_engine_matmul, VT_TYPE_Q4_0, &in, VT_MATMUL_Q8, 2, VT_GGML_REPACK,
                                 &r, &err), 0, "%s", err.msg);
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2"))
        cr_assert_eq(r.repacked, 1, "ggml repacks Q4_0 on an AVX2 CPU");
    cr_assert_eq(vt_op_check_one(q, mm, vt_engine_matmul, VT_TYPE_Q4_0, &in, VT_MATMUL_Q8, 2, VT_GGML_PLAIN,
                                 &r, &err), 0, "%s", err.msg);
    cr_assert_eq(r.repacked, 0);
    cr_assert_eq(r.dots, ROWS);
}

Test(types, all_covers_the_float_types_and_every_engine_dot_type)
{
    int t[VT_TYPE_COUNT];
    int n = vt_op_check_types(t, VT_TYPE_COUNT);
    int seen_f32 = 0, seen_bf16 = 0, seen_q8_0 = 0, seen_q4_k = 0, seen_iq4_xs = 0;
    for (int i = 0; i < n; i++) {
        seen_f32 += t[i] == VT_TYPE_F32;
        seen_bf16 += t[i] == VT_TYPE_BF16;
        seen_q8_0 += t[i] == VT_TYPE_Q8_0;
        seen_q4_k += t[i] == VT_TYPE_Q4_K;
        seen_iq4_xs += t[i] == VT_TYPE_IQ4_XS;
        cr_assert_neq(t[i], VT_TYPE_Q8_K, "Q8_K has no ggml kernel as a weight");
    }
    cr_assert_eq(seen_f32 + seen_bf16 + seen_q8_0 + seen_q4_k + seen_iq4_xs, 5);
    cr_assert_eq(vt_op_check_is_float(VT_TYPE_F16), 1);
    cr_assert_eq(vt_op_check_is_float(VT_TYPE_Q8_0), 0);
}

/* Each row's activation type is the one ggml's CPU backend pairs with that
 * weight (vec_dot_type), and a row is a matrix weight exactly where the
 * backend has a dot product for it. */
Test(types, each_codec_rows_dot_type_is_the_cpu_backends, .init = open_oracles, .fini = close_oracles)
{
    static const int ggml_id[] = { [VT_ACT_F32] = VT_TYPE_F32, [VT_ACT_F16] = VT_TYPE_F16,
                                   [VT_ACT_BF16] = VT_TYPE_BF16, [VT_ACT_Q8_0] = VT_TYPE_Q8_0,
                                   [VT_ACT_Q8_1] = VT_TYPE_Q8_1, [VT_ACT_Q8_K] = VT_TYPE_Q8_K };
    int weights = 0;
    for (int i = 0; i < vt_codec_count(); i++) {
        const vt_codec *c = vt_codec_at(i);
        if (!c->decode_f32)
            continue;
        int vdt = vt_ggml_mm_vec_dot_type(mm, (int)c->type);
        cr_assert_eq(c->matrix_weight, vdt >= 0, "%s: matrix weight %d, ggml vec_dot_type %d", c->name,
                     c->matrix_weight, vdt);
        if (!c->matrix_weight)
            continue;
        weights++;
        cr_assert_eq(ggml_id[c->act], vdt, "%s: vt pairs it with %s, ggml with type %d", c->name,
                     vt_act_type_name(c->act), vdt);
    }
    cr_assert_eq(weights, 25, "every decodable type but Q8_K");
}

typedef struct env {
    char dir[64];
    char cmd_out[1 << 16];
    char cmd_err[4096];
} env;

Test(cli, a_bit_identical_type_passes_and_bad_options_are_refused)
{
    static env e;
    snprintf(e.dir, sizeof e.dir, "/tmp/vt-op-XXXXXX");
    cr_assert_not_null(mkdtemp(e.dir));
    cr_assert_eq(VT_TEST_SH(&e, "'%s' op check --types Q8_0 --kinds random,adversarial", VT_BIN), 0, "%s%s",
                 e.cmd_out, e.cmd_err);
    cr_assert(strstr(e.cmd_out, "1 of 1 types meet the standard"), "%s", e.cmd_out);
    cr_assert_eq(VT_TEST_SH(&e, "'%s' op check --types Q8_0 --kinds adversarial --json", VT_BIN), 0, "%s",
                 e.cmd_err);
    cJSON *j = cJSON_Parse(e.cmd_out);
    cr_assert_not_null(j, "not JSON: %s", e.cmd_out);
    cr_assert_str_eq(vt_test_get(j, "schema")->valuestring, "vt.op-check/1");
    const cJSON *res = vt_test_get(j, "results");
    cr_assert_eq(cJSON_GetArraySize(res), 2, "one token and a batch");
    const cJSON *r;
    cJSON_ArrayForEach(r, res) {
        cr_assert_eq(vt_test_get(r, "identical")->valuedouble, vt_test_get(r, "dots")->valuedouble);
        cr_assert(cJSON_IsTrue(vt_test_get(r, "ok")));
    }
    cr_assert_eq(vt_test_get(j, "failed_types")->valuedouble, 0);
    cJSON_Delete(j);

    const char *bad[] = {
        "--types Q8_0",                                 /* fixture rows need --model */
        "--types Q8_9 --kinds random",
        "--types Q8_0, --kinds random",
        "--types Q8_0,Q8_0 --kinds random",
        "--types Q8_K --kinds random",
        "--kinds random,, --types Q8_0",
        "--kinds tidy --types Q8_0",
        "--rows 12 --kinds random",
        "--cols 100 --kinds random",
        "--batch 1 --kinds random",
        "--matmul fast --kinds random",
        "--kinds random --bogus 1",
        "--kinds",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert_eq(VT_TEST_SH(&e, "'%s' op check %s", VT_BIN, bad[i]), 2, "%s: %s", bad[i], e.cmd_out);
        cr_assert(strncmp(e.cmd_err, "vt op check: ", 13) == 0 && strchr(e.cmd_err, '\n') ==
                  e.cmd_err + strlen(e.cmd_err) - 1, "%s: one line: %s", bad[i], e.cmd_err);
        cr_assert_eq(e.cmd_out[0], '\0', "%s: nothing on stdout", bad[i]);
    }
    cr_assert_eq(VT_TEST_SH(&e, "'%s' op check --types Q8_0 --kinds fixture --model '%s/none.gguf'", VT_BIN,
                            e.dir), 2);
    cr_assert(strstr(e.cmd_err, "none.gguf"), "%s", e.cmd_err);
    cr_assert_eq(VT_TEST_SH(&e, "'%s' op frob", VT_BIN), 2);
    cr_assert_eq(VT_TEST_SH(&e, "'%s' op check --help", VT_BIN), 0);
    cr_assert(strstr(e.cmd_out, "example:"), "%s", e.cmd_out);
    char p[128];
    snprintf(p, sizeof p, "%s/.stdout", e.dir);
    unlink(p);
    snprintf(p, sizeof p, "%s/.stderr", e.dir);
    unlink(p);
    rmdir(e.dir);
}

/* ---------------------------------------------------------------------
 * The arithmetic around the products: the engine's against the functions
 * the CPU backend llama.cpp loads exports (ggml_vec_dot_f32,
 * ggml_vec_dot_bf16, ggml_vec_soft_max_f32, ggml_vec_swiglu_f32,
 * ggml_vec_silu_f32: qwen35's conv output and output gate), bit for
 * bit, on every kernel set of the engine. The engine follows the AVX-512
 * variant without BF16 instructions (icelake); another variant is skipped,
 * saying which.
 * --------------------------------------------------------------------- */

typedef void (*ggml_dot_f32_fn)(int n, float *s, size_t bs, const float *x, size_t bx, const float *y, size_t by,
                                int nrc);
typedef void (*ggml_dot_bf16_fn)(int n, float *s, size_t bs, const uint16_t *x, size_t bx, const uint16_t *y,
                                 size_t by, int nrc);
typedef double (*ggml_soft_max_fn)(int n, float *y, const float *x, float max);
typedef void (*ggml_swiglu_fn)(int n, float *y, const float *x, const float *g);
typedef void (*ggml_silu_fn)(int n, float *y, const float *x);

static void *cpu_symbol(void *h, const char *name)
{
    void *p = dlsym(h, name);
    cr_assert_not_null(p, "the CPU backend exports %s", name);
    return p;
}

/* Values a forward pass meets, and the edges of expf16: zero, tiny, exact
 * multiples of ln 2 / 2 (ties for n), the subnormal and flush ranges, the
 * overflow range, large scores. */
static float elementwise_value(vt_rng *r, int i)
{
    static const float edges[] = { 0.0f, -0.0f, 1e-30f, -1e-30f, 0.34657359f, -0.34657359f, 1.03972077f,
                                   -87.5f, -88.7f, -95.0f, -103.9f, -104.5f, -150.0f, -200.0f, 88.0f, 88.8f,
                                   89.5f, -89.5f, 120.0f, -1e4f, 1e4f };
    if (i % 7 == 3)
        return edges[vt_rng_next(r) % (sizeof edges / sizeof edges[0])];
    const double scale = (i % 3 == 0) ? 1e-3 : (i % 3 == 1) ? 1.0 : 30.0;
    return (float)(vt_rng_normal(r) * scale);
}

static uint16_t bf16_bits(float f) /* round to nearest even, as the engine's activation rounding */
{
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static float bf16_value(uint16_t b)
{
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

Test(op, elementwise_ops_are_bit_identical_to_ggml, .init = open_oracles, .fini = close_oracles)
{
    const char *variant = vt_ggml_mm_cpu_backend(mm);
    if (!strstr(variant, "libggml-cpu-icelake.so"))
        cr_skip_test("the engine follows ggml's icelake CPU variant; this machine loads %s", variant);
    void *h = dlopen(variant, RTLD_NOW | RTLD_NOLOAD);
    cr_assert_not_null(h, "%s", dlerror());
    ggml_dot_f32_fn g_dot = (ggml_dot_f32_fn)cpu_symbol(h, "ggml_vec_dot_f32");
    ggml_dot_bf16_fn g_dot_bf16 = (ggml_dot_bf16_fn)cpu_symbol(h, "ggml_vec_dot_bf16");
    ggml_soft_max_fn g_soft_max = (ggml_soft_max_fn)cpu_symbol(h, "ggml_vec_soft_max_f32");
    ggml_swiglu_fn g_swiglu = (ggml_swiglu_fn)cpu_symbol(h, "ggml_vec_swiglu_f32");
    ggml_silu_fn g_silu = (ggml_silu_fn)cpu_symbol(h, "ggml_vec_silu_f32");

    enum { N = 3104 }; /* the longest row, 3100, padded to 16 for the softmax */
    static float a[N], b[N], e[N], gg[N], y[N];
    static float sx[N];
    static uint16_t ab[N], bb[N];
    int64_t libm_differs = 0, unfused_differs = 0, libm_silu_differs = 0;
    static const int lengths[] = { 1, 15, 16, 17, 31, 32, 48, 63, 64, 65, 127, 128, 200, 1024, 1031, 3072, 3100 };
    const char *isas[] = { "c", "sse2", "avx2", "avx512f", "avx512vnni" };
    int64_t compared = 0;
    for (size_t ii = 0; ii < sizeof isas / sizeof isas[0]; ii++) {
        setenv("VT_ENGINE_ISA", isas[ii], 1); /* one the CPU lacks falls back */
        for (size_t li = 0; li < sizeof lengths / sizeof lengths[0]; li++)
            for (uint64_t seed = 1; seed <= 3; seed++) {
                const int n = lengths[li];
                vt_rng r;
                vt_rng_seed(&r, seed * 1000 + (uint64_t)n);
                for (int i = 0; i < n; i++) {
                    a[i] = (float)vt_rng_normal(&r);
                    b[i] = (float)vt_rng_normal(&r) * (i % 5 == 0 ? 1e3f : 1.0f);
                    ab[i] = bf16_bits(a[i]);
                    bb[i] = bf16_bits(b[i]);
                }
                float want, got;
                g_dot(n, &want, 0, a, 0, b, 0, 1);
                got = vt_engine_dot_f32(a, b, n);
                cr_assert(memcmp(&want, &got, 4) == 0, "%s: dot_f32 of %d: ggml %a, engine %a", isas[ii], n,
                          (double)want, (double)got);
                /* ... and the order tells sums apart: 16 lanes of separate
                 * products and sums (the engine's before) differ somewhere. */
                float l[16] = { 0 };
                for (int i = 0; i < n; i++)
                    l[i % 16] += a[i] * b[i];
                for (int k = 0; k < 8; k++)
                    l[k] += l[k + 8];
                for (int k = 0; k < 4; k++)
                    l[k] += l[k + 4];
                const float unfused = (l[0] + l[2]) + (l[1] + l[3]);
                unfused_differs += memcmp(&unfused, &want, 4) != 0;
                for (int i = 0; i < n; i++) {
                    e[i] = bf16_value(ab[i]);
                    y[i] = bf16_value(bb[i]);
                }
                g_dot_bf16(n, &want, 0, ab, 0, bb, 0, 1);
                got = vt_engine_dot_bf16(e, y, n);
                cr_assert(memcmp(&want, &got, 4) == 0, "%s: dot_bf16 of %d: ggml %a, engine %a", isas[ii], n,
                          (double)want, (double)got);

                /* Softmax rows: scores below their maximum, a row of the cache
                 * (a multiple of 16; masked positions are -inf there). */
                const int m = (n + 15) / 16 * 16;
                float max = -INFINITY;
                for (int i = 0; i < m; i++) {
                    e[i] = i < n ? elementwise_value(&r, i) : -INFINITY;
                    max = fmaxf(max, e[i]);
                }
                memcpy(sx, e, (size_t)m * 4);
                const double want_sum = g_soft_max(m, y, e, max);
                const double got_sum = vt_engine_softmax_exp(e, n, max);
                cr_assert(memcmp(&want_sum, &got_sum, 8) == 0, "%s: softmax of %d: sum %a vs %a", isas[ii], n,
                          want_sum, got_sum);
                cr_assert(memcmp(y, e, (size_t)n * 4) == 0, "%s: softmax of %d: exponentials differ", isas[ii], n);
                /* The inputs tell exponentials apart: the C library's expf
                 * (what the engine used before) gives other bits somewhere. */
                for (int i = 0; i < n; i++) {
                    const float c = expf(sx[i] - max);
                    libm_differs += memcmp(&c, &y[i], 4) != 0;
                }
                for (int i = 0; i < n; i++) {
                    gg[i] = elementwise_value(&r, i);
                    b[i] = (float)vt_rng_normal(&r);
                }
                g_swiglu(n, y, gg, b);
                vt_engine_swiglu(gg, b, n);
                cr_assert(memcmp(y, gg, (size_t)n * 4) == 0, "%s: swiglu of %d differs", isas[ii], n);
                for (int i = 0; i < n; i++)
                    gg[i] = elementwise_value(&r, i);
                memcpy(sx, gg, (size_t)n * 4);
                g_silu(n, y, gg);
                vt_engine_silu(gg, n);
                cr_assert(memcmp(y, gg, (size_t)n * 4) == 0, "%s: silu of %d differs", isas[ii], n);
                for (int i = 0; i < n; i++) { /* x / (1 + expf(-x)), the engine's silu before */
                    const float c = sx[i] / (1.0f + expf(-sx[i]));
                    libm_silu_differs += memcmp(&c, &y[i], 4) != 0;
                }
                compared++;
            }
    }
    unsetenv("VT_ENGINE_ISA");
    cr_assert_eq(compared, 5 * 17 * 3);
    cr_assert_gt(libm_differs, 0, "the inputs tell the C library's expf from ggml's");
    cr_assert_gt(unfused_differs, 0, "the inputs tell another summation order from ggml's");
    cr_assert_gt(libm_silu_differs, 0, "the inputs tell a silu on the C library's expf from ggml's");
    dlclose(h);
}


/* The matrix kernels (kernels_intdot.c, the avx512vnni set) tile rows and
 * tokens, and read Q8_0, Q4_0 and Q4_K repacked in groups of 16 rows (and
 * BF16 rows four at a time, the avx512f set's); every tile
 * shape and tail (rows not a multiple of the tile or the group, tokens not
 * a multiple of the tile, an odd token's empty partner, the 64-token chunk
 * edge) must give the products the row-by-row integer kernels give, with 1
 * and 2 threads. Weights: random blocks, every byte value (int8 -128 too). */
static void random_blocks(int type, uint8_t *w, int64_t rows, int64_t cols, vt_rng *r)
{
    const vt_codec *c = vt_codec_by_type(type);
    const size_t bb = c->block_bytes;
    if (type == VT_TYPE_BF16) {
        for (int64_t i = 0; i < rows * cols; i++) {
            const uint16_t v = vt_f32_to_bf16((float)vt_rng_normal(r));
            w[2 * i] = (uint8_t)(v & 0xff);
            w[2 * i + 1] = (uint8_t)(v >> 8);
        }
        return;
    }
    const int n_f16 = type == VT_TYPE_Q4_K ? 2 : 1; /* d (and dmin) */
    for (int64_t b = 0; b < rows * cols / c->block_elems; b++) {
        for (int h = 0; h < n_f16; h++) {
            const uint16_t d = vt_f32_to_f16((float)vt_rng_normal(r) * 0.01f);
            w[b * bb + 2 * h] = (uint8_t)(d & 0xff);
            w[b * bb + 2 * h + 1] = (uint8_t)(d >> 8);
        }
        for (size_t j = 2 * (size_t)n_f16; j < bb; j++)
            w[b * bb + j] = (uint8_t)(vt_rng_next(r) >> 56);
    }
}

Test(op, matrix_kernels_equal_the_row_kernels_at_every_tile_shape)
{
    if (!__builtin_cpu_supports("avx512vnni") || !__builtin_cpu_supports("avx512bw") ||
        !__builtin_cpu_supports("avx512vl"))
        cr_skip_test("this CPU has no AVX-512 VNNI: no matrix kernels to compare");
    enum { MAX_COLS = 512, MAX_ROWS = 48, MAX_TOK = 67 };
    static uint8_t w[MAX_ROWS * MAX_COLS / 32 * 34];
    static float x[MAX_TOK * MAX_COLS], want[MAX_ROWS * MAX_TOK], got[MAX_ROWS * MAX_TOK];
    vt_rng r;
    vt_rng_seed(&r, 77);
    /* BF16 at 101 columns: the tail after the steps of 32 too */
    static const int types[] = { VT_TYPE_Q8_0, VT_TYPE_Q4_0, VT_TYPE_Q4_K, VT_TYPE_BF16 };
    static const int type_cols[] = { 96, 96, 512, 101 };
    static const int rows[] = { 1, 3, 4, 5, 8, 13, 16, 48 };
    static const int toks[] = { 1, 2, 3, 4, 5, 7, 8, 9, 64, 65, 67 };
    vt_error err;
    int compared = 0;
    for (size_t ty = 0; ty < sizeof types / sizeof types[0]; ty++) {
        const int COLS_T = type_cols[ty];
        random_blocks(types[ty], w, MAX_ROWS, COLS_T, &r);
        for (int i = 0; i < MAX_TOK * COLS_T; i++)
            x[i] = (i / 32) % 7 == 3 ? 0.0f : (float)vt_rng_normal(&r); /* some all-zero blocks */
        for (size_t ri = 0; ri < sizeof rows / sizeof rows[0]; ri++)
            for (size_t ti = 0; ti < sizeof toks / sizeof toks[0]; ti++)
                for (int threads = 1; threads <= 2; threads++) {
                    const size_t n = (size_t)rows[ri] * (size_t)toks[ti];
                    vt_error_clear(&err);
                    setenv("VT_ENGINE_ISA", "avx2", 1); /* the row kernels */
                    cr_assert_eq(vt_engine_matmul(types[ty], w, rows[ri], COLS_T, x, toks[ti], VT_MATMUL_Q8,
                                                  threads, want, &err), 0, "%s", err.msg);
                    setenv("VT_ENGINE_ISA", "avx512vnni", 1);
                    cr_assert_str_eq(vt_engine_isa(), "avx512vnni");
                    memset(got, 0xff, sizeof got);
                    cr_assert_eq(vt_engine_matmul(types[ty], w, rows[ri], COLS_T, x, toks[ti], VT_MATMUL_Q8,
                                                  threads, got, &err), 0, "%s", err.msg);
                    cr_assert_eq(memcmp(want, got, n * sizeof(float)), 0, "%s: %d rows, %d tokens, %d threads differ",
                                 vt_codec_by_type(types[ty])->name, rows[ri], toks[ti], threads);
                    compared++;
                }
    }
    unsetenv("VT_ENGINE_ISA");
    cr_assert_eq(compared, 4 * 8 * 11 * 2);
}

/* Attention's order (kernels_kv.c), written out one element at a time: the
 * scores by the F32 dot, the scale, the softmax exponentials and one
 * multiply by 1/sum, V p into 64 accumulator rows (row j mod 64 takes key
 * j, fused), then per output the pairs of dot()'s 64 partials and tree16.
 * The engine computes the reduction sixteen outputs at a time; any other
 * order of the same additions gives other bits somewhere on these inputs. */
static void attention_reference(const float *q, const float *k, const float *v, int n_keys, int hd, float *out)
{
    static float scores[256], acc[64][128], l[16];
    for (int j = 0; j < n_keys; j++)
        scores[j] = vt_engine_dot_f32(k + (size_t)j * hd, q, hd);
    const float scale = 1.0f / sqrtf((float)hd);
    float max = -INFINITY;
    for (int j = 0; j < n_keys; j++) {
        scores[j] *= scale;
        max = fmaxf(max, scores[j]);
    }
    const float inv = (float)(1.0 / vt_engine_softmax_exp(scores, n_keys, max));
    memset(acc, 0, sizeof acc);
    for (int j = 0; j < n_keys; j++)
        for (int d = 0; d < hd; d++)
            acc[j & 63][d] = fmaf(v[(size_t)j * hd + d], scores[j] * inv, acc[j & 63][d]);
    for (int d = 0; d < hd; d++) {
        for (int i = 0; i < 16; i++)
            l[i] = (acc[i][d] + acc[i + 32][d]) + (acc[i + 16][d] + acc[i + 48][d]);
        for (int i = 0; i < 8; i++)
            l[i] += l[i + 8];
        for (int i = 0; i < 4; i++)
            l[i] += l[i + 4];
        l[0] += l[2];
        l[1] += l[3];
        out[d] = l[0] + l[1];
    }
}

Test(op, attention_keeps_its_reduction_order_at_every_kernel_set)
{
    static const int hds[] = { 16, 100, 128 }, keys[] = { 1, 5, 63, 64, 65, 200 };
    /* query heads sharing the key/value head: one, a pair, a pair and one
     * (the values' kernels take two at a time), more than the VT_ATT_HEADS
     * computed together and an odd number past them */
    static const int heads[] = { 1, 2, 3, VT_ATT_HEADS + 2, VT_ATT_HEADS + 1 };
    enum { MAX_HEADS = VT_ATT_HEADS + 2, N_HEADS = sizeof heads / sizeof heads[0] };
    const char *isas[] = { "c", "sse2", "avx2", "avx512f" };
    static float q[MAX_HEADS * 128], k[200 * 128], v[200 * 128], want[MAX_HEADS * 128], got[MAX_HEADS * 128];
    vt_rng r;
    vt_rng_seed(&r, 91);
    vt_error err;
    int compared = 0;
    for (size_t ii = 0; ii < sizeof isas / sizeof isas[0]; ii++) {
        setenv("VT_ENGINE_ISA", isas[ii], 1);
        if (strcmp(vt_engine_isa(), isas[ii]) != 0)
            continue; /* this CPU has not got it */
        for (size_t hi = 0; hi < sizeof hds / sizeof hds[0]; hi++)
            for (size_t ki = 0; ki < sizeof keys / sizeof keys[0]; ki++)
                for (int threads = 1; threads <= 2; threads++) {
                    const int hd = hds[hi], n = keys[ki], nh = heads[(hi + ki + (size_t)threads) % N_HEADS];
                    for (int i = 0; i < hd * nh; i++)
                        q[i] = (float)vt_rng_normal(&r);
                    for (int i = 0; i < n * hd; i++) {
                        k[i] = (float)vt_rng_normal(&r);
                        v[i] = (float)vt_rng_normal(&r) * (i % 7 == 0 ? 1000.0f : 1.0f); /* cancellation */
                    }
                    for (int h = 0; h < nh; h++)
                        attention_reference(q + h * hd, k, v, n, hd, want + h * hd);
                    memset(got, 0xff, sizeof got);
                    vt_error_clear(&err);
                    cr_assert_eq(vt_engine_attention(q, k, v, n, hd, nh, threads, got, &err), 0, "%s", err.msg);
                    cr_assert_eq(memcmp(want, got, (size_t)(hd * nh) * sizeof(float)), 0,
                                 "%s: %d keys of %d, %d heads, %d threads: attention differs", isas[ii], n, hd, nh,
                                 threads);
                    compared++;
                }
    }
    unsetenv("VT_ENGINE_ISA");
    cr_assert_geq(compared, 2 * 3 * 6 * 2); /* c and sse2 run everywhere (x86-64) */
    cr_assert_eq(vt_engine_attention(q, k, v, 0, 16, 1, 1, got, &err), VT_EINPUT);
    cr_assert_eq(vt_engine_attention(q, k, v, 1, 16, 0, 1, got, &err), VT_EINPUT);
}
