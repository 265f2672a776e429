/* Streaming file digests through OpenSSL EVP. This is the hot path of
 * provenance (multi-GiB model files), so:
 *  - reads are large (4 MiB) with sequential read-ahead advice;
 *  - a large file is read by a second thread into a ring of buffers while
 *    the calling thread hashes, so read() copies overlap with SHA rounds;
 *  - several files are hashed by a pool of threads, one file per thread at
 *    a time (then no reader threads: the pool already overlaps I/O);
 *  - several digests of one file (npm: sha256 + sha512) share one read. */
#include "prov_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum {
    DEFAULT_BUF = 4 << 20,      /* bytes per read() */
    PIPE_MIN_SIZE = 64 << 20,   /* files from this size get a reader thread (auto) */
    N_PIPE_BUF = 3,             /* ring: one being read, one being hashed, one spare */
    SMALL_ALLOC = 64 << 10      /* least buffer allocated for a small file */
};

static int online_cpus(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 4096 ? 4096 : (int)n;
}

int vt_prov_digest_add(vt_prov_digest *d, const EVP_MD *md)
{
    for (int i = 0; i < d->n_md; i++)
        if (d->md[i] == md)
            return i;
    if (d->n_md >= VT_PROV_MAX_MD)
        return -1;
    d->md[d->n_md] = md;
    return d->n_md++;
}

/* ---- incremental digests ---- */

int vt_prov_stream_init(vt_prov_stream *s, vt_prov_digest *d)
{
    memset(s, 0, sizeof *s);
    s->d = d;
    d->size = 0;
    for (int i = 0; i < d->n_md; i++) {
        s->ctx[i] = EVP_MD_CTX_new();
        if (!s->ctx[i] || EVP_DigestInit_ex(s->ctx[i], d->md[i], NULL) != 1) {
            vt_prov_stream_free(s);
            return EIO;
        }
    }
    return 0;
}

int vt_prov_stream_update(vt_prov_stream *s, const void *data, size_t n)
{
    s->d->size += n;
    for (int i = 0; i < s->d->n_md; i++)
        if (EVP_DigestUpdate(s->ctx[i], data, n) != 1)
            return EIO;
    return 0;
}

int vt_prov_stream_final(vt_prov_stream *s)
{
    for (int i = 0; i < s->d->n_md; i++)
        if (EVP_DigestFinal_ex(s->ctx[i], s->d->out[i], &s->d->len[i]) != 1)
            return EIO;
    return 0;
}

void vt_prov_stream_free(vt_prov_stream *s)
{
    for (int i = 0; i < VT_PROV_MAX_MD; i++) {
        EVP_MD_CTX_free(s->ctx[i]);
        s->ctx[i] = NULL;
    }
}

/* ---- reading ---- */

/* Fills buf up to cap bytes unless EOF comes first. -1 with errno on error. */
static ssize_t read_full(int fd, unsigned char *buf, size_t cap)
{
    size_t got = 0;
    while (got < cap) {
        ssize_t r = read(fd, buf + got, cap - got);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

static int digest_fd_serial(int fd, vt_prov_stream *s, unsigned char *buf, size_t cap)
{
    for (;;) {
        ssize_t r = read(fd, buf, cap);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return errno;
        }
        if (r == 0)
            return 0;
        if (vt_prov_stream_update(s, buf, (size_t)r))
            return EIO;
    }
}

/* Reader thread -> hashing thread hand-off through a ring of full-size
 * buffers. One mutex and condition variable: there are only two parties and
 * a hand-off per 4 MiB, so contention is irrelevant. */
typedef struct pipe_ring {
    int fd;
    size_t cap;
    unsigned char *buf[N_PIPE_BUF];
    size_t len[N_PIPE_BUF];
    int full[N_PIPE_BUF];
    int last[N_PIPE_BUF]; /* EOF or error follows this buffer */
    int err;              /* reader's errno, 0 if none */
    int stop;             /* hashing side gave up */
    pthread_mutex_t mu;
    pthread_cond_t cv;
} pipe_ring;

static void *reader_main(void *arg)
{
    pipe_ring *p = arg;
    for (int i = 0;; i = (i + 1) % N_PIPE_BUF) {
        pthread_mutex_lock(&p->mu);
        while (p->full[i] && !p->stop)
            pthread_cond_wait(&p->cv, &p->mu);
        int stop = p->stop;
        pthread_mutex_unlock(&p->mu);
        if (stop)
            return NULL;
        ssize_t r = read_full(p->fd, p->buf[i], p->cap);
        int e = r < 0 ? errno : 0;
        int last = r < 0 || (size_t)r < p->cap;
        pthread_mutex_lock(&p->mu);
        p->len[i] = r < 0 ? 0 : (size_t)r;
        p->last[i] = last;
        p->err = e;
        p->full[i] = 1;
        pthread_cond_broadcast(&p->cv);
        pthread_mutex_unlock(&p->mu);
        if (last)
            return NULL;
    }
}

/* Returns 0, an errno, or -1 when the thread could not be started (the
 * caller then reads serially; nothing has been consumed yet). */
static int digest_fd_piped(int fd, vt_prov_stream *s, size_t cap)
{
    pipe_ring p;
    memset(&p, 0, sizeof p);
    p.fd = fd;
    p.cap = cap;
    unsigned char *mem = malloc(cap * N_PIPE_BUF);
    if (!mem)
        return -1;
    for (int i = 0; i < N_PIPE_BUF; i++)
        p.buf[i] = mem + (size_t)i * cap;
    pthread_mutex_init(&p.mu, NULL);
    pthread_cond_init(&p.cv, NULL);
    pthread_t th;
    if (pthread_create(&th, NULL, reader_main, &p) != 0) {
        pthread_mutex_destroy(&p.mu);
        pthread_cond_destroy(&p.cv);
        free(mem);
        return -1;
    }
    int rc = 0;
    for (int i = 0;; i = (i + 1) % N_PIPE_BUF) {
        pthread_mutex_lock(&p.mu);
        while (!p.full[i])
            pthread_cond_wait(&p.cv, &p.mu);
        size_t len = p.len[i];
        int last = p.last[i], e = p.err;
        pthread_mutex_unlock(&p.mu);
        if (e) {
            rc = e;
            break;
        }
        if (len && vt_prov_stream_update(s, p.buf[i], len)) {
            rc = EIO;
            break;
        }
        if (last)
            break;
        pthread_mutex_lock(&p.mu);
        p.full[i] = 0;
        pthread_cond_broadcast(&p.cv);
        pthread_mutex_unlock(&p.mu);
    }
    pthread_mutex_lock(&p.mu);
    p.stop = 1;
    pthread_cond_broadcast(&p.cv);
    pthread_mutex_unlock(&p.mu);
    pthread_join(th, NULL);
    pthread_mutex_destroy(&p.mu);
    pthread_cond_destroy(&p.cv);
    free(mem);
    return rc;
}

int vt_prov_digest_path(const char *path, vt_prov_digest *d, const vt_hash_options *opt, unsigned char *scratch,
                        size_t scratch_cap)
{
    /* O_NONBLOCK: open() on a FIFO would wait for a writer; the fstat below
     * refuses it. Cleared before reading. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return errno;
    struct stat st;
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        (void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        /* A FIFO or device would never end or not be the file meant. */
        int e = fstat(fd, &st) != 0 ? errno : S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
        close(fd);
        return e;
    }
    /* Doubles the kernel's read-ahead window: fewer stalls on cold files. */
    (void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);

    size_t cap = opt && opt->buffer_size ? opt->buffer_size : DEFAULT_BUF;
    int mode = opt ? opt->reader_thread : -1;
    int piped = mode == 1 || (mode == -1 && st.st_size >= PIPE_MIN_SIZE && online_cpus() >= 2);

    vt_prov_stream s;
    int rc = vt_prov_stream_init(&s, d);
    if (rc) {
        close(fd);
        return rc;
    }
    rc = piped ? digest_fd_piped(fd, &s, cap) : -1;
    if (rc == -1) {
        /* Small files need no 4 MiB buffer (its page faults would cost more
         * than hashing them). */
        size_t want = (uint64_t)st.st_size < cap ? (size_t)st.st_size + 1 : cap;
        if (want < SMALL_ALLOC && cap > SMALL_ALLOC)
            want = SMALL_ALLOC;
        unsigned char *buf = scratch;
        size_t bufcap = scratch_cap < cap ? scratch_cap : cap;
        if (!scratch || scratch_cap < want) {
            buf = malloc(want);
            bufcap = want;
        }
        rc = buf ? digest_fd_serial(fd, &s, buf, bufcap) : ENOMEM;
        if (buf != scratch)
            free(buf);
    }
    if (!rc)
        rc = vt_prov_stream_final(&s);
    vt_prov_stream_free(&s);
    close(fd);
    return rc;
}

/* ---- thread pool over many files ---- */

typedef struct pool {
    const char *const *paths;
    int n;
    vt_prov_digest *d;
    int *status;
    int reader_thread;
    atomic_int next;
} pool;

static void *pool_main(void *arg)
{
    pool *p = arg;
    unsigned char *scratch = malloc(DEFAULT_BUF);
    vt_hash_options o = { DEFAULT_BUF, p->reader_thread };
    for (;;) {
        int i = atomic_fetch_add(&p->next, 1);
        if (i >= p->n)
            break;
        p->status[i] = vt_prov_digest_path(p->paths[i], &p->d[i], &o, scratch, scratch ? DEFAULT_BUF : 0);
    }
    free(scratch);
    return NULL;
}

void vt_prov_digest_paths(const char *const *paths, int n, int n_threads, vt_prov_digest *d, int *status)
{
    if (n <= 0)
        return;
    int workers = n_threads > 0 ? n_threads : online_cpus();
    if (workers > n)
        workers = n;
    pool p = { .paths = paths, .n = n, .d = d, .status = status, .reader_thread = workers > 1 ? 0 : -1 };
    atomic_init(&p.next, 0);
    pthread_t *th = workers > 1 ? malloc(sizeof *th * (size_t)(workers - 1)) : NULL;
    int started = 0;
    for (int i = 0; th && i < workers - 1; i++) {
        if (pthread_create(&th[i], NULL, pool_main, &p) != 0)
            break; /* fewer workers: the calling thread still drains the queue */
        started++;
    }
    pool_main(&p);
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    free(th);
}

/* ---- public SHA-256 API ---- */

static const char hexdig[] = "0123456789abcdef";

void vt_prov_hex(const unsigned char *d, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = hexdig[d[i] >> 4];
        out[2 * i + 1] = hexdig[d[i] & 15];
    }
    out[2 * n] = '\0';
}

void vt_sha256_hex_of(const unsigned char md[32], vt_sha256_hex *out) { vt_prov_hex(md, 32, out->hex); }

int vt_sha256_buffer(const void *data, size_t size, vt_sha256_hex *out)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    int ok = 0;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1 && EVP_DigestUpdate(ctx, data, size) == 1 &&
        EVP_DigestFinal_ex(ctx, md, &len) == 1 && len == 32)
        ok = 1;
    EVP_MD_CTX_free(ctx);
    if (!ok) {
        out->hex[0] = '\0';
        return VT_EINPUT; /* only when OpenSSL itself fails */
    }
    vt_prov_hex(md, 32, out->hex);
    return VT_OK;
}

static int hash_error(vt_error *err, const char *path, int e)
{
    if (e == EINVAL || e == EISDIR || e == ENXIO)
        return vt_error_set(err, VT_EINPUT, "%s: %s", path, vt_prov_strerror(path, e));
    if (e == EIO)
        return vt_error_set(err, VT_EINPUT, "%s: SHA-256 failed (read error or OpenSSL failure)", path);
    return vt_error_set(err, VT_EINPUT, "%s: cannot read: %s", path, strerror(e));
}

int vt_sha256_file_opts(const char *path, const vt_hash_options *opt, vt_sha256_hex *out, uint64_t *size_out,
                        vt_error *err)
{
    vt_prov_digest d = { .md = { EVP_sha256() }, .n_md = 1 };
    out->hex[0] = '\0';
    if (size_out)
        *size_out = 0;
    int e = vt_prov_digest_path(path, &d, opt, NULL, 0);
    if (e)
        return hash_error(err, path, e);
    vt_prov_hex(d.out[0], 32, out->hex);
    if (size_out)
        *size_out = d.size;
    return VT_OK;
}

int vt_sha256_file(const char *path, vt_sha256_hex *out, uint64_t *size_out, vt_error *err)
{
    return vt_sha256_file_opts(path, NULL, out, size_out, err);
}

void vt_sha256_files_each(const char *const *paths, int n, int n_threads, vt_sha256_hex *out, uint64_t *sizes,
                          int *status)
{
    if (n <= 0)
        return;
    vt_prov_digest *d = calloc((size_t)n, sizeof *d);
    for (int i = 0; i < n; i++) {
        out[i].hex[0] = '\0';
        if (sizes)
            sizes[i] = 0;
        status[i] = d ? 0 : ENOMEM;
        if (d) {
            d[i].md[0] = EVP_sha256();
            d[i].n_md = 1;
        }
    }
    if (!d)
        return;
    vt_prov_digest_paths(paths, n, n_threads, d, status);
    for (int i = 0; i < n; i++) {
        if (status[i])
            continue;
        vt_prov_hex(d[i].out[0], 32, out[i].hex);
        if (sizes)
            sizes[i] = d[i].size;
    }
    free(d);
}

int vt_sha256_files(const char *const *paths, int n, int n_threads, vt_sha256_hex *out, uint64_t *sizes,
                    vt_error *err)
{
    if (n <= 0)
        return VT_OK;
    int *status = malloc(sizeof *status * (size_t)n);
    if (!status)
        return vt_error_set(err, VT_EINPUT, "vt_sha256_files: out of memory for %d files", n);
    vt_sha256_files_each(paths, n, n_threads, out, sizes, status);
    int rc = VT_OK;
    for (int i = 0; i < n && rc == VT_OK; i++)
        if (status[i])
            rc = hash_error(err, paths[i], status[i]);
    free(status);
    return rc;
}

/* ---- base64 (npm SRI is standard base64; wheel RECORD is URL-safe, unpadded) ---- */

void vt_prov_b64(const unsigned char *d, size_t n, int urlsafe_nopad, char *out)
{
    const char *abc = urlsafe_nopad ? "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
                                    : "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t o = 0, i = 0;
    for (; i + 2 < n; i += 3) {
        uint32_t v = (uint32_t)d[i] << 16 | (uint32_t)d[i + 1] << 8 | d[i + 2];
        out[o++] = abc[v >> 18 & 63];
        out[o++] = abc[v >> 12 & 63];
        out[o++] = abc[v >> 6 & 63];
        out[o++] = abc[v & 63];
    }
    if (i < n) {
        uint32_t v = (uint32_t)d[i] << 16 | (i + 1 < n ? (uint32_t)d[i + 1] << 8 : 0);
        out[o++] = abc[v >> 18 & 63];
        out[o++] = abc[v >> 12 & 63];
        if (i + 1 < n)
            out[o++] = abc[v >> 6 & 63];
        else if (!urlsafe_nopad)
            out[o++] = '=';
        if (!urlsafe_nopad)
            out[o++] = '=';
    }
    out[o] = '\0';
}

static int b64_value(char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+' || c == '-')
        return 62;
    if (c == '/' || c == '_')
        return 63;
    return -1;
}

long vt_prov_b64_decode(const char *s, size_t len, unsigned char *out, size_t cap)
{
    while (len && s[len - 1] == '=')
        len--;
    if (len % 4 == 1)
        return -1;
    size_t o = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < len; i++) {
        int v = b64_value(s[i]);
        if (v < 0)
            return -1;
        acc = acc << 6 | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (o >= cap)
                return -1;
            out[o++] = (unsigned char)(acc >> bits);
        }
    }
    return (long)o;
}

const EVP_MD *vt_prov_md_by_name(const char *name, size_t len)
{
    if (len == 6 && memcmp(name, "sha256", 6) == 0)
        return EVP_sha256();
    if (len == 6 && memcmp(name, "sha384", 6) == 0)
        return EVP_sha384();
    if (len == 6 && memcmp(name, "sha512", 6) == 0)
        return EVP_sha512();
    return NULL;
}
