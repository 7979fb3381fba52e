/* Global average pool over a float island's values, rounded once (nnscons.ops.island_pool):
 * each code's value in output LSB * 2**frac from a per-channel table (tables == 1: one for
 * all), summed over the pixels of the HWC map, divided by their count and 2**frac. */
#include "nn_ops.h"
#include "nn_requant.h"

void nn_island_avgpool_s8(int c, int hw, int tables, const int8_t *in, const int32_t *table, int32_t frac,
                          int32_t out_zp, int32_t act_min, int32_t act_max, int8_t *out)
{
    for (int ch = 0; ch < c; ++ch) {
        const int32_t *t = table + (tables > 1 ? ch * 256 : 0) + 128;
        int64_t sum = 0;
        for (int p = 0; p < hw; ++p)
            sum += t[in[(long)p * c + ch]];
        out[ch] = nn_clamp_s8(nn_div_round(sum, hw, frac) + out_zp, act_min, act_max);
    }
}
