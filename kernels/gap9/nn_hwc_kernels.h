/* The GAP9 cluster's Xpulp variants of the portable HWC kernels (nn_hwc.h, kernels/common):
 * the same contracts and results, SIMD dot products and channel words where each kernel's
 * *_fast test says so.  Activations live in L2 in HWC layout (batch 1) so that an L1 tile
 * moves with one 2-D DMA command; the 8 cluster cores share a tile by slices.
 */
#ifndef NN_HWC_KERNELS_H
#define NN_HWC_KERNELS_H

#include "nn_hwc.h"
#include "nn_kernels.h"

/* nn_xp_conv2d.c: the same contract and results, with Xpulp SIMD dot products (nn_xpulp.h)
 * where nn_xp_conv2d_fast(cfg) says so, nn_hwc_conv2d_s8 otherwise. Requires the weights
 * and the input tile 4-byte aligned. */
int nn_xp_conv2d_fast(const nn_hwc_conv_cfg_t *cfg);
void nn_xp_conv2d_s8(const nn_hwc_conv_cfg_t *cfg, const int8_t *in, const int8_t *weight,
                     const int32_t *bias, const int32_t *mult, const int32_t *shift,
                     int8_t *out, int pix_begin, int pix_end);

/* The im2col variant for the groups == 1 convs nn_xp_conv2d_fast rejects
 * (nn_xp_conv2d_im2col(cfg)): weight rows padded with zeros to KW = align4(k_h*k_w*in_c)
 * bytes (OHWI, then the padding); scratch: 2 * KW bytes of this core's own, 4-byte aligned. */
int nn_xp_conv2d_im2col(const nn_hwc_conv_cfg_t *cfg);
/* nn_xp_conv2d_core_s8's pointwise path: 1x1, in_zp 0 (folded), every output pixel inside the tile */
int nn_xp_conv2d_pointwise(const nn_hwc_conv_cfg_t *cfg);
void nn_xp_conv2d_im2col_s8(const nn_hwc_conv_cfg_t *cfg, const int8_t *in, const int8_t *weight,
                            const int32_t *bias, const int32_t *mult, const int32_t *shift,
                            int8_t *out, int pix_begin, int pix_end, int8_t *scratch);

/* Every output pixel of the tile, output channels [c_begin, c_end) (written at their place in
 * the full out_c-channel output): the cores' share of a tile with fewer pixels than cores.
 * Takes the direct, im2col (scratch as above; NULL: plain C) or plain C path as above. */
void nn_xp_conv2d_chans_s8(const nn_hwc_conv_cfg_t *cfg, const int8_t *in, const int8_t *weight,
                           const int32_t *bias, const int32_t *mult, const int32_t *shift,
                           int8_t *out, int c_begin, int c_end, int8_t *scratch);

/* A tile shared by the cores of a fork: core `core` of n_cores computes its share (direct path:
 * nn_xp_conv2d_split's pixels x channels; im2col: a pixel range, or a channel range when the
 * tile has fewer pixels than cores; plain C: a channel range). flipped: the input tile holds
 * x ^ 0x80 (nn_xp_conv2d_flip over all its words, done when nn_xp_conv2d_preflip(cfg)). */
void nn_xp_conv2d_core_s8(const nn_hwc_conv_cfg_t *cfg, const int8_t *in, const int8_t *weight,
                          const int32_t *bias, const int32_t *mult, const int32_t *shift, int8_t *out,
                          int core, int n_cores, int8_t *scratch, int flipped);
/* The same with this core's direct-path share given: split = its (pb, pe, cb, ce, tb, te) as
 * nn_xp_conv2d_split would answer (a layer's build-time table), or NULL to compute it; order:
 * NULL, or the tile's pixels in the order the split's pixel ranges index (y << 8 | x each;
 * conv_paths.xp_split_ordered) */
void nn_xp_conv2d_core_split_s8(const nn_hwc_conv_cfg_t *cfg, const int8_t *in, const int8_t *weight,
                                const int32_t *bias, const int32_t *mult, const int32_t *shift, int8_t *out,
                                int core, int n_cores, int8_t *scratch, int flipped, const int16_t *split,
                                const uint16_t *order);
/* words: of a pixel's receptive field per channel (k_h * k_w * in_c / 4); [tb, te): this
 * core's channels of the last pixel when the grid leaves it out (else tb == te) */
void nn_xp_conv2d_split(int n_pix, int out_c, int words, int core, int n_cores, int *pb, int *pe, int *cb,
                        int *ce, int *tb, int *te);
int nn_xp_conv2d_preflip(const nn_hwc_conv_cfg_t *cfg);
/* words [w_begin, w_end) of a 4-byte aligned buffer: x ^ 0x80 per byte */
void nn_xp_conv2d_flip(int8_t *buf, int w_begin, int w_end);
/* nn_xp_dwconv.c: depthwise convs (groups == in_c == out_c, dil_w == 1, nn_xp_dwconv_fast),
 * nn_hwc_conv2d_s8's results for the work items [item_begin, item_end), item = c * out_h + y
 * (channel c, output row y, all its columns). scratch: nn_xp_dwconv_scratch(cfg) bytes of
 * this core's own, 4-byte aligned. No alignment needed for in, weight or out. */
int nn_xp_dwconv_fast(const nn_hwc_conv_cfg_t *cfg);
int nn_xp_dwconv_scratch(const nn_hwc_conv_cfg_t *cfg);
void nn_xp_dwconv_s8(const nn_hwc_conv_cfg_t *cfg, const int8_t *in, const int8_t *weight,
                     const int32_t *bias, const int32_t *mult, const int32_t *shift, int8_t *out,
                     int item_begin, int item_end, int8_t *scratch);

/* nn_xp_linear.c: nn_linear_s8's contract and results, Xpulp dot products where
 * nn_xp_linear_fast(cfg) says so. Weights and input 4-byte aligned. */
int nn_xp_linear_fast(const nn_linear_cfg_t *cfg);
void nn_xp_linear_s8(const nn_linear_cfg_t *cfg, const int8_t *in, const int8_t *weight,
                     const int32_t *bias, const int32_t *mult, const int32_t *shift, int8_t *out);

/* nn_xp_pool.c: nn_hwc_maxpool_s8's contract and results, Xpulp SIMD maxima where
 * nn_xp_maxpool_fast(cfg) says so (c % 4 == 0, no dilation; input tile 4-byte aligned). */
int nn_xp_maxpool_fast(const nn_hwc_pool_cfg_t *cfg);
void nn_xp_maxpool_s8(const nn_hwc_pool_cfg_t *cfg, const int8_t *in, const int32_t *mult,
                      const int32_t *shift, int8_t *out, int pix_begin, int pix_end);

/* nn_xp_pool.c: nn_hwc_avgpool_s8's contract and results, on channel words where
 * nn_xp_avgpool_fast(cfg) says so (c % 4 == 0, k_h * k_w <= 256, no dilation; input 4-byte
 * aligned). */
int nn_xp_avgpool_fast(const nn_hwc_pool_cfg_t *cfg);
void nn_xp_avgpool_s8(const nn_hwc_pool_cfg_t *cfg, const int8_t *in, const int32_t *mult,
                      const int32_t *shift, int8_t *out, int pix_begin, int pix_end);

/* nn_xp_add.c: nn_add_s8's contract and results (32-bit requantization when shift >= 9). */
void nn_xp_add_s8(int n, const int8_t *a, int32_t a_zp, const int8_t *b, int32_t b_zp,
                  const int32_t *mult, const int32_t *shift, int32_t out_zp, int32_t act_min,
                  int32_t act_max, int8_t *out);
/* out = clamp((a m0 + b m1 + c) >> s): an add's rule where targets/gap9/add_short.py proved
 * it exact for every int8 pair (all of it in int32). */
void nn_xp_add_short_s8(int n, const int8_t *a, const int8_t *b, int32_t m0, int32_t m1, int32_t c,
                        int32_t s, int32_t act_min, int32_t act_max, int8_t *out);

/* nn_xp_pool.c: nn_hwc_global_avgpool_s8's contract and results, on channel words where
 * nn_xp_global_avgpool_fast(c, c_begin, c_end) says so (c, c_begin and c_end multiples of 4;
 * input 4-byte aligned). */
int nn_xp_global_avgpool_fast(int c, int c_begin, int c_end);
void nn_xp_global_avgpool_s8(int hw, int c, int32_t in_zp, int32_t out_zp, int32_t act_min,
                             int32_t act_max, const int8_t *in, const int32_t *mult,
                             const int32_t *shift, int8_t *out, int c_begin, int c_end);

/* nn_xp_lut.c: out[i] = table[in[i] + 128], i < n: nn_lut_s8's one-table case (no alignment
 * needed). */
void nn_xp_lut_s8(int n, const int8_t *in, const int8_t *table, int8_t *out);

/* nn_xp_lut.c: nn_hwc_requant_s8's contract and results (below), through a 256-entry table
 * built per call when it has 256 elements or more. */
void nn_xp_requant_s8(int n_pix, int c, const int8_t *in, int in_stride, int32_t in_zp, int32_t mult,
                      int32_t shift, int32_t out_zp, int32_t act_min, int32_t act_max, int8_t *out,
                      int out_stride);

#endif /* NN_HWC_KERNELS_H */
