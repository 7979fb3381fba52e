"""An ONNX node's attributes as Python values (a leaf: the frontends and ops modules share it)."""
from __future__ import annotations

import onnx
from onnx import helper


def attributes(node: onnx.NodeProto) -> dict:
    return {a.name: helper.get_attribute_value(a) for a in node.attribute}
