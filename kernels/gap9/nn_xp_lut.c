/* Lookup-table ops with one 256-entry table (sigmoid, hardswish, ... after quantization):
 * out[i] = table[in[i] + 128], nn_lut_s8's results (kernels/common/nn_lut.c) for its
 * one-table case. Per-channel tables stay on nn_lut_s8. The requantization of int8 data
 * (requant, concat) is such a table too (below).
 *
 * The plain loop costs a load, an add, a table load, a store and the loop's branch per
 * byte. On Xpulp a hardware loop takes 4 bytes per (possibly unaligned) word load, pv.extract.b
 * gives each signed lane in one instruction and p.lbu rd, rs2(rs1) indexes the table with
 * it: 13 instructions per 4 bytes, no branch.
 */
#include <stddef.h>
#include <stdint.h>

#include "nn_hwc_kernels.h"
#include "nn_xpulp.h"

void nn_xp_lut_s8(int n, const int8_t *in, const int8_t *table, int8_t *out)
{
    const int8_t *t = table + 128;
    int i = 0;
#if defined(NN_XPULP_INSN)
    const int words = n >> 2;
    if (words > 0) {
        /* pv.extract.b rd, rs1, L: funct7 0x3c | (L & 1), rs2 = x(L >> 1); p.lbu rd, rs2(rs1):
         * .insn r 0x03, 7, 0x20; p.sb rs2, 1(rs1!): .insn s 0x2b, 0; table loads ahead of
         * their stores (no load-use stall but the last) */
        __asm__ volatile(".option push\n\t.option norvc\n\t"
                         ".insn i 0x7b, 4, x0, %[k], 26\n\t"
                         ".insn i 0x0b, 2, t0, %[p], 4\n\t"
                         ".insn r 0x57, 7, 0x3c, t1, t0, x0\n\t"
                         ".insn r 0x57, 7, 0x3d, t2, t0, x0\n\t"
                         ".insn r 0x57, 7, 0x3c, t3, t0, x1\n\t"
                         ".insn r 0x57, 7, 0x3d, t4, t0, x1\n\t"
                         ".insn r 0x03, 7, 0x20, t1, %[t], t1\n\t"
                         ".insn r 0x03, 7, 0x20, t2, %[t], t2\n\t"
                         ".insn s 0x2b, 0, t1, 1(%[o])\n\t"
                         ".insn r 0x03, 7, 0x20, t3, %[t], t3\n\t"
                         ".insn s 0x2b, 0, t2, 1(%[o])\n\t"
                         ".insn r 0x03, 7, 0x20, t4, %[t], t4\n\t"
                         ".insn s 0x2b, 0, t3, 1(%[o])\n\t"
                         ".insn s 0x2b, 0, t4, 1(%[o])\n\t"
                         ".option pop"
                         : [p] "+r"(in), [o] "+r"(out)
                         : [k] "r"(words), [t] "r"(t)
                         : "t0", "t1", "t2", "t3", "t4", "memory");
        n &= 3;
    }
#else
    /* four bytes per step, as the Xpulp loop does */
    for (; i + 4 <= n; i += 4) {
        const uint32_t v = nn_xp_load_u(in + i);
        out[i] = t[(int8_t)(uint8_t)v];
        out[i + 1] = t[(int8_t)(uint8_t)(v >> 8)];
        out[i + 2] = t[(int8_t)(uint8_t)(v >> 16)];
        out[i + 3] = t[(int8_t)(uint8_t)(v >> 24)];
    }
#endif
    for (; i < n; ++i)
        out[i] = t[in[i]];
}

/* ---- strided requantization (standalone requant, the concat writer): nn_hwc_requant_s8's
 * contract and results. An output depends on its one input byte only, so a call of
 * NN_XP_REQUANT_LUT_MIN elements or more tabulates the rule once (nn_xp_requant, the same
 * as nn_requantize) and looks the bytes up as above; smaller calls run nn_hwc_requant_s8. */

#define NN_XP_REQUANT_LUT_MIN 256     /* building the table costs about 256 outputs of nn_requantize */

void nn_xp_requant_s8(int n_pix, int c, const int8_t *in, int in_stride, int32_t in_zp, int32_t mult,
                      int32_t shift, int32_t out_zp, int32_t act_min, int32_t act_max, int8_t *out,
                      int out_stride)
{
    int8_t table[256];
    int p, i;
    if ((long)n_pix * c < NN_XP_REQUANT_LUT_MIN) {
        nn_hwc_requant_s8(n_pix, c, in, in_stride, in_zp, mult, shift, out_zp, act_min, act_max, out, out_stride);
        return;
    }
    for (i = 0; i < 256; ++i)
        table[i] = nn_xp_requant(0, i - 128 - in_zp, mult, shift, out_zp, act_min, act_max);
    if (in_stride == c && out_stride == c) {        /* dense: one run */
        nn_xp_lut_s8(n_pix * c, in, table, out);
        return;
    }
    for (p = 0; p < n_pix; ++p)
        nn_xp_lut_s8(c, in + (ptrdiff_t)p * in_stride, table, out + (ptrdiff_t)p * out_stride);
}
