/* argmax_bench: vt_argmax (greedy decode's pick, once a token over the
 * vocabulary) against the anchor, one read of the same row (a sum in eight
 * lanes: the least any one-pass argmax must do), and the plain scan
 * `if (x[i] > x[best]) best = i` whose answer it gives.
 *
 *   argmax_bench [--n N] [--runs R]
 *
 * A row of N (default 151,936, Qwen's vocabulary) pseudo-random logits with
 * the largest planted first, in the middle and last; each timing the best
 * of R (default 2000) calls, the row in cache as in decode (the logits were
 * just written). Prints microseconds a call and the ratio read/argmax (1.0:
 * argmax as fast as reading the row). */
#include "engine/runner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int32_t plain_scan(const float *x, int32_t n)
{
    int32_t best = 0;
    for (int32_t i = 1; i < n; i++)
        if (x[i] > x[best])
            best = i;
    return best;
}

/* Sums the row in eight lanes: every value read once. */
static int32_t read_row(const float *x, int32_t n)
{
    float lane[8] = { 0 };
    int32_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++)
            lane[k] += x[i + k];
    for (; i < n; i++)
        lane[0] += x[i];
    float s = 0;
    for (int k = 0; k < 8; k++)
        s += lane[k];
    return s > 0; /* so that the sum is not left out */
}

/* The best of runs calls of f, in microseconds; *sink keeps the results live. */
static double best_us(int32_t (*f)(const float *, int32_t), const float *x, int32_t n, int runs, int64_t *sink)
{
    double best = 1e30;
    for (int r = 0; r < runs; r++) {
        double t = now();
        *sink += f(x, n);
        t = now() - t;
        best = t < best ? t : best;
    }
    return best * 1e6;
}

int main(int argc, char **argv)
{
    int32_t n = 151936;
    int runs = 2000;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--n") && i + 1 < argc)
            n = (int32_t)atol(argv[++i]);
        else if (!strcmp(argv[i], "--runs") && i + 1 < argc)
            runs = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: argmax_bench [--n N] [--runs R]\n");
            return 2;
        }
    }
    if (n < 3 || runs < 1) {
        fprintf(stderr, "argmax_bench: --n: expected at least 3; --runs: at least 1\n");
        return 2;
    }
    float *x = malloc((size_t)n * sizeof *x);
    if (!x) {
        fprintf(stderr, "argmax_bench: out of memory\n");
        return 1;
    }
    uint64_t s = 0x9E3779B97F4A7C15ull;
    for (int32_t i = 0; i < n; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        x[i] = (float)(s >> 40) * (40.0f / 16777216.0f) - 20.0f;
    }
    printf("argmax_bench: %d values, best of %d calls, microseconds a call\n", n, runs);
    printf("%-8s %10s %10s %12s %14s\n", "largest", "read", "vt_argmax", "plain scan", "read/argmax");
    const int32_t at[3] = { 0, n / 2, n - 1 };
    const char *where[3] = { "first", "middle", "last" };
    int64_t sink = 0;
    int bad = 0;
    for (int k = 0; k < 3; k++) {
        x[at[k]] = 25.0f;
        if (vt_argmax(x, n) != at[k] || plain_scan(x, n) != at[k]) {
            fprintf(stderr, "argmax_bench: the largest at %d, vt_argmax says %d\n", at[k], vt_argmax(x, n));
            bad = 1;
        }
        const double rd = best_us(read_row, x, n, runs, &sink), am = best_us(vt_argmax, x, n, runs, &sink),
                     sc = best_us(plain_scan, x, n, runs / 10 + 1, &sink);
        printf("%-8s %10.1f %10.1f %12.1f %14.2f\n", where[k], rd, am, sc, rd / am);
        x[at[k]] = 0.0f;
    }
    free(x);
    return bad || sink == -1;
}
