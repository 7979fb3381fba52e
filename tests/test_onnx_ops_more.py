"""More ONNX ops and attributes against the exact QDQ oracle, each also in a small network
built on host and gap9 (emul): Split with implicit sizes (GLU), dilated pools, Gemm with
transA, Reduce* over any axes, Sum/Max/Min of N activations."""
from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

import opsgen
from test_ops import _passes, check_against_oracle


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


@pytest.mark.parametrize("target", ["host", "gap9"])
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


@pytest.mark.parametrize("target", ["host", "gap9"])
def test_dilated_pool_net_builds_bit_exact(project, target):
    _passes(project, dilated_pool_net(project.file("m/dilpool.onnx")), target)
