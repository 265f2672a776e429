/* The "engine" runner: vt's own forward passes behind the runner interface,
 * so capture and compare drive it exactly as they drive llama.cpp. The
 * GGUF's general.architecture picks the model: "qwen3" (qwen3.c) or
 * "qwen35" (qwen35.c). --backend hip runs the same models on a GPU through
 * the backend module (gpu_module.h), whose identity (device, runtime and
 * driver, the module's sha256 and the sha256 of the sources it was built
 * from) the runner reports. */
#include "gguf_file.h"
#include "gpu_module.h"
#include "qwen3.h"
#include "qwen35.h"
#include "runner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One architecture's entry points, adapted to one shape. */
typedef struct arch_ops {
    const char *arch;
    void *(*open)(const vt_runner_settings *s, vt_error *err);
    void (*close)(void *m);
    void (*reset)(void *m);
    int (*eval)(void *m, const int32_t *tokens, int32_t n, int all_logits, float *logits,
                vt_error *err);
    int32_t (*n_vocab)(const void *m);
    const char *(*detail)(const void *m);
    void (*resolved)(const void *m, vt_runner_settings *out);
} arch_ops;

static void *q3_open(const vt_runner_settings *s, vt_error *err) { return vt_qwen3_open(s, err); }
static void q3_close(void *m) { vt_qwen3_close(m); }
static void q3_reset(void *m) { vt_qwen3_reset(m); }
static int q3_eval(void *m, const int32_t *t, int32_t n, int all, float *lg, vt_error *err)
{
    return vt_qwen3_eval(m, t, n, all, lg, err);
}
static int32_t q3_n_vocab(const void *m) { return vt_qwen3_hparams_of(m)->n_vocab; }
static const char *q3_detail(const void *m) { return vt_qwen3_detail(m); }
static void q3_resolved(const void *m, vt_runner_settings *out) { vt_qwen3_resolved(m, out); }

static void *q35_open(const vt_runner_settings *s, vt_error *err) { return vt_qwen35_open(s, err); }
static void q35_close(void *m) { vt_qwen35_close(m); }
static void q35_reset(void *m) { vt_qwen35_reset(m); }
static int q35_eval(void *m, const int32_t *t, int32_t n, int all, float *lg, vt_error *err)
{
    return vt_qwen35_eval(m, t, n, all, lg, err);
}
static int32_t q35_n_vocab(const void *m) { return vt_qwen35_hparams_of(m)->n_vocab; }
static const char *q35_detail(const void *m) { return vt_qwen35_detail(m); }
static void q35_resolved(const void *m, vt_runner_settings *out) { vt_qwen35_resolved(m, out); }

static const arch_ops archs[] = {
    { "qwen3", q3_open, q3_close, q3_reset, q3_eval, q3_n_vocab, q3_detail, q3_resolved },
    { "qwen35", q35_open, q35_close, q35_reset, q35_eval, q35_n_vocab, q35_detail, q35_resolved },
};

typedef struct engine {
    const arch_ops *ops;       /* backend cpu */
    const vt_gpu_backend *gpu; /* backend hip */
    void *m;
    int device;
    char device_name[160], library[4200], detail[640];
} engine;

/* The entry for the file's general.architecture; NULL (err set) if the
 * file cannot be read or the architecture is not one the engine runs. */
static const arch_ops *arch_of(const char *path, vt_error *err)
{
    char a[65];
    if (vt_gguf_read_arch(path, a, sizeof a, err))
        return NULL;
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++)
        if (strcmp(a, archs[i].arch) == 0)
            return &archs[i];
    vt_error_set(err, VT_EINPUT, "%s: key general.architecture: \"%s\": expected \"qwen3\" or \"qwen35\"", path, a);
    return NULL;
}

/* --backend hip: the model opened by the GPU module on s->device, and what
 * it runs on written into the identity strings. */
static int open_gpu(engine *e, const vt_runner_settings *s, vt_error *err)
{
    vt_gpu_module_info mi;
    int rc = vt_gpu_module_get(&mi, err);
    if (rc)
        return rc;
    const vt_gpu_backend *b = mi.backend;
    int n = 0;
    if ((rc = b->device_count(&n, err)))
        return rc;
    if (n == 0)
        return vt_error_set(err, VT_EINPUT, "--backend hip: no GPU: the runtime of %s sees none", mi.path);
    if (s->device >= n)
        return vt_error_set(err, VT_EINPUT, "--device %d: expected 0 <= device < %d (the GPUs the runtime of %s sees)",
                            s->device, n, mi.path);
    const char *vendor = "";
    int rt = 0, drv = 0;
    if ((rc = b->device_name(s->device, e->device_name, sizeof e->device_name, err)) ||
        (rc = b->runtime(s->device, &vendor, &rt, &drv, err)) || (rc = b->open(s, &e->m, err)))
        return rc;
    e->gpu = b;
    e->device = s->device;
    snprintf(e->library, sizeof e->library, "%s", mi.path);
    snprintf(e->detail, sizeof e->detail,
             "%s: device %d; %s runtime %d, driver %d; module %s size %llu sha256 %s; targets %s; sources sha256 %s",
             b->arch(e->m), s->device, vendor, rt, drv, mi.path, mi.size, mi.sha256, b->targets, b->sources_sha256);
    return VT_OK;
}

static int engine_open(const vt_runner_settings *s, void **state, vt_error *err)
{
    vt_error local;
    if (!err)
        err = &local;
    if (s && s->backend == VT_BACKEND_HIP) {
        engine *e = calloc(1, sizeof *e);
        if (!e)
            return vt_error_set(err, VT_EINPUT, "engine: out of memory");
        int rc = open_gpu(e, s, err);
        if (rc) {
            free(e);
            return rc;
        }
        *state = e;
        return VT_OK;
    }
    if (s && s->backend != VT_BACKEND_CPU)
        return vt_error_set(err, VT_EINPUT, "engine: backend %d: expected cpu or hip", (int)s->backend);
    /* Settings errors (no path, bad mode...) come from the model's open. */
    const arch_ops *ops = s && s->model_path ? arch_of(s->model_path, err) : &archs[0];
    if (!ops)
        return err->code;
    engine *e = calloc(1, sizeof *e);
    if (!e)
        return vt_error_set(err, VT_EINPUT, "engine: out of memory");
    e->ops = ops;
    e->m = ops->open(s, err);
    if (!e->m) {
        free(e);
        return err->code;
    }
    *state = e;
    return VT_OK;
}

static int engine_reset(void *state, vt_error *err)
{
    (void)err;
    engine *e = state;
    if (e->gpu)
        e->gpu->reset(e->m);
    else
        e->ops->reset(e->m);
    return VT_OK;
}

static int engine_eval(void *state, const int32_t *tokens, int32_t n, int all_logits,
                       float *logits, vt_error *err)
{
    engine *e = state;
    return e->gpu ? e->gpu->eval(e->m, tokens, n, all_logits, logits, err)
                  : e->ops->eval(e->m, tokens, n, all_logits, logits, err);
}

static int32_t engine_n_vocab(void *state)
{
    engine *e = state;
    return e->gpu ? e->gpu->n_vocab(e->m) : e->ops->n_vocab(e->m);
}

static void engine_identity(void *state, vt_runner_identity *out)
{
    engine *e = state;
    out->runner = "engine";
    out->version = "vt 0.1.0";
    if (e->gpu) {
        out->backend = "hip";
        out->device = e->device_name;
        out->library = e->library;
        out->detail = e->detail;
        return;
    }
    out->backend = "cpu";
    out->device = "cpu";
    out->library = "";
    out->detail = e->ops->detail(e->m);
}

static void engine_resolved(void *state, vt_runner_settings *out)
{
    engine *e = state;
    if (e->gpu)
        e->gpu->resolved(e->m, out);
    else
        e->ops->resolved(e->m, out);
}

static void engine_close(void *state)
{
    engine *e = state;
    if (!e)
        return;
    if (e->gpu)
        e->gpu->close(e->m);
    else
        e->ops->close(e->m);
    free(e);
}

const vt_runner_ops vt_runner_engine = {
    .name = "engine",
    .open = engine_open,
    .reset = engine_reset,
    .eval = engine_eval,
    .n_vocab = engine_n_vocab,
    .identity = engine_identity,
    .resolved = engine_resolved,
    .close = engine_close,
};
