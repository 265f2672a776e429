/* Codecs: registry, BF16 rounding, every decoder bit-exact against ggml
 * (small version of `vt codec check`), packed gather and its id checks. */
#include <criterion/criterion.h>

#include "tests/support/vt_test.h"

#include "common/vt_json.h"
#include "engine/codec.h"
#include "oracle/codec_check.h"
#include "oracle/ggml_codec.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

static vt_ggml *oracle;

static void open_oracle(void)
{
    vt_error err;
    vt_error_clear(&err);
    oracle = vt_ggml_open(NULL, &err);
    cr_assert_not_null(oracle, "ggml oracle: %s", err.msg);
}

static void close_oracle(void) { vt_ggml_free(oracle); }

/* The 26 storage types of DESIGN.md, all of which must decode. */
static const char *const design_types[] = {
    "F32", "F16", "BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K", "Q4_K", "Q5_K",
    "Q6_K", "Q8_K", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S", "IQ1_S", "IQ1_M", "IQ4_NL",
    "IQ4_XS", "TQ1_0", "TQ2_0", "MXFP4",
};
enum { N_DESIGN_TYPES = (int)(sizeof design_types / sizeof design_types[0]) };

Test(registry, names_ids_and_geometry_are_consistent)
{
    for (int i = 0; i < vt_codec_count(); i++) {
        const vt_codec *c = vt_codec_at(i);
        cr_assert_gt(c->block_elems, 0);
        cr_assert_gt(c->block_bytes, 0);
        cr_assert_eq(vt_codec_by_type((int)c->type), c, "%s", c->name);
        cr_assert_eq(vt_codec_by_name(c->name), c, "%s", c->name);
        for (int j = i + 1; j < vt_codec_count(); j++)
            cr_assert_neq(c->type, vt_codec_at(j)->type);
    }
    for (int i = 0; i < N_DESIGN_TYPES; i++) {
        const vt_codec *c = vt_codec_by_name(design_types[i]);
        cr_assert_not_null(c, "%s missing", design_types[i]);
        cr_assert_not_null(c->decode_f32, "%s has no decoder", design_types[i]);
    }
    cr_assert_null(vt_codec_by_type(4)); /* removed Q4_2 */
    cr_assert_null(vt_codec_by_type(-1));
    cr_assert_null(vt_codec_by_type(VT_TYPE_COUNT));
    cr_assert_eq(vt_codec_row_bytes(vt_codec_by_name("Q4_K"), 512), 288);
    cr_assert_eq(vt_codec_row_bytes(vt_codec_by_name("Q4_K"), 100), 0);
    cr_assert_eq(vt_codec_row_bytes(vt_codec_by_name("F32"), INT64_MAX), 0);
}

static uint16_t bf16_of_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return vt_f32_to_bf16(f);
}

/* The table's rows against ggml's own type table: the same ids, names and
 * block geometry, no type missing on either side; and the facts a row
 * holds agree with each other. */
Test(registry, every_row_is_ggmls_type_and_holds_its_facts, .init = open_oracle, .fini = close_oracle)
{
    int rows = 0, file_types[64] = { 0 };
    for (int t = 0; t < VT_TYPE_COUNT; t++) {
        const vt_codec *c = vt_codec_by_type(t);
        const char *name = NULL;
        int64_t be = 0;
        size_t bb = 0;
        int in_ggml = vt_ggml_type_info(oracle, t, &name, &be, &bb);
        cr_assert_eq(!!c, in_ggml, "type %d: vt %s, ggml %s", t, c ? c->name : "none", in_ggml ? name : "none");
        if (!c)
            continue;
        rows++;
        cr_assert_eq((int)c->type, t);
        cr_assert(strcasecmp(c->name, name) == 0, "type %d: vt %s, ggml %s", t, c->name, name);
        cr_assert_eq(c->block_elems, be, "%s", c->name);
        cr_assert_eq(c->block_bytes, bb, "%s", c->name);
        cr_assert_eq(!c->decode_f32, !c->decode_bf16, "%s: both decoders or neither", c->name);
        cr_assert(!c->matrix_weight || c->decode_f32, "%s: a matrix weight must decode", c->name);
        if (!c->decode_f32)
            cr_assert_eq(c->gguf_file_type, -1, "%s", c->name);
        if (c->gguf_file_type >= 0) {
            cr_assert_lt(c->gguf_file_type, 64);
            cr_assert_eq(file_types[c->gguf_file_type]++, 0, "%s: file type %d twice", c->name,
                         c->gguf_file_type);
        }
    }
    cr_assert_eq(rows, VT_TYPE_KNOWN);
    cr_assert_eq(vt_codec_count(), VT_TYPE_KNOWN);
    cr_assert_null(vt_codec_at(VT_TYPE_KNOWN));
    cr_assert_eq(vt_codec_by_type(VT_TYPE_Q8_K)->matrix_weight, 0, "activation-only");
    cr_assert_eq(vt_codec_by_type(VT_TYPE_Q4_K)->gguf_file_type, 14, "LLAMA_FTYPE_MOSTLY_Q4_K_S");
}

Test(bf16, rounds_to_nearest_even)
{
    cr_assert_eq(bf16_of_bits(0x3f800000u), 0x3f80);
    cr_assert_eq(bf16_of_bits(0x3f808000u), 0x3f80); /* tie, even stays */
    cr_assert_eq(bf16_of_bits(0x3f818000u), 0x3f82); /* tie, odd rounds up */
    cr_assert_eq(bf16_of_bits(0x3f808001u), 0x3f81); /* above the tie */
    cr_assert_eq(bf16_of_bits(0x3f807fffu), 0x3f80); /* below the tie */
    cr_assert_eq(bf16_of_bits(0xbf818000u), 0xbf82); /* sign symmetric */
    cr_assert_eq(bf16_of_bits(0x7f7fffffu), 0x7f80); /* FLT_MAX rounds to inf */
    cr_assert_eq(bf16_of_bits(0x7f800000u), 0x7f80);
    uint16_t nan = bf16_of_bits(0x7f800001u);      /* payload in low bits only */
    cr_assert(nan & 0x7f, "NaN must stay NaN, got %04x", nan);
    cr_assert_eq(nan & 0x7f80, 0x7f80);
}

Test(bf16, matches_ggml_on_every_f16_and_random_bits, .init = open_oracle, .fini = close_oracle)
{
    /* Every half-precision pattern: our F16 decode equals ggml's, bit for bit. */
    static uint16_t h[65536];
    static float ref[65536], ours[65536];
    static uint16_t ref16[65536], ours16[65536];
    for (int i = 0; i < 65536; i++)
        h[i] = (uint16_t)i;
    vt_error err;
    vt_error_clear(&err);
    cr_assert_eq(vt_ggml_dequantize(oracle, VT_TYPE_F16, h, ref, 65536, &err), 0, "%s", err.msg);
    cr_assert_eq(vt_codec_decode_row(vt_codec_by_type(VT_TYPE_F16), h, 65536, VT_DTYPE_F32, ours, &err), 0);
    cr_assert_eq(memcmp(ref, ours, sizeof ref), 0, "F16 decode differs from ggml");
    /* Random F32 bit patterns (NaN, inf, subnormal included) to BF16: ours vs ggml. */
    uint64_t s = 12345;
    for (int i = 0; i < 65536; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        uint32_t u = (uint32_t)(s >> 32);
        memcpy(&ref[i], &u, 4);
        ours16[i] = vt_f32_to_bf16(ref[i]);
    }
    vt_ggml_f32_to_bf16(oracle, ref, ref16, 65536);
    for (int i = 0; i < 65536; i++) {
        uint32_t u;
        memcpy(&u, &ref[i], 4);
        cr_assert_eq(ours16[i], ref16[i], "F32 bits %08x: ours %04x, ggml %04x", u, ours16[i], ref16[i]);
    }
}

Test(oracle, every_codec_is_bit_exact_on_small_rows, .init = open_oracle, .fini = close_oracle,
     .timeout = 600)
{
    int checked = 0;
    for (int i = 0; i < vt_codec_count(); i++) {
        const vt_codec *c = vt_codec_at(i);
        if (!c->decode_f32)
            continue;
        vt_codec_check_result r;
        vt_error err;
        vt_error_clear(&err);
        cr_assert_eq(vt_codec_check_type(oracle, c, 40, 512, 7, &r, &err), 0, "%s: %s", c->name, err.msg);
        cr_expect(vt_codec_check_passed(&r), "%s: %lld/%lld F32 and %lld BF16 rows identical, max|diff| %g",
                  c->name, (long long)r.f32_identical, (long long)r.rows, (long long)r.bf16_identical,
                  r.max_abs_diff);
        cr_expect_eq(r.max_abs_diff, 0.0, "%s", c->name);
        checked++;
    }
    cr_assert_eq(checked, N_DESIGN_TYPES);
}

/* Random bytes as blocks reach every grid entry, sign pattern and scale a
 * quantizer may never emit, NaN/inf/subnormal scales included. Values must
 * match bit for bit; two NaNs count as equal (payloads are not specified). */
Test(oracle, every_codec_matches_ggml_on_random_block_bytes, .init = open_oracle, .fini = close_oracle)
{
    enum { COLS = 1024, ROWS = 200 };
    static unsigned char q[COLS * 4];
    static float ref[COLS], ours[COLS];
    uint64_t s = 2026;
    int checked = 0;
    for (int i = 0; i < vt_codec_count(); i++) {
        const vt_codec *c = vt_codec_at(i);
        if (!c->decode_f32)
            continue;
        size_t rb = vt_codec_row_bytes(c, COLS);
        int64_t mismatches = 0;
        for (int r = 0; r < ROWS; r++) {
            for (size_t k = 0; k < rb; k++) {
                s = s * 6364136223846793005ull + 1442695040888963407ull;
                q[k] = (unsigned char)(s >> 56);
            }
            vt_error err;
            vt_error_clear(&err);
            cr_assert_eq(vt_ggml_dequantize(oracle, (int)c->type, q, ref, COLS, &err), 0, "%s", err.msg);
            cr_assert_eq(vt_codec_decode_row(c, q, COLS, VT_DTYPE_F32, ours, &err), 0, "%s", err.msg);
            for (int k = 0; k < COLS; k++)
                if (!(isnan(ref[k]) && isnan(ours[k])) && memcmp(&ref[k], &ours[k], 4) != 0)
                    mismatches++;
        }
        cr_expect_eq(mismatches, 0, "%s: %lld values differ from ggml", c->name, (long long)mismatches);
        checked++;
    }
    cr_assert_eq(checked, N_DESIGN_TYPES);
}

/* A decoder that is wrong in one bit of one element: the check must see it. */
static vt_decode_f32_fn real_q4_0;
static void off_by_one_bit_q4_0(const void *restrict src, float *restrict dst, int64_t n_blocks)
{
    real_q4_0(src, dst, n_blocks);
    uint32_t u;
    memcpy(&u, &dst[7], 4);
    u ^= 1;
    memcpy(&dst[7], &u, 4);
}

Test(oracle, a_broken_decoder_fails_the_check, .init = open_oracle, .fini = close_oracle)
{
    vt_codec broken = *vt_codec_by_type(VT_TYPE_Q4_0);
    real_q4_0 = broken.decode_f32;
    broken.decode_f32 = off_by_one_bit_q4_0;
    vt_codec_check_result r;
    vt_error err;
    vt_error_clear(&err);
    cr_assert_eq(vt_codec_check_type(oracle, &broken, 10, 256, 1, &r, &err), 0, "%s", err.msg);
    cr_assert_not(vt_codec_check_passed(&r));
    cr_assert_eq(r.f32_identical, 0);
    cr_assert_eq(r.first_bad_row, 0);
}

static void quantize_table(int type, int64_t rows, int64_t cols, void **q, float **x)
{
    vt_error err;
    vt_error_clear(&err);
    const vt_codec *c = vt_codec_by_type(type);
    *x = malloc((size_t)(rows * cols) * sizeof(float));
    *q = malloc((size_t)rows * vt_codec_row_bytes(c, cols));
    vt_codec_check_make_rows(*x, 0, rows, cols, 99);
    cr_assert_eq(vt_ggml_quantize(oracle, type, *x, *q, rows, cols, NULL, &err), 0, "%s", err.msg);
}

Test(gather, selected_rows_decode_as_whole_rows_in_f32_and_bf16, .init = open_oracle, .fini = close_oracle)
{
    const int64_t rows = 16, cols = 512;
    const int types[] = { VT_TYPE_Q4_K, VT_TYPE_Q8_0, VT_TYPE_BF16, VT_TYPE_Q6_K };
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        const vt_codec *c = vt_codec_by_type(types[t]);
        void *q;
        float *x;
        quantize_table(types[t], rows, cols, &q, &x);
        const int64_t ids[] = { 3, 0, 15, 3, 9 };
        enum { N = 5 };
        float out[N * 512], want[512];
        uint16_t out16[N * 512], want16[512];
        vt_error err;
        vt_error_clear(&err);
        cr_assert_eq(vt_codec_gather_rows(c, q, rows, cols, ids, N, VT_DTYPE_F32, out, &err), 0, "%s", err.msg);
        cr_assert_eq(vt_codec_gather_rows(c, q, rows, cols, ids, N, VT_DTYPE_BF16, out16, &err), 0);
        size_t rb = vt_codec_row_bytes(c, cols);
        for (int i = 0; i < N; i++) {
            const void *row = (const char *)q + (size_t)ids[i] * rb;
            cr_assert_eq(vt_ggml_dequantize(oracle, types[t], row, want, cols, &err), 0);
            cr_assert_eq(memcmp(out + i * cols, want, sizeof want), 0, "%s row %d", c->name, i);
            vt_ggml_f32_to_bf16(oracle, want, want16, cols);
            cr_assert_eq(memcmp(out16 + i * cols, want16, sizeof want16), 0, "%s bf16 row %d", c->name, i);
        }
        free(q);
        free(x);
    }
}

Test(gather, a_bad_id_is_reported_and_nothing_is_written, .init = open_oracle, .fini = close_oracle)
{
    const int64_t rows = 8, cols = 256;
    const vt_codec *c = vt_codec_by_type(VT_TYPE_Q4_0);
    void *q;
    float *x;
    quantize_table(VT_TYPE_Q4_0, rows, cols, &q, &x);
    const int64_t bad[][3] = { { 1, 2, -1 }, { 0, 8, 1 }, { INT64_MAX, 0, 0 }, { 7, 7, INT64_MIN } };
    const int bad_pos[] = { 2, 1, 0, 2 };
    for (int k = 0; k < 4; k++) {
        float out[3 * 256];
        for (int i = 0; i < 3 * 256; i++)
            out[i] = 12345.0f;
        vt_error err;
        vt_error_clear(&err);
        int rc = vt_codec_gather_rows(c, q, rows, cols, bad[k], 3, VT_DTYPE_F32, out, &err);
        cr_assert_eq(rc, VT_EINPUT);
        char want[64];
        snprintf(want, sizeof want, "position %d: id %lld:", bad_pos[k], (long long)bad[k][bad_pos[k]]);
        cr_assert(strstr(err.msg, want), "message '%s' lacks '%s'", err.msg, want);
        for (int i = 0; i < 3 * 256; i++)
            cr_assert_eq(out[i], 12345.0f, "output written before the id check");
    }
    float out[256];
    vt_error err;
    vt_error_clear(&err);
    cr_assert_eq(vt_codec_decode_row(c, q, 100, VT_DTYPE_F32, out, &err), VT_EINPUT);
    cr_assert(strstr(err.msg, "multiple of 32"), "%s", err.msg);
    cr_assert_eq(vt_codec_decode_row(vt_codec_by_type(VT_TYPE_I32), q, 4, VT_DTYPE_F32, out, &err), VT_EINPUT);
    free(q);
    free(x);
}

static int run_vt(const char *args, char *out, size_t out_size)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s %s 2>&1", VT_BIN, args);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    size_t n = fread(out, 1, out_size - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    return vt_test_exit(st, cmd, out);
}

Test(cli, codec_check_prints_per_type_and_a_closing_count)
{
    static char out[16384];
    cr_assert_eq(run_vt("codec check --types Q4_0,IQ4_XS,MXFP4 --rows 20", out, sizeof out), 0, "%s", out);
    cr_assert(strstr(out, "3 passed, 0 failed\n"), "%s", out);
    cr_assert(strstr(out, "IQ4_XS"), "%s", out);
    cr_assert_eq(run_vt("codec check --types Q4_0,NOPE", out, sizeof out), 2);
    cr_assert(strstr(out, "'NOPE'"), "%s", out);
    cr_assert_eq(run_vt("codec check --rows 0", out, sizeof out), 2);
    cr_assert_eq(run_vt("codec check --cols 300", out, sizeof out), 2);
    cr_assert_eq(run_vt("codec check --ggml-lib /nonexistent", out, sizeof out), 2);
    cr_assert(strstr(out, "/nonexistent/libggml-base.so"), "%s", out);
}

/* ------------------------------------------------------------ --json */

/* A command's stdout and stderr apart; its exit status. */
static int run_vt_apart(const char *args, char *out, size_t out_size, char *err, size_t err_size)
{
    char dir[] = "/tmp/vt-codec-json-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    int rc = vt_test_sh(dir, out, out_size, err, err_size, "'%s' %s", VT_BIN, args);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
    return rc;
}

/* stdout of a --json run: exactly one JSON document (vt's strict reader)
 * whose "schema" member is schema. */
/* vt codec list --json (vt.codec-list/1): every row of the text table, in
 * its order, from the JSON's values; an unknown option is exit 2 with
 * nothing on stdout. */
Test(cli, codec_list_json_is_the_table)
{
    static char text[1 << 16], json[1 << 18], err[4096];
    cr_assert_eq(run_vt_apart("codec list", text, sizeof text, err, sizeof err), 0, "%s", err);
    cr_assert_eq(run_vt_apart("codec list --json", json, sizeof json, err, sizeof err), 0, "%s", err);
    cJSON *doc = vt_test_json_doc(json, "vt.codec-list/1");
    const cJSON *codecs = vt_test_get(doc, "codecs"), *o;
    cr_assert_eq(cJSON_GetArraySize(codecs), vt_codec_count());
    int rows = 0;
    cJSON_ArrayForEach(o, codecs)
    {
        const cJSON *dot = vt_test_get(o, "dot_type"), *ft = vt_test_get(o, "file_type");
        char fts[16] = "-", line[256];
        if (!cJSON_IsNull(ft))
            snprintf(fts, sizeof fts, "%d", (int)vt_test_num(o, "file_type"));
        snprintf(line, sizeof line, "%-8s %4d %6d %6d %-7s %-8s %9s %s", vt_test_get(o, "type")->valuestring,
                 (int)vt_test_num(o, "id"), (int)vt_test_num(o, "block_elems"), (int)vt_test_num(o, "block_bytes"),
                 cJSON_IsTrue(vt_test_get(o, "decoder")) ? "yes" : "no", cJSON_IsNull(dot) ? "-" : dot->valuestring,
                 fts, cJSON_IsTrue(vt_test_get(o, "matrix_weight")) ? "yes" : "no");
        vt_test_expect_line(text, line);
        cr_assert_eq((int)vt_codec_at(rows)->type, (int)vt_test_num(o, "id"), "in the registry's order");
        rows++;
    }
    /* The header and one line per codec: nothing in the table the JSON lacks. */
    int lines = 0;
    for (const char *c = text; *c; c++)
        lines += *c == '\n';
    cr_assert_eq(lines, rows + 1, "%s", text);
    cJSON_Delete(doc);
    cr_assert_eq(run_vt_apart("codec list --json --nope", json, sizeof json, err, sizeof err), 2);
    cr_assert_str_eq(json, "");
    cr_assert(strstr(err, "'--nope'") && !strchr(err, '\n')[1], "%s", err);
}

/* vt codec check --json (vt.codec-check/1): the numbers of every row of
 * the text table and its closing count; exit 2 (an unknown type) has no
 * JSON. */
Test(cli, codec_check_json_is_the_table)
{
    static char text[1 << 16], json[1 << 18], err[4096];
    const char *args = "codec check --types Q4_0,IQ4_XS,MXFP4,Q6_K --rows 40 --seed 7 --threads 2";
    char cmd[512];
    cr_assert_eq(run_vt_apart(args, text, sizeof text, err, sizeof err), 0, "%s", err);
    snprintf(cmd, sizeof cmd, "%s --json", args);
    cr_assert_eq(run_vt_apart(cmd, json, sizeof json, err, sizeof err), 0, "%s", err);
    cJSON *doc = vt_test_json_doc(json, "vt.codec-check/1");
    char line[512];
    snprintf(line, sizeof line, "oracle: %s", vt_test_get(doc, "oracle")->valuestring);
    vt_test_expect_line(text, line);
    snprintf(line, sizeof line, "rows of %d values, seed %d, %d threads", (int)vt_test_num(doc, "cols"), (int)vt_test_num(doc, "seed"),
             (int)vt_test_num(doc, "threads"));
    vt_test_expect_line(text, line);
    cr_assert_eq(vt_test_num(doc, "rows"), 40);
    const cJSON *types = vt_test_get(doc, "types"), *o;
    cr_assert_eq(cJSON_GetArraySize(types), 4);
    cJSON_ArrayForEach(o, types)
    {
        const int ok = cJSON_IsTrue(vt_test_get(o, "passed"));
        cr_assert(cJSON_IsNull(vt_test_get(o, "first_bad_row")) == ok);
        snprintf(line, sizeof line, "%-8s %8d %14d %15d %12.6g %s", vt_test_get(o, "type")->valuestring,
                 (int)vt_test_num(o, "rows"), (int)vt_test_num(o, "f32_identical"), (int)vt_test_num(o, "bf16_identical"),
                 vt_test_num(o, "max_abs_diff"), ok ? "ok" : "FAIL");
        vt_test_expect_line(text, line);
    }
    snprintf(line, sizeof line, "%d passed, %d failed", (int)vt_test_num(doc, "types_passed"), (int)vt_test_num(doc, "types_failed"));
    vt_test_expect_line(text, line);
    cr_assert(cJSON_IsTrue(vt_test_get(doc, "passed")));
    cJSON_Delete(doc);
    cr_assert_eq(run_vt_apart("codec check --types Q4_0,NOPE --json", json, sizeof json, err, sizeof err), 2);
    cr_assert_str_eq(json, "", "no JSON on bad input");
    cr_assert(strstr(err, "'NOPE'") && !strchr(err, '\n')[1], "%s", err);
}
