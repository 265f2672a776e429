/* vt provenance verify-imports (provenance/imports.c) with the collector the
 * transformers adapter runs in its process (oracle/transformers/vt_imports.py):
 * a small distribution installed into a temporary prefix, imported by a real
 * python3 (-I -S: no site hooks, so the imports are the test's own; -B: no
 * byte code written into the source tree, which PYTHONDONTWRITEBYTECODE
 * cannot ask under -I); then a tampered byte, a missing RECORD entry, a
 * module from outside every distribution (the runtime: listed, never
 * counted verified; of a required package: a problem), a required package
 * never imported, and malformed input; and --json, the text's report. */
#include <criterion/criterion.h>

#include "tests/support/vt_test.h"

#include "common/vt_json.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char tmpdir[64];

/* The prefix: site/foo (two modules) installed as foo 1.0 with its RECORD,
 * and outside/helper.py in no distribution. omit: a RECORD path left out. */
static void install(const char *omit)
{
    char out[512], err[2048];
    int rc = vt_test_sh(tmpdir, out, sizeof out, err, sizeof err,
                        "cd '%s' && (rm -rf site outside && mkdir -p site/foo site/foo-1.0.dist-info outside && "
                        "printf 'X = 1\\n' > site/foo/__init__.py && printf 'Y = 2\\n' > site/foo/bar.py && "
                        "printf 'H = 3\\n' > outside/helper.py && printf 'Name: foo\\n' > site/foo-1.0.dist-info/METADATA && "
                        "python3 -c \"\n"
                        "import base64, hashlib, os\n"
                        "rows = []\n"
                        "for p in ['foo/__init__.py', 'foo/bar.py', 'foo-1.0.dist-info/METADATA']:\n"
                        "    if p == '%s': continue\n"
                        "    b = open('site/' + p, 'rb').read()\n"
                        "    d = base64.urlsafe_b64encode(hashlib.sha256(b).digest()).rstrip(b'=').decode()\n"
                        "    rows.append('%%s,sha256=%%s,%%d' %% (p, d, len(b)))\n"
                        "rows.append('foo-1.0.dist-info/RECORD,,')\n"
                        "open('site/foo-1.0.dist-info/RECORD', 'w').write('\\\\n'.join(rows) + '\\\\n')\n\")",
                        tmpdir, omit ? omit : "");
    cr_assert_eq(rc, 0, "%s", err);
}

/* Imports foo, foo.bar, helper (and extra, if not "") in a fresh python3 and writes NAME. */
static void collect_extra(const char *name, const char *required, const char *extra);
static void collect(const char *name, const char *required) { collect_extra(name, required, ""); }

static void collect_extra(const char *name, const char *required, const char *extra)
{
    char out[512], err[2048];
    int rc = vt_test_sh(tmpdir, out, sizeof out, err, sizeof err,
                        "cd '%s' && (rm -f %s && python3 -B -I -S -c \"\n"
                        "import sys\n"
                        "sys.path[:0] = ['site', 'outside', '%s/oracle/transformers']\n"
                        "import foo, foo.bar, helper, vt_imports%s\n"
                        "vt_imports.write('%s', required=[%s])\n\")",
                        tmpdir, name, VT_SOURCE_DIR, extra, name, required);
    cr_assert_eq(rc, 0, "%s", err);
}

static int verify(const char *name, char *out, size_t cap, char *err, size_t ecap)
{
    return vt_test_sh(tmpdir, out, cap, err, ecap, "cd '%s' && '%s' provenance verify-imports %s", tmpdir, VT_BIN, name);
}

Test(imports, a_real_process_against_its_distributions_records, .timeout = 60)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/vt-imports-XXXXXX");
    cr_assert_not_null(mkdtemp(tmpdir));
    static char out[65536], err[4096];
    install(NULL);
    collect("clean.json", "'foo'");
    int rc = verify("clean.json", out, sizeof out, err, sizeof err);
    cr_assert_eq(rc, 0, "%s%s", out, err);
    cr_assert(strstr(out, ": 2 verified against a RECORD,"), "%s", out);
    cr_assert(strstr(out, "  distribution foo 1.0 RECORD sha256 "), "%s", out);
    cr_assert(strstr(out, "/outside/helper.py sha256 ") && strstr(out, "  runtime module "), "%s", out);
    cr_assert(strstr(out, "\nverified\n"), "%s", out);

    /* A byte changed after the import. */
    char cmd[256];
    snprintf(cmd, sizeof cmd, "printf 'Y = 3\\n' > '%s/site/foo/bar.py'", tmpdir);
    cr_assert_eq(system(cmd), 0);
    rc = verify("clean.json", out, sizeof out, err, sizeof err);
    cr_assert_eq(rc, 1, "%s", out);
    cr_assert(strstr(out, "PROBLEM: module ") && strstr(out, "/site/foo/bar.py: sha256 ") &&
                  strstr(out, ": foo 1.0's RECORD lists "),
              "%s", out);
    cr_assert(strstr(err, "verification failed: module ") && !strchr(strchr(err, '\n') + 1, '\n'), "%s", err);

    /* RECORD does not list foo/bar.py. */
    install("foo/bar.py");
    collect("omit.json", "'foo'");
    rc = verify("omit.json", out, sizeof out, err, sizeof err);
    cr_assert_eq(rc, 1, "%s", out);
    cr_assert(strstr(out, "/site/foo/bar.py of foo.bar: in no distribution's RECORD"), "%s", out);

    /* helper comes from outside every distribution: listed as the runtime
     * above; named as required, it is a problem. */
    install(NULL);
    collect("req.json", "'foo', 'helper'");
    rc = verify("req.json", out, sizeof out, err, sizeof err);
    cr_assert_eq(rc, 1, "%s", out);
    cr_assert(strstr(out, "/outside/helper.py of helper: in no distribution's RECORD: expected every required "
                          "package's file covered"),
              "%s", out);
    cr_assert(strstr(out, ": 2 verified against a RECORD,"), "%s", out);

    /* A file of the site directory that no distribution owns and no
     * required package holds (a virtualenv's _virtualenv.py): recorded as
     * the runtime, saying where it lies, not a problem and not verified. */
    snprintf(cmd, sizeof cmd, "printf 'Z = 4\\n' > '%s/site/_shim.py'", tmpdir);
    cr_assert_eq(system(cmd), 0);
    collect_extra("shim.json", "'foo'", ", _shim");
    rc = verify("shim.json", out, sizeof out, err, sizeof err);
    cr_assert_eq(rc, 0, "%s%s", out, err);
    cr_assert(strstr(out, "/site/_shim.py sha256 ") && strstr(out, " (in a site directory, in no distribution's RECORD)"),
              "%s", out);
    cr_assert(strstr(out, ": 2 verified against a RECORD,"), "%s", out);

    /* A required package of which nothing was imported: the process did
     * not run it, whatever else verifies. */
    collect("absent.json", "'foo', 'baz'");
    rc = verify("absent.json", out, sizeof out, err, sizeof err);
    cr_assert_eq(rc, 1, "%s", out);
    cr_assert(strstr(out, "required baz: no module of it imported: expected the process to have run it"), "%s", out);

    /* Malformed input: exit 2, one line. */
    snprintf(cmd, sizeof cmd, "printf '{\"schema\":\"vt.imports/9\"}' > '%s/bad.json'", tmpdir);
    cr_assert_eq(system(cmd), 0);
    rc = verify("bad.json", out, sizeof out, err, sizeof err);
    cr_assert_eq(rc, 2);
    cr_assert_str_eq(err, "vt provenance: bad.json: schema: expected \"vt.imports/1\"\n");
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    cr_assert_eq(system(cmd), 0);
}

/* The text verify-imports prints (stdout), made again from the values of
 * its --json document. */
static void imports_text_from_json(const cJSON *doc, char *out, size_t cap)
{
    size_t k = 0;
#define ADD(...) (k += (size_t)snprintf(out + k, k < cap ? cap - k : 0, __VA_ARGS__))
    const cJSON *x, *p = vt_test_get(doc, "problems");
    int n = cJSON_GetArraySize(p);
    ADD("imports %s\n  modules %d, objects %d: %d verified against a RECORD, %d from outside every distribution (the "
        "runtime, unverified), %d problem%s\n",
        vt_test_get(doc, "imports")->valuestring, vt_test_get(doc, "modules")->valueint,
        vt_test_get(doc, "objects")->valueint, vt_test_get(doc, "files_verified")->valueint,
        cJSON_GetArraySize(vt_test_get(doc, "runtime")), n, n == 1 ? "" : "s");
    cJSON_ArrayForEach(x, vt_test_get(doc, "distributions"))
        ADD("  distribution %s %s RECORD sha256 %s\n", vt_test_get(x, "name")->valuestring,
            vt_test_get(x, "version")->valuestring, vt_test_get(x, "record_sha256")->valuestring);
    cJSON_ArrayForEach(x, vt_test_get(doc, "runtime"))
        ADD("  runtime %s %s sha256 %s%s\n", vt_test_get(x, "kind")->valuestring, vt_test_get(x, "path")->valuestring,
            vt_test_get(x, "sha256")->valuestring,
            cJSON_IsTrue(vt_test_get(x, "in_site")) ? " (in a site directory, in no distribution's RECORD)" : "");
    cJSON_ArrayForEach(x, p)
        ADD("  PROBLEM: %s\n", x->valuestring);
    if (cJSON_IsTrue(vt_test_get(doc, "verified")))
        ADD("verified\n");
#undef ADD
    cr_assert_lt(k, cap, "the text from the JSON: too long");
}

/* verify-imports NAME as text and with --json: the same exit (want), the
 * JSON of vt.imports-verify/1 with verified as the exit says, the text made
 * again from it equal to the text run's. The document. */
static cJSON *verify_both(int want, const char *name)
{
    static char text[1 << 16], json[1 << 17], e[4096], again[1 << 16];
    int rt = verify(name, text, sizeof text, e, sizeof e);
    cr_assert_eq(rt, want, "%s: exit %d: %s%s", name, rt, text, e);
    int rj = vt_test_sh(tmpdir, json, sizeof json, e, sizeof e, "cd '%s' && '%s' provenance verify-imports %s --json",
                        tmpdir, VT_BIN, name);
    cr_assert_eq(rj, rt, "%s --json: exit %d, the text's %d: %s", name, rj, rt, e);
    const char *nl = strchr(e, '\n');
    cr_assert(rj == 0 ? !e[0] : strstr(e, ": verification failed: ") && nl && !nl[1], "%s", e);
    vt_error err;
    cJSON *doc = vt_json_parse(json, strlen(json), "stdout", &err);
    cr_assert_not_null(doc, "%s:\n%s", err.msg, json);
    cr_assert_str_eq(vt_test_get(doc, "schema")->valuestring, "vt.imports-verify/1");
    cr_assert_str_eq(vt_test_get(doc, "imports")->valuestring, name);
    cr_assert_eq(cJSON_IsTrue(vt_test_get(doc, "verified")), want == 0);
    imports_text_from_json(doc, again, sizeof again);
    cr_assert_str_eq(text, again, "the text from the JSON's values");
    return doc;
}

/* The runtime entry of the file whose real path ends in tail, or NULL. */
static const cJSON *runtime_entry(const cJSON *doc, const char *tail)
{
    const cJSON *x;
    cJSON_ArrayForEach(x, vt_test_get(doc, "runtime"))
    {
        const char *p = vt_test_get(x, "path")->valuestring;
        if (strlen(p) >= strlen(tail) && strcmp(p + strlen(p) - strlen(tail), tail) == 0)
            return x;
    }
    return NULL;
}

/* vt provenance verify-imports --json (vt.imports-verify/1): the text's
 * counts, distributions, runtime files and problems from the same report,
 * field by field; exit 1 still with the document (verified false), exit 2
 * with none. */
Test(imports, verify_json_is_the_texts_report, .timeout = 60)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/vt-imports-XXXXXX");
    cr_assert_not_null(mkdtemp(tmpdir));
    char real[PATH_MAX], want[PATH_MAX + 64];
    cr_assert_not_null(realpath(tmpdir, real));
    install(NULL);
    collect("clean.json", "'foo'");
    cJSON *doc = verify_both(0, "clean.json");
    cr_assert_eq(vt_test_get(doc, "files_verified")->valueint, 2);
    const cJSON *d = vt_test_get(doc, "distributions");
    cr_assert_eq(cJSON_GetArraySize(d), 1);
    cr_assert_str_eq(vt_test_get(d->child, "name")->valuestring, "foo");
    cr_assert_str_eq(vt_test_get(d->child, "version")->valuestring, "1.0");
    snprintf(want, sizeof want, "%s/site/foo-1.0.dist-info/RECORD", real);
    cr_assert_str_eq(vt_test_get(d->child, "record")->valuestring, want);
    static char out[4096], e[4096];
    cr_assert_eq(vt_test_sh(tmpdir, out, sizeof out, e, sizeof e, "sha256sum '%s'", want), 0, "%s", e);
    cr_assert(strncmp(out, vt_test_get(d->child, "record_sha256")->valuestring, 64) == 0, "%s", out);
    const cJSON *h = runtime_entry(doc, "/outside/helper.py");
    cr_assert_not_null(h);
    cr_assert_str_eq(vt_test_get(h, "kind")->valuestring, "module");
    cr_assert(cJSON_IsFalse(vt_test_get(h, "in_site")));
    cr_assert_eq(vt_test_sh(tmpdir, out, sizeof out, e, sizeof e, "sha256sum '%s/outside/helper.py'", tmpdir), 0);
    cr_assert(strncmp(out, vt_test_get(h, "sha256")->valuestring, 64) == 0, "%s", out);
    cr_assert_null(runtime_entry(doc, "/site/foo/bar.py"), "a verified file listed as the runtime");
    cJSON_Delete(doc);

    /* A file of the site directory no distribution owns: in_site. */
    char cmd[256];
    snprintf(cmd, sizeof cmd, "printf 'Z = 4\\n' > '%s/site/_shim.py'", tmpdir);
    cr_assert_eq(system(cmd), 0);
    collect_extra("shim.json", "'foo'", ", _shim");
    doc = verify_both(0, "shim.json");
    h = runtime_entry(doc, "/site/_shim.py");
    cr_assert(h && cJSON_IsTrue(vt_test_get(h, "in_site")));
    cJSON_Delete(doc);

    /* helper required: a file outside every RECORD is a problem. */
    collect("req.json", "'foo', 'helper'");
    doc = verify_both(1, "req.json");
    const cJSON *p = vt_test_get(doc, "problems");
    cr_assert_eq(cJSON_GetArraySize(p), 1);
    cr_assert(strstr(p->child->valuestring, "/outside/helper.py of helper: in no distribution's RECORD"), "%s",
              p->child->valuestring);
    cr_assert_null(runtime_entry(doc, "/outside/helper.py"));
    cJSON_Delete(doc);

    /* Malformed input: exit 2, one line, nothing on stdout. */
    snprintf(cmd, sizeof cmd, "printf '{\"schema\":\"vt.imports/9\"}' > '%s/bad.json'", tmpdir);
    cr_assert_eq(system(cmd), 0);
    int rc = vt_test_sh(tmpdir, out, sizeof out, e, sizeof e, "cd '%s' && '%s' provenance verify-imports bad.json --json",
                        tmpdir, VT_BIN);
    cr_assert_eq(rc, 2);
    cr_assert_str_eq(out, "");
    cr_assert_str_eq(e, "vt provenance: bad.json: schema: expected \"vt.imports/1\"\n");
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    cr_assert_eq(system(cmd), 0);
}
