"""div: the quotient of two activations (ONNX Div), the divisor or the dividend broadcast
(same shape, per channel or one value, as ops.mul), with QDQ semantics: both operands
dequantized in float64, divided, quantized (round half to even). Division by zero follows
onnxruntime and the float64 oracle: +-inf saturates to the clamp, 0/0 (NaN) gives -128.

The reference and the C kernel (kernels/common/nn_div.c) compute the same three IEEE
double operations per element ((a - za) * sa, (b - zb) * sb, their quotient, divided by
the output scale), so they are bit-exact with each other and with the float64 oracle.
On a CPU target a 256 x 256 table would be the alternative; the division costs less than
the 64 KB such a table takes in GAP9's L1. Div by a constant is a table (ops.lut)."""
from __future__ import annotations

import numpy as np

from ..opkit import onnx_operands as X
from ..opkit.opgraph import Op
from ..opkit.opdef import OpDef
from ._broadcast import broadcast_mode, expand
from ._common import dequantized, n_out, scale_f64

NAN_CODE = -128    # QuantizeLinear of NaN: onnxruntime's minimum code (uint8 0 = int8 -128)


def convert(w, name, node, ins, out):
    """Div of two activations (the const cases are lut tables: ops.mul.convert)."""
    from ._broadcast import expand_operands
    moves, ins = expand_operands(w, name, node, ins, out)
    return moves + [Op(name, "div", [X.activation(w, name, node, t) for t in ins], out, node.op_type)]


def shape(g, op, ins):
    """The full-size operand first, as ops.mul; `swap` 1 when that is the divisor."""
    first = op.inputs[0]
    out = broadcast_mode(g, op, ins)
    op.attrs["swap"] = int(op.inputs[0] != first)
    return out


def reference(layer, graph, inputs):
    a, b = inputs
    va = dequantized(graph, layer.inputs[0], a)
    vb = dequantized(graph, layer.inputs[1], expand(layer, graph, b))
    with np.errstate(all="ignore"):
        y = (vb / va if layer.attrs["swap"] else va / vb) / scale_f64(graph.tensor(layer.output).q)
    qo = graph.tensor(layer.output).q
    q = np.clip(np.rint(np.nan_to_num(y, nan=0.0, posinf=1e9, neginf=-1e9)) + qo.zero_point,
                layer.act_min, layer.act_max)
    return np.where(np.isnan(y), NAN_CODE, q).astype(np.int8)


def spec(layer, graph):
    """The scales as exact hexadecimal double literals, the broadcast and the order."""
    s = [float(scale_f64(graph.tensor(t).q)).hex() for t in list(layer.inputs) + [layer.output]]
    return {"mode": layer.attrs["mode"], "swap": layer.attrs["swap"], "a_scale": s[0],
            "b_scale": s[1], "out_scale": s[2], "nan_code": NAN_CODE}


def export(w, layer, ins, core_out):
    w.node("Div", ins[::-1] if layer.attrs["swap"] else ins, [core_out], layer.name,
           exact_name=True)


OPS = [OpDef("div", attrs=("mode", "swap"), shape=shape, reference=reference, macs=n_out,
             export=export,
             doc="mode swap  (a / b in float64, QDQ; mode: how the second input broadcasts as "
                 "in mul, swap 1: the second input is the dividend)")]
