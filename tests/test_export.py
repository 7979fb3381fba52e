"""QDQ ONNX export (write_qdq) and the onnxruntime oracle."""
from __future__ import annotations

import os
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "site_scons"))
sys.path.insert(0, HERE)

from nnscons.export.ort_oracle import run, run_intermediates  # noqa: E402
from nnscons.export.qdq_onnx import write_qdq  # noqa: E402
from nnscons.frontends import load_model  # noqa: E402
from nnscons.reference import run_graph  # noqa: E402
from test_frontend_ares import ares_dir  # noqa: E402
from test_frontend_onnx import IN_SHAPE, cnn, quantize  # noqa: E402


def assert_same_graph(a, b):
    assert (a.input, a.output) == (b.input, b.output)
    assert {k: (v.shape, v.q) for k, v in a.tensors.items()} == \
        {k: (v.shape, v.q) for k, v in b.tensors.items()}
    assert len(a.layers) == len(b.layers)
    for x, y in zip(a.layers, b.layers):
        assert (x.name, x.op, x.inputs, x.output, x.attrs, x.act_min, x.act_max) == \
            (y.name, y.op, y.inputs, y.output, y.attrs, y.act_min, y.act_max)
        if x.weight is not None:
            np.testing.assert_array_equal(x.weight, y.weight)
            np.testing.assert_array_equal(x.weight_scale, y.weight_scale)
            np.testing.assert_array_equal(x.bias, y.bias)


@pytest.fixture(params=["qdq", "float", "ares"])
def graph(request, tmp_path):
    if request.param == "qdq":
        return load_model(quantize(cnn(tmp_path / "f.onnx"), tmp_path / "q.onnx", uint8=True),
                          name="net")
    if request.param == "float":
        names = {"conv1": "../x", "pool": "a b", "conv2": "é", "add": "int"}
        return load_model(cnn(tmp_path / "f.onnx", names, bn=True), name="net",
                          calibration={"count": 3})

    def edit(info, weights):   # a standalone relu (requant with clamp) and a QuantIdentity
        info["relu_p"] = {"type": "QuantReLU", "scale_output": 0.012}
        info["requant"] = {"type": "QuantIdentity", "scale": 0.03}
        info["__layer_order__"][4:4] = ["relu_p", "requant"]
        info["conv2"]["scale_input"] = 0.03
    return load_model(ares_dir(tmp_path / "ares", edit), name="net")


def test_round_trip_and_oracle(graph, tmp_path):
    path = str(tmp_path / "out.onnx")
    write_qdq(graph, path)
    back = load_model(path, name="net")
    assert_same_graph(graph, back)
    shape = graph.tensor(graph.input).shape
    x = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
    ints = run_intermediates(path, x)
    assert set(ints) == set(graph.tensors)
    assert all(v.dtype == np.int8 and v.shape == graph.tensor(k).shape for k, v in ints.items())
    out = graph.tensor(graph.output)
    y = run(path, x)   # extra outputs can change ORT's kernel fusion: allow 1 LSB
    np.testing.assert_allclose(y, out.q.scale * (ints[graph.output].astype(np.float32)
                                                  - out.q.zero_point), atol=1.01 * out.q.scale)
    ref = run_graph(graph, ints[graph.input])
    for t in graph.tensors:
        assert np.abs(ref[t].astype(int) - ints[t].astype(int)).max() <= 1, t


def test_deterministic_bytes(graph, tmp_path):
    a, b = str(tmp_path / "a.onnx"), str(tmp_path / "b.onnx")
    write_qdq(graph, a)
    write_qdq(graph, b)
    data = open(a, "rb").read()
    assert data == open(b, "rb").read()
    before = os.stat(a).st_mtime_ns
    write_qdq(graph, a)                       # unchanged bytes: file left alone
    assert os.stat(a).st_mtime_ns == before


def test_oracle_on_uint8_model(tmp_path):
    q = quantize(cnn(tmp_path / "f.onnx"), tmp_path / "q.onnx", uint8=True, per_channel=False)
    g = load_model(q, name="net")
    x = np.random.default_rng(3).standard_normal(IN_SHAPE).astype(np.float32)
    ints = run_intermediates(q, x)
    assert set(g.tensors) <= set(ints)
    assert ints["x"].dtype == np.int8
    assert ints["x"].min() >= g.tensor("x").q.zero_point - 128


def test_onnxruntime_fuses_every_conv_gemm_and_add(tmp_path):
    """quantized.onnx is onnxruntime-friendly: with its optimizations on, no Conv, Gemm or
    Add stays in float (convs reading an Add or a MaxPool included)."""
    import collections

    import onnx
    import onnxruntime as ort
    from models.zoo import resnet18
    from nnscons.frontends import load_model as load
    src = tmp_path / "r.onnx"
    onnx.save(resnet18.build(0, (1, 3, 32, 32)), src)
    g = load(str(src), name="r", input_shape=(1, 3, 32, 32))
    write_qdq(g, str(tmp_path / "q.onnx"))
    so = ort.SessionOptions()
    so.optimized_model_filepath = str(tmp_path / "opt.onnx")
    ort.InferenceSession(str(tmp_path / "q.onnx"), so, providers=["CPUExecutionProvider"])
    ops = collections.Counter(n.op_type for n in onnx.load(str(tmp_path / "opt.onnx")).graph.node)
    assert ops["QLinearConv"] == 20 and ops["QLinearAdd"] == 8 and ops["QGemm"] == 1, ops
    assert ops["Conv"] == ops["Gemm"] == ops["Add"] == 0, ops
