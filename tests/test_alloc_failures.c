/* Out of memory, on purpose (SQLite's way): this suite replaces malloc,
 * calloc and realloc for its whole process (glibc lets a program do so;
 * every library's allocation, cJSON's and OpenSSL's included, comes here)
 * and makes the n-th allocation fail, for n = 0, 1, 2, ... until an
 * operation completes without reaching it. Each time the operation must
 * report the failure as an error (or succeed where it could do without),
 * never crash, and work again once allocations succeed.
 *
 * Not in the sanitizer build: ASan replaces malloc itself. */
#include <criterion/criterion.h>

#include "capture/canonical_json.h"
#include "capture/capture.h"
#include "capture/capture_read.h"
#include "capture/strict.h"
#include "common/vt_json.h"
#include "compare/guards.h"
#include "compare/neartie_report.h"
#include "evidence/seal.h"
#include "provenance/provenance.h"
#include "tests/support/vt_test.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------- the allocator */

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);

static long fail_at = -1; /* the allocation to fail (counting from 0), or -1 */
static char last_error[1100]; /* an operation's last message, for the assertions */
static long allocs;       /* allocations since armed */
static int failed;        /* the armed one was reached */
static int show_where;    /* VT_OOM_WHERE: print the failed allocation's stack */

/* Whose allocation it is: vt's (libvt is linked into this program) or
 * cJSON's, whose failures vt must handle. Others' are never failed: a
 * library that mishandles its own out-of-memory (libarchive's tar reader
 * does) is not vt's to test. */
extern char __executable_start, etext;
static int ours(const void *caller)
{
    if ((const char *)caller >= &__executable_start && (const char *)caller < &etext)
        return 1;
    Dl_info info;
    return dladdr(caller, &info) && info.dli_fname && strstr(info.dli_fname, "libcjson");
}

static int fail_now(const void *caller)
{
    if (fail_at < 0 || !ours(caller))
        return 0;
    if (allocs++ == fail_at) {
        failed = 1;
        if (show_where) {
            void *frames[32];
            fprintf(stderr, "allocation %ld fails here:\n", fail_at);
            backtrace_symbols_fd(frames, backtrace(frames, 32), 2);
        }
        return 1;
    }
    return 0;
}

#define CALLER __builtin_return_address(0)
void *malloc(size_t n) { return fail_now(CALLER) ? NULL : __libc_malloc(n); }
void *calloc(size_t a, size_t b) { return fail_now(CALLER) ? NULL : __libc_calloc(a, b); }
void *realloc(void *p, size_t n) { return fail_now(CALLER) ? NULL : __libc_realloc(p, n); }
/* Through glibc, these would allocate as glibc, not as their caller. */
char *strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = fail_now(CALLER) ? NULL : __libc_malloc(n);
    return d ? memcpy(d, s, n) : NULL;
}
char *strndup(const char *s, size_t max)
{
    size_t n = strnlen(s, max);
    char *d = fail_now(CALLER) ? NULL : __libc_malloc(n + 1);
    if (!d)
        return NULL;
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

static void arm(long n)
{
    allocs = 0;
    failed = 0;
    show_where = getenv("VT_OOM_WHERE") != NULL;
    fail_at = n;
}

static void disarm(void) { fail_at = -1; }

/* Runs op(ctx) with allocation n failing, for every n it reaches: op
 * returns VT_OK or an error code; with the failure reached it must not
 * crash (a crash fails the test), and without it (past the last
 * allocation) it must give VT_OK. Where it says VT_OK despite the failure,
 * every file in outputs (NULL-terminated, may be NULL) must hold what an
 * operation without a failure writes: a failure is reported, or it did
 * not matter, never swallowed into other bytes. Returns how many
 * allocations op made. */
static long each_failure_of(int (*op)(void *ctx), void *ctx, const char *what, const char *const *outputs);
static long each_failure(int (*op)(void *ctx), void *ctx, const char *what)
{
    return each_failure_of(op, ctx, what, NULL);
}
/* With VT_OOM_TRACE, a crash prints where it happened. */
static void crashed(int sig)
{
    void *frames[64];
    int n = backtrace(frames, 64);
    backtrace_symbols_fd(frames, n, 2);
    signal(sig, SIG_DFL);
    raise(sig);
}

static long each_failure_of(int (*op)(void *ctx), void *ctx, const char *what, const char *const *outputs)
{
    char *want[8] = { 0 };
    size_t want_len[8] = { 0 };
    int n_out = 0;
    if (outputs) {
        cr_assert_eq(op(ctx), VT_OK, "%s: fails without a failed allocation: %s", what, last_error);
        for (; outputs[n_out]; n_out++) {
            cr_assert_lt(n_out, 8);
            want[n_out] = vt_test_slurp(outputs[n_out], &want_len[n_out]);
            cr_assert_not_null(want[n_out], "%s: %s not written", what, outputs[n_out]);
        }
    }
    if (getenv("VT_OOM_TRACE")) {
        signal(SIGSEGV, crashed);
        signal(SIGABRT, crashed);
    }
    /* To find a crash: VT_OOM_TRACE=1 names each n on stderr before it runs,
     * VT_OOM_FROM=n starts there (under gdb, say); VT_OOM_WHERE=1 prints
     * the stack of each allocation made to fail. */
    const char *trace = getenv("VT_OOM_TRACE"), *from = getenv("VT_OOM_FROM");
    for (long n = from ? atol(from) : 0;; n++) {
        if (trace)
            fprintf(stderr, "%s: allocation %ld fails\n", what, n);
        arm(n);
        int rc = op(ctx);
        disarm();
        if (!failed) {
            cr_assert_eq(rc, VT_OK, "%s: fails without a failed allocation: %d: %s", what, rc, last_error);
            for (int k = 0; k < n_out; k++)
                free(want[k]);
            return n;
        }
        /* Out of memory is an error (exit 2), never a check that ran and
         * failed (VT_ECHECK, exit 1): no verdict is made of a failed allocation. */
        cr_assert(rc == VT_OK || rc == VT_EINPUT, "%s: allocation %ld failed: rc %d: %s", what, n, rc, last_error);
        for (int k = 0; rc == VT_OK && k < n_out; k++) {
            size_t len;
            char *got = vt_test_slurp(outputs[k], &len);
            if (getenv("VT_OOM_KEEP") && got && !(len == want_len[k] && memcmp(got, want[k], len) == 0)) {
                vt_test_spit("/tmp/vt-oom-got", got, len); /* to compare by hand */
                vt_test_spit("/tmp/vt-oom-want", want[k], want_len[k]);
            }
            cr_assert(got && len == want_len[k] && memcmp(got, want[k], len) == 0,
                      "%s: allocation %ld failed, it reported success, and %s differs from what it writes without "
                      "a failure", what, n, outputs[k]);
            free(got);
        }
        cr_assert_lt(n, 2000000, "%s: more allocations than expected", what);
    }
}

/* --------------------------------------------------------- operations */

typedef struct fixture {
    char dir[64];
    char capture[128], oracle[128], scores[128], manifest[128], model[128];
    char cmd_out[1 << 14], cmd_err[1 << 14];
} fixture;

static fixture fx;

static void make_fixture(void)
{
    memset(&fx, 0, sizeof fx);
    snprintf(fx.dir, sizeof fx.dir, "/tmp/vt-oom-XXXXXX");
    cr_assert_not_null(mkdtemp(fx.dir));
    snprintf(fx.model, sizeof fx.model, "%s/m.gguf", fx.dir);
    snprintf(fx.capture, sizeof fx.capture, "%s/L.json", fx.dir);
    snprintf(fx.oracle, sizeof fx.oracle, "%s/O.json", fx.dir);
    snprintf(fx.scores, sizeof fx.scores, "%s/S.json", fx.dir);
    snprintf(fx.manifest, sizeof fx.manifest, "%s/manifest.json", fx.dir);
    char prompts[160];
    snprintf(prompts, sizeof prompts, "%s/p.jsonl", fx.dir);
    static const char lines[] = "{\"id\":\"a\",\"text\":\"Hello\"}\n{\"id\":\"b\",\"tokens\":[1,2,3]}\n";
    vt_test_spit(prompts, lines, sizeof lines - 1);
    cr_assert_eq(VT_TEST_SH(&fx, "'%s' fixture make --arch qwen3 --preset tiny --weights Q8_0 --seed 1 -o '%s' && "
                                 "'%s' provenance manifest make '%s' -o '%s' && "
                                 "'%s' capture --runner engine --model '%s' --prompts '%s' --max-tokens 3 --repetitions 2 "
                                 "--no-timestamp --out '%s' --logits-out '%s.logits' && "
                                 "'%s' capture --runner llamacpp --model '%s' --prompts '%s' --max-tokens 3 "
                                 "--repetitions 2 --no-timestamp --out '%s' --logits-out '%s.logits' && "
                                 "'%s' capture --runner llamacpp --model '%s' --score-prefix-of '%s' --no-timestamp "
                                 "--out '%s'",
                             VT_BIN, fx.model, VT_BIN, fx.model, fx.manifest, VT_BIN, fx.model, prompts, fx.capture,
                             fx.capture, VT_BIN, fx.model, prompts, fx.oracle, fx.oracle, VT_BIN, fx.model, fx.capture,
                             fx.scores),
                 0, "%s", fx.cmd_err);
}

static void remove_fixture(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", fx.dir);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(oom, .init = make_fixture, .fini = remove_fixture, .timeout = 900);

static int op_json(void *ctx)
{
    (void)ctx;
    static const char text[] = "{\"a\":[1,2.5,\"x\\u00e6\",{\"b\":null,\"c\":true}],\"d\":\"e\"}";
    vt_error err;
    cJSON *j = vt_json_parse(text, sizeof text - 1, "t.json", &err);
    if (!j)
        return err.code;
    cJSON_Delete(j);
    return VT_OK;
}

Test(oom, json_parse)
{
    cr_assert_gt(each_failure(op_json, NULL, "vt_json_parse"), 5);
}

/* Sealing a document: with VT_OK, the text is the sealed document. ctx:
 * the capture fixture's text, parsed and sealed again each time. */
static int op_canonical_seal(void *ctx)
{
    const char *want = ctx;
    cJSON *doc = vt_json_parse(want, strlen(want), "capture", NULL);
    if (!doc)
        return VT_EINPUT;
    cJSON_DeleteItemFromObjectCaseSensitive(doc, "seal");
    vt_error err;
    vt_error_clear(&err);
    vt_sha256_hex seal;
    char *text = NULL;
    size_t len = 0;
    int rc = vt_canonical_seal(doc, &seal, &text, &len, &err);
    cJSON_Delete(doc);
    if (rc == VT_OK && !(text && len == strlen(want) && memcmp(text, want, len) == 0))
        rc = -1; /* success without the sealed text */
    free(text);
    return rc;
}

Test(oom, canonical_seal)
{
    size_t n;
    char *want = vt_test_slurp(fx.capture, &n);
    cr_assert_not_null(want);
    cr_assert_gt(each_failure(op_canonical_seal, want, "vt_canonical_seal"), 5);
    free(want);
}

static int op_read_capture(void *ctx)
{
    vt_doc d;
    vt_error err;
    vt_error_clear(&err);
    vt_doc_source src = { .path = ctx, .kind = VT_DOC_CAPTURE };
    int rc = vt_doc_read(&src, &d, &err);
    if (rc)
        return rc;
    vt_reasons r = { 0 };
    vt_strict_check(&d, &r);
    int bad = r.oom && r.n == 0; /* a strict gate that lost every reason would pass */
    vt_reasons_free(&r);
    vt_doc_free(&d);
    return bad ? VT_EINPUT : VT_OK;
}

/* The top-k side file's check (capture/topk_file.c): a failed allocation
 * is reported as what it is, out of memory; a check that ran on after one
 * (into a buffer it never got) would report a malformed file instead. */
typedef struct topk_args {
    char path[256], sha[65];
    int32_t k, n_vocab;
    int64_t positions;
} topk_args;

static int op_topk_open(void *ctx)
{
    const topk_args *a = ctx;
    vt_topk_file f;
    vt_error err;
    vt_error_clear(&err);
    int rc = vt_topk_file_open(a->path, a->k, a->positions, a->n_vocab, a->sha, &f, &err);
    snprintf(last_error, sizeof last_error, "%s", err.msg);
    if (rc == VT_OK)
        vt_topk_file_close(&f);
    else if (!strstr(err.msg, "out of memory"))
        rc = VT_ECHECK; /* each_failure_of fails on it, naming the allocation */
    return rc;
}

Test(oom, the_top_k_check_says_out_of_memory)
{
    vt_doc d;
    vt_error err;
    vt_error_clear(&err);
    vt_doc_source src = { .path = fx.capture, .kind = VT_DOC_CAPTURE };
    cr_assert_eq(vt_doc_read(&src, &d, &err), VT_OK, "%s", err.msg);
    topk_args a;
    memset(&a, 0, sizeof a);
    cr_assert(d.topk.k > 0 && d.topk_path);
    snprintf(a.path, sizeof a.path, "%s", d.topk_path);
    a.k = d.topk.k;
    a.positions = d.n_positions_all;
    const cJSON *tf = cJSON_GetObjectItemCaseSensitive(d.meta, "topk_file");
    const cJSON *nv = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(d.meta, "model"), "gguf"), "n_vocab");
    cr_assert(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(tf, "sha256")) && cJSON_IsNumber(nv));
    snprintf(a.sha, sizeof a.sha, "%s", cJSON_GetObjectItemCaseSensitive(tf, "sha256")->valuestring);
    a.n_vocab = (int32_t)nv->valuedouble;
    vt_doc_free(&d);
    cr_assert_geq(each_failure(op_topk_open, &a, "vt_topk_file_open: the error says out of memory"), 1);
}

Test(oom, read_a_capture_and_its_strict_gate)
{
    cr_assert_gt(each_failure(op_read_capture, fx.capture, "vt_doc_read + vt_strict_check"), 50);
}

static int op_read_scores(void *ctx)
{
    vt_doc d;
    vt_error err;
    vt_doc_source src = { .path = ctx, .kind = VT_DOC_PREFIX };
    int rc = vt_doc_read(&src, &d, &err);
    if (rc == VT_OK)
        vt_doc_free(&d);
    return rc;
}

Test(oom, read_prefix_scores)
{
    cr_assert_gt(each_failure(op_read_scores, fx.scores, "vt_doc_read (prefix scores)"), 50);
}

/* vt-neartie end to end: read, guard, compare, publish. */
static int op_neartie(void *ctx)
{
    (void)ctx;
    char out[200];
    snprintf(out, sizeof out, "%s/R.json", fx.dir);
    unlink(out);
    vt_nt_opts o;
    vt_nt_opts_default(&o);
    o.local = fx.capture;
    o.oracle = fx.oracle;
    o.prefix_scores = fx.scores;
    o.model = fx.model;
    o.out = out;
    o.max_failed = 2;
    o.guard.allow_unverified = 1;
    vt_error err;
    vt_error_clear(&err);
    vt_neartie *c = vt_nt_open(&o, &err);
    snprintf(last_error, sizeof last_error, "%s", err.msg);
    if (!c)
        return err.code;
    int rc = vt_nt_guard(c, &err);
    if (rc == VT_OK && vt_nt_n_refusals(c))
        rc = VT_EINPUT; /* refused (out of memory in a guard is a refusal, never a pass) */
    if (rc == VT_OK)
        rc = vt_nt_compare(c, &err);
    if (rc == VT_OK)
        rc = vt_nt_publish(c, &err);
    snprintf(last_error, sizeof last_error, "%s%s", err.msg, vt_nt_n_refusals(c) ? vt_nt_refusal(c, 0) : "");
    vt_nt_free(c);
    return rc;
}

Test(oom, neartie_end_to_end)
{
    char out[200];
    snprintf(out, sizeof out, "%s/R.json", fx.dir);
    const char *outputs[] = { out, NULL };
    cr_assert_gt(each_failure_of(op_neartie, NULL, "vt-neartie", outputs), 200);
}

static int op_manifest(void *ctx)
{
    (void)ctx;
    vt_manifest m;
    vt_error err;
    vt_error_clear(&err);
    int rc = vt_manifest_read(fx.manifest, &m, &err);
    if (rc)
        return rc;
    char **problems = NULL;
    int n = 0;
    rc = vt_manifest_check(&m, fx.dir, &problems, &n, &err);
    vt_prov_lines_free(problems, n);
    vt_manifest_free(&m);
    return rc;
}

Test(oom, manifest_read_and_check)
{
    cr_assert_gt(each_failure(op_manifest, NULL, "vt_manifest_read + check"), 5);
}

/* A capture end to end: inputs, the runs (the engine on the tiny model),
 * the document, the strict gate, publication. ctx: the prompt file's name
 * in the fixture directory. */
static int op_capture(void *ctx)
{
    char prompts[200], out[200], topk[200];
    snprintf(prompts, sizeof prompts, "%s/%s", fx.dir, (const char *)ctx);
    snprintf(out, sizeof out, "%s/C.json", fx.dir);
    snprintf(topk, sizeof topk, "%s/C.topk", fx.dir);
    unlink(out);
    unlink(topk);
    vt_capture_opts o;
    vt_capture_opts_default(&o);
    o.runner = "engine";
    o.model = fx.model;
    o.prompts = prompts;
    o.out = out;
    o.model_manifest = fx.manifest;
    o.max_tokens = 2;
    o.top_k = 3;
    o.repetitions = 2; /* a later repeat is compared with what repeat 0 kept */
    o.settings.n_threads = 1;
    o.settings.n_ctx = 8;
    vt_error err;
    vt_error_clear(&err);
    vt_capture *c = vt_capture_open(&o, &err);
    if (!c)
        return err.code;
    int rc = vt_capture_run(c, &err);
    if (rc == VT_OK)
        rc = vt_capture_publish(c, 0, NULL, NULL, &err);
    snprintf(last_error, sizeof last_error, "%s", err.msg);
    vt_capture_free(c);
    return rc;
}

Test(oom, capture_end_to_end)
{
    char prompts[200];
    snprintf(prompts, sizeof prompts, "%s/one.jsonl", fx.dir);
    vt_test_spit(prompts, "{\"id\":\"a\",\"text\":\"Hi\"}\n", 23);
    char out[200], topk[200];
    snprintf(out, sizeof out, "%s/C.json", fx.dir);
    snprintf(topk, sizeof topk, "%s/C.topk", fx.dir);
    const char *outputs[] = { out, topk, NULL };
    cr_assert_gt(each_failure_of(op_capture, "one.jsonl", "vt-capture", outputs), 500);
}

/* A run that fails (its prompt does not fit n_ctx 8) is recorded as failed
 * with its message: out of memory there must not record another. */
Test(oom, capture_with_a_failed_run)
{
    char prompts[200];
    snprintf(prompts, sizeof prompts, "%s/fails.jsonl", fx.dir);
    static const char lines[] = "{\"id\":\"a\",\"text\":\"Hi\"}\n{\"id\":\"b\",\"tokens\":[1,2,3,4,5,6,7,8,9]}\n";
    vt_test_spit(prompts, lines, sizeof lines - 1);
    char out[200], topk[200];
    snprintf(out, sizeof out, "%s/C.json", fx.dir);
    snprintf(topk, sizeof topk, "%s/C.topk", fx.dir);
    const char *outputs[] = { out, topk, NULL };
    cr_assert_gt(each_failure_of(op_capture, "fails.jsonl", "vt-capture, one run failing", outputs), 500);
    size_t len;
    char *doc = vt_test_slurp(out, &len);
    cr_assert(doc && strstr(doc, "expected at most n_ctx 8"), "the failed run's message is in %s", out);
    free(doc);
}

/* vt-seal: create, verify, extract. */
static int op_seal(void *ctx)
{
    (void)ctx;
    char dir[200], archive[200], dest[200], cmd[700];
    snprintf(dir, sizeof dir, "%s/ev", fx.dir);
    snprintf(archive, sizeof archive, "%s/ev.tar.gz", fx.dir);
    snprintf(dest, sizeof dest, "%s/ev-out", fx.dir);
    snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s' '%s.seal.json'", dest, archive, archive);
    if (system(cmd) != 0)
        return VT_ECHECK;
    vt_error err;
    vt_error_clear(&err);
    vt_seal *s = vt_seal_new();
    if (!s)
        return VT_EINPUT;
    int rc = vt_seal_set_threads(s, 1, &err);
    if (rc == VT_OK)
        rc = vt_seal_create(s, dir, archive, &err);
    if (rc == VT_OK)
        rc = vt_seal_verify(s, archive, &err);
    if (rc == VT_OK)
        rc = vt_seal_extract(s, archive, dest, &err);
    snprintf(last_error, sizeof last_error, "%s", err.msg);
    vt_seal_free(s);
    return rc;
}

Test(oom, seal_create_verify_extract)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s/ev/sub' && cp '%s' '%s/ev/' && echo hi > '%s/ev/sub/a.txt'", fx.dir,
             fx.capture, fx.dir, fx.dir);
    cr_assert_eq(system(cmd), 0);
    char archive[200], sealj[200], member[200];
    snprintf(archive, sizeof archive, "%s/ev.tar.gz", fx.dir);
    snprintf(sealj, sizeof sealj, "%s/ev.tar.gz.seal.json", fx.dir);
    snprintf(member, sizeof member, "%s/ev-out/sub/a.txt", fx.dir);
    const char *outputs[] = { archive, sealj, member, NULL };
    cr_assert_gt(each_failure_of(op_seal, NULL, "vt-seal", outputs), 50);
}

/* Package verification: the pinned npm tarball against its lock, and a wheel. */
static int op_npm(void *ctx)
{
    (void)ctx;
    vt_package_report r;
    vt_error err;
    vt_error_clear(&err);
    int rc = vt_package_verify_npm(VT_DEPS_DIR "/npm/node-llama-cpp-linux-x64-3.22.1.tgz",
                                   VT_SOURCE_DIR "/oracle/llamacpp.lock.json", "@node-llama-cpp/linux-x64", NULL, NULL,
                                   0, &r, &err);
    snprintf(last_error, sizeof last_error, "%s", err.msg);
    if (rc == VT_OK) {
        rc = r.verified ? VT_OK : VT_ECHECK;
        vt_package_report_free(&r);
    }
    return rc;
}

Test(oom, verify_npm_package)
{
    cr_assert_gt(each_failure(op_npm, NULL, "vt_package_verify_npm"), 20);
}

/* vt agree's comparison, on runners of the test's own (runner.h). */
#include "compare/agree.h"
#include "compare/kld_corpus.h"

static int oom_fake_open(const vt_runner_settings *s, void **state, vt_error *err)
{
    (void)s;
    (void)err;
    *state = NULL;
    return VT_OK;
}
static int oom_fake_reset(void *state, vt_error *err)
{
    (void)state;
    (void)err;
    return VT_OK;
}
static int oom_fake_eval(void *state, const int32_t *tokens, int32_t n, int all, float *logits, vt_error *err)
{
    (void)state;
    (void)tokens;
    (void)err;
    for (int32_t i = 0; i < (all ? n : 1); i++)
        for (int v = 0; v < 16; v++)
            logits[(size_t)i * 16 + v] = (float)((v * 5 + i) % 7);
    return VT_OK;
}
static int32_t oom_fake_n_vocab(void *state)
{
    (void)state;
    return 16;
}
static void oom_fake_identity(void *state, vt_runner_identity *out)
{
    (void)state;
    *out = (vt_runner_identity){ "fake", "1", "cpu", "cpu", "", "" };
}
static void oom_fake_close(void *state) { (void)state; }
static const vt_runner_ops oom_fake_ops = { .name = "fake", .open = oom_fake_open, .reset = oom_fake_reset,
                                            .eval = oom_fake_eval, .n_vocab = oom_fake_n_vocab,
                                            .identity = oom_fake_identity, .close = oom_fake_close };

static int op_agree(void *ctx)
{
    vt_runner **r = ctx;
    static const int32_t prompt[3] = { 1, 2, 3 };
    const int32_t *prompts[2] = { prompt, prompt };
    const int32_t lens[2] = { 3, 2 };
    vt_agree_prompt per[2];
    vt_agree_summary sum;
    vt_error err;
    vt_error_clear(&err);
    int rc = vt_agree_run(r[0], r[1], prompts, lens, 2, 4, 500.0, per, &sum, &err);
    if (rc == VT_OK && (sum.n_prompts != 2 || sum.strict != 2))
        rc = VT_ECHECK; /* a comparison that went on after a failure would miscount */
    return rc;
}

Test(oom, agree_on_two_runners)
{
    vt_runner_settings s;
    vt_runner_settings_default(&s);
    s.model_path = "none";
    s.n_ctx = 16;
    s.n_batch = 16;
    vt_error err;
    vt_error_clear(&err);
    vt_runner *r[2] = { vt_runner_open(&oom_fake_ops, &s, &err), vt_runner_open(&oom_fake_ops, &s, &err) };
    cr_assert(r[0] && r[1], "%s", err.msg);
    cr_assert_gt(each_failure(op_agree, r, "vt_agree_run"), 5);
    vt_runner_close(r[0]);
    vt_runner_close(r[1]);
}

/* vt kld's corpus metrics on two runners: every allocation (the logits of a
 * chunk, the accumulator's rows) failing in turn gives an error, never a
 * result made of what was not computed. */
static int op_kld(void *ctx)
{
    vt_runner **r = ctx;
    static const int32_t text[12] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 };
    vt_kld_corpus_result res;
    vt_error err;
    vt_error_clear(&err);
    int rc = vt_kld_corpus(r[0], r[1], text, 12, 4, 0, &res, &err);
    snprintf(last_error, sizeof last_error, "%s", err.msg);
    if (rc == VT_OK && (res.chunks != 3 || res.m.positions != 6 || res.m.kld_max != 0.0))
        rc = VT_ECHECK; /* a run that went on after a failure would miscount */
    return rc;
}

Test(oom, kld_corpus_on_two_runners)
{
    vt_runner_settings s;
    vt_runner_settings_default(&s);
    s.model_path = "none";
    s.n_ctx = 16;
    s.n_batch = 16;
    vt_error err;
    vt_error_clear(&err);
    vt_runner *r[2] = { vt_runner_open(&oom_fake_ops, &s, &err), vt_runner_open(&oom_fake_ops, &s, &err) };
    cr_assert(r[0] && r[1], "%s", err.msg);
    cr_assert_gt(each_failure(op_kld, r, "vt_kld_corpus"), 2);
    vt_runner_close(r[0]);
    vt_runner_close(r[1]);
}
