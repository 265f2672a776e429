/* Loading the GPU backend module (engine/gpu_backend.h) for the engine
 * runner's --backend hip. The module is found at $VT_HIP_MODULE, else as
 * libvt_hip.so beside the running executable; its bytes are read once
 * through one descriptor, hashed, and that same file is what dlopen maps
 * (/proc/self/fd/N), so the sha256 recorded is the code that runs. Loaded
 * once per process and kept: a GPU runtime inside a module does not
 * unload cleanly. */
#ifndef VT_GPU_MODULE_H
#define VT_GPU_MODULE_H

#include "../common/vt_error.h"
#include "gpu_backend.h"

typedef struct vt_gpu_module_info {
    const vt_gpu_backend *backend;
    const char *path;   /* as found (absolute) */
    const char *sha256; /* of the file's bytes, lower-case hex */
    unsigned long long size;
} vt_gpu_module_info;

/* The loaded module, loading it on first use: VT_OK and *out filled, or
 * VT_EINPUT with one line in err (not found, not a regular file, not a
 * module, a table of another ABI or another source tree's struct sizes). */
int vt_gpu_module_get(vt_gpu_module_info *out, vt_error *err);

#endif
