/* GGUF writer. Key/values are kept as their encoded bytes (the payload after
 * the type field), so a file read by gguf.c is reproduced exactly: nothing
 * is decoded and re-encoded on that path. Tensor data is a borrowed data
 * section (from writer_from) followed by an owned buffer of appended
 * tensors; offsets are relative to the data section, as in the file. */
#include "gguf_file.h"
#include "codec.h"
#include "../common/vt_publish.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef unsigned long long ull;

struct wkv {
    char *key;
    size_t key_len;
    uint32_t type;
    uint8_t *payload; /* the value's bytes after the type field */
    size_t payload_len;
};

struct wtensor {
    char *name;
    size_t name_len;
    uint32_t n_dims;
    int64_t ne[4];
    int32_t type;
    uint64_t offset, n_bytes;
};

struct vt_gguf_writer {
    uint32_t version, alignment;
    struct wkv *kv;
    size_t n_kv, kv_cap;
    struct wtensor *t;
    size_t n_t, t_cap;
    const uint8_t *base; /* borrowed data section of writer_from's file */
    uint64_t base_size;
    uint8_t *ext;        /* appended tensors, after base */
    size_t ext_size, ext_cap;
    /* While nothing changed since writer_from, the original bytes between
     * the tensor infos and the data section are written back as they were. */
    int exact;
    uint8_t *pad;
    size_t pad_len;
    vt_error err;
};

static void put_le(uint8_t *b, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        b[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const uint8_t *b, int n)
{
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = v << 8 | b[i];
    return v;
}

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

static int oom(vt_gguf_writer *w)
{
    return vt_error_set(&w->err, VT_EINPUT, "gguf writer: out of memory");
}

static int grow(void **arr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap * 2 : 16, bytes;
    if (n < need)
        n = need;
    if (__builtin_mul_overflow(n, elem, &bytes))
        return -1;
    void *p = realloc(*arr, bytes);
    if (!p)
        return -1;
    *arr = p;
    *cap = n;
    return 0;
}

static char *dup_bytes(const void *p, size_t n)
{
    char *s = malloc(n + 1);
    if (s) {
        if (n)
            memcpy(s, p, n);
        s[n] = '\0';
    }
    return s;
}

vt_gguf_writer *vt_gguf_writer_new(uint32_t version, vt_error *err)
{
    if (version != 2 && version != 3) {
        vt_error_set(err, VT_EINPUT, "gguf writer: version %u: expected 2 or 3", version);
        return NULL;
    }
    vt_gguf_writer *w = calloc(1, sizeof *w);
    if (!w) {
        vt_error_set(err, VT_EINPUT, "gguf writer: out of memory");
        return NULL;
    }
    w->version = version;
    w->alignment = VT_GGUF_DEFAULT_ALIGNMENT;
    return w;
}

void vt_gguf_writer_free(vt_gguf_writer *w)
{
    if (!w)
        return;
    for (size_t i = 0; i < w->n_kv; i++) {
        free(w->kv[i].key);
        free(w->kv[i].payload);
    }
    for (size_t i = 0; i < w->n_t; i++)
        free(w->t[i].name);
    free(w->kv);
    free(w->t);
    free(w->ext);
    free(w->pad);
    free(w);
}

const vt_error *vt_gguf_writer_error(const vt_gguf_writer *w) { return &w->err; }

vt_gguf_writer *vt_gguf_writer_from(const vt_gguf *g, vt_error *err)
{
    vt_gguf_writer *w = vt_gguf_writer_new(vt_gguf_version(g), err);
    if (!w)
        return NULL;
    w->alignment = vt_gguf_alignment(g);
    uint64_t n_kv = vt_gguf_n_kv(g), n_t = vt_gguf_n_tensors(g);
    if (grow((void **)&w->kv, &w->kv_cap, n_kv, sizeof *w->kv) ||
        grow((void **)&w->t, &w->t_cap, n_t, sizeof *w->t))
        goto nomem;
    for (uint64_t i = 0; i < n_kv; i++) {
        vt_gguf_str k = vt_gguf_kv_key(g, i);
        const vt_gguf_value *v = vt_gguf_kv_value(g, i);
        struct wkv *e = &w->kv[i];
        memset(e, 0, sizeof *e);
        w->n_kv = i + 1;
        e->type = v->type;
        /* Arrays: raw starts after the element type and count. Others: raw
         * is the whole encoded value. */
        size_t hdr = v->type == VT_GGUF_ARRAY ? 12 : 0;
        e->payload_len = hdr + v->raw_size;
        e->key = dup_bytes(k.ptr, k.len);
        e->key_len = k.len;
        e->payload = malloc(e->payload_len ? e->payload_len : 1);
        if (!e->key || !e->payload)
            goto nomem;
        if (hdr) {
            put_le(e->payload, v->elem_type, 4);
            put_le(e->payload + 4, v->count, 8);
        }
        if (v->raw_size)
            memcpy(e->payload + hdr, v->raw, v->raw_size);
    }
    for (uint64_t i = 0; i < n_t; i++) {
        const vt_gguf_tensor *t = vt_gguf_tensor_at(g, i);
        struct wtensor *e = &w->t[i];
        memset(e, 0, sizeof *e);
        w->n_t = i + 1;
        e->name = dup_bytes(t->name.ptr, t->name.len);
        if (!e->name)
            goto nomem;
        e->name_len = t->name.len;
        e->n_dims = t->n_dims;
        memcpy(e->ne, t->ne, sizeof e->ne);
        e->type = t->type;
        e->offset = t->offset;
        e->n_bytes = t->n_bytes;
    }
    const uint8_t *d = vt_gguf_file_data(g);
    uint64_t hs = vt_gguf_header_size(g), doff = vt_gguf_data_offset(g);
    w->base = d + doff;
    w->base_size = vt_gguf_file_size(g) - doff;
    w->pad_len = doff - hs;
    w->pad = malloc(w->pad_len ? w->pad_len : 1);
    if (!w->pad)
        goto nomem;
    if (w->pad_len)
        memcpy(w->pad, d + hs, w->pad_len);
    w->exact = 1;
    return w;
nomem:
    vt_gguf_writer_free(w);
    vt_error_set(err, VT_EINPUT, "%s: gguf writer: out of memory", vt_gguf_name(g));
    return NULL;
}

/* ---- key/values ---- */

static int is_alignment_key(const char *key) { return strcmp(key, "general.alignment") == 0; }

/* Takes ownership of payload (freed on failure too). */
static int set_kv(vt_gguf_writer *w, const char *key, uint32_t type, uint8_t *payload, size_t len)
{
    vt_error_clear(&w->err);
    if (!key || !key[0]) {
        free(payload);
        return vt_error_set(&w->err, VT_EINPUT, "gguf writer: key: empty: expected a non-empty key");
    }
    if (is_alignment_key(key)) {
        /* The reader requires a u32 power of two, and the tensors already
         * placed must stay aligned. */
        if (type != VT_GGUF_U32) {
            free(payload);
            return vt_error_set(&w->err, VT_EINPUT, "gguf writer: general.alignment: %s: expected u32",
                                vt_gguf_vtype_name((vt_gguf_vtype)type));
        }
        uint32_t a = (uint32_t)get_le(payload, 4);
        if (a == 0 || (a & (a - 1)) != 0) {
            free(payload);
            return vt_error_set(&w->err, VT_EINPUT,
                                "gguf writer: general.alignment: %u: expected a nonzero power of two", a);
        }
        for (size_t i = 0; i < w->n_t; i++) {
            if (w->t[i].offset % a != 0) {
                free(payload);
                return vt_error_set(&w->err, VT_EINPUT,
                                    "gguf writer: general.alignment: %u: expected a divisor of tensor "
                                    "'%s''s offset %llu", a, w->t[i].name, (ull)w->t[i].offset);
            }
        }
        w->alignment = a;
    }
    size_t klen = strlen(key);
    for (size_t i = 0; i < w->n_kv; i++) {
        struct wkv *e = &w->kv[i];
        if (e->key_len == klen && memcmp(e->key, key, klen) == 0) {
            free(e->payload);
            e->payload = payload;
            e->payload_len = len;
            e->type = type;
            w->exact = 0;
            return VT_OK;
        }
    }
    char *k = dup_bytes(key, klen);
    if (!k || grow((void **)&w->kv, &w->kv_cap, w->n_kv + 1, sizeof *w->kv)) {
        free(k);
        free(payload);
        return oom(w);
    }
    w->kv[w->n_kv++] = (struct wkv){ k, klen, type, payload, len };
    w->exact = 0;
    return VT_OK;
}

static int set_scalar(vt_gguf_writer *w, const char *key, uint32_t type, uint64_t bits)
{
    int n = (int)scalar_width(type);
    uint8_t *p = malloc((size_t)n);
    if (!p)
        return oom(w);
    put_le(p, bits, n);
    return set_kv(w, key, type, p, (size_t)n);
}

int vt_gguf_writer_set_u32(vt_gguf_writer *w, const char *key, uint32_t v)
{
    return set_scalar(w, key, VT_GGUF_U32, v);
}

int vt_gguf_writer_set_i32(vt_gguf_writer *w, const char *key, int32_t v)
{
    return set_scalar(w, key, VT_GGUF_I32, (uint32_t)v);
}

int vt_gguf_writer_set_u64(vt_gguf_writer *w, const char *key, uint64_t v)
{
    return set_scalar(w, key, VT_GGUF_U64, v);
}

int vt_gguf_writer_set_f32(vt_gguf_writer *w, const char *key, float v)
{
    uint32_t bits;
    memcpy(&bits, &v, 4);
    return set_scalar(w, key, VT_GGUF_F32, bits);
}

int vt_gguf_writer_set_bool(vt_gguf_writer *w, const char *key, int v)
{
    return set_scalar(w, key, VT_GGUF_BOOL, v ? 1 : 0);
}

static int set_string(vt_gguf_writer *w, const char *key, const char *s, uint64_t len)
{
    if (!s && len) {
        vt_error_clear(&w->err);
        return vt_error_set(&w->err, VT_EINPUT, "gguf writer: %s: NULL string: expected a string", key);
    }
    if (len > SIZE_MAX - 8)
        return oom(w);
    uint8_t *p = malloc((size_t)len + 8);
    if (!p)
        return oom(w);
    put_le(p, len, 8);
    if (len)
        memcpy(p + 8, s, (size_t)len);
    return set_kv(w, key, VT_GGUF_STRING, p, (size_t)len + 8);
}

int vt_gguf_writer_set_str(vt_gguf_writer *w, const char *key, const char *v)
{
    return set_string(w, key, v, v ? strlen(v) : 0);
}

/* Walks count elements of type et at raw, within avail bytes, checking
 * them as the reader would; *used gets the bytes they take. depth is the
 * nesting level of the array holding them (1 for a key's array). */
static int measure(const uint8_t *raw, uint64_t avail, uint32_t et, uint64_t count, int depth,
                   uint64_t *used)
{
    uint64_t w = scalar_width(et);
    if (w) {
        if (count > avail / w)
            return 0;
        if (et == VT_GGUF_BOOL)
            for (uint64_t i = 0; i < count; i++)
                if (raw[i] > 1)
                    return 0;
        *used = count * w;
        return 1;
    }
    uint64_t off = 0;
    for (uint64_t i = 0; i < count; i++) {
        if (et == VT_GGUF_STRING) {
            if (avail - off < 8 || get_le(raw + off, 8) > avail - off - 8)
                return 0;
            off += 8 + get_le(raw + off, 8);
        } else if (et == VT_GGUF_ARRAY) {
            if (depth + 1 > VT_GGUF_MAX_DEPTH || avail - off < 12)
                return 0;
            uint32_t sub_et = (uint32_t)get_le(raw + off, 4);
            uint64_t sub_n = get_le(raw + off + 4, 8), sub_used;
            off += 12;
            if (sub_et > VT_GGUF_F64 ||
                !measure(raw + off, avail - off, sub_et, sub_n, depth + 1, &sub_used))
                return 0;
            off += sub_used;
        } else {
            return 0;
        }
    }
    *used = off;
    return 1;
}

int vt_gguf_writer_set_array(vt_gguf_writer *w, const char *key, vt_gguf_vtype elem_type,
                             const void *data, uint64_t count)
{
    uint64_t ew = scalar_width(elem_type), bytes;
    vt_error_clear(&w->err);
    if (!ew)
        return vt_error_set(&w->err, VT_EINPUT, "gguf writer: %s: element type %s: expected a scalar type",
                            key ? key : "", vt_gguf_vtype_name(elem_type));
    if (__builtin_mul_overflow(count, ew, &bytes) || bytes > SIZE_MAX - 12)
        return oom(w);
    if (bytes && !data)
        return vt_error_set(&w->err, VT_EINPUT, "gguf writer: %s: NULL data: expected %llu elements",
                            key ? key : "", (ull)count);
    uint64_t used;
    if (bytes && !measure(data, bytes, elem_type, count, 1, &used))
        return vt_error_set(&w->err, VT_EINPUT, "gguf writer: %s: bool element not 0 or 1: expected 0 or 1",
                            key ? key : "");
    uint8_t *p = malloc((size_t)bytes + 12);
    if (!p)
        return oom(w);
    put_le(p, elem_type, 4);
    put_le(p + 4, count, 8);
    if (bytes)
        memcpy(p + 12, data, (size_t)bytes);
    return set_kv(w, key, VT_GGUF_ARRAY, p, (size_t)bytes + 12);
}

int vt_gguf_writer_set_str_array(vt_gguf_writer *w, const char *key, const char *const *strs,
                                 uint64_t count)
{
    vt_error_clear(&w->err);
    if (count && !strs)
        return vt_error_set(&w->err, VT_EINPUT, "gguf writer: %s: NULL strings: expected %llu",
                            key ? key : "", (ull)count);
    size_t total = 12;
    for (uint64_t i = 0; i < count; i++) {
        if (!strs[i])
            return vt_error_set(&w->err, VT_EINPUT, "gguf writer: %s[%llu]: NULL: expected a string",
                                key ? key : "", (ull)i);
        if (__builtin_add_overflow(total, 8 + strlen(strs[i]), &total))
            return oom(w);
    }
    uint8_t *p = malloc(total), *q = p + 12;
    if (!p)
        return oom(w);
    put_le(p, VT_GGUF_STRING, 4);
    put_le(p + 4, count, 8);
    for (uint64_t i = 0; i < count; i++) {
        size_t n = strlen(strs[i]);
        put_le(q, n, 8);
        memcpy(q + 8, strs[i], n);
        q += 8 + n;
    }
    return set_kv(w, key, VT_GGUF_ARRAY, p, total);
}

int vt_gguf_writer_set_value(vt_gguf_writer *w, const char *key, const vt_gguf_value *v)
{
    vt_error_clear(&w->err);
    const char *k = key ? key : "";
    int ok = 1;
    uint64_t bits = 0;
    switch (v->type) {
    case VT_GGUF_U8: ok = v->v.u64 <= UINT8_MAX; bits = v->v.u64; break;
    case VT_GGUF_U16: ok = v->v.u64 <= UINT16_MAX; bits = v->v.u64; break;
    case VT_GGUF_U32: ok = v->v.u64 <= UINT32_MAX; bits = v->v.u64; break;
    case VT_GGUF_U64: bits = v->v.u64; break;
    case VT_GGUF_I8: ok = v->v.i64 >= INT8_MIN && v->v.i64 <= INT8_MAX; bits = (uint64_t)v->v.i64; break;
    case VT_GGUF_I16: ok = v->v.i64 >= INT16_MIN && v->v.i64 <= INT16_MAX; bits = (uint64_t)v->v.i64; break;
    case VT_GGUF_I32: ok = v->v.i64 >= INT32_MIN && v->v.i64 <= INT32_MAX; bits = (uint64_t)v->v.i64; break;
    case VT_GGUF_I64: bits = (uint64_t)v->v.i64; break;
    case VT_GGUF_F32: { float f = (float)v->v.f64; uint32_t u; memcpy(&u, &f, 4); bits = u; break; }
    case VT_GGUF_F64: memcpy(&bits, &v->v.f64, 8); break;
    case VT_GGUF_BOOL: bits = v->v.b ? 1 : 0; break;
    case VT_GGUF_STRING: return set_string(w, key, v->v.str.ptr, v->v.str.len);
    case VT_GGUF_ARRAY: {
        uint64_t used;
        if (v->elem_type > VT_GGUF_F64 || (v->raw_size && !v->raw) || v->raw_size > SIZE_MAX - 12 ||
            !measure(v->raw, v->raw_size, v->elem_type, v->count, 1, &used) || used != v->raw_size)
            return vt_error_set(&w->err, VT_EINPUT,
                                "gguf writer: %s: array of %llu %s in %llu bytes: expected a valid encoding",
                                k, (ull)v->count, vt_gguf_vtype_name(v->elem_type), (ull)v->raw_size);
        uint8_t *p = malloc((size_t)v->raw_size + 12);
        if (!p)
            return oom(w);
        put_le(p, v->elem_type, 4);
        put_le(p + 4, v->count, 8);
        if (v->raw_size)
            memcpy(p + 12, v->raw, (size_t)v->raw_size);
        return set_kv(w, key, VT_GGUF_ARRAY, p, (size_t)v->raw_size + 12);
    }
    default:
        return vt_error_set(&w->err, VT_EINPUT, "gguf writer: %s: type %d: expected a value type 0..12",
                            k, (int)v->type);
    }
    if (!ok)
        return vt_error_set(&w->err, VT_EINPUT, "gguf writer: %s: value out of range: expected a %s",
                            k, vt_gguf_vtype_name(v->type));
    return set_scalar(w, key, v->type, bits);
}

/* ---- tensors ---- */

static int append(vt_gguf_writer *w, const void *p, size_t n)
{
    if (!n)
        return 0;
    if (grow((void **)&w->ext, &w->ext_cap, w->ext_size + n, 1))
        return -1;
    if (p)
        memcpy(w->ext + w->ext_size, p, n);
    else
        memset(w->ext + w->ext_size, 0, n);
    w->ext_size += n;
    return 0;
}

static uint64_t pad_to(uint64_t n, uint64_t a) { return (a - n % a) % a; }

int vt_gguf_writer_add_tensor(vt_gguf_writer *w, const char *name, int type, uint32_t n_dims,
                              const int64_t *ne, const void *data, uint64_t n_bytes,
                              vt_error *err)
{
    vt_error_clear(&w->err);
    const char *nm = name ? name : "";
    size_t nlen = strlen(nm);
    if (nlen == 0 || nlen > VT_GGUF_MAX_NAME)
        return vt_error_set(err, VT_EINPUT, "gguf writer: tensor '%s': name of %zu bytes: expected 1 to %d",
                            nm, nlen, VT_GGUF_MAX_NAME);
    for (size_t i = 0; i < w->n_t; i++)
        if (w->t[i].name_len == nlen && memcmp(w->t[i].name, nm, nlen) == 0)
            return vt_error_set(err, VT_EINPUT, "gguf writer: tensor '%s': duplicate: expected each name once", nm);
    const vt_codec *c = vt_codec_by_type(type);
    if (!c)
        return vt_error_set(err, VT_EINPUT, "gguf writer: tensor '%s': type %d: expected a known ggml type", nm, type);
    if (n_dims < 1 || n_dims > 4 || !ne)
        return vt_error_set(err, VT_EINPUT, "gguf writer: tensor '%s': n_dims %u: expected 1 to 4", nm, n_dims);
    struct wtensor t = { .n_dims = n_dims, .type = type, .ne = { 1, 1, 1, 1 } };
    int64_t nel = 1;
    int overflow = 0;
    for (uint32_t j = 0; j < n_dims; j++) {
        if (ne[j] < 0)
            return vt_error_set(err, VT_EINPUT, "gguf writer: tensor '%s': ne[%u] %lld: expected >= 0",
                                nm, j, (long long)ne[j]);
        t.ne[j] = ne[j];
        overflow |= __builtin_mul_overflow(nel, ne[j], &nel);
    }
    if (t.ne[0] % c->block_elems != 0)
        return vt_error_set(err, VT_EINPUT, "gguf writer: tensor '%s': ne[0] %lld: expected a multiple of %s's block size %lld",
                            nm, (long long)t.ne[0], c->name, (long long)c->block_elems);
    uint64_t bytes = (uint64_t)(t.ne[0] / c->block_elems);
    overflow |= __builtin_mul_overflow(bytes, (uint64_t)c->block_bytes, &bytes);
    for (int j = 1; j < 4; j++)
        overflow |= __builtin_mul_overflow(bytes, (uint64_t)t.ne[j], &bytes);
    if (overflow || bytes > SIZE_MAX / 2)
        return vt_error_set(err, VT_EINPUT, "gguf writer: tensor '%s': shape: expected a size that fits in memory", nm);
    if (bytes != n_bytes)
        return vt_error_set(err, VT_EINPUT, "gguf writer: tensor '%s': %llu bytes of data: expected %llu for this %s shape",
                            nm, (ull)n_bytes, (ull)bytes, c->name);
    if (bytes && !data)
        return vt_error_set(err, VT_EINPUT, "gguf writer: tensor '%s': NULL data: expected %llu bytes", nm, (ull)bytes);

    /* The data section so far (base + ext) is extended to the alignment,
     * then the data, then zeros to the alignment as ggml pads each tensor. */
    uint64_t end = w->base_size + w->ext_size;
    uint64_t lead = pad_to(end, w->alignment);
    t.offset = end + lead;
    t.n_bytes = bytes;
    t.name = dup_bytes(nm, nlen);
    t.name_len = nlen;
    size_t ext0 = w->ext_size;
    if (!t.name || grow((void **)&w->t, &w->t_cap, w->n_t + 1, sizeof *w->t) ||
        append(w, NULL, (size_t)lead) || append(w, data, (size_t)bytes) ||
        append(w, NULL, (size_t)pad_to(t.offset + bytes, w->alignment))) {
        free(t.name);
        w->ext_size = ext0;
        return vt_error_set(err, VT_EINPUT, "gguf writer: tensor '%s': out of memory", nm);
    }
    w->t[w->n_t++] = t;
    w->exact = 0;
    return VT_OK;
}

/* ---- serialization ---- */

/* Where bytes go: a memory buffer of the exact size, or a file descriptor
 * through a staging buffer (so header fields are not one syscall each). */
typedef struct sink {
    uint8_t *buf; /* memory mode */
    int fd;       /* file mode */
    uint8_t *stage;
    size_t staged, stage_cap;
    uint64_t pos;
    int err_no;
} sink;

static int flush(sink *s)
{
    size_t off = 0;
    while (off < s->staged) {
        ssize_t n = write(s->fd, s->stage + off, s->staged - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            s->err_no = n < 0 ? errno : EIO;
            return -1;
        }
        off += (size_t)n;
    }
    s->staged = 0;
    return 0;
}

static int put(sink *s, const void *p, uint64_t n)
{
    if (s->err_no)
        return -1;
    if (s->buf) {
        if (n)
            memcpy(s->buf + s->pos, p, (size_t)n);
        s->pos += n;
        return 0;
    }
    const uint8_t *b = p;
    while (n) {
        size_t k = s->stage_cap - s->staged;
        if (k > n)
            k = (size_t)n;
        memcpy(s->stage + s->staged, b, k);
        s->staged += k;
        b += k;
        n -= k;
        s->pos += k;
        if (s->staged == s->stage_cap && flush(s))
            return -1;
    }
    return 0;
}

static int put_int(sink *s, uint64_t v, int n)
{
    uint8_t b[8];
    put_le(b, v, n);
    return put(s, b, (uint64_t)n);
}

static int put_zeros(sink *s, uint64_t n)
{
    static const uint8_t z[256];
    while (n) {
        uint64_t k = n < sizeof z ? n : sizeof z;
        if (put(s, z, k))
            return -1;
        n -= k;
    }
    return 0;
}

/* Total size, checked for overflow; also the header size (before padding). */
static int total_size(const vt_gguf_writer *w, uint64_t *header, uint64_t *total)
{
    uint64_t n = 24;
    int ov = 0;
    for (size_t i = 0; i < w->n_kv; i++) {
        ov |= __builtin_add_overflow(n, 8 + 4, &n);
        ov |= __builtin_add_overflow(n, w->kv[i].key_len, &n);
        ov |= __builtin_add_overflow(n, w->kv[i].payload_len, &n);
    }
    for (size_t i = 0; i < w->n_t; i++) {
        ov |= __builtin_add_overflow(n, 8 + 4 + 8 * (uint64_t)w->t[i].n_dims + 4 + 8, &n);
        ov |= __builtin_add_overflow(n, w->t[i].name_len, &n);
    }
    *header = n;
    uint64_t pad = w->exact ? w->pad_len : pad_to(n, w->alignment);
    ov |= __builtin_add_overflow(n, pad, &n);
    ov |= __builtin_add_overflow(n, w->base_size, &n);
    ov |= __builtin_add_overflow(n, w->ext_size, &n);
    *total = n;
    return ov ? -1 : 0;
}

static int emit(const vt_gguf_writer *w, sink *s, uint64_t header)
{
    put(s, "GGUF", 4);
    put_int(s, w->version, 4);
    put_int(s, w->n_t, 8);
    put_int(s, w->n_kv, 8);
    for (size_t i = 0; i < w->n_kv; i++) {
        const struct wkv *e = &w->kv[i];
        put_int(s, e->key_len, 8);
        put(s, e->key, e->key_len);
        put_int(s, e->type, 4);
        put(s, e->payload, e->payload_len);
    }
    for (size_t i = 0; i < w->n_t; i++) {
        const struct wtensor *t = &w->t[i];
        put_int(s, t->name_len, 8);
        put(s, t->name, t->name_len);
        put_int(s, t->n_dims, 4);
        for (uint32_t j = 0; j < t->n_dims; j++)
            put_int(s, (uint64_t)t->ne[j], 8);
        put_int(s, (uint32_t)t->type, 4);
        put_int(s, t->offset, 8);
    }
    if (w->exact)
        put(s, w->pad, w->pad_len);
    else
        put_zeros(s, pad_to(header, w->alignment));
    put(s, w->base, w->base_size);
    put(s, w->ext, w->ext_size);
    if (!s->buf && !s->err_no)
        flush(s);
    return s->err_no ? -1 : 0;
}

int vt_gguf_writer_to_memory(vt_gguf_writer *w, void **out, size_t *out_size, vt_error *err)
{
    uint64_t header, total;
    *out = NULL;
    *out_size = 0;
    if (total_size(w, &header, &total) || total > SIZE_MAX)
        return vt_error_set(err, VT_EINPUT, "gguf writer: total size overflows: expected a file that fits in memory");
    sink s = { .fd = -1 };
    s.buf = malloc((size_t)total);
    if (!s.buf)
        return vt_error_set(err, VT_EINPUT, "gguf writer: out of memory for %llu bytes", (ull)total);
    if (emit(w, &s, header) || s.pos != total) {
        free(s.buf);
        return vt_error_set(err, VT_EINPUT, "gguf writer: wrote %llu bytes: expected %llu",
                            (ull)s.pos, (ull)total);
    }
    *out = s.buf;
    *out_size = (size_t)total;
    return VT_OK;
}

typedef struct file_emit {
    const vt_gguf_writer *w;
    uint64_t header, total;
    const char *path;
} file_emit;

/* vt_publish's item writer: streams the file through a 1 MiB stage. */
static int emit_to_fd(int fd, void *ctx, vt_error *err)
{
    const file_emit *fe = ctx;
    uint8_t *stage = malloc(1u << 20);
    if (!stage)
        return vt_error_set(err, VT_EINPUT, "%s: out of memory", fe->path);
    sink s = { .fd = fd, .stage = stage, .stage_cap = 1u << 20 };
    int rc = VT_OK;
    if (emit(fe->w, &s, fe->header))
        rc = vt_error_set(err, VT_EINPUT, "%s: write: %s", fe->path, strerror(s.err_no ? s.err_no : EIO));
    else if (s.pos != fe->total)
        rc = vt_error_set(err, VT_EINPUT, "%s: wrote %llu bytes: expected %llu", fe->path, (ull)s.pos,
                          (ull)fe->total);
    free(stage);
    return rc;
}

int vt_gguf_writer_write_file(vt_gguf_writer *w, const char *path, const vt_publish_opts *opts, vt_error *err)
{
    file_emit fe = { .w = w, .path = path };
    if (total_size(w, &fe.header, &fe.total))
        return vt_error_set(err, VT_EINPUT, "%s: total size overflows: expected a smaller file", path);
    vt_publish_item it = { .path = path, .write = emit_to_fd, .write_ctx = &fe };
    return vt_publish_group(&it, 1, opts, err);
}
