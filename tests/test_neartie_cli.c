/* vt-neartie through the tool (VT_BIN neartie), on
 *  - hand-made captures, written here with the canonical writer and sealed
 *    as capture.h says: the seeds' example (16 prompts x 16 tokens, 15
 *    strict and one near-tie-only prompt with one 125 milli-nat gap and 255
 *    zero gaps), the same at 600 (failed, exit 1), the boundary at 500;
 *  - every guard, triggered alone, with its message, and --allow-diff
 *    letting the allowable ones through and recording them;
 *  - malformed inputs (seal, schema, canonical form) refused with exit 2;
 *  - real captures of tiny F32 and Q8_0 fixtures by the engine and by
 *    llama.cpp: every prompt strict (--require-strict N passes), and one
 *    engine token changed (and the capture properly re-sealed) failing the
 *    gate;
 *  - the JUnit XML well-formed (tags matched, one <testcase> per prompt,
 *    one <failure> per failed prompt, markup escaped) and the report's seal
 *    recomputing;
 *  - the fast reader's canonical-number test against the definition. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include "capture/canonical_json.h"
#include "capture/capture.h"
#include "capture/capture_read.h"
#include "capture/strict.h"
#include "compare/guards.h"
#include "compare/neartie_report.h"
#include "provenance/provenance.h"
#include "tests/support/vt_test.h"

#define slurp(path, len) vt_test_slurp(path, len)
#define exists(path) vt_test_exists(path)
#define sh(e, ...) VT_TEST_SH(e, __VA_ARGS__)
#define get(o, key) vt_test_get(o, key)
#define load_json(path) vt_test_load_json(path)
#define spit(path, data, n) vt_test_spit(path, data, n)

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

enum { P = 16, T = 16, REPS = 10, VOCAB = 151936 };
#define VOCAB_SHA "7777777777777777777777777777777777777777777777777777777777777777"

typedef struct env {
    char dir[64];
    char L[128], O[128], S[128], R[128], J[128];
    char cmd_out[1 << 17], cmd_err[1 << 16];
} env;

/* ---------------------------------------------------------------- helpers */

static void setup(env *e)
{
    memset(e, 0, sizeof *e);
    snprintf(e->dir, sizeof e->dir, "/tmp/vt-neartie-XXXXXX");
    cr_assert_not_null(mkdtemp(e->dir));
    snprintf(e->L, sizeof e->L, "%s/L.json", e->dir);
    snprintf(e->O, sizeof e->O, "%s/O.json", e->dir);
    snprintf(e->S, sizeof e->S, "%s/S.json", e->dir);
    snprintf(e->R, sizeof e->R, "%s/R.json", e->dir);
    snprintf(e->J, sizeof e->J, "%s/J.xml", e->dir);
}

static void teardown(env *e)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", e->dir);
    cr_assert_eq(system(cmd), 0);
}

/* ------------------------------------------------- hand-made documents */

/* The seeds' example: every prompt identical with zero gaps, except prompt
 * 15, which diverges at position 7 (local 760, oracle 9175) and differs to
 * the end; the oracle, teacher-forced on the local stream, prefers 9175 at
 * position 7 by gap milli-nats and agrees with every other local token. */
typedef struct streams {
    int32_t local[P][T], oracle[P][T], argmax[P][T];
    double lp[P][T], alp[P][T];
} streams;

static void seed_streams(streams *s, double gap_mnats)
{
    for (int p = 0; p < P; p++)
        for (int i = 0; i < T; i++) {
            s->local[p][i] = s->oracle[p][i] = s->argmax[p][i] = 1000 + 17 * p + i;
            s->lp[p][i] = s->alp[p][i] = -0.25;
        }
    for (int i = 7; i < T; i++) {
        s->local[15][i] = s->argmax[15][i] = i == 7 ? 760 : 5000 + i;
        s->oracle[15][i] = i == 7 ? 9175 : 6000 + i;
    }
    s->argmax[15][7] = 9175;
    s->lp[15][7] = -0.25 - gap_mnats / 1000.0; /* exact in binary for 125, 500 */
}

static void add_ints(cJSON *o, const char *key, const int32_t *v, int n)
{
    cJSON *a = cJSON_AddArrayToObject(o, key);
    for (int i = 0; i < n; i++)
        cJSON_AddItemToArray(a, cJSON_CreateNumber(v[i]));
}

static void add_doubles(cJSON *o, const char *key, const double *v, int n)
{
    cJSON *a = cJSON_AddArrayToObject(o, key);
    for (int i = 0; i < n; i++)
        cJSON_AddItemToArray(a, cJSON_CreateNumber(v[i]));
}

static cJSON *model_json(void)
{
    cJSON *m = cJSON_CreateObject();
    cJSON *f = cJSON_CreateObject();
    cJSON_AddStringToObject(f, "name", "model.gguf");
    cJSON_AddNumberToObject(f, "size", 1000);
    cJSON_AddStringToObject(f, "sha256", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
    cJSON_AddItemToArray(cJSON_AddArrayToObject(m, "files"), f);
    cJSON_AddNullToObject(m, "revision");
    cJSON_AddStringToObject(m, "arch", "qwen3");
    cJSON *g = cJSON_AddObjectToObject(m, "gguf");
    cJSON_AddNumberToObject(g, "version", 3);
    cJSON_AddNumberToObject(g, "n_kv", 30);
    cJSON_AddNumberToObject(g, "n_tensors", 300);
    cJSON_AddNullToObject(g, "name");
    cJSON_AddNumberToObject(g, "file_type", 7);
    cJSON_AddNullToObject(g, "context_length");
    cJSON_AddNullToObject(g, "block_count");
    cJSON_AddNullToObject(g, "embedding_length");
    cJSON_AddNumberToObject(g, "n_vocab", VOCAB);
    cJSON_AddStringToObject(g, "tokenizer_pre", "qwen2");
    cJSON_AddStringToObject(g, "vocab_sha256", VOCAB_SHA);
    cJSON_AddNumberToObject(cJSON_AddObjectToObject(g, "tensor_types"), "Q8_0", 300);
    cJSON_AddBoolToObject(m, "verified", 1);
    cJSON_AddArrayToObject(m, "problems");
    cJSON *mf = cJSON_AddObjectToObject(m, "manifest");
    cJSON_AddStringToObject(mf, "file", "model-manifest.json");
    cJSON_AddStringToObject(mf, "sha256", "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee");
    return m;
}

/* A resolved runtime: vt's binary, and for llamacpp its libraries from
 * the package (package_json) among the loaded objects. */
static void add_object(cJSON *objs, const char *path, const char *sha)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "path", path);
    cJSON_AddNumberToObject(o, "size", 4096);
    cJSON_AddStringToObject(o, "sha256", sha);
    cJSON_AddItemToArray(objs, o);
}

static cJSON *runtime_json(const char *runner)
{
    int lc = strcmp(runner, "llamacpp") == 0;
    cJSON *rt = cJSON_CreateObject();
    cJSON *r = cJSON_AddObjectToObject(rt, "runner");
    cJSON_AddStringToObject(r, "name", runner);
    cJSON_AddStringToObject(r, "version", "1");
    cJSON_AddStringToObject(r, "backend", "cpu");
    cJSON_AddStringToObject(r, "device", "cpu");
    if (lc)
        cJSON_AddStringToObject(r, "library", "/pkg/bins/libllama.so");
    else
        cJSON_AddStringToObject(r, "library", "");
    cJSON_AddNullToObject(r, "detail");
    cJSON *b = cJSON_AddObjectToObject(rt, "binary");
    cJSON_AddStringToObject(b, "path", "/usr/bin/vt");
    cJSON_AddStringToObject(b, "sha256", "1111111111111111111111111111111111111111111111111111111111111111");
    cJSON *objs = cJSON_AddArrayToObject(rt, "objects");
    if (lc) {
        add_object(objs, "/pkg/bins/libggml-cpu-zen4.so", "3333333333333333333333333333333333333333333333333333333333333333");
        add_object(objs, "/pkg/bins/libllama.so", "4444444444444444444444444444444444444444444444444444444444444444");
    }
    add_object(objs, "/usr/lib/libc.so.6", "2222222222222222222222222222222222222222222222222222222222222222");
    cJSON *l = cJSON_AddObjectToObject(rt, "libraries");
    static const char *const libs[] = { "openssl", "libarchive", "zlib", "cjson", "pcre2" };
    for (int i = 0; i < 5; i++)
        cJSON_AddStringToObject(l, libs[i], "1.0");
    cJSON *cpu = cJSON_AddObjectToObject(rt, "cpu");
    cJSON_AddStringToObject(cpu, "model", "test cpu");
    cJSON_AddStringToObject(cpu, "flags", "avx2");
    cJSON_AddStringToObject(cpu, "machine", "x86_64");
    cJSON_AddNumberToObject(cpu, "cores", 2);
    cJSON_AddNumberToObject(cpu, "cores_usable", 2);
    cJSON_AddStringToObject(rt, "kernel", "6.1");
    cJSON_AddNumberToObject(rt, "threads", 1);
    cJSON_AddBoolToObject(rt, "resolved", 1);
    return rt;
}

/* llamacpp's code comes from its npm package: verified, its libraries
 * among the loaded objects. The engine has none. */
static cJSON *package_json(const char *runner)
{
    if (strcmp(runner, "llamacpp") != 0)
        return cJSON_CreateNull();
    cJSON *k = cJSON_CreateObject();
    cJSON_AddStringToObject(k, "kind", "npm");
    cJSON_AddStringToObject(k, "file", "node-llama-cpp-linux-x64-3.22.1.tgz");
    cJSON_AddStringToObject(k, "sha256", "5555555555555555555555555555555555555555555555555555555555555555");
    cJSON_AddStringToObject(k, "name", "@node-llama-cpp/linux-x64");
    cJSON_AddStringToObject(k, "integrity", "sha512-x");
    cJSON_AddStringToObject(k, "computed_integrity", "sha512-x");
    cJSON_AddStringToObject(k, "root", "/pkg");
    cJSON *ld = cJSON_AddArrayToObject(k, "loaded");
    cJSON_AddItemToArray(ld, cJSON_CreateString("bins/libggml-cpu-zen4.so"));
    cJSON_AddItemToArray(ld, cJSON_CreateString("bins/libllama.so"));
    cJSON_AddNumberToObject(k, "members_checked", 2);
    cJSON_AddBoolToObject(k, "verified", 1);
    cJSON_AddArrayToObject(k, "problems");
    cJSON_AddArrayToObject(k, "notes");
    return k;
}

static cJSON *launcher_json(void)
{
    cJSON *l = cJSON_CreateObject();
    cJSON_AddStringToObject(l, "file", "launcher.json");
    cJSON_AddStringToObject(l, "sha256", "6666666666666666666666666666666666666666666666666666666666666666");
    cJSON_AddBoolToObject(l, "attested", 1);
    cJSON *m = cJSON_AddObjectToObject(l, "manifest");
    cJSON_AddStringToObject(m, "launcher", "test_neartie_cli");
    cJSON_AddStringToObject(m, "host", "testhost");
    cJSON_AddItemToArray(cJSON_AddArrayToObject(m, "command"), cJSON_CreateString("test_neartie_cli"));
    return l;
}

/* A run's logits_sha256: the same for every repeat of a prompt (determinism). */
static void add_logits_sha(cJSON *r, const char *runner, int p)
{
    char what[64];
    snprintf(what, sizeof what, "%s logits of prompt %d", runner, p);
    vt_sha256_hex h;
    vt_sha256_buffer(what, strlen(what), &h);
    cJSON_AddStringToObject(r, "logits_sha256", h.hex);
}

static cJSON *settings_json(int prefix, int reps)
{
    cJSON *s = cJSON_CreateObject();
    cJSON_AddStringToObject(s, "mode", "production");
    cJSON_AddStringToObject(s, "cache_dtype", "f32");
    cJSON_AddStringToObject(s, "matmul", "q8");
    cJSON_AddNumberToObject(s, "threads", 1);
    cJSON_AddNumberToObject(s, "n_ctx", 24);
    cJSON_AddNumberToObject(s, "n_batch", 24);
    if (prefix) {
        cJSON_AddNumberToObject(s, "repetitions", reps);
        return s;
    }
    cJSON_AddNumberToObject(s, "seed", 0);
    cJSON_AddNumberToObject(s, "repetitions", reps);
    cJSON_AddNumberToObject(s, "max_tokens", T);
    cJSON_AddNumberToObject(s, "logprobs_top_k", 2);
    cJSON *sp = cJSON_AddObjectToObject(s, "sampling");
    cJSON_AddNumberToObject(sp, "temperature", 0);
    cJSON_AddNumberToObject(sp, "top_k", 0);
    cJSON_AddNumberToObject(sp, "top_p", 1);
    cJSON_AddNumberToObject(sp, "min_p", 0);
    return s;
}

static cJSON *prompts_json(void)
{
    cJSON *a = cJSON_CreateArray();
    for (int p = 0; p < P; p++) {
        int32_t t[8];
        unsigned char b[32];
        for (int i = 0; i < 8; i++) {
            t[i] = 100 + 8 * p + i;
            for (int k = 0; k < 4; k++)
                b[4 * i + k] = (unsigned char)((uint32_t)t[i] >> (8 * k));
        }
        cJSON *e = cJSON_CreateObject();
        char id[16];
        snprintf(id, sizeof id, "p%02d", p);
        cJSON_AddStringToObject(e, "id", id);
        add_ints(e, "tokens", t, 8);
        vt_sha256_hex h;
        vt_sha256_buffer(b, sizeof b, &h);
        cJSON_AddStringToObject(e, "sha256", h.hex);
        cJSON_AddItemToArray(a, e);
    }
    return a;
}

static cJSON *run_json(const char *runner, int p, int rep, const int32_t *tokens, int n)
{
    cJSON *r = cJSON_CreateObject();
    cJSON_AddNumberToObject(r, "prompt", p);
    cJSON_AddNumberToObject(r, "repeat", rep);
    cJSON_AddStringToObject(r, "status", "ok");
    add_ints(r, "tokens", tokens, n);
    cJSON *top = cJSON_AddArrayToObject(r, "topk");
    for (int i = 0; i < n; i++) {
        cJSON *pos = cJSON_CreateArray();
        for (int k = 0; k < 2; k++) {
            cJSON *e = cJSON_CreateObject();
            cJSON_AddNumberToObject(e, "id", tokens[i] + k);
            cJSON_AddNumberToObject(e, "logprob", k ? -2.5 - 0.001 * i : -0.25);
            cJSON_AddItemToArray(pos, e);
        }
        cJSON_AddItemToArray(top, pos);
    }
    add_logits_sha(r, runner, p);
    return r;
}

/* A strict vt.capture/2 of the streams (one per prompt), reps repeats: it
 * says what vt-capture --strict writes (forged, as anyone can). */
static cJSON *capture_doc(const char *runner, int32_t (*tok)[T], int reps)
{
    cJSON *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "schema", VT_CAPTURE_SCHEMA);
    cJSON *tool = cJSON_AddObjectToObject(d, "tool");
    cJSON_AddStringToObject(tool, "name", "vt-capture");
    cJSON_AddStringToObject(tool, "version", "0.1.0");
    cJSON_AddStringToObject(tool, "git", "test");
    cJSON_AddItemToObject(d, "model", model_json());
    cJSON_AddItemToObject(d, "runtime", runtime_json(runner));
    cJSON_AddItemToObject(d, "package", package_json(runner));
    cJSON_AddItemToObject(d, "launcher", launcher_json());
    cJSON *set = cJSON_AddObjectToObject(d, "settings");
    cJSON_AddItemToObject(set, "requested", settings_json(0, reps));
    cJSON_AddItemToObject(set, "resolved", settings_json(0, reps));
    cJSON_AddArrayToObject(set, "differences");
    cJSON *pf = cJSON_AddObjectToObject(d, "prompt_file");
    cJSON_AddStringToObject(pf, "name", "prompts.jsonl");
    cJSON_AddNumberToObject(pf, "size", 100);
    cJSON_AddStringToObject(pf, "sha256", "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb");
    cJSON_AddItemToObject(d, "prompts", prompts_json());
    cJSON *runs = cJSON_AddArrayToObject(d, "runs");
    for (int rep = 0; rep < reps; rep++)
        for (int p = 0; p < P; p++)
            cJSON_AddItemToArray(runs, run_json(runner, p, rep, tok[p], T));
    cJSON_AddNullToObject(d, "logits_file");
    cJSON *det = cJSON_AddObjectToObject(d, "determinism");
    cJSON_AddNumberToObject(det, "repeats", reps);
    cJSON_AddBoolToObject(det, "identical_tokens", 1);
    cJSON_AddBoolToObject(det, "identical_logits", 1);
    return d;
}

/* The hand-made runs carry their top-k lists as "topk" members (easy to
 * edit in a test); a capture keeps them in its side file (topk_file.h).
 * Moves them from doc into path's side file (path without .json, plus
 * .topk), in run order, and records it as topk_file, in its place after
 * logits_file. Runs without "topk" (a capture read back) are left alone. */
static void move_topk_to_side_file(cJSON *doc, const char *path)
{
    cJSON *runs = cJSON_GetObjectItemCaseSensitive(doc, "runs");
    if (!runs || !runs->child || !cJSON_GetObjectItemCaseSensitive(runs->child, "topk"))
        return;
    int32_t k = (int32_t)get(get(get(doc, "settings"), "resolved"), "logprobs_top_k")->valuedouble;
    char side[200];
    snprintf(side, sizeof side, "%.*s.topk", (int)strlen(path) - 5, path);
    FILE *f = fopen(side, "wb");
    cr_assert_not_null(f, "%s", side);
    unsigned char h[16] = { 'V', 'T', 'T', 'O', 'P', 'K', 0, 0, 1, 0, 0, 0, (unsigned char)k, 0, 0, 0 };
    fwrite(h, 1, sizeof h, f);
    for (cJSON *r = runs->child; r; r = r->next) {
        cJSON *top = cJSON_DetachItemFromObjectCaseSensitive(r, "topk");
        cr_assert_not_null(top);
        for (const cJSON *pos = top->child; pos; pos = pos->next) {
            cr_assert_eq(cJSON_GetArraySize(pos), k);
            for (const cJSON *x = pos->child; x; x = x->next) {
                uint32_t id = (uint32_t)get(x, "id")->valuedouble;
                float lp = (float)get(x, "logprob")->valuedouble;
                uint32_t u;
                memcpy(&u, &lp, 4);
                unsigned char b[8];
                for (int i = 0; i < 4; i++) {
                    b[i] = (unsigned char)(id >> (8 * i));
                    b[4 + i] = (unsigned char)(u >> (8 * i));
                }
                fwrite(b, 1, 8, f);
            }
        }
        cJSON_Delete(top);
    }
    cr_assert_eq(fclose(f), 0);
    vt_sha256_hex sh;
    uint64_t size;
    vt_error err;
    vt_error_clear(&err);
    cr_assert_eq(vt_sha256_file(side, &sh, &size, &err), VT_OK, "%s", err.msg);
    cJSON *det = cJSON_DetachItemFromObjectCaseSensitive(doc, "determinism");
    cJSON_DeleteItemFromObjectCaseSensitive(doc, "topk_file");
    cJSON *tf = cJSON_AddObjectToObject(doc, "topk_file");
    cJSON_AddStringToObject(tf, "name", strrchr(side, '/') + 1);
    cJSON_AddNumberToObject(tf, "size", (double)size);
    cJSON_AddStringToObject(tf, "sha256", sh.hex);
    cJSON_AddStringToObject(tf, "format", "vt.topk/1");
    cJSON_AddItemToObject(doc, "determinism", det);
}

/* (Re)seals doc as capture.h says and writes it: workload_seal over
 * {model, prompts, settings.resolved}, then seal over everything before
 * it; canonical JSON and a newline. doc is left as written (its runs'
 * top-k lists, if it had them, moved to the side file). */
static void write_sealed(cJSON *doc, const char *path)
{
    cJSON_DeleteItemFromObjectCaseSensitive(doc, "workload_seal");
    cJSON_DeleteItemFromObjectCaseSensitive(doc, "seal");
    move_topk_to_side_file(doc, path);
    vt_error err;
    vt_error_clear(&err);
    cJSON *w = vt_capture_workload(doc);
    cr_assert_not_null(w);
    vt_sha256_hex h;
    cr_assert_eq(vt_canonical_sha256(w, &h, &err), VT_OK, "%s", err.msg);
    cJSON_Delete(w);
    cJSON_AddStringToObject(doc, "workload_seal", h.hex);
    cr_assert_eq(vt_canonical_sha256(doc, &h, &err), VT_OK, "%s", err.msg);
    cJSON_AddStringToObject(doc, "seal", h.hex);
    size_t n;
    char *s = vt_canonical_json(doc, &n, &err);
    cr_assert_not_null(s, "%s", err.msg);
    s = realloc(s, n + 1);
    s[n] = '\n';
    spit(path, s, n + 1);
    free(s);
}

/* The oracle's prefix scores of the local capture at lpath (sealed). */
static cJSON *scores_doc(const char *lpath, const streams *s)
{
    cJSON *L = load_json(lpath);
    vt_sha256_hex fsha;
    vt_error err;
    vt_error_clear(&err);
    cr_assert_eq(vt_sha256_file(lpath, &fsha, NULL, &err), VT_OK);
    cJSON *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "schema", VT_PREFIX_SCORES_SCHEMA);
    cJSON *tool = cJSON_AddObjectToObject(d, "tool");
    cJSON_AddStringToObject(tool, "name", "vt-capture");
    cJSON_AddStringToObject(tool, "version", "0.1.0");
    cJSON_AddStringToObject(tool, "git", "test");
    cJSON *l = cJSON_AddObjectToObject(d, "local");
    cJSON_AddStringToObject(l, "file", "L.json");
    cJSON_AddStringToObject(l, "sha256", fsha.hex);
    cJSON_AddStringToObject(l, "schema", VT_CAPTURE_SCHEMA);
    cJSON_AddStringToObject(l, "seal", get(L, "seal")->valuestring);
    cJSON_AddStringToObject(l, "workload_seal", get(L, "workload_seal")->valuestring);
    cJSON_AddStringToObject(d, "shape", "replay");
    cJSON_AddItemToObject(d, "model", model_json());
    cJSON_AddItemToObject(d, "runtime", runtime_json("llamacpp"));
    cJSON_AddItemToObject(d, "package", package_json("llamacpp"));
    cJSON_AddItemToObject(d, "launcher", launcher_json());
    cJSON *set = cJSON_AddObjectToObject(d, "settings");
    cJSON_AddItemToObject(set, "requested", settings_json(1, 1));
    cJSON_AddItemToObject(set, "resolved", settings_json(1, 1));
    cJSON_AddArrayToObject(set, "differences");
    cJSON_AddItemToObject(d, "prompts", cJSON_Duplicate(get(L, "prompts"), 1));
    cJSON *runs = cJSON_AddArrayToObject(d, "runs");
    /* The scored tokens are the local capture's repeat 0, as written. */
    for (const cJSON *r = get(L, "runs")->child; r; r = r->next) {
        if (get(r, "repeat")->valuedouble != 0)
            continue;
        int p = (int)get(r, "prompt")->valuedouble;
        cJSON *x = cJSON_CreateObject();
        cJSON_AddNumberToObject(x, "prompt", p);
        cJSON_AddNumberToObject(x, "repeat", 0);
        cJSON_AddStringToObject(x, "status", "ok");
        cJSON_AddItemToObject(x, "tokens", cJSON_Duplicate(get(r, "tokens"), 1));
        int n = cJSON_GetArraySize(get(r, "tokens"));
        add_doubles(x, "logprobs", s->lp[p], n);
        add_ints(x, "argmax", s->argmax[p], n);
        add_doubles(x, "argmax_logprobs", s->alp[p], n);
        add_logits_sha(x, "scores", p);
        cJSON_AddItemToArray(runs, x);
    }
    cJSON_AddNullToObject(d, "logits_file");
    cJSON *det = cJSON_AddObjectToObject(d, "determinism");
    cJSON_AddNumberToObject(det, "repeats", 1);
    cJSON_AddBoolToObject(det, "identical_tokens", 1);
    cJSON_AddBoolToObject(det, "identical_logits", 1);
    cJSON_Delete(L);
    return d;
}

/* A case: the three documents as built (tests change them before writing). */
typedef struct docs {
    streams s;
    cJSON *L, *O;
} docs;

static void docs_make(docs *d, double gap)
{
    seed_streams(&d->s, gap);
    d->L = capture_doc("engine", d->s.local, REPS);
    d->O = capture_doc("llamacpp", d->s.oracle, REPS);
}

/* Writes L and O, then scores bound to the L just written; change (may be
 * NULL) edits the scores before they are sealed. */
static void docs_write(env *e, docs *d, void (*change)(cJSON *scores))
{
    write_sealed(d->L, e->L);
    write_sealed(d->O, e->O);
    cJSON *S = scores_doc(e->L, &d->s);
    if (change)
        change(S);
    write_sealed(S, e->S);
    cJSON_Delete(S);
    cJSON_Delete(d->L);
    cJSON_Delete(d->O);
    d->L = d->O = NULL;
}

/* Run in the case's directory, with the names as a user would give them:
 * the messages name the files as given. */
static int neartie(env *e, const char *extra)
{
    unlink(e->R);
    unlink(e->J);
    return sh(e, "cd '%s' && '%s' neartie --local L.json --oracle O.json --prefix-scores S.json --out R.json "
                 "--junit J.xml %s", e->dir, VT_BIN, extra ? extra : "");
}

/* A refusal: exit 2, the message on stderr, nothing written. */
static void expect_refused(env *e, int rc, const char *message)
{
    cr_assert_eq(rc, 2, "exit %d, expected 2; stderr: %s", rc, e->cmd_err);
    cr_assert(strstr(e->cmd_err, message), "stderr lacks '%s':\n%s", message, e->cmd_err);
    cr_assert(!exists(e->R) && !exists(e->J), "output written despite the refusal");
}

/* The report's members; its seal recomputes and it is canonical. */
static cJSON *check_report(const char *path)
{
    size_t n;
    char *text = slurp(path, &n);
    cr_assert_not_null(text, "%s", path);
    cJSON *r = cJSON_ParseWithLength(text, n);
    cr_assert_not_null(r);
    cr_assert_str_eq(get(r, "schema")->valuestring, "vt.neartie-report/4");
    vt_error err;
    vt_error_clear(&err);
    size_t cn;
    char *canon = vt_canonical_json(r, &cn, &err);
    cr_assert(canon && cn + 1 == n && memcmp(canon, text, cn) == 0 && text[cn] == '\n', "not canonical");
    free(canon);
    free(text);
    cJSON *copy = cJSON_Duplicate(r, 1);
    cJSON *seal = cJSON_DetachItemFromObjectCaseSensitive(copy, "seal");
    vt_sha256_hex h;
    cr_assert_eq(vt_canonical_sha256(copy, &h, &err), VT_OK);
    cr_assert_str_eq(h.hex, seal->valuestring, "the report's seal does not recompute");
    cJSON_Delete(seal);
    cJSON_Delete(copy);
    return r;
}

/* The JUnit file through a real XML parser (Python's ElementTree over
 * expat, which refuses what is not well-formed XML 1.0): the root is
 * <testsuites>, with one <testcase> per prompt and one <failure> per
 * failed prompt, and the counts in its attributes say the same. Also
 * checks the properties every report carries. */
static void check_junit(const char *path, int want_cases, int want_failures)
{
    char cmd[1200];
    snprintf(cmd, sizeof cmd,
             "python3 -c 'import sys, xml.etree.ElementTree as E; r = E.parse(sys.argv[1]).getroot(); "
             "p = {x.get(\"name\"): x.get(\"value\") for x in r.iter(\"property\")}; "
             "print(r.tag, len(r.findall(\".//testcase\")), len(r.findall(\".//failure\")), r.get(\"tests\"), "
             "r.get(\"failures\"), p.get(\"strict_evidence\"), p.get(\"scorer_disagreements\"))' '%s' 2>&1", path);
    FILE *f = popen(cmd, "r");
    cr_assert_not_null(f);
    char line[1024] = "";
    size_t n = fread(line, 1, sizeof line - 1, f);
    line[n] = '\0';
    cr_assert_eq(vt_test_exit(pclose(f), cmd, line), 0, "%s: not well-formed XML: %s", path, line);
    char root[64], tests[16], failures[16], strict[16], dis[32];
    int cases = -1, fails = -1;
    cr_assert_eq(sscanf(line, "%63s %d %d %15s %15s %15s %31s", root, &cases, &fails, tests, failures, strict, dis), 7,
                 "%s", line);
    cr_assert_str_eq(root, "testsuites");
    cr_assert_eq(cases, want_cases, "testcases %d", cases);
    cr_assert_eq(fails, want_failures, "failures %d", fails);
    cr_assert_eq(atoi(tests), want_cases, "%s", line);
    cr_assert_eq(atoi(failures), want_failures, "%s", line);
    cr_assert(!strcmp(strict, "true") || !strcmp(strict, "false"), "strict_evidence: %s", line);
    cr_assert_str_neq(dis, "None", "no scorer_disagreements property: %s", line);
}

static const cJSON *report_prompt(const cJSON *r, int p) { return cJSON_GetArrayItem(get(r, "prompts"), p); }

/* ------------------------------------------------ the seeds' example */

Test(seed, fifteen_strict_one_near_tie_125)
{
    env e;
    setup(&e);
    docs d;
    docs_make(&d, 125.0);
    docs_write(&e, &d, NULL);
    int rc = neartie(&e, NULL);
    cr_assert_eq(rc, 0, "exit %d: %s%s", rc, e.cmd_err, e.cmd_out);
    cJSON *r = check_report(e.R);
    const cJSON *t = get(r, "totals");
    cr_assert_eq(get(t, "prompts")->valuedouble, 16);
    cr_assert_eq(get(t, "strict")->valuedouble, 15);
    cr_assert_eq(get(t, "near_tie_only")->valuedouble, 1);
    cr_assert_eq(get(t, "failed")->valuedouble, 0);
    cr_assert_eq(get(t, "positions")->valuedouble, 256);
    cr_assert_eq(get(t, "zero_gaps")->valuedouble, 255);
    cr_assert_eq(get(t, "within_gaps")->valuedouble, 1);
    cr_assert_eq(get(t, "above_gaps")->valuedouble, 0);
    cr_assert_eq(get(t, "max_gap_mnats")->valuedouble, 125);
    const cJSON *p15 = report_prompt(r, 15);
    cr_assert_str_eq(get(p15, "class")->valuestring, "near-tie-only");
    const cJSON *fd = get(p15, "first_divergence");
    cr_assert_eq(get(fd, "position")->valuedouble, 7);
    cr_assert_eq(get(get(fd, "local"), "id")->valuedouble, 760);
    cr_assert_eq(get(get(fd, "oracle"), "id")->valuedouble, 9175);
    cr_assert_eq(get(fd, "gap_mnats")->valuedouble, 125);
    /* Neither capture has the other's token in its top 2 there. */
    cr_assert(cJSON_IsNull(get(fd, "local_margin_mnats")) && cJSON_IsNull(get(fd, "oracle_margin_mnats")));
    cr_assert(cJSON_IsNull(get(report_prompt(r, 0), "first_divergence")));
    cr_assert(cJSON_IsTrue(get(get(r, "gate"), "passed")));
    /* The largest gap, with the local tokens before it. */
    const cJSON *g = cJSON_GetArrayItem(get(r, "largest_gaps"), 0);
    cr_assert_eq(cJSON_GetArraySize(get(r, "largest_gaps")), 1);
    cr_assert_eq(get(g, "position")->valuedouble, 7);
    cr_assert_eq(get(get(g, "oracle"), "id")->valuedouble, 9175);
    cr_assert_eq(cJSON_GetArraySize(get(g, "context")), 4);
    cr_assert_eq(get(cJSON_GetArrayItem(get(g, "context"), 3), "id")->valuedouble, 1000 + 17 * 15 + 6);
    /* No side files, no model file: said so. */
    cr_assert(cJSON_IsFalse(get(get(r, "metrics"), "available")));
    cr_assert(cJSON_IsNull(get(get(r, "token_text"), "file")));
    /* Both captures' seals and the scores' are in the report. */
    cJSON *L = load_json(e.L), *S = load_json(e.S);
    cr_assert_str_eq(get(get(r, "local"), "seal")->valuestring, get(L, "seal")->valuestring);
    cr_assert_str_eq(get(get(r, "prefix_scores"), "seal")->valuestring, get(S, "seal")->valuestring);
    cJSON_Delete(L);
    cJSON_Delete(S);
    cJSON_Delete(r);
    /* The table: one line per prompt, then totals. */
    cr_assert(strstr(e.cmd_out, "p15     near-tie-only      7  760"), "%s", e.cmd_out);
    cr_assert(strstr(e.cmd_out, "9175"), "%s", e.cmd_out);
    cr_assert(strstr(e.cmd_out, "totals: 16 prompts: 15 strict, 1 near-tie-only, 0 within-noise, 0 failed; 256 "
                                "positions: 255 zero gaps, 1 within 500, 0 above"), "%s", e.cmd_out);
    cr_assert(strstr(e.cmd_out, "oracle's noise: not measured (prefix scores in one shape)"), "%s", e.cmd_out);
    check_junit(e.J, 16, 0);
    /* The gate on strict prompts: 15 is enough for 15, not for 16. */
    cr_assert_eq(neartie(&e, "--require-strict 15"), 0, "%s", e.cmd_err);
    cr_assert_eq(neartie(&e, "--require-strict 16"), 1, "%s", e.cmd_err);
    cr_assert(strstr(e.cmd_out, "15 strict prompts: expected at least 16 (--require-strict)"), "%s", e.cmd_out);
    cJSON *r2 = check_report(e.R);
    cr_assert(cJSON_IsFalse(get(get(r2, "gate"), "passed")));
    cJSON_Delete(r2);
    teardown(&e);
}

static cJSON *at(cJSON *root, const char *path);

/* ------------------------------------------------- the oracle's noise */

/* S.json as written, in another shape (and, with mode, another execution
 * mode), with prompt 15's gap at position 7 set to gap milli-nats, sealed
 * to name in the test's directory. */
static void other_shape(env *e, const char *name, const char *shape, const char *mode, double gap)
{
    cJSON *S = load_json(e->S);
    cJSON_SetValuestring(cJSON_GetObjectItemCaseSensitive(S, "shape"), shape);
    if (mode)
        cJSON_SetValuestring(at(S, "settings.resolved.mode"), mode);
    cJSON *run = cJSON_GetArrayItem(at(S, "runs"), 15);
    double alp = cJSON_GetArrayItem(at(run, "argmax_logprobs"), 7)->valuedouble;
    cJSON_SetNumberValue(cJSON_GetArrayItem(at(run, "logprobs"), 7), alp - gap / 1000.0);
    char path[400];
    snprintf(path, sizeof path, "%s/%s", e->dir, name);
    write_sealed(S, path);
    cJSON_Delete(S);
}

static void second_shape(env *e, const char *shape, double gap) { other_shape(e, "S2.json", shape, NULL, gap); }

/* Prompt 15 diverges with a gap of 600 milli-nats in the replayed scores;
 * the batched scores decide whether that is the oracle's noise. */
Test(noise, a_second_shape_decides_a_gap_above_the_threshold)
{
    env e;
    setup(&e);
    docs d;
    docs_make(&d, 600.0);
    docs_write(&e, &d, NULL);
    /* One shape: failed, and the report says the noise was not measured. */
    cr_assert_eq(neartie(&e, NULL), 1, "%s", e.cmd_err);
    cJSON *r = check_report(e.R);
    cr_assert(cJSON_IsFalse(get(get(r, "noise"), "available")));
    cr_assert_str_eq(get(report_prompt(r, 15), "class")->valuestring, "failed");
    cr_assert_eq(get(report_prompt(r, 15), "beyond_noise_gaps")->valuedouble, 1);
    cr_assert(cJSON_IsNull(get(report_prompt(r, 15), "noise_floor_mnats")), "no floor without --score-with");
    cJSON_Delete(r);
    /* The batched scores agree (a self-consistent oracle): still failed. */
    second_shape(&e, "batched", 600.0);
    cr_assert_eq(neartie(&e, "--prefix-scores S2.json"), 1, "%s", e.cmd_err);
    r = check_report(e.R);
    cr_assert(cJSON_IsTrue(get(get(r, "noise"), "available")));
    cr_assert_str_eq(get(get(get(r, "noise"), "second_shape"), "shape")->valuestring, "batched");
    cr_assert_str_eq(get(get(r, "prefix_scores"), "shape")->valuestring, "replay");
    cr_assert_str_eq(get(report_prompt(r, 15), "class")->valuestring, "failed");
    cr_assert_eq(get(get(r, "totals"), "within_noise")->valuedouble, 0);
    cJSON_Delete(r);
    /* Batched puts it within the threshold: within the oracle's noise, not
     * failed; the gate passes and says so; JUnit has no failure. Given in
     * either order, replay is the first shape. */
    second_shape(&e, "batched", 100.0);
    for (int order = 0; order < 2; order++) {
        unlink(e.R);
        unlink(e.J);
        int rc = order ? sh(&e, "cd '%s' && '%s' neartie --local L.json --oracle O.json --prefix-scores S2.json "
                                "--prefix-scores S.json --out R.json --junit J.xml", e.dir, VT_BIN)
                       : neartie(&e, "--prefix-scores S2.json");
        cr_assert_eq(rc, 0, "order %d: exit %d: %s%s", order, rc, e.cmd_err, e.cmd_out);
        r = check_report(e.R);
        const cJSON *p15 = report_prompt(r, 15);
        cr_assert_str_eq(get(p15, "class")->valuestring, "within-noise");
        cr_assert_eq(get(p15, "within_noise_gaps")->valuedouble, 1);
        cr_assert_eq(get(p15, "beyond_noise_gaps")->valuedouble, 0);
        cr_assert_eq(get(p15, "max_gap_mnats")->valuedouble, 600, "the gaps shown are the replayed ones");
        cr_assert_str_eq(get(get(r, "prefix_scores"), "file")->valuestring, "S.json");
        cr_assert_str_eq(get(get(get(r, "noise"), "second_shape"), "file")->valuestring, "S2.json");
        cr_assert_str_eq(get(get(get(r, "noise"), "second_shape"), "scored_by")->valuestring, "file");
        cr_assert_eq(get(get(r, "totals"), "within_noise")->valuedouble, 1);
        cr_assert_eq(get(get(r, "totals"), "failed")->valuedouble, 0);
        cr_assert_eq(get(get(r, "gate"), "within_noise")->valuedouble, 1);
        cr_assert(cJSON_IsTrue(get(get(r, "gate"), "passed")));
        cJSON_Delete(r);
        check_junit(e.J, 16, 0);
        cr_assert(strstr(e.cmd_out, "p15     within-noise       7"), "%s", e.cmd_out);
        cr_assert(strstr(e.cmd_out, "1 positions within the oracle's noise (above the threshold in some shape, within "
                                    "it in another), 0 beyond (above in every shape); above the threshold per shape: "
                                    "replay 1 (max gap 600.000), batched 0 (max gap 100.000)"), "%s", e.cmd_out);
        cr_assert(strstr(e.cmd_out, "gate: --require-strict 0 --max-failed 0: passed; 1 prompt within the oracle's "
                                    "noise, not counted as failed"), "%s", e.cmd_out);
    }
    /* Two files of one shape: refused. */
    second_shape(&e, "replay", 100.0);
    expect_refused(&e, neartie(&e, "--prefix-scores S2.json"),
                   "S.json, S2.json: both scored in shape replay: expected each of replay, batched and eager at most once");
    expect_refused(&e, neartie(&e, "--prefix-scores S2.json --prefix-scores S.json --prefix-scores S2.json"),
                   "--prefix-scores 'S2.json': expected at most three");
    teardown(&e);
}

/* The third shape: the oracle's eager mode (one token per evaluation).
 * Replay and batched both put prompt 15's position 7 above the threshold;
 * eager decides. Eager mode is a shape of its own, whatever the file's
 * shape member says, and it may differ from the oracle's production mode
 * only as a noise shape. */
Test(noise, an_eager_third_shape_decides_what_two_shapes_cannot)
{
    env e;
    setup(&e);
    docs d;
    docs_make(&d, 600.0);
    docs_write(&e, &d, NULL);
    second_shape(&e, "batched", 600.0);
    /* Eager above as well: beyond in all three, failed. */
    other_shape(&e, "S3.json", "replay", "eager", 700.0);
    cr_assert_eq(neartie(&e, "--prefix-scores S2.json --prefix-scores S3.json"), 1, "%s", e.cmd_err);
    cJSON *r = check_report(e.R);
    cr_assert_str_eq(get(report_prompt(r, 15), "class")->valuestring, "failed");
    cr_assert_eq(get(report_prompt(r, 15), "beyond_noise_gaps")->valuedouble, 1);
    cr_assert_eq(get(get(report_prompt(r, 15), "max_gap_by_shape_mnats"), "eager")->valuedouble, 700.0);
    cr_assert_str_eq(get(get(get(r, "noise"), "third_shape"), "noise_shape")->valuestring, "eager");
    cr_assert_eq(cJSON_GetArraySize(get(get(r, "totals"), "shapes")), 3);
    cJSON_Delete(r);
    /* Eager within (100): within the noise, in any order of the files. */
    other_shape(&e, "S3.json", "batched", "eager", 100.0);
    const char *orders[] = { "--prefix-scores S2.json --prefix-scores S3.json",
                             "--prefix-scores S3.json --prefix-scores S2.json" };
    for (int k = 0; k < 2; k++) {
        cr_assert_eq(neartie(&e, orders[k]), 0, "%s", e.cmd_err);
        r = check_report(e.R);
        const cJSON *p15 = report_prompt(r, 15);
        cr_assert_str_eq(get(p15, "class")->valuestring, "within-noise");
        cr_assert_eq(get(p15, "within_noise_gaps")->valuedouble, 1);
        cr_assert_eq(get(p15, "beyond_noise_gaps")->valuedouble, 0);
        cr_assert_eq(get(get(p15, "max_gap_by_shape_mnats"), "replay")->valuedouble, 600.0);
        cr_assert_eq(get(get(p15, "max_gap_by_shape_mnats"), "batched")->valuedouble, 600.0);
        cr_assert_eq(get(get(p15, "max_gap_by_shape_mnats"), "eager")->valuedouble, 100.0);
        cr_assert_str_eq(get(get(get(r, "noise"), "second_shape"), "noise_shape")->valuestring, "batched");
        cr_assert_str_eq(get(get(get(r, "noise"), "third_shape"), "file")->valuestring, "S3.json");
        cr_assert_str_eq(get(get(r, "prefix_scores"), "noise_shape")->valuestring, "replay");
        cJSON_Delete(r);
        cr_assert(strstr(e.cmd_out, "also scored batched and eager: 1 positions within the oracle's noise (above the "
                                    "threshold in some shape, within it in another), 0 beyond (above in every shape); "
                                    "above the threshold per shape: replay 1 (max gap 600.000), batched 1 (max gap "
                                    "600.000), eager 0 (max gap 100.000)"), "%s", e.cmd_out);
    }
    /* Eager with only the replay scores: the same decision from two shapes. */
    cr_assert_eq(neartie(&e, "--prefix-scores S3.json"), 0, "%s", e.cmd_err);
    /* Eager as the only scores: not the oracle's mode, refused; eager
     * twice: refused. */
    unlink(e.R);
    unlink(e.J);
    expect_refused(&e, sh(&e, "cd '%s' && '%s' neartie --local L.json --oracle O.json --prefix-scores S3.json "
                              "--out R.json --junit J.xml", e.dir, VT_BIN),
                   "settings.resolved.mode");
    other_shape(&e, "S4.json", "replay", "eager", 100.0);
    expect_refused(&e, neartie(&e, "--prefix-scores S3.json --prefix-scores S4.json"),
                   "S3.json, S4.json: both scored in shape eager");
    teardown(&e);
}

/* The second shape passes every guard the first does: scores of another
 * local capture are refused. */
Test(noise, the_second_shape_is_guarded)
{
    env e;
    setup(&e);
    docs d;
    docs_make(&d, 600.0);
    docs_write(&e, &d, NULL);
    cJSON *S = load_json(e.S);
    cJSON_SetValuestring(cJSON_GetObjectItemCaseSensitive(S, "shape"), "batched");
    cJSON_SetValuestring(at(S, "local.seal"), "0000000000000000000000000000000000000000000000000000000000000000");
    char path[400];
    snprintf(path, sizeof path, "%s/S2.json", e.dir);
    write_sealed(S, path);
    cJSON_Delete(S);
    expect_refused(&e, neartie(&e, "--prefix-scores S2.json"), "S2.json: refused by rule binding");
    teardown(&e);
}

/* vt.prefix-scores/2 (before the shape was recorded) is still read, as
 * batched: every such document was computed in one batched pass. */
Test(noise, version_2_prefix_scores_are_read_as_batched)
{
    env e;
    setup(&e);
    docs d;
    docs_make(&d, 125.0);
    docs_write(&e, &d, NULL);
    cJSON *S = load_json(e.S);
    cJSON_SetValuestring(cJSON_GetObjectItemCaseSensitive(S, "schema"), "vt.prefix-scores/2");
    cJSON_DeleteItemFromObjectCaseSensitive(S, "shape");
    write_sealed(S, e.S);
    cJSON_Delete(S);
    cr_assert_eq(neartie(&e, NULL), 0, "%s", e.cmd_err);
    cJSON *r = check_report(e.R);
    cr_assert_str_eq(get(get(r, "prefix_scores"), "shape")->valuestring, "batched");
    cr_assert_str_eq(get(report_prompt(r, 15), "class")->valuestring, "near-tie-only");
    cJSON_Delete(r);
    /* A /3 without its shape is malformed. */
    S = load_json(e.S);
    cJSON_SetValuestring(cJSON_GetObjectItemCaseSensitive(S, "schema"), "vt.prefix-scores/3");
    write_sealed(S, e.S);
    cJSON_Delete(S);
    expect_refused(&e, neartie(&e, NULL), "S.json: $: member 'shape' missing: expected it (required)");
    teardown(&e);
}

/* The top-k entry of run r (its index in runs) at position i, slot j. */
static void set_topk(cJSON *doc, int r, int i, int j, int32_t id, double logprob)
{
    cJSON *x = cJSON_GetArrayItem(cJSON_GetArrayItem(at(cJSON_GetArrayItem(at(doc, "runs"), r), "topk"), i), j);
    cJSON_SetNumberValue(cJSON_GetObjectItemCaseSensitive(x, "id"), id);
    cJSON_SetNumberValue(cJSON_GetObjectItemCaseSensitive(x, "logprob"), logprob);
}

Test(seed, margins_at_the_first_divergence_come_from_the_top_k_files)
{
    env e;
    setup(&e);
    docs d;
    docs_make(&d, 125.0);
    /* At prompt 15's divergence the engine ranked the oracle's 9175 second,
     * 31.25 milli-nats behind its own 760; the oracle ranked 760 second,
     * 125 behind 9175 (as its teacher-forced scores say). */
    set_topk(d.L, 15, 7, 1, 9175, -0.28125);
    set_topk(d.O, 15, 7, 1, 760, -0.375);
    docs_write(&e, &d, NULL);
    int rc = neartie(&e, NULL);
    cr_assert_eq(rc, 0, "exit %d: %s%s", rc, e.cmd_err, e.cmd_out);
    cJSON *r = check_report(e.R);
    const cJSON *fd = get(report_prompt(r, 15), "first_divergence");
    cr_assert_eq(get(fd, "local_margin_mnats")->valuedouble, 31.25);
    cr_assert_eq(get(fd, "oracle_margin_mnats")->valuedouble, 125);
    cJSON_Delete(r);
    cr_assert(strstr(e.cmd_out, "  p15 position 7: local 31.250, oracle 125.000\n"), "%s", e.cmd_out);
    char *x = slurp(e.J, NULL);
    cr_assert(strstr(x, "(margins: local 31.250, oracle 125.000)"), "%s", x);
    free(x);
    teardown(&e);
}

Test(seed, the_same_divergence_at_600_fails_the_gate)
{
    env e;
    setup(&e);
    docs d;
    docs_make(&d, 600.0);
    docs_write(&e, &d, NULL);
    int rc = neartie(&e, "--max-failed 0");
    cr_assert_eq(rc, 1, "exit %d: %s", rc, e.cmd_err);
    cJSON *r = check_report(e.R);
    const cJSON *t = get(r, "totals");
    cr_assert_eq(get(t, "strict")->valuedouble, 15);
    cr_assert_eq(get(t, "near_tie_only")->valuedouble, 0);
    cr_assert_eq(get(t, "failed")->valuedouble, 1);
    cr_assert_eq(get(t, "zero_gaps")->valuedouble, 255);
    cr_assert_eq(get(t, "above_gaps")->valuedouble, 1);
    cr_assert_str_eq(get(report_prompt(r, 15), "class")->valuestring, "failed");
    cr_assert(fabs(get(get(report_prompt(r, 15), "first_divergence"), "gap_mnats")->valuedouble - 600) < 1e-6);
    cr_assert(cJSON_IsFalse(get(get(r, "gate"), "passed")));
    cJSON_Delete(r);
    check_junit(e.J, 16, 1);
    char *x = slurp(e.J, NULL);
    cr_assert(strstr(x, "<failure type=\"near-tie\" message=\"failed: first divergence at position 7: local 760, "
                        "oracle 9175, gap 600.000 milli-nats"), "%s", x);
    free(x);
    cr_assert(strstr(e.cmd_out, "1 failed prompts: expected at most 0 (--max-failed)"), "%s", e.cmd_out);
    /* Allowed one failure, the gate holds. */
    cr_assert_eq(neartie(&e, "--max-failed 1"), 0, "%s", e.cmd_err);
    teardown(&e);
}

Test(seed, exactly_500_is_near_tie_and_a_lower_threshold_fails)
{
    env e;
    setup(&e);
    docs d;
    docs_make(&d, 500.0);
    docs_write(&e, &d, NULL);
    cr_assert_eq(neartie(&e, NULL), 0, "%s", e.cmd_err);
    cJSON *r = check_report(e.R);
    cr_assert_str_eq(get(report_prompt(r, 15), "class")->valuestring, "near-tie-only");
    cr_assert_eq(get(get(r, "totals"), "max_gap_mnats")->valuedouble, 500);
    cr_assert_eq(get(r, "threshold_mnats")->valuedouble, 500);
    cJSON_Delete(r);
    cr_assert_eq(neartie(&e, "--threshold-mnats 499.999"), 1, "%s", e.cmd_err);
    r = check_report(e.R);
    cr_assert_str_eq(get(report_prompt(r, 15), "class")->valuestring, "failed");
    cJSON_Delete(r);
    teardown(&e);
}

/* ---------------------------------------------------------------- guards */

static cJSON *at(cJSON *root, const char *path)
{
    char key[64];
    cJSON *v = root;
    while (v && *path) {
        size_t n = strcspn(path, ".");
        snprintf(key, sizeof key, "%.*s", (int)n, path);
        v = cJSON_GetObjectItemCaseSensitive(v, key);
        path += n + (path[n] == '.');
    }
    cr_assert_not_null(v, "no member %s", path);
    return v;
}

static void set_str(cJSON *root, const char *path, const char *value)
{
    cJSON *v = at(root, path);
    cr_assert(cJSON_IsString(v));
    cJSON_SetValuestring(v, value);
}

static void set_num(cJSON *root, const char *path, double value)
{
    cJSON *v = at(root, path);
    cr_assert(cJSON_IsNumber(v));
    cJSON_SetNumberValue(v, value);
}

/* Where --allow-diff FIELD is given, the run passes and the report records
 * that FIELD differed. */
static void expect_allowed(env *e, const char *field)
{
    char extra[128];
    snprintf(extra, sizeof extra, "--allow-diff %s", field);
    int rc = neartie(e, extra);
    cr_assert_eq(rc, 0, "exit %d with %s: %s", rc, extra, e->cmd_err);
    cJSON *r = check_report(e->R);
    const cJSON *a = get(r, "allowed_differences");
    cr_assert_eq(cJSON_GetArraySize(a), 1);
    const cJSON *x = cJSON_GetArrayItem(a, 0);
    cr_assert_str_eq(get(x, "field")->valuestring, field);
    cr_assert(cJSON_IsTrue(get(x, "differs")), "%s: not recorded as differing", field);
    cr_assert_geq(cJSON_GetArraySize(get(x, "differences")), 1);
    cJSON_Delete(r);
    char line[96];
    snprintf(line, sizeof line, "allowed difference: %s:", field);
    cr_assert(strstr(e->cmd_out, line), "%s", e->cmd_out);
}

/* A failed run (prompt p, repeat rep, at index k of runs) in doc. */
static void fail_run(cJSON *doc, int k, int p, int rep, const char *why)
{
    cJSON *run = cJSON_GetArrayItem(at(doc, "runs"), k);
    cJSON *bad = cJSON_CreateObject();
    cJSON_AddNumberToObject(bad, "prompt", p);
    cJSON_AddNumberToObject(bad, "repeat", rep);
    cJSON_AddStringToObject(bad, "status", "error");
    cJSON_AddStringToObject(bad, "error", why);
    cJSON_AddArrayToObject(bad, "tokens");
    if (cJSON_GetObjectItemCaseSensitive(run, "topk"))
        cJSON_AddArrayToObject(bad, "topk");
    cJSON_ReplaceItemViaPointer(at(doc, "runs"), run, bad);
    cJSON *det = at(doc, "determinism");
    cJSON_ReplaceItemInObjectCaseSensitive(det, "identical_tokens", cJSON_CreateFalse());
    cJSON_ReplaceItemInObjectCaseSensitive(det, "identical_logits", cJSON_CreateFalse());
    /* The first run after it that differs: itself, or (repeat 0 failed) the
     * prompt's repeat 1. */
    if (!cJSON_GetObjectItemCaseSensitive(det, "first_mismatch")) {
        cJSON *fm = cJSON_AddObjectToObject(det, "first_mismatch");
        cJSON_AddNumberToObject(fm, "prompt", p);
        cJSON_AddNumberToObject(fm, "repeat", rep > 0 ? rep : 1);
        cJSON_AddNumberToObject(fm, "position", 0);
        cJSON_AddStringToObject(fm, "field", "status");
    }
}

/* Run k (prompt p, repeat rep > 0) given another token at position pos, and
 * the document's determinism saying so (as vt-capture would). */
static void break_determinism(cJSON *doc, int k, int p, int rep, int pos)
{
    cJSON_SetNumberValue(cJSON_GetArrayItem(at(cJSON_GetArrayItem(at(doc, "runs"), k), "tokens"), pos), 42);
    cJSON *det = at(doc, "determinism");
    cJSON_ReplaceItemInObjectCaseSensitive(det, "identical_tokens", cJSON_CreateFalse());
    cJSON *fm = cJSON_AddObjectToObject(det, "first_mismatch");
    cJSON_AddNumberToObject(fm, "prompt", p);
    cJSON_AddNumberToObject(fm, "repeat", rep);
    cJSON_AddNumberToObject(fm, "position", pos);
    cJSON_AddStringToObject(fm, "field", "tokens");
}

/* A vt.capture/1, as vt wrote it before version 2. */
static void to_v1(cJSON *doc)
{
    set_str(doc, "schema", VT_CAPTURE_SCHEMA_V1);
    cJSON_DeleteItemFromObjectCaseSensitive(at(doc, "model.gguf"), "vocab_sha256");
    cJSON_DeleteItemFromObjectCaseSensitive(at(doc, "model"), "problems");
    cJSON_DeleteItemFromObjectCaseSensitive(at(doc, "runtime.runner"), "device");
}

/* ----------------------------------------------- the guards, rule by rule */

/* One row of compare/guards.c's table: a change that triggers it, with
 * the message it must give. Each is run twice: unchanged (it passes) and
 * changed (refused by that rule, exit 2, nothing written). allow: the
 * --allow-diff field that lets it through and is recorded, or NULL. */
typedef struct guard_case {
    const char *rule;
    void (*change)(docs *d);        /* the captures, before they are written */
    void (*change_scores)(cJSON *S); /* the scores, before they are sealed */
    void (*change_files)(env *e);    /* the files, once written */
    const char *message;
    const char *allow;
    const char *extra; /* vt-neartie's options for the run with the defect */
} guard_case;

static void g_same_file(env *e)
{
    char o_topk[200];
    snprintf(o_topk, sizeof o_topk, "%s/O.topk", e->dir);
    unlink(e->O);
    unlink(o_topk);
    cr_assert_eq(link(e->L, e->O), 0);
}

static void g_copy(env *e)
{
    cr_assert_eq(sh(e, "cp '%s' '%s'", e->L, e->O), 0);
}

static void g_same_computation(docs *d)
{
    /* The engine run twice, alike: only the launcher's note differs. */
    cJSON_Delete(d->O);
    d->O = capture_doc("engine", d->s.local, REPS);
    set_str(d->O, "launcher.manifest.host", "otherhost");
}

static void g_not_strict(docs *d)
{
    cJSON_ReplaceItemInObjectCaseSensitive(at(d->L, "model"), "verified", cJSON_CreateFalse());
    cJSON_AddItemToArray(at(d->L, "model.problems"), cJSON_CreateString("model.gguf: sha256 differs"));
}

static void g_run_error(docs *d) { fail_run(d->O, P + 3, 3, 1, "boom: out of memory"); }

static void g_repeats_differ(docs *d) { break_determinism(d->L, P + 2, 2, 1, 5); }

static void g_prompts(docs *d) { set_str(cJSON_GetArrayItem(at(d->O, "prompts"), 3), "id", "q03"); }

static void g_revision(docs *d) { cJSON_ReplaceItemInObject(at(d->O, "model"), "revision", cJSON_CreateString("2fc06364")); }

static void g_gguf_name(docs *d) { cJSON_ReplaceItemInObject(at(d->O, "model.gguf"), "name", cJSON_CreateString("other")); }

static void g_vocab(docs *d)
{
    set_str(d->O, "model.gguf.vocab_sha256", "8888888888888888888888888888888888888888888888888888888888888888");
}

static void g_greedy(docs *d)
{
    set_num(d->O, "settings.resolved.sampling.temperature", 0.7);
    set_num(d->O, "settings.requested.sampling.temperature", 0.7);
}

static void g_repeat_counts(docs *d)
{
    cJSON_Delete(d->O);
    d->O = capture_doc("llamacpp", d->s.oracle, REPS + 1);
}

static void g_cache_dtype(docs *d) { set_str(d->L, "settings.resolved.cache_dtype", "fp8_e4m3"); }

/* The local capture's: the scores follow the oracle's (an allowed
 * difference between the captures never lets the scorer differ). */
static void g_n_ctx(docs *d) { set_num(d->L, "settings.resolved.n_ctx", 48); }

static void g_threads(docs *d) { set_num(d->O, "settings.resolved.threads", 4); }

static void g_scores_run_error(cJSON *S)
{
    cJSON *run = cJSON_GetArrayItem(at(S, "runs"), 5);
    cJSON *bad = cJSON_CreateObject();
    cJSON_AddNumberToObject(bad, "prompt", 5);
    cJSON_AddNumberToObject(bad, "repeat", 0);
    cJSON_AddStringToObject(bad, "status", "error");
    cJSON_AddStringToObject(bad, "error", "scorer crashed");
    cJSON_AddArrayToObject(bad, "tokens");
    cJSON_AddArrayToObject(bad, "logprobs");
    cJSON_AddArrayToObject(bad, "argmax");
    cJSON_AddArrayToObject(bad, "argmax_logprobs");
    cJSON_ReplaceItemViaPointer(at(S, "runs"), run, bad);
    cJSON_ReplaceItemInObjectCaseSensitive(at(S, "determinism"), "identical_tokens", cJSON_CreateFalse());
    cJSON_ReplaceItemInObjectCaseSensitive(at(S, "determinism"), "identical_logits", cJSON_CreateFalse());
}

static void g_wrong_local_seal(cJSON *S)
{
    set_str(S, "local.seal", "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd");
}

static void g_other_stream(cJSON *S)
{
    cJSON_SetNumberValue(cJSON_GetArrayItem(at(cJSON_GetArrayItem(at(S, "runs"), 4), "tokens"), 9), 77);
    /* the argmax there stays the token it scored: consistent scores */
    cJSON_SetNumberValue(cJSON_GetArrayItem(at(cJSON_GetArrayItem(at(S, "runs"), 4), "argmax"), 9), 77);
}

static void g_scorer_version(cJSON *S) { set_str(S, "runtime.runner.version", "2"); }

/* An oracle captured from a server (--runner openai): its scores must come
 * from that server, serving that file. */
static void as_server(cJSON *doc, const char *endpoint, const char *model_path)
{
    cJSON *r = at(doc, "runtime.runner");
    char detail[256];
    snprintf(detail, sizeof detail, "served model 'tiny', server model_path %s; model file tiny.gguf attested by "
             "the operator (--model), not verified", model_path);
    cJSON_ReplaceItemInObjectCaseSensitive(r, "name", cJSON_CreateString("openai"));
    cJSON_ReplaceItemInObjectCaseSensitive(r, "backend", cJSON_CreateString("server"));
    cJSON_ReplaceItemInObjectCaseSensitive(r, "device", cJSON_CreateString("server"));
    cJSON_ReplaceItemInObjectCaseSensitive(r, "library", cJSON_CreateString(endpoint));
    cJSON_ReplaceItemInObjectCaseSensitive(r, "detail", cJSON_CreateString(detail));
}
static void g_oracle_server(docs *d) { as_server(d->O, "http://127.0.0.1:8080", "tiny.gguf"); }
static void g_scores_other_server(cJSON *S) { as_server(S, "http://127.0.0.1:8081", "tiny.gguf"); }
static void g_scores_other_file(cJSON *S) { as_server(S, "http://127.0.0.1:8080", "other/tiny.gguf"); }

static void g_scored_by_local(cJSON *S)
{
    cJSON_ReplaceItemInObjectCaseSensitive(S, "runtime", runtime_json("engine"));
    cJSON_ReplaceItemInObjectCaseSensitive(S, "package", cJSON_CreateNull());
}

static void g_scores_repeats_differ(cJSON *S)
{
    /* A second scoring repeat whose log-prob at prompt 0, position 2 differs. */
    cJSON *runs = at(S, "runs");
    int n = cJSON_GetArraySize(runs);
    for (int k = 0; k < n; k++) {
        cJSON *r = cJSON_Duplicate(cJSON_GetArrayItem(runs, k), 1);
        cJSON_SetNumberValue(at(r, "repeat"), 1);
        if (k == 0) {
            cJSON_SetNumberValue(cJSON_GetArrayItem(at(r, "logprobs"), 2), -0.5);
            cJSON_SetNumberValue(cJSON_GetArrayItem(at(r, "argmax"), 2), 1);
        }
        cJSON_AddItemToArray(runs, r);
    }
    set_num(S, "settings.requested.repetitions", 2);
    set_num(S, "settings.resolved.repetitions", 2);
    cJSON *det = at(S, "determinism");
    set_num(det, "repeats", 2);
    cJSON_ReplaceItemInObjectCaseSensitive(det, "identical_tokens", cJSON_CreateFalse());
    cJSON_ReplaceItemInObjectCaseSensitive(det, "identical_logits", cJSON_CreateFalse());
    cJSON *fm = cJSON_AddObjectToObject(det, "first_mismatch");
    cJSON_AddNumberToObject(fm, "prompt", 0);
    cJSON_AddNumberToObject(fm, "repeat", 1);
    cJSON_AddNumberToObject(fm, "position", 2);
    cJSON_AddStringToObject(fm, "field", "tokens");
}

static const guard_case guard_cases[] = {
    { "distinct", NULL, NULL, g_same_file, "the oracle O.json is the same file (device ", NULL, NULL },
    { "distinct", NULL, NULL, g_copy, "the oracle O.json has the same seal (a copy of one capture)", NULL, NULL },
    { "distinct", g_same_computation, NULL, NULL, "the oracle O.json has the same runtime in depth (runner engine, "
      "binary and every loaded object by sha256, package) and the same settings.resolved", NULL, NULL },
    { "strict", g_not_strict, NULL, NULL, "L.json: refused by rule strict (1 reason): strict rule model: "
      "model.problems[0]: model.gguf: sha256 differs: expected a model manifest that every model file matches", NULL, NULL },
    { "runs", g_run_error, NULL, NULL, "runs[19] (prompt 3 'p03', repeat 1): status error (boom: out of memory): "
      "expected every run ok", NULL, NULL },
    { "determinism", g_repeats_differ, NULL, NULL, "runs[18] (prompt 2 'p02', repeat 1): differs from repeat 0 in tokens "
      "at position 5: expected identical repeats", "determinism", NULL },
    { "prompts", g_prompts, NULL, NULL, "prompts[3].id: L.json 'p03', O.json 'q03': expected the same prompt set",
      NULL, NULL },
    { "model", g_revision, NULL, NULL, "model.revision: L.json null, O.json 2fc06364: expected the same model revision "
      "(or --allow-diff model.revision)", "model.revision", NULL },
    { "model", g_gguf_name, NULL, NULL, "model.gguf.name: L.json null, O.json other: expected the same model (or "
      "--allow-diff model.gguf)", "model.gguf", NULL },
    { "vocabulary", g_vocab, NULL, NULL, "model.gguf.vocab_sha256: L.json 7777777777777777777777777777777777777777777777"
      "777777777777777777, O.json 8888888888888888888888888888888888888888888888888888888888888888: expected the same "
      "vocabulary: token ids must mean the same in both (cannot be allowed)", NULL, NULL },
    { "greedy", g_greedy, NULL, NULL, "settings.resolved.sampling.temperature: 0.7: expected 0 (greedy)", NULL, NULL },
    { "repeats", g_repeat_counts, NULL, NULL, "settings.resolved.repetitions: L.json 10, O.json 11: expected equal "
      "repeat counts (or --allow-diff repetitions)", "repetitions", NULL },
    { "compute", g_cache_dtype, NULL, NULL, "settings.resolved.cache_dtype: L.json fp8_e4m3, O.json f32: expected "
      "equal: the comparison declares one cache dtype (or --allow-diff cache_dtype)", "cache_dtype", NULL },
    { "capacity", g_n_ctx, NULL, NULL, "settings.resolved.n_ctx: L.json 48, O.json 24: expected equal capacity (or "
      "--allow-diff n_ctx)", "n_ctx", NULL },
    { "settings", g_threads, NULL, NULL, "settings.resolved.threads: L.json 1, O.json 4: expected equal settings (or "
      "--allow-diff threads)", "threads", NULL },
    { "scores-runs", NULL, g_scores_run_error, NULL, "runs[5] (prompt 5 'p05', repeat 0): status error (scorer "
      "crashed): expected every run ok", NULL, NULL },
    { "binding", NULL, g_wrong_local_seal, NULL, "local.seal: dddddddddddddddddddddddddddddddddddddddddddddddd"
      "dddddddddddddddd: expected ", NULL, NULL },
    { "binding", NULL, g_other_stream, NULL, "runs (prompt 4 'p04'): the scored tokens differ from L.json's repeat 0 "
      "at position 9: expected that stream", NULL, NULL },
    { "scorer", NULL, g_scorer_version, NULL, "runtime.runner.version: O.json 1, S.json 2: expected the oracle's "
      "computation: its runtime in depth and its configuration", NULL, NULL },
    { "scorer", g_oracle_server, g_scores_other_server, NULL, "runtime.runner.library: O.json http://127.0.0.1:8080, "
      "S.json http://127.0.0.1:8081: another server: expected the oracle's computation", NULL, "--allow-unverified" },
    { "scorer", g_oracle_server, g_scores_other_file, NULL, "runtime.runner.detail: O.json 'served model 'tiny', server "
      "model_path tiny.gguf', S.json 'served model 'tiny', server model_path other/tiny.gguf': the server serves "
      "another model: expected the oracle's computation", NULL, "--allow-unverified" },
    { "scorer-local", NULL, g_scored_by_local, NULL, "scored by the local capture L.json's own runtime and "
      "configuration: expected a scorer that is not the local capture's computation: such gaps are zero by "
      "construction", NULL, NULL },
    { "scores-determinism", NULL, g_scores_repeats_differ, NULL, "runs[16] (prompt 0 'p00', repeat 1): differs from repeat 0 "
      "in argmax at position 2", "determinism", NULL },
};

/* The parameter is the case's index: a test runs in a process of its own,
 * where pointers from this one do not point anywhere. */
static int case_index[64];

ParameterizedTestParameters(guard, each_rule_refuses_its_defect_and_passes_without_it)
{
    size_t n = sizeof guard_cases / sizeof guard_cases[0];
    for (size_t i = 0; i < n; i++)
        case_index[i] = (int)i;
    return cr_make_param_array(int, case_index, n);
}

ParameterizedTest(int *k, guard, each_rule_refuses_its_defect_and_passes_without_it)
{
    const guard_case *c = &guard_cases[*k];
    env e;
    setup(&e);
    docs d;
    /* Without the defect: it passes. */
    docs_make(&d, 125.0);
    docs_write(&e, &d, NULL);
    int rc = neartie(&e, NULL);
    cr_assert_eq(rc, 0, "rule %s, unchanged: exit %d: %s", c->rule, rc, e.cmd_err);
    /* With it: refused by the rule, with its message. */
    docs_make(&d, 125.0);
    if (c->change)
        c->change(&d);
    docs_write(&e, &d, c->change_scores);
    if (c->change_files)
        c->change_files(&e);
    expect_refused(&e, neartie(&e, c->extra), c->message);
    char named[96], first[96];
    snprintf(named, sizeof named, "rule %s", c->rule);
    snprintf(first, sizeof first, "refused by rule %s (", c->rule);
    cr_assert(strstr(e.cmd_err, named), "rule %s not named:\n%s", c->rule, e.cmd_err);
    /* One line per reason, the first naming the file, the rule and the count. */
    cr_assert(strncmp(e.cmd_err, "vt-neartie: ", 12) == 0 && strstr(e.cmd_err, "refused by rule ") &&
              strchr(e.cmd_err, '\n') > strstr(e.cmd_err, "reason"), "%s", e.cmd_err);
    if (strcmp(c->rule, "scorer-local") != 0) /* the scorer rule comes first there */
        cr_assert(strstr(e.cmd_err, first) && strstr(e.cmd_err, first) < strchr(e.cmd_err, '\n'),
                  "the first line is not rule %s's:\n%s", c->rule, e.cmd_err);
    if (c->allow)
        expect_allowed(&e, c->allow);
    teardown(&e);
}

/* Every rule of the table has a case above. */
Test(guard, every_rule_has_its_case)
{
    for (int i = 0; i < vt_nt_n_rules; i++) {
        int found = !strcmp(vt_nt_rules[i].name, "workload"); /* through the library: below */
        for (size_t k = 0; k < sizeof guard_cases / sizeof guard_cases[0]; k++)
            found |= strcmp(guard_cases[k].rule, vt_nt_rules[i].name) == 0;
        cr_assert(found, "rule %s has no test case", vt_nt_rules[i].name);
    }
}

Test(guard, an_error_recorded_after_generation)
{
    env e;
    setup(&e);
    docs d;
    docs_make(&d, 125.0);
    /* Status ok, but an error recorded: rebuilt in the member order. */
    cJSON *run = cJSON_GetArrayItem(at(d.L, "runs"), 2);
    cJSON *x = cJSON_CreateObject();
    cJSON_AddNumberToObject(x, "prompt", 2);
    cJSON_AddNumberToObject(x, "repeat", 0);
    cJSON_AddStringToObject(x, "status", "ok");
    cJSON_AddStringToObject(x, "error", "device lost after the last token");
    cJSON_AddItemToObject(x, "tokens", cJSON_Duplicate(at(run, "tokens"), 1));
    cJSON_AddItemToObject(x, "topk", cJSON_Duplicate(at(run, "topk"), 1));
    cJSON_AddItemToObject(x, "logits_sha256", cJSON_Duplicate(at(run, "logits_sha256"), 1));
    cJSON_ReplaceItemViaPointer(at(d.L, "runs"), run, x);
    docs_write(&e, &d, NULL);
    expect_refused(&e, neartie(&e, NULL), "L.json: refused by rule runs (1 reason): runs[2] (prompt 2 'p02', repeat "
                                          "0): status ok with an error recorded after generation (device lost after "
                                          "the last token): expected none");
    teardown(&e);
}

Test(guard, model_files_differ_and_may_be_allowed)
{
    env e;
    setup(&e);
    docs d;
    docs_make(&d, 125.0);
    set_str(cJSON_GetArrayItem(at(d.O, "model.files"), 0), "sha256",
            "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc");
    /* The scores are the oracle's computation, on the oracle's model. */
    docs_write(&e, &d, NULL);
    expect_refused(&e, neartie(&e, NULL), "model.files[0].sha256: ");
    cr_assert(strstr(e.cmd_err, "O.json cccc") && strstr(e.cmd_err, "expected the same model file (or --allow-diff "
                                                                      "model.files)"), "%s", e.cmd_err);
    /* Allowed between the captures, the scores still must be on the oracle's model. */
    expect_refused(&e, neartie(&e, "--allow-diff model.files"), "refused by rule scorer");
    cr_assert(strstr(e.cmd_err, "expected the oracle's model: the prefix scores must be the oracle's computation"),
              "%s", e.cmd_err);
    teardown(&e);
}

Test(guard, the_vocabulary_cannot_be_allowed)
{
    env e;
    setup(&e);
    docs d;
    docs_make(&d, 125.0);
    set_num(d.O, "model.gguf.n_vocab", VOCAB + 1);
    docs_write(&e, &d, NULL);
    expect_refused(&e, neartie(&e, NULL), "model.gguf.n_vocab: ");
    cr_assert(strstr(e.cmd_err, "expected the same vocabulary: token ids must mean the same in both (cannot be "
                                "allowed)"), "%s", e.cmd_err);
    expect_refused(&e, neartie(&e, "--allow-diff model.gguf"), "model.gguf.n_vocab: ");
    teardown(&e);
}

Test(guard, mode_and_compute_path_differ_and_as_declared)
{
    env e;
    setup(&e);
    docs d;
    docs_make(&d, 125.0);
    set_str(d.L, "settings.resolved.mode", "eager");
    docs_write(&e, &d, NULL);
    expect_refused(&e, neartie(&e, NULL), "settings.resolved.mode: L.json eager, O.json production: expected equal: "
                                          "the comparison declares one execution mode (or --allow-diff mode)");
    expect_allowed(&e, "mode");
    docs_make(&d, 125.0);
    set_str(d.O, "settings.resolved.matmul", "exact");
    docs_write(&e, &d, NULL);
    expect_refused(&e, neartie(&e, NULL), "settings.resolved.matmul: L.json q8, O.json exact: expected equal: the "
                                          "comparison declares one compute path");
    /* The scores (q8) are then not the oracle's configuration (exact). */
    expect_refused(&e, neartie(&e, "--allow-diff matmul"), "settings.resolved.matmul: O.json exact, S.json q8");
    /* A declared mode both must have. */
    docs_make(&d, 125.0);
    docs_write(&e, &d, NULL);
    expect_refused(&e, neartie(&e, "--mode eager"),
                   "L.json: refused by rule compute (2 reasons): settings.resolved.mode: production: expected eager, as "
                   "--mode declares");
    cr_assert(strstr(e.cmd_err, "O.json: settings.resolved.mode: production: expected eager"), "%s", e.cmd_err);
    cr_assert_eq(neartie(&e, "--mode production --cache-dtype f32 --matmul q8"), 0, "%s", e.cmd_err);
    teardown(&e);
}

Test(guard, max_tokens_differ)
{
    env e;
    setup(&e);
    docs d;
    docs_make(&d, 125.0);
    set_num(d.O, "settings.resolved.max_tokens", 17);
    docs_write(&e, &d, NULL);
    expect_refused(&e, neartie(&e, NULL), "settings.resolved.max_tokens: L.json 16, O.json 17: expected equal capacity");
    teardown(&e);
}

/* The catch-all: workload seals that differ where no other rule looks (a
 * member a later schema may add), through the library: refused with it,
 * passed without it. */
Test(guard, workload_seal_differs_where_nothing_else_explains_it)
{
    env e;
    setup(&e);
    docs d;
    docs_make(&d, 125.0);
    docs_write(&e, &d, NULL);
    vt_doc L, O;
    vt_error err;
    vt_error_clear(&err);
    vt_doc_source sl = { .path = e.L, .kind = VT_DOC_CAPTURE }, so = { .path = e.O, .kind = VT_DOC_CAPTURE };
    cr_assert_eq(vt_doc_read(&sl, &L, &err), VT_OK, "%s", err.msg);
    cr_assert_eq(vt_doc_read(&so, &O, &err), VT_OK, "%s", err.msg);
    vt_nt_guard_opts go = { 0 };
    vt_nt_inputs in = { .local = &L, .oracle = &O, .o = &go };
    vt_reasons out = { 0 };
    vt_nt_guard_stage(&in, VT_NT_PAIR, &out);
    cr_assert_eq(out.n, 0, "%d reasons: %s", out.n, out.n ? out.v[0].text : "");
    cJSON_AddNumberToObject(at(O.meta, "settings.resolved"), "future_knob", 3);
    cJSON *w = vt_capture_workload(O.meta);
    cr_assert_eq(vt_canonical_sha256(w, &O.workload_seal, &err), VT_OK);
    cJSON_Delete(w);
    vt_nt_guard_stage(&in, VT_NT_PAIR, &out);
    cr_assert_eq(out.n, 1, "%d reasons: %s", out.n, out.n ? out.v[0].text : "");
    cr_assert_str_eq(out.v[0].rule, "workload");
    cr_assert(strstr(out.v[0].text, "workload_seal: ") &&
                  strstr(out.v[0].text, "expected the same workload (model, prompts, settings.resolved); they differ "
                                        "in settings.future_knob"), "%s", out.v[0].text);
    vt_reasons_free(&out);
    vt_doc_free(&L);
    vt_doc_free(&O);
    teardown(&e);
}

/* What vt_nt_open refuses before reading anything. */
Test(guard, missing_inputs_and_a_bad_threshold)
{
    env e;
    setup(&e);
    docs d;
    docs_make(&d, 125.0);
    docs_write(&e, &d, NULL);
    expect_refused(&e, sh(&e, "cd '%s' && '%s' neartie --local L.json --prefix-scores S.json", e.dir, VT_BIN),
                   "--oracle: missing: expected a vt.capture");
    expect_refused(&e, sh(&e, "cd '%s' && '%s' neartie --oracle O.json --prefix-scores S.json", e.dir, VT_BIN),
                   "--local: missing: expected a vt.capture");
    vt_nt_opts o;
    vt_nt_opts_default(&o);
    o.local = e.L;
    o.oracle = e.O;
    o.prefix_scores = e.S;
    vt_error err;
    vt_error_clear(&err);
    vt_neartie *c = vt_nt_open(&o, &err);
    cr_assert_not_null(c, "%s", err.msg);
    vt_nt_free(c);
    const double bad[] = { -1.0, NAN, INFINITY };
    for (int i = 0; i < 3; i++) {
        o.threshold_mnats = bad[i];
        cr_assert_null(vt_nt_open(&o, &err), "threshold %g", bad[i]);
        cr_assert(strstr(err.msg, "expected a finite number >= 0"), "%s", err.msg);
    }
    teardown(&e);
}

Test(guard, unknown_allow_field_is_bad_usage)
{
    env e;
    setup(&e);
    docs d;
    docs_make(&d, 125.0);
    docs_write(&e, &d, NULL);
    expect_refused(&e, neartie(&e, "--allow-diff temperature"), "--allow-diff 'temperature': expected one of ");
    /* The scorer is never allowed to be another computation. */
    expect_refused(&e, neartie(&e, "--allow-diff scorer"), "--allow-diff 'scorer': expected one of ");
    teardown(&e);
}

/* ------------------------------------------- the strict gate, rule by rule */

typedef struct strict_case {
    const char *rule;
    int oracle;               /* the change is to O (else L) */
    void (*change)(cJSON *doc);
    const char *message;
} strict_case;

static void s_v1(cJSON *d) { to_v1(d); }
static void s_nine(cJSON *d)
{
    cJSON *runs = at(d, "runs");
    while (cJSON_GetArraySize(runs) > 9 * P)
        cJSON_DeleteItemFromArray(runs, 9 * P);
    set_num(d, "settings.requested.repetitions", 9);
    set_num(d, "settings.resolved.repetitions", 9);
    set_num(d, "determinism.repeats", 9);
}
static void s_run_error(cJSON *d) { fail_run(d, 2, 2, 0, "out of memory"); }
static void s_differs(cJSON *d) { break_determinism(d, P + 2, 2, 1, 5); }
static void s_no_positions(cJSON *d)
{
    set_num(d, "settings.requested.max_tokens", 0);
    set_num(d, "settings.resolved.max_tokens", 0);
    for (cJSON *r = at(d, "runs")->child; r; r = r->next) {
        cJSON_ReplaceItemInObjectCaseSensitive(r, "tokens", cJSON_CreateArray());
        cJSON_ReplaceItemInObjectCaseSensitive(r, "topk", cJSON_CreateArray());
    }
}
static void s_model(cJSON *d) { g_not_strict(&(docs){ .L = d }); }
static void s_runtime(cJSON *d)
{
    cJSON_ReplaceItemInObjectCaseSensitive(at(d, "runtime"), "resolved", cJSON_CreateFalse());
    cJSON_AddStringToObject(at(d, "runtime"), "unresolved", "/proc/self/maps unreadable");
}
/* A server's capture: its model and code are its word (rule observed). */
static void s_server(cJSON *d)
{
    cJSON_ReplaceItemInObjectCaseSensitive(at(at(d, "runtime"), "runner"), "name", cJSON_CreateString("openai"));
}
static void s_settings(cJSON *d)
{
    cJSON *x = cJSON_CreateObject();
    cJSON_AddStringToObject(x, "field", "threads");
    cJSON_AddNumberToObject(x, "requested", 2);
    cJSON_AddNumberToObject(x, "resolved", 1);
    cJSON_AddBoolToObject(x, "allowed", 0);
    cJSON_AddItemToArray(at(d, "settings.differences"), x);
    set_num(d, "settings.requested.threads", 2);
}
static void s_no_package(cJSON *d) { cJSON_ReplaceItemInObjectCaseSensitive(d, "package", cJSON_CreateNull()); }
static void s_unbound_package(cJSON *d)
{
    cJSON_ReplaceItemInObjectCaseSensitive(at(d, "package"), "loaded", cJSON_CreateArray());
}
static void s_launcher(cJSON *d) { cJSON_ReplaceItemInObjectCaseSensitive(at(d, "launcher"), "manifest", cJSON_CreateObject()); }

static const strict_case strict_cases[] = {
    { "format", 0, s_v1, "schema: vt.capture/1: expected the current schema (vt.capture/2, vt.prefix-scores/2, /3 or /4)" },
    { "repeats", 0, s_nine, "settings.resolved.repetitions: 9: expected at least 10 repeats" },
    { "runs", 0, s_run_error, "runs[2] (prompt 2 'p02', repeat 0): status error (out of memory): expected every run ok" },
    { "determinism", 0, s_differs, "runs[18] (prompt 2 'p02', repeat 1): differs from repeat 0 in tokens at position "
      "5: expected every repeat identical to its repeat 0 in tokens and logits" },
    { "positions", 0, s_no_positions, "settings.resolved.max_tokens: 0: expected at least one position per prompt" },
    { "model", 0, s_model, "model.problems[0]: model.gguf: sha256 differs: expected a model manifest that every model "
      "file matches" },
    { "runtime", 0, s_runtime, "runtime.resolved: false (/proc/self/maps unreadable): expected every field of the "
      "runtime identity resolved" },
    { "observed", 0, s_server, "runtime.runner.name: openai: the model file and the code that ran are the server's "
      "word (attested), not observed: expected a runner whose model and code vt observes, not a server's word" },
    { "settings", 0, s_settings, "settings.resolved.threads: 1: expected the requested 2 (resolved settings equal to "
      "the requested ones, or --allow-setting-difference threads)" },
    { "package", 1, s_no_package, "package: null: expected the package verified and bound to what ran: the llamacpp "
      "runner's code comes from a package (--package)" },
    { "package", 1, s_unbound_package, "package.loaded: []: expected the package verified and bound to what ran: no "
      "library the runtime loaded is a member" },
    { "launcher", 0, s_launcher, "launcher.manifest.launcher: missing: expected the launcher manifest's fields: "
      "launcher (what started the run), host or image (where it ran), command" },
};

ParameterizedTestParameters(strict, each_rule_refuses_its_defect_and_passes_without_it)
{
    size_t n = sizeof strict_cases / sizeof strict_cases[0];
    for (size_t i = 0; i < n; i++)
        case_index[i] = (int)i;
    return cr_make_param_array(int, case_index, n);
}

/* capture/strict.h on a document as the reader reads it. */
static void strict_reasons(const char *path, vt_reasons *out)
{
    vt_doc d;
    vt_error err;
    vt_error_clear(&err);
    vt_doc_source src = { .path = path, .kind = VT_DOC_CAPTURE };
    cr_assert_eq(vt_doc_read(&src, &d, &err), VT_OK, "%s", err.msg);
    vt_strict_check(&d, out);
    vt_doc_free(&d);
}

ParameterizedTest(int *k, strict, each_rule_refuses_its_defect_and_passes_without_it)
{
    const strict_case *c = &strict_cases[*k];
    env e;
    setup(&e);
    docs d;
    docs_make(&d, 125.0);
    docs_write(&e, &d, NULL);
    vt_reasons r = { 0 };
    strict_reasons(c->oracle ? e.O : e.L, &r);
    cr_assert_eq(r.n, 0, "rule %s, unchanged: %d reasons: %s", c->rule, r.n, r.n ? r.v[0].text : "");
    docs_make(&d, 125.0);
    c->change(c->oracle ? d.O : d.L);
    docs_write(&e, &d, NULL);
    strict_reasons(c->oracle ? e.O : e.L, &r);
    int found = 0;
    for (int i = 0; i < r.n; i++)
        found |= strcmp(r.v[i].rule, c->rule) == 0 && strstr(r.v[i].text, c->message) != NULL;
    cr_assert(found, "rule %s: '%s' not among %d reasons, the first: %s: %s", c->rule, c->message, r.n,
              r.n ? r.v[0].rule : "", r.n ? r.v[0].text : "");
    vt_reasons_free(&r);
    teardown(&e);
}

/* Rule positions names a prompt with no position, but not one whose run
 * failed (rule runs says that), whichever run it was, the first included. */
static void empty_prompt_1(cJSON *d)
{
    for (cJSON *r = at(d, "runs")->child; r; r = r->next)
        if (get(r, "prompt")->valuedouble == 1) {
            cJSON_ReplaceItemInObjectCaseSensitive(r, "tokens", cJSON_CreateArray());
            cJSON_ReplaceItemInObjectCaseSensitive(r, "topk", cJSON_CreateArray());
        }
}
static void fail_first_run(cJSON *d) { fail_run(d, 0, 0, 0, "out of memory"); }

Test(strict, positions_names_an_empty_prompt_not_a_failed_run)
{
    void (*change[3])(cJSON *) = { empty_prompt_1, fail_first_run, s_run_error };
    for (int k = 0; k < 3; k++) {
        env e;
        setup(&e);
        docs d;
        docs_make(&d, 125.0);
        change[k](d.L);
        docs_write(&e, &d, NULL);
        vt_reasons r = { 0 };
        strict_reasons(e.L, &r);
        int positions = 0, runs = 0;
        for (int i = 0; i < r.n; i++) {
            positions += strcmp(r.v[i].rule, "positions") == 0;
            runs += strcmp(r.v[i].rule, "runs") == 0;
        }
        if (k == 0) {
            cr_assert_eq(positions, 1, "%d reasons, the first: %s", r.n, r.n ? r.v[0].text : "");
            cr_assert_eq(runs, 0);
            int named = 0;
            for (int i = 0; i < r.n; i++)
                named |= strstr(r.v[i].text, "runs (prompt 1 'p01'): 0 positions") != NULL;
            cr_assert(named);
        } else {
            cr_assert_eq(runs, 1, "case %d: %d reasons", k, r.n);
            cr_assert_eq(positions, 0, "case %d: a failed run is not also a prompt without positions", k);
        }
        vt_reasons_free(&r);
        teardown(&e);
    }
}

Test(strict, every_rule_has_its_case)
{
    for (int i = 0; i < vt_strict_n_rules; i++) {
        int found = 0;
        for (size_t k = 0; k < sizeof strict_cases / sizeof strict_cases[0]; k++)
            found |= strcmp(strict_cases[k].rule, vt_strict_rules[i].name) == 0;
        cr_assert(found, "strict rule %s has no test case", vt_strict_rules[i].name);
    }
}

/* --allow-unverified lets a capture that is not strict in, and every
 * output says it is not strict evidence. */
Test(strict, allow_unverified_lets_in_and_says_so)
{
    env e;
    setup(&e);
    docs d;
    docs_make(&d, 125.0);
    s_launcher(d.O);
    docs_write(&e, &d, NULL);
    expect_refused(&e, neartie(&e, NULL), "O.json: refused by rule strict (1 reason): strict rule launcher: ");
    int rc = neartie(&e, "--allow-unverified");
    cr_assert_eq(rc, 0, "exit %d: %s", rc, e.cmd_err);
    cJSON *r = check_report(e.R);
    const cJSON *ev = get(r, "evidence");
    cr_assert(cJSON_IsFalse(get(ev, "strict")));
    cr_assert_eq(cJSON_GetArraySize(get(ev, "unverified")), 1);
    cr_assert_str_eq(get(cJSON_GetArrayItem(get(ev, "unverified"), 0), "rule")->valuestring, "launcher");
    cJSON_Delete(r);
    cr_assert(strstr(e.cmd_out, "evidence: NOT STRICT (--allow-unverified let in 1 reason):\n  rule launcher: O.json: "
                                "launcher.manifest.launcher: missing"), "%s", e.cmd_out);
    char *x = slurp(e.J, NULL);
    cr_assert(strstr(x, "<property name=\"strict_evidence\" value=\"false\"/>"), "%s", x);
    free(x);
    /* Strict captures: said so too. */
    docs_make(&d, 125.0);
    docs_write(&e, &d, NULL);
    cr_assert_eq(neartie(&e, "--allow-unverified"), 0, "%s", e.cmd_err);
    r = check_report(e.R);
    cr_assert(cJSON_IsTrue(get(get(r, "evidence"), "strict")));
    cJSON_Delete(r);
    cr_assert(strstr(e.cmd_out, "evidence: strict (both captures pass the strict gate)"), "%s", e.cmd_out);
    x = slurp(e.J, NULL);
    cr_assert(strstr(x, "<property name=\"strict_evidence\" value=\"true\"/>"), "%s", x);
    free(x);
    teardown(&e);
}

/* Two captures of 0 tokens compare nothing: every prompt fails, the gate
 * with it (and such captures are never strict: rule positions). */
Test(strict, no_position_compared_is_no_pass)
{
    env e;
    setup(&e);
    docs d;
    docs_make(&d, 125.0);
    s_no_positions(d.L);
    s_no_positions(d.O);
    docs_write(&e, &d, NULL);
    expect_refused(&e, neartie(&e, "--require-strict 16"), "strict rule positions: settings.resolved.max_tokens: 0");
    int rc = neartie(&e, "--require-strict 16 --allow-unverified");
    cr_assert_eq(rc, 1, "exit %d: %s%s", rc, e.cmd_err, e.cmd_out);
    cJSON *r = check_report(e.R);
    cr_assert_eq(get(get(r, "totals"), "strict")->valuedouble, 0);
    cr_assert_eq(get(get(r, "totals"), "failed")->valuedouble, P);
    cr_assert_str_eq(get(report_prompt(r, 0), "class")->valuestring, "failed");
    cJSON_Delete(r);
    teardown(&e);
}

/* ------------------------------------------------------ malformed inputs */

Test(input, a_changed_byte_fails_the_seal)
{
    env e;
    setup(&e);
    docs d;
    docs_make(&d, 125.0);
    docs_write(&e, &d, NULL);
    size_t n;
    char *s = slurp(e.L, &n);
    char *t = strstr(s, "\"tokens\":[1017,");
    cr_assert_not_null(t);
    t[10] = '2'; /* 1017 -> 2017, canonical still */
    spit(e.L, s, n);
    free(s);
    expect_refused(&e, neartie(&e, NULL), "L.json: field seal: ");
    cr_assert(strstr(e.cmd_err, "expected ") && strstr(e.cmd_err, ", the recomputed one"), "%s", e.cmd_err);
    teardown(&e);
}

Test(input, schema_violations_name_the_field)
{
    env e;
    setup(&e);
    docs d;
    /* In a member cJSON reads: the validator's path. */
    docs_make(&d, 125.0);
    set_str(d.O, "settings.resolved.mode", "turbo");
    docs_write(&e, &d, NULL);
    expect_refused(&e, neartie(&e, NULL), "O.json: $.settings.resolved.mode: expected one of [\"production\",\"eager\"]");
    /* In the runs: the run reader's. */
    docs_make(&d, 125.0);
    set_str(cJSON_GetArrayItem(at(d.L, "runs"), 5), "status", "done");
    docs_write(&e, &d, NULL);
    expect_refused(&e, neartie(&e, NULL), "field runs[5].status: expected \"status\": \"ok\" or \"error\"");
    docs_make(&d, 125.0);
    cJSON_AddNumberToObject(cJSON_GetArrayItem(at(d.L, "runs"), 1), "rank", 2);
    docs_write(&e, &d, NULL);
    expect_refused(&e, neartie(&e, NULL), "L.json: offset ");
    cr_assert(strstr(e.cmd_err, "field runs[1]: expected '}' after the run's last member"), "%s", e.cmd_err);
    /* A document of the other kind. */
    docs_make(&d, 125.0);
    docs_write(&e, &d, NULL);
    expect_refused(&e, sh(&e, "cd '%s' && '%s' neartie --local L.json --oracle S.json --prefix-scores S.json", e.dir,
                          VT_BIN), "S.json: field schema: \"vt.prefix-scores/3\": expected \"vt.capture/2\" (or \"vt.capture/1\")");
    teardown(&e);
}

Test(input, top_k_side_files_are_checked_whole)
{
    env e;
    setup(&e);
    docs d;
    char side[200];
    snprintf(side, sizeof side, "%s/L.topk", e.dir);
    /* One byte changed: not the file the capture's seal covers. */
    docs_make(&d, 125.0);
    docs_write(&e, &d, NULL);
    size_t n;
    char *s = slurp(side, &n);
    cr_assert_eq(n, 16 + (size_t)REPS * P * T * 2 * 8);
    s[100] ^= 1;
    spit(side, s, n);
    expect_refused(&e, neartie(&e, NULL), "L.topk: sha256 ");
    cr_assert(strstr(e.cmd_err, "expected " ) && strstr(e.cmd_err, "the capture's topk_file.sha256"), "%s", e.cmd_err);
    /* Cut short. */
    s[100] ^= 1;
    spit(side, s, n - 8);
    expect_refused(&e, neartie(&e, NULL), "L.topk: size 40968: expected 40976 bytes (a vt.topk/1 file of 2560 positions "
                                          "x 2 entries)");
    free(s);
    /* Missing. */
    unlink(side);
    expect_refused(&e, neartie(&e, NULL), "L.topk: cannot read: No such file or directory");
    /* An entry that is no log-prob, and one out of order, in files the
     * seals do cover: run 1 (prompt 1, after prompt 0's 16 positions),
     * position 3, entry 1, at byte 16 + (19 x 2 + 1) x 8. */
    docs_make(&d, 125.0);
    set_topk(d.L, 1, 3, 1, 1000 + 17 + 3 + 1, 0.5);
    docs_write(&e, &d, NULL);
    expect_refused(&e, neartie(&e, NULL), "L.topk: offset 328: position 19 entry 1: expected log-prob: finite and <= 0");
    docs_make(&d, 125.0);
    set_topk(d.O, 1, 3, 1, 1000 + 17 + 3 + 1, -0.125);
    docs_write(&e, &d, NULL);
    expect_refused(&e, neartie(&e, NULL), "O.topk: offset 328: position 19 entry 1: expected entries highest log-prob "
                                          "first, equal log-probs in increasing id");
    docs_make(&d, 125.0);
    set_topk(d.O, 1, 3, 1, VOCAB, -3);
    docs_write(&e, &d, NULL);
    expect_refused(&e, neartie(&e, NULL), "O.topk: offset 328: position 19 entry 1: expected id: a token id below the "
                                          "model's n_vocab");
    /* The capture's own record of it: its size, and null with top-k asked for. */
    docs_make(&d, 125.0);
    docs_write(&e, &d, NULL);
    cJSON *L = load_json(e.L);
    cJSON_SetNumberValue(at(at(L, "topk_file"), "size"), 40968);
    write_sealed(L, e.L);
    expect_refused(&e, neartie(&e, NULL), "L.json: field topk_file.size: 40968: expected 40976 (16 + 2560 positions x 2 "
                                          "entries x 8)");
    cJSON_ReplaceItemInObjectCaseSensitive(L, "topk_file", cJSON_CreateNull());
    write_sealed(L, e.L);
    expect_refused(&e, neartie(&e, NULL), "L.json: field topk_file: null: expected a file with settings.resolved."
                                          "logprobs_top_k 2");
    cJSON_Delete(L);
    teardown(&e);
}

Test(input, non_canonical_json_is_refused)
{
    env e;
    setup(&e);
    docs d;
    docs_make(&d, 125.0);
    docs_write(&e, &d, NULL);
    /* Pretty-printed: the same document, not as vt-capture writes it. */
    cJSON *L = load_json(e.L);
    char *pretty = cJSON_Print(L);
    spit(e.L, pretty, strlen(pretty));
    free(pretty);
    cJSON_Delete(L);
    expect_refused(&e, neartie(&e, NULL), "L.json: offset 1: field schema: expected it first, in canonical JSON");
    /* A number not in canonical form, the seal over these very bytes. */
    docs_make(&d, 125.0);
    docs_write(&e, &d, NULL);
    size_t n;
    char *s = slurp(e.O, &n);
    char *t = strstr(s, "\"tokens\":[1000,");
    cr_assert_not_null(t);
    char *u = malloc(n + 2);
    size_t a = (size_t)(t - s) + 10;
    memcpy(u, s, a);
    memcpy(u + a, "1000.0", 6); /* two characters more, same value */
    memcpy(u + a + 6, s + a + 4, n - a - 4);
    n += 2;
    size_t body = n - 76; /* ,"seal":"<64 hex>"}\n */
    u[body] = '}';
    vt_sha256_hex h;
    vt_sha256_buffer(u, body + 1, &h);
    u[body] = ',';
    memcpy(u + body + 9, h.hex, 64);
    spit(e.O, u, n);
    free(s);
    free(u);
    expect_refused(&e, neartie(&e, NULL), "field runs[0].tokens[0]");
    /* Not JSON at all, and no file. */
    spit(e.O, "{\"schema\": ", 11);
    expect_refused(&e, neartie(&e, NULL), "O.json: offset ");
    unlink(e.O);
    expect_refused(&e, neartie(&e, NULL), "O.json: cannot read: No such file or directory");
    teardown(&e);
}

/* Prefix scores are checked, not clamped: a log-prob above 0, an argmax
 * below the scored token, an argmax that is the token with another value:
 * each a malformed input naming prompt and position. */
static void lp_positive(cJSON *S) { cJSON_SetNumberValue(cJSON_GetArrayItem(at(cJSON_GetArrayItem(at(S, "runs"), 3), "logprobs"), 5), 0.5); }
static void argmax_below(cJSON *S)
{
    cJSON_SetNumberValue(cJSON_GetArrayItem(at(cJSON_GetArrayItem(at(S, "runs"), 3), "argmax"), 5), 9);
    cJSON_SetNumberValue(cJSON_GetArrayItem(at(cJSON_GetArrayItem(at(S, "runs"), 3), "argmax_logprobs"), 5), -0.35);
}
static void argmax_is_token(cJSON *S)
{
    cJSON_SetNumberValue(cJSON_GetArrayItem(at(cJSON_GetArrayItem(at(S, "runs"), 3), "argmax_logprobs"), 5), -0.125);
}
/* The argmax certain (log-prob 0) and the token it: no gap, accepted. */
static void certain(cJSON *S)
{
    cJSON_SetNumberValue(cJSON_GetArrayItem(at(cJSON_GetArrayItem(at(S, "runs"), 3), "logprobs"), 6), 0);
    cJSON_SetNumberValue(cJSON_GetArrayItem(at(cJSON_GetArrayItem(at(S, "runs"), 3), "argmax_logprobs"), 6), 0);
}
static void just_within_slack(cJSON *S)
{
    /* 0.5e-6 nats below: float rounding, a gap of 0. */
    cJSON_SetNumberValue(cJSON_GetArrayItem(at(cJSON_GetArrayItem(at(S, "runs"), 3), "argmax"), 5), 9);
    cJSON_SetNumberValue(cJSON_GetArrayItem(at(cJSON_GetArrayItem(at(S, "runs"), 3), "argmax_logprobs"), 5), -0.2500005);
}

Test(input, prefix_score_values_are_checked_not_clamped)
{
    env e;
    setup(&e);
    docs d;
    void (*bad[3])(cJSON *) = { lp_positive, argmax_below, argmax_is_token };
    const char *msg[3] = { "S.json: offset ", "S.json: offset ", "S.json: offset " };
    const char *why[3] = { "field runs[3].logprobs[5]: expected a log-prob <= 0 (prompt 3, position 5: 0.5)",
                           "field runs[3].argmax_logprobs[5]: expected the argmax's log-prob >= the scored token's "
                           "(prompt 3, position 5: -0.35 < -0.25)",
                           "field runs[3].argmax_logprobs[5]: expected -0.25, the scored token's log-prob, where the "
                           "argmax is the scored token (prompt 3, position 5: -0.125)" };
    for (int k = 0; k < 3; k++) {
        docs_make(&d, 125.0);
        docs_write(&e, &d, bad[k]);
        expect_refused(&e, neartie(&e, NULL), msg[k]);
        cr_assert(strstr(e.cmd_err, why[k]), "%s", e.cmd_err);
    }
    docs_make(&d, 125.0);
    docs_write(&e, &d, just_within_slack);
    cr_assert_eq(neartie(&e, NULL), 0, "%s", e.cmd_err);
    docs_make(&d, 125.0);
    docs_write(&e, &d, certain);
    cr_assert_eq(neartie(&e, NULL), 0, "%s", e.cmd_err);
    teardown(&e);
}

static void replace_and_reseal(const char *path, const char *needle, const char *with);

/* The runs' own grammar: one entry per token in every score array, runs
 * separated by commas, an array at all; and a document too short to hold
 * its seal. */
static void one_logprob_short(cJSON *S)
{
    cJSON_DeleteItemFromArray(at(cJSON_GetArrayItem(at(S, "runs"), 2), "logprobs"), 0);
}

Test(input, the_runs_grammar)
{
    env e;
    setup(&e);
    docs d;
    docs_make(&d, 125.0);
    docs_write(&e, &d, one_logprob_short);
    expect_refused(&e, neartie(&e, NULL), "S.json: offset ");
    cr_assert(strstr(e.cmd_err, "field runs[2].logprobs: expected one entry per token in tokens, logprobs, argmax and "
                                "argmax_logprobs"), "%s", e.cmd_err);
    docs_make(&d, 125.0);
    docs_write(&e, &d, NULL);
    replace_and_reseal(e.O, "},{\"prompt\":5,", "}x{\"prompt\":5,");
    expect_refused(&e, neartie(&e, NULL), "O.json: offset ");
    cr_assert(strstr(e.cmd_err, "field runs[4]: expected ',' or ']' after a run"), "%s", e.cmd_err);
    docs_make(&d, 125.0);
    docs_write(&e, &d, NULL);
    size_t n;
    char *text = slurp(e.L, &n);
    char *runs = strstr(text, "\"runs\":[");
    cr_assert_not_null(runs);
    runs[7] = '{'; /* "runs":{... : not an array */
    spit(e.L, text, n);
    free(text);
    expect_refused(&e, neartie(&e, NULL), "L.json: offset ");
    cr_assert(strstr(e.cmd_err, "field runs: expected an array of runs"), "%s", e.cmd_err);
    /* Shorter than its seal member could be. */
    spit(e.L, "{\"schema\":\"vt.capture/2\"}\n", 25);
    expect_refused(&e, neartie(&e, NULL), "L.json: offset 0: field seal: expected the document to end with");
    teardown(&e);
}

/* A determinism member the runs contradict is a malformed document. */
Test(input, determinism_is_re_checked_from_the_runs)
{
    env e;
    setup(&e);
    docs d;
    docs_make(&d, 125.0);
    cJSON_SetNumberValue(cJSON_GetArrayItem(at(cJSON_GetArrayItem(at(d.L, "runs"), P + 4), "tokens"), 3), 42);
    docs_write(&e, &d, NULL);
    expect_refused(&e, neartie(&e, NULL), "L.json: field determinism.identical_tokens: true: expected false, what the "
                                          "runs show: runs differ from their repeat 0 in tokens");
    /* The logits hash of a later repeat, in a document that claims identical logits. */
    docs_make(&d, 125.0);
    set_str(cJSON_GetArrayItem(at(d.O, "runs"), 2 * P + 1), "logits_sha256",
            "9999999999999999999999999999999999999999999999999999999999999999");
    docs_write(&e, &d, NULL);
    expect_refused(&e, neartie(&e, NULL), "O.json: field determinism.identical_logits: true: expected false, what the "
                                          "runs show: runs differ from their repeat 0 in logits_sha256");
    /* Tokens claimed identical, logits (rightly) not: the tokens' claim is named. */
    docs_make(&d, 125.0);
    cJSON_SetNumberValue(cJSON_GetArrayItem(at(cJSON_GetArrayItem(at(d.L, "runs"), P + 4), "tokens"), 3), 42);
    set_str(cJSON_GetArrayItem(at(d.L, "runs"), P + 4), "logits_sha256",
            "9999999999999999999999999999999999999999999999999999999999999999");
    cJSON_ReplaceItemInObjectCaseSensitive(at(d.L, "determinism"), "identical_logits", cJSON_CreateFalse());
    docs_write(&e, &d, NULL);
    expect_refused(&e, neartie(&e, NULL), "L.json: field determinism.identical_tokens: true: expected false");
    /* Said as it is, the guard refuses it (rule determinism). */
    cJSON *det = NULL;
    docs_make(&d, 125.0);
    set_str(cJSON_GetArrayItem(at(d.O, "runs"), 2 * P + 1), "logits_sha256",
            "9999999999999999999999999999999999999999999999999999999999999999");
    det = at(d.O, "determinism");
    cJSON_ReplaceItemInObjectCaseSensitive(det, "identical_logits", cJSON_CreateFalse());
    cJSON *fm = cJSON_AddObjectToObject(det, "first_mismatch");
    cJSON_AddNumberToObject(fm, "prompt", 1);
    cJSON_AddNumberToObject(fm, "repeat", 2);
    cJSON_AddNumberToObject(fm, "position", 0);
    cJSON_AddStringToObject(fm, "field", "logits");
    docs_write(&e, &d, NULL);
    expect_refused(&e, neartie(&e, NULL), "O.json: refused by rule determinism (1 reason): runs[33] (prompt 1 'p01', "
                                          "repeat 2): differs from repeat 0 in logits_sha256");
    /* An ok run of a /2 capture without its logits hash: nothing to re-check. */
    docs_make(&d, 125.0);
    cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetArrayItem(at(d.L, "runs"), 7), "logits_sha256");
    docs_write(&e, &d, NULL);
    expect_refused(&e, neartie(&e, NULL), "L.json: offset ");
    cr_assert(strstr(e.cmd_err, "field runs[7].logits_sha256: missing: expected the SHA-256 of an ok run's logits"),
              "%s", e.cmd_err);
    teardown(&e);
}

/* A document's text with needle replaced, re-sealed over its new bytes (as
 * anyone can): what the reader sees is then only the replacement. */
static void replace_and_reseal(const char *path, const char *needle, const char *with)
{
    size_t n;
    char *s = slurp(path, &n);
    char *t = strstr(s, needle);
    cr_assert_not_null(t, "%s: no %s", path, needle);
    size_t a = (size_t)(t - s), ln = strlen(needle), lw = strlen(with);
    char *u = malloc(n - ln + lw + 1);
    memcpy(u, s, a);
    memcpy(u + a, with, lw);
    memcpy(u + a + lw, s + a + ln, n - a - ln);
    n = n - ln + lw;
    size_t body = n - 76; /* ,"seal":"<64 hex>"}\n */
    u[body] = '}';
    vt_sha256_hex h;
    vt_sha256_buffer(u, body + 1, &h);
    u[body] = ',';
    memcpy(u + body + 9, h.hex, 64);
    spit(path, u, n);
    free(s);
    free(u);
}

/* A string holding \u0000 would end there for every C reader: refused,
 * in the members cJSON reads and in the runs. */
Test(input, a_nul_escape_in_a_string_is_refused)
{
    env e;
    setup(&e);
    docs d;
    docs_make(&d, 125.0);
    fail_run(d.O, P + 3, 3, 1, "boom");
    docs_write(&e, &d, NULL);
    replace_and_reseal(e.O, "\"error\":\"boom\"", "\"error\":\"bo\\u0000om\"");
    expect_refused(&e, neartie(&e, NULL), "O.json: offset ");
    cr_assert(strstr(e.cmd_err, "field runs[19].error: expected a string in canonical form"), "%s", e.cmd_err);
    docs_make(&d, 125.0);
    docs_write(&e, &d, NULL);
    replace_and_reseal(e.L, "\"id\":\"p03\"", "\"id\":\"p0\\u00003\"");
    expect_refused(&e, neartie(&e, NULL), "L.json: offset ");
    cr_assert(strstr(e.cmd_err, "expected canonical JSON"), "%s", e.cmd_err);
    teardown(&e);
}

/* No output may be an input, and the side files an input names are inputs. */
Test(input, outputs_may_not_alias_the_side_files_an_input_names)
{
    env e;
    setup(&e);
    docs d;
    docs_make(&d, 125.0);
    docs_write(&e, &d, NULL);
    char topk[200];
    snprintf(topk, sizeof topk, "%s/O.topk", e.dir);
    char *before = slurp(topk, NULL);
    int rc = sh(&e, "cd '%s' && '%s' neartie --local L.json --oracle O.json --prefix-scores S.json --out O.topk "
                    "--overwrite", e.dir, VT_BIN);
    cr_assert_eq(rc, 2, "exit %d: %s", rc, e.cmd_err);
    cr_assert(strstr(e.cmd_err, "O.topk"), "%s", e.cmd_err);
    char *after = slurp(topk, NULL);
    cr_assert_str_eq(after, before, "the input was overwritten");
    free(before);
    free(after);
    teardown(&e);
}

/* vt.capture/1 documents (written before version 2) are still read; they
 * are not strict evidence, and --allow-unverified says so. */
Test(input, version_1_captures_are_still_read)
{
    env e;
    setup(&e);
    docs d;
    docs_make(&d, 125.0);
    to_v1(d.L);
    to_v1(d.O);
    docs_write(&e, &d, NULL);
    expect_refused(&e, neartie(&e, NULL), "strict rule format: schema: vt.capture/1: expected the current schema");
    cr_assert(strstr(e.cmd_err, "rule vocabulary: L.json: model.gguf.vocab_sha256: missing (a vt.capture/1)"), "%s",
              e.cmd_err);
    int rc = neartie(&e, "--allow-unverified");
    cr_assert_eq(rc, 0, "exit %d: %s", rc, e.cmd_err);
    cJSON *r = check_report(e.R);
    cr_assert_eq(get(get(r, "totals"), "near_tie_only")->valuedouble, 1);
    cr_assert(cJSON_IsFalse(get(get(r, "evidence"), "strict")));
    cJSON_Delete(r);
    cr_assert(strstr(e.cmd_out, "rule vocabulary: L.json: model.gguf.vocab_sha256: missing: the vocabulary compared by "
                                "n_vocab and tokenizer_pre only"), "%s", e.cmd_out);
    /* One computation twice is refused in /1 as in /2, whichever side is
     * /1: a /1 runtime has no device, its backend stands for it. */
    for (int k = 0; k < 3; k++) {
        docs_make(&d, 125.0);
        g_same_computation(&d);
        if (k != 1)
            to_v1(d.O);
        if (k != 2)
            to_v1(d.L);
        docs_write(&e, &d, NULL);
        expect_refused(&e, neartie(&e, "--allow-unverified"), "the oracle O.json has the same runtime in depth");
    }
    teardown(&e);
}

/* ----------------------------------------------------------- in-toto */

/* An in-toto statement file through an independent validator: Debian's
 * python3-jsonschema (scripts/bootstrap installs it; /usr/bin/python3 is
 * Debian's) against compare/intoto-test-result.schema.json. 0: valid. */
static int intoto_validate(env *e, const char *path)
{
    return sh(e, "/usr/bin/python3 -c 'import json, sys, jsonschema; "
                 "jsonschema.Draft202012Validator.check_schema(json.load(open(sys.argv[2]))); "
                 "jsonschema.validate(json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), "
                 "cls=jsonschema.Draft202012Validator)' '%s' '%s/compare/intoto-test-result.schema.json'",
              path, VT_SOURCE_DIR);
}

static int has_string(const cJSON *a, const char *s)
{
    for (const cJSON *x = a ? a->child : NULL; x; x = x->next)
        if (cJSON_IsString(x) && !strcmp(x->valuestring, s))
            return 1;
    return 0;
}

/* The statement at I.json: valid, canonical, its subjects the report, the
 * captures and the scores as written (by the sha256 of each file now), its
 * result and its tests as given. */
static cJSON *check_intoto(env *e, const char *result, int passed, int warned, int failed)
{
    char path[160];
    snprintf(path, sizeof path, "%s/I.json", e->dir);
    cr_assert_eq(intoto_validate(e, path), 0, "%s: not an in-toto Statement v1 (test-result): %s%s", path, e->cmd_out,
                 e->cmd_err);
    cJSON *st = load_json(path);
    cr_assert_str_eq(get(st, "_type")->valuestring, "https://in-toto.io/Statement/v1");
    cr_assert_str_eq(get(st, "predicateType")->valuestring, "https://in-toto.io/attestation/test-result/v0.1");
    const cJSON *subj = get(st, "subject");
    cr_assert_eq(cJSON_GetArraySize(subj), 4);
    const char *names[4] = { "R.json", "L.json", "O.json", "S.json" };
    for (int i = 0; i < 4; i++) {
        const cJSON *s = cJSON_GetArrayItem(subj, i);
        cr_assert_str_eq(get(s, "name")->valuestring, names[i]);
        char f[200];
        snprintf(f, sizeof f, "%s/%s", e->dir, names[i]);
        vt_sha256_hex h;
        vt_error err;
        vt_error_clear(&err);
        cr_assert_eq(vt_sha256_file(f, &h, NULL, &err), VT_OK, "%s", err.msg);
        cr_assert_str_eq(get(get(s, "digest"), "sha256")->valuestring, h.hex, "%s: digest", names[i]);
    }
    const cJSON *pred = get(st, "predicate");
    cr_assert_str_eq(get(pred, "result")->valuestring, result);
    cr_assert_eq(cJSON_GetArraySize(get(pred, "passedTests")), passed, "passedTests");
    cr_assert_eq(cJSON_GetArraySize(get(pred, "warnedTests")), warned, "warnedTests");
    cr_assert_eq(cJSON_GetArraySize(get(pred, "failedTests")), failed, "failedTests");
    const cJSON *conf = cJSON_GetArrayItem(get(pred, "configuration"), 0);
    cr_assert_eq(get(get(conf, "annotations"), "threshold_mnats")->valuedouble, 500);
    return st;
}

Test(intoto, the_verdict_as_a_test_result_statement)
{
    env e;
    setup(&e);
    docs d;
    docs_make(&d, 125.0);
    docs_write(&e, &d, NULL);
    cr_assert_eq(neartie(&e, "--intoto I.json"), 0, "%s", e.cmd_err);
    cr_assert(strstr(e.cmd_out, "wrote I.json (in-toto Statement v1"), "%s", e.cmd_out);
    /* 15 strict prompts, the gate and the strict evidence passed; the
     * near-tie-only prompt warned */
    cJSON *st = check_intoto(&e, "PASSED", 17, 1, 0);
    const cJSON *pred = get(st, "predicate");
    cr_assert(has_string(get(pred, "passedTests"), "gate") && has_string(get(pred, "passedTests"), "strict evidence"));
    cJSON *r = check_report(e.R);
    cr_assert(has_string(get(pred, "warnedTests"), get(report_prompt(r, 15), "id")->valuestring));
    cJSON_Delete(r);

    /* The same comparison failing its gate: written all the same, FAILED. */
    cr_assert_eq(neartie(&e, "--intoto I.json --overwrite --require-strict 16"), 1, "%s", e.cmd_err);
    cJSON_Delete(st);
    st = check_intoto(&e, "FAILED", 16, 1, 1);
    cr_assert(has_string(get(get(st, "predicate"), "failedTests"), "gate"));

    /* The validator and the schema refuse what is not the layout: each
     * mutation of a valid statement must fail validation. */
    const char *mutations[] = { "result", "type", "digest", "hex", "subject" };
    for (size_t i = 0; i < sizeof mutations / sizeof mutations[0]; i++) {
        cJSON *m = cJSON_Duplicate(st, 1);
        const char *w = mutations[i];
        cJSON *s0 = cJSON_GetArrayItem(at(m, "subject"), 0);
        if (!strcmp(w, "result"))
            cJSON_ReplaceItemInObject(at(m, "predicate"), "result", cJSON_CreateString("MAYBE"));
        else if (!strcmp(w, "type"))
            cJSON_ReplaceItemInObject(m, "_type", cJSON_CreateString("https://in-toto.io/Statement/v0.1"));
        else if (!strcmp(w, "digest"))
            cJSON_DeleteItemFromObject(s0, "digest");
        else if (!strcmp(w, "hex"))
            cJSON_ReplaceItemInObject(cJSON_GetObjectItemCaseSensitive(s0, "digest"), "sha256", cJSON_CreateString("XYZ"));
        else
            cJSON_ReplaceItemInObject(m, "subject", cJSON_CreateArray());
        char *txt = cJSON_PrintUnformatted(m);
        char mp[160];
        snprintf(mp, sizeof mp, "%s/M.json", e.dir);
        spit(mp, txt, strlen(txt));
        cr_assert_neq(intoto_validate(&e, mp), 0, "mutation '%s' validated", w);
        free(txt);
        cJSON_Delete(m);
    }
    cJSON_Delete(st);

    /* No report, no statement: refused, nothing written. */
    char ip[160];
    snprintf(ip, sizeof ip, "%s/I.json", e.dir);
    unlink(ip);
    unlink(e.R);
    int rc = sh(&e, "cd '%s' && '%s' neartie --local L.json --oracle O.json --prefix-scores S.json --intoto I.json",
                e.dir, VT_BIN);
    cr_assert_eq(rc, 2, "exit %d: %s", rc, e.cmd_err);
    cr_assert(strstr(e.cmd_err, "--intoto I.json: the report is its subject: expected --out R.json too"), "%s",
              e.cmd_err);
    cr_assert(!exists(ip) && !exists(e.R), "written despite the refusal");
    teardown(&e);
}

/* ------------------------------------------------------------- JUnit */

Test(junit, markup_in_prompt_ids_is_escaped)
{
    env e;
    setup(&e);
    docs d;
    docs_make(&d, 600.0);
    const char *id = "a<b>&\"c'\x01";
    set_str(cJSON_GetArrayItem(at(d.L, "prompts"), 15), "id", id);
    set_str(cJSON_GetArrayItem(at(d.O, "prompts"), 15), "id", id);
    docs_write(&e, &d, NULL);
    cr_assert_eq(neartie(&e, "--max-failed 1"), 0, "%s", e.cmd_err);
    check_junit(e.J, 16, 1);
    char *x = slurp(e.J, NULL);
    cr_assert(strstr(x, "name=\"a&lt;b&gt;&amp;&quot;c&apos;\\x01\""), "%s", x);
    free(x);
    cJSON *r = check_report(e.R);
    cr_assert_str_eq(get(report_prompt(r, 15), "id")->valuestring, id);
    cJSON_Delete(r);
    teardown(&e);
}

/* ------------------------------------------------- canonical numbers */

static int exact_canonical(const char *s, double *v)
{
    char c[32], *end;
    double d = strtod(s, &end);
    if (*end || !isfinite(d))
        return 0;
    vt_canonical_number(d, c);
    *v = d;
    return strcmp(c, s) == 0;
}

Test(reader, canonical_numbers_agree_with_the_definition)
{
    /* Random values printed many ways: the reader's verdict and value
     * must be the canonical writer's. */
    const char *forms[] = { "%.9g", "%.8g", "%.3g", "%.12g", "%.17g", "%g", "%.9e", "%.2f", "%.10f", "%.1e" };
    unsigned s = 12345;
    char buf[64];
    for (int it = 0; it < 300000; it++) {
        s = s * 1103515245u + 12345u;
        double u = (double)(s >> 8) / (double)(1u << 24);
        double x;
        switch (it % 6) {
        case 0: x = -u * 30.0; break;
        case 1: x = ldexp(u, (int)(s % 140) - 70) * (s & 1 ? -1 : 1); break;
        case 2: x = (double)(s % 100000) * (s & 2 ? 1 : -1); break;
        case 3: x = ldexp(u, (int)(s % 2000) - 1000); break;
        case 4: x = (double)(s % 1000) * pow(10, (int)(s % 40) - 20); break;
        default: x = 9007199254740992.0 + ((int)(s % 5) - 2) * 2.0;
        }
        snprintf(buf, sizeof buf, forms[(s >> 4) % 10], x);
        if ((s >> 7) % 20 == 0 && strlen(buf) + 1 < sizeof buf)
            strcat(buf, "0");
        double v1 = 0, v2 = 0;
        int a = vt_doc_number_canonical(buf, strlen(buf), &v1), b = exact_canonical(buf, &v2);
        cr_assert_eq(a, b, "%s: reader says %d, the definition %d", buf, a, b);
        if (a)
            cr_assert(memcmp(&v1, &v2, sizeof v1) == 0, "%s: value %.17g, strtod %.17g", buf, v1, v2);
    }
    /* Digit strings near the log-prob shape: the reader agrees with the
     * definition. */
    for (int it = 0; it < 300000; it++) {
        int k = 0;
        s = s * 1103515245u + 12345u;
        int len = 1 + (int)(s % 18), dot = (int)((s >> 5) % (unsigned)(len + 1));
        if ((s >> 10) & 1)
            buf[k++] = '-';
        for (int i = 0; i < len; i++) {
            s = s * 1103515245u + 12345u;
            if (i == dot && i > 0)
                buf[k++] = '.';
            int r = (int)((s >> 8) % 12);
            buf[k++] = r < 10 ? (char)('0' + r) : r == 10 ? '0' : 'e';
        }
        buf[k] = '\0';
        double v1 = 0, v2 = 0;
        int a = vt_doc_number_canonical(buf, strlen(buf), &v1), b = exact_canonical(buf, &v2);
        cr_assert_eq(a, b, "%s: reader says %d, the definition %d", buf, a, b);
    }
    double v;
    cr_assert(vt_doc_number_canonical("-0.375", 6, &v) && v == -0.375);
    cr_assert(!vt_doc_number_canonical("-0", 2, &v));
    cr_assert(!vt_doc_number_canonical("1.0", 3, &v));
    cr_assert(!vt_doc_number_canonical("0.00001", 7, &v));
    cr_assert(vt_doc_number_canonical("1e-05", 5, &v) && v == 1e-05);
    cr_assert(!vt_doc_number_canonical("1e+10", 5, &v));
    cr_assert(vt_doc_number_canonical("10000000000", 11, &v));
    /* Exponents as %.9g writes them: two digits below 10, no leading zero
     * from 10 on. */
    cr_assert(vt_doc_number_canonical("1e-10", 5, &v) && v == 1e-10);
    cr_assert(!vt_doc_number_canonical("1e-010", 6, &v));
    cr_assert(!vt_doc_number_canonical("1e-5", 4, &v));
    cr_assert(vt_doc_number_canonical("1.5e+100", 8, &v) && v == 1.5e100);
    cr_assert(!vt_doc_number_canonical("1.5e+0100", 9, &v));
    /* Longer than any number vt writes: not canonical (and not read past). */
    char longnum[451];
    memset(longnum, '1', 450);
    longnum[450] = '\0';
    cr_assert(!vt_doc_number_canonical(longnum, 450, &v));
}

/* The runs read in chunks on several threads give what one thread gives;
 * a bad run in a later chunk is still named by its index. */
static void read_with(const char *path, vt_doc_kind kind, int threads, vt_doc *d)
{
    vt_error err;
    vt_error_clear(&err);
    vt_doc_source src = { .path = path, .kind = kind, .threads = threads };
    cr_assert_eq(vt_doc_read(&src, d, &err), VT_OK, "%s threads %d: %s", path, threads, err.msg);
}

Test(reader, chunks_on_threads_read_the_same)
{
    env e;
    setup(&e);
    docs d;
    docs_make(&d, 125.0);
    break_determinism(d.L, P + 9, 9, 1, 2); /* a later repeat that differs, in a later chunk */
    docs_write(&e, &d, NULL);
    const char *paths[2] = { e.L, e.S };
    vt_doc_kind kinds[2] = { VT_DOC_CAPTURE, VT_DOC_PREFIX };
    for (int k = 0; k < 2; k++) {
        vt_doc one, many;
        read_with(paths[k], kinds[k], 1, &one);
        for (int threads = 2; threads <= 7; threads++) {
            read_with(paths[k], kinds[k], threads, &many);
            cr_assert_str_eq(many.seal.hex, one.seal.hex);
            cr_assert_str_eq(many.file_sha256.hex, one.file_sha256.hex);
            cr_assert_eq(many.n_prompts, P);
            cr_assert_eq(many.repeats, one.repeats);
            cr_assert_eq(many.n_positions, one.n_positions);
            for (int p = 0; p < P; p++) {
                cr_assert_eq(many.n[p], one.n[p]);
                cr_assert(memcmp(many.tokens + many.off[p], one.tokens + one.off[p], (size_t)one.n[p] * 4) == 0);
                if (kinds[k] == VT_DOC_PREFIX)
                    cr_assert(memcmp(many.logprobs + many.off[p], one.logprobs + one.off[p], (size_t)one.n[p] * 8) == 0);
            }
            cr_assert_eq(many.differs.run, one.differs.run);
            cr_assert_eq(many.differs.position, one.differs.position);
            vt_doc_free(&many);
        }
        if (k == 0) {
            cr_assert_eq(one.differs.run, P + 9);
            cr_assert_eq(one.differs.position, 2);
        }
        vt_doc_free(&one);
    }
    /* A run out of order and a malformed run, both late in the array. */
    docs_make(&d, 125.0);
    set_num(cJSON_GetArrayItem(at(d.L, "runs"), 27), "prompt", 12);
    docs_write(&e, &d, NULL);
    vt_error err;
    vt_error_clear(&err);
    vt_doc x;
    vt_doc_source src = { .path = e.L, .kind = VT_DOC_CAPTURE, .threads = 4 };
    cr_assert_eq(vt_doc_read(&src, &x, &err), VT_EINPUT);
    cr_assert(strstr(err.msg, "field runs[27]: expected prompt 11 repeat 1 (runs in the order vt-capture writes them), "
                              "not prompt 12 repeat 1"), "%s", err.msg);
    docs_make(&d, 125.0);
    set_str(cJSON_GetArrayItem(at(d.L, "runs"), 29), "status", "fine");
    docs_write(&e, &d, NULL);
    cr_assert_eq(vt_doc_read(&src, &x, &err), VT_EINPUT);
    cr_assert(strstr(err.msg, "field runs[29].status: expected \"status\": \"ok\" or \"error\""), "%s", err.msg);
    teardown(&e);
}

/* ------------------------------------------------------ real captures */

/* The 16 built-in prompts of vt agree but one: with Q8_0 weights the
 * engine and llama.cpp part at position 11 of "日本語のテキストと中文文本"
 * (a 125.7 milli-nat near tie), so it is left out to keep every prompt
 * strict for both fixtures. */
static const char *const strict_prompts[] = {
    "The quick brown fox jumps over the lazy dog.",
    "Once upon a time, in a small village by the sea,",
    "def fibonacci(n):\\n    if n < 2:\\n        return n\\n",
    "The capital of France is",
    "1, 2, 3, 5, 8, 13, 21,",
    "<|im_start|>user\\nWhat is the boiling point of water?<|im_end|>\\n<|im_start|>assistant\\n",
    "In mathematics, a prime number is",
    "Der schnelle braune Fuchs springt über den faulen Hund.",
    "int main(void) { printf(\\\"hello\\\\n\\\"); return 0; }",
    "Les sanglots longs des violons de l'automne",
    "She said: \\\"I'll be there at 10:30, don't be late!\\\"",
    "SELECT name, COUNT(*) FROM users GROUP BY name;",
    "To be, or not to be, that is the question:",
    "    \\t  indented   text\\n\\nwith blank lines",
    "Temperature: -40.5 degrees; pressure 1013 hPa; 99%",
};
enum { N_STRICT = (int)(sizeof strict_prompts / sizeof strict_prompts[0]) };
/* The oracle's npm package, as scripts/bootstrap fetched it. */
#define PACKAGE "'" VT_DEPS_DIR "/npm/node-llama-cpp-linux-x64-3.22.1.tgz'"

/* A fixture of the given weights, the prompts, and both runners' captures:
 * 10 repeats x 16 tokens, one thread, full logits. */
static void real_captures_of(env *e, const char *weights, char *model, size_t cap, const char *prompt_file)
{
    snprintf(model, cap, "%s/tiny-%s.gguf", e->dir, weights);
    cr_assert_eq(sh(e, "'%s' fixture make --arch qwen3 --preset tiny --weights %s --seed 1 -o '%s'", VT_BIN, weights,
                    model), 0, "%s", e->cmd_err);
    char prompts[300];
    snprintf(prompts, sizeof prompts, "%s/prompts.jsonl", e->dir);
    if (prompt_file) {
        snprintf(prompts, sizeof prompts, "%s", prompt_file);
    } else {
        FILE *f = fopen(prompts, "w");
        cr_assert_not_null(f);
        for (int i = 0; i < N_STRICT; i++)
            fprintf(f, "{\"id\":\"p%02d\",\"text\":\"%s\"}\n", i, strict_prompts[i]);
        fclose(f);
    }
    /* Strict captures, as vt-neartie wants them by default. */
    cr_assert_eq(sh(e, "cd '%s' && '%s' provenance manifest make '%s' -o manifest.json", e->dir, VT_BIN, model), 0, "%s",
                 e->cmd_err);
    char launcher[160];
    snprintf(launcher, sizeof launcher, "%s/launcher.json", e->dir);
    static const char lj[] = "{\"launcher\":\"test_neartie_cli\",\"host\":\"localhost\",\"command\":\"vt capture\"}\n";
    spit(launcher, lj, sizeof lj - 1);
    const char *runner[2] = { "engine", "llamacpp" }, *out[2] = { e->L, e->O };
    for (int k = 0; k < 2; k++)
        cr_assert_eq(sh(e, "'%s' capture --runner %s --model '%s' --prompts '%s' --out '%s' --logits-out '%s.logits' "
                           "--repetitions 10 --max-tokens 16 --threads 1 --no-timestamp --strict --model-manifest "
                           "'%s/manifest.json' --launcher-manifest '%s/launcher.json' %s %s", VT_BIN, runner[k], model,
                        prompts, out[k], out[k], e->dir, e->dir, k ? "--package" : "", k ? PACKAGE : ""), 0, "%s",
                     e->cmd_err);
}

static void real_captures(env *e, const char *weights, char *model, size_t cap)
{
    real_captures_of(e, weights, model, cap, NULL);
}

static void check_all_strict(env *e, int n)
{
    cJSON *r = check_report(e->R);
    const cJSON *t = get(r, "totals");
    cr_assert_eq(get(t, "strict")->valuedouble, n);
    cr_assert_eq(get(t, "zero_gaps")->valuedouble, n * 16);
    cr_assert_eq(get(t, "scorer_disagreements")->valuedouble, 0);
    const cJSON *m = get(r, "metrics");
    cr_assert(cJSON_IsTrue(get(m, "available")), "metrics: %s", cJSON_Print(m));
    cr_assert_eq(get(m, "positions")->valuedouble, n * 16);
    cr_assert_eq(get(m, "top1_agreement")->valuedouble, 1.0);
    cr_assert(get(get(m, "kld"), "max")->valuedouble < 0.01, "KL max %g", get(get(m, "kld"), "max")->valuedouble);
    cr_assert_not_null(get(get(r, "token_text"), "file")->valuestring, "no token text");
    cJSON_Delete(r);
    check_junit(e->J, n, 0);
}

Test(real, f32_engine_and_llamacpp_all_strict_with_prefix_scores_file, .timeout = 600)
{
    env e;
    setup(&e);
    char model[160];
    real_captures(&e, "F32", model, sizeof model);
    cr_assert_eq(sh(&e, "'%s' capture --runner llamacpp --model '%s' --score-prefix-of '%s' --threads 1 --no-timestamp "
                        "--package " PACKAGE " --out '%s'", VT_BIN, model, e.L, e.S), 0, "%s", e.cmd_err);
    char extra[64];
    snprintf(extra, sizeof extra, "--require-strict %d", N_STRICT);
    int rc = neartie(&e, extra);
    cr_assert_eq(rc, 0, "exit %d: %s%s", rc, e.cmd_err, e.cmd_out);
    check_all_strict(&e, N_STRICT);
    /* Token text comes from the model file named in the capture. */
    cr_assert(strstr(e.cmd_out, "token text from ") && strstr(e.cmd_out, "tiny-F32.gguf"), "%s", e.cmd_out);
    /* Through the library, scores given as a first and a third shape with
     * no second: the third's logits side file is an input like any other,
     * and a report published onto it is refused, the file left as it was. */
    char s3[160], side3[170];
    snprintf(s3, sizeof s3, "%s/S3.json", e.dir);
    snprintf(side3, sizeof side3, "%s.logits", s3);
    cr_assert_eq(sh(&e, "'%s' capture --runner llamacpp --model '%s' --score-prefix-of '%s' --score-shape batched "
                        "--threads 1 --no-timestamp --package " PACKAGE " --out '%s' --logits-out '%s'", VT_BIN, model,
                    e.L, s3, side3), 0, "%s", e.cmd_err);
    size_t n_before = 0, n_after = 0;
    char *before = slurp(side3, &n_before);
    vt_nt_opts o;
    vt_nt_opts_default(&o);
    o.local = e.L;
    o.oracle = e.O;
    o.prefix_scores = e.S;
    o.prefix_scores_c = s3;
    o.model = model;
    o.out = side3;
    o.overwrite = 1;
    vt_error err;
    vt_error_clear(&err);
    vt_neartie *c = vt_nt_open(&o, &err);
    cr_assert_not_null(c, "%s", err.msg);
    cr_assert_eq(vt_nt_guard(c, &err), VT_OK, "%s", err.msg);
    cr_assert_eq(vt_nt_n_refusals(c), 0, "%s", vt_nt_refusal(c, 0));
    cr_assert_eq(vt_nt_compare(c, &err), VT_OK, "%s", err.msg);
    cr_assert_eq(vt_nt_publish(c, &err), VT_EINPUT, "published onto %s", side3);
    cr_assert(strstr(err.msg, "S3.json.logits: output is the same path as an input"), "%s", err.msg);
    vt_nt_free(c);
    char *after = slurp(side3, &n_after);
    cr_assert(n_after == n_before && memcmp(before, after, n_before) == 0, "the side file was overwritten");
    free(before);
    free(after);
    /* A side file that is not the one the capture sealed: refused. Its
     * last byte belongs to repeat 9's frame, read for the hash only. */
    char side[160];
    snprintf(side, sizeof side, "%s.logits", e.L);
    FILE *f = fopen(side, "r+b");
    cr_assert_not_null(f);
    fseek(f, -1, SEEK_END);
    int ch = fgetc(f);
    fseek(f, -1, SEEK_END);
    fputc(ch ^ 1, f);
    fclose(f);
    expect_refused(&e, neartie(&e, extra), "L.json: field logits_file: L.json.logits: size ");
    cr_assert(strstr(e.cmd_err, "as the document records"), "%s", e.cmd_err);
    /* Missing: refused as well, never "metrics not available". */
    cr_assert_eq(unlink(side), 0);
    expect_refused(&e, neartie(&e, extra), "L.json: field logits_file: L.json.logits: expected the side file the "
                                           "document names");
    teardown(&e);
}

Test(real, q8_0_engine_and_llamacpp_all_strict_scored_here, .timeout = 600)
{
    env e;
    setup(&e);
    char model[160];
    real_captures(&e, "Q8_0", model, sizeof model);
    unlink(e.R);
    int rc = sh(&e, "'%s' neartie --local '%s' --oracle '%s' --score-with llamacpp --package " PACKAGE " --model '%s' "
                    "--scores-out '%s' --out '%s' --junit '%s' --require-strict %d", VT_BIN, e.L, e.O, model, e.S, e.R,
                e.J, N_STRICT);
    cr_assert_eq(rc, 0, "exit %d: %s%s", rc, e.cmd_err, e.cmd_out);
    check_all_strict(&e, N_STRICT);
    /* The scores it computed were published with the report, and the
     * report carries their seal. */
    cJSON *S = load_json(e.S), *r = check_report(e.R);
    cr_assert_str_eq(get(get(r, "prefix_scores"), "seal")->valuestring, get(S, "seal")->valuestring);
    cr_assert_str_eq(get(get(r, "prefix_scores"), "scored_by")->valuestring, "vt-neartie --score-with llamacpp");
    cJSON_Delete(S);
    cJSON_Delete(r);
    teardown(&e);
}

Test(real, one_engine_token_changed_fails_the_gate, .timeout = 600)
{
    env e;
    setup(&e);
    char model[160];
    real_captures(&e, "Q8_0", model, sizeof model);
    /* Prompt 4's token at position 3, in every repeat (so that the repeats
     * still agree): a token outside the 20 the engine ranked highest. */
    cJSON *L = load_json(e.L);
    const cJSON *run0 = cJSON_GetArrayItem(get(L, "runs"), 4);
    /* The engine's top 20 there: position 4 x 16 + 3 of its side file
     * (repeat 0 of prompts 0..3 before it, 16 tokens each). */
    char side[200];
    snprintf(side, sizeof side, "%s/%s", e.dir, get(get(L, "topk_file"), "name")->valuestring);
    size_t side_len;
    unsigned char *top = (unsigned char *)slurp(side, &side_len);
    cr_assert_not_null(top, "%s", side);
    const size_t off = 16 + (size_t)(4 * 16 + 3) * 20 * 8;
    cr_assert_geq(side_len, off + 160);
    int32_t was = (int32_t)cJSON_GetArrayItem(get(run0, "tokens"), 3)->valuedouble, now = 0;
    for (int found = 1; found; now++) {
        found = 0;
        for (int j = 0; j < 20; j++) {
            const unsigned char *q = top + off + 8 * (size_t)j;
            found |= (int32_t)((uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 | (uint32_t)q[3] << 24) == now;
        }
    }
    now--;
    free(top);
    cr_assert_neq(now, was);
    for (cJSON *r = at(L, "runs")->child; r; r = r->next)
        if (get(r, "prompt")->valuedouble == 4)
            cJSON_SetNumberValue(cJSON_GetArrayItem(at(r, "tokens"), 3), now);
    write_sealed(L, e.L); /* re-sealed: not the seal guard */
    cJSON_Delete(L);
    char extra[64];
    snprintf(extra, sizeof extra, "--require-strict %d", N_STRICT);
    int rc = sh(&e, "'%s' neartie --local '%s' --oracle '%s' --score-with llamacpp --package " PACKAGE " --model '%s' "
                    "--out '%s' --junit '%s' %s", VT_BIN, e.L, e.O, model, e.R, e.J, extra);
    cr_assert_eq(rc, 1, "exit %d: %s%s", rc, e.cmd_err, e.cmd_out);
    cJSON *r = check_report(e.R);
    const cJSON *p4 = report_prompt(r, 4);
    cr_assert_str_eq(get(p4, "class")->valuestring, "failed");
    const cJSON *fd = get(p4, "first_divergence");
    cr_assert_eq(get(fd, "position")->valuedouble, 3);
    cr_assert_eq(get(get(fd, "local"), "id")->valuedouble, now);
    cr_assert_eq(get(get(fd, "oracle"), "id")->valuedouble, was);
    cr_assert_gt(get(fd, "gap_mnats")->valuedouble, 500);
    cr_assert_eq(get(get(r, "totals"), "strict")->valuedouble, N_STRICT - 1);
    cr_assert_eq(get(get(r, "totals"), "failed")->valuedouble, 1);
    cr_assert(cJSON_IsFalse(get(get(r, "gate"), "passed")));
    /* Distributions compare only over identical prefixes: prompt 4 up to
     * and including its divergence at position 3. */
    cr_assert_eq(get(get(r, "metrics"), "positions")->valuedouble, (N_STRICT - 1) * 16 + 4);
    cJSON_Delete(r);
    check_junit(e.J, N_STRICT, 1);
    cr_assert(strstr(e.cmd_out, "p04     failed             3"), "%s", e.cmd_out);
    teardown(&e);
}

/* The near-tie-only path on real numbers: the tiny IQ4_XS fixture and the
 * 16 built-in prompts, engine against llama.cpp, both strict. Prompt p04
 * parts at position 15: the engine's 92 "}" against llama.cpp's 402 "av",
 * which llama.cpp, teacher-forced on the engine's stream, prefers by 14.0
 * milli-nats: near-tie-only, every other prompt strict. (The tiny Q8_0
 * fixture had such a tie until the engine's matrix products took ggml's
 * integer order; now its 16 prompts are all strict. If the engine comes to
 * agree here too, find another real tie: this test must show one.) */
Test(real, a_real_near_tie_is_near_tie_only, .timeout = 600)
{
    env e;
    setup(&e);
    char model[160];
    real_captures_of(&e, "IQ4_XS", model, sizeof model, VT_SOURCE_DIR "/fixtures/prompts/default16.jsonl");
    int rc = sh(&e, "'%s' neartie --local '%s' --oracle '%s' --score-with llamacpp --package " PACKAGE " --model '%s' "
                    "--out '%s' --junit '%s' --require-strict 15", VT_BIN, e.L, e.O, model, e.R, e.J);
    cr_assert_eq(rc, 0, "exit %d: %s%s", rc, e.cmd_err, e.cmd_out);
    cJSON *r = check_report(e.R);
    const cJSON *t = get(r, "totals");
    cr_assert_eq(get(t, "strict")->valuedouble, 15);
    cr_assert_eq(get(t, "near_tie_only")->valuedouble, 1);
    cr_assert_eq(get(t, "failed")->valuedouble, 0);
    const cJSON *p = report_prompt(r, 4);
    cr_assert_str_eq(get(p, "id")->valuestring, "p04");
    cr_assert_str_eq(get(p, "class")->valuestring, "near-tie-only");
    const cJSON *fd = get(p, "first_divergence");
    cr_assert_eq(get(fd, "position")->valuedouble, 15);
    cr_assert_eq(get(get(fd, "local"), "id")->valuedouble, 92);
    cr_assert_eq(get(get(fd, "oracle"), "id")->valuedouble, 402);
    double gap = get(fd, "gap_mnats")->valuedouble;
    cr_assert(gap > 13.9 && gap < 14.1, "gap %.3f milli-nats", gap);
    cr_assert(cJSON_IsTrue(get(get(r, "evidence"), "strict")));
    cJSON_Delete(r);
    check_junit(e.J, 16, 0);
    teardown(&e);
}

/* The largest gap (milli-nats) of prompt p in a prefix-scores document,
 * and whether every run's logits_sha256 is the capture's. */
static double max_gap_of(const cJSON *S, int p)
{
    const cJSON *run = cJSON_GetArrayItem(get(S, "runs"), p);
    const cJSON *lp = get(run, "logprobs"), *ap = get(run, "argmax_logprobs");
    double m = 0;
    for (int i = 0; i < cJSON_GetArraySize(lp); i++)
        m = fmax(m, 1000.0 * (cJSON_GetArrayItem(ap, i)->valuedouble - cJSON_GetArrayItem(lp, i)->valuedouble));
    return m;
}

static int same_logits(const cJSON *C, const cJSON *S)
{
    int same = 1;
    for (const cJSON *a = get(C, "runs")->child, *b = get(S, "runs")->child; a && b; a = a->next, b = b->next)
        same &= strcmp(get(a, "logits_sha256")->valuestring, get(b, "logits_sha256")->valuestring) == 0;
    return same;
}

/* llama.cpp on a Q4_K model of 4 layers and the full vocabulary (the small
 * preset): teacher-forced on its own greedy streams, replayed as generation
 * ran, it computes its generation's logits bit for bit (no gap anywhere);
 * batched, it does not (measured: gaps up to 106 milli-nats). vt-neartie
 * --score-with measures that batched self-gap as the oracle's noise floor
 * and scores the local streams in both shapes. */
Test(real, the_oracle_replaying_its_own_stream_has_no_gap, .timeout = 900)
{
    env e;
    setup(&e);
    char model[300], prompts[300];
    snprintf(model, sizeof model, "%s/small-Q4_K.gguf", e.dir);
    snprintf(prompts, sizeof prompts, "%s/prompts.jsonl", e.dir);
    cr_assert_eq(sh(&e, "'%s' fixture make --arch qwen3 --preset small --weights Q4_K --seed 1 -o '%s'", VT_BIN, model),
                 0, "%s", e.cmd_err);
    FILE *in = fopen(VT_SOURCE_DIR "/fixtures/prompts/default16.jsonl", "r"), *pf = fopen(prompts, "w");
    cr_assert(in && pf);
    char line[1024];
    for (int i = 0; i < 3 && fgets(line, sizeof line, in); i++) /* p00, p01, p02 */
        fputs(line, pf);
    fclose(in);
    fclose(pf);
    const char *runner[2] = { "engine", "llamacpp" }, *out[2] = { e.L, e.O };
    for (int k = 0; k < 2; k++)
        cr_assert_eq(sh(&e, "'%s' capture --runner %s --model '%s' --prompts '%s' --out '%s' --max-tokens 16 "
                            "--threads 1 --no-timestamp %s %s", VT_BIN, runner[k], model, prompts, out[k],
                        k ? "--package" : "", k ? PACKAGE : ""), 0, "%s", e.cmd_err);
    cJSON *O = load_json(e.O);
    cJSON *S[2];
    const char *shape[2] = { "replay", "batched" };
    for (int k = 0; k < 2; k++) {
        char path[400];
        snprintf(path, sizeof path, "%s/self-%s.json", e.dir, shape[k]);
        cr_assert_eq(sh(&e, "'%s' capture --runner llamacpp --package %s --model '%s' --score-prefix-of '%s' "
                            "--score-shape %s --out '%s' --threads 1 --no-timestamp", VT_BIN, PACKAGE, model, e.O,
                        shape[k], path), 0, "%s", e.cmd_err);
        S[k] = load_json(path);
        cr_assert_str_eq(get(S[k], "shape")->valuestring, shape[k]);
    }
    double batched_max = 0;
    for (int p = 0; p < 3; p++) {
        cr_assert_eq(max_gap_of(S[0], p), 0.0, "replayed prompt %d: gap %g", p, max_gap_of(S[0], p));
        batched_max = fmax(batched_max, max_gap_of(S[1], p));
    }
    cr_assert(same_logits(O, S[0]), "replayed logits differ from the generation's");
    cr_assert(!same_logits(O, S[1]), "batched logits are the generation's: this test no longer shows the shapes differ");
    cr_assert(batched_max > 10.0, "batched self-gap %g milli-nats", batched_max);
    /* vt-neartie measures the same floor. */
    int rc = sh(&e, "'%s' neartie --local '%s' --oracle '%s' --score-with llamacpp --package " PACKAGE " --model '%s' "
                    "--out '%s' --junit '%s' --allow-unverified --max-failed 3", VT_BIN, e.L, e.O, model, e.R, e.J);
    cr_assert_eq(rc, 0, "exit %d: %s%s", rc, e.cmd_err, e.cmd_out);
    cJSON *r = check_report(e.R);
    const cJSON *noise = get(r, "noise");
    cr_assert(cJSON_IsTrue(get(noise, "available")));
    cr_assert_str_eq(get(get(noise, "second_shape"), "shape")->valuestring, "batched");
    cr_assert_str_eq(get(get(noise, "second_shape"), "scored_by")->valuestring, "vt-neartie --score-with llamacpp");
    cr_assert_str_eq(get(get(noise, "floor"), "shape")->valuestring, "batched");
    cr_assert_str_eq(get(get(r, "prefix_scores"), "shape")->valuestring, "replay");
    /* The third shape: llama.cpp in eager mode, scored here too. */
    cr_assert_str_eq(get(get(noise, "third_shape"), "noise_shape")->valuestring, "eager");
    cr_assert_str_eq(get(get(noise, "third_shape"), "scored_by")->valuestring, "vt-neartie --score-with llamacpp");
    cr_assert_eq(cJSON_GetArraySize(get(get(r, "totals"), "shapes")), 3);
    for (int p = 0; p < 3; p++) {
        double fl = get(report_prompt(r, p), "noise_floor_mnats")->valuedouble;
        cr_assert(fabs(fl - max_gap_of(S[1], p)) < 1e-6, "prompt %d: floor %g, batched self-gap %g", p, fl,
                  max_gap_of(S[1], p));
    }
    cr_assert(fabs(get(get(r, "totals"), "noise_floor_max_mnats")->valuedouble - batched_max) < 1e-6);
    cr_assert(strstr(e.cmd_out, "oracle's noise floor (its own streams scored batched"), "%s", e.cmd_out);
    cJSON_Delete(r);
    cJSON_Delete(S[0]);
    cJSON_Delete(S[1]);
    cJSON_Delete(O);
    teardown(&e);
}

