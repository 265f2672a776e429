#include "vt_parse.h"

#include <errno.h>
#include <stdlib.h>

int vt_parse_i64(const char *s, int64_t min, int64_t max, int64_t *out)
{
    /* digits, or '-' and digits: strtoll alone also takes leading blanks,
     * a '+' and "-0" */
    const char *d = s && *s == '-' ? s + 1 : s;
    if (!d || *d < '0' || *d > '9')
        return 0;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || v < min || v > max || (v == 0 && *s == '-'))
        return 0;
    *out = v;
    return 1;
}

int vt_parse_u64(const char *s, uint64_t *out)
{
    if (!s || *s < '0' || *s > '9') /* strtoull accepts "-1" */
        return 0;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end)
        return 0;
    *out = v;
    return 1;
}
