"""Layer recipes shared by the small zoo generators (MobileNetV2/V3, MLPerf Tiny)."""
from __future__ import annotations

import numpy as np

from ._graph import Builder


def scalar(b: Builder, name: str, value: float) -> str:
    from onnx import numpy_helper
    b.initializers.append(numpy_helper.from_array(np.array(value, dtype=np.float32), name))
    return name


def act(b: Builder, name: str, x: str, kind: str) -> str:
    if kind == "relu":
        return b.node("Relu", name, [x])
    if kind == "relu6":
        return b.node("Clip", name, [x, scalar(b, f"{name}.min", 0.0), scalar(b, f"{name}.max", 6.0)])
    if kind == "hswish":
        return b.node("HardSwish", name, [x])
    if kind == "hsigmoid":
        return b.node("HardSigmoid", name, [x], alpha=1.0 / 6, beta=0.5)
    if kind == "leaky":
        return b.node("LeakyRelu", name, [x], alpha=0.1)
    assert kind is None, kind
    return x


def conv(b: Builder, name, x, cin, cout, k, stride=1, groups=1, bias=False, pads=None):
    kh, kw = (k, k) if isinstance(k, int) else k
    w = b.param(f"{name}.weight", b.normal((cout, cin // groups, kh, kw),
                                           np.sqrt(2.0 / (cin // groups * kh * kw))))
    inputs = [x, w]
    if bias:
        inputs.append(b.param(f"{name}.bias", b.normal((cout,), 0.05)))
    sh, sw = (stride, stride) if isinstance(stride, int) else stride
    pads = pads if pads is not None else [kh // 2, kw // 2, kh // 2, kw // 2]
    return b.node("Conv", name, inputs, kernel_shape=[kh, kw], strides=[sh, sw], pads=list(pads),
                  dilations=[1, 1], group=groups)


def conv_bn_act(b: Builder, name, x, cin, cout, k, stride=1, groups=1, kind="relu", pads=None):
    x = conv(b, name, x, cin, cout, k, stride, groups, pads=pads)
    x = b.batchnorm(f"{name}_bn", x, cout)
    return act(b, f"{name}_act", x, kind)


def squeeze_excite(b: Builder, name, x, c, r=4):
    s = b.node("GlobalAveragePool", f"{name}.pool", [x])
    s = conv(b, f"{name}.fc1", s, c, max(8, c // r), 1, bias=True)
    s = act(b, f"{name}.relu", s, "relu")
    s = conv(b, f"{name}.fc2", s, max(8, c // r), c, 1, bias=True)
    s = act(b, f"{name}.gate", s, "hsigmoid")
    return b.node("Mul", f"{name}.scale", [x, s])


def head(b: Builder, x, c, classes):
    x = b.node("GlobalAveragePool", "avgpool", [x])
    x = b.node("Flatten", "flatten", [x], axis=1)
    return b.gemm("fc", x, c, classes, output="output")
