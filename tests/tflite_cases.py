"""Small int8 .tflite models for the frontend tests, written with nnscons.frontends.
tflite_writer: one model per operator and attribute combination, with one input and one
output (binary operators read the input and a per-channel rescaled copy of it, so the two
operands carry different scales), random weights and per-channel scales.

CASES: {name: build(rng) -> (TfliteWriter, [input array in the model's dtype])}.
"""
from __future__ import annotations

import numpy as np

from nnscons.frontends.tflite_writer import TfliteWriter, bias_int32, quantize_per_channel


def rand_in(rng, shape, dtype="int8"):
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max + 1, size=shape, dtype=dtype)


def _i32(b, name, values):
    return b.const(name, np.asarray(values, dtype=np.int32))


def weights(b, rng, name, shape, axis, in_scale, per_channel=True):
    fan_in = int(np.prod(shape)) // shape[axis]
    wf = rng.normal(0, np.sqrt(2 / fan_in), size=shape)
    if per_channel:
        wq, ws = quantize_per_channel(wf, axis)
    else:
        s = np.float32(np.abs(wf).max() / 127)
        wq, ws = np.clip(np.round(wf / s), -127, 127).astype(np.int8), np.full(shape[axis], s, np.float32)
    w = b.const(f"{name}/w", wq, scale=ws if per_channel else [float(ws[0])], zero_point=0,
                quantized_dimension=axis)
    bias = b.const(f"{name}/b", bias_int32(rng.normal(0, 0.2, size=shape[axis]), in_scale, ws),
                   scale=in_scale * ws, zero_point=0)
    return w, bias


def conv(shape=(1, 9, 9, 3), cout=8, k=(3, 3), stride=(1, 1), dilation=(1, 1), padding="SAME",
         act="NONE", per_channel=True, in_q=(0.05, -3), out_q=(0.1, -20)):
    def build(rng):
        b = TfliteWriter()
        x = b.input("x", shape, *in_q)
        w, bias = weights(b, rng, "conv", (cout, k[0], k[1], shape[3]), 0, in_q[0], per_channel)
        eff = [(kk - 1) * d + 1 for kk, d in zip(k, dilation)]
        if padding == "SAME":
            oh, ow = (-(-shape[1] // stride[0]), -(-shape[2] // stride[1]))
        else:
            oh, ow = ((shape[1] - eff[0]) // stride[0] + 1, (shape[2] - eff[1]) // stride[1] + 1)
        b.output(b.op("CONV_2D", [x, w, bias], "y", (1, oh, ow, cout), *out_q,
                      options=dict(padding=padding, stride_h=stride[0], stride_w=stride[1],
                                   dilation_h_factor=dilation[0], dilation_w_factor=dilation[1],
                                   fused_activation_function=act)))
        return b, [rand_in(rng, shape)]
    return build


def depthwise(shape=(1, 8, 8, 4), mult=1, k=3, stride=1, padding="SAME", act="NONE", dilation=1):
    def build(rng):
        b = TfliteWriter()
        x = b.input("x", shape, 0.05, 2)
        n = shape[3] * mult
        w, bias = weights(b, rng, "dw", (1, k, k, n), 3, 0.05)
        eff = (k - 1) * dilation + 1
        oh = -(-shape[1] // stride) if padding == "SAME" else (shape[1] - eff) // stride + 1
        ow = -(-shape[2] // stride) if padding == "SAME" else (shape[2] - eff) // stride + 1
        b.output(b.op("DEPTHWISE_CONV_2D", [x, w, bias], "y", (1, oh, ow, n), 0.05, -128 if act != "NONE" else 3,
                      options=dict(padding=padding, depth_multiplier=mult, stride_h=stride, stride_w=stride,
                                   dilation_h_factor=dilation, dilation_w_factor=dilation,
                                   fused_activation_function=act)))
        return b, [rand_in(rng, shape)]
    return build


def fully_connected(shape=(1, 16), n_out=10, keep=False, act="NONE", bias=True):
    def build(rng):
        b = TfliteWriter()
        x = b.input("x", shape, 0.05, -1)
        w, bb = weights(b, rng, "fc", (n_out, shape[-1]), 0, 0.05)
        out = tuple(shape[:-1]) + (n_out,) if keep else (1, n_out)
        b.output(b.op("FULLY_CONNECTED", [x, w, bb if bias else None], "y", out, 0.1, 4,
                      options=dict(keep_num_dims=keep, fused_activation_function=act)))
        return b, [rand_in(rng, shape)]
    return build


def fc_residual(shape=(1, 3, 16)):
    """FULLY_CONNECTED over rows (keep_num_dims: a 1x1 conv under the double-precision
    rule) whose output an ADD sums with the input: the host fuses the add into it."""
    def build(rng):
        b = TfliteWriter()
        x = b.input("x", shape, 0.05, -1)
        w, bb = weights(b, rng, "fc", (shape[-1], shape[-1]), 0, 0.05)
        y = b.op("FULLY_CONNECTED", [x, w, bb], "y", shape, 0.1, 4, options=dict(keep_num_dims=True))
        b.output(b.op("ADD", [y, x], "z", shape, 0.12, 2))
        return b, [rand_in(rng, shape)]
    return build


def flatten_fc(shape=(1, 3, 4, 5), n_out=6):
    """RESHAPE of a spatial NHWC tensor to (1, HWC), then FULLY_CONNECTED: the flatten
    order is TFLite's (channels last), which the IR's layout must reproduce."""
    def build(rng):
        b = TfliteWriter()
        x = b.input("x", shape, 0.05, -1)
        n = int(np.prod(shape))
        r = b.op("RESHAPE", [x, _i32(b, "shape", [1, n])], "flat", (1, n), 0.05, -1,
                 options=dict(new_shape=[1, n]))
        w, bb = weights(b, rng, "fc", (n_out, n), 0, 0.05)
        b.output(b.op("FULLY_CONNECTED", [r, w, bb], "y", (1, n_out), 0.1, 4))
        return b, [rand_in(rng, shape)]
    return build


def fc_dynamic_reshape(n_in=12, rows=5, cols=8):
    """FULLY_CONNECTED, then RESHAPE to (1, rows, cols, 1) with the batch read back from the
    tensor (SHAPE -> STRIDED_SLICE -> PACK), as Keras's Reshape layer converts (MLPerf Tiny's
    anomaly detector in Silicon Labs' MLTK)."""
    def build(rng):
        b = TfliteWriter()
        x = b.input("x", (1, n_in), 0.05, -1)
        w, bb = weights(b, rng, "fc", (rows * cols, n_in), 0, 0.05)
        fc = b.op("FULLY_CONNECTED", [x, w, bb], "fc", (1, rows * cols), 0.1, 4)
        sh = b.op("SHAPE", [fc], "sh", (2,), out_dtype="int32")
        n = b.op("STRIDED_SLICE", [sh, _i32(b, "begin", [0]), _i32(b, "end", [1]),
                                   _i32(b, "strides", [1])], "n", (), out_dtype="int32",
                 options=dict(shrink_axis_mask=1))
        dims = [n] + [b.const(f"d{k}", np.int32(d)) for k, d in enumerate((rows, cols, 1))]
        packed = b.op("PACK", dims, "packed", (4,), out_dtype="int32",
                      options=dict(values_count=4, axis=0))
        b.output(b.op("RESHAPE", [fc, packed], "y", (1, rows, cols, 1), 0.1, 4))
        return b, [rand_in(rng, (1, n_in))]
    return build


def _rescaled(b, rng, x, shape, scale, zp):
    """A second operand from the input: a 1x1 depthwise conv (per-channel gains)."""
    c = shape[-1]
    w, bias = weights(b, rng, "pre", (1, 1, 1, c), 3, 0.04)
    return b.op("DEPTHWISE_CONV_2D", [x, w, bias], "x2", shape, scale, zp,
                options=dict(padding="VALID", depth_multiplier=1))


def binary(opname, act="NONE", shape=(1, 4, 4, 8), broadcast=False, out_q=(0.1, -2)):
    def build(rng):
        b = TfliteWriter()
        x = b.input("x", shape, 0.04, 3)
        y = _rescaled(b, rng, x, shape, 0.07, -10)
        if broadcast:    # per-channel second operand: a global mean of the rescaled copy
            y = b.op("MEAN", [y, _i32(b, "axes", [1, 2])], "m", (1, 1, 1, shape[3]), 0.07, -10,
                     options=dict(keep_dims=True))
        b.output(b.op(opname, [x, y], "z", shape, *out_q, options=dict(fused_activation_function=act)))
        return b, [rand_in(rng, shape)]
    return build


def pool(opname, padding, k, s, shape=(1, 9, 9, 4), act="NONE"):
    def build(rng):
        b = TfliteWriter()
        x = b.input("x", shape, 0.05, -7)
        oh = -(-shape[1] // s) if padding == "SAME" else (shape[1] - k) // s + 1
        ow = -(-shape[2] // s) if padding == "SAME" else (shape[2] - k) // s + 1
        b.output(b.op(opname, [x], "y", (1, oh, ow, shape[3]), 0.05, -7,
                      options=dict(padding=padding, filter_width=k, filter_height=k,
                                   stride_w=s, stride_h=s, fused_activation_function=act)))
        return b, [rand_in(rng, shape)]
    return build


def mean(shape=(1, 6, 6, 8), keep=True, out_q=(0.02, 1)):
    def build(rng):
        b = TfliteWriter()
        x = b.input("x", shape, 0.05, -7)
        out = (1, 1, 1, shape[3]) if keep else (1, shape[3])
        b.output(b.op("MEAN", [x, _i32(b, "axes", [1, 2])], "y", out, *out_q,
                      options=dict(keep_dims=keep)))
        return b, [rand_in(rng, shape)]
    return build


def reduce_spatial(opname, shape=(1, 6, 6, 8), keep=True, out_q=(0.05, -7)):
    def build(rng):
        b = TfliteWriter()
        x = b.input("x", shape, 0.05, -7)
        axes = [1, 2] if len(shape) == 4 else [1]
        out = ((1,) * (len(shape) - 1) + (shape[-1],)) if keep else (1, shape[-1])
        b.output(b.op(opname, [x, _i32(b, "axes", axes)], "y", out, *out_q, options=dict(keep_dims=keep)))
        return b, [rand_in(rng, shape)]
    return build


def prelu(per_channel=True):
    def build(rng):
        b = TfliteWriter()
        x = b.input("x", (1, 4, 4, 8), 0.05, -7)
        shape = (1, 1, 8) if per_channel else (1,)
        alpha = b.const("alpha", rng.integers(-60, 100, size=shape, dtype=np.int8), scale=0.005, zero_point=3)
        b.output(b.op("PRELU", [x, alpha], "y", (1, 4, 4, 8), 0.04, 20))
        return b, [rand_in(rng, (1, 4, 4, 8))]
    return build


def const_binary(opname, per_channel=True, const_first=False, act="NONE"):
    """An elementwise operator with a constant operand (per channel or one value)."""
    def build(rng):
        b = TfliteWriter()
        shape = (1, 4, 4, 8)
        x = b.input("x", shape, 0.04, 3)
        c = b.const("c", rand_in(rng, (1, 1, 1, 8) if per_channel else (1,)), scale=0.02, zero_point=-5)
        ins = [c, x] if const_first else [x, c]
        b.output(b.op(opname, ins, "z", shape, 0.1 if opname != "MUL" else 0.003, -2,
                      options=dict(fused_activation_function=act)))
        return b, [rand_in(rng, shape)]
    return build


def minmax(opname, per_channel=True, const_first=False, q=(0.04, 3)):
    """MAXIMUM/MINIMUM against a constant: the codes compared as they are."""
    def build(rng):
        b = TfliteWriter()
        shape = (1, 4, 4, 8)
        x = b.input("x", shape, 0.04, 3)
        c = b.const("c", rand_in(rng, (1, 1, 1, 8) if per_channel else (1,)), scale=q[0], zero_point=q[1])
        b.output(b.op(opname, [c, x] if const_first else [x, c], "z", shape, 0.04, 3))
        return b, [rand_in(rng, shape)]
    return build


def softmax4d(rng):
    b = TfliteWriter()
    x = b.input("x", (1, 1, 1, 10), 0.1, 3)
    b.output(b.op("SOFTMAX", [x], "y", (1, 1, 1, 10), 1 / 256, -128, options=dict(beta=0.7)))
    return b, [rand_in(rng, (1, 1, 1, 10))]


def unary(opname, out_q, options=None, shape=(1, 4, 4, 8), in_q=(0.04, 3)):
    def build(rng):
        b = TfliteWriter()
        x = b.input("x", shape, *in_q)
        b.output(b.op(opname, [x], "y", shape, *out_q, options=options))
        return b, [rand_in(rng, shape)]
    return build


def moves(opname, in_shape, out_shape, consts=(), options=None, q=(0.05, -7)):
    """A data movement whose constant operands are int32 tensors (values given)."""
    def build(rng):
        b = TfliteWriter()
        x = b.input("x", in_shape, *q)
        ins = [x] + [_i32(b, f"c{i}", v) for i, v in enumerate(consts)]
        b.output(b.op(opname, ins, "y", out_shape, *q, options=options))
        return b, [rand_in(rng, in_shape)]
    return build


def quantize_io(dtype="int8"):
    """float input -> QUANTIZE -> conv -> DEQUANTIZE -> float output; uint8: the input
    quantized to uint8, then requantized to int8 by a second QUANTIZE."""
    def build(rng):
        b = TfliteWriter()
        x = b.input("x", (1, 6, 6, 3), dtype="float32")
        q = b.op("QUANTIZE", [x], "xq", (1, 6, 6, 3), 0.02, 5 if dtype == "int8" else 133, out_dtype=dtype)
        if dtype == "uint8":
            q = b.op("QUANTIZE", [q], "xq8", (1, 6, 6, 3), 0.02, 5, out_dtype="int8")
        w, bias = weights(b, rng, "conv", (4, 3, 3, 3), 0, 0.02)
        y = b.op("CONV_2D", [q, w, bias], "yq", (1, 6, 6, 4), 0.05, -3, options=dict(padding="SAME"))
        b.output(b.op("DEQUANTIZE", [y], "y", (1, 6, 6, 4)))
        return b, [rng.normal(size=(1, 6, 6, 3)).astype(np.float32)]
    return build


def split_concat(rng):
    """SPLIT into three along the channels, the parts concatenated back in another order."""
    b = TfliteWriter()
    axis = b.const("axis", np.array(3, dtype=np.int32))
    x = b.input("x", (1, 4, 4, 6), 0.05, -7)
    parts = b.op("SPLIT", [axis, x], ["p0", "p1", "p2"], [(1, 4, 4, 2)] * 3, 0.05, -7,
                 options=dict(num_splits=3))
    b.output(b.op("CONCATENATION", [parts[2], parts[0], parts[1]], "y", (1, 4, 4, 6), 0.05, -7,
                  options=dict(axis=3)))
    return b, [rand_in(rng, (1, 4, 4, 6))]


def conv1d(rng):
    """A 1-D convolution as converters write it: EXPAND_DIMS, CONV_2D, SQUEEZE."""
    b = TfliteWriter()
    x = b.input("x", (1, 20, 4), 0.05, 1)
    e = b.op("EXPAND_DIMS", [x, _i32(b, "axis", [1])], "e", (1, 1, 20, 4), 0.05, 1)
    w, bias = weights(b, rng, "conv", (6, 1, 3, 4), 0, 0.05)
    c = b.op("CONV_2D", [e, w, bias], "c", (1, 1, 20, 6), 0.1, -5, options=dict(padding="SAME"))
    b.output(b.op("SQUEEZE", [c], "y", (1, 20, 6), 0.1, -5, options=dict(squeeze_dims=[1])))
    return b, [rand_in(rng, (1, 20, 4))]


def nchw_transpose(rng):
    """A PyTorch export's NCHW input: TRANSPOSE to NHWC, conv, TRANSPOSE back."""
    b = TfliteWriter()
    x = b.input("x", (1, 3, 8, 8), 0.05, 1)
    t = b.op("TRANSPOSE", [x, _i32(b, "perm", [0, 2, 3, 1])], "t", (1, 8, 8, 3), 0.05, 1)
    w, bias = weights(b, rng, "conv", (5, 3, 3, 3), 0, 0.05)
    c = b.op("CONV_2D", [t, w, bias], "c", (1, 8, 8, 5), 0.1, -5,
             options=dict(padding="SAME", fused_activation_function="RELU"))
    b.output(b.op("TRANSPOSE", [c, _i32(b, "perm2", [0, 3, 1, 2])], "y", (1, 5, 8, 8), 0.1, -5))
    return b, [rand_in(rng, (1, 3, 8, 8))]


def transpose_conv(in_hw=(4, 4), out_hw=(8, 8), k=3, stride=2, padding="SAME", bias=True, cin=6, cout=4):
    def build(rng):
        b = TfliteWriter()
        x = b.input("x", (1, *in_hw, cin), 0.05, 1)
        oshape = _i32(b, "oshape", [1, *out_hw, cout])
        w, bb = weights(b, rng, "tconv", (cout, k, k, cin), 0, 0.05)
        b.output(b.op("TRANSPOSE_CONV", [oshape, w, x, bb if bias else None], "y", (1, *out_hw, cout), 0.1, 0,
                      options=dict(padding=padding, stride_w=stride, stride_h=stride)))
        return b, [rand_in(rng, (1, *in_hw, cin))]
    return build


CASES = {
    "transpose_conv/same_stride2": transpose_conv(),
    "transpose_conv/valid_stride2_no_bias": transpose_conv(out_hw=(9, 9), padding="VALID", bias=False),
    "transpose_conv/same_stride1_k5": transpose_conv(out_hw=(4, 4), k=5, stride=1),
    "conv/same_stride2_relu": conv(stride=(2, 2), act="RELU"),
    "conv/valid_dilated": conv(dilation=(2, 2), padding="VALID", cout=4),
    "conv/relu6_per_tensor": conv(act="RELU6", per_channel=False, k=(1, 1)),
    "conv/relu_n1_to_1_5x3": conv(act="RELU_N1_TO_1", k=(5, 3), stride=(1, 2), out_q=(0.01, 0)),
    "conv/grouped": conv(shape=(1, 6, 6, 4), k=(3, 3)),
    "depthwise/m1_relu6": depthwise(act="RELU6"),
    "depthwise/m2_stride2_valid": depthwise(mult=2, stride=2, padding="VALID"),
    "depthwise/m3_dilated": depthwise(shape=(1, 9, 9, 2), mult=3, dilation=2),
    "fc": fully_connected(act="RELU"),
    "fc/no_bias": fully_connected(bias=False),
    "fc/keep_num_dims_rank3": fully_connected(shape=(1, 3, 16), keep=True),
    "fc/keep_num_dims_rank4": fully_connected(shape=(1, 1, 1, 16), keep=True),
    "fc/after_flatten": flatten_fc(),
    "fc/keep_num_dims_residual_add": fc_residual(),
    "add": binary("ADD"),
    "add/relu": binary("ADD", "RELU"),
    "sub": binary("SUB"),
    "sub/relu6": binary("SUB", "RELU6", out_q=(0.05, -100)),
    "mul": binary("MUL", out_q=(0.3, -2)),
    "mul/per_channel": binary("MUL", broadcast=True, out_q=(0.3, -2)),
    "avgpool/valid": pool("AVERAGE_POOL_2D", "VALID", 3, 2),
    "avgpool/same": pool("AVERAGE_POOL_2D", "SAME", 3, 2),
    "avgpool/same_relu": pool("AVERAGE_POOL_2D", "SAME", 2, 1, act="RELU"),
    "maxpool/same": pool("MAX_POOL_2D", "SAME", 2, 2),
    "maxpool/valid_relu6": pool("MAX_POOL_2D", "VALID", 3, 1, act="RELU6"),
    "mean/keep_dims": mean(),
    "mean/no_keep_dims": mean(keep=False),
    "mean/same_params": mean(out_q=(0.05, -7)),
    "mean/rank3": reduce_spatial("MEAN", shape=(1, 12, 5), out_q=(0.03, 2)),
    "mean/rank3_no_keep": reduce_spatial("MEAN", shape=(1, 12, 5), keep=False, out_q=(0.03, 2)),
    "reduce_max/keep": reduce_spatial("REDUCE_MAX"),
    "reduce_max/no_keep": reduce_spatial("REDUCE_MAX", keep=False),
    "softmax/rank4_beta": softmax4d,
    "softmax": unary("SOFTMAX", (1 / 256, -128), dict(beta=1.0), shape=(1, 10), in_q=(0.1, 0)),
    "logistic": unary("LOGISTIC", (1 / 256, -128)),
    "tanh": unary("TANH", (1 / 128, 0)),
    "hard_swish": unary("HARD_SWISH", (0.03, -100)),
    "relu": unary("RELU", (0.02, -128)),
    "relu6": unary("RELU6", (6 / 255, -128)),
    "relu_n1_to_1": unary("RELU_N1_TO_1", (2 / 255, 0)),
    "leaky_relu": unary("LEAKY_RELU", (0.03, 10), dict(alpha=0.1)),
    "leaky_relu/negative_alpha": unary("LEAKY_RELU", (0.03, 10), dict(alpha=-0.3)),
    "prelu/per_channel": prelu(),
    "prelu/one_value": prelu(per_channel=False),
    "add/const_per_channel": const_binary("ADD"),
    "sub/const_first_relu": const_binary("SUB", per_channel=False, const_first=True, act="RELU"),
    "mul/const_per_channel": const_binary("MUL"),
    "maximum/const_per_channel": minmax("MAXIMUM"),
    "minimum/const_first_other_scale": minmax("MINIMUM", per_channel=False, const_first=True, q=(0.02, -5)),
    "reshape/flatten": moves("RESHAPE", (1, 2, 2, 8), (1, 32), consts=([1, 32],), options=dict(new_shape=[1, 32])),
    "reshape/dynamic_batch": fc_dynamic_reshape(),
    "reshape/rank3": moves("RESHAPE", (1, 2, 2, 8), (1, 4, 8), consts=([1, 4, 8],), options=dict(new_shape=[1, 4, 8])),
    "squeeze": moves("SQUEEZE", (1, 1, 1, 16), (1, 16), options=dict(squeeze_dims=[1, 2])),
    "expand_dims": moves("EXPAND_DIMS", (1, 16), (1, 1, 16), consts=([1],)),
    "pad": moves("PAD", (1, 4, 4, 3), (1, 7, 7, 3), consts=([[0, 0], [1, 2], [2, 1], [0, 0]],)),
    "pad/channels": moves("PAD", (1, 4, 4, 3), (1, 4, 4, 5), consts=([[0, 0], [0, 0], [0, 0], [1, 1]],)),
    "transpose": moves("TRANSPOSE", (1, 4, 5, 6), (1, 6, 4, 5), consts=([0, 3, 1, 2],)),
    "slice": moves("SLICE", (1, 8, 8, 6), (1, 4, 7, 3), consts=([0, 2, 1, 0], [1, 4, -1, 3])),
    "strided_slice": moves("STRIDED_SLICE", (1, 8, 8, 6), (1, 3, 3, 4),
                           consts=([0, 1, 0, 2], [1, 7, 8, 6], [1, 2, 3, 1]),
                           options=dict(begin_mask=0b0100, end_mask=0b0100)),
    "strided_slice/shrink": moves("STRIDED_SLICE", (1, 4, 4, 6), (1, 4, 6),
                                  consts=([0, 2, 0, 0], [1, 3, 4, 6], [1, 1, 1, 1]),
                                  options=dict(shrink_axis_mask=0b0010)),
    "resize_nearest": moves("RESIZE_NEAREST_NEIGHBOR", (1, 4, 4, 3), (1, 8, 8, 3), consts=([8, 8],)),
    "resize_nearest/half_pixel": moves("RESIZE_NEAREST_NEIGHBOR", (1, 4, 5, 3), (1, 7, 9, 3), consts=([7, 9],),
                                       options=dict(half_pixel_centers=True)),
    "resize_nearest/align_corners": moves("RESIZE_NEAREST_NEIGHBOR", (1, 4, 5, 3), (1, 7, 9, 3), consts=([7, 9],),
                                          options=dict(align_corners=True)),
    "resize_bilinear": moves("RESIZE_BILINEAR", (1, 4, 5, 3), (1, 7, 9, 3), consts=([7, 9],)),
    "resize_bilinear/align_corners": moves("RESIZE_BILINEAR", (1, 4, 5, 3), (1, 8, 8, 3), consts=([8, 8],),
                                           options=dict(align_corners=True)),
    "resize_bilinear/half_pixel": moves("RESIZE_BILINEAR", (1, 4, 5, 3), (1, 7, 9, 3), consts=([7, 9],),
                                        options=dict(half_pixel_centers=True)),
    "resize_bilinear/down_half_pixel": moves("RESIZE_BILINEAR", (1, 9, 8, 4), (1, 4, 3, 4), consts=([4, 3],),
                                             options=dict(half_pixel_centers=True)),
    "split_concat": split_concat,
    "conv1d": conv1d,
    "nchw_transpose": nchw_transpose,
    "quantize_dequantize": quantize_io(),
    "quantize_dequantize/uint8": quantize_io("uint8"),
}
