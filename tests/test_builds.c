/* Two builds, the same bits: this build's vt (VT_BIN) and another build's
 * (VT_COMPARE_BIN; CI: this is the clang build, that the gcc build) make
 * the same fixtures byte for byte and the same captures: every run's tokens
 * and logits_sha256, the full-logits and top-k side files, over codecs, both
 * architectures, both modes and both matmul paths; and a capture of one
 * build compared with the other's by vt-neartie, scored by the other,
 * is strict at every prompt with zero gaps and identical logits. Built and
 * run only when VT_COMPARE_BIN is configured (CMakeLists.txt). */
#include <criterion/criterion.h>

#include "tests/support/vt_test.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define sh(e, ...) VT_TEST_SH(e, __VA_ARGS__)
#define get(o, key) vt_test_get(o, key)

typedef struct env {
    char dir[64];
    char cmd_out[1 << 16], cmd_err[1 << 14];
} env;

static void setup(env *e)
{
    memset(e, 0, sizeof *e);
    snprintf(e->dir, sizeof e->dir, "/tmp/vt-builds-XXXXXX");
    cr_assert_not_null(mkdtemp(e->dir));
}

static void teardown(env *e)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", e->dir);
    cr_assert_eq(system(cmd), 0);
}

static int same_file(const char *a, const char *b)
{
    size_t na, nb;
    char *x = vt_test_slurp(a, &na), *y = vt_test_slurp(b, &nb);
    cr_assert(x && y, "%s, %s", a, b);
    int same = na == nb && memcmp(x, y, na) == 0;
    free(x);
    free(y);
    return same;
}

typedef struct config {
    const char *arch, *weights, *options;
} config;

static const config configs[] = {
    { "qwen3", "Q8_0", "" },
    { "qwen3", "Q4_K", "" },
    { "qwen3", "F32", "--matmul exact" },
    { "qwen3", "BF16", "--mode eager" },
    { "qwen35", "Q8_0", "" },
};

Test(builds, fixtures_and_captures_are_bit_identical, .timeout = 900)
{
    env e;
    setup(&e);
    const char *bin[2] = { VT_BIN, VT_COMPARE_BIN };
    for (size_t c = 0; c < sizeof configs / sizeof configs[0]; c++) {
        const config *k = &configs[c];
        char model[2][160], cap[2][160], logits[2][160], topk[2][160];
        for (int b = 0; b < 2; b++) {
            snprintf(model[b], sizeof model[b], "%s/%zu-%d.gguf", e.dir, c, b);
            snprintf(cap[b], sizeof cap[b], "%s/%zu-%d.json", e.dir, c, b);
            snprintf(logits[b], sizeof logits[b], "%s/%zu-%d.logits", e.dir, c, b);
            snprintf(topk[b], sizeof topk[b], "%s/%zu-%d.topk", e.dir, c, b);
            cr_assert_eq(sh(&e, "'%s' fixture make --arch %s --preset tiny --weights %s --seed 3 -o '%s'", bin[b],
                            k->arch, k->weights, model[b]), 0, "%s", e.cmd_err);
        }
        cr_assert(same_file(model[0], model[1]), "%s %s: the two builds' fixtures differ", k->arch, k->weights);
        for (int b = 0; b < 2; b++)
            cr_assert_eq(sh(&e, "'%s' capture --runner engine --model '%s' --prompts '%s/fixtures/prompts/default16.jsonl' "
                                "--repetitions 2 --max-tokens 8 --top-k 5 --threads 2 --no-timestamp %s --out '%s' "
                                "--logits-out '%s'", bin[b], model[0], VT_SOURCE_DIR, k->options, cap[b], logits[b]),
                         0, "%s", e.cmd_err);
        cr_assert(same_file(logits[0], logits[1]), "%s %s %s: full logits differ", k->arch, k->weights, k->options);
        cr_assert(same_file(topk[0], topk[1]), "%s %s %s: top-k differ", k->arch, k->weights, k->options);
        cJSON *doc[2] = { vt_test_load_json(cap[0]), vt_test_load_json(cap[1]) };
        const cJSON *r0 = get(doc[0], "runs")->child, *r1 = get(doc[1], "runs")->child;
        int n = 0;
        for (; r0 && r1; r0 = r0->next, r1 = r1->next, n++) {
            cr_assert(cJSON_Compare(get(r0, "tokens"), get(r1, "tokens"), 1), "%s %s: run %d tokens", k->arch,
                      k->weights, n);
            cr_assert_str_eq(get(r0, "logits_sha256")->valuestring, get(r1, "logits_sha256")->valuestring);
        }
        cr_assert(!r0 && !r1 && n == 32, "%d runs", n);
        /* The same workload: what they computed is one computation's record. */
        cr_assert_str_eq(get(doc[0], "workload_seal")->valuestring, get(doc[1], "workload_seal")->valuestring);
        /* Different builds: not the same runtime. */
        cr_assert_str_neq(get(get(get(doc[0], "runtime"), "binary"), "sha256")->valuestring,
                          get(get(get(doc[1], "runtime"), "binary"), "sha256")->valuestring);
        cJSON_Delete(doc[0]);
        cJSON_Delete(doc[1]);
    }
    teardown(&e);
}

/* Evidence of one build checked against the other's: this build's capture
 * as local, the other's as oracle and its scorer. */
Test(builds, one_build_verifies_against_the_other, .timeout = 600)
{
    env e;
    setup(&e);
    char model[160], L[160], O[160], S[160], R[160];
    snprintf(model, sizeof model, "%s/m.gguf", e.dir);
    snprintf(L, sizeof L, "%s/L.json", e.dir);
    snprintf(O, sizeof O, "%s/O.json", e.dir);
    snprintf(S, sizeof S, "%s/S.json", e.dir);
    snprintf(R, sizeof R, "%s/R.json", e.dir);
    cr_assert_eq(sh(&e, "'%s' fixture make --arch qwen3 --preset tiny --weights Q4_K --seed 1 -o '%s'", VT_BIN, model),
                 0, "%s", e.cmd_err);
    const char *bin[2] = { VT_BIN, VT_COMPARE_BIN }, *out[2] = { L, O };
    for (int b = 0; b < 2; b++)
        cr_assert_eq(sh(&e, "'%s' capture --runner engine --model '%s' --prompts '%s/fixtures/prompts/default16.jsonl' "
                            "--repetitions 2 --max-tokens 16 --no-timestamp --out '%s' --logits-out '%s.logits'", bin[b],
                        model, VT_SOURCE_DIR, out[b], out[b]), 0, "%s", e.cmd_err);
    cr_assert_eq(sh(&e, "'%s' capture --runner engine --model '%s' --score-prefix-of '%s' --no-timestamp --out '%s'",
                    VT_COMPARE_BIN, model, L, S), 0, "%s", e.cmd_err);
    /* Not strict (2 repeats, no manifest): --allow-unverified, said in the report. */
    int rc = sh(&e, "'%s' neartie --local '%s' --oracle '%s' --prefix-scores '%s' --out '%s' --require-strict 16 "
                    "--allow-unverified", VT_BIN, L, O, S, R);
    cr_assert_eq(rc, 0, "exit %d: %s%s", rc, e.cmd_err, e.cmd_out);
    cJSON *r = vt_test_load_json(R);
    const cJSON *t = get(r, "totals");
    cr_assert_eq(get(t, "strict")->valuedouble, 16);
    cr_assert_eq(get(t, "zero_gaps")->valuedouble, 16 * 16);
    const cJSON *m = get(r, "metrics");
    cr_assert(cJSON_IsTrue(get(m, "available")));
    cr_assert_eq(get(m, "max_abs_dlogit")->valuedouble, 0.0, "logits differ between the builds");
    cr_assert_eq(get(get(m, "kld"), "max")->valuedouble, 0.0);
    cJSON_Delete(r);
    teardown(&e);
}
