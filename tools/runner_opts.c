#include "runner_opts.h"

#include "../common/vt_parse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char vt_runner_options_usage[] =
    "runner options:\n"
    "  --mode production|eager        batched and threaded, or one token at a time on one thread\n"
    "  --cache-dtype auto|f32|bf16|fp8_e4m3   KV cache storage (llama.cpp has no fp8_e4m3)\n"
    "  --matmul q8|exact              engine: activations through the codec's dot type (default), or not\n"
    "  --backend cpu|hip  --device N   engine: compute on the CPU or on GPU N (the GPU backend module)\n"
    "  --dtype f32|bf16  --attention eager|sdpa   transformers: the model's dtype, its attention code\n"
    "  --threads N  --n-ctx N  --n-batch N  --seed S\n"
    "  --temperature T  --top-p P  --min-p P  --sample-top-k K   sampling (default greedy)\n"
    "  --endpoint URL  --served-model NAME  --api-key-env VAR  --server-top-k K\n"
    "                                 openai: the server, the model it serves, a bearer key's variable,\n"
    "                                 the log-probs asked per position (default 20)\n";

static int bad(const char *tool, const char *opt, const char *val, const char *expected)
{
    fprintf(stderr, "%s: %s '%s': expected %s\n", tool, opt, val ? val : "", expected);
    return -1;
}

static int parse_unit(const char *tool, const char *opt, const char *val, double max, double *out)
{
    double d;
    if (!vt_parse_f64(val, 0.0, max, &d)) {
        char expected[64];
        snprintf(expected, sizeof expected, "a number in 0..%g", max);
        return bad(tool, opt, val, expected);
    }
    *out = d;
    return 1;
}

int vt_runner_option(const char *tool, const char *opt, const char *val, vt_runner_settings *s)
{
    int64_t n;
    if (strcmp(opt, "--mode") == 0)
        return vt_exec_mode_parse(val, &s->mode) ? 1 : bad(tool, opt, val, "production or eager");
    if (strcmp(opt, "--cache-dtype") == 0)
        return vt_cache_dtype_parse(val, &s->cache_dtype) ? 1 : bad(tool, opt, val, "auto, f32, bf16 or fp8_e4m3");
    if (strcmp(opt, "--matmul") == 0)
        return vt_matmul_mode_parse(val, &s->matmul) ? 1 : bad(tool, opt, val, "q8 or exact");
    if (strcmp(opt, "--backend") == 0)
        return vt_backend_parse(val, &s->backend) ? 1 : bad(tool, opt, val, "cpu or hip");
    if (strcmp(opt, "--dtype") == 0)
        return vt_dtype_parse(val, &s->dtype) ? 1 : bad(tool, opt, val, "f32 or bf16");
    if (strcmp(opt, "--attention") == 0)
        return vt_attn_impl_parse(val, &s->attention) ? 1 : bad(tool, opt, val, "eager or sdpa");
    if (strcmp(opt, "--device") == 0) {
        if (!vt_parse_i64(val, 0, 63, &n))
            return bad(tool, opt, val, "an integer in 0..63");
        s->device = (int32_t)n;
        return 1;
    }
    if (strcmp(opt, "--threads") == 0) {
        if (!vt_parse_i64(val, 1, 256, &n))
            return bad(tool, opt, val, "an integer in 1..256");
        s->n_threads = (int32_t)n;
        return 1;
    }
    if (strcmp(opt, "--n-ctx") == 0 || strcmp(opt, "--n-batch") == 0) {
        if (!vt_parse_i64(val, 1, 1 << 20, &n))
            return bad(tool, opt, val, "an integer in 1..1048576");
        *(strcmp(opt, "--n-ctx") == 0 ? &s->n_ctx : &s->n_batch) = (int32_t)n;
        return 1;
    }
    if (strcmp(opt, "--endpoint") == 0 || strcmp(opt, "--served-model") == 0 || strcmp(opt, "--api-key-env") == 0) {
        if (!*val)
            return bad(tool, opt, val, strcmp(opt, "--endpoint") == 0 ? "a URL" : "a name");
        *(opt[2] == 'e' ? &s->endpoint : opt[2] == 's' ? &s->served_model : &s->api_key_env) = val;
        return 1;
    }
    if (strcmp(opt, "--server-top-k") == 0) {
        if (!vt_parse_i64(val, 1, 1000, &n))
            return bad(tool, opt, val, "an integer in 1..1000");
        s->server_top_k = (int32_t)n;
        return 1;
    }
    if (strcmp(opt, "--seed") == 0)
        return vt_parse_u64(val, &s->seed) ? 1 : bad(tool, opt, val, "an unsigned integer");
    if (strcmp(opt, "--sample-top-k") == 0) {
        if (!vt_parse_i64(val, 0, INT32_MAX, &n))
            return bad(tool, opt, val, "a non-negative integer");
        s->sampling.top_k = (int32_t)n;
        return 1;
    }
    if (strcmp(opt, "--temperature") == 0)
        return parse_unit(tool, opt, val, 100.0, &s->sampling.temperature);
    if (strcmp(opt, "--top-p") == 0)
        return parse_unit(tool, opt, val, 1.0, &s->sampling.top_p);
    if (strcmp(opt, "--min-p") == 0)
        return parse_unit(tool, opt, val, 1.0, &s->sampling.min_p);
    return 0;
}

int vt_runner_pair(const char *tool, const char *local, const char *oracle, vt_backend local_backend,
                   const vt_runner_ops **lo, const vt_runner_ops **oo)
{
    *lo = vt_runner_find(local);
    *oo = vt_runner_find(oracle);
    const char *opt = !*lo ? "--local" : !*oo ? "--oracle" : NULL;
    if (opt) {
        fprintf(stderr, "%s: %s '%s': expected engine, llamacpp, transformers, openai or plugin:PATH.so\n", tool, opt,
                !*lo ? local : oracle);
        return 2;
    }
    /* Agreement and KLD compare whole distributions; a server tells a top k. */
    if ((*lo)->top_k_only || (*oo)->top_k_only) {
        fprintf(stderr, "%s: %s %s: expected a runner with logits (it tells only the top-k log-probs of each "
                "position: capture it with vt-capture and compare with vt-neartie)\n", tool,
                (*lo)->top_k_only ? "--local" : "--oracle", (*lo)->top_k_only ? local : oracle);
        return 2;
    }
    /* The engine on the GPU against the engine on the CPU is two computations. */
    if (*lo == *oo && !(local_backend != VT_BACKEND_CPU && strcmp(local, "engine") == 0)) {
        fprintf(stderr, "%s: --local %s --oracle %s: refused by rule distinct: the same runner with the same "
                "settings is one computation run twice: expected two different runners\n", tool, local, oracle);
        return 2;
    }
    return 0;
}
