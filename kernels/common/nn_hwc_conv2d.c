/* 2-D convolution on an HWC tile, one output pixel range per call (see nn_hwc.h).
 *
 * Output-pixel stationary: each pixel's valid kernel rows/cols are computed once, so the
 * taps that would read padding (in_zp, contributing 0) are skipped and the MAC loops
 * test no bounds.  The reduction runs over contiguous input channels; with groups == 1
 * and dil_w == 1 a whole kernel row (valid cols x in_c) is one contiguous run.
 */
#include <stddef.h>

#include "nn_hwc.h"
#include "nn_requant.h"
#include "nn_window.h"

/* a[r] += sum_i (x[i] - zp) * w[r*ws + i], r = 0..3: four output channels share each
 * loaded and centred input byte. */
static inline void nn_hwc_dot4(int32_t a[4], const int8_t *x, const int8_t *w, ptrdiff_t ws,
                               int n, int32_t zp)
{
    const int8_t *w1 = w + ws, *w2 = w1 + ws, *w3 = w2 + ws;
    int32_t a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3];
    int i;
    for (i = 0; i < n; ++i) {
        const int32_t v = (int32_t)x[i] - zp;
        a0 += v * w[i];
        a1 += v * w1[i];
        a2 += v * w2[i];
        a3 += v * w3[i];
    }
    a[0] = a0;
    a[1] = a1;
    a[2] = a2;
    a[3] = a3;
}

static inline int32_t nn_hwc_dot(const int8_t *x, const int8_t *w, int n, int32_t zp)
{
    int32_t a = 0;
    int i;
    for (i = 0; i < n; ++i)
        a += ((int32_t)x[i] - zp) * w[i];
    return a;
}

/* The clipped receptive field of one output pixel, as runs of contiguous bytes:
 * rows x runs, each run `len` long; input/weight pointers advance by the steps. */
typedef struct {
    const int8_t *x;          /* first valid tap, channel 0 of the pixel's group 0 */
    ptrdiff_t w0;             /* offset of that tap in one output channel's weights */
    int rows, runs, len;
    ptrdiff_t x_row, x_run;   /* input steps between kernel rows / runs */
    int w_row, w_run;         /* weight steps between kernel rows / runs */
} nn_hwc_field_t;

void nn_hwc_conv2d_s8(const nn_hwc_conv_cfg_t *cfg, const int8_t *in, const int8_t *weight,
                      const int32_t *bias, const int32_t *mult, const int32_t *shift,
                      int8_t *out, int pix_begin, int pix_end)
{
    const int cin_g = cfg->in_c / cfg->groups;
    const int cout_g = cfg->out_c / cfg->groups;
    const ptrdiff_t wsize = (ptrdiff_t)cfg->k_h * cfg->k_w * cin_g;   /* per output channel */
    const ptrdiff_t in_row = (ptrdiff_t)cfg->in_w * cfg->in_c;
    /* Adjacent kernel cols are adjacent pixels and span every channel: merge them. */
    const int merge = cin_g == cfg->in_c && cfg->dil_w == 1;
    const int32_t zp = cfg->in_zp;
    nn_hwc_field_t f;
    int p, y, x;

    if (pix_begin >= pix_end)
        return;
    y = pix_begin / cfg->out_w;
    x = pix_begin - y * cfg->out_w;
    f.x_row = cfg->dil_h * in_row;
    f.x_run = (ptrdiff_t)cfg->dil_w * cfg->in_c;
    f.w_row = cfg->k_w * cin_g;
    f.w_run = cin_g;

    for (p = pix_begin; p < pix_end; ++p) {
        const int row0 = y * cfg->stride_h - cfg->pad_top;
        const int col0 = x * cfg->stride_w - cfg->pad_left;
        int8_t *o_pix = out + (ptrdiff_t)p * cfg->out_c;
        int ki0, ki1, kj0, kj1, g, o, r, j;

        nn_valid_range(row0, cfg->dil_h, cfg->k_h, cfg->in_h, &ki0, &ki1);
        nn_valid_range(col0, cfg->dil_w, cfg->k_w, cfg->in_w, &kj0, &kj1);
        f.rows = kj1 > kj0 ? ki1 - ki0 : 0;
        f.runs = merge ? 1 : kj1 - kj0;
        f.len = merge ? (kj1 - kj0) * cin_g : cin_g;
        f.w0 = ((ptrdiff_t)ki0 * cfg->k_w + kj0) * cin_g;
        /* Only form the pointer when some tap is inside the tile. */
        f.x = f.rows ? in + (row0 + ki0 * cfg->dil_h) * in_row
                          + (ptrdiff_t)(col0 + kj0 * cfg->dil_w) * cfg->in_c
                     : in;

        if (cin_g == 1 && cout_g == 1) {
            /* Depthwise: one input channel per output channel, nothing to reduce over
             * channels.  Walk the taps with the accumulator in a register (the input
             * stride is in_c); a channel-inner loop would need a stack array and a
             * load/store per MAC. */
            for (o = 0; o < cfg->out_c; ++o) {
                const int8_t *w_o = weight + (ptrdiff_t)o * wsize + f.w0;
                const int nj = kj1 - kj0;
                int32_t acc = 0;
                for (r = 0; r < f.rows; ++r) {
                    const int8_t *xr = f.x + r * f.x_row + o;
                    const int8_t *wr = w_o + r * f.w_row;
                    for (j = 0; j < nj; ++j)
                        acc += ((int32_t)xr[j * f.x_run] - zp) * wr[j];
                }
                o_pix[o] = nn_requantize((int64_t)(bias ? bias[o] : 0) + acc, mult[o], shift[o],
                                         cfg->out_zp, cfg->act_min, cfg->act_max);
            }
        } else {
            for (g = 0; g < cfg->groups; ++g) {
                const int8_t *x_g = f.x + (ptrdiff_t)g * cin_g;
                const int o_end = (g + 1) * cout_g;
                o = g * cout_g;
                for (; o + 4 <= o_end; o += 4) {
                    const int8_t *w_o = weight + (ptrdiff_t)o * wsize + f.w0;
                    int32_t acc[4] = {0, 0, 0, 0};
                    for (r = 0; r < f.rows; ++r)
                        for (j = 0; j < f.runs; ++j)
                            nn_hwc_dot4(acc, x_g + r * f.x_row + j * f.x_run,
                                        w_o + r * f.w_row + j * f.w_run, wsize, f.len, zp);
                    for (j = 0; j < 4; ++j)
                        o_pix[o + j] = nn_requantize((int64_t)(bias ? bias[o + j] : 0) + acc[j],
                                                     mult[o + j], shift[o + j], cfg->out_zp,
                                                     cfg->act_min, cfg->act_max);
                }
                for (; o < o_end; ++o) {
                    const int8_t *w_o = weight + (ptrdiff_t)o * wsize + f.w0;
                    int32_t acc = 0;
                    for (r = 0; r < f.rows; ++r)
                        for (j = 0; j < f.runs; ++j)
                            acc += nn_hwc_dot(x_g + r * f.x_row + j * f.x_run,
                                              w_o + r * f.w_row + j * f.w_run, f.len, zp);
                    o_pix[o] = nn_requantize((int64_t)(bias ? bias[o] : 0) + acc, mult[o], shift[o],
                                             cfg->out_zp, cfg->act_min, cfg->act_max);
                }
            }
        }
        if (++x == cfg->out_w) {
            x = 0;
            ++y;
        }
    }
}
