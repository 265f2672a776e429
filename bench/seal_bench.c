/* seal_bench: `vt-seal` against the standard tools on the same tree, in one run.
 *
 *   seal_bench [--tree DIR] [--size-mib M] [--level N] [--runs N] [--vt PATH] [--keep]
 *
 * Without --tree it writes an M MiB (default 1024) tree shaped like vt
 * evidence: half capture-like JSON text (compresses about 4:1), half float32
 * logits (normal values: barely compressible), in files of 1-32 MiB plus a few
 * hundred small files in subdirectories. Then, alternating runs so both sides
 * see the same load and a warm page cache, it times
 *   create:  vt-seal create TREE -o v.tar.gz [--level N]  vs  tar --sort=name -czf (gzip -6)
 *   verify:  vt-seal verify v.tar.gz                        vs  sha256sum -c over the extracted tree
 *   extract: vt-seal extract v.tar.gz -C D                  vs  tar -xzf
 * and prints best wall times, CPU times and the ratios vt/anchor (goal for
 * create and verify: <= 1.0). vt uses every CPU; the anchors use what they
 * use (tar -z runs gzip beside tar: two processes). vt-seal extract also
 * syncs the tree to disk before renaming it into place; tar does not. */
#include "common/vt_rng.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double child_cpu(void)
{
    struct rusage u;
    getrusage(RUSAGE_CHILDREN, &u);
    return (double)u.ru_utime.tv_sec + u.ru_utime.tv_usec * 1e-6 + (double)u.ru_stime.tv_sec +
           u.ru_stime.tv_usec * 1e-6;
}

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
    char cmd[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    fflush(stdout); /* keep our lines in order with the command's */
    int st = system(cmd);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "seal_bench: failed: %s\n", cmd);
        exit(2);
    }
    return 0;
}

typedef struct timing {
    double wall, cpu;
} timing;

/* Runs cmd, keeps the best wall time (and the CPU time of that run). */
static void timed(timing *best, const char *cmd)
{
    /* vt-seal extract syncs its tree before renaming it into place: start
     * every command with no dirty pages of the previous ones to flush. */
    sh("sync");
    double c0 = child_cpu(), t0 = now();
    sh("%s", cmd);
    double wall = now() - t0, cpu = child_cpu() - c0;
    if (best->wall == 0 || wall < best->wall) {
        best->wall = wall;
        best->cpu = cpu;
    }
}

/* ---- the synthetic tree ---- */

static void write_text_file(const char *path, size_t bytes, vt_rng *r)
{
    FILE *f = fopen(path, "wb");
    if (!f) {
        perror(path);
        exit(2);
    }
    size_t n = 0;
    long pos = 0;
    while (n < bytes) {
        /* One capture-like record per line: token, logprob, top-4. */
        int k = fprintf(f, "{\"pos\":%ld,\"token\":%d,\"logprob\":%.9g,\"top\":[", pos++,
                        (int)(vt_rng_next(r) % 151936), -fabs(vt_rng_normal(r)) * 3);
        for (int i = 0; i < 4; i++)
            k += fprintf(f, "%s{\"id\":%d,\"logprob\":%.9g}", i ? "," : "", (int)(vt_rng_next(r) % 151936),
                         -fabs(vt_rng_normal(r)) * 5 - i);
        k += fprintf(f, "]}\n");
        n += (size_t)k;
    }
    fclose(f);
}

static void write_float_file(const char *path, size_t bytes, vt_rng *r)
{
    FILE *f = fopen(path, "wb");
    if (!f) {
        perror(path);
        exit(2);
    }
    float buf[16384];
    for (size_t n = 0; n < bytes; n += sizeof buf) {
        for (size_t i = 0; i < 16384; i++)
            buf[i] = (float)(vt_rng_normal(r) * 4.0 - 2.0);
        size_t w = bytes - n < sizeof buf ? bytes - n : sizeof buf;
        fwrite(buf, 1, w, f);
    }
    fclose(f);
}

static void make_tree(const char *root, size_t mib)
{
    vt_rng r;
    vt_rng_seed(&r, 20240601);
    sh("mkdir -p '%s/captures' '%s/logits' '%s/small'", root, root, root);
    size_t half = mib << 19, done = 0;
    char p[4096];
    /* 1% of the text half in ~300 small files of 1-64 KiB, in 10 dirs. */
    size_t small = half / 100;
    for (int i = 0; done < small; i++) {
        if (i % 30 == 0)
            sh("mkdir -p '%s/small/d%02d'", root, i / 30);
        size_t sz = 1024 + (size_t)(vt_rng_next(&r) % (63 * 1024));
        snprintf(p, sizeof p, "%s/small/d%02d/rec%04d.json", root, i / 30, i);
        write_text_file(p, sz, &r);
        done += sz;
    }
    for (int i = 0; done < half; i++) {
        size_t sz = ((size_t)1 << 20) * (1 + vt_rng_next(&r) % 16);
        if (sz > half - done)
            sz = half - done;
        snprintf(p, sizeof p, "%s/captures/run%03d.json", root, i);
        write_text_file(p, sz, &r);
        done += sz;
    }
    for (size_t i = 0, d = 0; d < half; i++) {
        size_t sz = ((size_t)1 << 20) * (4 + vt_rng_next(&r) % 29);
        if (sz > half - d)
            sz = half - d;
        snprintf(p, sizeof p, "%s/logits/run%03zu.f32", root, i);
        write_float_file(p, sz, &r);
        d += sz;
    }
}

static void ratio_line(const char *what, const timing *vt, const timing *anchor, const char *anchor_name)
{
    printf("%-8s vt %7.2f s wall %7.2f s cpu | %-26s %7.2f s wall %7.2f s cpu | ratio wall %.3f cpu %.3f\n", what,
           vt->wall, vt->cpu, anchor_name, anchor->wall, anchor->cpu, vt->wall / anchor->wall, vt->cpu / anchor->cpu);
}

static long long file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) ? -1 : (long long)st.st_size;
}

int main(int argc, char **argv)
{
    const char *tree = NULL, *vt = NULL;
    size_t mib = 1024;
    int level = 0, runs = 1, keep = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--keep") == 0)
            keep = 1;
        else if (v && strcmp(a, "--tree") == 0)
            tree = argv[++i];
        else if (v && strcmp(a, "--vt") == 0)
            vt = argv[++i];
        else if (v && strcmp(a, "--size-mib") == 0)
            mib = (size_t)strtoul(argv[++i], NULL, 10);
        else if (v && strcmp(a, "--level") == 0)
            level = atoi(argv[++i]);
        else if (v && strcmp(a, "--runs") == 0)
            runs = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: seal_bench [--tree DIR] [--size-mib M] [--level 1-9] [--runs N] [--vt PATH] [--keep]\n");
            return 2;
        }
    }
    if ((tree && strlen(tree) > 1000) || (vt && strlen(vt) > 1000)) {
        fprintf(stderr, "seal_bench: --tree or --vt path too long\n");
        return 2;
    }
    if (mib < 1 || runs < 1 || level < 0 || level > 9) {
        fprintf(stderr, "seal_bench: bad --size-mib, --runs or --level\n");
        return 2;
    }
    /* vt sits beside this program in the build directory. */
    char self[1024], vtbuf[1100];
    if (!vt) {
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        if (n <= 0) {
            fprintf(stderr, "seal_bench: cannot find vt: pass --vt\n");
            return 2;
        }
        self[n] = '\0';
        *strrchr(self, '/') = '\0';
        snprintf(vtbuf, sizeof vtbuf, "%s/vt", self);
        vt = vtbuf;
    }
    const char *tmpdir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    char work[1024];
    snprintf(work, sizeof work, "%s/vt-seal-bench-XXXXXX", tmpdir);
    if (!mkdtemp(work)) {
        perror(work);
        return 2;
    }
    char treebuf[1100];
    if (!tree) {
        snprintf(treebuf, sizeof treebuf, "%s/tree", work);
        tree = treebuf;
        double t0 = now();
        make_tree(tree, mib);
        printf("tree: %zu MiB (half JSON text, half float32 logits) written in %.1f s\n", mib, now() - t0);
    }
    sh("du -sb '%s' | cut -f1 | xargs printf 'tree: %%s bytes, ' ; find '%s' -type f | wc -l | xargs printf '%%s files\\n'",
       tree, tree);
    sh("find '%s' -type f -exec cat {} + > /dev/null", tree); /* warm the page cache */
    char lvl[32] = "";
    if (level)
        snprintf(lvl, sizeof lvl, " --level %d", level);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    printf("vt: %s, gzip level %s, %ld CPUs; anchor: GNU tar + gzip -6\n", vt, level ? lvl + 9 : "6 (default)", ncpu);

    timing c_vt = { 0 }, c_tar = { 0 }, v_vt = { 0 }, v_sum = { 0 }, x_vt = { 0 }, x_tar = { 0 };
    char cmd[8192];
    for (int r = 0; r < runs; r++) {
        sh("rm -f '%s/v.tar.gz' '%s/v.tar.gz.seal.json' '%s/t.tar.gz'", work, work, work);
        snprintf(cmd, sizeof cmd, "tar --sort=name -czf '%s/t.tar.gz' -C '%s' .", work, tree);
        timed(&c_tar, cmd);
        snprintf(cmd, sizeof cmd, "'%s' seal create '%s' -o '%s/v.tar.gz'%s >/dev/null", vt, tree, work, lvl);
        timed(&c_vt, cmd);
    }
    {
        char a[1200], b[1200];
        snprintf(a, sizeof a, "%s/v.tar.gz", work);
        snprintf(b, sizeof b, "%s/t.tar.gz", work);
        printf("archives: vt %lld bytes, tar -czf %lld bytes\n", file_size(a), file_size(b));
    }
    /* The extracted tree and its sums for sha256sum -c (not timed). */
    sh("mkdir '%s/ref' && tar -xzf '%s/v.tar.gz' -C '%s/ref' && rm '%s/ref/manifest.json'", work, work, work, work);
    sh("cd '%s/ref' && find . -type f -print0 | sort -z | xargs -0 sha256sum > '%s/SUMS'", work, work);
    for (int r = 0; r < runs; r++) {
        snprintf(cmd, sizeof cmd, "cd '%s/ref' && sha256sum -c --quiet '%s/SUMS'", work, work);
        timed(&v_sum, cmd);
        snprintf(cmd, sizeof cmd, "'%s' seal verify '%s/v.tar.gz' >/dev/null", vt, work);
        timed(&v_vt, cmd);
        sh("rm -rf '%s/x1' '%s/x2' && mkdir '%s/x2'", work, work, work);
        snprintf(cmd, sizeof cmd, "tar -xzf '%s/v.tar.gz' -C '%s/x2'", work, work);
        timed(&x_tar, cmd);
        snprintf(cmd, sizeof cmd, "'%s' seal extract '%s/v.tar.gz' -C '%s/x1' >/dev/null", vt, work, work);
        timed(&x_vt, cmd);
    }
    printf("best of %d run%s:\n", runs, runs > 1 ? "s" : "");
    ratio_line("create", &c_vt, &c_tar, "tar --sort=name -czf");
    ratio_line("verify", &v_vt, &v_sum, "sha256sum -c (extracted)");
    ratio_line("extract", &x_vt, &x_tar, "tar -xzf");
    if (!keep)
        sh("rm -rf '%s'", work);
    else
        printf("kept %s\n", work);
    return 0;
}
