/* One block of any decodable type on the device, by the CPU's own block
 * functions (engine/codec_blocks.h): the one dispatch of the GPU sources
 * (gather.hip, ops.hip). The type is the same for a whole launch, so the
 * switch does not diverge. */
#ifndef VT_DEVICE_CODEC_H
#define VT_DEVICE_CODEC_H

#include "../codec_blocks.h"

__device__ static inline void decode_block(int type, const uint8_t *b, float *y, const vt_iq_grids *g)
{
    switch (type) {
    case VT_TYPE_F32: vt_block_f32(b, y, g); break;
    case VT_TYPE_F16: vt_block_f16(b, y, g); break;
    case VT_TYPE_BF16: vt_block_bf16(b, y, g); break;
    case VT_TYPE_Q4_0: vt_block_q4_0(b, y, g); break;
    case VT_TYPE_Q4_1: vt_block_q4_1(b, y, g); break;
    case VT_TYPE_Q5_0: vt_block_q5_0(b, y, g); break;
    case VT_TYPE_Q5_1: vt_block_q5_1(b, y, g); break;
    case VT_TYPE_Q8_0: vt_block_q8_0(b, y, g); break;
    case VT_TYPE_Q2_K: vt_block_q2_k(b, y, g); break;
    case VT_TYPE_Q3_K: vt_block_q3_k(b, y, g); break;
    case VT_TYPE_Q4_K: vt_block_q4_k(b, y, g); break;
    case VT_TYPE_Q5_K: vt_block_q5_k(b, y, g); break;
    case VT_TYPE_Q6_K: vt_block_q6_k(b, y, g); break;
    case VT_TYPE_Q8_K: vt_block_q8_k(b, y, g); break;
    case VT_TYPE_IQ2_XXS: vt_block_iq2_xxs(b, y, g); break;
    case VT_TYPE_IQ2_XS: vt_block_iq2_xs(b, y, g); break;
    case VT_TYPE_IQ2_S: vt_block_iq2_s(b, y, g); break;
    case VT_TYPE_IQ3_XXS: vt_block_iq3_xxs(b, y, g); break;
    case VT_TYPE_IQ3_S: vt_block_iq3_s(b, y, g); break;
    case VT_TYPE_IQ1_S: vt_block_iq1_s(b, y, g); break;
    case VT_TYPE_IQ1_M: vt_block_iq1_m(b, y, g); break;
    case VT_TYPE_IQ4_NL: vt_block_iq4_nl(b, y, g); break;
    case VT_TYPE_IQ4_XS: vt_block_iq4_xs(b, y, g); break;
    case VT_TYPE_TQ1_0: vt_block_tq1_0(b, y, g); break;
    case VT_TYPE_TQ2_0: vt_block_tq2_0(b, y, g); break;
    case VT_TYPE_MXFP4: vt_block_mxfp4(b, y, g); break;
    default: break; /* refused on the host before any launch */
    }
}

#endif
