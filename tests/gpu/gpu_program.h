/* What each one-device GPU program (tests/gpu, bench/gpu) does first: find
 * its device or say why it skips. */
#ifndef VT_GPU_PROGRAM_H
#define VT_GPU_PROGRAM_H

#include "engine/hip/vt_gpu.h"

#include <stdio.h>

/* Device `device`'s name into name and the devices present into *n_dev
 * (when not NULL); 0, or 2 (the programs' "skipped / bad usage" exit)
 * after one line on stdout naming prog and the reason. */
static inline int gpu_program_device(const char *prog, int device, char *name, size_t cap, int *n_dev_out)
{
    vt_error err;
    vt_error_clear(&err);
    int n_dev = 0;
    vt_gpu_device_count(&n_dev, &err);
    if (n_dev == 0) {
        printf("%s: skipped: no GPU device\n", prog);
        return 2;
    }
    if (vt_gpu_device_name(device, name, cap, &err)) {
        printf("%s: %s\n", prog, err.msg);
        return 2;
    }
    if (n_dev_out)
        *n_dev_out = n_dev;
    return 0;
}

#endif
