/* vt's own engine as a plugin (engine/vt_plugin.h), and the ways a plugin
 * can be wrong, one per build (tests/test_plugin.c): PLUGIN_OK is the
 * engine runner behind the plugin table, so that its capture can be held
 * against --runner engine's; PLUGIN_WRONG_ABI, PLUGIN_NO_SYMBOL,
 * PLUGIN_NULL_ENTRY, PLUGIN_NAN_LOGITS and PLUGIN_WRONG_VOCAB each break
 * one thing. */
#include "engine/runner.h"
#include "engine/vt_plugin.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

typedef struct state {
    const vt_runner_ops *ops;
    void *m;
    vt_runner_settings s;
    int evals;
} state;

static void say(char *err, size_t cap, const vt_error *e) { snprintf(err, cap, "%s", e->msg); }

static int p_open(const vt_plugin_settings *ps, void **out, char *err, size_t cap)
{
    if (ps->size != sizeof(vt_plugin_settings)) {
        snprintf(err, cap, "settings of %u bytes: expected %zu", ps->size, sizeof(vt_plugin_settings));
        return 1;
    }
    state *st = calloc(1, sizeof *st);
    if (!st) {
        snprintf(err, cap, "out of memory");
        return 1;
    }
    vt_runner_settings_default(&st->s);
    st->s.model_path = ps->model_path;
    st->s.n_ctx = ps->n_ctx;
    st->s.n_threads = ps->n_threads;
    st->s.n_batch = ps->n_batch;
    st->s.mode = ps->eager ? VT_MODE_EAGER : VT_MODE_PRODUCTION;
    st->s.cache_dtype = (vt_cache_dtype)ps->cache_dtype;
    st->s.seed = ps->seed;
    st->ops = vt_runner_find("engine");
    vt_error e;
    vt_error_clear(&e);
    if (st->ops->open(&st->s, &st->m, &e)) {
        say(err, cap, &e);
        free(st);
        return 1;
    }
    *out = st;
    return 0;
}

__attribute__((unused)) static int p_reset(void *p, char *err, size_t cap)
{
    state *st = p;
    vt_error e;
    vt_error_clear(&e);
    if (st->ops->reset(st->m, &e)) {
        say(err, cap, &e);
        return 1;
    }
    return 0;
}

static int p_eval(void *p, const int32_t *tokens, int32_t n, int all, float *logits, char *err, size_t cap)
{
    state *st = p;
    vt_error e;
    vt_error_clear(&e);
    if (st->ops->eval(st->m, tokens, n, all, logits, &e)) {
        say(err, cap, &e);
        return 1;
    }
#ifdef PLUGIN_NAN_LOGITS
    if (++st->evals == 2) /* the second evaluation, not the first: checked every time */
        logits[7] = NAN;
#endif
    return 0;
}

static int32_t p_n_vocab(void *p)
{
    state *st = p;
#ifdef PLUGIN_WRONG_VOCAB
    return st->ops->n_vocab(st->m) + 1;
#else
    return st->ops->n_vocab(st->m);
#endif
}

static void p_identity(void *p, vt_plugin_identity *out)
{
    state *st = p;
    vt_runner_identity id;
    memset(&id, 0, sizeof id);
    st->ops->identity(st->m, &id);
    out->version = id.version;
    out->backend = id.backend;
    out->device = id.device;
    out->detail = id.detail;
}

static void p_resolved(void *p, vt_plugin_settings *out)
{
    state *st = p;
    vt_runner_settings r = st->s;
    if (st->ops->resolved)
        st->ops->resolved(st->m, &r);
    out->n_ctx = r.n_ctx;
    out->n_threads = r.n_threads;
    out->n_batch = r.n_batch;
    out->eager = r.mode == VT_MODE_EAGER;
    out->cache_dtype = (int32_t)r.cache_dtype;
}

static void p_close(void *p)
{
    state *st = p;
    st->ops->close(st->m);
    free(st);
}

#ifdef PLUGIN_NO_SYMBOL
#define TABLE vt_plugin_v0
#else
#define TABLE vt_plugin_v1
#endif

EXPORT const vt_plugin TABLE = {
#ifdef PLUGIN_WRONG_ABI
    .abi = 99,
#else
    .abi = VT_PLUGIN_ABI,
#endif
    .table_size = sizeof(vt_plugin),
    .name = "vt-engine-as-plugin",
    .open = p_open,
#ifdef PLUGIN_NULL_ENTRY
    .reset = NULL,
#else
    .reset = p_reset,
#endif
    .eval = p_eval,
    .n_vocab = p_n_vocab,
    .identity = p_identity,
    .resolved = p_resolved,
    .close = p_close,
};
