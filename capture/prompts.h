/* Prompt files: JSON Lines, one prompt per line, each an object
 *   {"id": "greeting", "text": "Hello"}        text, tokenized by vt's tokenizer
 *                                               (BOS as the vocabulary asks,
 *                                               special tokens parsed)
 *   {"id": "p2", "tokens": [151643, 9707]}     token ids as they are
 * ids are non-empty strings, unique in the file; exactly one of text and
 * tokens; no other members. Lines holding only whitespace are skipped.
 * Any other line is refused with VT_EINPUT naming the file, the line
 * number and the field ("P.jsonl: line 3: field tokens: expected ..."). */
#ifndef VT_PROMPTS_H
#define VT_PROMPTS_H

#include <stdint.h>

#include "../common/vt_error.h"
#include "../engine/tokenizer.h"
#include "../provenance/provenance.h"

typedef struct vt_prompt {
    char *id;
    char *text;        /* NULL for a tokens prompt */
    int32_t *tokens;
    int32_t n_tokens;  /* >= 1 */
} vt_prompt;

typedef struct vt_prompt_set {
    vt_prompt *items;
    int n;
    vt_sha256_hex file_sha256; /* of the file's bytes */
    uint64_t file_size;
} vt_prompt_set;

/* Reads path; text prompts are tokenized with tok, and every token id must
 * be below vt_tokenizer_n_vocab(tok). */
int vt_prompts_read(const char *path, vt_tokenizer *tok, vt_prompt_set *out, vt_error *err);
void vt_prompts_free(vt_prompt_set *ps);

/* Reads a whole file into memory (malloc'd, NUL-terminated; *size without
 * the NUL); VT_EINPUT naming the file if it cannot. */
int vt_read_file(const char *path, char **data, size_t *size, vt_error *err);

#endif
