/* vt export: a GGUF model as the files another engine loads.
 *
 *   vt export --safetensors DIR [--dtype f32|bf16] [--overwrite] X.gguf
 *
 * Writes DIR/config.json and DIR/model.safetensors for Hugging Face
 * transformers (oracle/hf_export.h). Errors: one line on stderr, exit 2. */
#include "cmds.h"

#include "oracle/hf_export.h"

#include <stdio.h>
#include <string.h>

static const char usage[] =
    "usage: vt export --safetensors DIR [--dtype f32|bf16] [--overwrite] X.gguf\n"
    "\n"
    "Writes DIR/config.json and DIR/model.safetensors: the model as Hugging Face\n"
    "transformers loads it (qwen3: Qwen3ForCausalLM; qwen35: Qwen3_5ForCausalLM,\n"
    "model_type qwen3_5_text), every weight decoded by vt's codecs to F32 (default)\n"
    "or BF16 (each value the F32 one rounded to nearest even).\n"
    "qwen35 undoes what llama.cpp's converter changed, so that transformers computes\n"
    "what the engine does: RMSNorm weights (not the delta net's gated norm) are\n"
    "written as weight - 1, ssm_a as A_log = log(-ssm_a), delta-net value heads in\n"
    "transformers' grouped order, a fused attn_qkv split into q/k/v_proj; MTP\n"
    "(nextn) blocks are left out. Any other tensor is refused.\n"
    "Both files are published together or not at all; existing ones are kept\n"
    "unless --overwrite. DIR must exist.\n"
    "\n"
    "example: vt export --safetensors out/tiny-f32 tiny-Q8_0.gguf\n";

static int bad(const char *opt, const char *val, const char *expected)
{
    if (val)
        fprintf(stderr, "vt export: %s '%s': expected %s\n", opt, val, expected);
    else
        fprintf(stderr, "vt export: %s: missing: expected %s\n", opt, expected);
    return 2;
}

int vt_cmd_export(int argc, char **argv)
{
    const char *dir = NULL, *model = NULL, *dtype_s = NULL;
    int overwrite = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(usage, stdout);
            return 0;
        }
        if (strcmp(a, "--overwrite") == 0) {
            overwrite = 1;
        } else if (strcmp(a, "--safetensors") == 0 || strcmp(a, "--dtype") == 0) {
            const char **slot = a[2] == 's' ? &dir : &dtype_s;
            if (i + 1 >= argc)
                return bad(a, NULL, a[2] == 's' ? "an existing directory" : "f32 or bf16");
            if (*slot)
                return bad(a, argv[i + 1], "one value (given twice)");
            *slot = argv[++i];
        } else if (a[0] == '-') {
            fprintf(stderr, "vt export: option '%s': expected one of the options in 'vt export --help'\n", a);
            return 2;
        } else if (model) {
            return bad("X.gguf", a, "one model file (given twice)");
        } else {
            model = a;
        }
    }
    if (!dir)
        return bad("--safetensors", NULL, "an existing directory");
    if (!model)
        return bad("X.gguf", NULL, "a GGUF file");
    vt_st_dtype dtype = VT_ST_F32;
    if (dtype_s && strcmp(dtype_s, "bf16") == 0)
        dtype = VT_ST_BF16;
    else if (dtype_s && strcmp(dtype_s, "f32") != 0)
        return bad("--dtype", dtype_s, "f32 or bf16");
    vt_hf_export_result r;
    vt_error err;
    vt_error_clear(&err);
    int rc = vt_hf_export(model, dir, dtype, overwrite, &r, &err);
    if (rc) {
        fprintf(stderr, "vt export: %s\n", err.msg);
        return rc;
    }
    printf("vt export: %s (%s) -> %s/config.json, %s/model.safetensors: %s, %d tensors in %s, %llu bytes%s\n", model,
           r.arch, dir, dir, r.hf_class, r.n_tensors, vt_st_dtype_name(dtype), r.safetensors_bytes,
           r.tied ? ", tied embeddings" : "");
    return 0;
}
