/* The GPU backend as vt loads it: one versioned table of functions that the
 * backend module (libvt_hip.so, built from engine/hip/ with hipcc or nvcc)
 * exports under VT_GPU_BACKEND_SYMBOL, and that the engine runner calls
 * (engine/gpu_module.h loads it). A module, not linked in, because the CPU
 * build never needs the GPU toolchain, and because the module's file is
 * the code object a capture names by sha256: the device code and the host
 * code that drives it are that one file.
 *
 * The module carries its own copy of the CPU engine (it opens and checks
 * the GGUF with it, and computes what the GPU passes leave on the host);
 * the structs that cross (vt_runner_settings, vt_error) are this source
 * tree's, and the table records their sizes so that a module built from
 * another tree is refused. */
#ifndef VT_GPU_BACKEND_H
#define VT_GPU_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "../common/vt_error.h"
#include "runner.h"

#define VT_GPU_BACKEND_ABI 1
#define VT_GPU_BACKEND_SYMBOL "vt_gpu_backend_v1"

typedef struct vt_gpu_backend {
    uint32_t abi;           /* VT_GPU_BACKEND_ABI */
    uint32_t table_size;    /* sizeof(vt_gpu_backend) */
    uint32_t settings_size; /* sizeof(vt_runner_settings) */
    uint32_t error_size;    /* sizeof(vt_error) */
    const char *vendor;     /* "nvidia" (nvcc through hip_compat.h) or "amd" (hipcc) */
    const char *targets;    /* the offload targets built: "sm_90", "gfx90a,gfx940,gfx1030" */
    /* sha256 of the sources the device code was built from
     * (scripts/hip-sources-sha256: engine/hip/ and the headers it shares
     * with the CPU engine), so a capture names the source it came from. */
    const char *sources_sha256;
    int (*device_count)(int *n, vt_error *err);
    int (*device_name)(int device, char *buf, size_t cap, vt_error *err);
    /* Runtime and driver versions as the runtime reports them (CUDA:
     * 1000 * major + 10 * minor). */
    int (*runtime)(int device, const char **vendor, int *runtime_version, int *driver_version, vt_error *err);
    /* The runner's entries (runner.h) for the model on device s->device,
     * the architecture chosen by the file's general.architecture. */
    int (*open)(const vt_runner_settings *s, void **model, vt_error *err);
    void (*close)(void *model);
    void (*reset)(void *model);
    int (*eval)(void *model, const int32_t *tokens, int32_t n, int all_logits, float *logits, vt_error *err);
    int32_t (*n_vocab)(void *model);
    void (*resolved)(void *model, vt_runner_settings *out);
    const char *(*arch)(void *model); /* "qwen3", "qwen35" */
    /* For benchmarks: the model's kernel launches and host<->device copies
     * so far, and the device's read bandwidth (vt_gpu_read_bandwidth). */
    void (*counts)(void *model, uint64_t *launches, uint64_t *copies);
    int (*read_bandwidth)(int device, size_t bytes, int passes, double *bytes_per_s, vt_error *err);
} vt_gpu_backend;

#endif
