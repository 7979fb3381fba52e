"""mobilenetv3: a MobileNetV3-small-style block set, random weights: HardSwish and ReLU
activations, depthwise convs, squeeze-excite (global pool, 1x1 convs, ReLU, HardSigmoid,
Mul per channel), residual Adds, and a HardSwish classifier head. Opset 14 (HardSwish)."""
from __future__ import annotations

from ._blocks import act, conv, conv_bn_act, squeeze_excite
from ._graph import Builder, check_nchw

DEFAULT_INPUT_SHAPE = (1, 3, 64, 64)
# (kernel, expanded, out, squeeze-excite, activation, stride)
BLOCKS = ((3, 16, 16, True, "relu", 2), (3, 72, 24, False, "relu", 2), (3, 88, 24, False, "relu", 1),
          (5, 96, 40, True, "hswish", 2), (5, 240, 40, True, "hswish", 1), (5, 120, 48, True, "hswish", 1))
CLASSES = 10


def check_input_shape(shape) -> None:
    check_nchw(shape, channels=3, min_hw=32)


def build(seed: int, input_shape=DEFAULT_INPUT_SHAPE):
    check_input_shape(input_shape)
    b = Builder(seed)
    x = conv_bn_act(b, "conv1", "input", 3, 16, 3, 2, kind="hswish")
    cin = 16
    for i, (k, exp, cout, se, kind, stride) in enumerate(BLOCKS):
        p = f"block{i}"
        y = x
        if exp != cin:
            y = conv_bn_act(b, f"{p}.expand", y, cin, exp, 1, kind=kind)
        y = conv_bn_act(b, f"{p}.dw", y, exp, exp, k, stride, groups=exp, kind=kind)
        if se:
            y = squeeze_excite(b, f"{p}.se", y, exp)
        y = conv_bn_act(b, f"{p}.project", y, exp, cout, 1, kind=None)
        if stride == 1 and cin == cout:
            y = b.node("Add", f"{p}.add", [y, x])
        x, cin = y, cout
    x = conv_bn_act(b, "conv_last", x, cin, 144, 1, kind="hswish")
    x = b.node("GlobalAveragePool", "avgpool", [x])
    x = conv(b, "head.fc1", x, 144, 256, 1, bias=True)
    x = act(b, "head.hswish", x, "hswish")
    x = b.node("Flatten", "flatten", [x], axis=1)
    b.gemm("fc", x, 256, CLASSES, output="output")
    return b.model("mobilenetv3", "input", input_shape, "output", (1, CLASSES), opset=14)
