"""softmax: ONNX Softmax and TFLite SOFTMAX over the last axis of a (1, F) tensor (a
classifier's tail).

Integer semantics: d_i = max(q) - q_i in [0, 255]; E[d] = round(2**16 * exp(-d * s_in))
(a 256-entry int32 table computed at build time, Layer.bias); S = sum E[d_i];
out_i = clamp(zp_out + round(E[d_i] * M / (S * 2**s))) with (M, s) for 1 / s_out, rounding
half to even exactly (numerics.div_round / nn_div_round). Within 1 LSB of the QDQ graph.

Under TFLite's rule its reference kernel's fixed-point recipe (gemmlowp): E[d] = exp(-d)
in Q0.31 from the scaled difference (the table, -1 where d is below diff_min), the sum of
E / 2**12, its reciprocal by Newton-Raphson, out = RDBPOT(SRDHM(recip, E), 23 + bits) - 128
(kernels/common/nn_softmax.c; mult 0 and a negative shift mark the rule).
"""
from __future__ import annotations

import numpy as np

from .. import numerics
from ..frontends import onnx_ops as X
from ..frontends import onnx_qoperator
from ..frontends.onnx_file import attributes
from ..passes.opgraph import Op
from . import OpDef
from ._common import n_out, pair, zp

ONE = 1 << 16


def convert(w, name, node, ins, out):
    axis = int(attributes(node).get("axis", -1 if w.f.opset >= 13 else 1))
    return Op(name, "softmax", [X.activation(w, name, node, ins[0])], out, node.op_type,
              attrs={"axis": axis})


def tfl_softmax(w, op):
    """SOFTMAX over the last axis of a tensor whose other axes are 1 ((1, F), (1, 1, 1, F),
    ...): relayouts to (1, F) and back around it where the IR's view differs."""
    x, out = w.act(op, 0), w.out(op)
    shape = tuple(w.input_tensor(op, 0).shape)
    if not shape or int(np.prod(shape[:-1])) != 1:
        raise w.fail(op, f"SOFTMAX of a {list(shape)} tensor is not supported; only over the "
                         f"last axis of one row (a classifier's output)")
    q = w.qparams[out]
    if abs(q.scale * 256 - 1) > 1e-3 or q.zero_point != -128:
        raise w.fail(op, f"output quantization {q} is not TFLite's int8 softmax output "
                         f"(scale 1/256, zero point -128)")
    flat = (1, shape[-1])
    ops = []
    if shape != flat:
        row = w.fresh(f"{x}_row")
        w.qparams[row] = w.qparams[x]
        ops.append(w.relayout(op, x, shape, flat, row, name=f"{op.label}_row"))
        x = row
    core = out if shape == flat else w.fresh(f"{out}_row")
    w.qparams[core] = q
    ops.append(Op(op.label, "softmax", [x], core, op.code,
                  attrs={"axis": 1, "beta": float(op.options.get("beta", 1.0))}))
    if core != out:
        ops.append(w.relayout(op, core, flat, shape, out, name=f"{op.label}_dims"))
    return ops


def _tflite_params(layer_or_op, s_in):
    from ..reference.tflite_math import softmax_params
    return softmax_params(s_in, layer_or_op.attrs.get("beta", 1.0))


def tflite_exp_table(s_in: float, beta: float) -> np.ndarray:
    """E[d] for d = max - q in 0..255 (Q0.31 exp of the scaled difference), -1 below diff_min."""
    from ..reference import tflite_math as T
    p = T.softmax_params(s_in, beta)
    diff = -np.arange(256, dtype=np.int64)
    e = T.exp_on_negative_values(T.mbqm_greater_than_one(diff, p.input_multiplier,
                                                         p.input_left_shift), 5)
    return np.where(diff >= p.diff_min, e, -1).astype(np.int32)


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
    if g.numerics == "tflite":
        layer.bias = tflite_exp_table(s_in, op.attrs.get("beta", 1.0))
        return
    layer.bias = np.rint(ONE * np.exp(-np.arange(256) * np.float64(s_in))).astype(np.int32)


def requant(layer, graph):
    if numerics.graph_rule(graph) == "tflite":     # the fixed-point recipe, no multiplier
        return pair([(0, -numerics.TFLITE_SHIFT_BIAS)])
    return pair([numerics.quantize_multiplier(1.0 / graph.tensor(layer.output).q.scale)])


def reference(layer, graph, inputs):
    (x,) = inputs
    if numerics.graph_rule(graph) == "tflite":
        from ..reference import tflite_math as T
        p = T.softmax_params(graph.tensor(layer.inputs[0]).q.scale, layer.attrs.get("beta", 1.0))
        out = T.softmax(x.astype(np.int64), p).astype(np.int64)
        return np.clip(out, layer.act_min, layer.act_max).astype(np.int8)
    q = x.astype(np.int64)
    e = layer.bias.astype(np.int64)[q.max(axis=-1, keepdims=True) - q]
    s = e.sum(axis=-1, keepdims=True)
    p = requant(layer, graph)
    v = numerics.div_round(e * np.int64(p["mult"][0]), s, int(p["shift"][0]))
    return np.clip(v + zp(graph, layer.output), layer.act_min, layer.act_max).astype(np.int8)


def export(w, layer, ins, core_out):
    w.node("Softmax", ins, [core_out], layer.name, exact_name=True, axis=-1)


OPS = [OpDef("softmax", onnx={"Softmax": convert}, tflite={"SOFTMAX": tfl_softmax},
             attrs=("axis", "beta"), shape=shape,
             reference=reference, lower=lower, requant=requant,
             counts=lambda layer, graph: {"mult": 1, "shift": 1}, macs=n_out, export=export,
             doc="axis=1  (last axis of (1, F); bias: the exp table int32[256])")]

# onnxruntime's QOperator form of the same op (frontends/onnx_qoperator.py)
CONVERTERS = onnx_qoperator.converters("QLinearSoftmax")
