/* vt-seal: the handle and `create`.
 *
 * create reads the tree twice: once to hash every file (in parallel, through
 * provenance's vt_sha256_files_each) because the manifest that lists the
 * hashes comes first in the archive, once to archive it. A file whose
 * identity, size or times change between the walk and the end of its
 * archiving is refused ("changed while sealing"), as GNU tar warns. */
#include "seal_internal.h"
#include "../common/vt_input.h"

#include "../common/vt_progress.h"
#include "../common/vt_publish.h"
#include "../provenance/provenance.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

enum { READ_CHUNK = 1 << 20 };

/* ---- handle ---- */

void vt_seal_limits_default(vt_seal_limits *l)
{
    l->max_entries = VT_SEAL_DEFAULT_MAX_ENTRIES;
    l->max_total_size = VT_SEAL_DEFAULT_MAX_TOTAL_SIZE;
    l->max_ratio = VT_SEAL_DEFAULT_MAX_RATIO;
}

vt_seal *vt_seal_new(void)
{
    vt_seal *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    vt_seal_limits_default(&s->limits);
    s->level = 6;
    return s;
}

void vt_seal_free(vt_seal *s)
{
    if (!s)
        return;
    vt_seal_checked_free(s);
    free(s->seal_path);
    free(s);
}

int vt_seal_set_limits(vt_seal *s, const vt_seal_limits *l, vt_error *err)
{
    if (l->max_entries < 1 || l->max_total_size < 1 || l->max_ratio < 1)
        return vt_error_set(err, VT_EINPUT, "vt_seal_set_limits: every limit must be at least 1");
    s->limits = *l;
    return VT_OK;
}

int vt_seal_set_level(vt_seal *s, int level, vt_error *err)
{
    if (level < 1 || level > 9)
        return vt_error_set(err, VT_EINPUT, "gzip level %d: expected 1..9", level);
    s->level = level;
    return VT_OK;
}

int vt_seal_set_threads(vt_seal *s, int n, vt_error *err)
{
    if (n < 0 || n > 256)
        return vt_error_set(err, VT_EINPUT, "threads %d: expected 0 (one per CPU) .. 256", n);
    s->threads = n;
    return VT_OK;
}

void vt_seal_set_attestation(vt_seal *s, int on) { s->attestation = on; }
void vt_seal_set_overwrite(vt_seal *s, int on) { s->overwrite = on; }
void vt_seal_set_progress(vt_seal *s, struct vt_progress *p) { s->progress = p; }

int vt_seal_set_seal_path(vt_seal *s, const char *path, vt_error *err)
{
    char *p = path ? strdup(path) : NULL;
    if (path && !p)
        return vt_error_set(err, VT_EINPUT, "out of memory");
    free(s->seal_path);
    s->seal_path = p;
    return VT_OK;
}

const vt_seal_info *vt_seal_result(const vt_seal *s) { return &s->info; }

void vt_seal_checked_free(vt_seal *s)
{
    vt_seal_manifest_free(&s->checked);
    s->n_checked = 0;
}

size_t vt_seal_checked(const vt_seal *s, size_t *listed)
{
    if (listed)
        *listed = s->checked.n;
    return s->n_checked;
}

int vt_seal_checked_entry(const vt_seal *s, size_t i, vt_seal_entry *out)
{
    if (i >= s->checked.n)
        return 0;
    const vt_seal_member *m = &s->checked.m[i];
    *out = (vt_seal_entry){ m->path, m->is_dir, m->mode, m->is_dir ? 0 : m->size, m->is_dir ? "" : m->sha256 };
    return 1;
}

int vt_seal_nthreads(const vt_seal *s)
{
    if (s->threads > 0)
        return s->threads;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 64 ? 64 : (int)n;
}

/* ---- create ---- */

typedef struct entry {
    char *path; /* relative; directories end in '/' */
    int is_dir;
    unsigned mode;
    struct stat st;
    char sha256[65];
} entry;

typedef struct creator {
    vt_seal *s;
    const char *dir, *archive_path;
    char archive_name[256];
    int rootfd;
    entry *e;
    size_t n, cap, n_files;
    vt_nameset *folded;
    char *manifest;
    size_t manifest_len;
    vt_sha256_hex manifest_sha;
    uint64_t data_bytes;
    unsigned char *buf;
    vt_gzw *gz;
    vt_error wio; /* the gzip writer's error, seen through libarchive */
    int wio_failed;
    int archive_done;
    char archive_sha[65];
    uint64_t archive_size;
} creator;

static const char *kind_of(mode_t m)
{
    return S_ISLNK(m) ? "symlink" : S_ISCHR(m) ? "character device" : S_ISBLK(m) ? "block device"
         : S_ISFIFO(m) ? "FIFO" : S_ISSOCK(m) ? "socket" : "special file";
}

static int add_entry(creator *c, char *path, int is_dir, const struct stat *st, vt_error *err)
{
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 256;
        entry *e = realloc(c->e, cap * sizeof *e);
        if (!e) {
            free(path);
            return vt_error_set(err, VT_EINPUT, "%s: out of memory", c->dir);
        }
        c->e = e;
        c->cap = cap;
    }
    entry *e = &c->e[c->n++];
    memset(e, 0, sizeof *e);
    e->path = path;
    e->is_dir = is_dir;
    e->st = *st;
    e->mode = is_dir || (st->st_mode & 0111) ? 0755 : 0644;
    if (!is_dir) {
        c->n_files++;
        c->data_bytes += (uint64_t)st->st_size;
    }
    return VT_OK;
}

/* Walks the directory open at dfd (taken over), whose members are named
 * prefix + name. Only directories and regular files are admitted. */
static int walk(creator *c, int dfd, const char *prefix, vt_error *err)
{
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return vt_error_set(err, VT_EINPUT, "%s/%s: cannot read directory: %s", c->dir, prefix, strerror(errno));
    }
    int rc = VT_OK;
    size_t pl = strlen(prefix);
    for (;;) {
        errno = 0;
        struct dirent *de = readdir(d);
        if (!de) {
            if (errno)
                rc = vt_error_set(err, VT_EINPUT, "%s/%s: cannot read directory: %s", c->dir, prefix, strerror(errno));
            break;
        }
        const char *name = de->d_name;
        if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
            continue;
        struct stat st;
        if (fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW)) {
            rc = vt_error_set(err, VT_EINPUT, "%s/%s%s: cannot stat: %s", c->dir, prefix, name, strerror(errno));
            break;
        }
        if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) {
            rc = vt_error_set(err, VT_EINPUT, "%s/%s%s: %s: only regular files and directories can be sealed", c->dir,
                              prefix, name, kind_of(st.st_mode));
            break;
        }
        int is_dir = S_ISDIR(st.st_mode);
        size_t nl = strlen(name);
        char *path = malloc(pl + nl + 2);
        if (!path) {
            rc = vt_error_set(err, VT_EINPUT, "%s: out of memory", c->dir);
            break;
        }
        memcpy(path, prefix, pl);
        memcpy(path + pl, name, nl);
        if (is_dir)
            path[pl + nl++] = '/';
        path[pl + nl] = '\0';
        const char *why = vt_seal_path_problem(path, is_dir);
        if (why) {
            rc = vt_error_set(err, VT_EINPUT, "%s/%s: name not admitted: %s (names are printable ASCII, no '\\')",
                              c->dir, path, why);
            free(path);
            break;
        }
        int oom = 0;
        const char *other = vt_nameset_add(c->folded, path, &oom);
        if (other || oom) {
            rc = oom ? vt_error_set(err, VT_EINPUT, "%s: out of memory", c->dir)
               : strcmp(other, VT_SEAL_MANIFEST_NAME) == 0
                   ? vt_error_set(err, VT_EINPUT, "%s/%s: the name %s is reserved for the archive's manifest", c->dir,
                                  path, VT_SEAL_MANIFEST_NAME)
                   : vt_error_set(err, VT_EINPUT,
                                  "%s/%s: collides with '%s' (equal but for case): extract refuses such archives",
                                  c->dir, path, other);
            free(path);
            break;
        }
        if ((rc = add_entry(c, path, is_dir, &st, err)))
            break;
        if (is_dir) {
            int sub = openat(dirfd(d), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub < 0) {
                rc = vt_error_set(err, VT_EINPUT, "%s/%s: cannot open: %s", c->dir, path, strerror(errno));
                break;
            }
            if ((rc = walk(c, sub, path, err)))
                break;
        }
    }
    closedir(d);
    return rc;
}

static int cmp_entry(const void *a, const void *b)
{
    return strcmp(((const entry *)a)->path, ((const entry *)b)->path);
}

static int hash_files(creator *c, vt_error *err)
{
    if (!c->n_files)
        return VT_OK;
    size_t dl = strlen(c->dir);
    char **paths = calloc(c->n_files, sizeof *paths);
    entry **which = calloc(c->n_files, sizeof *which);
    vt_sha256_hex *hex = calloc(c->n_files, sizeof *hex);
    uint64_t *sizes = calloc(c->n_files, sizeof *sizes);
    int *status = calloc(c->n_files, sizeof *status);
    int rc = VT_OK;
    if (!paths || !which || !hex || !sizes || !status || c->n_files > INT_MAX) {
        rc = vt_error_set(err, VT_EINPUT, "%s: out of memory", c->dir);
        goto out;
    }
    size_t k = 0;
    for (size_t i = 0; i < c->n; i++) {
        if (c->e[i].is_dir)
            continue;
        size_t pl = strlen(c->e[i].path);
        if (!(paths[k] = malloc(dl + pl + 2))) {
            rc = vt_error_set(err, VT_EINPUT, "%s: out of memory", c->dir);
            goto out;
        }
        memcpy(paths[k], c->dir, dl);
        paths[k][dl] = '/';
        memcpy(paths[k] + dl + 1, c->e[i].path, pl + 1);
        which[k++] = &c->e[i];
    }
    vt_sha256_files_each((const char *const *)paths, (int)k, vt_seal_nthreads(c->s), hex, sizes, status);
    for (size_t i = 0; i < k; i++) {
        if (status[i]) {
            rc = vt_error_set(err, VT_EINPUT, "%s: cannot read: %s", paths[i], strerror(status[i]));
            goto out;
        }
        if (sizes[i] != (uint64_t)which[i]->st.st_size) {
            rc = vt_error_set(err, VT_EINPUT, "%s: changed while sealing (size)", paths[i]);
            goto out;
        }
        memcpy(which[i]->sha256, hex[i].hex, 65);
    }
out:
    if (paths)
        for (size_t i = 0; i < c->n_files; i++)
            free(paths[i]);
    free(paths);
    free(which);
    free(hex);
    free(sizes);
    free(status);
    return rc;
}

static int make_manifest(creator *c, vt_error *err)
{
    vt_seal_member *m = calloc(c->n ? c->n : 1, sizeof *m);
    if (!m)
        return vt_error_set(err, VT_EINPUT, "%s: out of memory", c->dir);
    for (size_t i = 0; i < c->n; i++) {
        m[i].path = c->e[i].path;
        m[i].is_dir = c->e[i].is_dir;
        m[i].mode = c->e[i].mode;
        m[i].size = (uint64_t)c->e[i].st.st_size;
        memcpy(m[i].sha256, c->e[i].sha256, 65);
    }
    c->manifest = vt_seal_manifest_json(m, c->n, &c->manifest_len);
    free(m);
    if (!c->manifest)
        return vt_error_set(err, VT_EINPUT, "%s: out of memory", c->dir);
    vt_sha256_buffer(c->manifest, c->manifest_len, &c->manifest_sha);
    return VT_OK;
}

/* ---- the archive, streamed by vt_publish into its temp file ---- */

static la_ssize_t la_write(struct archive *a, void *ctx, const void *buf, size_t n)
{
    creator *c = ctx;
    if (vt_gzw_write(c->gz, buf, n, &c->wio)) {
        c->wio_failed = 1;
        archive_set_error(a, EIO, "%s", c->wio.msg);
        return -1;
    }
    return (la_ssize_t)n;
}

static int la_fail(creator *c, struct archive *a, const char *what, vt_error *err)
{
    if (c->wio_failed) {
        *err = c->wio;
        return err->code;
    }
    return vt_error_set(err, VT_EINPUT, "%s: %s: %s", c->archive_path, what, archive_error_string(a));
}

static int put_header(creator *c, struct archive *a, struct archive_entry *ae, const char *path, int is_dir,
                      unsigned mode, uint64_t size, vt_error *err)
{
    archive_entry_clear(ae);
    archive_entry_set_pathname(ae, path);
    archive_entry_set_filetype(ae, is_dir ? AE_IFDIR : AE_IFREG);
    archive_entry_set_perm(ae, mode);
    archive_entry_set_size(ae, is_dir ? 0 : (la_int64_t)size);
    archive_entry_set_mtime(ae, 0, 0);
    archive_entry_set_uid(ae, 0);
    archive_entry_set_gid(ae, 0);
    if (archive_write_header(a, ae) != ARCHIVE_OK)
        return la_fail(c, a, path, err);
    return VT_OK;
}

static int same_file(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
           a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
           a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

static int put_file(creator *c, struct archive *a, const entry *e, vt_error *err)
{
    /* O_NONBLOCK: a FIFO put in a file's place since the walk must not hang
     * the open; same_file() then refuses it (regular files read as ever). */
    int fd = openat(c->rootfd, e->path, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return vt_error_set(err, VT_EINPUT, "%s/%s: cannot open: %s", c->dir, e->path, strerror(errno));
    struct stat st;
    int rc = VT_OK;
    if (fstat(fd, &st) || !same_file(&st, &e->st)) {
        rc = vt_error_set(err, VT_EINPUT, "%s/%s: changed while sealing", c->dir, e->path);
        goto out;
    }
    posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    for (uint64_t left = (uint64_t)st.st_size; left;) {
        ssize_t got = read(fd, c->buf, left < READ_CHUNK ? (size_t)left : READ_CHUNK);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0) {
            rc = got < 0 ? vt_error_set(err, VT_EINPUT, "%s/%s: read: %s", c->dir, e->path, strerror(errno))
                         : vt_error_set(err, VT_EINPUT, "%s/%s: changed while sealing (shorter)", c->dir, e->path);
            goto out;
        }
        if (archive_write_data(a, c->buf, (size_t)got) != got) {
            rc = la_fail(c, a, e->path, err);
            goto out;
        }
        left -= (uint64_t)got;
    }
    /* Written while we read it? Its times say so. */
    if (fstat(fd, &st) || !same_file(&st, &e->st))
        rc = vt_error_set(err, VT_EINPUT, "%s/%s: changed while sealing", c->dir, e->path);
out:
    close(fd);
    return rc;
}

static int write_archive(int fd, void *ctx, vt_error *err)
{
    creator *c = ctx;
    int rc = VT_OK;
    struct archive *a = archive_write_new();
    struct archive_entry *ae = archive_entry_new();
    c->gz = vt_gzw_new(fd, c->archive_path, c->s->level, vt_seal_nthreads(c->s), err);
    if (!c->gz) {
        rc = err->code;
        goto out;
    }
    if (!a || !ae) {
        rc = vt_error_set(err, VT_EINPUT, "%s: out of memory", c->archive_path);
        goto out;
    }
    if (archive_write_set_format_pax_restricted(a) != ARCHIVE_OK || archive_write_add_filter_none(a) != ARCHIVE_OK ||
        archive_write_open(a, c, NULL, la_write, NULL) != ARCHIVE_OK) {
        rc = la_fail(c, a, "libarchive", err);
        goto out;
    }
    if ((rc = put_header(c, a, ae, VT_SEAL_MANIFEST_NAME, 0, 0644, c->manifest_len, err)))
        goto out;
    if (archive_write_data(a, c->manifest, c->manifest_len) != (la_ssize_t)c->manifest_len) {
        rc = la_fail(c, a, VT_SEAL_MANIFEST_NAME, err);
        goto out;
    }
    vt_progress_start(c->s->progress, "members", (int64_t)c->n);
    for (size_t i = 0; i < c->n; i++) {
        const entry *e = &c->e[i];
        if ((rc = put_header(c, a, ae, e->path, e->is_dir, e->mode, (uint64_t)e->st.st_size, err)))
            goto out;
        if (!e->is_dir && (rc = put_file(c, a, e, err)))
            goto out;
        vt_progress_add(c->s->progress, 1);
    }
    vt_progress_end(c->s->progress);
    if (archive_write_close(a) != ARCHIVE_OK) {
        rc = la_fail(c, a, "closing", err);
        goto out;
    }
    if ((rc = vt_gzw_finish(c->gz, c->archive_sha, &c->archive_size, err)))
        goto out;
    c->archive_done = 1;
out:
    archive_entry_free(ae);
    if (a)
        archive_write_free(a);
    vt_gzw_free(c->gz);
    c->gz = NULL;
    return rc;
}

/* JSON string body of an admitted file name: '"' and '\' escaped. */
static void add_json_name(vt_seal_buf *b, const char *s)
{
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            vt_seal_buf_add(b, "\\", 1);
        vt_seal_buf_add(b, s, 1);
    }
}

static int write_buf(int fd, vt_seal_buf *b, const char *what, vt_error *err)
{
    int rc = b->failed ? vt_error_set(err, VT_EINPUT, "%s: out of memory", what)
                       : vt_publish_write_all(fd, b->p, b->len, what, err);
    free(b->p);
    return rc;
}

/* The seal needs the archive's hash: vt_publish writes the items in order. */
static int write_seal(int fd, void *ctx, vt_error *err)
{
    creator *c = ctx;
    if (!c->archive_done)
        return vt_error_set(err, VT_EINPUT, "%s: internal: seal written before its archive", c->archive_path);
    vt_seal_buf b = { 0 };
    const char *head = "{\n  \"schema\": \"" VT_SEAL_SCHEMA "\",\n  \"archive\": {\"name\": \"";
    vt_seal_buf_add(&b, head, strlen(head));
    add_json_name(&b, c->archive_name);
    vt_seal_buf_printf(&b, "\", \"size\": %llu, \"sha256\": \"%s\"},\n", (unsigned long long)c->archive_size,
                       c->archive_sha);
    vt_seal_buf_printf(&b,
                       "  \"manifest\": {\"path\": \"" VT_SEAL_MANIFEST_NAME
                       "\", \"size\": %zu, \"sha256\": \"%s\", \"members\": %zu},\n",
                       c->manifest_len, c->manifest_sha.hex, c->n);
    vt_seal_buf_printf(&b, "  \"gzip\": {\"level\": %d, \"block_size\": %d, \"zlib\": \"%s\"}\n}\n", c->s->level,
                       VT_GZ_BLOCK, zlibVersion());
    return write_buf(fd, &b, c->archive_path, err);
}

static int write_attestation(int fd, void *ctx, vt_error *err)
{
    creator *c = ctx;
    if (!c->archive_done)
        return vt_error_set(err, VT_EINPUT, "%s: internal: attestation written before its archive", c->archive_path);
    vt_seal_buf b = { 0 };
    const char *head = "{\n  \"_type\": \"" VT_SEAL_INTOTO_TYPE "\",\n  \"subject\": [\n    {\"name\": \"";
    vt_seal_buf_add(&b, head, strlen(head));
    add_json_name(&b, c->archive_name);
    vt_seal_buf_printf(&b, "\", \"digest\": {\"sha256\": \"%s\"}}\n  ],\n", c->archive_sha);
    const char *pt = "  \"predicateType\": \"" VT_SEAL_PREDICATE_TYPE "\",\n  \"predicate\": {\n    \"seal\": \"" VT_SEAL_SCHEMA
                     "\",\n";
    vt_seal_buf_add(&b, pt, strlen(pt));
    vt_seal_buf_printf(&b,
                       "    \"manifest\": {\"path\": \"" VT_SEAL_MANIFEST_NAME
                       "\", \"sha256\": \"%s\", \"members\": %zu}\n  }\n}\n",
                       c->manifest_sha.hex, c->n);
    return write_buf(fd, &b, c->archive_path, err);
}

/* The archive may not be written into the tree it seals. */
static int check_outside(const char *dir, const char *archive_path, vt_error *err)
{
    char *rdir = realpath(dir, NULL);
    if (!rdir)
        return vt_error_set(err, VT_EINPUT, "%s: %s", dir, strerror(errno));
    char *copy = strdup(archive_path);
    char *slash = copy ? strrchr(copy, '/') : NULL;
    const char *parent = !copy ? NULL : slash ? (slash == copy ? "/" : (*slash = '\0', copy)) : ".";
    char *rparent = parent ? realpath(parent, NULL) : NULL;
    int rc = VT_OK;
    if (!rparent)
        rc = vt_error_set(err, VT_EINPUT, "%s: its directory: %s", archive_path, copy ? strerror(errno) : "out of memory");
    else {
        size_t n = strlen(rdir);
        if (strcmp(rdir, "/") == 0 || (strncmp(rparent, rdir, n) == 0 && (rparent[n] == '\0' || rparent[n] == '/')))
            rc = vt_error_set(err, VT_EINPUT, "%s: inside the sealed directory %s: write the archive outside it",
                              archive_path, dir);
    }
    free(rdir);
    free(copy);
    free(rparent);
    return rc;
}

int vt_seal_create(vt_seal *s, const char *dir, const char *archive_path, vt_error *err)
{
    vt_error_clear(err);
    memset(&s->info, 0, sizeof s->info);
    vt_seal_checked_free(s);
    creator c;
    memset(&c, 0, sizeof c);
    c.s = s;
    /* "DIR/" and "DIR" alike: messages name DIR/member. */
    char dirbuf[PATH_MAX];
    size_t dlen = strlen(dir);
    while (dlen > 1 && dir[dlen - 1] == '/')
        dlen--;
    if (dlen == 0 || dlen >= sizeof dirbuf)
        return vt_error_set(err, VT_EINPUT, "'%s': expected a directory", dir);
    memcpy(dirbuf, dir, dlen);
    dirbuf[dlen] = '\0';
    dir = dirbuf;
    c.dir = dir;
    c.archive_path = archive_path;
    c.rootfd = -1;
    const char *base = strrchr(archive_path, '/');
    base = base ? base + 1 : archive_path;
    if (!*base || strlen(base) >= sizeof c.archive_name || strcmp(base, ".") == 0 || strcmp(base, "..") == 0)
        return vt_error_set(err, VT_EINPUT, "%s: expected a file name for the archive", archive_path);
    for (const char *p = base; *p; p++)
        if (*p < 0x20 || *p > 0x7e)
            return vt_error_set(err, VT_EINPUT, "%s: archive name: expected printable ASCII", archive_path);
    snprintf(c.archive_name, sizeof c.archive_name, "%s", base);

    int rc = check_outside(dir, archive_path, err);
    if (rc)
        return rc;
    size_t al = strlen(archive_path);
    char *seal_path = malloc(al + 16), *att_path = malloc(al + 16);
    char **inputs = NULL;
    c.folded = vt_nameset_new(1);
    c.buf = malloc(READ_CHUNK);
    int oom = 0;
    if (!seal_path || !att_path || !c.folded || !c.buf) {
        rc = vt_error_set(err, VT_EINPUT, "out of memory");
        goto out;
    }
    snprintf(seal_path, al + 16, "%s.seal.json", archive_path);
    snprintf(att_path, al + 16, "%s.intoto.json", archive_path);
    vt_nameset_add(c.folded, VT_SEAL_MANIFEST_NAME, &oom);

    if ((rc = vt_input_opendir(dir, NULL, &c.rootfd, err)))
        goto out;
    int walkfd = dup(c.rootfd);
    if (walkfd < 0) {
        rc = vt_error_set(err, VT_EINPUT, "%s: %s", dir, strerror(errno));
        goto out;
    }
    if ((rc = walk(&c, walkfd, "", err)))
        goto out;
    qsort(c.e, c.n, sizeof *c.e, cmp_entry);
    if ((rc = hash_files(&c, err)) || (rc = make_manifest(&c, err)))
        goto out;

    /* Outputs may not alias the tree's files (vt_publish checks st_dev/st_ino). */
    size_t dl = strlen(dir);
    inputs = calloc(c.n_files + 1, sizeof *inputs);
    if (!inputs || !(inputs[0] = strdup(dir))) {
        rc = vt_error_set(err, VT_EINPUT, "out of memory");
        goto out;
    }
    int n_inputs = 1;
    for (size_t i = 0; i < c.n; i++) {
        if (c.e[i].is_dir)
            continue;
        size_t pl = strlen(c.e[i].path);
        if (!(inputs[n_inputs] = malloc(dl + pl + 2))) {
            rc = vt_error_set(err, VT_EINPUT, "out of memory");
            goto out;
        }
        snprintf(inputs[n_inputs++], dl + pl + 2, "%s/%s", dir, c.e[i].path);
    }
    vt_publish_item items[3] = {
        { .path = archive_path, .write = write_archive, .write_ctx = &c },
        { .path = seal_path, .write = write_seal, .write_ctx = &c },
        { .path = att_path, .write = write_attestation, .write_ctx = &c },
    };
    vt_publish_opts po = { .overwrite = s->overwrite, .inputs = (const char *const *)inputs, .n_inputs = n_inputs };
    rc = vt_publish_group(items, s->attestation ? 3 : 2, &po, err);
    if (rc == VT_OK) {
        s->info.members = c.n;
        s->info.data_bytes = c.data_bytes;
        s->info.archive_size = c.archive_size;
        memcpy(s->info.archive_sha256, c.archive_sha, 65);
        memcpy(s->info.manifest_sha256, c.manifest_sha.hex, 65);
    }
out:
    if (inputs)
        for (size_t i = 0; i <= c.n_files; i++)
            free(inputs[i]);
    free(inputs);
    for (size_t i = 0; i < c.n; i++)
        free(c.e[i].path);
    free(c.e);
    vt_nameset_free(c.folded);
    free(c.manifest);
    free(c.buf);
    free(seal_path);
    free(att_path);
    if (c.rootfd >= 0)
        close(c.rootfd);
    return rc;
}
