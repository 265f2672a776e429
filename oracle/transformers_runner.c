/* The transformers runner (transformers_runner.h): Hugging Face transformers
 * with PyTorch as a runner like any other, its model vt's own export of the
 * GGUF being captured. */
#include "transformers_runner.h"

#include "hf_export.h"

#include "../common/vt_json.h"
#include "../provenance/provenance.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define HELLO_MAX (1u << 20) /* the adapter's JSON lines */

typedef struct tf_state {
    char dir[PATH_MAX];     /* private: model/, pycache/, imports.json */
    char imports[PATH_MAX + 16];
    pid_t pid;
    int sock;
    int32_t n_vocab, n_ctx, chunk, n_past;
    vt_runner_settings resolved;
    char *version, *device, *library, *detail;
    char *line;  /* HELLO_MAX + 1 */
    size_t have; /* bytes buffered in line */
} tf_state;

static void remove_tree(const char *dir)
{
    const char *names[] = { "model/config.json", "model/model.safetensors", "model/tokenizer.json",
                            "model/tokenizer_config.json", "model/vt_tokens.json", "imports.json" };
    char p[PATH_MAX + 64];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        unlink(p);
    }
    /* The byte-code prefix stays empty: Python runs with -B. */
    snprintf(p, sizeof p, "%s/model", dir);
    rmdir(p);
    snprintf(p, sizeof p, "%s/pycache", dir);
    rmdir(p);
    rmdir(dir);
}

static void tf_close(void *state)
{
    tf_state *s = state;
    if (!s)
        return;
    if (s->sock >= 0) {
        static const char quit[] = "{\"op\":\"quit\"}\n";
        (void)!send(s->sock, quit, sizeof quit - 1, MSG_NOSIGNAL);
        close(s->sock);
    }
    if (s->pid > 0) {
        int st;
        while (waitpid(s->pid, &st, 0) < 0 && errno == EINTR)
            ;
    }
    if (s->dir[0])
        remove_tree(s->dir);
    free(s->version);
    free(s->device);
    free(s->library);
    free(s->detail);
    free(s->line);
    free(s);
}

static int send_all(tf_state *s, const void *buf, size_t n, vt_error *err)
{
    const char *p = buf;
    while (n) {
        ssize_t w = send(s->sock, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return vt_error_set(err, VT_EINPUT, "transformers runner: the adapter stopped reading (%s); its "
                                "stderr says why", strerror(errno));
        p += w;
        n -= (size_t)w;
    }
    return VT_OK;
}

/* Reads exactly n bytes, after what the line buffer already holds. */
static int recv_all(tf_state *s, void *buf, size_t n, vt_error *err)
{
    char *p = buf;
    size_t from_line = s->have < n ? s->have : n;
    memcpy(p, s->line, from_line);
    memmove(s->line, s->line + from_line, s->have - from_line);
    s->have -= from_line;
    p += from_line;
    n -= from_line;
    while (n) {
        ssize_t r = recv(s->sock, p, n, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return vt_error_set(err, VT_EINPUT, "transformers runner: the adapter exited mid-reply; its stderr "
                                "says why");
        p += r;
        n -= (size_t)r;
    }
    return VT_OK;
}

/* One JSON line from the adapter; {"ok": false, "error": ...} becomes err. */
static cJSON *recv_reply(tf_state *s, const char *what, vt_error *err)
{
    char *nl;
    while (!(nl = memchr(s->line, '\n', s->have))) {
        if (s->have >= HELLO_MAX) {
            vt_error_set(err, VT_EINPUT, "transformers adapter: %s: a reply line over %u bytes: expected one JSON "
                         "line", what, HELLO_MAX);
            return NULL;
        }
        ssize_t r = recv(s->sock, s->line + s->have, HELLO_MAX - s->have, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            vt_error_set(err, VT_EINPUT, "transformers adapter: %s: exited without a reply; its stderr says why", what);
            return NULL;
        }
        s->have += (size_t)r;
    }
    size_t len = (size_t)(nl - s->line);
    cJSON *j = vt_json_parse(s->line, len, "transformers adapter reply", err);
    memmove(s->line, nl + 1, s->have - len - 1);
    s->have -= len + 1;
    if (!j)
        return NULL;
    const cJSON *ok = cJSON_GetObjectItemCaseSensitive(j, "ok");
    if (!cJSON_IsTrue(ok)) {
        const cJSON *e = cJSON_GetObjectItemCaseSensitive(j, "error");
        vt_error_set(err, VT_EINPUT, "transformers adapter: %s: %s", what,
                     cJSON_IsString(e) ? e->valuestring : "failed: expected {\"ok\": true}");
        cJSON_Delete(j);
        return NULL;
    }
    return j;
}

static char *str_of(const cJSON *o, const char *k)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
    return strdup(cJSON_IsString(v) ? v->valuestring : "");
}

static const char *env_or(const char *name, const char *dflt)
{
    const char *v = getenv(name);
    return v && *v ? v : dflt;
}

/* Starts the adapter with the socket as its fd 3 and its stdout on our
 * stderr (a library's print must not reach vt's own output). */
static int spawn_adapter(tf_state *s, const vt_runner_settings *set, vt_error *err)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        return vt_error_set(err, VT_EINPUT, "transformers runner: socketpair: %s", strerror(errno));
    const char *python = env_or("VT_PYTHON", "python3");
    const char *adapter = env_or("VT_TRANSFORMERS_ADAPTER", VT_SOURCE_DIR "/oracle/transformers/vt_transformers.py");
    char pycache[PATH_MAX + 32], model[PATH_MAX + 16], dev[16], nctx[16];
    snprintf(pycache, sizeof pycache, "pycache_prefix=%s/pycache", s->dir);
    snprintf(model, sizeof model, "%s/model", s->dir);
    snprintf(dev, sizeof dev, "%d", (int)set->device);
    snprintf(nctx, sizeof nctx, "%d", (int)set->n_ctx);
    /* -B: no byte code written; pycache_prefix an empty directory: none
     * read either, so every module runs from the source bytes verified
     * against its RECORD. */
    char *argv[] = { (char *)python, "-B", "-X", pycache, (char *)adapter, "--fd", "3", "--model", model,
                     "--dtype", (char *)vt_dtype_name(set->dtype), "--attention",
                     (char *)vt_attn_impl_name(set->attention), "--device", dev, "--n-ctx", nctx, NULL };
    pid_t pid = fork();
    if (pid < 0) {
        close(sv[0]);
        close(sv[1]);
        return vt_error_set(err, VT_EINPUT, "transformers runner: fork: %s", strerror(errno));
    }
    if (pid == 0) {
        if (dup2(sv[1], 3) < 0 || dup2(2, 1) < 0)
            _exit(127);
        /* cuBLAS is deterministic only with a fixed workspace. */
        setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", 1);
        setenv("PYTHONHASHSEED", "0", 1);
        setenv("TOKENIZERS_PARALLELISM", "false", 1);
        execvp(python, argv);
        fprintf(stderr, "transformers runner: %s: %s\n", python, strerror(errno));
        _exit(127);
    }
    close(sv[1]);
    s->sock = sv[0];
    s->pid = pid;
    return VT_OK;
}

static int tf_open(const vt_runner_settings *set, void **state, vt_error *err)
{
    *state = NULL;
    if (!set->model_path || !*set->model_path)
        return vt_error_set(err, VT_EINPUT, "transformers runner: no model path");
    if (set->n_ctx < 1 || set->n_batch < 1)
        return vt_error_set(err, VT_EINPUT, "transformers runner: n_ctx %d, n_batch %d: expected >= 1", set->n_ctx,
                            set->n_batch);
    if (set->backend != VT_BACKEND_CPU)
        return vt_error_set(err, VT_EINPUT, "transformers runner: --backend %s: expected none (the backend is the "
                            "engine's; transformers runs on CUDA device --device)", vt_backend_name(set->backend));
    /* transformers keeps its KV cache (DynamicCache) in the model's dtype;
     * its quantized caches (quanto, HQQ) are integer, none FP8 E4M3. */
    vt_cache_dtype kv = set->dtype == VT_DTYPE_BF16 ? VT_CACHE_BF16 : VT_CACHE_F32;
    if (set->cache_dtype == VT_CACHE_FP8_E4M3)
        return vt_error_set(err, VT_EINPUT, "transformers runner: --cache-dtype fp8_e4m3: transformers offers no "
                            "FP8 E4M3 KV cache (its quantized caches, quanto and HQQ, are integer): expected auto or %s",
                            vt_cache_dtype_name(kv));
    if (set->cache_dtype != VT_CACHE_AUTO && set->cache_dtype != kv)
        return vt_error_set(err, VT_EINPUT, "transformers runner: --cache-dtype %s with --dtype %s: expected auto "
                            "or %s (transformers keeps the KV cache in the model's dtype)",
                            vt_cache_dtype_name(set->cache_dtype), vt_dtype_name(set->dtype), vt_cache_dtype_name(kv));
    tf_state *s = calloc(1, sizeof *s);
    if (!s || !(s->line = malloc(HELLO_MAX + 1))) {
        free(s);
        return vt_error_set(err, VT_EINPUT, "transformers runner: out of memory");
    }
    s->sock = -1;
    s->n_ctx = set->n_ctx;
    s->chunk = set->mode == VT_MODE_EAGER ? 1 : (set->n_batch < set->n_ctx ? set->n_batch : set->n_ctx);
    snprintf(s->dir, sizeof s->dir, "%s/vt-transformers-XXXXXX", env_or("TMPDIR", "/tmp"));
    if (!mkdtemp(s->dir)) {
        int e = errno;
        s->dir[0] = '\0';
        tf_close(s);
        return vt_error_set(err, VT_EINPUT, "transformers runner: a private directory under %s: %s",
                            env_or("TMPDIR", "/tmp"), strerror(e));
    }
    char model[PATH_MAX + 16], pycache[PATH_MAX + 16];
    snprintf(model, sizeof model, "%s/model", s->dir);
    snprintf(pycache, sizeof pycache, "%s/pycache", s->dir);
    snprintf(s->imports, sizeof s->imports, "%s/imports.json", s->dir);
    if (mkdir(model, 0700) != 0 || mkdir(pycache, 0700) != 0) {
        int e = errno;
        tf_close(s);
        return vt_error_set(err, VT_EINPUT, "transformers runner: %s: %s", model, strerror(e));
    }
    /* The model transformers loads is vt's export of the verified GGUF:
     * every weight as vt's codecs decode it. */
    vt_hf_export_result xr;
    int rc = vt_hf_export(set->model_path, model, set->dtype == VT_DTYPE_BF16 ? VT_ST_BF16 : VT_ST_F32, 0, &xr, err);
    if (rc) {
        tf_close(s);
        return rc;
    }
    vt_sha256_hex cfg, st;
    char cpath[PATH_MAX + 64], spath[PATH_MAX + 64];
    snprintf(cpath, sizeof cpath, "%s/config.json", model);
    snprintf(spath, sizeof spath, "%s/model.safetensors", model);
    if ((rc = vt_sha256_file(cpath, &cfg, NULL, err)) || (rc = vt_sha256_file(spath, &st, NULL, err)) ||
        (rc = spawn_adapter(s, set, err))) {
        tf_close(s);
        return rc;
    }
    cJSON *hello = recv_reply(s, "loading the model", err);
    if (!hello) {
        tf_close(s);
        return err->code ? err->code : VT_EINPUT;
    }
    const cJSON *nv = cJSON_GetObjectItemCaseSensitive(hello, "n_vocab");
    s->version = str_of(hello, "version");
    s->device = str_of(hello, "device");
    s->library = str_of(hello, "library");
    char *adetail = str_of(hello, "detail");
    size_t dl = (adetail ? strlen(adetail) : 0) + 512;
    if ((s->detail = malloc(dl)))
        snprintf(s->detail, dl, "%s; model: vt export of the GGUF as %s, %s, config.json sha256 %s, "
                 "model.safetensors sha256 %s; up to %d tokens per forward", adetail ? adetail : "", xr.hf_class,
                 vt_dtype_name(set->dtype), cfg.hex, st.hex, s->chunk);
    free(adetail);
    int good = cJSON_IsNumber(nv) && nv->valuedouble >= 1 && nv->valuedouble <= INT32_MAX;
    s->n_vocab = good ? (int32_t)nv->valuedouble : 0;
    cJSON_Delete(hello);
    if (!s->version || !s->device || !s->library || !s->detail) {
        tf_close(s);
        return vt_error_set(err, VT_EINPUT, "transformers runner: out of memory");
    }
    if (!good) {
        tf_close(s);
        return vt_error_set(err, VT_EINPUT, "transformers adapter: n_vocab: expected an integer >= 1");
    }
    s->resolved = *set;
    s->resolved.cache_dtype = kv;
    s->resolved.n_batch = s->chunk;
    /* Dequantized weights meet the activations unrounded: exact, in the
     * model's dtype. */
    s->resolved.matmul = VT_MATMUL_EXACT;
    *state = s;
    return VT_OK;
}

static int tf_reset(void *state, vt_error *err)
{
    tf_state *s = state;
    static const char req[] = "{\"op\":\"reset\"}\n";
    int rc = send_all(s, req, sizeof req - 1, err);
    cJSON *j = rc ? NULL : recv_reply(s, "reset", err);
    if (!j)
        return rc ? rc : err->code ? err->code : VT_EINPUT;
    cJSON_Delete(j);
    s->n_past = 0;
    return VT_OK;
}

static int tf_eval(void *state, const int32_t *tokens, int32_t n, int all_logits, float *logits, vt_error *err)
{
    tf_state *s = state;
    if (n < 1 || !tokens || !logits)
        return vt_error_set(err, VT_EINPUT, "transformers eval: %d tokens: expected >= 1", n);
    if (n > s->n_ctx - s->n_past)
        return vt_error_set(err, VT_EINPUT, "transformers eval: %d tokens after %d exceed n_ctx %d", n, s->n_past,
                            s->n_ctx);
    for (int32_t i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= s->n_vocab)
            return vt_error_set(err, VT_EINPUT, "transformers eval: token %d at %d: expected 0..%d", tokens[i], i,
                                s->n_vocab - 1);
    const size_t row = (size_t)s->n_vocab;
    for (int32_t off = 0, m; off < n; off += m) {
        m = n - off < s->chunk ? n - off : s->chunk;
        const int all = all_logits;
        char head[96];
        /* Tokens as little-endian int32 after the line (x86 and arm64 are). */
        int hl = snprintf(head, sizeof head, "{\"op\":\"eval\",\"n\":%d,\"all\":%d}\n", (int)m, all);
        int rc = send_all(s, head, (size_t)hl, err);
        if (!rc)
            rc = send_all(s, tokens + off, (size_t)m * sizeof *tokens, err);
        cJSON *j = rc ? NULL : recv_reply(s, "eval", err);
        if (!j)
            return rc ? rc : err->code ? err->code : VT_EINPUT;
        const cJSON *rows = cJSON_GetObjectItemCaseSensitive(j, "rows");
        const int want = all ? m : 1;
        const int got = cJSON_IsNumber(rows) ? (int)rows->valuedouble : -1;
        cJSON_Delete(j);
        if (got != want)
            return vt_error_set(err, VT_EINPUT, "transformers adapter: eval rows %d: expected %d", got, want);
        float *dst = all_logits ? logits + (size_t)off * row : logits;
        /* A batch before the last one of a last-row request still sends
         * its row: it is read into place and overwritten. */
        if ((rc = recv_all(s, dst, (size_t)want * row * sizeof *dst, err)))
            return rc;
        s->n_past += m;
    }
    return VT_OK;
}

static int32_t tf_n_vocab(void *state) { return ((tf_state *)state)->n_vocab; }

static void tf_identity(void *state, vt_runner_identity *out)
{
    tf_state *s = state;
    out->runner = "transformers";
    out->version = s->version;
    out->backend = "cuda";
    out->device = s->device;
    out->library = s->library;
    out->detail = s->detail;
}

static void tf_resolved(void *state, vt_runner_settings *out) { *out = ((tf_state *)state)->resolved; }

static int tf_imports(void *state, const char **path, vt_error *err)
{
    tf_state *s = state;
    unlink(s->imports); /* the adapter refuses to write over a file */
    cJSON *req = cJSON_CreateObject();
    char *text = NULL;
    if (req && cJSON_AddStringToObject(req, "op", "imports") && cJSON_AddStringToObject(req, "path", s->imports))
        text = cJSON_PrintUnformatted(req);
    cJSON_Delete(req);
    if (!text)
        return vt_error_set(err, VT_EINPUT, "transformers runner: out of memory");
    int rc = send_all(s, text, strlen(text), err);
    free(text);
    if (!rc)
        rc = send_all(s, "\n", 1, err);
    cJSON *j = rc ? NULL : recv_reply(s, "imports", err);
    if (!j)
        return rc ? rc : err->code ? err->code : VT_EINPUT;
    cJSON_Delete(j);
    *path = s->imports;
    return VT_OK;
}

const vt_runner_ops vt_runner_transformers = {
    .name = "transformers",
    .code_from_package = 1,
    .has_dtype = 1,
    .open = tf_open,
    .reset = tf_reset,
    .eval = tf_eval,
    .n_vocab = tf_n_vocab,
    .identity = tf_identity,
    .resolved = tf_resolved,
    .imports = tf_imports,
    .close = tf_close,
};
