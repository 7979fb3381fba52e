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
#include <stdint.h>

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

/* The per-channel requantization of a 3x3 row, nn_xp_requant's shift >= 33 rule with the
 * bias (less zp sum(w)) as the accumulator's start: k = shift - 32 in 1..30, rc = 2^(k-1) - 1. */
typedef struct {
    int32_t bias, mult, k, rc, zp, lo, hi;
} dw_rq_t;

/* n >= 1 outputs of a 3x3 row: out[x * C] from rows p0..p2 at x * sw, weights w0..w2 */
static inline void row3(const int8_t *p0, const int8_t *p1, const int8_t *p2, uint32_t w0, uint32_t w1,
                        uint32_t w2, int sw, int8_t *o, int C, int n, const dw_rq_t *q)
{
#if defined(NN_XPULP_INSN)
    /* one hardware loop iteration per output, 20 instructions: p.lw rd, sw(rs!) x3 (register
     * post-increment, unaligned), pv.sdotsp.b x3, the rounding (mulh/mul, ties to even), p.max /
     * p.min for the clamp, p.sb rd, C(o!) */
    const int32_t b = q->bias, m = q->mult, k = q->k, rc = q->rc, zp = q->zp, lo = q->lo, hi = q->hi;
    __asm__ volatile(".option push\n\t.option norvc\n\t"
                     ".insn i 0x7b, 4, x0, %[n], 40\n\t"
                     "mv a7, %[b]\n\t"
                     ".insn r 0x0b, 7, 0x10, t0, %[p0], %[sw]\n\t"
                     ".insn r 0x0b, 7, 0x10, t1, %[p1], %[sw]\n\t"
                     ".insn r 0x0b, 7, 0x10, t2, %[p2], %[sw]\n\t"
                     ".insn r 0x57, 1, 0x5c, a7, t0, %[w0]\n\t"
                     ".insn r 0x57, 1, 0x5c, a7, t1, %[w1]\n\t"
                     ".insn r 0x57, 1, 0x5c, a7, t2, %[w2]\n\t"
                     "mulh t0, a7, %[m]\n\t"
                     "mul t1, a7, %[m]\n\t"
                     "sra t2, t0, %[k]\n\t"
                     "andi t2, t2, 1\n\t"
                     "snez t1, t1\n\t"
                     "or t1, t1, t2\n\t"
                     "add t0, t0, %[rc]\n\t"
                     "add t0, t0, t1\n\t"
                     "sra t0, t0, %[k]\n\t"
                     "add t0, t0, %[zp]\n\t"
                     ".insn r 0x33, 6, 0x02, t0, t0, %[lo]\n\t"
                     ".insn r 0x33, 4, 0x02, t0, t0, %[hi]\n\t"
                     ".insn r 0x2b, 4, 0, %[C], %[o], t0\n\t"
                     ".option pop"
                     : [p0] "+r"(p0), [p1] "+r"(p1), [p2] "+r"(p2), [o] "+r"(o)
                     : [n] "r"(n), [sw] "r"(sw), [C] "r"(C), [w0] "r"(w0), [w1] "r"(w1), [w2] "r"(w2),
                       [b] "r"(b), [m] "r"(m), [k] "r"(k), [rc] "r"(rc), [zp] "r"(zp), [lo] "r"(lo),
                       [hi] "r"(hi)
                     : "t0", "t1", "t2", "a7", "memory");
#else
    int x;
    for (x = 0; x < n; ++x) {
        int32_t a = nn_xp_sdotsp(q->bias, nn_xp_load_u(p0 + x * sw), w0);
        int64_t v;
        int32_t vh, r;
        a = nn_xp_sdotsp(a, nn_xp_load_u(p1 + x * sw), w1);
        a = nn_xp_sdotsp(a, nn_xp_load_u(p2 + x * sw), w2);
        v = (int64_t)a * q->mult;
        vh = (int32_t)(v >> 32);
        r = ((vh + q->rc + ((uint32_t)v != 0 || ((vh >> q->k) & 1))) >> q->k) + q->zp;
        o[(ptrdiff_t)x * C] = (int8_t)(r < q->lo ? q->lo : (r > q->hi ? q->hi : r));
    }
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
        int slot = 0;               /* the ring slot of row `loaded` */
        int y, fast;
        int64_t b0;
        dw_rq_t q;

        /* the channel's kernel rows as words, zeros past k_w (3x3 straight: on small tiles this
         * runs about as often as the outputs); sum(w) by sdotsp against ones */
        if (kw == 3)
            for (i = 0; i < kh; ++i, w += 3)
                wk[i] = (uint32_t)(uint8_t)w[0] | (uint32_t)(uint8_t)w[1] << 8 | (uint32_t)(uint8_t)w[2] << 16;
        else
            for (i = 0; i < kh; ++i)
                for (k = 0; k < nw; ++k) {
                    uint32_t v = 0;
                    int t;
                    for (t = 0; t < 4 && 4 * k + t < kw; ++t)
                        v |= (uint32_t)(uint8_t)w[i * kw + 4 * k + t] << 8 * t;
                    wk[i * nw + k] = v;
                }
        for (i = 0; i < kh * nw; ++i)
            wsum = nn_xp_sdotsp(wsum, wk[i], 0x01010101u);
        /* sum (x - zp) w = sum x w - zp sum(w): taken off the bias (no overflow: NN_MAX_ACC_TERMS) */
        wsum *= cfg->in_zp;
        /* row3's rule holds when shift >= 33 and bias - wsum + sum x w stays in 32 bits
         * (|sum x w| <= 9 * 128 * 128) */
        b0 = (int64_t)b - wsum;
        fast = kh == 3 && nw == 1 && s >= 33 && b0 > INT32_MIN + 9 * 16384 && b0 < INT32_MAX - 9 * 16384;
        q.bias = (int32_t)b0;
        q.mult = m;
        q.k = s - 32;
        q.rc = fast ? ((int32_t)1 << (q.k - 1)) - 1 : 0;
        q.zp = ozp;
        q.lo = lo;
        q.hi = hi;

        for (y = y_begin; y < y_end; ++y) {
            const int first = y * sh - cfg->pad_top;
            const int8_t *rows[NN_XP_DW_MAX_WORDS];
            int8_t *o = out + (ptrdiff_t)y * out_w * C + c;
            int r, x;
            /* rows r go to slots r % span in order, so slots advance with wraparound (no
             * division: it costs tens of cycles on the cluster cores) */
            for (r = loaded + 1 > first ? loaded + 1 : first; r < first + span && r < cfg->in_h; ++r) {
                if (r < 0)
                    continue;
                if (loaded < 0 || r > loaded + span)
                    slot = r % span;        /* (re)start: once per channel or jump */
                else
                    for (k = loaded; k < r; ++k)
                        slot = slot + 1 == span ? 0 : slot + 1;
                if (j1 > j0)
                    gather(scratch + (ptrdiff_t)slot * rw + j0,
                           in + ((ptrdiff_t)r * cfg->in_w + (j0 - cfg->pad_left)) * C + c, C, j1 - j0);
                loaded = r;
            }
            for (i = 0; i < kh; ++i) {      /* slot of row ri: back from the last loaded one */
                const int ri = first + i * dh;
                int d = slot - (loaded - ri);
                if (d < 0)
                    d += span;
                rows[i] = ri < 0 || ri >= cfg->in_h ? pad_row : scratch + (ptrdiff_t)d * rw;
            }
            if (fast) {                     /* the common 3x3 */
                row3(rows[0], rows[1], rows[2], wk[0], wk[1], wk[2], sw, o, C, out_w, &q);
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
