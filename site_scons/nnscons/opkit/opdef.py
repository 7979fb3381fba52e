"""An op's registry entry (OpDef): what every part of nnscons knows about one op, as hooks.
The op modules (ops/*.py) build them; the registry (ops/__init__.py) collects them. Here,
below the registry, so an op module needs nothing that imports the registry."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional


DONE = object()   # an export hook's return value: the layer is completely written


@dataclass(frozen=True)
class OpDef:
    name: str                              # IR op (Layer.op) or pre-IR kind (Op.kind)
    ir: bool = True                        # False: exists only before lowering
    onnx: dict = field(default_factory=dict)   # ONNX op_type -> converter(w, name, node, ins, out) -> Op
    tflite: dict = field(default_factory=dict)  # TFLite builtin name -> converter(w, op) -> Op | [Op]
    attrs: tuple = ()                      # IR attributes kept by lowering (Layer.attrs)
    shape: Optional[Callable] = None       # (g, op, input shapes) -> output shape (may normalize attrs)
    reference: Optional[Callable] = None   # (layer, graph, int8 inputs) -> int8 output
    requant: Optional[Callable] = None     # (layer, graph) -> {'mult': int32[], 'shift': int32[], ...}
    counts: Optional[Callable] = None      # (layer, graph) -> {section: count} of requant()'s arrays
    macs: Optional[Callable] = None        # (layer, graph) -> int
    export: Optional[Callable] = None      # (writer, layer, float inputs, core_out) -> None | str | DONE
    lower: Optional[Callable] = None       # (g, op, layer) -> None: lowering beyond attrs
    lowers_to: Optional[str] = None        # pre-IR kind lowered to this IR op
    fold: Optional[Callable] = None        # (g, op, op_def) -> None: a pre-IR rewrite (BN folding);
                                           # op_def: the registry's get
    check: Optional[Callable] = None       # (layer, graph) -> reason str: no target implements it
    weighted: bool = False                 # int8 weight + int32 bias, quantized when lowering
    fusable: bool = False                  # a following clamp fuses into it (act_min/act_max)
    activation: bool = False               # a real-valued clamp that fuses into its producer
    range_preserving: bool = False         # output may reuse its input's params (QDQ, PTQ)
    selects: bool = False                  # each output value is an input value (maybe clamped):
                                           # a monotone rounding commutes with the op
    calib_inherit: bool = False            # PTQ needs not observe its output (same params)
    alias: bool = False                    # output is its input's bytes (no code, shared buffer)
    window: bool = False                   # slides a kernel window over H, W: attrs kernel, stride,
                                           # pads (top, left, bottom, right), dilation
    dense: Optional[Callable] = None       # (layer) -> bool: one GEMM, each output a weight row
                                           # times all its input channels (window taps or features)
    hwc_params: Optional[Callable] = None  # (layer, graph, op_def) -> {section: array}: the sections whose
                                           # order follows HWC activations (conv weights OHWI, ...)
    doc: str = ""
