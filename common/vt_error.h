/* vt_error: how libvt reports failure. The library never exits or prints;
 * it fills a vt_error and returns. Tools print err.msg as one line on stderr
 * and exit with err.code. */
#ifndef VT_ERROR_H
#define VT_ERROR_H

enum {
    VT_OK = 0,
    VT_ECHECK = 1, /* a check or gate ran and failed */
    VT_EINPUT = 2  /* bad usage or bad input */
};

typedef struct vt_error {
    int code;       /* VT_OK, VT_ECHECK or VT_EINPUT */
    char msg[1024]; /* "FILE: offset N: field F: expected E", one line */
} vt_error;

/* Sets code and a printf-formatted message. Accepts err == NULL. Returns code. */
int vt_error_set(vt_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

void vt_error_clear(vt_error *err);

#endif
