/* 2-D convolution, any stride/dilation/padding/groups, on a row tile (see nn_kernels.h). */
#include <stddef.h>

#include "nn_kernels.h"
#include "nn_requant.h"
#include "nn_window.h"

/* Output columns accumulated per pass: the int32 accumulators live on the stack. */
#define NN_CONV_COLS 128

/* a[i] += w * (x[i*stride] - zp): the hot loop, bounds already clipped by the caller. */
static void nn_mac_row(int32_t *a, const int8_t *x, int n, int stride, int32_t w, int32_t zp)
{
    int i;
    if (stride == 1) {
        for (i = 0; i < n; ++i)
            a[i] += w * ((int32_t)x[i] - zp);
    } else {
        for (i = 0; i < n; ++i)
            a[i] += w * ((int32_t)x[(ptrdiff_t)i * stride] - zp);
    }
}

/* Weight-stationary over a strip of output columns: for each kernel tap the range of
 * output columns whose input column is inside the tile is computed once, so padding
 * (which reads in_zp, i.e. contributes 0) is simply skipped. */
void nn_conv2d_s8(const nn_conv2d_cfg_t *cfg, const int8_t *in, const int8_t *weight,
                  const int32_t *bias, const int32_t *mult, const int32_t *shift, int8_t *out)
{
    const int cin_g = cfg->in_c / cfg->groups;
    const int cout_g = cfg->out_c / cfg->groups;
    const ptrdiff_t plane = (ptrdiff_t)cfg->in_h * cfg->in_w;
    const int taps = cfg->k_h * cfg->k_w;
    int32_t acc[NN_CONV_COLS];
    int o, r, c0, i, ki, kj, ic;

    for (o = 0; o < cfg->out_c; ++o) {
        const int8_t *w_o = weight + (ptrdiff_t)o * cin_g * taps;
        const int8_t *in_g = in + (ptrdiff_t)(o / cout_g) * cin_g * plane;
        const int64_t b = bias ? bias[o] : 0;
        for (r = 0; r < cfg->out_h; ++r) {
            const int row0 = r * cfg->stride_h - cfg->pad_top;
            int8_t *out_row = out + ((ptrdiff_t)o * cfg->out_h + r) * cfg->out_w;
            int ki0, ki1;
            nn_valid_range(row0, cfg->dil_h, cfg->k_h, cfg->in_h, &ki0, &ki1);
            for (c0 = 0; c0 < cfg->out_w; c0 += NN_CONV_COLS) {
                const int n = cfg->out_w - c0 < NN_CONV_COLS ? cfg->out_w - c0 : NN_CONV_COLS;
                for (i = 0; i < n; ++i)
                    acc[i] = 0;
                for (ki = ki0; ki < ki1; ++ki) {
                    const ptrdiff_t row_off = (ptrdiff_t)(row0 + ki * cfg->dil_h) * cfg->in_w;
                    for (kj = 0; kj < cfg->k_w; ++kj) {
                        const int col0 = kj * cfg->dil_w - cfg->pad_left;
                        const int8_t *w_tap = w_o + ki * cfg->k_w + kj;
                        const int8_t *x;
                        int lo, hi;
                        nn_valid_range(col0, cfg->stride_w, cfg->out_w, cfg->in_w, &lo, &hi);
                        if (lo < c0)
                            lo = c0;
                        if (hi > c0 + n)
                            hi = c0 + n;
                        if (lo >= hi)
                            continue;
                        x = in_g + row_off + col0 + (ptrdiff_t)lo * cfg->stride_w;
                        for (ic = 0; ic < cin_g; ++ic)
                            nn_mac_row(acc + (lo - c0), x + ic * plane, hi - lo, cfg->stride_w,
                                       w_tap[ic * taps], cfg->in_zp);
                    }
                }
                for (i = 0; i < n; ++i)
                    out_row[c0 + i] = nn_requantize(b + acc[i], mult[o], shift[o], cfg->out_zp,
                                                    cfg->act_min, cfg->act_max);
            }
        }
    }
}
