"""bn: BatchNormalization (pre-IR), folded in float into the conv2d/linear before it;
elsewhere a per-channel affine table (ops.lut)."""
from __future__ import annotations

import numpy as np

from ..opkit import onnx_operands as X
from ..opkit.onnx_attrs import attributes
from ..opkit.opgraph import Op
from ..opkit.opdef import OpDef


def convert(w, name, node, ins, out):
    a = attributes(node)
    if a.get("training_mode", 0):
        raise w.fail(name, node, "training_mode=1 is not supported; export in eval mode")
    params = {k: np.asarray(w.const(t, name, node, k), dtype=np.float64).reshape(-1)
              for k, t in zip(("scale", "bias", "mean", "var"), ins[1:5])}
    params["eps"] = float(a.get("epsilon", 1e-5))
    return Op(name, "bn", [X.activation(w, name, node, ins[0])], out, node.op_type,
              attrs=params)


def _as_table(g, bn):
    """A BatchNormalization that follows no conv: a per-channel affine op, i.e. one
    lookup table per channel (ops.lut)."""
    a = bn.attrs
    consts = tuple((pos, (len(a[k]),), tuple(float(v) for v in a[k]))
                   for pos, k in ((1, "scale"), (2, "bias"), (3, "mean"), (4, "var")))
    op = Op(bn.name, "lut", list(bn.inputs), bn.output, bn.source_op,
            attrs={"fn": "BatchNormalization", "fn_attrs": (("epsilon", a["eps"]),),
                   "fn_consts": consts, "x_pos": 0})
    g.ops[g.ops.index(bn)] = op


def fold(g, bn, op_def):
    src = g.producer(bn.inputs[0])
    # a quantized model that rounds the conv's output before the BN (onnxruntime's QDQ
    # quantizer without pre-processing) computes the BN on those codes: a table, not a fold
    if (src is None or not op_def(src.kind).weighted or len(g.consumers(bn.inputs[0])) != 1
            or bn.inputs[0] in g.outputs or bn.inputs[0] in g.qparams):
        _as_table(g, bn)
        return
    a = bn.attrs
    k = a["scale"] / np.sqrt(a["var"] + a["eps"])
    n_out = src.weight.shape[0]
    if k.shape != (n_out,):
        raise g.fail(bn, f"has {k.shape[0]} channels but {src.name!r} has {n_out} outputs")
    bias = src.bias if src.bias is not None else np.zeros(n_out)
    src.weight = src.real_weight()          # a second fold: the first one's products first
    src.weight_factor = k                   # weight * k, when lowering (Op.weight_factor)
    src.bias = (bias - a["mean"]) * k + a["bias"]
    # The model's integer weights stay, each channel's scale times |k| (rounded to float32
    # as every scale is, the sign moved into the integers); its integer bias does not.
    if src.weight_q is not None and np.all(k != 0):
        q, s_w = src.weight_q
        sign = np.sign(k).astype(np.int16).reshape((-1,) + (1,) * (q.ndim - 1))
        s_new = (s_w * np.abs(k)).astype(np.float32).astype(np.float64)
        src.weight_q = (X.narrowest(q.astype(np.int16) * sign), s_new)
        src.weight = (q.astype(np.float64) * sign) * s_new.reshape((-1,) + (1,) * (q.ndim - 1))
        src.weight_factor = None
    else:
        src.weight_q = None
    src.bias_q = None
    src.output = bn.output
    src.fused.append(bn.name)
    src.source_ops.append(bn.source_op)
    g.ops.remove(bn)


OPS = [OpDef("bn", ir=False, onnx={"BatchNormalization": convert}, fold=fold,
             doc="BatchNormalization (attrs scale/bias/mean/var/eps): folded into conv2d/linear")]
