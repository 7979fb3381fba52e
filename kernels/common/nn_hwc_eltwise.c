/* Strided requantization on HWC data: standalone requant, Relu/Clip, and the concat
 * writer (each input's pixels land in a channel slice of the wider output pixel). */
#include <stddef.h>

#include "nn_hwc.h"
#include "nn_requant.h"

void nn_hwc_requant_s8(int n_pix, int c, const int8_t *in, int in_stride, int32_t in_zp,
                       int32_t mult, int32_t shift, int32_t out_zp, int32_t act_min, int32_t act_max,
                       int8_t *out, int out_stride)
{
    int p, i;
    for (p = 0; p < n_pix; ++p) {
        const int8_t *src = in + (ptrdiff_t)p * in_stride;
        int8_t *dst = out + (ptrdiff_t)p * out_stride;
        for (i = 0; i < c; ++i)
            dst[i] = nn_requantize((int32_t)src[i] - in_zp, mult, shift, out_zp, act_min, act_max);
    }
}
