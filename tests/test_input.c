/* common/vt_input.h: the one way vt opens an input file (issue 19). A FIFO,
 * a directory, a device, a link where none is wanted, a file over the size
 * bound: each refused with VT_EINPUT and one line naming the file and what
 * was expected, without waiting on the FIFO; a side-file name is a plain
 * file name or nothing. */
#include <criterion/criterion.h>

#include "common/vt_input.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char tdir[1024];
static char pbuf[1200];

static const char *P(const char *name)
{
    snprintf(pbuf, sizeof pbuf, "%s/%s", tdir, name);
    return pbuf;
}

static void setup(void)
{
    const char *base = getenv("TMPDIR");
    snprintf(tdir, sizeof tdir, "%s/vt-input-XXXXXX", base && *base ? base : "/tmp");
    cr_assert_not_null(mkdtemp(tdir));
    FILE *f = fopen(P("plain"), "wb");
    cr_assert_not_null(f);
    fputs("0123456789", f);
    fclose(f);
    cr_assert_eq(mkfifo(P("fifo"), 0600), 0);
    cr_assert_eq(mkdir(P("dir"), 0700), 0);
    cr_assert_eq(symlink("plain", P("link")), 0);
}

static void teardown(void)
{
    const char *names[] = { "plain", "fifo", "link" };
    for (size_t i = 0; i < 3; i++)
        unlink(P(names[i]));
    rmdir(P("dir"));
    rmdir(tdir);
}

TestSuite(input, .init = setup, .fini = teardown, .timeout = 60);

static void refused(const char *name, const vt_input_opts *o, const char *want)
{
    vt_error err;
    vt_error_clear(&err);
    int fd = 123;
    uint64_t size = 7;
    char path[1200];
    snprintf(path, sizeof path, "%s", P(name));
    cr_assert_eq(vt_input_open(path, o, &fd, &size, &err), VT_EINPUT, "%s", name);
    cr_assert_eq(err.code, VT_EINPUT);
    cr_assert_eq(fd, -1);
    cr_assert(strstr(err.msg, path) && strstr(err.msg, want), "%s", err.msg);
    cr_assert_null(strchr(err.msg, '\n'));
}

Test(input, a_regular_file_opens_with_its_size_and_blocking)
{
    int fd;
    uint64_t size;
    vt_error err;
    cr_assert_eq(vt_input_open(P("plain"), NULL, &fd, &size, &err), VT_OK, "%s", err.msg);
    cr_assert_eq(size, 10);
    cr_assert_eq(fcntl(fd, F_GETFL) & O_NONBLOCK, 0, "O_NONBLOCK left set");
    cr_assert_neq(fcntl(fd, F_GETFD) & FD_CLOEXEC, 0);
    close(fd);
    char *buf;
    size_t len;
    cr_assert_eq(vt_input_read_all(P("plain"), NULL, &buf, &len, &err), VT_OK, "%s", err.msg);
    cr_assert_eq(len, 10);
    cr_assert_str_eq(buf, "0123456789");
    free(buf);
}

Test(input, a_fifo_a_directory_and_a_device_are_refused_naming_what_they_are)
{
    refused("fifo", NULL, "a FIFO: expected a regular file");
    refused("dir", NULL, "a directory: expected a regular file");
    vt_error err;
    int fd;
    cr_assert_eq(vt_input_open("/dev/null", NULL, &fd, NULL, &err), VT_EINPUT);
    cr_assert(strstr(err.msg, "/dev/null: a device: expected a regular file"), "%s", err.msg);
    vt_input_opts o = { .what = "a JSON document" };
    refused("fifo", &o, "a FIFO: expected a JSON document");
}

Test(input, a_link_is_followed_unless_no_follow)
{
    int fd;
    vt_error err;
    cr_assert_eq(vt_input_open(P("link"), NULL, &fd, NULL, &err), VT_OK, "%s", err.msg);
    close(fd);
    vt_input_opts o = { .no_follow = 1 };
    refused("link", &o, "a symbolic link: expected a regular file");
}

Test(input, the_size_bound_is_checked_before_reading)
{
    vt_input_opts o = { .max_bytes = 9 };
    refused("plain", &o, "10 bytes: expected at most 9");
    char *buf = (char *)1;
    size_t len = 5;
    vt_error err;
    cr_assert_eq(vt_input_read_all(P("plain"), &o, &buf, &len, &err), VT_EINPUT);
    cr_assert_null(buf);
    cr_assert_eq(len, 0);
    o.max_bytes = 10;
    cr_assert_eq(vt_input_read_all(P("plain"), &o, &buf, &len, &err), VT_OK, "%s", err.msg);
    free(buf);
}

Test(input, a_directory_where_one_is_asked_for)
{
    int fd;
    vt_error err;
    cr_assert_eq(vt_input_opendir(P("dir"), NULL, &fd, &err), VT_OK, "%s", err.msg);
    close(fd);
    cr_assert_eq(vt_input_opendir(P("fifo"), NULL, &fd, &err), VT_EINPUT);
    cr_assert(strstr(err.msg, "fifo: a FIFO: expected a directory"), "%s", err.msg);
    cr_assert_eq(vt_input_opendir(P("plain"), NULL, &fd, &err), VT_EINPUT);
    cr_assert(strstr(err.msg, "plain: a regular file: expected a directory"), "%s", err.msg);
    cr_assert_eq(vt_input_opendir(P("missing"), NULL, &fd, &err), VT_EINPUT);
    cr_assert(strstr(err.msg, "missing: cannot read: No such file or directory"), "%s", err.msg);
}

Test(input, a_side_file_name_is_a_plain_file_name)
{
    const char *good[] = { "e.logits", "x", "..x", "a.b.c", "é.topk" };
    const char *bad[] = { "", ".", "..", "../x", "/etc/passwd", "sub/x", "x/", "a\nb", "a\x1b[31m", "a\x7f" };
    for (size_t i = 0; i < sizeof good / sizeof *good; i++)
        cr_assert(vt_input_plain_name(good[i]), "%s", good[i]);
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        cr_assert(!vt_input_plain_name(bad[i]), "%s", bad[i]);
    cr_assert(!vt_input_plain_name(NULL));
}
