/* A child that a sanitizer reports (CMakeLists.txt, test sanitizer_exit_codes):
 * VT_CHILD_asan reads past a heap block, VT_CHILD_ubsan overflows a signed
 * int. The values come from argc and a volatile so that no compiler folds them
 * away, and the block is zeroed so that gcc's -Wuninitialized (an error under
 * VT_WERROR) has nothing to say about the read it cannot see is out of bounds.
 * The block's size is a volatile too: with optimisation on, UBSan's
 * object-size check sees a constant size and reports the read first (87),
 * where this child must show ASan's exit code. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    (void)argv;
#if defined(VT_CHILD_asan)
    volatile size_t size = 4;
    volatile char *p = calloc(size, 1);
    volatile int past = 3;
    int c = p[past + argc];
    free((void *)p);
    return c == 12345;
#else
    volatile int x = INT_MAX - 1 + argc;
    x = x + argc;
    printf("%d\n", x);
    return 0;
#endif
}
