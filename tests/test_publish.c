/* Safe publication: no-clobber, overwrite, aliasing refusals, all-or-nothing
 * groups under a failure injected at every step, SIGKILL at random moments
 * (the target is never partial), and sweeping a killed run's leftovers. */
#include <criterion/criterion.h>

#include "common/vt_publish.h"
#include "common/vt_rng.h"
#include "tests/support/vt_test.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- helpers ---- */

static char tdir[1024];

static void make_tdir(void)
{
    const char *base = getenv("TMPDIR");
    snprintf(tdir, sizeof tdir, "%s/vt-publish-XXXXXX", base && *base ? base : "/tmp");
    cr_assert_not_null(mkdtemp(tdir), "mkdtemp: %s", strerror(errno));
}

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *f)
{
    (void)st, (void)f;
    return flag == FTW_DP ? rmdir(p) : unlink(p);
}

static void remove_tdir(void)
{
    if (tdir[0])
        nftw(tdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

TestSuite(publish, .init = make_tdir, .fini = remove_tdir);

/* tdir/name in a static rotating buffer (several live at once). */
static const char *at(const char *name)
{
    static char bufs[8][1400];
    static int k;
    char *b = bufs[k++ % 8];
    snprintf(b, sizeof bufs[0], "%s/%s", tdir, name);
    return b;
}

static void put(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "%s: %s", path, strerror(errno));
    cr_assert_eq(fwrite(data, 1, n, f), n);
    cr_assert_eq(fclose(f), 0);
}

static void put_str(const char *path, const char *s) { put(path, s, strlen(s)); }

/* Whole file, or NULL when absent; *n its size. */
static unsigned char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, len = 0;
    unsigned char *b = malloc(cap);
    size_t r;
    while ((r = fread(b + len, 1, cap - len, f)) > 0) {
        len += r;
        if (len == cap)
            b = realloc(b, cap *= 2);
    }
    fclose(f);
    *n = len;
    return b;
}

static int has_content(const char *path, const void *data, size_t n)
{
    size_t len;
    unsigned char *b = slurp(path, &len);
    int ok = b && len == n && (n == 0 || !memcmp(b, data, n));
    free(b);
    return ok;
}

static int is_str(const char *path, const char *s) { return has_content(path, s, strlen(s)); }

static int cmp_name(const void *x, const void *y) { return strcmp(x, y); }

/* Entries of tdir (not . and ..), sorted and joined by ' '. */
static void listing(char *out, size_t cap)
{
    char names[64][256];
    int k = 0;
    DIR *d = opendir(tdir);
    cr_assert_not_null(d);
    struct dirent *e;
    while ((e = readdir(d)) && k < 64)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            snprintf(names[k++], 256, "%s", e->d_name);
    closedir(d);
    qsort(names, (size_t)k, sizeof names[0], cmp_name);
    out[0] = '\0';
    for (int i = 0; i < k; i++) {
        if (i)
            strncat(out, " ", cap - strlen(out) - 1);
        strncat(out, names[i], cap - strlen(out) - 1);
    }
}

static void assert_listing(const char *expected)
{
    char got[8192];
    listing(got, sizeof got);
    cr_assert_str_eq(got, expected, "directory holds [%s], expected [%s]", got, expected);
}

static int publish_one(const char *out, const char *content, int overwrite, const char *const *inputs, int n_inputs,
                       vt_error *err)
{
    vt_publish_item it = {.path = out, .data = content, .size = strlen(content)};
    vt_publish_opts o = {.overwrite = overwrite, .inputs = inputs, .n_inputs = n_inputs};
    return vt_publish_group(&it, 1, &o, err);
}

#define ASSERT_REFUSED(rc, err, needle, path)                                                                          \
    do {                                                                                                               \
        cr_assert_eq((rc), VT_EINPUT, "expected a refusal, got %d", (rc));                                             \
        cr_assert_not_null(strstr((err).msg, (needle)), "message [%s] lacks [%s]", (err).msg, (needle));              \
        cr_assert_not_null(strstr((err).msg, (path)), "message [%s] does not name %s", (err).msg, (path));            \
        cr_assert_not_null(strstr((err).msg, "expected"), "message [%s] says nothing expected", (err).msg);           \
    } while (0)

/* ---- single files ---- */

Test(publish, single_file)
{
    vt_error err;
    const char *out = at("out.bin");
    cr_assert_eq(vt_publish_file(out, "hello", 5, 0, &err), VT_OK, "%s", err.msg);
    cr_assert(is_str(out, "hello"));
    cr_assert_str_eq(err.msg, "");
    mode_t mask = umask(0);
    umask(mask);
    struct stat st;
    cr_assert_eq(stat(out, &st), 0);
    cr_assert_eq(st.st_mode & 0777, 0644 & ~mask, "mode %o", (unsigned)(st.st_mode & 0777));
    assert_listing("out.bin");
    /* Empty content is a valid file. */
    cr_assert_eq(vt_publish_file(at("empty"), NULL, 0, 0, &err), VT_OK, "%s", err.msg);
    cr_assert(has_content(at("empty"), "", 0));
}

Test(publish, existing_output_refused_without_overwrite)
{
    vt_error err;
    const char *out = at("out.bin");
    put_str(out, "old content");
    int rc = vt_publish_file(out, "new", 3, 0, &err);
    ASSERT_REFUSED(rc, err, "output exists", out);
    cr_assert(is_str(out, "old content"));
    assert_listing("out.bin");
}

Test(publish, overwrite_replaces)
{
    vt_error err;
    const char *out = at("out.bin");
    put_str(out, "old content, longer than the new");
    cr_assert_eq(vt_publish_file(out, "new", 3, 1, &err), VT_OK, "%s", err.msg);
    cr_assert(is_str(out, "new"));
    assert_listing("out.bin");
    /* overwrite on an absent target is a plain publication. */
    cr_assert_eq(vt_publish_file(at("other"), "x", 1, 1, &err), VT_OK, "%s", err.msg);
    assert_listing("other out.bin");
}

Test(publish, missing_directory_refused)
{
    vt_error err;
    const char *out = at("no/such/dir/out.bin");
    int rc = vt_publish_file(out, "x", 1, 0, &err);
    ASSERT_REFUSED(rc, err, "expected an existing directory", out);
    rc = vt_publish_file(at("dir/"), "x", 1, 0, &err);
    ASSERT_REFUSED(rc, err, "names no file", "dir/");
    assert_listing("");
}

Test(publish, unwritable_directory_leaves_nothing)
{
    vt_test_give_up_dac_override(); /* means the same as root */
    vt_error err;
    cr_assert_eq(mkdir(at("ro"), 0555), 0);
    cr_assert_neq(access(at("ro"), W_OK), 0, "the directory is writable: the test would test nothing");
    int rc = vt_publish_file(at("ro/out"), "x", 1, 0, &err);
    ASSERT_REFUSED(rc, err, "expected a writable directory", "ro/out");
    chmod(at("ro"), 0755);
    assert_listing("ro");
}

/* ---- aliasing ---- */

Test(publish, output_equal_to_input_by_path)
{
    vt_error err;
    const char *p = at("model.gguf");
    put_str(p, "weights");
    const char *inputs[] = {at("other.txt"), p};
    int rc = publish_one(p, "capture", 1, inputs, 2, &err);
    ASSERT_REFUSED(rc, err, "same path as an input", p);
    cr_assert(is_str(p, "weights"));
    /* Also when the input does not exist yet. */
    const char *q = at("new.bin");
    const char *in2[] = {q};
    rc = publish_one(q, "x", 0, in2, 1, &err);
    ASSERT_REFUSED(rc, err, "same path as an input", q);
    /* Same file spelled differently ("dir/./name"). */
    const char *in3[] = {at("./model.gguf")};
    rc = publish_one(p, "x", 1, in3, 1, &err);
    ASSERT_REFUSED(rc, err, "by another path", p);
    assert_listing("model.gguf");
}

Test(publish, input_symlink_to_output)
{
    vt_error err;
    const char *out = at("out.bin"), *in = at("in.lnk");
    put_str(out, "old");
    cr_assert_eq(symlink("out.bin", in), 0);
    const char *inputs[] = {in};
    int rc = publish_one(out, "new", 1, inputs, 1, &err);
    ASSERT_REFUSED(rc, err, "(the input is a symlink)", out);
    cr_assert(is_str(out, "old"));
    /* A dangling input symlink to an output that does not exist yet. */
    const char *in2 = at("dangling.lnk");
    cr_assert_eq(symlink("future.bin", in2), 0);
    const char *inputs2[] = {in2};
    rc = publish_one(at("future.bin"), "new", 0, inputs2, 1, &err);
    ASSERT_REFUSED(rc, err, "(the input is a symlink)", "future.bin");
    assert_listing("dangling.lnk in.lnk out.bin");
}

Test(publish, output_symlink_to_input)
{
    vt_error err;
    const char *in = at("in.gguf"), *out = at("out.lnk");
    put_str(in, "weights");
    cr_assert_eq(symlink("in.gguf", out), 0);
    const char *inputs[] = {in};
    int rc = publish_one(out, "new", 1, inputs, 1, &err);
    ASSERT_REFUSED(rc, err, "is a symlink to input", out);
    cr_assert(is_str(in, "weights"));
    assert_listing("in.gguf out.lnk");
}

Test(publish, output_hard_link_to_input)
{
    vt_error err;
    const char *in = at("in.gguf"), *out = at("out.bin");
    put_str(in, "weights");
    cr_assert_eq(link(in, out), 0);
    const char *inputs[] = {in};
    int rc = publish_one(out, "new", 1, inputs, 1, &err);
    ASSERT_REFUSED(rc, err, "hard link to input", out);
    cr_assert(is_str(in, "weights"));
    assert_listing("in.gguf out.bin");
}

Test(publish, output_through_directory_symlink)
{
    vt_error err;
    cr_assert_eq(mkdir(at("real"), 0755), 0);
    cr_assert_eq(symlink("real", at("alias")), 0);
    const char *inputs[] = {at("real/x.bin")}; /* absent: compared by canonical path */
    int rc = publish_one(at("alias/x.bin"), "new", 0, inputs, 1, &err);
    ASSERT_REFUSED(rc, err, "by another path", "alias/x.bin");
    assert_listing("alias real");
}

Test(publish, outputs_aliasing_each_other)
{
    vt_error err;
    const char *a = at("a.bin"), *b = at("b.bin");
    vt_publish_item twice[2] = {{.path = a, .data = "1", .size = 1}, {.path = a, .data = "2", .size = 1}};
    int rc = vt_publish_group(twice, 2, NULL, &err);
    ASSERT_REFUSED(rc, err, "listed twice", a);
    assert_listing("");

    put_str(a, "old");
    cr_assert_eq(link(a, b), 0);
    vt_publish_item linked[2] = {{.path = a, .data = "1", .size = 1}, {.path = b, .data = "2", .size = 1}};
    vt_publish_opts o = {.overwrite = 1};
    rc = vt_publish_group(linked, 2, &o, &err);
    ASSERT_REFUSED(rc, err, "hard link to output", b);
    cr_assert(is_str(a, "old"));
    assert_listing("a.bin b.bin");
}

Test(publish, output_symlink_refused)
{
    vt_error err;
    const char *target = at("target.bin"), *out = at("out.lnk");
    put_str(target, "keep");
    cr_assert_eq(symlink("target.bin", out), 0);
    int rc = vt_publish_file(out, "new", 3, 1, &err);
    ASSERT_REFUSED(rc, err, "output is a symlink:", out);
    cr_assert(is_str(target, "keep"));
    /* A dangling one too: it would create a file elsewhere. */
    cr_assert_eq(symlink("nowhere.bin", at("dangling.lnk")), 0);
    rc = vt_publish_file(at("dangling.lnk"), "new", 3, 0, &err);
    ASSERT_REFUSED(rc, err, "output is a symlink:", "dangling.lnk");
    assert_listing("dangling.lnk out.lnk target.bin");
}

/* ---- writers ---- */

typedef struct chunked {
    const char *data;
    size_t size, chunk;
    int fail_after; /* chunks before an error; -1 never */
} chunked;

static int write_chunked(int fd, void *ctx, vt_error *err)
{
    chunked *c = ctx;
    size_t off = 0;
    for (int k = 0; off < c->size; k++) {
        if (k == c->fail_after)
            return vt_error_set(err, VT_EINPUT, "writer: simulated disk full: expected space");
        size_t n = c->size - off < c->chunk ? c->size - off : c->chunk;
        if (vt_publish_write_all(fd, c->data + off, n, "writer", err) != VT_OK)
            return VT_EINPUT;
        off += n;
    }
    return VT_OK;
}

Test(publish, streaming_writer)
{
    vt_error err;
    const char *text = "a streamed capture written in several small pieces";
    chunked ok = {text, strlen(text), 7, -1};
    vt_publish_item it = {.path = at("s.bin"), .write = write_chunked, .write_ctx = &ok};
    cr_assert_eq(vt_publish_group(&it, 1, NULL, &err), VT_OK, "%s", err.msg);
    cr_assert(is_str(at("s.bin"), text));

    chunked bad = {text, strlen(text), 7, 3};
    it.write_ctx = &bad;
    vt_publish_opts o = {.overwrite = 1};
    int rc = vt_publish_group(&it, 1, &o, &err);
    cr_assert_eq(rc, VT_EINPUT);
    cr_assert_not_null(strstr(err.msg, "simulated disk full"), "%s", err.msg);
    cr_assert(is_str(at("s.bin"), text));
    assert_listing("s.bin");
}

/* ---- groups with a failure injected at every step ---- */

static const char *const steps[] = {"temp-created", "temp-written", "temp-synced", "backed-up", "renamed", "dir-synced"};
enum { N_STEPS = (int)(sizeof steps / sizeof steps[0]) };

typedef struct inject {
    const char *step;
    int item;
    int fired;
    char trace[1024]; /* every call, "step:item " */
} inject;

static int inject_hook(const char *step, int item, void *ctx)
{
    inject *in = ctx;
    char one[64];
    snprintf(one, sizeof one, "%s:%d ", step, item);
    strncat(in->trace, one, sizeof in->trace - strlen(in->trace) - 1);
    if (in->step && !strcmp(step, in->step) && item == in->item) {
        in->fired = 1;
        return 1;
    }
    return 0;
}

/* The group: a capture (buffer) and its logits side file (streamed). */
static char old_cap[3000], new_cap[5000], old_log[100], new_log[77];

static void fill(char *b, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        b[i] = (char)(seed + i * 31u + (i >> 7));
}

static int run_group(int overwrite, int fallback, inject *in, vt_error *err)
{
    static chunked logits;
    logits = (chunked){new_log, sizeof new_log, 10, -1};
    vt_publish_item items[2] = {
        {.path = at("run.cap"), .data = new_cap, .size = sizeof new_cap},
        {.path = at("run.logits"), .write = write_chunked, .write_ctx = &logits},
    };
    const char *inputs[] = {at("model.gguf")};
    vt_publish_opts o = {.overwrite = overwrite, .inputs = inputs, .n_inputs = 1, .hook = inject_hook,
                         .hook_ctx = in, .fallback = fallback};
    return vt_publish_group(items, 2, &o, err);
}

Test(publish, group_step_order)
{
    fill(new_cap, sizeof new_cap, 1), fill(new_log, sizeof new_log, 2);
    fill(old_cap, sizeof old_cap, 3), fill(old_log, sizeof old_log, 4);
    put(at("run.cap"), old_cap, sizeof old_cap);
    put(at("run.logits"), old_log, sizeof old_log);
    inject in = {0};
    vt_error err;
    cr_assert_eq(run_group(1, 0, &in, &err), VT_OK, "%s", err.msg);
    cr_assert_str_eq(in.trace, "temp-created:0 temp-written:0 temp-synced:0 temp-created:1 temp-written:1 temp-synced:1 "
                               "backed-up:0 renamed:0 dir-synced:0 backed-up:1 renamed:1 dir-synced:1 ");
    cr_assert(has_content(at("run.cap"), new_cap, sizeof new_cap));
    cr_assert(has_content(at("run.logits"), new_log, sizeof new_log));
    assert_listing("run.cap run.logits");
}

Test(publish, group_all_or_nothing_at_every_step)
{
    fill(new_cap, sizeof new_cap, 1), fill(new_log, sizeof new_log, 2);
    fill(old_cap, sizeof old_cap, 3), fill(old_log, sizeof old_log, 4);
    const int fallbacks[] = {0, VT_PUBLISH_NO_RENAMEAT2, VT_PUBLISH_NO_HARDLINKS};
    /* Which old files exist: none (plain), both, only the capture. */
    const int olds[][2] = {{0, 0}, {1, 1}, {1, 0}};
    int injected = 0;
    for (int f = 0; f < 3; f++)
        for (int s = 0; s < 3; s++)
            for (int overwrite = 0; overwrite <= 1; overwrite++) {
                if (!overwrite && (olds[s][0] || olds[s][1]))
                    continue; /* refused before writing: covered elsewhere */
                for (int step = 0; step < N_STEPS; step++)
                    for (int item = 0; item < 2; item++) {
                        put_str(at("model.gguf"), "weights");
                        if (olds[s][0])
                            put(at("run.cap"), old_cap, sizeof old_cap);
                        if (olds[s][1])
                            put(at("run.logits"), old_log, sizeof old_log);
                        inject in = {.step = steps[step], .item = item};
                        vt_error err;
                        int rc = run_group(overwrite, fallbacks[f], &in, &err);
                        const char *what = steps[step];
                        int applies = strcmp(what, "backed-up") || olds[s][item];
                        cr_assert_eq(in.fired, applies, "fallback %d olds %d step %s item %d: hook %s", fallbacks[f], s,
                                     what, item, in.fired ? "fired" : "not called");
                        char expect[256];
                        if (applies) {
                            injected++;
                            cr_assert_eq(rc, VT_EINPUT, "step %s item %d", what, item);
                            cr_assert_not_null(strstr(err.msg, what), "%s", err.msg);
                            cr_assert_null(strstr(err.msg, "; and "), "undo failed: %s", err.msg);
                            if (olds[s][0])
                                cr_assert(has_content(at("run.cap"), old_cap, sizeof old_cap), "step %s item %d", what,
                                          item);
                            if (olds[s][1])
                                cr_assert(has_content(at("run.logits"), old_log, sizeof old_log), "step %s item %d",
                                          what, item);
                            snprintf(expect, sizeof expect, "model.gguf%s%s", olds[s][0] ? " run.cap" : "",
                                     olds[s][1] ? " run.logits" : "");
                        } else {
                            cr_assert_eq(rc, VT_OK, "%s", err.msg);
                            cr_assert(has_content(at("run.cap"), new_cap, sizeof new_cap));
                            cr_assert(has_content(at("run.logits"), new_log, sizeof new_log));
                            snprintf(expect, sizeof expect, "model.gguf run.cap run.logits");
                        }
                        assert_listing(expect);
                        cr_assert(is_str(at("model.gguf"), "weights"));
                        unlink(at("run.cap"));
                        unlink(at("run.logits"));
                    }
            }
    /* Per fallback: none old (twice: with and without overwrite) 10 pairs
     * each (no backed-up), both old 12, only the capture old 11. */
    cr_assert_eq(injected, 3 * (10 + 10 + 12 + 11));
}

/* ---- SIGKILL at random moments ---- */

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* Forks a child that publishes (overwrite) and is killed after delay_us
 * (never when delay_us < 0). Returns the child's elapsed time in us. */
static double publish_in_child(const char *path, const void *data, size_t n, double delay_us)
{
    double t0 = now_us();
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        vt_error err;
        _exit(vt_publish_file(path, data, n, 1, &err) == VT_OK ? 0 : 1);
    }
    if (delay_us >= 0) {
        struct timespec d = {(time_t)(delay_us / 1e6), (long)((long long)delay_us % 1000000) * 1000};
        nanosleep(&d, NULL);
        kill(pid, SIGKILL);
    }
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert((WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) || (WIFEXITED(status) && WEXITSTATUS(status) == 0),
              "child failed: status %d", status);
    return now_us() - t0;
}

Test(publish, sigkill_never_leaves_a_partial_target, .timeout = 120)
{
    enum { MAX = 4 << 20, MIN = 1 << 20, ROUNDS = 100 };
    unsigned char *a = malloc(MAX), *b = malloc(MAX);
    cr_assert(a && b);
    vt_rng rng;
    vt_rng_seed(&rng, 20240611);
    for (size_t i = 0; i < MAX; i += 8) {
        uint64_t x = vt_rng_next(&rng), y = vt_rng_next(&rng);
        memcpy(a + i, &x, 8);
        memcpy(b + i, &y, 8);
    }
    a[0] = 'A', b[0] = 'B'; /* old and new differ from the first byte */
    const char *target = at("run.cap");
    vt_error err;

    /* Calibrate: kills spread over the whole time one publication takes. */
    double span = 0;
    for (int k = 0; k < 3; k++) {
        cr_assert_eq(vt_publish_file(target, a, MAX, 1, &err), VT_OK, "%s", err.msg);
        double t = publish_in_child(target, b, MAX, -1);
        span = t > span ? t : span;
    }
    double t_start = now_us();
    int saw_old = 0, saw_new = 0, leftovers = 0;
    /* Past ROUNDS, while the kills have not yet landed on both sides of the
     * rename (a calibration slowed by a loaded machine put every kill after
     * it), the delays shrink (no old seen) or grow (no new seen) every 25
     * rounds, up to 4 ROUNDS in all. */
    double reach = 1.2;
    int r;
    for (r = 0; r < ROUNDS || ((!saw_old || !saw_new) && r < 4 * ROUNDS); r++) {
        if (r >= ROUNDS && r % 25 == 0)
            reach *= !saw_old ? 0.5 : 2.0;
        size_t na = MIN + vt_rng_next(&rng) % (MAX - MIN + 1);
        size_t nb = MIN + vt_rng_next(&rng) % (MAX - MIN + 1);
        double delay = vt_rng_uniform(&rng) * span * reach;
        cr_assert_eq(vt_publish_file(target, a, na, 1, &err), VT_OK, "%s", err.msg);
        publish_in_child(target, b, nb, delay);

        size_t n;
        unsigned char *got = slurp(target, &n);
        cr_assert_not_null(got, "round %d (delay %.0f us): target missing", r, delay);
        int old = n == na && !memcmp(got, a, na), new = n == nb && !memcmp(got, b, nb);
        free(got);
        cr_assert(old || new, "round %d (delay %.0f us): target is %zu bytes, neither old (%zu) nor new (%zu)", r, delay,
                  n, na, nb);
        saw_old += old, saw_new += new;

        /* What a killed run may leave: only ".run.cap.vt-tmp-*" / "-bak-*". */
        DIR *d = opendir(tdir);
        struct dirent *e;
        int here = 0;
        while ((e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || !strcmp(e->d_name, "run.cap"))
                continue;
            cr_assert(!strncmp(e->d_name, ".run.cap.vt-tmp-", 16) || !strncmp(e->d_name, ".run.cap.vt-bak-", 16),
                      "unexpected leftover %s", e->d_name);
            here++;
        }
        closedir(d);
        int removed = -1;
        cr_assert_eq(vt_publish_sweep(target, &removed, &err), VT_OK, "%s", err.msg);
        cr_assert_eq(removed, here);
        leftovers += here;
        assert_listing("run.cap");
    }
    cr_log_info("sigkill: %d rounds in %.1f s (publication ~%.1f ms, delays to %.2f of it): old %d, new %d, "
                "leftovers swept %d",
                r, (now_us() - t_start) / 1e6, span / 1e3, reach, saw_old, saw_new, leftovers);
    /* The kills did land on both sides of the rename. */
    cr_assert_gt(saw_old, 0);
    cr_assert_gt(saw_new, 0);
    free(a);
    free(b);
}

/* ---- sweep ---- */

Test(publish, sweep_removes_only_dead_processes_leftovers)
{
    pid_t dead = fork();
    cr_assert_neq(dead, -1);
    if (dead == 0)
        _exit(0);
    cr_assert_eq(waitpid(dead, NULL, 0), dead);
    char name[256];
    put_str(at("x.bin"), "current");
    snprintf(name, sizeof name, ".x.bin.vt-tmp-%d-0-0123456789abcdef", (int)dead);
    put_str(at(name), "partial");
    snprintf(name, sizeof name, ".x.bin.vt-bak-%d-1-0123456789abcdef", (int)dead);
    put_str(at(name), "old");
    snprintf(name, sizeof name, ".x.bin.vt-tmp-%d-2-0123456789abcdef", (int)getpid());
    put_str(at(name), "in progress");
    put_str(at(".y.bin.vt-tmp-1-0-0"), "someone else's");
    int removed;
    vt_error err;
    cr_assert_eq(vt_publish_sweep(at("x.bin"), &removed, &err), VT_OK, "%s", err.msg);
    cr_assert_eq(removed, 2);
    char expect[512];
    snprintf(expect, sizeof expect, "%s .y.bin.vt-tmp-1-0-0 x.bin", name);
    assert_listing(expect);

    /* With the target absent, a backup may be the only copy: kept. */
    unlink(at(name));
    unlink(at(".y.bin.vt-tmp-1-0-0"));
    unlink(at("x.bin"));
    snprintf(name, sizeof name, ".x.bin.vt-bak-%d-3-0123456789abcdef", (int)dead);
    put_str(at(name), "old");
    cr_assert_eq(vt_publish_sweep(at("x.bin"), &removed, &err), VT_OK, "%s", err.msg);
    cr_assert_eq(removed, 0);
    assert_listing(name);
}
