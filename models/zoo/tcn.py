"""tcn: a small 1-D temporal convolution network for audio, random weights. Input
(1, C, L) features; causal dilated Conv1d (kernel 3, dilations 1, 2, 4; left padding) +
BatchNormalization + ReLU in residual blocks, MaxPool1d, global average pool, fc.
Tensors are rank 3: nnscons runs them as (1, C, 1, L)."""
from __future__ import annotations

import numpy as np

from ._blocks import act
from ._graph import Builder

DEFAULT_INPUT_SHAPE = (1, 16, 64)
CHANNELS = 24
CLASSES = 8


def check_input_shape(shape) -> None:
    shape = tuple(shape)
    if len(shape) != 3 or shape[0] != 1 or shape[2] < 16:
        raise ValueError(f"input_shape {list(shape)} not supported; expected (1, C, L), L >= 16")


def _conv1d(b: Builder, name, x, cin, cout, k, dilation, pad_left):
    w = b.param(f"{name}.weight", b.normal((cout, cin, k), np.sqrt(2.0 / (cin * k))))
    return b.node("Conv", name, [x, w], kernel_shape=[k], strides=[1], dilations=[dilation],
                  pads=[pad_left, 0], group=1)


def build(seed: int, input_shape=DEFAULT_INPUT_SHAPE):
    check_input_shape(input_shape)
    b = Builder(seed)
    x = _conv1d(b, "stem", "input", input_shape[1], CHANNELS, 1, 1, 0)
    for i, d in enumerate((1, 2, 4)):
        p = f"block{i}"
        y = _conv1d(b, f"{p}.conv1", x, CHANNELS, CHANNELS, 3, d, 2 * d)
        y = act(b, f"{p}.relu1", b.batchnorm(f"{p}.bn1", y, CHANNELS), "relu")
        y = _conv1d(b, f"{p}.conv2", y, CHANNELS, CHANNELS, 3, d, 2 * d)
        y = b.batchnorm(f"{p}.bn2", y, CHANNELS)
        x = act(b, f"{p}.relu", b.node("Add", f"{p}.add", [y, x]), "relu")
        if i == 0:
            x = b.node("MaxPool", "pool", [x], kernel_shape=[2], strides=[2])
    x = b.node("GlobalAveragePool", "avgpool", [x])
    x = b.node("Flatten", "flatten", [x], axis=1)
    b.gemm("fc", x, CHANNELS, CLASSES, output="output")
    return b.model("tcn", "input", input_shape, "output", (1, CLASSES))
