/* vt.logits/1 side files: layout in logits_file.h. */
#include "logits_file.h"
#include "../common/vt_input.h"
#include "side_file.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define FILE_MAGIC "VTLOGITS"
#define FRAME_MAGIC "VTLF"
enum { FILE_HEADER = 16, FRAME_HEADER = 28, LEVEL = 6 };

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define VT_BIG_ENDIAN 1
#else
#define VT_BIG_ENDIAN 0
#endif

struct vt_logits_writer {
    vt_side_writer *side;
};

#define put_u32 vt_le_put_u32
#define get_u32 vt_le_get_u32

static void put_u64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_u64(const unsigned char *p) { return (uint64_t)get_u32(p) | (uint64_t)get_u32(p + 4) << 32; }

/* x as little-endian float32 bytes: x itself on a little-endian host, else
 * a swapped copy in *tmp (freed by the caller). NULL if out of memory. */
static const void *le_floats(const float *x, size_t n, void **tmp)
{
    *tmp = NULL;
    if (!VT_BIG_ENDIAN)
        return x;
    unsigned char *b = malloc(n * 4 + 1);
    if (!b)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &x[i], 4);
        put_u32(b + 4 * i, u);
    }
    *tmp = b;
    return b;
}

int vt_logits_sha256(const float *x, size_t n, vt_sha256_hex *out)
{
    void *tmp;
    const void *bytes = le_floats(x, n, &tmp);
    if (!bytes)
        return VT_EINPUT;
    int rc = vt_sha256_buffer(bytes, n * 4, out);
    free(tmp);
    return rc;
}

vt_logits_writer *vt_logits_writer_new(const char *dir, vt_error *err)
{
    vt_logits_writer *w = calloc(1, sizeof *w);
    if (!w) {
        vt_error_set(err, VT_EINPUT, "logits side file: out of memory");
        return NULL;
    }
    unsigned char h[FILE_HEADER] = FILE_MAGIC;
    put_u32(h + 8, 1);
    put_u32(h + 12, 0);
    if (!(w->side = vt_side_writer_new(dir, "logits side file", err)) ||
        vt_side_writer_emit(w->side, h, sizeof h, err)) {
        vt_logits_writer_free(w);
        return NULL;
    }
    return w;
}

int vt_logits_writer_add(vt_logits_writer *w, uint32_t prompt, uint32_t repeat, const float *logits,
                         uint32_t positions, uint32_t vocab, vt_error *err)
{
    size_t n = (size_t)positions * vocab;
    void *tmp;
    const void *raw = le_floats(logits, n, &tmp);
    /* The frame header carries the deflated size, and the hash must see the
     * header first: deflate into memory, then write header and data. */
    uLong bound = compressBound((uLong)(n * 4));
    unsigned char *z = malloc(bound ? bound : 1);
    if (!raw || !z) {
        free(tmp);
        free(z);
        return vt_error_set(err, VT_EINPUT, "logits side file: out of memory");
    }
    uLongf zn = bound;
    int zrc = compress2(z, &zn, raw, (uLong)(n * 4), LEVEL);
    free(tmp);
    if (zrc != Z_OK) {
        free(z);
        return vt_error_set(err, VT_EINPUT, "logits side file: zlib compress2 returned %d", zrc);
    }
    unsigned char h[FRAME_HEADER] = FRAME_MAGIC;
    put_u32(h + 4, prompt);
    put_u32(h + 8, repeat);
    put_u32(h + 12, positions);
    put_u32(h + 16, vocab);
    put_u64(h + 20, (uint64_t)zn);
    int rc = vt_side_writer_emit(w->side, h, sizeof h, err);
    if (rc == VT_OK)
        rc = vt_side_writer_emit(w->side, z, zn, err);
    free(z);
    return rc;
}

int vt_logits_writer_finish(vt_logits_writer *w, vt_sha256_hex *sha256, uint64_t *size, vt_error *err)
{
    return vt_side_writer_finish(w->side, sha256, size, err);
}

int vt_logits_writer_copy(vt_logits_writer *w, int fd, vt_error *err)
{
    return vt_side_writer_copy(w->side, fd, err);
}

void vt_logits_writer_free(vt_logits_writer *w)
{
    if (!w)
        return;
    vt_side_writer_free(w->side);
    free(w);
}

void vt_logits_frames_free(vt_logits_frame *frames, int n_frames)
{
    for (int i = 0; i < n_frames; i++)
        free(frames[i].logits);
    free(frames);
}

int vt_logits_file_read(const char *path, vt_logits_frame **frames, int *n_frames, vt_error *err)
{
    *frames = NULL;
    *n_frames = 0;
    FILE *f;
    int orc = vt_input_fopen(path, NULL, &f, NULL, err);
    if (orc)
        return orc;
    struct stat st;
    unsigned char h[FRAME_HEADER];
    int rc = VT_OK;
    if (fstat(fileno(f), &st) != 0 || fread(h, 1, FILE_HEADER, f) != FILE_HEADER || memcmp(h, FILE_MAGIC, 8) ||
        get_u32(h + 8) != 1) {
        fclose(f);
        return vt_error_set(err, VT_EINPUT, "%s: offset 0: header: expected \"VTLOGITS\" version 1", path);
    }
    uint64_t off = FILE_HEADER, file_size = (uint64_t)st.st_size;
    vt_logits_frame *out = NULL;
    int n = 0, cap = 0;
    unsigned char *z = NULL;
    while (rc == VT_OK && off < file_size) {
        if (file_size - off < FRAME_HEADER || fread(h, 1, FRAME_HEADER, f) != FRAME_HEADER ||
            memcmp(h, FRAME_MAGIC, 4)) {
            rc = vt_error_set(err, VT_EINPUT, "%s: offset %llu: frame header: expected \"VTLF\" and 24 bytes", path,
                              (unsigned long long)off);
            break;
        }
        vt_logits_frame fr = { get_u32(h + 4), get_u32(h + 8), get_u32(h + 12), get_u32(h + 16), NULL };
        uint64_t zn = get_u64(h + 20), raw = (uint64_t)fr.positions * fr.vocab * 4;
        if (zn > file_size - off - FRAME_HEADER || raw > ((uint64_t)1 << 40) || raw != (uLong)raw) {
            rc = vt_error_set(err, VT_EINPUT, "%s: offset %llu: frame sizes: expected data inside the file", path,
                              (unsigned long long)off);
            break;
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            vt_logits_frame *grown = realloc(out, (size_t)cap * sizeof *grown);
            if (!grown) {
                rc = vt_error_set(err, VT_EINPUT, "%s: out of memory", path);
                break;
            }
            out = grown;
        }
        free(z);
        z = malloc(zn ? zn : 1);
        fr.logits = malloc(raw ? raw : 1);
        uLongf got = (uLongf)raw;
        if (!z || !fr.logits) {
            free(fr.logits);
            rc = vt_error_set(err, VT_EINPUT, "%s: out of memory", path);
        } else if (fread(z, 1, zn, f) != zn || uncompress((Bytef *)fr.logits, &got, z, (uLong)zn) != Z_OK ||
                   got != raw) {
            free(fr.logits);
            rc = vt_error_set(err, VT_EINPUT, "%s: offset %llu: frame data: expected a zlib stream of %llu bytes",
                              path, (unsigned long long)off, (unsigned long long)raw);
        } else {
            if (VT_BIG_ENDIAN) {
                unsigned char *b = (unsigned char *)fr.logits;
                for (uint64_t i = 0; i < raw / 4; i++) {
                    uint32_t u = get_u32(b + 4 * i);
                    memcpy(b + 4 * i, &u, 4);
                }
            }
            out[n++] = fr;
            off += FRAME_HEADER + zn;
        }
    }
    free(z);
    fclose(f);
    if (rc) {
        vt_logits_frames_free(out, n);
        return rc;
    }
    *frames = out;
    *n_frames = n;
    return VT_OK;
}

/* ------------------------------------------------------ streaming reader */

struct vt_logits_reader {
    const char *path;
    FILE *f;
    EVP_MD_CTX *sha;
    uint64_t off, file_size;
    vt_logits_frame cur;     /* the frame whose data comes next */
    unsigned char *z;        /* its deflated bytes, read (and hashed) by next */
    uint64_t zn, zcap;
    int have_data;
};

static int reader_read(vt_logits_reader *r, void *buf, size_t n, vt_error *err)
{
    if (n && fread(buf, 1, n, r->f) != n)
        return vt_error_set(err, VT_EINPUT, "%s: offset %llu: expected %zu more bytes", r->path,
                            (unsigned long long)r->off, n);
    if (EVP_DigestUpdate(r->sha, buf, n) != 1)
        return vt_error_set(err, VT_EINPUT, "%s: SHA-256 failed", r->path);
    r->off += n;
    return VT_OK;
}

vt_logits_reader *vt_logits_reader_open(const char *path, vt_error *err)
{
    vt_logits_reader *r = calloc(1, sizeof *r);
    if (!r) {
        vt_error_set(err, VT_EINPUT, "%s: out of memory", path);
        return NULL;
    }
    r->path = path;
    uint64_t size = 0;
    int orc = vt_input_fopen(path, NULL, &r->f, &size, err);
    r->sha = EVP_MD_CTX_new();
    unsigned char h[FILE_HEADER];
    if (orc) {
        /* vt_input_fopen said why */
    } else if (!r->sha || EVP_DigestInit_ex(r->sha, EVP_sha256(), NULL) != 1) {
        vt_error_set(err, VT_EINPUT, "%s: SHA-256 failed", path);
    } else {
        r->file_size = size;
        if (reader_read(r, h, FILE_HEADER, NULL) == VT_OK && memcmp(h, FILE_MAGIC, 8) == 0 && get_u32(h + 8) == 1)
            return r;
        vt_error_set(err, VT_EINPUT, "%s: offset 0: header: expected \"VTLOGITS\" version 1", path);
    }
    vt_logits_reader_close(r);
    return NULL;
}

int vt_logits_reader_next(vt_logits_reader *r, vt_logits_frame *hdr, vt_error *err)
{
    r->have_data = 0;
    if (r->off == r->file_size)
        return 0;
    unsigned char h[FRAME_HEADER];
    uint64_t at = r->off;
    if (r->file_size - r->off < FRAME_HEADER || reader_read(r, h, FRAME_HEADER, NULL) != VT_OK ||
        memcmp(h, FRAME_MAGIC, 4) != 0) {
        vt_error_set(err, VT_EINPUT, "%s: offset %llu: frame header: expected \"VTLF\" and 24 bytes", r->path,
                     (unsigned long long)at);
        return -1;
    }
    r->cur = (vt_logits_frame){ get_u32(h + 4), get_u32(h + 8), get_u32(h + 12), get_u32(h + 16), NULL };
    r->zn = get_u64(h + 20);
    uint64_t raw = (uint64_t)r->cur.positions * r->cur.vocab * 4;
    if (r->zn > r->file_size - r->off || raw > ((uint64_t)1 << 40) || raw != (uLong)raw) {
        vt_error_set(err, VT_EINPUT, "%s: offset %llu: frame sizes: expected data inside the file", r->path,
                     (unsigned long long)at);
        return -1;
    }
    /* The deflated bytes are read now, whether or not they are inflated:
     * the hash covers them either way. */
    if (r->zn > r->zcap) {
        unsigned char *z = realloc(r->z, (size_t)r->zn);
        if (!z) {
            vt_error_set(err, VT_EINPUT, "%s: out of memory", r->path);
            return -1;
        }
        r->z = z;
        r->zcap = r->zn;
    }
    if (reader_read(r, r->z, (size_t)r->zn, err) != VT_OK)
        return -1;
    r->have_data = 1;
    *hdr = r->cur;
    return 1;
}

int vt_logits_reader_data(vt_logits_reader *r, float *out, vt_error *err)
{
    if (!r->have_data)
        return vt_error_set(err, VT_EINPUT, "%s: no current frame", r->path);
    uint64_t raw = (uint64_t)r->cur.positions * r->cur.vocab * 4;
    uLongf got = (uLongf)raw;
    if (uncompress((Bytef *)out, &got, r->z, (uLong)r->zn) != Z_OK || got != raw)
        return vt_error_set(err, VT_EINPUT, "%s: offset %llu: frame data: expected a zlib stream of %llu bytes",
                            r->path, (unsigned long long)(r->off - r->zn - FRAME_HEADER), (unsigned long long)raw);
    if (VT_BIG_ENDIAN) {
        unsigned char *b = (unsigned char *)out;
        for (uint64_t i = 0; i < raw / 4; i++) {
            uint32_t u = get_u32(b + 4 * i);
            memcpy(b + 4 * i, &u, 4);
        }
    }
    return VT_OK;
}

int vt_logits_reader_finish(vt_logits_reader *r, vt_sha256_hex *sha256, uint64_t *size, vt_error *err)
{
    vt_logits_frame hdr;
    int more;
    while ((more = vt_logits_reader_next(r, &hdr, err)) == 1)
        ;
    if (more < 0)
        return VT_EINPUT;
    unsigned char md[32];
    unsigned int md_len = 0;
    if (EVP_DigestFinal_ex(r->sha, md, &md_len) != 1 || md_len != 32)
        return vt_error_set(err, VT_EINPUT, "%s: SHA-256 failed", r->path);
    for (int i = 0; i < 32; i++)
        snprintf(sha256->hex + 2 * i, 3, "%02x", md[i]);
    *size = r->off;
    return VT_OK;
}

void vt_logits_reader_close(vt_logits_reader *r)
{
    if (!r)
        return;
    if (r->f)
        fclose(r->f);
    EVP_MD_CTX_free(r->sha);
    free(r->z);
    free(r);
}
