/* qsort for arrays that may be empty: qsort's base must not be NULL even
 * for zero elements (C11 7.22.5), and an empty list read from a file is
 * often a NULL array (fuzz_wheel found one: a zip with no members). */
#ifndef VT_SORT_H
#define VT_SORT_H

#include <stdlib.h>

static inline void vt_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
    if (n > 1)
        qsort(base, n, size, cmp);
}

#endif
