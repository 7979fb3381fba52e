"""linear: ONNX Gemm / MatMul with a constant weight, (1, F) in and out."""
from __future__ import annotations

from ..frontends import onnx_ops as X
from ..frontends.onnx_file import attributes
from ..passes.opgraph import Op
from ..passes.shapes import need_rank
from ..reference import conv as ref
from . import OpDef
from .conv2d import weighted_counts, weighted_requant


def gemm(w, name, node, ins, out):
    a = attributes(node)
    if a.get("transA", 0):
        raise w.fail(name, node, "transA=1 is not supported")
    weight, wq = X.weight(w, name, node, ins[1], 0 if a.get("transB", 0) else 1, 2)
    alpha = float(a.get("alpha", 1.0))
    if alpha != 1.0:
        weight, wq = weight * alpha, None
    bias, bq = X.bias(w, name, node, ins[2] if len(ins) > 2 else "", weight.shape[0],
                      float(a.get("beta", 1.0)))
    return Op(name, "linear", [X.activation(w, name, node, ins[0])], out, node.op_type,
              weight=weight, bias=bias, weight_q=wq, bias_q=bq)


def matmul(w, name, node, ins, out):
    weight, wq = X.weight(w, name, node, ins[1], 1, 2)
    return Op(name, "linear", [X.activation(w, name, node, ins[0])], out, node.op_type,
              weight=weight, weight_q=wq)


def shape(g, op, ins):
    x = ins[0]
    need_rank(g, op, x, 2, "1,F; add a Flatten before it")
    if x[1] != op.weight.shape[1]:
        raise g.fail(op, f"weight {op.weight.shape} expects {op.weight.shape[1]} input "
                         f"features but the input has {x[1]}")
    return (1, op.weight.shape[0])


def export(w, layer, ins, core_out):
    w.node("Gemm", ins + w.weights(layer), [core_out], layer.name, exact_name=True, transB=1)


OPS = [OpDef(
    "linear", onnx={"Gemm": gemm, "MatMul": matmul},
    shape=shape, reference=ref.linear, requant=weighted_requant, counts=weighted_counts,
    macs=lambda layer, graph: int(layer.weight.size),
    export=export, weighted=True, fusable=True, doc="-")]
