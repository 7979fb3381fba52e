"""Conversions between float tensors and the int8 IR domain (ONNX Quantize/DequantizeLinear)."""
from __future__ import annotations

import numpy as np

from .. import ir


def quantize_input(graph: ir.Graph, x_float):
    """int8 network input, exactly as ONNX QuantizeLinear computes it ({input name: codes}
    when x_float is {input name: values}: a model with several inputs).

    onnxruntime divides in float32 and rounds half to even, so we do the same
    to get the identical int8 input for agreement tests; a TFLite graph quantizes as
    TFLite's QUANTIZE does.
    """
    if isinstance(x_float, dict):
        return {name: quantize_tensor(graph, name, x_float[name]) for name in graph.inputs}
    return quantize_tensor(graph, graph.input, x_float)


def quantize_tensor(graph: ir.Graph, name: str, x_float) -> np.ndarray:
    t = graph.tensor(name)
    x = np.asarray(x_float, dtype=np.float32).reshape(t.shape)
    if getattr(graph, "numerics", "onnx") == "tflite":
        # TFLite's QUANTIZE (AffineQuantize): x / scale in double, rounded half away from 0
        from .tflite_math import round_half_away
        q = round_half_away(x.astype(np.float64) / np.float64(t.q.scale)) + t.q.zero_point
        return np.clip(q, -128, 127).astype(np.int8)
    q = np.rint(x / np.float32(t.q.scale)) + t.q.zero_point
    return np.clip(q, -128, 127).astype(np.int8)


def dequantize(tensor: ir.Tensor, q) -> np.ndarray:
    """Real value of int8 data: scale * (q - zero_point), float32."""
    q = np.asarray(q, dtype=np.int32)
    return ((q - tensor.q.zero_point) * np.float32(tensor.q.scale)).astype(np.float32)
