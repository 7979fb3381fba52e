/* HWC INT8 kernels, portable C: bit-exact with the CHW kernels of nn_kernels.h and with
 * the NumPy reference.  The host's grouped convs, pools, concat and requant, and gap9's
 * cluster tiles (kernels/gap9/nn_hwc_kernels.h adds its Xpulp variants).
 *
 * Activations are HWC (batch 1), so that a tile (rows x cols x all channels) is one
 * contiguous or 2-D block.  Each kernel computes a slice of a tile (a pixel range, or a
 * channel range for the global pool) so that several cores can share one tile: slices
 * write disjoint output bytes and never write outside them.
 * Tile convention as in nn_kernels.h: positions outside the input tile are padding.
 * Requantization is nn_requant.h's; accumulators obey NN_MAX_ACC_TERMS.
 * Linear and Add are layout-free: use nn_linear_s8 / nn_add_s8 on slices.
 * No allocation, no globals; out never overlaps in.
 */
#ifndef NN_HWC_H
#define NN_HWC_H

#include <stdint.h>

#include "nn_kernels.h"

/* Input tile HWC [in_h][in_w][in_c]; output tile HWC [out_h][out_w][out_c].
 * Output (y, x) reads input (y*stride_h - pad_top + i*dil_h, x*stride_w - pad_left + j*dil_w);
 * positions outside [0,in_h) x [0,in_w) read as in_zp (contribute 0), exactly like nn_conv2d_cfg_t. */
typedef struct {
    int in_h, in_w, in_c;
    int out_h, out_w, out_c;
    int k_h, k_w, stride_h, stride_w, dil_h, dil_w;
    int pad_top, pad_left;
    int groups;                       /* in_c and out_c are multiples of groups */
    int32_t in_zp, out_zp, act_min, act_max;
} nn_hwc_conv_cfg_t;

/* Computes output pixels p in [pix_begin, pix_end) (p = y*out_w + x), all out_c channels.
 * weight layout OHWI: [out_c][k_h][k_w][in_c/groups]; bias may be NULL; mult/shift per out channel. */
void nn_hwc_conv2d_s8(const nn_hwc_conv_cfg_t *cfg, const int8_t *in, const int8_t *weight,
                      const int32_t *bias, const int32_t *mult, const int32_t *shift,
                      int8_t *out, int pix_begin, int pix_end);

typedef struct {
    int in_h, in_w, c, out_h, out_w;
    int k_h, k_w, stride_h, stride_w, dil_h, dil_w, pad_top, pad_left;
    int count_include_pad;            /* avgpool only */
    int32_t in_zp, out_zp, act_min, act_max;
} nn_hwc_pool_cfg_t;

/* Same semantics as nn_maxpool_s8 / nn_avgpool_s8 (mult/shift tables exactly as there:
 * maxpool one entry, avgpool indexed by count, size k_h*k_w+1), HWC, pixel range. */
void nn_hwc_maxpool_s8(const nn_hwc_pool_cfg_t *cfg, const int8_t *in, const int32_t *mult,
                       const int32_t *shift, int8_t *out, int pix_begin, int pix_end);
void nn_hwc_avgpool_s8(const nn_hwc_pool_cfg_t *cfg, const int8_t *in, const int32_t *mult,
                       const int32_t *shift, int8_t *out, int pix_begin, int pix_end);

/* Global average pool over hw pixels of an HWC tile [hw][c]; computes channels [c_begin, c_end);
 * same arithmetic as nn_global_avgpool_s8 (mult[0]/shift[0] for every channel; hw < 8421504).
 * out has c entries. */
void nn_hwc_global_avgpool_s8(int hw, int c, int32_t in_zp, int32_t out_zp, int32_t act_min,
                              int32_t act_max, const int8_t *in, const int32_t *mult,
                              const int32_t *shift, int8_t *out, int c_begin, int c_end);

/* Requantize n_pix pixels of c channels from a strided source to a strided destination
 * (pixel strides in elements = bytes), one mult/shift for all: the concat slice writer and
 * standalone requant in HWC.  Same arithmetic as nn_requant_s8. */
void nn_hwc_requant_s8(int n_pix, int c, const int8_t *in, int in_stride, int32_t in_zp,
                       int32_t mult, int32_t shift, int32_t out_zp, int32_t act_min, int32_t act_max,
                       int8_t *out, int out_stride);

#endif /* NN_HWC_H */
