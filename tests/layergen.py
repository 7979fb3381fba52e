"""Varied single layers and small blocks as exporters write them (torch.onnx, tf2onnx, keras2onnx
shapes and attribute habits; opsets 11 to 21), each quantized by onnxruntime's quantize_static
in QDQ and QOperator form, uint8 and int8, per-channel on and off: the held-out kind of graph
issue 23's acceptance uses. torch is not installed, so the graphs are written with onnx.helper
the way the exporters spell them (Clip's min/max as inputs, Pad's pads as an input, Split's
sizes as an attribute before opset 13 and an input after, Resize's empty roi, Reshape's shape
as an int64 initializer with -1, the channel shuffle as Reshape/Transpose/Reshape, ...).

    python tests/layergen.py [--filter TEXT] [--variants all|quick]
prints per graph and variant whether it imports and whether nnscons's integer reference
matches the float64 evaluation of the quantized graph (export/ort_oracle.py) within 1 LSB on
>= 99% of the outputs, and a summary. tests/test_layergen.py runs the same check."""
from __future__ import annotations

import os
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


class G:
    """A graph under construction: nodes, initializers, a counter for names."""

    def __init__(self, seed, opset):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits, self.opset, self.k = [], [], opset, 0

    def name(self, stem):
        self.k += 1
        return f"{stem}{self.k}"

    def const(self, value, dtype=np.float32, stem="c"):
        n = self.name(stem)
        self.inits.append(numpy_helper.from_array(np.asarray(value, dtype), n))
        return n

    def weight(self, shape, s=None):
        fan_in = int(np.prod(shape[1:])) or 1
        return self.const(self.rng.normal(0, s or 1.0 / np.sqrt(fan_in), shape))

    def node(self, op, inputs, n_out=1, **attrs):
        outs = [self.name(op.lower()) for _ in range(n_out)]
        self.nodes.append(helper.make_node(op, inputs, outs, name=self.name(op + "_"), **attrs))
        return outs[0] if n_out == 1 else outs

    # ---- layers as exporters write them ----
    def conv(self, x, cin, cout, k=3, stride=1, pad=None, group=1, dilation=1, bias=True):
        pad = (k // 2) * dilation if pad is None else pad
        ins = [x, self.weight((cout, cin // group, k, k))] + ([self.const(self.rng.normal(0, 0.1, cout))] if bias else [])
        return self.node("Conv", ins, kernel_shape=[k, k], strides=[stride] * 2, pads=[pad] * 4,
                         group=group, dilations=[dilation] * 2)

    def bn(self, x, c):
        return self.node("BatchNormalization", [x, self.const(self.rng.uniform(0.5, 1.5, c)),
                                                self.const(self.rng.normal(0, 0.1, c)),
                                                self.const(self.rng.normal(0, 0.1, c)),
                                                self.const(self.rng.uniform(0.5, 1.5, c))], epsilon=1e-5)

    def clip(self, x, lo=0.0, hi=6.0):
        return self.node("Clip", [x, self.const(lo), self.const(hi)])      # torch: min/max as inputs

    def hardswish(self, x):
        if self.opset >= 14:
            return self.node("HardSwish", [x])
        return self.node("Mul", [x, self.node("HardSigmoid", [x], alpha=1 / 6, beta=0.5)])

    def reshape(self, x, shape):
        return self.node("Reshape", [x, self.const(shape, np.int64)])

    def split(self, x, sizes, axis=1):
        if self.opset >= 13:
            return self.node("Split", [x, self.const(sizes, np.int64)], n_out=len(sizes), axis=axis)
        return self.node("Split", [x], n_out=len(sizes), axis=axis, split=list(sizes))

    def pad(self, x, pads, mode="constant"):
        if mode == "constant":
            return self.node("Pad", [x, self.const(pads, np.int64), self.const(0.0)], mode=mode)
        return self.node("Pad", [x, self.const(pads, np.int64)], mode=mode)

    def resize_nearest(self, x, scale=2):
        roi = self.const([], np.float32)
        return self.node("Resize", [x, roi, self.const([1, 1, scale, scale])], mode="nearest",
                         coordinate_transformation_mode="asymmetric", nearest_mode="floor")

    def gemm_tail(self, x, c, n, alpha=1.0, beta=1.0, trans_b=1, flatten=True):
        x = self.node("Flatten", [x], axis=1) if flatten else self.reshape(x, [1, -1])
        w = self.weight((n, c) if trans_b else (c, n))
        return self.node("Gemm", [x, w, self.const(self.rng.normal(0, 0.1, n))], alpha=alpha, beta=beta,
                         transB=trans_b)


def _pat(fn, shape=(1, 8, 12, 12), opsets=(11, 13, 17, 21)):
    fn.shape, fn.opsets = shape, opsets
    return fn


def conv_bias(g, x, c):
    return g.conv(x, c, 16)


def conv_no_bias_bn_relu(g, x, c):
    return g.node("Relu", [g.bn(g.conv(x, c, 16, bias=False), 16)])


def conv_stride2_pad0(g, x, c):
    return g.conv(x, c, 12, k=3, stride=2, pad=0)


def group_conv(g, x, c):
    return g.node("Relu", [g.conv(x, c, 16, group=2)])


def depthwise_relu6(g, x, c):
    return g.clip(g.conv(x, c, c, group=c, bias=False))


def dilated_conv(g, x, c):
    return g.conv(x, c, 8, dilation=2)


def conv_1x1_hardswish(g, x, c):
    return g.hardswish(g.conv(x, c, 16, k=1))


def conv_hardsigmoid(g, x, c):
    return g.node("HardSigmoid", [g.conv(x, c, 8)], alpha=0.2, beta=0.5)


def conv_prelu(g, x, c):
    return g.node("PRelu", [g.conv(x, c, 8), g.const(g.rng.uniform(0.05, 0.3, (8, 1, 1)))])


def conv_leakyrelu(g, x, c):
    return g.node("LeakyRelu", [g.conv(x, c, 8)], alpha=0.1)


def conv_silu(g, x, c):
    y = g.conv(x, c, 8)
    return g.node("Mul", [y, g.node("Sigmoid", [y])])


def gemm_flatten(g, x, c):
    return g.gemm_tail(g.node("GlobalAveragePool", [x]), c, 10)


def gemm_alpha_beta(g, x, c):
    return g.gemm_tail(g.node("GlobalAveragePool", [x]), c, 10, alpha=0.5, beta=2.0)


def gemm_no_transb_reshape(g, x, c):
    return g.gemm_tail(g.node("GlobalAveragePool", [x]), c, 10, trans_b=0, flatten=False)


def linear_on_flattened_map(g, x, c):
    y = g.node("MaxPool", [x], kernel_shape=[2, 2], strides=[2, 2])
    return g.gemm_tail(y, c * 36, 10)


def softmax_tail(g, x, c):
    return g.node("Softmax", [g.gemm_tail(g.node("GlobalAveragePool", [x]), c, 10)], axis=1 if g.opset < 13 else -1)


def softmax_channels(g, x, c):
    return g.node("Softmax", [g.conv(x, c, 8, k=1)], axis=1)


def pad_constant_conv(g, x, c):
    return g.conv(g.pad(x, [0, 0, 1, 1, 0, 0, 1, 1]), c, 8, pad=0)


def pad_reflect_conv(g, x, c):
    return g.conv(g.pad(x, [0, 0, 1, 1, 0, 0, 1, 1], "reflect"), c, 8, pad=0)


def pad_edge_asym(g, x, c):
    return g.conv(g.pad(x, [0, 0, 0, 0, 0, 0, 1, 1], "edge"), c, 8, pad=0)


def conv_transpose(g, x, c):
    w = g.weight((c, 8, 4, 4))
    return g.node("ConvTranspose", [x, w, g.const(g.rng.normal(0, 0.1, 8))], strides=[2, 2], pads=[1, 1, 1, 1])


def conv_transpose_no_bias_out_pad(g, x, c):
    w = g.weight((c, 8, 3, 3))
    return g.node("ConvTranspose", [x, w], strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1])


def resize_nearest(g, x, c):
    return g.conv(g.resize_nearest(g.conv(x, c, 8)), 8, 8)


def concat_branches(g, x, c):
    a = g.node("Relu", [g.conv(x, c, 8, k=1)])
    b = g.node("Relu", [g.conv(x, c, 8, k=3)])
    return g.node("Concat", [a, b], axis=1)


def split_sizes(g, x, c):
    a, b = g.split(g.conv(x, c, 12), [4, 8])
    return g.node("Concat", [g.node("Relu", [a]), g.conv(b, 8, 4)], axis=1)


def glu(g, x, c):
    a, b = g.split(g.conv(x, c, 16), [8, 8])
    return g.node("Mul", [a, g.node("Sigmoid", [b])])


def channel_shuffle(g, x, c):
    y = g.conv(x, c, 8, k=1)
    y = g.reshape(y, [1, 2, 4, 12, 12])
    y = g.node("Transpose", [y], perm=[0, 2, 1, 3, 4])
    return g.conv(g.reshape(y, [1, 8, 12, 12]), 8, 8, group=2)


def residual_block(g, x, c):
    y = g.node("Relu", [g.conv(x, c, c)])
    return g.node("Relu", [g.node("Add", [g.conv(y, c, c), x])])


def maxpool_ceil(g, x, c):
    return g.node("MaxPool", [g.conv(x, c, 8)], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)


def avgpool_pad_exclude(g, x, c):
    return g.node("AveragePool", [g.conv(x, c, 8)], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
                  count_include_pad=0)


def avgpool_pad_include(g, x, c):
    return g.node("AveragePool", [g.conv(x, c, 8)], kernel_shape=[3, 3], strides=[1, 1], pads=[1, 1, 1, 1],
                  count_include_pad=1)


def squeeze_excite(g, x, c):
    """MobileNetV3's SE: global pool, 1x1 reduce, ReLU, 1x1 expand, HardSigmoid, scale."""
    y = g.conv(x, c, 16)
    s = g.node("GlobalAveragePool", [y])
    s = g.node("Relu", [g.conv(s, 16, 4, k=1)])
    s = g.node("HardSigmoid", [g.conv(s, 4, 16, k=1)], alpha=1 / 6, beta=0.5)
    return g.node("Mul", [y, s])


def reduce_mean_tail(g, x, c):
    y = g.node("Relu", [g.conv(x, c, 8)])
    if g.opset >= 18:
        return g.node("ReduceMean", [y, g.const([2, 3], np.int64)], keepdims=0)
    return g.node("ReduceMean", [y], axes=[2, 3], keepdims=0)


def mobilenetv3_block(g, x, c):
    """Inverted residual with hard-swish and SE, then the classifier head's pool/hardswish/gemm."""
    y = g.hardswish(g.conv(x, c, 24, k=1, bias=False))
    y = g.hardswish(g.conv(y, 24, 24, group=24))
    s = g.node("GlobalAveragePool", [y])
    s = g.node("Relu", [g.conv(s, 24, 8, k=1)])
    s = g.node("HardSigmoid", [g.conv(s, 8, 24, k=1)], alpha=1 / 6, beta=0.5)
    y = g.conv(g.node("Mul", [y, s]), 24, c, k=1)
    y = g.node("Add", [y, x])
    p = g.node("GlobalAveragePool", [g.hardswish(g.conv(y, c, 16, k=1))])
    p = g.hardswish(g.conv(p, 16, 32, k=1))
    return g.gemm_tail(p, 32, 10)


def mobilenetv3_bn_block(g, x, c):
    """As an unfused export has it (onnxruntime's quantizer without pre-processing leaves the
    BatchNormalization -> HardSwish islands in float): conv, BN, hard-swish, SE, pool, head."""
    y = g.hardswish(g.bn(g.conv(x, c, 24, k=1, bias=False), 24))
    y = g.hardswish(g.bn(g.conv(y, 24, 24, group=24, bias=False), 24))
    s = g.node("GlobalAveragePool", [y])
    s = g.node("Relu", [g.conv(s, 24, 8, k=1)])
    s = g.node("HardSigmoid", [g.conv(s, 8, 24, k=1)], alpha=1 / 6, beta=0.5)
    y = g.bn(g.conv(g.node("Mul", [y, s]), 24, c, k=1, bias=False), c)
    y = g.node("Add", [y, x])
    p = g.node("GlobalAveragePool", [g.hardswish(g.bn(g.conv(y, c, 16, k=1, bias=False), 16))])
    p = g.hardswish(g.conv(p, 16, 32, k=1))
    return g.gemm_tail(p, 32, 10)


# ---- what torchvision / timm / tf2onnx exports also emit ----
def conv_bias_bn_relu6(g, x, c):
    """Conv with its own bias, an unfused BatchNormalization, ReLU6 as Clip(0, 6)."""
    return g.clip(g.bn(g.conv(x, c, 16), 16))


def clip_max_only(g, x, c):
    """Clip with only max given (torch's clamp(max=)): min is the empty name."""
    return g.node("Clip", [g.conv(x, c, 8), "", g.const(6.0)])


def clip_min_only(g, x, c):
    return g.node("Clip", [g.conv(x, c, 8), g.const(-1.0)])


def global_maxpool(g, x, c):
    return g.gemm_tail(g.node("GlobalMaxPool", [g.node("Relu", [g.conv(x, c, 16)])]), 16, 10)


def squeeze_gemm_unsqueeze(g, x, c):
    """timm's head: pool, Squeeze(2, 3), Gemm, Unsqueeze back to (1, N, 1, 1)."""
    p = g.node("GlobalAveragePool", [g.node("Relu", [g.conv(x, c, 16)])])
    if g.opset >= 13:
        s = g.node("Squeeze", [p, g.const([2, 3], np.int64)])
    else:
        s = g.node("Squeeze", [p], axes=[2, 3])
    y = g.node("Gemm", [s, g.weight((10, 16)), g.const(g.rng.normal(0, 0.1, 10))], transB=1)
    if g.opset >= 13:
        return g.node("Unsqueeze", [y, g.const([2, 3], np.int64)])
    return g.node("Unsqueeze", [y], axes=[2, 3])


def shufflenet_unit(g, x, c):
    """ShuffleNetV2's unit: split the channels, a branch on one half, concat, shuffle."""
    a, b = g.split(g.conv(x, c, 16, k=1), [8, 8])
    b = g.node("Relu", [g.conv(g.conv(b, 8, 8, group=8, bias=False), 8, 8, k=1)])
    y = g.node("Concat", [a, b], axis=1)
    y = g.reshape(y, [1, 2, 8, 12, 12])
    y = g.node("Transpose", [y], perm=[0, 2, 1, 3, 4])
    return g.reshape(y, [1, 16, 12, 12])


def concat_axis_minus3(g, x, c):
    return g.node("Concat", [g.conv(x, c, 8, k=1), g.node("Relu", [g.conv(x, c, 4)])], axis=-3)


def concat_axis_minus1(g, x, c):
    return g.node("Concat", [g.conv(x, c, 8, k=1), g.node("Relu", [g.conv(x, c, 8)])], axis=-1)


def where_mask(g, x, c):
    """Where with a constant mask (an attention mask / a masked fill as torch exports it)."""
    y = g.conv(x, c, 8)
    mask = g.const(g.rng.uniform(size=(1, 1, 12, 12)) > 0.3, np.bool_)
    return g.node("Where", [mask, y, g.const(np.full((1,), -0.5, np.float32))])


def expand_mul(g, x, c):
    """A per-channel scale expanded to the map (tf2onnx's broadcasting spelled out)."""
    y = g.conv(x, c, 8)
    s = g.node("Sigmoid", [g.node("GlobalAveragePool", [y])])
    return g.node("Mul", [y, g.node("Expand", [s, g.const([1, 8, 12, 12], np.int64)])])


def slice_steps(g, x, c):
    y = g.conv(x, c, 8)
    if g.opset >= 10:
        return g.node("Slice", [y, g.const([0, 1], np.int64), g.const([12, 12], np.int64),
                                g.const([2, 3], np.int64), g.const([2, 2], np.int64)])
    return g.node("Slice", [y], starts=[0, 1], ends=[12, 12], axes=[2, 3])


def gather_channel(g, x, c):
    """Gather of a constant index along the channels (a channel pick / reorder)."""
    return g.node("Gather", [g.conv(x, c, 8), g.const([3, 0, 7, 1], np.int64)], axis=1)


def gather_scalar_index(g, x, c):
    """Gather of a scalar index removes the axis: (1, 8, 12, 12) -> (1, 12, 12)... then back."""
    y = g.node("Gather", [g.conv(x, c, 8), g.const(2, np.int64)], axis=1)
    if g.opset >= 13:
        return g.node("Unsqueeze", [y, g.const([1], np.int64)])
    return g.node("Unsqueeze", [y], axes=[1])


def gather_scalar_conv(g, x, c):
    """A rank-3 tensor (Gather of a scalar index) read by a conv: not a move chain."""
    y = g.node("Gather", [g.conv(x, c, 8), g.const(2, np.int64)], axis=1)
    return g.conv(g.reshape(y, [1, 1, 12, 12]), 1, 4)


def gather_scalar_output(g, x, c):
    """A rank-3 network output (1, H, W): one channel picked by a scalar Gather."""
    return g.node("Gather", [g.conv(x, c, 8), g.const(2, np.int64)], axis=1)


def tanh_island(g, x, c):
    return g.conv(g.node("Tanh", [g.conv(x, c, 8)]), 8, 8, k=1)


def sigmoid_island(g, x, c):
    return g.conv(g.node("Sigmoid", [g.conv(x, c, 8)]), 8, 8, k=1)


def gelu_erf(g, x, c):
    """GELU as torch exports it below opset 20: x * 0.5 * (1 + Erf(x / sqrt(2)))."""
    y = g.conv(x, c, 8)
    e = g.node("Erf", [g.node("Div", [y, g.const(np.sqrt(2.0))])])
    return g.node("Mul", [g.node("Mul", [y, g.node("Add", [e, g.const(1.0)])]), g.const(0.5)])


def gelu_tanh(g, x, c):
    """GELU's tanh approximation as timm / HF export it."""
    y = g.conv(x, c, 8)
    cube = g.node("Mul", [g.node("Mul", [y, y]), y])
    inner = g.node("Mul", [g.node("Add", [y, g.node("Mul", [cube, g.const(0.044715)])]),
                           g.const(np.sqrt(2.0 / np.pi))])
    return g.node("Mul", [g.node("Mul", [y, g.const(0.5)]), g.node("Add", [g.node("Tanh", [inner]), g.const(1.0)])])


def reduce_mean_channels(g, x, c):
    """CBAM's spatial attention input: the mean over the channels, keepdims=1."""
    y = g.node("Relu", [g.conv(x, c, 8)])
    if g.opset >= 18:
        m = g.node("ReduceMean", [y, g.const([1], np.int64)], keepdims=1)
    else:
        m = g.node("ReduceMean", [y], axes=[1], keepdims=1)
    return g.node("Mul", [y, g.node("Sigmoid", [m])])


def matmul_add_tail(g, x, c):
    """tf2onnx's / torch's Linear without Gemm: Flatten, MatMul by a constant, Add the bias."""
    f = g.node("Flatten", [g.node("GlobalAveragePool", [g.node("Relu", [g.conv(x, c, 16)])])], axis=1)
    return g.node("Add", [g.node("MatMul", [f, g.weight((16, 10))]), g.const(g.rng.normal(0, 0.1, 10))])


def reshape_zero_dim(g, x, c):
    """Reshape with 0 (keep the batch) and -1, torch's x.view(x.size(0), -1)."""
    return g.gemm_tail(g.reshape(g.node("MaxPool", [g.conv(x, c, 4)], kernel_shape=[2, 2], strides=[2, 2]),
                                 [0, -1]), 144, 10, flatten=False)


def dynamic_flatten(g, x, c):
    """torch's flatten with a traced batch: Shape, Gather(0), Unsqueeze, Concat([-1]), Reshape."""
    y = g.node("GlobalAveragePool", [g.node("Relu", [g.conv(x, c, 16)])])
    n = g.node("Gather", [g.node("Shape", [y]), g.const(0, np.int64)], axis=0)
    n = g.node("Unsqueeze", [n, g.const([0], np.int64)]) if g.opset >= 13 else g.node("Unsqueeze", [n], axes=[0])
    shape = g.node("Concat", [n, g.const([-1], np.int64)], axis=0)
    f = g.node("Reshape", [y, shape])
    return g.node("Gemm", [f, g.weight((10, 16)), g.const(g.rng.normal(0, 0.1, 10))], transB=1)


def cast_identity(g, x, c):
    """tf2onnx's no-op Cast to float and Identity nodes between layers."""
    y = g.node("Identity", [g.node("Cast", [g.conv(x, c, 8)], to=TensorProto.FLOAT)])
    return g.conv(g.node("Relu", [y]), 8, 8)


def nhwc_transposes(g, x, c):
    """tf2onnx's layout: an NHWC input transposed to NCHW, the result transposed back."""
    y = g.node("Transpose", [x], perm=[0, 3, 1, 2])
    y = g.node("Relu", [g.conv(y, 8, 8)])
    return g.node("Transpose", [y], perm=[0, 2, 3, 1])


def conv_same_upper(g, x, c):
    """tf2onnx's 'SAME' padding: auto_pad SAME_UPPER on a stride-2 conv and max pool."""
    w = g.weight((8, c, 3, 3))
    y = g.node("Conv", [x, w, g.const(g.rng.normal(0, 0.1, 8))], kernel_shape=[3, 3], strides=[2, 2],
               auto_pad="SAME_UPPER")
    return g.node("MaxPool", [g.node("Relu", [y])], kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER")


def pixel_shuffle(g, x, c):
    """ESPCN's upscaler: conv to 4x channels, DepthToSpace (CRD as torch's PixelShuffle)."""
    return g.node("DepthToSpace", [g.conv(x, c, 16)], blocksize=2, mode="CRD")


def split_equal_three(g, x, c):
    """Split into equal parts without sizes (opset 18: num_outputs), summed back."""
    y = g.conv(x, c, 12)
    if g.opset >= 18:
        a, b, d = g.node("Split", [y], n_out=3, axis=1, num_outputs=3)
    else:
        a, b, d = g.node("Split", [y], n_out=3, axis=1)
    return g.node("Sum", [a, g.node("Relu", [b]), d])


def logsoftmax_tail(g, x, c):
    return g.node("LogSoftmax", [g.gemm_tail(g.node("GlobalAveragePool", [x]), c, 10)], axis=-1 if g.opset >= 13 else 1)


def layernorm_channels_last(g, x, c):
    """A ConvNeXt-style LayerNormalization over the channels of an NHWC view (opset 17)."""
    y = g.node("Transpose", [g.conv(x, c, 8)], perm=[0, 2, 3, 1])
    if g.opset >= 17:
        y = g.node("LayerNormalization", [y, g.const(g.rng.uniform(0.5, 1.5, 8)), g.const(g.rng.normal(0, 0.1, 8))],
                   axis=-1, epsilon=1e-6)
    else:     # as torch exports it below 17: ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add
        m = g.node("ReduceMean", [y], axes=[-1])
        d = g.node("Sub", [y, m])
        v = g.node("ReduceMean", [g.node("Pow", [d, g.const(2.0)])], axes=[-1])
        y = g.node("Div", [d, g.node("Sqrt", [g.node("Add", [v, g.const(1e-6)])])])
        y = g.node("Add", [g.node("Mul", [y, g.const(g.rng.uniform(0.5, 1.5, 8))]), g.const(g.rng.normal(0, 0.1, 8))])
    return g.node("Transpose", [y], perm=[0, 3, 1, 2])


def unary_math(g, x, c):
    """Elementwise math exporters emit (norms, losses, positional code): Sqrt, Pow by a
    constant, Reciprocal, Log, Floor, Sin, each a table on the conv's output."""
    y = g.conv(x, c, 8)
    a = g.node("Sqrt", [g.node("Abs", [y])])
    b = g.node("Pow", [y, g.const(2.0)])
    r = g.node("Reciprocal", [g.node("Add", [g.node("Abs", [y]), g.const(1.0)])])
    lg = g.node("Log", [g.node("Add", [g.node("Abs", [y]), g.const(0.5)])])
    return g.node("Concat", [a, b, r, lg, g.node("Floor", [y]), g.node("Sin", [y])], axis=1)


def input_normalize(g, x, c):
    """The exporter's preprocessing inside the graph: (x - mean) / std per channel, then a conv."""
    y = g.node("Sub", [x, g.const(g.rng.normal(0, 0.2, (1, c, 1, 1)))])
    y = g.node("Div", [y, g.const(g.rng.uniform(0.5, 1.5, (1, c, 1, 1)))])
    return g.node("Relu", [g.conv(y, c, 8)])


def argmax_tail(g, x, c):
    """A segmentation head's ArgMax over the classes (an int64 output)."""
    return g.node("ArgMax", [g.conv(x, c, 4, k=1)], axis=1, keepdims=1)


argmax_tail.out_type = TensorProto.INT64


def add_broadcast_pool(g, x, c):
    """A map plus its own per-channel mean (a (1, C, 1, 1) activation broadcast by Add)."""
    y = g.node("Relu", [g.conv(x, c, 8)])
    return g.node("Add", [y, g.node("GlobalAveragePool", [y])])


def reduce_mean_keepdims0_gemm(g, x, c):
    """Mean over H, W with keepdims=0 straight into a Gemm (no Flatten)."""
    y = g.node("Relu", [g.conv(x, c, 16)])
    if g.opset >= 18:
        m = g.node("ReduceMean", [y, g.const([2, 3], np.int64)], keepdims=0)
    else:
        m = g.node("ReduceMean", [y], axes=[-2, -1], keepdims=0)
    return g.node("Gemm", [m, g.weight((10, 16)), g.const(g.rng.normal(0, 0.1, 10))], transB=1)


PATTERNS = [_pat(f) for f in (
    conv_bias, conv_no_bias_bn_relu, conv_stride2_pad0, group_conv, depthwise_relu6, dilated_conv,
    conv_1x1_hardswish, conv_hardsigmoid, conv_prelu, conv_leakyrelu, conv_silu, gemm_flatten, gemm_alpha_beta,
    gemm_no_transb_reshape, linear_on_flattened_map, softmax_tail, softmax_channels, pad_constant_conv,
    pad_reflect_conv, pad_edge_asym, conv_transpose, conv_transpose_no_bias_out_pad, resize_nearest,
    concat_branches, split_sizes, glu, channel_shuffle, residual_block, maxpool_ceil, avgpool_pad_exclude,
    avgpool_pad_include, squeeze_excite, reduce_mean_tail, mobilenetv3_block, mobilenetv3_bn_block,
    conv_bias_bn_relu6, clip_max_only, clip_min_only, global_maxpool, squeeze_gemm_unsqueeze, shufflenet_unit,
    concat_axis_minus3, concat_axis_minus1, where_mask, expand_mul, slice_steps, gather_channel,
    gather_scalar_index, gather_scalar_conv, gather_scalar_output, tanh_island, sigmoid_island, gelu_erf, gelu_tanh, reduce_mean_channels,
    reduce_mean_keepdims0_gemm, add_broadcast_pool, matmul_add_tail, reshape_zero_dim, dynamic_flatten,
    cast_identity, unary_math, input_normalize, argmax_tail, conv_same_upper, pixel_shuffle, split_equal_three, logsoftmax_tail, layernorm_channels_last)]
PATTERNS.append(_pat(nhwc_transposes, shape=(1, 12, 12, 8)))


def float_model(pattern, opset, path, seed=0):
    shape = list(pattern.shape)
    g = G(seed, opset)
    y = pattern(g, "x", shape[1])
    graph = helper.make_graph(g.nodes, pattern.__name__, [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info(y, getattr(pattern, "out_type", TensorProto.FLOAT), None)],
                              g.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8 if opset <= 18 else 10
    model = onnx.shape_inference.infer_shapes(model)
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return str(path)


# (format, activation type, weight type, per-channel)
VARIANTS = [(f, a, w, pc) for f in ("QDQ", "QOperator") for a, w in (("QUInt8", "QUInt8"), ("QUInt8", "QInt8"),
                                                                     ("QInt8", "QInt8")) for pc in (False, True)]
QUICK = [("QDQ", "QInt8", "QInt8", True), ("QOperator", "QUInt8", "QUInt8", False)]


def variant_name(v) -> str:
    f, a, w, pc = v
    return f"{f}-a{a[1:].lower()}-w{w[1:].lower()}-{'pc' if pc else 'pt'}"


def quantized(pattern, opset, variant, folder, seed=0) -> str:
    from modelgen import ort_quantize
    f, a, w, pc = variant
    fp = float_model(pattern, opset, os.path.join(folder, "f.onnx"), seed)
    samples = [np.random.default_rng(100 + k).standard_normal(pattern.shape).astype(np.float32) for k in range(8)]
    return ort_quantize(fp, os.path.join(folder, f"{variant_name(variant)}.onnx"), samples, f, a, w, per_channel=pc)


def check(path, shape, seeds=(1, 2)) -> dict:
    """{"status": ok|mismatch|refused|crash, "within": fraction within 1 LSB, "max": LSB, "why": message}."""
    from nnscons import reference
    from nnscons.errors import UserError, ModelError
    from nnscons.export.ort_oracle import run, run_intermediates
    from nnscons.frontends import load_model
    if not any(n.op_type == "QuantizeLinear" or n.op_type.startswith("QLinear") for n in onnx.load(path).graph.node):
        return {"status": "float", "why": "the quantizer quantized nothing (a float model: nnscons calibrates it)"}
    try:
        g = load_model(path, name="m")
    except (UserError, ModelError) as e:
        return {"status": "refused", "why": str(e).splitlines()[0][-300:]}
    except Exception as e:     # a traceback: a bug
        return {"status": "crash", "why": f"{type(e).__name__}: {e}"[:300]}
    within, worst = [], 0
    try:
        for s in seeds:
            x = np.random.default_rng(s).standard_normal(shape).astype(np.float32)
            got = reference.run_graph(g, reference.quantize_input(g, x))
            want = run_intermediates(path, x)
            if g.output in want:
                d = np.abs(got[g.output].astype(np.int32).reshape(-1) - want[g.output].astype(np.int32).reshape(-1))
            else:       # a float tail (the quantizer left the last op in float): in our output's LSB
                t = g.tensor(g.output)
                ours = reference.dequantize(t, got[g.output]).reshape(-1)
                d = np.abs(ours - run(path, x, exact=True).reshape(-1)) / t.q.scale
                d = np.where(d <= 1.0 + 1e-6, 0, np.ceil(d))
            within.append(float((d <= 1).mean()))
            worst = max(worst, int(d.max()))
    except Exception as e:
        return {"status": "crash", "why": f"{type(e).__name__}: {e}"[:300]}
    w = min(within)
    return {"status": "ok" if w >= 0.99 else "mismatch", "within": w, "max": worst,
            "why": "" if w >= 0.99 else f"{100 * w:.1f}% within 1 LSB, max {worst} LSB"}


def cases(variants=None, opsets=None):
    for p in PATTERNS:
        for o in opsets or p.opsets:
            for v in variants or VARIANTS:
                yield p, o, v


def main(argv):
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("--filter", default="", help="comma-separated parts of pattern names")
    ap.add_argument("--variants", default="quick", choices=("all", "quick"))
    ap.add_argument("--opsets", default="")
    args = ap.parse_args(argv)
    opsets = [int(o) for o in args.opsets.split(",")] if args.opsets else None
    counts = {}
    for p, o, v in cases(VARIANTS if args.variants == "all" else QUICK, opsets):
        if not any(f in p.__name__ for f in args.filter.split(",")):
            continue
        with tempfile.TemporaryDirectory() as d:
            try:
                q = quantized(p, o, v, d)
            except Exception as e:
                r = {"status": "no-quantize", "why": f"{type(e).__name__}: {e}"[:200]}
            else:
                r = check(q, p.shape)
        counts[r["status"]] = counts.get(r["status"], 0) + 1
        print(f"{p.__name__:34s} opset {o:2d} {variant_name(v):28s} {r['status']:10s} {r.get('why', '')}", flush=True)
    print("summary:", ", ".join(f"{k} {n}" for k, n in sorted(counts.items())))


if __name__ == "__main__":
    import logging
    logging.disable(logging.WARNING)      # quantize_static's pre-processing advice, every model
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:0] = [here, os.path.join(here, "..", "site_scons")]
    main(sys.argv[1:])
