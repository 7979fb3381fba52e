"""onnxruntime's QOperator form (issue 23, part 1): QLinearConv, QGemm, QLinearMatMul,
QLinearAdd/Mul, QLinearAveragePool/GlobalAveragePool, QLinearConcat, QLinearSigmoid,
QLinearLeakyRelu and QLinearSoftmax, as onnxruntime's quantizer writes them, import as the
QDQ graph they stand for: every tensor equals the float64 evaluation of that QDQ spelling
(the oracle), the output is within 2 LSB of onnxruntime's own QOperator kernels, and the
programs pass on host and gap9."""
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
from nnscons.opkit.onnx_qoperator import QLINEAR

IN_SHAPE = (1, 3, 8, 8)


def float_model(path, seed=0):
    """Every op the QOperator converters cover, in one small graph."""
    rng = np.random.default_rng(seed)

    def init(name, shape, s):
        return numpy_helper.from_array(rng.normal(0, s, shape).astype(np.float32), name)

    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]),
             helper.make_node("Add", ["c2", "r1"], ["a"]),
             helper.make_node("Sigmoid", ["a"], ["s"]),
             helper.make_node("Mul", ["s", "a"], ["m"]),
             helper.make_node("AveragePool", ["m"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Concat", ["p", "p"], ["cc"], axis=1),
             helper.make_node("LeakyRelu", ["cc"], ["lr"], alpha=0.1),
             helper.make_node("GlobalAveragePool", ["lr"], ["g"]),
             helper.make_node("Flatten", ["g"], ["f"]),
             helper.make_node("Gemm", ["f", "wf", "bf"], ["y0"], transB=1),
             helper.make_node("MatMul", ["y0", "wm"], ["y1"]),
             helper.make_node("Softmax", ["y1"], ["y"], axis=-1)]
    inits = [init("w1", (8, 3, 3, 3), 0.3), init("b1", (8,), 0.1), init("w2", (8, 8, 3, 3), 0.2),
             init("b2", (8,), 0.1), init("wf", (10, 16), 0.3), init("bf", (10,), 0.1),
             init("wm", (10, 6), 0.3)]
    graph = helper.make_graph(nodes, "qop", [helper.make_tensor_value_info("x", TensorProto.FLOAT, IN_SHAPE)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 6])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return str(path)


def quantize_qoperator(float_path, out_path, per_channel, weight_type="QInt8"):
    return ort_quantize(float_path, out_path, seeded_samples(IN_SHAPE, 8), "QOperator", "QUInt8",
                        weight_type, per_channel=per_channel)


@pytest.fixture(scope="module", params=[False, True], ids=["per_tensor", "per_channel"])
def qop_model(request, tmp_path_factory):
    d = tmp_path_factory.mktemp("qop")
    return quantize_qoperator(float_model(d / "f.onnx"), d / "qop.onnx", request.param)


def test_the_quantizer_writes_every_qoperator_this_test_covers(qop_model):
    types = {n.op_type for n in onnx.load(qop_model).graph.node}
    # these two onnxruntime's quantizer never writes: tests/test_qoperator_contrib.py writes them
    by_hand = {"QLinearConvTranspose", "QLinearReduceMean"}
    assert set(QLINEAR) - by_hand <= types, set(QLINEAR) - by_hand - types


def test_every_tensor_equals_the_float64_qdq_evaluation(qop_model):
    g = load_model(qop_model, name="qop")
    for seed in range(3):
        x = np.random.default_rng(seed).standard_normal(IN_SHAPE).astype(np.float32)
        want = run_intermediates(qop_model, x)
        got = reference.run_graph(g, want[g.input])
        compared = [t for t in want if t in got]
        assert len(compared) >= len(g.layers)
        for t in compared:
            np.testing.assert_array_equal(got[t], want[t], err_msg=t)


def test_output_is_within_two_lsb_of_onnxruntimes_qoperator_kernels(qop_model):
    """An independent check of the converters' reading of the nodes (not the oracle:
    onnxruntime's kernels requantize in float32 and its sigmoid and softmax are tables of
    their own, 1 LSB here and there that the final softmax can double)."""
    import onnxruntime as ort
    g = load_model(qop_model, name="qop")
    sess = ort.InferenceSession(qop_model, providers=["CPUExecutionProvider"])
    q = g.tensor(g.output).q
    for seed in range(4):
        x = np.random.default_rng(seed).standard_normal(IN_SHAPE).astype(np.float32)
        ours = reference.dequantize(g.tensor(g.output),
                                    reference.run_graph(g, reference.quantize_input(g, x))[g.output])
        theirs = sess.run(None, {"x": x})[0]
        assert np.abs(ours - theirs).max() <= 2 * q.scale * 1.001


@pytest.mark.slow
def test_qoperator_model_builds_and_passes_on_host_and_gap9(project, tmp_path):
    q = quantize_qoperator(float_model(tmp_path / "f.onnx"), tmp_path / "net.onnx", True)
    proc = project.scons("target=host,gap9", f"model={q}", "-j2")
    for target in ("host", "gap9"):
        assert f"Test PASSED [{target}] net:" in proc.stdout, proc.stdout[-2000:]
    x = np.load(project.file(os.path.join(adhoc(project, "host", "net"), "output.npy")))
    assert x.shape == (1, 6)
