/* Sum / Max / Min of n inputs with broadcasting (nnscons.ops.nary): see nn_ops.h. */
#include <stddef.h>

#include "nn_ops.h"
#include "nn_requant.h"

void nn_nary_s8(int n, int outer, int c, int inner, const int8_t *const *in, const int32_t *in_zp,
                const int32_t *mode, int fn, const int32_t *mult, const int32_t *shift,
                int32_t out_zp, int32_t act_min, int32_t act_max, int8_t *out, int begin, int end)
{
    int i, k;
    (void)outer;
    for (i = begin; i < end; ++i) {
        const int ch = i / inner % c;
        int64_t acc = 0;
        int32_t best = 0;
        for (k = 0; k < n; ++k) {
            const int8_t x = in[k][mode[k] == NN_NARY_SAME ? i : mode[k] == NN_NARY_CHANNEL ? ch : 0];
            if (fn == NN_NARY_SUM) {
                acc += (int64_t)(x - in_zp[k]) * mult[k];     /* one rounding, at the end */
            } else {
                const int32_t v = nn_requantize(x - in_zp[k], mult[k], shift[k], out_zp, act_min, act_max);
                if (k == 0 || (fn == NN_NARY_MAX ? v > best : v < best))
                    best = v;
            }
        }
        out[i] = fn == NN_NARY_SUM ? nn_clamp_s8(nn_rshift_round(acc, shift[0]) + out_zp, act_min, act_max)
                                   : (int8_t)best;
    }
}
