/* The "engine" runner: vt's own Qwen3 forward pass (qwen3.c) behind the
 * runner interface, so capture and compare drive it exactly as they drive
 * llama.cpp. */
#include "qwen3.h"
#include "runner.h"


static int engine_open(const vt_runner_settings *s, void **state, vt_error *err)
{
    vt_qwen3 *m = vt_qwen3_open(s, err);
    if (!m)
        return err ? err->code : VT_EINPUT;
    *state = m;
    return VT_OK;
}

static int engine_reset(void *state, vt_error *err)
{
    (void)err;
    vt_qwen3_reset(state);
    return VT_OK;
}

static int engine_eval(void *state, const int32_t *tokens, int32_t n, int all_logits,
                       float *logits, vt_error *err)
{
    return vt_qwen3_eval(state, tokens, n, all_logits, logits, err);
}

static int32_t engine_n_vocab(void *state) { return vt_qwen3_hparams_of(state)->n_vocab; }

static void engine_identity(void *state, vt_runner_identity *out)
{
    out->runner = "engine";
    out->version = "vt 0.1.0";
    out->backend = "cpu";
    out->library = "";
    out->detail = vt_qwen3_detail(state);
}

static void engine_resolved(void *state, vt_runner_settings *out) { vt_qwen3_resolved(state, out); }

static void engine_close(void *state) { vt_qwen3_close(state); }

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
