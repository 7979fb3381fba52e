/* ONNX InstanceNormalization (nnscons.ops.instnorm) in three steps, so a target may stream
 * the tensor twice (gap9): the exact integer sums S1, S2 of k = q - in_zp per channel, the
 * channel's mean and denominator in float64, then each element in float64 -- the reference's
 * operations in its order:
 *   m = S1 / n, v = (n S2 - S1^2) / (n * n), den = sqrt(v * (s * s) + eps),
 *   y = (gamma[ch] * ((k - m) * s)) / den + beta[ch], quantized.
 * Tensors walked as outer x c x inner (CHW: 1, C, H*W; HWC: H*W, C, 1); channels
 * [ch_begin, ch_end). */
#include <math.h>

#include "nn_ops.h"
#include "nn_fp64.h"

void nn_instnorm_sums_s8(int outer, int c, int inner, int ch_begin, int ch_end, const int8_t *in,
                         int32_t in_zp, int64_t *s1, int64_t *s2)
{
    for (int ch = ch_begin; ch < ch_end; ++ch) {
        int64_t a = s1[ch], b = s2[ch];
        for (int o = 0; o < outer; ++o) {
            const int8_t *x = in + ((long)o * c + ch) * inner;
            for (int k = 0; k < inner; ++k) {
                const int64_t v = x[k] - in_zp;
                a += v;
                b += v * v;
            }
        }
        s1[ch] = a;
        s2[ch] = b;
    }
}

void nn_instnorm_stats_f64(int64_t n, int ch_begin, int ch_end, const int64_t *s1, const int64_t *s2,
                           double in_scale, double eps, double *mean, double *den)
{
    const double s2s = in_scale * in_scale;
    for (int ch = ch_begin; ch < ch_end; ++ch) {
        const double v = (double)(n * s2[ch] - s1[ch] * s1[ch]) / ((double)n * (double)n);
        const double var = v * s2s;
        mean[ch] = (double)s1[ch] / (double)n;
        den[ch] = sqrt(var + eps);
    }
}

void nn_instnorm_apply_f64_s8(int outer, int c, int inner, int ch_begin, int ch_end, const int8_t *in,
                              int32_t in_zp, double in_scale, const double *mean, const double *den,
                              const double *gamma, const double *beta, double out_scale, int32_t out_zp,
                              int32_t act_min, int32_t act_max, int8_t *out)
{
    for (int o = 0; o < outer; ++o) {
        for (int ch = ch_begin; ch < ch_end; ++ch) {
            const int8_t *x = in + ((long)o * c + ch) * inner;
            int8_t *y = out + ((long)o * c + ch) * inner;
            for (int k = 0; k < inner; ++k) {
                const double d = ((double)(x[k] - in_zp) - mean[ch]) * in_scale;
                const double t = gamma[ch] * d;
                const double r = t / den[ch] + beta[ch];
                y[k] = nn_quantize_f64(r / out_scale, out_zp, act_min, act_max, (int8_t)act_min);
            }
        }
    }
}
