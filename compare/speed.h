/* Runner speed side by side: two runners (the engine and its anchor,
 * llama.cpp) timed on the same GGUF with the same settings in one process,
 * alternately, so both see the same machine; and the machine's read
 * bandwidth measured in the same run, which bounds a decode step (every
 * weight read once per token).
 *
 * Each run is one vt_runner_generate of G greedy tokens after a P-token
 * prompt, through a thin timing layer over the runner's table (runner.h)
 * that times each eval with CLOCK_MONOTONIC:
 *   prefill  the first eval after the reset: the P prompt tokens in one
 *            batch (n_batch = P), P / seconds;
 *   decode   every later eval: G - 1 single-token steps, (G - 1) / seconds.
 * Each runner first generates once to warm up (page cache, thread pools,
 * allocations); run r then times runner 0 first when r is even and runner 1
 * first when it is odd. No assertion on timing anywhere: numbers only. */
#ifndef VT_SPEED_H
#define VT_SPEED_H

#include <stddef.h>
#include <stdint.h>

#include "../common/vt_error.h"
#include "../engine/runner.h"

#define VT_SPEED_MAX_RUNS 100

/* median, smallest and largest of n values */
typedef struct vt_speed_stat {
    double median, min, max;
} vt_speed_stat;

vt_speed_stat vt_speed_stat_of(const double *v, int n);

typedef struct vt_speed_side {
    const char *name;              /* the registry name */
    char version[96], detail[320]; /* what vt_runner_identity says */
    vt_runner_settings resolved;   /* the settings as applied */
    double prefill[VT_SPEED_MAX_RUNS], decode[VT_SPEED_MAX_RUNS]; /* tokens/s, run by run */
    vt_speed_stat prefill_stat, decode_stat;
} vt_speed_side;

typedef struct vt_speed_result {
    int runs;
    /* the read bandwidth measured just before each alternated pair of runs
     * (vt_speed_probe; 0 when none was asked for), and its median */
    double read_bw[VT_SPEED_MAX_RUNS];
    vt_speed_stat read_bw_stat;
    int32_t prefill_tokens, decode_tokens, n_vocab;
    vt_speed_side side[2];
    /* engine / anchor per run (adjacent in time), and their medians */
    double prefill_ratio[VT_SPEED_MAX_RUNS], decode_ratio[VT_SPEED_MAX_RUNS];
    vt_speed_stat prefill_ratio_stat, decode_ratio_stat;
    int32_t greedy_agree, first_difference; /* the last run's tokens; -1: none differ */
} vt_speed_result;

/* The read bandwidth next to each run: n_threads threads, `passes` passes
 * over `bytes` (vt_speed_read_bandwidth), before each alternated pair. A
 * shared machine's bandwidth moves between runs (seen here: 32 and 55 GB/s
 * minutes apart within one vt bench), so a run is held against what the
 * machine gave just then. */
typedef struct vt_speed_probe {
    int n_threads;
    size_t bytes;
    int passes;
} vt_speed_probe;

/* Open runner a and runner b with s (model, threads, mode...; n_ctx and
 * n_batch are set here from p and g), warm each up, then time `runs` runs
 * alternately, measuring the read bandwidth before each pair when probe is
 * not NULL. VT_EINPUT for bad arguments or a runner that cannot open;
 * VT_ECHECK if the two runners' vocabularies differ. */
int vt_speed_compare(const vt_runner_ops *a, const vt_runner_ops *b, const vt_runner_settings *s, int32_t p,
                     int32_t g, int runs, const vt_speed_probe *probe, vt_speed_result *out, vt_error *err);

/* The read bandwidth n_threads threads get from memory: each reads its
 * slice of a buffer of `bytes` (far beyond the last-level cache), `passes`
 * times (at most VT_SPEED_MAX_RUNS); the median pass, in bytes per second
 * (on a shared machine single passes burst well above what a whole decode
 * sees: measured here 28-53 GB/s for 2 threads, best-of-3 readings). */
int vt_speed_read_bandwidth(int n_threads, size_t bytes, int passes, double *bytes_per_s, vt_error *err);

/* Bytes of weights one decode step reads from the GGUF at path: every
 * tensor once, except the token embedding table (one row per token,
 * negligible) unless it is also the output head (no output.weight). */
int vt_speed_weight_bytes_per_token(const char *path, double *bytes, vt_error *err);

#endif
