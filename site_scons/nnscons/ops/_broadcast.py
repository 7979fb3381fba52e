"""Operands of a binary op that broadcast in a way its kernels do not take become an Expand
`move` to the result's shape first (add, mul, div)."""
from __future__ import annotations

import numpy as np

from ..opkit import onnx_operands as X
from ..opkit.opgraph import Op
from .move import OPSET


def _broadcast_mode(shape, full):
    shape = (1,) * (len(full) - len(shape)) + tuple(shape)
    if shape == tuple(full):
        return "same"
    if all(d == 1 for d in shape):
        return "scalar"
    if shape[1] == full[1] and all(d == 1 for i, d in enumerate(shape) if i != 1):
        return "channel"
    return None


def expand_operands(w, name, node, ins, out, kept=("same", "channel", "scalar")):
    """(moves, inputs): an operand of a binary op that broadcasts in a way the op's kernels do
    not (CBAM's (1, 1, H, W) attention map times a (1, C, H, W) map; add: any broadcast) is
    first expanded to the result's shape by an Expand move (exact: it copies codes, and takes
    its input's parameters). Shapes from onnx's shape inference; rank-2 and rank-4 results."""
    shapes = [w._static_shapes().get(t) for t in ins]
    if len(ins) != 2 or any(s is None for s in shapes) or any(w.is_const(t) for t in ins):
        return [], list(ins)
    try:
        full = tuple(int(d) for d in np.broadcast_shapes(*shapes))
    except ValueError:
        return [], list(ins)
    if len(full) not in (2, 4) or full[0] != 1:
        return [], list(ins)
    moves, new = [], []
    for k, (t, s) in enumerate(zip(ins, shapes)):
        if _broadcast_mode(s, full) in kept:
            new.append(t)
            continue
        e = f"{out}__expand{k}"
        step = ("Expand", (), ((1, "int64", (len(full),), full),), 0, OPSET)
        moves.append(Op(f"{name}_expand{k}", "move", [X.activation(w, name, node, t)], e, node.op_type,
                        attrs={"steps": (step,)}))
        new.append(e)
    return moves, new


def broadcast_mode(g, op, ins):
    """Order the operands (the full-size one first) and name how the second broadcasts."""
    a, b = ins
    if np.prod(a) < np.prod(b):
        op.inputs = op.inputs[::-1]
        a, b = b, a
    try:
        full = np.broadcast_shapes(a, b)
    except ValueError:
        raise g.fail(op, f"operand shapes {a} and {b} do not broadcast") from None
    if tuple(full) != tuple(a):
        raise g.fail(op, f"operand shapes {a} and {b} broadcast to {tuple(full)}; only one "
                         f"operand may be broadcast")
    b_full = (1,) * (len(a) - len(b)) + tuple(b)
    if b_full == tuple(a):
        mode = "same"
    elif all(d == 1 for d in b_full):
        mode = "scalar"
    elif len(a) >= 2 and b_full[1] == a[1] and all(d == 1 for i, d in enumerate(b_full) if i != 1):
        mode = "channel"
    else:
        raise g.fail(op, f"operand of shape {b} broadcasts over {a} along other axes than "
                         f"the channels; supported: same shape, per channel, one value")
    op.attrs["mode"] = mode
    return a


def expand(layer, graph, b):
    """b (int8, its own shape) as an array broadcastable to the output."""
    out = graph.tensor(layer.output).shape
    return b.reshape((1,) * (len(out) - b.ndim) + b.shape)
