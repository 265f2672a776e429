/* The bytes a Python process imported against the RECORDs of the
 * distributions installed where it imported them from (provenance.h,
 * vt_imports_verify; seed 000's rule: package bytes = imported bytes).
 *
 * Input, vt.imports/1 (written by oracle/transformers/vt_imports.py inside
 * the process): {"schema", "sites": [dir...], "required": [top-level
 * package...], "modules": [{"name", "path"}...], "objects": [path...]}.
 * Each site's *.dist-info/RECORD is read; each imported file, by its real
 * path, is either listed by one RECORD (then its sha256 and size must be
 * the listed ones), or it is of a required package and unlisted (a
 * problem: RECORD does not cover it), or no distribution owns it (the
 * interpreter's standard library, libc, the CUDA driver, a virtualenv's
 * own files in its site directory): recorded by path and sha256 as the
 * runtime, never counted as verified. A required package of which no
 * module was imported is a problem too. */
#include "prov_internal.h"
#include "../common/vt_sort.h"
#include "../common/vt_input.h"
#include "provenance.h"

#include "../common/vt_json.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

typedef struct rec_file {
    char *path; /* real path */
    int dist;
    char *hash; /* "sha256=..." or "" */
    char *size;
    int line;
} rec_file;

typedef struct dist {
    char *name, *version, *record;
    vt_sha256_hex record_sha256;
    int used; /* owns a file the process imported */
} dist;

/* The runtime's files as found (their lines are made from these at the end). */
typedef struct outside_list {
    vt_imports_outside *v;
    int n, cap, oom;
} outside_list;

static void add_outside(outside_list *l, int object, const char *path, const vt_sha256_hex *sha256, int in_site)
{
    if (l->oom)
        return;
    if (l->n == l->cap) {
        int nc = l->cap ? 2 * l->cap : 16;
        vt_imports_outside *v = realloc(l->v, sizeof *v * (size_t)nc);
        if (!v) {
            l->oom = 1;
            return;
        }
        l->v = v;
        l->cap = nc;
    }
    vt_imports_outside *o = &l->v[l->n];
    if (!(o->path = vt_prov_strdup(path))) {
        l->oom = 1;
        return;
    }
    o->object = object;
    o->sha256 = *sha256;
    o->in_site = in_site;
    l->n++;
}

static void free_outside(vt_imports_outside *v, int n)
{
    for (int i = 0; v && i < n; i++)
        free(v[i].path);
    free(v);
}

static void free_dists(vt_imports_dist *v, int n)
{
    for (int i = 0; v && i < n; i++) {
        free(v[i].name);
        free(v[i].version);
        free(v[i].record);
    }
    free(v);
}

static int cmp_rec(const void *a, const void *b)
{
    return strcmp(((const rec_file *)a)->path, ((const rec_file *)b)->path);
}

void vt_imports_report_free(vt_imports_report *r)
{
    if (!r)
        return;
    for (int i = 0; i < r->n_dists; i++)
        free(r->dists[i]);
    free(r->dists);
    for (int i = 0; i < r->n_outside; i++)
        free(r->outside[i]);
    free(r->outside);
    for (int i = 0; i < r->n_problems; i++)
        free(r->problems[i]);
    free(r->problems);
    for (int i = 0; i < r->n_loaded; i++)
        free(r->loaded[i]);
    free(r->loaded);
    free_dists(r->dist_entries, r->n_dists);
    free_outside(r->outside_entries, r->n_outside);
    memset(r, 0, sizeof *r);
}

/* Reads one site's RECORDs into recs/dists. */
static int read_site(const char *site, rec_file **recs, int *n_recs, int *cap, dist **dists, int *n_dists,
                     vt_lines *problems, vt_error *err)
{
    int dfd;
    vt_error derr;
    if (vt_input_opendir(site, NULL, &dfd, &derr))
        return vt_error_set(err, VT_EINPUT, "sites: %s", derr.msg);
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return vt_error_set(err, VT_EINPUT, "sites: %s: %s: expected a readable directory", site, strerror(errno));
    }
    char **names = NULL;
    int nn = 0, rc = VT_OK;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        size_t l = strlen(de->d_name);
        if (l > 10 && strcmp(de->d_name + l - 10, ".dist-info") == 0) {
            char **p = realloc(names, sizeof *p * (size_t)(nn + 1));
            if (!p || !(p[nn] = vt_prov_strdup(de->d_name))) {
                free(p ? p : names);
                names = NULL;
                rc = vt_error_set(err, VT_EINPUT, "out of memory");
                break;
            }
            names = p;
            nn++;
        }
    }
    closedir(d);
    for (int i = 0; i < nn && !rc; i++) {
        char *dir = vt_prov_join(site, names[i]), *rpath = dir ? vt_prov_join(dir, "RECORD") : NULL;
        char *text = NULL;
        size_t len = 0;
        int e = rpath ? vt_prov_read_file(rpath, 64u << 20, &text, &len) : ENOMEM;
        if (e) {
            vt_lines_addf(problems, "%s: RECORD unreadable: %s: expected every installed distribution to list its files",
                          rpath ? rpath : names[i], vt_prov_strerror(rpath, e));
        } else {
            dist *ds = realloc(*dists, sizeof *ds * (size_t)(*n_dists + 1));
            if (!ds) {
                rc = vt_error_set(err, VT_EINPUT, "out of memory");
            } else {
                *dists = ds;
                dist *t = &ds[(*n_dists)++];
                memset(t, 0, sizeof *t);
                /* NAME-VERSION.dist-info: the name has no '-' (it is normalized). */
                char *stem = vt_prov_strdup(names[i]);
                if (stem) {
                    stem[strlen(stem) - 10] = '\0';
                    char *dash = strchr(stem, '-');
                    t->version = vt_prov_strdup(dash ? dash + 1 : "");
                    if (dash)
                        *dash = '\0';
                    t->name = stem;
                }
                t->record = vt_prov_strdup(rpath);
                vt_sha256_buffer(text, len, &t->record_sha256);
                vt_record_row *rows = NULL;
                int nr = 0, bad = vt_record_parse(text, len, &rows, &nr);
                if (bad)
                    vt_lines_addf(problems, "%s: line %d: expected path,hash,size", rpath, bad);
                for (int k = 0; !bad && k < nr && !rc; k++) {
                    char *joined = vt_prov_join(site, rows[k].path), real[PATH_MAX];
                    if (joined && realpath(joined, real)) {
                        if (*n_recs == *cap) {
                            int nc = *cap ? 2 * *cap : 1024;
                            rec_file *nrp = realloc(*recs, sizeof *nrp * (size_t)nc);
                            if (!nrp) {
                                rc = vt_error_set(err, VT_EINPUT, "out of memory");
                                free(joined);
                                break;
                            }
                            *recs = nrp;
                            *cap = nc;
                        }
                        rec_file *r = &(*recs)[(*n_recs)++];
                        r->path = vt_prov_strdup(real);
                        r->dist = *n_dists - 1;
                        r->hash = vt_prov_strdup(rows[k].hash);
                        r->size = vt_prov_strdup(rows[k].size);
                        r->line = rows[k].line;
                    }
                    free(joined);
                }
                if (!bad)
                    vt_record_free(rows, nr);
            }
        }
        free(text);
        free(rpath);
        free(dir);
    }
    for (int i = 0; i < nn; i++)
        free(names[i]);
    free(names);
    return rc;
}

static int under(const char *path, const char *dir)
{
    size_t l = strlen(dir);
    return strncmp(path, dir, l) == 0 && (path[l] == '/' || dir[l - 1] == '/');
}

/* One imported file. */
static void check_file(const char *what, const char *path, const char *module, const rec_file *recs, int n_recs,
                       dist *dists, char real_sites[][PATH_MAX], int n_sites, const cJSON *required,
                       vt_imports_report *out, vt_lines *problems, outside_list *outside, vt_lines *loaded)
{
    char real[PATH_MAX];
    if (!realpath(path, real)) {
        vt_lines_addf(problems, "%s %s: %s: expected the file the process imported", what, path, strerror(errno));
        return;
    }
    rec_file key = { real, 0, NULL, NULL, 0 };
    const rec_file *r = bsearch(&key, recs, (size_t)n_recs, sizeof *recs, cmp_rec);
    vt_sha256_hex got;
    uint64_t size = 0;
    vt_error e;
    vt_error_clear(&e);
    if (vt_sha256_file(real, &got, &size, &e) != VT_OK) {
        vt_lines_addf(problems, "%s %s: %s", what, real, e.msg);
        return;
    }
    if (r) {
        dist *d = &dists[r->dist];
        d->used = 1;
        unsigned char want[64];
        char want_hex[129] = "";
        long dl = strncmp(r->hash, "sha256=", 7) == 0 ? vt_prov_b64_decode(r->hash + 7, strlen(r->hash + 7), want,
                                                                            sizeof want)
                                                       : -1;
        if (dl != 32) {
            vt_lines_addf(problems, "%s %s: %s (line %d) hash '%s': expected sha256=<urlsafe base64 digest>", what,
                          real, d->record, r->line, r->hash);
            return;
        }
        vt_prov_hex(want, 32, want_hex);
        if (strcmp(want_hex, got.hex) != 0) {
            vt_lines_addf(problems, "%s %s: sha256 %s: %s %s's RECORD lists %s", what, real, got.hex, d->name,
                          d->version, want_hex);
            return;
        }
        char sz[32];
        snprintf(sz, sizeof sz, "%llu", (unsigned long long)size);
        if (*r->size && strcmp(r->size, sz) != 0) {
            vt_lines_addf(problems, "%s %s: %s bytes: %s %s's RECORD lists %s", what, real, sz, d->name, d->version,
                          r->size);
            return;
        }
        out->verified++;
        if (!module)
            vt_lines_addf(loaded, "%s", real);
        return;
    }
    int in_site = 0;
    for (int s = 0; s < n_sites && !in_site; s++)
        in_site = under(real, real_sites[s]);
    int is_required = 0;
    if (module) {
        size_t top = strcspn(module, ".");
        for (const cJSON *q = required->child; q && !is_required; q = q->next)
            is_required = cJSON_IsString(q) && strlen(q->valuestring) == top && strncmp(q->valuestring, module, top) == 0;
    }
    /* A required package's file no RECORD lists is a problem; any other
     * file of a site directory that no distribution owns (virtualenv's own
     * _virtualenv.py, a .pth's helper) is recorded like the runtime, by
     * sha256 and saying where it lies, and never counted verified. */
    if (is_required)
        vt_lines_addf(problems, "%s %s of %s: in no distribution's RECORD: expected every required package's file "
                      "covered by its RECORD", what, real, module);
    else
        add_outside(outside, !module, real, &got, in_site);
}

static char **take(vt_lines *l, int *n)
{
    *n = l->n;
    char **v = l->v;
    l->v = NULL;
    l->n = l->cap = 0;
    return v;
}

int vt_imports_verify(const char *path, vt_imports_report *out, vt_error *err)
{
    memset(out, 0, sizeof *out);
    char *text = NULL;
    size_t len = 0;
    int e = vt_prov_read_file(path, 64u << 20, &text, &len);
    if (e)
        return vt_error_set(err, VT_EINPUT, "%s: %s: expected a vt.imports/1 file", path, vt_prov_strerror(path, e));
    cJSON *doc = vt_json_parse(text, len, path, err);
    free(text);
    if (!doc)
        return VT_EINPUT;
    const cJSON *schema = cJSON_GetObjectItemCaseSensitive(doc, "schema");
    const cJSON *sites = cJSON_GetObjectItemCaseSensitive(doc, "sites");
    const cJSON *required = cJSON_GetObjectItemCaseSensitive(doc, "required");
    const cJSON *modules = cJSON_GetObjectItemCaseSensitive(doc, "modules");
    const cJSON *objects = cJSON_GetObjectItemCaseSensitive(doc, "objects");
    int rc = VT_OK;
    if (!cJSON_IsString(schema) || strcmp(schema->valuestring, "vt.imports/1") != 0)
        rc = vt_error_set(err, VT_EINPUT, "%s: schema: expected \"vt.imports/1\"", path);
    else if (!cJSON_IsArray(sites) || !cJSON_IsArray(required) || !cJSON_IsArray(modules) || !cJSON_IsArray(objects))
        rc = vt_error_set(err, VT_EINPUT, "%s: sites, required, modules, objects: expected four arrays", path);
    int n_sites = rc ? 0 : cJSON_GetArraySize(sites);
    char(*real_sites)[PATH_MAX] = rc ? NULL : calloc((size_t)n_sites + 1, PATH_MAX);
    if (!rc && !real_sites)
        rc = vt_error_set(err, VT_EINPUT, "out of memory");
    rec_file *recs = NULL;
    dist *dists = NULL;
    int n_recs = 0, cap = 0, n_dists = 0, s = 0;
    vt_lines problems = { 0 }, loaded = { 0 };
    outside_list outside = { 0 };
    for (const cJSON *x = rc ? NULL : sites->child; x && !rc; x = x->next, s++) {
        if (!cJSON_IsString(x) || !realpath(x->valuestring, real_sites[s]))
            rc = vt_error_set(err, VT_EINPUT, "%s: sites[%d]: expected an existing directory", path, s);
        else
            rc = read_site(real_sites[s], &recs, &n_recs, &cap, &dists, &n_dists, &problems, err);
    }
    if (!rc)
        vt_sort(recs, (size_t)n_recs, sizeof *recs, cmp_rec);
    for (int i = 1; !rc && i < n_recs; i++)
        if (strcmp(recs[i].path, recs[i - 1].path) == 0 && recs[i].dist != recs[i - 1].dist)
            vt_lines_addf(&problems, "%s: listed by both %s and %s: expected one owner", recs[i].path,
                          dists[recs[i - 1].dist].record, dists[recs[i].dist].record);
    int k = 0;
    for (const cJSON *m = rc ? NULL : modules->child; m && !rc; m = m->next, k++) {
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(m, "name"), *p = cJSON_GetObjectItemCaseSensitive(m, "path");
        if (!cJSON_IsString(name) || !cJSON_IsString(p))
            rc = vt_error_set(err, VT_EINPUT, "%s: modules[%d]: expected {\"name\", \"path\"} strings", path, k);
        else {
            check_file("module", p->valuestring, name->valuestring, recs, n_recs, dists, real_sites, n_sites, required,
                       out, &problems, &outside, &loaded);
            out->modules++;
        }
    }
    k = 0;
    for (const cJSON *o = rc ? NULL : objects->child; o && !rc; o = o->next, k++) {
        if (!cJSON_IsString(o))
            rc = vt_error_set(err, VT_EINPUT, "%s: objects[%d]: expected a path", path, k);
        else {
            check_file("object", o->valuestring, NULL, recs, n_recs, dists, real_sites, n_sites, required, out,
                       &problems, &outside, &loaded);
            out->objects++;
        }
    }
    /* A required package the process never imported was not what ran. */
    k = 0;
    for (const cJSON *q = rc ? NULL : required->child; q && !rc; q = q->next, k++) {
        if (!cJSON_IsString(q)) {
            rc = vt_error_set(err, VT_EINPUT, "%s: required[%d]: expected a package name", path, k);
            break;
        }
        int seen = 0;
        for (const cJSON *m = modules->child; m && !seen; m = m->next) {
            const cJSON *name = cJSON_GetObjectItemCaseSensitive(m, "name");
            seen = cJSON_IsString(name) && strncmp(name->valuestring, q->valuestring, strlen(q->valuestring)) == 0 &&
                   (name->valuestring[strlen(q->valuestring)] == '\0' ||
                    name->valuestring[strlen(q->valuestring)] == '.');
        }
        if (!seen)
            vt_lines_addf(&problems, "required %s: no module of it imported: expected the process to have run it",
                          q->valuestring);
    }
    /* The distributions used and the runtime's files, field by field; their
     * lines made from the same fields. */
    int n_used = 0;
    for (int i = 0; !rc && i < n_dists; i++)
        n_used += dists[i].used;
    vt_imports_dist *de = rc ? NULL : calloc((size_t)n_used + 1, sizeof *de);
    if (!rc && !de)
        rc = vt_error_set(err, VT_EINPUT, "out of memory");
    vt_lines dl = { 0 }, ol = { 0 };
    for (int i = 0, k = 0; !rc && i < n_dists; i++) {
        if (!dists[i].used)
            continue;
        vt_imports_dist *d = &de[k++];
        d->name = dists[i].name;
        d->version = dists[i].version;
        d->record = dists[i].record;
        d->record_sha256 = dists[i].record_sha256;
        dists[i].name = dists[i].version = dists[i].record = NULL;
        if (!d->name || !d->version || !d->record) {
            rc = vt_error_set(err, VT_EINPUT, "out of memory");
            break;
        }
        vt_lines_addf(&dl, "%s %s RECORD sha256 %s", d->name, d->version, d->record_sha256.hex);
    }
    for (int i = 0; !rc && i < outside.n; i++) {
        const vt_imports_outside *o = &outside.v[i];
        vt_lines_addf(&ol, "%s %s sha256 %s%s", o->object ? "object" : "module", o->path, o->sha256.hex,
                      o->in_site ? " (in a site directory, in no distribution's RECORD)" : "");
    }
    if (!rc && (problems.oom || outside.oom || dl.oom || ol.oom || loaded.oom))
        rc = vt_error_set(err, VT_EINPUT, "out of memory");
    if (rc) { /* nothing of it handed over */
        free_dists(de, n_used);
        free_outside(outside.v, outside.n);
        vt_prov_lines_free(dl.v, dl.n);
        vt_prov_lines_free(ol.v, ol.n);
    } else { /* the lines and the entries in step: n_used = dl.n, outside.n = ol.n */
        out->dists = take(&dl, &out->n_dists);
        out->dist_entries = de;
        out->outside = take(&ol, &out->n_outside);
        out->outside_entries = outside.v;
    }
    out->problems = take(&problems, &out->n_problems);
    out->loaded = take(&loaded, &out->n_loaded);
    out->ok = !rc && out->n_problems == 0;
    for (int i = 0; i < n_recs; i++) {
        free(recs[i].path);
        free(recs[i].hash);
        free(recs[i].size);
    }
    free(recs);
    for (int i = 0; i < n_dists; i++) {
        free(dists[i].name);
        free(dists[i].version);
        free(dists[i].record);
    }
    free(dists);
    free(real_sites);
    cJSON_Delete(doc);
    if (rc)
        vt_imports_report_free(out);
    return rc;
}
