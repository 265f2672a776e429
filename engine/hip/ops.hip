/* The forward pass's device operations (vt_gpu.h). Each output is computed
 * in the CPU engine's own order, so that the GPU's logits are the CPU
 * engine's (exact matmul mode) bit for bit:
 *   dot products   ggml_vec_dot_f32's layout (kernels_dot.c): 64 partial sums,
 *                  lane L of a warp holding partials L and 32 + L, fused
 *                  multiply-adds in element order, then (s0+s2)+(s1+s3) and
 *                  the 16-lane tree by shuffles, the tail as the CPU's; BF16
 *                  weights in ggml_vec_dot_bf16's (two 16-lane halves, double)
 *   RMSNorm        the sum of squares in double, in element order (one thread,
 *                  the squares made by all and read from shared memory), or
 *                  a tree sum where it provably has the same bits
 *   q8 products    the CPU's integer bodies (codec_intdot.h), Q8_0 and Q4_K
 *                  decode steps a warp per row, the rest a thread per row
 *   softmax        expf16 and tree16 of engine_math.h per 16 keys, the sums
 *                  added in double in key order
 *   V p            64 accumulators per output in key order, as kernels_kv.c
 * Warps are taken as 32 lanes (width-32 shuffles), also inside AMD's
 * 64-lane wavefronts. No contraction of a*b+c: see codec_blocks.h. */
#include "hip_compat.h"

#define restrict __restrict__
extern "C" {
#include "../../common/vt_error.h"
#include "../codec.h"
#include "../runner.h"
}
#undef restrict
#include "../codec_blocks.h"
#include "../codec_intdot.h"
#include "../engine_math.h"
#include "device_codec.h"
#include "vt_gpu.h"

#if !defined(__HIP_PLATFORM_AMD__)
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
#endif
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Hopper's programmatic dependent launch (launch_early): a kernel of the
 * forward pass may start while the kernel ahead of it still runs. Each
 * lets the next start at once (GRID_RELEASE) and waits (GRID_WAIT), on
 * every path, before it reads or writes anything another kernel reads or
 * writes: the wait returns when the kernel ahead has finished and its
 * writes are seen, and that kernel waited for the one ahead of it. So the
 * next launches are hidden behind the running kernel, and a product copies
 * its weight rows (read only) into shared memory before it waits.
 * GRID_ENTER: a kernel with nothing to do before its wait. */
#ifdef VT_GPU_TRACE
/* A trace build (scripts/gpu-build TRACE=1; never the module a capture
 * names): the first thread of each kernel's block 0 stamps the moment its
 * wait returned, so that in a replayed decode step, where every kernel
 * waits, one stamp to the next is what each kernel costs the step: its
 * work after the wait and its end, as the step runs them (ncu runs each
 * kernel alone). vt_gpu_graph_launch reads them (trace_step below). */
#define TRACE_CAP 4096
__device__ unsigned long long vt_trace_t[TRACE_CAP];
__device__ unsigned vt_trace_n;
/* And two more stamps of block 0's first thread a kernel, each in its own
 * list: when it entered (GRID_RELEASE, its first statement) and when it
 * reached its wait (after what it does before the wait, a product's copy
 * of its rows). Kernels enter in step order (one may launch only once
 * every block of the one ahead has entered), so entry i is kernel i's. */
__device__ unsigned long long vt_trace_e[TRACE_CAP], vt_trace_r[TRACE_CAP];
__device__ unsigned vt_trace_en, vt_trace_rn;
/* And every block's first thread: its grid's id (%gridid, one a launch),
 * its entry, its reaching its wait, the wait's return and its end, one
 * record a block in arrival order, so that each kernel's slowest block
 * shows; and up to TRACE_MARKS marks (TRACE_MARK(k)) a kernel may set
 * between its wait and its end, to split its work into steps. */
#define TRACE_MARKS 4
struct trace_blk {
    unsigned long long grid, e, r, t, x, m[TRACE_MARKS];
};
#define TRACE_BLOCKS (1 << 17)
__device__ trace_blk vt_trace_b[TRACE_BLOCKS];
__device__ unsigned vt_trace_bn;
#endif
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900 && defined(VT_GPU_TRACE)
__device__ static inline void trace_stamp_into(unsigned long long *list, unsigned *n)
{
    if ((blockIdx.x | blockIdx.y | blockIdx.z | threadIdx.x | threadIdx.y | threadIdx.z) == 0) {
        unsigned long long t;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
        const unsigned i = atomicAdd(n, 1u);
        if (i < TRACE_CAP)
            list[i] = t;
    }
}
__device__ static inline unsigned long long trace_now()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
__device__ static inline unsigned trace_block_enter()
{
    if (threadIdx.x | threadIdx.y | threadIdx.z)
        return TRACE_BLOCKS;
    const unsigned i = atomicAdd(&vt_trace_bn, 1u);
    if (i < TRACE_BLOCKS) {
        unsigned long long id;
        asm volatile("mov.u64 %0, %%gridid;" : "=l"(id));
        vt_trace_b[i].grid = id;
        for (int k = 0; k < TRACE_MARKS; k++)
            vt_trace_b[i].m[k] = 0;
        vt_trace_b[i].e = trace_now();
    }
    return i;
}
/* The block's end: first thread's, when it leaves the kernel's scope. */
struct trace_end {
    unsigned slot;
    __device__ ~trace_end()
    {
        if (slot < TRACE_BLOCKS)
            vt_trace_b[slot].x = trace_now();
    }
};
#define TRACE_MARK(k)                                                                                                 \
    do {                                                                                                              \
        if (vt_trace_slot_ < TRACE_BLOCKS)                                                                            \
            vt_trace_b[vt_trace_slot_].m[k] = trace_now();                                                            \
    } while (0)
#define GRID_WAIT()                                                                                                   \
    do {                                                                                                              \
        if (vt_trace_slot_ < TRACE_BLOCKS)                                                                            \
            vt_trace_b[vt_trace_slot_].r = trace_now();                                                               \
        trace_stamp_into(vt_trace_r, &vt_trace_rn);                                                                   \
        asm volatile("griddepcontrol.wait;" ::: "memory");                                                            \
        trace_stamp_into(vt_trace_t, &vt_trace_n);                                                                    \
        if (vt_trace_slot_ < TRACE_BLOCKS)                                                                            \
            vt_trace_b[vt_trace_slot_].t = trace_now();                                                               \
    } while (0)
#define GRID_RELEASE()                                                                                                \
    const unsigned vt_trace_slot_ = trace_block_enter();                                                              \
    const trace_end vt_trace_end_{ vt_trace_slot_ };                                                                  \
    do {                                                                                                              \
        trace_stamp_into(vt_trace_e, &vt_trace_en);                                                                   \
        asm volatile("griddepcontrol.launch_dependents;" ::: "memory");                                               \
    } while (0)
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define TRACE_MARK(k) ((void)0)
#define GRID_WAIT() asm volatile("griddepcontrol.wait;" ::: "memory")
#define GRID_RELEASE() asm volatile("griddepcontrol.launch_dependents;" ::: "memory")
#else
#define TRACE_MARK(k) ((void)0)
#define GRID_WAIT() ((void)0)
#define GRID_RELEASE() ((void)0)
#endif
#define GRID_ENTER()                                                                                                  \
    do {                                                                                                              \
        GRID_RELEASE();                                                                                               \
        GRID_WAIT();                                                                                                  \
    } while (0)

#if defined(__HIP_PLATFORM_AMD__)
#define SHFL_DOWN(v, d, w) __shfl_down((v), (d), (w))
#define SHFL(v, l, w) __shfl((v), (l), (w))
#define SHFL_XOR(v, m, w) __shfl_xor((v), (m), (w))
/* p of each lane of the thread's group of 32, as bits (wave64: its half) */
#if defined(__AMDGCN_WAVEFRONT_SIZE) && __AMDGCN_WAVEFRONT_SIZE == 64
#define BALLOT32(p) ((unsigned)(__ballot(p) >> (threadIdx.x & 32)))
#else
#define BALLOT32(p) ((unsigned)__ballot(p))
#endif
#else
#define SHFL_DOWN(v, d, w) __shfl_down_sync(0xffffffffu, (v), (d), (w))
#define SHFL(v, l, w) __shfl_sync(0xffffffffu, (v), (l), (w))
#define SHFL_XOR(v, m, w) __shfl_xor_sync(0xffffffffu, (v), (m), (w))
#define BALLOT32(p) __ballot_sync(0xffffffffu, (p))
#endif

/* Which kernels launch_early launches early: none, the products only (as
 * before 2026-12-05: VT_GPU_PDL=products, for comparison), or all. */
enum { PDL_NONE, PDL_PRODUCTS, PDL_ALL };

#ifdef VT_GPU_TRACE
#define TRACE_NAMES 1024 /* the most kernels a traced graph holds */
#endif

struct vt_gpu {
    int device;
    hipStream_t stream;
    uint64_t launches, copies; /* host launches, host<->device copies: the benchmark's counts */
    int capturing;             /* queued work is being recorded into a graph, not counted */
    int pdl;                   /* launch_early: PDL_ALL (CUDA, compute 9+), PDL_PRODUCTS or PDL_NONE (VT_GPU_PDL) */
    int mv1;                   /* one-token Q8_0 and Q4_K products by k_mv1_q8_0, k_mv1_q4_k (VT_GPU_MV1=0: by k_matvec_int) */
    int head_warps;            /* one-token products a warp at a time: the Q8_0, Q4_K heads, Q8_0's gate|up, every BF16
                                  one (mv1_warps, bf16_warps; VT_GPU_HEAD_WARPS=0: k_mv1_*, k_matvec as before) */
    int pair_swiglu;           /* gate, up and SwiGLU of one token in one launch (VT_GPU_PAIR_SWIGLU=0: three steps) */
    int add_norm;              /* a one-token Q8_0 product takes the residual add and RMSNorm before it into its
                                  launch (vt_gpu_add_norm_*; VT_GPU_ADD_NORM=0: k_add_rmsnorm_regs first) */
    int att_cluster;           /* the one-token attention in one launch of thread-block clusters (NVIDIA, compute
                                  9+; VT_GPU_ATT_CLUSTER=0: k_att_scores, then k_att_softmax_v) */
    int att_qk;                /* and Q/K norm, RoPE and the cache's store in that launch too (VT_GPU_ATT_QK=0: a
                                  k_qk_norm_rope_store launch first) */
    int mv1_max_blocks;        /* one-token Q8_0 and Q4_K products launch at most this many blocks where 16 rows a block
                                  allow: four a multiprocessor, so all are resident beside the kernels around them
                                  (VT_GPU_MV1_MAX_BLOCKS=N; 0: rows as mv1_rows_per_block alone) */
    int att_l1v;               /* that launch asks its V rows into L1 before its wait (VT_GPU_ATT_L1V=0: into L2) */
    int sms;                   /* the device's multiprocessors */
    struct {                   /* k_mv1_*_warps kernels (fn) and sizes (shm): their blocks resident at once */
        const void *fn;
        int threads;
        size_t shm;
        unsigned blocks;
    } resident[16];
    int n_resident;
    int after_kernel;          /* the stream's last work was a kernel: the next may launch early on it */
    int matmul;                /* VT_MATMUL_EXACT or VT_MATMUL_Q8 */
    uint8_t *xq;               /* q8 mode: the activation in blocks, or rounded (grown on first need) */
    size_t xq_cap;
    uint64_t xq_generation;    /* bumped when xq or att moves: graphs naming the old one are stale */
    uint8_t *att;              /* the one-token attention's scores, accumulators and tickets (grown on first need) */
    size_t att_cap;
    uint8_t *grids_buf;
    vt_iq_grids grids;
    struct gpu_prof *prof;     /* VT_GPU_PROFILE=1: time per kernel (below); NULL: off */
#ifdef VT_GPU_TRACE
    const char *trace_name[TRACE_NAMES]; /* the kernels of the graph being captured, in order */
    int trace_names;
    double trace_us[TRACE_NAMES];         /* summed over replays: stamp i to stamp i + 1 */
    double trace_ahead_us[TRACE_NAMES];   /* and where every kernel left its three stamps: kernel i - 1's wait's */
    double trace_before_us[TRACE_NAMES];  /* return to kernel i's entry (ahead), its entry to its reaching its */
    double trace_waiting_us[TRACE_NAMES]; /* wait (before), reaching it to its return (waiting) */
    int trace_three;                      /* the replays summed so */
    const char *trace_of[TRACE_NAMES];
    int trace_len, trace_steps, trace_skipped, trace_skipped_n; /* the stamps of the last skipped replay */
    double trace_blocks[TRACE_NAMES];     /* every block (the replays of trace_all summed): blocks, and from */
    double trace_lastin_us[TRACE_NAMES];  /* the kernel's first wait return, its last block's entry, its last */
    double trace_lastat_us[TRACE_NAMES];  /* block's reaching its wait, its last wait return */
    double trace_lastback_us[TRACE_NAMES];
    double trace_lastend_us[TRACE_NAMES]; /* and its last block's end */
    double trace_mark_us[TRACE_NAMES][TRACE_MARKS]; /* the blocks' mean TRACE_MARK(k) from their wait return */
    int trace_all;
    hipEvent_t trace_ev[2];               /* around each traced replay: the whole step, copies and all */
    double trace_replay_us;
#endif
};

static int fail(vt_error *err, hipError_t e, const char *what)
{
    return vt_error_set(err, VT_EINPUT, "gpu: %s: %s", what, hipGetErrorString(e));
}

#define TRY(call, what)                                                                             \
    do {                                                                                            \
        hipError_t e_ = (call);                                                                     \
        if (e_ != hipSuccess)                                                                       \
            return fail(err, e_, what);                                                             \
    } while (0)

/* Lets kernel fn take shm bytes of dynamic shared memory on g's device
 * (bound by the caller). The limit belongs to the function on its device,
 * not to one launch: set to each launch's size, a smaller launch would
 * lower it under a captured graph's node (attention's keys: the context in
 * the graph, fewer in a batch launched between two steps) or under another
 * thread's launch about to start. So it only rises: per kernel and device
 * the most asked for so far, under one lock. */
static int shm_allow(vt_gpu *g, const void *fn, size_t shm, vt_error *err)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static struct {
        const void *fn;
        int device;
        size_t most;
    } marks[256];
    static int n_marks;
    if (shm <= 48 * 1024)
        return VT_OK; /* every kernel's without asking */
    pthread_mutex_lock(&lock);
    int i = 0;
    while (i < n_marks && (marks[i].fn != fn || marks[i].device != g->device))
        i++;
    hipError_t e = hipSuccess;
    const int full = i == n_marks && n_marks == (int)(sizeof marks / sizeof marks[0]); /* not reached */
    if (!full && (i == n_marks || shm > marks[i].most)) {
        e = hipFuncSetAttribute(fn, hipFuncAttributeMaxDynamicSharedMemorySize, (int)shm);
        if (e == hipSuccess) {
            marks[i].fn = fn;
            marks[i].device = g->device;
            marks[i].most = shm;
            n_marks += i == n_marks;
        }
    }
    pthread_mutex_unlock(&lock);
    if (full)
        return vt_error_set(err, VT_EINPUT, "gpu: more than 256 kernels and devices with large shared memory");
    return e == hipSuccess ? VT_OK : fail(err, e, "hipFuncSetAttribute");
}

/* VT_GPU_PROFILE=1: an event after each launch that is not captured into a
 * graph; the time between two events is the second's kernel's, with
 * whatever the stream did before it (the first kernel of a step carries
 * the step's upload and the host's time since the last waiting copy; a
 * kernel after a host call, the call's round trip), summed per kernel name
 * and per phase (decode steps apart from batches), printed on stderr at
 * close. A diagnostic for the benchmark: a record per launch, so off
 * unless asked for. */
#define PROF_EVENTS 2048
#define PROF_NAMES 96
typedef struct gpu_prof {
    hipEvent_t ev[PROF_EVENTS];
    const char *what[PROF_EVENTS]; /* the kernel that ends at ev[i] */
    int phase[PROF_EVENTS];
    int n;     /* events recorded since ev[0], the window's start */
    int phase_now;
    const char *name[PROF_NAMES];
    int name_phase[PROF_NAMES];
    double ms[PROF_NAMES];
    uint64_t count[PROF_NAMES];
    int names;
} gpu_prof;

static void prof_add(gpu_prof *p, const char *what, int phase, double ms)
{
    int i = 0;
    while (i < p->names && !(p->name_phase[i] == phase && !strcmp(p->name[i], what)))
        i++;
    if (i == p->names) {
        if (p->names == PROF_NAMES)
            return;
        p->name[i] = what;
        p->name_phase[i] = phase;
        p->names++;
    }
    p->ms[i] += ms;
    p->count[i]++;
}

/* The window's intervals summed; the last event becomes the next start. */
static void prof_flush(vt_gpu *g)
{
    gpu_prof *p = g->prof;
    if (!p || p->n < 2)
        return;
    hipEventSynchronize(p->ev[p->n - 1]);
    for (int i = 1; i < p->n; i++) {
        float ms = 0.0f;
        if (hipEventElapsedTime(&ms, p->ev[i - 1], p->ev[i]) == hipSuccess)
            prof_add(p, p->what[i], p->phase[i], ms);
    }
    hipEvent_t last = p->ev[p->n - 1];
    p->ev[p->n - 1] = p->ev[0];
    p->ev[0] = last;
    p->n = 1;
}

/* A new window from now (after a synchronizing copy: the device is idle). */
static void prof_restart(vt_gpu *g)
{
    gpu_prof *p = g->prof;
    if (!p || g->capturing)
        return;
    prof_flush(g);
    hipEventRecord(p->ev[0], g->stream);
    p->n = 1;
}

static void prof_mark(vt_gpu *g, const char *what)
{
    gpu_prof *p = g->prof;
    if (!p || g->capturing || p->n == 0)
        return;
    p->what[p->n] = what;
    p->phase[p->n] = p->phase_now;
    hipEventRecord(p->ev[p->n], g->stream);
    if (++p->n == PROF_EVENTS)
        prof_flush(g);
}

static void prof_open(vt_gpu *g)
{
    const char *on = getenv("VT_GPU_PROFILE");
    if (!on || strcmp(on, "1"))
        return;
    gpu_prof *p = (gpu_prof *)calloc(1, sizeof *p);
    if (!p)
        return;
    for (int i = 0; i < PROF_EVENTS; i++)
        if (hipEventCreate(&p->ev[i]) != hipSuccess) {
            for (int k = 0; k < i; k++)
                hipEventDestroy(p->ev[k]);
            free(p);
            return;
        }
    g->prof = p;
    prof_restart(g);
}

static void prof_close(vt_gpu *g)
{
    gpu_prof *p = g->prof;
    if (!p)
        return;
    hipStreamSynchronize(g->stream);
    prof_flush(g);
    for (int phase = 0; phase < 2; phase++) {
        double total = 0.0;
        for (int i = 0; i < p->names; i++)
            total += p->name_phase[i] == phase ? p->ms[i] : 0.0;
        if (total <= 0.0)
            continue;
        fprintf(stderr, "gpu profile (%s): %.3f ms in all\n", phase ? "decode steps" : "batches", total);
        for (int done = 0; done < p->names; done++) { /* largest first */
            int best = -1;
            for (int i = 0; i < p->names; i++)
                if (p->name_phase[i] == phase && p->count[i] && (best < 0 || p->ms[i] > p->ms[best]))
                    best = i;
            if (best < 0)
                break;
            fprintf(stderr, "  %-28s %8llu launches %10.3f ms %9.2f us each %5.1f%%\n", p->name[best],
                    (unsigned long long)p->count[best], p->ms[best], 1000.0 * p->ms[best] / (double)p->count[best],
                    100.0 * p->ms[best] / total);
            p->count[best] = 0;
        }
    }
    for (int i = 0; i < PROF_EVENTS; i++)
        hipEventDestroy(p->ev[i]);
    free(p);
    g->prof = NULL;
}

extern "C" void vt_gpu_profile_phase(vt_gpu *g, int decode_step)
{
    if (g->prof)
        g->prof->phase_now = decode_step != 0;
}

#ifdef VT_GPU_TRACE
#define TRACE_NAME(g, what)                                                                         \
    do {                                                                                            \
        if ((g)->capturing && (g)->trace_names < TRACE_NAMES)                                       \
            (g)->trace_name[(g)->trace_names++] = (what);                                           \
    } while (0)
#else
#define TRACE_NAME(g, what) ((void)0)
#endif

#define LAUNCHED(what)                                                                              \
    do {                                                                                            \
        g->launches += !g->capturing;                                                               \
        g->after_kernel = 1;                                                                        \
        TRACE_NAME(g, what);                                                                        \
        TRY(hipGetLastError(), what);                                                               \
        prof_mark(g, what);                                                                         \
    } while (0)

extern "C" vt_gpu *vt_gpu_open(int device, vt_error *err)
{
    if (vt_gpu_bind(device, err))
        return NULL;
    vt_gpu *g = (vt_gpu *)calloc(1, sizeof *g);
    if (!g) {
        vt_error_set(err, VT_EINPUT, "gpu: out of memory");
        return NULL;
    }
    g->device = device;
#if !defined(__HIP_PLATFORM_AMD__)
    hipDeviceProp_t prop;
    const int known = hipGetDeviceProperties(&prop, device) == hipSuccess;
    const char *pdl = getenv("VT_GPU_PDL");
    g->pdl = !known || prop.major < 9 || (pdl && !strcmp(pdl, "0")) ? PDL_NONE
             : pdl && !strcmp(pdl, "products")                      ? PDL_PRODUCTS
                                                                    : PDL_ALL;
    const char *mv1 = getenv("VT_GPU_MV1"), *hw = getenv("VT_GPU_HEAD_WARPS");
    g->mv1 = !(mv1 && !strcmp(mv1, "0"));
    g->head_warps = !(hw && !strcmp(hw, "0"));
    const char *ps = getenv("VT_GPU_PAIR_SWIGLU");
    g->pair_swiglu = !(ps && !strcmp(ps, "0"));
    const char *an = getenv("VT_GPU_ADD_NORM");
    g->add_norm = !(an && !strcmp(an, "0"));
    const char *ac = getenv("VT_GPU_ATT_CLUSTER");
    g->att_cluster = known && prop.major >= 9 && !(ac && !strcmp(ac, "0"));
    const char *aq = getenv("VT_GPU_ATT_QK");
    g->att_qk = !(aq && !strcmp(aq, "0"));
    const char *al = getenv("VT_GPU_ATT_L1V");
    g->att_l1v = !(al && !strcmp(al, "0"));
    g->sms = known ? prop.multiProcessorCount : 0;
    const char *mb = getenv("VT_GPU_MV1_MAX_BLOCKS");
    g->mv1_max_blocks = mb ? atoi(mb) : 4 * g->sms;
#endif
    hipError_t e = hipStreamCreateWithFlags(&g->stream, hipStreamNonBlocking);
    if (e != hipSuccess) {
        fail(err, e, "hipStreamCreateWithFlags");
        free(g);
        return NULL;
    }
    if (vt_gpu_grids_upload(&g->grids_buf, &g->grids, err)) {
        vt_gpu_close(g);
        return NULL;
    }
    prof_open(g);
    return g;
}

#ifdef VT_GPU_TRACE
static void trace_report(vt_gpu *g);
#endif

extern "C" void vt_gpu_close(vt_gpu *g)
{
    if (g && g->xq) {
        hipSetDevice(g->device);
        hipFree(g->xq);
    }
    if (!g)
        return;
    if (hipSetDevice(g->device) == hipSuccess) {
        prof_close(g);
#ifdef VT_GPU_TRACE
        trace_report(g);
        for (int i = 0; i < 2; i++)
            if (g->trace_ev[i])
                hipEventDestroy(g->trace_ev[i]);
#endif
        hipStreamSynchronize(g->stream);
        hipFree(g->grids_buf);
        hipFree(g->att);
        hipStreamDestroy(g->stream);
    }
    free(g);
}

extern "C" void *vt_gpu_malloc(vt_gpu *g, size_t bytes, vt_error *err)
{
    void *p = NULL;
    if (vt_gpu_bind(g->device, err))
        return NULL;
    hipError_t e = hipMalloc(&p, bytes ? bytes : 1);
    if (e != hipSuccess) {
        fail(err, e, "hipMalloc");
        return NULL;
    }
    return p;
}

extern "C" void vt_gpu_mfree(vt_gpu *g, void *p)
{
    if (p && hipSetDevice(g->device) == hipSuccess)
        hipFree(p);
}

extern "C" int vt_gpu_use(vt_gpu *g, vt_error *err)
{
    TRY(hipSetDevice(g->device), "hipSetDevice");
    return VT_OK;
}

extern "C" int vt_gpu_to_device(vt_gpu *g, void *dst, const void *host, size_t bytes, vt_error *err)
{
    TRY(hipSetDevice(g->device), "hipSetDevice");
    g->copies++;
    g->after_kernel = 0;
    TRY(hipMemcpyAsync(dst, host, bytes, hipMemcpyHostToDevice, g->stream), "hipMemcpyAsync to device");
    /* The host buffer may be reused at once: wait for the copy. */
    TRY(hipStreamSynchronize(g->stream), "hipStreamSynchronize");
    return VT_OK;
}

extern "C" int vt_gpu_to_host(vt_gpu *g, void *host, const void *src, size_t bytes, vt_error *err)
{
    TRY(hipSetDevice(g->device), "hipSetDevice");
    g->copies++;
    g->after_kernel = 0;
    TRY(hipMemcpyAsync(host, src, bytes, hipMemcpyDeviceToHost, g->stream), "hipMemcpyAsync to host");
    TRY(hipStreamSynchronize(g->stream), "hipStreamSynchronize");
    prof_restart(g);
    return VT_OK;
}

extern "C" void vt_gpu_counts(const vt_gpu *g, uint64_t *launches, uint64_t *copies)
{
    *launches = g->launches;
    *copies = g->copies;
}

extern "C" void *vt_gpu_host_alloc(vt_gpu *g, size_t bytes, vt_error *err)
{
    void *p = NULL;
    if (vt_gpu_bind(g->device, err))
        return NULL;
    hipError_t e = hipHostMalloc(&p, bytes ? bytes : 1, hipHostMallocDefault);
    if (e != hipSuccess) {
        fail(err, e, "hipHostMalloc");
        return NULL;
    }
    return p;
}

extern "C" void vt_gpu_host_free(vt_gpu *g, void *p)
{
    if (p && hipSetDevice(g->device) == hipSuccess)
        hipHostFree(p);
}

extern "C" int vt_gpu_to_host_async(vt_gpu *g, void *host, const void *src, size_t bytes, vt_error *err)
{
    g->copies += !g->capturing;
    g->after_kernel = 0;
    TRY(hipMemcpyAsync(host, src, bytes, hipMemcpyDeviceToHost, g->stream), "hipMemcpyAsync to host");
    return VT_OK;
}

extern "C" int vt_gpu_to_device_async(vt_gpu *g, void *dst, const void *host, size_t bytes, vt_error *err)
{
    g->copies += !g->capturing;
    g->after_kernel = 0;
    TRY(hipMemcpyAsync(dst, host, bytes, hipMemcpyHostToDevice, g->stream), "hipMemcpyAsync to device");
    return VT_OK;
}

/* ------------------------------------------------------------ graphs */

struct vt_gpu_graph {
    hipGraphExec_t exec;
    uint64_t xq_generation;
#ifdef VT_GPU_TRACE
    const char *names[TRACE_NAMES]; /* its kernels in order (names are static strings) */
    int n_names;
#endif
};

extern "C" int vt_gpu_capture_begin(vt_gpu *g, vt_error *err)
{
    TRY(hipSetDevice(g->device), "hipSetDevice");
    /* Relaxed: the q8 products may still allocate their scratch. */
    g->after_kernel = 0;
#ifdef VT_GPU_TRACE
    g->trace_names = 0;
#endif
    TRY(hipStreamBeginCapture(g->stream, hipStreamCaptureModeRelaxed), "hipStreamBeginCapture");
    g->capturing = 1;
    return VT_OK;
}

extern "C" int vt_gpu_capture_end(vt_gpu *g, int rc, vt_gpu_graph **out, vt_error *err)
{
    hipGraph_t graph = NULL;
    g->capturing = 0;
    *out = NULL;
    hipError_t e = hipStreamEndCapture(g->stream, &graph);
    if (rc == VT_OK && e != hipSuccess)
        rc = fail(err, e, "hipStreamEndCapture");
    vt_gpu_graph *x = NULL;
    if (rc == VT_OK && !(x = (vt_gpu_graph *)calloc(1, sizeof *x)))
        rc = vt_error_set(err, VT_EINPUT, "gpu: out of memory");
    if (rc == VT_OK && (e = hipGraphInstantiateWithFlags(&x->exec, graph, 0)) != hipSuccess)
        rc = fail(err, e, "hipGraphInstantiateWithFlags");
    if (graph)
        hipGraphDestroy(graph);
    if (rc != VT_OK) {
        free(x);
        return rc;
    }
    x->xq_generation = g->xq_generation;
#ifdef VT_GPU_TRACE
    memcpy(x->names, g->trace_name, (size_t)g->trace_names * sizeof x->names[0]);
    x->n_names = g->trace_names;
#endif
    *out = x;
    return VT_OK;
}

#ifdef VT_GPU_TRACE
/* The records of one replay's blocks grouped by launch (grid id), the
 * groups in order of their first entry: kernels enter in step order. */
struct trace_group {
    unsigned long long grid, e0, e1, r1, t0, t1, x1;
    unsigned n, mn[TRACE_MARKS];
    double ms[TRACE_MARKS]; /* marks from their block's wait return, summed over the blocks that set them */
};
static int trace_by_grid(const void *a, const void *b)
{
    const trace_blk *x = (const trace_blk *)a, *y = (const trace_blk *)b;
    return x->grid < y->grid ? -1 : x->grid > y->grid;
}
static int trace_by_entry(const void *a, const void *b)
{
    const trace_group *x = (const trace_group *)a, *y = (const trace_group *)b;
    return x->e0 < y->e0 ? -1 : x->e0 > y->e0;
}
static void trace_blocks_sum(vt_gpu *g, unsigned n_kernels)
{
    static trace_blk b[TRACE_BLOCKS];
    static trace_group grp[TRACE_NAMES];
    unsigned bn = 0;
    if (hipMemcpyFromSymbol(&bn, vt_trace_bn, sizeof bn) != hipSuccess || bn > TRACE_BLOCKS ||
        hipMemcpyFromSymbol(b, vt_trace_b, (size_t)bn * sizeof b[0]) != hipSuccess)
        return;
    qsort(b, bn, sizeof b[0], trace_by_grid);
    unsigned ng = 0;
    for (unsigned i = 0; i < bn; i++) {
        if (!i || b[i].grid != b[i - 1].grid) {
            if (ng == TRACE_NAMES)
                return;
            grp[ng++] = (trace_group){ b[i].grid, b[i].e, b[i].e, b[i].r, b[i].t, b[i].t, b[i].x, 0, {}, {} };
        }
        trace_group *q = &grp[ng - 1];
        q->n++;
        q->x1 = b[i].x > q->x1 ? b[i].x : q->x1;
        for (int k = 0; k < TRACE_MARKS; k++)
            if (b[i].m[k]) {
                q->mn[k]++;
                q->ms[k] += ((double)b[i].m[k] - (double)b[i].t) * 1e-3;
            }
        q->e0 = b[i].e < q->e0 ? b[i].e : q->e0;
        q->e1 = b[i].e > q->e1 ? b[i].e : q->e1;
        q->r1 = b[i].r > q->r1 ? b[i].r : q->r1;
        q->t0 = b[i].t < q->t0 ? b[i].t : q->t0;
        q->t1 = b[i].t > q->t1 ? b[i].t : q->t1;
    }
    if (ng != n_kernels)
        return;
    qsort(grp, ng, sizeof grp[0], trace_by_entry);
    for (unsigned i = 0; i < ng; i++) {
        g->trace_blocks[i] += grp[i].n;
        g->trace_lastin_us[i] += ((double)grp[i].e1 - (double)grp[i].t0) * 1e-3;
        g->trace_lastat_us[i] += ((double)grp[i].r1 - (double)grp[i].t0) * 1e-3;
        g->trace_lastback_us[i] += ((double)grp[i].t1 - (double)grp[i].t0) * 1e-3;
        g->trace_lastend_us[i] += ((double)grp[i].x1 - (double)grp[i].t0) * 1e-3;
        for (int k = 0; k < TRACE_MARKS; k++)
            g->trace_mark_us[i][k] += grp[i].mn[k] ? grp[i].ms[k] / grp[i].mn[k] : 0.0;
    }
    g->trace_all++;
}

/* One replay of x alone on the device (the stream drained before and
 * after: the step's own timing is its kernels'), its stamps added to g's
 * sums when there is one a kernel and x has the length of the replays
 * summed so far (else counted as skipped). */
static int trace_step(vt_gpu *g, vt_gpu_graph *x, vt_error *err)
{
    static unsigned long long t[TRACE_CAP], te[TRACE_CAP], tr[TRACE_CAP];
    const unsigned zero = 0;
    unsigned n = 0, en = 0, rn = 0;
    TRY(hipStreamSynchronize(g->stream), "hipStreamSynchronize");
    TRY(hipMemcpyToSymbol(vt_trace_n, &zero, sizeof zero), "hipMemcpyToSymbol");
    TRY(hipMemcpyToSymbol(vt_trace_en, &zero, sizeof zero), "hipMemcpyToSymbol");
    TRY(hipMemcpyToSymbol(vt_trace_rn, &zero, sizeof zero), "hipMemcpyToSymbol");
    TRY(hipMemcpyToSymbol(vt_trace_bn, &zero, sizeof zero), "hipMemcpyToSymbol");
    if (!g->trace_ev[0]) {
        TRY(hipEventCreate(&g->trace_ev[0]), "hipEventCreate");
        TRY(hipEventCreate(&g->trace_ev[1]), "hipEventCreate");
    }
    TRY(hipEventRecord(g->trace_ev[0], g->stream), "hipEventRecord");
    TRY(hipGraphLaunch(x->exec, g->stream), "hipGraphLaunch");
    TRY(hipEventRecord(g->trace_ev[1], g->stream), "hipEventRecord");
    TRY(hipStreamSynchronize(g->stream), "hipStreamSynchronize");
    float ms = 0.0f;
    TRY(hipEventElapsedTime(&ms, g->trace_ev[0], g->trace_ev[1]), "hipEventElapsedTime");
    TRY(hipMemcpyFromSymbol(&n, vt_trace_n, sizeof n), "hipMemcpyFromSymbol");
    if (n != (unsigned)x->n_names || n < 2 || n > TRACE_CAP || (g->trace_len && g->trace_len != (int)n)) {
        g->trace_skipped++;
        g->trace_skipped_n = (int)n; /* a kernel that stamps twice, or returns before its wait, shows here */
        return VT_OK;
    }
    TRY(hipMemcpyFromSymbol(t, vt_trace_t, (size_t)n * sizeof t[0]), "hipMemcpyFromSymbol");
    g->trace_len = (int)n;
    g->trace_replay_us += 1e3 * ms;
    for (unsigned i = 0; i + 1 < n; i++) {
        g->trace_us[i] += (double)(t[i + 1] - t[i]) * 1e-3;
        g->trace_of[i] = x->names[i];
    }
    g->trace_steps++;
    trace_blocks_sum(g, n);
    TRY(hipMemcpyFromSymbol(&en, vt_trace_en, sizeof en), "hipMemcpyFromSymbol");
    TRY(hipMemcpyFromSymbol(&rn, vt_trace_rn, sizeof rn), "hipMemcpyFromSymbol");
    if (en != n || rn != n)
        return VT_OK; /* a kernel that enters or waits twice: its times are not summed */
    TRY(hipMemcpyFromSymbol(te, vt_trace_e, (size_t)n * sizeof te[0]), "hipMemcpyFromSymbol");
    TRY(hipMemcpyFromSymbol(tr, vt_trace_r, (size_t)n * sizeof tr[0]), "hipMemcpyFromSymbol");
    for (unsigned i = 0; i < n; i++) {
        /* signed: a kernel that enters after the one ahead's wait returned is behind it, not ahead */
        g->trace_ahead_us[i] += i ? ((double)t[i - 1] - (double)te[i]) * 1e-3 : 0.0;
        g->trace_before_us[i] += (double)(tr[i] - te[i]) * 1e-3;
        g->trace_waiting_us[i] += (double)(t[i] - tr[i]) * 1e-3;
    }
    g->trace_three++;
    return VT_OK;
}

/* Whether a kernel ahead of the step's i-th has its name: the tables by
 * name print a name's row at its first kernel. */
static int trace_named_before(const vt_gpu *g, int i)
{
    for (int j = 0; j < i; j++)
        if (!strcmp(g->trace_of[j], g->trace_of[i]))
            return 1;
    return 0;
}

/* At close: each kernel's mean cost to the step, in step order, and the
 * same summed by kernel name (stderr). */
static void trace_report(vt_gpu *g)
{
    if (!g->trace_steps && !g->trace_skipped)
        return;
    double all = 0.0;
    for (int i = 0; i + 1 < g->trace_len; i++)
        all += g->trace_us[i];
    const double k = g->trace_steps ? 1.0 / g->trace_steps : 0.0, k3 = g->trace_three ? 1.0 / g->trace_three : 0.0;
    fprintf(stderr, "gpu trace: %d replays of %d kernels (%d skipped, the last with %d stamps): %.2f us a replay "
            "(events around it), the first kernel's wait to the last one's %.2f; each kernel from its wait's return "
            "to the next one's (cost), mean us; over the %d replays where every kernel entered and waited once, "
            "block 0's entry before the wait of the kernel ahead returned (ahead; negative: after it), its entry to "
            "its reaching its wait (before), reaching its wait to the wait's return (waiting):\n", g->trace_steps,
            g->trace_len, g->trace_skipped, g->trace_skipped_n, g->trace_replay_us * k, all * k, g->trace_three);
    fprintf(stderr, "  %4s %-28s %9s %9s %9s %9s\n", "#", "kernel", "cost", "ahead", "before", "waiting");
    for (int i = 0; i + 1 < g->trace_len; i++)
        fprintf(stderr, "  %4d %-28s %9.2f %9.2f %9.2f %9.2f\n", i, g->trace_of[i], g->trace_us[i] * k,
                g->trace_ahead_us[i] * k3, g->trace_before_us[i] * k3, g->trace_waiting_us[i] * k3);
    fprintf(stderr, "gpu trace by kernel name (the step's last kernel has no stamp after it: not counted): count a "
            "step, us a step, us each; then ahead, before and waiting, mean us each\n");
    for (int i = 0; i + 1 < g->trace_len; i++) {
        int count = 0;
        double sum = 0.0, ahead = 0.0, before = 0.0, waiting = 0.0;
        if (trace_named_before(g, i))
            continue;
        for (int j = i; j + 1 < g->trace_len; j++)
            if (!strcmp(g->trace_of[j], g->trace_of[i])) {
                count++;
                sum += g->trace_us[j] * k;
                ahead += g->trace_ahead_us[j] * k3;
                before += g->trace_before_us[j] * k3;
                waiting += g->trace_waiting_us[j] * k3;
            }
        fprintf(stderr, "  %-28s %5d %9.2f %8.2f %8.2f %8.2f %8.2f\n", g->trace_of[i], count, sum, sum / count,
                ahead / count, before / count, waiting / count);
    }
    if (!g->trace_all)
        return;
    const double ka = 1.0 / g->trace_all;
    fprintf(stderr, "gpu trace, every block (%d replays): by kernel name, blocks a launch, and from the launch's "
            "first wait return, when its last block entered, reached its wait, came back from it and ended, mean "
            "us; then where a kernel marks its steps, the blocks' mean marks 0..3 from their own wait return\n",
            g->trace_all);
    for (int i = 0; i + 1 < g->trace_len; i++) {
        int count = 0;
        double blocks = 0.0, in = 0.0, at = 0.0, back = 0.0, end = 0.0, mk[TRACE_MARKS] = {};
        if (trace_named_before(g, i))
            continue;
        for (int j = i; j + 1 < g->trace_len; j++)
            if (!strcmp(g->trace_of[j], g->trace_of[i])) {
                count++;
                blocks += g->trace_blocks[j] * ka;
                in += g->trace_lastin_us[j] * ka;
                at += g->trace_lastat_us[j] * ka;
                back += g->trace_lastback_us[j] * ka;
                end += g->trace_lastend_us[j] * ka;
                for (int m = 0; m < TRACE_MARKS; m++)
                    mk[m] += g->trace_mark_us[j][m] * ka;
            }
        fprintf(stderr, "  %-28s %5d %8.1f %8.2f %8.2f %8.2f %8.2f", g->trace_of[i], count, blocks / count,
                in / count, at / count, back / count, end / count);
        for (int m = 0; m < TRACE_MARKS; m++)
            if (mk[m] != 0.0)
                fprintf(stderr, "  m%d %6.2f", m, mk[m] / count);
        fputc('\n', stderr);
    }
}
#endif

extern "C" int vt_gpu_graph_launch(vt_gpu *g, vt_gpu_graph *x, vt_error *err)
{
    g->launches++;
    g->after_kernel = 0;
#ifdef VT_GPU_TRACE
    return trace_step(g, x, err);
#else
    TRY(hipGraphLaunch(x->exec, g->stream), "hipGraphLaunch");
    return VT_OK;
#endif
}

extern "C" int vt_gpu_graph_valid(const vt_gpu *g, const vt_gpu_graph *x)
{
    return x && x->xq_generation == g->xq_generation;
}

extern "C" void vt_gpu_graph_free(vt_gpu *g, vt_gpu_graph *x)
{
    if (!x)
        return;
    if (hipSetDevice(g->device) == hipSuccess)
        hipGraphExecDestroy(x->exec);
    free(x);
}

/* The read bandwidth limit: every 16-byte word of a buffer far larger than
 * the L2 cache read once per pass; each thread folds what it read into one
 * word written out, so no read can be dropped. */
__global__ static void k_read_all(const uint4 *buf, size_t n, uint32_t *out)
{
    uint32_t acc = 0;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const uint4 v = buf[i];
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    out[(size_t)blockIdx.x * blockDim.x + threadIdx.x] = acc;
}

extern "C" int vt_gpu_read_bandwidth(int device, size_t bytes, int passes, double *bytes_per_s, vt_error *err)
{
    int rc = vt_gpu_bind(device, err);
    if (rc)
        return rc;
    hipDeviceProp_t p;
    TRY(hipGetDeviceProperties(&p, device), "hipGetDeviceProperties");
    const unsigned threads = 256, blocks = (unsigned)p.multiProcessorCount * 8;
    uint4 *buf = NULL;
    uint32_t *out = NULL;
    hipEvent_t t0 = NULL, t1 = NULL;
    hipError_t e = hipMalloc((void **)&buf, bytes);
    if (e == hipSuccess)
        e = hipMalloc((void **)&out, (size_t)blocks * threads * sizeof(uint32_t));
    if (e == hipSuccess)
        e = hipMemsetAsync(buf, 0x5a, bytes, 0); /* not zeros: nothing special about the data */
    if (e == hipSuccess)
        e = hipEventCreate(&t0);
    if (e == hipSuccess)
        e = hipEventCreate(&t1);
    double best = 0;
    for (int i = 0; e == hipSuccess && i <= passes; i++) {
        hipEventRecord(t0, 0);
        k_read_all<<<blocks, threads>>>(buf, bytes / sizeof(uint4), out);
        e = hipGetLastError();
        if (e == hipSuccess)
            e = hipEventRecord(t1, 0);
        if (e == hipSuccess)
            e = hipEventSynchronize(t1);
        float ms = 0;
        if (e == hipSuccess)
            e = hipEventElapsedTime(&ms, t0, t1);
        if (e == hipSuccess && i > 0 && ms > 0 && (double)bytes / (ms * 1e-3) > best) /* pass 0 warms up */
            best = (double)bytes / (ms * 1e-3);
    }
    if (t0)
        hipEventDestroy(t0);
    if (t1)
        hipEventDestroy(t1);
    hipFree(out);
    hipFree(buf);
    if (e != hipSuccess)
        return fail(err, e, "read bandwidth");
    *bytes_per_s = best;
    return VT_OK;
}

extern "C" int vt_gpu_wait(vt_gpu *g, vt_error *err)
{
    TRY(hipSetDevice(g->device), "hipSetDevice");
    TRY(hipStreamSynchronize(g->stream), "hipStreamSynchronize");
    prof_restart(g);
    return VT_OK;
}

/* ------------------------------------------------------------ dots */

/* Element i of a row decoded into shared memory with one pad float after
 * each codec block of 2^s >= 32 elements (k_matvec), so that the lanes
 * decoding blocks side by side write to distinct banks; NO_PAD: none. */
#define NO_PAD 63
__device__ static inline int64_t padded(int64_t i, int s) { return i + (i >> s); }

/* x[i] as the product's activation type holds it: rounded to F16 or BF16
 * (the CPU's vec_dot_f16 / _bf16 take the activation so), or as is. */
__device__ static inline float act_in(const float *x, int64_t i, int act)
{
    const float v = x[i];
    return act == VT_ACT_F16    ? vt_half_bits_to_f32(vt_f32_to_f16_bits(v))
           : act == VT_ACT_BF16 ? vt_bits_f32((uint32_t)vt_f32_bits_to_bf16(v) << 16)
                                : v;
}

/* The tail of ggml_vec_dot_f32 past the last 64 (kernels_dot.c's
 * vec_f32_finish), added to sum in one thread. */
__device__ static float dot_tail(const float *a, int s, const float *b, int64_t np, int64_t n, float sum, int act)
{
    int64_t i = np;
    for (; i + 16 <= n; i += 16)
        for (int k = 0; k < 16; k++)
            sum += a[padded(i + k, s)] * act_in(b, i + k, act);
    if (i + 8 <= n)
        for (int k = 0; k < 8; k++, i++)
            sum += a[padded(i, s)] * act_in(b, i, act);
    for (; i < n; i++)
        sum = fmaf(a[padded(i, s)], act_in(b, i, act), sum);
    return sum;
}

/* ggml_vec_dot_f32's reduction of its 64 partial sums, lane L holding
 * partials L + 32 and L (sa, sb): (s0+s2)+(s1+s3) then the 16-lane tree,
 * the result in lane 0. */
__device__ static inline float warp_tree64(float sa, float sb)
{
    /* lane k < 16: s0k + s2k; lane 16 + k: s1k + s3k */
    float l = sa + sb;
    l = l + SHFL_DOWN(l, 16, 32);
    l = l + SHFL_DOWN(l, 8, 32);
    l = l + SHFL_DOWN(l, 4, 32);
    l = l + SHFL_DOWN(l, 2, 32);
    return l + SHFL_DOWN(l, 1, 32);
}

/* dot(a, b) by one warp (lane 0..31), the result in lane 0; a padded by s,
 * b read through act_in. */
__device__ static float warp_dot_f32(const float *a, int s, const float *b, int64_t n, int lane, int act)
{
    float sa = 0.0f, sb = 0.0f; /* partial sums lane and 32 + lane of 64 */
    const int64_t np = n & ~(int64_t)63;
    for (int64_t i = 0; i < np; i += 64) {
        sa = fmaf(a[padded(i + lane, s)], act_in(b, i + lane, act), sa);
        sb = fmaf(a[padded(i + 32 + lane, s)], act_in(b, i + 32 + lane, act), sb);
    }
    float sum = warp_tree64(sa, sb);
    if (lane == 0 && np < n)
        sum = dot_tail(a, s, b, np, n, sum, act);
    return sum;
}

/* ggml_vec_dot_bf16 (kernels_dot.c's dot_bf16_body) by one warp: lanes
 * 0..15 the first accumulator of 16, lanes 16..31 the second. */
__device__ static float warp_dot_bf16(const float *a, int s, const float *b, int64_t n, int lane, int act)
{
    float c = 0.0f;
    const int64_t np = n & ~(int64_t)31;
    for (int64_t i = 0; i < np; i += 32)
        c = fmaf(a[padded(i + lane, s)], act_in(b, i + lane, act), c);
    c = c + SHFL_DOWN(c, 8, 16);
    c = c + SHFL_DOWN(c, 4, 16);
    c = c + SHFL_DOWN(c, 2, 16);
    c = c + SHFL_DOWN(c, 1, 16);
    const float t2 = SHFL(c, 16, 32);
    double sum = 0.0 + (double)c;
    sum = (double)t2 + sum;
    for (int64_t i = np; i < n; i++)
        sum += (double)(a[padded(i, s)] * act_in(b, i, act));
    return (float)sum;
}

/* ------------------------------------------------------------ kernels */

__global__ static void k_embed(int type, const uint8_t *rows, size_t row_bytes, int64_t block_elems,
                               size_t block_bytes, int64_t bpr, const int64_t *ids, int64_t n_tok, float *x,
                               vt_iq_grids g)
{
    GRID_ENTER();
    for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < n_tok * bpr;
         k += (int64_t)gridDim.x * blockDim.x) {
        const int64_t t = k / bpr, j = k % bpr;
        decode_block(type, rows + (size_t)ids[t] * row_bytes + (size_t)j * block_bytes, x + t * bpr * block_elems + j * block_elems, &g);
    }
}

/* The sum in double of sq[0..n) in element order, by one thread: the
 * reads from shared memory run ahead of the chain of additions. */
__device__ static double sum_in_order(const float *sq, int64_t n)
{
    double sum = 0.0;
    int64_t i = 0;
#pragma unroll 4
    for (; i + 8 <= n; i += 8) {
        float v[8];
        for (int k = 0; k < 8; k++)
            v[k] = sq[i + k];
        for (int k = 0; k < 8; k++)
            sum += (double)v[k];
    }
    for (; i < n; i++)
        sum += (double)sq[i];
    return sum;
}

/* The means (float)(sum / n) of the squares in NA arrays sq[a][0..n)
 * (>= 0, or NaN), sum each array's serial double sum, as vt_rmsnorm
 * computes it, by every thread of the block: a tree sum stands in for the
 * serial one wherever mean_of_any_order_sum (engine_math.h) shows it gives
 * the same float; else (about once in 40,000 rows of 1024, and for inf or
 * NaN) the serial loop. One barrier: each warp's partial sums meet in
 * shared memory, then every warp adds them up itself (an xor butterfly,
 * the same bits in every lane, since a + b is b + a) and every thread
 * decides, so no thread waits on thread 0. Every thread calls it; it
 * reads sq and its shared partials until it returns, so a caller writes sq
 * (or calls it again) only after a barrier. */
template <int NA>
__device__ static void mean_squares_as_serial(const float *const *sq, int64_t n, float *mean)
{
    __shared__ double part_s[NA][32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = (blockDim.x + 31) >> 5;
#pragma unroll
    for (int a = 0; a < NA; a++) {
        double part = 0.0;
        for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
            part += (double)sq[a][i];
        for (int o = 16; o; o >>= 1)
            part += SHFL_XOR(part, o, 32);
        if (lane == 0)
            part_s[a][warp] = part;
    }
    __syncthreads();
#pragma unroll
    for (int a = 0; a < NA; a++) {
        double tree = lane < warps ? part_s[a][lane] : 0.0;
        for (int o = 16; o; o >>= 1)
            tree += SHFL_XOR(tree, o, 32);
        if (!mean_of_any_order_sum(tree, n, &mean[a]))
            mean[a] = (float)(sum_in_order(sq[a], n) / (double)n);
    }
}

__device__ static float mean_square_as_serial(const float *sq, int64_t n)
{
    float mean;
    mean_squares_as_serial<1>(&sq, n, &mean);
    return mean;
}

/* One block per row: every thread squares (the CPU's float products) into
 * shared memory, thread 0 sums them in order, every thread scales. */
__global__ static void k_rmsnorm(float *out, const float *x, const float *w, int64_t n, float eps)
{
    GRID_ENTER();
    extern __shared__ float sq[];
    __shared__ float scale_s;
    const float *xr = x + (int64_t)blockIdx.x * n;
    float *o = out + (int64_t)blockIdx.x * n;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
        sq[i] = xr[i] * xr[i];
    __syncthreads();
    const float mean = mean_square_as_serial(sq, n);
    if (threadIdx.x == 0)
        scale_s = 1.0f / sqrtf(mean + eps);
    __syncthreads();
    const float scale = scale_s;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
        o[i] = w ? xr[i] * scale * w[i] : xr[i] * scale;
}

/* One block per output row: the row decoded into shared memory, then each
 * warp takes tokens. */
__global__ static void k_matmul(int type, const uint8_t *data, size_t row_bytes, int64_t cols, int64_t block_elems,
                                size_t block_bytes, const float *x, int64_t n_tok, float *y, int64_t ldy,
                                vt_iq_grids g)
{
    extern __shared__ float row[];
    const int64_t o = blockIdx.x;
    const uint8_t *wr = data + (size_t)o * row_bytes;
    const int64_t nb = cols / block_elems;
    for (int64_t b = threadIdx.x; b < nb; b += blockDim.x) {
        float tmp[VT_QK_K];
        decode_block(type, wr + (size_t)b * block_bytes, tmp, &g);
        for (int64_t e = 0; e < block_elems; e++)
            row[b * block_elems + e] = tmp[e];
    }
    __syncthreads();
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    for (int64_t t = warp; t < n_tok; t += warps) {
        const float r = type == VT_TYPE_BF16 ? warp_dot_bf16(row, NO_PAD, x + t * cols, cols, lane, VT_ACT_F32)
                                             : warp_dot_f32(row, NO_PAD, x + t * cols, cols, lane, VT_ACT_F32);
        if (lane == 0)
            y[t * ldy + o] = r;
    }
}

/* A decode step's product (a few tokens): one warp per output row, several
 * rows a block, one kernel per codec (T: the switch of decode_block folds
 * away, and with it the other codecs' registers). The warp copies the row's
 * bytes into shared memory in 16-byte words (4-byte or single where the row
 * size does not allow), the lanes decode its codec blocks side by side from
 * there into the warp's float slice (padded by s), then the warp takes the
 * same dot as k_matmul with each token in turn. */
#define MATVEC_MAX_TOK 4

/* n words from global to shared memory by the 32 lanes of a warp, eight
 * loads a lane in flight before their stores (the stores would otherwise
 * wait on each load in turn). */
template <typename W>
__device__ static inline void copy_words(W *__restrict__ dst, const W *__restrict__ src, size_t n, int lane)
{
    for (size_t base = 0; base < n; base += 8 * 32) {
        W r[8];
#pragma unroll
        for (int u = 0; u < 8; u++) {
            const size_t k = base + (size_t)u * 32 + (size_t)lane;
            if (k < n)
                r[u] = src[k];
        }
#pragma unroll
        for (int u = 0; u < 8; u++) {
            const size_t k = base + (size_t)u * 32 + (size_t)lane;
            if (k < n)
                dst[k] = r[u];
        }
    }
}

#define MATVEC_MAX_PARTS 4
/* Up to four matrices of one codec and width over the same input (Q, K, V;
 * gate, up; qwen35's Q|K|V, z, beta, alpha), their rows taken one after
 * another by one launch. */
typedef struct mv_parts {
    const uint8_t *data[MATVEC_MAX_PARTS];
    int64_t rows[MATVEC_MAX_PARTS];
    float *y[MATVEC_MAX_PARTS];
    int64_t ldy[MATVEC_MAX_PARTS];
    int n;
} mv_parts;

/* Row *o of parts' rows taken one after another: its part's data, y and
 * ldy, *o made the row within that part; 0 past the last (nothing set).
 * The indices known at compile time, so parts stays in registers. */
__device__ static inline int mv_part_of(const mv_parts &parts, int64_t *o, const uint8_t **data, float **y,
                                        int64_t *ldy)
{
    int found = 0;
#pragma unroll
    for (int p = 0; p < MATVEC_MAX_PARTS; p++)
        if (!found && p < parts.n) {
            if (*o < parts.rows[p]) {
                *data = parts.data[p];
                *y = parts.y[p];
                *ldy = parts.ldy[p];
                found = 1;
            } else
                *o -= parts.rows[p];
        }
    return found;
}

template <int T>
__global__ static void k_matvec(mv_parts parts, size_t row_bytes, int64_t cols, int64_t block_elems,
                                size_t block_bytes, int s, int64_t span, size_t raw_bytes, const float *x,
                                int act, int64_t n_tok, vt_iq_grids g)
{
    GRID_RELEASE(); /* the next kernel may start: it waits for this one */
    extern __shared__ float sh[];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    int64_t o = (int64_t)blockIdx.x * (blockDim.x >> 5) + warp;
    const uint8_t *data = NULL;
    float *y = NULL;
    int64_t ldy = 0;
    if (!mv_part_of(parts, &o, &data, &y, &ldy))
        return; /* a whole warp: no block-wide barrier follows */
    const int64_t span4 = (span + 3) & ~(int64_t)3; /* the raw bytes 16-byte aligned */
    float *row = sh + warp * (span4 + (int64_t)(raw_bytes / sizeof(float)));
    uint8_t *raw = (uint8_t *)(row + span4);
    const uint8_t *wr = data + (size_t)o * row_bytes;
    if (row_bytes % 16 == 0)
        copy_words((uint4 *)raw, (const uint4 *)wr, row_bytes / 16, lane);
    else if (row_bytes % 4 == 0)
        copy_words((uint32_t *)raw, (const uint32_t *)wr, row_bytes / 4, lane);
    else
        copy_words(raw, wr, row_bytes, lane);
    GRID_WAIT(); /* x is the kernel ahead's output */
    VT_SYNCWARP();
    const int64_t nb = cols / block_elems;
    for (int64_t b = lane; b < nb; b += 32)
        decode_block(T, raw + (size_t)b * block_bytes, row + padded(b * block_elems, s), &g);
    VT_SYNCWARP();
    for (int64_t t = 0; t < n_tok; t++) {
        const float r = T == VT_TYPE_BF16 ? warp_dot_bf16(row, s, x + t * cols, cols, lane, act)
                                          : warp_dot_f32(row, s, x + t * cols, cols, lane, act);
        if (lane == 0)
            y[t * ldy + o] = r;
    }
}

typedef void (*matvec_kernel)(mv_parts, size_t, int64_t, int64_t, size_t, int, int64_t, size_t, const float *, int, int64_t,
                              vt_iq_grids);
/* One kernel per decodable codec (device_codec.h's list); NULL for others.
 * (A switch: C++ has no designated array initializers.) */
#define MATVEC(T)                                                                                   \
    case VT_TYPE_##T: return k_matvec<VT_TYPE_##T>
static matvec_kernel matvec_kernel_of(int type)
{
    switch (type) {
        MATVEC(F32); MATVEC(F16); MATVEC(BF16); MATVEC(Q4_0); MATVEC(Q4_1); MATVEC(Q5_0); MATVEC(Q5_1);
        MATVEC(Q8_0); MATVEC(Q2_K); MATVEC(Q3_K); MATVEC(Q4_K); MATVEC(Q5_K); MATVEC(Q6_K); MATVEC(Q8_K);
        MATVEC(IQ2_XXS); MATVEC(IQ2_XS); MATVEC(IQ2_S); MATVEC(IQ3_XXS); MATVEC(IQ3_S); MATVEC(IQ1_S);
        MATVEC(IQ1_M); MATVEC(IQ4_NL); MATVEC(IQ4_XS); MATVEC(TQ1_0); MATVEC(TQ2_0); MATVEC(MXFP4);
    default: return NULL;
    }
}
#undef MATVEC

/* --matmul q8, a decode step (a few tokens), Q8_0 and Q4_K weights: one
 * warp per output row, the CPU's integer product (codec_intdot.h) spread
 * over its lanes. Integer sums are exact in any order, so lanes take them
 * side by side; each float accumulator then runs its fused multiply-adds
 * in block order, as vt_dot_q8_0 and vt_dot_q4_k_r8 do. The block
 * quantizes the activation into shared memory first, each activation block
 * by one warp, the same bits as vt_q8_0_block_write and
 * vt_q8_k_block_write. */

/* Four int8 products of a and b added to c (exact). */
__device__ static inline int dot4_i8(int a, int b, int c)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 610
    return __dp4a(a, b, c);
#else
    for (int k = 0; k < 4; k++)
        c += (int)(int8_t)(a >> (8 * k)) * (int)(int8_t)(b >> (8 * k));
    return c;
#endif
}

__device__ static inline int warp_sum_i32(int v)
{
    for (int o = 16; o; o >>= 1)
        v += SHFL_XOR(v, o, 32);
    return v;
}

/* Bytes p[0..3] as one little-endian word, p 2-byte aligned. */
__device__ static inline int rd32_a2(const uint8_t *p)
{
    const uint16_t *h = (const uint16_t *)p;
    return (int)((uint32_t)h[0] | (uint32_t)h[1] << 16);
}

/* vt_q8_0_block_write by a warp, lane = element v: amax is a maximum (the
 * same in any order; fmaxf drops NaN as the CPU's loop does). */
__device__ static void warp_q8_0_block(float v, uint8_t *dst, int lane)
{
    float amax = fmaxf(0.0f, fabsf(v));
    for (int o = 16; o; o >>= 1)
        amax = fmaxf(amax, SHFL_XOR(amax, o, 32));
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    dst[2 + lane] = (uint8_t)(int8_t)nearbyintf(v * id);
    if (lane == 0) {
        const uint16_t d = vt_f32_to_f16_bits(amax / 127.0f);
        dst[0] = (uint8_t)(d & 0xff);
        dst[1] = (uint8_t)(d >> 8);
    }
}

/* vt_q8_k_block_write by a warp for U blocks at once (their shuffles in
 * flight together), lane = elements 8 lane .. 8 lane + 7 of block u (v[u],
 * already loaded) into dst[u]. The scale's element is the first of largest magnitude (the CPU's
 * strict >): the magnitude by a max butterfly (fmaxf drops NaN, as the
 * strict > does), then the lowest lane holding it (a ballot) and in that
 * lane the first; its sign by a second ballot, as the element is +-amax.
 * (Choosing the element by a select chain over k made the compiler index
 * v in local memory.) Sums of 16 by lane pairs. dst[u] is 4-byte aligned
 * (every caller's xs is 16-byte aligned and its blocks 292 bytes apart), so
 * each lane stores its eight values as two words, its pair's sum as one
 * half-word and lane 0 the scale as one word. */
template <int U>
__device__ static inline void warp_q8_k_blocks(const float (*v)[8], uint8_t *const *dst, int lane)
{
    float amax[U];
#pragma unroll
    for (int u = 0; u < U; u++) {
        amax[u] = 0.0f;
#pragma unroll
        for (int k = 0; k < 8; k++)
            amax[u] = fmaxf(amax[u], fabsf(v[u][k]));
    }
#pragma unroll
    for (int o = 16; o; o >>= 1)
#pragma unroll
        for (int u = 0; u < U; u++)
            amax[u] = fmaxf(amax[u], SHFL_XOR(amax[u], o, 32));
#pragma unroll
    for (int u = 0; u < U; u++) {
        bool has = false, neg = false; /* this lane's first element of magnitude amax, and its sign */
#pragma unroll
        for (int k = 7; k >= 0; k--)
            if (fabsf(v[u][k]) == amax[u]) {
                has = true;
                neg = v[u][k] < 0.0f;
            }
        const unsigned holders = BALLOT32(has), negs = BALLOT32(has && neg);
        uint32_t qw[2] = { 0, 0 }; /* amax == 0: every value 0 */
        int sum = 0;
        uint32_t d = 0;
        if (amax[u] != 0.0f) {
            const int first = __ffs(holders) - 1;
            const float xi = (negs >> first) & 1u ? -amax[u] : amax[u];
            const float iscale = -127.0f / xi;
#pragma unroll
            for (int k = 0; k < 8; k++) {
                const int r = vt_nearest_int(iscale * v[u][k]);
                const int c = r < 127 ? r : 127;
                qw[k >> 2] |= (uint32_t)(uint8_t)(int8_t)c << (8 * (k & 3));
                sum += (int)(int8_t)c;
            }
            d = vt_f32_bits(1 / iscale);
        }
        uint32_t *qd = (uint32_t *)(dst[u] + 4 + 8 * lane); /* 4-byte aligned, not 8 */
        qd[0] = qw[0];
        qd[1] = qw[1];
        sum += SHFL_XOR(sum, 1, 32);
        if (!(lane & 1))
            *(uint16_t *)(dst[u] + 260 + lane) = (uint16_t)(int16_t)sum;
        if (lane == 0)
            *(uint32_t *)dst[u] = d;
    }
}

/* One row (its nb blocks at wr, in shared memory) of Q8_0 against n_tok activation rows at xs
 * (xrow bytes apart), vt_dot_q8_0's arithmetic: lane 8j + m takes the
 * four-element sum m of block 4i + j; accumulator m's chain over blocks in
 * order runs in lanes m, 8 + m, 16 + m and 24 + m alike. */
__device__ static void row_q8_0(const uint8_t *wr, int64_t nb, const uint8_t *xs, size_t xrow, int64_t n_tok,
                                int lane, float *out)
{
    const int m = lane & 7, j = lane >> 3;
    float acc[MATVEC_MAX_TOK] = { 0.0f, 0.0f, 0.0f, 0.0f };
    for (int64_t b0 = 0; b0 < nb; b0 += 16) {
        float dw[4];
        int qw[4];
#pragma unroll
        for (int u = 0; u < 4; u++) {
            const int64_t b = b0 + 4 * u + j;
            dw[u] = 0.0f;
            qw[u] = 0;
            if (b < nb) {
                const uint8_t *p = wr + (size_t)b * VT_Q8_0_BYTES;
                dw[u] = vt_half_bits_to_f32(*(const uint16_t *)p);
                qw[u] = rd32_a2(p + 2 + 4 * m);
            }
        }
#pragma unroll
        for (int u = 0; u < 4; u++) {
            const int64_t b = b0 + 4 * u + j;
#pragma unroll
            for (int t = 0; t < MATVEC_MAX_TOK; t++) {
                if (t >= n_tok)
                    continue;
                float d = 0.0f;
                int s = 0;
                if (b < nb) {
                    const uint8_t *q = xs + (size_t)t * xrow + (size_t)b * VT_Q8_0_BYTES;
                    d = dw[u] * vt_half_bits_to_f32(*(const uint16_t *)q);
                    s = dot4_i8(qw[u], rd32_a2(q + 2 + 4 * m), 0);
                }
#pragma unroll
                for (int k = 0; k < 4; k++) {
                    const float dk = SHFL(d, 8 * k + m, 32);
                    const int sk = SHFL(s, 8 * k + m, 32);
                    if (b0 + 4 * u + k < nb)
                        acc[t] = fmaf(dk, (float)sk, acc[t]);
                }
            }
        }
    }
#pragma unroll
    for (int t = 0; t < MATVEC_MAX_TOK; t++) {
        float a[8];
#pragma unroll
        for (int k = 0; k < 8; k++)
            a[k] = SHFL(acc[t], k, 32);
        if (t < n_tok)
            out[t] = vt_hsum8(a);
    }
}

/* One row of Q4_K (nb superblocks at wr, ggml's repacked order: one integer
 * sum a superblock) against Q8_K activation rows, vt_dot_q4_k_r8's
 * arithmetic: lane 4j + p takes elements 8p .. 8p + 7 of sub-block j;
 * the two integer sums are added over the warp, then the two float chains
 * run over superblocks in order in every lane. */
__device__ static void row_q4_k_r8(const uint8_t *wr, int64_t nb, const uint8_t *xs, size_t xrow, int64_t n_tok,
                                   int lane, float *out)
{
    const int j = lane >> 2, p = lane & 3;
    float acc[MATVEC_MAX_TOK] = { 0.0f, 0.0f, 0.0f, 0.0f }, mins[MATVEC_MAX_TOK] = { 0.0f, 0.0f, 0.0f, 0.0f };
    for (int64_t b0 = 0; b0 < nb; b0 += 4) {
        uint32_t q0[4], q1[4];
        int sc[4], mn[4];
        float dh[4], mh[4];
#pragma unroll
        for (int u = 0; u < 4; u++) {
            const int64_t b = b0 + u;
            q0[u] = q1[u] = 0;
            sc[u] = mn[u] = 0;
            dh[u] = mh[u] = 0.0f;
            if (b < nb) {
                const uint8_t *w = wr + (size_t)b * 144;
                const uint32_t *q = (const uint32_t *)(w + 16 + 32 * (j >> 1) + 8 * p);
                q0[u] = q[0];
                q1[u] = q[1];
                vt_k4_scale_min(w + 4, j, &sc[u], &mn[u]);
                dh[u] = vt_half_bits_to_f32(((const uint16_t *)w)[0]);
                mh[u] = vt_half_bits_to_f32(((const uint16_t *)w)[1]);
            }
        }
#pragma unroll
        for (int u = 0; u < 4; u++) {
            const int64_t b = b0 + u;
            if (b >= nb)
                continue;
            const int shift = 4 * (j & 1);
            const int v0 = (int)((q0[u] >> shift) & 0x0f0f0f0fu), v1 = (int)((q1[u] >> shift) & 0x0f0f0f0fu);
#pragma unroll
            for (int t = 0; t < MATVEC_MAX_TOK; t++) {
                if (t >= n_tok)
                    continue;
                const uint8_t *x = xs + (size_t)t * xrow + (size_t)b * VT_Q8_K_BYTES;
                const int *q8 = (const int *)(x + 4 + 32 * j + 8 * p);
                int isum = sc[u] * dot4_i8(v1, q8[1], dot4_i8(v0, q8[0], 0));
                int imin = p ? 0
                             : mn[u] * ((int)((const int16_t *)(x + 260))[2 * j] +
                                        (int)((const int16_t *)(x + 260))[2 * j + 1]);
                isum = warp_sum_i32(isum);
                imin = warp_sum_i32(imin);
                const float dx = *(const float *)x;
                acc[t] = fmaf((float)isum, dh[u] * dx, acc[t]);
                mins[t] = fmaf((float)imin, mh[u] * dx, mins[t]);
            }
        }
    }
#pragma unroll
    for (int t = 0; t < MATVEC_MAX_TOK; t++)
        if (t < n_tok)
            out[t] = acc[t] - mins[t];
}

/* A paired product's row o (the one-token kernels' SwiGLU epilogue: two
 * parts of equal rows, a multiple of R / 2): block k takes gate rows
 * k R/2 .. k R/2 + R/2 - 1, then the same up rows; the parts' row it is. */
template <int R>
__device__ static inline int64_t pair_row(const mv_parts &parts, int64_t o)
{
    const int64_t h = R / 2, k = o / R, r = o - k * R;
    return r < h ? k * h + r : parts.rows[0] + k * h + r - h;
}

/* Row o of the parts: its matrix's data, output and stride; *o its row
 * there. NULL past the last. */
__device__ static inline const uint8_t *part_row(const mv_parts &parts, int64_t *o, float **y, int64_t *ldy)
{
    const uint8_t *data = NULL;
#pragma unroll
    for (int p = 0; p < MATVEC_MAX_PARTS; p++) /* indices known at compile time: parts stays in registers */
        if (!data && p < parts.n) {
            if (*o < parts.rows[p]) {
                data = parts.data[p];
                *y = parts.y[p];
                *ldy = parts.ldy[p];
            } else
                *o -= parts.rows[p];
        }
    return data;
}

/* The activation rows quantized into shared memory, each block by one warp,
 * the values of several blocks loaded before any is quantized (the loads
 * would otherwise wait on each other's latency in turn). */
template <int T>
__device__ static void quantize_rows(const float *x, int64_t cols, int64_t n_tok, uint8_t *xs, size_t xrow, int lane,
                                     int warp, int warps)
{
    const int64_t be = T == VT_TYPE_Q4_K ? 256 : 32, xb = cols / be, n = n_tok * xb;
    if (T == VT_TYPE_Q4_K) {
        /* lane's eight elements are 32 contiguous bytes; cols is a multiple of
         * 256, so two float4 loads wherever x is 16-byte aligned (a warp's
         * loads were eight of 4 bytes each); one token (every decode
         * product) needs no 64-bit division for its block's place */
        const bool x16 = ((uintptr_t)x & 15) == 0;
        for (int64_t i0 = warp; i0 < n; i0 += 2 * warps) {
            float v[2][8];
            int64_t t[2], c[2];
#pragma unroll
            for (int u = 0; u < 2; u++) {
                const int64_t i = i0 + (int64_t)u * warps;
                t[u] = n_tok == 1 ? 0 : i / xb;
                c[u] = i - t[u] * xb;
                const float *xi = x + t[u] * cols + c[u] * be + 8 * lane;
                if (i < n && x16) {
                    const float4 a = ((const float4 *)xi)[0], b = ((const float4 *)xi)[1];
                    v[u][0] = a.x, v[u][1] = a.y, v[u][2] = a.z, v[u][3] = a.w;
                    v[u][4] = b.x, v[u][5] = b.y, v[u][6] = b.z, v[u][7] = b.w;
                } else {
#pragma unroll
                    for (int k = 0; k < 8; k++)
                        v[u][k] = i < n ? xi[k] : 0.0f;
                }
            }
            uint8_t *const dst[2] = { xs + (size_t)t[0] * xrow + (size_t)c[0] * VT_Q8_K_BYTES,
                                      xs + (size_t)t[1] * xrow + (size_t)c[1] * VT_Q8_K_BYTES };
            if (i0 + warps < n) /* the warp's two blocks in lockstep */
                warp_q8_k_blocks<2>(v, dst, lane);
            else
                warp_q8_k_blocks<1>(v, dst, lane);
        }
    } else {
        for (int64_t i0 = warp; i0 < n; i0 += 4 * warps) {
            float v[4];
#pragma unroll
            for (int u = 0; u < 4; u++) {
                const int64_t i = i0 + (int64_t)u * warps;
                const int64_t t = n_tok == 1 ? 0 : i / xb; /* one token: no 64-bit division */
                v[u] = i < n ? x[t * cols + (i - t * xb) * be + lane] : 0.0f;
            }
#pragma unroll
            for (int u = 0; u < 4; u++) {
                const int64_t i = i0 + (int64_t)u * warps, t = n_tok == 1 ? 0 : i / xb;
                if (i < n)
                    warp_q8_0_block(v[u], xs + (size_t)t * xrow + (size_t)(i - t * xb) * VT_Q8_0_BYTES, lane);
            }
        }
    }
}

/* Each warp copies its first row's bytes into shared memory (before the
 * kernel ahead is waited for: they are weights), the warps of the block
 * quantize the activation into shared memory, then each warp takes its
 * rpw rows in turn (rpw > 1 for a matrix of very many rows, the output
 * head: fewer blocks, each quantizing the activation once).
 * Shared: the activation (xspan bytes), then a row of row_span a warp. */
template <int T>
__global__ static void k_matvec_int(mv_parts parts, size_t row_bytes, int64_t nb, const float *x, int64_t cols,
                                    int64_t n_tok, size_t xrow, size_t xspan, size_t row_span, int rpw)
{
    GRID_RELEASE(); /* the next kernel may start: it waits for this one */
    extern __shared__ uint4 xs_words[];
    uint8_t *xs = (uint8_t *)xs_words;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    const int64_t first = ((int64_t)blockIdx.x * warps + warp) * rpw;
    int64_t o = first, ldy = 0;
    float *y = NULL;
    const uint8_t *data = part_row(parts, &o, &y, &ldy);
    uint8_t *row = xs + xspan + (size_t)warp * row_span;
    if (data)
        copy_words((uint4 *)row, (const uint4 *)(data + (size_t)o * row_bytes), row_bytes / 16, lane);
    GRID_WAIT(); /* x is the kernel ahead's output */
    quantize_rows<T>(x, cols, n_tok, xs, xrow, lane, warp, warps);
    __syncthreads();
    for (int k = 0; k < rpw; k++) {
        if (k > 0) {
            o = first + k;
            if (!(data = part_row(parts, &o, &y, &ldy)))
                break;
            VT_SYNCWARP(); /* every lane is done with the row before */
            copy_words((uint4 *)row, (const uint4 *)(data + (size_t)o * row_bytes), row_bytes / 16, lane);
        }
        if (!data)
            break;
        VT_SYNCWARP();
        float r[MATVEC_MAX_TOK];
        if (T == VT_TYPE_Q4_K)
            row_q4_k_r8(row, nb, xs, xrow, n_tok, lane, r);
        else
            row_q8_0(row, nb, xs, xrow, n_tok, lane, r);
#pragma unroll
        for (int t = 0; t < MATVEC_MAX_TOK; t++)
            if (lane == 0 && t < n_tok)
                y[t * ldy + o] = r[t];
    }
}

/* The decode step's Q8_0 product (one token): R rows a block of
 * MV1_THREADS, row_q8_0's arithmetic spread over the whole block, so that
 * no thread carries a long chain of loads and shuffles (k_matvec_int's
 * warp a row was bound by that latency, in two waves). In shared memory:
 *   1. the block's R rows, copied before the kernel ahead is waited for;
 *   2. the activation quantized once (warp_q8_0_block's arithmetic, four
 *      threads a block of 32): its int8 values, and each block's scale as
 *      the float its f16 bits read back as;
 *   3. for every (row, block b, four-element group m) the integer sum
 *      s[b][m], four a thread, and for every (row, b) the product of the
 *      two scales;
 *   4. accumulator m of a row: its chain fma(d[b], s[b][m], acc) over the
 *      blocks in order by one thread (vt_dot_q8_0's order), then the
 *      eight added by vt_hsum8 as before. The same bits as row_q8_0. */
#define MV1_THREADS 256

static size_t mv1_shm(int R, size_t row_bytes, int64_t cols, int64_t nb)
{
    return (size_t)R * row_bytes + (size_t)cols + (size_t)nb * 4 + (size_t)R * (size_t)nb * 4 * (1 + 8);
}

/* Step 1 of the one-token products: the block's R rows (from row0) into
 * shared memory, eight 16-byte loads a thread in flight before their
 * stores; rows past the last are left unwritten. */
template <int R, bool PAIR>
__device__ static inline void mv1_copy_rows(const mv_parts &parts, size_t row_bytes, int64_t row0, int64_t total_rows,
                                            uint8_t *rows)
{
    const unsigned words = (unsigned)(row_bytes / 16), n_words = (unsigned)R * words;
    for (unsigned k0 = 0; k0 < n_words; k0 += 8 * MV1_THREADS) {
        uint4 v[8];
#pragma unroll
        for (int u = 0; u < 8; u++) {
            const unsigned k = k0 + (unsigned)u * MV1_THREADS + threadIdx.x;
            v[u] = make_uint4(0, 0, 0, 0);
            if (k < n_words) {
                int64_t o = row0 + (int64_t)(k / words), ldy;
                float *y;
                const bool in = o < total_rows;
                if (PAIR)
                    o = pair_row<R>(parts, o);
                const uint8_t *d = in ? part_row(parts, &o, &y, &ldy) : NULL;
                if (d)
                    v[u] = ((const uint4 *)(d + (size_t)o * row_bytes))[k % words];
            }
        }
#pragma unroll
        for (int u = 0; u < 8; u++) {
            const unsigned k = k0 + (unsigned)u * MV1_THREADS + threadIdx.x;
            if (k < n_words)
                ((uint4 *)rows)[k] = v[u];
        }
    }
}

/* Elements 8q .. 8q + 7 of the activation's block b (v) into xq and, by
 * q 0, the block's scale into xd (warp_q8_0_block's arithmetic): four
 * adjacent lanes 4b + q take a block; every lane calls it (ok: v is real). */
__device__ static inline void q8_0_quantize8(const float *v, bool ok, int64_t b, int q, int8_t *xq, float *xd)
{
    float amax = 0.0f;
#pragma unroll
    for (int k = 0; k < 8; k++)
        amax = fmaxf(amax, fabsf(v[k]));
    amax = fmaxf(amax, SHFL_XOR(amax, 1, 32));
    amax = fmaxf(amax, SHFL_XOR(amax, 2, 32));
    if (ok) {
        const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
        uint32_t w[2] = { 0, 0 };
#pragma unroll
        for (int k = 0; k < 8; k++)
            w[k >> 2] |= (uint32_t)(uint8_t)(int8_t)nearbyintf(v[k] * id) << (8 * (k & 3));
        *(uint2 *)(xq + b * 32 + 8 * q) = make_uint2(w[0], w[1]);
        if (q == 0)
            xd[b] = vt_half_bits_to_f32(vt_f32_to_f16_bits(amax / 127.0f));
    }
}

/* Step 2 of the Q8_0 products: the activation x (nb blocks of 32) quantized
 * once into xq and its scales xd, thread 4b + q taking elements 8q .. 8q + 7
 * of block b. */
__device__ static inline void mv1_quantize_q8_0(const float *x, int64_t nb, int8_t *xq, float *xd)
{
    const int tid = threadIdx.x;
    for (int64_t i0 = 0; i0 < nb * 4; i0 += MV1_THREADS) {
        const int64_t i = i0 + tid, b = i >> 2;
        const int q = (int)(i & 3);
        const bool ok = i < nb * 4;
        float4 a = make_float4(0.0f, 0.0f, 0.0f, 0.0f), c = a;
        if (ok) {
            a = ((const float4 *)(x + b * 32 + 8 * q))[0];
            c = ((const float4 *)(x + b * 32 + 8 * q))[1];
        }
        const float v[8] = { a.x, a.y, a.z, a.w, c.x, c.y, c.z, c.w };
        q8_0_quantize8(v, ok, b, q, xq, xd);
    }
}

/* Step 2 with the residual add and RMSNorm before the product (NORM
 * kernels; vt_gpu_add_norm, nb * 32 <= 8 * MV1_THREADS): every block works
 * out the whole input itself, thread t elements 8t .. 8t + 7: v = x + y,
 * the squares into sq (nb * 32 floats of shared memory), their mean by
 * mean_square_as_serial, v * scale * w quantized as above; the first
 * block stores v into x_out, which no block reads. k_add_rmsnorm_regs's
 * operations on each element and its mean's bits, so the same input bits
 * as that launch followed by the product. wv: the thread's eight weights,
 * loaded before the wait by mv1_norm_weights. */
__device__ static inline void mv1_norm_weights(const vt_gpu_add_norm &an, int64_t nb, float4 *wv)
{
    const int64_t t = threadIdx.x;
    wv[0] = wv[1] = make_float4(1.0f, 1.0f, 1.0f, 1.0f);
    if (t < nb * 4 && an.w) {
        wv[0] = ((const float4 *)an.w)[2 * t];
        wv[1] = ((const float4 *)an.w)[2 * t + 1];
    }
}

__device__ static inline bool mv1_add_norm8(const vt_gpu_add_norm &an, int64_t nb, const float4 *wv, float *sq,
                                            float *xn)
{
    const int t = threadIdx.x;
    const bool ok = t < nb * 4;
    float4 v0 = make_float4(0.0f, 0.0f, 0.0f, 0.0f), v1 = v0;
    if (ok) {
        const float4 a0 = ((const float4 *)an.x)[2 * t], a1 = ((const float4 *)an.x)[2 * t + 1];
        const float4 b0 = ((const float4 *)an.y)[2 * t], b1 = ((const float4 *)an.y)[2 * t + 1];
        v0 = make_float4(a0.x + b0.x, a0.y + b0.y, a0.z + b0.z, a0.w + b0.w);
        v1 = make_float4(a1.x + b1.x, a1.y + b1.y, a1.z + b1.z, a1.w + b1.w);
        ((float4 *)sq)[2 * t] = make_float4(v0.x * v0.x, v0.y * v0.y, v0.z * v0.z, v0.w * v0.w);
        ((float4 *)sq)[2 * t + 1] = make_float4(v1.x * v1.x, v1.y * v1.y, v1.z * v1.z, v1.w * v1.w);
        if (blockIdx.x == 0) {
            ((float4 *)an.x_out)[2 * t] = v0;
            ((float4 *)an.x_out)[2 * t + 1] = v1;
        }
    }
    __syncthreads();
    const float mean = mean_square_as_serial(sq, nb * 32);
    const float s = 1.0f / sqrtf(mean + an.eps); /* every thread: the same operation, the same bits */
    xn[0] = v0.x * s * wv[0].x;
    xn[1] = v0.y * s * wv[0].y;
    xn[2] = v0.z * s * wv[0].z;
    xn[3] = v0.w * s * wv[0].w;
    xn[4] = v1.x * s * wv[1].x;
    xn[5] = v1.y * s * wv[1].y;
    xn[6] = v1.z * s * wv[1].z;
    xn[7] = v1.w * s * wv[1].w;
    return ok;
}

__device__ static inline void mv1_add_norm_quantize_q8_0(const vt_gpu_add_norm &an, int64_t nb, const float4 *wv,
                                                         float *sq, int8_t *xq, float *xd)
{
    float xn[8];
    const bool ok = mv1_add_norm8(an, nb, wv, sq, xn);
    q8_0_quantize8(xn, ok, threadIdx.x >> 2, threadIdx.x & 3, xq, xd);
}

/* Step 3: the integer sums and the scale products of R rows; thread
 * (row, block, h) takes groups 4h .. 4h + 3 (the block's bytes are only
 * 2-aligned). */
template <int R>
__device__ static inline void mv1_sums_q8_0(const uint8_t *rows, size_t row_bytes, int64_t nb, const int8_t *xq,
                                            const float *xd, int *ss, float *sd)
{
    for (int i = threadIdx.x; i < R * (int)nb * 2; i += MV1_THREADS) {
        const int h = i & 1, rb = i >> 1, r = rb / (int)nb, b = rb - r * (int)nb;
        const uint8_t *w = rows + (size_t)r * row_bytes + (size_t)b * VT_Q8_0_BYTES;
        const int4 xv = *(const int4 *)(xq + b * 32 + 16 * h);
        const uint8_t *wq = w + 2 + 16 * h;
        int4 sv;
        sv.x = dot4_i8(rd32_a2(wq), xv.x, 0);
        sv.y = dot4_i8(rd32_a2(wq + 4), xv.y, 0);
        sv.z = dot4_i8(rd32_a2(wq + 8), xv.z, 0);
        sv.w = dot4_i8(rd32_a2(wq + 12), xv.w, 0);
        *(int4 *)(ss + (size_t)rb * 8 + 4 * h) = sv;
        if (h == 0)
            sd[rb] = vt_half_bits_to_f32(*(const uint16_t *)w) * xd[b];
    }
}

/* Step 4: the eight chains of each of R rows (from row0), thread 8 r + m
 * holding row r's chain m; then, in the warps of those threads (every lane
 * takes part in the shuffles), row r's eight chains added by vt_hsum8 into
 * the row's output, or into pair_out[r] (shared; the SwiGLU epilogue's
 * input) where it is given. */
template <int R>
__device__ static inline void mv1_chains_q8_0(const mv_parts &parts, int64_t row0, int64_t total_rows, int64_t nb,
                                              const int *ss, const float *sd, float *pair_out)
{
    const int tid = threadIdx.x;
    if (tid < ((R * 8 + 31) & ~31)) {
        const int r = tid >> 3, m = tid & 7, lane = tid & 31;
        float acc = 0.0f;
        if (r < R) {
            const float *d = sd + (int64_t)r * nb;
            const int *s = ss + (int64_t)r * nb * 8 + m;
#pragma unroll 8
            for (int64_t b = 0; b < nb; b++)
                acc = fmaf(d[b], (float)s[8 * b], acc);
        }
        float a[8];
#pragma unroll
        for (int k = 0; k < 8; k++)
            a[k] = SHFL(acc, (lane & ~7) + k, 32);
        int64_t o = row0 + r, ldy;
        float *y;
        if (r < R && m == 0 && pair_out)
            pair_out[r] = vt_hsum8(a);
        else if (r < R && m == 0 && o < total_rows && part_row(parts, &o, &y, &ldy))
            y[o] = vt_hsum8(a);
    }
}

/* The SwiGLU epilogue of a paired product (pair_row): the block's
 * R / 2 gate rows and their up rows, summed into out[] (shared), give part
 * 0's output swiglu_lane(gate, up), as k_swiglu computes it. */
template <int R>
__device__ static inline void mv1_pair_swiglu(const mv_parts &parts, const float *out)
{
    __syncthreads();
    const int h = R / 2;
    if (threadIdx.x < h)
        parts.y[0][(int64_t)blockIdx.x * h + threadIdx.x] = swiglu_lane(out[threadIdx.x], out[threadIdx.x + h]);
}

/* What a one-token kernel does after its products: each kind its own
 * instantiation, so that the plain products (most launches) keep the
 * registers of a kernel without an epilogue (epilogues compiled into every
 * instantiation measured slower: docs/bench-gpu.txt 2026-12-06 04:11). */
enum { MV1_PLAIN, MV1_SWIGLU };

/* What the NORM kernels' shared memory holds before the plain kernel's: the
 * squares of the input's cols elements (k_mv1_q8_0, k_mv1_q8_0_warps,
 * k_mv1_q4_k), the launch's size and the kernel's offset alike. */
__host__ __device__ static size_t mv1_squares_shm(int64_t cols) { return (size_t)cols * sizeof(float); }

template <int R, int EPI, int NORM>
__global__ static void __launch_bounds__(MV1_THREADS)
k_mv1_q8_0(mv_parts parts, size_t row_bytes, int64_t nb, const float *x, int64_t total_rows, vt_gpu_add_norm an)
{
    GRID_RELEASE(); /* the next kernel may start: it waits for this one */
    extern __shared__ uint4 mv1_words[];
    float *sq = (float *)mv1_words; /* NORM: the squares first, nb * 32 floats */
    uint8_t *rows = (uint8_t *)mv1_words + (NORM ? mv1_squares_shm(nb * 32) : 0);
    int8_t *xq = (int8_t *)(rows + (size_t)R * row_bytes); /* 16-byte aligned, as ss after it */
    int *ss = (int *)(xq + nb * 32);
    float *xd = (float *)(ss + (int64_t)R * nb * 8);
    float *sd = xd + nb;
    const int64_t row0 = (int64_t)blockIdx.x * R;

    mv1_copy_rows<R, EPI == MV1_SWIGLU>(parts, row_bytes, row0, total_rows, rows);
    float4 wv[2];
    if (NORM)
        mv1_norm_weights(an, nb, wv);
    GRID_WAIT(); /* x (NORM: an's x and y) is the kernels ahead's output */
    if (NORM)
        mv1_add_norm_quantize_q8_0(an, nb, wv, sq, xq, xd);
    else
        mv1_quantize_q8_0(x, nb, xq, xd);
    __syncthreads();
    TRACE_MARK(0);
    mv1_sums_q8_0<R>(rows, row_bytes, nb, xq, xd, ss, sd);
    __syncthreads();
    TRACE_MARK(1);
    __shared__ float pair_out[R];
    mv1_chains_q8_0<R>(parts, row0, total_rows, nb, ss, sd, EPI == MV1_SWIGLU ? pair_out : NULL);
    if (EPI == MV1_SWIGLU)
        mv1_pair_swiglu<R>(parts, pair_out);
}

/* The output head's Q8_0 product (one token, one matrix of many rows) a
 * warp at a time: each warp of every resident block takes groups of
 * MV1W_ROWS rows in turn, the next group's bytes loaded into registers
 * before the current one is summed from the warp's own shared buffer, and
 * no barrier of the block after the activation is quantized. (The kernel
 * it replaced, k_mv1_q8_0_stream, summed each group of rows with the whole
 * block, two barriers a group: 1.1 TB/s, against 2.6 here; docs/bench-gpu.txt
 * 2026-12-06 06:38 and 08:56.) Lane 8 r + m runs accumulator m of row r: the chain
 * fma(d[b], s[b][m], acc) over the blocks in order, s the integer sum of
 * group m of block b, d the product of the two scales; then the row's
 * eight added by vt_hsum8. mv1_sums_q8_0's and mv1_chains_q8_0's
 * operations on the same values, so the same bits. WORDS: 16-byte words a
 * lane loads, at least MV1W_ROWS row_bytes / 512. */
#define MV1W_ROWS 4
#define MV1W_WARPS (MV1_THREADS / 32)

static size_t mv1w_shm(size_t row_bytes, int64_t nb)
{
    return (size_t)MV1W_WARPS * MV1W_ROWS * row_bytes + (size_t)nb * 32 + (size_t)nb * 4;
}

/* Group gi's bytes (its rows gi per on, contiguous) into v, lane's words
 * lane, lane + 32, ...; zero past the last row. */
template <int WORDS>
__device__ static inline void mv1w_load(uint4 *v, const uint8_t *w, size_t row_bytes, int per, int64_t gi,
                                        int64_t total_rows, int lane)
{
    const int64_t row0 = gi * per, left = total_rows - row0;
    const unsigned n = left <= 0 ? 0u : (unsigned)((left < per ? left : per) * (int64_t)(row_bytes / 16));
    const uint4 *src = (const uint4 *)(w + (left <= 0 ? 0 : (size_t)row0 * row_bytes));
#pragma unroll
    for (int u = 0; u < WORDS; u++) {
        const unsigned k = (unsigned)u * 32 + (unsigned)lane;
        v[u] = k < n ? src[k] : make_uint4(0, 0, 0, 0);
    }
}

/* Group gi's bytes into v, lane's words lane, lane + 32, ...: PAIR 0, its
 * MV1W_ROWS rows of one part of parts (each part's rows a multiple of
 * MV1W_ROWS; y and o0 where they go); PAIR 1 (parts gate and up), gate's
 * rows 2 gi, 2 gi + 1 then up's same two. Zero past the last group. */
template <int WORDS, int PAIR>
__device__ static inline void mv1w_q8_0_fetch(uint4 *v, const mv_parts &parts, int64_t gi, int64_t groups,
                                              size_t row_bytes, int lane, float **y, int64_t *o0)
{
    const uint4 *p0 = NULL, *p1 = NULL;
    unsigned n0 = 0, n1 = 0;
    *y = NULL;
    *o0 = 0;
    if (gi < groups && PAIR) {
        *o0 = 2 * gi;
        *y = parts.y[0];
        p0 = (const uint4 *)(parts.data[0] + (size_t)*o0 * row_bytes);
        p1 = (const uint4 *)(parts.data[1] + (size_t)*o0 * row_bytes);
        n0 = n1 = (unsigned)(2 * row_bytes / 16);
    } else if (gi < groups) {
        int64_t first = gi * MV1W_ROWS, ldy;
        const uint8_t *data;
        if (mv_part_of(parts, &first, &data, y, &ldy)) {
            *o0 = first;
            p0 = (const uint4 *)(data + (size_t)first * row_bytes);
            n0 = (unsigned)(MV1W_ROWS * row_bytes / 16);
        }
    }
#pragma unroll
    for (int u = 0; u < WORDS; u++) {
        const unsigned k = (unsigned)u * 32 + (unsigned)lane;
        v[u] = k < n0 ? p0[k] : k < n0 + n1 ? p1[k - n0] : make_uint4(0, 0, 0, 0);
    }
}

template <int WORDS, int PAIR, int NORM>
__global__ static void __launch_bounds__(MV1_THREADS)
k_mv1_q8_0_warps(mv_parts parts, size_t row_bytes, int64_t nb, const float *x, int64_t groups, vt_gpu_add_norm an)
{
    GRID_RELEASE(); /* the next kernel may start: it waits for this one */
    extern __shared__ uint4 mv1_words[];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, r = lane >> 3, m = lane & 7;
    const size_t span = (size_t)MV1W_ROWS * row_bytes;
    float *sq = (float *)mv1_words; /* NORM: the squares first, nb * 32 floats */
    uint8_t *words = (uint8_t *)mv1_words + (NORM ? mv1_squares_shm(nb * 32) : 0);
    uint8_t *rows = words + (size_t)warp * span;
    int8_t *xq = (int8_t *)(words + (size_t)MV1W_WARPS * span);
    float *xd = (float *)(xq + nb * 32);
    const int64_t stride = (int64_t)gridDim.x * MV1W_WARPS;
    const unsigned n_words = (unsigned)(span / 16);
    int64_t gi = (int64_t)blockIdx.x * MV1W_WARPS + warp, o0;
    float *y;
    uint4 v[WORDS];
    mv1w_q8_0_fetch<WORDS, PAIR>(v, parts, gi, groups, row_bytes, lane, &y, &o0);
    float4 wv[2];
    if (NORM)
        mv1_norm_weights(an, nb, wv);
    GRID_WAIT(); /* x (NORM: an's x and y) is the kernels ahead's output */
    if (NORM)
        mv1_add_norm_quantize_q8_0(an, nb, wv, sq, xq, xd);
    else
        mv1_quantize_q8_0(x, nb, xq, xd);
    __syncthreads();
    for (; gi < groups; gi += stride) {
        float *const yg = y;
        const int64_t og = o0;
#pragma unroll
        for (int u = 0; u < WORDS; u++) {
            const unsigned k = (unsigned)u * 32 + (unsigned)lane;
            if (k < n_words)
                ((uint4 *)rows)[k] = v[u];
        }
        VT_SYNCWARP();
        mv1w_q8_0_fetch<WORDS, PAIR>(v, parts, gi + stride, groups, row_bytes, lane, &y, &o0); /* in flight */
        const uint8_t *wr = rows + (size_t)r * row_bytes;
        float acc = 0.0f;
#pragma unroll 8
        for (int64_t b = 0; b < nb; b++) {
            const uint8_t *blk = wr + (size_t)b * VT_Q8_0_BYTES;
            const float d = vt_half_bits_to_f32(*(const uint16_t *)blk) * xd[b];
            const int s = dot4_i8(rd32_a2(blk + 2 + 4 * m), *(const int *)(xq + b * 32 + 4 * m), 0);
            acc = fmaf(d, (float)s, acc);
        }
        float a[8];
#pragma unroll
        for (int k = 0; k < 8; k++)
            a[k] = SHFL(acc, (lane & ~7) + k, 32);
        const float row_sum = vt_hsum8(a);
        const float up = SHFL(row_sum, (lane + 16) & 31, 32); /* PAIR: lane 8 r's up row, r < 2 */
        if (PAIR ? m == 0 && r < 2 : m == 0)
            yg[og + r] = PAIR ? swiglu_lane(row_sum, up) : row_sum;
        VT_SYNCWARP(); /* every lane is done with the rows before the next are stored */
    }
}

/* The decode step's Q4_K product (one token, the repacked order's
 * arithmetic, row_q4_k_r8's and vt_dot_q4_k_r8's): R rows a block of
 * MV1_THREADS. In shared memory:
 *   1. the block's R rows, copied before the kernel ahead is waited for;
 *   2. the activation as Q8_K blocks (quantize_rows, one warp a block);
 *   3. for every (row, superblock b, sub-block j) one thread: the 32-value
 *      integer product times the sub-block's scale, and its min times the
 *      activation's two sums of 16; the eight of a superblock added over
 *      eight lanes (integers: any order is the same sum);
 *   4. a row's two float chains over its superblocks in order by one
 *      thread, as before: acc - mins. */
static size_t mv1_q4_k_shm(int R, size_t row_bytes, int64_t nb)
{
    return (size_t)R * row_bytes + (size_t)nb * VT_Q8_K_BYTES + (size_t)R * (size_t)nb * 2 * sizeof(int);
}

/* NORM: the residual add and RMSNorm an before the product, as
 * k_mv1_q8_0's NORM (mv1_add_norm8: the same operations on each element;
 * the squares sq, nb * 256 floats, before the rest of shared memory), each
 * thread's eight normed elements quantized from its registers: thread t
 * holds elements 8 t .. 8 t + 7, so warp w holds superblock w, the
 * elements quantize_rows would load (nb <= 8, add_norm_fits). */
template <int R, int EPI, int NORM>
__global__ static void __launch_bounds__(MV1_THREADS)
k_mv1_q4_k(mv_parts parts, size_t row_bytes, int64_t nb, const float *x, int64_t total_rows, vt_gpu_add_norm an)
{
    GRID_RELEASE(); /* the next kernel may start: it waits for this one */
    extern __shared__ uint4 mv1_words[];
    float *sq = (float *)mv1_words;
    /* row_bytes = 144 nb: 16-byte words */
    uint8_t *rows = (uint8_t *)mv1_words + (NORM ? mv1_squares_shm(nb * 256) : 0);
    uint8_t *xs = rows + (size_t)R * row_bytes;
    int *isums = (int *)(xs + nb * VT_Q8_K_BYTES); /* 292 nb: 4-byte aligned */
    int *imins = isums + (int64_t)R * nb;
    const int tid = threadIdx.x, lane = tid & 31;
    const int64_t row0 = (int64_t)blockIdx.x * R;

    mv1_copy_rows<R, EPI == MV1_SWIGLU>(parts, row_bytes, row0, total_rows, rows);
    float4 wv[2];
    if (NORM)
        mv1_norm_weights(an, nb * 8, wv);
    GRID_WAIT(); /* x (NORM: an's x and y) is the kernel ahead's output */
    if (NORM) {
        float v[8];
        uint8_t *const dst = xs + (size_t)(tid >> 5) * VT_Q8_K_BYTES;
        if (mv1_add_norm8(an, nb * 8, wv, sq, v)) /* tid < 32 nb: whole warps */
            warp_q8_k_blocks<1>(&v, &dst, lane);
    } else {
        quantize_rows<VT_TYPE_Q4_K>(x, nb * 256, 1, xs, (size_t)nb * VT_Q8_K_BYTES, lane, tid >> 5,
                                    MV1_THREADS / 32);
    }
    __syncthreads();
    TRACE_MARK(0);

    /* 3. thread 8 (R nb-index) + j; every lane of a warp runs each round (the shuffles) */
    const int items = R * (int)nb * 8;
    for (int i0 = 0; i0 < items; i0 += MV1_THREADS) {
        const int i = i0 + tid, j = i & 7, rb = i >> 3;
        int isum = 0, imin = 0;
        if (i < items) {
            const int r = rb / (int)nb, b = rb - r * (int)nb;
            const uint8_t *w = rows + (size_t)r * row_bytes + (size_t)b * 144;
            const uint8_t *xb = xs + (size_t)b * VT_Q8_K_BYTES;
            int sc, mn;
            vt_k4_scale_min(w + 4, j, &sc, &mn);
            const uint32_t *q = (const uint32_t *)(w + 16 + 32 * (j >> 1));
            const int *q8 = (const int *)(xb + 4 + 32 * j);
            const int shift = 4 * (j & 1);
            int dot = 0;
#pragma unroll
            for (int p = 0; p < 8; p++)
                dot = dot4_i8((int)((q[p] >> shift) & 0x0f0f0f0fu), q8[p], dot);
            isum = sc * dot;
            imin = mn * ((int)((const int16_t *)(xb + 260))[2 * j] + (int)((const int16_t *)(xb + 260))[2 * j + 1]);
        }
        for (int o = 1; o < 8; o <<= 1) {
            isum += SHFL_XOR(isum, o, 32);
            imin += SHFL_XOR(imin, o, 32);
        }
        if (i < items && j == 0) {
            isums[rb] = isum;
            imins[rb] = imin;
        }
    }
    __syncthreads();
    TRACE_MARK(1);

    /* 4. the two chains of each row */
    __shared__ float pair_out[R];
    if (tid < R) {
        int64_t o = row0 + tid, ldy;
        float *y = NULL;
        if (o < total_rows && part_row(parts, &o, &y, &ldy)) {
            float acc = 0.0f, mins = 0.0f;
            const uint8_t *w = rows + (size_t)tid * row_bytes;
#pragma unroll 4
            for (int64_t b = 0; b < nb; b++) {
                const float dx = *(const float *)(xs + (size_t)b * VT_Q8_K_BYTES);
                const float dh = vt_half_bits_to_f32(((const uint16_t *)(w + b * 144))[0]);
                const float mh = vt_half_bits_to_f32(((const uint16_t *)(w + b * 144))[1]);
                acc = fmaf((float)isums[tid * nb + b], dh * dx, acc);
                mins = fmaf((float)imins[tid * nb + b], mh * dx, mins);
            }
            if (EPI == MV1_SWIGLU)
                pair_out[tid] = acc - mins;
            else
                y[o] = acc - mins;
        }
    }
    if (EPI == MV1_SWIGLU)
        mv1_pair_swiglu<R>(parts, pair_out);
}

/* The output head's Q4_K product (one token, the repacked order's
 * arithmetic as k_mv1_q4_k) a warp at a time, as k_mv1_q8_0_warps: a
 * group is 32 superblocks, 32 / nb rows of nb (nb a power of two up to
 * 32), 4608 bytes, nine 16-byte words a lane. Lane nb r + b takes
 * superblock b of row r: its eight sub-blocks' integer products and mins
 * (integers: any order is the same sum); lane nb r then runs the row's two
 * float chains over b in order with the others' sums by shuffle: acc -
 * mins, k_mv1_q4_k's operations on the same values, so the same bits. */
#define MV1W_Q4K_WORDS 9

static size_t mv1w_q4_k_shm(int64_t nb) { return (size_t)MV1W_WARPS * 32 * 144 + (size_t)nb * VT_Q8_K_BYTES; }

__global__ static void __launch_bounds__(MV1_THREADS)
k_mv1_q4_k_warps(const uint8_t *w, size_t row_bytes, int64_t nb, const float *x, int64_t total_rows, float *y)
{
    GRID_RELEASE(); /* the next kernel may start: it waits for this one */
    extern __shared__ uint4 mv1_words[];
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int per = 32 / (int)nb, r = lane / (int)nb, b = lane % (int)nb;
    uint8_t *rows = (uint8_t *)mv1_words + (size_t)warp * 32 * 144;
    uint8_t *xs = (uint8_t *)mv1_words + (size_t)MV1W_WARPS * 32 * 144;
    const int64_t groups = (total_rows + per - 1) / per, stride = (int64_t)gridDim.x * MV1W_WARPS;
    int64_t gi = (int64_t)blockIdx.x * MV1W_WARPS + warp;
    uint4 v[MV1W_Q4K_WORDS];
    mv1w_load<MV1W_Q4K_WORDS>(v, w, row_bytes, per, gi, total_rows, lane);
    GRID_WAIT(); /* x is the kernel ahead's output */
    quantize_rows<VT_TYPE_Q4_K>(x, nb * 256, 1, xs, (size_t)nb * VT_Q8_K_BYTES, lane, warp, MV1W_WARPS);
    __syncthreads();
    for (; gi < groups; gi += stride) {
#pragma unroll
        for (int u = 0; u < MV1W_Q4K_WORDS; u++)
            ((uint4 *)rows)[u * 32 + lane] = v[u];
        VT_SYNCWARP();
        mv1w_load<MV1W_Q4K_WORDS>(v, w, row_bytes, per, gi + stride, total_rows, lane); /* in flight while summed */
        const uint8_t *sb = rows + (size_t)lane * 144; /* row r's superblock b */
        const uint8_t *xb = xs + (size_t)b * VT_Q8_K_BYTES;
        int isum = 0, imin = 0;
#pragma unroll
        for (int j = 0; j < 8; j++) {
            int sc, mn;
            vt_k4_scale_min(sb + 4, j, &sc, &mn);
            const uint32_t *q = (const uint32_t *)(sb + 16 + 32 * (j >> 1));
            const int *q8 = (const int *)(xb + 4 + 32 * j);
            const int shift = 4 * (j & 1);
            int dot = 0;
#pragma unroll
            for (int p = 0; p < 8; p++)
                dot = dot4_i8((int)((q[p] >> shift) & 0x0f0f0f0fu), q8[p], dot);
            isum += sc * dot;
            imin += mn * ((int)((const int16_t *)(xb + 260))[2 * j] + (int)((const int16_t *)(xb + 260))[2 * j + 1]);
        }
        /* lane nb r: the chains over b in order (every lane shuffles) */
        float acc = 0.0f, mins = 0.0f;
        const uint8_t *wr = rows + (size_t)r * (size_t)nb * 144;
        for (int k = 0; k < (int)nb; k++) {
            const int is = SHFL(isum, r * (int)nb + k, 32), im = SHFL(imin, r * (int)nb + k, 32);
            const float dx = *(const float *)(xs + (size_t)k * VT_Q8_K_BYTES);
            const float dh = vt_half_bits_to_f32(((const uint16_t *)(wr + k * 144))[0]);
            const float mh = vt_half_bits_to_f32(((const uint16_t *)(wr + k * 144))[1]);
            acc = fmaf((float)is, dh * dx, acc);
            mins = fmaf((float)im, mh * dx, mins);
        }
        const int64_t o = gi * per + r;
        if (b == 0 && o < total_rows)
            y[o] = acc - mins;
        VT_SYNCWARP(); /* every lane is done with the rows before the next are stored */
    }
}

/* A one-token BF16 product a warp at a time, as k_mv1_q8_0_warps: the
 * matrices of parts (each of rows a multiple of R) taken one after another,
 * R rows a group, each row's bytes from the warp's shared buffer, the next
 * group loaded into registers while these are summed. The activation
 * through act_in held in registers, element 32 k + lane in xr[k] (XR =
 * cols / 32), for every row. Then warp_dot_bf16's operations: lane's chain
 * over k in order, the 16-lane trees, the two halves added in double: the
 * same bits as k_matvec. The output head and the layers' products alike.
 * PAIR (R 2, parts gate and up of equal rows): group gi is gate row gi and
 * up row gi, and y0[gi] gets swiglu_lane of the two, as k_swiglu computes
 * it; y1 is not written. */
template <int WORDS, int R, int PAIR>
__device__ static inline void mv1w_bf16_fetch(uint4 *v, const mv_parts &parts, int64_t gi, int64_t groups,
                                              size_t row_bytes, int lane, float **y, int64_t *o0)
{
    constexpr int HALF = WORDS / R; /* a row's words a lane: row_bytes / 512 */
    const uint8_t *src[R];
    *y = NULL;
    *o0 = 0;
    if (PAIR) {
        src[0] = gi < groups ? parts.data[0] + (size_t)gi * row_bytes : NULL;
        src[R - 1] = gi < groups ? parts.data[1] + (size_t)gi * row_bytes : NULL;
        *y = parts.y[0];
        *o0 = gi;
    } else {
        int64_t first = gi < groups ? gi * R : INT64_MAX, ldy;
        const uint8_t *data = NULL;
        const int in = mv_part_of(parts, &first, &data, y, &ldy);
        *o0 = in ? first : 0;
#pragma unroll
        for (int r = 0; r < R; r++)
            src[r] = in ? data + (size_t)(first + r) * row_bytes : NULL;
    }
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
        for (int u = 0; u < HALF; u++)
            v[r * HALF + u] = src[r] ? ((const uint4 *)src[r])[u * 32 + lane] : make_uint4(0, 0, 0, 0);
}

template <int XR, int R, int PAIR>
__global__ static void __launch_bounds__(MV1_THREADS)
k_mv1_bf16_warps(mv_parts parts, const float *x, int act, int64_t groups)
{
    GRID_RELEASE(); /* the next kernel may start: it waits for this one */
    constexpr int cols = 32 * XR, row_bytes = 2 * cols, WORDS = R * row_bytes / 16 / 32;
    static_assert(row_bytes % 512 == 0 && (!PAIR || R == 2), "a row is whole words of every lane");
    extern __shared__ uint4 mv1_words[];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const uint16_t *rows = (const uint16_t *)((uint8_t *)mv1_words + (size_t)warp * R * row_bytes);
    const int64_t stride = (int64_t)gridDim.x * (blockDim.x >> 5); /* 1 to MV1W_WARPS warps a block */
    int64_t gi = (int64_t)blockIdx.x * (blockDim.x >> 5) + warp, o0;
    float *y;
    uint4 v[WORDS];
    mv1w_bf16_fetch<WORDS, R, PAIR>(v, parts, gi, groups, row_bytes, lane, &y, &o0);
    GRID_WAIT(); /* x is the kernel ahead's output */
    float xr[XR];
#pragma unroll
    for (int k = 0; k < XR; k++)
        xr[k] = act_in(x, 32 * k + lane, act);
    for (; gi < groups; gi += stride) {
        float *const yg = y;
        const int64_t og = o0;
#pragma unroll
        for (int u = 0; u < WORDS; u++)
            ((uint4 *)rows)[u * 32 + lane] = v[u];
        VT_SYNCWARP();
        mv1w_bf16_fetch<WORDS, R, PAIR>(v, parts, gi + stride, groups, row_bytes, lane, &y, &o0); /* in flight */
        float out[R];
#pragma unroll
        for (int r = 0; r < R; r++) {
            const uint16_t *a = rows + r * cols;
            float c = 0.0f;
#pragma unroll
            for (int k = 0; k < XR; k++)
                c = fmaf(vt_bits_f32((uint32_t)a[32 * k + lane] << 16), xr[k], c);
            c = c + SHFL_DOWN(c, 8, 16);
            c = c + SHFL_DOWN(c, 4, 16);
            c = c + SHFL_DOWN(c, 2, 16);
            c = c + SHFL_DOWN(c, 1, 16);
            const float t2 = SHFL(c, 16, 32);
            double sum = 0.0 + (double)c;
            sum = (double)t2 + sum;
            out[r] = (float)sum;
        }
        if (lane == 0) {
            if (PAIR)
                yg[og] = swiglu_lane(out[0], out[R - 1]);
            else
#pragma unroll
                for (int r = 0; r < R; r++)
                    yg[og + r] = out[r];
        }
        VT_SYNCWARP(); /* every lane is done with the rows before the next are stored */
    }
}

/* x_out = x + y (x_out may be x), then out = RMSNorm(x_out) * w, one block
 * per row: k_add then k_rmsnorm in one launch (the same operations, so the
 * same bits). */
__global__ static void k_add_rmsnorm(const float *x, const float *y, float *x_out, float *out, const float *w,
                                     int64_t n, float eps)
{
    GRID_ENTER();
    extern __shared__ float sq[];
    __shared__ float scale_s;
    const float *xi = x + (int64_t)blockIdx.x * n;
    float *xr = x_out + (int64_t)blockIdx.x * n;
    const float *yr = y + (int64_t)blockIdx.x * n;
    float *o = out + (int64_t)blockIdx.x * n;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
        const float v = xi[i] + yr[i];
        xr[i] = v;
        sq[i] = v * v;
    }
    __syncthreads();
    const float mean = mean_square_as_serial(sq, n);
    if (threadIdx.x == 0)
        scale_s = 1.0f / sqrtf(mean + eps);
    __syncthreads();
    const float scale = scale_s;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
        o[i] = w ? xr[i] * scale * w[i] : xr[i] * scale;
}

/* k_add_rmsnorm with each thread's K float4 of the row held in registers
 * (rows of n <= 1024 K, n a multiple of 4, every pointer 16-byte aligned):
 * the weights loaded before the wait, x and y together after it, x read
 * once. A chain of two rounds to global memory where k_add_rmsnorm has
 * six (a loop's loads in turn, then x again). The same operations on each
 * element, so the same bits. */
template <int K>
__global__ static void __launch_bounds__(256)
    k_add_rmsnorm_regs(const float *x, const float *y, float *x_out, float *out, const float *w, int64_t n, float eps)
{
    GRID_RELEASE();
    extern __shared__ float sq[];
    __shared__ float scale_s;
    const int64_t n4 = n / 4, row = (int64_t)blockIdx.x * n4;
    const float4 *xi = (const float4 *)x + row;
    float4 *xr = (float4 *)x_out + row, *o = (float4 *)out + row;
    const float4 *yr = (const float4 *)y + row;
    float4 wv[K], v[K];
#pragma unroll
    for (int k = 0; k < K; k++) {
        const int64_t i = threadIdx.x + (int64_t)k * blockDim.x;
        wv[k] = w && i < n4 ? ((const float4 *)w)[i] : make_float4(1.0f, 1.0f, 1.0f, 1.0f);
    }
    GRID_WAIT(); /* x and y are the kernels ahead's */
#pragma unroll
    for (int k = 0; k < K; k++) {
        const int64_t i = threadIdx.x + (int64_t)k * blockDim.x;
        if (i < n4) {
            const float4 a = xi[i], b = yr[i];
            v[k] = make_float4(a.x + b.x, a.y + b.y, a.z + b.z, a.w + b.w);
        }
    }
#pragma unroll
    for (int k = 0; k < K; k++) {
        const int64_t i = threadIdx.x + (int64_t)k * blockDim.x;
        if (i < n4) {
            xr[i] = v[k];
            ((float4 *)sq)[i] = make_float4(v[k].x * v[k].x, v[k].y * v[k].y, v[k].z * v[k].z, v[k].w * v[k].w);
        }
    }
    __syncthreads();
    const float mean = mean_square_as_serial(sq, n);
    if (threadIdx.x == 0)
        scale_s = 1.0f / sqrtf(mean + eps);
    __syncthreads();
    const float s = scale_s;
#pragma unroll
    for (int k = 0; k < K; k++) {
        const int64_t i = threadIdx.x + (int64_t)k * blockDim.x;
        if (i < n4)
            o[i] = w ? make_float4(v[k].x * s * wv[k].x, v[k].y * s * wv[k].y, v[k].z * s * wv[k].z, v[k].w * s * wv[k].w)
                     : make_float4(v[k].x * s, v[k].y * s, v[k].z * s, v[k].w * s);
    }
}

__device__ static void cache_put(int dtype, void *cache, size_t at, float f)
{
    if (dtype == VT_CACHE_BF16)
        ((uint16_t *)cache)[at] = vt_f32_bits_to_bf16(f);
    else if (dtype == VT_CACHE_FP8_E4M3)
        ((uint8_t *)cache)[at] = vt_fp8_e4m3_encode(f);
    else
        ((float *)cache)[at] = f;
}

__device__ static float cache_get(const vt_gpu_kv &kv, const void *cache, size_t at)
{
    if (kv.dtype == VT_CACHE_BF16)
        return vt_bits_f32((uint32_t)((const uint16_t *)cache)[at] << 16);
    if (kv.dtype == VT_CACHE_FP8_E4M3)
        return kv.fp8_table[((const uint8_t *)cache)[at]];
    return ((const float *)cache)[at];
}

#define VT_GPU_MAX_HEAD 512
#define QK_THREADS 64

/* RMSNorm over n elements, then NeoX RoPE with the angles cs (cos, sin
 * pairs) over the first n_rot, of NH heads x[h] in shared memory, in
 * place: x = x * (1 / sqrt(mean + eps)) * w, w[h] the head's weights
 * (shared), sq[h] n floats of scratch each. The CPU's operations on each
 * element, so its bits. Every thread calls it, thread t having written
 * elements t, t + blockDim, ... of each head (it squares the same ones);
 * its last barrier makes every element visible to every thread. */
template <int NH>
__device__ static void qk_norm_rope_head(float *const *x, const float *const *w, int64_t n, float eps,
                                         const float *cs, int64_t n_rot, float *const *sq)
{
#pragma unroll
    for (int h = 0; h < NH; h++)
        for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
            sq[h][i] = x[h][i] * x[h][i];
    __syncthreads();
    float mean[NH];
    mean_squares_as_serial<NH>(sq, n, mean);
#pragma unroll
    for (int h = 0; h < NH; h++) {
        const float scale = 1.0f / sqrtf(mean[h] + eps); /* every thread: the same bits */
        for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
            x[h][i] = x[h][i] * scale * w[h][i];
    }
    __syncthreads();
    for (int64_t i = threadIdx.x; i < n_rot / 2; i += blockDim.x)
#pragma unroll
        for (int h = 0; h < NH; h++)
            rope_neox_pair(&x[h][i], &x[h][i + n_rot / 2], cs[2 * i], cs[2 * i + 1]);
    __syncthreads();
}

/* One block of QK_THREADS per (token, head) of Q, then of K: RMSNorm over
 * the head and NeoX RoPE of its first n_rot dimensions, in place; the
 * blocks of K then store the head's K (so normed and rotated) and V rows
 * into the cache at position *kv.pos + t. The weights and the angles
 * (copied before the step's first kernel, so never a kernel ahead's
 * output) are loaded into shared memory before the wait; after it the
 * head's x (into shared memory) and V (into registers) come in one round,
 * qk_norm_rope_head works on x, and x and the cache are written once. */
__global__ static void __launch_bounds__(QK_THREADS)
    k_qk_norm_rope_store(vt_gpu_kv kv, int layer, float *q, int64_t ldq, float *k, int64_t ldk, const float *v,
                         int64_t ldv, int n_head, int n_head_kv, int64_t hd, const float *qw, const float *kw,
                         float eps, const float *cs, int64_t n_rot)
{
    GRID_RELEASE();
    __shared__ float sq[VT_GPU_MAX_HEAD], xs[VT_GPU_MAX_HEAD], ws[VT_GPU_MAX_HEAD], cs_s[VT_GPU_MAX_HEAD];
    const int per = n_head + n_head_kv, tid = threadIdx.x;
    const int64_t t = blockIdx.x / per;
    const int h = (int)(blockIdx.x % per), is_k = h >= n_head, kh = h - n_head;
    float *x = is_k ? k + t * ldk + kh * hd : q + t * ldq + h * hd;
    const float *w = is_k ? kw : qw, *vr = is_k ? v + t * ldv + kh * hd : v;
    for (int64_t i = tid; i < hd; i += QK_THREADS)
        ws[i] = w[i];
    for (int64_t i = tid; i < n_rot; i += QK_THREADS)
        cs_s[i] = cs[t * n_rot + i];
    GRID_WAIT(); /* q, k and v are the product ahead's */
    float vv[VT_GPU_MAX_HEAD / QK_THREADS] = {};
#pragma unroll
    for (int p = 0; p < VT_GPU_MAX_HEAD / QK_THREADS; p++) {
        const int64_t i = tid + p * QK_THREADS;
        if (i < hd) {
            xs[i] = x[i];
            vv[p] = is_k ? vr[i] : 0.0f;
        }
    }
    float *const heads[1] = { xs };
    const float *const wts[1] = { ws };
    float *const sqs[1] = { sq };
    qk_norm_rope_head<1>(heads, wts, hd, eps, cs_s, n_rot, sqs);
    const size_t at = ((size_t)layer * (size_t)kv.n_ctx + (size_t)(*kv.pos + t)) * (size_t)kv.kv_dim + (size_t)(kh * hd);
#pragma unroll
    for (int p = 0; p < VT_GPU_MAX_HEAD / QK_THREADS; p++) {
        const int64_t i = tid + p * QK_THREADS;
        if (i < hd) {
            x[i] = xs[i];
            if (is_k) {
                cache_put(kv.dtype, kv.k, at + (size_t)i, xs[i]);
                cache_put(kv.dtype, kv.v, at + (size_t)i, vv[p]);
            }
        }
    }
}

/* A hint that this thread will soon read the line at p: into this
 * multiprocessor's L1 or into L2. No effect on any value read. */
#if !defined(__HIP_PLATFORM_AMD__)
__device__ static inline void prefetch_l1(const void *p) { asm volatile("prefetch.global.L1 [%0];" ::"l"(p)); }
__device__ static inline void prefetch_l2(const void *p) { asm volatile("prefetch.global.L2 [%0];" ::"l"(p)); }
#else
__device__ static inline void prefetch_l1(const void *p) { (void)p; }
__device__ static inline void prefetch_l2(const void *p) { (void)p; }
#endif

/* The dot of cache row `at` (hd elements) with q (shared), the CPU's
 * ggml_vec_dot_f32 (warp_dot_f32) reading the cache directly, in lane 0. */
__device__ static float key_dot_tail(const vt_gpu_kv &kv, size_t at, const float *qs, int64_t np, int64_t n,
                                     float sum)
{
    int64_t i = np;
    for (; i + 16 <= n; i += 16)
        for (int k = 0; k < 16; k++)
            sum += cache_get(kv, kv.k, at + (size_t)(i + k)) * qs[i + k];
    if (i + 8 <= n)
        for (int k = 0; k < 8; k++, i++)
            sum += cache_get(kv, kv.k, at + (size_t)i) * qs[i];
    for (; i < n; i++)
        sum = fmaf(cache_get(kv, kv.k, at + (size_t)i), qs[i], sum);
    return sum;
}

#define ATT_KEYS 4 /* keys a warp scores at once */

/* The scores of keys j_begin .. j_end - 1 into scores[j]: the dot of K row
 * j with q (qs, shared), in the CPU's order straight from the cache, times
 * scale. Each warp of the block takes keys j_begin + warp, + warps, ...,
 * ATT_KEYS at a time (their loads in flight together). */
template <bool NEW = false>
__device__ static void att_scores(const vt_gpu_kv &kv, size_t layer_at, const float *qs, int64_t hd, int32_t j_begin,
                                  int32_t j_end, float scale, float *scores, const float *knew = NULL,
                                  int32_t jnew = -1)
{
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    const int64_t np = hd & ~(int64_t)63;
    for (int32_t j0 = j_begin + warp; j0 < j_end; j0 += ATT_KEYS * warps) {
        size_t at[ATT_KEYS];
        float sa[ATT_KEYS], sb[ATT_KEYS];
        bool is_new[ATT_KEYS];
#pragma unroll
        for (int r = 0; r < ATT_KEYS; r++) {
            const int32_t j = j0 + r * warps;
            at[r] = layer_at + (size_t)(j < j_end ? j : j0) * (size_t)kv.kv_dim;
            is_new[r] = NEW && j == jnew;
            sa[r] = 0.0f;
            sb[r] = 0.0f;
        }
#pragma unroll 2
        for (int64_t i = 0; i < np; i += 64) {
            float k0[ATT_KEYS], k1[ATT_KEYS];
#pragma unroll
            for (int r = 0; r < ATT_KEYS; r++) {
                k0[r] = is_new[r] ? knew[i + lane] : cache_get(kv, kv.k, at[r] + (size_t)(i + lane));
                k1[r] = is_new[r] ? knew[i + 32 + lane] : cache_get(kv, kv.k, at[r] + (size_t)(i + 32 + lane));
            }
            const float q0 = qs[i + lane], q1 = qs[i + 32 + lane];
#pragma unroll
            for (int r = 0; r < ATT_KEYS; r++) {
                sa[r] = fmaf(k0[r], q0, sa[r]);
                sb[r] = fmaf(k1[r], q1, sb[r]);
            }
        }
#pragma unroll
        for (int r = 0; r < ATT_KEYS; r++) {
            const int32_t j = j0 + r * warps;
            float s = warp_tree64(sa[r], sb[r]);
            if (lane == 0 && j < j_end) {
                if (np < hd)
                    s = key_dot_tail(kv, at[r], qs, np, hd, s);
                scores[j] = s * scale;
            }
        }
    }
}

/* The softmax of scores[0 .. n_keys - 1] (shared) in place, each the
 * expf16 of itself less the maximum; returns 1 / their sum, tree16 per 16
 * keys (csum: one float per 16) and the 16-sums added in double in key order.
 * wmax: one float a warp. Every thread of the block calls it, and every
 * thread takes the maximum of the warps' and adds the 16-sums itself (the
 * same operations in the same order: the same bits in each), so only two
 * barriers; it reads scores, csum and wmax until it returns.
 * att_softmax_max: the first step, each warp's maximum of the values m its
 * threads hold (fmaxf: the same in any order) into wmax; a barrier must
 * follow. att_softmax_exp_sum: the rest, after that barrier. Each key's
 * expf16 by its own thread, and the tree16 of each 16 by shuffles in a
 * half-warp: lane k adds lane k + 8's, then k + 4's, k + 2's and k + 1's,
 * the pairs tree16 adds, in its order. */
__device__ static void att_softmax_max(float m, float *wmax)
{
    for (int o = 16; o; o >>= 1)
        m = fmaxf(m, SHFL_XOR(m, o, 32));
    if ((threadIdx.x & 31) == 0)
        wmax[threadIdx.x >> 5] = m;
}

__device__ static float att_softmax_exp_sum(float *scores, int32_t n_keys, float *csum, const float *wmax)
{
    const int warps = blockDim.x >> 5;
    const int64_t n16 = (n_keys + 15) / 16 * 16;
    float mm = -INFINITY;
    for (int w = 0; w < warps; w++)
        mm = fmaxf(mm, wmax[w]);
    for (int64_t j0 = 0; j0 < n16; j0 += blockDim.x) { /* every thread the same rounds: the shuffles' lanes all in */
        const int64_t j = j0 + threadIdx.x;
        float e = 0.0f;
        if (j < n_keys)
            scores[j] = e = expf16_body(scores[j] - mm);
        e = e + SHFL_DOWN(e, 8, 16);
        e = e + SHFL_DOWN(e, 4, 16);
        e = e + SHFL_DOWN(e, 2, 16);
        e = e + SHFL_DOWN(e, 1, 16);
        if ((threadIdx.x & 15) == 0 && j < n16)
            csum[j / 16] = e;
    }
    __syncthreads();
    double sum = 0.0;
    for (int64_t c = 0; c < n16 / 16; c++)
        sum += (double)csum[c];
    return (float)(1.0 / sum);
}

__device__ static float att_softmax(float *scores, int32_t n_keys, float *csum, float *wmax)
{
    float m = -INFINITY;
    for (int32_t j = threadIdx.x; j < n_keys; j += blockDim.x)
        m = fmaxf(m, scores[j]);
    att_softmax_max(m, wmax);
    __syncthreads();
    return att_softmax_exp_sum(scores, n_keys, csum, wmax);
}

/* Asks for the 128-byte lines of cache rows [j_begin, j_end) of one head
 * (layer_at) whose row number mod 64 is in [m_lo, m_hi): rows below l1_rows
 * into L1, the others into L2. */
__device__ static void att_prefetch_rows(const vt_gpu_kv &kv, const void *cache, size_t layer_at, int64_t hd,
                                         int32_t j_begin, int32_t j_end, int m_lo, int m_hi, int32_t l1_rows)
{
    const size_t es = (size_t)kv.elem, lines = ((size_t)hd * es + 127) / 128;
    const uint8_t *base = (const uint8_t *)cache + layer_at * es;
    const size_t n = j_end > j_begin ? (size_t)(j_end - j_begin) * lines : 0;
    for (size_t i = threadIdx.x; i < n; i += blockDim.x) {
        const size_t j = (size_t)j_begin + i / lines;
        const uint8_t *at = base + j * (size_t)kv.kv_dim * es + (i % lines) * 128;
        if ((int)(j % 64) < m_lo || (int)(j % 64) >= m_hi)
            continue;
        if (j < (size_t)l1_rows)
            prefetch_l1(at);
        else
            prefetch_l2(at);
    }
}

/* One block per (token, head), ATT_THREADS threads.
 *  scores: each warp takes keys warp, warp + warps, ..., ATT_KEYS at a time
 *          (their loads in flight together), each key's dot in the CPU's
 *          order straight from the cache, times scale;
 *  softmax: the maximum by every thread (order does not matter), exp and a
 *          float tree per 16 keys, the 16-sums added in double in key order
 *          by one thread (exp_sum_body);
 *  V p:    accumulator k (of 64) holds keys j = k mod 64 in key order, as
 *          kernels_kv.c; the threads in four groups of ATT_THREADS / 4
 *          outputs, group g holding accumulators 16g .. 16g + 15; groups
 *          1..3 hand theirs over in shared memory and group 0 pairs them as
 *          dot() does, then tree16.
 * Shared: q (hd), the scores (n_keys rounded up to 16), one sum per 16
 * keys, the handed-over accumulators (48 x ATT_THREADS / 4), one maximum
 * per warp. */
#define ATT_THREADS 512
#define ATT_L1_ROWS 256 /* K rows asked into L1 before the wait */
#define ATT_DN (ATT_THREADS / 4)
__global__ static void __launch_bounds__(ATT_THREADS) k_attention(vt_gpu_kv kv, int layer, int n_head, int n_head_kv,
                                                                  int64_t hd, const float *q, int64_t ldq, float *out,
                                                                  int64_t ldo)
{
    GRID_RELEASE();
    extern __shared__ float sh[];
    const int32_t pos0 = *kv.pos; /* copied before the step's first kernel */
    const int64_t t = blockIdx.x / n_head;
    const int h = (int)(blockIdx.x % n_head), kvh = h / (n_head / n_head_kv);
    const size_t head_off = (size_t)kvh * (size_t)hd;
    const size_t layer_at = (size_t)layer * (size_t)kv.n_ctx * (size_t)kv.kv_dim + head_off;
    /* The rows before pos0 are earlier batches' (this batch writes rows
     * pos0 on): their lines asked for while the kernels ahead still run,
     * K's first ATT_L1_ROWS rows into L1 (the scores read K first; about
     * what L1 holds beside the shared memory), the rest into L2. */
    att_prefetch_rows(kv, kv.k, layer_at, hd, 0, pos0, 0, 64, ATT_L1_ROWS);
    att_prefetch_rows(kv, kv.v, layer_at, hd, 0, pos0, 0, 64, 0);
    GRID_WAIT(); /* q and the batch's own K and V rows are the kernel ahead's */
    const int32_t n_keys = pos0 + (int32_t)t + 1;
    const int64_t n16 = (n_keys + 15) / 16 * 16;
    float *qs = sh, *scores = qs + hd, *csum = scores + n16, *part = csum + n16 / 16, *wmax = part + 48 * ATT_DN;
    const float scale = 1.0f / sqrtf((float)hd);
    for (int64_t d = threadIdx.x; d < hd; d += blockDim.x)
        qs[d] = q[t * ldq + h * hd + d];
    __syncthreads();
    att_scores(kv, layer_at, qs, hd, 0, n_keys, scale, scores);
    __syncthreads();
    const float inv = att_softmax(scores, n_keys, csum, wmax);
    const int gi = threadIdx.x / ATT_DN, di = threadIdx.x % ATT_DN;
    for (int64_t d0 = 0; d0 < hd; d0 += ATT_DN) {
        const int64_t d = d0 + di;
        float acc[16];
#pragma unroll
        for (int k = 0; k < 16; k++)
            acc[k] = 0.0f;
        if (d < hd) {
            const size_t base = layer_at + (size_t)d;
#pragma unroll 2
            for (int32_t j0 = 16 * gi; j0 < n_keys; j0 += 64) {
                float vv[16]; /* the 16 loads in flight before their products */
#pragma unroll
                for (int k = 0; k < 16; k++) {
                    const int32_t j = j0 + k;
                    vv[k] = j < n_keys ? cache_get(kv, kv.v, base + (size_t)j * (size_t)kv.kv_dim) : 0.0f;
                }
#pragma unroll
                for (int k = 0; k < 16; k++) {
                    const int32_t j = j0 + k;
                    if (j < n_keys)
                        acc[k] = fmaf(vv[k], scores[j] * inv, acc[k]);
                }
            }
        }
        if (gi > 0)
#pragma unroll
            for (int k = 0; k < 16; k++)
                part[((gi - 1) * 16 + k) * ATT_DN + di] = acc[k];
        __syncthreads();
        if (gi == 0 && d < hd) {
            /* accumulators k, k + 16, k + 32, k + 48: groups 0, 1, 2, 3 */
            float l[16];
#pragma unroll
            for (int k = 0; k < 16; k++)
                l[k] = (acc[k] + part[(16 + k) * ATT_DN + di]) + (part[k * ATT_DN + di] + part[(32 + k) * ATT_DN + di]);
            out[t * ldo + h * hd + d] = tree16(l);
        }
        __syncthreads();
    }
}

/* The decode step's attention (one token) over more of the device: where
 * k_attention gives a head one block (16 blocks for 16 heads, the rest of
 * the multiprocessors idle, each block a long chain of rounds to memory),
 *   k_att_scores:    ATS_SPLIT blocks a head, each scoring a contiguous
 *                    ATS_SPLIT-th of the keys into scratch (att_scores);
 *   k_att_softmax_v: ATV_GROUPS blocks a head; each reads the head's scores,
 *                    makes the same softmax (att_softmax, every block the
 *                    same bits), and runs accumulators 16g .. 16g + 15 of
 *                    every output (keys j = 16g + k mod 64, in key order,
 *                    as k_attention's group g), into scratch; the last of
 *                    the head's blocks to finish (a ticket) pairs the 64 as
 *                    k_attention does, then tree16.
 * The same operations on the same values in the same order, so the same
 * bits as k_attention. The rows before pos0 (earlier batches', unchanged by
 * this one) are asked for before each kernel waits for the one ahead. */
#define ATS_SPLIT 8
#define ATS_THREADS 256
#define ATV_GROUPS 4
#define ATV_THREADS 512

__global__ static void __launch_bounds__(ATS_THREADS)
    k_att_scores(vt_gpu_kv kv, int layer, int n_head, int n_head_kv, int64_t hd, const float *q, float *scores,
                 int64_t ld_scores)
{
    GRID_RELEASE();
    __shared__ float qs[VT_GPU_MAX_HEAD];
    const int32_t pos0 = *kv.pos; /* copied before the step's first kernel */
    const int h = (int)(blockIdx.x / ATS_SPLIT), s = (int)(blockIdx.x % ATS_SPLIT), kvh = h / (n_head / n_head_kv);
    const size_t layer_at = (size_t)layer * (size_t)kv.n_ctx * (size_t)kv.kv_dim + (size_t)kvh * (size_t)hd;
    const int32_t n_keys = pos0 + 1, chunk = (n_keys + ATS_SPLIT - 1) / ATS_SPLIT;
    const int32_t j_begin = s * chunk < n_keys ? s * chunk : n_keys;
    const int32_t j_end = j_begin + chunk < n_keys ? j_begin + chunk : n_keys;
    att_prefetch_rows(kv, kv.k, layer_at, hd, j_begin, j_end < pos0 ? j_end : pos0, 0, 64, INT32_MAX);
    GRID_WAIT(); /* q and this token's K row are the kernel ahead's */
    for (int64_t d = threadIdx.x; d < hd; d += blockDim.x)
        qs[d] = q[h * hd + d];
    __syncthreads();
    att_scores(kv, layer_at, qs, hd, j_begin, j_end, 1.0f / sqrtf((float)hd), scores + (int64_t)h * ld_scores);
}

template <int HD>
__global__ static void __launch_bounds__(ATV_THREADS)
    k_att_softmax_v(vt_gpu_kv kv, int layer, int n_head, int n_head_kv, const float *scores,
                    int64_t ld_scores, float *acc, int *tickets, float *out)
{
    GRID_RELEASE();
    extern __shared__ float sh[];
    __shared__ int last;
    const int32_t pos0 = *kv.pos; /* copied before the step's first kernel */
    const int h = (int)(blockIdx.x / ATV_GROUPS), gq = (int)(blockIdx.x % ATV_GROUPS), kvh = h / (n_head / n_head_kv);
    const size_t layer_at = (size_t)layer * (size_t)kv.n_ctx * (size_t)kv.kv_dim + (size_t)kvh * (size_t)HD;
    const int32_t n_keys = pos0 + 1;
    const int64_t n16 = (n_keys + 15) / 16 * 16;
    float *p = sh, *csum = p + n16, *wmax = csum + n16 / 16;
    att_prefetch_rows(kv, kv.v, layer_at, HD, 0, pos0, 16 * gq, 16 * gq + 16, INT32_MAX);
    GRID_WAIT(); /* the scores are the kernel ahead's */
    for (int32_t j = threadIdx.x; j < n_keys; j += blockDim.x)
        p[j] = scores[(int64_t)h * ld_scores + j];
    __syncthreads();
    const float inv = att_softmax(p, n_keys, csum, wmax);
    /* thread (c, d): accumulators 16 gq + PER c + u, u < PER, of output d
     * (HD 128: four a thread) */
    constexpr int PER = 16 * HD / ATV_THREADS;
    static_assert(PER >= 1 && PER <= 16 && 16 % PER == 0 && (16 / PER) * HD == ATV_THREADS, "one unit a thread");
    float *a = acc + (int64_t)h * 64 * HD;
    {
        const int d = (int)threadIdx.x % HD;
        const int k0 = 16 * gq + (int)threadIdx.x / HD * PER;
        const size_t base = layer_at + (size_t)d;
        float r[PER];
#pragma unroll
        for (int u = 0; u < PER; u++)
            r[u] = 0.0f;
        for (int32_t j0 = k0; j0 < n_keys; j0 += 64) {
            float v[PER];
#pragma unroll
            for (int u = 0; u < PER; u++)
                v[u] = j0 + u < n_keys ? cache_get(kv, kv.v, base + (size_t)(j0 + u) * (size_t)kv.kv_dim) : 0.0f;
#pragma unroll
            for (int u = 0; u < PER; u++)
                if (j0 + u < n_keys)
                    r[u] = fmaf(v[u], p[j0 + u] * inv, r[u]);
        }
#pragma unroll
        for (int u = 0; u < PER; u++)
            a[(int64_t)(k0 + u) * HD + d] = r[u];
    }
    /* the last of the head's ATV_GROUPS blocks pairs the 64 accumulators */
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0)
        last = atomicAdd(&tickets[h], 1) == ATV_GROUPS - 1;
    __syncthreads();
    if (!last)
        return;
    __threadfence();
    const volatile float *va = a; /* the other blocks' writes, not this multiprocessor's L1 */
    for (int d = threadIdx.x; d < HD; d += ATV_THREADS) {
        float l[16];
#pragma unroll
        for (int k = 0; k < 16; k++)
            l[k] = (va[k * HD + d] + va[(32 + k) * HD + d]) + (va[(16 + k) * HD + d] + va[(48 + k) * HD + d]);
        out[h * HD + d] = tree16(l);
    }
    if (threadIdx.x == 0)
        tickets[h] = 0; /* for the next step */
}

/* k_att_cluster's QK inputs (below). */
struct att_qk {
    const float *k, *v, *qw, *kw, *cs;
    float eps;
    int64_t n_rot;
};

#if !defined(__HIP_PLATFORM_AMD__)
/* f as the cache gives it back once stored (cache_put, then cache_get). */
__device__ static float cache_round(const vt_gpu_kv &kv, float f)
{
    if (kv.dtype == VT_CACHE_BF16)
        return vt_bits_f32((uint32_t)vt_f32_bits_to_bf16(f) << 16);
    if (kv.dtype == VT_CACHE_FP8_E4M3)
        return kv.fp8_table[vt_fp8_e4m3_encode(f)];
    return f;
}

/* The same one-token attention in one launch on NVIDIA (compute 9 and up):
 * the ATV_GROUPS blocks of a head are one thread-block cluster, block r
 * scoring a contiguous ATV_GROUPS-th of the keys into its shared memory
 * (pub) as k_att_scores does, each block then copying all the head's
 * scores out of the cluster's shared memory (p) and going on as
 * k_att_softmax_v's block r, its 16 accumulators of every output kept in
 * its own shared memory (acc16); block r then pairs the four blocks'
 * accumulators of outputs r HD / 4 .. (r + 1) HD / 4 - 1 as the ticket's
 * last block does. No scratch in global memory, no fence, no ticket and
 * one launch fewer a layer; the same operations on the same values in the
 * same order, so the same bits. Shared: acc16 (16 HD), pub and p (n16
 * each), one sum per 16 keys, one maximum per warp.
 * QK: the launch takes k_qk_norm_rope_store's place before it too. Every
 * block works out its head's Q and the token's K row (RMSNorm, RoPE) and
 * V row itself, as that kernel's blocks do (qk_norm_rope_head), and scores
 * key pos0 with that K row and weighs that V row, each read back through
 * the cache's type (cache_round: what the cache would give), so no block
 * reads the row another writes; block 0 of the first Q head of each K head
 * stores the two rows into the cache for later steps. (Q is not written
 * back: only this attention reads it.)
 * Each step's reads are issued together before their sums (the cluster's
 * scores, the V rows of ATV_VB rounds of 64 keys, the pairing's
 * accumulators), and the V rows of the block's keys are asked into L1
 * before the wait where l1_v (VT_GPU_ATT_L1V=0: into L2). */
#define ATV_VB 4
template <int HD, bool QK>
__global__ static void __cluster_dims__(ATV_GROUPS, 1, 1) __launch_bounds__(ATV_THREADS)
    k_att_cluster(vt_gpu_kv kv, int layer, int n_head, int n_head_kv, const float *q, float *out, att_qk qk,
                  int32_t l1_v)
{
    static_assert(ATV_GROUPS == 4, "four blocks' accumulators paired");
    static_assert(!QK || (HD % 64 == 0 && HD <= ATV_THREADS), "att_scores<true> reads whole rows of 64");
    GRID_RELEASE();
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    extern __shared__ float sh[];
    __shared__ float qs[HD];
    __shared__ float knew[QK ? HD : 1], vnew[QK ? HD : 1], sq[QK ? HD : 1], cs_s[QK ? HD : 1];
    __shared__ float qw_s[QK ? HD : 1], kw_s[QK ? HD : 1];
    cg::cluster_group cluster = cg::this_cluster();
    const int32_t pos0 = *kv.pos; /* copied before the step's first kernel */
    const int h = (int)(blockIdx.x / ATV_GROUPS), gq = (int)cluster.block_rank(), kvh = h / (n_head / n_head_kv);
    const size_t layer_at = (size_t)layer * (size_t)kv.n_ctx * (size_t)kv.kv_dim + (size_t)kvh * (size_t)HD;
    const int32_t n_keys = pos0 + 1, chunk = (n_keys + ATV_GROUPS - 1) / ATV_GROUPS;
    const int32_t j_begin = gq * chunk < n_keys ? gq * chunk : n_keys;
    const int32_t j_end = j_begin + chunk < n_keys ? j_begin + chunk : n_keys;
    const int64_t n16 = (n_keys + 15) / 16 * 16;
    float *acc16 = sh, *pub = acc16 + 16 * HD, *p = pub + n16, *csum = p + n16, *wmax = csum + n16 / 16;
    att_prefetch_rows(kv, kv.k, layer_at, HD, j_begin, j_end < pos0 ? j_end : pos0, 0, 64, INT32_MAX);
    att_prefetch_rows(kv, kv.v, layer_at, HD, 0, pos0, 16 * gq, 16 * gq + 16, l1_v);
    const int tid = (int)threadIdx.x;
    if (QK) { /* the norms' weights and the angles, never a kernel's output */
        if (tid < HD) {
            qw_s[tid] = qk.qw[tid];
            kw_s[tid] = qk.kw[tid];
        }
        for (int64_t i = tid; i < qk.n_rot; i += ATV_THREADS)
            cs_s[i] = qk.cs[i];
    }
    GRID_WAIT(); /* q and this token's K and V rows are the kernel ahead's */
    if (QK) {
        float xv = 0.0f;
        if (tid < HD) {
            qs[tid] = q[h * HD + tid];
            knew[tid] = qk.k[kvh * HD + tid];
            xv = qk.v[kvh * HD + tid];
        }
        float *const heads[2] = { qs, knew };
        const float *const wts[2] = { qw_s, kw_s };
        float *const sqs[2] = { sq, vnew }; /* vnew: scratch until it is written below */
        qk_norm_rope_head<2>(heads, wts, HD, qk.eps, cs_s, qk.n_rot, sqs);
        if (tid < HD) {
            if (gq == 0 && h % (n_head / n_head_kv) == 0) {
                const size_t at = ((size_t)layer * (size_t)kv.n_ctx + (size_t)pos0) * (size_t)kv.kv_dim +
                                  (size_t)kvh * (size_t)HD + (size_t)tid;
                cache_put(kv.dtype, kv.k, at, knew[tid]);
                cache_put(kv.dtype, kv.v, at, xv);
            }
            knew[tid] = cache_round(kv, knew[tid]);
            vnew[tid] = cache_round(kv, xv);
        }
    } else {
        for (int d = tid; d < HD; d += ATV_THREADS)
            qs[d] = q[h * HD + d];
    }
    __syncthreads();
    TRACE_MARK(0);
    att_scores<QK>(kv, layer_at, qs, HD, j_begin, j_end, 1.0f / sqrtf((float)HD), pub, knew, pos0);
    cluster.sync(); /* every block's scores written */
    TRACE_MARK(1);
    {
        /* every key's score copied once, its maximum taken on the way (att_softmax's first step) */
        const float *src[ATV_GROUPS];
#pragma unroll
        for (int r = 0; r < ATV_GROUPS; r++)
            src[r] = cluster.map_shared_rank(pub, r);
        float m = -INFINITY;
        for (int32_t i = tid; i < chunk; i += ATV_THREADS) {
            float v[ATV_GROUPS];
#pragma unroll
            for (int r = 0; r < ATV_GROUPS; r++)
                v[r] = r * chunk + i < n_keys ? src[r][r * chunk + i] : 0.0f;
#pragma unroll
            for (int r = 0; r < ATV_GROUPS; r++)
                if (r * chunk + i < n_keys) {
                    p[r * chunk + i] = v[r];
                    m = fmaxf(m, v[r]);
                }
        }
        att_softmax_max(m, wmax);
    }
    __syncthreads();
    const float inv = att_softmax_exp_sum(p, n_keys, csum, wmax);
    TRACE_MARK(2);
    constexpr int PER = 16 * HD / ATV_THREADS;
    {
        const int d = (int)threadIdx.x % HD, u0 = (int)threadIdx.x / HD * PER;
        const int k0 = 16 * gq + u0;
        const size_t base = layer_at + (size_t)d;
        float r[PER];
#pragma unroll
        for (int u = 0; u < PER; u++)
            r[u] = 0.0f;
        for (int32_t j0 = k0; j0 < n_keys; j0 += 64 * ATV_VB) {
            float v[ATV_VB][PER]; /* every load of the ATV_VB rounds in flight before their products */
#pragma unroll
            for (int b = 0; b < ATV_VB; b++)
#pragma unroll
                for (int u = 0; u < PER; u++) {
                    const int32_t j = j0 + 64 * b + u;
                    v[b][u] = j >= n_keys        ? 0.0f
                              : QK && j == pos0 ? vnew[d]
                                                : cache_get(kv, kv.v, base + (size_t)j * (size_t)kv.kv_dim);
                }
#pragma unroll
            for (int b = 0; b < ATV_VB; b++)
#pragma unroll
                for (int u = 0; u < PER; u++)
                    if (j0 + 64 * b + u < n_keys)
                        r[u] = fmaf(v[b][u], p[j0 + 64 * b + u] * inv, r[u]);
        }
#pragma unroll
        for (int u = 0; u < PER; u++)
            acc16[(u0 + u) * HD + d] = r[u];
    }
    cluster.sync(); /* every block's accumulators written */
    TRACE_MARK(3);
    {
        /* accumulator k of output d: block k / 16's acc16[(k % 16) HD + d] */
        constexpr int DQ = HD / ATV_GROUPS;
        const float *a[ATV_GROUPS];
#pragma unroll
        for (int r = 0; r < ATV_GROUPS; r++)
            a[r] = cluster.map_shared_rank(acc16, r);
        if (tid < DQ) {
            const int d = gq * DQ + tid;
            float l[16];
#pragma unroll
            for (int k = 0; k < 16; k++)
                l[k] = (a[0][k * HD + d] + a[2][k * HD + d]) + (a[1][k * HD + d] + a[3][k * HD + d]);
            out[h * HD + d] = tree16(l);
        }
    }
    cluster.sync(); /* every block has read the others' shared memory */
#else
    __trap(); /* launched only where the device has clusters (att_split_launch) */
#endif
}
#endif

__global__ static void k_add(float *x, const float *y, int64_t n)
{
    GRID_ENTER();
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        x[i] += y[i];
}

__global__ static void k_swiglu(float *g, const float *u, int64_t n)
{
    GRID_ENTER();
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        g[i] = swiglu_lane(g[i], u[i]);
}

/* ------------------------------------------------------------ qwen35 */

__global__ static void k_split_qgate(const float *qfull, int64_t n_tok, int n_head, int64_t hd, float *q, float *gate)
{
    GRID_ENTER();
    const int64_t qd = (int64_t)n_head * hd, n = n_tok * qd;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t t = i / qd, h = (i % qd) / hd, d = i % hd;
        const float *src = qfull + t * 2 * qd + 2 * h * hd;
        q[i] = src[d];
        gate[i] = src[hd + d];
    }
}

/* qwen35.c's sigmoid and its delta-net gates, by the C library's expf and
 * logf (engine_math.h's copies of them): sigmoid(x) = 1 / (1 + exp(-x)),
 * softplus(x) = x above 20, else log(1 + exp(x)), the decay of a value head
 * exp(softplus(alpha + dt_bias) * a). */
__device__ static float sigmoid_libm(float x) { return 1.0f / (1.0f + vt_libm_expf(0.0f - x)); }

__device__ static float decay_libm(float alpha, float dt_bias, float a)
{
    const float x = alpha + dt_bias;
    const float softplus = x > 20.0f ? x : vt_libm_logf(1.0f + vt_libm_expf(x));
    return vt_libm_expf(softplus * a);
}

/* The attention's output times sigmoid(gate). */
__global__ static void k_mul_sigmoid(float *x, const float *gate, int64_t n)
{
    GRID_ENTER();
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        x[i] = x[i] * sigmoid_libm(gate[i]);
}

/* vt_q35_conv1d: one thread per channel, its taps in order from 0. */
__global__ static void k_conv1d(const float *x, int64_t ldx, int64_t n_tok, const float *w, int K, float *state,
                                int64_t C, float *y, int64_t ldy)
{
    GRID_ENTER();
    for (int64_t c = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; c < C; c += (int64_t)gridDim.x * blockDim.x) {
        float win[8]; /* indexed by unrolled loops only (K, 1 .. 8, at run time): registers, not the stack */
        const int H = K - 1;
        float *hist = state + c * H;
        const float *wc = w + c * K;
#pragma unroll
        for (int i = 0; i < 8; i++)
            win[i] = i < H ? hist[i] : 0.0f;
        for (int64_t t = 0; t < n_tok; t++) {
            const float xt = x[t * ldx + c];
#pragma unroll
            for (int i = 0; i < 8; i++)
                win[i] = i == H ? xt : win[i];
            float sum = 0.0f;
#pragma unroll
            for (int i = 0; i < 8; i++)
                if (i < K)
                    sum = fmaf(win[i], wc[i], sum);
            y[t * ldy + c] = sum;
#pragma unroll
            for (int i = 0; i < 7; i++)
                if (i < H)
                    win[i] = win[i + 1];
        }
#pragma unroll
        for (int i = 0; i < 7; i++)
            if (i < H)
                hist[i] = win[i];
    }
}

/* ggml_vec_silu_f32 over rows of n, a multiple of 16 (its vectorised part:
 * the rest of a row would take the C library's expf, which the device
 * does not have). */
__global__ static void k_silu_rows(float *x, int64_t rows, int64_t n)
{
    GRID_ENTER();
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < rows * n; i += (int64_t)gridDim.x * blockDim.x) {
        const float v = x[i];
        x[i] = v / (1.0f + expf16_body(0.0f - v));
    }
}

/* vt_q35_l2norm over vectors of d at x + t * ld + k * d (k < per_tok): the
 * squares into shared memory (d floats), summed as the serial loop does. */
__global__ static void k_l2norm(float *x, int64_t ld, int per_tok, int64_t d, float eps)
{
    GRID_ENTER();
    extern __shared__ float sq[];
    __shared__ float scale_s;
    float *v = x + (int64_t)(blockIdx.x / per_tok) * ld + (int64_t)(blockIdx.x % per_tok) * d;
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x)
        sq[i] = v[i] * v[i];
    __syncthreads();
    const float mean = mean_square_as_serial(sq, d);
    if (threadIdx.x == 0) {
        scale_s = 1.0f / sqrtf(mean + eps / (float)d);
    }
    __syncthreads();
    const float s = 1.0f / sqrtf((float)d);
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
        const float y = v[i] * scale_s;
        v[i] = y * s;
    }
}

/* One token's k_conv1d, k_silu_rows and k_l2norm in one launch: a block
 * of d threads per d channels (C a multiple of d), each thread its
 * channel's taps in order from 0, then SiLU, as those kernels; the first
 * n_norm blocks (the Q and K heads) then L2-norm their vector as
 * k_l2norm does (mean_square_as_serial: the serial mean at any block size).
 * The block after the channels' turns the token's gates in place into
 * sigmoid(beta) and the decay, k_delta_rows' expressions, so that the rule
 * reads them instead of working them out on its chain. */
__global__ static void k_conv_silu_l2norm(const float *x, const float *w, int K, float *state, int n_norm, int64_t d,
                                          float eps, float *y, vt_gpu_delta_gates gates, int64_t nv)
{
    GRID_ENTER();
    extern __shared__ float sq[];
    __shared__ float scale_s;
    if (blockIdx.x == gridDim.x - 1) {
        for (int64_t h = threadIdx.x; h < nv; h += blockDim.x) {
            gates.alpha[h] = decay_libm(gates.alpha[h], gates.dt_bias[h], gates.a[h]);
            gates.beta[h] = sigmoid_libm(gates.beta[h]);
        }
        return;
    }
    const int64_t c = (int64_t)blockIdx.x * d + threadIdx.x;
    const int H = K - 1;
    float win[8]; /* indexed by unrolled loops only, as k_conv1d's */
    float *hist = state + c * H;
    const float *wc = w + c * K;
    const float xc = x[c];
#pragma unroll
    for (int i = 0; i < 8; i++)
        win[i] = i < H ? hist[i] : i == H ? xc : 0.0f;
    float sum = 0.0f;
#pragma unroll
    for (int i = 0; i < 8; i++)
        if (i < K)
            sum = fmaf(win[i], wc[i], sum);
#pragma unroll
    for (int i = 0; i < 7; i++)
        if (i < H)
            hist[i] = win[i + 1];
    const float v = sum / (1.0f + expf16_body(0.0f - sum));
    if ((int)blockIdx.x >= n_norm) {
        y[c] = v;
        return; /* the whole block: V's channels */
    }
    sq[threadIdx.x] = v * v;
    __syncthreads();
    const float mean = mean_square_as_serial(sq, d);
    if (threadIdx.x == 0)
        scale_s = 1.0f / sqrtf(mean + eps / (float)d);
    __syncthreads();
    const float s = 1.0f / sqrtf((float)d);
    const float scaled = v * scale_s;
    y[c] = scaled * s;
}

/* vt_q35_delta_rule: one block of 4 warps per value head, token after
 * token; the state (ggml's transposed S, d x d) in device memory. */
__global__ static void k_delta_rule(float *states, int64_t d, const float *conv, int64_t C, int64_t key_dim,
                                    int64_t n_k_heads, vt_gpu_delta_gates gates, int64_t nv, int64_t n_tok, float *o,
                                    int64_t ldo)
{
    GRID_ENTER();
    extern __shared__ float delta[];
    const int64_t h = blockIdx.x, kh = h % n_k_heads;
    float *s = states + h * d * d;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    const float scale = 1.0f / sqrtf((float)d);
    for (int64_t t = 0; t < n_tok; t++) {
        const float *q = conv + t * C + kh * d, *k = conv + t * C + key_dim + kh * d;
        const float *v = conv + t * C + 2 * key_dim + h * d;
        const float al = gates.alpha[t * nv + h], be = gates.beta[t * nv + h];
        const float decay = gates.done ? al : decay_libm(al, gates.dt_bias[h], gates.a[h]);
        const float b = gates.done ? be : sigmoid_libm(be);
        for (int64_t i = threadIdx.x; i < d * d; i += blockDim.x)
            s[i] *= decay;
        __syncthreads();
        for (int64_t j = warp; j < d; j += warps) {
            const float p = warp_dot_f32(s + j * d, NO_PAD, k, d, lane, VT_ACT_F32);
            if (lane == 0)
                delta[j] = (v[j] - p) * b;
        }
        __syncthreads();
        for (int64_t i = threadIdx.x; i < d * d; i += blockDim.x)
            s[i] = fmaf(k[i % d], delta[i / d], s[i]);
        __syncthreads();
        for (int64_t j = warp; j < d; j += warps) {
            const float p = warp_dot_f32(s + j * d, NO_PAD, q, d, lane, VT_ACT_F32);
            if (lane == 0)
                o[t * ldo + h * d + j] = p * scale;
        }
        __syncthreads();
    }
}

/* The same recurrence a row of S at a time: row j's step reads only row
 * j, k, q and v_j, so one warp per (head, row), every row at once, the row
 * in registers across the batch's tokens. Lane L holds elements 64m + L
 * (r[2m]) and 64m + 32 + L (r[2m + 1]): the two partial sums of
 * warp_dot_f32 over their own elements, so each dot, update and product
 * is k_delta_rule's. Heads of d = 32 E, a multiple of 64. */
template <int E>
__global__ static void __launch_bounds__(256)
    k_delta_rows(float *states, int64_t d, const float *conv, int64_t C, int64_t key_dim, int64_t n_k_heads,
                 vt_gpu_delta_gates gates, int64_t nv, int64_t n_tok, float *o, int64_t ldo)
{
    GRID_ENTER();
    const int lane = threadIdx.x & 31;
    const int64_t w = (int64_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    if (w >= nv * d)
        return; /* a whole warp */
    const int64_t h = w / d, j = w % d, kh = h % n_k_heads;
    float *row = states + h * d * d + j * d;
    float r[E];
#pragma unroll
    for (int m = 0; m < E; m++)
        r[m] = row[(m >> 1) * 64 + (m & 1) * 32 + lane];
    const float scale = 1.0f / sqrtf((float)d);
    for (int64_t t = 0; t < n_tok; t++) {
        const float *q = conv + t * C + kh * d, *k = conv + t * C + key_dim + kh * d;
        const float v = conv[t * C + 2 * key_dim + h * d + j];
        const float al = gates.alpha[t * nv + h], be = gates.beta[t * nv + h];
        const float decay = gates.done ? al : decay_libm(al, gates.dt_bias[h], gates.a[h]);
        const float b = gates.done ? be : sigmoid_libm(be);
        float kk[E], qq[E];
#pragma unroll
        for (int m = 0; m < E; m++) {
            kk[m] = k[(m >> 1) * 64 + (m & 1) * 32 + lane];
            qq[m] = q[(m >> 1) * 64 + (m & 1) * 32 + lane];
        }
#pragma unroll
        for (int m = 0; m < E; m++)
            r[m] *= decay;
        float sa = 0.0f, sb = 0.0f;
#pragma unroll
        for (int m = 0; m < E; m += 2) {
            sa = fmaf(r[m], kk[m], sa);
            sb = fmaf(r[m + 1], kk[m + 1], sb);
        }
        const float p = warp_tree64(sa, sb);
        const float delta = SHFL((v - p) * b, 0, 32);
#pragma unroll
        for (int m = 0; m < E; m++)
            r[m] = fmaf(kk[m], delta, r[m]);
        sa = sb = 0.0f;
#pragma unroll
        for (int m = 0; m < E; m += 2) {
            sa = fmaf(r[m], qq[m], sa);
            sb = fmaf(r[m + 1], qq[m + 1], sb);
        }
        const float p2 = warp_tree64(sa, sb);
        if (lane == 0)
            o[t * ldo + h * d + j] = p2 * scale;
    }
#pragma unroll
    for (int m = 0; m < E; m++)
        row[(m >> 1) * 64 + (m & 1) * 32 + lane] = r[m];
}

/* Gated RMSNorm per head: o = rmsnorm(o) * w * silu(z), vectors of d (a
 * multiple of 16, as k_silu_rows); the squares summed as k_l2norm's. */
__global__ static void k_gated_norm(float *o, float *z, const float *w, int64_t d, float eps)
{
    GRID_ENTER();
    extern __shared__ float sq[];
    __shared__ float scale_s;
    float *ov = o + (int64_t)blockIdx.x * d, *zv = z + (int64_t)blockIdx.x * d;
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x)
        sq[i] = ov[i] * ov[i];
    __syncthreads();
    const float mean = mean_square_as_serial(sq, d);
    if (threadIdx.x == 0) {
        scale_s = 1.0f / sqrtf(mean + eps);
    }
    __syncthreads();
    for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
        const float y = ov[i] * scale_s * w[i];
        const float zz = zv[i];
        const float sz = zz / (1.0f + expf16_body(0.0f - zz));
        zv[i] = sz;
        ov[i] = y * sz;
    }
}

/* ------------------------------------------------------------ launchers */

/* A kernel of the forward pass launched (GRID_WAIT and GRID_RELEASE in
 * it, on every path): on CUDA with programmatic dependent launch it may
 * start while the kernel ahead runs (g->pdl: every kernel so, or only the
 * products); plain otherwise, and after a copy or a host function (only a
 * kernel ahead lets it start). */
template <typename... P, typename... A>
static int launch_early(vt_gpu *g, int product, void (*k)(P...), unsigned blocks, unsigned threads, size_t shm,
                        const char *name, vt_error *err, A... args)
{
#if !defined(__HIP_PLATFORM_AMD__)
    if (g->after_kernel && (g->pdl == PDL_ALL || (g->pdl == PDL_PRODUCTS && product))) {
        cudaLaunchConfig_t cfg;
        memset(&cfg, 0, sizeof cfg);
        cudaLaunchAttribute early;
        memset(&early, 0, sizeof early);
        early.id = cudaLaunchAttributeProgrammaticStreamSerialization;
        early.val.programmaticStreamSerializationAllowed = 1;
        cfg.gridDim = dim3(blocks);
        cfg.blockDim = dim3(threads);
        cfg.dynamicSmemBytes = shm;
        cfg.stream = g->stream;
        cfg.attrs = &early;
        cfg.numAttrs = 1;
        TRY(cudaLaunchKernelEx(&cfg, k, args...), "cudaLaunchKernelEx");
        LAUNCHED(name);
        return VT_OK;
    }
#else
    (void)product;
#endif
    k<<<blocks, threads, shm, g->stream>>>(args...);
    LAUNCHED(name);
    return VT_OK;
}

static unsigned grid_for(int64_t n, int threads)
{
    const int64_t b = (n + threads - 1) / threads;
    return (unsigned)(b < 1 ? 1 : b > 65535 ? 65535 : b);
}

/* The floor a decode step's launches set before any work: a graph of n
 * kernels that do nothing but what every step kernel does first (let the
 * next start, wait for the one ahead: GRID_ENTER), launched as the step's
 * are (launch_early: early where the step's are), replayed. One thread
 * counts into *tick so that no launch is empty to the compiler. */
__global__ static void k_floor(unsigned *tick)
{
    GRID_ENTER();
    if (blockIdx.x == 0 && threadIdx.x == 0)
        tick[0]++;
}

/* The best mean time (us) of a replay of graph x: five timed batches of
 * replays after one untimed. */
static int time_replays(vt_gpu *g, vt_gpu_graph *x, int replays, double *us, vt_error *err)
{
    hipEvent_t t0 = NULL, t1 = NULL;
    hipError_t e = hipEventCreate(&t0);
    if (e == hipSuccess)
        e = hipEventCreate(&t1);
    int rc = VT_OK;
    double best = 0;
    for (int pass = 0; rc == VT_OK && e == hipSuccess && pass < 6; pass++) { /* pass 0 warms up */
        hipEventRecord(t0, g->stream);
        for (int r = 0; rc == VT_OK && r < replays; r++)
            rc = vt_gpu_graph_launch(g, x, err);
        if (rc == VT_OK && (e = hipEventRecord(t1, g->stream)) == hipSuccess)
            e = hipEventSynchronize(t1);
        float ms = 0;
        if (rc == VT_OK && e == hipSuccess && (e = hipEventElapsedTime(&ms, t0, t1)) == hipSuccess && pass > 0 &&
            (best == 0 || ms * 1e3 / replays < best))
            best = ms * 1e3 / replays;
    }
    if (rc == VT_OK && e != hipSuccess)
        rc = fail(err, e, "timing replays");
    if (t0)
        hipEventDestroy(t0);
    if (t1)
        hipEventDestroy(t1);
    if (rc == VT_OK)
        *us = best;
    return rc;
}

extern "C" int vt_gpu_launch_floor(vt_gpu *g, int n, unsigned blocks, unsigned threads, int replays, double *us,
                                   vt_error *err)
{
    if (n < 1 || replays < 1 || blocks < 1 || threads < 1 || threads > 1024)
        return vt_error_set(err, VT_EINPUT, "launch floor: n %d, replays %d, blocks %u, threads %u: expected "
                            "each at least 1, threads at most 1024", n, replays, blocks, threads);
    unsigned *tick = (unsigned *)vt_gpu_malloc(g, sizeof *tick, err);
    if (!tick)
        return err->code;
    vt_gpu_graph *x = NULL;
    int rc = vt_gpu_capture_begin(g, err);
    for (int i = 0; rc == VT_OK && i < n; i++)
        rc = launch_early(g, 1, k_floor, blocks, threads, 0, "k_floor", err, tick);
    if (rc == VT_OK || g->capturing)
        rc = vt_gpu_capture_end(g, rc, &x, err);
    if (rc == VT_OK)
        rc = time_replays(g, x, replays, us, err);
    vt_gpu_graph_free(g, x);
    vt_gpu_mfree(g, tick);
    return rc;
}

/* What a grid-wide barrier costs inside one kernel (the step as one
 * persistent kernel would pay one between each of its dependent phases):
 * n barriers in a row, each every block's threads meeting (__syncthreads),
 * thread 0 adding one to a counter in global memory and reading it back
 * until every block of the barrier has added, the block meeting again.
 * The blocks must all be resident at once (blocks at most the
 * multiprocessors, no other work): a spin that outlasts 2^22 reads sets
 * sync[2] and gives up rather than hang. The last block out zeroes the
 * counters for the next replay. */
__global__ static void k_barriers(unsigned *sync, int n)
{
    const unsigned blocks = gridDim.x;
    volatile unsigned *count = sync;
    for (int k = 0; k < n; k++) {
        __syncthreads();
        if (threadIdx.x == 0) {
            __threadfence();
            atomicAdd(&sync[0], 1u);
            const unsigned target = (unsigned)(k + 1) * blocks;
            unsigned spins = 0;
            while (*count < target && ++spins < (1u << 22))
                ;
            if (spins >= (1u << 22))
                atomicExch(&sync[2], 1u);
            __threadfence();
        }
        __syncthreads();
    }
    if (threadIdx.x == 0 && atomicAdd(&sync[1], 1u) == blocks - 1) {
        sync[0] = 0;
        sync[1] = 0;
    }
}

extern "C" int vt_gpu_multiprocessors(const vt_gpu *g) { return g->sms; }

extern "C" int vt_gpu_barrier_floor(vt_gpu *g, int n, unsigned blocks, unsigned threads, int replays, double *us,
                                    vt_error *err)
{
    if (n < 1 || replays < 1 || blocks < 1 || (int)blocks > g->sms || threads < 1 || threads > 1024)
        return vt_error_set(err, VT_EINPUT, "barrier floor: n %d, replays %d, blocks %u, threads %u: expected "
                            "each at least 1, blocks at most the %d multiprocessors, threads at most 1024", n,
                            replays, blocks, threads, g->sms);
    unsigned *sync = (unsigned *)vt_gpu_malloc(g, 3 * sizeof *sync, err);
    if (!sync)
        return err->code;
    vt_gpu_graph *x = NULL;
    unsigned fault = 0;
    int rc = vt_gpu_zero(g, sync, 3 * sizeof *sync, err);
    if (rc == VT_OK)
        rc = vt_gpu_capture_begin(g, err);
    if (rc == VT_OK)
        rc = launch_early(g, 1, k_barriers, blocks, threads, 0, "k_barriers", err, sync, n);
    if (rc == VT_OK || g->capturing)
        rc = vt_gpu_capture_end(g, rc, &x, err);
    if (rc == VT_OK)
        rc = time_replays(g, x, replays, us, err);
    if (rc == VT_OK)
        rc = vt_gpu_to_host(g, &fault, sync + 2, sizeof fault, err);
    if (rc == VT_OK && fault)
        rc = vt_error_set(err, VT_EINPUT, "barrier floor: %u blocks were not all resident at once", blocks);
    vt_gpu_graph_free(g, x);
    vt_gpu_mfree(g, sync);
    return rc;
}

extern "C" int vt_gpu_embed(vt_gpu *g, const vt_gpu_mat *w, const int64_t *ids, int64_t n_tok, float *x, vt_error *err)
{
    const vt_codec *c = vt_codec_by_type(w->type);
    if (!c || !c->decode_f32)
        return vt_error_set(err, VT_EINPUT, "gpu embed: type %d: expected a decodable codec", w->type);
    const int64_t bpr = w->cols / c->block_elems;
    return launch_early(g, 0, k_embed, grid_for(n_tok * bpr, 128), 128, 0, "k_embed", err, w->type, w->data,
                        w->row_bytes, c->block_elems, c->block_bytes, bpr, ids, n_tok, x, g->grids);
}

/* x_out = x + y, out = RMSNorm(x_out) * w (x_out may be x). */
static int add_rmsnorm_to(vt_gpu *g, const float *x, const float *y, float *x_out, float *out, const float *w,
                          int64_t rows, int64_t n, float eps, vt_error *err)
{
    if (rows <= 0)
        return VT_OK;
    const size_t shm = (size_t)n * sizeof(float);
    if (shm > 96 * 1024)
        return vt_error_set(err, VT_EINPUT, "gpu rmsnorm: rows of %lld: expected at most 24576", (long long)n);
    const int aligned =
        n % 4 == 0 && ((uintptr_t)x | (uintptr_t)y | (uintptr_t)x_out | (uintptr_t)out | (uintptr_t)w) % 16 == 0;
    const int K = (int)((n / 4 + 255) / 256); /* float4 a thread, 256 threads */
    if (aligned && K <= 4) {
        void (*k)(const float *, const float *, float *, float *, const float *, int64_t, float) =
            K == 1 ? k_add_rmsnorm_regs<1> : K == 2 ? k_add_rmsnorm_regs<2> : k_add_rmsnorm_regs<4>;
        return launch_early(g, 0, k, (unsigned)rows, 256, shm, "k_add_rmsnorm_regs", err, x, y, x_out, out, w, n,
                            eps);
    }
    if (shm_allow(g, (const void *)k_add_rmsnorm, shm, err))
        return err->code;
    return launch_early(g, 0, k_add_rmsnorm, (unsigned)rows, 256, shm, "k_add_rmsnorm", err, x, y, x_out, out, w, n,
                        eps);
}

extern "C" int vt_gpu_add_rmsnorm(vt_gpu *g, float *x, const float *y, float *out, const float *w, int64_t rows,
                                  int64_t n, float eps, vt_error *err)
{
    return add_rmsnorm_to(g, x, y, x, out, w, rows, n, eps, err);
}

extern "C" int vt_gpu_rmsnorm_rows(vt_gpu *g, float *out, const float *x, const float *w, int64_t rows, int64_t n,
                                   float eps, vt_error *err)
{
    if (rows <= 0)
        return VT_OK;
    const size_t shm = (size_t)n * sizeof(float);
    if (shm > 96 * 1024)
        return vt_error_set(err, VT_EINPUT, "gpu rmsnorm: rows of %lld: expected at most 24576", (long long)n);
    if (shm_allow(g, (const void *)k_rmsnorm, shm, err))
        return err->code;
    return launch_early(g, 0, k_rmsnorm, (unsigned)rows, 256, shm, "k_rmsnorm", err, out, x, w, n, eps);
}

/* --matmul q8 (codec_intdot.h): each activation block quantized by one
 * thread, as the CPU quantizes it (Q8_0, Q8_1 or Q8_K blocks). */
__device__ static inline int64_t act_block_elems(int act) { return act == VT_ACT_Q8_K ? 256 : 32; }

__host__ __device__ static inline size_t act_block_bytes(int act)
{
    return act == VT_ACT_Q8_K ? VT_Q8_K_BYTES : act == VT_ACT_Q8_1 ? VT_Q8_1_BYTES : VT_Q8_0_BYTES;
}

__global__ static void k_act_blocks(const float *x, int64_t n_tok, int64_t cols, int act, uint8_t *dst)
{
    const int64_t be = act_block_elems(act);
    const size_t bb = act_block_bytes(act);
    const int64_t nb = cols / be;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n_tok * nb;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t t = i / nb, b = i % nb;
        const float *src = x + t * cols + b * be;
        uint8_t *out = dst + (size_t)(t * nb + b) * bb;
        if (act == VT_ACT_Q8_K)
            vt_q8_k_block_write(src, out);
        else if (act == VT_ACT_Q8_1)
            vt_q8_1_block_write(src, out);
        else
            vt_q8_0_block_write(src, out);
    }
}

/* The activation rounded through F16 or BF16 (the dot types of those weights). */
__global__ static void k_act_round(const float *x, float *y, int64_t n, int act)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        y[i] = act_in(x, i, act);
}

/* One thread per (output, token): the whole row's integer block product,
 * the CPU's body (codec_intdot.h's vt_int_dot), in ggml's repacked order
 * where the CPU takes it (vt_int_dot_r8). */
__global__ static void k_matmul_int(int type, int r8, const uint8_t *w, size_t row_bytes, int64_t rows, int64_t nb,
                                    const uint8_t *xq, size_t xrow, int64_t n_tok, float *y, int64_t ldy,
                                    vt_iq_grids g)
{
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < rows * n_tok;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t t = i / rows, o = i % rows;
        y[t * ldy + o] = vt_int_dot(type, r8, w + (size_t)o * row_bytes, xq + (size_t)t * xrow, nb, &g);
    }
}

extern "C" void vt_gpu_set_matmul(vt_gpu *g, int matmul) { g->matmul = matmul; }
extern "C" int vt_gpu_matmul_of(const vt_gpu *g) { return g->matmul; }

/* Every weight type whose activation is a Q8 block type has its integer
 * product in vt_int_dot (the codec table's act column, the same rows as the
 * CPU's int_kernels). */
static int int_type(int type)
{
    const vt_codec *c = vt_codec_by_type(type);
    return c && (c->act == VT_ACT_Q8_0 || c->act == VT_ACT_Q8_1 || c->act == VT_ACT_Q8_K);
}

extern "C" int vt_gpu_matmul_supported(int type, int matmul, vt_error *err)
{
    const vt_codec *c = vt_codec_by_type(type);
    if (c && c->matrix_weight)
        return VT_OK; /* exact: the F32 product; q8: vt_int_dot or the rounded activation */
    (void)matmul;
    return vt_error_set(err, VT_EINPUT, "gpu: --matmul q8: type %d (%s): no product on the GPU: expected a matrix "
                        "weight type", type, c ? c->name : "?");
}

static int scratch(vt_gpu *g, size_t bytes, vt_error *err)
{
    if (bytes <= g->xq_cap)
        return VT_OK;
    if (g->xq)
        TRY(hipFree(g->xq), "hipFree");
    g->xq = NULL;
    g->xq_cap = 0;
    g->xq_generation++;
    TRY(hipMalloc((void **)&g->xq, bytes), "hipMalloc");
    g->xq_cap = bytes;
    return VT_OK;
}

extern "C" int vt_gpu_reserve(vt_gpu *g, size_t bytes, vt_error *err)
{
    TRY(hipSetDevice(g->device), "hipSetDevice");
    return scratch(g, bytes, err);
}

/* k_matvec's shared memory per warp: the row's floats (padded, rounded up
 * to 16 bytes), then its bytes (rounded up to 16). */
static size_t matvec_warp_bytes(const vt_gpu_mat *w, int *s, int64_t *span, size_t *raw)
{
    const vt_codec *c = vt_codec_by_type(w->type);
    *s = c->block_elems >= 32 ? __builtin_ctzll((unsigned long long)c->block_elems) : NO_PAD;
    *span = *s == NO_PAD ? w->cols : w->cols + (w->cols >> *s);
    *raw = (w->row_bytes + 15) / 16 * 16;
    return (size_t)((*span + 3) & ~3) * sizeof(float) + *raw;
}

static int matvec_fits(const vt_gpu_mat *w, int64_t n_tok)
{
    int s;
    int64_t span;
    size_t raw;
    return n_tok <= MATVEC_MAX_TOK && matvec_kernel_of(w->type) &&
           matvec_warp_bytes(w, &s, &span, &raw) <= 48 * 1024;
}

/* The parts of one product launch; *rows: their rows together. */
static mv_parts parts_of(const vt_gpu_mat *const *ws, int n, float *const *ys, const int64_t *ldys, int64_t *rows)
{
    mv_parts parts;
    memset(&parts, 0, sizeof parts);
    parts.n = n;
    *rows = 0;
    for (int i = 0; i < n; i++) {
        parts.data[i] = ws[i]->data;
        parts.rows[i] = ws[i]->rows;
        parts.y[i] = ys[i];
        parts.ldy[i] = ldys[i];
        *rows += ws[i]->rows;
    }
    return parts;
}

/* n matrices of one codec and width (matvec_fits each) over x, one launch;
 * x read through act_in (act: VT_ACT_F16 or _BF16 for those weights' q8
 * products, else VT_ACT_F32). */
static int matvec(vt_gpu *g, const vt_gpu_mat *const *ws, int n, const float *x, int act, int64_t n_tok,
                  float *const *ys, const int64_t *ldys, vt_error *err)
{
    const vt_gpu_mat *w = ws[0];
    const vt_codec *c = vt_codec_by_type(w->type);
    int s;
    int64_t span, rows = 0;
    size_t raw;
    const size_t per_warp = matvec_warp_bytes(w, &s, &span, &raw);
    const mv_parts parts = parts_of(ws, n, ys, ldys, &rows);
    const size_t per = (48 * 1024) / per_warp;
    const int warps = per > 8 ? 8 : (int)per;
    const unsigned blocks = (unsigned)((rows + warps - 1) / warps);
    return launch_early(g, 1, matvec_kernel_of(w->type), blocks, 32 * warps, warps * per_warp, "k_matvec", err, parts,
                        w->row_bytes, w->cols, c->block_elems, c->block_bytes, s, span, raw, x, act, n_tok, g->grids);
}

/* k_matvec_int's shared memory: the activation, then the warps' rows. */
static size_t int_matvec_xspan(size_t xrow, int64_t n_tok) { return (xrow * (size_t)n_tok + 15) / 16 * 16; }

static int int_matvec_warps(size_t row_bytes, size_t xrow, int64_t n_tok)
{
    const size_t xspan = int_matvec_xspan(xrow, n_tok);
    if (xspan >= 48 * 1024)
        return 0;
    const size_t w = (48 * 1024 - xspan) / row_bytes;
    return w > 8 ? 8 : (int)w;
}

/* Whether k_matvec_int takes these matrices (*xrow: its activation bytes a
 * token): one codec and width, Q8_0 or Q4_K in the repacked order, rows of
 * whole 16-byte words, at most MATVEC_MAX_TOK tokens, the activation and a
 * row within 48 KiB. */
static int int_matvec_fits(const vt_gpu *g, const vt_gpu_mat *const *ws, int n, int64_t n_tok, size_t *xrow)
{
    const int type = ws[0]->type;
    if (g->matmul != VT_MATMUL_Q8 || n < 1 || n > MATVEC_MAX_PARTS || n_tok < 1 || n_tok > MATVEC_MAX_TOK ||
        (type != VT_TYPE_Q8_0 && type != VT_TYPE_Q4_K))
        return 0;
    const int64_t be = type == VT_TYPE_Q4_K ? 256 : 32;
    for (int i = 0; i < n; i++)
        if (ws[i]->type != type || ws[i]->cols != ws[0]->cols || ws[i]->cols % be ||
            (type == VT_TYPE_Q4_K && !vt_int_dot_r8(type, ws[i]->tensor_rows)))
            return 0;
    *xrow = (size_t)(ws[0]->cols / be) * (type == VT_TYPE_Q4_K ? VT_Q8_K_BYTES : VT_Q8_0_BYTES);
    return ws[0]->row_bytes % 16 == 0 && int_matvec_warps(ws[0]->row_bytes, *xrow, n_tok) >= 1;
}

/* The rows a block of the one-token kernels (k_mv1_q8_0, k_mv1_q4_k) for
 * a product of rows rows of w's codec and width (nb blocks a row), *shm
 * its shared memory; 0 where they do not apply (then k_matvec_int). */
static int mv1_rows_per_block(const vt_gpu *g, const vt_gpu_mat *w, int64_t nb, int64_t rows, int64_t n_tok,
                              const float *x, size_t *shm)
{
    if (n_tok != 1 || !g->mv1 || ((uintptr_t)x & 15) != 0)
        return 0;
    int R = 0;
    if (w->type == VT_TYPE_Q8_0) {
        /* eight rows a block where there are many, else two (more blocks, so
         * the smaller matrices still reach every multiprocessor); 16: the
         * output head */
        R = rows > 65536 ? 16 : rows >= 4096 ? 8 : 2;
        *shm = mv1_shm(R, w->row_bytes, w->cols, nb);
    } else if (w->type == VT_TYPE_Q4_K) {
        /* about one (row, superblock, sub-block) a thread; 16: the output head */
        R = rows > 65536 ? 16 : nb <= 4 ? 8 : nb <= 8 ? 4 : 2;
        *shm = mv1_q4_k_shm(R, w->row_bytes, nb);
    }
    return R && *shm <= 48 * 1024 ? R : 0;
}

/* R doubled, up to 16, while a Q8_0 or Q4_K product of rows rows would
 * launch more than g->mv1_max_blocks blocks (*shm made again): the trace
 * of every block (docs/bench-gpu.txt 2026-12-07 07:46) shows the last
 * blocks of the 512- and 927-block products reaching their wait 2 and 8 us
 * after it was released, their row copies on the step's critical path
 * (Q4_K's 768-block gate|up: 9.4 us, 2026-12-07 09:33). */
static int mv1_fewer_blocks(const vt_gpu *g, const vt_gpu_mat *w, int64_t nb, int64_t rows, int R, size_t *shm)
{
    if (!g->mv1_max_blocks || (w->type != VT_TYPE_Q8_0 && w->type != VT_TYPE_Q4_K) || R < 2 || R > 8)
        return R;
    int r = R;
    while (r < 16 && (rows + r - 1) / r > g->mv1_max_blocks)
        r *= 2;
    if (r != R) {
        const size_t s = w->type == VT_TYPE_Q4_K ? mv1_q4_k_shm(r, w->row_bytes, nb)
                                                 : mv1_shm(r, w->row_bytes, w->cols, nb);
        if (s > 48 * 1024)
            return R;
        *shm = s;
    }
    return r;
}

/* The rows a block of a one-token Q8_0 or Q4_K product and its shared
 * memory (*shm): mv1_rows_per_block's choice, then mv1_fewer_blocks's;
 * pair: a gate|up product with SwiGLU, whose blocks hold R / 2 rows of
 * each, so two rows a block are not raised (its launches take 4 to 16).
 * 0: the product does not fit these kernels. */
static int mv1_rows(const vt_gpu *g, const vt_gpu_mat *w, int64_t nb, int64_t rows, int64_t n_tok, const float *x,
                    int pair, size_t *shm)
{
    const int R = mv1_rows_per_block(g, w, nb, rows, n_tok, x, shm);
    return pair && R < 4 ? R : mv1_fewer_blocks(g, w, nb, rows, R, shm);
}

/* The one-token kernel of R rows a block with epilogue EPI. */
template <int R, int EPI>
static int mv1_launch(vt_gpu *g, const vt_gpu_mat *w, const mv_parts &parts, int64_t rows, int64_t nb, const float *x,
                      size_t shm, const char *name, vt_error *err)
{
    const unsigned blocks = (unsigned)((rows + R - 1) / R);
    const vt_gpu_add_norm none = {};
    if (w->type == VT_TYPE_Q4_K)
        return launch_early(g, 1, k_mv1_q4_k<R, EPI, 0>, blocks, MV1_THREADS, shm, name ? name : "k_mv1_q4_k", err,
                            parts, w->row_bytes, nb, x, rows, none);
    return launch_early(g, 1, k_mv1_q8_0<R, EPI, 0>, blocks, MV1_THREADS, shm, name ? name : "k_mv1_q8_0", err, parts,
                        w->row_bytes, nb, x, rows, none);
}

/* k_mv1_q8_0 of R rows a block taking the add and norm an into its launch
 * (add_norm_fits; shm: the plain kernel's, the squares' added here). */
template <int R>
static int mv1_launch_norm(vt_gpu *g, const vt_gpu_mat *w, const mv_parts &parts, int64_t rows, int64_t nb,
                           size_t shm, const vt_gpu_add_norm *an, vt_error *err)
{
    const unsigned blocks = (unsigned)((rows + R - 1) / R);
    return launch_early(g, 1, k_mv1_q8_0<R, MV1_PLAIN, 1>, blocks, MV1_THREADS, shm + mv1_squares_shm(w->cols),
                        "k_mv1_q8_0_norm", err, parts, w->row_bytes, nb, an->x, rows, *an);
}

/* The same for Q4_K (k_mv1_q4_k's NORM, EPI: plain or the gate|up pair's
 * SwiGLU; shm: the plain kernel's, the squares' added here). */
template <int R, int EPI>
static int mv1_launch_norm_q4_k(vt_gpu *g, const vt_gpu_mat *w, const mv_parts &parts, int64_t rows, int64_t nb,
                                size_t shm, const vt_gpu_add_norm *an, vt_error *err)
{
    const unsigned blocks = (unsigned)((rows + R - 1) / R);
    return launch_early(g, 1, k_mv1_q4_k<R, EPI, 1>, blocks, MV1_THREADS, shm + mv1_squares_shm(w->cols),
                        EPI == MV1_SWIGLU ? "k_mv1_q4_k_swiglu_norm" : "k_mv1_q4_k_norm", err, parts, w->row_bytes,
                        nb, an->x, rows, *an);
}

/* The blocks to launch of kernel k (k_mv1_*_warps) of threads threads with
 * shm bytes of shared memory, into *blocks: need, or as many as are
 * resident on the device at once if fewer (asked once for each kernel and
 * size: a step launches several); k allowed that shared memory. */
static int warps_blocks(vt_gpu *g, const void *k, int threads, size_t shm, int64_t need, unsigned *blocks,
                        vt_error *err)
{
    int rc = shm_allow(g, k, shm, err);
    if (rc)
        return rc;
    const int cap = (int)(sizeof g->resident / sizeof g->resident[0]);
    int i = 0;
    while (i < g->n_resident &&
           (g->resident[i].fn != k || g->resident[i].shm != shm || g->resident[i].threads != threads))
        i++;
    if (i == g->n_resident) {
        int per_sm = 0;
        TRY(hipOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, k, threads, shm),
            "hipOccupancyMaxActiveBlocksPerMultiprocessor");
        i = g->n_resident < cap ? g->n_resident++ : cap - 1; /* a fixed few kernels and sizes: not reached */
        g->resident[i].fn = k;
        g->resident[i].threads = threads;
        g->resident[i].shm = shm;
        g->resident[i].blocks = (unsigned)(per_sm < 1 ? 1 : per_sm) * (unsigned)g->sms;
    }
    *blocks = need < (int64_t)g->resident[i].blocks ? (unsigned)need : g->resident[i].blocks;
    return VT_OK;
}

/* A one-token product a warp at a time, as many blocks as are resident at
 * once: Q8_0 by k_mv1_q8_0_warps (the output head: rows a multiple of
 * MV1W_ROWS, of whole 16-byte words, four of them in the words a lane
 * holds: WORDS 9 (rows of up to 1152 bytes) or 17 (2176); pair: gate and
 * up of equal rows of up to 1152 bytes, SwiGLU of the two into gate's y);
 * Q4_K's output head by k_mv1_q4_k_warps. 1 if launched (or failed: *rc),
 * 0 where it does not apply. */
static int mv1_warps(vt_gpu *g, const vt_gpu_mat *w, const mv_parts &parts, int64_t rows, int64_t nb, int64_t n_tok,
                     const float *x, int pair, const vt_gpu_add_norm *an, int *rc, vt_error *err)
{
    if (!g->head_warps || !g->mv1 || g->sms < 1 || n_tok != 1 || ((uintptr_t)x & 15) != 0 || w->row_bytes % 16 ||
        (an && !pair))
        return 0;
    if (w->type == VT_TYPE_Q4_K && !pair && rows > 65536 && parts.n == 1 && nb >= 1 && nb <= 32 &&
        (nb & (nb - 1)) == 0) {
        const size_t shm = mv1w_q4_k_shm(nb);
        const int64_t per = 32 / nb; /* rows a group */
        unsigned blocks = 0;
        if ((*rc = warps_blocks(g, (const void *)k_mv1_q4_k_warps, MV1_THREADS, shm,
                                (rows + per * MV1W_WARPS - 1) / (per * MV1W_WARPS), &blocks, err)))
            return 1;
        *rc = launch_early(g, 1, k_mv1_q4_k_warps, blocks, MV1_THREADS, shm, "k_mv1_q4_k_warps", err, parts.data[0],
                           w->row_bytes, nb, x, rows, parts.y[0]);
        return 1;
    }
    /* Q8_0: the output head, and gate and up with SwiGLU (rows of up to 1152
     * bytes). Measured on b06-Q8_0 (docs/bench-gpu.txt, 2026-12-06 13:06):
     * Q|K|V as fast as k_mv1_q8_0<8>, and o and down slower (their 256
     * groups fill 32 blocks), so those stay with k_mv1_q8_0. */
    if (w->type != VT_TYPE_Q8_0 || (pair && (parts.n != 2 || parts.rows[0] != parts.rows[1] || parts.rows[0] % 2)) ||
        (!pair && (rows <= 65536 || parts.n != 1 || rows % MV1W_ROWS)))
        return 0;
    const size_t group_words = MV1W_ROWS * w->row_bytes / 16;
    void (*k)(mv_parts, size_t, int64_t, const float *, int64_t, vt_gpu_add_norm) =
        group_words <= 9 * 32 ? (pair ? (an ? k_mv1_q8_0_warps<9, 1, 1> : k_mv1_q8_0_warps<9, 1, 0>)
                                      : k_mv1_q8_0_warps<9, 0, 0>)
        : group_words <= 17 * 32 && !pair ? k_mv1_q8_0_warps<17, 0, 0>
                                          : NULL;
    const size_t shm = mv1w_shm(w->row_bytes, nb) + (an ? mv1_squares_shm(w->cols) : 0);
    const int64_t groups = pair ? parts.rows[0] / 2 : rows / MV1W_ROWS;
    if (!k || shm > 160 * 1024 || !groups)
        return 0;
    unsigned blocks = 0;
    if ((*rc = warps_blocks(g, (const void *)k, MV1_THREADS, shm, (groups + MV1W_WARPS - 1) / MV1W_WARPS, &blocks,
                            err)))
        return 1;
    const vt_gpu_add_norm none = {};
    *rc = launch_early(g, 1, k, blocks, MV1_THREADS, shm,
                       an ? "k_mv1_q8_0_swiglu_norm" : pair ? "k_mv1_q8_0_swiglu" : "k_mv1_q8_0_warps", err, parts,
                       w->row_bytes, nb, x, groups, an ? *an : none);
    return 1;
}

static int int_matvec(vt_gpu *g, const vt_gpu_mat *const *ws, int n, const float *x, int64_t n_tok, float *const *ys,
                      const int64_t *ldys, size_t xrow, vt_error *err)
{
    const vt_gpu_mat *w = ws[0];
    const vt_codec *c = vt_codec_by_type(w->type);
    int64_t rows = 0;
    const mv_parts parts = parts_of(ws, n, ys, ldys, &rows);
    const int64_t nb = w->cols / c->block_elems;
    int rc = VT_OK;
    if (mv1_warps(g, w, parts, rows, nb, n_tok, x, 0, NULL, &rc, err))
        return rc;
    size_t shm1 = 0;
    const int R = mv1_rows(g, w, nb, rows, n_tok, x, 0, &shm1);
    if (R)
        return R == 16 ? mv1_launch<16, MV1_PLAIN>(g, w, parts, rows, nb, x, shm1, NULL, err)
               : R == 8 ? mv1_launch<8, MV1_PLAIN>(g, w, parts, rows, nb, x, shm1, NULL, err)
               : R == 4 ? mv1_launch<4, MV1_PLAIN>(g, w, parts, rows, nb, x, shm1, NULL, err)
                        : mv1_launch<2, MV1_PLAIN>(g, w, parts, rows, nb, x, shm1, NULL, err);
    const int warps = int_matvec_warps(w->row_bytes, xrow, n_tok);
    const int rpw = rows > 65536 ? 4 : 1; /* the output head */
    const unsigned blocks = (unsigned)((rows + (int64_t)warps * rpw - 1) / ((int64_t)warps * rpw));
    const size_t xspan = int_matvec_xspan(xrow, n_tok), shm = xspan + (size_t)warps * w->row_bytes;
    if (w->type == VT_TYPE_Q4_K)
        return launch_early(g, 1, k_matvec_int<VT_TYPE_Q4_K>, blocks, 32 * warps, shm, "k_matvec_int", err, parts,
                            w->row_bytes, nb, x, w->cols, n_tok, xrow, xspan, w->row_bytes, rpw);
    return launch_early(g, 1, k_matvec_int<VT_TYPE_Q8_0>, blocks, 32 * warps, shm, "k_matvec_int", err, parts,
                        w->row_bytes, nb, x, w->cols, n_tok, xrow, xspan, w->row_bytes, rpw);
}

/* A one-token BF16 product by k_mv1_bf16_warps (up to three matrices of
 * rows of 1024, 2048 or 3072, each a multiple of the rows a group; the
 * output head and the layers' products), x read through act_in, as many
 * blocks as are resident at once: 1 if launched (or failed: *rc), 0 where
 * it does not apply (k_matvec does). */
static int bf16_warps(vt_gpu *g, const vt_gpu_mat *const *ws, int n, const float *x, int act, int64_t n_tok,
                      float *const *ys, int pair, int *rc, vt_error *err)
{
    const vt_gpu_mat *w = ws[0];
    if (!g->head_warps || g->sms < 1 || n < 1 || n > MATVEC_MAX_PARTS || w->type != VT_TYPE_BF16 || n_tok != 1 ||
        (w->cols != 1024 && w->cols != 2048 && w->cols != 3072) || (pair && (n != 2 || w->cols != 1024)))
        return 0;
    const int R = w->cols == 3072 ? 1 : 2; /* rows a group: a lane's words and activation in registers */
    for (int i = 0; i < n; i++)
        if (ws[i]->type != VT_TYPE_BF16 || ws[i]->cols != w->cols || ws[i]->row_bytes != (size_t)w->cols * 2 ||
            ws[i]->rows % R || (pair && ws[i]->rows != w->rows))
            return 0;
    void (*k)(mv_parts, const float *, int, int64_t) = pair               ? k_mv1_bf16_warps<32, 2, 1>
                                                       : w->cols == 1024 ? k_mv1_bf16_warps<32, 2, 0>
                                                       : w->cols == 2048 ? k_mv1_bf16_warps<64, 2, 0>
                                                                         : k_mv1_bf16_warps<96, 1, 0>;
    static const int64_t ones[MATVEC_MAX_PARTS] = { 1, 1, 1, 1 };
    int64_t rows = 0;
    const mv_parts parts = parts_of(ws, n, ys, ones, &rows);
    const int64_t groups = pair ? w->rows : rows / R;
    if (!groups)
        return 0;
    /* warps a block: the most that still give at least two blocks a
     * multiprocessor (o's 512 groups: one; the head's: eight), since
     * fewer, fuller blocks leave multiprocessors idle (docs/bench-gpu.txt
     * 2026-12-06 12:57: o in 64 blocks, down in 128) */
    int wpb = MV1W_WARPS;
    while (wpb > 1 && (groups + wpb - 1) / wpb < 2 * (int64_t)g->sms)
        wpb /= 2;
    const size_t shm = (size_t)wpb * (size_t)R * w->row_bytes;
    unsigned blocks = 0;
    if ((*rc = warps_blocks(g, (const void *)k, 32 * wpb, shm, (groups + wpb - 1) / wpb, &blocks, err)))
        return 1;
    *rc = launch_early(g, 1, k, blocks, 32 * wpb, shm, pair ? "k_mv1_bf16_swiglu" : "k_mv1_bf16_warps", err, parts,
                       x, act, groups);
    return 1;
}

extern "C" int vt_gpu_matmul(vt_gpu *g, const vt_gpu_mat *w, const float *x, int64_t n_tok, float *y, int64_t ldy,
                             vt_error *err)
{
    const vt_codec *c = vt_codec_by_type(w->type);
    if (!c || !c->decode_f32)
        return vt_error_set(err, VT_EINPUT, "gpu matmul: type %d: expected a decodable codec", w->type);
    if (w->cols % 64 || (size_t)w->cols * 4 > 96 * 1024)
        return vt_error_set(err, VT_EINPUT, "gpu matmul: rows of %lld: expected a multiple of 64, at most 24576",
                            (long long)w->cols);
    if (n_tok <= 0)
        return VT_OK;
    if (g->matmul == VT_MATMUL_Q8 && c->act != VT_ACT_F32) {
        int rc = vt_gpu_matmul_supported(w->type, g->matmul, err);
        if (rc)
            return rc;
        size_t xr;
        if (int_matvec_fits(g, &w, 1, n_tok, &xr))
            return int_matvec(g, &w, 1, x, n_tok, &y, &ldy, xr, err);
        if (int_type(w->type)) {
            const int64_t be = c->act == VT_ACT_Q8_K ? 256 : 32;
            const size_t xrow = (size_t)(w->cols / be) * act_block_bytes(c->act);
            if (w->cols % be)
                return vt_error_set(err, VT_EINPUT, "gpu matmul: rows of %lld: expected a multiple of %lld",
                                    (long long)w->cols, (long long)be);
            if ((rc = scratch(g, xrow * (size_t)n_tok, err)))
                return rc;
            k_act_blocks<<<grid_for(n_tok * (w->cols / be), 128), 128, 0, g->stream>>>(x, n_tok, w->cols, c->act,
                                                                                      g->xq);
            LAUNCHED("k_act_blocks");
            /* 32 threads a block: a decode step's few thousand rows spread
             * over as many multiprocessors as they can. */
            k_matmul_int<<<grid_for(w->rows * n_tok, 32), 32, 0, g->stream>>>(
                w->type, vt_int_dot_r8(w->type, w->tensor_rows), w->data, w->row_bytes, w->rows,
                w->cols / c->block_elems, g->xq, xrow, n_tok, y, ldy, g->grids);
            LAUNCHED("k_matmul_int");
            return VT_OK;
        }
        /* F16, BF16: the product of the rounded activation (a few tokens:
         * rounded as k_matvec reads it, no launch of its own). */
        if (bf16_warps(g, &w, 1, x, c->act, n_tok, &y, 0, &rc, err))
            return rc;
        if (matvec_fits(w, n_tok)) {
            float *ys[1] = { y };
            return matvec(g, &w, 1, x, c->act, n_tok, ys, &ldy, err);
        }
        if ((rc = scratch(g, (size_t)(n_tok * w->cols) * sizeof(float), err)))
            return rc;
        k_act_round<<<grid_for(n_tok * w->cols, 256), 256, 0, g->stream>>>(x, (float *)g->xq, n_tok * w->cols,
                                                                            c->act);
        LAUNCHED("k_act_round");
        x = (const float *)g->xq;
    }
    /* A few tokens: a warp per row, the row decoded by blocks side by side. */
    int rc = VT_OK;
    if (bf16_warps(g, &w, 1, x, VT_ACT_F32, n_tok, &y, 0, &rc, err))
        return rc;
    if (matvec_fits(w, n_tok)) {
        float *ys[1] = { y };
        return matvec(g, &w, 1, x, VT_ACT_F32, n_tok, ys, &ldy, err);
    }
    const size_t shm = (size_t)w->cols * sizeof(float);
    if (shm_allow(g, (const void *)k_matmul, shm, err))
        return err->code;
    k_matmul<<<(unsigned)w->rows, 256, shm, g->stream>>>(w->type, w->data, w->row_bytes, w->cols, c->block_elems,
                                                          c->block_bytes, x, n_tok, y, ldy, g->grids);
    LAUNCHED("k_matmul");
    return VT_OK;
}

/* The activation a product of codec c's weights reads: the codec's (F16,
 * BF16: rounded so) in q8 mode, as is in exact mode. */
static int product_act(const vt_gpu *g, const vt_codec *c) { return g->matmul == VT_MATMUL_Q8 ? c->act : VT_ACT_F32; }

extern "C" int vt_gpu_matmul_group(vt_gpu *g, const vt_gpu_mat *const *ws, int n, const float *x, int64_t n_tok,
                                   float *const *ys, const int64_t *ldys, vt_error *err)
{
    size_t xrow;
    if (int_matvec_fits(g, ws, n, n_tok, &xrow))
        return int_matvec(g, ws, n, x, n_tok, ys, ldys, xrow, err);
    int one = n >= 1 && n <= MATVEC_MAX_PARTS, act = VT_ACT_F32;
    for (int i = 0; one && i < n; i++) {
        const vt_codec *c = vt_codec_by_type(ws[i]->type);
        one = matvec_fits(ws[i], n_tok) && ws[i]->type == ws[0]->type && ws[i]->cols == ws[0]->cols &&
              ws[i]->cols % 64 == 0 && c && c->decode_f32 &&
              (g->matmul == VT_MATMUL_EXACT || c->act == VT_ACT_F32 || c->act == VT_ACT_F16 || c->act == VT_ACT_BF16);
        if (one)
            act = product_act(g, c);
    }
    if (one && act != VT_ACT_F32) {
        int rc = vt_gpu_matmul_supported(ws[0]->type, g->matmul, err);
        if (rc)
            return rc;
    }
    int rc = VT_OK;
    if (one && bf16_warps(g, ws, n, x, act, n_tok, ys, 0, &rc, err))
        return rc;
    if (one && n_tok > 0)
        return matvec(g, ws, n, x, act, n_tok, ys, ldys, err);
    for (int i = 0; i < n; i++)
        if ((rc = vt_gpu_matmul(g, ws[i], x, n_tok, ys[i], ldys[i], err)))
            return rc;
    return VT_OK;
}

extern "C" int vt_gpu_qk_norm_rope_store(vt_gpu *g, const vt_gpu_kv *kv, int layer, int64_t n_tok, float *q,
                                         int64_t ldq, float *k, int64_t ldk, const float *v, int64_t ldv, int n_head,
                                         int n_head_kv, int64_t hd, const float *qw, const float *kw, float eps,
                                         const float *cs, int64_t n_rot, vt_error *err)
{
    if (hd > VT_GPU_MAX_HEAD)
        return vt_error_set(err, VT_EINPUT, "gpu rope: heads of %lld: expected at most %d", (long long)hd,
                            VT_GPU_MAX_HEAD);
    if (n_rot < 0 || n_rot > hd || n_rot % 2)
        return vt_error_set(err, VT_EINPUT, "gpu rope: %lld rotated of %lld: expected an even count <= head size",
                            (long long)n_rot, (long long)hd);
    return launch_early(g, 0, k_qk_norm_rope_store, (unsigned)(n_tok * (n_head + n_head_kv)), QK_THREADS, 0,
                        "k_qk_norm_rope_store", err, *kv, layer, q, ldq, k, ldk, v, ldv, n_head, n_head_kv, hd, qw, kw,
                        eps, cs, n_rot);
}

/* The one-token attention's scratch where it takes two kernels, g->att: a
 * ticket a head (ATT_TICKETS of them first, zeroed when it is allocated,
 * each back to zero after its launch), the scores (n_head rows of ld) and
 * the 64 accumulators of each output. */
#define ATT_TICKETS 1024

/* k_att_cluster<HD, QK> where the device has clusters (g->att_cluster) and
 * heads are 64 or 128 wide: 1 if launched (or failed: *rc), 0 where it
 * does not apply. Heads of 256 (b08-Q8_0) measured 1 % slower this way
 * than by the two kernels (docs/bench-gpu.txt 2026-12-07 01:29), so that
 * instantiation is never made. */
template <int HD, bool QK>
static int att_cluster_launch(vt_gpu *g, const vt_gpu_kv *kv, int layer, int32_t keys_max, int n_head, int n_head_kv,
                              const float *q, float *out, att_qk qk, int *rc, vt_error *err)
{
#if !defined(__HIP_PLATFORM_AMD__)
    if constexpr (HD <= 128) {
        const int64_t ld = ((int64_t)keys_max + 15) / 16 * 16;
        const size_t shm = (size_t)(16 * HD + 2 * ld + ld / 16 + ATV_THREADS / 32) * sizeof(float);
        if (!g->att_cluster || shm > 160 * 1024)
            return 0;
        if ((*rc = shm_allow(g, (const void *)k_att_cluster<HD, QK>, shm, err)) == VT_OK)
            *rc = launch_early(g, 0, k_att_cluster<HD, QK>, (unsigned)(n_head * ATV_GROUPS), ATV_THREADS, shm,
                               QK ? "k_att_cluster_qk" : "k_att_cluster", err, *kv, layer, n_head, n_head_kv, q, out,
                               qk, g->att_l1v ? (int32_t)INT32_MAX : (int32_t)0);
        return 1;
    }
#endif
    (void)g, (void)kv, (void)layer, (void)keys_max, (void)n_head, (void)n_head_kv, (void)q, (void)out, (void)qk;
    (void)rc, (void)err;
    return 0;
}

/* The one-token attention (heads of 64, 128 or 256) by k_att_cluster<HD,
 * false> where that applies, else by k_att_scores and k_att_softmax_v<HD>:
 * 1 if launched (or failed: *rc), 0 where neither applies. */
template <int HD>
static int att_split_launch(vt_gpu *g, const vt_gpu_kv *kv, int layer, int32_t keys_max, int n_head, int n_head_kv,
                            const float *q, float *out, int *rc, vt_error *err)
{
    const int64_t ld = ((int64_t)keys_max + 15) / 16 * 16;
    if (att_cluster_launch<HD, false>(g, kv, layer, keys_max, n_head, n_head_kv, q, out, att_qk{}, rc, err))
        return 1;
    const size_t shm = (size_t)(ld + ld / 16 + ATV_THREADS / 32) * sizeof(float);
    const size_t tickets_bytes = ATT_TICKETS * sizeof(int);
    const size_t scores_bytes = (size_t)n_head * (size_t)ld * sizeof(float);
    const size_t bytes = tickets_bytes + scores_bytes + (size_t)n_head * 64 * HD * sizeof(float);
    if (shm > 160 * 1024 || n_head > ATT_TICKETS)
        return 0;
    if (bytes > g->att_cap) {
        hipError_t e = hipSuccess;
        if (g->att)
            e = hipFree(g->att);
        g->att = NULL;
        g->att_cap = 0;
        g->xq_generation++;
        if (e == hipSuccess)
            e = hipMalloc((void **)&g->att, bytes);
        if (e == hipSuccess) /* a memset node of the graph where this is its capture */
            e = hipMemsetAsync(g->att, 0, tickets_bytes, g->stream);
        if (e != hipSuccess) {
            *rc = fail(err, e, "gpu attention scratch");
            return 1;
        }
        g->after_kernel = 0;
        g->att_cap = bytes;
    }
    int *tickets = (int *)g->att;
    float *scores = (float *)(g->att + tickets_bytes), *acc = (float *)(g->att + tickets_bytes + scores_bytes);
    *rc = launch_early(g, 0, k_att_scores, (unsigned)(n_head * ATS_SPLIT), ATS_THREADS, 0, "k_att_scores", err, *kv,
                       layer, n_head, n_head_kv, (int64_t)HD, q, scores, ld);
    if (*rc == VT_OK && (*rc = shm_allow(g, (const void *)k_att_softmax_v<HD>, shm, err)) == VT_OK)
        *rc = launch_early(g, 0, k_att_softmax_v<HD>, (unsigned)(n_head * ATV_GROUPS), ATV_THREADS, shm,
                           "k_att_softmax_v", err, *kv, layer, n_head, n_head_kv, (const float *)scores, ld, acc,
                           tickets, out);
    return 1;
}

extern "C" int vt_gpu_attention(vt_gpu *g, const vt_gpu_kv *kv, int layer, int32_t keys_max, int64_t n_tok,
                                int n_head, int n_head_kv, int64_t hd, const float *q, int64_t ldq, float *out,
                                int64_t ldo, vt_error *err)
{
    int rc = VT_OK;
    if (n_tok == 1 && n_head % n_head_kv == 0 &&
        (hd == 128   ? att_split_launch<128>(g, kv, layer, keys_max, n_head, n_head_kv, q, out, &rc, err)
         : hd == 256 ? att_split_launch<256>(g, kv, layer, keys_max, n_head, n_head_kv, q, out, &rc, err)
         : hd == 64  ? att_split_launch<64>(g, kv, layer, keys_max, n_head, n_head_kv, q, out, &rc, err)
                     : 0))
        return rc;
    const int64_t n16 = ((int64_t)keys_max + 15) / 16 * 16;
    const size_t shm = (size_t)(hd + n16 + n16 / 16 + 48 * ATT_DN + ATT_THREADS / 32) * sizeof(float);
    if (shm > 160 * 1024)
        return vt_error_set(err, VT_EINPUT, "gpu attention: %lld keys: expected at most about 32000",
                            (long long)keys_max);
    if (shm_allow(g, (const void *)k_attention, shm, err))
        return err->code;
    return launch_early(g, 0, k_attention, (unsigned)(n_tok * n_head), ATT_THREADS, shm, "k_attention", err, *kv,
                        layer, n_head, n_head_kv, hd, q, ldq, out, ldo);
}

extern "C" int vt_gpu_qk_norm_rope_attention(vt_gpu *g, const vt_gpu_kv *kv, int layer, int32_t keys_max,
                                             int64_t n_tok, float *q, int64_t ldq, float *k, int64_t ldk,
                                             const float *v, int64_t ldv, int n_head, int n_head_kv, int64_t hd,
                                             const float *qw, const float *kw, float eps, const float *cs,
                                             int64_t n_rot, float *out, int64_t ldo, vt_error *err)
{
    int rc = VT_OK;
    const att_qk qk = { k, v, qw, kw, cs, eps, n_rot };
    if (g->att_qk && n_tok == 1 && n_head % n_head_kv == 0 && n_rot >= 0 && n_rot <= hd && n_rot % 2 == 0 &&
        (hd == 128  ? att_cluster_launch<128, true>(g, kv, layer, keys_max, n_head, n_head_kv, q, out, qk, &rc, err)
         : hd == 64 ? att_cluster_launch<64, true>(g, kv, layer, keys_max, n_head, n_head_kv, q, out, qk, &rc, err)
                    : 0))
        return rc;
    if ((rc = vt_gpu_qk_norm_rope_store(g, kv, layer, n_tok, q, ldq, k, ldk, v, ldv, n_head, n_head_kv, hd, qw, kw,
                                        eps, cs, n_rot, err)))
        return rc;
    return vt_gpu_attention(g, kv, layer, keys_max, n_tok, n_head, n_head_kv, hd, q, ldq, out, ldo, err);
}

extern "C" int vt_gpu_add(vt_gpu *g, float *x, const float *y, int64_t n, vt_error *err)
{
    return launch_early(g, 0, k_add, grid_for(n, 256), 256, 0, "k_add", err, x, y, n);
}

/* The feed-forward's gate and up products of one token and SwiGLU in one
 * launch where the one-token kernels apply (k_mv1_*'s MV1_SWIGLU: each
 * block's gate rows and the same up rows, then swiglu_lane of the two, the
 * same bits as the three steps; BF16: k_mv1_bf16_warps's PAIR, a warp's
 * gate row and up row); else the grouped product and k_swiglu.
 * gate[] (n_tok rows of wg->rows) gets the result; up[] is scratch. */
extern "C" int vt_gpu_gate_up_swiglu(vt_gpu *g, const vt_gpu_mat *wg, const vt_gpu_mat *wu, const float *x,
                                     int64_t n_tok, float *gate, float *up, vt_error *err)
{
    const vt_gpu_mat *ws[2] = { wg, wu };
    float *const ys[2] = { gate, up };
    const int64_t lds[2] = { wg->rows, wg->rows };
    size_t xrow, shm = 0;
    if (g->pair_swiglu && n_tok == 1 && wg->type == wu->type && wg->rows == wu->rows && wg->cols == wu->cols &&
        int_matvec_fits(g, ws, 2, n_tok, &xrow)) {
        const vt_codec *c = vt_codec_by_type(wg->type);
        const int64_t nb = wg->cols / c->block_elems;
        int64_t rows = 0;
        mv_parts parts = parts_of(ws, 2, ys, lds, &rows);
        int rc = VT_OK;
        if (mv1_warps(g, wg, parts, rows, nb, n_tok, x, 1, NULL, &rc, err))
            return rc;
        const int R = mv1_rows(g, wg, nb, rows, n_tok, x, 1, &shm);
        if ((R == 16 || R == 8 || R == 4) && wg->rows % (R / 2) == 0) {
            return R == 16  ? mv1_launch<16, MV1_SWIGLU>(g, wg, parts, rows, nb, x, shm, "k_mv1_swiglu", err)
                   : R == 8 ? mv1_launch<8, MV1_SWIGLU>(g, wg, parts, rows, nb, x, shm, "k_mv1_swiglu", err)
                            : mv1_launch<4, MV1_SWIGLU>(g, wg, parts, rows, nb, x, shm, "k_mv1_swiglu", err);
        }
    }
    int rc = VT_OK;
    if (g->pair_swiglu && wg->type == VT_TYPE_BF16 && wu->type == VT_TYPE_BF16) {
        const int act = product_act(g, vt_codec_by_type(wg->type));
        if (act != VT_ACT_F32 && (rc = vt_gpu_matmul_supported(wg->type, g->matmul, err)))
            return rc;
        if (bf16_warps(g, ws, 2, x, act, n_tok, ys, 1, &rc, err))
            return rc;
    }
    rc = vt_gpu_matmul_group(g, ws, 2, x, n_tok, ys, lds, err);
    return rc ? rc : vt_gpu_swiglu(g, gate, up, n_tok, wg->rows, err);
}

/* Whether one-token products of ws take the add and norm an into their
 * launch: Q8_0 products by k_mv1_q8_0 / k_mv1_q8_0_warps, Q4_K by
 * k_mv1_q4_k (int_matvec_fits, VT_GPU_MV1, VT_GPU_ADD_NORM), rows of at
 * most 8 MV1_THREADS (a thread's eight elements), every vector 16-byte
 * aligned, x_out apart from x and y. */
static int add_norm_fits(const vt_gpu *g, const vt_gpu_add_norm *an, const vt_gpu_mat *const *ws, int n,
                         int64_t n_tok)
{
    size_t xrow;
    const int64_t cols = ws[0]->cols;
    return g->add_norm && g->mv1 && n_tok == 1 && (ws[0]->type == VT_TYPE_Q8_0 || ws[0]->type == VT_TYPE_Q4_K) &&
           cols % 32 == 0 &&
           cols <= 8 * MV1_THREADS && int_matvec_fits(g, ws, n, n_tok, &xrow) && an->x_out != an->x &&
           an->x_out != an->y &&
           (((uintptr_t)an->x | (uintptr_t)an->y | (uintptr_t)an->x_out | (uintptr_t)an->w) & 15) == 0;
}

extern "C" int vt_gpu_add_norm_alone(vt_gpu *g, const vt_gpu_add_norm *an, int64_t rows, int64_t n, vt_error *err)
{
    return add_rmsnorm_to(g, an->x, an->y, an->x_out, an->xn, an->w, rows, n, an->eps, err);
}

extern "C" int vt_gpu_add_norm_matmul_group(vt_gpu *g, const vt_gpu_add_norm *an, const vt_gpu_mat *const *ws, int n,
                                            int64_t n_tok, float *const *ys, const int64_t *ldys, vt_error *err)
{
    if (n >= 1 && add_norm_fits(g, an, ws, n, n_tok) && ws[0]->type == VT_TYPE_Q4_K) {
        const vt_gpu_mat *w = ws[0];
        const int64_t nb = w->cols / 256;
        int64_t rows = 0;
        const mv_parts parts = parts_of(ws, n, ys, ldys, &rows);
        size_t shm = 0;
        const int R = mv1_rows(g, w, nb, rows, n_tok, an->x, 0, &shm); /* 16: the output head's */
        if ((R == 16 || R == 8 || R == 4 || R == 2) && shm + mv1_squares_shm(w->cols) <= 48 * 1024)
            return R == 16  ? mv1_launch_norm_q4_k<16, MV1_PLAIN>(g, w, parts, rows, nb, shm, an, err)
                   : R == 8 ? mv1_launch_norm_q4_k<8, MV1_PLAIN>(g, w, parts, rows, nb, shm, an, err)
                   : R == 4 ? mv1_launch_norm_q4_k<4, MV1_PLAIN>(g, w, parts, rows, nb, shm, an, err)
                            : mv1_launch_norm_q4_k<2, MV1_PLAIN>(g, w, parts, rows, nb, shm, an, err);
    } else if (n >= 1 && add_norm_fits(g, an, ws, n, n_tok)) {
        const vt_gpu_mat *w = ws[0];
        const int64_t nb = w->cols / 32;
        int64_t rows = 0;
        const mv_parts parts = parts_of(ws, n, ys, ldys, &rows);
        size_t shm = 0;
        const int R = mv1_rows(g, w, nb, rows, n_tok, an->x, 0, &shm); /* 16: the output head's */
        if ((R == 16 || R == 8 || R == 4 || R == 2) && shm + mv1_squares_shm(w->cols) <= 48 * 1024)
            return R == 16 ? mv1_launch_norm<16>(g, w, parts, rows, nb, shm, an, err)
                   : R == 8 ? mv1_launch_norm<8>(g, w, parts, rows, nb, shm, an, err)
                   : R == 4 ? mv1_launch_norm<4>(g, w, parts, rows, nb, shm, an, err)
                            : mv1_launch_norm<2>(g, w, parts, rows, nb, shm, an, err);
    }
    const int rc = vt_gpu_add_norm_alone(g, an, n_tok, ws[0]->cols, err);
    return rc ? rc : vt_gpu_matmul_group(g, ws, n, an->xn, n_tok, ys, ldys, err);
}

extern "C" int vt_gpu_add_norm_gate_up_swiglu(vt_gpu *g, const vt_gpu_add_norm *an, const vt_gpu_mat *wg,
                                              const vt_gpu_mat *wu, int64_t n_tok, float *gate, float *up,
                                              vt_error *err)
{
    const vt_gpu_mat *ws[2] = { wg, wu };
    if (g->pair_swiglu && add_norm_fits(g, an, ws, 2, n_tok)) { /* one codec and width; mv1_warps: equal rows */
        float *const ys[2] = { gate, up };
        const int64_t lds[2] = { wg->rows, wg->rows };
        int64_t rows = 0;
        const mv_parts parts = parts_of(ws, 2, ys, lds, &rows);
        int rc = VT_OK;
        if (wg->type == VT_TYPE_Q4_K && wg->rows == wu->rows) {
            /* as vt_gpu_gate_up_swiglu's k_mv1_swiglu: R / 2 gate rows and their up rows a block */
            const int64_t nb = wg->cols / 256;
            size_t shm = 0;
            const int R = mv1_rows(g, wg, nb, rows, n_tok, an->x, 1, &shm);
            if ((R == 16 || R == 8 || R == 4) && wg->rows % (R / 2) == 0 &&
                shm + mv1_squares_shm(wg->cols) <= 48 * 1024)
                return R == 16  ? mv1_launch_norm_q4_k<16, MV1_SWIGLU>(g, wg, parts, rows, nb, shm, an, err)
                       : R == 8 ? mv1_launch_norm_q4_k<8, MV1_SWIGLU>(g, wg, parts, rows, nb, shm, an, err)
                                : mv1_launch_norm_q4_k<4, MV1_SWIGLU>(g, wg, parts, rows, nb, shm, an, err);
        } else if (mv1_warps(g, wg, parts, rows, wg->cols / 32, n_tok, an->x, 1, an, &rc, err))
            return rc;
    }
    const int rc = vt_gpu_add_norm_alone(g, an, n_tok, wg->cols, err);
    return rc ? rc : vt_gpu_gate_up_swiglu(g, wg, wu, an->xn, n_tok, gate, up, err);
}

extern "C" int vt_gpu_swiglu(vt_gpu *g, float *gate, const float *up, int64_t rows, int64_t n, vt_error *err)
{
    if (n % 16)
        return vt_error_set(err, VT_EINPUT, "gpu swiglu: rows of %lld: expected a multiple of 16", (long long)n);
    return launch_early(g, 0, k_swiglu, grid_for(rows * n, 256), 256, 0, "k_swiglu", err, gate, up, rows * n);
}

extern "C" int vt_gpu_split_qgate(vt_gpu *g, const float *qfull, int64_t n_tok, int n_head, int64_t hd, float *q,
                                  float *gate, vt_error *err)
{
    return launch_early(g, 0, k_split_qgate, grid_for(n_tok * n_head * hd, 256), 256, 0, "k_split_qgate", err, qfull,
                        n_tok, n_head, hd, q, gate);
}

extern "C" int vt_gpu_mul_sigmoid(vt_gpu *g, float *x, const float *gate, int64_t n, vt_error *err)
{
    return launch_early(g, 0, k_mul_sigmoid, grid_for(n, 256), 256, 0, "k_mul_sigmoid", err, x, gate, n);
}

extern "C" int vt_gpu_conv1d(vt_gpu *g, const float *x, int64_t ldx, int64_t n_tok, const float *w, int K,
                             float *state, int64_t C, float *y, int64_t ldy, vt_error *err)
{
    if (K < 1 || K > 8)
        return vt_error_set(err, VT_EINPUT, "gpu conv1d: %d taps: expected 1 .. 8", K);
    return launch_early(g, 0, k_conv1d, grid_for(C, 128), 128, 0, "k_conv1d", err, x, ldx, n_tok, w, K, state, C, y,
                        ldy);
}

extern "C" int vt_gpu_silu_rows(vt_gpu *g, float *x, int64_t rows, int64_t n, vt_error *err)
{
    if (n % 16)
        return vt_error_set(err, VT_EINPUT, "gpu silu: rows of %lld: expected a multiple of 16", (long long)n);
    return launch_early(g, 0, k_silu_rows, grid_for(rows * n, 256), 256, 0, "k_silu_rows", err, x, rows, n);
}

extern "C" int vt_gpu_l2norm(vt_gpu *g, float *x, int64_t n_tok, int64_t ld, int per_tok, int64_t d, float eps,
                             vt_error *err)
{
    if (d > 12288)
        return vt_error_set(err, VT_EINPUT, "gpu l2norm: vectors of %lld: expected at most 12288", (long long)d);
    return launch_early(g, 0, k_l2norm, (unsigned)(n_tok * per_tok), 64, (size_t)d * sizeof(float), "k_l2norm", err, x,
                        ld, per_tok, d, eps);
}

extern "C" int vt_gpu_conv_silu_l2norm(vt_gpu *g, const float *x, int64_t n_tok, const float *w, int K, float *state,
                                       int64_t C, int n_norm, int64_t d, float eps, float *y,
                                       vt_gpu_delta_gates *gates, int64_t nv, vt_error *err)
{
    if (n_tok != 1 || K < 1 || K > 8 || d < 32 || d > 1024 || d % 32 || C % d || n_norm < 0 || n_norm > C / d) {
        int rc = vt_gpu_conv1d(g, x, C, n_tok, w, K, state, C, y, C, err);
        if (!rc)
            rc = vt_gpu_silu_rows(g, y, n_tok, C, err);
        return rc ? rc : vt_gpu_l2norm(g, y, n_tok, C, n_norm, d, eps, err);
    }
    gates->done = 1;
    return launch_early(g, 0, k_conv_silu_l2norm, (unsigned)(C / d + 1), (unsigned)d, (size_t)d * sizeof(float),
                        "k_conv_silu_l2norm", err, x, w, K, state, n_norm, d, eps, y, *gates, nv);
}

extern "C" int vt_gpu_delta_rule(vt_gpu *g, float *states, int64_t d, const float *conv, int64_t C, int64_t key_dim,
                                 int64_t n_k_heads, vt_gpu_delta_gates gates, int64_t nv, int64_t n_tok, float *o,
                                 int64_t ldo, vt_error *err)
{
    void (*rows)(float *, int64_t, const float *, int64_t, int64_t, int64_t, vt_gpu_delta_gates, int64_t, int64_t,
                 float *, int64_t) = d == 64    ? k_delta_rows<2>
                                              : d == 128 ? k_delta_rows<4>
                                              : d == 192 ? k_delta_rows<6>
                                              : d == 256 ? k_delta_rows<8>
                                                         : NULL;
    if (rows) { /* a warp per row, 8 a block */
        return launch_early(g, 0, rows, (unsigned)((nv * d + 7) / 8), 256, 0, "k_delta_rows", err, states, d, conv, C,
                            key_dim, n_k_heads, gates, nv, n_tok, o, ldo);
    }
    return launch_early(g, 0, k_delta_rule, (unsigned)nv, 128, (size_t)d * sizeof(float), "k_delta_rule", err, states,
                        d, conv, C, key_dim, n_k_heads, gates, nv, n_tok, o, ldo);
}

extern "C" int vt_gpu_gated_norm(vt_gpu *g, float *o, float *z, const float *w, int64_t n_vec, int64_t d, float eps,
                                 vt_error *err)
{
    if (d % 16)
        return vt_error_set(err, VT_EINPUT, "gpu gated norm: heads of %lld: expected a multiple of 16", (long long)d);
    if (d > 12288)
        return vt_error_set(err, VT_EINPUT, "gpu gated norm: heads of %lld: expected at most 12288", (long long)d);
    return launch_early(g, 0, k_gated_norm, (unsigned)n_vec, 64, (size_t)d * sizeof(float), "k_gated_norm", err, o, z,
                        w, d, eps);
}

extern "C" int vt_gpu_zero(vt_gpu *g, void *p, size_t bytes, vt_error *err)
{
    g->after_kernel = 0;
    TRY(hipMemsetAsync(p, 0, bytes, g->stream), "hipMemsetAsync");
    return VT_OK;
}
