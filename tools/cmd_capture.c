/* vt capture (vt-capture): seeded, repeated runs with verified identities,
 * written as a sealed vt.capture/2 (capture/capture.h); strict publication
 * (capture/strict.h). */
#include "cmds.h"
#include "runner_opts.h"

#include "../capture/capture.h"
#include "../common/vt_parse.h"
#include "../common/vt_progress.h"
#include "../common/vt_reasons.h"
#include "json_out.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char usage_text[] =
    "usage: vt-capture --runner engine|llamacpp|transformers|openai|plugin:P.so --model X.gguf --prompts P.jsonl\n"
    "                  --out C.json [--repetitions N] [--max-tokens N] [--top-k K] [--topk-out F]\n"
    "                  [--logits-out F]\n"
    "                  [--model-manifest M.json] [--revision REV] [--launcher-manifest L.json]\n"
    "                  [--package PKG.whl|PKG.tgz] [--package-root DIR] [--lock LOCK.json]\n"
    "                  [--allow-setting-difference FIELD]... [--no-timestamp] [--strict] [--overwrite] [--quiet]\n"
    "                  [--json]\n"
    "                  [runner options]\n"
    "       vt-capture --runner R --model X.gguf --score-prefix-of LOCAL.json --out S.json\n"
    "                  [--score-shape replay|batched] [...]\n"
    "\n"
    "Runs every prompt of P.jsonl (JSON Lines: {\"id\",\"text\"} or {\"id\",\"tokens\"}) N times\n"
    "(default 1), generating --max-tokens tokens (default 16, at least 1), and writes a sealed\n"
    "vt.capture/2: tokens, the SHA-256 of each run's logits and the --top-k (default 20; 0: none)\n"
    "highest log-probs per position in a binary side file (vt.topk/1, --topk-out; default C.topk\n"
    "beside C.json) published with it, determinism across repeats, and the identities of model,\n"
    "runtime, package and launcher.\n"
    "--logits-out also writes every logit (zlib frames) to a side file published with it.\n"
    "--score-prefix-of teacher-forces the runner on LOCAL's repeat-0 token streams and writes\n"
    "vt.prefix-scores/3: per position the log-prob of LOCAL's token and of the runner's argmax,\n"
    "computed in --score-shape: replay (the default: the prompt, then one token per evaluation,\n"
    "as generation ran, so a runner replaying its own greedy stream gives its generation's logits)\n"
    "or batched (the tokens in prefill batches).\n"
    "--runner openai --endpoint URL captures an OpenAI-compatible server (/v1/completions, token\n"
    "ids, one request per position, its prompt cache off): rows are its top --server-top-k\n"
    "log-probs (no --logits-out); scoring writes vt.prefix-scores/4, which records each position\n"
    "whose token was not among them as a bound. --model names the file the server serves: the\n"
    "operator's word, so such a capture is never strict (rule observed).\n"
    "--strict publishes only what the strict gate passes (README, \"The strict gate\"): >= 10\n"
    "identical repeats, every run ok with at least one position, every model file matching the\n"
    "manifest, the runtime identity resolved, resolved settings equal to the requested ones\n"
    "(except fields given to --allow-setting-difference), the package verified and bound to what\n"
    "ran (required for llamacpp, whose code comes from its npm package), and a launcher manifest\n"
    "with launcher, host or image, and command; otherwise it lists every reason, each with its\n"
    "rule, and writes nothing. created_utc is the current time (SOURCE_DATE_EPOCH if set) unless\n"
    "--no-timestamp. Exit: 0 published, 1 strict gate refused, 2 bad usage or input.\n"
    "On a terminal, stderr shows a progress line (runs done, rate, time left); --quiet: none.\n"
    "--json: the closing summary as one JSON document on stdout (vt.capture-summary/1,\n"
    "capture/vt.capture-summary.schema.json): counts, determinism, side files, seals, and\n"
    "every strict reason with its rule; also when the strict gate refused (published false,\n"
    "exit 1; the reasons on stderr as without --json), never on exit 2.\n"
    "example: vt-capture --runner engine --model tiny-Q8_0.gguf --prompts prompts.jsonl \\\n"
    "             --model-manifest m.json --launcher-manifest l.json --repetitions 10 --strict --out engine.json\n"
    "\n";

static int bad(const char *opt, const char *val, const char *expected)
{
    fprintf(stderr, "vt-capture: %s '%s': expected %s\n", opt, val ? val : "", expected);
    return 2;
}

/* The closing summary: what both printers read. */
typedef struct summary {
    const vt_capture_opts *o;
    vt_capture_summary s;
    const vt_reasons *reasons; /* the strict gate's (refused with --strict, else only counted) */
    int n_refusals;            /* vt_capture_n_refusals: reasons->n, or 1 if none could be kept */
    int published;
    char format[64];           /* the document's schema */
} summary;

/* The format of the document built: its "schema", the first member of its
 * canonical JSON (vt.prefix-scores/4 where the scorer was told only the top
 * k log-probs), else the one of its kind. */
static void summary_format(const vt_capture *c, const vt_capture_opts *o, char *out, size_t cap)
{
    static const char head[] = "{\"schema\":\"";
    size_t len = 0;
    const char *t = vt_capture_text(c, &len);
    const char *end = t && len > sizeof head && strncmp(t, head, sizeof head - 1) == 0
                          ? memchr(t + sizeof head - 1, '"', len - (sizeof head - 1)) : NULL;
    if (end && (size_t)(end - t) - (sizeof head - 1) < cap)
        snprintf(out, cap, "%.*s", (int)(end - t - (sizeof head - 1)), t + sizeof head - 1);
    else
        snprintf(out, cap, "%s", o->score_prefix_of ? VT_PREFIX_SCORES_SCHEMA : VT_CAPTURE_SCHEMA);
}

static void print_summary(const summary *m)
{
    const vt_capture_opts *o = m->o;
    const vt_capture_summary *s = &m->s;
    const int n_ref = m->n_refusals;
    printf("vt-capture: wrote %s (%s): %d prompts x %d repeats, %d runs (%d failed), %lld positions\n", o->out,
           m->format, s->n_prompts, s->repetitions, s->n_runs, s->n_failed, (long long)s->n_positions);
    printf("  determinism: tokens %s, logits %s\n", s->identical_tokens ? "identical" : "DIFFER",
           s->identical_logits ? "identical" : "DIFFER");
    if (o->logits_out)
        printf("  logits: %s sha256 %s\n", o->logits_out, s->logits_sha256);
    if (s->topk_path)
        printf("  top-k: %s sha256 %s\n", s->topk_path, s->topk_sha256);
    printf("  workload_seal %s\n  seal %s\n", s->workload_seal, s->seal);
    if (o->strict)
        printf("  strict: every gate passed\n");
    else if (n_ref)
        printf("  not strict-publishable: %d reason%s (run with --strict to list them)\n", n_ref,
               n_ref == 1 ? "" : "s");
}

static void side_json(cJSON *root, const char *key, const char *path, const char *sha256)
{
    if (!path || !sha256) {
        cJSON_AddNullToObject(root, key);
        return;
    }
    cJSON *o = cJSON_AddObjectToObject(root, key);
    vt_tool_json_text(o, "path", path);
    cJSON_AddStringToObject(o, "sha256", sha256);
}

/* The same as one JSON document (vt.capture-summary/1). 0, or -1 out of memory. */
static int summary_json(const summary *m)
{
    const vt_capture_opts *o = m->o;
    const vt_capture_summary *s = &m->s;
    if (m->reasons->oom) /* a reason was lost: the list would be incomplete */
        return -1;
    const unsigned long fail0 = vt_tool_json_begin();
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "schema", "vt.capture-summary/1");
    vt_tool_json_text(root, "out", o->out);
    cJSON_AddStringToObject(root, "format", m->format);
    cJSON_AddBoolToObject(root, "published", m->published);
    cJSON_AddNumberToObject(root, "prompts", s->n_prompts);
    cJSON_AddNumberToObject(root, "repetitions", s->repetitions);
    cJSON_AddNumberToObject(root, "runs", s->n_runs);
    cJSON_AddNumberToObject(root, "failed_runs", s->n_failed);
    cJSON_AddNumberToObject(root, "positions", (double)s->n_positions);
    cJSON *d = cJSON_AddObjectToObject(root, "determinism");
    cJSON_AddBoolToObject(d, "identical_tokens", s->identical_tokens);
    cJSON_AddBoolToObject(d, "identical_logits", s->identical_logits);
    side_json(root, "logits", o->logits_out, s->logits_sha256);
    side_json(root, "topk", s->topk_path, s->topk_sha256);
    cJSON_AddStringToObject(root, "workload_seal", s->workload_seal);
    cJSON_AddStringToObject(root, "seal", s->seal);
    cJSON *st = cJSON_AddObjectToObject(root, "strict");
    cJSON_AddBoolToObject(st, "requested", o->strict);
    cJSON_AddBoolToObject(st, "passed", m->n_refusals == 0);
    cJSON *arr = cJSON_AddArrayToObject(st, "reasons");
    for (int i = 0; i < m->reasons->n; i++) {
        const vt_reason *r = &m->reasons->v[i];
        cJSON *x = cJSON_CreateObject();
        cJSON_AddItemToArray(arr, x);
        /* messages: made text when printed */
        cJSON_AddStringToObject(x, "rule", r->rule);
        cJSON_AddStringToObject(x, "file", r->file ? r->file : "");
        cJSON_AddStringToObject(x, "text", r->text);
    }
    return vt_tool_json_print(root, fail0);
}

int vt_cmd_capture(int argc, char **argv)
{
    vt_capture_opts o;
    vt_capture_opts_default(&o);
    const char *allow[32];
    int overwrite = 0, timestamp = 1, shape_given = 0, quiet = 0, json = 0;
    vt_progress progress;
    static const char *const repeatable[] = { "--allow-setting-difference", NULL };
    vt_opt_seen seen = { .repeatable = repeatable };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(usage_text, stdout);
            fputs(vt_runner_options_usage, stdout);
            return 0;
        }
        if (strcmp(a, "--strict") == 0) {
            o.strict = 1;
            continue;
        }
        if (strcmp(a, "--overwrite") == 0) {
            overwrite = 1;
            continue;
        }
        if (strcmp(a, "--no-timestamp") == 0) {
            timestamp = 0;
            continue;
        }
        if (strcmp(a, "--quiet") == 0) {
            quiet = 1;
            continue;
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
        int r = vt_runner_option("vt-capture", a, v, &o.settings);
        if (r < 0)
            return 2;
        if (r > 0)
            continue;
        int64_t n;
        if (strcmp(a, "--runner") == 0)
            o.runner = v;
        else if (strcmp(a, "--model") == 0)
            o.model = v;
        else if (strcmp(a, "--prompts") == 0)
            o.prompts = v;
        else if (strcmp(a, "--score-prefix-of") == 0)
            o.score_prefix_of = v;
        else if (strcmp(a, "--out") == 0 || strcmp(a, "-o") == 0)
            o.out = v;
        else if (strcmp(a, "--score-shape") == 0) {
            if (!vt_score_shape_parse(v, &o.score_shape))
                return bad(a, v, "replay or batched");
            shape_given = 1;
        }
        else if (strcmp(a, "--logits-out") == 0)
            o.logits_out = v;
        else if (strcmp(a, "--topk-out") == 0)
            o.topk_out = v;
        else if (strcmp(a, "--model-manifest") == 0)
            o.model_manifest = v;
        else if (strcmp(a, "--launcher-manifest") == 0)
            o.launcher_manifest = v;
        else if (strcmp(a, "--package") == 0)
            o.package = v;
        else if (strcmp(a, "--package-root") == 0)
            o.package_root = v;
        else if (strcmp(a, "--lock") == 0)
            o.lock = v;
        else if (strcmp(a, "--revision") == 0)
            o.revision = v;
        else if (strcmp(a, "--allow-setting-difference") == 0) {
            if (o.n_allow_differences == (int)(sizeof allow / sizeof allow[0]))
                return bad(a, v, "at most 32 of them");
            allow[o.n_allow_differences++] = v;
            o.allow_differences = allow;
        } else if (strcmp(a, "--repetitions") == 0) {
            if (!vt_parse_i64(v, 1, 100000, &n))
                return bad(a, v, "an integer in 1..100000");
            o.repetitions = (int32_t)n;
        } else if (strcmp(a, "--max-tokens") == 0) {
            if (!vt_parse_i64(v, 1, 1 << 20, &n))
                return bad(a, v, "an integer in 1..1048576 (a prompt with no position compares nothing)");
            o.max_tokens = (int32_t)n;
        } else if (strcmp(a, "--top-k") == 0) {
            if (!vt_parse_i64(v, 0, 1 << 20, &n))
                return bad(a, v, "an integer in 0..1048576 (log-probs recorded per position; 0: none)");
            o.top_k = (int32_t)n;
        } else
            return bad("option", a, "one of the options in 'vt-capture --help'");
    }
    if (shape_given && !o.score_prefix_of)
        return bad("--score-shape", vt_score_shape_name(o.score_shape), "only with --score-prefix-of");
    if (timestamp) {
        /* SOURCE_DATE_EPOCH pins the time, as for reproducible builds. */
        const char *sde = getenv("SOURCE_DATE_EPOCH");
        int64_t t;
        if (sde && !vt_parse_i64(sde, 0, INT64_MAX / 2, &t))
            return bad("SOURCE_DATE_EPOCH", sde, "seconds since the epoch");
        o.created_utc = sde ? t : (int64_t)time(NULL);
    }

    vt_error err;
    vt_error_clear(&err);
    vt_progress_init(&progress, "vt-capture", quiet);
    o.progress = &progress;
    vt_capture *c = vt_capture_open(&o, &err);
    if (!c) {
        fprintf(stderr, "vt-capture: %s\n", err.msg);
        return err.code ? err.code : 2;
    }
    /* Outputs that can never be published are refused before the runs. */
    int rc = vt_capture_check_outputs(c, overwrite, &err);
    if (rc == VT_OK)
        rc = vt_capture_run(c, &err);
    vt_progress_end(&progress); /* a line left by an early return ends before any message */
    if (rc) {
        fprintf(stderr, "vt-capture: %s\n", err.msg);
        vt_capture_free(c);
        return rc;
    }
    summary m = { .o = &o, .reasons = vt_capture_refusals(c), .n_refusals = vt_capture_n_refusals(c) };
    vt_capture_summary_get(c, &m.s);
    summary_format(c, &o, m.format, sizeof m.format);
    if (o.strict && m.n_refusals) {
        vt_reasons_print(m.reasons, stderr, "vt-capture", "strict: not published");
        rc = 1;
        if (json && summary_json(&m)) { /* the gate ran and refused: still its summary */
            fprintf(stderr, "vt-capture: --json: out of memory\n");
            rc = 2;
        }
        vt_capture_free(c);
        return rc;
    }
    rc = vt_capture_publish(c, overwrite, NULL, NULL, &err);
    if (rc) {
        fprintf(stderr, "vt-capture: %s\n", err.msg);
        vt_capture_free(c);
        return rc;
    }
    m.published = 1;
    if (!json) {
        print_summary(&m);
    } else if (summary_json(&m)) {
        /* Published: the files stand, only the summary is lost. */
        fprintf(stderr, "vt-capture: --json: out of memory (%s is published)\n", o.out);
        vt_capture_free(c);
        return 2;
    }
    vt_capture_free(c);
    return 0;
}
