/* Data movement as a gather with a re-quantizing table (nnscons.ops.move). */
#include "nn_ops.h"

void nn_gather_s8(int n, const int8_t *in, const int32_t *index, const int8_t *table,
                  int8_t fill, int8_t *out)
{
    const int8_t *t = table + 128;
    for (int i = 0; i < n; ++i) {
        const int32_t k = index[i];
        out[i] = k < 0 ? fill : t[in[k]];
    }
}
