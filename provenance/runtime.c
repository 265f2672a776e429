/* Runtime identity: which bytes this process is actually running (its
 * executable and every shared object mapped into it, hashed), which library
 * versions it linked, and on what CPU and kernel. Captures record it so a
 * result can be tied to the exact code that produced it. */
#include "prov_internal.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <archive.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <openssl/crypto.h>
#include <pcre2.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>
#include <zlib.h>

/* zlib.h defines zlib_version as a macro (zlibVersion()); here it must name
 * the struct field. */
#undef zlib_version

enum { PROC_MAX_BYTES = 64 << 20 };

/* The ISA features that decide which kernels numeric code runs (x86 names
 * from /proc/cpuinfo "flags", then arm64 names from "Features"). Reported in
 * this order, only those present. */
static const char *const isa_flags[] = {
    "sse2", "ssse3", "sse4_1", "sse4_2", "avx", "avx2", "fma", "f16c", "bmi2", "avx_vnni", "avx512f",
    "avx512dq", "avx512cd", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16", "avx512_fp16",
    "avx512vbmi", "amx_tile", "amx_bf16", "amx_int8", "sha_ni",
    "asimd", "fphp", "asimdhp", "asimddp", "i8mm", "bf16", "sve", "sve2", "sme",
};

void vt_runtime_identity_free(vt_runtime_identity *id)
{
    if (!id)
        return;
    free(id->binary_path);
    for (int i = 0; i < id->n_objects; i++)
        free(id->objects[i].path);
    free(id->objects);
    free(id->openssl_version);
    free(id->libarchive_version);
    free(id->zlib_version);
    free(id->cjson_version);
    free(id->pcre2_version);
    free(id->cpu_model);
    free(id->cpu_flags);
    free(id->kernel);
    free(id->machine);
    free(id->unresolved);
    memset(id, 0, sizeof *id);
}

/* The link's target, or NULL (*oom set when memory ran out: that is not a
 * missing fact, and must not be recorded as one). */
static char *read_link(const char *path, int *oom)
{
    for (size_t cap = 256; cap <= (1u << 20); cap *= 2) {
        char *buf = malloc(cap);
        if (!buf) {
            *oom = 1;
            return NULL;
        }
        ssize_t n = readlink(path, buf, cap);
        if (n < 0) {
            free(buf);
            return NULL;
        }
        if ((size_t)n < cap) {
            buf[n] = '\0';
            return buf;
        }
        free(buf);
    }
    return NULL;
}

/* A shared object by name: "libx.so" or "libx.so.1.2". */
static int is_shared_object(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t n = strlen(base);
    return (n > 3 && strcmp(base + n - 3, ".so") == 0) || strstr(base, ".so.") != NULL;
}

/* Unique shared-object paths of file-backed mappings, in map order.
 * deleted[i] marks a mapping whose file was deleted or replaced since (its
 * bytes can no longer be read by path). Returns 0 or errno. */
static int mapped_objects(char ***paths_out, int **deleted_out, int *n_out)
{
    char *text;
    size_t len;
    int e = vt_prov_read_file("/proc/self/maps", PROC_MAX_BYTES, &text, &len);
    if (e)
        return e;
    char **paths = NULL;
    int *deleted = NULL, n = 0, cap = 0;
    for (char *line = text; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        /* address perms offset dev inode [path]: the path may hold spaces. */
        unsigned long inode = 0;
        int pos = -1;
        if (sscanf(line, "%*s %*s %*s %*s %lu %n", &inode, &pos) == 1 && pos > 0 && inode != 0 &&
            line[pos] == '/') {
            char *path = line + pos;
            int del = 0;
            size_t pl = strlen(path);
            static const char suffix[] = " (deleted)";
            if (pl > sizeof suffix - 1 && strcmp(path + pl - (sizeof suffix - 1), suffix) == 0) {
                path[pl - (sizeof suffix - 1)] = '\0';
                del = 1;
            }
            int seen = 0;
            for (int i = 0; i < n && !seen; i++)
                seen = strcmp(paths[i], path) == 0;
            if (!seen && is_shared_object(path)) {
                if (n == cap) {
                    cap = cap ? cap * 2 : 64;
                    char **np = realloc(paths, sizeof *np * (size_t)cap);
                    int *nd = np ? realloc(deleted, sizeof *nd * (size_t)cap) : NULL;
                    if (np)
                        paths = np;
                    if (nd)
                        deleted = nd;
                    if (!np || !nd) {
                        e = ENOMEM;
                        break;
                    }
                }
                if (!(paths[n] = vt_prov_strdup(path))) {
                    e = ENOMEM;
                    break;
                }
                deleted[n++] = del;
            }
        }
        line = nl ? nl + 1 : NULL;
    }
    free(text);
    if (e) {
        for (int i = 0; i < n; i++)
            free(paths[i]);
        free(paths);
        free(deleted);
        return e;
    }
    *paths_out = paths;
    *deleted_out = deleted;
    *n_out = n;
    return 0;
}

/* Value of the first "key<spaces>: value" line of /proc/cpuinfo text. */
static char *cpuinfo_value(const char *text, const char *key, int *oom)
{
    size_t kl = strlen(key);
    for (const char *line = text; line && *line;) {
        const char *nl = strchr(line, '\n');
        size_t ll = nl ? (size_t)(nl - line) : strlen(line);
        if (ll > kl && strncmp(line, key, kl) == 0 && (line[kl] == ' ' || line[kl] == '\t' || line[kl] == ':')) {
            const char *colon = memchr(line, ':', ll);
            if (colon) {
                const char *v = colon + 1;
                while (v < line + ll && (*v == ' ' || *v == '\t'))
                    v++;
                size_t vl = (size_t)(line + ll - v);
                char *out = malloc(vl + 1);
                if (out) {
                    memcpy(out, v, vl);
                    out[vl] = '\0';
                } else {
                    *oom = 1;
                }
                return out;
            }
        }
        line = nl ? nl + 1 : NULL;
    }
    return NULL;
}

static int has_word(const char *list, const char *word)
{
    size_t wl = strlen(word);
    for (const char *p = list; (p = strstr(p, word)) != NULL; p += wl)
        if ((p == list || p[-1] == ' ' || p[-1] == '\t') && (p[wl] == '\0' || p[wl] == ' ' || p[wl] == '\t'))
            return 1;
    return 0;
}

static void read_cpu(vt_runtime_identity *id, int *oom)
{
    char *text;
    size_t len;
    int e = vt_prov_read_file("/proc/cpuinfo", PROC_MAX_BYTES, &text, &len);
    if (e) {
        *oom |= e == ENOMEM;
        return;
    }
    static const char *const model_keys[] = { "model name", "Processor", "cpu model", "uarch" };
    for (size_t i = 0; i < sizeof model_keys / sizeof *model_keys && !id->cpu_model && !*oom; i++)
        id->cpu_model = cpuinfo_value(text, model_keys[i], oom);
    char *flags = *oom ? NULL : cpuinfo_value(text, "flags", oom);
    if (!flags && !*oom)
        flags = cpuinfo_value(text, "Features", oom);
    if (flags) {
        vt_sbuf b = { 0 };
        vt_sbuf_puts(&b, "");
        for (size_t i = 0; i < sizeof isa_flags / sizeof *isa_flags; i++)
            if (has_word(flags, isa_flags[i]))
                vt_sbuf_printf(&b, "%s%s", b.n ? " " : "", isa_flags[i]);
        *oom |= b.oom;
        id->cpu_flags = vt_sbuf_take(&b);
        free(flags);
    }
    free(text);
}

/* A copy of a library's version string; a NULL copy of a present string is
 * out of memory, not an unknown version. */
static char *copy_fact(const char *s, int *oom)
{
    if (!s)
        return NULL;
    char *c = vt_prov_strdup(s);
    *oom |= !c;
    return c;
}

/* The hashes of files this process has hashed already, by what stat says
 * of them: a process that captures again (vt agree runs two runners, a
 * corpus runs many prompts; the allocation-failure suite runs a capture
 * thousands of times) hashes its 50-odd shared objects, 60 MB, once.
 * A file is the same bytes while its device, inode, size, mtime and ctime
 * are (ctime cannot be set back); an entry is made only when stat says the
 * same before and after the hash. Out of memory for the table only loses
 * the saving. */
typedef struct hashed_file {
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtim, ctim;
    unsigned char sha256[32];
} hashed_file;

static pthread_mutex_t hashed_lock = PTHREAD_MUTEX_INITIALIZER;
static hashed_file *hashed;
static int n_hashed, hashed_cap;

static int same_file(const hashed_file *h, const struct stat *st)
{
    return h->dev == st->st_dev && h->ino == st->st_ino && h->size == st->st_size &&
           h->mtim.tv_sec == st->st_mtim.tv_sec && h->mtim.tv_nsec == st->st_mtim.tv_nsec &&
           h->ctim.tv_sec == st->st_ctim.tv_sec && h->ctim.tv_nsec == st->st_ctim.tv_nsec;
}

/* 1 and the digest in d when path's file was hashed before. */
static int hashed_before(const struct stat *st, vt_prov_digest *d)
{
    int found = 0;
    pthread_mutex_lock(&hashed_lock);
    for (int i = 0; i < n_hashed && !found; i++)
        if (same_file(&hashed[i], st)) {
            memcpy(d->out[0], hashed[i].sha256, 32);
            d->len[0] = 32;
            d->size = (uint64_t)st->st_size;
            found = 1;
        }
    pthread_mutex_unlock(&hashed_lock);
    return found;
}

static void remember_hash(const char *path, const struct stat *before, const vt_prov_digest *d)
{
    struct stat after;
    if (stat(path, &after) != 0 || (uint64_t)after.st_size != d->size)
        return;
    hashed_file h = { .dev = before->st_dev, .ino = before->st_ino, .size = before->st_size,
                      .mtim = before->st_mtim, .ctim = before->st_ctim };
    if (!same_file(&h, &after))
        return;
    memcpy(h.sha256, d->out[0], 32);
    pthread_mutex_lock(&hashed_lock);
    if (n_hashed == hashed_cap) {
        int cap = hashed_cap ? 2 * hashed_cap : 64;
        hashed_file *grown = realloc(hashed, (size_t)cap * sizeof *grown);
        if (grown) {
            hashed = grown;
            hashed_cap = cap;
        }
    }
    if (n_hashed < hashed_cap)
        hashed[n_hashed++] = h;
    pthread_mutex_unlock(&hashed_lock);
}

int vt_runtime_identity_read(vt_runtime_identity *out, vt_error *err)
{
    memset(out, 0, sizeof *out);
    char **paths = NULL;
    int *deleted = NULL, n = 0;
    /* An unreadable map (no /proc) is a fact left unresolved; running out
     * of memory is a failure. */
    int maps_errno = mapped_objects(&paths, &deleted, &n);
    if (maps_errno == ENOMEM)
        return vt_error_set(err, VT_EINPUT, "runtime identity: out of memory reading /proc/self/maps");

    /* The executable and every object hashed together by the thread pool.
     * /proc/self/exe names the running inode even if its path was replaced. */
    const char **hpaths = calloc((size_t)n + 1, sizeof *hpaths);
    vt_prov_digest *d = calloc((size_t)n + 1, sizeof *d);
    int *status = calloc((size_t)n + 1, sizeof *status);
    out->objects = calloc((size_t)n + 1, sizeof *out->objects);
    if (!hpaths || !d || !status || !out->objects) {
        for (int i = 0; i < n; i++)
            free(paths[i]);
        free(paths);
        free(deleted);
        free(hpaths);
        free(d);
        free(status);
        vt_runtime_identity_free(out);
        return vt_error_set(err, VT_EINPUT, "runtime identity: out of memory");
    }
    hpaths[0] = "/proc/self/exe";
    for (int i = 0; i <= n; i++) {
        d[i].md[0] = EVP_sha256();
        d[i].n_md = 1;
        if (i)
            hpaths[i] = paths[i - 1];
    }
    /* Those hashed before are not hashed again; the rest go to the pool,
     * packed to the front of a second list (then copied back in order). */
    struct stat *st = calloc((size_t)n + 1, sizeof *st);
    int *todo = calloc((size_t)n + 1, sizeof *todo);
    const char **tpaths = calloc((size_t)n + 1, sizeof *tpaths);
    vt_prov_digest *td = calloc((size_t)n + 1, sizeof *td);
    int *tstatus = calloc((size_t)n + 1, sizeof *tstatus);
    if (st && todo && tpaths && td && tstatus) {
        int n_todo = 0;
        for (int i = 0; i <= n; i++) {
            int known = stat(hpaths[i], &st[i]) == 0 && S_ISREG(st[i].st_mode) && hashed_before(&st[i], &d[i]);
            if (!known) {
                todo[n_todo] = i;
                tpaths[n_todo] = hpaths[i];
                td[n_todo++] = d[i];
            }
        }
        vt_prov_digest_paths(tpaths, n_todo, 0, td, tstatus);
        for (int k = 0; k < n_todo; k++) {
            int i = todo[k];
            d[i] = td[k];
            status[i] = tstatus[k];
            if (!status[i] && st[i].st_ino)
                remember_hash(hpaths[i], &st[i], &d[i]);
        }
    } else {
        vt_prov_digest_paths(hpaths, n + 1, 0, d, status); /* no memory to spare: hash them all */
    }
    free(st);
    free(todo);
    free(tpaths);
    free(td);
    free(tstatus);

    vt_sbuf miss = { 0 };
    if (maps_errno)
        vt_sbuf_printf(&miss, "objects (/proc/self/maps: %s) ", strerror(maps_errno));
    int oom = 0;
    out->binary_path = read_link("/proc/self/exe", &oom);
    for (int i = 0; i <= n; i++)
        oom |= status[i] == ENOMEM;
    if (!status[0]) {
        vt_prov_hex(d[0].out[0], 32, out->binary_sha256.hex);
        out->binary_size = d[0].size;
    } else {
        vt_sbuf_printf(&miss, "binary_sha256 (%s) ", strerror(status[0]));
    }
    for (int i = 0; i < n; i++) {
        vt_shared_object *o = &out->objects[i];
        o->path = paths[i]; /* taken over */
        if (deleted[i])
            vt_sbuf_printf(&miss, "object %s (deleted or replaced since it was mapped) ", o->path);
        else if (status[i + 1])
            vt_sbuf_printf(&miss, "object %s (%s) ", o->path, strerror(status[i + 1]));
        else {
            vt_prov_hex(d[i + 1].out[0], 32, o->sha256.hex);
            o->size = d[i + 1].size;
        }
    }
    out->n_objects = n;
    free(paths);
    free(deleted);
    free(hpaths);
    free(d);
    free(status);

    out->openssl_version = copy_fact(OpenSSL_version(OPENSSL_VERSION), &oom);
    out->libarchive_version = copy_fact(archive_version_string(), &oom);
    out->zlib_version = copy_fact(zlibVersion(), &oom);
    out->cjson_version = copy_fact(cJSON_Version(), &oom);
    char pv[64];
    if (pcre2_config(PCRE2_CONFIG_VERSION, pv) > 0 && memchr(pv, '\0', sizeof pv))
        out->pcre2_version = copy_fact(pv, &oom);
    read_cpu(out, &oom);
    struct utsname u;
    if (uname(&u) == 0) {
        out->kernel = copy_fact(u.release, &oom);
        out->machine = copy_fact(u.machine, &oom);
    }
    long nc = sysconf(_SC_NPROCESSORS_ONLN);
    out->n_cores = nc > 0 ? (int)nc : 0;
    cpu_set_t set;
    out->n_cores_usable = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : out->n_cores;

    const struct { const char *name; const char *value; } fields[] = {
        { "binary_path", out->binary_path },       { "openssl_version", out->openssl_version },
        { "libarchive_version", out->libarchive_version }, { "zlib_version", out->zlib_version },
        { "cjson_version", out->cjson_version },   { "pcre2_version", out->pcre2_version },
        { "cpu_model", out->cpu_model },           { "cpu_flags", out->cpu_flags },
        { "kernel", out->kernel },                 { "machine", out->machine },
    };
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++)
        if (!fields[i].value || !fields[i].value[0])
            vt_sbuf_printf(&miss, "%s ", fields[i].name);
    if (out->n_cores <= 0)
        vt_sbuf_puts(&miss, "n_cores ");
    if (miss.oom || oom) {
        free(miss.p);
        vt_runtime_identity_free(out);
        return vt_error_set(err, VT_EINPUT, "runtime identity: out of memory");
    }
    if (miss.n) {
        miss.p[--miss.n] = '\0'; /* trailing space */
        out->unresolved = vt_sbuf_take(&miss);
    } else {
        free(miss.p);
        out->resolved = 1;
    }
    return VT_OK;
}

char *vt_runtime_identity_to_json(const vt_runtime_identity *id)
{
    vt_sbuf b = { 0 };
    vt_sbuf_printf(&b, "{\n  \"schema\": \"vt.runtime-identity/1\",\n  \"resolved\": %s,\n  \"unresolved\": ",
                   id->resolved ? "true" : "false");
    if (id->unresolved)
        vt_sbuf_json_str(&b, id->unresolved);
    else
        vt_sbuf_puts(&b, "null");
    vt_sbuf_puts(&b, ",\n  \"binary\": {\"path\": ");
    vt_sbuf_json_str(&b, id->binary_path);
    vt_sbuf_printf(&b, ", \"size\": %llu, \"sha256\": \"%s\"},\n  \"objects\": [",
                   (unsigned long long)id->binary_size, id->binary_sha256.hex);
    for (int i = 0; i < id->n_objects; i++) {
        vt_sbuf_puts(&b, i ? ",\n    {\"path\": " : "\n    {\"path\": ");
        vt_sbuf_json_str(&b, id->objects[i].path);
        vt_sbuf_printf(&b, ", \"size\": %llu, \"sha256\": \"%s\"}", (unsigned long long)id->objects[i].size,
                       id->objects[i].sha256.hex);
    }
    vt_sbuf_puts(&b, id->n_objects ? "\n  ],\n  \"libraries\": {\"openssl\": " : "],\n  \"libraries\": {\"openssl\": ");
    vt_sbuf_json_str(&b, id->openssl_version);
    vt_sbuf_puts(&b, ", \"libarchive\": ");
    vt_sbuf_json_str(&b, id->libarchive_version);
    vt_sbuf_puts(&b, ", \"zlib\": ");
    vt_sbuf_json_str(&b, id->zlib_version);
    vt_sbuf_puts(&b, ", \"cjson\": ");
    vt_sbuf_json_str(&b, id->cjson_version);
    vt_sbuf_puts(&b, ", \"pcre2\": ");
    vt_sbuf_json_str(&b, id->pcre2_version);
    vt_sbuf_puts(&b, "},\n  \"cpu\": {\"model\": ");
    vt_sbuf_json_str(&b, id->cpu_model);
    vt_sbuf_puts(&b, ", \"flags\": ");
    vt_sbuf_json_str(&b, id->cpu_flags);
    vt_sbuf_printf(&b, ", \"cores\": %d, \"cores_usable\": %d},\n  \"kernel\": ", id->n_cores, id->n_cores_usable);
    vt_sbuf_json_str(&b, id->kernel);
    vt_sbuf_puts(&b, ",\n  \"machine\": ");
    vt_sbuf_json_str(&b, id->machine);
    vt_sbuf_puts(&b, "\n}\n");
    return vt_sbuf_take(&b);
}
