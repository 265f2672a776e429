/* common/vt_json: the strict JSON reader every input goes through. Each
 * refusal with its message (file, offset, field, expectation) and the same
 * text without the defect accepted; prompt files (JSON Lines) refusing a
 * \u0000 in an id or a text, naming file and line; and the strict number
 * parser of options and fields (common/vt_parse.h). */
#include <criterion/criterion.h>

#include "capture/prompts.h"
#include "common/vt_json.h"
#include "common/vt_parse.h"
#include "common/vt_utf8.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Parses text[0..len) and expects refusal with every needle in the message. */
static void refused_n(const char *text, size_t len, const char *n1, const char *n2)
{
    vt_error err;
    vt_error_clear(&err);
    cJSON *j = vt_json_parse(text, len, "in.json", &err);
    cr_assert_null(j, "accepted: %.*s", (int)len, text);
    cr_assert_eq(err.code, VT_EINPUT);
    cr_assert(strncmp(err.msg, "in.json: offset ", 16) == 0, "%s", err.msg);
    cr_assert(strstr(err.msg, n1), "'%s' not in: %s", n1, err.msg);
    cr_assert(!n2 || strstr(err.msg, n2), "'%s' not in: %s", n2, err.msg);
    cr_assert_null(strchr(err.msg, '\n'));
}

static void refused(const char *text, const char *n1, const char *n2) { refused_n(text, strlen(text), n1, n2); }

static cJSON *accepted_n(const char *text, size_t len)
{
    vt_error err;
    vt_error_clear(&err);
    cJSON *j = vt_json_parse(text, len, "in.json", &err);
    cr_assert_not_null(j, "refused: %.*s: %s", (int)len, text, err.msg);
    return j;
}

static cJSON *accepted(const char *text) { return accepted_n(text, strlen(text)); }

Test(json, plain_documents_are_accepted)
{
    static const char *const ok[] = {
        "{}", "[]", "0", "-0", "1.5e-3", "-12.25E+7", "true", "false", "null", "\"\"",
        " \t\r\n{\"a\": [1, 2, {\"b\": null}], \"c\": \"d\"} \n",
        "\"\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u00e9 \\ud83d\\ude00\"",
        "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"",
    };
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++)
        cJSON_Delete(accepted(ok[i]));
    /* 512 levels deep is the limit, and fine. */
    char deep[1025];
    memset(deep, '[', 512);
    memset(deep + 512, ']', 512);
    deep[1024] = '\0';
    cJSON_Delete(accepted(deep));
}

Test(json, escaped_backslash_then_u0000_is_six_characters_not_a_nul)
{
    /* The JSON text "a\\u0000": a backslash (escaped) and then u0000 as is. */
    cJSON *j = accepted("{\"name\": \"a\\\\u0000\", \"a\\\\u0000\": 1}");
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, "name");
    cr_assert_str_eq(v->valuestring, "a\\u0000");
    cr_assert_not_null(cJSON_GetObjectItemCaseSensitive(j, "a\\u0000"));
    cJSON_Delete(j);
    /* An escaped backslash and then a real \u0000 escape is refused. */
    refused("[\"a\\\\\\u0000\"]", "offset 5: field [0]: expected a string without a \\u0000 escape", NULL);
}

Test(json, nul_escape_in_a_value_or_a_name_is_refused)
{
    refused("{\"files\": [{\"name\": \"model.gguf\\u0000.evil\"}]}",
            "in.json: offset 31: field files[0].name: expected a string without a \\u0000 escape", NULL);
    refused("{\"ok\": 1, \"a\\u0000b\": 1}", "offset 12: expected a member name without a \\u0000 escape", NULL);
    /* Without the defect. */
    cJSON *j = accepted("{\"files\": [{\"name\": \"model.gguf.evil\"}]}");
    cJSON_Delete(j);
}

Test(json, raw_nul_byte_is_refused_wherever_it_is)
{
    refused_n("{\"a\": \"x\0y\"}", 12, "offset 8: field a: expected a string without a NUL byte", NULL);
    refused_n("{\"a\":\0 1}", 9, "offset 5: field a: expected JSON text without NUL bytes", NULL);
    refused_n("{\"a\": 1}\0", 9, "offset 8: expected only whitespace after the JSON document (found a NUL byte)",
              NULL);
    refused_n("{\"a\": 1} \n\0\n", 12, "offset 10:", "NUL");
    cJSON_Delete(accepted_n("{\"a\": 1} \n\n", 11));
}

Test(json, anything_after_the_document_is_refused)
{
    refused("{\"a\": 1}{\"a\": 2}", "offset 8: expected only whitespace after the JSON document", NULL);
    refused("{\"a\": 1}\n{\"a\": 2}\n", "offset 9: expected only whitespace after", NULL);
    refused("[1] x", "offset 4:", "only whitespace");
    refused("1 2", "offset 2:", "only whitespace");
    /* Control bytes are no whitespace in JSON (cJSON takes them as such). */
    refused("{}\f", "offset 2:", "only whitespace");
    refused("\v{}", "offset 0:", "a JSON value");
}

Test(json, bytes_that_are_not_utf8_are_refused)
{
    refused("[\"\xff\"]", "offset 2: field [0]: expected a UTF-8 string", NULL);
    refused("[\"\xc0\xaf\"]", "offset 2:", "UTF-8");         /* overlong '/' */
    refused("[\"\xed\xa0\x80\"]", "offset 2:", "UTF-8");     /* an encoded surrogate */
    refused("[\"\xf4\x90\x80\x80\"]", "offset 2:", "UTF-8"); /* above U+10FFFF */
    refused("[\"\xe2\x82\"]", "offset 2:", "UTF-8");         /* truncated */
    refused("{\"\xff\": 1}", "offset 2:", "UTF-8");          /* in a name */
    refused("[1, \xff]", "offset 4: field [1]: expected UTF-8 text", NULL);
    /* Unpaired surrogate escapes decode to no UTF-8 either. */
    refused("[\"\\ud83d\"]", "offset 2:", "high surrogate escape followed by a low one");
    refused("[\"\\ude00\"]", "offset 2:", "lone low surrogate");
    cJSON_Delete(accepted("[\"\xe2\x82\xac\"]"));
}

Test(json, what_is_not_json_is_refused_at_its_offset)
{
    refused("", "offset 0: expected a JSON value (the text ended)", NULL);
    refused("   ", "offset 3:", "the text ended");
    refused("{\"schema\": \"vt.manifest/1\", \"files\": [", "offset 38: field files[0]: expected a JSON value", NULL);
    refused("{\"a\": 1,}", "offset 8: expected a member name", NULL);
    refused("[1, 2,]", "offset 6: field [2]: expected a JSON value", NULL);
    refused("{'a': 1}", "offset 1: expected a member name", NULL);
    refused("{\"a\" 1}", "offset 5: field a: expected ':'", NULL);
    refused("{\"a\": 1 \"b\": 2}", "offset 8: field a: expected ',' or '}'", NULL);
    refused("[01]", "offset 2: field [0]: expected a number without leading zeros", NULL);
    refused("[+1]", "offset 1:", "a JSON value");
    refused("[.5]", "offset 1:", "a JSON value");
    refused("[1.]", "offset 3:", "a digit after the decimal point");
    refused("[1e]", "offset 3:", "a digit in the exponent");
    refused("[tru]", "offset 1:", "a JSON value");
    refused("[NaN]", "offset 1:", "a JSON value");
    refused("[\"a\tb\"]", "offset 3:", "raw control bytes");
    refused("[\"a\\x\"]", "offset 3:", "an escape");
    refused("[\"\\u12g4\"]", "offset 2:", "an escape");
    refused("[\"abc", "offset 5:", "a closing '\"'");
    refused("\xef\xbb\xbf{}", "offset 0:", "without a byte order mark");
    /* Too deep: refused with a message, not a crash, however deep. */
    char deep[1027];
    memset(deep, '[', 513);
    memset(deep + 513, ']', 513);
    deep[1026] = '\0';
    refused(deep, "offset 512:", "nesting at most 512 deep");
    size_t big = 1 << 20;
    char *open = malloc(big);
    memset(open, '[', big);
    refused_n(open, big, "offset 512:", "nesting");
    free(open);
}

Test(json, duplicate_names_and_infinite_numbers_are_refused)
{
    refused("{\"a\": 1, \"b\": {\"c\": 2, \"c\": 3}}",
            "offset 23: field b.c: expected each member name once in its object, found twice", NULL);
    refused("{\"x\": [{\"k\": 1}, {\"k\": 1, \"j\": [], \"k\": 2}]}", "offset 35: field x[1].k:", "twice");
    /* Escaped and plain spellings of one name are the same name. */
    refused("{\"ab\": 1, \"a\\u0062\": 2}", "offset 10: field ab:", "twice");
    refused("{\"a\": [1, 1e999]}", "offset 10: field a[1]: expected a number within the range of a double", NULL);
    refused("[-1e400]", "offset 1:", "range of a double");
    cJSON *j = accepted("{\"a\": 1, \"b\": {\"c\": 2, \"d\": 3}, \"c\": 4, \"n\": [1e308, 2]}");
    cJSON_Delete(j);
}

Test(json, fault_details_for_callers_that_place_it)
{
    vt_json_fault f;
    cr_assert_null(vt_json_parse_fault("{\"id\": \"a\"} {}", 14, &f));
    cr_assert_eq(f.kind, VT_JSON_TRAILING);
    cr_assert_eq(f.offset, 12);
    cr_assert_eq(f.doc_end, 11);
    cJSON *j = vt_json_parse_fault("{\"id\": \"a\"}", 11, &f);
    cr_assert_not_null(j);
    cr_assert_eq(f.kind, VT_JSON_OK);
    cJSON_Delete(j);
    /* The text need not end in a NUL: only len bytes are read. */
    j = vt_json_parse_fault("[1, 2]garbage", 6, &f);
    cr_assert_not_null(j);
    cr_assert_eq(cJSON_GetArraySize(j), 2);
    cJSON_Delete(j);
    vt_error err;
    vt_error_clear(&err);
    cr_assert_null(vt_json_parse("[", 1, NULL, &err));
    cr_assert(strncmp(err.msg, "JSON: offset 1:", 15) == 0, "%s", err.msg);
}

Test(utf8, check_gives_the_first_bad_offset)
{
    cr_assert_eq(vt_utf8_check("ab\xc3\xa9", 4), 4);
    cr_assert_eq(vt_utf8_check("ab\xc3", 3), 2);
    cr_assert_eq(vt_utf8_check("a\x80", 2), 1);
    cr_assert(vt_utf8_valid("", 0));
    cr_assert_not(vt_utf8_valid("\xf8\x88\x80\x80\x80", 5));
}

/* ---- prompt files (JSON Lines) ---- */

static char prompts_path[64];

static void make_prompts(const char *content, size_t len)
{
    snprintf(prompts_path, sizeof prompts_path, "/tmp/vt-json-XXXXXX");
    int fd = mkstemp(prompts_path);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, content, len), (ssize_t)len);
    close(fd);
}

static vt_tokenizer *vocab(void)
{
    vt_error err;
    vt_tokenizer *t = vt_tokenizer_open_file(VT_VOCAB_DIR "/ggml-vocab-qwen2.gguf", &err);
    cr_assert_not_null(t, "%s", err.msg);
    return t;
}

/* Reads content as a prompt file; refused with want (after "FILE: ") or,
 * want == NULL, read with n prompts. */
static void prompts_case(const char *content, size_t len, const char *want, int n)
{
    make_prompts(content, len);
    vt_tokenizer *t = vocab();
    vt_prompt_set ps;
    vt_error err;
    vt_error_clear(&err);
    int rc = vt_prompts_read(prompts_path, t, &ps, &err);
    if (want) {
        cr_assert_eq(rc, VT_EINPUT, "accepted: %s", content);
        char full[512];
        snprintf(full, sizeof full, "%s: %s", prompts_path, want);
        cr_assert_str_eq(err.msg, full);
    } else {
        cr_assert_eq(rc, VT_OK, "%s", err.msg);
        cr_assert_eq(ps.n, n);
        vt_prompts_free(&ps);
    }
    vt_tokenizer_free(t);
    unlink(prompts_path);
}

/* A string literal and its length (it may hold a NUL). */
#define LIT(s) s, sizeof(s) - 1
#define LINE1 "{\"id\": \"p1\", \"text\": \"Hello\"}\n"

Test(prompts, nul_escape_in_id_or_text_is_refused_naming_file_and_line)
{
    prompts_case(LIT(LINE1 "{\"id\": \"p2\\u0000x\", \"text\": \"Hi\"}\n"),
                 "line 2: field id: expected a string without a \\u0000 escape (it would cut the string short)", 0);
    prompts_case(LIT(LINE1 "{\"id\": \"p2\", \"text\": \"Hi\\u0000 and the rest\"}\n"),
                 "line 2: field text: expected a string without a \\u0000 escape (it would cut the string short)", 0);
    prompts_case(LIT(LINE1 "{\"id\": \"p2\", \"text\": \"Hi\0 and the rest\"}\n"),
                 "line 2: field text: expected a string without a NUL byte", 0);
    prompts_case(LIT(LINE1 "{\"id\": \"p2\", \"text\": \"Hi\"}\n"), NULL, 2);
    /* An escaped backslash before u0000 is text, tokenized as such. */
    prompts_case(LIT(LINE1 "{\"id\": \"p2\", \"text\": \"C:\\\\u0000\"}\n"), NULL, 2);
}

Test(prompts, strict_json_faults_on_a_line)
{
    prompts_case(LIT(LINE1 "{\"id\": \"p2\", \"id\": \"p3\", \"text\": \"Hi\"}\n"),
                 "line 2: field id: expected each member name once in its object, found twice (readers differ on "
                 "which value wins)",
                 0);
    prompts_case(LIT(LINE1 "{\"id\": \"p2\", \"text\": \"Hi\"}\x01\n"),
                 "line 2: column 27: expected one JSON object on the line", 0);
}

/* Numbers in options and text fields (common/vt_parse.h): the whole string,
 * digits only, a minus sign only before a negative number. */
Test(parse, integers_are_whole_strict_and_in_range)
{
    int64_t v = 0;
    cr_assert(vt_parse_i64("5", 1, 10, &v) && v == 5);
    cr_assert(vt_parse_i64("-3", -5, 5, &v) && v == -3);
    cr_assert(vt_parse_i64("0", 0, 5, &v) && v == 0);
    const char *bad[] = { "", " 5", "+5", "-0", "5 ", "5x", "0x5", "--5", "-", "11", "99999999999999999999", "1e1" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        v = 42;
        cr_assert(!vt_parse_i64(bad[i], -5, 10, &v), "'%s' accepted", bad[i]);
        cr_assert_eq(v, 42, "'%s': the output changed", bad[i]);
    }
    cr_assert(!vt_parse_i64(NULL, 0, 1, &v));
}

Test(parse, decimals_are_whole_strict_finite_and_in_range)
{
    double v = 0;
    cr_assert(vt_parse_f64("0.5", 0, 1, &v) && v == 0.5);
    cr_assert(vt_parse_f64("500", 0, 1e6, &v) && v == 500);
    cr_assert(vt_parse_f64("-2.5e-1", -1, 1, &v) && v == -0.25);
    cr_assert(vt_parse_f64(".5", 0, 1, &v) && v == 0.5);
    cr_assert(vt_parse_f64("5.", 0, 10, &v) && v == 5);
    cr_assert(vt_parse_f64("1E+2", 0, 1000, &v) && v == 100);
    const char *bad[] = { "", " 5", "+5", "-0", "-0.0", "5 ", "5x", "0x5", "0x1p3", "inf", "nan", "-inf",
                          ".", "-", "e5", "1e", "1e+", "--5", "1,5", "1e999", "11" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        v = 42;
        cr_assert(!vt_parse_f64(bad[i], -5, 10, &v), "'%s' accepted", bad[i]);
        cr_assert_eq(v, 42, "'%s': the output changed", bad[i]);
    }
    cr_assert(!vt_parse_f64(NULL, 0, 1, &v));
}

Test(parse, lists_refuse_empty_entries_and_bad_items)
{
    int64_t *v = NULL;
    size_t n = 0;
    cr_assert(vt_parse_list_i64("1,2,30", 0, 100, &v, &n));
    cr_assert(n == 3 && v[0] == 1 && v[1] == 2 && v[2] == 30);
    free(v);
    cr_assert(vt_parse_list_i64("7", 0, 100, &v, &n) && n == 1 && v[0] == 7);
    free(v);
    const char *bad[] = { "", ",", "1,,2", "1,2,", ",1", "1, 2", "1,+2", "1,-0", "1,101", "1;2", "1,x" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        v = NULL;
        n = 99;
        cr_assert(!vt_parse_list_i64(bad[i], 0, 100, &v, &n), "'%s' accepted", bad[i]);
        cr_assert(v == NULL && n == 99, "'%s': the output changed", bad[i]);
    }
    /* many entries: grows past its first allocation */
    char big[4096] = "0";
    for (int i = 1; i < 500; i++)
        snprintf(big + strlen(big), sizeof big - strlen(big), ",%d", i % 100);
    cr_assert(vt_parse_list_i64(big, 0, 100, &v, &n) && n == 500 && v[499] == 99);
    free(v);
}

Test(parse, a_single_valued_option_is_taken_once)
{
    vt_opt_seen seen = { .n = 0 };
    cr_assert(vt_opt_once(&seen, "--out"));
    cr_assert(vt_opt_once(&seen, "--model"));
    cr_assert(!vt_opt_once(&seen, "--out"));
    cr_assert(!vt_opt_once(&seen, "--model"));
    cr_assert(vt_opt_once(&seen, "--seed"));
    cr_assert(!vt_opt_once(&seen, "-o"), "-o is --out");
    static const char *const many[] = { "--allow-diff", NULL };
    vt_opt_seen s2 = { .repeatable = many };
    cr_assert(vt_opt_once(&s2, "-o"));
    cr_assert(!vt_opt_once(&s2, "--out"));
    for (int i = 0; i < 3; i++)
        cr_assert(vt_opt_once(&s2, "--allow-diff"));
}

/* Unique ids among many lines: the first repeat by line is told, and a
 * file of 100,000 prompts is read in well under the watchdog (the check was
 * quadratic: 81 s). The timeout is a hang guard, not a timing assert. */
Test(prompts, duplicate_ids_are_found_among_many_lines, .timeout = 120)
{
    enum { N = 100000 };
    size_t cap = (size_t)N * 40, len = 0;
    char *buf = malloc(cap);
    cr_assert_not_null(buf);
    for (int i = 0; i < N; i++) {
        /* line 60001 repeats line 124's id, line 90001 repeats line 7's */
        int id = i == 60000 ? 123 : i == 90000 ? 6 : i;
        len += (size_t)snprintf(buf + len, cap - len, "{\"id\":\"p%d\",\"tokens\":[%d]}\n", id, i % 1000);
    }
    prompts_case(buf, len, "line 60001: field id: 'p123' already used: expected unique ids", 0);
    /* the same lines without the repeats are read whole */
    len = 0;
    for (int i = 0; i < N; i++)
        len += (size_t)snprintf(buf + len, cap - len, "{\"id\":\"p%d\",\"tokens\":[%d]}\n", i, i % 1000);
    prompts_case(buf, len, NULL, N);
    free(buf);
    prompts_case(LIT(LINE1 "{\"id\": \"p2\", \"text\": \"Hi\"}\n{\"id\": \"p1\", \"text\": \"Hi\"}\n"),
                 "line 3: field id: 'p1' already used: expected unique ids", 0);
}
