"""Float ONNX models of one op (or a short chain) for the op tests (tests/test_ops.py)."""
from __future__ import annotations

import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def save(nodes, inits, in_shape, out_shape, path, opset=17, name="opmodel"):
    graph = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(in_shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(out_shape) if out_shape else None)],
        [numpy_helper.from_array(v if isinstance(v, np.ndarray) and v.dtype == np.int64
                                 else np.asarray(v, np.float32), k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    onnx.save(model, str(path))
    return str(path)


def conv_then(path, op_nodes, inits=None, c=4, hw=6, out_shape=None, seed=0, opset=17):
    """x -> Conv(3 -> c, 3x3, pad 1) -> <op_nodes reading 'c' and writing 'y'>."""
    rng = np.random.default_rng(seed)
    all_inits = {"w": rng.standard_normal((c, 3, 3, 3)) * 0.4, "b": rng.standard_normal(c) * 0.2}
    all_inits.update(inits or {})
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], "conv", pads=[1, 1, 1, 1])]
    nodes += op_nodes
    return save(nodes, all_inits, (1, 3, hw, hw), out_shape or (1, c, hw, hw), path, opset)


def lut_net(path, seed=0):
    """Conv, then every kind of table op (per tensor and per channel), pooled and classified."""
    rng = np.random.default_rng(seed)
    inits = {"w1": rng.standard_normal((6, 3, 3, 3)) * 0.4, "b1": rng.standard_normal(6) * 0.2,
             "w2": rng.standard_normal((6, 6, 1, 1)) * 0.4, "b2": rng.standard_normal(6) * 0.2,
             "slope": (rng.standard_normal(6) * 0.3).reshape(6, 1, 1),
             "wf": rng.standard_normal((4, 6)) * 0.5, "bf": rng.standard_normal(4) * 0.1}
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], "conv1", pads=[1, 1, 1, 1]),
             helper.make_node("HardSwish", ["c1"], ["h1"], "hswish"),
             helper.make_node("Conv", ["h1", "w2", "b2"], ["c2"], "conv2"),
             helper.make_node("PRelu", ["c2", "slope"], ["p2"], "prelu"),
             helper.make_node("Sigmoid", ["p2"], ["s2"], "sigmoid"),
             helper.make_node("GlobalAveragePool", ["s2"], ["g"], "gap"),
             helper.make_node("Flatten", ["g"], ["f"], "flatten"),
             helper.make_node("Gemm", ["f", "wf", "bf"], ["fc"], "fc", transB=1),
             helper.make_node("Tanh", ["fc"], ["y"], "tanh")]
    return save(nodes, inits, (1, 3, 10, 10), (1, 4), path, name="lutnet")


def se_net(path, seed=0, hw=8):
    """A MobileNetV3-style block: conv, HardSwish, depthwise conv, squeeze-excite (global
    pool, 1x1 convs, Relu, HardSigmoid, Mul per channel), projection, residual Add, and a
    same-shape Mul and a scalar Mul of two activations."""
    rng = np.random.default_rng(seed)
    c, e, r = 4, 8, 4
    inits = {"w1": rng.standard_normal((e, 3, 3, 3)) * 0.4, "b1": rng.standard_normal(e) * 0.1,
             "wd": rng.standard_normal((e, 1, 3, 3)) * 0.5, "bd": rng.standard_normal(e) * 0.1,
             "ws1": rng.standard_normal((r, e, 1, 1)) * 0.5, "bs1": rng.standard_normal(r) * 0.1,
             "ws2": rng.standard_normal((e, r, 1, 1)) * 0.5, "bs2": rng.standard_normal(e) * 0.1,
             "wp": rng.standard_normal((e, e, 1, 1)) * 0.3, "bp": rng.standard_normal(e) * 0.1}
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], "conv1", pads=[1, 1, 1, 1]),
             helper.make_node("HardSwish", ["c1"], ["h1"], "hswish1"),
             helper.make_node("Conv", ["h1", "wd", "bd"], ["d"], "dw", pads=[1, 1, 1, 1], group=e),
             helper.make_node("HardSwish", ["d"], ["hd"], "hswish2"),
             helper.make_node("GlobalAveragePool", ["hd"], ["sq"], "se_pool"),
             helper.make_node("Conv", ["sq", "ws1", "bs1"], ["s1"], "se_fc1"),
             helper.make_node("Relu", ["s1"], ["s1r"], "se_relu"),
             helper.make_node("Conv", ["s1r", "ws2", "bs2"], ["s2"], "se_fc2"),
             helper.make_node("HardSigmoid", ["s2"], ["gate"], "se_gate", alpha=1 / 6, beta=0.5),
             helper.make_node("Mul", ["hd", "gate"], ["se"], "se_mul"),
             helper.make_node("Conv", ["se", "wp", "bp"], ["p"], "project"),
             helper.make_node("Add", ["p", "h1"], ["res"], "residual"),
             helper.make_node("Mul", ["res", "h1"], ["sq2"], "mul_same"),
             helper.make_node("GlobalAveragePool", ["sq2"], ["g"], "pool"),
             helper.make_node("Mul", ["sq2", "g"], ["y"], "mul_bcast")]
    return save(nodes, inits, (1, 3, hw, hw), (1, e, hw, hw), path, name="senet")


def shuffle_net(path, seed=0, hw=8):
    """A ShuffleNetV2-style unit and movement ops: Split into halves, branch (1x1, depthwise
    3x3, 1x1), Concat, channel shuffle (Reshape-Transpose-Reshape), then DepthToSpace,
    SpaceToDepth, Resize nearest, reflect Pad, Slice and a LeakyRelu detector-style head
    with Concat of two scales."""
    rng = np.random.default_rng(seed)
    c = 8
    inits = {"w0": rng.standard_normal((c, 3, 3, 3)) * 0.4, "b0": rng.standard_normal(c) * 0.1,
             "w1": rng.standard_normal((4, 4, 1, 1)) * 0.5, "wd": rng.standard_normal((4, 1, 3, 3)) * 0.5,
             "w2": rng.standard_normal((4, 4, 1, 1)) * 0.5, "sp": np.array([4, 4], np.int64),
             "s1": np.array([1, 2, 4, hw, hw], np.int64), "s2": np.array([1, c, hw, hw], np.int64),
             "wdn": rng.standard_normal((c, c, 3, 3)) * 0.2, "sc": np.array([1, 1, 2, 2], np.float32),
             "pp": np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64),
             "st": np.array([0], np.int64), "en": np.array([6], np.int64), "ax": np.array([1], np.int64)}
    nodes = [helper.make_node("Conv", ["x", "w0", "b0"], ["c0"], "conv0", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c0"], ["r0"], "relu0"),
             helper.make_node("Split", ["r0", "sp"], ["left", "right"], "split", axis=1),
             helper.make_node("Conv", ["right", "w1"], ["br1"], "branch_pw1"),
             helper.make_node("Relu", ["br1"], ["br1r"], "branch_relu1"),
             helper.make_node("Conv", ["br1r", "wd"], ["brd"], "branch_dw", pads=[1, 1, 1, 1], group=4),
             helper.make_node("Conv", ["brd", "w2"], ["br2"], "branch_pw2"),
             helper.make_node("Relu", ["br2"], ["br2r"], "branch_relu2"),
             helper.make_node("Concat", ["left", "br2r"], ["cat"], "concat", axis=1),
             helper.make_node("Reshape", ["cat", "s1"], ["sh1"], "shuffle_reshape1"),
             helper.make_node("Transpose", ["sh1"], ["sht"], "shuffle_transpose", perm=[0, 2, 1, 3, 4]),
             helper.make_node("Reshape", ["sht", "s2"], ["shuf"], "shuffle_reshape2"),
             helper.make_node("SpaceToDepth", ["shuf"], ["s2d"], "s2d", blocksize=2),
             helper.make_node("DepthToSpace", ["s2d"], ["d2s"], "d2s", blocksize=2, mode="DCR"),
             helper.make_node("Conv", ["d2s", "wdn"], ["down"], "down", strides=[2, 2], pads=[1, 1, 1, 1]),
             helper.make_node("LeakyRelu", ["down"], ["dl"], "leaky", alpha=0.1),
             helper.make_node("Resize", ["dl", "", "sc"], ["up"], "upsample", mode="nearest"),
             helper.make_node("Concat", ["up", "shuf"], ["fpn"], "fpn_concat", axis=1),
             helper.make_node("Pad", ["fpn", "pp"], ["padded"], "reflect_pad", mode="reflect"),
             helper.make_node("Slice", ["padded", "st", "en", "ax"], ["y"], "slice")]
    return save(nodes, inits, (1, 3, hw, hw), (1, 6, hw + 2, hw + 2), path, name="shufflenet")


def classifier_tail(path, seed=0):
    """Conv, global max pool, Squeeze, Gemm, Softmax: a classifier's tail."""
    rng = np.random.default_rng(seed)
    inits = {"w": rng.standard_normal((8, 3, 3, 3)) * 0.4, "b": rng.standard_normal(8) * 0.1,
             "ax": np.array([2, 3], np.int64), "wf": rng.standard_normal((10, 8)) * 0.8}
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], "conv", pads=[1, 1, 1, 1]),
             helper.make_node("GlobalMaxPool", ["c"], ["g"], "gmp"),
             helper.make_node("Squeeze", ["g", "ax"], ["f"], "squeeze"),
             helper.make_node("Gemm", ["f", "wf"], ["logits"], "fc", transB=1),
             helper.make_node("Softmax", ["logits"], ["y"], "softmax", axis=-1)]
    return save(nodes, inits, (1, 3, 8, 8), (1, 10), path, name="clstail")
