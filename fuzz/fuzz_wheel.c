/* Wheel verification (provenance/provenance.h): the bytes as a wheel, so the
 * zip's structure (central directory, local headers, descriptors), the
 * RECORD inside it and every entry's hash and size are what is read. */
#include "fuzz_util.h"

#include "provenance/provenance.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[128];
    fz_write(fz_path("w-1.0-py3-none-any.whl", path, sizeof path), data, size);
    vt_package_report r;
    vt_error err;
    if (vt_package_verify_wheel(path, NULL, &r, &err) == VT_OK)
        vt_package_report_free(&r);
    return 0;
}
