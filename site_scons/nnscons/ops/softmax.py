"""softmax: ONNX Softmax over the last axis of a (1, F) tensor (a classifier's tail).

Integer semantics: d_i = max(q) - q_i in [0, 255]; E[d] = round(2**16 * exp(-d * s_in))
(a 256-entry int32 table computed at build time, Layer.bias); S = sum E[d_i];
out_i = clamp(zp_out + round(E[d_i] * M / (S * 2**s))) with (M, s) for 1 / s_out, rounding
half to even exactly (numerics.div_round / nn_div_round). Within 1 LSB of the QDQ graph.
"""
from __future__ import annotations

import numpy as np

from .. import numerics
from ..frontends import onnx_ops as X
from ..frontends.onnx_file import attributes
from ..passes.opgraph import Op
from . import OpDef
from ._common import n_out, pair, zp

ONE = 1 << 16


def convert(w, name, node, ins, out):
    axis = int(attributes(node).get("axis", -1 if w.f.opset >= 13 else 1))
    return Op(name, "softmax", [X.activation(w, name, node, ins[0])], out, node.op_type,
              attrs={"axis": axis})


def shape(g, op, ins):
    x = ins[0]
    if len(x) != 2 or op.attrs["axis"] % 2 != 1:
        raise g.fail(op, f"Softmax over axis {op.attrs['axis']} of a {len(x)}-D tensor {x} is "
                         f"not supported; only the last axis of a (1, F) tensor (Flatten first)")
    if x[1] * ONE >= 2**31:
        raise g.fail(op, f"{x[1]} classes are too many (at most {2**31 // ONE - 1})")
    op.attrs["axis"] = 1
    return x


def lower(g, op, layer):
    s_in = g.qparams[op.inputs[0]].scale
    layer.bias = np.rint(ONE * np.exp(-np.arange(256) * np.float64(s_in))).astype(np.int32)


def requant(layer, graph):
    return pair([numerics.quantize_multiplier(1.0 / graph.tensor(layer.output).q.scale)])


def reference(layer, graph, inputs):
    (x,) = inputs
    q = x.astype(np.int64)
    e = layer.bias.astype(np.int64)[q.max(axis=-1, keepdims=True) - q]
    s = e.sum(axis=-1, keepdims=True)
    p = requant(layer, graph)
    v = numerics.div_round(e * np.int64(p["mult"][0]), s, int(p["shift"][0]))
    return np.clip(v + zp(graph, layer.output), layer.act_min, layer.act_max).astype(np.int8)


def export(w, layer, ins, core_out):
    w.node("Softmax", ins, [core_out], layer.name, exact_name=True, axis=-1)


OPS = [OpDef("softmax", onnx={"Softmax": convert}, attrs=("axis",), shape=shape,
             reference=reference, lower=lower, requant=requant,
             counts=lambda layer, graph: {"mult": 1, "shift": 1}, macs=n_out, export=export,
             doc="axis=1  (last axis of (1, F); bias: the exp table int32[256])")]
