"""conv2d: ONNX Conv (2-D), int8 weights per output channel, int32 bias, fused clamp."""
from __future__ import annotations

import numpy as np

from .. import numerics
from ..opkit import onnx_operands as X
from ..opkit import onnx_qoperator
from ..opkit.onnx_attrs import attributes
from ..opkit.opgraph import Op
from ..opkit.shapes import need_rank, spatial
from ..reference import conv as ref
from ..opkit.opdef import OpDef
from ._common import n_out, pair, with_requant


def convert(w, name, node, ins, out):
    a = X.window_1d_as_2d(attributes(node))
    weight, wq = X.weight(w, name, node, ins[1] if len(ins) > 1 else "", 0, 4)
    if "kernel_shape" in a and tuple(a["kernel_shape"]) != weight.shape[2:]:
        raise w.fail(name, node, f"kernel_shape {a['kernel_shape']} does not match the weight "
                                 f"{weight.shape}")
    attrs = X.window(w, name, node, a, weight.shape[2:])
    attrs["groups"] = int(a.get("group", 1))
    bias, bq = X.bias(w, name, node, ins[2] if len(ins) > 2 else "", weight.shape[0])
    return Op(name, "conv2d", [X.activation(w, name, node, ins[0])], out, node.op_type,
              attrs=attrs, weight=weight, bias=bias, weight_q=wq, bias_q=bq)


def _tfl_conv(w, op, weight_q, scale, groups, kernel):
    from ..opkit import tflite_ops as T
    x = w.act(op, 0)
    o = op.options
    attrs = T.window(w, op, T.in_hw(w, op), kernel,
                     (int(o.get("stride_h", 1)), int(o.get("stride_w", 1))),
                     (int(o.get("dilation_h_factor", 1)), int(o.get("dilation_w_factor", 1))))
    attrs["groups"] = groups
    s_in = w.qparams[x].scale
    bias, bq = T.bias(w, op, 2, weight_q.shape[0], s_in, scale)
    real = weight_q.astype(np.float64) * scale.reshape(-1, 1, 1, 1)
    return Op(op.label, "conv2d", [x], w.out(op), op.code, attrs=attrs, weight=real,
              bias=bias, weight_q=(weight_q, scale), bias_q=bq, act_range=w.act_range(op))


def tfl_conv(w, op):
    """CONV_2D: weights (O, KH, KW, I) -> (O, I, KH, KW); I < the input's channels is a
    grouped convolution."""
    from ..opkit import tflite_ops as T
    wt = w.input_tensor(op, 1, "weights")
    if len(wt.shape) != 4:
        raise w.fail(op, f"weights have shape {list(wt.shape)}; (O, KH, KW, I) expected")
    q, scale = T.weights(w, op, 1, wt.shape[0], 0)
    c_in = w.input_tensor(op, 0).shape[-1]
    if c_in % wt.shape[3]:
        raise w.fail(op, f"weights with {wt.shape[3]} input channels do not divide the "
                         f"input's {c_in}")
    return _tfl_conv(w, op, q.transpose(0, 3, 1, 2), scale, c_in // wt.shape[3], wt.shape[1:3])


def tfl_depthwise(w, op):
    """DEPTHWISE_CONV_2D: weights (1, KH, KW, C*M) -> (C*M, 1, KH, KW), groups C; output
    channel c*M + m reads input channel c, as ONNX's grouping does.  Per-channel scales
    along axis 3 (or 0, as old converters wrote them)."""
    from ..opkit import tflite_ops as T
    wt = w.input_tensor(op, 1, "weights")
    if len(wt.shape) != 4 or wt.shape[0] != 1:
        raise w.fail(op, f"weights have shape {list(wt.shape)}; (1, KH, KW, C*M) expected")
    n = wt.shape[3]
    c_in = w.input_tensor(op, 0).shape[-1]
    if n % c_in:
        raise w.fail(op, f"{n} output channels are not a multiple of the input's {c_in}")
    axis = 0 if (wt.scale is not None and wt.scale.size == n and n > 1
                 and wt.quantized_dimension == 0) else 3
    q, scale = T.weights(w, op, 1, n, axis)
    return _tfl_conv(w, op, q[0].transpose(2, 0, 1)[:, None], scale, c_in, wt.shape[1:3])


def shape(g, op, ins):
    x = ins[0]
    need_rank(g, op, x, 4, "N,C,H,W")
    o, i_per_group = op.weight.shape[:2]
    groups = op.attrs["groups"]
    if x[1] != i_per_group * groups or o % groups:
        raise g.fail(op, f"weight {op.weight.shape} with group={groups} does not match "
                         f"input channels {x[1]}")
    return (1, o) + spatial(g, op, x, op.attrs["dilation"])


def weighted_requant(layer, graph) -> dict:
    """mult[o], shift[o] for m[o] = s_in * s_w[o] / s_out (in double, as TFLite's Prepare
    does); a TFLite FULLY_CONNECTED (attrs requant "f64") keeps m[o] as a double."""
    s_in = graph.tensor(layer.inputs[0]).q.scale
    s_out = graph.tensor(layer.output).q.scale
    rule = numerics.tflite_f64_pair if layer.attrs.get("requant") == "f64" else \
        (lambda m: numerics.rule_pair(graph, m))
    return pair([rule(s_in * float(sw) / s_out) for sw in layer.weight_scale])


def weighted_counts(layer, graph) -> dict:
    n = int(layer.weight.shape[0])
    return {"mult": n, "shift": n}


def export(w, layer, ins, core_out):
    a = layer.attrs
    w.node("Conv", ins + w.weights(layer), [core_out], layer.name, exact_name=True,
           kernel_shape=list(a["kernel"]), strides=list(a["stride"]), pads=list(a["pads"]),
           dilations=list(a["dilation"]), group=a["groups"])


def hwc_params(layer, graph, op_def) -> dict:
    """Weights OIHW -> OHWI: each output channel's taps in the order of HWC activations."""
    return {"weight": np.ascontiguousarray(layer.weight.transpose(0, 2, 3, 1))}


OPS = [OpDef(
    "conv2d", onnx={"Conv": convert},
    tflite={"CONV_2D": tfl_conv, "DEPTHWISE_CONV_2D": tfl_depthwise},
    attrs=("kernel", "stride", "dilation", "pads", "groups", "requant"),
    shape=shape, reference=with_requant(ref.conv2d, weighted_requant), requant=weighted_requant, counts=weighted_counts,
    macs=lambda layer, graph: n_out(layer, graph) * int(np.prod(layer.weight.shape[1:])),
    export=export, weighted=True, fusable=True, window=True,
    dense=lambda layer: layer.attrs.get("groups", 1) == 1, hwc_params=hwc_params,
    doc="kernel stride dilation pads (top,left,bottom,right) groups "
        "requant (optional: f64, TFLite FULLY_CONNECTED's double-precision rule)")]

# onnxruntime's QOperator form of the same op (opkit/onnx_qoperator.py)
CONVERTERS = onnx_qoperator.converters("QLinearConv")
