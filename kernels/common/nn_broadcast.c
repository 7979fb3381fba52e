/* Binary ops with a broadcast operand (nnscons.ops.mul). */
#include "nn_ops.h"
#include "nn_requant.h"

void nn_mul_s8(int outer, int c, int inner, const int8_t *a, int32_t a_zp,
               const int8_t *b, int32_t b_zp, int b_so, int b_sc, int b_si,
               int32_t mult, int32_t shift, int32_t out_zp, int32_t act_min, int32_t act_max,
               int8_t *out)
{
    for (int o = 0; o < outer; ++o) {
        for (int ch = 0; ch < c; ++ch) {
            const int8_t *bp = b + (long)o * b_so + (long)ch * b_sc;
            for (int k = 0; k < inner; ++k) {
                const int64_t acc = (int64_t)(*a++ - a_zp) * (bp[(long)k * b_si] - b_zp);
                *out++ = nn_requantize(acc, mult, shift, out_zp, act_min, act_max);
            }
        }
    }
}
