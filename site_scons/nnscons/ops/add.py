"""add: two equal-shape inputs, each requantized to the output scale (one common shift)."""
from __future__ import annotations

import numpy as np

from .. import numerics
from ..frontends import onnx_ops as X
from ..passes.opgraph import Op
from ..reference import eltwise as ref
from . import OpDef
from ._common import n_out


def convert(w, name, node, ins, out):
    return Op(name, "add", [X.activation(w, name, node, t) for t in ins], out, node.op_type)


def same_shape(g, op, ins):
    if any(s != ins[0] for s in ins[1:]):
        raise g.fail(op, f"inputs must have identical shapes (no broadcasting), got {ins}")
    return ins[0]


def requant(layer, graph) -> dict:
    """mult[2], shift[1]: m_i = s_in_i / s_out with one common shift from the larger."""
    out = graph.tensor(layer.output).q.scale
    m = [graph.tensor(t).q.scale / out for t in layer.inputs]
    _, s = numerics.quantize_multiplier(max(m))
    return {"mult": np.array([numerics.multiplier_with_shift(x, s) for x in m], dtype=np.int32),
            "shift": np.array([s], dtype=np.int32)}


def export(w, layer, ins, core_out):
    w.node("Add", ins, [core_out], layer.name, exact_name=True)


OPS = [OpDef("add", onnx={"Add": convert}, shape=same_shape, reference=ref.add,
             requant=requant, counts=lambda layer, graph: {"mult": 2, "shift": 1},
             macs=n_out, export=export, fusable=True,
             doc="-  (two inputs, each requantized to the output scale)")]
