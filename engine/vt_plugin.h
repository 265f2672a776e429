/* The contract between vt and an engine of your own, loaded with
 * --runner plugin:PATH.so (vt run, vt-capture, vt agree, vt kld).
 *
 * The shared object exports one table, a const vt_plugin named
 * VT_PLUGIN_SYMBOL, whose abi is VT_PLUGIN_ABI and table_size
 * sizeof(vt_plugin). vt refuses, with one line and exit 2, an object that
 * has no such symbol, another ABI or size, or a NULL name or entry. Every
 * entry is called from one thread at a time.
 *
 * - open: load s->model_path (the GGUF vt tokenizes the prompts with) for
 *   sequences of up to s->n_ctx tokens; *state on success. s->size is
 *   sizeof(vt_plugin_settings) as vt was built: fields are only ever added
 *   at the end, under a new ABI.
 * - reset: forget the sequence (KV cache and any recurrent state).
 * - eval: append tokens[0..n) to the sequence and write the next-token
 *   logits of every position (n x n_vocab floats, row-major) to logits, or
 *   only the last position's (n_vocab floats) when all_logits is 0.
 *   vt checks every logit: a non-finite one stops the capture (exit 2,
 *   nothing published); n_vocab is checked against the model's vocabulary
 *   once, at open.
 * - n_vocab: the size of one logits row; constant after open.
 * - identity: what ran, as strings the plugin owns until close (any may be
 *   NULL: recorded as ""). vt adds the object's path and sha256 itself.
 * - resolved: the settings as the plugin applies them; *out holds the
 *   requested ones on entry (e.g. set eager when it runs one token at a
 *   time, or the cache dtype it chose for 0). Captures record both, and a
 *   comparison refuses captures whose cache dtypes differ.
 * - close: free state.
 * open, reset and eval return 0, or nonzero with one line (no newline) in
 * err[0..err_cap) saying what was expected.
 *
 * Only what this header declares crosses; a plugin needs no vt library. */
#ifndef VT_PLUGIN_H
#define VT_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#define VT_PLUGIN_ABI 1u
#define VT_PLUGIN_SYMBOL "vt_plugin_v1"

typedef struct vt_plugin_settings {
    uint32_t size;          /* sizeof(vt_plugin_settings) */
    const char *model_path; /* the GGUF */
    int32_t n_ctx;          /* prompt + generated tokens, at most */
    int32_t n_threads;      /* threads the plugin may use */
    int32_t n_batch;        /* the most tokens vt passes to one eval */
    int32_t eager;          /* 1: asked for the one-token-at-a-time path */
    int32_t cache_dtype;    /* the KV cache: 0 the plugin's choice, 1 f32, 2 bf16, 3 fp8_e4m3 */
    uint64_t seed;          /* for a plugin that draws random numbers; sampling is vt's */
} vt_plugin_settings;

typedef struct vt_plugin_identity {
    const char *version; /* the engine's version */
    const char *backend; /* "cpu", "cuda", ... */
    const char *device;  /* what it computes on */
    const char *detail;  /* anything else worth recording */
} vt_plugin_identity;

typedef struct vt_plugin {
    uint32_t abi;        /* VT_PLUGIN_ABI */
    uint32_t table_size; /* sizeof(vt_plugin) */
    const char *name;    /* the engine's name */
    int (*open)(const vt_plugin_settings *s, void **state, char *err, size_t err_cap);
    int (*reset)(void *state, char *err, size_t err_cap);
    int (*eval)(void *state, const int32_t *tokens, int32_t n, int all_logits, float *logits, char *err,
                size_t err_cap);
    int32_t (*n_vocab)(void *state);
    void (*identity)(void *state, vt_plugin_identity *out);
    void (*resolved)(void *state, vt_plugin_settings *out);
    void (*close)(void *state);
} vt_plugin;

#endif
