/* GGUF v2/v3: reader over mmap (or a caller's buffer) with every offset,
 * count, length and extent checked against the file using overflow-safe
 * arithmetic; and a writer that reproduces any file the reader accepts byte
 * for byte, and builds new files (fixtures).
 *
 * Errors are one line naming the file, the byte offset, the field, what was
 * found and what was expected:
 *   "X.gguf: offset 8: tensor_count: 18446744073709551615: expected at most
 *    185270 tensor infos in the remaining 5928657 bytes"
 */
#ifndef VT_GGUF_H
#define VT_GGUF_H

#include <stddef.h>
#include <stdint.h>

#include "../common/vt_error.h"
#include "../common/vt_publish.h"

/* Metadata value types, as numbered in the format. */
typedef enum vt_gguf_vtype {
    VT_GGUF_U8 = 0, VT_GGUF_I8 = 1, VT_GGUF_U16 = 2, VT_GGUF_I16 = 3,
    VT_GGUF_U32 = 4, VT_GGUF_I32 = 5, VT_GGUF_F32 = 6, VT_GGUF_BOOL = 7,
    VT_GGUF_STRING = 8, VT_GGUF_ARRAY = 9, VT_GGUF_U64 = 10, VT_GGUF_I64 = 11,
    VT_GGUF_F64 = 12
} vt_gguf_vtype;

typedef struct vt_gguf vt_gguf; /* opaque reader handle */

/* Limits the reader enforces. Nested arrays (arrays of arrays) deeper than
 * this are refused, which bounds the parser's recursion. Tensor names are
 * limited as ggml limits them (64 bytes with the NUL). */
#define VT_GGUF_MAX_DEPTH 8
#define VT_GGUF_MAX_NAME 63
#define VT_GGUF_DEFAULT_ALIGNMENT 32

/* A string inside the file: not NUL-terminated. */
typedef struct vt_gguf_str { const char *ptr; uint64_t len; } vt_gguf_str;

/* A value: scalars decoded; strings point into the file; arrays describe
 * their element type and count and point at the raw element bytes
 * (for nested arrays or string arrays, use vt_gguf_array_* accessors).
 * For values read from a file, raw/raw_size also locate non-array values:
 * a scalar's bytes, or a string's 8-byte length plus its bytes; the writer
 * uses them to reproduce values bit for bit (an F32 NaN payload survives). */
typedef struct vt_gguf_value {
    vt_gguf_vtype type;
    union {
        uint64_t u64; int64_t i64; double f64; /* widened integer/float scalars */
        int b;
        vt_gguf_str str;
    } v;
    /* arrays */
    vt_gguf_vtype elem_type;
    uint64_t count;
    const void *raw;      /* first element's bytes in the file */
    uint64_t raw_size;    /* bytes the whole array occupies in the file */
} vt_gguf_value;

typedef struct vt_gguf_tensor {
    vt_gguf_str name;
    uint32_t n_dims;
    int64_t ne[4];        /* unused dims are 1 */
    int type;             /* vt_type (ggml numbering) */
    uint64_t offset;      /* relative to the start of the data section */
    uint64_t n_bytes;     /* from the codec geometry */
    const void *data;     /* into the mapping; checked to lie inside the file */
} vt_gguf_tensor;

/* Open: mmap the file read-only and parse it all (header, every KV, every
 * tensor info, every tensor extent). NULL on failure with err set
 * (VT_EINPUT for a malformed or unreadable file). */
vt_gguf *vt_gguf_open(const char *path, vt_error *err);
/* Parse a caller's buffer (not copied; must outlive the handle). name is used
 * in messages. */
vt_gguf *vt_gguf_open_memory(const void *data, size_t size, const char *name, vt_error *err);
void vt_gguf_free(vt_gguf *g);

uint32_t vt_gguf_version(const vt_gguf *g);
uint32_t vt_gguf_alignment(const vt_gguf *g);  /* general.alignment or 32 */
uint64_t vt_gguf_data_offset(const vt_gguf *g); /* start of the tensor data section */
uint64_t vt_gguf_file_size(const vt_gguf *g);
const void *vt_gguf_file_data(const vt_gguf *g);
/* Bytes of header, key/values and tensor infos: where the padding before
 * the data section starts. With no tensors, a file may end there (ggml's
 * reader does not require the padding then), and data_offset is the file
 * size. */
uint64_t vt_gguf_header_size(const vt_gguf *g);
/* The name used in messages (the path, or open_memory's name). */
const char *vt_gguf_name(const vt_gguf *g);
/* "u8", "i8", ..., "string", "array"; "?" for anything else. */
const char *vt_gguf_vtype_name(vt_gguf_vtype t);

/* Key/values, in file order. */
uint64_t vt_gguf_n_kv(const vt_gguf *g);
vt_gguf_str vt_gguf_kv_key(const vt_gguf *g, uint64_t i);
const vt_gguf_value *vt_gguf_kv_value(const vt_gguf *g, uint64_t i);
/* Index of key, or -1. */
int64_t vt_gguf_find_key(const vt_gguf *g, const char *key);

/* Typed getters: return 1 and fill *out if the key exists with a compatible
 * type (any integer type for the integer getters, if the value fits), else 0. */
int vt_gguf_get_u64(const vt_gguf *g, const char *key, uint64_t *out);
int vt_gguf_get_i64(const vt_gguf *g, const char *key, int64_t *out);
int vt_gguf_get_f64(const vt_gguf *g, const char *key, double *out);
int vt_gguf_get_bool(const vt_gguf *g, const char *key, int *out);
int vt_gguf_get_str(const vt_gguf *g, const char *key, vt_gguf_str *out);

/* The file's general.architecture into buf (NUL-terminated): VT_OK, or
 * VT_EINPUT with err set (unreadable file, key missing or not a string, or
 * longer than cap - 1). */
int vt_gguf_read_arch(const char *path, char *buf, size_t cap, vt_error *err);

/* The model's trained context, <general.architecture>.context_length, or 0
 * when the file does not tell it (then nothing bounds a prompt by it). */
int64_t vt_gguf_context_length(const vt_gguf *g);

/* Elements of an array value. For string arrays: element i's string.
 * For nested arrays: element i as a value. For scalar arrays: element i
 * widened into the value. Return 0 if out of range / wrong kind, or if arr
 * does not point into g's file. O(1) for scalar arrays and for top-level
 * string arrays (indexed when the file is opened); O(i) inside nested
 * arrays. */
int vt_gguf_array_get(const vt_gguf *g, const vt_gguf_value *arr, uint64_t i, vt_gguf_value *out);

/* Tensors, in file order. */
uint64_t vt_gguf_n_tensors(const vt_gguf *g);
const vt_gguf_tensor *vt_gguf_tensor_at(const vt_gguf *g, uint64_t i);
const vt_gguf_tensor *vt_gguf_find_tensor(const vt_gguf *g, const char *name);

/* ---- writer ---- */
typedef struct vt_gguf_writer vt_gguf_writer;

/* version 2 or 3. Alignment is 32 until general.alignment is set. */
vt_gguf_writer *vt_gguf_writer_new(uint32_t version, vt_error *err);
/* A writer pre-filled with everything in g (KVs, tensor infos, data, in
 * order, same version and alignment): writing it reproduces g's bytes,
 * including the padding before the data section and anything in the data
 * section between or after tensors. Key/values are copied; the data section
 * is borrowed, so g must outlive the writer. Any change (set_*, add_tensor)
 * re-pads the header with zeros, as ggml writes it. */
vt_gguf_writer *vt_gguf_writer_from(const vt_gguf *g, vt_error *err);
void vt_gguf_writer_free(vt_gguf_writer *w);

/* The set_* functions below return VT_OK, or VT_EINPUT with the reason in
 * vt_gguf_writer_error(w) (an empty key, a value out of range, a
 * general.alignment that is not a u32 power of two or that existing tensor
 * offsets do not satisfy, out of memory). A set replaces an existing key's
 * value in place (keeping its position) or appends the key. */
const vt_error *vt_gguf_writer_error(const vt_gguf_writer *w);

int vt_gguf_writer_set_u32(vt_gguf_writer *w, const char *key, uint32_t v);
int vt_gguf_writer_set_i32(vt_gguf_writer *w, const char *key, int32_t v);
int vt_gguf_writer_set_u64(vt_gguf_writer *w, const char *key, uint64_t v);
int vt_gguf_writer_set_f32(vt_gguf_writer *w, const char *key, float v);
int vt_gguf_writer_set_bool(vt_gguf_writer *w, const char *key, int v);
int vt_gguf_writer_set_str(vt_gguf_writer *w, const char *key, const char *v);
/* Arrays of scalars (elem_type a scalar vtype, data count elements packed
 * little-endian as in the file) and of strings. */
int vt_gguf_writer_set_array(vt_gguf_writer *w, const char *key, vt_gguf_vtype elem_type,
                             const void *data, uint64_t count);
int vt_gguf_writer_set_str_array(vt_gguf_writer *w, const char *key, const char *const *strs,
                                 uint64_t count);
/* Any value: scalars from v->v (checked to fit the type), strings from
 * v->v.str, arrays (scalar, string or nested) from elem_type, count and
 * raw/raw_size in the file's encoding, which is checked. A value read from
 * a vt_gguf can be passed as is. */
int vt_gguf_writer_set_value(vt_gguf_writer *w, const char *key, const vt_gguf_value *v);
/* Tensor data is copied. n_bytes must equal the codec size of ne[] in type.
 * The offset is the data section's end rounded up to the alignment, and the
 * data is followed by zeros up to the alignment, as ggml writes. */
int vt_gguf_writer_add_tensor(vt_gguf_writer *w, const char *name, int type, uint32_t n_dims,
                              const int64_t *ne, const void *data, uint64_t n_bytes,
                              vt_error *err);
/* Serialize to memory (malloc'd, caller frees) ... */
int vt_gguf_writer_to_memory(vt_gguf_writer *w, void **out, size_t *out_size, vt_error *err);
/* ... or to a file, through vt_publish (common/vt_publish.h): a temp file
 * beside path, fsynced, moved into place; an existing path is refused unless
 * opts->overwrite, and path may not alias any of opts->inputs; on failure
 * nothing is left behind. opts may be NULL (no inputs, no overwrite). */
int vt_gguf_writer_write_file(vt_gguf_writer *w, const char *path, const vt_publish_opts *opts, vt_error *err);

#endif
