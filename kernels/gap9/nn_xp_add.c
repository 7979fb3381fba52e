/* Residual add with a 32-bit requantization: same contract, arguments and results as
 * nn_add_s8 (nn_kernels.h), which it calls when shift < 32.
 *
 * nn_add_s8 rounds acc = (a - a_zp) * mult[0] + (b - b_zp) * mult[1] (|acc| < 2^40) once,
 * ties to even, by 2^shift. With shift >= 32 only the high word of acc and whether its low
 * word is 0 matter (the rule of nn_xp_requant in nn_xpulp.h): two 32x32->64 products and a
 * 64-bit add instead of nn_rshift_round's general 64-bit arithmetic.
 */
#include "nn_hwc_kernels.h"
#include "nn_xpulp.h"

void nn_xp_add_s8(int n, const int8_t *a, int32_t a_zp, const int8_t *b, int32_t b_zp,
                  const int32_t *mult, const int32_t *shift, int32_t out_zp, int32_t act_min,
                  int32_t act_max, int8_t *out)
{
    const int32_t m0 = mult[0], m1 = mult[1], k = shift[0] - 32;
    int i;
    if (k < 0) {
        nn_add_s8(n, a, a_zp, b, b_zp, mult, shift, out_zp, act_min, act_max, out);
        return;
    }
    for (i = 0; i < n; ++i) {
        const int64_t v = (int64_t)(a[i] - a_zp) * m0 + (int64_t)(b[i] - b_zp) * m1;
        const int32_t vh = (int32_t)(v >> 32), bit = (vh >> k) & 1;
        const uint32_t vl = (uint32_t)v;
        int32_t q = k == 0 ? vh + (vl > 0x80000000u - (uint32_t)bit)
                           : (vh + ((int32_t)1 << (k - 1)) - 1 + (vl != 0 || bit)) >> k;
        q += out_zp;
        out[i] = (int8_t)(q < act_min ? act_min : (q > act_max ? act_max : q));
    }
}
