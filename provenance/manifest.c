/* vt.manifest/1: the files a run used, by name, size and SHA-256.
 * Reading is strict (every field present once, of its type) because a
 * manifest that silently drops a field would verify less than it claims. */
#include "prov_internal.h"

#include "../common/vt_json.h"
#include "../common/vt_utf8.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MANIFEST_SCHEMA "vt.manifest/1"
enum { MANIFEST_MAX_BYTES = 256 << 20 };
/* Largest integer a JSON number (a double) carries exactly. */
static const double MAX_EXACT_SIZE = 9007199254740992.0;

void vt_manifest_free(vt_manifest *m)
{
    if (!m)
        return;
    for (int i = 0; i < m->n_files; i++)
        free(m->files[i].name);
    free(m->files);
    m->files = NULL;
    m->n_files = 0;
}

/* Hashes paths and stores them under names (names[i] is taken over). */
static int make_with_names(const char *const *paths, char **names, int n, vt_manifest *out, vt_error *err)
{
    out->files = NULL;
    out->n_files = 0;
    if (n < 0)
        return vt_error_set(err, VT_EINPUT, "vt_manifest_make: n: expected >= 0, got %d", n);
    vt_sha256_hex *hex = calloc((size_t)n + 1, sizeof *hex);
    uint64_t *sizes = calloc((size_t)n + 1, sizeof *sizes);
    vt_manifest_file *files = calloc((size_t)n + 1, sizeof *files);
    int rc = VT_OK;
    if (!hex || !sizes || !files)
        rc = vt_error_set(err, VT_EINPUT, "vt_manifest_make: out of memory for %d files", n);
    for (int i = 0; rc == VT_OK && i < n; i++)
        if (!names[i])
            rc = vt_error_set(err, VT_EINPUT, "vt_manifest_make: out of memory");
    if (rc == VT_OK)
        rc = vt_sha256_files(paths, n, 0, hex, sizes, err);
    if (rc != VT_OK) {
        for (int i = 0; i < n; i++)
            free(names[i]);
        free(hex);
        free(sizes);
        free(files);
        return rc;
    }
    for (int i = 0; i < n; i++) {
        files[i].name = names[i];
        files[i].size = sizes[i];
        files[i].sha256 = hex[i];
    }
    free(hex);
    free(sizes);
    out->files = files;
    out->n_files = n;
    return VT_OK;
}

int vt_manifest_make(const char *const *paths, int n, vt_manifest *out, vt_error *err)
{
    char **names = calloc((size_t)(n > 0 ? n : 0) + 1, sizeof *names);
    if (!names)
        return vt_error_set(err, VT_EINPUT, "vt_manifest_make: out of memory");
    for (int i = 0; i < n; i++)
        names[i] = vt_prov_strdup(paths[i]);
    int rc = make_with_names(paths, names, n, out, err);
    free(names);
    return rc;
}

/* Splits path into a malloc'd directory ("." when none) and its last part. */
static char *dir_of(const char *path, const char **base)
{
    const char *slash = strrchr(path, '/');
    *base = slash ? slash + 1 : path;
    if (!slash)
        return vt_prov_strdup(".");
    if (slash == path)
        return vt_prov_strdup("/");
    size_t n = (size_t)(slash - path);
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, path, n);
        d[n] = '\0';
    }
    return d;
}

/* Relative path from directory `from` to `to` (both canonical and absolute:
 * "/" or "/x/y", no trailing slash). */
static char *relative_path(const char *from, const char *to)
{
    /* Length of the longest shared prefix that ends at a component boundary. */
    size_t common = 0;
    for (size_t i = 0;; i++) {
        char a = from[i], b = to[i];
        if ((a == '/' || !a) && (b == '/' || !b))
            common = i;
        if (a != b || !a)
            break;
    }
    vt_sbuf b = { 0 };
    for (const char *p = from + common; *p; p++)
        if (*p == '/' && p[1])
            vt_sbuf_puts(&b, b.n ? "/.." : "..");
    const char *rest = to + common;
    while (*rest == '/')
        rest++;
    if (*rest) {
        if (b.n)
            vt_sbuf_puts(&b, "/");
        vt_sbuf_puts(&b, rest);
    }
    if (!b.n)
        vt_sbuf_puts(&b, ".");
    return vt_sbuf_take(&b);
}

int vt_manifest_make_for(const char *manifest_path, const char *const *paths, int n, vt_manifest *out,
                         vt_error *err)
{
    out->files = NULL;
    out->n_files = 0;
    const char *mbase;
    char *mdir = dir_of(manifest_path, &mbase);
    char mreal[PATH_MAX];
    if (!mdir || !realpath(mdir, mreal)) {
        int e = errno;
        free(mdir);
        return vt_error_set(err, VT_EINPUT, "%s: its directory: expected an existing directory: %s", manifest_path,
                            strerror(e));
    }
    free(mdir);
    char **names = calloc((size_t)(n > 0 ? n : 0) + 1, sizeof *names);
    if (!names)
        return vt_error_set(err, VT_EINPUT, "vt_manifest_make_for: out of memory");
    for (int i = 0; i < n; i++) {
        /* Canonical directory, but the file's own name kept: a symlinked
         * model file is recorded under the name the user gave it. */
        const char *base;
        char *d = dir_of(paths[i], &base);
        char dreal[PATH_MAX];
        if (!d || !realpath(d, dreal)) {
            int e = errno;
            free(d);
            for (int k = 0; k < i; k++)
                free(names[k]);
            free(names);
            return vt_error_set(err, VT_EINPUT, "%s: cannot read: %s", paths[i], strerror(e));
        }
        free(d);
        char *rel = relative_path(mreal, dreal);
        if (rel && strcmp(rel, ".") == 0) {
            names[i] = vt_prov_strdup(base);
        } else if (rel) {
            vt_sbuf b = { 0 };
            vt_sbuf_printf(&b, "%s/%s", rel, base);
            names[i] = vt_sbuf_take(&b);
        }
        free(rel);
    }
    int rc = make_with_names(paths, names, n, out, err);
    free(names);
    return rc;
}

char *vt_manifest_to_json(const vt_manifest *m)
{
    vt_sbuf b = { 0 };
    vt_sbuf_puts(&b, "{\n  \"schema\": \"" MANIFEST_SCHEMA "\",\n  \"files\": [");
    for (int i = 0; i < m->n_files; i++) {
        const vt_manifest_file *f = &m->files[i];
        vt_sbuf_puts(&b, i ? ",\n    {\"name\": " : "\n    {\"name\": ");
        vt_sbuf_json_str(&b, f->name);
        vt_sbuf_printf(&b, ", \"size\": %llu, \"sha256\": \"%s\"}", (unsigned long long)f->size, f->sha256.hex);
    }
    vt_sbuf_puts(&b, m->n_files ? "\n  ]\n}\n" : "]\n}\n");
    return vt_sbuf_take(&b);
}

int vt_manifest_write(const vt_manifest *m, const char *path, const vt_publish_opts *opts, vt_error *err)
{
    char *json = vt_manifest_to_json(m);
    if (!json)
        return vt_error_set(err, VT_EINPUT, "%s: out of memory writing the manifest", path);
    vt_publish_item it = { .path = path, .data = json, .size = strlen(json) };
    int rc = vt_publish_group(&it, 1, opts, err);
    free(json);
    return rc;
}

static int is_sha256_hex(const char *s)
{
    size_t n = 0;
    for (; s[n]; n++)
        if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f')))
            return 0;
    return n == 64;
}

int vt_manifest_read(const char *path, vt_manifest *out, vt_error *err)
{
    out->files = NULL;
    out->n_files = 0;
    char *text;
    size_t len;
    int e = vt_prov_read_file(path, MANIFEST_MAX_BYTES, &text, &len);
    if (e)
        return vt_error_set(err, VT_EINPUT, "%s: cannot read: %s", path, vt_prov_strerror(path, e));
    cJSON *root = vt_json_parse(text, len, path, err);
    free(text);
    if (!root)
        return VT_EINPUT;
    int rc = VT_OK;
    cJSON *schema = NULL, *files = NULL;
    if (!cJSON_IsObject(root))
        rc = vt_error_set(err, VT_EINPUT, "%s: top level: expected a JSON object", path);
    if (rc == VT_OK && !(schema = vt_prov_json_field(root, "schema", path, "", err)))
        rc = VT_EINPUT;
    if (rc == VT_OK && (!cJSON_IsString(schema) || strcmp(schema->valuestring, MANIFEST_SCHEMA) != 0))
        rc = vt_error_set(err, VT_EINPUT, "%s: schema: expected \"" MANIFEST_SCHEMA "\"", path);
    if (rc == VT_OK && !(files = vt_prov_json_field(root, "files", path, "", err)))
        rc = VT_EINPUT;
    if (rc == VT_OK && !cJSON_IsArray(files))
        rc = vt_error_set(err, VT_EINPUT, "%s: files: expected an array", path);
    int n = rc == VT_OK ? cJSON_GetArraySize(files) : 0;
    vt_manifest_file *mf = rc == VT_OK ? calloc((size_t)n + 1, sizeof *mf) : NULL;
    if (rc == VT_OK && !mf)
        rc = vt_error_set(err, VT_EINPUT, "%s: out of memory for %d files", path, n);
    int i = 0;
    for (cJSON *f = rc == VT_OK ? files->child : NULL; f && rc == VT_OK; f = f->next, i++) {
        char where[48];
        snprintf(where, sizeof where, "files[%d]", i);
        if (!cJSON_IsObject(f)) {
            rc = vt_error_set(err, VT_EINPUT, "%s: %s: expected an object {name, size, sha256}", path, where);
            break;
        }
        cJSON *name = vt_prov_json_field(f, "name", path, where, err);
        cJSON *size = name ? vt_prov_json_field(f, "size", path, where, err) : NULL;
        cJSON *sha = size ? vt_prov_json_field(f, "sha256", path, where, err) : NULL;
        if (!sha) {
            rc = VT_EINPUT;
            break;
        }
        if (!cJSON_IsString(name) || !name->valuestring[0]) {
            rc = vt_error_set(err, VT_EINPUT, "%s: %s.name: expected a non-empty string", path, where);
            break;
        }
        /* Names are relative to the manifest's directory by design, '..'
         * included (vt_manifest_make_for writes "../models/x.gguf"); an
         * absolute name or a control character is refused (issue 19). */
        const char *nm = name->valuestring;
        int ctl = 0;
        for (const unsigned char *q = (const unsigned char *)nm; *q; q++)
            ctl |= *q < 0x20 || *q == 0x7f;
        if (nm[0] == '/' || ctl) {
            char shown[208];
            vt_ascii_line(shown, sizeof shown, nm);
            rc = vt_error_set(err, VT_EINPUT, "%s: %s.name: \"%s\": expected a path relative to the manifest's "
                              "directory (not absolute, no control character)", path, where, shown);
            break;
        }
        double sz = size->valuedouble;
        if (!cJSON_IsNumber(size) || !(sz >= 0) || sz > MAX_EXACT_SIZE || sz != (double)(uint64_t)sz) {
            rc = vt_error_set(err, VT_EINPUT, "%s: %s.size: expected an integer in 0..2^53", path, where);
            break;
        }
        if (!cJSON_IsString(sha) || !is_sha256_hex(sha->valuestring)) {
            rc = vt_error_set(err, VT_EINPUT, "%s: %s.sha256: expected 64 lower-case hex digits", path, where);
            break;
        }
        mf[i].name = vt_prov_strdup(name->valuestring);
        if (!mf[i].name) {
            rc = vt_error_set(err, VT_EINPUT, "%s: out of memory", path);
            break;
        }
        mf[i].size = (uint64_t)sz;
        memcpy(mf[i].sha256.hex, sha->valuestring, 65);
    }
    cJSON_Delete(root);
    out->files = mf;
    out->n_files = mf ? n : 0; /* unset names are NULL (calloc) */
    if (rc != VT_OK)
        vt_manifest_free(out);
    return rc;
}

void vt_manifest_results_free(vt_manifest_result *r, int n)
{
    for (int i = 0; r && i < n; i++) {
        free(r[i].path);
        free(r[i].problem);
    }
    free(r);
}

int vt_manifest_check_files(const vt_manifest *m, const char *base_dir, vt_manifest_result **out, vt_error *err)
{
    *out = NULL;
    int n = m->n_files;
    vt_manifest_result *res = calloc((size_t)n + 1, sizeof *res);
    char **paths = calloc((size_t)n + 1, sizeof *paths);
    vt_sha256_hex *hex = calloc((size_t)n + 1, sizeof *hex);
    uint64_t *sizes = calloc((size_t)n + 1, sizeof *sizes);
    int *status = calloc((size_t)n + 1, sizeof *status);
    int rc = VT_OK;
    if (!res || !paths || !hex || !sizes || !status)
        rc = vt_error_set(err, VT_EINPUT, "vt_manifest_verify: out of memory for %d files", n);
    for (int i = 0; rc == VT_OK && i < n; i++)
        if (!(paths[i] = vt_prov_join(base_dir, m->files[i].name)))
            rc = vt_error_set(err, VT_EINPUT, "vt_manifest_verify: out of memory");
    if (rc == VT_OK)
        vt_sha256_files_each((const char *const *)paths, n, 0, hex, sizes, status);

    /* A full line per mismatch for the caller; a compact one (names only) for err. */
    vt_sbuf brief = { 0 };
    int bad = 0, omitted = 0;
    for (int i = 0; rc == VT_OK && i < n; i++) {
        const vt_manifest_file *f = &m->files[i];
        vt_manifest_result *r = &res[i];
        r->path = paths[i];
        paths[i] = NULL;
        r->error = status[i];
        vt_sbuf line = { 0 };
        const char *what = NULL;
        if (status[i] == ENOMEM) {
            rc = vt_error_set(err, VT_EINPUT, "vt_manifest_verify: out of memory hashing %s", r->path);
            break;
        } else if (status[i] == ENOENT || status[i] == ENOTDIR) {
            r->status = VT_MANIFEST_MISSING;
            vt_sbuf_printf(&line, "%s: missing (%s)", f->name, r->path);
            what = "missing";
        } else if (status[i]) {
            r->status = VT_MANIFEST_UNREADABLE;
            vt_sbuf_printf(&line, "%s: unreadable (%s): %s", f->name, r->path, vt_prov_strerror(r->path, status[i]));
            what = "unreadable";
        } else {
            r->size = sizes[i];
            r->sha256 = hex[i];
            int size_bad = sizes[i] != f->size, hash_bad = strcmp(hex[i].hex, f->sha256.hex) != 0;
            r->status = size_bad || hash_bad ? VT_MANIFEST_DIFFERS : VT_MANIFEST_OK;
            if (size_bad && hash_bad) {
                vt_sbuf_printf(&line, "%s: size %llu (manifest %llu), sha256 %s (manifest %s)", f->name,
                               (unsigned long long)sizes[i], (unsigned long long)f->size, hex[i].hex, f->sha256.hex);
                what = "size and sha256 differ";
            } else if (size_bad) {
                /* Same hash, other size: cannot happen unless the file changed
                 * between the read and the size; reported all the same. */
                vt_sbuf_printf(&line, "%s: size %llu (manifest %llu)", f->name, (unsigned long long)sizes[i],
                               (unsigned long long)f->size);
                what = "size differs";
            } else if (hash_bad) {
                vt_sbuf_printf(&line, "%s: sha256 %s (manifest %s)", f->name, hex[i].hex, f->sha256.hex);
                what = "sha256 differs";
            }
        }
        if (what) {
            if (!(r->problem = vt_sbuf_take(&line))) {
                rc = vt_error_set(err, VT_EINPUT, "vt_manifest_verify: out of memory");
                break;
            }
            /* err->msg holds 1 KiB: name as many as fit, count the rest. */
            if (brief.n + strlen(f->name) + strlen(what) < 800)
                vt_sbuf_printf(&brief, "%s%s: %s", bad ? "; " : "", f->name, what);
            else
                omitted++;
            bad++;
        }
    }
    if (rc == VT_OK && brief.oom)
        rc = vt_error_set(err, VT_EINPUT, "vt_manifest_verify: out of memory");
    if (rc == VT_OK && bad) {
        if (omitted)
            vt_sbuf_printf(&brief, "; and %d more", omitted);
        char *s = vt_sbuf_take(&brief);
        rc = vt_error_set(err, VT_ECHECK, "%d of %d files differ from the manifest: %s", bad, n, s ? s : "");
        free(s);
    } else {
        free(brief.p);
    }
    for (int i = 0; paths && i < n; i++)
        free(paths[i]);
    free(paths);
    free(hex);
    free(sizes);
    free(status);
    if (rc == VT_EINPUT) {
        vt_manifest_results_free(res, n);
        return rc;
    }
    *out = res;
    return rc;
}

int vt_manifest_check(const vt_manifest *m, const char *base_dir, char ***problems, int *n_problems, vt_error *err)
{
    *problems = NULL;
    *n_problems = 0;
    vt_manifest_result *res;
    int rc = vt_manifest_check_files(m, base_dir, &res, err);
    if (rc == VT_EINPUT)
        return rc;
    /* The lines are the results' own, handed over. */
    int bad = 0;
    for (int i = 0; i < m->n_files; i++)
        bad += res[i].problem != NULL;
    char **lines = calloc((size_t)bad + 1, sizeof *lines);
    if (!lines) {
        vt_manifest_results_free(res, m->n_files);
        return vt_error_set(err, VT_EINPUT, "vt_manifest_verify: out of memory");
    }
    for (int i = 0, k = 0; i < m->n_files; i++)
        if (res[i].problem) {
            lines[k++] = res[i].problem;
            res[i].problem = NULL;
        }
    vt_manifest_results_free(res, m->n_files);
    *problems = lines;
    *n_problems = bad;
    return rc;
}

int vt_manifest_verify(const vt_manifest *m, const char *base_dir, vt_error *err)
{
    char **lines;
    int n;
    int rc = vt_manifest_check(m, base_dir, &lines, &n, err);
    vt_prov_lines_free(lines, n);
    return rc;
}
