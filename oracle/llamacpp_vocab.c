/* The tokenizer oracle: llama.cpp's tokenizer on a GGUF opened vocab-only,
 * through the process's one libllama (llamacpp_lib.c). */
#include "llamacpp_vocab.h"
#include "llamacpp_lib.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct vt_llama_vocab {
    const vt_llamacpp_lib *lib;
    struct llama_model *model;
    const struct llama_vocab *vocab;
};

vt_llama_vocab *vt_llama_vocab_open(const char *gguf_path, const char *libdir, vt_error *err)
{
    const vt_llamacpp_lib *lib = vt_llamacpp_lib_load(libdir, err);
    if (!lib)
        return NULL;
    vt_llama_vocab *v = calloc(1, sizeof *v);
    if (!v) {
        vt_error_set(err, VT_EINPUT, "llama.cpp oracle: out of memory");
        return NULL;
    }
    v->lib = lib;
    struct llama_model_params mp = lib->model_default_params();
    mp.vocab_only = true;
    v->model = lib->model_load_from_file(gguf_path, mp);
    if (!v->model) {
        vt_error_set(err, VT_EINPUT, "%s: llama.cpp could not load the vocabulary", gguf_path);
        vt_llama_vocab_free(v);
        return NULL;
    }
    v->vocab = lib->model_get_vocab(v->model);
    return v;
}

void vt_llama_vocab_free(vt_llama_vocab *v)
{
    if (!v)
        return;
    if (v->model)
        v->lib->model_free(v->model);
    free(v);
}

const char *vt_llama_vocab_lib_path(const vt_llama_vocab *v) { return v->lib->path; }

int32_t vt_llama_vocab_n_tokens(const vt_llama_vocab *v) { return v->lib->vocab_n_tokens(v->vocab); }

/* llama.cpp's buffers are int32-sized. */
static int32_t clamp32(size_t n) { return n > INT32_MAX ? INT32_MAX : (int32_t)n; }

int vt_llama_tokenize(vt_llama_vocab *v, const char *text, size_t len, int add_special,
                      int parse_special, int32_t *out, size_t cap, size_t *n_out, vt_error *err)
{
    *n_out = 0;
    if (len > INT32_MAX)
        return vt_error_set(err, VT_EINPUT, "llama tokenize: text of %zu bytes exceeds int32", len);
    int32_t r = v->lib->tokenize(v->vocab, text, (int32_t)len, out, clamp32(cap), add_special != 0,
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
    int32_t n_vocab = v->lib->vocab_n_tokens(v->vocab);
    for (size_t i = 0; i < n; i++) /* llama.cpp aborts on these */
        if (ids[i] < 0 || ids[i] >= n_vocab)
            return vt_error_set(err, VT_EINPUT, "llama detokenize: id %d at %zu: expected 0..%d",
                                ids[i], i, n_vocab - 1);
    int32_t r = v->lib->detokenize(v->vocab, ids, (int32_t)n, out, clamp32(cap), false, true);
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
    if (id < 0 || id >= v->lib->vocab_n_tokens(v->vocab))
        return vt_error_set(err, VT_EINPUT, "llama token_to_piece: id %d out of range", id);
    int32_t r = v->lib->token_to_piece(v->vocab, id, out, clamp32(cap), 0, special != 0);
    if (r < 0) {
        *n_out = (size_t)-(int64_t)r;
        return vt_error_set(err, VT_EINPUT, "llama token_to_piece: %zu bytes do not fit in %zu",
                            *n_out, cap);
    }
    *n_out = (size_t)r;
    return VT_OK;
}
