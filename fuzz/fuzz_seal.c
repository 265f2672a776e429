/* vt-seal verify and extract (evidence/seal.h). The first byte picks:
 *   0  verify the bytes as an archive (no seal beside it: the gzip, the tar
 *      and the manifest inside are what is read)
 *   1  extract the bytes as an archive into a fresh directory
 *   2  verify a good archive with the bytes as its seal
 *   3  verify a good archive and seal with the bytes as its in-toto
 *      attestation
 * The good archive is made once, by vt_seal_create. */
#include "fuzz_util.h"

#include "evidence/seal.h"

#include <sys/stat.h>

static char good[128], good_seal[160], good_intoto[160], seal_bytes_path[160];
static char *seal_text;
static size_t seal_len;

static void slurp(const char *path, char **out, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        abort();
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    *out = malloc(*n + 1);
    if (!*out || fread(*out, 1, *n, f) != *n)
        abort();
    fclose(f);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    char dir[128], p[160];
    fz_path("ev", dir, sizeof dir);
    if (mkdir(dir, 0700) != 0)
        abort();
    snprintf(p, sizeof p, "%s/a.json", dir);
    fz_write(p, "{\"schema\":\"x\"}\n", 15);
    snprintf(p, sizeof p, "%s/b.bin", dir);
    fz_write(p, "0123456789", 10);
    fz_path("good.tar.gz", good, sizeof good);
    vt_seal *s = vt_seal_new();
    vt_error err;
    vt_seal_set_attestation(s, 1);
    if (!s || vt_seal_create(s, dir, good, &err) != VT_OK) {
        fprintf(stderr, "fuzz_seal: %s\n", err.msg);
        abort();
    }
    vt_seal_free(s);
    snprintf(good_seal, sizeof good_seal, "%s.seal.json", good);
    snprintf(good_intoto, sizeof good_intoto, "%s.intoto.json", good);
    slurp(good_seal, &seal_text, &seal_len);
    fz_path("fuzz.seal.json", seal_bytes_path, sizeof seal_bytes_path);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int mode = data[0] & 3;
    data++, size--;
    vt_seal *s = vt_seal_new();
    if (!s)
        abort();
    vt_error err;
    char path[128], dest[128];
    if (mode <= 1) {
        fz_write(fz_path("x.tar.gz", path, sizeof path), data, size);
        if (mode == 0) {
            vt_seal_verify(s, path, &err);
        } else {
            fz_path("out", dest, sizeof dest);
            fz_rm_tree(dest);
            vt_seal_extract(s, path, dest, &err);
            fz_rm_tree(dest);
        }
    } else if (mode == 2) {
        fz_write(seal_bytes_path, data, size);
        if (vt_seal_set_seal_path(s, seal_bytes_path, &err) == VT_OK)
            vt_seal_verify(s, good, &err);
    } else {
        fz_write(good_intoto, data, size);
        vt_seal_verify(s, good, &err);
    }
    vt_seal_free(s);
    return 0;
}
