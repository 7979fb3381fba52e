"""move: ops that only move elements (Transpose, DepthToSpace, SpaceToDepth, Resize and
Upsample nearest, Slice, Split, Squeeze, Unsqueeze, Pad edge/reflect/constant, Tile,
Expand, and the Reshapes between them) as one gather with a constant index table.

A move keeps its ONNX ops as `steps` ((op type, attributes, constant operands, output
index), ...); the gather index is those steps evaluated by onnx's reference evaluator on
the element indices of the input (float64, exact), so every op's ONNX semantics are
exact by construction. Chains of moves and the Reshapes inside them merge into one layer
(a ShuffleNet channel shuffle Reshape-Transpose-Reshape is one gather). Index -1 marks an
element that comes from a constant (Pad): it gets `fill`. The layer re-quantizes through a
256-entry table (Layer.weight, identity when the input and output share parameters).
"""
from __future__ import annotations

import functools

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from ..frontends.onnx_file import attributes
from ..frontends import onnx_ops as X
from ..passes.opgraph import Op
from . import OpDef
from ._common import zp

OPSET = 17
# ONNX op type -> positions of constant operands
MOVES = {"Transpose": (), "DepthToSpace": (), "SpaceToDepth": (), "Resize": (1, 2, 3),
         "Upsample": (1,), "Slice": (1, 2, 3, 4), "Split": (1,), "Squeeze": (1,),
         "Unsqueeze": (1,), "Pad": (1, 2, 3), "Tile": (1,), "Expand": (1,), "Gather": (1,)}


def _value(v):
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, (list, tuple)):
        return tuple(_value(x) for x in v)
    return v


def _step(w, name, node, ins, out_index=0):
    consts = []
    for pos in MOVES[node.op_type]:
        if pos < len(ins) and ins[pos]:
            arr = np.asarray(w.const(ins[pos], name, node, "operand"))
            dtype = "int64" if arr.dtype.kind in "iu" else "float64"
            consts.append((pos, dtype, tuple(int(d) for d in arr.shape),
                           tuple(arr.reshape(-1).tolist())))
    attrs = tuple(sorted((k, _value(v)) for k, v in attributes(node).items()))
    return (node.op_type, attrs, tuple(consts), out_index, w.f.opset)


def convert(w, name, node, ins, out):
    a = attributes(node)
    if node.op_type in ("Resize", "Upsample") and X.text(a.get("mode", "nearest")) != "nearest":
        raise w.fail(name, node, f"mode {X.text(a['mode'])!r} is not supported; only nearest "
                                 f"(a data movement)")
    return Op(name, "move", [X.activation(w, name, node, ins[0])], out, node.op_type,
              attrs={"steps": (_step(w, name, node, ins),)})


def split(w, name, node, ins, outs):  # noqa: D401
    """One move per used output of a Split (the walker passes every output)."""
    ops = []
    for k, out in enumerate(outs):
        if out:
            ops.append(Op(name if k == 0 else f"{name}_{k}", "move",
                          [X.activation(w, name, node, ins[0])], out, node.op_type,
                          attrs={"steps": (_step(w, name, node, ins, k),)}))
    return ops


split.multi_output = True


def reshape_step(shape):
    return ("Reshape", (), ((1, "int64", (len(shape),), tuple(int(d) for d in shape)),), 0, OPSET)


def steps_of(op):
    """The steps of a move, or of a reshape (Flatten/Reshape) as one Reshape step."""
    if op.kind == "move":
        return op.attrs["steps"]
    return (reshape_step(op.attrs["shape"]),)


def merge_moves(g) -> None:
    """Merge each move with the moves and reshapes before it and the reshapes after it
    (single-use intermediate tensors), so a chain is one gather of a 2-D/4-D tensor."""
    for op in [o for o in g.ops if o.kind == "move"]:
        while True:
            p = g.producer(op.inputs[0])
            if (p is None or p.kind not in ("move", "reshape") or p.output == g.output
                    or g.consumers(p.output) != [op]):
                break
            op.attrs["steps"] = steps_of(p) + op.attrs["steps"]
            op.inputs = list(p.inputs)
            op.fused = [p.name] + p.fused + op.fused
            op.source_ops = p.source_ops + op.source_ops
            g.ops.remove(p)
        while op.output != g.output:
            users = g.consumers(op.output)
            if len(users) != 1 or users[0].kind != "reshape":
                break
            r = users[0]
            op.attrs["steps"] = op.attrs["steps"] + steps_of(r)
            op.output = r.output
            op.fused += [r.name] + r.fused
            op.source_ops += r.source_ops
            g.ops.remove(r)


def _node_model(step, in_shape):
    op_type, attrs, consts, out_index, opset = step
    names = {pos: f"c{pos}" for pos, _, _, _ in consts}
    inits = [numpy_helper.from_array(np.asarray(v, dtype).reshape(s), names[pos])
             for pos, dtype, s, v in consts]
    n_in = max([0] + list(names)) + 1
    inputs = ["x"] + [names.get(i, "") for i in range(1, n_in)]
    n_out = out_index + 1
    outputs = [f"y{k}" for k in range(n_out)]
    node = helper.make_node(op_type, inputs, outputs, **dict(attrs))
    graph = helper.make_graph([node], "move", [helper.make_tensor_value_info(
        "x", TensorProto.DOUBLE, list(in_shape))], [helper.make_tensor_value_info(
            f"y{out_index}", TensorProto.DOUBLE, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", max(opset, 11))])


def apply_steps(steps, x):
    """The steps applied to the float64 array x (onnx's reference evaluator)."""
    from onnx.reference import ReferenceEvaluator
    for step in steps:
        if step[0] == "__stuff__":   # ConvTranspose's spread: stride - 1 zeros between elements
            sh, sw = dict(step[1])["strides"]
            n, c, h, w = x.shape
            y = np.zeros((n, c, (h - 1) * sh + 1, (w - 1) * sw + 1))
            y[:, :, ::sh, ::sw] = x
            x = y
            continue
        model = _node_model(step, x.shape)
        x = np.asarray(ReferenceEvaluator(model).run(None, {"x": x})[-1], dtype=np.float64)
    return x


def fill_steps(steps, shape):
    """Which output elements come from a constant (Pad): evaluated with input 1 and pad 0."""
    steps = tuple((t, a, tuple((p, d, s, (0.0,) * len(v)) if t == "Pad" and p == 2 else (p, d, s, v)
                               for p, d, s, v in c), k, o) for t, a, c, k, o in steps)
    return apply_steps(steps, np.ones(shape)) == 0


@functools.lru_cache(maxsize=64)
def index_of(steps, in_shape):
    """int64 array (output shape): the input element (NCHW flat index) of each output
    element, -1 for a constant."""
    n = int(np.prod(in_shape))
    idx = apply_steps(steps, np.arange(n, dtype=np.float64).reshape(in_shape) + 1.0)
    if any(s[0] == "Pad" for s in steps):
        idx = np.where(fill_steps(steps, in_shape), 0.0, idx)
    return (idx - 1).astype(np.int64)


def pad_value(steps) -> float:
    for t, a, c, k, o in steps:
        for p, d, s, v in c:
            if t == "Pad" and p == 2 and v:
                return float(v[0])
        if t == "Pad" and dict(a).get("value") is not None:
            return float(dict(a)["value"])
    return 0.0


def shape(g, op, ins):
    op.attrs["in_shape"] = tuple(ins[0])
    try:
        idx = index_of(op.attrs["steps"], tuple(ins[0]))
    except Exception as e:   # onnx's evaluator on malformed attributes
        raise g.fail(op, f"cannot evaluate the data movement ({type(e).__name__}: {e})") from None
    if idx.ndim not in (2, 4) or idx.shape[0] != 1:
        raise g.fail(op, f"result shape {idx.shape} is not (1, F) or (1, C, H, W); only "
                         f"chains of data movements that end in such a tensor are supported")
    return idx.shape


def lower(g, op, layer):
    from .lut import table
    in_q, out_q = g.qparams[op.inputs[0]], g.qparams[op.output]
    layer.weight = table("Identity", (), (), 0, 1, in_q, out_q, layer.act_min, layer.act_max)
    fill = np.rint(pad_value(op.attrs["steps"]) / out_q.scale) + out_q.zero_point
    layer.attrs["fill"] = int(np.clip(fill, max(-128, layer.act_min), min(127, layer.act_max)))


def index(layer, graph) -> np.ndarray:
    return index_of(layer.attrs["steps"], tuple(layer.attrs["in_shape"]))


def reference(layer, graph, inputs):
    (x,) = inputs
    idx = index(layer, graph)
    t = layer.weight[0]
    out = t[x.reshape(-1)[np.maximum(idx, 0)].astype(np.int64) + 128]
    return np.where(idx < 0, np.int8(layer.attrs["fill"]), out).astype(np.int8)


def params(layer, graph):
    return {"index": index(layer, graph).reshape(-1).astype(np.int32)}


def export(w, layer, ins, core_out):
    """Reshape to (1, n), Gather along axis 1 with the index table (after a constant Pad
    that appends the fill value when the move pads): the same elements, any opset."""
    idx = index(layer, graph=None)
    n = int(np.prod(layer.attrs["in_shape"]))
    flat = w.names.fresh(f"{layer.name}_flat")
    shape = w.const(f"{layer.name}_flat_shape", np.array([1, n], dtype=np.int64))
    w.node("Reshape", [ins[0], shape], [flat], f"{layer.name}_flatten")
    if (idx < 0).any():   # one more element holding the fill value, by a constant Pad
        pads = w.const(f"{layer.name}_fill_pads", np.array([0, 0, 0, 1], dtype=np.int64))
        value = w.const(f"{layer.name}_fill", np.array(pad_value(layer.attrs["steps"]),
                                                       dtype=np.float32))
        ext = w.names.fresh(f"{layer.name}_ext")
        w.node("Pad", [flat, pads, value], [ext], f"{layer.name}_fill_pad", mode="constant")
        flat, idx = ext, np.where(idx < 0, n, idx)
    table = w.const(f"{layer.name}_index", idx.reshape(idx.shape[1:]).astype(np.int64))
    w.node("Gather", [flat, table], [core_out], layer.name, exact_name=True, axis=1)


OPS = [OpDef("move", onnx={t: convert for t in MOVES if t not in ("Split", "Pad")} | {"Split": split},
             attrs=("steps", "in_shape"), shape=shape, reference=reference, lower=lower,
             requant=params, counts=lambda layer, graph: {"index": int(np.prod(
                 graph.tensor(layer.output).shape))},
             export=export, range_preserving=True, calib_inherit=True,
             doc="steps in_shape fill  (data movement as a gather: index int32 per output "
                 "element in the .bin, -1 = fill; weight: the (1, 256) requant table)")]
