"""The TFLite builtin operators tflite_writer.py writes: TensorType names per dtype,
each operator's options table with the defaults a converter writes, and the operator
version to write (as the TFLite converter does)."""
from __future__ import annotations

import numpy as np

# dtype name -> (TensorType name, numpy dtype)
DTYPES = {
    "float32": ("FLOAT32", np.float32), "int8": ("INT8", np.int8), "uint8": ("UINT8", np.uint8),
    "int16": ("INT16", np.int16), "int32": ("INT32", np.int32), "int64": ("INT64", np.int64),
    "bool": ("BOOL", np.bool_),
}

# opname -> (options table name or None, default option values).  Defaults are written
# explicitly where the schema's default is not what a converter writes (strides 0 etc.).
_CONV = dict(padding="SAME", stride_w=1, stride_h=1, dilation_w_factor=1, dilation_h_factor=1,
             fused_activation_function="NONE")
_POOL = dict(padding="VALID", stride_w=1, stride_h=1, filter_width=1, filter_height=1,
             fused_activation_function="NONE")
_ACT = dict(fused_activation_function="NONE")
_RESIZE = dict(align_corners=False, half_pixel_centers=False)
OPTIONS = {
    "CONV_2D": ("Conv2DOptions", _CONV),
    "DEPTHWISE_CONV_2D": ("DepthwiseConv2DOptions", dict(_CONV, depth_multiplier=1)),
    "FULLY_CONNECTED": ("FullyConnectedOptions", dict(_ACT, keep_num_dims=False)),
    "TRANSPOSE_CONV": ("TransposeConvOptions", dict(padding="SAME", stride_w=1, stride_h=1)),
    "ADD": ("AddOptions", _ACT),
    "SUB": ("SubOptions", _ACT),
    "MUL": ("MulOptions", _ACT),
    "AVERAGE_POOL_2D": ("Pool2DOptions", _POOL),
    "MAX_POOL_2D": ("Pool2DOptions", _POOL),
    "MEAN": ("ReducerOptions", dict(keep_dims=False)),
    "SUM": ("ReducerOptions", dict(keep_dims=False)),
    "REDUCE_MAX": ("ReducerOptions", dict(keep_dims=False)),
    "RESHAPE": ("ReshapeOptions", {}),
    "SQUEEZE": ("SqueezeOptions", {}),
    "EXPAND_DIMS": ("ExpandDimsOptions", {}),
    "CONCATENATION": ("ConcatenationOptions", dict(axis=0, fused_activation_function="NONE")),
    "PAD": ("PadOptions", {}),
    "PADV2": ("PadV2Options", {}),
    "STRIDED_SLICE": ("StridedSliceOptions", dict(begin_mask=0, end_mask=0, ellipsis_mask=0,
                                                  new_axis_mask=0, shrink_axis_mask=0)),
    "SLICE": ("SliceOptions", {}),
    "SPLIT": ("SplitOptions", dict(num_splits=1)),
    "TRANSPOSE": ("TransposeOptions", {}),
    "RESIZE_NEAREST_NEIGHBOR": ("ResizeNearestNeighborOptions", _RESIZE),
    "RESIZE_BILINEAR": ("ResizeBilinearOptions", _RESIZE),
    "SOFTMAX": ("SoftmaxOptions", dict(beta=1.0)),
    "LOGISTIC": (None, {}),
    "TANH": (None, {}),
    "HARD_SWISH": ("HardSwishOptions", {}),
    "RELU": (None, {}),
    "RELU6": (None, {}),
    "RELU_N1_TO_1": (None, {}),
    "LEAKY_RELU": ("LeakyReluOptions", dict(alpha=0.2)),
    "PRELU": (None, {}),
    "QUANTIZE": ("QuantizeOptions", {}),
    "DEQUANTIZE": ("DequantizeOptions", {}),
    "MAXIMUM": ("MaximumMinimumOptions", {}),
    "MINIMUM": ("MaximumMinimumOptions", {}),
    "SHAPE": ("ShapeOptions", dict(out_type=2)),            # TensorType INT32
    "PACK": ("PackOptions", dict(values_count=1, axis=0)),
}

# Operator versions written for the int8 variants, as the TFLite converter writes them
# (tensorflow/lite/tools/versioning/op_version.cc) and as LiteRT's kernel registrations
# accept them (checked by tests/test_tflite_writer.py with the BUILTIN_REF resolver).
VERSIONS = {
    "CONV_2D": 3, "DEPTHWISE_CONV_2D": 3, "FULLY_CONNECTED": 4, "TRANSPOSE_CONV": 2,
    "ADD": 2, "SUB": 2, "MUL": 2, "AVERAGE_POOL_2D": 2, "MAX_POOL_2D": 2, "MEAN": 2,
    "SUM": 2, "REDUCE_MAX": 2, "RESHAPE": 1, "SQUEEZE": 1, "EXPAND_DIMS": 1,
    "CONCATENATION": 2, "PAD": 2, "PADV2": 2, "STRIDED_SLICE": 2, "SLICE": 2, "SPLIT": 2,
    "TRANSPOSE": 2, "RESIZE_NEAREST_NEIGHBOR": 2, "RESIZE_BILINEAR": 2, "SOFTMAX": 2,
    "LOGISTIC": 2, "TANH": 2, "HARD_SWISH": 1, "RELU": 2, "RELU6": 2, "RELU_N1_TO_1": 1,
    "LEAKY_RELU": 1, "PRELU": 1, "QUANTIZE": 1, "DEQUANTIZE": 2, "MAXIMUM": 2, "MINIMUM": 2,
}


def op_version(opname, inputs, options) -> int:
    """The version to write: VERSIONS[opname], bumped for the variants that need a newer
    kernel (as op_version.cc does): half-pixel-centers resizes (3), a TRANSPOSE_CONV with
    a bias (3), FULLY_CONNECTED with keep_num_dims (5), an int8 -> int8 QUANTIZE (2)."""
    v = VERSIONS.get(opname, 1)
    if opname in ("RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR") and options.get("half_pixel_centers"):
        v = max(v, 3)
    elif opname == "TRANSPOSE_CONV" and len(inputs) > 3 and inputs[3] is not None:
        v = max(v, 3)
    elif opname == "FULLY_CONNECTED" and options.get("keep_num_dims"):
        v = max(v, 5)
    elif opname == "QUANTIZE" and inputs and inputs[0] is not None and inputs[0].dtype != "float32":
        v = max(v, 2)
    return v
