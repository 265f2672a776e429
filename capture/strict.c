/* The strict gate's table of rules (strict.h). */
#include "strict.h"

#include "capture.h"

#include "../engine/runner.h"

#include <stdio.h>
#include <string.h>

static const cJSON *get(const cJSON *root, const char *a, const char *b)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, a);
    return b ? cJSON_GetObjectItemCaseSensitive(v, b) : v;
}

static const char *prompt_id(const vt_doc *d, int p)
{
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(get(d->meta, "prompts", NULL), p), "id");
    return cJSON_IsString(id) ? id->valuestring : "?";
}

#define REASON(...) vt_reasons_add(out, rule->name, d->path, __VA_ARGS__)

static void check_format(const vt_doc *d, const vt_strict_rule *rule, vt_reasons *out)
{
    if (d->version < 2)
        REASON("schema: %s: expected %s", get(d->meta, "schema", NULL)->valuestring, rule->expects);
}

static void check_repeats(const vt_doc *d, const vt_strict_rule *rule, vt_reasons *out)
{
    if (d->repeats < VT_CAPTURE_STRICT_REPEATS)
        REASON("settings.resolved.repetitions: %d: expected %s", d->repeats, rule->expects);
}

static void check_runs(const vt_doc *d, const vt_strict_rule *rule, vt_reasons *out)
{
    const vt_doc_note *e = &d->error_run, *a = &d->error_after;
    if (e->run >= 0)
        REASON("runs[%d] (prompt %d '%s', repeat %d): status error (%s): expected %s", e->run, e->prompt,
               prompt_id(d, e->prompt), e->repeat, e->what, rule->expects);
    if (a->run >= 0)
        REASON("runs[%d] (prompt %d '%s', repeat %d): status ok with an error recorded (%s): expected %s", a->run,
               a->prompt, prompt_id(d, a->prompt), a->repeat, a->what, rule->expects);
}

static void check_determinism(const vt_doc *d, const vt_strict_rule *rule, vt_reasons *out)
{
    const vt_doc_note *x = &d->differs;
    if (x->run >= 0)
        REASON("runs[%d] (prompt %d '%s', repeat %d): differs from repeat 0 in %s at position %d: expected %s", x->run,
               x->prompt, prompt_id(d, x->prompt), x->repeat, x->what, x->position, rule->expects);
}

static void check_positions(const vt_doc *d, const vt_strict_rule *rule, vt_reasons *out)
{
    const cJSON *mt = get(get(d->meta, "settings", "resolved"), "max_tokens", NULL);
    if (cJSON_IsNumber(mt) && mt->valuedouble < 1) {
        REASON("settings.resolved.max_tokens: %g: expected %s", mt->valuedouble, rule->expects);
        return;
    }
    for (int32_t p = 0; p < d->n_prompts; p++)
        if (d->n[p] == 0 && d->error_run.run < 0) { /* a failed run says it under runs */
            REASON("runs (prompt %d '%s'): 0 positions: expected %s", p, prompt_id(d, p), rule->expects);
            return;
        }
}

static void check_model(const vt_doc *d, const vt_strict_rule *rule, vt_reasons *out)
{
    const cJSON *m = get(d->meta, "model", NULL);
    const cJSON *problems = get(m, "problems", NULL);
    int n = 0;
    for (const cJSON *p = problems ? problems->child : NULL; p; p = p->next, n++)
        REASON("model.problems[%d]: %s: expected %s", n, p->valuestring, rule->expects);
    if (n == 0 && cJSON_IsNull(get(m, "manifest", NULL)))
        REASON("model.manifest: null: expected %s", rule->expects);
    else if (n == 0 && !cJSON_IsTrue(get(m, "verified", NULL)))
        REASON("model.verified: false: expected %s", rule->expects);
}

static void check_runtime(const vt_doc *d, const vt_strict_rule *rule, vt_reasons *out)
{
    const cJSON *rt = get(d->meta, "runtime", NULL);
    if (!cJSON_IsTrue(get(rt, "resolved", NULL))) {
        const cJSON *why = get(rt, "unresolved", NULL);
        REASON("runtime.resolved: false (%s): expected %s", cJSON_IsString(why) ? why->valuestring : "?",
               rule->expects);
    }
}

/* A server's answers are its word: vt sees neither the model file it
 * loaded nor the code that ran (oracle/openai_runner.c). */
static void check_observed(const vt_doc *d, const vt_strict_rule *rule, vt_reasons *out)
{
    const cJSON *name = get(get(d->meta, "runtime", "runner"), "name", NULL);
    if (cJSON_IsString(name) && strcmp(name->valuestring, "openai") == 0)
        REASON("runtime.runner.name: openai: the model file and the code that ran are the server's word "
               "(attested), not observed: expected %s", rule->expects);
}

static void value_text(const cJSON *v, char *buf, size_t cap)
{
    if (cJSON_IsString(v))
        snprintf(buf, cap, "%s", v->valuestring);
    else if (cJSON_IsNumber(v))
        snprintf(buf, cap, "%.17g", v->valuedouble);
    else
        snprintf(buf, cap, "?");
}

static void check_settings(const vt_doc *d, const vt_strict_rule *rule, vt_reasons *out)
{
    const cJSON *diffs = get(get(d->meta, "settings", NULL), "differences", NULL);
    for (const cJSON *x = diffs ? diffs->child : NULL; x; x = x->next) {
        if (cJSON_IsTrue(get(x, "allowed", NULL)))
            continue;
        char rq[64], rs[64];
        const char *field = get(x, "field", NULL)->valuestring;
        value_text(get(x, "requested", NULL), rq, sizeof rq);
        value_text(get(x, "resolved", NULL), rs, sizeof rs);
        REASON("settings.resolved.%s: %s: expected the requested %s (%s, or --allow-setting-difference %s)", field,
               rs, rq, rule->expects, field);
    }
}

static void check_package(const vt_doc *d, const vt_strict_rule *rule, vt_reasons *out)
{
    const cJSON *pkg = get(d->meta, "package", NULL);
    const cJSON *name = get(get(d->meta, "runtime", "runner"), "name", NULL);
    const vt_runner_ops *ops = cJSON_IsString(name) ? vt_runner_find(name->valuestring) : NULL;
    if (cJSON_IsNull(pkg)) {
        if (ops && ops->code_from_package)
            REASON("package: null: expected %s: the %s runner's code comes from a package (--package)", rule->expects,
                   ops->name);
        return;
    }
    const cJSON *problems = get(pkg, "problems", NULL);
    int n = 0;
    for (const cJSON *p = problems ? problems->child : NULL; p; p = p->next, n++)
        REASON("package.problems[%d]: %s: expected %s", n, p->valuestring, rule->expects);
    if (n == 0 && !cJSON_IsTrue(get(pkg, "verified", NULL)))
        REASON("package.verified: false: expected %s", rule->expects);
    if (n == 0 && cJSON_GetArraySize(get(pkg, "loaded", NULL)) == 0)
        REASON("package.loaded: []: expected %s: no library the runtime loaded is a member", rule->expects);
}

static int nonempty(const cJSON *v) { return cJSON_IsString(v) && v->valuestring[0]; }

int vt_launcher_manifest_check(const cJSON *m, char *why, size_t cap)
{
    static const char want[] = "the launcher manifest's fields: launcher (what started the run), host or image "
                               "(where it ran), command (what it ran: a string or an array of strings)";
    if (!cJSON_IsObject(m)) {
        snprintf(why, cap, "launcher.manifest: not an object: expected %s", want);
        return 0;
    }
    const cJSON *l = get(m, "launcher", NULL), *h = get(m, "host", NULL), *i = get(m, "image", NULL);
    const cJSON *c = get(m, "command", NULL);
    int cmd_ok = nonempty(c);
    for (const cJSON *a = cJSON_IsArray(c) ? c->child : NULL; a; a = a->next)
        cmd_ok = a == c->child ? nonempty(a) : cmd_ok && nonempty(a);
    const char *field = NULL;
    const cJSON *v = NULL;
    if (!nonempty(l))
        field = "launcher", v = l;
    else if ((h && !nonempty(h)) || (!h && !i))
        field = "host", v = h;
    else if (i && !nonempty(i))
        field = "image", v = i;
    else if (!cmd_ok)
        field = "command", v = c;
    if (!field)
        return 1;
    snprintf(why, cap, "launcher.manifest.%s: %s: expected %s", field,
             !v ? "missing" : cJSON_IsString(v) ? "empty" : cJSON_IsArray(v) ? "not an array of non-empty strings"
                                                                            : "not a string", want);
    return 0;
}

static void check_launcher(const vt_doc *d, const vt_strict_rule *rule, vt_reasons *out)
{
    const cJSON *l = get(d->meta, "launcher", NULL);
    char why[600];
    if (cJSON_IsNull(l))
        REASON("launcher: null: expected %s (--launcher-manifest)", rule->expects);
    else if (!vt_launcher_manifest_check(get(l, "manifest", NULL), why, sizeof why))
        REASON("%s", why);
}

const vt_strict_rule vt_strict_rules[] = {
    { "format", "the current schema (vt.capture/2, vt.prefix-scores/2, /3 or /4), which records the vocabulary's sha256, the "
                "model's problems and the runner's device", check_format },
    { "repeats", "at least 10 repeats", check_repeats },
    { "runs", "every run ok", check_runs },
    { "determinism", "every repeat identical to its repeat 0 in tokens and logits", check_determinism },
    { "positions", "at least one position per prompt", check_positions },
    { "model", "a model manifest that every model file matches", check_model },
    { "runtime", "every field of the runtime identity resolved", check_runtime },
    { "observed", "a runner whose model and code vt observes, not a server's word", check_observed },
    { "settings", "resolved settings equal to the requested ones", check_settings },
    { "package", "the package verified and bound to what ran", check_package },
    { "launcher", "a launcher manifest", check_launcher },
};
const int vt_strict_n_rules = (int)(sizeof vt_strict_rules / sizeof vt_strict_rules[0]);

void vt_strict_check(const vt_doc *d, vt_reasons *out)
{
    for (int i = 0; i < vt_strict_n_rules; i++)
        vt_strict_rules[i].check(d, &vt_strict_rules[i], out);
}
