"""conv2d and linear: integer accumulation, then the numerics.requantize rule (p: the op's
requant parameters, handed in by its registry entry: ops._common.with_requant).

The products are summed with a float64 matmul (BLAS speed).  This is exact: every
product is an integer with |(x - zp) * w| <= 32640 and K <= numerics.MAX_ACC_TERMS,
so every partial sum, in whatever order BLAS adds them, is an integer below 2**31,
far inside float64's 2**53 exact-integer range.
"""
from __future__ import annotations

import numpy as np

from .. import numerics
from .windows import window_view


def _bias(layer, n_out):
    if layer.bias is None:
        return np.zeros(n_out, dtype=np.int64)
    return layer.bias.astype(np.int64)


def _check_terms(layer, k):
    if k > numerics.MAX_ACC_TERMS:
        raise ValueError(f"{layer.name}: {k} products per output exceed the exact int32 "
                         f"accumulator limit {numerics.MAX_ACC_TERMS}")


def _finish(layer, graph, acc, p):
    """Requantize acc (O, N) int64 to int8 with per-output-channel parameters p."""
    zp_out = graph.tensor(layer.output).q.zero_point
    return numerics.requantize(acc, p["mult"][:, None], p["shift"][:, None], zp_out,
                               layer.act_min, layer.act_max)


def conv2d(layer, graph, inputs, p):
    (x,) = inputs
    in_t, out_t = graph.tensor(layer.inputs[0]), graph.tensor(layer.output)
    _, c, _, _ = in_t.shape
    _, o, oh, ow = out_t.shape
    a = layer.attrs
    g = a.get("groups", 1)
    kh, kw = a["kernel"]
    k = (c // g) * kh * kw
    _check_terms(layer, k)
    # Padding holds zp_in, i.e. 0 once the zero point is subtracted.
    centered = x[0].astype(np.float64) - in_t.q.zero_point
    view = window_view(centered, (kh, kw), a.get("stride", (1, 1)), a.get("dilation", (1, 1)),
                       a.get("pads", (0, 0, 0, 0)), (oh, ow), 0.0)
    cols = view.reshape(g, k, oh * ow)                      # im2col, one block per group
    wmat = layer.weight.reshape(g, o // g, k).astype(np.float64)
    acc = np.matmul(wmat, cols).reshape(o, oh * ow).astype(np.int64) + _bias(layer, o)[:, None]
    return _finish(layer, graph, acc, p).reshape(1, o, oh, ow)


def linear(layer, graph, inputs, p):
    (x,) = inputs
    in_t = graph.tensor(layer.inputs[0])
    o, k = layer.weight.shape
    _check_terms(layer, k)
    centered = x.reshape(k).astype(np.float64) - in_t.q.zero_point
    acc = (layer.weight.astype(np.float64) @ centered).astype(np.int64) + _bias(layer, o)
    return _finish(layer, graph, acc[:, None], p).reshape(1, o)
