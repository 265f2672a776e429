/* vt-neartie's library: inputs, guards, scoring, outputs (neartie_report.h). */
#include "neartie_report.h"
#include "neartie_internal.h"

#include "kld.h"
#include "neartie.h"

#include "../capture/canonical_json.h"
#include "../capture/capture.h"
#include "../common/vt_json.h"
#include "../common/vt_publish.h"
#include "../common/vt_sbuf.h"
#include "../engine/gguf_file.h"
#include "../engine/runner.h"
#include "../engine/tokenizer.h"

#include <openssl/evp.h>

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifndef VT_VERSION
#define VT_VERSION "0.1.0"
#endif
#ifndef VT_GIT_REV
#define VT_GIT_REV "unknown"
#endif

#define REPORT_SCHEMA "vt.neartie-report/4"

static const cJSON *jget(const cJSON *root, const char *a, const char *b, const char *k);

static const char noise_rule[] =
    "the oracle scores the local stream in up to three shapes (replay: as generation ran; batched: as a "
    "prefill; eager: one token per evaluation from the first prompt token); a position above the threshold in "
    "some shape and within it in another is within the oracle's noise, above in every shape scored is beyond "
    "it; the gate counts prompts with a position beyond the noise as failed. The oracle's gaps on its own "
    "stream are its noise floor, reported and never used to excuse a gap";

const char *const vt_nt_kind_names[3] = { "replay", "batched", "eager" };

int vt_nt_scoring_kind(const vt_doc *d)
{
    const cJSON *m = jget(d->meta, "settings", "resolved", "mode");
    if (cJSON_IsString(m) && strcmp(m->valuestring, "eager") == 0)
        return KIND_EAGER;
    return d->shape == VT_SHAPE_REPLAY ? KIND_REPLAY : KIND_BATCHED;
}

/* ------------------------------------------------------------ strings */

/* Bytes as printable UTF-8: \n \r \t \\ \" escaped, other control bytes
 * and bytes that are not UTF-8 as \xNN. */
static void display(const char *s, size_t n, char *out, size_t cap)
{
    size_t k = 0;
    for (size_t i = 0; i < n && k + 8 < cap;) {
        unsigned char c = (unsigned char)s[i];
        const char *esc = c == '\n' ? "\\n" : c == '\r' ? "\\r" : c == '\t' ? "\\t" : c == '\\' ? "\\\\"
                        : c == '"' ? "\\\"" : NULL;
        if (esc) {
            k += (size_t)snprintf(out + k, cap - k, "%s", esc);
            i++;
        } else if (c < 0x20 || c == 0x7f) {
            k += (size_t)snprintf(out + k, cap - k, "\\x%02x", c);
            i++;
        } else if (c < 0x80) {
            out[k++] = (char)c;
            i++;
        } else {
            size_t len = (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
            if (len && i + len <= n && vt_utf8_valid(s + i, len)) {
                memcpy(out + k, s + i, len);
                k += len;
                i += len;
            } else {
                k += (size_t)snprintf(out + k, cap - k, "\\x%02x", c);
                i++;
            }
        }
    }
    out[k] = '\0';
}

/* A token's bytes (raw, n), or 0 without a vocabulary. */
int vt_nt_tok_bytes(vt_neartie *c, int32_t id, char *raw, size_t cap, size_t *n)
{
    if (!c->tok)
        return 0;
    vt_error e;
    vt_error_clear(&e);
    return vt_detokenize(c->tok, &id, 1, raw, cap, n, &e) == VT_OK;
}

/* A token's text (display form, for the table), or 0 without a vocabulary. */
static int tok_text(vt_neartie *c, int32_t id, char *out, size_t cap)
{
    char raw[256];
    size_t n = 0;
    if (!vt_nt_tok_bytes(c, id, raw, sizeof raw, &n))
        return 0;
    display(raw, n, out, cap);
    return 1;
}

/* "760" or "760 \" x\"" for the table. */
static void tok_show(vt_neartie *c, int32_t id, char *out, size_t cap)
{
    char t[200];
    if (tok_text(c, id, t, sizeof t))
        snprintf(out, cap, "%d \"%.150s\"", id, t);
    else
        snprintf(out, cap, "%d", id);
}

/* {id, text?, text_hex?}: the token's bytes as text, those that are not
 * UTF-8 (a token that splits a character, a NUL) as U+FFFD with the exact
 * bytes in hex beside (common/vt_json.h). */
static cJSON *tok_json(vt_neartie *c, int32_t id)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "id", id);
    char raw[256];
    size_t n = 0;
    if (vt_nt_tok_bytes(c, id, raw, sizeof raw, &n))
        vt_json_add_bytes(o, "text", raw, n);
    return o;
}


static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* ------------------------------------------------------------- open */

void vt_nt_opts_default(vt_nt_opts *o)
{
    memset(o, 0, sizeof *o);
    o->threshold_mnats = 500.0;
    o->top_gaps = 10;
    o->context = 4;
}

vt_neartie *vt_nt_open(const vt_nt_opts *o, vt_error *err)
{
    const char *list;
    if (!o->local || !o->oracle) {
        vt_error_set(err, VT_EINPUT, "--%s: missing: expected a vt.capture", !o->local ? "local" : "oracle");
        return NULL;
    }
    if (!o->prefix_scores == !o->score_with) {
        vt_error_set(err, VT_EINPUT, "--prefix-scores/--score-with: expected exactly one of the two");
        return NULL;
    }
    if (o->score_with && !vt_runner_find(o->score_with)) {
        vt_error_set(err, VT_EINPUT, "--score-with '%s': expected a runner: engine, llamacpp or transformers", o->score_with);
        return NULL;
    }
    if (o->score_with && !o->model) {
        vt_error_set(err, VT_EINPUT, "--model: missing: expected the oracle's GGUF for --score-with %s", o->score_with);
        return NULL;
    }
    if ((o->prefix_scores_b || o->prefix_scores_c) && !o->prefix_scores) {
        vt_error_set(err, VT_EINPUT, "--prefix-scores: a second without a first");
        return NULL;
    }
    if (o->scores_out && !o->score_with) {
        vt_error_set(err, VT_EINPUT, "--scores-out: expected only with --score-with");
        return NULL;
    }
    if (o->intoto && !o->out) {
        vt_error_set(err, VT_EINPUT, "--intoto %s: the report is its subject: expected --out R.json too", o->intoto);
        return NULL;
    }
    if (o->intoto && o->score_with && !o->scores_out) {
        vt_error_set(err, VT_EINPUT, "--intoto %s: the prefix scores are its subject: expected --scores-out S.json "
                     "with --score-with", o->intoto);
        return NULL;
    }
    if (!(o->threshold_mnats >= 0.0) || !isfinite(o->threshold_mnats)) {
        vt_error_set(err, VT_EINPUT, "--threshold-mnats %g: expected a finite number >= 0", o->threshold_mnats);
        return NULL;
    }
    for (int i = 0; i < o->guard.n_allow; i++)
        if (!vt_nt_allow_field_known(o->guard.allow[i], &list)) {
            vt_error_set(err, VT_EINPUT, "--allow-diff '%s': expected one of %s", o->guard.allow[i], list);
            return NULL;
        }
    vt_neartie *c = calloc(1, sizeof *c);
    if (!c) {
        vt_error_set(err, VT_EINPUT, "out of memory");
        return NULL;
    }
    c->o = *o;
    c->json_failures = vt_json_alloc_failures(); /* every JSON built from here on must be whole */
    for (int i = 0; i < N_DOCS; i++)
        c->doc[i].error_run.run = c->doc[i].error_after.run = c->doc[i].differs.run = -1;
    vt_doc_source src[5] = { { .path = o->local, .kind = VT_DOC_CAPTURE },
                             { .path = o->oracle, .kind = VT_DOC_CAPTURE },
                             { .path = o->prefix_scores, .kind = VT_DOC_PREFIX },
                             { .path = o->prefix_scores_b, .kind = VT_DOC_PREFIX },
                             { .path = o->prefix_scores_c, .kind = VT_DOC_PREFIX } };
    if (!o->prefix_scores_b && o->prefix_scores_c) /* no gap in the list */
        src[3] = src[4];
    int n = 2 + !!o->prefix_scores + !!o->prefix_scores_b + !!o->prefix_scores_c;
    if (vt_doc_read_all(src, c->doc, n, err) != VT_OK) {
        free(c);
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        c->have[i] = 1;
        c->file[i] = src[i].path;
    }
    /* Each shape at most once, in the order replay, batched, eager: the
     * first is the one whose gaps are shown. */
    for (int i = SCORES; i < n; i++)
        for (int k = i + 1; k < n; k++) {
            if (vt_nt_scoring_kind(&c->doc[i]) == vt_nt_scoring_kind(&c->doc[k])) {
                vt_error_set(err, VT_EINPUT, "%s, %s: both scored in shape %s: expected each of replay, batched "
                             "and eager at most once", c->file[i], c->file[k], vt_nt_kind_names[vt_nt_scoring_kind(&c->doc[i])]);
                vt_nt_free(c);
                return NULL;
            }
            if (vt_nt_scoring_kind(&c->doc[k]) < vt_nt_scoring_kind(&c->doc[i])) {
                vt_doc t = c->doc[i];
                const char *f = c->file[i];
                c->doc[i] = c->doc[k];
                c->file[i] = c->file[k];
                c->doc[k] = t;
                c->file[k] = f;
            }
        }
    c->file[LOCAL] = c->file[ORACLE] = NULL;
    if (!(c->allowed = cJSON_CreateArray())) {
        vt_error_set(err, VT_EINPUT, "out of memory");
        vt_nt_free(c);
        return NULL;
    }
    return c;
}

/* ------------------------------------------------------------ scoring */

static const cJSON *jget(const cJSON *root, const char *a, const char *b, const char *k)
{
    return cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, a), b), k);
}

/* The oracle teacher-forced on the streams of doc[of] in shape, by the
 * capture library's prefix scoring, with the oracle's resolved
 * configuration, into doc[into]. */
static int score_here(vt_neartie *c, int of, vt_score_shape shape, int eager, int into, vt_error *err)
{
    const vt_doc *oracle = &c->doc[ORACLE];
    vt_capture_opts co;
    vt_capture_opts_default(&co);
    co.runner = c->o.score_with;
    co.model = c->o.model;
    co.score_prefix_of = of == LOCAL ? c->o.local : c->o.oracle;
    co.score_prefix_doc = &c->doc[of]; /* read once, here */
    co.score_shape = shape;
    co.out = c->o.scores_out && into == SCORES ? c->o.scores_out : "prefix-scores.json";
    co.repetitions = 1;
    co.progress = c->o.progress;
    co.package = c->o.package;
    co.package_root = c->o.package_root;
    co.lock = c->o.lock;
    const cJSON *mode = jget(oracle->meta, "settings", "resolved", "mode");
    const cJSON *cache = jget(oracle->meta, "settings", "resolved", "cache_dtype");
    const cJSON *matmul = jget(oracle->meta, "settings", "resolved", "matmul");
    const cJSON *n_ctx = jget(oracle->meta, "settings", "resolved", "n_ctx");
    const cJSON *n_batch = jget(oracle->meta, "settings", "resolved", "n_batch");
    const cJSON *threads = jget(oracle->meta, "settings", "resolved", "threads");
    if (!vt_exec_mode_parse(mode->valuestring, &co.settings.mode) ||
        !vt_cache_dtype_parse(cache->valuestring, &co.settings.cache_dtype) ||
        !vt_matmul_mode_parse(matmul->valuestring, &co.settings.matmul))
        return vt_error_set(err, VT_EINPUT, "%s: settings.resolved: mode, cache_dtype or matmul unknown",
                            oracle->path);
    co.settings.n_ctx = (int32_t)n_ctx->valuedouble;
    co.settings.n_batch = (int32_t)n_batch->valuedouble;
    co.settings.n_threads = c->o.threads > 0 ? c->o.threads : (int32_t)threads->valuedouble;
    if (eager) /* the oracle's eager shape: one token per evaluation, on one thread */
        co.settings.mode = VT_MODE_EAGER;
    vt_capture *cap = vt_capture_open(&co, err);
    if (!cap)
        return err && err->code ? err->code : VT_EINPUT;
    int rc = vt_capture_run(cap, err);
    size_t len = 0;
    const char *text = rc == VT_OK ? vt_capture_text(cap, &len) : NULL;
    if (rc == VT_OK && !(c->text[into] = malloc(len ? len : 1)))
        rc = vt_error_set(err, VT_EINPUT, "out of memory");
    if (rc == VT_OK) {
        memcpy(c->text[into], text, len);
        c->text_len[into] = len;
    }
    vt_capture_free(cap);
    if (rc)
        return rc;
    char name[600];
    if (into == SCORES && c->o.scores_out)
        snprintf(name, sizeof name, "%s", c->o.scores_out);
    else
        snprintf(name, sizeof name, "prefix scores of the %s streams, %s (--score-with)", of == LOCAL ? "local" : "oracle's own",
                 eager ? "eager" : vt_score_shape_name(shape));
    vt_doc_source src = { .path = name, .text = c->text[into], .len = c->text_len[into], .kind = VT_DOC_PREFIX,
                          .no_side_files = 1 };
    rc = vt_doc_read(&src, &c->doc[into], err);
    if (rc == VT_OK)
        c->have[into] = 1;
    return rc;
}

int vt_nt_guard(vt_neartie *c, vt_error *err)
{
    if (c->guarded)
        return vt_error_set(err, VT_EINPUT, "neartie: guarded twice");
    c->guarded = 1;
    vt_nt_inputs in = { .local = &c->doc[LOCAL], .oracle = &c->doc[ORACLE], .o = &c->o.guard,
                        .allowed = c->allowed, .unverified = &c->unverified };
    /* A reason --allow-unverified lets in but that could not be kept would
     * leave the report claiming less than it let in. */
    static const char lost[] = "neartie: out of memory listing the reasons --allow-unverified lets in";
    vt_nt_guard_stage(&in, VT_NT_PAIR, &c->refusals);
    if (c->unverified.oom)
        return vt_error_set(err, VT_EINPUT, "%s", lost);
    if (vt_nt_n_refusals(c))
        return VT_OK;
    if (c->o.score_with) {
        /* Every shape of the local streams (eager only where the oracle
         * ran production: an eager oracle has that shape already), and the
         * oracle's own streams batched (replayed, a deterministic oracle's
         * own stream has no gap by construction: engine/runner.h). */
        const cJSON *mode = jget(c->doc[ORACLE].meta, "settings", "resolved", "mode");
        int production = cJSON_IsString(mode) && strcmp(mode->valuestring, "production") == 0;
        int rc = score_here(c, LOCAL, VT_SHAPE_REPLAY, 0, SCORES, err);
        if (rc == VT_OK)
            rc = score_here(c, LOCAL, VT_SHAPE_BATCHED, 0, SCORES_B, err);
        if (rc == VT_OK && production)
            rc = score_here(c, LOCAL, VT_SHAPE_REPLAY, 1, SCORES_C, err);
        if (rc == VT_OK)
            rc = score_here(c, ORACLE, VT_SHAPE_BATCHED, 0, SELF, err);
        if (rc)
            return rc;
    }
    for (int k = SCORES; k <= SCORES_C && !vt_nt_n_refusals(c); k++)
        if (c->have[k]) {
            in.scores = &c->doc[k];
            in.noise_shape = k != SCORES;
            vt_nt_guard_stage(&in, VT_NT_SCORES, &c->refusals);
        }
    return c->unverified.oom ? vt_error_set(err, VT_EINPUT, "%s", lost) : VT_OK;
}

const vt_reasons *vt_nt_refusals(const vt_neartie *c) { return &c->refusals; }

int vt_nt_n_refusals(const vt_neartie *c) { return c->refusals.n + (c->refusals.oom && !c->refusals.n); }

const char *vt_nt_refusal(const vt_neartie *c, int i)
{
    if (i >= 0 && i < c->refusals.n)
        return c->refusals.v[i].text;
    return i == 0 && c->refusals.oom ? "out of memory while listing the guards' reasons" : NULL;
}

/* The vocabulary for token text: --model, or the model file a capture
 * names, beside it; used only if its size and SHA-256 are the capture's. */
static void open_vocabulary(vt_neartie *c)
{
    const vt_doc *docs[2] = { &c->doc[LOCAL], &c->doc[ORACLE] };
    char cand[3][1024];
    int n = 0;
    if (c->o.model)
        snprintf(cand[n++], sizeof cand[0], "%s", c->o.model);
    for (int i = 0; i < 2; i++) {
        const cJSON *files = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(docs[i]->meta, "model"),
                                                              "files");
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(files, 0), "name");
        if (!cJSON_IsString(name) || cJSON_GetArraySize(files) != 1)
            continue;
        const char *slash = strrchr(docs[i]->path, '/');
        int dir = slash ? (int)(slash - docs[i]->path) : 0;
        snprintf(cand[n++], sizeof cand[0], "%.*s%s%s", dir, docs[i]->path, slash ? "/" : "",
                 base_name(name->valuestring));
    }
    snprintf(c->tok_note, sizeof c->tok_note, "no model file found beside the captures: token ids only");
    for (int k = 0; k < n && !c->tok; k++) {
        struct stat st;
        if (stat(cand[k], &st) != 0)
            continue;
        /* Which capture's model it is: size first, then the hash. */
        vt_sha256_hex sha = { "" };
        vt_error e;
        vt_error_clear(&e);
        int match = 0;
        for (int i = 0; i < 2 && !match; i++) {
            const cJSON *f = cJSON_GetArrayItem(
                cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(docs[i]->meta, "model"), "files"), 0);
            const cJSON *size = cJSON_GetObjectItemCaseSensitive(f, "size");
            const cJSON *want = cJSON_GetObjectItemCaseSensitive(f, "sha256");
            if (!cJSON_IsNumber(size) || size->valuedouble != (double)st.st_size)
                continue;
            if (!sha.hex[0] && vt_sha256_file(cand[k], &sha, NULL, &e) != VT_OK)
                break;
            match = strcmp(sha.hex, want->valuestring) == 0;
        }
        if (!match) {
            snprintf(c->tok_note, sizeof c->tok_note,
                     "%.1000s: not the captures' model (size or sha256 differ): token ids only", cand[k]);
            continue;
        }
        vt_gguf *g = vt_gguf_open(cand[k], &e);
        c->tok = g ? vt_tokenizer_open(g, &e) : NULL;
        vt_gguf_free(g);
        if (!c->tok) {
            snprintf(c->tok_note, sizeof c->tok_note, "%.500s: %.1000s: token ids only", cand[k], e.msg);
            continue;
        }
        memcpy(c->tok_file, cand[k], sizeof c->tok_file); /* same size, NUL-terminated */
        c->tok_sha = sha;
        snprintf(c->tok_note, sizeof c->tok_note, "token text from %.1000s (size and sha256 as the capture records)",
                 cand[k]);
    }
}

/* ------------------------------------------------------------ outputs */

static void add_doc_ref(cJSON *parent, const char *key, const vt_doc *d, const char *file)
{
    cJSON *o = cJSON_AddObjectToObject(parent, key);
    if (file)
        cJSON_AddStringToObject(o, "file", file);
    else
        cJSON_AddNullToObject(o, "file");
    cJSON_AddStringToObject(o, "sha256", d->file_sha256.hex);
    cJSON_AddStringToObject(o, "seal", d->seal.hex);
    cJSON_AddStringToObject(o, "workload_seal", d->workload_seal.hex);
    const cJSON *r = jget(d->meta, "runtime", "runner", "name");
    cJSON_AddStringToObject(o, "runner", cJSON_IsString(r) ? r->valuestring : "?");
}

static cJSON *allowed_json(vt_neartie *c)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < c->o.guard.n_allow; i++) {
        const char *f = c->o.guard.allow[i];
        int dup = 0;
        for (int k = 0; k < i; k++)
            dup |= strcmp(c->o.guard.allow[k], f) == 0;
        if (dup)
            continue;
        cJSON *e = cJSON_CreateObject(), *diffs = cJSON_CreateArray();
        cJSON_AddStringToObject(e, "field", f);
        for (const cJSON *d = c->allowed->child; d; d = d->next)
            if (strcmp(cJSON_GetObjectItemCaseSensitive(d, "field")->valuestring, f) == 0)
                cJSON_AddItemToArray(diffs, cJSON_Duplicate(d, 1));
        cJSON_AddBoolToObject(e, "differs", cJSON_GetArraySize(diffs) > 0);
        cJSON_AddItemToObject(e, "differences", diffs);
        cJSON_AddItemToArray(a, e);
    }
    return a;
}

static int build_report(vt_neartie *c, vt_error *err)
{
    const vt_doc *L = &c->doc[LOCAL], *O = &c->doc[ORACLE], *S = &c->doc[SCORES];
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "schema", REPORT_SCHEMA);
    cJSON *tool = cJSON_AddObjectToObject(r, "tool");
    cJSON_AddStringToObject(tool, "name", "vt-neartie");
    cJSON_AddStringToObject(tool, "version", VT_VERSION);
    cJSON_AddStringToObject(tool, "git", VT_GIT_REV);
    add_doc_ref(r, "local", L, base_name(c->o.local));
    add_doc_ref(r, "oracle", O, base_name(c->o.oracle));
    const char *sfile = c->file[SCORES] ? c->file[SCORES] : c->o.scores_out;
    add_doc_ref(r, "prefix_scores", S, sfile ? base_name(sfile) : NULL);
    char by[128];
    snprintf(by, sizeof by, "vt-neartie --score-with %s", c->o.score_with ? c->o.score_with : "");
    cJSON *ps = cJSON_GetObjectItemCaseSensitive(r, "prefix_scores");
    cJSON_AddStringToObject(ps, "scored_by", c->o.score_with ? by : "file");
    cJSON_AddStringToObject(ps, "shape", vt_score_shape_name(S->shape));
    cJSON_AddStringToObject(ps, "noise_shape", vt_nt_kind_names[vt_nt_scoring_kind(S)]);
    cJSON *noise = cJSON_AddObjectToObject(r, "noise");
    cJSON_AddStringToObject(noise, "rule", noise_rule);
    cJSON_AddBoolToObject(noise, "available", c->have[SCORES_B]);
    if (!c->have[SCORES_B])
        cJSON_AddStringToObject(noise, "reason", "prefix scores in one shape only: every gap above the threshold "
                                                 "counts as beyond the oracle's noise");
    static const char *const other_key[2] = { "second_shape", "third_shape" };
    for (int k = SCORES_B; k <= SCORES_C; k++) {
        if (!c->have[k]) {
            cJSON_AddNullToObject(noise, other_key[k - SCORES_B]);
            continue;
        }
        add_doc_ref(noise, other_key[k - SCORES_B], &c->doc[k], c->file[k] ? base_name(c->file[k]) : NULL);
        cJSON *ss = cJSON_GetObjectItemCaseSensitive(noise, other_key[k - SCORES_B]);
        cJSON_AddStringToObject(ss, "scored_by", c->o.score_with ? by : "file"); /* a file's values are as honest as its maker */
        cJSON_AddStringToObject(ss, "shape", vt_score_shape_name(c->doc[k].shape));
        cJSON_AddStringToObject(ss, "noise_shape", vt_nt_kind_names[vt_nt_scoring_kind(&c->doc[k])]);
    }
    if (c->have[SELF]) {
        cJSON *fl = cJSON_AddObjectToObject(noise, "floor");
        cJSON_AddStringToObject(fl, "shape", vt_score_shape_name(c->doc[SELF].shape));
        cJSON_AddStringToObject(fl, "seal", c->doc[SELF].seal.hex);
        cJSON_AddStringToObject(fl, "definition", "per prompt, the oracle's largest gap on its own stream");
    } else {
        cJSON_AddNullToObject(noise, "floor"); /* measured only with --score-with */
    }
    cJSON_AddNumberToObject(r, "threshold_mnats", c->o.threshold_mnats);
    cJSON *tt = cJSON_AddObjectToObject(r, "token_text");
    if (c->tok)
        cJSON_AddStringToObject(tt, "file", base_name(c->tok_file));
    else
        cJSON_AddNullToObject(tt, "file");
    cJSON_AddStringToObject(tt, "note", c->tok_note);
    cJSON_AddItemToObject(r, "allowed_differences", allowed_json(c));
    cJSON *ev = cJSON_AddObjectToObject(r, "evidence");
    cJSON_AddBoolToObject(ev, "strict", c->unverified.n == 0);
    cJSON *uv = cJSON_AddArrayToObject(ev, "unverified");
    for (int i = 0; i < c->unverified.n; i++) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "rule", c->unverified.v[i].rule);
        cJSON_AddStringToObject(e, "file", c->unverified.v[i].file);
        cJSON_AddStringToObject(e, "reason", c->unverified.v[i].text);
        cJSON_AddItemToArray(uv, e);
    }

    cJSON *prompts = cJSON_AddArrayToObject(r, "prompts");
    for (int32_t p = 0; p < L->n_prompts; p++) {
        const vt_nt_prompt_result *x = &c->res[p];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "index", p);
        cJSON_AddStringToObject(e, "id", c->ids[p]);
        cJSON_AddStringToObject(e, "class", vt_prompt_class_name(x->cls));
        cJSON_AddNumberToObject(e, "positions", c->positions[p]);
        if (x->first_divergence < 0) {
            cJSON_AddNullToObject(e, "first_divergence");
        } else {
            cJSON *fd = cJSON_AddObjectToObject(e, "first_divergence");
            cJSON_AddNumberToObject(fd, "position", x->first_divergence);
            cJSON_AddItemToObject(fd, "local", tok_json(c, x->local_token));
            cJSON_AddItemToObject(fd, "oracle", tok_json(c, x->oracle_token));
            cJSON_AddNumberToObject(fd, "gap_mnats", x->first_gap_mnats);
            for (int side = 0; side < 2; side++) {
                const char *name = side ? "oracle_margin_mnats" : "local_margin_mnats";
                double m = c->margin[2 * p + side];
                if (isnan(m))
                    cJSON_AddNullToObject(fd, name);
                else
                    cJSON_AddNumberToObject(fd, name, m);
            }
        }
        cJSON_AddNumberToObject(e, "zero_gaps", x->zero_gaps);
        cJSON_AddNumberToObject(e, "within_gaps", x->within_gaps);
        cJSON_AddNumberToObject(e, "above_gaps", x->above_gaps);
        cJSON_AddNumberToObject(e, "max_gap_mnats", x->max_gap_mnats);
        if (x->max_gap_pos < 0)
            cJSON_AddNullToObject(e, "max_gap_position");
        else
            cJSON_AddNumberToObject(e, "max_gap_position", x->max_gap_pos);
        cJSON_AddNumberToObject(e, "within_noise_gaps", x->within_noise_gaps);
        cJSON_AddNumberToObject(e, "beyond_noise_gaps", x->beyond_noise_gaps);
        if (S->bound) /* scores told only a top k (vt.prefix-scores/4) */
            cJSON_AddNumberToObject(e, "bound_gaps", x->bound_gaps);
        cJSON *bys = cJSON_AddObjectToObject(e, "max_gap_by_shape_mnats"); /* every shape scored */
        cJSON_AddNumberToObject(bys, vt_nt_kind_names[vt_nt_scoring_kind(S)], x->max_gap_mnats);
        for (int k = SCORES_B; k <= SCORES_C; k++)
            if (c->have[k])
                cJSON_AddNumberToObject(bys, vt_nt_kind_names[vt_nt_scoring_kind(&c->doc[k])],
                                        x->max_gap_other_mnats[k - SCORES_B]);
        if (isnan(c->floor_gap[p])) {
            cJSON_AddNullToObject(e, "noise_floor_mnats");
            cJSON_AddNullToObject(e, "noise_floor_position");
        } else {
            cJSON_AddNumberToObject(e, "noise_floor_mnats", c->floor_gap[p]);
            if (c->floor_pos[p] < 0)
                cJSON_AddNullToObject(e, "noise_floor_position");
            else
                cJSON_AddNumberToObject(e, "noise_floor_position", c->floor_pos[p]);
        }
        cJSON_AddItemToArray(prompts, e);
    }
    const vt_nt_totals *t = &c->totals;
    cJSON *tot = cJSON_AddObjectToObject(r, "totals");
    cJSON_AddNumberToObject(tot, "prompts", t->prompts);
    cJSON_AddNumberToObject(tot, "strict", t->strict);
    cJSON_AddNumberToObject(tot, "near_tie_only", t->near_tie);
    cJSON_AddNumberToObject(tot, "failed", t->failed);
    cJSON_AddNumberToObject(tot, "within_noise", t->within_noise);
    cJSON_AddNumberToObject(tot, "positions", (double)t->positions);
    cJSON_AddNumberToObject(tot, "zero_gaps", (double)t->zero_gaps);
    cJSON_AddNumberToObject(tot, "within_gaps", (double)t->within_gaps);
    cJSON_AddNumberToObject(tot, "above_gaps", (double)t->above_gaps);
    cJSON_AddNumberToObject(tot, "max_gap_mnats", t->max_gap_mnats);
    cJSON_AddNumberToObject(tot, "scorer_disagreements", (double)t->scorer_disagreements);
    cJSON_AddNumberToObject(tot, "within_noise_gaps", (double)t->within_noise_gaps);
    cJSON_AddNumberToObject(tot, "beyond_noise_gaps", (double)t->beyond_noise_gaps);
    if (c->doc[SCORES].bound)
        cJSON_AddNumberToObject(tot, "bound_gaps", (double)t->bound_gaps);
    cJSON *tsh = cJSON_AddArrayToObject(tot, "shapes"); /* per shape scored: gaps above the threshold, largest gap */
    for (int k = SCORES; k <= SCORES_C; k++) {
        if (!c->have[k])
            continue;
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "shape", vt_nt_kind_names[vt_nt_scoring_kind(&c->doc[k])]);
        cJSON_AddNumberToObject(e, "above_gaps", (double)(k == SCORES ? t->above_gaps : t->above_other[k - SCORES_B]));
        cJSON_AddNumberToObject(e, "max_gap_mnats", k == SCORES ? t->max_gap_mnats : t->max_other_mnats[k - SCORES_B]);
        cJSON_AddItemToArray(tsh, e);
    }
    if (c->have[SELF])
        cJSON_AddNumberToObject(tot, "noise_floor_max_mnats", t->noise_floor_max_mnats);
    else
        cJSON_AddNullToObject(tot, "noise_floor_max_mnats");

    cJSON *lg = cJSON_AddArrayToObject(r, "largest_gaps");
    for (int32_t k = 0; k < c->n_top; k++) {
        const gap_entry *g = &c->top[k];
        const int32_t *lt = L->tokens + L->off[g->prompt];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "prompt", g->prompt);
        cJSON_AddStringToObject(e, "id", c->ids[g->prompt]);
        cJSON_AddNumberToObject(e, "position", g->position);
        cJSON_AddNumberToObject(e, "gap_mnats", g->gap);
        cJSON_AddItemToObject(e, "local", tok_json(c, lt[g->position]));
        cJSON_AddItemToObject(e, "oracle", tok_json(c, S->argmax[S->off[g->prompt] + g->position]));
        cJSON *ctx = cJSON_AddArrayToObject(e, "context");
        for (int32_t i = g->position - c->o.context < 0 ? 0 : g->position - c->o.context; i < g->position; i++)
            cJSON_AddItemToArray(ctx, tok_json(c, lt[i]));
        cJSON_AddItemToArray(lg, e);
    }

    const vt_nt_metrics *m = &c->metrics;
    cJSON *mj = cJSON_AddObjectToObject(r, "metrics");
    cJSON_AddBoolToObject(mj, "available", m->available);
    if (!m->available) {
        cJSON_AddStringToObject(mj, "reason", m->reason);
    } else {
        cJSON_AddStringToObject(mj, "scope", "positions whose prefixes are identical in both captures: each "
                                             "prompt up to and including its first divergence (all of a strict one)");
        cJSON_AddStringToObject(mj, "local_logits", base_name(m->local_file));
        cJSON_AddStringToObject(mj, "oracle_logits", base_name(m->oracle_file));
        cJSON_AddNumberToObject(mj, "prompts", m->prompts);
        cJSON_AddNumberToObject(mj, "positions", (double)m->positions);
        cJSON *k = cJSON_AddObjectToObject(mj, "kld");
        cJSON_AddStringToObject(k, "definition", "KL(oracle || local), nats, double log-softmax");
        cJSON_AddNumberToObject(k, "mean", m->kld_mean);
        cJSON_AddNumberToObject(k, "mean_uncertainty", m->kld_mean_unc);
        cJSON_AddNumberToObject(k, "median", m->kld_median);
        cJSON_AddNumberToObject(k, "p90", m->kld_p90);
        cJSON_AddNumberToObject(k, "p99", m->kld_p99);
        cJSON_AddNumberToObject(k, "p99_9", m->kld_p999);
        cJSON_AddNumberToObject(k, "min", m->kld_min);
        cJSON_AddNumberToObject(k, "max", m->kld_max);
        cJSON_AddNumberToObject(k, "max_prompt", m->kld_max_prompt);
        cJSON_AddNumberToObject(k, "max_position", m->kld_max_position);
        cJSON_AddNumberToObject(mj, "top1_agreement", m->top1_agreement);
        cJSON_AddNumberToObject(mj, "same_top1", (double)m->same_top);
        cJSON_AddNumberToObject(mj, "max_abs_dlogit", m->max_abs_dlogit);
        cJSON_AddNumberToObject(mj, "max_abs_dlogprob", m->max_abs_dlogprob);
        cJSON_AddNumberToObject(mj, "rms_dp", m->rms_dp);
        cJSON_AddNumberToObject(mj, "max_abs_dp", m->max_abs_dp);
    }
    cJSON *gate = cJSON_AddObjectToObject(r, "gate");
    cJSON_AddNumberToObject(gate, "require_strict", c->o.require_strict);
    cJSON_AddNumberToObject(gate, "max_failed", c->o.max_failed);
    cJSON_AddNumberToObject(gate, "within_noise", t->within_noise); /* not counted as failed */
    cJSON_AddBoolToObject(gate, "passed", t->gate_passed);
    cJSON *reasons = cJSON_AddArrayToObject(gate, "reasons");
    for (int i = 0; i < c->n_gate_reasons; i++)
        cJSON_AddItemToArray(reasons, cJSON_CreateString(c->gate_reasons[i]));

    /* Sealed like a capture: the canonical JSON of everything above, its
     * strings (file names, reasons) valid UTF-8 whatever they held. */
    vt_sha256_hex seal;
    int rc = vt_json_make_text(r) == 0 && vt_json_alloc_failures() == c->json_failures
                 ? vt_canonical_seal(r, &seal, &c->report, &c->report_len, err)
                 : vt_error_set(err, VT_EINPUT, "report: out of memory");
    /* The HTML page shows the report as sealed (the seal is its last member). */
    if (rc == VT_OK && c->o.html) {
        c->report_tree = r;
        return VT_OK;
    }
    cJSON_Delete(r);
    return rc;
}

/* XML text: entities for markup, character references for the whitespace
 * an attribute would lose, \xNN for what XML 1.0 cannot carry. */
static void xml_put(vt_sbuf *b, const char *s)
{
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        switch (ch) {
        case '&': vt_sbuf_puts(b, "&amp;"); break;
        case '<': vt_sbuf_puts(b, "&lt;"); break;
        case '>': vt_sbuf_puts(b, "&gt;"); break;
        case '"': vt_sbuf_puts(b, "&quot;"); break;
        case '\'': vt_sbuf_puts(b, "&apos;"); break;
        case '\n': vt_sbuf_puts(b, "&#10;"); break;
        case '\r': vt_sbuf_puts(b, "&#13;"); break;
        case '\t': vt_sbuf_puts(b, "&#9;"); break;
        default:
            if (ch < 0x20 || ch == 0x7f)
                vt_sbuf_printf(b, "\\x%02x", ch);
            else
                vt_sbuf_add(b, s, 1);
        }
    }
}

/* At prompt p's first divergence (identical prefixes up to it), how far a
 * capture preferred its own token over the other side's, in milli-nats,
 * from its top-k side file: NAN if it has none or the other token is not
 * in its top k. */
static double margin_mnats(const vt_doc *d, int32_t p, int32_t pos, int32_t mine, int32_t other)
{
    const int32_t k = d->topk.k;
    int32_t *ids = k ? malloc((size_t)k * sizeof *ids) : NULL;
    float *lps = k ? malloc((size_t)k * sizeof *lps) : NULL;
    double lm = NAN, lo = NAN;
    if (ids && lps && vt_topk_file_get(&d->topk, d->off[p] + pos, ids, lps, NULL) == VT_OK)
        for (int32_t j = 0; j < k; j++) {
            if (ids[j] == mine)
                lm = lps[j];
            else if (ids[j] == other)
                lo = lps[j];
        }
    free(ids);
    free(lps);
    return 1000.0 * (lm - lo);
}

static void margin_text(double m, char *out, size_t cap)
{
    if (isnan(m))
        snprintf(out, cap, "not in top-k");
    else
        snprintf(out, cap, "%.3f", m);
}

/* One line about a prompt's divergence, for the table's reader and JUnit. */
static void divergence_text(vt_neartie *c, int32_t p, char *out, size_t cap)
{
    const vt_nt_prompt_result *x = &c->res[p];
    if (x->first_divergence < 0) {
        snprintf(out, cap, "strict: %d tokens identical; max gap %.3f milli-nats", c->positions[p], x->max_gap_mnats);
        return;
    }
    char lt[200], ot[200];
    tok_show(c, x->local_token, lt, sizeof lt);
    tok_show(c, x->oracle_token, ot, sizeof ot);
    char ml[32], mo[32];
    margin_text(c->margin[2 * p], ml, sizeof ml);
    margin_text(c->margin[2 * p + 1], mo, sizeof mo);
    snprintf(out, cap, "%s: first divergence at position %d: local %s, oracle %s, gap %.3f milli-nats (margins: "
             "local %s, oracle %s); max gap %.3f milli-nats at position %d; %d gaps above the threshold %g; %d "
             "positions within the oracle's noise, %d beyond",
             vt_prompt_class_name(x->cls), x->first_divergence, lt, ot, x->first_gap_mnats, ml, mo, x->max_gap_mnats,
             x->max_gap_pos, x->above_gaps, c->o.threshold_mnats, x->within_noise_gaps, x->beyond_noise_gaps);
}

static int build_junit(vt_neartie *c, vt_error *err)
{
    const vt_doc *L = &c->doc[LOCAL];
    const vt_nt_totals *t = &c->totals;
    vt_sbuf b = { 0 };
    char line[1400], suite[600];
    snprintf(suite, sizeof suite, "vt-neartie %s vs %s", base_name(c->o.local), base_name(c->o.oracle));
    vt_sbuf_printf(&b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"vt-neartie\" tests=\"%d\" "
              "failures=\"%d\" errors=\"0\">\n  <testsuite name=\"", t->prompts, t->failed);
    xml_put(&b, suite);
    vt_sbuf_printf(&b, "\" tests=\"%d\" failures=\"%d\" errors=\"0\" skipped=\"0\" time=\"0\">\n    <properties>\n",
              t->prompts, t->failed);
    char v[64];
    snprintf(v, sizeof v, "%g", c->o.threshold_mnats);
    char dis[32], wn[32], fl[32] = "not measured";
    snprintf(dis, sizeof dis, "%lld", (long long)t->scorer_disagreements);
    snprintf(wn, sizeof wn, "%d", t->within_noise);
    if (c->have[SELF])
        snprintf(fl, sizeof fl, "%.3f", t->noise_floor_max_mnats);
    const char *props[][2] = { { "threshold_mnats", v },
                               { "local_seal", c->doc[LOCAL].seal.hex },
                               { "oracle_seal", c->doc[ORACLE].seal.hex },
                               { "prefix_scores_seal", c->doc[SCORES].seal.hex },
                               { "strict_evidence", c->unverified.n ? "false" : "true" },
                               { "scorer_disagreements", dis },
                               { "scores_shape", vt_score_shape_name(c->doc[SCORES].shape) },
                               { "noise_second_shape",
                                 c->have[SCORES_B] ? vt_nt_kind_names[vt_nt_scoring_kind(&c->doc[SCORES_B])] : "none" },
                               { "noise_third_shape",
                                 c->have[SCORES_C] ? vt_nt_kind_names[vt_nt_scoring_kind(&c->doc[SCORES_C])] : "none" },
                               { "within_noise_prompts", wn },
                               { "noise_floor_max_mnats", fl } };
    for (size_t i = 0; i < sizeof props / sizeof props[0]; i++)
        vt_sbuf_printf(&b, "      <property name=\"%s\" value=\"%s\"/>\n", props[i][0], props[i][1]);
    vt_sbuf_puts(&b, "    </properties>\n");
    for (int32_t p = 0; p < L->n_prompts; p++) {
        const vt_nt_prompt_result *x = &c->res[p];
        vt_sbuf_puts(&b, "    <testcase classname=\"vt-neartie\" name=\"");
        xml_put(&b, c->ids[p]);
        vt_sbuf_puts(&b, "\" time=\"0\"");
        divergence_text(c, p, line, sizeof line);
        if (x->cls == VT_PROMPT_STRICT) {
            vt_sbuf_puts(&b, "/>\n");
        } else if (x->cls == VT_PROMPT_NEAR_TIE || x->cls == VT_PROMPT_WITHIN_NOISE) {
            vt_sbuf_puts(&b, ">\n      <system-out>");
            xml_put(&b, line);
            vt_sbuf_puts(&b, "</system-out>\n    </testcase>\n");
        } else {
            vt_sbuf_puts(&b, ">\n      <failure type=\"near-tie\" message=\"");
            xml_put(&b, line);
            vt_sbuf_puts(&b, "\">");
            xml_put(&b, line);
            vt_sbuf_puts(&b, "</failure>\n    </testcase>\n");
        }
    }
    vt_sbuf_puts(&b, "  </testsuite>\n</testsuites>\n");
    if (b.oom || !b.p) {
        free(b.p);
        return vt_error_set(err, VT_EINPUT, "junit: out of memory");
    }
    c->junit = b.p;
    c->junit_len = b.n;
    return VT_OK;
}

/* ------------------------------------------------------------ in-toto */

/* The verdict as an in-toto Statement v1 (in-toto/attestation
 * spec/v1/statement.md) with the test-result predicate v0.1
 * (spec/predicates/test-result.md):
 *   subject       the report, the local and the oracle capture and each
 *                 prefix-scores file, by the sha256 of the bytes vt read
 *                 (or wrote), named as given on the command line;
 *   result        PASSED when the gate passed, else FAILED;
 *   configuration one resource: the gate's settings as canonical JSON
 *                 (content, base64, with its sha256), the same fields as
 *                 annotations;
 *   tests         one per prompt, by its id: strict ones passed,
 *                 near-tie-only and within-noise ones warned, failed ones
 *                 failed; and "gate" (passed or failed), and
 *                 "strict evidence" (passed, or warned under
 *                 --allow-unverified).
 * Names are made valid UTF-8 (U+FFFD for a stray byte); the digest binds. */
#define INTOTO_STATEMENT "https://in-toto.io/Statement/v1"
#define INTOTO_TEST_RESULT "https://in-toto.io/attestation/test-result/v0.1"

static cJSON *intoto_subject(const char *name, const char *sha256_hex)
{
    cJSON *s = cJSON_CreateObject();
    char *text = vt_utf8_text(name, strlen(name), NULL);
    cJSON_AddStringToObject(s, "name", text ? text : "?");
    free(text);
    cJSON_AddStringToObject(cJSON_AddObjectToObject(s, "digest"), "sha256", sha256_hex);
    return s;
}

static int build_intoto(vt_neartie *c, vt_error *err)
{
    const vt_nt_totals *t = &c->totals;
    cJSON *st = cJSON_CreateObject();
    cJSON_AddStringToObject(st, "_type", INTOTO_STATEMENT);
    cJSON *subj = cJSON_AddArrayToObject(st, "subject");
    vt_sha256_hex rep;
    vt_sha256_buffer(c->report, c->report_len, &rep);
    cJSON_AddItemToArray(subj, intoto_subject(c->o.out, rep.hex));
    cJSON_AddItemToArray(subj, intoto_subject(c->o.local, c->doc[LOCAL].file_sha256.hex));
    cJSON_AddItemToArray(subj, intoto_subject(c->o.oracle, c->doc[ORACLE].file_sha256.hex));
    for (int k = SCORES; k <= SCORES_C; k++) {
        const char *f = c->file[k] ? c->file[k] : k == SCORES && c->have[k] ? c->o.scores_out : NULL;
        if (f)
            cJSON_AddItemToArray(subj, intoto_subject(f, c->doc[k].file_sha256.hex));
    }
    cJSON_AddStringToObject(st, "predicateType", INTOTO_TEST_RESULT);
    cJSON *pred = cJSON_AddObjectToObject(st, "predicate");
    cJSON_AddStringToObject(pred, "result", t->gate_passed ? "PASSED" : "FAILED");

    cJSON *conf = cJSON_CreateObject();
    cJSON *tool = cJSON_AddObjectToObject(conf, "tool");
    cJSON_AddStringToObject(tool, "name", "vt-neartie");
    cJSON_AddStringToObject(tool, "version", VT_VERSION);
    cJSON_AddStringToObject(tool, "git", VT_GIT_REV);
    cJSON_AddNumberToObject(conf, "threshold_mnats", c->o.threshold_mnats);
    cJSON_AddNumberToObject(conf, "require_strict", c->o.require_strict);
    cJSON_AddNumberToObject(conf, "max_failed", c->o.max_failed);
    cJSON_AddBoolToObject(conf, "allow_unverified", c->o.guard.allow_unverified);
    cJSON_AddItemToObject(conf, "allowed_differences", allowed_json(c));
    cJSON_AddStringToObject(conf, "scored_by", c->o.score_with ? c->o.score_with : "file");
    cJSON_AddStringToObject(conf, "scores_shape", vt_score_shape_name(c->doc[SCORES].shape));
    cJSON_AddStringToObject(conf, "report_schema", REPORT_SCHEMA);
    size_t clen = 0;
    char *ctext = vt_canonical_json(conf, &clen, err);
    if (!ctext) {
        cJSON_Delete(conf);
        cJSON_Delete(st);
        return err->code;
    }
    unsigned char *b64 = malloc(4 * ((clen + 2) / 3) + 1);
    if (!b64) {
        free(ctext);
        cJSON_Delete(conf);
        cJSON_Delete(st);
        return vt_error_set(err, VT_EINPUT, "in-toto: out of memory");
    }
    EVP_EncodeBlock(b64, (const unsigned char *)ctext, (int)clen);
    vt_sha256_hex ch;
    vt_sha256_buffer(ctext, clen, &ch);
    free(ctext);
    cJSON *rd = cJSON_CreateObject();
    cJSON_AddStringToObject(rd, "name", "vt-neartie gate configuration");
    cJSON_AddStringToObject(rd, "content", (const char *)b64);
    free(b64);
    cJSON_AddStringToObject(cJSON_AddObjectToObject(rd, "digest"), "sha256", ch.hex);
    cJSON_AddStringToObject(rd, "mediaType", "application/json");
    cJSON_AddItemToObject(rd, "annotations", conf);
    cJSON_AddItemToArray(cJSON_AddArrayToObject(pred, "configuration"), rd);

    cJSON *passed = cJSON_AddArrayToObject(pred, "passedTests");
    cJSON *warned = cJSON_AddArrayToObject(pred, "warnedTests");
    cJSON *failed = cJSON_AddArrayToObject(pred, "failedTests");
    for (int32_t p = 0; p < c->doc[LOCAL].n_prompts; p++) {
        const int cls = c->res[p].cls;
        cJSON *to = cls == VT_PROMPT_STRICT ? passed : cls == VT_PROMPT_FAILED ? failed : warned;
        cJSON_AddItemToArray(to, cJSON_CreateString(c->ids[p]));
    }
    cJSON_AddItemToArray(t->gate_passed ? passed : failed, cJSON_CreateString("gate"));
    cJSON_AddItemToArray(c->unverified.n ? warned : passed, cJSON_CreateString("strict evidence"));
    c->intoto = vt_canonical_json(st, &c->intoto_len, err);
    cJSON_Delete(st);
    if (!c->intoto)
        return err->code;
    /* a file ends with a newline, as the report does */
    char *nl = realloc(c->intoto, c->intoto_len + 2);
    if (!nl)
        return vt_error_set(err, VT_EINPUT, "in-toto: out of memory");
    c->intoto = nl;
    c->intoto[c->intoto_len++] = '\n';
    c->intoto[c->intoto_len] = 0;
    return VT_OK;
}

static int build_table(vt_neartie *c, vt_error *err)
{
    const vt_doc *L = &c->doc[LOCAL];
    const vt_nt_totals *t = &c->totals;
    vt_sbuf b = { 0 };
    int w = 6; /* the id column: as wide as the widest id, up to 32 */
    for (int32_t p = 0; p < L->n_prompts; p++) {
        int n = (int)strlen(c->ids[p]);
        w = n > w ? (n > 32 ? 32 : n) : w;
    }
    char scores[900];
    const char *shape = vt_nt_kind_names[vt_nt_scoring_kind(&c->doc[SCORES])];
    if (c->file[SCORES])
        snprintf(scores, sizeof scores, "prefix scores %.600s (%s)", c->file[SCORES], shape);
    else
        snprintf(scores, sizeof scores, "prefix scores by --score-with %.300s%s%.300s (%s)", c->o.score_with,
                 c->o.scores_out ? " into " : "", c->o.scores_out ? c->o.scores_out : "", shape);
    vt_sbuf_printf(&b, "vt-neartie: local %s, oracle %s, %s; threshold %g milli-nats\n", c->o.local, c->o.oracle, scores,
              c->o.threshold_mnats);
    vt_sbuf_printf(&b, "%-*s  %-13s  %5s  %-20s  %-20s  %10s  %10s\n", w, "prompt", "class", "first", "local token",
              "oracle token", "gap", "max gap");
    for (int32_t p = 0; p < L->n_prompts; p++) {
        const vt_nt_prompt_result *x = &c->res[p];
        char id[200], lt[200] = "-", ot[200] = "-", first[16] = "-", gap[32] = "-";
        display(c->ids[p], strlen(c->ids[p]), id, sizeof id);
        if (x->first_divergence >= 0) {
            snprintf(first, sizeof first, "%d", x->first_divergence);
            tok_show(c, x->local_token, lt, sizeof lt);
            tok_show(c, x->oracle_token, ot, sizeof ot);
            snprintf(gap, sizeof gap, "%.3f", x->first_gap_mnats);
        }
        vt_sbuf_printf(&b, "%-*s  %-13s  %5s  %-20s  %-20s  %10s  %10.3f\n", w, id, vt_prompt_class_name(x->cls), first,
                  lt, ot, gap, x->max_gap_mnats);
    }
    vt_sbuf_printf(&b, "totals: %d prompts: %d strict, %d near-tie-only, %d within-noise, %d failed; %lld positions: "
              "%lld zero gaps, %lld within %g, %lld above; max gap %.3f milli-nats\n", t->prompts, t->strict,
              t->near_tie, t->within_noise, t->failed, (long long)t->positions, (long long)t->zero_gaps,
              (long long)t->within_gaps, c->o.threshold_mnats, (long long)t->above_gaps, t->max_gap_mnats);
    if (c->have[SCORES_B]) {
        vt_sbuf_printf(&b, "oracle's noise: the local streams also scored %s%s%s: %lld positions within the oracle's "
                       "noise (above the threshold in some shape, within it in another), %lld beyond (above in every "
                       "shape); above the threshold per shape:", vt_nt_kind_names[vt_nt_scoring_kind(&c->doc[SCORES_B])],
                       c->have[SCORES_C] ? " and " : "", c->have[SCORES_C] ? vt_nt_kind_names[vt_nt_scoring_kind(&c->doc[SCORES_C])] : "",
                       (long long)t->within_noise_gaps, (long long)t->beyond_noise_gaps);
        for (int k = SCORES; k <= SCORES_C; k++)
            if (c->have[k])
                vt_sbuf_printf(&b, "%s %s %lld (max gap %.3f)", k == SCORES ? "" : ",", vt_nt_kind_names[vt_nt_scoring_kind(&c->doc[k])],
                               (long long)(k == SCORES ? t->above_gaps : t->above_other[k - SCORES_B]),
                               k == SCORES ? t->max_gap_mnats : t->max_other_mnats[k - SCORES_B]);
        vt_sbuf_puts(&b, "\n");
    } else
        vt_sbuf_printf(&b, "oracle's noise: not measured (prefix scores in one shape): %lld positions above the "
                       "threshold all count as beyond it\n", (long long)t->beyond_noise_gaps);
    if (c->doc[SCORES].bound)
        vt_sbuf_printf(&b, "scores told only the oracle's top-k log-probs: %lld positions whose local token was not "
                       "among them: their gaps are lower bounds, each counted above the threshold (nothing shows "
                       "them within it)\n", (long long)t->bound_gaps);
    if (c->have[SELF]) {
        vt_sbuf_printf(&b, "oracle's noise floor (its own streams scored %s; reported, never used to excuse a gap): "
                       "max %.3f milli-nats", vt_score_shape_name(c->doc[SELF].shape), t->noise_floor_max_mnats);
        const char *sep = "; per prompt:";
        for (int32_t p = 0; p < L->n_prompts; p++)
            if (c->floor_gap[p] > 0) {
                char id[200];
                display(c->ids[p], strlen(c->ids[p]), id, sizeof id);
                vt_sbuf_printf(&b, "%s %s %.3f at %d", sep, id, c->floor_gap[p], c->floor_pos[p]);
                sep = ",";
            }
        vt_sbuf_puts(&b, "\n");
    }
    if (t->strict < t->prompts)
        vt_sbuf_printf(&b, "margins at first divergences (milli-nats by which each capture preferred its own token "
                       "there, from its top-k):\n");
    for (int32_t p = 0; p < L->n_prompts; p++) {
        if (c->res[p].first_divergence < 0)
            continue;
        char id[200], ml[32], mo[32];
        display(c->ids[p], strlen(c->ids[p]), id, sizeof id);
        margin_text(c->margin[2 * p], ml, sizeof ml);
        margin_text(c->margin[2 * p + 1], mo, sizeof mo);
        vt_sbuf_printf(&b, "  %s position %d: local %s, oracle %s\n", id, c->res[p].first_divergence, ml, mo);
    }
    vt_sbuf_printf(&b, "scorer disagreements: %lld (positions with prefixes identical to the oracle's stream where the "
                   "prefix scores' argmax is not the oracle capture's token: the oracle's own variance)\n",
                   (long long)t->scorer_disagreements);
    if (c->n_top) {
        vt_sbuf_printf(&b, "largest gaps:\n");
        for (int32_t k = 0; k < c->n_top; k++) {
            const gap_entry *g = &c->top[k];
            const int32_t *lt = L->tokens + L->off[g->prompt];
            char a[200], o[200], id[200];
            display(c->ids[g->prompt], strlen(c->ids[g->prompt]), id, sizeof id);
            tok_show(c, lt[g->position], a, sizeof a);
            tok_show(c, c->doc[SCORES].argmax[c->doc[SCORES].off[g->prompt] + g->position], o, sizeof o);
            vt_sbuf_printf(&b, "  %s position %d: gap %.3f milli-nats: local %s, oracle prefers %s; preceded by:", id,
                      g->position, g->gap, a, o);
            for (int32_t i = g->position - c->o.context < 0 ? 0 : g->position - c->o.context; i < g->position; i++) {
                tok_show(c, lt[i], a, sizeof a);
                vt_sbuf_printf(&b, " %s", a);
            }
            vt_sbuf_puts(&b, "\n");
        }
    }
    const vt_nt_metrics *m = &c->metrics;
    if (m->available) {
        vt_sbuf_printf(&b, "metrics over %lld positions with identical prefixes (%d prompts; later positions follow "
                  "different prefixes):\n", (long long)m->positions, m->prompts);
        vt_sbuf_printf(&b, "  KL(oracle||local) mean %.6g +- %.2g, median %.6g, p99 %.6g, max %.6g (prompt %d position %d)\n",
                  m->kld_mean, m->kld_mean_unc, m->kld_median, m->kld_p99, m->kld_max, m->kld_max_prompt,
                  m->kld_max_position);
        vt_sbuf_printf(&b, "  top-1 agreement %.4f; max |dlogit| %.6g; max |dlogprob| %.6g; RMS dp %.6g, max |dp| %.6g\n",
                  m->top1_agreement, m->max_abs_dlogit, m->max_abs_dlogprob, m->rms_dp, m->max_abs_dp);
    } else {
        vt_sbuf_printf(&b, "metrics: not available: %s\n", m->reason);
    }
    vt_sbuf_printf(&b, "token text: %s\n", c->tok_note);
    if (c->unverified.n) {
        vt_sbuf_printf(&b, "evidence: NOT STRICT (--allow-unverified let in %d reason%s):\n", c->unverified.n,
                       c->unverified.n == 1 ? "" : "s");
        for (int i = 0; i < c->unverified.n; i++)
            vt_sbuf_printf(&b, "  rule %s: %s: %s\n", c->unverified.v[i].rule, c->unverified.v[i].file,
                           c->unverified.v[i].text);
    } else {
        vt_sbuf_printf(&b, "evidence: strict (both captures pass the strict gate)\n");
    }
    for (const cJSON *d = c->allowed->child; d; d = d->next) {
        const cJSON *l = cJSON_GetObjectItemCaseSensitive(d, "left"), *r = cJSON_GetObjectItemCaseSensitive(d, "right");
        vt_sbuf_printf(&b, "allowed difference: %s: %s %s", cJSON_GetObjectItemCaseSensitive(d, "field")->valuestring,
                  cJSON_GetObjectItemCaseSensitive(l, "file")->valuestring,
                  cJSON_GetObjectItemCaseSensitive(l, "value")->valuestring);
        if (cJSON_IsObject(r))
            vt_sbuf_printf(&b, ", %s %s", cJSON_GetObjectItemCaseSensitive(r, "file")->valuestring,
                      cJSON_GetObjectItemCaseSensitive(r, "value")->valuestring);
        vt_sbuf_puts(&b, "\n");
    }
    vt_sbuf_printf(&b, "gate: --require-strict %d --max-failed %d: %s", c->o.require_strict, c->o.max_failed,
              t->gate_passed ? "passed" : "FAILED");
    for (int i = 0; i < c->n_gate_reasons; i++)
        vt_sbuf_printf(&b, "%s%s", i ? "; " : " (", c->gate_reasons[i]);
    vt_sbuf_printf(&b, "%s", c->n_gate_reasons ? ")" : "");
    if (t->within_noise)
        vt_sbuf_printf(&b, "; %d prompt%s within the oracle's noise, not counted as failed", t->within_noise,
                       t->within_noise == 1 ? "" : "s");
    vt_sbuf_puts(&b, "\n");
    if (b.oom || !b.p) {
        free(b.p);
        return vt_error_set(err, VT_EINPUT, "table: out of memory");
    }
    c->table = b.p;
    return VT_OK;
}

/* Keeps the n_top largest gaps, largest first (ties: the earlier stays). */
void vt_nt_prompt_input_of(const vt_neartie *c, int32_t p, vt_nt_prompt_input *in)
{
    const vt_doc *L = &c->doc[LOCAL], *O = &c->doc[ORACLE], *S = &c->doc[SCORES];
    int32_t n = L->n[p] < O->n[p] ? L->n[p] : O->n[p];
    *in = (vt_nt_prompt_input){ n, L->tokens + L->off[p], O->tokens + O->off[p], S->logprobs + S->off[p],
                                S->argmax_logprobs + S->off[p], NULL, NULL, NULL, NULL, NULL, NULL, NULL };
    in->bound = S->bound ? S->bound + S->off[p] : NULL;
    if (c->have[SCORES_B]) {
        const vt_doc *B = &c->doc[SCORES_B];
        in->logp_local_b = B->logprobs + B->off[p];
        in->logp_argmax_b = B->argmax_logprobs + B->off[p];
        in->bound_b = B->bound ? B->bound + B->off[p] : NULL;
    }
    if (c->have[SCORES_C]) {
        const vt_doc *C = &c->doc[SCORES_C];
        in->logp_local_c = C->logprobs + C->off[p];
        in->logp_argmax_c = C->argmax_logprobs + C->off[p];
        in->bound_c = C->bound ? C->bound + C->off[p] : NULL;
    }
}

static void top_insert(vt_neartie *c, double gap, int32_t p, int32_t i)
{
    int32_t cap = c->o.top_gaps;
    if (cap <= 0 || (c->n_top == cap && !(gap > c->top[cap - 1].gap)))
        return;
    int32_t k = c->n_top < cap ? c->n_top++ : cap - 1;
    while (k > 0 && gap > c->top[k - 1].gap) {
        c->top[k] = c->top[k - 1];
        k--;
    }
    c->top[k] = (gap_entry){ gap, p, i };
}

int vt_nt_compare(vt_neartie *c, vt_error *err)
{
    if (!c->guarded || c->refusals.n || !c->have[SCORES])
        return vt_error_set(err, VT_EINPUT, "neartie: compare before the guards passed");
    const vt_doc *L = &c->doc[LOCAL], *O = &c->doc[ORACLE], *S = &c->doc[SCORES];
    const int32_t P = L->n_prompts;
    c->res = calloc((size_t)P, sizeof *c->res);
    c->positions = calloc((size_t)P, sizeof *c->positions);
    c->comparable = calloc((size_t)P, sizeof *c->comparable);
    c->top = calloc((size_t)(c->o.top_gaps > 0 ? c->o.top_gaps : 1), sizeof *c->top);
    c->ids = calloc((size_t)(P ? P : 1), sizeof *c->ids);
    c->margin = calloc((size_t)(P ? 2 * P : 1), sizeof *c->margin);
    c->floor_gap = calloc((size_t)(P ? P : 1), sizeof *c->floor_gap);
    c->floor_pos = calloc((size_t)(P ? P : 1), sizeof *c->floor_pos);
    if (!c->res || !c->positions || !c->comparable || !c->top || !c->ids || !c->margin || !c->floor_gap ||
        !c->floor_pos)
        return vt_error_set(err, VT_EINPUT, "neartie: out of memory");
    int32_t k = 0;
    for (const cJSON *pr = cJSON_GetObjectItemCaseSensitive(L->meta, "prompts")->child; pr && k < P; pr = pr->next)
        c->ids[k++] = cJSON_GetObjectItemCaseSensitive(pr, "id")->valuestring;
    vt_nt_totals *t = &c->totals;
    memset(t, 0, sizeof *t);
    t->prompts = P;
    const double thr = c->o.threshold_mnats;
    for (int32_t p = 0; p < P; p++) {
        /* Streams of different lengths (--allow-diff max_tokens) are compared
         * over the shorter; the scores cover the local stream exactly. */
        vt_nt_prompt_input in;
        vt_nt_prompt_input_of(c, p, &in);
        const int32_t n = in.n, *ot = in.oracle_tokens;
        const double *lp = in.logp_local, *ap = in.logp_argmax;
        vt_nt_score_prompt(&in, thr, &c->res[p]);
        /* The oracle's noise floor: its largest gap on its own stream. */
        c->floor_gap[p] = NAN;
        c->floor_pos[p] = -1;
        if (c->have[SELF]) {
            const vt_doc *F = &c->doc[SELF];
            c->floor_gap[p] = 0.0;
            for (int32_t i = 0; i < F->n[p]; i++) {
                double g = vt_nt_gap_mnats(F->argmax_logprobs[F->off[p] + i], F->logprobs[F->off[p] + i]);
                if (g > c->floor_gap[p]) {
                    c->floor_gap[p] = g;
                    c->floor_pos[p] = i;
                }
            }
            t->noise_floor_max_mnats = fmax(t->noise_floor_max_mnats, c->floor_gap[p]);
        }
        const vt_nt_prompt_result *x = &c->res[p];
        c->positions[p] = n;
        c->comparable[p] = x->first_divergence < 0 ? n : x->first_divergence + 1;
        c->margin[2 * p] = c->margin[2 * p + 1] = NAN;
        if (x->first_divergence >= 0) {
            c->margin[2 * p] = margin_mnats(L, p, x->first_divergence, x->local_token, x->oracle_token);
            c->margin[2 * p + 1] = margin_mnats(O, p, x->first_divergence, x->oracle_token, x->local_token);
        }
        const int32_t *am = S->argmax + S->off[p];
        for (int32_t i = 0; i < c->comparable[p]; i++)
            t->scorer_disagreements += am[i] != ot[i];
        if (x->max_gap_mnats > 0) /* else no gap of this prompt can make the list */
            for (int32_t i = 0; i < n; i++) {
                double g = vt_nt_gap_mnats(ap[i], lp[i]);
                if (g > 0)
                    top_insert(c, g, p, i);
            }
        t->strict += x->cls == VT_PROMPT_STRICT;
        t->near_tie += x->cls == VT_PROMPT_NEAR_TIE;
        t->failed += x->cls == VT_PROMPT_FAILED;
        t->within_noise += x->cls == VT_PROMPT_WITHIN_NOISE;
        t->within_noise_gaps += x->within_noise_gaps;
        t->beyond_noise_gaps += x->beyond_noise_gaps;
        t->bound_gaps += x->bound_gaps;
        for (int s = 0; s < 2; s++) {
            t->above_other[s] += x->above_gaps_other[s];
            t->max_other_mnats[s] = fmax(t->max_other_mnats[s], x->max_gap_other_mnats[s]);
        }
        t->positions += n;
        t->zero_gaps += x->zero_gaps;
        t->within_gaps += x->within_gaps;
        t->above_gaps += x->above_gaps;
        t->max_gap_mnats = fmax(t->max_gap_mnats, x->max_gap_mnats);
    }
    char reason[200];
    if (t->strict < c->o.require_strict) {
        snprintf(reason, sizeof reason, "%d strict prompts: expected at least %d (--require-strict)", t->strict,
                 c->o.require_strict);
        c->gate_reasons[c->n_gate_reasons++] = strdup(reason);
    }
    if (t->failed > c->o.max_failed) {
        snprintf(reason, sizeof reason, "%d failed prompts: expected at most %d (--max-failed)", t->failed,
                 c->o.max_failed);
        c->gate_reasons[c->n_gate_reasons++] = strdup(reason);
    }
    t->gate_passed = c->n_gate_reasons == 0;

    c->kl_at = malloc((size_t)(L->n_positions > 0 ? L->n_positions : 1) * sizeof *c->kl_at);
    if (!c->kl_at)
        return vt_error_set(err, VT_EINPUT, "neartie: out of memory");
    for (int64_t i = 0; i < L->n_positions; i++)
        c->kl_at[i] = NAN;
    int rc = vt_nt_metrics_compute(L, O, c->comparable, &c->metrics, c->kl_at, err);
    if (rc)
        return rc;
    open_vocabulary(c);
    rc = build_report(c, err);
    if (rc == VT_OK)
        rc = build_junit(c, err);
    if (rc == VT_OK && c->o.intoto)
        rc = build_intoto(c, err);
    if (rc == VT_OK)
        rc = build_table(c, err);
    if (rc == VT_OK && c->o.html)
        rc = vt_nt_build_html(c, err);
    return rc;
}

const char *vt_nt_table(const vt_neartie *c) { return c->table; }

const char *vt_nt_report_json(const vt_neartie *c, size_t *len)
{
    if (len)
        *len = c->report_len;
    return c->report;
}

const char *vt_nt_junit(const vt_neartie *c, size_t *len)
{
    if (len)
        *len = c->junit_len;
    return c->junit;
}

void vt_nt_totals_get(const vt_neartie *c, vt_nt_totals *t) { *t = c->totals; }

int vt_nt_publish(vt_neartie *c, vt_error *err)
{
    if (!c->report)
        return vt_error_set(err, VT_EINPUT, "neartie: publish before compare");
    vt_publish_item items[5];
    int n = 0;
    memset(items, 0, sizeof items);
    if (c->o.out)
        items[n++] = (vt_publish_item){ .path = c->o.out, .data = c->report, .size = c->report_len };
    if (c->o.junit)
        items[n++] = (vt_publish_item){ .path = c->o.junit, .data = c->junit, .size = c->junit_len };
    if (c->o.scores_out)
        items[n++] = (vt_publish_item){ .path = c->o.scores_out, .data = c->text[SCORES], .size = c->text_len[SCORES] };
    if (c->o.intoto)
        items[n++] = (vt_publish_item){ .path = c->o.intoto, .data = c->intoto, .size = c->intoto_len };
    if (c->o.html)
        items[n++] = (vt_publish_item){ .path = c->o.html, .data = c->html, .size = c->html_len };
    if (n == 0)
        return VT_OK;
    /* The outputs may not alias any input: captures, scores, model, the
     * package, and every side file an input names. */
    const char *inputs[20];
    int ni = 0;
    const char *direct[] = { c->o.local,
                             c->o.oracle,
                             c->o.prefix_scores,
                             c->o.prefix_scores_b,
                             c->o.prefix_scores_c,
                             c->o.model,
                             c->o.package,
                             c->tok_file[0] ? c->tok_file : NULL,
                             c->doc[LOCAL].topk_path,
                             c->doc[LOCAL].logits_path,
                             c->doc[ORACLE].topk_path,
                             c->doc[ORACLE].logits_path,
                             /* the slots read from files, whichever options filled them */
                             c->file[SCORES] ? c->doc[SCORES].logits_path : NULL,
                             c->file[SCORES_B] ? c->doc[SCORES_B].logits_path : NULL,
                             c->file[SCORES_C] ? c->doc[SCORES_C].logits_path : NULL };
    for (size_t i = 0; i < sizeof direct / sizeof direct[0]; i++)
        if (direct[i])
            inputs[ni++] = direct[i];
    vt_publish_opts po = { .overwrite = c->o.overwrite, .inputs = inputs, .n_inputs = ni };
    return vt_publish_group(items, n, &po, err);
}

void vt_nt_free(vt_neartie *c)
{
    if (!c)
        return;
    for (int i = 0; i < N_DOCS; i++) {
        vt_doc_free(&c->doc[i]);
        free(c->text[i]);
    }
    vt_reasons_free(&c->refusals);
    vt_reasons_free(&c->unverified);
    cJSON_Delete(c->allowed);
    vt_tokenizer_free(c->tok);
    free(c->ids);
    free(c->res);
    free(c->positions);
    free(c->comparable);
    free(c->margin);
    free(c->floor_gap);
    free(c->floor_pos);
    free(c->top);
    for (int i = 0; i < c->n_gate_reasons; i++)
        free(c->gate_reasons[i]);
    free(c->table);
    free(c->report);
    free(c->junit);
    free(c->intoto);
    free(c->html);
    free(c->kl_at);
    cJSON_Delete(c->report_tree);
    free(c);
}
