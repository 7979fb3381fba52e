/* Reductions over any of three dims (nnscons.ops.reduce): see nn_ops.h. */
#include <stddef.h>

#include "nn_ops.h"
#include "nn_requant.h"

void nn_reduce_s8(int d0, int d1, int d2, int reduced, int fn, const int8_t *in, int32_t in_zp,
                  int32_t mult, int32_t shift, int32_t out_zp, int32_t act_min, int32_t act_max,
                  int8_t *out, int o_begin, int o_end)
{
    /* extent of each dim in the output (1 where reduced) and in each output's loop */
    const int r0 = reduced & 1, r1 = reduced >> 1 & 1, r2 = reduced >> 2 & 1;
    const int o1 = r1 ? 1 : d1, o2 = r2 ? 1 : d2;
    const int n0 = r0 ? d0 : 1, n1 = r1 ? d1 : 1, n2 = r2 ? d2 : 1;
    const ptrdiff_t s1 = d2, s0 = (ptrdiff_t)d1 * d2;
    const int32_t count = n0 * n1 * n2;
    int o, a, b, c;

    for (o = o_begin; o < o_end; ++o) {
        const int i2 = o % o2, i1 = o / o2 % o1, i0 = o / o2 / o1;
        const int8_t *base = in + i0 * s0 + i1 * s1 + i2;
        int32_t sum = 0, hi = -128, lo = 127;
        for (a = 0; a < n0; ++a)
            for (b = 0; b < n1; ++b) {
                const int8_t *row = base + a * s0 + b * s1;
                for (c = 0; c < n2; ++c) {
                    const int32_t v = row[c];
                    sum += v;
                    hi = v > hi ? v : hi;
                    lo = v < lo ? v : lo;
                }
            }
        if (fn == NN_REDUCE_MEAN)
            out[o] = nn_requantize_avg((int64_t)sum - (int64_t)in_zp * count, count, mult, shift,
                                       out_zp, act_min, act_max);
        else
            out[o] = nn_requantize(fn == NN_REDUCE_SUM ? (int64_t)sum - (int64_t)in_zp * count
                                   : (fn == NN_REDUCE_MAX ? hi : lo) - in_zp,
                                   mult, shift, out_zp, act_min, act_max);
    }
}
