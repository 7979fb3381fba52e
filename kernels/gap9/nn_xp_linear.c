/* Fully connected layer with Xpulp SIMD dot products (nn_xpulp.h): same contract, arguments
 * and results as nn_linear_s8 (nn_kernels.h), which it calls for what it does not cover.
 *
 * A matrix-vector product reuses only the input: 4 output features per loop share each
 * loaded input word (5 loads for 4 dot products of 4 MACs). Fast path: in_features % 4 == 0
 * (word-aligned weight rows) and in_zp 0 or -128 (see nn_xpulp.h).
 */
#include <stddef.h>

#include "nn_hwc_kernels.h"
#include "nn_xpulp.h"

int nn_xp_linear_fast(const nn_linear_cfg_t *cfg)
{
    return cfg->in_features % 4 == 0 && cfg->in_features > 0 && (cfg->in_zp == 0 || cfg->in_zp == -128);
}

void nn_xp_linear_s8(const nn_linear_cfg_t *cfg, const int8_t *in, const int8_t *weight,
                     const int32_t *bias, const int32_t *mult, const int32_t *shift, int8_t *out)
{
    const int flip = cfg->in_zp == -128, n = cfg->in_features / 4;
    const ptrdiff_t k = cfg->in_features;
    int o, j;

    if (!nn_xp_linear_fast(cfg)) {
        nn_linear_s8(cfg, in, weight, bias, mult, shift, out);
        return;
    }
    for (o = 0; o + 4 <= cfg->out_features; o += 4) {
        int32_t acc[4] = {0, 0, 0, 0};
        nn_xp_dot_4x1(flip, acc, in, weight + o * k, k, n, 1, 0, 0);
        for (j = 0; j < 4; ++j)
            out[o + j] = nn_xp_requant(bias ? bias[o + j] : 0, acc[j], mult[o + j], shift[o + j],
                                       cfg->out_zp, cfg->act_min, cfg->act_max);
    }
    for (; o < cfg->out_features; ++o)
        out[o] = nn_xp_requant(bias ? bias[o] : 0, nn_xp_dot_1x1(flip, 0, in, weight + o * k, n, 1, 0, 0),
                               mult[o], shift[o], cfg->out_zp, cfg->act_min, cfg->act_max);
}
