"""ONNX frontends: QDQ import (onnxruntime quantize_static), float import + PTQ, bad input."""
from __future__ import annotations

import os
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "site_scons"))

from nnscons import ops as registry  # noqa: E402
from nnscons.errors import ModelError  # noqa: E402
from nnscons.frontends import load_model  # noqa: E402

IN_SHAPE = (1, 3, 8, 8)


# -- model builders (also used by test_export.py) -------------------------------------------
def save_model(path, nodes, inits, in_shape=IN_SHAPE, out_shape=None, opset=13,
               inputs=None, outputs=None):
    inits = [numpy_helper.from_array(np.asarray(a), n) for n, a in inits.items()]
    inputs = inputs or [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(in_shape))]
    out_shape = out_shape or ["n", "c", "h", "w"]
    outputs = outputs or [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)]
    graph = helper.make_graph(nodes, "g", inputs, outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return str(path)


def cnn(path, names=None, bn=False, seed=0):
    """conv(+bn)-relu, maxpool, conv-clip(0,6), add(residual), concat, gap, flatten, gemm."""
    n = {k: k for k in ("conv1", "bn1", "relu1", "pool", "conv2", "clip2", "add", "cat",
                        "gap", "flat", "fc")}
    n.update(names or {})
    rng = np.random.default_rng(seed)
    f32 = np.float32
    inits = {"w1": (rng.standard_normal((4, 3, 3, 3)) * 0.3).astype(f32),
             "b1": (rng.standard_normal(4) * 0.1).astype(f32),
             "w2": (rng.standard_normal((4, 1, 3, 3)) * 0.3).astype(f32),   # depthwise
             "lo": np.array(0.0, f32), "hi": np.array(6.0, f32),
             "wf": (rng.standard_normal((5, 8)) * 0.3).astype(f32),
             "bf": (rng.standard_normal(5) * 0.1).astype(f32)}
    c1_out = "c1"
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], n["conv1"], pads=[1, 1, 1, 1])]
    if bn:
        inits.update({"g": rng.uniform(0.5, 1.5, 4).astype(f32), "be": rng.normal(size=4).astype(f32),
                      "m": rng.normal(size=4).astype(f32), "v": rng.uniform(0.5, 2, 4).astype(f32)})
        nodes.append(helper.make_node("BatchNormalization", ["c1", "g", "be", "m", "v"], ["bn"],
                                      n["bn1"]))
        c1_out = "bn"
    nodes += [
        helper.make_node("Relu", [c1_out], ["r1"], n["relu1"]),
        helper.make_node("MaxPool", ["r1"], ["p1"], n["pool"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "w2"], ["c2"], n["conv2"], pads=[1, 1, 1, 1], group=4),
        helper.make_node("Clip", ["c2", "lo", "hi"], ["r2"], n["clip2"]),
        helper.make_node("Add", ["r2", "p1"], ["s"], n["add"]),
        helper.make_node("Concat", ["s", "p1"], ["cat"], n["cat"], axis=1),
        helper.make_node("GlobalAveragePool", ["cat"], ["gp"], n["gap"]),
        helper.make_node("Flatten", ["gp"], ["f"], n["flat"]),
        helper.make_node("Gemm", ["f", "wf", "bf"], ["y"], n["fc"], transB=1),
    ]
    return save_model(path, nodes, inits, out_shape=[1, 5])


def quantize(float_path, out_path, per_channel=True, uint8=False, keep_act=True, seed=1):
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                          quantize_static)

    class Reader(CalibrationDataReader):
        def __init__(self):
            rng = np.random.default_rng(seed)
            self.data = iter([{"x": rng.standard_normal(IN_SHAPE).astype(np.float32)}
                              for _ in range(8)])

        def get_next(self):
            return next(self.data, None)

    quantize_static(str(float_path), str(out_path), Reader(), quant_format=QuantFormat.QDQ,
                    per_channel=per_channel, weight_type=QuantType.QInt8,
                    activation_type=QuantType.QUInt8 if uint8 else QuantType.QInt8,
                    extra_options={"QDQKeepRemovableActivations": keep_act})
    return str(out_path)


def model_qparams(path):
    """{float tensor quantized: (scale, zero point in the int8 domain)} from the Q nodes;
    the graph output's Q is keyed by the graph output name."""
    m = onnx.load(path)
    inits = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
    out_q = {n.input[0] for n in m.graph.node if n.output[0] == m.graph.output[0].name}
    out = {}
    for node in m.graph.node:
        if node.op_type == "QuantizeLinear":
            zp = inits[node.input[2]]
            key = m.graph.output[0].name if node.output[0] in out_q else node.input[0]
            out[key] = (float(inits[node.input[1]]), int(zp) - (128 if zp.dtype == np.uint8 else 0))
    return out


def ops(graph):
    return [(l.name, l.op) for l in graph.layers]


# -- QDQ ------------------------------------------------------------------------------------
@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("uint8", [False, True])
def test_qdq_import_matches_model(tmp_path, per_channel, uint8):
    q = quantize(cnn(tmp_path / "f.onnx"), tmp_path / "q.onnx", per_channel, uint8)
    g = load_model(q, name="net")
    assert ops(g) == [("conv1", "conv2d"), ("pool", "maxpool"), ("conv2", "conv2d"),
                      ("add", "add"), ("cat", "concat"), ("gap", "global_avgpool"),
                      ("flat", "reshape"), ("fc", "linear")]
    assert (g.input, g.output) == ("x", "y")
    assert g.tensor("r1").shape == (1, 4, 8, 8) and g.tensor("p1").shape == (1, 4, 4, 4)
    assert g.tensor("cat").shape == (1, 8, 4, 4) and g.tensor("y").shape == (1, 5)
    conv1, conv2 = g.layers[0], g.layers[2]
    assert conv1.output == "r1" and conv1.fused == ["relu1"]
    assert conv1.source_ops == ["Conv", "Relu"] and conv2.fused == ["clip2"]
    assert conv2.attrs["groups"] == 4 and conv2.weight.shape == (4, 1, 3, 3)
    # Activation params are exactly the model's Q/DQ params (uint8 -> int8: zp - 128).
    qp = model_qparams(q)
    for name, t in g.tensors.items():
        assert (t.q.scale, t.q.zero_point) == qp[name], name
    assert conv1.act_min == g.tensor("r1").q.zero_point
    # Weights are the model's int8 initializers, bit for bit.
    m = onnx.load(q)
    inits = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
    np.testing.assert_array_equal(conv1.weight, inits["w1_quantized"])
    assert conv1.weight_scale.shape == (4,)
    np.testing.assert_array_equal(conv1.bias, inits["b1_quantized"])
    assert conv1.weight.dtype == np.int8 and conv1.bias.dtype == np.int32
    g.validate(registry.ir_ops())


def test_qdq_without_kept_relu_and_reference_agrees(tmp_path):
    """ORT removes Relu/Clip (their range lives in the Q); the reference matches ORT."""
    from nnscons.export.ort_oracle import run_intermediates
    from nnscons.reference import run_graph

    q = quantize(cnn(tmp_path / "f.onnx"), tmp_path / "q.onnx", keep_act=False)
    g = load_model(q, name="net")
    assert [l.op for l in g.layers][:3] == ["conv2d", "maxpool", "conv2d"]
    x = np.random.default_rng(5).standard_normal(IN_SHAPE).astype(np.float32)
    want = run_intermediates(q, x)
    got = run_graph(g, want["x"])
    for t in g.tensors:
        diff = np.abs(got[t].astype(int) - want[t].astype(int)).max()
        assert diff <= 1, (t, diff)


def test_qdq_fmt_checks(tmp_path):
    f = cnn(tmp_path / "f.onnx")
    q = quantize(f, tmp_path / "q.onnx")
    with pytest.raises(ModelError, match="not a QDQ model"):
        load_model(f, name="n", fmt="qdq")
    with pytest.raises(ModelError, match="already quantized"):
        load_model(q, name="n", fmt="float")
    with pytest.raises(ModelError, match="calibration applies to float models"):
        load_model(q, name="n", calibration={"count": 2})


def test_qdq_nonzero_weight_zero_point_is_exact(tmp_path):
    """An int8 weight with zero point 3: the conv multiplies q - 3 (tests/
    test_asymmetric_weights.py covers centred values beyond int8)."""
    inits = {"wq": np.ones((2, 3, 1, 1), np.int8), "ws": np.array(0.1, np.float32),
             "wz": np.array(3, np.int8), "xs": np.array(0.05, np.float32),
             "xz": np.array(0, np.int8)}
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"], "qx"),
             helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"], "dqx"),
             helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["w"], "dqw"),
             helper.make_node("Conv", ["xd", "w"], ["c"], "convA"),
             helper.make_node("QuantizeLinear", ["c", "xs", "xz"], ["cq"], "qc"),
             helper.make_node("DequantizeLinear", ["cq", "xs", "xz"], ["y"], "dqc")]
    p = save_model(tmp_path / "m.onnx", nodes, inits)
    g = load_model(p, name="n")
    (conv,) = [l for l in g.layers if l.op == "conv2d"]
    np.testing.assert_array_equal(conv.weight, np.full((2, 3, 1, 1), 1 - 3, np.int8))


def test_qdq_missing_activation_params(tmp_path):
    """A conv output without Q/DQ that is not fused away is a float island: the built-in
    calibration quantizes it, and the graph's notes name it."""
    inits = {"wq": np.ones((2, 3, 1, 1), np.int8), "ws": np.array(0.1, np.float32),
             "wz": np.array(0, np.int8), "xs": np.array(0.05, np.float32),
             "xz": np.array(0, np.int8), "w2": np.ones((2, 2, 1, 1), np.float32)}
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"], "qx"),
             helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"], "dqx"),
             helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["w"], "dqw"),
             helper.make_node("Conv", ["xd", "w"], ["c"], "convA"),
             helper.make_node("Conv", ["c", "w2"], ["c2"], "convB"),
             helper.make_node("QuantizeLinear", ["c2", "xs", "xz"], ["cq"], "qc"),
             helper.make_node("DequantizeLinear", ["cq", "xs", "xz"], ["y"], "dqc")]
    p = save_model(tmp_path / "m.onnx", nodes, inits)
    g = load_model(p, name="n")
    assert [l.op for l in g.layers] == ["conv2d", "conv2d"]
    assert "built-in calibration" in g.notes[0] and ": c" in g.notes[0]


# -- float + PTQ ----------------------------------------------------------------------------
def test_float_ptq_import(tmp_path):
    f = cnn(tmp_path / "f.onnx", bn=True)
    g = load_model(f, name="net", calibration={"count": 4, "seed": 3})
    assert ops(g)[0] == ("conv1", "conv2d")
    conv1 = g.layers[0]
    assert conv1.fused == ["bn1", "relu1"]
    assert conv1.source_ops == ["Conv", "BatchNormalization", "Relu"]
    assert g.tensor("p1").q == g.tensor("r1").q           # maxpool inherits
    assert g.tensor("r1").q.zero_point == -128 == conv1.act_min   # relu range starts at 0
    # Symmetric per-channel weights: every channel reaches +-127.
    assert (np.abs(conv1.weight.reshape(4, -1)).max(axis=1) == 127).all()
    # Deterministic: same calibration -> identical graph.
    g2 = load_model(f, name="net", calibration={"count": 4, "seed": 3})
    assert {k: v.q for k, v in g.tensors.items()} == {k: v.q for k, v in g2.tensors.items()}
    assert all((a.weight == b.weight).all() for a, b in zip(g.layers, g2.layers)
               if a.weight is not None)


def test_calibration_ranges_do_not_depend_on_thread_count(tmp_path, monkeypatch):
    """The calibration's onnxruntime threads are fixed (ptq.THREADS) and must not change a
    range: a machine with another core count computes the same quantized model."""
    from nnscons.frontends import ptq
    from nnscons.resources import zoo
    path = tmp_path / "m.onnx"
    path.write_bytes(zoo().build("mobilenetv2", 0, (1, 3, 96, 96)).SerializeToString())
    graphs = []
    for threads in (1, ptq.THREADS, 4):
        monkeypatch.setattr(ptq, "THREADS", threads)
        graphs.append(load_model(path, name="net", calibration={"count": 2, "seed": 0}))
    qs = [{k: v.q for k, v in g.tensors.items()} for g in graphs]
    assert qs[0] == qs[1] == qs[2]


def test_float_ptq_calibration_files(tmp_path):
    f = cnn(tmp_path / "f.onnx")
    rng = np.random.default_rng(0)
    one = rng.uniform(-1, 2, IN_SHAPE[1:]).astype(np.float32)       # one sample, no batch
    batch = rng.uniform(-3, 1, (3,) + IN_SHAPE[1:]).astype(np.float32)
    np.save(tmp_path / "a.npy", one)
    np.save(tmp_path / "b.npy", batch)
    g = load_model(f, name="n", calibration={"files": [str(tmp_path / "a.npy"),
                                                        str(tmp_path / "b.npy")]})
    lo, hi = min(one.min(), batch.min()), max(one.max(), batch.max())
    q = g.tensor("x").q
    assert q.scale == pytest.approx((hi - lo) / 255, rel=1e-6)
    assert q.zero_point == round(-128 - lo / q.scale)
    np.save(tmp_path / "bad.npy", np.zeros((2, 2), np.float32))
    with pytest.raises(ModelError, match="bad.npy.*shape"):
        load_model(f, name="n", calibration={"files": [str(tmp_path / "bad.npy")]})


def test_matmul_and_reshape(tmp_path):
    rng = np.random.default_rng(0)
    inits = {"shape": np.array([1, -1], np.int64),
             "w": rng.standard_normal((48, 6)).astype(np.float32)}
    nodes = [helper.make_node("Reshape", ["x", "shape"], ["f"], "rs"),
             helper.make_node("MatMul", ["f", "w"], ["y"], "mm")]
    p = save_model(tmp_path / "m.onnx", nodes, inits, in_shape=(1, 3, 4, 4))
    g = load_model(p, name="n")
    assert ops(g) == [("rs", "reshape"), ("mm", "linear")]
    assert g.layers[0].attrs == {"shape": (1, 48)}
    assert g.layers[1].weight.shape == (6, 48)


# -- names ----------------------------------------------------------------------------------
def test_hostile_names_survive(tmp_path):
    names = {"conv1": "../x", "pool": "a b", "conv2": "é", "add": "int", "cat": "",
             "gap": "", "fc": "../x"}
    g = load_model(cnn(tmp_path / "f.onnx", names), name="n", calibration={"count": 2})
    got = [l.name for l in g.layers]
    assert got[:4] == ["../x", "a b", "é", "int"]
    assert got[4:6] == ["Concat_6", "GlobalAveragePool_7"]   # deterministic fallbacks
    assert got[-1] == "../x_1"                               # duplicates disambiguated
    assert len(set(got)) == len(got)


# -- shapes ---------------------------------------------------------------------------------
def _symbolic(tmp_path, dims):
    inp = [helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)]
    inits = {"w": np.ones((2, 3, 3, 3), np.float32)}
    nodes = [helper.make_node("Conv", ["x", "w"], ["y"], "conv")]
    return save_model(tmp_path / "m.onnx", nodes, inits, inputs=inp)


def test_input_shape_override(tmp_path):
    p = _symbolic(tmp_path, ["N", 3, "H", "W"])
    g = load_model(p, name="n", input_shape=(1, 3, 10, 12), calibration={"count": 1})
    assert g.tensor("y").shape == (1, 2, 8, 10)
    with pytest.raises(ModelError, match="symbolic dimensions.*input_shape"):
        load_model(p, name="n")
    with pytest.raises(ModelError, match="rank 3 but the model input 'x' has rank 4"):
        load_model(p, name="n", input_shape=(1, 3, 10))
    with pytest.raises(ModelError, match="does not match the model input 'x'"):
        load_model(p, name="n", input_shape=(1, 4, 10, 10))
    with pytest.raises(ModelError, match="batch size 2"):
        load_model(p, name="n", input_shape=(2, 3, 10, 10))


# -- bad input ------------------------------------------------------------------------------
def _one_node(tmp_path, node, inits=None, in_shape=IN_SHAPE):
    return save_model(tmp_path / "m.onnx", [node], inits or {}, in_shape=in_shape)


def test_missing_and_corrupt_files(tmp_path):
    with pytest.raises(ModelError, match="not found"):
        load_model(str(tmp_path / "nope.onnx"), name="n")
    (tmp_path / "junk.onnx").write_bytes(b"\x08\x07garbage\xff\xff\xff")
    with pytest.raises(ModelError, match="junk.onnx"):
        load_model(str(tmp_path / "junk.onnx"), name="n")
    data = open(cnn(tmp_path / "f.onnx"), "rb").read()
    (tmp_path / "cut.onnx").write_bytes(data[: len(data) // 2])
    with pytest.raises(ModelError, match="cut.onnx"):
        load_model(str(tmp_path / "cut.onnx"), name="n")


def test_missing_initializer(tmp_path):
    p = _one_node(tmp_path, helper.make_node("Conv", ["x", "w_missing"], ["y"], "convX"))
    with pytest.raises(ModelError, match=r"m.onnx: node 'convX' \(Conv\): input 'w_missing'"):
        load_model(p, name="n")


def test_unsupported_op(tmp_path):
    p = _one_node(tmp_path, helper.make_node("Hardmax", ["x"], ["y"], "hmax"))
    with pytest.raises(ModelError) as e:
        load_model(p, name="n")
    msg = str(e.value)
    assert "m.onnx" in msg and "'hmax'" in msg and "Hardmax" in msg and "Conv" in msg


@pytest.mark.parametrize("node, match", [
    (helper.make_node("MaxPool", ["x"], ["y"], "mp", kernel_shape=[2, 2], dilations=[0, 2]),
     r"'mp' \(MaxPool\): invalid pads \(0, 0, 0, 0\), strides \(1, 1\) or dilations \(0, 2\)"),
    (helper.make_node("AveragePool", ["x"], ["y"], "ap", kernel_shape=[3, 3], pads=[1, 1, 1, 1],
                      ceil_mode=1, count_include_pad=1), r"'ap' \(AveragePool\): ceil_mode"),
    (helper.make_node("Conv", ["x", "w"], ["y"], "cv", auto_pad="SAME_MIDDLE"),
     r"'cv' \(Conv\): auto_pad=SAME_MIDDLE is not supported; use NOTSET, VALID, SAME_UPPER or SAME_LOWER"),
    (helper.make_node("Resize", ["x", "", "w"], ["y"], "rz", mode="cubic"), r"'rz' \(Resize\): mode 'cubic'"),
    (helper.make_node("Concat", ["x", "x"], ["y"], "cc", axis=0), r"'cc' \(Concat\): axis 0"),
])
def test_unsupported_attributes(tmp_path, node, match):
    p = _one_node(tmp_path, node, {"w": np.ones((2, 3, 3, 3), np.float32)})
    with pytest.raises(ModelError, match=match):
        load_model(p, name="n")


def test_bn_not_after_conv_is_a_per_channel_table(tmp_path):
    inits = {k: np.ones(3, np.float32) for k in ("g", "b", "m", "v")}
    node = helper.make_node("BatchNormalization", ["x", "g", "b", "m", "v"], ["y"], "bnX")
    g = load_model(_one_node(tmp_path, node, inits), name="n")
    assert [(l.name, l.op) for l in g.layers] == [("bnX", "lut")]


def test_batch_and_io_count(tmp_path):
    node = helper.make_node("Relu", ["x"], ["y"], "r")
    with pytest.raises(ModelError, match="batch size 2"):
        load_model(_one_node(tmp_path, node, in_shape=(2, 3, 4, 4)), name="n")
    # several inputs and outputs import (tests/test_multi_io.py); two Relus of the input
    # are two outputs
    two_in = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 3, 4, 4]) for n in "xz"]
    p = save_model(tmp_path / "two.onnx", [helper.make_node("Add", ["x", "z"], ["y"], "a")], {},
                   inputs=two_in)
    assert load_model(p, name="n").inputs == ["x", "z"]
    two_out = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 3, 8, 8]) for n in ("y", "x2")]
    nodes = [helper.make_node("Relu", ["x"], ["y"], "r"), helper.make_node("Relu", ["x"], ["x2"], "r2")]
    p = save_model(tmp_path / "twoout.onnx", nodes, {}, outputs=two_out)
    assert load_model(p, name="n").outputs == ["y", "x2"]
    with pytest.raises(ModelError, match="input_shape applies to a model with one input"):
        load_model(str(tmp_path / "two.onnx"), name="n", input_shape=(1, 3, 4, 4))


# -- models as people export them (issue 23's bugs) --------------------------------------------

def test_a_float_model_of_range_preserving_ops_only_calibrates(tmp_path):
    """MaxPool and GlobalMaxPool keep their input's parameters: calibration observes the
    input alone (onnxruntime refused a session with no output to observe)."""
    path = save_model(tmp_path / "rp.onnx", [helper.make_node("MaxPool", ["x"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
                                             helper.make_node("GlobalMaxPool", ["p"], ["y"])], {})
    g = load_model(path, name="rp")
    assert [l.op for l in g.layers] == ["maxpool", "maxpool"]
    assert g.tensor(g.output).q == g.tensor(g.input).q


def test_a_model_in_the_newest_ir_version_is_read_by_onnxruntime_too(tmp_path):
    """The pinned onnx writes IR version 14 by default, the pinned onnxruntime reads up to
    13: calibration and the oracle hand onnxruntime the lower version."""
    from nnscons.export.ort_oracle import run
    path = save_model(tmp_path / "ir.onnx", [helper.make_node("Conv", ["x", "w"], ["y"])],
                      {"w": np.random.default_rng(0).normal(0, 0.3, (4, 3, 1, 1)).astype(np.float32)})
    m = onnx.load(path)
    m.ir_version = 14
    onnx.save(m, path)
    g = load_model(path, name="ir")
    assert g.layers[0].op == "conv2d"
    x = np.random.default_rng(1).standard_normal(IN_SHAPE).astype(np.float32)
    assert run(path, x).shape == (1, 4, 8, 8)


def test_a_1d_model_takes_and_gives_its_own_rank_3_arrays(project, tmp_path):
    """Conv1d's input=x.npy is (1, C, L) as the model declares it, output.npy (1, C', L')."""
    from conftest import adhoc
    rng = np.random.default_rng(0)
    path = save_model(tmp_path / "c1d.onnx", [helper.make_node("Conv", ["x", "w"], ["y"], pads=[1, 1])],
                      {"w": rng.normal(0, 0.3, (5, 4, 3)).astype(np.float32)}, in_shape=(1, 4, 10),
                      out_shape=[1, 5, 10])
    np.save(tmp_path / "x.npy", rng.standard_normal((1, 4, 10)).astype(np.float32))
    proc = project.scons("target=host", f"model={path}", f"input={tmp_path / 'x.npy'}")
    assert "Test PASSED [host] c1d:" in proc.stdout
    out = np.load(project.file(os.path.join(adhoc(project, "host", "c1d"), "output.npy")))
    assert out.shape == (1, 5, 10)
    header = open(project.file(os.path.join(adhoc(project, "host", "c1d"), "include", "nns_c1d.h"))).read()
    assert '#define NNS_C1D_INPUT_X_FLOAT_LAYOUT "NCL"' in header
    assert "#define NNS_C1D_INPUT_X_FLOAT_DIMS { 1, 4, 10 }" in header


def test_a_reshape_between_differently_quantized_tensors_requantizes(tmp_path):
    """A Q after a Reshape with other parameters than the Reshape's input (what a quantizer
    writes after a float tail): the codes are requantized where ONNX rounds, not
    reinterpreted (equal to the exact QDQ evaluation on every tensor)."""
    from nnscons.export.ort_oracle import run_intermediates
    from nnscons.reference import run_graph
    rng = np.random.default_rng(2)

    def qdq(t, s, z, tag):
        return [helper.make_node("QuantizeLinear", [t, f"{tag}_s", f"{tag}_z"], [f"{t}_q"]),
                helper.make_node("DequantizeLinear", [f"{t}_q", f"{tag}_s", f"{tag}_z"], [f"{t}_d"])], \
            {f"{tag}_s": np.float32(s), f"{tag}_z": np.int8(z)}

    nodes, inits = [], {}
    for t, s, z, tag in (("x", 0.05, 0, "qx"),):
        n, i = qdq(t, s, z, tag)
        nodes += n
        inits.update(i)
    inits.update({"w": rng.integers(-100, 100, (4, 3, 1, 1)).astype(np.int8), "ws": np.float32(0.01),
                  "wz": np.int8(0), "shape": np.array([1, -1], dtype=np.int64)})
    nodes += [helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wd"]),
              helper.make_node("Conv", ["x_d", "wd"], ["c"])]
    n, i = qdq("c", 0.1, 3, "qc")
    nodes += n
    inits.update(i)
    nodes.append(helper.make_node("Reshape", ["c_d", "shape"], ["r"]))
    n, i = qdq("r", 0.13, -2, "qr")
    nodes += n
    inits.update(i)
    nodes.append(helper.make_node("Identity", ["r_d"], ["y"]))
    path = save_model(tmp_path / "r.onnx", nodes, inits, out_shape=[1, 256])
    g = load_model(path, name="r")
    assert [l.op for l in g.layers] == ["conv2d", "reshape", "requant"]
    x = np.random.default_rng(3).standard_normal(IN_SHAPE).astype(np.float32)
    want = run_intermediates(path, x)
    got = run_graph(g, want["x"])
    np.testing.assert_array_equal(got[g.output], want[g.output])


@pytest.mark.parametrize("auto_pad", ["SAME_UPPER", "SAME_LOWER"])
def test_auto_pad_same_gives_onnxs_pads(tmp_path, auto_pad):
    """Conv (stride 2, an 8x8 input: one padding element) and MaxPool with auto_pad
    SAME_*: every tensor equals the exact QDQ evaluation."""
    from nnscons.export.ort_oracle import run_intermediates
    from nnscons.reference import run_graph
    rng = np.random.default_rng(4)
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], auto_pad=auto_pad, strides=[2, 2]),
             helper.make_node("MaxPool", ["c"], ["y"], auto_pad=auto_pad, kernel_shape=[2, 2])]
    path = save_model(tmp_path / "f.onnx", nodes, {"w": rng.normal(0, 0.3, (6, 3, 3, 3)).astype(np.float32)},
                      in_shape=(1, 3, 8, 8), out_shape=[1, 6, 4, 4])
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.data = iter([{"x": rng.standard_normal((1, 3, 8, 8)).astype(np.float32)} for _ in range(4)])

        def get_next(self):
            return next(self.data, None)

    q = str(tmp_path / "q.onnx")
    quantize_static(path, q, Reader(), quant_format=QuantFormat.QDQ, weight_type=QuantType.QInt8,
                    activation_type=QuantType.QInt8)
    g = load_model(q, name="same")
    conv = g.layers[0]
    want_pads = (0, 0, 1, 1) if auto_pad == "SAME_UPPER" else (1, 1, 0, 0)
    assert tuple(conv.attrs["pads"]) == want_pads and g.tensor(g.output).shape == (1, 6, 4, 4)
    x = rng.standard_normal((1, 3, 8, 8)).astype(np.float32)
    want = run_intermediates(q, x)
    got = run_graph(g, want["x"])
    for t in want:
        if t in got:
            np.testing.assert_array_equal(got[t], want[t], err_msg=t)


def test_the_kernels_a_layer_needs_are_derived_from_what_its_code_calls():
    """A standalone requant layer's code calls nn_requant_s8 (kernels/common/nn_eltwise.c),
    which the host's op table does not list: the plan adds the file that defines it (and
    what that file calls in turn), so the library links."""
    from nnscons.resources import data_path
    from nnscons.targets.base import template_calls, with_kernel_dependencies
    from nnscons.targets.host.ops import OPS
    impl = OPS["requant"]
    calls = template_calls(data_path("templates", "host"), impl.template)
    assert "nn_requant_s8" in calls
    got = with_kernel_dependencies(impl.kernels, calls)
    assert data_path("kernels", "common", "nn_eltwise.c") in got
    assert set(impl.kernels) <= set(got)
    # an op table imported under another working directory names its kernels absolute
    # (SCons' SConscript chdir): the file is still found once, in data_path's form
    absolute = tuple(os.path.abspath(k) for k in impl.kernels)
    got = with_kernel_dependencies(absolute, calls)
    assert data_path("kernels", "common", "nn_eltwise.c") in got
    assert len({os.path.abspath(k) for k in got}) == len(got)


def test_a_float_model_of_one_relu_links_and_passes(project, tmp_path):
    path = save_model(tmp_path / "relu.onnx", [helper.make_node("Relu", ["x"], ["y"])], {},
                      out_shape=list(IN_SHAPE))
    proc = project.scons("target=host", f"model={path}")
    assert "Test PASSED [host] relu:" in proc.stdout


@pytest.mark.parametrize("axis", [2, -1])
def test_a_float_concat_along_h_or_w_calibrates_and_matches(tmp_path, axis):
    """Concat along H or W: transposed inputs and a channel concat whose output the ONNX model
    does not have (calibration leaves it out; it takes the transpose-back's parameters): the
    codes only move."""
    from nnscons import reference
    p = _one_node(tmp_path, helper.make_node("Concat", ["x", "x"], ["y"], "cc", axis=axis))
    g = load_model(p, name="m")
    assert sorted(layer.op for layer in g.layers) == ["concat", "move", "move", "move"]
    x = np.random.default_rng(0).standard_normal(g.tensor(g.input).shape).astype(np.float32)
    q = reference.quantize_input(g, x)
    assert np.array_equal(reference.run_graph(g, q)[g.output], np.concatenate([q, q], axis=axis))
