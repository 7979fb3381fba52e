/* Element-wise kernels: residual add and requantization (Relu/Clip, concat slices). */
#include "nn_kernels.h"
#include "nn_requant.h"

void nn_add_s8(int n, const int8_t *a, int32_t a_zp, const int8_t *b, int32_t b_zp,
               const int32_t *mult, const int32_t *shift,
               int32_t out_zp, int32_t act_min, int32_t act_max, int8_t *out)
{
    int i;
    if (shift[0] < 0) {     /* TFLite's ADD/SUB: mult/shift[0..2]; SUB: mult[1] < 0 */
        const int32_t m2 = mult[1] < 0 ? -mult[1] : mult[1];
        for (i = 0; i < n; ++i) {
            const int32_t s1 = nn_tfl_mbqm((int64_t)(a[i] - a_zp) * (1 << NN_TFL_ADD_LEFT_SHIFT), mult[0],
                                           shift[0] + NN_TFL_SHIFT_BIAS);
            const int32_t s2 = nn_tfl_mbqm((int64_t)(b[i] - b_zp) * (1 << NN_TFL_ADD_LEFT_SHIFT), m2,
                                           shift[1] + NN_TFL_SHIFT_BIAS);
            const int64_t raw = mult[1] < 0 ? (int64_t)s1 - s2 : (int64_t)s1 + s2;
            out[i] = nn_clamp_s8((int64_t)nn_tfl_mbqm(raw, mult[2], shift[2] + NN_TFL_SHIFT_BIAS) + out_zp,
                                 act_min, act_max);
        }
        return;
    }
    for (i = 0; i < n; ++i) {
        /* Both operands scaled to the common shift, then one rounding. */
        const int64_t acc = (int64_t)(a[i] - a_zp) * mult[0] + (int64_t)(b[i] - b_zp) * mult[1];
        int64_t v = nn_rshift_round(acc, shift[0]) + out_zp;
        if (v < act_min)
            v = act_min;
        if (v > act_max)
            v = act_max;
        out[i] = (int8_t)v;
    }
}

void nn_requant_s8(int n, const int8_t *in, int32_t in_zp, int32_t mult, int32_t shift,
                   int32_t out_zp, int32_t act_min, int32_t act_max, int8_t *out)
{
    int i;
    for (i = 0; i < n; ++i)
        out[i] = nn_requantize(in[i] - in_zp, mult, shift, out_zp, act_min, act_max);
}
