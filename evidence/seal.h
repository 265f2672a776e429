/* vt-seal: deterministic sealed evidence archives and their safe verification.
 *
 * create   DIR -> X.tar.gz + X.tar.gz.seal.json (+ X.tar.gz.intoto.json),
 *          published as one group (common/vt_publish.h): all or nothing.
 * verify   X.tar.gz against its seal, every member against the manifest.
 * extract  X.tar.gz into a new directory, refusing anything hostile, checking
 *          every member against the manifest; nothing is left on refusal.
 *
 * Archive format (see evidence/README.md for the reasons):
 *  - tar, libarchive's pax restricted writer: plain ustar headers, a pax
 *    header only where ustar cannot say it (long names, sizes >= 8 GiB);
 *  - "manifest.json" first, then every directory and regular file of DIR
 *    sorted by path in byte order (directories as "a/b/");
 *  - mtime 0, uid/gid 0, empty uname/gname, mode 0755 for directories and for
 *    files with any execute bit, 0644 for other files;
 *  - gzip as a series of independent members of 1 MiB of tar each (so that
 *    they can be inflated in parallel), no name, mtime 0, with an extra field
 *    "VT" giving the member's compressed and uncompressed sizes; any gzip
 *    reader (gzip, GNU tar, libarchive, Python) reads it as one stream.
 * The bytes depend only on the tree, the level and the zlib version: not on
 * times, owners, umask, thread count or the order the file system lists.
 *
 * Usage follows libarchive: a handle holds the settings, an operation fills
 * vt_error and returns VT_OK, VT_ECHECK (the archive differs from its
 * manifest or seal) or VT_EINPUT (bad usage, unreadable, malformed or
 * hostile input). The library never prints or exits. */
#ifndef VT_SEAL_H
#define VT_SEAL_H

#include <stddef.h>
#include <stdint.h>

#include "../common/vt_error.h"

typedef struct vt_seal vt_seal;

/* Limits against hostile archives, applied by verify and extract. */
typedef struct vt_seal_limits {
    uint64_t max_entries;    /* tar members, manifest included */
    uint64_t max_total_size; /* bytes of the uncompressed tar stream */
    uint64_t max_ratio;      /* uncompressed / compressed, once past 4 MiB */
} vt_seal_limits;

enum {
    VT_SEAL_DEFAULT_MAX_ENTRIES = 1000000,
    VT_SEAL_DEFAULT_MAX_RATIO = 250
};
#define VT_SEAL_DEFAULT_MAX_TOTAL_SIZE ((uint64_t)64 << 30)

/* What the last successful operation found. */
typedef struct vt_seal_info {
    uint64_t members;        /* manifest entries (directories and files) */
    uint64_t data_bytes;     /* sum of the files' sizes */
    uint64_t archive_size;   /* bytes of X.tar.gz */
    char archive_sha256[65];
    char manifest_sha256[65];
    int seal_checked;        /* verify/extract: the seal was found and matched */
    int attestation_checked; /* verify: an in-toto statement was found and matched */
} vt_seal_info;

vt_seal *vt_seal_new(void);
void vt_seal_free(vt_seal *s);

void vt_seal_limits_default(vt_seal_limits *l);
int vt_seal_set_limits(vt_seal *s, const vt_seal_limits *l, vt_error *err);
/* gzip level 1..9 (default 6, as gzip's). */
int vt_seal_set_level(vt_seal *s, int level, vt_error *err);
/* Threads for hashing, compression and decompression; 0: one per CPU. The
 * archive's bytes do not depend on it. */
int vt_seal_set_threads(vt_seal *s, int n, vt_error *err);
/* create: also write X.tar.gz.intoto.json (in-toto Statement v1). */
void vt_seal_set_attestation(vt_seal *s, int on);
/* create: replace existing outputs (with backup and rollback, vt_publish). */
void vt_seal_set_overwrite(vt_seal *s, int on);
/* Members written (create) or checked (verify, extract) counted on p
 * (common/vt_progress.h); NULL: none. */
struct vt_progress;
void vt_seal_set_progress(vt_seal *s, struct vt_progress *p);
/* verify/extract: the seal to check; NULL (default) is ARCHIVE.seal.json,
 * which verify requires and extract checks when it exists. */
int vt_seal_set_seal_path(vt_seal *s, const char *path, vt_error *err);

int vt_seal_create(vt_seal *s, const char *dir, const char *archive_path, vt_error *err);
int vt_seal_verify(vt_seal *s, const char *archive_path, vt_error *err);
/* dest must not exist (its parent must) or be an empty directory. */
int vt_seal_extract(vt_seal *s, const char *archive_path, const char *dest, vt_error *err);

const vt_seal_info *vt_seal_result(const vt_seal *s);

/* A manifest entry (a member of the archive). */
typedef struct vt_seal_entry {
    const char *path;   /* directories end in '/' */
    int is_dir;
    unsigned mode;      /* 0644 or 0755 */
    uint64_t size;      /* 0 for a directory */
    const char *sha256; /* 64 hex digits; "" for a directory */
} vt_seal_entry;

/* After verify or extract, also one that failed: how many entries the
 * archive's manifest lists (0 where none was read), and how many of them
 * were found in the archive as it lists them (type, mode, size, sha256),
 * in its order: all of them when the operation succeeded, those before the
 * failure when a check failed. Valid until the next operation on s. */
size_t vt_seal_checked(const vt_seal *s, size_t *listed);
/* Entry i (< listed) of that manifest; 0 past the end. */
int vt_seal_checked_entry(const vt_seal *s, size_t i, vt_seal_entry *out);

#endif
