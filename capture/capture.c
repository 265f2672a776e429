/* vt-capture's library: inputs, runs, provenance, the sealed document and
 * the strict gate. The document layout and conventions are in capture.h. */
#include "capture.h"

#include "canonical_json.h"
#include "logits_file.h"
#include "topk_file.h"
#include "prompts.h"

#include "../engine/codec.h"
#include "../engine/gguf_file.h"
#include "../engine/tokenizer.h"
#include "../provenance/provenance.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef VT_VERSION
#define VT_VERSION "0.1.0"
#endif
#ifndef VT_GIT_REV
#define VT_GIT_REV "unknown"
#endif
#ifndef VT_SOURCE_DIR
#define VT_SOURCE_DIR "."
#endif

enum { PKG_NONE = 0, PKG_WHEEL = 1, PKG_NPM = 2 };

/* One prompt's repeat 0, which every later repeat is compared with. */
typedef struct ref_run {
    int ok;
    int32_t *tokens;
    int32_t n;
    vt_sha256_hex *rows; /* per-position digests of the logits */
    vt_sha256_hex sha;
} ref_run;

struct vt_capture {
    vt_capture_opts o;
    const vt_runner_ops *ops;
    int prefix;                  /* scoring LOCAL's streams */
    vt_prompt_set prompts;
    int32_t **cont;              /* prefix: LOCAL's repeat-0 tokens per prompt */
    int32_t *n_cont;
    int n_streams;               /* entries of cont and n_cont */
    cJSON *local;                /* prefix: {file, sha256, schema, seal, workload_seal} */
    vt_sha256_hex model_sha;
    uint64_t model_size;
    cJSON *gguf;                 /* the GGUF summary */
    char *arch;
    vt_manifest manifest;
    int have_manifest;
    char *manifest_dir;
    cJSON *launcher;             /* the launcher manifest, parsed */
    vt_sha256_hex launcher_sha;
    int package_kind;
    char *side_name;             /* side file path relative to the capture's directory */
    char *side_dir;              /* its directory, where its temporary data goes */
    char *topk_path;             /* the top-k side file (opts.topk_out or derived), or NULL */
    char *topk_name, *topk_dir;  /* as side_name, side_dir */
    int32_t topk_k;              /* entries per position in it */
    vt_runner_settings req;      /* as requested, defaults made explicit */
    /* results */
    vt_logits_writer *side;
    vt_sha256_hex side_sha;
    uint64_t side_size;
    vt_topk_writer *topk;
    vt_sha256_hex topk_sha;
    uint64_t topk_size;
    char *text;
    size_t text_len;
    char **refusals;
    int n_refusals;
    vt_capture_summary sum;
    vt_sha256_hex seal, workload_seal;
};

/* ---------------------------------------------------------------- helpers */

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static char *dir_name(const char *path)
{
    const char *s = strrchr(path, '/');
    if (!s)
        return strdup(".");
    if (s == path)
        return strdup("/");
    return strndup(path, (size_t)(s - path));
}

static void add_str(cJSON *o, const char *key, const char *s)
{
    cJSON_AddItemToObject(o, key, s ? cJSON_CreateString(s) : cJSON_CreateNull());
}

static void add_num(cJSON *o, const char *key, double v) { cJSON_AddItemToObject(o, key, cJSON_CreateNumber(v)); }

static void add_bool(cJSON *o, const char *key, int b) { cJSON_AddItemToObject(o, key, cJSON_CreateBool(b)); }

static cJSON *str_array(char *const *v, int n)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < n; i++)
        cJSON_AddItemToArray(a, cJSON_CreateString(v[i] ? v[i] : ""));
    return a;
}

static void refuse(vt_capture *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void refuse(vt_capture *c, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    for (char *p = line; *p; p++) /* one line each, whatever a message held */
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    char **grown = realloc(c->refusals, (size_t)(c->n_refusals + 1) * sizeof *grown);
    if (!grown)
        return;
    c->refusals = grown;
    c->refusals[c->n_refusals] = strdup(line);
    if (c->refusals[c->n_refusals])
        c->n_refusals++;
}

/* SHA-256 of token ids as little-endian int32 (prompts[].sha256). */
static void tokens_sha256(const int32_t *t, int32_t n, vt_sha256_hex *out)
{
    unsigned char *b = malloc((size_t)n * 4 + 1);
    if (!b) {
        out->hex[0] = '\0';
        return;
    }
    for (int32_t i = 0; i < n; i++)
        for (int k = 0; k < 4; k++)
            b[4 * i + k] = (unsigned char)((uint32_t)t[i] >> (8 * k));
    vt_sha256_buffer(b, (size_t)n * 4, out);
    free(b);
}

/* Path of directory "to" relative to directory "from" (both absolute and
 * canonical): "" for the same directory, else e.g. "../data" (no trailing
 * slash). malloc'd. */
static char *relative_dir(const char *from, const char *to)
{
    /* The longest common prefix ending at a component boundary. */
    size_t common = 0, i = 0;
    for (; from[i] && from[i] == to[i]; i++)
        if (from[i] == '/')
            common = i;
    if ((!from[i] || from[i] == '/') && (!to[i] || to[i] == '/'))
        common = i;
    int up = 0;
    for (const char *p = from + common; *p; p++)
        if (*p == '/' && p[1] && p[1] != '/')
            up++;
    const char *rest = to + common;
    while (*rest == '/')
        rest++;
    char *s = malloc((size_t)up * 3 + strlen(rest) + 1);
    if (!s)
        return NULL;
    s[0] = '\0';
    for (int k = 0; k < up; k++)
        strcat(s, k ? "/.." : "..");
    if (*rest) {
        if (up)
            strcat(s, "/");
        strcat(s, rest);
    }
    return s;
}

static int json_value_equal(const cJSON *a, const cJSON *b)
{
    if (cJSON_IsNumber(a) && cJSON_IsNumber(b))
        return a->valuedouble == b->valuedouble;
    if (cJSON_IsString(a) && cJSON_IsString(b))
        return strcmp(a->valuestring, b->valuestring) == 0;
    return 0;
}

static void value_text(const cJSON *v, char *buf, size_t cap)
{
    if (cJSON_IsString(v))
        snprintf(buf, cap, "%s", v->valuestring);
    else if (cJSON_IsNumber(v))
        vt_canonical_number(v->valuedouble, buf);
    else
        snprintf(buf, cap, "?");
}

/* ------------------------------------------------------------- options */

void vt_capture_opts_default(vt_capture_opts *o)
{
    memset(o, 0, sizeof *o);
    vt_runner_settings_default(&o->settings);
    o->settings.n_threads = 0;
    o->settings.n_ctx = 0;
    o->settings.n_batch = 0;
    o->repetitions = 1;
    o->max_tokens = 16;
    o->top_k = 20;
    o->created_utc = -1;
}

/* Settings fields, as named in settings.differences and by allow lists. */
static const char *const setting_fields[] = { "mode", "cache_dtype", "matmul", "threads", "n_ctx", "n_batch",
                                              "seed", "repetitions", "max_tokens", "logprobs_top_k",
                                              "sampling.temperature", "sampling.top_k", "sampling.top_p",
                                              "sampling.min_p" };

static int allowed_difference(const vt_capture *c, const char *field)
{
    for (int i = 0; i < c->o.n_allow_differences; i++)
        if (strcmp(c->o.allow_differences[i], field) == 0)
            return 1;
    return 0;
}

static cJSON *settings_json(const vt_capture *c, const vt_runner_settings *s, int32_t top_k)
{
    cJSON *o = cJSON_CreateObject();
    add_str(o, "mode", vt_exec_mode_name(s->mode));
    add_str(o, "cache_dtype", vt_cache_dtype_name(s->cache_dtype));
    add_str(o, "matmul", vt_matmul_mode_name(s->matmul));
    add_num(o, "threads", s->n_threads);
    add_num(o, "n_ctx", s->n_ctx);
    add_num(o, "n_batch", s->n_batch);
    if (c->prefix) { /* teacher-forced: nothing is sampled or generated */
        add_num(o, "repetitions", c->o.repetitions);
        return o;
    }
    add_num(o, "seed", (double)s->seed);
    add_num(o, "repetitions", c->o.repetitions);
    add_num(o, "max_tokens", c->o.max_tokens);
    add_num(o, "logprobs_top_k", top_k);
    cJSON *sp = cJSON_AddObjectToObject(o, "sampling");
    add_num(sp, "temperature", s->sampling.temperature);
    add_num(sp, "top_k", s->sampling.top_k);
    add_num(sp, "top_p", s->sampling.top_p);
    add_num(sp, "min_p", s->sampling.min_p);
    return o;
}

/* settings.differences, and a strict refusal for each one not allowed.
 * Both objects have the same members in the same order. */
static void settings_differences(vt_capture *c, const cJSON *req, const cJSON *res, const char *prefix, cJSON *out)
{
    for (const cJSON *a = req->child, *b = res->child; a && b; a = a->next, b = b->next) {
        char field[64];
        snprintf(field, sizeof field, "%s%s", prefix, a->string);
        if (cJSON_IsObject(a)) {
            char sub[80];
            snprintf(sub, sizeof sub, "%s.", field);
            settings_differences(c, a, b, sub, out);
            continue;
        }
        if (json_value_equal(a, b))
            continue;
        /* "auto" asks the runner to choose: any concrete dtype satisfies it
         * (the choice is still recorded as a difference). */
        int allowed = allowed_difference(c, field) ||
                      (strcmp(field, "cache_dtype") == 0 && strcmp(a->valuestring, "auto") == 0);
        cJSON *d = cJSON_CreateObject();
        add_str(d, "field", field);
        cJSON_AddItemToObject(d, "requested", cJSON_Duplicate(a, 1));
        cJSON_AddItemToObject(d, "resolved", cJSON_Duplicate(b, 1));
        add_bool(d, "allowed", allowed);
        cJSON_AddItemToArray(out, d);
        if (!allowed) {
            char va[64], vb[64];
            value_text(a, va, sizeof va);
            value_text(b, vb, sizeof vb);
            refuse(c, "settings.resolved.%s: %s: expected the requested %s (or --allow-setting-difference %s)",
                   field, vb, va, field);
        }
    }
}

/* ---------------------------------------------------------------- model */

typedef struct type_count {
    const char *name;
    int n;
} type_count;

static int by_name(const void *a, const void *b)
{
    return strcmp(((const type_count *)a)->name, ((const type_count *)b)->name);
}

static void add_gguf_str(cJSON *o, const char *key, const vt_gguf *g, const char *gkey)
{
    vt_gguf_str s;
    if (vt_gguf_get_str(g, gkey, &s)) {
        char *t = strndup(s.ptr, (size_t)s.len);
        add_str(o, key, t && vt_utf8_valid(t, strlen(t)) && strlen(t) == s.len ? t : NULL);
        free(t);
    } else {
        add_str(o, key, NULL);
    }
}

static void add_gguf_int(cJSON *o, const char *key, const vt_gguf *g, const char *gkey)
{
    int64_t v;
    if (vt_gguf_get_i64(g, gkey, &v) && v > -(1ll << 53) && v < (1ll << 53))
        add_num(o, key, (double)v);
    else
        add_str(o, key, NULL);
}

/* model.gguf: what identifies the file's contents at a glance. */
static cJSON *gguf_summary(const vt_gguf *g, const char *arch, int32_t n_vocab)
{
    cJSON *o = cJSON_CreateObject();
    add_num(o, "version", vt_gguf_version(g));
    add_num(o, "n_kv", (double)vt_gguf_n_kv(g));
    add_num(o, "n_tensors", (double)vt_gguf_n_tensors(g));
    add_gguf_str(o, "name", g, "general.name");
    add_gguf_int(o, "file_type", g, "general.file_type");
    char key[128];
    snprintf(key, sizeof key, "%s.context_length", arch);
    add_gguf_int(o, "context_length", g, key);
    snprintf(key, sizeof key, "%s.block_count", arch);
    add_gguf_int(o, "block_count", g, key);
    snprintf(key, sizeof key, "%s.embedding_length", arch);
    add_gguf_int(o, "embedding_length", g, key);
    add_num(o, "n_vocab", n_vocab);
    add_gguf_str(o, "tokenizer_pre", g, "tokenizer.ggml.pre");
    /* Tensor storage types and how many tensors have each, by name. */
    int counts[VT_TYPE_COUNT + 1] = { 0 };
    for (uint64_t i = 0; i < vt_gguf_n_tensors(g); i++) {
        int t = vt_gguf_tensor_at(g, i)->type;
        counts[t >= 0 && t < VT_TYPE_COUNT ? t : VT_TYPE_COUNT]++;
    }
    type_count tc[VT_TYPE_COUNT + 1];
    int n = 0;
    for (int t = 0; t <= VT_TYPE_COUNT; t++) {
        if (!counts[t])
            continue;
        const vt_codec *cd = t < VT_TYPE_COUNT ? vt_codec_by_type(t) : NULL;
        tc[n++] = (type_count){ cd ? cd->name : "unknown", counts[t] };
    }
    qsort(tc, (size_t)n, sizeof tc[0], by_name);
    cJSON *types = cJSON_AddObjectToObject(o, "tensor_types");
    for (int i = 0; i < n; i++)
        add_num(types, tc[i].name, tc[i].n);
    return o;
}

/* model{files, revision, arch, gguf, verified, manifest}, with the manifest
 * checked: vt_manifest_check over every listed file, and every model file
 * listed (by base name) with its size and SHA-256. */
static cJSON *model_json(vt_capture *c, vt_error *err)
{
    cJSON *m = cJSON_CreateObject();
    cJSON *files = cJSON_AddArrayToObject(m, "files");
    cJSON *f = cJSON_CreateObject();
    add_str(f, "name", base_name(c->o.model));
    add_num(f, "size", (double)c->model_size);
    add_str(f, "sha256", c->model_sha.hex);
    cJSON_AddItemToArray(files, f);
    add_str(m, "revision", c->o.revision);
    add_str(m, "arch", c->arch);
    cJSON_AddItemToObject(m, "gguf", cJSON_Duplicate(c->gguf, 1));

    int verified = 0;
    cJSON *mref = NULL;
    if (!c->have_manifest) {
        refuse(c, "--model-manifest: missing: expected a vt.manifest/1 listing every model file");
    } else {
        verified = 1;
        char **problems = NULL;
        int n_problems = 0;
        vt_error merr;
        vt_error_clear(&merr);
        int rc = vt_manifest_check(&c->manifest, c->manifest_dir, &problems, &n_problems, &merr);
        if (rc != VT_OK) {
            verified = 0;
            for (int i = 0; i < n_problems; i++)
                refuse(c, "%s: %s", c->o.model_manifest, problems[i]);
            if (n_problems == 0)
                refuse(c, "%s: %s", c->o.model_manifest, merr.msg);
        }
        vt_prov_lines_free(problems, n_problems);
        const vt_manifest_file *e = NULL;
        for (int i = 0; i < c->manifest.n_files && !e; i++)
            if (strcmp(base_name(c->manifest.files[i].name), base_name(c->o.model)) == 0)
                e = &c->manifest.files[i];
        if (!e) {
            verified = 0;
            refuse(c, "model.files[0] '%s': not listed in %s: expected every model file in the manifest",
                   base_name(c->o.model), c->o.model_manifest);
        } else if (e->size != c->model_size || strcmp(e->sha256.hex, c->model_sha.hex) != 0) {
            verified = 0;
            refuse(c, "model.files[0] '%s': size %llu, sha256 %s: expected size %llu, sha256 %s as %s lists it",
                   base_name(c->o.model), (unsigned long long)c->model_size, c->model_sha.hex,
                   (unsigned long long)e->size, e->sha256.hex, c->o.model_manifest);
        }
        vt_sha256_hex msha;
        if (vt_sha256_file(c->o.model_manifest, &msha, NULL, err) != VT_OK) {
            cJSON_Delete(m);
            return NULL;
        }
        mref = cJSON_CreateObject();
        add_str(mref, "file", base_name(c->o.model_manifest));
        add_str(mref, "sha256", msha.hex);
    }
    add_bool(m, "verified", verified);
    cJSON_AddItemToObject(m, "manifest", mref ? mref : cJSON_CreateNull());
    return m;
}

/* -------------------------------------------------------------- runtime */

static int by_path(const void *a, const void *b)
{
    return strcmp((*(const vt_shared_object *const *)a)->path, (*(const vt_shared_object *const *)b)->path);
}

static cJSON *runtime_json(vt_capture *c, const vt_runner_identity *rid, const vt_runtime_identity *id, int id_ok,
                           const char *id_err, int32_t threads)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *r = cJSON_AddObjectToObject(o, "runner");
    add_str(r, "name", rid->runner);
    add_str(r, "version", rid->version);
    add_str(r, "backend", rid->backend);
    add_str(r, "library", rid->library);
    add_str(r, "detail", rid->detail);
    if (id_ok) {
        cJSON *b = cJSON_AddObjectToObject(o, "binary");
        add_str(b, "path", id->binary_path);
        add_str(b, "sha256", id->binary_sha256.hex);
        /* Sorted by path: the mapping order follows load addresses. */
        const vt_shared_object **sorted = malloc((size_t)(id->n_objects + 1) * sizeof *sorted);
        cJSON *objs = cJSON_AddArrayToObject(o, "objects");
        for (int i = 0; sorted && i < id->n_objects; i++)
            sorted[i] = &id->objects[i];
        if (sorted)
            qsort(sorted, (size_t)id->n_objects, sizeof *sorted, by_path);
        for (int i = 0; sorted && i < id->n_objects; i++) {
            cJSON *e = cJSON_CreateObject();
            add_str(e, "path", sorted[i]->path);
            add_num(e, "size", (double)sorted[i]->size);
            add_str(e, "sha256", sorted[i]->sha256.hex);
            cJSON_AddItemToArray(objs, e);
        }
        free(sorted);
        cJSON *l = cJSON_AddObjectToObject(o, "libraries");
        add_str(l, "openssl", id->openssl_version);
        add_str(l, "libarchive", id->libarchive_version);
        add_str(l, "zlib", id->zlib_version);
        add_str(l, "cjson", id->cjson_version);
        add_str(l, "pcre2", id->pcre2_version);
        cJSON *cpu = cJSON_AddObjectToObject(o, "cpu");
        add_str(cpu, "model", id->cpu_model);
        add_str(cpu, "flags", id->cpu_flags);
        add_str(cpu, "machine", id->machine);
        add_num(cpu, "cores", id->n_cores);
        add_num(cpu, "cores_usable", id->n_cores_usable);
        add_str(o, "kernel", id->kernel);
    }
    add_num(o, "threads", threads);
    int resolved = id_ok && id->resolved;
    add_bool(o, "resolved", resolved);
    if (!resolved) {
        const char *why = !id_ok ? id_err : id->unresolved ? id->unresolved : "some fields missing";
        add_str(o, "unresolved", why);
        refuse(c, "runtime: identity not resolved (%s): expected every field of the runtime identity", why);
    }
    return o;
}

/* -------------------------------------------------------------- package */

/* The unpacked npm package a runner's library came from: the nearest
 * directory above it holding package.json (canonical path, malloc'd). */
static char *find_package_root(const char *library)
{
    if (!library || !*library)
        return NULL;
    char *dir = dir_name(library);
    while (dir && strcmp(dir, "/") != 0 && strcmp(dir, ".") != 0) {
        char pj[PATH_MAX];
        snprintf(pj, sizeof pj, "%s/package.json", dir);
        if (access(pj, R_OK) == 0) {
            char *real = realpath(dir, NULL);
            free(dir);
            return real;
        }
        char *up = dir_name(dir);
        free(dir);
        dir = up;
    }
    free(dir);
    return NULL;
}

static char *package_name(const char *root)
{
    char pj[PATH_MAX], *text = NULL;
    size_t n;
    snprintf(pj, sizeof pj, "%s/package.json", root);
    if (vt_read_file(pj, &text, &n, NULL) != VT_OK)
        return NULL;
    cJSON *j = cJSON_ParseWithLength(text, n);
    free(text);
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(j, "name");
    char *s = cJSON_IsString(name) ? strdup(name->valuestring) : NULL;
    cJSON_Delete(j);
    return s;
}

static cJSON *package_json(vt_capture *c, const vt_runner_identity *rid, const vt_runtime_identity *id, int id_ok,
                           vt_error *err)
{
    if (c->package_kind == PKG_NONE)
        return cJSON_CreateNull();
    const char *pkg = c->o.package;
    vt_package_report rep;
    memset(&rep, 0, sizeof rep);
    char *root = NULL, *name = NULL;
    const char **loaded = NULL;
    int n_loaded = 0, rc = VT_OK;
    char *local_problem = NULL;
    if (c->package_kind == PKG_WHEEL) {
        root = c->o.package_root ? realpath(c->o.package_root, NULL) : NULL;
        rc = vt_package_verify_wheel(pkg, root, &rep, err);
    } else {
        root = c->o.package_root ? realpath(c->o.package_root, NULL) : find_package_root(rid->library);
        name = root ? package_name(root) : NULL;
        const char *lock = c->o.lock ? c->o.lock : VT_SOURCE_DIR "/oracle/llamacpp.lock.json";
        if (!root || !name) {
            local_problem = strdup(!root ? "no package root: the runner's library is not inside an unpacked "
                                           "package (a directory with package.json)"
                                         : "the package root's package.json has no name");
            vt_sha256_file(pkg, &rep.sha256, NULL, NULL);
        } else {
            /* The shared objects this process mapped from inside the package. */
            size_t rl = strlen(root);
            loaded = calloc((size_t)(id_ok ? id->n_objects : 0) + 1, sizeof *loaded);
            for (int i = 0; loaded && id_ok && i < id->n_objects; i++)
                if (strncmp(id->objects[i].path, root, rl) == 0 && id->objects[i].path[rl] == '/')
                    loaded[n_loaded++] = id->objects[i].path;
            rc = vt_package_verify_npm(pkg, lock, name, root, loaded, n_loaded, &rep, err);
        }
    }
    if (rc != VT_OK) {
        free(root);
        free(name);
        free(loaded);
        free(local_problem);
        vt_package_report_free(&rep);
        return NULL;
    }
    cJSON *o = cJSON_CreateObject();
    add_str(o, "kind", c->package_kind == PKG_WHEEL ? "wheel" : "npm");
    add_str(o, "file", base_name(pkg));
    add_str(o, "sha256", rep.sha256.hex);
    add_str(o, "name", name);
    add_str(o, "integrity", rep.integrity);
    add_str(o, "computed_integrity", rep.computed_integrity);
    add_str(o, "root", root);
    cJSON *l = cJSON_AddArrayToObject(o, "loaded");
    /* Relative to the root and sorted (mapping order follows load addresses). */
    for (int i = 0; i < n_loaded; i++)
        for (int k = i + 1; k < n_loaded; k++)
            if (strcmp(loaded[k], loaded[i]) < 0) {
                const char *t = loaded[i];
                loaded[i] = loaded[k];
                loaded[k] = t;
            }
    for (int i = 0; i < n_loaded; i++)
        cJSON_AddItemToArray(l, cJSON_CreateString(loaded[i] + strlen(root) + 1));
    add_num(o, "members_checked", rep.members_checked);
    int verified = rep.verified && !local_problem;
    add_bool(o, "verified", verified);
    cJSON *probs = str_array(rep.problems, rep.n_problems);
    if (local_problem)
        cJSON_AddItemToArray(probs, cJSON_CreateString(local_problem));
    cJSON_AddItemToObject(o, "problems", probs);
    cJSON_AddItemToObject(o, "notes", str_array(rep.notes, rep.n_notes));

    for (int i = 0; i < rep.n_problems; i++)
        refuse(c, "package %s: %s", pkg, rep.problems[i]);
    if (local_problem)
        refuse(c, "package %s: %s: expected the runner to load its libraries from the package", pkg, local_problem);
    else if (!verified && rep.n_problems == 0)
        refuse(c, "package %s: not verified: expected every check to pass", pkg);
    if (c->package_kind == PKG_NPM && !local_problem && n_loaded == 0)
        refuse(c, "package %s: no shared object this process loaded comes from %s: expected the runner's "
                  "libraries from the package", pkg, root);
    free(root);
    free(name);
    free(loaded);
    free(local_problem);
    vt_package_report_free(&rep);
    return o;
}

/* ----------------------------------------------------------------- runs */

/* The k highest of lp[0..n), highest first, ties to the lower id. */
static void top_k(const double *lp, int32_t n, int k, int32_t *ids, double *lps)
{
    for (int i = 0; i < k; i++) {
        ids[i] = -1;
        lps[i] = -INFINITY;
    }
    for (int32_t i = 0; i < n; i++) {
        if (!(lp[i] > lps[k - 1]))
            continue;
        int j = k - 1;
        while (j > 0 && lp[i] > lps[j - 1]) {
            ids[j] = ids[j - 1];
            lps[j] = lps[j - 1];
            j--;
        }
        ids[j] = i;
        lps[j] = lp[i];
    }
}

static cJSON *int_array(const int32_t *v, int32_t n)
{
    cJSON *a = cJSON_CreateArray();
    for (int32_t i = 0; i < n; i++)
        cJSON_AddItemToArray(a, cJSON_CreateNumber(v[i]));
    return a;
}

typedef struct det_state {
    int identical_tokens, identical_logits;
    int n_differ;
    cJSON *first; /* first_mismatch */
} det_state;

static void note_mismatch(vt_capture *c, det_state *d, int p, int rep, int32_t pos, const char *field)
{
    d->n_differ++;
    if (d->first)
        return;
    d->first = cJSON_CreateObject();
    add_num(d->first, "prompt", p);
    add_num(d->first, "repeat", rep);
    add_num(d->first, "position", pos);
    add_str(d->first, "field", field);
    refuse(c, "determinism: prompt %d ('%s') repeat %d differs from repeat 0 in %s at position %d: expected "
              "every repeat identical in status, tokens and logits", p, c->prompts.items[p].id, rep, field, pos);
}

static int run_all(vt_capture *c, vt_runner *r, cJSON *runs, det_state *det, vt_error *err)
{
    const int P = c->prompts.n, R = c->o.repetitions;
    const int32_t nv = vt_runner_n_vocab(r);
    const int K = c->o.top_k < nv ? c->o.top_k : nv;
    int32_t max_pos = 1;
    for (int p = 0; p < P; p++) {
        int32_t n = c->prefix ? c->n_cont[p] : c->o.max_tokens;
        if (n > max_pos)
            max_pos = n;
    }
    float *logits = malloc((size_t)max_pos * (size_t)nv * sizeof *logits);
    int32_t *toks = malloc((size_t)max_pos * sizeof *toks);
    double *lp = malloc((size_t)nv * sizeof *lp);
    int32_t *top_ids = malloc((size_t)(K > 0 ? K : 1) * sizeof *top_ids);
    double *top_lps = malloc((size_t)(K > 0 ? K : 1) * sizeof *top_lps);
    vt_sha256_hex *rows = malloc((size_t)max_pos * sizeof *rows);
    ref_run *refs = calloc((size_t)P, sizeof *refs);
    int rc = VT_OK;
    if (!logits || !toks || !lp || !top_ids || !top_lps || !rows || !refs)
        rc = vt_error_set(err, VT_EINPUT, "capture: out of memory for %d positions x %d logits", max_pos, nv);

    for (int rep = 0; rc == VT_OK && rep < R; rep++) {
        for (int p = 0; rc == VT_OK && p < P; p++) {
            const vt_prompt *pr = &c->prompts.items[p];
            int32_t n = c->prefix ? c->n_cont[p] : c->o.max_tokens;
            vt_error rerr;
            vt_error_clear(&rerr);
            int run_rc = c->prefix ? vt_runner_score(r, pr->tokens, pr->n_tokens, c->cont[p], n, logits, &rerr)
                                   : vt_runner_generate(r, pr->tokens, pr->n_tokens, n, toks, logits, &rerr);
            /* JSON has no spelling for NaN or infinity, and a reference
             * that produces them has failed: such a run is an error. */
            for (size_t i = 0; run_rc == VT_OK && i < (size_t)n * (size_t)nv; i++)
                if (!isfinite(logits[i]))
                    run_rc = vt_error_set(&rerr, VT_ECHECK, "position %zu: logit of token %zu is %g: expected finite "
                                          "logits", i / (size_t)nv, i % (size_t)nv, (double)logits[i]);
            cJSON *run = cJSON_CreateObject();
            add_num(run, "prompt", p);
            add_num(run, "repeat", rep);
            add_str(run, "status", run_rc == VT_OK ? "ok" : "error");
            vt_sha256_hex sha = { "" };
            if (run_rc != VT_OK) {
                add_str(run, "error", rerr.msg);
                cJSON_AddItemToObject(run, "tokens", cJSON_CreateArray());
                if (c->prefix) {
                    cJSON_AddItemToObject(run, "logprobs", cJSON_CreateArray());
                    cJSON_AddItemToObject(run, "argmax", cJSON_CreateArray());
                    cJSON_AddItemToObject(run, "argmax_logprobs", cJSON_CreateArray());
                }
                c->sum.n_failed++;
                det->identical_tokens = det->identical_logits = 0;
                refuse(c, "runs: prompt %d ('%s') repeat %d: %s: expected status ok", p, pr->id, rep, rerr.msg);
            } else {
                c->sum.n_positions += n;
                vt_logits_sha256(logits, (size_t)n * (size_t)nv, &sha);
                cJSON *a_lp = NULL, *a_arg = NULL, *a_alp = NULL;
                if (c->prefix) {
                    cJSON_AddItemToObject(run, "tokens", int_array(c->cont[p], n));
                    a_lp = cJSON_AddArrayToObject(run, "logprobs");
                    a_arg = cJSON_AddArrayToObject(run, "argmax");
                    a_alp = cJSON_AddArrayToObject(run, "argmax_logprobs");
                } else {
                    cJSON_AddItemToObject(run, "tokens", int_array(toks, n));
                }
                for (int32_t i = 0; i < n; i++) {
                    const float *row = logits + (size_t)i * (size_t)nv;
                    vt_logits_sha256(row, (size_t)nv, &rows[i]);
                    vt_log_softmax(row, nv, lp);
                    if (c->prefix) {
                        int32_t am = vt_argmax(row, nv);
                        toks[i] = am; /* what determinism compares in scoring runs */
                        cJSON_AddItemToArray(a_lp, cJSON_CreateNumber(lp[c->cont[p][i]]));
                        cJSON_AddItemToArray(a_arg, cJSON_CreateNumber(am));
                        cJSON_AddItemToArray(a_alp, cJSON_CreateNumber(lp[am]));
                    } else if (c->topk && rc == VT_OK) {
                        top_k(lp, nv, K, top_ids, top_lps);
                        rc = vt_topk_writer_add(c->topk, top_ids, top_lps, err);
                    }
                }
                add_str(run, "logits_sha256", sha.hex);
                if (c->side && rc == VT_OK)
                    rc = vt_logits_writer_add(c->side, (uint32_t)p, (uint32_t)rep, logits, (uint32_t)n,
                                              (uint32_t)nv, err);
            }
            cJSON_AddItemToArray(runs, run);
            c->sum.n_runs++;

            /* Determinism: repeat 0 is the reference of its prompt. */
            ref_run *ref = &refs[p];
            if (rep == 0) {
                ref->ok = run_rc == VT_OK;
                if (ref->ok) {
                    ref->n = n;
                    ref->tokens = malloc((size_t)(n ? n : 1) * sizeof *ref->tokens);
                    ref->rows = malloc((size_t)(n ? n : 1) * sizeof *ref->rows);
                    if (!ref->tokens || !ref->rows) {
                        rc = vt_error_set(err, VT_EINPUT, "capture: out of memory");
                        break;
                    }
                    memcpy(ref->tokens, toks, (size_t)n * sizeof *toks);
                    memcpy(ref->rows, rows, (size_t)n * sizeof *rows);
                    ref->sha = sha;
                }
                continue;
            }
            if (!ref->ok || run_rc != VT_OK) {
                note_mismatch(c, det, p, rep, 0, "status");
                continue;
            }
            int32_t pos_l = -1, pos_t = -1;
            for (int32_t i = 0; i < n && (pos_l < 0 || pos_t < 0); i++) {
                if (pos_l < 0 && strcmp(rows[i].hex, ref->rows[i].hex) != 0)
                    pos_l = i;
                if (pos_t < 0 && toks[i] != ref->tokens[i])
                    pos_t = i;
            }
            if (strcmp(sha.hex, ref->sha.hex) != 0)
                det->identical_logits = 0;
            if (pos_t >= 0)
                det->identical_tokens = 0;
            if (pos_l >= 0 && (pos_t < 0 || pos_l <= pos_t))
                note_mismatch(c, det, p, rep, pos_l, "logits");
            else if (pos_t >= 0)
                note_mismatch(c, det, p, rep, pos_t, "tokens");
        }
    }
    if (det->n_differ > 1)
        refuse(c, "determinism: %d of %d later repeats differ from their prompt's repeat 0: expected none", det->n_differ,
               (R - 1) * P);
    for (int p = 0; refs && p < P; p++) {
        free(refs[p].tokens);
        free(refs[p].rows);
    }
    free(refs);
    free(logits);
    free(toks);
    free(lp);
    free(top_ids);
    free(top_lps);
    free(rows);
    return rc;
}

/* ----------------------------------------------------------------- seals */

cJSON *vt_capture_workload(const cJSON *doc)
{
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(doc, "model");
    const cJSON *prompts = cJSON_GetObjectItemCaseSensitive(doc, "prompts");
    const cJSON *settings = cJSON_GetObjectItemCaseSensitive(doc, "settings");
    const cJSON *resolved = cJSON_GetObjectItemCaseSensitive(settings, "resolved");
    if (!cJSON_IsObject(model) || !cJSON_IsArray(prompts) || !cJSON_IsObject(resolved))
        return NULL;
    cJSON *w = cJSON_CreateObject();
    cJSON *m = cJSON_AddObjectToObject(w, "model");
    static const char *const keys[] = { "files", "revision", "arch", "gguf" };
    for (int i = 0; i < 4; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(model, keys[i]);
        if (!v) {
            cJSON_Delete(w);
            return NULL;
        }
        cJSON_AddItemToObject(m, keys[i], cJSON_Duplicate(v, 1));
    }
    cJSON_AddItemToObject(w, "prompts", cJSON_Duplicate(prompts, 1));
    cJSON_AddItemToObject(w, "settings", cJSON_Duplicate(resolved, 1));
    return w;
}

static int workload_sha(const cJSON *doc, vt_sha256_hex *out, vt_error *err)
{
    cJSON *w = vt_capture_workload(doc);
    if (!w)
        return vt_error_set(err, VT_EINPUT, "workload_seal: model, prompts or settings.resolved missing");
    int rc = vt_canonical_sha256(w, out, err);
    cJSON_Delete(w);
    return rc;
}

int vt_capture_verify_seals(const cJSON *doc, vt_error *err)
{
    if (!cJSON_IsObject(doc) || !doc->child)
        return vt_error_set(err, VT_EINPUT, "expected a JSON object");
    const cJSON *last = doc->child;
    while (last->next)
        last = last->next;
    if (strcmp(last->string, "seal") != 0 || !cJSON_IsString(last))
        return vt_error_set(err, VT_EINPUT, "field seal: expected a string as the last member");
    const cJSON *ws = cJSON_GetObjectItemCaseSensitive(doc, "workload_seal");
    if (!cJSON_IsString(ws))
        return vt_error_set(err, VT_EINPUT, "field workload_seal: expected a string");
    vt_sha256_hex got;
    int rc = workload_sha(doc, &got, err);
    if (rc)
        return rc;
    if (strcmp(got.hex, ws->valuestring) != 0)
        return vt_error_set(err, VT_ECHECK, "field workload_seal: %.64s: expected %s, the recomputed one",
                            ws->valuestring, got.hex);
    cJSON *copy = cJSON_Duplicate(doc, 1);
    if (!copy)
        return vt_error_set(err, VT_EINPUT, "out of memory");
    cJSON_DeleteItemFromObjectCaseSensitive(copy, "seal");
    rc = vt_canonical_sha256(copy, &got, err);
    cJSON_Delete(copy);
    if (rc)
        return rc;
    if (strcmp(got.hex, last->valuestring) != 0)
        return vt_error_set(err, VT_ECHECK, "field seal: %.64s: expected %s, the recomputed one", last->valuestring,
                            got.hex);
    return VT_OK;
}

/* ---------------------------------------------------------------- inputs */

/* Prefix mode: LOCAL's prompts and repeat-0 token streams. */
static int read_local(vt_capture *c, int32_t n_vocab, vt_error *err)
{
    const char *path = c->o.score_prefix_of;
    char *text;
    size_t len;
    int rc = vt_read_file(path, &text, &len, err);
    if (rc)
        return rc;
    vt_sha256_hex fsha;
    vt_sha256_buffer(text, len, &fsha);
    const char *end = NULL;
    cJSON *doc = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (!doc) {
        const char *at = cJSON_GetErrorPtr();
        rc = vt_error_set(err, VT_EINPUT, "%s: offset %ld: expected a JSON document (a vt.capture/1)", path,
                          at && at >= text && at <= text + len ? (long)(at - text) : 0L);
        free(text);
        return rc;
    }
    free(text);
    vt_error serr;
    vt_error_clear(&serr);
    const cJSON *schema = cJSON_GetObjectItemCaseSensitive(doc, "schema");
    const cJSON *prompts = cJSON_GetObjectItemCaseSensitive(doc, "prompts");
    const cJSON *runs = cJSON_GetObjectItemCaseSensitive(doc, "runs");
    const cJSON *mfiles = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(doc, "model"), "files");
    const cJSON *msha = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(mfiles, 0), "sha256");
    if (!cJSON_IsString(schema) || strcmp(schema->valuestring, VT_CAPTURE_SCHEMA) != 0) {
        rc = vt_error_set(err, VT_EINPUT, "%s: field schema: expected \"%s\"", path, VT_CAPTURE_SCHEMA);
    } else if ((rc = vt_capture_verify_seals(doc, &serr)) != VT_OK) {
        rc = vt_error_set(err, VT_EINPUT, "%s: %s", path, serr.msg);
    } else if (!cJSON_IsString(msha) || cJSON_GetArraySize(mfiles) != 1) {
        rc = vt_error_set(err, VT_EINPUT, "%s: field model.files: expected one file with its sha256", path);
    } else if (strcmp(msha->valuestring, c->model_sha.hex) != 0) {
        rc = vt_error_set(err, VT_EINPUT, "%s: field model.files[0].sha256: %.64s: expected %s, the --model file's",
                          path, msha->valuestring, c->model_sha.hex);
    } else if (!cJSON_IsArray(prompts) || cJSON_GetArraySize(prompts) < 1 || !cJSON_IsArray(runs)) {
        rc = vt_error_set(err, VT_EINPUT, "%s: fields prompts, runs: expected a non-empty prompt list and runs",
                          path);
    }
    int P = rc ? 0 : cJSON_GetArraySize(prompts);
    if (rc == VT_OK) {
        c->prompts.items = calloc((size_t)P, sizeof *c->prompts.items);
        c->cont = calloc((size_t)P, sizeof *c->cont);
        c->n_cont = calloc((size_t)P, sizeof *c->n_cont);
        if (!c->prompts.items || !c->cont || !c->n_cont)
            rc = vt_error_set(err, VT_EINPUT, "%s: out of memory", path);
        else
            c->n_streams = P;
        c->prompts.file_sha256 = fsha;
    }
    /* Token lists are checked as ids below the vocabulary. */
    int i = 0;
    for (const cJSON *pr = rc ? NULL : prompts->child; pr && rc == VT_OK; pr = pr->next, i++) {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(pr, "id");
        const cJSON *tx = cJSON_GetObjectItemCaseSensitive(pr, "text");
        const cJSON *tk = cJSON_GetObjectItemCaseSensitive(pr, "tokens");
        int n = cJSON_IsArray(tk) ? cJSON_GetArraySize(tk) : 0;
        vt_prompt *p = &c->prompts.items[i];
        c->prompts.n = i + 1;
        if (!cJSON_IsString(id) || (tx && !cJSON_IsString(tx)) || n < 1) {
            rc = vt_error_set(err, VT_EINPUT, "%s: field prompts[%d]: expected {id, text?, tokens}", path, i);
            break;
        }
        p->id = strdup(id->valuestring);
        p->text = tx ? strdup(tx->valuestring) : NULL;
        p->tokens = malloc((size_t)n * sizeof *p->tokens);
        if (!p->id || (tx && !p->text) || !p->tokens) {
            rc = vt_error_set(err, VT_EINPUT, "%s: out of memory", path);
            break;
        }
        int k = 0;
        for (const cJSON *t = tk->child; t; t = t->next, k++) {
            double v = cJSON_IsNumber(t) ? t->valuedouble : -1;
            if (!(v >= 0 && v < n_vocab && v == floor(v))) {
                rc = vt_error_set(err, VT_EINPUT, "%s: field prompts[%d].tokens[%d]: expected an id in 0..%d", path,
                                  i, k, n_vocab - 1);
                break;
            }
            p->tokens[k] = (int32_t)v;
        }
        p->n_tokens = n;
    }
    /* Each prompt's repeat 0: status ok, its tokens the stream to score. */
    int k = 0;
    for (const cJSON *run = rc ? NULL : runs->child; run && rc == VT_OK; run = run->next, k++) {
        const cJSON *pi = cJSON_GetObjectItemCaseSensitive(run, "prompt");
        const cJSON *rp = cJSON_GetObjectItemCaseSensitive(run, "repeat");
        if (!cJSON_IsNumber(pi) || !cJSON_IsNumber(rp) || pi->valuedouble < 0 || pi->valuedouble >= P ||
            pi->valuedouble != floor(pi->valuedouble)) {
            rc = vt_error_set(err, VT_EINPUT, "%s: field runs[%d].prompt: expected an index in 0..%d", path, k, P - 1);
            break;
        }
        if (rp->valuedouble != 0)
            continue;
        int p = (int)pi->valuedouble;
        const cJSON *st = cJSON_GetObjectItemCaseSensitive(run, "status");
        const cJSON *tk = cJSON_GetObjectItemCaseSensitive(run, "tokens");
        if (!cJSON_IsString(st) || strcmp(st->valuestring, "ok") != 0) {
            rc = vt_error_set(err, VT_EINPUT, "%s: field runs[%d].status: prompt %d repeat 0 failed: expected ok",
                              path, k, p);
            break;
        }
        if (c->cont[p] || !cJSON_IsArray(tk)) {
            rc = vt_error_set(err, VT_EINPUT, "%s: field runs[%d]: expected one repeat 0 per prompt, with tokens",
                              path, k);
            break;
        }
        int n = cJSON_GetArraySize(tk), j = 0;
        c->cont[p] = malloc((size_t)(n ? n : 1) * sizeof **c->cont);
        if (!c->cont[p]) {
            rc = vt_error_set(err, VT_EINPUT, "%s: out of memory", path);
            break;
        }
        for (const cJSON *t = tk->child; t; t = t->next, j++) {
            double v = cJSON_IsNumber(t) ? t->valuedouble : -1;
            if (!(v >= 0 && v < n_vocab && v == floor(v))) {
                rc = vt_error_set(err, VT_EINPUT, "%s: field runs[%d].tokens[%d]: expected an id in 0..%d", path, k,
                                  j, n_vocab - 1);
                break;
            }
            c->cont[p][j] = (int32_t)v;
        }
        c->n_cont[p] = n;
    }
    for (int p = 0; rc == VT_OK && p < P; p++)
        if (!c->cont[p])
            rc = vt_error_set(err, VT_EINPUT, "%s: field runs: prompt %d has no repeat 0: expected one", path, p);
    if (rc == VT_OK) {
        c->local = cJSON_CreateObject();
        add_str(c->local, "file", base_name(path));
        add_str(c->local, "sha256", fsha.hex);
        add_str(c->local, "schema", schema->valuestring);
        add_str(c->local, "seal", cJSON_GetObjectItemCaseSensitive(doc, "seal")->valuestring);
        add_str(c->local, "workload_seal", cJSON_GetObjectItemCaseSensitive(doc, "workload_seal")->valuestring);
    }
    cJSON_Delete(doc);
    return rc;
}

static int read_launcher(vt_capture *c, vt_error *err)
{
    const char *path = c->o.launcher_manifest;
    char *text;
    size_t len;
    int rc = vt_read_file(path, &text, &len, err);
    if (rc)
        return rc;
    vt_sha256_buffer(text, len, &c->launcher_sha);
    const char *end = NULL;
    c->launcher = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (!c->launcher || !cJSON_IsObject(c->launcher)) {
        const char *at = cJSON_GetErrorPtr();
        rc = vt_error_set(err, VT_EINPUT, "%s: offset %ld: expected a JSON object (the launcher's manifest)", path,
                          !c->launcher && at && at >= text && at <= text + len ? (long)(at - text) : 0L);
    } else {
        /* It is embedded: it must have a canonical form. */
        vt_error cerr;
        vt_error_clear(&cerr);
        size_t n;
        char *s = vt_canonical_json(c->launcher, &n, &cerr);
        if (!s)
            rc = vt_error_set(err, VT_EINPUT, "%s: %s", path, cerr.msg);
        free(s);
    }
    free(text);
    return rc;
}

/* A side file's name relative to the capture's directory, and the side
 * file's directory (resolved), where its temporary data goes. */
static int side_name_of(const char *out, const char *side, char **name, char **dir, vt_error *err)
{
    char *d1 = dir_name(out), *d2 = dir_name(side);
    char *r1 = d1 ? realpath(d1, NULL) : NULL, *r2 = d2 ? realpath(d2, NULL) : NULL;
    int rc = VT_OK;
    if (!r1 || !r2) {
        rc = vt_error_set(err, VT_EINPUT, "%s: directory cannot be resolved: expected an existing directory",
                          !r1 ? out : side);
    } else {
        char *rel = relative_dir(r1, r2);
        size_t n = rel ? strlen(rel) + strlen(base_name(side)) + 2 : 0;
        *name = rel ? malloc(n) : NULL;
        if (*name)
            snprintf(*name, n, "%s%s%s", rel, *rel ? "/" : "", base_name(side));
        free(rel);
        *dir = r2;
        r2 = NULL;
        if (!*name)
            rc = vt_error_set(err, VT_EINPUT, "capture: out of memory");
    }
    free(d1);
    free(d2);
    free(r1);
    free(r2);
    return rc;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

vt_capture *vt_capture_open(const vt_capture_opts *o, vt_error *err)
{
    vt_capture *c = calloc(1, sizeof *c);
    if (!c) {
        vt_error_set(err, VT_EINPUT, "capture: out of memory");
        return NULL;
    }
    c->o = *o;
    c->prefix = o->score_prefix_of != NULL;
    int rc = VT_OK;
    if (!o->runner || !(c->ops = vt_runner_find(o->runner)))
        rc = vt_error_set(err, VT_EINPUT, "--runner '%s': expected engine or llamacpp", o->runner ? o->runner : "");
    else if (!o->model)
        rc = vt_error_set(err, VT_EINPUT, "--model: missing: expected a GGUF file");
    else if (!o->prompts == !o->score_prefix_of)
        rc = vt_error_set(err, VT_EINPUT, "--prompts/--score-prefix-of: expected exactly one of the two");
    else if (!o->out)
        rc = vt_error_set(err, VT_EINPUT, "--out: missing: expected the capture's path");
    else if (o->repetitions < 1)
        rc = vt_error_set(err, VT_EINPUT, "--repetitions %d: expected at least 1", o->repetitions);
    else if (o->max_tokens < 0)
        rc = vt_error_set(err, VT_EINPUT, "--max-tokens %d: expected at least 0", o->max_tokens);
    else if (o->top_k < 0)
        rc = vt_error_set(err, VT_EINPUT, "--top-k %d: expected at least 0 (0: no top-k side file)", o->top_k);
    else if (o->topk_out && (o->top_k == 0 || o->score_prefix_of))
        rc = vt_error_set(err, VT_EINPUT, "--topk-out %s: expected no top-k side file %s", o->topk_out,
                          o->top_k == 0 ? "with --top-k 0" : "when scoring (--score-prefix-of)");
    else if (o->settings.seed > VT_CAPTURE_MAX_SEED)
        rc = vt_error_set(err, VT_EINPUT, "--seed %llu: expected at most 2^53-1 (recorded exactly in JSON)",
                          (unsigned long long)o->settings.seed);
    else if (o->package && !ends_with(o->package, ".whl") && !ends_with(o->package, ".tgz") &&
             !ends_with(o->package, ".tar.gz"))
        rc = vt_error_set(err, VT_EINPUT, "--package %s: expected a wheel (.whl) or an npm tarball (.tgz)", o->package);
    for (int i = 0; rc == VT_OK && i < o->n_allow_differences; i++) {
        size_t k = 0;
        while (k < sizeof setting_fields / sizeof setting_fields[0] &&
               strcmp(o->allow_differences[i], setting_fields[k]) != 0)
            k++;
        if (k == sizeof setting_fields / sizeof setting_fields[0])
            rc = vt_error_set(err, VT_EINPUT, "--allow-setting-difference '%s': expected a settings field (mode, "
                              "cache_dtype, matmul, threads, n_ctx, n_batch, seed, sampling.top_p, ...)",
                              o->allow_differences[i]);
    }
    if (o->package)
        c->package_kind = ends_with(o->package, ".whl") ? PKG_WHEEL : PKG_NPM;

    /* Side files are named relative to the capture's directory; both
     * directories must exist for publication anyway. The top-k file is
     * beside the capture unless asked elsewhere: X.json -> X.topk. */
    if (rc == VT_OK && o->logits_out)
        rc = side_name_of(o->out, o->logits_out, &c->side_name, &c->side_dir, err);
    if (rc == VT_OK && o->top_k > 0 && !o->score_prefix_of) {
        if (o->topk_out) {
            c->topk_path = strdup(o->topk_out);
        } else {
            size_t n = strlen(o->out);
            if (n > 5 && strcmp(o->out + n - 5, ".json") == 0)
                n -= 5;
            if ((c->topk_path = malloc(n + 6)))
                snprintf(c->topk_path, n + 6, "%.*s.topk", (int)n, o->out);
        }
        rc = c->topk_path ? side_name_of(o->out, c->topk_path, &c->topk_name, &c->topk_dir, err)
                          : vt_error_set(err, VT_EINPUT, "capture: out of memory");
    }

    /* The model: its bytes, its summary, its tokenizer for the prompts. */
    if (rc == VT_OK)
        rc = vt_sha256_file(o->model, &c->model_sha, &c->model_size, err);
    vt_gguf *g = NULL;
    vt_tokenizer *tok = NULL;
    if (rc == VT_OK && !(g = vt_gguf_open(o->model, err)))
        rc = err ? err->code : VT_EINPUT;
    if (rc == VT_OK) {
        vt_gguf_str arch;
        if (!vt_gguf_get_str(g, "general.architecture", &arch) || !(c->arch = strndup(arch.ptr, (size_t)arch.len)) ||
            strlen(c->arch) != arch.len || !vt_utf8_valid(c->arch, strlen(c->arch)))
            rc = vt_error_set(err, VT_EINPUT, "%s: key general.architecture: expected a UTF-8 string", o->model);
    }
    if (rc == VT_OK && !(tok = vt_tokenizer_open(g, err)))
        rc = err ? err->code : VT_EINPUT;
    if (rc == VT_OK)
        c->gguf = gguf_summary(g, c->arch, vt_tokenizer_n_vocab(tok));
    if (rc == VT_OK)
        rc = c->prefix ? read_local(c, vt_tokenizer_n_vocab(tok), err)
                       : vt_prompts_read(o->prompts, tok, &c->prompts, err);
    vt_tokenizer_free(tok);
    vt_gguf_free(g);

    if (rc == VT_OK && o->model_manifest) {
        rc = vt_manifest_read(o->model_manifest, &c->manifest, err);
        c->have_manifest = rc == VT_OK;
        c->manifest_dir = dir_name(o->model_manifest);
    }
    if (rc == VT_OK && o->launcher_manifest)
        rc = read_launcher(c, err);
    if (rc == VT_OK && o->package && access(o->package, R_OK) != 0)
        rc = vt_error_set(err, VT_EINPUT, "%s: cannot read: %s", o->package, strerror(errno));

    /* Settings as requested, every default made explicit. */
    if (rc == VT_OK) {
        vt_runner_settings s = o->settings;
        int eager = s.mode == VT_MODE_EAGER;
        s.model_path = o->model;
        if (s.n_threads == 0) {
            vt_runner_settings d;
            vt_runner_settings_default(&d);
            s.n_threads = eager ? 1 : d.n_threads;
        }
        if (s.n_ctx == 0) {
            for (int p = 0; p < c->prompts.n; p++) {
                int64_t need = (int64_t)c->prompts.items[p].n_tokens + (c->prefix ? c->n_cont[p] : o->max_tokens);
                if (need > s.n_ctx)
                    s.n_ctx = need > INT32_MAX ? INT32_MAX : (int32_t)need;
            }
        }
        if (s.n_batch == 0)
            s.n_batch = eager ? 1 : (s.n_ctx < 512 ? s.n_ctx : 512);
        c->req = s;
    }
    if (rc) {
        vt_capture_free(c);
        return NULL;
    }
    return c;
}

/* ------------------------------------------------------------------ run */

static void utc_text(int64_t t, char *buf, size_t cap)
{
    time_t tt = (time_t)t;
    struct tm tm;
    gmtime_r(&tt, &tm);
    strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

int vt_capture_run(vt_capture *c, vt_error *err)
{
    if (c->text)
        return vt_error_set(err, VT_EINPUT, "capture: already run");
    int rc = VT_OK;
    vt_runner *r = vt_runner_open(c->ops, &c->req, err);
    if (!r)
        return err ? err->code : VT_EINPUT;
    vt_runner_settings res;
    vt_runner_resolved(r, &res);
    vt_runner_identity rid;
    vt_runner_identity_get(r, &rid);

    /* After the runner is open, so that every library it loaded is mapped. */
    vt_runtime_identity id;
    memset(&id, 0, sizeof id);
    vt_error iderr;
    vt_error_clear(&iderr);
    int id_ok = vt_runtime_identity_read(&id, &iderr) == VT_OK;

    cJSON *doc = cJSON_CreateObject(), *runs = cJSON_CreateArray();
    det_state det = { 1, 1, 0, NULL };
    int32_t nv = vt_runner_n_vocab(r);
    int32_t top_res = c->o.top_k < nv ? c->o.top_k : nv;
    if (c->o.logits_out && !(c->side = vt_logits_writer_new(c->side_dir, err)))
        rc = err ? err->code : VT_EINPUT;
    if (rc == VT_OK && c->topk_path && !(c->topk = vt_topk_writer_new(c->topk_dir, top_res, err)))
        rc = err ? err->code : VT_EINPUT;
    if (rc == VT_OK)
        rc = run_all(c, r, runs, &det, err);
    if (rc == VT_OK && c->side)
        rc = vt_logits_writer_finish(c->side, &c->side_sha, &c->side_size, err);
    if (rc == VT_OK && c->topk)
        rc = vt_topk_writer_finish(c->topk, &c->topk_sha, &c->topk_size, err);

    /* The document, in its fixed key order. */
    cJSON *model = NULL, *runtime = NULL, *package = NULL;
    if (rc == VT_OK) {
        add_str(doc, "schema", c->prefix ? VT_PREFIX_SCORES_SCHEMA : VT_CAPTURE_SCHEMA);
        cJSON *tool = cJSON_AddObjectToObject(doc, "tool");
        add_str(tool, "name", "vt-capture");
        add_str(tool, "version", VT_VERSION);
        add_str(tool, "git", VT_GIT_REV);
        if (c->o.created_utc >= 0) {
            char t[32];
            utc_text(c->o.created_utc, t, sizeof t);
            add_str(doc, "created_utc", t);
        }
        if (c->prefix)
            cJSON_AddItemToObject(doc, "local", cJSON_Duplicate(c->local, 1));
        if (!(model = model_json(c, err)))
            rc = err ? err->code : VT_EINPUT;
    }
    if (rc == VT_OK) {
        cJSON_AddItemToObject(doc, "model", model);
        runtime = runtime_json(c, &rid, &id, id_ok, iderr.msg, res.n_threads);
        cJSON_AddItemToObject(doc, "runtime", runtime);
        if (!(package = package_json(c, &rid, &id, id_ok, err)))
            rc = err ? err->code : VT_EINPUT;
    }
    if (rc == VT_OK) {
        cJSON_AddItemToObject(doc, "package", package);
        if (c->launcher) {
            cJSON *l = cJSON_AddObjectToObject(doc, "launcher");
            add_str(l, "file", base_name(c->o.launcher_manifest));
            add_str(l, "sha256", c->launcher_sha.hex);
            add_bool(l, "attested", 1);
            cJSON_AddItemToObject(l, "manifest", cJSON_Duplicate(c->launcher, 1));
        } else {
            cJSON_AddItemToObject(doc, "launcher", cJSON_CreateNull());
            refuse(c, "--launcher-manifest: missing: expected the launcher's manifest of what it started");
        }
        cJSON *set = cJSON_AddObjectToObject(doc, "settings");
        cJSON *rq = settings_json(c, &c->req, c->o.top_k), *rs = settings_json(c, &res, top_res);
        cJSON_AddItemToObject(set, "requested", rq);
        cJSON_AddItemToObject(set, "resolved", rs);
        settings_differences(c, rq, rs, "", cJSON_AddArrayToObject(set, "differences"));
        if (!c->prefix) {
            cJSON *pf = cJSON_AddObjectToObject(doc, "prompt_file");
            add_str(pf, "name", base_name(c->o.prompts));
            add_num(pf, "size", (double)c->prompts.file_size);
            add_str(pf, "sha256", c->prompts.file_sha256.hex);
        }
        cJSON *ps = cJSON_AddArrayToObject(doc, "prompts");
        for (int p = 0; p < c->prompts.n; p++) {
            const vt_prompt *pr = &c->prompts.items[p];
            cJSON *e = cJSON_CreateObject();
            add_str(e, "id", pr->id);
            if (pr->text)
                add_str(e, "text", pr->text);
            cJSON_AddItemToObject(e, "tokens", int_array(pr->tokens, pr->n_tokens));
            vt_sha256_hex h;
            tokens_sha256(pr->tokens, pr->n_tokens, &h);
            add_str(e, "sha256", h.hex);
            cJSON_AddItemToArray(ps, e);
        }
        cJSON_AddItemToObject(doc, "runs", runs);
        runs = NULL;
        if (c->side) {
            cJSON *lf = cJSON_AddObjectToObject(doc, "logits_file");
            add_str(lf, "name", c->side_name);
            add_num(lf, "size", (double)c->side_size);
            add_str(lf, "sha256", c->side_sha.hex);
            add_str(lf, "format", "vt.logits/1");
        } else {
            cJSON_AddItemToObject(doc, "logits_file", cJSON_CreateNull());
        }
        if (!c->prefix) {
            if (c->topk) {
                cJSON *tf = cJSON_AddObjectToObject(doc, "topk_file");
                add_str(tf, "name", c->topk_name);
                add_num(tf, "size", (double)c->topk_size);
                add_str(tf, "sha256", c->topk_sha.hex);
                add_str(tf, "format", VT_TOPK_FORMAT);
            } else {
                cJSON_AddItemToObject(doc, "topk_file", cJSON_CreateNull());
            }
        }
        cJSON *d = cJSON_AddObjectToObject(doc, "determinism");
        add_num(d, "repeats", c->o.repetitions);
        add_bool(d, "identical_tokens", det.identical_tokens);
        add_bool(d, "identical_logits", det.identical_logits);
        if (det.first) {
            cJSON_AddItemToObject(d, "first_mismatch", det.first);
            det.first = NULL;
        }
        if (c->o.repetitions < VT_CAPTURE_STRICT_REPEATS)
            refuse(c, "settings.repetitions: %d: expected at least %d identical repeats", c->o.repetitions,
                   VT_CAPTURE_STRICT_REPEATS);
        c->sum.identical_tokens = det.identical_tokens;
        c->sum.identical_logits = det.identical_logits;

        /* Seals: the workload, then everything above the seal. */
        rc = workload_sha(doc, &c->workload_seal, err);
        if (rc == VT_OK) {
            add_str(doc, "workload_seal", c->workload_seal.hex);
            rc = vt_canonical_seal(doc, &c->seal, &c->text, &c->text_len, err);
        }
    }
    c->sum.n_prompts = c->prompts.n;
    c->sum.repetitions = c->o.repetitions;
    c->sum.seal = c->seal.hex;
    c->sum.workload_seal = c->workload_seal.hex;
    c->sum.logits_sha256 = c->side ? c->side_sha.hex : NULL;
    c->sum.topk_path = c->topk ? c->topk_path : NULL;
    c->sum.topk_sha256 = c->topk ? c->topk_sha.hex : NULL;
    cJSON_Delete(det.first);
    cJSON_Delete(runs);
    cJSON_Delete(doc);
    if (id_ok)
        vt_runtime_identity_free(&id);
    vt_runner_close(r);
    return rc;
}

int vt_capture_n_refusals(const vt_capture *c) { return c->n_refusals; }

const char *vt_capture_refusal(const vt_capture *c, int i)
{
    return i >= 0 && i < c->n_refusals ? c->refusals[i] : NULL;
}

const char *vt_capture_text(const vt_capture *c, size_t *len)
{
    if (len)
        *len = c->text_len;
    return c->text;
}

void vt_capture_summary_get(const vt_capture *c, vt_capture_summary *out) { *out = c->sum; }

/* ------------------------------------------------------------ publishing */

static int write_side(int fd, void *ctx, vt_error *err) { return vt_logits_writer_copy(ctx, fd, err); }
static int write_topk(int fd, void *ctx, vt_error *err) { return vt_topk_writer_copy(ctx, fd, err); }

/* Every input the outputs may not alias, the manifest's files included. */
static int collect_inputs(const vt_capture *c, const char ***inputs_out, char ***owned_out, int *n_out,
                          vt_error *err)
{
    const char **inputs = calloc((size_t)c->manifest.n_files + 8, sizeof *inputs);
    char **owned = calloc((size_t)c->manifest.n_files + 1, sizeof *owned);
    if (!inputs || !owned) {
        free(inputs);
        free(owned);
        return vt_error_set(err, VT_EINPUT, "capture: out of memory");
    }
    int n = 0;
    const char *direct[] = { c->o.model, c->o.prompts, c->o.score_prefix_of, c->o.model_manifest,
                             c->o.launcher_manifest, c->o.package,
                             c->package_kind == PKG_NPM ? (c->o.lock ? c->o.lock : VT_SOURCE_DIR "/oracle/llamacpp.lock.json")
                                                        : NULL };
    for (size_t i = 0; i < sizeof direct / sizeof direct[0]; i++)
        if (direct[i])
            inputs[n++] = direct[i];
    for (int i = 0; i < c->manifest.n_files; i++) {
        const char *name = c->manifest.files[i].name;
        if (name[0] == '/') {
            inputs[n++] = name;
        } else if ((owned[i] = malloc(strlen(c->manifest_dir) + strlen(name) + 2))) {
            sprintf(owned[i], "%s/%s", c->manifest_dir, name);
            inputs[n++] = owned[i];
        }
    }
    *inputs_out = inputs;
    *owned_out = owned;
    *n_out = n;
    return VT_OK;
}

static void free_inputs(const vt_capture *c, const char **inputs, char **owned)
{
    for (int i = 0; i < c->manifest.n_files; i++)
        free(owned[i]);
    free(owned);
    free(inputs);
}

int vt_capture_publish(vt_capture *c, int overwrite, vt_publish_hook hook, void *hook_ctx, vt_error *err)
{
    if (!c->text)
        return vt_error_set(err, VT_EINPUT, "capture: publish before a successful run");
    if (c->o.strict && c->n_refusals)
        return vt_error_set(err, VT_ECHECK, "%s: strict: not published: %d reason%s (%s)", c->o.out, c->n_refusals,
                            c->n_refusals == 1 ? "" : "s", c->refusals[0]);
    vt_publish_item items[3];
    memset(items, 0, sizeof items);
    items[0].path = c->o.out;
    items[0].data = c->text;
    items[0].size = c->text_len;
    int n_items = 1;
    if (c->side) {
        items[n_items].path = c->o.logits_out;
        items[n_items].write = write_side;
        items[n_items++].write_ctx = c->side;
    }
    if (c->topk) {
        items[n_items].path = c->topk_path;
        items[n_items].write = write_topk;
        items[n_items++].write_ctx = c->topk;
    }
    const char **inputs;
    char **owned;
    int n;
    if (collect_inputs(c, &inputs, &owned, &n, err))
        return err->code;
    vt_publish_opts po = { .overwrite = overwrite, .inputs = inputs, .n_inputs = n, .hook = hook, .hook_ctx = hook_ctx };
    int rc = vt_publish_group(items, n_items, &po, err);
    free_inputs(c, inputs, owned);
    return rc;
}

int vt_capture_check_outputs(vt_capture *c, int overwrite, vt_error *err)
{
    const char *outs[3] = { c->o.out };
    int n_outs = 1;
    if (c->o.logits_out)
        outs[n_outs++] = c->o.logits_out;
    if (c->topk_path)
        outs[n_outs++] = c->topk_path;
    const char **inputs;
    char **owned;
    int n;
    if (collect_inputs(c, &inputs, &owned, &n, err))
        return err->code;
    vt_publish_opts po = { .overwrite = overwrite, .inputs = inputs, .n_inputs = n };
    int rc = vt_publish_check(outs, n_outs, &po, err);
    free_inputs(c, inputs, owned);
    return rc;
}

void vt_capture_free(vt_capture *c)
{
    if (!c)
        return;
    if (c->cont)
        for (int p = 0; p < c->n_streams; p++)
            free(c->cont[p]);
    free(c->cont);
    vt_prompts_free(&c->prompts);
    free(c->n_cont);
    cJSON_Delete(c->local);
    cJSON_Delete(c->gguf);
    free(c->arch);
    if (c->have_manifest)
        vt_manifest_free(&c->manifest);
    free(c->manifest_dir);
    cJSON_Delete(c->launcher);
    free(c->side_name);
    free(c->side_dir);
    vt_logits_writer_free(c->side);
    free(c->topk_path);
    free(c->topk_name);
    free(c->topk_dir);
    vt_topk_writer_free(c->topk);
    free(c->text);
    for (int i = 0; i < c->n_refusals; i++)
        free(c->refusals[i]);
    free(c->refusals);
    free(c);
}
