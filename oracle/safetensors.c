/* safetensors writer and reader (safetensors.h). */
#include "safetensors.h"
#include "../common/vt_sort.h"

#include "../common/vt_publish.h"
#include "../common/vt_utf8.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *vt_st_dtype_name(vt_st_dtype d) { return d == VT_ST_BF16 ? "BF16" : "F32"; }
size_t vt_st_dtype_size(vt_st_dtype d) { return d == VT_ST_BF16 ? 2 : 4; }

/* ------------------------------------------------------------ writing */

typedef struct st_item {
    char *name;
    vt_st_dtype dtype;
    int n_dims;
    int64_t shape[4];
    uint64_t bytes;
    vt_st_fill_fn fill;
    void *ctx;
    int index;
} st_item;

struct vt_st_writer {
    st_item *items;
    int n, cap;
    cJSON *meta;
    char *header; /* built by vt_st_writer_size: padded JSON */
    uint64_t header_len;
};

vt_st_writer *vt_st_writer_new(void)
{
    vt_st_writer *w = calloc(1, sizeof *w);
    if (w && !(w->meta = cJSON_CreateObject())) {
        free(w);
        return NULL;
    }
    return w;
}

void vt_st_writer_free(vt_st_writer *w)
{
    if (!w)
        return;
    for (int i = 0; i < w->n; i++)
        free(w->items[i].name);
    free(w->items);
    cJSON_Delete(w->meta);
    free(w->header);
    free(w);
}

int vt_st_writer_meta(vt_st_writer *w, const char *key, const char *value, vt_error *err)
{
    if (!vt_utf8_valid(key, strlen(key)) || !vt_utf8_valid(value, strlen(value)))
        return vt_error_set(err, VT_EINPUT, "safetensors: metadata '%s': expected UTF-8", key);
    cJSON_DeleteItemFromObjectCaseSensitive(w->meta, key);
    if (!cJSON_AddStringToObject(w->meta, key, value))
        return vt_error_set(err, VT_EINPUT, "safetensors: out of memory");
    return VT_OK;
}

int vt_st_writer_add(vt_st_writer *w, const char *name, vt_st_dtype dtype, int n_dims, const int64_t *shape,
                     vt_st_fill_fn fill, void *ctx, vt_error *err)
{
    if (n_dims < 1 || n_dims > 4 || !*name || strlen(name) >= sizeof ((vt_st_tensor *)0)->name ||
        strcmp(name, "__metadata__") == 0)
        return vt_error_set(err, VT_EINPUT, "safetensors: tensor '%s': expected a name and 1..4 dimensions", name);
    uint64_t n = vt_st_dtype_size(dtype);
    for (int d = 0; d < n_dims; d++) {
        if (shape[d] <= 0 || (uint64_t)shape[d] > (UINT64_C(1) << 40) / n)
            return vt_error_set(err, VT_EINPUT, "safetensors: tensor '%s': dimension %d of %lld: expected 1..2^40",
                                name, d, (long long)shape[d]);
        n *= (uint64_t)shape[d];
    }
    for (int i = 0; i < w->n; i++)
        if (strcmp(w->items[i].name, name) == 0)
            return vt_error_set(err, VT_EINPUT, "safetensors: tensor '%s': added twice", name);
    if (w->n == w->cap) {
        int cap = w->cap ? 2 * w->cap : 64;
        st_item *p = realloc(w->items, (size_t)cap * sizeof *p);
        if (!p)
            return vt_error_set(err, VT_EINPUT, "safetensors: out of memory");
        w->items = p;
        w->cap = cap;
    }
    st_item *it = &w->items[w->n];
    memset(it, 0, sizeof *it);
    if (!(it->name = strdup(name)))
        return vt_error_set(err, VT_EINPUT, "safetensors: out of memory");
    it->dtype = dtype;
    it->n_dims = n_dims;
    memcpy(it->shape, shape, (size_t)n_dims * sizeof *shape);
    it->bytes = n;
    it->fill = fill;
    it->ctx = ctx;
    it->index = w->n;
    w->n++;
    return VT_OK;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const st_item *)a)->name, ((const st_item *)b)->name);
}

static int by_key(const void *a, const void *b)
{
    return strcmp((*(cJSON *const *)a)->string, (*(cJSON *const *)b)->string);
}

/* The header: __metadata__ (keys sorted) first, then the tensors in name
 * order, offsets in that order; spaces to a multiple of 8. */
static int build_header(vt_st_writer *w)
{
    if (w->header)
        return VT_OK;
    vt_sort(w->items, (size_t)w->n, sizeof *w->items, by_name);
    cJSON *root = cJSON_CreateObject(), *meta = cJSON_CreateObject();
    int ok = root && meta;
    int nm = cJSON_GetArraySize(w->meta);
    cJSON **keys = calloc((size_t)nm + 1, sizeof *keys);
    ok = ok && keys;
    int k = 0;
    for (cJSON *m = w->meta ? w->meta->child : NULL; ok && m; m = m->next)
        keys[k++] = m;
    if (ok)
        vt_sort(keys, (size_t)k, sizeof *keys, by_key);
    for (int i = 0; ok && i < k; i++)
        ok = cJSON_AddStringToObject(meta, keys[i]->string, keys[i]->valuestring) != NULL;
    free(keys);
    if (ok && k) {
        cJSON_AddItemToObject(root, "__metadata__", meta);
        meta = NULL;
    }
    uint64_t off = 0;
    for (int i = 0; ok && i < w->n; i++) {
        st_item *it = &w->items[i];
        cJSON *t = cJSON_CreateObject(), *sh = cJSON_CreateArray(), *of = cJSON_CreateArray();
        ok = t && sh && of && cJSON_AddStringToObject(t, "dtype", vt_st_dtype_name(it->dtype));
        for (int d = 0; ok && d < it->n_dims; d++)
            ok = cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)it->shape[d]));
        ok = ok && cJSON_AddItemToArray(of, cJSON_CreateNumber((double)off)) &&
             cJSON_AddItemToArray(of, cJSON_CreateNumber((double)(off + it->bytes)));
        if (ok) {
            cJSON_AddItemToObject(t, "shape", sh);
            cJSON_AddItemToObject(t, "data_offsets", of);
            cJSON_AddItemToObject(root, it->name, t);
        } else {
            cJSON_Delete(t);
            cJSON_Delete(sh);
            cJSON_Delete(of);
        }
        off += it->bytes;
    }
    cJSON_Delete(meta);
    char *json = ok ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    if (!json)
        return VT_EINPUT;
    size_t n = strlen(json), padded = (n + 7) / 8 * 8;
    w->header = malloc(padded + 1);
    if (!w->header) {
        free(json);
        return VT_EINPUT;
    }
    memcpy(w->header, json, n);
    memset(w->header + n, ' ', padded - n);
    w->header[padded] = '\0';
    w->header_len = padded;
    free(json);
    return VT_OK;
}

uint64_t vt_st_writer_size(vt_st_writer *w)
{
    if (build_header(w))
        return 0;
    uint64_t n = 8 + w->header_len;
    for (int i = 0; i < w->n; i++)
        n += w->items[i].bytes;
    return n;
}

int vt_st_writer_write(int fd, void *writer, vt_error *err)
{
    vt_st_writer *w = writer;
    if (build_header(w))
        return vt_error_set(err, VT_EINPUT, "safetensors: out of memory");
    uint8_t len[8];
    for (int b = 0; b < 8; b++)
        len[b] = (uint8_t)(w->header_len >> (8 * b));
    int rc = vt_publish_write_all(fd, len, 8, "safetensors header length", err);
    if (!rc)
        rc = vt_publish_write_all(fd, w->header, (size_t)w->header_len, "safetensors header", err);
    uint64_t most = 0;
    for (int i = 0; i < w->n; i++)
        most = w->items[i].bytes > most ? w->items[i].bytes : most;
    uint8_t *buf = rc || !most ? NULL : malloc((size_t)most);
    if (!rc && most && !buf)
        rc = vt_error_set(err, VT_EINPUT, "safetensors: out of memory (%llu bytes)", (unsigned long long)most);
    for (int i = 0; !rc && i < w->n; i++) {
        st_item *it = &w->items[i];
        rc = it->fill(it->ctx, it->index, buf, (size_t)it->bytes, err);
        if (!rc)
            rc = vt_publish_write_all(fd, buf, (size_t)it->bytes, it->name, err);
    }
    free(buf);
    return rc;
}

/* ------------------------------------------------------------ reading */

struct vt_st_file {
    vt_st_tensor *t;
    int n;
    cJSON *meta;
};

void vt_st_free(vt_st_file *f)
{
    if (!f)
        return;
    free(f->t);
    cJSON_Delete(f->meta);
    free(f);
}

int vt_st_count(const vt_st_file *f) { return f->n; }
const vt_st_tensor *vt_st_at(const vt_st_file *f, int i) { return i >= 0 && i < f->n ? &f->t[i] : NULL; }

const vt_st_tensor *vt_st_find(const vt_st_file *f, const char *name)
{
    for (int i = 0; i < f->n; i++)
        if (strcmp(f->t[i].name, name) == 0)
            return &f->t[i];
    return NULL;
}

const char *vt_st_meta(const vt_st_file *f, const char *key)
{
    const cJSON *v = f->meta ? cJSON_GetObjectItemCaseSensitive(f->meta, key) : NULL;
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int by_begin(const void *a, const void *b)
{
    const vt_st_tensor *x = a, *y = b;
    return x->begin < y->begin ? -1 : x->begin > y->begin ? 1 : 0;
}

/* An integer-valued JSON number in 0..2^53. */
static int u53(const cJSON *v, uint64_t *out)
{
    if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 9007199254740992.0 ||
        v->valuedouble != (double)(uint64_t)v->valuedouble)
        return 0;
    *out = (uint64_t)v->valuedouble;
    return 1;
}

vt_st_file *vt_st_open_memory(const void *data, size_t size, const char *name, vt_error *err)
{
    const uint8_t *p = data;
    if (size < 8) {
        vt_error_set(err, VT_EINPUT, "%s: %zu bytes: expected at least the 8-byte header length", name, size);
        return NULL;
    }
    uint64_t hl = 0;
    for (int b = 0; b < 8; b++)
        hl |= (uint64_t)p[b] << (8 * b);
    if (hl < 2 || hl > size - 8 || hl > (UINT64_C(100) << 20)) {
        vt_error_set(err, VT_EINPUT, "%s: header length %llu: expected 2..%llu (the file has %zu bytes)", name,
                     (unsigned long long)hl, (unsigned long long)(size - 8 < (100u << 20) ? size - 8 : 100u << 20),
                     size);
        return NULL;
    }
    if (!vt_utf8_valid((const char *)p + 8, (size_t)hl)) {
        vt_error_set(err, VT_EINPUT, "%s: header: expected UTF-8 JSON", name);
        return NULL;
    }
    cJSON *root = cJSON_ParseWithLength((const char *)p + 8, (size_t)hl);
    vt_st_file *f = calloc(1, sizeof *f);
    if (!f) {
        cJSON_Delete(root);
        vt_error_set(err, VT_EINPUT, "%s: out of memory", name);
        return NULL;
    }
    const uint64_t data_size = size - 8 - hl;
    const uint8_t *base = p + 8 + hl;
    int rc = VT_OK;
    if (!cJSON_IsObject(root))
        rc = vt_error_set(err, VT_EINPUT, "%s: header: expected a JSON object", name);
    int cap = rc ? 0 : cJSON_GetArraySize(root);
    if (!rc && !(f->t = calloc((size_t)cap + 1, sizeof *f->t)))
        rc = vt_error_set(err, VT_EINPUT, "%s: out of memory", name);
    const cJSON *meta = rc ? NULL : cJSON_GetObjectItemCaseSensitive(root, "__metadata__");
    if (meta) {
        if (!cJSON_IsObject(meta))
            rc = vt_error_set(err, VT_EINPUT, "%s: __metadata__: expected an object of strings", name);
        for (const cJSON *m = rc ? NULL : meta->child; m && !rc; m = m->next)
            if (!cJSON_IsString(m))
                rc = vt_error_set(err, VT_EINPUT, "%s: __metadata__.%s: expected a string", name, m->string);
        if (!rc && !(f->meta = cJSON_Duplicate(meta, 1)))
            rc = vt_error_set(err, VT_EINPUT, "%s: out of memory", name);
    }
    for (cJSON *e = rc ? NULL : root->child; !rc && e; e = e->next) {
        if (strcmp(e->string, "__metadata__") == 0)
            continue;
        if (vt_st_find(f, e->string)) {
            rc = vt_error_set(err, VT_EINPUT, "%s: tensor '%s': named twice", name, e->string);
            break;
        }
        vt_st_tensor *t = &f->t[f->n];
        const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype");
        const cJSON *sh = cJSON_GetObjectItemCaseSensitive(e, "shape");
        const cJSON *of = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
        if (strlen(e->string) == 0 || strlen(e->string) >= sizeof t->name) {
            rc = vt_error_set(err, VT_EINPUT, "%s: tensor name of %zu bytes: expected 1..255", name,
                              strlen(e->string));
            break;
        }
        if (!cJSON_IsObject(e) || !cJSON_IsString(dt) || !cJSON_IsArray(sh) || !cJSON_IsArray(of) ||
            cJSON_GetArraySize(of) != 2 || cJSON_GetArraySize(sh) < 1 || cJSON_GetArraySize(sh) > 4) {
            rc = vt_error_set(err, VT_EINPUT, "%s: %s: expected {dtype, shape (1..4 dims), data_offsets [begin, end]}",
                              name, e->string);
            break;
        }
        snprintf(t->name, sizeof t->name, "%s", e->string);
        if (strcmp(dt->valuestring, "F32") == 0)
            t->dtype = VT_ST_F32;
        else if (strcmp(dt->valuestring, "BF16") == 0)
            t->dtype = VT_ST_BF16;
        else {
            rc = vt_error_set(err, VT_EINPUT, "%s: %s.dtype '%s': expected F32 or BF16", name, t->name, dt->valuestring);
            break;
        }
        uint64_t n = vt_st_dtype_size(t->dtype), v;
        t->n_dims = cJSON_GetArraySize(sh);
        for (int d = 0; d < t->n_dims; d++) {
            if (!u53(cJSON_GetArrayItem(sh, d), &v) || v == 0 || v > (UINT64_C(1) << 40) / n) {
                rc = vt_error_set(err, VT_EINPUT, "%s: %s.shape[%d]: expected an integer 1..2^40", name, t->name, d);
                break;
            }
            t->shape[d] = (int64_t)v;
            n *= v;
        }
        if (rc)
            break;
        if (!u53(cJSON_GetArrayItem(of, 0), &t->begin) || !u53(cJSON_GetArrayItem(of, 1), &t->end) ||
            t->end < t->begin || t->end > data_size) {
            rc = vt_error_set(err, VT_EINPUT, "%s: %s.data_offsets: expected 0 <= begin <= end <= %llu", name, t->name,
                              (unsigned long long)data_size);
            break;
        }
        if (t->end - t->begin != n) {
            rc = vt_error_set(err, VT_EINPUT, "%s: %s: %llu bytes at its offsets: expected %llu (its dtype and shape)",
                              name, t->name, (unsigned long long)(t->end - t->begin), (unsigned long long)n);
            break;
        }
        t->data = base + t->begin;
        f->n++;
    }
    if (!rc) {
        vt_st_tensor *s = malloc(((size_t)f->n + 1) * sizeof *s);
        if (!s)
            rc = vt_error_set(err, VT_EINPUT, "%s: out of memory", name);
        else {
            memcpy(s, f->t, (size_t)f->n * sizeof *s);
            vt_sort(s, (size_t)f->n, sizeof *s, by_begin);
            uint64_t at = 0;
            for (int i = 0; !rc && i < f->n; i++) {
                if (s[i].begin != at)
                    rc = vt_error_set(err, VT_EINPUT, "%s: %s: data at %llu: expected %llu (%s)", name, s[i].name,
                                      (unsigned long long)s[i].begin, (unsigned long long)at,
                                      s[i].begin > at ? "no hole between tensors" : "no overlap");
                at = s[i].end;
            }
            if (!rc && at != data_size)
                rc = vt_error_set(err, VT_EINPUT, "%s: the tensors end at %llu: expected the end of the data, %llu",
                                  name, (unsigned long long)at, (unsigned long long)data_size);
            free(s);
        }
    }
    cJSON_Delete(root);
    if (rc) {
        vt_st_free(f);
        return NULL;
    }
    return f;
}
