"""Fuse real-valued activations (OpDef.activation: Relu/Clip) into the op that produces
their input when that op is OpDef.fusable (conv2d, linear, add, ...).

The fused layer writes the activation's output tensor (and so its quantization); its clamp
becomes act_min/act_max when lowering. A clamp that cannot be fused stays an op of its own
and is lowered to a 'requant' layer.
"""
from __future__ import annotations

from .. import ops
from ..opkit.opgraph import OpGraph


def _tighter(a, b, pick):
    if a is None:
        return b
    if b is None:
        return a
    return pick(a, b)


def fuse_activations(g: OpGraph) -> None:
    for act in [op for op in g.ops if ops.get(op.kind).activation]:
        src = g.producer(act.inputs[0])
        if (src is None or not ops.get(src.kind).fusable or act.inputs[0] in g.outputs
                or len(g.consumers(act.inputs[0])) != 1):
            continue
        lo, hi = src.clamp
        src.clamp = (_tighter(lo, act.attrs["lo"], max), _tighter(hi, act.attrs["hi"], min))
        src.output = act.output
        src.fused.append(act.name)
        src.source_ops.append(act.source_op)
        g.ops.remove(act)
