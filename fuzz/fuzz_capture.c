/* The one reader of captures and prefix scores (capture/capture_read.h),
 * with its schema checks, over arbitrary bytes as the document: the first
 * byte says which kind is expected. Side files are not opened (fuzz_logits
 * and fuzz_topk take those). */
#include "fuzz_util.h"

#include "capture/capture_read.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    vt_doc_source src = { .path = "fuzz.json", .text = (const char *)data + 1, .len = size - 1,
                          .kind = (data[0] & 1) ? VT_DOC_PREFIX : VT_DOC_CAPTURE, .threads = 1,
                          .no_side_files = 1 };
    vt_doc d;
    vt_error err;
    if (vt_doc_read(&src, &d, &err) == VT_OK)
        vt_doc_free(&d);
    return 0;
}
