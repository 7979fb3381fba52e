"""TFLite's int8 integer arithmetic, bit-exact, as NumPy functions.

The model is LiteRT's *reference* kernels (the BUILTIN_REF op resolver of
ai-edge-litert 2.3.0, i.e. tflite/kernels/*.cc + kernels/internal/reference/**), re-derived
from their source and checked bit for bit against the interpreter (tests/test_tflite_math.py).
Everything here is NumPy on int64 arrays (plus float32/float64 where TFLite itself computes
in floating point); nothing imports LiteRT.

Rounding mode
-------------
LiteRT is built *without* TFLITE_SINGLE_ROUNDING (checked empirically: ADD and CONV_2D
only match the double-rounding formula), so MultiplyByQuantizedMultiplier is gemmlowp's

    MBQM(x, M, s) = RDBPOT(SRDHM(x * 2**max(s,0), M), max(-s,0))
    SRDHM(a, b)   = (a*b + (2**30 if a*b >= 0 else 1 - 2**30)) / 2**31   (C division: toward 0;
                    INT32_MIN*INT32_MIN saturates to INT32_MAX)
    RDBPOT(x, e)  = x / 2**e rounded to nearest, ties away from zero

(two roundings).  The single-rounding variant is kept as
`multiply_by_quantized_multiplier_single_rounding` only for comparison.

Scales
------
Each op derives its integer parameters from the file's float32 scales in its own way; the
`*_params` functions below copy the exact expressions (float32 vs double arithmetic matters:
e.g. MUL computes s1*s2/so in float32, CONV in double).  Layouts are NHWC; conv weights are
OHWI, depthwise weights 1HW(C*mult), fully-connected weights (O, I), transpose-conv weights
OHWI.  int8 arrays go in as any integer dtype and come out as int8 (uint8 where stated).
Elementwise unary ops also have `*_table(...)`: the 256 outputs for inputs -128..127.

Things the reference kernels do that are easy to get wrong
----------------------------------------------------------
* SRDHM ties go UP (toward +inf: -1.5 -> -1), RDBPOT ties go away from zero.
* FULLY_CONNECTED (reference) requantizes in double: round(acc * s_in*s_w/s_out), not MBQM.
* AVERAGE_POOL / MAX_POOL ignore scales and zero points (only DCHECKed equal); the average
  excludes padding and rounds half away from zero.  RESIZE_BILINEAR ignores them too.
* MEAN under BUILTIN_REF is always the general QuantizedMeanOrSum (1/N folded into the
  multiplier), also for 4-D over H,W and equal scales; the 4-D special case
  (`mean_hw_optimized`) only runs in the optimized resolver.
* int8 CONCATENATION rejects inputs whose scale/zero point differ from the output's.
* LOGISTIC needs s_out == 1/256 (any zp); SOFTMAX zp -128, s_out 1/256 (+-0.1%); TANH: none.
* Standalone RELU/RELU6/RELU_N1_TO_1 requantize (s_in/s_out in float32) then clamp.
* LOGISTIC/TANH tables call the host libm's expf/tanhf; here they are emulated as the
  correctly rounded float32 values (glibc 2.36 tanhf is not always, but no table among
  thousands of random scales came out different).

The functions live in four modules, one job each: tflite_fixed (the fixed-point
primitives), tflite_kernels (ADD .. MEAN), tflite_activations (SOFTMAX .. RELU),
tflite_convert (QUANTIZE, CONCATENATION, RESIZE_BILINEAR); this module names them all.
"""
from __future__ import annotations

from .tflite_fixed import (  # noqa: F401
    INT32_MAX, INT32_MIN, SINGLE_ROUNDING, activation_range, average, compute_padding, lookup,
    mbqm_greater_than_one, mbqm_smaller_than_one_exp, multiply_by_quantized_multiplier,
    multiply_by_quantized_multiplier_single_rounding, quantize_multiplier,
    quantize_multiplier_greater_than_one, quantize_multiplier_smaller_than_one_exp,
    round_half_away, rounding_divide_by_pot, srdhm, wrap32)
from .tflite_kernels import (  # noqa: F401
    AddParams, MeanParams, add, add_params, average_pool, conv2d, conv_params, depthwise_conv2d,
    fc_params, fc_requantize_float, fully_connected, max_pool, mean, mean_hw_optimized,
    mean_params, mul, mul_params, requantize_acc, sub, sub_params, transpose_conv)
from .tflite_activations import (  # noqa: F401
    HardSwishParams, LeakyReluParams, PreluParams, SoftmaxParams, exp_on_negative_values,
    hard_swish, hard_swish_params, hard_swish_table, leaky_relu, leaky_relu_params,
    leaky_relu_table, logistic, logistic_table, one_over_one_plus_x_for_x_in_0_1, prelu,
    prelu_params, relu, relu6, relu6_table, relu_0_to_1, relu_0_to_1_table, relu_bounds,
    relu_n1_to_1, relu_n1_to_1_table, relu_params, relu_table, softmax, softmax_params, tanh,
    tanh_table)
from .tflite_convert import (  # noqa: F401
    concatenation, dequantize, quantize, quantize_table, requantize, requantize_params,
    requantize_table, resize_bilinear)

__all__ = [
    "SINGLE_ROUNDING", "wrap32", "quantize_multiplier", "quantize_multiplier_smaller_than_one_exp",
    "quantize_multiplier_greater_than_one", "srdhm", "rounding_divide_by_pot",
    "multiply_by_quantized_multiplier", "multiply_by_quantized_multiplier_single_rounding",
    "mbqm_smaller_than_one_exp", "mbqm_greater_than_one", "round_half_away",
    "activation_range", "compute_padding",
    "AddParams", "add_params", "sub_params", "add", "sub",
    "mul_params", "mul", "conv_params", "fc_params", "requantize_acc", "fc_requantize_float",
    "conv2d", "depthwise_conv2d", "fully_connected", "transpose_conv",
    "average", "average_pool", "max_pool", "MeanParams", "mean_params", "mean", "mean_hw_optimized",
    "SoftmaxParams", "softmax_params", "softmax",
    "logistic_table", "logistic", "tanh_table", "tanh",
    "HardSwishParams", "hard_swish_params", "hard_swish", "hard_swish_table",
    "LeakyReluParams", "leaky_relu_params", "leaky_relu", "leaky_relu_table",
    "PreluParams", "prelu_params", "prelu",
    "relu_params", "relu_bounds", "relu", "relu6", "relu_n1_to_1", "relu_0_to_1", "relu_table",
    "relu6_table", "relu_n1_to_1_table", "relu_0_to_1_table",
    "requantize_params", "requantize", "requantize_table", "quantize_table", "quantize", "dequantize",
    "concatenation", "resize_bilinear", "lookup",
]
