"""Small ONNX models for the integration tests, quantized by onnxruntime's own quantizer."""
from __future__ import annotations

import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def _save(graph, path) -> str:
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    onnx.save(model, str(path))
    return str(path)


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
    return _save(graph, path)


def ort_quantize(float_path, out_path, samples, fmt="QDQ", activation_type="QInt8",
                 weight_type="QInt8", **options):
    """onnxruntime's quantize_static calibrated on `samples` (arrays for the model's first
    input); fmt, activation_type and weight_type by name (QDQ/QOperator, QInt8/QUInt8); the
    other options go to quantize_static as they are."""
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    name = onnx.load(str(float_path)).graph.input[0].name

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.data = iter([{name: np.asarray(x, np.float32)} for x in samples])

        def get_next(self):
            return next(self.data, None)

    quantize_static(str(float_path), str(out_path), Reader(), quant_format=getattr(QuantFormat, fmt),
                    activation_type=getattr(QuantType, activation_type),
                    weight_type=getattr(QuantType, weight_type), **options)
    return str(out_path)


def seeded_samples(shape, count):
    """Sample k drawn from the normal generator seeded k."""
    return [np.random.default_rng(k).standard_normal(shape).astype(np.float32) for k in range(count)]


def quantize_qdq(float_path, out_path, per_channel=True, uint8_activations=False, seed=0):
    inp = onnx.load(str(float_path)).graph.input[0]
    shape = [d.dim_value for d in inp.type.tensor_type.shape.dim]
    rng = np.random.default_rng(seed)
    samples = [rng.standard_normal(shape).astype(np.float32) for _ in range(8)]
    return ort_quantize(float_path, out_path, samples, per_channel=per_channel,
                        activation_type="QUInt8" if uint8_activations else "QInt8")


def edit_one_weight(qdq_path, layer="conv2") -> None:
    """Change one int8 weight of `layer` in a QDQ model file (a user's weight edit)."""
    model = onnx.load(qdq_path)
    node = next(n for n in model.graph.node if n.name == layer)
    dq = next(n for n in model.graph.node if n.output[0] == node.input[1])
    init = next(i for i in model.graph.initializer if i.name == dq.input[0])
    w = numpy_helper.to_array(init).copy()
    w.flat[0] = -w.flat[0] if w.flat[0] not in (0, -128) else 5
    init.CopyFrom(numpy_helper.from_array(w, init.name))
    onnx.save(model, qdq_path)


def float_all_ops(path, seed=0):
    """Every supported op at least once: strided, dilated, depthwise and 1x1 convs, BN, Relu,
    Clip (ReLU6), MaxPool, AveragePool (with and without counting pads), Concat, Add,
    GlobalAveragePool, Reshape, MatMul, and a Relu that cannot be fused (after a pool)."""
    rng = np.random.default_rng(seed)

    def w(name, *shape, scale=0.3):
        return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)

    inits = [w("w1", 8, 3, 3, 3), w("b1", 8, scale=0.1), w("wd", 8, 1, 3, 3), w("wdil", 8, 8, 3, 3, scale=0.15),
             w("w11", 8, 16, 1, 1), w("mm", 8, 6)]
    inits += [numpy_helper.from_array(a.astype(np.float32), n) for a, n in (
        (rng.uniform(0.5, 1.5, 8), "g"), (rng.standard_normal(8) * 0.1, "beta"),
        (rng.standard_normal(8) * 0.1, "mean"), (rng.uniform(0.5, 1.5, 8), "var"),
        (np.array(0.0), "lo"), (np.array(6.0), "hi"), (np.array([1, 8]), "shape"))]
    inits[-1] = numpy_helper.from_array(np.array([1, 8], dtype=np.int64), "shape")
    H = helper.make_node
    nodes = [
        H("Conv", ["x", "w1", "b1"], ["c1"], "conv_s2", pads=[1, 1, 1, 1], strides=[2, 2]),
        H("BatchNormalization", ["c1", "g", "beta", "mean", "var"], ["bn"], "bn"),
        H("Clip", ["bn", "lo", "hi"], ["r6"], "relu6"),
        H("Conv", ["r6", "wd"], ["dw"], "depthwise", pads=[1, 1, 1, 1], group=8),
        H("Relu", ["dw"], ["dwr"], "dw_relu"),
        H("Conv", ["dwr", "wdil"], ["dil"], "dilated", pads=[2, 2, 2, 2], dilations=[2, 2]),
        H("Concat", ["dil", "r6"], ["cat"], "concat", axis=1),
        H("Conv", ["cat", "w11"], ["pw"], "pointwise"),
        H("AveragePool", ["pw"], ["ap"], "avg_pad", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        H("AveragePool", ["pw"], ["ap2"], "avg_inc", kernel_shape=[3, 3], pads=[1, 1, 1, 1],
          count_include_pad=1),
        H("Add", ["ap", "ap2"], ["s"], "add"),
        H("MaxPool", ["s"], ["mp"], "maxpool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
        H("Relu", ["mp"], ["mpr"], "lone_relu"),
        H("GlobalAveragePool", ["mpr"], ["gap"], "gap"),
        H("Reshape", ["gap", "shape"], ["flat"], "reshape"),
        H("MatMul", ["flat", "mm"], ["y"], "matmul"),
    ]
    graph = helper.make_graph(nodes, "allops",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 20, 20])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 6])], inits)
    return _save(graph, path)
