"""instnorm: ONNX InstanceNormalization of a (1, C, H, W) tensor with QDQ semantics:
y = scale_c * (x - mean_c) / sqrt(var_c + epsilon) + B_c over each channel's H x W values,
x the dequantized input, quantized with round half to even.

The statistics come from the codes exactly: with k = q - zp over a channel's n values,
S1 = sum k and S2 = sum k^2 (int64), mean = S1 / n and var = (n S2 - S1^2) / n^2 (in
units of the input scale s, squared for var). Then, per element, in float64 and in this
order (reference and kernels/common/nn_instnorm.c alike, FP contraction off; sqrt is
correctly rounded everywhere):

    m = S1 / n;  v = (n S2 - S1^2) / (n * n);  den = sqrt(v * (s * s) + eps)
    y = (scale_c * ((k - m) * s)) / den + B_c;  out = clamp(rne(y / s_out) + zp_out)

The float64 oracle computes mean and var with numpy's pairwise float sums of the
dequantized values instead; the two differ by a few ulps, so an output differs only where
y / s_out lies within ~1e-12 of a half-integer (not seen on the random tests)."""
from __future__ import annotations

import numpy as np

from ..opkit import onnx_operands as X
from ..opkit.onnx_attrs import attributes
from ..opkit.opgraph import Op
from ..opkit.opdef import OpDef
from ._common import n_out, scale_f64


def convert(w, name, node, ins, out):
    if len(ins) != 3:
        raise w.fail(name, node, "InstanceNormalization needs its input, scale and B")
    scale = np.asarray(w.const(ins[1], name, node, "scale"), dtype=np.float32).reshape(-1)
    b = np.asarray(w.const(ins[2], name, node, "B"), dtype=np.float32).reshape(-1)
    eps = float(np.float32(attributes(node).get("epsilon", 1e-5)))
    return Op(name, "instnorm", [X.activation(w, name, node, ins[0])], out, node.op_type,
              attrs={"scale": tuple(float(v) for v in scale), "B": tuple(float(v) for v in b),
                     "epsilon": eps})


def shape(g, op, ins):
    x = tuple(ins[0])
    if len(x) != 4 or x[0] != 1:
        raise g.fail(op, f"InstanceNormalization needs a (1, C, H, W) input, got {x}")
    for k in ("scale", "B"):
        if len(op.attrs[k]) != x[1]:
            raise g.fail(op, f"{k} has {len(op.attrs[k])} values for {x[1]} channels")
    return x


def reference(layer, graph, inputs):
    (x,) = inputs
    a = layer.attrs
    qi, qo = graph.tensor(layer.inputs[0]).q, graph.tensor(layer.output).q
    k = x.astype(np.int64) - qi.zero_point                     # (1, C, H, W)
    n = k.shape[2] * k.shape[3]
    s1 = k.sum(axis=(2, 3), keepdims=True)
    s2 = (k * k).sum(axis=(2, 3), keepdims=True)
    s = scale_f64(qi)
    m = s1.astype(np.float64) / np.float64(n)
    v = (n * s2 - s1 * s1).astype(np.float64) / (np.float64(n) * np.float64(n))
    den = np.sqrt(v * (s * s) + np.float64(a["epsilon"]))
    gamma = np.asarray(a["scale"], np.float64).reshape(1, -1, 1, 1)
    beta = np.asarray(a["B"], np.float64).reshape(1, -1, 1, 1)
    y = (gamma * ((k.astype(np.float64) - m) * s)) / den + beta
    return np.clip(np.rint(y / scale_f64(qo)) + qo.zero_point, layer.act_min, layer.act_max).astype(np.int8)


def spec(layer, graph):
    """The per-channel scale and B, epsilon and the scales as exact hexadecimal literals."""
    a = layer.attrs
    qi, qo = graph.tensor(layer.inputs[0]).q, graph.tensor(layer.output).q
    return {"gamma": [float(v).hex() for v in a["scale"]], "beta": [float(v).hex() for v in a["B"]],
            "epsilon": float(a["epsilon"]).hex(), "in_scale": float(scale_f64(qi)).hex(),
            "out_scale": float(scale_f64(qo)).hex()}


def export(w, layer, ins, core_out):
    a = layer.attrs
    scale = w.const(f"{layer.name}_scale", np.array(a["scale"], dtype=np.float32))
    b = w.const(f"{layer.name}_B", np.array(a["B"], dtype=np.float32))
    w.node("InstanceNormalization", [ins[0], scale, b], [core_out], layer.name, exact_name=True,
           epsilon=a["epsilon"])


OPS = [OpDef("instnorm", onnx={"InstanceNormalization": convert}, attrs=("scale", "B", "epsilon"),
             shape=shape, reference=reference, macs=lambda layer, graph: 2 * n_out(layer, graph),
             export=export,
             doc="scale B epsilon  (ONNX InstanceNormalization: statistics from integer sums "
                 "of the codes, the normalization in float64)")]
