/* Portable C99 INT8 kernels, bit-exact with the NumPy reference (nnscons.reference).
 *
 * Layout: activations CHW (batch 1), conv weight (out_c, in_c/groups, k_h, k_w),
 * linear weight (out, in).  Per-output-channel mult/shift come from
 * nnscons.ops.requant_params(); the rounding rule is in nn_requant.h.
 * No allocation: every kernel works in the caller's buffers plus a small stack frame.
 */
#ifndef NN_KERNELS_H
#define NN_KERNELS_H

#include <stdint.h>

/* Conv/linear sums of (x - zp) * w are accumulated in int32: |x - zp| <= 255 and
 * |w| <= 128, so in_c/groups * k_h * k_w (or in_features) must not exceed this
 * (ResNet-18 needs 4608).  The int32 bias is added in 64 bits afterwards. */
#define NN_MAX_ACC_TERMS 65793

typedef struct {
    int in_c, in_h, in_w;      /* input TILE; rows outside [0,in_h) and cols outside [0,in_w) read as in_zp */
    int out_c, out_h, out_w;   /* output tile */
    int k_h, k_w, stride_h, stride_w, dil_h, dil_w;
    int pad_top, pad_left;     /* output row r reads input rows r*stride_h - pad_top + i*dil_h (same for cols) */
    int groups;
    int32_t in_zp, out_zp, act_min, act_max;
} nn_conv2d_cfg_t;

/* bias may be NULL (no bias). */
void nn_conv2d_s8(const nn_conv2d_cfg_t *cfg, const int8_t *in, const int8_t *weight,
                  const int32_t *bias, const int32_t *mult, const int32_t *shift, int8_t *out);

typedef struct { int in_features, out_features; int32_t in_zp, out_zp, act_min, act_max; } nn_linear_cfg_t;

/* bias may be NULL (no bias). */
void nn_linear_s8(const nn_linear_cfg_t *cfg, const int8_t *in, const int8_t *weight,
                  const int32_t *bias, const int32_t *mult, const int32_t *shift, int8_t *out);

/* Pool tiles follow the conv convention: rows/cols outside the tile are padding.
 * A window with no in-tile pixel (impossible with valid ONNX pads) yields zp_out. */
typedef struct {
    int c, in_h, in_w, out_h, out_w, k_h, k_w, stride_h, stride_w, dil_h, dil_w, pad_top, pad_left;
    int count_include_pad;     /* avgpool only; with dilation: the taps inside the padded plane */
    int32_t in_zp, out_zp, act_min, act_max;
} nn_pool_cfg_t;

/* mult/shift: one entry, applied to (max - in_zp). */
void nn_maxpool_s8(const nn_pool_cfg_t *cfg, const int8_t *in, const int32_t *mult, const int32_t *shift, int8_t *out);
void nn_avgpool_s8(const nn_pool_cfg_t *cfg, const int8_t *in, const int32_t *mult, const int32_t *shift, int8_t *out); /* tables indexed by count, size k_h*k_w+1 */
/* hw * 255 must stay below 2**31 (hw < 8421504). */
void nn_global_avgpool_s8(int c, int hw, int32_t in_zp, int32_t out_zp, int32_t act_min, int32_t act_max,
                          const int8_t *in, const int32_t *mult, const int32_t *shift, int8_t *out);
void nn_add_s8(int n, const int8_t *a, int32_t a_zp, const int8_t *b, int32_t b_zp,
               const int32_t *mult /*[2]*/, const int32_t *shift /*[1]*/,
               int32_t out_zp, int32_t act_min, int32_t act_max, int8_t *out);
/* Also implements concat: one call per input, writing into its channel slice. */
void nn_requant_s8(int n, const int8_t *in, int32_t in_zp, int32_t mult, int32_t shift,
                   int32_t out_zp, int32_t act_min, int32_t act_max, int8_t *out);

#endif /* NN_KERNELS_H */
