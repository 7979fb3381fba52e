"""mul: the product of two activations, the second broadcast (same shape, per channel or
one value): acc = (a - za) * (b - zb), requantized with m = sa * sb / s_out.
Mul or Div with a constant operand is a lookup table (ops.lut)."""
from __future__ import annotations

import numpy as np

from .. import numerics
from ..opkit import onnx_operands as X
from ..opkit import onnx_qoperator
from ..opkit.opgraph import Op
from ..opkit.opdef import OpDef
from ._broadcast import broadcast_mode, expand
from ._common import n_out, pair, zp

MODES = ("same", "channel", "scalar")


def convert(w, name, node, ins, out):
    from .lut import const_binary
    op = const_binary(w, name, node, ins, out)
    if op is not None:
        return op
    if node.op_type == "Div":
        from .div import convert as div
        return div(w, name, node, ins, out)
    from ._broadcast import expand_operands
    moves, ins = expand_operands(w, name, node, ins, out)
    return moves + [Op(name, "mul", [X.activation(w, name, node, t) for t in ins], out, node.op_type)]


def tfl_mul(w, op):
    """MUL of two activations, the second the same shape, per channel or one value."""
    if any(w.input_tensor(op, k).is_const for k in (0, 1)):
        from .lut import tfl_const_binary
        return tfl_const_binary(w, op)
    return Op(op.label, "mul", [w.act(op, 0), w.act(op, 1)], w.out(op), op.code,
              act_range=w.act_range(op))


def requant(layer, graph):
    s = [graph.tensor(t).q.scale for t in layer.inputs]
    s_out = graph.tensor(layer.output).q.scale
    if numerics.graph_rule(graph) == "tflite":   # TFLite's MUL computes s1 * s2 / s_out in float32
        from ..reference.tflite_math import mul_params
        M, e = mul_params(s[0], s[1], s_out)
        return pair([(M, e - numerics.TFLITE_SHIFT_BIAS)])
    return pair([numerics.quantize_multiplier(s[0] * s[1] / s_out)])


def reference(layer, graph, inputs):
    a, b = inputs
    p = requant(layer, graph)
    acc = (a.astype(np.int64) - zp(graph, layer.inputs[0])) * \
        (expand(layer, graph, b).astype(np.int64) - zp(graph, layer.inputs[1]))
    return numerics.requantize(acc, p["mult"][0], p["shift"][0], zp(graph, layer.output),
                               layer.act_min, layer.act_max)


def export(w, layer, ins, core_out):
    w.node("Mul", ins, [core_out], layer.name, exact_name=True)


OPS = [OpDef("mul", onnx={"Mul": convert, "Div": convert}, attrs=("mode",),
             tflite={"MUL": tfl_mul},
             shape=broadcast_mode, reference=reference, requant=requant,
             counts=lambda layer, graph: {"mult": 1, "shift": 1}, macs=n_out, export=export,
             fusable=True, doc="mode (same | channel | scalar: how the second input broadcasts)")]

# onnxruntime's QOperator form of the same op (opkit/onnx_qoperator.py)
CONVERTERS = onnx_qoperator.converters("QLinearMul")
