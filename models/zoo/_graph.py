"""A tiny deterministic ONNX graph builder shared by the zoo generators.

Everything that reaches the serialized bytes is fixed here: producer fields, IR and
opset versions, and the order of nodes and initializers (the order of the calls).
"""
from __future__ import annotations

import numpy as np

PRODUCER = "nnscons.zoo"
PRODUCER_VERSION = "1"
IR_VERSION = 8     # pinned: onnx's default follows its release, which would change the bytes
OPSET = 13


class Builder:
    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.nodes = []
        self.initializers = []

    def param(self, name: str, array: np.ndarray) -> str:
        from onnx import numpy_helper
        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(array, np.float32), name))
        return name

    def normal(self, shape, std: float) -> np.ndarray:
        return self.rng.standard_normal(shape, dtype=np.float32) * np.float32(std)

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
        from onnx import TensorProto, helper
        graph = helper.make_graph(
            self.nodes, graph_name,
            [helper.make_tensor_value_info(input_name, TensorProto.FLOAT, list(input_shape))],
            [helper.make_tensor_value_info(output_name, TensorProto.FLOAT, list(output_shape))],
            initializer=self.initializers)
        return helper.make_model(graph, producer_name=PRODUCER, producer_version=PRODUCER_VERSION,
                                 ir_version=IR_VERSION, opset_imports=[helper.make_opsetid("", opset)])


def check_nchw(shape, channels=None, min_hw=1) -> None:
    """ValueError unless shape is (1, C, H, W) with the given C and H, W >= min_hw."""
    shape = tuple(shape)
    want = f"(1, {channels if channels else 'C'}, H, W) with H, W >= {min_hw}"
    if (len(shape) != 4 or shape[0] != 1 or (channels and shape[1] != channels)
            or min(shape[2:]) < min_hw or shape[1] < 1):
        raise ValueError(f"input_shape {list(shape)} not supported; expected {want}")
