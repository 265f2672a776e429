/* Every JSON document vt writes is valid UTF-8 that vt's own reader takes,
 * whatever the bytes of the tokens in it: a token that is one byte of a
 * multi-byte character (0xE6, the first of three) and a token that is the
 * byte 0x00, sent through every writer (vt run --json, a capture, prefix
 * scores, a vt-neartie report, vt gguf info --json), each result parsed by
 * Python's json over a strict UTF-8 decode and by vt_json_parse (and the
 * capture reader where it is a capture). Where bytes are not UTF-8 the text
 * holds U+FFFD and the exact bytes are beside it in hex. */
#include <criterion/criterion.h>

#include "capture/canonical_json.h"
#include "capture/capture.h"
#include "capture/capture_read.h"
#include "common/vt_json.h"
#include "engine/gguf_file.h"
#include "engine/tokenizer.h"
#include "tests/support/vt_test.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define sh(e, ...) VT_TEST_SH(e, __VA_ARGS__)
#define get(o, key) vt_test_get(o, key)

typedef struct env {
    char dir[64], model[128];
    char cmd_out[1 << 18], cmd_err[1 << 14];
    int32_t hello, e6, nul; /* token ids */
} env;

static const char FFFD[] = "\xef\xbf\xbd";

static void setup(env *e)
{
    memset(e, 0, sizeof *e);
    snprintf(e->dir, sizeof e->dir, "/tmp/vt-jsonw-XXXXXX");
    cr_assert_not_null(mkdtemp(e->dir));
    snprintf(e->model, sizeof e->model, "%s/m.gguf", e->dir);
    cr_assert_eq(sh(e, "'%s' fixture make --arch qwen3 --preset tiny --weights Q8_0 --seed 1 -o '%s'", VT_BIN, e->model),
                 0, "%s", e->cmd_err);
    vt_error err;
    vt_error_clear(&err);
    vt_tokenizer *tok = vt_tokenizer_open_file(e->model, &err);
    cr_assert_not_null(tok, "%s", err.msg);
    /* Byte-level BPE: byte 0xE6 is the token "æ" (U+00E6), byte 0x00 is "Ā" (U+0100). */
    e->e6 = vt_tokenizer_find(tok, "\xc3\xa6", 2);
    e->nul = vt_tokenizer_find(tok, "\xc4\x80", 2);
    e->hello = vt_tokenizer_find(tok, "H", 1);
    cr_assert(e->e6 >= 0 && e->nul >= 0 && e->hello >= 0, "ids %d %d %d", e->e6, e->nul, e->hello);
    size_t n;
    const char *p = vt_tokenizer_token_piece(tok, e->e6, &n);
    cr_assert(n == 1 && (unsigned char)p[0] == 0xe6, "token %d is not the byte 0xE6", e->e6);
    p = vt_tokenizer_token_piece(tok, e->nul, &n);
    cr_assert(n == 1 && p[0] == 0, "token %d is not the byte 0x00", e->nul);
    vt_tokenizer_free(tok);
}

static void teardown(env *e)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", e->dir);
    cr_assert_eq(system(cmd), 0);
}

/* path parsed by Python (strict UTF-8 decode, then json) and by vt_json_parse. */
static cJSON *parse_strictly(env *e, const char *path)
{
    cr_assert_eq(sh(e, "python3 -c 'import json,sys; json.loads(open(sys.argv[1],\"rb\").read().decode(\"utf-8\"))' "
                       "'%s'", path), 0, "%s: Python refuses it: %s", path, e->cmd_err);
    size_t n;
    char *text = vt_test_slurp(path, &n);
    cr_assert_not_null(text, "%s", path);
    vt_error err;
    vt_error_clear(&err);
    cJSON *doc = vt_json_parse(text, n, path, &err);
    cr_assert_not_null(doc, "%s", err.msg);
    free(text);
    return doc;
}

static void read_as(const char *path, vt_doc_kind kind)
{
    vt_doc d;
    vt_error err;
    vt_error_clear(&err);
    vt_doc_source src = { .path = path, .kind = kind };
    cr_assert_eq(vt_doc_read(&src, &d, &err), VT_OK, "%s", err.msg);
    vt_doc_free(&d);
}

/* A token object or position: its text U+FFFD, the byte beside it. */
static void expect_replaced(const cJSON *o, const char *hex)
{
    cr_assert_str_eq(get(o, "text")->valuestring, FFFD);
    cr_assert_str_eq(get(o, "text_hex")->valuestring, hex);
}

Test(writers, vt_run_json)
{
    env e;
    setup(&e);
    char out[160];
    snprintf(out, sizeof out, "%s/run.json", e.dir);
    cr_assert_eq(sh(&e, "{ '%s' run --runner engine --model '%s' --prompt-tokens %d,%d --score %d,%d,%d --json > '%s'; }",
                    VT_BIN, e.model, e.hello, e.e6, e.e6, e.nul, e.hello, out), 0, "%s", e.cmd_err);
    cJSON *doc = parse_strictly(&e, out);
    const cJSON *pos = get(doc, "positions");
    cr_assert_eq(cJSON_GetArraySize(pos), 3);
    expect_replaced(cJSON_GetArrayItem(pos, 0), "e6");
    expect_replaced(cJSON_GetArrayItem(pos, 1), "00");
    cr_assert_str_eq(get(cJSON_GetArrayItem(pos, 2), "text")->valuestring, "H");
    cr_assert_null(cJSON_GetObjectItem(cJSON_GetArrayItem(pos, 2), "text_hex"), "exact text needs no hex");
    char want[32];
    snprintf(want, sizeof want, "%s%sH", FFFD, FFFD);
    cr_assert_str_eq(get(doc, "text")->valuestring, want);
    cr_assert_str_eq(get(doc, "text_hex")->valuestring, "e60048");
    cJSON_Delete(doc);
    /* Generating, by both runners: still valid. */
    const char *runners[] = { "engine", "llamacpp" };
    for (int k = 0; k < 2; k++) {
        cr_assert_eq(sh(&e, "{ '%s' run --runner %s --model '%s' --prompt-tokens %d,%d,%d --max-tokens 8 --json > '%s'; }",
                        VT_BIN, runners[k], e.model, e.hello, e.e6, e.nul, out), 0, "%s", e.cmd_err);
        cJSON_Delete(parse_strictly(&e, out));
    }
    teardown(&e);
}

Test(writers, vt_gguf_info_json)
{
    env e;
    setup(&e);
    char out[160], odd[160];
    snprintf(out, sizeof out, "%s/info.json", e.dir);
    cr_assert_eq(sh(&e, "{ '%s' gguf info '%s' --json > '%s'; }", VT_BIN, e.model, out), 0, "%s", e.cmd_err);
    cJSON_Delete(parse_strictly(&e, out));
    /* general.name holding a byte that is not UTF-8 and a NUL. */
    vt_error err;
    vt_error_clear(&err);
    vt_gguf *g = vt_gguf_open(e.model, &err);
    cr_assert_not_null(g, "%s", err.msg);
    vt_gguf_writer *w = vt_gguf_writer_from(g, &err);
    cr_assert_not_null(w, "%s", err.msg);
    static const char name[] = "bad\xe6name\0z";
    vt_gguf_value v = { .type = VT_GGUF_STRING, .v.str = { name, sizeof name - 1 } };
    cr_assert_eq(vt_gguf_writer_set_value(w, "general.name", &v), VT_OK);
    snprintf(odd, sizeof odd, "%s/odd.gguf", e.dir);
    cr_assert_eq(vt_gguf_writer_write_file(w, odd, NULL, &err), VT_OK, "%s", err.msg);
    vt_gguf_writer_free(w);
    vt_gguf_free(g);
    cr_assert_eq(sh(&e, "{ '%s' gguf info '%s' --json > '%s'; }", VT_BIN, odd, out), 0, "%s", e.cmd_err);
    cJSON *doc = parse_strictly(&e, out);
    cJSON_Delete(doc);
    char *text = vt_test_slurp(out, NULL);
    char want[96];
    snprintf(want, sizeof want, "{\"text\":\"bad%sname%sz\",\"hex\":\"626164e66e616d65007a\"}", FFFD, FFFD);
    cr_assert(strstr(text, want), "%s not in %s", want, text);
    free(text);
    teardown(&e);
}

/* Writes doc as vt-capture does (canonical, sealed, a newline). */
static void write_sealed(cJSON *doc, const char *path)
{
    cJSON_DeleteItemFromObjectCaseSensitive(doc, "workload_seal");
    cJSON_DeleteItemFromObjectCaseSensitive(doc, "seal");
    vt_error err;
    vt_error_clear(&err);
    cJSON *w = vt_capture_workload(doc);
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
    vt_test_spit(path, s, n + 1);
    free(s);
}

Test(writers, captures_scores_and_reports, .timeout = 300)
{
    env e;
    setup(&e);
    char prompts[160], L[160], O[160], S[160], R[160];
    snprintf(prompts, sizeof prompts, "%s/p.jsonl", e.dir);
    snprintf(L, sizeof L, "%s/L.json", e.dir);
    snprintf(O, sizeof O, "%s/O.json", e.dir);
    snprintf(S, sizeof S, "%s/S.json", e.dir);
    snprintf(R, sizeof R, "%s/R.json", e.dir);
    char line[200];
    int n = snprintf(line, sizeof line, "{\"id\":\"bytes\",\"tokens\":[%d,%d,%d]}\n{\"id\":\"text\",\"text\":\"Hello\"}\n",
                     e.hello, e.e6, e.nul);
    vt_test_spit(prompts, line, (size_t)n);
    const char *runner[2] = { "engine", "llamacpp" }, *out[2] = { L, O };
    for (int k = 0; k < 2; k++) {
        cr_assert_eq(sh(&e, "'%s' capture --runner %s --model '%s' --prompts '%s' --max-tokens 6 --repetitions 2 "
                           "--no-timestamp --out '%s' --logits-out '%s.logits'", VT_BIN, runner[k], e.model, prompts,
                        out[k], out[k]), 0, "%s", e.cmd_err);
        cJSON_Delete(parse_strictly(&e, out[k]));
        read_as(out[k], VT_DOC_CAPTURE);
    }
    cr_assert_eq(sh(&e, "'%s' capture --runner llamacpp --model '%s' --score-prefix-of '%s' --no-timestamp --out '%s'",
                    VT_BIN, e.model, L, S), 0, "%s", e.cmd_err);
    cJSON_Delete(parse_strictly(&e, S));
    read_as(S, VT_DOC_PREFIX);
    /* The local stream made to diverge on those bytes, in every repeat (the
     * capture re-sealed: anyone can), so that the report names them. */
    size_t len;
    char *text = vt_test_slurp(L, &len);
    cJSON *doc = cJSON_ParseWithLength(text, len);
    free(text);
    for (cJSON *r = get(doc, "runs")->child; r; r = r->next)
        if (get(r, "prompt")->valuedouble == 0) {
            cJSON_SetNumberValue(cJSON_GetArrayItem(get(r, "tokens"), 0), e.e6);
            cJSON_SetNumberValue(cJSON_GetArrayItem(get(r, "tokens"), 1), e.nul);
        }
    write_sealed(doc, L);
    cJSON_Delete(doc);
    int rc = sh(&e, "'%s' neartie --local '%s' --oracle '%s' --score-with llamacpp --model '%s' --out '%s' "
                    "--max-failed 2 --allow-unverified", VT_BIN, L, O, e.model, R);
    cr_assert_eq(rc, 0, "exit %d: %s%s", rc, e.cmd_err, e.cmd_out);
    doc = parse_strictly(&e, R);
    const cJSON *fd = get(cJSON_GetArrayItem(get(doc, "prompts"), 0), "first_divergence");
    cr_assert_eq(get(fd, "position")->valuedouble, 0);
    expect_replaced(get(fd, "local"), "e6");
    int found = 0; /* the NUL token, as a largest gap or its context */
    for (const cJSON *g = get(doc, "largest_gaps")->child; g; g = g->next) {
        const cJSON *l = get(g, "local");
        if (get(l, "id")->valuedouble == e.nul) {
            expect_replaced(l, "00");
            found = 1;
        }
    }
    cr_assert(found, "the NUL token is in no largest gap");
    cJSON_Delete(doc);
    teardown(&e);
}
