/* Element-wise kernels: residual add and requantization (Relu/Clip, concat slices). */
#include "nn_kernels.h"
#include "nn_requant.h"

void nn_add_s8(int n, const int8_t *a, int32_t a_zp, const int8_t *b, int32_t b_zp,
               const int32_t *mult, const int32_t *shift,
               int32_t out_zp, int32_t act_min, int32_t act_max, int8_t *out)
{
    int i;
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
