/* The gzip layer of sealed archives, written here with zlib rather than by
 * libarchive's gzip filter: deflate is the hot path of `vt-seal create` and
 * inflate that of `verify`, and both parallelize only if the stream is cut
 * into independent pieces.
 *
 * Writer: the tar stream is cut into blocks of VT_GZ_BLOCK bytes; each block
 * becomes one complete gzip member (RFC 1952 allows a file of several):
 *     1f 8b 08 04 | mtime 0 | xfl 0 | os 3 | xlen 12 | 'V' 'T' 8 0 |
 *     member size (u32 LE) | uncompressed size (u32 LE) | raw deflate |
 *     crc32 | isize
 * No file name, no timestamp. Members share no dictionary, so any number of
 * workers produce the same bytes. Per block, a trial on its first 32 KiB
 * picks LZ77 at the chosen level (text), Huffman only (skewed bytes such as
 * bf16 logits: 0.77, smaller than LZ77 and 3x faster) or stored (random
 * data, and float32 logits, which Huffman shrinks by only ~7% while making
 * them several times slower to inflate): the choice depends on the data alone.
 *
 * Reader: accepts any gzip file; members with a "VT" field (which must be
 * sane) go to workers whole, others are inflated as a stream by the reading
 * thread.
 * Every member's CRC and length are checked; truncation, corruption and data
 * after the last member are errors. Limits on total size and ratio are
 * enforced as the stream grows, before a bomb is inflated. */
#include "seal_internal.h"

#include "../common/vt_publish.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

enum { GZ_HDR = 24, GZ_TRL = 8, TRIAL = 32 << 10, STREAM_CHUNK = 1 << 20, RATIO_FLOOR = 4 << 20 };

static void put32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
    p[2] = (unsigned char)(v >> 16);
    p[3] = (unsigned char)(v >> 24);
}

static uint32_t get32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* ================================ writer ================================ */

typedef struct deflater {
    z_stream lz, trial, huff, store;
    unsigned char *scratch; /* trial output */
    int ready;
} deflater;

enum { SLOT_FREE, SLOT_QUEUED, SLOT_DONE, SLOT_FAILED };

typedef struct wslot {
    unsigned char *in, *out;
    size_t in_len, out_len;
    int state;
} wslot;

struct vt_gzw {
    int fd;
    char what[512];
    int level, n_workers, n_slots;
    size_t out_cap;
    wslot *slots;
    uint64_t n_submitted, n_taken, n_retired; /* slot of counter c: c % n_slots */
    size_t fill;                              /* bytes in the slot being filled */
    pthread_t *threads;
    int n_started;
    pthread_mutex_t mu;
    pthread_cond_t work, done;
    int stop;
    deflater inline_d;
    EVP_MD_CTX *sha;
    uint64_t out_size;
    int finished;
};

static int deflater_init(deflater *d, int level)
{
    memset(d, 0, sizeof *d);
    /* Raw deflate (-15): the gzip header and trailer are ours. */
    if (deflateInit2(&d->lz, level, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return -1;
    if (deflateInit2(&d->trial, 1, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        goto f1;
    if (deflateInit2(&d->huff, 1, Z_DEFLATED, -15, 8, Z_HUFFMAN_ONLY) != Z_OK)
        goto f2;
    if (deflateInit2(&d->store, 0, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        goto f3;
    d->scratch = malloc(deflateBound(NULL, TRIAL));
    if (!d->scratch)
        goto f4;
    d->ready = 1;
    return 0;
f4:
    deflateEnd(&d->store);
f3:
    deflateEnd(&d->huff);
f2:
    deflateEnd(&d->trial);
f1:
    deflateEnd(&d->lz);
    return -1;
}

static void deflater_end(deflater *d)
{
    if (!d->ready)
        return;
    deflateEnd(&d->lz);
    deflateEnd(&d->trial);
    deflateEnd(&d->huff);
    deflateEnd(&d->store);
    free(d->scratch);
    d->ready = 0;
}

/* Compresses in[0..n) in one call; returns the output size or 0 on error. */
static size_t deflate_once(z_stream *z, const unsigned char *in, size_t n, unsigned char *out, size_t cap)
{
    if (deflateReset(z) != Z_OK)
        return 0;
    z->next_in = (unsigned char *)in;
    z->avail_in = (uInt)n;
    z->next_out = out;
    z->avail_out = (uInt)cap;
    if (deflate(z, Z_FINISH) != Z_STREAM_END)
        return 0;
    return cap - z->avail_out;
}

/* One block -> one gzip member. The strategy trial runs on the first TRIAL
 * bytes: LZ77 must beat Huffman-only by 3% to be worth its time, and
 * Huffman-only must beat storing by 10%: decoding Huffman costs several
 * times a copy, and float32 logits (7% smaller) are verified far more often
 * than they are stored. */
static int compress_block(deflater *d, wslot *s, size_t out_cap)
{
    z_stream *z = &d->lz;
    if (s->in_len >= 4096) {
        size_t t = s->in_len < TRIAL ? s->in_len : TRIAL;
        size_t cap = deflateBound(NULL, TRIAL);
        size_t lz = deflate_once(&d->trial, s->in, t, d->scratch, cap);
        size_t hf = deflate_once(&d->huff, s->in, t, d->scratch, cap);
        if (!lz || !hf)
            return -1;
        if (lz * 100 <= hf * 97)
            z = &d->lz;
        else if (hf * 100 <= t * 90)
            z = &d->huff;
        else
            z = &d->store;
    }
    size_t n = deflate_once(z, s->in, s->in_len, s->out + GZ_HDR, out_cap - GZ_HDR - GZ_TRL);
    if (!n)
        return -1;
    unsigned char *h = s->out;
    static const unsigned char head[16] = { 0x1f, 0x8b, 8, 4, 0, 0, 0, 0, 0, 3, 12, 0, 'V', 'T', 8, 0 };
    memcpy(h, head, sizeof head);
    size_t total = GZ_HDR + n + GZ_TRL;
    put32(h + 16, (uint32_t)total);
    put32(h + 20, (uint32_t)s->in_len);
    put32(h + GZ_HDR + n, (uint32_t)crc32(0, s->in, (uInt)s->in_len));
    put32(h + GZ_HDR + n + 4, (uint32_t)s->in_len);
    s->out_len = total;
    return 0;
}

static void *gzw_worker(void *arg)
{
    vt_gzw *w = arg;
    deflater d;
    int ok = deflater_init(&d, w->level) == 0;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->stop && w->n_taken == w->n_submitted)
            pthread_cond_wait(&w->work, &w->mu);
        if (w->n_taken == w->n_submitted)
            break; /* stopped and nothing left */
        wslot *s = &w->slots[w->n_taken++ % (uint64_t)w->n_slots];
        pthread_mutex_unlock(&w->mu);
        int rc = ok ? compress_block(&d, s, w->out_cap) : -1;
        pthread_mutex_lock(&w->mu);
        s->state = rc ? SLOT_FAILED : SLOT_DONE;
        pthread_cond_broadcast(&w->done);
    }
    pthread_mutex_unlock(&w->mu);
    if (ok)
        deflater_end(&d);
    return NULL;
}

/* Waits for the oldest submitted block and writes it out. */
static int retire_one(vt_gzw *w, vt_error *err)
{
    wslot *s = &w->slots[w->n_retired % (uint64_t)w->n_slots];
    pthread_mutex_lock(&w->mu);
    while (s->state == SLOT_QUEUED)
        pthread_cond_wait(&w->done, &w->mu);
    pthread_mutex_unlock(&w->mu);
    if (s->state != SLOT_DONE)
        return vt_error_set(err, VT_EINPUT, "%s: compression failed (out of memory?)", w->what);
    if (EVP_DigestUpdate(w->sha, s->out, s->out_len) != 1)
        return vt_error_set(err, VT_EINPUT, "%s: sha256 failed", w->what);
    int rc = vt_publish_write_all(w->fd, s->out, s->out_len, w->what, err);
    if (rc)
        return rc;
    w->out_size += s->out_len;
    s->state = SLOT_FREE;
    w->n_retired++;
    return VT_OK;
}

static int submit(vt_gzw *w, vt_error *err)
{
    wslot *s = &w->slots[w->n_submitted % (uint64_t)w->n_slots];
    s->in_len = w->fill;
    w->fill = 0;
    if (w->n_workers == 0) {
        s->state = compress_block(&w->inline_d, s, w->out_cap) ? SLOT_FAILED : SLOT_DONE;
        w->n_submitted++;
        return retire_one(w, err);
    }
    pthread_mutex_lock(&w->mu);
    s->state = SLOT_QUEUED;
    w->n_submitted++;
    pthread_cond_signal(&w->work);
    pthread_mutex_unlock(&w->mu);
    /* The next slot to fill must be free: write out the oldest until it is. */
    while (w->n_submitted - w->n_retired >= (uint64_t)w->n_slots) {
        int rc = retire_one(w, err);
        if (rc)
            return rc;
    }
    return VT_OK;
}

vt_gzw *vt_gzw_new(int fd, const char *what, int level, int n_threads, vt_error *err)
{
    vt_gzw *w = calloc(1, sizeof *w);
    if (!w) {
        vt_error_set(err, VT_EINPUT, "%s: out of memory", what);
        return NULL;
    }
    w->fd = fd;
    snprintf(w->what, sizeof w->what, "%s", what);
    w->level = level;
    w->n_workers = n_threads > 1 ? n_threads : 0;
    w->n_slots = w->n_workers ? 2 * w->n_workers + 1 : 1;
    w->out_cap = GZ_HDR + deflateBound(NULL, VT_GZ_BLOCK) + GZ_TRL;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->work, NULL);
    pthread_cond_init(&w->done, NULL);
    w->sha = EVP_MD_CTX_new();
    w->slots = calloc((size_t)w->n_slots, sizeof *w->slots);
    if (!w->sha || !w->slots || EVP_DigestInit_ex(w->sha, EVP_sha256(), NULL) != 1)
        goto oom;
    for (int i = 0; i < w->n_slots; i++) {
        w->slots[i].in = malloc(VT_GZ_BLOCK);
        w->slots[i].out = malloc(w->out_cap);
        if (!w->slots[i].in || !w->slots[i].out)
            goto oom;
    }
    if (w->n_workers == 0) {
        if (deflater_init(&w->inline_d, level))
            goto oom;
    } else {
        w->threads = calloc((size_t)w->n_workers, sizeof *w->threads);
        if (!w->threads)
            goto oom;
        for (; w->n_started < w->n_workers; w->n_started++)
            if (pthread_create(&w->threads[w->n_started], NULL, gzw_worker, w))
                break;
        if (w->n_started == 0)
            goto oom;
    }
    return w;
oom:
    vt_gzw_free(w);
    vt_error_set(err, VT_EINPUT, "%s: out of memory for the compressor", what);
    return NULL;
}

int vt_gzw_write(vt_gzw *w, const void *data, size_t n, vt_error *err)
{
    const unsigned char *p = data;
    while (n) {
        wslot *s = &w->slots[w->n_submitted % (uint64_t)w->n_slots];
        size_t take = VT_GZ_BLOCK - w->fill;
        if (take > n)
            take = n;
        memcpy(s->in + w->fill, p, take);
        w->fill += take;
        p += take;
        n -= take;
        if (w->fill == VT_GZ_BLOCK) {
            int rc = submit(w, err);
            if (rc)
                return rc;
        }
    }
    return VT_OK;
}

int vt_gzw_finish(vt_gzw *w, char sha256[65], uint64_t *size, vt_error *err)
{
    /* A last partial block; an empty stream still gets one (empty) member. */
    if (w->fill || w->n_submitted == 0) {
        int rc = submit(w, err);
        if (rc)
            return rc;
    }
    while (w->n_retired < w->n_submitted) {
        int rc = retire_one(w, err);
        if (rc)
            return rc;
    }
    unsigned char md[32];
    unsigned int mdlen = 0;
    if (EVP_DigestFinal_ex(w->sha, md, &mdlen) != 1)
        return vt_error_set(err, VT_EINPUT, "%s: sha256 failed", w->what);
    vt_seal_hex(md, 32, sha256);
    *size = w->out_size;
    w->finished = 1;
    return VT_OK;
}

void vt_gzw_free(vt_gzw *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    w->stop = 1;
    pthread_cond_broadcast(&w->work);
    pthread_mutex_unlock(&w->mu);
    for (int i = 0; i < w->n_started; i++)
        pthread_join(w->threads[i], NULL);
    free(w->threads);
    deflater_end(&w->inline_d);
    if (w->slots)
        for (int i = 0; i < w->n_slots; i++) {
            free(w->slots[i].in);
            free(w->slots[i].out);
        }
    free(w->slots);
    EVP_MD_CTX_free(w->sha);
    pthread_cond_destroy(&w->work);
    pthread_cond_destroy(&w->done);
    pthread_mutex_destroy(&w->mu);
    free(w);
}

/* ================================ reader ================================ */

typedef struct rslot {
    unsigned char *in, *out;
    size_t in_cap, out_cap;
    size_t in_len, hdr_len, out_len; /* out_len: declared isize for a job */
    uint64_t offset;                 /* of the member in the file, for messages */
    int state;
    char msg[256];
} rslot;

struct vt_gzr {
    int fd;
    char what[512];
    vt_seal_limits lim;
    int n_workers, n_slots;
    rslot *slots;
    /* Slots are filled by the reading thread in stream order (n_filled) and
     * released by the consumer (n_released); jobs (whole "VT" members) are
     * also listed in jobs[] for the workers. */
    uint64_t n_filled, n_released, n_jobs, n_taken;
    int *jobs;
    int held; /* the consumer holds slot n_released */
    pthread_t reader;
    pthread_t *workers;
    int reader_started, n_started;
    pthread_mutex_t mu;
    pthread_cond_t work, done, freed;
    int stop, eof, failed;
    vt_error ferr; /* the reading thread's error */
    /* Reading thread only. */
    unsigned char *buf;
    size_t pos, len, cap;
    uint64_t buf_off; /* file offset of buf[0] */
    int file_eof;
    EVP_MD_CTX *sha;
    uint64_t out_total;
    z_stream z;
    int z_ready;
    char sha_hex[65];
    uint64_t file_size;
};

static int rd_fail(vt_gzr *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int rd_fail(vt_gzr *r, const char *fmt, ...)
{
    char m[700];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof m, fmt, ap);
    va_end(ap);
    vt_error_set(&r->ferr, VT_EINPUT, "%s: %s", r->what, m);
    return -1;
}

/* Makes at least k bytes available at buf[pos]; 0 if the file ends first,
 * -1 on a read error. Hashes every byte as it arrives. */
static int need(vt_gzr *r, size_t k)
{
    while (r->len - r->pos < k) {
        if (r->file_eof)
            return 0;
        if (r->pos) {
            memmove(r->buf, r->buf + r->pos, r->len - r->pos);
            r->buf_off += r->pos;
            r->len -= r->pos;
            r->pos = 0;
        }
        if (k > r->cap)
            return rd_fail(r, "internal: read request of %zu bytes", k);
        ssize_t got = read(r->fd, r->buf + r->len, r->cap - r->len);
        if (got < 0) {
            if (errno == EINTR)
                continue;
            return rd_fail(r, "read: %s", strerror(errno));
        }
        if (got == 0) {
            r->file_eof = 1;
            continue;
        }
        EVP_DigestUpdate(r->sha, r->buf + r->len, (size_t)got);
        r->file_size += (uint64_t)got;
        r->len += (size_t)got;
    }
    return 1;
}

/* Total and ratio limits, checked before the bytes are produced. */
static int check_limits(vt_gzr *r, uint64_t out_total, uint64_t in_total)
{
    if (out_total > r->lim.max_total_size)
        return rd_fail(r, "uncompressed size over the limit of %llu bytes (--max-total-size)",
                       (unsigned long long)r->lim.max_total_size);
    if (out_total > RATIO_FLOOR && in_total <= UINT64_MAX / r->lim.max_ratio &&
        out_total > in_total * r->lim.max_ratio)
        return rd_fail(r, "compression ratio over %llu (--max-ratio): %llu bytes from %llu: refused as a decompression bomb",
                       (unsigned long long)r->lim.max_ratio, (unsigned long long)out_total,
                       (unsigned long long)in_total);
    return 0;
}

/* Waits for the next slot in stream order to be free. NULL if stopped. */
static rslot *acquire(vt_gzr *r)
{
    pthread_mutex_lock(&r->mu);
    while (!r->stop && r->n_filled - r->n_released >= (uint64_t)r->n_slots)
        pthread_cond_wait(&r->freed, &r->mu);
    rslot *s = r->stop ? NULL : &r->slots[r->n_filled % (uint64_t)r->n_slots];
    pthread_mutex_unlock(&r->mu);
    return s;
}

static int ensure(unsigned char **p, size_t *cap, size_t n)
{
    if (*cap >= n)
        return 0;
    unsigned char *q = realloc(*p, n);
    if (!q)
        return -1;
    *p = q;
    *cap = n;
    return 0;
}

/* Hands a filled slot to the consumer (done) or to the workers (job). */
static void publish_slot(vt_gzr *r, rslot *s, int state)
{
    pthread_mutex_lock(&r->mu);
    s->state = state;
    if (state == SLOT_QUEUED) {
        r->jobs[r->n_jobs++ % (uint64_t)r->n_slots] = (int)(s - r->slots);
        pthread_cond_signal(&r->work);
    }
    r->n_filled++;
    pthread_cond_broadcast(&r->done);
    pthread_mutex_unlock(&r->mu);
}

/* Inflates a whole "VT" member; the result must match every declared size.
 * Returns SLOT_DONE, or SLOT_FAILED with s->msg set. */
static int inflate_job(z_stream *z, rslot *s)
{
    size_t dlen = s->in_len - s->hdr_len - GZ_TRL;
    const unsigned char *trl = s->in + s->in_len - GZ_TRL;
    if (inflateReset(z) != Z_OK) {
        snprintf(s->msg, sizeof s->msg, "inflate failed");
        return SLOT_FAILED;
    }
    z->next_in = s->in + s->hdr_len;
    z->avail_in = (uInt)dlen;
    z->next_out = s->out;
    z->avail_out = (uInt)s->out_len;
    int zr = inflate(z, Z_FINISH);
    if (zr != Z_STREAM_END || z->avail_in != 0 || z->avail_out != 0) {
        snprintf(s->msg, sizeof s->msg, "gzip member at offset %llu: corrupt (%s)", (unsigned long long)s->offset,
                 zr == Z_STREAM_END ? "sizes differ from its header" : z->msg ? z->msg : "deflate data ends early");
        return SLOT_FAILED;
    }
    if (get32(trl) != (uint32_t)crc32(0, s->out, (uInt)s->out_len) || get32(trl + 4) != (uint32_t)s->out_len) {
        snprintf(s->msg, sizeof s->msg, "gzip member at offset %llu: corrupt (CRC or length differs from its trailer)",
                 (unsigned long long)s->offset);
        return SLOT_FAILED;
    }
    return SLOT_DONE;
}

static void *gzr_worker(void *arg)
{
    vt_gzr *r = arg;
    z_stream z;
    memset(&z, 0, sizeof z);
    int ok = inflateInit2(&z, -15) == Z_OK;
    pthread_mutex_lock(&r->mu);
    for (;;) {
        while (!r->stop && r->n_taken == r->n_jobs)
            pthread_cond_wait(&r->work, &r->mu);
        if (r->stop)
            break;
        rslot *s = &r->slots[r->jobs[r->n_taken++ % (uint64_t)r->n_slots]];
        pthread_mutex_unlock(&r->mu);
        int state = SLOT_FAILED;
        if (ok)
            state = inflate_job(&z, s);
        else
            snprintf(s->msg, sizeof s->msg, "out of memory for inflate");
        pthread_mutex_lock(&r->mu);
        s->state = state;
        pthread_cond_broadcast(&r->done);
    }
    pthread_mutex_unlock(&r->mu);
    if (ok)
        inflateEnd(&z);
    return NULL;
}

/* Parses a member header at buf[pos]. Returns its length (> 0), 0 for a
 * truncated header, -1 if malformed. *vt_csize, *vt_usize: the "VT" field,
 * or 0 if absent. */
static long parse_header(vt_gzr *r, uint32_t *vt_csize, uint32_t *vt_usize)
{
    *vt_csize = *vt_usize = 0;
    int k = need(r, 10);
    if (k < 0)
        return k;
    const unsigned char *h = r->buf + r->pos;
    uint64_t off = r->buf_off + r->pos;
    size_t avail = r->len - r->pos; /* >= 1: the caller saw a byte */
    if (h[0] != 0x1f || (avail >= 2 && h[1] != 0x8b))
        return off ? rd_fail(r, "corrupt: data after the gzip member ending at offset %llu is not a gzip member",
                             (unsigned long long)off)
                   : rd_fail(r, "not a gzip file");
    if (k == 0)
        return 0;
    if (h[2] != 8 || (h[3] & 0xe0))
        return rd_fail(r, "offset %llu: gzip header: unknown method or flags", (unsigned long long)off);
    int flg = h[3];
    size_t p = 10;
    if (flg & 4) { /* FEXTRA */
        if ((k = need(r, p + 2)) <= 0)
            return k;
        size_t xlen = (size_t)r->buf[r->pos + p] | (size_t)r->buf[r->pos + p + 1] << 8;
        p += 2;
        if ((k = need(r, p + xlen)) <= 0)
            return k;
        const unsigned char *x = r->buf + r->pos + p;
        for (size_t i = 0; i < xlen;) {
            if (xlen - i < 4)
                return rd_fail(r, "offset %llu: gzip header: malformed extra field", (unsigned long long)off);
            size_t sl = (size_t)x[i + 2] | (size_t)x[i + 3] << 8;
            if (xlen - i - 4 < sl)
                return rd_fail(r, "offset %llu: gzip header: malformed extra field", (unsigned long long)off);
            if (x[i] == 'V' && x[i + 1] == 'T') {
                if (sl != 8)
                    return rd_fail(r, "offset %llu: gzip header: malformed VT field", (unsigned long long)off);
                *vt_csize = get32(x + i + 4);
                *vt_usize = get32(x + i + 8);
            }
            i += 4 + sl;
        }
        p += xlen;
    }
    for (int f = 8; f <= 16; f <<= 1) { /* FNAME, FCOMMENT: zero-terminated */
        if (!(flg & f))
            continue;
        for (;;) {
            if ((k = need(r, p + 1)) <= 0)
                return k;
            if (p > 65536)
                return rd_fail(r, "offset %llu: gzip header: name or comment too long", (unsigned long long)off);
            if (r->buf[r->pos + p++] == 0)
                break;
        }
    }
    if (flg & 2) { /* FHCRC: low 16 bits of the header's CRC-32 */
        if ((k = need(r, p + 2)) <= 0)
            return k;
        uint32_t c = (uint32_t)crc32(0, r->buf + r->pos, (uInt)p) & 0xffff;
        uint32_t want = (uint32_t)r->buf[r->pos + p] | (uint32_t)r->buf[r->pos + p + 1] << 8;
        if (c != want)
            return rd_fail(r, "offset %llu: gzip header: CRC differs", (unsigned long long)off);
        p += 2;
    }
    return (long)p;
}

/* A member without a usable "VT" field: inflated here as a stream, in
 * chunks, with the limits checked per chunk. */
static int stream_member(vt_gzr *r, uint64_t off)
{
    if (!r->z_ready) {
        if (inflateInit2(&r->z, -15) != Z_OK)
            return rd_fail(r, "out of memory for inflate");
        r->z_ready = 1;
    } else if (inflateReset(&r->z) != Z_OK)
        return rd_fail(r, "inflate failed");
    uint32_t crc = (uint32_t)crc32(0, NULL, 0);
    uint64_t isize = 0;
    rslot *s = NULL;
    for (;;) {
        if (!s) {
            if (!(s = acquire(r)))
                return -1;
            if (ensure(&s->out, &s->out_cap, STREAM_CHUNK))
                return rd_fail(r, "out of memory");
            s->out_len = 0;
        }
        if (r->pos == r->len) {
            int k = need(r, 1);
            if (k < 0)
                return -1;
            if (k == 0)
                return rd_fail(r, "truncated: the gzip member at offset %llu ends early", (unsigned long long)off);
        }
        r->z.next_in = r->buf + r->pos;
        r->z.avail_in = (uInt)(r->len - r->pos);
        r->z.next_out = s->out + s->out_len;
        r->z.avail_out = (uInt)(STREAM_CHUNK - s->out_len);
        int zr = inflate(&r->z, Z_NO_FLUSH);
        size_t produced = STREAM_CHUNK - s->out_len - r->z.avail_out;
        crc = (uint32_t)crc32(crc, s->out + s->out_len, (uInt)produced);
        s->out_len += produced;
        isize += produced;
        r->pos = r->len - r->z.avail_in;
        if (zr != Z_OK && zr != Z_STREAM_END && zr != Z_BUF_ERROR)
            return rd_fail(r, "corrupt: gzip member at offset %llu: %s", (unsigned long long)off,
                           r->z.msg ? r->z.msg : "inflate failed");
        if (check_limits(r, r->out_total + isize, r->buf_off + r->pos))
            return -1;
        if (zr == Z_STREAM_END || s->out_len == STREAM_CHUNK) {
            if (s->out_len)
                publish_slot(r, s, SLOT_DONE);
            s = NULL;
        }
        if (zr == Z_STREAM_END)
            break;
    }
    r->out_total += isize;
    int k = need(r, GZ_TRL);
    if (k < 0)
        return -1;
    if (k == 0)
        return rd_fail(r, "truncated: the gzip member at offset %llu has no trailer", (unsigned long long)off);
    const unsigned char *t = r->buf + r->pos;
    if (get32(t) != crc || get32(t + 4) != (uint32_t)isize)
        return rd_fail(r, "corrupt: gzip member at offset %llu: CRC or length differs from its trailer",
                       (unsigned long long)off);
    r->pos += GZ_TRL;
    return 0;
}

static int read_members(vt_gzr *r)
{
    for (int first = 1;; first = 0) {
        int k = need(r, 1);
        if (k < 0)
            return -1;
        if (k == 0) {
            if (first)
                return rd_fail(r, "empty file: not a gzip archive");
            return 0;
        }
        uint64_t off = r->buf_off + r->pos;
        uint32_t csize, usize;
        long hl = parse_header(r, &csize, &usize);
        if (hl < 0)
            return -1;
        if (hl == 0)
            return rd_fail(r, "truncated: gzip header at offset %llu ends early", (unsigned long long)off);
        if (csize || usize) {
            /* Our field: it must be sane, and is checked against the data. */
            if (csize < (uint64_t)hl + GZ_TRL + 2 || csize > VT_GZ_MEMBER_MAX || usize > VT_GZ_MEMBER_MAX)
                return rd_fail(r, "corrupt: gzip member at offset %llu: its VT field is out of range",
                               (unsigned long long)off);
            /* Whole member to a worker; sizes are checked when inflated. */
            if (check_limits(r, r->out_total + usize, off + csize))
                return -1;
            if ((k = need(r, csize)) < 0)
                return -1;
            if (k == 0)
                return rd_fail(r, "truncated: the gzip member at offset %llu ends early", (unsigned long long)off);
            rslot *s = acquire(r);
            if (!s)
                return -1;
            if (ensure(&s->in, &s->in_cap, csize) || ensure(&s->out, &s->out_cap, usize ? usize : 1))
                return rd_fail(r, "out of memory");
            memcpy(s->in, r->buf + r->pos, csize);
            s->in_len = csize;
            s->hdr_len = (size_t)hl;
            s->out_len = usize;
            s->offset = off;
            r->pos += csize;
            r->out_total += usize;
            if (r->n_workers)
                publish_slot(r, s, SLOT_QUEUED);
            else {
                int state = inflate_job(&r->z, s);
                publish_slot(r, s, state);
                if (state == SLOT_FAILED)
                    return -1; /* the consumer reports the slot's message */
            }
        } else {
            r->pos += (size_t)hl;
            if (stream_member(r, off))
                return -1;
        }
    }
}

static void *gzr_reader(void *arg)
{
    vt_gzr *r = arg;
    int rc = read_members(r);
    unsigned char md[32];
    unsigned int mdlen = 0;
    if (rc == 0)
        EVP_DigestFinal_ex(r->sha, md, &mdlen);
    pthread_mutex_lock(&r->mu);
    if (rc == 0) {
        vt_seal_hex(md, 32, r->sha_hex);
        r->eof = 1;
    } else
        r->failed = 1;
    pthread_cond_broadcast(&r->done);
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

vt_gzr *vt_gzr_open(int fd, const char *what, const vt_seal_limits *lim, int n_threads, vt_error *err)
{
    vt_gzr *r = calloc(1, sizeof *r);
    if (!r) {
        vt_error_set(err, VT_EINPUT, "%s: out of memory", what);
        return NULL;
    }
    r->fd = fd;
    snprintf(r->what, sizeof r->what, "%s", what);
    r->lim = *lim;
    r->n_workers = n_threads > 1 ? n_threads : 0;
    r->n_slots = 2 * r->n_workers + 2;
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->work, NULL);
    pthread_cond_init(&r->done, NULL);
    pthread_cond_init(&r->freed, NULL);
    r->cap = VT_GZ_MEMBER_MAX + (256 << 10);
    r->buf = malloc(r->cap);
    r->slots = calloc((size_t)r->n_slots, sizeof *r->slots);
    r->jobs = calloc((size_t)r->n_slots, sizeof *r->jobs);
    r->sha = EVP_MD_CTX_new();
    if (!r->buf || !r->slots || !r->jobs || !r->sha || EVP_DigestInit_ex(r->sha, EVP_sha256(), NULL) != 1)
        goto oom;
    if (r->n_workers == 0) {
        if (inflateInit2(&r->z, -15) != Z_OK)
            goto oom;
        r->z_ready = 1;
    } else {
        r->workers = calloc((size_t)r->n_workers, sizeof *r->workers);
        if (!r->workers)
            goto oom;
        for (; r->n_started < r->n_workers; r->n_started++)
            if (pthread_create(&r->workers[r->n_started], NULL, gzr_worker, r))
                break;
        if (r->n_started == 0)
            goto oom;
    }
    if (pthread_create(&r->reader, NULL, gzr_reader, r))
        goto oom;
    r->reader_started = 1;
    return r;
oom:
    vt_gzr_free(r);
    vt_error_set(err, VT_EINPUT, "%s: out of memory for the decompressor", what);
    return NULL;
}

ssize_t vt_gzr_next(vt_gzr *r, const void **data, vt_error *err)
{
    pthread_mutex_lock(&r->mu);
    if (r->held) {
        r->slots[r->n_released % (uint64_t)r->n_slots].state = SLOT_FREE;
        r->n_released++;
        r->held = 0;
        pthread_cond_signal(&r->freed);
    }
    for (;;) {
        if (r->n_released < r->n_filled) {
            rslot *s = &r->slots[r->n_released % (uint64_t)r->n_slots];
            if (s->state == SLOT_DONE) {
                r->held = 1;
                pthread_mutex_unlock(&r->mu);
                *data = s->out;
                return (ssize_t)s->out_len;
            }
            if (s->state == SLOT_FAILED) {
                pthread_mutex_unlock(&r->mu);
                vt_error_set(err, VT_EINPUT, "%s: %s", r->what, s->msg);
                return -1;
            }
        } else if (r->failed) {
            pthread_mutex_unlock(&r->mu);
            if (err)
                *err = r->ferr;
            return -1;
        } else if (r->eof) {
            pthread_mutex_unlock(&r->mu);
            return 0;
        }
        pthread_cond_wait(&r->done, &r->mu);
    }
}

void vt_gzr_digest(const vt_gzr *r, char sha256[65], uint64_t *size)
{
    memcpy(sha256, r->sha_hex, 65);
    *size = r->file_size;
}

void vt_gzr_free(vt_gzr *r)
{
    if (!r)
        return;
    pthread_mutex_lock(&r->mu);
    r->stop = 1;
    pthread_cond_broadcast(&r->work);
    pthread_cond_broadcast(&r->freed);
    pthread_mutex_unlock(&r->mu);
    if (r->reader_started)
        pthread_join(r->reader, NULL);
    for (int i = 0; i < r->n_started; i++)
        pthread_join(r->workers[i], NULL);
    free(r->workers);
    if (r->z_ready)
        inflateEnd(&r->z);
    if (r->slots)
        for (int i = 0; i < r->n_slots; i++) {
            free(r->slots[i].in);
            free(r->slots[i].out);
        }
    free(r->slots);
    free(r->jobs);
    free(r->buf);
    EVP_MD_CTX_free(r->sha);
    pthread_cond_destroy(&r->work);
    pthread_cond_destroy(&r->done);
    pthread_cond_destroy(&r->freed);
    pthread_mutex_destroy(&r->mu);
    free(r);
}
