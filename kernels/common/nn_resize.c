/* TFLite's int8 bilinear resize (nnscons.ops.resize): per output row and column, two
 * source indices and the second one's weight of 1024; the four codes weighted, then
 * (v +- 2**19) / 2**20 toward zero.  hwc: channels innermost, else channel planes. */
#include "nn_ops.h"

void nn_resize_bilinear_s8(int c, int ih, int iw, int oh, int ow, int hwc, const int8_t *in,
                           const int32_t *rows, const int32_t *cols, int8_t *out)
{
    const long cs = hwc ? 1 : (long)ih * iw, ps = hwc ? c : 1;      /* channel, pixel strides */
    for (int y = 0; y < oh; ++y) {
        const int32_t y0 = rows[3 * y], y1 = rows[3 * y + 1], wy1 = rows[3 * y + 2], wy0 = 1024 - wy1;
        for (int x = 0; x < ow; ++x) {
            const int32_t x0 = cols[3 * x], x1 = cols[3 * x + 1], wx1 = cols[3 * x + 2], wx0 = 1024 - wx1;
            const int8_t *p00 = in + ((long)y0 * iw + x0) * ps, *p01 = in + ((long)y0 * iw + x1) * ps;
            const int8_t *p10 = in + ((long)y1 * iw + x0) * ps, *p11 = in + ((long)y1 * iw + x1) * ps;
            for (int ch = 0; ch < c; ++ch) {
                const long k = ch * cs;
                const int64_t v = (int64_t)p00[k] * wy0 * wx0 + (int64_t)p10[k] * wy1 * wx0
                                  + (int64_t)p01[k] * wy0 * wx1 + (int64_t)p11[k] * wy1 * wx1;
                const int64_t q = (v + (v > 0 ? (1 << 19) : -(1 << 19))) / (1 << 20);
                out[hwc ? ((long)y * ow + x) * c + ch : ((long)ch * oh + y) * ow + x] =
                    (int8_t)(q < -128 ? -128 : q > 127 ? 127 : q);
            }
        }
    }
}
