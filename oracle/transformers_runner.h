/* The transformers runner: Hugging Face transformers with PyTorch, the
 * primary oracle, through oracle/transformers/vt_transformers.py in a
 * Python process of its own.
 *
 * open exports the GGUF (oracle/hf_export.h) into a private directory in
 * settings.dtype, starts the adapter ($VT_PYTHON, default python3;
 * $VT_TRANSFORMERS_ADAPTER, default the source tree's) with -B and an
 * empty pycache_prefix, so that no byte code is read or written and every
 * module runs from its verified source, and talks to it over a socket on
 * its fd 3: one JSON line per request and reply, token ids (int32) and
 * logits (float32, little-endian) as raw bytes after the line. The
 * adapter's stdout goes to vt's stderr.
 *
 * Settings: dtype f32|bf16 (the export and torch dtype), attention
 * eager|sdpa, device (CUDA index), mode (production: up to n_batch tokens
 * per forward; eager: one), cache auto or the model's dtype (transformers'
 * DynamicCache keeps keys and values in it; it has no FP8 E4M3 cache).
 * Resolved matmul is exact: the dequantized weights meet unrounded
 * activations. imports asks the adapter for its vt.imports/1 list, which a
 * capture verifies against the distributions' RECORDs as its package. */
#ifndef VT_TRANSFORMERS_RUNNER_H
#define VT_TRANSFORMERS_RUNNER_H

#include "../engine/runner.h"

extern const vt_runner_ops vt_runner_transformers;

#endif
