"""pad (pre-IR): ONNX Pad with constant 0, folded into the pads of the Conv (or counting
AveragePool) that reads it; any other Pad (reflect, edge, other constants, or one that no
conv absorbs) is a data movement (ops.move)."""
from __future__ import annotations

import numpy as np

from ..opkit.onnx_attrs import attributes
from ..opkit import onnx_operands as X
from ..opkit.opgraph import Op
from ..opkit.opdef import OpDef


def convert(w, name, node, ins, out):
    a = attributes(node)
    mode = X.text(a.get("mode", "constant"))
    if w.f.opset < 11:
        pads, value, axes = list(a.get("pads", ())), float(a.get("value", 0.0)), None
    else:
        pads = [int(v) for v in np.asarray(w.const(ins[1], name, node, "pads")).reshape(-1)]
        value = (float(np.asarray(w.const(ins[2], name, node, "constant_value")).reshape(()))
                 if len(ins) > 2 and ins[2] else 0.0)
        axes = ([int(v) for v in np.asarray(w.const(ins[3], name, node, "axes")).reshape(-1)]
                if len(ins) > 3 and ins[3] else None)
    from .move import convert as move
    if mode != "constant" or value != 0.0:   # reflect, edge, other constants: a gather
        return move(w, name, node, ins, out)
    op = Op(name, "pad", [X.activation(w, name, node, ins[0])], out, node.op_type,
            attrs={"pads": tuple(pads), "axes": None if axes is None else tuple(axes)})
    op.attrs["as_move"] = move(w, name, node, ins, out).attrs
    return op


def _spatial_pads(g, op, rank):
    pads, axes = list(op.attrs["pads"]), op.attrs["axes"]
    axes = list(range(rank)) if axes is None else [a % rank for a in axes]
    n = len(axes)
    if len(pads) != 2 * n:
        raise g.fail(op, f"pads {pads} do not match axes {axes}")
    begin, end = dict(zip(axes, pads[:n])), dict(zip(axes, pads[n:]))
    if any(begin.get(a, 0) or end.get(a, 0) for a in (0, 1)) or any(v < 0 for v in pads):
        raise g.fail(op, f"pads {pads} pad the batch or channel axis, or crop; only "
                         f"non-negative spatial padding is supported")
    return (begin.get(2, 0), begin.get(3, 0), end.get(2, 0), end.get(3, 0))


def fold(g, pad, op_def):
    users = g.consumers(pad.output)
    dst = users[0] if len(users) == 1 and pad.output not in g.outputs else None
    ok = dst is not None and (dst.kind == "conv2d" or (
        dst.kind == "avgpool" and (dst.attrs.get("count_include_pad")
                                   or not any(dst.attrs["pads"]))))
    if not ok:   # no conv absorbs it: a gather (ops.move)
        pad.kind, pad.attrs = "move", pad.attrs["as_move"]
        return
    rank = 4
    extra = _spatial_pads(g, pad, rank)
    dst.attrs["pads"] = tuple(int(a + b) for a, b in zip(dst.attrs["pads"], extra))
    if dst.kind == "avgpool":
        dst.attrs["count_include_pad"] = 1
    dst.inputs = [pad.inputs[0] if t == pad.output else t for t in dst.inputs]
    if pad.output in g.qparams and pad.inputs[0] not in g.qparams:
        # a Pad left in float before the model's QuantizeLinear: ONNX rounds after it, and
        # padding with 0 commutes with that rounding, so its input takes those parameters
        g.qparams[pad.inputs[0]] = g.qparams[pad.output]
    dst.fused.insert(0, pad.name)
    dst.source_ops.insert(0, pad.source_op)
    g.ops.remove(pad)


# selects: every output value is an input value or 0, which every int8 range holds exactly
OPS = [OpDef("pad", ir=False, onnx={"Pad": convert}, fold=fold, selects=True,
             doc="constant-0 Pad (attrs pads, axes): folded into the next conv2d/avgpool, else a move")]
