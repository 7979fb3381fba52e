/* ONNX Resize mode linear in float64 (nnscons.ops.bilinear): H then W, as onnx's reference
 * evaluator.  Per output row y the two source rows rows[2y], rows[2y+1] and coefficients
 * rc[2y], rc[2y+1] (resize_h 0: the row itself); per output column likewise with cols and
 * cc.  An element is (v(y0,x0) * r0 + v(y1,x0) * r1) * c0 + (v(y0,x1) * r0 + v(y1,x1) * r1) * c1
 * with v(q) = (q - in_zp) * in_scale, then quantized.  hwc 1: HWC tensors, 0: CHW.
 * `in` holds the input from row in_row0 on, `out` the output from row out_row0 on (a
 * band of rows in L1, HWC only; 0 and 0 for whole tensors). */
#include "nn_ops.h"
#include "nn_fp64.h"

static inline double nn_row_f64(const int8_t *p0, const int8_t *p1, int resize_h, double r0,
                                double r1, int32_t zp, double s)
{
    const double a = (double)(*p0 - zp) * s;
    if (!resize_h)
        return a;
    const double b = (double)(*p1 - zp) * s;
    const double ta = a * r0, tb = b * r1;
    return ta + tb;
}

void nn_bilinear_f64_s8(int c, int ih, int iw, int oh, int ow, int hwc, int y_begin, int y_end,
                        int in_row0, int out_row0, const int8_t *in, int32_t in_zp, double in_scale, int resize_h,
                        const int32_t *rows, const double *rc, int resize_w, const int32_t *cols,
                        const double *cc, double out_scale, int32_t out_zp, int32_t act_min,
                        int32_t act_max, int8_t *out)
{
    const long cs = hwc ? 1 : (long)ih * iw, ps = hwc ? c : 1;      /* channel, pixel strides */
    for (int y = y_begin; y < y_end; ++y) {
        const int y0 = (resize_h ? rows[2 * y] : y) - in_row0, y1 = (resize_h ? rows[2 * y + 1] : y) - in_row0;
        const double r0 = resize_h ? rc[2 * y] : 1.0, r1 = resize_h ? rc[2 * y + 1] : 0.0;
        for (int x = 0; x < ow; ++x) {
            const int x0 = resize_w ? cols[2 * x] : x, x1 = resize_w ? cols[2 * x + 1] : x;
            const int8_t *p00 = in + ((long)y0 * iw + x0) * ps, *p01 = in + ((long)y0 * iw + x1) * ps;
            const int8_t *p10 = in + ((long)y1 * iw + x0) * ps, *p11 = in + ((long)y1 * iw + x1) * ps;
            for (int ch = 0; ch < c; ++ch) {
                const long k = ch * cs;
                const double t0 = nn_row_f64(p00 + k, p10 + k, resize_h, r0, r1, in_zp, in_scale);
                double v = t0;
                if (resize_w) {
                    const double t1 = nn_row_f64(p01 + k, p11 + k, resize_h, r0, r1, in_zp, in_scale);
                    const double u0 = t0 * cc[2 * x], u1 = t1 * cc[2 * x + 1];
                    v = u0 + u1;
                }
                const long yo = y - out_row0;
                out[hwc ? (yo * ow + x) * c + ch : ((long)ch * oh + yo) * ow + x] =
                    nn_quantize_f64(v / out_scale, out_zp, act_min, act_max, (int8_t)out_zp);
            }
        }
    }
}
