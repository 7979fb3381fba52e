/* Fully connected layer: out[o] = requant(bias[o] + sum_i (in[i] - in_zp) * w[o][i]). */
#include <stddef.h>

#include "nn_kernels.h"
#include "nn_requant.h"

void nn_linear_s8(const nn_linear_cfg_t *cfg, const int8_t *in, const int8_t *weight,
                  const int32_t *bias, const int32_t *mult, const int32_t *shift, int8_t *out)
{
    int o, i;
    for (o = 0; o < cfg->out_features; ++o) {
        const int8_t *w = weight + (ptrdiff_t)o * cfg->in_features;
        int32_t acc = 0;   /* in_features <= NN_MAX_ACC_TERMS */
        for (i = 0; i < cfg->in_features; ++i)
            acc += ((int32_t)in[i] - cfg->in_zp) * w[i];
        out[o] = nn_requantize((int64_t)(bias ? bias[o] : 0) + acc, mult[o], shift[o],
                               cfg->out_zp, cfg->act_min, cfg->act_max);
    }
}
