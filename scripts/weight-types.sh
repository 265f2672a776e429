# Sourced by scripts/codec-table and scripts/gpu-verify: every weight type
# vt fixture make takes (each codec the engine decodes, and the mix Q4_K_M),
# in the order the docs' codec tables list them.
weight_types=(F32 F16 BF16 Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q2_K Q3_K Q4_K Q5_K Q6_K
              IQ2_XXS IQ2_XS IQ2_S IQ3_XXS IQ3_S IQ1_S IQ1_M IQ4_NL IQ4_XS TQ1_0 TQ2_0 MXFP4 Q4_K_M)
