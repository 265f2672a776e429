/* The structure of a wheel (zip), read here byte by byte: does every
 * reader see the same members with the same bytes?
 *
 * A zip states each member twice: in the central directory at the end
 * (what seeking readers use: Python's zipfile, so pip; libarchive's
 * seekable reader, so vt's member hashes) and in a local header before the
 * data, with a data descriptor after it when bit 3 is set (what streaming
 * readers use). Nothing forces the two to agree, and where they differ,
 * readers differ on what a member holds: a verifier that reads one way
 * would vouch for bytes an installer reading the other way never sees.
 * libarchive itself accepts a central directory whose sizes or CRC-32 are
 * wrong. So, for each central directory entry:
 *   - its local header has the same name, flags (encryption, descriptor,
 *     UTF-8) and method; no Info-ZIP Unicode Path field names it otherwise;
 *   - compressed size, uncompressed size and CRC-32 are the same in the
 *     central directory, the local header (or data descriptor) and the data
 *     itself (deflate is inflated here to count both sizes; stored data is
 *     its compressed size);
 *   - members are plain (stored or deflate, not encrypted) and tile the
 *     file: the first at offset 0, each starting where the previous one's
 *     data (and descriptor) ends, the last ending at the central directory,
 *     which ends at the end records, whose comment ends the file. A gap
 *     could hide a member only a streaming reader sees; an overlap is two
 *     members sharing bytes.
 * ZIP64 records and extra fields are read where the 32-bit fields say so. */
#include "prov_internal.h"
#include "../common/vt_sort.h"
#include "../common/vt_input.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

enum {
    SIG_LOCAL = 0x04034b50,
    SIG_CENTRAL = 0x02014b50,
    SIG_END = 0x06054b50,
    SIG_END64 = 0x06064b50,
    SIG_LOCATOR64 = 0x07064b50,
    SIG_DESCRIPTOR = 0x08074b50,
    END_LEN = 22,
    CENTRAL_LEN = 46,
    LOCAL_LEN = 30,
    MAX_COMMENT = 65535
};

#define CD_MAX_BYTES (1ull << 30) /* a central directory larger than this is not a wheel's */

typedef struct zfile {
    int fd;
    uint64_t size;
} zfile;

/* n bytes at off, all of them, or -1. */
static int rd(const zfile *z, uint64_t off, void *buf, size_t n)
{
    if (off > z->size || n > z->size - off)
        return -1;
    size_t got = 0;
    while (got < n) {
        ssize_t k = pread(z->fd, (char *)buf + got, n - got, (off_t)(off + got));
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        got += (size_t)k;
    }
    return 0;
}

static uint16_t le16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t le32(const unsigned char *p) { return (uint32_t)le16(p) | (uint32_t)le16(p + 2) << 16; }
static uint64_t le64(const unsigned char *p) { return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32; }

typedef struct zentry {
    const unsigned char *name; /* in the central directory buffer */
    uint16_t nlen, flags, method;
    uint32_t crc;
    uint64_t csize, usize, offset;
    uint64_t end;  /* just past its data (and descriptor); 0: not known */
} zentry;

/* Walks extra fields [p, p+n): the ZIP64 field (id 1) fills what the 32-bit
 * fields left at their maximum, in the order the format fixes; the Info-ZIP
 * Unicode Path field (0x7075) is returned. -1: malformed. */
static int read_extras(const unsigned char *p, size_t n, uint64_t *usize, uint64_t *csize, uint64_t *offset,
                       int *z64, const unsigned char **upath, size_t *upath_len)
{
    int need_u = usize && *usize == 0xffffffffu, need_c = csize && *csize == 0xffffffffu;
    int need_o = offset && *offset == 0xffffffffu;
    *z64 = 0;
    *upath = NULL;
    size_t i = 0;
    while (i < n) {
        if (n - i < 4)
            return -1;
        uint16_t id = le16(p + i), len = le16(p + i + 2);
        if (n - i - 4 < len)
            return -1;
        const unsigned char *d = p + i + 4;
        if (id == 0x0001) {
            size_t k = 0;
            *z64 = 1;
            if (need_u && len - k >= 8)
                *usize = le64(d + k), k += 8, need_u = 0;
            if (need_c && len - k >= 8)
                *csize = le64(d + k), k += 8, need_c = 0;
            if (need_o && len - k >= 8)
                *offset = le64(d + k), k += 8, need_o = 0;
        } else if (id == 0x7075 && len >= 5) {
            *upath = d + 5;
            *upath_len = (size_t)len - 5;
        }
        i += 4 + (size_t)len;
    }
    return need_u || need_c || need_o ? -1 : 0;
}

/* Inflates raw deflate data from start, reading no further than limit:
 * *used compressed bytes, *out bytes out, *crc of them. 0, or -1 when the
 * data is corrupt or does not end before limit. */
static int inflate_count(const zfile *z, uint64_t start, uint64_t limit, unsigned char *buf, size_t cap,
                         uint64_t *used, uint64_t *out, uint32_t *crc)
{
    z_stream s;
    memset(&s, 0, sizeof s);
    if (inflateInit2(&s, -15) != Z_OK)
        return -1;
    size_t half = cap / 2;
    unsigned char *in = buf, *ob = buf + half;
    uint64_t pos = start;
    uLong c = crc32(0L, Z_NULL, 0);
    *out = 0;
    int r = Z_OK, rc = -1;
    for (;;) {
        if (s.avail_in == 0) {
            if (pos >= limit)
                break;
            size_t k = limit - pos < half ? (size_t)(limit - pos) : half;
            if (rd(z, pos, in, k))
                break;
            s.next_in = in;
            s.avail_in = (uInt)k;
            pos += k;
        }
        s.next_out = ob;
        s.avail_out = (uInt)half;
        r = inflate(&s, Z_NO_FLUSH);
        size_t got = half - s.avail_out;
        c = crc32(c, ob, (uInt)got);
        *out += got;
        if (r == Z_STREAM_END) {
            rc = 0;
            break;
        }
        if (r != Z_OK && !(r == Z_BUF_ERROR && s.avail_in == 0))
            break;
    }
    *used = s.total_in;
    *crc = (uint32_t)c;
    inflateEnd(&s);
    return rc;
}

static int stored_crc(const zfile *z, uint64_t start, uint64_t n, unsigned char *buf, size_t cap, uint32_t *crc)
{
    uLong c = crc32(0L, Z_NULL, 0);
    for (uint64_t done = 0; done < n;) {
        size_t k = n - done < cap ? (size_t)(n - done) : cap;
        if (rd(z, start + done, buf, k))
            return -1;
        c = crc32(c, buf, (uInt)k);
        done += k;
    }
    *crc = (uint32_t)c;
    return 0;
}

/* One field as up to four sources tell it: the central directory (always),
 * the local header, the data descriptor, the data itself. One problem line
 * naming them all when any differs from the central directory. */
typedef struct told {
    const char *src;
    int present;
    uint64_t v;
} told;

static void agree(vt_lines *pr, const zentry *e, const char *field, int hex, const told *t, int n)
{
    int same = 1;
    for (int i = 1; i < n; i++)
        same &= !t[i].present || t[i].v == t[0].v;
    if (same)
        return;
    char line[256] = "";
    size_t o = 0;
    for (int i = 0; i < n && o < sizeof line; i++)
        if (t[i].present)
            o += (size_t)snprintf(line + o, sizeof line - o, hex ? "%s%s %08llx" : "%s%s %llu", i ? ", " : "",
                                  t[i].src, (unsigned long long)t[i].v);
    vt_lines_addf(pr, "%.*s: %s: %s: expected the same value everywhere", (int)e->nlen, (const char *)e->name,
                  field, line);
}

/* The local header, descriptor and data of e, against e. */
static void check_member(const zfile *z, zentry *e, uint64_t limit, unsigned char *buf, size_t cap, vt_lines *pr)
{
    int nl = (int)e->nlen;
    const char *nm = (const char *)e->name;
    unsigned char h[LOCAL_LEN];
    if (e->offset >= limit || rd(z, e->offset, h, sizeof h) || le32(h) != SIG_LOCAL) {
        vt_lines_addf(pr, "%.*s: local header offset %llu: expected a local file header before the central "
                      "directory", nl, nm, (unsigned long long)e->offset);
        return;
    }
    uint16_t lflags = le16(h + 6), lmethod = le16(h + 8), lnlen = le16(h + 26), lxlen = le16(h + 28);
    uint32_t lcrc = le32(h + 14);
    uint64_t lcsize = le32(h + 18), lusize = le32(h + 22);
    unsigned char *lv = malloc((size_t)lnlen + lxlen + 1);
    if (!lv || rd(z, e->offset + LOCAL_LEN, lv, (size_t)lnlen + lxlen)) {
        vt_lines_addf(pr, "%.*s: local header at offset %llu: expected its name and extra fields within the file",
                      nl, nm, (unsigned long long)e->offset);
        free(lv);
        return;
    }
    if (lnlen != e->nlen || memcmp(lv, e->name, e->nlen) != 0) {
        vt_lines_addf(pr, "%.*s: the local header names it '%.*s': expected the central directory's name", nl, nm,
                      (int)lnlen, (const char *)lv);
    }
    int z64 = 0;
    const unsigned char *up;
    size_t upl = 0;
    if (read_extras(lv + lnlen, lxlen, &lusize, &lcsize, NULL, &z64, &up, &upl)) {
        vt_lines_addf(pr, "%.*s: local header extra fields: expected well-formed fields (ZIP64 sizes where the "
                      "32-bit ones are 0xffffffff)", nl, nm);
    } else if (up && (upl != e->nlen || memcmp(up, e->name, upl) != 0)) {
        vt_lines_addf(pr, "%.*s: the local header's Unicode Path field names it '%.*s': expected one name", nl, nm,
                      (int)upl, (const char *)up);
    }
    free(lv);
    const uint16_t FLAG_BITS = 0x0809; /* encrypted, data descriptor, UTF-8 names */
    if ((lflags & FLAG_BITS) != (e->flags & FLAG_BITS) || lmethod != e->method) {
        vt_lines_addf(pr, "%.*s: local header flags %04x method %u, central directory flags %04x method %u: "
                      "expected the same", nl, nm, lflags, lmethod, e->flags, e->method);
    }
    if (e->flags & 1) {
        vt_lines_addf(pr, "%.*s: encrypted: expected a plain member", nl, nm);
        return;
    }
    if (e->method != 0 && e->method != 8) {
        vt_lines_addf(pr, "%.*s: compression method %u: expected stored (0) or deflate (8)", nl, nm, e->method);
        return;
    }
    uint64_t start = e->offset + LOCAL_LEN + lnlen + lxlen;
    if (start > limit) {
        vt_lines_addf(pr, "%.*s: data at offset %llu: expected it before the central directory", nl, nm,
                      (unsigned long long)start);
        return;
    }
    /* The data as it is. */
    uint64_t used, out;
    uint32_t crc;
    if (e->method == 8) {
        if (inflate_count(z, start, limit, buf, cap, &used, &out, &crc)) {
            vt_lines_addf(pr, "%.*s: deflate data at offset %llu: expected a complete deflate stream before the "
                          "central directory", nl, nm, (unsigned long long)start);
            return;
        }
    } else {
        /* Stored data has no end of its own: its length is what a header
         * says. Headers that disagree on it leave nothing else to compare. */
        if (!(e->flags & 8) && (lcsize != e->csize || lusize != e->usize)) {
            told tc[2] = { { "central directory", 1, e->csize }, { "local header", 1, lcsize } };
            told tu[2] = { { "central directory", 1, e->usize }, { "local header", 1, lusize } };
            agree(pr, e, "compressed size", 0, tc, 2);
            agree(pr, e, "uncompressed size", 0, tu, 2);
            return;
        }
        used = out = e->csize;
        if (e->csize > limit - start || stored_crc(z, start, e->csize, buf, cap, &crc)) {
            vt_lines_addf(pr, "%.*s: stored data of %llu bytes at offset %llu: expected it before the central "
                          "directory", nl, nm, (unsigned long long)e->csize, (unsigned long long)start);
            return;
        }
    }
    /* What a streaming reader goes by: the local header, or with bit 3 the
     * descriptor after the data. There the local fields are 0 by the format
     * (libarchive writes the uncompressed size it knows): a non-zero one is
     * a further opinion. */
    uint64_t end = start + used;
    told tc[4] = { { "central directory", 1, e->csize }, { "local header", 1, lcsize },
                   { "data descriptor", 0, 0 }, { "data", e->method == 8, used } };
    told tu[4] = { { "central directory", 1, e->usize }, { "local header", 1, lusize },
                   { "data descriptor", 0, 0 }, { "data", 1, out } };
    told tr[4] = { { "central directory", 1, e->crc }, { "local header", 1, lcrc },
                   { "data descriptor", 0, 0 }, { "data", 1, crc } };
    if (e->flags & 8) {
        unsigned char d[24];
        size_t dl = z64 ? 16 : 8, sig = 0;
        if (rd(z, end, d, 4) == 0 && le32(d) == SIG_DESCRIPTOR)
            sig = 4;
        if (rd(z, end, d, sig + 4 + dl)) {
            vt_lines_addf(pr, "%.*s: data descriptor at offset %llu: expected it within the file", nl, nm,
                          (unsigned long long)end);
            return;
        }
        tc[1].present = lcsize != 0, tu[1].present = lusize != 0, tr[1].present = lcrc != 0;
        tr[2] = (told){ "data descriptor", 1, le32(d + sig) };
        tc[2] = (told){ "data descriptor", 1, z64 ? le64(d + sig + 4) : le32(d + sig + 4) };
        tu[2] = (told){ "data descriptor", 1, z64 ? le64(d + sig + 12) : le32(d + sig + 8) };
        end += sig + 4 + dl;
    }
    agree(pr, e, "compressed size", 0, tc, 4);
    agree(pr, e, "uncompressed size", 0, tu, 4);
    agree(pr, e, "CRC-32", 1, tr, 4);
    e->end = end;
}

static int cmp_offset(const void *a, const void *b)
{
    const zentry *x = *(zentry *const *)a, *y = *(zentry *const *)b;
    return (x->offset > y->offset) - (x->offset < y->offset);
}

int vt_prov_zip_check(const char *path, vt_lines *pr, vt_error *err)
{
    zfile z = { .fd = -1 };
    vt_input_opts io = { .what = "a regular file (a zip)" };
    int orc = vt_input_open(path, &io, &z.fd, NULL, err);
    if (orc)
        return orc;
    struct stat st;
    int rc = VT_OK;
    unsigned char *tail = NULL, *cd = NULL, *buf = NULL;
    zentry *ents = NULL, **by_off = NULL;
    if (fstat(z.fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        rc = vt_error_set(err, VT_EINPUT, "%s: expected a regular file (a zip)", path);
        goto out;
    }
    z.size = (uint64_t)st.st_size;

    /* The end record: the last one whose comment ends the file. */
    size_t tl = z.size < END_LEN + MAX_COMMENT ? (size_t)z.size : END_LEN + MAX_COMMENT;
    uint64_t tail_off = z.size - tl, eocd = UINT64_MAX;
    tail = malloc(tl ? tl : 1);
    if (!tail || rd(&z, tail_off, tail, tl)) {
        rc = vt_error_set(err, VT_EINPUT, "%s: cannot read the end of the file", path);
        goto out;
    }
    for (size_t i = tl >= END_LEN ? tl - END_LEN + 1 : 0; i-- > 0;)
        if (le32(tail + i) == SIG_END && i + END_LEN + le16(tail + i + 20) == tl) {
            eocd = tail_off + i;
            break;
        }
    if (eocd == UINT64_MAX) {
        rc = vt_error_set(err, VT_EINPUT, "%s: offset %llu: expected a zip end of central directory record whose "
                          "comment ends the file (not a zip, or bytes appended to one)", path,
                          (unsigned long long)(z.size > END_LEN ? z.size - END_LEN : 0));
        goto out;
    }
    const unsigned char *e32 = tail + (eocd - tail_off);
    uint64_t n_disk = le16(e32 + 8), n_total = le16(e32 + 10), cd_size = le32(e32 + 12), cd_off = le32(e32 + 16);
    uint64_t cd_end = eocd;
    if (le16(e32 + 4) != 0 || le16(e32 + 6) != 0 || n_disk != n_total) {
        rc = vt_error_set(err, VT_EINPUT, "%s: offset %llu: end record: expected a single-disk zip", path,
                          (unsigned long long)eocd);
        goto out;
    }
    unsigned char loc[20], e64[56];
    if (eocd >= 20 && rd(&z, eocd - 20, loc, 20) == 0 && le32(loc) == SIG_LOCATOR64) {
        uint64_t off64 = le64(loc + 8);
        if (rd(&z, off64, e64, sizeof e64) || le32(e64) != SIG_END64 || le32(loc + 4) != 0 || le32(loc + 16) != 1 ||
            off64 + 12 + le64(e64 + 4) != eocd - 20 || le32(e64 + 16) != 0 || le32(e64 + 20) != 0 ||
            le64(e64 + 24) != le64(e64 + 32)) {
            rc = vt_error_set(err, VT_EINPUT, "%s: offset %llu: ZIP64 end record: expected a single-disk ZIP64 end "
                              "record right before its locator", path, (unsigned long long)off64);
            goto out;
        }
        /* A 32-bit field is either saturated or the same as the 64-bit one. */
        uint64_t v64[3] = { le64(e64 + 32), le64(e64 + 40), le64(e64 + 48) };
        uint64_t v32[3] = { n_total, cd_size, cd_off }, sat[3] = { 0xffff, 0xffffffffu, 0xffffffffu };
        for (int k = 0; k < 3; k++) {
            if (v32[k] != sat[k] && v32[k] != v64[k]) {
                rc = vt_error_set(err, VT_EINPUT, "%s: offset %llu: end record and ZIP64 end record disagree on the "
                                  "central directory: expected the same", path, (unsigned long long)eocd);
                goto out;
            }
        }
        n_total = v64[0], cd_size = v64[1], cd_off = v64[2];
        cd_end = off64;
    }
    if (cd_off > cd_end || cd_size != cd_end - cd_off) {
        rc = vt_error_set(err, VT_EINPUT, "%s: offset %llu: central directory of %llu bytes at offset %llu: expected "
                          "it to end where the end records begin", path, (unsigned long long)eocd,
                          (unsigned long long)cd_size, (unsigned long long)cd_off);
        goto out;
    }
    if (cd_size > CD_MAX_BYTES || n_total > cd_size / CENTRAL_LEN) {
        rc = vt_error_set(err, VT_EINPUT, "%s: offset %llu: %llu entries in %llu bytes: expected a central directory "
                          "that holds them (and under 1 GiB)", path, (unsigned long long)cd_off,
                          (unsigned long long)n_total, (unsigned long long)cd_size);
        goto out;
    }
    cd = malloc(cd_size ? (size_t)cd_size : 1);
    ents = calloc(n_total ? (size_t)n_total : 1, sizeof *ents);
    by_off = calloc(n_total ? (size_t)n_total : 1, sizeof *by_off);
    size_t cap = 1 << 17;
    buf = malloc(cap);
    if (!cd || !ents || !by_off || !buf) {
        rc = vt_error_set(err, VT_EINPUT, "%s: out of memory reading the central directory", path);
        goto out;
    }
    if (rd(&z, cd_off, cd, (size_t)cd_size)) {
        rc = vt_error_set(err, VT_EINPUT, "%s: offset %llu: cannot read the central directory", path,
                          (unsigned long long)cd_off);
        goto out;
    }

    /* Every central header, back to back, exactly filling the directory. */
    size_t p = 0;
    for (uint64_t i = 0; i < n_total; i++) {
        const unsigned char *c = cd + p;
        if (cd_size - p < CENTRAL_LEN || le32(c) != SIG_CENTRAL ||
            cd_size - p - CENTRAL_LEN < (size_t)le16(c + 28) + le16(c + 30) + le16(c + 32)) {
            rc = vt_error_set(err, VT_EINPUT, "%s: offset %llu: central header %llu of %llu: expected a complete "
                              "central file header", path, (unsigned long long)(cd_off + p),
                              (unsigned long long)i + 1, (unsigned long long)n_total);
            goto out;
        }
        zentry *e = &ents[i];
        e->flags = le16(c + 8);
        e->method = le16(c + 10);
        e->crc = le32(c + 16);
        e->csize = le32(c + 20);
        e->usize = le32(c + 24);
        e->nlen = le16(c + 28);
        e->offset = le32(c + 42);
        e->name = c + CENTRAL_LEN;
        uint16_t xlen = le16(c + 30);
        int z64;
        const unsigned char *up;
        size_t upl = 0;
        if (le16(c + 34) != 0) {
            vt_lines_addf(pr, "%.*s: central header: disk %u: expected disk 0", (int)e->nlen,
                          (const char *)e->name, le16(c + 34));
            e->offset = UINT64_MAX;
        } else if (read_extras(c + CENTRAL_LEN + e->nlen, xlen, &e->usize, &e->csize, &e->offset, &z64, &up, &upl)) {
            vt_lines_addf(pr, "%.*s: central header extra fields: expected well-formed fields (ZIP64 sizes and "
                          "offset where the 32-bit ones are 0xffffffff)", (int)e->nlen, (const char *)e->name);
            e->offset = UINT64_MAX;
        } else if (up && (upl != e->nlen || memcmp(up, e->name, upl) != 0)) {
            vt_lines_addf(pr, "%.*s: the central header's Unicode Path field names it '%.*s': expected one name",
                          (int)e->nlen, (const char *)e->name, (int)upl, (const char *)up);
        }
        by_off[i] = e;
        p += CENTRAL_LEN + (size_t)e->nlen + xlen + le16(c + 32);
    }
    if (p != cd_size) {
        rc = vt_error_set(err, VT_EINPUT, "%s: offset %llu: %llu bytes after the last of %llu central headers: "
                          "expected the end records", path, (unsigned long long)(cd_off + p),
                          (unsigned long long)(cd_size - p), (unsigned long long)n_total);
        goto out;
    }

    for (uint64_t i = 0; i < n_total; i++)
        if (ents[i].offset != UINT64_MAX)
            check_member(&z, &ents[i], cd_off, buf, cap, pr);

    /* The members tile the file up to the central directory (told only
     * when every member's extent is known: a member already reported
     * would leave a gap of its own). */
    int known = 1;
    for (uint64_t i = 0; i < n_total; i++)
        known &= ents[i].offset != UINT64_MAX && ents[i].end != 0;
    vt_sort(by_off, (size_t)n_total, sizeof *by_off, cmp_offset);
    uint64_t at = 0;
    const zentry *prev = NULL;
    for (uint64_t i = 0; known && i < n_total; i++) {
        const zentry *e = by_off[i];
        if (e->offset != at) {
            if (prev)
                vt_lines_addf(pr, "%.*s: local header at offset %llu, but %.*s ends at %llu: expected each member "
                              "to start where the previous one ends", (int)e->nlen, (const char *)e->name,
                              (unsigned long long)e->offset, (int)prev->nlen, (const char *)prev->name,
                              (unsigned long long)at);
            else
                vt_lines_addf(pr, "%.*s: the first local header at offset %llu: expected it at offset 0",
                              (int)e->nlen, (const char *)e->name, (unsigned long long)e->offset);
        }
        at = e->end;
        prev = e;
        if (i + 1 == n_total && at != cd_off)
            vt_lines_addf(pr, "%.*s: the last member ends at offset %llu, the central directory starts at %llu: "
                          "expected nothing between them", (int)e->nlen, (const char *)e->name,
                          (unsigned long long)at, (unsigned long long)cd_off);
    }
    if (n_total == 0 && cd_off != 0)
        vt_lines_addf(pr, "%s: %llu bytes before an empty central directory: expected none", path,
                      (unsigned long long)cd_off);
out:
    free(tail);
    free(cd);
    free(ents);
    free(by_off);
    free(buf);
    close(z.fd);
    return rc;
}
