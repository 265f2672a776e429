/* The "openai" runner (--runner openai --endpoint URL): a server that speaks
 * the OpenAI completions API (llama-server, vLLM, SGLang, a team's own).
 *
 * Every evaluated position is one POST /v1/completions: the sequence so far
 * as token ids, max_tokens 1, temperature 0, the top-k log-probs of the next
 * token asked for, the server's prompt cache off (llama-server:
 * cache_prompt false), so every request is scored in the same shape: one
 * whole prompt, nothing reused. A row of eval's output holds the k log-probs
 * the server gave at their ids and -INFINITY elsewhere (runner.h,
 * top_k_only).
 *
 * What vt cannot verify about a server is recorded as the server's word:
 * /v1/models (the model it serves) and, where it has them, /props and
 * /version; the model file named with --model is the operator's statement
 * (its vocabulary tokenizes the prompts). Log-probs are asked raw (before
 * sampling: llama-server post_sampling_probs false, vLLM's default); a
 * response that says they are post-sampling ("top_probs") is refused.
 *
 * Every failure of the server (unreachable, an HTTP error, a body that is
 * not the expected JSON, fewer log-probs than asked) marks the runner
 * broken: a capture then stops with exit 2 and publishes nothing, rather
 * than record the server's failure as the model's. */
#include "../common/vt_utf8.h"
#include "../engine/runner.h"
#include "../engine/tokenizer.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define OAI_MAX_BODY (64u << 20)   /* a response larger than this is not a completion */
#define OAI_CONNECT_TIMEOUT_S 10L
#define OAI_TIMEOUT_S 300L         /* one request: a long prompt on a slow CPU server */
#define OAI_ATTEMPTS 3             /* connection failures and 502/503/504 are retried */
#define OAI_MAX_TOP_K 1000

typedef struct oai {
    CURL *curl;
    struct curl_slist *headers;
    char endpoint[1024];    /* the base URL, without a trailing '/' */
    char model[256];        /* the served model's name */
    int32_t n_vocab, k, n_ctx;
    int32_t *seq;           /* the sequence so far */
    int32_t n_seq;
    char *bias;             /* ,"logit_bias":{...} (model_vocab) */
    int32_t n_banned;
    char *req;              /* the request body, built in place */
    size_t req_cap;
    char *body;             /* the response body */
    size_t body_len, body_cap;
    int broken;
    char version[256], detail[2048];
} oai;

/* ---------------------------------------------------------------- HTTP */

static size_t on_body(char *data, size_t size, size_t n, void *user)
{
    oai *S = user;
    size_t len = size * n;
    if (S->body_len + len + 1 > OAI_MAX_BODY)
        return 0; /* curl reports a write error: the body is refused */
    if (S->body_len + len + 1 > S->body_cap) {
        size_t cap = S->body_cap ? S->body_cap : 65536;
        while (cap < S->body_len + len + 1)
            cap *= 2;
        char *b = realloc(S->body, cap);
        if (!b)
            return 0;
        S->body = b;
        S->body_cap = cap;
    }
    memcpy(S->body + S->body_len, data, len);
    S->body_len += len;
    S->body[S->body_len] = 0;
    return len;
}

/* The first line of a body, printable ASCII, at most 160 characters. */
static void body_line(const oai *S, char *out, size_t cap)
{
    size_t j = 0;
    for (size_t i = 0; S->body && i < S->body_len && j + 1 < cap && j < 160; i++) {
        unsigned char c = (unsigned char)S->body[i];
        if (c == '\n' || c == '\r')
            break;
        out[j++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
    }
    out[j] = 0;
}

static int failed(oai *S, vt_error *err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int failed(oai *S, vt_error *err, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    S->broken = 1;
    return vt_error_set(err, VT_EINPUT, "%s", msg);
}

/* GET (post NULL) or POST one path; *status is the HTTP status. A transport
 * failure or an unexpected status is an error naming the URL. */
static int http(oai *S, const char *path, const char *post, long *status, vt_error *err)
{
    char url[1300];
    snprintf(url, sizeof url, "%s%s", S->endpoint, path);
    CURLcode cc = CURLE_OK;
    for (int attempt = 1; attempt <= OAI_ATTEMPTS; attempt++) {
        S->body_len = 0;
        if (S->body)
            S->body[0] = 0;
        curl_easy_setopt(S->curl, CURLOPT_URL, url);
        curl_easy_setopt(S->curl, CURLOPT_HTTPGET, 1L);
        if (post) {
            curl_easy_setopt(S->curl, CURLOPT_POSTFIELDS, post);
            curl_easy_setopt(S->curl, CURLOPT_POSTFIELDSIZE, (long)strlen(post));
        }
        cc = curl_easy_perform(S->curl);
        *status = 0;
        curl_easy_getinfo(S->curl, CURLINFO_RESPONSE_CODE, status);
        int retry = cc == CURLE_COULDNT_CONNECT || cc == CURLE_OPERATION_TIMEDOUT ||
                    (cc == CURLE_OK && (*status == 502 || *status == 503 || *status == 504));
        if (!retry || attempt == OAI_ATTEMPTS)
            break;
        struct timespec ts = { 0, 200000000L * attempt }; /* 0.2 s, 0.4 s */
        nanosleep(&ts, NULL);
    }
    if (cc != CURLE_OK)
        return failed(S, err, "%s: %s: expected an HTTP response from an OpenAI-compatible server", url,
                      cc == CURLE_WRITE_ERROR ? "response larger than 64 MiB or out of memory" : curl_easy_strerror(cc));
    if (*status != 200 && !(post == NULL && *status == 404)) {
        char line[200];
        body_line(S, line, sizeof line);
        return failed(S, err, "%s: HTTP %ld%s%s: expected 200", url, *status, *line ? ": " : "", line);
    }
    return VT_OK;
}

/* GET path as JSON: NULL (no error) for a 404, else the parsed object. */
static int get_json(oai *S, const char *path, cJSON **out, vt_error *err)
{
    long status;
    *out = NULL;
    int rc = http(S, path, NULL, &status, err);
    if (rc || status == 404)
        return rc;
    if (!(*out = cJSON_ParseWithLength(S->body, S->body_len)) || !cJSON_IsObject(*out)) {
        cJSON_Delete(*out);
        *out = NULL;
        return failed(S, err, "%s%s: body is not a JSON object: expected the server's JSON", S->endpoint, path);
    }
    return VT_OK;
}

/* ------------------------------------------------------------- identity */

static const char *str_of(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}


static const char *base_name(const char *p)
{
    const char *s = p ? strrchr(p, '/') : NULL;
    return s ? s + 1 : p;
}

/* /v1/models names the model; --served-model, when given, must be among
 * them, and is otherwise the one model served. /props (llama-server) says
 * which file it loaded: a file of another name than --model is refused. */
static int server_identity(oai *S, const vt_runner_settings *s, vt_error *err)
{
    cJSON *models = NULL, *props = NULL, *version = NULL;
    int rc = get_json(S, "/v1/models", &models, err);
    const cJSON *data = models ? cJSON_GetObjectItemCaseSensitive(models, "data") : NULL;
    if (rc == VT_OK && (!cJSON_IsArray(data) || cJSON_GetArraySize(data) < 1))
        rc = failed(S, err, "%s/v1/models: field data: %s: expected a list of the models served", S->endpoint,
                    models ? "missing or empty" : "HTTP 404");
    if (rc == VT_OK) {
        const char *pick = NULL;
        int n = 0;
        const cJSON *m;
        cJSON_ArrayForEach(m, data) {
            const char *id = str_of(m, "id");
            if (!id)
                continue;
            n++;
            if (s->served_model ? strcmp(id, s->served_model) == 0 : n == 1)
                pick = id;
        }
        if (s->served_model && !pick)
            rc = failed(S, err, "%s/v1/models: --served-model '%s': not served: expected one of the models listed",
                        S->endpoint, s->served_model);
        else if (!s->served_model && n != 1)
            rc = failed(S, err, "%s/v1/models: %d models served: expected one, or --served-model NAME", S->endpoint, n);
        else
            vt_ascii_line(S->model, sizeof S->model, pick);
    }
    if (rc == VT_OK)
        rc = get_json(S, "/props", &props, err);
    if (rc == VT_OK)
        rc = get_json(S, "/version", &version, err);
    char build[256] = "", path[512] = "";
    if (rc == VT_OK && props) {
        vt_ascii_line(build, sizeof build, str_of(props, "build_info"));
        vt_ascii_line(path, sizeof path, str_of(props, "model_path"));
        if (*path && strcmp(base_name(path), base_name(s->model_path)) != 0)
            rc = failed(S, err, "%s/props: field model_path: '%s': expected the file --model names (%s): the server "
                        "serves another model", S->endpoint, path, base_name(s->model_path));
    }
    if (rc == VT_OK && version && !*build)
        vt_ascii_line(build, sizeof build, str_of(version, "version"));
    if (rc == VT_OK) {
        vt_ascii_line(S->version, sizeof S->version, *build ? build : "unknown");
        snprintf(S->detail, sizeof S->detail,
                 "served model '%s'%s%s; model file %s attested by the operator (--model), not verified; "
                 "/v1/completions, token ids, one request per position, max_tokens 1, temperature 0, top %d raw "
                 "log-probs (post_sampling_probs false), cache_prompt false, %d tokens ending in a cut UTF-8 "
                 "sequence kept from being sampled (logit_bias -100)",
                 S->model, *path ? ", server model_path " : "", path, base_name(s->model_path), (int)S->k,
                 (int)S->n_banned);
    }
    cJSON_Delete(models);
    cJSON_Delete(props);
    cJSON_Delete(version);
    return rc;
}

/* ------------------------------------------------------------- runner */

static void oai_close(void *state)
{
    oai *S = state;
    if (!S)
        return;
    if (S->curl)
        curl_easy_cleanup(S->curl);
    curl_slist_free_all(S->headers);
    free(S->seq);
    free(S->req);
    free(S->bias);
    free(S->body);
    free(S);
}

/* Whether bytes end in a multi-byte UTF-8 sequence cut short. */
static int ends_cut(const unsigned char *b, size_t len)
{
    for (size_t i = 1; i <= 4 && i <= len; i++) {
        unsigned char c = b[len - i];
        size_t need = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
        if (need && i < need)
            return 1;
    }
    return 0;
}

/* The vocabulary vt tokenizes with, and the request's logit_bias: a server
 * that streams text (llama-server) holds back a token whose piece ends in a
 * cut UTF-8 sequence and drops its log-probs with it (measured: "logprobs":
 * null, max_tokens 1), so such tokens are kept from being sampled. The bias
 * acts in the sampler; the log-probs asked are the raw ones, before it. */
static int model_vocab(oai *S, const char *model, vt_error *err)
{
    vt_tokenizer *tok = vt_tokenizer_open_file(model, err);
    if (!tok)
        return err ? err->code : VT_EINPUT;
    S->n_vocab = vt_tokenizer_n_vocab(tok);
    size_t cap = 64, len = 0;
    char *b = malloc(cap);
    int rc = b ? VT_OK : vt_error_set(err, VT_EINPUT, "--runner openai: out of memory");
    if (b)
        len = (size_t)sprintf(b, ",\"logit_bias\":{");
    for (int32_t id = 0; rc == VT_OK && id < S->n_vocab; id++) {
        size_t n = 0;
        const char *piece = vt_tokenizer_token_piece(tok, id, &n);
        if (!piece || !ends_cut((const unsigned char *)piece, n))
            continue;
        if (len + 32 > cap) {
            char *nb = realloc(b, cap *= 2);
            if (!nb) {
                rc = vt_error_set(err, VT_EINPUT, "--runner openai: out of memory");
                break;
            }
            b = nb;
        }
        len += (size_t)sprintf(b + len, "%s\"%d\":-100", S->n_banned++ ? "," : "", (int)id);
    }
    if (rc == VT_OK) {
        sprintf(b + len, "}");
        S->bias = b;
    } else
        free(b);
    vt_tokenizer_free(tok);
    return rc;
}

static int oai_open(const vt_runner_settings *s, void **state, vt_error *err)
{
    if (!s->endpoint || !*s->endpoint)
        return vt_error_set(err, VT_EINPUT, "--endpoint: missing: expected the server's URL (--runner openai)");
    if (strncmp(s->endpoint, "http://", 7) != 0 && strncmp(s->endpoint, "https://", 8) != 0)
        return vt_error_set(err, VT_EINPUT, "--endpoint '%s': expected an http:// or https:// URL", s->endpoint);
    if (strlen(s->endpoint) >= 1000)
        return vt_error_set(err, VT_EINPUT, "--endpoint: longer than 999 bytes: expected a URL");
    if (s->server_top_k < 1 || s->server_top_k > OAI_MAX_TOP_K)
        return vt_error_set(err, VT_EINPUT, "--server-top-k %d: expected 1..%d", (int)s->server_top_k, OAI_MAX_TOP_K);
    if (s->sampling.temperature != 0.0)
        return vt_error_set(err, VT_EINPUT, "--temperature %g: expected 0 with --runner openai (greedy: vt picks "
                            "the argmax of the server's log-probs; sampling from its top k is not the server's "
                            "sampling)", s->sampling.temperature);
    const char *key = NULL;
    if (s->api_key_env && !(key = getenv(s->api_key_env)))
        return vt_error_set(err, VT_EINPUT, "--api-key-env %s: not set: expected the variable to hold the key",
                            s->api_key_env);
    oai *S = calloc(1, sizeof *S);
    if (!S)
        return vt_error_set(err, VT_EINPUT, "--runner openai: out of memory");
    snprintf(S->endpoint, sizeof S->endpoint, "%s", s->endpoint);
    for (size_t n = strlen(S->endpoint); n > 0 && S->endpoint[n - 1] == '/'; n--)
        S->endpoint[n - 1] = 0;
    S->k = s->server_top_k;
    S->n_ctx = s->n_ctx > 0 ? s->n_ctx : 512;
    int rc = model_vocab(S, s->model_path, err);
    if (rc == VT_OK && !(S->seq = malloc((size_t)S->n_ctx * sizeof *S->seq)))
        rc = vt_error_set(err, VT_EINPUT, "--runner openai: out of memory");
    if (rc == VT_OK && !(S->curl = curl_easy_init()))
        rc = vt_error_set(err, VT_EINPUT, "--runner openai: libcurl did not start");
    if (rc == VT_OK) {
        char auth[600];
        S->headers = curl_slist_append(NULL, "Content-Type: application/json");
        if (key) {
            snprintf(auth, sizeof auth, "Authorization: Bearer %s", key);
            S->headers = curl_slist_append(S->headers, auth);
        }
        curl_easy_setopt(S->curl, CURLOPT_HTTPHEADER, S->headers);
        curl_easy_setopt(S->curl, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(S->curl, CURLOPT_WRITEDATA, S);
        curl_easy_setopt(S->curl, CURLOPT_CONNECTTIMEOUT, OAI_CONNECT_TIMEOUT_S);
        curl_easy_setopt(S->curl, CURLOPT_TIMEOUT, OAI_TIMEOUT_S);
        curl_easy_setopt(S->curl, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(S->curl, CURLOPT_NOPROXY, "127.0.0.1,localhost");
        rc = server_identity(S, s, err);
    }
    if (rc) {
        oai_close(S);
        return rc;
    }
    *state = S;
    return VT_OK;
}

static int oai_reset(void *state, vt_error *err)
{
    (void)err;
    ((oai *)state)->n_seq = 0;
    return VT_OK;
}

/* The request for the next token after seq[0..n). */
static int build_request(oai *S, int32_t n, vt_error *err)
{
    size_t need = 512 + strlen(S->model) * 6 + (size_t)n * 12 + strlen(S->bias);
    if (need > S->req_cap) {
        char *r = realloc(S->req, need);
        if (!r)
            return vt_error_set(err, VT_EINPUT, "--runner openai: out of memory");
        S->req = r;
        S->req_cap = need;
    }
    char *p = S->req;
    p += sprintf(p, "{\"model\":\"");
    for (const char *m = S->model; *m; m++) /* vt_ascii_line left printable ASCII: only " and \ need escapes */
        p += sprintf(p, *m == '"' || *m == '\\' ? "\\%c" : "%c", *m);
    p += sprintf(p, "\",\"prompt\":[");
    for (int32_t i = 0; i < n; i++)
        p += sprintf(p, i ? ",%d" : "%d", (int)S->seq[i]);
    sprintf(p, "],\"max_tokens\":1,\"temperature\":0,\"logprobs\":%d,\"n_probs\":%d,\"post_sampling_probs\":false,"
               "\"cache_prompt\":false,\"return_tokens_as_token_ids\":true,\"stream\":false,\"echo\":false%s}",
            (int)S->k, (int)S->k, S->bias);
    return VT_OK;
}

/* "token_id:123" (vLLM with return_tokens_as_token_ids) -> 123. */
static int id_of_key(const char *s, int32_t *id)
{
    if (!s || strncmp(s, "token_id:", 9) != 0)
        return 0;
    char *end;
    long v = strtol(s + 9, &end, 10);
    if (end == s + 9 || *end || v < 0 || v > INT32_MAX)
        return 0;
    *id = (int32_t)v;
    return 1;
}

/* The k log-probs of the response into row (-INFINITY elsewhere). Two
 * shapes are read: llama-server's logprobs.content[0].top_logprobs
 * [{id, logprob}], and the OpenAI completions shape logprobs.top_logprobs
 * [{"token_id:N": logprob}] (vLLM's return_tokens_as_token_ids). */
static int parse_row(oai *S, const char *url, float *row, vt_error *err)
{
    cJSON *doc = cJSON_ParseWithLength(S->body, S->body_len);
    if (!doc) {
        char line[200];
        body_line(S, line, sizeof line);
        return failed(S, err, "%s: body is not JSON ('%s'): expected a completion with log-probs", url, line);
    }
    int rc = VT_OK;
    const cJSON *choices = cJSON_GetObjectItemCaseSensitive(doc, "choices");
    const cJSON *c0 = cJSON_IsArray(choices) ? cJSON_GetArrayItem(choices, 0) : NULL;
    const cJSON *lp = c0 ? cJSON_GetObjectItemCaseSensitive(c0, "logprobs") : NULL;
    const cJSON *content = lp ? cJSON_GetObjectItemCaseSensitive(lp, "content") : NULL;
    const cJSON *tops = NULL;
    int shape = 0; /* 1: [{id, logprob}], 2: [{"token_id:N": logprob}] */
    if (cJSON_IsArray(content) && cJSON_GetArraySize(content) >= 1) {
        const cJSON *e0 = cJSON_GetArrayItem(content, 0);
        if (cJSON_GetObjectItemCaseSensitive(e0, "top_probs"))
            rc = failed(S, err, "%s: field choices[0].logprobs.content[0].top_probs: post-sampling probabilities: "
                        "expected raw log-probs (top_logprobs)", url);
        tops = cJSON_GetObjectItemCaseSensitive(e0, "top_logprobs");
        shape = 1;
    } else if (lp && cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(lp, "top_logprobs"))) {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(lp, "top_logprobs");
        tops = cJSON_GetArrayItem(t, 0);
        shape = 2;
    }
    if (rc == VT_OK && !(shape == 1 ? cJSON_IsArray(tops) : cJSON_IsObject(tops)))
        rc = failed(S, err, "%s: field choices[0].logprobs: %s: expected the top %d log-probs of the next token", url,
                    lp ? "no top log-probs" : "missing", (int)S->k);
    if (rc == VT_OK) {
        for (int32_t v = 0; v < S->n_vocab; v++)
            row[v] = -INFINITY;
        int got = 0;
        const cJSON *e;
        cJSON_ArrayForEach(e, tops) {
            int32_t id = -1;
            const cJSON *val = NULL;
            if (shape == 1) {
                const cJSON *jid = cJSON_GetObjectItemCaseSensitive(e, "id");
                val = cJSON_GetObjectItemCaseSensitive(e, "logprob");
                if (cJSON_IsNumber(jid) && jid->valuedouble >= 0 && jid->valuedouble < S->n_vocab &&
                    jid->valuedouble == (double)(int32_t)jid->valuedouble)
                    id = (int32_t)jid->valuedouble;
            } else {
                val = e;
                if (!id_of_key(e->string, &id) || id >= S->n_vocab)
                    id = -1;
            }
            if (id < 0) {
                rc = failed(S, err, "%s: top log-prob %d: id: expected a token id in 0..%d", url, got,
                            (int)S->n_vocab - 1);
                break;
            }
            /* llama-server writes a log-prob it cannot represent (a
             * probability that underflowed to 0) as a huge negative number. */
            if (!cJSON_IsNumber(val) || !(val->valuedouble <= 1e-6) || isnan(val->valuedouble)) {
                rc = failed(S, err, "%s: top log-prob %d (id %d): expected a number <= 0", url, got, (int)id);
                break;
            }
            if (row[id] != -INFINITY) {
                rc = failed(S, err, "%s: top log-prob %d: id %d twice: expected distinct ids", url, got, (int)id);
                break;
            }
            double x = val->valuedouble < -1e30 ? -1e30 : val->valuedouble;
            row[id] = (float)(x > 0.0 ? 0.0 : x);
            got++;
        }
        if (rc == VT_OK && got < S->k && got < S->n_vocab)
            rc = failed(S, err, "%s: %d top log-probs: expected %d (asked for logprobs %d)", url, got, (int)S->k,
                        (int)S->k);
    }
    cJSON_Delete(doc);
    return rc;
}

static int oai_eval(void *state, const int32_t *tokens, int32_t n, int all_logits, float *logits, vt_error *err)
{
    oai *S = state;
    if (S->n_seq + n > S->n_ctx)
        return vt_error_set(err, VT_EINPUT, "--runner openai: %d tokens: more than n_ctx %d", (int)(S->n_seq + n),
                            (int)S->n_ctx);
    memcpy(S->seq + S->n_seq, tokens, (size_t)n * sizeof *tokens);
    int32_t first = S->n_seq;
    S->n_seq += n;
    char url[1300];
    snprintf(url, sizeof url, "%s/v1/completions", S->endpoint);
    for (int32_t i = all_logits ? 0 : n - 1; i < n; i++) {
        long status;
        int rc = build_request(S, first + i + 1, err);
        if (rc == VT_OK)
            rc = http(S, "/v1/completions", S->req, &status, err);
        if (rc == VT_OK)
            rc = parse_row(S, url, logits + (size_t)(all_logits ? i : 0) * (size_t)S->n_vocab, err);
        if (rc)
            return rc;
    }
    return VT_OK;
}

static int32_t oai_n_vocab(void *state) { return ((oai *)state)->n_vocab; }

static int oai_broken(void *state) { return ((oai *)state)->broken; }

static int32_t oai_top_k_only(void *state) { return ((oai *)state)->k; }

static void oai_identity(void *state, vt_runner_identity *out)
{
    oai *S = state;
    *out = (vt_runner_identity){ .runner = "openai", .version = S->version, .backend = "server",
                                 .device = "server", .library = S->endpoint, .detail = S->detail };
}

const vt_runner_ops vt_runner_openai = {
    .name = "openai",
    .open = oai_open,
    .reset = oai_reset,
    .eval = oai_eval,
    .n_vocab = oai_n_vocab,
    .identity = oai_identity,
    .broken = oai_broken,
    .top_k_only = oai_top_k_only,
    .close = oai_close,
};
