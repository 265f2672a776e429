/* --backend hip without a GPU: the options, the loading of the backend
 * module (engine/gpu_module.c) and every refusal of a wrong one, through
 * the stand-in modules of tests/support/fake_gpu_module.c. The GPU's own
 * numerics are checked on a GPU (tests/gpu/) and through the committed
 * evidence (tests/gpu_evidence.sh). */
#include <criterion/criterion.h>

#include "provenance/provenance.h"
#include "tests/support/vt_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static vt_test_model model;
static char dir[64];

static void setup(void)
{
    model = vt_test_model_make("qwen3", "Q8_0");
    snprintf(dir, sizeof dir, "%s", model.dir);
}

static void teardown(void)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -f '%s'/*.json '%s'/*.logits '%s'/*.topk '%s'/.std*", dir, dir, dir, dir);
    if (system(cmd) != 0)
        cr_log_warn("cleanup failed");
    vt_test_model_remove(&model);
}

static char out[65536], err[4096];

/* vt run with VT_HIP_MODULE=module (NULL: unset) and args; its exit status. */
static int run_with(const char *module, const char *args)
{
    char env[600] = "env -u VT_HIP_MODULE";
    if (module)
        snprintf(env, sizeof env, "VT_HIP_MODULE='%s'", module);
    return vt_test_sh(dir, out, sizeof out, err, sizeof err, "%s '%s' run --runner engine --model '%s' %s", env,
                      VT_BIN, model.path, args);
}

static const char *fake(const char *kind)
{
    static char p[4][512];
    static int i;
    i = (i + 1) % 4;
    snprintf(p[i], sizeof p[i], "%s/libfake_gpu_%s.so", VT_FAKE_GPU_DIR, kind);
    return p[i];
}

TestSuite(gpu_backend, .init = setup, .fini = teardown, .timeout = 300);

Test(gpu_backend, backend_and_device_options_are_checked)
{
    cr_assert_eq(run_with(NULL, "--prompt hi --backend gpu"), 2);
    cr_assert_str_eq(err, "vt run: --backend 'gpu': expected cpu or hip\n");
    cr_assert_eq(run_with(NULL, "--prompt hi --backend hip --device 64"), 2);
    cr_assert_str_eq(err, "vt run: --device '64': expected an integer in 0..63\n");
    cr_assert_eq(run_with(NULL, "--prompt hi --backend hip --device -1"), 2);
    cr_assert_str_eq(err, "vt run: --device '-1': expected an integer in 0..63\n");
}

Test(gpu_backend, a_missing_module_is_one_line_and_exit_2)
{
    cr_assert_eq(run_with("/nonexistent/libvt_hip.so", "--prompt hi --backend hip"), 2);
    cr_assert_str_eq(err, "VT_HIP_MODULE '/nonexistent/libvt_hip.so': No such file or directory: expected the GPU "
                          "backend module (libvt_hip.so)\n");
    /* Not set: looked for beside vt, where a build without the backend has none
     * (a build with it has one, and this machine has no GPU: exit 2 either way). */
    cr_assert_eq(run_with(NULL, "--prompt hi --backend hip"), 2, "%s", err);
    cr_assert(strstr(err, "libvt_hip.so") != NULL, "%s", err);
    cr_assert(strchr(err, '\n') == err + strlen(err) - 1, "one line: %s", err);
}

Test(gpu_backend, every_wrong_module_is_refused_naming_what_is_wrong)
{
    static const struct { const char *kind, *says; } cases[] = {
        { "no_device", "no GPU: the runtime of " },
        { "wrong_abi", ": field abi: 99: expected 1" },
        { "wrong_sizes", "(a module built from another source tree)" },
        { "null_entry", "a null entry: expected every entry set" },
        { "no_symbol", "symbol vt_gpu_backend_v1: missing" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        cr_assert_eq(run_with(fake(cases[i].kind), "--prompt hi --backend hip"), 2, "%s: %s", cases[i].kind, err);
        cr_assert(strstr(err, cases[i].says) != NULL, "%s: %s", cases[i].kind, err);
        cr_assert(strchr(err, '\n') == err + strlen(err) - 1, "%s: one line: %s", cases[i].kind, err);
    }
    /* Not a shared object, and a directory. */
    char text[128];
    snprintf(text, sizeof text, "%s/not-a-module.so", dir);
    vt_test_spit(text, "hello\n", 6);
    cr_assert_eq(run_with(text, "--prompt hi --backend hip"), 2, "%s", err);
    cr_assert(strstr(err, "dlopen") != NULL, "%s", err);
    unlink(text);
    cr_assert_eq(run_with(dir, "--prompt hi --backend hip"), 2, "%s", err);
    cr_assert(strstr(err, "expected a regular file") != NULL, "%s", err);
    /* A device the runtime does not have. */
    cr_assert_eq(run_with(fake("ok"), "--prompt hi --backend hip --device 1"), 2, "%s", err);
    cr_assert(strstr(err, "--device 1: expected 0 <= device < 1") != NULL, "%s", err);
}

/* The working stand-in: the runner reports what ran (backend hip, the
 * device's name, the module's path and the sha256 of its bytes), and a
 * capture records it; the oracle of a comparison stays on the CPU. */
Test(gpu_backend, the_identity_names_the_device_and_the_module_by_sha256)
{
    const char *mod = fake("ok");
    vt_sha256_hex sha;
    vt_error e;
    cr_assert_eq(vt_sha256_file(mod, &sha, NULL, &e), VT_OK);
    char real[4096];
    cr_assert_not_null(realpath(mod, real));
    cr_assert_eq(run_with(mod, "--prompt hi --backend hip --max-tokens 3 --json"), 0, "%s", err);
    cJSON *j = cJSON_Parse(out);
    cr_assert_not_null(j, "%s", out);
    cr_assert_str_eq(cJSON_GetStringValue(vt_test_get(j, "backend")), "hip");
    cJSON_Delete(j);

    char cap[128];
    snprintf(cap, sizeof cap, "%s/gpu.json", dir);
    int rc = vt_test_sh(dir, out, sizeof out, err, sizeof err,
                        "VT_HIP_MODULE='%s' '%s-capture' --runner engine --backend hip --model '%s' --prompts "
                        "'%s/fixtures/prompts/default16.jsonl' --max-tokens 4 --repetitions 2 --no-timestamp "
                        "--out '%s'",
                        mod, VT_BIN, model.path, VT_SOURCE_DIR, cap);
    cr_assert_eq(rc, 0, "%s", err);
    cJSON *c = vt_test_load_json(cap);
    const cJSON *r = vt_test_get(vt_test_get(c, "runtime"), "runner");
    cr_assert_str_eq(cJSON_GetStringValue(vt_test_get(r, "backend")), "hip");
    cr_assert_str_eq(cJSON_GetStringValue(vt_test_get(r, "device")), "fake GPU 0 (a test module)");
    cr_assert_str_eq(cJSON_GetStringValue(vt_test_get(r, "library")), real);
    const char *detail = cJSON_GetStringValue(vt_test_get(r, "detail"));
    char want[256];
    snprintf(want, sizeof want, "sha256 %s;", sha.hex);
    cr_assert(strstr(detail, want) != NULL, "%s lacks %s", detail, want);
    cr_assert(strstr(detail, "fake runtime 1, driver 2") != NULL, "%s", detail);
    cr_assert(strstr(detail, "sources sha256 0000") != NULL, "%s", detail);
    cJSON_Delete(c);
}

Test(gpu_backend, pairs_and_the_oracle_backend)
{
    /* The engine twice on the CPU is one computation: refused. */
    int rc = vt_test_sh(dir, out, sizeof out, err, sizeof err,
                        "'%s' agree --model '%s' --local engine --oracle engine --prompts 1", VT_BIN, model.path);
    cr_assert_eq(rc, 2, "%s", err);
    cr_assert(strstr(err, "refused by rule distinct") != NULL, "%s", err);
    /* On the GPU (here the stand-in) against the CPU: a pair, and it runs. */
    rc = vt_test_sh(dir, out, sizeof out, err, sizeof err,
                    "VT_HIP_MODULE='%s' '%s' agree --model '%s' --local engine --oracle engine --prompts 1 "
                    "--backend hip",
                    fake("ok"), VT_BIN, model.path);
    cr_assert(rc == 0 || rc == 1, "exit %d: %s", rc, err);
    /* llama.cpp computes on the CPU only. */
    rc = vt_test_sh(dir, out, sizeof out, err, sizeof err,
                    "'%s' run --runner llamacpp --model '%s' --prompt hi --backend hip", VT_BIN, model.path);
    cr_assert_eq(rc, 2, "%s", err);
    cr_assert(strstr(err, "--backend hip: expected cpu") != NULL, "%s", err);
}
