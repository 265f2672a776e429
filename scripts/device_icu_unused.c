/* Linked only into the vt that scripts/device-vt builds for the lent GPU
 * machine, which has none of the CPU build's libraries: there libarchive
 * is linked statically, and its xar writer (never used by vt: vt writes
 * pax and zip) pulls in libxml2, whose charset converters would pull in
 * ICU's 30 MB data library. These are the seven ICU entry points libxml2
 * refers to, each answering "unsupported" (U_UNSUPPORTED_ERROR), so no
 * converter is ever made and ICU need not travel. */
#include <stddef.h>

#define U_UNSUPPORTED_ERROR 16

typedef int UErrorCode;

void *ucnv_open_72(const char *name, UErrorCode *err)
{
    (void)name;
    if (err)
        *err = U_UNSUPPORTED_ERROR;
    return NULL;
}

void ucnv_close_72(void *cnv) { (void)cnv; }

void ucnv_convertEx_72(void *t, void *s, char **target, const char *target_limit, const char **source,
                       const char *source_limit, void *pivot_start, void **pivot_source, void **pivot_target,
                       const void *pivot_limit, signed char reset, signed char flush, UErrorCode *err)
{
    (void)t, (void)s, (void)target, (void)target_limit, (void)source, (void)source_limit, (void)pivot_start;
    (void)pivot_source, (void)pivot_target, (void)pivot_limit, (void)reset, (void)flush;
    if (err)
        *err = U_UNSUPPORTED_ERROR;
}

static void set_callback(UErrorCode *err)
{
    if (err)
        *err = U_UNSUPPORTED_ERROR;
}

void ucnv_setToUCallBack_72(void *cnv, void *action, const void *ctx, void **old_action, const void **old_ctx,
                            UErrorCode *err)
{
    (void)cnv, (void)action, (void)ctx, (void)old_action, (void)old_ctx;
    set_callback(err);
}

void ucnv_setFromUCallBack_72(void *cnv, void *action, const void *ctx, void **old_action, const void **old_ctx,
                              UErrorCode *err)
{
    (void)cnv, (void)action, (void)ctx, (void)old_action, (void)old_ctx;
    set_callback(err);
}

void UCNV_TO_U_CALLBACK_STOP_72(void) {}
void UCNV_FROM_U_CALLBACK_STOP_72(void) {}
