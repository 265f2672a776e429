/* What a decode step's launches cost before any work (needs a GPU;
 * scripts/gpu-build builds it, CI only compiles it): graphs of n dependent
 * empty kernels, launched as the step's are (vt_gpu_launch_floor), for the
 * step's launch counts (255 on bench-0.6b, 285 on bench-0.8b) and grids of
 * the step's sizes. A step of n launches cannot be faster than its row,
 * whatever its kernels do; the anchor beside it is the memory-bandwidth
 * limit engine_bench prints. Then what a grid-wide barrier costs inside one
 * kernel (vt_gpu_barrier_floor): the floor of the step run as one
 * persistent kernel instead. Exit 0, 2 no device or bad usage.
 * usage: gpu_launch_floor [--device D] [--replays R] */
#include "engine/hip/vt_gpu.h"
#include "tests/gpu/gpu_program.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    int device = 0, replays = 200;
    for (int i = 1; i < argc; i += 2) {
        if (i + 1 < argc && !strcmp(argv[i], "--device"))
            device = atoi(argv[i + 1]);
        else if (i + 1 < argc && !strcmp(argv[i], "--replays"))
            replays = atoi(argv[i + 1]);
        else {
            fprintf(stderr, "gpu_launch_floor: %s: unknown option or missing value: expected --device D, "
                    "--replays R\n", argv[i]);
            return 2;
        }
    }
    if (replays < 1) {
        fprintf(stderr, "gpu_launch_floor: --replays %d: expected at least 1\n", replays);
        return 2;
    }
    char name[256];
    if (gpu_program_device("gpu_launch_floor", device, name, sizeof name, NULL))
        return 2;
    vt_error err;
    vt_error_clear(&err);
    vt_gpu *g = vt_gpu_open(device, &err);
    if (!g) {
        printf("gpu_launch_floor: %s\n", err.msg);
        return 2;
    }
    printf("device %d: %s; graphs of n empty kernels (256 threads a block), %d replays a batch, best of 5\n",
           device, name, replays);
    printf("%8s %8s %12s %12s %14s\n", "kernels", "blocks", "us/replay", "us/kernel", "replays/s");
    static const int ns[] = { 1, 9, 255, 285 };
    static const unsigned blocks[] = { 1, 132, 528 };
    int rc = VT_OK;
    for (size_t i = 0; rc == VT_OK && i < sizeof ns / sizeof ns[0]; i++)
        for (size_t j = 0; rc == VT_OK && j < sizeof blocks / sizeof blocks[0]; j++) {
            double us = 0;
            rc = vt_gpu_launch_floor(g, ns[i], blocks[j], 256, replays, &us, &err);
            if (rc == VT_OK)
                printf("%8d %8u %12.2f %12.3f %14.1f\n", ns[i], blocks[j], us, us / ns[i], 1e6 / us);
        }
    /* The same floor for the step as one persistent kernel: one launch, a
     * grid-wide barrier between dependent phases (qwen3's decode step needs
     * at least five a layer: Q|K|V, attention, o, gate|up, down; 140 and 196
     * are five and seven for bench-0.6b's 28 layers), one block a
     * multiprocessor or half of them. */
    static const int nbar[] = { 140, 196 };
    if (rc == VT_OK)
        printf("one kernel of n grid-wide barriers (256 threads a block), %d replays a batch, best of 5; a barrier: "
               "(n's time - 1's) / (n - 1)\n%8s %8s %12s %12s\n", replays, "barriers", "blocks", "us/replay",
               "us/barrier");
    const int sms = vt_gpu_multiprocessors(g);
    for (int half = 0; rc == VT_OK && half < 2; half++) {
        const unsigned blocks = (unsigned)(half && sms > 1 ? sms / 2 : sms);
        double us1 = 0;
        rc = vt_gpu_barrier_floor(g, 1, blocks, 256, replays, &us1, &err);
        if (rc == VT_OK)
            printf("%8d %8u %12.2f %12s\n", 1, blocks, us1, "-");
        for (size_t i = 0; rc == VT_OK && i < sizeof nbar / sizeof nbar[0]; i++) {
            double us = 0;
            rc = vt_gpu_barrier_floor(g, nbar[i], blocks, 256, replays, &us, &err);
            if (rc == VT_OK)
                printf("%8d %8u %12.2f %12.3f\n", nbar[i], blocks, us, (us - us1) / (nbar[i] - 1));
        }
    }
    if (rc != VT_OK)
        printf("gpu_launch_floor: %s\n", err.msg);
    vt_gpu_close(g);
    return rc == VT_OK ? 0 : 1;
}
