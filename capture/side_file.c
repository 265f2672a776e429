/* Side-file writer: temporary file, running SHA-256, copy at publication. */
#include "side_file.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct vt_side_writer {
    const char *what; /* for messages */
    FILE *f;          /* unnamed temporary file */
    EVP_MD_CTX *sha;  /* hashes every byte written, in order */
    uint64_t size;
    int finished;
};

vt_side_writer *vt_side_writer_new(const char *dir, const char *what, vt_error *err)
{
    vt_side_writer *w = calloc(1, sizeof *w);
    if (!w) {
        vt_error_set(err, VT_EINPUT, "%s: out of memory", what);
        return NULL;
    }
    w->what = what;
#ifdef O_TMPFILE
    int fd = dir ? open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600) : -1;
    if (fd >= 0 && !(w->f = fdopen(fd, "w+b")))
        close(fd);
#else
    (void)dir;
#endif
    if (!w->f)
        w->f = tmpfile();
    w->sha = EVP_MD_CTX_new();
    if (!w->f || !w->sha || EVP_DigestInit_ex(w->sha, EVP_sha256(), NULL) != 1) {
        vt_error_set(err, VT_EINPUT, "%s: cannot create a temporary file: %s", what, strerror(errno));
        vt_side_writer_free(w);
        return NULL;
    }
    return w;
}

int vt_side_writer_emit(vt_side_writer *w, const void *p, size_t n, vt_error *err)
{
    if (w->finished)
        return vt_error_set(err, VT_EINPUT, "%s: data after finish", w->what);
    if (n && fwrite(p, 1, n, w->f) != n)
        return vt_error_set(err, VT_EINPUT, "%s: temporary file: write error: %s", w->what, strerror(errno));
    if (EVP_DigestUpdate(w->sha, p, n) != 1)
        return vt_error_set(err, VT_EINPUT, "%s: SHA-256 failed", w->what);
    w->size += n;
    return VT_OK;
}

int vt_side_writer_finish(vt_side_writer *w, vt_sha256_hex *sha256, uint64_t *size, vt_error *err)
{
    unsigned char md[32];
    unsigned int md_len = 0;
    if (w->finished)
        return vt_error_set(err, VT_EINPUT, "%s: finished twice", w->what);
    w->finished = 1;
    if (fflush(w->f) != 0)
        return vt_error_set(err, VT_EINPUT, "%s: temporary file: write error: %s", w->what, strerror(errno));
    if (EVP_DigestFinal_ex(w->sha, md, &md_len) != 1 || md_len != 32)
        return vt_error_set(err, VT_EINPUT, "%s: SHA-256 failed", w->what);
    for (int i = 0; i < 32; i++)
        snprintf(sha256->hex + 2 * i, 3, "%02x", md[i]);
    *size = w->size;
    return VT_OK;
}

int vt_side_writer_copy(vt_side_writer *w, int fd, vt_error *err)
{
    if (!w->finished)
        return vt_error_set(err, VT_EINPUT, "%s: copied before finish", w->what);
    int in = fileno(w->f);
    char buf[1 << 16];
    off_t off = 0;
    uint64_t done = 0;
    while (done < w->size) {
        ssize_t n = pread(in, buf, sizeof buf, off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return vt_error_set(err, VT_EINPUT, "%s: temporary file: read error", w->what);
        for (ssize_t k = 0; k < n;) {
            ssize_t m = write(fd, buf + k, (size_t)(n - k));
            if (m < 0 && errno == EINTR)
                continue;
            if (m <= 0)
                return vt_error_set(err, VT_EINPUT, "%s: write error: %s", w->what, strerror(errno));
            k += m;
        }
        off += n;
        done += (uint64_t)n;
    }
    return VT_OK;
}

void vt_side_writer_free(vt_side_writer *w)
{
    if (!w)
        return;
    if (w->f)
        fclose(w->f);
    EVP_MD_CTX_free(w->sha);
    free(w);
}
