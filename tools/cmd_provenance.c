/* vt provenance: hashes, manifests, this process's runtime identity, and
 * verification of the packages (wheels, npm tarballs) code was loaded from. */
#include "cmds.h"

#include "../provenance/provenance.h"
#include "json_out.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage_text[] =
    "usage: vt provenance manifest make FILE... [-o M.json [--overwrite]]\n"
    "       vt provenance manifest verify M.json [--base DIR] [--json]\n"
    "       vt provenance identity [--json]\n"
    "       vt provenance verify-wheel WHEEL [--installed DIR] [--json]\n"
    "       vt provenance verify-npm TARBALL --lock LOCK --name NAME [--root DIR --loaded SO...] [--json]\n"
    "       vt provenance verify-imports IMPORTS.json [--json]\n"
    "\n"
    "manifest make     vt.manifest/1 of the files (name, size, sha256), written to M.json\n"
    "                  with names relative to its directory, or printed (names as given);\n"
    "                  an existing M.json is refused unless --overwrite, and M.json may\n"
    "                  never be one of the FILEs (nor a link to one)\n"
    "manifest verify   every listed file (relative names against --base, default the\n"
    "                  manifest's directory) has its size and sha256; lists each mismatch;\n"
    "                  --json: each file (size and sha256 listed and found, status, the\n"
    "                  mismatch) as one JSON document on stdout (vt.manifest-verify/1,\n"
    "                  provenance/vt.manifest-verify.schema.json), also on exit 1\n"
    "identity          this process: executable and every mapped shared object (sha256),\n"
    "                  library versions, CPU model and ISA flags, kernel, cores\n"
    "verify-wheel      every RECORD entry against the wheel's members; with --installed,\n"
    "                  the files `pip install --target DIR` left against the installed\n"
    "                  RECORD and the wheel (rewritten script shebangs are noted, not failed)\n"
    "verify-npm        the tarball's sha512 against the lock's integrity for NAME, and each\n"
    "                  --loaded file under --root against tarball member package/<path>\n"
    "verify-imports    what a Python process imported (vt.imports/1, written in the process by\n"
    "                  oracle/transformers/vt_imports.py) against the RECORDs of the\n"
    "                  distributions in its sites; files from outside every distribution are\n"
    "                  listed as the runtime, unverified\n"
    "verify-* --json   what the text lists as one JSON document on stdout, also on exit 1\n"
    "                  (not on exit 2): the counts, each note and problem line, and\n"
    "                  verified true or false; verify-imports each distribution and\n"
    "                  runtime file field by field (vt.wheel-verify/1, vt.npm-verify/1,\n"
    "                  vt.imports-verify/1: provenance/vt.*-verify.schema.json)\n"
    "                  example: vt provenance verify-imports imports.json\n"
    "\n"
    "Exit codes: 0 verified, 1 verification failed, 2 bad input.\n";

static int usage_error(const char *what)
{
    fprintf(stderr, "vt provenance: %s\n", what);
    fputs(usage_text, stderr);
    return 2;
}

static int fail(const vt_error *err)
{
    fprintf(stderr, "vt provenance: %s\n", err->msg);
    return err->code == VT_ECHECK ? 1 : 2;
}

static int cmd_manifest_make(int argc, char **argv)
{
    const char *out = NULL;
    int overwrite = 0;
    const char **files = calloc((size_t)argc + 1, sizeof *files);
    int n = 0;
    if (!files)
        return usage_error("out of memory");
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--output") == 0) {
            if (out) { /* one line, as every refusal of an option */
                free(files);
                fputs("vt provenance: -o: expected the option once (given twice)\n", stderr);
                return 2;
            }
            if (i + 1 >= argc) {
                free(files);
                return usage_error("-o: expected an output path");
            }
            out = argv[++i];
        } else if (strcmp(argv[i], "--overwrite") == 0) {
            if (overwrite) {
                free(files);
                fputs("vt provenance: --overwrite: expected the option once (given twice)\n", stderr);
                return 2;
            }
            overwrite = 1;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "vt provenance manifest make: option '%s': expected -o or --overwrite\n", argv[i]);
            free(files);
            return 2;
        } else {
            files[n++] = argv[i];
        }
    }
    if (!n) {
        free(files);
        return usage_error("manifest make: expected at least one FILE");
    }
    if (overwrite && !out) {
        free(files);
        return usage_error("--overwrite: expected -o OUT (without -o the manifest goes to stdout)");
    }
    vt_error err;
    vt_error_clear(&err);
    /* The manifest may not replace a file it lists (nor an existing file
     * without --overwrite): refused before any file is hashed. */
    const vt_publish_opts po = { .overwrite = overwrite, .inputs = files, .n_inputs = n };
    if (out && vt_publish_check(&out, 1, &po, &err) != VT_OK) {
        free(files);
        return fail(&err);
    }
    vt_manifest m;
    int rc = out ? vt_manifest_make_for(out, files, n, &m, &err) : vt_manifest_make(files, n, &m, &err);
    if (rc != VT_OK) {
        free(files);
        return fail(&err);
    }
    if (out) {
        rc = vt_manifest_write(&m, out, &po, &err);
        if (rc == VT_OK)
            printf("wrote %s: %d files\n", out, m.n_files);
    } else {
        char *json = vt_manifest_to_json(&m);
        if (json)
            fputs(json, stdout);
        else
            rc = vt_error_set(&err, VT_EINPUT, "out of memory");
        free(json);
    }
    free(files);
    vt_manifest_free(&m);
    return rc == VT_OK ? 0 : fail(&err);
}

static const char *manifest_status_name(int status)
{
    switch (status) {
    case VT_MANIFEST_OK: return "ok";
    case VT_MANIFEST_MISSING: return "missing";
    case VT_MANIFEST_UNREADABLE: return "unreadable";
    default: return "differs";
    }
}

/* vt provenance manifest verify --json: each file of m with what was found
 * (vt.manifest-verify/1). 0, or -1 out of memory. */
static int manifest_verify_json(const char *path, const char *base, const vt_manifest *m,
                                const vt_manifest_result *res, int rc)
{
    const unsigned long fail0 = vt_tool_json_begin();
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "schema", "vt.manifest-verify/1");
    vt_tool_json_text(root, "manifest", path);
    vt_tool_json_text(root, "base", base);
    cJSON *files = cJSON_AddArrayToObject(root, "files");
    int matched = 0;
    for (int i = 0; i < m->n_files; i++) {
        const vt_manifest_result *r = &res[i];
        const int read = r->status == VT_MANIFEST_OK || r->status == VT_MANIFEST_DIFFERS;
        matched += r->status == VT_MANIFEST_OK;
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToArray(files, o);
        vt_tool_json_text(o, "name", m->files[i].name);
        vt_tool_json_text(o, "path", r->path);
        cJSON_AddStringToObject(o, "status", manifest_status_name(r->status));
        vt_tool_json_u64(o, "size", m->files[i].size);
        cJSON_AddStringToObject(o, "sha256", m->files[i].sha256.hex);
        if (read) {
            vt_tool_json_u64(o, "found_size", r->size);
            cJSON_AddStringToObject(o, "found_sha256", r->sha256.hex);
        } else {
            cJSON_AddNullToObject(o, "found_size");
            cJSON_AddNullToObject(o, "found_sha256");
        }
        if (r->problem) /* a message: made text when printed */
            cJSON_AddStringToObject(o, "problem", r->problem);
        else
            cJSON_AddNullToObject(o, "problem");
    }
    cJSON_AddNumberToObject(root, "matched", matched);
    cJSON_AddNumberToObject(root, "mismatched", m->n_files - matched);
    cJSON_AddBoolToObject(root, "verified", rc == VT_OK);
    return vt_tool_json_print(root, fail0);
}

static int cmd_manifest_verify(int argc, char **argv)
{
    const char *path = NULL, *base = NULL;
    int json = 0;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--base") == 0) {
            if (base) { /* one line, as every refusal of an option's value */
                fprintf(stderr, "vt provenance: --base: expected the option once (given twice)\n");
                return 2;
            }
            if (i + 1 >= argc)
                return usage_error("--base: expected a directory");
            base = argv[++i];
        } else if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "vt provenance manifest verify: option '%s': expected --base or --json\n", argv[i]);
            return 2;
        } else if (path) {
            return usage_error("manifest verify: expected one manifest");
        } else {
            path = argv[i];
        }
    }
    if (!path)
        return usage_error("manifest verify: expected M.json");
    /* Default base: the manifest's own directory (names are relative to it). */
    char *dir = NULL;
    if (!base) {
        const char *slash = strrchr(path, '/');
        if (slash) {
            size_t n = slash == path ? 1 : (size_t)(slash - path);
            dir = malloc(n + 1);
            if (!dir)
                return usage_error("out of memory");
            memcpy(dir, path, n);
            dir[n] = '\0';
            base = dir;
        }
    }
    vt_error err;
    vt_error_clear(&err);
    vt_manifest m;
    int rc = vt_manifest_read(path, &m, &err);
    if (rc != VT_OK) {
        free(dir);
        return fail(&err);
    }
    vt_manifest_result *res = NULL;
    rc = vt_manifest_check_files(&m, base, &res, &err);
    if (rc != VT_EINPUT && json) {
        if (manifest_verify_json(path, base ? base : ".", &m, res, rc)) {
            vt_manifest_results_free(res, m.n_files);
            vt_manifest_free(&m);
            free(dir);
            fprintf(stderr, "vt provenance manifest verify: --json: out of memory\n");
            return 2;
        }
    } else if (rc != VT_EINPUT) {
        for (int i = 0; i < m.n_files; i++)
            if (res[i].problem)
                printf("MISMATCH %s\n", res[i].problem);
        if (rc == VT_OK)
            printf("verified %s: %d files match\n", path, m.n_files);
    }
    vt_manifest_results_free(res, m.n_files);
    vt_manifest_free(&m);
    free(dir);
    return rc == VT_OK ? 0 : fail(&err);
}

static int cmd_identity(int argc, char **argv)
{
    int json = 0;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0)
            json = 1;
        else {
            fprintf(stderr, "vt provenance identity: option '%s': expected --json\n", argv[i]);
            return 2;
        }
    }
    vt_error err;
    vt_error_clear(&err);
    vt_runtime_identity id;
    if (vt_runtime_identity_read(&id, &err) != VT_OK)
        return fail(&err);
    if (json) {
        char *text = vt_runtime_identity_to_json(&id);
        if (!text) {
            vt_runtime_identity_free(&id);
            return usage_error("out of memory");
        }
        fputs(text, stdout);
        free(text);
    } else {
        printf("binary      %s\n            sha256 %s size %llu\n", id.binary_path ? id.binary_path : "?",
               id.binary_sha256.hex, (unsigned long long)id.binary_size);
        for (int i = 0; i < id.n_objects; i++)
            printf("object      %s\n            sha256 %s size %llu\n", id.objects[i].path,
                   id.objects[i].sha256.hex[0] ? id.objects[i].sha256.hex : "(unreadable)",
                   (unsigned long long)id.objects[i].size);
        printf("openssl     %s\nlibarchive  %s\nzlib        %s\ncjson       %s\npcre2       %s\n",
               id.openssl_version ? id.openssl_version : "?", id.libarchive_version ? id.libarchive_version : "?",
               id.zlib_version ? id.zlib_version : "?", id.cjson_version ? id.cjson_version : "?",
               id.pcre2_version ? id.pcre2_version : "?");
        printf("cpu         %s\nisa         %s\ncores       %d online, %d usable\nkernel      %s %s\n",
               id.cpu_model ? id.cpu_model : "?", id.cpu_flags ? id.cpu_flags : "?", id.n_cores, id.n_cores_usable,
               id.kernel ? id.kernel : "?", id.machine ? id.machine : "");
        printf("resolved    %s%s\n", id.resolved ? "yes" : "NO: missing ", id.resolved ? "" : id.unresolved);
    }
    int resolved = id.resolved;
    vt_runtime_identity_free(&id);
    return resolved ? 0 : 1;
}

/* The verdict (exit 0 or 1), with its stderr line when it failed; the
 * other problems are above (the text) or in the JSON. */
static int report_verdict(const vt_package_report *r, int json)
{
    if (r->verified)
        return 0;
    fprintf(stderr, "vt provenance: %s: verification failed: %s%s\n", r->file, r->n_problems ? r->problems[0] : "",
            r->n_problems < 2 ? "" : json ? " (and more, in the JSON)" : " (and more, above)");
    return 1;
}

static int print_report(const vt_package_report *r)
{
    printf("%s %s\n  sha256 %s\n", r->kind, r->file, r->sha256.hex);
    if (r->integrity)
        printf("  lock integrity     %s\n", r->integrity);
    if (r->computed_integrity)
        printf("  tarball integrity  %s\n", r->computed_integrity);
    printf("  members checked %d", r->members_checked);
    if (r->installed_checked)
        printf(", installed files checked %d", r->installed_checked);
    printf("\n");
    for (int i = 0; i < r->n_notes; i++)
        printf("  note: %s\n", r->notes[i]);
    for (int i = 0; i < r->n_problems; i++)
        printf("  PROBLEM: %s\n", r->problems[i]);
    if (r->verified)
        printf("verified\n");
    else
        printf("FAILED: %d problem%s\n", r->n_problems, r->n_problems == 1 ? "" : "s");
    return report_verdict(r, 0);
}

/* lines as an array of strings: messages (each naming its file), made text
 * when printed. */
static void add_lines(cJSON *obj, const char *key, char *const *lines, int n)
{
    cJSON *a = cJSON_AddArrayToObject(obj, key);
    for (int i = 0; a && i < n; i++)
        cJSON_AddItemToArray(a, cJSON_CreateString(lines[i]));
}

/* verify-wheel and verify-npm --json: what print_report prints, from the
 * same report (vt.wheel-verify/1, vt.npm-verify/1); the npm arguments NULL
 * for a wheel. 0, or -1 out of memory (nothing printed). */
static int report_json(const vt_package_report *r, const char *installed, const char *lock, const char *name,
                       const char *root, const char *const *loaded, int n_loaded)
{
    const int npm = strcmp(r->kind, "npm") == 0;
    const unsigned long fail0 = vt_tool_json_begin();
    cJSON *root_doc = cJSON_CreateObject();
    cJSON_AddStringToObject(root_doc, "schema", npm ? "vt.npm-verify/1" : "vt.wheel-verify/1");
    cJSON *a = cJSON_AddObjectToObject(root_doc, npm ? "tarball" : "wheel");
    vt_tool_json_text(a, "path", r->file);
    cJSON_AddStringToObject(a, "sha256", r->sha256.hex);
    if (npm) {
        if (r->computed_integrity) /* vt's own base64 */
            cJSON_AddStringToObject(a, "integrity", r->computed_integrity);
        else
            cJSON_AddNullToObject(a, "integrity");
        cJSON *l = cJSON_AddObjectToObject(root_doc, "lock");
        vt_tool_json_text(l, "path", lock);
        vt_tool_json_text(l, "name", name);
        vt_tool_json_text(l, "integrity", r->integrity);
        vt_tool_json_text(root_doc, "root", root);
        cJSON *lo = cJSON_AddArrayToObject(root_doc, "loaded");
        for (int i = 0; lo && i < n_loaded; i++) {
            cJSON *o = cJSON_CreateObject();
            cJSON_AddItemToArray(lo, o);
            vt_tool_json_text(o, "path", loaded[i]);
        }
        cJSON_AddNumberToObject(root_doc, "members_checked", r->members_checked);
    } else {
        vt_tool_json_text(root_doc, "installed", installed);
        cJSON_AddNumberToObject(root_doc, "members_checked", r->members_checked);
        if (installed)
            cJSON_AddNumberToObject(root_doc, "installed_checked", r->installed_checked);
        else
            cJSON_AddNullToObject(root_doc, "installed_checked");
    }
    add_lines(root_doc, "notes", r->notes, r->n_notes);
    add_lines(root_doc, "problems", r->problems, r->n_problems);
    cJSON_AddBoolToObject(root_doc, "verified", r->verified);
    return vt_tool_json_print(root_doc, fail0);
}

/* verify-imports --json: what the text prints, from the same report
 * (vt.imports-verify/1). 0, or -1 out of memory (nothing printed). */
static int imports_json(const char *path, const vt_imports_report *r)
{
    const unsigned long fail0 = vt_tool_json_begin();
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "schema", "vt.imports-verify/1");
    vt_tool_json_text(root, "imports", path);
    cJSON_AddNumberToObject(root, "modules", r->modules);
    cJSON_AddNumberToObject(root, "objects", r->objects);
    cJSON_AddNumberToObject(root, "files_verified", r->verified);
    cJSON *d = cJSON_AddArrayToObject(root, "distributions");
    for (int i = 0; d && i < r->n_dists; i++) {
        const vt_imports_dist *e = &r->dist_entries[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToArray(d, o);
        vt_tool_json_text(o, "name", e->name);
        vt_tool_json_text(o, "version", e->version);
        vt_tool_json_text(o, "record", e->record);
        cJSON_AddStringToObject(o, "record_sha256", e->record_sha256.hex);
    }
    cJSON *rt = cJSON_AddArrayToObject(root, "runtime");
    for (int i = 0; rt && i < r->n_outside; i++) {
        const vt_imports_outside *e = &r->outside_entries[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToArray(rt, o);
        cJSON_AddStringToObject(o, "kind", e->object ? "object" : "module");
        vt_tool_json_text(o, "path", e->path);
        cJSON_AddStringToObject(o, "sha256", e->sha256.hex);
        cJSON_AddBoolToObject(o, "in_site", e->in_site);
    }
    add_lines(root, "problems", r->problems, r->n_problems);
    cJSON_AddBoolToObject(root, "verified", r->ok);
    return vt_tool_json_print(root, fail0);
}

static int cmd_verify_imports(int argc, char **argv)
{
    const char *path = NULL;
    int json = 0;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "vt provenance verify-imports: option '%s': expected --json\n", argv[i]);
            return 2;
        } else if (argv[i][0] == '-' || path) {
            return usage_error("verify-imports: expected one IMPORTS.json");
        } else {
            path = argv[i];
        }
    }
    if (!path)
        return usage_error("verify-imports: expected one IMPORTS.json");
    vt_error err;
    vt_error_clear(&err);
    vt_imports_report r;
    if (vt_imports_verify(path, &r, &err) != VT_OK)
        return fail(&err);
    if (json) {
        if (imports_json(path, &r)) {
            vt_imports_report_free(&r);
            fprintf(stderr, "vt provenance verify-imports: --json: out of memory\n");
            return 2;
        }
    } else {
        printf("imports %s\n  modules %d, objects %d: %d verified against a RECORD, %d from outside every "
               "distribution (the runtime, unverified), %d problem%s\n",
               path, r.modules, r.objects, r.verified, r.n_outside, r.n_problems, r.n_problems == 1 ? "" : "s");
        for (int i = 0; i < r.n_dists; i++)
            printf("  distribution %s\n", r.dists[i]);
        for (int i = 0; i < r.n_outside; i++)
            printf("  runtime %s\n", r.outside[i]);
        for (int i = 0; i < r.n_problems; i++)
            printf("  PROBLEM: %s\n", r.problems[i]);
        if (r.ok)
            printf("verified\n");
    }
    int rc = r.ok ? 0 : 1;
    if (rc)
        fprintf(stderr, "vt provenance: %s: verification failed: %s%s\n", path, r.problems[0],
                r.n_problems < 2 ? "" : json ? " (and more, in the JSON)" : " (and more, above)");
    vt_imports_report_free(&r);
    return rc;
}

static int cmd_verify_wheel(int argc, char **argv)
{
    const char *wheel = NULL, *installed = NULL;
    int json = 0;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--installed") == 0) {
            if (installed) { /* one line, as every refusal of an option's value */
                fprintf(stderr, "vt provenance: --installed: expected the option once (given twice)\n");
                return 2;
            }
            if (i + 1 >= argc)
                return usage_error("--installed: expected a directory");
            installed = argv[++i];
        } else if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "vt provenance verify-wheel: option '%s': expected --installed or --json\n", argv[i]);
            return 2;
        } else if (wheel) {
            return usage_error("verify-wheel: expected one WHEEL");
        } else {
            wheel = argv[i];
        }
    }
    if (!wheel)
        return usage_error("verify-wheel: expected WHEEL");
    vt_error err;
    vt_error_clear(&err);
    vt_package_report r;
    if (vt_package_verify_wheel(wheel, installed, &r, &err) != VT_OK)
        return fail(&err);
    int rc;
    if (!json) {
        rc = print_report(&r);
    } else if (report_json(&r, installed, NULL, NULL, NULL, NULL, 0)) {
        fprintf(stderr, "vt provenance verify-wheel: --json: out of memory\n");
        rc = 2;
    } else {
        rc = report_verdict(&r, 1);
    }
    vt_package_report_free(&r);
    return rc;
}

static int cmd_verify_npm(int argc, char **argv)
{
    const char *tarball = NULL, *lock = NULL, *name = NULL, *root = NULL;
    const char **loaded = calloc((size_t)argc + 1, sizeof *loaded);
    int n_loaded = 0, in_loaded = 0, json = 0;
    if (!loaded)
        return usage_error("out of memory");
    int rc = -1;
    for (int i = 0; i < argc && rc < 0; i++) {
        const char *a = argv[i];
        int is_opt = a[0] == '-' && a[1];
        if (is_opt)
            in_loaded = 0;
        if (strcmp(a, "--lock") == 0 || strcmp(a, "--name") == 0 || strcmp(a, "--root") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "vt provenance verify-npm: %s: expected a value\n", a);
                rc = 2;
                break;
            }
            const char **dst = a[2] == 'l' ? &lock : a[2] == 'n' ? &name : &root;
            if (*dst) {
                fprintf(stderr, "vt provenance verify-npm: %s '%s': expected the option once (given twice)\n", a,
                        argv[i + 1]);
                rc = 2;
                break;
            }
            *dst = argv[++i];
        } else if (strcmp(a, "--loaded") == 0) {
            in_loaded = 1;
        } else if (strcmp(a, "--json") == 0) {
            json = 1;
        } else if (is_opt) {
            fprintf(stderr, "vt provenance verify-npm: option '%s': expected --lock, --name, --root, --loaded or "
                    "--json\n", a);
            rc = 2;
        } else if (in_loaded) {
            loaded[n_loaded++] = a;
        } else if (tarball) {
            rc = usage_error("verify-npm: expected one TARBALL");
        } else {
            tarball = a;
        }
    }
    if (rc < 0 && (!tarball || !lock || !name))
        rc = usage_error("verify-npm: expected TARBALL, --lock LOCK and --name NAME");
    if (rc < 0 && n_loaded && !root)
        rc = usage_error("verify-npm: --loaded needs --root DIR (the unpacked package)");
    if (rc < 0) {
        vt_error err;
        vt_error_clear(&err);
        vt_package_report r;
        if (vt_package_verify_npm(tarball, lock, name, root, loaded, n_loaded, &r, &err) != VT_OK) {
            rc = fail(&err);
        } else {
            if (!json) {
                rc = print_report(&r);
            } else if (report_json(&r, NULL, lock, name, root, loaded, n_loaded)) {
                fprintf(stderr, "vt provenance verify-npm: --json: out of memory\n");
                rc = 2;
            } else {
                rc = report_verdict(&r, 1);
            }
            vt_package_report_free(&r);
        }
    }
    free(loaded);
    return rc;
}

int vt_cmd_provenance(int argc, char **argv)
{
    if (argc < 2)
        return usage_error("expected a subcommand");
    const char *sub = argv[1];
    if (strcmp(sub, "--help") == 0 || strcmp(sub, "-h") == 0) {
        fputs(usage_text, stdout);
        return 0;
    }
    if (strcmp(sub, "manifest") == 0) {
        if (argc >= 3 && strcmp(argv[2], "make") == 0)
            return cmd_manifest_make(argc - 3, argv + 3);
        if (argc >= 3 && strcmp(argv[2], "verify") == 0)
            return cmd_manifest_verify(argc - 3, argv + 3);
        return usage_error("manifest: expected make or verify");
    }
    if (strcmp(sub, "identity") == 0)
        return cmd_identity(argc - 2, argv + 2);
    if (strcmp(sub, "verify-wheel") == 0)
        return cmd_verify_wheel(argc - 2, argv + 2);
    if (strcmp(sub, "verify-imports") == 0)
        return cmd_verify_imports(argc - 2, argv + 2);
    if (strcmp(sub, "verify-npm") == 0)
        return cmd_verify_npm(argc - 2, argv + 2);
    fprintf(stderr, "vt provenance: unknown subcommand '%s': expected manifest, identity, verify-wheel, "
            "verify-npm or verify-imports\n", sub);
    return 2;
}
