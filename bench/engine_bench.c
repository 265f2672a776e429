/* engine_bench: the speed of vt's engine against llama.cpp (the anchor) on
 * the same GGUF, with the same settings, measured side by side in one run.
 *
 *   engine_bench [--model X.gguf]... [--preset bench|tiny] [--threads N]
 *                [--prompt-tokens P] [--gen-tokens G] [--repeats R]
 *                [--keep DIR] [--verbose] [--backend cpu|hip] [--device N] [--matmul exact|q8]
 *
 * Both runners come from the runner registry ("engine", "llamacpp") and run
 * as vt run and vt capture run them, timed by compare/speed.h (as vt bench
 * times them): production mode, --threads N (default: one per CPU), n_ctx
 * P + G, n_batch P, greedy, cache auto, matmul q8; G tokens after a
 * P-token prompt (default 128 and 32); prefill from the prompt's batch,
 * decode from the G - 1 single-token steps; one warm-up each, then R
 * repeats (default 3) alternating. Printed: each phase's median, the
 * median of the per-repeat ratios engine / llama.cpp with their spread
 * (above 1: the engine is faster), and how many of the G greedy tokens the
 * two runners agree on; --verbose, every repeat. No assertion on timing.
 * vt bench is the command for this; this program also makes the bench
 * fixtures and times the GPU backend.
 *
 * Without --model it writes its own fixtures with the fixture library
 * (fixtures/fixture.h), Q8_0 weights, seed 1 (as vt fixture make): --preset
 * bench (default) the qwen3 bench-0.6b and the qwen35 bench-0.8b (~15-45 s
 * and ~650-700 MB each on 2 cores), --preset tiny the qwen3 and qwen35 tiny
 * presets (a few MB, well under a second). They go to a temporary
 * directory under $TMPDIR (or /tmp), removed at the end,
 * or to --keep DIR, where they stay and where a later run reuses them. The
 * prompt is P pseudo-random token ids (a fixed stream) below 90% of the
 * vocabulary size.
 *
 * --backend hip: the GPU backend alone (--matmul exact, the default there,
 * or q8; eager and production), its anchor the device's read bandwidth measured in the same
 * run (a read-only kernel over 4 GiB): decode tokens/s against the limit
 * bandwidth / weight bytes read per token, with the kernel launches and
 * host<->device copies per decoded token. */
#include "compare/speed.h"
#include "engine/codec.h"
#include "engine/gguf_file.h"
#include "engine/gpu_module.h"
#include "engine/runner.h"
#include "fixtures/fixture.h"
#include "oracle/ggml_codec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum { MAX_MODELS = 16 };

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int verbose;

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* The engine against llama.cpp (compare/speed.h: both through a timing
 * layer over their runner tables, alternately, after one warm-up each). */
static int bench_model(const char *path, int32_t threads, int32_t p, int32_t g, int repeats)
{
    vt_error err;
    vt_error_clear(&err);
    vt_runner_settings s;
    vt_runner_settings_default(&s);
    s.model_path = path;
    s.mode = VT_MODE_PRODUCTION;
    s.n_threads = threads;
    static vt_speed_result r;
    int rc = vt_speed_compare(vt_runner_find("engine"), vt_runner_find("llamacpp"), &s, p, g, repeats, NULL, &r,
                              &err);
    if (rc != VT_OK) {
        fprintf(stderr, "engine_bench: %s: %s\n", path, err.msg);
        return rc;
    }
    printf("model %s: vocabulary %d\n", path, r.n_vocab);
    for (int k = 0; k < 2; k++) {
        const vt_runner_settings *re = &r.side[k].resolved;
        printf("  %-9s %s: %s, threads %d, n_ctx %d, n_batch %d, cache %s, matmul %s\n",
               k ? "llama.cpp" : "engine", r.side[k].version, vt_exec_mode_name(re->mode), re->n_threads,
               re->n_ctx, re->n_batch, vt_cache_dtype_name(re->cache_dtype), vt_matmul_mode_name(re->matmul));
    }
    if (verbose)
        for (int i = 0; i < repeats; i++)
            for (int k = 0; k < 2; k++)
                printf("  %-9s repeat %2d  prefill %9.2f tok/s  decode %8.2f tok/s\n", k ? "llama.cpp" : "engine", i,
                       r.side[k].prefill[i], r.side[k].decode[i]);
    const char *name = base_name(path);
    printf("%-34s %-8s %14s %16s %18s %18s\n", "model", "phase", "engine tok/s", "llama.cpp tok/s",
           "engine/llama.cpp", "(median, spread)");
    for (int ph = 0; ph < 2; ph++) {
        const vt_speed_stat e = ph ? r.side[0].decode_stat : r.side[0].prefill_stat,
                            l = ph ? r.side[1].decode_stat : r.side[1].prefill_stat,
                            q = ph ? r.decode_ratio_stat : r.prefill_ratio_stat;
        char spread[40];
        snprintf(spread, sizeof spread, "%.3f..%.3f", q.min, q.max);
        printf("%-34s %-8s %14.2f %16.2f %18.3f %18s\n", name, ph ? "decode" : "prefill", e.median, l.median, q.median,
               spread);
    }
    if (r.first_difference < 0)
        printf("%-34s greedy tokens agree: %d/%d\n", name, r.greedy_agree, g);
    else
        printf("%-34s greedy tokens agree: %d/%d (first difference at token %d)\n", name, r.greedy_agree, g,
               r.first_difference);
    fflush(stdout);
    return VT_OK;
}

/* ---- The GPU backend against the device's read bandwidth. ---- */

/* --backend hip: the model on GPU device, eager and production, through the
 * module's table (engine/gpu_backend.h) as the engine runner calls it, with
 * the kernel launches and host<->device copies counted over the decode. */
static int bench_gpu(const char *path, int device, vt_matmul_mode matmul, int32_t p, int32_t g, int repeats)
{
    vt_error err;
    vt_error_clear(&err);
    vt_gpu_module_info mi;
    double bw = 0, wb = 0;
    int rc = vt_gpu_module_get(&mi, &err);
    const vt_gpu_backend *b = mi.backend;
    if (rc == VT_OK)
        rc = vt_speed_weight_bytes_per_token(path, &wb, &err);
    /* 4 GiB: far beyond the L2 cache of any GPU (the H200's is 60 MB). */
    if (rc == VT_OK)
        rc = b->read_bandwidth(device, (size_t)4 << 30, 5, &bw, &err);
    if (rc != VT_OK) {
        fprintf(stderr, "engine_bench: %s: %s\n", path, err.msg);
        return rc;
    }
    char dev[160] = "";
    b->device_name(device, dev, sizeof dev, &err);
    printf("model %s on %s (module %s, sha256 %s)\n", path, dev, mi.path, mi.sha256);
    printf("  device read bandwidth %.1f GB/s (best of 5 passes over 4 GiB); weights read per token %.1f MB; "
           "limit %.1f tok/s\n", bw * 1e-9, wb * 1e-6, bw / wb);
    printf("%-30s %-10s %-8s %12s %12s %12s %10s %10s %10s\n", "model", "mode", "phase", "best tok/s", "min tok/s",
           "max tok/s", "launch/tok", "copy/tok", "of limit");
    const char *name = base_name(path);
    for (int mode = 0; mode < 2 && rc == VT_OK; mode++) {
        vt_runner_settings s;
        vt_runner_settings_default(&s);
        s.model_path = path;
        s.mode = mode ? VT_MODE_EAGER : VT_MODE_PRODUCTION;
        s.backend = VT_BACKEND_HIP;
        s.device = device;
        s.matmul = matmul;
        s.n_ctx = p + g;
        s.n_batch = p;
        void *m = NULL;
        if ((rc = b->open(&s, &m, &err)) != VT_OK) {
            fprintf(stderr, "engine_bench: %s: %s\n", path, err.msg);
            break;
        }
        const int32_t nv = b->n_vocab(m);
        int32_t *prompt = malloc((size_t)p * sizeof *prompt);
        float *logits = malloc((size_t)nv * sizeof *logits);
        if (!prompt || !logits) {
            fprintf(stderr, "engine_bench: out of memory\n");
            rc = VT_EINPUT;
        }
        uint64_t x = 0x9E3779B97F4A7C15ull;
        uint32_t span = (uint32_t)(nv - nv / 10);
        for (int32_t i = 0; rc == VT_OK && i < p; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            prompt[i] = (int32_t)((x >> 11) % span);
        }
        double pf[101], dc[101];
        uint64_t launches = 0, copies = 0;
        /* Repeat 0 warms up (allocations, module load, clocks). */
        for (int r = 0; rc == VT_OK && r <= repeats; r++) {
            b->reset(m);
            double t0 = now();
            rc = b->eval(m, prompt, p, 0, logits, &err);
            double t1 = now();
            uint64_t l0, c0, l1, c1;
            b->counts(m, &l0, &c0);
            for (int32_t i = 1; rc == VT_OK && i < g; i++) {
                int32_t tok = vt_argmax(logits, nv);
                rc = b->eval(m, &tok, 1, 0, logits, &err);
            }
            double t2 = now();
            b->counts(m, &l1, &c1);
            launches = l1 - l0;
            copies = c1 - c0;
            if (r > 0) {
                pf[r] = p / (t1 - t0);
                dc[r] = (g - 1) / (t2 - t1);
            }
        }
        if (rc != VT_OK)
            fprintf(stderr, "engine_bench: %s: %s\n", path, err.msg);
        else {
            double pb = 0, pmin = 1e300, pmax = 0, db = 0, dmin = 1e300, dmax = 0;
            for (int r = 1; r <= repeats; r++) {
                pb = pf[r] > pb ? pf[r] : pb;
                pmin = pf[r] < pmin ? pf[r] : pmin;
                db = dc[r] > db ? dc[r] : db;
                dmin = dc[r] < dmin ? dc[r] : dmin;
            }
            pmax = pb;
            dmax = db;
            const char *mn = mode ? "eager" : "production";
            printf("%-30s %-10s %-8s %12.2f %12.2f %12.2f %10s %10s %10s\n", name, mn, "prefill", pb, pmin, pmax, "",
                   "", "");
            printf("%-30s %-10s %-8s %12.2f %12.2f %12.2f %10.1f %10.1f %9.1f%%\n", name, mn, "decode", db, dmin,
                   dmax, (double)launches / (g - 1), (double)copies / (g - 1), 100.0 * db / (bw / wb));
        }
        fflush(stdout);
        free(prompt);
        free(logits);
        b->close(m);
    }
    return rc;
}

/* ---- Fixtures. ---- */

static int make_fixture(vt_ggml **g, const char *arch, const char *preset, const char *path)
{
    struct stat st;
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
        printf("reusing %s\n", path);
        return VT_OK;
    }
    vt_error err;
    vt_error_clear(&err);
    if (!*g && !(*g = vt_ggml_open(NULL, &err))) {
        fprintf(stderr, "engine_bench: %s\n", err.msg);
        return err.code ? err.code : VT_EINPUT;
    }
    double t0 = now();
    int rc;
    if (strcmp(arch, "qwen35") == 0) {
        vt_qwen35_fixture_opts o;
        memset(&o, 0, sizeof o);
        if (!vt_qwen35_preset(preset, &o.shape)) {
            fprintf(stderr, "engine_bench: qwen35 preset %s: unknown\n", preset);
            return VT_EINPUT;
        }
        o.weights_type = VT_TYPE_Q8_0;
        o.seed = 1;
        rc = vt_fixture_make_qwen35(*g, &o, path, &err);
    } else {
        vt_qwen3_fixture_opts o;
        memset(&o, 0, sizeof o);
        if (!vt_qwen3_preset(preset, &o.shape)) {
            fprintf(stderr, "engine_bench: qwen3 preset %s: unknown\n", preset);
            return VT_EINPUT;
        }
        o.weights_type = VT_TYPE_Q8_0;
        o.seed = 1;
        rc = vt_fixture_make_qwen3(*g, &o, path, &err);
    }
    if (rc != VT_OK) {
        fprintf(stderr, "engine_bench: %s: %s\n", path, err.msg);
        return rc;
    }
    stat(path, &st);
    printf("wrote %s (%s %s, Q8_0, %.0f MB) in %.1f s\n", path, arch, preset, (double)st.st_size / 1e6, now() - t0);
    fflush(stdout);
    return VT_OK;
}

static int usage(void)
{
    fprintf(stderr, "usage: engine_bench [--model X.gguf]... [--preset bench|tiny] [--threads N] [--prompt-tokens P]\n"
                    "                    [--gen-tokens G] [--repeats R] [--keep DIR] [--verbose]\n"
                    "                    [--backend cpu|hip] [--device N] [--matmul exact|q8 (hip)]\n");
    return 2;
}

static int parse_int(const char *s, long lo, long hi, int32_t *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (!*s || *end || errno || v < lo || v > hi)
        return 0;
    *out = (int32_t)v;
    return 1;
}

int main(int argc, char **argv)
{
    const char *models[MAX_MODELS];
    int n_models = 0;
    const char *preset = "bench", *keep = NULL;
    vt_runner_settings d;
    vt_runner_settings_default(&d);
    int32_t threads = d.n_threads, p = 128, g = 32, repeats = 3, device = 0;
    vt_backend backend = VT_BACKEND_CPU;
    vt_matmul_mode gpu_matmul = VT_MATMUL_EXACT; /* --backend hip only */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--verbose") == 0) {
            verbose = 1;
            continue;
        }
        if (!v)
            return usage();
        i++;
        if (strcmp(a, "--model") == 0) {
            if (n_models == MAX_MODELS) {
                fprintf(stderr, "engine_bench: --model: at most %d\n", MAX_MODELS);
                return 2;
            }
            models[n_models++] = v;
        } else if (strcmp(a, "--preset") == 0) {
            if (strcmp(v, "bench") != 0 && strcmp(v, "tiny") != 0) {
                fprintf(stderr, "engine_bench: --preset '%s': expected bench or tiny\n", v);
                return 2;
            }
            preset = v;
        } else if (strcmp(a, "--threads") == 0) {
            if (!parse_int(v, 1, 256, &threads)) {
                fprintf(stderr, "engine_bench: --threads '%s': expected 1..256\n", v);
                return 2;
            }
        } else if (strcmp(a, "--prompt-tokens") == 0) {
            if (!parse_int(v, 1, 1 << 16, &p)) {
                fprintf(stderr, "engine_bench: --prompt-tokens '%s': expected 1..65536\n", v);
                return 2;
            }
        } else if (strcmp(a, "--gen-tokens") == 0) {
            if (!parse_int(v, 2, 1 << 16, &g)) {
                fprintf(stderr, "engine_bench: --gen-tokens '%s': expected 2..65536\n", v);
                return 2;
            }
        } else if (strcmp(a, "--repeats") == 0) {
            if (!parse_int(v, 1, 100, &repeats)) {
                fprintf(stderr, "engine_bench: --repeats '%s': expected 1..100\n", v);
                return 2;
            }
        } else if (strcmp(a, "--keep") == 0) {
            keep = v;
        } else if (strcmp(a, "--backend") == 0) {
            if (!vt_backend_parse(v, &backend)) {
                fprintf(stderr, "engine_bench: --backend '%s': expected cpu or hip\n", v);
                return 2;
            }
        } else if (strcmp(a, "--matmul") == 0) {
            if (!vt_matmul_mode_parse(v, &gpu_matmul)) {
                fprintf(stderr, "engine_bench: --matmul '%s': expected exact or q8\n", v);
                return 2;
            }
        } else if (strcmp(a, "--device") == 0) {
            if (!parse_int(v, 0, 63, &device)) {
                fprintf(stderr, "engine_bench: --device '%s': expected 0..63\n", v);
                return 2;
            }
        } else {
            return usage();
        }
    }

    char dir[4096] = "", made[2][4200];
    int n_made = 0, rc = VT_OK;
    if (n_models == 0) {
        if (keep) {
            snprintf(dir, sizeof dir, "%s", keep);
            if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
                perror(dir);
                return 2;
            }
        } else {
            const char *tmp = getenv("TMPDIR");
            snprintf(dir, sizeof dir, "%s/engine-bench-XXXXXX", tmp && *tmp ? tmp : "/tmp");
            if (!mkdtemp(dir)) {
                perror("mkdtemp");
                return 2;
            }
        }
        int tiny = strcmp(preset, "tiny") == 0;
        const char *arch[2] = { "qwen3", "qwen35" };
        const char *pre[2] = { tiny ? "tiny" : "bench-0.6b", tiny ? "tiny" : "bench-0.8b" };
        vt_ggml *gg = NULL;
        for (int k = 0; k < 2 && rc == VT_OK; k++) {
            snprintf(made[k], sizeof made[k], "%s/%s-%s-Q8_0.gguf", dir, arch[k], pre[k]);
            rc = make_fixture(&gg, arch[k], pre[k], made[k]);
            if (rc == VT_OK)
                models[n_models++] = made[k];
            n_made = k + 1;
        }
        vt_ggml_free(gg);
        if (rc != VT_OK)
            goto cleanup;
    }

    if (backend == VT_BACKEND_HIP) {
        printf("engine_bench: the GPU backend (--backend hip, device %d, matmul %s), prompt %d tokens, %d tokens "
               "greedy, %d repeats after one warm-up; the anchor is the device's read bandwidth\n",
               device, vt_matmul_mode_name(gpu_matmul), p, g, repeats);
        for (int m = 0; m < n_models; m++) {
            int r = bench_gpu(models[m], device, gpu_matmul, p, g, repeats);
            if (r != VT_OK && rc == VT_OK)
                rc = r;
        }
        goto cleanup;
    }
    printf("engine_bench: engine vs llama.cpp, production mode, %d threads, prompt %d tokens (one batch), "
           "%d tokens greedy, best of %d after one warm-up\n",
           threads, p, g, repeats);
    fflush(stdout);
    for (int m = 0; m < n_models; m++) {
        int r = bench_model(models[m], threads, p, g, repeats);
        if (r != VT_OK && rc == VT_OK)
            rc = r;
    }

cleanup:
    if (n_made && !keep) {
        for (int k = 0; k < n_made; k++)
            unlink(made[k]);
        rmdir(dir);
    }
    return rc;
}
