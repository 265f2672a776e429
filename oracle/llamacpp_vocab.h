/* The tokenizer oracle: llama.cpp's own tokenizer, from the pinned package's
 * libllama loaded at run time (dlopen), with a GGUF opened vocab-only.
 * Used to check engine/tokenizer token for token and byte for byte.
 *
 * libllama is loaded once per process and stays loaded (llamacpp_lib.h);
 * its logger is silenced for the whole process from the first open on. */
#ifndef VT_LLAMACPP_VOCAB_H
#define VT_LLAMACPP_VOCAB_H

#include <stddef.h>
#include <stdint.h>

#include "../common/vt_error.h"

typedef struct vt_llama_vocab vt_llama_vocab;

/* Loads libllama (once per process) from libdir, or from $VT_GGML_LIBDIR, or
 * from the directory scripts/bootstrap filled (compiled in), then opens
 * gguf_path vocab-only.
 * NULL on failure with err set (VT_EINPUT). */
vt_llama_vocab *vt_llama_vocab_open(const char *gguf_path, const char *libdir, vt_error *err);
void vt_llama_vocab_free(vt_llama_vocab *v);
/* Full path of the loaded libllama. */
const char *vt_llama_vocab_lib_path(const vt_llama_vocab *v);

int32_t vt_llama_vocab_n_tokens(const vt_llama_vocab *v);

/* llama_tokenize(add_special, parse_special). Writes up to cap ids; *n_out is
 * the number of ids the text makes. If that exceeds cap: VT_EINPUT, and
 * *n_out still tells the size needed. */
int vt_llama_tokenize(vt_llama_vocab *v, const char *text, size_t len, int add_special,
                      int parse_special, int32_t *out, size_t cap, size_t *n_out, vt_error *err);

/* llama_detokenize(remove_special = false, unparse_special = true): bytes,
 * special tokens rendered as their text. Same buffer contract as above. */
int vt_llama_detokenize(vt_llama_vocab *v, const int32_t *ids, size_t n, char *out, size_t cap,
                        size_t *n_out, vt_error *err);

/* llama_token_to_piece(lstrip = 0, special): one token's bytes. */
int vt_llama_token_to_piece(vt_llama_vocab *v, int32_t id, int special, char *out, size_t cap,
                            size_t *n_out, vt_error *err);

#endif
