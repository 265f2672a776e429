/* Guards of a near-tie comparison: the list and the order are in guards.h. */
#include "guards.h"

#include "../capture/canonical_json.h"
#include "../capture/capture.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void vt_lines_add(vt_lines *l, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    for (char *p = line; *p; p++) /* one line each, whatever a value held */
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    char **grown = realloc(l->v, (size_t)(l->n + 1) * sizeof *grown);
    if (!grown)
        return;
    l->v = grown;
    if ((l->v[l->n] = strdup(line)))
        l->n++;
}

void vt_lines_free(vt_lines *l)
{
    for (int i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    l->v = NULL;
    l->n = 0;
}

/* ------------------------------------------------------------ helpers */

static const char *const allow_fields[] = {
    "model.files", "model.arch", "model.revision", "model.gguf", "repetitions", "mode", "cache_dtype", "matmul",
    "n_ctx", "max_tokens", "threads", "n_batch", "seed", "logprobs_top_k", "sampling.top_k", "sampling.top_p",
    "sampling.min_p", "determinism", "scorer",
};
static const char allow_list[] = "model.files, model.arch, model.revision, model.gguf, repetitions, mode, "
                                 "cache_dtype, matmul, n_ctx, max_tokens, threads, n_batch, seed, logprobs_top_k, "
                                 "sampling.top_k, sampling.top_p, sampling.min_p, determinism, scorer";

int vt_nt_allow_field_known(const char *field, const char **list)
{
    if (list)
        *list = allow_list;
    for (size_t i = 0; i < sizeof allow_fields / sizeof allow_fields[0]; i++)
        if (strcmp(field, allow_fields[i]) == 0)
            return 1;
    return 0;
}

static int allowed(const vt_nt_guard_opts *o, const char *field)
{
    for (int i = 0; i < o->n_allow; i++)
        if (strcmp(o->allow[i], field) == 0)
            return 1;
    return 0;
}

/* A member by dotted path ("settings.resolved.sampling.top_p"). */
static const cJSON *jget(const cJSON *root, const char *path)
{
    char key[128];
    const cJSON *v = root;
    while (v && *path) {
        size_t n = strcspn(path, ".");
        if (n >= sizeof key)
            return NULL;
        memcpy(key, path, n);
        key[n] = '\0';
        v = cJSON_GetObjectItemCaseSensitive(v, key);
        path += n + (path[n] == '.');
    }
    return v;
}

/* A value as text for messages: strings as they are, anything else as its
 * canonical JSON (cut to cap). */
static void jtext(const cJSON *v, char *buf, size_t cap)
{
    if (!v) {
        snprintf(buf, cap, "(missing)");
    } else if (cJSON_IsString(v)) {
        snprintf(buf, cap, "%s", v->valuestring);
    } else {
        size_t n;
        char *s = vt_canonical_json(v, &n, NULL);
        snprintf(buf, cap, "%s", s ? s : "?");
        free(s);
    }
}

/* Equality of canonical forms (exact for numbers, unlike cJSON_Compare). */
static int jequal(const cJSON *a, const cJSON *b)
{
    if (!a || !b)
        return a == b;
    size_t na, nb;
    char *sa = vt_canonical_json(a, &na, NULL), *sb = vt_canonical_json(b, &nb, NULL);
    int eq = sa && sb && na == nb && memcmp(sa, sb, na) == 0;
    free(sa);
    free(sb);
    return eq;
}

static void record(cJSON *allowed_rec, const char *field, const vt_doc *a, const cJSON *va, const vt_doc *b,
                   const cJSON *vb)
{
    if (!allowed_rec)
        return;
    char ta[256], tb[256];
    jtext(va, ta, sizeof ta);
    jtext(vb, tb, sizeof tb);
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "field", field);
    cJSON *l = cJSON_AddObjectToObject(e, "left");
    cJSON_AddStringToObject(l, "file", a->path);
    cJSON_AddStringToObject(l, "value", ta);
    cJSON *r = cJSON_AddObjectToObject(e, "right");
    cJSON_AddStringToObject(r, "file", b->path);
    cJSON_AddStringToObject(r, "value", tb);
    cJSON_AddItemToArray(allowed_rec, e);
}

static const char *prompt_id(const vt_doc *d, int p)
{
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(d->meta, "prompts"), p), "id");
    return cJSON_IsString(id) ? id->valuestring : "?";
}

/* --------------------------------------------------------- each input */

static void guard_runs(const vt_doc *d, vt_lines *out)
{
    if (d->error_run.run >= 0)
        vt_lines_add(out, "%s: runs[%d] (prompt %d '%s', repeat %d): status error (%s): expected every run ok",
                     d->path, d->error_run.run, d->error_run.prompt, prompt_id(d, d->error_run.prompt),
                     d->error_run.repeat, d->error_run.what);
    if (d->error_after.run >= 0)
        vt_lines_add(out, "%s: runs[%d] (prompt %d '%s', repeat %d): status ok with an error recorded after "
                     "generation (%s): expected none", d->path, d->error_after.run, d->error_after.prompt,
                     prompt_id(d, d->error_after.prompt), d->error_after.repeat, d->error_after.what);
}

static void guard_determinism(const vt_doc *d, const vt_nt_guard_opts *o, vt_lines *out, cJSON *rec)
{
    if (d->differs.run < 0)
        return;
    if (allowed(o, "determinism")) {
        if (rec) {
            cJSON *e = cJSON_CreateObject();
            char what[480];
            snprintf(what, sizeof what, "runs[%d] (prompt %d, repeat %d) differs from repeat 0 in %s at position %d",
                     d->differs.run, d->differs.prompt, d->differs.repeat, d->differs.what, d->differs.position);
            cJSON_AddStringToObject(e, "field", "determinism");
            cJSON *l = cJSON_AddObjectToObject(e, "left");
            cJSON_AddStringToObject(l, "file", d->path);
            cJSON_AddStringToObject(l, "value", what);
            cJSON_AddItemToObject(e, "right", cJSON_CreateNull());
            cJSON_AddItemToArray(rec, e);
        }
        return;
    }
    vt_lines_add(out, "%s: runs[%d] (prompt %d '%s', repeat %d): differs from repeat 0 in %s at position %d: "
                 "expected identical repeats (repeat 0 is the stream compared; or --allow-diff determinism)", d->path,
                 d->differs.run, d->differs.prompt, prompt_id(d, d->differs.prompt), d->differs.repeat,
                 d->differs.what, d->differs.position);
}

static void guard_greedy(const vt_doc *d, vt_lines *out)
{
    const cJSON *t = jget(d->meta, "settings.resolved.sampling.temperature");
    if (t && t->valuedouble != 0.0) {
        char v[64];
        jtext(t, v, sizeof v);
        vt_lines_add(out, "%s: settings.resolved.sampling.temperature: %s: expected 0 (greedy): the near-tie rule "
                     "compares greedy streams", d->path, v);
    }
}

/* ------------------------------------------------------------- pairs */

/* One field of both documents (path relative to each meta). A difference
 * is recorded if allowed under allow_name, else refused with why. Returns 1
 * if they differ. */
static int compare_field(const vt_doc *a, const vt_doc *b, const char *path, const char *allow_name,
                         const char *why, const vt_nt_guard_opts *o, vt_lines *out, cJSON *rec)
{
    const cJSON *va = jget(a->meta, path), *vb = jget(b->meta, path);
    if (jequal(va, vb))
        return 0;
    if (allow_name && allowed(o, allow_name)) {
        record(rec, allow_name, a, va, b, vb);
        return 1;
    }
    char ta[200], tb[200], hint[80] = "";
    jtext(va, ta, sizeof ta);
    jtext(vb, tb, sizeof tb);
    if (allow_name)
        snprintf(hint, sizeof hint, " (or --allow-diff %s)", allow_name);
    vt_lines_add(out, "%s: %s %s, %s %s: expected %s%s", path, a->path, ta, b->path, tb, why, hint);
    return 1;
}

static void guard_prompts(const vt_doc *a, const vt_doc *b, vt_lines *out)
{
    const cJSON *pa = jget(a->meta, "prompts"), *pb = jget(b->meta, "prompts");
    int na = cJSON_GetArraySize(pa), nb = cJSON_GetArraySize(pb);
    if (na != nb) {
        vt_lines_add(out, "prompts: %s has %d, %s %d: expected the same prompt set", a->path, na, b->path, nb);
        return;
    }
    int i = 0;
    for (const cJSON *x = pa->child, *y = pb->child; x && y; x = x->next, y = y->next, i++) {
        static const char *const keys[] = { "id", "tokens", "text" };
        for (int k = 0; k < 3; k++) {
            const cJSON *u = cJSON_GetObjectItemCaseSensitive(x, keys[k]),
                        *v = cJSON_GetObjectItemCaseSensitive(y, keys[k]);
            if (jequal(u, v))
                continue;
            char tu[120], tv[120];
            jtext(u, tu, sizeof tu);
            jtext(v, tv, sizeof tv);
            vt_lines_add(out, "prompts[%d].%s: %s '%s', %s '%s': expected the same prompt set", i, keys[k], a->path,
                         tu, b->path, tv);
            return; /* the first difference says it */
        }
    }
}

/* model.files by content (size, sha256): a renamed file is the same file. */
static void guard_model_files(const vt_doc *a, const vt_doc *b, const char *why, const vt_nt_guard_opts *o,
                              vt_lines *out, cJSON *rec)
{
    const cJSON *fa = jget(a->meta, "model.files"), *fb = jget(b->meta, "model.files");
    int n = cJSON_GetArraySize(fa), same = n == cJSON_GetArraySize(fb);
    int i = 0;
    const char *key = "sha256";
    for (const cJSON *x = fa->child, *y = fb->child; same && x && y; x = x->next, y = y->next, i++) {
        if (!jequal(cJSON_GetObjectItemCaseSensitive(x, "size"), cJSON_GetObjectItemCaseSensitive(y, "size")))
            same = 0, key = "size";
        else if (!jequal(cJSON_GetObjectItemCaseSensitive(x, "sha256"), cJSON_GetObjectItemCaseSensitive(y, "sha256")))
            same = 0;
        if (!same)
            break;
    }
    if (same)
        return;
    if (allowed(o, "model.files")) {
        record(rec, "model.files", a, fa, b, fb);
        return;
    }
    if (i < n && i < cJSON_GetArraySize(fb)) {
        char ta[100], tb[100];
        jtext(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(fa, i), key), ta, sizeof ta);
        jtext(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(fb, i), key), tb, sizeof tb);
        vt_lines_add(out, "model.files[%d].%s: %s %s, %s %s: expected %s (or --allow-diff model.files)", i, key,
                     a->path, ta, b->path, tb, why);
    } else {
        vt_lines_add(out, "model.files: %s lists %d files, %s %d: expected %s (or --allow-diff model.files)", a->path,
                     n, b->path, cJSON_GetArraySize(fb), why);
    }
}

static void guard_vocabulary(const vt_doc *a, const vt_doc *b, vt_lines *out)
{
    compare_field(a, b, "model.gguf.n_vocab", NULL,
                  "the same vocabulary: token ids must mean the same in both (cannot be allowed)", NULL, out, NULL);
    compare_field(a, b, "model.gguf.tokenizer_pre", NULL,
                  "the same tokenizer: token ids must mean the same in both (cannot be allowed)", NULL, out, NULL);
}

/* The rest of model.gguf, member by member, under one allow name. */
static void guard_gguf_rest(const vt_doc *a, const vt_doc *b, const vt_nt_guard_opts *o, vt_lines *out, cJSON *rec)
{
    const cJSON *ga = jget(a->meta, "model.gguf");
    for (const cJSON *m = ga ? ga->child : NULL; m; m = m->next) {
        if (strcmp(m->string, "n_vocab") == 0 || strcmp(m->string, "tokenizer_pre") == 0)
            continue;
        char path[96];
        snprintf(path, sizeof path, "model.gguf.%s", m->string);
        if (compare_field(a, b, path, "model.gguf", "the same model", o, out, rec))
            return; /* one line for the summary */
    }
}

/* settings.resolved fields and the guard each belongs to. */
typedef struct setting_guard {
    const char *field, *why;
} setting_guard;

static const setting_guard setting_guards[] = {
    { "repetitions", "equal repeat counts" },
    { "mode", "equal: the comparison declares one execution mode" },
    { "cache_dtype", "equal: the comparison declares one cache dtype" },
    { "matmul", "equal: the comparison declares one compute path (matmul activations)" },
    { "n_ctx", "equal capacity" },
    { "max_tokens", "equal capacity" },
    { "threads", "equal settings" },
    { "n_batch", "equal settings" },
    { "seed", "equal settings" },
    { "logprobs_top_k", "equal settings" },
    { "sampling.top_k", "equal settings" },
    { "sampling.top_p", "equal settings" },
    { "sampling.min_p", "equal settings" },
};

static void guard_setting(const vt_doc *a, const vt_doc *b, const char *field, const char *why,
                          const vt_nt_guard_opts *o, vt_lines *out, cJSON *rec)
{
    char path[96];
    snprintf(path, sizeof path, "settings.resolved.%s", field);
    compare_field(a, b, path, field, why, o, out, rec);
}

/* --mode / --cache-dtype / --matmul: each capture's resolved value. */
static void guard_declared(const vt_doc *d, const vt_nt_guard_opts *o, vt_lines *out)
{
    const char *fields[] = { "mode", "cache_dtype", "matmul" };
    const char *opts[] = { "--mode", "--cache-dtype", "--matmul" };
    const char *want[] = { o->mode, o->cache_dtype, o->matmul };
    for (int i = 0; i < 3; i++) {
        if (!want[i])
            continue;
        char path[64];
        snprintf(path, sizeof path, "settings.resolved.%s", fields[i]);
        const cJSON *v = jget(d->meta, path);
        if (!cJSON_IsString(v) || strcmp(v->valuestring, want[i]) != 0)
            vt_lines_add(out, "%s: %s: %s: expected %s, as %s declares", d->path, path,
                         cJSON_IsString(v) ? v->valuestring : "(missing)", want[i], opts[i]);
    }
}

/* The first leaf where two JSON values differ, as a dotted path. */
static int first_difference(const cJSON *a, const cJSON *b, char *path, size_t cap)
{
    if (cJSON_IsObject(a) && cJSON_IsObject(b)) {
        size_t n = strlen(path);
        for (const cJSON *m = a->child; m; m = m->next) {
            snprintf(path + n, cap - n, "%s%s", n ? "." : "", m->string);
            if (first_difference(m, cJSON_GetObjectItemCaseSensitive(b, m->string), path, cap))
                return 1;
        }
        for (const cJSON *m = b->child; m; m = m->next)
            if (!cJSON_GetObjectItemCaseSensitive(a, m->string)) {
                snprintf(path + n, cap - n, "%s%s", n ? "." : "", m->string);
                return 1;
            }
        path[n] = '\0';
        return 0;
    }
    return !jequal(a, b);
}

/* The workload both were computed on, allowed fields set aside. */
static cJSON *workload_for_comparison(const vt_doc *d, const vt_nt_guard_opts *o)
{
    cJSON *w = vt_capture_workload(d->meta);
    if (!w)
        return NULL;
    cJSON *m = cJSON_GetObjectItemCaseSensitive(w, "model"), *s = cJSON_GetObjectItemCaseSensitive(w, "settings");
    static const char *const model_keys[] = { "files", "arch", "revision", "gguf" };
    for (int i = 0; i < 4; i++) {
        char f[32];
        snprintf(f, sizeof f, "model.%s", model_keys[i]);
        if (allowed(o, f) && strcmp(model_keys[i], "gguf") != 0) {
            cJSON_DeleteItemFromObjectCaseSensitive(m, model_keys[i]);
        } else if (allowed(o, f)) { /* the vocabulary stays */
            cJSON *g = cJSON_GetObjectItemCaseSensitive(m, "gguf");
            for (cJSON *k = g ? g->child : NULL, *next; k; k = next) {
                next = k->next;
                if (strcmp(k->string, "n_vocab") != 0 && strcmp(k->string, "tokenizer_pre") != 0)
                    cJSON_DeleteItemFromObjectCaseSensitive(g, k->string);
            }
        }
    }
    /* model.files by content only. */
    cJSON *files = cJSON_GetObjectItemCaseSensitive(m, "files");
    for (cJSON *f = files ? files->child : NULL; f; f = f->next)
        cJSON_DeleteItemFromObjectCaseSensitive(f, "name");
    for (size_t i = 0; i < sizeof setting_guards / sizeof setting_guards[0]; i++) {
        const char *f = setting_guards[i].field;
        if (!allowed(o, f))
            continue;
        if (strncmp(f, "sampling.", 9) == 0)
            cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(s, "sampling"), f + 9);
        else
            cJSON_DeleteItemFromObjectCaseSensitive(s, f);
    }
    return w;
}

static void guard_workload(const vt_doc *a, const vt_doc *b, const vt_nt_guard_opts *o, vt_lines *out)
{
    if (strcmp(a->workload_seal.hex, b->workload_seal.hex) == 0)
        return;
    cJSON *wa = workload_for_comparison(a, o), *wb = workload_for_comparison(b, o);
    char path[256] = "";
    if (wa && wb && !first_difference(wa, wb, path, sizeof path) && !first_difference(wb, wa, path, sizeof path)) {
        cJSON_Delete(wa);
        cJSON_Delete(wb);
        return; /* they differ only where differences are allowed */
    }
    cJSON_Delete(wa);
    cJSON_Delete(wb);
    vt_lines_add(out, "workload_seal: %s %s, %s %s: expected the same workload (model, prompts, settings.resolved); "
                 "they differ in %s", a->path, a->workload_seal.hex, b->path, b->workload_seal.hex,
                 path[0] ? path : "(unknown)");
}

void vt_nt_guard_pair(const vt_doc *local, const vt_doc *oracle, const vt_nt_guard_opts *o, vt_lines *out,
                      cJSON *rec)
{
    int before = out->n;
    guard_runs(local, out);
    guard_runs(oracle, out);
    guard_prompts(local, oracle, out);
    guard_model_files(local, oracle, "the same model file", o, out, rec);
    compare_field(local, oracle, "model.arch", "model.arch", "the same architecture", o, out, rec);
    compare_field(local, oracle, "model.revision", "model.revision", "the same model revision", o, out, rec);
    guard_gguf_rest(local, oracle, o, out, rec);
    guard_vocabulary(local, oracle, out);
    guard_greedy(local, out);
    guard_greedy(oracle, out);
    for (size_t i = 0; i < sizeof setting_guards / sizeof setting_guards[0]; i++)
        guard_setting(local, oracle, setting_guards[i].field, setting_guards[i].why, o, out, rec);
    guard_declared(local, o, out);
    guard_declared(oracle, o, out);
    if (out->n == before)
        guard_workload(local, oracle, o, out);
    guard_determinism(local, o, out, rec);
    guard_determinism(oracle, o, out, rec);
}

/* --------------------------------------------------------- prefix scores */

void vt_nt_guard_prefix(const vt_doc *local, const vt_doc *oracle, const vt_doc *s, const vt_nt_guard_opts *o,
                        vt_lines *out, cJSON *rec)
{
    guard_runs(s, out);
    /* Bound to this local capture: its seal, its prompts, its streams. */
    const cJSON *lseal = jget(s->meta, "local.seal"), *lws = jget(s->meta, "local.workload_seal");
    if (!cJSON_IsString(lseal) || strcmp(lseal->valuestring, local->seal.hex) != 0)
        vt_lines_add(out, "%s: local.seal: %s: expected %s, the seal of %s: the prefix scores are not bound to this "
                     "local capture", s->path, cJSON_IsString(lseal) ? lseal->valuestring : "(missing)",
                     local->seal.hex, local->path);
    else if (!cJSON_IsString(lws) || strcmp(lws->valuestring, local->workload_seal.hex) != 0)
        vt_lines_add(out, "%s: local.workload_seal: %s: expected %s, the workload seal of %s", s->path,
                     cJSON_IsString(lws) ? lws->valuestring : "(missing)", local->workload_seal.hex, local->path);
    int n_before = out->n;
    guard_prompts(local, s, out);
    if (out->n == n_before && s->n_prompts == local->n_prompts)
        for (int p = 0; p < s->n_prompts; p++) {
            if (local->error_run.run >= 0 || s->error_run.run >= 0)
                break; /* said above */
            int32_t n = s->n[p] < local->n[p] ? s->n[p] : local->n[p], i = 0;
            const int32_t *a = local->tokens + local->off[p], *b = s->tokens + s->off[p];
            while (i < n && a[i] == b[i])
                i++;
            if (i < n || s->n[p] != local->n[p]) {
                vt_lines_add(out, "%s: runs (prompt %d '%s'): the scored tokens differ from %s's repeat 0 at position "
                             "%d: expected that stream", s->path, p, prompt_id(s, p), local->path, i);
                break;
            }
        }
    /* Scored by the oracle: its model, vocabulary, runner and configuration. */
    guard_model_files(oracle, s, "the oracle's model: the prefix scores must come from the oracle", o, out, rec);
    guard_vocabulary(oracle, s, out);
    static const char *const runner_keys[] = { "runtime.runner.name", "runtime.runner.version" };
    for (int i = 0; i < 2; i++)
        compare_field(oracle, s, runner_keys[i], "scorer", "the oracle's runner: the prefix scores must come from "
                      "the oracle", o, out, rec);
    static const char *const config[] = { "mode", "cache_dtype", "matmul", "n_ctx" };
    for (int i = 0; i < 4; i++)
        guard_setting(oracle, s, config[i], "the oracle's configuration", o, out, rec);
    guard_determinism(s, o, out, rec);
}
