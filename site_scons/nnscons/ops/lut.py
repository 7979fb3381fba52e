"""lut: any unary elementwise op as an exact int8 lookup table built at lowering time.

The table is the QDQ semantics of the op evaluated by onnx's reference evaluator in
float64 for each of the 256 int8 inputs: out[q] = clamp(round_half_even(f((q - zp_in) *
s_in) / s_out) + zp_out, act_min, act_max), so it equals the exact oracle bit for bit.
Binary ops with one constant operand (Add/Sub/Mul/Div by a constant: the converters of
those ops call const_binary) and BatchNormalization that follows no conv are tables too.
Constant operands (PRelu's slope, ...) that vary along the channel axis give one table per
channel: Layer.weight is int8 (T, 256) with T = 1 or C; attrs keep the ONNX op type, its
attributes and constant operands (for the QDQ export).
"""
from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from ..frontends import onnx_ops as X
from ..frontends.onnx_file import attributes
from ..passes.opgraph import Op
from . import OpDef
from ._common import first_input_shape, n_out

# ONNX op type -> number of constant operands after the activation input
UNARY = {"Sigmoid": 0, "HardSigmoid": 0, "HardSwish": 0, "Tanh": 0, "LeakyRelu": 0,
         "PRelu": 1, "Elu": 0, "Selu": 0, "Softplus": 0, "Exp": 0, "Celu": 0, "Softsign": 0,
         "Abs": 0, "Neg": 0, "Erf": 0, "ThresholdedRelu": 0}
OPSET = 17
# export opset where the default (13) lacks the op, or onnx's reference evaluator gets it
# wrong (BatchNormalization before 15 runs in training mode there)
NEEDS_OPSET = {"HardSwish": 14, "BatchNormalization": 15}


def _attr_value(v):
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, (list, tuple)):
        return tuple(v)
    return v


def table_op(w, name, node, ins, out, x_pos=0, n_operands=None):
    """An Op 'lut' for ONNX node `node` whose inputs other than ins[x_pos] are constants.
    fn_consts: ((position, shape, values), ...) in input order."""
    n = len(ins) if n_operands is None else n_operands
    consts = []
    for pos, t in enumerate(ins[:n]):
        if pos == x_pos or not t:
            continue
        arr = np.asarray(w.const(t, name, node, "operand"), dtype=np.float64)
        consts.append((pos, tuple(int(d) for d in arr.shape),
                       tuple(float(v) for v in arr.reshape(-1))))
    attrs = {k: _attr_value(v) for k, v in sorted(attributes(node).items())}
    return Op(name, "lut", [X.activation(w, name, node, ins[x_pos])], out, node.op_type,
              attrs={"fn": node.op_type, "fn_attrs": tuple(attrs.items()),
                     "fn_consts": tuple(consts), "x_pos": x_pos})


def convert(w, name, node, ins, out):
    return table_op(w, name, node, ins, out, 0, 1 + UNARY[node.op_type])


def const_binary(w, name, node, ins, out):
    """Add/Sub/Mul/Div with one constant operand (per tensor or per channel), or None
    when both operands are activations."""
    if len(ins) != 2:
        return None
    is_c = [w.is_const(t) for t in ins]
    if is_c == [False, True]:
        return table_op(w, name, node, ins, out, 0)
    if is_c == [True, False]:
        return table_op(w, name, node, ins, out, 1)
    return None


# Ops whose 1-D constant operands are per channel by definition (not numpy broadcasting)
CHANNEL_OPERANDS = ("BatchNormalization",)


def _channels(g, op, x):
    """Number of tables: C when a constant operand varies along the channel axis."""
    c = x[1] if len(x) >= 2 else 1
    if op.attrs["fn"] in CHANNEL_OPERANDS:
        sizes = {int(np.prod(s)) for _, s, _ in op.attrs["fn_consts"]}
        if sizes - {1, c}:
            raise g.fail(op, f"operands of sizes {sorted(sizes)} do not match {c} channels")
        return c if c in sizes and c > 1 else 1
    per = 1
    for _, shape, values in op.attrs["fn_consts"]:
        arr = np.asarray(values).reshape(shape)
        if arr.size <= 1:
            continue
        try:
            b = np.broadcast_to(arr, x)
        except ValueError:
            raise g.fail(op, f"constant operand of shape {shape} does not broadcast to the "
                             f"input {x}") from None
        moved = np.moveaxis(b, 1, 0).reshape(c, -1)
        if np.any(moved != moved[:, :1]):
            raise g.fail(op, f"constant operand of shape {shape} varies along an axis other "
                             f"than the channels; only per-tensor or per-channel operands are "
                             f"supported")
        per = c
    return per


def shape(g, op, ins):
    op.attrs["tables"] = _channels(g, op, ins[0])
    return ins[0]


def _evaluate(fn, fn_attrs, consts, x_pos, x):
    """fn applied to float64 x by onnx's reference evaluator."""
    from onnx.reference import ReferenceEvaluator
    names = [f"c{pos}" for pos, _, _ in consts]
    inits = [numpy_helper.from_array(np.asarray(v, np.float64).reshape(s), n)
             for n, (_, s, v) in zip(names, consts)]
    order = dict(zip([pos for pos, _, _ in consts], names))
    order[x_pos] = "x"
    inputs = [order.get(i, "") for i in range(max(order) + 1)]
    node = helper.make_node(fn, inputs, ["y"], **dict(fn_attrs))
    graph = helper.make_graph([node], "lut", [helper.make_tensor_value_info(
        "x", TensorProto.DOUBLE, list(x.shape))], [helper.make_tensor_value_info(
        "y", TensorProto.DOUBLE, None)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    with np.errstate(all="ignore"):
        return np.asarray(ReferenceEvaluator(model).run(None, {"x": x})[0], dtype=np.float64)


def table(fn, fn_attrs, consts, x_pos, tables, in_q, out_q, act_min=-128, act_max=127):
    """int8 (tables, 256): entry [t, q + 128] is the QDQ result for input q on channel t."""
    q = np.arange(-128, 128, dtype=np.float64)
    x = (q - in_q.zero_point) * np.float64(in_q.scale)
    xs = (np.broadcast_to(x, (1, tables, 1, 256)).copy()
          if tables > 1 or fn in CHANNEL_OPERANDS else x)
    if tables > 1 and fn not in CHANNEL_OPERANDS:   # broadcast along axis 1 of (1, C, 1, 256)
        consts = [(p, (1, tables, 1, 1) if int(np.prod(s)) == tables else s, v)
                  for p, s, v in consts]
    y = np.broadcast_to(_evaluate(fn, fn_attrs, consts, x_pos, xs), np.shape(xs))
    y = y.reshape(tables, 256)
    y = np.nan_to_num(y / np.float64(out_q.scale), nan=0.0, posinf=1e9, neginf=-1e9)
    out = np.rint(y) + out_q.zero_point
    return np.clip(out, max(-128, act_min), min(127, act_max)).astype(np.int8)


def lower(g, op, layer):
    layer.weight = table(op.attrs["fn"], op.attrs["fn_attrs"], op.attrs["fn_consts"],
                         op.attrs["x_pos"], op.attrs["tables"], g.qparams[op.inputs[0]], g.qparams[op.output],
                         layer.act_min, layer.act_max)


def reference(layer, graph, inputs):
    (x,) = inputs
    t = layer.weight
    idx = x.astype(np.int64) + 128
    if t.shape[0] == 1:
        return t[0][idx]
    ch = np.arange(t.shape[0]).reshape((1, -1) + (1,) * (x.ndim - 2))
    return t[ch, idx]


def export(w, layer, ins, core_out):
    a = layer.attrs
    order = {a["x_pos"]: ins[0]}
    for pos, s, v in a["fn_consts"]:
        order[pos] = w.const(f"{layer.name}_operand{pos}", np.asarray(v, np.float32).reshape(s))
    inputs = [order.get(i, "") for i in range(max(order) + 1)]
    w.opset = max(w.opset, NEEDS_OPSET.get(a["fn"], 0))
    w.node(a["fn"], inputs, [core_out], layer.name, exact_name=True, **dict(a["fn_attrs"]))


OPS = [OpDef("lut", onnx={t: convert for t in UNARY},
             attrs=("fn", "fn_attrs", "fn_consts", "x_pos", "tables"), shape=shape,
             reference=reference, lower=lower, macs=n_out, export=export, fusable=True,
             doc="fn fn_attrs fn_consts tables  (unary op as int8 table(s): weight (T, 256), "
                 "T = 1 or C)")]
