/* The prompt file parser (capture/prompts.h) over arbitrary bytes, with
 * Qwen's vocabulary for the text prompts and the id bound. */
#define VT_FUZZ_WANTS_TOKENIZER
#include "fuzz_util.h"

#include "capture/prompts.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[128];
    fz_write(fz_path("p.jsonl", path, sizeof path), data, size);
    vt_prompt_set ps;
    vt_error err;
    if (vt_prompts_read(path, fz_tok, &ps, &err) != VT_OK)
        return 0;
    for (int i = 0; i < ps.n; i++)
        if (ps.items[i].n_tokens < 1 || !ps.items[i].id)
            abort(); /* prompts.h: every prompt has an id and at least one token */
    vt_prompts_free(&ps);
    return 0;
}
