/* Package verification: are the bytes we import the bytes that were
 * published? Python wheels are checked against their own RECORD (and an
 * installed copy against the installed RECORD and the wheel); npm tarballs
 * against the lock file's sha512 integrity, and the shared objects a process
 * loaded from the unpacked package against the tarball members. */
#include "prov_internal.h"
#include "../common/vt_sort.h"
#include "../common/vt_input.h"

#include "../common/vt_json.h"
#include "../common/vt_parse.h"

#include <archive.h>
#include <archive_entry.h>
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum {
    RECORD_MAX_BYTES = 64 << 20,  /* a RECORD larger than this is not a wheel's */
    KEEP_MAX_BYTES = 16 << 20,    /* member bodies kept for script comparison */
    ARCHIVE_BLOCK = 1 << 20
};

void vt_package_report_free(vt_package_report *r)
{
    if (!r)
        return;
    free(r->kind);
    free(r->file);
    free(r->integrity);
    free(r->computed_integrity);
    vt_prov_lines_free(r->problems, r->n_problems);
    vt_prov_lines_free(r->notes, r->n_notes);
    memset(r, 0, sizeof *r);
}

/* Moves the collected lines into the report; VT_EINPUT when memory ran out. */
static int finish_report(vt_package_report *r, vt_lines *problems, vt_lines *notes, vt_error *err)
{
    r->problems = problems->v;
    r->n_problems = problems->n;
    r->notes = notes->v;
    r->n_notes = notes->n;
    memset(problems, 0, sizeof *problems);
    memset(notes, 0, sizeof *notes);
    if (problems->oom || notes->oom || !r->kind || !r->file)
        return vt_error_set(err, VT_EINPUT, "%s: out of memory while verifying", r->file ? r->file : "package");
    r->verified = r->n_problems == 0;
    return VT_OK;
}

static const char *entry_name(struct archive_entry *e)
{
    const char *n = archive_entry_pathname_utf8(e);
    return n ? n : archive_entry_pathname(e);
}

/* Appends the current member's data to *keep (when keep != NULL and the
 * body is at most KEEP_MAX_BYTES; a larger one is not kept: keep->oom) while
 * hashing it. Returns ARCHIVE_OK, or the libarchive status of a failed read.
 * *no_memory: keeping it ran out of memory, which must fail the
 * verification, never change what it finds. */
static int hash_member(struct archive *a, vt_prov_digest *d, vt_sbuf *keep, int *stream_err, int *no_memory)
{
    *no_memory = 0;
    vt_prov_stream s;
    *stream_err = vt_prov_stream_init(&s, d);
    if (*stream_err)
        return ARCHIVE_OK;
    int r;
    for (;;) {
        const void *buf;
        size_t size;
        la_int64_t off;
        r = archive_read_data_block(a, &buf, &size, &off);
        if (r == ARCHIVE_EOF) {
            r = ARCHIVE_OK;
            break;
        }
        if (r < ARCHIVE_WARN)
            break;
        if (size && vt_prov_stream_update(&s, buf, size)) {
            *stream_err = EIO;
            break;
        }
        if (keep && !keep->oom) {
            if (keep->n + size <= KEEP_MAX_BYTES) {
                vt_sbuf_add(keep, buf, size);
                *no_memory = keep->oom;
            } else {
                keep->oom = 1; /* too large to keep: compared by hash only */
            }
        }
    }
    if (r == ARCHIVE_OK && !*stream_err)
        *stream_err = vt_prov_stream_final(&s);
    vt_prov_stream_free(&s);
    return r;
}

/* Next member; 0 at the end or on error (then *r says which). A warning
 * (e.g. a name not convertible to the locale) still yields the member. */
static int next_header(struct archive *a, struct archive_entry **e, int *r)
{
    *r = archive_read_next_header(a, e);
    return *r == ARCHIVE_OK || *r == ARCHIVE_WARN;
}

/* An archive read from a file vt_input_open opened (libarchive callbacks). */
typedef struct la_src {
    int fd;
    unsigned char buf[ARCHIVE_BLOCK];
} la_src;

static la_ssize_t la_src_read(struct archive *a, void *p, const void **out)
{
    la_src *s = p;
    *out = s->buf;
    for (;;) {
        ssize_t n = read(s->fd, s->buf, sizeof s->buf);
        if (n >= 0)
            return n;
        if (errno != EINTR) {
            archive_set_error(a, errno, "read: %s", strerror(errno));
            return -1;
        }
    }
}

static la_int64_t la_src_seek(struct archive *a, void *p, la_int64_t off, int whence)
{
    la_src *s = p;
    off_t r = lseek(s->fd, (off_t)off, whence);
    if (r < 0) {
        archive_set_error(a, errno, "seek: %s", strerror(errno));
        return ARCHIVE_FATAL;
    }
    return (la_int64_t)r;
}

static la_int64_t la_src_skip(struct archive *a, void *p, la_int64_t n)
{
    la_src *s = p;
    off_t cur = lseek(s->fd, 0, SEEK_CUR);
    if (cur < 0 || lseek(s->fd, (off_t)n, SEEK_CUR) < 0) {
        (void)a;
        return 0; /* libarchive reads through instead */
    }
    return n;
}

static int la_src_close(struct archive *a, void *p)
{
    (void)a;
    la_src *s = p;
    if (s) {
        close(s->fd);
        free(s);
    }
    return ARCHIVE_OK;
}

static struct archive *open_archive(const char *path, int zip, vt_error *err)
{
    struct archive *a = archive_read_new();
    if (!a) {
        vt_error_set(err, VT_EINPUT, "%s: out of memory opening the archive", path);
        return NULL;
    }
    if (zip) {
        archive_read_support_format_zip(a);
    } else {
        archive_read_support_filter_gzip(a);
        archive_read_support_format_tar(a);
    }
    /* libarchive's own open() would wait on a FIFO: vt_input.h opens it. */
    int fd;
    vt_input_opts io = { .what = zip ? "a regular file (a zip, the wheel)" : "a regular file (a gzip tarball)" };
    if (vt_input_open(path, &io, &fd, NULL, err)) {
        archive_read_free(a);
        return NULL;
    }
    la_src *src = malloc(sizeof *src);
    if (!src) {
        close(fd);
        archive_read_free(a);
        vt_error_set(err, VT_EINPUT, "%s: out of memory opening the archive", path);
        return NULL;
    }
    src->fd = fd;
    /* Seekable, as archive_read_open_filename is: the zip reader then reads
     * the central directory rather than streaming. The close callback closes
     * fd and frees src, also when the open fails. */
    archive_read_set_callback_data(a, src);
    archive_read_set_read_callback(a, la_src_read);
    archive_read_set_seek_callback(a, la_src_seek);
    archive_read_set_skip_callback(a, la_src_skip);
    archive_read_set_close_callback(a, la_src_close);
    if (archive_read_open1(a) != ARCHIVE_OK) {
        vt_error_set(err, VT_EINPUT, "%s: expected a readable %s: %s", path, zip ? "zip (wheel)" : "gzip tarball",
                     archive_error_string(a) ? archive_error_string(a) : "unknown error");
        archive_read_free(a);
        return NULL;
    }
    return a;
}

/* A member path an installer could write outside its target. */
static int unsafe_path(const char *p)
{
    if (p[0] == '/' || strchr(p, '\\'))
        return 1;
    for (const char *c = p; *c;) {
        const char *slash = strchr(c, '/');
        size_t n = slash ? (size_t)(slash - c) : strlen(c);
        if (n == 2 && c[0] == '.' && c[1] == '.')
            return 1;
        c += n + (slash ? 1 : 0);
    }
    return 0;
}

/* ---- RECORD entries ---- */

enum { HASH_NONE, HASH_OK, HASH_MALFORMED, HASH_UNSUPPORTED };

typedef struct rec_entry {
    const char *path; /* in the parsed rows */
    const char *hash_text;
    const EVP_MD *md; /* the digest RECORD names (HASH_OK only) */
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int dlen;
    int hash_state;
    int has_size, size_bad;
    uint64_t size;
    int line;
    int matched;
} rec_entry;

static int cmp_rec(const void *a, const void *b)
{
    return strcmp(((const rec_entry *)a)->path, ((const rec_entry *)b)->path);
}

/* Parses each row's hash ("alg=urlsafe-b64") and size; sorted by path. */
static rec_entry *record_entries(const vt_record_row *rows, int n)
{
    rec_entry *r = calloc((size_t)n + 1, sizeof *r);
    if (!r)
        return NULL;
    for (int i = 0; i < n; i++) {
        rec_entry *e = &r[i];
        e->path = rows[i].path;
        e->hash_text = rows[i].hash;
        e->line = rows[i].line;
        const char *h = rows[i].hash, *eq = strchr(h, '=');
        if (!*h) {
            e->hash_state = HASH_NONE;
        } else if (!eq) {
            e->hash_state = HASH_MALFORMED;
        } else if (!(e->md = vt_prov_md_by_name(h, (size_t)(eq - h)))) {
            e->hash_state = HASH_UNSUPPORTED; /* the wheel spec forbids md5/sha1 */
        } else {
            long dl = vt_prov_b64_decode(eq + 1, strlen(eq + 1), e->digest, sizeof e->digest);
            e->hash_state = dl == EVP_MD_get_size(e->md) ? HASH_OK : HASH_MALFORMED;
            e->dlen = dl > 0 ? (unsigned int)dl : 0;
        }
        if (rows[i].size[0]) {
            e->has_size = 1;
            e->size_bad = !vt_parse_u64(rows[i].size, &e->size);
        }
    }
    vt_sort(r, (size_t)n, sizeof *r, cmp_rec);
    return r;
}

static int find_rec(rec_entry *r, int n, const char *path)
{
    int lo = 0, hi = n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (strcmp(r[mid].path, path) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && strcmp(r[lo].path, path) == 0 ? lo : -1;
}

/* ---- wheel members ---- */

typedef struct member {
    char *name;
    uint64_t size;
    const EVP_MD *md;
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int dlen;
    int readable;      /* body read and hashed completely */
    char *body;        /* kept for .data/scripts/ and entry_points.txt */
    size_t body_len;
    int installed;     /* an installed file maps to it */
} member;

static int cmp_member(const void *a, const void *b)
{
    return strcmp(((const member *)a)->name, ((const member *)b)->name);
}

static int find_member(member *m, int n, const char *name)
{
    int lo = 0, hi = n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (strcmp(m[mid].name, name) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && strcmp(m[lo].name, name) == 0 ? lo : -1;
}

static void free_members(member *m, int n)
{
    for (int i = 0; i < n; i++) {
        free(m[i].name);
        free(m[i].body);
    }
    free(m);
}

static int starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* "X.dist-info/RECORD" at the top level. */
static int is_record_member(const char *name)
{
    const char *slash = strchr(name, '/');
    return slash && slash > name && strcmp(slash, "/RECORD") == 0 &&
           (size_t)(slash - name) > strlen(".dist-info") &&
           strncmp(slash - strlen(".dist-info"), ".dist-info", strlen(".dist-info")) == 0;
}

/* RECORD itself and its signatures: the files RECORD cannot hash. */
static int is_record_or_signature(const char *name, const char *distinfo)
{
    size_t dl = strlen(distinfo);
    if (strncmp(name, distinfo, dl) != 0 || name[dl] != '/')
        return 0;
    const char *b = name + dl + 1;
    return strcmp(b, "RECORD") == 0 || strcmp(b, "RECORD.jws") == 0 || strcmp(b, "RECORD.p7s") == 0;
}

static void b64_of(const unsigned char *d, unsigned int n, char *out /* >= 90 */)
{
    vt_prov_b64(d, n, 1, out);
}

/* Pass 1: the dist-info directory and RECORD text. */
static int read_record(const char *path, char **distinfo, char **text, size_t *len, vt_error *err)
{
    struct archive *a = open_archive(path, 1, err);
    if (!a)
        return VT_EINPUT;
    struct archive_entry *e;
    int r, rc = VT_OK;
    *distinfo = NULL;
    *text = NULL;
    while (rc == VT_OK && next_header(a, &e, &r)) {
        const char *name = entry_name(e);
        if (!name || !is_record_member(name))
            continue;
        if (*distinfo) {
            rc = vt_error_set(err, VT_EINPUT, "%s: expected one *.dist-info/RECORD, found %s/RECORD and %s", path,
                              *distinfo, name);
            break;
        }
        *distinfo = vt_prov_strdup(name);
        if (*distinfo)
            (*distinfo)[strlen(name) - strlen("/RECORD")] = '\0';
        if (archive_entry_size_is_set(e) && archive_entry_size(e) > RECORD_MAX_BYTES) {
            rc = vt_error_set(err, VT_EINPUT, "%s: %s: expected a RECORD of at most %d bytes", path, name,
                              RECORD_MAX_BYTES);
            break;
        }
        vt_sbuf b = { 0 };
        vt_sbuf_add(&b, "", 0);
        char buf[65536];
        la_ssize_t n;
        while ((n = archive_read_data(a, buf, sizeof buf)) > 0 && b.n <= RECORD_MAX_BYTES)
            vt_sbuf_add(&b, buf, (size_t)n);
        if (n < 0 || b.oom || !*distinfo) {
            free(b.p);
            rc = vt_error_set(err, VT_EINPUT, "%s: %s: cannot read: %s", path, name,
                              n < 0 && archive_error_string(a) ? archive_error_string(a) : "out of memory");
            break;
        }
        *len = b.n;
        *text = vt_sbuf_take(&b);
    }
    if (rc == VT_OK && r != ARCHIVE_EOF)
        rc = vt_error_set(err, VT_EINPUT, "%s: expected a readable zip: %s", path,
                          archive_error_string(a) ? archive_error_string(a) : "unknown error");
    if (rc == VT_OK && !*distinfo)
        rc = vt_error_set(err, VT_EINPUT, "%s: expected a *.dist-info/RECORD member (not a wheel?)", path);
    archive_read_free(a);
    if (rc != VT_OK) {
        free(*distinfo);
        free(*text);
        *distinfo = *text = NULL;
    }
    return rc;
}

/* Pass 2: every regular member hashed with the digest its RECORD entry
 * names (SHA-256 when none). Bodies kept where needed later. */
static int read_members(const char *path, const char *distinfo, rec_entry *rec, int n_rec, member **out, int *n_out,
                        vt_lines *problems, vt_error *err)
{
    struct archive *a = open_archive(path, 1, err);
    if (!a)
        return VT_EINPUT;
    vt_sbuf keep_scripts = { 0 };
    vt_sbuf_printf(&keep_scripts, "%.*s.data/scripts/", (int)(strlen(distinfo) - strlen(".dist-info")), distinfo);
    char *scripts_prefix = vt_sbuf_take(&keep_scripts);
    vt_sbuf ep = { 0 };
    vt_sbuf_printf(&ep, "%s/entry_points.txt", distinfo);
    char *entry_points = vt_sbuf_take(&ep);

    member *m = NULL;
    int n = 0, cap = 0, rc = VT_OK, r;
    struct archive_entry *e;
    if (!scripts_prefix || !entry_points)
        rc = vt_error_set(err, VT_EINPUT, "%s: out of memory", path);
    while (rc == VT_OK && next_header(a, &e, &r)) {
        const char *name = entry_name(e);
        if (!name) {
            vt_lines_addf(problems, "member #%d: name not readable", n + 1);
            continue;
        }
        mode_t type = archive_entry_filetype(e);
        if (type == AE_IFDIR || ends_with(name, "/"))
            continue;
        if (type != AE_IFREG) {
            vt_lines_addf(problems, "%s: member is not a regular file", name);
            continue;
        }
        if (unsafe_path(name))
            vt_lines_addf(problems, "%s: unsafe member path (absolute, backslash or '..')", name);
        if (n == cap) {
            int nc = cap ? cap * 2 : 512;
            member *nm = realloc(m, sizeof *nm * (size_t)nc);
            if (!nm) {
                rc = vt_error_set(err, VT_EINPUT, "%s: out of memory", path);
                break;
            }
            m = nm;
            cap = nc;
        }
        member *mb = &m[n];
        memset(mb, 0, sizeof *mb);
        if (!(mb->name = vt_prov_strdup(name))) {
            rc = vt_error_set(err, VT_EINPUT, "%s: out of memory", path);
            break;
        }
        n++;
        int ri = find_rec(rec, n_rec, name);
        vt_prov_digest d = { .n_md = 1 };
        d.md[0] = ri >= 0 && rec[ri].hash_state == HASH_OK ? rec[ri].md : EVP_sha256();
        int keep = starts_with(name, scripts_prefix) || strcmp(name, entry_points) == 0;
        vt_sbuf body = { 0 };
        int serr = 0, nomem = 0;
        r = hash_member(a, &d, keep ? &body : NULL, &serr, &nomem);
        if (nomem) {
            free(body.p);
            rc = vt_error_set(err, VT_EINPUT, "%s: %s: out of memory", path, name);
            break;
        }
        if (r < ARCHIVE_WARN || serr) {
            free(body.p);
            vt_lines_addf(problems, "%s: member unreadable: %s", name,
                          serr ? "digest failed" : archive_error_string(a) ? archive_error_string(a) : "error");
            if (r == ARCHIVE_FATAL) {
                rc = vt_error_set(err, VT_EINPUT, "%s: expected a readable zip: %s: %s", path, name,
                                  archive_error_string(a) ? archive_error_string(a) : "fatal error");
                break;
            }
            continue;
        }
        mb->readable = 1;
        mb->md = d.md[0];
        mb->dlen = d.len[0];
        memcpy(mb->digest, d.out[0], d.len[0]);
        mb->size = d.size;
        if (keep && !body.oom) {
            mb->body_len = body.n;
            mb->body = vt_sbuf_take(&body);
        } else {
            free(body.p);
        }
    }
    if (rc == VT_OK && r != ARCHIVE_EOF)
        rc = vt_error_set(err, VT_EINPUT, "%s: expected a readable zip: %s", path,
                          archive_error_string(a) ? archive_error_string(a) : "unknown error");
    archive_read_free(a);
    free(scripts_prefix);
    free(entry_points);
    if (rc != VT_OK) {
        free_members(m, n);
        return rc;
    }
    vt_sort(m, (size_t)n, sizeof *m, cmp_member);
    *out = m;
    *n_out = n;
    return VT_OK;
}

/* Every member against RECORD and every RECORD entry against the members. */
static void check_wheel_record(const char *distinfo, rec_entry *rec, int n_rec, member *m, int nm,
                               vt_lines *problems, int *checked)
{
    char got[96], want[96];
    for (int i = 0; i < n_rec; i++) {
        rec_entry *e = &rec[i];
        if (i + 1 < n_rec && strcmp(e->path, rec[i + 1].path) == 0)
            vt_lines_addf(problems, "%s: listed twice in RECORD (lines %d and %d)", e->path, e->line,
                          rec[i + 1].line);
        int self = is_record_or_signature(e->path, distinfo);
        int mi = find_member(m, nm, e->path);
        if (mi < 0) {
            vt_lines_addf(problems, "%s: listed in RECORD (line %d) but not in the wheel", e->path, e->line);
            continue;
        }
        if (self)
            continue; /* RECORD cannot hash itself, nor the signatures of it */
        if (e->hash_state == HASH_NONE) {
            vt_lines_addf(problems, "%s: RECORD (line %d) lists it without a hash", e->path, e->line);
            continue;
        }
        if (e->hash_state == HASH_UNSUPPORTED || e->hash_state == HASH_MALFORMED) {
            vt_lines_addf(problems, "%s: RECORD (line %d) hash '%s': expected sha256=<urlsafe base64 digest>",
                          e->path, e->line, e->hash_text);
            continue;
        }
        if (!m[mi].readable)
            continue; /* already reported */
        int bad = 0;
        if (m[mi].dlen != e->dlen || memcmp(m[mi].digest, e->digest, e->dlen) != 0) {
            b64_of(m[mi].digest, m[mi].dlen, got);
            b64_of(e->digest, e->dlen, want);
            vt_lines_addf(problems, "%s: %s of the member is %s, RECORD says %s", e->path, EVP_MD_get0_name(e->md),
                          got, want);
            bad = 1;
        }
        if (e->size_bad) {
            vt_lines_addf(problems, "%s: RECORD (line %d) size: expected a decimal integer", e->path, e->line);
            bad = 1;
        } else if (e->has_size && e->size != m[mi].size) {
            vt_lines_addf(problems, "%s: member size %llu, RECORD says %llu", e->path,
                          (unsigned long long)m[mi].size, (unsigned long long)e->size);
            bad = 1;
        }
        if (!bad)
            (*checked)++;
    }
    for (int i = 0; i < nm; i++) {
        if (i + 1 < nm && strcmp(m[i].name, m[i + 1].name) == 0)
            vt_lines_addf(problems, "%s: member appears more than once in the wheel", m[i].name);
        if (!is_record_or_signature(m[i].name, distinfo) && find_rec(rec, n_rec, m[i].name) < 0)
            vt_lines_addf(problems, "%s: in the wheel but not listed in RECORD", m[i].name);
    }
}

/* ---- installed wheel ---- */

/* Script names that entry_points.txt asks installers to generate. */
static int is_entry_point(const char *ep_text, const char *script)
{
    if (!ep_text)
        return 0;
    int in_scripts = 0;
    size_t sl = strlen(script);
    for (const char *line = ep_text; line && *line;) {
        const char *nl = strchr(line, '\n');
        size_t ll = nl ? (size_t)(nl - line) : strlen(line);
        while (ll && (line[ll - 1] == '\r' || line[ll - 1] == ' ' || line[ll - 1] == '\t'))
            ll--;
        const char *p = line;
        while (p < line + ll && (*p == ' ' || *p == '\t'))
            p++;
        size_t pl = (size_t)(line + ll - p);
        if (pl && *p == '[') {
            in_scripts = (pl == 17 && strncmp(p, "[console_scripts]", 17) == 0) ||
                         (pl == 13 && strncmp(p, "[gui_scripts]", 13) == 0);
        } else if (in_scripts && pl > sl && strncmp(p, script, sl) == 0) {
            const char *q = p + sl;
            while (q < line + ll && (*q == ' ' || *q == '\t'))
                q++;
            if (q < line + ll && *q == '=')
                return 1;
        }
        line = nl ? nl + 1 : NULL;
    }
    return 0;
}

static const char *after_first_line(const char *s, size_t n, size_t *rest_len)
{
    const char *nl = memchr(s, '\n', n);
    if (!nl) {
        *rest_len = 0;
        return s + n;
    }
    *rest_len = n - (size_t)(nl + 1 - s);
    return nl + 1;
}

static char *first_line(const char *s, size_t n)
{
    const char *nl = memchr(s, '\n', n);
    size_t l = nl ? (size_t)(nl - s) : n;
    if (l > 200)
        l = 200;
    char *o = malloc(l + 1);
    if (o) {
        memcpy(o, s, l);
        o[l] = '\0';
        for (char *c = o; *c; c++)
            if (*c == '\r')
                *c = '\0';
    }
    return o;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

typedef struct walk {
    const char *root;       /* installed_dir */
    int root_fd;            /* open on it: the walk resolves names from here */
    const char **keys;      /* installed RECORD paths, sorted */
    int n_keys;
    vt_lines *problems;
} walk;

static int is_listed(const walk *w, const char *rel)
{
    return bsearch(&rel, w->keys, (size_t)w->n_keys, sizeof *w->keys, cmp_str) != NULL;
}

/* One entry met by the walk that is not a directory. Every file must be
 * listed: bytecode too. A .pyc is the compilation of its verified source,
 * but that cannot be shown by hashes (marshal output is not reproducible
 * across builds), and Python runs a .pyc whose header matches the source
 * without reading the source: unlisted, it is unverified code. Links are
 * never followed; one RECORD lists is reported by check_installed. */
static void walk_entry(walk *w, const char *rel, const struct stat *st)
{
    if (is_listed(w, rel))
        return;
    if (S_ISLNK(st->st_mode))
        vt_lines_addf(w->problems, "%s: a symbolic link in an installed package directory, not in the installed "
                      "RECORD: expected only the files RECORD lists (links are not followed)", rel);
    else if (ends_with(rel, ".pyc") || ends_with(rel, ".pyo"))
        vt_lines_addf(w->problems, "%s: bytecode on disk in an installed package directory but not in the installed "
                      "RECORD: expected every file listed (a .pyc cannot be verified from its source's hash)", rel);
    else
        vt_lines_addf(w->problems, "%s: on disk in an installed package directory but not in the installed "
                      "RECORD", rel);
}

/* Files on disk under the package directory top that the installed RECORD
 * does not list: something was added after install. Depth-first with an
 * explicit stack of relative paths (no depth limit, no recursion); entries
 * of a directory in name order, so reports come in a stable order. A
 * directory that cannot be read is reported, never skipped. */
static void walk_tree(walk *w, const char *top)
{
    struct stat st;
    if (fstatat(w->root_fd, top, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        vt_lines_addf(w->problems, "%s: installed package directory unreadable: %s", top, strerror(errno));
        return;
    }
    if (!S_ISDIR(st.st_mode)) {
        vt_lines_addf(w->problems, "%s: %s where the installed package directory should be: expected a directory "
                      "(links are not followed)", top, S_ISLNK(st.st_mode) ? "a symbolic link" : "not a directory");
        return;
    }
    char **stack = NULL;
    size_t n = 0, cap = 0;
    char *first = vt_prov_strdup(top);
    if (!first) {
        vt_lines_addf(w->problems, "%s: out of memory walking the installed tree", top);
        return;
    }
    stack = malloc(sizeof *stack * 16);
    if (!stack) {
        free(first);
        vt_lines_addf(w->problems, "%s: out of memory walking the installed tree", top);
        return;
    }
    cap = 16;
    stack[n++] = first;
    while (n) {
        char *rel = stack[--n];
        int fd = openat(w->root_fd, rel, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
        if (!d) {
            vt_lines_addf(w->problems, "%s: directory in the installed tree unreadable: %s: expected every file "
                          "under it checked", rel, strerror(errno));
            if (fd >= 0)
                close(fd);
            free(rel);
            continue;
        }
        char **names = NULL;
        size_t nn = 0, ncap = 0;
        int oom = 0;
        struct dirent *de;
        while (!oom && (de = readdir(d)) != NULL) {
            if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                continue;
            if (nn == ncap) {
                size_t nc = ncap ? ncap * 2 : 64;
                char **nv = realloc(names, sizeof *nv * nc);
                if (!nv) {
                    oom = 1;
                    break;
                }
                names = nv;
                ncap = nc;
            }
            if (!(names[nn] = vt_prov_strdup(de->d_name)))
                oom = 1;
            else
                nn++;
        }
        if (nn) /* names is NULL for an empty directory */
            vt_sort(names, nn, sizeof *names, cmp_str);
        size_t first_dir = n; /* subdirectories pushed here, then reversed */
        for (size_t i = 0; i < nn && !oom; i++) {
            char *child = vt_prov_join(rel, names[i]);
            if (!child) {
                oom = 1;
                break;
            }
            if (fstatat(dirfd(d), names[i], &st, AT_SYMLINK_NOFOLLOW) != 0) {
                vt_lines_addf(w->problems, "%s: in the installed tree but unreadable: %s", child, strerror(errno));
                free(child);
                continue;
            }
            if (!S_ISDIR(st.st_mode)) {
                walk_entry(w, child, &st);
                free(child);
                continue;
            }
            if (n == cap) {
                char **ns = realloc(stack, sizeof *ns * cap * 2);
                if (!ns) {
                    free(child);
                    oom = 1;
                    break;
                }
                stack = ns;
                cap *= 2;
            }
            stack[n++] = child;
        }
        for (size_t i = first_dir, j = n; i + 1 < j; i++, j--) { /* name order when popped */
            char *t = stack[i];
            stack[i] = stack[j - 1];
            stack[j - 1] = t;
        }
        if (oom)
            vt_lines_addf(w->problems, "%s: out of memory walking the installed tree: not every file checked", rel);
        for (size_t i = 0; i < nn; i++)
            free(names[i]);
        free(names);
        closedir(d);
        free(rel);
    }
    free(stack);
}

/* Whether the installed file at path is a symbolic link, or (key given:
 * path is rootreal/key) lies under one. A link is nothing a wheel installs
 * (zip members are files); its bytes live elsewhere and can change while
 * the tree does not. */
static int reached_by_link(const char *path, const char *rootreal, const char *key)
{
    struct stat st;
    if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode))
        return 1;
    char real[PATH_MAX];
    if (!key || !rootreal || !realpath(path, real))
        return 0; /* a missing file is reported when it is hashed */
    size_t rl = strlen(rootreal);
    if (rl == 1) /* the root is "/" */
        rl = 0;
    return strncmp(real, rootreal, rl) != 0 || real[rl] != '/' || strcmp(real + rl + 1, key) != 0;
}

enum { MAP_NONE, MAP_FILE, MAP_SCRIPT, MAP_GENERATED, MAP_INSTALLER };

static void check_installed(const char *dir, const char *distinfo, member *m, int nm, vt_lines *problems,
                            vt_lines *notes, int *checked)
{
    vt_sbuf pb = { 0 };
    vt_sbuf_printf(&pb, "%s/%s/RECORD", dir, distinfo);
    char *rec_path = vt_sbuf_take(&pb);
    char *text = NULL;
    size_t len = 0;
    int e = rec_path ? vt_prov_read_file(rec_path, RECORD_MAX_BYTES, &text, &len) : ENOMEM;
    if (e) {
        vt_lines_addf(problems, "%s: installed RECORD unreadable: %s", rec_path ? rec_path : distinfo, vt_prov_strerror(rec_path, e));
        free(rec_path);
        return;
    }
    vt_record_row *rows = NULL;
    int n_rows = 0, bad_line = vt_record_parse(text, len, &rows, &n_rows);
    free(text);
    if (bad_line) {
        if (bad_line < 0)
            vt_lines_addf(problems, "%s: out of memory", rec_path);
        else
            vt_lines_addf(problems, "%s: line %d: expected path,hash,size", rec_path, bad_line);
        free(rec_path);
        return;
    }
    rec_entry *rec = record_entries(rows, n_rows);
    const char **keys = calloc((size_t)n_rows + 1, sizeof *keys);
    char **key_store = calloc((size_t)n_rows + 1, sizeof *key_store);
    if (!rec || !keys || !key_store) {
        vt_lines_addf(problems, "%s: out of memory", rec_path);
        goto done;
    }

    size_t stem = strlen(distinfo) - strlen(".dist-info");
    int ep_i = -1;
    {
        vt_sbuf eb = { 0 };
        vt_sbuf_printf(&eb, "%s/entry_points.txt", distinfo);
        char *ep = vt_sbuf_take(&eb);
        ep_i = ep ? find_member(m, nm, ep) : -1;
        free(ep);
    }
    const char *ep_text = ep_i >= 0 ? m[ep_i].body : NULL;
    char rootreal[PATH_MAX];
    if (!realpath(dir, rootreal))
        rootreal[0] = '\0';
    int n_keys = 0, n_meta = 0, n_bytecode = 0;

    for (int i = 0; i < n_rows; i++) {
        rec_entry *r = &rec[i];
        /* pip --target installs scripts through a scratch prefix and records
         * them as "../../bin/x": the logical path drops the leading "../". */
        const char *key = r->path;
        while (starts_with(key, "../"))
            key += 3;
        int escaped = key != r->path;
        if (!escaped)
            keys[n_keys++] = r->path;
        if (is_record_or_signature(key, distinfo))
            continue;
        if (r->hash_state == HASH_NONE) {
            if (ends_with(key, ".pyc") || ends_with(key, ".pyo"))
                n_bytecode++; /* compiled at install: not in the wheel, no hash */
            else
                vt_lines_addf(problems, "%s: installed RECORD lists it without a hash", r->path);
            continue;
        }
        if (r->hash_state != HASH_OK) {
            vt_lines_addf(problems, "%s: installed RECORD hash '%s': expected sha256=<urlsafe base64 digest>",
                          r->path, r->hash_text);
            continue;
        }

        /* Which wheel member it came from. */
        int kind = MAP_NONE, mi = -1;
        vt_sbuf cb = { 0 };
        if ((mi = find_member(m, nm, key)) >= 0)
            kind = MAP_FILE;
        const char *sname = starts_with(key, "bin/") ? key + 4 : starts_with(key, "Scripts/") ? key + 8 : NULL;
        if (kind == MAP_NONE && sname) {
            vt_sbuf_printf(&cb, "%.*s.data/scripts/%s", (int)stem, distinfo, sname);
            if (cb.p && (mi = find_member(m, nm, cb.p)) >= 0)
                kind = MAP_SCRIPT;
            else if (is_entry_point(ep_text, sname))
                kind = MAP_GENERATED;
        }
        static const char *const data_dirs[] = { "purelib", "platlib", "data" };
        for (size_t k = 0; kind == MAP_NONE && k < sizeof data_dirs / sizeof *data_dirs; k++) {
            cb.n = 0;
            vt_sbuf_printf(&cb, "%.*s.data/%s/%s", (int)stem, distinfo, data_dirs[k], key);
            if (cb.p && (mi = find_member(m, nm, cb.p)) >= 0)
                kind = MAP_FILE;
        }
        if (kind == MAP_NONE && strstr(key, "include/")) { /* headers land under include/.../<name>/ */
            cb.n = 0;
            vt_sbuf_printf(&cb, "%.*s.data/headers/", (int)stem, distinfo);
            for (int k = 0; cb.p && k < nm && kind == MAP_NONE; k++)
                if (starts_with(m[k].name, cb.p) && strlen(key) > strlen(m[k].name + cb.n) &&
                    ends_with(key, m[k].name + cb.n) && key[strlen(key) - strlen(m[k].name + cb.n) - 1] == '/') {
                    mi = k;
                    kind = MAP_FILE;
                }
        }
        free(cb.p);
        if (kind == MAP_NONE && starts_with(key, distinfo) && key[strlen(distinfo)] == '/') {
            const char *b = key + strlen(distinfo) + 1;
            if (strcmp(b, "INSTALLER") == 0 || strcmp(b, "REQUESTED") == 0 || strcmp(b, "direct_url.json") == 0)
                kind = MAP_INSTALLER;
        }

        /* Its bytes on disk, hashed as the installed RECORD and the wheel
         * RECORD name them (one pass). */
        /* An escaped path ("../../bin/x") is looked for inside the directory
         * first (the --target layout), then where it literally points (an
         * installed site-packages: <prefix>/bin/x). */
        char *path = vt_prov_join(dir, key);
        struct stat st;
        if (path && escaped && stat(path, &st) != 0) {
            free(path);
            path = vt_prov_join(dir, r->path);
        }
        if (!path) {
            vt_lines_addf(problems, "%s: out of memory", r->path);
            continue;
        }
        if (reached_by_link(path, rootreal[0] ? rootreal : NULL, escaped ? NULL : key)) {
            vt_lines_addf(problems, "%s: installed file reached through a symbolic link: expected a regular file at "
                          "that path (wheels install no links; links are not followed)", r->path);
            if (mi >= 0)
                m[mi].installed = 1;
            free(path);
            continue;
        }
        vt_prov_digest d = { .n_md = 0 };
        int ir = vt_prov_digest_add(&d, r->md);
        int iw = mi >= 0 && m[mi].readable ? vt_prov_digest_add(&d, m[mi].md) : -1;
        char *body = NULL;
        size_t body_len = 0;
        if (kind == MAP_SCRIPT) {
            e = vt_prov_read_file(path, KEEP_MAX_BYTES, &body, &body_len);
            vt_prov_stream s;
            if (!e && !(e = vt_prov_stream_init(&s, &d))) {
                if (vt_prov_stream_update(&s, body, body_len) || vt_prov_stream_final(&s))
                    e = EIO;
                vt_prov_stream_free(&s);
            }
        } else {
            e = vt_prov_digest_path(path, &d, NULL, NULL, 0);
        }
        if (mi >= 0)
            m[mi].installed = 1;
        if (e) { /* a FIFO or a directory there is told as what it is */
            vt_lines_addf(problems, "%s: installed file %s: %s", r->path,
                          e == ENOENT ? "missing" : "unreadable", vt_prov_strerror(path, e));
            free(path);
            free(body);
            continue;
        }
        free(path);
        int rec_ok = d.len[ir] == r->dlen && memcmp(d.out[ir], r->digest, r->dlen) == 0 &&
                     (!r->has_size || (!r->size_bad && r->size == d.size));
        int wheel_ok = iw >= 0 && d.len[iw] == m[mi].dlen && memcmp(d.out[iw], m[mi].digest, m[mi].dlen) == 0 &&
                       d.size == m[mi].size;
        switch (kind) {
        case MAP_FILE:
            if (!rec_ok && !wheel_ok)
                vt_lines_addf(problems, "%s: modified after install: differs from the installed RECORD and from "
                              "wheel member %s", r->path, m[mi].name);
            else if (!rec_ok)
                vt_lines_addf(problems, "%s: differs from the installed RECORD (but equals wheel member %s)",
                              r->path, m[mi].name);
            else if (!wheel_ok)
                vt_lines_addf(problems, "%s: differs from wheel member %s (the installed RECORD agrees with the "
                              "file: rewritten after install)", r->path, m[mi].name);
            else
                (*checked)++;
            break;
        case MAP_SCRIPT: {
            if (wheel_ok && rec_ok) {
                (*checked)++;
                break;
            }
            if (!rec_ok) {
                vt_lines_addf(problems, "%s: modified after install: differs from the installed RECORD", r->path);
                break;
            }
            if (!m[mi].body) {
                vt_lines_addf(problems, "%s: differs from wheel script %s (too large to compare)", r->path,
                              m[mi].name);
                break;
            }
            /* Installers rewrite a "#!python" first line to the interpreter
             * they install for (wheel spec); the rest must be the member's. */
            size_t wl, il;
            const char *wr = after_first_line(m[mi].body, m[mi].body_len, &wl);
            const char *ir2 = after_first_line(body, body_len, &il);
            if (starts_with(m[mi].body, "#!python") && wl == il && memcmp(wr, ir2, wl) == 0) {
                char *from = first_line(m[mi].body, m[mi].body_len), *to = first_line(body, body_len);
                vt_lines_addf(notes, "%s: rewritten script: shebang '%s' -> '%s' at install; the rest equals "
                              "wheel member %s", r->path, from ? from : "", to ? to : "", m[mi].name);
                free(from);
                free(to);
                (*checked)++;
            } else {
                vt_lines_addf(problems, "%s: differs from wheel script %s beyond the rewritable shebang line",
                              r->path, m[mi].name);
            }
            break;
        }
        case MAP_GENERATED:
            if (rec_ok)
                vt_lines_addf(notes, "%s: entry-point script generated at install (named in entry_points.txt; "
                              "checked against the installed RECORD only)", r->path);
            else
                vt_lines_addf(problems, "%s: modified after install: differs from the installed RECORD", r->path);
            break;
        case MAP_INSTALLER:
            if (rec_ok)
                n_meta++;
            else
                vt_lines_addf(problems, "%s: modified after install: differs from the installed RECORD", r->path);
            break;
        default:
            vt_lines_addf(problems, "%s: installed file not from the wheel (no member it maps to)", r->path);
        }
        free(body);
    }
    if (n_meta)
        vt_lines_addf(notes, "%d installer metadata file(s) in %s (INSTALLER, REQUESTED, direct_url.json) are not "
                      "wheel members: checked against the installed RECORD only", n_meta, distinfo);
    if (n_bytecode)
        vt_lines_addf(notes, "%d bytecode file(s) compiled at install listed without hash: not checked",
                      n_bytecode);

    for (int i = 0; i < nm; i++)
        if (!m[i].installed && !is_record_or_signature(m[i].name, distinfo))
            vt_lines_addf(problems, "%s: wheel member not installed (no installed RECORD entry maps to it)",
                          m[i].name);

    /* Directories this distribution owns: its dist-info and each regular
     * package (an __init__.py it installed). Namespace directories may be
     * shared with other distributions and are not walked. */
    vt_sort(keys, (size_t)n_keys, sizeof *keys, cmp_str);
    int root_fd;
    vt_error derr;
    if (vt_input_opendir(dir, NULL, &root_fd, &derr))
        vt_lines_addf(problems, "installed directory unreadable: %s", derr.msg);
    walk w = { dir, root_fd, keys, n_keys, problems };
    int n_top = 0;
    for (int i = 0; i < n_keys; i++) {
        const char *slash = strchr(keys[i], '/');
        if (!slash)
            continue;
        size_t tl = (size_t)(slash - keys[i]);
        char *top = malloc(tl + 1);
        if (!top)
            continue;
        memcpy(top, keys[i], tl);
        top[tl] = '\0';
        int dup = 0;
        for (int k = 0; k < n_top && !dup; k++)
            dup = strcmp(key_store[k], top) == 0;
        vt_sbuf ib = { 0 };
        vt_sbuf_printf(&ib, "%s/__init__.py", top);
        char *init = vt_sbuf_take(&ib);
        const char *ik = init;
        int owned = strcmp(top, distinfo) == 0 ||
                    (init && bsearch(&ik, keys, (size_t)n_keys, sizeof *keys, cmp_str) != NULL);
        free(init);
        if (dup || !owned) {
            free(top);
            continue;
        }
        key_store[n_top++] = top;
        if (root_fd >= 0)
            walk_tree(&w, top);
    }
    if (root_fd >= 0)
        close(root_fd);

done:
    for (int i = 0; key_store && key_store[i]; i++)
        free(key_store[i]);
    free(key_store);
    free(keys);
    free(rec);
    vt_record_free(rows, n_rows);
    free(rec_path);
}

int vt_package_verify_wheel(const char *wheel_path, const char *installed_dir, vt_package_report *out,
                            vt_error *err)
{
    memset(out, 0, sizeof *out);
    out->kind = vt_prov_strdup("wheel");
    out->file = vt_prov_strdup(wheel_path);
    if (vt_sha256_file(wheel_path, &out->sha256, NULL, err) != VT_OK) {
        vt_package_report_free(out);
        return VT_EINPUT;
    }
    /* The zip's own structure first: the member hashes below are what
     * libarchive reads, and they vouch for every reader only when central
     * directory, local headers and data agree (zip_check.c). */
    vt_lines problems = { 0 }, notes = { 0 };
    if (vt_prov_zip_check(wheel_path, &problems, err) != VT_OK) {
        vt_prov_lines_free(problems.v, problems.n);
        vt_package_report_free(out);
        return VT_EINPUT;
    }
    if (problems.n || problems.oom) {
        /* Readers would disagree on what the members hold: nothing read
         * through one of them (libarchive) would prove anything. */
        int rc = finish_report(out, &problems, &notes, err);
        vt_prov_lines_free(problems.v, problems.n);
        vt_prov_lines_free(notes.v, notes.n);
        if (rc != VT_OK)
            vt_package_report_free(out);
        return rc;
    }
    char *distinfo = NULL, *text = NULL;
    size_t len = 0;
    if (read_record(wheel_path, &distinfo, &text, &len, err) != VT_OK) {
        vt_prov_lines_free(problems.v, problems.n);
        vt_package_report_free(out);
        return VT_EINPUT;
    }
    vt_record_row *rows = NULL;
    int n_rows = 0, bad_line = vt_record_parse(text, len, &rows, &n_rows);
    free(text);
    int rc = VT_OK;
    if (bad_line < 0)
        rc = vt_error_set(err, VT_EINPUT, "%s: out of memory reading %s/RECORD", wheel_path, distinfo);
    else if (bad_line)
        rc = vt_error_set(err, VT_EINPUT, "%s: %s/RECORD: line %d: expected path,hash,size (CSV)", wheel_path,
                          distinfo, bad_line);
    rec_entry *rec = rc == VT_OK ? record_entries(rows, n_rows) : NULL;
    if (rc == VT_OK && !rec)
        rc = vt_error_set(err, VT_EINPUT, "%s: out of memory", wheel_path);
    member *m = NULL;
    int nm = 0;
    if (rc == VT_OK)
        rc = read_members(wheel_path, distinfo, rec, n_rows, &m, &nm, &problems, err);
    if (rc == VT_OK) {
        check_wheel_record(distinfo, rec, n_rows, m, nm, &problems, &out->members_checked);
        if (installed_dir) {
            struct stat st;
            if (stat(installed_dir, &st) != 0 || !S_ISDIR(st.st_mode))
                rc = vt_error_set(err, VT_EINPUT, "%s: expected an installed directory", installed_dir);
            else
                check_installed(installed_dir, distinfo, m, nm, &problems, &notes, &out->installed_checked);
        }
    }
    if (rc == VT_OK)
        rc = finish_report(out, &problems, &notes, err);
    vt_prov_lines_free(problems.v, problems.n);
    vt_prov_lines_free(notes.v, notes.n);
    free_members(m, nm);
    free(rec);
    vt_record_free(rows, n_rows);
    free(distinfo);
    if (rc != VT_OK)
        vt_package_report_free(out);
    return rc;
}

/* ---- npm ---- */

typedef struct lock_pkg {
    const char *name, *version, *integrity;
} lock_pkg;

/* Strict vt.npm-lock/1 reading; entries point into *root. */
static int read_lock(const char *path, cJSON **root_out, lock_pkg **pkgs_out, int *n_out, vt_error *err)
{
    char *text;
    size_t len;
    *root_out = NULL;
    *pkgs_out = NULL;
    *n_out = 0;
    int e = vt_prov_read_file(path, RECORD_MAX_BYTES, &text, &len);
    if (e)
        return vt_error_set(err, VT_EINPUT, "%s: cannot read: %s", path, vt_prov_strerror(path, e));
    cJSON *root = vt_json_parse(text, len, path, err);
    free(text);
    if (!root)
        return VT_EINPUT;
    cJSON *lf = NULL, *pk = NULL;
    int rc = VT_OK;
    if (!cJSON_IsObject(root))
        rc = vt_error_set(err, VT_EINPUT, "%s: top level: expected a JSON object", path);
    if (rc == VT_OK && !(lf = vt_prov_json_field(root, "lockfile", path, "", err)))
        rc = VT_EINPUT;
    if (rc == VT_OK && (!cJSON_IsString(lf) || strcmp(lf->valuestring, "vt.npm-lock/1") != 0))
        rc = vt_error_set(err, VT_EINPUT, "%s: lockfile: expected \"vt.npm-lock/1\"", path);
    if (rc == VT_OK && !(pk = vt_prov_json_field(root, "packages", path, "", err)))
        rc = VT_EINPUT;
    if (rc == VT_OK && !cJSON_IsArray(pk))
        rc = vt_error_set(err, VT_EINPUT, "%s: packages: expected an array", path);
    int n = rc == VT_OK ? cJSON_GetArraySize(pk) : 0;
    lock_pkg *pkgs = rc == VT_OK ? calloc((size_t)n + 1, sizeof *pkgs) : NULL;
    if (rc == VT_OK && !pkgs)
        rc = vt_error_set(err, VT_EINPUT, "%s: out of memory", path);
    int i = 0;
    for (cJSON *p = rc == VT_OK ? pk->child : NULL; p && rc == VT_OK; p = p->next, i++) {
        char where[48];
        snprintf(where, sizeof where, "packages[%d]", i);
        if (!cJSON_IsObject(p)) {
            rc = vt_error_set(err, VT_EINPUT, "%s: %s: expected an object {name, version, integrity}", path, where);
            break;
        }
        static const char *const keys[] = { "name", "version", "integrity" };
        const char *vals[3];
        for (int k = 0; k < 3 && rc == VT_OK; k++) {
            cJSON *f = vt_prov_json_field(p, keys[k], path, where, err);
            if (!f)
                rc = VT_EINPUT;
            else if (!cJSON_IsString(f) || !f->valuestring[0])
                rc = vt_error_set(err, VT_EINPUT, "%s: %s.%s: expected a non-empty string", path, where, keys[k]);
            else
                vals[k] = f->valuestring;
        }
        if (rc == VT_OK)
            pkgs[i] = (lock_pkg){ vals[0], vals[1], vals[2] };
    }
    if (rc != VT_OK) {
        free(pkgs);
        cJSON_Delete(root);
        return rc;
    }
    *root_out = root;
    *pkgs_out = pkgs;
    *n_out = n;
    return VT_OK;
}

/* Does the SRI string (space-separated "alg-base64[?opts]") hold a sha512
 * equal to digest? *has512 tells whether it holds any sha512 at all. */
static int sri_matches(const char *sri, const unsigned char *digest, int *has512)
{
    *has512 = 0;
    for (const char *p = sri; *p;) {
        while (*p == ' ' || *p == '\t' || *p == '\n')
            p++;
        const char *end = p;
        while (*end && *end != ' ' && *end != '\t' && *end != '\n')
            end++;
        if (end - p > 7 && strncmp(p, "sha512-", 7) == 0) {
            *has512 = 1;
            const char *q = memchr(p, '?', (size_t)(end - p));
            const char *b = p + 7, *be = q ? q : end;
            unsigned char d[EVP_MAX_MD_SIZE];
            if (vt_prov_b64_decode(b, (size_t)(be - b), d, sizeof d) == 64 && memcmp(d, digest, 64) == 0)
                return 1;
        }
        p = end;
    }
    return 0;
}

typedef struct loaded_obj {
    const char *path;     /* as given */
    char *member;         /* "package/<relative path>", NULL when not under the root */
    int status;           /* errno of hashing the loaded file */
    unsigned char sha[32];
    uint64_t size;
    int found;            /* times the member was seen */
    unsigned char msha[32];
    uint64_t msize;
    int mreadable;
} loaded_obj;

static int cmp_loaded(const void *a, const void *b)
{
    const loaded_obj *x = a, *y = b;
    if (!x->member || !y->member)
        return !x->member - !y->member;
    return strcmp(x->member, y->member);
}

int vt_package_verify_npm(const char *tarball_path, const char *lock_path, const char *name,
                          const char *pkg_root, const char *const *loaded_paths, int n_loaded,
                          vt_package_report *out, vt_error *err)
{
    memset(out, 0, sizeof *out);
    if (!name || !*name)
        return vt_error_set(err, VT_EINPUT, "name: expected the npm package name");
    if (n_loaded > 0 && !pkg_root)
        return vt_error_set(err, VT_EINPUT, "pkg_root: expected the unpacked package directory for loaded objects");
    if (pkg_root) { /* a directory, not a FIFO or a file (issue 19) */
        int dfd;
        if (vt_input_opendir(pkg_root, NULL, &dfd, err))
            return VT_EINPUT;
        close(dfd);
    }
    cJSON *lock_root = NULL;
    lock_pkg *pkgs = NULL;
    int n_pkgs = 0;
    if (read_lock(lock_path, &lock_root, &pkgs, &n_pkgs, err) != VT_OK)
        return VT_EINPUT;
    int rc = VT_OK, n_named = 0;
    for (int i = 0; i < n_pkgs; i++)
        n_named += strcmp(pkgs[i].name, name) == 0;
    if (!n_named)
        rc = vt_error_set(err, VT_EINPUT, "%s: packages: expected an entry named \"%s\", none", lock_path, name);

    out->kind = vt_prov_strdup("npm");
    out->file = vt_prov_strdup(tarball_path);
    vt_lines problems = { 0 }, notes = { 0 };
    char rootreal[PATH_MAX];
    loaded_obj *lo = NULL;
    char *pj = NULL;
    size_t pj_len = 0;

    /* The tarball: sha256 (report) and sha512 (integrity) in one read. */
    vt_prov_digest td = { .md = { EVP_sha256(), EVP_sha512() }, .n_md = 2 };
    int e = rc == VT_OK ? vt_prov_digest_path(tarball_path, &td, NULL, NULL, 0) : 0;
    if (e)
        rc = vt_error_set(err, VT_EINPUT, "%s: cannot read: %s", tarball_path, vt_prov_strerror(tarball_path, e));
    if (rc == VT_OK) {
        vt_prov_hex(td.out[0], 32, out->sha256.hex);
        char b64[96];
        vt_prov_b64(td.out[1], 64, 0, b64);
        vt_sbuf ib = { 0 };
        vt_sbuf_printf(&ib, "sha512-%s", b64);
        out->computed_integrity = vt_sbuf_take(&ib);
    }
    if (rc == VT_OK && n_loaded > 0 && !realpath(pkg_root, rootreal))
        rc = vt_error_set(err, VT_EINPUT, "%s: expected the unpacked package directory: %s", pkg_root,
                          strerror(errno));

    /* Loaded objects: where each sits in the package, and its bytes. */
    if (rc == VT_OK && n_loaded > 0) {
        lo = calloc((size_t)n_loaded, sizeof *lo);
        vt_prov_digest *ld = calloc((size_t)n_loaded, sizeof *ld);
        int *st = calloc((size_t)n_loaded, sizeof *st);
        if (!lo || !ld || !st) {
            rc = vt_error_set(err, VT_EINPUT, "%s: out of memory", tarball_path);
        } else {
            size_t rl = strlen(rootreal);
            for (int i = 0; i < n_loaded; i++) {
                lo[i].path = loaded_paths[i];
                ld[i].md[0] = EVP_sha256();
                ld[i].n_md = 1;
                char real[PATH_MAX];
                if (!realpath(loaded_paths[i], real))
                    continue; /* reported as unreadable below */
                int root_is_slash = rl == 1;
                if (strncmp(real, rootreal, rl) == 0 && (root_is_slash || real[rl] == '/')) {
                    vt_sbuf mb = { 0 };
                    vt_sbuf_printf(&mb, "package/%s", real + rl + (root_is_slash ? 0 : 1));
                    lo[i].member = vt_sbuf_take(&mb);
                }
            }
            vt_prov_digest_paths(loaded_paths, n_loaded, 0, ld, st);
            for (int i = 0; i < n_loaded; i++) {
                lo[i].status = st[i];
                if (!st[i]) {
                    memcpy(lo[i].sha, ld[i].out[0], 32);
                    lo[i].size = ld[i].size;
                }
            }
            vt_sort(lo, (size_t)n_loaded, sizeof *lo, cmp_loaded);
        }
        free(ld);
        free(st);
    }

    /* One pass over the tarball: package.json and the loaded objects' members. */
    if (rc == VT_OK) {
        struct archive *a = open_archive(tarball_path, 0, err);
        if (!a)
            rc = VT_EINPUT;
        struct archive_entry *ent;
        int r = ARCHIVE_EOF;
        int k = 0;
        while (rc == VT_OK && next_header(a, &ent, &r)) {
            const char *mn = entry_name(ent);
            k++;
            if (!mn) {
                vt_lines_addf(&problems, "%s: member #%d: name not readable: expected a path", tarball_path, k);
                continue;
            }
            /* npm strips the first component and writes the rest under the
             * package directory: these would land outside it. */
            if (unsafe_path(mn))
                vt_lines_addf(&problems, "%s: member %s: an absolute path, a backslash or a '..' component: expected "
                              "a relative path inside the package", tarball_path, mn);
            if (strcmp(mn, "package/package.json") == 0 && archive_entry_filetype(ent) == AE_IFREG) {
                vt_sbuf b = { 0 };
                vt_prov_digest d = { .md = { EVP_sha256() }, .n_md = 1 };
                int serr = 0, nomem = 0;
                int hr = hash_member(a, &d, &b, &serr, &nomem);
                if (nomem) {
                    free(b.p);
                    rc = vt_error_set(err, VT_EINPUT, "%s: package/package.json: out of memory", tarball_path);
                    continue;
                }
                if (hr == ARCHIVE_OK && !serr && !b.oom) {
                    free(pj);
                    pj_len = b.n;
                    pj = vt_sbuf_take(&b);
                } else {
                    free(b.p);
                }
                continue;
            }
            /* All loaded objects naming this member (sorted: contiguous). */
            loaded_obj key = { .member = (char *)mn };
            loaded_obj *hit = lo ? bsearch(&key, lo, (size_t)n_loaded, sizeof *lo, cmp_loaded) : NULL;
            if (!hit)
                continue;
            while (hit > lo && hit[-1].member && strcmp(hit[-1].member, mn) == 0)
                hit--;
            unsigned char sha[32] = { 0 };
            uint64_t size = 0;
            int readable = 0;
            if (archive_entry_filetype(ent) == AE_IFREG) {
                vt_prov_digest d = { .md = { EVP_sha256() }, .n_md = 1 };
                int serr = 0, nomem = 0;
                int ar = hash_member(a, &d, NULL, &serr, &nomem);
                if (ar == ARCHIVE_FATAL) {
                    rc = vt_error_set(err, VT_EINPUT, "%s: expected a readable gzip tarball: %s", tarball_path,
                                      archive_error_string(a) ? archive_error_string(a) : "fatal error");
                    break;
                }
                if (ar == ARCHIVE_OK && !serr) {
                    readable = 1;
                    memcpy(sha, d.out[0], 32);
                    size = d.size;
                }
            }
            /* Like extraction, the last copy of a duplicated member wins. */
            for (loaded_obj *h = hit; h < lo + n_loaded && h->member && strcmp(h->member, mn) == 0; h++) {
                h->found++;
                h->mreadable = readable;
                memcpy(h->msha, sha, 32);
                h->msize = size;
            }
        }
        if (rc == VT_OK && r != ARCHIVE_EOF)
            rc = vt_error_set(err, VT_EINPUT, "%s: expected a readable gzip tarball: %s", tarball_path,
                              archive_error_string(a) ? archive_error_string(a) : "unknown error");
        if (a)
            archive_read_free(a);
    }

    /* Which lock entry: the one for the version the tarball says it is. */
    const lock_pkg *chosen = NULL;
    if (rc == VT_OK) {
        const char *pj_name = NULL, *pj_version = NULL;
        vt_sbuf where = { 0 };
        vt_sbuf_printf(&where, "%s: package/package.json", tarball_path);
        vt_error perr;
        vt_error_clear(&perr);
        vt_json_fault pf;
        cJSON *pjj = pj ? vt_json_parse_fault(pj, pj_len, &pf) : NULL;
        if (pj && !pjj)
            vt_json_fault_error(&pf, where.p ? where.p : "package/package.json", &perr);
        free(where.p);
        if (pj && !pjj && (pf.kind == VT_JSON_NOMEM || where.oom)) /* an error, not a finding */
            rc = vt_error_set(err, VT_EINPUT, "%s: package/package.json: out of memory", tarball_path);
        else if (!pj)
            vt_lines_addf(&problems, "%s: no package/package.json member", tarball_path);
        else if (!pjj)
            vt_lines_addf(&problems, "%s", perr.msg);
        if (pjj) {
            cJSON *jn = cJSON_GetObjectItemCaseSensitive(pjj, "name");
            cJSON *jv = cJSON_GetObjectItemCaseSensitive(pjj, "version");
            pj_name = cJSON_IsString(jn) ? jn->valuestring : NULL;
            pj_version = cJSON_IsString(jv) ? jv->valuestring : NULL;
            if (!pj_name || strcmp(pj_name, name) != 0)
                vt_lines_addf(&problems, "%s: package/package.json name is \"%s\", expected \"%s\"", tarball_path,
                              pj_name ? pj_name : "(none)", name);
        }
        for (int i = 0; i < n_pkgs && !chosen; i++)
            if (strcmp(pkgs[i].name, name) == 0 && pj_version && strcmp(pkgs[i].version, pj_version) == 0)
                chosen = &pkgs[i];
        if (!chosen) {
            for (int i = 0; i < n_pkgs && !chosen; i++)
                if (strcmp(pkgs[i].name, name) == 0)
                    chosen = &pkgs[i];
            if (pjj)
                vt_lines_addf(&problems, "%s: package/package.json version is \"%s\", the lock pins %s@%s",
                              tarball_path, pj_version ? pj_version : "(none)", name, chosen->version);
        }
        out->integrity = vt_prov_strdup(chosen->integrity);
        int has512 = 0;
        if (!sri_matches(chosen->integrity, td.out[1], &has512)) {
            if (!has512)
                vt_lines_addf(&problems, "%s: %s@%s integrity '%s' holds no sha512 to compare", lock_path,
                              chosen->name, chosen->version, chosen->integrity);
            else
                vt_lines_addf(&problems, "%s: integrity %s differs from the lock's %s for %s@%s", tarball_path,
                              out->computed_integrity ? out->computed_integrity : "?", chosen->integrity,
                              chosen->name, chosen->version);
        }
        cJSON_Delete(pjj);

        for (int i = 0; i < n_loaded; i++) {
            loaded_obj *o = &lo[i];
            char a[65], b[65];
            if (o->status) {
                vt_lines_addf(&problems, "%s: loaded object unreadable: %s", o->path, strerror(o->status));
            } else if (!o->member) {
                vt_lines_addf(&problems, "%s: loaded object not under the package root %s", o->path, pkg_root);
            } else if (!o->found) {
                vt_lines_addf(&problems, "%s: loaded object has no tarball member %s", o->path, o->member);
            } else if (!o->mreadable) {
                vt_lines_addf(&problems, "%s: tarball member %s is not a readable regular file", o->path,
                              o->member);
            } else if (o->size != o->msize || memcmp(o->sha, o->msha, 32) != 0) {
                vt_prov_hex(o->sha, 32, a);
                vt_prov_hex(o->msha, 32, b);
                vt_lines_addf(&problems, "%s: loaded object differs from tarball member %s (sha256 %s size %llu, "
                              "member sha256 %s size %llu)", o->path, o->member, a, (unsigned long long)o->size,
                              b, (unsigned long long)o->msize);
            } else {
                if (o->found > 1)
                    vt_lines_addf(&problems, "%s: tarball member %s appears %d times", o->path, o->member,
                                  o->found);
                else
                    out->members_checked++;
            }
        }
        rc = finish_report(out, &problems, &notes, err);
    }
    for (int i = 0; lo && i < n_loaded; i++)
        free(lo[i].member);
    free(lo);
    free(pj);
    free(pkgs);
    cJSON_Delete(lock_root);
    vt_prov_lines_free(problems.v, problems.n);
    vt_prov_lines_free(notes.v, notes.n);
    if (rc != VT_OK)
        vt_package_report_free(out);
    return rc;
}
