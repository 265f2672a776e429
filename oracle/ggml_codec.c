/* Loads libggml-base from the pinned node-llama-cpp package at run time and
 * exposes its quantizers and decoders. Compiled against the ggml.h taken from
 * the same package's source bundle, so struct ggml_type_traits matches. */
#include "ggml_codec.h"
#include "../common/vt_input.h"
#include "../engine/codec.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ggml.h>

#ifndef VT_GGML_LIBDIR
#define VT_GGML_LIBDIR "deps/linux-x64/bins/linux-x64"
#endif

typedef const struct ggml_type_traits *(*get_traits_fn)(enum ggml_type);
typedef size_t (*quantize_chunk_fn)(enum ggml_type, const float *, void *, int64_t, int64_t,
                                    int64_t, const float *);
typedef bool (*requires_imatrix_fn)(enum ggml_type);
typedef void (*bf16_row_fn)(const float *, ggml_bf16_t *, int64_t);
/* Q8_K has no traits entry for either direction; libggml-base exports both. */
typedef void (*q8k_quant_fn)(const float *, void *, int64_t);
typedef void (*q8k_dequant_fn)(const void *, float *, int64_t);

struct vt_ggml {
    void *lib;
    char path[4096];
    get_traits_fn get_traits;
    quantize_chunk_fn quantize_chunk;
    requires_imatrix_fn requires_imatrix;
    bf16_row_fn f32_to_bf16_row;
    q8k_quant_fn q8k_quant;
    q8k_dequant_fn q8k_dequant;
};

/* dlsym returns void*; ISO C has no conversion to function pointers, POSIX does. */
static void *sym(vt_ggml *g, const char *name, vt_error *err)
{
    void *p = dlsym(g->lib, name);
    if (!p)
        vt_error_set(err, VT_EINPUT, "%s: symbol %s: not found", g->path, name);
    return p;
}

vt_ggml *vt_ggml_open(const char *libdir, vt_error *err)
{
    if (!libdir)
        libdir = getenv("VT_GGML_LIBDIR");
    if (!libdir || !*libdir)
        libdir = VT_GGML_LIBDIR;
    vt_ggml *g = calloc(1, sizeof *g);
    if (!g) {
        vt_error_set(err, VT_EINPUT, "ggml oracle: out of memory");
        return NULL;
    }
    snprintf(g->path, sizeof g->path, "%s/libggml-base.so", libdir);
    /* dlopen() would wait on a FIFO: a regular file first (vt_input.h). */
    vt_error ierr;
    if (vt_input_check(g->path, NULL, &ierr)) {
        vt_error_set(err, VT_EINPUT, "%s: cannot load the ggml oracle (run scripts/bootstrap)", ierr.msg);
        free(g);
        return NULL;
    }
    g->lib = dlopen(g->path, RTLD_NOW | RTLD_LOCAL);
    if (!g->lib) {
        vt_error_set(err, VT_EINPUT, "%s: cannot load the ggml oracle: %s (run scripts/bootstrap)",
                     g->path, dlerror());
        free(g);
        return NULL;
    }
    void *p[6];
    const char *names[6] = { "ggml_get_type_traits", "ggml_quantize_chunk",
                             "ggml_quantize_requires_imatrix", "ggml_fp32_to_bf16_row",
                             "quantize_row_q8_K_ref", "dequantize_row_q8_K" };
    for (int i = 0; i < 6; i++) {
        if (!(p[i] = sym(g, names[i], err))) {
            vt_ggml_free(g);
            return NULL;
        }
    }
    memcpy(&g->get_traits, &p[0], sizeof p[0]);
    memcpy(&g->quantize_chunk, &p[1], sizeof p[1]);
    memcpy(&g->requires_imatrix, &p[2], sizeof p[2]);
    memcpy(&g->f32_to_bf16_row, &p[3], sizeof p[3]);
    memcpy(&g->q8k_quant, &p[4], sizeof p[4]);
    memcpy(&g->q8k_dequant, &p[5], sizeof p[5]);
    return g;
}

void vt_ggml_free(vt_ggml *g)
{
    if (!g)
        return;
    if (g->lib)
        dlclose(g->lib);
    free(g);
}

const char *vt_ggml_path(const vt_ggml *g) { return g->path; }

int vt_ggml_requires_imatrix(vt_ggml *g, int type)
{
    return g->requires_imatrix((enum ggml_type)type) ? 1 : 0;
}

int vt_ggml_quantize(vt_ggml *g, int type, const float *src, void *dst, int64_t nrows,
                     int64_t n_per_row, const float *imatrix, vt_error *err)
{
    const vt_codec *c = vt_codec_by_type(type);
    if (!c || n_per_row % c->block_elems != 0)
        return vt_error_set(err, VT_EINPUT, "ggml quantize: type %d: row of %lld: expected whole blocks",
                            type, (long long)n_per_row);
    if (imatrix == NULL && vt_ggml_requires_imatrix(g, type))
        return vt_error_set(err, VT_EINPUT, "ggml quantize %s: expected an importance matrix", c->name);
    if (type == VT_TYPE_Q8_K) {
        size_t rb = vt_codec_row_bytes(c, n_per_row);
        for (int64_t r = 0; r < nrows; r++)
            g->q8k_quant(src + r * n_per_row, (char *)dst + (size_t)r * rb, n_per_row);
        return VT_OK;
    }
    g->quantize_chunk((enum ggml_type)type, src, dst, 0, nrows, n_per_row, imatrix);
    return VT_OK;
}

int vt_ggml_type_info(vt_ggml *g, int type, const char **name, int64_t *block_elems, size_t *block_bytes)
{
    const struct ggml_type_traits *t = g->get_traits((enum ggml_type)type);
    if (!t || !t->type_name || t->blck_size <= 0)
        return 0;
    *name = t->type_name;
    *block_elems = t->blck_size;
    *block_bytes = t->type_size;
    return 1;
}

int vt_ggml_dequantize(vt_ggml *g, int type, const void *src, float *dst, int64_t n, vt_error *err)
{
    if (type == VT_TYPE_F32) {
        memcpy(dst, src, (size_t)n * sizeof(float));
        return VT_OK;
    }
    if (type == VT_TYPE_Q8_K) {
        g->q8k_dequant(src, dst, n);
        return VT_OK;
    }
    const struct ggml_type_traits *t = g->get_traits((enum ggml_type)type);
    if (!t || !t->to_float)
        return vt_error_set(err, VT_EINPUT, "ggml: type %d: no to_float decoder", type);
    t->to_float(src, dst, n);
    return VT_OK;
}

void vt_ggml_f32_to_bf16(vt_ggml *g, const float *src, uint16_t *dst, int64_t n)
{
    g->f32_to_bf16_row(src, (ggml_bf16_t *)dst, n);
}
