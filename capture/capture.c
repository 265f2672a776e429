/* vt-capture's library: the inputs, the order of the work, the strict gate
 * on the finished document, publication. Running the repeats is
 * capture_run.c, the document capture_doc.c, the gate strict.c; the
 * document layout and conventions are in capture.h. */
#include "capture_internal.h"

#include "canonical_json.h"
#include "strict.h"

#include "../common/vt_input.h"
#include "../common/vt_json.h"
#include "../engine/gguf_file.h"
#include "../engine/tokenizer.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef VT_SOURCE_DIR
#define VT_SOURCE_DIR "."
#endif

/* ---------------------------------------------------------------- helpers */

/* Path of directory "to" relative to directory "from" (both absolute and
 * canonical): "" for the same directory, else e.g. "../data" (no trailing
 * slash). malloc'd. */
static char *relative_dir(const char *from, const char *to)
{
    /* The longest common prefix ending at a component boundary. */
    size_t common = 0, i = 0;
    for (; from[i] && from[i] == to[i]; i++)
        if (from[i] == '/')
            common = i;
    if ((!from[i] || from[i] == '/') && (!to[i] || to[i] == '/'))
        common = i;
    int up = 0;
    for (const char *p = from + common; *p; p++)
        if (*p == '/' && p[1] && p[1] != '/')
            up++;
    const char *rest = to + common;
    while (*rest == '/')
        rest++;
    char *s = malloc((size_t)up * 3 + strlen(rest) + 1);
    if (!s)
        return NULL;
    s[0] = '\0';
    for (int k = 0; k < up; k++)
        strcat(s, k ? "/.." : "..");
    if (*rest) {
        if (up)
            strcat(s, "/");
        strcat(s, rest);
    }
    return s;
}

/* A side file's name relative to the capture's directory, and the side
 * file's directory (resolved), where its temporary data goes. */
static int side_name_of(const char *out, const char *side, char **name, char **dir, vt_error *err)
{
    char *d1 = vt_capture_dir_name(out), *d2 = vt_capture_dir_name(side);
    char *r1 = d1 ? realpath(d1, NULL) : NULL, *r2 = d2 ? realpath(d2, NULL) : NULL;
    int rc = VT_OK;
    if (!r1 || !r2) {
        rc = vt_error_set(err, VT_EINPUT, "%s: directory cannot be resolved: expected an existing directory",
                          !r1 ? out : side);
    } else {
        char *rel = relative_dir(r1, r2);
        if (rel && *rel) {
            /* A capture names its side files by plain file name, beside it
             * (issue 19: the reader takes nothing else). */
            rc = vt_error_set(err, VT_EINPUT, "%s: in %s, not in the capture's directory %s: expected a side file "
                              "beside --out (a capture names its side files by plain file name)", side, r2, r1);
            free(rel);
            rel = NULL;
        }
        size_t n = rel ? strlen(rel) + strlen(vt_capture_base_name(side)) + 2 : 0;
        *name = rel ? malloc(n) : NULL;
        if (rc) {
            free(d1);
            free(d2);
            free(r1);
            free(r2);
            return rc;
        }
        if (*name)
            snprintf(*name, n, "%s%s%s", rel, *rel ? "/" : "", vt_capture_base_name(side));
        free(rel);
        *dir = r2;
        r2 = NULL;
        if (!*name)
            rc = vt_error_set(err, VT_EINPUT, "capture: out of memory");
    }
    free(d1);
    free(d2);
    free(r1);
    free(r2);
    return rc;
}

/* A directory option: a directory (common/vt_input.h), else exit 2. */
static int check_dir(const char *opt, const char *path, vt_error *err)
{
    int fd;
    vt_error e;
    if (vt_input_opendir(path, NULL, &fd, &e))
        return vt_error_set(err, VT_EINPUT, "%s %s", opt, e.msg);
    close(fd);
    return VT_OK;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* ------------------------------------------------------------- options */

void vt_capture_opts_default(vt_capture_opts *o)
{
    memset(o, 0, sizeof *o);
    vt_runner_settings_default(&o->settings);
    o->settings.n_threads = 0;
    o->settings.n_ctx = 0;
    o->settings.n_batch = 0;
    o->repetitions = 1;
    o->max_tokens = 16;
    o->top_k = 20;
    o->created_utc = -1;
}

/* Settings fields, as named in settings.differences and by allow lists. */
static const char *const setting_fields[] = { "mode", "cache_dtype", "matmul", "dtype", "attention", "threads",
                                              "n_ctx", "n_batch",
                                              "seed", "repetitions", "max_tokens", "logprobs_top_k",
                                              "sampling.temperature", "sampling.top_k", "sampling.top_p",
                                              "sampling.min_p" };

/* ---------------------------------------------------------------- inputs */

/* Prefix mode: LOCAL (read here, or as the caller read it) gives the
 * prompts and the streams to score: each prompt's repeat 0. */
static int local_streams(vt_capture *c, int32_t n_vocab, vt_error *err)
{
    const char *path = c->o.score_prefix_of;
    if (c->o.score_prefix_doc) {
        c->local = c->o.score_prefix_doc;
    } else {
        vt_doc_source src = { .path = path, .kind = VT_DOC_CAPTURE };
        int rc = vt_doc_read(&src, &c->local_own, err);
        if (rc)
            return rc;
        c->local = &c->local_own;
    }
    const vt_doc *L = c->local;
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(L->meta, "model");
    const cJSON *files = cJSON_GetObjectItemCaseSensitive(model, "files");
    const cJSON *sha = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(files, 0), "sha256");
    const cJSON *nv = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(model, "gguf"), "n_vocab");
    if (cJSON_GetArraySize(files) != 1 || !cJSON_IsString(sha))
        return vt_error_set(err, VT_EINPUT, "%s: field model.files: expected one file with its sha256", path);
    if (strcmp(sha->valuestring, c->model_sha.hex) != 0)
        return vt_error_set(err, VT_EINPUT, "%s: field model.files[0].sha256: %.64s: expected %s, the --model file's",
                            path, sha->valuestring, c->model_sha.hex);
    if (nv->valuedouble != n_vocab)
        return vt_error_set(err, VT_EINPUT, "%s: field model.gguf.n_vocab: %g: expected %d, the --model file's", path,
                            nv->valuedouble, n_vocab);
    if (L->error_run.run >= 0 && L->error_run.repeat == 0)
        return vt_error_set(err, VT_EINPUT, "%s: field runs[%d].status: prompt %d repeat 0 failed: expected ok (its "
                            "tokens are the stream to score)", path, L->error_run.run, L->error_run.prompt);
    const int P = L->n_prompts;
    c->prompts.items = calloc((size_t)P, sizeof *c->prompts.items);
    c->cont = calloc((size_t)P, sizeof *c->cont);
    c->n_cont = calloc((size_t)P, sizeof *c->n_cont);
    if (!c->prompts.items || !c->cont || !c->n_cont)
        return vt_error_set(err, VT_EINPUT, "%s: out of memory", path);
    c->n_streams = P;
    c->prompts.file_sha256 = L->file_sha256;
    int p = 0;
    for (const cJSON *pr = cJSON_GetObjectItemCaseSensitive(L->meta, "prompts")->child; pr && p < P; pr = pr->next, p++) {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(pr, "id");
        const cJSON *tx = cJSON_GetObjectItemCaseSensitive(pr, "text");
        const cJSON *tk = cJSON_GetObjectItemCaseSensitive(pr, "tokens");
        vt_prompt *q = &c->prompts.items[p];
        c->prompts.n = p + 1;
        int n = cJSON_GetArraySize(tk);
        q->id = strdup(id->valuestring);
        q->text = cJSON_IsString(tx) ? strdup(tx->valuestring) : NULL;
        q->tokens = malloc((size_t)(n ? n : 1) * sizeof *q->tokens);
        c->cont[p] = malloc((size_t)(L->n[p] ? L->n[p] : 1) * sizeof **c->cont);
        if (!q->id || (cJSON_IsString(tx) && !q->text) || !q->tokens || !c->cont[p])
            return vt_error_set(err, VT_EINPUT, "%s: out of memory", path);
        int k = 0;
        for (const cJSON *t = tk->child; t; t = t->next)
            q->tokens[k++] = (int32_t)t->valuedouble;
        q->n_tokens = n;
        memcpy(c->cont[p], L->tokens + L->off[p], (size_t)L->n[p] * sizeof **c->cont);
        c->n_cont[p] = L->n[p];
        if (n < 1)
            return vt_error_set(err, VT_EINPUT, "%s: field prompts[%d].tokens: empty: expected a prompt to score "
                                "after", path, p);
    }
    return VT_OK;
}

static int read_launcher(vt_capture *c, vt_error *err)
{
    const char *path = c->o.launcher_manifest;
    char *text;
    size_t len;
    int rc = vt_read_file(path, &text, &len, err);
    if (rc)
        return rc;
    vt_sha256_buffer(text, len, &c->launcher_sha);
    c->launcher = vt_json_parse(text, len, path, err);
    char why[600];
    if (!c->launcher) {
        rc = VT_EINPUT;
    } else if (!cJSON_IsObject(c->launcher)) {
        rc = vt_error_set(err, VT_EINPUT, "%s: offset 0: expected a JSON object (the launcher's manifest)", path);
    } else if (!vt_launcher_manifest_check(c->launcher, why, sizeof why)) {
        rc = vt_error_set(err, VT_EINPUT, "%s: %s", path, why);
    } else {
        /* It is embedded: it must have a canonical form. */
        vt_error cerr;
        vt_error_clear(&cerr);
        size_t n;
        char *s = vt_canonical_json(c->launcher, &n, &cerr);
        if (!s)
            rc = vt_error_set(err, VT_EINPUT, "%s: %s", path, cerr.msg);
        free(s);
    }
    free(text);
    return rc;
}

vt_capture *vt_capture_open(const vt_capture_opts *o, vt_error *err)
{
    vt_capture *c = calloc(1, sizeof *c);
    if (!c) {
        vt_error_set(err, VT_EINPUT, "capture: out of memory");
        return NULL;
    }
    c->o = *o;
    c->prefix = o->score_prefix_of != NULL;
    c->json_failures = vt_json_alloc_failures();
    c->local_own.error_run.run = c->local_own.error_after.run = c->local_own.differs.run = -1;
    int rc = VT_OK;
    if (!o->runner)
        rc = vt_error_set(err, VT_EINPUT, "--runner: missing: expected engine, llamacpp, transformers, openai or plugin:PATH.so");
    else if (!(c->ops = vt_runner_find(o->runner)))
        rc = vt_error_set(err, VT_EINPUT, "--runner '%s': expected engine, llamacpp, transformers, openai or plugin:PATH.so",
                          o->runner);
    else if (c->ops->imports && o->package)
        rc = vt_error_set(err, VT_EINPUT, "--package %s: expected none with --runner %s (its package is every "
                          "distribution its Python process imported, verified against their RECORDs)", o->package,
                          o->runner);
    else if (!o->model)
        rc = vt_error_set(err, VT_EINPUT, "--model: missing: expected a GGUF file");
    else if (!o->prompts == !o->score_prefix_of)
        rc = vt_error_set(err, VT_EINPUT, "--prompts/--score-prefix-of: expected exactly one of the two");
    else if (!o->out)
        rc = vt_error_set(err, VT_EINPUT, "--out: missing: expected the capture's path");
    else if (o->repetitions < 1)
        rc = vt_error_set(err, VT_EINPUT, "--repetitions %d: expected at least 1", o->repetitions);
    else if (o->max_tokens < 1 && !o->score_prefix_of)
        rc = vt_error_set(err, VT_EINPUT, "--max-tokens %d: expected at least 1 (a prompt with no position compares "
                          "nothing)", o->max_tokens);
    else if (o->top_k < 0)
        rc = vt_error_set(err, VT_EINPUT, "--top-k %d: expected at least 0 (0: no top-k side file)", o->top_k);
    else if (o->package_root && check_dir("--package-root", o->package_root, err))
        rc = VT_EINPUT;
    else if (o->topk_out && (o->top_k == 0 || o->score_prefix_of))
        rc = vt_error_set(err, VT_EINPUT, "--topk-out %s: expected no top-k side file %s", o->topk_out,
                          o->top_k == 0 ? "with --top-k 0" : "when scoring (--score-prefix-of)");
    else if ((unsigned)o->score_shape > VT_SHAPE_BATCHED)
        rc = vt_error_set(err, VT_EINPUT, "--score-shape %d: expected replay or batched", (int)o->score_shape);
    else if (o->settings.seed > VT_CAPTURE_MAX_SEED)
        rc = vt_error_set(err, VT_EINPUT, "--seed %llu: expected at most 2^53-1 (recorded exactly in JSON)",
                          (unsigned long long)o->settings.seed);
    else if (o->package && !ends_with(o->package, ".whl") && !ends_with(o->package, ".tgz") &&
             !ends_with(o->package, ".tar.gz"))
        rc = vt_error_set(err, VT_EINPUT, "--package %s: expected a wheel (.whl) or an npm tarball (.tgz)", o->package);
    for (int i = 0; rc == VT_OK && i < o->n_allow_differences; i++) {
        size_t k = 0;
        while (k < sizeof setting_fields / sizeof setting_fields[0] &&
               strcmp(o->allow_differences[i], setting_fields[k]) != 0)
            k++;
        if (k == sizeof setting_fields / sizeof setting_fields[0])
            rc = vt_error_set(err, VT_EINPUT, "--allow-setting-difference '%s': expected a settings field (mode, "
                              "cache_dtype, matmul, threads, n_ctx, n_batch, seed, sampling.top_p, ...)",
                              o->allow_differences[i]);
    }
    if (o->package)
        c->package_kind = ends_with(o->package, ".whl") ? PKG_WHEEL : PKG_NPM;
    else if (c->ops && c->ops->imports)
        c->package_kind = PKG_IMPORTS;

    /* Side files are beside the capture, named by plain file name; both
     * directories must exist for publication anyway. The top-k file is
     * X.topk beside X.json unless --topk-out names another. */
    if (rc == VT_OK && o->logits_out)
        rc = side_name_of(o->out, o->logits_out, &c->side_name, &c->side_dir, err);
    if (rc == VT_OK && o->top_k > 0 && !o->score_prefix_of) {
        if (o->topk_out) {
            c->topk_path = strdup(o->topk_out);
        } else {
            size_t n = strlen(o->out) - (ends_with(o->out, ".json") ? 5 : 0);
            if ((c->topk_path = malloc(n + 6)))
                snprintf(c->topk_path, n + 6, "%.*s.topk", (int)n, o->out);
        }
        rc = c->topk_path ? side_name_of(o->out, c->topk_path, &c->topk_name, &c->topk_dir, err)
                          : vt_error_set(err, VT_EINPUT, "capture: out of memory");
    }

    /* The model: its bytes, its summary, its tokenizer for the prompts. */
    if (rc == VT_OK)
        rc = vt_sha256_file(o->model, &c->model_sha, &c->model_size, err);
    vt_gguf *g = NULL;
    vt_tokenizer *tok = NULL;
    if (rc == VT_OK && !(g = vt_gguf_open(o->model, err)))
        rc = err ? err->code : VT_EINPUT;
    if (rc == VT_OK) {
        vt_gguf_str arch;
        if (!vt_gguf_get_str(g, "general.architecture", &arch) || !(c->arch = strndup(arch.ptr, (size_t)arch.len)) ||
            strlen(c->arch) != arch.len || !vt_utf8_valid(c->arch, strlen(c->arch)))
            rc = vt_error_set(err, VT_EINPUT, "%s: key general.architecture: expected a UTF-8 string", o->model);
    }
    if (rc == VT_OK && !(tok = vt_tokenizer_open(g, err)))
        rc = err ? err->code : VT_EINPUT;
    if (rc == VT_OK && !(c->gguf = vt_capture_gguf_summary(g, c->arch, vt_tokenizer_n_vocab(tok))))
        rc = vt_error_set(err, VT_EINPUT, "capture: out of memory");
    if (rc == VT_OK)
        rc = c->prefix ? local_streams(c, vt_tokenizer_n_vocab(tok), err)
                       : vt_prompts_read(o->prompts, tok, &c->prompts, err);
    /* The model's trained context bounds every prompt with its tokens to
     * come: past it positions are extrapolated, and a 100k-token prompt
     * would run for minutes before anything could be compared. */
    int64_t ctx_len = 0;
    if (rc == VT_OK) {
        ctx_len = vt_gguf_context_length(g); /* 0: not told, no bound */
        for (int p = 0; rc == VT_OK && ctx_len > 0 && p < c->prompts.n; p++) {
            const vt_prompt *pr = &c->prompts.items[p];
            int64_t more = c->prefix ? c->n_cont[p] : o->max_tokens;
            if ((int64_t)pr->n_tokens + more > ctx_len)
                rc = vt_error_set(err, VT_EINPUT, "%s: prompt '%.100s': %d prompt tokens + %lld %s = %lld: expected "
                                  "at most the model's context length %lld (%s: %s.context_length)",
                                  c->prefix ? o->score_prefix_of : o->prompts, pr->id, (int)pr->n_tokens,
                                  (long long)more, c->prefix ? "continuation tokens" : "--max-tokens",
                                  (long long)pr->n_tokens + more, (long long)ctx_len, o->model, c->arch);
        }
    }
    vt_tokenizer_free(tok);
    vt_gguf_free(g);

    if (rc == VT_OK && o->model_manifest) {
        rc = vt_manifest_read(o->model_manifest, &c->manifest, err);
        c->have_manifest = rc == VT_OK;
        if (rc == VT_OK && !(c->manifest_dir = vt_capture_dir_name(o->model_manifest)))
            rc = vt_error_set(err, VT_EINPUT, "capture: out of memory");
    }
    if (rc == VT_OK && o->launcher_manifest)
        rc = read_launcher(c, err);
    if (rc == VT_OK && o->package && access(o->package, R_OK) != 0)
        rc = vt_error_set(err, VT_EINPUT, "%s: cannot read: %s", o->package, strerror(errno));

    /* Settings as requested, every default made explicit. */
    if (rc == VT_OK) {
        vt_runner_settings s = o->settings;
        int eager = s.mode == VT_MODE_EAGER;
        s.model_path = o->model;
        if (s.n_threads == 0) {
            vt_runner_settings d;
            vt_runner_settings_default(&d);
            s.n_threads = eager ? 1 : d.n_threads;
        }
        int64_t need = 1;
        for (int p = 0; p < c->prompts.n; p++) {
            int64_t n = (int64_t)c->prompts.items[p].n_tokens + (c->prefix ? c->n_cont[p] : o->max_tokens);
            need = n > need ? n : need;
        }
        if (s.n_ctx == 0) {
            int64_t grain = (need + VT_CAPTURE_CTX_GRAIN - 1) / VT_CAPTURE_CTX_GRAIN * VT_CAPTURE_CTX_GRAIN;
            s.n_ctx = grain > INT32_MAX ? INT32_MAX : (int32_t)grain;
        }
        if (s.n_batch == 0)
            s.n_batch = eager ? 1 : (need < 512 ? (int32_t)need : 512);
        s.plugin_path = vt_runner_plugin_path(o->runner);
        c->req = s;
    }
    if (rc) {
        vt_capture_free(c);
        return NULL;
    }
    return c;
}

/* ------------------------------------------------------------------ run */

int vt_capture_run(vt_capture *c, vt_error *err)
{
    if (c->text)
        return vt_error_set(err, VT_EINPUT, "capture: already run");
    vt_runner *r = vt_runner_open(c->ops, &c->req, err);
    if (!r)
        return err ? err->code : VT_EINPUT;
    vt_capture_identity id;
    memset(&id, 0, sizeof id);
    vt_runner_resolved(r, &id.resolved);
    vt_runner_identity_get(r, &id.runner);
    int32_t nv = vt_runner_n_vocab(r);
    id.top_k = c->o.top_k < nv ? c->o.top_k : nv;
    /* After the runner is open, so that every library it loaded is mapped. */
    int rc = vt_runtime_identity_read(&id.runtime, err);
    /* A runner told only the top k log-probs has no logits to write, and
     * no more than k to list. */
    int32_t known = vt_runner_top_k_only(r);
    if (rc == VT_OK && known > 0 && c->o.logits_out)
        rc = vt_error_set(err, VT_EINPUT, "--logits-out %s: expected none with --runner %s (it gives the top %d "
                          "log-probs of each position, not logits)", c->o.logits_out, c->ops->name, (int)known);
    if (rc == VT_OK && known > 0 && !c->prefix && id.top_k > known)
        rc = vt_error_set(err, VT_EINPUT, "--top-k %d: expected at most %d, the log-probs --runner %s is told per "
                          "position (--server-top-k)", (int)id.top_k, (int)known, c->ops->name);
    vt_run_results res;
    memset(&res, 0, sizeof res);
    if (c->o.logits_out && !(c->side = vt_logits_writer_new(c->side_dir, err)))
        rc = err ? err->code : VT_EINPUT;
    if (rc == VT_OK && c->topk_path && !(c->topk = vt_topk_writer_new(c->topk_dir, id.top_k, err)))
        rc = err ? err->code : VT_EINPUT;
    vt_run_plan plan = { &c->prompts, c->prefix ? c->cont : NULL, c->n_cont, c->o.repetitions, c->o.max_tokens,
                         c->prefix ? 0 : c->o.top_k, c->o.score_shape, c->o.progress };
    if (rc == VT_OK)
        rc = vt_capture_repeat(r, &plan, c->side, c->topk, &res, err);
    /* What the runner's process imported, all of it: asked after the runs. */
    if (rc == VT_OK && c->package_kind == PKG_IMPORTS)
        rc = vt_runner_imports(r, &id.imports, err);
    if (rc == VT_OK && c->side)
        rc = vt_logits_writer_finish(c->side, &c->side_sha, &c->side_size, err);
    if (rc == VT_OK && c->topk)
        rc = vt_topk_writer_finish(c->topk, &c->topk_sha, &c->topk_size, err);
    if (rc == VT_OK)
        rc = vt_capture_document(c, &res, &id, err);

    /* The strict gate, on the document as the one reader reads it (its
     * side files are checked by their writers' digests). */
    if (rc == VT_OK) {
        vt_doc d;
        vt_doc_source src = { .path = c->o.out, .text = c->text, .len = c->text_len,
                              .kind = c->prefix ? VT_DOC_PREFIX : VT_DOC_CAPTURE, .no_side_files = 1 };
        vt_error rerr;
        vt_error_clear(&rerr);
        if (vt_doc_read(&src, &d, &rerr) != VT_OK) {
            rc = vt_error_set(err, VT_EINPUT, "capture: the document built is not one the reader accepts (a bug): %s",
                              rerr.msg);
        } else {
            vt_strict_check(&d, &c->refusals);
            vt_doc_free(&d);
        }
    }
    c->sum.n_prompts = c->prompts.n;
    c->sum.repetitions = c->o.repetitions;
    c->sum.n_runs = res.n_runs;
    c->sum.n_failed = res.n_failed;
    c->sum.n_positions = res.n_positions;
    c->sum.identical_tokens = res.identical_tokens;
    c->sum.identical_logits = res.identical_logits;
    c->sum.seal = c->seal.hex;
    c->sum.workload_seal = c->workload_seal.hex;
    c->sum.logits_sha256 = c->side ? c->side_sha.hex : NULL;
    c->sum.topk_path = c->topk ? c->topk_path : NULL;
    c->sum.topk_sha256 = c->topk ? c->topk_sha.hex : NULL;
    vt_run_results_free(&res);
    vt_runtime_identity_free(&id.runtime);
    vt_runner_close(r);
    return rc;
}

const vt_reasons *vt_capture_refusals(const vt_capture *c) { return &c->refusals; }

int vt_capture_n_refusals(const vt_capture *c) { return c->refusals.n + (c->refusals.oom && !c->refusals.n); }

const char *vt_capture_refusal(const vt_capture *c, int i)
{
    if (i >= 0 && i < c->refusals.n)
        return c->refusals.v[i].text;
    return i == 0 && c->refusals.oom ? "out of memory while listing the strict gate's reasons" : NULL;
}

const char *vt_capture_text(const vt_capture *c, size_t *len)
{
    if (len)
        *len = c->text_len;
    return c->text;
}

void vt_capture_summary_get(const vt_capture *c, vt_capture_summary *out) { *out = c->sum; }

/* ------------------------------------------------------------ publishing */

static int write_side(int fd, void *ctx, vt_error *err) { return vt_logits_writer_copy(ctx, fd, err); }
static int write_topk(int fd, void *ctx, vt_error *err) { return vt_topk_writer_copy(ctx, fd, err); }

/* Every input the outputs may not alias: the manifest's files and LOCAL's
 * side files included. */
static int collect_inputs(const vt_capture *c, const char ***inputs_out, char ***owned_out, int *n_out,
                          vt_error *err)
{
    const char **inputs = calloc((size_t)c->manifest.n_files + 10, sizeof *inputs);
    char **owned = calloc((size_t)c->manifest.n_files + 1, sizeof *owned);
    if (!inputs || !owned) {
        free(inputs);
        free(owned);
        return vt_error_set(err, VT_EINPUT, "capture: out of memory");
    }
    int n = 0;
    const char *direct[] = { c->o.model,
                             c->o.prompts,
                             c->o.score_prefix_of,
                             c->local ? c->local->topk_path : NULL,
                             c->local ? c->local->logits_path : NULL,
                             c->o.model_manifest,
                             c->o.launcher_manifest,
                             c->o.package,
                             c->package_kind == PKG_NPM ? (c->o.lock ? c->o.lock : VT_SOURCE_DIR "/oracle/llamacpp.lock.json")
                                                        : NULL };
    for (size_t i = 0; i < sizeof direct / sizeof direct[0]; i++)
        if (direct[i])
            inputs[n++] = direct[i];
    for (int i = 0; i < c->manifest.n_files; i++) {
        const char *name = c->manifest.files[i].name;
        if (name[0] == '/') {
            inputs[n++] = name;
        } else if ((owned[i] = malloc(strlen(c->manifest_dir) + strlen(name) + 2))) {
            sprintf(owned[i], "%s/%s", c->manifest_dir, name);
            inputs[n++] = owned[i];
        } else { /* an input left out could be written over */
            for (int k = 0; k < i; k++)
                free(owned[k]);
            free(owned);
            free(inputs);
            return vt_error_set(err, VT_EINPUT, "capture: out of memory");
        }
    }
    *inputs_out = inputs;
    *owned_out = owned;
    *n_out = n;
    return VT_OK;
}

static void free_inputs(const vt_capture *c, const char **inputs, char **owned)
{
    for (int i = 0; i < c->manifest.n_files; i++)
        free(owned[i]);
    free(owned);
    free(inputs);
}

int vt_capture_publish(vt_capture *c, int overwrite, vt_publish_hook hook, void *hook_ctx, vt_error *err)
{
    if (!c->text)
        return vt_error_set(err, VT_EINPUT, "capture: publish before a successful run");
    if (c->o.strict && vt_capture_n_refusals(c))
        return vt_error_set(err, VT_ECHECK, "%s: strict: not published by rule %s (%d reason%s): %s", c->o.out,
                            c->refusals.n ? c->refusals.v[0].rule : "?", vt_capture_n_refusals(c),
                            vt_capture_n_refusals(c) == 1 ? "" : "s", vt_capture_refusal(c, 0));
    vt_publish_item items[3];
    memset(items, 0, sizeof items);
    items[0].path = c->o.out;
    items[0].data = c->text;
    items[0].size = c->text_len;
    int n_items = 1;
    if (c->side) {
        items[n_items].path = c->o.logits_out;
        items[n_items].write = write_side;
        items[n_items++].write_ctx = c->side;
    }
    if (c->topk) {
        items[n_items].path = c->topk_path;
        items[n_items].write = write_topk;
        items[n_items++].write_ctx = c->topk;
    }
    const char **inputs;
    char **owned;
    int n;
    if (collect_inputs(c, &inputs, &owned, &n, err))
        return err->code;
    vt_publish_opts po = { .overwrite = overwrite, .inputs = inputs, .n_inputs = n, .hook = hook, .hook_ctx = hook_ctx };
    int rc = vt_publish_group(items, n_items, &po, err);
    free_inputs(c, inputs, owned);
    return rc;
}

int vt_capture_check_outputs(vt_capture *c, int overwrite, vt_error *err)
{
    const char *outs[3] = { c->o.out };
    int n_outs = 1;
    if (c->o.logits_out)
        outs[n_outs++] = c->o.logits_out;
    if (c->topk_path)
        outs[n_outs++] = c->topk_path;
    const char **inputs;
    char **owned;
    int n;
    if (collect_inputs(c, &inputs, &owned, &n, err))
        return err->code;
    vt_publish_opts po = { .overwrite = overwrite, .inputs = inputs, .n_inputs = n };
    int rc = vt_publish_check(outs, n_outs, &po, err);
    free_inputs(c, inputs, owned);
    return rc;
}

void vt_capture_free(vt_capture *c)
{
    if (!c)
        return;
    if (c->cont)
        for (int p = 0; p < c->n_streams; p++)
            free(c->cont[p]);
    free(c->cont);
    vt_prompts_free(&c->prompts);
    free(c->n_cont);
    vt_doc_free(&c->local_own);
    cJSON_Delete(c->gguf);
    free(c->arch);
    if (c->have_manifest)
        vt_manifest_free(&c->manifest);
    free(c->manifest_dir);
    cJSON_Delete(c->launcher);
    free(c->side_name);
    free(c->side_dir);
    vt_logits_writer_free(c->side);
    free(c->topk_path);
    free(c->topk_name);
    free(c->topk_dir);
    vt_topk_writer_free(c->topk);
    free(c->text);
    vt_reasons_free(&c->refusals);
    free(c);
}
