/* ONNX InstanceNormalization (nnscons.ops.instnorm): per channel in [ch_begin, ch_end), the
 * exact integer sums S1, S2 of k = q - in_zp over its n = outer * inner values, then in
 * float64 (the reference's operations and order):
 *   m = S1 / n, v = (n S2 - S1^2) / (n * n), den = sqrt(v * (s * s) + eps),
 *   y = (gamma[ch] * ((k - m) * s)) / den + beta[ch], quantized.
 * Tensors walked as outer x c x inner (CHW: 1, C, H*W; HWC: H*W, C, 1). */
#include <math.h>

#include "nn_ops.h"
#include "nn_fp64.h"

void nn_instnorm_f64_s8(int outer, int c, int inner, int ch_begin, int ch_end, const int8_t *in,
                        int32_t in_zp, double in_scale, const double *gamma, const double *beta,
                        double eps, double out_scale, int32_t out_zp, int32_t act_min,
                        int32_t act_max, int8_t *out)
{
    const int64_t n = (int64_t)outer * inner;
    const double s2s = in_scale * in_scale;
    for (int ch = ch_begin; ch < ch_end; ++ch) {
        int64_t s1 = 0, s2 = 0;
        for (int o = 0; o < outer; ++o) {
            const int8_t *x = in + ((long)o * c + ch) * inner;
            for (int k = 0; k < inner; ++k) {
                const int64_t v = x[k] - in_zp;
                s1 += v;
                s2 += v * v;
            }
        }
        const double m = (double)s1 / (double)n;
        const double v = (double)(n * s2 - s1 * s1) / ((double)n * (double)n);
        const double var = v * s2s;
        const double den = sqrt(var + eps);
        for (int o = 0; o < outer; ++o) {
            const int8_t *x = in + ((long)o * c + ch) * inner;
            int8_t *y = out + ((long)o * c + ch) * inner;
            for (int k = 0; k < inner; ++k) {
                const double d = ((double)(x[k] - in_zp) - m) * in_scale;
                const double t = gamma[ch] * d;
                const double r = t / den + beta[ch];
                y[k] = nn_quantize_f64(r / out_scale, out_zp, act_min, act_max, (int8_t)act_min);
            }
        }
    }
}
