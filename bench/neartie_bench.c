/* neartie_bench: how long vt-neartie's scoring takes on large captures.
 *
 *   neartie_bench [--prompts N[,N...]] [--tokens T] [--top-k K] [--keep DIR]
 *
 * For each size (default 1000,2000,5000,10000 prompts x 256 tokens, top-20
 * log-probs per position, one repeat) it writes three synthetic, properly
 * sealed documents in canonical JSON (a local and an oracle vt.capture/2,
 * each with its vt.topk/1 side file of top-20 log-probs, and the oracle's
 * vt.prefix-scores/3) under $TMPDIR (or /tmp), then times what vt-neartie
 * does with them: reading and verifying the five inputs (seals, schema,
 * canonical form, the side files' SHA-256 and every entry), the guards,
 * classification (with the top-k margins at each first divergence), the
 * report, JUnit and table, and publishing the report and JUnit files. Every 50th prompt
 * diverges once with a 125 milli-nat gap (near-tie-only), every 500th with
 * a 600 milli-nat gap (failed); the counts are checked.
 *
 * Beside the total it prints the parts (one capture and its side file read
 * alone, and plain SHA-256 of all five inputs' bytes on one thread (the
 * anchor: OpenSSL's SHA-256, the floor any verification of them has
 * before threads; total/sha is the ratio to it);
 * reading all three, guards, compare, publish), the CPU seconds of the
 * end-to-end part (all threads: steadier than wall time on a shared
 * machine), the input size, and the time per prompt, to show how it
 * grows. The files are written (and synced) first and read from the page
 * cache. */
#include "capture/canonical_json.h"
#include "capture/capture.h"
#include "capture/topk_file.h"
#include "capture/capture_read.h"
#include "compare/neartie_report.h"
#include "provenance/provenance.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum { VOCAB = 151936 };

/* CPU seconds of the whole process, every thread (user + system). */
static double cpu_now(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)u.ru_utime.tv_sec + (double)u.ru_utime.tv_usec * 1e-6 + (double)u.ru_stime.tv_sec +
           (double)u.ru_stime.tv_usec * 1e-6;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}


typedef struct writer {
    FILE *f;
    EVP_MD_CTX *sha;
    char buf[1 << 16];
    size_t n;
} writer;

static void w_flush(writer *w)
{
    EVP_DigestUpdate(w->sha, w->buf, w->n);
    if (fwrite(w->buf, 1, w->n, w->f) != w->n) {
        perror("write");
        exit(2);
    }
    w->n = 0;
}

static inline void w_put(writer *w, const char *s, size_t n)
{
    if (w->n + n > sizeof w->buf)
        w_flush(w);
    if (n > sizeof w->buf) {
        EVP_DigestUpdate(w->sha, s, n);
        if (fwrite(s, 1, n, w->f) != n)
            exit(2);
        return;
    }
    memcpy(w->buf + w->n, s, n);
    w->n += n;
}

static inline void w_str(writer *w, const char *s) { w_put(w, s, strlen(s)); }

static inline void w_int(writer *w, int64_t v)
{
    char t[24];
    int n = snprintf(t, sizeof t, "%lld", (long long)v);
    w_put(w, t, (size_t)n);
}

static const char *hexstr(const unsigned char *md, char *out)
{
    for (int i = 0; i < 32; i++)
        sprintf(out + 2 * i, "%02x", md[i]);
    return out;
}

/* The synthetic streams: local token at (p, i), and where it diverges. */
static int32_t tok_at(int p, int i) { return (int32_t)((p * 7919 + i * 104729) % 150000); }
static int diverges(int p) { return p % 50 == 49; }
static double gap_of(int p) { return p % 500 == 499 ? 0.6 : 0.125; }
enum { DIVERGE_AT = 100 };

/* Prompts, 8 tokens each. */
static cJSON *prompts_json(int P)
{
    cJSON *a = cJSON_CreateArray();
    unsigned char b[32];
    for (int p = 0; p < P; p++) {
        cJSON *e = cJSON_CreateObject();
        char id[32];
        snprintf(id, sizeof id, "p%05d", p);
        cJSON_AddStringToObject(e, "id", id);
        cJSON *t = cJSON_AddArrayToObject(e, "tokens");
        for (int i = 0; i < 8; i++) {
            uint32_t v = (uint32_t)((p * 31 + i * 17) % 150000);
            cJSON_AddItemToArray(t, cJSON_CreateNumber(v));
            for (int k = 0; k < 4; k++)
                b[4 * i + k] = (unsigned char)(v >> (8 * k));
        }
        vt_sha256_hex h;
        vt_sha256_buffer(b, 32, &h);
        cJSON_AddStringToObject(e, "sha256", h.hex);
        cJSON_AddItemToArray(a, e);
    }
    return a;
}

/* Every run's logits_sha256 (one repeat: nothing to compare it with). */
#define LOGITS_SHA "00000000000000000000000000000000000000000000000000000000000000cc"

static cJSON *model_json(void)
{
    cJSON *m = cJSON_CreateObject();
    cJSON *f = cJSON_CreateObject();
    cJSON_AddStringToObject(f, "name", "model.gguf");
    cJSON_AddNumberToObject(f, "size", 1234567);
    cJSON_AddStringToObject(f, "sha256", "5f0c2e7f1e0d4c4b8a8f6f1f9e2d3c4b5a6978877665544332211000ffeeddcc");
    cJSON_AddItemToArray(cJSON_AddArrayToObject(m, "files"), f);
    cJSON_AddNullToObject(m, "revision");
    cJSON_AddStringToObject(m, "arch", "qwen3");
    cJSON *g = cJSON_AddObjectToObject(m, "gguf");
    cJSON_AddNumberToObject(g, "version", 3);
    cJSON_AddNumberToObject(g, "n_kv", 30);
    cJSON_AddNumberToObject(g, "n_tensors", 300);
    cJSON_AddStringToObject(g, "name", "bench");
    cJSON_AddNumberToObject(g, "file_type", 7);
    cJSON_AddNumberToObject(g, "context_length", 40960);
    cJSON_AddNumberToObject(g, "block_count", 28);
    cJSON_AddNumberToObject(g, "embedding_length", 1024);
    cJSON_AddNumberToObject(g, "n_vocab", VOCAB);
    cJSON_AddStringToObject(g, "tokenizer_pre", "qwen2");
    cJSON_AddStringToObject(g, "vocab_sha256", "00000000000000000000000000000000000000000000000000000000000000bb");
    cJSON_AddNumberToObject(cJSON_AddObjectToObject(g, "tensor_types"), "Q8_0", 300);
    cJSON_AddBoolToObject(m, "verified", 1);
    cJSON_AddArrayToObject(m, "problems");
    cJSON_AddNullToObject(m, "manifest");
    return m;
}

static cJSON *settings_json(int prefix, int n_ctx, int T)
{
    cJSON *s = cJSON_CreateObject();
    cJSON_AddStringToObject(s, "mode", "production");
    cJSON_AddStringToObject(s, "cache_dtype", "f32");
    cJSON_AddStringToObject(s, "matmul", "q8");
    cJSON_AddNumberToObject(s, "threads", 1);
    cJSON_AddNumberToObject(s, "n_ctx", n_ctx);
    cJSON_AddNumberToObject(s, "n_batch", 264);
    if (prefix) {
        cJSON_AddNumberToObject(s, "repetitions", 1);
        return s;
    }
    cJSON_AddNumberToObject(s, "seed", 0);
    cJSON_AddNumberToObject(s, "repetitions", 1);
    cJSON_AddNumberToObject(s, "max_tokens", T);
    cJSON_AddNumberToObject(s, "logprobs_top_k", 20);
    cJSON *sp = cJSON_AddObjectToObject(s, "sampling");
    cJSON_AddNumberToObject(sp, "temperature", 0);
    cJSON_AddNumberToObject(sp, "top_k", 0);
    cJSON_AddNumberToObject(sp, "top_p", 1);
    cJSON_AddNumberToObject(sp, "min_p", 0);
    return s;
}

typedef struct doc_info {
    char seal[65], workload[65], file_sha[65];
    size_t size;
    char topk_sha[65];
    size_t topk_size;
} doc_info;

/* The capture's top-k side file (topk_file.h): at each position the
 * stream's token first, then other ids, log-probs strictly decreasing. The
 * oracle's lists also hold the local token second where the streams
 * diverge, so the report's margins have both tokens. */
static void write_topk(const char *path, int P, int T, int K, int oracle, doc_info *out)
{
    FILE *f = fopen(path, "wb");
    EVP_MD_CTX *sha = EVP_MD_CTX_new();
    unsigned char *buf = malloc((size_t)T * (size_t)K * VT_TOPK_ENTRY);
    if (!f || !sha || !buf || EVP_DigestInit_ex(sha, EVP_sha256(), NULL) != 1) {
        perror(path);
        exit(2);
    }
    unsigned char h[VT_TOPK_HEADER] = { 'V', 'T', 'T', 'O', 'P', 'K', 0, 0, 1, 0, 0, 0 };
    h[12] = (unsigned char)K;
    h[13] = (unsigned char)(K >> 8);
    size_t size = sizeof h;
    EVP_DigestUpdate(sha, h, sizeof h);
    fwrite(h, 1, sizeof h, f);
    for (int p = 0; p < P; p++) {
        unsigned char *q = buf;
        for (int i = 0; i < T; i++) {
            int32_t t = tok_at(p, i), other = -1;
            if (oracle && diverges(p) && i >= DIVERGE_AT) {
                other = t;
                t = (t + 1 + i) % 150000;
            }
            for (int j = 0; j < K; j++, q += VT_TOPK_ENTRY) {
                int32_t id = j == 0 ? t : j == 1 && other >= 0 ? other : (t + 7 * j) % VOCAB;
                float lp = -0.25f - 0.125f * (float)j - 0.0001f * (float)((p + i) % 97);
                uint32_t u, v = (uint32_t)id;
                memcpy(&u, &lp, 4);
                for (int b = 0; b < 4; b++) {
                    q[b] = (unsigned char)(v >> (8 * b));
                    q[4 + b] = (unsigned char)(u >> (8 * b));
                }
            }
        }
        size_t n = (size_t)(q - buf);
        EVP_DigestUpdate(sha, buf, n);
        if (fwrite(buf, 1, n, f) != n) {
            perror(path);
            exit(2);
        }
        size += n;
    }
    unsigned char md[32];
    unsigned int mdn;
    EVP_DigestFinal_ex(sha, md, &mdn);
    hexstr(md, out->topk_sha);
    out->topk_size = size;
    fclose(f);
    EVP_MD_CTX_free(sha);
    free(buf);
}

/* Writes one document: its members but runs through cJSON and the
 * canonical writer, runs streamed; sealed as capture.h says. */
static void write_doc(const char *path, int kind, int P, int T, int K, const char *runner, const doc_info *local,
                      const char *local_name, doc_info *out)
{
    char topk_path[300];
    snprintf(topk_path, sizeof topk_path, "%.*s.topk", (int)strlen(path) - 5, path);
    out->topk_size = 0;
    if (kind == VT_DOC_CAPTURE)
        write_topk(topk_path, P, T, K, strcmp(runner, "llamacpp") == 0, out);
    cJSON *d = cJSON_CreateObject();
    cJSON_AddStringToObject(d, "schema", kind == VT_DOC_PREFIX ? VT_PREFIX_SCORES_SCHEMA : VT_CAPTURE_SCHEMA);
    cJSON *tool = cJSON_AddObjectToObject(d, "tool");
    cJSON_AddStringToObject(tool, "name", "vt-capture");
    cJSON_AddStringToObject(tool, "version", "0.1.0");
    cJSON_AddStringToObject(tool, "git", "bench");
    if (kind == VT_DOC_PREFIX) {
        cJSON *l = cJSON_AddObjectToObject(d, "local");
        cJSON_AddStringToObject(l, "file", local_name);
        cJSON_AddStringToObject(l, "sha256", local->file_sha);
        cJSON_AddStringToObject(l, "schema", VT_CAPTURE_SCHEMA);
        cJSON_AddStringToObject(l, "seal", local->seal);
        cJSON_AddStringToObject(l, "workload_seal", local->workload);
        cJSON_AddStringToObject(d, "shape", "replay");
    }
    cJSON_AddItemToObject(d, "model", model_json());
    cJSON *rt = cJSON_AddObjectToObject(d, "runtime");
    cJSON *rn = cJSON_AddObjectToObject(rt, "runner");
    cJSON_AddStringToObject(rn, "name", runner);
    cJSON_AddStringToObject(rn, "version", "1");
    cJSON_AddStringToObject(rn, "backend", "cpu");
    cJSON_AddStringToObject(rn, "device", "cpu");
    cJSON_AddNullToObject(rn, "library");
    cJSON_AddNullToObject(rn, "detail");
    cJSON_AddNumberToObject(rt, "threads", 1);
    cJSON_AddBoolToObject(rt, "resolved", 1);
    cJSON_AddNullToObject(d, "package");
    cJSON_AddNullToObject(d, "launcher");
    cJSON *set = cJSON_AddObjectToObject(d, "settings");
    cJSON_AddItemToObject(set, "requested", settings_json(kind == VT_DOC_PREFIX, 8 + T, T));
    cJSON_AddItemToObject(set, "resolved", settings_json(kind == VT_DOC_PREFIX, 8 + T, T));
    cJSON_AddArrayToObject(set, "differences");
    if (kind == VT_DOC_CAPTURE) {
        cJSON *pf = cJSON_AddObjectToObject(d, "prompt_file");
        cJSON_AddStringToObject(pf, "name", "prompts.jsonl");
        cJSON_AddNumberToObject(pf, "size", 100);
        cJSON_AddStringToObject(pf, "sha256", "00000000000000000000000000000000000000000000000000000000000000aa");
    }
    cJSON_AddItemToObject(d, "prompts", prompts_json(P));
    cJSON_AddArrayToObject(d, "runs");
    cJSON_AddNullToObject(d, "logits_file");
    if (kind == VT_DOC_CAPTURE) {
        cJSON *tf = cJSON_AddObjectToObject(d, "topk_file");
        const char *slash = strrchr(topk_path, '/');
        cJSON_AddStringToObject(tf, "name", slash ? slash + 1 : topk_path);
        cJSON_AddNumberToObject(tf, "size", (double)out->topk_size);
        cJSON_AddStringToObject(tf, "sha256", out->topk_sha);
        cJSON_AddStringToObject(tf, "format", VT_TOPK_FORMAT);
    }
    cJSON *det = cJSON_AddObjectToObject(d, "determinism");
    cJSON_AddNumberToObject(det, "repeats", 1);
    cJSON_AddBoolToObject(det, "identical_tokens", 1);
    cJSON_AddBoolToObject(det, "identical_logits", 1);
    vt_error err;
    vt_error_clear(&err);
    cJSON *wl = vt_capture_workload(d);
    vt_sha256_hex ws;
    vt_canonical_sha256(wl, &ws, &err);
    cJSON_Delete(wl);
    cJSON_AddStringToObject(d, "workload_seal", ws.hex);
    size_t n;
    char *text = vt_canonical_json(d, &n, &err);
    cJSON_Delete(d);
    char *cut = strstr(text, "\"runs\":[]");
    if (!text || !cut) {
        fprintf(stderr, "bench: canonical JSON failed: %s\n", err.msg);
        exit(2);
    }

    writer *w = calloc(1, sizeof *w);
    w->f = fopen(path, "wb");
    w->sha = EVP_MD_CTX_new();
    if (!w->f || !w->sha || EVP_DigestInit_ex(w->sha, EVP_sha256(), NULL) != 1) {
        perror(path);
        exit(2);
    }
    w_put(w, text, (size_t)(cut - text) + 8); /* ... "runs":[ */
    int oracle = strcmp(runner, "llamacpp") == 0 && kind == VT_DOC_CAPTURE;
    for (int p = 0; p < P; p++) {
        if (p)
            w_put(w, ",", 1);
        w_str(w, "{\"prompt\":");
        w_int(w, p);
        w_str(w, ",\"repeat\":0,\"status\":\"ok\",\"tokens\":[");
        for (int i = 0; i < T; i++) {
            if (i)
                w_put(w, ",", 1);
            int32_t t = tok_at(p, i);
            if (oracle && diverges(p) && i >= DIVERGE_AT)
                t = (t + 1 + i) % 150000;
            w_int(w, t);
        }
        if (kind == VT_DOC_CAPTURE) {
            w_str(w, "],\"logits_sha256\":\"" LOGITS_SHA "\"}");
        } else {
            /* The oracle teacher-forced on the local stream: it agrees
             * everywhere except at the divergence, by gap_of(p) nats. */
            w_str(w, "],\"logprobs\":[");
            for (int i = 0; i < T; i++) {
                w_str(w, i ? "," : "");
                w_str(w, diverges(p) && i == DIVERGE_AT ? (gap_of(p) > 0.5 ? "-0.85" : "-0.375") : "-0.25");
            }
            w_str(w, "],\"argmax\":[");
            for (int i = 0; i < T; i++) {
                if (i)
                    w_put(w, ",", 1);
                int32_t t = tok_at(p, i);
                w_int(w, diverges(p) && i == DIVERGE_AT ? (t + 1 + i) % 150000 : t);
            }
            w_str(w, "],\"argmax_logprobs\":[");
            for (int i = 0; i < T; i++)
                w_str(w, i ? ",-0.25" : "-0.25");
            w_str(w, "],\"logits_sha256\":\"" LOGITS_SHA "\"}");
        }
    }
    size_t tail = strlen(cut + 8);
    w_put(w, cut + 8, tail - 1); /* ],"logits_file":...,"workload_seal":"..." without the final '}' */
    free(text);
    w_flush(w);
    EVP_MD_CTX *file = EVP_MD_CTX_new();
    EVP_MD_CTX_copy_ex(file, w->sha);
    unsigned char md[32];
    unsigned int mdn;
    EVP_DigestUpdate(w->sha, "}", 1);
    EVP_DigestFinal_ex(w->sha, md, &mdn);
    hexstr(md, out->seal);
    char seal_member[128];
    int sn = snprintf(seal_member, sizeof seal_member, ",\"seal\":\"%s\"}\n", out->seal);
    w_put(w, seal_member, (size_t)sn);
    w_flush(w);
    EVP_DigestUpdate(file, seal_member, (size_t)sn);
    EVP_DigestFinal_ex(file, md, &mdn);
    hexstr(md, out->file_sha);
    snprintf(out->workload, sizeof out->workload, "%s", ws.hex);
    out->size = (size_t)ftell(w->f);
    fclose(w->f);
    EVP_MD_CTX_free(w->sha);
    EVP_MD_CTX_free(file);
    free(w);
}

int main(int argc, char **argv)
{
    int sizes[16] = { 1000, 2000, 5000, 10000 }, n_sizes = 4, T = 256, K = 20;
    const char *keep = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--prompts") == 0 && i + 1 < argc) {
            n_sizes = 0;
            for (char *s = strtok(argv[++i], ","); s && n_sizes < 16; s = strtok(NULL, ","))
                sizes[n_sizes++] = atoi(s);
        } else if (strcmp(argv[i], "--tokens") == 0 && i + 1 < argc) {
            T = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--top-k") == 0 && i + 1 < argc) {
            K = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--keep") == 0 && i + 1 < argc) {
            keep = argv[++i];
        } else {
            fprintf(stderr, "usage: neartie_bench [--prompts N[,N...]] [--tokens T] [--top-k K] [--keep DIR]\n");
            return 2;
        }
    }
    if (T <= DIVERGE_AT || K < 1) {
        fprintf(stderr, "neartie_bench: --tokens must exceed %d and --top-k be at least 1\n", DIVERGE_AT);
        return 2;
    }
    char dir[256];
    if (keep) {
        snprintf(dir, sizeof dir, "%s", keep);
        if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
            perror(dir);
            return 2;
        }
    } else {
        const char *tmp = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/neartie-bench-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(dir)) {
            perror("mkdtemp");
            return 2;
        }
    }
    char pl[300], po[300], ps[300], pr[300], pj[300], plk[300], pok[300];
    snprintf(pl, sizeof pl, "%s/L.json", dir);
    snprintf(po, sizeof po, "%s/O.json", dir);
    snprintf(ps, sizeof ps, "%s/S.json", dir);
    snprintf(pr, sizeof pr, "%s/R.json", dir);
    snprintf(pj, sizeof pj, "%s/J.xml", dir);
    snprintf(plk, sizeof plk, "%s/L.topk", dir);
    snprintf(pok, sizeof pok, "%s/O.topk", dir);
    printf("neartie_bench: %d tokens per prompt, top-%d log-probs per position, one repeat; files in %s\n", T, K, dir);
    printf("%8s %10s %9s %9s %9s %9s %9s %9s %9s %9s %9s %10s\n", "prompts", "input MB", "read L", "sha256 in",
           "read all", "guards", "compare", "publish", "total s", "cpu s", "us/prompt", "total/sha");
    double first_per_prompt = 0;
    int rc = 0;
    for (int si = 0; si < n_sizes; si++) {
        int P = sizes[si];
        doc_info L, O, S;
        write_doc(pl, VT_DOC_CAPTURE, P, T, K, "engine", NULL, NULL, &L);
        write_doc(po, VT_DOC_CAPTURE, P, T, K, "llamacpp", NULL, NULL, &O);
        write_doc(ps, VT_DOC_PREFIX, P, T, K, "llamacpp", &L, "L.json", &S);
        unlink(pr);
        unlink(pj);
        /* Written back before timing, so that the publication's fsyncs time
         * the report, not the gigabytes just written. */
        sync();
        vt_error err;
        vt_error_clear(&err);

        /* The parts, alone: one capture read and verified; plain SHA-256. */
        double t0 = now();
        vt_doc d;
        vt_doc_source src = { .path = pl, .kind = VT_DOC_CAPTURE, .threads = 0 };
        if (vt_doc_read(&src, &d, &err) != VT_OK) {
            fprintf(stderr, "neartie_bench: %s\n", err.msg);
            return 2;
        }
        double t_read = now() - t0;
        vt_doc_free(&d);
        t0 = now();
        const char *inputs[5] = { pl, plk, po, pok, ps };
        for (int i = 0; i < 5; i++) {
            vt_sha256_hex h;
            vt_sha256_file(inputs[i], &h, NULL, &err);
        }
        double t_sha = now() - t0;

        /* What vt-neartie does, end to end. */
        vt_nt_opts o;
        vt_nt_opts_default(&o);
        o.local = pl;
        o.oracle = po;
        o.prefix_scores = ps;
        o.out = pr;
        o.junit = pj;
        o.max_failed = P;
        /* One repeat, no manifest: not strict evidence, and the report says so;
         * the strict gate still runs on both captures. */
        o.guard.allow_unverified = 1;
        double cpu0 = cpu_now();
        double a = now();
        vt_neartie *c = vt_nt_open(&o, &err);
        double b = now();
        if (!c || vt_nt_guard(c, &err) != VT_OK || vt_nt_n_refusals(c)) {
            fprintf(stderr, "neartie_bench: %s%s\n", err.msg, c && vt_nt_n_refusals(c) ? vt_nt_refusal(c, 0) : "");
            return 2;
        }
        double g = now();
        if (vt_nt_compare(c, &err) != VT_OK) {
            fprintf(stderr, "neartie_bench: %s\n", err.msg);
            return 2;
        }
        double cmp = now();
        if (vt_nt_publish(c, &err) != VT_OK) {
            fprintf(stderr, "neartie_bench: %s\n", err.msg);
            return 2;
        }
        double e = now();
        double cpu = cpu_now() - cpu0;
        vt_nt_totals t;
        vt_nt_totals_get(c, &t);
        vt_nt_free(c);
        int want_failed = P / 500, want_near = P / 50 - want_failed;
        if (t.strict != P - P / 50 || t.near_tie != want_near || t.failed != want_failed ||
            t.within_gaps != want_near || t.above_gaps != want_failed) {
            fprintf(stderr, "neartie_bench: %d prompts: strict %d near-tie %d failed %d: expected %d, %d, %d\n", P,
                    t.strict, t.near_tie, t.failed, P - P / 50, want_near, want_failed);
            rc = 1;
        }
        double total = e - a, per = total / P * 1e6;
        if (si == 0)
            first_per_prompt = per;
        printf("%8d %10.1f %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f %9.1f %10.2f  x%.2f per prompt vs %d\n",
               P, (double)(L.size + L.topk_size + O.size + O.topk_size + S.size) / 1e6, t_read, t_sha, b - a, g - b,
               cmp - g, e - cmp, total, cpu, per, total / t_sha, per / first_per_prompt, sizes[0]);
        fflush(stdout);
    }
    if (!keep) {
        unlink(pl);
        unlink(plk);
        unlink(po);
        unlink(pok);
        unlink(ps);
        unlink(pr);
        unlink(pj);
        rmdir(dir);
    }
    return rc;
}
