/* vt-seal: deterministic archives, verify catching every kind of tampering,
 * extract refusing every class of hostile archive and leaving nothing behind.
 * Hostile archives are crafted here with libarchive, or byte by byte where
 * libarchive will not write them (a header whose size differs from the data). */
#include <criterion/criterion.h>

#include "common/vt_json.h"
#include "evidence/seal.h"
#include "provenance/provenance.h"
#include "tests/support/vt_test.h"

#include <dlfcn.h>

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

static char tmp[64];

static void setup(void)
{
    snprintf(tmp, sizeof tmp, "/tmp/vt-seal-test-XXXXXX");
    cr_assert_not_null(mkdtemp(tmp));
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(seal, .init = setup, .fini = teardown);

/* ---- small helpers ---- */

static void reseal(const char *path, const char *manifest_sha);

static char *P(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *P(const char *fmt, ...) /* tmp-relative path, static ring of buffers */
{
    static char bufs[16][1024];
    static int k;
    char *b = bufs[k++ % 16];
    int n = snprintf(b, sizeof bufs[0], "%s/", tmp);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b + n, sizeof bufs[0] - (size_t)n, fmt, ap);
    va_end(ap);
    return b;
}

static void write_file(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "%s: %s", path, strerror(errno));
    cr_assert_eq(fwrite(data, 1, n, f), n);
    cr_assert_eq(fclose(f), 0);
}

static void write_text(const char *path, const char *s) { write_file(path, s, strlen(s)); }

static unsigned char *read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s: %s", path, strerror(errno));
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *p = malloc((size_t)len + 1);
    cr_assert_eq(fread(p, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    p[len] = 0;
    *n = (size_t)len;
    return p;
}

#define exists(path) vt_test_exists(path)

/* Runs `vt seal ARGS`; returns the exit code, stderr in tmp/err.txt. */
static int seal(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int seal(const char *fmt, ...)
{
    char args[2048], cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(args, sizeof args, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "'%s' seal %s >'%s/out.txt' 2>'%s/err.txt'", VT_BIN, args, tmp, tmp);
    int st = system(cmd);
    /* Under -DVT_SANITIZE=ON the tool's own reports land in err.txt. */
    size_t n;
    char *e = (char *)read_file(P("err.txt"), &n);
    int rc = vt_test_exit(st, cmd, e);
    free(e);
    return rc;
}

static char *err_text(void)
{
    static char buf[4096];
    size_t n;
    unsigned char *p = read_file(P("err.txt"), &n);
    snprintf(buf, sizeof buf, "%s", (char *)p);
    free(p);
    return buf;
}

#define assert_err_has(s) cr_assert(strstr(err_text(), (s)), "stderr lacks '%s': %s", (s), err_text())

static void fill_random(unsigned char *p, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        p[i] = (unsigned char)(seed >> 56);
    }
}

/* A small tree with text, random data, an executable, an empty directory,
 * nested directories and a path long enough to need a pax header. */
static const char *long_dir = "a-directory-name-long-enough-that-the-full-path-needs-the-ustar-prefix-or-pax/"
                              "and-another-component-of-some-length-to-pass-one-hundred-bytes";

static void make_tree(const char *root, int variant)
{
    char p[1024];
    cr_assert_eq(mkdir(root, 0755), 0);
    /* Different creation orders, so readdir orders may differ too. */
    const char *ld = "a-directory-name-long-enough-that-the-full-path-needs-the-ustar-prefix-or-pax";
    const char *order0[] = { "sub", "sub/deep", "empty", ld, NULL }, *order1[] = { ld, "empty", "sub", "sub/deep", NULL };
    const char **dirs = variant ? order1 : order0;
    for (int i = 0; dirs[i]; i++) {
        snprintf(p, sizeof p, "%s/%s", root, dirs[i]);
        cr_assert_eq(mkdir(p, variant ? 0700 : 0755), 0, "%s", p);
    }
    snprintf(p, sizeof p, "%s/%s", root, long_dir);
    cr_assert_eq(mkdir(p, 0755), 0);
    unsigned char *rnd = malloc(300000);
    fill_random(rnd, 300000, 7);
    for (int k = 0; k < 2; k++) {
        int i = variant ? 1 - k : k;
        if (i == 0) {
            snprintf(p, sizeof p, "%s/sub/rand.bin", root);
            write_file(p, rnd, 300000);
            snprintf(p, sizeof p, "%s/sub/deep/text.json", root);
            char text[20000];
            size_t n = 0;
            for (int j = 0; j < 500; j++)
                n += (size_t)snprintf(text + n, sizeof text - n, "{\"id\":%d,\"logprob\":%.6f},\n", j, -j / 7.0);
            write_file(p, text, n);
        } else {
            snprintf(p, sizeof p, "%s/a.txt", root);
            write_text(p, "hello\n");
            snprintf(p, sizeof p, "%s/run.sh", root);
            write_text(p, "#!/bin/sh\necho run\n");
            cr_assert_eq(chmod(p, variant ? 0700 : 0755), 0);
            snprintf(p, sizeof p, "%s/%s/leaf.txt", root, long_dir);
            write_text(p, "leaf\n");
            snprintf(p, sizeof p, "%s/zero-length", root);
            write_file(p, "", 0);
        }
    }
    free(rnd);
}

/* ---- determinism and interoperability ---- */

Test(seal, same_tree_same_bytes_whatever_times_owners_umask_threads)
{
    mode_t old = umask(022);
    make_tree(P("t1"), 0);
    umask(077);
    make_tree(P("t2"), 1);
    umask(old);
    /* Other times and owners for t2. */
    char cmd[512];
    snprintf(cmd, sizeof cmd, "find '%s' -exec touch -h -d '2001-02-03 04:05:06' {} +", P("t2"));
    cr_assert_eq(system(cmd), 0);
    if (geteuid() == 0) {
        snprintf(cmd, sizeof cmd, "chown -R 1234:4321 '%s'", P("t2"));
        cr_assert_eq(system(cmd), 0);
    }
    mkdir(P("o1"), 0755);
    mkdir(P("o2"), 0755);
    mkdir(P("o3"), 0755);
    cr_assert_eq(seal("create '%s' -o '%s' --attestation", P("t1"), P("o1/x.tar.gz")), 0, "%s", err_text());
    cr_assert_eq(seal("create '%s' -o '%s' --attestation --threads 1", P("t2"), P("o2/x.tar.gz")), 0, "%s", err_text());
    /* A different umask and thread count for the tool itself. */
    snprintf(cmd, sizeof cmd, "umask 077; '%s' seal create '%s' -o '%s' --attestation --threads 3 >/dev/null", VT_BIN,
             P("t1"), P("o3/x.tar.gz"));
    cr_assert_eq(system(cmd), 0);
    const char *suffix[] = { "", ".seal.json", ".intoto.json" };
    for (int i = 0; i < 3; i++) {
        size_t n1, n2, n3;
        char a[1024], b[1024], c[1024];
        snprintf(a, sizeof a, "%s/o1/x.tar.gz%s", tmp, suffix[i]);
        snprintf(b, sizeof b, "%s/o2/x.tar.gz%s", tmp, suffix[i]);
        snprintf(c, sizeof c, "%s/o3/x.tar.gz%s", tmp, suffix[i]);
        unsigned char *x = read_file(a, &n1), *y = read_file(b, &n2), *z = read_file(c, &n3);
        cr_assert(n1 == n2 && memcmp(x, y, n1) == 0, "%s and %s differ", a, b);
        cr_assert(n1 == n3 && memcmp(x, z, n1) == 0, "%s and %s differ", a, c);
        free(x);
        free(y);
        free(z);
    }
    /* No timestamp and no name in the gzip header. */
    size_t n;
    unsigned char *g = read_file(P("o1/x.tar.gz"), &n);
    cr_assert(n > 10 && g[0] == 0x1f && g[1] == 0x8b);
    cr_assert_eq(g[4] | g[5] | g[6] | g[7], 0, "gzip mtime is set");
    cr_assert_eq(g[3] & 0x18, 0, "gzip FNAME or FCOMMENT set");
    free(g);
    /* The extracted tree seals to the same bytes again. */
    cr_assert_eq(seal("extract '%s' -C '%s'", P("o1/x.tar.gz"), P("back")), 0, "%s", err_text());
    mkdir(P("o4"), 0755);
    cr_assert_eq(seal("create '%s' -o '%s'", P("back"), P("o4/x.tar.gz")), 0, "%s", err_text());
    size_t n4;
    unsigned char *x = read_file(P("o1/x.tar.gz"), &n), *y = read_file(P("o4/x.tar.gz"), &n4);
    cr_assert(n == n4 && memcmp(x, y, n) == 0, "re-sealed extracted tree differs");
    free(x);
    free(y);
}

/* The options' ranges, at their ends: threads 0 (one per CPU) .. 256,
 * gzip level 1..9. */
Test(seal, option_ranges_at_their_ends)
{
    vt_seal *s = vt_seal_new();
    cr_assert_not_null(s);
    vt_error err;
    static const int threads[][2] = { { -1, VT_EINPUT }, { 0, VT_OK }, { 256, VT_OK }, { 257, VT_EINPUT } };
    for (size_t i = 0; i < sizeof threads / sizeof threads[0]; i++) {
        vt_error_clear(&err);
        cr_assert_eq(vt_seal_set_threads(s, threads[i][0], &err), threads[i][1], "threads %d", threads[i][0]);
    }
    cr_assert_str_eq(err.msg, "threads 257: expected 0 (one per CPU) .. 256");
    static const int levels[][2] = { { 0, VT_EINPUT }, { 1, VT_OK }, { 9, VT_OK }, { 10, VT_EINPUT } };
    for (size_t i = 0; i < sizeof levels / sizeof levels[0]; i++) {
        vt_error_clear(&err);
        cr_assert_eq(vt_seal_set_level(s, levels[i][0], &err), levels[i][1], "level %d", levels[i][0]);
    }
    cr_assert_str_eq(err.msg, "gzip level 10: expected 1..9");
    vt_seal_free(s);
}

/* A directory of the tree that cannot be opened fails the archive: never
 * an archive that leaves it out (as root too: vt_test_give_up_dac_override). */
Test(seal, create_refuses_a_directory_it_cannot_open)
{
    vt_test_give_up_dac_override();
    char tmp[] = "/tmp/vt-seal-XXXXXX", dir[64], sub[80], file[80], out[80];
    cr_assert_not_null(mkdtemp(tmp));
    snprintf(dir, sizeof dir, "%s/ev", tmp);
    snprintf(sub, sizeof sub, "%s/locked", dir);
    snprintf(file, sizeof file, "%s/a.txt", dir);
    snprintf(out, sizeof out, "%s/ev.tar.gz", tmp);
    cr_assert_eq(mkdir(dir, 0755), 0);
    cr_assert_eq(mkdir(sub, 0755), 0);
    FILE *f = fopen(file, "w");
    cr_assert_not_null(f);
    fputs("a\n", f);
    fclose(f);
    cr_assert_eq(chmod(sub, 0), 0);
    DIR *probe = opendir(sub);
    cr_assert_null(probe, "the directory opens: the test would test nothing");
    vt_seal *s = vt_seal_new();
    vt_error err;
    vt_error_clear(&err);
    int rc = vt_seal_create(s, dir, out, &err);
    vt_seal_free(s);
    chmod(sub, 0755);
    cr_assert_eq(rc, VT_EINPUT, "rc %d: %s", rc, err.msg);
    cr_assert(strstr(err.msg, "/ev/locked/: cannot open: Permission denied"), "%s", err.msg);
    cr_assert_neq(access(out, F_OK), 0, "an archive was written");
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    cr_assert_eq(system(cmd), 0);
}

/* More names than the name sets start with (1024 slots, grown past half
 * full): 700 files seal, verify, and the archive lists them all. */
Test(seal, many_members_grow_the_name_sets)
{
    char tmp[] = "/tmp/vt-seal-XXXXXX", dir[64], path[96], out[80];
    cr_assert_not_null(mkdtemp(tmp));
    snprintf(dir, sizeof dir, "%s/ev", tmp);
    snprintf(out, sizeof out, "%s/ev.tar.gz", tmp);
    cr_assert_eq(mkdir(dir, 0755), 0);
    for (int i = 0; i < 700; i++) {
        snprintf(path, sizeof path, "%s/f%03d.txt", dir, i);
        write_text(path, "x");
    }
    vt_seal *s = vt_seal_new();
    vt_error err;
    vt_error_clear(&err);
    int rc = vt_seal_create(s, dir, out, &err);
    vt_seal_free(s);
    cr_assert_eq(rc, VT_OK, "%s", err.msg);
    s = vt_seal_new();
    rc = vt_seal_verify(s, out, &err);
    vt_seal_free(s);
    cr_assert_eq(rc, VT_OK, "verify: %s", err.msg);
    char cmd[200];
    snprintf(cmd, sizeof cmd, "tar -tzf '%s' | grep -c '^f[0-9]*\\.txt$' | grep -qx 700", out);
    cr_assert_eq(system(cmd), 0, "the archive does not list the 700 files");
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    cr_assert_eq(system(cmd), 0);
}

Test(seal, gnu_tar_lists_and_extracts)
{
    make_tree(P("t"), 0);
    cr_assert_eq(seal("create '%s' -o '%s'", P("t"), P("x.tar.gz")), 0, "%s", err_text());
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "tar -tzf '%s' > '%s'", P("x.tar.gz"), P("list.txt"));
    cr_assert_eq(system(cmd), 0);
    size_t n;
    char *list = (char *)read_file(P("list.txt"), &n);
    char want[2048];
    snprintf(want, sizeof want,
             "manifest.json\n%s/\n%s/\n%s/leaf.txt\na.txt\nempty/\nrun.sh\nsub/\nsub/deep/\nsub/deep/text.json\n"
             "sub/rand.bin\nzero-length\n",
             "a-directory-name-long-enough-that-the-full-path-needs-the-ustar-prefix-or-pax", long_dir, long_dir);
    cr_assert_str_eq(list, want);
    free(list);
    mkdir(P("gnu"), 0755);
    snprintf(cmd, sizeof cmd, "tar -xzf '%s' -C '%s'", P("x.tar.gz"), P("gnu"));
    cr_assert_eq(system(cmd), 0);
    /* Same content as the source, plus the manifest; modes normalized. */
    snprintf(cmd, sizeof cmd, "diff -r '%s' '%s' -x manifest.json", P("t"), P("gnu"));
    cr_assert_eq(system(cmd), 0);
    struct stat st;
    cr_assert_eq(stat(P("gnu/run.sh"), &st), 0);
    cr_assert_eq(st.st_mode & 07777, 0755);
    cr_assert_eq(stat(P("gnu/a.txt"), &st), 0);
    cr_assert_eq(st.st_mode & 07777, 0644);
    cr_assert_eq(st.st_mtime, 0);
    /* GNU tar's verbose listing: owner 0/0, empty names, mtime 1970. */
    snprintf(cmd, sizeof cmd, "tar -tvzf '%s' --numeric-owner | grep -v ' 0/0 ' | grep -q .", P("x.tar.gz"));
    cr_assert_neq(system(cmd), 0, "a member not owned by 0/0");
    /* And our own extract gives the source tree exactly. */
    cr_assert_eq(seal("extract '%s' -C '%s'", P("x.tar.gz"), P("ours")), 0, "%s", err_text());
    snprintf(cmd, sizeof cmd, "diff -r '%s' '%s'", P("t"), P("ours"));
    cr_assert_eq(system(cmd), 0);
    cr_assert_eq(seal("verify '%s'", P("x.tar.gz")), 0, "%s", err_text());
}

/* ---- create refusals ---- */

Test(seal, create_refuses_symlink)
{
    make_tree(P("t"), 0);
    cr_assert_eq(symlink("a.txt", P("t/sub/link")), 0);
    cr_assert_eq(seal("create '%s' -o '%s'", P("t"), P("x.tar.gz")), 2);
    assert_err_has("t/sub/link: symlink");
    cr_assert(!exists(P("x.tar.gz")) && !exists(P("x.tar.gz.seal.json")));
}

Test(seal, create_refuses_fifo)
{
    make_tree(P("t"), 0);
    cr_assert_eq(mkfifo(P("t/fifo"), 0644), 0);
    cr_assert_eq(seal("create '%s' -o '%s'", P("t"), P("x.tar.gz")), 2);
    assert_err_has("t/fifo: FIFO");
    cr_assert(!exists(P("x.tar.gz")) && !exists(P("x.tar.gz.seal.json")));
}

Test(seal, create_refuses_output_inside_dir_and_case_collisions)
{
    make_tree(P("t"), 0);
    cr_assert_eq(seal("create '%s' -o '%s'", P("t"), P("t/sub/x.tar.gz")), 2);
    assert_err_has("inside the sealed directory");
    cr_assert(!exists(P("t/sub/x.tar.gz")));
    write_text(P("t/A.txt"), "other\n");
    cr_assert_eq(seal("create '%s' -o '%s'", P("t"), P("x.tar.gz")), 2);
    assert_err_has("equal but for case");
    cr_assert(!exists(P("x.tar.gz")));
    cr_assert_eq(unlink(P("t/A.txt")), 0);
    write_text(P("t/manifest.json"), "{}");
    cr_assert_eq(seal("create '%s' -o '%s'", P("t"), P("x.tar.gz")), 2);
    assert_err_has("reserved");
    cr_assert_eq(unlink(P("t/manifest.json")), 0);
    /* No clobber without --overwrite. */
    cr_assert_eq(seal("create '%s' -o '%s'", P("t"), P("x.tar.gz")), 0, "%s", err_text());
    cr_assert_eq(seal("create '%s' -o '%s'", P("t"), P("x.tar.gz")), 2);
    cr_assert_eq(seal("create '%s' -o '%s' --overwrite", P("t"), P("x.tar.gz")), 0, "%s", err_text());
}

/* ---- archives crafted with libarchive ---- */

typedef struct item {
    const char *name;
    char type; /* 'f' file, 'd' dir, 'l' symlink, 'h' hard link, 'c' char device, 'p' FIFO */
    const void *data;
    size_t len;
    unsigned mode;
    const char *link;
    int unlisted; /* left out of the manifest */
} item;

static void sha_hex(const void *p, size_t n, char out[65])
{
    vt_sha256_hex h;
    vt_sha256_buffer(p, n, &h);
    memcpy(out, h.hex, 65);
}

static int cmp_item(const void *a, const void *b)
{
    char x[1024], y[1024];
    const item *i = a, *j = b;
    snprintf(x, sizeof x, "%s%s", i->name, i->type == 'd' ? "/" : "");
    snprintf(y, sizeof y, "%s%s", j->name, j->type == 'd' ? "/" : "");
    return strcmp(x, y);
}

/* The canonical manifest of the listed files and directories, written here
 * independently of the library. */
static char *manifest_of(const item *items, int n, size_t *len)
{
    item *s = malloc(sizeof *s * (size_t)(n ? n : 1));
    int k = 0;
    for (int i = 0; i < n; i++)
        if (!items[i].unlisted && (items[i].type == 'f' || items[i].type == 'd'))
            s[k++] = items[i];
    qsort(s, (size_t)k, sizeof *s, cmp_item);
    size_t cap = 4096 + (size_t)k * 512, o = 0;
    char *m = malloc(cap);
    o += (size_t)snprintf(m + o, cap - o, "{\"schema\":\"vt.seal.manifest/1\",\"members\":[\n");
    for (int i = 0; i < k; i++) {
        if (s[i].type == 'd')
            o += (size_t)snprintf(m + o, cap - o, "{\"path\":\"%s/\",\"type\":\"dir\",\"mode\":\"0755\"}", s[i].name);
        else {
            char h[65];
            sha_hex(s[i].data, s[i].len, h);
            o += (size_t)snprintf(m + o, cap - o,
                                  "{\"path\":\"%s\",\"type\":\"file\",\"mode\":\"%04o\",\"size\":%zu,\"sha256\":\"%s\"}",
                                  s[i].name, s[i].mode ? s[i].mode : 0644, s[i].len, h);
        }
        o += (size_t)snprintf(m + o, cap - o, i + 1 < k ? ",\n" : "\n");
    }
    o += (size_t)snprintf(m + o, cap - o, "]}\n");
    free(s);
    *len = o;
    return m;
}

static void add_entry(struct archive *a, const item *it)
{
    struct archive_entry *e = archive_entry_new();
    archive_entry_set_pathname(e, it->name);
    archive_entry_set_mtime(e, 0, 0);
    unsigned mode = it->mode ? it->mode : it->type == 'd' ? 0755 : 0644;
    switch (it->type) {
    case 'd': archive_entry_set_filetype(e, AE_IFDIR); break;
    case 'l': archive_entry_set_filetype(e, AE_IFLNK); archive_entry_set_symlink(e, it->link); break;
    case 'h': archive_entry_set_filetype(e, AE_IFREG); archive_entry_set_hardlink(e, it->link); break;
    case 'c': archive_entry_set_filetype(e, AE_IFCHR); archive_entry_set_rdev(e, 0x0103); break;
    case 'p': archive_entry_set_filetype(e, AE_IFIFO); break;
    default: archive_entry_set_filetype(e, AE_IFREG); archive_entry_set_size(e, (la_int64_t)it->len);
    }
    archive_entry_set_perm(e, mode);
    cr_assert_eq(archive_write_header(a, e), ARCHIVE_OK, "%s: %s", it->name, archive_error_string(a));
    if (it->type == 'f' && it->len)
        cr_assert_eq(archive_write_data(a, it->data, it->len), (la_ssize_t)it->len);
    archive_entry_free(e);
}

/* manifest.json (of the listed items) first, then the items in order. */
static void craft(const char *path, const item *items, int n)
{
    struct archive *a = archive_write_new();
    archive_write_set_format_pax_restricted(a);
    archive_write_add_filter_gzip(a);
    archive_write_set_filter_option(a, "gzip", "compression-level", "9");
    cr_assert_eq(archive_write_open_filename(a, path), ARCHIVE_OK, "%s", archive_error_string(a));
    size_t ml;
    char *m = manifest_of(items, n, &ml);
    item mi = { .name = "manifest.json", .type = 'f', .data = m, .len = ml };
    add_entry(a, &mi);
    for (int i = 0; i < n; i++)
        add_entry(a, &items[i]);
    cr_assert_eq(archive_write_close(a), ARCHIVE_OK);
    archive_write_free(a);
    free(m);
}

/* Nothing of DEST and no temp directory beside it. */
static void assert_nothing_left(const char *dest)
{
    cr_assert(!exists(dest), "%s exists after a refusal", dest);
    DIR *d = opendir(tmp);
    cr_assert_not_null(d);
    struct dirent *de;
    while ((de = readdir(d)))
        cr_assert(!strstr(de->d_name, "vt-extract"), "left behind: %s", de->d_name);
    closedir(d);
}

static const char ok_data[] = "a harmless file\n";
#define OK_ITEM { .name = "ok.txt", .type = 'f', .data = ok_data, .len = sizeof ok_data - 1 }

/* Crafts items into hostile.tar.gz, extracts with extra options, expects
 * exit code `code`, the message, and nothing left behind. */
static void expect_refused(const item *items, int n, const char *opts, int code, const char *msg)
{
    craft(P("hostile.tar.gz"), items, n);
    cr_assert_eq(seal("extract '%s' -C '%s' %s", P("hostile.tar.gz"), P("dest"), opts), code, "%s", err_text());
    assert_err_has(msg);
    assert_nothing_left(P("dest"));
}

Test(seal, crafted_archive_of_plain_members_extracts)
{
    item it[] = { { .name = "d", .type = 'd' }, { .name = "d/f", .type = 'f', .data = "x", .len = 1 }, OK_ITEM };
    craft(P("fine.tar.gz"), it, 3);
    cr_assert_eq(seal("extract '%s' -C '%s'", P("fine.tar.gz"), P("dest")), 0, "%s", err_text());
    size_t n;
    char *p = (char *)read_file(P("dest/d/f"), &n);
    cr_assert_str_eq(p, "x");
    free(p);
    /* Into an existing empty directory too. */
    mkdir(P("empty"), 0755);
    cr_assert_eq(seal("extract '%s' -C '%s'", P("fine.tar.gz"), P("empty")), 0, "%s", err_text());
    cr_assert(exists(P("empty/ok.txt")));
}

Test(seal, extract_refuses_absolute_path)
{
    item it[] = { OK_ITEM, { .name = "/tmp/vt-seal-evil", .type = 'f', .data = "x", .len = 1, .unlisted = 1 } };
    expect_refused(it, 2, "", 2, "absolute path refused");
    cr_assert(!exists("/tmp/vt-seal-evil"));
}

Test(seal, extract_refuses_dotdot)
{
    item it[] = { OK_ITEM, { .name = "sub/../../evil", .type = 'f', .data = "x", .len = 1, .unlisted = 1 } };
    expect_refused(it, 2, "", 2, "'..' component refused");
    cr_assert(!exists(P("evil")));
}

Test(seal, extract_refuses_symlink)
{
    item it[] = { OK_ITEM, { .name = "link", .type = 'l', .link = "/etc/passwd", .unlisted = 1 } };
    expect_refused(it, 2, "", 2, "symlink refused");
}

Test(seal, extract_refuses_hard_link)
{
    item it[] = { OK_ITEM, { .name = "zlink", .type = 'h', .link = "ok.txt", .unlisted = 1 } };
    expect_refused(it, 2, "", 2, "hard link refused");
}

Test(seal, extract_refuses_char_device)
{
    item it[] = { OK_ITEM, { .name = "tty", .type = 'c', .unlisted = 1 } };
    expect_refused(it, 2, "", 2, "device refused");
}

Test(seal, extract_refuses_fifo)
{
    item it[] = { OK_ITEM, { .name = "pipe", .type = 'p', .unlisted = 1 } };
    expect_refused(it, 2, "", 2, "FIFO refused");
}

Test(seal, extract_refuses_duplicate_name)
{
    item it[] = { OK_ITEM, { .name = "ok.txt", .type = 'f', .data = "evil", .len = 4, .unlisted = 1 } };
    expect_refused(it, 2, "", 2, "duplicate name refused");
}

/* A directory "d/" and a file "d" are one name on disk: the file takes the
 * directory's place in the manifest, and the directory is missing. */
Test(seal, extract_refuses_a_file_and_a_directory_of_one_name)
{
    item it[] = { OK_ITEM, { .name = "d", .type = 'd' },
                  { .name = "d", .type = 'f', .data = "x", .len = 1, .unlisted = 1 } };
    expect_refused(it, 3, "", 1, "member 'd/': in the manifest, missing from the archive");
}

Test(seal, extract_refuses_case_collision)
{
    item it[] = { { .name = "README", .type = 'f', .data = "a", .len = 1 },
                  { .name = "readme", .type = 'f', .data = "b", .len = 1, .unlisted = 1 } };
    expect_refused(it, 2, "", 2, "equal but for case");
}

Test(seal, extract_refuses_too_many_entries)
{
    item it[12];
    char names[12][16];
    for (int i = 0; i < 12; i++) {
        snprintf(names[i], sizeof names[i], "f%02d", i);
        it[i] = (item){ .name = names[i], .type = 'f', .data = "x", .len = 1 };
    }
    /* Within the limit it extracts; over it (13 entries with the manifest) not. */
    craft(P("many.tar.gz"), it, 12);
    cr_assert_eq(seal("extract '%s' -C '%s' --max-entries 13", P("many.tar.gz"), P("fine")), 0, "%s", err_text());
    expect_refused(it, 12, "--max-entries 10", 2, "entries");
}

Test(seal, extract_refuses_total_size_over_limit)
{
    size_t n = 2 << 20;
    unsigned char *big = malloc(n);
    fill_random(big, n, 3);
    item it[] = { { .name = "big.bin", .type = 'f', .data = big, .len = n }, OK_ITEM };
    expect_refused(it, 2, "--max-total-size 1M", 2, "over the limit");
    free(big);
}

Test(seal, extract_refuses_compression_bomb)
{
    /* 16 MiB of zeros deflate about 1000:1; the default limit is 250:1. */
    size_t n = 16 << 20;
    unsigned char *zeros = calloc(1, n);
    item it[] = { OK_ITEM, { .name = "zeros.bin", .type = 'f', .data = zeros, .len = n } };
    expect_refused(it, 2, "", 2, "decompression bomb");
    /* verify applies the same limits (given a seal that matches). */
    size_t ml;
    char *m = manifest_of(it, 2, &ml), msha[65];
    sha_hex(m, ml, msha);
    free(m);
    reseal(P("hostile.tar.gz"), msha);
    cr_assert_eq(seal("verify '%s'", P("hostile.tar.gz")), 2, "%s", err_text());
    assert_err_has("decompression bomb");
    cr_assert_eq(seal("verify '%s' --max-ratio 2000", P("hostile.tar.gz")), 0, "%s", err_text());
    free(zeros);
}

/* ---- raw tar bytes, for headers libarchive will not write ---- */

static void tar_header(unsigned char h[512], const char *name, char type, unsigned mode, uint64_t size)
{
    memset(h, 0, 512);
    snprintf((char *)h, 100, "%s", name);
    snprintf((char *)h + 100, 8, "%07o", mode);
    snprintf((char *)h + 108, 8, "%07o", 0);
    snprintf((char *)h + 116, 8, "%07o", 0);
    snprintf((char *)h + 124, 12, "%011llo", (unsigned long long)size);
    snprintf((char *)h + 136, 12, "%011o", 0);
    h[156] = (unsigned char)type;
    memcpy(h + 257, "ustar", 6);
    memcpy(h + 263, "00", 2);
    memset(h + 148, ' ', 8);
    unsigned sum = 0;
    for (int i = 0; i < 512; i++)
        sum += h[i];
    snprintf((char *)h + 148, 8, "%06o", sum);
}

typedef struct rawtar {
    unsigned char *p;
    size_t n;
} rawtar;

static void raw_add(rawtar *t, const void *d, size_t n)
{
    t->p = realloc(t->p, t->n + n);
    memcpy(t->p + t->n, d, n);
    t->n += n;
}

/* A member: header saying hdr_size, then data bytes (padded to 512). */
static void raw_member(rawtar *t, const char *name, uint64_t hdr_size, const void *data, size_t n)
{
    unsigned char h[512], zero[512] = { 0 };
    tar_header(h, name, '0', 0644, hdr_size);
    raw_add(t, h, 512);
    raw_add(t, data, n);
    if (n % 512)
        raw_add(t, zero, 512 - n % 512);
}

static void raw_gzip(const char *path, rawtar *t, int end_marker)
{
    if (end_marker) {
        unsigned char zero[1024] = { 0 };
        raw_add(t, zero, sizeof zero);
    }
    gzFile g = gzopen(path, "wb6");
    cr_assert_not_null(g);
    cr_assert_eq(gzwrite(g, t->p, (unsigned)t->n), (int)t->n);
    cr_assert_eq(gzclose(g), Z_OK);
    free(t->p);
}

static void raw_manifest(rawtar *t, const item *items, int n)
{
    size_t ml;
    char *m = manifest_of(items, n, &ml);
    raw_member(t, "manifest.json", ml, m, ml);
    free(m);
}

Test(seal, raw_tar_of_plain_members_extracts)
{
    item it[] = { OK_ITEM };
    rawtar t = { 0 };
    raw_manifest(&t, it, 1);
    raw_member(&t, "ok.txt", it[0].len, it[0].data, it[0].len);
    raw_gzip(P("raw.tar.gz"), &t, 1);
    cr_assert_eq(seal("extract '%s' -C '%s'", P("raw.tar.gz"), P("dest")), 0, "%s", err_text());
}

Test(seal, extract_refuses_data_longer_than_header)
{
    /* The header says 10 bytes; 700 follow. The manifest agrees with the
     * header, so only the spill into the next header can betray it. */
    unsigned char data[700];
    fill_random(data, sizeof data, 5);
    item it[] = { { .name = "spill.bin", .type = 'f', .data = data, .len = 10 } };
    rawtar t = { 0 };
    raw_manifest(&t, it, 1);
    raw_member(&t, "spill.bin", 10, data, sizeof data);
    raw_gzip(P("hostile.tar.gz"), &t, 1);
    cr_assert_eq(seal("extract '%s' -C '%s'", P("hostile.tar.gz"), P("dest")), 2, "%s", err_text());
    assert_err_has("tar header");
    assert_nothing_left(P("dest"));
}

Test(seal, extract_refuses_data_shorter_than_header)
{
    /* The header (and manifest) say 5000 bytes; the archive ends after 700. */
    unsigned char data[5000];
    fill_random(data, sizeof data, 6);
    item it[] = { { .name = "short.bin", .type = 'f', .data = data, .len = 5000 } };
    rawtar t = { 0 };
    raw_manifest(&t, it, 1);
    raw_member(&t, "short.bin", 5000, data, 700);
    raw_gzip(P("hostile.tar.gz"), &t, 0);
    cr_assert_eq(seal("extract '%s' -C '%s'", P("hostile.tar.gz"), P("dest")), 2, "%s", err_text());
    assert_err_has("runcated");
    assert_nothing_left(P("dest"));
}

Test(seal, extract_refuses_size_differing_from_manifest)
{
    unsigned char data[1000];
    fill_random(data, sizeof data, 8);
    item it[] = { { .name = "m.bin", .type = 'f', .data = data, .len = 600 } };
    rawtar t = { 0 };
    raw_manifest(&t, it, 1);
    raw_member(&t, "m.bin", 1000, data, 1000);
    raw_gzip(P("hostile.tar.gz"), &t, 1);
    cr_assert_eq(seal("extract '%s' -C '%s'", P("hostile.tar.gz"), P("dest")), 1, "%s", err_text());
    assert_err_has("size 1000 in its header, 600 in the manifest");
    assert_nothing_left(P("dest"));
}

Test(seal, extract_refuses_declared_size_over_limit_before_reading)
{
    /* 4 GiB declared, nothing behind it: refused at the header. */
    item it[] = { OK_ITEM };
    rawtar t = { 0 };
    raw_manifest(&t, it, 1);
    raw_member(&t, "huge.bin", 4ull << 30, "", 0);
    raw_gzip(P("hostile.tar.gz"), &t, 1);
    cr_assert_eq(seal("extract '%s' -C '%s' --max-total-size 1G", P("hostile.tar.gz"), P("dest")), 2, "%s",
                 err_text());
    assert_err_has("huge.bin': total size over the limit");
    assert_nothing_left(P("dest"));
}

/* ---- gzip damage, on a real sealed archive ---- */

static void sealed_copy_without_seal(const char *path)
{
    make_tree(P("t"), 0);
    cr_assert_eq(seal("create '%s' -o '%s'", P("t"), P("x.tar.gz")), 0, "%s", err_text());
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", P("x.tar.gz"), path);
    cr_assert_eq(system(cmd), 0);
}

Test(seal, extract_refuses_truncated_gzip)
{
    sealed_copy_without_seal(P("cut.tar.gz"));
    struct stat st;
    cr_assert_eq(stat(P("cut.tar.gz"), &st), 0);
    for (int k = 1; k <= 3; k++) { /* inside a member, its trailer, the last bytes */
        off_t at = k == 1 ? st.st_size / 2 : k == 2 ? st.st_size - 6 : st.st_size - 1;
        char name[64];
        snprintf(name, sizeof name, "cut%d.tar.gz", k);
        char cmd[1024];
        snprintf(cmd, sizeof cmd, "head -c %lld '%s' > '%s'", (long long)at, P("cut.tar.gz"), P("%s", name));
        cr_assert_eq(system(cmd), 0);
        cr_assert_eq(seal("extract '%s' -C '%s'", P("%s", name), P("dest")), 2, "cut at %lld: %s", (long long)at,
                     err_text());
        assert_err_has("truncated");
        assert_nothing_left(P("dest"));
    }
    /* A foreign (one-member, libarchive-written) gzip cut short as well. */
    item it[] = { OK_ITEM };
    craft(P("foreign.tar.gz"), it, 1);
    cr_assert_eq(stat(P("foreign.tar.gz"), &st), 0);
    cr_assert_eq(truncate(P("foreign.tar.gz"), st.st_size - 4), 0);
    cr_assert_eq(seal("extract '%s' -C '%s'", P("foreign.tar.gz"), P("dest")), 2, "%s", err_text());
    assert_err_has("truncated");
    assert_nothing_left(P("dest"));
}

Test(seal, extract_refuses_corrupt_gzip)
{
    sealed_copy_without_seal(P("bad.tar.gz"));
    size_t n;
    unsigned char *p = read_file(P("bad.tar.gz"), &n);
    /* Flip one byte at several places: deflate data, stored data, trailer. */
    size_t at[] = { n / 3, n / 2, n - 3, 40 };
    for (int k = 0; k < 4; k++) {
        p[at[k]] ^= 0x20;
        write_file(P("bad.tar.gz"), p, n);
        p[at[k]] ^= 0x20;
        cr_assert_eq(seal("extract '%s' -C '%s'", P("bad.tar.gz"), P("dest")), 2, "flip at %zu: %s", at[k],
                     err_text());
        assert_err_has("corrupt");
        assert_nothing_left(P("dest"));
    }
    /* Garbage after the last member. */
    unsigned char *q = malloc(n + 3);
    memcpy(q, p, n);
    memcpy(q + n, "abc", 3);
    write_file(P("bad.tar.gz"), q, n + 3);
    cr_assert_eq(seal("extract '%s' -C '%s'", P("bad.tar.gz"), P("dest")), 2, "%s", err_text());
    assert_err_has("not a gzip member");
    assert_nothing_left(P("dest"));
    free(q);
    free(p);
}

Test(seal, extract_refuses_existing_nonempty_dest_and_checks_seal)
{
    make_tree(P("t"), 0);
    cr_assert_eq(seal("create '%s' -o '%s'", P("t"), P("x.tar.gz")), 0, "%s", err_text());
    cr_assert_eq(seal("extract '%s' -C '%s'", P("x.tar.gz"), P("t")), 2);
    assert_err_has("not empty");
    /* A seal that does not match: refused, nothing left. */
    size_t n;
    char *s = (char *)read_file(P("x.tar.gz.seal.json"), &n);
    char *h = strstr(s, "\"sha256\": \"") + 11;
    *h = *h == '0' ? '1' : '0';
    write_file(P("x.tar.gz.seal.json"), s, n);
    free(s);
    cr_assert_eq(seal("extract '%s' -C '%s'", P("x.tar.gz"), P("dest")), 1, "%s", err_text());
    assert_err_has("differs from the seal");
    assert_nothing_left(P("dest"));
}

/* ---- verify: tampering, re-packed with libarchive and re-sealed so that
 * only the check under test can notice ---- */

typedef struct member {
    char *name;
    int dir;
    unsigned mode;
    unsigned char *data;
    size_t len;
} member;

static int read_members(const char *path, member *m, int cap)
{
    struct archive *a = archive_read_new();
    archive_read_support_format_tar(a);
    archive_read_support_filter_gzip(a);
    cr_assert_eq(archive_read_open_filename(a, path, 1 << 16), ARCHIVE_OK);
    struct archive_entry *e;
    int n = 0;
    while (archive_read_next_header(a, &e) == ARCHIVE_OK) {
        cr_assert_lt(n, cap);
        m[n].name = strdup(archive_entry_pathname(e));
        m[n].dir = archive_entry_filetype(e) == AE_IFDIR;
        m[n].mode = (unsigned)archive_entry_perm(e);
        m[n].len = (size_t)archive_entry_size(e);
        m[n].data = malloc(m[n].len + 1);
        cr_assert_eq(archive_read_data(a, m[n].data, m[n].len), (la_ssize_t)m[n].len);
        n++;
    }
    archive_read_free(a);
    return n;
}

static void free_members(member *m, int n)
{
    for (int i = 0; i < n; i++) {
        free(m[i].name);
        free(m[i].data);
    }
}

static void repack(const char *path, const member *m, int n)
{
    struct archive *a = archive_write_new();
    archive_write_set_format_pax_restricted(a);
    archive_write_add_filter_gzip(a);
    cr_assert_eq(archive_write_open_filename(a, path), ARCHIVE_OK);
    for (int i = 0; i < n; i++) {
        if (!m[i].name)
            continue; /* removed */
        item it = { .name = m[i].name, .type = m[i].dir ? 'd' : 'f', .data = m[i].data, .len = m[i].len,
                    .mode = m[i].mode };
        add_entry(a, &it);
    }
    cr_assert_eq(archive_write_close(a), ARCHIVE_OK);
    archive_write_free(a);
}

/* A seal for path with its true sha256 and size, and manifest_sha. */
static void reseal(const char *path, const char *manifest_sha)
{
    vt_sha256_hex h;
    uint64_t size;
    vt_error err;
    cr_assert_eq(vt_sha256_file(path, &h, &size, &err), VT_OK);
    char text[1024], sp[1024];
    snprintf(text, sizeof text,
             "{\"schema\": \"vt.seal/1\", \"archive\": {\"name\": \"r.tar.gz\", \"size\": %llu, \"sha256\": \"%s\"},"
             " \"manifest\": {\"sha256\": \"%s\"}}\n",
             (unsigned long long)size, h.hex, manifest_sha);
    snprintf(sp, sizeof sp, "%s.seal.json", path);
    write_file(sp, text, strlen(text));
}

static int sealed_members(member *m, int cap, char manifest_sha[65])
{
    make_tree(P("t"), 0);
    cr_assert_eq(seal("create '%s' -o '%s'", P("t"), P("x.tar.gz")), 0, "%s", err_text());
    cr_assert_eq(seal("verify '%s'", P("x.tar.gz")), 0, "%s", err_text());
    int n = read_members(P("x.tar.gz"), m, cap);
    cr_assert_str_eq(m[0].name, "manifest.json");
    sha_hex(m[0].data, m[0].len, manifest_sha);
    /* Re-packed unchanged, the archive verifies: the checks below are not
     * caused by re-packing. */
    repack(P("r.tar.gz"), m, n);
    reseal(P("r.tar.gz"), manifest_sha);
    cr_assert_eq(seal("verify '%s'", P("r.tar.gz")), 0, "%s", err_text());
    return n;
}

Test(seal, verify_catches_a_flipped_byte_in_any_member)
{
    member m[32];
    char msha[65];
    int n = sealed_members(m, 32, msha);
    int checked = 0;
    for (int i = 1; i < n; i++) {
        if (m[i].dir || m[i].len == 0)
            continue;
        size_t at = m[i].len / 2;
        m[i].data[at] ^= 1;
        repack(P("r.tar.gz"), m, n);
        reseal(P("r.tar.gz"), msha);
        m[i].data[at] ^= 1;
        cr_assert_eq(seal("verify '%s'", P("r.tar.gz")), 1, "%s: %s", m[i].name, err_text());
        char want[1024];
        snprintf(want, sizeof want, "member '%s': sha256", m[i].name);
        assert_err_has(want);
        checked++;
    }
    cr_assert_geq(checked, 5);
    /* extract checks the members too (here with the seal matching the
     * archive, so only the manifest can tell) and leaves nothing. */
    cr_assert_eq(seal("extract '%s' -C '%s'", P("r.tar.gz"), P("dest")), 1, "%s", err_text());
    assert_err_has("differs from the manifest");
    assert_nothing_left(P("dest"));
    /* And with the original seal, without re-sealing: still exit 1. */
    m[1].data[0] ^= 1;
    repack(P("r.tar.gz"), m, n);
    m[1].data[0] ^= 1;
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", P("x.tar.gz.seal.json"), P("r.tar.gz.seal.json"));
    cr_assert_eq(system(cmd), 0);
    cr_assert_eq(seal("verify '%s'", P("r.tar.gz")), 1, "%s", err_text());
    free_members(m, n);
}

Test(seal, verify_catches_a_member_added)
{
    member m[33];
    char msha[65];
    int n = sealed_members(m, 32, msha);
    m[n] = (member){ .name = strdup("sub/extra.txt"), .mode = 0644, .data = (unsigned char *)strdup("x"), .len = 1 };
    repack(P("r.tar.gz"), m, n + 1);
    reseal(P("r.tar.gz"), msha);
    cr_assert_eq(seal("verify '%s'", P("r.tar.gz")), 1, "%s", err_text());
    assert_err_has("member 'sub/extra.txt': in the archive, not in the manifest");
    free_members(m, n + 1);
}

Test(seal, verify_catches_a_member_removed)
{
    member m[32];
    char msha[65];
    int n = sealed_members(m, 32, msha);
    int k = -1;
    for (int i = 0; i < n; i++)
        if (strcmp(m[i].name, "run.sh") == 0)
            k = i;
    cr_assert_geq(k, 0);
    char *name = m[k].name;
    m[k].name = NULL;
    repack(P("r.tar.gz"), m, n);
    m[k].name = name;
    reseal(P("r.tar.gz"), msha);
    cr_assert_eq(seal("verify '%s'", P("r.tar.gz")), 1, "%s", err_text());
    assert_err_has("member 'run.sh': in the manifest, missing from the archive");
    /* The last member removed: found missing at the end. */
    name = m[n - 1].name;
    m[n - 1].name = NULL;
    repack(P("r.tar.gz"), m, n);
    m[n - 1].name = name;
    reseal(P("r.tar.gz"), msha);
    cr_assert_eq(seal("verify '%s'", P("r.tar.gz")), 1, "%s", err_text());
    assert_err_has("missing from the archive");
    free_members(m, n);
}

Test(seal, verify_catches_the_manifest_edited)
{
    member m[32];
    char msha[65];
    int n = sealed_members(m, 32, msha);
    /* One hex digit of a member's sha256 changed, the seal left alone. */
    char *h = strstr((char *)m[0].data, "\"sha256\":\"") + 10;
    *h = *h == '0' ? '1' : '0';
    repack(P("r.tar.gz"), m, n);
    reseal(P("r.tar.gz"), msha);
    cr_assert_eq(seal("verify '%s'", P("r.tar.gz")), 1, "%s", err_text());
    assert_err_has("manifest.json: sha256");
    assert_err_has("differs from the seal");
    /* The seal forged to match the edited manifest: the member betrays it. */
    char esha[65];
    sha_hex(m[0].data, m[0].len, esha);
    reseal(P("r.tar.gz"), esha);
    cr_assert_eq(seal("verify '%s'", P("r.tar.gz")), 1, "%s", err_text());
    assert_err_has("differs from the manifest");
    /* A manifest that is not canonical is malformed input. */
    *h = *h == '0' ? '1' : '0';
    char *nm = malloc(m[0].len + 2);
    memcpy(nm, m[0].data, m[0].len);
    memcpy(nm + m[0].len, " \n", 2);
    free(m[0].data);
    m[0].data = (unsigned char *)nm;
    m[0].len += 2;
    repack(P("r.tar.gz"), m, n);
    sha_hex(m[0].data, m[0].len, esha);
    reseal(P("r.tar.gz"), esha);
    cr_assert_eq(seal("verify '%s'", P("r.tar.gz")), 2, "%s", err_text());
    assert_err_has("canonical");
    free_members(m, n);
}

/* A byte flipped in the compressed archive itself: whatever the gzip reader
 * then makes of it, against a seal it is a failed check (exit 1) named by
 * the archive's hash, at every one of a spread of offsets. */
Test(seal, verify_catches_a_byte_flipped_in_the_compressed_archive)
{
    make_tree(P("t"), 0);
    cr_assert_eq(seal("create '%s' -o '%s'", P("t"), P("x.tar.gz")), 0, "%s", err_text());
    size_t n;
    unsigned char *orig = read_file(P("x.tar.gz"), &n);
    for (size_t k = 0; k < 16; k++) {
        size_t at = k * (n - 1) / 15;
        unsigned char *b = malloc(n);
        memcpy(b, orig, n);
        b[at] ^= 0x20;
        write_file(P("x.tar.gz"), b, n);
        cr_assert_eq(seal("verify '%s'", P("x.tar.gz")), 1, "offset %zu: %s", at, err_text());
        assert_err_has("differs from the seal");
        free(b);
    }
    free(orig);
}

Test(seal, verify_catches_the_seal_edited)
{
    make_tree(P("t"), 0);
    cr_assert_eq(seal("create '%s' -o '%s' --attestation", P("t"), P("x.tar.gz")), 0, "%s", err_text());
    size_t n;
    char *orig = (char *)read_file(P("x.tar.gz.seal.json"), &n);
    char *s = strdup(orig);
    /* archive sha256 */
    char *h = strstr(s, "\"sha256\": \"") + 11;
    *h = *h == '0' ? '1' : '0';
    write_file(P("x.tar.gz.seal.json"), s, n);
    cr_assert_eq(seal("verify '%s'", P("x.tar.gz")), 1, "%s", err_text());
    assert_err_has("x.tar.gz: sha256");
    assert_err_has("differs from the seal");
    /* manifest sha256 */
    strcpy(s, orig);
    h = strstr(strstr(s, "\"manifest\""), "\"sha256\": \"") + 11;
    *h = *h == '0' ? '1' : '0';
    write_file(P("x.tar.gz.seal.json"), s, n);
    cr_assert_eq(seal("verify '%s'", P("x.tar.gz")), 1, "%s", err_text());
    assert_err_has("manifest.json: sha256");
    /* archive size */
    strcpy(s, orig);
    h = strstr(s, "\"size\": ") + 8;
    *h = *h == '9' ? '1' : (char)(*h + 1);
    write_file(P("x.tar.gz.seal.json"), s, n);
    cr_assert_eq(seal("verify '%s'", P("x.tar.gz")), 1, "%s", err_text());
    assert_err_has("differs from the seal");
    /* malformed or missing: exit 2 */
    write_file(P("x.tar.gz.seal.json"), s, n / 2);
    cr_assert_eq(seal("verify '%s'", P("x.tar.gz")), 2, "%s", err_text());
    unlink(P("x.tar.gz.seal.json"));
    cr_assert_eq(seal("verify '%s'", P("x.tar.gz")), 2, "%s", err_text());
    /* The attestation is checked too. */
    write_file(P("x.tar.gz.seal.json"), orig, n);
    cr_assert_eq(seal("verify '%s'", P("x.tar.gz")), 0, "%s", err_text());
    char *att = (char *)read_file(P("x.tar.gz.intoto.json"), &n);
    h = strstr(att, "\"sha256\": \"") + 11;
    *h = *h == '0' ? '1' : '0';
    write_file(P("x.tar.gz.intoto.json"), att, n);
    cr_assert_eq(seal("verify '%s'", P("x.tar.gz")), 1, "%s", err_text());
    assert_err_has("intoto.json: subject digest");
    free(att);
    free(s);
    free(orig);
}

/* Injected failures, SQLite style: while fail_rename is set, the rename
 * calls libvt makes (the test binary links it statically, so its calls bind
 * to these) fail with EIO; otherwise they pass through to the C library. */
static int fail_rename;

int rename(const char *from, const char *to)
{
    static int (*real)(const char *, const char *);
    if (fail_rename) {
        errno = EIO;
        return -1;
    }
    if (!real)
        *(void **)&real = dlsym(RTLD_NEXT, "rename");
    return real(from, to);
}

int renameat2(int fa, const char *from, int fb, const char *to, unsigned int flags)
{
    static int (*real)(int, const char *, int, const char *, unsigned int);
    if (fail_rename) {
        errno = EIO;
        return -1;
    }
    if (!real)
        *(void **)&real = dlsym(RTLD_NEXT, "renameat2");
    return real(fa, from, fb, to, flags);
}

/* Extraction whose final move into place fails (new and existing empty
 * destinations) is an error naming the destination, leaves no destination
 * and no temporary tree: never a success with nothing extracted. */
Test(seal, extract_fails_when_the_tree_cannot_be_moved_into_place)
{
    make_tree(P("t"), 0);
    cr_assert_eq(seal("create '%s' -o '%s'", P("t"), P("x.tar.gz")), 0, "%s", err_text());
    for (int existing = 0; existing < 2; existing++) {
        if (existing)
            cr_assert_eq(mkdir(P("out"), 0755), 0);
        vt_error err;
        vt_error_clear(&err);
        vt_seal *s = vt_seal_new();
        cr_assert_not_null(s);
        fail_rename = 1;
        int rc = vt_seal_extract(s, P("x.tar.gz"), P("out"), &err);
        fail_rename = 0;
        vt_seal_free(s);
        cr_assert_eq(rc, VT_EINPUT, "existing %d: rc %d: %s", existing, rc, err.msg);
        cr_assert(strstr(err.msg, "cannot move the extracted tree into place"), "%s", err.msg);
        DIR *d = opendir(tmp);
        cr_assert_not_null(d);
        struct dirent *e;
        while ((e = readdir(d)))
            cr_assert(!strstr(e->d_name, "vt-extract"), "temporary tree left: %s", e->d_name);
        closedir(d);
        if (existing) {
            cr_assert_eq(rmdir(P("out")), 0, "the existing destination is left as it was: empty");
        } else {
            cr_assert(!exists(P("out")), "no destination");
        }
    }
    cr_assert_eq(seal("extract '%s' -C '%s'", P("x.tar.gz"), P("out")), 0, "%s", err_text());
}

/* With stdin closed, the first file vt opens gets descriptor 0, which is a
 * file like any other: create, verify and extract still work. */
Test(seal, works_with_standard_input_closed)
{
    make_tree(P("t"), 0);
    cr_assert_eq(seal("create '%s' -o '%s' 0<&-", P("t"), P("x.tar.gz")), 0, "%s", err_text());
    cr_assert_eq(seal("verify '%s' 0<&-", P("x.tar.gz")), 0, "%s", err_text());
    cr_assert_eq(seal("extract '%s' -C '%s' 0<&-", P("x.tar.gz"), P("out")), 0, "%s", err_text());
}

/* A seal whose fields are malformed is bad input (exit 2) naming the field,
 * never a seal that is quietly not there: archive.size must be an integer
 * >= 0, the digests 64 lower-case hex digits, the schema vt.seal/1. */
Test(seal, verify_refuses_a_malformed_seal_naming_the_field)
{
    make_tree(P("t"), 0);
    cr_assert_eq(seal("create '%s' -o '%s'", P("t"), P("x.tar.gz")), 0, "%s", err_text());
    size_t n;
    char *orig = (char *)read_file(P("x.tar.gz.seal.json"), &n);
    static const struct {
        const char *key, *value, *field;
    } cases[] = {
        { "\"size\": ", "-1", "archive.size" },
        { "\"size\": ", "1.5", "archive.size" },
        { "\"size\": ", "\"12\"", "archive.size" },
        { "\"size\": ", "1e300", "archive.size" },
        { "\"sha256\": ", "\"ABC\"", "archive.sha256" },
        { "\"schema\": ", "\"vt.seal/9\"", "schema" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *at = strstr(orig, cases[i].key);
        cr_assert_not_null(at, "%s", cases[i].key);
        at += strlen(cases[i].key);
        size_t end = (size_t)(at - orig) + strcspn(at, ",\n}");
        char buf[8192];
        cr_assert_lt(n + 64, sizeof buf);
        int len = snprintf(buf, sizeof buf, "%.*s%s%s", (int)(at - orig), orig, cases[i].value, orig + end);
        write_file(P("x.tar.gz.seal.json"), buf, (size_t)len);
        cr_assert_eq(seal("verify '%s'", P("x.tar.gz")), 2, "%s = %s: %s", cases[i].field, cases[i].value, err_text());
        assert_err_has(cases[i].field);
    }
    write_file(P("x.tar.gz.seal.json"), orig, n);
    cr_assert_eq(seal("verify '%s'", P("x.tar.gz")), 0, "%s", err_text());
    free(orig);
}

/* The seal, the attestation and the manifest are read as strict JSON
 * (common/vt_json.h): cJSON alone would take "vt.seal/1\u0000x" as the
 * schema and ignore whatever follows the document. */
Test(seal, seal_attestation_and_manifest_json_are_read_strictly)
{
    make_tree(P("t"), 0);
    cr_assert_eq(seal("create '%s' -o '%s' --attestation", P("t"), P("x.tar.gz")), 0, "%s", err_text());
    size_t n, na;
    char *orig = (char *)read_file(P("x.tar.gz.seal.json"), &n);
    char *att = (char *)read_file(P("x.tar.gz.intoto.json"), &na);
    char *s = malloc(n + 64);

    /* A second object after the seal. */
    memcpy(s, orig, n);
    memcpy(s + n, "{}\n", 3);
    write_file(P("x.tar.gz.seal.json"), s, n + 3);
    cr_assert_eq(seal("verify '%s'", P("x.tar.gz")), 2, "%s", err_text());
    char want[256];
    snprintf(want, sizeof want, "x.tar.gz.seal.json: offset %zu: expected only whitespace after the JSON document",
             n);
    assert_err_has(want);
    /* A \u0000 cutting the schema short. */
    char *q = strstr(orig, "\"vt.seal/1\"");
    cr_assert_not_null(q);
    size_t at = (size_t)(q - orig) + 10;
    memcpy(s, orig, at);
    memcpy(s + at, "\\u0000x", 7);
    memcpy(s + at + 7, orig + at, n - at);
    write_file(P("x.tar.gz.seal.json"), s, n + 7);
    cr_assert_eq(seal("verify '%s'", P("x.tar.gz")), 2, "%s", err_text());
    snprintf(want, sizeof want, "x.tar.gz.seal.json: offset %zu: field schema: expected a string without a \\u0000",
             at);
    assert_err_has(want);
    /* A NUL byte after the attestation. */
    write_file(P("x.tar.gz.seal.json"), orig, n);
    write_file(P("x.tar.gz.intoto.json"), att, na);
    write_file(P("x.tar.gz.intoto.json"), att, na + 1); /* read_file's terminating NUL */
    cr_assert_eq(seal("verify '%s'", P("x.tar.gz")), 2, "%s", err_text());
    snprintf(want, sizeof want, "x.tar.gz.intoto.json: offset %zu: expected only whitespace after the JSON document "
             "(found a NUL byte)", na);
    assert_err_has(want);
    /* Both as written: verified. */
    write_file(P("x.tar.gz.intoto.json"), att, na);
    cr_assert_eq(seal("verify '%s'", P("x.tar.gz")), 0, "%s", err_text());
    free(s);
    free(att);
    free(orig);

    /* A manifest entry "ok.txt\u0000.evil" for the member ok.txt is refused;
     * "ok.txt" extracts. */
    for (int evil = 1; evil >= 0; evil--) {
        struct archive *a = archive_write_new();
        archive_write_set_format_pax_restricted(a);
        archive_write_add_filter_gzip(a);
        cr_assert_eq(archive_write_open_filename(a, P("nul.tar.gz")), ARCHIVE_OK, "%s", archive_error_string(a));
        item ok = OK_ITEM;
        char h[65], m[1024];
        sha_hex(ok.data, ok.len, h);
        int ml = snprintf(m, sizeof m, "{\"schema\":\"vt.seal.manifest/1\",\"members\":[\n{\"path\":\"ok.txt%s\","
                          "\"type\":\"file\",\"mode\":\"0644\",\"size\":%zu,\"sha256\":\"%s\"}\n]}\n",
                          evil ? "\\u0000.evil" : "", ok.len, h);
        item mi = { .name = "manifest.json", .type = 'f', .data = m, .len = (size_t)ml };
        add_entry(a, &mi);
        add_entry(a, &ok);
        cr_assert_eq(archive_write_close(a), ARCHIVE_OK);
        archive_write_free(a);
        int rc = seal("extract '%s' -C '%s'", P("nul.tar.gz"), P("dest"));
        if (!evil) {
            cr_assert_eq(rc, 0, "%s", err_text());
            cr_assert(exists(P("dest/ok.txt")));
            break;
        }
        cr_assert_eq(rc, 2, "%s", err_text());
        assert_err_has("nul.tar.gz: manifest.json: offset 58: field members[0].path: expected a string without a "
                       "\\u0000 escape");
        assert_nothing_left(P("dest"));
    }
}

Test(seal, unreadable_or_not_an_archive_is_exit_2)
{
    write_text(P("plain.txt"), "not gzip at all\n");
    cr_assert_eq(seal("verify '%s'", P("plain.txt")), 2);
    assert_err_has("plain.txt.seal.json");
    cr_assert_eq(seal("extract '%s' -C '%s'", P("plain.txt"), P("dest")), 2);
    assert_err_has("not a gzip file");
    assert_nothing_left(P("dest"));
    cr_assert_eq(seal("extract '%s' -C '%s'", P("missing.tar.gz"), P("dest")), 2);
    assert_nothing_left(P("dest"));
    cr_assert_eq(seal("bogus"), 2);
}

/* ------------------------------------------------ survivors of mutation */

#include "evidence/seal_internal.h"

/* The items (no manifest of their own) as a tar.gz, in order. */
static void craft_raw(const char *path, const item *items, int n)
{
    struct archive *a = archive_write_new();
    archive_write_set_format_pax_restricted(a);
    archive_write_add_filter_gzip(a);
    cr_assert_eq(archive_write_open_filename(a, path), ARCHIVE_OK, "%s", archive_error_string(a));
    for (int i = 0; i < n; i++)
        add_entry(a, &items[i]);
    cr_assert_eq(archive_write_close(a), ARCHIVE_OK);
    archive_write_free(a);
}

Test(seal, extract_refuses_an_archive_whose_first_member_is_not_the_manifest)
{
    size_t ml;
    item ok[] = { OK_ITEM };
    char *m = manifest_of(ok, 1, &ml);
    item it[] = { OK_ITEM, { .name = "manifest.json", .type = 'f', .data = m, .len = ml } };
    craft_raw(P("late.tar.gz"), it, 2);
    cr_assert_eq(seal("extract '%s' -C '%s'", P("late.tar.gz"), P("dest")), 2, "%s", err_text());
    assert_err_has("first member is 'ok.txt': expected manifest.json (not a vt-seal archive?)");
    assert_nothing_left(P("dest"));
    /* In its place it extracts. */
    item good[] = { { .name = "manifest.json", .type = 'f', .data = m, .len = ml }, OK_ITEM };
    craft_raw(P("good.tar.gz"), good, 2);
    cr_assert_eq(seal("extract '%s' -C '%s'", P("good.tar.gz"), P("dest")), 0, "%s", err_text());
    free(m);
}

Test(seal, extract_refuses_a_manifest_member_of_negative_size)
{
    static const char m[] = "{\"schema\":\"vt.seal.manifest/1\",\"members\":[\n{\"path\":\"ok.txt\",\"type\":\"file\","
                            "\"mode\":\"0644\",\"size\":-16,\"sha256\":\"0000000000000000000000000000000000000000000000"
                            "000000000000000000\"}\n]}\n";
    item it[] = { { .name = "manifest.json", .type = 'f', .data = m, .len = sizeof m - 1 }, OK_ITEM };
    craft_raw(P("neg.tar.gz"), it, 2);
    cr_assert_eq(seal("extract '%s' -C '%s'", P("neg.tar.gz"), P("dest")), 2, "%s", err_text());
    assert_err_has("members[0].size: expected an integer >= 0");
    assert_nothing_left(P("dest"));
}

/* DEST may not name a directory above or the same (".", ".."). */
Test(seal, extract_refuses_a_destination_of_dot_or_dot_dot)
{
    item it[] = { OK_ITEM };
    craft(P("x.tar.gz"), it, 1);
    mkdir(P("d"), 0755);
    cr_assert_eq(seal("extract '%s' -C '%s/..'", P("x.tar.gz"), P("d")), 2, "%s", err_text());
    assert_err_has("expected a new or empty directory");
    cr_assert_eq(seal("extract '%s' -C '%s/.'", P("x.tar.gz"), P("d")), 2, "%s", err_text());
    cr_assert_eq(seal("extract '%s' -C '%s/e'", P("x.tar.gz"), P("d")), 0, "%s", err_text());
}

Test(seal, hex64_means_64_lower_case_hex_digits)
{
    cr_assert(vt_seal_is_hex64("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"));
    cr_assert(!vt_seal_is_hex64("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde"));
    cr_assert(!vt_seal_is_hex64("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0"));
    cr_assert(!vt_seal_is_hex64("0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef"));
    cr_assert(!vt_seal_is_hex64(""));
    cr_assert(!vt_seal_is_hex64(NULL));
}

/* An archive vt did not write, its gzip in two members (as `cat a.gz b.gz`
 * makes): read as one stream, member after member. */
Test(seal, extract_reads_a_gzip_of_several_members)
{
    item it[] = { { .name = "b.txt", .type = 'f', .data = "bee\n", .len = 4 }, OK_ITEM };
    craft(P("one.tar.gz"), it, 2);
    cr_assert_eq(seal("extract '%s' -C '%s'", P("one.tar.gz"), P("dest1")), 0, "%s", err_text());
    char cmd[1200];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && gzip -dc one.tar.gz > one.tar && head -c 1024 one.tar | gzip -n > two.tar.gz && "
             "tail -c +1025 one.tar | gzip -n >> two.tar.gz", tmp);
    cr_assert_eq(system(cmd), 0);
    cr_assert_eq(seal("extract '%s' -C '%s'", P("two.tar.gz"), P("dest")), 0, "%s", err_text());
    size_t n;
    char *b = (char *)read_file(P("dest/b.txt"), &n);
    cr_assert(n == 4 && memcmp(b, "bee\n", 4) == 0);
    free(b);
}

Test(seal, create_refuses_a_file_given_as_the_directory)
{
    FILE *f = fopen(P("plain"), "w");
    cr_assert_not_null(f);
    fputs("not a directory\n", f);
    fclose(f);
    cr_assert_eq(seal("create '%s' -o '%s'", P("plain"), P("p.tar.gz")), 2, "%s", err_text());
    assert_err_has("plain: a regular file: expected a directory");
    cr_assert(!exists(P("p.tar.gz")));
}

/* Archives only Python's tarfile and gzip would write this way. */
static void python_craft(const char *script)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cd '%s' && python3 -c '%s'", tmp, script);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
}

Test(seal, extract_refuses_a_malformed_gzip_extra_field)
{
    /* FEXTRA set, a subfield that claims 20 bytes of 2. */
    python_craft("import gzip,struct\n"
                 "d = gzip.compress(b\"x\" * 10, mtime=0)\n"
                 "h = bytearray(d[:10]); h[3] |= 4\n"
                 "x = b\"AB\" + struct.pack(\"<H\", 20) + b\"12\"\n"
                 "open(\"extra.tar.gz\", \"wb\").write(bytes(h) + struct.pack(\"<H\", len(x)) + x + d[10:])\n");
    cr_assert_eq(seal("extract '%s' -C '%s'", P("extra.tar.gz"), P("dest")), 2, "%s", err_text());
    assert_err_has("offset 0: gzip header: malformed extra field");
    assert_nothing_left(P("dest"));
}

Test(seal, extract_refuses_a_directory_with_data)
{
    python_craft("import tarfile,io,hashlib\n"
                 "m = b\"{\\\"schema\\\":\\\"vt.seal.manifest/1\\\",\\\"members\\\":[\\n"
                 "{\\\"path\\\":\\\"d/\\\",\\\"type\\\":\\\"dir\\\",\\\"mode\\\":\\\"0755\\\"}\\n]}\\n\"\n"
                 "t = tarfile.open(\"dirdata.tar.gz\", \"w:gz\", format=tarfile.PAX_FORMAT)\n"
                 "i = tarfile.TarInfo(\"manifest.json\"); i.size = len(m); t.addfile(i, io.BytesIO(m))\n"
                 "i = tarfile.TarInfo(\"d\"); i.type = tarfile.DIRTYPE; i.mode = 0o755; i.size = 5\n"
                 "t.addfile(i, io.BytesIO(b\"hello\"))\n"
                 "t.close()\n");
    /* libarchive reads it as damaged before vt's own check could see it. */
    cr_assert_eq(seal("extract '%s' -C '%s'", P("dirdata.tar.gz"), P("dest")), 2, "%s", err_text());
    assert_err_has("tar header: Damaged tar archive");
    assert_nothing_left(P("dest"));
}

/* ---- verify --json ---- */

/* tmp/out.txt of the last seal(): one JSON document (vt's strict reader)
 * named vt.seal-verify/1. */
static cJSON *verify_doc(void)
{
    size_t n;
    unsigned char *out = read_file(P("out.txt"), &n);
    vt_error err;
    vt_error_clear(&err);
    cJSON *doc = vt_json_parse((const char *)out, n, "stdout", &err);
    cr_assert_not_null(doc, "%s:\n%.2000s", err.msg, out);
    free(out);
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(doc, "schema");
    cr_assert(cJSON_IsString(s) && strcmp(s->valuestring, "vt.seal-verify/1") == 0, "schema");
    return doc;
}

static const char *str_of(const cJSON *o, const char *key)
{
    const cJSON *v = vt_test_get(o, key);
    cr_assert(cJSON_IsString(v), "member %s: expected a string", key);
    return v->valuestring;
}

/* The members of the JSON are the archive's, in order, as far as count: path,
 * type, mode, size, sha256 of the data. */
static void expect_members(const cJSON *doc, const member *m, int count)
{
    const cJSON *arr = vt_test_get(doc, "members");
    cr_assert_eq(cJSON_GetArraySize(arr), count);
    cr_assert_eq(vt_test_get(doc, "members_matched")->valuedouble, count);
    for (int i = 0; i < count; i++) {
        const member *x = &m[i + 1]; /* after manifest.json */
        const cJSON *o = cJSON_GetArrayItem(arr, i);
        char name[1024], sha[65], mode[8];
        snprintf(name, sizeof name, "%s%s", x->name, x->dir && x->name[strlen(x->name) - 1] != '/' ? "/" : "");
        cr_assert_str_eq(str_of(o, "path"), name);
        cr_assert_str_eq(str_of(o, "type"), x->dir ? "dir" : "file");
        snprintf(mode, sizeof mode, "%04o", x->mode);
        cr_assert_str_eq(str_of(o, "mode"), mode, "%s", name);
        cr_assert_eq(vt_test_get(o, "size")->valuedouble, (double)(x->dir ? 0 : x->len), "%s", name);
        if (x->dir) {
            cr_assert(cJSON_IsNull(vt_test_get(o, "sha256")), "%s", name);
        } else {
            sha_hex(x->data, x->len, sha);
            cr_assert_str_eq(str_of(o, "sha256"), sha, "%s", name);
        }
    }
}

/* vt-seal verify --json (vt.seal-verify/1) says what verify checked: the
 * archive's size and sha256, the manifest's sha256 and member count (the
 * numbers of the text line of the same check), each member as the archive
 * holds it, the seal and attestation matched; on a member changed (and
 * the archive resealed, so that only the manifest can tell) exit 1 still
 * with the document: verified false, the members before it, the problem
 * stderr gives; refused input (exit 2) has no document. */
Test(seal, verify_json_says_what_it_checked)
{
    member m[32];
    char msha[65];
    int n = sealed_members(m, 32, msha);
    cr_assert_eq(seal("create '%s' -o '%s' --attestation --overwrite", P("t"), P("x.tar.gz")), 0, "%s", err_text());
    cr_assert_eq(seal("verify '%s'", P("x.tar.gz")), 0, "%s", err_text());
    size_t tn;
    char *text = (char *)read_file(P("out.txt"), &tn);
    cr_assert_eq(seal("verify '%s' --json", P("x.tar.gz")), 0, "%s", err_text());
    cr_assert_str_eq(err_text(), "");
    cJSON *doc = verify_doc();
    const cJSON *ar = vt_test_get(doc, "archive"), *ma = vt_test_get(doc, "manifest");
    const cJSON *se = vt_test_get(doc, "seal"), *at = vt_test_get(doc, "attestation");
    char line[2048];
    snprintf(line, sizeof line, "%s: OK: %d members match the manifest (sha256 %s)%s%s\n", str_of(ar, "path"),
             (int)vt_test_get(ma, "members")->valuedouble, str_of(ma, "sha256"),
             cJSON_IsTrue(vt_test_get(se, "matched")) ? "; archive matches its seal" : "; no seal: manifest only",
             cJSON_IsTrue(vt_test_get(at, "matched")) ? " and attestation" : "");
    cr_assert_str_eq(text, line, "the text line from the JSON's values");
    free(text);
    vt_sha256_hex h;
    uint64_t size;
    vt_error err;
    cr_assert_eq(vt_sha256_file(P("x.tar.gz"), &h, &size, &err), VT_OK);
    cr_assert_str_eq(str_of(ar, "sha256"), h.hex);
    cr_assert_eq(vt_test_get(ar, "size")->valuedouble, (double)size);
    cr_assert_str_eq(str_of(ma, "sha256"), msha);
    cr_assert_eq(vt_test_get(ma, "members")->valuedouble, n - 1);
    cr_assert_str_eq(str_of(se, "path"), P("x.tar.gz.seal.json"));
    cr_assert_str_eq(str_of(at, "path"), P("x.tar.gz.intoto.json"));
    cr_assert(cJSON_IsTrue(vt_test_get(at, "matched")));
    cr_assert(cJSON_IsTrue(vt_test_get(doc, "verified")));
    cr_assert(cJSON_IsNull(vt_test_get(doc, "problem")));
    expect_members(doc, m, n - 1);
    cJSON_Delete(doc);

    /* A file's byte changed, the archive resealed: the members before it
     * matched, then the problem. */
    int k = 1;
    while (k < n && (m[k].dir || m[k].len == 0 || k < n / 2))
        k++;
    cr_assert_lt(k, n);
    m[k].data[0] ^= 1;
    repack(P("r.tar.gz"), m, n);
    reseal(P("r.tar.gz"), msha);
    m[k].data[0] ^= 1;
    cr_assert_eq(seal("verify '%s' --json", P("r.tar.gz")), 1, "%s", err_text());
    doc = verify_doc();
    cr_assert(cJSON_IsFalse(vt_test_get(doc, "verified")));
    char want[1200];
    snprintf(want, sizeof want, "member '%s': sha256", m[k].name);
    cr_assert(strstr(str_of(doc, "problem"), want), "%s", str_of(doc, "problem"));
    snprintf(want, sizeof want, "vt-seal verify: %s\n", str_of(doc, "problem"));
    cr_assert_str_eq(err_text(), want, "the problem is stderr's one line");
    cr_assert(cJSON_IsNull(vt_test_get(vt_test_get(doc, "archive"), "sha256")), "not read to its end");
    cr_assert_str_eq(str_of(vt_test_get(doc, "manifest"), "sha256"), msha);
    cr_assert(cJSON_IsFalse(vt_test_get(vt_test_get(doc, "seal"), "matched")));
    expect_members(doc, m, k - 1);
    cJSON_Delete(doc);
    free_members(m, n);

    /* Refused input: no seal. Exit 2, one line, nothing on stdout. */
    cr_assert_eq(seal("verify '%s' --json", P("nothing.tar.gz")), 2);
    size_t on;
    unsigned char *out = read_file(P("out.txt"), &on);
    cr_assert_eq(on, 0, "no JSON on exit 2: %s", out);
    free(out);
    cr_assert(strchr(err_text(), '\n') && !strchr(err_text(), '\n')[1], "%s", err_text());
    /* --json is verify's only. */
    cr_assert_eq(seal("create '%s' -o '%s' --json", P("t"), P("y.tar.gz")), 2);
}
