"""add, concat, requant and reshape."""
from __future__ import annotations

import numpy as np

from .. import numerics


def _zp(graph, name):
    return graph.tensor(name).q.zero_point


def add(layer, graph, inputs):
    a, b = inputs
    if a.shape != b.shape:
        raise ValueError(f"{layer.name}: add needs equal shapes, got {a.shape} and {b.shape}")
    p = numerics.requant_params(layer, graph)
    za, zb = (_zp(graph, t) for t in layer.inputs)
    # Both operands are scaled to the common shift before one rounding.
    acc = ((a.astype(np.int64) - za) * np.int64(p["mult"][0])
           + (b.astype(np.int64) - zb) * np.int64(p["mult"][1]))
    out = numerics.rshift_round(acc, int(p["shift"][0])) + _zp(graph, layer.output)
    return np.clip(out, layer.act_min, layer.act_max).astype(np.int8)


def concat(layer, graph, inputs):
    axis = layer.attrs.get("axis", 1)
    if axis != 1:
        raise ValueError(f"{layer.name}: concat supports axis 1 only, got {axis}")
    p = numerics.requant_params(layer, graph)
    zp_out = _zp(graph, layer.output)
    parts = [numerics.requantize(x.astype(np.int64) - _zp(graph, t), p["mult"][i], p["shift"][i],
                                 zp_out, layer.act_min, layer.act_max)
             for i, (t, x) in enumerate(zip(layer.inputs, inputs))]
    return np.concatenate(parts, axis=1)


def requant(layer, graph, inputs):
    (x,) = inputs
    p = numerics.requant_params(layer, graph)
    return numerics.requantize(x.astype(np.int64) - _zp(graph, layer.inputs[0]), p["mult"][0],
                               p["shift"][0], _zp(graph, layer.output), layer.act_min,
                               layer.act_max)


def reshape(layer, graph, inputs):
    (x,) = inputs
    return x.reshape(graph.tensor(layer.output).shape)
