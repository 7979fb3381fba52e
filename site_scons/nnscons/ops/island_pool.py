"""island_avgpool: a global average pool over a float island's values, rounded once.

onnxruntime's QOperator quantizer leaves MobileNetV3's BatchNormalization -> HardSwish in
float and has a GlobalAveragePool read that float tensor while the model rounds it only for
its other readers (OpGraph.unrounded): ONNX averages the unrounded values and quantizes the
mean once. Averaging the island's rounded codes (a lut, then global_avgpool) rounds twice.

Integer semantics: the island's value for each input code and channel, in output LSB with
FRAC fractional bits, is a table T[c, q + 128] = rint(v_c(q) * 2**FRAC / s_out) (int32,
Layer.bias, C or 1 rows of 256); out_c = clamp(zp_out + round(sum_hw T[c, q] / (H*W * 2**FRAC)))
rounded half to even exactly (numerics.div_round). Each table entry is within 2**-(FRAC+1)
LSB of the value, so the mean is too: it departs from the float64 evaluation only where the
exact mean lies that close to a rounding boundary. Host kernel: kernels/common/nn_island_pool.c;
the other targets refuse the layer (no kernel).
"""
from __future__ import annotations

import numpy as np

from .. import numerics
from ..opkit.opdef import OpDef
from ._common import n_in, zp
from .lut import _export_step, _steps, island_values

FRAC = 16


def fold_island_pools(g) -> None:
    """A global_avgpool reading a lut's output unrounded (OpGraph.unrounded) reads the lut's
    input and carries its steps; the lut stays for its other readers (removed when none)."""
    for op in [o for o in g.ops if o.kind == "global_avgpool"]:
        p = g.producer(op.inputs[0])
        if (p is None or p.kind != "lut" or "table" in p.attrs or (op.name, p.output) not in g.unrounded
                or p.output in g.outputs):
            continue
        steps = tuple(_steps(p.attrs))
        lo, hi = p.clamp
        if lo is not None or hi is not None:     # a clamp fused into the lut: a Clip step
            steps += (("Clip", (), tuple((k, (), (float(v),)) for k, v in ((1, lo), (2, hi))
                                          if v is not None), 0),)
        op.kind = "island_avgpool"
        op.attrs = dict(op.attrs, island=steps, tables=p.attrs["tables"])
        op.inputs = list(p.inputs)
        op.source_ops = p.source_ops + op.source_ops
        if not g.consumers(p.output):
            op.fused = [p.name] + p.fused + op.fused
            g.ops.remove(p)


def shape(g, op, ins):
    if len(ins[0]) != 4:
        raise g.fail(op, f"a global average pool over a float island needs a (1, C, H, W) map, got {ins[0]}")
    return (1, ins[0][1], 1, 1) if op.attrs.get("keepdims", 1) else (1, ins[0][1])


def lower(g, op, layer):
    v = island_values(op.attrs["island"], op.attrs["tables"], g.qparams[op.inputs[0]])
    t = np.rint(np.nan_to_num(v / np.float64(g.qparams[op.output].scale), nan=0.0) * 2.0**FRAC)
    n = int(np.prod(g.shapes[op.inputs[0]][2:]))
    if np.abs(t).max() * n >= 2**62:
        raise g.fail(op, "the float island's values are too large for the output scale "
                         f"{g.qparams[op.output].scale} (its sum over {n} pixels overflows 64 bits)")
    if np.abs(t).max() >= 2**31:
        raise g.fail(op, f"the float island's values reach {np.abs(v).max():.4g}, more than 2**15 "
                         f"output steps ({g.qparams[op.output].scale}): the int32 table cannot hold them")
    layer.bias = t.astype(np.int32).reshape(-1)


def reference(layer, graph, inputs):
    (x,) = inputs
    c = x.shape[1]
    t = layer.bias.astype(np.int64).reshape(-1, 256)
    idx = x.astype(np.int64).reshape(c, -1) + 128
    rows = np.arange(c).reshape(c, 1) if t.shape[0] > 1 else np.zeros((c, 1), np.int64)
    s = t[rows, idx].sum(axis=1)
    v = numerics.div_round(s, idx.shape[1], FRAC) + zp(graph, layer.output)
    out = np.clip(v, layer.act_min, layer.act_max).astype(np.int8)
    return out.reshape(graph.tensor(layer.output).shape)


def export(w, layer, ins, core_out):
    """The island's float steps, then GlobalAveragePool: as the model computes it."""
    x = ins[0]
    for k, step in enumerate(layer.attrs["island"]):
        step_out = w.names.fresh(f"{layer.name}_island{k}")
        _export_step(w, f"{layer.name}_island{k}", *step, x, step_out, False)
        x = step_out
    if layer.attrs.get("keepdims", 1):
        w.node("GlobalAveragePool", [x], [core_out], layer.name, exact_name=True)
    else:
        w.node("ReduceMean", [x], [core_out], layer.name, exact_name=True, axes=[2, 3], keepdims=0)


OPS = [OpDef("island_avgpool", attrs=("keepdims", "island", "tables"), shape=shape, lower=lower,
             reference=reference, counts=lambda layer, graph: {}, macs=n_in, export=export,
             doc="keepdims island tables  (global average of a float island's values, rounded "
                 "once; bias: int32 (tables, 256) in output LSB * 2**16)")]
