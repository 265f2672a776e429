/* The pinned package's libllama, loaded once per process (dlopen), with the
 * entry points every llama.cpp oracle uses (tokenizer, runner) and the CPU
 * backend ggml picks for this machine.
 *
 * Internal to oracle/: it includes llama.h, which only the oracle sources
 * see (CMakeLists.txt gives them llama.cpp's headers).
 *
 * Process lifetime, never unloaded: ggml keeps a process-wide backend
 * registry whose dynamically loaded CPU backend cannot be unloaded safely
 * (its threads and buffers may outlive any handle), and libllama's logger is
 * process-wide too. Loading once also means every oracle in the process runs
 * the same library and the same CPU variant. */
#ifndef VT_LLAMACPP_LIB_H
#define VT_LLAMACPP_LIB_H

#include <stdbool.h>
#include <stdint.h>

#include <llama.h>

#include "../common/vt_error.h"

typedef struct vt_llamacpp_lib {
    char libdir[4096];      /* the directory it was loaded from, as resolved */
    char path[4096];        /* full path of libllama */
    char cpu_backend[4096]; /* full path of the libggml-cpu-<variant>.so ggml registered */
    char system_info[2048]; /* llama_print_system_info() once the backend is loaded */
    char version[256];      /* "<package> <version>, llama.cpp <revision>, libllama <llama_version()>" */

    /* llama.h */
    struct llama_model_params (*model_default_params)(void);
    struct llama_context_params (*context_default_params)(void);
    struct llama_model *(*model_load_from_file)(const char *path, struct llama_model_params p);
    void (*model_free)(struct llama_model *model);
    const struct llama_vocab *(*model_get_vocab)(const struct llama_model *model);
    int32_t (*vocab_n_tokens)(const struct llama_vocab *vocab);
    int32_t (*tokenize)(const struct llama_vocab *vocab, const char *text, int32_t text_len,
                        llama_token *tokens, int32_t n_tokens_max, bool add_special,
                        bool parse_special);
    int32_t (*detokenize)(const struct llama_vocab *vocab, const llama_token *tokens,
                          int32_t n_tokens, char *text, int32_t text_len_max, bool remove_special,
                          bool unparse_special);
    int32_t (*token_to_piece)(const struct llama_vocab *vocab, llama_token token, char *buf,
                              int32_t length, int32_t lstrip, bool special);
    struct llama_context *(*init_from_model)(struct llama_model *model,
                                             struct llama_context_params p);
    void (*context_free)(struct llama_context *ctx);
    llama_memory_t (*get_memory)(const struct llama_context *ctx);
    void (*memory_clear)(llama_memory_t mem, bool data);
    llama_pos (*memory_seq_pos_max)(llama_memory_t mem, llama_seq_id seq_id);
    struct llama_batch (*batch_init)(int32_t n_tokens, int32_t embd, int32_t n_seq_max);
    void (*batch_free)(struct llama_batch batch);
    int32_t (*decode)(struct llama_context *ctx, struct llama_batch batch);
    float *(*get_logits_ith)(struct llama_context *ctx, int32_t i);
    bool (*model_is_recurrent)(const struct llama_model *model);
    bool (*model_is_hybrid)(const struct llama_model *model);
    /* What a context was made with, read back (captures record these as
     * resolved, not the request). */
    uint32_t (*n_ctx)(const struct llama_context *ctx);
    uint32_t (*n_batch)(const struct llama_context *ctx);
    uint32_t (*n_ubatch)(const struct llama_context *ctx);
    int32_t (*n_threads)(struct llama_context *ctx);
    int32_t (*n_threads_batch)(struct llama_context *ctx);
} vt_llamacpp_lib;

/* The process's libllama: loaded on the first call from libdir, or from
 * $VT_GGML_LIBDIR, or from the directory scripts/bootstrap filled (compiled
 * in), with llama.cpp's logging silenced for the whole process, the backend
 * initialized and the best CPU backend variant for this machine loaded from
 * the same directory. Later calls return the same table; asking for another
 * directory once one is loaded is an error. Thread-safe. NULL on failure with
 * err set (VT_EINPUT); a failure before anything was initialized can be
 * retried, e.g. with another directory. */
const vt_llamacpp_lib *vt_llamacpp_lib_load(const char *libdir, vt_error *err);
/* The CPU variant asked for: $VT_GGML_CPU_VARIANT, by default "icelake"
 * (the one the engine follows); "best" leaves the choice to ggml. What was
 * loaded is cpu_backend above. */
const char *vt_llamacpp_cpu_variant(void);

#endif
