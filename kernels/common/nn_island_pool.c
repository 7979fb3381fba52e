/* Global average pool over a float island's values, rounded once (nnscons.ops.island_pool):
 * each code's value in output LSB * 2**frac from a per-channel table (tables == 1: one for
 * all), summed over the pixels, divided by their count and 2**frac. */
#include "nn_ops.h"
#include "nn_requant.h"

/* Channels [c0, c1): pixel p of channel ch is in[p * px_stride + ch * ch_stride] (HWC: c, 1;
 * CHW: 1, hw); table row ch (tables > 1) and out[ch] are relative to the same channel 0, so
 * the GAP9 cluster's cores each take a range of an L1 tile and the CHW targets (k210, aie2p's
 * host fallback) the whole map. */
void nn_island_avgpool_part_s8(int hw, long px_stride, long ch_stride, int c0, int c1, int tables,
                               const int8_t *in, const int32_t *table, int32_t frac, int32_t out_zp,
                               int32_t act_min, int32_t act_max, int8_t *out)
{
    for (int ch = c0; ch < c1; ++ch) {
        const int32_t *t = table + (tables > 1 ? ch * 256 : 0) + 128;
        const int8_t *x = in + ch * ch_stride;
        int64_t sum = 0;
        for (int p = 0; p < hw; ++p)
            sum += t[x[(long)p * px_stride]];
        out[ch] = nn_clamp_s8(nn_div_round(sum, hw, frac) + out_zp, act_min, act_max);
    }
}

void nn_island_avgpool_s8(int c, int hw, int tables, const int8_t *in, const int32_t *table, int32_t frac,
                          int32_t out_zp, int32_t act_min, int32_t act_max, int8_t *out)
{
    nn_island_avgpool_part_s8(hw, c, 1, 0, c, tables, in, table, frac, out_zp, act_min, act_max, out);
}
