"""onnxruntime's dynamic quantization (IntegerOps) read as the float model it approximates.

`quantize_dynamic` writes each Conv / MatMul as

    x -> DynamicQuantizeLinear -> (x_q, x_scale, x_zero_point)
    ConvInteger(x_q, w_q, x_zero_point, w_zero_point) -> Cast(float) -> Mul(., x_scale * w_scale)

(MatMulInteger likewise), the activation's scale computed at every inference. nnscons runs
static int8 networks: it reads such a node chain as the float Conv / MatMul with the weights
(w_q - w_zero_point) * w_scale and calibrates the activations itself, as for any float model
(the fidelity report then says how close the result is). The same chain after a static
QuantizeLinear(x, scale, zero point) reads the same way. Anything else around an integer node
is refused with the node's name and what was expected.
"""
from __future__ import annotations

import numpy as np
from onnx import helper, numpy_helper

from ..errors import ModelError
from ..opkit.onnx_attrs import attributes

INTEGER_OPS = {"ConvInteger": "Conv", "MatMulInteger": "MatMul"}


def to_float(proto, path: str):
    """proto with every integer-op chain replaced by its float op (a copy), or proto itself
    when it has none."""
    import onnx
    if not any(n.op_type in INTEGER_OPS for n in proto.graph.node):
        return proto
    out = onnx.ModelProto()
    out.CopyFrom(proto)
    g = out.graph
    inits = {i.name: numpy_helper.to_array(i) for i in g.initializer}
    producer = {o: n for n in g.node for o in n.output}
    readers: dict = {}
    for n in g.node:
        for t in n.input:
            readers.setdefault(t, []).append(n)
    replaced, new_inits = {}, []
    for index, node in enumerate(g.node):
        if node.op_type not in INTEGER_OPS:
            continue
        label = node.name or f"{node.op_type}_{index}"

        def fail(what):
            return ModelError(f"{path}: node {label!r} ({node.op_type}): {what}; nnscons reads "
                              f"onnxruntime's dynamic quantization (DynamicQuantizeLinear -> "
                              f"{node.op_type} -> Cast -> Mul by the scales) as its float model")

        x, scale_name, scale = _activation_source(node, producer, inits, fail)
        w = _weights(node, inits, fail)
        cast = _only_reader(node.output[0], readers, "Cast", fail)
        mul = _only_reader(cast.output[0], readers, "Mul", fail)
        s_name = next(t for t in mul.input if t != cast.output[0])
        w_scale = _weight_scale(s_name, scale_name, scale, producer, inits, fail)
        axis = 0 if node.op_type == "ConvInteger" else 1
        channels = w.shape[axis]
        w_scale = np.asarray(w_scale, np.float64).reshape(-1)
        if w_scale.size not in (1, channels):
            raise fail(f"the weight scale has {w_scale.size} values for {channels} output channels")
        shape = [1] * w.ndim
        shape[axis] = -1
        w_float = (w * w_scale.reshape(shape) if w_scale.size > 1 else w * w_scale[0]).astype(np.float32)
        w_name = f"{label}::float_weight"
        new_inits.append(numpy_helper.from_array(w_float, w_name))
        replaced[id(node)] = helper.make_node(INTEGER_OPS[node.op_type], [x, w_name], [mul.output[0]],
                                              name=node.name, **attributes(node))
        replaced[id(cast)] = replaced[id(mul)] = None
    nodes = [replaced.get(id(n), n) for n in g.node]
    nodes = _live([n for n in nodes if n is not None], {o.name for o in g.output})
    del g.node[:]
    g.node.extend(nodes)
    read = {t for n in nodes for t in n.input} | {o.name for o in g.output}
    kept = [i for i in g.initializer if i.name in read]     # the integer weights, scales, zero points go
    del g.initializer[:]
    g.initializer.extend(kept + new_inits)
    return out


def _activation_source(node, producer, inits, fail):
    """(the float tensor the integer node's input A quantizes, its scale's name, the scale when
    static, else None)."""
    src = producer.get(node.input[0])
    if src is not None and src.op_type == "DynamicQuantizeLinear" and src.output[0] == node.input[0]:
        return src.input[0], src.output[1], None
    if src is not None and src.op_type == "QuantizeLinear" and src.input[1] in inits:
        return src.input[0], src.input[1], np.asarray(inits[src.input[1]], np.float64)
    raise fail("its input A must be the output of DynamicQuantizeLinear or of a QuantizeLinear "
               "with a constant scale")


def _weights(node, inits, fail) -> np.ndarray:
    """w_q - w_zero_point as float64 (input B an int8/uint8 initializer)."""
    wq = inits.get(node.input[1])
    if wq is None or wq.dtype not in (np.int8, np.uint8):
        raise fail(f"its input B ({node.input[1]!r}) must be an int8 or uint8 initializer (the weights)")
    zp = np.zeros(1)
    if len(node.input) > 3 and node.input[3]:
        if node.input[3] not in inits:
            raise fail("the weight zero point must be an initializer")
        zp = np.asarray(inits[node.input[3]], np.float64).reshape(-1)
    w = wq.astype(np.float64)
    axis = 0 if node.op_type == "ConvInteger" else 1
    if zp.size > 1:
        shape = [1] * w.ndim
        shape[axis] = -1
        return w - zp.reshape(shape)
    return w - zp[0]


def _only_reader(tensor, readers, op_type, fail):
    got = readers.get(tensor, [])
    if len(got) != 1 or got[0].op_type != op_type:
        raise fail(f"its output must go to exactly one {op_type} (found "
                   f"{', '.join(n.op_type for n in got) or 'none'})")
    if op_type == "Cast" and attributes(got[0]).get("to") != 1:
        raise fail("its output must be cast to float32")
    return got[0]


def _weight_scale(s_name, x_scale_name, x_scale, producer, inits, fail):
    """The weights' scale from the Mul's scale operand: a Mul of x_scale and a constant weight
    scale, or (x_scale static) a constant product."""
    if s_name in inits:
        if x_scale is None:
            raise fail("the output's scale is a constant, but the input's scale is dynamic")
        return np.asarray(inits[s_name], np.float64) / x_scale
    p = producer.get(s_name)
    if p is not None and p.op_type == "Mul" and x_scale_name in p.input:
        other = [t for t in p.input if t != x_scale_name]
        if len(other) == 1 and other[0] in inits:
            return np.asarray(inits[other[0]], np.float64)
    raise fail(f"the scale {s_name!r} it is multiplied by must be x_scale * a constant weight scale")


def _live(nodes, outputs):
    """nodes without the ones whose outputs nothing reads (the DynamicQuantizeLinear and scale
    products left behind), in order."""
    while True:
        read = {t for n in nodes for t in n.input} | outputs
        keep = [n for n in nodes if any(o in read for o in n.output if o)]
        if len(keep) == len(nodes):
            return nodes
        nodes = keep
