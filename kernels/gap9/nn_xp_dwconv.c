/* Depthwise convolution (groups == in_c == out_c) on an HWC tile with Xpulp SIMD dot
 * products (nn_xpulp.h). Same results as nn_hwc_conv2d_s8 (nn_hwc_kernels.h).
 *
 * A depthwise output sums k_h x k_w taps of ONE channel, which HWC spreads in_c bytes apart,
 * and Xpulpv2 has no lane-wise multiply: so each core transposes the rows of one channel it
 * needs into a small ring of per-channel rows in its own scratch (k_h rows + a row of
 * padding), where a kernel row of an output is k_w contiguous bytes: one (unaligned) word
 * load and one pv.sdotsp.b per 4 taps against the channel's weight row packed in a word
 * (zeros past k_w). Positions outside the tile hold in_zp in the ring, so every output
 * reads all its taps and sum (x - zp) w = sum x w - zp sum(w), one constant per channel:
 * no border special cases. Each input row is transposed once per channel (the ring keeps
 * the rows still needed by the next output row).
 *
 * Work items are (channel, output row) pairs, item = c * out_h + y, so the cores share a
 * tile evenly whatever its channel count.
 */
#include <stddef.h>

#include "nn_hwc_kernels.h"
#include "nn_xpulp.h"

#define NN_XP_DW_MAX_WORDS 32       /* kernel words k_h * ceil(k_w / 4) kept on the stack */

int nn_xp_dwconv_fast(const nn_hwc_conv_cfg_t *cfg)
{
    return cfg->groups == cfg->in_c && cfg->in_c == cfg->out_c && cfg->dil_w == 1 &&
           cfg->k_h * ((cfg->k_w + 3) / 4) <= NN_XP_DW_MAX_WORDS;
}

/* one ring row: the out_w windows' columns, then the last word's spill */
static int ring_width(const nn_hwc_conv_cfg_t *cfg)
{
    return ((cfg->out_w - 1) * cfg->stride_w + 4 * ((cfg->k_w + 3) / 4) + 3) & ~3;
}

int nn_xp_dwconv_scratch(const nn_hwc_conv_cfg_t *cfg)
{
    return ((cfg->k_h - 1) * cfg->dil_h + 2) * ring_width(cfg);
}

/* dst[j] = src[j * stride], j < n: one channel of an HWC input row */
static inline void gather(int8_t *dst, const int8_t *src, int stride, int n)
{
#if defined(NN_XPULP_INSN)
    if (n >= 2) {
        /* hardware loop over byte pairs: p.lb rd, rs2(rs1!) (register post-increment) and
         * p.sb rs2, 1(rs1!); two loads ahead of their stores (no load-use stall) */
        const int pairs = n >> 1;
        __asm__ volatile(".option push\n\t.option norvc\n\t"
                         ".insn i 0x7b, 4, x0, %[k], 8\n\t"
                         ".insn r 0x0b, 7, 0, t0, %[s], %[st]\n\t"
                         ".insn r 0x0b, 7, 0, t1, %[s], %[st]\n\t"
                         ".insn s 0x2b, 0, t0, 1(%[d])\n\t"
                         ".insn s 0x2b, 0, t1, 1(%[d])\n\t"
                         ".option pop"
                         : [s] "+r"(src), [d] "+r"(dst)
                         : [k] "r"(pairs), [st] "r"(stride)
                         : "t0", "t1", "memory");
        n &= 1;
    }
    if (n)
        *dst = *src;
#else
    int j;
    for (j = 0; j < n; ++j)
        dst[j] = src[(ptrdiff_t)j * stride];
#endif
}

void nn_xp_dwconv_s8(const nn_hwc_conv_cfg_t *cfg, const int8_t *in, const int8_t *weight,
                     const int32_t *bias, const int32_t *mult, const int32_t *shift, int8_t *out,
                     int item_begin, int item_end, int8_t *scratch)
{
    const int C = cfg->in_c, kh = cfg->k_h, kw = cfg->k_w, nw = (kw + 3) / 4;
    const int sh = cfg->stride_h, sw = cfg->stride_w, dh = cfg->dil_h;
    const int out_h = cfg->out_h, out_w = cfg->out_w, rw = ring_width(cfg);
    const int span = (kh - 1) * dh + 1;             /* input rows one output row reads */
    const uint8_t zp = (uint8_t)cfg->in_zp;
    /* ring columns j <-> input column j - pad_left: the ones inside the tile */
    const int j0 = cfg->pad_left > 0 ? cfg->pad_left : 0;
    const int j1 = cfg->pad_left + cfg->in_w < rw ? cfg->pad_left + cfg->in_w : rw;
    int8_t *pad_row = scratch + (ptrdiff_t)span * rw;
    const uint32_t zp4 = zp * 0x01010101u;
    uint32_t wk[NN_XP_DW_MAX_WORDS];
    int c, i, k;

    if (item_begin >= item_end)
        return;
    for (i = 0; i < (span + 1) * rw / 4; ++i)      /* padding columns and the pad row */
        ((uint32_t *)(void *)scratch)[i] = zp4;
    for (c = item_begin / out_h; c * out_h < item_end; ++c) {
        const int y_begin = item_begin > c * out_h ? item_begin - c * out_h : 0;
        const int y_end = item_end < (c + 1) * out_h ? item_end - c * out_h : out_h;
        const int8_t *w = weight + (ptrdiff_t)c * kh * kw;
        const int32_t b = bias ? bias[c] : 0, m = mult[c], s = shift[c];
        const int32_t ozp = cfg->out_zp, lo = cfg->act_min, hi = cfg->act_max;
        int32_t wsum = 0;
        int loaded = -1;            /* the highest input row in the ring for this channel */
        int y;

        /* the channel's kernel rows as words, zeros past k_w */
        for (i = 0; i < kh; ++i)
            for (k = 0; k < nw; ++k) {
                uint32_t v = 0;
                int t;
                for (t = 0; t < 4 && 4 * k + t < kw; ++t) {
                    v |= (uint32_t)(uint8_t)w[i * kw + 4 * k + t] << 8 * t;
                    wsum += w[i * kw + 4 * k + t];
                }
                wk[i * nw + k] = v;
            }
        /* sum (x - zp) w = sum x w - zp sum(w): taken off the bias (no overflow: NN_MAX_ACC_TERMS) */
        wsum *= cfg->in_zp;

        for (y = y_begin; y < y_end; ++y) {
            const int first = y * sh - cfg->pad_top;
            const int8_t *rows[NN_XP_DW_MAX_WORDS];
            int8_t *o = out + (ptrdiff_t)y * out_w * C + c;
            int r, x;
            for (r = loaded + 1 > first ? loaded + 1 : first; r < first + span && r < cfg->in_h; ++r) {
                if (r < 0 || j1 <= j0)
                    continue;
                gather(scratch + (ptrdiff_t)(r % span) * rw + j0,
                       in + ((ptrdiff_t)r * cfg->in_w + (j0 - cfg->pad_left)) * C + c, C, j1 - j0);
                loaded = r;
            }
            for (i = 0; i < kh; ++i) {
                const int ri = first + i * dh;
                rows[i] = ri < 0 || ri >= cfg->in_h ? pad_row : scratch + (ptrdiff_t)(ri % span) * rw;
            }
            if (kh == 3 && nw == 1) {       /* the common 3x3: weights and rows in registers */
                const uint32_t w0 = wk[0], w1 = wk[1], w2 = wk[2];
                const int8_t *p0 = rows[0], *p1 = rows[1], *p2 = rows[2];
                for (x = 0; x < out_w; ++x) {
                    int32_t acc = nn_xp_sdotsp(0, nn_xp_load_u(p0), w0);
                    acc = nn_xp_sdotsp(acc, nn_xp_load_u(p1), w1);
                    acc = nn_xp_sdotsp(acc, nn_xp_load_u(p2), w2);
                    p0 += sw;
                    p1 += sw;
                    p2 += sw;
                    o[(ptrdiff_t)x * C] = nn_xp_requant(b, acc - wsum, m, s, ozp, lo, hi);
                }
            } else {
                for (x = 0; x < out_w; ++x) {
                    int32_t acc = 0;
                    for (i = 0; i < kh; ++i)
                        for (k = 0; k < nw; ++k)
                            acc = nn_xp_sdotsp(acc, nn_xp_load_u(rows[i] + x * sw + 4 * k), wk[i * nw + k]);
                    o[(ptrdiff_t)x * C] = nn_xp_requant(b, acc - wsum, m, s, ozp, lo, hi);
                }
            }
        }
    }
}
