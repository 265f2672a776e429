/* Every codec's decoders over arbitrary block bytes: the first byte picks a
 * codec from the table, the rest is as many whole blocks as it holds,
 * decoded to F32 and to BF16. Decoded values may be anything (NaN
 * included); the BF16 row must be the F32 row rounded (codec.h). */
#include "fuzz_util.h"

#include "engine/codec.h"

#include <math.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const vt_codec *c = vt_codec_at(data[0] % vt_codec_count());
    if (!c->decode_f32 || c->block_bytes == 0)
        return 0;
    size_t nb = (size - 1) / c->block_bytes;
    if (nb == 0 || nb > 64)
        nb = nb ? 64 : 0;
    if (nb == 0)
        return 0;
    /* the blocks in their own buffer, exactly sized: a read past the last
     * block is a read past the allocation */
    uint8_t *blocks = malloc(nb * c->block_bytes);
    float *f = malloc(nb * (size_t)c->block_elems * sizeof *f);
    uint16_t *h = malloc(nb * (size_t)c->block_elems * sizeof *h);
    if (!blocks || !f || !h)
        abort();
    memcpy(blocks, data + 1, nb * c->block_bytes);
    vt_error err;
    int64_t n = (int64_t)nb * c->block_elems;
    if (vt_codec_decode_row(c, blocks, n, VT_DTYPE_F32, f, &err) != VT_OK ||
        vt_codec_decode_row(c, blocks, n, VT_DTYPE_BF16, h, &err) != VT_OK)
        abort();
    for (int64_t i = 0; i < n; i++)
        if (!isnan(f[i]) && h[i] != vt_f32_to_bf16(f[i]))
            abort();
    free(blocks);
    free(f);
    free(h);
    return 0;
}
