/* The llamacpp runner: one llama_model + llama_context on the CPU backend,
 * one sequence (id 0), raw logits out. */
#include "llamacpp_runner.h"
#include "../common/vt_input.h"
#include "llamacpp_lib.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct lc_state {
    const vt_llamacpp_lib *lib;
    struct llama_model *model;
    struct llama_context *ctx;
    struct llama_batch batch;
    int has_batch;
    int32_t n_vocab;
    int32_t n_ctx;   /* the sequence capacity vt asked for */
    int32_t chunk;   /* tokens per llama_decode: n_batch, or 1 in eager mode */
    int32_t n_past;  /* tokens in the sequence so far = the next position */
    int32_t threads; /* threads given to llama.cpp */
    vt_cache_dtype kv; /* the KV cache dtype given to llama.cpp */
    char detail[8192];
} lc_state;

static const char *mode_name(vt_exec_mode m) { return m == VT_MODE_EAGER ? "eager" : "production"; }

static int cache_type(vt_cache_dtype d, enum ggml_type *out, const char **name, vt_error *err)
{
    switch (d) {
    case VT_CACHE_AUTO: /* the compute dtype: F32 on the CPU */
    case VT_CACHE_F32:
        *out = GGML_TYPE_F32;
        *name = "F32";
        return VT_OK;
    case VT_CACHE_BF16:
        *out = GGML_TYPE_BF16;
        *name = "BF16";
        return VT_OK;
    case VT_CACHE_FP8_E4M3:
        return vt_error_set(err, VT_EINPUT, "llama.cpp has no FP8 E4M3 KV cache type");
    }
    return vt_error_set(err, VT_EINPUT, "llamacpp runner: cache dtype %d: unknown", (int)d);
}

static void lc_close(void *state)
{
    lc_state *s = state;
    if (!s)
        return;
    if (s->has_batch)
        s->lib->batch_free(s->batch);
    if (s->ctx)
        s->lib->context_free(s->ctx);
    if (s->model)
        s->lib->model_free(s->model);
    free(s);
}

static int lc_open(const vt_runner_settings *set, void **state, vt_error *err)
{
    *state = NULL;
    if (!set->model_path || !*set->model_path)
        return vt_error_set(err, VT_EINPUT, "llamacpp runner: no model path");
    if (set->n_ctx < 1 || set->n_batch < 1)
        return vt_error_set(err, VT_EINPUT, "llamacpp runner: n_ctx %d, n_batch %d: expected >= 1",
                            set->n_ctx, set->n_batch);
    if (set->mode == VT_MODE_PRODUCTION && set->n_threads < 1)
        return vt_error_set(err, VT_EINPUT, "llamacpp runner: n_threads %d: expected >= 1",
                            set->n_threads);
    if (set->mode != VT_MODE_PRODUCTION && set->mode != VT_MODE_EAGER)
        return vt_error_set(err, VT_EINPUT, "llamacpp runner: mode %d: unknown", (int)set->mode);
    if (set->backend != VT_BACKEND_CPU)
        return vt_error_set(err, VT_EINPUT, "llamacpp runner: --backend %s: expected cpu (the oracle package's "
                            "CPU libraries are the ones verified)", vt_backend_name(set->backend));
    enum ggml_type kv = GGML_TYPE_F32;
    const char *kv_name = "";
    int rc = cache_type(set->cache_dtype, &kv, &kv_name, err);
    if (rc)
        return rc;
    /* llama.cpp only says it failed; say why when it is the usual reason. */
    rc = vt_input_check(set->model_path, NULL, err);
    if (rc)
        return rc;

    const vt_llamacpp_lib *lib = vt_llamacpp_lib_load(NULL, err);
    if (!lib)
        return err ? err->code : VT_EINPUT;
    lc_state *s = calloc(1, sizeof *s);
    if (!s)
        return vt_error_set(err, VT_EINPUT, "llamacpp runner: out of memory");
    s->lib = lib;
    s->n_ctx = set->n_ctx;
    int eager = set->mode == VT_MODE_EAGER;
    /* No call can hold more than n_ctx tokens, so no batch needs more. */
    s->chunk = eager ? 1 : (set->n_batch < set->n_ctx ? set->n_batch : set->n_ctx);
    int32_t threads = eager ? 1 : set->n_threads;

    /* CPU only: an empty device list keeps every layer, the output and the
     * KV cache on the CPU whatever else ggml registered. Weights are read
     * into memory rather than mapped, so the file may change or go once
     * open returns. */
    static ggml_backend_dev_t no_devices[1] = { NULL };
    struct llama_model_params mp = lib->model_default_params();
    mp.devices = no_devices;
    mp.n_gpu_layers = 0;
    mp.split_mode = LLAMA_SPLIT_MODE_NONE;
    mp.load_mode = LLAMA_LOAD_MODE_NONE;
    mp.lazy_mode = LLAMA_LAZY_MODE_OFF;
    s->model = lib->model_load_from_file(set->model_path, mp);
    if (!s->model) {
        lc_close(s);
        return vt_error_set(err, VT_EINPUT, "%s: llama.cpp could not load the model",
                            set->model_path);
    }
    s->n_vocab = lib->vocab_n_tokens(lib->model_get_vocab(s->model));

    struct llama_context_params cp = lib->context_default_params();
    cp.n_ctx = (uint32_t)set->n_ctx;
    cp.n_batch = (uint32_t)set->n_batch;
    cp.n_ubatch = (uint32_t)set->n_batch;
    cp.n_seq_max = 1;
    cp.n_threads = threads;
    cp.n_threads_batch = threads;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    cp.type_k = kv;
    cp.type_v = kv;
    cp.offload_kqv = false;
    cp.op_offload = false;
    cp.no_perf = true;
    cp.embeddings = false;
    s->ctx = lib->init_from_model(s->model, cp);
    if (!s->ctx) {
        lc_close(s);
        return vt_error_set(err, VT_EINPUT,
                            "%s: llama.cpp could not create a context (n_ctx %d, n_batch %d, "
                            "KV cache %s)", set->model_path, set->n_ctx, set->n_batch, kv_name);
    }
    s->batch = lib->batch_init(s->chunk, 0, 1);
    s->has_batch = 1;
    if (!s->batch.token || !s->batch.pos || !s->batch.seq_id || !s->batch.logits) {
        lc_close(s);
        return vt_error_set(err, VT_EINPUT, "llamacpp runner: out of memory");
    }
    s->threads = threads;
    s->kv = kv == GGML_TYPE_BF16 ? VT_CACHE_BF16 : VT_CACHE_F32;
    /* Recurrent layers (Qwen3.5's gated delta-net) keep their conv and
     * recurrent states in F32 whatever the KV cache type; say so, since the
     * cache dtype then covers the attention layers only. reset clears both
     * (llama_memory_clear on the hybrid memory). */
    const char *recurrent = lib->model_is_hybrid(s->model)      ? ", recurrent state F32 (hybrid model)"
                            : lib->model_is_recurrent(s->model) ? ", recurrent state F32 (recurrent model)"
                                                                : "";
    snprintf(s->detail, sizeof s->detail,
             "CPU backend %s; %s mode, %d thread%s, up to %d tokens per llama_decode, "
             "KV cache %s%s, flash attention off; %s",
             lib->cpu_backend, mode_name(set->mode), threads, threads == 1 ? "" : "s",
             s->chunk, kv_name, recurrent, lib->system_info);
    *state = s;
    return VT_OK;
}

static int lc_reset(void *state, vt_error *err)
{
    (void)err;
    lc_state *s = state;
    s->lib->memory_clear(s->lib->get_memory(s->ctx), true);
    s->n_past = 0;
    return VT_OK;
}

static int lc_eval(void *state, const int32_t *tokens, int32_t n, int all_logits, float *logits,
                   vt_error *err)
{
    lc_state *s = state;
    if (n < 1 || !tokens || !logits)
        return vt_error_set(err, VT_EINPUT, "llamacpp eval: %d tokens: expected >= 1", n);
    if (n > s->n_ctx - s->n_past)
        return vt_error_set(err, VT_EINPUT,
                            "llamacpp eval: %d tokens after %d exceed n_ctx %d", n, s->n_past,
                            s->n_ctx);
    /* llama.cpp rejects these too, but only in its (silenced) log. */
    for (int32_t i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= s->n_vocab)
            return vt_error_set(err, VT_EINPUT, "llamacpp eval: token %d at %d: expected 0..%d",
                                tokens[i], i, s->n_vocab - 1);
    const size_t row = (size_t)s->n_vocab;
    struct llama_batch *b = &s->batch;
    int32_t m;
    for (int32_t off = 0; off < n; off += m) {
        m = n - off < s->chunk ? n - off : s->chunk;
        b->n_tokens = m;
        for (int32_t i = 0; i < m; i++) {
            b->token[i] = tokens[off + i];
            b->pos[i] = s->n_past + i;
            b->n_seq_id[i] = 1;
            b->seq_id[i][0] = 0;
            b->logits[i] = (int8_t)(all_logits || off + i == n - 1);
        }
        int32_t rc = s->lib->decode(s->ctx, *b);
        if (rc != 0) {
            /* On some failures llama.cpp keeps the ubatches it finished:
             * follow the cache rather than guess. */
            s->n_past = s->lib->memory_seq_pos_max(s->lib->get_memory(s->ctx), 0) + 1;
            return vt_error_set(err, VT_EINPUT,
                                "llamacpp eval: llama_decode returned %d on %d tokens at position %d",
                                rc, m, s->n_past);
        }
        s->n_past += m;
        for (int32_t i = 0; i < m; i++) {
            if (!b->logits[i])
                continue;
            const float *src = s->lib->get_logits_ith(s->ctx, i);
            if (!src)
                return vt_error_set(err, VT_EINPUT, "llamacpp eval: no logits for position %d",
                                    s->n_past - m + i);
            float *dst = all_logits ? logits + (size_t)(off + i) * row : logits;
            memcpy(dst, src, row * sizeof *dst);
        }
    }
    return VT_OK;
}

static int32_t lc_n_vocab(void *state) { return ((lc_state *)state)->n_vocab; }

static void lc_identity(void *state, vt_runner_identity *out)
{
    lc_state *s = state;
    out->runner = "llamacpp";
    out->version = s->lib->version;
    out->backend = "cpu";
    out->device = "cpu";
    out->library = s->lib->path;
    out->detail = s->detail;
}

/* What llama.cpp applies, read back from its context: the context size,
 * the tokens one evaluation computes (vt's chunk per llama_decode, split
 * by llama.cpp into micro-batches of n_ubatch) and its threads (eager runs
 * one token per decode, so the generation threads; else the batch ones).
 * auto is an F32 KV cache. llama.cpp's CPU backend always rounds
 * activations through the weight's dot type, which is vt's q8 matmul mode. */
static void lc_resolved(void *state, vt_runner_settings *out)
{
    lc_state *s = state;
    const vt_llamacpp_lib *L = s->lib;
    uint32_t ub = L->n_ubatch(s->ctx), nb = L->n_batch(s->ctx);
    uint32_t per_eval = (uint32_t)s->chunk < nb ? (uint32_t)s->chunk : nb;
    out->cache_dtype = s->kv;
    out->n_threads = s->chunk == 1 ? L->n_threads(s->ctx) : L->n_threads_batch(s->ctx);
    out->n_batch = (int32_t)(per_eval < ub ? per_eval : ub);
    out->n_ctx = (int32_t)L->n_ctx(s->ctx);
    out->matmul = VT_MATMUL_Q8;
}

const vt_runner_ops vt_runner_llamacpp = {
    .name = "llamacpp",
    .code_from_package = 1,
    .open = lc_open,
    .reset = lc_reset,
    .eval = lc_eval,
    .n_vocab = lc_n_vocab,
    .identity = lc_identity,
    .resolved = lc_resolved,
    .close = lc_close,
};
