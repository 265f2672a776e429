/* Safe publication of output files; the guarantees are in vt_publish.h. */
#include "vt_publish.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif

/* Leftover names are ".NAME.vt-tmp-..." / ".NAME.vt-bak-...": a dot file so
 * that globs skip it, NAME so that a user sees whose leftover it is. */
#define NAME_KEEP 100
#define TMP_TAG ".vt-tmp-"
#define BAK_TAG ".vt-bak-"

/* Who a path is: for an existing file its st_dev/st_ino (catches hard links);
 * for every path the canonical spelling realpath(parent) + "/" + basename
 * (catches the same new path spelled differently). */
typedef struct ident {
    int exists;
    dev_t dev;
    ino_t ino;
    char *canon; /* NULL when the parent cannot be resolved */
} ident;

/* What one item has on disk at any moment, so that a failure can undo it. */
typedef struct slot {
    const char *path;
    char *dir, *base;
    int dfd, fd;
    ident id;
    char tmp[NAME_MAX + 1], bak[NAME_MAX + 1];
    int has_tmp;    /* tmp exists in dfd */
    int has_bak;    /* bak exists in dfd and holds the old content */
    int bak_linked; /* bak is a hard link: the target still names the old file until placed */
    int placed;     /* the new file is at the target */
} slot;

static int sys_error(vt_error *err, const char *path, const char *what, int e, const char *expected)
{
    return vt_error_set(err, VT_EINPUT, "%s: %s: %s: expected %s", path, what, strerror(e), expected);
}

/* Splits PATH into its directory ("." when none) and basename; a path that
 * names no file (empty, trailing '/', "." or "..") is refused. */
static int split_path(const char *path, char **dir, char **base, vt_error *err)
{
    *dir = *base = NULL;
    const char *slash = strrchr(path, '/');
    const char *b = slash ? slash + 1 : path;
    if (!*b || !strcmp(b, ".") || !strcmp(b, ".."))
        return vt_error_set(err, VT_EINPUT, "%s: names no file: expected a file path", *path ? path : "(empty path)");
    if (!slash)
        *dir = strdup(".");
    else if (slash == path)
        *dir = strdup("/");
    else
        *dir = strndup(path, (size_t)(slash - path));
    *base = strdup(b);
    if (!*dir || !*base) {
        free(*dir);
        free(*base);
        *dir = *base = NULL;
        return vt_error_set(err, VT_EINPUT, "%s: out of memory: expected memory for the path", path);
    }
    return VT_OK;
}

/* realpath(dir) + "/" + base, or NULL (errno set). */
static char *canon_join(const char *dir, const char *base)
{
    char *rp = realpath(dir, NULL);
    if (!rp)
        return NULL;
    size_t n = strlen(rp) + strlen(base) + 2;
    char *c = malloc(n);
    if (c)
        snprintf(c, n, "%s%s%s", rp, strcmp(rp, "/") ? "/" : "", base);
    else
        errno = ENOMEM;
    free(rp);
    return c;
}

/* Identity of an input path, following symlinks by hand so that a dangling
 * one still yields the path it would create (an output there aliases it). */
static int input_ident(const char *path, ident *id, vt_error *err)
{
    memset(id, 0, sizeof *id);
    char *cur = strdup(path);
    if (!cur)
        return vt_error_set(err, VT_EINPUT, "%s: out of memory: expected memory for the path", path);
    for (int hops = 0;; hops++) {
        struct stat st;
        if (hops > 40) {
            free(cur);
            return vt_error_set(err, VT_EINPUT, "%s: too many levels of symlinks: expected a resolvable input", path);
        }
        if (lstat(cur, &st) != 0) {
            int e = errno;
            if (e != ENOENT) {
                free(cur);
                return sys_error(err, path, "cannot stat input", e, "an accessible input path");
            }
            /* Absent: only its spelling can alias; an unresolvable parent
             * means no output can be there either. */
            char *dir, *base;
            if (split_path(cur, &dir, &base, NULL) == VT_OK) {
                id->canon = canon_join(dir, base);
                free(dir);
                free(base);
            }
            break;
        }
        if (S_ISLNK(st.st_mode)) {
            char target[PATH_MAX];
            ssize_t len = readlink(cur, target, sizeof target - 1);
            if (len < 0) {
                int e = errno;
                free(cur);
                return sys_error(err, path, "cannot read symlink", e, "a readable input symlink");
            }
            target[len] = '\0';
            char *next;
            const char *slash = strrchr(cur, '/');
            if (target[0] == '/' || !slash) {
                next = strdup(target);
            } else {
                size_t n = (size_t)(slash - cur) + 1 + (size_t)len + 1;
                next = malloc(n);
                if (next)
                    snprintf(next, n, "%.*s/%s", (int)(slash - cur), cur, target);
            }
            free(cur);
            if (!next)
                return vt_error_set(err, VT_EINPUT, "%s: out of memory: expected memory for the path", path);
            cur = next;
            continue;
        }
        id->exists = 1;
        id->dev = st.st_dev;
        id->ino = st.st_ino;
        id->canon = realpath(cur, NULL);
        break;
    }
    free(cur);
    return VT_OK;
}

static int same_file(const ident *a, const ident *b)
{
    if (a->exists && b->exists && a->dev == b->dev && a->ino == b->ino)
        return 1;
    return a->canon && b->canon && !strcmp(a->canon, b->canon);
}

static int is_symlink(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0 && S_ISLNK(st.st_mode);
}

/* Fills s (dir, base, dfd, identity) for one output and refuses an output
 * that is a symlink or not a regular file. */
static int output_ident(slot *s, const vt_publish_opts *o, vt_error *err)
{
    const char *path = s->path;
    if (split_path(path, &s->dir, &s->base, err) != VT_OK)
        return VT_EINPUT;
    struct stat st;
    if (lstat(path, &st) == 0) {
        if (S_ISLNK(st.st_mode)) {
            /* Name the input it points at when it does: the likelier mistake. */
            ident target;
            if (input_ident(path, &target, NULL) == VT_OK) {
                for (int j = 0; j < o->n_inputs; j++) {
                    ident in;
                    if (input_ident(o->inputs[j], &in, NULL) != VT_OK)
                        continue;
                    int hit = same_file(&target, &in);
                    free(in.canon);
                    if (hit) {
                        free(target.canon);
                        return vt_error_set(err, VT_EINPUT,
                                            "%s: output is a symlink to input %s: expected a regular file or a new path, not a symlink",
                                            path, o->inputs[j]);
                    }
                }
                free(target.canon);
            }
            return vt_error_set(err, VT_EINPUT, "%s: output is a symlink: expected a regular file or a new path, not a symlink",
                                path);
        }
        if (!S_ISREG(st.st_mode))
            return vt_error_set(err, VT_EINPUT, "%s: output exists and is not a regular file: expected a regular file or a new path",
                                path);
        s->id.exists = 1;
        s->id.dev = st.st_dev;
        s->id.ino = st.st_ino;
    } else if (errno != ENOENT) {
        return sys_error(err, path, "cannot stat output", errno, "an accessible output path");
    }
    s->id.canon = canon_join(s->dir, s->base);
    if (!s->id.canon)
        return vt_error_set(err, VT_EINPUT, "%s: directory %s: %s: expected an existing directory", path, s->dir,
                            strerror(errno));
    s->dfd = open(s->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (s->dfd < 0)
        return vt_error_set(err, VT_EINPUT, "%s: directory %s: %s: expected an accessible directory", path, s->dir,
                            strerror(errno));
    return VT_OK;
}

/* Every alias check, before anything is written. */
static int check_aliases(slot *sl, int n, const vt_publish_opts *o, vt_error *err)
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++) {
            const char *a = sl[i].path, *b = sl[j].path;
            if (!strcmp(a, b))
                return vt_error_set(err, VT_EINPUT, "%s: listed twice as an output: expected distinct output paths", a);
            if (!same_file(&sl[i].id, &sl[j].id))
                continue;
            if (sl[i].id.exists && sl[j].id.exists && strcmp(sl[i].id.canon, sl[j].id.canon))
                return vt_error_set(err, VT_EINPUT,
                                    "%s: output is a hard link to output %s (same file): expected distinct output files", a, b);
            return vt_error_set(err, VT_EINPUT, "%s: output is output %s by another path: expected distinct output paths", a,
                                b);
        }
    for (int j = 0; j < o->n_inputs; j++) {
        const char *in_path = o->inputs[j];
        if (!in_path)
            return vt_error_set(err, VT_EINPUT, "inputs[%d]: NULL: expected an input path", j);
        ident in;
        if (input_ident(in_path, &in, err) != VT_OK)
            return VT_EINPUT;
        int in_link = is_symlink(in_path);
        for (int i = 0; i < n; i++) {
            const char *out = sl[i].path;
            if (!strcmp(out, in_path) || !same_file(&sl[i].id, &in))
                continue;
            int hard = sl[i].id.exists && in.exists && sl[i].id.dev == in.dev && sl[i].id.ino == in.ino &&
                       (!in.canon || strcmp(sl[i].id.canon, in.canon));
            free(in.canon);
            if (in_link)
                return vt_error_set(err, VT_EINPUT,
                                    "%s: output is what input %s links to (the input is a symlink): expected a file distinct from every input",
                                    out, in_path);
            if (hard)
                return vt_error_set(err, VT_EINPUT,
                                    "%s: output is a hard link to input %s (same file): expected a file distinct from every input",
                                    out, in_path);
            return vt_error_set(err, VT_EINPUT, "%s: output is input %s by another path: expected a file distinct from every input",
                                out, in_path);
        }
        /* The literal same path is checked apart so that its message says so
         * even when the input does not exist yet. */
        for (int i = 0; i < n; i++)
            if (!strcmp(sl[i].path, in_path)) {
                free(in.canon);
                return vt_error_set(err, VT_EINPUT,
                                    "%s: output is the same path as an input: expected an output path distinct from every input",
                                    in_path);
            }
        free(in.canon);
    }
    return VT_OK;
}

/* Name unique across processes and threads: pid, a counter, 64 random bits. */
static void unique_name(char *buf, const char *base, const char *tag)
{
    static atomic_ulong counter;
    uint64_t r = 0;
    if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        r = (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ull ^ (uint64_t)ts.tv_sec ^ (uint64_t)(uintptr_t)buf;
    }
    snprintf(buf, NAME_MAX + 1, ".%.*s%s%ld-%lu-%016llx", NAME_KEEP, base, tag, (long)getpid(),
             (unsigned long)atomic_fetch_add(&counter, 1), (unsigned long long)r);
}

/* rename that never replaces an existing target. */
static int rename_noreplace(int dfd, const char *from, const char *to, int fallback)
{
    if (!(fallback & VT_PUBLISH_NO_RENAMEAT2)) {
        if (syscall(SYS_renameat2, dfd, from, dfd, to, RENAME_NOREPLACE) == 0)
            return 0;
        if (errno != EINVAL && errno != ENOSYS)
            return -1;
    }
    /* link() refuses an existing target, so link + unlink is a no-clobber
     * rename where renameat2 is missing (kernel or file system). */
    if (fallback & VT_PUBLISH_NO_HARDLINKS) {
        errno = EPERM;
        return -1;
    }
    if (linkat(dfd, from, dfd, to, 0) != 0)
        return -1;
    if (unlinkat(dfd, from, 0) != 0) {
        int e = errno;
        unlinkat(dfd, to, 0);
        errno = e;
        return -1;
    }
    return 0;
}

static int hook(const vt_publish_opts *o, const char *step, int item, const char *path, vt_error *err)
{
    if (o->hook && o->hook(step, item, o->hook_ctx) != 0)
        return vt_error_set(err, VT_EINPUT, "%s: publication failed at step %s (test hook): expected the step to succeed", path,
                            step);
    return VT_OK;
}

int vt_publish_write_all(int fd, const void *buf, size_t n, const char *what, vt_error *err)
{
    const unsigned char *p = buf;
    while (n > 0) {
        size_t chunk = n > (size_t)SSIZE_MAX ? (size_t)SSIZE_MAX : n;
        ssize_t w = write(fd, p, chunk);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return sys_error(err, what, "write failed", errno, "the whole content written");
        }
        if (w == 0)
            return vt_error_set(err, VT_EINPUT, "%s: write made no progress: expected the whole content written", what);
        p += w;
        n -= (size_t)w;
    }
    return VT_OK;
}

/* Phase 1 for one item: its complete, fsynced temp file beside the target. */
static int write_temp(slot *s, const vt_publish_item *it, int i, const vt_publish_opts *o, vt_error *err)
{
    for (int tries = 0; s->fd < 0; tries++) {
        unique_name(s->tmp, s->base, TMP_TAG);
        /* O_EXCL|O_NOFOLLOW: never reuse or follow anything already there. */
        s->fd = openat(s->dfd, s->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (s->fd < 0 && ((errno != EEXIST && errno != EINTR) || tries >= 100))
            return vt_error_set(err, VT_EINPUT, "%s: cannot create a temp file in %s: %s: expected a writable directory",
                                s->path, s->dir, strerror(errno));
    }
    s->has_tmp = 1;
    if (hook(o, "temp-created", i, s->path, err) != VT_OK)
        return VT_EINPUT;
    if (it->write) {
        vt_error werr;
        vt_error_clear(&werr);
        int rc = it->write(s->fd, it->write_ctx, &werr);
        if (rc != VT_OK) {
            if (werr.msg[0])
                return vt_error_set(err, VT_EINPUT, "%s", werr.msg);
            return vt_error_set(err, VT_EINPUT, "%s: the item's writer failed (code %d): expected it to write the content",
                                s->path, rc);
        }
    } else if (vt_publish_write_all(s->fd, it->data, it->size, s->path, err) != VT_OK) {
        return VT_EINPUT;
    }
    if (hook(o, "temp-written", i, s->path, err) != VT_OK)
        return VT_EINPUT;
    if (fsync(s->fd) != 0)
        return sys_error(err, s->path, "fsync of the temp file failed", errno, "the content on disk");
    int rc = close(s->fd);
    s->fd = -1;
    /* A close error (NFS) can be a lost write; EINTR still closed it. */
    if (rc != 0 && errno != EINTR)
        return sys_error(err, s->path, "close of the temp file failed", errno, "the content on disk");
    return hook(o, "temp-synced", i, s->path, err);
}

/* Phase 2 for one item: the old file backed up, the new one at the target. */
static int place(slot *s, int i, const vt_publish_opts *o, vt_error *err)
{
    if (s->id.exists) {
        int linked = 0;
        if (!(o->fallback & VT_PUBLISH_NO_HARDLINKS)) {
            for (int tries = 0;; tries++) {
                unique_name(s->bak, s->base, BAK_TAG);
                if (linkat(s->dfd, s->base, s->dfd, s->bak, 0) == 0) {
                    linked = 1;
                    break;
                }
                if (errno != EEXIST || tries >= 100)
                    break;
            }
            if (!linked && errno != EPERM && errno != EOPNOTSUPP && errno != EMLINK && errno != ENOSYS)
                return sys_error(err, s->path, "cannot link the old file to a backup", errno,
                                 "the old file still there and a writable directory");
        }
        if (linked) {
            s->has_bak = s->bak_linked = 1;
        } else {
            /* No hard links here: move the old file aside instead. */
            for (int tries = 0;; tries++) {
                unique_name(s->bak, s->base, BAK_TAG);
                if (rename_noreplace(s->dfd, s->base, s->bak, o->fallback) == 0)
                    break;
                if (errno != EEXIST || tries >= 100)
                    return sys_error(err, s->path, "cannot move the old file to a backup", errno, "a writable directory");
            }
            s->has_bak = 1;
        }
        /* The backup must be the file that was checked against the inputs. */
        struct stat st;
        if (fstatat(s->dfd, s->bak, &st, AT_SYMLINK_NOFOLLOW) != 0 || st.st_dev != s->id.dev || st.st_ino != s->id.ino)
            return vt_error_set(err, VT_EINPUT, "%s: changed during publication: expected no other writer", s->path);
        if (hook(o, "backed-up", i, s->path, err) != VT_OK)
            return VT_EINPUT;
        /* With a linked backup the target still names the old file: one
         * atomic rename swaps in the new one, never leaving it absent. */
        int rc = s->bak_linked ? renameat(s->dfd, s->tmp, s->dfd, s->base)
                               : rename_noreplace(s->dfd, s->tmp, s->base, o->fallback);
        if (rc != 0)
            return sys_error(err, s->path, "cannot move the new file into place", errno, "a writable directory");
    } else if (rename_noreplace(s->dfd, s->tmp, s->base, o->fallback) != 0) {
        if (errno == EEXIST)
            return vt_error_set(err, VT_EINPUT, "%s: appeared during publication: expected a new path", s->path);
        return sys_error(err, s->path, "cannot move the new file into place", errno, "a writable directory");
    }
    s->has_tmp = 0;
    s->placed = 1;
    if (hook(o, "renamed", i, s->path, err) != VT_OK)
        return VT_EINPUT;
    if (fsync(s->dfd) != 0)
        return sys_error(err, s->dir, "fsync of the directory failed", errno, "the new entry on disk");
    return hook(o, "dir-synced", i, s->path, err);
}

/* Appends a failure of the undo to err's message, which keeps the original
 * cause first: the user must learn where the old content is. */
static void note_undo_failure(vt_error *err, const slot *s, const char *what)
{
    int e = errno;
    if (!err)
        return;
    char prev[sizeof err->msg];
    snprintf(prev, sizeof prev, "%s", err->msg);
    vt_error_set(err, err->code ? err->code : VT_EINPUT, "%s; and %s for %s failed: %s (see %s/%s)", prev, what, s->path,
                 strerror(e), s->dir, s->has_bak ? s->bak : s->tmp);
}

/* Undoes whatever each item has on disk, last first. */
static void roll_back(slot *sl, int n, const vt_publish_opts *o, vt_error *err)
{
    for (int i = n - 1; i >= 0; i--) {
        slot *s = &sl[i];
        if (s->dfd < 0)
            continue;
        if (s->fd >= 0) {
            close(s->fd);
            s->fd = -1;
        }
        if (s->has_tmp && unlinkat(s->dfd, s->tmp, 0) == 0)
            s->has_tmp = 0;
        else if (s->has_tmp && errno != ENOENT)
            note_undo_failure(err, s, "removing the temp file");
        if (s->placed && s->has_bak) {
            /* Atomic: the target goes from new straight back to old. */
            if (renameat(s->dfd, s->bak, s->dfd, s->base) == 0)
                s->has_bak = 0;
            else
                note_undo_failure(err, s, "restoring the old file");
        } else if (s->placed) {
            if (unlinkat(s->dfd, s->base, 0) != 0 && errno != ENOENT)
                note_undo_failure(err, s, "removing the new file");
        } else if (s->has_bak && s->bak_linked) {
            /* The target still is the old file; rename would be a no-op on
             * two links to one inode, so drop the extra link instead. */
            if (unlinkat(s->dfd, s->bak, 0) == 0)
                s->has_bak = 0;
            else
                note_undo_failure(err, s, "removing the backup link");
        } else if (s->has_bak) {
            if (rename_noreplace(s->dfd, s->bak, s->base, o->fallback) == 0)
                s->has_bak = 0;
            else
                note_undo_failure(err, s, "restoring the old file");
        }
        s->placed = 0;
        fsync(s->dfd); /* best effort: the undo is already visible */
    }
}

/* The checks made before anything is written: every output's identity,
 * aliasing among outputs and inputs, existing outputs without overwrite. */
static int preflight(slot *sl, int n, const vt_publish_opts *o, vt_error *err)
{
    int rc = VT_OK;
    for (int i = 0; i < n && rc == VT_OK; i++)
        rc = output_ident(&sl[i], o, err);
    if (rc == VT_OK)
        rc = check_aliases(sl, n, o, err);
    for (int i = 0; i < n && rc == VT_OK; i++)
        if (sl[i].id.exists && !o->overwrite)
            rc = vt_error_set(err, VT_EINPUT, "%s: output exists: expected a new path (or overwrite)", sl[i].path);
    return rc;
}

static void free_slots(slot *sl, int n)
{
    for (int i = 0; i < n; i++) {
        if (sl[i].fd >= 0)
            close(sl[i].fd);
        if (sl[i].dfd >= 0)
            close(sl[i].dfd);
        free(sl[i].dir);
        free(sl[i].base);
        free(sl[i].id.canon);
    }
    free(sl);
}

int vt_publish_check(const char *const *paths, int n, const vt_publish_opts *opts, vt_error *err)
{
    static const vt_publish_opts none;
    const vt_publish_opts *o = opts ? opts : &none;
    if (n <= 0)
        return VT_OK;
    slot *sl = calloc((size_t)n, sizeof *sl);
    if (!sl)
        return vt_error_set(err, VT_EINPUT, "publish: out of memory: expected memory for %d items", n);
    for (int i = 0; i < n; i++) {
        sl[i].path = paths[i];
        sl[i].dfd = sl[i].fd = -1;
    }
    int rc = preflight(sl, n, o, err);
    free_slots(sl, n);
    return rc;
}

int vt_publish_group(const vt_publish_item *items, int n, const vt_publish_opts *opts, vt_error *err)
{
    static const vt_publish_opts none;
    const vt_publish_opts *o = opts ? opts : &none;
    vt_error_clear(err);
    if (n < 0 || (n > 0 && !items))
        return vt_error_set(err, VT_EINPUT, "publish: %d items: expected a non-negative count and an item array", n);
    if (o->n_inputs < 0 || (o->n_inputs > 0 && !o->inputs))
        return vt_error_set(err, VT_EINPUT, "publish: %d inputs: expected a non-negative count and an input array",
                            o->n_inputs);
    if (n == 0)
        return VT_OK;
    for (int i = 0; i < n; i++) {
        if (!items[i].path)
            return vt_error_set(err, VT_EINPUT, "publish: item %d: no path: expected an output path", i);
        if (!items[i].write && !items[i].data && items[i].size > 0)
            return vt_error_set(err, VT_EINPUT, "%s: no data and no writer: expected content", items[i].path);
    }
    slot *sl = calloc((size_t)n, sizeof *sl);
    if (!sl)
        return vt_error_set(err, VT_EINPUT, "publish: out of memory: expected memory for %d items", n);
    for (int i = 0; i < n; i++) {
        sl[i].path = items[i].path;
        sl[i].dfd = sl[i].fd = -1;
    }

    /* Checks: nothing is written until every one has passed. */
    int rc = preflight(sl, n, o, err);

    /* Every temp file complete before the first target changes: this keeps
     * the time during which the group is half new as short as possible. */
    for (int i = 0; i < n && rc == VT_OK; i++)
        rc = write_temp(&sl[i], &items[i], i, o, err);
    for (int i = 0; i < n && rc == VT_OK; i++)
        rc = place(&sl[i], i, o, err);
    if (rc != VT_OK) {
        rc = VT_EINPUT;
        roll_back(sl, n, o, err);
    } else {
        /* Committed: every item is in place, the backups are garbage. */
        for (int i = 0; i < n; i++) {
            if (!sl[i].has_bak)
                continue;
            if (unlinkat(sl[i].dfd, sl[i].bak, 0) != 0 && errno != ENOENT)
                vt_error_set(err, VT_OK, "%s: published, but the backup %s/%s could not be removed: %s", sl[i].path,
                             sl[i].dir, sl[i].bak, strerror(errno));
            fsync(sl[i].dfd);
        }
    }
    free_slots(sl, n);
    return rc;
}

int vt_publish_file(const char *path, const void *data, size_t size, int overwrite, vt_error *err)
{
    vt_publish_item item = {.path = path, .data = data, .size = size};
    vt_publish_opts opts = {.overwrite = overwrite};
    return vt_publish_group(&item, 1, &opts, err);
}

/* The PID in a leftover name after its tag, or -1. */
static long leftover_pid(const char *name, const char *prefix, size_t plen)
{
    if (strncmp(name, prefix, plen))
        return -1;
    char *end;
    errno = 0;
    long pid = strtol(name + plen, &end, 10);
    if (errno || end == name + plen || *end != '-' || pid <= 0)
        return -1;
    return pid;
}

int vt_publish_sweep(const char *path, int *removed, vt_error *err)
{
    vt_error_clear(err);
    if (removed)
        *removed = 0;
    if (!path)
        return vt_error_set(err, VT_EINPUT, "publish sweep: no path: expected a target path");
    char *dir, *base;
    if (split_path(path, &dir, &base, err) != VT_OK)
        return VT_EINPUT;
    char tmp_prefix[NAME_MAX + 1], bak_prefix[NAME_MAX + 1];
    snprintf(tmp_prefix, sizeof tmp_prefix, ".%.*s%s", NAME_KEEP, base, TMP_TAG);
    snprintf(bak_prefix, sizeof bak_prefix, ".%.*s%s", NAME_KEEP, base, BAK_TAG);
    size_t tlen = strlen(tmp_prefix), blen = strlen(bak_prefix);
    int rc = VT_OK;
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int lfd = dfd >= 0 ? dup(dfd) : -1;
    DIR *d = lfd >= 0 ? fdopendir(lfd) : NULL;
    if (!d) {
        rc = sys_error(err, dir, "cannot list the directory", errno, "a readable directory");
        if (lfd >= 0)
            close(lfd);
        goto out;
    }
    struct stat st;
    int target_exists = fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0;
    /* Deleting while reading a directory may skip entries: collect first. */
    char **names = NULL;
    size_t count = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        long pid = leftover_pid(e->d_name, tmp_prefix, tlen);
        if (pid < 0 && target_exists)
            pid = leftover_pid(e->d_name, bak_prefix, blen);
        if (pid < 0)
            continue;
        /* A live process (or one we may not signal) may still be using it. */
        if (kill((pid_t)pid, 0) == 0 || errno == EPERM)
            continue;
        if (count == cap) {
            cap = cap ? 2 * cap : 8;
            char **grown = realloc(names, cap * sizeof *names);
            if (!grown) {
                rc = vt_error_set(err, VT_EINPUT, "%s: out of memory: expected memory for the listing", dir);
                break;
            }
            names = grown;
        }
        if (!(names[count] = strdup(e->d_name))) {
            rc = vt_error_set(err, VT_EINPUT, "%s: out of memory: expected memory for the listing", dir);
            break;
        }
        count++;
    }
    closedir(d);
    for (size_t i = 0; i < count; i++) {
        if (rc == VT_OK) {
            if (unlinkat(dfd, names[i], 0) == 0) {
                if (removed)
                    (*removed)++;
            } else if (errno != ENOENT) {
                rc = vt_error_set(err, VT_EINPUT, "%s/%s: cannot remove leftover: %s: expected a writable directory", dir,
                                  names[i], strerror(errno));
            }
        }
        free(names[i]);
    }
    free(names);
    if (rc == VT_OK)
        fsync(dfd);
out:
    if (dfd >= 0)
        close(dfd);
    free(dir);
    free(base);
    return rc;
}
