/* Lookup-table ops (nnscons.ops.lut): one or per-channel 256-entry int8 tables. */
#include "nn_ops.h"

void nn_lut_s8(int outer, int c, int inner, const int8_t *in, const int8_t *table,
               int table_stride, int8_t *out)
{
    for (int o = 0; o < outer; ++o) {
        for (int ch = 0; ch < c; ++ch) {
            const int8_t *t = table + (long)ch * table_stride + 128;
            for (int k = 0; k < inner; ++k) {
                *out++ = t[*in++];
            }
        }
    }
}
