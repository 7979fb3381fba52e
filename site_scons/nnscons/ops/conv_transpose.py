"""ConvTranspose (2-D, group 1) as a data movement that spreads the input with zeros
(ops.move, a '__stuff__' step: stride - 1 zeros between elements, exactly the zero point)
followed by a stride-1 conv2d with the kernel flipped and its channel axes swapped. Both
halves are exact in integers, so the result is the QDQ ConvTranspose's."""
from __future__ import annotations

import numpy as np

from ..opkit import onnx_operands as X
from ..opkit import onnx_qoperator
from ..opkit.onnx_attrs import attributes
from ..opkit.opgraph import Op


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


def tfl_transpose_conv(w, op):
    """TRANSPOSE_CONV (inputs: output_shape, weights (O, KH, KW, I), input[, bias]): TFLite
    pads as a forward conv from the output to the input would, the odd pixel at the end;
    the same spread + flipped-kernel conv, with TFLite's per-channel requantization."""
    from ..opkit import tflite_ops as T
    out_shape = [int(v) for v in np.asarray(w.const(op, 0, "output_shape")).reshape(-1)]
    wt = w.input_tensor(op, 1, "weights")
    x_shape = w.input_tensor(op, 2).shape
    if len(wt.shape) != 4 or len(x_shape) != 4 or len(out_shape) != 4 or wt.shape[3] != x_shape[3]:
        raise w.fail(op, f"weights {list(wt.shape)}, input {list(x_shape)} and output shape "
                         f"{out_shape} do not fit (O, KH, KW, I), NHWC")
    q, scale = T.weights(w, op, 1, wt.shape[0], 0)
    kh, kw = wt.shape[1:3]
    o = op.options
    sh, sw = int(o.get("stride_h", 1)), int(o.get("stride_w", 1))
    win = T.window(w, op, out_shape[1:3], (kh, kw), (sh, sw), (1, 1))   # as a forward conv
    pt, pl = win["pads"][0], win["pads"][1]
    pb = (x_shape[1] - 1) * sh + kh - pt - out_shape[1]
    pr = (x_shape[2] - 1) * sw + kw - pl - out_shape[2]
    pads = (kh - 1 - pt, kw - 1 - pl, kh - 1 - pb, kw - 1 - pr)
    if min(pads) < 0:
        raise w.fail(op, f"output shape {out_shape} needs a crop the lowering does not make")
    wq = np.ascontiguousarray(q.transpose(0, 3, 1, 2)[:, :, ::-1, ::-1])
    x = w.act(op, 2)
    bias, bq = T.bias(w, op, 3, wt.shape[0], w.qparams[x].scale, scale)
    out = w.out(op)
    ops = []
    if (sh, sw) != (1, 1):
        spread = w.fresh(f"{out}__spread")
        w.qparams[spread] = w.qparams[x]
        ops.append(Op(f"{op.label}_spread", "move", [x], spread, op.code,
                      attrs={"steps": (("__stuff__", (("strides", (sh, sw)),), (), 0, 0),)}))
        x = spread
    ops.append(Op(op.label, "conv2d", [x], out, op.code,
                  attrs={"kernel": (kh, kw), "stride": (1, 1), "dilation": (1, 1), "pads": pads,
                         "groups": 1},
                  weight=wq.astype(np.float64) * scale.reshape(-1, 1, 1, 1), bias=bias,
                  weight_q=(wq, scale), bias_q=bq, act_range=w.act_range(op)))
    return ops


OPS = []
CONVERTERS = {"ConvTranspose": convert} | onnx_qoperator.converters("QLinearConvTranspose")
TFLITE_CONVERTERS = {"TRANSPOSE_CONV": tfl_transpose_conv}
