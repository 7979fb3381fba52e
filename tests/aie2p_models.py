"""A small float model whose every layer maps onto aie2p: Conv 3x3 (+ReLU), Conv 1x1 (+ReLU),
a 2x2/2 patch Conv, a 5x7 Conv down to 1x1, Flatten, Linear (+ReLU), Linear."""
from __future__ import annotations

import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

MIX_LAYERS = ["conv1", "conv2", "conv3", "conv4", "flatten", "fc1", "fc2"]


def mix_model(path, seed=0) -> str:
    rng = np.random.default_rng(seed)

    def w(*shape):
        fan_in = int(np.prod(shape[1:]))
        return (rng.standard_normal(shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)
    inits, nodes = [], []

    def param(name, a):
        inits.append(numpy_helper.from_array(a, name))
        return name

    def conv(name, x, cin, cout, kh, kw, stride, relu):
        ins = [x, param(name + ".w", w(cout, cin, kh, kw)),
               param(name + ".b", (rng.standard_normal(cout) * 0.05).astype(np.float32))]
        nodes.append(helper.make_node("Conv", ins, [name], name, kernel_shape=[kh, kw],
                                      strides=[stride, stride], pads=[0, 0, 0, 0]))
        if relu:
            nodes.append(helper.make_node("Relu", [name], [name + "_r"], name + "_relu"))
            return name + "_r"
        return name

    x = conv("conv1", "x", 8, 16, 3, 3, 1, True)          # 8x12x16 -> 16x10x14
    x = conv("conv2", x, 16, 32, 1, 1, 1, True)           # -> 32x10x14
    x = conv("conv3", x, 32, 16, 2, 2, 2, False)          # -> 16x5x7
    x = conv("conv4", x, 16, 24, 5, 7, 1, True)           # -> 24x1x1
    nodes.append(helper.make_node("Flatten", [x], ["flat"], "flatten", axis=1))
    nodes.append(helper.make_node("Gemm", ["flat", param("fc1.w", w(16, 24)),
                                           param("fc1.b", np.zeros(16, np.float32))], ["fc1"], "fc1", transB=1))
    nodes.append(helper.make_node("Relu", ["fc1"], ["fc1_r"], "fc1_relu"))
    nodes.append(helper.make_node("Gemm", ["fc1_r", param("fc2.w", w(8, 16)),
                                           param("fc2.b", np.zeros(8, np.float32))], ["y"], "fc2", transB=1))
    graph = helper.make_graph(nodes, "aiemix",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 12, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    onnx.save(model, str(path))
    return str(path)


MANIFEST_ENTRY = """
  mix:
    source: m/mix.onnx
    quantization:
      calibration: {count: 4, seed: 0}
    targets:
      aie2p:
        layers:
          conv1: {tiles_per_call: 7, variant: scalar}
          conv2: {channels_per_call: 8, cores: 2, columns: 2}
          conv3: {tiles_per_call: 7}
"""


def add_mix(project) -> None:
    mix_model(project.file("m/mix.onnx"))
    project.write("targets.yaml", project.read("targets.yaml").rstrip("\n") + "\n" + MANIFEST_ENTRY)


PAD_LAYERS = ["conv1", "conv2", "conv3", "conv4", "conv5", "flatten", "fc"]


def pad_model(path, seed=1) -> str:
    """Padded convolutions: 3x3 pad 1 on a 3-channel input (channels staged to 8), 3x3 pad 1
    stride 2, 1x1, asymmetric pads (0, 1, 2, 1) on a 3x2 kernel, 5x5 pad 2 stride 2; then a
    Flatten of 16x3x4 and a Linear to 10 outputs (weights permuted to HWC, channels padded)."""
    rng = np.random.default_rng(seed)
    inits, nodes = [], []

    def param(name, a):
        inits.append(numpy_helper.from_array(a, name))
        return name

    def conv(name, x, cin, cout, k, stride, pads, relu):
        kh, kw = k
        wt = (rng.standard_normal((cout, cin, kh, kw)) * np.sqrt(2.0 / (cin * kh * kw))).astype(np.float32)
        ins = [x, param(name + ".w", wt), param(name + ".b", (rng.standard_normal(cout) * 0.1).astype(np.float32))]
        nodes.append(helper.make_node("Conv", ins, [name], name, kernel_shape=[kh, kw],
                                      strides=[stride, stride], pads=list(pads)))
        if relu:
            nodes.append(helper.make_node("Relu", [name], [name + "_r"], name + "_relu"))
            return name + "_r"
        return name

    x = conv("conv1", "x", 3, 16, (3, 3), 1, (1, 1, 1, 1), True)       # 3x11x13 -> 16x11x13
    x = conv("conv2", x, 16, 16, (3, 3), 2, (1, 1, 1, 1), True)        # -> 16x6x7
    x = conv("conv3", x, 16, 24, (1, 1), 1, (0, 0, 0, 0), False)       # -> 24x6x7
    x = conv("conv4", x, 24, 8, (3, 2), 1, (0, 1, 2, 1), True)         # -> 8x6x8
    x = conv("conv5", x, 8, 16, (5, 5), 2, (2, 2, 2, 2), False)        # -> 16x3x4
    nodes.append(helper.make_node("Flatten", [x], ["flat"], "flatten", axis=1))
    nodes.append(helper.make_node("Gemm", ["flat", param("fc.w", (rng.standard_normal((10, 192)) * 0.1).astype(np.float32)),
                                           param("fc.b", np.zeros(10, np.float32))], ["y"], "fc", transB=1))
    graph = helper.make_graph(nodes, "aiepad",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 11, 13])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    onnx.save(model, str(path))
    return str(path)


PAD_ENTRY = """
  pad:
    source: m/pad.onnx
    quantization:
      calibration: {count: 4, seed: 0}
    targets:
      aie2p:
        layers:
          conv1: {tiles_per_call: 13}
          conv2: {channels_per_call: 8, cores: 2}
          conv4: {tiles_per_call: 3, channels_per_call: 8}
"""


def add_pad(project) -> None:
    pad_model(project.file("m/pad.onnx"))
    project.write("targets.yaml", project.read("targets.yaml").rstrip("\n") + "\n" + PAD_ENTRY)
