/* Shared internals of provenance/: multi-digest file hashing, hex/base64,
 * growable strings and line lists, strict JSON field access (parsing is
 * common/vt_json.h), RECORD CSV.
 * Not part of the public API. */
#ifndef VT_PROV_INTERNAL_H
#define VT_PROV_INTERNAL_H

#include "provenance.h"

#include <openssl/evp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

struct cJSON;

/* ---- digests ---- */
enum { VT_PROV_MAX_MD = 3 };

/* Up to VT_PROV_MAX_MD digests of one stream, computed in the same pass. */
typedef struct vt_prov_digest {
    const EVP_MD *md[VT_PROV_MAX_MD];
    int n_md;
    unsigned char out[VT_PROV_MAX_MD][EVP_MAX_MD_SIZE];
    unsigned int len[VT_PROV_MAX_MD];
    uint64_t size;
} vt_prov_digest;

/* Adds md to d (no-op when already there); returns its index. */
int vt_prov_digest_add(vt_prov_digest *d, const EVP_MD *md);

/* Hashes the regular file at path with every md of d. scratch (may be NULL:
 * allocated here) is a reusable read buffer of scratch_cap bytes.
 * Returns 0, or an errno value (EINVAL: not a regular file; EIO: the digest
 * itself failed). */
int vt_prov_digest_path(const char *path, vt_prov_digest *d, const vt_hash_options *opt, unsigned char *scratch,
                        size_t scratch_cap);

/* Incremental use (archive members): init, update, final. Return 0 or EIO. */
typedef struct vt_prov_stream {
    EVP_MD_CTX *ctx[VT_PROV_MAX_MD];
    vt_prov_digest *d;
} vt_prov_stream;
int vt_prov_stream_init(vt_prov_stream *s, vt_prov_digest *d);
int vt_prov_stream_update(vt_prov_stream *s, const void *data, size_t n);
int vt_prov_stream_final(vt_prov_stream *s);
void vt_prov_stream_free(vt_prov_stream *s);

void vt_prov_hex(const unsigned char *d, size_t n, char *out); /* out: 2n+1 bytes */
/* Standard base64 with padding, or URL-safe without padding. out: 4*ceil(n/3)+1. */
void vt_prov_b64(const unsigned char *d, size_t n, int urlsafe_nopad, char *out);
/* Decodes either alphabet, padding optional. Returns decoded length or -1. */
long vt_prov_b64_decode(const char *s, size_t len, unsigned char *out, size_t cap);
/* "sha256" / "sha384" / "sha512" (RECORD and SRI names) -> EVP_MD, else NULL. */
const EVP_MD *vt_prov_md_by_name(const char *name, size_t len);

/* ---- strings ---- */
#include "../common/vt_sbuf.h"

typedef struct vt_lines {
    char **v;
    int n, cap;
    int oom;
} vt_lines;
void vt_lines_addf(vt_lines *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void vt_lines_vaddf(vt_lines *l, const char *fmt, va_list ap);

char *vt_prov_strdup(const char *s);
/* Joins base and name ("base/name"); name alone when absolute or base NULL/"". */
char *vt_prov_join(const char *base, const char *name);
/* Reads a whole (small) file; NUL-terminated. Returns 0 or errno. */
int vt_prov_read_file(const char *path, size_t limit, char **out, size_t *len);
/* strerror(e), except that a file vt_prov_read_file or vt_prov_digest_path
 * refused for what it is (EINVAL, EISDIR, ENXIO, ELOOP) is named: "a FIFO:
 * expected a regular file" (common/vt_input.h's wording). Thread-local. */
const char *vt_prov_strerror(const char *path, int e);

/* ---- strict JSON (cJSON) field access ---- */
/* The member named key of obj (of a document vt_json_parse read: no key
 * twice); NULL with VT_EINPUT in err when absent. where names the object
 * for the message ("F: packages[2]"). */
struct cJSON *vt_prov_json_field(const struct cJSON *obj, const char *key, const char *file, const char *where,
                                 vt_error *err);

/* ---- RECORD (PEP 376 CSV: path,hash,size) ---- */
typedef struct vt_record_row {
    char *path;
    char *hash; /* "" when absent */
    char *size; /* "" when absent */
    int line;
} vt_record_row;

/* Parses CSV text (quoted fields, "" escapes, LF or CRLF). Every row must
 * have exactly 3 fields. Returns 0, or the 1-based line of the first bad row
 * (with *rows freed). -1 on out of memory. */
int vt_record_parse(const char *text, size_t len, vt_record_row **rows, int *n_rows);
void vt_record_free(vt_record_row *rows, int n);

/* ---- zip structure (wheels; zip_check.c) ---- */
/* Reads the zip at path as both a seeking and a streaming reader would (end
 * records, ZIP64 too; every central header; each local header, data
 * descriptor and the data itself, inflated and counted) and adds one
 * problem line for each member whose central directory entry disagrees
 * with its local header, descriptor or data, or whose bytes do not follow
 * the previous member's. VT_EINPUT (err: file, offset, what was expected)
 * when there is no readable central directory at all. */
int vt_prov_zip_check(const char *path, vt_lines *problems, vt_error *err);

/* Hash worker pool over n paths: each result independent (status[i] = 0 or errno). */
void vt_prov_digest_paths(const char *const *paths, int n, int n_threads, vt_prov_digest *d, int *status);

#endif
