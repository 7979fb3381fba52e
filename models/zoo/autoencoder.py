"""autoencoder: the MLPerf Tiny anomaly-detection fully connected autoencoder (ToyADMOS),
random weights: 640 -> 128 x4 -> 8 -> 128 x4 -> 640, every hidden Gemm followed by
BatchNormalization and ReLU. Input (1, 640): five 128-bin log-mel frames."""
from __future__ import annotations

from ._blocks import act
from ._graph import Builder

DEFAULT_INPUT_SHAPE = (1, 640)
SIZES = (128, 128, 128, 128, 8, 128, 128, 128, 128)


def check_input_shape(shape) -> None:
    shape = tuple(shape)
    if len(shape) != 2 or shape[0] != 1 or shape[1] < 1:
        raise ValueError(f"input_shape {list(shape)} not supported; expected (1, F)")


def build(seed: int, input_shape=DEFAULT_INPUT_SHAPE):
    check_input_shape(input_shape)
    b = Builder(seed)
    x, fin = "input", input_shape[1]
    for i, f in enumerate(SIZES):
        x = b.gemm(f"fc{i}", x, fin, f)
        x = b.batchnorm(f"bn{i}", x, f)
        x = act(b, f"relu{i}", x, "relu")
        fin = f
    b.gemm("out", x, fin, input_shape[1], output="output")
    return b.model("autoencoder", "input", input_shape, "output", (1, input_shape[1]))
