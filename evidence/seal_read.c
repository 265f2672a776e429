/* vt-seal verify and extract: one pass over the archive.
 *
 * The gzip reader (seal_gz.c) hashes the compressed bytes and inflates in
 * parallel; libarchive parses the tar stream from it; each member is checked
 * as it arrives, in this order:
 *   1. entry count, type (only regular files and directories: no links,
 *      devices, FIFOs, sockets, sparse files), path (relative, no "..", ".",
 *      empty components, printable ASCII), duplicates and case collisions,
 *      declared sizes against the limits: refused as hostile (VT_EINPUT);
 *   2. the first member is manifest.json, checked against the seal and parsed;
 *   3. every other member, in order, against the manifest's next entry (type,
 *      mode, size, sha256 of its data): a difference is VT_ECHECK;
 *   4. after the tar end marker only zeros, then the end of the gzip data;
 *      the archive's sha256 and size against the seal.
 * extract writes into a fresh temp directory beside DEST and renames it into
 * place only when all of that passed; on any refusal the temp directory is
 * removed. It does not write manifest.json: DEST is the sealed tree itself,
 * and sealing it again gives the same archive. */
#include "seal_internal.h"
#include "../common/vt_input.h"

#include "../common/vt_json.h"
#include "../common/vt_progress.h"
#include "../common/vt_publish.h"
#include "../provenance/provenance.h"

#include <archive.h>
#include <archive_entry.h>
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- the seal and the attestation ---- */

typedef struct seal_doc {
    int present;
    char path[PATH_MAX];
    char archive_sha[65];
    uint64_t archive_size;
    char manifest_sha[65];
} seal_doc;

/* Reads a small file whole. VT_EINPUT; *missing set when it does not exist. */
static int read_small(const char *path, size_t max, char **out, size_t *len, int *missing, vt_error *err)
{
    *out = NULL;
    if (missing)
        *missing = 0;
    int fd;
    vt_input_opts io = { .max_bytes = max };
    int orc = vt_input_open(path, &io, &fd, NULL, err);
    if (orc) {
        struct stat ls;
        if (missing && lstat(path, &ls) != 0 && errno == ENOENT)
            *missing = 1;
        return orc;
    }
    struct stat st;
    int rc = VT_OK;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > max) {
        rc = vt_error_set(err, VT_EINPUT, "%s: expected a regular file of at most %zu bytes", path, max);
        goto out;
    }
    char *p = malloc((size_t)st.st_size + 1);
    if (!p) {
        rc = vt_error_set(err, VT_EINPUT, "%s: out of memory", path);
        goto out;
    }
    size_t got = 0;
    while (got < (size_t)st.st_size) {
        ssize_t k = read(fd, p + got, (size_t)st.st_size - got);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            free(p);
            rc = vt_error_set(err, VT_EINPUT, "%s: read: %s", path, k < 0 ? strerror(errno) : "file shrank");
            goto out;
        }
        got += (size_t)k;
    }
    p[got] = '\0';
    *out = p;
    *len = got;
out:
    close(fd);
    return rc;
}

static const char *json_str(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}

static int load_seal(seal_doc *d, vt_error *err)
{
    char *text;
    size_t len;
    int rc = read_small(d->path, 1 << 20, &text, &len, NULL, err);
    if (rc)
        return rc;
    cJSON *root = vt_json_parse(text, len, d->path, err);
    free(text);
    if (!root)
        return VT_EINPUT;
    const cJSON *ar = cJSON_GetObjectItemCaseSensitive(root, "archive");
    const cJSON *ma = cJSON_GetObjectItemCaseSensitive(root, "manifest");
    const cJSON *size = cJSON_GetObjectItemCaseSensitive(ar, "size");
    const char *schema = json_str(root, "schema"), *asha = json_str(ar, "sha256"), *msha = json_str(ma, "sha256");
    if (!schema || strcmp(schema, VT_SEAL_SCHEMA) != 0)
        rc = vt_error_set(err, VT_EINPUT, "%s: schema: expected \"%s\"", d->path, VT_SEAL_SCHEMA);
    else if (!vt_seal_is_hex64(asha))
        rc = vt_error_set(err, VT_EINPUT, "%s: archive.sha256: expected 64 lower-case hex digits", d->path);
    else if (!cJSON_IsNumber(size) || size->valuedouble < 0 || size->valuedouble > 9007199254740992.0 ||
             size->valuedouble != (double)(uint64_t)size->valuedouble)
        rc = vt_error_set(err, VT_EINPUT, "%s: archive.size: expected an integer >= 0", d->path);
    else if (!vt_seal_is_hex64(msha))
        rc = vt_error_set(err, VT_EINPUT, "%s: manifest.sha256: expected 64 lower-case hex digits", d->path);
    else {
        memcpy(d->archive_sha, asha, 65);
        memcpy(d->manifest_sha, msha, 65);
        d->archive_size = (uint64_t)size->valuedouble;
        d->present = 1;
    }
    cJSON_Delete(root);
    return rc;
}

/* An in-toto statement beside the archive, if any, must name this archive's
 * digest and manifest. */
static int check_attestation(const char *archive, vt_seal_info *info, vt_error *err)
{
    char path[PATH_MAX];
    if ((size_t)snprintf(path, sizeof path, "%s.intoto.json", archive) >= sizeof path)
        return VT_OK;
    char *text;
    size_t len;
    int missing;
    vt_error e2;
    if (read_small(path, 1 << 20, &text, &len, &missing, &e2))
        return missing ? VT_OK : (*err = e2, err->code);
    cJSON *root = vt_json_parse(text, len, path, err);
    free(text);
    if (!root)
        return VT_EINPUT;
    int rc = VT_OK;
    const char *type = json_str(root, "_type"), *ptype = json_str(root, "predicateType");
    const cJSON *subject = cJSON_GetObjectItemCaseSensitive(root, "subject");
    const cJSON *pred = cJSON_GetObjectItemCaseSensitive(root, "predicate");
    const char *msha = json_str(cJSON_GetObjectItemCaseSensitive(pred, "manifest"), "sha256");
    if (!type || strcmp(type, VT_SEAL_INTOTO_TYPE) != 0 || !ptype || strcmp(ptype, VT_SEAL_PREDICATE_TYPE) != 0 ||
        !cJSON_IsArray(subject) || cJSON_GetArraySize(subject) != 1 || !msha) {
        rc = vt_error_set(err, VT_EINPUT, "%s: expected an in-toto Statement v1 with one subject and predicate %s",
                          path, VT_SEAL_PREDICATE_TYPE);
        goto out;
    }
    const char *sha = json_str(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(subject, 0), "digest"), "sha256");
    if (!sha || strcmp(sha, info->archive_sha256) != 0)
        rc = vt_error_set(err, VT_ECHECK, "%s: subject digest sha256 %s differs from the archive's %s", path,
                          sha ? sha : "(none)", info->archive_sha256);
    else if (strcmp(msha, info->manifest_sha256) != 0)
        rc = vt_error_set(err, VT_ECHECK, "%s: predicate manifest sha256 %s differs from the archive's %s", path, msha,
                          info->manifest_sha256);
    else
        info->attestation_checked = 1;
out:
    cJSON_Delete(root);
    return rc;
}

/* ---- reading ---- */

typedef struct reader {
    vt_seal *s;
    const char *archive;
    vt_gzr *gz;
    vt_error gz_err;
    int gz_failed;
    const unsigned char *last; /* the last piece handed to libarchive */
    size_t last_len;
    uint64_t delivered;
    seal_doc seal;
    vt_seal_manifest man;
    size_t mi, n_ok; /* manifest entries met; of them found as listed */
    vt_nameset *exact, *folded;
    uint64_t entries, declared, data_bytes;
    EVP_MD_CTX *md;
    int rootfd; /* extract: the temp directory; verify: -1 */
    char *mbuf;
    char path[VT_SEAL_PATH_MAX + 2];
} reader;

static la_ssize_t la_read(struct archive *a, void *ctx, const void **buf)
{
    reader *r = ctx;
    const void *p = NULL;
    ssize_t n = vt_gzr_next(r->gz, &p, &r->gz_err);
    if (n < 0) {
        r->gz_failed = 1;
        archive_set_error(a, EIO, "%s", r->gz_err.msg);
        return -1;
    }
    if (n > 0) {
        r->last = p;
        r->last_len = (size_t)n;
        r->delivered += (uint64_t)n;
    }
    *buf = p;
    return n;
}

/* A tar-level failure; the gzip layer's error is the precise one if any. */
static int tar_fail(reader *r, struct archive *a, const char *what, vt_error *err)
{
    if (r->gz_failed) {
        *err = r->gz_err;
        return err->code;
    }
    const char *m = archive_error_string(a);
    return vt_error_set(err, VT_EINPUT, "%s: %s: %s", r->archive, what, m ? m : "malformed tar data");
}

/* Step 1: what any member must be. Leaves the normalized path in r->path. */
static int check_entry(reader *r, struct archive_entry *ae, int *is_dir, uint64_t *size, vt_error *err)
{
    const char *A = r->archive;
    const char *name = archive_entry_pathname(ae);
    if (!name)
        return vt_error_set(err, VT_EINPUT, "%s: entry %llu: no usable path", A, (unsigned long long)r->entries);
    if (archive_entry_hardlink(ae))
        return vt_error_set(err, VT_EINPUT, "%s: member '%s': hard link refused", A, name);
    mode_t ft = archive_entry_filetype(ae);
    if (archive_entry_symlink(ae) || ft == AE_IFLNK)
        return vt_error_set(err, VT_EINPUT, "%s: member '%s': symlink refused", A, name);
    if (ft == AE_IFCHR || ft == AE_IFBLK)
        return vt_error_set(err, VT_EINPUT, "%s: member '%s': device refused", A, name);
    if (ft == AE_IFIFO)
        return vt_error_set(err, VT_EINPUT, "%s: member '%s': FIFO refused", A, name);
    if (ft != AE_IFREG && ft != AE_IFDIR)
        return vt_error_set(err, VT_EINPUT, "%s: member '%s': type refused (only files and directories)", A, name);
    if (archive_entry_sparse_count(ae) > 0)
        return vt_error_set(err, VT_EINPUT, "%s: member '%s': sparse file refused", A, name);
    *is_dir = ft == AE_IFDIR;
    size_t n = strlen(name);
    if (n > VT_SEAL_PATH_MAX)
        return vt_error_set(err, VT_EINPUT, "%s: member '%.200s...': path too long", A, name);
    memcpy(r->path, name, n + 1);
    if (*is_dir && n && name[n - 1] != '/') { /* tar writers differ on the slash */
        r->path[n] = '/';
        r->path[n + 1] = '\0';
    }
    const char *why = vt_seal_path_problem(r->path, *is_dir);
    if (why)
        return vt_error_set(err, VT_EINPUT, "%s: member '%s': %s refused", A, name, why);
    int oom = 0;
    const char *other = vt_nameset_add(r->exact, r->path, &oom);
    if (other)
        return vt_error_set(err, VT_EINPUT, "%s: member '%s': duplicate name refused", A, name);
    if (!oom && (other = vt_nameset_add(r->folded, r->path, &oom)))
        return vt_error_set(err, VT_EINPUT, "%s: member '%s': collides with '%s' (names equal but for case) refused", A,
                            name, other);
    if (oom)
        return vt_error_set(err, VT_EINPUT, "%s: out of memory", A);
    la_int64_t sz = archive_entry_size_is_set(ae) ? archive_entry_size(ae) : 0;
    if (sz < 0)
        return vt_error_set(err, VT_EINPUT, "%s: member '%s': negative size", A, name);
    if (*is_dir && sz != 0)
        return vt_error_set(err, VT_EINPUT, "%s: member '%s': directory with data refused", A, name);
    *size = (uint64_t)sz;
    r->declared += *size;
    if (*size > r->s->limits.max_total_size || r->declared > r->s->limits.max_total_size)
        return vt_error_set(err, VT_EINPUT,
                            "%s: member '%s': total size over the limit of %llu bytes (--max-total-size) refused", A,
                            name, (unsigned long long)r->s->limits.max_total_size);
    return VT_OK;
}

/* Reads a member's data, hashing it and writing it to fd (if >= 0). The
 * data must be exactly size bytes, in order. */
static int read_data(reader *r, struct archive *a, uint64_t size, int fd, char sha_hex[65], char *keep, vt_error *err)
{
    const char *A = r->archive;
    if (EVP_DigestInit_ex(r->md, EVP_sha256(), NULL) != 1)
        return vt_error_set(err, VT_EINPUT, "%s: sha256 failed", A);
    uint64_t got = 0;
    for (;;) {
        const void *p;
        size_t len;
        la_int64_t off;
        int k = archive_read_data_block(a, &p, &len, &off);
        if (k == ARCHIVE_EOF)
            break;
        if (k != ARCHIVE_OK)
            return tar_fail(r, a, r->path, err);
        if (off < 0 || (uint64_t)off != got || len > size - got)
            return vt_error_set(err, VT_EINPUT, "%s: member '%s': data out of order or longer than its header", A,
                                r->path);
        EVP_DigestUpdate(r->md, p, len);
        if (keep)
            memcpy(keep + got, p, len);
        if (fd >= 0) {
            int rc = vt_publish_write_all(fd, p, len, r->path, err);
            if (rc)
                return rc;
        }
        got += len;
    }
    if (got != size)
        return vt_error_set(err, VT_EINPUT, "%s: member '%s': %llu bytes of data, its header says %llu", A, r->path,
                            (unsigned long long)got, (unsigned long long)size);
    unsigned char md[32];
    unsigned int mdlen = 0;
    EVP_DigestFinal_ex(r->md, md, &mdlen);
    vt_seal_hex(md, 32, sha_hex);
    return VT_OK;
}

/* Step 2: the manifest. */
static int read_manifest(reader *r, struct archive *a, int is_dir, uint64_t size, vt_error *err)
{
    const char *A = r->archive;
    if (is_dir || strcmp(r->path, VT_SEAL_MANIFEST_NAME) != 0)
        return vt_error_set(err, VT_EINPUT, "%s: first member is '%s': expected %s (not a vt-seal archive?)", A,
                            r->path, VT_SEAL_MANIFEST_NAME);
    /* A manifest line is < 400 bytes: bound its size by the entry limit. */
    uint64_t me = r->s->limits.max_entries;
    uint64_t cap = me > (UINT64_MAX - 4096) / 512 ? UINT64_MAX : me * 512 + 4096;
    if (size > cap)
        return vt_error_set(err, VT_EINPUT, "%s: %s: %llu bytes: over %llu for %llu entries (--max-entries)", A,
                            VT_SEAL_MANIFEST_NAME, (unsigned long long)size, (unsigned long long)cap,
                            (unsigned long long)r->s->limits.max_entries);
    if (!(r->mbuf = malloc(size ? size : 1)))
        return vt_error_set(err, VT_EINPUT, "%s: out of memory", A);
    char sha[65];
    int rc = read_data(r, a, size, -1, sha, r->mbuf, err);
    if (rc)
        return rc;
    if (r->seal.present && strcmp(sha, r->seal.manifest_sha) != 0)
        return vt_error_set(err, VT_ECHECK, "%s: %s: sha256 %s differs from the seal's %s (%s)", A,
                            VT_SEAL_MANIFEST_NAME, sha, r->seal.manifest_sha, r->seal.path);
    memcpy(r->s->info.manifest_sha256, sha, 65);
    char what[PATH_MAX + 32];
    snprintf(what, sizeof what, "%s: %s", A, VT_SEAL_MANIFEST_NAME);
    return vt_seal_manifest_parse(r->mbuf, size, what, r->s->limits.max_entries, &r->man, err);
}

/* Step 3: a member against the manifest's next entry. */
static int read_member(reader *r, struct archive *a, struct archive_entry *ae, int is_dir, uint64_t size,
                       vt_error *err)
{
    const char *A = r->archive;
    int c = r->mi < r->man.n ? strcmp(r->path, r->man.m[r->mi].path) : -1;
    if (c < 0)
        return vt_error_set(err, VT_ECHECK, "%s: member '%s': in the archive, not in the manifest", A, r->path);
    if (c > 0)
        return vt_error_set(err, VT_ECHECK, "%s: member '%s': in the manifest, missing from the archive", A,
                            r->man.m[r->mi].path);
    const vt_seal_member *m = &r->man.m[r->mi++];
    if (is_dir != m->is_dir)
        return vt_error_set(err, VT_ECHECK, "%s: member '%s': a %s in the manifest", A, r->path,
                            m->is_dir ? "directory" : "file");
    unsigned perm = (unsigned)archive_entry_perm(ae);
    if (perm != m->mode)
        return vt_error_set(err, VT_ECHECK, "%s: member '%s': mode %04o, the manifest says %04o", A, r->path, perm,
                            m->mode);
    if (is_dir) {
        if (r->rootfd >= 0) {
            r->path[strlen(r->path) - 1] = '\0';
            if (mkdirat(r->rootfd, r->path, 0700) || fchmodat(r->rootfd, r->path, m->mode, 0))
                return vt_error_set(err, VT_EINPUT, "%s: cannot create directory: %s", r->path, strerror(errno));
        }
        return VT_OK;
    }
    if (size != m->size)
        return vt_error_set(err, VT_ECHECK, "%s: member '%s': size %llu in its header, %llu in the manifest", A,
                            r->path, (unsigned long long)size, (unsigned long long)m->size);
    int fd = -1;
    if (r->rootfd >= 0) {
        fd = openat(r->rootfd, r->path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
            return vt_error_set(err, VT_EINPUT, "%s: cannot create: %s", r->path, strerror(errno));
    }
    char sha[65];
    int rc = read_data(r, a, size, fd, sha, NULL, err);
    if (rc == VT_OK && strcmp(sha, m->sha256) != 0)
        rc = vt_error_set(err, VT_ECHECK, "%s: member '%s': sha256 %s differs from the manifest's %s", A, r->path, sha,
                          m->sha256);
    if (fd >= 0) {
        if (rc == VT_OK && fchmod(fd, m->mode))
            rc = vt_error_set(err, VT_EINPUT, "%s: chmod: %s", r->path, strerror(errno));
        if (close(fd) && rc == VT_OK)
            rc = vt_error_set(err, VT_EINPUT, "%s: close: %s", r->path, strerror(errno));
    }
    r->data_bytes += size;
    return rc;
}

static int all_zero(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i])
            return 0;
    return 1;
}

/* Step 4: after the end marker only zero padding, then the gzip end. */
static int check_end(reader *r, struct archive *a, vt_error *err)
{
    const char *A = r->archive;
    la_int64_t used = archive_filter_bytes(a, 0);
    if (used < 0 || (uint64_t)used > r->delivered || r->delivered - (uint64_t)used > r->last_len)
        return vt_error_set(err, VT_EINPUT, "%s: cannot locate the end of the tar data", A);
    size_t tail = (size_t)(r->delivered - (uint64_t)used);
    if (!all_zero(r->last + r->last_len - tail, tail))
        return vt_error_set(err, VT_EINPUT, "%s: data after the end of the tar archive", A);
    for (;;) {
        const void *p;
        ssize_t n = vt_gzr_next(r->gz, &p, err);
        if (n < 0)
            return err->code;
        if (n == 0)
            break;
        if (!all_zero(p, (size_t)n))
            return vt_error_set(err, VT_EINPUT, "%s: data after the end of the tar archive", A);
    }
    return VT_OK;
}

static int read_archive(reader *r, vt_error *err)
{
    const char *A = r->archive;
    vt_seal *s = r->s;
    int fd;
    int orc = vt_input_open(A, NULL, &fd, NULL, err);
    if (orc)
        return orc;
    struct stat st;
    int rc = VT_OK;
    struct archive *a = NULL;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        rc = vt_error_set(err, VT_EINPUT, "%s: expected a regular file", A);
        goto out;
    }
    if (r->seal.present && (uint64_t)st.st_size != r->seal.archive_size) {
        rc = vt_error_set(err, VT_ECHECK, "%s: size %llu bytes differs from the seal's %llu (%s)", A,
                          (unsigned long long)st.st_size, (unsigned long long)r->seal.archive_size, r->seal.path);
        goto out;
    }
    posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    r->exact = vt_nameset_new(0);
    r->folded = vt_nameset_new(1);
    r->md = EVP_MD_CTX_new();
    a = archive_read_new();
    if (!r->exact || !r->folded || !r->md || !a) {
        rc = vt_error_set(err, VT_EINPUT, "%s: out of memory", A);
        goto out;
    }
    if (!(r->gz = vt_gzr_open(fd, A, &s->limits, vt_seal_nthreads(s), err))) {
        rc = err->code;
        goto out;
    }
    if (archive_read_support_format_tar(a) != ARCHIVE_OK || archive_read_open(a, r, NULL, la_read, NULL) != ARCHIVE_OK) {
        rc = tar_fail(r, a, "not a tar archive", err);
        goto out;
    }
    for (;;) {
        struct archive_entry *ae;
        int k = archive_read_next_header(a, &ae);
        if (k == ARCHIVE_EOF)
            break;
        if (k != ARCHIVE_OK) { /* warnings too: a sealed archive has none */
            rc = tar_fail(r, a, "tar header", err);
            goto out;
        }
        if (++r->entries > s->limits.max_entries) {
            rc = vt_error_set(err, VT_EINPUT, "%s: more than the limit of %llu entries (--max-entries) refused", A,
                              (unsigned long long)s->limits.max_entries);
            goto out;
        }
        int is_dir = 0;
        uint64_t size = 0;
        if ((rc = check_entry(r, ae, &is_dir, &size, err)))
            goto out;
        rc = r->entries == 1 ? read_manifest(r, a, is_dir, size, err) : read_member(r, a, ae, is_dir, size, err);
        if (rc)
            goto out;
        r->n_ok += r->entries > 1;
        if (r->entries == 1)
            vt_progress_start(s->progress, "members", (int64_t)r->man.n);
        else
            vt_progress_add(s->progress, 1);
    }
    vt_progress_end(s->progress);
    if (r->entries == 0) {
        rc = vt_error_set(err, VT_EINPUT, "%s: empty tar archive: expected %s first", A, VT_SEAL_MANIFEST_NAME);
        goto out;
    }
    if (r->mi < r->man.n) {
        rc = vt_error_set(err, VT_ECHECK, "%s: member '%s': in the manifest, missing from the archive", A,
                          r->man.m[r->mi].path);
        goto out;
    }
    if ((rc = check_end(r, a, err)))
        goto out;
    vt_gzr_digest(r->gz, s->info.archive_sha256, &s->info.archive_size);
    if (r->seal.present && strcmp(s->info.archive_sha256, r->seal.archive_sha) != 0) {
        rc = vt_error_set(err, VT_ECHECK, "%s: sha256 %s differs from the seal's %s (%s)", A, s->info.archive_sha256,
                          r->seal.archive_sha, r->seal.path);
        goto out;
    }
    s->info.members = r->man.n;
    s->info.data_bytes = r->data_bytes;
    s->info.seal_checked = r->seal.present;
out:
    if (a)
        archive_read_free(a);
    vt_gzr_free(r->gz);
    vt_nameset_free(r->exact);
    vt_nameset_free(r->folded);
    EVP_MD_CTX_free(r->md);
    /* Kept for vt_seal_checked: the handle takes the manifest over. */
    vt_seal_checked_free(s);
    s->checked = r->man;
    s->n_checked = r->n_ok;
    memset(&r->man, 0, sizeof r->man);
    free(r->mbuf);
    close(fd);
    return rc;
}

/* The seal: the one set, or ARCHIVE.seal.json (required by verify). */
static int find_seal(vt_seal *s, const char *archive, int required, seal_doc *d, vt_error *err)
{
    memset(d, 0, sizeof d[0]);
    if ((size_t)snprintf(d->path, sizeof d->path, "%s", s->seal_path ? s->seal_path : archive) >= sizeof d->path ||
        (!s->seal_path && strlen(d->path) + 10 >= sizeof d->path))
        return vt_error_set(err, VT_EINPUT, "%s: path too long", archive);
    if (!s->seal_path)
        strcat(d->path, ".seal.json");
    if (!required && !s->seal_path && access(d->path, F_OK) != 0 && errno == ENOENT)
        return VT_OK; /* extract without a seal: the manifest is still checked */
    return load_seal(d, err);
}

int vt_seal_verify(vt_seal *s, const char *archive_path, vt_error *err)
{
    vt_error_clear(err);
    memset(&s->info, 0, sizeof s->info);
    vt_seal_checked_free(s);
    reader r;
    memset(&r, 0, sizeof r);
    r.s = s;
    r.archive = archive_path;
    r.rootfd = -1;
    int rc = find_seal(s, archive_path, 1, &r.seal, err);
    if (rc)
        return rc;
    rc = read_archive(&r, err);
    if (rc == VT_EINPUT && r.seal.present) {
        /* An archive that no longer decompresses may simply have been altered:
         * against a seal, that is a failed check (exit 1), named by its hash. */
        vt_sha256_hex got;
        vt_error herr;
        vt_error_clear(&herr);
        if (vt_sha256_file(archive_path, &got, NULL, &herr) == VT_OK && strcmp(got.hex, r.seal.archive_sha) != 0) {
            char why[sizeof err->msg];
            memcpy(why, err->msg, sizeof why);
            rc = vt_error_set(err, VT_ECHECK, "%s: sha256 %s differs from the seal's %s (%s); reading it: %s",
                              archive_path, got.hex, r.seal.archive_sha, r.seal.path, why);
        }
    }
    if (rc == VT_OK)
        rc = check_attestation(archive_path, &s->info, err);
    return rc;
}

/* ---- extract ---- */

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *f)
{
    (void)sb;
    (void)flag;
    (void)f;
    return remove(p) ? -1 : 0;
}

static void remove_tree(const char *path)
{
    nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

/* DEST: absent, or an empty directory (not a symlink). */
static int check_dest(const char *dest, int *exists, vt_error *err)
{
    struct stat st;
    *exists = 0;
    if (lstat(dest, &st)) {
        if (errno == ENOENT)
            return VT_OK;
        return vt_error_set(err, VT_EINPUT, "%s: %s", dest, strerror(errno));
    }
    if (!S_ISDIR(st.st_mode))
        return vt_error_set(err, VT_EINPUT, "%s: exists and is not a directory: expected a new or empty directory",
                            dest);
    DIR *d = opendir(dest);
    if (!d)
        return vt_error_set(err, VT_EINPUT, "%s: %s", dest, strerror(errno));
    struct dirent *de;
    int empty = 1;
    while ((de = readdir(d)))
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0) {
            empty = 0;
            break;
        }
    closedir(d);
    if (!empty)
        return vt_error_set(err, VT_EINPUT, "%s: exists and is not empty: expected a new or empty directory", dest);
    *exists = 1;
    return VT_OK;
}

int vt_seal_extract(vt_seal *s, const char *archive_path, const char *dest_in, vt_error *err)
{
    vt_error_clear(err);
    memset(&s->info, 0, sizeof s->info);
    vt_seal_checked_free(s);
    char dest[PATH_MAX], parent[PATH_MAX], tmp[PATH_MAX];
    size_t dl = strlen(dest_in);
    while (dl > 1 && dest_in[dl - 1] == '/')
        dl--;
    if (dl == 0 || dl >= sizeof dest)
        return vt_error_set(err, VT_EINPUT, "'%s': expected a directory path", dest_in);
    memcpy(dest, dest_in, dl);
    dest[dl] = '\0';
    const char *slash = strrchr(dest, '/');
    const char *base = slash ? slash + 1 : dest;
    if (strcmp(base, ".") == 0 || strcmp(base, "..") == 0 || strcmp(dest, "/") == 0)
        return vt_error_set(err, VT_EINPUT, "%s: expected a new or empty directory", dest);
    if (!slash)
        snprintf(parent, sizeof parent, ".");
    else if (slash == dest)
        snprintf(parent, sizeof parent, "/");
    else
        snprintf(parent, sizeof parent, "%.*s", (int)(slash - dest), dest);
    int exists;
    int rc = check_dest(dest, &exists, err);
    if (rc)
        return rc;
    /* The temp directory is beside DEST, so the final rename stays on one
     * file system; dot-named so that it is hidden meanwhile. */
    if ((size_t)snprintf(tmp, sizeof tmp, "%s/.%.100s.vt-extract-XXXXXX", parent, base) >= sizeof tmp)
        return vt_error_set(err, VT_EINPUT, "%s: path too long", dest);
    if (!mkdtemp(tmp))
        return vt_error_set(err, VT_EINPUT, "%s: cannot create a directory beside it: %s", dest, strerror(errno));

    reader r;
    memset(&r, 0, sizeof r);
    r.s = s;
    r.archive = archive_path;
    r.rootfd = open(tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (r.rootfd < 0)
        rc = vt_error_set(err, VT_EINPUT, "%s: %s", tmp, strerror(errno));
    if (rc == VT_OK)
        rc = find_seal(s, archive_path, 0, &r.seal, err);
    if (rc == VT_OK)
        rc = read_archive(&r, err);
    if (rc == VT_OK && (fchmod(r.rootfd, 0755) || syncfs(r.rootfd)))
        rc = vt_error_set(err, VT_EINPUT, "%s: %s", tmp, strerror(errno));
    if (rc == VT_OK) {
        /* Onto an empty directory rename() replaces it atomically; else no clobber. */
        int k = exists ? rename(tmp, dest) : renameat2(AT_FDCWD, tmp, AT_FDCWD, dest, RENAME_NOREPLACE);
        if (k && !exists && (errno == EINVAL || errno == ENOSYS))
            k = access(dest, F_OK) == 0 ? (errno = EEXIST, -1) : rename(tmp, dest);
        if (k)
            rc = vt_error_set(err, VT_EINPUT, "%s: cannot move the extracted tree into place: %s", dest,
                              strerror(errno));
    }
    if (r.rootfd >= 0)
        close(r.rootfd);
    if (rc) {
        remove_tree(tmp);
        return rc;
    }
    int pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (pfd >= 0) {
        fsync(pfd);
        close(pfd);
    }
    return VT_OK;
}
