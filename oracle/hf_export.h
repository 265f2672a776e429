/* vt export --safetensors: a GGUF model as the files Hugging Face
 * transformers loads (the transformers oracle, oracle/transformers/):
 * DIR/config.json and DIR/model.safetensors, every weight decoded by vt's own
 * codecs (engine/codec.c) to F32 or BF16 (each BF16 value the F32 one
 * rounded to nearest even), under the names and layouts of transformers'
 * Qwen3ForCausalLM (general.architecture qwen3) or Qwen3_5ForCausalLM with a
 * Qwen3_5TextConfig (qwen35, the Qwen3.5 hybrid). Published as one group
 * (common/vt_publish.h): both files or neither, no clobber unless
 * overwrite, neither aliasing the GGUF.
 *
 * A GGUF matrix of ne = [in, out] is out rows of in values, which is
 * torch's [out, in] row-major: the bytes keep their order, the shape is
 * written the other way round. Qwen3's RoPE is NeoX-style, so q and k need
 * no permutation (llama.cpp's converter permutes only LLaMA-style heads).
 *
 * qwen35 undoes llama.cpp's conversion where transformers computes with
 * other values than the engine (hf_export.c's table says where and why,
 * citing the engine's use): RMSNorm weights other than the delta net's
 * gated norm are written as weight - 1 (transformers scales by 1 + weight),
 * ssm_a (-exp(A_log)) as A_log = log(-ssm_a), ssm_conv1d as conv1d.weight
 * [conv_dim, 1, d_conv], every tensor indexed by delta-net value head in
 * transformers' grouped head order (the GGUF tiles them), and a fused
 * attn_qkv of a full-attention layer split into q_proj, k_proj, v_proj.
 * The hyper-parameters and layer schedule are the engine's own reading
 * (engine/qwen35.h); MTP (nextn) blocks after the main layers are not part
 * of either model's forward pass and are left out. */
#ifndef VT_HF_EXPORT_H
#define VT_HF_EXPORT_H

#include "../common/vt_error.h"
#include "safetensors.h"

typedef struct vt_hf_export_result {
    int n_tensors;
    unsigned long long safetensors_bytes;
    char arch[32];        /* general.architecture */
    char hf_class[64];    /* "Qwen3ForCausalLM", "Qwen3_5ForCausalLM" */
    int tied;             /* tie_word_embeddings */
    int n_left_out;       /* GGUF tensors of MTP (nextn) blocks, not exported */
} vt_hf_export_result;

/* Exports gguf_path into dir (which must exist). VT_EINPUT with err for a
 * model vt cannot export (one line: the file, the tensor or key, what was
 * expected), an unmapped tensor, or a publication refusal. */
int vt_hf_export(const char *gguf_path, const char *dir, vt_st_dtype dtype, int overwrite,
                 vt_hf_export_result *out, vt_error *err);

#endif
