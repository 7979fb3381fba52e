"""The op registry and the ops real networks use: each op against the exact QDQ oracle
(float64 onnx reference evaluation) and unoptimized onnxruntime, through the frontend."""
from __future__ import annotations

import sys
from pathlib import Path

_SITE = str(Path(__file__).resolve().parents[1] / "site_scons")
if _SITE not in sys.path:
    sys.path.insert(0, _SITE)

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from onnx import helper  # noqa: E402

import opsgen  # noqa: E402
from nnscons import ops  # noqa: E402
from nnscons.export.ort_oracle import run_intermediates  # noqa: E402
from nnscons.export.qdq_onnx import write_qdq  # noqa: E402
from nnscons.frontends import load_model  # noqa: E402
from nnscons.reference import quantize_input, run_graph  # noqa: E402


def test_registry_knows_every_ir_op_and_onnx_type():
    names = ops.ir_ops()
    assert {"conv2d", "linear", "maxpool", "avgpool", "global_avgpool", "add", "concat",
            "requant", "reshape", "lut"} <= set(names)
    for d in ops.all_ops():
        if d.ir:
            assert d.reference and d.shape and d.export, d.name
    assert ops.for_onnx("Conv") and ops.for_onnx("HardSwish") and ops.for_onnx("Nope") is None


def check_against_oracle(tmp_path, float_path, seed=0, exact=True, roundtrip=True):
    """Float model -> built-in PTQ -> IR; the IR's QDQ export evaluated exactly and by
    unoptimized onnxruntime, tensor by tensor, against the integer reference; the QDQ file
    read back gives the same graph."""
    g = load_model(float_path, name="m")
    qdq = str(tmp_path / "m_qdq.onnx")
    write_qdq(g, qdq)
    rng = np.random.default_rng(seed)
    shape = g.tensor(g.input).shape
    x = rng.standard_normal(shape).astype(np.float32)
    ours = run_graph(g, quantize_input(g, x))
    want = run_intermediates(qdq, x, exact=True)
    ort = run_intermediates(qdq, x, exact=False)
    for layer in g.layers:
        t = layer.output
        a = ours[t].astype(np.int32)
        b = want[t].astype(np.int32)
        assert np.abs(a - ort[t].astype(np.int32)).max() <= 1, (layer.name, layer.op)
        if exact:
            np.testing.assert_array_equal(a, b, err_msg=f"{layer.name} ({layer.op})")
        else:
            assert np.abs(a - b).max() <= 1 and np.mean(a == b) >= 0.99, (layer.name, layer.op)
    if not roundtrip:
        return g
    back = load_model(qdq, name="m")
    assert [l.op for l in back.layers] == [l.op for l in g.layers]
    for la, lb in zip(g.layers, back.layers):
        if la.weight is not None:
            np.testing.assert_array_equal(la.weight, lb.weight)
    return g


LUT_CASES = [
    ("Sigmoid", {}, {}), ("HardSigmoid", {"alpha": 0.25, "beta": 0.4}, {}),
    ("HardSwish", {}, {}), ("Tanh", {}, {}), ("LeakyRelu", {"alpha": 0.1}, {}),
    ("Elu", {"alpha": 0.7}, {}), ("Selu", {}, {}), ("Softplus", {}, {}), ("Exp", {}, {}),
    ("Celu", {"alpha": 1.3}, {}), ("Softsign", {}, {}), ("Abs", {}, {}), ("Erf", {}, {}),
    ("PRelu", {}, {"slope": np.array([0.1, -0.2, 0.5, 0.0]).reshape(4, 1, 1)}),
    ("PRelu", {}, {"slope": np.array([0.25])}),
]


@pytest.mark.parametrize("op_type,attrs,inits", LUT_CASES,
                         ids=[f"{c[0]}{i}" for i, c in enumerate(LUT_CASES)])
def test_lut_ops_match_the_exact_oracle(tmp_path, op_type, attrs, inits):
    node = helper.make_node(op_type, ["c"] + list(inits), ["y"], "act", **attrs)
    path = opsgen.conv_then(tmp_path / "m.onnx", [node], inits)
    g = check_against_oracle(tmp_path, path)
    assert [l.op for l in g.layers] == ["conv2d", "lut"]
    tables = g.layers[-1].weight.shape[0]
    assert tables == (4 if op_type == "PRelu" and inits["slope"].size == 4 else 1)


def test_lut_after_relu_fuses_the_clamp(tmp_path):
    nodes = [helper.make_node("Sigmoid", ["c"], ["s"], "sig"),
             helper.make_node("Clip", ["s", "lo", "hi"], ["y"], "clip")]
    path = opsgen.conv_then(tmp_path / "m.onnx", nodes, {"lo": np.float32(0.2), "hi": np.float32(0.7)})
    g = check_against_oracle(tmp_path, path)
    assert [l.op for l in g.layers] == ["conv2d", "lut"]


# The per-op networks' builds: on the host 8.0-15.3 s of CPU, 11.6 on average (gemm transA 8.0,
# glu 15.3; 11 measured), slow (CI); on gap9 emul 6.6-8.7 s, quick -- as the zoo's host builds
# (test_zoo_ops.py).  Their reference against the exact oracle stays quick.
HOST_SLOW = [pytest.param("host", marks=pytest.mark.slow), "gap9"]


def _passes(project, path, target):
    name = Path(path).stem
    args = [f"target={target}", f"model={path}", "-j2"] + (["platform=emul"] if target == "gap9" else [])
    proc = project.scons(*args)
    assert f"Test PASSED [{target}] {name}" in proc.stdout, proc.stdout[-3000:]


@pytest.mark.parametrize("target", HOST_SLOW)
def test_lut_net_builds_bit_exact(project, target):
    _passes(project, opsgen.lut_net(project.file("m/lutnet.onnx")), target)


CONST_CASES = [
    ("Add", 0, np.float32(0.3)), ("Add", 1, np.array([0.1, -0.5, 0.2, 1.0]).reshape(4, 1, 1)),
    ("Sub", 0, np.array([0.1, -0.5, 0.2, 1.0]).reshape(1, 4, 1, 1)), ("Sub", 1, np.float32(0.7)),
    ("Mul", 0, np.array([0.5, -1.5, 2.0, 0.25]).reshape(4, 1, 1)), ("Mul", 1, np.float32(-0.6)),
    ("Div", 0, np.array([0.5, -1.5, 2.0, 0.25]).reshape(4, 1, 1)), ("Div", 0, np.float32(3.0)),
]


@pytest.mark.parametrize("op_type,pos,const", CONST_CASES,
                         ids=[f"{c[0]}{i}" for i, c in enumerate(CONST_CASES)])
def test_binary_with_a_constant_is_an_exact_table(tmp_path, op_type, pos, const):
    ins = ["c", "k"] if pos == 0 else ["k", "c"]
    path = opsgen.conv_then(tmp_path / "m.onnx", [helper.make_node(op_type, ins, ["y"], "op")],
                            {"k": const})
    g = check_against_oracle(tmp_path, path)
    assert [l.op for l in g.layers] == ["conv2d", "lut"]


def test_batchnorm_after_a_pool_is_a_per_channel_table(tmp_path):
    rng = np.random.default_rng(3)
    bn = {"s": rng.uniform(0.5, 2, 4), "bb": rng.standard_normal(4), "mu": rng.standard_normal(4) * 0.1,
          "var": rng.uniform(0.5, 2, 4)}
    nodes = [helper.make_node("MaxPool", ["c"], ["p"], "pool", kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("BatchNormalization", ["p", "s", "bb", "mu", "var"], ["y"], "bn")]
    path = opsgen.conv_then(tmp_path / "m.onnx", nodes, bn, out_shape=(1, 4, 3, 3))
    g = check_against_oracle(tmp_path, path)
    assert [l.op for l in g.layers] == ["conv2d", "maxpool", "lut"]
    assert g.layers[-1].weight.shape == (4, 256)


@pytest.mark.parametrize("op_type", ["Sub", "Sum"])
def test_sub_and_sum_of_two_activations(tmp_path, op_type):
    nodes = [helper.make_node("Relu", ["c"], ["r"], "relu"),
             helper.make_node(op_type, ["c", "r"], ["y"], "op")]
    path = opsgen.conv_then(tmp_path / "m.onnx", nodes)
    g = check_against_oracle(tmp_path, path, exact=False)
    assert [l.op for l in g.layers] == ["conv2d", "requant", "add"]


def test_squeeze_excite_block_matches_the_oracle(tmp_path):
    g = check_against_oracle(tmp_path, opsgen.se_net(tmp_path / "se.onnx"), exact=False)
    ops_ = [l.op for l in g.layers]
    assert ops_.count("mul") == 3 and "lut" in ops_
    assert {l.attrs["mode"] for l in g.layers if l.op == "mul"} == {"channel", "same"}


@pytest.mark.parametrize("target", HOST_SLOW)
def test_se_net_builds_bit_exact(project, target):
    _passes(project, opsgen.se_net(project.file("m/senet.onnx")), target)


@pytest.mark.parametrize("keepdims", [0, 1])
def test_reduce_mean_and_global_maxpool(tmp_path, keepdims):
    nodes = [helper.make_node("GlobalMaxPool", ["c"], ["m"], "gmp"),
             helper.make_node("Add", ["m", "m"], ["m2"], "add"),
             helper.make_node("ReduceMean", ["c"], ["r"], "rmean", axes=[2, 3], keepdims=keepdims)]
    if keepdims:
        nodes.append(helper.make_node("Mul", ["r", "m2"], ["y"], "mul"))
    else:
        nodes.append(helper.make_node("Flatten", ["m2"], ["f"], "flat"))
        nodes.append(helper.make_node("Mul", ["r", "f"], ["y"], "mul"))
    path = opsgen.conv_then(tmp_path / "m.onnx", nodes, opset=13,
                            out_shape=(1, 4, 1, 1) if keepdims else (1, 4))
    g = check_against_oracle(tmp_path, path, exact=False)
    assert [l.op for l in g.layers][:3] == ["conv2d", "maxpool", "add"]
    assert "global_avgpool" in [l.op for l in g.layers]


def test_zero_pad_folds_into_conv_and_avgpool(tmp_path):
    rng = np.random.default_rng(1)
    nodes = [helper.make_node("Pad", ["c", "p1"], ["cp"], "pad1"),
             helper.make_node("Conv", ["cp", "w2"], ["c2"], "conv2"),
             helper.make_node("Pad", ["c2", "p2"], ["c2p"], "pad2"),
             helper.make_node("AveragePool", ["c2p"], ["y"], "pool", kernel_shape=[2, 2], strides=[2, 2])]
    inits = {"p1": np.array([0, 0, 1, 2, 0, 0, 2, 1], np.int64), "w2": rng.standard_normal((4, 4, 3, 3)) * 0.3,
             "p2": np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64)}
    path = opsgen.conv_then(tmp_path / "m.onnx", nodes, inits, out_shape=None)
    g = check_against_oracle(tmp_path, path, exact=False)
    assert [l.op for l in g.layers] == ["conv2d", "conv2d", "avgpool"]
    assert g.layers[1].attrs["pads"] == (1, 2, 2, 1) and g.layers[2].attrs["count_include_pad"] == 1


MOVE_CASES = {
    "transpose_hw": ([helper.make_node("Transpose", ["c"], ["y"], "t", perm=[0, 1, 3, 2])], {}),
    "shuffle": ([helper.make_node("Reshape", ["c", "s1"], ["r1"], "r1"),
                 helper.make_node("Transpose", ["r1"], ["t"], "t", perm=[0, 2, 1, 3, 4]),
                 helper.make_node("Reshape", ["t", "s2"], ["y"], "r2")],
                {"s1": np.array([1, 2, 2, 6, 6], np.int64), "s2": np.array([1, 4, 6, 6], np.int64)}),
    "d2s": ([helper.make_node("DepthToSpace", ["c"], ["y"], "d2s", blocksize=2, mode="CRD")], {}),
    "s2d": ([helper.make_node("SpaceToDepth", ["c"], ["y"], "s2d", blocksize=2)], {}),
    "resize": ([helper.make_node("Resize", ["c", "", "sc"], ["y"], "up", mode="nearest")],
               {"sc": np.array([1, 1, 2, 2], np.float32)}),
    "slice": ([helper.make_node("Slice", ["c", "st", "en", "ax"], ["y"], "sl")],
              {"st": np.array([1, 1], np.int64), "en": np.array([3, 5], np.int64), "ax": np.array([1, 3], np.int64)}),
    "pad_reflect": ([helper.make_node("Pad", ["c", "pp"], ["y"], "pad", mode="reflect")],
                    {"pp": np.array([0, 0, 1, 2, 0, 0, 2, 1], np.int64)}),
    "pad_const": ([helper.make_node("Pad", ["c", "pp", "pv"], ["y"], "pad", mode="constant")],
                  {"pp": np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "pv": np.float32(0.5)}),
    "squeeze": ([helper.make_node("GlobalAveragePool", ["c"], ["g"], "gap"),
                 helper.make_node("Squeeze", ["g", "ax"], ["y"], "sq")], {"ax": np.array([2, 3], np.int64)}),
}


@pytest.mark.parametrize("case", sorted(MOVE_CASES))
def test_data_movements_are_exact_gathers(tmp_path, case):
    nodes, inits = MOVE_CASES[case]
    path = opsgen.conv_then(tmp_path / "m.onnx", nodes, inits, out_shape=None)
    g = check_against_oracle(tmp_path, path)
    assert g.layers[-1].op == "move" and len(g.layers) <= 3


def test_split_every_output_used(tmp_path):
    nodes = [helper.make_node("Split", ["c", "sp"], ["h0", "h1"], "split", axis=1),
             helper.make_node("Add", ["h0", "h1"], ["y"], "add")]
    path = opsgen.conv_then(tmp_path / "m.onnx", nodes, {"sp": np.array([2, 2], np.int64)}, out_shape=None)
    g = check_against_oracle(tmp_path, path, exact=False, roundtrip=False)
    assert [l.op for l in g.layers] == ["conv2d", "move", "move", "add"]


def test_shuffle_and_detector_movements_match_the_oracle(tmp_path):
    g = check_against_oracle(tmp_path, opsgen.shuffle_net(tmp_path / "s.onnx"), exact=False)
    assert sum(l.op == "move" for l in g.layers) >= 5


@pytest.mark.parametrize("target", HOST_SLOW)
def test_shuffle_net_builds_bit_exact(project, target):
    _passes(project, opsgen.shuffle_net(project.file("m/shufflenet.onnx")), target)


def test_pytorch_style_shape_chain_before_reshape_is_folded(tmp_path):
    """Shape -> Gather -> Unsqueeze -> Concat -> Reshape (what torch.flatten exports)."""
    nodes = [helper.make_node("Shape", ["c"], ["shp"], "shape"),
             helper.make_node("Gather", ["shp", "zero"], ["n"], "gather", axis=0),
             helper.make_node("Unsqueeze", ["n", "ax0"], ["n1"], "unsq"),
             helper.make_node("Concat", ["n1", "minus1"], ["newshape"], "cat", axis=0),
             helper.make_node("Reshape", ["c", "newshape"], ["f"], "reshape"),
             helper.make_node("Sigmoid", ["f"], ["y"], "sig")]
    inits = {"zero": np.array(0, np.int64), "ax0": np.array([0], np.int64),
             "minus1": np.array([-1], np.int64)}
    path = opsgen.conv_then(tmp_path / "m.onnx", nodes, inits, out_shape=(1, 144))
    g = check_against_oracle(tmp_path, path)
    assert [l.op for l in g.layers] == ["conv2d", "reshape", "lut"]


def test_float_island_after_the_last_quantize_is_calibrated(tmp_path):
    """QDQ model whose tail (Sigmoid, Mul by a constant) the quantizer left in float."""
    import onnx
    from onnx import TensorProto, numpy_helper
    rng = np.random.default_rng(0)
    inits = [numpy_helper.from_array(np.float32(0.02), "xs"), numpy_helper.from_array(np.int8(0), "xz"),
             numpy_helper.from_array(np.float32(0.05), "cs"), numpy_helper.from_array(np.int8(-3), "cz"),
             numpy_helper.from_array((rng.standard_normal((4, 3, 3, 3)) * 0.3).astype(np.float32), "w"),
             numpy_helper.from_array(np.float32(2.5), "k")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
             helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xd"]),
             helper.make_node("Conv", ["xd", "w"], ["c"], "conv", pads=[1, 1, 1, 1]),
             helper.make_node("QuantizeLinear", ["c", "cs", "cz"], ["cq"]),
             helper.make_node("DequantizeLinear", ["cq", "cs", "cz"], ["cd"]),
             helper.make_node("Sigmoid", ["cd"], ["s"], "sig"),
             helper.make_node("Mul", ["s", "k"], ["y"], "scale")]
    graph = helper.make_graph(nodes, "island", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 6, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 6, 6])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    path = str(tmp_path / "island.onnx")
    onnx.save(model, path)
    g = load_model(path, name="island")
    # the Sigmoid and the Mul are one table (passes: ops.lut.merge_island_chains): one
    # rounding, at the output, whose scale the built-in calibration gives
    assert [l.op for l in g.layers] == ["conv2d", "lut"]
    assert g.notes and "built-in calibration" in g.notes[0]
    x = rng.standard_normal((1, 3, 6, 6)).astype(np.float32)
    from nnscons.export.ort_oracle import run
    want = run(path, x)
    out = g.tensor(g.output)
    got = (run_graph(g, quantize_input(g, x))[g.output].astype(np.float32) - out.q.zero_point) * out.q.scale
    # one quantization the float model does not have (the output's, at a scale calibrated
    # on random inputs, which this input's extremes can exceed): a few LSB, not exact
    assert np.abs(got - want).max() <= 5 * out.q.scale


@pytest.mark.parametrize("stride,pads,out_pad", [((2, 2), (1, 1, 1, 1), (1, 1)), ((2, 1), (0, 1, 0, 1), (0, 0)),
                                                 ((1, 1), (1, 1, 1, 1), (0, 0))])
def test_conv_transpose_is_spread_plus_conv(tmp_path, stride, pads, out_pad):
    rng = np.random.default_rng(4)
    nodes = [helper.make_node("ConvTranspose", ["c", "wt", "bt"], ["y"], "deconv", strides=list(stride),
                              pads=list(pads), output_padding=list(out_pad), kernel_shape=[3, 3])]
    inits = {"wt": rng.standard_normal((4, 5, 3, 3)) * 0.3, "bt": rng.standard_normal(5) * 0.1}
    path = opsgen.conv_then(tmp_path / "m.onnx", nodes, inits, out_shape=None)
    g = check_against_oracle(tmp_path, path, roundtrip=False)
    # and the decomposition is ConvTranspose: compare with the float model in onnxruntime
    from nnscons.export.ort_oracle import run
    x = rng.standard_normal(g.tensor(g.input).shape).astype(np.float32)
    want = run(path, x)
    out = g.tensor(g.output)
    assert want.shape == out.shape
    got = (run_graph(g, quantize_input(g, x))[g.output].astype(np.float32) - out.q.zero_point) * out.q.scale
    # quantization of the float model (PTQ clipping on a few inputs): close, not exact
    assert np.mean(np.abs(got - want) <= 3 * out.q.scale) >= 0.95


def test_old_opset_model_is_converted(tmp_path):
    """An opset-9 model (Upsample with scales, BN, Clip with attributes) imports through
    onnx's version converter."""
    rng = np.random.default_rng(2)
    bn = {"s": rng.uniform(0.5, 2, 4), "bb": rng.standard_normal(4), "mu": rng.standard_normal(4) * 0.1,
          "var": rng.uniform(0.5, 2, 4), "sc": np.array([1, 1, 2, 2], np.float32)}
    nodes = [helper.make_node("BatchNormalization", ["c", "s", "bb", "mu", "var"], ["n"], "bn"),
             helper.make_node("Clip", ["n"], ["r"], "clip", min=0.0, max=6.0),
             helper.make_node("Upsample", ["r", "sc"], ["y"], "up", mode="nearest")]
    path = opsgen.conv_then(tmp_path / "m.onnx", nodes, bn, opset=9, out_shape=(1, 4, 12, 12))
    g = load_model(path, name="m")
    assert [l.op for l in g.layers] == ["conv2d", "move"]
    check_against_oracle(tmp_path, path)


def test_softmax_of_a_classifier_within_one_lsb(tmp_path):
    nodes = [helper.make_node("GlobalAveragePool", ["c"], ["g"], "gap"),
             helper.make_node("Flatten", ["g"], ["f"], "flat"),
             helper.make_node("Gemm", ["f", "wf"], ["logits"], "fc", transB=1),
             helper.make_node("Softmax", ["logits"], ["y"], "softmax", axis=-1)]
    rng = np.random.default_rng(6)
    path = opsgen.conv_then(tmp_path / "m.onnx", nodes, {"wf": rng.standard_normal((10, 4)) * 2},
                            out_shape=(1, 10))
    g = check_against_oracle(tmp_path, path, exact=False)
    assert g.layers[-1].op == "softmax"


@pytest.mark.parametrize("target", HOST_SLOW)
def test_classifier_tail_builds_bit_exact(project, target):
    _passes(project, opsgen.classifier_tail(project.file("m/clstail.onnx")), target)


def test_whole_map_average_pool_is_a_global_pool(tmp_path):
    nodes = [helper.make_node("AveragePool", ["c"], ["y"], "pool", kernel_shape=[6, 6])]
    path = opsgen.conv_then(tmp_path / "m.onnx", nodes, out_shape=(1, 4, 1, 1))
    g = check_against_oracle(tmp_path, path, roundtrip=False)
    assert [l.op for l in g.layers] == ["conv2d", "global_avgpool"]
