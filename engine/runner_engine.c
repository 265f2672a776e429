/* The "engine" runner: vt's own forward passes behind the runner interface,
 * so capture and compare drive it exactly as they drive llama.cpp. The
 * GGUF's general.architecture picks the model: "qwen3" (qwen3.c) or
 * "qwen35" (qwen35.c). */
#include "gguf_file.h"
#include "qwen3.h"
#include "qwen35.h"
#include "runner.h"

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
    const arch_ops *ops;
    void *m;
} engine;

/* The entry for the file's general.architecture; NULL (err set) if the
 * file cannot be read or the architecture is not one the engine runs. */
static const arch_ops *arch_of(const char *path, vt_error *err)
{
    vt_gguf *g = vt_gguf_open(path, err);
    if (!g)
        return NULL;
    const arch_ops *found = NULL;
    vt_gguf_str a;
    if (!vt_gguf_get_str(g, "general.architecture", &a)) {
        vt_error_set(err, VT_EINPUT, "%s: key general.architecture: missing", path);
    } else {
        for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++)
            if (a.len == strlen(archs[i].arch) && memcmp(a.ptr, archs[i].arch, a.len) == 0)
                found = &archs[i];
        if (!found)
            vt_error_set(err, VT_EINPUT,
                         "%s: key general.architecture: \"%.*s\": expected \"qwen3\" or \"qwen35\"",
                         path, (int)(a.len > 64 ? 64 : a.len), a.ptr);
    }
    vt_gguf_free(g);
    return found;
}

static int engine_open(const vt_runner_settings *s, void **state, vt_error *err)
{
    vt_error local;
    if (!err)
        err = &local;
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
    e->ops->reset(e->m);
    return VT_OK;
}

static int engine_eval(void *state, const int32_t *tokens, int32_t n, int all_logits,
                       float *logits, vt_error *err)
{
    engine *e = state;
    return e->ops->eval(e->m, tokens, n, all_logits, logits, err);
}

static int32_t engine_n_vocab(void *state)
{
    engine *e = state;
    return e->ops->n_vocab(e->m);
}

static void engine_identity(void *state, vt_runner_identity *out)
{
    engine *e = state;
    out->runner = "engine";
    out->version = "vt 0.1.0";
    out->backend = "cpu";
    out->device = "cpu";
    out->library = "";
    out->detail = e->ops->detail(e->m);
}

static void engine_resolved(void *state, vt_runner_settings *out)
{
    engine *e = state;
    e->ops->resolved(e->m, out);
}

static void engine_close(void *state)
{
    engine *e = state;
    if (!e)
        return;
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
