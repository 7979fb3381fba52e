"""resnet8: the MLPerf Tiny image-classification ResNet-8 (CIFAR-10), random weights.

conv 3x3 (16) + BN + ReLU, three residual stacks of 16, 32, 64 channels (two 3x3 convs with
BN; stride 2 and a 1x1 projection shortcut in the second and third), ReLU after each Add,
global average pool, fc -> 10.
"""
from __future__ import annotations

from ._blocks import act, conv, conv_bn_act, head
from ._graph import Builder, check_nchw

DEFAULT_INPUT_SHAPE = (1, 3, 32, 32)
CLASSES = 10


def check_input_shape(shape) -> None:
    check_nchw(shape, channels=3, min_hw=8)


def build(seed: int, input_shape=DEFAULT_INPUT_SHAPE):
    check_input_shape(input_shape)
    b = Builder(seed)
    x = conv_bn_act(b, "conv1", "input", 3, 16, 3)
    cin = 16
    for i, (c, stride) in enumerate(((16, 1), (32, 2), (64, 2))):
        p = f"stack{i}"
        y = conv_bn_act(b, f"{p}.conv1", x, cin, c, 3, stride)
        y = conv_bn_act(b, f"{p}.conv2", y, c, c, 3, kind=None)
        short = x
        if stride != 1 or cin != c:
            short = conv(b, f"{p}.shortcut", x, cin, c, 1, stride, bias=True, pads=[0, 0, 0, 0])
        x = act(b, f"{p}.relu", b.node("Add", f"{p}.add", [y, short]), "relu")
        cin = c
    head(b, x, cin, CLASSES)
    return b.model("resnet8", "input", input_shape, "output", (1, CLASSES))
