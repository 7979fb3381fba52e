"""concat: channel concatenation, each input requantized to the output's params."""
from __future__ import annotations

from ..frontends import onnx_ops as X
from ..frontends.onnx_file import attributes
from ..passes.opgraph import Op
from ..passes.shapes import check_axis
from ..reference import eltwise as ref
from . import OpDef
from ._common import per_input_counts, per_input_requant


def convert(w, name, node, ins, out):
    return Op(name, "concat", [X.activation(w, name, node, t) for t in ins], out, node.op_type,
              attrs={"axis": int(attributes(node)["axis"])})


def shape(g, op, ins):
    check_axis(g, op, len(ins[0]), op.attrs["axis"], (1,))
    op.attrs["axis"] = 1
    rest = {s[:1] + s[2:] for s in ins}
    if len(rest) != 1:
        raise g.fail(op, f"inputs must agree on every axis but 1, got {ins}")
    return (1, sum(s[1] for s in ins)) + ins[0][2:]


def export(w, layer, ins, core_out):
    w.node("Concat", ins, [core_out], layer.name, exact_name=True, axis=1)


OPS = [OpDef("concat", onnx={"Concat": convert}, attrs=("axis",), shape=shape,
             reference=ref.concat, requant=per_input_requant, counts=per_input_counts,
             export=export, doc="axis=1  (channel concat; each input requantized)")]
