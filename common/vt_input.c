/* vt_input: see vt_input.h. */
#include "vt_input.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *vt_input_kind(unsigned mode)
{
    if (S_ISREG(mode))
        return "a regular file";
    if (S_ISDIR(mode))
        return "a directory";
    if (S_ISFIFO(mode))
        return "a FIFO";
    if (S_ISSOCK(mode))
        return "a socket";
    if (S_ISCHR(mode) || S_ISBLK(mode))
        return "a device";
    if (S_ISLNK(mode))
        return "a symbolic link";
    return "not a file";
}

static const char *expected(const vt_input_opts *o, const char *dflt)
{
    return o && o->what ? o->what : dflt;
}

/* open() failed: one line saying why. A link where none is wanted is ELOOP
 * under O_NOFOLLOW. */
static int open_failed(const char *path, const vt_input_opts *o, const char *dflt, int e, vt_error *err)
{
    if (e == ELOOP && o && o->no_follow)
        return vt_error_set(err, VT_EINPUT, "%s: a symbolic link: expected %s", path, expected(o, dflt));
    if (e == ENXIO) /* a socket, or a FIFO some kernels refuse non-blocking */
        return vt_error_set(err, VT_EINPUT, "%s: a socket or FIFO: expected %s", path, expected(o, dflt));
    return vt_error_set(err, VT_EINPUT, "%s: cannot read: %s", path, strerror(e));
}

int vt_input_open(const char *path, const vt_input_opts *o, int *fd, uint64_t *size, vt_error *err)
{
    *fd = -1;
    if (size)
        *size = 0;
    if (!path || !*path)
        return vt_error_set(err, VT_EINPUT, "(empty path): expected %s", expected(o, "a regular file"));
    int flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY;
    if (o && o->no_follow)
        flags |= O_NOFOLLOW;
    int d = open(path, flags);
    if (d < 0)
        return open_failed(path, o, "a regular file", errno, err);
    struct stat st;
    if (fstat(d, &st) != 0) {
        int e = errno;
        close(d);
        return vt_error_set(err, VT_EINPUT, "%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(d);
        return vt_error_set(err, VT_EINPUT, "%s: %s: expected %s", path, vt_input_kind(st.st_mode),
                            expected(o, "a regular file"));
    }
    if (o && o->max_bytes && (uint64_t)st.st_size > o->max_bytes) {
        close(d);
        return vt_error_set(err, VT_EINPUT, "%s: %llu bytes: expected at most %llu", path,
                            (unsigned long long)st.st_size, (unsigned long long)o->max_bytes);
    }
    int fl = fcntl(d, F_GETFL);
    if (fl < 0 || fcntl(d, F_SETFL, fl & ~O_NONBLOCK) < 0) {
        int e = errno;
        close(d);
        return vt_error_set(err, VT_EINPUT, "%s: cannot read: %s", path, strerror(e));
    }
    *fd = d;
    if (size)
        *size = (uint64_t)st.st_size;
    return VT_OK;
}

int vt_input_fopen(const char *path, const vt_input_opts *o, FILE **f, uint64_t *size, vt_error *err)
{
    *f = NULL;
    int fd;
    int rc = vt_input_open(path, o, &fd, size, err);
    if (rc)
        return rc;
    *f = fdopen(fd, "rb");
    if (!*f) {
        int e = errno;
        close(fd);
        return vt_error_set(err, VT_EINPUT, "%s: cannot read: %s", path, strerror(e));
    }
    return VT_OK;
}

int vt_input_read_all(const char *path, const vt_input_opts *o, char **buf, size_t *len, vt_error *err)
{
    *buf = NULL;
    *len = 0;
    int fd;
    uint64_t size;
    int rc = vt_input_open(path, o, &fd, &size, err);
    if (rc)
        return rc;
    if (size >= (uint64_t)SIZE_MAX) {
        close(fd);
        return vt_error_set(err, VT_EINPUT, "%s: %llu bytes: too large to read", path, (unsigned long long)size);
    }
    /* The size fstat gave bounds what is read: a file that grows while read
     * is read to that size and no further. */
    size_t n = (size_t)size, got = 0;
    char *b = malloc(n + 1);
    if (!b) {
        close(fd);
        return vt_error_set(err, VT_EINPUT, "%s: out of memory: expected to read %zu bytes", path, n);
    }
    while (got < n) {
        ssize_t r = read(fd, b + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            free(b);
            close(fd);
            return vt_error_set(err, VT_EINPUT, "%s: read error: %s", path, strerror(e));
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    if (got != n) {
        free(b);
        return vt_error_set(err, VT_EINPUT, "%s: %zu bytes read: expected %zu (file shrank while read)", path,
                            got, n);
    }
    b[n] = '\0';
    *buf = b;
    *len = n;
    return VT_OK;
}

int vt_input_opendir(const char *path, const vt_input_opts *o, int *fd, vt_error *err)
{
    *fd = -1;
    if (!path || !*path)
        return vt_error_set(err, VT_EINPUT, "(empty path): expected %s", expected(o, "a directory"));
    /* O_NONBLOCK and O_PATH-free: opening a FIFO with O_DIRECTORY fails
     * ENOTDIR before waiting, but fstat still says what it was. */
    int flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY;
    if (o && o->no_follow)
        flags |= O_NOFOLLOW;
    int d = open(path, flags | O_DIRECTORY);
    if (d < 0) {
        int e = errno;
        struct stat st;
        if (e == ENOTDIR && (o && o->no_follow ? lstat(path, &st) : stat(path, &st)) == 0)
            return vt_error_set(err, VT_EINPUT, "%s: %s: expected %s", path, vt_input_kind(st.st_mode),
                                expected(o, "a directory"));
        return open_failed(path, o, "a directory", e, err);
    }
    int fl = fcntl(d, F_GETFL);
    if (fl >= 0)
        (void)fcntl(d, F_SETFL, fl & ~O_NONBLOCK);
    *fd = d;
    return VT_OK;
}

int vt_input_check(const char *path, const vt_input_opts *o, vt_error *err)
{
    int fd;
    int rc = vt_input_open(path, o, &fd, NULL, err);
    if (rc == VT_OK)
        close(fd);
    return rc;
}

int vt_input_plain_name(const char *name)
{
    if (!name || !*name || !strcmp(name, ".") || !strcmp(name, ".."))
        return 0;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        if (*p == '/' || *p < 0x20 || *p == 0x7f)
            return 0;
    return 1;
}
