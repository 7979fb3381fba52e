/* Softmax over the last axis with an exp table (nnscons.ops.softmax): the ONNX rule, or
 * TFLite's fixed-point recipe when the shift is negative. */
#include "nn_ops.h"
#include "nn_requant.h"

/* gemmlowp SaturatingRoundingMultiplyByPOT<e> for 1 <= e <= 30. */
static int32_t nn_sat_shl(int32_t x, int e)
{
    const int32_t th = (int32_t)(((int64_t)1 << (31 - e)) - 1);
    if (x > th)
        return INT32_MAX;
    if (x < -th)
        return INT32_MIN;
    return (int32_t)((uint32_t)x << e);
}

/* gemmlowp one_over_one_plus_x_for_x_in_0_1 (Newton-Raphson, Q0.31 in and out). */
static int32_t nn_tfl_recip(int32_t a)
{
    const int64_t s = (int64_t)a + INT32_MAX;
    const int32_t half_den = (int32_t)((s + (s >= 0 ? 1 : -1)) / 2);
    int32_t x = (int32_t)((uint32_t)1515870810 + (uint32_t)nn_tfl_srdhm(half_den, -1010580540));
    for (int i = 0; i < 3; ++i) {
        const int32_t one_minus = (int32_t)((uint32_t)(1 << 29) - (uint32_t)nn_tfl_srdhm(half_den, x));
        x = (int32_t)((uint32_t)x + (uint32_t)nn_sat_shl(nn_tfl_srdhm(x, one_minus), 2));
    }
    return nn_sat_shl(x, 1);
}

/* TFLite's int8 SOFTMAX (reference kernel): exp_table[d] = E (Q0.31) of d = max - q, -1
 * where TFLite leaves the element out (output zero point then). */
static void nn_softmax_tfl_s8(int n, const int8_t *in, const int32_t *exp_table, int32_t out_zp,
                              int32_t act_min, int32_t act_max, int8_t *out)
{
    int m = -128, hp1 = 0;
    uint32_t sum = 0;
    for (int i = 0; i < n; ++i)
        m = in[i] > m ? in[i] : m;
    for (int i = 0; i < n; ++i) {
        const int32_t e = exp_table[m - in[i]];
        if (e >= 0)
            sum += (uint32_t)nn_tfl_rdbpot(e, 12);
    }
    while (hp1 < 32 && !(sum & (0x80000000u >> hp1)))
        ++hp1;
    {
        const int32_t recip = nn_tfl_recip((int32_t)((sum << hp1) - 0x80000000u));
        const int32_t exponent = 12 - hp1 + 23;
        for (int i = 0; i < n; ++i) {
            const int32_t e = exp_table[m - in[i]];
            const int64_t v = e < 0 ? out_zp : (int64_t)nn_tfl_rdbpot(nn_tfl_srdhm(recip, e), exponent) + out_zp;
            out[i] = nn_clamp_s8(v, act_min, act_max);
        }
    }
}

void nn_softmax_s8(int rows, int n, const int8_t *in, const int32_t *exp_table, int32_t mult,
                   int32_t shift, int32_t out_zp, int32_t act_min, int32_t act_max, int8_t *out)
{
    for (int r = 0; r < rows; ++r, in += n, out += n) {
        int m = -128;
        if (shift < 0) {
            nn_softmax_tfl_s8(n, in, exp_table, out_zp, act_min, act_max, out);
            continue;
        }
        int64_t sum = 0;
        for (int i = 0; i < n; ++i)
            m = in[i] > m ? in[i] : m;
        for (int i = 0; i < n; ++i)
            sum += exp_table[m - in[i]];
        for (int i = 0; i < n; ++i) {
            const int64_t v = nn_div_round((int64_t)exp_table[m - in[i]] * mult, (int32_t)sum, shift);
            out[i] = nn_clamp_s8(v + out_zp, act_min, act_max);
        }
    }
}
