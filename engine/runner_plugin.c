/* The "plugin" runner (--runner plugin:PATH.so): an engine of the user's
 * own, a shared object exporting the vt_plugin table (vt_plugin.h). The
 * object is loaded as the bytes it was hashed from (module_load.h); its
 * table is checked whole before any entry is called, and what it returns
 * is checked before vt uses it: the vocabulary against the model's at
 * open, every logit finite at every eval. Its path and sha256 are the
 * runner's identity. */
#include "gguf_file.h"
#include "module_load.h"
#include "runner.h"
#include "tokenizer.h"
#include "vt_plugin.h"

#include "../common/vt_utf8.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct plugin {
    void *handle;
    const vt_plugin *t;
    void *st;
    int32_t n_vocab;
    int broken; /* a non-finite logit was returned */
    char path[PATH_MAX];
    vt_sha256_hex sha;
    char version[128], backend[64], device[256], detail[1024];
} plugin;


/* The plugin's own message for a failed entry (msg[0..cap), which it may
 * have left unterminated), as one line. */
static int plugin_failed(const plugin *P, const char *entry, char *msg, size_t cap, vt_error *err)
{
    char line[512];
    msg[cap - 1] = 0;
    vt_ascii_line(line, sizeof line, *msg ? msg : "failed, with no message");
    return vt_error_set(err, VT_EINPUT, "%s: %s: %s", P->path, entry, line);
}

static void unload(plugin *P)
{
    if (P->st)
        P->t->close(P->st);
    if (P->handle)
        dlclose(P->handle);
    free(P);
}

static int table_check(const plugin *P, const vt_plugin *t, vt_error *err)
{
    if (!t)
        return vt_error_set(err, VT_EINPUT, "%s: symbol %s: missing: expected the plugin's table (vt_plugin.h)",
                            P->path, VT_PLUGIN_SYMBOL);
    if (t->abi != VT_PLUGIN_ABI)
        return vt_error_set(err, VT_EINPUT, "%s: field abi: %u: expected %u", P->path, t->abi, VT_PLUGIN_ABI);
    if (t->table_size != sizeof(vt_plugin))
        return vt_error_set(err, VT_EINPUT, "%s: field table_size: %u: expected %zu", P->path, t->table_size,
                            sizeof(vt_plugin));
    if (!t->name || !t->open || !t->reset || !t->eval || !t->n_vocab || !t->identity || !t->resolved || !t->close)
        return vt_error_set(err, VT_EINPUT, "%s: table %s: a null entry: expected every entry set", P->path,
                            VT_PLUGIN_SYMBOL);
    return VT_OK;
}

/* The vocabulary vt tokenizes the model's prompts with. */
static int model_vocab(const char *model, int32_t *n, vt_error *err)
{
    vt_gguf *g = vt_gguf_open(model, err);
    if (!g)
        return err ? err->code : VT_EINPUT;
    vt_tokenizer *tok = vt_tokenizer_open(g, err);
    int rc = tok ? VT_OK : (err ? err->code : VT_EINPUT);
    if (tok)
        *n = vt_tokenizer_n_vocab(tok);
    vt_tokenizer_free(tok);
    vt_gguf_free(g);
    return rc;
}

static vt_plugin_settings plugin_settings_of(const vt_runner_settings *s)
{
    return (vt_plugin_settings){ .size = sizeof(vt_plugin_settings), .model_path = s->model_path,
                                 .n_ctx = s->n_ctx, .n_threads = s->n_threads, .n_batch = s->n_batch,
                                 .eager = s->mode == VT_MODE_EAGER, .cache_dtype = (int32_t)s->cache_dtype,
                                 .seed = s->seed };
}

static int plugin_open(const vt_runner_settings *s, void **state, vt_error *err)
{
    if (!s->plugin_path || !*s->plugin_path)
        return vt_error_set(err, VT_EINPUT, "--runner plugin: no path: expected plugin:PATH.so");
    plugin *P = calloc(1, sizeof *P);
    if (!P)
        return vt_error_set(err, VT_EINPUT, "--runner plugin: out of memory");
    if (!realpath(s->plugin_path, P->path)) {
        int rc = vt_error_set(err, VT_EINPUT, "%s: %s: expected a vt plugin (a shared object, vt_plugin.h)",
                              s->plugin_path, strerror(errno));
        free(P);
        return rc;
    }
    unsigned long long size = 0;
    int rc = vt_module_load(P->path, "a vt plugin (a shared object, vt_plugin.h)", &P->handle, &P->sha, &size, err);
    if (rc == VT_OK)
        rc = table_check(P, P->t = dlsym(P->handle, VT_PLUGIN_SYMBOL), err);
    if (rc) {
        unload(P);
        return rc;
    }
    int32_t want = 0;
    if ((rc = model_vocab(s->model_path, &want, err))) {
        unload(P);
        return rc;
    }
    const vt_plugin_settings ps = plugin_settings_of(s);
    char msg[512] = "";
    if (P->t->open(&ps, &P->st, msg, sizeof msg) != 0 || !P->st) {
        P->st = NULL; /* a failed open owns nothing */
        rc = plugin_failed(P, "open", msg, sizeof msg, err);
        unload(P);
        return rc;
    }
    P->n_vocab = P->t->n_vocab(P->st);
    if (P->n_vocab != want) {
        rc = vt_error_set(err, VT_EINPUT, "%s: n_vocab: %d: expected %d, the vocabulary of %s", P->path,
                          (int)P->n_vocab, (int)want, s->model_path);
        unload(P);
        return rc;
    }
    vt_plugin_identity id = { 0 };
    P->t->identity(P->st, &id);
    vt_ascii_line(P->version, sizeof P->version, id.version);
    vt_ascii_line(P->backend, sizeof P->backend, id.backend);
    vt_ascii_line(P->device, sizeof P->device, id.device);
    char name[128], detail[640];
    vt_ascii_line(name, sizeof name, P->t->name);
    vt_ascii_line(detail, sizeof detail, id.detail);
    snprintf(P->detail, sizeof P->detail, "plugin %s, sha256 %s, %llu bytes%s%s", name, P->sha.hex, size,
             *detail ? "; " : "", detail);
    *state = P;
    return VT_OK;
}

static int plugin_reset(void *state, vt_error *err)
{
    plugin *P = state;
    char msg[512] = "";
    if (P->t->reset(P->st, msg, sizeof msg) != 0) {
        return plugin_failed(P, "reset", msg, sizeof msg, err);
    }
    return VT_OK;
}

static int plugin_eval(void *state, const int32_t *tokens, int32_t n, int all_logits, float *logits, vt_error *err)
{
    plugin *P = state;
    char msg[512] = "";
    if (P->t->eval(P->st, tokens, n, all_logits, logits, msg, sizeof msg) != 0) {
        return plugin_failed(P, "eval", msg, sizeof msg, err);
    }
    const int32_t rows = all_logits ? n : 1;
    for (int32_t r = 0; r < rows; r++) {
        const float *row = logits + (size_t)r * (size_t)P->n_vocab;
        for (int32_t v = 0; v < P->n_vocab; v++)
            if (!isfinite(row[v]) && (P->broken = 1))
                return vt_error_set(err, VT_EINPUT, "%s: eval: logit %g at position %d of %d, id %d: expected "
                                    "finite logits", P->path, (double)row[v], (int)(all_logits ? r : n - 1),
                                    (int)n, (int)v);
    }
    return VT_OK;
}

static int plugin_broken(void *state) { return ((plugin *)state)->broken; }

static int32_t plugin_n_vocab(void *state) { return ((plugin *)state)->n_vocab; }

static void plugin_identity(void *state, vt_runner_identity *out)
{
    plugin *P = state;
    *out = (vt_runner_identity){ .runner = "plugin", .version = P->version, .backend = P->backend,
                                 .device = P->device, .library = P->path, .detail = P->detail };
}

/* What the plugin says it applies, of the fields it can change. */
static void plugin_resolved(void *state, vt_runner_settings *out)
{
    plugin *P = state;
    vt_plugin_settings ps = plugin_settings_of(out);
    P->t->resolved(P->st, &ps);
    out->n_ctx = ps.n_ctx;
    out->n_threads = ps.n_threads;
    out->n_batch = ps.n_batch;
    out->mode = ps.eager ? VT_MODE_EAGER : VT_MODE_PRODUCTION;
    if (ps.cache_dtype >= VT_CACHE_AUTO && ps.cache_dtype <= VT_CACHE_FP8_E4M3)
        out->cache_dtype = (vt_cache_dtype)ps.cache_dtype;
    out->seed = ps.seed;
}

static void plugin_close(void *state) { unload(state); }

const vt_runner_ops vt_runner_plugin = {
    .name = "plugin",
    .open = plugin_open,
    .reset = plugin_reset,
    .eval = plugin_eval,
    .n_vocab = plugin_n_vocab,
    .identity = plugin_identity,
    .resolved = plugin_resolved,
    .broken = plugin_broken,
    .close = plugin_close,
};
