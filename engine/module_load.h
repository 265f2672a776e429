/* A shared object loaded as the very bytes it was hashed from: opened once,
 * refused unless a regular file (of at most 1 GiB), read and hashed through
 * that descriptor, and that same file is what dlopen maps
 * (/proc/self/fd/N), so the sha256 recorded is the code that runs. Used by
 * the GPU backend module (gpu_module.c) and the plugin runner
 * (runner_plugin.c). */
#ifndef VT_MODULE_LOAD_H
#define VT_MODULE_LOAD_H

#include "../common/vt_error.h"
#include "../provenance/provenance.h"

/* VT_OK with *handle (dlopen's) and *sha, *size; or VT_EINPUT with one line
 * naming path and, as what the file was expected to be, what. */
int vt_module_load(const char *path, const char *what, void **handle, vt_sha256_hex *sha, unsigned long long *size,
                   vt_error *err);

#endif
