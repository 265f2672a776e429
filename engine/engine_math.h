/* The engine's scalar arithmetic that the CPU kernels and the GPU backend
 * share (engine/kernels_*.c, engine/hip/ops.hip): ggml's reduction tree, its
 * vectorised exponential, and one lane's pieces of RoPE and SwiGLU. One
 * source, compiled for both, so both compute the same bits: every step is an
 * IEEE operation (fused where written as fmaf, never contracted otherwise:
 * -ffp-contract=off on the CPU, -fmad=false / -ffp-contract=off on the GPU).
 * Common subset of C and C++, as codec_blocks.h. */
#ifndef VT_ENGINE_MATH_H
#define VT_ENGINE_MATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#ifndef VT_HD
#if defined(__CUDACC__) || defined(__HIPCC__)
#define VT_HD __host__ __device__ static inline
#else
#define VT_HD static inline
#endif
#endif

/* The pairwise tree of 16 lanes (_mm512_reduce_add_ps as gcc compiles it):
 * the dot products' and attention's last step. */
VT_HD float tree16(float *l)
{
    for (int k = 0; k < 8; k++)
        l[k] += l[k + 8];
    for (int k = 0; k < 4; k++)
        l[k] += l[k + 4];
    l[0] += l[2];
    l[1] += l[3];
    return l[0] + l[1];
}

VT_HD float pow2i(int e) /* 2^e for -126 <= e <= 127 */
{
    const uint32_t bits = (uint32_t)(e + 127) << 23;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/* One lane of ggml_v_expf (AVX-512): n = round(x / ln 2) by the 1.5 * 2^23
 * shift, b = x - n ln 2 in two parts, a degree-5 polynomial j(b), then
 * vscalefps j * 2^n (one rounding, also where it lands in subnormals);
 * |n| > 192 gives 0 or infinity. Within 1.5 ULP of exp, other bits than
 * the C library's. */
VT_HD float expf16_body(float x)
{
    const float z = fmaf(x, 0x1.715476p+0f, 0x1.8p23f);
    const float n = z - 0x1.8p23f;
    const float b = fmaf(-n, 0x1.7f7d1cp-20f, fmaf(-n, 0x1.62e4p-1f, x));
    if (n != n)
        return n;
    if (fabsf(n) > 192.0f)
        return n <= 0.0f ? 0.0f : INFINITY;
    const float u = b * b;
    const float j = fmaf(fmaf(fmaf(0x1.0e4020p-7f, b, 0x1.573e2ep-5f), u,
                              fmaf(0x1.555e66p-3f, b, 0x1.fffdb6p-2f)),
                         u, fmaf(0x1.ffffecp-1f, b, 1.0f));
    const int e = (int)n;
    if (e < -126)
        return j * pow2i(e + 100) * 0x1p-100f; /* exact, then one rounding */
    if (e > 127)
        return j * pow2i(e - 127) * 0x1p127f;
    return j * pow2i(e);
}

/* One element of ggml_vec_swiglu_f32 (its vectorised part): g / (1 + exp(0 - g)) * u. */
VT_HD float swiglu_lane(float g, float u) { return g / (1.0f + expf16_body(0.0f - g)) * u; }

/* One pair of NeoX RoPE: ggml's build contracts x0 c - (x1 s) and
 * x0 s + (x1 c), the product in brackets rounded, the rest one fused
 * operation. */
VT_HD void rope_neox_pair(float *x0, float *x1, float c, float s)
{
    const float a = *x0, b = *x1;
    *x0 = fmaf(a, c, -(b * s));
    *x1 = fmaf(a, s, b * c);
}

/* RMSNorm's mean (float)(s / n), where s is the serial double sum
 * ((a0 + a1) + a2) + ... of n terms a_i >= 0 (vt_rmsnorm's, ggml's), from
 * their sum t in any other order, where that is certain. Any order of
 * additions of n terms >= 0 is within (n-1)u / (1 - (n-1)u) of the exact
 * sum, relative (u = 2^-53; Higham, Accuracy and Stability of Numerical
 * Algorithms, 4.2; adding an exact zero adds no error), so s lies within
 * t (1 -+ d) for d = 8 (n + 64) u, twice what the two bounds ask, which also
 * covers the rounding of lo and hi themselves. Division by n and the
 * conversion to float are monotone: when both ends give the same float, s
 * gives it too. Else (an interval across a float's rounding boundary,
 * about once in 40,000 sums of 1024 terms), and for t not finite, huge or
 * so small that t d underflows, it returns 0 and the caller sums in order.
 * A sum of terms >= 0 is 0 only when every term is. */
VT_HD int mean_of_any_order_sum(double t, int64_t n, float *mean)
{
    if (n < 1 || n > ((int64_t)1 << 40) || !(t >= 0.0 && t <= 0x1p1000))
        return 0; /* NaN, infinity, negative or near overflow */
    if (t == 0.0) {
        *mean = 0.0f;
        return 1;
    }
    if (t < 0x1p-900)
        return 0;
    const double d = (double)(n + 64) * 0x1p-50;
    const float lo = (float)((t - t * d) / (double)n), hi = (float)((t + t * d) / (double)n);
    if (lo != hi)
        return 0;
    *mean = lo;
    return 1;
}

/* The C library's expf and logf, bit for bit, for the GPU (qwen35's gates:
 * the CPU engine calls the C library itself, as ggml does). glibc 2.28 and
 * later computes both in double from a small table and a short polynomial
 * (the method of Arm's optimized-routines) and rounds once to float; on
 * x86-64 with FMA, which every machine here has, its build fuses the steps
 * fused below. Measured on Debian 12's glibc 2.36 over all 2^32 floats:
 * these give its bits for every input (without the two fused steps of the
 * reduction, two inputs differ: tests/test_qwen35.c keeps them). */

/* exp(x) = 2^(n/32) * exp(r ln2 / 32), n = round(32 x / ln 2): the table
 * holds 2^(i/32) for i = n mod 32 and n div 32 goes into its exponent; a
 * cubic in r (|r| <= 1/2) for the rest. Overflow gives infinity, underflow
 * 0, as the library's results. */
VT_HD float vt_libm_expf(float x)
{
    static const double two_to_i_32[32] = {
        0x1p+0,              0x1.059b0d3158574p+0, 0x1.0b5586cf9890fp+0, 0x1.11301d0125b51p+0,
        0x1.172b83c7d517bp+0, 0x1.1d4873168b9aap+0, 0x1.2387a6e756238p+0, 0x1.29e9df51fdee1p+0,
        0x1.306fe0a31b715p+0, 0x1.371a7373aa9cbp+0, 0x1.3dea64c123422p+0, 0x1.44e086061892dp+0,
        0x1.4bfdad5362a27p+0, 0x1.5342b569d4f82p+0, 0x1.5ab07dd485429p+0, 0x1.6247eb03a5585p+0,
        0x1.6a09e667f3bcdp+0, 0x1.71f75e8ec5f74p+0, 0x1.7a11473eb0187p+0, 0x1.82589994cce13p+0,
        0x1.8ace5422aa0dbp+0, 0x1.93737b0cdc5e5p+0, 0x1.9c49182a3f09p+0,  0x1.a5503b23e255dp+0,
        0x1.ae89f995ad3adp+0, 0x1.b7f76f2fb5e47p+0, 0x1.c199bdd85529cp+0, 0x1.cb720dcef9069p+0,
        0x1.d5818dcfba487p+0, 0x1.dfc97337b9b5fp+0, 0x1.ea4afa2a490dap+0, 0x1.f50765b6e454p+0,
    };
    const double inv_ln2_32 = 0x1.71547652b82fep+0 * 32, shift = 0x1.8p+52; /* ulp(shift) = 1: rounds to an integer */
    const double c3 = 0x1.c6af84b912394p-5 / 32 / 32 / 32, c2 = 0x1.ebfce50fac4f3p-3 / 32 / 32,
                 c1 = 0x1.62e42ff0c52d6p-1 / 32;
    uint32_t ix;
    memcpy(&ix, &x, 4);
    if (((ix >> 20) & 0x7ff) >= 0x42b) { /* |x| >= 88, or not finite */
        if (ix == 0xff800000u)
            return 0.0f;
        if (((ix >> 20) & 0x7ff) >= 0x7f8)
            return x + x;
        if (x > 0x1.62e42ep6f)
            return INFINITY;
        if (x < -0x1.9fe368p6f)
            return 0.0f;
    }
    const double xd = (double)x;
    const double nd = fma(inv_ln2_32, xd, shift) - shift; /* exact: an integer */
    const double r = fma(inv_ln2_32, xd, -nd);
    const int64_t n = (int64_t)nd;
    uint64_t bits;
    const double t = two_to_i_32[n & 31];
    memcpy(&bits, &t, 8);
    bits += (uint64_t)(n >> 5) << 52; /* n div 32 into the exponent */
    double s;
    memcpy(&s, &bits, 8);
    const double y = fma(fma(c3, r, c2), r * r, fma(c1, r, 1.0));
    return (float)(y * s);
}

/* log(x) = k ln 2 + log(c) + log1p(z / c - 1) with x = 2^k z, z in
 * [0x1.66p-1, 0x1.66p0) split into 16 intervals, 1/c and log(c) of each
 * from the table, a cubic for log1p (its first coefficient 1). */
VT_HD float vt_libm_logf(float x)
{
    static const double inv_c[16] = {
        0x1.661ec79f8f3bep+0, 0x1.571ed4aaf883dp+0, 0x1.49539f0f010bp+0,  0x1.3c995b0b80385p+0,
        0x1.30d190c8864a5p+0, 0x1.25e227b0b8eap+0,  0x1.1bb4a4a1a343fp+0, 0x1.12358f08ae5bap+0,
        0x1.0953f419900a7p+0, 0x1p+0,               0x1.e608cfd9a47acp-1, 0x1.ca4b31f026aap-1,
        0x1.b2036576afce6p-1, 0x1.9c2d163a1aa2dp-1, 0x1.886e6037841edp-1, 0x1.767dcf5534862p-1,
    };
    static const double log_c[16] = {
        -0x1.57bf7808caadep-2, -0x1.2bef0a7c06ddbp-2, -0x1.01eae7f513a67p-2, -0x1.b31d8a68224e9p-3,
        -0x1.6574f0ac07758p-3, -0x1.1aa2bc79c81p-3,   -0x1.a4e76ce8c0e5ep-4, -0x1.1973c5a611cccp-4,
        -0x1.252f438e10c1ep-5, 0x0p+0,                0x1.aa5aa5df25984p-5,  0x1.c5e53aa362eb4p-4,
        0x1.526e57720db08p-3,  0x1.bc2860d22477p-3,   0x1.1058bc8a07ee1p-2,  0x1.4043057b6ee09p-2,
    };
    const double ln2 = 0x1.62e42fefa39efp-1, a3 = -0x1.00ea348b88334p-2, a2 = 0x1.5575b0be00b6ap-2,
                 a1 = -0x1.ffffef20a4123p-2;
    uint32_t ix;
    memcpy(&ix, &x, 4);
    if (ix == 0x3f800000u)
        return 0.0f;
    if (ix - 0x00800000u >= 0x7f800000u - 0x00800000u) { /* below 2^-126, or not finite */
        if (ix * 2 == 0)
            return -INFINITY;
        if (ix == 0x7f800000u)
            return x;
        if ((ix & 0x80000000u) || ix * 2 >= 0xff000000u)
            return NAN;
        const float scaled = x * 0x1p23f; /* a subnormal, made normal */
        memcpy(&ix, &scaled, 4);
        ix -= 23u << 23;
    }
    const uint32_t off = ix - 0x3f330000u;
    const int i = (int)((off >> 19) & 15), k = (int)((int32_t)off >> 23);
    const uint32_t iz = ix - (off & 0xff800000u);
    float zf;
    memcpy(&zf, &iz, 4);
    const double r = fma((double)zf, inv_c[i], -1.0);
    const double y0 = fma((double)k, ln2, log_c[i]);
    const double r2 = r * r;
    const double p = fma(a3, r2, fma(a2, r, a1));
    return (float)fma(p, r2, y0 + r);
}

#endif
