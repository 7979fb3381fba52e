"""Small ONNX models for the integration tests, quantized by onnxruntime's own quantizer."""
from __future__ import annotations

import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def float_cnn(path, names=None, seed=0):
    """conv-relu-maxpool, conv-relu, add (residual), global avgpool, flatten, gemm.

    `names` maps the default node names to others (hostile names for tests)."""
    n = {k: k for k in ("conv1", "relu1", "pool1", "conv2", "relu2", "add", "gap", "flatten", "fc")}
    n.update(names or {})
    rng = np.random.default_rng(seed)
    w1 = (rng.standard_normal((8, 3, 3, 3)) * 0.3).astype(np.float32)
    b1 = (rng.standard_normal(8) * 0.1).astype(np.float32)
    w2 = (rng.standard_normal((8, 8, 3, 3)) * 0.15).astype(np.float32)
    b2 = (rng.standard_normal(8) * 0.1).astype(np.float32)
    wf = (rng.standard_normal((5, 8)) * 0.3).astype(np.float32)
    bf = (rng.standard_normal(5) * 0.1).astype(np.float32)
    inits = [numpy_helper.from_array(a, name) for a, name in
             ((w1, "w1"), (b1, "b1"), (w2, "w2"), (b2, "b2"), (wf, "wf"), (bf, "bf"))]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], n["conv1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], n["relu1"]),
        helper.make_node("MaxPool", ["r1"], ["p1"], n["pool1"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "w2", "b2"], ["c2"], n["conv2"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"], n["relu2"]),
        helper.make_node("Add", ["r2", "p1"], ["s"], n["add"]),
        helper.make_node("GlobalAveragePool", ["s"], ["g"], n["gap"]),
        helper.make_node("Flatten", ["g"], ["f"], n["flatten"]),
        helper.make_node("Gemm", ["f", "wf", "bf"], ["y"], n["fc"], transB=1),
    ]
    graph = helper.make_graph(nodes, "tinycnn",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 16, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    onnx.save(model, str(path))
    return str(path)


def quantize_qdq(float_path, out_path, per_channel=True, uint8_activations=False, seed=0):
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                          quantize_static)
    model = onnx.load(str(float_path))
    inp = model.graph.input[0]
    shape = [d.dim_value for d in inp.type.tensor_type.shape.dim]
    rng = np.random.default_rng(seed)

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.data = iter([{inp.name: rng.standard_normal(shape).astype(np.float32)} for _ in range(8)])

        def get_next(self):
            return next(self.data, None)

    quantize_static(str(float_path), str(out_path), Reader(), quant_format=QuantFormat.QDQ,
                    per_channel=per_channel,
                    activation_type=QuantType.QUInt8 if uint8_activations else QuantType.QInt8,
                    weight_type=QuantType.QInt8)
    return str(out_path)
