/* Loads libllama from the pinned node-llama-cpp package at run time and
 * tokenizes with it. Compiled against the llama.h taken from the same
 * package's source bundle, so struct llama_model_params matches.
 *
 * libllama's RUNPATH is $ORIGIN, so dlopen by full path finds its
 * libggml / libggml-base siblings without touching LD_LIBRARY_PATH. */
#include "llamacpp_vocab.h"

#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llama.h>

#ifndef VT_GGML_LIBDIR
#define VT_GGML_LIBDIR "deps/linux-x64/bins/linux-x64"
#endif

typedef void (*backend_init_fn)(void);
typedef void (*log_set_fn)(ggml_log_callback, void *);
typedef struct llama_model_params (*default_params_fn)(void);
typedef struct llama_model *(*load_fn)(const char *, struct llama_model_params);
typedef void (*model_free_fn)(struct llama_model *);
typedef const struct llama_vocab *(*get_vocab_fn)(const struct llama_model *);
typedef int32_t (*n_tokens_fn)(const struct llama_vocab *);
typedef int32_t (*tokenize_fn)(const struct llama_vocab *, const char *, int32_t, llama_token *,
                               int32_t, bool, bool);
typedef int32_t (*detokenize_fn)(const struct llama_vocab *, const llama_token *, int32_t, char *,
                                 int32_t, bool, bool);
typedef int32_t (*piece_fn)(const struct llama_vocab *, llama_token, char *, int32_t, int32_t,
                            bool);

struct vt_llama_vocab {
    void *lib;
    char path[4096];
    struct llama_model *model;
    const struct llama_vocab *vocab;
    model_free_fn model_free;
    n_tokens_fn n_tokens;
    tokenize_fn tokenize;
    detokenize_fn detokenize;
    piece_fn piece;
};

/* llama.cpp logs model loading at INFO level to stderr by default. */
static void quiet_log(enum ggml_log_level level, const char *text, void *user)
{
    (void)level;
    (void)text;
    (void)user;
}

/* The package names the library after its release (libllama.v0.5.0.so);
 * accept any libllama[.vX.Y.Z].so in libdir rather than pin the name here. */
static int find_libllama(const char *libdir, char *path, size_t cap)
{
    DIR *d = opendir(libdir);
    if (!d)
        return 0;
    int found = 0;
    struct dirent *e;
    while (!found && (e = readdir(d)) != NULL) {
        const char *n = e->d_name;
        size_t len = strlen(n);
        if (strncmp(n, "libllama", 8) != 0 || len < 11 || strcmp(n + len - 3, ".so") != 0)
            continue;
        if (n[8] != '.') /* libllama-common.so and the like */
            continue;
        found = snprintf(path, cap, "%s/%s", libdir, n) < (int)cap;
    }
    closedir(d);
    return found;
}

static void *sym(vt_llama_vocab *v, const char *name, vt_error *err)
{
    void *p = dlsym(v->lib, name);
    if (!p)
        vt_error_set(err, VT_EINPUT, "%s: symbol %s: not found", v->path, name);
    return p;
}

vt_llama_vocab *vt_llama_vocab_open(const char *gguf_path, const char *libdir, vt_error *err)
{
    if (!libdir)
        libdir = getenv("VT_GGML_LIBDIR");
    if (!libdir || !*libdir)
        libdir = VT_GGML_LIBDIR;
    vt_llama_vocab *v = calloc(1, sizeof *v);
    if (!v) {
        vt_error_set(err, VT_EINPUT, "llama.cpp oracle: out of memory");
        return NULL;
    }
    if (!find_libllama(libdir, v->path, sizeof v->path)) {
        vt_error_set(err, VT_EINPUT, "%s: no libllama*.so: cannot load the llama.cpp oracle "
                     "(run scripts/bootstrap)", libdir);
        free(v);
        return NULL;
    }
    v->lib = dlopen(v->path, RTLD_NOW | RTLD_LOCAL);
    if (!v->lib) {
        vt_error_set(err, VT_EINPUT, "%s: cannot load the llama.cpp oracle: %s (run scripts/bootstrap)",
                     v->path, dlerror());
        free(v);
        return NULL;
    }

    enum { N_SYMS = 10 };
    const char *names[N_SYMS] = { "llama_backend_init", "llama_log_set",
                                  "llama_model_default_params", "llama_model_load_from_file",
                                  "llama_model_free", "llama_model_get_vocab",
                                  "llama_vocab_n_tokens", "llama_tokenize", "llama_detokenize",
                                  "llama_token_to_piece" };
    void *p[N_SYMS];
    for (int i = 0; i < N_SYMS; i++) {
        if (!(p[i] = sym(v, names[i], err))) {
            vt_llama_vocab_free(v);
            return NULL;
        }
    }
    /* dlsym returns void*; ISO C has no conversion to function pointers, POSIX does. */
    backend_init_fn backend_init;
    log_set_fn log_set;
    default_params_fn default_params;
    load_fn load;
    get_vocab_fn get_vocab;
    memcpy(&backend_init, &p[0], sizeof p[0]);
    memcpy(&log_set, &p[1], sizeof p[1]);
    memcpy(&default_params, &p[2], sizeof p[2]);
    memcpy(&load, &p[3], sizeof p[3]);
    memcpy(&v->model_free, &p[4], sizeof p[4]);
    memcpy(&get_vocab, &p[5], sizeof p[5]);
    memcpy(&v->n_tokens, &p[6], sizeof p[6]);
    memcpy(&v->tokenize, &p[7], sizeof p[7]);
    memcpy(&v->detokenize, &p[8], sizeof p[8]);
    memcpy(&v->piece, &p[9], sizeof p[9]);

    log_set(quiet_log, NULL);
    backend_init();

    struct llama_model_params mp = default_params();
    mp.vocab_only = true;
    v->model = load(gguf_path, mp);
    if (!v->model) {
        vt_error_set(err, VT_EINPUT, "%s: llama.cpp could not load the vocabulary", gguf_path);
        vt_llama_vocab_free(v);
        return NULL;
    }
    v->vocab = get_vocab(v->model);
    return v;
}

void vt_llama_vocab_free(vt_llama_vocab *v)
{
    if (!v)
        return;
    if (v->model)
        v->model_free(v->model);
    if (v->lib)
        dlclose(v->lib);
    free(v);
}

const char *vt_llama_vocab_lib_path(const vt_llama_vocab *v) { return v->path; }

int32_t vt_llama_vocab_n_tokens(const vt_llama_vocab *v) { return v->n_tokens(v->vocab); }

/* llama.cpp's buffers are int32-sized. */
static int32_t clamp32(size_t n) { return n > INT32_MAX ? INT32_MAX : (int32_t)n; }

int vt_llama_tokenize(vt_llama_vocab *v, const char *text, size_t len, int add_special,
                      int parse_special, int32_t *out, size_t cap, size_t *n_out, vt_error *err)
{
    *n_out = 0;
    if (len > INT32_MAX)
        return vt_error_set(err, VT_EINPUT, "llama tokenize: text of %zu bytes exceeds int32", len);
    int32_t r = v->tokenize(v->vocab, text, (int32_t)len, out, clamp32(cap), add_special != 0,
                            parse_special != 0);
    if (r == INT32_MIN)
        return vt_error_set(err, VT_EINPUT, "llama tokenize: result exceeds int32");
    if (r < 0) {
        *n_out = (size_t)-(int64_t)r;
        return vt_error_set(err, VT_EINPUT, "llama tokenize: %zu tokens do not fit in %zu",
                            *n_out, cap);
    }
    *n_out = (size_t)r;
    return VT_OK;
}

int vt_llama_detokenize(vt_llama_vocab *v, const int32_t *ids, size_t n, char *out, size_t cap,
                        size_t *n_out, vt_error *err)
{
    *n_out = 0;
    if (n > INT32_MAX)
        return vt_error_set(err, VT_EINPUT, "llama detokenize: %zu ids exceed int32", n);
    int32_t n_vocab = v->n_tokens(v->vocab);
    for (size_t i = 0; i < n; i++) /* llama.cpp aborts on these */
        if (ids[i] < 0 || ids[i] >= n_vocab)
            return vt_error_set(err, VT_EINPUT, "llama detokenize: id %d at %zu: expected 0..%d",
                                ids[i], i, n_vocab - 1);
    int32_t r = v->detokenize(v->vocab, ids, (int32_t)n, out, clamp32(cap), false, true);
    if (r < 0) {
        *n_out = (size_t)-(int64_t)r;
        return vt_error_set(err, VT_EINPUT, "llama detokenize: %zu bytes do not fit in %zu",
                            *n_out, cap);
    }
    *n_out = (size_t)r;
    return VT_OK;
}

int vt_llama_token_to_piece(vt_llama_vocab *v, int32_t id, int special, char *out, size_t cap,
                            size_t *n_out, vt_error *err)
{
    *n_out = 0;
    if (id < 0 || id >= v->n_tokens(v->vocab))
        return vt_error_set(err, VT_EINPUT, "llama token_to_piece: id %d out of range", id);
    int32_t r = v->piece(v->vocab, id, out, clamp32(cap), 0, special != 0);
    if (r < 0) {
        *n_out = (size_t)-(int64_t)r;
        return vt_error_set(err, VT_EINPUT, "llama token_to_piece: %zu bytes do not fit in %zu",
                            *n_out, cap);
    }
    *n_out = (size_t)r;
    return VT_OK;
}
