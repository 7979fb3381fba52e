"""nary: ONNX Sum / Max / Min of N activations (N >= 2), each broadcast to the output as
the same shape, per channel or one value.

Integer semantics (one rounding, as the QDQ graph's one QuantizeLinear):
  sum      clamp(zp_out + rshift_round(sum_i (x_i - z_i) * M_i, s))   with M_i for
           s_i / s_out at one common shift s (the larger multiplier's, as ops/add.py):
           a chain of two-input adds would round after each add, this rounds once
  max/min  max_i / min_i of clamp(zp_out + rshift_round((x_i - z_i) * M_i, s_i)): the
           quantization is monotonic, so Q(max_i real_i) = max_i Q(real_i) exactly.
Sum of one input is a requant, Sum of two equal shapes an add (ops/add.py); Sum/Max/Min
of two with one constant operand a lookup table (ops/lut.py).
"""
from __future__ import annotations

import numpy as np

from .. import numerics
from ..opkit import onnx_operands as X
from ..opkit.opgraph import Op
from ..opkit.opdef import OpDef
from ._common import n_out, pair, per_input_counts, zp

FNS = {"Sum": "sum", "Max": "max", "Min": "min"}
CODES = {"sum": 0, "max": 1, "min": 2}               # the kernel's fn argument
MODES = {"same": 0, "channel": 1, "scalar": 2}       # how an input broadcasts


def convert(w, name, node, ins, out):
    from .lut import const_binary
    op = const_binary(w, name, node, ins, out)    # two operands, one constant: a table
    if op is not None:
        return op
    if len(ins) == 1:
        return Op(name, "requant", [X.activation(w, name, node, ins[0])], out, node.op_type)
    return Op(name, "nary", [X.activation(w, name, node, t) for t in ins], out, node.op_type,
              attrs={"fn": FNS[node.op_type]})


def modes_of(shapes, out_shape):
    """Each input's broadcast mode towards out_shape, or None where it has another."""
    modes = []
    for s in shapes:
        full = (1,) * (len(out_shape) - len(s)) + tuple(s)
        if full == tuple(out_shape):
            modes.append("same")
        elif all(d == 1 for d in full):
            modes.append("scalar")
        elif (len(out_shape) >= 2 and full[1] == out_shape[1]
              and all(d == 1 for i, d in enumerate(full) if i != 1)):
            modes.append("channel")
        else:
            modes.append(None)
    return modes


def shape(g, op, ins):
    try:
        out = tuple(np.broadcast_shapes(*[tuple(s) for s in ins]))
    except ValueError:
        raise g.fail(op, f"operand shapes {[tuple(s) for s in ins]} do not broadcast") from None
    modes = modes_of(ins, out)
    if None in modes:
        bad = tuple(ins[modes.index(None)])
        raise g.fail(op, f"operand of shape {bad} broadcasts over {out} along other axes than "
                         f"the channels; supported: same shape, per channel, one value")
    if len(out) not in (2, 4):
        raise g.fail(op, f"result shape {out} is not (1, F) or (1, C, H, W)")
    op.attrs["modes"] = tuple(modes)
    if op.attrs["fn"] == "sum" and modes == ["same", "same"]:
        op.kind, op.attrs = "add", {}     # the same arithmetic, on add's vector kernels
    return out


def requant(layer, graph) -> dict:
    """mult[N], shift[N]: m_i = s_i / s_out; for sum one common shift (repeated)."""
    out = graph.tensor(layer.output).q.scale
    m = [graph.tensor(t).q.scale / out for t in layer.inputs]
    if layer.attrs["fn"] != "sum":
        return pair([numerics.quantize_multiplier(x) for x in m])
    _, s = numerics.quantize_multiplier(max(m))
    return pair([(numerics.multiplier_with_shift(x, s), s) for x in m])


def reference(layer, graph, inputs):
    out_shape = graph.tensor(layer.output).shape
    p = requant(layer, graph)
    zp_out = zp(graph, layer.output)
    xs = [np.broadcast_to(x.astype(np.int64) - zp(graph, t), out_shape)
          for t, x in zip(layer.inputs, inputs)]
    if layer.attrs["fn"] == "sum":
        acc = sum(x * np.int64(m) for x, m in zip(xs, p["mult"]))
        out = numerics.rshift_round(acc, int(p["shift"][0])) + zp_out
        return np.clip(out, layer.act_min, layer.act_max).astype(np.int8)
    each = [numerics.requantize(x, m, s, zp_out, layer.act_min, layer.act_max)
            for x, m, s in zip(xs, p["mult"], p["shift"])]
    pick = np.maximum if layer.attrs["fn"] == "max" else np.minimum
    return pick.reduce(np.stack(each)).astype(np.int8)


def export(w, layer, ins, core_out):
    op_type = {v: k for k, v in FNS.items()}[layer.attrs["fn"]]
    w.node(op_type, ins, [core_out], layer.name, exact_name=True)


def spec(layer, graph) -> dict:
    """The kernel's fn and each input's mode (a template walks the output as outer x C x
    inner in its layout: HWC outer H*W, CHW inner H*W)."""
    return {"fn_code": CODES[layer.attrs["fn"]], "modes": [MODES[m] for m in layer.attrs["modes"]]}


OPS = [OpDef("nary", onnx={t: convert for t in FNS}, attrs=("fn", "modes"), shape=shape,
             reference=reference, requant=requant, counts=per_input_counts, macs=n_out,
             export=export, fusable=True,
             doc="fn (sum, max, min) modes (per input: same, channel, scalar)")]
