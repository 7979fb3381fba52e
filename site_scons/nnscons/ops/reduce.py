"""reduce: ONNX ReduceMean / ReduceSum / ReduceMax / ReduceMin over any axes of a (1, C, H, W)
or (1, F) tensor (keepdims 0 or 1; axes as an attribute or, from opset 18 / ReduceSum 13,
an input). ReduceMean over the spatial axes (Keras' global pool) stays a global_avgpool
(its tiled kernels), and GlobalMaxPool is a maxpool whose window is the whole map.

Integer semantics, over the n elements of each output's reduced set:
  mean  clamp(zp_out + div_round(sum(x - zp_in) * M, n * 2**s))   (as global_avgpool)
  sum   clamp(zp_out + rshift_round(sum(x - zp_in) * M, s))
  max   clamp(zp_out + rshift_round((max x - zp_in) * M, s))        (min likewise)
with (M, s) for s_in / s_out: the dequantized sum / mean / extreme of the QDQ graph,
requantized once. The kernel (kernels/common/nn_reduce.c) walks the tensor as three dims
in the target's memory order, each reduced or kept.
"""
from __future__ import annotations

import numpy as np

from .. import numerics
from ..opkit import onnx_operands as X
from ..opkit import onnx_qoperator
from ..opkit.onnx_attrs import attributes
from ..opkit.opgraph import Op
from ..opkit.opdef import OpDef
from ._common import n_in, single_counts, single_requant, zp

FNS = {"ReduceMean": "mean", "ReduceSum": "sum", "ReduceMax": "max", "ReduceMin": "min"}
CODES = {"mean": 0, "sum": 1, "max": 2, "min": 3}     # the kernel's fn argument


def _axes(w, name, node, ins):
    a = attributes(node)
    if "axes" in a:
        return [int(v) for v in a["axes"]]
    if len(ins) > 1 and ins[1]:   # an empty axes input means every axis, as no input does
        return [int(v) for v in np.asarray(w.const(ins[1], name, node, "axes")).reshape(-1)] or None
    return None


def reduce(w, name, node, ins, out):
    a = attributes(node)
    axes = _axes(w, name, node, ins)
    keepdims = int(a.get("keepdims", 1))
    if axes is None and int(a.get("noop_with_empty_axes", 0)):
        raise w.fail(name, node, "noop_with_empty_axes=1 without axes (an identity) is not "
                                 "supported; give the axes to reduce")
    x = X.activation(w, name, node, ins[0])
    if w.model_rank(ins[0]) == 3:
        # a 1-D network's (1, C, L) is (1, C, 1, L) in the IR: model axis 2 is the IR's 3,
        # and the inserted H (size 1) is reduced along, so keepdims=0 drops it too
        if axes is not None and any(not -3 <= d < 3 for d in axes):
            raise w.fail(name, node, f"axes {axes} are out of range for a rank-3 input")
        axes = sorted({(0, 1, 3)[d % 3] for d in (range(3) if axes is None else axes)} | {2})
    if node.op_type == "ReduceMean" and axes is not None and sorted(d % 4 for d in axes) == [2, 3]:
        # the spatial mean of a (1, C, H, W) tensor: a global average pool
        return Op(name, "global_avgpool", [x], out, node.op_type, attrs={"keepdims": keepdims})
    return Op(name, "reduce", [x], out, node.op_type,
              attrs={"fn": FNS[node.op_type], "axes": None if axes is None else tuple(axes),
                     "keepdims": keepdims})


def global_maxpool(w, name, node, ins, out):
    return Op(name, "maxpool", [X.activation(w, name, node, ins[0])], out, node.op_type,
              attrs={"kernel": None, "stride": (1, 1), "pads": (0, 0, 0, 0), "ceil_mode": 0,
                     "global": 1})


def _spatial_axes(w, op, what):
    """MEAN/REDUCE_MAX over the spatial axes: [1, 2] of NHWC or [1] of (1, L, C)."""
    shape = w.input_tensor(op, 0).shape
    axes = sorted({int(a) % max(len(shape), 1) for a in np.asarray(w.const(op, 1, "axes")).reshape(-1)})
    if (len(shape), axes) not in ((4, [1, 2]), (3, [1])):
        raise w.fail(op, f"{op.code} over axes {axes} of a rank-{len(shape)} tensor is not "
                         f"supported; only over the spatial axes ([1, 2] of NHWC, [1] of (1, L, C)): "
                         f"a global {what} pool")
    return shape, bool(op.options.get("keep_dims", False))


def tfl_mean(w, op):
    """MEAN over the spatial axes: a global average pool with TFLite's own requantization
    (ops/pool.py: pool_requant)."""
    _spatial_axes(w, op, "average")
    flat = len(w.tensor(op.outputs[0]).shape) == 2       # (1, C): keep_dims false
    return Op(op.label, "global_avgpool", [w.act(op, 0)], w.out(op), op.code,
              attrs={"keepdims": 0 if flat else 1, "mean": 1})


def tfl_reduce_max(w, op):
    """REDUCE_MAX over the spatial axes: a max pool over the whole map (TFLite takes the
    maximum of the codes)."""
    shape, _ = _spatial_axes(w, op, "max")
    x, out = w.act(op, 0), w.out(op)
    out_shape = w.tensor(op.outputs[0]).shape
    attrs = {"kernel": None, "stride": (1, 1), "pads": (0, 0, 0, 0), "ceil_mode": 0, "global": 1}
    if len(out_shape) != 2:
        return Op(op.label, "maxpool", [x], out, op.code, attrs=attrs)
    core = w.fresh(f"{out}_pool")                      # (1, C, 1, 1), then the (1, C) view
    w.qparams[core] = w.qparams[out]
    return [Op(op.label, "maxpool", [x], core, op.code, attrs=attrs),
            w.relayout(op, core, (1, 1, 1, shape[-1]), out_shape, out, name=f"{op.label}_dims")]


def shape(g, op, ins):
    x = tuple(ins[0])
    rank = len(x)
    axes = op.attrs["axes"]
    if axes is None:
        axes = range(rank)
    if any(not -rank <= d < rank for d in axes):
        raise g.fail(op, f"axes {list(axes)} are out of range for a rank-{rank} input {list(x)}")
    axes = tuple(sorted({int(d) % rank for d in axes}))
    op.attrs["axes"] = axes
    kept = tuple(1 if d in axes else n for d, n in enumerate(x))
    out = kept if op.attrs["keepdims"] else tuple(n for d, n in enumerate(x) if d not in axes)
    if len(out) not in (2, 4) or out[0] != 1:
        raise g.fail(op, f"keepdims=0 over axes {list(axes)} of {list(x)} gives a tensor of "
                         f"shape {list(out)}; only (1, F) or (1, C, H, W) results are supported "
                         f"(keepdims=1, or reduce two of C, H, W)")
    if int(np.prod([x[d] for d in axes])) * 255 >= 2**31:
        raise g.fail(op, f"reducing {int(np.prod([x[d] for d in axes]))} elements overflows "
                         f"the int32 sum")
    return out


def reference(layer, graph, inputs):
    (x,) = inputs
    axes, fn = tuple(layer.attrs["axes"]), layer.attrs["fn"]
    v = x.astype(np.int64) - zp(graph, layer.inputs[0])
    acc = {"mean": np.sum, "sum": np.sum, "max": np.max, "min": np.min}[fn](v, axis=axes, keepdims=True)
    count = int(np.prod([x.shape[d] for d in axes])) if fn == "mean" else None
    p = single_requant(layer, graph)
    out = numerics.requantize(acc, p["mult"][0], p["shift"][0], zp(graph, layer.output),
                              layer.act_min, layer.act_max, count)
    return out.reshape(graph.tensor(layer.output).shape)


def export(w, layer, ins, core_out):
    """ReduceSum takes its axes as an input (opset 13); the others as an attribute (the
    writer moves it to an input when the file's opset is 18 or more)."""
    a = layer.attrs
    op_type = {v: k for k, v in FNS.items()}[a["fn"]]
    if a["fn"] == "sum":
        axes = w.const(f"{layer.name}_axes", np.array(a["axes"], dtype=np.int64))
        w.node(op_type, [ins[0], axes], [core_out], layer.name, exact_name=True,
               keepdims=a["keepdims"])
        return
    w.node(op_type, ins, [core_out], layer.name, exact_name=True, axes=list(a["axes"]),
           keepdims=a["keepdims"])


def spec(layer, graph) -> dict:
    """The kernel's fn and which of (C, H, W) it reduces ((1, F): F as C); a template walks
    them in its layout's memory order (HWC: H, W, C; CHW: C, H, W). keepdims=0 leaves one
    kept dim, so the output's order is that walk's too."""
    axes = layer.attrs["axes"]
    if len(graph.tensor(layer.inputs[0]).shape) == 2:
        red = [int(1 in axes), 0, 0]
    else:
        red = [int(d in axes) for d in (1, 2, 3)]
    return {"fn_code": CODES[layer.attrs["fn"]], "reduced_chw": red}


OPS = [OpDef("reduce", attrs=("fn", "axes", "keepdims"), shape=shape, reference=reference,
             requant=single_requant, counts=single_counts, macs=n_in, export=export,
             fusable=True,
             doc="fn (mean, sum, max, min) axes (sorted, non-negative) keepdims")]
CONVERTERS = ({t: reduce for t in FNS} | {"GlobalMaxPool": global_maxpool}
              | onnx_qoperator.converters("QLinearReduceMean"))
TFLITE_CONVERTERS = {"MEAN": tfl_mean, "REDUCE_MAX": tfl_reduce_max}
