/* vt bench and compare/speed: the statistics by hand, the read bandwidth's
 * refusals, and the command on a tiny fixture (what it prints and what it
 * refuses). No assertion on any time: the numbers are only checked to be
 * there, positive and consistent with each other. */
#include <criterion/criterion.h>

#include "tests/support/vt_test.h"

#include "compare/speed.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct env {
    char dir[64];
    char model[128];
    char cmd_out[65536], cmd_err[4096];
} env;

static env E;

static void setup(void)
{
    snprintf(E.dir, sizeof E.dir, "/tmp/vt-speed-XXXXXX");
    cr_assert_not_null(mkdtemp(E.dir));
    snprintf(E.model, sizeof E.model, "%s/tiny-Q8_0.gguf", E.dir);
    cr_assert_eq(VT_TEST_SH(&E, "'%s' fixture make --arch qwen3 --preset tiny --weights Q8_0 --seed 3 -o '%s'",
                            VT_BIN, E.model), 0, "%s", E.cmd_err);
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", E.dir);
    cr_assert_eq(system(cmd), 0);
}

Test(speed, median_and_spread_by_hand)
{
    const double odd[5] = { 3, 9, 1, 7, 5 }, even[4] = { 4, 1, 3, 10 };
    vt_speed_stat s = vt_speed_stat_of(odd, 5);
    cr_assert(s.median == 5 && s.min == 1 && s.max == 9, "%g %g %g", s.median, s.min, s.max);
    s = vt_speed_stat_of(even, 4);
    cr_assert(s.median == 3.5 && s.min == 1 && s.max == 10, "%g %g %g", s.median, s.min, s.max);
    s = vt_speed_stat_of(odd, 1);
    cr_assert(s.median == 3 && s.min == 3 && s.max == 3);
}

Test(speed, read_bandwidth_measures_and_refuses_what_it_cannot_measure)
{
    vt_error err;
    double bw = -1;
    vt_error_clear(&err);
    cr_assert_eq(vt_speed_read_bandwidth(2, (size_t)64 << 20, 2, &bw, &err), 0, "%s", err.msg);
    cr_assert(bw > 0 && isfinite(bw), "%g", bw);
    const struct {
        int threads;
        size_t bytes;
        int passes;
    } bad[] = { { 0, (size_t)64 << 20, 1 }, { 257, (size_t)64 << 20, 1 }, { 1, 1000, 1 }, { 1, (size_t)64 << 20, 0 } };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        vt_error_clear(&err);
        cr_assert_eq(vt_speed_read_bandwidth(bad[i].threads, bad[i].bytes, bad[i].passes, &bw, &err), VT_EINPUT,
                     "case %zu", i);
        cr_assert(strstr(err.msg, "expected"), "%s", err.msg);
    }
}

static double num(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    cr_assert(cJSON_IsNumber(v), "%s: not a number", k);
    return v->valuedouble;
}

/* A phase's statistics: `runs` positive values whose median, min and max
 * are what the runs give. */
static void check_stat(const cJSON *o, int runs)
{
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, "runs");
    cr_assert_eq(cJSON_GetArraySize(a), runs);
    double v[8];
    for (int i = 0; i < runs; i++) {
        v[i] = cJSON_GetArrayItem(a, i)->valuedouble;
        cr_assert(v[i] > 0 && isfinite(v[i]), "run %d: %g", i, v[i]);
    }
    const vt_speed_stat s = vt_speed_stat_of(v, runs);
    cr_assert(num(o, "median") == s.median && num(o, "min") == s.min && num(o, "max") == s.max);
}

Test(bench, measures_both_runners_and_the_bandwidth_limit, .init = setup, .fini = teardown)
{
    int rc = VT_TEST_SH(&E, "'%s' bench --vs llamacpp --model '%s' --threads 2 --prefill 8 --decode 4 --runs 3 "
                            "--bandwidth-mib 64 --json", VT_BIN, E.model);
    cr_assert_eq(rc, 0, "%s", E.cmd_err);
    cJSON *j = cJSON_Parse(E.cmd_out);
    cr_assert_not_null(j, "%s", E.cmd_out);
    cr_assert_str_eq(cJSON_GetObjectItemCaseSensitive(j, "format")->valuestring, "vt.bench/2");
    cr_assert(num(j, "prefill_tokens") == 8 && num(j, "decode_tokens") == 3 && num(j, "runs") == 3);
    const cJSON *runners = cJSON_GetObjectItemCaseSensitive(j, "runners");
    cr_assert_eq(cJSON_GetArraySize(runners), 2);
    const char *names[2] = { "engine", "llamacpp" };
    for (int k = 0; k < 2; k++) {
        const cJSON *r = cJSON_GetArrayItem(runners, k);
        cr_assert_str_eq(cJSON_GetObjectItemCaseSensitive(r, "runner")->valuestring, names[k]);
        cr_assert(num(r, "threads") == 2, "%s: threads %g", names[k], num(r, "threads"));
        cr_assert(num(r, "n_batch") == 8);
        const cJSON *pf = cJSON_GetObjectItemCaseSensitive(r, "prefill_tok_s");
        const cJSON *dc = cJSON_GetObjectItemCaseSensitive(r, "decode_tok_s");
        check_stat(pf, 3);
        check_stat(dc, 3);
    }
    /* the ratios are the per-run ratios of the two runners' runs */
    const cJSON *ratio = cJSON_GetObjectItemCaseSensitive(j, "ratio");
    for (int ph = 0; ph < 2; ph++) {
        const char *phase = ph ? "decode_tok_s" : "prefill_tok_s";
        const cJSON *ro = cJSON_GetObjectItemCaseSensitive(ratio, ph ? "decode" : "prefill");
        check_stat(ro, 3);
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(
                            cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(runners, 0), phase), "runs"),
                    *l = cJSON_GetObjectItemCaseSensitive(
                            cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(runners, 1), phase), "runs"),
                    *q = cJSON_GetObjectItemCaseSensitive(ro, "runs");
        for (int i = 0; i < 3; i++) {
            const double want = cJSON_GetArrayItem(e, i)->valuedouble / cJSON_GetArrayItem(l, i)->valuedouble,
                         got = cJSON_GetArrayItem(q, i)->valuedouble;
            cr_assert(fabs(got - want) <= 1e-12 * want, "%s run %d: %a, expected %a", phase, i, got, want);
        }
    }
    /* the limit: the model's weight bytes over the bandwidth measured next
     * to the runs (one reading a run, their median); each run's fraction is
     * its decode over the limit of its own reading */
    const cJSON *lim = cJSON_GetObjectItemCaseSensitive(j, "decode_limit");
    struct stat st;
    cr_assert_eq(stat(E.model, &st), 0);
    const double wb = num(lim, "weight_bytes_per_token");
    cr_assert(wb > 0.5 * (double)st.st_size && wb <= (double)st.st_size, "%g of %lld", wb, (long long)st.st_size);
    const cJSON *bwr = cJSON_GetObjectItemCaseSensitive(lim, "read_bytes_per_s_runs");
    check_stat(bwr, 3);
    cr_assert(num(lim, "read_bytes_per_s") == num(bwr, "median"));
    cr_assert(num(lim, "read_bytes_per_s_before") > 0 && num(lim, "read_bytes_per_s_after") > 0);
    cr_assert(fabs(num(lim, "tok_s") - num(lim, "read_bytes_per_s") / wb) <= 1e-9 * num(lim, "tok_s"));
    for (int k = 0; k < 2; k++) {
        const cJSON *r = cJSON_GetArrayItem(runners, k);
        const cJSON *fr = cJSON_GetObjectItemCaseSensitive(r, "decode_fraction_of_limit_runs");
        check_stat(fr, 3);
        const cJSON *dr = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(r, "decode_tok_s"), "runs"),
                    *fa = cJSON_GetObjectItemCaseSensitive(fr, "runs"), *ba = cJSON_GetObjectItemCaseSensitive(bwr, "runs");
        for (int i = 0; i < 3; i++) {
            const double want = cJSON_GetArrayItem(dr, i)->valuedouble * wb / cJSON_GetArrayItem(ba, i)->valuedouble;
            cr_assert(fabs(cJSON_GetArrayItem(fa, i)->valuedouble - want) <= 1e-12 * want, "%s run %d", names[k], i);
        }
        cr_assert(num(r, "decode_fraction_of_limit") == num(fr, "median"));
    }
    cr_assert(num(j, "greedy_agree") >= 0 && num(j, "greedy_agree") <= 4);
    cJSON_Delete(j);

    /* the table a person reads says the same things */
    rc = VT_TEST_SH(&E, "'%s' bench --vs llamacpp --model '%s' --threads 2 --prefill 8 --decode 4 --runs 2 "
                        "--bandwidth-mib 64", VT_BIN, E.model);
    cr_assert_eq(rc, 0, "%s", E.cmd_err);
    cr_assert(strstr(E.cmd_out, "prefill  engine") && strstr(E.cmd_out, "decode   llama.cpp"), "%s", E.cmd_out);
    cr_assert(strstr(E.cmd_out, "ratio engine/llama.cpp") && strstr(E.cmd_out, "decode limit: weights"), "%s",
              E.cmd_out);
    cr_assert(strstr(E.cmd_out, "isa="), "the engine's kernels are named:\n%s", E.cmd_out);
}

Test(bench, bad_options_are_refused_with_one_line, .init = setup, .fini = teardown)
{
    char notgguf[128];
    snprintf(notgguf, sizeof notgguf, "%s/not.gguf", E.dir);
    FILE *f = fopen(notgguf, "w");
    cr_assert_not_null(f);
    fputs("not a model\n", f);
    fclose(f);
    /* M: the fixture, BAD: a file that is no GGUF */
    const struct {
        const char *args, *says;
    } cases[] = {
        { "--model M", "--vs" },
        { "--vs engine --model M", "llamacpp" },
        { "--vs transformers --model M", "llamacpp" },
        { "--vs llamacpp", "--model" },
        { "--vs llamacpp --model M --model M", "expected the option once (given twice)" },
        { "--vs llamacpp --vs llamacpp --model M", "--vs 'llamacpp': expected the option once" },
        { "--vs llamacpp --model M --runs 0", "--runs" },
        { "--vs llamacpp --model M --runs 101", "--runs" },
        { "--vs llamacpp --model M --runs ' 5'", "--runs" },
        { "--vs llamacpp --model M --decode 1", "--decode" },
        { "--vs llamacpp --model M --prefill 0", "--prefill" },
        { "--vs llamacpp --model M --bandwidth-mib 1", "--bandwidth-mib" },
        { "--vs llamacpp --model M --mode eager", "--mode" },
        { "--vs llamacpp --model M --threads x", "--threads" },
        { "--vs llamacpp --model M --frobnicate 1", "--frobnicate" },
        { "--vs llamacpp --model M --runs", "--runs" },
        { "--vs llamacpp --model BAD", "not.gguf" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char args[512] = "";
        for (const char *c = cases[i].args; *c;) {
            const size_t at = strlen(args);
            if (strncmp(c, " M", 2) == 0 && (c[2] == 0 || c[2] == ' ')) {
                snprintf(args + at, sizeof args - at, " '%s'", E.model);
                c += 2;
            } else if (strncmp(c, " BAD", 4) == 0) {
                snprintf(args + at, sizeof args - at, " '%s'", notgguf);
                c += 4;
            } else {
                snprintf(args + at, sizeof args - at, "%c", *c);
                c++;
            }
        }
        int rc = VT_TEST_SH(&E, "'%s' bench %s --bandwidth-mib 64", VT_BIN, args);
        cr_assert_eq(rc, 2, "%s: exit %d\n%s%s", args, rc, E.cmd_out, E.cmd_err);
        cr_assert(strstr(E.cmd_err, cases[i].says), "%s: %s", args, E.cmd_err);
        const char *nl = strchr(E.cmd_err, '\n');
        cr_assert(nl && nl[1] == 0, "%s: one line expected:\n%s", args, E.cmd_err);
        cr_assert_eq(E.cmd_out[0], 0, "%s: nothing on stdout expected:\n%s", args, E.cmd_out);
    }
}
