/* vt gguf: inspect and rewrite GGUF files.
 *
 *   vt gguf info FILE [--json]   header, architecture, hyper-parameters,
 *                                tokenizer summary, other keys, tensors
 *   vt gguf rewrite IN OUT [--overwrite]
 *                                read IN and write it back to OUT (byte
 *                                identical: a check of the reader/writer)
 *
 * Text and JSON carry the same facts. Errors: one line on stderr, exit 2. */
#include "cmds.h"

#include "common/vt_error.h"
#include "common/vt_publish.h"
#include "common/vt_utf8.h"
#include "engine/codec.h"
#include "engine/gguf_file.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned long long ull;

static const char usage[] =
    "usage: vt gguf info FILE [--json]\n"
    "       vt gguf rewrite IN OUT [--overwrite]\n"
    "\n"
    "info     print the header, architecture and hyper-parameters, a tokenizer\n"
    "         summary, the other keys, the tensors and per-type totals\n"
    "         (--json: the same as one JSON object, schema vt.gguf-info/1)\n"
    "rewrite  read IN and write it to OUT through vt's GGUF writer; the bytes\n"
    "         are identical for any file the reader accepts; an existing OUT is\n"
    "         refused unless --overwrite, and OUT may never be IN (nor a link to it)\n"
    "\n"
    "A malformed file is reported as one line naming the file, the byte offset\n"
    "and the field, and vt exits with status 2.\n"
    "example: vt gguf info tiny-Q8_0.gguf\n";

/* Tokenizer keys shown in the summary (and so not again among other keys). */
static const struct { const char *key, *label; } tok_ids[] = {
    { "tokenizer.ggml.bos_token_id", "bos" },
    { "tokenizer.ggml.eos_token_id", "eos" },
    { "tokenizer.ggml.unknown_token_id", "unk" },
    { "tokenizer.ggml.padding_token_id", "pad" },
    { "tokenizer.ggml.eot_token_id", "eot" },
    { "tokenizer.ggml.eom_token_id", "eom" },
    { "tokenizer.ggml.seperator_token_id", "sep" },
    { "tokenizer.ggml.mask_token_id", "mask" },
};
enum { N_TOK_IDS = (int)(sizeof tok_ids / sizeof tok_ids[0]) };
static const char *const tok_other[] = {
    "tokenizer.ggml.model", "tokenizer.ggml.pre", "tokenizer.ggml.tokens",
    "tokenizer.ggml.merges", "tokenizer.ggml.add_bos_token", "tokenizer.ggml.add_eos_token",
};

static int fail(const char *msg)
{
    fprintf(stderr, "%s\n", msg);
    return 2;
}

static int str_eq(vt_gguf_str s, const char *c)
{
    size_t n = strlen(c);
    return s.len == n && memcmp(s.ptr, c, n) == 0;
}

/* The shortest decimal that reads back as the same f32/f64. */
static void fmt_float(char *buf, size_t cap, double v, int is_f32)
{
    if (isnan(v)) {
        snprintf(buf, cap, "nan");
        return;
    }
    if (isinf(v)) {
        snprintf(buf, cap, v < 0 ? "-inf" : "inf");
        return;
    }
    /* Whole numbers (rope.freq_base 1000000) read better without exponent. */
    if (v == floor(v) && fabs(v) < 1e15) {
        snprintf(buf, cap, "%.0f", v);
        return;
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, cap, "%.*g", prec, v);
        double back = strtod(buf, NULL);
        if (is_f32 ? (float)back == (float)v : back == v)
            return;
    }
}

/* A scalar as text (numbers, true/false); strings are handled by callers. */
static void fmt_scalar(char *buf, size_t cap, const vt_gguf_value *v)
{
    switch (v->type) {
    case VT_GGUF_U8: case VT_GGUF_U16: case VT_GGUF_U32: case VT_GGUF_U64:
        snprintf(buf, cap, "%llu", (ull)v->v.u64);
        break;
    case VT_GGUF_I8: case VT_GGUF_I16: case VT_GGUF_I32: case VT_GGUF_I64:
        snprintf(buf, cap, "%lld", (long long)v->v.i64);
        break;
    case VT_GGUF_F32: case VT_GGUF_F64:
        fmt_float(buf, cap, v->v.f64, v->type == VT_GGUF_F32);
        break;
    case VT_GGUF_BOOL:
        snprintf(buf, cap, "%s", v->v.b ? "true" : "false");
        break;
    default:
        snprintf(buf, cap, "?");
    }
}

/* A string from the file, escaped and cut to max bytes for text; quoted
 * where it stands among values of other types. */
static void print_str(FILE *f, vt_gguf_str s, uint64_t max, int quote)
{
    if (quote)
        fputc('"', f);
    for (uint64_t i = 0; i < s.len && i < max; i++) {
        unsigned char c = (unsigned char)s.ptr[i];
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c == '\n')
            fputs("\\n", f);
        else if (c < 0x20 || c == 0x7f)
            fprintf(f, "\\x%02x", c);
        else
            fputc(c, f);
    }
    if (quote)
        fputc('"', f);
    if (s.len > max)
        fprintf(f, "... (%llu bytes)", (ull)s.len);
}

/* A name from the file (key, tensor name) made safe for one text line. */
static const char *esc_name(char *buf, size_t cap, vt_gguf_str s)
{
    size_t n = 0;
    for (uint64_t i = 0; i < s.len && n + 5 < cap; i++) {
        unsigned char c = (unsigned char)s.ptr[i];
        if (c < 0x20 || c == 0x7f || c == '\\')
            n += (size_t)snprintf(buf + n, cap - n, "\\x%02x", c);
        else
            buf[n++] = (char)c;
    }
    buf[n] = '\0';
    return buf;
}

/* A GGUF string as JSON: the string itself when it is UTF-8; else (bytes
 * that are not UTF-8, a NUL) {"text": with U+FFFD for those bytes,
 * "hex": the exact bytes}, so that every JSON vt writes is valid UTF-8
 * and no byte is lost. */
static cJSON *json_str(vt_gguf_str s)
{
    int changed = 0;
    char *c = vt_utf8_text(s.ptr, (size_t)s.len, &changed);
    cJSON *j = NULL;
    if (c && !changed) {
        j = cJSON_CreateString(c);
    } else if (c) {
        char *hex = vt_utf8_hex(s.ptr, (size_t)s.len);
        j = hex ? cJSON_CreateObject() : NULL;
        if (j) {
            cJSON_AddStringToObject(j, "text", c);
            cJSON_AddStringToObject(j, "hex", hex);
        }
        free(hex);
    }
    free(c);
    return j;
}

/* Numbers as raw JSON text so 64-bit integers keep every digit; NaN and
 * infinities, which JSON lacks, become null. */
static cJSON *json_scalar(const vt_gguf_value *v)
{
    if (v->type == VT_GGUF_STRING)
        return json_str(v->v.str);
    if (v->type == VT_GGUF_BOOL)
        return cJSON_CreateBool(v->v.b);
    if ((v->type == VT_GGUF_F32 || v->type == VT_GGUF_F64) && !isfinite(v->v.f64))
        return cJSON_CreateNull();
    char buf[64];
    fmt_scalar(buf, sizeof buf, v);
    return cJSON_CreateRaw(buf);
}

static cJSON *json_u64(uint64_t v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%llu", (ull)v);
    return cJSON_CreateRaw(buf);
}

/* ---- what info reports ---- */

typedef struct report {
    const vt_gguf *g;
    vt_gguf_str arch;
    int has_arch;
    char *is_summary; /* per key: shown as hyper-parameter or tokenizer summary */
} report;

static int has_prefix(vt_gguf_str key, vt_gguf_str arch)
{
    return key.len > arch.len + 1 && memcmp(key.ptr, arch.ptr, arch.len) == 0 &&
           key.ptr[arch.len] == '.';
}

static int is_hparam(const report *r, uint64_t i)
{
    const vt_gguf_value *v = vt_gguf_kv_value(r->g, i);
    return r->has_arch && v->type != VT_GGUF_ARRAY && has_prefix(vt_gguf_kv_key(r->g, i), r->arch);
}

static int64_t array_len(const vt_gguf *g, const char *key)
{
    int64_t i = vt_gguf_find_key(g, key);
    if (i < 0)
        return -1;
    const vt_gguf_value *v = vt_gguf_kv_value(g, i);
    return v->type == VT_GGUF_ARRAY ? (int64_t)v->count : -1;
}

static int report_init(report *r, const vt_gguf *g)
{
    memset(r, 0, sizeof *r);
    r->g = g;
    r->has_arch = vt_gguf_get_str(g, "general.architecture", &r->arch);
    uint64_t n = vt_gguf_n_kv(g);
    r->is_summary = calloc(n ? n : 1, 1);
    if (!r->is_summary)
        return -1;
    for (uint64_t i = 0; i < n; i++) {
        vt_gguf_str k = vt_gguf_kv_key(g, i);
        int s = is_hparam(r, i) || str_eq(k, "general.architecture");
        for (int j = 0; !s && j < N_TOK_IDS; j++)
            s = str_eq(k, tok_ids[j].key);
        for (size_t j = 0; !s && j < sizeof tok_other / sizeof tok_other[0]; j++)
            s = str_eq(k, tok_other[j]);
        r->is_summary[i] = (char)s;
    }
    return 0;
}

static void shape_text(char *buf, size_t cap, const vt_gguf_tensor *t)
{
    size_t n = (size_t)snprintf(buf, cap, "[");
    for (uint32_t j = 0; j < t->n_dims && n < cap; j++)
        n += (size_t)snprintf(buf + n, cap - n, "%s%lld", j ? ", " : "", (long long)t->ne[j]);
    if (n < cap)
        snprintf(buf + n, cap - n, "]");
}

/* Per-type totals, indexed by ggml type id. */
typedef struct totals { uint64_t count[VT_TYPE_COUNT], bytes[VT_TYPE_COUNT], all_bytes; } totals;

static void count_types(const vt_gguf *g, totals *t)
{
    memset(t, 0, sizeof *t);
    for (uint64_t i = 0; i < vt_gguf_n_tensors(g); i++) {
        const vt_gguf_tensor *x = vt_gguf_tensor_at(g, i);
        if (x->type >= 0 && x->type < VT_TYPE_COUNT) {
            t->count[x->type]++;
            t->bytes[x->type] += x->n_bytes;
        }
        t->all_bytes += x->n_bytes;
    }
}

static const char *type_name(int type)
{
    const vt_codec *c = vt_codec_by_type(type);
    return c ? c->name : "?";
}

/* ---- text ---- */

static void print_text(const report *r)
{
    const vt_gguf *g = r->g;
    uint64_t n_kv = vt_gguf_n_kv(g), n_t = vt_gguf_n_tensors(g);
    char buf[128], name[512];
    printf("file: %s\n", vt_gguf_name(g));
    printf("version: %u\n", vt_gguf_version(g));
    printf("alignment: %u\n", vt_gguf_alignment(g));
    printf("size: %llu bytes\n", (ull)vt_gguf_file_size(g));
    printf("data offset: %llu\n", (ull)vt_gguf_data_offset(g));
    printf("key/values: %llu\n", (ull)n_kv);
    printf("tensors: %llu\n", (ull)n_t);

    printf("architecture: ");
    if (r->has_arch)
        print_str(stdout, r->arch, 200, 0);
    else
        printf("(none)");
    printf("\n");

    printf("hyper-parameters:\n");
    int any = 0;
    for (uint64_t i = 0; i < n_kv; i++) {
        if (!is_hparam(r, i))
            continue;
        vt_gguf_str k = vt_gguf_kv_key(g, i);
        const vt_gguf_value *v = vt_gguf_kv_value(g, i);
        vt_gguf_str sub = { k.ptr + r->arch.len + 1, k.len - r->arch.len - 1 };
        printf("  %s: ", esc_name(name, sizeof name, sub));
        if (v->type == VT_GGUF_STRING) {
            print_str(stdout, v->v.str, 60, 1);
        } else {
            fmt_scalar(buf, sizeof buf, v);
            printf("%s", buf);
        }
        printf("\n");
        any = 1;
    }
    if (!any)
        printf("  (none)\n");

    printf("tokenizer:\n");
    vt_gguf_str s;
    int64_t n;
    uint64_t id;
    int b;
    any = 0;
    if (vt_gguf_get_str(g, "tokenizer.ggml.model", &s)) {
        printf("  model: ");
        print_str(stdout, s, 60, 0);
        printf("\n");
        any = 1;
    }
    if (vt_gguf_get_str(g, "tokenizer.ggml.pre", &s)) {
        printf("  pre: ");
        print_str(stdout, s, 60, 0);
        printf("\n");
        any = 1;
    }
    if ((n = array_len(g, "tokenizer.ggml.tokens")) >= 0) {
        printf("  vocabulary size: %lld\n", (long long)n);
        any = 1;
    }
    if ((n = array_len(g, "tokenizer.ggml.merges")) >= 0) {
        printf("  merges: %lld\n", (long long)n);
        any = 1;
    }
    for (int j = 0; j < N_TOK_IDS; j++) {
        if (vt_gguf_get_u64(g, tok_ids[j].key, &id)) {
            printf("  %s id: %llu\n", tok_ids[j].label, (ull)id);
            any = 1;
        }
    }
    if (vt_gguf_get_bool(g, "tokenizer.ggml.add_bos_token", &b)) {
        printf("  add_bos: %s\n", b ? "true" : "false");
        any = 1;
    }
    if (vt_gguf_get_bool(g, "tokenizer.ggml.add_eos_token", &b)) {
        printf("  add_eos: %s\n", b ? "true" : "false");
        any = 1;
    }
    if (!any)
        printf("  (none)\n");

    printf("other keys:\n");
    int width = 0;
    for (uint64_t i = 0; i < n_kv; i++) {
        int len = (int)strlen(esc_name(name, sizeof name, vt_gguf_kv_key(g, i)));
        if (!r->is_summary[i] && len > width)
            width = len;
    }
    if (width > 48)
        width = 48;
    any = 0;
    for (uint64_t i = 0; i < n_kv; i++) {
        if (r->is_summary[i])
            continue;
        vt_gguf_str k = vt_gguf_kv_key(g, i);
        const vt_gguf_value *v = vt_gguf_kv_value(g, i);
        printf("  %-*s  ", width, esc_name(name, sizeof name, k));
        if (v->type == VT_GGUF_ARRAY) {
            printf("array[%s] x %llu", vt_gguf_vtype_name(v->elem_type), (ull)v->count);
        } else if (v->type == VT_GGUF_STRING) {
            printf("string  ");
            print_str(stdout, v->v.str, 60, 1);
        } else {
            fmt_scalar(buf, sizeof buf, v);
            printf("%-6s  %s", vt_gguf_vtype_name(v->type), buf);
        }
        printf("\n");
        any = 1;
    }
    if (!any)
        printf("  (none)\n");

    if (!n_t) {
        printf("tensor table: (no tensors)\n");
        return;
    }
    int nw = 4;
    for (uint64_t i = 0; i < n_t; i++) {
        int len = (int)strlen(esc_name(name, sizeof name, vt_gguf_tensor_at(g, i)->name));
        if (len > nw)
            nw = len;
    }
    printf("tensor table:\n  %-*s  %-7s  %-28s  %s\n", nw, "name", "type", "shape", "bytes");
    for (uint64_t i = 0; i < n_t; i++) {
        const vt_gguf_tensor *t = vt_gguf_tensor_at(g, i);
        shape_text(buf, sizeof buf, t);
        printf("  %-*s  %-7s  %-28s  %llu\n", nw, esc_name(name, sizeof name, t->name), type_name(t->type),
               buf, (ull)t->n_bytes);
    }
    totals tt;
    count_types(g, &tt);
    printf("totals by type:\n");
    for (int ty = 0; ty < VT_TYPE_COUNT; ty++)
        if (tt.count[ty])
            printf("  %-7s  %6llu tensors  %llu bytes\n", type_name(ty), (ull)tt.count[ty], (ull)tt.bytes[ty]);
    printf("  %-7s  %6llu tensors  %llu bytes\n", "all", (ull)n_t, (ull)tt.all_bytes);
}

/* ---- JSON ---- */

static cJSON *build_json(const report *r)
{
    const vt_gguf *g = r->g;
    uint64_t n_kv = vt_gguf_n_kv(g), n_t = vt_gguf_n_tensors(g);
    cJSON *o = cJSON_CreateObject();
    vt_gguf_str name = { vt_gguf_name(g), strlen(vt_gguf_name(g)) };
    cJSON_AddStringToObject(o, "schema", "vt.gguf-info/1"); /* tools/vt.gguf-info.schema.json */
    cJSON_AddItemToObject(o, "file", json_str(name));
    cJSON_AddItemToObject(o, "version", json_u64(vt_gguf_version(g)));
    cJSON_AddItemToObject(o, "alignment", json_u64(vt_gguf_alignment(g)));
    cJSON_AddItemToObject(o, "size", json_u64(vt_gguf_file_size(g)));
    cJSON_AddItemToObject(o, "data_offset", json_u64(vt_gguf_data_offset(g)));
    cJSON_AddItemToObject(o, "kv_count", json_u64(n_kv));
    cJSON_AddItemToObject(o, "tensor_count", json_u64(n_t));
    cJSON_AddItemToObject(o, "architecture", r->has_arch ? json_str(r->arch) : cJSON_CreateNull());

    cJSON *hp = cJSON_AddObjectToObject(o, "hyper_parameters");
    for (uint64_t i = 0; i < n_kv; i++) {
        if (!is_hparam(r, i))
            continue;
        vt_gguf_str k = vt_gguf_kv_key(g, i);
        vt_gguf_str sub = { k.ptr + r->arch.len + 1, k.len - r->arch.len - 1 };
        char *key = vt_utf8_text(sub.ptr, (size_t)sub.len, NULL); /* a member name: text only */
        if (key)
            cJSON_AddItemToObject(hp, key, json_scalar(vt_gguf_kv_value(g, i)));
        free(key);
    }

    cJSON *tok = cJSON_AddObjectToObject(o, "tokenizer");
    vt_gguf_str s;
    int64_t n;
    uint64_t id;
    int b;
    if (vt_gguf_get_str(g, "tokenizer.ggml.model", &s))
        cJSON_AddItemToObject(tok, "model", json_str(s));
    if (vt_gguf_get_str(g, "tokenizer.ggml.pre", &s))
        cJSON_AddItemToObject(tok, "pre", json_str(s));
    if ((n = array_len(g, "tokenizer.ggml.tokens")) >= 0)
        cJSON_AddItemToObject(tok, "vocab_size", json_u64((uint64_t)n));
    if ((n = array_len(g, "tokenizer.ggml.merges")) >= 0)
        cJSON_AddItemToObject(tok, "merges", json_u64((uint64_t)n));
    for (int j = 0; j < N_TOK_IDS; j++) {
        if (vt_gguf_get_u64(g, tok_ids[j].key, &id)) {
            char key[32];
            snprintf(key, sizeof key, "%s_id", tok_ids[j].label);
            cJSON_AddItemToObject(tok, key, json_u64(id));
        }
    }
    if (vt_gguf_get_bool(g, "tokenizer.ggml.add_bos_token", &b))
        cJSON_AddBoolToObject(tok, "add_bos", b);
    if (vt_gguf_get_bool(g, "tokenizer.ggml.add_eos_token", &b))
        cJSON_AddBoolToObject(tok, "add_eos", b);

    cJSON *keys = cJSON_AddArrayToObject(o, "other_keys");
    for (uint64_t i = 0; i < n_kv; i++) {
        if (r->is_summary[i])
            continue;
        const vt_gguf_value *v = vt_gguf_kv_value(g, i);
        cJSON *k = cJSON_CreateObject();
        cJSON_AddItemToObject(k, "key", json_str(vt_gguf_kv_key(g, i)));
        cJSON_AddStringToObject(k, "type", vt_gguf_vtype_name(v->type));
        if (v->type == VT_GGUF_ARRAY) {
            cJSON_AddStringToObject(k, "elem_type", vt_gguf_vtype_name(v->elem_type));
            cJSON_AddItemToObject(k, "count", json_u64(v->count));
        } else {
            cJSON_AddItemToObject(k, "value", json_scalar(v));
        }
        cJSON_AddItemToArray(keys, k);
    }

    cJSON *ts = cJSON_AddArrayToObject(o, "tensors");
    for (uint64_t i = 0; i < n_t; i++) {
        const vt_gguf_tensor *t = vt_gguf_tensor_at(g, i);
        cJSON *j = cJSON_CreateObject();
        cJSON_AddItemToObject(j, "name", json_str(t->name));
        cJSON_AddStringToObject(j, "type", type_name(t->type));
        cJSON *shape = cJSON_AddArrayToObject(j, "shape");
        for (uint32_t d = 0; d < t->n_dims; d++) {
            char buf[32];
            snprintf(buf, sizeof buf, "%lld", (long long)t->ne[d]);
            cJSON_AddItemToArray(shape, cJSON_CreateRaw(buf));
        }
        cJSON_AddItemToObject(j, "bytes", json_u64(t->n_bytes));
        cJSON_AddItemToObject(j, "offset", json_u64(t->offset));
        cJSON_AddItemToArray(ts, j);
    }

    totals tt;
    count_types(g, &tt);
    cJSON *tot = cJSON_AddObjectToObject(o, "totals");
    for (int ty = 0; ty < VT_TYPE_COUNT; ty++) {
        if (!tt.count[ty])
            continue;
        cJSON *e = cJSON_AddObjectToObject(tot, type_name(ty));
        cJSON_AddItemToObject(e, "count", json_u64(tt.count[ty]));
        cJSON_AddItemToObject(e, "bytes", json_u64(tt.bytes[ty]));
    }
    cJSON_AddItemToObject(o, "total_tensor_bytes", json_u64(tt.all_bytes));
    return o;
}

/* ---- subcommands ---- */

static int finish_stdout(void)
{
    if (fflush(stdout) != 0 || ferror(stdout))
        return fail("vt gguf: stdout: write error: expected to print the report");
    return 0;
}

static int cmd_info(int argc, char **argv)
{
    const char *path = NULL;
    int json = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(usage, stdout);
            return finish_stdout();
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "vt gguf info: unknown option '%s': expected --json or --help\n", argv[i]);
            return 2;
        } else if (path) {
            fprintf(stderr, "vt gguf info: extra argument '%s': expected one FILE\n", argv[i]);
            return 2;
        } else {
            path = argv[i];
        }
    }
    if (!path)
        return fail("vt gguf info: missing FILE: expected vt gguf info FILE [--json]");

    vt_error err;
    vt_error_clear(&err);
    vt_gguf *g = vt_gguf_open(path, &err);
    if (!g)
        return fail(err.msg);
    report r;
    if (report_init(&r, g)) {
        vt_gguf_free(g);
        return fail("vt gguf info: out of memory");
    }
    int rc = 0;
    if (json) {
        cJSON *o = build_json(&r);
        char *text = o ? cJSON_PrintUnformatted(o) : NULL;
        if (text)
            printf("%s\n", text);
        else
            rc = fail("vt gguf info: out of memory building JSON");
        free(text);
        cJSON_Delete(o);
    } else {
        print_text(&r);
    }
    free(r.is_summary);
    vt_gguf_free(g);
    return rc ? rc : finish_stdout();
}

static int cmd_rewrite(int argc, char **argv)
{
    if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        fputs(usage, stdout);
        return finish_stdout();
    }
    const char *paths[2] = { NULL, NULL };
    int n_paths = 0, overwrite = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--overwrite") == 0) {
            if (overwrite)
                return fail("vt gguf rewrite: --overwrite: given twice: expected it at most once");
            overwrite = 1;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "vt gguf rewrite: option '%s': expected --overwrite\n", argv[i]);
            return 2;
        } else if (n_paths == 2) {
            return fail("vt gguf rewrite: wrong arguments: expected vt gguf rewrite IN OUT [--overwrite]");
        } else {
            paths[n_paths++] = argv[i];
        }
    }
    if (n_paths != 2)
        return fail("vt gguf rewrite: wrong arguments: expected vt gguf rewrite IN OUT [--overwrite]");
    vt_error err;
    vt_error_clear(&err);
    /* Refused before reading: OUT existing (without --overwrite) or naming IN. */
    const vt_publish_opts po = { .overwrite = overwrite, .inputs = paths, .n_inputs = 1 };
    if (vt_publish_check(&paths[1], 1, &po, &err) != VT_OK)
        return fail(err.msg);
    vt_gguf *g = vt_gguf_open(paths[0], &err);
    if (!g)
        return fail(err.msg);
    vt_gguf_writer *w = vt_gguf_writer_from(g, &err);
    int rc = w ? vt_gguf_writer_write_file(w, paths[1], &po, &err) : VT_EINPUT;
    vt_gguf_writer_free(w);
    vt_gguf_free(g);
    return rc == VT_OK ? 0 : fail(err.msg);
}

int vt_cmd_gguf(int argc, char **argv)
{
    if (argc < 2)
        return fail("vt gguf: missing subcommand: expected info or rewrite (see vt gguf --help)");
    const char *sub = argv[1];
    if (strcmp(sub, "--help") == 0 || strcmp(sub, "-h") == 0 || strcmp(sub, "help") == 0) {
        fputs(usage, stdout);
        return finish_stdout();
    }
    if (strcmp(sub, "info") == 0)
        return cmd_info(argc - 1, argv + 1);
    if (strcmp(sub, "rewrite") == 0)
        return cmd_rewrite(argc - 1, argv + 1);
    fprintf(stderr, "vt gguf: unknown subcommand '%s': expected info or rewrite\n", sub);
    return 2;
}
