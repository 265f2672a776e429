/* vt.topk/1 side files: layout in topk_file.h. */
#include "topk_file.h"
#include "../common/vt_input.h"
#include "side_file.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char MAGIC[8] = { 'V', 'T', 'T', 'O', 'P', 'K', 0, 0 };

struct vt_topk_writer {
    vt_side_writer *side;
    int32_t k;
    unsigned char *buf; /* one position, packed */
};

vt_topk_writer *vt_topk_writer_new(const char *dir, int32_t k, vt_error *err)
{
    vt_topk_writer *w = calloc(1, sizeof *w);
    if (!w || k < 1 || !(w->buf = malloc((size_t)k * VT_TOPK_ENTRY))) {
        free(w);
        vt_error_set(err, VT_EINPUT, "top-k side file: %s", k < 1 ? "k below 1" : "out of memory");
        return NULL;
    }
    w->k = k;
    unsigned char h[VT_TOPK_HEADER];
    memcpy(h, MAGIC, 8);
    vt_le_put_u32(h + 8, 1);
    vt_le_put_u32(h + 12, (uint32_t)k);
    if (!(w->side = vt_side_writer_new(dir, "top-k side file", err)) || vt_side_writer_emit(w->side, h, sizeof h, err)) {
        vt_topk_writer_free(w);
        return NULL;
    }
    return w;
}

int vt_topk_writer_add(vt_topk_writer *w, const int32_t *ids, const double *logprobs, vt_error *err)
{
    for (int32_t j = 0; j < w->k; j++) {
        float f = (float)logprobs[j];
        uint32_t u;
        memcpy(&u, &f, 4);
        vt_le_put_u32(w->buf + (size_t)j * VT_TOPK_ENTRY, (uint32_t)ids[j]);
        vt_le_put_u32(w->buf + (size_t)j * VT_TOPK_ENTRY + 4, u);
    }
    return vt_side_writer_emit(w->side, w->buf, (size_t)w->k * VT_TOPK_ENTRY, err);
}

int vt_topk_writer_finish(vt_topk_writer *w, vt_sha256_hex *sha256, uint64_t *size, vt_error *err)
{
    return vt_side_writer_finish(w->side, sha256, size, err);
}

int vt_topk_writer_copy(vt_topk_writer *w, int fd, vt_error *err) { return vt_side_writer_copy(w->side, fd, err); }

void vt_topk_writer_free(vt_topk_writer *w)
{
    if (!w)
        return;
    vt_side_writer_free(w->side);
    free(w->buf);
    free(w);
}

/* ------------------------------------------------------------- reading */

static int read_full(int fd, unsigned char *p, size_t n)
{
    while (n) {
        ssize_t r = read(fd, p, n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

/* Positions [p0, p1) of the entries at e: 0, or 1 with *bad the first
 * offending entry's index from e and *why what it breaks. */
static int entries_check(const unsigned char *e, int64_t p0, int64_t p1, int32_t k, int32_t n_vocab, int64_t *bad,
                          const char **why)
{
    for (int64_t p = p0; p < p1; p++) {
        const unsigned char *q = e + (size_t)(p - p0) * (size_t)k * VT_TOPK_ENTRY;
        int32_t prev_id = -1;
        float prev = 0.0f;
        for (int32_t j = 0; j < k; j++, q += VT_TOPK_ENTRY) {
            int32_t id = (int32_t)vt_le_get_u32(q);
            uint32_t u = vt_le_get_u32(q + 4);
            float lp;
            memcpy(&lp, &u, 4);
            const char *w = NULL;
            if (id < 0 || id >= n_vocab)
                w = "id: a token id below the model's n_vocab";
            else if (!isfinite(lp) || lp > 0.0f)
                w = "log-prob: finite and <= 0";
            else if (j > 0 && (lp > prev || (lp == prev && id <= prev_id)))
                w = "entries highest log-prob first, equal log-probs in increasing id";
            if (w) {
                *bad = (p - p0) * k + j;
                *why = w;
                return 1;
            }
            prev = lp;
            prev_id = id;
        }
    }
    return 0;
}

int vt_topk_file_open(const char *path, int32_t k, int64_t positions, int32_t n_vocab, const char *sha256,
                      vt_topk_file *f, vt_error *err)
{
    f->fd = -1;
    f->k = 0;
    f->positions = 0;
    int fd;
    int orc = vt_input_open(path, NULL, &fd, NULL, err);
    struct stat st;
    if (orc)
        return orc;
    if (fstat(fd, &st) != 0) {
        int rc = vt_error_set(err, VT_EINPUT, "%s: cannot read: %s", path, strerror(errno));
        close(fd);
        return rc;
    }
    /* What the capture says of the file, bounded before any arithmetic: k 0
     * (no file) would divide by zero below, and a product that wraps could
     * match a short file (found by fuzz/fuzz_topk.c). */
    if (k < 1 || k > (1 << 20) || n_vocab < 1 || positions < 0 || positions > ((int64_t)1 << 40)) {
        close(fd);
        return vt_error_set(err, VT_EINPUT, "%s: k %d, %lld positions, n_vocab %d: expected k in 1..1048576, "
                            "positions in 0..2^40 and n_vocab >= 1", path, k, (long long)positions, n_vocab);
    }
    uint64_t want = VT_TOPK_HEADER + (uint64_t)positions * (uint64_t)k * VT_TOPK_ENTRY;
    if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size != want) {
        close(fd);
        return vt_error_set(err, VT_EINPUT, "%s: size %lld: expected %llu bytes (a %s file of %lld positions x %d "
                            "entries)", path, (long long)st.st_size, (unsigned long long)want, VT_TOPK_FORMAT,
                            (long long)positions, k);
    }
    posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    /* Blocks of whole positions, about 1 MiB: small enough to stay in cache
     * between the hash and the check. */
    const size_t stride = (size_t)k * VT_TOPK_ENTRY;
    const int64_t block = stride >= ((size_t)1 << 20) ? 1 : (int64_t)(((size_t)1 << 20) / stride);
    unsigned char *buf = malloc((size_t)block * stride > VT_TOPK_HEADER ? (size_t)block * stride : VT_TOPK_HEADER);
    EVP_MD_CTX *sha = EVP_MD_CTX_new();
    int rc = VT_OK;
    if (!buf || !sha || EVP_DigestInit_ex(sha, EVP_sha256(), NULL) != 1)
        rc = vt_error_set(err, VT_EINPUT, "%s: out of memory", path);
    if (rc == VT_OK && (read_full(fd, buf, VT_TOPK_HEADER) != 0 || memcmp(buf, MAGIC, 8) != 0 ||
                        vt_le_get_u32(buf + 8) != 1 || vt_le_get_u32(buf + 12) != (uint32_t)k))
        rc = vt_error_set(err, VT_EINPUT, "%s: offset 0: header: expected \"VTTOPK\", version 1, k %d (the capture's "
                          "settings.resolved.logprobs_top_k)", path, k);
    if (rc == VT_OK && EVP_DigestUpdate(sha, buf, VT_TOPK_HEADER) != 1)
        rc = vt_error_set(err, VT_EINPUT, "%s: SHA-256 failed", path);
    for (int64_t p = 0; rc == VT_OK && p < positions; p += block) {
        int64_t q = p + block < positions ? p + block : positions;
        size_t n = (size_t)(q - p) * stride;
        int64_t bad;
        const char *why;
        if (read_full(fd, buf, n) != 0)
            rc = vt_error_set(err, VT_EINPUT, "%s: read error: %s", path, strerror(errno));
        else if (EVP_DigestUpdate(sha, buf, n) != 1)
            rc = vt_error_set(err, VT_EINPUT, "%s: SHA-256 failed", path);
        else if (entries_check(buf, p, q, k, n_vocab, &bad, &why)) {
            int64_t at = p * k + bad;
            rc = vt_error_set(err, VT_EINPUT, "%s: offset %llu: position %lld entry %lld: expected %s", path,
                              (unsigned long long)(VT_TOPK_HEADER + (uint64_t)at * VT_TOPK_ENTRY),
                              (long long)(at / k), (long long)(at % k), why);
        }
    }
    unsigned char md[32];
    unsigned int mdn = 0;
    if (rc == VT_OK && (EVP_DigestFinal_ex(sha, md, &mdn) != 1 || mdn != 32))
        rc = vt_error_set(err, VT_EINPUT, "%s: SHA-256 failed", path);
    EVP_MD_CTX_free(sha);
    free(buf);
    if (rc == VT_OK) {
        char hex[65];
        for (int i = 0; i < 32; i++)
            snprintf(hex + 2 * i, 3, "%02x", md[i]);
        if (strcmp(hex, sha256) != 0)
            rc = vt_error_set(err, VT_EINPUT, "%s: sha256 %s: expected %s, the capture's topk_file.sha256", path, hex,
                              sha256);
    }
    if (rc) {
        close(fd);
        return rc;
    }
    f->fd = fd;
    f->k = k;
    f->positions = positions;
    return VT_OK;
}

int vt_topk_file_get(const vt_topk_file *f, int64_t pos, int32_t *ids, float *logprobs, vt_error *err)
{
    unsigned char e[VT_TOPK_ENTRY * 64];
    if (f->fd < 0 || pos < 0 || pos >= f->positions)
        return vt_error_set(err, VT_EINPUT, "top-k side file: position %lld: expected one of its %lld", (long long)pos,
                            (long long)f->positions);
    off_t off = VT_TOPK_HEADER + (off_t)pos * f->k * VT_TOPK_ENTRY;
    for (int32_t j0 = 0; j0 < f->k; j0 += 64) {
        int32_t m = f->k - j0 < 64 ? f->k - j0 : 64;
        size_t n = (size_t)m * VT_TOPK_ENTRY;
        if (pread(f->fd, e, n, off + (off_t)j0 * VT_TOPK_ENTRY) != (ssize_t)n)
            return vt_error_set(err, VT_EINPUT, "top-k side file: read error at offset %lld", (long long)off);
        for (int32_t j = 0; j < m; j++) {
            uint32_t v = vt_le_get_u32(e + (size_t)j * VT_TOPK_ENTRY + 4);
            ids[j0 + j] = (int32_t)vt_le_get_u32(e + (size_t)j * VT_TOPK_ENTRY);
            memcpy(&logprobs[j0 + j], &v, 4);
        }
    }
    return VT_OK;
}

void vt_topk_file_close(vt_topk_file *f)
{
    if (f->k > 0 && f->fd >= 0) /* k 0: never opened (a zeroed struct) */
        close(f->fd);
    f->fd = -1;
    f->k = 0;
    f->positions = 0;
}
