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

from ..opkit.onnx_attrs import attributes
from ..tensor_layout import flattened_layouts, to_layout
from ..opkit import onnx_operands as X
from ..opkit.opgraph import Op
from ..opkit.opdef import OpDef
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


def _not_rank_3(w, name, node, tensor):
    """A rank-3 tensor (1, C, L) of a 1-D network is (1, C, 1, L) inside nnscons: the
    steps name the model's axes, so they would move the wrong ones (Slice axes=[2] would
    slice H). In a 4-D network a rank-3 tensor is what it says (a Gather of one channel
    before an Unsqueeze): the moves around it merge into one on 4-D tensors."""
    if w.model_rank(tensor) == 3 and len(w.f.input_shape) == 3:
        raise w.fail(name, node, f"data movements on a rank-3 tensor ({tensor!r}, a 1-D "
                                 f"network's (1, C, L)) are not translated yet; move the "
                                 f"data on a (1, F) or (1, C, H, W) tensor")


def convert(w, name, node, ins, out):
    _not_rank_3(w, name, node, ins[0])
    a = attributes(node)
    mode = X.text(a.get("mode", "nearest"))
    if node.op_type == "Resize" and mode == "linear":
        from .bilinear import convert as bilinear
        return bilinear(w, name, node, ins, out)
    if node.op_type in ("Resize", "Upsample") and mode != "nearest":
        raise w.fail(name, node, f"mode {mode!r} is not supported; supported: nearest (a data "
                                 f"movement){' and linear' if node.op_type == 'Resize' else ''}")
    return Op(name, "move", [X.activation(w, name, node, ins[0])], out, node.op_type,
              attrs={"steps": (_step(w, name, node, ins),)})


def split(w, name, node, ins, outs):  # noqa: D401
    """One move per used output of a Split (the walker passes every output)."""
    _not_rank_3(w, name, node, ins[0])
    ops = []
    for k, out in enumerate(outs):
        if out:
            ops.append(Op(name if k == 0 else f"{name}_{k}", "move",
                          [X.activation(w, name, node, ins[0])], out, node.op_type,
                          attrs={"steps": (_step(w, name, node, ins, (k, len(outs))),)}))
    return ops


split.multi_output = True


def reshape_step(shape):
    return ("Reshape", (), ((1, "int64", (len(shape),), tuple(int(d) for d in shape)),), 0, OPSET)


def transpose_step(perm):
    return ("Transpose", (("perm", tuple(int(p) for p in perm)),), (), 0, OPSET)


def to_channels_last(shape) -> tuple:
    """Steps taking the IR tensor of a channels-last (TFLite) shape to that shape."""
    shape = tuple(shape)
    if len(shape) == 4:
        return (transpose_step((0, 2, 3, 1)),)
    if len(shape) == 3:
        return (transpose_step((0, 2, 3, 1)), reshape_step(shape))
    if len(shape) == 2:
        return ()
    return (reshape_step(shape),)


def from_channels_last(shape) -> tuple:
    """Steps taking a channels-last (TFLite) tensor of `shape` to its IR layout."""
    shape = tuple(shape)
    if len(shape) == 4:
        return (transpose_step((0, 3, 1, 2)),)
    if len(shape) == 3:
        return (reshape_step((shape[0], 1) + shape[1:]), transpose_step((0, 3, 1, 2)))
    if len(shape) == 2:
        return ()
    return (reshape_step((1, int(np.prod(shape)) if shape else 1)),)


def channels_last_steps(src_shape, middle: tuple, dst_shape) -> tuple:
    """A TFLite data movement (ONNX steps `middle` on channels-last tensors) as steps on
    IR tensors."""
    return to_channels_last(src_shape) + tuple(middle) + from_channels_last(dst_shape)


def layout_steps(src_shape, dst_shape) -> tuple:
    """TFLite's RESHAPE (row-major order of channels-last tensors) on IR tensors."""
    return channels_last_steps(src_shape, (reshape_step(dst_shape),), dst_shape)


# ---- TFLite's data movements (ONNX steps on channels-last tensors) -------------------------

def gather_step(axis: int, indices) -> tuple:
    idx = tuple(int(i) for i in np.asarray(indices).reshape(-1))
    return ("Gather", (("axis", int(axis)),), ((1, "int64", (len(idx),), idx),), 0, OPSET)


def _tfl_move(w, op, middle, out_k=0, src_k=0, name=None):
    src = w.input_tensor(op, src_k)
    dst = w.tensor(op.outputs[out_k])
    x, out = w.act(op, src_k), w.out(op, out_k)
    if w.qparams[x] != w.qparams[out]:
        raise w.fail(op, f"input and output quantization differ ({w.qparams[x]} and "
                         f"{w.qparams[out]}); TFLite's {op.code} copies the values unchanged")
    return Op(name or op.label, "move", [x], out, op.code,
              attrs={"steps": channels_last_steps(src.shape, tuple(middle) + (reshape_step(dst.shape),),
                                                  dst.shape)})


def _ints(w, op, k, what):
    return [int(v) for v in np.asarray(w.const(op, k, what)).reshape(-1)]


def tfl_transpose(w, op):
    return _tfl_move(w, op, (transpose_step(_ints(w, op, 1, "perm")),))


def tfl_pad(w, op):
    """PAD / PADV2: constant padding (the output's zero point, or PADV2's value)."""
    shape = w.input_tensor(op, 0).shape
    pads = np.asarray(w.const(op, 1, "paddings"), dtype=np.int64).reshape(-1, 2)
    if pads.shape[0] != len(shape) or np.any(pads < 0):
        raise w.fail(op, f"paddings {pads.tolist()} do not fit an input of shape {list(shape)}")
    consts = [(1, "int64", (2 * len(shape),), tuple(pads[:, 0].tolist() + pads[:, 1].tolist()))]
    if op.code == "PADV2" and w.has_input(op, 2):
        c = w.input_tensor(op, 2, "constant_values")
        value = float(np.asarray(c.data).reshape(-1)[0])
        if c.quantized:
            value = (value - float(c.zero_point[0])) * float(c.scale[0])
        consts.append((2, "float64", (), (value,)))
    step = ("Pad", (("mode", "constant"),), tuple(consts), 0, OPSET)
    return _tfl_move(w, op, (step,))


def _slice_steps(shape, begin, end, stride) -> tuple:
    return tuple(gather_step(a, np.arange(b, e, s))
                 for a, (n, b, e, s) in enumerate(zip(shape, begin, end, stride))
                 if (b, e, s) != (0, n, 1))


def tfl_slice(w, op):
    shape = w.input_tensor(op, 0).shape
    begin, size = _ints(w, op, 1, "begin"), _ints(w, op, 2, "size")
    end = [n if s == -1 else b + s for n, b, s in zip(shape, begin, size)]
    if len(begin) != len(shape) or any(not 0 <= b <= e <= n for n, b, e in zip(shape, begin, end)):
        raise w.fail(op, f"begin {begin} and size {size} do not fit an input of shape {list(shape)}")
    return _tfl_move(w, op, _slice_steps(shape, begin, end, [1] * len(shape)))


def tfl_strided_slice(w, op):
    """STRIDED_SLICE with begin/end masks and shrink_axis_mask (the output's declared
    shape drops the shrunk axes); ellipsis and new-axis masks are refused."""
    o = op.options
    if int(o.get("ellipsis_mask", 0)) or int(o.get("new_axis_mask", 0)):
        raise w.fail(op, "ellipsis_mask and new_axis_mask are not supported")
    shape = w.input_tensor(op, 0).shape
    begin, end = _ints(w, op, 1, "begin"), _ints(w, op, 2, "end")
    stride = _ints(w, op, 3, "strides") if w.has_input(op, 3) else [1] * len(begin)
    if not len(begin) == len(end) == len(stride) <= len(shape) or 0 in stride:
        raise w.fail(op, f"begin {begin}, end {end}, strides {stride} do not fit shape {list(shape)}")
    offset = bool(o.get("offset", False))
    bm, em, sm = int(o.get("begin_mask", 0)), int(o.get("end_mask", 0)), int(o.get("shrink_axis_mask", 0))
    idx = []
    for a, n in enumerate(shape):
        if a >= len(begin):
            idx.append(np.arange(n))
            continue
        b, e, s = begin[a], end[a], stride[a]
        if offset:
            e = b + e
        if sm >> a & 1:
            b = b + n if b < 0 else b
            idx.append(np.array([b]))
            continue
        rng = range(n)
        sl = slice(None if bm >> a & 1 else b, None if em >> a & 1 else e, s)
        idx.append(np.asarray(rng[sl]))
    if any(i.size == 0 or i.min() < 0 or i.max() >= n for i, n in zip(idx, shape)):
        raise w.fail(op, f"the slice of shape {list(shape)} is empty or out of range")
    steps = tuple(gather_step(a, i) for a, (i, n) in enumerate(zip(idx, shape))
                  if not np.array_equal(i, np.arange(n)))
    return _tfl_move(w, op, steps)


def tfl_split(w, op):
    """SPLIT (axis tensor first) and SPLIT_V (sizes, axis): one gather per output."""
    if op.code == "SPLIT":
        axis, src_k = _ints(w, op, 0, "axis")[0], 1
    else:
        axis, src_k = _ints(w, op, 2, "axis")[0], 0
    shape = w.input_tensor(op, src_k).shape
    if not -len(shape) <= axis < len(shape):
        raise w.fail(op, f"axis {axis} is out of range for shape {list(shape)}")
    axis %= len(shape)
    result, start = [], 0
    for k in range(len(op.outputs)):
        n = w.tensor(op.outputs[k]).shape[axis]
        result.append(_tfl_move(w, op, (gather_step(axis, np.arange(start, start + n)),), out_k=k,
                                src_k=src_k, name=op.label if k == 0 else f"{op.label}_{k}"))
        start += n
    if start != shape[axis]:
        raise w.fail(op, f"outputs of {start} elements along axis {axis} do not cover the "
                         f"input's {shape[axis]}")
    return result


def nearest_indices(in_size: int, out_size: int, align_corners: bool, half_pixel: bool):
    """TFLite's nearest-neighbour source index of each output index (float32 as its
    reference kernel computes it)."""
    from ..reference.tflite_math import round_half_away
    f32 = np.float32
    scale = (f32(in_size - 1) / f32(out_size - 1) if align_corners and out_size > 1
             else f32(in_size) / f32(out_size))
    offset = f32(0.5) if half_pixel else f32(0.0)
    out = []
    for i in range(out_size):
        v = (f32(i) + offset) * scale
        k = int(round_half_away(v)) if align_corners else int(np.floor(v))
        k = min(k, in_size - 1)
        out.append(max(k, 0) if half_pixel else k)
    return out


def tfl_resize_nearest(w, op):
    shape = w.input_tensor(op, 0).shape
    if len(shape) != 4:
        raise w.fail(op, f"input of shape {list(shape)}; a 4-D NHWC tensor is expected")
    oh, ow = _ints(w, op, 1, "size")
    ac = bool(op.options.get("align_corners", False))
    hp = bool(op.options.get("half_pixel_centers", False))
    return _tfl_move(w, op, (gather_step(1, nearest_indices(shape[1], oh, ac, hp)),
                             gather_step(2, nearest_indices(shape[2], ow, ac, hp))))


TFLITE_MOVES = {"TRANSPOSE": tfl_transpose, "PAD": tfl_pad, "PADV2": tfl_pad,
                "SLICE": tfl_slice, "STRIDED_SLICE": tfl_strided_slice, "SPLIT": tfl_split,
                "SPLIT_V": tfl_split, "RESIZE_NEAREST_NEIGHBOR": tfl_resize_nearest}


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
            if (p is None or p.kind not in ("move", "reshape") or p.output in g.outputs
                    or g.consumers(p.output) != [op]):
                break
            op.attrs["steps"] = steps_of(p) + op.attrs["steps"]
            op.inputs = list(p.inputs)
            op.fused = [p.name] + p.fused + op.fused
            op.source_ops = p.source_ops + op.source_ops
            g.ops.remove(p)
        while op.output not in g.outputs:
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
    # a Split's (output, outputs): without sizes it makes as many equal parts as the node
    # has outputs (opset < 18), so the evaluated node needs all of them
    out_index, n_out = out_index if isinstance(out_index, tuple) else (out_index, out_index + 1)
    names = {pos: f"c{pos}" for pos, _, _, _ in consts}
    inits = [numpy_helper.from_array(np.asarray(v, dtype).reshape(s), names[pos])
             for pos, dtype, s, v in consts]
    n_in = max([0] + list(names)) + 1
    inputs = ["x"] + [names.get(i, "") for i in range(1, n_in)]
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
        if step[0] == "__where__":   # Where(constant mask, x, one constant value)
            a = dict(step[1])
            x = np.where(np.asarray(a["mask"], bool).reshape(a["mask_shape"]), x, a["value"])
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
    steps = tuple((t, tuple((k, 0.0 if k == "value" else v) for k, v in a), c, i, o)
                  if t == "__where__" else (t, a, c, i, o) for t, a, c, i, o in steps)   # fills: 0 -> -1
    idx = apply_steps(steps, np.arange(n, dtype=np.float64).reshape(in_shape) + 1.0)
    if any(s[0] == "Pad" for s in steps):
        idx = np.where(fill_steps(steps, in_shape), 0.0, idx)
    return (idx - 1).astype(np.int64)


def fill_values(steps) -> set:
    """The constants a chain's steps put in the output (a Pad's value, a Where's)."""
    out = set()
    for t, a, c, k, o in steps:
        if t == "__where__":
            out.add(float(dict(a)["value"]))
        elif t == "Pad" and X.text(dict(a).get("mode", "constant")) == "constant":
            out.add(_pad_value((t, a, c, k, o)))
    return out


def _pad_value(step) -> float:
    return pad_value((step,))


def pad_value(steps) -> float:
    for t, a, c, k, o in steps:
        if t == "__where__":
            return float(dict(a)["value"])
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
    if len(fill_values(op.attrs["steps"])) > 1 and (idx < 0).any():
        raise g.fail(op, f"the data movement puts several constants ({sorted(fill_values(op.attrs['steps']))}: "
                         f"constant Pads, Where) in its output; one constant per chain is supported")
    if idx.size == 0:
        raise g.fail(op, f"result shape {idx.shape} is empty (a Slice or Split outside "
                         f"the tensor?); an empty tensor has nothing to compute")
    return idx.shape


def lower(g, op, layer):
    from .lut import table
    in_q, out_q = g.qparams[op.inputs[0]], g.qparams[op.output]
    if g.numerics == "tflite":     # TFLite's data movements copy the codes unchanged
        in_q = out_q
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


def layout_index(layer, graph, layout: str, tensor_layouts: dict) -> np.ndarray:
    """A gather index (ops.move: output element -> input NCHW element, -1 = fill) in a
    target's activation layout: output slot -> input slot (tensor_layouts: the target's
    flattened views, tensor_layout.flattened_layouts)."""
    tl = tensor_layouts
    src = graph.tensor(layer.inputs[0]).shape
    n = int(np.prod(src))
    slots = to_layout(np.arange(n).reshape(src), layout, tl.get(layer.inputs[0]))
    pos = np.empty(n, dtype=np.int64)
    pos[slots] = np.arange(n)
    idx = to_layout(index(layer, graph), layout, tl.get(layer.output))
    return np.where(idx < 0, -1, pos[np.maximum(idx, 0)]).astype(np.int32)


def hwc_params(layer, graph, op_def) -> dict:
    """The gather index in HWC slots."""
    return {"index": layout_index(layer, graph, "hwc", flattened_layouts(graph, op_def))}


OPS = [OpDef("move", onnx={t: convert for t in MOVES if t not in ("Split", "Pad")} | {"Split": split},
             tflite=TFLITE_MOVES,
             attrs=("steps", "in_shape"), shape=shape, reference=reference, lower=lower,
             requant=params, counts=lambda layer, graph: {"index": int(np.prod(
                 graph.tensor(layer.output).shape))},
             export=export, range_preserving=True, calib_inherit=True, selects=True, hwc_params=hwc_params,
             doc="steps in_shape fill  (data movement as a gather: index int32 per output "
                 "element in the .bin, -1 = fill; weight: the (1, 256) requant table)")]
