/* vt op check: the engine's matrix products against ggml_mul_mat on the CPU
 * backend llama.cpp loads here, value for value (oracle/op_check.h). */
#include "cmds.h"

#include "../common/vt_json.h"
#include "../common/vt_parse.h"
#include "../engine/codec.h"
#include "../engine/engine_op.h"
#include "../oracle/op_check.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage_text[] =
    "usage: vt op check [--types all|T,T,...] [--kinds random,adversarial,fixture]\n"
    "                   [--model X.gguf] [--rows 64] [--cols 1024] [--batch 16] [--seed 1]\n"
    "                   [--matmul q8|exact] [--threads 2] [--float-ulp 64] [--json]\n"
    "\n"
    "The engine's matrix product (as its forward pass computes it) against ggml_mul_mat on\n"
    "the CPU backend llama.cpp loads on this machine, for each weight type: rows quantized by\n"
    "ggml's quantizer, at one token and at a prefill batch of --batch tokens, in the layout\n"
    "llama.cpp gives the weight (repacked where ggml repacks the type) and, for a repacked\n"
    "type, in the plain layout too. Row kinds: random (normal, uniform, outlier, all-equal\n"
    "and all-zero rows), adversarial (all-zero blocks, ties for the block maximum, values\n"
    "exactly on .5 after scaling, outlier channels), fixture (the blk.* weights and token\n"
    "embeddings of --model, which that kind needs). Prints per type, kind, batch and layout\n"
    "the dot products compared, how many are bit-identical to ggml's result, how many to its\n"
    "result for the same token run alone (=1-token: at a batch ggml's result can depend on\n"
    "the batch; ggml-b!=1 counts where it does), the largest distance in ULP of\n"
    "the product's own value, and the largest |difference| in ULP of the largest |product|\n"
    "of the set (the error at the scale of the products: a sum that cancels to near zero\n"
    "is many ULP of itself away for a rounding of its large terms).\n"
    "--types all: F32, F16, BF16 and every type the engine pairs with a ggml dot type.\n"
    "\n"
    "Exit 0 when every product of every integer-block type has the bits of ggml's batched or\n"
    "one-token result, in the layout llama.cpp uses (a repacked type's plain layout is shown\n"
    "for information), and F32/F16/BF16 are within --float-ulp ULP of the scale (default 8);\n"
    "1 when not; 2 on bad input.\n"
    "\n"
    "example: vt op check --types Q8_0,Q4_K --model build/fixtures/bench-0.6b-Q8_0.gguf\n";

static int bad(const char *opt, const char *val, const char *expected)
{
    fprintf(stderr, "vt op check: %s '%s': expected %s\n", opt, val ? val : "", expected);
    return 2;
}

/* One entry of a --types or --rows list (vt_parse_list: no empty entry). */
typedef struct op_list {
    int *out, cap, *n;           /* --types: type ids */
    const int *allowed;
    int n_allowed;
    int *on;                     /* --rows: one flag per kind */
} op_list;

static int take_type(const char *t, void *ctx)
{
    op_list *l = ctx;
    const vt_codec *c = vt_codec_by_name(t);
    int ok = 0;
    for (int i = 0; c && i < l->n_allowed; i++)
        ok = ok || l->allowed[i] == (int)c->type;
    for (int i = 0; i < *l->n; i++)
        ok = ok && l->out[i] != (int)c->type; /* each once */
    if (!ok || *l->n >= l->cap)
        return 0;
    l->out[(*l->n)++] = (int)c->type;
    return 1;
}

static int parse_types(const char *v, int *types, int cap, int *n)
{
    if (strcmp(v, "all") == 0) {
        *n = vt_op_check_types(types, cap);
        return 1;
    }
    int all[VT_TYPE_COUNT];
    op_list l = { .out = types, .cap = cap, .n = n, .allowed = all,
                  .n_allowed = vt_op_check_types(all, VT_TYPE_COUNT) };
    *n = 0;
    return vt_parse_list(v, take_type, &l) > 0;
}

static int take_kind(const char *t, void *ctx)
{
    op_list *l = ctx;
    int k = 0;
    while (k < VT_OP_ROW_KINDS && strcmp(t, vt_op_rows_name((vt_op_rows)k)) != 0)
        k++;
    if (k == VT_OP_ROW_KINDS || l->on[k])
        return 0;
    l->on[k] = 1;
    return 1;
}

static int parse_kinds(const char *v, int *on)
{
    memset(on, 0, VT_OP_ROW_KINDS * sizeof *on);
    op_list l = { .on = on };
    return vt_parse_list(v, take_kind, &l) > 0;
}

typedef struct op_opts {
    int types[VT_TYPE_COUNT], n_types;
    int kinds[VT_OP_ROW_KINDS];
    const char *model;
    int64_t rows, cols, batch, threads, float_ulp;
    uint64_t seed;
    vt_matmul_mode matmul;
    int json;
} op_opts;

static int parse(int argc, char **argv, op_opts *o)
{
    o->n_types = vt_op_check_types(o->types, VT_TYPE_COUNT);
    for (int k = 0; k < VT_OP_ROW_KINDS; k++)
        o->kinds[k] = 1;
    o->rows = 64;
    o->cols = 1024;
    o->batch = 16;
    o->threads = 2;
    o->float_ulp = 8;
    o->seed = 1;
    o->matmul = VT_MATMUL_Q8;
    vt_opt_seen seen = { .n = 0 };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--json") == 0) {
            o->json = 1;
            continue;
        }
        const char *v = i + 1 < argc ? argv[++i] : NULL;
        if (!v)
            return bad(a, "", "a value after the option");
        if (!vt_opt_once(&seen, a))
            return bad(a, v, "the option once (given twice)");
        if (strcmp(a, "--types") == 0) {
            if (!parse_types(v, o->types, VT_TYPE_COUNT, &o->n_types))
                return bad(a, v, "all, or a comma-separated list of distinct types from --types all");
        } else if (strcmp(a, "--kinds") == 0) {
            if (!parse_kinds(v, o->kinds))
                return bad(a, v, "a comma-separated list of distinct kinds: random, adversarial, fixture");
        } else if (strcmp(a, "--model") == 0) {
            o->model = v;
        } else if (strcmp(a, "--rows") == 0) {
            if (!vt_parse_i64(v, 8, 1 << 16, &o->rows) || o->rows % 8)
                return bad(a, v, "a multiple of 8 in 8..65536");
        } else if (strcmp(a, "--cols") == 0) {
            if (!vt_parse_i64(v, 256, 1 << 16, &o->cols) || o->cols % 256)
                return bad(a, v, "a multiple of 256 in 256..65536");
        } else if (strcmp(a, "--batch") == 0) {
            if (!vt_parse_i64(v, 2, 4096, &o->batch))
                return bad(a, v, "an integer in 2..4096");
        } else if (strcmp(a, "--threads") == 0) {
            if (!vt_parse_i64(v, 1, 256, &o->threads))
                return bad(a, v, "an integer in 1..256");
        } else if (strcmp(a, "--float-ulp") == 0) {
            if (!vt_parse_i64(v, 0, 1 << 30, &o->float_ulp))
                return bad(a, v, "an integer in 0..2^30");
        } else if (strcmp(a, "--seed") == 0) {
            if (!vt_parse_u64(v, &o->seed))
                return bad(a, v, "an unsigned 64-bit integer");
        } else if (strcmp(a, "--matmul") == 0) {
            if (!vt_matmul_mode_parse(v, &o->matmul))
                return bad(a, v, "q8 or exact");
        } else {
            return bad("option", a, "one of the options in 'vt op check --help'");
        }
    }
    if (o->kinds[VT_OP_ROWS_FIXTURE] && !o->model)
        return bad("--model", "", "a GGUF file for the fixture rows (or --kinds without fixture)");
    /* Each bound alone still allows a weight of 4G elements: hours and 16 GiB. */
    if (o->rows * o->cols > (1 << 26) || o->batch * o->cols > (1 << 26)) {
        char v[64];
        snprintf(v, sizeof v, "%lld x %lld, batch %lld", (long long)o->rows, (long long)o->cols, (long long)o->batch);
        return bad("--rows x --cols", v, "rows x cols and batch x cols each at most 67108864");
    }
    return 0;
}

/* Whether r meets the standard of its type: an integer-block type's every
 * product has the bits of ggml's batched result or of its one-token result
 * for the same token (where the two differ, the oracle itself depends on the
 * batch); a float type is within float_ulp of the scale. */
static int result_ok(const vt_op_result *r, int64_t float_ulp)
{
    if (vt_op_check_is_float(r->type))
        return r->max_ulp_of_scale <= (double)float_ulp;
    return r->identical_either == r->dots;
}

static const char *layout_name(const vt_op_result *r)
{
    return r->layout == VT_GGML_PLAIN ? "plain" : r->repacked ? "repacked" : "as stored";
}

static cJSON *result_json(const vt_op_result *r, int ok)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "type", vt_codec_by_type(r->type)->name);
    cJSON_AddStringToObject(o, "dot_type", vt_engine_dot_type(r->type));
    cJSON_AddStringToObject(o, "rows", vt_op_rows_name(r->kind));
    cJSON_AddNumberToObject(o, "tokens", (double)r->n_tok);
    cJSON_AddStringToObject(o, "layout", layout_name(r));
    cJSON_AddNumberToObject(o, "dots", (double)r->dots);
    cJSON_AddNumberToObject(o, "identical", (double)r->identical);
    cJSON_AddNumberToObject(o, "identical_one_token", (double)r->identical_single);
    cJSON_AddNumberToObject(o, "oracle_shape_differs", (double)r->oracle_shape_differs);
    cJSON_AddBoolToObject(o, "counted", r->layout == VT_GGML_REPACK);
    if (r->max_ulp == UINT64_MAX)
        cJSON_AddNullToObject(o, "max_ulp");
    else
        cJSON_AddNumberToObject(o, "max_ulp", (double)r->max_ulp);
    cJSON_AddNumberToObject(o, "max_abs_diff", r->max_abs);
    cJSON_AddNumberToObject(o, "max_abs_ggml", r->max_abs_ref);
    if (isfinite(r->max_ulp_of_scale))
        cJSON_AddNumberToObject(o, "max_ulp_of_scale", r->max_ulp_of_scale);
    else
        cJSON_AddNullToObject(o, "max_ulp_of_scale");
    cJSON_AddBoolToObject(o, "ok", ok);
    return o;
}

static int op_check(int argc, char **argv)
{
    op_opts o;
    memset(&o, 0, sizeof o);
    int rc = parse(argc, argv, &o);
    if (rc)
        return rc;
    vt_error err;
    vt_error_clear(&err);
    vt_ggml *q = vt_ggml_open(NULL, &err);
    vt_ggml_mm *mm = q ? vt_ggml_mm_open(NULL, (int)o.threads, &err) : NULL;
    const int64_t nt_max = o.batch;
    float *w = malloc((size_t)(o.rows * o.cols) * sizeof *w);
    float *x = malloc((size_t)(nt_max * o.cols) * sizeof *x);
    float *fw = NULL, *fx = NULL;
    cJSON *doc = cJSON_CreateObject(), *results = cJSON_CreateArray();
    if (!mm || !w || !x || !doc || !results) {
        fprintf(stderr, "vt op check: %s\n", mm ? "out of memory" : err.msg);
        rc = 2;
        goto out;
    }
    if (o.kinds[VT_OP_ROWS_FIXTURE]) {
        fw = malloc((size_t)(o.rows * o.cols) * sizeof *fw);
        fx = malloc((size_t)(nt_max * o.cols) * sizeof *fx);
        if (!fw || !fx || vt_op_fixture_rows(o.model, fw, o.rows, fx, nt_max, o.cols, &err)) {
            fprintf(stderr, "vt op check: %s\n", fw && fx ? err.msg : "out of memory");
            rc = 2;
            goto out;
        }
    }
    if (!o.json)
        printf("vt op check: engine (%s kernels, matmul %s) against ggml_mul_mat on %s "
               "(extra buffer: %s), %d threads; %lld rows x %lld, at 1 and %lld tokens, seed %llu\n"
               "%-8s %-5s %-12s %6s %-9s %7s %9s %9s %9s %9s %11s %11s %9s\n",
               vt_engine_isa(), vt_matmul_mode_name(o.matmul), vt_ggml_mm_cpu_backend(mm),
               *vt_ggml_mm_extra_buffer(mm) ? vt_ggml_mm_extra_buffer(mm) : "none", (int)o.threads,
               (long long)o.rows, (long long)o.cols, (long long)o.batch,
               (unsigned long long)o.seed, "type", "dot", "rows", "tokens", "layout", "dots",
               "identical", "=1-token", "ggml-b!=1", "max ULP", "max |diff|", "max |y|", "ULP@|y|");
    int failed_types = 0;
    for (int ti = 0; ti < o.n_types; ti++) {
        const int type = o.types[ti];
        int type_ok = 1;
        for (int k = 0; k < VT_OP_ROW_KINDS; k++) {
            if (!o.kinds[k])
                continue;
            if (k == VT_OP_ROWS_FIXTURE) {
                memcpy(w, fw, (size_t)(o.rows * o.cols) * sizeof *w);
                memcpy(x, fx, (size_t)(nt_max * o.cols) * sizeof *x);
            } else {
                vt_op_make_rows((vt_op_rows)k, w, o.rows, x, nt_max, o.cols, o.seed ^ (uint64_t)type << 32);
            }
            const int64_t toks[2] = { 1, o.batch };
            for (int bi = 0; bi < 2; bi++) {
                vt_op_inputs in = { w, x, o.rows, o.cols, toks[bi] };
                for (int layout = VT_GGML_REPACK; layout >= VT_GGML_PLAIN; layout--) {
                    vt_op_result r;
                    if (vt_op_check_one(q, mm, vt_engine_matmul, type, &in, o.matmul, (int)o.threads,
                                        (vt_ggml_layout)layout, &r, &err)) {
                        fprintf(stderr, "vt op check: %s\n", err.msg);
                        rc = 2;
                        goto out;
                    }
                    r.kind = (vt_op_rows)k;
                    int ok = result_ok(&r, o.float_ulp);
                    /* The plain layout of a type llama.cpp repacks is shown, not counted:
                     * llama.cpp never computes that type so here. */
                    const int counted = r.layout == VT_GGML_REPACK;
                    type_ok = type_ok && (ok || !counted);
                    cJSON_AddItemToArray(results, result_json(&r, ok));
                    if (!o.json) {
                        char ulp[24];
                        if (r.max_ulp == UINT64_MAX)
                            snprintf(ulp, sizeof ulp, "NaN");
                        else
                            snprintf(ulp, sizeof ulp, "%llu", (unsigned long long)r.max_ulp);
                        printf("%-8s %-5s %-12s %6lld %-9s %7lld %9lld %9lld %9lld %9s %11.3g %11.3g %9.3g%s\n",
                               vt_codec_by_type(type)->name, vt_engine_dot_type(type),
                               vt_op_rows_name(r.kind), (long long)r.n_tok, layout_name(&r),
                               (long long)r.dots, (long long)r.identical, (long long)r.identical_single,
                               (long long)r.oracle_shape_differs, ulp, r.max_abs, r.max_abs_ref,
                               r.max_ulp_of_scale, !counted ? "  (not llama.cpp's layout)" : ok ? "" : "  <-");
                    }
                    if (layout == VT_GGML_REPACK && !r.repacked)
                        break; /* the plain layout is the one just compared */
                }
            }
        }
        failed_types += !type_ok;
    }
    rc = failed_types ? 1 : 0;
    if (o.json) {
        cJSON_AddStringToObject(doc, "schema", "vt.op-check/1");
        cJSON_AddStringToObject(doc, "cpu_backend", vt_ggml_mm_cpu_backend(mm));
        cJSON_AddStringToObject(doc, "extra_buffer", vt_ggml_mm_extra_buffer(mm));
        cJSON_AddStringToObject(doc, "engine_isa", vt_engine_isa());
        cJSON_AddStringToObject(doc, "matmul", vt_matmul_mode_name(o.matmul));
        cJSON_AddNumberToObject(doc, "threads", (double)o.threads);
        cJSON_AddNumberToObject(doc, "rows", (double)o.rows);
        cJSON_AddNumberToObject(doc, "cols", (double)o.cols);
        cJSON_AddNumberToObject(doc, "batch", (double)o.batch);
        cJSON_AddNumberToObject(doc, "seed", (double)o.seed);
        cJSON_AddNumberToObject(doc, "float_ulp", (double)o.float_ulp);
        if (o.model)
            cJSON_AddStringToObject(doc, "model", o.model);
        cJSON_AddItemToObject(doc, "results", results);
        results = NULL;
        cJSON_AddNumberToObject(doc, "failed_types", failed_types);
        char *text = NULL;
        if (vt_json_alloc_failures() || vt_json_make_text(doc) || !(text = cJSON_Print(doc))) {
            fprintf(stderr, "vt op check: out of memory\n");
            rc = 2;
            goto out;
        }
        printf("%s\n", text);
        free(text);
    } else {
        printf("vt op check: %d of %d types meet the standard (integer types bit-identical, float types "
               "within %lld ULP of the scale)%s\n", o.n_types - failed_types, o.n_types, (long long)o.float_ulp,
               failed_types ? "; the rows marked <- do not" : "");
    }
out:
    cJSON_Delete(results);
    cJSON_Delete(doc);
    free(w);
    free(x);
    free(fw);
    free(fx);
    vt_ggml_mm_free(mm);
    vt_ggml_free(q);
    return rc;
}

int vt_cmd_op(int argc, char **argv)
{
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        fputs(usage_text, stdout);
        return 0;
    }
    if (argc < 2 || strcmp(argv[1], "check") != 0) {
        fprintf(stderr, "vt op: '%s': expected the subcommand check (vt op check --help)\n",
                argc >= 2 ? argv[1] : "");
        return 2;
    }
    if (argc >= 3 && (strcmp(argv[2], "--help") == 0 || strcmp(argv[2], "-h") == 0)) {
        fputs(usage_text, stdout);
        return 0;
    }
    return op_check(argc - 1, argv + 1);
}
