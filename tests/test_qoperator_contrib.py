"""QLinearConvTranspose and QLinearReduceMean (com.microsoft contrib ops, issue 23): written by
hand as other tools emit them (onnxruntime's quantizer does not), they import as the QDQ graph
they stand for -- every tensor equals the float64 evaluation of that spelling -- and build and
pass on the host."""
from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from nnscons import reference
from nnscons.export.ort_oracle import run_intermediates
from nnscons.frontends import load_model


def _model(path, x_shape, y_shape, qnode_inputs, qnode_attrs, op_type, inits, opset=13):
    """x -> QuantizeLinear (uint8) -> op_type (com.microsoft) -> DequantizeLinear -> y."""
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"]),
             helper.make_node(op_type, ["xq", "xs", "xz"] + qnode_inputs, ["yq"], domain="com.microsoft",
                              name="qop", **qnode_attrs),
             helper.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["y"])]
    graph = helper.make_graph(nodes, "contrib", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)],
                              [numpy_helper.from_array(np.float32(0.05), "xs"),
                               numpy_helper.from_array(np.uint8(120), "xz")] + inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset),
                                                    helper.make_opsetid("com.microsoft", 1)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return str(path)


def conv_transpose(path, per_channel, weight_dtype, stride=2, output_padding=1, bias=True, seed=0):
    rng = np.random.default_rng(seed)
    cin, cout, k = 4, 6, 3
    lo, hi = (-100, 100) if weight_dtype == np.int8 else (20, 235)
    w = rng.integers(lo, hi, (cin, cout, k, k)).astype(weight_dtype)
    n = cout if per_channel else 1
    ws = rng.uniform(0.002, 0.01, n).astype(np.float32)
    wz = (np.zeros(n, weight_dtype) if weight_dtype == np.int8 else rng.integers(120, 136, n).astype(np.uint8))
    if not per_channel:
        ws, wz = ws.reshape(()), wz.reshape(())
    ys = np.float32(0.08)
    inits = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(ws, "ws"), numpy_helper.from_array(wz, "wz"),
             numpy_helper.from_array(ys, "ys"), numpy_helper.from_array(np.uint8(128), "yz")]
    ins = ["w", "ws", "wz", "ys", "yz"]
    if bias:
        b = rng.integers(-2000, 2000, cout).astype(np.int32)
        inits.append(numpy_helper.from_array(b, "b"))
        ins.append("b")
    h = 5
    out_h = (h - 1) * stride - 2 + k + output_padding
    return _model(path, [1, cin, h, h], [1, cout, out_h, out_h], ins,
                  dict(strides=[stride, stride], pads=[1, 1, 1, 1], output_padding=[output_padding] * 2),
                  "QLinearConvTranspose", inits)


def reduce_mean(path, axes, keepdims, opset=13):
    shape = [1, 6, 5, 7]
    out = [d for i, d in enumerate(shape) if i not in axes] if not keepdims else \
        [1 if i in axes else d for i, d in enumerate(shape)]
    inits = [numpy_helper.from_array(np.float32(0.03), "ys"), numpy_helper.from_array(np.uint8(125), "yz")]
    return _model(path, shape, out, ["ys", "yz"], dict(axes=axes, keepdims=keepdims), "QLinearReduceMean",
                  inits, opset)


CASES = {
    "convT_per_tensor_int8": lambda p: conv_transpose(p, False, np.int8),
    "convT_per_channel_int8": lambda p: conv_transpose(p, True, np.int8),
    "convT_per_channel_uint8_no_bias": lambda p: conv_transpose(p, True, np.uint8, bias=False),
    "convT_stride1": lambda p: conv_transpose(p, False, np.uint8, stride=1, output_padding=0),
    "reduce_mean_channels": lambda p: reduce_mean(p, [1], 1),
    "reduce_mean_spatial": lambda p: reduce_mean(p, [2, 3], 1),
    "reduce_mean_spatial_no_keepdims": lambda p: reduce_mean(p, [2, 3], 0),
    "reduce_mean_channels_opset18": lambda p: reduce_mean(p, [1], 1, opset=18),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_tensor_equals_the_float64_qdq_evaluation(tmp_path, case):
    path = CASES[case](tmp_path / "m.onnx")
    g = load_model(path, name="m")
    shape = tuple(onnx.load(path).graph.input[0].type.tensor_type.shape.dim[k].dim_value for k in range(4))
    for seed in range(3):
        x = (np.random.default_rng(seed).standard_normal(shape) * 3).astype(np.float32)
        want = run_intermediates(path, x)
        got = reference.run_graph(g, want[g.input])
        compared = [t for t in want if t in got]
        assert g.output in compared
        for t in compared:
            np.testing.assert_array_equal(got[t], want[t].reshape(got[t].shape), err_msg=t)


@pytest.mark.parametrize("case", ["convT_per_channel_uint8_no_bias", "reduce_mean_channels"])
def test_builds_and_passes_on_the_host(project, case):
    path = CASES[case](project.file("m.onnx"))
    proc = project.scons("target=host", f"model={path}")
    assert "Test PASSED [host] m:" in proc.stdout, proc.stdout[-2000:]
    assert "self-consistency: quantized.onnx evaluated exactly" in proc.stdout
