"""mobilenetv2: MobileNetV2 (Sandler et al. 2018), width 0.35 by default, random weights.

conv 3x3/2 + BN + ReLU6, inverted residual blocks (1x1 expand + BN + ReLU6, 3x3 depthwise +
BN + ReLU6, 1x1 project + BN, residual Add when stride 1 and channels match), 1x1 conv to
the last channels + BN + ReLU6, global average pool, fc. The resolution is the input shape.
"""
from __future__ import annotations

from ._blocks import conv_bn_act, head
from ._graph import Builder, check_nchw

DEFAULT_INPUT_SHAPE = (1, 3, 96, 96)
# (expansion t, channels c, repeats n, stride s) of the reference network
SETTINGS = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
            (6, 160, 3, 2), (6, 320, 1, 1))
WIDTH = 0.35
CLASSES = 10


def channels(c, width=WIDTH):
    return max(8, int(c * width + 4) // 8 * 8)


def check_input_shape(shape) -> None:
    check_nchw(shape, channels=3, min_hw=32)


def build(seed: int, input_shape=DEFAULT_INPUT_SHAPE):
    check_input_shape(input_shape)
    b = Builder(seed)
    cin = channels(32)
    x = conv_bn_act(b, "conv1", "input", 3, cin, 3, 2, kind="relu6")
    for i, (t, c, n, s) in enumerate(SETTINGS):
        cout = channels(c)
        for j in range(n):
            p = f"block{i}_{j}"
            stride = s if j == 0 else 1
            hidden = cin * t
            y = x
            if t != 1:
                y = conv_bn_act(b, f"{p}.expand", y, cin, hidden, 1, kind="relu6")
            y = conv_bn_act(b, f"{p}.dw", y, hidden, hidden, 3, stride, groups=hidden, kind="relu6")
            y = conv_bn_act(b, f"{p}.project", y, hidden, cout, 1, kind=None)
            if stride == 1 and cin == cout:
                y = b.node("Add", f"{p}.add", [y, x])
            x, cin = y, cout
    x = conv_bn_act(b, "conv_last", x, cin, 1280 // 4, 1, kind="relu6")
    head(b, x, 1280 // 4, CLASSES)
    return b.model("mobilenetv2", "input", input_shape, "output", (1, CLASSES))
