"""reshape: ONNX Flatten/Reshape; byte-for-byte the same data (an alias of its input)."""
from __future__ import annotations

import math

import numpy as np

from ..opkit import onnx_operands as X
from ..opkit.onnx_attrs import attributes
from ..opkit.opgraph import Op
from ..opkit.shapes import check_axis
from ..reference import eltwise as ref
from ..opkit.opdef import OpDef


def flatten(w, name, node, ins, out):
    axis = int(attributes(node).get("axis", 1))
    return Op(name, "reshape", [X.activation(w, name, node, ins[0])], out, node.op_type,
              attrs={"shape": (1, -1), "flatten_axis": axis})


def reshape(w, name, node, ins, out):
    shape = w.const(ins[1], name, node, "shape")
    if attributes(node).get("allowzero", 0) and 0 in shape:
        raise w.fail(name, node, "allowzero=1 with a 0 in the shape is not supported")
    return Op(name, "reshape", [X.activation(w, name, node, ins[0])], out, node.op_type,
              attrs={"shape": tuple(int(d) for d in np.asarray(shape).reshape(-1))})


def tfl_reshape(w, op):
    """RESHAPE / SQUEEZE / EXPAND_DIMS: the same elements in TFLite's order, to the shape
    the file declares for the output (an alias or a gather, frontends.tflite_graph)."""
    src = w.input_tensor(op, 0)
    dst = w.tensor(op.outputs[0])
    x, out = w.act(op, 0), w.out(op)
    if w.qparams[x] != w.qparams[out]:
        raise w.fail(op, f"input and output quantization differ ({w.qparams[x]} and "
                         f"{w.qparams[out]}); TFLite's {op.code} copies the values unchanged")
    if int(np.prod(src.shape)) != int(np.prod(dst.shape)):
        raise w.fail(op, f"cannot reshape {list(src.shape)} to {list(dst.shape)}")
    return w.relayout(op, x, src.shape, dst.shape, out)


def shape_rule(g, op, ins):
    x = ins[0]
    if "flatten_axis" in op.attrs:   # batch 1: Flatten on axis 0 or 1 both give (1, N)
        check_axis(g, op, len(x), op.attrs["flatten_axis"], (0, 1))
    shape = list(op.attrs["shape"])
    for i, d in enumerate(shape):
        if d == 0:
            if i >= len(x):
                raise g.fail(op, f"shape {op.attrs['shape']}: 0 at axis {i} has no input dim to copy")
            shape[i] = x[i]
    total = math.prod(x)
    if shape.count(-1) > 1 or any(d < -1 for d in shape):
        raise g.fail(op, f"invalid target shape {op.attrs['shape']}")
    if -1 in shape:
        known = math.prod(d for d in shape if d != -1)
        if known == 0 or total % known:
            raise g.fail(op, f"cannot reshape {x} to {op.attrs['shape']}")
        shape[shape.index(-1)] = total // known
    shape = tuple(shape)
    if math.prod(shape) != total:
        raise g.fail(op, f"cannot reshape {x} ({total} elements) to {shape}")
    if len(shape) not in (2, 4) or shape[0] != 1:
        raise g.fail(op, f"result shape {shape} is not (1, F) or (1, C, H, W)")
    op.attrs["shape"] = shape
    return shape


def export(w, layer, ins, core_out):
    shape = w.const(f"{layer.name}_shape", np.array(layer.attrs["shape"], dtype=np.int64))
    w.node("Reshape", ins + [shape], [core_out], layer.name, exact_name=True)


OPS = [OpDef("reshape", onnx={"Flatten": flatten, "Reshape": reshape}, attrs=("shape",),
             tflite={t: tfl_reshape for t in ("RESHAPE", "SQUEEZE", "EXPAND_DIMS")},
             shape=shape_rule, reference=ref.reshape, export=export, range_preserving=True,
             calib_inherit=True, alias=True, selects=True,
             doc="shape=(...)  (Flatten/Reshape: byte-for-byte the same data)")]
