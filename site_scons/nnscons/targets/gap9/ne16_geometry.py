"""NE16 layer geometry shared by the layer planner (ne16_layer) and its cost model (ne16_cost):
the bytes of a channel's packed weights, the padded input tile and the jobs of a tile."""
from __future__ import annotations

from . import ne16_weights


def weight_row(layer, m) -> int:
    """Bytes of one output channel's NE16 weights ("rows": kh 1x1 rows of kw * ic channels)."""
    ic, kh, kw = int(layer.weight.shape[1]), int(layer.weight.shape[2]), int(layer.weight.shape[3])
    if m == "rows":
        return kh * ne16_weights.packed_size("1x1", kw * ic, 1)
    return ne16_weights.packed_size(m, ic, 1)


def geometry(layer, graph):
    """(input, output, kh, kw); the output dict also holds the stride s and the padded tile's
    width pw = (ow - 1) * s + kw (NE16 computes the outputs themselves: 3x3 and 1x1 at
    stride 1, "rows" at any stride through its input strides)."""
    from .ops import hwc
    i, o = hwc(graph.tensor(layer.inputs[0]).shape), hwc(graph.tensor(layer.output).shape)
    kh, kw = layer.attrs["kernel"]
    o["s"] = int(layer.attrs["stride"][0])
    o["pw"] = (o["w"] - 1) * o["s"] + kw
    return i, o, kh, kw


def in_rows(o, th, kh) -> int:
    """Padded input rows of a tile of th output rows."""
    return (th - 1) * o["s"] + kh


def jobs(m, kh, kw, ic) -> tuple:
    """(jobs per tile, input channels per job): "rows" runs one 1x1 job per kernel row over
    kw * ic contiguous bytes per output pixel, the others one job over ic."""
    return (kh, kw * ic) if m == "rows" else (1, ic)
