/* vt agree: the engine against llama.cpp on one model: greedy generations of
 * the built-in prompts, divergences scored under the near-tie rule. */
#include "cmds.h"

#include "../common/vt_parse.h"
#include "../compare/agree.h"
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
    "usage: vt agree --model X.gguf [--local engine] [--oracle llamacpp] [--prompts N]\n"
    "                [--max-tokens N] [--threshold-mnats T] [--json] [runner options]\n"
    "\n"
    "Greedy generation of N (default 16) built-in prompts by both runners (default 32\n"
    "tokens); each divergence is scored by the oracle teacher-forced on the local tokens\n"
    "(gap = logp(oracle argmax) - logp(local token)). A prompt is strict (same tokens),\n"
    "near-tie (every gap <= T milli-nats, default 500) or failed. Also prints the largest\n"
    "|difference| of teacher-forced log-probs between the runners. A runner compared with itself\n"
    "is refused (exit 2). Exit 1 if any prompt failed.\n"
    "--json: the same table as one JSON document on stdout (vt.agree/1, its layout in\n"
    "compare/vt.agree.schema.json): per prompt its text, class, first divergence with both\n"
    "tokens (id and text), largest gap and |dlogprob|, and the summary; exit codes as without.\n"
    "example: vt agree --model tiny-Q8_0.gguf --prompts 4 --max-tokens 16\n";

static int bad(const char *opt, const char *val, const char *expected)
{
    fprintf(stderr, "vt agree: %s '%s': expected %s\n", opt, val ? val : "", expected);
    return 2;
}

/* The table: one row per prompt, then the summary line. */
static void print_table(const vt_agree_prompt *per, const vt_agree_summary *sum, int32_t n_prompts, int32_t n_gen)
{
    printf("%-3s %-13s %10s %8s %8s %12s %14s %14s\n", "#", "class", "first-div", "local", "oracle", "max-gap-mn",
           "max|dlp|tok", "max|dlp|all");
    for (int p = 0; p < n_prompts; p++) {
        printf("%-3d %-13s %10d %8d %8d %12.3f %14.3g %14.3g\n", p, vt_prompt_class_name(per[p].nt.cls),
               per[p].nt.first_divergence, per[p].nt.local_token, per[p].nt.oracle_token, per[p].nt.max_gap_mnats,
               per[p].max_abs_dlogprob_token, per[p].max_abs_dlogprob_all);
    }
    printf("summary: %d prompts x %d tokens: strict %d, near-tie %d, failed %d; max gap %.3f milli-nats; "
           "max |dlogprob| %.3g (local tokens), %.3g (whole vocabulary)\n",
           sum->n_prompts, (int)n_gen, sum->strict, sum->near_tie, sum->failed, sum->max_gap_mnats,
           sum->max_abs_dlogprob_token, sum->max_abs_dlogprob_all);
}

/* {id, text, text_hex?}: the token's bytes (common/vt_json.h: U+FFFD for
 * bytes that are not UTF-8, the exact bytes in hex beside). */
static cJSON *token_json(vt_tokenizer *tok, int32_t id)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "id", id);
    size_t n = 0;
    const char *p = vt_tokenizer_token_piece(tok, id, &n);
    vt_tool_json_bytes(o, "text", p ? p : "", p ? n : 0);
    return o;
}

/* The same as one JSON document (vt.agree/1: compare/vt.agree.schema.json). 0, or -1 out of memory. */
static int print_json(const char *model, const char *local, const char *oracle, double threshold,
                      const char *const *texts, vt_tokenizer *tok, const vt_agree_prompt *per,
                      const vt_agree_summary *sum, int32_t n_prompts, int32_t n_gen)
{
    const unsigned long fail0 = vt_tool_json_begin();
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "schema", "vt.agree/1");
    vt_tool_json_text(root, "model", model);
    cJSON_AddStringToObject(root, "local", local);
    cJSON_AddStringToObject(root, "oracle", oracle);
    cJSON_AddNumberToObject(root, "max_tokens", n_gen);
    cJSON_AddNumberToObject(root, "threshold_mnats", threshold);
    cJSON *arr = cJSON_AddArrayToObject(root, "prompts");
    for (int32_t p = 0; p < n_prompts; p++) {
        const vt_nt_prompt_result *nt = &per[p].nt;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToArray(arr, o);
        cJSON_AddNumberToObject(o, "index", p);
        vt_tool_json_text(o, "text", texts[p]);
        cJSON_AddStringToObject(o, "class", vt_prompt_class_name(nt->cls));
        if (nt->first_divergence < 0) {
            cJSON_AddNullToObject(o, "first_divergence");
        } else {
            cJSON *d = cJSON_AddObjectToObject(o, "first_divergence");
            cJSON_AddNumberToObject(d, "position", nt->first_divergence);
            cJSON_AddItemToObject(d, "local_token", token_json(tok, nt->local_token));
            cJSON_AddItemToObject(d, "oracle_token", token_json(tok, nt->oracle_token));
            cJSON_AddNumberToObject(d, "gap_mnats", nt->first_gap_mnats);
        }
        cJSON_AddNumberToObject(o, "max_gap_mnats", nt->max_gap_mnats);
        cJSON_AddNumberToObject(o, "max_abs_dlogprob_token", per[p].max_abs_dlogprob_token);
        cJSON_AddNumberToObject(o, "max_abs_dlogprob_all", per[p].max_abs_dlogprob_all);
    }
    cJSON *s = cJSON_AddObjectToObject(root, "summary");
    cJSON_AddNumberToObject(s, "prompts", sum->n_prompts);
    cJSON_AddNumberToObject(s, "strict", sum->strict);
    cJSON_AddNumberToObject(s, "near_tie", sum->near_tie);
    cJSON_AddNumberToObject(s, "failed", sum->failed);
    cJSON_AddNumberToObject(s, "max_gap_mnats", sum->max_gap_mnats);
    cJSON_AddNumberToObject(s, "max_abs_dlogprob_token", sum->max_abs_dlogprob_token);
    cJSON_AddNumberToObject(s, "max_abs_dlogprob_all", sum->max_abs_dlogprob_all);
    cJSON_AddBoolToObject(root, "passed", sum->failed == 0);
    return vt_tool_json_print(root, fail0);
}

int vt_cmd_agree(int argc, char **argv)
{
    vt_runner_settings s;
    vt_runner_settings_default(&s);
    const char *local_name = "engine", *oracle_name = "llamacpp";
    int64_t n_prompts = 16, n_gen = 32;
    double threshold = 500.0;
    int json = 0;
    vt_opt_seen seen = { .n = 0 };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0) {
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
        else if (strcmp(a, "--local") == 0)
            local_name = v;
        else if (strcmp(a, "--oracle") == 0)
            oracle_name = v;
        else if (strcmp(a, "--prompts") == 0) {
            if (!vt_parse_i64(v, 1, 16, &n_prompts))
                return bad(a, v, "an integer in 1..16");
        } else if (strcmp(a, "--max-tokens") == 0) {
            if (!vt_parse_i64(v, 1, 4096, &n_gen))
                return bad(a, v, "an integer in 1..4096");
        } else if (strcmp(a, "--threshold-mnats") == 0) {
            if (!vt_parse_f64(v, 0, 1e6, &threshold))
                return bad(a, v, "a number in 0..1000000 (milli-nats)");
        } else {
            int r = vt_runner_option("vt agree", a, v, &s);
            if (r < 0)
                return 2;
            if (r == 0)
                return bad("option", a, "one of the options in 'vt agree --help'");
        }
    }
    if (!s.model_path)
        return bad("--model", "", "a GGUF file");
    const vt_runner_ops *lo, *oo;
    if (vt_runner_pair("vt agree", local_name, oracle_name, s.backend, &lo, &oo))
        return 2;

    vt_error err;
    vt_error_clear(&err);
    /* vt's tokenizer reads the same GGUF: text in, and token texts out. */
    vt_tokenizer *tok = vt_tokenizer_open_file(s.model_path, &err);
    if (!tok) {
        fprintf(stderr, "%s\n", err.msg);
        return 2;
    }
    int32_t *ids[16] = { 0 }, lens[16] = { 0 }, longest = 0;
    int rc = VT_OK;
    for (int p = 0; p < n_prompts && rc == VT_OK; p++) {
        const char *text = vt_agree_default_prompts[p];
        size_t len = strlen(text), need = 0;
        ids[p] = malloc((len + 8) * sizeof(int32_t));
        if (!ids[p])
            rc = vt_error_set(&err, VT_EINPUT, "vt agree: out of memory");
        else
            rc = vt_tokenize(tok, text, len, 1, 1, ids[p], len + 8, &need, &err);
        lens[p] = (int32_t)need;
        if (lens[p] > longest)
            longest = lens[p];
    }
    vt_runner *local = NULL, *oracle = NULL;
    s.n_ctx = longest + (int32_t)n_gen;
    if (s.n_batch > s.n_ctx)
        s.n_batch = s.n_ctx;
    s.plugin_path = vt_runner_plugin_path(local_name);
    if (rc == VT_OK && !(local = vt_runner_open(lo, &s, &err)))
        rc = err.code;
    vt_runner_settings os = s; /* the oracle computes on the CPU */
    os.backend = VT_BACKEND_CPU;
    os.device = 0;
    os.plugin_path = vt_runner_plugin_path(oracle_name);
    if (rc == VT_OK && !(oracle = vt_runner_open(oo, &os, &err)))
        rc = err.code;
    vt_agree_prompt per[16];
    vt_agree_summary sum;
    if (rc == VT_OK)
        rc = vt_agree_run(local, oracle, (const int32_t *const *)ids, lens, (int32_t)n_prompts,
                          (int32_t)n_gen, threshold, per, &sum, &err);
    if (rc) {
        fprintf(stderr, "%s\n", err.msg);
    } else if (json) {
        rc = sum.failed ? 1 : 0;
        if (print_json(s.model_path, local_name, oracle_name, threshold, vt_agree_default_prompts, tok, per, &sum,
                       (int32_t)n_prompts, (int32_t)n_gen)) {
            fprintf(stderr, "vt agree: --json: out of memory\n");
            rc = 2;
        }
    } else {
        print_table(per, &sum, (int32_t)n_prompts, (int32_t)n_gen);
        rc = sum.failed ? 1 : 0;
    }
    vt_runner_close(local);
    vt_runner_close(oracle);
    for (int p = 0; p < 16; p++)
        free(ids[p]);
    vt_tokenizer_free(tok);
    return rc;
}
