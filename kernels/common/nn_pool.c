/* Max, average and global average pooling on CHW tiles (see nn_kernels.h). */
#include <stddef.h>

#include "nn_kernels.h"
#include "nn_requant.h"
#include "nn_window.h"

/* Window of output (r, c) clipped to the tile: kernel taps rows [*r0,*r1), cols [*c0,*c1);
 * tap (i, j) reads input row *top + i * dil_h, column *left + j * dil_w. */
static void nn_pool_window(const nn_pool_cfg_t *cfg, int r, int c, int *top, int *left, int *r0,
                           int *r1, int *c0, int *c1)
{
    *top = r * cfg->stride_h - cfg->pad_top;
    *left = c * cfg->stride_w - cfg->pad_left;
    nn_valid_range(*top, cfg->dil_h, cfg->k_h, cfg->in_h, r0, r1);
    nn_valid_range(*left, cfg->dil_w, cfg->k_w, cfg->in_w, c0, c1);
}

void nn_maxpool_s8(const nn_pool_cfg_t *cfg, const int8_t *in, const int32_t *mult, const int32_t *shift, int8_t *out)
{
    int ch, r, c, i, j;
    for (ch = 0; ch < cfg->c; ++ch) {
        const int8_t *plane = in + (ptrdiff_t)ch * cfg->in_h * cfg->in_w;
        for (r = 0; r < cfg->out_h; ++r) {
            for (c = 0; c < cfg->out_w; ++c) {
                int top, left, r0, r1, c0, c1;
                int32_t m = cfg->in_zp;   /* empty window: acc 0 */
                nn_pool_window(cfg, r, c, &top, &left, &r0, &r1, &c0, &c1);
                if (r0 < r1 && c0 < c1) {
                    m = -128;
                    for (i = r0; i < r1; ++i) {
                        const int8_t *row = plane + (ptrdiff_t)(top + i * cfg->dil_h) * cfg->in_w + left;
                        for (j = c0; j < c1; ++j)
                            if (row[j * cfg->dil_w] > m)
                                m = row[j * cfg->dil_w];
                    }
                }
                *out++ = nn_requantize(m - cfg->in_zp, mult[0], shift[0], cfg->out_zp,
                                       cfg->act_min, cfg->act_max);
            }
        }
    }
}

void nn_avgpool_s8(const nn_pool_cfg_t *cfg, const int8_t *in, const int32_t *mult, const int32_t *shift, int8_t *out)
{
    int ch, r, c, i, j;
    for (ch = 0; ch < cfg->c; ++ch) {
        const int8_t *plane = in + (ptrdiff_t)ch * cfg->in_h * cfg->in_w;
        for (r = 0; r < cfg->out_h; ++r) {
            for (c = 0; c < cfg->out_w; ++c) {
                int top, left, r0, r1, c0, c1, count;
                int32_t sum = 0;
                nn_pool_window(cfg, r, c, &top, &left, &r0, &r1, &c0, &c1);
                for (i = r0; i < r1; ++i) {
                    const int8_t *row = plane + (ptrdiff_t)(top + i * cfg->dil_h) * cfg->in_w + left;
                    for (j = c0; j < c1; ++j)
                        sum += row[j * cfg->dil_w] - cfg->in_zp;
                }
                count = cfg->count_include_pad ? cfg->k_h * cfg->k_w : (r1 - r0) * (c1 - c0);
                *out++ = nn_requantize_avg(sum, count, mult[0], shift[0], cfg->out_zp,
                                           cfg->act_min, cfg->act_max);
            }
        }
    }
}

void nn_global_avgpool_s8(int c, int hw, int32_t in_zp, int32_t out_zp, int32_t act_min, int32_t act_max,
                          const int8_t *in, const int32_t *mult, const int32_t *shift, int8_t *out)
{
    int ch, i;
    for (ch = 0; ch < c; ++ch) {
        const int8_t *p = in + (ptrdiff_t)ch * hw;
        int32_t sum = 0;
        for (i = 0; i < hw; ++i)
            sum += p[i] - in_zp;
        out[ch] = nn_requantize_avg(sum, hw, mult[0], shift[0], out_zp, act_min, act_max);
    }
}
