"""Asymmetric and uint8 weights (issue 23, part 2): onnxruntime's quantizer with uint8 or
asymmetric int8 weights, per tensor and per channel, in QDQ and QOperator form, imports
exactly (every tensor equals the float64 evaluation of the QDQ graph) and passes on the
targets; centred weights beyond int8 become int8 slots over copies of the input
(passes/weight_slots.py), grouped and depthwise convs included."""
from __future__ import annotations

import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from conftest import adhoc
from modelgen import ort_quantize, seeded_samples
from nnscons import reference
from nnscons.export.ort_oracle import run_intermediates
from nnscons.frontends import load_model
from nnscons.passes.weight_slots import slots

IN_SHAPE = (1, 4, 8, 8)


def float_model(path, seed=0):
    """A conv, a depthwise conv, a grouped conv, a pointwise conv, a Conv1d-like 1xk conv
    and a Gemm: every weighted form the slots rewrite touches."""
    rng = np.random.default_rng(seed)

    def init(name, shape, s, mean=0.0):
        return numpy_helper.from_array(rng.normal(mean, s, shape).astype(np.float32), name)

    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "wd", "bd"], ["c2"], pads=[1, 1, 1, 1], group=8),
             helper.make_node("Conv", ["c2", "wg", "bg"], ["c3"], pads=[0, 1, 0, 1], group=2),
             helper.make_node("Relu", ["c3"], ["r3"]),
             helper.make_node("Conv", ["r3", "wp"], ["c4"], strides=[2, 2]),
             helper.make_node("GlobalAveragePool", ["c4"], ["g"]),
             helper.make_node("Flatten", ["g"], ["f"]),
             helper.make_node("Gemm", ["f", "wf", "bf"], ["y"], transB=1)]
    inits = [init("w1", (8, 4, 3, 3), 0.3), init("b1", (8,), 0.1),
             init("wd", (8, 1, 3, 3), 0.4, 0.2), init("bd", (8,), 0.1),   # mostly positive
             init("wg", (6, 4, 1, 3), 0.3), init("bg", (6,), 0.1),
             init("wp", (8, 6, 1, 1), 0.3), init("wf", (5, 8), 0.3), init("bf", (5,), 0.1)]
    graph = helper.make_graph(nodes, "asym", [helper.make_tensor_value_info("x", TensorProto.FLOAT, IN_SHAPE)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return str(path)


def quantize(float_path, out_path, fmt, weight_type, per_channel):
    """onnxruntime's quantizer, asymmetric weights (uint8: its default; int8: WeightSymmetric
    off), uint8 activations."""
    return ort_quantize(float_path, out_path, seeded_samples(IN_SHAPE, 8), fmt, "QUInt8", weight_type,
                        per_channel=per_channel, extra_options={"WeightSymmetric": False})


CASES = [("QOperator", "QUInt8", False), ("QOperator", "QUInt8", True),
         ("QDQ", "QUInt8", False), ("QDQ", "QInt8", False)]


@pytest.fixture(scope="module", params=CASES, ids=["-".join(map(str, c)) for c in CASES])
def asym_model(request, tmp_path_factory):
    d = tmp_path_factory.mktemp("asym")
    fmt, wt, pc = request.param
    return quantize(float_model(d / "f.onnx"), d / "q.onnx", fmt, wt, pc)


def _weight_zero_points(path):
    m = onnx.load(path)
    inits = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
    zps = []
    for n in m.graph.node:
        if n.op_type == "QLinearConv":
            zps.append(inits[n.input[5]])
        elif n.op_type == "DequantizeLinear" and n.input[0] in inits and len(n.input) > 2 \
                and inits[n.input[0]].dtype != np.int32:
            zps.append(inits[n.input[2]])
    return zps


def test_the_quantizer_wrote_asymmetric_weights(asym_model):
    zps = _weight_zero_points(asym_model)
    assert zps and any(np.any((z != 0) & (z != 128)) for z in zps)


def test_every_tensor_equals_the_float64_qdq_evaluation(asym_model):
    g = load_model(asym_model, name="asym")
    assert any(l.name.endswith("_weight_slots") for l in g.layers)
    for layer in g.layers:
        assert layer.weight is None or layer.weight.dtype == np.int8, layer.name
    for seed in range(3):
        x = np.random.default_rng(seed).standard_normal(IN_SHAPE).astype(np.float32)
        want = run_intermediates(asym_model, x)
        got = reference.run_graph(g, want[g.input])
        compared = [t for t in want if t in got]
        assert g.output in compared
        for t in compared:
            np.testing.assert_array_equal(got[t], want[t], err_msg=t)


def test_slots_sum_to_every_centred_weight():
    d = np.arange(-255, 256)
    parts = slots(d)
    assert len(parts) == 3 and all(p.dtype == np.int8 for p in parts)
    np.testing.assert_array_equal(sum(p.astype(np.int64) for p in parts), d)
    assert len(slots(np.arange(-255, 255))) == 2       # 255 alone needs a third
    assert len(slots(np.arange(-128, 128))) == 1


def _qdq_conv(path, w_u8, zp_u8, group=1, x_shape=(1, 2, 5, 5)):
    """A hand-written QDQ conv with the given uint8 weights and zero points (per channel)."""
    o = w_u8.shape[0]
    y_shape = [1, o] + list(x_shape[2:])
    inits = [numpy_helper.from_array(np.array(0.05, np.float32), "sx"),
             numpy_helper.from_array(np.array(128, np.uint8), "zx"),
             numpy_helper.from_array(w_u8.astype(np.uint8), "wq"),
             numpy_helper.from_array(np.full(o, 0.01, np.float32), "sw"),
             numpy_helper.from_array(zp_u8.astype(np.uint8), "zw"),
             numpy_helper.from_array(np.array(0.2, np.float32), "sy"),
             numpy_helper.from_array(np.array(120, np.uint8), "zy")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "sx", "zx"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "sx", "zx"], ["xd"]),
             helper.make_node("DequantizeLinear", ["wq", "sw", "zw"], ["wd"], axis=0),
             helper.make_node("Conv", ["xd", "wd"], ["c"], pads=[1, 1, 1, 1], group=group),
             helper.make_node("QuantizeLinear", ["c", "sy", "zy"], ["cq"]),
             helper.make_node("DequantizeLinear", ["cq", "sy", "zy"], ["y"])]
    graph = helper.make_graph(nodes, "c", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return str(path)


@pytest.mark.parametrize("group", [1, 2])
def test_extreme_uint8_weights_take_three_slots_and_stay_exact(tmp_path, group):
    """Zero point 0 with weight 255 (an all-positive channel) and zero point 255 with
    weight 0: the centred extremes +-255."""
    rng = np.random.default_rng(1)
    w = rng.integers(0, 256, (4, 2 // group, 3, 3))
    w[0, 0, 0, 0], w[1, 0, 0, 0] = 255, 0
    path = _qdq_conv(tmp_path / "c.onnx", w, np.array([0, 255, 7, 200]), group)
    g = load_model(path, name="c")
    conv = next(l for l in g.layers if l.op == "conv2d")
    assert conv.weight.shape[1] == 3 * (2 // group)
    for seed in range(3):
        x = np.random.default_rng(seed).uniform(-6, 6, (1, 2, 5, 5)).astype(np.float32)
        want = run_intermediates(path, x)
        got = reference.run_graph(g, want[g.input])
        np.testing.assert_array_equal(got[g.output], want[g.output])


def test_weights_whose_centred_values_fit_int8_take_no_copies(tmp_path):
    w = np.random.default_rng(2).integers(60, 190, (4, 2, 3, 3))
    g = load_model(_qdq_conv(tmp_path / "c.onnx", w, np.array([128, 120, 130, 125])), name="c")
    assert [l.op for l in g.layers] == ["conv2d"]


@pytest.mark.slow
def test_asymmetric_models_build_and_pass_on_the_targets(project, tmp_path):
    fmt = quantize(float_model(tmp_path / "f.onnx"), tmp_path / "qop.onnx", "QOperator", "QUInt8", False)
    proc = project.scons("target=host,gap9,arm64", f"model={fmt}", "-j2")
    for target in ("host", "gap9", "arm64"):
        assert f"Test PASSED [{target}] qop:" in proc.stdout, proc.stdout[-2000:]
    y = np.load(project.file(os.path.join(adhoc(project, "host", "qop"), "output.npy")))
    assert y.shape == (1, 5)
