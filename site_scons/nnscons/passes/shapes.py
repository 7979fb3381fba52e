"""Shape inference on the pre-IR graph (batch 1; 4-D NCHW or 2-D (1, F) tensors): each
op's rule is its registry entry's `shape` (the window helpers the rules share are opkit.shapes).

Our own rules rather than onnx shape inference: they are the rules the reference and the
kernels implement, and every mismatch becomes a ModelError naming the node.
"""
from __future__ import annotations

from .. import ops
from ..opkit.opgraph import OpGraph


def infer_shapes(g: OpGraph) -> None:
    g.shapes = {g.input: tuple(g.input_shape)}
    g.shapes.update({t: tuple(s) for t, s in zip(g.extra_inputs, g.extra_input_shapes)})
    for op in g.ops:
        ins = [g.shapes[t] for t in op.inputs]
        g.shapes[op.output] = tuple(int(d) for d in ops.get(op.kind).shape(g, op, ins))
