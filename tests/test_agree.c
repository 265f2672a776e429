/* The engine against llama.cpp on tiny qwen3 fixtures: a small version of
 * `vt agree` (greedy generations, divergences scored under the near-tie rule
 * by llama.cpp teacher-forced on the engine's tokens). */
#include <criterion/criterion.h>

#include "tests/support/vt_test.h"

#include "common/vt_json.h"
#include "compare/agree.h"
#include "engine/gguf_file.h"
#include "engine/runner.h"
#include "engine/tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

enum { N_PROMPTS = 8, N_GEN = 16 };

static char tmpdir[64];

static void make_dir(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/vt-agree-XXXXXX");
    cr_assert_not_null(mkdtemp(tmpdir));
}

static void remove_dir(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    cr_assert_eq(system(cmd), 0);
}

static void make_fixture_of(const char *arch, const char *type, int seed, char *path, size_t cap)
{
    snprintf(path, cap, "%s/tiny-%s-%s-%d.gguf", tmpdir, arch, type, seed);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "'%s' fixture make --arch %s --preset tiny --weights %s --seed %d -o '%s' >/dev/null",
             VT_BIN, arch, type, seed, path);
    cr_assert_eq(vt_test_exit(system(cmd), cmd, NULL), 0, "%s", cmd);
}

static void make_fixture(const char *type, int seed, char *path, size_t cap)
{
    make_fixture_of("qwen3", type, seed, path, cap);
}

typedef struct prompts {
    int32_t *ids[N_PROMPTS];
    int32_t lens[N_PROMPTS];
    int32_t longest;
} prompts;

static void tokenize_prompts(const char *model, prompts *p)
{
    vt_error err;
    vt_error_clear(&err);
    vt_gguf *g = vt_gguf_open(model, &err);
    cr_assert_not_null(g, "%s", err.msg);
    vt_tokenizer *t = vt_tokenizer_open(g, &err);
    cr_assert_not_null(t, "%s", err.msg);
    vt_gguf_free(g);
    p->longest = 0;
    for (int i = 0; i < N_PROMPTS; i++) {
        const char *text = vt_agree_default_prompts[i];
        size_t len = strlen(text), n = 0;
        p->ids[i] = malloc((len + 8) * sizeof(int32_t));
        cr_assert_eq(vt_tokenize(t, text, len, 1, 1, p->ids[i], len + 8, &n, &err), VT_OK, "%s", err.msg);
        p->lens[i] = (int32_t)n;
        if (p->lens[i] > p->longest)
            p->longest = p->lens[i];
    }
    vt_tokenizer_free(t);
}

static void free_prompts(prompts *p)
{
    for (int i = 0; i < N_PROMPTS; i++)
        free(p->ids[i]);
}

static vt_runner *open_runner(const char *name, const char *model, int32_t n_ctx)
{
    vt_runner_settings s;
    vt_runner_settings_default(&s);
    s.model_path = model;
    s.n_ctx = n_ctx;
    s.n_batch = n_ctx;
    /* One thread: suites run side by side on CI's 2 cores, and spinning
     * thread pools of two runners would only fight (thread-count
     * determinism is the engine suite's and the CLI test's concern). */
    s.n_threads = 1;
    vt_error err;
    vt_error_clear(&err);
    vt_runner *r = vt_runner_open(vt_runner_find(name), &s, &err);
    cr_assert_not_null(r, "%s: %s", name, err.msg);
    return r;
}

static vt_agree_summary agree(const char *local_model, const char *oracle_model)
{
    prompts p;
    tokenize_prompts(local_model, &p);
    vt_runner *local = open_runner("engine", local_model, p.longest + N_GEN);
    vt_runner *oracle = open_runner("llamacpp", oracle_model, p.longest + N_GEN);
    vt_agree_summary sum;
    vt_error err;
    vt_error_clear(&err);
    cr_assert_eq(vt_agree_run(local, oracle, (const int32_t *const *)p.ids, p.lens, N_PROMPTS, N_GEN, 500.0,
                              NULL, &sum, &err),
                 VT_OK, "%s", err.msg);
    vt_runner_close(local);
    vt_runner_close(oracle);
    free_prompts(&p);
    return sum;
}

TestSuite(agree, .init = make_dir, .fini = remove_dir, .timeout = 600);

Test(agree, f32_is_strict_and_log_probs_agree_within_1e_3)
{
    char path[256];
    make_fixture("F32", 1, path, sizeof path);
    vt_agree_summary s = agree(path, path);
    cr_assert_eq(s.n_prompts, N_PROMPTS);
    cr_assert_eq(s.strict, N_PROMPTS, "strict %d, near-tie %d, failed %d", s.strict, s.near_tie, s.failed);
    cr_assert_lt(s.max_abs_dlogprob_all, 1e-3, "max |dlogprob| %g nats", s.max_abs_dlogprob_all);
}

Test(agree, quantized_codecs_have_no_failed_prompt)
{
    static const char *const types[] = { "Q8_0", "Q4_K", "IQ4_XS", "BF16" };
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        char path[256];
        make_fixture(types[i], 1, path, sizeof path);
        vt_agree_summary s = agree(path, path);
        cr_log_info("%s: strict %d, near-tie %d, failed %d, max gap %.1f milli-nats, max |dlogprob| %.3g",
                    types[i], s.strict, s.near_tie, s.failed, s.max_gap_mnats, s.max_abs_dlogprob_token);
        cr_expect_eq(s.failed, 0, "%s: %d failed prompts, max gap %.1f milli-nats", types[i], s.failed,
                     s.max_gap_mnats);
        cr_expect_eq(s.strict + s.near_tie, N_PROMPTS);
    }
}

/* The check can fail: the oracle running another model (another seed) must
 * make prompts fail, with gaps far above the threshold. */
Test(agree, a_different_model_fails)
{
    char local[256], other[256];
    make_fixture("F32", 1, local, sizeof local);
    make_fixture("F32", 2, other, sizeof other);
    vt_agree_summary s = agree(local, other);
    cr_assert_gt(s.failed, N_PROMPTS / 2, "failed %d of %d", s.failed, N_PROMPTS);
    cr_assert_gt(s.max_gap_mnats, 500.0);
}

static int run_status(const char *args)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' %s >/dev/null 2>&1", VT_BIN, args);
    return vt_test_exit(system(cmd), cmd, NULL);
}

/* vt agree exits 0 when no prompt failed, and vt run --repeats checks
 * bit-identical repeats in both modes and with 1 and 2 threads. */
Test(agree, cli_exit_codes_and_repeats)
{
    char path[256], args[600];
    make_fixture("Q4_0", 1, path, sizeof path);
    snprintf(args, sizeof args, "agree --model '%s' --prompts 4 --max-tokens 8", path);
    cr_assert_eq(run_status(args), 0);
    snprintf(args, sizeof args, "agree --model '%s' --cache-dtype fp8_e4m3", path);
    cr_assert_eq(run_status(args), 2);
    /* A runner against itself compares nothing: refused, with either runner. */
    snprintf(args, sizeof args, "agree --model '%s' --prompts 4 --max-tokens 8 --local engine --oracle engine", path);
    cr_assert_eq(run_status(args), 2);
    snprintf(args, sizeof args, "agree --model '%s' --prompts 4 --max-tokens 8 --local llamacpp --oracle llamacpp",
             path);
    cr_assert_eq(run_status(args), 2);
    snprintf(args, sizeof args, "agree --model '%s' --prompts 4 --max-tokens 8 --local llamacpp --oracle engine", path);
    cr_assert_eq(run_status(args), 0);
    const char *modes[] = { "production", "eager" };
    for (int m = 0; m < 2; m++)
        for (int t = 1; t <= 2; t++) {
            snprintf(args, sizeof args,
                     "run --runner engine --model '%s' --prompt 'Once upon a time' --max-tokens 16 "
                     "--mode %s --threads %d --repeats 10",
                     path, modes[m], t);
            cr_assert_eq(run_status(args), 0, "%s", args);
        }
}

/* A runner of the test's own (runner.h: one table of functions) whose
 * vocabulary size it is told: logits that depend on the position only. */
static int32_t fake_vocab;
static int fake_open(const vt_runner_settings *s, void **state, vt_error *err)
{
    (void)s;
    (void)err;
    int32_t *nv = malloc(sizeof *nv);
    *nv = fake_vocab;
    *state = nv;
    return VT_OK;
}
static int fake_reset(void *state, vt_error *err)
{
    (void)state;
    (void)err;
    return VT_OK;
}
static int fake_eval(void *state, const int32_t *tokens, int32_t n, int all, float *logits, vt_error *err)
{
    (void)tokens;
    (void)err;
    int32_t nv = *(int32_t *)state;
    for (int32_t i = 0; i < (all ? n : 1); i++)
        for (int32_t v = 0; v < nv; v++)
            logits[(size_t)i * nv + v] = (float)((v * 7 + i) % 11) / 4.0f;
    return VT_OK;
}
static int32_t fake_n_vocab(void *state) { return *(int32_t *)state; }
static void fake_identity(void *state, vt_runner_identity *out)
{
    (void)state;
    *out = (vt_runner_identity){ "fake", "1", "cpu", "cpu", "", "" };
}
static void fake_close(void *state) { free(state); }
static const vt_runner_ops fake_ops = { .name = "fake", .open = fake_open, .reset = fake_reset, .eval = fake_eval,
                                        .n_vocab = fake_n_vocab, .identity = fake_identity, .close = fake_close };

static vt_runner *fake_runner(int32_t nv)
{
    vt_runner_settings s;
    vt_runner_settings_default(&s);
    s.model_path = "none";
    s.n_ctx = 64;
    s.n_batch = 64;
    fake_vocab = nv;
    vt_error err;
    vt_error_clear(&err);
    vt_runner *r = vt_runner_open(&fake_ops, &s, &err);
    cr_assert_not_null(r, "%s", err.msg);
    return r;
}

/* What vt_agree_run refuses, each beside the same call that runs. */
Test(agree, refuses_other_vocabularies_and_nothing_to_generate)
{
    static const int32_t prompt[3] = { 1, 2, 3 };
    const int32_t *prompts[1] = { prompt };
    const int32_t lens[1] = { 3 };
    vt_runner *a = fake_runner(10), *b = fake_runner(11), *c = fake_runner(10);
    vt_agree_summary sum;
    vt_error err;
    vt_error_clear(&err);
    cr_assert_eq(vt_agree_run(a, b, prompts, lens, 1, 4, 500.0, NULL, &sum, &err), VT_EINPUT);
    cr_assert(strstr(err.msg, "agree: vocabulary sizes differ: local 10, oracle 11"), "%s", err.msg);
    cr_assert_eq(vt_agree_run(a, c, prompts, lens, 1, 0, 500.0, NULL, &sum, &err), VT_EINPUT);
    cr_assert(strstr(err.msg, "agree: 0 tokens to generate: expected at least 1"), "%s", err.msg);
    /* The same vocabulary and tokens to generate: it runs, the same logits agree. */
    vt_error_clear(&err);
    cr_assert_eq(vt_agree_run(a, c, prompts, lens, 1, 4, 500.0, NULL, &sum, &err), VT_OK, "%s", err.msg);
    cr_assert_eq(sum.n_prompts, 1);
    cr_assert_eq(sum.strict, 1);
    cr_assert_eq(sum.max_abs_dlogprob_all, 0.0);
    vt_runner_close(a);
    vt_runner_close(b);
    vt_runner_close(c);
}

/* vt run's bad options: exit 2 and one line naming the option and what was
 * expected (a missing option says missing, not an empty value). */
Test(run_cli, bad_options_are_one_line_and_exit_2)
{
    make_dir();
    char model[256];
    make_fixture("Q8_0", 1, model, sizeof model);
    static const struct { const char *args, *line; } cases[] = {
        { "--model M --prompt hi", "vt run: --runner: missing: expected engine, llamacpp, transformers, openai or plugin:PATH.so" },
        { "--runner nope --model M --prompt hi", "vt run: --runner 'nope': expected engine, llamacpp, transformers, openai or plugin:PATH.so" },
        { "--runner engine --prompt hi", "vt run: --model: missing: expected a GGUF file" },
        { "--runner engine --model M", "vt run: --prompt/--prompt-tokens: missing: expected exactly one of the two" },
        { "--runner engine --model M --prompt hi --prompt-tokens 1",
          "vt run: --prompt/--prompt-tokens 'both given': expected exactly one of the two" },
        { "--runner engine --model M --prompt-tokens 1,x", "vt run: --prompt-tokens '1,x': expected comma-separated "
                                                          "token ids" },
        { "--runner engine --model M --prompt-tokens 1 --frobnicate 1",
          "vt run: option '--frobnicate': expected one of the options in 'vt run --help'" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char args[512], out[256], err[1024];
        const char *m = strstr(cases[i].args, " M");
        if (m)
            snprintf(args, sizeof args, "%.*s '%s'%s", (int)(m - cases[i].args), cases[i].args, model, m + 2);
        else
            snprintf(args, sizeof args, "%s", cases[i].args);
        int rc = vt_test_sh(tmpdir, out, sizeof out, err, sizeof err, "'%s' run %s", VT_BIN, args);
        cr_assert_eq(rc, 2, "vt run %s: exit %d: %s", args, rc, err);
        char want[600];
        snprintf(want, sizeof want, "%s\n", cases[i].line);
        cr_assert_str_eq(err, want, "vt run %s", args);
    }
    remove_dir();
}

/* The oracle's CPU variant is pinned, not left to the host's CPU model
 * (oracle/llamacpp_lib.c): by default icelake, the variant the engine
 * follows, wherever the CPU runs it, named in the runner's identity;
 * VT_GGML_CPU_VARIANT=best is ggml's own choice; a variant that is not
 * there, or a name that is not one, is exit 2 and one line. */
Test(kld_cli, the_oracles_cpu_variant_is_pinned_and_named)
{
    make_dir();
    char model[256], out[8192], err[2048];
    make_fixture("F32", 1, model, sizeof model);
    int rc = vt_test_sh(tmpdir, out, sizeof out, err, sizeof err,
                        "'%s' run --runner llamacpp --model '%s' --prompt-tokens 1,2,3 --max-tokens 2", VT_BIN, model);
    cr_assert_eq(rc, 0, "%s", err);
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512vbmi") && __builtin_cpu_supports("avx512vnni") &&
        __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl"))
        cr_assert(strstr(out, "CPU backend ") && strstr(out, "/libggml-cpu-icelake.so;"), "%s", out);
    rc = vt_test_sh(tmpdir, out, sizeof out, err, sizeof err,
                    "VT_GGML_CPU_VARIANT=best '%s' run --runner llamacpp --model '%s' --prompt-tokens 1,2,3 "
                    "--max-tokens 2", VT_BIN, model);
    cr_assert_eq(rc, 0, "%s", err);
    cr_assert(strstr(out, "/libggml-cpu-"), "%s", out);
    static const struct { const char *value, *line; } bad[] = {
        { "nosuch", "VT_GGML_CPU_VARIANT 'nosuch': " VT_SOURCE_DIR "/deps/linux-x64/bins/linux-x64/libggml-cpu-nosuch.so: "
                    "no such variant here" },
        { "ice/../lake", "VT_GGML_CPU_VARIANT 'ice/../lake': expected a variant name (icelake, haswell, ...) or best" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        rc = vt_test_sh(tmpdir, out, sizeof out, err, sizeof err,
                        "VT_GGML_CPU_VARIANT='%s' '%s' run --runner llamacpp --model '%s' --prompt-tokens 1,2,3 "
                        "--max-tokens 2", bad[i].value, VT_BIN, model);
        cr_assert_eq(rc, 2, "%s: exit %d: %s", bad[i].value, rc, err);
        char want[600];
        snprintf(want, sizeof want, "%s\n", bad[i].line);
        cr_assert_str_eq(err, want, "%s", bad[i].value);
    }
    remove_dir();
}

/* At one token (eager mode, as generation runs after the prompt) the
 * engine's qwen3 and qwen35 forward passes are llama.cpp's to the bit, in
 * every kind of weight codec: float, block integer, repacked, K-quant, IQ
 * and the mix; qwen35 with its recurrent layers (conv, gated delta net)
 * carried from token to token. The same check sees one planted weight row
 * (it can fail). */
Test(kld_cli, one_token_logits_are_llamacpps_bit_for_bit, .timeout = 900)
{
    make_dir();
    static const char *types[] = { "F32", "BF16", "Q8_0", "Q4_0", "Q4_K", "Q6_K", "IQ4_XS", "Q4_K_M",
                                   "F32", "Q8_0", "Q4_K", "Q4_K_M" };
    char model[256], out[8192], err[2048];
    for (size_t i = 0; i < sizeof types / sizeof *types; i++) {
        make_fixture_of(i < 8 ? "qwen3" : "qwen35", types[i], 1, model, sizeof model);
        int rc = vt_test_sh(tmpdir, out, sizeof out, err, sizeof err,
                            "'%s' kld --model '%s' --corpus '%s' --ctx 128 --chunks 1 --context 1 --mode eager",
                            VT_BIN, model, VT_SOURCE_DIR "/README.md");
        cr_assert_eq(rc, 0, "%s: exit %d: %s", types[i], rc, err);
        cr_assert(strstr(out, "127 positions;"), "%s: %s", types[i], out);
        cr_assert(strstr(out, "max |dlogit| 0, max |dlogprob| 0\n"), "%s: %s", types[i], out);
        cr_assert(strstr(out, "KL(oracle||local): mean 0 +- 0,"), "%s: %s", types[i], out);
    }
    /* The plant: in the last model, qwen35's mix. */
    int rc = vt_test_sh(tmpdir, out, sizeof out, err, sizeof err,
                        "VT_ENGINE_PLANT=blk.1.ffn_down.weight:3:1.001 '%s' kld --model '%s' --corpus '%s' "
                        "--ctx 128 --chunks 1 --context 1 --mode eager", VT_BIN, model, VT_SOURCE_DIR "/README.md");
    cr_assert_eq(rc, 0, "exit %d: %s", rc, err);
    cr_assert(strstr(out, "max |dlogit| ") && !strstr(out, "max |dlogit| 0,"), "a planted row shows: %s", out);
    remove_dir();
}

/* vt kld on the tiny F32 fixture: the engine and llama.cpp compute the same
 * forward pass, so their corpus distributions agree to float rounding; what
 * it refuses, it refuses in one line with exit 2. */
Test(kld_cli, f32_agrees_and_bad_input_is_refused)
{
    make_dir();
    char model[256], corpus[300], bad[300], out[8192], err[2048];
    make_fixture("F32", 1, model, sizeof model);
    snprintf(corpus, sizeof corpus, "%s", VT_SOURCE_DIR "/README.md");
    int rc = vt_test_sh(tmpdir, out, sizeof out, err, sizeof err,
                        "'%s' kld --model '%s' --corpus '%s' --ctx 64 --chunks 4 --threads 1", VT_BIN, model, corpus);
    cr_assert_eq(rc, 0, "exit %d: %s", rc, err);
    cr_assert(strstr(out, "4 chunks of 64 (positions 32..63 scored in each): 128 positions; KV cache: local f32, "
                          "oracle f32"), "%s", out);
    cr_assert(strstr(out, "actual-prefix gap of the local argmax under the oracle: max 0.000 milli-nats, 0 positions "
                          "above 500"), "%s", out);
    cr_assert(strstr(out, "top-1 agreement 1.000000 (128 of 128)"), "%s", out);
    const char *kl = strstr(out, "KL(oracle||local): mean ");
    cr_assert_not_null(kl, "%s", out);
    double mean = atof(kl + strlen("KL(oracle||local): mean "));
    cr_assert(mean >= 0 && mean < 1e-9, "KL mean %g: %s", mean, out);
    const char *lr = strstr(out, "ln(PPL(local)/PPL(oracle)) ");
    cr_assert_not_null(lr, "%s", out);
    cr_assert(fabs(atof(lr + strlen("ln(PPL(local)/PPL(oracle)) "))) < 1e-5, "%s", out);
    /* Long sequences: every position but the first, in buckets; the local
     * runner's own KV cache dtype changes the local side only. */
    rc = vt_test_sh(tmpdir, out, sizeof out, err, sizeof err,
                    "'%s' kld --model '%s' --corpus '%s' --ctx 128 --chunks 1 --context 1 --by-position 50 "
                    "--local-cache-dtype bf16 --threads 1", VT_BIN, model, corpus);
    cr_assert_eq(rc, 0, "exit %d: %s", rc, err);
    cr_assert(strstr(out, "(positions 1..127 scored in each): 127 positions; KV cache: local bf16, oracle f32"), "%s",
              out);
    const char *tb = strstr(out, "gaps>500\n");
    cr_assert_not_null(tb, "%s", out);
    int from[3], to[3];
    long long rows[3];
    tb += strlen("gaps>500\n");
    for (int b = 0; b < 3; b++) {
        cr_assert_eq(sscanf(tb, "%d %d %lld", &from[b], &to[b], &rows[b]), 3, "%s", out);
        tb = strchr(tb, '\n') + 1;
    }
    cr_assert(from[0] == 1 && to[0] == 51 && from[1] == 51 && to[2] == 128 && rows[0] + rows[1] + rows[2] == 127,
              "%s", out);
    cr_assert_eq(*tb, '\0', "three buckets: %s", out);
    mean = atof(strstr(out, "KL(oracle||local): mean ") + strlen("KL(oracle||local): mean "));
    cr_assert_gt(mean, 1e-9, "a bf16 KV cache moves the local distributions: %s", out);
    snprintf(bad, sizeof bad, "%s/bad.txt", tmpdir);
    FILE *f = fopen(bad, "wb");
    cr_assert_not_null(f);
    fputs("caf\xe9\n", f);
    fclose(f);
    static const struct { const char *args, *line; } cases[] = {
        { "--model M --corpus B", "expected UTF-8 text" },
        { "--model M --corpus C --ctx 100000", "vt kld: --ctx '100000': expected an integer in 4..65536" },
        { "--model M --corpus C --local engine --oracle engine", "refused by rule distinct" },
        { "--corpus C", "vt kld: --model '': expected a GGUF file" },
        { "--model M", "vt kld: --corpus '': expected a UTF-8 text file" },
        { "--model M --corpus C --ctx 64 --context 64", "vt kld: --context 64: expected below --ctx 64" },
        { "--model M --corpus C --context 0", "vt kld: --context '0': expected an integer in 1..65535" },
        { "--model M --corpus C --by-position 0", "vt kld: --by-position '0': expected an integer in 1..65536" },
        { "--model M --corpus C --local-cache-dtype f8", "vt kld: --local-cache-dtype 'f8': expected auto, f32" },
        { "--model M --corpus /nonexistent/c.txt", "/nonexistent/c.txt" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char args[1024] = "";
        for (const char *a = cases[i].args; *a; a++) {
            size_t k = strlen(args);
            if ((*a == 'M' || *a == 'B' || *a == 'C') && a[-1] == ' ' && (a[1] == ' ' || !a[1]))
                snprintf(args + k, sizeof args - k, "'%s'", *a == 'M' ? model : *a == 'B' ? bad : corpus);
            else
                snprintf(args + k, sizeof args - k, "%c", *a);
        }
        rc = vt_test_sh(tmpdir, out, sizeof out, err, sizeof err, "'%s' kld %s", VT_BIN, args);
        cr_assert_eq(rc, 2, "vt kld %s: exit %d: %s", args, rc, err);
        cr_assert(strstr(err, cases[i].line) && !strchr(err, '\n')[1], "vt kld %s: %s", args, err);
    }
    remove_dir();
}

/* ------------------------------------------------------------ --json */

/* stdout of a --json run: exactly one JSON document (vt's strict reader:
 * UTF-8, nothing after it) whose "schema" member is schema. */
/* vt agree --json: one document (vt.agree/1) with the numbers of the text
 * table of the same command, row by row, and the same exit status: 0 on the
 * engine as it is, 1 with an engine error planted (every prompt failed,
 * still the document, passed false); bad input is exit 2, one line on
 * stderr and nothing on stdout. */
Test(agree, json_holds_the_tables_numbers_and_the_exit_status)
{
    char model[256];
    make_fixture("Q8_0", 1, model, sizeof model);
    static char text[1 << 16], json[1 << 18], err[4096];
    static const char *const plants[] = { "", "VT_ENGINE_PLANT=blk.0.ffn_down.weight:5:8 " };
    for (int k = 0; k < 2; k++) {
        int rt = vt_test_sh(tmpdir, text, sizeof text, err, sizeof err,
                            "%s'%s' agree --model '%s' --prompts 4 --max-tokens 8", plants[k], VT_BIN, model);
        cr_assert_eq(rt, k, "%s: exit %d: %s", plants[k], rt, err);
        int rj = vt_test_sh(tmpdir, json, sizeof json, err, sizeof err,
                            "%s'%s' agree --model '%s' --prompts 4 --max-tokens 8 --json", plants[k], VT_BIN, model);
        cr_assert_eq(rj, rt, "--json: exit %d, the table's %d: %s", rj, rt, err);
        cJSON *doc = vt_test_json_doc(json, "vt.agree/1");
        cr_assert_eq(vt_test_num(doc, "max_tokens"), 8);
        cr_assert_eq(vt_test_num(doc, "threshold_mnats"), 500);
        cr_assert_str_eq(vt_test_get(doc, "local")->valuestring, "engine");
        cr_assert_str_eq(vt_test_get(doc, "oracle")->valuestring, "llamacpp");
        const cJSON *prompts = vt_test_get(doc, "prompts");
        cr_assert_eq(cJSON_GetArraySize(prompts), 4);
        int p = 0;
        const cJSON *o;
        cJSON_ArrayForEach(o, prompts)
        {
            cr_assert_eq(vt_test_num(o, "index"), p);
            cr_assert_str_eq(vt_test_get(o, "text")->valuestring, vt_agree_default_prompts[p]);
            const cJSON *d = vt_test_get(o, "first_divergence");
            int pos = -1, lt = 0, ot = 0;
            if (!cJSON_IsNull(d)) {
                pos = (int)vt_test_num(d, "position");
                lt = (int)vt_test_num(vt_test_get(d, "local_token"), "id");
                ot = (int)vt_test_num(vt_test_get(d, "oracle_token"), "id");
                cr_assert(cJSON_IsString(vt_test_get(vt_test_get(d, "local_token"), "text")));
                cr_assert_neq(lt, ot, "prompt %d: a divergence of one token", p);
            }
            char line[512];
            snprintf(line, sizeof line, "%-3d %-13s %10d %8d %8d %12.3f %14.3g %14.3g", p,
                     vt_test_get(o, "class")->valuestring, pos, lt, ot, vt_test_num(o, "max_gap_mnats"),
                     vt_test_num(o, "max_abs_dlogprob_token"), vt_test_num(o, "max_abs_dlogprob_all"));
            vt_test_expect_line(text, line);
            p++;
        }
        const cJSON *s = vt_test_get(doc, "summary");
        char line[512];
        snprintf(line, sizeof line,
                 "summary: %d prompts x 8 tokens: strict %d, near-tie %d, failed %d; max gap %.3f milli-nats; "
                 "max |dlogprob| %.3g (local tokens), %.3g (whole vocabulary)",
                 (int)vt_test_num(s, "prompts"), (int)vt_test_num(s, "strict"), (int)vt_test_num(s, "near_tie"), (int)vt_test_num(s, "failed"),
                 vt_test_num(s, "max_gap_mnats"), vt_test_num(s, "max_abs_dlogprob_token"), vt_test_num(s, "max_abs_dlogprob_all"));
        vt_test_expect_line(text, line);
        cr_assert_eq(cJSON_IsTrue(vt_test_get(doc, "passed")), k == 0);
        cr_assert_eq(vt_test_num(s, "failed") > 0, k == 1, "the plant fails prompts: %s", text);
        cJSON_Delete(doc);
    }
    int rc = vt_test_sh(tmpdir, json, sizeof json, err, sizeof err, "'%s' agree --model '%s' --prompts 0 --json",
                        VT_BIN, model);
    cr_assert_eq(rc, 2);
    cr_assert_str_eq(json, "", "no JSON on bad input");
    cr_assert(strchr(err, '\n') && !strchr(err, '\n')[1], "one line: %s", err);
}

/* vt kld --json: one document (vt.kld/1) with every number of the text,
 * the --by-position table included, at full precision (the text's
 * rounding of it is the text); bad input: exit 2, nothing on stdout. */
Test(kld_cli, json_holds_the_tables_numbers)
{
    make_dir();
    char model[256];
    make_fixture("F32", 1, model, sizeof model);
    static char text[1 << 16], json[1 << 18], err[4096];
    const char *args = "--ctx 128 --chunks 1 --context 1 --by-position 50 --local-cache-dtype bf16 --threads 1";
    int rc = vt_test_sh(tmpdir, text, sizeof text, err, sizeof err, "'%s' kld --model '%s' --corpus '%s' %s", VT_BIN,
                        model, VT_SOURCE_DIR "/README.md", args);
    cr_assert_eq(rc, 0, "exit %d: %s", rc, err);
    rc = vt_test_sh(tmpdir, json, sizeof json, err, sizeof err, "'%s' kld --model '%s' --corpus '%s' %s --json", VT_BIN,
                    model, VT_SOURCE_DIR "/README.md", args);
    cr_assert_eq(rc, 0, "exit %d: %s", rc, err);
    cJSON *doc = vt_test_json_doc(json, "vt.kld/1");
    const cJSON *lo = vt_test_get(doc, "local"), *oside = vt_test_get(doc, "oracle"), *kl = vt_test_get(doc, "kld");
    const cJSON *t1 = vt_test_get(doc, "top1"), *dp = vt_test_get(doc, "dp"), *gap = vt_test_get(doc, "gap");
    char line[2048];
    snprintf(line, sizeof line,
             "vt kld: %s, corpus %s: %d tokens, %d chunks of %d (positions %d..%d scored in each): %d "
             "positions; KV cache: local %s, oracle %s",
             vt_test_get(doc, "model")->valuestring, vt_test_get(doc, "corpus")->valuestring, (int)vt_test_num(doc, "tokens"),
             (int)vt_test_num(doc, "chunks"), (int)vt_test_num(doc, "ctx"), (int)vt_test_num(doc, "first_scored"), (int)vt_test_num(doc, "ctx") - 1,
             (int)vt_test_num(doc, "positions"), vt_test_get(lo, "cache_dtype")->valuestring,
             vt_test_get(oside, "cache_dtype")->valuestring);
    vt_test_expect_line(text, line);
    cr_assert_str_eq(vt_test_get(lo, "cache_dtype")->valuestring, "bf16");
    snprintf(line, sizeof line,
             "perplexity: local (%s) %.6f (mean NLL %.8f +- %.2g), oracle (%s) %.6f (mean NLL %.8f +- %.2g); "
             "ln(PPL(local)/PPL(oracle)) %.3g",
             vt_test_get(lo, "runner")->valuestring, vt_test_num(lo, "perplexity"), vt_test_num(lo, "mean_nll"),
             vt_test_num(lo, "mean_nll_unc"), vt_test_get(oside, "runner")->valuestring, vt_test_num(oside, "perplexity"),
             vt_test_num(oside, "mean_nll"), vt_test_num(oside, "mean_nll_unc"),
             vt_test_num(doc, "ln_ppl_ratio"));
    vt_test_expect_line(text, line);
    snprintf(line, sizeof line,
             "KL(oracle||local): mean %.6g +- %.2g, median %.6g, p90 %.6g, p99 %.6g, p99.9 %.6g, max %.6g "
             "(chunk %d position %d)",
             vt_test_num(kl, "mean"), vt_test_num(kl, "mean_unc"), vt_test_num(kl, "median"), vt_test_num(kl, "p90"), vt_test_num(kl, "p99"), vt_test_num(kl, "p99_9"),
             vt_test_num(kl, "max"), (int)vt_test_num(kl, "max_chunk"), (int)vt_test_num(kl, "max_position"));
    vt_test_expect_line(text, line);
    cr_assert_gt(vt_test_num(kl, "mean"), 1e-9, "a bf16 KV cache moves the local distributions");
    snprintf(line, sizeof line,
             "top-1 agreement %.6f (%d of %d); dp of the text's token: RMS %.6g, max %.6g; max |dlogit| %.6g, "
             "max |dlogprob| %.6g",
             vt_test_num(t1, "agreement"), (int)vt_test_num(t1, "same"), (int)vt_test_num(doc, "positions"), vt_test_num(dp, "rms"), vt_test_num(dp, "max_abs"),
             vt_test_num(doc, "max_abs_dlogit"), vt_test_num(doc, "max_abs_dlogprob"));
    vt_test_expect_line(text, line);
    snprintf(line, sizeof line,
             "actual-prefix gap of the local argmax under the oracle: max %.3f milli-nats, %d positions above %g",
             vt_test_num(gap, "max_mnats"), (int)vt_test_num(gap, "positions_above"), vt_test_num(gap, "threshold_mnats"));
    vt_test_expect_line(text, line);
    const cJSON *bp = vt_test_get(doc, "by_position");
    cr_assert_eq(vt_test_num(bp, "bucket"), 50);
    const cJSON *buckets = vt_test_get(bp, "buckets"), *q;
    cr_assert_eq(cJSON_GetArraySize(buckets), 3);
    cJSON_ArrayForEach(q, buckets)
    {
        snprintf(line, sizeof line, "%6d %6d %6d %12.4g %12.4g %8.4f %12.3f %9d", (int)vt_test_num(q, "from"),
                 (int)vt_test_num(q, "to"), (int)vt_test_num(q, "positions"), vt_test_num(q, "kld_mean"), vt_test_num(q, "kld_max"),
                 vt_test_num(q, "top1_agreement"), vt_test_num(q, "max_gap_mnats"), (int)vt_test_num(q, "positions_above"));
        vt_test_expect_line(text, line);
    }
    cJSON_Delete(doc);
    /* Without --by-position: null. */
    rc = vt_test_sh(tmpdir, json, sizeof json, err, sizeof err,
                    "'%s' kld --model '%s' --corpus '%s' --ctx 64 --chunks 1 --threads 1 --json", VT_BIN, model,
                    VT_SOURCE_DIR "/README.md");
    cr_assert_eq(rc, 0, "exit %d: %s", rc, err);
    doc = vt_test_json_doc(json, "vt.kld/1");
    cr_assert(cJSON_IsNull(vt_test_get(doc, "by_position")));
    cJSON_Delete(doc);
    rc = vt_test_sh(tmpdir, json, sizeof json, err, sizeof err, "'%s' kld --model '%s' --corpus /nonexistent --json",
                    VT_BIN, model);
    cr_assert_eq(rc, 2);
    cr_assert_str_eq(json, "", "no JSON on bad input");
    cr_assert(strchr(err, '\n') && !strchr(err, '\n')[1], "one line: %s", err);
    remove_dir();
}
