/* Member names, name sets and the manifest (vt.seal.manifest/1).
 *
 * Names are printable ASCII without '\': portable to every file system and
 * tar reader, no charset conversion in tar headers, and a case-collision
 * check by ASCII folding is then exact. The manifest is canonical JSON, one
 * member per line:
 *   {"schema":"vt.seal.manifest/1","members":[
 *   {"path":"a/","type":"dir","mode":"0755"},
 *   {"path":"a/b.json","type":"file","mode":"0644","size":12,"sha256":"..."}
 *   ]}
 * A reader re-serializes what it parsed and requires the same bytes, so a
 * manifest has exactly one form and one sha256. */
#include "seal_internal.h"

#include "../common/vt_json.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void vt_seal_hex(const unsigned char *d, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[d[i] >> 4];
        out[2 * i + 1] = digits[d[i] & 15];
    }
    out[2 * n] = '\0';
}

int vt_seal_is_hex64(const char *s)
{
    if (!s || strlen(s) != 64)
        return 0;
    for (; *s; s++)
        if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
            return 0;
    return 1;
}

void vt_seal_buf_add(vt_seal_buf *b, const char *s, size_t n)
{
    if (b->failed)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->failed = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

void vt_seal_buf_printf(vt_seal_buf *b, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof tmp) { /* only short fields pass through here */
        b->failed = 1;
        return;
    }
    vt_seal_buf_add(b, tmp, (size_t)n);
}

const char *vt_seal_path_problem(const char *path, int is_dir)
{
    size_t n = strlen(path);
    if (n == 0)
        return "empty path";
    if (path[0] == '/')
        return "absolute path";
    if (n > VT_SEAL_PATH_MAX)
        return "path longer than 4095 bytes";
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)path[i];
        if (c < 0x20 || c > 0x7e)
            return "character outside printable ASCII";
        if (c == '\\')
            return "backslash in name";
    }
    if (is_dir != (path[n - 1] == '/'))
        return is_dir ? "directory path without a trailing '/'" : "file path with a trailing '/'";
    size_t end = is_dir ? n - 1 : n;
    for (size_t i = 0; i < end;) {
        size_t j = i;
        while (j < end && path[j] != '/')
            j++;
        size_t len = j - i;
        if (len == 0)
            return "empty path component";
        if (len == 2 && path[i] == '.' && path[i + 1] == '.')
            return "'..' component";
        if (len == 1 && path[i] == '.')
            return "'.' component";
        if (len > VT_SEAL_NAME_MAX)
            return "path component longer than 255 bytes";
        i = j + 1;
    }
    return NULL;
}

/* ---- name set: open addressing over owned copies of the keys ---- */

struct vt_nameset {
    int fold;
    char **keys;   /* key (folded, without trailing '/') */
    char **orig;   /* the path as added */
    size_t n, cap; /* cap: power of two */
};

vt_nameset *vt_nameset_new(int fold)
{
    vt_nameset *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->fold = fold;
    s->cap = 1024;
    s->keys = calloc(s->cap, sizeof *s->keys);
    s->orig = calloc(s->cap, sizeof *s->orig);
    if (!s->keys || !s->orig) {
        vt_nameset_free(s);
        return NULL;
    }
    return s;
}

static uint64_t name_hash(const char *k)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *k; k++)
        h = (h ^ (unsigned char)*k) * 1099511628211ull;
    return h;
}

static int nameset_grow(vt_nameset *s)
{
    size_t cap = s->cap * 2;
    char **keys = calloc(cap, sizeof *keys), **orig = calloc(cap, sizeof *orig);
    if (!keys || !orig) {
        free(keys);
        free(orig);
        return -1;
    }
    for (size_t i = 0; i < s->cap; i++) {
        if (!s->keys[i])
            continue;
        size_t j = name_hash(s->keys[i]) & (cap - 1);
        while (keys[j])
            j = (j + 1) & (cap - 1);
        keys[j] = s->keys[i];
        orig[j] = s->orig[i];
    }
    free(s->keys);
    free(s->orig);
    s->keys = keys;
    s->orig = orig;
    s->cap = cap;
    return 0;
}

const char *vt_nameset_add(vt_nameset *s, const char *path, int *oom)
{
    *oom = 0;
    if ((s->n + 1) * 2 > s->cap && nameset_grow(s)) {
        *oom = 1;
        return NULL;
    }
    size_t n = strlen(path);
    size_t kl = n && path[n - 1] == '/' ? n - 1 : n;
    char *key = malloc(kl + 1), *orig = malloc(n + 1);
    if (!key || !orig) {
        free(key);
        free(orig);
        *oom = 1;
        return NULL;
    }
    for (size_t i = 0; i < kl; i++)
        key[i] = s->fold && path[i] >= 'A' && path[i] <= 'Z' ? (char)(path[i] + 32) : path[i];
    key[kl] = '\0';
    memcpy(orig, path, n + 1);
    size_t j = name_hash(key) & (s->cap - 1);
    for (; s->keys[j]; j = (j + 1) & (s->cap - 1))
        if (strcmp(s->keys[j], key) == 0) {
            free(key);
            free(orig);
            return s->orig[j];
        }
    s->keys[j] = key;
    s->orig[j] = orig;
    s->n++;
    return NULL;
}

void vt_nameset_free(vt_nameset *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->cap; i++) {
        if (s->keys)
            free(s->keys[i]);
        if (s->orig)
            free(s->orig[i]);
    }
    free(s->keys);
    free(s->orig);
    free(s);
}

/* ---- manifest ---- */

static void add_member_json(vt_seal_buf *b, const vt_seal_member *m)
{
    vt_seal_buf_add(b, "{\"path\":\"", 9);
    for (const char *p = m->path; *p; p++) { /* admitted names need only '"' escaped */
        if (*p == '"')
            vt_seal_buf_add(b, "\\\"", 2);
        else
            vt_seal_buf_add(b, p, 1);
    }
    if (m->is_dir)
        vt_seal_buf_printf(b, "\",\"type\":\"dir\",\"mode\":\"%04o\"}", m->mode);
    else
        vt_seal_buf_printf(b, "\",\"type\":\"file\",\"mode\":\"%04o\",\"size\":%llu,\"sha256\":\"%s\"}", m->mode,
                           (unsigned long long)m->size, m->sha256);
}

char *vt_seal_manifest_json(const vt_seal_member *m, size_t n, size_t *len)
{
    vt_seal_buf b = { 0 };
    vt_seal_buf_add(&b, "{\"schema\":\"" VT_SEAL_MANIFEST_SCHEMA "\",\"members\":[\n",
                    strlen("{\"schema\":\"" VT_SEAL_MANIFEST_SCHEMA "\",\"members\":[\n"));
    for (size_t i = 0; i < n; i++) {
        add_member_json(&b, &m[i]);
        vt_seal_buf_add(&b, i + 1 < n ? ",\n" : "\n", i + 1 < n ? 2 : 1);
    }
    vt_seal_buf_add(&b, "]}\n", 3);
    if (b.failed) {
        free(b.p);
        return NULL;
    }
    *len = b.len;
    return b.p;
}

void vt_seal_manifest_free(vt_seal_manifest *m)
{
    for (size_t i = 0; i < m->n; i++)
        free(m->m[i].path);
    free(m->m);
    m->m = NULL;
    m->n = 0;
}

static int parse_member(const cJSON *o, size_t i, const char *what, vt_seal_member *m, vt_error *err)
{
    const cJSON *path = cJSON_GetObjectItemCaseSensitive(o, "path");
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(o, "type");
    const cJSON *mode = cJSON_GetObjectItemCaseSensitive(o, "mode");
    if (!cJSON_IsObject(o) || !cJSON_IsString(path) || !cJSON_IsString(type) || !cJSON_IsString(mode))
        return vt_error_set(err, VT_EINPUT, "%s: members[%zu]: expected an object with path, type and mode", what, i);
    m->is_dir = strcmp(type->valuestring, "dir") == 0;
    if (!m->is_dir && strcmp(type->valuestring, "file") != 0)
        return vt_error_set(err, VT_EINPUT, "%s: members[%zu].type: expected \"file\" or \"dir\"", what, i);
    const char *why = vt_seal_path_problem(path->valuestring, m->is_dir);
    if (why)
        return vt_error_set(err, VT_EINPUT, "%s: members[%zu].path '%s': %s", what, i, path->valuestring, why);
    if (strcmp(mode->valuestring, "0755") == 0)
        m->mode = 0755;
    else if (!m->is_dir && strcmp(mode->valuestring, "0644") == 0)
        m->mode = 0644;
    else
        return vt_error_set(err, VT_EINPUT, "%s: members[%zu].mode: expected \"0755\"%s", what, i,
                            m->is_dir ? "" : " or \"0644\"");
    if (!m->is_dir) {
        const cJSON *size = cJSON_GetObjectItemCaseSensitive(o, "size");
        const cJSON *sha = cJSON_GetObjectItemCaseSensitive(o, "sha256");
        if (!cJSON_IsNumber(size) || size->valuedouble < 0 || size->valuedouble > 9007199254740992.0 ||
            size->valuedouble != (double)(uint64_t)size->valuedouble)
            return vt_error_set(err, VT_EINPUT, "%s: members[%zu].size: expected an integer >= 0", what, i);
        if (!cJSON_IsString(sha) || !vt_seal_is_hex64(sha->valuestring))
            return vt_error_set(err, VT_EINPUT, "%s: members[%zu].sha256: expected 64 lower-case hex digits", what, i);
        m->size = (uint64_t)size->valuedouble;
        memcpy(m->sha256, sha->valuestring, 65);
    }
    m->path = strdup(path->valuestring);
    if (!m->path)
        return vt_error_set(err, VT_EINPUT, "%s: out of memory", what);
    return VT_OK;
}

/* Every member's parent directory must be listed before it: with sorted
 * paths a parent always sorts before its children. */
static int check_structure(const vt_seal_manifest *man, const char *what, vt_error *err)
{
    int rc = VT_OK, oom = 0;
    vt_nameset *dirs = vt_nameset_new(0), *folded = vt_nameset_new(1);
    if (!dirs || !folded) {
        rc = vt_error_set(err, VT_EINPUT, "%s: out of memory", what);
        goto out;
    }
    vt_nameset_add(folded, VT_SEAL_MANIFEST_NAME, &oom);
    for (size_t i = 0; i < man->n && rc == VT_OK; i++) {
        const vt_seal_member *m = &man->m[i];
        if (i && strcmp(man->m[i - 1].path, m->path) >= 0) {
            rc = vt_error_set(err, VT_EINPUT, "%s: members[%zu] '%s': not after '%s' in byte order", what, i, m->path,
                              man->m[i - 1].path);
            break;
        }
        const char *other = vt_nameset_add(folded, m->path, &oom);
        if (other) {
            rc = vt_error_set(err, VT_EINPUT, "%s: members[%zu] '%s': %s '%s'", what, i, m->path,
                              strcmp(other, VT_SEAL_MANIFEST_NAME) == 0 ? "collides with the reserved name"
                                                                        : "collides (case or duplicate) with",
                              other);
            break;
        }
        size_t n = strlen(m->path), end = m->is_dir ? n - 1 : n;
        const char *slash = NULL;
        for (size_t j = 0; j < end; j++)
            if (m->path[j] == '/')
                slash = m->path + j;
        if (slash) {
            char parent[VT_SEAL_PATH_MAX + 2];
            size_t pl = (size_t)(slash - m->path) + 1;
            memcpy(parent, m->path, pl);
            parent[pl] = '\0';
            /* Listed iff adding it finds it there (the error ends the check). */
            if (!vt_nameset_add(dirs, parent, &oom) && !oom) {
                rc = vt_error_set(err, VT_EINPUT, "%s: members[%zu] '%s': its directory '%s' is not listed before it",
                                  what, i, m->path, parent);
                break;
            }
        }
        if (m->is_dir)
            vt_nameset_add(dirs, m->path, &oom);
        if (oom)
            rc = vt_error_set(err, VT_EINPUT, "%s: out of memory", what);
    }
out:
    vt_nameset_free(dirs);
    vt_nameset_free(folded);
    return rc;
}

int vt_seal_manifest_parse(const char *text, size_t len, const char *what, uint64_t max_entries,
                           vt_seal_manifest *out, vt_error *err)
{
    memset(out, 0, sizeof *out);
    cJSON *root = vt_json_parse(text, len, what, err);
    if (!root)
        return VT_EINPUT;
    int rc = VT_OK;
    const cJSON *schema = cJSON_GetObjectItemCaseSensitive(root, "schema");
    const cJSON *members = cJSON_GetObjectItemCaseSensitive(root, "members");
    if (!cJSON_IsString(schema) || strcmp(schema->valuestring, VT_SEAL_MANIFEST_SCHEMA) != 0) {
        rc = vt_error_set(err, VT_EINPUT, "%s: schema: expected \"%s\"", what, VT_SEAL_MANIFEST_SCHEMA);
        goto out;
    }
    if (!cJSON_IsArray(members)) {
        rc = vt_error_set(err, VT_EINPUT, "%s: members: expected an array", what);
        goto out;
    }
    size_t n = (size_t)cJSON_GetArraySize(members);
    if (n >= max_entries) { /* the manifest itself is an entry too */
        rc = vt_error_set(err, VT_EINPUT, "%s: %zu members: more than the limit of %llu entries (--max-entries)", what,
                          n, (unsigned long long)max_entries);
        goto out;
    }
    out->m = calloc(n ? n : 1, sizeof *out->m);
    if (!out->m) {
        rc = vt_error_set(err, VT_EINPUT, "%s: out of memory", what);
        goto out;
    }
    const cJSON *o;
    cJSON_ArrayForEach(o, members)
    {
        rc = parse_member(o, out->n, what, &out->m[out->n], err);
        if (rc)
            goto out;
        out->n++;
    }
    rc = check_structure(out, what, err);
    if (rc)
        goto out;
    size_t clen = 0;
    char *canon = vt_seal_manifest_json(out->m, out->n, &clen);
    if (!canon)
        rc = vt_error_set(err, VT_EINPUT, "%s: out of memory", what);
    else if (clen != len || memcmp(canon, text, len) != 0)
        rc = vt_error_set(err, VT_EINPUT, "%s: not in canonical form (as vt-seal writes it)", what);
    free(canon);
out:
    cJSON_Delete(root);
    if (rc)
        vt_seal_manifest_free(out);
    return rc;
}
