/* The guards of a near-tie comparison: one table of rules, at the end of
 * this file; what each checks, and the order, are in guards.h. */
#include "guards.h"
#include "../common/vt_sort.h"

#include "../capture/canonical_json.h"
#include "../capture/capture.h"
#include "../capture/strict.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ helpers */

static const char *const allow_fields[] = {
    "model.files", "model.arch", "model.revision", "model.gguf", "repetitions", "mode", "cache_dtype", "matmul",
    "dtype", "attention", "n_ctx", "max_tokens", "threads", "n_batch", "seed", "logprobs_top_k", "sampling.top_k", "sampling.top_p",
    "sampling.min_p", "determinism",
};
static const char allow_list[] = "model.files, model.arch, model.revision, model.gguf, repetitions, mode, "
                                 "cache_dtype, matmul, dtype, attention, n_ctx, max_tokens, threads, n_batch, seed, logprobs_top_k, "
                                 "sampling.top_k, sampling.top_p, sampling.min_p, determinism";

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

static void record(cJSON *rec, const char *field, const vt_doc *a, const char *va, const vt_doc *b, const char *vb)
{
    if (!rec)
        return;
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "field", field);
    cJSON *l = cJSON_AddObjectToObject(e, "left");
    cJSON_AddStringToObject(l, "file", a->path);
    cJSON_AddStringToObject(l, "value", va);
    if (b) {
        cJSON *r = cJSON_AddObjectToObject(e, "right");
        cJSON_AddStringToObject(r, "file", b->path);
        cJSON_AddStringToObject(r, "value", vb);
    } else {
        cJSON_AddItemToObject(e, "right", cJSON_CreateNull());
    }
    cJSON_AddItemToArray(rec, e);
}

static void record_values(cJSON *rec, const char *field, const vt_doc *a, const cJSON *va, const vt_doc *b,
                          const cJSON *vb)
{
    char ta[256], tb[256];
    jtext(va, ta, sizeof ta);
    jtext(vb, tb, sizeof tb);
    record(rec, field, a, ta, b, tb);
}

static const char *prompt_id(const vt_doc *d, int p)
{
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(jget(d->meta, "prompts"), p), "id");
    return cJSON_IsString(id) ? id->valuestring : "?";
}

#define REASON(file, ...) vt_reasons_add(out, rule->name, (file), __VA_ARGS__)

/* One field of both documents (path relative to each meta). A difference
 * is recorded if allowed under allow_name, else refused with why. Returns 1
 * if they differ. */
static int compare_field(const vt_nt_inputs *in, const vt_nt_rule *rule, const vt_doc *a, const vt_doc *b,
                         const char *path, const char *allow_name, const char *why, vt_reasons *out)
{
    const cJSON *va = jget(a->meta, path), *vb = jget(b->meta, path);
    if (jequal(va, vb))
        return 0;
    if (allow_name && allowed(in->o, allow_name)) {
        record_values(in->allowed, allow_name, a, va, b, vb);
        return 1;
    }
    char ta[200], tb[200], hint[80] = "";
    jtext(va, ta, sizeof ta);
    jtext(vb, tb, sizeof tb);
    if (allow_name)
        snprintf(hint, sizeof hint, " (or --allow-diff %s)", allow_name);
    REASON("", "%s: %s %s, %s %s: expected %s%s", path, a->path, ta, b->path, tb, why, hint);
    return 1;
}

/* ------------------------------------------------------ runtimes in depth */

static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* The objects' sha256 values, sorted (malloc'd; *n their count). */
static const char **object_digests(const vt_doc *d, int *n)
{
    const cJSON *objs = jget(d->meta, "runtime.objects");
    int k = cJSON_GetArraySize(objs), i = 0;
    const char **v = calloc((size_t)k + 1, sizeof *v);
    for (const cJSON *o = objs ? objs->child : NULL; v && o; o = o->next) {
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(o, "sha256");
        v[i++] = cJSON_IsString(s) ? s->valuestring : "";
    }
    if (v)
        vt_sort(v, (size_t)i, sizeof *v, cmp_str);
    *n = i;
    return v;
}

/* The path of the object whose sha256 is digest, for messages. */
static const char *object_path(const vt_doc *d, const char *digest)
{
    const cJSON *objs = jget(d->meta, "runtime.objects");
    for (const cJSON *o = objs ? objs->child : NULL; o; o = o->next) {
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(o, "sha256"), *p = cJSON_GetObjectItemCaseSensitive(o, "path");
        if (cJSON_IsString(s) && strcmp(s->valuestring, digest) == 0 && cJSON_IsString(p))
            return p->valuestring;
    }
    return "?";
}

int vt_nt_runtime_difference(const vt_doc *a, const vt_doc *b, char *why, size_t cap)
{
    why[0] = '\0';
    const vt_doc *ab[2] = { a, b };
    for (int i = 0; i < 2; i++)
        if (!cJSON_IsTrue(jget(ab[i]->meta, "runtime.resolved"))) {
            snprintf(why, cap, "%s: runtime.resolved: false: its runtime cannot be compared in depth", ab[i]->path);
            return 0;
        }
    static const char *const fields[] = { "runtime.runner.name", "runtime.runner.version", "runtime.runner.backend",
                                          "runtime.runner.device", "runtime.binary.sha256", "package.sha256" };
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        const cJSON *va = jget(a->meta, fields[i]), *vb = jget(b->meta, fields[i]);
        if (!va && strcmp(fields[i], "runtime.runner.device") == 0 && a->version < 2)
            va = jget(a->meta, "runtime.runner.backend"); /* /1 has no device: the backend says it */
        if (!vb && strcmp(fields[i], "runtime.runner.device") == 0 && b->version < 2)
            vb = jget(b->meta, "runtime.runner.backend");
        if (cJSON_IsNull(jget(a->meta, "package")) && strcmp(fields[i], "package.sha256") == 0)
            va = NULL;
        if (cJSON_IsNull(jget(b->meta, "package")) && strcmp(fields[i], "package.sha256") == 0)
            vb = NULL;
        if (!jequal(va, vb)) {
            char ta[200], tb[200];
            jtext(va, ta, sizeof ta);
            jtext(vb, tb, sizeof tb);
            snprintf(why, cap, "%s: %s %s, %s %s", fields[i], a->path, va ? ta : "none", b->path, vb ? tb : "none");
            return 1;
        }
    }
    /* A server's runtime is the server: vt cannot hash what it runs, so
     * its endpoint and what it said it serves (the served model and the
     * file /props names: the first clause of the openai runner's detail)
     * are its identity. Another server, or one serving another file, is
     * another computation even with the same program on both sides. */
    const cJSON *backend = jget(a->meta, "runtime.runner.backend");
    if (cJSON_IsString(backend) && strcmp(backend->valuestring, "server") == 0) {
        const cJSON *ua = jget(a->meta, "runtime.runner.library"), *ub = jget(b->meta, "runtime.runner.library");
        if (!jequal(ua, ub)) {
            char ta[200], tb[200];
            jtext(ua, ta, sizeof ta);
            jtext(ub, tb, sizeof tb);
            snprintf(why, cap, "runtime.runner.library: %s %s, %s %s: another server", a->path, ta, b->path, tb);
            return 1;
        }
        const cJSON *da = jget(a->meta, "runtime.runner.detail"), *db = jget(b->meta, "runtime.runner.detail");
        const char *sa = cJSON_IsString(da) ? da->valuestring : "", *sb = cJSON_IsString(db) ? db->valuestring : "";
        size_t la = strcspn(sa, ";"), lb = strcspn(sb, ";");
        if (la != lb || memcmp(sa, sb, la) != 0) {
            snprintf(why, cap, "runtime.runner.detail: %s '%.*s', %s '%.*s': the server serves another model", a->path,
                     (int)(la > 300 ? 300 : la), sa, b->path, (int)(lb > 300 ? 300 : lb), sb);
            return 1;
        }
    }
    /* The runner's library is one of the loaded objects: compared by its
     * bytes with them (its path may differ from one machine to another). */
    int na, nb;
    const char **da = object_digests(a, &na), **db = object_digests(b, &nb);
    int i = 0, k = 0, differ = 0;
    if (!da || !db) {
        snprintf(why, cap, "runtime.objects: out of memory");
        differ = 1;
    }
    while (!differ && (i < na || k < nb)) {
        int c = i == na ? 1 : k == nb ? -1 : strcmp(da[i], db[k]);
        if (c == 0) {
            i++, k++;
            continue;
        }
        const vt_doc *has = c < 0 ? a : b, *lacks = c < 0 ? b : a;
        const char *dig = c < 0 ? da[i] : db[k];
        snprintf(why, cap, "runtime.objects: %s loaded %s (sha256 %.16s...), %s has no object with its bytes",
                 has->path, object_path(has, dig), dig, lacks->path);
        differ = 1;
    }
    free(da);
    free(db);
    return differ;
}

/* The settings that shape the scores' numbers: the scorer must run the
 * oracle's configuration (dtype and attention: the transformers runner's,
 * absent from other runners' documents, and then equal). */
static const char *const scoring_config[] = { "mode", "cache_dtype", "matmul", "n_ctx", "dtype", "attention" };

/* Whether the scores are d's computation: the same runtime in depth and
 * the same scoring configuration; why gets the first difference. With
 * eager_ok, scores in eager mode of a production d are d's computation in
 * its eager shape (an oracle's noise shape, neartie.h). */
static int same_computation_as(const vt_doc *scores, const vt_doc *d, int eager_ok, char *why, size_t cap)
{
    int r = vt_nt_runtime_difference(d, scores, why, cap);
    if (r != 0 || why[0])
        return 0;
    for (int i = 0; i < (int)(sizeof scoring_config / sizeof scoring_config[0]); i++) {
        char path[64];
        snprintf(path, sizeof path, "settings.resolved.%s", scoring_config[i]);
        const cJSON *a = jget(d->meta, path), *b = jget(scores->meta, path);
        if (eager_ok && i == 0 && cJSON_IsString(a) && cJSON_IsString(b) &&
            strcmp(a->valuestring, "production") == 0 && strcmp(b->valuestring, "eager") == 0)
            continue;
        if (!jequal(a, b)) {
            char ta[64], tb[64];
            jtext(a, ta, sizeof ta);
            jtext(b, tb, sizeof tb);
            snprintf(why, cap, "%s: %s %s, %s %s", path, d->path, ta, scores->path, tb);
            return 0;
        }
    }
    return 1;
}

/* --------------------------------------------------------- pair rules */

static void check_distinct(const vt_nt_inputs *in, const vt_nt_rule *rule, vt_reasons *out)
{
    const vt_doc *L = in->local, *O = in->oracle;
    if (L->have_stat && O->have_stat && L->dev == O->dev && L->ino == O->ino) {
        REASON(L->path, "the oracle %s is the same file (device %llu, inode %llu): expected %s", O->path,
               (unsigned long long)L->dev, (unsigned long long)L->ino, rule->expects);
        return;
    }
    if (strcmp(L->seal.hex, O->seal.hex) == 0) {
        REASON(L->path, "seal %s: the oracle %s has the same seal (a copy of one capture): expected %s", L->seal.hex,
               O->path, rule->expects);
        return;
    }
    char why[600];
    if (vt_nt_runtime_difference(L, O, why, sizeof why) == 0 && !why[0] &&
        jequal(jget(L->meta, "settings.resolved"), jget(O->meta, "settings.resolved")))
        REASON(L->path, "the oracle %s has the same runtime in depth (runner %s, binary and every loaded object by "
               "sha256, package) and the same settings.resolved: expected %s: the same computation run twice agrees "
               "with itself by construction", O->path, jget(L->meta, "runtime.runner.name")->valuestring,
               rule->expects);
}

static void check_strict(const vt_nt_inputs *in, const vt_nt_rule *rule, vt_reasons *out)
{
    const vt_doc *docs[2] = { in->local, in->oracle };
    for (int i = 0; i < 2; i++) {
        vt_reasons r = { 0 };
        vt_strict_check(docs[i], &r);
        for (int k = 0; k < r.n; k++) {
            /* Failed runs and differing repeats are refused by their own rules here. */
            if (strcmp(r.v[k].rule, "runs") == 0 || strcmp(r.v[k].rule, "determinism") == 0)
                continue;
            if (in->o->allow_unverified) {
                if (in->unverified)
                    vt_reasons_add(in->unverified, r.v[k].rule, r.v[k].file, "%s", r.v[k].text);
            } else {
                REASON(docs[i]->path, "strict rule %s: %s (or --allow-unverified: then the report says it is not "
                       "strict evidence)", r.v[k].rule, r.v[k].text);
            }
        }
        if (r.oom)
            out->oom = 1;
        vt_reasons_free(&r);
    }
}

static void runs_of(const vt_doc *d, const vt_nt_rule *rule, vt_reasons *out)
{
    if (d->error_run.run >= 0)
        REASON(d->path, "runs[%d] (prompt %d '%s', repeat %d): status error (%s): expected every run ok",
               d->error_run.run, d->error_run.prompt, prompt_id(d, d->error_run.prompt), d->error_run.repeat,
               d->error_run.what);
    if (d->error_after.run >= 0)
        REASON(d->path, "runs[%d] (prompt %d '%s', repeat %d): status ok with an error recorded after generation (%s): "
               "expected none", d->error_after.run, d->error_after.prompt, prompt_id(d, d->error_after.prompt),
               d->error_after.repeat, d->error_after.what);
}

static void check_runs(const vt_nt_inputs *in, const vt_nt_rule *rule, vt_reasons *out)
{
    runs_of(in->local, rule, out);
    runs_of(in->oracle, rule, out);
}

static void determinism_of(const vt_nt_inputs *in, const vt_doc *d, const vt_nt_rule *rule, vt_reasons *out)
{
    const vt_doc_note *x = &d->differs;
    if (x->run < 0)
        return;
    if (allowed(in->o, "determinism")) {
        char what[480];
        snprintf(what, sizeof what, "runs[%d] (prompt %d, repeat %d) differs from repeat 0 in %s at position %d",
                 x->run, x->prompt, x->repeat, x->what, x->position);
        record(in->allowed, "determinism", d, what, NULL, NULL);
        return;
    }
    REASON(d->path, "runs[%d] (prompt %d '%s', repeat %d): differs from repeat 0 in %s at position %d: expected "
           "identical repeats (repeat 0 is the stream compared; or --allow-diff determinism)", x->run, x->prompt,
           prompt_id(d, x->prompt), x->repeat, x->what, x->position);
}

static void check_determinism(const vt_nt_inputs *in, const vt_nt_rule *rule, vt_reasons *out)
{
    determinism_of(in, in->local, rule, out);
    determinism_of(in, in->oracle, rule, out);
}

static void prompts_of(const vt_doc *a, const vt_doc *b, const vt_nt_rule *rule, vt_reasons *out)
{
    const cJSON *pa = jget(a->meta, "prompts"), *pb = jget(b->meta, "prompts");
    int na = cJSON_GetArraySize(pa), nb = cJSON_GetArraySize(pb);
    if (na != nb) {
        REASON("", "prompts: %s has %d, %s %d: expected the same prompt set", a->path, na, b->path, nb);
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
            REASON("", "prompts[%d].%s: %s '%s', %s '%s': expected the same prompt set", i, keys[k], a->path, tu,
                   b->path, tv);
            return; /* the first difference says it */
        }
    }
}

static void check_prompts(const vt_nt_inputs *in, const vt_nt_rule *rule, vt_reasons *out)
{
    prompts_of(in->local, in->oracle, rule, out);
}

/* model.files by content (size, sha256): a renamed file is the same file.
 * allow_name NULL: never allowed. */
static void model_files(const vt_nt_inputs *in, const vt_nt_rule *rule, const vt_doc *a, const vt_doc *b,
                        const char *why, const char *allow_name, vt_reasons *out)
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
    if (allow_name && allowed(in->o, allow_name)) {
        record_values(in->allowed, allow_name, a, fa, b, fb);
        return;
    }
    char hint[64] = "";
    if (allow_name)
        snprintf(hint, sizeof hint, " (or --allow-diff %s)", allow_name);
    if (i < n && i < cJSON_GetArraySize(fb)) {
        char ta[100], tb[100];
        jtext(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(fa, i), key), ta, sizeof ta);
        jtext(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(fb, i), key), tb, sizeof tb);
        REASON("", "model.files[%d].%s: %s %s, %s %s: expected %s%s", i, key, a->path, ta, b->path, tb, why, hint);
    } else {
        REASON("", "model.files: %s lists %d files, %s %d: expected %s%s", a->path, n, b->path,
               cJSON_GetArraySize(fb), why, hint);
    }
}

static void check_model(const vt_nt_inputs *in, const vt_nt_rule *rule, vt_reasons *out)
{
    const vt_doc *L = in->local, *O = in->oracle;
    model_files(in, rule, L, O, "the same model file", "model.files", out);
    compare_field(in, rule, L, O, "model.arch", "model.arch", "the same architecture", out);
    compare_field(in, rule, L, O, "model.revision", "model.revision", "the same model revision", out);
    /* The rest of model.gguf, member by member, under one allow name; the
     * vocabulary has its own rule. */
    const cJSON *ga = jget(L->meta, "model.gguf");
    for (const cJSON *m = ga ? ga->child : NULL; m; m = m->next) {
        if (strcmp(m->string, "n_vocab") == 0 || strcmp(m->string, "tokenizer_pre") == 0 ||
            strcmp(m->string, "vocab_sha256") == 0)
            continue;
        char path[96];
        snprintf(path, sizeof path, "model.gguf.%s", m->string);
        if (compare_field(in, rule, L, O, path, "model.gguf", "the same model", out))
            return; /* one line for the summary */
    }
}

static void vocabulary_of(const vt_nt_inputs *in, const vt_nt_rule *rule, const vt_doc *a, const vt_doc *b,
                          vt_reasons *out)
{
    static const char why[] = "the same vocabulary: token ids must mean the same in both (cannot be allowed)";
    compare_field(in, rule, a, b, "model.gguf.n_vocab", NULL, why, out);
    compare_field(in, rule, a, b, "model.gguf.tokenizer_pre", NULL, why, out);
    const vt_doc *ab[2] = { a, b };
    int missing = 0;
    for (int i = 0; i < 2; i++)
        if (!jget(ab[i]->meta, "model.gguf.vocab_sha256")) {
            missing = 1;
            if (!in->o->allow_unverified)
                REASON(ab[i]->path, "model.gguf.vocab_sha256: missing (a %s): expected the vocabulary's sha256 (token "
                       "list, token types, merges) to compare (or --allow-unverified: compared by n_vocab and "
                       "tokenizer_pre only)", jget(ab[i]->meta, "schema")->valuestring);
            else if (in->unverified)
                vt_reasons_add(in->unverified, rule->name, ab[i]->path, "model.gguf.vocab_sha256: missing: the "
                               "vocabulary compared by n_vocab and tokenizer_pre only");
        }
    if (!missing)
        compare_field(in, rule, a, b, "model.gguf.vocab_sha256", NULL, why, out);
}

static void check_vocabulary(const vt_nt_inputs *in, const vt_nt_rule *rule, vt_reasons *out)
{
    vocabulary_of(in, rule, in->local, in->oracle, out);
}

static void check_greedy(const vt_nt_inputs *in, const vt_nt_rule *rule, vt_reasons *out)
{
    const vt_doc *docs[2] = { in->local, in->oracle };
    for (int i = 0; i < 2; i++) {
        const cJSON *t = jget(docs[i]->meta, "settings.resolved.sampling.temperature");
        if (t && t->valuedouble != 0.0) {
            char v[64];
            jtext(t, v, sizeof v);
            REASON(docs[i]->path, "settings.resolved.sampling.temperature: %s: expected 0 (greedy): the near-tie rule "
                   "compares greedy streams", v);
        }
    }
}

/* settings.resolved fields, each under its allow name. */
static void settings_of(const vt_nt_inputs *in, const vt_nt_rule *rule, const char *const *fields, int n,
                        const char *why, vt_reasons *out)
{
    for (int i = 0; i < n; i++) {
        char path[96];
        snprintf(path, sizeof path, "settings.resolved.%s", fields[i]);
        compare_field(in, rule, in->local, in->oracle, path, fields[i], why, out);
    }
}

static void check_repeats(const vt_nt_inputs *in, const vt_nt_rule *rule, vt_reasons *out)
{
    static const char *const f[] = { "repetitions" };
    settings_of(in, rule, f, 1, "equal repeat counts", out);
}

static const char *const compute_fields[] = { "mode", "cache_dtype", "matmul" };

static void check_compute(const vt_nt_inputs *in, const vt_nt_rule *rule, vt_reasons *out)
{
    static const char *const why[] = { "equal: the comparison declares one execution mode",
                                       "equal: the comparison declares one cache dtype",
                                       "equal: the comparison declares one compute path (matmul activations)" };
    for (int i = 0; i < 3; i++)
        settings_of(in, rule, &compute_fields[i], 1, why[i], out);
    /* --mode / --cache-dtype / --matmul: each capture's resolved value. */
    const char *opts[] = { "--mode", "--cache-dtype", "--matmul" };
    const char *want[] = { in->o->mode, in->o->cache_dtype, in->o->matmul };
    const vt_doc *docs[2] = { in->local, in->oracle };
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < 3; i++) {
            if (!want[i])
                continue;
            char path[64];
            snprintf(path, sizeof path, "settings.resolved.%s", compute_fields[i]);
            const cJSON *v = jget(docs[k]->meta, path);
            if (!cJSON_IsString(v) || strcmp(v->valuestring, want[i]) != 0)
                REASON(docs[k]->path, "%s: %s: expected %s, as %s declares", path,
                       cJSON_IsString(v) ? v->valuestring : "(missing)", want[i], opts[i]);
        }
}

static const char *const capacity_fields[] = { "n_ctx", "max_tokens" };
/* dtype and attention: the transformers runner's (a capture of another
 * runner has neither, which differs from any value it has). */
static const char *const other_fields[] = { "threads", "n_batch", "seed", "logprobs_top_k", "sampling.top_k",
                                            "sampling.top_p", "sampling.min_p", "dtype", "attention" };

static void check_capacity(const vt_nt_inputs *in, const vt_nt_rule *rule, vt_reasons *out)
{
    settings_of(in, rule, capacity_fields, 2, "equal capacity", out);
}

static void check_settings(const vt_nt_inputs *in, const vt_nt_rule *rule, vt_reasons *out)
{
    settings_of(in, rule, other_fields, 9, "equal settings", out);
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
                if (strcmp(k->string, "n_vocab") != 0 && strcmp(k->string, "tokenizer_pre") != 0 &&
                    strcmp(k->string, "vocab_sha256") != 0)
                    cJSON_DeleteItemFromObjectCaseSensitive(g, k->string);
            }
        }
    }
    /* model.files by content only. */
    cJSON *files = cJSON_GetObjectItemCaseSensitive(m, "files");
    for (cJSON *f = files ? files->child : NULL; f; f = f->next)
        cJSON_DeleteItemFromObjectCaseSensitive(f, "name");
    /* A /1 capture's gguf has no vocab_sha256: the vocabulary rule said what
     * that means; the workload compares what both record. */
    cJSON *g = cJSON_GetObjectItemCaseSensitive(m, "gguf");
    if (d->version < 2 || (o->allow_unverified && g))
        cJSON_DeleteItemFromObjectCaseSensitive(g, "vocab_sha256");
    static const char *const *groups[] = { compute_fields, capacity_fields, other_fields };
    static const int sizes[] = { 3, 2, 9 };
    for (int gi = 0; gi < 3; gi++)
        for (int i = 0; i < sizes[gi]; i++) {
            const char *f = groups[gi][i];
            if (!allowed(o, f))
                continue;
            if (strncmp(f, "sampling.", 9) == 0)
                cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItemCaseSensitive(s, "sampling"), f + 9);
            else
                cJSON_DeleteItemFromObjectCaseSensitive(s, f);
        }
    if (allowed(o, "repetitions"))
        cJSON_DeleteItemFromObjectCaseSensitive(s, "repetitions");
    return w;
}

static void check_workload(const vt_nt_inputs *in, const vt_nt_rule *rule, vt_reasons *out)
{
    const vt_doc *a = in->local, *b = in->oracle;
    if (out->n > in->stage_start || strcmp(a->workload_seal.hex, b->workload_seal.hex) == 0)
        return; /* said above, or the same */
    cJSON *wa = workload_for_comparison(a, in->o), *wb = workload_for_comparison(b, in->o);
    char path[256] = "";
    int same = wa && wb && !first_difference(wa, wb, path, sizeof path) && !first_difference(wb, wa, path, sizeof path);
    cJSON_Delete(wa);
    cJSON_Delete(wb);
    if (!same) /* else they differ only where differences are allowed */
        REASON("", "workload_seal: %s %s, %s %s: expected the same workload (model, prompts, settings.resolved); they "
               "differ in %s", a->path, a->workload_seal.hex, b->path, b->workload_seal.hex,
               path[0] ? path : "(unknown)");
}

/* ------------------------------------------------------- scores rules */

static void check_scores_runs(const vt_nt_inputs *in, const vt_nt_rule *rule, vt_reasons *out)
{
    runs_of(in->scores, rule, out);
}

static void check_binding(const vt_nt_inputs *in, const vt_nt_rule *rule, vt_reasons *out)
{
    const vt_doc *L = in->local, *S = in->scores;
    const cJSON *lseal = jget(S->meta, "local.seal"), *lws = jget(S->meta, "local.workload_seal");
    if (!cJSON_IsString(lseal) || strcmp(lseal->valuestring, L->seal.hex) != 0)
        REASON(S->path, "local.seal: %s: expected %s, the seal of %s: the prefix scores are not bound to this local "
               "capture", cJSON_IsString(lseal) ? lseal->valuestring : "(missing)", L->seal.hex, L->path);
    else if (!cJSON_IsString(lws) || strcmp(lws->valuestring, L->workload_seal.hex) != 0)
        REASON(S->path, "local.workload_seal: %s: expected %s, the workload seal of %s",
               cJSON_IsString(lws) ? lws->valuestring : "(missing)", L->workload_seal.hex, L->path);
    int n_before = out->n;
    prompts_of(L, S, rule, out);
    if (out->n != n_before || S->n_prompts != L->n_prompts || L->error_run.run >= 0 || S->error_run.run >= 0)
        return; /* said above or by the runs rules */
    for (int p = 0; p < S->n_prompts; p++) {
        int32_t n = S->n[p] < L->n[p] ? S->n[p] : L->n[p], i = 0;
        const int32_t *a = L->tokens + L->off[p], *b = S->tokens + S->off[p];
        while (i < n && a[i] == b[i])
            i++;
        if (i < n || S->n[p] != L->n[p]) {
            REASON(S->path, "runs (prompt %d '%s'): the scored tokens differ from %s's repeat 0 at position %d: "
                   "expected that stream", p, prompt_id(S, p), L->path, i);
            return;
        }
    }
}

static void check_scorer(const vt_nt_inputs *in, const vt_nt_rule *rule, vt_reasons *out)
{
    const vt_doc *O = in->oracle, *S = in->scores;
    model_files(in, rule, O, S, "the oracle's model: the prefix scores must be the oracle's computation", NULL, out);
    vocabulary_of(in, rule, O, S, out);
    char why[700];
    if (!same_computation_as(S, O, in->noise_shape, why, sizeof why))
        REASON(S->path, "%s: expected %s", why, rule->expects);
}

static void check_scorer_local(const vt_nt_inputs *in, const vt_nt_rule *rule, vt_reasons *out)
{
    char why[700];
    if (same_computation_as(in->scores, in->local, in->noise_shape, why, sizeof why))
        REASON(in->scores->path, "scored by the local capture %s's own runtime and configuration: expected %s: such "
               "gaps are zero by construction", in->local->path, rule->expects);
}

static void check_scores_determinism(const vt_nt_inputs *in, const vt_nt_rule *rule, vt_reasons *out)
{
    determinism_of(in, in->scores, rule, out);
}

/* ---------------------------------------------------------- the table */

const vt_nt_rule vt_nt_rules[] = {
    { "distinct", VT_NT_PAIR, "two different pieces of evidence (not one file, one seal or one computation twice)",
      check_distinct },
    { "strict", VT_NT_PAIR, "both captures strict evidence (capture/strict.h)", check_strict },
    { "runs", VT_NT_PAIR, "every run ok", check_runs },
    { "determinism", VT_NT_PAIR, "identical repeats", check_determinism },
    { "prompts", VT_NT_PAIR, "the same prompt set", check_prompts },
    { "model", VT_NT_PAIR, "the same model", check_model },
    { "vocabulary", VT_NT_PAIR, "the same vocabulary (n_vocab, pre-tokenizer, vocab_sha256)", check_vocabulary },
    { "greedy", VT_NT_PAIR, "greedy sampling", check_greedy },
    { "repeats", VT_NT_PAIR, "equal repeat counts", check_repeats },
    { "compute", VT_NT_PAIR, "one mode, cache dtype and matmul path, as declared", check_compute },
    { "capacity", VT_NT_PAIR, "equal n_ctx and max_tokens", check_capacity },
    { "settings", VT_NT_PAIR, "equal other settings", check_settings },
    { "workload", VT_NT_PAIR, "the same workload seal, allowed fields aside", check_workload },
    { "scores-runs", VT_NT_SCORES, "every scoring run ok", check_scores_runs },
    { "binding", VT_NT_SCORES, "the prefix scores bound to the local capture and its streams", check_binding },
    { "scorer", VT_NT_SCORES, "the oracle's computation: its runtime in depth and its configuration",
      check_scorer },
    { "scorer-local", VT_NT_SCORES, "a scorer that is not the local capture's computation", check_scorer_local },
    { "scores-determinism", VT_NT_SCORES, "identical scoring repeats", check_scores_determinism },
};
const int vt_nt_n_rules = (int)(sizeof vt_nt_rules / sizeof vt_nt_rules[0]);

void vt_nt_guard_stage(const vt_nt_inputs *in, vt_nt_stage stage, vt_reasons *out)
{
    vt_nt_inputs x = *in;
    x.stage_start = out->n;
    for (int i = 0; i < vt_nt_n_rules; i++)
        if (vt_nt_rules[i].stage == stage)
            vt_nt_rules[i].check(&x, &vt_nt_rules[i], out);
}
