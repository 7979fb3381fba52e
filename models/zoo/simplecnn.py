"""simplecnn: a small MNIST-style CNN, default input 1x1x28x28.

conv1(C->8, 3x3, pad 1) relu1 pool1(2x2) conv2(8->16) relu2 pool2 flatten fc(->10)
"""
from __future__ import annotations

from ._graph import Builder, check_nchw

DEFAULT_INPUT_SHAPE = (1, 1, 28, 28)


def check_input_shape(shape) -> None:
    check_nchw(shape, min_hw=4)


def build(seed: int, input_shape=DEFAULT_INPUT_SHAPE):
    check_input_shape(input_shape)
    _, c, h, w = input_shape
    b = Builder(seed)
    x = b.conv("conv1", "input", c, 8, 3, pad=1, bias=True)
    x = b.node("Relu", "relu1", [x])
    x = b.node("MaxPool", "pool1", [x], kernel_shape=[2, 2], strides=[2, 2])
    x = b.conv("conv2", x, 8, 16, 3, pad=1, bias=True)
    x = b.node("Relu", "relu2", [x])
    x = b.node("MaxPool", "pool2", [x], kernel_shape=[2, 2], strides=[2, 2])
    x = b.node("Flatten", "flatten", [x], axis=1)
    b.gemm("fc", x, 16 * (h // 4) * (w // 4), 10, output="output")
    return b.model("simplecnn", "input", input_shape, "output", (1, 10))
