/* Loads libllama from the pinned node-llama-cpp package once per process.
 * Compiled against the llama.h / ggml-backend.h taken from the same
 * package's source bundle, so the structs passed by value match.
 *
 * libllama's RUNPATH is $ORIGIN, so dlopen by full path finds its libggml /
 * libggml-base siblings without touching LD_LIBRARY_PATH. The package is
 * built with dynamically loaded backends: libggml registers no CPU backend
 * by itself, and llama.cpp cannot load a model's weights until one of the
 * libggml-cpu-<variant>.so files is loaded. ggml_backend_load_all_from_path
 * (what node-llama-cpp itself calls) scores every variant in the directory
 * against this CPU and loads the best one; but the variants compute different
 * bits (sapphirerapids multiplies Q8_0, Q4_K and others in AMX tiles and BF16
 * by VDPBF16PS; icelake has neither), so an oracle chosen by the host's CPU
 * model would make the same comparison pass on one machine and fail on the
 * next. vt pins the variant instead (vt_llamacpp_cpu_variant): the one the
 * engine's arithmetic follows, icelake, wherever this CPU runs it. */
#include "llamacpp_lib.h"
#include "../common/vt_input.h"

#include "../common/vt_json.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ggml-backend.h>

#ifndef VT_GGML_LIBDIR
#define VT_GGML_LIBDIR "deps/linux-x64/bins/linux-x64"
#endif

enum { LIB_UNLOADED = 0, LIB_READY = 1, LIB_BROKEN = 2 };

static pthread_mutex_t g_mutex = PTHREAD_MUTEX_INITIALIZER;
static int g_state = LIB_UNLOADED;
static vt_llamacpp_lib g_lib;
static vt_error g_broken; /* why, once LIB_BROKEN: a half-initialized library is not retried */

/* llama.cpp logs model loading at INFO level to stderr by default; the
 * library never prints. */
static void quiet_log(enum ggml_log_level level, const char *text, void *user)
{
    (void)level;
    (void)text;
    (void)user;
}

/* The package names the library after its release (libllama.v0.5.0.so);
 * accept any libllama[.vX.Y.Z].so in libdir rather than pin the name here. */
static int find_libllama(const char *libdir, char *path, size_t cap)
{
    DIR *d = opendir(libdir);
    if (!d)
        return 0;
    int found = 0;
    struct dirent *e;
    while (!found && (e = readdir(d)) != NULL) {
        const char *n = e->d_name;
        size_t len = strlen(n);
        if (strncmp(n, "libllama", 8) != 0 || len < 11 || strcmp(n + len - 3, ".so") != 0)
            continue;
        if (n[8] != '.') /* libllama-common.so and the like */
            continue;
        found = snprintf(path, cap, "%s/%s", libdir, n) < (int)cap;
    }
    closedir(d);
    return found;
}

/* Small text file into buf (NUL-terminated, trailing newline dropped); its
 * length, 0 if it cannot be read. */
static size_t read_small(const char *path, char *buf, size_t cap)
{
    FILE *f;
    if (vt_input_fopen(path, NULL, &f, NULL, NULL))
        return 0;
    size_t n = fread(buf, 1, cap - 1, f);
    fclose(f);
    buf[n] = '\0';
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' '))
        buf[--n] = '\0';
    return n;
}

/* "node-llama-cpp 3.22.1, llama.cpp <rev>, libllama <llama_version()>".
 * scripts/bootstrap lays the package out as deps/{node-llama-cpp,
 * llama.cpp/REVISION, linux-x64/bins/linux-x64}; a library directory
 * elsewhere gets "unknown" for what it cannot find. */
static void describe_version(vt_llamacpp_lib *L, const char *lib_version)
{
    char path[PATH_MAX + 64];
    char pkg[64] = "unknown", rev[64] = "unknown";
    char *json = malloc(1 << 16);
    snprintf(path, sizeof path, "%s/../../../node-llama-cpp/package.json", L->libdir);
    size_t json_len = json ? read_small(path, json, 1 << 16) : 0;
    if (json_len) {
        /* Strict: a version "3.22.1\u0000x" must not read as 3.22.1. A file
         * refused here leaves the version "unknown", as a missing one does. */
        cJSON *root = vt_json_parse(json, json_len, path, NULL);
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "version");
        if (cJSON_IsString(v))
            snprintf(pkg, sizeof pkg, "%s", v->valuestring);
        cJSON_Delete(root);
    }
    free(json);
    snprintf(path, sizeof path, "%s/../../../llama.cpp/REVISION", L->libdir);
    if (!read_small(path, rev, sizeof rev))
        snprintf(rev, sizeof rev, "unknown");
    snprintf(L->version, sizeof L->version, "node-llama-cpp %s, llama.cpp %s, libllama %s", pkg,
             rev, lib_version ? lib_version : "unknown");
}

/* Symbols stored straight into the table, by offset. */
typedef struct lib_sym {
    const char *name;
    size_t offset;
} lib_sym;

#define SYM(field, name) { name, offsetof(vt_llamacpp_lib, field) }
static const lib_sym k_syms[] = {
    SYM(model_default_params, "llama_model_default_params"),
    SYM(context_default_params, "llama_context_default_params"),
    SYM(model_load_from_file, "llama_model_load_from_file"),
    SYM(model_free, "llama_model_free"),
    SYM(model_get_vocab, "llama_model_get_vocab"),
    SYM(vocab_n_tokens, "llama_vocab_n_tokens"),
    SYM(tokenize, "llama_tokenize"),
    SYM(detokenize, "llama_detokenize"),
    SYM(token_to_piece, "llama_token_to_piece"),
    SYM(init_from_model, "llama_init_from_model"),
    SYM(context_free, "llama_free"),
    SYM(get_memory, "llama_get_memory"),
    SYM(memory_clear, "llama_memory_clear"),
    SYM(memory_seq_pos_max, "llama_memory_seq_pos_max"),
    SYM(batch_init, "llama_batch_init"),
    SYM(batch_free, "llama_batch_free"),
    SYM(decode, "llama_decode"),
    SYM(get_logits_ith, "llama_get_logits_ith"),
    SYM(model_is_recurrent, "llama_model_is_recurrent"),
    SYM(model_is_hybrid, "llama_model_is_hybrid"),
    SYM(n_ctx, "llama_n_ctx"),
    SYM(n_batch, "llama_n_batch"),
    SYM(n_ubatch, "llama_n_ubatch"),
    SYM(n_threads, "llama_n_threads"),
    SYM(n_threads_batch, "llama_n_threads_batch"),
};
#undef SYM

/* dlsym returns void*; ISO C has no conversion to function pointers, POSIX
 * does (same size and representation), hence memcpy. dlsym on libllama's
 * handle also searches its dependencies (libggml, libggml-base). */
static int bind_sym(void *handle, const char *path, const char *name, void *fnptr,
                    vt_error *err)
{
    void *p = dlsym(handle, name);
    if (!p)
        return vt_error_set(err, VT_EINPUT, "%s: symbol %s: not found", path, name);
    memcpy(fnptr, &p, sizeof p);
    return VT_OK;
}

/* The CPU variant ggml computes with: $VT_GGML_CPU_VARIANT ("icelake",
 * "haswell", ...; "best": ggml's own choice for this CPU), by default
 * icelake, the variant whose instructions the engine's kernels follow
 * (README), where this CPU can run it (its ggml_backend_score is not 0),
 * else ggml's best. A named variant this CPU cannot run, or a name with
 * anything but letters, digits and '_', is refused. Only this directory:
 * ggml would otherwise also search the executable's directory and the
 * working directory. */
const char *vt_llamacpp_cpu_variant(void)
{
    const char *v = getenv("VT_GGML_CPU_VARIANT");
    return v && *v ? v : "icelake";
}

static int load_cpu_variant(vt_llamacpp_lib *L, void *h, void (*load_all_from_path)(const char *), vt_error *err)
{
    const char *want = vt_llamacpp_cpu_variant();
    const int named = getenv("VT_GGML_CPU_VARIANT") && *getenv("VT_GGML_CPU_VARIANT");
    if (strcmp(want, "best") == 0) {
        load_all_from_path(L->libdir);
        return VT_OK;
    }
    for (const char *c = want; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_'))
            return vt_error_set(err, VT_EINPUT, "VT_GGML_CPU_VARIANT '%s': expected a variant name (icelake, "
                                "haswell, ...) or best", want);
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/libggml-cpu-%s.so", L->libdir, want);
    int (*score)(void) = NULL;
    /* dlopen() would wait on a FIFO: a regular file first (vt_input.h). */
    void *v = vt_input_check(path, NULL, NULL) == VT_OK ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
    if (v) {
        void *p = dlsym(v, "ggml_backend_score");
        memcpy(&score, &p, sizeof p);
    }
    const int runs = v && score && score() > 0;
    if (runs) {
        ggml_backend_reg_t (*load)(const char *) = NULL;
        int rc = bind_sym(h, L->path, "ggml_backend_load", &load, err);
        if (rc == VT_OK && !load(path))
            rc = vt_error_set(err, VT_EINPUT, "%s: ggml_backend_load failed", path);
        dlclose(v); /* ggml holds its own reference */
        return rc;
    }
    if (v)
        dlclose(v);
    if (named)
        return vt_error_set(err, VT_EINPUT, "VT_GGML_CPU_VARIANT '%s': %s: %s", want, path,
                            v ? "this CPU cannot run it (ggml_backend_score 0)" : "no such variant here");
    load_all_from_path(L->libdir); /* a CPU without AVX-512 VBMI/VNNI: ggml's best */
    return VT_OK;
}

/* One-time set-up after dlopen: logger, backend, CPU variant, descriptions.
 * On failure the library stays loaded (ggml may hold pieces of it). */
static int init_loaded(vt_llamacpp_lib *L, void *h, vt_error *err)
{
    void (*log_set)(ggml_log_callback, void *);
    void (*backend_init)(void);
    void (*load_all_from_path)(const char *);
    ggml_backend_dev_t (*dev_by_type)(enum ggml_backend_dev_type);
    ggml_backend_reg_t (*dev_backend_reg)(ggml_backend_dev_t);
    const char *(*system_info)(void);
    const char *(*version)(void);
    const struct {
        const char *name;
        void *fnptr;
    } once[] = { { "llama_log_set", &log_set },
                 { "llama_backend_init", &backend_init },
                 { "ggml_backend_load_all_from_path", &load_all_from_path },
                 { "ggml_backend_dev_by_type", &dev_by_type },
                 { "ggml_backend_dev_backend_reg", &dev_backend_reg },
                 { "llama_print_system_info", &system_info },
                 { "llama_version", &version } };
    for (size_t i = 0; i < sizeof once / sizeof once[0]; i++) {
        int rc = bind_sym(h, L->path, once[i].name, once[i].fnptr, err);
        if (rc)
            return rc;
    }

    /* Silence first: backend loading logs too. */
    log_set(quiet_log, NULL);
    backend_init();
    int rc = load_cpu_variant(L, h, load_all_from_path, err);
    if (rc)
        return rc;

    ggml_backend_dev_t cpu = dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    if (!cpu)
        return vt_error_set(err, VT_EINPUT,
                            "%s: no libggml-cpu-*.so there loads on this CPU: llama.cpp has no "
                            "CPU backend (run scripts/bootstrap)", L->libdir);
    /* The registry entry lives in the variant's own image, so the image
     * that holds it names the variant ggml chose. */
    Dl_info info;
    ggml_backend_reg_t reg = dev_backend_reg(cpu);
    if (!reg || !dladdr((const void *)reg, &info) || !info.dli_fname)
        return vt_error_set(err, VT_EINPUT, "%s: cannot tell which CPU backend library ggml loaded",
                            L->libdir);
    snprintf(L->cpu_backend, sizeof L->cpu_backend, "%s", info.dli_fname);
    /* llama_print_system_info returns a static buffer it rewrites on each
     * call: take it once, here, under the load lock. */
    const char *si = system_info();
    snprintf(L->system_info, sizeof L->system_info, "%s", si ? si : "");
    describe_version(L, version());
    return VT_OK;
}

static int load_locked(const char *libdir, vt_error *err)
{
    vt_llamacpp_lib *L = &g_lib;
    memset(L, 0, sizeof *L);
    char resolved[PATH_MAX];
    if (!realpath(libdir, resolved))
        return vt_error_set(err, VT_EINPUT, "%s: %s: cannot load the llama.cpp oracle "
                            "(run scripts/bootstrap)", libdir, strerror(errno));
    snprintf(L->libdir, sizeof L->libdir, "%s", resolved);
    if (!find_libllama(L->libdir, L->path, sizeof L->path))
        return vt_error_set(err, VT_EINPUT, "%s: no libllama*.so: cannot load the llama.cpp oracle "
                            "(run scripts/bootstrap)", L->libdir);
    vt_error ierr;
    if (vt_input_check(L->path, NULL, &ierr))
        return vt_error_set(err, VT_EINPUT, "%s: cannot load the llama.cpp oracle (run scripts/bootstrap)",
                            ierr.msg);
    void *h = dlopen(L->path, RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return vt_error_set(err, VT_EINPUT, "%s: cannot load the llama.cpp oracle: %s "
                            "(run scripts/bootstrap)", L->path, dlerror());
    for (size_t i = 0; i < sizeof k_syms / sizeof k_syms[0]; i++) {
        int rc = bind_sym(h, L->path, k_syms[i].name, (char *)L + k_syms[i].offset, err);
        if (rc) {
            dlclose(h); /* nothing ran yet: unloading is safe, a retry may succeed */
            return rc;
        }
    }
    int rc = init_loaded(L, h, err);
    if (rc) {
        g_broken = *err;
        g_state = LIB_BROKEN;
        return rc;
    }
    g_state = LIB_READY;
    return VT_OK;
}

const vt_llamacpp_lib *vt_llamacpp_lib_load(const char *libdir, vt_error *err)
{
    if (!libdir)
        libdir = getenv("VT_GGML_LIBDIR");
    if (!libdir || !*libdir)
        libdir = VT_GGML_LIBDIR;
    /* Internal errors always land somewhere: the sticky copy needs them. */
    vt_error e;
    vt_error_clear(&e);
    const vt_llamacpp_lib *out = NULL;
    pthread_mutex_lock(&g_mutex);
    if (g_state == LIB_UNLOADED) {
        if (load_locked(libdir, &e) == VT_OK)
            out = &g_lib;
    } else if (g_state == LIB_BROKEN) {
        e = g_broken;
    } else {
        char resolved[PATH_MAX];
        if (!realpath(libdir, resolved) || strcmp(resolved, g_lib.libdir) != 0)
            vt_error_set(&e, VT_EINPUT, "%s: the llama.cpp oracle is already loaded from %s; "
                         "one process uses one library", libdir, g_lib.libdir);
        else
            out = &g_lib;
    }
    pthread_mutex_unlock(&g_mutex);
    if (!out)
        vt_error_set(err, e.code, "%s", e.msg);
    return out;
}
