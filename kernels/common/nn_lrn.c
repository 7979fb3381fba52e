/* ONNX LRN across channels in float64 (nnscons.ops.lrn.lrn_f64, the same operations in the
 * same order): per element, the squares of the dequantized channels [ch - before, ch + after]
 * (clipped) summed in channel order, d = bias + alpha_n * sum, y = x / pow(d, beta),
 * quantized.  Tensors walked as outer x c x inner (CHW: 1, C, H*W; HWC: H*W, C, 1). */
#include <math.h>

#include "nn_ops.h"
#include "nn_fp64.h"

void nn_lrn_f64_s8(int outer, int c, int inner, const int8_t *in, int32_t in_zp, double in_scale,
                   int before, int after, double bias, double alpha_n, double beta,
                   double out_scale, int32_t out_zp, int32_t act_min, int32_t act_max, int8_t *out)
{
    for (int o = 0; o < outer; ++o) {
        const int8_t *x = in + (long)o * c * inner;
        int8_t *y = out + (long)o * c * inner;
        for (int ch = 0; ch < c; ++ch) {
            const int lo = ch - before < 0 ? 0 : ch - before;
            const int hi = ch + after + 1 > c ? c : ch + after + 1;
            for (int k = 0; k < inner; ++k) {
                double v = (double)(x[(long)lo * inner + k] - in_zp) * in_scale;
                double sum = v * v;
                for (int j = lo + 1; j < hi; ++j) {
                    v = (double)(x[(long)j * inner + k] - in_zp) * in_scale;
                    const double sq = v * v;
                    sum = sum + sq;
                }
                const double t = alpha_n * sum;
                const double d = bias + t;
                const double xv = (double)(x[(long)ch * inner + k] - in_zp) * in_scale;
                y[(long)ch * inner + k] = nn_quantize_f64(xv / pow(d, beta) / out_scale, out_zp,
                                                          act_min, act_max, (int8_t)act_min);
            }
        }
    }
}
