/* Kernel check on GVSoC's pulp-open cluster (tests/test_gap9_kernels.py): every case of
 * cases.h runs on the 8 cluster cores three times, over the same L1 data:
 *   insn   nn_xp_*_s8 (im2col variant for the convs it takes) built with NN_XPULP_INSN (hardware loops, p.lw, pv.sdot[u]sp.b)
 *   plain  nn_xp_*_s8 built without it (symbols renamed *_plain): nn_xpulp.h's plain C
 *   ref    nn_hwc_conv2d_s8 / nn_linear_s8, the plain C kernels
 * Each core takes its share as the generated layers do (conv: nn_xp_conv2d_core_s8's share on
 * the direct path, after flipping a zero point -128 input in place, which is flipped back
 * after the call; an output pixel range otherwise; linear: an output feature range;
 * depthwise: a range of (channel, output row) items, ref taking pixel ranges there; lut: a
 * byte range, cut anywhere). The fabric controller prints one line per case:
 *   case I fast F mism INSN PLAIN distinct D macs N cycles INSN PLAIN REF
 * (mism: bytes where the insn / plain build differs from ref)
 * (cycles: the slowest core's, from the RI5CY performance counters) and exits 0 when no
 * case mismatches.
 */
#include <stddef.h>
#include <stdint.h>

#include "nn_hwc_kernels.h"
#include "nn_ops.h"

#define NC 8
#define L1_BASE 0x10000000u
#define L1_DATA (0x10000 - NC * 1024)       /* the cluster stacks sit above (crt0.S) */

int nn_xp_conv2d_fast_plain(const nn_hwc_conv_cfg_t *cfg);
void nn_xp_conv2d_s8_plain(const nn_hwc_conv_cfg_t *cfg, const int8_t *in, const int8_t *weight,
                           const int32_t *bias, const int32_t *mult, const int32_t *shift,
                           int8_t *out, int pix_begin, int pix_end);
int nn_xp_conv2d_im2col_plain(const nn_hwc_conv_cfg_t *cfg);
void nn_xp_conv2d_im2col_s8_plain(const nn_hwc_conv_cfg_t *cfg, const int8_t *in, const int8_t *weight,
                                  const int32_t *bias, const int32_t *mult, const int32_t *shift,
                                  int8_t *out, int pix_begin, int pix_end, int8_t *scratch);
void nn_xp_conv2d_core_s8_plain(const nn_hwc_conv_cfg_t *cfg, const int8_t *in, const int8_t *weight,
                                const int32_t *bias, const int32_t *mult, const int32_t *shift, int8_t *out,
                                int core, int n_cores, int8_t *scratch, int flipped);
void nn_xp_conv2d_flip_plain(int8_t *buf, int w_begin, int w_end);
int nn_xp_dwconv_fast_plain(const nn_hwc_conv_cfg_t *cfg);
void nn_xp_dwconv_s8_plain(const nn_hwc_conv_cfg_t *cfg, const int8_t *in, const int8_t *weight,
                           const int32_t *bias, const int32_t *mult, const int32_t *shift, int8_t *out,
                           int item_begin, int item_end, int8_t *scratch);
void nn_xp_lut_s8_plain(int n, const int8_t *in, const int8_t *table, int8_t *out);
void nn_xp_linear_s8_plain(const nn_linear_cfg_t *cfg, const int8_t *in, const int8_t *weight,
                           const int32_t *bias, const int32_t *mult, const int32_t *shift, int8_t *out);

typedef struct {
    int kind;                   /* 0: conv (cfg = nn_hwc_conv_cfg_t fields), 1: linear, 2: depthwise conv,
                                   3: one-table lut (w: the 256-entry table) */
    int cfg[19];
    const int8_t *in, *w;
    const int32_t *bias, *mult, *shift;     /* bias may be NULL */
    int in_bytes, w_bytes, n_out, out_bytes;    /* n_out: work items the cores share */
    int n_par;                                  /* output channels: bias/mult/shift entries */
} xp_case_t;

#include "cases.h"          /* N_CASES, static const xp_case_t cases[], static const long case_macs[] */

void *memset(void *d, int c, size_t n) { uint8_t *p = d; while (n--) *p++ = (uint8_t)c; return d; }
void *memcpy(void *d, const void *s, size_t n)
{
    uint8_t *p = d;
    const uint8_t *q = s;
    while (n--)
        *p++ = *q++;
    return d;
}

static void semihost(int op, const void *arg)
{
    register int a0 __asm__("a0") = op;
    register const void *a1 __asm__("a1") = arg;
    __asm__ volatile(".option push\n.option norvc\nslli x0, x0, 0x1f\nebreak\nsrai x0, x0, 7\n.option pop"
                     : "+r"(a0) : "r"(a1) : "memory");
}

static void print(const char *s) { semihost(4, s); }

static void print_num(long v)
{
    char b[24];
    int i = 22;
    unsigned long u = v < 0 ? -(unsigned long)v : (unsigned long)v;
    b[23] = 0;
    do {
        b[i--] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        b[i--] = '-';
    print(b + i + 1);
}

static uint32_t cycles(void)
{
    uint32_t v;
    __asm__ volatile("csrr %0, 0x780" : "=r"(v));
    return v;
}

static void counters_restart(void)
{
    __asm__ volatile("csrw 0xCC0, %0" :: "r"(1));       /* count cycles */
    __asm__ volatile("csrw 0x79F, zero");                /* clear */
    __asm__ volatile("csrw 0xCC1, %0" :: "r"(1));       /* run */
}

/* A barrier without atomics: each core writes only its own generation flag. */
static volatile uint32_t flags[NC];
static void barrier(int core, uint32_t gen)
{
    int j;
    flags[core] = gen;
    for (j = 0; j < NC; ++j)
        while (flags[j] < gen)
            ;
}

static volatile uint32_t core_cycles[3][NC];
static volatile int result[N_CASES][5];        /* fast, insn and plain mismatches, distinct values, done */
static volatile uint32_t case_cycles[N_CASES][3];
static volatile int finished;

static void range(int n, int core, int *b, int *e)
{
    const int per = (n + NC - 1) / NC;
    *b = core * per < n ? core * per : n;
    *e = *b + per < n ? *b + per : n;
}

/* one pixel's receptive field in whole words, for a conv on the im2col path; else 0 */
static int im2col_bytes(const xp_case_t *c)
{
    const int *k = c->cfg;
    const nn_hwc_conv_cfg_t g = {k[0], k[1], k[2], k[3], k[4], k[5], k[6], k[7], k[8], k[9],
                                 k[10], k[11], k[12], k[13], k[14], k[15], k[16], k[17], k[18]};
    return c->kind || !nn_xp_conv2d_im2col(&g) ? 0 : (k[6] * k[7] * k[2] + 3) & ~3;
}

static void run(int core, const xp_case_t *c, int which, int8_t *in, const int8_t *w,
                const int32_t *bias, const int32_t *mult, const int32_t *shift, int8_t *out,
                int8_t *scratch, uint32_t *gen)
{
    int b, e;
    range(c->kind == 2 && which == 2 ? c->cfg[3] * c->cfg[4] : c->n_out, core, &b, &e);
    counters_restart();
    if (c->kind == 3) {
        if (which < 2)
            (which == 0 ? nn_xp_lut_s8 : nn_xp_lut_s8_plain)(e - b, in + b, w, out + b);
        else
            nn_lut_s8(1, 1, e - b, in + b, w, 0, out + b);
    } else if (c->kind == 2 && which < 2) {
        const int *k = c->cfg;
        const nn_hwc_conv_cfg_t g = {k[0], k[1], k[2], k[3], k[4], k[5], k[6], k[7], k[8], k[9],
                                     k[10], k[11], k[12], k[13], k[14], k[15], k[16], k[17], k[18]};
        (which == 0 ? nn_xp_dwconv_s8 : nn_xp_dwconv_s8_plain)(&g, in, w, bias, mult, shift, out, b, e,
                                                               scratch + core * nn_xp_dwconv_scratch(&g));
    } else if (c->kind == 1) {
        const nn_linear_cfg_t l = {c->cfg[0], e - b, c->cfg[2], c->cfg[3], c->cfg[4], c->cfg[5]};
        const long k = c->cfg[0];
        if (b < e)
            (which == 0 ? nn_xp_linear_s8 : which == 1 ? nn_xp_linear_s8_plain : nn_linear_s8)(
                &l, in, w + b * k, bias ? bias + b : NULL, mult + b, shift + b, out + b);
    } else {
        const int *k = c->cfg;
        const nn_hwc_conv_cfg_t g = {k[0], k[1], k[2], k[3], k[4], k[5], k[6], k[7], k[8], k[9],
                                     k[10], k[11], k[12], k[13], k[14], k[15], k[16], k[17], k[18]};
        if (which < 2 && nn_xp_conv2d_fast(&g)) {
            const int flip = nn_xp_conv2d_preflip(&g);
            range(c->in_bytes / 4, core, &b, &e);
            if (flip) {
                (which == 0 ? nn_xp_conv2d_flip : nn_xp_conv2d_flip_plain)(in, b, e);
                barrier(core, ++*gen);
            }
            (which == 0 ? nn_xp_conv2d_core_s8 : nn_xp_conv2d_core_s8_plain)(
                &g, in, w, bias, mult, shift, out, core, NC, NULL, flip);
            core_cycles[which][core] = cycles();
            if (flip) {
                barrier(core, ++*gen);
                (which == 0 ? nn_xp_conv2d_flip : nn_xp_conv2d_flip_plain)(in, b, e);
            }
            return;
        }
        if (which < 2 && nn_xp_conv2d_im2col(&g))     /* padded weights, this core's own scratch */
            (which == 0 ? nn_xp_conv2d_im2col_s8 : nn_xp_conv2d_im2col_s8_plain)(
                &g, in, scratch + NC * 2 * im2col_bytes(c), bias, mult, shift, out, b, e,
                scratch + core * 2 * im2col_bytes(c));
        else
            (which == 0 ? nn_xp_conv2d_s8 : which == 1 ? nn_xp_conv2d_s8_plain : nn_hwc_conv2d_s8)(
                &g, in, w, bias, mult, shift, out, b, e);
    }
    core_cycles[which][core] = cycles();
}

static uint32_t slowest(int which)
{
    uint32_t m = 0;
    int j;
    for (j = 0; j < NC; ++j)
        m = core_cycles[which][j] > m ? core_cycles[which][j] : m;
    return m;
}

static int8_t *align4(int8_t *p) { return (int8_t *)(((uintptr_t)p + 3) & ~(uintptr_t)3); }

void cl_main(int core)
{
    uint32_t gen = 0;
    int i, which;
    for (i = 0; i < N_CASES; ++i) {
        const xp_case_t *c = &cases[i];
        int8_t *in = (int8_t *)L1_BASE, *w = align4(in + c->in_bytes);
        int32_t *bias = (int32_t *)(void *)align4(w + c->w_bytes), *mult = bias + c->n_par;
        int32_t *shift = mult + c->n_par;
        int8_t *out[3], *scratch;
        out[0] = (int8_t *)(shift + c->n_par);
        out[1] = align4(out[0] + c->out_bytes);
        out[2] = align4(out[1] + c->out_bytes);
        scratch = align4(out[2] + c->out_bytes);
        /* after the scratch: the weights with rows padded to im2col_bytes (im2col path) */
        const nn_hwc_conv_cfg_t gc = {c->cfg[0], c->cfg[1], c->cfg[2], c->cfg[3], c->cfg[4], c->cfg[5], c->cfg[6],
                                      c->cfg[7], c->cfg[8], c->cfg[9], c->cfg[10], c->cfg[11], c->cfg[12],
                                      c->cfg[13], c->cfg[14], c->cfg[15], c->cfg[16], c->cfg[17], c->cfg[18]};
        const int dw_bytes = c->kind == 2 ? NC * nn_xp_dwconv_scratch(&gc) : 0;
        if ((uintptr_t)(scratch + (NC * 2 + c->cfg[5]) * im2col_bytes(c) + dw_bytes) > L1_BASE + L1_DATA) {
            if (core == 0)
                result[i][3] = -1;              /* does not fit: reported, counts as a failure */
            continue;
        }
        if (core == 0) {
            memcpy(in, c->in, (size_t)c->in_bytes);
            memcpy(w, c->w, (size_t)c->w_bytes);
            memcpy(mult, c->mult, 4 * (size_t)c->n_par);
            memcpy(shift, c->shift, 4 * (size_t)c->n_par);
            if (c->bias)
                memcpy(bias, c->bias, 4 * (size_t)c->n_par);
            for (which = 0; which < 3; ++which)
                memset(out[which], 0x55 + which, (size_t)c->out_bytes);
            if (im2col_bytes(c)) {
                const int kb = c->cfg[6] * c->cfg[7] * c->cfg[2], kp = im2col_bytes(c);
                int8_t *wp = scratch + NC * 2 * kp;
                int o;
                memset(wp, 0, (size_t)(c->cfg[5] * kp));
                for (o = 0; o < c->cfg[5]; ++o)
                    memcpy(wp + o * kp, c->w + o * kb, (size_t)kb);
            }
        }
        for (which = 0; which < 3; ++which) {
            barrier(core, ++gen);
            run(core, c, which, in, w, c->bias ? bias : NULL, mult, shift, out[which], scratch, &gen);
        }
        barrier(core, ++gen);
        if (core == 0) {
            static int seen[256];
            int bad = 0, bad_plain = 0, distinct = 0, k;
            memset(seen, 0, sizeof seen);
            for (k = 0; k < c->out_bytes; ++k) {
                bad += out[0][k] != out[2][k];
                bad_plain += out[1][k] != out[2][k];
                distinct += !seen[(uint8_t)out[2][k]]++;
            }
            if (c->kind == 3) {
                result[i][0] = 4;
            } else if (c->kind == 2) {
                result[i][0] = nn_xp_dwconv_fast(&gc) && nn_xp_dwconv_fast_plain(&gc) ? 3 : 0;
            } else if (c->kind == 1) {
                const nn_linear_cfg_t l = {c->cfg[0], c->cfg[1], c->cfg[2], c->cfg[3], c->cfg[4], c->cfg[5]};
                result[i][0] = nn_xp_linear_fast(&l);
            } else {
                const int *q = c->cfg;
                const nn_hwc_conv_cfg_t g = {q[0], q[1], q[2], q[3], q[4], q[5], q[6], q[7], q[8], q[9],
                                             q[10], q[11], q[12], q[13], q[14], q[15], q[16], q[17], q[18]};
                /* 1: direct SIMD path, 2: im2col SIMD path, 3: depthwise, 4: lut, 0: plain C fallback */
                result[i][0] = nn_xp_conv2d_fast(&g) && nn_xp_conv2d_fast_plain(&g) ? 1
                               : nn_xp_conv2d_im2col(&g) && nn_xp_conv2d_im2col_plain(&g) ? 2 : 0;
            }
            result[i][1] = bad;
            result[i][4] = bad_plain;
            result[i][2] = distinct;
            for (which = 0; which < 3; ++which)
                case_cycles[i][which] = slowest(which);
            result[i][3] = 1;
        }
    }
    if (core == 0)
        finished = 1;
}

void fc_main(void)
{
    extern char _start[];
    int i, failed = 0;
    *(volatile uint32_t *)0x10201400 = 0xffffffffu;        /* cluster instruction cache on */
    for (i = 0; i < NC; ++i)
        *(volatile uint32_t *)(0x10200040 + 4 * i) = (uint32_t)(uintptr_t)_start;
    *(volatile uint32_t *)0x10200008 = 0xff;               /* boot the 8 cluster cores */
    while (!finished)
        ;
    for (i = 0; i < N_CASES; ++i) {
        print("case ");
        print_num(i);
        if (result[i][3] != 1) {
            print(" does not fit L1\n");
            failed = 1;
            continue;
        }
        print(" fast ");
        print_num(result[i][0]);
        print(" mism ");
        print_num(result[i][1]);
        print(" ");
        print_num(result[i][4]);
        print(" distinct ");
        print_num(result[i][2]);
        print(" macs ");
        print_num(case_macs[i]);
        print(" cycles ");
        print_num((long)case_cycles[i][0]);
        print(" ");
        print_num((long)case_cycles[i][1]);
        print(" ");
        print_num((long)case_cycles[i][2]);
        print("\n");
        failed |= result[i][1] != 0 || result[i][4] != 0;
    }
    semihost(0x18, (const void *)(uintptr_t)(failed ? 1 : 0x20026));   /* SYS_EXIT */
}
