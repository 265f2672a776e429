#include "module_load.h"
#include "../common/vt_input.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Larger than any real module (ours is a few MiB); a bound on what is read. */
#define MODULE_MAX_BYTES (1ull << 30)

int vt_module_load(const char *p, const char *what, void **handle, vt_sha256_hex *sha, unsigned long long *size_out,
                   vt_error *err)
{
    int fd;
    uint64_t fsize;
    char exp[160];
    snprintf(exp, sizeof exp, "a regular file of at most 1 GiB (%s)", what);
    vt_input_opts io = { .max_bytes = MODULE_MAX_BYTES, .what = exp };
    int orc = vt_input_open(p, &io, &fd, &fsize, err);
    if (orc)
        return orc;
    size_t size = (size_t)fsize, got = 0;
    unsigned char *bytes = malloc(size ? size : 1);
    if (!bytes) {
        close(fd);
        return vt_error_set(err, VT_EINPUT, "%s: out of memory", p);
    }
    while (got < size) {
        ssize_t r = pread(fd, bytes + got, size - got, (off_t)got);
        if (r <= 0) {
            free(bytes);
            close(fd);
            return vt_error_set(err, VT_EINPUT, "%s: read: %s", p, r < 0 ? strerror(errno) : "file shrank");
        }
        got += (size_t)r;
    }
    vt_sha256_buffer(bytes, size, sha);
    free(bytes);
    char fdpath[64];
    snprintf(fdpath, sizeof fdpath, "/proc/self/fd/%d", fd);
    void *h = dlopen(fdpath, RTLD_NOW | RTLD_LOCAL);
    close(fd);
    if (!h) {
        const char *e = dlerror();
        return vt_error_set(err, VT_EINPUT, "%s: dlopen: %s", p, e ? e : "failed");
    }
    *handle = h;
    *size_out = (unsigned long long)size;
    return VT_OK;
}
