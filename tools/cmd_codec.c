/* vt codec: list the codec registry; check every codec against ggml. */
#include "cmds.h"

#include "../common/vt_parse.h"
#include "../common/vt_progress.h"
#include "../engine/codec.h"
#include "../oracle/codec_check.h"
#include "../oracle/ggml_codec.h"
#include "json_out.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage_text[] =
    "usage: vt codec list [--json]\n"
    "       vt codec check [--types all|T1,T2,...] [--rows N] [--cols N] [--seed S] [--threads N] [--ggml-lib DIR]\n"
    "                      [--quiet] [--json]\n"
    "\n"
    "list: one row per storage type: name, ggml type id, elements and bytes per block,\n"
    "whether vt decodes it, the activation type its dot product meets, llama.cpp's file type,\n"
    "whether ggml multiplies it as a weight.\n"
    "check: quantizes random rows (normal, uniform, heavy outliers, all-equal, all-zero)\n"
    "with ggml's own quantizer (the IQ types with an importance matrix), decodes them\n"
    "with ggml's to_float and with vt, and compares F32 and BF16 outputs bit for bit.\n"
    "Defaults: --types all --rows 4096 --cols 512 --seed 1 --threads <cores>.\n"
    "Results do not depend on --threads. Exit 1 if any type differs. On a terminal, stderr\n"
    "shows a progress line (types checked, rate, time left); --quiet: none.\n"
    "--json: the table as one JSON document on stdout instead (list: vt.codec-list/1,\n"
    "engine/vt.codec-list.schema.json; check: vt.codec-check/1, oracle/vt.codec-check.schema.json);\n"
    "exit codes as without.\n"
    "example: vt codec check --types Q8_0,Q4_K,IQ2_XXS --rows 1024\n";

/* The codec table's row of c: what both printers of vt codec list show. */
typedef struct list_row {
    const vt_codec *c;
    int decoder;          /* vt decodes it */
    const char *dot_type; /* NULL without a decoder */
    int file_type;        /* -1: none */
} list_row;

static list_row list_row_of(const vt_codec *c)
{
    return (list_row){ c, c->decode_f32 != NULL, c->decode_f32 ? vt_act_type_name(c->act) : NULL, c->gguf_file_type };
}

static int cmd_list(int argc, char **argv)
{
    int json = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0) {
            fputs(usage_text, stdout);
            return 0;
        }
        if (strcmp(argv[i], "--json") != 0) {
            fprintf(stderr, "vt codec list: unknown option '%s': expected --json\n", argv[i]);
            return 2;
        }
        json = 1;
    }
    if (json) {
        const unsigned long fail0 = vt_tool_json_begin();
        cJSON *root = cJSON_CreateObject();
        cJSON_AddStringToObject(root, "schema", "vt.codec-list/1");
        cJSON *arr = cJSON_AddArrayToObject(root, "codecs");
        for (int i = 0; i < vt_codec_count(); i++) {
            const list_row r = list_row_of(vt_codec_at(i));
            cJSON *o = cJSON_CreateObject();
            cJSON_AddItemToArray(arr, o);
            cJSON_AddStringToObject(o, "type", r.c->name);
            cJSON_AddNumberToObject(o, "id", (int)r.c->type);
            cJSON_AddNumberToObject(o, "block_elems", (double)r.c->block_elems);
            cJSON_AddNumberToObject(o, "block_bytes", (double)r.c->block_bytes);
            cJSON_AddBoolToObject(o, "decoder", r.decoder);
            vt_tool_json_text(o, "dot_type", r.dot_type);
            if (r.file_type >= 0)
                cJSON_AddNumberToObject(o, "file_type", r.file_type);
            else
                cJSON_AddNullToObject(o, "file_type");
            cJSON_AddBoolToObject(o, "matrix_weight", r.c->matrix_weight);
        }
        if (vt_tool_json_print(root, fail0)) {
            fprintf(stderr, "vt codec list: --json: out of memory\n");
            return 2;
        }
        return 0;
    }
    printf("%-8s %4s %6s %6s %-7s %-8s %9s %s\n", "type", "id", "elems", "bytes", "decoder", "dot-type",
           "file-type", "weight");
    for (int i = 0; i < vt_codec_count(); i++) {
        const list_row r = list_row_of(vt_codec_at(i));
        char ft[16] = "-";
        if (r.file_type >= 0)
            snprintf(ft, sizeof ft, "%d", r.file_type);
        printf("%-8s %4d %6lld %6zu %-7s %-8s %9s %s\n", r.c->name, (int)r.c->type, (long long)r.c->block_elems,
               r.c->block_bytes, r.decoder ? "yes" : "no", r.dot_type ? r.dot_type : "-", ft,
               r.c->matrix_weight ? "yes" : "no");
    }
    return 0;
}

typedef struct type_list {
    const vt_codec **sel;
    int *n;
    char bad[256]; /* the entry refused, if one was */
} type_list;

static int take_type(const char *entry, void *ctx)
{
    type_list *tl = ctx;
    const vt_codec *c = vt_codec_by_name(entry);
    for (int i = 0; c && i < *tl->n; i++)
        if (tl->sel[i] == c)
            c = NULL; /* given twice */
    if (!c || !c->decode_f32 || *tl->n >= VT_TYPE_COUNT) {
        snprintf(tl->bad, sizeof tl->bad, "%s", entry);
        return 0;
    }
    tl->sel[(*tl->n)++] = c;
    return 1;
}

/* Fills sel with the codecs named in a comma list, or every decodable one. */
static int select_types(const char *list, const vt_codec **sel, int *n_sel)
{
    *n_sel = 0;
    if (strcmp(list, "all") == 0) {
        for (int i = 0; i < vt_codec_count(); i++)
            if (vt_codec_at(i)->decode_f32)
                sel[(*n_sel)++] = vt_codec_at(i);
        return 0;
    }
    type_list tl = { .sel = sel, .n = n_sel };
    if (vt_parse_list(list, take_type, &tl) < 0) {
        if (tl.bad[0])
            fprintf(stderr, "vt codec check: --types '%s': expected decodable types (see 'vt codec list'), "
                    "each once: '%s' is not one\n", list, tl.bad);
        else
            fprintf(stderr, "vt codec check: --types '%s': expected a comma-separated list of types, "
                    "no empty entry\n", list);
        return 2;
    }
    if (*n_sel == 0) {
        fprintf(stderr, "vt codec check: --types: empty list\n");
        return 2;
    }
    return 0;
}

typedef struct report_ctx {
    const vt_codec *const *sel;
    int passed, failed;
    int json; /* rows kept for the JSON document, not printed */
    vt_progress *progress;
} report_ctx;

/* One type's row of the table, as each finishes. */
static void report_type(int i, const vt_codec_check_result *r, void *arg)
{
    report_ctx *ctx = arg;
    int ok = vt_codec_check_passed(r);
    if (!ctx->json) {
        vt_progress_hide(ctx->progress); /* the row goes to the same terminal */
        printf("%-8s %8lld %14lld %15lld %12.6g %s", ctx->sel[i]->name, (long long)r->rows,
               (long long)r->f32_identical, (long long)r->bf16_identical, r->max_abs_diff, ok ? "ok" : "FAIL");
        if (!ok)
            printf(" (first differing row %lld, class %s)", (long long)r->first_bad_row,
                   vt_codec_check_class_name((int)(r->first_bad_row % VT_CODEC_CHECK_CLASSES)));
        printf("\n");
        fflush(stdout);
    }
    ok ? ctx->passed++ : ctx->failed++;
    vt_progress_add(ctx->progress, 1);
}

/* The same rows as one JSON document (vt.codec-check/1). 0, or -1 out of memory. */
static int check_json(const char *oracle, int64_t rows, int64_t cols, uint64_t seed, int64_t n_threads,
                      const vt_codec *const *sel, const vt_codec_check_result *results, int n_sel)
{
    const unsigned long fail0 = vt_tool_json_begin();
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "schema", "vt.codec-check/1");
    vt_tool_json_text(root, "oracle", oracle);
    cJSON_AddNumberToObject(root, "rows", (double)rows);
    cJSON_AddNumberToObject(root, "cols", (double)cols);
    vt_tool_json_u64(root, "seed", seed);
    cJSON_AddNumberToObject(root, "threads", (double)n_threads);
    cJSON *arr = cJSON_AddArrayToObject(root, "types");
    int passed = 0;
    for (int i = 0; i < n_sel; i++) {
        const vt_codec_check_result *r = &results[i];
        const int ok = vt_codec_check_passed(r);
        passed += ok;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToArray(arr, o);
        cJSON_AddStringToObject(o, "type", sel[i]->name);
        cJSON_AddNumberToObject(o, "rows", (double)r->rows);
        cJSON_AddNumberToObject(o, "f32_identical", (double)r->f32_identical);
        cJSON_AddNumberToObject(o, "bf16_identical", (double)r->bf16_identical);
        if (isfinite(r->max_abs_diff))
            cJSON_AddNumberToObject(o, "max_abs_diff", r->max_abs_diff);
        else /* a NaN against a number */
            cJSON_AddNullToObject(o, "max_abs_diff");
        cJSON_AddBoolToObject(o, "passed", ok);
        if (ok || r->first_bad_row < 0) {
            cJSON_AddNullToObject(o, "first_bad_row");
            cJSON_AddNullToObject(o, "first_bad_class");
        } else {
            cJSON_AddNumberToObject(o, "first_bad_row", (double)r->first_bad_row);
            cJSON_AddStringToObject(o, "first_bad_class",
                                    vt_codec_check_class_name((int)(r->first_bad_row % VT_CODEC_CHECK_CLASSES)));
        }
    }
    cJSON_AddNumberToObject(root, "types_passed", passed);
    cJSON_AddNumberToObject(root, "types_failed", n_sel - passed);
    cJSON_AddBoolToObject(root, "passed", passed == n_sel);
    return vt_tool_json_print(root, fail0);
}

static int cmd_check(int argc, char **argv)
{
    const char *types = "all", *libdir = NULL;
    int64_t rows = 4096, cols = 512, n_threads = sysconf(_SC_NPROCESSORS_ONLN);
    uint64_t seed = 1;
    int quiet = 0, json = 0;
    vt_opt_seen seen = { .n = 0 };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0) {
            fputs(usage_text, stdout);
            return 0;
        }
        if (strcmp(a, "--quiet") == 0) {
            quiet = 1;
            continue;
        }
        if (strcmp(a, "--json") == 0) {
            json = 1;
            continue;
        }
        if (!v) {
            fprintf(stderr, "vt codec check: %s: expected an option with a value\n", a);
            return 2;
        }
        if (!vt_opt_once(&seen, a)) {
            fprintf(stderr, "vt codec check: %s '%s': expected the option once (given twice)\n", a, v);
            return 2;
        }
        i++;
        if (strcmp(a, "--types") == 0)
            types = v;
        else if (strcmp(a, "--ggml-lib") == 0)
            libdir = v;
        else if (strcmp(a, "--rows") == 0) {
            if (!vt_parse_i64(v, 1, 1 << 24, &rows)) {
                fprintf(stderr, "vt codec check: --rows: '%s': expected an integer in 1..16777216\n", v);
                return 2;
            }
        } else if (strcmp(a, "--cols") == 0) {
            if (!vt_parse_i64(v, 256, 1 << 20, &cols) || cols % 256) {
                fprintf(stderr, "vt codec check: --cols: '%s': expected a multiple of 256 up to 1048576\n", v);
                return 2;
            }
        } else if (strcmp(a, "--threads") == 0) {
            if (!vt_parse_i64(v, 1, 64, &n_threads)) {
                fprintf(stderr, "vt codec check: --threads: '%s': expected an integer in 1..64\n", v);
                return 2;
            }
        } else if (strcmp(a, "--seed") == 0) {
            if (!vt_parse_u64(v, &seed)) {
                fprintf(stderr, "vt codec check: --seed: '%s': expected an unsigned integer\n", v);
                return 2;
            }
        } else {
            fprintf(stderr, "vt codec check: unknown option '%s'\n", a);
            return 2;
        }
    }
    /* Each bound alone allows 2^44 elements: days, and terabytes. */
    if (rows * cols > (1 << 26)) {
        fprintf(stderr, "vt codec check: --rows %lld --cols %lld: expected rows x cols at most 67108864\n",
                (long long)rows, (long long)cols);
        return 2;
    }
    const vt_codec *sel[VT_TYPE_COUNT];
    int n_sel, rc = select_types(types, sel, &n_sel);
    if (rc)
        return rc;
    vt_error err;
    vt_error_clear(&err);
    vt_ggml *g = vt_ggml_open(libdir, &err);
    if (!g) {
        fprintf(stderr, "%s\n", err.msg);
        return 2;
    }
    if (!json) {
        printf("oracle: %s\n", vt_ggml_path(g));
        printf("rows of %lld values, seed %llu, %d threads\n", (long long)cols, (unsigned long long)seed,
               (int)n_threads);
        printf("%-8s %8s %14s %15s %12s\n", "type", "rows", "f32-identical", "bf16-identical", "max|diff|");
        fflush(stdout);
    }
    vt_codec_check_result results[VT_TYPE_COUNT];
    vt_progress progress;
    vt_progress_init(&progress, "vt codec check", quiet);
    vt_progress_start(&progress, "types", n_sel);
    report_ctx ctx = { sel, 0, 0, json, &progress };
    int crc = vt_codec_check_many(g, sel, n_sel, rows, cols, seed, (int)n_threads, results, report_type, &ctx, &err);
    vt_progress_end(&progress);
    if (crc) {
        fprintf(stderr, "%s\n", err.msg);
        vt_ggml_free(g);
        return err.code;
    }
    int passed = ctx.passed, failed = ctx.failed;
    if (json && check_json(vt_ggml_path(g), rows, cols, seed, n_threads, sel, results, n_sel)) {
        fprintf(stderr, "vt codec check: --json: out of memory\n");
        vt_ggml_free(g);
        return 2;
    }
    vt_ggml_free(g);
    if (!json)
        printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}

int vt_cmd_codec(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0) {
        fputs(usage_text, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "list") == 0)
        return cmd_list(argc - 1, argv + 1);
    if (strcmp(argv[1], "check") == 0)
        return cmd_check(argc - 1, argv + 1);
    fprintf(stderr, "vt codec: unknown subcommand '%s': expected list or check\n", argv[1]);
    return 2;
}
