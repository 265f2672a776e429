/* Small helpers shared by provenance/: line lists, strict
 * JSON field access and the RECORD CSV parser. */
#include "prov_internal.h"
#include "../common/vt_input.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- line lists ---- */

void vt_lines_vaddf(vt_lines *l, const char *fmt, va_list ap)
{
    if (l->oom)
        return;
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 16;
        char **v = realloc(l->v, sizeof *v * (size_t)cap);
        if (!v) {
            l->oom = 1;
            return;
        }
        l->v = v;
        l->cap = cap;
    }
    va_list aq;
    va_copy(aq, ap);
    int n = vsnprintf(NULL, 0, fmt, aq);
    va_end(aq);
    char *s = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (!s) {
        l->oom = 1;
        return;
    }
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    /* One line each: a newline inside a file name must not split a report. */
    for (char *p = s; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    l->v[l->n++] = s;
}

void vt_lines_addf(vt_lines *l, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vt_lines_vaddf(l, fmt, ap);
    va_end(ap);
}

void vt_prov_lines_free(char **lines, int n)
{
    for (int i = 0; i < n; i++)
        free(lines[i]);
    free(lines);
}

/* ---- paths and files ---- */

char *vt_prov_strdup(const char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p)
        memcpy(p, s, n);
    return p;
}

char *vt_prov_join(const char *base, const char *name)
{
    if (!base || !*base || name[0] == '/')
        return vt_prov_strdup(name);
    size_t nb = strlen(base), nn = strlen(name);
    int slash = base[nb - 1] != '/';
    char *p = malloc(nb + (size_t)slash + nn + 1);
    if (!p)
        return NULL;
    memcpy(p, base, nb);
    if (slash)
        p[nb] = '/';
    memcpy(p + nb + (size_t)slash, name, nn + 1);
    return p;
}

const char *vt_prov_strerror(const char *path, int e)
{
    static __thread char buf[96];
    struct stat st;
    if ((e == EINVAL || e == EISDIR || e == ENXIO) && path && stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        snprintf(buf, sizeof buf, "%s: expected a regular file", vt_input_kind(st.st_mode));
        return buf;
    }
    return strerror(e);
}

int vt_prov_read_file(const char *path, size_t limit, char **out, size_t *len)
{
    *out = NULL;
    *len = 0;
    /* O_NONBLOCK: a FIFO must not make open() wait; fstat refuses it. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return errno;
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        (void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return e;
    }
    if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > limit) {
        close(fd);
        return S_ISREG(st.st_mode) ? EFBIG : EINVAL;
    }
    size_t cap = (size_t)st.st_size + 1, n = 0;
    char *buf = malloc(cap);
    if (!buf) {
        close(fd);
        return ENOMEM;
    }
    for (;;) {
        if (n + 1 == cap) { /* grew while reading */
            if (cap > limit) {
                free(buf);
                close(fd);
                return EFBIG;
            }
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                close(fd);
                return ENOMEM;
            }
            buf = nb;
            cap *= 2;
        }
        ssize_t r = read(fd, buf + n, cap - 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            free(buf);
            close(fd);
            return e;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return 0;
}

/* ---- strict JSON field access (parsing: common/vt_json.h) ---- */

cJSON *vt_prov_json_field(const cJSON *obj, const char *key, const char *file, const char *where, vt_error *err)
{
    /* One value per key: vt_json_parse refused any document with a key twice. */
    cJSON *found = NULL;
    for (cJSON *c = obj ? obj->child : NULL; c && !found; c = c->next)
        if (c->string && strcmp(c->string, key) == 0)
            found = c;
    if (!found)
        vt_error_set(err, VT_EINPUT, "%s: %s%s%s: expected the field, missing", file, where, *where ? "." : "",
                     key);
    return found;
}

/* ---- RECORD CSV ---- */

void vt_record_free(vt_record_row *rows, int n)
{
    for (int i = 0; i < n; i++) {
        free(rows[i].path);
        free(rows[i].hash);
        free(rows[i].size);
    }
    free(rows);
}

/* One CSV field starting at *pos; leaves *pos at the delimiter (',', '\n',
 * '\r' or end). NULL on a malformed quoted field or out of memory. */
static char *csv_field(const char *t, size_t len, size_t *pos, int *bad)
{
    size_t i = *pos;
    vt_sbuf b = { 0 };
    vt_sbuf_add(&b, "", 0);
    if (i < len && t[i] == '"') {
        i++;
        for (;;) {
            if (i >= len) {
                *bad = 1; /* unterminated quote */
                free(b.p);
                return NULL;
            }
            if (t[i] == '"') {
                if (i + 1 < len && t[i + 1] == '"') {
                    vt_sbuf_add(&b, "\"", 1);
                    i += 2;
                    continue;
                }
                i++;
                break;
            }
            vt_sbuf_add(&b, t + i, 1);
            i++;
        }
        if (i < len && t[i] != ',' && t[i] != '\n' && t[i] != '\r') {
            *bad = 1; /* text after the closing quote */
            free(b.p);
            return NULL;
        }
    } else {
        size_t s = i;
        while (i < len && t[i] != ',' && t[i] != '\n' && t[i] != '\r') {
            if (t[i] == '"') {
                *bad = 1;
                free(b.p);
                return NULL;
            }
            i++;
        }
        vt_sbuf_add(&b, t + s, i - s);
    }
    *pos = i;
    return vt_sbuf_take(&b);
}

int vt_record_parse(const char *text, size_t len, vt_record_row **rows_out, int *n_out)
{
    vt_record_row *rows = NULL;
    int n = 0, cap = 0, line = 1;
    size_t i = 0;
    *rows_out = NULL;
    *n_out = 0;
    while (i < len) {
        if (text[i] == '\n' || text[i] == '\r') { /* blank line */
            if (text[i] == '\r' && i + 1 < len && text[i + 1] == '\n')
                i++;
            i++;
            line++;
            continue;
        }
        char *f[3] = { NULL, NULL, NULL };
        int nf = 0, bad = 0, row_line = line;
        for (;;) {
            size_t start = i;
            char *v = csv_field(text, len, &i, &bad);
            if (!v) {
                for (int k = 0; k < nf && k < 3; k++)
                    free(f[k]);
                vt_record_free(rows, n);
                return bad ? row_line : -1;
            }
            for (size_t k = start; k < i; k++) /* quoted fields may hold newlines */
                if (text[k] == '\n')
                    line++;
            if (nf < 3)
                f[nf] = v;
            else
                free(v);
            nf++;
            if (i < len && text[i] == ',') {
                i++;
                continue;
            }
            break;
        }
        if (i < len && text[i] == '\r')
            i++;
        if (i < len && text[i] == '\n')
            i++;
        line++;
        if (nf != 3) {
            for (int k = 0; k < nf && k < 3; k++)
                free(f[k]);
            vt_record_free(rows, n);
            return row_line;
        }
        if (n == cap) {
            int nc = cap ? cap * 2 : 256;
            vt_record_row *nr = realloc(rows, sizeof *nr * (size_t)nc);
            if (!nr) {
                for (int k = 0; k < 3; k++)
                    free(f[k]);
                vt_record_free(rows, n);
                return -1;
            }
            rows = nr;
            cap = nc;
        }
        rows[n++] = (vt_record_row){ f[0], f[1], f[2], row_line };
    }
    *rows_out = rows;
    *n_out = n;
    return 0;
}
