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

#endif
