/* vt export --safetensors: a GGUF model as the files Hugging Face
 * transformers loads (the transformers oracle, oracle/transformers/):
 * DIR/config.json and DIR/model.safetensors, every weight decoded by vt's own
 * codecs (engine/codec.c) to F32 or BF16 (each BF16 value the F32 one
 * rounded to nearest even), under the names and layouts of transformers'
 * Qwen3ForCausalLM. Published as one group (common/vt_publish.h): both files
 * or neither, no clobber unless overwrite, neither aliasing the GGUF.
 *
 * A GGUF matrix of ne = [in, out] is out rows of in values, which is
 * torch's [out, in] row-major: the bytes keep their order, the shape is
 * written the other way round. Qwen3's RoPE is NeoX-style, so q and k need
 * no permutation (llama.cpp's converter permutes only LLaMA-style heads). */
#ifndef VT_HF_EXPORT_H
#define VT_HF_EXPORT_H

#include "../common/vt_error.h"
#include "safetensors.h"

typedef struct vt_hf_export_result {
    int n_tensors;
    unsigned long long safetensors_bytes;
    char arch[32];        /* general.architecture */
    char hf_class[64];    /* "Qwen3ForCausalLM" */
    int tied;             /* tie_word_embeddings */
} vt_hf_export_result;

/* Exports gguf_path into dir (which must exist). VT_EINPUT with err for a
 * model vt cannot export (one line: the file, the tensor or key, what was
 * expected), an unmapped tensor, or a publication refusal. */
int vt_hf_export(const char *gguf_path, const char *dir, vt_st_dtype dtype, int overwrite,
                 vt_hf_export_result *out, vt_error *err);

#endif
