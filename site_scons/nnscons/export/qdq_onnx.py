"""Write an IR graph as a QDQ ONNX model that onnxruntime runs (the numerics oracle).

Every IR tensor t is a float tensor followed by QuantizeLinear -> DequantizeLinear with t's
params; the float tensor before the QuantizeLinear is named t, so reading the file back
with nnscons.frontends gives the same tensor names (the network output's DequantizeLinear
output carries the output name instead). Weights are int8 initializers with per-channel
DequantizeLinear (axis 0), biases int32 at scale s_in * s_w[o]. A fused clamp becomes a
Relu/Clip before the QuantizeLinear, whose rounding then lands exactly on act_min/act_max.
A 'requant' without a clamp is a QuantizeLinear (named after the layer) on the input's
dequantized value. The bytes depend on the graph only (fixed opset, IR version, producer).

Activations are written as uint8 (zero point + 128), exactly the same values: onnxruntime
fuses every DQ -> Conv/Gemm/Add -> Q unit of a uint8 graph into QLinearConv/QGemm/
QLinearAdd, while with int8 activations on x86 it leaves the convs that read an Add or a
MaxPool in float (its int8-to-uint8 rewrite does not reach them). Reading the file back
converts them to int8 exactly (zero point - 128).
"""
from __future__ import annotations

import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from .. import ops
from ..ir import Graph, Layer

OPSET = 13
IR_VERSION = 8


class _Names:
    """Fresh, deterministic names that never collide with the graph's own names."""

    def __init__(self, taken):
        self.taken = set(taken)

    def fresh(self, base: str) -> str:
        name, k = base, 0
        while name in self.taken:
            k += 1
            name = f"{base}_{k}"
        self.taken.add(name)
        return name


class _Writer:
    def __init__(self, graph: Graph):
        self.g = graph
        self.names = _Names(set(graph.tensors) | {l.name for l in graph.layers})
        self.nodes, self.inits = [], []
        self.value = {}      # IR tensor -> name of its dequantized float value
        self.opset = OPSET   # raised by an op's export when it needs a newer ONNX op

    def const(self, base, array) -> str:
        name = self.names.fresh(base)
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def node(self, op_type, inputs, outputs, base, exact_name=False, **attrs):
        """A node named `base` itself (exact_name: the layer's own node) or a fresh name."""
        name = base if exact_name else self.names.fresh(base)
        self.nodes.append(helper.make_node(op_type, inputs, outputs, name=name, **attrs))

    def qdq(self, t: str, src: str, q_name: str = None, q_out: str = None):
        """QuantizeLinear(src) -> DequantizeLinear with the params of IR tensor t."""
        q = self.g.tensor(t).q
        scale = self.const(f"{t}_scale", np.array(q.scale, dtype=np.float32))
        zp = self.const(f"{t}_zero_point", np.array(q.zero_point + 128, dtype=np.uint8))
        q_out = q_out or self.names.fresh(f"{t}_q")
        deq = t if t in self.g.outputs else self.names.fresh(f"{t}_dq")
        self.nodes.append(helper.make_node("QuantizeLinear", [src, scale, zp], [q_out],
                                           name=q_name or self.names.fresh(f"{t}_quantize")))
        self.node("DequantizeLinear", [q_out, scale, zp], [deq], f"{t}_dequantize")
        self.value[t] = deq

    def float_name(self, t: str) -> str:
        """Name of the float tensor quantized into t (t itself unless t is the output)."""
        return self.names.fresh(f"{t}_float") if t in self.g.outputs else t

    def weights(self, layer: Layer):
        s_in = self.g.tensor(layer.inputs[0]).q.scale
        o = len(layer.weight_scale)
        n = layer.name
        w = self.const(f"{n}_weight", layer.weight.astype(np.int8))
        ws = self.const(f"{n}_weight_scale", layer.weight_scale.astype(np.float32))
        wz = self.const(f"{n}_weight_zero_point", np.zeros(o, dtype=np.int8))
        b = self.const(f"{n}_bias", layer.bias.astype(np.int32))
        bs = self.const(f"{n}_bias_scale", (s_in * layer.weight_scale).astype(np.float32))
        bz = self.const(f"{n}_bias_zero_point", np.zeros(o, dtype=np.int32))
        wd, bd = self.names.fresh(f"{n}_weight_dq"), self.names.fresh(f"{n}_bias_dq")
        self.node("DequantizeLinear", [w, ws, wz], [wd], f"{n}_weight_dequantize", axis=0)
        self.node("DequantizeLinear", [b, bs, bz], [bd], f"{n}_bias_dequantize", axis=0)
        return [wd, bd]

    def clamp(self, layer: Layer, src: str, dst: str, name: str):
        """The clamp act_min/act_max as a real-valued Relu/Clip node src -> dst."""
        q = self.g.tensor(layer.output).q
        lo = None if layer.act_min <= -128 else q.scale * (layer.act_min - q.zero_point)
        hi = None if layer.act_max >= 127 else q.scale * (layer.act_max - q.zero_point)
        if lo == 0.0 and hi is None:
            self.nodes.append(helper.make_node("Relu", [src], [dst], name=name))
            return
        bounds = ["" if v is None else self.const(f"{name}_{k}", np.array(v, np.float32))
                  for k, v in (("min", lo), ("max", hi))]
        self.nodes.append(helper.make_node("Clip", [src] + bounds, [dst], name=name))

    def layer(self, layer: Layer):
        """The op's export hook (OpDef.export) writes the real-valued core computation into
        `core_out` (or returns the tensor holding it, or DONE when it wrote everything);
        the fused clamp and the output's QuantizeLinear/DequantizeLinear follow."""
        ins = [self.value[t] for t in layer.inputs]
        t = layer.output
        d = ops.get(layer.op)
        if d.export is None:
            raise ValueError(f"cannot export op {layer.op!r}")
        pre = self.float_name(t)
        has_clamp = layer.act_min > -128 or layer.act_max < 127
        core_out = self.names.fresh(f"{t}_preact") if has_clamp else pre
        got = d.export(self, layer, ins, core_out)
        if got is ops.DONE:
            return
        if got is not None:
            core_out = got
        if has_clamp:   # a standalone Relu/Clip (no core node) keeps the layer's name
            name = layer.name if got is not None else self.names.fresh(
                layer.fused[-1] if layer.fused else f"{layer.name}_act")
            self.clamp(layer, core_out, pre, name)
        elif got is not None:
            self.node("Identity", [core_out], [pre], f"{layer.name}_identity")
        self.qdq(t, pre)

    AXES_INPUT_FROM = 18   # ReduceMean/Max/Min take their axes as an input from opset 18

    def _axes_as_inputs(self, graph) -> None:
        """An op's export may raise the opset (AveragePool with dilations: 19) after a
        reduction was written with its axes attribute: move them to the input then."""
        if self.opset < self.AXES_INPUT_FROM:
            return
        for node in graph.node:
            if not node.op_type.startswith("Reduce"):
                continue
            for k, attr in enumerate(node.attribute):
                if attr.name == "axes":
                    axes = self.names.fresh(f"{node.name}_axes")
                    graph.initializer.append(numpy_helper.from_array(
                        np.array(list(attr.ints), dtype=np.int64), axes))
                    del node.attribute[k]
                    node.input.append(axes)
                    break

    def model(self) -> onnx.ModelProto:
        g = self.g
        for t in g.inputs:
            self.qdq(t, t)
        for layer in g.layers:
            self.layer(layer)
        xs = [helper.make_tensor_value_info(t, TensorProto.FLOAT, list(g.tensor(t).shape))
              for t in g.inputs]
        ys = [helper.make_tensor_value_info(t, TensorProto.FLOAT, list(g.tensor(t).shape))
              for t in g.outputs]
        graph = helper.make_graph(self.nodes, g.name, xs, ys, self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", self.opset)],
                                  producer_name="nnscons", ir_version=IR_VERSION)
        self._axes_as_inputs(model.graph)
        rule = getattr(g, "numerics", "onnx") or "onnx"
        if rule != "onnx":   # the network's own arithmetic is not this graph's QDQ semantics
            helper.set_model_props(model, {"nnscons.numerics": rule})
        onnx.checker.check_model(model)
        return model


def build_qdq(graph: Graph) -> onnx.ModelProto:
    return _Writer(graph).model()


def write_qdq(graph: Graph, path: str) -> None:
    """Write the QDQ model; an unchanged file is left untouched (keeps its timestamp)."""
    data = build_qdq(graph).SerializeToString()
    if os.path.isfile(path):
        with open(path, "rb") as fh:
            if fh.read() == data:
                return
    with open(path, "wb") as fh:
        fh.write(data)
