/* Helpers the Criterion suites share: files, JSON members, and running a
 * command with its output kept. Header-only (static inline) because each
 * suite is its own program (CMakeLists.txt: one executable per
 * tests/test_*.c). */
#ifndef VT_TEST_H
#define VT_TEST_H

#include <criterion/criterion.h>

#include "common/vt_json.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <linux/capability.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* A float's bits and back (bit-identity checks). */
static inline uint32_t vt_test_bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static inline float vt_test_float_of(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* The whole file, NUL-terminated (len: its size), or NULL if unreadable. */
static inline char *vt_test_slurp(const char *path, size_t *len)
{
    if (len)
        *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    cr_assert_not_null(s);
    cr_assert_eq(fread(s, 1, (size_t)n, f), (size_t)n);
    s[n] = '\0';
    fclose(f);
    if (len)
        *len = (size_t)n;
    return s;
}

static inline void vt_test_spit(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "%s", path);
    cr_assert_eq(fwrite(data, 1, n, f), n);
    cr_assert_eq(fclose(f), 0);
}

/* Whether anything is at path (a dangling symlink counts). */
static inline int vt_test_exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

/* A child process's exit status, from system() or pclose(). A sanitizer's
 * report in it fails the test: its exit status under the sanitizer build
 * (86 ASan and LeakSanitizer, 87 UBSan: CMakeLists.txt; no tool of vt's
 * exits so) and, where the caller has it, its message in output. */
enum { VT_TEST_ASAN_EXIT = 86, VT_TEST_UBSAN_EXIT = 87 };
static inline int vt_test_exit(int st, const char *cmd, const char *output)
{
    cr_assert(WIFEXITED(st), "%s: did not exit (status %d)", cmd, st);
    int rc = WEXITSTATUS(st);
    cr_assert(rc != VT_TEST_ASAN_EXIT && rc != VT_TEST_UBSAN_EXIT, "%s: exit %d, a sanitizer's report:\n%s", cmd, rc,
              output ? output : "(output not kept)");
    if (output)
        cr_assert(!strstr(output, "Sanitizer") && !strstr(output, "runtime error:"), "%s:\n%s", cmd, output);
    return rc;
}

/* Runs the command in a shell, stdout and stderr kept in out and err (via
 * files in dir); its exit status. A sanitizer report in the child fails
 * the test, whatever it exited with (vt_test_exit). */
static inline int vt_test_sh(const char *dir, char *out, size_t out_cap, char *err, size_t err_cap, const char *fmt,
                             ...) __attribute__((format(printf, 6, 7)));
static inline int vt_test_sh(const char *dir, char *out, size_t out_cap, char *err, size_t err_cap, const char *fmt,
                             ...)
{
    char cmd[4096], full[4400], p[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    snprintf(full, sizeof full, "%s >'%s/.stdout' 2>'%s/.stderr'", cmd, dir, dir);
    int st = system(full);
    snprintf(p, sizeof p, "%s/.stdout", dir);
    char *s = vt_test_slurp(p, NULL);
    snprintf(out, out_cap, "%s", s ? s : "");
    free(s);
    snprintf(p, sizeof p, "%s/.stderr", dir);
    s = vt_test_slurp(p, NULL);
    snprintf(err, err_cap, "%s", s ? s : "");
    free(s);
    return vt_test_exit(st, cmd, err);
}

/* A suite's env with dir, cmd_out and cmd_err members. */
/* Root ignores file and directory permissions while it holds
 * CAP_DAC_OVERRIDE (and CAP_DAC_READ_SEARCH, CAP_FOWNER): a test that needs
 * a permission to hold gives them up, so that it runs, and means the same,
 * as root (CI) and as a user. Criterion runs each test in its own process. */
static inline void vt_test_give_up_dac_override(void)
{
    struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
    struct __user_cap_data_struct d[2];
    cr_assert_eq(syscall(SYS_capget, &h, d), 0, "capget: %s", strerror(errno));
    const uint32_t drop = 1u << CAP_DAC_OVERRIDE | 1u << CAP_DAC_READ_SEARCH | 1u << CAP_FOWNER;
    d[0].effective &= ~drop;
    d[0].permitted &= ~drop;
    d[0].inheritable &= ~drop;
    cr_assert_eq(syscall(SYS_capset, &h, d), 0, "capset: %s", strerror(errno));
}

#define VT_TEST_SH(e, ...) \
    vt_test_sh((e)->dir, (e)->cmd_out, sizeof (e)->cmd_out, (e)->cmd_err, sizeof (e)->cmd_err, __VA_ARGS__)

static inline cJSON *vt_test_load_json(const char *path)
{
    size_t n;
    char *s = vt_test_slurp(path, &n);
    cr_assert_not_null(s, "%s", path);
    cJSON *j = cJSON_ParseWithLength(s, n);
    cr_assert_not_null(j, "%s: not JSON", path);
    free(s);
    return j;
}

/* The member key of o, which must be there. */
static inline const cJSON *vt_test_get(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    cr_assert_not_null(v, "member %s missing", key);
    return v;
}

/* A --json command's stdout: one JSON document whose schema member is
 * schema (the tests of every table's --json). */
static inline cJSON *vt_test_json_doc(const char *out, const char *schema)
{
    vt_error err;
    vt_error_clear(&err);
    cJSON *doc = vt_json_parse(out, strlen(out), "stdout", &err); /* vt's strict reader */
    cr_assert_not_null(doc, "%s:\n%.2000s", err.msg, out);
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(doc, "schema");
    cr_assert(cJSON_IsString(s) && strcmp(s->valuestring, schema) == 0, "schema: expected %s:\n%.2000s", schema, out);
    return doc;
}

/* The number member key of o, which must be there. */
static inline double vt_test_num(const cJSON *o, const char *key)
{
    const cJSON *v = vt_test_get(o, key);
    cr_assert(cJSON_IsNumber(v), "member %s: expected a number", key);
    return v->valuedouble;
}

/* The line (printed from a JSON document's values by the table's own
 * format) is a whole line of the text table. */
static inline void vt_test_expect_line(const char *table, const char *line)
{
    size_t n = strlen(line) + 3;
    char *want = malloc(n);
    cr_assert_not_null(want);
    snprintf(want, n, "\n%s\n", line);
    int found = strstr(table, want) || strncmp(table, want + 1, n - 2) == 0;
    free(want);
    cr_assert(found, "the table lacks the JSON's line\n%s\n:\n%s", line, table);
}

/* A tiny model fixture made by `vt fixture make` (VT_BIN) in a directory
 * of its own; removed with vt_test_model_remove. */
typedef struct vt_test_model {
    char dir[64];
    char path[128];
} vt_test_model;

static inline vt_test_model vt_test_model_make(const char *arch, const char *weights)
{
    vt_test_model f;
    snprintf(f.dir, sizeof f.dir, "/tmp/vt-%s-XXXXXX", arch);
    cr_assert_not_null(mkdtemp(f.dir), "mkdtemp");
    snprintf(f.path, sizeof f.path, "%s/tiny.gguf", f.dir);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "'%s' fixture make --arch %s --preset tiny --weights %s --seed 1 -o '%s' 2>&1", VT_BIN,
             arch, weights, f.path);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p, "popen %s", cmd);
    char out[2048];
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    cr_assert_eq(vt_test_exit(st, cmd, out), 0, "%s: status %d: %s", cmd, st, out);
    return f;
}

static inline void vt_test_model_remove(vt_test_model *f)
{
    unlink(f->path);
    rmdir(f->dir);
}

#endif
