/* Residual add with a 32-bit requantization: same contract, arguments and results as
 * nn_add_s8 (nn_kernels.h), which it calls when shift < 9.
 *
 * nn_add_s8 rounds acc = (a - a_zp) * mult[0] + (b - b_zp) * mult[1] (|acc| < 2^40) once,
 * ties to even, by 2^shift: round(v) = (v + 2^(shift-1) - 1 + bit_shift(v)) >> shift. Here
 * acc is two 32-bit words (two 32x32->64 products and a 64-bit add) and the rounding works
 * on them instead of on nn_rshift_round's general 64-bit arithmetic:
 *   shift >= 32 (k = shift - 32): the carry out of the low word is (low != 0 || bit), the
 *     result (high + 2^(k-1) - 1 + carry) >> k (the rule of nn_xp_requant in nn_xpulp.h);
 *   9 <= shift <= 31: low + 2^(shift-1) - 1 + bit with its carry into high; the result,
 *     |acc| / 2^shift < 2^31, is (high << (32 - shift)) | (low >> shift).
 *
 * 17 <= shift <= 31 (ResNet-18's adds: 29-31) avoids the 64-bit products (mulh: several
 * cycles on the cluster cores): with M = Mh 2^16 + Ml (Ml = M & 0xffff),
 *   H = A m0h + B m1h,  L = A m0l + B m1l   (A = a - a_zp, B = b - b_zp: |H|, |L| < 2^26)
 *   acc = T 2^16 + Ll,  T = H + (L >> 16),  Ll = L & 0xffff
 * and with u = shift - 16 >= 1, floor(acc / 2^shift) = T >> u, so bit = (T >> u) & 1 and
 * the same carry argument gives round(acc / 2^shift) = (T + 2^(u-1) - 1 + (Ll != 0 || bit)) >> u.
 * The zero points fold into the constants of H and L (a m0h + b m1h - a_zp m0h - b_zp m1h).
 */
#include "nn_hwc_kernels.h"
#include "nn_xpulp.h"

void nn_xp_add_s8(int n, const int8_t *a, int32_t a_zp, const int8_t *b, int32_t b_zp,
                  const int32_t *mult, const int32_t *shift, int32_t out_zp, int32_t act_min,
                  int32_t act_max, int8_t *out)
{
    const int32_t m0 = mult[0], m1 = mult[1], s = shift[0];
    int i;
    if (s < 9) {
        nn_add_s8(n, a, a_zp, b, b_zp, mult, shift, out_zp, act_min, act_max, out);
        return;
    }
    if (s >= 17 && s <= 31) {
        const int32_t m0h = m0 >> 16, m1h = m1 >> 16, m0l = m0 & 0xffff, m1l = m1 & 0xffff, u = s - 16;
        const int32_t ch = -(a_zp * m0h + b_zp * m1h), cl = -(a_zp * m0l + b_zp * m1l);
        const int32_t half = ((int32_t)1 << (u - 1)) - 1;
        for (i = 0; i < n; ++i) {
            const int32_t x = a[i], y = b[i];
            const int32_t l = x * m0l + y * m1l + cl;
            const int32_t t = x * m0h + y * m1h + ch + (l >> 16);
            int32_t q = (t + half + (((uint32_t)l << 16) != 0 || ((t >> u) & 1))) >> u;
            q += out_zp;
            out[i] = (int8_t)(q < act_min ? act_min : (q > act_max ? act_max : q));
        }
        return;
    }
    for (i = 0; i < n; ++i) {
        const int64_t v = (int64_t)(a[i] - a_zp) * m0 + (int64_t)(b[i] - b_zp) * m1;
        const int32_t vh = (int32_t)(v >> 32);
        const uint32_t vl = (uint32_t)v;
        int32_t q;
        if (s >= 32) {
            const int32_t k = s - 32, bit = (vh >> k) & 1;
            q = k == 0 ? vh + (vl > 0x80000000u - (uint32_t)bit)
                       : (vh + ((int32_t)1 << (k - 1)) - 1 + (vl != 0 || bit)) >> k;
        } else {
            const uint32_t t = vl + (((uint32_t)1 << (s - 1)) - 1) + ((vl >> s) & 1);
            const uint32_t hi = (uint32_t)vh + (t < vl);
            q = (int32_t)((hi << (32 - s)) | (t >> s));
        }
        q += out_zp;
        out[i] = (int8_t)(q < act_min ? act_min : (q > act_max ? act_max : q));
    }
}

/* p.mac rd += rs1 rs2 (funct7 0x21, funct3 0; GVSoC's isa_pulpv2.py) for the short rule; the
 * clamps are nn_xpulp.h's. The GAP SDK's gcc emits it from plain C by itself; the products wrap
 * mod 2^32 like the unsigned C below. */
#if defined(NN_XPULP_INSN)
static inline int32_t nn_xp_mac(int32_t acc, int32_t a, int32_t b)
{
    __asm__(".insn r 0x33, 0, 0x21, %0, %1, %2" : "+r"(acc) : "r"(a), "r"(b));
    return acc;
}
#else
static inline int32_t nn_xp_mac(int32_t acc, int32_t a, int32_t b)
{
    return (int32_t)((uint32_t)acc + (uint32_t)a * (uint32_t)b);
}
#endif

/* The short rule targets/gap9/add_short.py found and proved exact for this layer over all
 * 256 x 256 int8 pairs (zero points, output zero point and rounding folded into c; every
 * a m0 + b m1 + c in int32): two macs, a shift and a clamp an element instead of the
 * word-split 40-bit sum above. Partial sums wrap mod 2^32 (no signed-overflow UB), which is
 * exact since the whole sum is in int32. Four elements a step: the loads of one element are
 * not needed by the next instruction (RI5CY's load-use stall) and the pointer updates are
 * shared. */
#define NN_ADD_SHORT(x, y) (nn_xp_mac(nn_xp_mac(c, (x), m0), (y), m1) >> s)

void nn_xp_add_short_s8(int n, const int8_t *a, const int8_t *b, int32_t m0, int32_t m1, int32_t c,
                        int32_t s, int32_t act_min, int32_t act_max, int8_t *out)
{
    int i;
    if (act_min == -128 && act_max == 127) {     /* no activation: one p.clipi an element */
        for (i = 0; i + 4 <= n; i += 4) {
            const int32_t x0 = a[i], y0 = b[i], x1 = a[i + 1], y1 = b[i + 1];
            const int32_t x2 = a[i + 2], y2 = b[i + 2], x3 = a[i + 3], y3 = b[i + 3];
            out[i] = (int8_t)nn_xp_clip8(NN_ADD_SHORT(x0, y0));
            out[i + 1] = (int8_t)nn_xp_clip8(NN_ADD_SHORT(x1, y1));
            out[i + 2] = (int8_t)nn_xp_clip8(NN_ADD_SHORT(x2, y2));
            out[i + 3] = (int8_t)nn_xp_clip8(NN_ADD_SHORT(x3, y3));
        }
        for (; i < n; ++i)
            out[i] = (int8_t)nn_xp_clip8(NN_ADD_SHORT(a[i], b[i]));
        return;
    }
    for (i = 0; i + 4 <= n; i += 4) {
        const int32_t x0 = a[i], y0 = b[i], x1 = a[i + 1], y1 = b[i + 1];
        const int32_t x2 = a[i + 2], y2 = b[i + 2], x3 = a[i + 3], y3 = b[i + 3];
        out[i] = (int8_t)nn_xp_clamp(NN_ADD_SHORT(x0, y0), act_min, act_max);
        out[i + 1] = (int8_t)nn_xp_clamp(NN_ADD_SHORT(x1, y1), act_min, act_max);
        out[i + 2] = (int8_t)nn_xp_clamp(NN_ADD_SHORT(x2, y2), act_min, act_max);
        out[i + 3] = (int8_t)nn_xp_clamp(NN_ADD_SHORT(x3, y3), act_min, act_max);
    }
    for (; i < n; ++i)
        out[i] = (int8_t)nn_xp_clamp(NN_ADD_SHORT(a[i], b[i]), act_min, act_max);
}
