#include "gpu_module.h"
#include "module_load.h"

#include "../provenance/provenance.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static vt_gpu_module_info loaded;
static char loaded_path[PATH_MAX];
static vt_sha256_hex loaded_sha;

static int find_path(char *buf, size_t cap, vt_error *err)
{
    const char *env = getenv("VT_HIP_MODULE");
    if (env && *env) {
        if (!realpath(env, buf))
            return vt_error_set(err, VT_EINPUT, "VT_HIP_MODULE '%s': %s: expected the GPU backend module "
                                "(libvt_hip.so)", env, strerror(errno));
        return VT_OK;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return vt_error_set(err, VT_EINPUT, "--backend hip: /proc/self/exe: %s: expected the running executable",
                            strerror(errno));
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = 0;
    if ((size_t)snprintf(buf, cap, "%s/libvt_hip.so", exe) >= cap)
        return vt_error_set(err, VT_EINPUT, "--backend hip: %s: path too long", exe);
    if (access(buf, F_OK) != 0)
        return vt_error_set(err, VT_EINPUT, "--backend hip: %s: no such file: expected the GPU backend module there "
                            "or at $VT_HIP_MODULE (built with -DVT_HIP=on, or scripts/gpu-build for NVIDIA)", buf);
    return VT_OK;
}

static int load(vt_error *err)
{
    int rc = find_path(loaded_path, sizeof loaded_path, err);
    if (rc)
        return rc;
    const char *p = loaded_path;
    void *h = NULL;
    unsigned long long size = 0;
    if ((rc = vt_module_load(p, "the GPU backend module", &h, &loaded_sha, &size, err)))
        return rc;
    const vt_gpu_backend *b = dlsym(h, VT_GPU_BACKEND_SYMBOL);
    rc = VT_OK;
    if (!b)
        rc = vt_error_set(err, VT_EINPUT, "%s: symbol %s: missing: expected the GPU backend module's table", p,
                            VT_GPU_BACKEND_SYMBOL);
    else if (b->abi != VT_GPU_BACKEND_ABI)
        rc = vt_error_set(err, VT_EINPUT, "%s: field abi: %u: expected %u", p, b->abi, VT_GPU_BACKEND_ABI);
    else if (b->table_size != sizeof(vt_gpu_backend) || b->settings_size != sizeof(vt_runner_settings) ||
             b->error_size != sizeof(vt_error))
        rc = vt_error_set(err, VT_EINPUT, "%s: struct sizes %u/%u/%u: expected %zu/%zu/%zu (a module built from "
                            "another source tree)", p, b->table_size, b->settings_size, b->error_size,
                            sizeof(vt_gpu_backend), sizeof(vt_runner_settings), sizeof(vt_error));
    else if (!b->vendor || !b->targets || !b->sources_sha256 || !b->device_count || !b->device_name || !b->runtime ||
             !b->open || !b->close || !b->reset || !b->eval || !b->n_vocab || !b->resolved || !b->arch ||
             !b->counts || !b->read_bandwidth)
        rc = vt_error_set(err, VT_EINPUT, "%s: table %s: a null entry: expected every entry set", p,
                            VT_GPU_BACKEND_SYMBOL);
    if (rc) {
        dlclose(h);
        return rc;
    }
    loaded = (vt_gpu_module_info){ .backend = b, .path = loaded_path, .sha256 = loaded_sha.hex,
                                   .size = size };
    return VT_OK;
}

int vt_gpu_module_get(vt_gpu_module_info *out, vt_error *err)
{
    pthread_mutex_lock(&lock);
    int rc = loaded.backend ? VT_OK : load(err);
    if (rc == VT_OK)
        *out = loaded;
    pthread_mutex_unlock(&lock);
    return rc;
}
