/* engine_bench: the speed of vt's engine against llama.cpp (the anchor) on
 * the same GGUF, with the same settings, measured side by side in one run.
 *
 *   engine_bench [--model X.gguf]... [--preset bench|tiny] [--threads N]
 *                [--prompt-tokens P] [--gen-tokens G] [--repeats R]
 *                [--keep DIR] [--verbose] [--backend cpu|hip] [--device N] [--matmul exact|q8]
 *
 * Both runners come from the runner registry ("engine", "llamacpp") and run
 * as vt run and vt capture run them: vt_runner_open with one settings
 * record (production mode, --threads N (default: one per CPU), n_ctx P + G,
 * n_batch P, greedy, cache auto, matmul q8), then vt_runner_generate of G
 * tokens after a P-token prompt (default 128 and 32). The only addition is
 * a thin timing layer over each runner's table (runner.h): it forwards every
 * call and times each eval with CLOCK_MONOTONIC, so that one generation
 * gives both phases:
 *   prefill  the first eval after the reset: one batch of P prompt tokens
 *            (last position's logits only), P / seconds;
 *   decode   every later eval: G - 1 single-token steps (the first of the G
 *            tokens comes from the prefill's logits), (G - 1) / seconds.
 * Each runner first generates once to warm up (page cache, thread pools,
 * allocations); then R repeats (default 3), the two runners alternating
 * (engine first on even repeats, llama.cpp first on odd ones) so both see
 * the same machine load; each phase's best repeat is reported, with the
 * ratio engine / llama.cpp (above 1: the engine is faster). As a sanity
 * line, how many of the G greedy tokens the two runners agree on. No
 * assertion on timing. --verbose also prints every repeat's times (the
 * spread shows how noisy the machine is).
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

/* ---- The timing layer: a runner table that forwards to a real one. ---- */

typedef struct timed {
    const vt_runner_ops *real;
    void *state;
    int32_t evals;     /* evals since the last reset */
    double prefill_s;  /* the first eval after the reset */
    double decode_s;   /* every later eval */
    int32_t decode_n;  /* tokens in those */
} timed;

/* open() has no context argument: the table to wrap and the state opened
 * are passed through these (the bench opens runners from one thread). */
static const vt_runner_ops *next_real;
static timed *last_opened;
static int verbose;

static int t_open(const vt_runner_settings *s, void **state, vt_error *err)
{
    timed *t = calloc(1, sizeof *t);
    if (!t)
        return vt_error_set(err, VT_EINPUT, "engine_bench: out of memory");
    t->real = next_real;
    int rc = t->real->open(s, &t->state, err);
    if (rc != VT_OK) {
        free(t);
        return rc;
    }
    *state = t;
    last_opened = t;
    return VT_OK;
}

static int t_reset(void *state, vt_error *err)
{
    timed *t = state;
    t->evals = 0;
    t->prefill_s = t->decode_s = 0.0;
    t->decode_n = 0;
    return t->real->reset(t->state, err);
}

static int t_eval(void *state, const int32_t *tokens, int32_t n, int all_logits, float *logits, vt_error *err)
{
    timed *t = state;
    double t0 = now();
    int rc = t->real->eval(t->state, tokens, n, all_logits, logits, err);
    double dt = now() - t0;
    if (t->evals++ == 0) {
        t->prefill_s = dt;
    } else {
        t->decode_s += dt;
        t->decode_n += n;
    }
    return rc;
}

static int32_t t_n_vocab(void *state)
{
    timed *t = state;
    return t->real->n_vocab(t->state);
}

static void t_identity(void *state, vt_runner_identity *out)
{
    timed *t = state;
    t->real->identity(t->state, out);
}

static void t_resolved(void *state, vt_runner_settings *out)
{
    timed *t = state;
    if (t->real->resolved)
        t->real->resolved(t->state, out);
}

static void t_close(void *state)
{
    timed *t = state;
    if (!t)
        return;
    t->real->close(t->state);
    free(t);
}

static const vt_runner_ops timed_ops = {
    .name = "timed",
    .open = t_open,
    .reset = t_reset,
    .eval = t_eval,
    .n_vocab = t_n_vocab,
    .identity = t_identity,
    .resolved = t_resolved,
    .close = t_close,
};

/* ---- One runner under test. ---- */

typedef struct side {
    const char *name; /* registry name */
    vt_runner *r;
    timed *t;
    double best_prefill, best_decode; /* seconds */
    int32_t *tokens;                  /* the last repeat's G tokens */
} side;

static int side_open(side *sd, const char *name, const vt_runner_settings *s, int32_t g, vt_error *err)
{
    memset(sd, 0, sizeof *sd);
    sd->name = name;
    next_real = vt_runner_find(name);
    if (!next_real)
        return vt_error_set(err, VT_EINPUT, "engine_bench: runner %s: not in the registry", name);
    last_opened = NULL;
    sd->r = vt_runner_open(&timed_ops, s, err);
    if (!sd->r)
        return err->code ? err->code : VT_EINPUT;
    sd->t = last_opened;
    sd->tokens = calloc((size_t)g, sizeof *sd->tokens);
    if (!sd->tokens)
        return vt_error_set(err, VT_EINPUT, "engine_bench: out of memory");
    sd->best_prefill = sd->best_decode = 1e300;
    return VT_OK;
}

static void side_close(side *sd)
{
    vt_runner_close(sd->r);
    free(sd->tokens);
    memset(sd, 0, sizeof *sd);
}

/* One generation; keeps the best times unless warm_up. */
static int side_run(side *sd, const int32_t *prompt, int32_t p, int32_t g, int warm_up, vt_error *err)
{
    int rc = vt_runner_generate(sd->r, prompt, p, g, sd->tokens, NULL, err);
    if (rc != VT_OK)
        return rc;
    if (sd->t->evals != g || sd->t->decode_n != g - 1)
        return vt_error_set(err, VT_EINPUT, "engine_bench: %s: %d evals, %d decode tokens: expected %d and %d",
                            sd->name, sd->t->evals, sd->t->decode_n, g, g - 1);
    if (verbose)
        printf("  %-9s %s  prefill %8.4f s (%9.2f tok/s)  decode %8.4f s (%8.2f tok/s)\n",
               strcmp(sd->name, "engine") == 0 ? "engine" : "llama.cpp", warm_up ? "warm-up" : "repeat ",
               sd->t->prefill_s, p / sd->t->prefill_s, sd->t->decode_s, (g - 1) / sd->t->decode_s);
    if (!warm_up) {
        if (sd->t->prefill_s < sd->best_prefill)
            sd->best_prefill = sd->t->prefill_s;
        if (sd->t->decode_s < sd->best_decode)
            sd->best_decode = sd->t->decode_s;
    }
    return VT_OK;
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static int bench_model(const char *path, int32_t threads, int32_t p, int32_t g, int repeats)
{
    vt_error err;
    vt_error_clear(&err);
    vt_runner_settings s;
    vt_runner_settings_default(&s);
    s.model_path = path;
    s.mode = VT_MODE_PRODUCTION;
    s.n_threads = threads;
    s.n_ctx = p + g;
    s.n_batch = p;

    side sides[2];
    memset(sides, 0, sizeof sides);
    int32_t *prompt = NULL;
    int rc = side_open(&sides[0], "engine", &s, g, &err);
    if (rc == VT_OK)
        rc = side_open(&sides[1], "llamacpp", &s, g, &err);
    if (rc != VT_OK) {
        fprintf(stderr, "engine_bench: %s: %s\n", path, err.msg);
        goto out;
    }
    int32_t nv = vt_runner_n_vocab(sides[0].r);
    if (vt_runner_n_vocab(sides[1].r) != nv) {
        fprintf(stderr, "engine_bench: %s: vocabulary sizes differ: engine %d, llama.cpp %d\n", path, nv,
                vt_runner_n_vocab(sides[1].r));
        rc = VT_ECHECK;
        goto out;
    }
    /* The settings each runner applies: they must be the same. */
    vt_runner_settings re, rl;
    vt_runner_resolved(sides[0].r, &re);
    vt_runner_resolved(sides[1].r, &rl);
    vt_runner_identity ie, il;
    vt_runner_identity_get(sides[0].r, &ie);
    vt_runner_identity_get(sides[1].r, &il);
    printf("model %s: vocabulary %d\n", path, nv);
    printf("  engine    %s: %s, threads %d, n_ctx %d, n_batch %d, cache %s, matmul %s\n", ie.version,
           vt_exec_mode_name(re.mode), re.n_threads, re.n_ctx, re.n_batch, vt_cache_dtype_name(re.cache_dtype),
           vt_matmul_mode_name(re.matmul));
    printf("  llama.cpp %s: %s, threads %d, n_ctx %d, n_batch %d, cache %s, matmul %s\n", il.version,
           vt_exec_mode_name(rl.mode), rl.n_threads, rl.n_ctx, rl.n_batch, vt_cache_dtype_name(rl.cache_dtype),
           vt_matmul_mode_name(rl.matmul));
    if (re.n_threads != rl.n_threads || re.n_ctx != rl.n_ctx || re.n_batch != rl.n_batch ||
        re.cache_dtype != rl.cache_dtype || re.mode != rl.mode)
        printf("  NOTE: the runners apply different settings (above)\n");
    fflush(stdout);

    prompt = malloc((size_t)p * sizeof *prompt);
    if (!prompt) {
        fprintf(stderr, "engine_bench: out of memory\n");
        rc = VT_EINPUT;
        goto out;
    }
    uint64_t x = 0x9E3779B97F4A7C15ull;
    uint32_t span = (uint32_t)(nv - nv / 10);
    for (int32_t i = 0; i < p; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        prompt[i] = (int32_t)((x >> 11) % span);
    }

    for (int k = 0; k < 2 && rc == VT_OK; k++)
        rc = side_run(&sides[k], prompt, p, g, 1, &err);
    for (int r = 0; r < repeats && rc == VT_OK; r++)
        for (int k = 0; k < 2 && rc == VT_OK; k++)
            rc = side_run(&sides[r % 2 ? 1 - k : k], prompt, p, g, 0, &err);
    if (rc != VT_OK) {
        fprintf(stderr, "engine_bench: %s: %s\n", path, err.msg);
        goto out;
    }

    const char *name = base_name(path);
    double ep = p / sides[0].best_prefill, lp = p / sides[1].best_prefill;
    double ed = (g - 1) / sides[0].best_decode, ld = (g - 1) / sides[1].best_decode;
    printf("%-34s %-8s %14s %16s %18s\n", "model", "phase", "engine tok/s", "llama.cpp tok/s", "engine/llama.cpp");
    printf("%-34s %-8s %14.2f %16.2f %18.3f\n", name, "prefill", ep, lp, ep / lp);
    printf("%-34s %-8s %14.2f %16.2f %18.3f\n", name, "decode", ed, ld, ed / ld);
    int same = 0, first = -1;
    for (int32_t i = 0; i < g; i++) {
        if (sides[0].tokens[i] == sides[1].tokens[i])
            same++;
        else if (first < 0)
            first = i;
    }
    if (first < 0)
        printf("%-34s greedy tokens agree: %d/%d\n", name, same, g);
    else
        printf("%-34s greedy tokens agree: %d/%d (first difference at token %d: engine %d, llama.cpp %d)\n", name,
               same, g, first, sides[0].tokens[first], sides[1].tokens[first]);
    fflush(stdout);
out:
    free(prompt);
    side_close(&sides[1]);
    side_close(&sides[0]);
    return rc;
}

/* ---- The GPU backend against the device's read bandwidth. ---- */

/* Bytes of weights one decode step reads: every tensor once, the token
 * embedding table for one row only (negligible, not counted) unless it is
 * also the output head (no output.weight: tied). */
static int weight_bytes_per_token(const char *path, double *out, vt_error *err)
{
    vt_gguf *gg = vt_gguf_open(path, err);
    if (!gg)
        return err->code;
    double sum = 0;
    int tied = vt_gguf_find_tensor(gg, "output.weight") == NULL;
    for (uint64_t i = 0; i < vt_gguf_n_tensors(gg); i++) {
        const vt_gguf_tensor *t = vt_gguf_tensor_at(gg, i);
        int is_embd = t->name.len == 17 && memcmp(t->name.ptr, "token_embd.weight", 17) == 0;
        if (!is_embd || tied)
            sum += (double)t->n_bytes;
    }
    vt_gguf_free(gg);
    *out = sum;
    return VT_OK;
}

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
        rc = weight_bytes_per_token(path, &wb, &err);
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
