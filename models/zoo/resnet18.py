"""resnet18: the torchvision ResNet-18 topology with random weights, default 1x3x224x224.

Node and initializer names follow torchvision's export ("layer1.0.conv1",
"layer1.0.downsample.1", "fc.weight", ...) so targets.yaml layer names read the same
as for a real exported model. Conv and BatchNormalization stay separate nodes.
"""
from __future__ import annotations

from ._graph import Builder, check_nchw

DEFAULT_INPUT_SHAPE = (1, 3, 224, 224)
STAGES = (64, 128, 256, 512)

# The last BN of each residual branch starts small (as with zero-init-residual
# training), so that the 8 residual additions do not blow activations up with depth.
_BRANCH_GAMMA = (0.2, 0.4)


def check_input_shape(shape) -> None:
    check_nchw(shape, channels=3, min_hw=32)


def stem(b: Builder) -> str:
    """conv1 7x7/2 + BN + ReLU + 3x3/2 max pool, shared with resnet50."""
    x = b.conv("conv1", "input", 3, 64, 7, 2, 3)
    x = b.batchnorm("bn1", x, 64)
    x = b.node("Relu", "relu", [x])
    return b.node("MaxPool", "maxpool", [x], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])


def residual(b: Builder, prefix: str, branch: str, x: str, cin: int, cout: int, stride: int,
             relu_name: str) -> str:
    """The block's shortcut (a 1x1 downsample + BN where the shape changes), the add, the ReLU."""
    shortcut = x
    if stride != 1 or cin != cout:
        shortcut = b.conv(f"{prefix}.downsample.0", x, cin, cout, 1, stride, 0)
        shortcut = b.batchnorm(f"{prefix}.downsample.1", shortcut, cout)
    y = b.node("Add", f"{prefix}.add", [branch, shortcut])
    return b.node("Relu", f"{prefix}.{relu_name}", [y])


def head(b: Builder, x: str, cin: int, name: str, input_shape):
    """Global average pool, flatten, the 1000-way fc; the finished model."""
    x = b.node("GlobalAveragePool", "avgpool", [x])
    x = b.node("Flatten", "flatten", [x], axis=1)
    b.gemm("fc", x, cin, 1000, output="output")
    return b.model(name, "input", input_shape, "output", (1, 1000))


def _basic_block(b: Builder, prefix: str, x: str, cin: int, cout: int, stride: int) -> str:
    y = b.conv(f"{prefix}.conv1", x, cin, cout, 3, stride, 1)
    y = b.batchnorm(f"{prefix}.bn1", y, cout)
    y = b.node("Relu", f"{prefix}.relu", [y])
    y = b.conv(f"{prefix}.conv2", y, cout, cout, 3, 1, 1)
    y = b.batchnorm(f"{prefix}.bn2", y, cout, gamma=_BRANCH_GAMMA)
    return residual(b, prefix, y, x, cin, cout, stride, "relu_1")


def build(seed: int, input_shape=DEFAULT_INPUT_SHAPE):
    check_input_shape(input_shape)
    b = Builder(seed)
    x = stem(b)
    cin = 64
    for stage, cout in enumerate(STAGES, start=1):
        for block in range(2):
            stride = 2 if stage > 1 and block == 0 else 1
            x = _basic_block(b, f"layer{stage}.{block}", x, cin, cout, stride)
            cin = cout
    return head(b, x, cin, "resnet18", input_shape)
