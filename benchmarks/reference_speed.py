"""Time the NumPy reference on a ResNet-18-shaped IR graph (1x3x224x224, random int8 weights).

    .venv/bin/python benchmarks/reference_speed.py [runs]

Prints the median wall time of `runs` (default 3) full-graph runs.
"""
from __future__ import annotations

import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "site_scons"))

from nnscons import ir, ops  # noqa: E402
from nnscons.reference import run_graph  # noqa: E402


class _Builder:
    """Appends layers with random int8 parameters, tracking shapes and scales."""

    def __init__(self, rng):
        self.rng = rng
        self.tensors = {"input": ir.Tensor("input", (1, 3, 224, 224), ir.QParams(0.02, -3))}
        self.layers = []

    def _new(self, shape):
        name = f"t{len(self.layers)}"
        self.tensors[name] = ir.Tensor(name, shape, ir.QParams(float(self.rng.uniform(0.02, 0.1)),
                                                               int(self.rng.integers(-20, 20))))
        return name

    def add_layer(self, op, inputs, shape, **kw):
        out = self._new(shape)
        self.layers.append(ir.Layer(f"L{len(self.layers)}_{op}", op, list(inputs), out, **kw))
        return out

    def conv(self, x, out_c, k, stride, relu):
        _, c, h, w = self.tensors[x].shape
        pad = k // 2
        oh, ow = (h + 2 * pad - k) // stride + 1, (w + 2 * pad - k) // stride + 1
        wt = self.rng.integers(-127, 128, size=(out_c, c, k, k), dtype=np.int8)
        out = self.add_layer("conv2d", [x], (1, out_c, oh, ow),
                        attrs=dict(kernel=(k, k), stride=(stride, stride), dilation=(1, 1),
                                   pads=(pad, pad, pad, pad), groups=1),
                        weight=wt, weight_scale=self.rng.uniform(1e-4, 2e-3, out_c),
                        bias=self.rng.integers(-5000, 5000, out_c).astype(np.int32))
        if relu:
            self.layers[-1].act_min = self.tensors[out].q.zero_point
        return out

    def block(self, x, out_c, stride):
        y = self.conv(x, out_c, 3, stride, relu=True)
        y = self.conv(y, out_c, 3, 1, relu=False)
        if stride != 1 or self.tensors[x].shape[1] != out_c:
            x = self.conv(x, out_c, 1, stride, relu=False)
        out = self.add_layer("add", [x, y], self.tensors[y].shape)
        self.layers[-1].act_min = self.tensors[out].q.zero_point
        return out

    def graph(self, out):
        return ir.Graph("resnet18_random", "input", out, self.tensors, self.layers)


def resnet18_graph(seed=0) -> ir.Graph:
    b = _Builder(np.random.default_rng(seed))
    x = b.conv("input", 64, 7, 2, relu=True)
    x = b.add_layer("maxpool", [x], (1, 64, 56, 56),
               attrs=dict(kernel=(3, 3), stride=(2, 2), pads=(1, 1, 1, 1), ceil_mode=0))
    for out_c, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        x = b.block(x, out_c, stride)
        x = b.block(x, out_c, 1)
    x = b.add_layer("global_avgpool", [x], (1, 512, 1, 1))
    x = b.add_layer("reshape", [x], (1, 512), attrs=dict(shape=(1, 512)))
    x = b.add_layer("linear", [x], (1, 1000), weight=b.rng.integers(-127, 128, (1000, 512), dtype=np.int8),
               weight_scale=b.rng.uniform(1e-4, 2e-3, 1000),
               bias=b.rng.integers(-5000, 5000, 1000).astype(np.int32))
    g = b.graph(x)
    g.validate(ops.ir_ops())
    return g


def main(runs: int) -> None:
    g = resnet18_graph()
    x = np.random.default_rng(1).integers(-128, 128, (1, 3, 224, 224), dtype=np.int8)
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        run_graph(g, x)
        times.append(time.perf_counter() - t0)
    print(f"reference resnet18 1x3x224x224: median {statistics.median(times):.3f} s over {runs} runs")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
