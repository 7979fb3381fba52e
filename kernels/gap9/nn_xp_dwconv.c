/* Depthwise convolution (groups == in_c == out_c) on an HWC tile with Xpulp SIMD dot
 * products (nn_xpulp.h). Same results as nn_hwc_conv2d_s8 (nn_hwc_kernels.h).
 *
 * A depthwise output sums k_h x k_w taps of ONE channel, which HWC spreads in_c bytes apart,
 * and Xpulpv2 has no lane-wise multiply: so each core first copies the input rows of one
 * channel that its outputs read into a plane in its own scratch (one byte per pixel, rows of
 * rw bytes), where a kernel row of an output is k_w contiguous bytes: one (unaligned) word
 * load and one pv.sdotsp.b per 4 taps against the channel's kernel row packed in a word
 * (zeros past k_w). Positions outside the tile hold in_zp in the plane, so every output
 * reads all its taps and sum (x - zp) w = sum x w - zp sum(w), one constant per channel:
 * no border cases in the loops.
 *
 * Work items are (channel, output row) pairs, item = c * out_h + y, so the cores share a
 * tile evenly whatever its channel count. On Xpulp the copy and the 3x3 outputs of a channel
 * are each one pair of nested hardware loops (rows, columns), with the requantization in
 * the loop: a small plane (MobileNet's 3x3 x 336 channels) costs little more than its
 * outputs.
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

/* one plane row: the out_w windows' columns, then the last word's spill */
static int plane_width(const nn_hwc_conv_cfg_t *cfg)
{
    return ((cfg->out_w - 1) * cfg->stride_w + 4 * ((cfg->k_w + 3) / 4) + 3) & ~3;
}

/* input rows the outputs rows of the whole tile read */
static int plane_rows(const nn_hwc_conv_cfg_t *cfg, int out_rows)
{
    return (out_rows - 1) * cfg->stride_h + (cfg->k_h - 1) * cfg->dil_h + 1;
}

int nn_xp_dwconv_scratch(const nn_hwc_conv_cfg_t *cfg)
{
    return plane_rows(cfg, cfg->out_h) * plane_width(cfg);
}

/* dst[r * rw + j] = src[r * src_row + j * stride], r < rows, j < n: one channel of HWC rows */
static void gather(int8_t *dst, const int8_t *src, int stride, int n, int rows, ptrdiff_t src_row, int rw)
{
    int r = 0;
#if defined(NN_XPULP_INSN)
    if (n >= 2) {
        /* rows x byte pairs, nested hardware loops: p.lb rd, rs2(rs1!) (register
         * post-increment) and p.sb rs2, 1(rs1!), the loads ahead of their stores; an odd
         * last column in the outer loop */
        const int pairs = n >> 1;
        const int8_t *s = src;
        int8_t *d = dst;
        if (n & 1)
            __asm__ volatile(".option push\n\t.option norvc\n\t"
                             ".insn i 0x7b, 4, x1, %[rows], 22\n\t"
                             "mv t2, %[s]\n\t"
                             "mv t3, %[d]\n\t"
                             ".insn i 0x7b, 4, x0, %[k], 8\n\t"
                             ".insn r 0x0b, 7, 0, t0, t2, %[st]\n\t"
                             ".insn r 0x0b, 7, 0, t1, t2, %[st]\n\t"
                             ".insn s 0x2b, 0, t0, 1(t3)\n\t"
                             ".insn s 0x2b, 0, t1, 1(t3)\n\t"
                             ".insn r 0x0b, 7, 0, t0, t2, %[st]\n\t"
                             "add %[s], %[s], %[sr]\n\t"
                             ".insn s 0x2b, 0, t0, 1(t3)\n\t"
                             "add %[d], %[d], %[rw]\n\t"
                             ".option pop"
                             : [s] "+r"(s), [d] "+r"(d)
                             : [rows] "r"(rows), [k] "r"(pairs), [st] "r"(stride), [sr] "r"(src_row), [rw] "r"(rw)
                             : "t0", "t1", "t2", "t3", "memory");
        else
            __asm__ volatile(".option push\n\t.option norvc\n\t"
                             ".insn i 0x7b, 4, x1, %[rows], 18\n\t"
                             "mv t2, %[s]\n\t"
                             "mv t3, %[d]\n\t"
                             ".insn i 0x7b, 4, x0, %[k], 8\n\t"
                             ".insn r 0x0b, 7, 0, t0, t2, %[st]\n\t"
                             ".insn r 0x0b, 7, 0, t1, t2, %[st]\n\t"
                             ".insn s 0x2b, 0, t0, 1(t3)\n\t"
                             ".insn s 0x2b, 0, t1, 1(t3)\n\t"
                             "add %[s], %[s], %[sr]\n\t"
                             "add %[d], %[d], %[rw]\n\t"
                             ".option pop"
                             : [s] "+r"(s), [d] "+r"(d)
                             : [rows] "r"(rows), [k] "r"(pairs), [st] "r"(stride), [sr] "r"(src_row), [rw] "r"(rw)
                             : "t0", "t1", "t2", "t3", "memory");
        return;
    }
#endif
    for (; r < rows; ++r) {
        int j;
        for (j = 0; j < n; ++j)
            dst[(ptrdiff_t)r * rw + j] = src[r * src_row + (ptrdiff_t)j * stride];
    }
}

/* The per-channel requantization of the 3x3 loop, nn_xp_requant's shift >= 33 rule with the
 * bias (less zp sum(w)) as the accumulator's start: k = shift - 32 in 1..30, rc = 2^(k-1) - 1.
 * rcz and fast: the short form of the same rule (dw_rq_short), when dw_short_ok holds. */
typedef struct {
    int32_t bias, mult, k, rc, zp, lo, hi, rcz, fast;
} dw_rq_t;

static inline int8_t dw_rq(int32_t a, const dw_rq_t *q)
{
    const int64_t v = (int64_t)a * q->mult;
    const int32_t vh = (int32_t)(v >> 32);
    const int32_t r = ((vh + q->rc + ((uint32_t)v != 0 || ((vh >> q->k) & 1))) >> q->k) + q->zp;
    return (int8_t)(r < q->lo ? q->lo : (r > q->hi ? q->hi : r));
}

/* dw_rq without its tie test: it rounds v = a mult to nearest, ties to even, at bit 32 + k,
 * and a tie needs the low word of v to be 0, i.e. ctz(a) + ctz(mult) >= 32, which cannot
 * happen when every reachable a != 0 has |a| < 2^(32 - ctz(mult)) (a = 0 rounds to 0 either
 * way). Then the rule is (vh + 2^(k-1)) >> k, and + zp folds in as zp 2^k inside the shift
 * when that cannot overflow: a mulh, an add and a shift instead of ten instructions.
 * dw_short_ok says whether that holds for every |a| <= amax (here k in 1..23, |zp| <= 128,
 * amax < 2^31, all in 32-bit arithmetic) and sets q->rcz = 2^(k-1) + zp 2^k. */
static inline int dw_short_ok(dw_rq_t *q, uint32_t amax)
{
    const uint32_t m = q->mult < 0 ? 0u - (uint32_t)q->mult : (uint32_t)q->mult;
    if (q->k < 1 || q->k > 23 || q->zp < -128 || q->zp > 128 || amax >= 0x80000000u)
        return 0;
    if ((uint32_t)(((uint64_t)amax * (m & (0u - m))) >> 32) != 0)      /* amax 2^ctz(m) >= 2^32 */
        return 0;
    /* |vh| <= that + 1 and |rcz| <= 2^30 + 2^22: vh + rcz stays in 32 bits */
    if ((uint32_t)(((uint64_t)amax * m) >> 32) >= 0x3f000000u)
        return 0;
    q->rcz = (int32_t)(((uint32_t)1 << (q->k - 1)) + ((uint32_t)q->zp << q->k));
    return 1;
}

static inline int8_t dw_rq_short(int32_t a, const dw_rq_t *q)
{
    const int32_t r = ((int32_t)(((int64_t)a * q->mult) >> 32) + q->rcz) >> q->k;
    return (int8_t)(r < q->lo ? q->lo : (r > q->hi ? q->hi : r));
}

/* rows x n outputs of a 3x3 channel, out[(y * n + x) * C]: plane rows p0 + y * sh * rw (+ rw
 * dh, 2 rw dh), columns x * sw; weights w0..w2 */
static void plane3(const int8_t *p0, int rw, int dh, int sh, int sw, uint32_t w0, uint32_t w1,
                   uint32_t w2, int8_t *o, int C, int rows, int n, const dw_rq_t *q)
{
#if defined(NN_XPULP_INSN)
    /* per output 20 instructions, no branch: p.lw rd, sw(rs!) x3 (register post-increment,
     * unaligned), pv.sdotsp.b x3, the rounding (mulh/mul, ties to even), p.max / p.min
     * for the clamp, p.sb rd, C(o!); per row 3 pointer steps */
    const int32_t b = q->bias, m = q->mult, k = q->k, rc = q->rc, zp = q->zp, lo = q->lo, hi = q->hi;
    const int step = sh * rw - n * sw;
    const int8_t *p1 = p0 + dh * rw, *p2 = p1 + dh * rw;
    if (q->fast) {
        /* dw_rq_short: per output 13 instructions */
        const int32_t rcz = q->rcz;
        __asm__ volatile(".option push\n\t.option norvc\n\t"
                         ".insn i 0x7b, 4, x1, %[rows], 34\n\t"
                         ".insn i 0x7b, 4, x0, %[n], 26\n\t"
                         "mv a7, %[b]\n\t"
                         ".insn r 0x0b, 7, 0x10, t0, %[p0], %[sw]\n\t"
                         ".insn r 0x0b, 7, 0x10, t1, %[p1], %[sw]\n\t"
                         ".insn r 0x0b, 7, 0x10, t2, %[p2], %[sw]\n\t"
                         ".insn r 0x57, 1, 0x5c, a7, t0, %[w0]\n\t"
                         ".insn r 0x57, 1, 0x5c, a7, t1, %[w1]\n\t"
                         ".insn r 0x57, 1, 0x5c, a7, t2, %[w2]\n\t"
                         "mulh t0, a7, %[m]\n\t"
                         "add t0, t0, %[rcz]\n\t"
                         "sra t0, t0, %[k]\n\t"
                         ".insn r 0x33, 6, 0x02, t0, t0, %[lo]\n\t"
                         ".insn r 0x33, 4, 0x02, t0, t0, %[hi]\n\t"
                         ".insn r 0x2b, 4, 0, %[C], %[o], t0\n\t"
                         "add %[p0], %[p0], %[step]\n\t"
                         "add %[p1], %[p1], %[step]\n\t"
                         "add %[p2], %[p2], %[step]\n\t"
                         ".option pop"
                         : [p0] "+r"(p0), [p1] "+r"(p1), [p2] "+r"(p2), [o] "+r"(o)
                         : [rows] "r"(rows), [n] "r"(n), [sw] "r"(sw), [C] "r"(C), [step] "r"(step),
                           [w0] "r"(w0), [w1] "r"(w1), [w2] "r"(w2), [b] "r"(b), [m] "r"(m), [k] "r"(k),
                           [rcz] "r"(rcz), [lo] "r"(lo), [hi] "r"(hi)
                         : "t0", "t1", "t2", "a7", "memory");
        return;
    }
    __asm__ volatile(".option push\n\t.option norvc\n\t"
                     ".insn i 0x7b, 4, x1, %[rows], 48\n\t"
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
                     "add %[p0], %[p0], %[step]\n\t"
                     "add %[p1], %[p1], %[step]\n\t"
                     "add %[p2], %[p2], %[step]\n\t"
                     ".option pop"
                     : [p0] "+r"(p0), [p1] "+r"(p1), [p2] "+r"(p2), [o] "+r"(o)
                     : [rows] "r"(rows), [n] "r"(n), [sw] "r"(sw), [C] "r"(C), [step] "r"(step),
                       [w0] "r"(w0), [w1] "r"(w1), [w2] "r"(w2), [b] "r"(b), [m] "r"(m), [k] "r"(k),
                       [rc] "r"(rc), [zp] "r"(zp), [lo] "r"(lo), [hi] "r"(hi)
                     : "t0", "t1", "t2", "a7", "memory");
#else
    int y, x;
    for (y = 0; y < rows; ++y)
        for (x = 0; x < n; ++x) {
            const int8_t *p = p0 + (ptrdiff_t)y * sh * rw + x * sw;
            int32_t a = nn_xp_sdotsp(q->bias, nn_xp_load_u(p), w0);
            a = nn_xp_sdotsp(a, nn_xp_load_u(p + dh * rw), w1);
            a = nn_xp_sdotsp(a, nn_xp_load_u(p + 2 * dh * rw), w2);
            o[(ptrdiff_t)(y * n + x) * C] = q->fast ? dw_rq_short(a, q) : dw_rq(a, q);
        }
#endif
}

/* n outputs of one output row of a k_w 5..8 channel (two words per kernel row), out[x * C]:
 * kernel row i at p + i * dh * rw, columns x * sw; weights wk[2 i], wk[2 i + 1] */
static void row2w(const int8_t *p, int rw, int dh, int kh, int sw, const uint32_t *wk, int8_t *o, int C,
                  int n, const dw_rq_t *q)
{
#if defined(NN_XPULP_INSN)
    /* outer hardware loop over the outputs (25 instructions), inner over the kernel rows
     * (7: two unaligned words, two weight words by p.lw rd, 4(rs!), two pv.sdotsp.b) */
    const int32_t b = q->bias, m = q->mult, k = q->k, rc = q->rc, zp = q->zp, lo = q->lo, hi = q->hi;
    const int rstep = dh * rw;
    __asm__ volatile(".option push\n\t.option norvc\n\t"
                     ".insn i 0x7b, 4, x1, %[n], 50\n\t"
                     "mv a7, %[b]\n\t"
                     "mv t3, %[p]\n\t"
                     "mv t4, %[wk]\n\t"
                     ".insn i 0x7b, 4, x0, %[kh], 14\n\t"
                     "lw t0, 0(t3)\n\t"
                     "lw t1, 4(t3)\n\t"
                     ".insn i 0x0b, 2, t5, t4, 4\n\t"
                     ".insn i 0x0b, 2, t6, t4, 4\n\t"
                     "add t3, t3, %[rs]\n\t"
                     ".insn r 0x57, 1, 0x5c, a7, t0, t5\n\t"
                     ".insn r 0x57, 1, 0x5c, a7, t1, t6\n\t"
                     "add %[p], %[p], %[sw]\n\t"
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
                     : [p] "+r"(p), [o] "+r"(o)
                     : [n] "r"(n), [kh] "r"(kh), [rs] "r"(rstep), [wk] "r"(wk), [sw] "r"(sw), [C] "r"(C),
                       [b] "r"(b), [m] "r"(m), [k] "r"(k), [rc] "r"(rc), [zp] "r"(zp), [lo] "r"(lo), [hi] "r"(hi)
                     : "t0", "t1", "t2", "t3", "t4", "t5", "t6", "a7", "memory");
#else
    int x, i;
    for (x = 0; x < n; ++x) {
        const int8_t *r = p + x * sw;
        int32_t a = q->bias;
        for (i = 0; i < kh; ++i, r += dh * rw) {
            a = nn_xp_sdotsp(a, nn_xp_load_u(r), wk[2 * i]);
            a = nn_xp_sdotsp(a, nn_xp_load_u(r + 4), wk[2 * i + 1]);
        }
        o[(ptrdiff_t)x * C] = dw_rq(a, q);
    }
#endif
}

/* v in the words of a plane (rows x rwq words) that the copy of rows [t0, t1) x words
 * [l, r) does not overwrite: the rows outside, the words left of l and from r on (the copy
 * overwrites the parts of those border words inside it: it runs after) */
static __attribute__((noinline)) void fill_border(uint32_t *p, int rows, int rwq, int t0, int t1, int l, int r, uint32_t v)
{
    int t, j;
    for (t = 0; t < rows; ++t, p += rwq) {
        if (t < t0 || t >= t1) {
            for (j = 0; j < rwq; ++j)
                p[j] = v;
            continue;
        }
        for (j = 0; j < l; ++j)
            p[j] = v;
        for (j = r; j < rwq; ++j)
            p[j] = v;
    }
}

/* kernel rows of k_w != 3 as words, zeros past k_w; out of line, as is channel_other, so that
 * the 3x3 channel loop stays small in the cores' 512-byte instruction caches */
static __attribute__((noinline)) void pack_rows(const int8_t *w, int kh, int kw, int nw, uint32_t *wk)
{
    int i, k, t;
    for (i = 0; i < kh; ++i)
        for (k = 0; k < nw; ++k) {
            uint32_t v = 0;
            for (t = 0; t < 4 && 4 * k + t < kw; ++t)
                v |= (uint32_t)(uint8_t)w[i * kw + 4 * k + t] << 8 * t;
            wk[i * nw + k] = v;
        }
}

/* the outputs of one channel's plane but the 3x3 fast case: k_w 5..8 (row2w), other kernels,
 * and (q NULL) shift <= 32 or a bias at the int32 extremes through the general rule */
static __attribute__((noinline)) void channel_other(const nn_hwc_conv_cfg_t *cfg, const int8_t *scratch, int rw,
                                                    const uint32_t *wk, int8_t *o, int rows, const dw_rq_t *q,
                                                    int32_t b, int32_t wsum, int32_t mult, int32_t shift)
{
    const int C = cfg->in_c, kh = cfg->k_h, nw = (cfg->k_w + 3) / 4, out_w = cfg->out_w;
    const int sh = cfg->stride_h, sw = cfg->stride_w, dh = cfg->dil_h;
    int y, x, i, k;
    if (q && nw == 2) {
        for (y = 0; y < rows; ++y)
            row2w(scratch + (ptrdiff_t)y * sh * rw, rw, dh, kh, sw, wk, o + (ptrdiff_t)y * out_w * C, C, out_w, q);
        return;
    }
    for (y = 0; y < rows; ++y)
        for (x = 0; x < out_w; ++x) {
            const int8_t *p = scratch + (ptrdiff_t)y * sh * rw + x * sw;
            int32_t a = q ? q->bias : 0;
            for (i = 0; i < kh; ++i, p += dh * rw)
                for (k = 0; k < nw; ++k)
                    a = nn_xp_sdotsp(a, nn_xp_load_u(p + 4 * k), wk[i * nw + k]);
            o[(ptrdiff_t)(y * out_w + x) * C] =
                q ? dw_rq(a, q) : nn_xp_requant(b, a - wsum, mult, shift, cfg->out_zp, cfg->act_min, cfg->act_max);
        }
}

void nn_xp_dwconv_s8(const nn_hwc_conv_cfg_t *cfg, const int8_t *in, const int8_t *weight,
                     const int32_t *bias, const int32_t *mult, const int32_t *shift, int8_t *out,
                     int item_begin, int item_end, int8_t *scratch)
{
    const int C = cfg->in_c, kh = cfg->k_h, kw = cfg->k_w, nw = (kw + 3) / 4;
    const int sh = cfg->stride_h, sw = cfg->stride_w, dh = cfg->dil_h;
    const int out_h = cfg->out_h, out_w = cfg->out_w, rw = plane_width(cfg);
    const ptrdiff_t in_row = (ptrdiff_t)cfg->in_w * C;
    /* plane columns j <-> input column j - pad_left: the ones inside the tile */
    const int j0 = cfg->pad_left > 0 ? cfg->pad_left : 0;
    const int j1 = cfg->pad_left + cfg->in_w < rw ? cfg->pad_left + cfg->in_w : rw;
    const uint32_t zp4 = (uint8_t)cfg->in_zp * 0x01010101u;
    uint32_t wk[NN_XP_DW_MAX_WORDS];
    /* |sum x w| <= span; the bias (less zp sum(w)) within lim of 0 keeps every sum in 32 bits */
    const int32_t span = kh * nw * 65536, lim = INT32_MAX - span;
    int c, i, filled_y0 = -1, filled_y1 = -1;

    for (c = item_begin / out_h; c * out_h < item_end; ++c) {
        const int y0 = item_begin > c * out_h ? item_begin - c * out_h : 0;
        const int y1 = item_end < (c + 1) * out_h ? item_end - c * out_h : out_h;
        /* plane row t <-> input row first + t; the valid ones [t0, t1) */
        const int first = y0 * sh - cfg->pad_top, rows = plane_rows(cfg, y1 - y0);
        const int t0 = first < 0 ? -first : 0;
        const int t1 = cfg->in_h - first < rows ? cfg->in_h - first : rows;
        const int8_t *w = weight + (ptrdiff_t)c * kh * kw;
        const int32_t b = bias ? bias[c] : 0;
        int8_t *o = out + (ptrdiff_t)y0 * out_w * C + c;
        int32_t wsum = 0;
        int32_t b0;
        dw_rq_t q;
        int quick;

        /* in_zp wherever the copy does not write: once per row range (every channel but a
         * core's first and last shares it) */
        if (y0 != filled_y0 || y1 != filled_y1) {
            if (t1 > t0 && j1 > j0)
                fill_border((uint32_t *)(void *)scratch, rows, rw / 4, t0, t1, (j0 + 3) / 4, j1 / 4, zp4);
            else
                fill_border((uint32_t *)(void *)scratch, rows, rw / 4, 0, 0, 0, 0, zp4);
            filled_y0 = y0;
            filled_y1 = y1;
        }
        if (t1 > t0 && j1 > j0)
            gather(scratch + (ptrdiff_t)t0 * rw + j0,
                   in + (first + t0) * in_row + (ptrdiff_t)(j0 - cfg->pad_left) * C + c, C, j1 - j0, t1 - t0,
                   in_row, rw);

        /* the channel's kernel rows as words, zeros past k_w; sum(w) by sdotsp against ones */
        if (kw == 3)
            for (i = 0; i < kh; ++i, w += 3)
                wk[i] = (uint32_t)(uint8_t)w[0] | (uint32_t)(uint8_t)w[1] << 8 | (uint32_t)(uint8_t)w[2] << 16;
        else
            pack_rows(w, kh, kw, nw, wk);
        for (i = 0; i < kh * nw; ++i)
            wsum = nn_xp_sdotsp(wsum, wk[i], 0x01010101u);
        /* sum (x - zp) w = sum x w - zp sum(w) (no overflow: NN_MAX_ACC_TERMS) */
        wsum *= cfg->in_zp;

        /* dw_rq's rule holds when shift >= 33 and bias - zp sum(w) + sum x w stays in 32 bits
         * (|sum x w| <= k_h * 4 nw * 128 * 128) */
        quick = !__builtin_sub_overflow(b, wsum, &b0) && b0 >= -lim && b0 < lim && shift[c] >= 33;
        q.bias = b0;
        q.mult = mult[c];
        q.k = shift[c] - 32;
        q.zp = cfg->out_zp;
        q.lo = cfg->act_min;
        q.hi = cfg->act_max;
        q.fast = 0;
        if (quick)
            q.rc = ((int32_t)1 << (q.k - 1)) - 1;
        if (quick && kh == 3 && nw == 1) {
            /* the check costs about what it saves on 4 outputs */
            q.fast = (y1 - y0) * out_w >= 8 &&
                     dw_short_ok(&q, (uint32_t)(b0 < 0 ? -b0 : b0) + span);
            plane3(scratch, rw, dh, sh, sw, wk[0], wk[1], wk[2], o, C, y1 - y0, out_w, &q);
        } else {
            channel_other(cfg, scratch, rw, wk, o, y1 - y0, quick ? &q : NULL, b, wsum, mult[c], shift[c]);
        }
    }
}
