"""A tiny deterministic ONNX graph builder shared by the zoo generators.

Everything that reaches the serialized bytes is fixed here: producer fields, IR and
opset versions, and the order of nodes and initializers (the order of the calls).
"""
from __future__ import annotations

import contextlib
import threading

import numpy as np

PRODUCER = "nnscons.zoo"
PRODUCER_VERSION = "1"
IR_VERSION = 8     # pinned: onnx's default follows its release, which would change the bytes
OPSET = 13

_COLLECTING = threading.local()     # .builders: the list collecting() fills on this thread


@contextlib.contextmanager
def collecting():
    """The Builders made on this thread inside the block, in a list (their weight arrays)."""
    outer = getattr(_COLLECTING, "builders", None)
    _COLLECTING.builders = builders = []
    try:
        yield builders
    finally:
        _COLLECTING.builders = outer


class Builder:
    """nodes and initializers are the model's own lists (onnx repeated fields: append and
    index them like lists): the model is assembled in place, as resnet18's 47 MB of weights
    copied into a graph and then into a model cost a cold build about 0.05 s."""

    def __init__(self, seed: int):
        from onnx import ModelProto
        self.rng = np.random.default_rng(seed)
        self.proto = ModelProto()
        self.nodes = self.proto.graph.node
        self.initializers = self.proto.graph.initializer
        # initializer name -> the read-only float32 array its raw_data was written from
        self.arrays = {}
        collector = getattr(_COLLECTING, "builders", None)
        if collector is not None:
            collector.append(self)

    def param(self, name: str, array: np.ndarray) -> str:
        """A float32 initializer, written as numpy_helper.from_array writes it."""
        from onnx import TensorProto
        array = np.ascontiguousarray(array, "<f4")
        tensor = self.initializers.add()
        tensor.dims.extend(array.shape)
        tensor.name = name
        tensor.raw_data = array.tobytes()
        tensor.data_type = TensorProto.FLOAT
        array.flags.writeable = False       # it must keep the bytes written
        self.arrays[name] = array
        return name

    def normal(self, shape, std: float) -> np.ndarray:
        values = self.rng.standard_normal(shape, dtype=np.float32)
        values *= np.float32(std)       # in place: the same products, one array fewer
        return values

    def uniform(self, shape, low: float, high: float) -> np.ndarray:
        return self.rng.uniform(low, high, shape).astype(np.float32)

    def node(self, op: str, name: str, inputs: list, output: str = None, **attrs) -> str:
        """Add a node; its output tensor is named after the node unless given."""
        from onnx import helper
        output = output or name
        self.nodes.append(helper.make_node(op, inputs, [output], name=name, **dict(sorted(attrs.items()))))
        return output

    def conv(self, name, x, cin, cout, k, stride=1, pad=0, bias=False, output=None) -> str:
        # He-normal: keeps the second moment of ReLU activations constant layer to layer.
        w = self.param(f"{name}.weight", self.normal((cout, cin, k, k), np.sqrt(2.0 / (cin * k * k))))
        inputs = [x, w]
        if bias:
            inputs.append(self.param(f"{name}.bias", self.normal((cout,), 0.05)))
        return self.node("Conv", name, inputs, output, kernel_shape=[k, k], strides=[stride, stride],
                         pads=[pad] * 4, dilations=[1, 1], group=1)

    def batchnorm(self, name, x, c, gamma=(0.8, 1.2)) -> str:
        """Non-trivial statistics, so that BN folding is really exercised."""
        params = [
            self.param(f"{name}.weight", self.uniform((c,), *gamma)),
            self.param(f"{name}.bias", self.normal((c,), 0.1)),
            self.param(f"{name}.running_mean", self.normal((c,), 0.1)),
            self.param(f"{name}.running_var", self.uniform((c,), 0.5, 1.5)),
        ]
        return self.node("BatchNormalization", name, [x] + params, epsilon=1e-5)

    def gemm(self, name, x, fin, fout, output=None) -> str:
        w = self.param(f"{name}.weight", self.normal((fout, fin), np.sqrt(1.0 / fin)))
        b = self.param(f"{name}.bias", self.normal((fout,), 0.05))
        return self.node("Gemm", name, [x, w, b], output, alpha=1.0, beta=1.0, transB=1)

    def model(self, graph_name: str, input_name: str, input_shape, output_name: str, output_shape,
              opset: int = OPSET):
        """The model: the fields onnx.helper.make_graph and make_model would set (the same
        bytes), on the builder's own proto."""
        from onnx import TensorProto, helper
        model = self.proto
        model.ir_version = IR_VERSION
        graph = model.graph
        graph.name = graph_name
        graph.input.append(helper.make_tensor_value_info(input_name, TensorProto.FLOAT, list(input_shape)))
        graph.output.append(helper.make_tensor_value_info(output_name, TensorProto.FLOAT, list(output_shape)))
        model.opset_import.append(helper.make_opsetid("", opset))
        model.producer_name = PRODUCER
        model.producer_version = PRODUCER_VERSION
        return model


def check_nchw(shape, channels=None, min_hw=1) -> None:
    """ValueError unless shape is (1, C, H, W) with the given C and H, W >= min_hw."""
    shape = tuple(shape)
    want = f"(1, {channels if channels else 'C'}, H, W) with H, W >= {min_hw}"
    if (len(shape) != 4 or shape[0] != 1 or (channels and shape[1] != channels)
            or min(shape[2:]) < min_hw or shape[1] < 1):
        raise ValueError(f"input_shape {list(shape)} not supported; expected {want}")
