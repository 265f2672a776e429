/* vt_input: the one way vt opens a file it reads (issue 19, "Hostile input").
 *
 * Every input is opened O_RDONLY|O_CLOEXEC|O_NONBLOCK (so a FIFO cannot make
 * open() wait for a writer), with O_NOFOLLOW where a link is not wanted,
 * fstat'd, and refused unless it is a regular file (or a directory, by
 * vt_input_opendir, where a directory is asked for); its size is checked
 * before anything is read; O_NONBLOCK is then cleared. Refusals are VT_EINPUT
 * with one line: "PATH: a FIFO: expected a regular file". Nothing exits. */
#ifndef VT_INPUT_H
#define VT_INPUT_H

#include "vt_error.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct vt_input_opts {
    int no_follow;      /* refuse a symbolic link as the last component */
    uint64_t max_bytes; /* 0: no limit */
    const char *what;   /* what was expected, "a regular file" if NULL */
} vt_input_opts;

/* Opens path as a regular file: *fd (O_CLOEXEC, blocking) and *size.
 * o may be NULL. */
int vt_input_open(const char *path, const vt_input_opts *o, int *fd, uint64_t *size, vt_error *err);

/* As vt_input_open, with a stdio stream ("rb"). */
int vt_input_fopen(const char *path, const vt_input_opts *o, FILE **f, uint64_t *size, vt_error *err);

/* Reads the whole file: *buf (malloc'd, NUL-terminated) and *len. */
int vt_input_read_all(const char *path, const vt_input_opts *o, char **buf, size_t *len, vt_error *err);

/* Opens path as a directory (O_DIRECTORY, and O_NOFOLLOW when o->no_follow):
 * *fd. Anything else is refused naming what it is. */
int vt_input_opendir(const char *path, const vt_input_opts *o, int *fd, vt_error *err);

/* Checks without keeping it open that path is a regular file (for dlopen). */
int vt_input_check(const char *path, const vt_input_opts *o, vt_error *err);

/* "a FIFO", "a directory", ... for a st_mode. */
const char *vt_input_kind(unsigned mode);

/* A side-file name recorded in a document: 1 when name is a plain file name
 * (not empty, no '/', not "." or "..", no control character), else 0. */
int vt_input_plain_name(const char *name);

#endif
