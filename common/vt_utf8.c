#include "vt_utf8.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

size_t vt_utf8_seq(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    if (n == 0)
        return 0;
    unsigned c = p[0];
    if (c < 0x80)
        return 1;
    size_t len;
    uint32_t cp, min;
    if ((c & 0xe0) == 0xc0)
        len = 2, cp = c & 0x1f, min = 0x80;
    else if ((c & 0xf0) == 0xe0)
        len = 3, cp = c & 0x0f, min = 0x800;
    else if ((c & 0xf8) == 0xf0)
        len = 4, cp = c & 0x07, min = 0x10000;
    else
        return 0;
    if (n < len)
        return 0;
    for (size_t k = 1; k < len; k++) {
        if ((p[k] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (p[k] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

size_t vt_utf8_check(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        size_t k = vt_utf8_seq(s + i, n - i);
        if (!k)
            return i;
        i += k;
    }
    return n;
}

int vt_utf8_valid(const char *s, size_t n) { return vt_utf8_check(s, n) == n; }

char *vt_utf8_text(const char *s, size_t n, int *changed)
{
    /* U+FFFD is 3 bytes: at most 3 per input byte. */
    char *out = malloc(3 * n + 1);
    size_t k = 0;
    int any = 0;
    for (size_t i = 0; out && i < n;) {
        size_t len = s[i] ? vt_utf8_seq(s + i, n - i) : 0;
        if (len) {
            memcpy(out + k, s + i, len);
            k += len;
            i += len;
        } else {
            memcpy(out + k, "\xef\xbf\xbd", 3);
            k += 3;
            i++;
            any = 1;
        }
    }
    if (out)
        out[k] = '\0';
    if (changed)
        *changed = any;
    return out;
}

char *vt_utf8_hex(const char *s, size_t n)
{
    static const char h[] = "0123456789abcdef";
    char *out = malloc(2 * n + 1);
    for (size_t i = 0; out && i < n; i++) {
        out[2 * i] = h[(unsigned char)s[i] >> 4];
        out[2 * i + 1] = h[(unsigned char)s[i] & 15];
    }
    if (out)
        out[2 * n] = '\0';
    return out;
}

void vt_ascii_line(char *buf, size_t cap, const char *s)
{
    if (cap == 0)
        return;
    size_t i = 0;
    for (; s && s[i] && i + 1 < cap; i++)
        buf[i] = (unsigned char)s[i] >= 0x20 && (unsigned char)s[i] < 0x7f ? s[i] : '?';
    buf[i] = 0;
}
