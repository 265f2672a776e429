/* The capture document (capture_internal.h), in the key order capture.h
 * gives, built from the run results and the identities. What verification
 * finds (the model against its manifest, the package against its
 * distribution, an unresolved runtime) is recorded in the document; the
 * strict gate (strict.h) reads it there. */
#include "capture_internal.h"
#include "../common/vt_sort.h"

#include "canonical_json.h"

#include "../common/vt_json.h"
#include "../engine/codec.h"
#include "../engine/gguf_file.h"
#include "../engine/tokenizer.h"

#include <limits.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* ---------------------------------------------------------------- helpers */

const char *vt_capture_base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

char *vt_capture_dir_name(const char *path)
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

static cJSON *int_array(const int32_t *v, int64_t n)
{
    cJSON *a = cJSON_CreateArray();
    for (int64_t i = 0; i < n; i++)
        cJSON_AddItemToArray(a, cJSON_CreateNumber(v[i]));
    return a;
}

static cJSON *num_array(const double *v, int64_t n)
{
    cJSON *a = cJSON_CreateArray();
    for (int64_t i = 0; i < n; i++)
        cJSON_AddItemToArray(a, cJSON_CreateNumber(v[i]));
    return a;
}

/* SHA-256 of token ids as little-endian int32 (prompts[].sha256), hashed
 * through a small buffer: no allocation, whatever the prompt's length.
 * 0, or -1 when OpenSSL fails. */
static int tokens_sha256(const int32_t *t, int32_t n, vt_sha256_hex *out)
{
    unsigned char b[1024], md[32];
    unsigned int mdn = 0;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    int ok = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1;
    for (int32_t i = 0; ok && i < n;) {
        size_t m = 0;
        for (; i < n && m < sizeof b; i++, m += 4)
            for (int k = 0; k < 4; k++)
                b[m + (size_t)k] = (unsigned char)((uint32_t)t[i] >> (8 * k));
        ok = EVP_DigestUpdate(ctx, b, m) == 1;
    }
    ok = ok && EVP_DigestFinal_ex(ctx, md, &mdn) == 1 && mdn == 32;
    EVP_MD_CTX_free(ctx);
    if (!ok)
        return -1;
    vt_sha256_hex_of(md, out);
    return 0;
}

/* ------------------------------------------------------------ the model */

typedef struct type_count {
    const char *name;
    int n;
} type_count;

static int by_name(const void *a, const void *b)
{
    return strcmp(((const type_count *)a)->name, ((const type_count *)b)->name);
}

/* 0, or -1 on out of memory. */
static int add_gguf_str(cJSON *o, const char *key, const vt_gguf *g, const char *gkey)
{
    vt_gguf_str s;
    if (!vt_gguf_get_str(g, gkey, &s)) {
        add_str(o, key, NULL);
        return 0;
    }
    char *t = strndup(s.ptr, (size_t)s.len);
    if (!t)
        return -1;
    add_str(o, key, vt_utf8_valid(t, strlen(t)) && strlen(t) == s.len ? t : NULL);
    free(t);
    return 0;
}

static void add_gguf_int(cJSON *o, const char *key, const vt_gguf *g, const char *gkey)
{
    int64_t v;
    if (vt_gguf_get_i64(g, gkey, &v) && v > -(1ll << 53) && v < (1ll << 53))
        add_num(o, key, (double)v);
    else
        add_str(o, key, NULL);
}

/* What token ids mean: SHA-256 over "vt.vocab/1", then for each of the
 * token list, the token types and the merges, its key, whether it is
 * there, its element type, count and elements as the GGUF file encodes
 * them (strings as a 64-bit length and their bytes). Two models with the
 * same n_vocab and pre-tokenizer but other tokens or merges differ here. */
static void vocab_sha256(const vt_gguf *g, vt_sha256_hex *out)
{
    static const char *const keys[] = { "tokenizer.ggml.tokens", "tokenizer.ggml.token_type",
                                        "tokenizer.ggml.merges" };
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    int ok = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1 && EVP_DigestUpdate(ctx, "vt.vocab/1", 11) == 1;
    for (int k = 0; ok && k < 3; k++) {
        int64_t i = vt_gguf_find_key(g, keys[k]);
        const vt_gguf_value *v = i >= 0 ? vt_gguf_kv_value(g, (uint64_t)i) : NULL;
        int have = v && v->type == VT_GGUF_ARRAY;
        unsigned char h[13];
        uint32_t et = have ? (uint32_t)v->elem_type : 0;
        uint64_t cnt = have ? v->count : 0;
        h[0] = (unsigned char)have;
        for (int s = 0; s < 4; s++)
            h[1 + s] = (unsigned char)(et >> (8 * s));
        for (int s = 0; s < 8; s++)
            h[5 + s] = (unsigned char)(cnt >> (8 * s));
        ok = EVP_DigestUpdate(ctx, keys[k], strlen(keys[k]) + 1) == 1 && EVP_DigestUpdate(ctx, h, sizeof h) == 1 &&
             (!have || EVP_DigestUpdate(ctx, v->raw, (size_t)v->raw_size) == 1);
    }
    unsigned char md[32];
    unsigned int mdn = 0;
    ok = ok && EVP_DigestFinal_ex(ctx, md, &mdn) == 1 && mdn == 32;
    EVP_MD_CTX_free(ctx);
    if (ok)
        vt_sha256_hex_of(md, out);
    else
        out->hex[0] = '\0'; /* no digest: an empty string, which the schema refuses */
}

cJSON *vt_capture_gguf_summary(const vt_gguf *g, const char *arch, int32_t n_vocab)
{
    const unsigned long failures = vt_json_alloc_failures();
    int oom = 0;
    cJSON *o = cJSON_CreateObject();
    add_num(o, "version", vt_gguf_version(g));
    add_num(o, "n_kv", (double)vt_gguf_n_kv(g));
    add_num(o, "n_tensors", (double)vt_gguf_n_tensors(g));
    oom |= add_gguf_str(o, "name", g, "general.name");
    add_gguf_int(o, "file_type", g, "general.file_type");
    char key[128];
    snprintf(key, sizeof key, "%s.context_length", arch);
    add_gguf_int(o, "context_length", g, key);
    snprintf(key, sizeof key, "%s.block_count", arch);
    add_gguf_int(o, "block_count", g, key);
    snprintf(key, sizeof key, "%s.embedding_length", arch);
    add_gguf_int(o, "embedding_length", g, key);
    add_num(o, "n_vocab", n_vocab);
    oom |= add_gguf_str(o, "tokenizer_pre", g, "tokenizer.ggml.pre");
    vt_sha256_hex vh;
    vocab_sha256(g, &vh);
    add_str(o, "vocab_sha256", vh.hex);
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
    vt_sort(tc, (size_t)n, sizeof tc[0], by_name);
    cJSON *types = cJSON_AddObjectToObject(o, "tensor_types");
    for (int i = 0; i < n; i++)
        add_num(types, tc[i].name, tc[i].n);
    if (oom || vt_json_alloc_failures() != failures) { /* a summary with holes is no summary */
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* model{files, revision, arch, gguf, verified, problems, manifest}: the
 * manifest checked (vt_manifest_check over every listed file) and every
 * model file listed in it (by base name) with its size and SHA-256. */
static cJSON *model_json(vt_capture *c, vt_error *err)
{
    cJSON *m = cJSON_CreateObject();
    cJSON *files = cJSON_AddArrayToObject(m, "files");
    cJSON *f = cJSON_CreateObject();
    const char *model_name = vt_capture_base_name(c->o.model);
    add_str(f, "name", model_name);
    add_num(f, "size", (double)c->model_size);
    add_str(f, "sha256", c->model_sha.hex);
    cJSON_AddItemToArray(files, f);
    add_str(m, "revision", c->o.revision);
    add_str(m, "arch", c->arch);
    cJSON_AddItemToObject(m, "gguf", cJSON_Duplicate(c->gguf, 1));

    cJSON *problems = cJSON_CreateArray(), *mref = NULL;
    if (!c->have_manifest) {
        cJSON_AddItemToArray(problems, cJSON_CreateString("no model manifest (--model-manifest)"));
    } else {
        char **lines = NULL;
        int n_lines = 0;
        vt_error merr;
        vt_error_clear(&merr);
        int mrc = vt_manifest_check(&c->manifest, c->manifest_dir, &lines, &n_lines, &merr);
        if (mrc == VT_EINPUT) { /* out of memory: not a fact about the model */
            vt_error_set(err, VT_EINPUT, "%s", merr.msg);
            cJSON_Delete(problems);
            cJSON_Delete(m);
            return NULL;
        }
        if (mrc != VT_OK) {
            for (int i = 0; i < n_lines; i++) {
                char line[1400];
                snprintf(line, sizeof line, "%s: %s", vt_capture_base_name(c->o.model_manifest), lines[i]);
                cJSON_AddItemToArray(problems, cJSON_CreateString(line));
            }
            if (n_lines == 0)
                cJSON_AddItemToArray(problems, cJSON_CreateString(merr.msg));
        }
        vt_prov_lines_free(lines, n_lines);
        const vt_manifest_file *e = NULL;
        for (int i = 0; i < c->manifest.n_files && !e; i++)
            if (strcmp(vt_capture_base_name(c->manifest.files[i].name), model_name) == 0)
                e = &c->manifest.files[i];
        char line[1400];
        if (!e) {
            snprintf(line, sizeof line, "model.files[0] '%s': not listed in %s", model_name,
                     vt_capture_base_name(c->o.model_manifest));
            cJSON_AddItemToArray(problems, cJSON_CreateString(line));
        } else if (e->size != c->model_size || strcmp(e->sha256.hex, c->model_sha.hex) != 0) {
            snprintf(line, sizeof line, "model.files[0] '%s': size %llu, sha256 %s, where %s lists size %llu, sha256 %s",
                     model_name, (unsigned long long)c->model_size, c->model_sha.hex,
                     vt_capture_base_name(c->o.model_manifest), (unsigned long long)e->size, e->sha256.hex);
            cJSON_AddItemToArray(problems, cJSON_CreateString(line));
        }
        vt_sha256_hex msha;
        if (vt_sha256_file(c->o.model_manifest, &msha, NULL, err) != VT_OK) {
            cJSON_Delete(problems);
            cJSON_Delete(m);
            return NULL;
        }
        mref = cJSON_CreateObject();
        add_str(mref, "file", vt_capture_base_name(c->o.model_manifest));
        add_str(mref, "sha256", msha.hex);
    }
    add_bool(m, "verified", cJSON_GetArraySize(problems) == 0);
    cJSON_AddItemToObject(m, "problems", problems);
    cJSON_AddItemToObject(m, "manifest", mref ? mref : cJSON_CreateNull());
    return m;
}

/* -------------------------------------------------------------- runtime */

static int by_path(const void *a, const void *b)
{
    return strcmp((*(const vt_shared_object *const *)a)->path, (*(const vt_shared_object *const *)b)->path);
}

/* NULL when out of memory. */
static cJSON *runtime_json(const vt_capture_identity *idn)
{
    const vt_runner_identity *rid = &idn->runner;
    const vt_runtime_identity *id = &idn->runtime;
    cJSON *o = cJSON_CreateObject();
    cJSON *r = cJSON_AddObjectToObject(o, "runner");
    add_str(r, "name", rid->runner);
    add_str(r, "version", rid->version);
    add_str(r, "backend", rid->backend);
    add_str(r, "device", rid->device);
    add_str(r, "library", rid->library);
    add_str(r, "detail", rid->detail);
    {
        cJSON *b = cJSON_AddObjectToObject(o, "binary");
        add_str(b, "path", id->binary_path);
        add_str(b, "sha256", id->binary_sha256.hex);
        /* Sorted by path: the mapping order follows load addresses. */
        const vt_shared_object **sorted = malloc((size_t)(id->n_objects + 1) * sizeof *sorted);
        if (!sorted) {
            cJSON_Delete(o);
            return NULL;
        }
        cJSON *objs = cJSON_AddArrayToObject(o, "objects");
        for (int i = 0; i < id->n_objects; i++)
            sorted[i] = &id->objects[i];
        vt_sort(sorted, (size_t)id->n_objects, sizeof *sorted, by_path);
        for (int i = 0; i < id->n_objects; i++) {
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
    add_num(o, "threads", idn->resolved.n_threads);
    add_bool(o, "resolved", id->resolved);
    if (!id->resolved)
        add_str(o, "unresolved", id->unresolved ? id->unresolved : "some fields missing");
    return o;
}

/* -------------------------------------------------------------- package */

/* The unpacked npm package a runner's library came from: the nearest
 * directory above it holding package.json (canonical path, malloc'd). */
static char *find_package_root(const char *library)
{
    if (!library || !*library)
        return NULL;
    char *dir = vt_capture_dir_name(library);
    while (dir && strcmp(dir, "/") != 0 && strcmp(dir, ".") != 0) {
        char pj[PATH_MAX];
        snprintf(pj, sizeof pj, "%s/package.json", dir);
        if (access(pj, R_OK) == 0) {
            char *real = realpath(dir, NULL);
            free(dir);
            return real;
        }
        char *up = vt_capture_dir_name(dir);
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
    cJSON *j = vt_json_parse(text, n, pj, NULL);
    free(text);
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(j, "name");
    char *s = cJSON_IsString(name) ? strdup(name->valuestring) : NULL;
    cJSON_Delete(j);
    return s;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* package{...}: the package verified against its distribution, and bound
 * to what ran: the shared objects this process mapped from inside the
 * package's root (npm: the unpacked package; wheel: the installed files)
 * are its members, byte for byte. Every finding is a line of problems. */
/* package{kind "imports"}: every module and shared object the runner's
 * Python process imported, against the RECORDs of the distributions it
 * imported them from (provenance/imports.c). loaded: the shared objects
 * verified; distributions: each one owning an imported file; outside: what
 * came from no distribution (the interpreter, libc, the CUDA driver),
 * recorded by sha256 as the runtime and never counted as verified. */
static cJSON *imports_package_json(const vt_capture_identity *idn, vt_error *err)
{
    vt_imports_report rep;
    vt_sha256_hex sha;
    if (!idn->imports) {
        vt_error_set(err, VT_EINPUT, "capture: the runner wrote no imports list");
        return NULL;
    }
    if (vt_sha256_file(idn->imports, &sha, NULL, err) != VT_OK || vt_imports_verify(idn->imports, &rep, err) != VT_OK)
        return NULL;
    cJSON *o = cJSON_CreateObject();
    add_str(o, "kind", "imports");
    add_str(o, "file", vt_capture_base_name(idn->imports));
    add_str(o, "sha256", sha.hex);
    add_str(o, "name", "safetensors, tokenizers, torch, transformers");
    add_str(o, "integrity", "");
    add_str(o, "computed_integrity", "");
    add_str(o, "root", "");
    cJSON *l = cJSON_AddArrayToObject(o, "loaded");
    for (int i = 0; i < rep.n_loaded; i++)
        cJSON_AddItemToArray(l, cJSON_CreateString(rep.loaded[i]));
    add_num(o, "members_checked", rep.verified);
    cJSON *probs = str_array(rep.problems, rep.n_problems);
    if (rep.n_loaded == 0)
        cJSON_AddItemToArray(probs, cJSON_CreateString("no shared object the process loaded is a distribution's "
                                                       "member: the runner's code is not bound to the package"));
    add_bool(o, "verified", rep.ok && cJSON_GetArraySize(probs) == 0);
    cJSON_AddItemToObject(o, "problems", probs);
    char line[160];
    snprintf(line, sizeof line, "%d modules and %d shared objects checked, %d verified against their RECORDs, %d "
             "from outside every distribution", rep.modules, rep.objects, rep.verified, rep.n_outside);
    cJSON *notes = cJSON_AddArrayToObject(o, "notes");
    cJSON_AddItemToArray(notes, cJSON_CreateString(line));
    add_num(o, "modules", rep.modules);
    add_num(o, "objects", rep.objects);
    cJSON_AddItemToObject(o, "distributions", str_array(rep.dists, rep.n_dists));
    cJSON_AddItemToObject(o, "outside", str_array(rep.outside, rep.n_outside));
    vt_imports_report_free(&rep);
    return o;
}

static cJSON *package_json(vt_capture *c, const vt_capture_identity *idn, vt_error *err)
{
    if (c->package_kind == PKG_NONE)
        return cJSON_CreateNull();
    if (c->package_kind == PKG_IMPORTS)
        return imports_package_json(idn, err);
    const vt_runtime_identity *id = &idn->runtime;
    const char *pkg = c->o.package;
    vt_package_report rep;
    memset(&rep, 0, sizeof rep);
    char *root = NULL, *name = NULL, *local_problem = NULL;
    const char **loaded = NULL;
    int n_loaded = 0, rc = VT_OK;
    const int wheel = c->package_kind == PKG_WHEEL;
    if (wheel)
        root = c->o.package_root ? realpath(c->o.package_root, NULL) : NULL;
    else
        root = c->o.package_root ? realpath(c->o.package_root, NULL) : find_package_root(idn->runner.library);
    if (root) {
        size_t rl = strlen(root);
        loaded = calloc((size_t)id->n_objects + 1, sizeof *loaded);
        for (int i = 0; loaded && i < id->n_objects; i++)
            if (strncmp(id->objects[i].path, root, rl) == 0 && id->objects[i].path[rl] == '/')
                loaded[n_loaded++] = id->objects[i].path;
    }
    if (wheel) {
        if (!root)
            local_problem = strdup("no installed files (--package-root): a wheel is bound to what ran through the "
                                   "installed files the runtime loaded");
        rc = vt_package_verify_wheel(pkg, root, &rep, err);
    } else {
        name = root ? package_name(root) : NULL;
        const char *lock = c->o.lock ? c->o.lock : VT_SOURCE_DIR "/oracle/llamacpp.lock.json";
        if (!root || !name) {
            local_problem = strdup(!root ? "no package root: the runner's library is not inside an unpacked "
                                           "package (a directory with package.json)"
                                         : "the package root's package.json has no name");
            vt_sha256_file(pkg, &rep.sha256, NULL, NULL);
        } else {
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
    add_str(o, "kind", wheel ? "wheel" : "npm");
    add_str(o, "file", vt_capture_base_name(pkg));
    add_str(o, "sha256", rep.sha256.hex);
    add_str(o, "name", name);
    add_str(o, "integrity", rep.integrity);
    add_str(o, "computed_integrity", rep.computed_integrity);
    add_str(o, "root", root);
    /* Relative to the root and sorted (mapping order follows load addresses). */
    vt_sort(loaded, (size_t)n_loaded, sizeof *loaded, cmp_str);
    cJSON *l = cJSON_AddArrayToObject(o, "loaded");
    for (int i = 0; i < n_loaded; i++)
        cJSON_AddItemToArray(l, cJSON_CreateString(loaded[i] + strlen(root) + 1));
    add_num(o, "members_checked", rep.members_checked);
    cJSON *probs = str_array(rep.problems, rep.n_problems);
    if (local_problem)
        cJSON_AddItemToArray(probs, cJSON_CreateString(local_problem));
    else if (n_loaded == 0 && root) {
        char line[PATH_MAX + 200];
        snprintf(line, sizeof line, "no shared object this process loaded comes from %s: the runner's code is not "
                 "bound to the package", root);
        cJSON_AddItemToArray(probs, cJSON_CreateString(line));
    }
    add_bool(o, "verified", rep.verified && cJSON_GetArraySize(probs) == 0);
    cJSON_AddItemToObject(o, "problems", probs);
    cJSON_AddItemToObject(o, "notes", str_array(rep.notes, rep.n_notes));
    free(root);
    free(name);
    free(loaded);
    free(local_problem);
    vt_package_report_free(&rep);
    return o;
}

/* ------------------------------------------------------------- settings */

/* Settings fields, as named in settings.differences and by allow lists. */
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
    if (c->ops->has_dtype) {
        add_str(o, "dtype", vt_dtype_name(s->dtype));
        add_str(o, "attention", vt_attn_impl_name(s->attention));
    }
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

static int json_value_equal(const cJSON *a, const cJSON *b)
{
    if (cJSON_IsNumber(a) && cJSON_IsNumber(b))
        return a->valuedouble == b->valuedouble;
    if (cJSON_IsString(a) && cJSON_IsString(b))
        return strcmp(a->valuestring, b->valuestring) == 0;
    return 0;
}

/* settings.differences: every field whose resolved value differs from the
 * requested one, allowed or not. Both objects have the same members in the
 * same order. */
static void settings_differences(const vt_capture *c, const cJSON *req, const cJSON *res, const char *prefix,
                                 cJSON *out)
{
    /* Out of memory built only part of the document; the reader refuses it. */
    if (!req || !res || !out)
        return;
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
    }
}

/* ------------------------------------------------------------------ runs */

static cJSON *runs_json(const vt_capture *c, const vt_run_results *res)
{
    cJSON *runs = cJSON_CreateArray();
    for (int i = 0; i < res->n_runs; i++) {
        const vt_run_result *r = &res->runs[i];
        cJSON *run = cJSON_CreateObject();
        add_num(run, "prompt", r->prompt);
        add_num(run, "repeat", r->repeat);
        add_str(run, "status", r->ok ? "ok" : "error");
        if (!r->ok)
            add_str(run, "error", r->error);
        cJSON_AddItemToObject(run, "tokens", int_array(res->tokens + r->off, r->n));
        if (c->prefix) {
            cJSON_AddItemToObject(run, "logprobs", num_array(res->logprobs + r->off, r->n));
            cJSON_AddItemToObject(run, "argmax", int_array(res->argmax + r->off, r->n));
            cJSON_AddItemToObject(run, "argmax_logprobs", num_array(res->argmax_logprobs + r->off, r->n));
            if (res->known_top_k > 0) { /* vt.prefix-scores/4 */
                cJSON *b = cJSON_AddArrayToObject(run, "bound");
                for (int32_t k = 0; k < r->n; k++)
                    if (res->bound[r->off + k])
                        cJSON_AddItemToArray(b, cJSON_CreateNumber(k));
            }
        }
        if (r->ok)
            add_str(run, "logits_sha256", r->logits_sha.hex);
        cJSON_AddItemToArray(runs, run);
    }
    return runs;
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

/* ------------------------------------------------------------- document */

static void utc_text(int64_t t, char *buf, size_t cap)
{
    time_t tt = (time_t)t;
    struct tm tm;
    gmtime_r(&tt, &tm);
    strftime(buf, cap, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void add_side_file(cJSON *doc, const char *key, int present, const char *name, uint64_t size,
                          const vt_sha256_hex *sha, const char *format)
{
    if (!present) {
        cJSON_AddItemToObject(doc, key, cJSON_CreateNull());
        return;
    }
    cJSON *f = cJSON_AddObjectToObject(doc, key);
    add_str(f, "name", name);
    add_num(f, "size", (double)size);
    add_str(f, "sha256", sha->hex);
    add_str(f, "format", format);
}

int vt_capture_document(vt_capture *c, const vt_run_results *res, const vt_capture_identity *id, vt_error *err)
{
    cJSON *doc = cJSON_CreateObject(), *model = NULL, *package = NULL;
    add_str(doc, "schema", !c->prefix ? VT_CAPTURE_SCHEMA
                           : res->known_top_k > 0 ? VT_PREFIX_SCORES_SCHEMA_TOPK : VT_PREFIX_SCORES_SCHEMA);
    cJSON *tool = cJSON_AddObjectToObject(doc, "tool");
    add_str(tool, "name", "vt-capture");
    add_str(tool, "version", VT_VERSION);
    add_str(tool, "git", VT_GIT_REV);
    if (c->o.created_utc >= 0) {
        char t[32];
        utc_text(c->o.created_utc, t, sizeof t);
        add_str(doc, "created_utc", t);
    }
    if (c->prefix) {
        const vt_doc *L = c->local;
        cJSON *l = cJSON_AddObjectToObject(doc, "local");
        add_str(l, "file", vt_capture_base_name(c->o.score_prefix_of));
        add_str(l, "sha256", L->file_sha256.hex);
        add_str(l, "schema", cJSON_GetObjectItemCaseSensitive(L->meta, "schema")->valuestring);
        add_str(l, "seal", L->seal.hex);
        add_str(l, "workload_seal", L->workload_seal.hex);
        add_str(doc, "shape", vt_score_shape_name(c->o.score_shape));
    }
    int rc = VT_OK;
    cJSON *runtime = NULL;
    if (!(model = model_json(c, err)) || !(package = package_json(c, id, err)) || !(runtime = runtime_json(id))) {
        if (!runtime && package)
            vt_error_set(err, VT_EINPUT, "capture: out of memory");
        cJSON_Delete(model);
        cJSON_Delete(package);
        cJSON_Delete(doc);
        return err && err->code ? err->code : VT_EINPUT;
    }
    cJSON_AddItemToObject(doc, "model", model);
    cJSON_AddItemToObject(doc, "runtime", runtime);
    cJSON_AddItemToObject(doc, "package", package);
    if (c->launcher) {
        cJSON *l = cJSON_AddObjectToObject(doc, "launcher");
        add_str(l, "file", vt_capture_base_name(c->o.launcher_manifest));
        add_str(l, "sha256", c->launcher_sha.hex);
        add_bool(l, "attested", 1);
        cJSON_AddItemToObject(l, "manifest", cJSON_Duplicate(c->launcher, 1));
    } else {
        cJSON_AddItemToObject(doc, "launcher", cJSON_CreateNull());
    }
    cJSON *set = cJSON_AddObjectToObject(doc, "settings");
    cJSON *rq = settings_json(c, &c->req, c->o.top_k), *rs = settings_json(c, &id->resolved, id->top_k);
    cJSON_AddItemToObject(set, "requested", rq);
    cJSON_AddItemToObject(set, "resolved", rs);
    settings_differences(c, rq, rs, "", cJSON_AddArrayToObject(set, "differences"));
    if (!c->prefix) {
        cJSON *pf = cJSON_AddObjectToObject(doc, "prompt_file");
        add_str(pf, "name", vt_capture_base_name(c->o.prompts));
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
        if (tokens_sha256(pr->tokens, pr->n_tokens, &h) != 0) {
            cJSON_Delete(e);
            cJSON_Delete(doc);
            return vt_error_set(err, VT_EINPUT, "capture: prompts[%d]: SHA-256 of its tokens failed", p);
        }
        add_str(e, "sha256", h.hex);
        cJSON_AddItemToArray(ps, e);
    }
    cJSON_AddItemToObject(doc, "runs", runs_json(c, res));
    add_side_file(doc, "logits_file", c->side != NULL, c->side_name, c->side_size, &c->side_sha, "vt.logits/1");
    if (!c->prefix)
        add_side_file(doc, "topk_file", c->topk != NULL, c->topk_name, c->topk_size, &c->topk_sha, VT_TOPK_FORMAT);
    cJSON *d = cJSON_AddObjectToObject(doc, "determinism");
    add_num(d, "repeats", c->o.repetitions);
    add_bool(d, "identical_tokens", res->identical_tokens);
    add_bool(d, "identical_logits", res->identical_logits);
    if (res->has_mismatch) {
        cJSON *fm = cJSON_AddObjectToObject(d, "first_mismatch");
        add_num(fm, "prompt", res->mm_prompt);
        add_num(fm, "repeat", res->mm_repeat);
        add_num(fm, "position", res->mm_position);
        add_str(fm, "field", res->mm_field);
    }

    /* Paths and error messages come from outside: valid UTF-8 whatever
     * they held. A document cJSON could not build whole is not written.
     * Then the seals: the workload, then everything above. */
    if (vt_json_make_text(doc) != 0 || vt_json_alloc_failures() != c->json_failures)
        rc = vt_error_set(err, VT_EINPUT, "capture: out of memory");
    if (rc == VT_OK)
        rc = workload_sha(doc, &c->workload_seal, err);
    if (rc == VT_OK) {
        add_str(doc, "workload_seal", c->workload_seal.hex);
        rc = vt_canonical_seal(doc, &c->seal, &c->text, &c->text_len, err);
    }
    cJSON_Delete(doc);
    return rc;
}
