/* GGUF reader. The whole file is validated when it is opened, so accessors
 * never need to check anything again: every count is bounded by the bytes
 * left in the file before anything is allocated for it, every length and
 * extent is compared with subtraction from the file size (never by adding
 * to an offset that could wrap), and products use the overflow builtins.
 * Integers are decoded from little-endian bytes explicitly, so neither host
 * byte order nor alignment of the mapping matters. */
#include "gguf_file.h"
#include "../common/vt_sort.h"
#include "codec.h"
#include "../common/vt_input.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Smallest possible encodings, used to bound counts before allocating. */
enum {
    HEADER_BYTES = 4 + 4 + 8 + 8,         /* magic, version, tensor_count, kv_count */
    MIN_KV_BYTES = 8 + 1 + 4 + 1,         /* key length, 1-byte key, type, 1-byte value */
    MIN_TINFO_BYTES = 8 + 4 + 8 + 4 + 8,  /* name length, n_dims, one ne, type, offset */
    MAX_DIMS = 4,
    /* String arrays keep the offset of every INDEX_STRIDE-th element: O(1)
     * access (a walk of at most INDEX_STRIDE-1 lengths) for an index 1/16
     * the size of a full one, which matters for 150k-token vocabularies. */
    INDEX_STRIDE = 16
};

typedef unsigned long long ull; /* for printf: uint64_t is not always "unsigned long long" */
typedef long long sll;

struct kv {
    vt_gguf_str key;
    vt_gguf_value val;
    uint64_t type_pos;   /* where the type field is, for errors found later */
    uint64_t *str_index; /* string arrays: offset from val.raw of every INDEX_STRIDE-th element */
};

struct tinfo {
    vt_gguf_tensor t;
    uint64_t offset_pos; /* where the offset field is, for extent errors */
};

/* Open-addressing set of names, so duplicate checks and lookups stay linear
 * even for files with very many keys or tensors. Slots hold index + 1. */
typedef struct name_set {
    uint64_t *slot;
    uint64_t *hash; /* per slot, so growing does not need the names */
    uint64_t cap, used;
} name_set;

struct vt_gguf {
    const uint8_t *data;
    uint64_t size;
    void *map; /* our mmap, or NULL for open_memory */
    size_t map_size;
    char *name;
    uint32_t version, alignment;
    uint64_t header_size, data_offset;
    struct kv *kv;
    uint64_t n_kv, kv_cap;
    struct tinfo *ti;
    uint64_t n_tensors, ti_cap;
    name_set keys, tnames;
};

typedef struct parser {
    vt_gguf *g;
    vt_error *err;
    const uint8_t *d;
    uint64_t size;
    char ctx[192];                  /* "kv[3] 'general.name'" or "" */
    uint64_t path[VT_GGUF_MAX_DEPTH]; /* element indices inside arrays */
    int depth;
} parser;

/* ---- little-endian decoding ---- */

static uint16_t le16(const uint8_t *b) { return (uint16_t)(b[0] | (b[1] << 8)); }
static uint32_t le32(const uint8_t *b)
{
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}
static uint64_t le64(const uint8_t *b) { return (uint64_t)le32(b) | (uint64_t)le32(b + 4) << 32; }

/* Bytes of a fixed-size value type; 0 for strings, arrays and unknown. */
static uint64_t scalar_width(uint32_t t)
{
    switch (t) {
    case VT_GGUF_U8: case VT_GGUF_I8: case VT_GGUF_BOOL: return 1;
    case VT_GGUF_U16: case VT_GGUF_I16: return 2;
    case VT_GGUF_U32: case VT_GGUF_I32: case VT_GGUF_F32: return 4;
    case VT_GGUF_U64: case VT_GGUF_I64: case VT_GGUF_F64: return 8;
    default: return 0;
    }
}

/* Fewest bytes one element of type t can take: bounds array counts. */
static uint64_t min_elem_bytes(uint32_t t)
{
    if (t == VT_GGUF_STRING)
        return 8;
    if (t == VT_GGUF_ARRAY)
        return 4 + 8;
    return scalar_width(t);
}

const char *vt_gguf_vtype_name(vt_gguf_vtype t)
{
    static const char *const names[] = { "u8", "i8", "u16", "i16", "u32", "i32", "f32",
                                         "bool", "string", "array", "u64", "i64", "f64" };
    return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "?";
}

static void decode_scalar(uint32_t t, const uint8_t *b, vt_gguf_value *v)
{
    switch (t) {
    case VT_GGUF_U8: v->v.u64 = b[0]; break;
    case VT_GGUF_U16: v->v.u64 = le16(b); break;
    case VT_GGUF_U32: v->v.u64 = le32(b); break;
    case VT_GGUF_U64: v->v.u64 = le64(b); break;
    case VT_GGUF_I8: { int8_t x; memcpy(&x, b, 1); v->v.i64 = x; break; }
    case VT_GGUF_I16: { uint16_t u = le16(b); int16_t x; memcpy(&x, &u, 2); v->v.i64 = x; break; }
    case VT_GGUF_I32: { uint32_t u = le32(b); int32_t x; memcpy(&x, &u, 4); v->v.i64 = x; break; }
    case VT_GGUF_I64: { uint64_t u = le64(b); memcpy(&v->v.i64, &u, 8); break; }
    case VT_GGUF_F32: { uint32_t u = le32(b); float f; memcpy(&f, &u, 4); v->v.f64 = f; break; }
    case VT_GGUF_F64: { uint64_t u = le64(b); memcpy(&v->v.f64, &u, 8); break; }
    case VT_GGUF_BOOL: v->v.b = b[0] != 0; break;
    default: break;
    }
}

/* ---- errors ---- */

/* A name from the file, made printable and short for a one-line message. */
static void escape(char *dst, size_t cap, const char *s, uint64_t len)
{
    size_t n = 0;
    for (uint64_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (n + 8 >= cap || i == 48) {
            snprintf(dst + n, cap - n, "...");
            return;
        }
        if (c >= 0x20 && c < 0x7f && c != '\'' && c != '\\')
            dst[n++] = (char)c;
        else
            n += (size_t)snprintf(dst + n, cap - n, "\\x%02x", c);
    }
    dst[n] = '\0';
}

/* "<file>: offset <off>: <ctx><[i]...>.<field>: <found>: expected <what>";
 * fmt supplies "<found>: expected <what>". Always returns -1. */
__attribute__((format(printf, 4, 5)))
static int fail(parser *p, uint64_t off, const char *field, const char *fmt, ...)
{
    char where[320];
    size_t n = (size_t)snprintf(where, sizeof where, "%s", p->ctx);
    for (int i = 0; i < p->depth && n < sizeof where; i++)
        n += (size_t)snprintf(where + n, sizeof where - n, "[%llu]", (ull)p->path[i]);
    if (field[0] && n < sizeof where)
        snprintf(where + n, sizeof where - n, "%s%s", n ? "." : "", field);
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    vt_error_set(p->err, VT_EINPUT, "%s: offset %llu: %s: %s", p->g->name, (ull)off, where, what);
    return -1;
}

static int fail_oom(parser *p, uint64_t off, const char *field)
{
    return fail(p, off, field, "out of memory: expected to allocate an index for it");
}

/* Tensors whose bytes overlap are refused, as llama.cpp refuses them: one
 * byte read as two tensors is a crafted file (every tensor at offset 0), and
 * a rewrite could not reproduce it. Sorted by offset, n log n. */
typedef struct extent {
    uint64_t offset, n_bytes, index;
} extent;

static void set_ctx(parser *p, const char *what, uint64_t i, const vt_gguf_str *name);

static int by_offset(const void *a, const void *b)
{
    const extent *x = a, *y = b;
    if (x->offset != y->offset)
        return x->offset < y->offset ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

static int check_no_overlap(parser *p, vt_gguf *g, uint64_t n)
{
    if (n < 2)
        return 0;
    extent *e = malloc(n * sizeof *e);
    if (!e)
        return fail_oom(p, 0, "tensors");
    uint64_t k = 0;
    for (uint64_t i = 0; i < n; i++)
        if (g->ti[i].t.n_bytes) /* an empty tensor overlaps nothing */
            e[k++] = (extent){ g->ti[i].t.offset, g->ti[i].t.n_bytes, i };
    vt_sort(e, k, sizeof *e, by_offset);
    for (uint64_t i = 1; i < k; i++)
        if (e[i - 1].offset + e[i - 1].n_bytes > e[i].offset) {
            /* told at the later of the two in the file */
            const extent *a = e[i - 1].index < e[i].index ? &e[i - 1] : &e[i];
            const extent *b = a == &e[i] ? &e[i - 1] : &e[i];
            struct tinfo *tb = &g->ti[b->index];
            const vt_gguf_str *an = &g->ti[a->index].t.name;
            char other[200];
            snprintf(other, sizeof other, "tensor[%llu] '%.*s'", (ull)a->index,
                     (int)(an->len > 100 ? 100 : an->len), an->ptr);
            set_ctx(p, "tensor", b->index, &tb->t.name);
            fail(p, tb->offset_pos, "offset", "%llu + %llu bytes: expected no overlap with %s (%llu + %llu bytes)",
                 (ull)tb->t.offset, (ull)tb->t.n_bytes, other, (ull)a->offset, (ull)a->n_bytes);
            free(e);
            return -1;
        }
    free(e);
    return 0;
}

/* ---- bounded reads: pos is always <= size, so size - pos never wraps ---- */

static int need(parser *p, uint64_t pos, uint64_t n, const char *field)
{
    uint64_t left = p->size - pos;
    if (n <= left)
        return 0;
    return fail(p, pos, field, "end of file (%llu bytes left): expected %llu bytes", (ull)left, (ull)n);
}

static int rd_u32(parser *p, uint64_t *pos, const char *field, uint32_t *out)
{
    if (need(p, *pos, 4, field))
        return -1;
    *out = le32(p->d + *pos);
    *pos += 4;
    return 0;
}

static int rd_u64(parser *p, uint64_t *pos, const char *field, uint64_t *out)
{
    if (need(p, *pos, 8, field))
        return -1;
    *out = le64(p->d + *pos);
    *pos += 8;
    return 0;
}

static int rd_str(parser *p, uint64_t *pos, const char *len_field, vt_gguf_str *out)
{
    uint64_t len;
    if (rd_u64(p, pos, len_field, &len))
        return -1;
    uint64_t left = p->size - *pos;
    if (len > left)
        return fail(p, *pos - 8, len_field, "%llu: expected at most %llu (the bytes left in the file)",
                    (ull)len, (ull)left);
    out->ptr = (const char *)p->d + *pos;
    out->len = len;
    *pos += len;
    return 0;
}

/* ---- name sets ---- */

static uint64_t hash_bytes(const char *s, uint64_t len)
{
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
    for (uint64_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
    return h;
}

/* names + i*stride is the vt_gguf_str of entry i. Returns index + 1, or 0. */
static uint64_t set_find(const name_set *s, const void *names, size_t stride, const char *key,
                         uint64_t len, uint64_t h)
{
    if (!s->cap)
        return 0;
    for (uint64_t i = h & (s->cap - 1);; i = (i + 1) & (s->cap - 1)) {
        uint64_t idx = s->slot[i];
        if (!idx)
            return 0;
        if (s->hash[i] != h)
            continue;
        const vt_gguf_str *n = (const vt_gguf_str *)((const char *)names + (idx - 1) * stride);
        if (n->len == len && memcmp(n->ptr, key, len) == 0)
            return idx;
    }
}

static void set_put_raw(name_set *s, uint64_t idx1, uint64_t h)
{
    uint64_t i = h & (s->cap - 1);
    while (s->slot[i])
        i = (i + 1) & (s->cap - 1);
    s->slot[i] = idx1;
    s->hash[i] = h;
    s->used++;
}

/* Grows at half load; entries are only added for names already parsed, so
 * the table is proportional to what the file really contains. */
static int set_add(name_set *s, uint64_t idx1, uint64_t h)
{
    if ((s->used + 1) * 2 > s->cap) {
        name_set n = { 0 };
        n.cap = s->cap ? s->cap * 2 : 16;
        n.slot = calloc(n.cap, sizeof *n.slot);
        n.hash = calloc(n.cap, sizeof *n.hash);
        if (!n.slot || !n.hash) {
            free(n.slot);
            free(n.hash);
            return -1;
        }
        for (uint64_t i = 0; i < s->cap; i++)
            if (s->slot[i])
                set_put_raw(&n, s->slot[i], s->hash[i]);
        free(s->slot);
        free(s->hash);
        *s = n;
    }
    set_put_raw(s, idx1, h);
    return 0;
}

static void set_free(name_set *s)
{
    free(s->slot);
    free(s->hash);
}

/* Doubling growth of an array whose final size was checked against the file. */
static int grow(void **arr, uint64_t *cap, uint64_t need_n, size_t elem)
{
    if (need_n <= *cap)
        return 0;
    uint64_t n = *cap ? *cap * 2 : 16;
    if (n < need_n)
        n = need_n;
    size_t bytes;
    if (__builtin_mul_overflow(n, elem, &bytes))
        return -1;
    void *p = realloc(*arr, bytes);
    if (!p)
        return -1;
    memset((char *)p + *cap * elem, 0, bytes - *cap * elem);
    *arr = p;
    *cap = n;
    return 0;
}

/* ---- values ---- */

/* Parses one value of type t at *pos. depth is the number of arrays around
 * it. top is the key's entry for a top-level value (string arrays there get
 * an index), else NULL. */
static int parse_value(parser *p, uint64_t *pos, uint32_t t, int depth, struct kv *top,
                       vt_gguf_value *v)
{
    memset(v, 0, sizeof *v);
    v->type = (vt_gguf_vtype)t;
    uint64_t start = *pos;
    uint64_t w = scalar_width(t);
    if (w) {
        if (need(p, start, w, "value"))
            return -1;
        if (t == VT_GGUF_BOOL && p->d[start] > 1)
            return fail(p, start, "value", "%u: expected a bool, 0 or 1", p->d[start]);
        decode_scalar(t, p->d + start, v);
        v->raw = p->d + start;
        v->raw_size = w;
        *pos += w;
        return 0;
    }
    if (t == VT_GGUF_STRING) {
        if (rd_str(p, pos, "length", &v->v.str))
            return -1;
        v->raw = p->d + start;
        v->raw_size = *pos - start;
        return 0;
    }

    /* An array: element type, count, elements. */
    uint32_t et;
    uint64_t count;
    if (rd_u32(p, pos, "elem_type", &et))
        return -1;
    if (et > VT_GGUF_F64)
        return fail(p, *pos - 4, "elem_type", "%u: expected a value type 0..12", et);
    /* This array is nesting level depth+1; arrays as elements would be depth+2. */
    if (et == VT_GGUF_ARRAY && depth + 2 > VT_GGUF_MAX_DEPTH)
        return fail(p, *pos - 4, "elem_type", "array nested %d deep: expected at most %d levels",
                    depth + 2, VT_GGUF_MAX_DEPTH);
    if (rd_u64(p, pos, "count", &count))
        return -1;
    uint64_t left = p->size - *pos, me = min_elem_bytes(et);
    if (count > left / me)
        return fail(p, *pos - 8, "count",
                    "%llu: expected at most %llu %s elements in the remaining %llu bytes", (ull)count,
                    (ull)(left / me), vt_gguf_vtype_name((vt_gguf_vtype)et), (ull)left);
    v->elem_type = (vt_gguf_vtype)et;
    v->count = count;
    v->raw = p->d + *pos;
    uint64_t base = *pos;

    uint64_t ew = scalar_width(et);
    if (ew) {
        if (et == VT_GGUF_BOOL) {
            for (uint64_t i = 0; i < count; i++) {
                if (p->d[base + i] > 1) {
                    p->path[p->depth++] = i;
                    return fail(p, base + i, "", "%u: expected a bool, 0 or 1", p->d[base + i]);
                }
            }
        }
        *pos += count * ew; /* no overflow: count <= left / ew */
    } else {
        uint64_t *index = NULL;
        if (et == VT_GGUF_STRING && top && count) {
            /* count <= left / 8, so the index is smaller than the file. */
            index = malloc((count + INDEX_STRIDE - 1) / INDEX_STRIDE * sizeof *index);
            if (!index)
                return fail_oom(p, base - 8, "count");
            top->str_index = index;
        }
        int d = p->depth++;
        for (uint64_t i = 0; i < count; i++) {
            p->path[d] = i;
            if (et == VT_GGUF_STRING) {
                if (index && i % INDEX_STRIDE == 0)
                    index[i / INDEX_STRIDE] = *pos - base;
                /* Fast path for the common case (vocabularies are hundreds
                 * of thousands of strings); rd_str reports any problem. */
                uint64_t rest = p->size - *pos, len;
                if (rest >= 8 && (len = le64(p->d + *pos)) <= rest - 8) {
                    *pos += 8 + len;
                    continue;
                }
                vt_gguf_str s;
                if (rd_str(p, pos, "length", &s))
                    return -1;
            } else {
                vt_gguf_value sub;
                if (parse_value(p, pos, VT_GGUF_ARRAY, depth + 1, NULL, &sub))
                    return -1;
            }
        }
        p->depth = d;
    }
    v->raw_size = *pos - base;
    return 0;
}

/* ---- the file ---- */

static void set_ctx(parser *p, const char *what, uint64_t i, const vt_gguf_str *name)
{
    p->depth = 0;
    if (!name) {
        snprintf(p->ctx, sizeof p->ctx, "%s[%llu]", what, (ull)i);
        return;
    }
    char esc[96];
    escape(esc, sizeof esc, name->ptr, name->len);
    snprintf(p->ctx, sizeof p->ctx, "%s[%llu] '%s'", what, (ull)i, esc);
}

static int parse_header(parser *p, uint64_t *pos, uint64_t *n_tensors, uint64_t *n_kv)
{
    vt_gguf *g = p->g;
    if (need(p, 0, 4, "magic"))
        return -1;
    if (memcmp(p->d, "GGUF", 4) != 0) {
        char esc[40];
        escape(esc, sizeof esc, (const char *)p->d, 4);
        return fail(p, 0, "magic", "'%s': expected 'GGUF'", esc);
    }
    *pos = 4;
    if (rd_u32(p, pos, "version", &g->version))
        return -1;
    if (g->version == 1)
        return fail(p, 4, "version", "1: expected 2 or 3 (GGUF v1 is not supported)");
    if (g->version != 2 && g->version != 3)
        return fail(p, 4, "version", "%u: expected 2 or 3", g->version);
    if (rd_u64(p, pos, "tensor_count", n_tensors) || rd_u64(p, pos, "kv_count", n_kv))
        return -1;
    /* Coarse bounds now (each count alone against all that is left); the
     * tensor count is checked again once the key/values are parsed. */
    uint64_t left = p->size - *pos;
    if (*n_tensors > left / MIN_TINFO_BYTES)
        return fail(p, 8, "tensor_count",
                    "%llu: expected at most %llu tensor infos in the remaining %llu bytes",
                    (ull)*n_tensors, (ull)(left / MIN_TINFO_BYTES), (ull)left);
    if (*n_kv > left / MIN_KV_BYTES)
        return fail(p, 16, "kv_count",
                    "%llu: expected at most %llu key/values in the remaining %llu bytes",
                    (ull)*n_kv, (ull)(left / MIN_KV_BYTES), (ull)left);
    return 0;
}

static int parse_kvs(parser *p, uint64_t *pos, uint64_t n_kv)
{
    vt_gguf *g = p->g;
    for (uint64_t i = 0; i < n_kv; i++) {
        set_ctx(p, "kv", i, NULL);
        if (grow((void **)&g->kv, &g->kv_cap, i + 1, sizeof *g->kv))
            return fail_oom(p, *pos, "");
        struct kv *e = &g->kv[i];
        g->n_kv = i + 1; /* counted now so that free() releases its index */
        uint64_t key_pos = *pos;
        if (rd_str(p, pos, "key.length", &e->key))
            return -1;
        if (e->key.len == 0)
            return fail(p, key_pos, "key", "empty: expected a non-empty key");
        set_ctx(p, "kv", i, &e->key);
        uint64_t h = hash_bytes(e->key.ptr, e->key.len);
        uint64_t dup = set_find(&g->keys, &g->kv[0].key, sizeof *g->kv, e->key.ptr, e->key.len, h);
        if (dup)
            return fail(p, key_pos, "key", "duplicate of kv[%llu]: expected each key once",
                        (ull)(dup - 1));
        if (set_add(&g->keys, i + 1, h))
            return fail_oom(p, key_pos, "key");
        e->type_pos = *pos;
        uint32_t t;
        if (rd_u32(p, pos, "type", &t))
            return -1;
        if (t > VT_GGUF_F64)
            return fail(p, e->type_pos, "type", "%u: expected a value type 0..12", t);
        if (parse_value(p, pos, t, 0, e, &e->val))
            return -1;
    }
    return 0;
}

static int parse_alignment(parser *p)
{
    vt_gguf *g = p->g;
    g->alignment = VT_GGUF_DEFAULT_ALIGNMENT;
    int64_t k = vt_gguf_find_key(g, "general.alignment");
    if (k < 0)
        return 0;
    const struct kv *e = &g->kv[k];
    set_ctx(p, "kv", (uint64_t)k, &e->key);
    if (e->val.type != VT_GGUF_U32)
        return fail(p, e->type_pos, "type", "%s: expected u32",
                    vt_gguf_vtype_name(e->val.type));
    uint64_t a = e->val.v.u64;
    if (a == 0 || (a & (a - 1)) != 0)
        return fail(p, e->type_pos + 4, "value", "%llu: expected a nonzero power of two", (ull)a);
    g->alignment = (uint32_t)a;
    return 0;
}

static int parse_tensor(parser *p, uint64_t *pos, uint64_t i)
{
    vt_gguf *g = p->g;
    set_ctx(p, "tensor", i, NULL);
    if (grow((void **)&g->ti, &g->ti_cap, i + 1, sizeof *g->ti))
        return fail_oom(p, *pos, "");
    struct tinfo *ti = &g->ti[i];
    vt_gguf_tensor *t = &ti->t;
    g->n_tensors = i + 1;

    uint64_t name_pos = *pos;
    if (rd_str(p, pos, "name.length", &t->name))
        return -1;
    if (t->name.len > VT_GGUF_MAX_NAME)
        return fail(p, name_pos, "name.length", "%llu: expected at most %d bytes (ggml's limit)",
                    (ull)t->name.len, VT_GGUF_MAX_NAME);
    set_ctx(p, "tensor", i, &t->name);
    uint64_t h = hash_bytes(t->name.ptr, t->name.len);
    uint64_t dup = set_find(&g->tnames, &g->ti[0].t.name, sizeof *g->ti, t->name.ptr, t->name.len, h);
    if (dup)
        return fail(p, name_pos, "name", "duplicate of tensor[%llu]: expected each name once",
                    (ull)(dup - 1));
    if (set_add(&g->tnames, i + 1, h))
        return fail_oom(p, name_pos, "name");

    uint64_t dims_pos = *pos;
    if (rd_u32(p, pos, "n_dims", &t->n_dims))
        return -1;
    if (t->n_dims < 1 || t->n_dims > MAX_DIMS)
        return fail(p, dims_pos, "n_dims", "%u: expected 1 to %d", t->n_dims, MAX_DIMS);
    uint64_t ne_pos = *pos;
    int64_t nel = 1;
    int overflow = 0;
    for (uint32_t j = 0; j < MAX_DIMS; j++) {
        t->ne[j] = 1;
        if (j >= t->n_dims)
            continue;
        uint64_t u;
        char field[16];
        snprintf(field, sizeof field, "ne[%u]", j);
        if (rd_u64(p, pos, field, &u))
            return -1;
        memcpy(&t->ne[j], &u, 8);
        if (t->ne[j] < 0)
            return fail(p, *pos - 8, field, "%lld: expected a non-negative size", (sll)t->ne[j]);
        overflow |= __builtin_mul_overflow(nel, t->ne[j], &nel);
    }
    if (overflow)
        return fail(p, ne_pos, "ne", "%lld x %lld x %lld x %lld: expected at most %lld elements",
                    (sll)t->ne[0], (sll)t->ne[1], (sll)t->ne[2], (sll)t->ne[3], (sll)INT64_MAX);

    uint64_t type_pos = *pos;
    uint32_t ut;
    if (rd_u32(p, pos, "type", &ut))
        return -1;
    int32_t type;
    memcpy(&type, &ut, 4);
    const vt_codec *c = vt_codec_by_type(type);
    if (!c)
        return fail(p, type_pos, "type", "%d: expected a known ggml type", type);
    t->type = type;
    if (t->ne[0] % c->block_elems != 0)
        return fail(p, ne_pos, "ne[0]", "%lld: expected a multiple of %s's block size %lld",
                    (sll)t->ne[0], c->name, (sll)c->block_elems);
    /* Bytes = blocks per row * block bytes * rows; nel fits int64, but the
     * byte count can still overflow for wide blocks. */
    uint64_t bytes = (uint64_t)(t->ne[0] / c->block_elems);
    overflow = __builtin_mul_overflow(bytes, (uint64_t)c->block_bytes, &bytes);
    for (int j = 1; j < MAX_DIMS; j++)
        overflow |= __builtin_mul_overflow(bytes, (uint64_t)t->ne[j], &bytes);
    if (overflow)
        return fail(p, ne_pos, "ne", "%lld x %lld x %lld x %lld of %s: expected a size in bytes below 2^64",
                    (sll)t->ne[0], (sll)t->ne[1], (sll)t->ne[2], (sll)t->ne[3], c->name);
    t->n_bytes = bytes;

    ti->offset_pos = *pos;
    if (rd_u64(p, pos, "offset", &t->offset))
        return -1;
    if (t->offset % g->alignment != 0)
        return fail(p, ti->offset_pos, "offset", "%llu: expected a multiple of the alignment %u",
                    (ull)t->offset, g->alignment);
    return 0;
}

static vt_gguf *parse(const uint8_t *d, uint64_t size, const char *name, vt_error *err)
{
    vt_gguf *g = calloc(1, sizeof *g);
    if (g)
        g->name = strdup(name ? name : "<memory>");
    if (!g || !g->name) {
        free(g);
        vt_error_set(err, VT_EINPUT, "%s: offset 0: file: out of memory: expected to open it",
                     name ? name : "<memory>");
        return NULL;
    }
    g->data = d;
    g->size = size;
    parser p = { .g = g, .err = err, .d = d, .size = size };

    uint64_t pos = 0, n_tensors, n_kv;
    if (parse_header(&p, &pos, &n_tensors, &n_kv) || parse_kvs(&p, &pos, n_kv) ||
        parse_alignment(&p))
        goto bad;

    /* Now that the key/values are known, bound the tensor count precisely. */
    p.ctx[0] = '\0';
    p.depth = 0;
    uint64_t left = size - pos;
    if (n_tensors > left / MIN_TINFO_BYTES) {
        fail(&p, 8, "tensor_count", "%llu: expected at most %llu tensor infos in the remaining %llu bytes",
             (ull)n_tensors, (ull)(left / MIN_TINFO_BYTES), (ull)left);
        goto bad;
    }
    for (uint64_t i = 0; i < n_tensors; i++)
        if (parse_tensor(&p, &pos, i))
            goto bad;
    g->header_size = pos;

    /* The data section starts at the next multiple of the alignment. ggml
     * only requires that padding when there are tensors, so a file without
     * tensors may end before it; its (empty) data section is then at the end. */
    p.ctx[0] = '\0';
    p.depth = 0;
    uint64_t a = g->alignment, doff;
    if (__builtin_add_overflow(pos, a - 1, &doff)) {
        fail(&p, pos, "padding", "offset %llu: expected room to align to %llu", (ull)pos, (ull)a);
        goto bad;
    }
    doff &= ~(a - 1);
    if (doff > size) {
        if (n_tensors) {
            fail(&p, pos, "padding", "file ends at %llu: expected the data section at offset %llu (alignment %llu)",
                 (ull)size, (ull)doff, (ull)a);
            goto bad;
        }
        doff = size;
    }
    g->data_offset = doff;

    uint64_t avail = size - doff;
    for (uint64_t i = 0; i < n_tensors; i++) {
        struct tinfo *ti = &g->ti[i];
        if (ti->t.offset > avail || ti->t.n_bytes > avail - ti->t.offset) {
            set_ctx(&p, "tensor", i, &ti->t.name);
            fail(&p, ti->offset_pos, "offset",
                 "%llu + %llu bytes: expected the tensor within the data section's %llu bytes",
                 (ull)ti->t.offset, (ull)ti->t.n_bytes, (ull)avail);
            goto bad;
        }
        ti->t.data = d + doff + ti->t.offset;
    }
    if (check_no_overlap(&p, g, n_tensors))
        goto bad;
    vt_error_clear(err);
    return g;
bad:
    vt_gguf_free(g);
    return NULL;
}

vt_gguf *vt_gguf_open_memory(const void *data, size_t size, const char *name, vt_error *err)
{
    if (!data && size) {
        vt_error_set(err, VT_EINPUT, "%s: offset 0: buffer: NULL with %zu bytes: expected data",
                     name ? name : "<memory>", size);
        return NULL;
    }
    return parse(data, size, name, err);
}

vt_gguf *vt_gguf_open(const char *path, vt_error *err)
{
    /* common/vt_input.h: a FIFO given by mistake must not hang the open. */
    int fd;
    uint64_t fsize;
    if (vt_input_open(path, NULL, &fd, &fsize, err))
        return NULL;
    /* A zero-length mapping is an error, and an empty file is simply parsed
     * (and refused) as an empty buffer. */
    size_t size = (size_t)fsize;
    void *map = NULL;
    if (size) {
        map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map == MAP_FAILED) {
            vt_error_set(err, VT_EINPUT, "%s: offset 0: file: mmap: %s: expected a mappable file",
                         path, strerror(errno));
            close(fd);
            return NULL;
        }
    }
    close(fd);
    static const uint8_t empty[1];
    vt_gguf *g = parse(map ? map : empty, size, path, err);
    if (!g) {
        if (map)
            munmap(map, size);
        return NULL;
    }
    g->map = map;
    g->map_size = size;
    return g;
}

void vt_gguf_free(vt_gguf *g)
{
    if (!g)
        return;
    for (uint64_t i = 0; i < g->n_kv; i++)
        free(g->kv[i].str_index);
    free(g->kv);
    free(g->ti);
    set_free(&g->keys);
    set_free(&g->tnames);
    if (g->map)
        munmap(g->map, g->map_size);
    free(g->name);
    free(g);
}

/* ---- accessors ---- */

uint32_t vt_gguf_version(const vt_gguf *g) { return g->version; }
uint32_t vt_gguf_alignment(const vt_gguf *g) { return g->alignment; }
uint64_t vt_gguf_data_offset(const vt_gguf *g) { return g->data_offset; }
uint64_t vt_gguf_file_size(const vt_gguf *g) { return g->size; }
const void *vt_gguf_file_data(const vt_gguf *g) { return g->data; }
uint64_t vt_gguf_header_size(const vt_gguf *g) { return g->header_size; }
const char *vt_gguf_name(const vt_gguf *g) { return g->name; }

uint64_t vt_gguf_n_kv(const vt_gguf *g) { return g->n_kv; }

vt_gguf_str vt_gguf_kv_key(const vt_gguf *g, uint64_t i)
{
    vt_gguf_str none = { "", 0 };
    return i < g->n_kv ? g->kv[i].key : none;
}

const vt_gguf_value *vt_gguf_kv_value(const vt_gguf *g, uint64_t i)
{
    return i < g->n_kv ? &g->kv[i].val : NULL;
}

int64_t vt_gguf_find_key(const vt_gguf *g, const char *key)
{
    size_t len = strlen(key);
    uint64_t idx = g->n_kv ? set_find(&g->keys, &g->kv[0].key, sizeof *g->kv, key, len,
                                      hash_bytes(key, len))
                           : 0;
    return (int64_t)idx - 1;
}

static const vt_gguf_value *find_value(const vt_gguf *g, const char *key)
{
    int64_t i = vt_gguf_find_key(g, key);
    return i < 0 ? NULL : &g->kv[i].val;
}

static int is_unsigned(vt_gguf_vtype t)
{
    return t == VT_GGUF_U8 || t == VT_GGUF_U16 || t == VT_GGUF_U32 || t == VT_GGUF_U64;
}

static int is_signed(vt_gguf_vtype t)
{
    return t == VT_GGUF_I8 || t == VT_GGUF_I16 || t == VT_GGUF_I32 || t == VT_GGUF_I64;
}

int vt_gguf_get_u64(const vt_gguf *g, const char *key, uint64_t *out)
{
    const vt_gguf_value *v = find_value(g, key);
    if (v && is_unsigned(v->type)) {
        *out = v->v.u64;
        return 1;
    }
    if (v && is_signed(v->type) && v->v.i64 >= 0) {
        *out = (uint64_t)v->v.i64;
        return 1;
    }
    return 0;
}

int vt_gguf_get_i64(const vt_gguf *g, const char *key, int64_t *out)
{
    const vt_gguf_value *v = find_value(g, key);
    if (v && is_signed(v->type)) {
        *out = v->v.i64;
        return 1;
    }
    if (v && is_unsigned(v->type) && v->v.u64 <= (uint64_t)INT64_MAX) {
        *out = (int64_t)v->v.u64;
        return 1;
    }
    return 0;
}

int64_t vt_gguf_context_length(const vt_gguf *g)
{
    vt_gguf_str arch;
    char key[160];
    int64_t n;
    if (!vt_gguf_get_str(g, "general.architecture", &arch) || arch.len > 100)
        return 0;
    snprintf(key, sizeof key, "%.*s.context_length", (int)arch.len, arch.ptr);
    return vt_gguf_get_i64(g, key, &n) && n > 0 ? n : 0;
}

int vt_gguf_get_f64(const vt_gguf *g, const char *key, double *out)
{
    const vt_gguf_value *v = find_value(g, key);
    if (!v)
        return 0;
    if (v->type == VT_GGUF_F32 || v->type == VT_GGUF_F64)
        *out = v->v.f64;
    else if (is_unsigned(v->type))
        *out = (double)v->v.u64;
    else if (is_signed(v->type))
        *out = (double)v->v.i64;
    else
        return 0;
    return 1;
}

int vt_gguf_get_bool(const vt_gguf *g, const char *key, int *out)
{
    const vt_gguf_value *v = find_value(g, key);
    if (!v || v->type != VT_GGUF_BOOL)
        return 0;
    *out = v->v.b;
    return 1;
}

int vt_gguf_get_str(const vt_gguf *g, const char *key, vt_gguf_str *out)
{
    const vt_gguf_value *v = find_value(g, key);
    if (!v || v->type != VT_GGUF_STRING)
        return 0;
    *out = v->v.str;
    return 1;
}

int vt_gguf_read_arch(const char *path, char *buf, size_t cap, vt_error *err)
{
    vt_gguf *g = vt_gguf_open(path, err);
    if (!g)
        return err ? err->code : VT_EINPUT;
    vt_gguf_str a;
    int rc = VT_OK;
    if (!vt_gguf_get_str(g, "general.architecture", &a))
        rc = vt_error_set(err, VT_EINPUT, "%s: key general.architecture: missing", path);
    else if (a.len >= cap)
        rc = vt_error_set(err, VT_EINPUT, "%s: key general.architecture: %llu bytes: expected at most %zu", path,
                          (unsigned long long)a.len, cap - 1);
    else {
        memcpy(buf, a.ptr, a.len);
        buf[a.len] = 0;
    }
    vt_gguf_free(g);
    return rc;
}

/* Bytes of one encoded array (element type, count, elements) at b, already
 * validated when the file was opened; end still bounds every step so that a
 * value that did not come from this file cannot make us read past it. */
static uint64_t array_bytes(const uint8_t *b, const uint8_t *end)
{
    if (end - b < 12)
        return 0;
    uint32_t et = le32(b);
    uint64_t count = le64(b + 4), off = 12, avail = (uint64_t)(end - b);
    uint64_t w = scalar_width(et);
    if (w)
        return count <= (avail - off) / w ? off + count * w : 0;
    for (uint64_t i = 0; i < count; i++) {
        uint64_t n;
        if (et == VT_GGUF_STRING) {
            if (avail - off < 8)
                return 0;
            n = le64(b + off);
            if (n > avail - off - 8)
                return 0;
            n += 8;
        } else if (et == VT_GGUF_ARRAY) {
            n = array_bytes(b + off, end);
            if (!n)
                return 0;
        } else {
            return 0;
        }
        off += n;
    }
    return off;
}

int vt_gguf_array_get(const vt_gguf *g, const vt_gguf_value *arr, uint64_t i, vt_gguf_value *out)
{
    if (!arr || arr->type != VT_GGUF_ARRAY || i >= arr->count || !arr->raw)
        return 0;
    uintptr_t lo = (uintptr_t)g->data, hi = lo + g->size, r = (uintptr_t)arr->raw;
    if (r < lo || r > hi || arr->raw_size > hi - r)
        return 0;
    const uint8_t *raw = arr->raw, *end = raw + arr->raw_size;
    memset(out, 0, sizeof *out);
    out->type = arr->elem_type;
    uint64_t w = scalar_width(arr->elem_type);
    if (w) {
        if (i >= arr->raw_size / w)
            return 0;
        decode_scalar(arr->elem_type, raw + i * w, out);
        out->raw = raw + i * w;
        out->raw_size = w;
        return 1;
    }
    if (arr->elem_type != VT_GGUF_STRING && arr->elem_type != VT_GGUF_ARRAY)
        return 0;

    /* Find element i: through the index of a top-level string array when arr
     * is one of our own values, else by walking the elements before it. */
    uint64_t off = 0, j = 0;
    const struct kv *e = NULL;
    uintptr_t kb = (uintptr_t)g->kv, a = (uintptr_t)arr;
    if (g->n_kv && a >= kb && a < kb + g->n_kv * sizeof *g->kv) {
        const struct kv *k = &g->kv[(a - kb) / sizeof *g->kv];
        if (&k->val == arr)
            e = k;
    }
    uint64_t total = arr->raw_size;
    if (e && e->str_index) {
        j = i / INDEX_STRIDE * INDEX_STRIDE;
        off = e->str_index[i / INDEX_STRIDE];
    }
    for (; j < i; j++) {
        uint64_t n;
        if (arr->elem_type == VT_GGUF_STRING) {
            if (total - off < 8 || le64(raw + off) > total - off - 8)
                return 0;
            n = 8 + le64(raw + off);
        } else if (!(n = array_bytes(raw + off, end))) {
            return 0;
        }
        off += n;
    }
    const uint8_t *b = raw + off;
    if (arr->elem_type == VT_GGUF_STRING) {
        if (total - off < 8 || le64(b) > total - off - 8)
            return 0;
        out->v.str.ptr = (const char *)b + 8;
        out->v.str.len = le64(b);
        out->raw = b;
        out->raw_size = 8 + out->v.str.len;
        return 1;
    }
    uint64_t n = array_bytes(b, end);
    if (!n)
        return 0;
    out->elem_type = (vt_gguf_vtype)le32(b);
    out->count = le64(b + 4);
    out->raw = b + 12;
    out->raw_size = n - 12;
    return 1;
}

uint64_t vt_gguf_n_tensors(const vt_gguf *g) { return g->n_tensors; }

const vt_gguf_tensor *vt_gguf_tensor_at(const vt_gguf *g, uint64_t i)
{
    return i < g->n_tensors ? &g->ti[i].t : NULL;
}

const vt_gguf_tensor *vt_gguf_find_tensor(const vt_gguf *g, const char *name)
{
    if (!g->n_tensors)
        return NULL;
    size_t len = strlen(name);
    uint64_t idx = set_find(&g->tnames, &g->ti[0].t.name, sizeof *g->ti, name, len,
                            hash_bytes(name, len));
    return idx ? &g->ti[idx - 1].t : NULL;
}
