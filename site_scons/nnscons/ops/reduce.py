"""ReduceMean over the spatial axes (Keras' global pool) as global_avgpool, and
GlobalMaxPool as a maxpool whose window is the whole map; both keep (1, C, 1, 1), and
keepdims=0 gives (1, C)."""
from __future__ import annotations

import numpy as np

from ..frontends import onnx_ops as X
from ..frontends.onnx_file import attributes
from ..passes.opgraph import Op


def _axes(w, name, node, ins):
    a = attributes(node)
    if "axes" in a:
        return [int(v) for v in a["axes"]]
    if len(ins) > 1 and ins[1]:
        return [int(v) for v in np.asarray(w.const(ins[1], name, node, "axes")).reshape(-1)]
    return None


def reduce_mean(w, name, node, ins, out):
    a = attributes(node)
    axes = _axes(w, name, node, ins)
    if axes is None or sorted(d % 4 for d in axes) != [2, 3]:
        raise w.fail(name, node, f"ReduceMean over axes {axes} is not supported; only the "
                                 f"spatial axes [2, 3] of a (1, C, H, W) tensor (a global "
                                 f"average pool)")
    return Op(name, "global_avgpool", [X.activation(w, name, node, ins[0])], out, node.op_type,
              attrs={"keepdims": int(a.get("keepdims", 1))})


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


OPS = []   # converters only, of ONNX ops that become other modules' ops
CONVERTERS = {"ReduceMean": reduce_mean, "GlobalMaxPool": global_maxpool}
TFLITE_CONVERTERS = {"MEAN": tfl_mean, "REDUCE_MAX": tfl_reduce_max}
