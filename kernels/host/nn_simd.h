/* Vectorized HWC element-wise and pooling kernels of the host target: AVX2 when the CPU
 * has it (checked once from CPUID), else the portable kernels they must equal bit for bit
 * (nn_add_s8 in nn_eltwise.c, nn_hwc_maxpool_s8 in kernels/common/nn_hwc_pool.c). */
#ifndef NN_SIMD_H
#define NN_SIMD_H

#include <stdint.h>

#include "nn_hwc.h"
#include "nn_gemm.h"

/* isa: 0 auto, 1 portable, 2 avx2 (forced), 3 avx512vnni (forced: the depthwise kernel's
 * VNNI path where the CPU runs it, the others' avx2), 4 auto without the VNNI depthwise
 * kernel (AVX2 where the CPU has it: a measured choice, targets/host/measure.py) */
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

/* The same on a whole layer (returns the kernel that ran: "avx512vnni", "avx2" or
 * "portable"; nn_dwconv_vnni first under isa 0 and 3).  With AVX2 and atables (the build's,
 * targets/host/dwtables.py; byte 0 is 1 when its exact double epilogue holds), stride 1 or
 * in_c a multiple of 16: 16 (pixel, channel) positions of an output row at a time from the
 * band buffer below, nothing prepared per call (buf needs 16 values past the band's rows).
 * Otherwise with AVX2, 16 channels at a time, in row bands of band_rows
 * output rows, each band's input converted once into buf (int16 x - zp_in, zero padding,
 * wp columns: every window whole) and the taps in pairs by vpmaddwd with the weights
 * widened and pair-interleaved into wq; channels past the last multiple of 16 by the
 * portable kernel.  Otherwise (no AVX2, fewer than 16 channels, more than NN_DW_MAX_TAPS
 * taps) nn_dwconv_hwc_fast.  Scratch from the caller: buf (rows of the band's input x wp x
 * in_c int16), wq (in_c/16 * (taps+1)/2 * 32 int16), epi (in_c/64 + 1). */
#define NN_DW_MAX_TAPS 64

/* The lanes the depthwise kernels' tables are tiled to, lcm(c, 16): lane j is channel j % c,
 * so every 16 consecutive (pixel, channel) positions of an output row find theirs whole. */
static inline int nn_dw_lanes(int c)
{
    int a = c, b = 16;
    while (b) {
        const int t = a % b;
        a = b;
        b = t;
    }
    return c / a * 16;
}
const char *nn_dwconv_band_fast(int isa, const nn_hwc_conv_cfg_t *cfg, const int8_t *in, const int8_t *weight,
                         const int32_t *bias, const int32_t *mult, const int32_t *shift, int8_t *out,
                         int band_rows, int16_t *buf, int wp, int16_t *wq, nn_epi_t *epi,
                         const uint8_t *vtables, const uint8_t *atables, uint8_t *vbuf, long vbytes);

/* The depthwise conv of a whole layer on AVX-512 VNNI (nn_dw_vnni.c): 16 (pixel, channel)
 * positions of an output row per vector, any channel count, taps in groups of four along
 * a kernel row per vpdpbusd, the requantization fused (exact).  tables: the weights, bias
 * and multipliers tiled to lcm(in_c, 16) lanes, nn_dwconv_vnni_table_bytes of them, from
 * nn_dwconv_vnni_pack or the build (targets/host/gemm.py: pack_depthwise, the same bytes).
 * Returns 0 without writing out when it does not apply (no tables, no AVX-512 VNNI/BW, buf
 * smaller than nn_dwconv_vnni_bytes); then the caller runs another kernel.  The pack
 * returns 0 when a shift is outside [11, 62] (the fma's range; TFLite's rules). */
long nn_dwconv_vnni_bytes(const nn_hwc_conv_cfg_t *cfg);
long nn_dwconv_vnni_table_bytes(const nn_hwc_conv_cfg_t *cfg);
int nn_dwconv_vnni_pack(const nn_hwc_conv_cfg_t *cfg, const int8_t *weight, const int32_t *bias,
                        const int32_t *mult, const int32_t *shift, uint8_t *tables);
int nn_dwconv_vnni(const nn_hwc_conv_cfg_t *cfg, const int8_t *in, int8_t *out, const uint8_t *tables,
                   uint8_t *buf, long bytes);

#endif /* NN_SIMD_H */
