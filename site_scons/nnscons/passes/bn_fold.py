"""Pre-IR rewrites owned by the ops (OpDef.fold): BatchNormalization folding."""
from __future__ import annotations

from .. import ops
from ..opkit.opgraph import OpGraph


def fold_batchnorm(g: OpGraph) -> None:
    for op in [op for op in g.ops if ops.get(op.kind).fold]:
        ops.get(op.kind).fold(g, op, ops.get)
