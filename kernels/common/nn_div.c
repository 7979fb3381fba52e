/* Div of two activations in float64 (nnscons.ops.div), broadcast as nn_mul_s8: each
 * operand dequantized ((q - zp) * scale), the quotient (b / a when swap), divided by the
 * output scale and quantized; NaN (0 / 0) gives nan_code, +-inf saturates. */
#include "nn_ops.h"
#include "nn_fp64.h"

void nn_div_f64_s8(int outer, int c, int inner, const int8_t *a, int32_t a_zp, double a_scale,
                   const int8_t *b, int32_t b_zp, double b_scale, int b_so, int b_sc, int b_si,
                   int swap, double out_scale, int32_t out_zp, int32_t act_min, int32_t act_max,
                   int8_t nan_code, int8_t *out)
{
    for (int o = 0; o < outer; ++o) {
        for (int ch = 0; ch < c; ++ch) {
            const int8_t *bp = b + (long)o * b_so + (long)ch * b_sc;
            for (int k = 0; k < inner; ++k) {
                const double va = (double)(*a++ - a_zp) * a_scale;
                const double vb = (double)(bp[(long)k * b_si] - b_zp) * b_scale;
                const double q = swap ? vb / va : va / vb;
                *out++ = nn_quantize_f64(q / out_scale, out_zp, act_min, act_max, nan_code);
            }
        }
    }
}
