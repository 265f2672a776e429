/* sha256_bench: vt_sha256_file against `openssl dgst -sha256` on one large
 * file, alternating runs so both see the same machine load and page cache.
 *
 *   sha256_bench [FILE] [--runs N] [--size-mib M]
 *
 * Without FILE it writes an M MiB (default 1024) file of pseudo-random bytes
 * under $TMPDIR (or /tmp) and removes it afterwards. The file is read once
 * first so both sides hash from the page cache (a cold first run would
 * measure the disk, not the hashing). Prints each run, then best and median
 * throughput of each side and the ratio vt/openssl (goal: >= 0.95). */
#include "provenance/provenance.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static int make_file(const char *path, size_t mib)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    enum { CHUNK = 1 << 20 };
    uint64_t *buf = malloc(CHUNK);
    uint64_t x = 0x9E3779B97F4A7C15ull;
    int ok = buf != NULL;
    for (size_t m = 0; ok && m < mib; m++) {
        for (size_t i = 0; i < CHUNK / 8; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            buf[i] = x;
        }
        if (fwrite(buf, 1, CHUNK, f) != CHUNK) {
            free(buf);
            fclose(f);
            return -1;
        }
    }
    free(buf);
    return fclose(f) == 0 && ok ? 0 : -1;
}

/* Runs openssl on path; its wall time (process start included, as a user
 * would see it) in *secs and its hex digest in hex. */
static int run_openssl(const char *path, double *secs, char hex[65])
{
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "openssl dgst -sha256 -r '%s'", path);
    double t0 = now();
    FILE *p = popen(cmd, "r");
    if (!p)
        return -1;
    char line[4400] = { 0 };
    char *ok = fgets(line, sizeof line, p);
    int st = pclose(p);
    *secs = now() - t0;
    if (!ok || st != 0 || strlen(line) < 64)
        return -1;
    memcpy(hex, line, 64);
    hex[64] = '\0';
    return 0;
}

int main(int argc, char **argv)
{
    const char *file = NULL;
    int runs = 5;
    long size_mib = 1024;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
            runs = atoi(argv[++i]);
        else if (strcmp(argv[i], "--size-mib") == 0 && i + 1 < argc)
            size_mib = atol(argv[++i]);
        else if (argv[i][0] != '-' && !file)
            file = argv[i];
        else {
            fprintf(stderr, "usage: sha256_bench [FILE] [--runs N] [--size-mib M]\n");
            return 2;
        }
    }
    if (runs < 1 || runs > 100 || size_mib < 1) {
        fprintf(stderr, "sha256_bench: --runs: expected 1..100; --size-mib: expected >= 1\n");
        return 2;
    }
    char made[4096] = "";
    if (!file) {
        const char *tmp = getenv("TMPDIR");
        snprintf(made, sizeof made, "%s/vt-sha256-bench-%ld.bin", tmp && *tmp ? tmp : "/tmp", (long)getpid());
        printf("writing %ld MiB to %s\n", size_mib, made);
        fflush(stdout);
        if (make_file(made, (size_t)size_mib) != 0) {
            fprintf(stderr, "sha256_bench: %s: cannot write the test file\n", made);
            unlink(made);
            return 2;
        }
        file = made;
    }

    vt_error err;
    vt_sha256_hex h;
    uint64_t size = 0;
    /* Warm the page cache (and check the file is readable). */
    if (vt_sha256_file(file, &h, &size, &err) != VT_OK) {
        fprintf(stderr, "sha256_bench: %s\n", err.msg);
        if (made[0])
            unlink(made);
        return 2;
    }
    double gb = (double)size / 1e9;
    printf("file %s: %llu bytes, %d alternating runs (page cache warm)\n", file, (unsigned long long)size, runs);

    double *tv = calloc((size_t)runs, sizeof *tv), *to = calloc((size_t)runs, sizeof *to);
    double *ts = calloc((size_t)runs, sizeof *ts);
    int rc = 0;
    const vt_hash_options serial = { 0, 0 };
    for (int r = 0; r < runs && rc == 0; r++) {
        char ohex[65];
        double t0 = now();
        if (vt_sha256_file(file, &h, NULL, &err) != VT_OK) {
            fprintf(stderr, "sha256_bench: %s\n", err.msg);
            rc = 2;
            break;
        }
        tv[r] = now() - t0;
        if (run_openssl(file, &to[r], ohex) != 0) {
            fprintf(stderr, "sha256_bench: openssl dgst -sha256 failed\n");
            rc = 2;
            break;
        }
        vt_sha256_hex hs;
        t0 = now();
        if (vt_sha256_file_opts(file, &serial, &hs, NULL, &err) != VT_OK) {
            fprintf(stderr, "sha256_bench: %s\n", err.msg);
            rc = 2;
            break;
        }
        ts[r] = now() - t0;
        if (strcmp(h.hex, ohex) != 0 || strcmp(hs.hex, ohex) != 0) {
            fprintf(stderr, "sha256_bench: digests differ: vt %s, vt serial %s, openssl %s\n", h.hex, hs.hex, ohex);
            rc = 1;
            break;
        }
        printf("run %d: vt %.3f s (%.2f GB/s)   openssl %.3f s (%.2f GB/s)   vt-serial %.3f s (%.2f GB/s)\n", r + 1,
               tv[r], gb / tv[r], to[r], gb / to[r], ts[r], gb / ts[r]);
        fflush(stdout);
    }
    if (rc == 0) {
        double bv = tv[0], bo = to[0], bs = ts[0];
        for (int r = 1; r < runs; r++) {
            bv = tv[r] < bv ? tv[r] : bv;
            bo = to[r] < bo ? to[r] : bo;
            bs = ts[r] < bs ? ts[r] : bs;
        }
        double mv = median(tv, runs), mo = median(to, runs), ms = median(ts, runs);
        printf("sha256 %s\n", h.hex);
        printf("best:   vt %.2f GB/s  openssl %.2f GB/s  vt-serial %.2f GB/s  ratio vt/openssl %.3f\n", gb / bv,
               gb / bo, gb / bs, bo / bv);
        printf("median: vt %.2f GB/s  openssl %.2f GB/s  vt-serial %.2f GB/s  ratio vt/openssl %.3f\n", gb / mv,
               gb / mo, gb / ms, mo / mv);
        printf("goal ratio >= 0.95: %s\n", mo / mv >= 0.95 ? "met" : "NOT met");
    }
    free(tv);
    free(to);
    free(ts);
    if (made[0])
        unlink(made);
    return rc;
}
