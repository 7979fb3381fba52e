"""Read and validate an ONNX file: every problem becomes a ModelError naming the file."""
from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import helper, numpy_helper

from ..errors import ModelError


@dataclass
class OnnxFile:
    path: str
    proto: onnx.ModelProto
    input: str                 # the first graph input (that is not an initializer)
    output: str                # the first graph output
    input_shape: tuple         # the first input's, resolved, batch 1
    opset: int
    inputs: tuple = ()         # every graph input that is not an initializer
    input_shapes: tuple = ()   # theirs
    outputs: tuple = ()        # every graph output
    # initializer name -> its values, decoded once: the walker and the calibration's observer
    # model both read every weight (resnet18's 47 MB: ~28 ms per decode, Zen 4)
    decoded: dict = field(default_factory=dict, repr=False, compare=False)

    def initializer_array(self, init: onnx.TensorProto) -> np.ndarray:
        """The values of initializer `init` of this file's graph (read-only)."""
        a = self.decoded.get(init.name)
        if a is None:
            a = self.decoded[init.name] = tensor_array(self.path, init)
        return a


def node_label(node: onnx.NodeProto, index: int) -> str:
    """The node's own name, or a deterministic fallback from its op type and position."""
    return node.name or f"{node.op_type}_{index}"


def _load(path: str) -> onnx.ModelProto:
    if not os.path.isfile(path):
        raise ModelError(f"{path}: model file not found")
    try:
        proto = onnx.load(path)
    except Exception as e:  # protobuf DecodeError, missing external data, ...
        raise ModelError(f"{path}: cannot read the ONNX file ({type(e).__name__}: {e}); the "
                         f"file is corrupt or truncated -- export it again") from None
    if not proto.graph.node:
        raise ModelError(f"{path}: the ONNX file has no graph nodes; it is empty, corrupt or "
                         f"truncated -- export it again")
    return proto


def _check_defined(path: str, graph: onnx.GraphProto) -> None:
    """Name the node whose input is neither produced, an input nor an initializer."""
    known = {i.name for i in graph.input} | {i.name for i in graph.initializer} | {""}
    for index, node in enumerate(graph.node):
        for name in node.input:
            if name not in known:
                raise ModelError(
                    f"{path}: node {node_label(node, index)!r} ({node.op_type}): input "
                    f"{name!r} is not defined by any initializer, graph input or earlier node "
                    f"(missing initializer?); fix or re-export the model")
        known.update(node.output)


def _declared_shape(path: str, value_info) -> list:
    t = value_info.type
    if not t.HasField("tensor_type") or t.tensor_type.elem_type != onnx.TensorProto.FLOAT:
        raise ModelError(f"{path}: the network input {value_info.name!r} must be a float32 "
                         f"tensor")
    if not t.tensor_type.HasField("shape"):
        return []
    # -1 (Paddle2ONNX, keras2onnx) and 0 mark a dynamic dimension as a dim_param does
    return [d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else None
            for d in t.tensor_type.shape.dim]


def resolve_input_shape(path: str, name: str, declared: list, override, inputs: int = 1) -> tuple:
    """The batch-1 input shape: `override` checked against the model, else the declared one
    (a symbolic batch dimension means 1; other symbolic dims need `override`, which only a
    model of one input takes: `inputs` of them)."""
    fix = ("declare the model in targets.yaml with 'input_shape: [1, C, H, W]'" if inputs == 1
           else f"fix the shapes of its {inputs} inputs in the model (input_shape applies to a "
                f"model with one input)")
    if override is not None:
        try:
            shape = tuple(int(d) for d in override)
        except (TypeError, ValueError):
            raise ModelError(f"{path}: input_shape {override!r} is not a tuple of ints") from None
        if declared and len(shape) != len(declared):
            raise ModelError(f"{path}: input_shape {shape} has rank {len(shape)} but the model "
                             f"input {name!r} has rank {len(declared)} ({declared})")
        for i, (want, got) in enumerate(zip(declared, shape)):
            if want is not None and want != got:
                raise ModelError(f"{path}: input_shape {shape} does not match the model input "
                                 f"{name!r} {declared} at axis {i}")
    else:
        if not declared:
            raise ModelError(f"{path}: the model input {name!r} has no declared shape; {fix}")
        if any(d is None for d in declared[1:]):
            raise ModelError(f"{path}: the model input {name!r} has symbolic dimensions "
                             f"{declared}; {fix}")
        shape = (1 if declared[0] is None else declared[0],) + tuple(declared[1:])
    if len(shape) not in (2, 3, 4):
        raise ModelError(f"{path}: input shape {shape} must be (1, C, H, W), (1, C, L) or (1, F)")
    if shape[0] != 1:
        raise ModelError(f"{path}: batch size {shape[0]} in the shape {shape} of input "
                         f"{name!r}; only batch 1 is supported -- export the model with batch 1 "
                         f"or a dynamic batch")
    if min(shape) < 1:
        raise ModelError(f"{path}: input shape {shape} has an empty dimension")
    return shape


MIN_OPSET = 11       # older models are converted to UPGRADE_OPSET by onnx.version_converter
UPGRADE_OPSET = 13


def _upgrade(proto: onnx.ModelProto, opset: int):
    """(model, opset) at UPGRADE_OPSET when onnx's version converter manages, else as given
    (the converters still read the old forms: Clip's min/max attributes, Pad's pads, ...)."""
    from onnx import version_converter
    try:
        new = version_converter.convert_version(proto, UPGRADE_OPSET)
        onnx.checker.check_model(new)
    except Exception:   # noqa: BLE001 - the original model is still importable
        return proto, opset
    for node in new.graph.node:
        # Resize-10 and Upsample interpolate linearly in asymmetric coordinates (x / scale);
        # the converter leaves Resize-13's default, half_pixel, which moves every sample
        if node.op_type == "Resize" and not any(a.name == "coordinate_transformation_mode"
                                                for a in node.attribute):
            mode = next((a.s for a in node.attribute if a.name == "mode"), b"nearest")
            if mode == b"linear":
                node.attribute.append(onnx.helper.make_attribute("coordinate_transformation_mode",
                                                                 "asymmetric"))
    return new, UPGRADE_OPSET


def read_onnx(path: str, input_shape=None, generated: onnx.ModelProto | None = None,
              weights: dict | None = None) -> OnnxFile:
    """generated: the model path holds, as the zoo generated it in this process (not parsed
    again, and not checked: tests/test_zoo.py checks the generators' models; checking
    resnet18 costs about 0.1 s).  weights: {initializer name: float32 array} of generated,
    the arrays its raw_data was written from (the file's decoded initializers)."""
    proto = _load(path) if generated is None else generated
    graph = proto.graph
    _check_defined(path, graph)
    try:   # from the file: the checker reads it in C++ (a proto would be serialized again first)
        if generated is None:
            onnx.checker.check_model(path)
    except Exception as e:
        raise ModelError(f"{path}: invalid ONNX model: {e}") from None
    inits = {i.name for i in graph.initializer}
    inputs = [i for i in graph.input if i.name not in inits]
    if not inputs:
        raise ModelError(f"{path}: the model has no input (every graph input is an "
                         f"initializer); nothing to run")
    if len(inputs) > 1 and input_shape is not None:
        raise ModelError(f"{path}: input_shape applies to a model with one input; this one has "
                         f"{len(inputs)} ({', '.join(i.name for i in inputs)}): fix their shapes "
                         f"in the model")
    opset = max((o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")),
                default=0)
    if 0 < opset < MIN_OPSET:
        proto, opset = _upgrade(proto, opset)
        graph = proto.graph
        inputs = [i for i in graph.input if i.name not in inits]
    from .onnx_integer import to_float
    proto = to_float(proto, path)       # onnxruntime's dynamic quantization: its float model
    graph = proto.graph
    shapes = tuple(resolve_input_shape(path, i.name, _declared_shape(path, i), input_shape,
                                       len(inputs)) for i in inputs)
    names = tuple(i.name for i in inputs)
    outputs = tuple(o.name for o in graph.output)
    if len(set(outputs)) != len(outputs) or set(outputs) & set(names):
        raise ModelError(f"{path}: graph outputs {list(outputs)} repeat a name or name a graph "
                         f"input; each output must be its own computed tensor")
    decoded = {}
    if weights and proto is generated:
        decoded = {i.name: weights[i.name] for i in graph.initializer
                   if i.data_type == onnx.TensorProto.FLOAT and i.name in weights
                   and weights[i.name].dtype == np.float32
                   and weights[i.name].shape == tuple(i.dims)}
    return OnnxFile(path, proto, names[0], outputs[0], shapes[0], opset, names, shapes, outputs,
                    decoded)


# The pinned onnxruntime reads IR versions up to 13, the pinned onnx writes 14 by default:
# a model gets the lower version for onnxruntime (the IR features nnscons reads exist there).
ORT_MAX_IR_VERSION = 13


def cap_ir_version(proto: onnx.ModelProto) -> onnx.ModelProto:
    """proto itself, its IR version lowered to what onnxruntime reads (in place)."""
    if proto.ir_version > ORT_MAX_IR_VERSION:
        proto.ir_version = ORT_MAX_IR_VERSION
    return proto


def tensor_array(path: str, tensor: onnx.TensorProto, what: str = "initializer") -> np.ndarray:
    """A TensorProto's values; a tensor whose data does not match its dims or type (a damaged
    or hand-edited file) is a ModelError naming it, not numpy's ValueError."""
    try:
        return numpy_helper.to_array(tensor)
    except Exception as e:                                   # noqa: BLE001 - any decoding failure
        raise ModelError(f"{path}: {what} {tensor.name!r} (dims {list(tensor.dims)}, data type "
                         f"{tensor.data_type}) cannot be read: {e}; the file is damaged or was written "
                         f"wrong: export the model again") from None


def constant_value(node: onnx.NodeProto, path: str = "model") -> np.ndarray:
    """The tensor a Constant node produces."""
    (attr,) = node.attribute
    if attr.name == "value":
        return tensor_array(path, attr.t, f"the value of Constant node {node.name!r}:")
    return np.array(helper.get_attribute_value(attr))


def is_qdq(proto: onnx.ModelProto) -> bool:
    return any(n.op_type in ("QuantizeLinear", "DequantizeLinear") for n in proto.graph.node)
