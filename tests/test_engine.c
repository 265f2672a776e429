/* The engine: FP8/F16 converters, the Qwen3 forward pass against a naive
 * double-precision reference written here, determinism (repeats, threads,
 * eager vs production), matmul modes, KV cache dtypes, capacity and model
 * validation errors. Models are generated here with the GGUF writer (and
 * ggml's quantizer for quantized weights). */
#include <criterion/criterion.h>

#include "common/vt_rng.h"
#include "engine/codec.h"
#include "engine/codec_intdot.h"
#include "engine/kernels_impl.h"
#include "engine/gguf_file.h"
#include "engine/qwen3.h"
#include "engine/runner.h"
#include "oracle/codec_check.h"
#include "oracle/ggml_codec.h"
#include "oracle/ggml_matmul.h"
#include "tests/support/vt_test.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

/* ---------------------------------------------------------------------
 * FP8 E4M3
 * --------------------------------------------------------------------- */

Test(fp8, every_code_decodes_and_round_trips)
{
    for (int c = 0; c < 256; c++) {
        float v = vt_fp8_e4m3_to_f32((uint8_t)c);
        if ((c & 0x7f) == 0x7f) {
            cr_assert(isnan(v), "code 0x%02x should be NaN", c);
            cr_assert_eq(!!signbit(v), !!(c & 0x80));
        } else {
            cr_assert(isfinite(v), "code 0x%02x", c);
            cr_assert_leq(fabsf(v), 448.0f);
        }
        cr_assert_eq(vt_fp8_e4m3_from_f32(v), c, "code 0x%02x -> %g -> 0x%02x", c, (double)v,
                     vt_fp8_e4m3_from_f32(v));
    }
    /* A few values by hand: the format's landmarks. */
    cr_assert_eq(vt_fp8_e4m3_to_f32(0x7e), 448.0f);
    cr_assert_eq(vt_fp8_e4m3_to_f32(0x01), 0x1p-9f);    /* smallest subnormal */
    cr_assert_eq(vt_fp8_e4m3_to_f32(0x07), 7 * 0x1p-9f); /* largest subnormal */
    cr_assert_eq(vt_fp8_e4m3_to_f32(0x08), 0x1p-6f);    /* smallest normal */
    cr_assert_eq(vt_fp8_e4m3_to_f32(0x38), 1.0f);
    cr_assert_eq(vt_fp8_e4m3_to_f32(0xb8), -1.0f);
    cr_assert_eq(vt_test_bits_of(vt_fp8_e4m3_to_f32(0x80)), 0x80000000u); /* -0 */
}

Test(fp8, saturates_and_keeps_nan)
{
    const float big[] = { 448.0f, 448.5f, 463.99f, 464.0f, 464.01f, 480.0f, 1e6f, 3.4e38f, INFINITY };
    for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) {
        cr_assert_eq(vt_fp8_e4m3_from_f32(big[i]), 0x7e, "%g", (double)big[i]);
        cr_assert_eq(vt_fp8_e4m3_from_f32(-big[i]), 0xfe, "%g", (double)-big[i]);
    }
    cr_assert_eq(vt_fp8_e4m3_from_f32(NAN), 0x7f);
    cr_assert_eq(vt_fp8_e4m3_from_f32(-NAN), 0xff);
    cr_assert_eq(vt_fp8_e4m3_from_f32(vt_test_float_of(0x7f800001u)), 0x7f); /* signalling NaN */
    cr_assert_eq(vt_fp8_e4m3_from_f32(0.0f), 0x00);
    cr_assert_eq(vt_fp8_e4m3_from_f32(-0.0f), 0x80);
    cr_assert_eq(vt_fp8_e4m3_from_f32(1e-30f), 0x00);
    cr_assert_eq(vt_fp8_e4m3_from_f32(-1e-40f), 0x80); /* F32 subnormal */
}

Test(fp8, ties_round_to_even_and_neighbours_to_nearest)
{
    /* Between each pair of adjacent finite codes (0 .. 448), the midpoint
     * goes to the even code and its float neighbours to the nearer one. */
    for (int c = 0; c < 0x7e; c++) {
        float lo = vt_fp8_e4m3_to_f32((uint8_t)c), hi = vt_fp8_e4m3_to_f32((uint8_t)(c + 1));
        float mid = (lo + hi) / 2; /* exact: both have few significant bits */
        cr_assert_eq((double)mid, ((double)lo + (double)hi) / 2);
        int even = (c & 1) ? c + 1 : c;
        for (int s = 0; s < 2; s++) {
            float sign = s ? -1.0f : 1.0f;
            uint8_t sb = s ? 0x80 : 0;
            cr_assert_eq(vt_fp8_e4m3_from_f32(sign * mid), (uint8_t)(even | sb), "tie %g",
                         (double)(sign * mid));
            cr_assert_eq(vt_fp8_e4m3_from_f32(sign * nextafterf(mid, 0.0f)), (uint8_t)(c | sb));
            cr_assert_eq(vt_fp8_e4m3_from_f32(sign * nextafterf(mid, INFINITY)),
                         (uint8_t)((c + 1) | sb));
        }
    }
}

/* Brute force: the nearest finite code by distance, ties to the even code. */
static uint8_t fp8_brute(float x)
{
    if (isnan(x))
        return signbit(x) ? 0xff : 0x7f;
    uint8_t sign = signbit(x) ? 0x80 : 0;
    double a = fabs((double)x);
    if (a >= 448.0)
        return sign | 0x7e;
    int best = 0;
    double best_d = INFINITY;
    for (int c = 0; c <= 0x7e; c++) {
        double d = fabs((double)vt_fp8_e4m3_to_f32((uint8_t)c) - a);
        if (d < best_d || (d == best_d && (c & 1) == 0 && (best & 1))) {
            best = c;
            best_d = d;
        }
    }
    return (uint8_t)(sign | best);
}

Test(fp8, matches_brute_force_nearest_on_a_sweep_of_floats)
{
    /* Every 4099th bit pattern: all exponents, many mantissas, both signs. */
    for (uint64_t u = 0; u <= 0xffffffffu; u += 4099) {
        float x = vt_test_float_of((uint32_t)u);
        cr_assert_eq(vt_fp8_e4m3_from_f32(x), fp8_brute(x), "x = %a (0x%08x)", (double)x,
                     (unsigned)u);
    }
}

/* ---------------------------------------------------------------------
 * RMSNorm's mean from a sum in another order (mean_of_any_order_sum, the
 * GPU's stand-in for the serial double sum)
 * --------------------------------------------------------------------- */

static double serial_sum(const float *a, int64_t n)
{
    double s = 0.0;
    for (int64_t i = 0; i < n; i++)
        s += (double)a[i];
    return s;
}

/* The GPU's order: 256 threads striding, a butterfly over each warp of 32,
 * then the eight warps' sums in turn. */
static double gpu_order_sum(const float *a, int64_t n)
{
    double part[256] = { 0 };
    for (int t = 0; t < 256; t++)
        for (int64_t i = t; i < n; i += 256)
            part[t] += (double)a[i];
    for (int o = 16; o; o >>= 1) {
        double next[256];
        for (int t = 0; t < 256; t++)
            next[t] = part[t] + part[t ^ o];
        memcpy(part, next, sizeof part);
    }
    double tree = 0.0;
    for (int k = 0; k < 8; k++)
        tree += part[32 * k];
    return tree;
}

/* The plain scan vt_argmax must agree with: the first index of the largest
 * value, NaN passed over, 0 when x[0] is NaN. */
static int32_t argmax_by_scan(const float *x, int32_t n)
{
    int32_t best = 0;
    for (int32_t i = 1; i < n; i++)
        if (x[i] > x[best])
            best = i;
    return best;
}

Test(argmax, agrees_with_the_plain_scan_on_ties_nans_signed_zeros_and_infinities)
{
    /* few distinct values, so that ties, NaN at the front and -0 against +0 come up often */
    const float pick[] = { NAN, -NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1.0f, -1.0f, 2.5f, 2.5f, 1e30f, -1e30f };
    enum { MAX = 80, LONG = 700 };
    float x[LONG];
    vt_rng rng;
    vt_rng_seed(&rng, 20261205);
    int nan_first = 0, zero_pairs = 0, later_block = 0;
    for (int round = 0; round < 300000; round++) {
        /* two rounds in three short; the third past vt_argmax's blocks of 256, from values below 2.5 with
         * 2.5 planted at a few places or none, so that the answer lies in a later block, behind ties */
        const int is_long = round % 3 == 2;
        const int32_t n = (int32_t)(vt_rng_next(&rng) % ((is_long ? LONG : MAX) + 1));
        for (int32_t i = 0; i < n; i++)
            x[i] = is_long ? pick[vt_rng_next(&rng) % 2 ? 4 + vt_rng_next(&rng) % 4 : vt_rng_next(&rng) % 2]
                           : pick[vt_rng_next(&rng) % (sizeof pick / sizeof pick[0])];
        for (int p = is_long && n ? (int)(vt_rng_next(&rng) % 4) : 0; p > 0; p--)
            x[vt_rng_next(&rng) % (uint64_t)n] = 2.5f;
        const int32_t want = argmax_by_scan(x, n), got = vt_argmax(x, n);
        cr_assert_eq(got, want, "round %d, n %d: %d, the scan gives %d", round, n, got, want);
        nan_first += n > 1 && isnan(x[0]);
        zero_pairs += n > 1 && x[want] == 0.0f && signbit(x[want]);
        later_block += want >= 256;
    }
    cr_assert_gt(nan_first, 1000);
    cr_assert_gt(zero_pairs, 100); /* the answer a -0 (against a +0 elsewhere or not) */
    cr_assert_gt(later_block, 1000);
    /* a vocabulary's length, random logits, and the largest planted first, last and twice */
    static float big[151936];
    for (int k = 0; k < 4; k++) {
        for (int32_t i = 0; i < 151936; i++)
            big[i] = (float)vt_rng_uniform(&rng) * 40.0f - 20.0f;
        const int32_t at = k == 0 ? 0 : k == 1 ? 151935 : (int32_t)(vt_rng_next(&rng) % 151936);
        big[at] = 25.0f;
        if (k == 3)
            big[151935] = 25.0f;
        cr_assert_eq(vt_argmax(big, 151936), at);
        cr_assert_eq(vt_argmax(big, 151936), argmax_by_scan(big, 151936));
    }
}

Test(rmsnorm_mean, any_order_sum_stands_in_only_when_the_serial_mean_is_certain)
{
    static const int64_t ns[] = { 1, 2, 7, 128, 256, 1000, 1024, 3072, 4096 };
    static float a[4096];
    vt_rng rng;
    vt_rng_seed(&rng, 20261204);
    int tried = 0, taken = 0;
    for (int rep = 0; rep < 400; rep++)
        for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
            const int64_t n = ns[k];
            const int spread = rep % 4 == 0 ? 40 : 6; /* squares over 2^80 or 2^12 */
            for (int64_t i = 0; i < n; i++) {
                const float v = (float)(vt_rng_normal(&rng) * ldexp(1.0, (int)(vt_rng_next(&rng) % spread) - spread / 2));
                a[i] = v * v; /* a float square, as the kernels' sq[] */
            }
            const float want = (float)(serial_sum(a, n) / (double)n);
            double rev = 0.0;
            for (int64_t i = n - 1; i >= 0; i--)
                rev += (double)a[i];
            const double sums[3] = { gpu_order_sum(a, n), rev, serial_sum(a, n) };
            for (int o = 0; o < 3; o++) {
                float mean = -1.0f;
                tried++;
                if (mean_of_any_order_sum(sums[o], n, &mean)) {
                    taken++;
                    cr_assert_eq(vt_test_bits_of(mean), vt_test_bits_of(want), "n %lld order %d: %a, the serial mean %a", (long long)n,
                                 o, (double)mean, (double)want);
                }
            }
        }
    /* the point of it: the tree sum stands in almost always */
    cr_assert_geq(taken, tried - tried / 100, "taken %d of %d", taken, tried);
}

Test(rmsnorm_mean, a_sum_near_a_rounding_boundary_is_refused)
{
    static const int64_t ns[] = { 2, 128, 1024, 3072 };
    static const float means[] = { 1.0f, 0.3f, 7.25e-3f, 1234.5f, 3e-20f };
    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++)
        for (size_t m = 0; m < sizeof means / sizeof means[0]; m++) {
            const int64_t n = ns[k];
            const float f = means[m];
            /* b: the least double sum whose mean rounds above f */
            double b = ((double)f + (double)nextafterf(f, INFINITY)) / 2 * (double)n;
            while ((float)(b / (double)n) > f)
                b = nextafter(b, 0.0);
            while ((float)(b / (double)n) <= f)
                b = nextafter(b, INFINITY);
            /* a serial sum may lie up to about 2(n-1)u from any other order's sum, relative: every
             * t that close to b could be either side of it */
            const double reach = 2.0 * (double)(n - 1) * 0x1p-53;
            for (int s = -100; s <= 100; s++) {
                const double t = b * (1.0 + reach * s / 100.0);
                float mean;
                cr_assert_eq(mean_of_any_order_sum(t, n, &mean), 0, "n %lld, t %a (%d%% of the reach from %a) taken as %a",
                             (long long)n, t, s, b, (double)mean);
            }
            /* and far from it, taken */
            float mean;
            cr_assert(mean_of_any_order_sum(b * (1.0 + 1e-4), n, &mean));
            cr_assert(mean_of_any_order_sum(b * (1.0 - 1e-4), n, &mean));
        }
}

Test(rmsnorm_mean, zero_is_taken_and_what_is_not_a_sum_of_squares_is_refused)
{
    float mean = -1.0f;
    cr_assert(mean_of_any_order_sum(0.0, 1024, &mean));
    cr_assert_eq(vt_test_bits_of(mean), 0u);
    cr_assert_not(mean_of_any_order_sum(NAN, 1024, &mean));
    cr_assert_not(mean_of_any_order_sum(INFINITY, 1024, &mean));
    cr_assert_not(mean_of_any_order_sum(-1.0, 1024, &mean));
    cr_assert_not(mean_of_any_order_sum(0x1p1001, 1024, &mean)); /* near overflow */
    cr_assert_not(mean_of_any_order_sum(0x1p-950, 1024, &mean)); /* t d would underflow */
    cr_assert_not(mean_of_any_order_sum(1.0, 0, &mean));
}

/* vt_rmsnorm as ggml computes it: the serial double sum of the float
 * squares, its float mean, then x * scale * w. */
static void serial_rmsnorm(float *out, const float *x, const float *w, int64_t n, float eps)
{
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++)
        sum += (double)(x[i] * x[i]);
    const float scale = 1.0f / sqrtf((float)(sum / (double)n) + eps);
    for (int64_t i = 0; i < n; i++)
        out[i] = x[i] * scale * w[i];
}

static void assert_rmsnorm_is_serial(const float *x, const float *w, int64_t n, const char *what)
{
    static float got[4096], want[4096];
    vt_rmsnorm(got, x, w, n, 1e-6f);
    serial_rmsnorm(want, x, w, n, 1e-6f);
    cr_assert_eq(memcmp(got, want, (size_t)n * sizeof *got), 0, "%s, n %lld: vt_rmsnorm differs from the serial sum's",
                 what, (long long)n);
}

Test(rmsnorm_mean, the_cpu_rmsnorm_is_the_serial_sum_s_bit_for_bit)
{
    static const int64_t ns[] = { 1, 7, 8, 9, 128, 1000, 1024, 3072 };
    static float x[4096], w[4096];
    vt_rng rng;
    vt_rng_seed(&rng, 20261205);
    for (int i = 0; i < 4096; i++)
        w[i] = (float)(1.0 + 0.25 * vt_rng_normal(&rng));
    for (int rep = 0; rep < 50; rep++)
        for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
            const int spread = rep % 4 == 0 ? 40 : 6;
            for (int64_t i = 0; i < ns[k]; i++)
                x[i] = (float)(vt_rng_normal(&rng) * ldexp(1.0, (int)(vt_rng_next(&rng) % spread) - spread / 2));
            assert_rmsnorm_is_serial(x, w, ns[k], "random");
        }
    /* not finite, and zero */
    for (int64_t i = 0; i < 1024; i++)
        x[i] = (float)vt_rng_normal(&rng);
    x[100] = NAN;
    assert_rmsnorm_is_serial(x, w, 1024, "a NaN");
    x[100] = INFINITY;
    assert_rmsnorm_is_serial(x, w, 1024, "an infinity");
    memset(x, 0, sizeof x);
    assert_rmsnorm_is_serial(x, w, 1024, "zeros");
    /* Rows whose serial sum and eight-chain sum (vt_rmsnorm's) lie either
     * side of a float mean's rounding boundary b: only the serial sum may
     * decide them. The rest of the row leaves a gap g below b; y1 closes all
     * but about 2^-32 of it, relative; then the last element walks through
     * consecutive floats, each step moving the sum by about a tenth of its
     * last bit, across b. */
    const int64_t n = 64;
    int straddled = 0;
    for (int rep = 0; rep < 200 && straddled < 20; rep++) {
        double rest = 0.0;
        for (int64_t i = 0; i < n - 2; i++) {
            x[i] = (float)(vt_rng_normal(&rng) * 0.5);
            rest += (double)(x[i] * x[i]);
        }
        float f = (float)(rest / (double)n);
        double b = ((double)f + (double)nextafterf(f, INFINITY)) / 2 * (double)n;
        if (b <= rest * (1.0 + 0x1p-30)) {
            f = nextafterf(f, INFINITY);
            b = ((double)f + (double)nextafterf(f, INFINITY)) / 2 * (double)n;
        }
        float y1 = sqrtf((float)(b - rest - rest * 0x1p-32));
        while ((double)(y1 * y1) > b - rest - rest * 0x1p-32)
            y1 = nextafterf(y1, 0.0f);
        x[n - 2] = y1;
        const double g1 = b - rest - (double)(y1 * y1);
        float last = sqrtf((float)(g1 > rest * 0x1p-45 ? g1 - rest * 0x1p-45 : 0.0));
        for (int step = 0; step < 4000; step++, last = nextafterf(last, INFINITY)) {
            x[n - 1] = last;
            double serial = 0.0, s8[8] = { 0 };
            for (int64_t i = 0; i < n; i++) {
                serial += (double)(x[i] * x[i]);
                s8[i % 8] += (double)(x[i] * x[i]);
            }
            const double t = ((s8[0] + s8[1]) + (s8[2] + s8[3])) + ((s8[4] + s8[5]) + (s8[6] + s8[7]));
            if ((float)(serial / (double)n) != (float)(t / (double)n)) {
                straddled++;
                assert_rmsnorm_is_serial(x, w, n, "a sum at a rounding boundary");
            }
        }
    }
    /* the test can fail: rows were found where the two sums disagree */
    cr_assert_geq(straddled, 5, "only %d rows straddled a boundary", straddled);
}

#if defined(__x86_64__)
#include <cpuid.h>

__attribute__((target("f16c"))) static uint16_t f16c_convert(float f)
{
    return (uint16_t)_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT);
}
#endif

Test(f16, encoder_matches_hardware_and_round_trips)
{
    for (uint32_t h = 0; h < 65536; h++) {
        if (((h >> 10) & 0x1f) == 0x1f && (h & 0x3ff))
            continue; /* NaNs: checked below */
        cr_assert_eq(vt_f32_to_f16(vt_f16_to_f32((uint16_t)h)), h, "0x%04x", h);
    }
    cr_assert_eq(vt_f32_to_f16(65519.0f), 0x7bff);
    cr_assert_eq(vt_f32_to_f16(65520.0f), 0x7c00);
    cr_assert_eq(vt_f32_to_f16(-INFINITY), 0xfc00);
    cr_assert_eq(vt_f32_to_f16(NAN) & 0x7e00, 0x7e00);
#if defined(__x86_64__)
    /* CPUID leaf 1, ECX bit 29 (clang 14 has no "f16c" for __builtin_cpu_supports). */
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 29)))
        return;
    for (uint64_t u = 0; u <= 0xffffffffu; u += 997) {
        float x = vt_test_float_of((uint32_t)u);
        cr_assert_eq(vt_f32_to_f16(x), f16c_convert(x), "x = %a (0x%08x)", (double)x, (unsigned)u);
    }
#endif
}

/* ---------------------------------------------------------------------
 * Model files
 * --------------------------------------------------------------------- */

typedef struct spec {
    int n_layer, n_embd, n_head, n_head_kv, head_dim, n_ff, n_vocab;
    float rope_base, eps;
    int tied;
    int wtype;            /* type of every matrix (and token_embd) */
    uint64_t seed;
    const char *omit;     /* tensor left out, or NULL */
    const char *misshape; /* tensor written with one row too many, or NULL */
    const char *norm_f16; /* norm tensor written as F16, or NULL */
    int random_blocks;    /* quantized matrices: random blocks, not ggml's quantizer */
} spec;

/* A small F32 model whose dimensions exercise every tail of the kernels:
 * n_ff and n_vocab are not multiples of 16 or of 4. */
static spec tiny_f32(void)
{
    return (spec){ .n_layer = 2, .n_embd = 64, .n_head = 4, .n_head_kv = 2, .head_dim = 16,
                   .n_ff = 136, .n_vocab = 97, .rope_base = 10000.0f, .eps = 1e-6f,
                   .tied = 0, .wtype = VT_TYPE_F32, .seed = 7 };
}

/* Dimensions every codec (256-element blocks) can store. */
static spec tiny_quant(int wtype)
{
    return (spec){ .n_layer = 2, .n_embd = 256, .n_head = 4, .n_head_kv = 2, .head_dim = 64,
                   .n_ff = 512, .n_vocab = 203, .rope_base = 1e6f, .eps = 1e-6f,
                   .tied = 0, .wtype = wtype, .seed = 11 };
}

static vt_ggml *oracle(void)
{
    static vt_ggml *g;
    if (!g) {
        vt_error err;
        vt_error_clear(&err);
        g = vt_ggml_open(NULL, &err);
        cr_assert_not_null(g, "ggml oracle: %s", err.msg);
    }
    return g;
}

static void add(vt_gguf_writer *w, const spec *sp, const char *name, int type, int64_t ne0,
                int64_t ne1, double std, double mean, vt_rng *rng)
{
    if (sp->omit && strcmp(sp->omit, name) == 0)
        return;
    if (sp->misshape && strcmp(sp->misshape, name) == 0)
        ne1 += 1;
    if (sp->norm_f16 && strcmp(sp->norm_f16, name) == 0)
        type = VT_TYPE_F16;
    const int64_t n = ne0 * ne1;
    float *x = malloc((size_t)n * sizeof *x);
    cr_assert(x);
    for (int64_t i = 0; i < n; i++)
        x[i] = (float)(mean + std * vt_rng_normal(rng));
    const vt_codec *c = vt_codec_by_type(type);
    const size_t bytes = vt_codec_row_bytes(c, ne0) * (size_t)ne1;
    void *data = x;
    void *q = NULL;
    if (type == VT_TYPE_F16) {
        uint16_t *h = malloc((size_t)n * 2);
        for (int64_t i = 0; i < n; i++)
            h[i] = vt_f32_to_f16(x[i]);
        data = q = h;
    } else if (type != VT_TYPE_F32 && sp->random_blocks) {
        /* Random block bytes, redrawn until the block decodes to finite
         * weights of moderate size: any codec without ggml's quantizer (whose
         * IQ grids take seconds to build). */
        q = malloc(bytes);
        cr_assert(q);
        float dec[256];
        uint8_t *b = q;
        for (size_t off = 0; off < bytes; off += c->block_bytes) {
            for (int tries = 0;; tries++) {
                cr_assert_lt(tries, 100000, "%s: no acceptable random block", c->name);
                for (size_t k = 0; k < c->block_bytes; k++)
                    b[off + k] = (uint8_t)vt_rng_next(rng);
                c->decode_f32(b + off, dec, 1);
                float mx = 0;
                int ok = 1;
                for (int64_t k = 0; k < c->block_elems; k++) {
                    ok = ok && isfinite(dec[k]);
                    mx = fmaxf(mx, fabsf(dec[k]));
                }
                if (ok && mx >= 0x1p-6f && mx <= 2.0f)
                    break;
            }
        }
        data = q;
    } else if (type != VT_TYPE_F32) {
        q = malloc(bytes);
        cr_assert(q);
        float *imat = NULL;
        if (vt_codec_check_uses_imatrix(oracle(), c)) {
            imat = malloc((size_t)ne0 * sizeof *imat);
            vt_codec_check_make_imatrix(imat, ne0, 1);
        }
        vt_error err;
        vt_error_clear(&err);
        cr_assert_eq(vt_ggml_quantize(oracle(), type, x, q, ne1, ne0, imat, &err), VT_OK, "%s",
                     err.msg);
        free(imat);
        data = q;
    }
    const int64_t ne[2] = { ne0, ne1 };
    vt_error err;
    vt_error_clear(&err);
    cr_assert_eq(vt_gguf_writer_add_tensor(w, name, type, ne1 == 1 ? 1 : 2, ne, data, bytes, &err),
                 VT_OK, "%s: %s", name, err.msg);
    free(x);
    free(q);
}

/* Writes the model to a fresh temporary file; returns its path (static). */
static const char *make_model(const spec *sp)
{
    static char path[64];
    snprintf(path, sizeof path, "/tmp/vt_engine_XXXXXX");
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);

    vt_error err;
    vt_error_clear(&err);
    vt_gguf_writer *w = vt_gguf_writer_new(3, &err);
    cr_assert_not_null(w, "%s", err.msg);
    vt_gguf_writer_set_str(w, "general.architecture", "qwen3");
    vt_gguf_writer_set_u32(w, "qwen3.embedding_length", (uint32_t)sp->n_embd);
    vt_gguf_writer_set_u32(w, "qwen3.block_count", (uint32_t)sp->n_layer);
    vt_gguf_writer_set_u32(w, "qwen3.feed_forward_length", (uint32_t)sp->n_ff);
    vt_gguf_writer_set_u32(w, "qwen3.attention.head_count", (uint32_t)sp->n_head);
    vt_gguf_writer_set_u32(w, "qwen3.attention.head_count_kv", (uint32_t)sp->n_head_kv);
    vt_gguf_writer_set_u32(w, "qwen3.attention.key_length", (uint32_t)sp->head_dim);
    vt_gguf_writer_set_u32(w, "qwen3.attention.value_length", (uint32_t)sp->head_dim);
    vt_gguf_writer_set_u32(w, "qwen3.context_length", 4096);
    vt_gguf_writer_set_f32(w, "qwen3.rope.freq_base", sp->rope_base);
    vt_gguf_writer_set_f32(w, "qwen3.attention.layer_norm_rms_epsilon", sp->eps);

    vt_rng rng;
    vt_rng_seed(&rng, sp->seed);
    const int E = sp->n_embd, F = sp->n_ff, hd = sp->head_dim;
    const int qd = sp->n_head * hd, kvd = sp->n_head_kv * hd;
    /* Scales keep activations near unit RMS and logits of a few units. */
    add(w, sp, "token_embd.weight", sp->wtype, E, sp->n_vocab, 1.0, 0, &rng);
    for (int l = 0; l < sp->n_layer; l++) {
        char n[64];
#define T(suffix, type, ne0, ne1, std, mean)                                   \
        snprintf(n, sizeof n, "blk.%d." suffix ".weight", l);                 \
        add(w, sp, n, type, ne0, ne1, std, mean, &rng);
        T("attn_norm", VT_TYPE_F32, E, 1, 0.1, 1.0)
        T("attn_q", sp->wtype, E, qd, 1.0 / sqrt(E), 0)
        T("attn_k", sp->wtype, E, kvd, 1.0 / sqrt(E), 0)
        T("attn_v", sp->wtype, E, kvd, 1.0 / sqrt(E), 0)
        T("attn_q_norm", VT_TYPE_F32, hd, 1, 0.1, 1.0)
        T("attn_k_norm", VT_TYPE_F32, hd, 1, 0.1, 1.0)
        T("attn_output", sp->wtype, qd, E, 0.5 / sqrt(qd), 0)
        T("ffn_norm", VT_TYPE_F32, E, 1, 0.1, 1.0)
        T("ffn_gate", sp->wtype, E, F, 1.0 / sqrt(E), 0)
        T("ffn_up", sp->wtype, E, F, 1.0 / sqrt(E), 0)
        T("ffn_down", sp->wtype, F, E, 0.5 / sqrt(F), 0)
#undef T
    }
    add(w, sp, "output_norm.weight", VT_TYPE_F32, E, 1, 0.1, 1.0, &rng);
    if (!sp->tied)
        add(w, sp, "output.weight", sp->wtype, E, sp->n_vocab, 3.0 / sqrt(E), 0, &rng);
    cr_assert_eq(vt_gguf_writer_write_file(w, path, &(const vt_publish_opts){ .overwrite = 1 }, &err), VT_OK, "%s", err.msg);
    vt_gguf_writer_free(w);
    return path;
}

/* ---------------------------------------------------------------------
 * The reference: one token at a time, double precision, every formula as
 * written in the Qwen3 model (RMSNorm, RoPE with theta = p * base^(-2i/d)
 * on halves, softmax attention, SwiGLU). Weights decoded with the codec.
 * --------------------------------------------------------------------- */

typedef struct ref_model {
    spec sp;
    int64_t V;
    double *embd, *out_norm, *output;
    struct {
        double *attn_norm, *wq, *wk, *wv, *q_norm, *k_norm, *wo, *ffn_norm, *gate, *up, *down;
    } L[8];
} ref_model;

static double *read_tensor(const vt_gguf *g, const char *name, int64_t *n_out)
{
    const vt_gguf_tensor *t = vt_gguf_find_tensor(g, name);
    cr_assert_not_null(t, "%s", name);
    const vt_codec *c = vt_codec_by_type(t->type);
    const int64_t n = t->ne[0] * t->ne[1];
    float *f = malloc((size_t)n * sizeof *f);
    vt_error err;
    vt_error_clear(&err);
    cr_assert_eq(vt_codec_decode_row(c, t->data, n, VT_DTYPE_F32, f, &err), VT_OK, "%s", err.msg);
    double *d = malloc((size_t)n * sizeof *d);
    for (int64_t i = 0; i < n; i++)
        d[i] = f[i];
    free(f);
    if (n_out)
        *n_out = n;
    return d;
}

static void ref_load(ref_model *r, const spec *sp, const char *path)
{
    memset(r, 0, sizeof *r);
    r->sp = *sp;
    vt_error err;
    vt_error_clear(&err);
    vt_gguf *g = vt_gguf_open(path, &err);
    cr_assert_not_null(g, "%s", err.msg);
    r->V = sp->n_vocab;
    r->embd = read_tensor(g, "token_embd.weight", NULL);
    r->out_norm = read_tensor(g, "output_norm.weight", NULL);
    r->output = sp->tied ? r->embd : read_tensor(g, "output.weight", NULL);
    for (int l = 0; l < sp->n_layer; l++) {
        char n[64];
#define R(field, suffix)                                                       \
        snprintf(n, sizeof n, "blk.%d." suffix ".weight", l);                 \
        r->L[l].field = read_tensor(g, n, NULL);
        R(attn_norm, "attn_norm") R(wq, "attn_q") R(wk, "attn_k") R(wv, "attn_v")
        R(q_norm, "attn_q_norm") R(k_norm, "attn_k_norm") R(wo, "attn_output")
        R(ffn_norm, "ffn_norm") R(gate, "ffn_gate") R(up, "ffn_up") R(down, "ffn_down")
#undef R
    }
    vt_gguf_free(g);
}

static void ref_free(ref_model *r)
{
    free(r->embd);
    free(r->out_norm);
    if (!r->sp.tied)
        free(r->output);
    for (int l = 0; l < r->sp.n_layer; l++) {
        double *p[] = { r->L[l].attn_norm, r->L[l].wq, r->L[l].wk, r->L[l].wv, r->L[l].q_norm,
                        r->L[l].k_norm, r->L[l].wo, r->L[l].ffn_norm, r->L[l].gate, r->L[l].up,
                        r->L[l].down };
        for (size_t i = 0; i < sizeof p / sizeof p[0]; i++)
            free(p[i]);
    }
}

static void ref_rmsnorm(double *out, const double *x, const double *w, int n, double eps)
{
    double ss = 0;
    for (int i = 0; i < n; i++)
        ss += x[i] * x[i];
    double scale = 1.0 / sqrt(ss / n + eps);
    for (int i = 0; i < n; i++)
        out[i] = x[i] * scale * w[i];
}

/* y = W x, W rows x cols row-major. */
static void ref_matvec(double *y, const double *W, const double *x, int rows, int cols)
{
    for (int o = 0; o < rows; o++) {
        double s = 0;
        for (int i = 0; i < cols; i++)
            s += W[(size_t)o * cols + i] * x[i];
        y[o] = s;
    }
}

static void ref_rope(double *x, int pos, int d, double base)
{
    for (int i = 0; i < d / 2; i++) {
        double theta = pos * pow(base, -2.0 * i / d);
        double x0 = x[i], x1 = x[i + d / 2];
        x[i] = x0 * cos(theta) - x1 * sin(theta);
        x[i + d / 2] = x0 * sin(theta) + x1 * cos(theta);
    }
}

/* Logits (n x V) of every position of tokens. */
static double *ref_forward(const ref_model *r, const int32_t *tokens, int n)
{
    const spec *sp = &r->sp;
    const int E = sp->n_embd, F = sp->n_ff, hd = sp->head_dim, H = sp->n_head, Hkv = sp->n_head_kv;
    const int qd = H * hd, kvd = Hkv * hd, V = (int)r->V;
    double *kc = calloc((size_t)sp->n_layer * n * kvd, sizeof(double));
    double *vc = calloc((size_t)sp->n_layer * n * kvd, sizeof(double));
    double *logits = calloc((size_t)n * V, sizeof(double));
    double *x = malloc(E * sizeof(double)), *xn = malloc(E * sizeof(double));
    double *q = malloc(qd * sizeof(double)), *att = malloc(qd * sizeof(double));
    double *tmp = malloc(E * sizeof(double)), *g = malloc(F * sizeof(double));
    double *u = malloc(F * sizeof(double)), *sc = malloc(n * sizeof(double));
    for (int p = 0; p < n; p++) {
        memcpy(x, r->embd + (size_t)tokens[p] * E, E * sizeof(double));
        for (int l = 0; l < sp->n_layer; l++) {
            double *K = kc + ((size_t)l * n + p) * kvd, *Vv = vc + ((size_t)l * n + p) * kvd;
            ref_rmsnorm(xn, x, r->L[l].attn_norm, E, sp->eps);
            ref_matvec(q, r->L[l].wq, xn, qd, E);
            ref_matvec(K, r->L[l].wk, xn, kvd, E);
            ref_matvec(Vv, r->L[l].wv, xn, kvd, E);
            for (int h = 0; h < H; h++) {
                ref_rmsnorm(q + h * hd, q + h * hd, r->L[l].q_norm, hd, sp->eps);
                ref_rope(q + h * hd, p, hd, sp->rope_base);
            }
            for (int h = 0; h < Hkv; h++) {
                ref_rmsnorm(K + h * hd, K + h * hd, r->L[l].k_norm, hd, sp->eps);
                ref_rope(K + h * hd, p, hd, sp->rope_base);
            }
            for (int h = 0; h < H; h++) {
                int kvh = h / (H / Hkv);
                double mx = -INFINITY, sum = 0;
                for (int j = 0; j <= p; j++) {
                    const double *kj = kc + ((size_t)l * n + j) * kvd + kvh * hd;
                    double s = 0;
                    for (int d = 0; d < hd; d++)
                        s += q[h * hd + d] * kj[d];
                    sc[j] = s / sqrt((double)hd);
                    mx = fmax(mx, sc[j]);
                }
                for (int j = 0; j <= p; j++)
                    sum += (sc[j] = exp(sc[j] - mx));
                for (int d = 0; d < hd; d++) {
                    double o = 0;
                    for (int j = 0; j <= p; j++)
                        o += sc[j] / sum * vc[((size_t)l * n + j) * kvd + kvh * hd + d];
                    att[h * hd + d] = o;
                }
            }
            ref_matvec(tmp, r->L[l].wo, att, E, qd);
            for (int i = 0; i < E; i++)
                x[i] += tmp[i];
            ref_rmsnorm(xn, x, r->L[l].ffn_norm, E, sp->eps);
            ref_matvec(g, r->L[l].gate, xn, F, E);
            ref_matvec(u, r->L[l].up, xn, F, E);
            for (int i = 0; i < F; i++)
                g[i] = g[i] / (1.0 + exp(-g[i])) * u[i];
            ref_matvec(tmp, r->L[l].down, g, E, F);
            for (int i = 0; i < E; i++)
                x[i] += tmp[i];
        }
        ref_rmsnorm(xn, x, r->out_norm, E, sp->eps);
        ref_matvec(logits + (size_t)p * V, r->output, xn, V, E);
    }
    free(kc); free(vc); free(x); free(xn); free(q); free(att); free(tmp); free(g); free(u); free(sc);
    return logits;
}

/* ---------------------------------------------------------------------
 * Engine helpers
 * --------------------------------------------------------------------- */

static vt_runner_settings settings_for(const char *path)
{
    vt_runner_settings s;
    vt_runner_settings_default(&s);
    s.model_path = path;
    s.n_threads = 2;
    s.n_ctx = 64;
    s.n_batch = 5; /* several batches, the last one short */
    s.matmul = VT_MATMUL_EXACT; /* the reference comparisons are exact-product; tests opt into Q8 */
    return s;
}

static vt_qwen3 *open_ok(const vt_runner_settings *s)
{
    vt_error err;
    vt_error_clear(&err);
    vt_qwen3 *m = vt_qwen3_open(s, &err);
    cr_assert_not_null(m, "open: %s", err.msg);
    return m;
}

/* Fresh sequence, all logits of tokens (malloc'd, n x n_vocab). */
static float *run_all(vt_qwen3 *m, const int32_t *tokens, int n)
{
    const int32_t V = vt_qwen3_hparams_of(m)->n_vocab;
    float *out = malloc((size_t)n * V * sizeof *out);
    vt_error err;
    vt_error_clear(&err);
    vt_qwen3_reset(m);
    cr_assert_eq(vt_qwen3_eval(m, tokens, n, 1, out, &err), VT_OK, "eval: %s", err.msg);
    return out;
}

static float *run_settings(const vt_runner_settings *s, const int32_t *tokens, int n)
{
    vt_qwen3 *m = open_ok(s);
    float *out = run_all(m, tokens, n);
    vt_qwen3_close(m);
    return out;
}

static double max_abs_diff(const float *a, const float *b, size_t n)
{
    double d = 0;
    for (size_t i = 0; i < n; i++)
        d = fmax(d, fabs((double)a[i] - (double)b[i]));
    return d;
}

static void prompt(int32_t *t, int n, int V, uint64_t seed)
{
    vt_rng r;
    vt_rng_seed(&r, seed);
    for (int i = 0; i < n; i++)
        t[i] = (int32_t)(vt_rng_next(&r) % (uint64_t)V);
}

enum { N_TOK = 13 };

/* ---------------------------------------------------------------------
 * The forward pass against the reference
 * --------------------------------------------------------------------- */

static void check_against_reference(const spec *sp, double tol, double *measured)
{
    const char *path = make_model(sp);
    ref_model ref;
    ref_load(&ref, sp, path);
    int32_t tok[N_TOK];
    prompt(tok, N_TOK, sp->n_vocab, 3);
    double *want = ref_forward(&ref, tok, N_TOK);
    vt_runner_settings s = settings_for(path);
    float *got = run_settings(&s, tok, N_TOK);
    double d = 0, scale = 0;
    for (size_t i = 0; i < (size_t)N_TOK * sp->n_vocab; i++) {
        d = fmax(d, fabs(got[i] - want[i]));
        scale = fmax(scale, fabs(want[i]));
    }
    cr_assert_gt(scale, 1.0, "logits should be of a few units, max %g", scale);
    cr_assert_lt(d, tol, "max |engine - reference| = %g (max |logit| %g)", d, scale);
    if (measured)
        *measured = d;
    free(want);
    free(got);
    ref_free(&ref);
    unlink(path);
}

Test(forward, f32_model_matches_double_reference)
{
    spec sp = tiny_f32();
    double d;
    check_against_reference(&sp, 1e-4, &d);
    cr_log_info("F32 model: max |engine - double reference| = %.3g", d);
}

Test(forward, tied_output_head_matches_double_reference)
{
    spec sp = tiny_f32();
    sp.tied = 1;
    sp.n_head_kv = 4; /* plain multi-head attention too */
    check_against_reference(&sp, 1e-4, NULL);
}

/* EXACT mode decodes every codec's weights exactly, so a quantized model
 * must match the reference fed the same decoded weights. */
Test(forward, quantized_models_match_reference_in_exact_mode, .timeout = 60)
{
    const int types[] = { VT_TYPE_F16, VT_TYPE_BF16, VT_TYPE_Q4_0, VT_TYPE_Q5_1, VT_TYPE_Q8_0,
                          VT_TYPE_Q2_K, VT_TYPE_Q4_K, VT_TYPE_Q6_K, VT_TYPE_IQ3_XXS,
                          VT_TYPE_IQ4_NL, VT_TYPE_TQ2_0, VT_TYPE_MXFP4 };
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        spec sp = tiny_quant(types[i]);
        sp.n_layer = 1;
        double d;
        check_against_reference(&sp, 1e-4, &d);
        cr_log_info("%s model: max |engine - double reference| = %.3g",
                    vt_codec_by_type(types[i])->name, d);
    }
}

/* Every decodable weight codec loads and runs in both matmul modes. */
Test(forward, every_codec_runs_in_both_matmul_modes, .timeout = 60)
{
    int32_t tok[4] = { 1, 2, 3, 4 };
    for (int i = 0; i < vt_codec_count(); i++) {
        const vt_codec *c = vt_codec_at(i);
        if (!c->decode_f32)
            continue;
        spec sp = tiny_quant((int)c->type);
        sp.n_layer = 1;
        sp.random_blocks = 1;
        const char *path = make_model(&sp);
        vt_runner_settings s = settings_for(path);
        float *exact = run_settings(&s, tok, 4);
        s.matmul = VT_MATMUL_Q8;
        float *q8 = run_settings(&s, tok, 4);
        double scale = 0;
        for (int k = 0; k < 4 * sp.n_vocab; k++) {
            cr_assert(isfinite(exact[k]) && isfinite(q8[k]), "%s", c->name);
            scale = fmax(scale, fabs(exact[k]));
        }
        double d = max_abs_diff(exact, q8, 4 * (size_t)sp.n_vocab);
        /* F32 weights meet F32 activations in both modes; so do Q8_K
         * weights, for which ggml has no dot kernel (vec_dot_type unset). */
        if (c->type != VT_TYPE_F32 && c->type != VT_TYPE_Q8_K)
            cr_assert_gt(d, 0.0, "%s: Q8 mode should round the activations", c->name);
        else
            cr_assert_eq(d, 0.0, "%s", c->name);
        cr_log_info("%s: Q8 vs exact: max |diff| %.3g (max |logit| %.3g)", c->name, d, scale);
        cr_assert_lt(d, 0.1 * scale, "%s: Q8 vs exact %g (max |logit| %g)", c->name, d, scale);
        free(exact);
        free(q8);
        unlink(path);
    }
}

/* The GPU's integer products are vt_int_dot (codec_intdot.h), one dispatch
 * by type; the CPU's are its int_kernels rows. For every type whose
 * activation is a Q8 block type, both kernels of the CPU's row (portable and
 * FMA) give vt_int_dot's value bit for bit, in the order that the tensor's
 * row count selects (a multiple of 8: ggml's repacked order), over random
 * blocks and a random activation quantized by the shared block writers. */
Test(int_dot, the_shared_dispatch_is_the_cpu_kernel_for_every_type, .timeout = 120)
{
    vt_rng rng;
    vt_rng_seed(&rng, 2024);
    const int64_t cols = 512;
    float x[512], dec[256];
    for (int64_t k = 0; k < cols; k++)
        x[k] = (float)(vt_rng_next(&rng) % 20001) / 10000.0f - 1.0f;
    int checked = 0;
    for (int i = 0; i < vt_codec_count(); i++) {
        const vt_codec *c = vt_codec_at(i);
        if (c->act != VT_ACT_Q8_0 && c->act != VT_ACT_Q8_1 && c->act != VT_ACT_Q8_K)
            continue;
        const int64_t nb = cols / c->block_elems;
        const size_t row_bytes = (size_t)nb * c->block_bytes;
        uint8_t *w = malloc(row_bytes * 2), xq[640];
        cr_assert(w);
        for (size_t off = 0; off < row_bytes * 2; off += c->block_bytes) {
            for (int tries = 0;; tries++) {
                cr_assert_lt(tries, 100000, "%s: no acceptable random block", c->name);
                for (size_t k = 0; k < c->block_bytes; k++)
                    w[off + k] = (uint8_t)vt_rng_next(&rng);
                c->decode_f32(w + off, dec, 1);
                int ok = 1;
                for (int64_t k = 0; k < c->block_elems; k++)
                    ok = ok && isfinite(dec[k]) && fabsf(dec[k]) <= 4.0f;
                if (ok)
                    break;
            }
        }
        const size_t xb = c->act == VT_ACT_Q8_K ? VT_Q8_K_BYTES : c->act == VT_ACT_Q8_1 ? VT_Q8_1_BYTES : VT_Q8_0_BYTES;
        const int64_t be = c->act == VT_ACT_Q8_K ? 256 : 32;
        for (int64_t b = 0; b < cols / be; b++) {
            if (c->act == VT_ACT_Q8_K)
                vt_q8_k_block_write(x + b * be, xq + b * xb);
            else if (c->act == VT_ACT_Q8_1)
                vt_q8_1_block_write(x + b * be, xq + b * xb);
            else
                vt_q8_0_block_write(x + b * be, xq + b * xb);
        }
        uint8_t again[640];
        vt_act_quantize_row(c->act, x, again, cols);
        cr_assert_eq(memcmp(again, xq, (size_t)(cols / be) * xb), 0, "%s: the CPU's activation blocks", c->name);
        vt_cpu cpu;
        memset(&cpu, 0, sizeof cpu);
        cpu.matmul = VT_MATMUL_Q8;
        for (int64_t tensor_rows = 7; tensor_rows <= 8; tensor_rows++) {
            vt_mat m = { .data = w, .codec = c, .rows = 2, .cols = cols, .row_bytes = row_bytes, .act = c->act,
                         .tensor_rows = tensor_rows, .plant_row = -1 };
            vt_act_type act = VT_ACT_F32;
            const vt_int_dot_fn *f = vt_int_dot_of(&cpu, &m, &act);
            cr_assert(f && f[0] && f[1], "%s: the CPU has no integer product", c->name);
            cr_assert_eq(act, c->act, "%s", c->name);
            const int r8 = vt_int_dot_r8((int)c->type, tensor_rows);
            for (int row = 0; row < 2; row++) {
                const float want = vt_int_dot((int)c->type, r8, w + row * row_bytes, xq, nb, vt_iq_host_grids());
                for (int k = 0; k < 2; k++) {
                    const float got = f[k](w + row * row_bytes, xq, nb);
                    cr_assert_eq(vt_f32_bits(got), vt_f32_bits(want), "%s rows %lld kernel %d: %a, vt_int_dot %a",
                                 c->name, (long long)tensor_rows, k, got, want);
                    cr_assert(isfinite(got) && got != 0.0f, "%s: %a", c->name, got);
                }
            }
        }
        free(w);
        checked++;
    }
    cr_assert_eq(checked, 22, "types with a Q8 activation: %d", checked);
}

/* ---------------------------------------------------------------------
 * Determinism
 * --------------------------------------------------------------------- */

Test(determinism, repeated_evals_are_bit_identical)
{
    spec sp = tiny_f32();
    const char *path = make_model(&sp);
    int32_t tok[N_TOK];
    prompt(tok, N_TOK, sp.n_vocab, 5);
    vt_runner_settings s = settings_for(path);
    vt_qwen3 *m = open_ok(&s);
    float *first = run_all(m, tok, N_TOK);
    for (int rep = 0; rep < 10; rep++) {
        float *again = run_all(m, tok, N_TOK);
        cr_assert_eq(memcmp(first, again, (size_t)N_TOK * sp.n_vocab * sizeof(float)), 0,
                     "repeat %d differs", rep);
        free(again);
    }
    free(first);
    vt_qwen3_close(m);
    unlink(path);
}

/* Threads, batch sizes and eager mode change who computes what and when,
 * never how: logits are bit-identical (measured and asserted). Q4_K is
 * repacked at load; BF16 is copied into huge pages in production only, so
 * eager reads the file's bytes and production the copy. */
static void threads_batches_and_eager(int type)
{
    spec sp = tiny_quant(type);
    const char *path = make_model(&sp);
    int32_t tok[N_TOK];
    prompt(tok, N_TOK, sp.n_vocab, 9);
    const size_t n = (size_t)N_TOK * sp.n_vocab;
    for (int mm = 0; mm < 2; mm++) {
        vt_runner_settings s = settings_for(path);
        s.matmul = mm ? VT_MATMUL_Q8 : VT_MATMUL_EXACT;
        s.n_threads = 1;
        s.n_batch = 512;
        float *base = run_settings(&s, tok, N_TOK);
        const struct { int threads, batch, eager; } v[] = {
            { 2, 512, 0 }, { 3, 512, 0 }, { 2, 4, 0 }, { 7, 1, 0 }, { 1, 512, 1 }, { 4, 512, 1 },
        };
        for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
            s.n_threads = v[i].threads;
            s.n_batch = v[i].batch;
            s.mode = v[i].eager ? VT_MODE_EAGER : VT_MODE_PRODUCTION;
            float *got = run_settings(&s, tok, N_TOK);
            cr_assert_eq(memcmp(base, got, n * sizeof(float)), 0,
                         "%s, matmul %d, threads %d, batch %d, eager %d: max diff %g", vt_codec_by_type(type)->name,
                         mm, v[i].threads, v[i].batch, v[i].eager, max_abs_diff(base, got, n));
            free(got);
        }
        free(base);
    }
    unlink(path);
}

Test(determinism, threads_batches_and_eager_are_bit_identical)
{
    threads_batches_and_eager(VT_TYPE_Q4_K);
    threads_batches_and_eager(VT_TYPE_BF16);
}

/* Token by token with last-position logits equals one pass with all logits. */
Test(determinism, incremental_evaluation_matches_one_pass)
{
    spec sp = tiny_f32();
    const char *path = make_model(&sp);
    int32_t tok[N_TOK];
    prompt(tok, N_TOK, sp.n_vocab, 13);
    vt_runner_settings s = settings_for(path);
    vt_qwen3 *m = open_ok(&s);
    float *all = run_all(m, tok, N_TOK);
    vt_qwen3_reset(m);
    float *last = malloc((size_t)sp.n_vocab * sizeof *last);
    vt_error err;
    vt_error_clear(&err);
    cr_assert_eq(vt_qwen3_eval(m, tok, 6, 0, last, &err), VT_OK, "%s", err.msg);
    cr_assert_eq(memcmp(last, all + 5 * sp.n_vocab, (size_t)sp.n_vocab * 4), 0);
    for (int i = 6; i < N_TOK; i++) {
        cr_assert_eq(vt_qwen3_eval(m, tok + i, 1, 0, last, &err), VT_OK, "%s", err.msg);
        cr_assert_eq(memcmp(last, all + (size_t)i * sp.n_vocab, (size_t)sp.n_vocab * 4), 0,
                     "position %d", i);
    }
    cr_assert_eq(vt_qwen3_n_past(m), N_TOK);
    free(all);
    free(last);
    vt_qwen3_close(m);
    unlink(path);
}

/* ---------------------------------------------------------------------
 * Matmul modes and cache dtypes
 * --------------------------------------------------------------------- */

Test(modes, q8_differs_from_exact_but_is_close_on_q4_k)
{
    spec sp = tiny_quant(VT_TYPE_Q4_K);
    const char *path = make_model(&sp);
    int32_t tok[N_TOK];
    prompt(tok, N_TOK, sp.n_vocab, 17);
    vt_runner_settings s = settings_for(path);
    float *exact = run_settings(&s, tok, N_TOK);
    s.matmul = VT_MATMUL_Q8;
    float *q8 = run_settings(&s, tok, N_TOK);
    const size_t n = (size_t)N_TOK * sp.n_vocab;
    double d = max_abs_diff(exact, q8, n), scale = 0;
    size_t differ = 0;
    for (size_t i = 0; i < n; i++) {
        scale = fmax(scale, fabs(exact[i]));
        differ += exact[i] != q8[i];
    }
    cr_log_info("Q4_K: Q8 vs exact: max |diff| %.3g, max |logit| %.3g, %zu of %zu differ", d,
                scale, differ, n);
    cr_assert_gt(differ, n / 2);
    cr_assert_lt(d, 0.05 * scale);
    /* Same greedy choice at (nearly) every position. */
    int same = 0;
    for (int t = 0; t < N_TOK; t++)
        same += vt_argmax(exact + (size_t)t * sp.n_vocab, sp.n_vocab) ==
                vt_argmax(q8 + (size_t)t * sp.n_vocab, sp.n_vocab);
    cr_assert_geq(same, N_TOK - 1);
    free(exact);
    free(q8);
    unlink(path);
}

Test(modes, cache_dtypes)
{
    spec sp = tiny_f32();
    const char *path = make_model(&sp);
    int32_t tok[N_TOK];
    prompt(tok, N_TOK, sp.n_vocab, 19);
    const size_t n = (size_t)N_TOK * sp.n_vocab;
    vt_runner_settings s = settings_for(path);
    float *aut = run_settings(&s, tok, N_TOK);
    s.cache_dtype = VT_CACHE_F32;
    float *f32 = run_settings(&s, tok, N_TOK);
    s.cache_dtype = VT_CACHE_BF16;
    float *bf16 = run_settings(&s, tok, N_TOK);
    s.cache_dtype = VT_CACHE_FP8_E4M3;
    float *fp8 = run_settings(&s, tok, N_TOK);
    cr_assert_eq(memcmp(aut, f32, n * sizeof(float)), 0, "AUTO is F32 on the CPU");
    double d_bf16 = max_abs_diff(f32, bf16, n), d_fp8 = max_abs_diff(f32, fp8, n);
    cr_log_info("cache: max |diff| vs F32: BF16 %.3g, FP8 %.3g", d_bf16, d_fp8);
    cr_assert_gt(d_bf16, 0.0);
    cr_assert_gt(d_fp8, d_bf16);
    cr_assert_lt(d_bf16, 0.05);
    cr_assert_lt(d_fp8, 1.0);
    /* A reduced cache is as deterministic as any other: eager == production. */
    s.mode = VT_MODE_EAGER;
    float *fp8e = run_settings(&s, tok, N_TOK);
    cr_assert_eq(memcmp(fp8, fp8e, n * sizeof(float)), 0);
    free(aut);
    free(f32);
    free(bf16);
    free(fp8);
    free(fp8e);
    unlink(path);
}

/* The kernels of every instruction set give the same bits: each dot
 * product has one summation order, whatever the vector width. */
Test(modes, every_isa_gives_identical_logits)
{
    /* F32, and every quantized type with an integer block kernel
     * (kernels.c, int_kernels: all those ggml multiplies). */
    static const int qtypes[] = { VT_TYPE_Q4_0, VT_TYPE_Q4_1, VT_TYPE_Q5_0, VT_TYPE_Q5_1, VT_TYPE_Q8_0,
                                  VT_TYPE_Q2_K, VT_TYPE_Q3_K, VT_TYPE_Q4_K, VT_TYPE_Q5_K, VT_TYPE_Q6_K,
                                  VT_TYPE_IQ2_XXS, VT_TYPE_IQ2_XS, VT_TYPE_IQ2_S, VT_TYPE_IQ3_XXS, VT_TYPE_IQ3_S,
                                  VT_TYPE_IQ1_S, VT_TYPE_IQ1_M, VT_TYPE_IQ4_NL, VT_TYPE_IQ4_XS, VT_TYPE_TQ1_0,
                                  VT_TYPE_TQ2_0, VT_TYPE_MXFP4 };
    enum { N_SPECS = 1 + (int)(sizeof qtypes / sizeof qtypes[0]) };
    spec specs[N_SPECS];
    specs[0] = tiny_f32();
    for (int k = 1; k < N_SPECS; k++) {
        specs[k] = tiny_quant(qtypes[k - 1]);
        specs[k].n_layer = 1;
        specs[k].random_blocks = 1;
    }
    const char *isas[] = { "c", "sse2", "avx2", "avx512f", "avx512vnni" };
    for (int k = 0; k < N_SPECS; k++) {
        const char *path = make_model(&specs[k]);
        int32_t tok[N_TOK];
        prompt(tok, N_TOK, specs[k].n_vocab, 31);
        const size_t n = (size_t)N_TOK * specs[k].n_vocab;
        for (int mm = 0; mm < 2; mm++) {
            vt_runner_settings s = settings_for(path);
            s.matmul = mm ? VT_MATMUL_Q8 : VT_MATMUL_EXACT;
            unsetenv("VT_ENGINE_ISA");
            float *base = run_settings(&s, tok, N_TOK);
            for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++) {
                setenv("VT_ENGINE_ISA", isas[i], 1);
                vt_qwen3 *m = open_ok(&s);
                char want[32];
                snprintf(want, sizeof want, "isa=%s ", isas[i]);
                if (!strstr(vt_qwen3_detail(m), want)) { /* CPU lacks it */
                    vt_qwen3_close(m);
                    continue;
                }
                float *got = run_all(m, tok, N_TOK);
                cr_assert_eq(memcmp(base, got, n * sizeof(float)), 0, "%s, matmul %d: max diff %g",
                             isas[i], mm, max_abs_diff(base, got, n));
                free(got);
                vt_qwen3_close(m);
            }
            free(base);
        }
        unsetenv("VT_ENGINE_ISA");
        unlink(path);
    }
}

/* Q8 mode's activation rounding is ggml's quantizer followed by its
 * dequantizer, bit for bit (including exact ties): for Q8_0 and Q8_1 the
 * quantizer of the CPU backend llama.cpp loads (on x86 it rounds x * 127/amax
 * to nearest even, where the reference rounds x / d half away from zero),
 * for Q8_K the reference, which every build uses. */
Test(modes, activation_rounding_matches_ggml_cpu_quantizers)
{
    void *lib = dlopen(vt_ggml_path(oracle()), RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(lib, "%s", dlerror());
    vt_error err;
    vt_error_clear(&err);
    vt_ggml_mm *mm = vt_ggml_mm_open(NULL, 1, &err);
    cr_assert_not_null(mm, "%s", err.msg);
    void *cpu = dlopen(vt_ggml_mm_cpu_backend(mm), RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    cr_assert_not_null(cpu, "%s", dlerror());
    void (*q8_0)(const float *, void *, int64_t) = (void (*)(const float *, void *, int64_t))dlsym(cpu, "quantize_row_q8_0");
    void (*q8_1)(const float *, void *, int64_t) = (void (*)(const float *, void *, int64_t))dlsym(cpu, "quantize_row_q8_1");
    void (*q8_0_ref)(const float *, void *, int64_t) = (void (*)(const float *, void *, int64_t))dlsym(lib, "quantize_row_q8_0_ref");
    void (*q8_k)(const float *, void *, int64_t) = (void (*)(const float *, void *, int64_t))dlsym(lib, "quantize_row_q8_K_ref");
    void (*dq8_0)(const void *, float *, int64_t) = (void (*)(const void *, float *, int64_t))dlsym(lib, "dequantize_row_q8_0");
    void (*dq8_k)(const void *, float *, int64_t) = (void (*)(const void *, float *, int64_t))dlsym(lib, "dequantize_row_q8_K");
    cr_assert(q8_0 && q8_1 && q8_0_ref && q8_k && dq8_0 && dq8_k);

    enum { N = 1024 };
    static float x[N], ours[N], theirs[N];
    static uint8_t blocks[N * 2];
    vt_rng r;
    vt_rng_seed(&r, 37);
    for (int cls = 0; cls < 4; cls++) {
        for (int i = 0; i < N; i++) {
            switch (cls) {
            case 0: x[i] = (float)vt_rng_normal(&r); break;
            case 1: x[i] = (float)(vt_rng_normal(&r) * exp(4 * vt_rng_normal(&r))); break;
            case 2: x[i] = (i % 7 == 0) ? 0.0f : (float)vt_rng_uniform(&r) - 0.5f; break;
            /* Exact ties: a block scale of 1 and half-integer values. */
            default: x[i] = (i % 32 == 31 || i % 256 == 0) ? -127.0f : (float)((i % 200) - 100) + 0.5f; break;
            }
        }
        cr_assert_str_eq(vt_qwen3_vec_dot_type(VT_TYPE_Q4_0), "Q8_0");
        vt_qwen3_round_activation(VT_TYPE_Q4_0, x, ours, N);
        q8_0(x, blocks, N);
        dq8_0(blocks, theirs, N);
        cr_assert_eq(memcmp(ours, theirs, sizeof ours), 0, "Q8_0, class %d", cls);
        /* The ties class is where the reference quantizer differs. */
        q8_0_ref(x, blocks, N);
        dq8_0(blocks, theirs, N);
        if (cls == 3 && __builtin_cpu_supports("avx"))
            cr_assert_neq(memcmp(ours, theirs, sizeof ours), 0, "exact ties round differently");

        cr_assert_str_eq(vt_qwen3_vec_dot_type(VT_TYPE_Q5_1), "Q8_1");
        vt_qwen3_round_activation(VT_TYPE_Q5_1, x, ours, N);
        q8_1(x, blocks, N);
        for (int b = 0; b < N / 32; b++) { /* block_q8_1: F16 d, F16 s, 32 x int8 */
            uint16_t d16;
            memcpy(&d16, blocks + b * 36, 2);
            for (int j = 0; j < 32; j++)
                theirs[b * 32 + j] = vt_f16_to_f32(d16) * (float)(int8_t)blocks[b * 36 + 4 + j];
        }
        cr_assert_eq(memcmp(ours, theirs, sizeof ours), 0, "Q8_1, class %d", cls);

        cr_assert_str_eq(vt_qwen3_vec_dot_type(VT_TYPE_IQ2_XXS), "Q8_K");
        vt_qwen3_round_activation(VT_TYPE_Q4_K, x, ours, N);
        q8_k(x, blocks, N);
        dq8_k(blocks, theirs, N);
        cr_assert_eq(memcmp(ours, theirs, sizeof ours), 0, "Q8_K, class %d", cls);
    }
    cr_assert_str_eq(vt_qwen3_vec_dot_type(VT_TYPE_F16), "F16");
    cr_assert_str_eq(vt_qwen3_vec_dot_type(VT_TYPE_BF16), "BF16");
    cr_assert_str_eq(vt_qwen3_vec_dot_type(VT_TYPE_MXFP4), "Q8_0");
    cr_assert_str_eq(vt_qwen3_vec_dot_type(VT_TYPE_IQ4_NL), "Q8_0");
    cr_assert_str_eq(vt_qwen3_vec_dot_type(VT_TYPE_TQ1_0), "Q8_K");
    cr_assert_str_eq(vt_qwen3_vec_dot_type(VT_TYPE_F32), "F32");
    dlclose(cpu);
    vt_ggml_mm_free(mm);
    dlclose(lib);
}

#ifdef VT_X86
/* The AVX-512 Q8_K quantizer (a decode step's activation for the K-quant
 * products) writes the scalar one's bytes, on rows made to catch it out:
 * a maximum met as +a and -a (the first one's sign sets the scale), NaN
 * elements (skipped), zero and -0 blocks, values landing on .5. */
Test(modes, q8_k_avx512_quantizer_writes_the_scalar_bytes)
{
    if (!vt_kernels_pick().vnni)
        cr_skip_test("this CPU has not got the AVX-512 VNNI kernel set");
    enum { N = 2048 };
    static float x[N];
    static uint8_t want[N / 256 * VT_Q8_K_BYTES], got[N / 256 * VT_Q8_K_BYTES];
    vt_rng r;
    vt_rng_seed(&r, 71);
    for (int cls = 0; cls < 6; cls++) {
        for (int i = 0; i < N; i++) {
            switch (cls) {
            case 0: x[i] = (float)vt_rng_normal(&r); break;
            case 1: x[i] = (float)(vt_rng_normal(&r) * exp(4 * vt_rng_normal(&r))); break;
            case 2: x[i] = (i / 256) % 2 ? ((i % 3) ? 0.0f : -0.0f) : (float)vt_rng_normal(&r); break;
            case 3: x[i] = (i % 97 == 5) ? NAN : (float)vt_rng_normal(&r); break;
            case 4: x[i] = (float)((i % 254) - 127) + 0.5f; break; /* scale 1: ties */
            default: x[i] = (float)vt_rng_uniform(&r) - 0.5f; break;
            }
        }
        if (cls == 5) /* the largest magnitude twice per block, the sign of its first */
            for (int b = 0; b < N / 256; b++) {
                x[b * 256 + 10 + b] = (b % 2 ? 3.0f : -3.0f);
                x[b * 256 + 200 - b] = (b % 2 ? -3.0f : 3.0f);
            }
        vt_act_quantize_row(VT_ACT_Q8_K, x, want, N);
        memset(got, 0xa5, sizeof got);
        vt_act_quantize_q8_k_avx512(x, got, N);
        cr_assert_eq(memcmp(want, got, sizeof want), 0, "Q8_K rows differ, class %d", cls);
    }
}
#endif

/* ---------------------------------------------------------------------
 * Errors
 * --------------------------------------------------------------------- */

Test(errors, capacity_overflow_is_einput_and_leaves_the_sequence)
{
    spec sp = tiny_f32();
    const char *path = make_model(&sp);
    vt_runner_settings s = settings_for(path);
    s.n_ctx = 8;
    int32_t tok[9];
    prompt(tok, 9, sp.n_vocab, 23);
    vt_qwen3 *m = open_ok(&s);
    float *full = run_all(m, tok, 8);
    float *buf = malloc((size_t)9 * sp.n_vocab * sizeof *buf);
    vt_error err;
    vt_error_clear(&err);
    cr_assert_eq(vt_qwen3_eval(m, tok, 9, 1, buf, &err), VT_EINPUT, "9 tokens > n_ctx 8");
    cr_assert(strstr(err.msg, "n_ctx = 8"), "%s", err.msg);
    vt_qwen3_reset(m);
    cr_assert_eq(vt_qwen3_eval(m, tok, 6, 1, buf, &err), VT_OK);
    vt_error_clear(&err);
    cr_assert_eq(vt_qwen3_eval(m, tok + 6, 3, 1, buf, &err), VT_EINPUT);
    cr_assert(strstr(err.msg, "capacity"), "%s", err.msg);
    cr_assert_eq(vt_qwen3_n_past(m), 6, "a refused eval appends nothing");
    cr_assert_eq(vt_qwen3_eval(m, tok + 6, 2, 0, buf, &err), VT_OK, "%s", err.msg);
    cr_assert_eq(memcmp(buf, full + (size_t)7 * sp.n_vocab, (size_t)sp.n_vocab * 4), 0);
    /* Bad token ids: refused before anything is computed. */
    vt_qwen3_reset(m);
    int32_t bad[3] = { 1, sp.n_vocab, 2 };
    vt_error_clear(&err);
    cr_assert_eq(vt_qwen3_eval(m, bad, 3, 1, buf, &err), VT_EINPUT);
    cr_assert(strstr(err.msg, "position 1"), "%s", err.msg);
    bad[1] = -1;
    cr_assert_eq(vt_qwen3_eval(m, bad, 3, 1, buf, &err), VT_EINPUT);
    cr_assert_eq(vt_qwen3_n_past(m), 0);
    free(full);
    free(buf);
    vt_qwen3_close(m);
    unlink(path);
}

static void expect_open_error(const spec *sp, const char *what)
{
    const char *path = make_model(sp);
    vt_runner_settings s = settings_for(path);
    vt_error err;
    vt_error_clear(&err);
    vt_qwen3 *m = vt_qwen3_open(&s, &err);
    cr_assert_null(m, "%s should be refused", what);
    cr_assert_eq(err.code, VT_EINPUT);
    cr_assert(strstr(err.msg, path), "message names the file: %s", err.msg);
    cr_assert(strstr(err.msg, what), "message names %s: %s", what, err.msg);
    unlink(path);
}

Test(errors, missing_misshapen_or_mistyped_tensors_are_named)
{
    spec sp = tiny_f32();
    sp.omit = "blk.1.ffn_up.weight";
    expect_open_error(&sp, "blk.1.ffn_up.weight: missing");
    sp = tiny_f32();
    sp.omit = "output_norm.weight";
    expect_open_error(&sp, "output_norm.weight");
    sp = tiny_f32();
    sp.misshape = "blk.0.attn_k.weight";
    expect_open_error(&sp, "blk.0.attn_k.weight: shape [64, 33, 1, 1]: expected [64, 32, 1, 1]");
    sp = tiny_f32();
    sp.misshape = "output.weight";
    expect_open_error(&sp, "output.weight: shape");
    sp = tiny_f32();
    sp.norm_f16 = "blk.0.attn_q_norm.weight";
    expect_open_error(&sp, "blk.0.attn_q_norm.weight: type F16: expected F32");
}

Test(errors, bad_settings_and_files)
{
    vt_runner_settings s = settings_for("/nonexistent/model.gguf");
    vt_error err;
    vt_error_clear(&err);
    cr_assert_null(vt_qwen3_open(&s, &err));
    cr_assert_eq(err.code, VT_EINPUT);
    cr_assert(strstr(err.msg, "/nonexistent/model.gguf"), "%s", err.msg);
    spec sp = tiny_f32();
    const char *path = make_model(&sp);
    s = settings_for(path);
    s.n_ctx = 0;
    cr_assert_null(vt_qwen3_open(&s, &err));
    cr_assert_eq(err.code, VT_EINPUT);
    unlink(path);
}

/* A planted error must plant what it says or be refused: a malformed value,
 * a tensor the model lacks, a row out of range. One on output.weight row 7
 * doubles logit 7 at every position and leaves every other logit's bits. */
Test(errors, a_planted_error_plants_what_it_names_or_is_refused)
{
    spec sp = tiny_f32();
    const char *path = make_model(&sp);
    vt_runner_settings s = settings_for(path);
    vt_error err;
    const char *bad[] = { "x", "blk.0.ffn_down.weight", "blk.0.ffn_down.weight:3", "blk.0.ffn_down.weight:3:",
                          "blk.0.ffn_down.weight:-1:2", "blk.0.ffn_down.weight:3:1", "blk.0.ffn_down.weight:3:nan",
                          "blk.0.ffn_down.weight:3:2x", ":3:2", "blk.0.ffn_down.weight: 3:2",
                          "blk.9.ffn_down.weight:3:2", "blk.0.ffn_down.weight:100000:2" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("VT_ENGINE_PLANT", bad[i], 1);
        vt_error_clear(&err);
        cr_assert_null(vt_qwen3_open(&s, &err), "%s", bad[i]);
        cr_assert_eq(err.code, VT_EINPUT, "%s", bad[i]);
        cr_assert(strstr(err.msg, "VT_ENGINE_PLANT"), "%s: %s", bad[i], err.msg);
    }
    int32_t tok[N_TOK];
    prompt(tok, N_TOK, sp.n_vocab, 3);
    unsetenv("VT_ENGINE_PLANT");
    float *base = run_settings(&s, tok, N_TOK);
    setenv("VT_ENGINE_PLANT", "output.weight:7:2", 1);
    vt_qwen3 *m = open_ok(&s);
    cr_assert(strstr(vt_qwen3_detail(m), " plant=output.weight:7:2"), "%s", vt_qwen3_detail(m));
    vt_qwen3_close(m);
    float *planted = run_settings(&s, tok, N_TOK);
    unsetenv("VT_ENGINE_PLANT");
    for (int t = 0; t < N_TOK; t++)
        for (int v = 0; v < sp.n_vocab; v++) {
            float b = base[(size_t)t * sp.n_vocab + v], p = planted[(size_t)t * sp.n_vocab + v];
            if (v == 7)
                cr_assert_eq(p, 2.0f * b, "token %d: logit %g planted %g", t, (double)b, (double)p);
            else
                cr_assert_eq(p, b, "token %d, logit %d", t, v);
        }
    free(base);
    free(planted);
    unlink(path);
}

/* ---------------------------------------------------------------------
 * The runner table
 * --------------------------------------------------------------------- */

Test(runner, engine_ops_table)
{
    spec sp = tiny_f32();
    const char *path = make_model(&sp);
    vt_runner_settings s = settings_for(path);
    const vt_runner_ops *ops = vt_runner_find("engine");
    cr_assert_eq(ops, &vt_runner_engine);
    cr_assert_str_eq(ops->name, "engine");
    void *st = NULL;
    vt_error err;
    vt_error_clear(&err);
    cr_assert_eq(ops->open(&s, &st, &err), VT_OK, "%s", err.msg);
    cr_assert_eq(ops->n_vocab(st), sp.n_vocab);
    vt_runner_identity id;
    ops->identity(st, &id);
    cr_assert_str_eq(id.runner, "engine");
    cr_assert_str_eq(id.version, "vt 0.1.0");
    cr_assert_str_eq(id.backend, "cpu");
    cr_assert_str_eq(id.library, "");
    cr_assert(strstr(id.detail, "threads=2"), "%s", id.detail);
    int32_t tok[N_TOK];
    prompt(tok, N_TOK, sp.n_vocab, 29);
    float *a = malloc((size_t)sp.n_vocab * 4), *b = malloc((size_t)sp.n_vocab * 4);
    cr_assert_eq(ops->eval(st, tok, N_TOK, 0, a, &err), VT_OK, "%s", err.msg);
    cr_assert_eq(ops->reset(st, &err), VT_OK);
    cr_assert_eq(ops->eval(st, tok, N_TOK, 0, b, &err), VT_OK, "%s", err.msg);
    cr_assert_eq(memcmp(a, b, (size_t)sp.n_vocab * 4), 0);
    ops->close(st);
    /* Open failure through the table reports the error code. */
    s.model_path = "/nonexistent.gguf";
    cr_assert_eq(ops->open(&s, &st, &err), VT_EINPUT);
    free(a);
    free(b);
    unlink(path);
}
