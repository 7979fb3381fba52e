"""The pre-IR graph every frontend produces and the passes rewrite before lowering to nnscons.ir.

It keeps real-valued (float64) weights next to the exact integer quantization a model may
already carry, so a pass that changes the weights (BN folding) simply drops the integer
form and lowering re-quantizes; untouched weights keep their original int8/int32 bits.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from ..errors import ModelError
from ..ir import QParams

# Op kinds: the IR ops plus the pre-IR kinds that passes remove or lower (nnscons.ops:
# OpDef.ir False), e.g. clamp (real-valued Relu/Clip) and bn (BatchNormalization).


@dataclass
class Op:
    name: str                  # original node name, or the frontend's deterministic fallback
    kind: str
    inputs: list
    output: str
    source_op: str             # e.g. "Conv", "QuantConv2d"
    attrs: dict = field(default_factory=dict)
    weight: Optional[np.ndarray] = None    # real values, output channel first
    # a folded BatchNormalization's per-output-channel factor not yet applied: the real
    # weights are weight (as float64) * weight_factor, computed when lowering quantizes them
    # (a block at a time: resnet18's folded weights were a fresh 94 MB float64 array)
    weight_factor: Optional[np.ndarray] = None
    bias: Optional[np.ndarray] = None      # real values, one per output channel
    weight_q: Optional[tuple] = None       # (int8 array like weight, scale float64[O]) as given
    bias_q: Optional[tuple] = None         # (int32[O], scale float64[O]) as given
    clamp: tuple = (None, None)            # fused activation, real bounds
    act_range: Optional[tuple] = None      # fused activation as int8 bounds (TFLite computes them itself)
    fused: list = field(default_factory=list)
    source_ops: list = field(default_factory=list)

    def __post_init__(self):
        if not self.source_ops:
            self.source_ops = [self.source_op]

    def real_weight(self) -> Optional[np.ndarray]:
        """The real weights: weight with a pending weight_factor applied (float64)."""
        if self.weight is None or self.weight_factor is None:
            return self.weight
        return self.weight * self.weight_factor.reshape((-1,) + (1,) * (self.weight.ndim - 1))


@dataclass
class OpGraph:
    source: str                # model path, for messages only
    input: str
    output: str
    input_shape: tuple
    ops: list                  # topological order
    qparams: dict = field(default_factory=dict)   # tensor name -> QParams (model-given)
    shapes: dict = field(default_factory=dict)    # tensor name -> shape (shape pass)
    numerics: str = "onnx"     # the requantization rule (nnscons.numerics): "onnx" or "tflite"
    extra_inputs: list = field(default_factory=list)        # inputs after the first (model order)
    extra_input_shapes: list = field(default_factory=list)  # theirs
    extra_outputs: list = field(default_factory=list)       # outputs after the first
    # (op name, tensor): the op reads the tensor's float value, before the model's
    # QuantizeLinear rounds it for its other readers (a float island's fork)
    unrounded: set = field(default_factory=set)

    @property
    def inputs(self) -> list:
        return [self.input] + list(self.extra_inputs)

    @property
    def outputs(self) -> list:
        return [self.output] + list(self.extra_outputs)

    def producer(self, tensor: str) -> Optional[Op]:
        for op in self.ops:
            if op.output == tensor:
                return op
        return None

    def consumers(self, tensor: str) -> list:
        return [op for op in self.ops if tensor in op.inputs]

    def fail(self, op: Op, message: str) -> ModelError:
        """A ModelError naming the file and the node."""
        return ModelError(f"{self.source}: node {op.name!r} ({op.source_op}): {message}")


def clamp_bounds(lo, hi, q: QParams) -> tuple[int, int]:
    """Real clamp bounds -> (act_min, act_max) in the int8 domain of q."""
    qmin = -128 if lo is None else max(-128, min(127, q.zero_point + round(lo / q.scale)))
    qmax = 127 if hi is None else min(127, max(-128, q.zero_point + round(hi / q.scale)))
    return qmin, qmax


def rename_tensor(g: OpGraph, old: str, new: str) -> None:
    """Rename a tensor everywhere (the caller guarantees `new` is unused)."""
    def sub(name):
        return new if name == old else name
    for op in g.ops:
        op.inputs = [sub(t) for t in op.inputs]
        op.output = sub(op.output)
    g.input, g.output = sub(g.input), sub(g.output)
    g.extra_inputs = [sub(t) for t in g.extra_inputs]
    g.extra_outputs = [sub(t) for t in g.extra_outputs]
    g.qparams = {sub(k): v for k, v in g.qparams.items()}
    g.shapes = {sub(k): v for k, v in g.shapes.items()}
