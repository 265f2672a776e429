/* The model manifest reader (vt.manifest/1) and its check against the
 * files it lists, over arbitrary bytes as the manifest; the listed names
 * are resolved in the scratch directory, which holds one real file. */
#include "fuzz_util.h"

#include "provenance/provenance.h"

static char dir[128];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    char p[160];
    fz_path("", dir, sizeof dir);
    snprintf(p, sizeof p, "%s/m.bin", dir);
    fz_write(p, "model bytes", 11);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[128];
    fz_write(fz_path("m.json", path, sizeof path), data, size);
    vt_manifest m;
    vt_error err;
    if (vt_manifest_read(path, &m, &err) != VT_OK)
        return 0;
    vt_manifest_result *res = NULL;
    vt_manifest_check_files(&m, dir, &res, &err); /* res: n_files entries, or NULL */
    vt_manifest_results_free(res, res ? m.n_files : 0);
    vt_manifest_free(&m);
    return 0;
}
