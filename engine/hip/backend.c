/* The backend module's one export (engine/gpu_backend.h): the GPU forward
 * passes of qwen3_gpu.c and qwen35_gpu.c behind one table, the model
 * chosen by the file's general.architecture as the CPU engine runner does.
 * Built into libvt_hip.so with VT_HIP_VENDOR, VT_HIP_TARGETS and
 * VT_HIP_SOURCES_SHA256 defined by the build (scripts/gpu-build, CMakeLists.txt). */
#include "vt_gpu.h"

#include "../gguf_file.h"
#include "../gpu_backend.h"

#include <stdlib.h>
#include <string.h>

#ifndef VT_HIP_VENDOR
#error "VT_HIP_VENDOR: the build names the vendor (\"nvidia\" or \"amd\")"
#endif
#ifndef VT_HIP_TARGETS
#error "VT_HIP_TARGETS: the build names the offload targets"
#endif
#ifndef VT_HIP_SOURCES_SHA256
#error "VT_HIP_SOURCES_SHA256: the build names the sources' sha256 (scripts/hip-sources-sha256)"
#endif

typedef struct model {
    int qwen35; /* 0: qwen3, 1: qwen35 */
    void *m;
} model;

static int b_open(const vt_runner_settings *s, void **out, vt_error *err)
{
    *out = NULL;
    if (!s->model_path)
        return vt_error_set(err, VT_EINPUT, "gpu: no model path");
    char arch[32];
    int rc = vt_gguf_read_arch(s->model_path, arch, sizeof arch, err);
    if (rc)
        return rc;
    const int q35 = strcmp(arch, "qwen35") == 0;
    if (!q35 && strcmp(arch, "qwen3") != 0)
        return vt_error_set(err, VT_EINPUT, "%s: key general.architecture: \"%s\": expected \"qwen3\" or \"qwen35\"",
                            s->model_path, arch);
    model *m = calloc(1, sizeof *m);
    if (!m)
        return vt_error_set(err, VT_EINPUT, "gpu: out of memory");
    m->qwen35 = q35;
    m->m = q35 ? (void *)vt_gpu_qwen35_open(s->device, s, err) : (void *)vt_gpu_qwen3_open(s->device, s, err);
    if (!m->m) {
        free(m);
        return err->code ? err->code : VT_EINPUT;
    }
    *out = m;
    return VT_OK;
}

static void b_close(void *p)
{
    model *m = p;
    if (!m)
        return;
    if (m->qwen35)
        vt_gpu_qwen35_close(m->m);
    else
        vt_gpu_qwen3_close(m->m);
    free(m);
}

static void b_reset(void *p)
{
    model *m = p;
    if (m->qwen35)
        vt_gpu_qwen35_reset(m->m);
    else
        vt_gpu_qwen3_reset(m->m);
}

static int b_eval(void *p, const int32_t *tokens, int32_t n, int all_logits, float *logits, vt_error *err)
{
    model *m = p;
    return m->qwen35 ? vt_gpu_qwen35_eval(m->m, tokens, n, all_logits, logits, err)
                     : vt_gpu_qwen3_eval(m->m, tokens, n, all_logits, logits, err);
}

static int32_t b_n_vocab(void *p)
{
    model *m = p;
    return m->qwen35 ? vt_gpu_qwen35_n_vocab(m->m) : vt_gpu_qwen3_n_vocab(m->m);
}

static void b_resolved(void *p, vt_runner_settings *out)
{
    model *m = p;
    if (m->qwen35)
        vt_gpu_qwen35_resolved(m->m, out);
    else
        vt_gpu_qwen3_resolved(m->m, out);
}

static void b_counts(void *p, uint64_t *launches, uint64_t *copies)
{
    model *m = p;
    if (m->qwen35)
        vt_gpu_qwen35_counts(m->m, launches, copies);
    else
        vt_gpu_qwen3_counts(m->m, launches, copies);
}

static const char *b_arch(void *p) { return ((model *)p)->qwen35 ? "qwen35" : "qwen3"; }

__attribute__((visibility("default"))) const vt_gpu_backend vt_gpu_backend_v1 = {
    .abi = VT_GPU_BACKEND_ABI,
    .table_size = sizeof(vt_gpu_backend),
    .settings_size = sizeof(vt_runner_settings),
    .error_size = sizeof(vt_error),
    .vendor = VT_HIP_VENDOR,
    .targets = VT_HIP_TARGETS,
    .sources_sha256 = VT_HIP_SOURCES_SHA256,
    .device_count = vt_gpu_device_count,
    .device_name = vt_gpu_device_name,
    .runtime = vt_gpu_runtime,
    .open = b_open,
    .close = b_close,
    .reset = b_reset,
    .eval = b_eval,
    .n_vocab = b_n_vocab,
    .resolved = b_resolved,
    .arch = b_arch,
    .counts = b_counts,
    .read_bandwidth = vt_gpu_read_bandwidth,
};
