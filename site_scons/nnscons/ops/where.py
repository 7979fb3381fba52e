"""Where(constant condition, X, Y) with one of X, Y an activation and the other one constant
value: a `move` (ops/move.py) whose masked-out elements are that constant; its step
"__where__" is evaluated by move.apply_steps."""
from __future__ import annotations

import numpy as np

from ..opkit import onnx_operands as X
from ..opkit.opgraph import Op
from .move import OPSET, _not_rank_3


def where(w, name, node, ins, out):
    """Where(constant condition, X, Y) with one of X, Y an activation and the other one
    constant value (a masked fill as torch exports it): a move whose masked-out elements are
    that constant (quantized at the output's parameters, as ONNX's QuantizeLinear rounds it)."""
    if not w.is_const(ins[0]):
        raise w.fail(name, node, "Where with a computed condition is not supported; supported: a "
                                 "constant condition, one of X/Y an activation and the other one constant value")
    cond = np.asarray(w.const(ins[0], name, node, "condition")).astype(bool)
    consts = [w.is_const(t) for t in ins[1:3]]
    if consts.count(True) != 1:
        raise w.fail(name, node, "Where needs exactly one of X/Y an activation and the other a constant "
                                 "(one value); supported: a masked fill")
    k = consts.index(True)
    value = np.asarray(w.const(ins[1 + k], name, node, "value"), dtype=np.float64)
    if value.size != 1:
        raise w.fail(name, node, f"Where's constant operand has {value.size} values; supported: one value")
    x = X.activation(w, name, node, ins[2 - k])
    _not_rank_3(w, name, node, x)
    mask = cond if k == 1 else ~cond      # True: the activation's element
    step = ("__where__", (("mask", tuple(int(b) for b in mask.reshape(-1))), ("mask_shape", mask.shape),
                          ("value", float(value.reshape(-1)[0]))), (), 0, OPSET)
    return Op(name, "move", [x], out, node.op_type, attrs={"steps": (step,)})


CONVERTERS = {"Where": where}
