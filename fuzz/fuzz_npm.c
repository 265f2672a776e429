/* npm tarball verification (provenance/provenance.h): the bytes as the
 * tarball, read whole (gzip, tar, package/package.json, duplicate and
 * hostile member names) against a lock made once and one loaded file. */
#include "fuzz_util.h"

#include "provenance/provenance.h"

#include <sys/stat.h>

static char lock[128], root[128], loaded[160];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    static const char lj[] = "{\"lockfile\":\"vt.npm-lock/1\",\"packages\":[{\"name\":\"p\",\"version\":\"1.0.0\","
                             "\"integrity\":\"sha512-AAAA\"}]}\n";
    fz_write(fz_path("lock.json", lock, sizeof lock), lj, sizeof lj - 1);
    fz_path("root", root, sizeof root);
    if (mkdir(root, 0700) != 0)
        abort();
    snprintf(loaded, sizeof loaded, "%s/x.so", root);
    fz_write(loaded, "\177ELF", 4);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[128];
    fz_write(fz_path("p.tgz", path, sizeof path), data, size);
    const char *lo[] = { loaded };
    vt_package_report r;
    vt_error err;
    if (vt_package_verify_npm(path, lock, "p", root, lo, 1, &r, &err) == VT_OK)
        vt_package_report_free(&r);
    return 0;
}
