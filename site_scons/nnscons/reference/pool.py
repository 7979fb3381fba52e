"""maxpool, avgpool and global_avgpool, requantized as documented in nnscons.numerics (p: the
op's requant parameters, handed in by its registry entry: ops._common.with_requant).

A window that holds only padding cannot come from valid ONNX pads; the kernels and this
reference both give it an accumulator of 0 (output = clamp(zp_out)) instead of failing.
"""
from __future__ import annotations

import numpy as np

from .. import numerics
from .windows import window_view

_EMPTY = -129  # below any int8: marks max-pool positions that saw no image pixel


def _geometry(layer, graph):
    a = layer.attrs
    _, _, oh, ow = graph.tensor(layer.output).shape
    return dict(kernel=a["kernel"], stride=a.get("stride", (1, 1)),
                dilation=tuple(a.get("dilation", (1, 1))),
                pads=a.get("pads", (0, 0, 0, 0)), out_hw=(oh, ow))


def _requant(layer, graph, acc, mult, shift, count=None):
    zp_out = graph.tensor(layer.output).q.zero_point
    return numerics.requantize(acc, mult, shift, zp_out, layer.act_min, layer.act_max, count)


def maxpool(layer, graph, inputs, p):
    (x,) = inputs
    zp_in = graph.tensor(layer.inputs[0]).q.zero_point
    view = window_view(x[0].astype(np.int16), fill=_EMPTY, **_geometry(layer, graph))
    m = view.max(axis=(1, 2)).astype(np.int64)
    m[m == _EMPTY] = zp_in
    return _requant(layer, graph, m - zp_in, p["mult"][0], p["shift"][0])[None]


def avgpool(layer, graph, inputs, p):
    (x,) = inputs
    zp_in = graph.tensor(layer.inputs[0]).q.zero_point
    geo = _geometry(layer, graph)
    centered = x[0].astype(np.int64) - zp_in
    acc = window_view(centered, fill=0, **geo).sum(axis=(1, 2))
    if layer.attrs.get("count_include_pad", 0):
        # ONNX counts the pads but not what a ceil_mode window reaches past them.
        top, left, bottom, right = geo["pads"]
        _, h, w = centered.shape
        inside = np.ones((1, top + h + bottom, left + w + right), dtype=np.int64)
        count = window_view(inside, fill=0, **dict(geo, pads=(0, 0, 0, 0))).sum(axis=(1, 2))[0]
    else:
        inside = np.ones((1,) + centered.shape[1:], dtype=np.int64)
        count = window_view(inside, fill=0, **geo).sum(axis=(1, 2))[0]
    return _requant(layer, graph, acc, p["mult"][0], p["shift"][0], count)[None]


def global_avgpool(layer, graph, inputs, p):
    (x,) = inputs
    zp_in = graph.tensor(layer.inputs[0]).q.zero_point
    acc = (x[0].astype(np.int64) - zp_in).sum(axis=(1, 2))
    count = x.shape[2] * x.shape[3]
    out = _requant(layer, graph, acc, p["mult"][0], p["shift"][0], count)
    return out.reshape(graph.tensor(layer.output).shape)
