/* Decoder functions of the codec registry (codec.c). One per storage type;
 * the signature is vt_decode_f32_fn. Plain types and the legacy/K/ternary/MX
 * families live in codec_basic.c; the importance-matrix (IQ) family and its
 * grids in codec_iq.c. */
#ifndef VT_CODEC_DECODERS_H
#define VT_CODEC_DECODERS_H

#include <stdint.h>

#define VT_DECODER(name) void name(const void *restrict src, float *restrict dst, int64_t n_blocks)

VT_DECODER(vt_decode_f32);
VT_DECODER(vt_decode_f16);
VT_DECODER(vt_decode_bf16);
VT_DECODER(vt_decode_q4_0);
VT_DECODER(vt_decode_q4_1);
VT_DECODER(vt_decode_q5_0);
VT_DECODER(vt_decode_q5_1);
VT_DECODER(vt_decode_q8_0);
VT_DECODER(vt_decode_q2_k);
VT_DECODER(vt_decode_q3_k);
VT_DECODER(vt_decode_q4_k);
VT_DECODER(vt_decode_q5_k);
VT_DECODER(vt_decode_q6_k);
VT_DECODER(vt_decode_q8_k);
VT_DECODER(vt_decode_tq1_0);
VT_DECODER(vt_decode_tq2_0);
VT_DECODER(vt_decode_mxfp4);

VT_DECODER(vt_decode_iq2_xxs);
VT_DECODER(vt_decode_iq2_xs);
VT_DECODER(vt_decode_iq2_s);
VT_DECODER(vt_decode_iq3_xxs);
VT_DECODER(vt_decode_iq3_s);
VT_DECODER(vt_decode_iq1_s);
VT_DECODER(vt_decode_iq1_m);
VT_DECODER(vt_decode_iq4_nl);
VT_DECODER(vt_decode_iq4_xs);

#endif
