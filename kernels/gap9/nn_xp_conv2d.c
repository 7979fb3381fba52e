/* 2-D convolution on an HWC tile with Xpulp SIMD dot products (nn_xpulp.h), PULP-NN style:
 * 4 output channels x 2 output pixels per inner loop, so each loaded input word feeds 4
 * sdotsp and each weight word 2 (6 loads for 8 dot products of 4 MACs).  Same contract,
 * arguments and results as nn_hwc_conv2d_s8 (nn_hwc_kernels.h), which it calls for what it
 * does not cover.
 *
 * Direct path, no im2col copy: with HWC activations and OHWI weights, one kernel row of a pixel's
 * receptive field (its valid columns x in_c) is one contiguous run in the input tile and in
 * the weights, so the loop reads the tile in place, and L1 needs no extra buffer.  Taps in
 * the padding are skipped, which is exact because the activations are centred: zero point
 * 0 as they are (sdotsp), zero point -128 as x ^ 0x80 = x + 128 (sdotusp).
 *
 * Direct path: groups == 1, in_c % 4 == 0 (word-aligned runs), dil_w == 1, in_zp 0 or -128.
 * Two horizontally adjacent pixels pair up when their valid kernel columns agree (always
 * away from the left/right border); the others run 4 channels x 1 pixel; channels after the
 * last block of 4 run 1 channel x 2 pixels. The other dense convs take the im2col path
 * (below), grouped and depthwise ones nn_hwc_conv2d_s8.
 */
#include <stddef.h>

#include "nn_hwc_kernels.h"
#include "nn_window.h"
#include "nn_xpulp.h"

int nn_xp_conv2d_fast(const nn_hwc_conv_cfg_t *cfg)
{
    return cfg->groups == 1 && cfg->in_c % 4 == 0 && cfg->dil_w == 1 &&
           (cfg->in_zp == 0 || cfg->in_zp == -128);
}

/* output pixels [pix_begin, pix_end), channels [c_begin, c_end) */
static void direct(const nn_hwc_conv_cfg_t *cfg, const int8_t *in, const int8_t *weight,
                   const int32_t *bias, const int32_t *mult, const int32_t *shift, int8_t *out,
                   int pix_begin, int pix_end, int c_begin, int c_end)
{
    const int flip = cfg->in_zp == -128;
    const int in_c = cfg->in_c, out_c = cfg->out_c;
    const ptrdiff_t wsize = (ptrdiff_t)cfg->k_h * cfg->k_w * in_c;
    const ptrdiff_t in_row = (ptrdiff_t)cfg->in_w * in_c;
    const ptrdiff_t x_row = cfg->dil_h * in_row, w_row = (ptrdiff_t)cfg->k_w * in_c;
    const ptrdiff_t x_next = (ptrdiff_t)cfg->stride_w * in_c;     /* pixel B's field from A's */
    const int32_t ozp = cfg->out_zp, lo = cfg->act_min, hi = cfg->act_max;
    int p = pix_begin, y, x;

    if (pix_begin >= pix_end)
        return;
    y = pix_begin / cfg->out_w;
    x = pix_begin - y * cfg->out_w;
    while (p < pix_end) {
        const int row0 = y * cfg->stride_h - cfg->pad_top;
        const int col0 = x * cfg->stride_w - cfg->pad_left;
        int ki0, ki1, kj0, kj1, bj0, bj1, rows, n, pair, o, j;
        const int8_t *xa;
        ptrdiff_t w0;
        int8_t *oa = out + (ptrdiff_t)p * out_c;

        nn_valid_range(row0, cfg->dil_h, cfg->k_h, cfg->in_h, &ki0, &ki1);
        nn_valid_range(col0, 1, cfg->k_w, cfg->in_w, &kj0, &kj1);
        pair = 0;
        if (p + 1 < pix_end && x + 1 < cfg->out_w) {
            nn_valid_range(col0 + cfg->stride_w, 1, cfg->k_w, cfg->in_w, &bj0, &bj1);
            pair = bj0 == kj0 && bj1 == kj1;
        }
        rows = kj1 > kj0 ? ki1 - ki0 : 0;
        n = (kj1 - kj0) * in_c / 4;                 /* words per kernel row */
        if (n == 0)
            rows = 0;
        w0 = ((ptrdiff_t)ki0 * cfg->k_w + kj0) * in_c;
        /* only form the pointer when some tap is inside the tile */
        xa = rows ? in + (row0 + ki0 * cfg->dil_h) * in_row + (ptrdiff_t)(col0 + kj0) * in_c : in;

        for (o = c_begin; o + 4 <= c_end; o += 4) {
            const int8_t *wo = weight + (ptrdiff_t)o * wsize + w0;
            if (pair) {
                int32_t acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
                if (rows)
                    nn_xp_dot_4x2(flip, acc, xa, xa + x_next, wo, wsize, n, rows, x_row, w_row);
                for (j = 0; j < 4; ++j) {
                    const int32_t b = bias ? bias[o + j] : 0;
                    oa[o + j] = nn_xp_requant(b, acc[2 * j], mult[o + j], shift[o + j], ozp, lo, hi);
                    oa[out_c + o + j] = nn_xp_requant(b, acc[2 * j + 1], mult[o + j], shift[o + j], ozp,
                                                      lo, hi);
                }
            } else {
                int32_t acc[4] = {0, 0, 0, 0};
                if (rows)
                    nn_xp_dot_4x1(flip, acc, xa, wo, wsize, n, rows, x_row, w_row);
                for (j = 0; j < 4; ++j)
                    oa[o + j] = nn_xp_requant(bias ? bias[o + j] : 0, acc[j], mult[o + j], shift[o + j],
                                              ozp, lo, hi);
            }
        }
        for (; o < c_end; ++o) {                        /* leftover channels: fewer than 4 */
            const int8_t *wo = weight + (ptrdiff_t)o * wsize + w0;
            int32_t acc[2] = {0, 0};
            if (pair && rows)
                nn_xp_dot_1x2(flip, acc, xa, xa + x_next, wo, n, rows, x_row, w_row);
            else
                acc[0] = nn_xp_dot_1x1(flip, 0, xa, wo, n, rows, x_row, w_row);
            for (j = 0; j <= pair; ++j)
                oa[j * out_c + o] = nn_xp_requant(bias ? bias[o] : 0, acc[j], mult[o], shift[o], ozp, lo, hi);
        }
        p += 1 + pair;
        x += 1 + pair;
        if (x == cfg->out_w) {
            x = 0;
            ++y;
        }
    }
}

void nn_xp_conv2d_s8(const nn_hwc_conv_cfg_t *cfg, const int8_t *in, const int8_t *weight,
                     const int32_t *bias, const int32_t *mult, const int32_t *shift,
                     int8_t *out, int pix_begin, int pix_end)
{
    if (nn_xp_conv2d_fast(cfg))
        direct(cfg, in, weight, bias, mult, shift, out, pix_begin, pix_end, 0, cfg->out_c);
    else
        nn_hwc_conv2d_s8(cfg, in, weight, bias, mult, shift, out, pix_begin, pix_end);
}

/* ---- im2col path: every other groups == 1 conv (in_c % 4 != 0, dilated columns, any input
 * zero point; the network's first conv on an image). Each pixel's receptive field is copied
 * to a contiguous run of K = k_h*k_w*in_c bytes, padding as the zero point itself; the dot
 * loops' x ^ 0x80 = x + 128 form (0..255) then gives sum (x + 128) * w, from which the
 * kernel subtracts (zp + 128) * sum(w) per channel: sum (x - zp) * w over the whole field.
 * Weight rows are padded with zeros to KW = K rounded up to a word (the layer's .bin is
 * packed so), so every load is aligned and the buffers' last word needs no special case.
 * Two pixels (any two consecutive ones) share each weight load as on the direct path. */

#define NN_XP_CHUNK 32          /* output channels whose weight sums live on the stack */

int nn_xp_conv2d_im2col(const nn_hwc_conv_cfg_t *cfg)
{
    return cfg->groups == 1 && !nn_xp_conv2d_fast(cfg);
}

/* pixel p's receptive field into buf (KW bytes), positions outside the tile (and the bytes
 * after K, which meet zero weights) as pad */
static void im2col(const nn_hwc_conv_cfg_t *cfg, const int8_t *in, int p, int8_t pad, int8_t *buf)
{
    const int y = p / cfg->out_w, x = p - y * cfg->out_w;
    const int row0 = y * cfg->stride_h - cfg->pad_top, col0 = x * cfg->stride_w - cfg->pad_left;
    int i, j, c, k = 0;
    for (i = 0; i < cfg->k_h; ++i) {
        const int r = row0 + i * cfg->dil_h;
        for (j = 0; j < cfg->k_w; ++j) {
            const int q = col0 + j * cfg->dil_w;
            if (r < 0 || r >= cfg->in_h || q < 0 || q >= cfg->in_w) {
                for (c = 0; c < cfg->in_c; ++c)
                    buf[k++] = pad;
            } else {
                const int8_t *px = in + ((ptrdiff_t)r * cfg->in_w + q) * cfg->in_c;
                for (c = 0; c < cfg->in_c; ++c)
                    buf[k++] = px[c];
            }
        }
    }
    while (k & 3)
        buf[k++] = pad;
}

static void im2col_conv(const nn_hwc_conv_cfg_t *cfg, const int8_t *in, const int8_t *weight,
                        const int32_t *bias, const int32_t *mult, const int32_t *shift, int8_t *out,
                        int pix_begin, int pix_end, int c_begin, int c_end, int8_t *scratch)
{
    const int out_c = cfg->out_c;
    const int kw = (cfg->k_h * cfg->k_w * cfg->in_c + 3) & ~3, nw = kw / 4;
    const int8_t pad = (int8_t)cfg->in_zp;
    const uint32_t zu = (uint32_t)(cfg->in_zp + 128);
    const int32_t ozp = cfg->out_zp, lo = cfg->act_min, hi = cfg->act_max;
    int8_t *buf_a = scratch, *buf_b = buf_a + kw;
    int32_t wsum[NN_XP_CHUNK];
    int c0, p, o, j;

    for (c0 = c_begin; c0 < c_end; c0 += NN_XP_CHUNK) {
        const int c1 = c0 + NN_XP_CHUNK < c_end ? c0 + NN_XP_CHUNK : c_end;
        for (o = c0; o < c1; ++o) {         /* sum(w) of each channel, K <= NN_MAX_ACC_TERMS */
            const int8_t *w = weight + (ptrdiff_t)o * kw;
            int32_t s = 0;
            for (j = 0; j < nw; ++j)
                s = nn_xp_sdotsp(s, 0x01010101u, nn_xp_load(w + 4 * j));
            wsum[o - c0] = s;
        }
        for (p = pix_begin; p < pix_end; p += 2) {
            const int pair = p + 1 < pix_end;
            int8_t *oa = out + (ptrdiff_t)p * out_c;
            im2col(cfg, in, p, pad, buf_a);
            if (pair)
                im2col(cfg, in, p + 1, pad, buf_b);
            for (o = c0; o < c1; o += 4) {
                const int nb = c1 - o < 4 ? c1 - o : 4;
                const int8_t *w = weight + (ptrdiff_t)o * kw;
                int32_t acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
                if (nb == 4 && pair)
                    nn_xp_dot_4x2(1, acc, buf_a, buf_b, w, kw, nw, 1, 0, 0);
                else if (nb == 4) {
                    int32_t a4[4] = {0, 0, 0, 0};
                    nn_xp_dot_4x1(1, a4, buf_a, w, kw, nw, 1, 0, 0);
                    for (j = 0; j < 4; ++j)
                        acc[2 * j] = a4[j];
                } else {
                    for (j = 0; j < nb; ++j) {
                        acc[2 * j] = nn_xp_dot_1x1(1, 0, buf_a, w + (ptrdiff_t)j * kw, nw, 1, 0, 0);
                        if (pair)
                            acc[2 * j + 1] = nn_xp_dot_1x1(1, 0, buf_b, w + (ptrdiff_t)j * kw, nw, 1, 0, 0);
                    }
                }
                for (j = 0; j < nb; ++j) {
                    const int32_t b = bias ? bias[o + j] : 0;
                    /* modular arithmetic: the centred sum fits in 32 bits, its parts may not */
                    const uint32_t corr = zu * (uint32_t)wsum[o + j - c0];
                    oa[o + j] = nn_xp_requant(b, (int32_t)((uint32_t)acc[2 * j] - corr), mult[o + j],
                                              shift[o + j], ozp, lo, hi);
                    if (pair)
                        oa[out_c + o + j] = nn_xp_requant(b, (int32_t)((uint32_t)acc[2 * j + 1] - corr),
                                                          mult[o + j], shift[o + j], ozp, lo, hi);
                }
            }
        }
    }
}

void nn_xp_conv2d_im2col_s8(const nn_hwc_conv_cfg_t *cfg, const int8_t *in, const int8_t *weight,
                            const int32_t *bias, const int32_t *mult, const int32_t *shift,
                            int8_t *out, int pix_begin, int pix_end, int8_t *scratch)
{
    im2col_conv(cfg, in, weight, bias, mult, shift, out, pix_begin, pix_end, 0, cfg->out_c, scratch);
}

/* Every output pixel, channels [c_begin, c_end): the cores' share when a tile has fewer
 * pixels than cores. Weights as the path wants them (padded rows on the im2col path, whose
 * scratch is then this core's; scratch may be NULL otherwise). */
void nn_xp_conv2d_chans_s8(const nn_hwc_conv_cfg_t *cfg, const int8_t *in, const int8_t *weight,
                           const int32_t *bias, const int32_t *mult, const int32_t *shift,
                           int8_t *out, int c_begin, int c_end, int8_t *scratch)
{
    const int n_pix = cfg->out_h * cfg->out_w;
    if (c_begin >= c_end)
        return;
    if (nn_xp_conv2d_fast(cfg)) {
        direct(cfg, in, weight, bias, mult, shift, out, 0, n_pix, c_begin, c_end);
    } else if (nn_xp_conv2d_im2col(cfg) && scratch) {
        im2col_conv(cfg, in, weight, bias, mult, shift, out, 0, n_pix, c_begin, c_end, scratch);
    } else {    /* plain C, one pixel at a time: its channels c_begin.. sit at out[p*out_c + c_begin] */
        nn_hwc_conv_cfg_t sub = *cfg;
        const ptrdiff_t per_oc = (ptrdiff_t)cfg->k_h * cfg->k_w * (cfg->in_c / cfg->groups);
        int p;
        sub.out_c = c_end - c_begin;
        for (p = 0; p < n_pix; ++p)
            nn_hwc_conv2d_s8(&sub, in, weight + c_begin * per_oc, bias ? bias + c_begin : NULL,
                             mult + c_begin, shift + c_begin,
                             out + (ptrdiff_t)p * (cfg->out_c - sub.out_c) + c_begin, p, p + 1);
    }
}
