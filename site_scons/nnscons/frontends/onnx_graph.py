"""Walk an ONNX graph into a pre-IR OpGraph.

QuantizeLinear/DequantizeLinear pairs on activations become quantization parameters of the
float tensor they quantize (the IR tensor keeps that tensor's name), DequantizeLinear on an
integer initializer becomes a quantized constant, and Identity/Dropout become aliases.
A QuantizeLinear on a tensor that is already quantized with other parameters is a real
change of quantization and becomes a 'requant' op named after that QuantizeLinear.
The network output tensor takes the name of the ONNX graph output.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from ..errors import ModelError
from ..ir import QParams
from ..opkit.onnx_qoperator import QuantConst, along_axis
from ..opkit.opgraph import Op, OpGraph, rename_tensor
from . import onnx_ops
from ..opkit.onnx_attrs import attributes
from .onnx_file import OnnxFile, constant_value, node_label

PASS_THROUGH = ("Identity", "Dropout")


def as_2d_shape(shape) -> tuple:
    """1-D networks: a rank-3 (1, C, L) tensor is (1, C, 1, L) inside nnscons."""
    shape = tuple(shape)
    return shape[:2] + (1,) + shape[2:] if len(shape) == 3 else shape


class OnnxWalker:
    def __init__(self, f: OnnxFile, shapes_proto=None):
        """shapes_proto: the model onnx's shape inference reads (a QOperator model's QDQ
        spelling, onnx_qoperator.to_qdq: onnx infers no com.microsoft op's shape)."""
        self.f = f
        self.shapes_proto = shapes_proto
        graph = f.proto.graph
        self.consts = {i.name: f.initializer_array(i) for i in graph.initializer}
        self.qconsts: dict = {}
        self.alias: dict = {}
        self.qparams: dict = {}
        self.q_names: dict = {}   # QuantizeLinear output -> IR tensor name (for the oracle)
        self.ops: list = []
        self.float_outs: set = set()   # outputs of converted nodes (float unless in q_names)
        self.unrounded: set = set()    # (op name, tensor): OpGraph.unrounded

    # -- helpers used by the op converters ------------------------------------------------
    def convert(self, name: str, node, inputs, out):
        """`node`'s IR op(s) by its registry converter (QOperator converters call it for
        the float node they describe)."""
        return onnx_ops.convert(self, name, node, inputs, out)

    def fail(self, name: str, node, message: str) -> ModelError:
        return ModelError(f"{self.f.path}: node {name!r} ({node.op_type}): {message}")

    def resolve(self, tensor: str) -> str:
        return self.alias.get(tensor, tensor)

    def is_const(self, tensor: str) -> bool:
        return tensor in self.consts or tensor in self.qconsts

    def const(self, tensor: str, name: str, node, what: str) -> np.ndarray:
        """Real value of a constant input (float initializers or dequantized integers)."""
        if tensor in self.qconsts:
            return self.qconsts[tensor].real()
        if tensor in self.consts:
            return self.consts[tensor]
        raise self.fail(name, node, f"{what} {tensor!r} must be a constant initializer")

    def quant_const(self, tensor: str) -> Optional[QuantConst]:
        return self.qconsts.get(tensor)

    # -- Q/DQ -------------------------------------------------------------------------------
    def qparams_of(self, name, node, inputs) -> tuple:
        scale = np.asarray(self.const(inputs[1], name, node, "scale"), dtype=np.float64)
        if len(inputs) > 2 and inputs[2]:
            zp_arr = self.consts.get(inputs[2])
            if zp_arr is None:
                raise self.fail(name, node, f"zero point {inputs[2]!r} must be an initializer")
            dtype = zp_arr.dtype
            zp = zp_arr.astype(np.int64)
        else:   # ONNX default: uint8 with zero point 0
            dtype, zp = np.dtype(np.uint8), np.zeros(scale.shape, dtype=np.int64)
        if dtype == np.uint8:
            zp = zp - 128
        elif dtype not in (np.int8, np.int32):
            raise self.fail(name, node, f"zero point type {dtype} is not supported (int8, "
                                        f"uint8 or int32 bias)")
        if np.any(scale <= 0) or not np.all(np.isfinite(scale)):
            raise self.fail(name, node, f"scale must be positive and finite, got {scale}")
        return scale, zp, dtype

    def activation_q(self, name, node, scale, zp) -> QParams:
        if scale.size != 1:
            raise self.fail(name, node, "per-axis quantization of an activation is not "
                                        "supported; quantize activations per tensor")
        return QParams(float(np.float32(scale.reshape(()))), int(zp.reshape(())))

    def _quantize(self, name, node, inputs, out):
        scale, zp, dtype = self.qparams_of(name, node, inputs)
        src = self.resolve(inputs[0])
        axis = attributes(node).get("axis", 1)
        if self.is_const(src):   # Q(constant): fold into integers for a later DQ
            real = self.const(src, name, node, "input")
            lo, hi = (-2**31, 2**31 - 1) if dtype == np.int32 else (-128, 127)
            q = np.clip(np.round(real / along_axis(scale, real.ndim, axis))
                        + along_axis(zp, real.ndim, axis), lo, hi)
            self.consts[out] = q.astype(np.int32 if dtype == np.int32 else np.int8)
            return
        if dtype == np.int32:
            raise self.fail(name, node, "int32 quantization of an activation is not supported")
        q = self.activation_q(name, node, scale, zp)
        if src not in self.qparams:
            self.qparams[src] = q
        elif self.qparams[src] != q:
            self.ops.append(Op(name, "requant", [src], out, node.op_type))
            self.qparams[out] = q
            src = out
        self.alias[out] = src
        self.q_names[out] = src

    def _dequantize(self, name, node, inputs, out):
        src = inputs[0]
        if src in self.consts:
            raw = self.consts[src]
            scale, zp, dtype = self.qparams_of(name, node, inputs)
            if raw.dtype not in (np.int8, np.uint8, np.int32):
                raise self.fail(name, node, f"initializer {src!r} has type {raw.dtype}; "
                                            f"int8, uint8 or int32 expected")
            q = raw.astype(np.int64) - (128 if raw.dtype == np.uint8 else 0)
            self.qconsts[out] = QuantConst(q, scale, zp, attributes(node).get("axis", 1),
                                           "int32" if dtype == np.int32 else "int8", raw.dtype.name)
        elif src in self.q_names:
            self.alias[out] = self.resolve(src)
        else:
            raise self.fail(name, node, f"dequantizes {src!r}, which is neither an integer "
                                        f"initializer nor the output of a QuantizeLinear")

    # -- walk -------------------------------------------------------------------------------
    def walk(self) -> OpGraph:
        for index, node in enumerate(self.f.proto.graph.node):
            name = node_label(node, index)
            inputs = list(node.input)
            out = node.output[0] if node.output else ""
            if node.domain not in ("", "ai.onnx", "com.microsoft"):   # onnxruntime's QOperator ops
                raise self.fail(name, node, f"operator domain {node.domain!r} is not "
                                            f"supported; {onnx_ops.supported_list()}")
            if node.op_type == "Constant":
                self.consts[out] = constant_value(node, self.f.path)
            elif self._fold(name, node, inputs):
                pass
            elif node.op_type == "QuantizeLinear":
                self._quantize(name, node, inputs, out)
            elif node.op_type == "DequantizeLinear":
                self._dequantize(name, node, inputs, out)
            elif node.op_type == "Cast":     # tf2onnx's casts between float layers (constants fold)
                import onnx
                to = int(next((a.i for a in node.attribute if a.name == "to"), 0))
                if to != onnx.TensorProto.FLOAT:
                    raise self.fail(name, node, f"Cast of an activation to "
                                                f"{onnx.TensorProto.DataType.Name(to)} is not supported; "
                                                f"supported: Cast to FLOAT (a no-op on the float model's activations)")
                self.alias[out] = self.resolve(inputs[0])
            elif node.op_type in PASS_THROUGH:
                if len(node.output) > 1 and node.output[1]:
                    self._unused_output(name, node, node.output[1])
                if node.op_type == "Dropout":
                    self._inference_dropout(name, node, inputs)
                self.alias[out] = self.resolve(inputs[0])
            else:
                resolved = [self.resolve(t) if t else "" for t in inputs]
                if not onnx_ops.is_multi_output(node.op_type):
                    for extra in node.output[1:]:
                        if extra:
                            self._unused_output(name, node, extra)
                try:
                    got = onnx_ops.convert(self, name, node, resolved, out)
                    got = got if isinstance(got, list) else [got]
                    self.ops.extend(got)
                    self._integer_outputs(node, inputs)
                    floats = {t for t in inputs if t in self.float_outs and t not in self.q_names}
                    self.unrounded |= {(op.name, t) for op in got for t in op.inputs if t in floats}
                    self.float_outs.update(t for t in node.output if t)
                except (ValueError, TypeError, IndexError, KeyError) as e:   # malformed values
                    raise self.fail(name, node, f"malformed node ({type(e).__name__}: {e}); "
                                                f"fix or re-export the model") from None
        return self._graph()

    def _integer_outputs(self, node, inputs):
        """A plain op on quantized tensors (QOperator graphs move uint8 codes with MaxPool,
        Reshape, Transpose, Split, ...: only data movement takes integers in ONNX): its outputs
        are quantized too, at its input's parameters (passes/quantize.inherit_qparams), so a
        DequantizeLinear may read them."""
        acts = [t for t in inputs if t and not self.is_const(self.resolve(t))]
        if node.op_type.startswith("QLinear") or not acts or not all(t in self.q_names for t in acts):
            return
        for t in node.output:
            if t:
                self.q_names[t] = self.resolve(t)

    # -- constant folding -------------------------------------------------------------------
    def _static_shapes(self) -> dict:
        """{tensor: static shape} from onnx's shape inference with the resolved input shape
        (on shapes_proto when given)."""
        if getattr(self, "_shapes", None) is None:
            import onnx
            proto, weights = _shape_inference_copy(self.shapes_proto or self.f.proto)
            shapes = dict(zip(self.f.inputs or (self.f.input,), self.f.input_shapes or (self.f.input_shape,)))
            for inp in proto.graph.input:
                if inp.name in shapes:
                    inp.type.tensor_type.shape.Clear()
                    for d in shapes[inp.name]:
                        inp.type.tensor_type.shape.dim.add().dim_value = d
            try:
                inferred = onnx.shape_inference.infer_shapes(proto, data_prop=True)
            except Exception:   # noqa: BLE001 - shapes only enable folding
                inferred = proto
            shapes = {}
            for vi in list(inferred.graph.value_info) + list(inferred.graph.input):
                t = vi.type.tensor_type
                if t.HasField("shape") and all(d.HasField("dim_value") for d in t.shape.dim) \
                        and vi.name not in weights:
                    shapes[vi.name] = tuple(d.dim_value for d in t.shape.dim)
            self._shapes = shapes
        return self._shapes

    def model_rank(self, tensor: str):
        """The rank the model gives `tensor` (onnx's shape inference), or None if unknown."""
        shape = self._static_shapes().get(tensor)
        return None if shape is None else len(shape)

    FOLD_SKIP = ("QuantizeLinear", "DequantizeLinear", "Identity", "Dropout")

    def _fold(self, name, node, inputs) -> bool:
        """Evaluate a node whose inputs are all constants (the Shape/Gather/Concat/Unsqueeze
        chains exporters put before a Reshape) with onnx's reference evaluator; Shape of an
        activation is its static shape. Returns True when the node became constants."""
        if node.op_type in self.FOLD_SKIP:
            return False
        if node.op_type == "Shape" and inputs and not self.is_const(self.resolve(inputs[0])):
            shape = self._static_shapes().get(inputs[0]) or self._static_shapes().get(
                self.resolve(inputs[0]))
            if shape is None:
                raise self.fail(name, node, f"onnx's shape inference gives its input "
                                            f"{inputs[0]!r} no static shape, even with the "
                                            f"network input's shape fixed (a shape computed "
                                            f"at run time before it); export the model with "
                                            f"static shapes")
            a = attributes(node)
            start, end = a.get("start", 0), a.get("end", len(shape))
            self.consts[node.output[0]] = np.array(shape[start:end], dtype=np.int64)
            return True
        real = [t for t in inputs if t]
        if not real or not all(t in self.consts for t in (self.resolve(x) for x in real)):
            return False
        from onnx import helper as H
        from onnx.reference import ReferenceEvaluator
        names = [f"i{k}" if t else "" for k, t in enumerate(inputs)]
        feeds = {f"i{k}": self.consts[self.resolve(t)] for k, t in enumerate(inputs) if t}
        outs = [f"o{k}" for k in range(len(node.output))]
        n = H.make_node(node.op_type, names, outs, **attributes(node))
        graph = H.make_graph([n], "fold", [H.make_tensor_value_info(k, H.np_dtype_to_tensor_dtype(v.dtype), v.shape)
                                           for k, v in feeds.items()],
                             [H.make_tensor_value_info(o, 0, None) for o in outs])
        model = H.make_model(graph, opset_imports=[H.make_opsetid("", max(self.f.opset, 7))])
        try:
            values = ReferenceEvaluator(model).run(None, feeds)
        except Exception as e:   # noqa: BLE001
            raise self.fail(name, node, f"cannot fold this constant computation "
                                        f"({type(e).__name__}: {e})") from None
        for t, v in zip(node.output, values):
            if t:
                self.consts[t] = np.asarray(v)
        return True

    def _inference_dropout(self, name, node, inputs):
        """A Dropout is the identity only in inference: training_mode (opset 12+) true
        with a nonzero ratio drops random elements, which no firmware reproduces."""
        if len(inputs) < 3 or not inputs[2]:
            return
        training = self.const(self.resolve(inputs[2]), name, node, "training_mode")
        ratio = (np.asarray(self.const(self.resolve(inputs[1]), name, node, "ratio"))
                 if inputs[1] else np.array(0.5))
        if np.any(training) and np.any(ratio != 0):
            raise self.fail(name, node, f"training_mode is true with ratio {ratio.item():g}: "
                                        f"it drops random elements; export the model in "
                                        f"inference mode (training_mode false)")

    def _unused_output(self, name, node, tensor):
        users = [n for n in self.f.proto.graph.node if tensor in n.input]
        if users or tensor in (self.f.outputs or (self.f.output,)):
            raise self.fail(name, node, f"its second output {tensor!r} is used; only the "
                                        f"main output is supported")

    def _graph(self) -> OpGraph:
        f = self.f
        inputs, shapes = list(f.inputs or (f.input,)), list(f.input_shapes or (f.input_shape,))
        outputs = list(f.outputs or (f.output,))
        g = OpGraph(source=f.path, input=inputs[0], output=self.resolve(outputs[0]),
                    input_shape=as_2d_shape(shapes[0]), ops=self.ops, qparams=self.qparams,
                    extra_inputs=inputs[1:], extra_input_shapes=[as_2d_shape(s) for s in shapes[1:]],
                    extra_outputs=[self.resolve(o) for o in outputs[1:]], unrounded=set(self.unrounded))
        seen = {}
        for k, name in enumerate(outputs):
            out = g.outputs[k]
            if out in inputs or g.producer(out) is None:
                raise ModelError(f"{f.path}: the network output {name!r} is not computed by "
                                 f"any supported layer")
            if out in seen:
                raise ModelError(f"{f.path}: the network outputs {seen[out]!r} and {name!r} are "
                                 f"the same tensor; give each output its own computation")
            seen[out] = name
        for name, out in zip(outputs, list(g.outputs)):
            if out != name:
                rename_tensor(g, out, name)
                self.q_names = {k: (name if v == out else v) for k, v in self.q_names.items()}
        return g


# Initializers larger than this go to shape inference as typed graph inputs, not as data:
# their shapes are all it reads of them (a shape-computing constant -- Reshape's target,
# Slice's bounds, Expand's shape -- is a small integer tensor and stays).
_INFER_DATA_LIMIT = 1024
_SHAPE_TYPES = (6, 7)      # TensorProto.INT32, INT64


def _shape_inference_copy(src):
    """(copy, names): a copy of `src` for onnx's shape inference without the bytes of its large
    weights (copying and serializing ResNet-18's 46 MB cost more than the inference), and the
    names of the weights it declares as inputs instead (not shapes the walker asks for)."""
    import onnx
    from onnx import helper
    proto = onnx.ModelProto()
    for field in ("ir_version", "producer_name", "producer_version", "domain", "model_version"):
        setattr(proto, field, getattr(src, field))
    proto.opset_import.extend(src.opset_import)
    proto.functions.extend(src.functions)
    g, sg = proto.graph, src.graph
    g.name = sg.name
    g.node.extend(sg.node)
    g.input.extend(sg.input)
    g.output.extend(sg.output)
    g.value_info.extend(sg.value_info)
    g.sparse_initializer.extend(sg.sparse_initializer)
    declared, weights = {vi.name for vi in sg.input}, set()
    for init in sg.initializer:
        if init.data_type in _SHAPE_TYPES or int(np.prod(init.dims, dtype=np.int64)) <= _INFER_DATA_LIMIT:
            g.initializer.append(init)
        elif init.name not in declared:
            g.input.append(helper.make_tensor_value_info(init.name, init.data_type, list(init.dims)))
            weights.add(init.name)
    return proto, weights
