"""concat: channel concatenation, each input requantized to the output's params."""
from __future__ import annotations

from ..opkit import onnx_operands as X
from ..opkit import onnx_qoperator
from ..opkit.onnx_attrs import attributes
from ..opkit.opgraph import Op
from ..opkit.shapes import check_axis
from ..reference import eltwise as ref
from ..opkit.opdef import OpDef
from ._common import per_input_counts, per_input_requant, with_requant


def convert(w, name, node, ins, out):
    axis = int(attributes(node)["axis"])
    rank = w.model_rank(out) or w.model_rank(ins[0])
    if rank == 4 and axis % 4 in (2, 3):
        return _on_spatial_axis(w, name, node, ins, out, axis % 4)
    return Op(name, "concat", [X.activation(w, name, node, t) for t in ins], out, node.op_type,
              attrs={"axis": axis})


def _on_spatial_axis(w, name, node, ins, out, axis):
    """Concat along H or W of (1, C, H, W) maps: each input transposed so the axis is the
    channels (a move), the channel concat (each input requantized to the output's
    parameters, which the concatenation takes back from the move after it), transposed
    back: exact, the codes only move."""
    from .move import transpose_step
    perm = [0, axis, 2, 3] if axis == 3 else [0, 2, 1, 3]
    perm[axis] = 1
    steps = (transpose_step(perm),)
    ops, moved = [], []
    for k, t in enumerate(ins):
        moved.append(f"{out}__axis{k}")
        ops.append(Op(f"{name}_in{k}", "move", [X.activation(w, name, node, t)], moved[-1], node.op_type,
                      attrs={"steps": steps}))
    joined = f"{out}__joined"
    ops.append(Op(f"{name}_join", "concat", moved, joined, node.op_type, attrs={"axis": 1}))
    ops.append(Op(name, "move", [joined], out, node.op_type, attrs={"steps": steps}))
    return ops


def tfl_concat(w, op):
    """CONCATENATION along the channels (TFLite's int8 kernel requires every input's
    quantization to equal the output's)."""
    rank = len(w.tensor(op.outputs[0]).shape)
    axis = w.ir_axis(op, rank, int(op.options.get("axis", 0)))
    if axis != 1:
        raise w.fail(op, f"concatenation along axis {op.options.get('axis')} of a rank-{rank} "
                         f"tensor is not supported; only along the channels (the last axis)")
    ins = [w.act(op, k) for k in range(len(op.inputs))]
    out = w.out(op)
    for t in ins:
        if w.qparams[t] != w.qparams[out]:
            raise w.fail(op, f"input {t!r} is quantized as {w.qparams[t]}, the output as "
                             f"{w.qparams[out]}; TFLite's int8 concatenation requires them equal")
    return Op(op.label, "concat", ins, out, op.code, attrs={"axis": 1},
              act_range=w.act_range(op))


def shape(g, op, ins):
    check_axis(g, op, len(ins[0]), op.attrs["axis"], (1,))
    op.attrs["axis"] = 1
    rest = {s[:1] + s[2:] for s in ins}
    if len(rest) != 1:
        raise g.fail(op, f"inputs must agree on every axis but 1, got {ins}")
    return (1, sum(s[1] for s in ins)) + ins[0][2:]


def export(w, layer, ins, core_out):
    w.node("Concat", ins, [core_out], layer.name, exact_name=True, axis=1)


OPS = [OpDef("concat", onnx={"Concat": convert}, tflite={"CONCATENATION": tfl_concat},
             attrs=("axis",), shape=shape,
             reference=with_requant(ref.concat, per_input_requant), requant=per_input_requant, counts=per_input_counts,
             export=export, doc="axis=1  (channel concat; each input requantized)")]

# onnxruntime's QOperator form of the same op (opkit/onnx_qoperator.py)
CONVERTERS = onnx_qoperator.converters("QLinearConcat")
