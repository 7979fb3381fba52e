"""Pieces several op modules share: requantization parameter rules, count helpers,
window attributes, and the QDQ-export helpers."""
from __future__ import annotations

from typing import Callable

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


def scale_f64(q) -> np.float64:
    """A tensor's scale as the float64 the QDQ file's float32 holds (the float64 ops'
    reference, kernels and oracle all compute with this value)."""
    return np.float64(np.float32(q.scale))


def dequantized(graph, t, x) -> np.ndarray:
    """Codes x of tensor t as their float64 real values (the float64 ops' QDQ input)."""
    q = graph.tensor(t).q
    return (x.astype(np.float64) - np.float64(q.zero_point)) * scale_f64(q)


def zp(graph, name) -> int:
    return graph.tensor(name).q.zero_point


def first_input_shape(g, op, ins):
    return ins[0]


def with_requant(ref_fn: Callable, requant_fn: Callable) -> Callable:
    """An op's reference hook over a shared reference kernel that takes the op's requant
    parameters (reference/ sits below the registry and cannot ask it for them)."""
    def reference(layer, graph, inputs):
        return ref_fn(layer, graph, inputs, requant_fn(layer, graph))
    return reference
