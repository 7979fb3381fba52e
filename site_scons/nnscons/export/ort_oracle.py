"""Run a QDQ ONNX model in onnxruntime and expose its quantized activations.

run_intermediates keys every QuantizeLinear output by the IR tensor name the frontend gives
that tensor (same walk as nnscons.frontends), in the int8 domain (uint8 - 128), so it can be
compared tensor by tensor with nnscons.reference.run_graph.
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper

from ..frontends.onnx_file import read_onnx
from ..frontends.onnx_graph import OnnxWalker


def _session(model: bytes):
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.log_severity_level = 3
    return ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])


def run(model_path: str, x: np.ndarray) -> np.ndarray:
    """The model's float output for float input x."""
    with open(model_path, "rb") as fh:
        sess = _session(fh.read())
    return sess.run(None, {sess.get_inputs()[0].name: np.asarray(x, dtype=np.float32)})[0]


def _q_type(proto: onnx.ModelProto, node: onnx.NodeProto) -> int:
    inits = {i.name: i.data_type for i in proto.graph.initializer}
    if len(node.input) > 2 and node.input[2] in inits:
        return inits[node.input[2]]
    return TensorProto.UINT8   # ONNX default when the zero point is omitted


def run_intermediates(model_path: str, x_float: np.ndarray) -> dict:
    """{IR tensor name: int8 array} for every QuantizeLinear on an activation."""
    x_float = np.asarray(x_float, dtype=np.float32)
    f = read_onnx(model_path, x_float.shape)
    walker = OnnxWalker(f)
    walker.walk()
    proto = onnx.ModelProto()
    proto.CopyFrom(f.proto)
    q_nodes = {n.output[0]: n for n in proto.graph.node if n.op_type == "QuantizeLinear"}
    outputs = [t for t in q_nodes if t in walker.q_names]
    for node in proto.graph.node:   # onnxruntime rejects duplicate node names; it needs none
        node.name = ""
    existing = {o.name for o in proto.graph.output}
    proto.graph.output.extend(helper.make_tensor_value_info(t, _q_type(proto, q_nodes[t]), None)
                              for t in outputs if t not in existing)
    sess = _session(proto.SerializeToString())
    values = sess.run(outputs, {f.input: x_float})
    result = {}
    for t, v in zip(outputs, values):
        if v.dtype == np.uint8:
            v = (v.astype(np.int16) - 128)
        result[walker.q_names[t]] = v.astype(np.int8)
    return result
