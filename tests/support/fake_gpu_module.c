/* Stand-ins for the GPU backend module (engine/gpu_backend.h), so that the
 * engine runner's module loading and its refusals are tested on machines
 * without a GPU (tests/test_gpu_backend.c). One source, one variant per
 * FAKE_* definition (CMakeLists.txt):
 *   FAKE_OK          a working table whose "device" is this process: the
 *                    logits are a fixed function of position and token, so
 *                    the runner, capture and identity plumbing can run;
 *   FAKE_NO_DEVICE   the runtime sees no device;
 *   FAKE_WRONG_ABI   abi 99;
 *   FAKE_WRONG_SIZES another tree's vt_runner_settings;
 *   FAKE_NULL_ENTRY  eval missing;
 *   FAKE_NO_SYMBOL   no table exported at all.
 * Not a GPU backend: nothing here is evidence of one. */
#include "engine/gpu_backend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAKE_VOCAB 1280 /* the tiny fixtures' vocabulary */

typedef struct fake {
    int32_t n_past;
    vt_runner_settings s;
} fake;

__attribute__((unused)) static int f_device_count(int *n, vt_error *err)
{
    (void)err;
#ifdef FAKE_NO_DEVICE
    *n = 0;
#else
    *n = 1;
#endif
    return VT_OK;
}

__attribute__((unused)) static int f_device_name(int device, char *buf, size_t cap, vt_error *err)
{
    (void)err;
    snprintf(buf, cap, "fake GPU %d (a test module)", device);
    return VT_OK;
}

__attribute__((unused)) static int f_runtime(int device, const char **vendor, int *rt, int *drv, vt_error *err)
{
    (void)device, (void)err;
    *vendor = "fake";
    *rt = 1;
    *drv = 2;
    return VT_OK;
}

__attribute__((unused)) static int f_open(const vt_runner_settings *s, void **model, vt_error *err)
{
    fake *f = calloc(1, sizeof *f);
    if (!f)
        return vt_error_set(err, VT_EINPUT, "fake: out of memory");
    f->s = *s;
    *model = f;
    return VT_OK;
}

__attribute__((unused)) static void f_close(void *m) { free(m); }
__attribute__((unused)) static void f_reset(void *m) { ((fake *)m)->n_past = 0; }

__attribute__((unused)) static int f_eval(void *m, const int32_t *tokens, int32_t n, int all_logits, float *logits, vt_error *err)
{
    fake *f = m;
    if (f->n_past + n > f->s.n_ctx)
        return vt_error_set(err, VT_EINPUT, "fake: %d tokens after %d: expected at most n_ctx %d", n, f->n_past,
                            f->s.n_ctx);
    for (int32_t t = 0; t < n; t++) {
        float *row = logits + (all_logits ? (size_t)t * FAKE_VOCAB : 0);
        if (all_logits || t == n - 1)
            for (int32_t v = 0; v < FAKE_VOCAB; v++)
                row[v] = (float)((v * 7 + tokens[t] + f->n_past + t) % 97) * -0.125f;
    }
    f->n_past += n;
    return VT_OK;
}

__attribute__((unused)) static int32_t f_n_vocab(void *m)
{
    (void)m;
    return FAKE_VOCAB;
}

__attribute__((unused)) static void f_resolved(void *m, vt_runner_settings *out)
{
    (void)m;
    out->n_threads = 1;
    if (out->cache_dtype == VT_CACHE_AUTO)
        out->cache_dtype = VT_CACHE_F32;
    if (out->mode == VT_MODE_EAGER)
        out->n_batch = 1;
}

__attribute__((unused)) static const char *f_arch(void *m)
{
    (void)m;
    return "fake";
}

__attribute__((unused)) static void f_counts(void *m, uint64_t *l, uint64_t *c)
{
    (void)m;
    *l = *c = 0;
}

__attribute__((unused)) static int f_bandwidth(int device, size_t bytes, int passes, double *bps, vt_error *err)
{
    (void)device, (void)bytes, (void)passes, (void)err;
    *bps = 1e9;
    return VT_OK;
}

#ifndef FAKE_NO_SYMBOL
__attribute__((visibility("default"))) const vt_gpu_backend vt_gpu_backend_v1 = {
#ifdef FAKE_WRONG_ABI
    .abi = 99,
#else
    .abi = VT_GPU_BACKEND_ABI,
#endif
    .table_size = sizeof(vt_gpu_backend),
#ifdef FAKE_WRONG_SIZES
    .settings_size = sizeof(vt_runner_settings) + 8,
#else
    .settings_size = sizeof(vt_runner_settings),
#endif
    .error_size = sizeof(vt_error),
    .vendor = "fake",
    .targets = "none",
    .sources_sha256 = "0000000000000000000000000000000000000000000000000000000000000000",
    .device_count = f_device_count,
    .device_name = f_device_name,
    .runtime = f_runtime,
    .open = f_open,
    .close = f_close,
    .reset = f_reset,
#ifndef FAKE_NULL_ENTRY
    .eval = f_eval,
#endif
    .n_vocab = f_n_vocab,
    .resolved = f_resolved,
    .arch = f_arch,
    .counts = f_counts,
    .read_bandwidth = f_bandwidth,
};
#endif
