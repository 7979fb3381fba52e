/* Softmax over the last axis with an exp table (nnscons.ops.softmax). */
#include "nn_ops.h"
#include "nn_requant.h"

void nn_softmax_s8(int rows, int n, const int8_t *in, const int32_t *exp_table, int32_t mult,
                   int32_t shift, int32_t out_zp, int32_t act_min, int32_t act_max, int8_t *out)
{
    for (int r = 0; r < rows; ++r, in += n, out += n) {
        int m = -128;
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
