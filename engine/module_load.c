#include "module_load.h"

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
    int fd = open(p, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return vt_error_set(err, VT_EINPUT, "%s: %s: expected %s", p, strerror(errno), what);
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (unsigned long long)st.st_size > MODULE_MAX_BYTES) {
        close(fd);
        return vt_error_set(err, VT_EINPUT, "%s: expected a regular file of at most 1 GiB (%s)", p, what);
    }
    size_t size = (size_t)st.st_size, got = 0;
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
