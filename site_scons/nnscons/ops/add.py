"""add: two equal-shape inputs (Add, Sub; Sum of two arrives from ops/nary.py), each
requantized to the output scale (one common shift); Sub negates the second multiplier."""
from __future__ import annotations

import numpy as np

from .. import numerics
from ..opkit import onnx_operands as X
from ..opkit import onnx_qoperator
from ..opkit.opgraph import Op
from ..reference import eltwise as ref
from ..reference.tflite_fixed import TFLITE_LEFT_SHIFT
from ..opkit.opdef import OpDef
from ._common import n_out, with_requant


def convert(w, name, node, ins, out):
    """Add/Sub of two activations (Sub: the second operand's multiplier negated); with a
    constant operand the op is a lookup table (ops.lut)."""
    from .lut import const_binary
    op = const_binary(w, name, node, ins, out)
    if op is not None:
        return op
    from ._broadcast import expand_operands
    moves, ins = expand_operands(w, name, node, ins, out, kept=("same",))
    attrs = {"sub": 1} if node.op_type == "Sub" else {}
    return moves + [Op(name, "add", [X.activation(w, name, node, t) for t in ins], out, node.op_type,
                       attrs=attrs)]


def tfl_add(w, op):
    """ADD/SUB of two activations of one shape (TFLite's recipe: tflite_requant)."""
    shapes = [tuple(w.input_tensor(op, k).shape) for k in (0, 1)]
    consts = [w.input_tensor(op, k).is_const for k in (0, 1)]
    if all(consts):
        raise w.fail(op, f"{op.code} of two constants: fold it before exporting")
    if any(consts):
        from .lut import tfl_const_binary
        return tfl_const_binary(w, op)
    if shapes[0] != shapes[1]:
        raise w.fail(op, f"operands of shapes {list(shapes[0])} and {list(shapes[1])}: "
                         f"broadcasting is not supported; both must have the same shape")
    attrs = {"sub": 1} if op.code == "SUB" else {}
    return Op(op.label, "add", [w.act(op, 0), w.act(op, 1)], w.out(op), op.code, attrs=attrs,
              act_range=w.act_range(op))


def same_shape(g, op, ins):
    if any(s != ins[0] for s in ins[1:]):
        raise g.fail(op, f"inputs must have identical shapes (no broadcasting), got {ins}")
    return ins[0]


# TFLite's int8 ADD/SUB: each operand's (x - zp) << TFLITE_LEFT_SHIFT (reference/tflite_fixed.py)


def tflite_requant(layer, graph) -> dict:
    """mult[3], shift[3] (TFLite's rule, shift fields < 0): the two operands' and the
    output's multipliers; SUB negates the second operand's multiplier (the kernels then
    subtract the scaled operand)."""
    from ..reference import tflite_math as T
    s1, s2 = (graph.tensor(t).q.scale for t in layer.inputs)
    p = (T.sub_params if layer.attrs.get("sub") else T.add_params)(s1, s2, graph.tensor(layer.output).q.scale)
    assert p.left_shift == TFLITE_LEFT_SHIFT
    mult = [p.input1_multiplier, -p.input2_multiplier if layer.attrs.get("sub") else p.input2_multiplier,
            p.output_multiplier]
    shift = [p.input1_shift, p.input2_shift, p.output_shift]
    return {"mult": np.array(mult, dtype=np.int32),
            "shift": np.array(shift, dtype=np.int32) - numerics.TFLITE_SHIFT_BIAS}


def counts(layer, graph) -> dict:
    if numerics.graph_rule(graph) == "tflite":
        return {"mult": 3, "shift": 3}
    return {"mult": 2, "shift": 1}


def requant(layer, graph) -> dict:
    """mult[2], shift[1]: m_i = s_in_i / s_out with one common shift from the larger
    (TFLite's rule: tflite_requant)."""
    if numerics.graph_rule(graph) == "tflite":
        return tflite_requant(layer, graph)
    out = graph.tensor(layer.output).q.scale
    m = [graph.tensor(t).q.scale / out for t in layer.inputs]
    _, s = numerics.quantize_multiplier(max(m))
    mult = [numerics.multiplier_with_shift(x, s) for x in m]
    if layer.attrs.get("sub"):
        mult[1] = -mult[1]
    return {"mult": np.array(mult, dtype=np.int32), "shift": np.array([s], dtype=np.int32)}


def export(w, layer, ins, core_out):
    w.node("Sub" if layer.attrs.get("sub") else "Add", ins, [core_out], layer.name,
           exact_name=True)


OPS = [OpDef("add", onnx={"Add": convert, "Sub": convert}, attrs=("sub",),
             tflite={"ADD": tfl_add, "SUB": tfl_add},
             shape=same_shape, reference=with_requant(ref.add, requant),
             requant=requant, counts=counts,
             macs=n_out, export=export, fusable=True,
             doc="sub (0/1, optional)  (two inputs, each requantized to the output scale; sub: a - b)")]

# onnxruntime's QOperator form of the same op (opkit/onnx_qoperator.py)
CONVERTERS = onnx_qoperator.converters("QLinearAdd")
