/* --runner plugin:PATH.so (engine/runner_plugin.c): vt's own engine built
 * as a plugin (tests/support/engine_plugin.c) captures what --runner engine
 * captures, run for run; its capture names the object by path and sha256
 * and is scored against llama.cpp like any local capture; and each way a
 * plugin can be wrong (wrong ABI, no table, a null entry, a wrong
 * vocabulary, a NaN logit) is refused with exit 2 and one line, nothing
 * published. */
#include <criterion/criterion.h>

#include "provenance/provenance.h"
#include "tests/support/vt_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PACKAGE "'" VT_DEPS_DIR "/npm/node-llama-cpp-linux-x64-3.22.1.tgz'"
#define PROMPTS VT_SOURCE_DIR "/fixtures/prompts/default16.jsonl"

static vt_test_model model;
static char out[65536], err[8192];

static void setup(void) { model = vt_test_model_make("qwen3", "Q8_0"); }

static void teardown(void)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -f '%s'/*.json '%s'/*.logits '%s'/*.topk '%s'/.std*", model.dir, model.dir,
             model.dir, model.dir);
    if (system(cmd) != 0)
        cr_log_warn("cleanup failed");
    vt_test_model_remove(&model);
}

TestSuite(plugin, .init = setup, .fini = teardown, .timeout = 600);

static const char *plugin(const char *kind)
{
    static char p[4][512];
    static int i;
    i = (i + 1) % 4;
    snprintf(p[i], sizeof p[i], "%s/libplugin_%s.so", VT_FAKE_GPU_DIR, kind);
    return p[i];
}

/* vt-capture with runner (and extra arguments) into NAME.json and
 * NAME.logits in the model's directory; its exit status. */
static int capture(const char *runner, const char *name, const char *extra)
{
    return vt_test_sh(model.dir, out, sizeof out, err, sizeof err,
                      "cd '%s' && '%s' capture --runner '%s' --model '%s' --prompts '%s' --out %s.json --logits-out "
                      "%s.logits %s --max-tokens 16 --threads 1 --no-timestamp %s",
                      model.dir, VT_BIN, runner, model.path, PROMPTS, name, name,
                      extra && strstr(extra, "--repetitions") ? "" : "--repetitions 2", extra ? extra : "");
}

static cJSON *load(const char *name)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s.json", model.dir, name);
    char *text = vt_test_slurp(p, NULL);
    cr_assert_not_null(text, "%s", p);
    cJSON *j = cJSON_Parse(text);
    free(text);
    cr_assert_not_null(j, "%s: not JSON", p);
    return j;
}

Test(plugin, the_engine_as_a_plugin_captures_what_the_engine_captures)
{
    char runner[600];
    snprintf(runner, sizeof runner, "plugin:%s", plugin("ok"));
    cr_assert_eq(capture("engine", "E", NULL), 0, "%s", err);
    cr_assert_eq(capture(runner, "P", NULL), 0, "%s", err);
    cJSON *e = load("E"), *p = load("P");
    const cJSON *er = cJSON_GetObjectItemCaseSensitive(e, "runs"), *pr = cJSON_GetObjectItemCaseSensitive(p, "runs");
    cr_assert_eq(cJSON_GetArraySize(er), 32);
    cr_assert(cJSON_Compare(er, pr, 1), "the plugin's runs differ from the engine's");
    /* The logits, bit for bit. */
    char a[256], b[256];
    snprintf(a, sizeof a, "%s/E.logits", model.dir);
    snprintf(b, sizeof b, "%s/P.logits", model.dir);
    size_t na = 0, nb = 0;
    char *la = vt_test_slurp(a, &na), *lb = vt_test_slurp(b, &nb);
    cr_assert(la && lb && na > 0);
    /* Same frames; the side files' headers name their captures alike. */
    cr_assert_eq(na, nb);
    cr_assert(memcmp(la, lb, na) == 0, "the logits side files differ");
    free(la);
    free(lb);
    /* What ran: the plugin, by path and sha256. */
    const cJSON *rn = vt_test_get(vt_test_get(p, "runtime"), "runner");
    cr_assert_str_eq(vt_test_get(rn, "name")->valuestring, "plugin");
    char real[4096];
    cr_assert_not_null(realpath(plugin("ok"), real));
    cr_assert_str_eq(vt_test_get(rn, "library")->valuestring, real);
    vt_sha256_hex sha;
    vt_error e_;
    cr_assert_eq(vt_sha256_file(plugin("ok"), &sha, NULL, &e_), VT_OK);
    const char *detail = vt_test_get(rn, "detail")->valuestring;
    cr_assert(strstr(detail, sha.hex) && strstr(detail, "plugin vt-engine-as-plugin"), "%s", detail);
    cJSON_Delete(e);
    cJSON_Delete(p);
}

Test(plugin, every_wrong_plugin_is_refused_with_one_line_and_nothing_published)
{
    static const struct { const char *kind, *says; } cases[] = {
        { "wrong_abi", ": field abi: 99: expected 1" },
        { "no_symbol", ": symbol vt_plugin_v1: missing: expected the plugin's table" },
        { "null_entry", ": table vt_plugin_v1: a null entry: expected every entry set" },
        { "wrong_vocab", ": n_vocab: " },
        { "nan_logits", ": eval: logit nan at position " },
    };
    char runner[600], path[300], side[300];
    snprintf(path, sizeof path, "%s/X.json", model.dir);
    snprintf(side, sizeof side, "%s/X.logits", model.dir);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        snprintf(runner, sizeof runner, "plugin:%s", plugin(cases[i].kind));
        cr_assert_eq(capture(runner, "X", NULL), 2, "%s: %s", cases[i].kind, err);
        cr_assert(strstr(err, cases[i].says) != NULL, "%s: %s", cases[i].kind, err);
        cr_assert(strstr(err, plugin(cases[i].kind)) != NULL, "%s: names the plugin: %s", cases[i].kind, err);
        cr_assert(strchr(err, '\n') == err + strlen(err) - 1, "%s: one line: %s", cases[i].kind, err);
        cr_assert(!vt_test_exists(path), "%s: a capture was published", cases[i].kind);
        cr_assert(!vt_test_exists(side), "%s: a logits side file was published", cases[i].kind);
    }
    /* The vocabulary: the plugin's and the model's both named. */
    snprintf(runner, sizeof runner, "plugin:%s", plugin("wrong_vocab"));
    cr_assert_eq(capture(runner, "X", NULL), 2);
    cr_assert(strstr(err, "expected ") && strstr(err, "the vocabulary of "), "%s", err);
    /* No such file, not a shared object, a directory, no path. */
    cr_assert_eq(capture("plugin:/nonexistent/p.so", "X", NULL), 2);
    cr_assert(strstr(err, "/nonexistent/p.so: No such file or directory: expected a vt plugin"), "%s", err);
    char text[300];
    snprintf(text, sizeof text, "plugin:%s/not-a-plugin.so", model.dir);
    vt_test_spit(text + 7, "hello\n", 6);
    cr_assert_eq(capture(text, "X", NULL), 2);
    cr_assert(strstr(err, ": dlopen: "), "%s", err);
    unlink(text + 7);
    snprintf(text, sizeof text, "plugin:%s", model.dir);
    cr_assert_eq(capture(text, "X", NULL), 2);
    cr_assert(strstr(err, "expected a regular file"), "%s", err);
    cr_assert_eq(capture("plugin:", "X", NULL), 2);
    cr_assert(strstr(err, "--runner plugin: no path: expected plugin:PATH.so"), "%s", err);
    cr_assert(!vt_test_exists(path), "a capture was published");
    /* vt run takes the same runner and refuses the same way. */
    snprintf(runner, sizeof runner, "plugin:%s", plugin("nan_logits"));
    cr_assert_eq(vt_test_sh(model.dir, out, sizeof out, err, sizeof err,
                            "'%s' run --runner '%s' --model '%s' --prompt hi --max-tokens 4", VT_BIN, runner,
                            model.path),
                 2);
    cr_assert(strstr(err, ": eval: logit nan at position "), "%s", err);
}

/* Strict captures of the plugin and of llama.cpp, and vt-neartie between
 * them, scored here by llama.cpp. */
Test(plugin, the_plugins_capture_is_scored_against_llamacpp)
{
    cr_assert_eq(vt_test_sh(model.dir, out, sizeof out, err, sizeof err,
                            "cd '%s' && '%s' provenance manifest make '%s' -o manifest.json", model.dir, VT_BIN,
                            model.path),
                 0, "%s", err);
    char launcher[200];
    snprintf(launcher, sizeof launcher, "%s/launcher.json", model.dir);
    static const char lj[] = "{\"launcher\":\"test_plugin\",\"host\":\"localhost\",\"command\":\"vt capture\"}\n";
    vt_test_spit(launcher, lj, sizeof lj - 1);
    char runner[600], strict[1200];
    snprintf(runner, sizeof runner, "plugin:%s", plugin("ok"));
    snprintf(strict, sizeof strict,
             "--repetitions 10 --strict --model-manifest '%s/manifest.json' --launcher-manifest '%s'", model.dir,
             launcher);
    cr_assert_eq(capture(runner, "L", strict), 0, "%s", err);
    char oracle[1400];
    snprintf(oracle, sizeof oracle, "%s --package %s", strict, PACKAGE);
    cr_assert_eq(capture("llamacpp", "O", oracle), 0, "%s", err);
    int rc = vt_test_sh(model.dir, out, sizeof out, err, sizeof err,
                        "cd '%s' && '%s' neartie --local L.json --oracle O.json --score-with llamacpp --package %s "
                        "--model '%s' --scores-out S.json --out R.json",
                        model.dir, VT_BIN, PACKAGE, model.path);
    cJSON *r = load("R");
    const cJSON *t = vt_test_get(r, "totals");
    /* The engine's Q8_0 products are ggml's: every prompt strict. */
    cr_assert_eq(rc, 0, "exit %d: %s", rc, out);
    cr_assert_eq(vt_test_get(t, "strict")->valuedouble, 16, "%s", out);
    cr_assert_eq(vt_test_get(t, "zero_gaps")->valuedouble, 16 * 16, "%s", out);
    cJSON_Delete(r);
}
