/* vt seal (vt-seal): create, verify and extract sealed evidence archives. */
#include "cmds.h"

#include "../common/vt_parse.h"
#include "../common/vt_progress.h"
#include "../evidence/seal.h"
#include "json_out.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage_text[] =
    "usage: vt-seal create DIR -o X.tar.gz [--attestation] [--level 1-9] [--threads N] [--overwrite] [--quiet]\n"
    "       vt-seal verify X.tar.gz [--seal S] [--threads N] [LIMITS] [--quiet] [--json]\n"
    "       vt-seal extract X.tar.gz -C DIR [--seal S] [--threads N] [LIMITS] [--quiet]\n"
    "\n"
    "create   deterministic archive of DIR (regular files and directories only):\n"
    "         manifest.json first, members sorted by name, mtime 0, owner 0, modes\n"
    "         0644/0755, gzip without name or time (default level 6); writes\n"
    "         X.tar.gz.seal.json, and with --attestation an in-toto statement\n"
    "         X.tar.gz.intoto.json for signing tools. X may not be inside DIR.\n"
    "verify   X.tar.gz against its seal (default X.tar.gz.seal.json) and every member\n"
    "         against the manifest; also X.tar.gz.intoto.json where it exists.\n"
    "         --json: what it checked as one JSON document on stdout (vt.seal-verify/1,\n"
    "         evidence/vt.seal-verify.schema.json): the archive's size and sha256, the\n"
    "         manifest's sha256, each member found as the manifest lists it (path, type,\n"
    "         mode, size, sha256), whether the seal and attestation matched, verified\n"
    "         true or false and the problem; also when a check fails (exit 1), not on exit 2.\n"
    "extract  into DIR, which must not exist or be empty; refuses absolute paths, '..',\n"
    "         links, devices, FIFOs, duplicate or case-colliding names, size mismatches,\n"
    "         corrupt gzip and archives over the limits; checks every member against the\n"
    "         manifest (and the seal, where there is one); leaves nothing on refusal.\n"
    "LIMITS   --max-entries N (default 1000000)  --max-total-size BYTES[K|M|G|T]\n"
    "         (uncompressed tar stream, default 64G)  --max-ratio R (default 250)\n"
    "--threads N: 0 (default) one per CPU; the archive bytes do not depend on it.\n"
    "On a terminal, stderr shows a progress line (members, rate, time left); --quiet: none.\n"
    "Exit codes: 0 ok, 1 the archive differs from its manifest or seal, 2 bad usage,\n"
    "unreadable, malformed or refused input.\n"
    "example: vt-seal create evidence -o evidence.tar.gz --attestation && vt-seal verify evidence.tar.gz\n";

static int bad(const char *opt, const char *val, const char *expected)
{
    fprintf(stderr, "vt-seal: %s '%s': expected %s\n", opt, val ? val : "", expected);
    return 2;
}

/* BYTES with an optional binary suffix K, M, G or T. */
static int parse_size(const char *v, uint64_t *out)
{
    size_t n = strlen(v);
    unsigned shift = 0;
    char num[32];
    if (n && strchr("KMGT", v[n - 1])) {
        shift = v[n - 1] == 'K' ? 10 : v[n - 1] == 'M' ? 20 : v[n - 1] == 'G' ? 30 : 40;
        n--;
    }
    if (n == 0 || n >= sizeof num)
        return 0;
    memcpy(num, v, n);
    num[n] = '\0';
    uint64_t x;
    if (!vt_parse_u64(num, &x) || x == 0 || x > (UINT64_MAX >> shift))
        return 0;
    *out = x << shift;
    return 1;
}

/* What vt-seal verify checked (also when a check failed: rc VT_ECHECK,
 * err the problem) as one JSON document (vt.seal-verify/1); seal_path:
 * --seal, or NULL for the default. 0, or -1 out of memory. */
static int verify_json(const vt_seal *s, const char *archive, const char *seal_path, int rc, const vt_error *err)
{
    const vt_seal_info *info = vt_seal_result(s);
    const unsigned long fail0 = vt_tool_json_begin();
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "schema", "vt.seal-verify/1");
    cJSON *a = cJSON_AddObjectToObject(root, "archive");
    vt_tool_json_text(a, "path", archive);
    if (info->archive_sha256[0]) { /* read to its end */
        vt_tool_json_u64(a, "size", info->archive_size);
        cJSON_AddStringToObject(a, "sha256", info->archive_sha256);
    } else {
        cJSON_AddNullToObject(a, "size");
        cJSON_AddNullToObject(a, "sha256");
    }
    cJSON *sl = cJSON_AddObjectToObject(root, "seal");
    char *path = malloc(strlen(archive) + sizeof ".intoto.json");
    if (seal_path) {
        vt_tool_json_text(sl, "path", seal_path);
    } else if (path) { /* the library's default */
        sprintf(path, "%s.seal.json", archive);
        vt_tool_json_text(sl, "path", path);
    }
    cJSON_AddBoolToObject(sl, "matched", info->seal_checked);
    cJSON *m = cJSON_AddObjectToObject(root, "manifest");
    vt_tool_json_text(m, "sha256", info->manifest_sha256[0] ? info->manifest_sha256 : NULL);
    size_t listed = 0, matched = vt_seal_checked(s, &listed);
    cJSON_AddNumberToObject(m, "members", (double)listed);
    cJSON *members = cJSON_AddArrayToObject(root, "members");
    vt_seal_entry e;
    for (size_t i = 0; i < matched && vt_seal_checked_entry(s, i, &e); i++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToArray(members, o);
        vt_tool_json_text(o, "path", e.path);
        cJSON_AddStringToObject(o, "type", e.is_dir ? "dir" : "file");
        char mode[8];
        snprintf(mode, sizeof mode, "%04o", e.mode);
        cJSON_AddStringToObject(o, "mode", mode);
        vt_tool_json_u64(o, "size", e.size);
        vt_tool_json_text(o, "sha256", e.is_dir ? NULL : e.sha256);
    }
    cJSON_AddNumberToObject(root, "members_matched", (double)matched);
    cJSON *at = cJSON_AddObjectToObject(root, "attestation");
    if (path) {
        sprintf(path, "%s.intoto.json", archive);
        vt_tool_json_text(at, "path", path);
    }
    cJSON_AddBoolToObject(at, "matched", info->attestation_checked);
    cJSON_AddBoolToObject(root, "verified", rc == VT_OK);
    if (rc == VT_OK)
        cJSON_AddNullToObject(root, "problem");
    else /* a message: made text when printed */
        cJSON_AddStringToObject(root, "problem", err->msg);
    if (!path) {
        cJSON_Delete(root);
        return -1;
    }
    free(path);
    return vt_tool_json_print(root, fail0);
}

int vt_cmd_seal(int argc, char **argv)
{
    if (argc < 2) {
        fputs(usage_text, stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
        fputs(usage_text, stdout);
        return 0;
    }
    int op = strcmp(cmd, "create") == 0 ? 'c' : strcmp(cmd, "verify") == 0 ? 'v' : strcmp(cmd, "extract") == 0 ? 'x' : 0;
    if (!op)
        return bad("command", cmd, "create, verify or extract");
    vt_seal *s = vt_seal_new();
    if (!s) {
        fprintf(stderr, "vt-seal: out of memory\n");
        return 2;
    }
    vt_seal_limits lim;
    vt_seal_limits_default(&lim);
    vt_error err;
    vt_error_clear(&err);
    const char *input = NULL, *output = NULL, *seal_path = NULL;
    int rc = 0, quiet = 0, json = 0;
    vt_progress progress;
    vt_opt_seen seen = { .n = 0 };
    for (int i = 2; i < argc && rc == 0; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0) {
            fputs(usage_text, stdout);
            vt_seal_free(s);
            return 0;
        }
        if (strcmp(a, "--attestation") == 0 && op == 'c') {
            vt_seal_set_attestation(s, 1);
            continue;
        }
        if (strcmp(a, "--overwrite") == 0 && op == 'c') {
            vt_seal_set_overwrite(s, 1);
            continue;
        }
        if (strcmp(a, "--quiet") == 0) {
            quiet = 1;
            continue;
        }
        if (strcmp(a, "--json") == 0 && op == 'v') {
            json = 1;
            continue;
        }
        if (a[0] != '-' || a[1] == '\0') {
            if (input)
                rc = bad("argument", a, "one input (see --help)");
            input = a;
            continue;
        }
        const char *v = i + 1 < argc ? argv[++i] : NULL;
        if (!v) {
            rc = bad(a, "", "a value after the option");
            break;
        }
        if (!vt_opt_once(&seen, a)) {
            rc = bad(a, v, "the option once (given twice)");
            break;
        }
        int64_t n;
        if ((strcmp(a, "-o") == 0 && op == 'c') || (strcmp(a, "-C") == 0 && op == 'x'))
            output = v;
        else if (strcmp(a, "--level") == 0 && op == 'c') {
            if (!vt_parse_i64(v, 1, 9, &n))
                rc = bad(a, v, "an integer in 1..9");
            else
                vt_seal_set_level(s, (int)n, &err);
        } else if (strcmp(a, "--threads") == 0) {
            if (!vt_parse_i64(v, 0, 256, &n))
                rc = bad(a, v, "an integer in 0..256");
            else
                vt_seal_set_threads(s, (int)n, &err);
        } else if (strcmp(a, "--seal") == 0 && op != 'c') {
            vt_seal_set_seal_path(s, v, &err);
            seal_path = v;
        }
        else if (strcmp(a, "--max-entries") == 0 && op != 'c') {
            if (!vt_parse_u64(v, &lim.max_entries) || lim.max_entries == 0)
                rc = bad(a, v, "a positive integer");
        } else if (strcmp(a, "--max-total-size") == 0 && op != 'c') {
            if (!parse_size(v, &lim.max_total_size))
                rc = bad(a, v, "a positive size in bytes, optionally with K, M, G or T");
        } else if (strcmp(a, "--max-ratio") == 0 && op != 'c') {
            if (!vt_parse_u64(v, &lim.max_ratio) || lim.max_ratio == 0)
                rc = bad(a, v, "a positive integer");
        } else
            rc = bad("option", a, "one of the options in 'vt-seal --help' for this command");
    }
    if (rc == 0 && !input)
        rc = bad(cmd, "", op == 'c' ? "a directory" : "an archive");
    if (rc == 0 && !output && op != 'v')
        rc = bad(op == 'c' ? "-o" : "-C", "", op == 'c' ? "the archive to write" : "the directory to extract into");
    if (rc) {
        vt_seal_free(s);
        return rc;
    }
    vt_seal_set_limits(s, &lim, &err);
    vt_progress_init(&progress, op == 'c' ? "vt-seal create" : op == 'v' ? "vt-seal verify" : "vt-seal extract", quiet);
    vt_seal_set_progress(s, &progress);
    int r = op == 'c' ? vt_seal_create(s, input, output, &err)
          : op == 'v' ? vt_seal_verify(s, input, &err)
                      : vt_seal_extract(s, input, output, &err);
    vt_progress_end(&progress); /* a line left by an early return ends before any message */
    /* The check ran (passed, or failed: exit 1): its JSON. Refused input
     * (exit 2) has none. */
    if (json && (r == VT_OK || r == VT_ECHECK) && verify_json(s, input, seal_path, r, &err)) {
        fprintf(stderr, "vt-seal verify: --json: out of memory\n");
        vt_seal_free(s);
        return 2;
    }
    if (r != VT_OK) {
        fprintf(stderr, "vt-seal %s: %s\n", cmd, err.msg);
        vt_seal_free(s);
        return r;
    }
    if (err.msg[0]) /* a publication that stands, with a note (leftover backup) */
        fprintf(stderr, "vt-seal %s: note: %s\n", cmd, err.msg);
    const vt_seal_info *info = vt_seal_result(s);
    if (json)
        ; /* printed above */
    else if (op == 'c')
        printf("%s: %llu members, %llu data bytes, %llu bytes, sha256 %s\n", output,
               (unsigned long long)info->members, (unsigned long long)info->data_bytes,
               (unsigned long long)info->archive_size, info->archive_sha256);
    else
        printf("%s: OK: %llu members match the manifest (sha256 %s)%s%s%s%s\n", input,
               (unsigned long long)info->members, info->manifest_sha256,
               info->seal_checked ? "; archive matches its seal" : "; no seal: manifest only",
               info->attestation_checked ? " and attestation" : "", op == 'x' ? "; extracted into " : "",
               op == 'x' ? output : "");
    vt_seal_free(s);
    return 0;
}
