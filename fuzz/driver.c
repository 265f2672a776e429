/* Replays inputs through a fuzz target without libFuzzer, so that the same
 * target sources build with gcc and make test (and the sanitizer build) runs
 * every kept corpus and regression input: driver FILE|DIR...; a directory's
 * regular files in name order. Exit 0 after the last input; a crash is the
 * sanitizer's or the signal's. */
#include "fuzz_util.h"

#include <dirent.h>
#include <sys/stat.h>

__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv);

static int by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

static int replay(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "%s: cannot read\n", path);
        return 0;
    }
    size_t cap = 1 << 16, n = 0;
    uint8_t *buf = malloc(cap);
    size_t k;
    while (buf && (k = fread(buf + n, 1, cap - n, f)) > 0) {
        n += k;
        if (n == cap) {
            uint8_t *nb = realloc(buf, cap *= 2);
            if (!nb)
                free(buf);
            buf = nb;
        }
    }
    fclose(f);
    if (!buf)
        abort();
    /* an exact-size copy, so that a read past the end is caught */
    uint8_t *in = malloc(n ? n : 1);
    if (!in)
        abort();
    memcpy(in, buf, n);
    free(buf);
    LLVMFuzzerTestOneInput(in, n);
    free(in);
    return 1;
}

int main(int argc, char **argv)
{
    if (LLVMFuzzerInitialize)
        LLVMFuzzerInitialize(&argc, &argv);
    long done = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "%s: missing: expected a file or a directory of inputs\n", argv[i]);
            return 2;
        }
        if (!S_ISDIR(st.st_mode)) {
            done += replay(argv[i]);
            continue;
        }
        struct dirent **e;
        int n = scandir(argv[i], &e, NULL, by_name);
        for (int j = 0; j < n; j++) {
            char p[4096];
            snprintf(p, sizeof p, "%s/%s", argv[i], e[j]->d_name);
            if (e[j]->d_name[0] != '.' && stat(p, &st) == 0 && S_ISREG(st.st_mode))
                done += replay(p);
            free(e[j]);
        }
        free(e);
    }
    printf("%s: %ld inputs replayed, none crashed\n", argv[0], done);
    return 0;
}
