/* Seeded random codec tables for the GPU checks (gpu_gather.c,
 * gpu_two_device.c): splitmix64 draws and packed blocks of any codec. */
#ifndef VT_GPU_RANDOM_TABLE_H
#define VT_GPU_RANDOM_TABLE_H

#include "engine/codec.h"

#include <math.h>
#include <stdint.h>

static inline uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Random block bytes; for the quantized types a block is drawn again until
 * every value it decodes to is finite: real tables have finite scales, and
 * a NaN scale is propagated as the NaN operand on x86 but as the canonical
 * NaN on GPUs, a difference of the hardware and not of the decoder. The
 * plain types (F32, F16, BF16) keep every bit pattern, NaNs included: their
 * decoders are integer operations, so their NaNs must match too. */
static inline void fill_random_blocks(const vt_codec *c, uint8_t *t, int64_t n_blocks, uint64_t *state)
{
    const int plain = c->block_elems == 1;
    float y[256];
    for (int64_t b = 0; b < n_blocks; b++) {
        uint8_t *blk = t + (size_t)b * c->block_bytes;
        for (int tries = 0;; tries++) {
            for (size_t k = 0; k < c->block_bytes; k++)
                blk[k] = (uint8_t)splitmix64(state);
            if (plain)
                break;
            c->decode_f32(blk, y, 1);
            int ok = 1;
            for (int64_t e = 0; e < c->block_elems; e++)
                ok &= isfinite(y[e]) != 0;
            if (ok || tries > 1000)
                break;
        }
    }
}

#endif
