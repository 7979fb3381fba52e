"""add, concat, requant and reshape."""
from __future__ import annotations

import numpy as np

from .. import numerics
from .tflite_fixed import TFLITE_LEFT_SHIFT


def _zp(graph, name):
    return graph.tensor(name).q.zero_point


def add(layer, graph, inputs, p):
    a, b = inputs
    if a.shape != b.shape:
        raise ValueError(f"{layer.name}: add needs equal shapes, got {a.shape} and {b.shape}")
    za, zb = (_zp(graph, t) for t in layer.inputs)
    if p["shift"][0] < 0:
        return _tflite_add(layer, graph, a, b, za, zb, p)
    return add_rule(a, b, za, zb, _zp(graph, layer.output), p["mult"][0], p["mult"][1],
                    p["shift"][0], layer.act_min, layer.act_max).astype(np.int8)


def add_rule(a, b, za, zb, zo, m0, m1, s, lo, hi):
    """The two-multiplier add's integer rule (int64 result): both operands scaled to the
    common shift before one rounding.  targets/gap9/add_short proves its 32-bit form against
    this very function."""
    acc = (np.asarray(a, dtype=np.int64) - za) * np.int64(m0) + (np.asarray(b, dtype=np.int64) - zb) * np.int64(m1)
    return np.clip(numerics.rshift_round(acc, int(s)) + zo, lo, hi)


def _tflite_add(layer, graph, a, b, za, zb, p):
    """TFLite's ADD/SUB (ops/add.py: tflite_requant): a negative second multiplier marks
    SUB (the scaled second operand is subtracted)."""
    from .tflite_math import multiply_by_quantized_multiplier as mbqm
    e = p["shift"].astype(np.int64) + numerics.TFLITE_SHIFT_BIAS
    m2 = int(p["mult"][1])
    s1 = mbqm((a.astype(np.int64) - za) << TFLITE_LEFT_SHIFT, int(p["mult"][0]), e[0])
    s2 = mbqm((b.astype(np.int64) - zb) << TFLITE_LEFT_SHIFT, abs(m2), e[1])
    out = mbqm(s1 - s2 if m2 < 0 else s1 + s2, int(p["mult"][2]), e[2]) + _zp(graph, layer.output)
    return np.clip(out, layer.act_min, layer.act_max).astype(np.int8)


def concat(layer, graph, inputs, p):
    axis = layer.attrs.get("axis", 1)
    if axis != 1:
        raise ValueError(f"{layer.name}: concat supports axis 1 only, got {axis}")
    zp_out = _zp(graph, layer.output)
    parts = [numerics.requantize(x.astype(np.int64) - _zp(graph, t), p["mult"][i], p["shift"][i],
                                 zp_out, layer.act_min, layer.act_max)
             for i, (t, x) in enumerate(zip(layer.inputs, inputs))]
    return np.concatenate(parts, axis=1)


def requant(layer, graph, inputs, p):
    (x,) = inputs
    return numerics.requantize(x.astype(np.int64) - _zp(graph, layer.inputs[0]), p["mult"][0],
                               p["shift"][0], _zp(graph, layer.output), layer.act_min,
                               layer.act_max)


def reshape(layer, graph, inputs):
    (x,) = inputs
    return x.reshape(graph.tensor(layer.output).shape)
