"""resize: TFLite's int8 RESIZE_BILINEAR (its reference ResizeBilinearInteger), exact.

Per output row y and column x, TFLite's 10-bit fixed-point source coordinate gives the two
neighbours and the weight of the second (y0, y1, wy in [0, 1024]); an output element is

    v = sum of the four neighbours' codes times (1024 - wy or wy) * (1024 - wx or wx)
    out = (v + (v > 0 ? 2**19 : -2**19)) / 2**20        (C division, toward zero)

on the codes (TFLite ignores the quantization parameters: they must be equal). The tables
(rows: y0, y1, wy per output row; cols: x0, x1, wx per output column) are the `index`
section, int32[3 * (OH + OW)]; kernels/common/nn_resize.c walks CHW or HWC."""
from __future__ import annotations

import numpy as np

from ..opkit.opgraph import Op
from ..opkit.opdef import OpDef
from ._common import n_out


def _scale10(i: int, o: int, align_corners: bool) -> int:
    if align_corners and o > 1:
        return ((1 << 10) * (i - 1) + (o - 1) // 2) // (o - 1)
    return ((1 << 10) * i + o // 2) // o


def _cdiv(a, b):
    return -((-a) // b) if a < 0 else a // b


def axis_table(in_size: int, out_size: int, align_corners: bool, half_pixel: bool) -> np.ndarray:
    """(out_size, 3) int32: the two source indices and the second one's weight (of 1024),
    TFLite's fixed-point coordinates (C divisions toward zero)."""
    s = _scale10(in_size, out_size, align_corners)
    rows = []
    for o in range(out_size):
        src = o * s + (s // 2 - (1 << 9) if half_pixel else 0)
        i0 = max(_cdiv(src, 1 << 10), 0)
        i1 = min(_cdiv(src + (1 << 10) - 1, 1 << 10), in_size - 1)
        rows.append((i0, i1, src - (1 << 10) * i0))    # may be < 0 at a half-pixel edge, as in TFLite
    return np.array(rows, dtype=np.int32)


def tables(layer, graph):
    _, _, ih, iw = graph.tensor(layer.inputs[0]).shape
    _, _, oh, ow = graph.tensor(layer.output).shape
    ac, hp = bool(layer.attrs.get("align_corners")), bool(layer.attrs.get("half_pixel"))
    return axis_table(ih, oh, ac, hp), axis_table(iw, ow, ac, hp)


def tfl_resize_bilinear(w, op):
    shape = w.input_tensor(op, 0).shape
    if len(shape) != 4:
        raise w.fail(op, f"input of shape {list(shape)}; a 4-D NHWC tensor is expected")
    ac = bool(op.options.get("align_corners", False))
    hp = bool(op.options.get("half_pixel_centers", False))
    if ac and hp:
        raise w.fail(op, "align_corners and half_pixel_centers together (TFLite refuses them too)")
    oh, ow = (int(v) for v in np.asarray(w.const(op, 1, "size")).reshape(-1))
    x, out = w.act(op, 0), w.out(op)
    if w.qparams[x] != w.qparams[out]:
        raise w.fail(op, f"input and output quantization differ ({w.qparams[x]} and "
                         f"{w.qparams[out]}); TFLite's int8 RESIZE_BILINEAR works on the codes")
    return Op(op.label, "resize", [x], out, op.code,
              attrs={"out_hw": (oh, ow), "align_corners": int(ac), "half_pixel": int(hp)})


def shape(g, op, ins):
    x = ins[0]
    if len(x) != 4:
        raise g.fail(op, f"resize needs a (1, C, H, W) input, got {x}")
    return (1, x[1]) + tuple(op.attrs["out_hw"])


def reference(layer, graph, inputs):
    (x,) = inputs
    ry, rx = tables(layer, graph)
    v = x[0].astype(np.int64)                       # (C, H, W)

    def g(yi, xi):
        return v[:, yi][:, :, xi]
    wy1 = ry[:, 2].astype(np.int64)[None, :, None]
    wx1 = rx[:, 2].astype(np.int64)[None, None, :]
    wy0, wx0 = 1024 - wy1, 1024 - wx1
    acc = (g(ry[:, 0], rx[:, 0]) * wy0 * wx0 + g(ry[:, 1], rx[:, 0]) * wy1 * wx0
           + g(ry[:, 0], rx[:, 1]) * wy0 * wx1 + g(ry[:, 1], rx[:, 1]) * wy1 * wx1)
    num = acc + np.where(acc > 0, 1 << 19, -(1 << 19))
    out = np.where(num >= 0, num >> 20, -((-num) >> 20))
    return np.clip(out, layer.act_min, layer.act_max).astype(np.int8)[None]


def params(layer, graph):
    ry, rx = tables(layer, graph)
    return {"index": np.concatenate([ry.reshape(-1), rx.reshape(-1)]).astype(np.int32)}


def export(w, layer, ins, core_out):
    mode = ("align_corners" if layer.attrs.get("align_corners") else
            "half_pixel" if layer.attrs.get("half_pixel") else "asymmetric")
    _, c, oh, ow = w.g.tensor(layer.output).shape
    sizes = w.const(f"{layer.name}_sizes", np.array([1, c, oh, ow], dtype=np.int64))
    w.node("Resize", [ins[0], "", "", sizes], [core_out], layer.name, exact_name=True,
           mode="linear", coordinate_transformation_mode=mode)


OPS = [OpDef("resize", tflite={"RESIZE_BILINEAR": tfl_resize_bilinear},
             attrs=("out_hw", "align_corners", "half_pixel"), shape=shape, reference=reference,
             requant=params, counts=lambda layer, graph: {"index": 3 * sum(layer.attrs["out_hw"])},
             macs=lambda layer, graph: 4 * n_out(layer, graph), export=export,
             doc="out_hw align_corners half_pixel  (TFLite's integer bilinear resize: index = "
                 "the rows' and columns' neighbours and weights, int32[3 (OH + OW)])")]
