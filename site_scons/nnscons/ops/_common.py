"""Pieces several op modules share: requantization parameter rules, count helpers,
window attributes, and the QDQ-export helpers."""
from __future__ import annotations

import numpy as np

from .. import numerics


def pair(ms):
    M = np.array([p[0] for p in ms], dtype=np.int32)
    S = np.array([p[1] for p in ms], dtype=np.int32)
    return {"mult": M, "shift": S}


def single_requant(layer, graph) -> dict:
    """mult[1], shift[1] for m = s_in / s_out (applied to x - zp_in)."""
    s_in = graph.tensor(layer.inputs[0]).q.scale
    return pair([numerics.rule_pair(graph, s_in / graph.tensor(layer.output).q.scale)])


def single_counts(layer, graph) -> dict:
    return {"mult": 1, "shift": 1}


def per_input_requant(layer, graph) -> dict:
    """One (M, s) per input, m_i = s_in_i / s_out."""
    out = graph.tensor(layer.output).q.scale
    return pair([numerics.rule_pair(graph, graph.tensor(t).q.scale / out)
                 for t in layer.inputs])


def per_input_counts(layer, graph) -> dict:
    n = len(layer.inputs)
    return {"mult": n, "shift": n}


def n_out(layer, graph) -> int:
    return int(np.prod(graph.tensor(layer.output).shape))


def n_in(layer, graph) -> int:
    return int(np.prod(graph.tensor(layer.inputs[0]).shape))


def zp(graph, name) -> int:
    return graph.tensor(name).q.zero_point


def first_input_shape(g, op, ins):
    return ins[0]
