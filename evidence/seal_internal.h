/* Internals shared by the vt-seal sources: handle, names, manifest, gzip. */
#ifndef VT_SEAL_INTERNAL_H
#define VT_SEAL_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "seal.h"

#define VT_SEAL_SCHEMA "vt.seal/1"
#define VT_SEAL_MANIFEST_SCHEMA "vt.seal.manifest/1"
#define VT_SEAL_MANIFEST_NAME "manifest.json"
#define VT_SEAL_INTOTO_TYPE "https://in-toto.io/Statement/v1"
#define VT_SEAL_PREDICATE_TYPE "https://vt.dev/evidence/v1"

enum {
    VT_SEAL_PATH_MAX = 4095, /* bytes of a member path */
    VT_SEAL_NAME_MAX = 255,  /* bytes of one component */
    VT_GZ_BLOCK = 1 << 20,   /* tar bytes per gzip member */
    VT_GZ_MEMBER_MAX = 4 << 20 /* largest member a "VT" field may declare */
};

int vt_seal_nthreads(const vt_seal *s);

/* ---- names ---- */
/* NULL if path is an admitted member path (printable ASCII but '\', relative,
 * no empty, "." or ".." component, directories ending in '/', files not),
 * else why not. */
const char *vt_seal_path_problem(const char *path, int is_dir);

/* A set of paths for duplicate and case-collision checks: keys compare
 * without a trailing '/', folded to lower case with fold. */
typedef struct vt_nameset vt_nameset;
vt_nameset *vt_nameset_new(int fold);
/* Adds path; returns NULL if new (or on out of memory: *oom set), else the
 * path that was there with the same key. */
const char *vt_nameset_add(vt_nameset *s, const char *path, int *oom);
void vt_nameset_free(vt_nameset *s);

/* ---- manifest ---- */
typedef struct vt_seal_member {
    char *path; /* directories end in '/' */
    int is_dir;
    unsigned mode; /* 0644 or 0755 */
    uint64_t size;
    char sha256[65];
} vt_seal_member;

typedef struct vt_seal_manifest {
    vt_seal_member *m;
    size_t n;
} vt_seal_manifest;

struct vt_seal {
    vt_seal_limits limits;
    int level, threads, attestation, overwrite;
    char *seal_path;
    vt_seal_info info;
    struct vt_progress *progress; /* members written or checked, or NULL */
    /* verify/extract: the manifest read (none: n 0), its first n_checked
     * entries found in the archive as it lists them. */
    vt_seal_manifest checked;
    size_t n_checked;
};

/* Frees s->checked (what the last verify or extract kept). */
void vt_seal_checked_free(vt_seal *s);

/* Canonical JSON of members (sorted, as given). malloc'd; NULL if no memory. */
char *vt_seal_manifest_json(const vt_seal_member *m, size_t n, size_t *len);
/* Parses and validates text: canonical form, sorted unique admitted paths,
 * parents listed, no case collisions. VT_EINPUT naming what with the problem. */
int vt_seal_manifest_parse(const char *text, size_t len, const char *what, uint64_t max_entries,
                           vt_seal_manifest *out, vt_error *err);
void vt_seal_manifest_free(vt_seal_manifest *m);

/* ---- small helpers ---- */
void vt_seal_hex(const unsigned char *d, size_t n, char *out);
int vt_seal_is_hex64(const char *s);
/* Growing text buffer; on out of memory it sets failed and ignores appends. */
typedef struct vt_seal_buf {
    char *p;
    size_t len, cap;
    int failed;
} vt_seal_buf;
void vt_seal_buf_add(vt_seal_buf *b, const char *s, size_t n);
void vt_seal_buf_printf(vt_seal_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- gzip writer: independent members of VT_GZ_BLOCK input, compressed by
 * n_threads workers (0: in the caller's thread), written to fd in order. The
 * bytes do not depend on n_threads. */
typedef struct vt_gzw vt_gzw;
vt_gzw *vt_gzw_new(int fd, const char *what, int level, int n_threads, vt_error *err);
int vt_gzw_write(vt_gzw *w, const void *data, size_t n, vt_error *err);
/* Writes what is left and waits for the workers; sha256 (hex) and size of
 * everything written. */
int vt_gzw_finish(vt_gzw *w, char sha256[65], uint64_t *size, vt_error *err);
void vt_gzw_free(vt_gzw *w);

/* ---- gzip reader: any gzip file (one or more members; CRC and length of
 * each checked, nothing after the last one), members with a "VT" field
 * inflated in parallel by n_threads workers, the stream handed out in order.
 * The compressed bytes are hashed as they are read. */
typedef struct vt_gzr vt_gzr;
vt_gzr *vt_gzr_open(int fd, const char *what, const vt_seal_limits *lim, int n_threads, vt_error *err);
/* Next piece of the uncompressed stream: > 0 bytes at *data (valid until the
 * next call), 0 at the end (the whole file read and checked), -1 on error. */
ssize_t vt_gzr_next(vt_gzr *r, const void **data, vt_error *err);
/* After vt_gzr_next returned 0: the file's sha256 (hex) and size. */
void vt_gzr_digest(const vt_gzr *r, char sha256[65], uint64_t *size);
void vt_gzr_free(vt_gzr *r);

#endif
