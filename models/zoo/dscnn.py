"""dscnn: the MLPerf Tiny keyword-spotting DS-CNN (Zhang et al. 2017), random weights.

Input (1, 1, 49, 10) MFCC features; conv 10x4 stride 2 (64) + BN + ReLU, four depthwise-
separable blocks (3x3 depthwise + BN + ReLU, 1x1 pointwise + BN + ReLU), average pool over
the whole map, flatten, fc -> 12 keywords.
"""
from __future__ import annotations

from ._blocks import conv_bn_act
from ._graph import Builder, check_nchw

DEFAULT_INPUT_SHAPE = (1, 1, 49, 10)
CHANNELS = 64
CLASSES = 12


def check_input_shape(shape) -> None:
    check_nchw(shape, channels=1, min_hw=10)


def build(seed: int, input_shape=DEFAULT_INPUT_SHAPE):
    check_input_shape(input_shape)
    b = Builder(seed)
    x = conv_bn_act(b, "conv1", "input", 1, CHANNELS, (10, 4), (2, 2), pads=[5, 1, 4, 2])
    for i in range(4):
        x = conv_bn_act(b, f"block{i}.dw", x, CHANNELS, CHANNELS, 3, groups=CHANNELS)
        x = conv_bn_act(b, f"block{i}.pw", x, CHANNELS, CHANNELS, 1)
    h = (input_shape[2] + 9 - 10) // 2 + 1
    w = (input_shape[3] + 3 - 4) // 2 + 1
    x = b.node("AveragePool", "avgpool", [x], kernel_shape=[h, w], strides=[1, 1])
    x = b.node("Flatten", "flatten", [x], axis=1)
    b.gemm("fc", x, CHANNELS, CLASSES, output="output")
    return b.model("dscnn", "input", input_shape, "output", (1, CLASSES))
