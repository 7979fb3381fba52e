"""The dispatch from an ONNX node to its converter (the op registry's for_onnx); the
operand readers the converters share are opkit.onnx_operands."""
from __future__ import annotations

from .. import ops
from ..opkit.opgraph import Op

# Handled by the graph walker itself, not by a converter.
WALKER_OPS = ("Identity", "Dropout", "QuantizeLinear", "DequantizeLinear", "Constant", "Cast")


def supported_list() -> str:
    return "supported ops: " + ", ".join(sorted(ops.onnx_types() + WALKER_OPS))


def convert(w, name, node, ins, out) -> Op:
    fn = ops.for_onnx(node.op_type)
    if fn is None:
        raise w.fail(name, node, f"op type {node.op_type!r} is not supported; "
                                 f"{supported_list()}")
    if getattr(fn, "multi_output", False):   # gets every output, returns a list of Ops
        return fn(w, name, node, ins, list(node.output))
    return fn(w, name, node, ins, out)


def is_multi_output(op_type: str) -> bool:
    return getattr(ops.for_onnx(op_type), "multi_output", False)
