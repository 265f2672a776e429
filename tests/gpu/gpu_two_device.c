/* The two-device witness (seed 003: "the required two-device queue, bounds,
 * and recovery witness"; needs two GPUs, scripts/gpu-build builds it, CI
 * only compiles it). In one process, each device gets its own Q8_0 and
 * Q4_K tables and its own qwen3 model, each made and used from its own
 * thread (every entry point binds its device before allocation and launch)
 * on its own streams:
 *   1. one device at a time: the packed gather of N ids from each table
 *      (F32) and a decode (prompt, then one token per evaluation: the
 *      captured decode step) on each device, checked against the CPU
 *      (vt_codec_gather_rows, the CPU engine) bit for bit;
 *   2. both at once, R rounds, each started together: the clean device
 *      repeats its gathers and its decode; the faulted device is first fed
 *      a bad id (its position and id reported, the host output untouched)
 *      and, halfway through its decode, a bad token (refused, the model
 *      unchanged), then repeats the same good work;
 *   3. every result of 2 must be bit-identical to that device's one-device
 *      run of 1: the clean device unaffected, the faulted one recovered;
 *   4. one thread driving both devices in turn (a decode step on one, then
 *      on the other; the gathers alternating): each call must bind its own
 *      device, and every result is again the one-device run's.
 * Exit 0 all passed, 1 a check failed, 2 fewer than two devices (skipped,
 * saying why) or bad usage. --devices 0,0 runs the same on one device
 * twice (two contexts, two threads): a check of this program on a
 * one-GPU machine, not the witness, and it says so.
 * usage: gpu_two_device [--devices A,B] [--ids N] [--rounds R] [--steps S]
 *        MODEL.gguf   (a qwen3 model; scripts/gpu-verify gives tiny Q8_0) */
#include "engine/codec.h"
#include "engine/hip/vt_gpu.h"
#include "tests/gpu/gpu_random_table.h"
#include "engine/qwen3.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { N_TABLES = 2, PROMPT = 8, ROWS = 4096, COLS = 512 };
static const int table_types[N_TABLES] = { VT_TYPE_Q8_0, VT_TYPE_Q4_K };

/* What both devices are given: the same tables, ids and tokens, and what
 * the CPU makes of them. */
typedef struct shared_input {
    const char *model;
    int64_t n_ids;
    int32_t steps, rounds, n_vocab;
    uint8_t *table[N_TABLES];
    int64_t *ids;
    int32_t *tokens;     /* PROMPT + steps */
    float *cpu_gather[N_TABLES];
    float *cpu_logits;   /* (1 + steps) x n_vocab: the prompt's last position, then each step */
    pthread_barrier_t start;
} shared_input;

/* One device's side: its handles, its one-device results, its counts. */
typedef struct side {
    int device, faulted;
    const shared_input *in;
    vt_gpu_table *table[N_TABLES];
    vt_gpu_qwen3 *model;
    float *solo_gather[N_TABLES], *solo_logits, *gather, *logits;
    /* counts over the rounds of 2 */
    int gathers_same, decodes_same, bad_ids_ok, bad_tokens_ok;
    int failures;
    char first_failure[512];
} side;

static void fail(side *s, const char *what, const char *msg)
{
    if (!s->failures++)
        snprintf(s->first_failure, sizeof s->first_failure, "device %d: %s: %.400s", s->device, what, msg);
}

static uint64_t rng_state; /* the main thread's draws only */

static uint64_t next_u64(void) { return splitmix64(&rng_state); }

static void settings_of(const shared_input *in, vt_runner_settings *s)
{
    vt_runner_settings_default(s);
    s->model_path = in->model;
    s->mode = VT_MODE_PRODUCTION;
    s->cache_dtype = VT_CACHE_F32;
    s->n_threads = 2;
    s->n_ctx = PROMPT + in->steps;
}

/* The prompt in one evaluation, then one token per evaluation (the
 * captured decode step); with fault_round > 0, a bad token halfway (-1 or
 * n_vocab, by the round): it must be refused, the logits buffer untouched
 * and the model left as it was. */
static int decode(side *s, float *logits, int fault_round, vt_error *err)
{
    const shared_input *in = s->in;
    const size_t V = (size_t)in->n_vocab;
    vt_gpu_qwen3_reset(s->model);
    int rc = vt_gpu_qwen3_eval(s->model, in->tokens, PROMPT, 0, logits, err);
    for (int32_t k = 0; rc == VT_OK && k < in->steps; k++) {
        if (fault_round && k == in->steps / 2) {
            const int32_t bad = fault_round % 2 ? -1 : in->n_vocab;
            float *scratch = s->gather; /* any buffer of V floats: must stay as it was */
            memset(scratch, 0x5a, V * sizeof(float));
            vt_error e2;
            vt_error_clear(&e2);
            const int brc = vt_gpu_qwen3_eval(s->model, &bad, 1, 0, scratch, &e2);
            int untouched = 1;
            for (size_t b = 0; b < V * sizeof(float); b++)
                untouched &= ((const uint8_t *)scratch)[b] == 0x5a;
            if (brc == VT_EINPUT && strstr(e2.msg, "expected 0 <= id <") && untouched)
                s->bad_tokens_ok++;
            else
                fail(s, "bad token", brc == VT_EINPUT ? "the logits were written" : "accepted");
        }
        rc = vt_gpu_qwen3_eval(s->model, in->tokens + PROMPT + k, 1, 0, logits + (size_t)(k + 1) * V, err);
    }
    return rc;
}

/* Each table's gather of the shared ids into out[t]. */
static int gather_all(side *s, float *const *out, vt_error *err)
{
    int rc = VT_OK;
    for (int t = 0; rc == VT_OK && t < N_TABLES; t++)
        rc = vt_gpu_gather(s->table[t], s->in->ids, s->in->n_ids, VT_DTYPE_F32, out[t], err);
    return rc;
}

/* A bad id among good ones: reported (first bad position and its id),
 * the host output untouched. Which id and where follow the round. */
static void feed_bad_id(side *s, int round)
{
    const int64_t bads[] = { -1, ROWS, INT64_MIN, INT64_MAX, ((int64_t)1 << 32) + 1, -((int64_t)1 << 32) };
    const int64_t bad = bads[round % 6];
    const int64_t at = (int64_t)(((uint64_t)round * 7919u + 3u) % (uint64_t)s->in->n_ids);
    int64_t *ids = malloc((size_t)s->in->n_ids * sizeof *ids);
    if (!ids) {
        fail(s, "bad id", "out of memory");
        return;
    }
    memcpy(ids, s->in->ids, (size_t)s->in->n_ids * sizeof *ids);
    ids[at] = bad;
    const size_t bytes = (size_t)s->in->n_ids * COLS * sizeof(float);
    memset(s->gather, 0x5a, bytes);
    vt_error err;
    vt_error_clear(&err);
    const int rc = vt_gpu_gather(s->table[round % N_TABLES], ids, s->in->n_ids, VT_DTYPE_F32, s->gather, &err);
    char want[160];
    snprintf(want, sizeof want, "gather: position %lld: id %lld: expected 0 <= id < %d", (long long)at,
             (long long)bad, ROWS);
    int untouched = 1;
    for (size_t b = 0; b < bytes; b++)
        untouched &= ((const uint8_t *)s->gather)[b] == 0x5a;
    if (rc == VT_EINPUT && !strcmp(err.msg, want) && untouched)
        s->bad_ids_ok++;
    else
        fail(s, "bad id", rc != VT_EINPUT ? "not refused" : untouched ? err.msg : "the host output was written");
    free(ids);
}

static int same(const float *a, const float *b, size_t n) { return memcmp(a, b, n * sizeof(float)) == 0; }

/* One round of 2 on one side. */
static void round_of(side *s, int round)
{
    const shared_input *in = s->in;
    const size_t gn = (size_t)in->n_ids * COLS, ln = (size_t)(1 + in->steps) * (size_t)in->n_vocab;
    vt_error err;
    vt_error_clear(&err);
    if (s->faulted)
        feed_bad_id(s, round);
    int ok = 1;
    for (int t = 0; ok && t < N_TABLES; t++) {
        if (vt_gpu_gather(s->table[t], in->ids, in->n_ids, VT_DTYPE_F32, s->gather, &err)) {
            fail(s, "gather", err.msg);
            ok = 0;
        }
        else if (!same(s->gather, s->solo_gather[t], gn)) {
            fail(s, "gather", "differs from the one-device run");
            ok = 0;
        }
    }
    s->gathers_same += ok;
    if (decode(s, s->logits, s->faulted ? round + 1 : 0, &err))
        fail(s, "decode", err.msg);
    else if (!same(s->logits, s->solo_logits, ln))
        fail(s, "decode", "logits differ from the one-device run");
    else
        s->decodes_same++;
}

static void *run_rounds(void *arg)
{
    side *s = arg;
    for (int r = 0; r < s->in->rounds; r++) {
        /* both sides start each round together, so their work overlaps */
        pthread_barrier_wait((pthread_barrier_t *)&s->in->start);
        round_of(s, r);
    }
    return NULL;
}

/* 1 for one side: open on its device, gather and decode alone, check
 * against the CPU. */
static int open_and_run_alone(side *s, vt_error *err)
{
    const shared_input *in = s->in;
    const size_t gn = (size_t)in->n_ids * COLS, ln = (size_t)(1 + in->steps) * (size_t)in->n_vocab;
    for (int t = 0; t < N_TABLES; t++) {
        if (!(s->table[t] = vt_gpu_table_upload(s->device, vt_codec_by_type(table_types[t]), in->table[t], ROWS, COLS,
                                                err)))
            return err->code;
        if (vt_gpu_table_device(s->table[t]) != s->device)
            return vt_error_set(err, VT_EINPUT, "table on device %d", vt_gpu_table_device(s->table[t]));
    }
    vt_runner_settings st;
    settings_of(in, &st);
    if (!(s->model = vt_gpu_qwen3_open(s->device, &st, err)))
        return err->code;
    int rc = gather_all(s, s->solo_gather, err);
    if (rc == VT_OK)
        rc = decode(s, s->solo_logits, 0, err);
    if (rc)
        return rc;
    for (int t = 0; t < N_TABLES; t++)
        if (!same(s->solo_gather[t], in->cpu_gather[t], gn))
            fail(s, "gather alone", "differs from the CPU's");
    if (!same(s->solo_logits, in->cpu_logits, ln))
        fail(s, "decode alone", "logits differ from the CPU engine's");
    return VT_OK;
}

/* 4: one thread, both sides in turn; the number of results identical to
 * the one-device runs (of 2 decodes and 2 x N_TABLES gathers). */
static int both_in_turn(side *s, vt_error *err)
{
    const shared_input *in = s[0].in;
    const size_t V = (size_t)in->n_vocab, gn = (size_t)in->n_ids * COLS, ln = (size_t)(1 + in->steps) * V;
    int same_count = 0, rc = VT_OK;
    for (int i = 0; i < 2; i++)
        vt_gpu_qwen3_reset(s[i].model);
    for (int i = 0; rc == VT_OK && i < 2; i++)
        rc = vt_gpu_qwen3_eval(s[i].model, in->tokens, PROMPT, 0, s[i].logits, err);
    for (int32_t k = 0; rc == VT_OK && k < in->steps; k++)
        for (int i = 0; rc == VT_OK && i < 2; i++)
            rc = vt_gpu_qwen3_eval(s[i].model, in->tokens + PROMPT + k, 1, 0, s[i].logits + (size_t)(k + 1) * V, err);
    if (rc)
        return -1;
    for (int i = 0; i < 2; i++)
        same_count += same(s[i].logits, s[i].solo_logits, ln);
    for (int t = 0; t < N_TABLES; t++)
        for (int i = 0; i < 2; i++) {
            if (vt_gpu_gather(s[i].table[t], in->ids, in->n_ids, VT_DTYPE_F32, s[i].gather, err))
                return -1;
            same_count += same(s[i].gather, s[i].solo_gather[t], gn);
        }
    return same_count;
}

static void *open_thread(void *arg)
{
    side *s = arg;
    vt_error err;
    vt_error_clear(&err);
    if (open_and_run_alone(s, &err))
        fail(s, "one device alone", err.msg);
    return NULL;
}

/* The CPU's gather and the CPU engine's logits of the same work. */
static int cpu_reference(shared_input *in, vt_error *err)
{
    for (int t = 0; t < N_TABLES; t++) {
        const vt_codec *c = vt_codec_by_type(table_types[t]);
        int rc = vt_codec_gather_rows(c, in->table[t], ROWS, COLS, in->ids, in->n_ids, VT_DTYPE_F32, in->cpu_gather[t],
                                      err);
        if (rc)
            return rc;
    }
    vt_runner_settings st;
    settings_of(in, &st);
    vt_qwen3 *m = vt_qwen3_open(&st, err);
    if (!m)
        return err->code;
    const size_t V = (size_t)in->n_vocab;
    int rc = vt_qwen3_eval(m, in->tokens, PROMPT, 0, in->cpu_logits, err);
    for (int32_t k = 0; rc == VT_OK && k < in->steps; k++)
        rc = vt_qwen3_eval(m, in->tokens + PROMPT + k, 1, 0, in->cpu_logits + (size_t)(k + 1) * V, err);
    vt_qwen3_close(m);
    return rc;
}

static int alloc_side(side *s, const shared_input *in, int device, int faulted)
{
    memset(s, 0, sizeof *s);
    s->device = device;
    s->faulted = faulted;
    s->in = in;
    const size_t gb = (size_t)in->n_ids * COLS * sizeof(float);
    const size_t lb = (size_t)(1 + in->steps) * (size_t)in->n_vocab * sizeof(float);
    int ok = 1;
    for (int t = 0; t < N_TABLES; t++)
        ok &= (s->solo_gather[t] = malloc(gb)) != NULL;
    ok &= (s->gather = malloc(gb > lb ? gb : lb)) != NULL;
    ok &= (s->solo_logits = malloc(lb)) != NULL && (s->logits = malloc(lb)) != NULL;
    return ok;
}

static void free_side(side *s)
{
    for (int t = 0; t < N_TABLES; t++) {
        vt_gpu_table_free(s->table[t]);
        free(s->solo_gather[t]);
    }
    vt_gpu_qwen3_close(s->model);
    free(s->gather);
    free(s->solo_logits);
    free(s->logits);
}

int main(int argc, char **argv)
{
    shared_input in = { .n_ids = 100000, .steps = 8, .rounds = 8 };
    int dev[2] = { 0, 1 }, first = 1;
    for (; first + 1 < argc && argv[first][0] == '-'; first += 2) {
        const char *o = argv[first], *v = argv[first + 1];
        if (!strcmp(o, "--devices") && sscanf(v, "%d,%d", &dev[0], &dev[1]) == 2)
            continue;
        if (!strcmp(o, "--ids"))
            in.n_ids = atoll(v);
        else if (!strcmp(o, "--rounds"))
            in.rounds = atoi(v);
        else if (!strcmp(o, "--steps"))
            in.steps = atoi(v);
        else {
            fprintf(stderr, "gpu_two_device: %s %s: unknown option or bad value\n", o, v);
            return 2;
        }
    }
    if (first + 1 != argc || in.n_ids < 2 || in.rounds < 1 || in.steps < 2 || dev[0] < 0 || dev[1] < 0) {
        fprintf(stderr, "usage: gpu_two_device [--devices A,B] [--ids N >= 2] [--rounds R >= 1] [--steps S >= 2] "
                        "MODEL.gguf (qwen3)\n");
        return 2;
    }
    in.model = argv[first];
    vt_error err;
    vt_error_clear(&err);
    int n_dev = 0;
    if (vt_gpu_device_count(&n_dev, &err)) {
        printf("gpu_two_device: skipped: %s\n", err.msg);
        return 2;
    }
    if (n_dev < 2 && dev[0] != dev[1]) {
        printf("gpu_two_device: skipped: %d GPU device%s here; the witness needs two (--devices 0,0 checks this "
               "program on one)\n", n_dev, n_dev == 1 ? "" : "s");
        return 2;
    }
    char name[2][256];
    for (int i = 0; i < 2; i++)
        if (vt_gpu_device_name(dev[i], name[i], sizeof name[i], &err)) {
            printf("gpu_two_device: %s\n", err.msg);
            return 2;
        }
    printf("device %d: %s (clean); device %d: %s (faulted); %d devices here%s\n", dev[0], name[0], dev[1], name[1],
           n_dev, dev[0] == dev[1] ? "; ONE DEVICE TWICE: a check of this program, not the two-device witness" : "");

    /* the shared input, seeded */
    rng_state = 20;
    in.ids = malloc((size_t)in.n_ids * sizeof *in.ids);
    in.tokens = malloc((size_t)(PROMPT + in.steps) * sizeof *in.tokens);
    int ok = in.ids && in.tokens;
    for (int t = 0; ok && t < N_TABLES; t++) {
        const vt_codec *c = vt_codec_by_type(table_types[t]);
        const size_t rb = vt_codec_row_bytes(c, COLS);
        ok &= (in.table[t] = malloc(rb * ROWS)) != NULL;
        ok &= (in.cpu_gather[t] = malloc((size_t)in.n_ids * COLS * sizeof(float))) != NULL;
        if (ok)
            fill_random_blocks(c, in.table[t], (int64_t)(rb / c->block_bytes) * ROWS, &rng_state);
    }
    if (!ok) {
        fprintf(stderr, "gpu_two_device: out of memory\n");
        return 2;
    }
    in.ids[0] = 0;
    in.ids[1] = ROWS - 1;
    for (int64_t k = 2; k < in.n_ids; k++)
        in.ids[k] = (int64_t)(next_u64() % ROWS);
    vt_runner_settings st;
    settings_of(&in, &st);
    vt_qwen3 *probe = vt_qwen3_open(&st, &err);
    if (!probe) {
        printf("gpu_two_device: %s\n", err.msg);
        return 2;
    }
    in.n_vocab = vt_qwen3_hparams_of(probe)->n_vocab;
    vt_qwen3_close(probe);
    for (int32_t k = 0; k < PROMPT + in.steps; k++)
        in.tokens[k] = (int32_t)(next_u64() % (uint64_t)in.n_vocab);
    if (!(in.cpu_logits = malloc((size_t)(1 + in.steps) * (size_t)in.n_vocab * sizeof(float))) ||
        cpu_reference(&in, &err)) {
        printf("gpu_two_device: cpu: %s\n", in.cpu_logits ? err.msg : "out of memory");
        return 2;
    }
    printf("%lld ids into Q8_0 and Q4_K tables of %d x %d (rows 0 and %d among them); %s: %d prompt tokens, then "
           "%d decode steps (production: the captured step); %d rounds\n",
           (long long)in.n_ids, ROWS, COLS, ROWS - 1, strrchr(in.model, '/') ? strrchr(in.model, '/') + 1 : in.model,
           PROMPT, in.steps, in.rounds);

    side s[2];
    if (!alloc_side(&s[0], &in, dev[0], 0) || !alloc_side(&s[1], &in, dev[1], 1)) {
        fprintf(stderr, "gpu_two_device: out of memory\n");
        return 2;
    }
    /* 1: one device at a time, each from its own thread */
    for (int i = 0; i < 2; i++) {
        pthread_t th;
        pthread_create(&th, NULL, open_thread, &s[i]);
        pthread_join(th, NULL);
        printf("alone     device %d: gather and decode %s\n", s[i].device,
               s[i].failures ? s[i].first_failure : "bit-identical to the CPU's");
    }
    int failures = s[0].failures + s[1].failures;
    if (!failures) {
        /* 2: both at once */
        pthread_barrier_init(&in.start, NULL, 2);
        pthread_t th[2];
        for (int i = 0; i < 2; i++)
            pthread_create(&th[i], NULL, run_rounds, &s[i]);
        for (int i = 0; i < 2; i++)
            pthread_join(th[i], NULL);
        pthread_barrier_destroy(&in.start);
        for (int i = 0; i < 2; i++) {
            printf("together  device %d (%s): gathers identical to alone %d/%d, decodes identical %d/%d", s[i].device,
                   s[i].faulted ? "faulted" : "clean", s[i].gathers_same, in.rounds, s[i].decodes_same, in.rounds);
            if (s[i].faulted)
                printf(", bad ids reported with nothing written %d/%d, bad tokens refused %d/%d", s[i].bad_ids_ok,
                       in.rounds, s[i].bad_tokens_ok, in.rounds);
            printf("\n");
            if (s[i].failures)
                printf("FAIL: %s (%d failures)\n", s[i].first_failure, s[i].failures);
            const int expect = in.rounds * (s[i].faulted ? 4 : 2);
            const int got = s[i].gathers_same + s[i].decodes_same + s[i].bad_ids_ok + s[i].bad_tokens_ok;
            failures += s[i].failures + (got != expect && !s[i].failures);
        }
    }
    if (!failures) {
        /* 4: one thread, both devices in turn */
        const int got = both_in_turn(s, &err), want = 2 + 2 * N_TABLES;
        if (got < 0)
            printf("FAIL: one thread, both devices in turn: %s\n", err.msg);
        else
            printf("in turn   one thread, devices %d and %d: decodes and gathers identical to alone %d/%d\n",
                   dev[0], dev[1], got, want);
        failures += got != want;
    }
    free_side(&s[0]);
    free_side(&s[1]);
    printf("%d failures\n", failures);
    return failures ? 1 : 0;
}
