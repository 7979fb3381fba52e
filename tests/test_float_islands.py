"""Float islands as onnxruntime's quantizer leaves them without pre-processing (issue 23,
part 6): Conv -> Q/DQ -> BatchNormalization -> HardSwish -> Relu -> MaxPool -> Q, in QDQ and
QOperator form. The BN reads the rounded conv output (a table, not a fold), the chain of
elementwise ops rounds once at its end (one table), and the max pool's input takes the pool's
output parameters (one rounding, as ONNX): every tensor equals the float64 evaluation."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from modelgen import ort_quantize, seeded_samples
from nnscons import reference
from nnscons.export.ort_oracle import run_intermediates
from nnscons.frontends import load_model

SHAPE = (1, 3, 12, 12)


def float_model(path):
    rng = np.random.default_rng(4)

    def init(name, shape, s=0.3, mean=0.0):
        return numpy_helper.from_array(rng.normal(mean, s, shape).astype(np.float32), name)

    nodes = [helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c1", "g", "b", "m", "v"], ["bn"]),
             helper.make_node("HardSwish", ["bn"], ["hs"]),
             helper.make_node("Relu", ["hs"], ["r"]),
             helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Conv", ["p", "w2", "b2"], ["y"])]
    inits = [init("w1", (6, 3, 3, 3)), init("g", (6,), 0.2, 1.0), init("b", (6,), 0.2),
             init("m", (6,), 0.2), numpy_helper.from_array(rng.uniform(0.5, 2, 6).astype(np.float32), "v"),
             init("w2", (4, 6, 1, 1)), init("b2", (4,), 0.1)]
    graph = helper.make_graph(nodes, "island", [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 6, 6])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return str(path)


@pytest.mark.parametrize("fmt", ["QDQ", "QOperator"])
def test_islands_round_where_onnx_rounds(tmp_path, fmt):
    q = ort_quantize(float_model(tmp_path / "f.onnx"), tmp_path / "q.onnx", seeded_samples(SHAPE, 6), fmt,
                     "QUInt8", "QUInt8", op_types_to_quantize=["Conv", "MaxPool"])
    types = [n.op_type for n in onnx.load(q).graph.node]
    assert "BatchNormalization" in types and "HardSwish" in types     # left in float
    g = load_model(q, name="island")
    luts = [l for l in g.layers if l.op == "lut"]
    assert len(luts) == 1 and luts[0].attrs.get("chain"), [(l.name, l.op) for l in g.layers]
    for seed in range(4):
        x = np.random.default_rng(seed + 10).standard_normal(SHAPE).astype(np.float32)
        want = run_intermediates(q, x)
        got = reference.run_graph(g, reference.quantize_input(g, x))
        assert g.output in want
        for t in want:
            if t in got:
                np.testing.assert_array_equal(got[t], want[t].reshape(got[t].shape), err_msg=t)
