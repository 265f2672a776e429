/* The packed gather on the GPU (vt_gpu.h). One source for AMD (hipcc) and
 * NVIDIA (nvcc, through hip_compat.h). Each thread decodes one block of a
 * selected row with the CPU's own block function (engine/codec_blocks.h)
 * and writes it as F32 or as BF16 (round to nearest even), so the output is
 * the CPU gather's bit for bit. Built without contraction of a*b+c (nvcc
 * -fmad=false, hipcc -ffp-contract=off): codec_blocks.h says why. */
#include "hip_compat.h"

#define restrict __restrict__
extern "C" {
#include "../../common/vt_error.h"
#include "../codec.h"
#include "../codec_iq_tables.h"
}
#undef restrict
#include "../codec_blocks.h"
#include "device_codec.h"
#include "vt_gpu.h"

#include <stdio.h>
#include <string.h>

struct vt_gpu_table {
    int device;
    const vt_codec *codec;
    int64_t n_rows, row_elems;
    size_t row_bytes;
    uint8_t *rows;       /* device: the packed table */
    uint8_t *grids;      /* device: the IQ codebooks */
    vt_iq_grids dgrids;  /* pointers into grids */
    hipStream_t stream;
    int64_t *ids;        /* device scratch for vt_gpu_gather: ids and the error buffer */
    int64_t ids_cap;
    uint64_t *errbuf;
    void *out;
    size_t out_cap;
};

static int gpu_fail(vt_error *err, hipError_t e, const char *what)
{
    return vt_error_set(err, VT_EINPUT, "gpu: %s: %s", what, hipGetErrorString(e));
}

#define GPU_TRY(call, what)                                                                         \
    do {                                                                                            \
        hipError_t e_ = (call);                                                                     \
        if (e_ != hipSuccess)                                                                       \
            return gpu_fail(err, e_, what);                                                         \
    } while (0)

extern "C" int vt_gpu_device_count(int *n, vt_error *err)
{
    *n = 0;
    hipError_t e = hipGetDeviceCount(n);
    if (e != hipSuccess) {
        *n = 0;
        (void)hipGetLastError(); /* "no device" is an answer here, not an error */
    }
    (void)err;
    return VT_OK;
}

extern "C" int vt_gpu_bind(int device, vt_error *err)
{
    int n = 0;
    vt_gpu_device_count(&n, err);
    if (device < 0 || device >= n)
        return vt_error_set(err, VT_EINPUT, "gpu: device %d: expected 0 <= device < %d", device, n);
    GPU_TRY(hipSetDevice(device), "hipSetDevice");
    return VT_OK;
}

extern "C" int vt_gpu_device_name(int device, char *buf, size_t cap, vt_error *err)
{
    int rc = vt_gpu_bind(device, err);
    if (rc)
        return rc;
    hipDeviceProp_t p;
    GPU_TRY(hipGetDeviceProperties(&p, device), "hipGetDeviceProperties");
#if defined(__HIP_PLATFORM_AMD__)
    snprintf(buf, cap, "%s (%s)", p.name, p.gcnArchName);
#else
    snprintf(buf, cap, "%s (sm_%d%d)", p.name, p.major, p.minor);
#endif
    return VT_OK;
}

extern "C" int vt_gpu_runtime(int device, const char **vendor, int *runtime_version, int *driver_version,
                              vt_error *err)
{
    int rc = vt_gpu_bind(device, err);
    if (rc)
        return rc;
    *vendor = VT_GPU_VENDOR;
    GPU_TRY(hipRuntimeGetVersion(runtime_version), "hipRuntimeGetVersion");
    GPU_TRY(hipDriverGetVersion(driver_version), "hipDriverGetVersion");
    return VT_OK;
}

/* ------------------------------------------------------------ kernels */

/* Every id against [0, n_rows) as a full int64; the first bad position
 * wins (atomicMin), so the report does not depend on thread order. */
__global__ static void check_ids(const int64_t *ids, int64_t n_ids, int64_t n_rows, uint64_t *errbuf)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n_ids;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t id = ids[i];
        if (id < 0 || id >= n_rows)
            atomicMin((unsigned long long *)&errbuf[0], (unsigned long long)i);
    }
}

/* One thread per (selected row, block). Nothing is read from the table
 * and nothing written once check_ids has found a bad id. */
__global__ static void gather_blocks(int type, const uint8_t *rows, size_t row_bytes, int64_t block_elems,
                                     size_t block_bytes, int64_t blocks_per_row, const int64_t *ids,
                                     int64_t n_ids, int bf16, void *out, uint64_t *errbuf, vt_iq_grids g)
{
    const uint64_t bad = errbuf[0];
    if (bad != ~0ull) {
        if (blockIdx.x == 0 && threadIdx.x == 0)
            errbuf[1] = (uint64_t)ids[bad];
        return;
    }
    const int64_t total = n_ids * blocks_per_row;
    for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < total;
         k += (int64_t)gridDim.x * blockDim.x) {
        const int64_t i = k / blocks_per_row, j = k % blocks_per_row;
        const uint8_t *b = rows + (size_t)ids[i] * row_bytes + (size_t)j * block_bytes;
        float y[VT_QK_K];
        decode_block(type, b, y, &g);
        const int64_t at = i * blocks_per_row * block_elems + j * block_elems;
        if (bf16) {
            uint16_t *o = (uint16_t *)out + at;
            for (int64_t e = 0; e < block_elems; e++)
                o[e] = vt_f32_bits_to_bf16(y[e]);
        } else {
            float *o = (float *)out + at;
            for (int64_t e = 0; e < block_elems; e++)
                o[e] = y[e];
        }
    }
}

/* The IQ codebooks, packed one after another in device memory of the
 * current device; *g points into *buf. */
extern "C" int vt_gpu_grids_upload(uint8_t **buf, vt_iq_grids *g, vt_error *err)
{
    const vt_iq_grids *h = vt_iq_host_grids();
    const size_t sz[8] = { sizeof vt_iq2xxs_grid, sizeof vt_iq2xs_grid, sizeof vt_iq2s_grid, sizeof vt_iq3xxs_grid,
                           sizeof vt_iq3s_grid,   sizeof vt_iq1s_grid,  sizeof vt_iq2_signs, sizeof vt_iq4nl_values };
    const void *src[8] = { h->iq2xxs, h->iq2xs, h->iq2s, h->iq3xxs, h->iq3s, h->iq1s, h->iq2_signs, h->iq4nl };
    size_t total = 0, at[8];
    for (int k = 0; k < 8; k++) {
        at[k] = total;
        total += (sz[k] + 15) / 16 * 16;
    }
    GPU_TRY(hipMalloc((void **)buf, total), "hipMalloc codebooks");
    for (int k = 0; k < 8; k++)
        GPU_TRY(hipMemcpy(*buf + at[k], src[k], sz[k], hipMemcpyHostToDevice), "codebooks upload");
    g->iq2xxs = (const uint8_t(*)[8])(*buf + at[0]);
    g->iq2xs = (const uint8_t(*)[8])(*buf + at[1]);
    g->iq2s = (const uint8_t(*)[8])(*buf + at[2]);
    g->iq3xxs = (const uint8_t(*)[4])(*buf + at[3]);
    g->iq3s = (const uint8_t(*)[4])(*buf + at[4]);
    g->iq1s = (const int8_t(*)[8])(*buf + at[5]);
    g->iq2_signs = *buf + at[6];
    g->iq4nl = (const int8_t *)(*buf + at[7]);
    return VT_OK;
}

/* ------------------------------------------------------------ tables */

extern "C" vt_gpu_table *vt_gpu_table_upload(int device, const vt_codec *c, const void *rows, int64_t n_rows,
                                             int64_t row_elems, vt_error *err)
{
    if (!c || !c->decode_f32) {
        vt_error_set(err, VT_EINPUT, "gpu gather: codec %s: expected a decodable type", c ? c->name : "?");
        return NULL;
    }
    size_t rb = vt_codec_row_bytes(c, row_elems);
    if (n_rows < 0 || row_elems <= 0 || !rb || (n_rows && rb > SIZE_MAX / (size_t)n_rows)) {
        vt_error_set(err, VT_EINPUT, "gpu gather: %s: %lld rows of %lld: expected whole blocks", c->name,
                     (long long)n_rows, (long long)row_elems);
        return NULL;
    }
    if (vt_gpu_bind(device, err))
        return NULL;
    vt_gpu_table *t = (vt_gpu_table *)calloc(1, sizeof *t);
    if (!t) {
        vt_error_set(err, VT_EINPUT, "gpu gather: out of memory");
        return NULL;
    }
    t->device = device;
    t->codec = c;
    t->n_rows = n_rows;
    t->row_elems = row_elems;
    t->row_bytes = rb;
    hipError_t e = hipStreamCreateWithFlags(&t->stream, hipStreamNonBlocking);
    if (e == hipSuccess)
        e = hipMalloc((void **)&t->rows, rb * (size_t)n_rows + 1);
    if (e == hipSuccess)
        e = hipMalloc((void **)&t->errbuf, 16);
    if (e == hipSuccess && n_rows)
        e = hipMemcpy(t->rows, rows, rb * (size_t)n_rows, hipMemcpyHostToDevice);
    if (e != hipSuccess) {
        gpu_fail(err, e, "table upload");
        vt_gpu_table_free(t);
        return NULL;
    }
    if (vt_gpu_grids_upload(&t->grids, &t->dgrids, err)) {
        vt_gpu_table_free(t);
        return NULL;
    }
    return t;
}

extern "C" void vt_gpu_table_free(vt_gpu_table *t)
{
    if (!t)
        return;
    if (hipSetDevice(t->device) == hipSuccess) {
        if (t->stream)
            hipStreamSynchronize(t->stream);
        hipFree(t->rows);
        hipFree(t->grids);
        hipFree(t->errbuf);
        hipFree(t->ids);
        hipFree(t->out);
        if (t->stream)
            hipStreamDestroy(t->stream);
    }
    free(t);
}

extern "C" int vt_gpu_table_device(const vt_gpu_table *t) { return t->device; }

/* ------------------------------------------------------------ gather */

extern "C" int vt_gpu_gather_async(vt_gpu_table *t, const int64_t *ids_dev, int64_t n_ids, vt_dtype out_dtype,
                                   void *out_dev, uint64_t *err_dev, vt_error *err)
{
    if (n_ids < 0)
        return vt_error_set(err, VT_EINPUT, "gpu gather: %lld ids: expected >= 0", (long long)n_ids);
    int rc = vt_gpu_bind(t->device, err);
    if (rc)
        return rc;
    GPU_TRY(hipMemsetAsync(err_dev, 0xff, 16, t->stream), "hipMemsetAsync");
    if (n_ids == 0)
        return VT_OK;
    const int threads = 256;
    const int64_t bpr = t->row_elems / t->codec->block_elems;
    const int64_t want_check = (n_ids + threads - 1) / threads;
    const int64_t want = (n_ids * bpr + threads - 1) / threads;
    const unsigned gc = (unsigned)(want_check < 65535 ? want_check : 65535);
    const unsigned gg = (unsigned)(want < 65535 ? want : 65535);
    check_ids<<<gc, threads, 0, t->stream>>>(ids_dev, n_ids, t->n_rows, err_dev);
    GPU_TRY(hipGetLastError(), "check_ids launch");
    gather_blocks<<<gg, threads, 0, t->stream>>>((int)t->codec->type, t->rows, t->row_bytes, t->codec->block_elems,
                                                 t->codec->block_bytes, bpr, ids_dev, n_ids,
                                                 out_dtype == VT_DTYPE_BF16, out_dev, err_dev, t->dgrids);
    GPU_TRY(hipGetLastError(), "gather_blocks launch");
    return VT_OK;
}

extern "C" int vt_gpu_gather(vt_gpu_table *t, const int64_t *ids, int64_t n_ids, vt_dtype out_dtype, void *out,
                             vt_error *err)
{
    if (n_ids < 0)
        return vt_error_set(err, VT_EINPUT, "gpu gather: %lld ids: expected >= 0", (long long)n_ids);
    int rc = vt_gpu_bind(t->device, err);
    if (rc)
        return rc;
    const size_t out_bytes = (size_t)n_ids * (size_t)t->row_elems * (out_dtype == VT_DTYPE_F32 ? 4u : 2u);
    if (n_ids > t->ids_cap) {
        hipFree(t->ids);
        t->ids = NULL;
        t->ids_cap = 0;
        GPU_TRY(hipMalloc((void **)&t->ids, (size_t)n_ids * sizeof(int64_t)), "hipMalloc ids");
        t->ids_cap = n_ids;
    }
    if (out_bytes > t->out_cap) {
        hipFree(t->out);
        t->out = NULL;
        t->out_cap = 0;
        GPU_TRY(hipMalloc(&t->out, out_bytes), "hipMalloc out");
        t->out_cap = out_bytes;
    }
    if (n_ids)
        GPU_TRY(hipMemcpyAsync(t->ids, ids, (size_t)n_ids * sizeof(int64_t), hipMemcpyHostToDevice, t->stream),
                "hipMemcpyAsync ids");
    if ((rc = vt_gpu_gather_async(t, t->ids, n_ids, out_dtype, t->out, t->errbuf, err)))
        return rc;
    uint64_t eb[2];
    GPU_TRY(hipMemcpyAsync(eb, t->errbuf, sizeof eb, hipMemcpyDeviceToHost, t->stream), "hipMemcpyAsync error");
    GPU_TRY(hipStreamSynchronize(t->stream), "hipStreamSynchronize");
    if (eb[0] != ~0ull)
        return vt_error_set(err, VT_EINPUT, "gather: position %lld: id %lld: expected 0 <= id < %lld",
                            (long long)eb[0], (long long)(int64_t)eb[1], (long long)t->n_rows);
    if (n_ids)
        GPU_TRY(hipMemcpy(out, t->out, out_bytes, hipMemcpyDeviceToHost), "hipMemcpy out");
    return VT_OK;
}
