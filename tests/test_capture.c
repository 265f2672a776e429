/* vt-capture on tiny F32 Qwen3 fixtures (made by `vt fixture make` in a
 * temp dir), one runner thread, 4 tokens per run:
 *  - every strict refusal, each triggered alone where it can be, and its
 *    message: 9 repeats; a model byte changed after the manifest; no
 *    manifest; a resolved setting differing from the request (eager mode
 *    with --threads 2 runs 1 thread); no launcher manifest; a wheel with a
 *    tampered member; an oracle shared object tampered after unpacking;
 *  - publication refusals: output = input by path, symlink and hard link;
 *    the two outputs aliasing each other; an existing output without
 *    --overwrite; a failure injected between the two files of the group;
 *  - strict captures by both runners that publish, validate against
 *    capture/vt.capture.schema.json, recompute their seals, repeat byte
 *    for byte, and whose side file holds the logits they hash;
 *  - actual-prefix scoring of the engine's capture by llama.cpp: every gap
 *    0 on F32 weights; a tampered or malformed LOCAL refused;
 *  - prompt file refusals; canonical JSON; the schema validator; what both
 *    runners report as their resolved settings. */
#include <criterion/criterion.h>

#include "capture/canonical_json.h"
#include "engine/gguf_file.h"
#include "capture/capture.h"
#include "capture/json_schema.h"
#include "capture/logits_file.h"
#include "capture/side_file.h"
#include "capture/strict.h"
#include "capture/topk_file.h"
#include "common/vt_json.h"
#include "provenance/provenance.h"
#include "tests/support/vt_test.h"

#define slurp(path, len) vt_test_slurp(path, len)
#define exists(path) vt_test_exists(path)
#define sh(e, ...) VT_TEST_SH(e, __VA_ARGS__)
#define get(o, key) vt_test_get(o, key)
#define load_json(path) vt_test_load_json(path)

#include <archive.h>
#include <archive_entry.h>
#include <cjson/cJSON.h>
#include <dirent.h>
#include <fcntl.h>
#include <glob.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define NPM_TARBALL VT_DEPS_DIR "/npm/node-llama-cpp-linux-x64-3.22.1.tgz"
#define ORACLE_PKG VT_DEPS_DIR "/linux-x64"
#define SCHEMA VT_SOURCE_DIR "/capture/vt.capture.schema.json"

typedef struct env {
    char dir[64];
    char model[128], prompts[128], manifest[128], launcher[128];
    char out[128], logits[128], topk[128]; /* topk: out's default top-k side file */
    char cmd_out[65536], cmd_err[65536]; /* the last command's stdout and stderr */
} env;

/* ---------------------------------------------------------------- helpers */

static void spit(const char *path, const char *text) { vt_test_spit(path, text, strlen(text)); }

/* A temp dir with a tiny F32 model, two prompts, the model's manifest and
 * a launcher manifest. */
static void setup(env *e)
{
    memset(e, 0, sizeof *e);
    snprintf(e->dir, sizeof e->dir, "/tmp/vt-capture-XXXXXX");
    cr_assert_not_null(mkdtemp(e->dir));
    snprintf(e->model, sizeof e->model, "%s/tiny.gguf", e->dir);
    snprintf(e->prompts, sizeof e->prompts, "%s/prompts.jsonl", e->dir);
    snprintf(e->manifest, sizeof e->manifest, "%s/model.manifest.json", e->dir);
    snprintf(e->launcher, sizeof e->launcher, "%s/launcher.json", e->dir);
    snprintf(e->out, sizeof e->out, "%s/c.json", e->dir);
    snprintf(e->logits, sizeof e->logits, "%s/c.logits", e->dir);
    snprintf(e->topk, sizeof e->topk, "%s/c.topk", e->dir);
    cr_assert_eq(sh(e, "'%s' fixture make --arch qwen3 --preset tiny --weights F32 --seed 1 -o '%s'", VT_BIN,
                    e->model), 0, "%s", e->cmd_err);
    spit(e->prompts, "{\"id\":\"hello\",\"text\":\"Hello world\"}\n"
                     "\n"
                     "{\"id\":\"ids\",\"tokens\":[1007,11,879,0,100]}\n");
    vt_manifest m;
    vt_error err;
    vt_error_clear(&err);
    const char *files[] = { e->model };
    cr_assert_eq(vt_manifest_make_for(e->manifest, files, 1, &m, &err), VT_OK, "%s", err.msg);
    cr_assert_eq(vt_manifest_write(&m, e->manifest, NULL, &err), VT_OK, "%s", err.msg);
    vt_manifest_free(&m);
    spit(e->launcher, "{\"launcher\":\"test_capture\",\"image\":\"local\",\"command\":[\"vt-capture\"],\"n\":1.5}\n");
}

static void teardown(env *e)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "chmod -R u+w '%s'; rm -rf '%s'", e->dir, e->dir);
    cr_assert_eq(system(cmd), 0);
}

/* A strict capture command line, before any extra options. */
#define STRICT_ARGS "--model '%s' --prompts '%s' --threads 1 --max-tokens 4 --top-k 5 --no-timestamp --strict"

static int capture_strict(env *e, const char *runner, const char *out, const char *extra)
{
    return sh(e, "'%s' capture --runner %s " STRICT_ARGS " --repetitions 10 --model-manifest '%s' "
                 "--launcher-manifest '%s' --out '%s' %s",
              VT_BIN, runner, e->model, e->prompts, e->manifest, e->launcher, out, extra ? extra : "");
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* A refused strict capture: exit 1, the reason on stderr, nothing written.
 * One line per reason: the first names the output, the rule and how many
 * reasons there are; each further one its rule. */
static void expect_refused(env *e, int rc, const char *reason)
{
    cr_assert_eq(rc, 1, "exit %d, expected 1; stderr: %s", rc, e->cmd_err);
    cr_assert(strstr(e->cmd_err, reason), "stderr lacks '%s':\n%s", reason, e->cmd_err);
    cr_assert(!exists(e->out), "%s written", e->out);
    cr_assert(!exists(e->logits), "%s written", e->logits);
    cr_assert(!exists(e->topk), "%s written", e->topk);
    char first[300];
    snprintf(first, sizeof first, "vt-capture: %s: strict: not published by rule ", e->out);
    cr_assert(strncmp(e->cmd_err, first, strlen(first)) == 0, "first line: %s", e->cmd_err);
    cr_assert(strstr(e->cmd_err, " reason") && strstr(e->cmd_err, " reason") < strchr(e->cmd_err, '\n'), "%s",
              e->cmd_err);
    for (const char *l = strchr(e->cmd_err, '\n') + 1; *l; l = strchr(l, '\n') + 1) {
        cr_assert(strncmp(l, "vt-capture:   rule ", 19) == 0, "line: %s", l);
        if (!strchr(l, '\n'))
            break;
    }
}

/* The file is canonical JSON and a newline; both seals recompute; it
 * validates against the schema ($defs/capture or $defs/prefix_scores). */
static cJSON *check_document(const char *path, const char *def)
{
    size_t n;
    char *text = slurp(path, &n);
    cr_assert_not_null(text);
    cJSON *doc = cJSON_ParseWithLength(text, n);
    cr_assert_not_null(doc);
    vt_error err;
    vt_error_clear(&err);
    size_t cn;
    char *canon = vt_canonical_json(doc, &cn, &err);
    cr_assert_not_null(canon, "%s", err.msg);
    cr_assert(cn + 1 == n && memcmp(canon, text, cn) == 0 && text[cn] == '\n', "%s: not canonical", path);
    free(canon);
    free(text);

    /* seal: the document without its last member, seal. */
    cJSON *copy = cJSON_Duplicate(doc, 1);
    cJSON *seal = cJSON_DetachItemFromObjectCaseSensitive(copy, "seal");
    cr_assert(cJSON_IsString(seal));
    vt_sha256_hex h;
    cr_assert_eq(vt_canonical_sha256(copy, &h, &err), VT_OK, "%s", err.msg);
    cr_assert_str_eq(h.hex, seal->valuestring);
    cJSON_Delete(seal);
    cJSON_Delete(copy);
    /* workload_seal: {model{files,revision,arch,gguf}, prompts, settings.resolved}. */
    cJSON *w = cJSON_CreateObject(), *m = cJSON_AddObjectToObject(w, "model");
    const cJSON *model = cJSON_GetObjectItem(doc, "model");
    const char *keys[] = { "files", "revision", "arch", "gguf" };
    for (int i = 0; i < 4; i++)
        cJSON_AddItemToObject(m, keys[i], cJSON_Duplicate(cJSON_GetObjectItem(model, keys[i]), 1));
    cJSON_AddItemToObject(w, "prompts", cJSON_Duplicate(cJSON_GetObjectItem(doc, "prompts"), 1));
    cJSON_AddItemToObject(w, "settings",
                          cJSON_Duplicate(cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "settings"), "resolved"), 1));
    cr_assert_eq(vt_canonical_sha256(w, &h, &err), VT_OK, "%s", err.msg);
    cr_assert_str_eq(h.hex, cJSON_GetObjectItem(doc, "workload_seal")->valuestring);
    cJSON_Delete(w);
    cr_assert_eq(vt_capture_verify_seals(doc, &err), VT_OK, "%s", err.msg);

    cJSON *schema = load_json(SCHEMA);
    const cJSON *sub = vt_json_schema_at(schema, def);
    cr_assert_not_null(sub, "%s", def);
    cr_assert_eq(vt_json_schema_check(schema, sub, doc, &err), VT_OK, "%s: %s", path, err.msg);
    cJSON_Delete(schema);
    return doc;
}

/* Flips the first byte of needle found in the file. */
static void flip_in_file(const char *path, const char *needle)
{
    size_t n;
    char *s = slurp(path, &n);
    cr_assert_not_null(s);
    char *at = memmem(s, n, needle, strlen(needle));
    cr_assert_not_null(at, "%s: '%s' not found", path, needle);
    *at ^= 0x20;
    FILE *f = fopen(path, "r+b");
    cr_assert_not_null(f);
    fseek(f, at - s, SEEK_SET);
    fputc(*at, f);
    fclose(f);
    free(s);
}

/* ------------------------------------------------------ strict refusals */

Test(strict, refuses_nine_repeats)
{
    env e;
    setup(&e);
    int rc = sh(&e, "'%s' capture --runner engine " STRICT_ARGS " --repetitions 9 --model-manifest '%s' "
                    "--launcher-manifest '%s' --out '%s' --logits-out '%s'",
                VT_BIN, e.model, e.prompts, e.manifest, e.launcher, e.out, e.logits);
    expect_refused(&e, rc, "by rule repeats (1 reason): settings.resolved.repetitions: 9: expected at least 10 repeats");
    cr_assert_eq(count_lines(e.cmd_err), 1, "one reason only: %s", e.cmd_err);
    teardown(&e);
}

Test(strict, refuses_a_model_byte_changed_since_the_manifest)
{
    env e;
    setup(&e);
    /* A weight's byte near the end of the file: the model still loads. */
    FILE *f = fopen(e.model, "r+b");
    cr_assert_not_null(f);
    fseek(f, -5, SEEK_END);
    int ch = fgetc(f);
    fseek(f, -5, SEEK_END);
    fputc(ch ^ 1, f);
    fclose(f);
    int rc = capture_strict(&e, "engine", e.out, NULL);
    expect_refused(&e, rc, "model.files[0] 'tiny.gguf': size");
    cr_assert(strstr(e.cmd_err, "where model.manifest.json lists size"), "%s", e.cmd_err);
    cr_assert(strstr(e.cmd_err, "by rule model (2 reasons): model.problems[0]: model.manifest.json: "),
              "the manifest check's own line: %s", e.cmd_err);
    cr_assert_eq(count_lines(e.cmd_err), 2, "the manifest's check and the model file's: %s", e.cmd_err);
    teardown(&e);
}

Test(strict, refuses_without_a_manifest)
{
    env e;
    setup(&e);
    int rc = sh(&e, "'%s' capture --runner engine " STRICT_ARGS " --repetitions 10 --launcher-manifest '%s' --out '%s'",
                VT_BIN, e.model, e.prompts, e.launcher, e.out);
    expect_refused(&e, rc, "by rule model (1 reason): model.problems[0]: no model manifest (--model-manifest): "
                           "expected a model manifest that every model file matches");
    cr_assert_eq(count_lines(e.cmd_err), 1, "one reason only: %s", e.cmd_err);
    teardown(&e);
}

/* The real case: eager mode runs one thread whatever --threads asks. */
Test(strict, refuses_a_resolved_setting_that_differs)
{
    env e;
    setup(&e);
    int rc = sh(&e, "'%s' capture --runner engine --model '%s' --prompts '%s' --max-tokens 4 --no-timestamp --strict "
                    "--mode eager --threads 2 --repetitions 10 --model-manifest '%s' --launcher-manifest '%s' --out '%s'",
                VT_BIN, e.model, e.prompts, e.manifest, e.launcher, e.out);
    expect_refused(&e, rc, "settings.resolved.threads: 1: expected the requested 2");
    cr_assert_eq(count_lines(e.cmd_err), 1, "one reason only: %s", e.cmd_err);
    /* Allowed explicitly, it publishes with the difference recorded. */
    rc = sh(&e, "'%s' capture --runner engine --model '%s' --prompts '%s' --max-tokens 4 --no-timestamp --strict "
                "--mode eager --threads 2 --repetitions 10 --model-manifest '%s' --launcher-manifest '%s' --out '%s' "
                "--allow-setting-difference threads",
            VT_BIN, e.model, e.prompts, e.manifest, e.launcher, e.out);
    cr_assert_eq(rc, 0, "%s", e.cmd_err);
    cJSON *doc = check_document(e.out, "#/$defs/capture");
    const cJSON *diffs = get(get(doc, "settings"), "differences");
    int found = 0;
    for (const cJSON *d = diffs->child; d; d = d->next)
        if (strcmp(get(d, "field")->valuestring, "threads") == 0) {
            found = 1;
            cr_assert_eq(get(d, "requested")->valuedouble, 2);
            cr_assert_eq(get(d, "resolved")->valuedouble, 1);
            cr_assert(cJSON_IsTrue(get(d, "allowed")));
        }
    cr_assert(found);
    cJSON_Delete(doc);
    teardown(&e);
}

Test(strict, refuses_without_a_launcher_manifest)
{
    env e;
    setup(&e);
    int rc = sh(&e, "'%s' capture --runner engine " STRICT_ARGS " --repetitions 10 --model-manifest '%s' --out '%s'",
                VT_BIN, e.model, e.prompts, e.manifest, e.out);
    expect_refused(&e, rc, "by rule launcher (1 reason): launcher: null: expected a launcher manifest "
                           "(--launcher-manifest)");
    cr_assert_eq(count_lines(e.cmd_err), 1, "one reason only: %s", e.cmd_err);
    teardown(&e);
}

/* Copies a zip, flipping one byte of one member's data. */
static void tamper_wheel(const char *src, const char *dst, const char *member)
{
    struct archive *in = archive_read_new(), *out = archive_write_new();
    archive_read_support_format_zip(in);
    cr_assert_eq(archive_read_open_filename(in, src, 1 << 16), ARCHIVE_OK, "%s", archive_error_string(in));
    archive_write_set_format_zip(out);
    cr_assert_eq(archive_write_open_filename(out, dst), ARCHIVE_OK);
    struct archive_entry *ent;
    int tampered = 0;
    while (archive_read_next_header(in, &ent) == ARCHIVE_OK) {
        la_int64_t size = archive_entry_size(ent);
        char *data = malloc((size_t)size + 1);
        cr_assert_not_null(data);
        cr_assert_eq(archive_read_data(in, data, (size_t)size), size);
        if (strcmp(archive_entry_pathname(ent), member) == 0 && size > 0) {
            data[0] ^= 0x01;
            tampered = 1;
        }
        cr_assert_eq(archive_write_header(out, ent), ARCHIVE_OK, "%s", archive_error_string(out));
        cr_assert_eq(archive_write_data(out, data, (size_t)size), size);
        free(data);
    }
    cr_assert(tampered, "%s: no member %s", src, member);
    archive_read_free(in);
    cr_assert_eq(archive_write_close(out), ARCHIVE_OK);
    archive_write_free(out);
}

Test(strict, refuses_a_wheel_with_a_tampered_member)
{
    env e;
    setup(&e);
    glob_t g;
    cr_assert_eq(glob("/usr/share/python-wheels/pip-*.whl", 0, NULL, &g), 0, "no pip wheel");
    char whl[160];
    snprintf(whl, sizeof whl, "%s/%s", e.dir, strrchr(g.gl_pathv[0], '/') + 1);
    tamper_wheel(g.gl_pathv[0], whl, "pip/__init__.py");
    globfree(&g);
    char extra[200];
    snprintf(extra, sizeof extra, "--package '%s'", whl);
    int rc = capture_strict(&e, "engine", e.out, extra);
    expect_refused(&e, rc, "pip/__init__.py: SHA256 of the member is");
    cr_assert(strstr(e.cmd_err, "by rule package (2 reasons): package.problems[0]: "), "%s", e.cmd_err);
    /* And nothing that ran came from it: a wheel is bound to what ran
     * through the installed files the runtime loaded. */
    cr_assert(strstr(e.cmd_err, ": package.problems[1]: no installed files (--package-root)"), "%s", e.cmd_err);
    cr_assert_eq(count_lines(e.cmd_err), 2, "two reasons: %s", e.cmd_err);
    teardown(&e);
}

/* The oracle's libraries unpacked elsewhere, one byte of a loaded object
 * changed (in .comment, which is not loaded, so it still runs), the runner
 * pointed there: the loaded object differs from its tarball member. */
Test(strict, refuses_a_tampered_oracle_shared_object)
{
    env e;
    setup(&e);
    char root[128];
    snprintf(root, sizeof root, "%s/pkg", e.dir);
    cr_assert_eq(sh(&e, "cp -a '%s' '%s'", ORACLE_PKG, root), 0, "%s", e.cmd_err);
    char so[200];
    snprintf(so, sizeof so, "%s/bins/linux-x64/libggml-base.so", root);
    flip_in_file(so, "GCC: (");
    int rc = sh(&e, "VT_GGML_LIBDIR='%s/bins/linux-x64' '%s' capture --runner llamacpp " STRICT_ARGS
                    " --repetitions 10 --model-manifest '%s' --launcher-manifest '%s' --out '%s' --package '%s'",
                root, VT_BIN, e.model, e.prompts, e.manifest, e.launcher, e.out, NPM_TARBALL);
    expect_refused(&e, rc, "libggml-base.so");
    cr_assert(strstr(e.cmd_err, "by rule package (1 reason): package.problems[0]: "), "%s", e.cmd_err);
    cr_assert_eq(count_lines(e.cmd_err), 1, "one reason only: %s", e.cmd_err);
    teardown(&e);
}

/* llama.cpp's code comes from its npm package: under --strict the package
 * is required, and a launcher manifest must say who started what where. */
Test(strict, refuses_llamacpp_without_its_package)
{
    env e;
    setup(&e);
    int rc = capture_strict(&e, "llamacpp", e.out, NULL);
    expect_refused(&e, rc, "by rule package (1 reason): package: null: expected the package verified and bound to "
                           "what ran: the llamacpp runner's code comes from a package (--package)");
    /* With it, it publishes (strict_engine_and_llamacpp_captures_publish). */
    char extra[300];
    snprintf(extra, sizeof extra, "--package '%s'", NPM_TARBALL);
    cr_assert_eq(capture_strict(&e, "llamacpp", e.out, extra), 0, "%s", e.cmd_err);
    teardown(&e);
}

Test(strict, the_launcher_manifest_has_a_schema)
{
    env e;
    setup(&e);
    static const char *const bad[][2] = {
        { "{}", "launcher.manifest.launcher: missing: expected the launcher manifest's fields: launcher (what started "
                "the run), host or image (where it ran), command" },
        { "{\"launcher\":\"ci\",\"command\":\"vt\"}", "launcher.manifest.host: missing" },
        { "{\"launcher\":\"ci\",\"host\":\"\",\"command\":\"vt\"}", "launcher.manifest.host: empty" },
        { "{\"launcher\":\"ci\",\"image\":\"img\",\"command\":[]}", "launcher.manifest.command: not an array of "
                                                                    "non-empty strings" },
        { "{\"launcher\":\"ci\",\"image\":\"img\",\"command\":[\"vt\",3]}", "launcher.manifest.command: not an array "
                                                                           "of non-empty strings" },
        { "{\"launcher\":7,\"image\":\"img\",\"command\":\"vt\"}", "launcher.manifest.launcher: not a string" },
        { "[\"launcher\"]", "expected a JSON object (the launcher's manifest)" },
        /* Read strictly (common/vt_json.h): nothing after the document, no NUL in a string. */
        { "{\"launcher\":\"ci\",\"host\":\"h\",\"command\":\"vt\"}{}", "offset 43: expected " },
        { "{\"launcher\":\"ci\\u0000evil\",\"host\":\"h\",\"command\":\"vt\"}", "offset 15: field launcher: " },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        spit(e.launcher, bad[i][0]);
        int rc = capture_strict(&e, "engine", e.out, NULL);
        cr_assert_eq(rc, 2, "%s: exit %d: %s", bad[i][0], rc, e.cmd_err);
        cr_assert(strstr(e.cmd_err, "launcher.json: ") && strstr(e.cmd_err, bad[i][1]), "%s: %s", bad[i][0],
                  e.cmd_err);
        cr_assert(!exists(e.out));
    }
    spit(e.launcher, "{\"launcher\":\"ci\",\"host\":\"runner-7\",\"command\":\"make demo\"}");
    cr_assert_eq(capture_strict(&e, "engine", e.out, NULL), 0, "%s", e.cmd_err);
    /* The check itself, as the strict rule applies it to a document's
     * launcher.manifest (which the tool above refuses before): not an object. */
    char why[400];
    cJSON *not_object[3] = { cJSON_CreateArray(), cJSON_CreateString("ci"), cJSON_CreateNull() };
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(vt_launcher_manifest_check(not_object[i], why, sizeof why), 0);
        cr_assert(strstr(why, "launcher.manifest: not an object: expected the launcher manifest's fields"), "%s", why);
        cJSON_Delete(not_object[i]);
    }
    cJSON *ok = cJSON_Parse("{\"launcher\":\"ci\",\"host\":\"h\",\"command\":[\"make\",\"demo\"]}");
    cr_assert_eq(vt_launcher_manifest_check(ok, why, sizeof why), 1);
    cJSON_Delete(ok);
    teardown(&e);
}

/* A wheel given with --package is bound to what ran: its installed files
 * verify, but nothing this process loaded came from them. */
Test(strict, refuses_a_wheel_that_nothing_ran_from)
{
    env e;
    setup(&e);
    glob_t g;
    cr_assert_eq(glob("/usr/share/python-wheels/pip-*.whl", 0, NULL, &g), 0, "no pip wheel");
    char root[160];
    snprintf(root, sizeof root, "%s/site", e.dir);
    cr_assert_eq(sh(&e, "mkdir -p '%s' && cd '%s' && python3 -m zipfile -e '%s' .", root, root, g.gl_pathv[0]), 0,
                 "%s", e.cmd_err);
    char extra[400];
    snprintf(extra, sizeof extra, "--package '%s' --package-root '%s'", g.gl_pathv[0], root);
    globfree(&g);
    int rc = capture_strict(&e, "engine", e.out, extra);
    expect_refused(&e, rc, "by rule package (1 reason): package.problems[0]: no shared object this process loaded "
                           "comes from ");
    cr_assert(strstr(e.cmd_err, "the runner's code is not bound to the package"), "%s", e.cmd_err);
    teardown(&e);
}

/* Every refusal of vt_capture_open, each the one change from options that
 * open (checked first), with its message. */
typedef struct open_case {
    const char *message;
    void (*change)(env *e, vt_capture_opts *o);
} open_case;

static const char *const bogus_allow[] = { "temperatur" };
static void oc_runner(env *e, vt_capture_opts *o) { (void)e, o->runner = "nope"; }
static void oc_no_runner(env *e, vt_capture_opts *o) { (void)e, o->runner = NULL; }
static void oc_no_model(env *e, vt_capture_opts *o) { (void)e, o->model = NULL; }
static void oc_no_prompts(env *e, vt_capture_opts *o) { (void)e, o->prompts = NULL; }
static void oc_both_inputs(env *e, vt_capture_opts *o) { o->score_prefix_of = e->out; }
static void oc_no_out(env *e, vt_capture_opts *o) { (void)e, o->out = NULL; }
static void oc_repetitions(env *e, vt_capture_opts *o) { (void)e, o->repetitions = 0; }
static void oc_top_k(env *e, vt_capture_opts *o) { (void)e, o->top_k = -1; }
static void oc_topk_out(env *e, vt_capture_opts *o) { (void)e, o->top_k = 0, o->topk_out = "t.topk"; }
static void oc_seed(env *e, vt_capture_opts *o) { (void)e, o->settings.seed = VT_CAPTURE_MAX_SEED + 1; }
static void oc_package_kind(env *e, vt_capture_opts *o) { (void)e, o->package = "pkg.zip"; }
static void oc_package_missing(env *e, vt_capture_opts *o) { (void)e, o->package = "/nonexistent/pkg.whl"; }
static void oc_allow(env *e, vt_capture_opts *o)
{
    (void)e;
    o->allow_differences = bogus_allow;
    o->n_allow_differences = 1;
}
static void oc_side_dir(env *e, vt_capture_opts *o) { (void)e, o->logits_out = "/nonexistent/dir/c.logits"; }
static void oc_launcher(env *e, vt_capture_opts *o)
{
    static char p[4096]; /* outlives the change: the options point at it */
    snprintf(p, sizeof p, "%s/bad-launcher.json", e->dir);
    spit(p, "{\"launcher\":\"x\",\"host\":\"y\"}");
    o->launcher_manifest = p;
}
static void oc_arch(env *e, vt_capture_opts *o)
{
    static char p[4096];
    snprintf(p, sizeof p, "%s/no-arch.gguf", e->dir);
    vt_error err;
    vt_error_clear(&err);
    vt_gguf *g = vt_gguf_open(e->model, &err);
    vt_gguf_writer *w = vt_gguf_writer_from(g, &err);
    cr_assert_not_null(w, "%s", err.msg);
    cr_assert_eq(vt_gguf_writer_set_u32(w, "general.architecture", 7), VT_OK);
    cr_assert_eq(vt_gguf_writer_write_file(w, p, NULL, &err), VT_OK, "%s", err.msg);
    vt_gguf_writer_free(w);
    vt_gguf_free(g);
    o->model = p;
}

static const open_case open_cases[] = {
    { "--runner 'nope': expected engine, llamacpp, transformers, openai or plugin:PATH.so", oc_runner },
    { "--runner: missing: expected engine, llamacpp, transformers, openai or plugin:PATH.so", oc_no_runner },
    { "--model: missing: expected a GGUF file", oc_no_model },
    { "--prompts/--score-prefix-of: expected exactly one of the two", oc_no_prompts },
    { "--prompts/--score-prefix-of: expected exactly one of the two", oc_both_inputs },
    { "--out: missing: expected the capture's path", oc_no_out },
    { "--repetitions 0: expected at least 1", oc_repetitions },
    { "--top-k -1: expected at least 0 (0: no top-k side file)", oc_top_k },
    { "--topk-out t.topk: expected no top-k side file with --top-k 0", oc_topk_out },
    { "--seed 9007199254740992: expected at most 2^53-1", oc_seed },
    { "--package pkg.zip: expected a wheel (.whl) or an npm tarball (.tgz)", oc_package_kind },
    { "/nonexistent/pkg.whl: cannot read: No such file or directory", oc_package_missing },
    { "--allow-setting-difference 'temperatur': expected a settings field", oc_allow },
    { "/nonexistent/dir/c.logits: directory cannot be resolved: expected an existing directory", oc_side_dir },
    { "bad-launcher.json: launcher.manifest.command: missing", oc_launcher },
    { "no-arch.gguf: key general.architecture: expected a UTF-8 string", oc_arch },
};

Test(capture, every_refusal_of_the_options)
{
    env e;
    setup(&e);
    for (size_t i = 0; i < sizeof open_cases / sizeof open_cases[0]; i++) {
        vt_capture_opts o;
        vt_capture_opts_default(&o);
        o.runner = "engine";
        o.model = e.model;
        o.prompts = e.prompts;
        o.out = e.out;
        o.launcher_manifest = e.launcher;
        vt_error err;
        vt_error_clear(&err);
        vt_capture *c = vt_capture_open(&o, &err);
        cr_assert_not_null(c, "the base options: %s", err.msg);
        vt_capture_free(c);
        open_cases[i].change(&e, &o);
        vt_error_clear(&err);
        c = vt_capture_open(&o, &err);
        cr_assert_null(c, "case %zu opened: expected '%s'", i, open_cases[i].message);
        cr_assert_eq(err.code, VT_EINPUT);
        cr_assert(strstr(err.msg, open_cases[i].message), "case %zu: '%s', expected '%s'", i, err.msg,
                  open_cases[i].message);
    }
    /* The boundaries themselves open: the largest seed JSON holds exactly,
     * and an output named without .json (its top-k file: the name + .topk). */
    vt_capture_opts o;
    vt_capture_opts_default(&o);
    o.runner = "engine";
    o.model = e.model;
    o.prompts = e.prompts;
    o.out = "c";
    o.settings.seed = VT_CAPTURE_MAX_SEED;
    vt_error err;
    vt_error_clear(&err);
    vt_capture *c = vt_capture_open(&o, &err);
    cr_assert_not_null(c, "%s", err.msg);
    vt_capture_free(c);
    teardown(&e);
}

/* Outputs that can never be published are refused before anything runs:
 * the check alone, through the library. */
Test(capture, outputs_are_checked_before_the_runs)
{
    env e;
    setup(&e);
    vt_capture_opts o;
    vt_capture_opts_default(&o);
    o.runner = "engine";
    o.model = e.model;
    o.prompts = e.prompts;
    o.out = e.out;
    o.logits_out = e.prompts; /* over an input */
    vt_error err;
    vt_error_clear(&err);
    vt_capture *c = vt_capture_open(&o, &err);
    cr_assert_not_null(c, "%s", err.msg);
    cr_assert_eq(vt_capture_check_outputs(c, 0, &err), VT_EINPUT);
    cr_assert(strstr(err.msg, "prompts.jsonl"), "%s", err.msg);
    vt_capture_free(c);
    o.logits_out = e.logits;
    c = vt_capture_open(&o, &err);
    cr_assert_not_null(c, "%s", err.msg);
    cr_assert_eq(vt_capture_check_outputs(c, 0, &err), VT_OK, "%s", err.msg);
    vt_capture_free(c);
    teardown(&e);
}

Test(capture, zero_tokens_are_refused)
{
    env e;
    setup(&e);
    int rc = sh(&e, "'%s' capture --runner engine --model '%s' --prompts '%s' --max-tokens 0 --out '%s'", VT_BIN,
                e.model, e.prompts, e.out);
    cr_assert_eq(rc, 2, "%s", e.cmd_err);
    cr_assert(strstr(e.cmd_err, "--max-tokens '0': expected an integer in 1..1048576 (a prompt with no position "
                                "compares nothing)"), "%s", e.cmd_err);
    cr_assert(!exists(e.out));
    /* Through the library, the same refusal. */
    vt_capture_opts o;
    vt_capture_opts_default(&o);
    o.runner = "engine";
    o.model = e.model;
    o.prompts = e.prompts;
    o.out = e.out;
    o.max_tokens = 0;
    vt_error err;
    vt_error_clear(&err);
    cr_assert_null(vt_capture_open(&o, &err));
    cr_assert_eq(err.code, VT_EINPUT);
    cr_assert(strstr(err.msg, "--max-tokens 0: expected at least 1"), "%s", err.msg);
    teardown(&e);
}

/* -------------------------------------------------- publication refusals */

static void expect_alias_refused(env *e, const char *out, const char *extra, const char *input, const char *before)
{
    int rc = sh(e, "'%s' capture --runner engine --model '%s' --prompts '%s' --threads 1 --max-tokens 2 "
                   "--model-manifest '%s' --launcher-manifest '%s' --no-timestamp --overwrite --out '%s' %s",
                VT_BIN, e->model, e->prompts, e->manifest, e->launcher, out, extra ? extra : "");
    cr_assert_eq(rc, 2, "exit %d, expected 2: %s", rc, e->cmd_err);
    cr_assert(strstr(e->cmd_err, "vt-capture: "), "%s", e->cmd_err);
    cr_assert_eq(strchr(e->cmd_err, '\n') - e->cmd_err + 1, (long)strlen(e->cmd_err), "one line: %s", e->cmd_err);
    char *now = slurp(input, NULL);
    cr_assert(now && strcmp(now, before) == 0, "%s changed", input);
    free(now);
}

Test(publish, refuses_outputs_that_alias_inputs)
{
    env e;
    setup(&e);
    char *prompts = slurp(e.prompts, NULL), *launcher = slurp(e.launcher, NULL);
    /* By path, spelled differently. */
    char spelled[200];
    snprintf(spelled, sizeof spelled, "%s/./prompts.jsonl", e.dir);
    expect_alias_refused(&e, spelled, NULL, e.prompts, prompts);
    /* By symlink. */
    char sym[160];
    snprintf(sym, sizeof sym, "%s/link.json", e.dir);
    cr_assert_eq(symlink(e.launcher, sym), 0);
    expect_alias_refused(&e, sym, NULL, e.launcher, launcher);
    /* By hard link. */
    char hard[160];
    snprintf(hard, sizeof hard, "%s/hard.json", e.dir);
    cr_assert_eq(link(e.prompts, hard), 0);
    expect_alias_refused(&e, hard, NULL, e.prompts, prompts);
    /* The side file over the manifest. */
    char *manifest = slurp(e.manifest, NULL);
    char extra[200];
    snprintf(extra, sizeof extra, "--logits-out '%s'", e.manifest);
    expect_alias_refused(&e, e.out, extra, e.manifest, manifest);
    cr_assert(!exists(e.out));
    free(manifest);
    free(prompts);
    free(launcher);
    teardown(&e);
}

Test(publish, refuses_two_outputs_that_alias_each_other)
{
    env e;
    setup(&e);
    char same[200];
    snprintf(same, sizeof same, "%s/sub/../c.json", e.dir);
    char sub[160];
    snprintf(sub, sizeof sub, "%s/sub", e.dir);
    cr_assert_eq(mkdir(sub, 0755), 0);
    int rc = sh(&e, "'%s' capture --runner engine --model '%s' --prompts '%s' --threads 1 --max-tokens 2 "
                    "--no-timestamp --out '%s' --logits-out '%s'",
                VT_BIN, e.model, e.prompts, e.out, same);
    cr_assert_eq(rc, 2, "%s", e.cmd_err);
    cr_assert(strstr(e.cmd_err, "c.json"), "%s", e.cmd_err);
    cr_assert(!exists(e.out));
    teardown(&e);
}

Test(publish, refuses_an_existing_output_without_overwrite)
{
    env e;
    setup(&e);
    spit(e.out, "old capture\n");
    int rc = sh(&e, "'%s' capture --runner engine --model '%s' --prompts '%s' --threads 1 --max-tokens 2 "
                    "--no-timestamp --out '%s'", VT_BIN, e.model, e.prompts, e.out);
    cr_assert_eq(rc, 2, "%s", e.cmd_err);
    cr_assert(strstr(e.cmd_err, e.out), "%s", e.cmd_err);
    char *now = slurp(e.out, NULL);
    cr_assert_str_eq(now, "old capture\n");
    free(now);
    /* With --overwrite it is replaced. */
    rc = sh(&e, "'%s' capture --runner engine --model '%s' --prompts '%s' --threads 1 --max-tokens 2 "
                "--no-timestamp --overwrite --out '%s'", VT_BIN, e.model, e.prompts, e.out);
    cr_assert_eq(rc, 0, "%s", e.cmd_err);
    cJSON_Delete(check_document(e.out, "#/$defs/capture"));
    teardown(&e);
}

Test(publish, top_k_side_file_options)
{
    env e;
    setup(&e);
    /* --top-k 0: no side file, topk_file null. */
    int rc = sh(&e, "'%s' capture --runner engine --model '%s' --prompts '%s' --threads 1 --max-tokens 2 --top-k 0 "
                    "--no-timestamp --out '%s'", VT_BIN, e.model, e.prompts, e.out);
    cr_assert_eq(rc, 0, "%s", e.cmd_err);
    cJSON *doc = check_document(e.out, "#/$defs/capture");
    cr_assert(cJSON_IsNull(get(doc, "topk_file")));
    cr_assert_eq(get(get(get(doc, "settings"), "resolved"), "logprobs_top_k")->valuedouble, 0);
    cr_assert(!exists(e.topk));
    cJSON_Delete(doc);
    /* --topk-out elsewhere: refused (issue 19: a capture names its side
     * files by plain file name, beside it), before anything is written. */
    char sub[160], side[200];
    snprintf(sub, sizeof sub, "%s/sub", e.dir);
    snprintf(side, sizeof side, "%s/sub/t.bin", e.dir);
    cr_assert_eq(mkdir(sub, 0755), 0);
    rc = sh(&e, "'%s' capture --runner engine --model '%s' --prompts '%s' --threads 1 --max-tokens 2 --top-k 3 "
                "--no-timestamp --overwrite --out '%s' --topk-out '%s'", VT_BIN, e.model, e.prompts, e.out, side);
    cr_assert_eq(rc, 2, "%s", e.cmd_err);
    cr_assert(strstr(e.cmd_err, "t.bin") && strstr(e.cmd_err, "expected a side file beside --out"), "%s", e.cmd_err);
    cr_assert(!exists(side));
    /* Beside it under another name: named by that plain name. */
    snprintf(side, sizeof side, "%s/t.bin", e.dir);
    rc = sh(&e, "'%s' capture --runner engine --model '%s' --prompts '%s' --threads 1 --max-tokens 2 --top-k 3 "
                "--no-timestamp --overwrite --out '%s' --topk-out '%s'", VT_BIN, e.model, e.prompts, e.out, side);
    cr_assert_eq(rc, 0, "%s", e.cmd_err);
    doc = check_document(e.out, "#/$defs/capture");
    cr_assert_str_eq(get(get(doc, "topk_file"), "name")->valuestring, "t.bin");
    cr_assert(!exists(e.topk));
    cJSON_Delete(doc);
    /* The side file may not alias another output, nor be asked for with --top-k 0. */
    rc = sh(&e, "'%s' capture --runner engine --model '%s' --prompts '%s' --threads 1 --max-tokens 2 "
                "--no-timestamp --overwrite --out '%s' --logits-out '%s' --topk-out '%s'", VT_BIN, e.model, e.prompts,
            e.out, e.logits, e.logits);
    cr_assert_eq(rc, 2, "%s", e.cmd_err);
    cr_assert(strstr(e.cmd_err, "c.logits"), "%s", e.cmd_err);
    rc = sh(&e, "'%s' capture --runner engine --model '%s' --prompts '%s' --top-k 0 --topk-out '%s' --out '%s'",
            VT_BIN, e.model, e.prompts, e.topk, e.out);
    cr_assert_eq(rc, 2, "%s", e.cmd_err);
    cr_assert(strstr(e.cmd_err, "--topk-out"), "%s", e.cmd_err);
    teardown(&e);
}

/* A side file that cannot be written (the file size limit, as a full disk
 * would) fails the capture with one line, and nothing is published. */
Test(publish, a_side_file_that_cannot_be_written_leaves_nothing)
{
    env e;
    setup(&e);
    static const char *const cases[][2] = {
        { "--top-k 100", "vt-capture: top-k side file: temporary file: write error: File too large" },
        { "--top-k 0 --logits-out c.logits", "vt-capture: logits side file: temporary file: write error: File too large" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int rc = sh(&e, "cd '%s' && trap '' XFSZ && ulimit -f 16 && '%s' capture --runner engine --model '%s' "
                        "--prompts '%s' --threads 1 --max-tokens 64 --no-timestamp --out c.json %s",
                    e.dir, VT_BIN, e.model, e.prompts, cases[i][0]);
        cr_assert_eq(rc, 2, "%s: exit %d: %s", cases[i][0], rc, e.cmd_err);
        cr_assert(strstr(e.cmd_err, cases[i][1]), "%s", e.cmd_err);
        cr_assert_eq(strchr(e.cmd_err, '\n') - e.cmd_err + 1, (long)strlen(e.cmd_err), "one line: %s", e.cmd_err);
        cr_assert(!exists(e.out) && !exists(e.topk) && !exists(e.logits), "%s: something was written", cases[i][0]);
    }
    teardown(&e);
}

static int fail_after_first_rename(const char *step, int item, void *ctx)
{
    (void)ctx;
    return strcmp(step, "renamed") == 0 && item == 0;
}

Test(publish, failure_between_the_two_files_keeps_the_old_ones)
{
    env e;
    setup(&e);
    spit(e.out, "old capture\n");
    spit(e.logits, "old logits\n");
    vt_capture_opts o;
    vt_capture_opts_default(&o);
    o.runner = "engine";
    o.model = e.model;
    o.prompts = e.prompts;
    o.out = e.out;
    o.logits_out = e.logits;
    o.max_tokens = 2;
    o.settings.n_threads = 1;
    vt_error err;
    vt_error_clear(&err);
    vt_capture *c = vt_capture_open(&o, &err);
    cr_assert_not_null(c, "%s", err.msg);
    cr_assert_eq(vt_capture_run(c, &err), VT_OK, "%s", err.msg);
    cr_assert_neq(vt_capture_publish(c, 1, fail_after_first_rename, NULL, &err), VT_OK);
    cr_assert(strstr(err.msg, "renamed"), "%s", err.msg);
    char *a = slurp(e.out, NULL), *b = slurp(e.logits, NULL);
    cr_assert_str_eq(a, "old capture\n");
    cr_assert_str_eq(b, "old logits\n");
    cr_assert(!exists(e.topk), "%s left behind", e.topk);
    free(a);
    free(b);
    /* No temporary or backup file is left beside them. */
    DIR *d = opendir(e.dir);
    for (struct dirent *de; (de = readdir(d));)
        cr_assert(strstr(de->d_name, ".vt-") == NULL, "left behind: %s", de->d_name);
    closedir(d);
    /* And without the failure the same handle publishes both. */
    cr_assert_eq(vt_capture_publish(c, 1, NULL, NULL, &err), VT_OK, "%s", err.msg);
    vt_capture_free(c);
    cJSON_Delete(check_document(e.out, "#/$defs/capture"));
    teardown(&e);
}

/* ----------------------------------------------------- strict captures */

/* The side file: every frame decodes to the logits its run hashed. */
static void check_side_file(const cJSON *doc, const char *path)
{
    vt_sha256_hex h;
    uint64_t size;
    vt_error err;
    vt_error_clear(&err);
    cr_assert_eq(vt_sha256_file(path, &h, &size, &err), VT_OK, "%s", err.msg);
    const cJSON *lf = get(doc, "logits_file");
    cr_assert_str_eq(get(lf, "sha256")->valuestring, h.hex);
    cr_assert_eq(get(lf, "size")->valuedouble, (double)size);
    cr_assert_str_eq(get(lf, "name")->valuestring, strrchr(path, '/') + 1);
    vt_logits_frame *fr;
    int n;
    cr_assert_eq(vt_logits_file_read(path, &fr, &n, &err), VT_OK, "%s", err.msg);
    const cJSON *runs = get(doc, "runs");
    cr_assert_eq(n, cJSON_GetArraySize(runs));
    int i = 0;
    for (const cJSON *r = runs->child; r; r = r->next, i++) {
        cr_assert_eq(fr[i].prompt, get(r, "prompt")->valuedouble);
        cr_assert_eq(fr[i].repeat, get(r, "repeat")->valuedouble);
        cr_assert_eq(fr[i].positions, (uint32_t)cJSON_GetArraySize(get(r, "tokens")));
        vt_logits_sha256(fr[i].logits, (size_t)fr[i].positions * fr[i].vocab, &h);
        cr_assert_str_eq(h.hex, get(r, "logits_sha256")->valuestring);
    }
    vt_logits_frames_free(fr, n);
}

/* The top-k side file beside the capture at path: checked whole by the
 * reader (size, SHA-256, every entry); greedy: each token is its
 * position's first entry. */
static void check_topk_file(const cJSON *doc, const char *path, int32_t k)
{
    const cJSON *tf = get(doc, "topk_file");
    cr_assert_str_eq(get(tf, "format")->valuestring, VT_TOPK_FORMAT);
    char side[300];
    snprintf(side, sizeof side, "%.*s/%s", (int)(strrchr(path, '/') - path), path, get(tf, "name")->valuestring);
    int64_t positions = 0;
    for (const cJSON *r = get(doc, "runs")->child; r; r = r->next)
        positions += cJSON_GetArraySize(get(r, "tokens"));
    vt_topk_file f;
    vt_error err;
    vt_error_clear(&err);
    cr_assert_eq(vt_topk_file_open(side, k, positions, (int32_t)get(get(get(doc, "model"), "gguf"), "n_vocab")->valuedouble,
                                   get(tf, "sha256")->valuestring, &f, &err), VT_OK, "%s", err.msg);
    cr_assert_eq(get(tf, "size")->valuedouble, 16 + (double)positions * k * 8);
    int32_t ids[64];
    float lps[64];
    cr_assert_leq(k, 64);
    int64_t pos = 0;
    for (const cJSON *r = get(doc, "runs")->child; r; r = r->next)
        for (const cJSON *t = get(r, "tokens")->child; t; t = t->next, pos++) {
            cr_assert_eq(vt_topk_file_get(&f, pos, ids, lps, &err), VT_OK, "%s", err.msg);
            cr_assert_eq(ids[0], t->valuedouble, "position %lld", (long long)pos);
            cr_assert(lps[0] <= 0 && lps[0] > -50);
        }
    /* Past the last position: refused, not read. */
    cr_assert_eq(vt_topk_file_get(&f, positions, ids, lps, &err), VT_EINPUT);
    cr_assert(strstr(err.msg, "expected one of its"), "%s", err.msg);
    cr_assert_eq(vt_topk_file_get(&f, -1, ids, lps, &err), VT_EINPUT);
    vt_topk_file_close(&f);
}

static void check_strict_capture(const cJSON *doc, const char *runner)
{
    cr_assert_str_eq(get(get(get(doc, "runtime"), "runner"), "name")->valuestring, runner);
    cr_assert(cJSON_IsTrue(get(get(doc, "runtime"), "resolved")));
    cr_assert(cJSON_IsTrue(get(get(doc, "model"), "verified")));
    const cJSON *det = get(doc, "determinism");
    cr_assert_eq(get(det, "repeats")->valuedouble, 10);
    cr_assert(cJSON_IsTrue(get(det, "identical_tokens")) && cJSON_IsTrue(get(det, "identical_logits")));
    cr_assert_eq(cJSON_GetArraySize(get(doc, "runs")), 20);
    cr_assert(cJSON_IsTrue(get(get(doc, "launcher"), "attested")));
    for (const cJSON *r = get(doc, "runs")->child; r; r = r->next) {
        cr_assert_str_eq(get(r, "status")->valuestring, "ok");
        cr_assert_eq(cJSON_GetArraySize(get(r, "tokens")), 4);
        cr_assert(!cJSON_GetObjectItem(r, "topk"), "top-k belongs in the side file");
    }
}

Test(capture, strict_engine_and_llamacpp_captures_publish)
{
    env e;
    setup(&e);
    /* The engine, through the vt-capture link. */
    int rc = sh(&e, "'%s-capture' --runner engine " STRICT_ARGS " --repetitions 10 --model-manifest '%s' "
                    "--launcher-manifest '%s' --out '%s' --logits-out '%s'",
                VT_BIN, e.model, e.prompts, e.manifest, e.launcher, e.out, e.logits);
    cr_assert_eq(rc, 0, "%s", e.cmd_err);
    cr_assert_str_empty(e.cmd_err);
    cr_assert(strstr(e.cmd_out, "strict: every gate passed"), "%s", e.cmd_out);
    cJSON *eng = check_document(e.out, "#/$defs/capture");
    check_strict_capture(eng, "engine");
    check_side_file(eng, e.logits);
    check_topk_file(eng, e.out, 5);
    cr_assert(!cJSON_GetObjectItem(eng, "created_utc"));

    /* Same inputs, same bytes (no timestamp). */
    char again[160], again_logits[160];
    snprintf(again, sizeof again, "%s/again.json", e.dir);
    snprintf(again_logits, sizeof again_logits, "%s/again.logits", e.dir);
    char extra[200];
    snprintf(extra, sizeof extra, "--logits-out '%s'", again_logits);
    cr_assert_eq(capture_strict(&e, "engine", again, extra), 0, "%s", e.cmd_err);
    size_t n1, n2;
    char *a = slurp(e.out, &n1), *b = slurp(again, &n2);
    /* The side file's name differs; everything else is the same. */
    cJSON *ja = cJSON_Parse(a), *jb = cJSON_Parse(b);
    cr_assert_str_eq(get(get(ja, "logits_file"), "sha256")->valuestring,
                     get(get(jb, "logits_file"), "sha256")->valuestring);
    cr_assert_str_eq(get(get(ja, "topk_file"), "sha256")->valuestring,
                     get(get(jb, "topk_file"), "sha256")->valuestring);
    cr_assert_str_eq(get(get(ja, "topk_file"), "name")->valuestring, "c.topk");
    cr_assert_str_eq(get(get(jb, "topk_file"), "name")->valuestring, "again.topk");
    cJSON_Delete(ja);
    cJSON_Delete(jb);
    free(a);
    free(b);
    /* In another directory under the same name: the top-k side file's
     * name (relative to the capture) is the same too. */
    char again2[160];
    snprintf(again2, sizeof again2, "%s/sub", e.dir);
    cr_assert_eq(mkdir(again2, 0755), 0);
    snprintf(again2, sizeof again2, "%s/sub/again.json", e.dir);
    cr_assert_eq(capture_strict(&e, "engine", again, "--overwrite"), 0, "%s", e.cmd_err);
    cr_assert_eq(capture_strict(&e, "engine", again2, NULL), 0, "%s", e.cmd_err);
    a = slurp(again, &n1);
    b = slurp(again2, &n2);
    cr_assert(n1 == n2 && memcmp(a, b, n1) == 0, "two identical captures differ");
    free(a);
    free(b);

    /* llama.cpp with the pinned package verified against the lock. */
    char oracle[160];
    snprintf(oracle, sizeof oracle, "%s/oracle.json", e.dir);
    snprintf(extra, sizeof extra, "--package '%s'", NPM_TARBALL);
    rc = capture_strict(&e, "llamacpp", oracle, extra);
    cr_assert_eq(rc, 0, "%s", e.cmd_err);
    cJSON *orc = check_document(oracle, "#/$defs/capture");
    check_strict_capture(orc, "llamacpp");
    check_topk_file(orc, oracle, 5);
    const cJSON *pkg = get(orc, "package");
    cr_assert_str_eq(get(pkg, "kind")->valuestring, "npm");
    cr_assert_str_eq(get(pkg, "name")->valuestring, "@node-llama-cpp/linux-x64");
    cr_assert(cJSON_IsTrue(get(pkg, "verified")));
    cr_assert_geq(cJSON_GetArraySize(get(pkg, "loaded")), 2);
    cr_assert_eq(get(pkg, "members_checked")->valuedouble, cJSON_GetArraySize(get(pkg, "loaded")));
    /* The same request resolves the same way in both runners: one workload. */
    cr_assert_str_eq(get(eng, "workload_seal")->valuestring, get(orc, "workload_seal")->valuestring);
    cr_assert_str_neq(get(eng, "seal")->valuestring, get(orc, "seal")->valuestring);
    cJSON_Delete(eng);
    cJSON_Delete(orc);
    teardown(&e);
}

Test(capture, timestamp_is_sealed_and_pinned_by_source_date_epoch)
{
    env e;
    setup(&e);
    /* The side file under a name of its own, beside the capture. */
    char side[200];
    snprintf(side, sizeof side, "%s/x.logits", e.dir);
    int rc = sh(&e, "SOURCE_DATE_EPOCH=1700000000 '%s' capture --runner engine --model '%s' --prompts '%s' "
                    "--threads 1 --max-tokens 2 --out '%s' --logits-out '%s'", VT_BIN, e.model, e.prompts, e.out, side);
    cr_assert_eq(rc, 0, "%s", e.cmd_err);
    cJSON *doc = check_document(e.out, "#/$defs/capture");
    cr_assert_str_eq(get(doc, "created_utc")->valuestring, "2023-11-14T22:13:20Z");
    cr_assert_str_eq(get(get(doc, "logits_file"), "name")->valuestring, "x.logits");
    /* Not strict: published although the gate would refuse it. */
    cr_assert(strstr(e.cmd_out, "not strict-publishable"), "%s", e.cmd_out);
    cJSON_Delete(doc);
    teardown(&e);
}

/* ---------------------------------------------------- actual-prefix scoring */

Test(prefix, llamacpp_scores_the_engine_capture_with_zero_gaps)
{
    env e;
    setup(&e);
    cr_assert_eq(capture_strict(&e, "engine", e.out, NULL), 0, "%s", e.cmd_err);
    char scores[160];
    snprintf(scores, sizeof scores, "%s/scores.json", e.dir);
    char extra[300];
    snprintf(extra, sizeof extra, "--package '%s'", NPM_TARBALL);
    int rc = sh(&e, "'%s' capture --runner llamacpp --model '%s' --score-prefix-of '%s' --threads 1 --repetitions 10 "
                    "--model-manifest '%s' --launcher-manifest '%s' --no-timestamp --strict --out '%s' %s",
                VT_BIN, e.model, e.out, e.manifest, e.launcher, scores, extra);
    cr_assert_eq(rc, 0, "%s", e.cmd_err);
    cJSON *local = load_json(e.out);
    cJSON *doc = check_document(scores, "#/$defs/prefix_scores");
    const cJSON *lref = get(doc, "local");
    cr_assert_str_eq(get(lref, "seal")->valuestring, get(local, "seal")->valuestring);
    cr_assert_str_eq(get(lref, "workload_seal")->valuestring, get(local, "workload_seal")->valuestring);
    int positions = 0;
    for (const cJSON *r = get(doc, "runs")->child; r; r = r->next) {
        cr_assert_str_eq(get(r, "status")->valuestring, "ok");
        /* The scored tokens are LOCAL's repeat 0. */
        int p = (int)get(r, "prompt")->valuedouble;
        const cJSON *lrun = NULL;
        for (const cJSON *x = get(local, "runs")->child; x && !lrun; x = x->next)
            if (get(x, "prompt")->valuedouble == p && get(x, "repeat")->valuedouble == 0)
                lrun = x;
        cr_assert(cJSON_Compare(get(r, "tokens"), get(lrun, "tokens"), 1));
        const cJSON *lp = get(r, "logprobs"), *alp = get(r, "argmax_logprobs"), *am = get(r, "argmax");
        for (int i = 0; i < cJSON_GetArraySize(lp); i++, positions++) {
            double gap = cJSON_GetArrayItem(alp, i)->valuedouble - cJSON_GetArrayItem(lp, i)->valuedouble;
            cr_assert_eq(gap, 0.0, "prompt %d position %d: gap %g", p, i, gap);
            cr_assert_eq(cJSON_GetArrayItem(am, i)->valuedouble, cJSON_GetArrayItem(get(r, "tokens"), i)->valuedouble);
        }
    }
    cr_assert_eq(positions, 2 * 10 * 4);
    cJSON_Delete(doc);
    cJSON_Delete(local);
    teardown(&e);
}

/* --score-shape: replay by default, batched on request, recorded as the
 * document's shape; the engine computes the same logits in both (it is
 * batch-invariant: engine/qwen3.h). Refused with a bad value or without
 * --score-prefix-of. */
Test(prefix, the_score_shape_is_chosen_and_recorded)
{
    env e;
    setup(&e);
    cr_assert_eq(sh(&e, "'%s' capture --runner engine --model '%s' --prompts '%s' --threads 1 --no-timestamp --out '%s'",
                    VT_BIN, e.model, e.prompts, e.out), 0, "%s", e.cmd_err);
    const char *shape[3] = { NULL, "replay", "batched" };
    cJSON *doc[3];
    for (int k = 0; k < 3; k++) {
        char scores[200], opt[64] = "";
        snprintf(scores, sizeof scores, "%s/s%d.json", e.dir, k);
        if (shape[k])
            snprintf(opt, sizeof opt, "--score-shape %s", shape[k]);
        cr_assert_eq(sh(&e, "'%s' capture --runner engine --model '%s' --score-prefix-of '%s' --threads 1 "
                            "--no-timestamp --out '%s' %s", VT_BIN, e.model, e.out, scores, opt), 0, "%s", e.cmd_err);
        doc[k] = check_document(scores, "#/$defs/prefix_scores");
        cr_assert_str_eq(get(doc[k], "schema")->valuestring, "vt.prefix-scores/3");
        cr_assert_str_eq(get(doc[k], "shape")->valuestring, k == 2 ? "batched" : "replay");
    }
    for (const cJSON *a = get(doc[0], "runs")->child, *b = get(doc[2], "runs")->child; a && b; a = a->next, b = b->next)
        cr_assert_str_eq(get(a, "logits_sha256")->valuestring, get(b, "logits_sha256")->valuestring);
    for (int k = 0; k < 3; k++)
        cJSON_Delete(doc[k]);
    cr_assert_eq(sh(&e, "'%s' capture --runner engine --model '%s' --score-prefix-of '%s' --score-shape sideways "
                        "--out '%s/x.json'", VT_BIN, e.model, e.out, e.dir), 2);
    cr_assert(strstr(e.cmd_err, "vt-capture: --score-shape 'sideways': expected replay or batched"), "%s", e.cmd_err);
    cr_assert_eq(sh(&e, "'%s' capture --runner engine --model '%s' --prompts '%s' --score-shape batched --out '%s/x.json'",
                    VT_BIN, e.model, e.prompts, e.dir), 2);
    cr_assert(strstr(e.cmd_err, "vt-capture: --score-shape 'batched': expected only with --score-prefix-of"), "%s",
              e.cmd_err);
    teardown(&e);
}

/* The scores may not be written over LOCAL or a side file it names. */
Test(prefix, outputs_may_not_alias_the_local_capture_or_its_side_files)
{
    env e;
    setup(&e);
    cr_assert_eq(sh(&e, "'%s' capture --runner engine --model '%s' --prompts '%s' --threads 1 --max-tokens 3 "
                        "--no-timestamp --out '%s' --logits-out '%s'", VT_BIN, e.model, e.prompts, e.out, e.logits), 0,
                 "%s", e.cmd_err);
    const char *victims[] = { e.out, e.topk, e.logits };
    for (int i = 0; i < 3; i++) {
        char *before = slurp(victims[i], NULL);
        int rc = sh(&e, "'%s' capture --runner engine --model '%s' --score-prefix-of '%s' --threads 1 --overwrite "
                        "--out '%s'", VT_BIN, e.model, e.out, victims[i]);
        cr_assert_eq(rc, 2, "%s: exit %d: %s", victims[i], rc, e.cmd_err);
        cr_assert(strstr(e.cmd_err, strrchr(victims[i], '/') + 1), "%s", e.cmd_err);
        char *after = slurp(victims[i], NULL);
        cr_assert_str_eq(after, before, "%s was overwritten", victims[i]);
        free(before);
        free(after);
    }
    teardown(&e);
}

/* doc, sealed again as vt-capture writes it (anyone can), to path. */
static void reseal_write(cJSON *doc, const char *path)
{
    cJSON_DeleteItemFromObject(doc, "workload_seal");
    cJSON_DeleteItemFromObject(doc, "seal");
    vt_error err;
    vt_error_clear(&err);
    cJSON *w = vt_capture_workload(doc);
    vt_sha256_hex h;
    cr_assert_eq(vt_canonical_sha256(w, &h, &err), VT_OK, "%s", err.msg);
    cJSON_Delete(w);
    cJSON_AddStringToObject(doc, "workload_seal", h.hex);
    cr_assert_eq(vt_canonical_sha256(doc, &h, &err), VT_OK, "%s", err.msg);
    cJSON_AddStringToObject(doc, "seal", h.hex);
    size_t tn;
    char *text = vt_canonical_json(doc, &tn, &err);
    cr_assert_not_null(text, "%s", err.msg);
    text = realloc(text, tn + 2);
    memcpy(text + tn, "\n", 2);
    spit(path, text);
    free(text);
}

/* What a LOCAL must be to be scored with --model: captured on that model
 * (one file, its sha256, its vocabulary size), every prompt with tokens. */
Test(prefix, refuses_a_local_of_another_model)
{
    env e;
    setup(&e);
    cr_assert_eq(sh(&e, "'%s' capture --runner engine --model '%s' --prompts '%s' --threads 1 --max-tokens 3 --top-k 0 "
                        "--no-timestamp --out '%s'", VT_BIN, e.model, e.prompts, e.out), 0, "%s", e.cmd_err);
    char bad[160], scores[160], other[160];
    snprintf(bad, sizeof bad, "%s/bad.json", e.dir);
    snprintf(scores, sizeof scores, "%s/scores.json", e.dir);
    snprintf(other, sizeof other, "%s/other.gguf", e.dir);
    cr_assert_eq(sh(&e, "'%s' fixture make --arch qwen3 --preset tiny --weights F32 --seed 2 -o '%s'", VT_BIN, other), 0,
                 "%s", e.cmd_err);
    int rc = sh(&e, "'%s' capture --runner engine --model '%s' --score-prefix-of '%s' --out '%s'", VT_BIN, other, e.out,
                scores);
    cr_assert_eq(rc, 2, "%s", e.cmd_err);
    cr_assert(strstr(e.cmd_err, "c.json: field model.files[0].sha256: ") && strstr(e.cmd_err, "the --model file's"),
              "%s", e.cmd_err);
    /* Forged (and re-sealed): two model files; another vocabulary size; a prompt without tokens. */
    for (int k = 0; k < 3; k++) {
        cJSON *doc = load_json(e.out);
        cJSON *model = cJSON_GetObjectItem(doc, "model");
        if (k == 0) {
            cJSON *files = cJSON_GetObjectItem(model, "files");
            cJSON_AddItemToArray(files, cJSON_Duplicate(cJSON_GetArrayItem(files, 0), 1));
        } else if (k == 1) {
            cJSON *nv = cJSON_GetObjectItem(cJSON_GetObjectItem(model, "gguf"), "n_vocab");
            cJSON_SetNumberValue(nv, nv->valuedouble + 1);
        } else {
            cJSON *pr = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "prompts"), 1);
            cJSON_ReplaceItemInObject(pr, "tokens", cJSON_CreateArray());
            vt_sha256_hex h;
            vt_sha256_buffer("", 0, &h);
            cJSON_ReplaceItemInObject(pr, "sha256", cJSON_CreateString(h.hex));
        }
        reseal_write(doc, bad);
        cJSON_Delete(doc);
        static const char *const want[] = { "bad.json: field model.files: expected one file with its sha256",
                                            "bad.json: field model.gguf.n_vocab: ",
                                            "bad.json: field prompts[1].tokens: empty: expected a prompt to score" };
        rc = sh(&e, "'%s' capture --runner engine --model '%s' --score-prefix-of '%s' --out '%s'", VT_BIN, e.model, bad,
                scores);
        cr_assert_eq(rc, 2, "case %d: %s", k, e.cmd_err);
        cr_assert(strstr(e.cmd_err, want[k]), "case %d: %s", k, e.cmd_err);
        cr_assert(!exists(scores));
    }
    /* The capture itself, on its model: scored. */
    cr_assert_eq(sh(&e, "'%s' capture --runner engine --model '%s' --score-prefix-of '%s' --out '%s'", VT_BIN, e.model,
                    e.out, scores), 0, "%s", e.cmd_err);
    teardown(&e);
}

/* A LOCAL whose first run failed has no stream to score: refused, naming
 * the run (the same capture with the run ok is scored). */
Test(prefix, refuses_a_local_whose_repeat_0_failed)
{
    env e;
    setup(&e);
    cr_assert_eq(sh(&e, "'%s' capture --runner engine --model '%s' --prompts '%s' --threads 1 --max-tokens 3 --top-k 0 "
                        "--no-timestamp --out '%s'", VT_BIN, e.model, e.prompts, e.out), 0, "%s", e.cmd_err);
    char bad[160], scores[160];
    snprintf(bad, sizeof bad, "%s/bad.json", e.dir);
    snprintf(scores, sizeof scores, "%s/scores.json", e.dir);
    cr_assert_eq(sh(&e, "'%s' capture --runner engine --model '%s' --score-prefix-of '%s' --threads 1 --out '%s'", VT_BIN,
                    e.model, e.out, scores), 0, "%s", e.cmd_err);
    unlink(scores);
    /* Run 0 (prompt 0, repeat 0) failed, the capture re-sealed as vt-capture would. */
    cJSON *doc = load_json(e.out);
    cJSON *runs = cJSON_GetObjectItem(doc, "runs");
    cJSON *run = cJSON_CreateObject();
    cJSON_AddNumberToObject(run, "prompt", 0);
    cJSON_AddNumberToObject(run, "repeat", 0);
    cJSON_AddStringToObject(run, "status", "error");
    cJSON_AddStringToObject(run, "error", "out of memory");
    cJSON_AddArrayToObject(run, "tokens");
    cJSON_ReplaceItemInArray(runs, 0, run);
    cJSON *det = cJSON_GetObjectItem(doc, "determinism");
    cJSON_ReplaceItemInObject(det, "identical_tokens", cJSON_CreateFalse());
    cJSON_ReplaceItemInObject(det, "identical_logits", cJSON_CreateFalse());
    reseal_write(doc, bad);
    cJSON_Delete(doc);
    int rc = sh(&e, "'%s' capture --runner engine --model '%s' --score-prefix-of '%s' --threads 1 --out '%s'", VT_BIN,
                e.model, bad, scores);
    cr_assert_eq(rc, 2, "%s", e.cmd_err);
    cr_assert(strstr(e.cmd_err, "bad.json: field runs[0].status: prompt 0 repeat 0 failed: expected ok"), "%s",
              e.cmd_err);
    cr_assert(!exists(scores));
    teardown(&e);
}

Test(prefix, refuses_a_tampered_or_malformed_local)
{
    env e;
    setup(&e);
    cr_assert_eq(sh(&e, "'%s' capture --runner engine --model '%s' --prompts '%s' --threads 1 --max-tokens 3 "
                        "--no-timestamp --out '%s'", VT_BIN, e.model, e.prompts, e.out), 0, "%s", e.cmd_err);
    char bad[160], scores[160];
    snprintf(bad, sizeof bad, "%s/bad.json", e.dir);
    snprintf(scores, sizeof scores, "%s/scores.json", e.dir);
    /* One token changed: the seal no longer recomputes. */
    cJSON *doc = load_json(e.out);
    cJSON *tok = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "runs"), 0), "tokens"), 0);
    cJSON_SetNumberValue(tok, tok->valuedouble == 1 ? 2 : 1);
    size_t tn;
    char *text = vt_canonical_json(doc, &tn, NULL);
    cr_assert_not_null(text);
    text = realloc(text, tn + 2);
    memcpy(text + tn, "\n", 2);
    spit(bad, text);
    free(text);
    cJSON_Delete(doc);
    int rc = sh(&e, "'%s' capture --runner engine --model '%s' --score-prefix-of '%s' --threads 1 --out '%s'", VT_BIN,
                e.model, bad, scores);
    cr_assert_eq(rc, 2, "%s", e.cmd_err);
    cr_assert(strstr(e.cmd_err, "bad.json: field seal: "), "%s", e.cmd_err);
    /* Not JSON at all. */
    spit(bad, "{\"schema\": \"vt.capture/1\", \"runs\": [");
    rc = sh(&e, "'%s' capture --runner engine --model '%s' --score-prefix-of '%s' --threads 1 --out '%s'", VT_BIN,
            e.model, bad, scores);
    cr_assert_eq(rc, 2, "%s", e.cmd_err);
    cr_assert(strstr(e.cmd_err, "bad.json: offset "), "%s", e.cmd_err);
    /* Another schema. */
    spit(bad, "{\"schema\": \"vt.manifest/1\"}");
    rc = sh(&e, "'%s' capture --runner engine --model '%s' --score-prefix-of '%s' --threads 1 --out '%s'", VT_BIN,
            e.model, bad, scores);
    cr_assert_eq(rc, 2, "%s", e.cmd_err);
    cr_assert(strstr(e.cmd_err, "bad.json: offset 10: field schema: expected canonical JSON (no whitespace)"), "%s",
              e.cmd_err);
    spit(bad, "{\"schema\":\"vt.manifest/1\"}\n");
    rc = sh(&e, "'%s' capture --runner engine --model '%s' --score-prefix-of '%s' --threads 1 --out '%s'", VT_BIN,
            e.model, bad, scores);
    cr_assert_eq(rc, 2, "%s", e.cmd_err);
    cr_assert(strstr(e.cmd_err, "bad.json: field schema: \"vt.manifest/1\": expected \"vt.capture/2\" (or "
                                "\"vt.capture/1\")"), "%s", e.cmd_err);
    cr_assert(!exists(scores));
    teardown(&e);
}

/* ---------------------------------------------------------- prompt files */

static void expect_prompt_refused(env *e, const char *content, const char *message)
{
    spit(e->prompts, content);
    int rc = sh(e, "'%s' capture --runner engine --model '%s' --prompts '%s' --threads 1 --out '%s'", VT_BIN, e->model,
                e->prompts, e->out);
    cr_assert_eq(rc, 2, "%s", e->cmd_err);
    char want[400];
    snprintf(want, sizeof want, "vt-capture: %s: %s\n", e->prompts, message);
    cr_assert_str_eq(e->cmd_err, want);
    cr_assert(!exists(e->out));
}

Test(prompts, bad_lines_are_refused_with_file_line_and_field)
{
    env e;
    setup(&e);
    expect_prompt_refused(&e, "{\"id\":\"a\",\"text\":\"x\"}\n{\"id\":\"a\",\"text\":\"y\"}\n",
                          "line 2: field id: 'a' already used: expected unique ids");
    expect_prompt_refused(&e, "{\"text\":\"x\"}\n", "line 1: field id: expected a non-empty UTF-8 string");
    expect_prompt_refused(&e, "{\"id\":\"a\",\"tokens\":[1,2,999999]}\n",
                          "line 1: field tokens[2]: expected an integer id in 0..1279");
    expect_prompt_refused(&e, "{\"id\":\"a\",\"tokens\":[]}\n",
                          "line 1: field tokens: expected a non-empty list of token ids");
    expect_prompt_refused(&e, "{\"id\":\"a\",\"text\":\"x\",\"tokens\":[1]}\n",
                          "line 1: field text/tokens: expected exactly one of the two");
    expect_prompt_refused(&e, "{\"id\":\"a\",\"text\":\"x\",\"extra\":1}\n",
                          "line 1: field extra: expected only id, text or tokens");
    expect_prompt_refused(&e, "\n\n{\"id\":\"a\",\"text\":\"x\"} {}\n",
                          "line 3: column 22: expected one JSON object on the line");
    expect_prompt_refused(&e, "{\"id\":\"a\",\"text\":\"x\"}\n[1,2]\n",
                          "line 2: expected a JSON object {id, text} or {id, tokens}");
    expect_prompt_refused(&e, "{\"id\":\"a\",\"text\":\"x\"}\n{\"id\": \n", "line 2: column 7: expected a JSON object");
    expect_prompt_refused(&e, "{\"id\":\"a\",\"text\":\"\xff\"}\n", "line 1: field text: expected a UTF-8 string");
    expect_prompt_refused(&e, "{\"id\":\"a\",\"text\":5}\n", "line 1: field text: expected a UTF-8 string");
    expect_prompt_refused(&e, "{\"id\":\"a\",\"text\":null}\n", "line 1: field text: expected a UTF-8 string");
    expect_prompt_refused(&e, "\n  \n", "no prompts: expected one JSON object per line");
    teardown(&e);
}

/* Text is tokenized with the vocabulary's own special tokens: a vocabulary
 * that asks for BOS (tokenizer.ggml.add_bos_token) gets it first. */
Test(prompts, text_gets_the_bos_its_vocabulary_asks_for)
{
    env e;
    setup(&e);
    char bos_model[300];
    snprintf(bos_model, sizeof bos_model, "%s/bos.gguf", e.dir);
    vt_error err;
    vt_error_clear(&err);
    vt_gguf *g = vt_gguf_open(e.model, &err);
    cr_assert_not_null(g, "%s", err.msg);
    vt_gguf_writer *w = vt_gguf_writer_from(g, &err);
    cr_assert_not_null(w, "%s", err.msg);
    cr_assert_eq(vt_gguf_writer_set_bool(w, "tokenizer.ggml.add_bos_token", 1), VT_OK);
    cr_assert_eq(vt_gguf_writer_write_file(w, bos_model, NULL, &err), VT_OK, "%s", err.msg);
    vt_gguf_writer_free(w);
    vt_gguf_free(g);
    const char *models[2] = { e.model, bos_model };
    cJSON *doc[2];
    for (int k = 0; k < 2; k++) {
        char out[300];
        snprintf(out, sizeof out, "%s/c%d.json", e.dir, k);
        cr_assert_eq(sh(&e, "'%s' capture --runner engine --model '%s' --prompts '%s' --max-tokens 1 --threads 1 "
                            "--top-k 0 --no-timestamp --out '%s'", VT_BIN, models[k], e.prompts, out), 0, "%s",
                     e.cmd_err);
        doc[k] = load_json(out);
    }
    const cJSON *plain = get(cJSON_GetArrayItem(get(doc[0], "prompts"), 0), "tokens");
    const cJSON *with = get(cJSON_GetArrayItem(get(doc[1], "prompts"), 0), "tokens");
    cr_assert_eq(cJSON_GetArraySize(with), cJSON_GetArraySize(plain) + 1);
    cr_assert_eq(cJSON_GetArrayItem(with, 0)->valuedouble, 1277, "BOS first"); /* tokenizer.ggml.bos_token_id */
    cr_assert_neq(cJSON_GetArrayItem(plain, 0)->valuedouble, 1277);
    for (int i = 0; i < cJSON_GetArraySize(plain); i++)
        cr_assert_eq(cJSON_GetArrayItem(with, i + 1)->valuedouble, cJSON_GetArrayItem(plain, i)->valuedouble);
    cJSON_Delete(doc[0]);
    cJSON_Delete(doc[1]);
    teardown(&e);
}

/* A side file's bytes and digest are what was emitted; nothing may be
 * emitted or finished after it is finished (its digest is already given). */
Test(publish, a_side_writer_is_finished_once)
{
    vt_error err;
    vt_error_clear(&err);
    vt_side_writer *w = vt_side_writer_new(NULL, "test side file", &err);
    cr_assert_not_null(w, "%s", err.msg);
    cr_assert_eq(vt_side_writer_emit(w, "abc", 3, &err), VT_OK, "%s", err.msg);
    vt_sha256_hex sha;
    uint64_t size = 0;
    cr_assert_eq(vt_side_writer_finish(w, &sha, &size, &err), VT_OK, "%s", err.msg);
    cr_assert_eq(size, 3);
    cr_assert_str_eq(sha.hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"); /* SHA-256("abc") */
    vt_error_clear(&err);
    cr_assert_eq(vt_side_writer_emit(w, "d", 1, &err), VT_EINPUT);
    cr_assert_str_eq(err.msg, "test side file: data after finish");
    vt_side_writer_free(w);
}

/* ------------------------------------------------------- canonical JSON */

static void expect_canonical(const char *in, const char *out)
{
    cJSON *j = cJSON_Parse(in);
    cr_assert_not_null(j, "%s", in);
    vt_error err;
    vt_error_clear(&err);
    size_t n;
    char *s = vt_canonical_json(j, &n, &err);
    cr_assert_not_null(s, "%s: %s", in, err.msg);
    cr_assert_str_eq(s, out);
    /* Idempotent: the canonical text parses back to itself. */
    cJSON *k = cJSON_Parse(s);
    char *t = vt_canonical_json(k, &n, &err);
    cr_assert_str_eq(t, out);
    free(s);
    free(t);
    cJSON_Delete(j);
    cJSON_Delete(k);
}

Test(canonical, numbers_strings_and_order)
{
    expect_canonical("{ \"b\" : 1 , \"a\" : [ true , false , null ] }", "{\"b\":1,\"a\":[true,false,null]}");
    expect_canonical("[1.0, -0.0, 1e3, 9007199254740991, 9007199254740993, 0.1, -2.5e-7, 1234567890.5]",
                     "[1,0,1000,9007199254740991,9007199250000000,0.1,-2.5e-07,1234567890]");
    expect_canonical("[\"q\\\"b\\\\s/\\u0001\\n\\t\\u00e9\\u20ac\"]", "[\"q\\\"b\\\\s/\\u0001\\n\\t\xc3\xa9\xe2\x82\xac\"]");
    /* An F32 value round-trips through its 9 digits. */
    float f = 0.1f + 1e-9f;
    char buf[32];
    vt_canonical_number((double)f, buf);
    cr_assert_eq((float)strtod(buf, NULL), f);
}

Test(canonical, refuses_what_has_no_canonical_form)
{
    vt_error err;
    vt_error_clear(&err);
    cJSON *j = cJSON_Parse("{\"a\":1,\"b\":{\"c\":2,\"c\":3}}");
    cr_assert_null(vt_canonical_json(j, NULL, &err));
    cr_assert_str_eq(err.msg, "$.b: key 'c' twice: expected unique keys");
    cJSON_Delete(j);
    j = cJSON_CreateArray();
    cJSON_AddItemToArray(j, cJSON_CreateNumber(NAN));
    cr_assert_null(vt_canonical_json(j, NULL, &err));
    cr_assert(strstr(err.msg, "$[0]: "), "%s", err.msg);
    cJSON_Delete(j);
    j = cJSON_CreateString("\xc0\xaf");
    cr_assert_null(vt_canonical_json(j, NULL, &err));
    cr_assert(strstr(err.msg, "expected a valid UTF-8 string"), "%s", err.msg);
    cJSON_Delete(j);
    /* A member name that is not UTF-8 either (and the same object with a
     * valid name is canonical). */
    j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "ok\xe6", 1);
    cr_assert_null(vt_canonical_json(j, NULL, &err));
    cr_assert(strstr(err.msg, "a key: expected a valid UTF-8 string"), "%s", err.msg);
    cJSON_Delete(j);
    j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "ok\xc3\xa6", 1);
    size_t n;
    char *t = vt_canonical_json(j, &n, &err);
    cr_assert_not_null(t, "%s", err.msg);
    cr_assert_str_eq(t, "{\"ok\xc3\xa6\":1}");
    free(t);
    cJSON_Delete(j);
}

/* ------------------------------------------------------ schema validator */

static int check_against(const char *schema_text, const char *doc_text, vt_error *err)
{
    cJSON *s = cJSON_Parse(schema_text), *d = cJSON_Parse(doc_text);
    cr_assert(s && d);
    int rc = vt_json_schema_check(s, s, d, err);
    cJSON_Delete(s);
    cJSON_Delete(d);
    return rc;
}

Test(schema, validator_checks_the_subset)
{
    vt_error err;
    vt_error_clear(&err);
    const char *s = "{\"type\":\"object\",\"required\":[\"a\"],\"properties\":{"
                    "\"a\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/n\"}},"
                    "\"b\":{\"enum\":[\"x\",\"y\"]},\"c\":{\"const\":true},"
                    "\"d\":{\"type\":\"string\",\"pattern\":\"^[0-9a-f]{4}$\"}},"
                    "\"additionalProperties\":false,\"$defs\":{\"n\":{\"type\":\"integer\",\"minimum\":0}}}";
    cr_assert_eq(check_against(s, "{\"a\":[0,1,2],\"b\":\"x\",\"c\":true,\"d\":\"00af\"}", &err), VT_OK, "%s", err.msg);
    cr_assert_eq(check_against(s, "{\"a\":[0,-1]}", &err), VT_ECHECK);
    cr_assert_str_eq(err.msg, "$.a[1]: -1: expected at least 0");
    cr_assert_eq(check_against(s, "{\"a\":[0.5]}", &err), VT_ECHECK);
    cr_assert_eq(check_against(s, "{}", &err), VT_ECHECK);
    cr_assert_str_eq(err.msg, "$: member 'a' missing: expected it (required)");
    cr_assert_eq(check_against(s, "{\"a\":[],\"b\":\"z\"}", &err), VT_ECHECK);
    cr_assert_eq(check_against(s, "{\"a\":[],\"c\":false}", &err), VT_ECHECK);
    cr_assert_eq(check_against(s, "{\"a\":[],\"d\":\"00AF\"}", &err), VT_ECHECK);
    cr_assert_eq(check_against(s, "{\"a\":[],\"e\":1}", &err), VT_ECHECK);
    cr_assert(strstr(err.msg, "member 'e'"), "%s", err.msg);
    /* A keyword outside the subset is refused, not ignored. */
    cr_assert_eq(check_against("{\"type\":\"object\",\"maxProperties\":1}", "{}", &err), VT_EINPUT);
    /* const and enum compare arrays element by element and objects member
     * by member (whatever their order). */
    const char *c = "{\"properties\":{\"a\":{\"const\":[1,2]},\"o\":{\"enum\":[{\"x\":1,\"y\":[true]},null]}}}";
    cr_assert_eq(check_against(c, "{\"a\":[1,2],\"o\":{\"y\":[true],\"x\":1}}", &err), VT_OK, "%s", err.msg);
    cr_assert_eq(check_against(c, "{\"o\":null}", &err), VT_OK, "%s", err.msg);
    cr_assert_eq(check_against(c, "{\"a\":[1,3]}", &err), VT_ECHECK);
    cr_assert_eq(check_against(c, "{\"a\":[1]}", &err), VT_ECHECK);
    cr_assert_eq(check_against(c, "{\"a\":[1,2,3]}", &err), VT_ECHECK);
    cr_assert_eq(check_against(c, "{\"o\":{\"x\":1}}", &err), VT_ECHECK);
    cr_assert_eq(check_against(c, "{\"o\":{\"x\":1,\"z\":[true]}}", &err), VT_ECHECK);
    cr_assert_eq(check_against(c, "{\"o\":{\"x\":2,\"y\":[true]}}", &err), VT_ECHECK);
    cr_assert_eq(check_against(c, "{\"o\":{\"x\":1,\"y\":[false]}}", &err), VT_ECHECK);
    /* A list of types: any one of them, and nothing else. */
    const char *t = "{\"properties\":{\"t\":{\"type\":[\"string\",\"null\"]}}}";
    cr_assert_eq(check_against(t, "{\"t\":\"x\"}", &err), VT_OK, "%s", err.msg);
    cr_assert_eq(check_against(t, "{\"t\":null}", &err), VT_OK, "%s", err.msg);
    cr_assert_eq(check_against(t, "{\"t\":1}", &err), VT_ECHECK);
    cr_assert_str_eq(err.msg, "$.t: number: expected type [\"string\",\"null\"]");
    /* JSON pointer escapes in $ref: ~1 is '/', ~0 is '~'. */
    const char *e = "{\"properties\":{\"p\":{\"$ref\":\"#/$defs/a~1b\"},\"q\":{\"$ref\":\"#/$defs/c~0d\"}},"
                    "\"$defs\":{\"a/b\":{\"type\":\"integer\"},\"c~d\":{\"type\":\"string\"}}}";
    cr_assert_eq(check_against(e, "{\"p\":1,\"q\":\"s\"}", &err), VT_OK, "%s", err.msg);
    cr_assert_eq(check_against(e, "{\"p\":\"x\"}", &err), VT_ECHECK);
    cr_assert_eq(check_against(e, "{\"q\":1}", &err), VT_ECHECK);
}

Test(schema, a_changed_capture_fails_its_schema)
{
    env e;
    setup(&e);
    cr_assert_eq(sh(&e, "'%s' capture --runner engine --model '%s' --prompts '%s' --threads 1 --max-tokens 2 "
                        "--no-timestamp --out '%s'", VT_BIN, e.model, e.prompts, e.out), 0, "%s", e.cmd_err);
    cJSON *doc = check_document(e.out, "#/$defs/capture");
    cJSON *schema = load_json(SCHEMA);
    cJSON *run = cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "runs"), 1);
    cJSON_ReplaceItemInObject(run, "status", cJSON_CreateString("done"));
    vt_error err;
    vt_error_clear(&err);
    cr_assert_eq(vt_json_schema_check(schema, schema, doc, &err), VT_ECHECK);
    cr_assert(strstr(err.msg, "$.runs[1].status: expected one of"), "%s", err.msg);
    /* And its seal no longer recomputes. */
    cr_assert_eq(vt_capture_verify_seals(doc, &err), VT_ECHECK);
    cr_assert(strstr(err.msg, "field seal: "), "%s", err.msg);
    cJSON_Delete(schema);
    cJSON_Delete(doc);
    teardown(&e);
}

/* ------------------------------------------------------ resolved settings */

static void expect_resolved(const char *runner, const char *model, vt_exec_mode mode, int32_t threads,
                            int32_t n_batch, int32_t want_threads, int32_t want_batch, int32_t want_ctx)
{
    vt_runner_settings s;
    vt_runner_settings_default(&s);
    s.model_path = model;
    s.mode = mode;
    s.n_threads = threads;
    s.n_ctx = 16;
    s.n_batch = n_batch;
    s.matmul = VT_MATMUL_EXACT;
    vt_error err;
    vt_error_clear(&err);
    vt_runner *r = vt_runner_open(vt_runner_find(runner), &s, &err);
    cr_assert_not_null(r, "%s", err.msg);
    vt_runner_settings res;
    vt_runner_resolved(r, &res);
    cr_assert_eq(res.mode, mode, "%s", runner);
    cr_assert_eq(res.cache_dtype, VT_CACHE_F32, "%s: auto resolves to f32", runner);
    cr_assert_eq(res.n_threads, want_threads, "%s: threads %d", runner, res.n_threads);
    cr_assert_eq(res.n_batch, want_batch, "%s: n_batch %d", runner, res.n_batch);
    cr_assert_eq(res.n_ctx, want_ctx, "%s: n_ctx %d", runner, res.n_ctx);
    /* The engine does what it is asked; llama.cpp's CPU backend is q8. */
    cr_assert_eq(res.matmul, strcmp(runner, "engine") == 0 ? VT_MATMUL_EXACT : VT_MATMUL_Q8, "%s", runner);
    vt_runner_close(r);
}

Test(runner, resolved_settings)
{
    env e;
    setup(&e);
    expect_resolved("engine", e.model, VT_MODE_EAGER, 2, 64, 1, 1, 16);
    expect_resolved("engine", e.model, VT_MODE_PRODUCTION, 1, 64, 1, 16, 16);
    /* llama.cpp's, read back from its context: it sizes contexts in
     * multiples of 256 cells, whatever was asked. */
    expect_resolved("llamacpp", e.model, VT_MODE_EAGER, 2, 64, 1, 1, 256);
    expect_resolved("llamacpp", e.model, VT_MODE_PRODUCTION, 1, 64, 1, 16, 256);
    expect_resolved("llamacpp", e.model, VT_MODE_PRODUCTION, 2, 8, 2, 8, 256);
    teardown(&e);
}

/* ---------------------------------------------- determinism, judged run by run */

#include "capture/capture_internal.h"

/* A runner of the test's own: from its second run on (reset counts runs),
 * row 0 of the logits changes by `change` at token 3 (by 5, the argmax
 * moves there: the tokens differ too). */
static int fake_runs;
static float fake_change;
static int nd_open(const vt_runner_settings *s, void **state, vt_error *err)
{
    (void)s;
    (void)err;
    fake_runs = 0;
    *state = &fake_runs;
    return VT_OK;
}
static int nd_reset(void *state, vt_error *err)
{
    (void)err;
    (*(int *)state)++;
    return VT_OK;
}
static int nd_eval(void *state, const int32_t *tokens, int32_t n, int all, float *logits, vt_error *err)
{
    (void)tokens;
    (void)err;
    for (int32_t i = 0; i < (all ? n : 1); i++) {
        float *row = logits + (size_t)i * 8;
        for (int v = 0; v < 8; v++)
            row[v] = v == 1 ? 2.0f : 0.0f;
        if (*(int *)state >= 2 && i == 0)
            row[3] += fake_change;
    }
    return VT_OK;
}
static int32_t nd_n_vocab(void *state)
{
    (void)state;
    return 8;
}
static void nd_identity(void *state, vt_runner_identity *out)
{
    (void)state;
    *out = (vt_runner_identity){ "fake", "1", "cpu", "cpu", "", "" };
}
static void nd_close(void *state) { (void)state; }
static const vt_runner_ops nd_ops = { .name = "fake", .open = nd_open, .reset = nd_reset, .eval = nd_eval,
                                      .n_vocab = nd_n_vocab, .identity = nd_identity, .close = nd_close };

static void repeat_with(float change, vt_run_results *res)
{
    vt_runner_settings s;
    vt_runner_settings_default(&s);
    s.model_path = "none";
    s.n_ctx = 16;
    s.n_batch = 1;
    s.mode = VT_MODE_EAGER; /* one token per eval: row 0 of each call */
    fake_change = change;
    vt_error err;
    vt_error_clear(&err);
    vt_runner *r = vt_runner_open(&nd_ops, &s, &err);
    cr_assert_not_null(r, "%s", err.msg);
    int32_t prompt[2] = { 1, 2 };
    vt_prompt pr = { .id = "p", .tokens = prompt, .n_tokens = 2 };
    vt_prompt_set ps = { .items = &pr, .n = 1 };
    vt_run_plan plan = { &ps, NULL, NULL, 2, 3, 0, VT_SHAPE_REPLAY, NULL };
    cr_assert_eq(vt_capture_repeat(r, &plan, NULL, NULL, res, &err), VT_OK, "%s", err.msg);
    vt_runner_close(r);
}

Test(capture, repeats_that_differ_are_named_by_their_first_difference)
{
    vt_run_results res;
    /* Identical runs. */
    repeat_with(0.0f, &res);
    cr_assert(res.identical_tokens && res.identical_logits && !res.has_mismatch && res.n_runs == 2);
    vt_run_results_free(&res);
    /* The logits move, the tokens do not: logits at position 0 (the prompt's
     * last position is the first generated row). */
    repeat_with(0.5f, &res);
    cr_assert(res.identical_tokens && !res.identical_logits && res.has_mismatch);
    cr_assert_str_eq(res.mm_field, "logits");
    cr_assert_eq(res.mm_repeat, 1);
    cr_assert_eq(res.mm_position, 0);
    vt_run_results_free(&res);
    /* Both move at position 0: the logits are named, they came first. */
    repeat_with(5.0f, &res);
    cr_assert(!res.identical_tokens && !res.identical_logits && res.has_mismatch);
    cr_assert_str_eq(res.mm_field, "logits");
    cr_assert_eq(res.mm_position, 0);
    vt_run_results_free(&res);
}

/* The vt.logits/1 reader refuses another version and a frame whose zlib
 * stream is damaged; the intact file reads back. */
Test(capture, logits_side_file_reader_refuses_what_is_not_its_format)
{
    env e;
    setup(&e);
    vt_error err;
    vt_error_clear(&err);
    float logits[2 * 8];
    for (int i = 0; i < 16; i++)
        logits[i] = (float)i / 3.0f;
    vt_logits_writer *w = vt_logits_writer_new(e.dir, &err);
    cr_assert_not_null(w, "%s", err.msg);
    cr_assert_eq(vt_logits_writer_add(w, 0, 0, logits, 2, 8, &err), VT_OK, "%s", err.msg);
    vt_sha256_hex sha;
    uint64_t size;
    cr_assert_eq(vt_logits_writer_finish(w, &sha, &size, &err), VT_OK, "%s", err.msg);
    int fd = open(e.logits, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    cr_assert_eq(vt_logits_writer_copy(w, fd, &err), VT_OK, "%s", err.msg);
    close(fd);
    vt_logits_writer_free(w);
    size_t n;
    char *good = slurp(e.logits, &n);
    cr_assert_eq(n, size);
    float back[16];
    vt_logits_frame h;
    for (int k = 0; k < 4; k++) {
        char *b = malloc(n);
        memcpy(b, good, n);
        if (k == 1)
            b[8] = 2; /* version 2 */
        if (k == 2)
            b[0] = 'X'; /* another magic */
        if (k == 3)
            b[16 + 28 + 4] ^= 0x55; /* inside the frame's zlib stream */
        vt_test_spit(e.logits, b, n);
        free(b);
        vt_logits_reader *r = vt_logits_reader_open(e.logits, &err);
        if (k == 1 || k == 2) {
            cr_assert_null(r, "case %d opened", k);
            cr_assert(strstr(err.msg, "offset 0: header: expected \"VTLOGITS\" version 1"), "%s", err.msg);
            continue;
        }
        cr_assert_not_null(r, "%s", err.msg);
        cr_assert_eq(vt_logits_reader_next(r, &h, &err), 1, "%s", err.msg);
        cr_assert(h.positions == 2 && h.vocab == 8);
        int rc = vt_logits_reader_data(r, back, &err);
        if (k == 0) {
            cr_assert_eq(rc, VT_OK, "%s", err.msg);
            cr_assert(memcmp(back, logits, sizeof logits) == 0);
        } else {
            cr_assert_eq(rc, VT_EINPUT);
            cr_assert(strstr(err.msg, "offset 16: frame data: expected a zlib stream of 64 bytes"), "%s", err.msg);
        }
        vt_logits_reader_close(r);
    }
    free(good);
    teardown(&e);
}

/* ---------------------------------------------------- the summary, --json */

/* vt-capture's closing summary printed again from its --json document. */
static void summary_text_of(const cJSON *doc, char *out, size_t cap)
{
    size_t k = 0;
    k += (size_t)snprintf(out + k, cap - k, "vt-capture: wrote %s (%s): %d prompts x %d repeats, %d runs (%d failed), "
                          "%lld positions\n", get(doc, "out")->valuestring, get(doc, "format")->valuestring,
                          (int)get(doc, "prompts")->valuedouble, (int)get(doc, "repetitions")->valuedouble,
                          (int)get(doc, "runs")->valuedouble, (int)get(doc, "failed_runs")->valuedouble,
                          (long long)get(doc, "positions")->valuedouble);
    const cJSON *d = get(doc, "determinism");
    k += (size_t)snprintf(out + k, cap - k, "  determinism: tokens %s, logits %s\n",
                          cJSON_IsTrue(get(d, "identical_tokens")) ? "identical" : "DIFFER",
                          cJSON_IsTrue(get(d, "identical_logits")) ? "identical" : "DIFFER");
    const cJSON *lg = get(doc, "logits"), *tk = get(doc, "topk");
    if (!cJSON_IsNull(lg))
        k += (size_t)snprintf(out + k, cap - k, "  logits: %s sha256 %s\n", get(lg, "path")->valuestring,
                              get(lg, "sha256")->valuestring);
    if (!cJSON_IsNull(tk))
        k += (size_t)snprintf(out + k, cap - k, "  top-k: %s sha256 %s\n", get(tk, "path")->valuestring,
                              get(tk, "sha256")->valuestring);
    k += (size_t)snprintf(out + k, cap - k, "  workload_seal %s\n  seal %s\n", get(doc, "workload_seal")->valuestring,
                          get(doc, "seal")->valuestring);
    const cJSON *st = get(doc, "strict");
    int n = cJSON_GetArraySize(get(st, "reasons"));
    if (cJSON_IsTrue(get(st, "requested")))
        snprintf(out + k, cap - k, "  strict: every gate passed\n");
    else if (n)
        snprintf(out + k, cap - k, "  not strict-publishable: %d reason%s (run with --strict to list them)\n", n,
                 n == 1 ? "" : "s");
}

static cJSON *summary_doc(const char *out)
{
    vt_error err;
    vt_error_clear(&err);
    cJSON *doc = vt_json_parse(out, strlen(out), "stdout", &err);
    cr_assert_not_null(doc, "%s:\n%s", err.msg, out);
    cr_assert_str_eq(get(doc, "schema")->valuestring, "vt.capture-summary/1");
    return doc;
}

/* vt-capture --json (vt.capture-summary/1): the closing summary's values,
 * from which its text is printed again exactly (a run without and a strict
 * run with every gate passed, each published and sealed as the document
 * says); a strict run the gate refuses: exit 1 with the document
 * (published false, every reason with its rule, the same as stderr's) and
 * nothing written; bad input: exit 2, no document. */
Test(summary, json_is_the_closing_summary)
{
    env e;
    setup(&e);
    static char text[1 << 16];
    const char *base = "--model '%s' --prompts '%s' --threads 1 --max-tokens 4 --top-k 5 --no-timestamp --out '%s'";
    for (int strict = 0; strict < 2; strict++) {
        char args[2048], cmd[3000];
        snprintf(args, sizeof args, base, e.model, e.prompts, e.out);
        if (strict)
            snprintf(cmd, sizeof cmd, "%s --repetitions 10 --strict --model-manifest '%s' --launcher-manifest '%s'",
                     args, e.manifest, e.launcher);
        else
            snprintf(cmd, sizeof cmd, "%s --repetitions 2 --logits-out '%s'", args, e.logits);
        cr_assert_eq(sh(&e, "'%s' capture --runner engine %s", VT_BIN, cmd), 0, "%s", e.cmd_err);
        snprintf(text, sizeof text, "%s", e.cmd_out);
        cr_assert_eq(sh(&e, "rm -f '%s' '%s' '%s'", e.out, e.logits, e.topk), 0);
        cr_assert_eq(sh(&e, "'%s' capture --runner engine %s --json", VT_BIN, cmd), 0, "%s", e.cmd_err);
        cJSON *doc = summary_doc(e.cmd_out);
        char again[8192];
        summary_text_of(doc, again, sizeof again);
        cr_assert_str_eq(text, again, "the text from the JSON's values");
        cr_assert(cJSON_IsTrue(get(doc, "published")));
        cr_assert_eq(get(doc, "runs")->valuedouble, strict ? 20 : 4);
        const cJSON *st = get(doc, "strict");
        cr_assert_eq(cJSON_IsTrue(get(st, "requested")), strict);
        cr_assert_eq(cJSON_IsTrue(get(st, "passed")), strict, "without --strict: 2 repeats, no manifests");
        /* What was published is what it says. */
        cJSON *c = load_json(e.out);
        cr_assert_str_eq(get(c, "seal")->valuestring, get(doc, "seal")->valuestring);
        cr_assert_str_eq(get(c, "workload_seal")->valuestring, get(doc, "workload_seal")->valuestring);
        cJSON_Delete(c);
        vt_sha256_hex h;
        vt_error err;
        cr_assert_eq(vt_sha256_file(e.topk, &h, NULL, &err), VT_OK, "%s", err.msg);
        cr_assert_str_eq(get(get(doc, "topk"), "sha256")->valuestring, h.hex);
        cJSON_Delete(doc);
        cr_assert_eq(sh(&e, "rm -f '%s' '%s' '%s'", e.out, e.logits, e.topk), 0);
    }
    /* The gate refuses: 9 repeats. */
    int rc = sh(&e, "'%s' capture --runner engine " STRICT_ARGS " --repetitions 9 --model-manifest '%s' "
                    "--launcher-manifest '%s' --out '%s' --json",
                VT_BIN, e.model, e.prompts, e.manifest, e.launcher, e.out);
    expect_refused(&e, rc, "by rule repeats (1 reason): settings.resolved.repetitions: 9: expected at least 10 repeats");
    cJSON *doc = summary_doc(e.cmd_out);
    cr_assert(cJSON_IsFalse(get(doc, "published")));
    const cJSON *st = get(doc, "strict");
    cr_assert(cJSON_IsTrue(get(st, "requested")) && cJSON_IsFalse(get(st, "passed")));
    const cJSON *reasons = get(st, "reasons");
    cr_assert_eq(cJSON_GetArraySize(reasons), 1);
    const cJSON *r0 = cJSON_GetArrayItem(reasons, 0);
    cr_assert_str_eq(get(r0, "rule")->valuestring, "repeats");
    cr_assert_str_eq(get(r0, "text")->valuestring, "settings.resolved.repetitions: 9: expected at least 10 repeats");
    cr_assert(strstr(e.cmd_err, get(r0, "text")->valuestring), "%s", e.cmd_err);
    cr_assert_eq(get(doc, "repetitions")->valuedouble, 9);
    cJSON_Delete(doc);
    /* Bad input: exit 2, no document. */
    rc = sh(&e, "'%s' capture --runner engine " STRICT_ARGS " --repetitions 0 --out '%s' --json", VT_BIN, e.model,
            e.prompts, e.out);
    cr_assert_eq(rc, 2, "%s", e.cmd_err);
    cr_assert_str_eq(e.cmd_out, "");
    cr_assert_eq(count_lines(e.cmd_err), 1, "%s", e.cmd_err);
    teardown(&e);
}

/* Found by fuzz/fuzz_topk.c (fuzz/regressions/fuzz_topk/k0-divides-by-zero):
 * k 0 divided by zero; what the caller says of the file is bounded before
 * any arithmetic, and a wrapping size product cannot match a short file. */
Test(topk_file, what_the_capture_says_is_bounded_before_use)
{
    char path[] = "/tmp/vt-topk-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, "VTTOPK\0\0\1\0\0\0\0\0\0\0", 16), 16);
    close(fd);
    vt_sha256_hex sha;
    vt_sha256_buffer("VTTOPK\0\0\1\0\0\0\0\0\0\0", 16, &sha);
    struct { int32_t k; int64_t positions; int32_t n_vocab; } bad[] = {
        { 0, 0, 10 }, { -1, 0, 10 }, { 1, -1, 10 }, { 1, (int64_t)1 << 61, 10 }, { 1, 0, 0 }, { 1 << 21, 0, 10 },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        vt_topk_file f;
        vt_error err;
        cr_assert_eq(vt_topk_file_open(path, bad[i].k, bad[i].positions, bad[i].n_vocab, sha.hex, &f, &err),
                     VT_EINPUT, "case %zu accepted", i);
        cr_assert(strstr(err.msg, path) && strstr(err.msg, "expected k in 1..1048576"), "%s", err.msg);
        cr_assert_eq(f.fd, -1);
    }
    unlink(path);
}
