/* The llamacpp runner: llama.cpp itself (the pinned package's libllama, CPU
 * backend, loaded at run time) behind the vt_runner_ops interface, so
 * capture and compare run it exactly as they run our engine.
 *
 * It only produces logits: llama.cpp's samplers are never used; tokens are
 * chosen by vt's own sampler (engine/runner.c), as for every runner.
 *
 * Settings it honours: model_path; mode (production: batches of up to
 * n_batch tokens per llama_decode, n_threads threads; eager: one token per
 * llama_decode, one thread); n_ctx; n_batch (llama.cpp's n_batch and
 * n_ubatch); cache_dtype (AUTO and F32: F32 KV cache; BF16: BF16; FP8_E4M3 is
 * refused, llama.cpp has no such KV cache type). Flash attention is off. The
 * matmul, seed and sampling settings do not concern it; its resolved
 * settings report matmul q8, which is what ggml's CPU backend does. */
#ifndef VT_LLAMACPP_RUNNER_H
#define VT_LLAMACPP_RUNNER_H

#include "../engine/runner.h"

extern const vt_runner_ops vt_runner_llamacpp;

#endif
