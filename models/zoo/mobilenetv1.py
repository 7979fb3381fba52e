"""mobilenetv1: MobileNetV1 (Howard et al. 2017) with random weights, one generator for every
width multiplier and resolution.

conv1 (3x3 stride 2) + BN + ReLU6, then 13 depthwise-separable blocks (3x3 depthwise + BN +
ReLU6, 1x1 pointwise + BN + ReLU6; blocks 2, 4, 6 and 12 have stride 2), global average
pool, flatten, fc -> 1000. Convs use PyTorch's symmetric padding (1 on every side of a 3x3).
Channels are the width multiplier times (32, 64, ..., 1024), rounded to a multiple of 8
(at least 8), as the reference implementations do.

The resolution is the input shape (targets.yaml input_shape, default 224x224); the width is
in the zoo name: mobilenetv1_100, _075, _050, _025 (models/zoo/__init__.py), e.g. the
classic K210 demo, width 0.75 at 224x224, is `zoo: mobilenetv1_075`.
"""
from __future__ import annotations

import numpy as np

from ._graph import Builder, check_nchw

DEFAULT_INPUT_SHAPE = (1, 3, 224, 224)
# (output channels at width 1, stride) of the 13 depthwise-separable blocks
BLOCKS = ((64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2), (512, 1), (512, 1), (512, 1),
          (512, 1), (512, 1), (1024, 2), (1024, 1))


def channels(c: int, width: float) -> int:
    return max(8, int(c * width + 4) // 8 * 8)


def check_input_shape(shape) -> None:
    check_nchw(shape, channels=3, min_hw=32)


def _scalar(b: Builder, name: str, value: float) -> str:
    from onnx import numpy_helper
    b.initializers.append(numpy_helper.from_array(np.array(value, dtype=np.float32), name))  # 0-d, as Clip wants
    return name


def _relu6(b: Builder, name: str, x: str) -> str:
    return b.node("Clip", name, [x, _scalar(b, f"{name}.min", 0.0), _scalar(b, f"{name}.max", 6.0)])


def _conv(b: Builder, name, x, cin, cout, k, stride, groups):
    w = b.param(f"{name}.weight", b.normal((cout, cin // groups, k, k), np.sqrt(2.0 / (cin // groups * k * k))))
    return b.node("Conv", name, [x, w], kernel_shape=[k, k], strides=[stride, stride], pads=[k // 2] * 4,
                  dilations=[1, 1], group=groups)


def build(seed: int, input_shape=DEFAULT_INPUT_SHAPE, width: float = 1.0):
    check_input_shape(input_shape)
    b = Builder(seed)
    cin = channels(32, width)
    x = _conv(b, "conv1", "input", 3, cin, 3, 2, 1)
    x = b.batchnorm("bn1", x, cin)
    x = _relu6(b, "relu1", x)
    for i, (c, stride) in enumerate(BLOCKS, start=1):
        cout = channels(c, width)
        p = f"block{i}"
        x = _conv(b, f"{p}.dw", x, cin, cin, 3, stride, cin)
        x = b.batchnorm(f"{p}.dw_bn", x, cin)
        x = _relu6(b, f"{p}.dw_relu", x)
        x = _conv(b, f"{p}.pw", x, cin, cout, 1, 1, 1)
        x = b.batchnorm(f"{p}.pw_bn", x, cout)
        x = _relu6(b, f"{p}.pw_relu", x)
        cin = cout
    x = b.node("GlobalAveragePool", "avgpool", [x])
    x = b.node("Flatten", "flatten", [x], axis=1)
    b.gemm("fc", x, cin, 1000, output="output")
    return b.model("mobilenetv1", "input", input_shape, "output", (1, 1000))


class Variant:
    """The zoo entry of one width multiplier (the zoo's module interface)."""

    DEFAULT_INPUT_SHAPE = DEFAULT_INPUT_SHAPE

    def __init__(self, width: float):
        self.width = width

    @staticmethod
    def check_input_shape(shape) -> None:
        check_input_shape(shape)

    def build(self, seed: int, input_shape=DEFAULT_INPUT_SHAPE):
        return build(seed, input_shape, self.width)


WIDTHS = {"mobilenetv1_100": 1.0, "mobilenetv1_075": 0.75, "mobilenetv1_050": 0.5, "mobilenetv1_025": 0.25}
VARIANTS = {name: Variant(w) for name, w in WIDTHS.items()}
