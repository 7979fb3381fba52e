"""Lower a fully quantized pre-IR graph to nnscons.ir.Graph."""
from __future__ import annotations

from .. import ops
from ..errors import ModelError
from ..ir import Graph, Layer, Tensor
from ..opkit.opgraph import Op, OpGraph, clamp_bounds
from .quantize import bias_int32, symmetric_per_channel, widen_for_bias
from .weight_slots import split_wide_weights


def unique_names(names: list) -> list:
    """First occurrence keeps its name; later duplicates get the first free '_<k>' suffix."""
    taken, seen, out = set(names), set(), []
    for n in names:
        if n in seen:
            k = 1
            while f"{n}_{k}" in taken:
                k += 1
            n = f"{n}_{k}"
            taken.add(n)
        seen.add(n)
        out.append(n)
    return out


def _require_qparams(g: OpGraph) -> None:
    for t in g.inputs:
        if t not in g.qparams:
            raise ModelError(f"{g.source}: the network input {t!r} has no quantization "
                             f"parameters (no QuantizeLinear on it); quantize the model's input "
                             f"or load it as a float model")
    for op in g.ops:
        if op.output not in g.qparams:
            raise g.fail(op, f"its output tensor {op.output!r} has no quantization parameters "
                             f"(no QuantizeLinear/DequantizeLinear pair on it) and is not "
                             f"fused away; re-quantize the model so that this tensor is "
                             f"quantized")


def quantize_weights(g: OpGraph) -> dict:
    """What to_ir quantizes (the real weights of every weighted op the model gives no
    integers for), computed ahead: while onnxruntime creates its calibration session on
    another thread, which no later pass's weights change (prepare ran; passes that change
    weights replace the arrays, and to_ir then quantizes again)."""
    return {id(op): (op.weight, op.weight_factor, symmetric_per_channel(op.weight, op.weight_factor))
            for op in g.ops
            if ops.get(op.kind).weighted and op.weight_q is None and op.weight is not None}


def _weights(op: Op, ahead: dict) -> tuple:
    """(int8 weights, float64 scale[O]) of a weighted op."""
    if op.weight_q is not None:
        return op.weight_q
    weight, factor, quantized = ahead.get(id(op), (None, None, None))
    if weight is op.weight and factor is op.weight_factor and quantized is not None:
        return quantized
    return symmetric_per_channel(op.weight, op.weight_factor)


def _layer(g: OpGraph, op: Op, name: str, ahead: dict) -> Layer:
    out_q = g.qparams[op.output]
    d = ops.get(op.kind)
    attrs = {k: op.attrs[k] for k in d.attrs if k in op.attrs}
    layer = Layer(name=name, op=ops.ir_name(op.kind),
                  inputs=list(op.inputs), output=op.output, attrs=attrs,
                  fused=list(op.fused), source_ops=list(op.source_ops))
    if d.weighted:
        w, s_w = _weights(op, ahead)
        s_in = g.qparams[op.inputs[0]].scale
        if op.weight_q is None:    # our own weights: a dead channel's scale fits its bias
            w, s_w = widen_for_bias(w, s_w, op, s_in)
        layer.weight, layer.weight_scale = w, s_w
        layer.bias = bias_int32(g, op, s_in, s_w)
    layer.act_min, layer.act_max = (op.act_range if op.act_range is not None
                                    else clamp_bounds(*op.clamp, out_q))
    if d.lower:
        d.lower(g, op, layer)
    return layer


def to_ir(g: OpGraph, name: str, quantized: dict | None = None) -> Graph:
    """quantized: quantize_weights(g) made earlier, where the weights are still those."""
    _require_qparams(g)
    split_wide_weights(g)
    names = unique_names([op.name for op in g.ops])
    layers = [_layer(g, op, n, quantized or {}) for op, n in zip(g.ops, names)]
    used = g.inputs + [op.output for op in g.ops]
    tensors = {t: Tensor(t, g.shapes[t], g.qparams[t]) for t in used}
    graph = Graph(name=name, input=g.input, output=g.output, tensors=tensors, layers=layers,
                  extra_inputs=list(g.extra_inputs), extra_outputs=list(g.extra_outputs))
    graph.numerics = g.numerics
    graph.validate(ops.ir_ops())
    return graph
