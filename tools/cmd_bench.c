/* vt bench: the engine's speed against llama.cpp's on one GGUF, both in one
 * process, alternately, with the decode bandwidth limit measured in the same
 * run (compare/speed.h). Numbers only: nothing here passes or fails. */
#include "cmds.h"

#include "../common/vt_json.h"
#include "../common/vt_parse.h"
#include "../compare/speed.h"
#include "../engine/runner.h"
#include "runner_opts.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage_text[] =
    "usage: vt bench --vs llamacpp --model X.gguf [--threads N] [--prefill 512] [--decode 128]\n"
    "                [--runs 5] [--bandwidth-mib 2048] [--json] [runner options]\n"
    "\n"
    "The engine runner and the --vs runner (llama.cpp) on the same GGUF with the same settings\n"
    "(production mode, greedy, n_batch = --prefill), in one process: each generates once to warm\n"
    "up, then --runs runs alternate (the engine first on even runs, llama.cpp first on odd ones).\n"
    "A run is --decode greedy tokens after a prompt of --prefill tokens: prefill tokens/s from the\n"
    "prompt's one batch, decode tokens/s from the --decode - 1 single-token steps. Prints each\n"
    "phase's median tokens/s with its spread (smallest..largest run), the ratio engine/llama.cpp\n"
    "(the median of the per-run ratios, each run's two runners adjacent in time; above 1: the\n"
    "engine is faster) and the decode bandwidth limit: the weight bytes one decode step reads\n"
    "over the read bandwidth --threads threads get from memory (passes over a --bandwidth-mib MiB\n"
    "buffer: the median of 3 just before each pair of runs; also 5 before and after all runs),\n"
    "and each runner's fraction of it: each run's decode over the bandwidth measured just before\n"
    "it (a shared machine's bandwidth moves between runs), median and spread.\n"
    "On a loaded machine the ratios swing: run it quiet and look at the spread.\n"
    "\n"
    "example: vt bench --vs llamacpp --model bench-0.6b-Q8_0.gguf --threads 2 --runs 5\n";

static int bad(const char *opt, const char *val, const char *expected)
{
    fprintf(stderr, "vt bench: %s '%s': expected %s\n", opt, val ? val : "", expected);
    return 2;
}

static const char *display_name(const char *registry_name)
{
    return strcmp(registry_name, "llamacpp") == 0 ? "llama.cpp" : registry_name;
}

static cJSON *stat_json(vt_speed_stat st, const double *runs, int n)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "median", st.median);
    cJSON_AddNumberToObject(o, "min", st.min);
    cJSON_AddNumberToObject(o, "max", st.max);
    cJSON *a = cJSON_AddArrayToObject(o, "runs");
    for (int i = 0; a && i < n; i++)
        cJSON_AddItemToArray(a, cJSON_CreateNumber(runs[i]));
    return o;
}

/* Each run's decode over the limit the read bandwidth measured just before
 * it gives (bytes per token wb), for side k; and their statistics. */
static vt_speed_stat decode_fractions(const vt_speed_result *r, int k, double wb, double *frac)
{
    for (int i = 0; i < r->runs; i++)
        frac[i] = r->side[k].decode[i] * wb / r->read_bw[i];
    return vt_speed_stat_of(frac, r->runs);
}

static int print_json(const vt_runner_settings *s, const vt_speed_result *r, double bw0, double bw1,
                      double bw_bytes, double wb)
{
    const unsigned long fail0 = vt_json_alloc_failures();
    cJSON *root = cJSON_CreateObject();
    if (!root)
        return -1;
    cJSON_AddStringToObject(root, "format", "vt.bench/2");
    vt_json_add_bytes(root, "model", s->model_path, strlen(s->model_path));
    cJSON_AddNumberToObject(root, "prefill_tokens", r->prefill_tokens);
    cJSON_AddNumberToObject(root, "decode_tokens", r->decode_tokens);
    cJSON_AddNumberToObject(root, "runs", r->runs);
    cJSON *runners = cJSON_AddArrayToObject(root, "runners");
    for (int k = 0; runners && k < 2; k++) {
        const vt_speed_side *sd = &r->side[k];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToArray(runners, o);
        cJSON_AddStringToObject(o, "runner", sd->name);
        vt_json_add_bytes(o, "version", sd->version, strlen(sd->version));
        vt_json_add_bytes(o, "detail", sd->detail, strlen(sd->detail));
        cJSON_AddStringToObject(o, "mode", vt_exec_mode_name(sd->resolved.mode));
        cJSON_AddNumberToObject(o, "threads", sd->resolved.n_threads);
        cJSON_AddNumberToObject(o, "n_ctx", sd->resolved.n_ctx);
        cJSON_AddNumberToObject(o, "n_batch", sd->resolved.n_batch);
        cJSON_AddStringToObject(o, "cache_dtype", vt_cache_dtype_name(sd->resolved.cache_dtype));
        cJSON_AddStringToObject(o, "matmul", vt_matmul_mode_name(sd->resolved.matmul));
        cJSON_AddItemToObject(o, "prefill_tok_s", stat_json(sd->prefill_stat, sd->prefill, r->runs));
        cJSON_AddItemToObject(o, "decode_tok_s", stat_json(sd->decode_stat, sd->decode, r->runs));
        double frac[VT_SPEED_MAX_RUNS];
        const vt_speed_stat fs = decode_fractions(r, k, wb, frac);
        cJSON_AddNumberToObject(o, "decode_fraction_of_limit", fs.median);
        cJSON_AddItemToObject(o, "decode_fraction_of_limit_runs", stat_json(fs, frac, r->runs));
    }
    cJSON *ratio = cJSON_AddObjectToObject(root, "ratio");
    if (ratio) {
        cJSON_AddItemToObject(ratio, "prefill", stat_json(r->prefill_ratio_stat, r->prefill_ratio, r->runs));
        cJSON_AddItemToObject(ratio, "decode", stat_json(r->decode_ratio_stat, r->decode_ratio, r->runs));
    }
    cJSON *lim = cJSON_AddObjectToObject(root, "decode_limit");
    if (lim) {
        cJSON_AddNumberToObject(lim, "read_bytes_per_s", r->read_bw_stat.median);
        cJSON_AddItemToObject(lim, "read_bytes_per_s_runs", stat_json(r->read_bw_stat, r->read_bw, r->runs));
        cJSON_AddNumberToObject(lim, "read_bytes_per_s_before", bw0);
        cJSON_AddNumberToObject(lim, "read_bytes_per_s_after", bw1);
        cJSON_AddNumberToObject(lim, "read_buffer_bytes", bw_bytes);
        cJSON_AddNumberToObject(lim, "weight_bytes_per_token", wb);
        cJSON_AddNumberToObject(lim, "tok_s", r->read_bw_stat.median / wb);
    }
    cJSON_AddNumberToObject(root, "greedy_agree", r->greedy_agree);
    cJSON_AddNumberToObject(root, "first_difference", r->first_difference);
    char *text = vt_json_alloc_failures() == fail0 ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    if (!text)
        return -1;
    puts(text);
    cJSON_free(text);
    return 0;
}

int vt_cmd_bench(int argc, char **argv)
{
    vt_runner_settings s;
    vt_runner_settings_default(&s);
    s.mode = VT_MODE_PRODUCTION;
    const char *vs = NULL;
    int64_t p = 512, g = 128, runs = 5, bw_mib = 2048;
    int json = 0;
    vt_opt_seen seen = { .n = 0 };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0) {
            fputs(usage_text, stdout);
            fputs(vt_runner_options_usage, stdout);
            return 0;
        }
        if (strcmp(a, "--json") == 0) {
            json = 1;
            continue;
        }
        const char *v = i + 1 < argc ? argv[++i] : NULL;
        if (!v)
            return bad(a, "", "a value after the option");
        if (!vt_opt_once(&seen, a))
            return bad(a, v, "the option once (given twice)");
        if (strcmp(a, "--model") == 0) {
            s.model_path = v;
        } else if (strcmp(a, "--vs") == 0) {
            vs = v;
        } else if (strcmp(a, "--prefill") == 0) {
            if (!vt_parse_i64(v, 1, 65536, &p))
                return bad(a, v, "an integer in 1..65536");
        } else if (strcmp(a, "--decode") == 0) {
            if (!vt_parse_i64(v, 2, 65536, &g))
                return bad(a, v, "an integer in 2..65536");
        } else if (strcmp(a, "--runs") == 0) {
            if (!vt_parse_i64(v, 1, VT_SPEED_MAX_RUNS, &runs))
                return bad(a, v, "an integer in 1..100");
        } else if (strcmp(a, "--bandwidth-mib") == 0) {
            if (!vt_parse_i64(v, 64, 65536, &bw_mib))
                return bad(a, v, "an integer in 64..65536 (MiB)");
        } else {
            int r = vt_runner_option("vt bench", a, v, &s);
            if (r < 0)
                return 2;
            if (r == 0)
                return bad("option", a, "one of the options in 'vt bench --help'");
        }
    }
    if (!vs)
        return bad("--vs", "", "the anchor runner: llamacpp");
    if (strcmp(vs, "llamacpp") != 0)
        return bad("--vs", vs, "llamacpp (the engine's anchor)");
    if (!s.model_path)
        return bad("--model", "", "a GGUF file");
    if (s.backend != VT_BACKEND_CPU)
        return bad("--backend", vt_backend_name(s.backend), "cpu (the GPU backend: bench/engine_bench --backend hip)");
    if (s.mode != VT_MODE_PRODUCTION)
        return bad("--mode", vt_exec_mode_name(s.mode), "production (eager is the one-thread reference path)");
    const vt_runner_ops *lo, *oo;
    if (vt_runner_pair("vt bench", "engine", vs, s.backend, &lo, &oo))
        return 2;

    vt_error err;
    vt_error_clear(&err);
    double wb = 0, bw0 = 0, bw1 = 0;
    const size_t bw_bytes = (size_t)bw_mib << 20;
    static vt_speed_result r; /* large: the per-run arrays */
    /* the threads the engine will apply (vt_cpu_configure: one per CPU
     * unless --threads) */
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    const int threads = s.n_threads > 0 ? (int)s.n_threads : (int)(cpus > 0 ? cpus : 1);
    int rc = vt_speed_weight_bytes_per_token(s.model_path, &wb, &err);
    if (rc == VT_OK)
        rc = vt_speed_read_bandwidth(threads, bw_bytes, 5, &bw0, &err);
    const vt_speed_probe probe = { threads, bw_bytes, 3 };
    if (rc == VT_OK)
        rc = vt_speed_compare(lo, oo, &s, (int32_t)p, (int32_t)g, (int)runs, &probe, &r, &err);
    if (rc == VT_OK)
        rc = vt_speed_read_bandwidth(threads, bw_bytes, 5, &bw1, &err);
    if (rc != VT_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return rc == VT_ECHECK ? 1 : 2;
    }
    /* the limit: the median of the bandwidths measured next to the runs;
     * each run's fraction is taken against its own */
    const double limit = r.read_bw_stat.median / wb;
    if (json) {
        if (print_json(&s, &r, bw0, bw1, (double)bw_bytes, wb)) {
            fprintf(stderr, "vt bench: out of memory\n");
            return 2;
        }
        return 0;
    }
    printf("vt bench: %s, prefill %d tokens, decode %d tokens, %d runs alternated after one warm-up each\n",
           s.model_path, (int)p, (int)g, (int)runs);
    for (int k = 0; k < 2; k++) {
        const vt_speed_side *sd = &r.side[k];
        printf("  %-9s %s: %s, threads %d, n_ctx %d, n_batch %d, cache %s, matmul %s; %s\n",
               display_name(sd->name), sd->version, vt_exec_mode_name(sd->resolved.mode), sd->resolved.n_threads,
               sd->resolved.n_ctx, sd->resolved.n_batch, vt_cache_dtype_name(sd->resolved.cache_dtype),
               vt_matmul_mode_name(sd->resolved.matmul), sd->detail);
    }
    const vt_runner_settings *e = &r.side[0].resolved, *l = &r.side[1].resolved;
    if (e->n_threads != l->n_threads || l->n_ctx < e->n_ctx || e->n_batch != l->n_batch ||
        e->cache_dtype != l->cache_dtype || e->mode != l->mode)
        printf("  NOTE: the runners apply different settings (above)\n");
    printf("%-8s %-10s %14s %22s %20s\n", "phase", "runner", "median tok/s", "spread (min..max)", "of limit (spread)");
    const char *phase[2] = { "prefill", "decode" };
    for (int ph = 0; ph < 2; ph++)
        for (int k = 0; k < 2; k++) {
            const vt_speed_stat st = ph ? r.side[k].decode_stat : r.side[k].prefill_stat;
            char spread[48], frac[40] = "";
            snprintf(spread, sizeof spread, "%.2f..%.2f", st.min, st.max);
            if (ph) {
                double f[VT_SPEED_MAX_RUNS];
                const vt_speed_stat fs = decode_fractions(&r, k, wb, f);
                snprintf(frac, sizeof frac, "%.1f%% (%.1f..%.1f)", 100.0 * fs.median, 100.0 * fs.min, 100.0 * fs.max);
            }
            printf("%-8s %-10s %14.2f %22s %20s\n", phase[ph], display_name(r.side[k].name), st.median, spread, frac);
        }
    printf("ratio engine/llama.cpp (median of the per-run ratios, spread): prefill %.3f (%.3f..%.3f), decode %.3f "
           "(%.3f..%.3f)\n",
           r.prefill_ratio_stat.median, r.prefill_ratio_stat.min, r.prefill_ratio_stat.max,
           r.decode_ratio_stat.median, r.decode_ratio_stat.min, r.decode_ratio_stat.max);
    printf("decode limit: weights %.1f MB per token over a read bandwidth of %.2f GB/s (%d threads, passes over "
           "%lld MiB; before each pair of runs the median of 3, these medians' median, spread %.2f..%.2f; before all "
           "runs %.2f and after %.2f, median of 5): %.2f tok/s; of limit: each run's decode over the bandwidth "
           "measured just before it\n",
           wb * 1e-6, r.read_bw_stat.median * 1e-9, threads, (long long)bw_mib, r.read_bw_stat.min * 1e-9,
           r.read_bw_stat.max * 1e-9, bw0 * 1e-9, bw1 * 1e-9, limit);
    if (r.first_difference < 0)
        printf("greedy tokens agree: %d/%d\n", r.greedy_agree, (int)g);
    else
        printf("greedy tokens agree: %d/%d (first difference at token %d)\n", r.greedy_agree, (int)g,
               r.first_difference);
    return 0;
}
