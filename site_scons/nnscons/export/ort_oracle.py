"""The oracle: ONNX QDQ semantics, evaluated in a way that does not depend on the CPU.

Three evaluations of a QDQ model, from the most exact to the one users usually run:

* exact (`exact=True`): the QDQ graph rewritten to float64 (DequantizeLinear as
  Cast/Sub/Mul, QuantizeLinear as Div/Round/Add/Max/Min/Cast, every float tensor double) and
  run by onnx's reference evaluator.  This is the arithmetic the ONNX spec describes, with
  no float32 drift: on deep networks onnxruntime's float32 evaluation of the same graph
  slips 1 to 2 LSB.  Whole-network comparisons use it.
* unoptimized onnxruntime (`exact=False`, the default of run()): graph optimizations
  disabled, so each QDQ op runs on its own in float32.  Agrees with `exact` within 1 LSB
  per op; the per-op tests use it.
* optimized onnxruntime (run_optimized): onnxruntime's default session, which fuses
  Q/DQ around Conv/Gemm into QLinearConv/QGemm.  On x86 CPUs without VNNI those kernels
  use u8 x s8 `vpmaddubsw`, which saturates int16 pair sums: the result depends on the
  CPU.  Only the documenting test and the benchmarks use it, never as a verdict.

A model in onnxruntime's QOperator form (QLinearConv, QGemm, ...) is first spelled as the QDQ
graph it stands for (opkit/onnx_qoperator.to_qdq); the evaluations above then apply.

run_intermediates keys every QuantizeLinear output by the IR tensor name the frontend
gives that tensor (same walk as nnscons.frontends), in the int8 domain (uint8 - 128), so it
can be compared tensor by tensor with nnscons.reference.run_graph.
"""
from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from ..frontends.onnx_file import cap_ir_version, read_onnx
from ..frontends.onnx_graph import OnnxWalker
from ..opkit.onnx_qoperator import to_qdq

_QRANGE = {TensorProto.INT8: (-128, 127), TensorProto.UINT8: (0, 255)}


def _session(model: bytes, optimized: bool = False):
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.log_severity_level = 3
    if not optimized:
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])


def _read(model_path: str) -> bytes:
    with open(model_path, "rb") as fh:
        return fh.read()


def run(model_path: str, x: np.ndarray, exact: bool = False) -> np.ndarray:
    """The model's float output for float input x: exact (float64 QDQ) or onnxruntime
    with graph optimizations disabled."""
    x = np.asarray(x, dtype=np.float32)
    proto = cap_ir_version(to_qdq(onnx.load_from_string(_read(model_path))))
    if exact:
        name = proto.graph.input[0].name
        out = proto.graph.output[0].name
        return _evaluator(to_float64(proto)).run([out], {name: x.astype(np.float64)})[0]
    sess = _session(proto.SerializeToString())
    return sess.run(None, {sess.get_inputs()[0].name: x})[0]


def run_optimized(model_path: str, x: np.ndarray) -> np.ndarray:
    """onnxruntime's default (optimized, CPU-dependent) result: for reports, not verdicts."""
    sess = _session(cap_ir_version(onnx.load_from_string(_read(model_path))).SerializeToString(), optimized=True)
    return sess.run(None, {sess.get_inputs()[0].name: np.asarray(x, dtype=np.float32)})[0]


def _q_type(proto: onnx.ModelProto, node: onnx.NodeProto) -> int:
    inits = {i.name: i.data_type for i in proto.graph.initializer}
    if len(node.input) > 2 and node.input[2] in inits:
        return inits[node.input[2]]
    return TensorProto.UINT8   # ONNX default when the zero point is omitted


def run_intermediates(model_path: str, x_float, exact: bool = True) -> dict:
    """{IR tensor name: int8 array} for every QuantizeLinear on an activation, from the
    exact float64 evaluation (default) or unoptimized onnxruntime. x_float: the input, or
    {input name: array} for a model with several inputs."""
    if isinstance(x_float, dict):
        feeds = {k: np.asarray(v, dtype=np.float32) for k, v in x_float.items()}
        f = read_onnx(model_path)
    else:
        x_float = np.asarray(x_float, dtype=np.float32)
        f = read_onnx(model_path, x_float.shape)
        feeds = {f.input: x_float}
    walker = OnnxWalker(f, shapes_proto=to_qdq(f.proto))
    walker.walk()
    proto = onnx.ModelProto()
    proto.CopyFrom(to_qdq(f.proto))
    cap_ir_version(proto)
    q_nodes = {n.output[0]: n for n in proto.graph.node if n.op_type == "QuantizeLinear"}
    outputs = [t for t in q_nodes if t in walker.q_names]
    for node in proto.graph.node:   # onnxruntime rejects duplicate node names; it needs none
        node.name = ""
    existing = {o.name for o in proto.graph.output}
    proto.graph.output.extend(helper.make_tensor_value_info(t, _q_type(proto, q_nodes[t]), None)
                              for t in outputs if t not in existing)
    if exact:
        values = _evaluator(to_float64(proto)).run(outputs, {k: v.astype(np.float64) for k, v in feeds.items()})
    else:
        values = _session(proto.SerializeToString()).run(outputs, feeds)
    result = {}
    for t, v in zip(outputs, values):
        if v.dtype == np.uint8:
            v = (v.astype(np.int16) - 128)
        result[walker.q_names[t]] = v.astype(np.int8)
    return result


def _evaluator(proto: onnx.ModelProto):
    from onnx.reference import ReferenceEvaluator

    return ReferenceEvaluator(proto, new_ops=_fixed_ops())


def _fixed_ops() -> list:
    """Ops whose onnx reference implementation is wrong, done by the spec: LRN (onnx/onnx#7805:
    onnx 1.23's sums the window over the batch axis instead of the channels)."""
    from onnx.reference.op_run import OpRun

    from ..ops.lrn import lrn_f64

    class LRN(OpRun):
        op_domain = ""

        def _run(self, x, alpha=None, beta=None, bias=None, size=None):
            return (lrn_f64(x, size, alpha, beta, bias).astype(x.dtype),)

    return [LRN]


# -- the float64 rewrite --------------------------------------------------------------------

def to_float64(proto: onnx.ModelProto) -> onnx.ModelProto:
    """The same QDQ graph with every float tensor in float64 and Q/DQ spelled out in
    primitive ops, so nothing is computed in float32."""
    out = onnx.ModelProto()
    out.CopyFrom(proto)
    g = out.graph
    ranks = _ranks(proto)
    inits = {i.name: numpy_helper.to_array(i) for i in g.initializer}
    new_inits = []
    for init in g.initializer:
        if init.data_type in (TensorProto.FLOAT, TensorProto.FLOAT16):
            arr = numpy_helper.to_array(init).astype(np.float64)
            init.CopyFrom(numpy_helper.from_array(arr, init.name))
    for vi in list(g.input) + list(g.output):
        if vi.type.tensor_type.elem_type == TensorProto.FLOAT:
            vi.type.tensor_type.elem_type = TensorProto.DOUBLE
    del g.value_info[:]
    nodes = []
    for k, node in enumerate(g.node):
        if node.op_type == "DequantizeLinear":
            nodes += _dequantize(node, k, inits, ranks, new_inits)
        elif node.op_type == "QuantizeLinear":
            nodes += _quantize(node, k, inits, ranks, new_inits)
        elif node.op_type == "Softmax" and _onnx_opset(proto) < 13:
            nodes += _softmax_coerced(node, k, ranks)
        else:
            _float_attrs_to_double(node)
            nodes.append(node)
    del g.node[:]
    g.node.extend(nodes)
    g.initializer.extend(new_inits)
    _inference_batchnorm(out)
    return out


def _onnx_opset(proto: onnx.ModelProto) -> int:
    return max([i.version for i in proto.opset_import if i.domain in ("", "ai.onnx")] or [0])


def _softmax_coerced(node, k, ranks) -> list:
    """Softmax below opset 13 is over the input coerced to 2-D at `axis` (all later axes one
    row); onnx 1.x's reference evaluator takes the single axis instead. Spelled out as
    Flatten -> Softmax -> Reshape, which mean the same at any opset (the graph may be read
    at 15 for BatchNormalization)."""
    x, y = node.input[0], node.output[0]
    rank = ranks.get(x, 2)
    axis = next((a.i for a in node.attribute if a.name == "axis"), 1) % max(rank, 1)
    if rank <= 2 or axis == rank - 1:
        return [node]
    flat, soft, shape = f"_sm{k}_flat", f"_sm{k}_row", f"_sm{k}_shape"
    return [helper.make_node("Flatten", [x], [flat], axis=axis),
            helper.make_node("Softmax", [flat], [soft], axis=1),
            helper.make_node("Shape", [x], [shape]),
            helper.make_node("Reshape", [soft, shape], [y])]


def _inference_batchnorm(proto: onnx.ModelProto) -> None:
    """onnx's reference evaluator runs BatchNormalization below opset 15 in training mode
    (batch statistics); an inference graph's BN (one output) means the same at opset 15,
    where it evaluates the running statistics: the graph is read at 15 then."""
    if not any(n.op_type == "BatchNormalization" and len([o for o in n.output if o]) == 1
               for n in proto.graph.node):
        return
    for imp in proto.opset_import:
        if imp.domain in ("", "ai.onnx") and imp.version < 15:
            imp.version = 15


def _ranks(proto: onnx.ModelProto) -> dict:
    """{tensor name: rank} from onnx's shape inference (for per-axis scales)."""
    try:
        inferred = onnx.shape_inference.infer_shapes(proto)
    except Exception:                    # noqa: BLE001 - ranks are a convenience here
        inferred = proto
    ranks = {}
    for vi in (list(inferred.graph.value_info) + list(inferred.graph.input)
               + list(inferred.graph.output)):
        if vi.type.tensor_type.HasField("shape"):
            ranks[vi.name] = len(vi.type.tensor_type.shape.dim)
    for init in proto.graph.initializer:
        ranks[init.name] = len(init.dims)
    return ranks


def _param(node, k, idx, inits, ranks, new_inits, tag, default=0.0):
    """Input idx of a Q/DQ node (scale or zero point) as a float64 initializer shaped to
    broadcast along the node's axis."""
    if len(node.input) > idx and node.input[idx]:
        if node.input[idx] not in inits:
            raise ValueError(f"QDQ node {node.name or node.output[0]!r}: {tag} must be a constant")
        arr = np.asarray(inits[node.input[idx]], dtype=np.float64)
    else:
        arr = np.asarray(default, dtype=np.float64)
    if arr.size > 1:
        axis = next((a.i for a in node.attribute if a.name == "axis"), 1)
        rank = ranks.get(node.input[0])
        if rank is None:
            raise ValueError(f"QDQ node {node.output[0]!r}: rank of {node.input[0]!r} unknown")
        axis = axis % rank
        arr = arr.reshape([-1 if d == axis else 1 for d in range(rank)])
    name = f"__f64_{k}_{tag}"
    new_inits.append(numpy_helper.from_array(arr, name))
    return name


def _dequantize(node, k, inits, ranks, new_inits):
    s = _param(node, k, 1, inits, ranks, new_inits, "scale")
    z = _param(node, k, 2, inits, ranks, new_inits, "zp")
    x, y, t = node.input[0], node.output[0], f"__f64_{k}"
    return [helper.make_node("Cast", [x], [t + "_x"], to=TensorProto.DOUBLE),
            helper.make_node("Sub", [t + "_x", z], [t + "_c"]),
            helper.make_node("Mul", [t + "_c", s], [y])]


def _quantize(node, k, inits, ranks, new_inits):
    if len(node.input) > 2 and node.input[2] in inits:
        qtype = helper.np_dtype_to_tensor_dtype(inits[node.input[2]].dtype)
    else:
        qtype = TensorProto.UINT8
    if qtype not in _QRANGE:
        raise ValueError(f"QuantizeLinear {node.output[0]!r}: only int8/uint8 outputs are supported")
    lo, hi = _QRANGE[qtype]
    s = _param(node, k, 1, inits, ranks, new_inits, "scale")
    z = _param(node, k, 2, inits, ranks, new_inits, "zp")
    lo_n, hi_n = f"__f64_{k}_lo", f"__f64_{k}_hi"
    new_inits += [numpy_helper.from_array(np.array(lo, np.float64), lo_n),
                  numpy_helper.from_array(np.array(hi, np.float64), hi_n)]
    x, y, t = node.input[0], node.output[0], f"__f64_{k}"
    return [helper.make_node("Div", [x, s], [t + "_d"]),
            helper.make_node("Round", [t + "_d"], [t + "_r"]),      # half to even
            helper.make_node("Add", [t + "_r", z], [t + "_z"]),
            helper.make_node("Max", [t + "_z", lo_n], [t + "_m"]),
            helper.make_node("Min", [t + "_m", hi_n], [t + "_c"]),
            helper.make_node("Cast", [t + "_c"], [y], to=qtype)]


def _float_attrs_to_double(node) -> None:
    for a in node.attribute:
        if a.name == "to" and a.i == TensorProto.FLOAT:          # Cast to float
            a.i = TensorProto.DOUBLE
        if a.type == onnx.AttributeProto.TENSOR and a.t.data_type == TensorProto.FLOAT:
            arr = numpy_helper.to_array(a.t).astype(np.float64)  # Constant value
            a.t.CopyFrom(numpy_helper.from_array(arr, a.t.name))
