/* The top-k side file reader (capture/topk_file.h): the first 12 bytes are
 * what a capture would say of it (k, positions, n_vocab), the rest is the
 * file, whose own SHA-256 is given so that every entry is checked. */
#include "fuzz_util.h"

#include "capture/topk_file.h"
#include "provenance/provenance.h"

static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 12)
        return 0;
    int32_t k = (int32_t)(rd32(data) % 65), n_vocab = (int32_t)(rd32(data + 8) % 200000);
    int64_t positions = rd32(data + 4) % 100000;
    char path[128];
    fz_write(fz_path("f.topk", path, sizeof path), data + 12, size - 12);
    vt_sha256_hex sha;
    vt_sha256_buffer(data + 12, size - 12, &sha);
    vt_topk_file f;
    vt_error err;
    if (vt_topk_file_open(path, k, positions, n_vocab, sha.hex, &f, &err) != VT_OK)
        return 0;
    int32_t ids[64];
    float lp[64];
    for (int64_t pos = 0; pos < positions && pos < 4; pos++)
        if (vt_topk_file_get(&f, pos, ids, lp, &err) != VT_OK)
            abort(); /* a file checked whole answers every position */
    vt_topk_file_close(&f);
    return 0;
}
