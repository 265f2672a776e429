/* Provenance: what exactly ran on what exactly. Hashes (SHA-256 through
 * OpenSSL EVP, streaming), model manifests, runtime identity of this process,
 * verification of packages (Python wheels, npm tarballs), launcher manifests. */
#ifndef VT_PROVENANCE_H
#define VT_PROVENANCE_H

#include <stddef.h>
#include <stdint.h>

#include "../common/vt_error.h"
#include "../common/vt_publish.h"

/* ---- hashing ---- */
/* Lower-case hex of SHA-256 (65 bytes with NUL). */
typedef struct vt_sha256_hex { char hex[65]; } vt_sha256_hex;

int vt_sha256_buffer(const void *data, size_t size, vt_sha256_hex *out);
/* The hex of a 32-byte digest computed elsewhere (a streamed EVP digest). */
void vt_sha256_hex_of(const unsigned char md[32], vt_sha256_hex *out);
/* Streams the file with large reads; *size_out (may be NULL) gets its size. */
int vt_sha256_file(const char *path, vt_sha256_hex *out, uint64_t *size_out, vt_error *err);
/* Hashes n files in parallel (up to n_threads; <= 0: one per online CPU);
 * out[i] for paths[i]; sizes may be NULL. VT_EINPUT names the first
 * unreadable file. */
int vt_sha256_files(const char *const *paths, int n, int n_threads, vt_sha256_hex *out, uint64_t *sizes,
                    vt_error *err);

/* How a file is read for hashing. The defaults suit large model files. */
typedef struct vt_hash_options {
    size_t buffer_size; /* bytes per read(); 0: 4 MiB */
    int reader_thread;  /* -1: auto (files >= 64 MiB on >= 2 CPUs), 0: never, 1: always */
} vt_hash_options;

/* vt_sha256_file with explicit options (opt may be NULL: defaults). */
int vt_sha256_file_opts(const char *path, const vt_hash_options *opt, vt_sha256_hex *out, uint64_t *size_out,
                        vt_error *err);
/* Like vt_sha256_files, but every file gets its own outcome: status[i] is 0
 * or the errno with which paths[i] failed (out[i] then empty, sizes[i] 0).
 * n_threads <= 0: one per online CPU. sizes may be NULL. */
void vt_sha256_files_each(const char *const *paths, int n, int n_threads, vt_sha256_hex *out, uint64_t *sizes,
                          int *status);

/* ---- model manifests (vt.manifest/1 JSON: {schema, files:[{name,size,sha256}]}) ---- */
typedef struct vt_manifest_file {
    char *name;   /* as given (path relative to the manifest's directory or absolute) */
    uint64_t size;
    vt_sha256_hex sha256;
} vt_manifest_file;

typedef struct vt_manifest {
    vt_manifest_file *files;
    int n_files;
} vt_manifest;

int vt_manifest_make(const char *const *paths, int n, vt_manifest *out, vt_error *err);
/* Like vt_manifest_make, but every name relative to the directory of
 * manifest_path ("a.gguf", "../models/a.gguf"), so that verifying against
 * that directory finds the files wherever the tree is moved with them. */
int vt_manifest_make_for(const char *manifest_path, const char *const *paths, int n, vt_manifest *out,
                         vt_error *err);
/* Writes vt_manifest_to_json to path through vt_publish: refused when path
 * exists (unless opts->overwrite) or aliases one of opts->inputs (the files
 * the manifest lists, say); all or nothing. opts may be NULL. */
int vt_manifest_write(const vt_manifest *m, const char *path, const vt_publish_opts *opts, vt_error *err);
int vt_manifest_read(const char *path, vt_manifest *out, vt_error *err);   /* VT_EINPUT on bad JSON */
/* JSON text (malloc'd). */
char *vt_manifest_to_json(const vt_manifest *m);
/* Checks every file listed (names resolved against base_dir when relative):
 * VT_OK if all match; VT_ECHECK with every mismatch listed in err otherwise. */
int vt_manifest_verify(const vt_manifest *m, const char *base_dir, vt_error *err);
/* The same check, every mismatch as its own line in *problems (malloc'd;
 * free with vt_prov_lines_free); VT_OK / VT_ECHECK as vt_manifest_verify. */
int vt_manifest_check(const vt_manifest *m, const char *base_dir, char ***problems, int *n_problems, vt_error *err);
void vt_prov_lines_free(char **lines, int n);
void vt_manifest_free(vt_manifest *m);

/* The same check, file by file: (*out)[i] is what was found for
 * m->files[i] (malloc'd, n_files entries; free with
 * vt_manifest_results_free). VT_OK / VT_ECHECK (err names the files that
 * differ) as vt_manifest_verify, *out set with either; VT_EINPUT (out of
 * memory) with *out NULL. vt_manifest_check's lines are the problems. */
typedef enum vt_manifest_status {
    VT_MANIFEST_OK = 0,
    VT_MANIFEST_MISSING,    /* no such file (or a path component is not a directory) */
    VT_MANIFEST_UNREADABLE, /* it could not be read (error: the errno) */
    VT_MANIFEST_DIFFERS     /* read: size or sha256 not the manifest's */
} vt_manifest_status;

typedef struct vt_manifest_result {
    char *path;           /* the file checked: its name resolved against base_dir */
    int status;           /* vt_manifest_status */
    int error;            /* errno for MISSING and UNREADABLE, else 0 */
    uint64_t size;        /* what was read (OK, DIFFERS), else 0 */
    vt_sha256_hex sha256; /* of what was read (OK, DIFFERS), else "" */
    char *problem;        /* the mismatch as one line ("NAME: sha256 X (manifest Y)"), NULL if OK */
} vt_manifest_result;

int vt_manifest_check_files(const vt_manifest *m, const char *base_dir, vt_manifest_result **out, vt_error *err);
void vt_manifest_results_free(vt_manifest_result *r, int n);

/* ---- runtime identity of this process ---- */
typedef struct vt_shared_object {
    char *path;
    vt_sha256_hex sha256;
    uint64_t size;
} vt_shared_object;

/* Note: zlib.h defines zlib_version as a macro; a file including both it
 * and this header must #undef zlib_version to use the field below. */
typedef struct vt_runtime_identity {
    char *binary_path;            /* /proc/self/exe */
    vt_sha256_hex binary_sha256;  /* of the running inode (read through /proc/self/exe) */
    vt_shared_object *objects;    /* every .so mapped into the process */
    int n_objects;
    char *openssl_version, *libarchive_version, *zlib_version, *cjson_version, *pcre2_version;
    char *cpu_model;              /* /proc/cpuinfo model name */
    char *cpu_flags;              /* the ISA flags that matter: sse2 avx avx2 fma f16c avx512f ... */
    char *kernel;                 /* uname -r */
    int n_cores;
    int resolved;                 /* every field above filled */
    char *machine;                /* uname -m */
    uint64_t binary_size;
    int n_cores_usable;           /* CPUs in this process's affinity mask */
    char *unresolved;             /* when !resolved: which fields are missing, else NULL */
} vt_runtime_identity;

/* VT_OK whenever it could look: a fact it cannot read (no /proc, a file
 * gone) is named in out->unresolved. VT_EINPUT only when memory ran out. */
int vt_runtime_identity_read(vt_runtime_identity *out, vt_error *err);
/* vt.runtime-identity/1 JSON (malloc'd), NULL on out of memory. */
char *vt_runtime_identity_to_json(const vt_runtime_identity *id);
void vt_runtime_identity_free(vt_runtime_identity *id);

/* ---- package verification ---- */
typedef struct vt_package_report {
    char *kind;                 /* "wheel" or "npm" */
    char *file;                 /* the archive path */
    vt_sha256_hex sha256;       /* of the archive */
    char *integrity;            /* npm: sha512-... as in the lock file; wheel: NULL */
    int members_checked;        /* archive members verified */
    int installed_checked;      /* wheel: installed files verified (with an installed dir) */
    int verified;               /* all checks passed */
    char **problems;            /* one line each: which member/file differs and how */
    int n_problems;
    char *computed_integrity;   /* npm: sha512-... of the tarball; wheel: NULL */
    char **notes;               /* findings that are not tampering (rewritten scripts, ...) */
    int n_notes;
} vt_package_report;

/* Wheel: first the zip's structure (central directory, local headers,
 * descriptors and data agree; provenance/README.md), then every RECORD
 * entry's hash and size against the archive member (entries without a
 * hash: RECORD itself and signatures, as the wheel spec allows); with
 * installed_dir (may be NULL), the installed files against RECORD too
 * (scripts rewritten on install reported as such, not as tampering, where
 * the wheel spec says installers rewrite them), and every file in the
 * package directories, at any depth, listed (.pyc included; links are
 * reported, never followed).
 * VT_OK when it ran (see report->verified), VT_EINPUT for an unreadable or
 * malformed wheel. */
int vt_package_verify_wheel(const char *wheel_path, const char *installed_dir, vt_package_report *out,
                            vt_error *err);

/* npm tarball: its sha512 integrity against the lock file entry for
 * name@version, and each of the loaded shared objects (paths of files that
 * came from the unpacked package) byte-compared with the tarball member it
 * came from (member = "package/" + path relative to pkg_root). Members named
 * with an absolute path, a backslash or a '..' component are problems. */
int vt_package_verify_npm(const char *tarball_path, const char *lock_path, const char *name,
                          const char *pkg_root, const char *const *loaded_paths, int n_loaded,
                          vt_package_report *out, vt_error *err);
void vt_package_report_free(vt_package_report *r);


/* ---- imported bytes (a Python process's, against its distributions) ---- */
/* A distribution owning an imported file, field by field (its line in
 * vt_imports_report.dists is made from these). */
typedef struct vt_imports_dist {
    char *name, *version;        /* of its NAME-VERSION.dist-info directory */
    char *record;                /* its RECORD's path (the site's real path joined) */
    vt_sha256_hex record_sha256; /* of that RECORD's bytes */
} vt_imports_dist;

/* An imported file from outside every distribution, field by field (its
 * line in vt_imports_report.outside is made from these). */
typedef struct vt_imports_outside {
    int object;           /* 1 one of the objects (a shared object), 0 a module's file */
    char *path;           /* its real path */
    vt_sha256_hex sha256; /* of its bytes */
    int in_site;          /* in a site directory, yet in no distribution's RECORD */
} vt_imports_outside;

typedef struct vt_imports_report {
    int modules, objects;   /* entries checked */
    int verified;           /* files whose sha256 and size a RECORD lists */
    char **dists;           /* "NAME VERSION RECORD sha256 HEX", each distribution owning an
                               imported file */
    int n_dists;
    char **outside;         /* "module|object PATH sha256 HEX": from outside every distribution
                               (the runtime: recorded, not verified) */
    int n_outside;
    char **problems;        /* one line each: a mismatch, a file no RECORD covers, or a required
                               package of which no module was imported */
    int n_problems;
    char **loaded;          /* the shared objects verified (real paths, in the file's order) */
    int n_loaded;
    int ok;                 /* no problem */
    vt_imports_dist *dist_entries;       /* n_dists: dists[i] field by field */
    vt_imports_outside *outside_entries; /* n_outside: outside[i] field by field */
} vt_imports_report;

/* Reads a vt.imports/1 file (provenance/imports.c says what it holds and
 * how each file is judged). VT_OK when it ran (see out->ok), VT_EINPUT for
 * an unreadable or malformed file. */
int vt_imports_verify(const char *path, vt_imports_report *out, vt_error *err);
void vt_imports_report_free(vt_imports_report *r);

#endif
