/* The logits side file reader (capture/logits_file.h), streaming: every
 * frame's header, every frame inflated, the hash to the end. */
#include "fuzz_util.h"

#include "capture/logits_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[128];
    fz_write(fz_path("f.logits", path, sizeof path), data, size);
    vt_error err;
    vt_logits_reader *r = vt_logits_reader_open(path, &err);
    if (!r)
        return 0;
    vt_logits_frame hdr;
    int rc;
    while ((rc = vt_logits_reader_next(r, &hdr, &err)) == 1) {
        /* the header's own claim bounds the buffer: cap what a fuzz run
         * allocates, the reader must refuse a frame whose data is short */
        uint64_t n = (uint64_t)hdr.positions * hdr.vocab;
        if (n > (1u << 22))
            continue;
        float *buf = malloc(n ? n * sizeof *buf : 1);
        if (!buf)
            abort();
        int d = vt_logits_reader_data(r, buf, &err);
        free(buf);
        if (d != VT_OK)
            break;
    }
    if (rc == 0) {
        vt_sha256_hex sha;
        uint64_t sz;
        if (vt_logits_reader_finish(r, &sha, &sz, &err) == VT_OK && sz != size)
            abort(); /* the size it hashed is the file's */
    }
    vt_logits_reader_close(r);
    return 0;
}
