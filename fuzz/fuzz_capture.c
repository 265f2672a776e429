/* The one reader of captures and prefix scores (capture/capture_read.h),
 * with its schema checks, over arbitrary bytes as the document. The first
 * byte: bit 0 the kind expected (capture or prefix scores); bit 1 re-seal
 * it first (fz_reseal); bit 2 side files looked for (beside it, in the
 * scratch directory, where there are none) rather than not opened
 * (fuzz_logits and fuzz_topk take the side files themselves). */
#define VT_FUZZ_WANTS_RESEAL
#include "fuzz_util.h"

#include "capture/capture_read.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t len = size - 1;
    char *text = malloc(len ? len : 1); /* exactly sized: a read past the end is caught */
    if (!text)
        abort();
    memcpy(text, data + 1, len);
    if (data[0] & 2)
        fz_reseal(text, len);
    char path[128];
    vt_doc_source src = { .path = fz_path("fuzz.json", path, sizeof path), .text = text, .len = len,
                          .kind = (data[0] & 1) ? VT_DOC_PREFIX : VT_DOC_CAPTURE, .threads = 1,
                          .no_side_files = !(data[0] & 4) };
    vt_doc d;
    vt_error err;
    if (vt_doc_read(&src, &d, &err) == VT_OK)
        vt_doc_free(&d);
    free(text);
    return 0;
}
