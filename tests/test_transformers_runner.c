/* The transformers runner (oracle/transformers_runner.h) without torch, as
 * CI runs it: the adapter replaced by tests/support/fake_transformers.py,
 * which speaks the same protocol with logits from a fixed formula and
 * imports nothing of torch or transformers. What is checked is vt's side:
 * the export it starts the adapter on, the settings it records (dtype,
 * attention, the resolved cache and matmul), the package it builds from
 * the adapter's imports (kind "imports"), and what it refuses: the strict
 * gate on a process that never imported the required packages, an FP8
 * cache transformers does not offer, a cache dtype other than the model's,
 * --package, an adapter that fails to start or dies mid-run; nothing is
 * left in the private directory. */
#include <criterion/criterion.h>

#include "tests/support/vt_test.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char tmpdir[64];

static void setup(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/vt-tfr-XXXXXX");
    cr_assert_not_null(mkdtemp(tmpdir));
    char out[256], err[2048];
    int rc = vt_test_sh(tmpdir, out, sizeof out, err, sizeof err,
                        "cd '%s' && (mkdir tmp && '%s' fixture make --arch qwen3 --preset tiny --weights Q8_0 --seed 1 "
                        "-o t.gguf && head -4 '%s/fixtures/prompts/default16.jsonl' > p.jsonl)",
                        tmpdir, VT_BIN, VT_SOURCE_DIR);
    cr_assert_eq(rc, 0, "%s", err);
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    cr_assert_eq(system(cmd), 0);
}

/* vt-capture through the fake adapter; TMPDIR is the test's tmp/. The
 * prompts and 4 tokens unless opts scores another capture. */
static int capture(const char *env, const char *opts, char *out, size_t cap, char *err, size_t ecap)
{
    const char *gen = strstr(opts, "--score-prefix-of") ? "" : "--prompts p.jsonl --max-tokens 4";
    return vt_test_sh(tmpdir, out, cap, err, ecap,
                      "cd '%s' && %s TMPDIR='%s/tmp' VT_SOURCE_DIR='%s' "
                      "VT_TRANSFORMERS_ADAPTER='%s/tests/support/fake_transformers.py' '%s-capture' --runner "
                      "transformers --model t.gguf %s --no-timestamp %s",
                      tmpdir, env, tmpdir, VT_SOURCE_DIR, VT_SOURCE_DIR, VT_BIN, gen, opts);
}

/* The private directory is gone after every run, good or bad. */
static void assert_tmp_empty(void)
{
    char p[96];
    snprintf(p, sizeof p, "%s/tmp", tmpdir);
    DIR *d = opendir(p);
    cr_assert_not_null(d);
    struct dirent *e;
    while ((e = readdir(d)))
        cr_assert(strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0, "left behind: %s/%s", p, e->d_name);
    closedir(d);
}

static const char *str_at(const cJSON *root, const char *a, const char *b, const char *c)
{
    const cJSON *v = vt_test_get(root, a);
    if (b)
        v = vt_test_get(v, b);
    if (c)
        v = vt_test_get(v, c);
    cr_assert(cJSON_IsString(v), "%s.%s.%s: expected a string", a, b ? b : "", c ? c : "");
    return v->valuestring;
}

TestSuite(transformers_runner, .init = setup, .fini = teardown);

Test(transformers_runner, records_the_export_settings_and_imports_package)
{
    static char out[8192], err[8192];
    int rc = capture("", "--dtype bf16 --attention sdpa --matmul exact --repetitions 2 --out c.json", out, sizeof out,
                     err, sizeof err);
    cr_assert_eq(rc, 0, "%s%s", out, err);
    cr_assert(strstr(out, "4 prompts x 2 repeats, 8 runs (0 failed), 32 positions"), "%s", out);
    cr_assert(strstr(out, "tokens identical, logits identical"), "%s", out);
    char path[96];
    snprintf(path, sizeof path, "%s/c.json", tmpdir);
    cJSON *d = vt_test_load_json(path);
    cr_assert_str_eq(str_at(d, "runtime", "runner", "name"), "transformers");
    cr_assert_str_eq(str_at(d, "runtime", "runner", "version"), "0-fake");
    /* The adapter ran on vt's export of this GGUF, in the dtype asked. */
    const char *detail = str_at(d, "runtime", "runner", "detail");
    cr_assert(strstr(detail, "vt export of the GGUF as Qwen3ForCausalLM, bf16, config.json sha256 ") &&
                  strstr(detail, "model.safetensors sha256 ") && strstr(detail, "fake adapter, dtype bf16, attention sdpa"),
              "%s", detail);
    const cJSON *set = vt_test_get(d, "settings");
    cr_assert_str_eq(str_at(set, "requested", "dtype", NULL), "bf16");
    cr_assert_str_eq(str_at(set, "resolved", "attention", NULL), "sdpa");
    /* auto is the model's dtype; exact as asked, so no refused difference. */
    cr_assert_str_eq(str_at(set, "resolved", "cache_dtype", NULL), "bf16");
    cr_assert_str_eq(str_at(set, "resolved", "matmul", NULL), "exact");
    const cJSON *diffs = vt_test_get(set, "differences");
    cr_assert_eq(cJSON_GetArraySize(diffs), 1);
    cr_assert_str_eq(str_at(diffs->child, "field", NULL, NULL), "cache_dtype");
    cr_assert(cJSON_IsTrue(vt_test_get(diffs->child, "allowed")));
    /* The package is what the process imported: it never imported torch. */
    const cJSON *pkg = vt_test_get(d, "package");
    cr_assert_str_eq(str_at(pkg, "kind", NULL, NULL), "imports");
    cr_assert(cJSON_IsFalse(vt_test_get(pkg, "verified")));
    cr_assert(vt_test_get(pkg, "modules")->valuedouble > 0);
    const cJSON *probs = vt_test_get(pkg, "problems");
    static const char *const req[] = { "safetensors", "tokenizers", "torch", "transformers" };
    for (int i = 0; i < 4; i++) {
        char want[96];
        snprintf(want, sizeof want, "required %s: no module of it imported", req[i]);
        int seen = 0;
        for (const cJSON *p = probs->child; p; p = p->next)
            seen |= strstr(p->valuestring, want) != NULL;
        cr_assert(seen, "no problem '%s'", want);
    }
    /* The adapter itself is vt's code from outside every distribution:
     * recorded as the runtime by sha256, never counted as verified. */
    int adapter_listed = 0;
    for (const cJSON *o = vt_test_get(pkg, "outside")->child; o; o = o->next)
        adapter_listed |= strstr(o->valuestring, "module ") == o->valuestring &&
                          strstr(o->valuestring, "/tests/support/fake_transformers.py sha256 ") != NULL;
    cr_assert(adapter_listed);
    cJSON_Delete(d);
    assert_tmp_empty();
}

Test(transformers_runner, strict_refuses_a_process_that_never_ran_torch)
{
    static char out[8192], err[16384];
    char cmd_opts[512];
    snprintf(cmd_opts, sizeof cmd_opts, "--matmul exact --repetitions 10 --strict --out s.json");
    int rc = capture("", cmd_opts, out, sizeof out, err, sizeof err);
    cr_assert_eq(rc, 1, "%s%s", out, err);
    cr_assert(strstr(err, "rule package: s.json: package.problems[") &&
                  strstr(err, "required torch: no module of it imported"),
              "%s", err);
    cr_assert(strstr(err, "no shared object the process loaded is a distribution's member"), "%s", err);
    char p[96];
    snprintf(p, sizeof p, "%s/s.json", tmpdir);
    cr_assert(!vt_test_exists(p));
    assert_tmp_empty();
}

Test(transformers_runner, refuses_what_transformers_does_not_offer)
{
    static char out[4096], err[4096];
    struct {
        const char *opts, *want;
    } cases[] = {
        { "--cache-dtype fp8_e4m3 --out a.json", "transformers offers no FP8 E4M3 KV cache" },
        { "--cache-dtype bf16 --out a.json", "--cache-dtype bf16 with --dtype f32: expected auto or f32" },
        { "--package x.whl --out a.json", "--package x.whl: expected none with --runner transformers" },
        { "--dtype f16 --out a.json", "--dtype 'f16': expected f32 or bf16" },
        { "--attention flash --out a.json", "--attention 'flash': expected eager or sdpa" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int rc = capture("", cases[i].opts, out, sizeof out, err, sizeof err);
        cr_assert_eq(rc, 2, "%s: %s%s", cases[i].opts, out, err);
        cr_assert(strstr(err, cases[i].want), "%s: %s", cases[i].opts, err);
        cr_assert_eq(strchr(err, '\n'), err + strlen(err) - 1, "one line: %s", err);
        assert_tmp_empty();
    }
}

Test(transformers_runner, an_adapter_that_fails_or_dies_is_an_error)
{
    static char out[8192], err[8192];
    /* It cannot start: the reply never comes. */
    int rc = vt_test_sh(tmpdir, out, sizeof out, err, sizeof err,
                        "cd '%s' && TMPDIR='%s/tmp' VT_TRANSFORMERS_ADAPTER=/nonexistent/adapter.py '%s-capture' "
                        "--runner transformers --model t.gguf --prompts p.jsonl --out a.json",
                        tmpdir, tmpdir, VT_BIN);
    cr_assert_eq(rc, 2, "%s%s", out, err);
    cr_assert(strstr(err, "vt-capture: transformers adapter: loading the model: exited without a reply"), "%s", err);
    assert_tmp_empty();
    /* It dies at its third evaluation: that run fails, and so does the
     * imports list asked after the runs; nothing is published. */
    rc = capture("FAKE_DIE_AFTER=3", "--out a.json", out, sizeof out, err, sizeof err);
    cr_assert_eq(rc, 2, "%s%s", out, err);
    cr_assert(strstr(err, "transformers"), "%s", err);
    char p[96];
    snprintf(p, sizeof p, "%s/a.json", tmpdir);
    cr_assert(!vt_test_exists(p));
    assert_tmp_empty();
}

/* vt-neartie over a transformers capture: dtype and attention are
 * settings another runner's capture lacks (refused unless allowed), and
 * prefix scores computed with another attention implementation are not
 * the oracle's computation (refused, never allowed). */
Test(transformers_runner, neartie_compares_dtype_and_attention)
{
    static char out[16384], err[16384];
    int rc = vt_test_sh(tmpdir, out, sizeof out, err, sizeof err,
                        "cd '%s' && '%s-capture' --runner engine --matmul exact --model t.gguf --prompts p.jsonl "
                        "--max-tokens 4 --no-timestamp --out e.json", tmpdir, VT_BIN);
    cr_assert_eq(rc, 0, "%s", err);
    rc = capture("", "--matmul exact --out o.json", out, sizeof out, err, sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    rc = capture("", "--matmul exact --score-prefix-of e.json --out s.json", out, sizeof out, err, sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    rc = capture("", "--matmul exact --attention sdpa --score-prefix-of e.json --out s2.json", out, sizeof out, err,
                 sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
    char base[256];
    snprintf(base, sizeof base, "cd '%s' && '%s-neartie' --local e.json --oracle o.json --allow-unverified", tmpdir,
             VT_BIN);
    rc = vt_test_sh(tmpdir, out, sizeof out, err, sizeof err, "%s --prefix-scores s.json", base);
    cr_assert_eq(rc, 2, "%s%s", out, err);
    cr_assert(strstr(err, "settings.resolved.dtype: e.json (missing), o.json f32: expected equal settings (or "
                          "--allow-diff dtype)") &&
                  strstr(err, "settings.resolved.attention: e.json (missing), o.json eager"),
              "%s", err);
    rc = vt_test_sh(tmpdir, out, sizeof out, err, sizeof err,
                    "%s --prefix-scores s.json --allow-diff dtype --allow-diff attention", base);
    cr_assert(rc == 0 || rc == 1, "%s%s", out, err);
    cr_assert(strstr(out, "allowed difference: dtype: e.json (missing), o.json f32"), "%s", out);
    rc = vt_test_sh(tmpdir, out, sizeof out, err, sizeof err,
                    "%s --prefix-scores s2.json --allow-diff dtype --allow-diff attention", base);
    cr_assert_eq(rc, 2, "%s%s", out, err);
    cr_assert(strstr(err, "rule scorer") && strstr(err, "settings.resolved.attention: o.json eager, s2.json sdpa"),
              "%s", err);
    assert_tmp_empty();
}
