"""conv2d: ONNX Conv (2-D), int8 weights per output channel, int32 bias, fused clamp."""
from __future__ import annotations

import numpy as np

from .. import numerics
from ..frontends import onnx_ops as X
from ..frontends.onnx_file import attributes
from ..passes.opgraph import Op
from ..passes.shapes import need_rank, spatial
from ..reference import conv as ref
from . import OpDef
from ._common import n_out, pair


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
    """mult[o], shift[o] for m[o] = s_in * s_w[o] / s_out."""
    s_in = graph.tensor(layer.inputs[0]).q.scale
    s_out = graph.tensor(layer.output).q.scale
    return pair([numerics.quantize_multiplier(s_in * float(sw) / s_out)
                 for sw in layer.weight_scale])


def weighted_counts(layer, graph) -> dict:
    n = int(layer.weight.shape[0])
    return {"mult": n, "shift": n}


def export(w, layer, ins, core_out):
    a = layer.attrs
    w.node("Conv", ins + w.weights(layer), [core_out], layer.name, exact_name=True,
           kernel_shape=list(a["kernel"]), strides=list(a["stride"]), pads=list(a["pads"]),
           dilations=list(a["dilation"]), group=a["groups"])


OPS = [OpDef(
    "conv2d", onnx={"Conv": convert},
    attrs=("kernel", "stride", "dilation", "pads", "groups"),
    shape=shape, reference=ref.conv2d, requant=weighted_requant, counts=weighted_counts,
    macs=lambda layer, graph: n_out(layer, graph) * int(np.prod(layer.weight.shape[1:])),
    export=export, weighted=True, fusable=True,
    doc="kernel stride dilation pads (top,left,bottom,right) groups")]
