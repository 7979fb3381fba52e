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

#endif /* NN_OPS_H */
