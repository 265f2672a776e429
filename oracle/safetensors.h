/* The safetensors format (Hugging Face's weight files), which the
 * transformers oracle loads: an 8-byte little-endian header length N, N
 * bytes of JSON ({"__metadata__": {string: string}, NAME: {"dtype", "shape",
 * "data_offsets": [begin, end]}}, padded with spaces to a multiple of 8),
 * then the data, each tensor's bytes row-major, little-endian, at its
 * offsets from the end of the header; the tensors cover the data with no
 * hole and no overlap. vt writes F32 and BF16 only, tensors sorted by name,
 * metadata keys sorted: the same tensors give the same bytes.
 *
 * One writer (a streaming publication item, common/vt_publish.h) and one
 * reader, which checks everything above. */
#ifndef VT_SAFETENSORS_H
#define VT_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "../common/vt_error.h"

typedef enum vt_st_dtype { VT_ST_F32 = 0, VT_ST_BF16 = 1 } vt_st_dtype;

const char *vt_st_dtype_name(vt_st_dtype d); /* "F32", "BF16" */
size_t vt_st_dtype_size(vt_st_dtype d);

/* ------------------------------------------------------------ writing */

/* Fills dst with the tensor's n_bytes, row-major; VT_OK or an error. */
typedef int (*vt_st_fill_fn)(void *ctx, int index, uint8_t *dst, size_t n_bytes, vt_error *err);

typedef struct vt_st_writer vt_st_writer;

vt_st_writer *vt_st_writer_new(void);
void vt_st_writer_free(vt_st_writer *w);
/* A metadata entry (both strings copied). */
int vt_st_writer_meta(vt_st_writer *w, const char *key, const char *value, vt_error *err);
/* A tensor of n_dims (1..4) dimensions; fill(ctx, index, ...) produces its
 * bytes when the file is written (index: this call's order, from 0). */
int vt_st_writer_add(vt_st_writer *w, const char *name, vt_st_dtype dtype, int n_dims, const int64_t *shape,
                     vt_st_fill_fn fill, void *ctx, vt_error *err);
/* The whole file's size, once every tensor is added. */
uint64_t vt_st_writer_size(vt_st_writer *w);
/* Streams the file to fd (the shape of vt_publish_item.write; ctx is the
 * writer). The largest tensor is produced into one buffer at a time. */
int vt_st_writer_write(int fd, void *writer, vt_error *err);

/* ------------------------------------------------------------ reading */

typedef struct vt_st_tensor {
    char name[256];
    vt_st_dtype dtype;
    int n_dims;
    int64_t shape[4];
    uint64_t begin, end; /* data_offsets, from the end of the header */
    const uint8_t *data; /* into the file's bytes */
} vt_st_tensor;

typedef struct vt_st_file vt_st_file;

/* Parses a whole file held in memory (not copied; must outlive the handle);
 * name is used in messages. NULL with err (VT_EINPUT, one line naming the
 * file, the field and what was expected) for anything malformed: a header
 * length past the end, header JSON that is not an object of objects, an
 * unknown dtype, a shape whose bytes are not end - begin, offsets out of
 * order, overlapping, leaving a hole or not ending at the end of the file. */
vt_st_file *vt_st_open_memory(const void *data, size_t size, const char *name, vt_error *err);
void vt_st_free(vt_st_file *f);
int vt_st_count(const vt_st_file *f);
const vt_st_tensor *vt_st_at(const vt_st_file *f, int i);
const vt_st_tensor *vt_st_find(const vt_st_file *f, const char *name);
/* A metadata value, or NULL. */
const char *vt_st_meta(const vt_st_file *f, const char *key);

#endif
