/* The GPU backend's C interface (engine/hip/, built with hipcc or nvcc when
 * VT_HIP is on). Opaque handles, errors returned, never exit(). Every entry
 * point takes its device explicitly (or through a handle made on it) and
 * binds it (hipSetDevice) before any allocation or launch.
 *
 *   packed gather   a codec table resident on the device as stored in its
 *                   GGUF (never widened); selected rows decoded straight to
 *                   F32 or BF16 by the same block functions as the CPU
 *                   (engine/codec_blocks.h), so the values are the CPU's;
 *                   every int64 id checked on the device before any row is
 *                   read, a bad one reported (position, id) through a small
 *                   device error buffer and nothing written. */
#ifndef VT_GPU_H
#define VT_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "../../common/vt_error.h"
#include "../codec.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Devices the runtime sees (0 where it sees none: then *n = 0 and VT_OK). */
int vt_gpu_device_count(int *n, vt_error *err);
/* "NVIDIA H200 (sm_90)", "AMD Instinct MI210 (gfx90a)", ... */
int vt_gpu_device_name(int device, char *buf, size_t cap, vt_error *err);
/* The runtime ("cuda" or "hip") and its runtime and driver versions. */
int vt_gpu_runtime(int device, const char **vendor, int *runtime_version, int *driver_version, vt_error *err);

typedef struct vt_gpu_table vt_gpu_table;

/* n_rows rows of row_elems elements of codec c, packed as in a GGUF file,
 * copied to device memory on device. NULL with err set on failure. */
vt_gpu_table *vt_gpu_table_upload(int device, const vt_codec *c, const void *rows, int64_t n_rows,
                                  int64_t row_elems, vt_error *err);
void vt_gpu_table_free(vt_gpu_table *t);
int vt_gpu_table_device(const vt_gpu_table *t);

/* vt_codec_gather_rows on the device: ids (host, n_ids) copied over, rows
 * decoded there, out (host, n_ids rows of F32 or BF16) copied back. A bad
 * id: VT_EINPUT, "gather: position P: id I: expected 0 <= id < N" (the
 * first bad position), and out left as it was. */
int vt_gpu_gather(vt_gpu_table *t, const int64_t *ids, int64_t n_ids, vt_dtype out_dtype, void *out,
                  vt_error *err);

/* The same on device memory, on the table's device and its stream: ids_dev
 * and out_dev device pointers, err_dev a 16-byte device buffer (two
 * uint64: the first bad position or UINT64_MAX, and its id) that this sets
 * and fills; nothing waits. */
int vt_gpu_gather_async(vt_gpu_table *t, const int64_t *ids_dev, int64_t n_ids, vt_dtype out_dtype,
                        void *out_dev, uint64_t *err_dev, vt_error *err);

#ifdef __cplusplus
}
#endif

#endif
