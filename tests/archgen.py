"""Whole architectures the issue's goal names (SqueezeNet 1.1, DenseNet, Inception-v2, ResNet-50's
bottlenecks, ShuffleNetV2), written with tests/layergen.py's builder the way exporters spell
them (BatchNormalization left unfolded before a concat, Fire modules' channel concat, the
channel shuffle as Reshape/Transpose/Reshape), small (64x64 inputs, few blocks) and random:
onnxruntime's quantizer writes them in every form layergen knows, and layergen.check compares
nnscons's integer reference with the float64 evaluation of the quantized file.
benchmarks/ort_quantizer_arch.py prints the table; tests/test_archgen.py checks two forms."""
from __future__ import annotations

from layergen import _pat


def relu(g, x):
    return g.node("Relu", [x])
def maxpool(g, x, k=3, s=2, p=0, ceil=0):
    return g.node("MaxPool", [x], kernel_shape=[k, k], strides=[s, s], pads=[p]*4, ceil_mode=ceil)

def fire(g, x, c, s, e):
    q = relu(g, g.conv(x, c, s, k=1))
    return g.node("Concat", [relu(g, g.conv(q, s, e, k=1)), relu(g, g.conv(q, s, e, k=3))], axis=1)

def squeezenet(g, x, c):
    y = maxpool(g, relu(g, g.conv(x, c, 64, k=3, stride=2, pad=0)), ceil=1)
    y = fire(g, y, 64, 16, 64); y = fire(g, y, 128, 16, 64); y = maxpool(g, y, ceil=1)
    y = fire(g, y, 128, 32, 128); y = fire(g, y, 256, 32, 128); y = maxpool(g, y, ceil=1)
    y = fire(g, y, 256, 48, 192); y = fire(g, y, 384, 64, 256)
    y = relu(g, g.conv(y, 512, 10, k=1))
    return g.node("Flatten", [g.node("GlobalAveragePool", [y])], axis=1)

def densenet(g, x, c):
    y = maxpool(g, relu(g, g.bn(g.conv(x, c, 32, k=7, stride=2, pad=3, bias=False), 32)), p=1)
    ch, k = 32, 16
    for block in range(2):
        for _ in range(3):
            h = g.conv(relu(g, g.bn(y, ch)), ch, 4 * k, k=1, bias=False)
            h = g.conv(relu(g, g.bn(h, 4 * k)), 4 * k, k, k=3, bias=False)
            y = g.node("Concat", [y, h], axis=1); ch += k
        if block == 0:
            y = g.conv(relu(g, g.bn(y, ch)), ch, ch // 2, k=1, bias=False); ch //= 2
            y = g.node("AveragePool", [y], kernel_shape=[2, 2], strides=[2, 2])
    y = g.node("GlobalAveragePool", [relu(g, g.bn(y, ch))])
    return g.gemm_tail(y, ch, 10)

def mixed(g, x, c, o):
    b1 = relu(g, g.conv(x, c, o, k=1))
    b2 = relu(g, g.conv(relu(g, g.conv(x, c, o, k=1)), o, o, k=3))
    b3 = relu(g, g.conv(relu(g, g.conv(relu(g, g.conv(x, c, o, k=1)), o, o, k=3)), o, o, k=3))
    b4 = relu(g, g.conv(g.node("AveragePool", [x], kernel_shape=[3, 3], strides=[1, 1], pads=[1]*4), c, o, k=1))
    return g.node("Concat", [b1, b2, b3, b4], axis=1)

def inception(g, x, c):
    y = maxpool(g, relu(g, g.bn(g.conv(x, c, 32, k=7, stride=2, pad=3, bias=False), 32)), p=1)
    y = mixed(g, y, 32, 16); y = maxpool(g, y, p=1); y = mixed(g, y, 64, 24)
    return g.gemm_tail(g.node("GlobalAveragePool", [y]), 96, 10)

def bottleneck(g, x, cin, mid, cout, stride):
    h = relu(g, g.conv(x, cin, mid, k=1))
    h = relu(g, g.conv(h, mid, mid, k=3, stride=stride))
    h = g.conv(h, mid, cout, k=1)
    sc = g.conv(x, cin, cout, k=1, stride=stride, pad=0) if (stride != 1 or cin != cout) else x
    return relu(g, g.node("Add", [h, sc]))

def resnet50ish(g, x, c):
    y = maxpool(g, relu(g, g.conv(x, c, 32, k=7, stride=2, pad=3)), p=1)
    y = bottleneck(g, y, 32, 16, 64, 1); y = bottleneck(g, y, 64, 16, 64, 1)
    y = bottleneck(g, y, 64, 32, 128, 2); y = bottleneck(g, y, 128, 32, 128, 1)
    return g.gemm_tail(g.node("GlobalAveragePool", [y]), 128, 10)

def shufflenet(g, x, c):
    y = maxpool(g, relu(g, g.conv(x, c, 16, k=3, stride=2)), p=1)
    for _ in range(3):
        a, b = g.split(y, [8, 8])
        b = relu(g, g.conv(g.conv(relu(g, g.conv(b, 8, 8, k=1)), 8, 8, group=8, bias=False), 8, 8, k=1))
        y = g.node("Concat", [a, b], axis=1)
        y = g.reshape(y, [1, 2, 8, 16, 16]); y = g.node("Transpose", [y], perm=[0, 2, 1, 3, 4]); y = g.reshape(y, [1, 16, 16, 16])
    return g.gemm_tail(g.node("GlobalAveragePool", [y]), 16, 10)


ARCHITECTURES = [_pat(f, shape=(1, 3, 64, 64), opsets=(13,))
                 for f in (squeezenet, densenet, inception, resnet50ish, shufflenet)]
