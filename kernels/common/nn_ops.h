/* Portable C99 INT8 kernels of the ops added through nnscons.ops (one file per family),
 * bit-exact with the NumPy reference.  Layout-parametric: a tensor is walked as
 * (outer, c, inner) so the same kernel serves CHW (outer 1, inner H*W) and HWC
 * (outer H*W, inner 1) activations. */
#ifndef NN_OPS_H
#define NN_OPS_H

#include <stdint.h>

/* out[i] = table[ch * table_stride + in[i] + 128] for element i of channel ch, over
 * outer x c x inner elements (table_stride 0: one table for every channel). */
void nn_lut_s8(int outer, int c, int inner, const int8_t *in, const int8_t *table,
               int table_stride, int8_t *out);

/* out = clamp(out_zp + round((a - a_zp) * (b - b_zp) * mult / 2**shift)) over outer x c x
 * inner elements of a (contiguous); b's element for (o, ch, k) is b[o*b_so + ch*b_sc + k*b_si]
 * (strides 0 broadcast it). */
void nn_mul_s8(int outer, int c, int inner, const int8_t *a, int32_t a_zp,
               const int8_t *b, int32_t b_zp, int b_so, int b_sc, int b_si,
               int32_t mult, int32_t shift, int32_t out_zp, int32_t act_min, int32_t act_max,
               int8_t *out);

/* Data movement (nnscons.ops.move): out[i] = index[i] < 0 ? fill : table[in[index[i]] + 128]
 * for i in [0, n); the index is in the target's activation layout. */
void nn_gather_s8(int n, const int8_t *in, const int32_t *index, const int8_t *table,
                  int8_t fill, int8_t *out);

/* Global average of a float island's values per channel, rounded once (nnscons.ops.island_pool):
 * table[t * 256 + q + 128] in output LSB * 2**frac, t = the channel (tables > 1) or 0. */
void nn_island_avgpool_s8(int c, int hw, int tables, const int8_t *in, const int32_t *table, int32_t frac,
                          int32_t out_zp, int32_t act_min, int32_t act_max, int8_t *out);
/* The same over channels [c0, c1) of any layout: pixel p of channel ch at
 * in[p * px_stride + ch * ch_stride]. */
void nn_island_avgpool_part_s8(int hw, long px_stride, long ch_stride, int c0, int c1, int tables,
                               const int8_t *in, const int32_t *table, int32_t frac, int32_t out_zp,
                               int32_t act_min, int32_t act_max, int8_t *out);

/* Softmax over rows of n int8 values (nnscons.ops.softmax): exp_table[d] for d = max - q,
 * out = clamp(out_zp + round(e * mult / (sum e * 2**shift))), ties to even. */
void nn_softmax_s8(int rows, int n, const int8_t *in, const int32_t *exp_table, int32_t mult,
                   int32_t shift, int32_t out_zp, int32_t act_min, int32_t act_max, int8_t *out);

/* TFLite's int8 bilinear resize (nnscons.ops.resize): rows/cols hold (i0, i1, w1) per
 * output row/column; hwc 1: HWC tensors, 0: CHW. */
void nn_resize_bilinear_s8(int c, int ih, int iw, int oh, int ow, int hwc, const int8_t *in,
                           const int32_t *rows, const int32_t *cols, int8_t *out);

/* ONNX Resize linear in float64 (nnscons.ops.bilinear), output rows [y_begin, y_end):
 * rows/cols hold the two source indices per output row/column, rc/cc their float64
 * coefficients (unused when resize_h / resize_w is 0: that axis is not resized); `in`
 * starts at input row in_row0, `out` at output row out_row0. */
void nn_bilinear_f64_s8(int c, int ih, int iw, int oh, int ow, int hwc, int y_begin, int y_end,
                        int in_row0, int out_row0, const int8_t *in, int32_t in_zp, double in_scale, int resize_h,
                        const int32_t *rows, const double *rc, int resize_w, const int32_t *cols,
                        const double *cc, double out_scale, int32_t out_zp, int32_t act_min,
                        int32_t act_max, int8_t *out);

/* a / b (b / a when swap) in float64 (nnscons.ops.div), broadcast as nn_mul_s8; the
 * scales are the operands' and the output's; NaN gives nan_code. */
void nn_div_f64_s8(int outer, int c, int inner, const int8_t *a, int32_t a_zp, double a_scale,
                   const int8_t *b, int32_t b_zp, double b_scale, int b_so, int b_sc, int b_si,
                   int swap, double out_scale, int32_t out_zp, int32_t act_min, int32_t act_max,
                   int8_t nan_code, int8_t *out);

/* ONNX LRN across channels in float64 (nnscons.ops.lrn) over outer x c x inner elements:
 * the window is channels [ch - before, ch + after]; alpha_n = alpha / size. Needs libm. */
void nn_lrn_f64_s8(int outer, int c, int inner, const int8_t *in, int32_t in_zp, double in_scale,
                   int before, int after, double bias, double alpha_n, double beta,
                   double out_scale, int32_t out_zp, int32_t act_min, int32_t act_max, int8_t *out);

/* ONNX InstanceNormalization (nnscons.ops.instnorm) over outer x c x inner elements,
 * channels [ch_begin, ch_end): nn_instnorm_sums_s8 adds the exact integer sums of the codes
 * (less in_zp) and of their squares to s1, s2 (zero them first; call it per chunk of
 * pixels); nn_instnorm_stats_f64 gives each channel's mean and denominator (n values per
 * channel); nn_instnorm_apply_f64_s8 the outputs. gamma/beta: the per-channel scale and B.
 * Needs libm (sqrt). */
void nn_instnorm_sums_s8(int outer, int c, int inner, int ch_begin, int ch_end, const int8_t *in,
                         int32_t in_zp, int64_t *s1, int64_t *s2);
void nn_instnorm_stats_f64(int64_t n, int ch_begin, int ch_end, const int64_t *s1, const int64_t *s2,
                           double in_scale, double eps, double *mean, double *den);
void nn_instnorm_apply_f64_s8(int outer, int c, int inner, int ch_begin, int ch_end, const int8_t *in,
                              int32_t in_zp, double in_scale, const double *mean, const double *den,
                              const double *gamma, const double *beta, double out_scale, int32_t out_zp,
                              int32_t act_min, int32_t act_max, int8_t *out);
/* Reduction (nnscons.ops.reduce) of a tensor walked as d0 x d1 x d2 (memory order; d2
 * contiguous): bit k of `reduced` reduces dim k. Outputs [o_begin, o_end) of the same walk
 * with the reduced dims of extent 1; fn NN_REDUCE_*: mean = clamp(out_zp + round(sum(x - in_zp)
 * * mult / (n * 2**shift))) over the n reduced elements, sum without the division, max/min
 * requantize (extreme - in_zp). The sum is int32: n * 255 < 2**31. */
enum { NN_REDUCE_MEAN = 0, NN_REDUCE_SUM = 1, NN_REDUCE_MAX = 2, NN_REDUCE_MIN = 3 };
void nn_reduce_s8(int d0, int d1, int d2, int reduced, int fn, const int8_t *in, int32_t in_zp,
                  int32_t mult, int32_t shift, int32_t out_zp, int32_t act_min, int32_t act_max,
                  int8_t *out, int o_begin, int o_end);

/* Sum / Max / Min of n inputs (nnscons.ops.nary) over outputs [begin, end) of an outer x c x
 * inner walk; input k is read as mode[k] NN_NARY_SAME (element i), NN_NARY_CHANNEL (its
 * channel) or NN_NARY_SCALAR (element 0). fn NN_NARY_SUM: clamp(out_zp + round(sum_k
 * (x_k - in_zp[k]) * mult[k] / 2**shift[0])), one rounding; NN_NARY_MAX / MIN: the extreme
 * of each input requantized by (mult[k], shift[k]). */
enum { NN_NARY_SUM = 0, NN_NARY_MAX = 1, NN_NARY_MIN = 2 };
enum { NN_NARY_SAME = 0, NN_NARY_CHANNEL = 1, NN_NARY_SCALAR = 2 };
void nn_nary_s8(int n, int outer, int c, int inner, const int8_t *const *in, const int32_t *in_zp,
                const int32_t *mode, int fn, const int32_t *mult, const int32_t *shift,
                int32_t out_zp, int32_t act_min, int32_t act_max, int8_t *out, int begin, int end);

#endif /* NN_OPS_H */
