"""maxpool, avgpool (ONNX MaxPool/AveragePool, 2-D) and global_avgpool (GlobalAveragePool)."""
from __future__ import annotations

import numpy as np

from ..opkit import onnx_operands as X
from ..opkit import onnx_qoperator
from ..opkit.onnx_attrs import attributes
from ..opkit.opgraph import Op
from ..opkit.shapes import need_rank, spatial
from ..reference import pool as ref
from ..opkit.opdef import OpDef
from ._common import n_in, n_out, pair, single_counts, single_requant, with_requant


def _pool_attrs(w, name, node):
    a = X.window_1d_as_2d(attributes(node))
    if "kernel_shape" not in a:
        raise w.fail(name, node, "kernel_shape is required")
    attrs = X.window(w, name, node, a, a["kernel_shape"])
    attrs["ceil_mode"] = int(a.get("ceil_mode", 0))
    return a, attrs


def maxpool(w, name, node, ins, out):
    a, attrs = _pool_attrs(w, name, node)
    if a.get("storage_order", 0):
        raise w.fail(name, node, "storage_order=1 is not supported")
    return Op(name, "maxpool", [X.activation(w, name, node, ins[0])], out, node.op_type,
              attrs=attrs)


def avgpool(w, name, node, ins, out):
    a, attrs = _pool_attrs(w, name, node)
    attrs["count_include_pad"] = int(a.get("count_include_pad", 0))
    if attrs["ceil_mode"] and attrs["count_include_pad"]:
        raise w.fail(name, node, "ceil_mode=1 together with count_include_pad=1 is not "
                                 "supported; use one of them")
    return Op(name, "avgpool", [X.activation(w, name, node, ins[0])], out, node.op_type,
              attrs=attrs)


def global_avgpool(w, name, node, ins, out):
    return Op(name, "global_avgpool", [X.activation(w, name, node, ins[0])], out,
              node.op_type)


def tfl_pool(w, op):
    """AVERAGE_POOL_2D / MAX_POOL_2D: TFLite averages only the window's pixels inside the
    image and keeps the input's quantization (its kernels require equal parameters)."""
    from ..opkit import tflite_ops as T
    o = op.options
    kind = "avgpool" if op.code == "AVERAGE_POOL_2D" else "maxpool"
    attrs = T.window(w, op, T.in_hw(w, op), (int(o["filter_height"]), int(o["filter_width"])),
                     (int(o.get("stride_h", 1)), int(o.get("stride_w", 1))), (1, 1))
    attrs.pop("dilation")
    attrs["ceil_mode"] = 0
    if kind == "avgpool":
        attrs["count_include_pad"] = 0
    x = w.act(op, 0)
    out = w.out(op)
    if w.qparams[x] != w.qparams[out]:
        raise w.fail(op, f"input and output quantization differ ({w.qparams[x]} and "
                         f"{w.qparams[out]}); TFLite's int8 pooling requires them equal")
    return Op(op.label, kind, [x], out, op.code, attrs=attrs, act_range=w.act_range(op))


def pool_requant(layer, graph) -> dict:
    """The ONNX rule: (M, s) for s_in / s_out.  TFLite's: its pooling averages the codes
    (mult 0: the raw average, no requantization); its MEAN (attrs mean=1) folds 1/N into
    the multiplier (reference.tflite_math.mean_params) and requantizes the centred sum."""
    from .. import numerics
    if numerics.graph_rule(graph) != "tflite":
        return single_requant(layer, graph)
    if layer.op == "maxpool":    # the codes unchanged (MBQM by exactly 1)
        return pair([numerics.tflite_pair(1.0)])
    if not layer.attrs.get("mean"):
        return pair([(0, -numerics.TFLITE_SHIFT_BIAS)])
    from ..reference.tflite_math import mean_params
    shape = graph.tensor(layer.inputs[0]).shape
    p = mean_params(graph.tensor(layer.inputs[0]).q.scale, graph.tensor(layer.output).q.scale,
                    int(shape[2] * shape[3]))
    return pair([(p.multiplier, p.shift - numerics.TFLITE_SHIFT_BIAS)])


def shape(g, op, ins):
    need_rank(g, op, ins[0], 4, "N,C,H,W")
    if op.attrs.get("global"):   # GlobalMaxPool: the window is the whole map
        op.attrs["kernel"] = tuple(ins[0][2:])
    dilation = tuple(op.attrs.setdefault("dilation", (1, 1)))
    if (op.kind == "avgpool" and tuple(op.attrs["kernel"]) == tuple(ins[0][2:])
            and not any(op.attrs["pads"]) and dilation == (1, 1)):
        # a window covering the whole map is a global pool (tiled over channels)
        op.kind, op.attrs = "global_avgpool", {}
        return (1, ins[0][1], 1, 1)
    return (1, ins[0][1]) + spatial(g, op, ins[0], dilation, ceil_mode=op.attrs["ceil_mode"])


def global_shape(g, op, ins):
    need_rank(g, op, ins[0], 4, "N,C,H,W")
    if not op.attrs.get("keepdims", 1):
        return (1, ins[0][1])
    return (1, ins[0][1], 1, 1)


def check(layer, graph):
    """The one pooling combination no kernel implements."""
    if layer.attrs.get("ceil_mode") and layer.attrs.get("count_include_pad"):
        return "AveragePool with ceil_mode=1 and count_include_pad=1 is not supported"
    return None


def window_macs(layer, graph):
    kh, kw = layer.attrs["kernel"]
    return n_out(layer, graph) * kh * kw


def export_pool(op_type):
    def export(w, layer, ins, core_out):
        a = layer.attrs
        extra = ({"count_include_pad": a["count_include_pad"]}
                 if "count_include_pad" in a else {})
        if tuple(a.get("dilation", (1, 1))) != (1, 1):
            extra["dilations"] = list(a["dilation"])
            if op_type == "AveragePool":   # AveragePool has dilations from opset 19
                w.opset = max(w.opset, 19)
        w.node(op_type, ins, [core_out], layer.name, exact_name=True,
               kernel_shape=list(a["kernel"]), strides=list(a["stride"]), pads=list(a["pads"]),
               ceil_mode=a["ceil_mode"], **extra)
    return export


def export_global(w, layer, ins, core_out):
    if layer.attrs.get("keepdims", 1):
        w.node("GlobalAveragePool", ins, [core_out], layer.name, exact_name=True)
        return
    w.node("ReduceMean", ins, [core_out], layer.name, exact_name=True, axes=[2, 3], keepdims=0)


OPS = [
    OpDef("maxpool", onnx={"MaxPool": maxpool}, tflite={"MAX_POOL_2D": tfl_pool}, attrs=("kernel", "stride", "pads", "dilation", "ceil_mode"),
          shape=shape, reference=with_requant(ref.maxpool, pool_requant), requant=pool_requant, counts=single_counts,
          macs=window_macs, export=export_pool("MaxPool"), range_preserving=True, window=True,
          calib_inherit=True, selects=True, doc="kernel stride pads (top,left,bottom,right) dilation ceil_mode"),
    OpDef("avgpool", onnx={"AveragePool": avgpool}, tflite={"AVERAGE_POOL_2D": tfl_pool},
          attrs=("kernel", "stride", "pads", "dilation", "ceil_mode", "count_include_pad"),
          shape=shape, reference=with_requant(ref.avgpool, pool_requant), requant=pool_requant, counts=single_counts,
          macs=window_macs, export=export_pool("AveragePool"), check=check, window=True,
          range_preserving=True, doc="kernel stride pads dilation ceil_mode count_include_pad (0/1)"),
    OpDef("global_avgpool", onnx={"GlobalAveragePool": global_avgpool}, attrs=("keepdims", "mean"),
          shape=global_shape,
          reference=with_requant(ref.global_avgpool, pool_requant), requant=pool_requant, counts=single_counts,
          macs=n_in, export=export_global, range_preserving=True,
          doc="keepdims mean (TFLite's MEAN: its own requantization)"),
]

# onnxruntime's QOperator form of the same op (opkit/onnx_qoperator.py)
CONVERTERS = onnx_qoperator.converters("QLinearAveragePool", "QLinearGlobalAveragePool")
