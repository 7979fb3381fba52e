/* Max, average and global average pooling on HWC tiles (see nn_hwc.h).
 *
 * Windows are clipped to the tile exactly as nn_pool.c does (positions outside it are
 * padding), and the inner loops run over contiguous channels of one input pixel.
 */
#include <stddef.h>

#include "nn_hwc.h"
#include "nn_requant.h"
#include "nn_window.h"

/* int32 channel sums kept on the stack per pass: 256 bytes (GAP9 cluster stacks are small). */
#define NN_HWC_POOL_CH 64

/* Window of output pixel (y, x) clipped to the tile: kernel taps rows [*r0,*r1), cols
 * [*c0,*c1); tap (i, j) reads input row *top + i * dil_h, column *left + j * dil_w. */
static void nn_hwc_pool_window(const nn_hwc_pool_cfg_t *cfg, int y, int x, int *top, int *left,
                               int *r0, int *r1, int *c0, int *c1)
{
    *top = y * cfg->stride_h - cfg->pad_top;
    *left = x * cfg->stride_w - cfg->pad_left;
    nn_valid_range(*top, cfg->dil_h, cfg->k_h, cfg->in_h, r0, r1);
    nn_valid_range(*left, cfg->dil_w, cfg->k_w, cfg->in_w, c0, c1);
}

/* Input pixel of kernel tap (i, j) of a window at (top, left). */
static const int8_t *nn_hwc_pool_tap(const nn_hwc_pool_cfg_t *cfg, const int8_t *in, int top,
                                     int left, int i, int j)
{
    return in + ((ptrdiff_t)(top + i * cfg->dil_h) * cfg->in_w + left + j * cfg->dil_w) * cfg->c;
}

void nn_hwc_maxpool_s8(const nn_hwc_pool_cfg_t *cfg, const int8_t *in, const int32_t *mult,
                       const int32_t *shift, int8_t *out, int pix_begin, int pix_end)
{
    const int c = cfg->c;
    int p, y, x, i, r, q;

    if (pix_begin >= pix_end)
        return;
    y = pix_begin / cfg->out_w;
    x = pix_begin - y * cfg->out_w;
    for (p = pix_begin; p < pix_end; ++p) {
        int8_t *o = out + (ptrdiff_t)p * c;
        int top, left, r0, r1, c0, c1;
        nn_hwc_pool_window(cfg, y, x, &top, &left, &r0, &r1, &c0, &c1);
        if (r0 < r1 && c0 < c1) {
            /* The running max is an int8: keep it in the output pixel itself, seeded by
             * the window's first pixel, then requantize in place. */
            const int8_t *first = nn_hwc_pool_tap(cfg, in, top, left, r0, c0);
            for (i = 0; i < c; ++i)
                o[i] = first[i];
            for (r = r0; r < r1; ++r) {
                for (q = r == r0 ? c0 + 1 : c0; q < c1; ++q) {
                    const int8_t *px = nn_hwc_pool_tap(cfg, in, top, left, r, q);
                    for (i = 0; i < c; ++i)
                        o[i] = px[i] > o[i] ? px[i] : o[i];
                }
            }
            for (i = 0; i < c; ++i)
                o[i] = nn_requantize((int32_t)o[i] - cfg->in_zp, mult[0], shift[0], cfg->out_zp,
                                     cfg->act_min, cfg->act_max);
        } else {
            /* No in-tile pixel: acc 0, as nn_maxpool_s8. */
            const int8_t v = nn_requantize(0, mult[0], shift[0], cfg->out_zp, cfg->act_min, cfg->act_max);
            for (i = 0; i < c; ++i)
                o[i] = v;
        }
        if (++x == cfg->out_w) {
            x = 0;
            ++y;
        }
    }
}

void nn_hwc_avgpool_s8(const nn_hwc_pool_cfg_t *cfg, const int8_t *in, const int32_t *mult,
                       const int32_t *shift, int8_t *out, int pix_begin, int pix_end)
{
    const int c = cfg->c;
    int32_t acc[NN_HWC_POOL_CH];
    int p, y, x, i, r, q, ch0;

    if (pix_begin >= pix_end)
        return;
    y = pix_begin / cfg->out_w;
    x = pix_begin - y * cfg->out_w;
    for (p = pix_begin; p < pix_end; ++p) {
        int8_t *o = out + (ptrdiff_t)p * c;
        int top, left, r0, r1, c0, c1, n_in, count;
        int32_t zp_sum;
        nn_hwc_pool_window(cfg, y, x, &top, &left, &r0, &r1, &c0, &c1);
        n_in = (r1 - r0) * (c1 - c0);
        /* Sum raw bytes and subtract in_zp once per in-tile pixel: sum(x - zp) exactly. */
        zp_sum = -cfg->in_zp * n_in;
        count = cfg->count_include_pad ? cfg->k_h * cfg->k_w : n_in;
        for (ch0 = 0; ch0 < c; ch0 += NN_HWC_POOL_CH) {
            const int n = c - ch0 < NN_HWC_POOL_CH ? c - ch0 : NN_HWC_POOL_CH;
            for (i = 0; i < n; ++i)
                acc[i] = zp_sum;
            for (r = r0; r < r1; ++r) {
                for (q = c0; q < c1; ++q) {
                    const int8_t *px = nn_hwc_pool_tap(cfg, in, top, left, r, q) + ch0;
                    for (i = 0; i < n; ++i)
                        acc[i] += px[i];
                }
            }
            for (i = 0; i < n; ++i)
                o[ch0 + i] = nn_requantize_avg(acc[i], count, mult[0], shift[0], cfg->out_zp,
                                               cfg->act_min, cfg->act_max);
        }
        if (++x == cfg->out_w) {
            x = 0;
            ++y;
        }
    }
}

void nn_hwc_global_avgpool_s8(int hw, int c, int32_t in_zp, int32_t out_zp, int32_t act_min,
                              int32_t act_max, const int8_t *in, const int32_t *mult,
                              const int32_t *shift, int8_t *out, int c_begin, int c_end)
{
    int32_t acc[NN_HWC_POOL_CH];
    int ch0, i, p;
    for (ch0 = c_begin; ch0 < c_end; ch0 += NN_HWC_POOL_CH) {
        const int n = c_end - ch0 < NN_HWC_POOL_CH ? c_end - ch0 : NN_HWC_POOL_CH;
        for (i = 0; i < n; ++i)
            acc[i] = -in_zp * hw;        /* |in_zp * hw| < 2**31 by the hw bound */
        for (p = 0; p < hw; ++p) {
            const int8_t *px = in + (ptrdiff_t)p * c + ch0;
            for (i = 0; i < n; ++i)
                acc[i] += px[i];
        }
        for (i = 0; i < n; ++i)
            out[ch0 + i] = nn_requantize_avg(acc[i], hw, mult[0], shift[0], out_zp, act_min, act_max);
    }
}
