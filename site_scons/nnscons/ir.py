"""The quantized intermediate representation shared by frontends, reference and targets.

Conventions (every producer and consumer relies on them):

* Batch size 1. Activation tensors have the ONNX layout: 4-D tensors are
  (1, C, H, W); 2-D tensors (Linear in/out) are (1, F).
* Every activation tensor is int8 with per-tensor asymmetric quantization
  (QParams: real = scale * (q - zero_point), zero_point in [-128, 127]).
  uint8 sources are converted: zp_int8 = zp_uint8 - 128 (bit-exact).
* Weights are int8, symmetric (zero point 0), per output channel:
  conv2d weight (O, I/groups, kH, kW), linear weight (O, I) -- weight_scale has O entries.
* Bias is int32 with scale input_scale * weight_scale[o] (zero point 0).
* Fused activations are a clamp in the output's int8 domain: Layer.act_min/act_max.
* Requantization parameters are derived from scales by nnscons.numerics, never stored.

Layer.op and its attrs (all ints unless noted):
  conv2d          kernel=(kh,kw) stride=(sh,sw) dilation=(dh,dw) pads=(top,left,bottom,right) groups
  linear          -
  maxpool         kernel stride pads (top,left,bottom,right) ceil_mode
  avgpool         kernel stride pads ceil_mode count_include_pad (0/1)
  global_avgpool  -
  add             -                        (two inputs, each requantized to the output scale)
  concat          axis=1                   (channel concat; each input requantized)
  requant         -                        (elementwise rescale + clamp: standalone Relu/Clip,
                                            or a change of quantization)
  reshape         shape=(...)              (Flatten/Reshape: byte-for-byte the same data)
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np



@dataclass(frozen=True)
class QParams:
    scale: float
    zero_point: int  # int8 domain, [-128, 127]


@dataclass
class Tensor:
    name: str                 # original name from the model (may be hostile; never a path)
    shape: tuple              # (1, C, H, W) or (1, F)
    q: QParams


@dataclass
class Layer:
    name: str                 # original node name, shown in reports and used in targets.yaml
    op: str                   # an IR op of the registry (ops.ir_ops)
    inputs: list              # tensor names
    output: str               # tensor name
    attrs: dict = field(default_factory=dict)
    weight: Optional[np.ndarray] = None        # int8
    weight_scale: Optional[np.ndarray] = None  # float64, one per output channel
    bias: Optional[np.ndarray] = None          # int32, one per output channel
    act_min: int = -128       # fused activation clamp (int8 output domain)
    act_max: int = 127
    fused: list = field(default_factory=list)  # original names of nodes folded into this one
    source_ops: list = field(default_factory=list)  # original op types, e.g. ["Conv", "BatchNormalization", "Relu"]


@dataclass
class Graph:
    name: str
    input: str                # tensor name of the (quantized) network input
    output: str               # tensor name of the network output
    tensors: dict             # name -> Tensor
    layers: list              # topologically ordered Layer list
    numerics: str = "onnx"    # requantization rule: "onnx" (QDQ) or "tflite" (nnscons.numerics)
    model_layout: Optional[dict] = None   # {"input"/"output": model shape} when the model's own
                                          # layout is not the IR's (TFLite NHWC: opkit.layout)
    model_dtype: Optional[dict] = None    # {"input"/"output": "int8" | "uint8" | "float32"}: the
                                          # file's own types (None: float in, float out, as QDQ)
    extra_inputs: list = field(default_factory=list)    # network inputs after the first, model order
    extra_outputs: list = field(default_factory=list)   # network outputs after the first

    @property
    def inputs(self) -> list:
        """Every network input, in the model's order; `input` is the first."""
        return [self.input] + list(getattr(self, "extra_inputs", []))

    @property
    def outputs(self) -> list:
        """Every network output, in the model's order; `output` is the first."""
        return [self.output] + list(getattr(self, "extra_outputs", []))

    def tensor(self, name: str) -> Tensor:
        return self.tensors[name]

    def producer(self, tensor_name: str) -> Optional[Layer]:
        for layer in self.layers:
            if layer.output == tensor_name:
                return layer
        return None

    def consumers(self, tensor_name: str) -> list:
        return [l for l in self.layers if tensor_name in l.inputs]

    def validate(self, ir_ops) -> None:
        """Internal consistency check (programming errors, not user errors); ir_ops: the
        registry's IR op names (ops.ir_ops())."""
        known = set(self.inputs)
        for layer in self.layers:
            assert layer.op in ir_ops, layer.op
            for t in layer.inputs:
                assert t in known, f"{layer.name}: input {t} used before defined"
            assert layer.output in self.tensors, layer.output
            known.add(layer.output)
        assert all(t in known for t in self.outputs)
