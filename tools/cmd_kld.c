/* vt kld: corpus metrics of the engine against llama.cpp on one model,
 * as llama-perplexity --kl-divergence reports them, but exact
 * (compare/kld_corpus.h). */
#include "cmds.h"

#include "../capture/prompts.h"
#include "../common/vt_parse.h"
#include "../common/vt_utf8.h"
#include "../compare/kld_corpus.h"
#include "../engine/gguf_file.h"
#include "../engine/runner.h"
#include "../engine/tokenizer.h"
#include "json_out.h"
#include "runner_opts.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage_text[] =
    "usage: vt kld --model X.gguf --corpus TEXT [--local engine] [--oracle llamacpp]\n"
    "              [--ctx 512] [--chunks N] [--context N] [--by-position N]\n"
    "              [--local-cache-dtype D] [--json] [runner options]\n"
    "\n"
    "Both runners teacher-forced on the corpus (a UTF-8 text file, tokenized by the model's\n"
    "vocabulary, special tokens not parsed) in chunks of --ctx tokens (default 512; at most\n"
    "--chunks N of them, default all whole chunks): the first half of each chunk is context,\n"
    "the second half is scored, batched, as llama-perplexity does. Prints each runner's\n"
    "perplexity (with the error of its mean log-likelihood), KL(oracle || local) mean with its\n"
    "error, median, p90, p99, p99.9 and max, top-1 agreement, dp of the text's token (RMS and\n"
    "max) and the largest |dlogit| and |dlogprob|, all in double precision, and the largest\n"
    "actual-prefix gap (the oracle's log-prob of its argmax minus that of the local argmax,\n"
    "as the near-tie rule measures it) with the count above 500 milli-nats. --context N\n"
    "scores from position N of each chunk instead of --ctx / 2 (1: every position but the\n"
    "first, for long sequences); --by-position N adds a table of the same per bucket of N\n"
    "positions; --local-cache-dtype gives the local runner its own KV cache dtype (the oracle\n"
    "keeps --cache-dtype). A runner compared with itself is refused (exit 2).\n"
    "--json: the same numbers as one JSON document on stdout (vt.kld/1, its layout in\n"
    "compare/vt.kld.schema.json), the --by-position table included, at full precision.\n"
    "\n"
    "example: vt kld --model m.gguf --corpus README.md --ctx 2048 --chunks 1 --context 1 \\\n"
    "             --by-position 256 --local-cache-dtype fp8_e4m3\n";

static int bad(const char *opt, const char *val, const char *expected)
{
    fprintf(stderr, "vt kld: %s '%s': expected %s\n", opt, val ? val : "", expected);
    return 2;
}

/* What one run computed, and what it ran: both printers read only this. */
typedef struct kld_run {
    const char *model, *corpus, *local_name, *oracle_name;
    vt_cache_dtype local_cache, oracle_cache;
    double threshold_mnats;
    int32_t bucket;
    const vt_kld_corpus_result *r;
} kld_run;

static void print_table(const kld_run *k)
{
    const vt_kld_corpus_result *r = k->r;
    const vt_nt_metrics *m = &r->m;
    printf("vt kld: %s, corpus %s: %lld tokens, %d chunks of %d (positions %d..%d scored in each): %lld "
           "positions; KV cache: local %s, oracle %s\n", k->model, k->corpus, (long long)r->tokens, r->chunks,
           r->ctx, r->context, r->ctx - 1, (long long)m->positions, vt_cache_dtype_name(k->local_cache),
           vt_cache_dtype_name(k->oracle_cache));
    printf("perplexity: local (%s) %.6f (mean NLL %.8f +- %.2g), oracle (%s) %.6f (mean NLL %.8f +- %.2g); "
           "ln(PPL(local)/PPL(oracle)) %.3g\n", k->local_name, r->ppl_local, r->nll_local, r->nll_local_unc,
           k->oracle_name, r->ppl_oracle, r->nll_oracle, r->nll_oracle_unc, r->nll_local - r->nll_oracle);
    printf("KL(oracle||local): mean %.6g +- %.2g, median %.6g, p90 %.6g, p99 %.6g, p99.9 %.6g, max %.6g "
           "(chunk %d position %d)\n", m->kld_mean, m->kld_mean_unc, m->kld_median, m->kld_p90, m->kld_p99,
           m->kld_p999, m->kld_max, m->kld_max_prompt, m->kld_max_position);
    printf("top-1 agreement %.6f (%lld of %lld); dp of the text's token: RMS %.6g, max %.6g; max |dlogit| %.6g, "
           "max |dlogprob| %.6g\n", m->top1_agreement, (long long)m->same_top, (long long)m->positions, m->rms_dp,
           m->max_abs_dp, m->max_abs_dlogit, m->max_abs_dlogprob);
    printf("actual-prefix gap of the local argmax under the oracle: max %.3f milli-nats, %lld positions above "
           "%g\n", r->max_gap_mnats, (long long)r->gaps_above, k->threshold_mnats);
    if (r->n_buckets) {
        printf("%6s %6s %6s %12s %12s %8s %12s %9s\n", "from", "to", "rows", "KLD-mean", "KLD-max", "top1",
               "max-gap", "gaps>500");
        for (int32_t b = 0; b < r->n_buckets; b++) {
            const vt_kld_bucket *q = &r->buckets[b];
            printf("%6d %6d %6lld %12.4g %12.4g %8.4f %12.3f %9lld\n", q->from, q->to, (long long)q->m.positions,
                   q->m.kld_mean, q->m.kld_max, q->m.top1_agreement, q->max_gap_mnats, (long long)q->gaps_above);
        }
    }
}

static void side_json(cJSON *o, const char *key, const char *runner, vt_cache_dtype cache, double ppl, double nll,
                      double nll_unc)
{
    cJSON *s = cJSON_AddObjectToObject(o, key);
    cJSON_AddStringToObject(s, "runner", runner);
    cJSON_AddStringToObject(s, "cache_dtype", vt_cache_dtype_name(cache));
    cJSON_AddNumberToObject(s, "perplexity", ppl);
    cJSON_AddNumberToObject(s, "mean_nll", nll);
    cJSON_AddNumberToObject(s, "mean_nll_unc", nll_unc);
}

/* The same as one JSON document (vt.kld/1: compare/vt.kld.schema.json). 0, or -1 out of memory. */
static int print_json(const kld_run *k)
{
    const vt_kld_corpus_result *r = k->r;
    const vt_nt_metrics *m = &r->m;
    const unsigned long fail0 = vt_tool_json_begin();
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "schema", "vt.kld/1");
    vt_tool_json_text(root, "model", k->model);
    vt_tool_json_text(root, "corpus", k->corpus);
    cJSON_AddNumberToObject(root, "tokens", (double)r->tokens);
    cJSON_AddNumberToObject(root, "chunks", r->chunks);
    cJSON_AddNumberToObject(root, "ctx", r->ctx);
    cJSON_AddNumberToObject(root, "first_scored", r->context);
    cJSON_AddNumberToObject(root, "positions", (double)m->positions);
    side_json(root, "local", k->local_name, k->local_cache, r->ppl_local, r->nll_local, r->nll_local_unc);
    side_json(root, "oracle", k->oracle_name, k->oracle_cache, r->ppl_oracle, r->nll_oracle, r->nll_oracle_unc);
    cJSON_AddNumberToObject(root, "ln_ppl_ratio", r->nll_local - r->nll_oracle);
    cJSON *kl = cJSON_AddObjectToObject(root, "kld");
    cJSON_AddNumberToObject(kl, "mean", m->kld_mean);
    cJSON_AddNumberToObject(kl, "mean_unc", m->kld_mean_unc);
    cJSON_AddNumberToObject(kl, "median", m->kld_median);
    cJSON_AddNumberToObject(kl, "p90", m->kld_p90);
    cJSON_AddNumberToObject(kl, "p99", m->kld_p99);
    cJSON_AddNumberToObject(kl, "p99_9", m->kld_p999);
    cJSON_AddNumberToObject(kl, "max", m->kld_max);
    cJSON_AddNumberToObject(kl, "max_chunk", m->kld_max_prompt);
    cJSON_AddNumberToObject(kl, "max_position", m->kld_max_position);
    cJSON *t1 = cJSON_AddObjectToObject(root, "top1");
    cJSON_AddNumberToObject(t1, "agreement", m->top1_agreement);
    cJSON_AddNumberToObject(t1, "same", (double)m->same_top);
    cJSON *dp = cJSON_AddObjectToObject(root, "dp");
    cJSON_AddNumberToObject(dp, "rms", m->rms_dp);
    cJSON_AddNumberToObject(dp, "max_abs", m->max_abs_dp);
    cJSON_AddNumberToObject(root, "max_abs_dlogit", m->max_abs_dlogit);
    cJSON_AddNumberToObject(root, "max_abs_dlogprob", m->max_abs_dlogprob);
    cJSON *gap = cJSON_AddObjectToObject(root, "gap");
    cJSON_AddNumberToObject(gap, "max_mnats", r->max_gap_mnats);
    cJSON_AddNumberToObject(gap, "threshold_mnats", k->threshold_mnats);
    cJSON_AddNumberToObject(gap, "positions_above", (double)r->gaps_above);
    if (!r->n_buckets) {
        cJSON_AddNullToObject(root, "by_position");
    } else {
        cJSON *bp = cJSON_AddObjectToObject(root, "by_position");
        cJSON_AddNumberToObject(bp, "bucket", k->bucket);
        cJSON *arr = cJSON_AddArrayToObject(bp, "buckets");
        for (int32_t b = 0; b < r->n_buckets; b++) {
            const vt_kld_bucket *q = &r->buckets[b];
            cJSON *o = cJSON_CreateObject();
            cJSON_AddItemToArray(arr, o);
            cJSON_AddNumberToObject(o, "from", q->from);
            cJSON_AddNumberToObject(o, "to", q->to);
            cJSON_AddNumberToObject(o, "positions", (double)q->m.positions);
            cJSON_AddNumberToObject(o, "kld_mean", q->m.kld_mean);
            cJSON_AddNumberToObject(o, "kld_max", q->m.kld_max);
            cJSON_AddNumberToObject(o, "top1_agreement", q->m.top1_agreement);
            cJSON_AddNumberToObject(o, "max_gap_mnats", q->max_gap_mnats);
            cJSON_AddNumberToObject(o, "positions_above", (double)q->gaps_above);
        }
    }
    return vt_tool_json_print(root, fail0);
}

int vt_cmd_kld(int argc, char **argv)
{
    vt_runner_settings s;
    vt_runner_settings_default(&s);
    const char *local_name = "engine", *oracle_name = "llamacpp", *corpus = NULL;
    int64_t ctx = 512, chunks = 0, context = 0, bucket = 0;
    vt_cache_dtype local_cache = VT_CACHE_AUTO;
    int local_cache_set = 0, json = 0;
    vt_opt_seen seen = { .n = 0 };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(usage_text, stdout);
            fputs(vt_runner_options_usage, stdout);
            return 0;
        }
        if (strcmp(a, "--json") == 0) {
            json = 1;
            continue;
        }
        const char *v = i + 1 < argc ? argv[++i] : NULL;
        if (!v)
            return bad(a, "", "a value after the option");
        if (!vt_opt_once(&seen, a))
            return bad(a, v, "the option once (given twice)");
        if (strcmp(a, "--model") == 0)
            s.model_path = v;
        else if (strcmp(a, "--corpus") == 0)
            corpus = v;
        else if (strcmp(a, "--local") == 0)
            local_name = v;
        else if (strcmp(a, "--oracle") == 0)
            oracle_name = v;
        else if (strcmp(a, "--ctx") == 0) {
            if (!vt_parse_i64(v, 4, 1 << 16, &ctx))
                return bad(a, v, "an integer in 4..65536");
        } else if (strcmp(a, "--context") == 0) {
            if (!vt_parse_i64(v, 1, (1 << 16) - 1, &context))
                return bad(a, v, "an integer in 1..65535 (below --ctx)");
        } else if (strcmp(a, "--by-position") == 0) {
            if (!vt_parse_i64(v, 1, 1 << 16, &bucket))
                return bad(a, v, "an integer in 1..65536");
        } else if (strcmp(a, "--local-cache-dtype") == 0) {
            if (!vt_cache_dtype_parse(v, &local_cache))
                return bad(a, v, "auto, f32, bf16 or fp8_e4m3");
            local_cache_set = 1;
        } else if (strcmp(a, "--chunks") == 0) {
            if (!vt_parse_i64(v, 0, 1 << 20, &chunks))
                return bad(a, v, "an integer in 0..1048576 (0: every whole chunk)");
        } else {
            int r = vt_runner_option("vt kld", a, v, &s);
            if (r < 0)
                return 2;
            if (r == 0)
                return bad("option", a, "one of the options in 'vt kld --help'");
        }
    }
    if (!s.model_path)
        return bad("--model", "", "a GGUF file");
    if (!corpus)
        return bad("--corpus", "", "a UTF-8 text file");
    const vt_runner_ops *lo, *oo;
    if (vt_runner_pair("vt kld", local_name, oracle_name, s.backend, &lo, &oo))
        return 2;
    vt_error err;
    vt_error_clear(&err);
    char *text = NULL;
    size_t len = 0;
    if (vt_read_file(corpus, &text, &len, &err) != VT_OK) {
        fprintf(stderr, "vt kld: %s\n", err.msg);
        return 2;
    }
    if (!vt_utf8_valid(text, len)) {
        fprintf(stderr, "vt kld: %s: expected UTF-8 text\n", corpus);
        free(text);
        return 2;
    }
    vt_tokenizer *tok = vt_tokenizer_open_file(s.model_path, &err);
    int32_t *ids = NULL;
    size_t need = 0;
    int rc = tok ? VT_OK : VT_EINPUT;
    if (rc == VT_OK && !(ids = malloc((len + 8) * sizeof *ids)))
        rc = vt_error_set(&err, VT_EINPUT, "vt kld: out of memory");
    if (rc == VT_OK)
        rc = vt_tokenize(tok, text, len, 1, 0, ids, len + 8, &need, &err);
    s.n_ctx = (int32_t)ctx;
    if (s.n_batch > s.n_ctx)
        s.n_batch = s.n_ctx;
    vt_runner *local = NULL, *oracle = NULL;
    vt_runner_settings ls = s;
    ls.plugin_path = vt_runner_plugin_path(local_name);
    s.plugin_path = vt_runner_plugin_path(oracle_name);
    if (local_cache_set)
        ls.cache_dtype = local_cache;
    if (context >= ctx) {
        fprintf(stderr, "vt kld: --context %lld: expected below --ctx %lld\n", (long long)context, (long long)ctx);
        rc = VT_EINPUT;
        err.code = VT_EINPUT;
    }
    if (rc == VT_OK) { /* a chunk is one sequence: within the model's trained context */
        vt_gguf *g = vt_gguf_open(s.model_path, &err);
        int64_t ctx_len = g ? vt_gguf_context_length(g) : 0;
        vt_gguf_free(g);
        if (!g)
            rc = VT_EINPUT;
        else if (ctx_len > 0 && ctx > ctx_len) {
            fprintf(stderr, "vt kld: --ctx %lld: expected at most the model's context length %lld (%s)\n",
                    (long long)ctx, (long long)ctx_len, s.model_path);
            rc = VT_EINPUT;
            err.code = VT_EINPUT;
        }
    }
    if (rc == VT_OK && !(local = vt_runner_open(lo, &ls, &err)))
        rc = err.code ? err.code : VT_EINPUT;
    s.backend = VT_BACKEND_CPU; /* the oracle computes on the CPU */
    s.device = 0;
    if (rc == VT_OK && !(oracle = vt_runner_open(oo, &s, &err)))
        rc = err.code ? err.code : VT_EINPUT;
    vt_kld_corpus_result r;
    memset(&r, 0, sizeof r);
    vt_kld_corpus_opts ko = { .ctx = (int32_t)ctx, .context = (int32_t)context, .max_chunks = (int32_t)chunks,
                              .bucket = (int32_t)bucket };
    if (rc == VT_OK)
        rc = vt_kld_corpus_run(local, oracle, ids, (int64_t)need, &ko, &r, &err);
    if (rc) {
        if (err.msg[0])
            fprintf(stderr, "vt kld: %s\n", err.msg);
    } else {
        vt_runner_settings rl, ro;
        vt_runner_resolved(local, &rl);
        vt_runner_resolved(oracle, &ro);
        const kld_run k = { .model = s.model_path, .corpus = corpus, .local_name = local_name,
                            .oracle_name = oracle_name, .local_cache = rl.cache_dtype, .oracle_cache = ro.cache_dtype,
                            .threshold_mnats = ko.threshold_mnats > 0 ? ko.threshold_mnats : 500.0,
                            .bucket = (int32_t)bucket, .r = &r };
        if (!json) {
            print_table(&k);
        } else if (print_json(&k)) {
            fprintf(stderr, "vt kld: --json: out of memory\n");
            rc = VT_EINPUT;
        }
    }
    vt_kld_corpus_result_free(&r);
    vt_runner_close(local);
    vt_runner_close(oracle);
    vt_tokenizer_free(tok);
    free(ids);
    free(text);
    return rc ? 2 : 0;
}
