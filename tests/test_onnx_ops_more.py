"""More ONNX ops and attributes against the exact QDQ oracle, each also in a small network
built on host and gap9 (emul): Split with implicit sizes (GLU), dilated pools, Gemm with
transA, Reduce* over any axes, Sum/Max/Min of N activations."""
from __future__ import annotations

import glob
import json
import os
from pathlib import Path

import numpy as np
import pytest
from onnx import helper

import opsgen
from test_ops import HOST_SLOW, _passes, check_against_oracle
from test_ops_fallback import check_host_fallback, kernels  # noqa: F401  (kernels: the compiled host fallback)


def _rng_inits(seed, **shapes):
    rng = np.random.default_rng(seed)
    return {k: rng.standard_normal(s) * (0.1 if k.startswith("b") else 0.4) for k, s in shapes.items()}


# ---------------------------------------------------------------- Split (GLU)

def _split_node(opset, ins, outs, n, explicit):
    """Split of 'c' along channels into n equal parts, the sizes given as each opset can."""
    if explicit and opset >= 13:
        return helper.make_node("Split", ins + ["sp"], outs, "split", axis=1)
    if explicit:
        return helper.make_node("Split", ins, outs, "split", axis=1, split=[6 // n] * n)
    if opset >= 18:
        return helper.make_node("Split", ins, outs, "split", axis=1, num_outputs=n)
    return helper.make_node("Split", ins, outs, "split", axis=1)


SPLIT_CASES = [(opset, n, explicit) for opset in (11, 13, 17, 18) for n in (2, 3)
               for explicit in (False, True)]


@pytest.mark.parametrize("opset,n,explicit", SPLIT_CASES,
                         ids=[f"o{o}-n{n}-{'sizes' if e else 'implicit'}" for o, n, e in SPLIT_CASES])
def test_split_outputs_feed_different_consumers(tmp_path, opset, n, explicit):
    """Every output of an equal Split has its own part: output k of an implicit Split used to
    be computed as a Split into k + 1 parts (the first output was the whole input)."""
    outs = [f"p{k}" for k in range(n)]
    nodes = [_split_node(opset, ["c"], outs, n, explicit),
             helper.make_node("Sigmoid", [outs[-1]], ["s"], "sig"),
             helper.make_node("Mul", [outs[0], "s"], ["m" if n == 3 else "y"], "mul")]
    if n == 3:
        nodes += [helper.make_node("Tanh", [outs[1]], ["t"], "tanh"),
                  helper.make_node("Concat", ["m", "t"], ["y"], "cat", axis=1)]
    inits = {"sp": np.array([6 // n] * n, np.int64)} if explicit and opset >= 13 else {}
    path = opsgen.conv_then(tmp_path / "m.onnx", nodes, inits, c=6, hw=4, out_shape=None, opset=opset)
    g = check_against_oracle(tmp_path, path, roundtrip=False)
    moves = [l for l in g.layers if l.op == "move"]
    assert len(moves) == n and all(g.tensor(l.output).shape == (1, 6 // n, 4, 4) for l in moves)
    assert g.tensor(g.output).shape == (1, 6 // n * (2 if n == 3 else 1), 4, 4)


def glu_net(path, seed=0):
    """Conv, GLU over channels (Split-13 without sizes, Mul(a, Sigmoid(b))), conv, and a
    3-way Split whose parts go to a Relu, a Sigmoid and a Concat."""
    inits = _rng_inits(seed, w1=(8, 3, 3, 3), b1=(8,), w2=(6, 4, 1, 1), b2=(6,))
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], "conv1", pads=[1, 1, 1, 1]),
             helper.make_node("Split", ["c1"], ["a", "b"], "glu_split", axis=1),
             helper.make_node("Sigmoid", ["b"], ["sb"], "glu_sigmoid"),
             helper.make_node("Mul", ["a", "sb"], ["glu"], "glu_mul"),
             helper.make_node("Conv", ["glu", "w2", "b2"], ["c2"], "conv2"),
             helper.make_node("Split", ["c2"], ["q0", "q1", "q2"], "split3", axis=1),
             helper.make_node("Relu", ["q0"], ["r0"], "relu"),
             helper.make_node("Sigmoid", ["q1"], ["s1"], "sig"),
             helper.make_node("Concat", ["r0", "s1", "q2"], ["y"], "cat", axis=1)]
    return opsgen.save(nodes, inits, (1, 3, 6, 6), (1, 6, 6, 6), path, opset=13, name="glunet")


def test_glu_net_matches_the_oracle(tmp_path):
    check_against_oracle(tmp_path, glu_net(tmp_path / "glunet.onnx"), exact=False)


@pytest.mark.parametrize("target", HOST_SLOW)   # test_ops.HOST_SLOW: the host build is slow
def test_glu_net_builds_bit_exact(project, target):
    _passes(project, glu_net(project.file("m/glunet.onnx")), target)


# ---------------------------------------------------------------- dilated pools

POOL_CASES = [
    ("MaxPool", dict(kernel_shape=[3, 3], dilations=[2, 2], pads=[1, 1, 1, 1]), 17),
    ("MaxPool", dict(kernel_shape=[2, 3], dilations=[2, 1], strides=[1, 2], ceil_mode=1), 17),
    ("AveragePool", dict(kernel_shape=[3, 3], dilations=[2, 2], pads=[2, 2, 2, 2]), 19),
    ("AveragePool", dict(kernel_shape=[2, 2], dilations=[3, 2], pads=[1, 0, 1, 1],
                         count_include_pad=1), 19),
    ("AveragePool", dict(kernel_shape=[3, 2], dilations=[1, 2], strides=[2, 2], ceil_mode=1), 19),
]


@pytest.mark.parametrize("op_type,attrs,opset", POOL_CASES, ids=range(len(POOL_CASES)))
def test_dilated_pools_match_the_oracle(tmp_path, op_type, attrs, opset):
    nodes = [helper.make_node(op_type, ["c"], ["y"], "pool", **attrs)]
    path = opsgen.conv_then(tmp_path / "m.onnx", nodes, hw=9, out_shape=None, opset=opset)
    g = check_against_oracle(tmp_path, path)
    pool = g.layers[-1]
    assert pool.op == {"MaxPool": "maxpool", "AveragePool": "avgpool"}[op_type]
    assert tuple(pool.attrs["dilation"]) != (1, 1)


def dilated_pool_net(path, seed=0):
    """Conv (8 channels: the vector max pools' channel multiples), a dilated max pool, a
    dilated average pool with the pads counted, and a dilated one without."""
    inits = _rng_inits(seed, w1=(8, 3, 3, 3), b1=(8,), w2=(8, 8, 1, 1))
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], "conv1", pads=[1, 1, 1, 1]),
             helper.make_node("MaxPool", ["c1"], ["p1"], "maxpool_d2", kernel_shape=[3, 3],
                              dilations=[2, 2], pads=[2, 2, 2, 2]),
             helper.make_node("AveragePool", ["p1"], ["p2"], "avgpool_d3", kernel_shape=[3, 2],
                              dilations=[3, 2], pads=[1, 1, 1, 1], count_include_pad=1),
             helper.make_node("Conv", ["p2", "w2"], ["c2"], "conv2"),
             helper.make_node("AveragePool", ["c2"], ["y"], "avgpool_s2", kernel_shape=[2, 2],
                              dilations=[2, 2], strides=[2, 2], ceil_mode=1)]
    return opsgen.save(nodes, inits, (1, 3, 12, 12), (1, 8, 4, 6), path, opset=19, name="dilpool")


@pytest.mark.parametrize("target", HOST_SLOW)   # test_ops.HOST_SLOW: the host build is slow
def test_dilated_pool_net_builds_bit_exact(project, target):
    _passes(project, dilated_pool_net(project.file("m/dilpool.onnx")), target)


# ---------------------------------------------------------------- Gemm transA=1

def _gemm_a_col(kind):
    """Nodes making the column A (4, 1) from the conv output 'c' by a Reshape, a Flatten
    (axis 4) or a Transpose of the flattened row."""
    gap = helper.make_node("GlobalAveragePool", ["c"], ["g"], "gap")
    if kind == "reshape":
        return [gap, helper.make_node("Reshape", ["g", "s41"], ["a"], "col")]
    if kind == "flatten":
        return [gap, helper.make_node("Flatten", ["g"], ["a"], "col", axis=4)]
    return [gap, helper.make_node("Flatten", ["g"], ["f"], "flat"),
            helper.make_node("Transpose", ["f"], ["a"], "col", perm=[1, 0])]


GEMM_INITS = dict(_rng_inits(3, W=(4, 5), bf=(5,)), s41=np.array([4, 1], np.int64))


@pytest.mark.parametrize("kind", ["reshape", "flatten", "transpose"])
def test_gemm_transa_of_a_column_is_a_linear(tmp_path, kind):
    nodes = _gemm_a_col(kind) + [helper.make_node("Gemm", ["a", "W", "bf"], ["y"], "fc", transA=1,
                                                  alpha=0.5 if kind == "transpose" else 1.0)]
    path = opsgen.conv_then(tmp_path / "m.onnx", nodes, GEMM_INITS, out_shape=(1, 5))
    g = check_against_oracle(tmp_path, path)
    assert g.layers[-1].op == "linear" and g.tensor(g.output).shape == (1, 5)


def test_gemm_transa_refusals(tmp_path):
    from nnscons.errors import ModelError
    from nnscons.frontends import load_model
    # A (1, 4): A^T is (4, 1), a matrix product
    nodes = [helper.make_node("GlobalAveragePool", ["c"], ["g"], "gap"),
             helper.make_node("Flatten", ["g"], ["a"], "flat"),
             helper.make_node("Gemm", ["a", "W1"], ["y"], "fc", transA=1)]
    path = opsgen.conv_then(tmp_path / "row.onnx", nodes, {"W1": np.ones((1, 5))}, out_shape=(4, 5))
    with pytest.raises(ModelError, match=r"node 'fc' \(Gemm\): transA=1 with A of shape \(1, 4\).*"
                                         r"only A of shape \(K, 1\)"):
        load_model(path, name="m")
    # the column is also used by another op: it cannot become a row
    nodes = _gemm_a_col("reshape") + [
        helper.make_node("Gemm", ["a", "W", "bf"], ["y"], "fc", transA=1),
        helper.make_node("Relu", ["a"], ["ra"], "relu")]
    path = opsgen.conv_then(tmp_path / "shared.onnx", nodes, GEMM_INITS, out_shape=(1, 5))
    with pytest.raises(ModelError, match=r"node 'fc' \(Gemm\): transA=1: A 'a' of shape \(4, 1\) "
                                         r"must come from a Reshape, Flatten or Transpose used by "
                                         r"this Gemm only"):
        load_model(path, name="m")


def gemm_transa_net(path, seed=0):
    """Conv (2 x 3 x 3 map), its column (Reshape to (18, 1): on HWC targets the Linear
    reads the map's HWC bytes as after a Flatten), Gemm transA=1, Relu, then a Transpose to
    a column again and a second Gemm transA=1 with transB=1."""
    inits = _rng_inits(seed, w1=(2, 3, 3, 3), b1=(2,), W1=(18, 6), bf1=(6,), W2=(4, 6), bf2=(4,))
    inits.update(s181=np.array([18, 1], np.int64))
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], "conv1", strides=[2, 2], pads=[1, 1, 1, 1]),
             helper.make_node("Reshape", ["c1", "s181"], ["col"], "col"),
             helper.make_node("Gemm", ["col", "W1", "bf1"], ["f1"], "fc1", transA=1),
             helper.make_node("Relu", ["f1"], ["r1"], "relu"),
             helper.make_node("Transpose", ["r1"], ["col2"], "col2", perm=[1, 0]),
             helper.make_node("Gemm", ["col2", "W2", "bf2"], ["y"], "fc2", transA=1, transB=1)]
    return opsgen.save(nodes, inits, (1, 3, 6, 6), (1, 4), path, name="gemmta")


def test_gemm_transa_net_matches_the_oracle(tmp_path):
    g = check_against_oracle(tmp_path, gemm_transa_net(tmp_path / "gemmta.onnx"))
    assert sum(l.op == "linear" for l in g.layers) == 2


@pytest.mark.parametrize("target", HOST_SLOW)   # test_ops.HOST_SLOW: the host build is slow
def test_gemm_transa_net_builds_bit_exact(project, target):
    _passes(project, gemm_transa_net(project.file("m/gemmta.onnx")), target)


# ---------------------------------------------------------------- Reduce* over any axes

REDUCE_CASES = [("ReduceMean", [1], 1, 17), ("ReduceMax", [1], 1, 17), ("ReduceMean", [2], 1, 17),
                ("ReduceMean", [-1], 1, 18), ("ReduceSum", [1], 1, 13), ("ReduceSum", [2, 3], 0, 18),
                ("ReduceMin", [1, 3], 0, 17), ("ReduceMax", [2, 3], 0, 18), ("ReduceMean", [1, 2], 0, 17),
                ("ReduceMean", None, 1, 17), ("ReduceMax", [0, 1], 1, 18), ("ReduceMin", [3], 1, 18)]


def _reduce_node(op_type, axes, keepdims, opset, x="c", y="y", name="red"):
    """The node and its initializers: axes as an input from opset 18 (ReduceSum: 13)."""
    if axes is not None and (opset >= 18 or op_type == "ReduceSum"):
        return helper.make_node(op_type, [x, f"{name}_ax"], [y], name, keepdims=keepdims), \
            {f"{name}_ax": np.array(axes, np.int64)}
    extra = {"axes": axes} if axes is not None else {}
    return helper.make_node(op_type, [x], [y], name, keepdims=keepdims, **extra), {}


@pytest.mark.parametrize("op_type,axes,keepdims,opset", REDUCE_CASES,
                         ids=[f"{c[0]}{c[1]}k{c[2]}o{c[3]}" for c in REDUCE_CASES])
def test_reduce_over_any_axes_matches_the_oracle(tmp_path, op_type, axes, keepdims, opset):
    node, inits = _reduce_node(op_type, axes, keepdims, opset)
    path = opsgen.conv_then(tmp_path / "m.onnx", [node], inits, out_shape=None, opset=opset)
    g = check_against_oracle(tmp_path, path)
    assert g.layers[-1].op == "reduce"


def test_reduce_of_a_row_and_the_spatial_mean(tmp_path):
    """ReduceMax of a flattened (1, F) row, and ReduceMean over [2, 3] (still a global
    average pool) in a file whose opset 19 AveragePool moves the axes to an input."""
    mx, i1 = _reduce_node("ReduceMax", [1], 1, 19, x="f", y="m", name="rowmax")
    mean, i2 = _reduce_node("ReduceMean", [2, 3], 0, 19, x="p", y="g", name="spatial")
    nodes = [helper.make_node("AveragePool", ["c"], ["p"], "pool", kernel_shape=[2, 2], dilations=[2, 2]),
             mean, helper.make_node("Flatten", ["c"], ["f"], "flat"), mx,
             helper.make_node("Mul", ["g", "m"], ["y"], "mul")]
    path = opsgen.conv_then(tmp_path / "m.onnx", nodes, i1 | i2, out_shape=(1, 4), opset=19)
    g = check_against_oracle(tmp_path, path, exact=False)
    assert [l.op for l in g.layers] == ["conv2d", "avgpool", "global_avgpool", "reshape", "reduce", "mul"]


def test_reduce_refuses_a_rank_3_result(tmp_path):
    from nnscons.errors import ModelError
    from nnscons.frontends import load_model
    node, _ = _reduce_node("ReduceMean", [1], 0, 17)
    path = opsgen.conv_then(tmp_path / "m.onnx", [node], out_shape=None)
    with pytest.raises(ModelError, match=r"node 'red' \(ReduceMean\): keepdims=0 over axes \[1\] of "
                                         r"\[1, 4, 6, 6\] gives a tensor of shape \[1, 6, 6\]"):
        load_model(path, name="m")


def reduce_net(path, seed=0):
    """CBAM's spatial attention input (mean and max over channels, concatenated, a conv,
    Sigmoid), then a sum over H and a min over C and H (keepdims 0): (1, W)."""
    inits = _rng_inits(seed, w1=(8, 3, 3, 3), b1=(8,), w2=(4, 2, 3, 3), b2=(4,))
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], "conv1", pads=[1, 1, 1, 1])]
    for op_type, axes, kd, x, y, name in [("ReduceMean", [1], 1, "c1", "mean_c", "mean_c"),
                                          ("ReduceMax", [1], 1, "c1", "max_c", "max_c")]:
        node, i = _reduce_node(op_type, axes, kd, 13, x, y, name)
        nodes.append(node)
        inits.update(i)
    nodes += [helper.make_node("Concat", ["mean_c", "max_c"], ["cat"], "cat", axis=1),
              helper.make_node("Conv", ["cat", "w2", "b2"], ["c2"], "conv2", pads=[1, 1, 1, 1]),
              helper.make_node("Sigmoid", ["c2"], ["s"], "sig")]
    for op_type, axes, kd, x, y, name in [("ReduceSum", [2], 1, "s", "sum_h", "sum_h"),
                                          ("ReduceMin", [1, 2], 0, "sum_h", "y", "min_ch")]:
        node, i = _reduce_node(op_type, axes, kd, 13, x, y, name)
        nodes.append(node)
        inits.update(i)
    return opsgen.save(nodes, inits, (1, 3, 7, 9), (1, 9), path, opset=13, name="reducenet")


def test_reduce_net_matches_the_oracle(tmp_path):
    g = check_against_oracle(tmp_path, reduce_net(tmp_path / "reducenet.onnx"))
    assert sum(l.op == "reduce" for l in g.layers) == 4


@pytest.mark.parametrize("target", HOST_SLOW)   # test_ops.HOST_SLOW: the host build is slow
def test_reduce_net_builds_bit_exact(project, target):
    _passes(project, reduce_net(project.file("m/reducenet.onnx")), target)


# ---------------------------------------------------------------- Sum / Max / Min of N inputs

def _branches(c="c"):
    """Activations of the conv output 'c' (1, 4, 6, 6): a Relu, a Sigmoid, a Tanh, its
    per-channel mean g (1, 4, 1, 1) and its maximum s (1, 1, 1, 1)."""
    return [helper.make_node("Relu", [c], ["a"], "relu"), helper.make_node("Sigmoid", [c], ["sb"], "sig"),
            helper.make_node("Tanh", [c], ["t"], "tanh"),
            helper.make_node("GlobalAveragePool", [c], ["g"], "gap"),
            helper.make_node("ReduceMax", [c], ["s"], "rmax", keepdims=1)]


NARY_CASES = {"sum3": ("Sum", ["a", "sb", "t"], "nary"), "sum2": ("Sum", ["a", "t"], "add"),
              "sum2_channel": ("Sum", ["a", "g"], "nary"), "sum4_bcast": ("Sum", ["a", "g", "s", "t"], "nary"),
              "max2": ("Max", ["a", "t"], "nary"), "min2": ("Min", ["sb", "t"], "nary"),
              "max3_bcast": ("Max", ["t", "g", "s"], "nary"), "min4": ("Min", ["a", "sb", "t", "g"], "nary"),
              "max_const": ("Max", ["t", "k"], "lut"), "min_const": ("Min", ["k", "t"], "lut"),
              "sum_const": ("Sum", ["t", "k"], "lut")}


@pytest.mark.parametrize("case", sorted(NARY_CASES))
def test_sum_max_min_of_n_inputs_match_the_oracle(tmp_path, case):
    """Exact: Sum rounds once over every input (a chain of two-input adds would round after
    each), Max/Min of each input requantized (the quantization is monotonic)."""
    op_type, ins, kind = NARY_CASES[case]
    used = {"a": 0, "sb": 1, "t": 2, "g": 3, "s": 4}
    pre = [n for n in _branches() if n.output[0] in ins]
    assert len(pre) == len([t for t in ins if t in used])
    path = opsgen.conv_then(tmp_path / "m.onnx", pre + [helper.make_node(op_type, ins, ["y"], "op")],
                            {"k": np.float32(0.1)}, out_shape=None)
    g = check_against_oracle(tmp_path, path)
    assert g.layers[-1].op == kind


def test_sum_of_one_input_and_refusals(tmp_path):
    from nnscons.errors import ModelError
    from nnscons.frontends import load_model
    path = opsgen.conv_then(tmp_path / "one.onnx", [helper.make_node("Relu", ["c"], ["a"], "relu"),
                                                    helper.make_node("Sum", ["a"], ["y"], "op")])
    assert [l.op for l in load_model(path, name="m").layers] == ["conv2d", "requant"]
    nodes = [helper.make_node("ReduceMean", ["c"], ["h"], "rh", axes=[2], keepdims=1),
             helper.make_node("Relu", ["c"], ["a"], "relu"),
             helper.make_node("Max", ["a", "h"], ["y"], "op")]
    path = opsgen.conv_then(tmp_path / "rows.onnx", nodes, out_shape=None)
    with pytest.raises(ModelError, match=r"node 'op' \(Max\): operand of shape \(1, 4, 1, 6\) broadcasts "
                                         r"over \(1, 4, 6, 6\) along other axes than the channels"):
        load_model(path, name="m")


def nary_net(path, seed=0):
    """Conv, three activations summed (one rounding), their maximum with the per-channel
    mean and the overall maximum broadcast, the minimum of that and a Tanh, a conv."""
    inits = _rng_inits(seed, w1=(8, 3, 3, 3), b1=(8,), w2=(4, 8, 1, 1), b2=(4,))
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c"], "conv1", pads=[1, 1, 1, 1])]
    nodes += _branches()
    nodes += [helper.make_node("Sum", ["a", "sb", "t"], ["s3"], "sum3"),
              helper.make_node("Max", ["s3", "g", "s"], ["mx"], "max3"),
              helper.make_node("Min", ["mx", "t"], ["mn"], "min2"),
              helper.make_node("Conv", ["mn", "w2", "b2"], ["y"], "conv2")]
    return opsgen.save(nodes, inits, (1, 3, 6, 6), (1, 4, 6, 6), path, name="narynet")


def test_nary_net_matches_the_oracle(tmp_path):
    g = check_against_oracle(tmp_path, nary_net(tmp_path / "narynet.onnx"))
    assert sum(l.op == "nary" for l in g.layers) == 3


@pytest.mark.parametrize("target", HOST_SLOW)   # test_ops.HOST_SLOW: the host build is slow
def test_nary_net_builds_bit_exact(project, target):
    _passes(project, nary_net(project.file("m/narynet.onnx")), target)


# ---------------------------------------------------------------- other targets

NETS = {"glunet": glu_net, "dilpool": dilated_pool_net, "gemmta": gemm_transa_net,
        "reducenet": reduce_net, "narynet": nary_net, "cpunet": lambda p: cpu_net(p)}


@pytest.mark.parametrize("net", sorted(NETS))
def test_aie2p_host_fallback_runs_the_new_ops(tmp_path, kernels, net):
    """aie2p runs what its NPU does not map on the host CPU (kernels/common, CHW, through
    host_layers.HostKernels): every layer bit-exact with the reference."""
    check_host_fallback(kernels, NETS[net](tmp_path / f"{net}.onnx"))


def cpu_net(path, seed=0):
    """No lookup tables (the K210's CPU has none): a Sum of three with a per-channel
    operand, a Min of two, dilated max and average pools, the mean and the max over
    channels concatenated."""
    inits = _rng_inits(seed, w1=(8, 3, 3, 3), b1=(8,), w2=(8, 3, 1, 1), b2=(8,))
    inits["ax"] = np.array([1], np.int64)
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], "conv1", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"], "relu1"),
             helper.make_node("Conv", ["x", "w2", "b2"], ["c2"], "conv2"),
             helper.make_node("GlobalAveragePool", ["c2"], ["gp"], "gap"),
             helper.make_node("Sum", ["r1", "c2", "gp"], ["s"], "sum3"),
             helper.make_node("Min", ["s", "c2"], ["m"], "min2"),
             helper.make_node("MaxPool", ["m"], ["mp"], "maxpool_d2", kernel_shape=[3, 3],
                              dilations=[2, 2], pads=[2, 2, 2, 2]),
             helper.make_node("AveragePool", ["mp"], ["ap"], "avgpool_d2", kernel_shape=[2, 2],
                              dilations=[2, 2]),
             helper.make_node("ReduceMean", ["ap", "ax"], ["rm"], "mean_c", keepdims=1),
             helper.make_node("ReduceMax", ["ap", "ax"], ["rx"], "max_c", keepdims=1),
             helper.make_node("Concat", ["rm", "rx"], ["y"], "cat", axis=1)]
    return opsgen.save(nodes, inits, (1, 3, 8, 8), (1, 2, 6, 6), path, opset=19, name="cpunet")


def test_cpu_net_matches_the_oracle(tmp_path):
    g = check_against_oracle(tmp_path, cpu_net(tmp_path / "cpunet.onnx"), exact=False)
    assert {"nary", "reduce", "maxpool", "avgpool"} <= {l.op for l in g.layers}


@pytest.mark.parametrize("target", ["k210", pytest.param("host", marks=pytest.mark.slow)])   # host: as HOST_SLOW
def test_cpu_net_builds_bit_exact(project, target):
    """The K210's CPU layers (CHW kernels) take the dilated pools, reductions and N-ary ops."""
    _passes(project, cpu_net(project.file("m/cpunet.onnx")), target)


def test_cpu_net_builds_bit_exact_on_arm64(project):
    """arm64 shares the host's templates (-Wall -Wextra -Werror, NEON max pools leave dilated
    windows to the portable kernel)."""
    _passes(project, cpu_net(project.file("m/cpunet.onnx")), "arm64")


@pytest.mark.parametrize("net", ["cpunet", "reducenet", "narynet"])
def test_aie2p_host_fallback_library_runs_reduce_and_nary(project, net):
    """aie2p's emulated library (platform=emul) runs the layers its NPU does not map --
    reduce, nary, dilated pools, concat -- through the shared CPU templates in CHW
    (templates/cpu inside templates/aie2p/host_layer.c.j2), bit for bit."""
    path = NETS[net](project.file(f"m/{net}.onnx"))
    proc = project.scons("target=aie2p-hybrid", f"model={path}", "platform=emul", "-j2")
    assert f"Test PASSED [aie2p-hybrid] {net}" in proc.stdout, proc.stdout[-3000:]
    report, = glob.glob(project.file(f"build/aie2p-hybrid/*{net}*/report.json"))
    with open(report) as f:
        on = {(l["op"], l["runs_on"]) for l in json.load(f)["layers"]}
    assert ("reduce", "host") in on and (net == "reducenet" or ("nary", "host") in on), on


def chunked_reduce_net(path, seed=0):
    """A (1, 8, 24, 24) map: the mean and the max over channels (H kept: input rows
    stream through L1), a sum over W (likewise), and a mean over H of the channels' max
    (the whole (1, 1, 24, 24) map in L1)."""
    inits = _rng_inits(seed, w1=(8, 3, 3, 3), b1=(8,))
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], "conv1", pads=[1, 1, 1, 1])]
    for op_type, axes, x, y in [("ReduceMean", [1], "c1", "mean_c"), ("ReduceMax", [1], "c1", "max_c"),
                                ("ReduceSum", [3], "c1", "sum_w"), ("ReduceMean", [2], "max_c", "mean_h")]:
        node, i = _reduce_node(op_type, axes, 1, 13, x, y, y)
        nodes.append(node)
        inits.update(i)
    nodes += [helper.make_node("Concat", ["mean_c", "max_c"], ["cat"], "cat", axis=1),
              helper.make_node("ReduceMean", ["cat"], ["m1"], "mean_cat", axes=[1, 3], keepdims=0),
              helper.make_node("ReduceMean", ["sum_w"], ["m2"], "mean_sum_w", axes=[1, 3], keepdims=0),
              helper.make_node("ReduceMean", ["mean_h"], ["m3"], "mean_mean_h", axes=[1, 2], keepdims=0),
              helper.make_node("Concat", ["m1", "m2", "m3"], ["y"], "out", axis=1)]
    return opsgen.save(nodes, inits, (1, 3, 24, 24), (1, 72), path, opset=13, name="chunkred")


def test_gap9_reduce_streams_rows_through_a_small_l1(project):
    """With a 4 KiB budget the reductions of the 4.5 KB map that keep H run in chunks of
    input rows (double-buffered), the mean over H on the whole smaller map."""
    y = project.read("targets.yaml")
    assert "      l1_budget: 112KiB" in y
    project.write("targets.yaml", y.replace("      l1_budget: 112KiB", "      l1_budget: 4KiB", 1))
    path = chunked_reduce_net(project.file("m/chunkred.onnx"))
    check_against_oracle(Path(project.file("m")), path)
    _passes(project, path, "gap9")
    srcs = {os.path.basename(p): open(p).read()
            for p in glob.glob(project.file("build/**/*.c"), recursive=True) if "gap9" in p}
    for name in ("mean_c.c", "max_c.c", "sum_w.c"):
        assert "in_buf[2]" in srcs[name], name
    assert "in_buf[2]" not in srcs["mean_h.c"]


def chunked_nary_net(path, seed=0):
    """(1, 8, 24, 24) maps summed with a per-channel mean, then their maximum with the
    maximum of the means: the maps stream through L1 by pixels, the broadcast operands stay."""
    inits = _rng_inits(seed, w1=(8, 3, 3, 3), b1=(8,))
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], "conv1", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r"], "relu"),
             helper.make_node("GlobalAveragePool", ["c1"], ["g"], "gap"),
             helper.make_node("ReduceMax", ["g"], ["s"], "rmax", keepdims=1),
             helper.make_node("Sum", ["c1", "g", "r"], ["sm"], "sum3"),
             helper.make_node("Max", ["s", "sm", "r"], ["y"], "max3")]
    return opsgen.save(nodes, inits, (1, 3, 24, 24), (1, 8, 24, 24), path, opset=13, name="chunknary")


def test_gap9_nary_streams_pixels_through_a_small_l1(project):
    y = project.read("targets.yaml")
    project.write("targets.yaml", y.replace("      l1_budget: 112KiB", "      l1_budget: 4KiB", 1))
    path = chunked_nary_net(project.file("m/chunknary.onnx"))
    g = check_against_oracle(Path(project.file("m")), path)
    assert [l.op for l in g.layers][-2:] == ["nary", "nary"]
    _passes(project, path, "gap9")
    srcs = {os.path.basename(p): open(p).read()
            for p in glob.glob(project.file("build/**/*.c"), recursive=True) if "gap9" in p}
    for name in ("sum3.c", "max3.c"):
        assert "for (int k = 0; k < 1;" not in srcs[name], name
