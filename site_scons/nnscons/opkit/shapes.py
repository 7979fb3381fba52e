"""The shape checks the ops' shape rules share (window output size, auto_pad SAME, rank and
axis checks); the pass that runs the rules is passes.shapes."""
from __future__ import annotations

import math

def _pool_out(size, k, s, p0, p1, dil, ceil_mode):
    span = size + p0 + p1 - dil * (k - 1) - 1
    out = (math.ceil(span / s) if ceil_mode else span // s) + 1
    if ceil_mode and (out - 1) * s >= size + p0:   # last window must start inside input or left pad
        out -= 1
    return out


def same_pads(size: int, k: int, stride: int, dilation: int, lower: bool) -> tuple:
    """ONNX auto_pad SAME_UPPER/SAME_LOWER: the output is ceil(size / stride), the odd
    padding element at the end (UPPER) or the beginning (LOWER)."""
    total = max(0, (-(-size // stride) - 1) * stride + (k - 1) * dilation + 1 - size)
    small = total // 2
    return (total - small, small) if lower else (small, total - small)


def spatial(g, op, x, dilation=(1, 1), ceil_mode=0):
    kh, kw = op.attrs["kernel"]
    sh, sw = op.attrs["stride"]
    auto_pad = op.attrs.pop("auto_pad", None)
    if auto_pad is not None:        # opkit.onnx_operands.window: now the input size is known
        lower = auto_pad == "SAME_LOWER"
        (pt, pb), (pl, pr) = (same_pads(x[2], kh, sh, dilation[0], lower),
                              same_pads(x[3], kw, sw, dilation[1], lower))
        op.attrs["pads"] = (pt, pl, pb, pr)
    pt, pl, pb, pr = op.attrs["pads"]
    h = _pool_out(x[2], kh, sh, pt, pb, dilation[0], ceil_mode)
    w = _pool_out(x[3], kw, sw, pl, pr, dilation[1], ceil_mode)
    if h < 1 or w < 1:
        raise g.fail(op, f"kernel {kh}x{kw} does not fit input {x[2]}x{x[3]} with pads "
                         f"{op.attrs['pads']}; check the input shape")
    return h, w


def need_rank(g, op, x, rank, what):
    if len(x) != rank:
        raise g.fail(op, f"expects a {rank}-D input ({what}) but got shape {x}")


def check_axis(g, op, rank, axis, allowed):
    """Normalize a possibly negative axis; it must be one of `allowed`."""
    if (axis + rank if axis < 0 else axis) not in allowed:
        raise g.fail(op, f"axis {axis} is not supported for a rank-{rank} input "
                         f"(supported: {allowed})")
