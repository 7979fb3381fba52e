"""onnxruntime's dynamic quantization (issue 23, part 1: ConvInteger and MatMulInteger with
their surrounding scale arithmetic): DynamicQuantizeLinear -> ConvInteger/MatMulInteger ->
Cast -> Mul by x_scale * w_scale reads as the float Conv/MatMul with the dequantized weights,
which nnscons calibrates and builds like any float model; a chain of another shape is refused
with the node's name."""
from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import QuantType, quantize_dynamic

from nnscons.errors import ModelError
from nnscons.frontends import load_model
from nnscons.frontends.onnx_integer import to_float
from test_qoperator import IN_SHAPE, float_model


def _ort(path_or_bytes, x):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 3
    return ort.InferenceSession(path_or_bytes, so, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]


@pytest.fixture(scope="module", params=[False, True], ids=["per_tensor", "per_channel"])
def dynamic(request, tmp_path_factory):
    d = tmp_path_factory.mktemp("dyn")
    f = float_model(d / "f.onnx")
    q = str(d / "dyn.onnx")
    quantize_dynamic(f, q, weight_type=QuantType.QInt8, per_channel=request.param,
                     op_types_to_quantize=["Conv", "MatMul", "Gemm"])
    return f, q


def test_the_quantizer_writes_integer_ops_and_they_read_as_the_float_model(dynamic):
    f, q = dynamic
    types = {n.op_type for n in onnx.load(q).graph.node}
    assert {"ConvInteger", "MatMulInteger", "DynamicQuantizeLinear"} <= types
    g = to_float(onnx.load(q), q)
    assert not {n.op_type for n in g.graph.node} & {"ConvInteger", "MatMulInteger", "DynamicQuantizeLinear", "Cast"}
    for seed in range(3):
        x = np.random.default_rng(seed).standard_normal(IN_SHAPE).astype(np.float32)
        want, got = _ort(f, x), _ort(g.SerializeToString(), x)
        # only the weights' int8 rounding separates them (the activations are float here)
        assert np.abs(got - want).max() <= 0.02 * np.abs(want).max() + 1e-6
    assert load_model(q, name="dyn").layers


# a cold host build with the fidelity run: 19-19.5 s of CPU each; per_tensor stays quick (the
# build path of integer ops), per_channel runs in CI
@pytest.mark.parametrize("dynamic", [False, pytest.param(True, marks=pytest.mark.slow)],
                         ids=["per_tensor", "per_channel"], indirect=True)
def test_a_dynamically_quantized_model_builds_and_passes_on_the_host(project, dynamic):
    _, q = dynamic
    with open(q, "rb") as f:
        project.write("dyn.onnx", f.read())
    proc = project.scons("model=dyn.onnx")
    assert "Test PASSED [host]" in proc.stdout
    assert "fidelity to the float model" in proc.stdout


def test_another_chain_is_refused_with_the_node_named(tmp_path):
    rng = np.random.default_rng(0)
    wq = numpy_helper.from_array(rng.integers(-5, 5, (4, 3, 3, 3)).astype(np.int8), "wq")
    nodes = [helper.make_node("DynamicQuantizeLinear", ["x"], ["xq", "xs", "xz"]),
             helper.make_node("ConvInteger", ["xq", "wq", "xz"], ["acc"], name="the_conv", pads=[1, 1, 1, 1]),
             helper.make_node("Cast", ["acc"], ["y"], to=TensorProto.FLOAT)]        # no scale Mul
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])], [wq])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    path = str(tmp_path / "bad.onnx")
    onnx.save(m, path)
    with pytest.raises(ModelError, match=r"node 'the_conv' \(ConvInteger\): its output must go to exactly one Mul"):
        to_float(onnx.load(path), path)
