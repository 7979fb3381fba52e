"""resnet50: the torchvision ResNet-50 topology (bottleneck blocks, v1.5: the stride on the 3x3
conv) with random weights, default 1x3x224x224.

Node names follow torchvision's export ("layer1.0.conv1", "layer1.0.downsample.0", ...) like
resnet18.py, whose stem and helpers it shares. At 224x224 its activations (the stem's 112x112x64
output, layer1's 56x56x256 ones) do not fit GAP9's L2 at once: the gap9 target keeps them in L3.
"""
from __future__ import annotations

from ._graph import Builder
from .resnet18 import DEFAULT_INPUT_SHAPE, check_input_shape, head, residual, stem  # noqa: F401  (DEFAULT_INPUT_SHAPE, check_input_shape: the zoo interface)

STAGES = ((64, 3), (128, 4), (256, 6), (512, 3))     # bottleneck width, blocks
EXPANSION = 4
_BRANCH_GAMMA = (0.2, 0.4)      # see resnet18.py: small last BN per residual branch


def _bottleneck(b: Builder, prefix: str, x: str, cin: int, width: int, stride: int) -> str:
    cout = width * EXPANSION
    y = b.conv(f"{prefix}.conv1", x, cin, width, 1, 1, 0)
    y = b.batchnorm(f"{prefix}.bn1", y, width)
    y = b.node("Relu", f"{prefix}.relu", [y])
    y = b.conv(f"{prefix}.conv2", y, width, width, 3, stride, 1)
    y = b.batchnorm(f"{prefix}.bn2", y, width)
    y = b.node("Relu", f"{prefix}.relu_1", [y])
    y = b.conv(f"{prefix}.conv3", y, width, cout, 1, 1, 0)
    y = b.batchnorm(f"{prefix}.bn3", y, cout, gamma=_BRANCH_GAMMA)
    return residual(b, prefix, y, x, cin, cout, stride, "relu_2")


def build(seed: int, input_shape=DEFAULT_INPUT_SHAPE):
    check_input_shape(input_shape)
    b = Builder(seed)
    x = stem(b)
    cin = 64
    for stage, (width, blocks) in enumerate(STAGES, start=1):
        for block in range(blocks):
            stride = 2 if stage > 1 and block == 0 else 1
            x = _bottleneck(b, f"layer{stage}.{block}", x, cin, width, stride)
            cin = width * EXPANSION
    return head(b, x, cin, "resnet50", input_shape)
