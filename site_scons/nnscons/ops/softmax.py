"""softmax: ONNX Softmax and TFLite SOFTMAX over the last axis of a (1, F) tensor (a
classifier's tail), over the channels of a (1, C, H, W) map (ONNX axis 1 from opset 13: in
the HWC layout of host, gap9, arm64 and cortex-m each pixel's C values are one row), and over
all of a map's C*H*W values (axis 1 below opset 13, where ONNX flattens from the axis on: the
order within the row does not matter). Targets that store channel-first refuse the map forms.

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
from ..opkit import onnx_operands as X
from ..opkit import onnx_qoperator
from ..opkit.onnx_attrs import attributes
from ..opkit.opgraph import Op
from ..opkit.opdef import OpDef
from ._common import n_out, pair, zp

ONE = 1 << 16


def convert(w, name, node, ins, out):
    axis = int(attributes(node).get("axis", -1 if w.f.opset >= 13 else 1))
    # below opset 13 ONNX coerces the input to 2-D at the axis: one row of all later axes
    return Op(name, "softmax", [X.activation(w, name, node, ins[0])], out, node.op_type,
              attrs={"axis": axis, "flatten": int(w.f.opset < 13)})


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
    """Normalizes to axis 1 with `flatten` 1 where the row is the whole of a map (C*H*W)."""
    x = ins[0]
    a, flat = op.attrs["axis"], bool(op.attrs.get("flatten", 0))
    a = a % len(x) if -len(x) <= a < len(x) else a
    if len(x) == 2 and a == 1:
        flat = False                       # one row either way
    elif not (len(x) == 4 and a == 1):
        raise g.fail(op, f"Softmax over axis {op.attrs['axis']} of a {len(x)}-D tensor {tuple(x)} is "
                         f"not supported; only the last axis of a (1, F) tensor or the channels "
                         f"(axis 1) of a (1, C, H, W) map")
    n = int(np.prod(x[1:])) if flat else x[1]
    if n * ONE >= 2**31:
        raise g.fail(op, f"{n} classes are too many (at most {2**31 // ONE - 1})")
    op.attrs["axis"], op.attrs["flatten"] = 1, int(flat)
    return x


def rows(layer, graph) -> tuple:
    """(rows, row length) of the HWC buffer: a map's pixels, each its C channels; or one row."""
    s = tuple(int(d) for d in graph.tensor(layer.inputs[0]).shape)
    n = int(np.prod(s))
    if len(s) == 2 or layer.attrs.get("flatten", 0):
        return 1, n
    return n // s[1], s[1]


def spec(layer, graph):
    r, n = rows(layer, graph)
    return {"rows": r, "row": n}


def channel_first_check(layer, graph):
    """Targets storing CHW (k210's CPU, aie2p's host fallback): one row only."""
    if rows(layer, graph)[0] > 1:
        return (f"Softmax over the channels of a {tuple(graph.tensor(layer.inputs[0]).shape)} map needs "
                f"the channel-last layout (host, gap9, arm64, cortex-m); this target stores channel-first. "
                f"Softmax over a (1, F) tensor (Flatten first) runs here")
    return None


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
    # the row: axis 1 (a classifier's features, a map's channels) or all of a map's values
    q = x.astype(np.int64).reshape(1, -1) if layer.attrs.get("flatten", 0) else x.astype(np.int64)
    e = layer.bias.astype(np.int64)[q.max(axis=1, keepdims=True) - q]
    s = e.sum(axis=1, keepdims=True)
    p = requant(layer, graph)
    v = numerics.div_round(e * np.int64(p["mult"][0]), s, int(p["shift"][0]))
    v = np.clip(v + zp(graph, layer.output), layer.act_min, layer.act_max).astype(np.int8)
    return v.reshape(x.shape)


def export(w, layer, ins, core_out):
    """A Softmax node over axis 1 (opset 13: a (1, F) row or a map's channels); over all of a
    map's values, Reshape to one row and back around it. The integer rule is within 1 LSB of
    it (the exp table): builders/reports/consistency.py accepts that departure at this layer."""
    if not layer.attrs.get("flatten", 0):
        w.node("Softmax", ins, [core_out], layer.name, exact_name=True, axis=1)
        return
    shape = tuple(int(d) for d in w.g.tensor(layer.inputs[0]).shape)
    flat, soft = w.names.fresh(f"{layer.name}_flat"), w.names.fresh(f"{layer.name}_row")
    w.node("Reshape", [ins[0], w.const(f"{layer.name}_flat_shape", np.array([1, int(np.prod(shape))], np.int64))],
           [flat], f"{layer.name}_flatten")
    w.node("Softmax", [flat], [soft], layer.name, exact_name=True, axis=1)
    w.node("Reshape", [soft, w.const(f"{layer.name}_map_shape", np.array(shape, np.int64))], [core_out],
           f"{layer.name}_unflatten")


OPS = [OpDef("softmax", onnx={"Softmax": convert}, tflite={"SOFTMAX": tfl_softmax},
             attrs=("axis", "beta", "flatten"), shape=shape,
             reference=reference, lower=lower, requant=requant,
             counts=lambda layer, graph: {"mult": 1, "shift": 1}, macs=n_out, export=export,
             doc="axis=1  (last axis of (1, F), a map's channels, or with flatten=1 all of a map's "
                 "values; bias: the exp table int32[256])")]

# onnxruntime's QOperator form of the same op (opkit/onnx_qoperator.py)
CONVERTERS = onnx_qoperator.converters("QLinearSoftmax")
