/* The qwen3 and qwen35 forward passes on the GPU against the CPU engine
 * (needs a GPU; scripts/gpu-build builds it): for each model (either
 * architecture, by its general.architecture) and each KV cache dtype, the
 * same N tokens (seeded random ids) teacher-forced through the CPU engine
 * (--matmul exact, or q8 with --matmul q8) and through the GPU in production mode (prefill batches),
 * in production mode decoding (the first half prefilled, then one token per
 * evaluation: the captured decode graph), in production mode by 3, 1, 4
 * and 2 tokens in turn, and in eager mode (one token per
 * evaluation, op by op); every position's logits
 * compared bit for bit, and each GPU run repeated to be bit-identical.
 * Exit 0 all identical, 1 a difference, 2 no device or bad usage.
 * usage: gpu_forward [--tokens N] [--repeats R] [--device D] [--matmul exact|q8]
 *        MODEL.gguf... */
#include "engine/gguf_file.h"
#include "engine/hip/vt_gpu.h"
#include "engine/qwen3.h"
#include "engine/qwen35.h"
#include "tests/gpu/gpu_program.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One architecture's CPU and GPU entry points. */
typedef struct arch_ops {
    const char *name;
    void *(*cpu_open)(const vt_runner_settings *, vt_error *);
    void (*cpu_close)(void *);
    int (*cpu_eval)(void *, const int32_t *, int32_t, int, float *, vt_error *);
    int32_t (*cpu_vocab)(const void *);
    void *(*gpu_open)(int, const vt_runner_settings *, vt_error *);
    void (*gpu_close)(void *);
    void (*gpu_reset)(void *);
    int (*gpu_eval)(void *, const int32_t *, int32_t, int, float *, vt_error *);
} arch_ops;

/* Thin wrappers, so that each architecture is one row of plain pointers. */
#define WRAP(pre, cpu_t, gpu_t, vocab)                                                              \
    static void *pre##_cpu_open(const vt_runner_settings *s, vt_error *e) { return vt_##pre##_open(s, e); } \
    static void pre##_cpu_close(void *m) { vt_##pre##_close((cpu_t *)m); }                          \
    static int pre##_cpu_eval(void *m, const int32_t *t, int32_t n, int all, float *l, vt_error *e)  \
    {                                                                                               \
        return vt_##pre##_eval((cpu_t *)m, t, n, all, l, e);                                        \
    }                                                                                               \
    static int32_t pre##_cpu_vocab(const void *m) { return vocab; }                                 \
    static void *pre##_gpu_open(int d, const vt_runner_settings *s, vt_error *e)                    \
    {                                                                                               \
        return vt_gpu_##pre##_open(d, s, e);                                                        \
    }                                                                                               \
    static void pre##_gpu_close(void *m) { vt_gpu_##pre##_close((gpu_t *)m); }                      \
    static void pre##_gpu_reset(void *m) { vt_gpu_##pre##_reset((gpu_t *)m); }                      \
    static int pre##_gpu_eval(void *m, const int32_t *t, int32_t n, int all, float *l, vt_error *e)  \
    {                                                                                               \
        return vt_gpu_##pre##_eval((gpu_t *)m, t, n, all, l, e);                                    \
    }
WRAP(qwen3, vt_qwen3, vt_gpu_qwen3, vt_qwen3_hparams_of((const vt_qwen3 *)m)->n_vocab)
WRAP(qwen35, vt_qwen35, vt_gpu_qwen35, vt_qwen35_hparams_of((const vt_qwen35 *)m)->n_vocab)
#define ROW(pre)                                                                                    \
    { #pre, pre##_cpu_open, pre##_cpu_close, pre##_cpu_eval, pre##_cpu_vocab, pre##_gpu_open, pre##_gpu_close, \
      pre##_gpu_reset, pre##_gpu_eval }
static const arch_ops archs[] = { ROW(qwen3), ROW(qwen35) };

static const arch_ops *arch_of(const char *path, vt_error *err)
{
    vt_gguf *g = vt_gguf_open(path, err);
    if (!g)
        return NULL;
    vt_gguf_str a = { 0 };
    const arch_ops *r = NULL;
    if (vt_gguf_get_str(g, "general.architecture", &a))
        for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++)
            if (a.len == strlen(archs[i].name) && memcmp(a.ptr, archs[i].name, a.len) == 0)
                r = &archs[i];
    if (!r)
        vt_error_set(err, VT_EINPUT, "%s: general.architecture: expected qwen3 or qwen35", path);
    vt_gguf_free(g);
    return r;
}

/* The logits of every position: tokens [0, split) in one evaluation, then
 * one at a time (split == n: all in one); split 0: evaluations of 3, 1, 4
 * and 2 tokens in turn (a decode step's products of several tokens). */
static int eval_split(const arch_ops *A, void *m, const int32_t *tok, int32_t n, int32_t split, int32_t V, float *out,
                      vt_error *err)
{
    if (split == 0) {
        static const int32_t sizes[4] = { 3, 1, 4, 2 };
        int rc = VT_OK;
        for (int32_t i = 0, k = 0; rc == VT_OK && i < n; k++) {
            const int32_t c = sizes[k % 4] < n - i ? sizes[k % 4] : n - i;
            rc = A->gpu_eval(m, tok + i, c, 1, out + (size_t)i * (size_t)V, err);
            i += c;
        }
        return rc;
    }
    int rc = A->gpu_eval(m, tok, split, 1, out, err);
    for (int32_t i = split; rc == VT_OK && i < n; i++)
        rc = A->gpu_eval(m, tok + i, 1, 1, out + (size_t)i * (size_t)V, err);
    return rc;
}

static int eval_all(const arch_ops *A, int gpu, int device, const vt_runner_settings *s, const int32_t *tok, int32_t n,
                    int32_t split, int32_t V, float *out, int repeats, int *repeat_ok, vt_error *err)
{
    *repeat_ok = 1;
    if (!gpu) {
        void *m = A->cpu_open(s, err);
        if (!m)
            return err->code;
        int rc = A->cpu_eval(m, tok, n, 1, out, err);
        A->cpu_close(m);
        return rc;
    }
    void *m = A->gpu_open(device, s, err);
    if (!m)
        return err->code;
    const size_t bytes = (size_t)n * (size_t)V * sizeof(float);
    float *again = malloc(bytes);
    int rc = again ? eval_split(A, m, tok, n, split, V, out, err) : vt_error_set(err, VT_EINPUT, "out of memory");
    for (int r = 1; rc == VT_OK && r < repeats; r++) {
        A->gpu_reset(m);
        rc = eval_split(A, m, tok, n, split, V, again, err);
        *repeat_ok &= rc == VT_OK && memcmp(out, again, bytes) == 0;
    }
    free(again);
    A->gpu_close(m);
    return rc;
}

int main(int argc, char **argv)
{
    int32_t n = 48;
    int repeats = 10, device = 0, first = 1;
    vt_matmul_mode matmul = VT_MATMUL_EXACT;
    for (; first + 1 < argc && argv[first][0] == '-'; first += 2) {
        if (!strcmp(argv[first], "--tokens"))
            n = atoi(argv[first + 1]);
        else if (!strcmp(argv[first], "--repeats"))
            repeats = atoi(argv[first + 1]);
        else if (!strcmp(argv[first], "--device"))
            device = atoi(argv[first + 1]);
        else if (!strcmp(argv[first], "--matmul")) {
            if (!vt_matmul_mode_parse(argv[first + 1], &matmul)) {
                fprintf(stderr, "gpu_forward: --matmul '%s': expected exact or q8\n", argv[first + 1]);
                return 2;
            }
        }
        else {
            fprintf(stderr, "gpu_forward: %s: unknown option\n", argv[first]);
            return 2;
        }
    }
    if (first >= argc || n < 1 || repeats < 1) {
        fprintf(stderr, "usage: gpu_forward [--tokens N] [--repeats R] [--device D] [--matmul exact|q8] MODEL.gguf...\n");
        return 2;
    }
    char name[256];
    if (gpu_program_device("gpu_forward", device, name, sizeof name, NULL))
        return 2;
    vt_error err;
    vt_error_clear(&err);
    printf("device %d: %s; --matmul %s; %d tokens teacher-forced, all logits; GPU runs repeated %d times\n", device,
           name, vt_matmul_mode_name(matmul), n, repeats);
    printf("%-28s %-9s %-11s %10s %12s %8s %s\n", "model", "cache", "gpu-mode", "differ", "max|dlogit|", "argmax",
           "repeats");
    int failures = 0;
    static const vt_cache_dtype dts[3] = { VT_CACHE_F32, VT_CACHE_BF16, VT_CACHE_FP8_E4M3 };
    for (int a = first; a < argc; a++) {
        const char *base = strrchr(argv[a], '/') ? strrchr(argv[a], '/') + 1 : argv[a];
        for (int d = 0; d < 3; d++) {
            vt_runner_settings s;
            vt_runner_settings_default(&s);
            s.model_path = argv[a];
            s.matmul = matmul;
            s.cache_dtype = dts[d];
            s.n_threads = 8;
            s.n_ctx = n;
            s.mode = VT_MODE_PRODUCTION;
            const arch_ops *A = arch_of(argv[a], &err);
            void *probe = A ? A->cpu_open(&s, &err) : NULL;
            if (!probe) {
                printf("%s: %s\n", base, err.msg);
                return 2;
            }
            const int32_t V = A->cpu_vocab(probe);
            A->cpu_close(probe);
            int32_t *tok = malloc((size_t)n * sizeof *tok);
            float *cpu = malloc((size_t)n * (size_t)V * sizeof(float));
            float *gpu = malloc((size_t)n * (size_t)V * sizeof(float));
            uint64_t z = 0x9e3779b97f4a7c15ull * (uint64_t)(a + 1);
            for (int32_t i = 0; i < n; i++) {
                z ^= z << 13, z ^= z >> 7, z ^= z << 17;
                tok[i] = (int32_t)(z % (uint64_t)V);
            }
            int ok_r;
            if (eval_all(A, 0, device, &s, tok, n, n, V, cpu, 1, &ok_r, &err)) {
                printf("%s: cpu: %s\n", base, err.msg);
                return 2;
            }
            static const char *const modes[4] = { "production", "prod-decode", "prod-chunks", "eager" };
            for (int mode = 0; mode < 4; mode++) {
                s.mode = mode == 3 ? VT_MODE_EAGER : VT_MODE_PRODUCTION;
                const int32_t split = mode == 1 ? (n + 1) / 2 : mode == 2 ? 0 : n;
                if (eval_all(A, 1, device, &s, tok, n, split, V, gpu, repeats, &ok_r, &err)) {
                    printf("FAIL: %s: gpu: %s\n", base, err.msg);
                    failures++;
                    continue;
                }
                long long differ = 0, arg_differ = 0;
                double maxd = 0;
                for (int32_t p = 0; p < n; p++) {
                    int32_t ac = 0, ag = 0;
                    for (int32_t v = 0; v < V; v++) {
                        const float c = cpu[(size_t)p * V + v], g = gpu[(size_t)p * V + v];
                        differ += memcmp(&c, &g, sizeof c) != 0;
                        if (fabs((double)c - (double)g) > maxd)
                            maxd = fabs((double)c - (double)g);
                        ac = c > cpu[(size_t)p * V + ac] ? v : ac;
                        ag = g > gpu[(size_t)p * V + ag] ? v : ag;
                    }
                    arg_differ += ac != ag;
                }
                printf("%-28s %-9s %-11s %10lld %12.3g %4lld/%-3d %s\n", base, vt_cache_dtype_name(dts[d]),
                       modes[mode], differ, maxd, (long long)(n - arg_differ), n,
                       ok_r ? "identical" : "DIFFER");
                failures += differ != 0 || !ok_r;
            }
            free(tok);
            free(cpu);
            free(gpu);
        }
    }
    printf("%d failures\n", failures);
    return failures ? 1 : 0;
}
