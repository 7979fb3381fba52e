"""ConvTranspose (2-D, group 1) as a data movement that spreads the input with zeros
(ops.move, a '__stuff__' step: stride - 1 zeros between elements, exactly the zero point)
followed by a stride-1 conv2d with the kernel flipped and its channel axes swapped. Both
halves are exact in integers, so the result is the QDQ ConvTranspose's."""
from __future__ import annotations

import numpy as np

from ..frontends import onnx_ops as X
from ..frontends.onnx_file import attributes
from ..passes.opgraph import Op


def convert(w, name, node, ins, out):
    a = X.window_1d_as_2d(attributes(node))
    if int(a.get("group", 1)) != 1:
        raise w.fail(name, node, f"group={a['group']} is not supported (only 1)")
    if "output_shape" in a or X.text(a.get("auto_pad", "NOTSET")) != "NOTSET":
        raise w.fail(name, node, "output_shape and auto_pad are not supported; use explicit pads")
    weight, wq = X.weight(w, name, node, ins[1], 1, 4)       # (Cout, Cin, kh, kw)
    kh, kw = weight.shape[2:]
    sh, sw = (int(v) for v in a.get("strides", (1, 1)))
    dh, dw = (int(v) for v in a.get("dilations", (1, 1)))
    pt, pl, pb, pr = (int(v) for v in a.get("pads", (0, 0, 0, 0)))
    oph, opw = (int(v) for v in a.get("output_padding", (0, 0)))
    pads = (dh * (kh - 1) - pt, dw * (kw - 1) - pl, dh * (kh - 1) - pb + oph,
            dw * (kw - 1) - pr + opw)
    if min(pads) < 0:
        raise w.fail(name, node, f"pads {a.get('pads')} larger than the dilated kernel are "
                                 f"not supported")
    weight = weight[:, :, ::-1, ::-1].copy()
    if wq is not None:
        wq = (np.ascontiguousarray(wq[0][:, :, ::-1, ::-1]), wq[1])
    bias, bq = X.bias(w, name, node, ins[2] if len(ins) > 2 else "", weight.shape[0])
    x = X.activation(w, name, node, ins[0])
    spread = f"{out}__spread"
    ops = []
    if (sh, sw) != (1, 1):
        ops.append(Op(f"{name}_spread", "move", [x], spread, node.op_type,
                      attrs={"steps": (("__stuff__", (("strides", (sh, sw)),), (), 0, 0),)}))
        x = spread
    ops.append(Op(name, "conv2d", [x], out, node.op_type,
                  attrs={"kernel": (kh, kw), "stride": (1, 1), "dilation": (dh, dw),
                         "pads": pads, "groups": 1},
                  weight=weight, bias=bias, weight_q=wq, bias_q=bq))
    return ops


OPS = []
CONVERTERS = {"ConvTranspose": convert}
