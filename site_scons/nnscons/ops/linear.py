"""linear: ONNX Gemm / MatMul with a constant weight, (1, F) in and out."""
from __future__ import annotations

import numpy as np

from ..opkit import onnx_operands as X
from ..opkit import onnx_qoperator
from ..opkit.onnx_attrs import attributes
from ..opkit.opgraph import Op
from ..opkit.shapes import need_rank
from ..reference import conv as ref
from ..tensor_layout import flattened_from
from ..opkit.opdef import OpDef
from ._common import with_requant
from .conv2d import weighted_counts, weighted_requant


def _a_as_row(w, name, node, x):
    """transA=1 with A of shape (K, 1): A^T is (1, K), the same K values in the same
    order, so the Gemm is a plain linear once the op producing A (a Reshape, Flatten or
    data movement, used by this Gemm only) yields the row (1, K) instead."""
    shape = w._static_shapes().get(node.input[0]) or w._static_shapes().get(x)
    if shape is None or len(shape) != 2:
        raise w.fail(name, node, f"transA=1 needs a 2-D input A of a static shape (K, 1); "
                                 f"got {shape}")
    if shape[1] != 1:
        raise w.fail(name, node, f"transA=1 with A of shape {tuple(shape)}: A^T has "
                                 f"{shape[1]} rows, a matrix product, not a linear layer; "
                                 f"only A of shape (K, 1) (batch 1) is supported")
    names = {x} | {t for t in w.alias if w.resolve(t) == x}
    users = [n for n in w.f.proto.graph.node
             if n.op_type not in ("QuantizeLinear", "DequantizeLinear", "Identity", "Dropout")
             and names & set(n.input)]
    producer = next((op for op in w.ops if op.output == x), None)
    if (producer is None or producer.kind not in ("reshape", "move") or users != [node]
            or x == w.f.output):
        raise w.fail(name, node, f"transA=1: A {node.input[0]!r} of shape {tuple(shape)} must "
                                 f"come from a Reshape, Flatten or Transpose used by this Gemm "
                                 f"only (its transpose is then the row (1, {shape[0]}))")
    if producer.kind == "reshape":
        producer.attrs.pop("flatten_axis", None)
        producer.attrs["shape"] = (1, -1)
    else:
        from .move import reshape_step
        producer.attrs["steps"] = tuple(producer.attrs["steps"]) + (reshape_step((1, shape[0])),)


def gemm(w, name, node, ins, out):
    a = attributes(node)
    if a.get("transA", 0):
        _a_as_row(w, name, node, X.activation(w, name, node, ins[0]))
    weight, wq = X.weight(w, name, node, ins[1], 0 if a.get("transB", 0) else 1, 2)
    alpha = float(a.get("alpha", 1.0))
    if alpha != 1.0:
        weight, wq = weight.astype(np.float64) * alpha, None      # a float64 product
    bias, bq = X.bias(w, name, node, ins[2] if len(ins) > 2 else "", weight.shape[0],
                      float(a.get("beta", 1.0)))
    return Op(name, "linear", [X.activation(w, name, node, ins[0])], out, node.op_type,
              weight=weight, bias=bias, weight_q=wq, bias_q=bq)


def matmul(w, name, node, ins, out):
    weight, wq = X.weight(w, name, node, ins[1], 1, 2)
    return Op(name, "linear", [X.activation(w, name, node, ins[0])], out, node.op_type,
              weight=weight, weight_q=wq)


def tfl_fully_connected(w, op):
    """FULLY_CONNECTED: weights (O, I); the input is read as rows of I values in TFLite's
    order (a relayout to (1, I) first when it is not already), batch 1; keep_num_dims
    keeps the input's leading dims (a relayout after)."""
    import numpy as np
    from ..opkit import tflite_ops as T
    if int(op.options.get("weights_format", 0)) != 0:
        raise w.fail(op, "weights_format SHUFFLED4x16INT8 is not supported (DEFAULT only)")
    wt = w.input_tensor(op, 1, "weights")
    if len(wt.shape) != 2:
        raise w.fail(op, f"weights have shape {list(wt.shape)}; (O, I) expected")
    n_out, n_in = wt.shape
    q, scale = T.weights(w, op, 1, n_out, 0)
    x = w.act(op, 0)
    x_shape = w.input_tensor(op, 0).shape
    out_t = w.tensor(op.outputs[0])
    if int(np.prod(x_shape)) != n_in:
        return _rows_as_conv(w, op, x, x_shape, out_t, q, scale)
    out = w.out(op)
    result = []
    if tuple(x_shape) != (1, n_in):
        flat = w.fresh(f"{x}_rows")
        w.qparams[flat] = w.qparams[x]
        result.append(w.relayout(op, x, x_shape, (1, n_in), flat, name=f"{op.label}_rows"))
        x = flat
    s_in = w.qparams[x].scale
    bias, bq = T.bias(w, op, 2, n_out, s_in, scale)
    core = out
    if tuple(out_t.shape) != (1, n_out):
        core = w.fresh(f"{out}_rows")
        w.qparams[core] = w.qparams[out]
    result.append(Op(op.label, "linear", [x], core, op.code, attrs={"requant": "f64"},
                     weight=q.astype(np.float64) * scale[:, None], bias=bias,
                     weight_q=(q, scale), bias_q=bq, act_range=w.act_range(op)))
    if core != out:
        result.append(w.relayout(op, core, (1, n_out), out_t.shape, out, name=f"{op.label}_dims"))
    return result


def _rows_as_conv(w, op, x, x_shape, out_t, q, scale):
    """FULLY_CONNECTED over the last axis of a (1, L, C) or (1, H, W, C) tensor with
    keep_num_dims: a 1x1 convolution in the IR's layout."""
    import numpy as np
    from ..opkit import tflite_ops as T
    n_out, n_in = q.shape
    if (len(x_shape) not in (3, 4) or x_shape[-1] != n_in
            or tuple(out_t.shape) != tuple(x_shape[:-1]) + (n_out,)):
        raise w.fail(op, f"input of shape {list(x_shape)} is {int(np.prod(x_shape)) // max(n_in, 1)} "
                         f"rows of {n_in} values and the output {list(out_t.shape)}; several rows "
                         f"are supported with keep_num_dims on a rank-3 or rank-4 input only "
                         f"(batch 1)")
    bias, bq = T.bias(w, op, 2, n_out, w.qparams[x].scale, scale)
    wq = q.reshape(n_out, n_in, 1, 1)
    return Op(op.label, "conv2d", [x], w.out(op), op.code,
              attrs={"kernel": (1, 1), "stride": (1, 1), "dilation": (1, 1),
                     "pads": (0, 0, 0, 0), "groups": 1, "requant": "f64"},
              weight=wq.astype(np.float64) * scale.reshape(-1, 1, 1, 1), bias=bias,
              weight_q=(wq, scale), bias_q=bq, act_range=w.act_range(op))


def shape(g, op, ins):
    x = ins[0]
    need_rank(g, op, x, 2, "1,F; add a Flatten before it")
    if x[1] != op.weight.shape[1]:
        raise g.fail(op, f"weight {op.weight.shape} expects {op.weight.shape[1]} input "
                         f"features but the input has {x[1]}")
    return (1, op.weight.shape[0])


def export(w, layer, ins, core_out):
    w.node("Gemm", ins + w.weights(layer), [core_out], layer.name, exact_name=True, transB=1)


def hwc_params(layer, graph, op_def) -> dict:
    """Weight columns in HWC order when the layer reads a flattened 4-D tensor (on an HWC
    target that tensor holds its source's HWC bytes); else the weights as they are."""
    src = flattened_from(layer, graph, op_def)
    if src is None:
        return {}
    _, c, h, w = src
    o = layer.weight.shape[0]
    return {"weight": np.ascontiguousarray(layer.weight.reshape(o, c, h, w).transpose(0, 2, 3, 1).reshape(o, -1))}


OPS = [OpDef(
    "linear", onnx={"Gemm": gemm, "MatMul": matmul},
    tflite={"FULLY_CONNECTED": tfl_fully_connected},
    attrs=("requant",),
    shape=shape, reference=with_requant(ref.linear, weighted_requant), requant=weighted_requant,
    counts=weighted_counts,
    macs=lambda layer, graph: int(layer.weight.size),
    export=export, weighted=True, fusable=True, dense=lambda layer: True, hwc_params=hwc_params,
    doc="requant (optional: f64, TFLite FULLY_CONNECTED's double-precision rule)")]

# onnxruntime's QOperator form of the same op (opkit/onnx_qoperator.py)
CONVERTERS = onnx_qoperator.converters("QLinearMatMul", "QGemm")
