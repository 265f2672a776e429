/* Byte-level BPE tokenizer built from GGUF metadata (tokenizer.ggml.model
 * "gpt2"), reproducing llama.cpp's llama_tokenize / llama_detokenize for the
 * pre-tokenizers it supports: tokenizer.ggml.pre "qwen2" and "qwen35".
 * Any other pre-tokenizer is refused (VT_EINPUT, naming the value).
 *
 * Text handling, as llama.cpp does it:
 *  - parse_special: control and user-defined tokens written in the text
 *    become single tokens, longest token text first. Without parse_special,
 *    user-defined tokens are still matched; control tokens are plain text.
 *  - Invalid UTF-8 is not refused: like llama.cpp, each byte that does not
 *    start a well-formed sequence reads as U+FFFD, and overlong forms and
 *    surrogates are decoded as written. The one exception: a 4-byte form
 *    above U+10FFFF (F4 90.. to F7 ..) makes llama.cpp abort, so vt refuses
 *    the text with VT_EINPUT instead.
 *
 * A handle carries scratch buffers: use one per thread. */
#ifndef VT_TOKENIZER_H
#define VT_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "../common/vt_error.h"
#include "gguf_file.h"

typedef struct vt_tokenizer vt_tokenizer;

/* Token attribute bits (llama.cpp's llama_token_attr values). */
enum {
    VT_TOKEN_ATTR_UNDEFINED = 0,
    VT_TOKEN_ATTR_UNKNOWN = 1 << 0,
    VT_TOKEN_ATTR_UNUSED = 1 << 1,
    VT_TOKEN_ATTR_NORMAL = 1 << 2,
    VT_TOKEN_ATTR_CONTROL = 1 << 3,
    VT_TOKEN_ATTR_USER_DEFINED = 1 << 4,
    VT_TOKEN_ATTR_BYTE = 1 << 5
};

/* Build from g's metadata. Everything needed is copied: g may be freed
 * afterwards. NULL on failure with err set (VT_EINPUT). */
vt_tokenizer *vt_tokenizer_open(const vt_gguf *g, vt_error *err);
/* The same from a GGUF file's path (opened, read, closed). */
vt_tokenizer *vt_tokenizer_open_file(const char *path, vt_error *err);
void vt_tokenizer_free(vt_tokenizer *t);

/* text[0..len) -> token ids. add_special: prepend BOS / append EOS where the
 * vocabulary asks for them (tokenizer.ggml.add_bos_token / add_eos_token).
 * Writes up to cap ids to out; *n_out is the number of ids the text makes.
 * If that exceeds cap: VT_EINPUT, and *n_out still tells the size needed. */
int vt_tokenize(vt_tokenizer *t, const char *text, size_t len, int add_special, int parse_special,
                int32_t *out, size_t cap, size_t *n_out, vt_error *err);

/* ids -> bytes (byte-level decoding; control and user-defined tokens written
 * as their text), as llama_detokenize(remove_special = false,
 * unparse_special = true). Same buffer contract as vt_tokenize. */
int vt_detokenize(vt_tokenizer *t, const int32_t *ids, size_t n, char *out, size_t cap,
                  size_t *n_out, vt_error *err);

int32_t vt_tokenizer_n_vocab(const vt_tokenizer *t);
/* The pre-tokenizer name ("qwen2" or "qwen35"). */
const char *vt_tokenizer_pre(const vt_tokenizer *t);

/* Token id's text as stored in the vocabulary (byte-level encoded, e.g. "Ġthe"),
 * and the bytes it decodes to. NULL (and *len 0) for an id out of range.
 * Not NUL-terminated. */
const char *vt_tokenizer_token_text(const vt_tokenizer *t, int32_t id, size_t *len);
const char *vt_tokenizer_token_piece(const vt_tokenizer *t, int32_t id, size_t *len);
/* VT_TOKEN_ATTR_* bits, after llama.cpp's adjustments by token text. 0 out of range. */
int vt_tokenizer_token_attr(const vt_tokenizer *t, int32_t id);
/* Id whose text is exactly s[0..len), or -1. */
int32_t vt_tokenizer_find(const vt_tokenizer *t, const char *s, size_t len);

/* Special ids, -1 where the vocabulary has none. */
int32_t vt_tokenizer_bos(const vt_tokenizer *t);
int32_t vt_tokenizer_eos(const vt_tokenizer *t);
int32_t vt_tokenizer_eot(const vt_tokenizer *t);
int32_t vt_tokenizer_pad(const vt_tokenizer *t);
/* Whether add_special prepends BOS / appends EOS. */
int vt_tokenizer_add_bos(const vt_tokenizer *t);
int vt_tokenizer_add_eos(const vt_tokenizer *t);

#endif
