/* Codebooks of the IQ storage types (codec_iq_tables.c). Each grid row is one
 * codebook point, its elements in the order they are written out. */
#ifndef VT_CODEC_IQ_TABLES_H
#define VT_CODEC_IQ_TABLES_H

#include <stdint.h>

/* IQ2 grids: magnitudes in {8, 25, 43}, 8 elements per point. */
extern const uint8_t vt_iq2xxs_grid[256][8];
extern const uint8_t vt_iq2xs_grid[512][8];
extern const uint8_t vt_iq2s_grid[1024][8];

/* IQ3 grids, 4 elements per point: IQ3_XXS magnitudes in {4, 12, ..., 52, 62},
 * IQ3_S magnitudes odd in 1..15. */
extern const uint8_t vt_iq3xxs_grid[256][4];
extern const uint8_t vt_iq3s_grid[512][4];

/* IQ1 grid (shared by IQ1_S and IQ1_M): values in {-1, 0, 1}. */
extern const int8_t vt_iq1s_grid[2048][8];

/* 7-bit sign index -> 8 sign bits (bit j set: element j is negative). */
extern const uint8_t vt_iq2_signs[128];

/* IQ4_NL / IQ4_XS levels. */
extern const int8_t vt_iq4nl_values[16];

/* Shift added to every IQ1 grid value before scaling; its sign is per group. */
#define VT_IQ1S_DELTA 0.125f
#define VT_IQ1M_DELTA 0.125f

#endif
