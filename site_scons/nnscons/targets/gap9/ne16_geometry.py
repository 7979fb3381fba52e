"""NE16 layer geometry shared by the layer planner (ne16_layer) and its cost model (ne16_cost):
the bytes of a channel's packed weights and the stride-1 grid NE16 computes."""
from __future__ import annotations

from . import ne16_weights


def weight_row(layer, m) -> int:
    """Bytes of one output channel's NE16 weights."""
    oc, ic = int(layer.weight.shape[0]), int(layer.weight.shape[1])
    return ne16_weights.packed_size(m, ic, 1)


def geometry(layer, graph):
    """(input, output, kh, kw); the output dict also holds the stride s and the stride-1 grid
    NE16 computes for th output rows: rows_c(th) = (th - 1) * s + 1, width wc."""
    from .ops import hwc
    i, o = hwc(graph.tensor(layer.inputs[0]).shape), hwc(graph.tensor(layer.output).shape)
    kh, kw = layer.attrs["kernel"]
    o["s"] = int(layer.attrs["stride"][0])
    o["wc"] = (o["w"] - 1) * o["s"] + 1
    return i, o, kh, kw


def computed_rows(o, th) -> int:
    """Stride-1 output rows NE16 computes for th output rows."""
    return (th - 1) * o["s"] + 1
