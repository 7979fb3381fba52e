"""lrn: ONNX LRN (AlexNet, ZFNet, Inception-v1) across channels with QDQ semantics:
y = x / (bias + alpha / size * sum over the channel window of x^2)^beta, x the dequantized
input, quantized with round half to even.

The float64 arithmetic is one function, lrn_f64: the squares summed in channel order
(window [c - floor((size-1)/2), c + ceil((size-1)/2)] clipped), bias + (alpha / size) * sum,
np.power, the quotient. The reference runs it on the dequantized codes and the exact
oracle runs it for the LRN node (export/ort_oracle.py: onnx's own reference LRN sums over
the batch axis instead of the channels, onnx/onnx#7805), so the two agree by construction.
The C kernel (kernels/common/nn_lrn.c, FP contraction off) performs the same IEEE double
operations in the same order, with libm's pow: bit-exact where the C library's pow is the
one numpy calls (glibc on the host and gap9 emul; numpy's AVX-512 SVML pow is not).
The input codes could give the sum of squares exactly as an integer, but the oracle
rounds each square and partial sum, so the kernel repeats that instead."""
from __future__ import annotations

import math

import numpy as np

from ..opkit import onnx_operands as X
from ..opkit.onnx_attrs import attributes
from ..opkit.opgraph import Op
from ..opkit.opdef import OpDef
from ._common import dequantized, n_out, scale_f64


def _f32(v) -> float:
    return float(np.float32(v))


def convert(w, name, node, ins, out):
    a = attributes(node)
    if "size" not in a or int(a["size"]) < 1:
        raise w.fail(name, node, "attribute size (a positive window of channels) is required")
    return Op(name, "lrn", [X.activation(w, name, node, ins[0])], out, node.op_type,
              attrs={"size": int(a["size"]), "alpha": _f32(a.get("alpha", 1e-4)),
                     "beta": _f32(a.get("beta", 0.75)), "bias": _f32(a.get("bias", 1.0))})


def shape(g, op, ins):
    x = tuple(ins[0])
    if len(x) != 4:
        raise g.fail(op, f"LRN needs a 4-D (N, C, H, W) input, got {x}")
    return x


def window(size: int):
    """(before, after): channel c sums channels [c - before, c + after]."""
    return math.floor((size - 1) / 2), math.ceil((size - 1) / 2)


def lrn_f64(x, size, alpha, beta, bias):
    """ONNX LRN of float64 x (N, C, ...): the oracle's and the reference's arithmetic."""
    before, after = window(size)
    c = x.shape[1]
    sq = np.empty_like(x)
    for ch in range(c):
        lo, hi = max(0, ch - before), min(c, ch + after + 1)
        s = x[:, lo] * x[:, lo]
        for j in range(lo + 1, hi):
            s = s + x[:, j] * x[:, j]
        sq[:, ch] = s
    return x / np.power(bias + (alpha / size) * sq, beta)


def reference(layer, graph, inputs):
    (x,) = inputs
    a = layer.attrs
    qo = graph.tensor(layer.output).q
    v = dequantized(graph, layer.inputs[0], x)
    y = lrn_f64(v, a["size"], a["alpha"], a["beta"], a["bias"]) / scale_f64(qo)
    return np.clip(np.rint(y) + qo.zero_point, layer.act_min, layer.act_max).astype(np.int8)


def spec(layer, graph):
    """The float64 constants as exact hexadecimal literals, the channel window."""
    a = layer.attrs
    before, after = window(a["size"])
    qi, qo = graph.tensor(layer.inputs[0]).q, graph.tensor(layer.output).q
    return {"before": before, "after": after, "bias": float(a["bias"]).hex(),
            "alpha_n": float(a["alpha"] / a["size"]).hex(), "beta": float(a["beta"]).hex(),
            "in_scale": float(scale_f64(qi)).hex(), "out_scale": float(scale_f64(qo)).hex()}


def export(w, layer, ins, core_out):
    a = layer.attrs
    w.node("LRN", ins, [core_out], layer.name, exact_name=True, size=a["size"],
           alpha=a["alpha"], beta=a["beta"], bias=a["bias"])


OPS = [OpDef("lrn", onnx={"LRN": convert}, attrs=("size", "alpha", "beta", "bias"), shape=shape,
             reference=reference, macs=lambda layer, graph: layer.attrs["size"] * n_out(layer, graph),
             export=export,
             doc="size alpha beta bias  (ONNX LRN across channels in float64, QDQ)")]
