"""Shape inference on the pre-IR graph (batch 1; 4-D NCHW or 2-D (1, F) tensors).

Our own rules rather than onnx shape inference: they are the rules the reference and the
kernels implement, and every mismatch becomes a ModelError naming the node.
"""
from __future__ import annotations

import math

from .opgraph import OpGraph


def _pool_out(size, k, s, p0, p1, dil, ceil_mode):
    span = size + p0 + p1 - dil * (k - 1) - 1
    out = (math.ceil(span / s) if ceil_mode else span // s) + 1
    if ceil_mode and (out - 1) * s >= size + p0:   # last window must start inside input or left pad
        out -= 1
    return out


def _spatial(g, op, x, dilation=(1, 1), ceil_mode=0):
    kh, kw = op.attrs["kernel"]
    sh, sw = op.attrs["stride"]
    pt, pl, pb, pr = op.attrs["pads"]
    h = _pool_out(x[2], kh, sh, pt, pb, dilation[0], ceil_mode)
    w = _pool_out(x[3], kw, sw, pl, pr, dilation[1], ceil_mode)
    if h < 1 or w < 1:
        raise g.fail(op, f"kernel {kh}x{kw} does not fit input {x[2]}x{x[3]} with pads "
                         f"{op.attrs['pads']}; check the input shape")
    return h, w


def _need_rank(g, op, x, rank, what):
    if len(x) != rank:
        raise g.fail(op, f"expects a {rank}-D input ({what}) but got shape {x}")


def _conv2d(g, op, ins):
    x = ins[0]
    _need_rank(g, op, x, 4, "N,C,H,W")
    o, i_per_group = op.weight.shape[:2]
    groups = op.attrs["groups"]
    if x[1] != i_per_group * groups or o % groups:
        raise g.fail(op, f"weight {op.weight.shape} with group={groups} does not match "
                         f"input channels {x[1]}")
    return (1, o) + _spatial(g, op, x, op.attrs["dilation"])


def _linear(g, op, ins):
    x = ins[0]
    _need_rank(g, op, x, 2, "1,F; add a Flatten before it")
    if x[1] != op.weight.shape[1]:
        raise g.fail(op, f"weight {op.weight.shape} expects {op.weight.shape[1]} input "
                         f"features but the input has {x[1]}")
    return (1, op.weight.shape[0])


def _pool(g, op, ins):
    _need_rank(g, op, ins[0], 4, "N,C,H,W")
    return (1, ins[0][1]) + _spatial(g, op, ins[0], ceil_mode=op.attrs["ceil_mode"])


def _global_avgpool(g, op, ins):
    _need_rank(g, op, ins[0], 4, "N,C,H,W")
    return (1, ins[0][1], 1, 1)


def _same(g, op, ins):
    if any(s != ins[0] for s in ins[1:]):
        raise g.fail(op, f"inputs must have identical shapes (no broadcasting), got {ins}")
    return ins[0]


def _axis(g, op, rank, axis, allowed):
    """Normalize a possibly negative axis; it must be one of `allowed`."""
    if (axis + rank if axis < 0 else axis) not in allowed:
        raise g.fail(op, f"axis {axis} is not supported for a rank-{rank} input "
                         f"(supported: {allowed})")


def _concat(g, op, ins):
    _axis(g, op, len(ins[0]), op.attrs["axis"], (1,))
    op.attrs["axis"] = 1
    rest = {s[:1] + s[2:] for s in ins}
    if len(rest) != 1:
        raise g.fail(op, f"inputs must agree on every axis but 1, got {ins}")
    return (1, sum(s[1] for s in ins)) + ins[0][2:]


def _reshape(g, op, ins):
    x = ins[0]
    if "flatten_axis" in op.attrs:   # batch 1: Flatten on axis 0 or 1 both give (1, N)
        _axis(g, op, len(x), op.attrs["flatten_axis"], (0, 1))
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


RULES = {"conv2d": _conv2d, "linear": _linear, "maxpool": _pool, "avgpool": _pool,
         "global_avgpool": _global_avgpool, "add": _same, "requant": _same, "clamp": _same,
         "concat": _concat, "reshape": _reshape}


def infer_shapes(g: OpGraph) -> None:
    g.shapes = {g.input: tuple(g.input_shape)}
    for op in g.ops:
        ins = [g.shapes[t] for t in op.inputs]
        g.shapes[op.output] = tuple(int(d) for d in RULES[op.kind](g, op, ins))
