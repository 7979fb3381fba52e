"""bilinear: ONNX Resize mode 'linear' on the H and W axes of a (1, C, H, W) tensor, with
ONNX's QDQ semantics: dequantize, interpolate in float, quantize (round half to even).

The exact oracle (onnx's reference evaluator in float64) resizes one axis at a time, H
then W, an axis whose scale is 1 with an unchanged size skipped; along an axis, output k is
`v[i0] * c0 + v[i1] * c1` with the two source indices clamped into the input (edge
padding) and c = (1 - ratio, ratio) from the coordinate transformation. axis_table()
computes, per output row and column, those indices and float64 coefficients with the
same numpy operations as the evaluator; the reference and the C kernel
(kernels/common/nn_bilinear.c) then compute the same float64 products and sums in the same
order, so the three agree bit for bit (the kernel compiles with FP contraction off, so no
fused multiply-add changes a rounding). The coefficients travel in the layer's code as
exact hexadecimal double literals (the layer spec), the indices in the `index` section.
"""
from __future__ import annotations

import math

import numpy as np

from ..opkit import onnx_operands as X
from ..opkit.onnx_attrs import attributes
from ..opkit.opgraph import Op
from ..opkit.opdef import OpDef
from ._common import dequantized, n_out, scale_f64

MODES = ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric")


def convert(w, name, node, ins, out):
    """Resize (opset 10: X, scales; 11+: X, roi, scales, sizes) in mode linear."""
    a = attributes(node)
    mode = X.text(a.get("coordinate_transformation_mode", "half_pixel"))
    if mode not in MODES:
        raise w.fail(name, node, f"coordinate_transformation_mode {mode!r} is not supported with "
                                 f"mode 'linear'; supported: {', '.join(MODES)}")
    if w.f.opset < 11:
        mode = "asymmetric"      # Resize-10 has no attribute: its linear mode is asymmetric
    for attr, ok in (("antialias", 0), ("exclude_outside", 0)):
        if int(a.get(attr, ok)) != ok:
            raise w.fail(name, node, f"{attr}={int(a[attr])} is not supported with mode 'linear'")
    if X.text(a.get("keep_aspect_ratio_policy", "stretch")) != "stretch":
        raise w.fail(name, node, "keep_aspect_ratio_policy other than 'stretch' is not supported")
    if "axes" in a:
        raise w.fail(name, node, "the axes attribute is not supported; give scales or sizes for "
                                 "all four axes (N, C, H, W)")
    pos_scales, pos_sizes = (1, None) if w.f.opset < 11 else (2, 3)
    scales = sizes = None
    if pos_scales < len(ins) and ins[pos_scales]:
        scales = np.asarray(w.const(ins[pos_scales], name, node, "scales"), dtype=np.float32)
    if pos_sizes is not None and pos_sizes < len(ins) and ins[pos_sizes]:
        sizes = np.asarray(w.const(ins[pos_sizes], name, node, "sizes"), dtype=np.int64)
    if scales is not None and scales.size == 0:
        scales = None
    if (scales is None) == (sizes is None):
        raise w.fail(name, node, "exactly one of the scales and sizes inputs must be given")
    given = scales if scales is not None else sizes
    if given.size != 4:
        raise w.fail(name, node, f"{'scales' if scales is not None else 'sizes'} has "
                                 f"{given.size} values; 4 (N, C, H, W) are expected")
    return Op(name, "bilinear", [X.activation(w, name, node, ins[0])], out, node.op_type,
              attrs={"coord": mode,
                     "scales": None if scales is None else tuple(float(s) for s in scales),
                     "sizes": None if sizes is None else tuple(int(s) for s in sizes)})


def shape(g, op, ins):
    x = tuple(ins[0])
    if len(x) != 4 or x[0] != 1:
        raise g.fail(op, f"linear Resize needs a (1, C, H, W) input, got {x}")
    a = op.attrs
    if a["scales"] is not None:
        if a["scales"][:2] != (1.0, 1.0):
            raise g.fail(op, f"scales {list(a['scales'])}: only H and W may be resized (N and C "
                             f"scales must be 1)")
        if min(a["scales"][2:]) <= 0:
            raise g.fail(op, f"scales {list(a['scales'])} must be positive")
        out = tuple(int(v) for v in (np.array(a["scales"], np.float64) * np.array(x)).astype(int))
    else:
        out = a["sizes"]
        if tuple(out[:2]) != x[:2]:
            raise g.fail(op, f"sizes {list(out)}: only H and W may be resized (N and C must "
                             f"stay {list(x[:2])})")
    if min(out[2:]) < 1:
        raise g.fail(op, f"the output size {list(out)} is empty")
    a["in_hw"], a["out_hw"] = x[2:], tuple(out[2:])
    return (1, x[1]) + tuple(out[2:])


def axis_scale(attrs, k: int) -> float:
    """The evaluator's scale factor of spatial axis k (0: H, 1: W), float64."""
    if attrs["scales"] is not None:
        return float(np.float64(np.float32(attrs["scales"][2 + k])))
    return attrs["out_hw"][k] / attrs["in_hw"][k]


def axis_table(mode: str, in_size: int, out_size: int, scale: float):
    """(indices int64 (out, 2), coefficients float64 (out, 2)), or None when the evaluator
    skips the axis (scale close to 1, size unchanged). The numpy operations of onnx's
    reference Resize (_compute_x_ori, _linear_coeffs, the neighbour window), in its order."""
    if math.isclose(scale, 1.0) and out_size == in_size:
        return None
    y = np.arange(out_size, dtype=np.float64)
    width = scale * in_size
    if mode == "align_corners":
        x = np.zeros(out_size) if width == 1 else y * (in_size - 1) / (width - 1)
    elif mode == "asymmetric":
        x = y / scale
    elif mode == "pytorch_half_pixel":
        x = np.full(out_size, -0.5) if width == 1 else (y + 0.5) / scale - 0.5
    else:
        x = (y + 0.5) / scale - 0.5
    x_int = np.floor(x).astype(np.int64)
    ratio = np.where(x == x_int, 1.0, x - x_int)
    coeffs = np.stack([1 - ratio, ratio], axis=1)
    xp = x + 1
    p = np.floor(xp).astype(np.int64)
    start = p + np.where(xp - p == 0, -1, 0)
    idx = np.clip(start[:, None] + np.arange(2)[None, :] - 1, 0, in_size - 1)
    return idx, coeffs


def tables(layer):
    a = layer.attrs
    return [axis_table(a["coord"], a["in_hw"][k], a["out_hw"][k], axis_scale(a, k)) for k in (0, 1)]


def reference(layer, graph, inputs):
    (x,) = inputs
    qo = graph.tensor(layer.output).q
    v = dequantized(graph, layer.inputs[0], x)
    rows, cols = tables(layer)
    if rows is not None:
        idx, c = rows
        v = v[:, :, idx[:, 0], :] * c[None, None, :, 0, None] + v[:, :, idx[:, 1], :] * c[None, None, :, 1, None]
    if cols is not None:
        idx, c = cols
        v = v[:, :, :, idx[:, 0]] * c[:, 0] + v[:, :, :, idx[:, 1]] * c[:, 1]
    q = np.rint(v / scale_f64(qo)) + qo.zero_point
    return np.clip(q, layer.act_min, layer.act_max).astype(np.int8)


def params(layer, graph):
    """index: int32 [i0, i1] per output row (when H is resized), then per output column."""
    parts = [t[0].reshape(-1) for t in tables(layer) if t is not None]
    return {"index": np.concatenate(parts).astype(np.int32)}


def counts(layer, graph):
    return {"index": sum(2 * n for n, t in zip(layer.attrs["out_hw"], tables(layer)) if t is not None)}


def spec(layer, graph):
    """What the generated code needs beyond the shapes: the coefficients as exact hex
    literals, which axes are resized, the scales and zero points (float64 hex)."""
    qi, qo = graph.tensor(layer.inputs[0]).q, graph.tensor(layer.output).q
    rows, cols = tables(layer)
    lit = lambda t: [float(c).hex() for c in t[1].reshape(-1)] if t is not None else []  # noqa: E731
    return {"resize_h": rows is not None, "resize_w": cols is not None,
            "row_coeffs": lit(rows), "col_coeffs": lit(cols),
            "in_scale": float(scale_f64(qi)).hex(), "out_scale": float(scale_f64(qo)).hex()}


def export(w, layer, ins, core_out):
    a = layer.attrs
    if a["scales"] is not None:
        scales = w.const(f"{layer.name}_scales", np.array(a["scales"], dtype=np.float32))
        inputs = [ins[0], "", scales]
    else:
        sizes = w.const(f"{layer.name}_sizes", np.array(a["sizes"], dtype=np.int64))
        inputs = [ins[0], "", "", sizes]
    w.node("Resize", inputs, [core_out], layer.name, exact_name=True, mode="linear",
           coordinate_transformation_mode=a["coord"])


OPS = [OpDef("bilinear", attrs=("coord", "scales", "sizes", "in_hw", "out_hw"), shape=shape,
             reference=reference, requant=params, counts=counts,
             macs=lambda layer, graph: 4 * n_out(layer, graph), export=export,
             range_preserving=True, calib_inherit=True,
             doc="coord scales sizes in_hw out_hw  (ONNX Resize linear in float64: index = the "
                 "two source rows/columns per output row/column, coefficients in the code)")]
