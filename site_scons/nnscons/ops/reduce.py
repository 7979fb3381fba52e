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


def tfl_mean(w, op):
    """MEAN over the spatial axes of an NHWC tensor: a global average pool with TFLite's
    own requantization (ops/pool.py: pool_requant)."""
    shape = w.input_tensor(op, 0).shape
    axes = sorted({int(a) % max(len(shape), 1) for a in np.asarray(w.const(op, 1, "axes")).reshape(-1)})
    if len(shape) != 4 or axes != [1, 2]:
        raise w.fail(op, f"MEAN over axes {axes} of a rank-{len(shape)} tensor is not supported; "
                         f"only over the spatial axes [1, 2] of an NHWC tensor (a global average pool)")
    return Op(op.label, "global_avgpool", [w.act(op, 0)], w.out(op), op.code,
              attrs={"keepdims": int(bool(op.options.get("keep_dims", False))), "mean": 1})


OPS = []   # converters only, of ONNX ops that become other modules' ops
CONVERTERS = {"ReduceMean": reduce_mean, "GlobalMaxPool": global_maxpool}
TFLITE_CONVERTERS = {"MEAN": tfl_mean}
