/* vt provenance verify-imports (provenance/imports.c) with the collector the
 * transformers adapter runs in its process (oracle/transformers/vt_imports.py):
 * a small distribution installed into a temporary prefix, imported by a real
 * python3 (-I -S: no site hooks, so the imports are the test's own; -B: no
 * byte code written into the source tree, which PYTHONDONTWRITEBYTECODE
 * cannot ask under -I); then a tampered byte, a missing RECORD entry, a
 * module from outside every distribution (the runtime: listed, never
 * counted verified; of a required package: a problem), a required package
 * never imported, and malformed input. */
#include <criterion/criterion.h>

#include "tests/support/vt_test.h"

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
