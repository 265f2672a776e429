/* The GGUF reader over arbitrary bytes, then what `vt gguf info` and the
 * rewrite do with an accepted file: every key, every array element, every
 * tensor's bytes touched, the writer's round trip byte-identical, and the
 * tokenizer built from it where it has one. */
#include "fuzz_util.h"

#include "engine/gguf_file.h"
#include "engine/tokenizer.h"

static volatile uint8_t sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    vt_error err;
    vt_gguf *g = vt_gguf_open_memory(data, size, "fuzz.gguf", &err);
    if (!g)
        return 0;
    for (uint64_t i = 0; i < vt_gguf_n_kv(g); i++) {
        const vt_gguf_value *v = vt_gguf_kv_value(g, i);
        vt_gguf_value e;
        for (uint64_t j = 0; j < 4 && vt_gguf_array_get(g, v, j, &e); j++)
            sink ^= (uint8_t)e.type;
    }
    for (uint64_t i = 0; i < vt_gguf_n_tensors(g); i++) {
        const vt_gguf_tensor *t = vt_gguf_tensor_at(g, i);
        if (t->n_bytes) /* inside the file, the reader says: touch both ends */
            sink ^= ((const uint8_t *)t->data)[0] ^ ((const uint8_t *)t->data)[t->n_bytes - 1];
    }
    vt_gguf_writer *w = vt_gguf_writer_from(g, &err);
    void *out = NULL;
    size_t n = 0;
    if (w && vt_gguf_writer_to_memory(w, &out, &n, &err) == VT_OK && (n != size || memcmp(out, data, n) != 0))
        abort(); /* vt gguf rewrite's promise: identical bytes for any accepted file */
    free(out);
    vt_gguf_writer_free(w);
    vt_tokenizer *tok = vt_tokenizer_open(g, &err);
    if (tok) {
        int32_t ids[64];
        size_t need = 0;
        vt_tokenize(tok, "Hello, world", 12, 1, 1, ids, 64, &need, &err);
        vt_tokenizer_free(tok);
    }
    vt_gguf_free(g);
    return 0;
}
