#include "vt_error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int vt_error_set(vt_error *err, int code, const char *fmt, ...)
{
    if (!err)
        return code;
    err->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    /* One line, always: a stray newline in a file name must not split it. */
    for (char *p = err->msg; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    return code;
}

void vt_error_clear(vt_error *err)
{
    if (err) {
        err->code = VT_OK;
        err->msg[0] = '\0';
    }
}
