/* Vectorized HWC element-wise and pooling kernels of the host target: AVX2 when the CPU
 * has it (checked once from CPUID), else the portable kernels they must equal bit for bit
 * (nn_add_s8 in nn_eltwise.c, nn_hwc_maxpool_s8 in kernels/gap9/nn_hwc_pool.c). */
#ifndef NN_SIMD_H
#define NN_SIMD_H

#include <stdint.h>

#include "nn_hwc_kernels.h"

/* isa: 0 auto, 1 portable, 2 avx2 (forced) */
void nn_add_s8_fast(int isa, int n, const int8_t *a, int32_t a_zp, const int8_t *b, int32_t b_zp,
                    const int32_t *mult, const int32_t *shift, int32_t out_zp, int32_t act_min,
                    int32_t act_max, int8_t *out);
void nn_maxpool_hwc_fast(int isa, const nn_hwc_pool_cfg_t *cfg, const int8_t *in, const int32_t *mult,
                         const int32_t *shift, int8_t *out, int pix_begin, int pix_end);

/* Depthwise conv (groups == in_c == out_c), HWC, output pixels [pix_begin, pix_end); the
 * geometry of nn_hwc_conv_cfg_t (groups ignored).  Weights [k_h*k_w][c] (tap-major, so
 * channels are contiguous), bias may be NULL, mult/shift per channel. */
void nn_dwconv_hwc_fast(int isa, const nn_hwc_conv_cfg_t *cfg, const int8_t *in, const int8_t *weight,
                        const int32_t *bias, const int32_t *mult, const int32_t *shift, int8_t *out,
                        int pix_begin, int pix_end);

#endif /* NN_SIMD_H */
