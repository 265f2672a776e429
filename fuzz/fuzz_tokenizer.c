/* The tokenizer (Qwen's vocabulary, as the models carry it) over arbitrary
 * bytes as text, with and without special tokens parsed, and the ids it
 * makes (and arbitrary ids) detokenized. */
#define VT_FUZZ_WANTS_TOKENIZER
#include "fuzz_util.h"


int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int parse_special = data[0] & 1;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    size_t cap = len + 8, need = 0;
    int32_t *ids = malloc(cap * sizeof *ids);
    char *out = malloc(4 * len + 64);
    if (!ids || !out)
        abort();
    vt_error err;
    if (vt_tokenize(fz_tok, text, len, 1, parse_special, ids, cap, &need, &err) == VT_OK) {
        if (need > cap)
            abort();
        size_t got = 0;
        vt_detokenize(fz_tok, ids, need, out, 4 * len + 64, &got, &err);
    }
    /* the bytes as ids too: any int32, in or out of the vocabulary */
    size_t n_ids = len / 4 < 16 ? len / 4 : 16;
    int32_t raw[16];
    memcpy(raw, text, n_ids * 4);
    size_t got = 0;
    vt_detokenize(fz_tok, raw, n_ids, out, 4 * len + 64, &got, &err);
    free(ids);
    free(out);
    return 0;
}
