"""add: two equal-shape inputs (Add, Sub, Sum of two), each requantized to the output scale
(one common shift); Sub negates the second multiplier."""
from __future__ import annotations

import numpy as np

from .. import numerics
from ..frontends import onnx_ops as X
from ..passes.opgraph import Op
from ..reference import eltwise as ref
from . import OpDef
from ._common import n_out


def convert(w, name, node, ins, out):
    """Add/Sub of two activations (Sub: the second operand's multiplier negated); with a
    constant operand the op is a lookup table (ops.lut)."""
    from .lut import const_binary
    op = const_binary(w, name, node, ins, out)
    if op is not None:
        return op
    attrs = {"sub": 1} if node.op_type == "Sub" else {}
    return Op(name, "add", [X.activation(w, name, node, t) for t in ins], out, node.op_type,
              attrs=attrs)


def sum_(w, name, node, ins, out):
    if len(ins) == 2:
        return convert(w, name, node, ins, out)
    if len(ins) == 1:
        return Op(name, "requant", [X.activation(w, name, node, ins[0])], out, node.op_type)
    raise w.fail(name, node, f"Sum of {len(ins)} inputs is not supported (1 or 2 inputs); "
                             f"split it into a chain of Add nodes")


def same_shape(g, op, ins):
    if any(s != ins[0] for s in ins[1:]):
        raise g.fail(op, f"inputs must have identical shapes (no broadcasting), got {ins}")
    return ins[0]


def requant(layer, graph) -> dict:
    """mult[2], shift[1]: m_i = s_in_i / s_out with one common shift from the larger."""
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


OPS = [OpDef("add", onnx={"Add": convert, "Sub": convert, "Sum": sum_}, attrs=("sub",),
             shape=same_shape, reference=ref.add,
             requant=requant, counts=lambda layer, graph: {"mult": 2, "shift": 1},
             macs=n_out, export=export, fusable=True,
             doc="sub (0/1, optional)  (two inputs, each requantized to the output scale; sub: a - b)")]
