/* vt run: one runner (engine, llamacpp, transformers, openai or plugin:PATH.so) on one prompt: generate, or score a
 * given continuation; per position the token, its text and the top log-probs. */
#include "cmds.h"

#include "../common/vt_json.h"
#include "../common/vt_parse.h"
#include "../engine/gguf_file.h"
#include "../engine/runner.h"
#include "../engine/tokenizer.h"
#include "runner_opts.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage_text[] =
    "usage: vt run --runner engine|llamacpp|transformers|openai|plugin:P.so --model X.gguf (--prompt TEXT | --prompt-tokens IDS)\n"
    "              [--max-tokens N] [--score IDS] [--show-top N] [--repeats N] [--json]\n"
    "              [runner options]\n"
    "\n"
    "Generates --max-tokens tokens (default 16; greedy unless --temperature > 0), or with\n"
    "--score teacher-forces the given token ids after the prompt. IDS: comma-separated ids.\n"
    "Prints each position's token, its text and the --show-top (default 5) log-probs.\n"
    "--repeats N runs it N times and checks tokens and logits are bit-identical (exit 1 if not).\n"
    "--json: the same as one JSON object, schema vt.run/1.\n"
    "example: vt run --runner engine --model tiny-Q8_0.gguf --prompt \"The capital of France is\" --max-tokens 8\n";

static int bad(const char *opt, const char *val, const char *expected)
{
    fprintf(stderr, "vt run: %s '%s': expected %s\n", opt, val ? val : "", expected);
    return 2;
}

static int missing(const char *opt, const char *expected)
{
    fprintf(stderr, "vt run: %s: missing: expected %s\n", opt, expected);
    return 2;
}

/* "1,2,3" -> ids (malloc'd); vt_parse_list_i64's strict list (no empty entry). */
static int parse_ids(const char *s, int32_t **out, int32_t *n)
{
    int64_t *v;
    size_t k;
    *n = 0;
    *out = NULL;
    if (!vt_parse_list_i64(s, 0, INT32_MAX, &v, &k))
        return 0;
    int32_t *ids = k <= (size_t)INT32_MAX ? malloc(k * sizeof *ids) : NULL;
    for (size_t i = 0; ids && i < k; i++)
        ids[i] = (int32_t)v[i];
    free(v);
    if (!ids)
        return 0;
    *out = ids;
    *n = (int32_t)k;
    return 1;
}

static char *token_text(vt_tokenizer *tok, int32_t id)
{
    size_t n = 0;
    const char *p = tok ? vt_tokenizer_token_piece(tok, id, &n) : NULL;
    char *s = malloc(n + 1);
    if (s) {
        if (p)
            memcpy(s, p, n);
        s[n] = '\0';
    }
    return s;
}

typedef struct top_entry { int32_t id; double logprob; } top_entry;

static void top_n(const double *lp, int32_t nv, int n, top_entry *out)
{
    for (int k = 0; k < n; k++)
        out[k] = (top_entry){ -1, -INFINITY };
    for (int32_t i = 0; i < nv; i++) {
        if (lp[i] <= out[n - 1].logprob)
            continue;
        int k = n - 1;
        while (k > 0 && lp[i] > out[k - 1].logprob) {
            out[k] = out[k - 1];
            k--;
        }
        out[k] = (top_entry){ i, lp[i] };
    }
}

int vt_cmd_run(int argc, char **argv)
{
    vt_runner_settings s;
    vt_runner_settings_default(&s);
    s.n_ctx = 0; /* derived below unless given */
    const char *runner_name = NULL, *prompt_text = NULL, *prompt_ids = NULL, *score_ids = NULL;
    int64_t max_tokens = 16, show_top = 5, repeats = 1;
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
        if (strcmp(a, "--runner") == 0)
            runner_name = v;
        else if (strcmp(a, "--model") == 0)
            s.model_path = v;
        else if (strcmp(a, "--prompt") == 0)
            prompt_text = v;
        else if (strcmp(a, "--prompt-tokens") == 0)
            prompt_ids = v;
        else if (strcmp(a, "--score") == 0)
            score_ids = v;
        else if (strcmp(a, "--max-tokens") == 0) {
            if (!vt_parse_i64(v, 0, 1 << 20, &max_tokens))
                return bad(a, v, "an integer in 0..1048576");
        } else if (strcmp(a, "--repeats") == 0) {
            if (!vt_parse_i64(v, 1, 1000, &repeats))
                return bad(a, v, "an integer in 1..1000");
        } else if (strcmp(a, "--show-top") == 0) {
            if (!vt_parse_i64(v, 1, 100, &show_top))
                return bad(a, v, "an integer in 1..100");
        } else {
            int r = vt_runner_option("vt run", a, v, &s);
            if (r < 0)
                return 2;
            if (r == 0)
                return bad("option", a, "one of the options in 'vt run --help'");
        }
    }
    if (!runner_name)
        return missing("--runner", "engine, llamacpp, transformers, openai or plugin:PATH.so");
    const vt_runner_ops *ops = vt_runner_find(runner_name);
    if (!ops)
        return bad("--runner", runner_name, "engine, llamacpp, transformers, openai or plugin:PATH.so");
    s.plugin_path = vt_runner_plugin_path(runner_name);
    if (!s.model_path)
        return missing("--model", "a GGUF file");
    if (!prompt_text && !prompt_ids)
        return missing("--prompt/--prompt-tokens", "exactly one of the two");
    if (prompt_text && prompt_ids)
        return bad("--prompt/--prompt-tokens", "both given", "exactly one of the two");

    vt_error err;
    vt_error_clear(&err);
    /* vt's tokenizer reads the same GGUF: text in, and token texts out. */
    vt_tokenizer *tok = vt_tokenizer_open_file(s.model_path, &err);
    if (!tok) {
        fprintf(stderr, "%s\n", err.msg);
        return 2;
    }
    int32_t *prompt = NULL, *cont = NULL, n_prompt = 0, n_cont = 0;
    int rc = 2;
    if (prompt_ids) {
        if (!parse_ids(prompt_ids, &prompt, &n_prompt)) {
            rc = bad("--prompt-tokens", prompt_ids, "comma-separated token ids");
            goto out;
        }
    } else {
        size_t len = strlen(prompt_text), need = 0;
        prompt = malloc((len + 8) * sizeof *prompt);
        if (!prompt || vt_tokenize(tok, prompt_text, len, 1, 1, prompt, len + 8, &need, &err)) {
            fprintf(stderr, "vt run: --prompt: %s\n", prompt ? err.msg : "out of memory");
            goto out;
        }
        n_prompt = (int32_t)need;
        if (n_prompt == 0) {
            rc = bad("--prompt", prompt_text, "text that makes at least one token");
            goto out;
        }
    }
    if (score_ids && !parse_ids(score_ids, &cont, &n_cont)) {
        rc = bad("--score", score_ids, "comma-separated token ids");
        goto out;
    }
    int32_t n_out = score_ids ? n_cont : (int32_t)max_tokens;
    vt_gguf *g = vt_gguf_open(s.model_path, &err);
    int64_t ctx_len = g ? vt_gguf_context_length(g) : 0;
    vt_gguf_free(g);
    if (ctx_len > 0 && (int64_t)n_prompt + n_out > ctx_len) {
        fprintf(stderr, "vt run: %s: %d prompt tokens + %d %s = %lld: expected at most the model's context length "
                "%lld\n", s.model_path, (int)n_prompt, (int)n_out, score_ids ? "scored tokens" : "--max-tokens",
                (long long)n_prompt + n_out, (long long)ctx_len);
        goto out;
    }
    if (s.n_ctx == 0)
        s.n_ctx = n_prompt + n_out;
    if (s.n_batch > s.n_ctx)
        s.n_batch = s.n_ctx;

    vt_runner *r = vt_runner_open(ops, &s, &err);
    if (!r) {
        fprintf(stderr, "%s\n", err.msg);
        goto out;
    }
    int32_t nv = vt_runner_n_vocab(r);
    float *logits = malloc((size_t)(n_out ? n_out : 1) * (size_t)nv * sizeof *logits);
    double *lp = malloc((size_t)nv * sizeof *lp);
    int32_t *gen = score_ids ? cont : malloc((size_t)(n_out ? n_out : 1) * sizeof *gen);
    if (!logits || !lp || !gen) {
        fprintf(stderr, "vt run: out of memory\n");
        rc = 2;
    } else {
        rc = score_ids ? vt_runner_score(r, prompt, n_prompt, cont, n_cont, logits, &err)
                       : vt_runner_generate(r, prompt, n_prompt, n_out, gen, logits, &err);
        if (rc)
            fprintf(stderr, "%s\n", err.msg);
    }
    /* Determinism: every repeat must reproduce the first bit for bit. */
    int repeats_differ = 0;
    if (rc == VT_OK && repeats > 1) {
        size_t n_logits = (size_t)n_out * (size_t)nv;
        float *again = malloc((n_logits ? n_logits : 1) * sizeof *again);
        int32_t *again_tok = malloc((size_t)(n_out ? n_out : 1) * sizeof *again_tok);
        if (!again || !again_tok) {
            fprintf(stderr, "vt run: out of memory\n");
            rc = 2;
        }
        for (int64_t k = 1; rc == VT_OK && k < repeats; k++) {
            if (score_ids) {
                memcpy(again_tok, cont, (size_t)n_out * sizeof *again_tok);
                rc = vt_runner_score(r, prompt, n_prompt, cont, n_cont, again, &err);
            } else {
                rc = vt_runner_generate(r, prompt, n_prompt, n_out, again_tok, again, &err);
            }
            if (rc) {
                fprintf(stderr, "%s\n", err.msg);
                break;
            }
            int tok_same = memcmp(again_tok, gen, (size_t)n_out * sizeof *gen) == 0;
            int log_same = memcmp(again, logits, n_logits * sizeof *again) == 0;
            if (!tok_same || !log_same) {
                fprintf(stderr, "vt run: repeat %lld differs from repeat 0 in %s\n", (long long)k,
                        !tok_same ? "tokens" : "logits");
                repeats_differ = 1;
                break;
            }
        }
        free(again);
        free(again_tok);
    }
    if (rc == VT_OK) {
        vt_runner_identity id;
        vt_runner_identity_get(r, &id);
        top_entry *top = malloc((size_t)show_top * sizeof *top);
        cJSON *root = json ? cJSON_CreateObject() : NULL;
        cJSON *positions = NULL;
        if (json) {
            cJSON_AddStringToObject(root, "schema", "vt.run/1"); /* tools/vt.run.schema.json */
            cJSON_AddStringToObject(root, "runner", id.runner);
            cJSON_AddStringToObject(root, "version", id.version);
            cJSON_AddStringToObject(root, "backend", id.backend);
            cJSON_AddStringToObject(root, "mode", score_ids ? "score" : "generate");
            cJSON *p = cJSON_AddArrayToObject(root, "prompt_tokens");
            for (int32_t i = 0; i < n_prompt; i++)
                cJSON_AddItemToArray(p, cJSON_CreateNumber(prompt[i]));
            positions = cJSON_AddArrayToObject(root, "positions");
        } else {
            printf("runner: %s %s (%s) %s\n", id.runner, id.version, id.backend, id.detail ? id.detail : "");
            printf("prompt: %d tokens\n", n_prompt);
            printf("%4s %8s %-16s %10s  top log-probs\n", "pos", "token", "text", "logprob");
        }
        char *text_all = NULL;
        size_t text_len = 0;
        for (int32_t i = 0; i < n_out && top; i++) {
            vt_log_softmax(logits + (size_t)i * nv, nv, lp);
            top_n(lp, nv, (int)show_top, top);
            char *t = token_text(tok, gen[i]);
            if (json) {
                cJSON *e = cJSON_CreateObject();
                cJSON_AddNumberToObject(e, "pos", i);
                cJSON_AddNumberToObject(e, "token", gen[i]);
                size_t tn = 0;
                const char *tp = tok ? vt_tokenizer_token_piece(tok, gen[i], &tn) : NULL;
                vt_json_add_bytes(e, "text", tp ? tp : "", tp ? tn : 0);
                cJSON_AddNumberToObject(e, "logprob", lp[gen[i]]);
                cJSON *arr = cJSON_AddArrayToObject(e, "top");
                for (int k = 0; k < show_top; k++) {
                    cJSON *o = cJSON_CreateObject();
                    cJSON_AddNumberToObject(o, "id", top[k].id);
                    cJSON_AddNumberToObject(o, "logprob", top[k].logprob);
                    cJSON_AddItemToArray(arr, o);
                }
                cJSON_AddItemToArray(positions, e);
            } else {
                printf("%4d %8d %-16.16s %10.5f ", i, gen[i], t ? t : "", lp[gen[i]]);
                for (int k = 0; k < show_top; k++)
                    printf(" %d:%.4f", top[k].id, top[k].logprob);
                printf("\n");
            }
            free(t);
        }
        size_t need = 0;
        vt_detokenize(tok, gen, (size_t)n_out, NULL, 0, &need, &err);
        text_all = malloc(need + 1);
        if (text_all && vt_detokenize(tok, gen, (size_t)n_out, text_all, need, &text_len, &err) == VT_OK)
            text_all[text_len] = '\0';
        else if (text_all)
            text_all[0] = '\0';
        if (json) {
            vt_json_add_bytes(root, "text", text_all ? text_all : "", text_all ? text_len : 0);
            char *out = cJSON_PrintUnformatted(root);
            if (out)
                puts(out);
            free(out);
            cJSON_Delete(root);
        } else {
            printf("text: %s\n", text_all ? text_all : "");
            /* A digest of every logit's bits, to compare runs across modes and threads. */
            uint64_t h = 0xcbf29ce484222325ull;
            const unsigned char *b = (const unsigned char *)logits;
            for (size_t k = 0; k < (size_t)n_out * (size_t)nv * sizeof *logits; k++)
                h = (h ^ b[k]) * 0x100000001b3ull;
            printf("logits fnv1a64: %016llx\n", (unsigned long long)h);
            if (repeats > 1)
                printf("repeats: %lld, tokens and logits bit-identical: %s\n", (long long)repeats,
                       repeats_differ ? "NO" : "yes");
        }
        free(text_all);
        free(top);
    }
    if (rc == VT_OK && repeats_differ)
        rc = VT_ECHECK;
    free(logits);
    free(lp);
    if (!score_ids)
        free(gen);
    vt_runner_close(r);
out:
    free(prompt);
    free(cont);
    vt_tokenizer_free(tok);
    return rc;
}
