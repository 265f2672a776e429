/* Runners: one interface over every engine that produces next-token logits
 * (ours, llama.cpp, later an HTTP endpoint). A runner is one table of
 * functions; generation, teacher-forced scoring and sampling are written once
 * on top of it (runner.c), so capture and compare never branch on which
 * runner ran, and both runners' tokens come from the same sampler. */
#ifndef VT_RUNNER_H
#define VT_RUNNER_H

#include <stddef.h>
#include <stdint.h>

#include "../common/vt_error.h"
#include "codec.h"

typedef enum vt_exec_mode {
    VT_MODE_PRODUCTION = 0, /* batched prefill, threads */
    VT_MODE_EAGER = 1       /* one token at a time, one thread: the diagnostic path */
} vt_exec_mode;

typedef enum vt_cache_dtype {
    VT_CACHE_AUTO = 0, /* the compute dtype (F32 on the CPU) */
    VT_CACHE_F32 = 1,
    VT_CACHE_BF16 = 2,
    VT_CACHE_FP8_E4M3 = 3 /* saturating, round-to-nearest-even */
} vt_cache_dtype;

/* Bytes of one cache element of dtype (not AUTO). */
static inline size_t vt_cache_elem_bytes(vt_cache_dtype dtype)
{
    return dtype == VT_CACHE_F32 ? 4 : dtype == VT_CACHE_BF16 ? 2 : 1;
}

/* How a quantized weight meets an activation in a matrix product. */
typedef enum vt_matmul_mode {
    VT_MATMUL_EXACT = 0, /* dequantized weight x F32 activation, F32 products */
    VT_MATMUL_Q8 = 1     /* activation first rounded through the codec's dot type
                            (Q8_0 or Q8_K), as llama.cpp's CPU backend does */
} vt_matmul_mode;

/* Where the engine runner computes: the CPU, or the GPU backend (engine/hip/,
 * a module loaded at run time: engine/gpu_module.h). */
typedef enum vt_backend {
    VT_BACKEND_CPU = 0,
    VT_BACKEND_HIP = 1
} vt_backend;

/* vt_dtype (codec.h) is also the dtype a runner's model computes in: the
 * transformers runner's export and torch dtype (the engine and llama.cpp
 * compute in F32 and do not record it). */

/* transformers' attention implementation (attn_implementation). */
typedef enum vt_attn_impl {
    VT_ATTN_EAGER = 0, /* transformers' own PyTorch code: softmax(QK^T)V as written */
    VT_ATTN_SDPA = 1   /* torch.nn.functional.scaled_dot_product_attention */
} vt_attn_impl;

typedef struct vt_sampling {
    double temperature; /* 0: greedy (argmax, lowest id on ties) */
    int32_t top_k;      /* 0: off */
    double top_p;       /* 1: off */
    double min_p;       /* 0: off */
} vt_sampling;

typedef struct vt_runner_settings {
    const char *model_path;
    vt_exec_mode mode;
    vt_cache_dtype cache_dtype;
    vt_matmul_mode matmul;     /* engine runner only */
    vt_backend backend;        /* engine runner only */
    int32_t device;            /* the GPU's index (backend hip; the transformers runner's CUDA device) */
    vt_dtype dtype;            /* transformers runner only */
    vt_attn_impl attention;    /* transformers runner only */
    int32_t n_threads;         /* production mode; eager always uses 1 */
    int32_t n_ctx;             /* sequence capacity (prompt + generated) */
    int32_t n_batch;           /* prefill batch size (production) */
    uint64_t seed;
    vt_sampling sampling;
    const char *plugin_path;   /* plugin runner only: the shared object (vt_plugin.h) */
    /* openai runner only (oracle/openai_runner.c): the server's base URL
     * ("http://127.0.0.1:8080"), the model name to ask for (NULL: the one
     * model it serves), the environment variable holding a bearer key
     * (NULL: none), and the log-probs asked per position. Not settings of
     * the computation: the capture records them in its runtime identity. */
    const char *endpoint;
    const char *served_model;
    const char *api_key_env;
    int32_t server_top_k;
} vt_runner_settings;

/* Defaults: production, cache auto, matmul q8, backend cpu, device 0,
 * threads = cores, n_ctx 512, n_batch 512, seed 0, greedy, server top-k 20. */
void vt_runner_settings_default(vt_runner_settings *s);

/* What ran. Strings are owned by the runner and live until close. */
typedef struct vt_runner_identity {
    const char *runner;       /* "engine" / "llamacpp" */
    const char *version;      /* vt version, or the oracle package version */
    const char *backend;      /* "cpu" ... */
    const char *device;       /* what it computes on: "cpu", or the GPU's name and architecture */
    const char *library;      /* path of the loaded library, or "" */
    const char *detail;       /* e.g. the CPU variant llama.cpp loaded */
} vt_runner_identity;

/* One runner = one table. The state is the runner's own. */
typedef struct vt_runner_ops {
    const char *name;
    /* Its code comes from a package (llama.cpp's npm package, a Python
     * wheel): a strict capture must verify that package and bind the
     * libraries the runner loaded to it (capture/strict.h, rule package). */
    int code_from_package;
    /* The runner computes in a chosen dtype with a chosen attention
     * implementation: captures record settings.dtype and .attention. */
    int has_dtype;
    /* Load the model for settings; *state on success. */
    int (*open)(const vt_runner_settings *s, void **state, vt_error *err);
    /* Forget the sequence (empty the KV cache and any recurrent state). */
    int (*reset)(void *state, vt_error *err);
    /* Append n tokens to the sequence; write each position's next-token
     * logits (n x n_vocab floats) to logits, or only the last position's
     * (n_vocab floats) if all_logits is 0. */
    int (*eval)(void *state, const int32_t *tokens, int32_t n, int all_logits, float *logits,
                vt_error *err);
    int32_t (*n_vocab)(void *state);
    void (*identity)(void *state, vt_runner_identity *out);
    /* The settings as the runner actually applies them, starting from the
     * ones it was opened with (*out holds those on entry): e.g. eager mode
     * runs one thread and one token per step, cache auto is a concrete
     * dtype, n_batch is clipped to n_ctx. Captures record both, so a run
     * that quietly differs from its request is visible. May be NULL: the
     * settings are then taken as applied unchanged. */
    void (*resolved)(void *state, vt_runner_settings *out);
    /* May be NULL. The runner's code runs in a Python process of its own:
     * *path is a vt.imports/1 file (provenance/imports.c) that process wrote
     * on this call, listing every module and shared object it has imported
     * so far; a capture asks after its runs and verifies it as the package
     * (kind "imports"). The path lives until close. */
    int (*imports)(void *state, const char **path, vt_error *err);
    /* May be NULL. Nonzero once the runner has caught its engine breaking
     * the runner contract (a plugin's non-finite logit): a capture then
     * stops with that error (exit 2) rather than record a failed run. */
    int (*broken)(void *state);
    /* May be NULL (0). k > 0: the runner knows only the k highest log-probs
     * of each position (a server's top-k answer): eval's rows hold those
     * log-probs, already normalized over the whole vocabulary, at their
     * ids, and -INFINITY at every other id ("not told"). A capture then
     * takes rows as log-probs, writes no full-logits side file, and records
     * a scored token that is not among the k as a bound. */
    int32_t (*top_k_only)(void *state);
    void (*close)(void *state);
} vt_runner_ops;

/* Names as written on command lines and in captures ("production", "eager";
 * "auto", "f32", "bf16", "fp8_e4m3"; "exact", "q8"; "cpu", "hip"), and their inverses:
 * parse returns 1 and sets *out, or 0 for an unknown name. */
const char *vt_exec_mode_name(vt_exec_mode m);
const char *vt_cache_dtype_name(vt_cache_dtype d);
const char *vt_matmul_mode_name(vt_matmul_mode m);
const char *vt_backend_name(vt_backend b); /* "cpu", "hip" */
const char *vt_dtype_name(vt_dtype d);        /* "f32", "bf16" */
const char *vt_attn_impl_name(vt_attn_impl a); /* "eager", "sdpa" */
int vt_dtype_parse(const char *s, vt_dtype *out);
int vt_attn_impl_parse(const char *s, vt_attn_impl *out);
int vt_backend_parse(const char *s, vt_backend *out);
int vt_exec_mode_parse(const char *s, vt_exec_mode *out);
int vt_cache_dtype_parse(const char *s, vt_cache_dtype *out);
int vt_matmul_mode_parse(const char *s, vt_matmul_mode *out);

/* The registry: "engine", "llamacpp", "transformers", "openai" (a server,
 * oracle/openai_runner.c) and "plugin:PATH" (any path: the plugin runner,
 * runner_plugin.c). NULL if unknown. */
const vt_runner_ops *vt_runner_find(const char *name);
/* PATH of a "plugin:PATH" runner name, else NULL: what settings.plugin_path
 * is set to for that runner. */
const char *vt_runner_plugin_path(const char *name);

typedef struct vt_runner vt_runner; /* opaque: ops + state + scratch */

vt_runner *vt_runner_open(const vt_runner_ops *ops, const vt_runner_settings *s, vt_error *err);
void vt_runner_close(vt_runner *r);
int32_t vt_runner_n_vocab(const vt_runner *r);
/* The runner's imports list (vt_runner_ops.imports): VT_OK with *path NULL
 * for a runner without one. */
int vt_runner_imports(vt_runner *r, const char **path, vt_error *err);
void vt_runner_identity_get(const vt_runner *r, vt_runner_identity *out);
/* vt_runner_ops.broken: 0 for a runner without it. */
int vt_runner_broken(const vt_runner *r);
/* vt_runner_ops.top_k_only: 0 for a runner without it. */
int32_t vt_runner_top_k_only(const vt_runner *r);
const vt_runner_settings *vt_runner_settings_of(const vt_runner *r);
/* The settings as applied (see vt_runner_ops.resolved); seed and sampling
 * are applied by runner.c itself and so are always as requested. */
void vt_runner_resolved(const vt_runner *r, vt_runner_settings *out);

/* Generate n tokens after prompt (the sequence is reset first). out_tokens[i]
 * is the i-th generated token and out_logits (n x n_vocab, may be NULL) the
 * logits it was chosen from. Sampling is seeded by settings.seed alone. */
int vt_runner_generate(vt_runner *r, const int32_t *prompt, int32_t n_prompt, int32_t n,
                       int32_t *out_tokens, float *out_logits, vt_error *err);

/* Teacher-forced scoring: logits predicting each of cont[0..n_cont) after
 * prompt (n_cont x n_vocab). Two shapes, because an engine need not agree
 * with itself across them (llama.cpp's batched and single-token quantized
 * paths differ by up to 0.9 nats on Q4_K at 0.6B size):
 *  - batched: one pass over prompt + cont, cont in batches as a prefill;
 *  - replay: the shape generation ran in (vt_runner_generate's calls: the
 *    prompt, then one token per evaluation), so replaying a runner's own
 *    greedy stream gives its generation's logits bit for bit. */
typedef enum vt_score_shape {
    VT_SHAPE_REPLAY = 0,
    VT_SHAPE_BATCHED = 1
} vt_score_shape;
const char *vt_score_shape_name(vt_score_shape s); /* "replay", "batched" */
int vt_score_shape_parse(const char *s, vt_score_shape *out);

int vt_runner_score(vt_runner *r, const int32_t *prompt, int32_t n_prompt, const int32_t *cont,
                    int32_t n_cont, float *out_logits, vt_error *err); /* batched */
int vt_runner_score_replay(vt_runner *r, const int32_t *prompt, int32_t n_prompt, const int32_t *cont,
                           int32_t n_cont, float *out_logits, vt_error *err);
int vt_runner_score_shaped(vt_runner *r, vt_score_shape shape, const int32_t *prompt, int32_t n_prompt,
                           const int32_t *cont, int32_t n_cont, float *out_logits, vt_error *err);

/* log-softmax of one row with double accumulation: out[i] = x[i] - logsumexp(x). */
void vt_log_softmax(const float *x, int32_t n, double *out);
/* argmax, lowest id on ties; NaN entries passed over (0 when x[0] is NaN). */
int32_t vt_argmax(const float *x, int32_t n);

#endif
