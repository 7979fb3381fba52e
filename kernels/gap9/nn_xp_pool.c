/* Pooling on HWC tiles with Xpulp SIMD (nn_xpulp.h). Max pooling: same contract, arguments
 * and results as nn_hwc_maxpool_s8 (nn_hwc_kernels.h), which it calls when c % 4 != 0.
 *
 * The window maximum runs on words: pv.max.b takes 4 channels per instruction. The
 * requantization of a maximum depends on that one int8 value only, so a call with many
 * outputs first tabulates it for the 256 possible values (nn_xp_requant, the same rule
 * as nn_requantize) and then looks each output up.
 */
#include <stddef.h>

#include "nn_hwc_kernels.h"
#include "nn_window.h"
#include "nn_xpulp.h"

/* outputs per call from which the 256-entry table pays for itself */
#define NN_XP_POOL_LUT_MIN 1024

int nn_xp_maxpool_fast(const nn_hwc_pool_cfg_t *cfg)
{
    /* dilated windows take nn_hwc_maxpool_s8 (strided taps) */
    return cfg->c % 4 == 0 && cfg->dil_h == 1 && cfg->dil_w == 1;
}

/* Whether the requantization of a maximum is the identity: a multiplier of exactly 1
 * (mult = 2^shift, so no rounding), the same zero point, no clamp inside int8. Then a
 * window's maximum word is its output word (a max pool keeping its input's scale). */
static int identity(const nn_hwc_pool_cfg_t *cfg, int32_t mult, int32_t shift)
{
    return shift >= 1 && shift <= 30 && mult == (int32_t)1 << shift && cfg->in_zp == cfg->out_zp &&
           cfg->act_min <= -128 && cfg->act_max >= 127;
}

static inline uint32_t max9(const int8_t *p, ptrdiff_t c, ptrdiff_t row)
{
    const uint32_t a = nn_xp_max4(nn_xp_max4(nn_xp_load(p), nn_xp_load(p + c)), nn_xp_load(p + 2 * c));
    const uint32_t b = nn_xp_max4(nn_xp_max4(nn_xp_load(p + row), nn_xp_load(p + row + c)), nn_xp_load(p + row + 2 * c));
    const uint32_t d = nn_xp_max4(nn_xp_max4(nn_xp_load(p + 2 * row), nn_xp_load(p + 2 * row + c)),
                                  nn_xp_load(p + 2 * row + 2 * c));
    return nn_xp_max4(nn_xp_max4(a, b), d);
}

void nn_xp_maxpool_s8(const nn_hwc_pool_cfg_t *cfg, const int8_t *in, const int32_t *mult,
                      const int32_t *shift, int8_t *out, int pix_begin, int pix_end)
{
    const int c = cfg->c, words = c / 4;
    const ptrdiff_t row = (ptrdiff_t)cfg->in_w * c;
    const int32_t m0 = mult[0], s0 = shift[0], ozp = cfg->out_zp, lo = cfg->act_min, hi = cfg->act_max;
    const int same = identity(cfg, m0, s0);
    const int lut = !same && (pix_end - pix_begin) * c >= NN_XP_POOL_LUT_MIN;
    int8_t table[256];
    int p, y, x, i, j, r, q;

    if (!nn_xp_maxpool_fast(cfg)) {
        nn_hwc_maxpool_s8(cfg, in, mult, shift, out, pix_begin, pix_end);
        return;
    }
    if (pix_begin >= pix_end)
        return;
    if (lut)
        for (i = 0; i < 256; ++i)
            table[i] = nn_xp_requant(0, i - 128 - cfg->in_zp, m0, s0, ozp, lo, hi);
    y = pix_begin / cfg->out_w;
    x = pix_begin - y * cfg->out_w;
    for (p = pix_begin; p < pix_end; ++p) {
        int8_t *o = out + (ptrdiff_t)p * c;
        const int top = y * cfg->stride_h - cfg->pad_top, left = x * cfg->stride_w - cfg->pad_left;
        int r0, r1, c0, c1;
        nn_valid_range(top, 1, cfg->k_h, cfg->in_h, &r0, &r1);
        nn_valid_range(left, 1, cfg->k_w, cfg->in_w, &c0, &c1);
        if (same && r1 - r0 == 3 && c1 - c0 == 3) {     /* a whole 3 x 3 window: unrolled */
            const int8_t *first = in + (top + r0) * row + (ptrdiff_t)(left + c0) * c;
            for (i = 0; i < words; ++i)
                nn_xp_store_u(o + 4 * i, max9(first + 4 * i, c, row));
        } else if (r0 < r1 && c0 < c1) {
            const int8_t *first = in + (top + r0) * row + (ptrdiff_t)(left + c0) * c;
            for (i = 0; i < words; ++i) {
                const int8_t *base = first + 4 * i;
                uint32_t m = nn_xp_load(base);
                for (r = 0; r < r1 - r0; ++r)
                    for (q = 0; q < c1 - c0; ++q)
                        m = nn_xp_max4(m, nn_xp_load(base + r * row + (ptrdiff_t)q * c));
                if (same) {
                    nn_xp_store_u(o + 4 * i, m);
                    continue;
                }
                for (j = 0; j < 4; ++j) {
                    const int8_t v = (int8_t)(uint8_t)(m >> 8 * j);
                    o[4 * i + j] = lut ? table[v + 128] : nn_xp_requant(0, v - cfg->in_zp, m0, s0, ozp, lo, hi);
                }
            }
        } else {            /* no in-tile pixel: acc 0, as nn_maxpool_s8 */
            const int8_t v = nn_xp_requant(0, 0, m0, s0, ozp, lo, hi);
            for (i = 0; i < c; ++i)
                o[i] = v;
        }
        if (++x == cfg->out_w) {
            x = 0;
            ++y;
        }
    }
}

/* ---- averages: nn_requantize_avg(acc, count, mult, shift, ...) without its 64-bit division
 * (a library call of hundreds of cycles on the cluster cores), for 1 <= count <= 65535.
 * With acc = a count + r and mult = bm count + sm (0 <= r, sm < count):
 *   floor(acc mult / count) = a mult + r bm + floor(r sm / count),
 *   acc mult mod count = r sm mod count,
 * and r sm < count^2 < 2^32: one signed and one unsigned 32-bit division. */
typedef struct {
    int32_t count, mult, shift, bm, sm;
} nn_xp_avg_t;

static void avg_setup(nn_xp_avg_t *d, int32_t count, int32_t mult, int32_t shift)
{
    d->count = count;
    d->mult = mult;
    d->shift = shift;
    d->bm = count > 0 ? mult / count : 0;
    d->sm = count > 0 ? mult - d->bm * count : 0;
}

static int8_t avg_requant(int32_t acc, const nn_xp_avg_t *d, int32_t zp, int32_t lo, int32_t hi)
{
    int32_t a, r;
    uint32_t t, tq;
    int64_t q, big;
    if (d->count <= 0 || d->count > 65535 || d->shift < 0)   /* shift < 0: TFLite's rules */
        return nn_requantize_avg(acc, d->count, d->mult, d->shift, zp, lo, hi);
    a = acc / d->count;
    r = acc - a * d->count;
    if (r < 0) {
        a -= 1;
        r += d->count;
    }
    t = (uint32_t)r * (uint32_t)d->sm;
    tq = t / (uint32_t)d->count;
    q = (int64_t)a * d->mult + (int64_t)((uint32_t)r * (uint32_t)d->bm) + tq;
    big = nn_floor_shift(q, d->shift);
    q = nn_round_even(big, q - big * ((int64_t)1 << d->shift), d->shift, t == tq * (uint32_t)d->count);
    return nn_clamp_s8(q + zp, lo, hi);
}

/* Sums of 4 channels of a pixel run on words: flipped to unsigned (u = x + 128), even and
 * odd lanes masked apart are pairs of 16-bit lanes that 32-bit adds sum without carries
 * between them for up to 257 pixels: 7 instructions per 4 channel-pixels. */
#define NN_XP_SUM_RUN 256       /* 256 * 255 < 2^16 */

/* ---- average pooling: nn_hwc_avgpool_s8's contract and results; channel words where
 * nn_xp_avgpool_fast says so (c % 4 == 0, windows of at most NN_XP_SUM_RUN pixels; input
 * 4-byte aligned), else that kernel. */

int nn_xp_avgpool_fast(const nn_hwc_pool_cfg_t *cfg)
{
    return cfg->c % 4 == 0 && cfg->k_h * cfg->k_w <= NN_XP_SUM_RUN && cfg->dil_h == 1 && cfg->dil_w == 1;
}

void nn_xp_avgpool_s8(const nn_hwc_pool_cfg_t *cfg, const int8_t *in, const int32_t *mult,
                      const int32_t *shift, int8_t *out, int pix_begin, int pix_end)
{
    const int c = cfg->c, words = c / 4;
    const ptrdiff_t row = (ptrdiff_t)cfg->in_w * c;
    nn_xp_avg_t d;
    int p, y, x, i, r, q;

    if (!nn_xp_avgpool_fast(cfg)) {
        nn_hwc_avgpool_s8(cfg, in, mult, shift, out, pix_begin, pix_end);
        return;
    }
    if (pix_begin >= pix_end)
        return;
    d.count = -1;
    y = pix_begin / cfg->out_w;
    x = pix_begin - y * cfg->out_w;
    for (p = pix_begin; p < pix_end; ++p) {
        int8_t *o = out + (ptrdiff_t)p * c;
        const int top = y * cfg->stride_h - cfg->pad_top, left = x * cfg->stride_w - cfg->pad_left;
        int r0, r1, c0, c1, n_in, count;
        nn_valid_range(top, 1, cfg->k_h, cfg->in_h, &r0, &r1);
        nn_valid_range(left, 1, cfg->k_w, cfg->in_w, &c0, &c1);
        n_in = (r1 - r0) * (c1 - c0);
        count = cfg->count_include_pad ? cfg->k_h * cfg->k_w : n_in;
        if (count != d.count)       /* changes only at the borders */
            avg_setup(&d, count, mult[0], shift[0]);
        for (i = 0; i < words; ++i) {
            const int32_t base = -(cfg->in_zp + 128) * n_in;
            uint32_t even = 0, odd = 0;     /* lanes 0, 2 and 1, 3 as 16-bit halves */
            if (n_in) {
                const int8_t *first = in + (top + r0) * row + (ptrdiff_t)(left + c0) * c + 4 * i;
                for (r = 0; r < r1 - r0; ++r)
                    for (q = 0; q < c1 - c0; ++q) {
                        const uint32_t u = nn_xp_load(first + r * row + (ptrdiff_t)q * c) ^ NN_XP_FLIP_MASK;
                        even += u & 0x00ff00ffu;
                        odd += (u >> 8) & 0x00ff00ffu;
                    }
            }
            o[4 * i] = avg_requant(base + (int32_t)(even & 0xffff), &d, cfg->out_zp, cfg->act_min, cfg->act_max);
            o[4 * i + 1] = avg_requant(base + (int32_t)(odd & 0xffff), &d, cfg->out_zp, cfg->act_min, cfg->act_max);
            o[4 * i + 2] = avg_requant(base + (int32_t)(even >> 16), &d, cfg->out_zp, cfg->act_min, cfg->act_max);
            o[4 * i + 3] = avg_requant(base + (int32_t)(odd >> 16), &d, cfg->out_zp, cfg->act_min, cfg->act_max);
        }
        if (++x == cfg->out_w) {
            x = 0;
            ++y;
        }
    }
}

/* ---- global average pool: nn_hwc_global_avgpool_s8's contract and results; channel words
 * where nn_xp_global_avgpool_fast says so (c and the channel range in whole words, input
 * 4-byte aligned), else that kernel.
 *
 * The channel words' sums as avgpool's, leaving the 16-bit lanes every NN_XP_SUM_RUN
 * pixels; sum (x - zp) = sum u - (zp + 128) * hw; the requantization avg_requant's. */

int nn_xp_global_avgpool_fast(int c, int c_begin, int c_end)
{
    return c % 4 == 0 && c_begin % 4 == 0 && c_end % 4 == 0;
}

void nn_xp_global_avgpool_s8(int hw, int c, int32_t in_zp, int32_t out_zp, int32_t act_min,
                             int32_t act_max, const int8_t *in, const int32_t *mult,
                             const int32_t *shift, int8_t *out, int c_begin, int c_end)
{
    const int32_t base = -(in_zp + 128) * hw;    /* |.| < 2^31 by the hw bound */
    nn_xp_avg_t d;
    int ch, p0, p, j;
    if (!nn_xp_global_avgpool_fast(c, c_begin, c_end)) {
        nn_hwc_global_avgpool_s8(hw, c, in_zp, out_zp, act_min, act_max, in, mult, shift, out, c_begin, c_end);
        return;
    }
    avg_setup(&d, hw, mult[0], shift[0]);
    for (ch = c_begin; ch < c_end; ch += 4) {
        int32_t acc[4] = {base, base, base, base};
        for (p0 = 0; p0 < hw; p0 += NN_XP_SUM_RUN) {
            const int n = hw - p0 < NN_XP_SUM_RUN ? hw - p0 : NN_XP_SUM_RUN;
            const int8_t *px = in + (ptrdiff_t)p0 * c + ch;
            uint32_t even = 0, odd = 0;     /* lanes 0, 2 and 1, 3 as 16-bit halves */
            for (p = 0; p < n; ++p, px += c) {
                const uint32_t u = nn_xp_load(px) ^ NN_XP_FLIP_MASK;
                even += u & 0x00ff00ffu;
                odd += (u >> 8) & 0x00ff00ffu;
            }
            acc[0] += (int32_t)(even & 0xffff);
            acc[1] += (int32_t)(odd & 0xffff);
            acc[2] += (int32_t)(even >> 16);
            acc[3] += (int32_t)(odd >> 16);
        }
        for (j = 0; j < 4; ++j)
            out[ch + j] = avg_requant(acc[j], &d, out_zp, act_min, act_max);
    }
}
