/* Safe publication of output files: all of a group or none, never a partial
 * file, never over an input, never over an existing file unless asked.
 *
 * Each item is written to a temp file in its target directory
 * (O_CREAT|O_EXCL|O_NOFOLLOW), fsynced, then moved into place with a
 * no-clobber rename (renameat2 RENAME_NOREPLACE, or link+unlink where the file
 * system lacks it), and the directory fsynced. With overwrite, an existing
 * target is first moved to a backup name beside it and restored if anything
 * in the group fails; backups are removed only once every item is in place.
 *
 * Before anything is written, every output is checked against every other
 * output and every declared input: the same path, a symlink to it, or a hard
 * link to it (st_dev/st_ino) is refused (VT_EINPUT). A symlink as the output
 * path itself is refused.
 *
 * With overwrite, the backup is a hard link to the old file (link()), and the
 * new file replaces the target with one atomic rename(), so the target path
 * always names either the complete old or the complete new file, even if the
 * process is killed at any instant. Only where the file system has no hard
 * links is the old file renamed to the backup name (a short window with no
 * file at the target; the backup then holds the old content).
 *
 * Order: every item's temp file is written and fsynced first; only then are
 * the items moved into place one by one, then the backups removed. A failure
 * the process survives restores every target. A crash (SIGKILL, power loss)
 * cannot be undone: each target is then, individually, its complete old or
 * complete new content, and files named
 *     .NAME.vt-tmp-PID-N-RANDOM   (an unpublished temp file)
 *     .NAME.vt-bak-PID-N-RANDOM   (a backup of NAME's old content)
 * may remain beside NAME (NAME truncated to 100 bytes). They are garbage once
 * NAME exists; vt_publish_sweep() removes those of dead processes.
 *
 * The new file's mode is 0644 less the umask (not the old file's mode). */
#ifndef VT_PUBLISH_H
#define VT_PUBLISH_H

#include <stddef.h>

#include "vt_error.h"

typedef struct vt_publish_item {
    const char *path;
    /* Content: either a buffer ... */
    const void *data;
    size_t size;
    /* ... or a writer that streams it to fd (when write is not NULL). */
    int (*write)(int fd, void *ctx, vt_error *err);
    void *write_ctx;
} vt_publish_item;

/* Test hook: called at each step of the publication with a step name
 * ("temp-written", "backed-up", "renamed", ...) and the item index; a nonzero
 * return makes the publication fail there (as an injected I/O error would).
 * The steps, in the order they happen:
 *   phase 1, for each item 0..n-1:
 *     "temp-created"  the temp file exists (empty) beside the target
 *     "temp-written"  all content written, not yet fsynced
 *     "temp-synced"   the temp file fsynced and closed
 *   phase 2, for each item 0..n-1:
 *     "backed-up"     the old target hard-linked (or renamed) to its backup;
 *                     only when overwrite is set and the target exists
 *     "renamed"       the new file is at the target path
 *     "dir-synced"    the target directory fsynced
 * After "dir-synced" of the last item the group is committed: backups are
 * removed with no further hook calls (that can no longer be undone). */
typedef int (*vt_publish_hook)(const char *step, int item, void *ctx);

typedef struct vt_publish_opts {
    int overwrite;
    const char *const *inputs; /* paths the outputs may not alias */
    int n_inputs;
    vt_publish_hook hook;
    void *hook_ctx;
    /* Testing only: VT_PUBLISH_NO_RENAMEAT2 acts as if renameat2 were missing
     * (no-clobber rename by link+unlink), VT_PUBLISH_NO_HARDLINKS as if the
     * file system had no hard links (backup by rename). 0 in normal use. */
    int fallback;
} vt_publish_opts;

enum { VT_PUBLISH_NO_RENAMEAT2 = 1, VT_PUBLISH_NO_HARDLINKS = 2 };

/* Publishes n items as one group. VT_OK, or VT_EINPUT (alias, existing output
 * without overwrite, unwritable directory: nothing changed) with err naming
 * the path and what was expected. On a failure after writing began, every
 * target is left as it was before the call, and no temp or backup file
 * remains (if restoring itself fails, err says where the old content is).
 * On VT_OK err->msg is empty, except in the unlikely case that a backup could
 * not be removed after commit: the publication stands, err->code is VT_OK and
 * err->msg names the leftover backup. opts may be NULL (no inputs, no
 * overwrite). */
int vt_publish_group(const vt_publish_item *items, int n, const vt_publish_opts *opts, vt_error *err);

/* The checks vt_publish_group makes before writing (aliasing, existing
 * outputs without overwrite), alone: lets a tool refuse its outputs before
 * it spends time computing them. Same messages and codes. */
int vt_publish_check(const char *const *paths, int n, const vt_publish_opts *opts, vt_error *err);

/* One buffer to one path, no inputs; overwrite as in vt_publish_opts. */
int vt_publish_file(const char *path, const void *data, size_t size, int overwrite, vt_error *err);

/* Writes all n bytes to fd, resuming after short writes and EINTR; for item
 * writers. what names the file in the message. VT_OK or VT_EINPUT. */
int vt_publish_write_all(int fd, const void *buf, size_t n, const char *what, vt_error *err);

/* Removes the temp and backup files a killed publication left beside path
 * (see the names above), but only those whose process (the PID in the name)
 * no longer runs on this host, and backups only if path itself exists (one
 * may otherwise be the only copy of the old content). *removed (may be NULL)
 * counts them. Not for a directory shared between hosts while another host
 * publishes into it. VT_OK or VT_EINPUT. */
int vt_publish_sweep(const char *path, int *removed, vt_error *err);

#endif
