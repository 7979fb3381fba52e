"""encdec: a small convolutional encoder/decoder (autoencoder / segmentation-head style),
random weights: two stride-2 conv + BN + ReLU, then two stride-2 ConvTranspose (3x3,
output_padding 1) + ReLU with a skip Concat, and a 1x1 conv to the input's channels."""
from __future__ import annotations

import numpy as np

from ._blocks import act, conv, conv_bn_act
from ._graph import Builder, check_nchw

DEFAULT_INPUT_SHAPE = (1, 3, 32, 32)


def check_input_shape(shape) -> None:
    check_nchw(shape, channels=3, min_hw=8)
    if shape[2] % 4 or shape[3] % 4:
        raise ValueError(f"input_shape {list(shape)} not supported; H and W must be multiples of 4")


def _deconv(b: Builder, name, x, cin, cout):
    w = b.param(f"{name}.weight", b.normal((cin, cout, 3, 3), np.sqrt(2.0 / (cin * 9))))
    bias = b.param(f"{name}.bias", b.normal((cout,), 0.05))
    return b.node("ConvTranspose", name, [x, w, bias], kernel_shape=[3, 3], strides=[2, 2],
                  pads=[1, 1, 1, 1], output_padding=[1, 1])


def build(seed: int, input_shape=DEFAULT_INPUT_SHAPE):
    check_input_shape(input_shape)
    b = Builder(seed)
    e1 = conv_bn_act(b, "enc1", "input", 3, 16, 3, 2)
    e2 = conv_bn_act(b, "enc2", e1, 16, 32, 3, 2)
    d1 = act(b, "dec1_relu", _deconv(b, "dec1", e2, 32, 16), "relu")
    cat = b.node("Concat", "skip", [d1, e1], axis=1)
    d2 = act(b, "dec2_relu", _deconv(b, "dec2", cat, 32, 8), "relu")
    conv(b, "out", d2, 8, 3, 1, bias=True, pads=[0, 0, 0, 0])
    b.nodes[-1].output[0] = "output"
    return b.model("encdec", "input", input_shape, "output", tuple(input_shape))
