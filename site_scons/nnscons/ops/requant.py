"""requant (elementwise rescale + clamp) and the pre-IR clamp (Relu/Clip in real values)
that fuses into its producer or is lowered to a requant."""
from __future__ import annotations

from ..opkit import onnx_operands as X
from ..opkit.onnx_attrs import attributes
from ..opkit.opgraph import Op
from ..reference import eltwise as ref
from ..opkit.opdef import DONE, OpDef
from ._common import first_input_shape, single_counts, single_requant, with_requant


def relu(w, name, node, ins, out):
    return Op(name, "clamp", [X.activation(w, name, node, ins[0])], out, node.op_type,
              attrs={"lo": 0.0, "hi": None})


def clip(w, name, node, ins, out):
    if w.f.opset < 11:
        a = attributes(node)
        lo, hi = a.get("min"), a.get("max")
    else:
        lo, hi = (float(w.const(ins[i], name, node, what)) if len(ins) > i and ins[i] else None
                  for i, what in ((1, "min"), (2, "max")))
    return Op(name, "clamp", [X.activation(w, name, node, ins[0])], out, node.op_type,
              attrs={"lo": lo, "hi": hi})


def lower_clamp(g, op, layer):
    from ..opkit.opgraph import clamp_bounds
    layer.act_min, layer.act_max = clamp_bounds(op.attrs["lo"], op.attrs["hi"],
                                                g.qparams[op.output])


def export(w, layer, ins, core_out):
    if layer.act_min == -128 and layer.act_max == 127:   # a pure QuantizeLinear
        t = layer.output
        q_out = w.names.fresh(f"{t}_q") if t in w.g.outputs else t
        w.qdq(t, ins[0], q_name=layer.name, q_out=q_out)
        return DONE
    return ins[0]


OPS = [
    OpDef("requant", shape=first_input_shape, reference=with_requant(ref.requant, single_requant),
          requant=single_requant,
          counts=single_counts, export=export, range_preserving=True, selects=True,
          doc="-  (elementwise rescale + clamp: standalone Relu/Clip, or a change of "
              "quantization)"),
    OpDef("clamp", ir=False, onnx={"Relu": relu, "Clip": clip}, shape=first_input_shape,
          lowers_to="requant", lower=lower_clamp, activation=True, range_preserving=True,
          selects=True,
          doc="real-valued Relu/Clip (attrs lo/hi, None = unbounded)"),
]
