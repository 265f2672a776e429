/* ggml_mul_mat through the CPU backend llama.cpp loads (see ggml_matmul.h).
 *
 * Built against ggml.h / ggml-backend.h / ggml-alloc.h from the pinned
 * package's source bundle, so struct ggml_init_params and struct ggml_tensor
 * match the library. Every entry point is bound by dlsym on libllama's
 * handle, which also searches its dependencies (libggml, libggml-base). */
#include "ggml_matmul.h"
#include "llamacpp_lib.h"

#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ggml-alloc.h>
#include <ggml-backend.h>
#include <ggml-cpu.h>
#include <ggml.h>

typedef struct ggml_fns {
    struct ggml_context *(*init)(struct ggml_init_params);
    void (*free)(struct ggml_context *);
    struct ggml_tensor *(*new_tensor_2d)(struct ggml_context *, enum ggml_type, int64_t, int64_t);
    struct ggml_tensor *(*mul_mat)(struct ggml_context *, struct ggml_tensor *, struct ggml_tensor *);
    struct ggml_cgraph *(*new_graph)(struct ggml_context *);
    void (*build_forward_expand)(struct ggml_cgraph *, struct ggml_tensor *);
    size_t (*tensor_overhead)(void);
    size_t (*graph_overhead)(void);
    size_t (*nbytes)(const struct ggml_tensor *);
    ggml_backend_buffer_t (*alloc_ctx_tensors)(struct ggml_context *, ggml_backend_buffer_type_t);
    void (*tensor_set)(struct ggml_tensor *, const void *, size_t, size_t);
    void (*tensor_get)(const struct ggml_tensor *, void *, size_t, size_t);
    enum ggml_status (*graph_compute)(ggml_backend_t, struct ggml_cgraph *);
    ggml_backend_t (*dev_init)(ggml_backend_dev_t, const char *);
    ggml_backend_buffer_type_t (*dev_buffer_type)(ggml_backend_dev_t);
    void (*buffer_free)(ggml_backend_buffer_t);
    void (*buffer_set_usage)(ggml_backend_buffer_t, enum ggml_backend_buffer_usage);
    void (*backend_free)(ggml_backend_t);
    void *(*reg_get_proc_address)(ggml_backend_reg_t, const char *);
    const char *(*buft_name)(ggml_backend_buffer_type_t);
    ggml_backend_dev_t (*dev_by_type)(enum ggml_backend_dev_type);
    ggml_backend_reg_t (*dev_backend_reg)(ggml_backend_dev_t);
    bool (*dev_supports_op)(ggml_backend_dev_t, const struct ggml_tensor *);
} ggml_fns;

#define FN(field, name) { name, offsetof(ggml_fns, field) }
static const struct {
    const char *name;
    size_t offset;
} k_fns[] = {
    FN(init, "ggml_init"),
    FN(free, "ggml_free"),
    FN(new_tensor_2d, "ggml_new_tensor_2d"),
    FN(mul_mat, "ggml_mul_mat"),
    FN(new_graph, "ggml_new_graph"),
    FN(build_forward_expand, "ggml_build_forward_expand"),
    FN(tensor_overhead, "ggml_tensor_overhead"),
    FN(graph_overhead, "ggml_graph_overhead"),
    FN(nbytes, "ggml_nbytes"),
    FN(alloc_ctx_tensors, "ggml_backend_alloc_ctx_tensors_from_buft"),
    FN(tensor_set, "ggml_backend_tensor_set"),
    FN(tensor_get, "ggml_backend_tensor_get"),
    FN(graph_compute, "ggml_backend_graph_compute"),
    FN(dev_init, "ggml_backend_dev_init"),
    FN(dev_buffer_type, "ggml_backend_dev_buffer_type"),
    FN(buffer_free, "ggml_backend_buffer_free"),
    FN(buffer_set_usage, "ggml_backend_buffer_set_usage"),
    FN(backend_free, "ggml_backend_free"),
    FN(reg_get_proc_address, "ggml_backend_reg_get_proc_address"),
    FN(buft_name, "ggml_backend_buft_name"),
    FN(dev_by_type, "ggml_backend_dev_by_type"),
    FN(dev_backend_reg, "ggml_backend_dev_backend_reg"),
    FN(dev_supports_op, "ggml_backend_dev_supports_op"),
};
#undef FN

struct vt_ggml_mm {
    ggml_fns f;
    char cpu_backend[4096];
    ggml_backend_dev_t dev;
    ggml_backend_t backend;
    ggml_backend_buffer_type_t plain;
    ggml_backend_buffer_type_t extra; /* the repacking buffer type, or NULL */
};

vt_ggml_mm *vt_ggml_mm_open(const char *libdir, int n_threads, vt_error *err)
{
    const vt_llamacpp_lib *L = vt_llamacpp_lib_load(libdir, err);
    if (!L)
        return NULL;
    vt_ggml_mm *m = calloc(1, sizeof *m);
    if (!m) {
        vt_error_set(err, VT_EINPUT, "ggml matmul oracle: out of memory");
        return NULL;
    }
    snprintf(m->cpu_backend, sizeof m->cpu_backend, "%s", L->cpu_backend);
    /* Already loaded by vt_llamacpp_lib_load: this only takes a reference. */
    void *h = dlopen(L->path, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (!h) {
        vt_error_set(err, VT_EINPUT, "%s: not loaded: %s", L->path, dlerror());
        free(m);
        return NULL;
    }
    for (size_t i = 0; i < sizeof k_fns / sizeof k_fns[0]; i++) {
        void *p = dlsym(h, k_fns[i].name);
        if (!p) {
            vt_error_set(err, VT_EINPUT, "%s: symbol %s: not found", L->path, k_fns[i].name);
            dlclose(h);
            free(m);
            return NULL;
        }
        memcpy((char *)&m->f + k_fns[i].offset, &p, sizeof p);
    }
    dlclose(h); /* the process keeps libllama loaded (llamacpp_lib.h) */

    m->dev = m->f.dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU);
    m->backend = m->dev ? m->f.dev_init(m->dev, NULL) : NULL;
    if (!m->backend) {
        vt_error_set(err, VT_EINPUT, "%s: the CPU backend does not start", m->cpu_backend);
        free(m);
        return NULL;
    }
    m->plain = m->f.dev_buffer_type(m->dev);
    ggml_backend_reg_t reg = m->f.dev_backend_reg(m->dev);
    void *p = m->f.reg_get_proc_address(reg, "ggml_backend_set_n_threads");
    if (p && n_threads > 0) {
        ggml_backend_set_n_threads_t set_threads;
        memcpy(&set_threads, &p, sizeof p);
        set_threads(m->backend, n_threads);
    }
    /* llama.cpp tries the device's extra buffer types before the plain one
     * for every weight; on x86 the CPU backend has one, CPU_REPACK. */
    p = m->f.reg_get_proc_address(reg, "ggml_backend_dev_get_extra_bufts");
    if (p) {
        ggml_backend_dev_get_extra_bufts_t get_extra;
        memcpy(&get_extra, &p, sizeof p);
        ggml_backend_buffer_type_t *list = get_extra(m->dev);
        for (int i = 0; list && list[i]; i++)
            if (strcmp(m->f.buft_name(list[i]), "CPU_REPACK") == 0)
                m->extra = list[i];
    }
    return m;
}

void vt_ggml_mm_free(vt_ggml_mm *m)
{
    if (!m)
        return;
    if (m->backend)
        m->f.backend_free(m->backend);
    free(m);
}

const char *vt_ggml_mm_cpu_backend(const vt_ggml_mm *m) { return m->cpu_backend; }

const char *vt_ggml_mm_extra_buffer(const vt_ggml_mm *m)
{
    return m->extra ? m->f.buft_name(m->extra) : "";
}

static struct ggml_context *small_context(vt_ggml_mm *m, int n_tensors, int graph)
{
    struct ggml_init_params p = {
        .mem_size = (size_t)n_tensors * m->f.tensor_overhead() + (graph ? m->f.graph_overhead() : 0) + 1024,
        .mem_buffer = NULL,
        .no_alloc = true,
    };
    return m->f.init(p);
}

int vt_ggml_mm_vec_dot_type(vt_ggml_mm *m, int type)
{
    /* The CPU backend variant is loaded already; this only takes a reference. */
    void *h = dlopen(m->cpu_backend, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (!h)
        return -1;
    const struct ggml_type_traits_cpu *(*traits)(enum ggml_type);
    void *p = dlsym(h, "ggml_get_type_traits_cpu");
    memcpy(&traits, &p, sizeof p);
    const struct ggml_type_traits_cpu *t = p ? traits((enum ggml_type)type) : NULL;
    int r = t && t->vec_dot ? (int)t->vec_dot_type : -1;
    dlclose(h);
    return r;
}

int vt_ggml_mm_supports(vt_ggml_mm *m, int type, int64_t rows, int64_t cols)
{
    struct ggml_context *ctx = small_context(m, 3, 0);
    if (!ctx)
        return 0;
    struct ggml_tensor *w = m->f.new_tensor_2d(ctx, (enum ggml_type)type, cols, rows);
    struct ggml_tensor *x = m->f.new_tensor_2d(ctx, GGML_TYPE_F32, cols, 1);
    int ok = m->f.dev_supports_op(m->dev, m->f.mul_mat(ctx, w, x)) ? 1 : 0;
    m->f.free(ctx);
    return ok;
}

/* W in a context of its own, allocated in buft; NULL if it cannot be. */
static ggml_backend_buffer_t new_weight(vt_ggml_mm *m, int type, int64_t rows, int64_t cols,
                                        ggml_backend_buffer_type_t buft, struct ggml_context **ctx,
                                        struct ggml_tensor **W)
{
    *ctx = small_context(m, 1, 0);
    if (!*ctx)
        return NULL;
    *W = m->f.new_tensor_2d(*ctx, (enum ggml_type)type, cols, rows);
    return m->f.alloc_ctx_tensors(*ctx, buft);
}

int vt_ggml_mm_run(vt_ggml_mm *m, int type, const void *w, int64_t rows, int64_t cols,
                   const float *x, int64_t n_tok, vt_ggml_layout layout, float *y, int *repacked,
                   vt_error *err)
{
    if (!vt_ggml_mm_supports(m, type, rows, cols))
        return vt_error_set(err, VT_EINPUT, "%s: ggml_mul_mat of type %d, %lld x %lld: not supported "
                            "by the CPU backend", m->cpu_backend, type, (long long)rows, (long long)cols);
    int rc = VT_OK;
    ggml_backend_buffer_t wbuf = NULL, abuf = NULL;
    struct ggml_context *wctx = NULL, *ctx = small_context(m, 2, 1);
    struct ggml_tensor *W = NULL;
    *repacked = 0;
    if (layout == VT_GGML_REPACK && m->extra) {
        /* The repacking buffer's init_tensor sets W->extra to the layout ggml
         * chose, or NULL where it keeps the type as stored; its set_tensor
         * needs one, so a type it keeps goes to the plain buffer (a fresh
         * tensor), as llama.cpp's placement does. */
        wbuf = new_weight(m, type, rows, cols, m->extra, &wctx, &W);
        if (wbuf && W->extra) {
            *repacked = 1;
        } else {
            if (wbuf)
                m->f.buffer_free(wbuf);
            if (wctx)
                m->f.free(wctx);
            wbuf = NULL;
            wctx = NULL;
        }
    }
    if (!wbuf)
        wbuf = new_weight(m, type, rows, cols, m->plain, &wctx, &W);
    if (!wbuf || !ctx) {
        rc = vt_error_set(err, VT_EINPUT, "ggml matmul oracle: cannot allocate the weight");
        goto out;
    }
    m->f.buffer_set_usage(wbuf, GGML_BACKEND_BUFFER_USAGE_WEIGHTS);
    m->f.tensor_set(W, w, 0, m->f.nbytes(W));

    struct ggml_tensor *X = m->f.new_tensor_2d(ctx, GGML_TYPE_F32, cols, n_tok);
    struct ggml_tensor *Y = m->f.mul_mat(ctx, W, X);
    struct ggml_cgraph *gf = m->f.new_graph(ctx);
    m->f.build_forward_expand(gf, Y);
    abuf = m->f.alloc_ctx_tensors(ctx, m->plain);
    if (!abuf) {
        rc = vt_error_set(err, VT_EINPUT, "ggml matmul oracle: cannot allocate the activations");
        goto out;
    }
    m->f.tensor_set(X, x, 0, (size_t)(cols * n_tok) * sizeof(float));
    if (m->f.graph_compute(m->backend, gf) != GGML_STATUS_SUCCESS) {
        rc = vt_error_set(err, VT_EINPUT, "%s: ggml_mul_mat of type %d failed", m->cpu_backend, type);
        goto out;
    }
    m->f.tensor_get(Y, y, 0, (size_t)(rows * n_tok) * sizeof(float));
out:
    if (abuf)
        m->f.buffer_free(abuf);
    if (wbuf)
        m->f.buffer_free(wbuf);
    if (ctx)
        m->f.free(ctx);
    if (wctx)
        m->f.free(wctx);
    return rc;
}
