/* The GPU's packed gather against the CPU's (needs a GPU; scripts/gpu-build
 * builds it, CI only compiles it): for every decodable type and both output
 * types, N random ids (the first and last rows among them) gathered on the
 * device and on the CPU, compared bit for bit; then bad ids (negative, one
 * past the end, ids valid only in their low 32 bits, INT64_MIN/MAX) must be
 * reported with their position and leave both the host and the device
 * output untouched, and the next good call must work. Exit 0 all passed,
 * 1 a check failed, 2 no device or bad usage.
 * usage: gpu_gather [--ids N] [--rows R] [--cols C] [--device D] [--seed S] */
#include "engine/codec.h"
#include "engine/hip/vt_gpu.h"
#include "tests/gpu/gpu_program.h"
#include "tests/gpu/gpu_random_table.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state;

static uint64_t next_u64(void) { return splitmix64(&rng_state); }

static int failures;

#define CHECK(cond, ...)                                                                            \
    do {                                                                                            \
        if (!(cond)) {                                                                              \
            failures++;                                                                             \
            printf("FAIL: ");                                                                       \
            printf(__VA_ARGS__);                                                                    \
            printf("\n");                                                                           \
        }                                                                                           \
    } while (0)

int main(int argc, char **argv)
{
    int64_t n_ids = 100000, rows = 4096, cols = 512;
    int device = 0;
    uint64_t seed = 1;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--ids"))
            n_ids = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--rows"))
            rows = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--cols"))
            cols = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--device"))
            device = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--seed"))
            seed = strtoull(argv[i + 1], NULL, 10);
        else {
            fprintf(stderr, "gpu_gather: %s: unknown option\n", argv[i]);
            return 2;
        }
    }
    if (n_ids < 8 || rows < 2 || cols <= 0 || cols % 256) {
        fprintf(stderr, "gpu_gather: expected --ids >= 8, --rows >= 2, --cols a multiple of 256\n");
        return 2;
    }
    char name[256];
    int n_dev = 0;
    if (gpu_program_device("gpu_gather", device, name, sizeof name, &n_dev))
        return 2;
    vt_error err;
    vt_error_clear(&err);
    const char *vendor = "";
    int rt = 0, drv = 0;
    if (vt_gpu_runtime(device, &vendor, &rt, &drv, &err)) {
        printf("gpu_gather: %s\n", err.msg);
        return 2;
    }
    printf("device %d of %d: %s, %s runtime %d, driver %d\n", device, n_dev, name, vendor, rt, drv);
    printf("%lld ids per type (rows 0 and %lld among them), table %lld x %lld, seed %llu\n", (long long)n_ids,
           (long long)(rows - 1), (long long)rows, (long long)cols, (unsigned long long)seed);
    printf("%-8s %10s %12s %12s %s\n", "type", "ids", "f32-differ", "bf16-differ", "bad-ids");
    int64_t *ids = malloc((size_t)n_ids * sizeof *ids);
    float *cpu = malloc((size_t)n_ids * (size_t)cols * 4), *gpu = malloc((size_t)n_ids * (size_t)cols * 4);
    if (!ids || !cpu || !gpu) {
        fprintf(stderr, "gpu_gather: out of memory\n");
        return 2;
    }
    int types = 0;
    for (int i = 0; i < vt_codec_count(); i++) {
        const vt_codec *c = vt_codec_at(i);
        if (!c->decode_f32)
            continue;
        types++;
        rng_state = seed * 1000003u + (uint64_t)c->type;
        const size_t rb = vt_codec_row_bytes(c, cols);
        uint8_t *table = malloc(rb * (size_t)rows);
        if (!table) {
            fprintf(stderr, "gpu_gather: out of memory\n");
            return 2;
        }
        fill_random_blocks(c, table, (int64_t)(rb / c->block_bytes) * rows, &rng_state);
        ids[0] = 0;
        ids[1] = rows - 1;
        for (int64_t k = 2; k < n_ids; k++)
            ids[k] = (int64_t)(next_u64() % (uint64_t)rows);
        vt_gpu_table *t = vt_gpu_table_upload(device, c, table, rows, cols, &err);
        if (!t) {
            printf("FAIL: %s: %s\n", c->name, err.msg);
            failures++;
            free(table);
            continue;
        }
        long long differ[2] = { 0, 0 };
        for (int o = 0; o < 2; o++) {
            const vt_dtype dt = o ? VT_DTYPE_BF16 : VT_DTYPE_F32;
            const size_t esz = o ? 2 : 4, bytes = (size_t)n_ids * (size_t)cols * esz;
            memset(gpu, 0xa5, bytes);
            int rc = vt_codec_gather_rows(c, table, rows, cols, ids, n_ids, dt, cpu, &err);
            CHECK(rc == VT_OK, "%s: cpu gather: %s", c->name, err.msg);
            rc = vt_gpu_gather(t, ids, n_ids, dt, gpu, &err);
            CHECK(rc == VT_OK, "%s: gpu gather: %s", c->name, err.msg);
            const uint8_t *a = (const uint8_t *)cpu, *b = (const uint8_t *)gpu;
            for (size_t e = 0; e < bytes; e += esz)
                differ[o] += memcmp(a + e, b + e, esz) != 0;
        }
        CHECK(differ[0] == 0 && differ[1] == 0, "%s: %lld F32 and %lld BF16 values differ", c->name, differ[0],
              differ[1]);
        /* Bad ids: the first bad position is reported, nothing is written. */
        const int64_t bad[] = { -1, rows, INT64_MIN, INT64_MAX, ((int64_t)1 << 32) + 1, -((int64_t)1 << 32) };
        int bad_ok = 0;
        for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
            int64_t probe[8] = { 0, 1, rows - 1, 2, 3, 4, 5, 6 };
            const int at = 3 + (int)(k % 4);
            probe[at] = bad[k];
            if (k % 2)
                probe[7] = -5; /* a second bad one later: the first is reported */
            memset(gpu, 0x5a, (size_t)8 * (size_t)cols * 4);
            int rc = vt_gpu_gather(t, probe, 8, VT_DTYPE_F32, gpu, &err);
            char want[160];
            snprintf(want, sizeof want, "gather: position %d: id %lld: expected 0 <= id < %lld", at,
                     (long long)bad[k], (long long)rows);
            int untouched = 1;
            for (size_t e = 0; e < (size_t)8 * (size_t)cols * 4; e++)
                untouched &= ((uint8_t *)gpu)[e] == 0x5a;
            CHECK(rc == VT_EINPUT && strcmp(err.msg, want) == 0, "%s: bad id %lld: rc %d, '%s', expected '%s'",
                  c->name, (long long)bad[k], rc, err.msg, want);
            CHECK(untouched, "%s: bad id %lld: the host output was written", c->name, (long long)bad[k]);
            bad_ok += rc == VT_EINPUT && strcmp(err.msg, want) == 0 && untouched;
        }
        /* And the table still serves a good call after the faults. */
        int64_t good[2] = { rows - 1, 0 };
        int rc = vt_gpu_gather(t, good, 2, VT_DTYPE_F32, gpu, &err);
        vt_codec_gather_rows(c, table, rows, cols, good, 2, VT_DTYPE_F32, cpu, &err);
        CHECK(rc == VT_OK && memcmp(cpu, gpu, (size_t)2 * (size_t)cols * 4) == 0,
              "%s: a good call after bad ids fails or differs", c->name);
        printf("%-8s %10lld %12lld %12lld %d/%d\n", c->name, (long long)n_ids, differ[0], differ[1], bad_ok,
               (int)(sizeof bad / sizeof bad[0]));
        vt_gpu_table_free(t);
        free(table);
    }
    /* A device index that does not exist is refused before anything runs. */
    vt_gpu_table *none = vt_gpu_table_upload(n_dev, vt_codec_by_type(VT_TYPE_Q8_0), cpu, 1, 256, &err);
    CHECK(none == NULL && strstr(err.msg, "expected 0 <= device <"), "device %d: '%s'", n_dev, err.msg);
    printf("%d types, %d failures\n", types, failures);
    free(ids);
    free(cpu);
    free(gpu);
    return failures ? 1 : 0;
}
