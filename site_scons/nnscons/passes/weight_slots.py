"""Asymmetric weights, exactly, on every target: a weight's centred integers q - zero_point
lie in [-255, 255] when the model quantized it with a zero point (onnxruntime's uint8
asymmetric weights, the ONNX model zoo's QOperator models), beyond the int8 every kernel
multiplies. Each centred weight d is split into S int8 slots (d = d_0 + ... + d_{S-1}; two,
three only when some d is 255) and the layer reads S copies of its input:

    sum_k (x_k - zx) * d_k  =  sum_s sum_k (x_k - zx) * d_{s,k}

one int32 sum over S times the terms, the same accumulator, bias and requantization, so the
result is bit-exact. The copies are a channel concat of the input with itself (groups 1: a
conv or a linear layer) or, for a grouped or depthwise conv, a move that repeats each
group's channels in place. Cost: S times the layer's MACs and an S-fold copy of its input.
"""
from __future__ import annotations

import numpy as np

from ..opkit.opgraph import Op, OpGraph


def slots(d: np.ndarray) -> list:
    """int8 arrays whose sum is d (greedy: each takes what int8 holds of the rest)."""
    out, rest = [], d.astype(np.int64)
    while not out or rest.any():
        part = np.clip(rest, -128, 127)
        out.append(part.astype(np.int8))
        rest = rest - part
    return out


def _copies_op(op: Op, x: str, shape: tuple, n: int, groups: int, out: str) -> Op:
    from ..ops.move import OPSET, reshape_step   # ops import the frontends, which import passes
    name = f"{op.name}_weight_slots"
    if groups == 1:
        return Op(name, "concat", [x] * n, out, op.source_op, attrs={"axis": 1})
    c = shape[1]
    tile = ("Tile", (), ((1, "int64", (5,), (1, 1, n, 1, 1)),), 0, OPSET)
    steps = (reshape_step((1, groups, c // groups) + tuple(shape[2:])), tile,
             reshape_step((1, n * c) + tuple(shape[2:])))
    return Op(name, "move", [x], out, op.source_op, attrs={"steps": steps})


def _fresh(g: OpGraph, base: str) -> str:
    taken = set(g.shapes) | {t for o in g.ops for t in o.inputs + [o.output]}
    name, k = base, 1
    while name in taken:
        name, k = f"{base}_{k}", k + 1
    return name


def split_wide_weights(g: OpGraph) -> None:
    """Rewrite every weighted op whose exact weights do not fit int8 (see the module doc)."""
    from .. import ops
    out_ops = []
    for op in g.ops:
        wq = op.weight_q
        if wq is None or wq[0].dtype == np.int8:
            out_ops.append(op)
            continue
        d, scale = wq
        parts = slots(d)
        groups = int(op.attrs.get("groups", 1))
        x = op.inputs[0]
        shape = g.shapes[x]
        per_group = d.shape[1]
        # slot s of group g's channels sits at s * per_group within the group's block
        o = d.shape[0]
        by_group = [p.reshape((groups, o // groups, per_group) + d.shape[2:]) for p in parts]
        w8 = np.concatenate(by_group, axis=2).reshape((o, len(parts) * per_group) + d.shape[2:])
        copies = _fresh(g, f"{x}__x{len(parts)}")
        dup = _copies_op(op, x, shape, len(parts), groups, copies)
        g.qparams[copies] = g.qparams[x]
        g.shapes[copies] = tuple(int(v) for v in ops.get(dup.kind).shape(g, dup, [shape] * len(dup.inputs)))
        op.inputs = [copies] + op.inputs[1:]
        op.weight_q = (np.ascontiguousarray(w8), scale)
        op.weight = w8.astype(np.float64) * scale.reshape((-1,) + (1,) * (d.ndim - 1))
        out_ops += [dup, op]
    g.ops = out_ops
