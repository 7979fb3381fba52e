"""onnxruntime's QOperator form (QLinearConv, QGemm, QLinearAdd, ...) read as the QDQ graph
it stands for.

A QOperator node is its float op between DequantizeLinear on every quantized input and
QuantizeLinear on its output; onnxruntime's kernels compute exactly that up to rounding, and
the ONNX oracle is that QDQ meaning. So each converter here (registered in its op's module,
next to the float op's converter) records the quantization the node states -- the
activations' scales and zero points, the weights as quantized constants, the int32 bias at
scale x_scale * w_scale -- then hands a float node of the same attributes to the float op's
own converter, and gives its output the node's output scale and zero point. The result is
the same IR as the equivalent QDQ graph's.

    QLINEAR[op_type] = QSpec(float op type, activation inputs (tensor, scale, zero point),
                             weight inputs (tensor, scale, zero point, axis), bias
                             (tensor, scale from which inputs), output (scale, zero point))
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np
from onnx import helper

from ..ir import QParams
from .onnx_attrs import attributes
from . import onnx_operands


def along_axis(a: np.ndarray, ndim: int, axis: int) -> np.ndarray:
    """Per-tensor (size 1) or per-axis quantization parameters, broadcastable to ndim."""
    if a.size == 1:
        return a.reshape(())
    shape = [1] * ndim
    shape[axis] = a.size
    return a.reshape(shape)


@dataclass
class QuantConst:
    """An integer initializer seen through a DequantizeLinear (int8 domain for 8-bit)."""
    q: np.ndarray             # int64 values
    scale: np.ndarray         # float64, one value or one per index along `axis`
    zero_point: np.ndarray    # int64, like scale
    axis: int
    dtype: str                # "int8" (uint8 converted) or "int32"
    file_dtype: str = "int8"  # the initializer's own type (messages show its zero points)

    def file_zero_point(self) -> np.ndarray:
        """The zero point as the file stores it (uint8 ones back in 0..255)."""
        return self.zero_point + (128 if self.file_dtype == "uint8" else 0)

    def real(self) -> np.ndarray:
        return ((self.q - along_axis(self.zero_point, self.q.ndim, self.axis))
                * along_axis(self.scale, self.q.ndim, self.axis))


@dataclass(frozen=True)
class QSpec:
    float_type: str
    acts: object                  # ((tensor, scale, zero point) input positions, ...), or a
                                  # callable(node inputs) giving them (QLinearConcat)
    out_q: tuple                  # (scale, zero point) positions of the output's quantization
    float_inputs: Callable        # (node inputs) -> the float op's inputs, as positions
    weights: tuple = ()           # ((tensor, scale, zero point, axis or callable(attrs)), ...)
    bias: Optional[tuple] = None  # (tensor position, (the two quantized inputs whose scales
                                  #  multiply: position of each tensor, its scale is next))
    drop: tuple = ()              # attributes of the QOperator that the float op lacks

    def activations(self, raw) -> tuple:
        return self.acts(raw) if callable(self.acts) else self.acts

    def weight_inputs(self, attrs) -> list:
        """(tensor, scale, zero point, axis) of each weight input."""
        return [(t, s, z, axis(attrs) if callable(axis) else axis) for t, s, z, axis in self.weights]

    def float_attrs(self, attrs) -> dict:
        return {k: v for k, v in attrs.items() if k not in self.drop + ("channels_last",)}


def _zero_point_name(inputs, k):
    return inputs[k] if k < len(inputs) else ""


class _Quantized:
    """What the walker needs from one QOperator node: its quantization, recorded."""

    def __init__(self, w, name, node, spec: QSpec):
        self.w, self.name, self.node, self.spec = w, name, node, spec
        self.raw = list(node.input)

    def params(self, s, z):
        """(float64 scale array, int8-domain zero point array, zero point dtype)."""
        return self.w.qparams_of(self.name, self.node, [None, self.raw[s], _zero_point_name(self.raw, z)])

    def activation(self, tensor, s, z):
        scale, zp, _ = self.params(s, z)
        q = self.w.activation_q(self.name, self.node, scale, zp)
        have = self.w.qparams.get(tensor)
        if have is None:
            self.w.qparams[tensor] = q
        elif have != q:
            raise self.w.fail(self.name, self.node,
                              f"reads {tensor!r} with scale {q.scale} and zero point {q.zero_point}, "
                              f"but it was written with scale {have.scale} and zero point "
                              f"{have.zero_point} (int8 domain); re-export the model")
        return scale

    def constant(self, k, s, z, axis):
        """A quantized initializer input as a quantized constant (under its own name)."""
        src = self.raw[k]
        raw = self.w.consts.get(src)
        if raw is None or raw.dtype not in (np.int8, np.uint8):
            raise self.w.fail(self.name, self.node, f"input {k} ({src!r}) must be an int8 or uint8 "
                                                    f"initializer (a weight)")
        scale, zp, _ = self.params(s, z)
        self.w.qconsts[src] = QuantConst(raw.astype(np.int64) - (128 if raw.dtype == np.uint8 else 0),
                                         scale, zp, axis, "int8", raw.dtype.name)
        return src, scale

    def bias(self, k, scale):
        src = self.raw[k] if k < len(self.raw) else ""
        if not src:
            return ""
        raw = self.w.consts.get(src)
        if raw is None or raw.dtype != np.int32:
            raise self.w.fail(self.name, self.node, f"bias {src!r} must be an int32 initializer")
        name = f"{self.name}::bias"
        self.w.qconsts[name] = QuantConst(raw.astype(np.int64).reshape(-1), np.asarray(scale).reshape(-1),
                                          np.zeros(1, dtype=np.int64), 0, "int32")
        return name


def qlinear(spec: QSpec) -> Callable:
    """The converter of a QOperator node described by `spec`."""

    def convert(w, name, node, ins, out):
        a = attributes(node)
        if a.get("channels_last", 0):
            raise w.fail(name, node, "channels_last=1 is not supported (NCHW tensors only)")
        n = _Quantized(w, name, node, spec)
        if len(n.raw) <= max(spec.out_q) or not n.raw[spec.out_q[0]]:
            raise w.fail(name, node, "the output scale is missing (a float output is not "
                                     "supported; end the graph with DequantizeLinear)")
        float_in, scales = {}, {}
        for t, s, z in spec.activations(n.raw):
            if n.raw[t] and w.is_const(ins[t]):
                float_in[t], scales[t] = n.constant(t, s, z, 1)
            else:
                float_in[t] = onnx_operands.activation(w, name, node, ins[t])
                scales[t] = n.activation(ins[t], s, z)
        for t, s, z, axis in spec.weight_inputs(a):
            float_in[t], scales[t] = n.constant(t, s, z, axis)
        if spec.bias is not None:
            k, (sa, sw) = spec.bias
            float_in[k] = n.bias(k, np.asarray(scales[sa], np.float64) * np.asarray(scales[sw], np.float64))
        inputs = [float_in.get(k, "") for k in spec.float_inputs(n.raw)]
        fnode = helper.make_node(spec.float_type, inputs, [out], name=node.name, **spec.float_attrs(a))
        got = w.convert(name, fnode, inputs, out)
        scale, zp, _ = n.params(*spec.out_q)
        w.qparams[out] = w.activation_q(name, node, scale, zp)
        w.q_names[out] = out
        return got

    return convert


def _concat_acts(raw):
    return tuple((k, k + 1, k + 2) for k in range(2, len(raw), 3))


def _concat_inputs(raw):
    return list(range(2, len(raw), 3))


UNARY_IO = dict(acts=((0, 1, 2),), out_q=(3, 4), float_inputs=lambda raw: [0])

QLINEAR = {
    "QLinearConv": QSpec("Conv", acts=((0, 1, 2),), weights=((3, 4, 5, 0),), bias=(8, (0, 3)),
                         out_q=(6, 7), float_inputs=lambda raw: [0, 3, 8]),
    "QLinearMatMul": QSpec("MatMul", acts=((0, 1, 2),), weights=((3, 4, 5, 1),), out_q=(6, 7),
                           float_inputs=lambda raw: [0, 3]),
    "QGemm": QSpec("Gemm", acts=((0, 1, 2),), weights=((3, 4, 5, lambda a: 0 if a.get("transB", 0) else 1),),
                   bias=(6, (0, 3)), out_q=(7, 8), float_inputs=lambda raw: [0, 3, 6]),
    "QLinearAdd": QSpec("Add", acts=((0, 1, 2), (3, 4, 5)), out_q=(6, 7),
                        float_inputs=lambda raw: [0, 3]),
    "QLinearMul": QSpec("Mul", acts=((0, 1, 2), (3, 4, 5)), out_q=(6, 7),
                        float_inputs=lambda raw: [0, 3]),
    "QLinearAveragePool": QSpec("AveragePool", **UNARY_IO),
    "QLinearGlobalAveragePool": QSpec("GlobalAveragePool", **UNARY_IO),
    "QLinearSigmoid": QSpec("Sigmoid", **UNARY_IO),
    "QLinearLeakyRelu": QSpec("LeakyRelu", **UNARY_IO),
    "QLinearSoftmax": QSpec("Softmax", **UNARY_IO, drop=("opset",)),
    "QLinearConcat": QSpec("Concat", acts=_concat_acts, out_q=(0, 1), float_inputs=_concat_inputs),
    # QLinearConv's inputs; the weight (Cin, Cout, kh, kw) per output channel along axis 1
    "QLinearConvTranspose": QSpec("ConvTranspose", acts=((0, 1, 2),), weights=((3, 4, 5, 1),), bias=(8, (0, 3)),
                                  out_q=(6, 7), float_inputs=lambda raw: [0, 3, 8]),
    "QLinearReduceMean": QSpec("ReduceMean", **UNARY_IO),
}


def converters(*op_types) -> dict:
    """{QOperator type: converter} for an op module's CONVERTERS."""
    return {t: qlinear(QLINEAR[t]) for t in op_types}


def to_qdq(proto):
    """The same model with every QOperator node spelled as DequantizeLinear -> float op ->
    QuantizeLinear (the int32 bias dequantized at the float32 product x_scale * w_scale, as
    onnxruntime's QDQ quantizer stores it): what the oracle (export/ort_oracle.py) evaluates.
    The QuantizeLinear outputs keep the QOperator outputs' names. A model without QOperator
    nodes comes back unchanged (the same object)."""
    import onnx
    from onnx import numpy_helper

    g = proto.graph
    if not any(n.op_type in QLINEAR for n in g.node):
        return proto
    out = onnx.ModelProto()
    out.CopyFrom(proto)
    g = out.graph
    inits = {i.name: numpy_helper.to_array(i) for i in g.initializer}
    nodes, new_inits = [], []
    for k, node in enumerate(g.node):
        spec = QLINEAR.get(node.op_type)
        if spec is None:
            nodes.append(node)
            continue
        raw, y = list(node.input), node.output[0]
        a = attributes(node)

        def dq(t, s, z, axis=None, tag=""):
            name = f"{y}__dq{tag}{t}"
            ins = [raw[t], raw[s]] + ([raw[z]] if z < len(raw) and raw[z] else [])
            nodes.append(helper.make_node("DequantizeLinear", ins, [name],
                                          **({} if axis is None else {"axis": axis})))
            return name

        float_in = {t: dq(t, s, z) for t, s, z in spec.activations(raw)}
        for t, s, z, axis in spec.weight_inputs(a):
            float_in[t] = dq(t, s, z, axis, "w")
        if spec.bias is not None and spec.bias[0] < len(raw) and raw[spec.bias[0]]:
            b, (sa, sw) = spec.bias
            scale = (np.asarray(inits[raw[sa + 1]], np.float32).reshape(-1)
                     * np.asarray(inits[raw[sw + 1]], np.float32).reshape(-1)).astype(np.float32)
            sname = f"{y}__bias_scale"
            new_inits.append(numpy_helper.from_array(scale if scale.size > 1 else scale.reshape(()), sname))
            bname = f"{y}__dqb"
            nodes.append(helper.make_node("DequantizeLinear", [raw[b], sname], [bname],
                                          **({"axis": 0} if scale.size > 1 else {})))
            float_in[b] = bname
        f_ins, f_attrs = [float_in.get(i, "") for i in spec.float_inputs(raw)], spec.float_attrs(a)
        if spec.float_type == "ReduceMean" and "axes" in f_attrs and _opset(out) >= 18:
            aname = f"{y}__axes"        # an input from opset 18 (QLinearReduceMean keeps the attribute)
            new_inits.append(numpy_helper.from_array(np.asarray(f_attrs.pop("axes"), np.int64), aname))
            f_ins.append(aname)
        nodes.append(helper.make_node(spec.float_type, f_ins, [f"{y}__f"], **f_attrs))
        oq = [raw[spec.out_q[0]]] + ([raw[spec.out_q[1]]] if len(raw) > spec.out_q[1] else [])
        nodes.append(helper.make_node("QuantizeLinear", [f"{y}__f"] + oq, [y]))
    del g.node[:]
    g.node.extend(nodes)
    g.initializer.extend(new_inits)
    return out


def _opset(proto) -> int:
    """The model's default-domain opset."""
    return max((o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")), default=1)
