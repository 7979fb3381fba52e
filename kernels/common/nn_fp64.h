/* Float64 helpers of the kernels that follow ONNX QDQ float semantics (nn_bilinear.c,
 * nn_div.c): every product, sum and quotient is one IEEE double operation in the order
 * the NumPy reference (and onnx's evaluator) computes it, so the results are bit-exact.
 * No libm: QuantizeLinear's round-half-to-even is done by adding and subtracting 2**52,
 * which rounds to nearest-even in the default rounding mode. */
#ifndef NN_FP64_H
#define NN_FP64_H

#include <stdint.h>

/* A fused multiply-add would round once where the reference rounds twice. */
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

/* QuantizeLinear of y (already divided by the output scale): clamp(rne(y) + zp);
 * +-inf saturates, NaN gives nan_code. */
static inline int8_t nn_quantize_f64(double y, int32_t zp, int32_t lo, int32_t hi, int8_t nan_code)
{
    if (y != y)
        return nan_code;
    if (y >= 4503599627370496.0 || y <= -4503599627370496.0)
        return (int8_t)(y > 0 ? hi : lo);
    const double r = y >= 0 ? (y + 4503599627370496.0) - 4503599627370496.0
                            : (y - 4503599627370496.0) + 4503599627370496.0;
    const double q = r + (double)zp;
    return (int8_t)(q < lo ? lo : q > hi ? hi : (int32_t)q);
}

#endif /* NN_FP64_H */
