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
 * A zero point -128 tile may be flipped to x ^ 0x80 once in place (nn_xp_conv2d_flip) rather
 * than on every load: 14 instructions per inner loop instead of 16.
 *
 * Direct path: groups == 1, in_c % 4 == 0 (word-aligned runs), dil_w == 1, in_zp 0 or -128.
 * Two pixels pair up when their valid kernel rows and columns agree (any two away from the
 * tile's border; border pixels with the next one on the same border); the others run 4
 * channels x 1 pixel; channels after the last block of 4 run 1 channel x 2 pixels. The other
 * dense convs take the im2col path (below), grouped and depthwise ones nn_hwc_conv2d_s8.
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

/* A pixel's receptive field inside the tile: the loop it needs (rows kernel rows of n words
 * from offset w0 of a channel's weights) and where its first valid tap and its outputs are.
 * Pixels with the same (rows, n, w0) run the same loop, so any two of them can pair. */
typedef struct {
    const int8_t *x;
    int8_t *o;
    ptrdiff_t w0;
    int rows, n;
} field_t;

/* the taps [lo, hi) of n at base + i * step inside [0, limit): nn_valid_range without its
 * divisions when step == 1 (dozens of cycles each on the cluster cores) */
static inline void valid_taps(int base, int step, int n, int limit, int *lo, int *hi)
{
    if (step != 1) {
        nn_valid_range(base, step, n, limit, lo, hi);
        return;
    }
    *lo = base >= 0 ? 0 : -base;
    *hi = limit - base < n ? limit - base : n;
    if (*hi < 0)
        *hi = 0;
    if (*lo > *hi)
        *lo = *hi;
}

/* output pixel p at (y, x) of the tile; inlined (a call per pixel measured 1% on ic_resnet8) */
static inline __attribute__((always_inline)) void field_of(const nn_hwc_conv_cfg_t *cfg, const int8_t *in, int8_t *out, int p, int y, int x, field_t *f)
{
    const int row0 = y * cfg->stride_h - cfg->pad_top, col0 = x * cfg->stride_w - cfg->pad_left;
    int ki0, ki1, kj0, kj1;
    valid_taps(row0, cfg->dil_h, cfg->k_h, cfg->in_h, &ki0, &ki1);
    valid_taps(col0, 1, cfg->k_w, cfg->in_w, &kj0, &kj1);
    f->n = (kj1 - kj0) * cfg->in_c / 4;
    f->rows = f->n ? ki1 - ki0 : 0;
    f->w0 = f->rows ? ((ptrdiff_t)ki0 * cfg->k_w + kj0) * cfg->in_c : 0;
    /* only form the pointer when some tap is inside the tile */
    f->x = f->rows ? in + ((ptrdiff_t)(row0 + ki0 * cfg->dil_h) * cfg->in_w + col0 + kj0) * cfg->in_c : in;
    f->o = out + (ptrdiff_t)p * cfg->out_c;
}

/* Channels [c_begin, c_end) of pixel a, and of pixel b (NULL: a alone; else the same loop) */
static void block(const nn_hwc_conv_cfg_t *cfg, const int8_t *weight, const int32_t *bias,
                  const int32_t *mult, const int32_t *shift, const field_t *a, const field_t *b,
                  int c_begin, int c_end, int flip)
{
    const ptrdiff_t wsize = (ptrdiff_t)cfg->k_h * cfg->k_w * cfg->in_c;
    const ptrdiff_t x_row = (ptrdiff_t)cfg->dil_h * cfg->in_w * cfg->in_c, w_row = (ptrdiff_t)cfg->k_w * cfg->in_c;
    const int32_t ozp = cfg->out_zp, lo = cfg->act_min, hi = cfg->act_max;
    const int rows = a->rows, n = a->n, quick = wsize < NN_XP_QUICK_BYTES;
    int8_t *oa = a->o, *ob = b ? b->o : NULL;
    int o, j;

    for (o = c_begin; o + 4 <= c_end; o += 4) {
        const int8_t *wo = weight + (ptrdiff_t)o * wsize + a->w0;
        if (b) {
            int32_t acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
            if (rows)
                nn_xp_dot_4x2(flip, acc, a->x, b->x, wo, wsize, n, rows, x_row, w_row);
            for (j = 0; j < 4; ++j) {
                const int32_t bj = bias ? bias[o + j] : 0, m = mult[o + j], s = shift[o + j];
                if (quick && nn_xp_requant_quick(bj, s)) {     /* the common case: no 64-bit checks */
                    const int32_t k = s - 32, h = ((int32_t)1 << (k - 1)) - 1;
                    oa[o + j] = nn_xp_requant_k(bj + acc[2 * j], m, k, h, ozp, lo, hi);
                    ob[o + j] = nn_xp_requant_k(bj + acc[2 * j + 1], m, k, h, ozp, lo, hi);
                } else {
                    oa[o + j] = nn_xp_requant(bj, acc[2 * j], m, s, ozp, lo, hi);
                    ob[o + j] = nn_xp_requant(bj, acc[2 * j + 1], m, s, ozp, lo, hi);
                }
            }
        } else {
            int32_t acc[4] = {0, 0, 0, 0};
            if (rows)
                nn_xp_dot_4x1(flip, acc, a->x, wo, wsize, n, rows, x_row, w_row);
            for (j = 0; j < 4; ++j) {       /* border pixels run alone: the same quick rule */
                const int32_t bj = bias ? bias[o + j] : 0, s = shift[o + j];
                if (quick && nn_xp_requant_quick(bj, s)) {
                    const int32_t k = s - 32, h = ((int32_t)1 << (k - 1)) - 1;
                    oa[o + j] = nn_xp_requant_k(bj + acc[j], mult[o + j], k, h, ozp, lo, hi);
                } else {
                    oa[o + j] = nn_xp_requant(bj, acc[j], mult[o + j], s, ozp, lo, hi);
                }
            }
        }
    }
    for (; o < c_end; ++o) {                            /* leftover channels: fewer than 4 */
        const int8_t *wo = weight + (ptrdiff_t)o * wsize + a->w0;
        const int32_t bo = bias ? bias[o] : 0;
        int32_t acc[2] = {0, 0};
        if (b && rows)
            nn_xp_dot_1x2(flip, acc, a->x, b->x, wo, n, rows, x_row, w_row);
        else
            acc[0] = nn_xp_dot_1x1(flip, 0, a->x, wo, n, rows, x_row, w_row);
        oa[o] = nn_xp_requant(bo, acc[0], mult[o], shift[o], ozp, lo, hi);
        if (b)
            ob[o] = nn_xp_requant(bo, acc[1], mult[o], shift[o], ozp, lo, hi);
    }
}

#define NN_XP_PENDING 4     /* unpaired fields waiting for a partner: border pixels, by kind */

/* Output pixels [pix_begin, pix_end), channels [c_begin, c_end). Each pixel pairs with the
 * first later one that runs the same loop (the next pixel away from the tile's border; a
 * border pixel with the next one on the same border, e.g. the next row's), so few run alone. */
static inline __attribute__((always_inline)) void direct_body(
    const nn_hwc_conv_cfg_t *cfg, const int8_t *in, const int8_t *weight, const int32_t *bias,
    const int32_t *mult, const int32_t *shift, int8_t *out, int pix_begin, int pix_end, int c_begin, int c_end,
    int flip, const uint16_t *order)
{
    field_t wait[NN_XP_PENDING], f;
    int n_wait = 0, p, i, y = pix_begin / cfg->out_w, x = pix_begin - y * cfg->out_w;

    for (p = pix_begin; p < pix_end; ++p) {
        if (order) {            /* the i-th pixel of a build-time order (y << 8 | x) */
            y = order[p] >> 8;
            x = order[p] & 255;
            field_of(cfg, in, out, y * cfg->out_w + x, y, x, &f);
        } else {
            field_of(cfg, in, out, p, y, x, &f);
            if (++x == cfg->out_w) {
                x = 0;
                ++y;
            }
        }
        for (i = 0; i < n_wait; ++i)
            if (wait[i].rows == f.rows && wait[i].n == f.n && wait[i].w0 == f.w0)
                break;
        if (i < n_wait) {
            block(cfg, weight, bias, mult, shift, &wait[i], &f, c_begin, c_end, flip);
            wait[i] = wait[--n_wait];
        } else {
            if (n_wait == NN_XP_PENDING) {      /* full: one of them runs alone */
                block(cfg, weight, bias, mult, shift, &wait[0], NULL, c_begin, c_end, flip);
                wait[0] = wait[--n_wait];
            }
            wait[n_wait++] = f;
        }
    }
    for (i = 0; i < n_wait; ++i)
        block(cfg, weight, bias, mult, shift, &wait[i], NULL, c_begin, c_end, flip);
}

/* the natural order and a build-time one: two copies of one body, so that the natural one's
 * frame stays as small as before the order came (the kernel check's cores have 1 KiB stacks) */
static __attribute__((noinline)) void direct(const nn_hwc_conv_cfg_t *cfg, const int8_t *in, const int8_t *weight,
                                             const int32_t *bias, const int32_t *mult, const int32_t *shift,
                                             int8_t *out, int pix_begin, int pix_end, int c_begin, int c_end,
                                             int flip)
{
    direct_body(cfg, in, weight, bias, mult, shift, out, pix_begin, pix_end, c_begin, c_end, flip, NULL);
}

/* chans: c_begin | c_end << 16 (12 arguments: 8 in registers, 4 on the stack, as direct's) */
static __attribute__((noinline)) void direct_order(const nn_hwc_conv_cfg_t *cfg, const int8_t *in,
                                                   const int8_t *weight, const int32_t *bias, const int32_t *mult,
                                                   const int32_t *shift, int8_t *out, int pix_begin, int pix_end,
                                                   int chans, int flip, const uint16_t *order)
{
    direct_body(cfg, in, weight, bias, mult, shift, out, pix_begin, pix_end, chans & 0xffff, chans >> 16, flip,
                order);
}

void nn_xp_conv2d_s8(const nn_hwc_conv_cfg_t *cfg, const int8_t *in, const int8_t *weight,
                     const int32_t *bias, const int32_t *mult, const int32_t *shift,
                     int8_t *out, int pix_begin, int pix_end)
{
    if (nn_xp_conv2d_fast(cfg))
        direct(cfg, in, weight, bias, mult, shift, out, pix_begin, pix_end, 0, cfg->out_c, cfg->in_zp == -128);
    else
        nn_hwc_conv2d_s8(cfg, in, weight, bias, mult, shift, out, pix_begin, pix_end);
}

/* ---- pointwise path: 1x1 convs whose every output pixel reads one input pixel of the tile
 * (no padding) with zero point 0 (ops.folds_zp folds any other into the bias at build time).
 * A GEMM: for each block of 4 output channels (its requantization constants set up once) the
 * pixels run in pairs through one hardware loop over the input channels, accumulators starting
 * at the bias, and each output is requantized by the short rule (nn_xp_rq_short_ok: a mulh, an
 * add, a shift, the clamp) when the block allows it, else by the exact 32-bit rule
 * (nn_xp_requant_k) in a copy of the same loop, else (a shift below 33, a bias beyond 2^30) on
 * the direct path, as are the channels after the last block of 4. Instruction fetch bounds
 * these layers on pulp-open, so the pair loop stays one straight run of code. */

int nn_xp_conv2d_pointwise(const nn_hwc_conv_cfg_t *cfg)
{
    return nn_xp_conv2d_fast(cfg) && cfg->in_zp == 0 && cfg->k_h == 1 && cfg->k_w == 1 && cfg->pad_top <= 0 &&
           cfg->pad_left <= 0 && (cfg->out_h - 1) * cfg->stride_h - cfg->pad_top < cfg->in_h &&
           (cfg->out_w - 1) * cfg->stride_w - cfg->pad_left < cfg->in_w;
}

/* pw_run's requantization: exact, nn_xp_requant_k's rule with its tie test (r = 2^(k-1) - 1,
 * zp added after the shift); else the short rule, ((a mult) >> 32 + rcz) >> k, clamped */
#define PW_RQ(a, m, r, k) (exact ? pw_rq_exact(a, m, r, k, zp, lo, hi) : pw_rq(a, m, r, k, lo, hi))
static inline int8_t pw_rq_exact(int32_t a, int32_t m, int32_t half_m1, int32_t k, int32_t zp, int32_t lo,
                                 int32_t hi)
{
    return nn_xp_requant_k(a, m, k, half_m1, zp, lo, hi);
}

static inline int8_t pw_rq(int32_t a, int32_t m, int32_t rcz, int32_t k, int32_t lo, int32_t hi)
{
    const int32_t r = ((int32_t)(((int64_t)a * m) >> 32) + rcz) >> k;
    return (int8_t)(lo == -128 && hi == 127 ? nn_xp_clip8(r) : nn_xp_clamp(r, lo, hi));
}

/* Output pixels [p, p_end) of a tile out_w pixels wide (input pixel (y, x) at in0 + y row +
 * x xs; outputs at o, os bytes apart), channels 0..3 of w (rows ws bytes apart, nw words each).
 * Pairs may span two rows, so one call runs the whole range: calls and their cold code cost
 * instruction-cache misses, the cluster's bottleneck here. The constants are copied to
 * locals: the byte stores could alias q, which would reload it after each. */
static inline __attribute__((always_inline)) void pw_run(const int8_t *in0, ptrdiff_t xs, ptrdiff_t row, int out_w,
                                                         int p, int p_end, int8_t *o, ptrdiff_t os, const int8_t *w,
                                                         ptrdiff_t ws, int nw, const int32_t *b,
                                                         const nn_xp_rq_short_t *q, int32_t lo, int32_t hi,
                                                         int exact)
{
    const int32_t b0 = b[0], b1 = b[1], b2 = b[2], b3 = b[3];
    const int32_t m0 = q[0].mult, m1 = q[1].mult, m2 = q[2].mult, m3 = q[3].mult;
    const int32_t r0 = q[0].rcz, r1 = q[1].rcz, r2 = q[2].rcz, r3 = q[3].rcz;
    const int32_t k0 = q[0].k, k1 = q[1].k, k2 = q[2].k, k3 = q[3].k, zp = q[0].zp;
    int y = p / out_w, x = p - y * out_w;
    const int8_t *rp = in0 + y * row, *xa = rp + x * xs, *xb;
    for (; p + 2 <= p_end; p += 2, o += 2 * os) {
        int32_t c00 = b0, c01 = b0, c10 = b1, c11 = b1, c20 = b2, c21 = b2, c30 = b3, c31 = b3;
        const int8_t *pa = xa, *pb, *w0 = w;
        if (++x == out_w) {
            x = 0;
            rp += row;
            xb = rp;
        } else {
            xb = xa + xs;
        }
        pb = xb;
#if defined(NN_XPULP_INSN)
        /* one hardware loop of 14 instructions per input word: 6 loads, 8 pv.sdotsp.b */
        __asm__ volatile(".option push\n\t.option norvc\n\t"
                         "add t4, %[p0], %[ws]\n\tadd t5, t4, %[ws]\n\tadd t6, t5, %[ws]\n\t"
                         NN_XP_LOOP("x0", "%[n]", 28)
                         NN_XP_4X2_BODY(NN_XP_SDOT_S, "")
                         ".option pop"
                         : [c00] "+r"(c00), [c01] "+r"(c01), [c10] "+r"(c10), [c11] "+r"(c11),
                           [c20] "+r"(c20), [c21] "+r"(c21), [c30] "+r"(c30), [c31] "+r"(c31),
                           [pa] "+r"(pa), [pb] "+r"(pb), [p0] "+r"(w0)
                         : [ws] "r"(ws), [n] "r"(nw)
                         /* no "memory": the loop only reads the input and the weights, which
                          * nothing here writes */
                         : "t0", "t1", "t2", "t3", "t4", "t5", "t6");
#else
        {       /* in registers, no call: the frames stay small */
            int i;
            for (i = 0; i < 4 * nw; i += 4) {
                const uint32_t a = nn_xp_load(pa + i), bb = nn_xp_load(pb + i);
                uint32_t v = nn_xp_load(w0 + i);
                c00 = nn_xp_sdotsp(c00, a, v);
                c01 = nn_xp_sdotsp(c01, bb, v);
                v = nn_xp_load(w0 + ws + i);
                c10 = nn_xp_sdotsp(c10, a, v);
                c11 = nn_xp_sdotsp(c11, bb, v);
                v = nn_xp_load(w0 + 2 * ws + i);
                c20 = nn_xp_sdotsp(c20, a, v);
                c21 = nn_xp_sdotsp(c21, bb, v);
                v = nn_xp_load(w0 + 3 * ws + i);
                c30 = nn_xp_sdotsp(c30, a, v);
                c31 = nn_xp_sdotsp(c31, bb, v);
            }
        }
#endif
        o[0] = PW_RQ(c00, m0, r0, k0);
        o[1] = PW_RQ(c10, m1, r1, k1);
        o[2] = PW_RQ(c20, m2, r2, k2);
        o[3] = PW_RQ(c30, m3, r3, k3);
        o[os] = PW_RQ(c01, m0, r0, k0);
        o[os + 1] = PW_RQ(c11, m1, r1, k1);
        o[os + 2] = PW_RQ(c21, m2, r2, k2);
        o[os + 3] = PW_RQ(c31, m3, r3, k3);
        if (++x == out_w) {
            x = 0;
            rp += row;
            xa = rp;
        } else {
            xa = xb + xs;
        }
    }
    if (p < p_end) {
        int32_t acc[4] = {b0, b1, b2, b3}, j;
        nn_xp_dot_4x1(0, acc, xa, w, ws, nw, 1, 0, 0);
        for (j = 0; j < 4; ++j)
            o[j] = PW_RQ(acc[j], q[j].mult, q[j].rcz, q[j].k);
    }
}

static __attribute__((noinline)) void pw_run_short(const int8_t *in0, ptrdiff_t xs, ptrdiff_t row, int out_w, int p,
                                                   int p_end, int8_t *o, ptrdiff_t os, const int8_t *w, ptrdiff_t ws,
                                                   int nw, const int32_t *b, const nn_xp_rq_short_t *q, int32_t lo,
                                                   int32_t hi)
{
    if (lo == -128 && hi == 127)    /* no activation: the clamp a constant (p.clip) */
        pw_run(in0, xs, row, out_w, p, p_end, o, os, w, ws, nw, b, q, -128, 127, 0);
    else
        pw_run(in0, xs, row, out_w, p, p_end, o, os, w, ws, nw, b, q, lo, hi, 0);
}

/* the blocks whose multipliers or accumulators could meet a tie, out of the short path's code */
static __attribute__((noinline)) void pw_run_exact(const int8_t *in0, ptrdiff_t xs, ptrdiff_t row, int out_w, int p,
                                                   int p_end, int8_t *o, ptrdiff_t os, const int8_t *w, ptrdiff_t ws,
                                                   int nw, const int32_t *b, const nn_xp_rq_short_t *q, int32_t lo,
                                                   int32_t hi)
{
    pw_run(in0, xs, row, out_w, p, p_end, o, os, w, ws, nw, b, q, lo, hi, 1);
}

/* Output pixels [pix_begin, pix_end) x the blocks of 4 channels from c_begin of a pointwise
 * tile, until a block whose requantization does not allow the short rule or fewer than 4
 * channels are left before c_end: returns where it stopped (c_end when done). The caller runs
 * such a block on the direct path, so that the two paths' frames never stack up (the
 * cores' stacks are 1 KiB). */
static __attribute__((noinline)) int pw_blocks(const nn_hwc_conv_cfg_t *cfg, const int8_t *in, const int8_t *weight,
                                               const int32_t *bias, const int32_t *mult, const int32_t *shift,
                                               int8_t *out, int pix_begin, int pix_end, int c_begin, int c_end)
{
    const int K = cfg->in_c, nw = K / 4, out_w = cfg->out_w, oc = cfg->out_c;
    const ptrdiff_t xs = (ptrdiff_t)cfg->stride_w * K, row = (ptrdiff_t)cfg->stride_h * cfg->in_w * K;
    const uint32_t span = (uint32_t)K << 14;        /* |sum x w| <= 2^14 K */
    const int8_t *in0 = in + ((ptrdiff_t)-cfg->pad_top * cfg->in_w - cfg->pad_left) * K;
    nn_xp_rq_short_t q[4];
    int32_t b[4];
    int o, j, ok;
    for (o = c_begin; o + 4 <= c_end; o += 4) {
        for (j = 0, ok = 1; j < 4; ++j) {
            b[j] = bias ? bias[o + j] : 0;
            ok &= nn_xp_rq_short_ok(&q[j], b[j], mult[o + j], shift[o + j], cfg->out_zp, span);
        }
        if (!ok) {      /* the exact rule in 32 bits (nn_xp_requant_quick), else the direct path */
            for (j = 0; j < 4; ++j) {
                if (!nn_xp_requant_quick(b[j], shift[o + j]) || K >= NN_XP_QUICK_BYTES)
                    return o;
                q[j].mult = mult[o + j];
                q[j].k = shift[o + j] - 32;
                q[j].rcz = ((int32_t)1 << (q[j].k - 1)) - 1;
                q[j].zp = cfg->out_zp;
            }
            pw_run_exact(in0, xs, row, out_w, pix_begin, pix_end, out + (ptrdiff_t)pix_begin * oc + o, oc,
                         weight + (ptrdiff_t)o * K, K, nw, b, q, cfg->act_min, cfg->act_max);
            continue;
        }
        pw_run_short(in0, xs, row, out_w, pix_begin, pix_end, out + (ptrdiff_t)pix_begin * oc + o, oc,
                     weight + (ptrdiff_t)o * K, K, nw, b, q, cfg->act_min, cfg->act_max);
    }
    return o < c_end ? o : c_end;
}

/* ---- im2col path: every other groups == 1 conv (in_c % 4 != 0, dilated columns, any input
 * zero point; the network's first conv on an image). Each pixel's receptive field is copied
 * to a contiguous run of K = k_h*k_w*in_c bytes as x ^ 0x80 = x + 128 (0..255), padding as
 * the zero point so flipped; the dot loops (flip form 2) give sum (x + 128) * w, from which the
 * kernel subtracts (zp + 128) * sum(w) per channel: sum (x - zp) * w over the whole field.
 * Weight rows are padded with zeros to KW = K rounded up to a word (the layer's .bin is
 * packed so), so every load is aligned and the buffers' last word needs no special case.
 * Two pixels (any two consecutive ones) share each weight load as on the direct path. */

/* Output channels whose weight sums live on the stack (the cores' stacks are 1 KiB): 32 as
 * int32, or 64 as int16 when a field is short enough for them (|sum(w)| <= 128 K < 2^15), so
 * that a field is copied once for up to 64 channels (ResNet's stem: K = 147, 64 channels). */
#define NN_XP_CHUNK 32
#define NN_XP_CHUNK16_BYTES 255

int nn_xp_conv2d_im2col(const nn_hwc_conv_cfg_t *cfg)
{
    return cfg->groups == 1 && !nn_xp_conv2d_fast(cfg);
}

/* pixel p's receptive field into buf (KW bytes) as x ^ 0x80 (= x + 128, what the loops' flip
 * form 2 reads), positions outside the tile (and the bytes after K, which meet zero weights)
 * as the zero point ^ 0x80. A kernel row inside the tile is one run of k_w * in_c bytes in
 * the HWC tile: copied a word at a time (misaligned words in hardware), the flip one xor per
 * word; rows that touch the padding go tap by tap. */
static void im2col(const nn_hwc_conv_cfg_t *cfg, const int8_t *in, int p, int8_t pad, int8_t *buf)
{
    const int y = p / cfg->out_w, x = p - y * cfg->out_w;
    const int row0 = y * cfg->stride_h - cfg->pad_top, col0 = x * cfg->stride_w - cfg->pad_left;
    const int run = cfg->k_w * cfg->in_c;
    const int cols_in = cfg->dil_w == 1 && col0 >= 0 && col0 + cfg->k_w <= cfg->in_w;
    int i, j, c, k = 0;
    for (i = 0; i < cfg->k_h; ++i) {
        const int r = row0 + i * cfg->dil_h;
        if (cols_in && r >= 0 && r < cfg->in_h) {
            const int8_t *src = in + ((ptrdiff_t)r * cfg->in_w + col0) * cfg->in_c;
            int8_t *dst = buf + k;
            for (j = 0; j + 4 <= run; j += 4)
                nn_xp_store_u(dst + j, nn_xp_load_u(src + j) ^ NN_XP_FLIP_MASK);
            for (; j < run; ++j)
                dst[j] = (int8_t)(src[j] ^ 0x80);
            k += run;
            continue;
        }
        for (j = 0; j < cfg->k_w; ++j) {
            const int q = col0 + j * cfg->dil_w;
            if (r < 0 || r >= cfg->in_h || q < 0 || q >= cfg->in_w) {
                for (c = 0; c < cfg->in_c; ++c)
                    buf[k++] = pad;
            } else {
                const int8_t *px = in + ((ptrdiff_t)r * cfg->in_w + q) * cfg->in_c;
                for (c = 0; c < cfg->in_c; ++c)
                    buf[k++] = (int8_t)(px[c] ^ 0x80);
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
    const int kw = (cfg->k_h * cfg->k_w * cfg->in_c + 3) & ~3, nw = kw / 4, quick = kw < NN_XP_QUICK_BYTES;
    const int8_t pad = (int8_t)(cfg->in_zp ^ 0x80);     /* the zero point, flipped */
    const uint32_t zu = (uint32_t)(cfg->in_zp + 128);
    const int32_t ozp = cfg->out_zp, lo = cfg->act_min, hi = cfg->act_max;
    int8_t *buf_a = scratch, *buf_b = buf_a + kw;
    union {
        int32_t w32[NN_XP_CHUNK];
        int16_t w16[2 * NN_XP_CHUNK];
    } wsum;
    const int short_k = kw <= NN_XP_CHUNK16_BYTES, chunk = short_k ? 2 * NN_XP_CHUNK : NN_XP_CHUNK;
    int c0, p, o, j, fast_rq;

    for (c0 = c_begin; c0 < c_end; c0 += chunk) {
        const int c1 = c0 + chunk < c_end ? c0 + chunk : c_end;
        /* sum(w) of each channel (K <= NN_MAX_ACC_TERMS): the 4-channel dot loop against a
         * field of ones in buf_b (free until the first pair's copy), 4 channels per word */
        for (j = 0; j < nw; ++j)
            nn_xp_store_u(buf_b + 4 * j, 0x01010101u);
        for (o = c0; o < c1; ++o) {
            const int8_t *w = weight + (ptrdiff_t)o * kw;
            const int m = o + 4 <= c1 ? 4 : 1;
            int32_t s[4] = {0, 0, 0, 0}, q;
            if (m == 4)
                nn_xp_dot_4x1(0, s, buf_b, w, kw, nw, 1, 0, 0);
            else
                s[0] = nn_xp_dot_1x1(0, 0, buf_b, w, nw, 1, 0, 0);
            for (q = 0; q < m; ++q) {
                if (short_k)
                    wsum.w16[o + q - c0] = (int16_t)s[q];
                else
                    wsum.w32[o + q - c0] = s[q];
            }
            o += q - 1;
        }
        /* the short requantization (pw_rq: mulh, add, shift, clamp) for the whole chunk when no
         * channel can meet a tie or overflow: |sum (x - zp) w| <= 255 * 128 * KW */
        for (o = c0, fast_rq = quick; o < c1 && fast_rq; ++o) {
            nn_xp_rq_short_t q;
            fast_rq = nn_xp_rq_short_ok(&q, bias ? bias[o] : 0, mult[o], shift[o], ozp, (uint32_t)kw * 255u * 128u);
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
                    nn_xp_dot_4x2(2, acc, buf_a, buf_b, w, kw, nw, 1, 0, 0);
                else if (nb == 4) {
                    int32_t a4[4] = {0, 0, 0, 0};
                    nn_xp_dot_4x1(2, a4, buf_a, w, kw, nw, 1, 0, 0);
                    for (j = 0; j < 4; ++j)
                        acc[2 * j] = a4[j];
                } else {
                    for (j = 0; j < nb; ++j) {
                        acc[2 * j] = nn_xp_dot_1x1(2, 0, buf_a, w + (ptrdiff_t)j * kw, nw, 1, 0, 0);
                        if (pair)
                            acc[2 * j + 1] = nn_xp_dot_1x1(2, 0, buf_b, w + (ptrdiff_t)j * kw, nw, 1, 0, 0);
                    }
                }
                for (j = 0; j < nb; ++j) {
                    const int32_t b = bias ? bias[o + j] : 0, m = mult[o + j], s = shift[o + j];
                    /* modular arithmetic: the centred sum fits in 32 bits, its parts may not */
                    const uint32_t corr = zu * (uint32_t)(short_k ? wsum.w16[o + j - c0] : wsum.w32[o + j - c0]);
                    const int32_t a0 = (int32_t)((uint32_t)acc[2 * j] - corr);
                    const int32_t a1 = (int32_t)((uint32_t)acc[2 * j + 1] - corr);
                    if (fast_rq) {
                        const int32_t k = s - 32;
                        const int32_t rcz = (int32_t)(((uint32_t)1 << (k - 1)) + ((uint32_t)ozp << k));
                        oa[o + j] = pw_rq((int32_t)((uint32_t)b + (uint32_t)a0), m, rcz, k, lo, hi);
                        if (pair)
                            oa[out_c + o + j] = pw_rq((int32_t)((uint32_t)b + (uint32_t)a1), m, rcz, k, lo, hi);
                    } else if (quick && nn_xp_requant_quick(b, s)) {
                        const int32_t k = s - 32, h = ((int32_t)1 << (k - 1)) - 1;
                        oa[o + j] = nn_xp_requant_k(b + a0, m, k, h, ozp, lo, hi);
                        if (pair)
                            oa[out_c + o + j] = nn_xp_requant_k(b + a1, m, k, h, ozp, lo, hi);
                    } else {
                        oa[o + j] = nn_xp_requant(b, a0, m, s, ozp, lo, hi);
                        if (pair)
                            oa[out_c + o + j] = nn_xp_requant(b, a1, m, s, ozp, lo, hi);
                    }
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

/* plain C, one pixel at a time: its channels c_begin.. sit at out[p*out_c + c_begin]; out of
 * line, so that its copy of the configuration is not on the stack under the SIMD paths (the
 * cores' stacks are 1 KiB) */
static __attribute__((noinline)) void chans_plain(const nn_hwc_conv_cfg_t *cfg, const int8_t *in,
                                                  const int8_t *weight, const int32_t *bias, const int32_t *mult,
                                                  const int32_t *shift, int8_t *out, int c_begin, int c_end)
{
    nn_hwc_conv_cfg_t sub = *cfg;
    const ptrdiff_t per_oc = (ptrdiff_t)cfg->k_h * cfg->k_w * (cfg->in_c / cfg->groups);
    const int n_pix = cfg->out_h * cfg->out_w;
    int p;
    sub.out_c = c_end - c_begin;
    for (p = 0; p < n_pix; ++p)
        nn_hwc_conv2d_s8(&sub, in, weight + c_begin * per_oc, bias ? bias + c_begin : NULL,
                         mult + c_begin, shift + c_begin,
                         out + (ptrdiff_t)p * (cfg->out_c - sub.out_c) + c_begin, p, p + 1);
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
        direct(cfg, in, weight, bias, mult, shift, out, 0, n_pix, c_begin, c_end, cfg->in_zp == -128);
    } else if (nn_xp_conv2d_im2col(cfg) && scratch) {
        im2col_conv(cfg, in, weight, bias, mult, shift, out, 0, n_pix, c_begin, c_end, scratch);
    } else {
        chans_plain(cfg, in, weight, bias, mult, shift, out, c_begin, c_end);
    }
}

/* ---- a tile shared by the cores ---- */

int nn_xp_conv2d_preflip(const nn_hwc_conv_cfg_t *cfg)
{
    return nn_xp_conv2d_fast(cfg) && cfg->in_zp == -128;
}

void nn_xp_conv2d_flip(int8_t *buf, int w_begin, int w_end)
{
    uint32_t *p = (uint32_t *)(void *)buf;
    int i = w_begin;
    for (; i + 4 <= w_end; i += 4) {    /* 4 loads before their uses: no load-use stalls */
        const uint32_t a = p[i], b = p[i + 1], c = p[i + 2], d = p[i + 3];
        p[i] = a ^ NN_XP_FLIP_MASK;
        p[i + 1] = b ^ NN_XP_FLIP_MASK;
        p[i + 2] = c ^ NN_XP_FLIP_MASK;
        p[i + 3] = d ^ NN_XP_FLIP_MASK;
    }
    for (; i < w_end; ++i)
        p[i] ^= NN_XP_FLIP_MASK;
}

/* The pixel x channel-group grid of n_pix pixels x n_blk blocks of 4 channels (channel groups
 * dividing n_cores) whose busiest core is done first by the estimate below: a tile of few
 * pixels and many channels keeps every core busy, as does one of many pixels. A core's
 * cycles: per pixel about 7 per word of its field (words) and 100 (the requantizations) per
 * block, and 250 to find its field and partner, which favours fewer channel groups when the
 * shares are close. Returns the number of channel groups. */
static int grid(int n_pix, int n_blk, int words, int n_cores)
{
    int cc, best = 1;
    long best_cost = -1;
    for (cc = 1; cc <= n_cores && cc <= n_blk; ++cc) {
        const long share = (long)((n_pix + n_cores / cc - 1) / (n_cores / cc)) *
                           ((long)((n_blk + cc - 1) / cc) * (7L * words + 100) + 250);
        if (n_cores % cc == 0 && (best_cost < 0 || share < best_cost)) {
            best = cc;
            best_cost = share;
        }
    }
    return best;
}

/* The busiest core of a grid with cc channel groups, counting what grid() does not: a pixel
 * without a partner runs the 4 x 1 loop, about 10 cycles per word for its 4 channels where
 * a pair takes 14 for 8 */
static long busiest(int n_pix, int n_blk, int words, int n_cores, int cc)
{
    const long px = (n_pix + n_cores / cc - 1) / (n_cores / cc), blk = (n_blk + cc - 1) / cc;
    return blk * (px / 2 * (14L * words + 200) + px % 2 * (10L * words + 100)) + 250 * px;
}

/* Core `core` of n_cores: pixels [pb, pe) x channels [cb, ce) of the grid, and channels
 * [tb, te) of the last pixel (n_pix - 1) when it is left out of the grid. A tile of an odd
 * number of pixels (a 3 x 3 tile, 9 pixels x 2 blocks on 8 cores: 3 pixels each on 6 cores,
 * a pair and a lone pixel) may run faster with its last pixel shared by all the cores, a
 * few channels each (1 x 1 loops, about 4 cycles per word and channel), and the others in
 * pairs (1 pair on each core). */
void nn_xp_conv2d_split(int n_pix, int out_c, int words, int core, int n_cores, int *pb, int *pe, int *cb,
                        int *ce, int *tb, int *te)
{
    const int n_blk = (out_c + 3) / 4, per_t = (out_c + n_cores - 1) / n_cores;
    int best = grid(n_pix, n_blk, words, n_cores), cp, per_p, per_c, g, tail = 0;
    if (n_pix % 2 && n_pix >= 3) {
        int cc = 1, c;      /* the grid of pairs, by the estimate that sees them */
        const long t = per_t / 4 * (10L * words + 100) + per_t % 4 * (4L * words + 25) + 250;
        for (c = 2; c <= n_cores && c <= n_blk; ++c)
            if (n_cores % c == 0 && busiest(n_pix - 1, n_blk, words, n_cores, c) <
                                        busiest(n_pix - 1, n_blk, words, n_cores, cc))
                cc = c;
        if (busiest(n_pix - 1, n_blk, words, n_cores, cc) + t < busiest(n_pix, n_blk, words, n_cores, best)) {
            best = cc;
            tail = 1;
            --n_pix;
        }
    }
    cp = n_cores / best;
    per_p = (n_pix + cp - 1) / cp;
    per_c = 4 * ((n_blk + best - 1) / best);
    g = core / best;
    *pb = g * per_p < n_pix ? g * per_p : n_pix;
    *pe = *pb + per_p < n_pix ? *pb + per_p : n_pix;
    g = core % best;
    *cb = g * per_c < out_c ? g * per_c : out_c;
    *ce = *cb + per_c < out_c ? *cb + per_c : out_c;
    *tb = tail && core * per_t < out_c ? core * per_t : out_c;
    *te = tail && *tb + per_t < out_c ? *tb + per_t : out_c;
}

/* Core `core`'s pixels [pb, pe) x channels [cb, ce) of a pointwise tile: the grid whose busiest
 * core is done first when a block of 4 channels costs about 300 cycles to set up (its
 * requantization checks, pw_run's frame) and a pixel pair about 20 per input word and 130
 * besides (requantizations, the fetches of the loop's code): a tile of few pixels splits its
 * channels rather than its pixels, so that each block's set-up serves many pairs. */
static __attribute__((noinline)) void pw_split(int n_pix, int out_c, int words, int core, int n_cores, int *pb, int *pe, int *cb, int *ce)
{
    const int n_blk = (out_c + 3) / 4;
    int cc, best = 1, cp, per_p, per_c, g;
    long best_cost = -1;
    for (cc = 1; cc <= n_cores && cc <= n_blk; ++cc) {
        const long px = (n_pix + n_cores / cc - 1) / (n_cores / cc);
        const long cost = (long)((n_blk + cc - 1) / cc) * (300 + (px + 1) / 2 * (20L * words + 130));
        if (n_cores % cc == 0 && (best_cost < 0 || cost < best_cost)) {
            best = cc;
            best_cost = cost;
        }
    }
    cp = n_cores / best;
    per_p = (n_pix + cp - 1) / cp;
    per_c = 4 * ((n_blk + best - 1) / best);
    g = core / best;
    *pb = g * per_p < n_pix ? g * per_p : n_pix;
    *pe = *pb + per_p < n_pix ? *pb + per_p : n_pix;
    g = core % best;
    *cb = g * per_c < out_c ? g * per_c : out_c;
    *ce = *cb + per_c < out_c ? *cb + per_c : out_c;
}

static inline __attribute__((always_inline)) void core_share(
    const nn_hwc_conv_cfg_t *cfg, const int8_t *in, const int8_t *weight, const int32_t *bias,
    const int32_t *mult, const int32_t *shift, int8_t *out, int core, int n_cores, int8_t *scratch,
    int flipped, const int16_t *split, const uint16_t *order)
{
    const int n_pix = cfg->out_h * cfg->out_w;
    int pb, pe, cb, ce, tb, te;
    if (nn_xp_conv2d_pointwise(cfg)) {
        pw_split(n_pix, cfg->out_c, cfg->in_c / 4, core, n_cores, &pb, &pe, &cb, &ce);
        while (pb < pe && cb < ce) {
            /* a block the short rule does not take, or the last 1..3 channels: direct path */
            cb = pw_blocks(cfg, in, weight, bias, mult, shift, out, pb, pe, cb, ce);
            te = cb + 4 < ce ? cb + 4 : ce;
            if (cb < te)
                direct(cfg, in, weight, bias, mult, shift, out, pb, pe, cb, te, 0);
            cb = te;
        }
    } else if (nn_xp_conv2d_fast(cfg)) {
        const int flip = cfg->in_zp == -128 ? (flipped ? 2 : 1) : 0;
        /* the layer's build-time table (conv_paths.xp_split) when it has one: the search is
         * some forty divisions, ~1.5k cycles of a 4 x 4 x 8 tile's 20k */
        if (split) {
            pb = split[0], pe = split[1], cb = split[2], ce = split[3], tb = split[4], te = split[5];
        } else {
            nn_xp_conv2d_split(n_pix, cfg->out_c, cfg->k_h * cfg->k_w * cfg->in_c / 4, core, n_cores, &pb,
                               &pe, &cb, &ce, &tb, &te);
        }
        if (order) {
            if (pb < pe && cb < ce)
                direct_order(cfg, in, weight, bias, mult, shift, out, pb, pe, cb | ce << 16, flip, order);
            if (tb < te)
                direct_order(cfg, in, weight, bias, mult, shift, out, n_pix - 1, n_pix, tb | te << 16, flip, order);
        } else {
            if (pb < pe && cb < ce)
                direct(cfg, in, weight, bias, mult, shift, out, pb, pe, cb, ce, flip);
            if (tb < te)
                direct(cfg, in, weight, bias, mult, shift, out, n_pix - 1, n_pix, tb, te, flip);
        }
    } else if (n_pix >= n_cores) {      /* im2col: each core copies the fields of its own pixels */
        pb = (n_pix + n_cores - 1) / n_cores * core;
        pe = pb + (n_pix + n_cores - 1) / n_cores;
        if (pb < n_pix)
            im2col_conv(cfg, in, weight, bias, mult, shift, out, pb, pe < n_pix ? pe : n_pix, 0, cfg->out_c,
                        scratch);
    } else {
        const int per = 4 * (((cfg->out_c + 3) / 4 + n_cores - 1) / n_cores);
        cb = per * core < cfg->out_c ? per * core : cfg->out_c;
        nn_xp_conv2d_chans_s8(cfg, in, weight, bias, mult, shift, out, cb,
                              cb + per < cfg->out_c ? cb + per : cfg->out_c, scratch);
    }
}

void nn_xp_conv2d_core_s8(const nn_hwc_conv_cfg_t *cfg, const int8_t *in, const int8_t *weight,
                          const int32_t *bias, const int32_t *mult, const int32_t *shift, int8_t *out,
                          int core, int n_cores, int8_t *scratch, int flipped)
{
    core_share(cfg, in, weight, bias, mult, shift, out, core, n_cores, scratch, flipped, NULL, NULL);
}

void nn_xp_conv2d_core_split_s8(const nn_hwc_conv_cfg_t *cfg, const int8_t *in, const int8_t *weight,
                                const int32_t *bias, const int32_t *mult, const int32_t *shift, int8_t *out,
                                int core, int n_cores, int8_t *scratch, int flipped, const int16_t *split,
                                const uint16_t *order)
{
    core_share(cfg, in, weight, bias, mult, shift, out, core, n_cores, scratch, flipped, split, order);
}
