/* GGUF reader/writer: byte-exact round trips of llama.cpp's vocab files, a
 * hand-built file with every value type, mutation fuzzing (every case on an
 * exact-size heap copy, so a sanitizer build catches any overread), and the
 * `vt gguf` command line. */
#include <criterion/criterion.h>

#include "engine/codec.h"
#include "engine/gguf_file.h"
#include "tests/support/vt_test.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

enum { N_VOCAB_FILES = 19 };

/* ---- small helpers ---- */

static uint8_t *slurp(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    cr_assert(f, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(n ? (size_t)n : 1);
    cr_assert(b);
    cr_assert_eq(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *size = (size_t)n;
    return b;
}

#define spit(path, data, n) vt_test_spit(path, data, n)

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Paths of every ggml-vocab-*.gguf in VT_VOCAB_DIR, sorted. */
static int vocab_files(char ***out)
{
    DIR *d = opendir(VT_VOCAB_DIR);
    cr_assert(d, "cannot open %s", VT_VOCAB_DIR);
    char **v = NULL;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (strncmp(e->d_name, "ggml-vocab-", 11) != 0 || len < 5 ||
            strcmp(e->d_name + len - 5, ".gguf") != 0)
            continue;
        v = realloc(v, (size_t)(n + 1) * sizeof *v);
        cr_assert(v);
        size_t cap = strlen(VT_VOCAB_DIR) + len + 2;
        v[n] = malloc(cap);
        snprintf(v[n], cap, "%s/%s", VT_VOCAB_DIR, e->d_name);
        n++;
    }
    closedir(d);
    qsort(v, (size_t)n, sizeof *v, cmp_names);
    *out = v;
    return n;
}

static void free_list(char **v, int n)
{
    for (int i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

static int str_is(vt_gguf_str s, const char *c)
{
    return s.len == strlen(c) && memcmp(s.ptr, c, s.len) == 0;
}

/* Deterministic generator, so a failing case can be reproduced. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}

/* A growable byte buffer for hand-encoding values. */
typedef struct bytes { uint8_t *p; size_t n, cap; } bytes;

static void b_put(bytes *b, const void *p, size_t n)
{
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
        cr_assert(b->p);
    }
    memcpy(b->p + b->n, p, n);
    b->n += n;
}

static void b_int(bytes *b, uint64_t v, int width)
{
    uint8_t t[8];
    for (int i = 0; i < width; i++)
        t[i] = (uint8_t)(v >> (8 * i));
    b_put(b, t, (size_t)width);
}

static void b_str(bytes *b, const char *s)
{
    b_int(b, strlen(s), 8);
    b_put(b, s, strlen(s));
}

static uint64_t rd64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static uint32_t rd32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }

static void wr(uint8_t *p, uint64_t v, int width)
{
    for (int i = 0; i < width; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* ---- a structure map of a valid file, written independently of the
 * reader: where each count, length, type and tensor field is, and where
 * each section starts, for the fuzzer to aim at. ---- */

enum kind { F_VERSION, F_COUNT, F_LEN, F_ELEN, F_VTYPE, F_ETYPE, F_BOOL, F_ALIGN, F_NDIMS, F_NE,
            F_TTYPE, F_TOFF };

typedef struct field { size_t off; enum kind kind; } field;

typedef struct layout {
    field *f;
    size_t nf, capf;
    size_t *bound; /* section starts, and starts of fields inside key/values */
    char *major;   /* per bound: 1 at a section start (header field, key/value,
                    * tensor info, end of infos, data section, tensor data) */
    size_t nb, capb;
    uint32_t alignment;
} layout;

static void add_field(layout *l, size_t off, enum kind k)
{
    if (l->nf == l->capf) {
        l->capf = l->capf * 2 + 64;
        l->f = realloc(l->f, l->capf * sizeof *l->f);
        cr_assert(l->f);
    }
    l->f[l->nf++] = (field){ off, k };
}

static void add_bound_kind(layout *l, size_t off, int major)
{
    if (l->nb == l->capb) {
        l->capb = l->capb * 2 + 64;
        l->bound = realloc(l->bound, l->capb * sizeof *l->bound);
        l->major = realloc(l->major, l->capb);
        cr_assert(l->bound && l->major);
    }
    l->major[l->nb] = (char)major;
    l->bound[l->nb++] = off;
}

static void add_bound(layout *l, size_t off) { add_bound_kind(l, off, 1); }

static size_t map_value(layout *l, const uint8_t *d, size_t pos, uint32_t t, int in_array, int is_align)
{
    static const int width[] = { 1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8 };
    cr_assert(t <= 12);
    if (t == 8) {
        add_field(l, pos, in_array ? F_ELEN : F_LEN);
        return pos + 8 + rd64(d + pos);
    }
    if (t != 9) {
        if (t == 7)
            add_field(l, pos, F_BOOL);
        if (is_align)
            add_field(l, pos, F_ALIGN);
        return pos + (size_t)width[t];
    }
    uint32_t et = rd32(d + pos);
    uint64_t n = rd64(d + pos + 4);
    add_field(l, pos, F_ETYPE);
    add_field(l, pos + 4, F_COUNT);
    pos += 12;
    if (et != 8 && et != 9) {
        if (et == 7 && n)
            add_field(l, pos, F_BOOL);
        return pos + n * (size_t)width[et];
    }
    for (uint64_t i = 0; i < n; i++) {
        if (et == 9) {
            pos = map_value(l, d, pos, 9, 1, 0);
        } else {
            add_field(l, pos, F_ELEN);
            pos += 8 + rd64(d + pos);
        }
    }
    return pos;
}

static void map_file(layout *l, const uint8_t *d, size_t size)
{
    memset(l, 0, sizeof *l);
    l->alignment = 32;
    add_bound(l, 0);
    add_bound(l, 4);
    add_field(l, 4, F_VERSION);
    add_bound(l, 8);
    add_field(l, 8, F_COUNT);
    add_bound(l, 16);
    add_field(l, 16, F_COUNT);
    uint64_t nt = rd64(d + 8), nkv = rd64(d + 16);
    size_t pos = 24;
    for (uint64_t i = 0; i < nkv; i++) {
        add_bound(l, pos);
        add_field(l, pos, F_LEN);
        uint64_t klen = rd64(d + pos);
        int is_align = klen == 17 && memcmp(d + pos + 8, "general.alignment", 17) == 0;
        pos += 8 + klen;
        add_bound_kind(l, pos, 0);
        add_field(l, pos, F_VTYPE);
        uint32_t t = rd32(d + pos);
        pos += 4;
        add_bound_kind(l, pos, 0);
        if (is_align)
            l->alignment = rd32(d + pos);
        pos = map_value(l, d, pos, t, 0, is_align);
    }
    size_t *toff = calloc(nt ? nt : 1, sizeof *toff);
    for (uint64_t i = 0; i < nt; i++) {
        add_bound(l, pos);
        add_field(l, pos, F_LEN);
        pos += 8 + rd64(d + pos);
        add_field(l, pos, F_NDIMS);
        uint32_t nd = rd32(d + pos);
        pos += 4;
        for (uint32_t j = 0; j < nd; j++, pos += 8)
            add_field(l, pos, F_NE);
        add_field(l, pos, F_TTYPE);
        pos += 4;
        add_field(l, pos, F_TOFF);
        toff[i] = (size_t)rd64(d + pos);
        pos += 8;
    }
    add_bound(l, pos);
    size_t doff = (pos + l->alignment - 1) / l->alignment * l->alignment;
    if (doff > size)
        doff = size;
    add_bound(l, doff);
    for (uint64_t i = 0; i < nt; i++)
        add_bound(l, doff + toff[i]);
    add_bound(l, size);
    free(toff);
}

static void free_layout(layout *l)
{
    free(l->f);
    free(l->bound);
    free(l->major);
}

/* ---- checking one case ---- */

typedef struct stats { long cases, refused, accepted; } stats;

/* Reads the first and last byte, so a sanitizer checks the extent. */
static void touch(const void *p, uint64_t n)
{
    if (!n)
        return;
    volatile uint8_t a = ((const uint8_t *)p)[0], z = ((const uint8_t *)p)[n - 1];
    (void)a;
    (void)z;
}

/* Visits every element of every array (through nested arrays too), so a
 * sanitizer sees each access; budget caps the work on big files. */
static void walk_value(const vt_gguf *g, const vt_gguf_value *v, int depth, uint64_t budget)
{
    cr_assert(depth <= VT_GGUF_MAX_DEPTH);
    if (v->type != VT_GGUF_ARRAY)
        return;
    uint64_t n = v->count;
    for (uint64_t i = 0; i < n; i++) {
        if (n > budget && i == budget / 2)
            i = n - budget / 2; /* the first and last elements */
        vt_gguf_value e;
        cr_assert(vt_gguf_array_get(g, v, i, &e), "array_get %llu of %llu", (unsigned long long)i,
                  (unsigned long long)n);
        cr_assert_eq(e.type, v->elem_type);
        if (e.type == VT_GGUF_STRING)
            touch(e.v.str.ptr, e.v.str.len);
        walk_value(g, &e, depth + 1, budget);
    }
    vt_gguf_value past;
    cr_assert(!vt_gguf_array_get(g, v, n, &past));
}

/* One fuzz case: data is copied to a heap block of exactly n bytes; the
 * reader must refuse it properly or accept it, and an accepted file must be
 * written back byte for byte. */
static void check_case(const uint8_t *data, size_t n, const char *name, uint64_t budget, stats *st)
{
    uint8_t *copy = malloc(n ? n : 1);
    cr_assert(copy);
    if (n)
        memcpy(copy, data, n);
    vt_error err;
    vt_error_clear(&err);
    vt_gguf *g = vt_gguf_open_memory(copy, n, name, &err);
    st->cases++;
    if (!g) {
        st->refused++;
        cr_assert_eq(err.code, VT_EINPUT, "code %d: %s", err.code, err.msg);
        cr_assert(strstr(err.msg, name) == err.msg, "message does not start with the name: %s", err.msg);
        cr_assert(strstr(err.msg, ": offset "), "message without offset: %s", err.msg);
        cr_assert(strstr(err.msg, "expected"), "message without expectation: %s", err.msg);
        cr_assert(!strchr(err.msg, '\n'), "message of several lines: %s", err.msg);
        free(copy);
        return;
    }
    st->accepted++;
    cr_assert_eq(err.code, VT_OK);
    for (uint64_t i = 0; i < vt_gguf_n_kv(g); i++)
        walk_value(g, vt_gguf_kv_value(g, i), 0, budget);
    uint64_t doff = vt_gguf_data_offset(g);
    cr_assert(doff <= n);
    for (uint64_t i = 0; i < vt_gguf_n_tensors(g); i++) {
        const vt_gguf_tensor *t = vt_gguf_tensor_at(g, i);
        const uint8_t *p = t->data;
        cr_assert(p >= copy + doff && t->n_bytes <= (uint64_t)(copy + n - p));
        touch(p, t->n_bytes);
        cr_assert_eq(t->offset % vt_gguf_alignment(g), 0);
    }
    vt_gguf_writer *w = vt_gguf_writer_from(g, &err);
    cr_assert(w, "%s", err.msg);
    void *out;
    size_t out_n;
    cr_assert_eq(vt_gguf_writer_to_memory(w, &out, &out_n, &err), VT_OK, "%s", err.msg);
    cr_assert_eq(out_n, n, "rewritten size %zu, read %zu", out_n, n);
    cr_assert(memcmp(out, copy, n) == 0, "rewritten bytes differ");
    free(out);
    vt_gguf_writer_free(w);
    vt_gguf_free(g);
    free(copy);
}

/* ---- hand-built files ---- */

/* Nested arrays, hand-encoded: [[1,2,3],[],[7]] of u32, [["x","yz"],[""]]
 * of strings, and three levels [[[5, 6]]]. */
static bytes nested_u32(void)
{
    bytes b = { 0 };
    b_int(&b, VT_GGUF_U32, 4); b_int(&b, 3, 8); b_int(&b, 1, 4); b_int(&b, 2, 4); b_int(&b, 3, 4);
    b_int(&b, VT_GGUF_U32, 4); b_int(&b, 0, 8);
    b_int(&b, VT_GGUF_U32, 4); b_int(&b, 1, 8); b_int(&b, 7, 4);
    return b;
}

static bytes nested_str(void)
{
    bytes b = { 0 };
    b_int(&b, VT_GGUF_STRING, 4); b_int(&b, 2, 8); b_str(&b, "x"); b_str(&b, "yz");
    b_int(&b, VT_GGUF_STRING, 4); b_int(&b, 1, 8); b_str(&b, "");
    return b;
}

static bytes nested_3(void)
{
    bytes b = { 0 };
    b_int(&b, VT_GGUF_ARRAY, 4); b_int(&b, 1, 8);
    b_int(&b, VT_GGUF_U16, 4); b_int(&b, 2, 8); b_int(&b, 5, 2); b_int(&b, 6, 2);
    return b;
}

static vt_gguf_value array_value(vt_gguf_vtype et, uint64_t count, const bytes *b)
{
    vt_gguf_value v;
    memset(&v, 0, sizeof v);
    v.type = VT_GGUF_ARRAY;
    v.elem_type = et;
    v.count = count;
    v.raw = b->p;
    v.raw_size = b->n;
    return v;
}

static vt_gguf_value scalar(vt_gguf_vtype t, uint64_t u, int64_t i, double f)
{
    vt_gguf_value v;
    memset(&v, 0, sizeof v);
    v.type = t;
    if (t == VT_GGUF_F32 || t == VT_GGUF_F64)
        v.v.f64 = f;
    else if (t == VT_GGUF_I8 || t == VT_GGUF_I16 || t == VT_GGUF_I32 || t == VT_GGUF_I64)
        v.v.i64 = i;
    else
        v.v.u64 = u;
    return v;
}

/* Deterministic tensor payloads. */
static uint8_t *payload(size_t n, unsigned seed)
{
    uint8_t *p = malloc(n ? n : 1);
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(i * 31 + seed * 7 + (i >> 3));
    return p;
}

static const struct { const char *name; int type; uint32_t n_dims; int64_t ne[4]; } tensors[] = {
    { "token_embd.weight", VT_TYPE_F32, 2, { 8, 3 } },
    { "blk.0.attn_q.weight", VT_TYPE_Q4_0, 2, { 64, 2 } },
    { "blk.0.ffn_up.weight", VT_TYPE_Q8_0, 4, { 32, 1, 2, 1 } },
    { "blk.0.attn_norm.weight", VT_TYPE_F16, 1, { 5 } },
    { "blk.0.ffn_down.weight", VT_TYPE_Q4_K, 2, { 256, 1 } },
    { "empty", VT_TYPE_F32, 2, { 0, 4 } },
    { "ids", VT_TYPE_I32, 1, { 3 } },
    { "bf", VT_TYPE_BF16, 3, { 2, 2, 2 } },
};
enum { N_TENSORS = (int)(sizeof tensors / sizeof tensors[0]) };

static uint64_t tensor_bytes(int i)
{
    const vt_codec *c = vt_codec_by_type(tensors[i].type);
    uint64_t n = (uint64_t)(tensors[i].ne[0] / c->block_elems) * c->block_bytes;
    for (uint32_t j = 1; j < tensors[i].n_dims; j++)
        n *= (uint64_t)tensors[i].ne[j];
    return n;
}

/* The full hand-built file: every value type, scalar and string arrays,
 * nested arrays, tensors of several types. alignment 0 leaves the default. */
static vt_gguf_writer *build_full(uint32_t version, uint32_t alignment)
{
    vt_error err;
    vt_gguf_writer *w = vt_gguf_writer_new(version, &err);
    cr_assert(w, "%s", err.msg);
    cr_assert_eq(vt_gguf_writer_set_str(w, "general.architecture", "llama"), VT_OK);
    if (alignment)
        cr_assert_eq(vt_gguf_writer_set_u32(w, "general.alignment", alignment), VT_OK);
    vt_gguf_value v;
    v = scalar(VT_GGUF_U8, 200, 0, 0);
    cr_assert_eq(vt_gguf_writer_set_value(w, "t.u8", &v), VT_OK);
    v = scalar(VT_GGUF_I8, 0, -100, 0);
    cr_assert_eq(vt_gguf_writer_set_value(w, "t.i8", &v), VT_OK);
    v = scalar(VT_GGUF_U16, 65535, 0, 0);
    cr_assert_eq(vt_gguf_writer_set_value(w, "t.u16", &v), VT_OK);
    v = scalar(VT_GGUF_I16, 0, -32768, 0);
    cr_assert_eq(vt_gguf_writer_set_value(w, "t.i16", &v), VT_OK);
    cr_assert_eq(vt_gguf_writer_set_u32(w, "llama.context_length", 4096), VT_OK);
    cr_assert_eq(vt_gguf_writer_set_i32(w, "t.i32", -123456789), VT_OK);
    cr_assert_eq(vt_gguf_writer_set_f32(w, "llama.rope.freq_base", 10000.5f), VT_OK);
    cr_assert_eq(vt_gguf_writer_set_bool(w, "tokenizer.ggml.add_bos_token", 1), VT_OK);
    cr_assert_eq(vt_gguf_writer_set_str(w, "general.name", "hand \"built\"\n"), VT_OK);
    cr_assert_eq(vt_gguf_writer_set_u64(w, "t.u64", UINT64_MAX), VT_OK);
    v = scalar(VT_GGUF_I64, 0, INT64_MIN, 0);
    cr_assert_eq(vt_gguf_writer_set_value(w, "t.i64", &v), VT_OK);
    v = scalar(VT_GGUF_F64, 0, 0, -1.0 / 3.0);
    cr_assert_eq(vt_gguf_writer_set_value(w, "t.f64", &v), VT_OK);
    cr_assert_eq(vt_gguf_writer_set_str(w, "tokenizer.ggml.model", "llama"), VT_OK);

    const char *toks[] = { "<s>", "</s>", "a", "bc", "" };
    cr_assert_eq(vt_gguf_writer_set_str_array(w, "tokenizer.ggml.tokens", toks, 5), VT_OK);
    int32_t tt[5] = { 3, 3, 1, 1, -1 };
    uint8_t tt_le[20];
    for (int i = 0; i < 5; i++)
        wr(tt_le + 4 * i, (uint32_t)tt[i], 4);
    cr_assert_eq(vt_gguf_writer_set_array(w, "tokenizer.ggml.token_type", VT_GGUF_I32, tt_le, 5), VT_OK);
    uint8_t bools[3] = { 0, 1, 1 };
    cr_assert_eq(vt_gguf_writer_set_array(w, "t.bools", VT_GGUF_BOOL, bools, 3), VT_OK);
    uint8_t f64s[16];
    double d0 = 1.5, d1 = -2e300;
    memcpy(f64s, &d0, 8);
    memcpy(f64s + 8, &d1, 8);
    cr_assert_eq(vt_gguf_writer_set_array(w, "t.f64s", VT_GGUF_F64, f64s, 2), VT_OK);
    cr_assert_eq(vt_gguf_writer_set_array(w, "t.empty", VT_GGUF_U8, NULL, 0), VT_OK);

    bytes nu = nested_u32(), ns = nested_str(), n3 = nested_3();
    v = array_value(VT_GGUF_ARRAY, 3, &nu);
    cr_assert_eq(vt_gguf_writer_set_value(w, "t.nested_u32", &v), VT_OK, "%s", vt_gguf_writer_error(w)->msg);
    v = array_value(VT_GGUF_ARRAY, 2, &ns);
    cr_assert_eq(vt_gguf_writer_set_value(w, "t.nested_str", &v), VT_OK, "%s", vt_gguf_writer_error(w)->msg);
    v = array_value(VT_GGUF_ARRAY, 1, &n3);
    cr_assert_eq(vt_gguf_writer_set_value(w, "t.nested_3", &v), VT_OK, "%s", vt_gguf_writer_error(w)->msg);
    free(nu.p);
    free(ns.p);
    free(n3.p);

    for (int i = 0; i < N_TENSORS; i++) {
        uint64_t nb = tensor_bytes(i);
        uint8_t *p = payload((size_t)nb, (unsigned)i);
        cr_assert_eq(vt_gguf_writer_add_tensor(w, tensors[i].name, tensors[i].type, tensors[i].n_dims,
                                               tensors[i].ne, p, nb, &err),
                     VT_OK, "%s", err.msg);
        free(p);
    }
    return w;
}

static void *full_bytes(uint32_t version, uint32_t alignment, size_t *n)
{
    vt_gguf_writer *w = build_full(version, alignment);
    vt_error err;
    void *out;
    cr_assert_eq(vt_gguf_writer_to_memory(w, &out, n, &err), VT_OK, "%s", err.msg);
    vt_gguf_writer_free(w);
    return out;
}

static const vt_gguf_value *must_key(const vt_gguf *g, const char *key)
{
    int64_t i = vt_gguf_find_key(g, key);
    cr_assert(i >= 0, "missing key %s", key);
    return vt_gguf_kv_value(g, (uint64_t)i);
}

static void check_full(const vt_gguf *g, uint32_t alignment)
{
    uint64_t u;
    int64_t i;
    double f;
    int b;
    vt_gguf_str s;
    cr_assert_eq(vt_gguf_alignment(g), alignment ? alignment : 32);
    cr_assert(vt_gguf_get_str(g, "general.architecture", &s) && str_is(s, "llama"));
    cr_assert(vt_gguf_get_u64(g, "t.u8", &u) && u == 200);
    cr_assert_eq(must_key(g, "t.u8")->type, VT_GGUF_U8);
    cr_assert(vt_gguf_get_i64(g, "t.i8", &i) && i == -100);
    cr_assert_eq(must_key(g, "t.i8")->type, VT_GGUF_I8);
    cr_assert(vt_gguf_get_u64(g, "t.u16", &u) && u == 65535);
    cr_assert(vt_gguf_get_i64(g, "t.i16", &i) && i == -32768);
    cr_assert(vt_gguf_get_u64(g, "llama.context_length", &u) && u == 4096);
    cr_assert(vt_gguf_get_i64(g, "t.i32", &i) && i == -123456789);
    cr_assert(!vt_gguf_get_u64(g, "t.i32", &u), "negative value must not read as unsigned");
    cr_assert(vt_gguf_get_f64(g, "llama.rope.freq_base", &f) && f == 10000.5);
    cr_assert_eq(must_key(g, "llama.rope.freq_base")->type, VT_GGUF_F32);
    cr_assert(vt_gguf_get_bool(g, "tokenizer.ggml.add_bos_token", &b) && b == 1);
    cr_assert(vt_gguf_get_str(g, "general.name", &s) && str_is(s, "hand \"built\"\n"));
    cr_assert(vt_gguf_get_u64(g, "t.u64", &u) && u == UINT64_MAX);
    cr_assert(!vt_gguf_get_i64(g, "t.u64", &i), "2^64-1 must not read as int64");
    cr_assert(vt_gguf_get_i64(g, "t.i64", &i) && i == INT64_MIN);
    cr_assert(vt_gguf_get_f64(g, "t.f64", &f) && f == -1.0 / 3.0);
    cr_assert(!vt_gguf_get_str(g, "t.u8", &s));
    cr_assert(!vt_gguf_get_u64(g, "no.such.key", &u));
    cr_assert_eq(vt_gguf_find_key(g, "no.such.key"), -1);

    const vt_gguf_value *a = must_key(g, "tokenizer.ggml.tokens");
    const char *toks[] = { "<s>", "</s>", "a", "bc", "" };
    cr_assert(a->type == VT_GGUF_ARRAY && a->elem_type == VT_GGUF_STRING && a->count == 5);
    vt_gguf_value copy = *a; /* a copy is not g's own value: the walk path */
    for (int k = 4; k >= 0; k--) {
        vt_gguf_value e, e2;
        cr_assert(vt_gguf_array_get(g, a, (uint64_t)k, &e) && str_is(e.v.str, toks[k]));
        cr_assert(vt_gguf_array_get(g, &copy, (uint64_t)k, &e2) && e2.v.str.ptr == e.v.str.ptr);
    }
    a = must_key(g, "tokenizer.ggml.token_type");
    int32_t tt[5] = { 3, 3, 1, 1, -1 };
    for (int k = 0; k < 5; k++) {
        vt_gguf_value e;
        cr_assert(vt_gguf_array_get(g, a, (uint64_t)k, &e) && e.type == VT_GGUF_I32 && e.v.i64 == tt[k]);
    }
    a = must_key(g, "t.bools");
    for (int k = 0; k < 3; k++) {
        vt_gguf_value e;
        cr_assert(vt_gguf_array_get(g, a, (uint64_t)k, &e) && e.v.b == (k > 0));
    }
    a = must_key(g, "t.f64s");
    vt_gguf_value e;
    cr_assert(vt_gguf_array_get(g, a, 1, &e) && e.v.f64 == -2e300);
    a = must_key(g, "t.empty");
    cr_assert(a->count == 0 && a->elem_type == VT_GGUF_U8 && !vt_gguf_array_get(g, a, 0, &e));

    /* [[1,2,3],[],[7]] */
    a = must_key(g, "t.nested_u32");
    cr_assert(a->elem_type == VT_GGUF_ARRAY && a->count == 3);
    vt_gguf_value sub, x;
    cr_assert(vt_gguf_array_get(g, a, 0, &sub) && sub.elem_type == VT_GGUF_U32 && sub.count == 3);
    for (int k = 0; k < 3; k++)
        cr_assert(vt_gguf_array_get(g, &sub, (uint64_t)k, &x) && x.v.u64 == (uint64_t)k + 1);
    cr_assert(vt_gguf_array_get(g, a, 1, &sub) && sub.count == 0);
    cr_assert(vt_gguf_array_get(g, a, 2, &sub) && sub.count == 1);
    cr_assert(vt_gguf_array_get(g, &sub, 0, &x) && x.v.u64 == 7);
    /* [["x","yz"],[""]] */
    a = must_key(g, "t.nested_str");
    cr_assert(vt_gguf_array_get(g, a, 0, &sub) && sub.elem_type == VT_GGUF_STRING && sub.count == 2);
    cr_assert(vt_gguf_array_get(g, &sub, 1, &x) && str_is(x.v.str, "yz"));
    cr_assert(vt_gguf_array_get(g, a, 1, &sub) && sub.count == 1);
    cr_assert(vt_gguf_array_get(g, &sub, 0, &x) && x.v.str.len == 0);
    /* [[[5,6]]] */
    a = must_key(g, "t.nested_3");
    vt_gguf_value l2, l3, l4;
    cr_assert(vt_gguf_array_get(g, a, 0, &l2) && l2.elem_type == VT_GGUF_ARRAY && l2.count == 1);
    cr_assert(vt_gguf_array_get(g, &l2, 0, &l3) && l3.elem_type == VT_GGUF_U16 && l3.count == 2);
    cr_assert(vt_gguf_array_get(g, &l3, 1, &l4) && l4.type == VT_GGUF_U16 && l4.v.u64 == 6);

    cr_assert_eq(vt_gguf_n_tensors(g), N_TENSORS);
    uint64_t a_ = vt_gguf_alignment(g);
    cr_assert_eq(vt_gguf_data_offset(g) % a_, 0);
    for (int k = 0; k < N_TENSORS; k++) {
        const vt_gguf_tensor *t = vt_gguf_tensor_at(g, (uint64_t)k);
        cr_assert(str_is(t->name, tensors[k].name));
        cr_assert_eq(vt_gguf_find_tensor(g, tensors[k].name), t);
        cr_assert_eq(t->type, tensors[k].type);
        cr_assert_eq(t->n_dims, tensors[k].n_dims);
        for (uint32_t j = 0; j < 4; j++)
            cr_assert_eq(t->ne[j], j < tensors[k].n_dims ? tensors[k].ne[j] : 1);
        cr_assert_eq(t->n_bytes, tensor_bytes(k));
        cr_assert_eq(t->offset % a_, 0);
        uint8_t *p = payload((size_t)t->n_bytes, (unsigned)k);
        cr_assert(t->n_bytes == 0 || memcmp(t->data, p, (size_t)t->n_bytes) == 0, "tensor %d data", k);
        free(p);
    }
    cr_assert_null(vt_gguf_find_tensor(g, "nope"));
}

/* ---- tests: real files ---- */

Test(gguf, vocab_files_round_trip_exactly)
{
    char **files;
    int n = vocab_files(&files);
    cr_assert(n >= N_VOCAB_FILES, "found %d ggml-vocab-*.gguf in %s, expected at least %d", n,
              VT_VOCAB_DIR, N_VOCAB_FILES);
    for (int i = 0; i < n; i++) {
        vt_error err;
        vt_gguf *g = vt_gguf_open(files[i], &err);
        cr_assert(g, "%s", err.msg);
        cr_assert(vt_gguf_version(g) == 2 || vt_gguf_version(g) == 3);
        vt_gguf_writer *w = vt_gguf_writer_from(g, &err);
        cr_assert(w, "%s", err.msg);
        void *out;
        size_t out_n;
        cr_assert_eq(vt_gguf_writer_to_memory(w, &out, &out_n, &err), VT_OK, "%s", err.msg);
        cr_assert_eq(out_n, vt_gguf_file_size(g), "%s: size", files[i]);
        cr_assert(memcmp(out, vt_gguf_file_data(g), out_n) == 0, "%s: bytes differ", files[i]);
        free(out);
        vt_gguf_writer_free(w);

        /* Every vocab file has a token list; the index and the walk agree. */
        const vt_gguf_value *tok = must_key(g, "tokenizer.ggml.tokens");
        cr_assert(tok->type == VT_GGUF_ARRAY && tok->elem_type == VT_GGUF_STRING && tok->count > 1000);
        vt_gguf_value copy = *tok;
        uint64_t probe[] = { 0, 1, tok->count / 2, tok->count - 1 };
        for (int k = 0; k < 4; k++) {
            vt_gguf_value a, b;
            cr_assert(vt_gguf_array_get(g, tok, probe[k], &a));
            cr_assert(vt_gguf_array_get(g, &copy, probe[k], &b));
            cr_assert(a.v.str.ptr == b.v.str.ptr && a.v.str.len == b.v.str.len);
        }
        vt_gguf_free(g);
    }
    free_list(files, n);
}

/* ---- tests: hand-built ---- */

Test(gguf, hand_built_round_trip)
{
    uint32_t aligns[] = { 0, 64, 1, 4096 };
    for (int v = 2; v <= 3; v++) {
        for (int ai = 0; ai < 4; ai++) {
            size_t n;
            void *bytes_ = full_bytes((uint32_t)v, aligns[ai], &n);
            vt_error err;
            vt_gguf *g = vt_gguf_open_memory(bytes_, n, "hand.gguf", &err);
            cr_assert(g, "%s", err.msg);
            cr_assert_eq(vt_gguf_version(g), (uint32_t)v);
            check_full(g, aligns[ai]);
            /* And back out again, unchanged. */
            vt_gguf_writer *w = vt_gguf_writer_from(g, &err);
            void *again;
            size_t again_n;
            cr_assert_eq(vt_gguf_writer_to_memory(w, &again, &again_n, &err), VT_OK);
            cr_assert(again_n == n && memcmp(again, bytes_, n) == 0);
            free(again);
            vt_gguf_writer_free(w);
            vt_gguf_free(g);
            free(bytes_);
        }
    }
}

Test(gguf, writer_edits_keep_order_and_data)
{
    size_t n;
    void *orig = full_bytes(3, 64, &n);
    vt_error err;
    vt_gguf *g = vt_gguf_open_memory(orig, n, "orig.gguf", &err);
    cr_assert(g, "%s", err.msg);
    vt_gguf_writer *w = vt_gguf_writer_from(g, &err);
    /* Replace in place (same position), append, add a tensor. */
    cr_assert_eq(vt_gguf_writer_set_str(w, "general.name", "renamed"), VT_OK);
    cr_assert_eq(vt_gguf_writer_set_u32(w, "new.key", 7), VT_OK);
    float extra[32];
    for (int i = 0; i < 32; i++)
        extra[i] = (float)i;
    int64_t ne[1] = { 32 };
    cr_assert_eq(vt_gguf_writer_add_tensor(w, "extra", VT_TYPE_F32, 1, ne, extra, sizeof extra, &err), VT_OK, "%s", err.msg);
    /* Refusals leave the writer usable. */
    cr_assert_eq(vt_gguf_writer_add_tensor(w, "extra", VT_TYPE_F32, 1, ne, extra, sizeof extra, &err), VT_EINPUT);
    cr_assert_eq(vt_gguf_writer_add_tensor(w, "bad", VT_TYPE_F32, 1, ne, extra, 4, &err), VT_EINPUT);
    cr_assert_eq(vt_gguf_writer_add_tensor(w, "bad", 4, 1, ne, extra, sizeof extra, &err), VT_EINPUT);
    int64_t ne5[5] = { 1, 1, 1, 1, 1 };
    cr_assert_eq(vt_gguf_writer_add_tensor(w, "bad", VT_TYPE_F32, 5, ne5, extra, 4, &err), VT_EINPUT);
    int64_t neq[1] = { 31 };
    cr_assert_eq(vt_gguf_writer_add_tensor(w, "bad", VT_TYPE_Q4_0, 1, neq, extra, 18, &err), VT_EINPUT);
    cr_assert_eq(vt_gguf_writer_set_u64(w, "general.alignment", 64), VT_EINPUT);
    cr_assert_eq(vt_gguf_writer_set_u32(w, "general.alignment", 48), VT_EINPUT);
    cr_assert_eq(vt_gguf_writer_set_u32(w, "general.alignment", 128), VT_EINPUT, "tensors at 64-multiples");
    cr_assert(strstr(vt_gguf_writer_error(w)->msg, "alignment"));
    cr_assert_eq(vt_gguf_writer_set_u32(w, "", 1), VT_EINPUT);
    vt_gguf_value big = scalar(VT_GGUF_U8, 256, 0, 0);
    cr_assert_eq(vt_gguf_writer_set_value(w, "t.u8", &big), VT_EINPUT);
    bytes junk = { 0 };
    b_int(&junk, VT_GGUF_U32, 4);
    b_int(&junk, 5, 8); /* claims 5 u32, holds none */
    vt_gguf_value bad_nested = array_value(VT_GGUF_ARRAY, 1, &junk);
    cr_assert_eq(vt_gguf_writer_set_value(w, "t.bad", &bad_nested), VT_EINPUT);
    free(junk.p);
    uint8_t two = 2;
    cr_assert_eq(vt_gguf_writer_set_array(w, "t.badbool", VT_GGUF_BOOL, &two, 1), VT_EINPUT);

    void *out;
    size_t out_n;
    cr_assert_eq(vt_gguf_writer_to_memory(w, &out, &out_n, &err), VT_OK);
    vt_gguf *h = vt_gguf_open_memory(out, out_n, "edited.gguf", &err);
    cr_assert(h, "%s", err.msg);
    cr_assert_eq(vt_gguf_n_kv(h), vt_gguf_n_kv(g) + 1);
    for (uint64_t i = 0; i < vt_gguf_n_kv(g); i++) {
        vt_gguf_str a = vt_gguf_kv_key(g, i), b = vt_gguf_kv_key(h, i);
        cr_assert(a.len == b.len && memcmp(a.ptr, b.ptr, a.len) == 0, "key order");
    }
    cr_assert(str_is(vt_gguf_kv_key(h, vt_gguf_n_kv(h) - 1), "new.key"));
    vt_gguf_str s;
    cr_assert(vt_gguf_get_str(h, "general.name", &s) && str_is(s, "renamed"));
    cr_assert_eq(vt_gguf_n_tensors(h), N_TENSORS + 1);
    for (int k = 0; k < N_TENSORS; k++) {
        const vt_gguf_tensor *a = vt_gguf_tensor_at(g, (uint64_t)k), *b = vt_gguf_tensor_at(h, (uint64_t)k);
        cr_assert(a->offset == b->offset && a->n_bytes == b->n_bytes);
        cr_assert(a->n_bytes == 0 || memcmp(a->data, b->data, a->n_bytes) == 0);
    }
    const vt_gguf_tensor *x = vt_gguf_find_tensor(h, "extra");
    cr_assert(x && x->n_bytes == sizeof extra && memcmp(x->data, extra, sizeof extra) == 0);
    cr_assert_eq(x->offset % 64, 0);
    vt_gguf_free(h);
    free(out);
    vt_gguf_writer_free(w);
    vt_gguf_free(g);
    free(orig);
}

Test(gguf, write_file_is_atomic)
{
    char dir[] = "/tmp/vt-gguf-test-XXXXXX";
    cr_assert(mkdtemp(dir));
    char path[256], sub[256];
    snprintf(path, sizeof path, "%s/out.gguf", dir);
    snprintf(sub, sizeof sub, "%s/subdir", dir);
    vt_gguf_writer *w = build_full(3, 32);
    vt_error err;
    cr_assert_eq(vt_gguf_writer_write_file(w, path, NULL, &err), VT_OK, "%s", err.msg);
    /* No clobber without overwrite: refused, naming the path. */
    cr_assert_eq(vt_gguf_writer_write_file(w, path, NULL, &err), VT_EINPUT);
    cr_assert(strstr(err.msg, path), "%s", err.msg);
    /* The output may not be one of the inputs, even with overwrite. */
    const char *in[] = { path };
    const vt_publish_opts alias = { .overwrite = 1, .inputs = in, .n_inputs = 1 };
    cr_assert_eq(vt_gguf_writer_write_file(w, path, &alias, &err), VT_EINPUT);
    /* Overwrite in place when asked. */
    const vt_publish_opts ow = { .overwrite = 1 };
    cr_assert_eq(vt_gguf_writer_write_file(w, path, &ow, &err), VT_OK, "%s", err.msg);
    vt_gguf *g = vt_gguf_open(path, &err);
    cr_assert(g, "%s", err.msg);
    check_full(g, 32);
    vt_gguf_free(g);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(st.st_mode & 0022, 0, "not group/other writable");
    /* A failing rename (onto a directory) leaves no temporary behind. */
    cr_assert_eq(mkdir(sub, 0755), 0);
    cr_assert_neq(vt_gguf_writer_write_file(w, sub, NULL, &err), VT_OK);
    char nodir[300];
    snprintf(nodir, sizeof nodir, "%s/missing/x.gguf", dir);
    cr_assert_neq(vt_gguf_writer_write_file(w, nodir, NULL, &err), VT_OK);
    DIR *d = opendir(dir);
    struct dirent *e;
    int entries = 0;
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
            entries++;
            cr_assert(strcmp(e->d_name, "out.gguf") == 0 || strcmp(e->d_name, "subdir") == 0,
                      "left behind: %s", e->d_name);
        }
    closedir(d);
    cr_assert_eq(entries, 2);
    vt_gguf_writer_free(w);
    rmdir(sub);
    unlink(path);
    rmdir(dir);
}

Test(gguf, open_errors)
{
    vt_error err;
    cr_assert_null(vt_gguf_open("/nonexistent/x.gguf", &err));
    cr_assert(err.code == VT_EINPUT && strstr(err.msg, "/nonexistent/x.gguf"));
    cr_assert_null(vt_gguf_open("/tmp", &err));
    cr_assert(err.code == VT_EINPUT && strstr(err.msg, "regular"));
    char path[] = "/tmp/vt-gguf-empty-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    cr_assert_null(vt_gguf_open(path, &err));
    cr_assert(err.code == VT_EINPUT && strstr(err.msg, "offset 0") && strstr(err.msg, "magic"), "%s", err.msg);
    unlink(path);
    cr_assert_null(vt_gguf_open_memory(NULL, 0, "null.gguf", &err));
    cr_assert(strstr(err.msg, "null.gguf: offset 0"));
}

/* Specific refusals with the field and offset they must name. */
Test(gguf, specific_refusals)
{
    size_t n;
    uint8_t *b = full_bytes(3, 64, &n);
    layout l;
    map_file(&l, b, n);
    vt_error err;
    struct { size_t off; int width; uint64_t val; const char *want; } cases[] = {
        { 4, 4, 1, "offset 4: version: 1: expected 2 or 3" },
        { 8, 8, UINT64_MAX, "offset 8: tensor_count: 18446744073709551615: expected at most" },
        { 16, 8, (uint64_t)1 << 32, "offset 16: kv_count: 4294967296: expected at most" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint8_t *c = malloc(n);
        memcpy(c, b, n);
        wr(c + cases[i].off, cases[i].val, cases[i].width);
        cr_assert_null(vt_gguf_open_memory(c, n, "x.gguf", &err));
        cr_assert(strstr(err.msg, cases[i].want), "got: %s", err.msg);
        cr_assert(strncmp(err.msg, "x.gguf: ", 8) == 0);
        free(c);
    }
    /* Field kinds, located by the map. */
    for (size_t i = 0; i < l.nf; i++) {
        uint8_t *c = malloc(n);
        memcpy(c, b, n);
        const char *want = NULL;
        switch (l.f[i].kind) {
        case F_NDIMS: wr(c + l.f[i].off, 5, 4); want = "n_dims: 5: expected 1 to 4"; break;
        case F_TTYPE: wr(c + l.f[i].off, 4, 4); want = "type: 4: expected a known ggml type"; break;
        case F_TOFF: wr(c + l.f[i].off, rd64(c + l.f[i].off) + 1, 8); want = "expected a multiple of the alignment 64"; break;
        case F_ALIGN: wr(c + l.f[i].off, 48, 4); want = "48: expected a nonzero power of two"; break;
        case F_VTYPE: wr(c + l.f[i].off, 13, 4); want = "type: 13: expected a value type 0..12"; break;
        case F_BOOL: c[l.f[i].off] = 2; want = "2: expected a bool, 0 or 1"; break;
        default: break;
        }
        if (want) {
            cr_assert_null(vt_gguf_open_memory(c, n, "x.gguf", &err));
            cr_assert(strstr(err.msg, want), "got: %s (wanted %s)", err.msg, want);
            char at[32];
            snprintf(at, sizeof at, "offset %zu:", l.f[i].off);
            cr_assert(strstr(err.msg, at), "got: %s (wanted %s)", err.msg, at);
        }
        free(c);
    }
    /* n_dims 0 too. */
    for (size_t i = 0; i < l.nf; i++) {
        if (l.f[i].kind != F_NDIMS)
            continue;
        uint8_t *c = malloc(n);
        memcpy(c, b, n);
        wr(c + l.f[i].off, 0, 4);
        cr_assert_null(vt_gguf_open_memory(c, n, "x.gguf", &err));
        cr_assert(strstr(err.msg, "n_dims: 0: expected 1 to 4"), "%s", err.msg);
        free(c);
        break;
    }
    free_layout(&l);
    free(b);

    /* Duplicate key and duplicate tensor name: built with distinct names of
     * equal length, then patched. */
    vt_gguf_writer *w = vt_gguf_writer_new(3, &err);
    vt_gguf_writer_set_u32(w, "key.a", 1);
    vt_gguf_writer_set_u32(w, "key.b", 2);
    float z[4] = { 0 };
    int64_t ne[1] = { 4 };
    vt_gguf_writer_add_tensor(w, "t.a", VT_TYPE_F32, 1, ne, z, sizeof z, &err);
    vt_gguf_writer_add_tensor(w, "t.b", VT_TYPE_F32, 1, ne, z, sizeof z, &err);
    void *out;
    cr_assert_eq(vt_gguf_writer_to_memory(w, &out, &n, &err), VT_OK);
    vt_gguf_writer_free(w);
    uint8_t *c = out;
    uint8_t *k = memmem(c, n, "key.b", 5), *t = memmem(c, n, "t.b", 3);
    cr_assert(k && t);
    k[4] = 'a';
    cr_assert_null(vt_gguf_open_memory(c, n, "dup.gguf", &err));
    cr_assert(strstr(err.msg, "duplicate of kv[0]"), "%s", err.msg);
    k[4] = 'b';
    t[2] = 'a';
    cr_assert_null(vt_gguf_open_memory(c, n, "dup.gguf", &err));
    cr_assert(strstr(err.msg, "duplicate of tensor[0]"), "%s", err.msg);
    t[2] = 'b';
    vt_gguf *g = vt_gguf_open_memory(c, n, "ok.gguf", &err);
    cr_assert_not_null(g, "%s", err.msg);
    vt_gguf_free(g);
    /* Overlapping tensors (issue 19; llama.cpp refuses them too): t.b's
     * offset (after its name, n_dims, one ne and the type) moved onto t.a's
     * bytes; told at t.b, the later one, naming the other. */
    uint8_t *toff = t + 3 + 4 + 8 + 4;
    uint64_t was = rd64(toff);
    cr_assert_gt(was, 0);
    wr(toff, 0, 8);
    cr_assert_null(vt_gguf_open_memory(c, n, "overlap.gguf", &err));
    cr_assert(strstr(err.msg, "tensor[1]") && strstr(err.msg, "expected no overlap with tensor[0] 't.a'"), "%s",
              err.msg);
    wr(toff, was, 8);
    g = vt_gguf_open_memory(c, n, "ok.gguf", &err);
    cr_assert_not_null(g, "%s", err.msg);
    vt_gguf_free(g);
    free(out);
}

Test(gguf, nesting_depth_is_limited)
{
    /* Arrays nested VT_GGUF_MAX_DEPTH deep are accepted, one deeper refused. */
    for (int depth = VT_GGUF_MAX_DEPTH; depth <= VT_GGUF_MAX_DEPTH + 1; depth++) {
        bytes b = { 0 };
        b_put(&b, "GGUF", 4);
        b_int(&b, 3, 4);
        b_int(&b, 0, 8);
        b_int(&b, 1, 8);
        b_str(&b, "deep");
        b_int(&b, VT_GGUF_ARRAY, 4);
        for (int i = 1; i < depth; i++) {
            b_int(&b, VT_GGUF_ARRAY, 4);
            b_int(&b, 1, 8);
        }
        b_int(&b, VT_GGUF_U8, 4);
        b_int(&b, 1, 8);
        b_int(&b, 42, 1);
        vt_error err;
        stats st = { 0 };
        check_case(b.p, b.n, "deep.gguf", 100, &st);
        vt_gguf *g = vt_gguf_open_memory(b.p, b.n, "deep.gguf", &err);
        if (depth <= VT_GGUF_MAX_DEPTH) {
            cr_assert(g, "%s", err.msg);
            vt_gguf_free(g);
        } else {
            cr_assert_null(g);
            cr_assert(strstr(err.msg, "nested"), "%s", err.msg);
        }
        free(b.p);
    }
}

/* ---- fuzzing ---- */

static const uint64_t huge[] = { UINT64_MAX, (uint64_t)1 << 63, (uint64_t)1 << 32,
                                 (uint64_t)INT64_MAX, 0x8000000000000001ull };

/* Mutations of one field, each run as a case. few: only the two or three
 * values most likely to break a bound (used on the multi-megabyte files,
 * where each case copies the whole file). */
static void mutate_field(const uint8_t *b, size_t n, const field *f, uint32_t alignment, int few,
                         const char *name, uint64_t budget, stats *st)
{
    uint64_t vals[64];
    int nv = 0, width = 4;
    uint64_t orig = f->kind == F_BOOL ? b[f->off] : rd32(b + f->off);
    switch (f->kind) {
    case F_COUNT: case F_LEN: case F_ELEN: case F_NE: case F_TOFF:
        width = 8;
        orig = rd64(b + f->off);
        if (few) {
            /* Three of the six, chosen at random. */
            uint64_t pick[] = { UINT64_MAX, (uint64_t)1 << 63, (uint64_t)1 << 32, n + 1, orig + 1, orig - 1 };
            for (int i = 5; i > 0; i--) {
                int j = (int)(rnd() % (uint64_t)(i + 1));
                uint64_t t = pick[i];
                pick[i] = pick[j];
                pick[j] = t;
            }
            memcpy(vals, pick, 3 * sizeof *vals);
            nv = 3;
            break;
        }
        for (size_t i = 0; i < sizeof huge / sizeof huge[0]; i++)
            vals[nv++] = huge[i];
        vals[nv++] = n + 1;
        vals[nv++] = n;
        vals[nv++] = orig + 1;
        vals[nv++] = orig - 1;
        vals[nv++] = 0;
        if (f->kind == F_TOFF) {
            vals[nv++] = orig + alignment;     /* aligned, may run past the end */
            vals[nv++] = orig + alignment / 2; /* misaligned unless alignment 1 */
            vals[nv++] = n / alignment * alignment;
        }
        break;
    case F_VERSION: { uint64_t v[] = { 0, 1, 2, 3, 4, 0x03000000, UINT32_MAX }; memcpy(vals, v, sizeof v); nv = 7; break; }
    case F_VTYPE: case F_ETYPE: {
        uint64_t v[] = { 13, 9, orig ^ 1, UINT32_MAX, 8, 0, 7, 12 };
        memcpy(vals, v, sizeof v);
        nv = few ? 3 : 8;
        break;
    }
    case F_NDIMS: { uint64_t v[] = { 0, 5, UINT32_MAX, 1, 4, 3 }; memcpy(vals, v, sizeof v); nv = 6; break; }
    case F_TTYPE:
        for (int t = -1; t <= 44; t++) /* every id, known or not, and beyond */
            vals[nv++] = (uint32_t)t;
        vals[nv++] = 0x7fffffff;
        break;
    case F_ALIGN: { uint64_t v[] = { 0, 1, 3, 16, 48, 64, 4096, 1u << 31, UINT32_MAX }; memcpy(vals, v, sizeof v); nv = 9; break; }
    case F_BOOL: vals[0] = 2; vals[1] = 0xff; vals[2] = 1; nv = 3; width = 1; break;
    }
    uint8_t *c = malloc(n);
    for (int i = 0; i < nv; i++) {
        memcpy(c, b, n);
        wr(c + f->off, vals[i], width);
        check_case(c, n, name, budget, st);
    }
    free(c);
}

/* Random byte flips, half of them aimed at the metadata. */
static void flip_case(const uint8_t *b, size_t n, const layout *l, uint8_t *c, const char *name,
                      uint64_t budget, stats *st)
{
    memcpy(c, b, n);
    int flips = 1 + (int)(rnd() % 6);
    for (int k = 0; k < flips; k++) {
        size_t lim = (rnd() & 1) && l->nb > 2 ? l->bound[l->nb - 2] + 1 : n;
        c[rnd() % (lim < n ? lim : n)] ^= (uint8_t)(1 + rnd() % 255);
    }
    check_case(c, n, name, budget, st);
}

/* The small hand-built files, exhaustively: every truncation point, every
 * byte flipped three ways, random multi-byte flips, and every field
 * overwritten with every value of its kind. */
static void fuzz_small(const uint8_t *b, size_t n, const char *name, stats *st)
{
    layout l;
    map_file(&l, b, n);
    uint8_t *c = malloc(n);
    for (size_t at = 0; at <= n; at++)
        check_case(b, at, name, UINT64_MAX, st);
    static const uint8_t x[] = { 0x01, 0x80, 0xff };
    for (size_t at = 0; at < n; at++) {
        for (int k = 0; k < 3; k++) {
            memcpy(c, b, n);
            c[at] ^= x[k];
            check_case(c, n, name, UINT64_MAX, st);
        }
    }
    for (int r = 0; r < 2000; r++)
        flip_case(b, n, &l, c, name, UINT64_MAX, st);
    for (size_t i = 0; i < l.nf; i++)
        mutate_field(b, n, &l.f[i], l.alignment, 0, name, UINT64_MAX, st);
    free(c);
    free_layout(&l);
}

/* A vocab file, sampled: each case copies the whole file (megabytes, and
 * under ASan a fresh mapping), so the work is bounded by bytes copied. The
 * header gets every mutation; short prefixes (cheap) are truncated densely;
 * then a shuffled pool of truncations at each section boundary, overwrites
 * of each key's length, type and value fields, of a few string lengths in
 * the token arrays, and random flips, as many as the budget allows. */
enum { VOCAB_BYTES_PER_FILE = 48 << 20 };

typedef struct op { int kind; size_t a; } op; /* 0: truncate at a; 1: field a; 2: flips */

static void fuzz_vocab(const uint8_t *b, size_t n, const char *name, stats *st)
{
    layout l;
    map_file(&l, b, n);
    uint8_t *c = malloc(n);
    const uint64_t budget = 64;

    for (size_t i = 0; i < l.nf && l.f[i].off < 24; i++)
        mutate_field(b, n, &l.f[i], l.alignment, 0, name, budget, st);
    for (size_t at = 0; at < 320 && at < n; at += 5)
        check_case(b, at, name, budget, st);
    for (size_t i = 0; i < l.nb; i++) /* every section start */
        if (l.major[i])
            check_case(b, l.bound[i], name, budget, st);

    op *pool = malloc((l.nb + l.nf + 64) * sizeof *pool);
    size_t np = 0, n_elen = 0;
    for (size_t i = 0; i < l.nb; i++) {
        if (!l.major[i])
            pool[np++] = (op){ 0, l.bound[i] };
        else if (l.bound[i] > 0 && l.bound[i] <= n)
            pool[np++] = (op){ 0, l.bound[i] - 1 + (size_t)(rnd() % 3) * (l.bound[i] < n) };
    }
    for (size_t i = 0; i < l.nf; i++) {
        if (l.f[i].kind == F_ELEN)
            n_elen++;
        else if (l.f[i].off >= 24)
            pool[np++] = (op){ 1, i };
    }
    for (int k = 0; k < 16 && n_elen; k++) {
        size_t pick = (size_t)(rnd() % n_elen), seen = 0;
        for (size_t i = 0; i < l.nf; i++)
            if (l.f[i].kind == F_ELEN && seen++ == pick)
                pool[np++] = (op){ 1, i };
    }
    for (int k = 0; k < 32; k++)
        pool[np++] = (op){ 2, 0 };
    for (size_t i = np; i > 1; i--) {
        size_t j = (size_t)(rnd() % i);
        op t = pool[i - 1];
        pool[i - 1] = pool[j];
        pool[j] = t;
    }
    size_t spent = 0;
    for (size_t i = 0; i < np && (spent < VOCAB_BYTES_PER_FILE || i < 8); i++) {
        long before = st->cases;
        if (pool[i].kind == 0)
            check_case(b, pool[i].a, name, budget, st);
        else if (pool[i].kind == 1)
            mutate_field(b, n, &l.f[pool[i].a], l.alignment, 1, name, budget, st);
        else
            flip_case(b, n, &l, c, name, budget, st);
        spent += (size_t)(st->cases - before) * n;
    }
    free(pool);
    free(c);
    free_layout(&l);
}

Test(gguf, fuzz_hand_built_files, .timeout = 600)
{
    stats st = { 0 };
    /* With tensors and a 64-byte alignment (v3), and with the default
     * alignment (v2). */
    size_t n1, n2;
    uint8_t *a = full_bytes(3, 64, &n1);
    uint8_t *b = full_bytes(2, 0, &n2);
    fuzz_small(a, n1, "hand64.gguf", &st);
    fuzz_small(b, n2, "hand-v2.gguf", &st);
    free(a);
    free(b);
    cr_log_info("hand-built fuzz: %ld cases, %ld refused, %ld accepted", st.cases, st.refused, st.accepted);
    cr_assert(st.cases >= 10000, "only %ld cases", st.cases);
    cr_assert(st.refused > 0 && st.accepted > 0);
}

Test(gguf, fuzz_vocab_files, .timeout = 600)
{
    stats st = { 0 };
    char **files;
    int n = vocab_files(&files);
    cr_assert(n >= N_VOCAB_FILES);
    for (int i = 0; i < n; i++) {
        size_t size;
        uint8_t *b = slurp(files[i], &size);
        const char *base = strrchr(files[i], '/') + 1;
        fuzz_vocab(b, size, base, &st);
        free(b);
    }
    free_list(files, n);
    cr_log_info("vocab fuzz: %ld cases, %ld refused, %ld accepted", st.cases, st.refused, st.accepted);
    cr_assert(st.cases >= 80L * N_VOCAB_FILES, "only %ld cases", st.cases);
}

/* ---- the command line ---- */

typedef struct run_result { int status; char *out, *err; size_t out_n, err_n; } run_result;

static char *read_all(const char *path, size_t *n)
{
    return (char *)slurp(path, n);
}

static run_result run_vt(const char *const *args)
{
    char dir[] = "/tmp/vt-gguf-cli-XXXXXX";
    cr_assert(mkdtemp(dir));
    char out_path[128], err_path[128];
    snprintf(out_path, sizeof out_path, "%s/out", dir);
    snprintf(err_path, sizeof err_path, "%s/err", dir);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        int o = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int e = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0)
            _exit(126);
        char *argv[16];
        int k = 0;
        argv[k++] = (char *)VT_BIN;
        for (int i = 0; args[i] && k < 15; i++)
            argv[k++] = (char *)args[i];
        argv[k] = NULL;
        execv(VT_BIN, argv);
        _exit(127);
    }
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    run_result r;
    r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.out = read_all(out_path, &r.out_n);
    r.err = read_all(err_path, &r.err_n);
    r.out = realloc(r.out, r.out_n + 1);
    r.out[r.out_n] = '\0';
    r.err = realloc(r.err, r.err_n + 1);
    r.err[r.err_n] = '\0';
    unlink(out_path);
    unlink(err_path);
    rmdir(dir);
    return r;
}

static void free_run(run_result *r)
{
    free(r->out);
    free(r->err);
}

static size_t count_lines(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

#define QWEN2 VT_VOCAB_DIR "/ggml-vocab-qwen2.gguf"

Test(gguf_cli, info_prints_architecture_and_vocab)
{
    const char *args[] = { "gguf", "info", QWEN2, NULL };
    run_result r = run_vt(args);
    cr_assert_eq(r.status, 0, "exit %d, stderr: %s", r.status, r.err);
    cr_assert(strstr(r.out, "architecture: qwen2\n"), "%s", r.out);
    cr_assert(strstr(r.out, "vocabulary size: 151936\n"), "%s", r.out);
    cr_assert(strstr(r.out, "version: 3\n"));
    cr_assert(strstr(r.out, "context_length: 32768\n"));
    cr_assert_eq(r.err_n, 0, "stderr: %s", r.err);
    free_run(&r);
}

Test(gguf_cli, info_json_parses)
{
    const char *args[] = { "gguf", "info", QWEN2, "--json", NULL };
    run_result r = run_vt(args);
    cr_assert_eq(r.status, 0, "stderr: %s", r.err);
    cJSON *j = cJSON_Parse(r.out);
    cr_assert(j, "not JSON: %.200s", r.out);
    const cJSON *arch = cJSON_GetObjectItemCaseSensitive(j, "architecture");
    cr_assert(cJSON_IsString(arch) && strcmp(arch->valuestring, "qwen2") == 0);
    const cJSON *tok = cJSON_GetObjectItemCaseSensitive(j, "tokenizer");
    const cJSON *vs = cJSON_GetObjectItemCaseSensitive(tok, "vocab_size");
    cr_assert(cJSON_IsNumber(vs) && vs->valuedouble == 151936);
    const cJSON *hp = cJSON_GetObjectItemCaseSensitive(j, "hyper_parameters");
    const cJSON *ctx = cJSON_GetObjectItemCaseSensitive(hp, "context_length");
    cr_assert(cJSON_IsNumber(ctx) && ctx->valuedouble == 32768);
    cr_assert(cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(j, "tensors")));
    cJSON_Delete(j);
    free_run(&r);
}

Test(gguf_cli, info_json_with_tensors_and_nested_arrays)
{
    char dir[] = "/tmp/vt-gguf-cli-XXXXXX";
    cr_assert(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/hand.gguf", dir);
    size_t n;
    void *b = full_bytes(3, 64, &n);
    spit(path, b, n);
    free(b);
    const char *args[] = { "gguf", "info", "--json", path, NULL };
    run_result r = run_vt(args);
    cr_assert_eq(r.status, 0, "stderr: %s", r.err);
    cJSON *j = cJSON_Parse(r.out);
    cr_assert(j, "not JSON: %.200s", r.out);
    const cJSON *ts = cJSON_GetObjectItemCaseSensitive(j, "tensors");
    cr_assert_eq(cJSON_GetArraySize(ts), N_TENSORS);
    const cJSON *tot = cJSON_GetObjectItemCaseSensitive(j, "totals");
    const cJSON *f32 = cJSON_GetObjectItemCaseSensitive(tot, "F32");
    cr_assert(cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(f32, "count")) &&
              cJSON_GetObjectItemCaseSensitive(f32, "count")->valuedouble == 2);
    cJSON_Delete(j);
    free_run(&r);

    const char *targs[] = { "gguf", "info", path, NULL };
    r = run_vt(targs);
    cr_assert_eq(r.status, 0);
    cr_assert(strstr(r.out, "Q4_K"), "%s", r.out);
    cr_assert(strstr(r.out, "[32, 1, 2, 1]"), "%s", r.out);
    free_run(&r);
    unlink(path);
    rmdir(dir);
}

Test(gguf_cli, truncated_file_is_one_line_exit_2)
{
    char dir[] = "/tmp/vt-gguf-cli-XXXXXX";
    cr_assert(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/trunc.gguf", dir);
    size_t n;
    uint8_t *b = slurp(QWEN2, &n);
    spit(path, b, 100000);
    free(b);
    const char *args[] = { "gguf", "info", path, NULL };
    run_result r = run_vt(args);
    cr_assert_eq(r.status, 2, "exit %d", r.status);
    cr_assert_eq(count_lines(r.err), 1, "stderr: %s", r.err);
    cr_assert(r.err_n && r.err[r.err_n - 1] == '\n');
    cr_assert(strstr(r.err, path) == r.err, "stderr: %s", r.err);
    cr_assert(strstr(r.err, "offset"), "stderr: %s", r.err);
    cr_assert_eq(r.out_n, 0, "stdout: %s", r.out);
    free_run(&r);
    unlink(path);
    rmdir(dir);
}

Test(gguf_cli, rewrite_is_identical)
{
    char dir[] = "/tmp/vt-gguf-cli-XXXXXX";
    cr_assert(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/copy.gguf", dir);
    const char *args[] = { "gguf", "rewrite", QWEN2, path, NULL };
    run_result r = run_vt(args);
    cr_assert_eq(r.status, 0, "stderr: %s", r.err);
    size_t a_n, b_n;
    uint8_t *a = slurp(QWEN2, &a_n), *b = slurp(path, &b_n);
    cr_assert(a_n == b_n && memcmp(a, b, a_n) == 0);
    free(a);
    free(b);
    free_run(&r);
    unlink(path);
    rmdir(dir);
}

Test(gguf_cli, usage)
{
    const char *help[] = { "gguf", "--help", NULL };
    run_result r = run_vt(help);
    cr_assert_eq(r.status, 0);
    cr_assert(strstr(r.out, "usage: vt gguf info FILE [--json]"));
    free_run(&r);
    const char *bad[][5] = {
        { "gguf", NULL },
        { "gguf", "frobnicate", NULL },
        { "gguf", "info", NULL },
        { "gguf", "info", QWEN2, "--bogus", NULL },
        { "gguf", "rewrite", QWEN2, NULL },
        { "gguf", "info", "/nonexistent.gguf", NULL },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        r = run_vt(bad[i]);
        cr_assert_eq(r.status, 2, "case %zu: exit %d", i, r.status);
        cr_assert_eq(count_lines(r.err), 1, "case %zu: stderr: %s", i, r.err);
        cr_assert_eq(r.out_n, 0);
        free_run(&r);
    }
}
