"""ONNX ops with float math inside QDQ semantics: Resize linear (bilinear), Div of two
activations, LRN and InstanceNormalization, each against the exact float64 QDQ oracle and
unoptimized onnxruntime (tests/test_ops.check_against_oracle), and small networks built
bit-exact on host and gap9 (emul)."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

import opsgen
from test_ops import HOST_SLOW, _passes, check_against_oracle

from nnscons.errors import ModelError  # noqa: E402
from nnscons.export.ort_oracle import run_intermediates  # noqa: E402
from nnscons.export.qdq_onnx import write_qdq  # noqa: E402
from nnscons.frontends import load_model  # noqa: E402
from nnscons.reference import quantize_input, run_graph  # noqa: E402


def _resize(mode, scales=None, sizes=None, name="up"):
    if scales is not None:
        return [helper.make_node("Resize", ["c", "", "sc"], ["y"], name, mode="linear",
                                 coordinate_transformation_mode=mode)], {"sc": np.array(scales, np.float32)}
    return [helper.make_node("Resize", ["c", "", "", "sz"], ["y"], name, mode="linear",
                             coordinate_transformation_mode=mode)], {"sz": np.array(sizes, np.int64)}


RESIZE_CASES = [
    ("half_pixel", [1, 1, 2, 2], None), ("pytorch_half_pixel", [1, 1, 2, 2], None),
    ("align_corners", [1, 1, 2, 2], None), ("asymmetric", [1, 1, 2, 2], None),
    ("half_pixel", None, [1, 4, 9, 5]), ("align_corners", None, [1, 4, 11, 4]),
    ("pytorch_half_pixel", None, [1, 4, 1, 13]), ("asymmetric", [1, 1, 1.5, 0.5], None),
    ("half_pixel", [1, 1, 1, 3], None), ("half_pixel", [1, 1, 0.5, 0.5], None),
]


@pytest.mark.parametrize("mode,scales,sizes", RESIZE_CASES,
                         ids=[f"{c[0]}{i}" for i, c in enumerate(RESIZE_CASES)])
@pytest.mark.parametrize("seed", [0, 1])
def test_resize_linear_matches_the_exact_oracle(tmp_path, mode, scales, sizes, seed):
    nodes, inits = _resize(mode, scales, sizes)
    path = opsgen.conv_then(tmp_path / "m.onnx", nodes, inits, out_shape=None, seed=seed)
    g = check_against_oracle(tmp_path, path, seed=seed)
    assert [l.op for l in g.layers] == ["conv2d", "bilinear"]


def resize_net(path, seed=0):
    """Conv, Relu, bilinear x2 (half_pixel, scales), conv, bilinear to a size (align_corners),
    conv, and a W-only pytorch_half_pixel resize (the H axis skipped)."""
    rng = np.random.default_rng(seed)
    inits = {"w1": rng.standard_normal((6, 3, 3, 3)) * 0.4, "b1": rng.standard_normal(6) * 0.2,
             "w2": rng.standard_normal((5, 6, 3, 3)) * 0.3, "sc": np.array([1, 1, 2, 2], np.float32),
             "sz": np.array([1, 5, 11, 7], np.int64), "sc2": np.array([1, 1, 1, 1.5], np.float32),
             "w3": rng.standard_normal((5, 5, 3, 3)) * 0.3}
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], "conv1", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"], "relu1"),
             helper.make_node("Resize", ["r1", "", "sc"], ["u1"], "up_half_pixel", mode="linear"),
             helper.make_node("Conv", ["u1", "w2"], ["c2"], "conv2", pads=[1, 1, 1, 1], strides=[2, 2]),
             helper.make_node("Resize", ["c2", "", "", "sz"], ["u2"], "up_corners", mode="linear",
                              coordinate_transformation_mode="align_corners"),
             helper.make_node("Conv", ["u2", "w3"], ["c3"], "conv3", pads=[1, 1, 1, 1]),
             helper.make_node("Resize", ["c3", "", "sc2"], ["y"], "up_w", mode="linear",
                              coordinate_transformation_mode="pytorch_half_pixel")]
    return opsgen.save(nodes, inits, (1, 3, 6, 6), (1, 5, 11, 10), path, name="resizenet")


def exact_net(tmp_path, path, seed=0):
    """Every tensor of a network equal to the exact float64 QDQ oracle (onnxruntime's float32
    drift compounds over a chain, so the per-op tests bound it, not this one)."""
    g = load_model(path, name="m")
    qdq = str(tmp_path / "m_qdq.onnx")
    write_qdq(g, qdq)
    x = np.random.default_rng(seed).standard_normal(g.tensor(g.input).shape).astype(np.float32)
    ours = run_graph(g, quantize_input(g, x))
    want = run_intermediates(qdq, x, exact=True)
    for layer in g.layers:
        np.testing.assert_array_equal(ours[layer.output], want[layer.output], err_msg=layer.name)
    return g


def test_resize_net_matches_the_oracle(tmp_path):
    g = exact_net(tmp_path, resize_net(tmp_path / "r.onnx"))
    assert [l.op for l in g.layers].count("bilinear") == 3


@pytest.mark.parametrize("target", HOST_SLOW)   # test_ops.HOST_SLOW: the host build is slow
def test_resize_net_builds_bit_exact(project, target):
    _passes(project, resize_net(project.file("m/resizenet.onnx")), target)


def _div_nodes(case):
    """Div of two activations: the divisor a Sigmoid (exact zeros once quantized), per
    channel (a global pool), one value (a Gemm to one output), or the dividend broadcast."""
    sig = helper.make_node("Sigmoid", ["c"], ["s"], "sig")
    gap = helper.make_node("GlobalAveragePool", ["s"], ["g"], "gap")
    if case == "same":
        return [sig, helper.make_node("Div", ["c", "s"], ["y"], "div")], {}
    if case == "channel":
        return [sig, gap, helper.make_node("Div", ["c", "g"], ["y"], "div")], {}
    if case == "swapped":
        return [sig, gap, helper.make_node("Div", ["g", "c"], ["y"], "div")], {}
    rng = np.random.default_rng(5)
    return [sig, gap, helper.make_node("Flatten", ["g"], ["f"], "flat"),
            helper.make_node("Gemm", ["f", "wg", "bg"], ["k"], "fc", transB=1),
            helper.make_node("Div", ["c", "k"], ["y"], "div")], \
        {"wg": rng.standard_normal((1, 4)), "bg": np.array([0.5])}


@pytest.mark.parametrize("case", ["same", "channel", "scalar", "swapped"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_div_of_two_activations_matches_the_exact_oracle(tmp_path, case, seed):
    nodes, inits = _div_nodes(case)
    path = opsgen.conv_then(tmp_path / "m.onnx", nodes, inits, seed=seed)
    g = check_against_oracle(tmp_path, path, seed=seed)
    div = g.layers[-1]
    assert div.op == "div" and div.attrs["mode"] == {"same": "same", "scalar": "scalar"}.get(case, "channel")
    assert div.attrs["swap"] == (case == "swapped")


def test_div_by_zero_saturates_and_zero_by_zero_is_the_minimum(tmp_path):
    """Codes at the zero point: x / 0 saturates by the sign of x, 0 / 0 gives -128, as
    onnxruntime and the float64 oracle."""
    nodes, inits = _div_nodes("same")
    g = load_model(opsgen.conv_then(tmp_path / "m.onnx", nodes, inits), name="m")
    layer = g.layers[-1]
    za, zb = (g.tensor(t).q.zero_point for t in layer.inputs)
    a = np.array([za + 5, za - 5, za], np.int8).reshape(1, 3, 1, 1)
    b = np.array([zb, zb, zb], np.int8).reshape(1, 3, 1, 1)
    g.tensor(layer.output).shape = (1, 3, 1, 1)
    from nnscons import ops
    out = ops.get("div").reference(layer, g, [a, b]).reshape(-1)
    assert out.tolist() == [127, -128, -128]


def div_net(path, seed=0):
    """A conv, a Sigmoid gate, and the three broadcasts of Div of two activations."""
    rng = np.random.default_rng(seed)
    inits = {"w1": rng.standard_normal((6, 3, 3, 3)) * 0.4, "b1": rng.standard_normal(6) * 0.2,
             "w2": rng.standard_normal((6, 6, 1, 1)) * 0.4}
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], "conv1", pads=[1, 1, 1, 1]),
             helper.make_node("Sigmoid", ["c1"], ["s1"], "sig"),
             helper.make_node("Div", ["c1", "s1"], ["d1"], "div_same"),
             helper.make_node("GlobalAveragePool", ["s1"], ["g1"], "gap"),
             helper.make_node("Div", ["d1", "g1"], ["d2"], "div_channel"),
             helper.make_node("Conv", ["d2", "w2"], ["c2"], "conv2"),
             helper.make_node("Div", ["g1", "c2"], ["y"], "div_swapped")]
    return opsgen.save(nodes, inits, (1, 3, 7, 7), (1, 6, 7, 7), path, name="divnet")


def test_div_net_matches_the_oracle(tmp_path):
    g = exact_net(tmp_path, div_net(tmp_path / "d.onnx"))
    assert [l.op for l in g.layers].count("div") == 3


@pytest.mark.parametrize("target", HOST_SLOW)   # test_ops.HOST_SLOW: the host build is slow
def test_div_net_builds_bit_exact(project, target):
    _passes(project, div_net(project.file("m/divnet.onnx")), target)


# AlexNet / ZFNet / GoogLeNet's; beta 0.5 and 1; windows wider than C (onnxruntime takes
# odd sizes only)
LRN_CASES = [
    {"size": 5, "alpha": 1e-4, "beta": 0.75, "bias": 1.0}, {"size": 3, "alpha": 0.5, "beta": 0.75, "bias": 1.0},
    {"size": 7, "alpha": 2.0, "beta": 0.5, "bias": 2.0}, {"size": 9, "alpha": 1.0, "beta": 1.0, "bias": 0.5},
]


@pytest.mark.parametrize("attrs", LRN_CASES, ids=[f"lrn{i}" for i in range(len(LRN_CASES))])
@pytest.mark.parametrize("seed", [0, 1])
def test_lrn_matches_the_exact_oracle(tmp_path, attrs, seed):
    nodes = [helper.make_node("LRN", ["c"], ["y"], "lrn", **attrs)]
    path = opsgen.conv_then(tmp_path / "m.onnx", nodes, c=6, seed=seed)
    g = check_against_oracle(tmp_path, path, seed=seed)
    assert [l.op for l in g.layers] == ["conv2d", "lrn"]


def test_the_oracle_lrn_sums_over_channels(tmp_path):
    """onnx's reference LRN (1.23) sums the window over the batch axis (onnx/onnx#7805); the
    oracle's is the spec's, as onnxruntime's."""
    from nnscons.export.ort_oracle import run
    nodes = [helper.make_node("LRN", ["x"], ["y"], "lrn", size=3, alpha=0.5, beta=0.75, bias=1.0)]
    path = opsgen.save(nodes, {}, (1, 4, 1, 1), (1, 4, 1, 1), tmp_path / "lrn.onnx")
    x = np.arange(1, 5, dtype=np.float32).reshape(1, 4, 1, 1)
    np.testing.assert_allclose(run(path, x, exact=True), run(path, x), rtol=1e-6)


def lrn_net(path, seed=0):
    """AlexNet's first block in small: conv, Relu, LRN, max pool, conv, Relu, LRN."""
    rng = np.random.default_rng(seed)
    inits = {"w1": rng.standard_normal((8, 3, 3, 3)) * 0.5, "b1": rng.standard_normal(8) * 0.2,
             "w2": rng.standard_normal((12, 8, 3, 3)) * 0.3, "b2": rng.standard_normal(12) * 0.2}
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], "conv1", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"], "relu1"),
             helper.make_node("LRN", ["r1"], ["n1"], "norm1", size=5, alpha=0.5, beta=0.75, bias=1.0),
             helper.make_node("MaxPool", ["n1"], ["p1"], "pool1", kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Conv", ["p1", "w2", "b2"], ["c2"], "conv2", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c2"], ["r2"], "relu2"),
             helper.make_node("LRN", ["r2"], ["y"], "norm2", size=3, alpha=1e-2, beta=0.75, bias=2.0)]
    return opsgen.save(nodes, inits, (1, 3, 10, 10), (1, 12, 5, 5), path, name="lrnnet")


def test_lrn_net_matches_the_oracle(tmp_path):
    g = exact_net(tmp_path, lrn_net(tmp_path / "l.onnx"))
    assert [l.op for l in g.layers].count("lrn") == 2


@pytest.mark.parametrize("target", HOST_SLOW)   # test_ops.HOST_SLOW: the host build is slow
def test_lrn_net_builds_bit_exact(project, target):
    _passes(project, lrn_net(project.file("m/lrnnet.onnx")), target)


def _instnorm(seed, c=4, eps=1e-5):
    rng = np.random.default_rng(seed + 10)
    return ([helper.make_node("InstanceNormalization", ["c", "g", "bb"], ["y"], "inorm", epsilon=eps)],
            {"g": rng.uniform(0.5, 2.0, c) * rng.choice([-1, 1], c), "bb": rng.standard_normal(c) * 0.5})


@pytest.mark.parametrize("eps", [1e-5, 0.3])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_instance_norm_matches_the_exact_oracle(tmp_path, eps, seed):
    nodes, inits = _instnorm(seed, eps=eps)
    path = opsgen.conv_then(tmp_path / "m.onnx", nodes, inits, seed=seed, hw=7)
    g = check_against_oracle(tmp_path, path, seed=seed)
    assert [l.op for l in g.layers] == ["conv2d", "instnorm"]


def test_instance_norm_of_a_constant_channel(tmp_path):
    """A Relu'd channel that is all zero: variance 0, the output is B."""
    rng = np.random.default_rng(3)
    nodes = [helper.make_node("Relu", ["c"], ["r"], "relu"),
             helper.make_node("InstanceNormalization", ["r", "g", "bb"], ["y"], "inorm")]
    inits = {"b": np.array([0.2, -50.0, 0.1, 0.3]), "g": rng.uniform(0.5, 2.0, 4),
             "bb": np.array([0.1, 0.7, -0.2, 0.4])}
    path = opsgen.conv_then(tmp_path / "m.onnx", nodes, inits)
    check_against_oracle(tmp_path, path)


def instnorm_net(path, seed=0):
    """A style-transfer block in small: conv, InstanceNorm, Relu, conv, InstanceNorm, residual Add."""
    rng = np.random.default_rng(seed)
    inits = {"w1": rng.standard_normal((6, 3, 3, 3)) * 0.5, "b1": rng.standard_normal(6) * 0.2,
             "g1": rng.uniform(0.5, 1.5, 6), "t1": rng.standard_normal(6) * 0.3,
             "w2": rng.standard_normal((6, 6, 3, 3)) * 0.3, "g2": rng.uniform(0.5, 1.5, 6),
             "t2": rng.standard_normal(6) * 0.3}
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], "conv1", pads=[1, 1, 1, 1]),
             helper.make_node("InstanceNormalization", ["c1", "g1", "t1"], ["n1"], "in1"),
             helper.make_node("Relu", ["n1"], ["r1"], "relu1"),
             helper.make_node("Conv", ["r1", "w2"], ["c2"], "conv2", pads=[1, 1, 1, 1]),
             helper.make_node("InstanceNormalization", ["c2", "g2", "t2"], ["n2"], "in2", epsilon=1e-3),
             helper.make_node("Add", ["n2", "r1"], ["y"], "residual")]
    return opsgen.save(nodes, inits, (1, 3, 9, 9), (1, 6, 9, 9), path, name="instnormnet")


def test_instnorm_net_matches_the_oracle(tmp_path):
    g = exact_net(tmp_path, instnorm_net(tmp_path / "i.onnx"))
    assert [l.op for l in g.layers].count("instnorm") == 2


@pytest.mark.parametrize("target", HOST_SLOW)   # test_ops.HOST_SLOW: the host build is slow
def test_instnorm_net_builds_bit_exact(project, target):
    _passes(project, instnorm_net(project.file("m/instnormnet.onnx")), target)


RESIZE_REFUSED = [
    ({"mode": "cubic"}, [1, 1, 2, 2], "mode 'cubic' is not supported; supported: nearest"),
    ({"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize"}, [1, 1, 2, 2],
     "coordinate_transformation_mode 'tf_crop_and_resize' is not supported with mode 'linear'"),
    ({"mode": "linear", "antialias": 1}, [1, 1, 0.5, 0.5], "antialias=1 is not supported"),
    ({"mode": "linear"}, [1, 2, 2, 2], "only H and W may be resized"),
]


@pytest.mark.parametrize("attrs,scales,message", RESIZE_REFUSED, ids=[m[:20] for _, _, m in RESIZE_REFUSED])
def test_resize_refusals_name_the_node_and_what_is_supported(tmp_path, attrs, scales, message):
    node = helper.make_node("Resize", ["c", "", "sc"], ["y"], "up", **attrs)
    path = opsgen.conv_then(tmp_path / "m.onnx", [node], {"sc": np.array(scales, np.float32)},
                            out_shape=None, opset=18)
    with pytest.raises(ModelError) as e:
        load_model(path, name="m")
    assert message in str(e.value) and "node 'up' (Resize)" in str(e.value)


def test_k210_refuses_the_float_ops_clearly(tmp_path):
    """k210's CPU layers have no float64 kernels: planning names the layer and the op."""
    from nnscons.errors import UserError
    from nnscons.targets import k210
    nodes = [helper.make_node("GlobalAveragePool", ["c"], ["g"], "gap"),
             helper.make_node("Div", ["c", "g"], ["y"], "div")]
    g = load_model(opsgen.conv_then(tmp_path / "m.onnx", nodes), name="m")
    opts = {k: dict(v) for k, v in k210.DEFAULTS.items()}
    with pytest.raises(UserError, match="layer 'div' .*op 'div' is not supported by target kind 'k210'"):
        k210.plan(g, {l.name: l.name for l in g.layers}, opts, {}, lambda *a: "targets.yaml")


def band_net(path, seed=0):
    """Resizes and an InstanceNormalization whose tensors exceed a small L1 budget: gap9 runs
    the resizes in bands of rows, the normalization in two passes over chunks of pixels."""
    rng = np.random.default_rng(seed)
    inits = {"w1": rng.standard_normal((8, 3, 3, 3)) * 0.5, "b1": rng.standard_normal(8) * 0.2,
             "sc": np.array([1, 1, 2, 2], np.float32), "sz": np.array([1, 8, 20, 40], np.int64),
             "g": rng.uniform(0.5, 1.5, 8), "t": rng.standard_normal(8) * 0.3}
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], "conv1", pads=[1, 1, 1, 1]),
             helper.make_node("Resize", ["c1", "", "sc"], ["u1"], "up2", mode="linear"),
             helper.make_node("Resize", ["u1", "", "", "sz"], ["u2"], "to_20x40", mode="linear",
                              coordinate_transformation_mode="asymmetric"),
             helper.make_node("InstanceNormalization", ["u2", "g", "t"], ["y"], "inorm")]
    return opsgen.save(nodes, inits, (1, 3, 16, 16), (1, 8, 20, 40), path, name="bandnet")


def test_gap9_bilinear_bands_cover_the_output(tmp_path):
    from nnscons.targets.gap9 import ops as gap9_ops
    g = load_model(band_net(tmp_path / "b.onnx"), name="m")
    for layer in [l for l in g.layers if l.op == "bilinear"]:
        til, _ = gap9_ops.bilinear_tiling(layer, g, 4096)
        assert til is not None and til.n_tiles > 1 and til.l1_bytes <= 4096
        bands = gap9_ops.bilinear_rows(layer, g, til.tw)
        assert sum(b[1] for b in bands) == layer.attrs["out_hw"][0]
        assert max(b[3] for b in bands) == til.in_rows
        _, need = gap9_ops.bilinear_tiling(layer, g, 1)     # the smallest budget that works
        assert gap9_ops.bilinear_tiling(layer, g, need)[0] is not None
        assert gap9_ops.bilinear_tiling(layer, g, need - 1)[0] is None


def test_gap9_instnorm_streams_chunks_of_pixels(tmp_path):
    from nnscons.targets.gap9 import ops as gap9_ops
    g = load_model(band_net(tmp_path / "b.onnx"), name="m")
    til, _ = gap9_ops.plan_tiling(g.layers[-1], g, 4096)
    assert g.layers[-1].op == "instnorm" and til.n_tiles > 1 and til.l1_bytes <= 4096


def test_gap9_bilinear_in_bands_builds_bit_exact(project):
    text = project.read("targets.yaml")
    project.write("targets.yaml", text.replace("  pulp-open:\n", "  gap9-bands:\n    kind: gap9\n"
                                               "    tiling: {l1_budget: 4KiB}\n    run: {platform: emul}\n\n"
                                               "  pulp-open:\n", 1))
    _passes(project, band_net(project.file("m/bandnet.onnx")), "gap9-bands")


def all_net(path, seed=0):
    """The four float64 ops in one network (the arm64 check: AArch64 compilers fuse
    multiply-adds unless told not to, and the kernels must not)."""
    rng = np.random.default_rng(seed)
    inits = {"w1": rng.standard_normal((6, 3, 3, 3)) * 0.5, "b1": rng.standard_normal(6) * 0.2,
             "sc": np.array([1, 1, 1.5, 2], np.float32), "g": rng.uniform(0.5, 1.5, 6),
             "t": rng.standard_normal(6) * 0.3}
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], "conv1", pads=[1, 1, 1, 1]),
             helper.make_node("LRN", ["c1"], ["n1"], "lrn", size=3, alpha=0.3, beta=0.75, bias=1.0),
             helper.make_node("Resize", ["n1", "", "sc"], ["u"], "up", mode="linear",
                              coordinate_transformation_mode="pytorch_half_pixel"),
             helper.make_node("InstanceNormalization", ["u", "g", "t"], ["i"], "inorm"),
             helper.make_node("Sigmoid", ["i"], ["s"], "sig"),
             helper.make_node("Div", ["i", "s"], ["y"], "div")]
    return opsgen.save(nodes, inits, (1, 3, 8, 8), (1, 6, 12, 16), path, name="allnet")


def test_all_net_matches_the_oracle(tmp_path):
    g = exact_net(tmp_path, all_net(tmp_path / "a.onnx"))
    assert {"lrn", "bilinear", "instnorm", "div"} <= {l.op for l in g.layers}


def test_all_net_builds_bit_exact_on_arm64(project):
    _passes(project, all_net(project.file("m/allnet.onnx")), "arm64")


@pytest.mark.parametrize("opset,op_type", [(10, "Resize"), (9, "Upsample")])
def test_old_opset_linear_resize_keeps_its_asymmetric_coordinates(tmp_path, opset, op_type):
    """Models below opset 11 are upgraded by onnx's version converter, which gives Resize-13's
    default half_pixel; Resize-10 and Upsample interpolate at x / scale (as onnxruntime runs
    the original model)."""
    import onnxruntime as ort
    from nnscons.frontends.onnx_file import read_onnx
    node = helper.make_node(op_type, ["c", "sc"], ["y"], "up", mode="linear")
    path = opsgen.conv_then(tmp_path / "m.onnx", [node], {"sc": np.array([1, 1, 2, 2], np.float32)},
                            out_shape=None, opset=opset)
    x = np.random.default_rng(0).standard_normal((1, 3, 6, 6)).astype(np.float32)
    want = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    upgraded = read_onnx(path).proto.SerializeToString()
    got = ort.InferenceSession(upgraded, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    np.testing.assert_array_equal(got, want)
    g = check_against_oracle(tmp_path, path)
    assert g.layers[-1].op == "bilinear" and g.layers[-1].attrs["coord"] == "asymmetric"


def test_aie2p_host_fallback_refuses_the_float_ops_clearly(tmp_path):
    """aie2p's host fallback has no float64 kernels: planning names the layer and lists what
    it runs (instead of a C #error at compile time)."""
    from nnscons.errors import UserError
    from nnscons.targets import aie2p
    nodes = [helper.make_node("LRN", ["c"], ["y"], "norm", size=3)]
    g = load_model(opsgen.conv_then(tmp_path / "m.onnx", nodes), name="m")
    opts = {k: dict(v) for k, v in aie2p.DEFAULTS.items()}
    opts["mapping"]["fallback"], opts["run"]["platform"] = "host", "emul"
    with pytest.raises(UserError, match="layer 'norm' .*op 'lrn' has no AIE kernel and no host fallback"):
        aie2p.plan(g, {l.name: l.name for l in g.layers}, opts, {}, lambda *a: "targets.yaml")


@pytest.mark.parametrize("mode", ["half_pixel", "align_corners"])
def test_resize_linear_with_its_own_output_quantization(tmp_path, mode):
    """A QDQ model may give the resize's output other parameters than its input's."""
    from dataclasses import replace
    nodes, inits = _resize(mode, None, [1, 4, 9, 11])
    g = load_model(opsgen.conv_then(tmp_path / "m.onnx", nodes, inits, out_shape=None), name="m")
    t = g.tensor(g.layers[-1].output)
    t.q = replace(t.q, scale=float(np.float32(t.q.scale * 0.37)), zero_point=t.q.zero_point + 11)
    qdq = str(tmp_path / "m_qdq.onnx")
    write_qdq(g, qdq)
    x = np.random.default_rng(4).standard_normal(g.tensor(g.input).shape).astype(np.float32)
    ours = run_graph(g, quantize_input(g, x))
    want = run_intermediates(qdq, x, exact=True)
    assert np.count_nonzero(ours[t.name] == 127) + np.count_nonzero(ours[t.name] == -128) > 0
    np.testing.assert_array_equal(ours[t.name], want[t.name])
